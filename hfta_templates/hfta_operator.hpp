// hfta_operator.hpp -- glue between the C runtime ABI (gsq_hfta_def) and the
// C++ HFTA operator templates, plus helpers every operator shares.
//
// An operator type Op (e.g. gsq::groupby_op<F>) provides:
//   static constexpr int n_inputs;                 // number of input streams
//   explicit Op(gsq_node *node);                   // may call gsq_node_fail
//   void accept(gsq_node *node, int input, int kind, const void *tup, uint32_t len);
// and may throw from either; the glue turns exceptions into gsq_node_fail.
//
// Generated code declares its definition with one line:
//   constexpr int flows_inputs[] = {3};
//   extern "C" const gsq_hfta_def hfta_flows_def =
//       gsq::hfta_def_of<gsq::groupby_op<flows_functor>>("flows", flows_inputs, 4);
// The input count is taken from the array, and checked against Op::n_inputs
// at compile time.
#ifndef GSQ_HFTA_OPERATOR_HPP
#define GSQ_HFTA_OPERATOR_HPP

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <optional>
#include <vector>

#include "gsq_runtime.h"

namespace gsq {

// Number of inputs a functor declares with `static constexpr int n_inputs`;
// 1 when it declares none.
template <class F, class = void>
struct functor_inputs : std::integral_constant<int, 1> {};
template <class F>
struct functor_inputs<F, std::void_t<decltype(F::n_inputs)>> : std::integral_constant<int, F::n_inputs> {};

// The runtime's failure path for impossible states (bad input index, data
// after end of stream): thrown inside an operator, reported by the glue.
struct protocol_error : std::logic_error {
    using std::logic_error::logic_error;
};

// Tracks which inputs have sent GSQ_EOF; the operator ends when all have.
class input_eofs {
public:
    explicit input_eofs(int n_inputs) : ended_(static_cast<size_t>(n_inputs), false) {}

    // Throws protocol_error for an input index out of range, or for a data
    // tuple or heartbeat on an input that already ended.
    void check(int input, int kind) const
    {
        if (input < 0 || static_cast<size_t>(input) >= ended_.size())
            throw protocol_error("tuple on input " + std::to_string(input) + " of an operator with " +
                                 std::to_string(ended_.size()) + " input(s)");
        if (kind != GSQ_EOF && ended_[static_cast<size_t>(input)])
            throw protocol_error("tuple on input " + std::to_string(input) + " after its end of stream");
    }

    // Marks `input` ended; true exactly once, when the last open input ends
    // (a repeated EOF on one input is ignored).
    bool mark(int input)
    {
        const size_t i = static_cast<size_t>(input);
        if (ended_[i])
            return false;
        ended_[i] = true;
        return ++n_ended_ == ended_.size();
    }

    bool all_ended() const noexcept { return n_ended_ == ended_.size(); }
    bool ended(int input) const noexcept { return ended_[static_cast<size_t>(input)]; }

private:
    std::vector<bool> ended_;
    size_t n_ended_ = 0;
};

inline void emit_eof(gsq_node *node) { gsq_emit(node, GSQ_EOF, nullptr, 0, nullptr, 0); }

// The epoch a heartbeat of all-zero bytes announces to an operator with
// functor F (heartbeat_epoch, epoch_compare): a merge's heartbeat sets only
// its merge column, so one that bounds another column than the operator's
// epoch reads as this epoch.  Worked out once, at the first question.
template <class F, class Epoch>
class zero_heartbeat {
public:
    // Whether heartbeat epoch e is the one zeros announce (len: the tuple's).
    bool announced(F &functor, const Epoch &e, uint32_t len)
    {
        if (!checked_) {
            checked_ = true;
            const std::vector<unsigned char> zeros(len);
            Epoch z{};
            if (functor.heartbeat_epoch(zeros.data(), len, z))
                epoch_ = std::move(z);
        }
        return epoch_ && functor.epoch_compare(*epoch_, e) == 0;
    }

private:
    bool checked_ = false;
    std::optional<Epoch> epoch_;
};

// GSQ_EOF on `input` of an operator that holds tuples: the input's first EOF
// marks it in `eofs` and calls on_end(), which records the end and releases
// what waited for it; after the last input's, GSQ_EOF goes out.  A repeated
// EOF does nothing.
template <class OnEnd>
void end_input(gsq_node *node, input_eofs &eofs, int input, OnEnd &&on_end)
{
    if (eofs.ended(input))
        return;
    const bool all = eofs.mark(input);
    on_end();
    if (all)
        emit_eof(node);
}

// An owned copy of a packed tuple (fixed struct + string tail), for operators
// that buffer input (merge, join).  Moves only.
class tuple_copy {
public:
    tuple_copy() = default;
    tuple_copy(const void *tup, uint32_t len)
        : bytes_(len != 0 ? new unsigned char[len] : nullptr), len_(len)
    {
        if (len != 0)
            std::memcpy(bytes_.get(), tup, len);
    }
    const void *data() const noexcept { return bytes_.get(); }
    uint32_t size() const noexcept { return len_; }

private:
    std::unique_ptr<unsigned char[]> bytes_;
    uint32_t len_ = 0;
};

// Saturating arithmetic on temporal values (integers of any width and
// signedness, or double): a + b and a - b for b of either sign, clamped to
// the type's range instead of wrapping (double: plain arithmetic).  Clamping
// is exact for comparisons against values of the type: t <= sat_add(a, b)
// holds iff t <= a + b computed without overflow (same for >=, and sat_sub).
template <class T>
constexpr T sat_add(T a, T b) noexcept
{
    if constexpr (std::is_floating_point_v<T>) {
        return a + b;
    } else {
        constexpr T hi = std::numeric_limits<T>::max();
        constexpr T lo = std::numeric_limits<T>::lowest();
        if constexpr (std::is_unsigned_v<T>)
            return a > static_cast<T>(hi - b) ? hi : static_cast<T>(a + b);
        else if (b >= T(0))
            return a > static_cast<T>(hi - b) ? hi : static_cast<T>(a + b);
        else
            return a < static_cast<T>(lo - b) ? lo : static_cast<T>(a + b);
    }
}

template <class T>
constexpr T sat_sub(T a, T b) noexcept
{
    if constexpr (std::is_floating_point_v<T>) {
        return a - b;
    } else {
        constexpr T hi = std::numeric_limits<T>::max();
        constexpr T lo = std::numeric_limits<T>::lowest();
        if constexpr (std::is_unsigned_v<T>)
            return a < static_cast<T>(lo + b) ? lo : static_cast<T>(a - b);
        else if (b >= T(0))
            return a < static_cast<T>(lo + b) ? lo : static_cast<T>(a - b);
        else
            return a > static_cast<T>(hi + b) ? hi : static_cast<T>(a - b);
    }
}

namespace detail {

inline void report(gsq_node *node, const char *what) noexcept { gsq_node_fail(node, "%s", what); }

// The three C entry points of an operator.  Exceptions stop here.
template <class Op>
struct c_glue {
    static void *create(gsq_node *node) noexcept
    {
        try {
            auto op = std::make_unique<Op>(node);
            if (gsq_node_failed(node)) // the functor rejected a parameter
                return nullptr;
            return op.release(); // owned by the runtime until destroy()
        } catch (const std::exception &e) {
            report(node, e.what());
        } catch (...) {
            report(node, "unknown exception while creating an HFTA operator");
        }
        return nullptr;
    }

    static void accept(void *op, gsq_node *node, int input, int kind, const void *tup, uint32_t len) noexcept
    {
        try {
            static_cast<Op *>(op)->accept(node, input, kind, tup, len);
        } catch (const std::exception &e) {
            report(node, e.what());
        } catch (...) {
            report(node, "unknown exception in an HFTA operator");
        }
    }

    static void destroy(void *op) noexcept { std::unique_ptr<Op> owned(static_cast<Op *>(op)); }

    static void prefetch(void *op, int input, const void *tup, uint32_t len) noexcept
    {
        try {
            static_cast<Op *>(op)->prefetch(input, tup, len);
        } catch (...) { // a hint: nothing to report
        }
    }

    static void params_changed(void *op, gsq_node *node, const void *const *marks) noexcept
    {
        try {
            static_cast<Op *>(op)->functor().params_changed(node, marks);
        } catch (const std::exception &e) {
            report(node, e.what());
        } catch (...) {
            report(node, "unknown exception in an HFTA operator");
        }
    }

    // An exception ends the run: the tuples after it are not accepted, as
    // the runtime stops delivering once the node failed.
    static void accept_run(void *op, gsq_node *node, int input, const uint8_t *first, size_t stride,
                           uint32_t len, uint32_t n) noexcept
    {
        try {
            static_cast<Op *>(op)->accept_run(node, input, first, stride, len, n);
        } catch (const std::exception &e) {
            report(node, e.what());
        } catch (...) {
            report(node, "unknown exception in an HFTA operator");
        }
    }
};

template <class Op, class = void>
struct has_prefetch : std::false_type {};
template <class Op>
struct has_prefetch<Op, std::void_t<decltype(std::declval<Op &>().prefetch(0, nullptr, 0u))>>
    : std::true_type {};

template <class Op, class = void>
struct has_accept_run : std::false_type {};
template <class Op>
struct has_accept_run<Op, std::void_t<decltype(std::declval<Op &>().accept_run(
                              std::declval<gsq_node *>(), 0, std::declval<const uint8_t *>(), size_t{},
                              uint32_t{}, uint32_t{}))>> : std::true_type {};

// c_glue<Op>::accept_run when Op takes runs of data tuples, else nullptr.
template <class Op>
constexpr auto accept_run_of() noexcept
    -> void (*)(void *, gsq_node *, int, const uint8_t *, size_t, uint32_t, uint32_t)
{
    if constexpr (has_accept_run<Op>::value)
        return &c_glue<Op>::accept_run;
    else
        return nullptr;
}

// c_glue<Op>::prefetch when Op gives prefetch hints, else nullptr.
template <class Op>
constexpr auto prefetch_of() noexcept
    -> void (*)(void *, int, const void *, uint32_t)
{
    if constexpr (has_prefetch<Op>::value)
        return &c_glue<Op>::prefetch;
    else
        return nullptr;
}

template <class Op, class = void>
struct has_params_changed : std::false_type {};
template <class Op>
struct has_params_changed<Op, std::void_t<decltype(std::declval<Op &>().functor().params_changed(
                                  std::declval<gsq_node *>(), std::declval<const void *const *>()))>>
    : std::true_type {};

// c_glue<Op>::params_changed when Op's functor reads parameters, else nullptr.
template <class Op>
constexpr auto params_changed_of() noexcept -> void (*)(void *, gsq_node *, const void *const *)
{
    if constexpr (has_params_changed<Op>::value)
        return &c_glue<Op>::params_changed;
    else
        return nullptr;
}

} // namespace detail

// The gsq_hfta_def of operator Op.  `in_streams` must have static storage
// duration (the definition keeps the pointer).  promises: enum
// gsq_hfta_promises, what the operator's heartbeats promise.
template <class Op, size_t N>
constexpr gsq_hfta_def hfta_def_of(const char *name, const int (&in_streams)[N], int out_stream,
                                   int promises = GSQ_PROMISES_NONE) noexcept
{
    static_assert(static_cast<int>(N) == Op::n_inputs,
                  "the number of input streams differs from the operator's n_inputs");
    return gsq_hfta_def{name,
                        static_cast<int>(N),
                        in_streams,
                        out_stream,
                        &detail::c_glue<Op>::create,
                        &detail::c_glue<Op>::accept,
                        &detail::c_glue<Op>::destroy,
                        detail::prefetch_of<Op>(),
                        nullptr,
                        detail::accept_run_of<Op>(),
                        promises,
                        detail::params_changed_of<Op>()};
}

} // namespace gsq

#endif // GSQ_HFTA_OPERATOR_HPP
