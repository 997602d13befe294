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
//   void heartbeat(gsq_node *node, const void *tup, uint32_t len);   // optional
//       A temporal update tuple (GSQ_HEARTBEAT) on the input, valid only
//       during the call: only its temporal columns are meaningful.  Computes
//       the output's temporal columns from them (the select expressions'
//       temporal inference, Johnson et al. 2005, 5.2) and emits its own temporal update
//       with gsq_emit(node, GSQ_HEARTBEAT, ...).  WHERE is not evaluated.
//       Detected at compile time; a functor without it drops heartbeats.
//       A heartbeat without bytes (tup == NULL) carries nothing and is
//       dropped either way.
//
// A joint heartbeat (GSQ_JOINT_HEARTBEAT, joint punctuation of a join) on the
// input is dropped: a projection may not keep the columns it bounds
// together, so passing it on could promise something false.
//
// When the input ends the operator emits GSQ_EOF once.
#ifndef GSQ_SELECTION_OP_HPP
#define GSQ_SELECTION_OP_HPP

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include "hfta_operator.hpp"

namespace gsq {

// True when F has heartbeat(gsq_node*, const void*, uint32_t).
template <class F, class = void>
struct has_selection_heartbeat : std::false_type {};
template <class F>
struct has_selection_heartbeat<F, std::void_t<decltype(std::declval<F &>().heartbeat(
                                      std::declval<gsq_node *>(), std::declval<const void *>(),
                                      std::declval<uint32_t>()))>> : std::true_type {};

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
            if constexpr (has_selection_heartbeat<F>::value) {
                if (tup != nullptr)
                    functor_.heartbeat(node, tup, len);
            }
            break;
        case GSQ_JOINT_HEARTBEAT: // dropped (header comment)
            break;
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
