// merge_op.hpp -- gsq::merge_op<F>: order-preserving union of N streams of one
// layout on a temporal merge field (GSQL `MERGE R.t : S.t [SLACK n] FROM ...`,
// Johnson et al. 2005, 5.4 and 7.1), or with F::ordered == false the out-of-order union
// that passes tuples on at once and carries order in heartbeats (Li et al. 2008
// 5.4).  Tuples pass through unchanged (gsq_emit_raw).
//
// Functor interface (F), generated:
//
//   static constexpr int n_inputs = N;        // >= 2, all of the same layout;
//                                             // without it the number of
//                                             // inputs is decided at run time
//                                             // (gsq_node_n_inputs, or the
//                                             // constructor's argument): the
//                                             // merge of an LFTA over an
//                                             // interface set
//   using time_type = ...;                    // C type of the merge field:
//                                             // an integer type or double
//   static constexpr bool increasing = true;  // direction of the merge field
//                                             // (false: decreasing)
//   static constexpr bool ordered = true;     // optional, default true: the
//                                             // order-preserving merge; false:
//                                             // the out-of-order union (see
//                                             // "Unordered union")
//   explicit F(gsq_node *node);               // may gsq_node_fail or throw
//
//   time_type time_of(const void *tup, uint32_t len) const;
//       The merge field of a data or heartbeat tuple of any input.
//
//   time_type slack() const;
//       SLACK n; 0 without SLACK (a negative value counts as 0).
//
//   void emit_heartbeat(gsq_node *node, time_type t);
//       Emit a GSQ_HEARTBEAT (gsq_emit) whose merge field is t.
//
// Below, "before"/"after", "min"/"max", "+"/"-" are in the direction of the
// merge field (mirrored for a decreasing one); + and - saturate at the type's
// limits.
//
// State per input i:
//   data_i     the max merge value of a data tuple accepted on i,
//   hb_i       the max merge value of a heartbeat on i,
//   progress_i = max(data_i, hb_i) (unknown until i sent something; +infinity
//                once i ended),
//   buffer_i   owned copies of i's data tuples not yet released, sorted by t
//              (arrival order among equal t; an in-order input appends).
//
// Release rule.  A buffered tuple of input i with value t may go out once
//   t <= min over the OTHER inputs j of progress_j + slack
// (an input that sent nothing yet blocks every other input).  Released tuples
// leave in global t order: always the smallest buffered t first (ties: the
// lower input index), so with slack 0 the output is totally ordered and with
// SLACK n it is ordered up to n.  The rule is applied after every data tuple,
// heartbeat and EOF.  Releasing frees the copy.
//
// Late tuples.  A data tuple is dropped and counted (gsq_count_late: as a
// tuple and as the rows it stands for; stats().late_dropped) when
// t < (max value released so far) - slack -- it would break the output order
// by more than the slack -- or when t is before the last heartbeat this
// operator emitted (an upstream that broke its own promise; the output never
// contradicts a heartbeat).  Late tuples do not move progress.
//
// Heartbeats.  On a heartbeat on input i: hb_i and progress_i advance, the
// release rule runs, then the operator emits its own heartbeat when its bound
//   H = min( min buffered t,
//            min over open inputs j of lb_j )      (lb_j: no future tuple of
//   lb_j = max(hb_j, data_j - slack, released_max - slack)    j goes below it)
// is known (every open input sent something) and after the last one emitted
// (strictly).  With slack 0 this is the seed's MIN(RMIN, SMIN): the minimum
// over inputs of progress_j and of the smallest still-buffered t.  With a
// slack it is lower by the slack an input may still go back.  Data tuples and
// the EOF of a single input release tuples but emit no heartbeat.
//
// Generated heartbeats.  When the run generates heartbeats from declared
// time bounds (gsq_heartbeats_generated: Srivastava & Widom 2004), an input's data may
// trail its largest value by the declared bound, so data says nothing of
// progress: progress_j = hb_j and lb_j = max(hb_j, released_max - slack).
//
// End of stream: when every input has ended, every buffered tuple goes out in
// t order, then GSQ_EOF.  A heartbeat without bytes (tup == NULL) is ignored,
// and so is a joint heartbeat (GSQ_JOINT_HEARTBEAT, a join's joint
// punctuation): it bounds two columns together, which the merge field alone
// cannot carry on, and it never moves progress.
//
// Unordered union (F::ordered == false; Li et al. 2008, 5.4 and A.2.1, the OOP
// union).  No buffer: every data tuple passes straight through
// (gsq_emit_raw) as it arrives, so the output is ordered only up to the
// inputs' skew, and heartbeats carry the order.  data_i, hb_i and progress_i
// are kept as above.  On a heartbeat the operator emits its own with
//   H = min over open inputs j of lb_j,   lb_j = max(hb_j, data_j - slack)
// (slack: how far one input's own data may go back) when H is known (every
// open input sent something) and after the last one emitted (strictly): the
// seed's min(b_0, b_1).  There is no release order, so the released_max term
// of the ordered lb_j does not apply: one input running ahead does not make
// another one's tuples late.  A data tuple before the last heartbeat emitted
// is dropped and counted late (the output never contradicts a heartbeat);
// late tuples do not move progress.  stats().buffered stays 0.  Works the
// same for a run-time number of inputs (the merge of an interface set).
//
// stats(): buffered tuples and bytes (current and peak), released, late,
// heartbeats in and out.  Bytes are the packed tuple bytes held (fixed struct
// + string tail), the memory the heartbeat experiment (Johnson et al. 2005, 7.1) watches.
#ifndef GSQ_MERGE_OP_HPP
#define GSQ_MERGE_OP_HPP

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "hfta_operator.hpp"

namespace gsq {

struct merge_stats {
    size_t buffered = 0;          // tuples held now
    size_t buffered_bytes = 0;    // their packed bytes
    size_t peak_buffered = 0;     // most tuples held at once
    size_t peak_bytes = 0;        // most bytes held at once
    uint64_t received = 0;        // data tuples in (late ones included)
    uint64_t released = 0;        // data tuples out
    uint64_t late_dropped = 0;    // data tuples dropped as late
    uint64_t heartbeats_in = 0;   // temporal updates received
    uint64_t heartbeats_out = 0;  // temporal updates emitted
};

// F::ordered, or true when F declares none.
template <class F, class = void>
struct functor_ordered : std::true_type {};
template <class F>
struct functor_ordered<F, std::void_t<decltype(F::ordered)>> : std::bool_constant<F::ordered> {};

// F::n_inputs, or 0 when F declares none (inputs decided at run time).
template <class F, class = void>
struct static_inputs : std::integral_constant<int, 0> {};
template <class F>
struct static_inputs<F, std::void_t<decltype(F::n_inputs)>> : std::integral_constant<int, F::n_inputs> {};

template <class F>
class merge_op {
public:
    using functor_type = F;
    using time_type = typename F::time_type;
    // 0: decided at run time (F declares no n_inputs)
    static constexpr int n_inputs = static_inputs<F>::value;
    static constexpr bool increasing = F::increasing;
    static constexpr bool ordered = functor_ordered<F>::value;
    static_assert(n_inputs == 0 || n_inputs >= 2, "merge_op merges at least two inputs");
    static_assert(std::is_arithmetic_v<time_type>, "the merge field is an integer or double");

    explicit merge_op(gsq_node *node) : merge_op(node, inputs_of(node)) {}

    // `inputs` inputs (>= 2; F::n_inputs when F declares it).
    merge_op(gsq_node *node, int inputs)
        : functor_(node), eofs_(checked(inputs)), inputs_(static_cast<size_t>(inputs)),
          data_progress_(gsq_heartbeats_generated(node) == 0 && gsq_inputs_are_partials(node) == 0) {}

    void accept(gsq_node *node, int input, int kind, const void *tup, uint32_t len)
    {
        eofs_.check(input, kind);
        input_state &in = inputs_[static_cast<size_t>(input)];
        switch (kind) {
        case GSQ_DATA:
            on_data(node, input, in, tup, len);
            break;
        case GSQ_HEARTBEAT:
            if (tup == nullptr)
                break;
            ++stats_.heartbeats_in;
            on_heartbeat(node, in, functor_.time_of(tup, len));
            break;
        case GSQ_JOINT_HEARTBEAT: // ignored (header comment)
            break;
        case GSQ_EOF:
            end_input(node, eofs_, input, [&] {
                in.ended = true;
                release(node);
            });
            break;
        default:
            throw protocol_error("unknown tuple kind " + std::to_string(kind));
        }
    }

    const merge_stats &stats() const noexcept { return stats_; }
    // Tuples of input i held in its buffer.
    size_t buffered(int input) const noexcept { return inputs_[static_cast<size_t>(input)].buffer.size(); }
    F &functor() noexcept { return functor_; }

private:
    static int inputs_of(gsq_node *node)
    {
        if constexpr (n_inputs > 0) {
            (void)node;
            return n_inputs;
        } else {
            return gsq_node_n_inputs(node);
        }
    }

    static int checked(int inputs)
    {
        if (inputs < 2 || (n_inputs > 0 && inputs != n_inputs))
            throw protocol_error("merge_op: " + std::to_string(inputs) +
                                 " inputs (a merge has at least two)");
        return inputs;
    }

    struct held {
        time_type t;
        tuple_copy bytes;
    };

    struct input_state {
        std::optional<time_type> data_max; // max t of an accepted data tuple
        std::optional<time_type> hb_max;   // max t of a heartbeat
        bool ended = false;
        std::deque<held> buffer; // sorted by t, stable
    };

    // ---- direction-aware time arithmetic ------------------------------------
    static bool before(time_type a, time_type b) noexcept { return increasing ? a < b : b < a; }
    static time_type earliest(time_type a, time_type b) noexcept { return before(b, a) ? b : a; }
    static time_type latest(time_type a, time_type b) noexcept { return before(a, b) ? b : a; }
    static time_type later_by(time_type a, time_type s) noexcept
    {
        return increasing ? sat_add(a, s) : sat_sub(a, s);
    }
    static time_type earlier_by(time_type a, time_type s) noexcept
    {
        return increasing ? sat_sub(a, s) : sat_add(a, s);
    }
    time_type slack() const
    {
        const time_type s = functor_.slack();
        return s > time_type(0) ? s : time_type(0);
    }

    std::optional<time_type> progress(const input_state &in) const
    {
        if (!data_progress_)
            return in.hb_max;
        if (in.data_max && in.hb_max)
            return latest(*in.data_max, *in.hb_max);
        return in.data_max ? in.data_max : in.hb_max;
    }

    static void raise(std::optional<time_type> &v, time_type t)
    {
        if (!v || before(*v, t))
            v = t;
    }

    void on_data(gsq_node *node, int input, input_state &in, const void *tup, uint32_t len)
    {
        ++stats_.received;
        const time_type t = functor_.time_of(tup, len);
        // (released_max_ stays unset in an unordered union.)
        const bool late = (released_max_ && before(t, earlier_by(*released_max_, slack()))) ||
                          (hb_out_ && before(t, *hb_out_));
        if (late) {
            ++stats_.late_dropped;
            gsq_count_late(node, input, tup, len); // and the rows it stands for
            return;
        }
        raise(in.data_max, t);
        if constexpr (!ordered) { // straight through
            ++stats_.released;
            gsq_emit_raw(node, GSQ_DATA, tup, len);
            return;
        }
        // Sorted insert, after every buffered tuple that is not after t: an
        // in-order input appends.
        auto pos = in.buffer.end();
        while (pos != in.buffer.begin() && before(t, std::prev(pos)->t))
            --pos;
        in.buffer.insert(pos, held{t, tuple_copy(tup, len)});
        stats_.buffered += 1;
        stats_.buffered_bytes += len;
        stats_.peak_buffered = std::max(stats_.peak_buffered, stats_.buffered);
        stats_.peak_bytes = std::max(stats_.peak_bytes, stats_.buffered_bytes);
        gsq_peak(node, GSQ_PEAK_HELD_TUPLES, stats_.peak_buffered);
        gsq_peak(node, GSQ_PEAK_HELD_BYTES, stats_.peak_bytes);
        release(node);
    }

    void on_heartbeat(gsq_node *node, input_state &in, time_type t)
    {
        raise(in.hb_max, t);
        release(node);
        emit_heartbeat_if_advanced(node);
    }

    // Whether a tuple of input i at t may go: t <= progress_j + slack for
    // every other open input j (an input that sent nothing blocks; an ended
    // one does not bound).
    bool releasable(size_t i, time_type t) const
    {
        for (size_t j = 0; j < inputs_.size(); ++j) {
            if (j == i || inputs_[j].ended)
                continue;
            const std::optional<time_type> p = progress(inputs_[j]);
            if (!p)
                return false;
            if (before(later_by(*p, slack()), t))
                return false;
        }
        return true;
    }

    // Releases, smallest t first, every tuple the rule allows.  If the
    // smallest buffered t (input i) may not go, no other tuple may: some open
    // j != i has progress_j + slack < t; a buffered u >= t of an input k != j
    // is blocked by j as well, and one of j itself would have
    // u <= progress_j < t.
    void release(gsq_node *node)
    {
        for (;;) {
            size_t best = inputs_.size();
            for (size_t i = 0; i < inputs_.size(); ++i) {
                const auto &b = inputs_[i].buffer;
                if (!b.empty() && (best == inputs_.size() || before(b.front().t, inputs_[best].buffer.front().t)))
                    best = i;
            }
            if (best == inputs_.size())
                return;
            std::deque<held> &b = inputs_[best].buffer;
            if (!releasable(best, b.front().t))
                return;
            held h = std::move(b.front());
            b.pop_front();
            stats_.buffered -= 1;
            stats_.buffered_bytes -= h.bytes.size();
            raise(released_max_, h.t);
            ++stats_.released;
            gsq_emit_raw(node, GSQ_DATA, h.bytes.data(), h.bytes.size());
        }
    }

    // H (see the header comment), or nothing while an open input is unknown.
    // Unordered: no buffer and no released_max_, so H = min lb_j.
    std::optional<time_type> heartbeat_bound() const
    {
        std::optional<time_type> h;
        auto lower = [&h](time_type v) { h = h ? earliest(*h, v) : v; };
        for (const input_state &in : inputs_) {
            if (!in.buffer.empty())
                lower(in.buffer.front().t);
            if (in.ended)
                continue;
            std::optional<time_type> lb = in.hb_max;
            if (in.data_max && data_progress_)
                raise(lb, earlier_by(*in.data_max, slack()));
            if (!lb)
                return std::nullopt;
            if (released_max_)
                raise(lb, earlier_by(*released_max_, slack()));
            lower(*lb);
        }
        return h;
    }

    void emit_heartbeat_if_advanced(gsq_node *node)
    {
        const std::optional<time_type> h = heartbeat_bound();
        if (!h || (hb_out_ && !before(*hb_out_, *h)))
            return;
        hb_out_ = h;
        ++stats_.heartbeats_out;
        functor_.emit_heartbeat(node, *h);
    }

    F functor_;
    input_eofs eofs_;
    std::vector<input_state> inputs_;
    std::optional<time_type> released_max_; // max t released
    std::optional<time_type> hb_out_;       // last heartbeat emitted
    merge_stats stats_;
    // Whether an input's own data bounds its progress (max(data, hb) above).
    // Not when the run generates heartbeats from declared time bounds (seed
    // 002, gsq_heartbeats_generated): the records of a source may then trail
    // by its bound, which only its heartbeats carry; nor for inputs of
    // partial aggregates (gsq_inputs_are_partials): an LFTA's partials go out
    // up to its open epochs apart, which only its heartbeats say.
    bool data_progress_;
};

} // namespace gsq

#endif // GSQ_MERGE_OP_HPP
