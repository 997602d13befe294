// selection_op.hpp -- gsq::selection_op<F>: selection / projection over one
// input stream.  The template handles stream kinds and end of stream; the
// generated functor evaluates WHERE and builds the output tuple.
//
// Functor interface (F):
//
//   explicit F(gsq_node *node);
//       Reads run-time parameters (gsq_param); on a missing or bad one calls
//       gsq_node_fail (the operator is then discarded) or throws.
//
//   void process(gsq_node *node, const void *tup, uint32_t len);
//       One input data tuple, valid only during the call: evaluate WHERE and,
//       if it holds, emit the projected tuple with gsq_emit(node, GSQ_DATA, ...).
//
// Heartbeats are consumed and not forwarded (yet).  When the input ends the
// operator emits GSQ_EOF once.
#ifndef GSQ_SELECTION_OP_HPP
#define GSQ_SELECTION_OP_HPP

#include <cstdint>
#include <string>

#include "hfta_operator.hpp"

namespace gsq {

template <class F>
class selection_op {
public:
    using functor_type = F;
    static constexpr int n_inputs = 1;
    static_assert(functor_inputs<F>::value == 1, "selection_op has exactly one input");

    explicit selection_op(gsq_node *node) : functor_(node) {}

    void accept(gsq_node *node, int input, int kind, const void *tup, uint32_t len)
    {
        eofs_.check(input, kind);
        switch (kind) {
        case GSQ_DATA:
            functor_.process(node, tup, len);
            break;
        case GSQ_HEARTBEAT:
            break; // TODO(heartbeats): project the temporal update and forward it
        case GSQ_EOF:
            if (eofs_.mark(input))
                emit_eof(node);
            break;
        default:
            throw protocol_error("unknown tuple kind " + std::to_string(kind));
        }
    }

    F &functor() noexcept { return functor_; }

private:
    F functor_;
    input_eofs eofs_{n_inputs};
};

} // namespace gsq

#endif // GSQ_SELECTION_OP_HPP
