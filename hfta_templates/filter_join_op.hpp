// filter_join_op.hpp -- gsq::filter_join_op<F>: GSQL's FILTER_JOIN(R.col, N),
// a windowed semi-join (Tigon's filter join).
//
//   SELECT <fields of S, join keys of R> FILTER_JOIN(R.t, N) FROM R, S
//   WHERE R.k = S.k [AND ...] AND R.t = S.t [AND single-side conditions]
//
// Input 0 (R) fills a filter; an input-1 (S) tuple at time s is emitted, once,
// when some R tuple of equal keys passing R's own conditions had its time in
// [s - N + 1, s].
//
// Functor interface (F), generated:
//
//   static constexpr int n_inputs = 2;          // input 0 = R (filter), 1 = S
//   using key_type = ...;           // the equality keys; owning (strings as
//                                   // std::string), default-constructible, copyable
//   struct key_hash { size_t operator()(const key_type &) const; };
//   struct key_eq   { bool operator()(const key_type &, const key_type &) const; };
//   using time_type = ...;          // integer or double; R.col and S's time
//                                   // in the same units, both increasing
//   explicit F(gsq_node *node);     // may gsq_node_fail or throw
//
//   bool left_extract(const void *tup, uint32_t len, key_type &k, time_type &t);
//   bool right_extract(const void *tup, uint32_t len, key_type &k, time_type &t);
//       A data tuple of R / S: false if a condition on that side alone rejects
//       it; else fill every field of k (reused between calls) and t.
//   time_type left_time_of(const void *tup, uint32_t len) const;
//   time_type right_time_of(const void *tup, uint32_t len) const;
//       The time of any tuple of R / S: heartbeats and rejected data tuples
//       (whose time still advances their input, Johnson et al. 2005, 4.3).
//   time_type window_back() const;  // N - 1 (clamped to the type's range)
//   void emit(gsq_node *node, const void *s, uint32_t len);
//       The output row of an S tuple that passed the filter.
//   void emit_heartbeat(gsq_node *node, time_type t);
//       A GSQ_HEARTBEAT promising that no later output row has S time < t.
//
// Behaviour.  The result must not depend on how the two inputs interleave, so
// tuples are processed in time order across both: each input's data tuples
// wait in a FIFO (R: key and time only; S: an owned copy) and are released in
// time order, R before S at equal times.  The progress p of an input is the
// latest time seen on it (data, rejected data, heartbeat; future tuples are
// not earlier), infinite once it ended.  A buffered head is released when no
// future tuple can precede it:
//   R at r: the S head (if any) is not earlier than r, and r <= p_S;
//   S at s: the R head (if any) is later than s, and s < p_R.
// Releasing R at r sets last(key) = r in an open_hash_map (R arrives in time
// order, so the last epoch is the latest); releasing S at s emits it when
// last(key) >= s - (N - 1) (last(key) <= s holds: later R is not applied yet).
// Per key only the last R epoch is kept, so an S tuple is emitted at most once
// however many R tuples match.  A data tuple earlier than its own input's
// progress is dropped and counted (gsq_count_late: GSQ_CNT_LATE_DROPPED and
// the rows it stands for).
//
// Purge.  Future S tuples are at s >= F = (the S head's time, else p_S), so a
// key with last(key) < F - (N - 1) can never match again and is erased (a new
// R tuple re-inserts it).  The table is swept when the operations since the
// last sweep (R applied, S processed, heartbeats in) reach max(64, keys / 2):
// O(1) amortised per operation, and the keys held stay within about twice
// those live in the window at the previous sweep, plus 64.  Once S ended and
// its buffer is empty, R is no longer needed: the filter and R's buffer are
// dropped.
//
// Heartbeats.  On a heartbeat on either input the operator updates progress,
// releases what it can and emits its own heartbeat with H = the S head's time,
// else p_S (no later output row has an earlier S time) when that is known and
// after the last one emitted.  End of stream: an input's EOF makes its
// progress infinite; when both ended everything is released, then GSQ_EOF.
// A joint heartbeat (GSQ_JOINT_HEARTBEAT) on either input is ignored: it
// bounds no single time, so it cannot move progress.
//
// Peaks: GSQ_PEAK_HELD_TUPLES counts buffered R and S tuples plus the keys of
// the filter; GSQ_PEAK_HELD_BYTES the packed bytes of the buffered S tuples.
#ifndef GSQ_FILTER_JOIN_OP_HPP
#define GSQ_FILTER_JOIN_OP_HPP

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "hash_table.hpp"
#include "hfta_operator.hpp"

namespace gsq {

struct filter_join_stats {
    uint64_t received[2] = {0, 0};      // data tuples in (0 R, 1 S)
    uint64_t filtered[2] = {0, 0};      // rejected by *_extract
    uint64_t late_dropped[2] = {0, 0};  // dropped as out of order
    uint64_t passed = 0;                // S tuples emitted
    uint64_t purged_keys = 0;
    uint64_t sweeps = 0;
    uint64_t heartbeats_in = 0;
    uint64_t heartbeats_out = 0;
    size_t peak_held = 0;               // buffered R + buffered S + keys
    size_t peak_bytes = 0;              // bytes of buffered S tuples
};

template <class F>
class filter_join_op {
public:
    using functor_type = F;
    using key_type = typename F::key_type;
    using time_type = typename F::time_type;
    static constexpr int n_inputs = 2;
    static_assert(functor_inputs<F>::value == 2, "filter_join_op has exactly two inputs");
    static_assert(std::is_arithmetic_v<time_type>, "the filter join's time is an integer or double");

    explicit filter_join_op(gsq_node *node) : functor_(node), back_(functor_.window_back()) {}

    void accept(gsq_node *node, int input, int kind, const void *tup, uint32_t len)
    {
        eofs_.check(input, kind);
        const int s = input; // 0 R, 1 S
        switch (kind) {
        case GSQ_DATA:
            on_data(node, s, tup, len);
            break;
        case GSQ_HEARTBEAT:
            if (tup == nullptr)
                break;
            ++stats_.heartbeats_in;
            ++ops_;
            advance(s, time_of(s, tup, len));
            release(node);
            maybe_sweep();
            emit_heartbeat_if_advanced(node);
            break;
        case GSQ_JOINT_HEARTBEAT: // ignored (header comment)
            break;
        case GSQ_EOF:
            end_input(node, eofs_, input, [&] {
                ended_[s] = true;
                release(node);
            });
            break;
        default:
            throw protocol_error("unknown tuple kind " + std::to_string(kind));
        }
    }

    const filter_join_stats &stats() const noexcept { return stats_; }
    size_t keys() const noexcept { return last_.size(); }
    size_t buffered(int s) const noexcept { return s == 0 ? rbuf_.size() : sbuf_.size(); }
    F &functor() noexcept { return functor_; }

private:
    struct r_entry {
        time_type t;
        key_type key;
    };
    struct s_entry {
        time_type t;
        key_type key;
        tuple_copy bytes;
    };

    time_type time_of(int s, const void *tup, uint32_t len) const
    {
        return s == 0 ? functor_.left_time_of(tup, len) : functor_.right_time_of(tup, len);
    }

    void advance(int s, time_type t)
    {
        if (!progress_[s] || *progress_[s] < t)
            progress_[s] = t;
    }

    // R at r may be applied: no S tuple earlier than r can still come.
    bool r_ready(time_type r) const
    {
        if (!sbuf_.empty())
            return !(sbuf_.front().t < r);
        return ended_[1] || (progress_[1] && !(*progress_[1] < r));
    }

    // S at s may be processed: no R tuple at or before s can still come.
    bool s_ready(time_type s) const
    {
        if (!rbuf_.empty())
            return s < rbuf_.front().t;
        return ended_[0] || (progress_[0] && s < *progress_[0]);
    }

    void on_data(gsq_node *node, int s, const void *tup, uint32_t len)
    {
        ++stats_.received[s];
        time_type t{};
        const bool keep = s == 0 ? functor_.left_extract(tup, len, scratch_, t)
                                 : functor_.right_extract(tup, len, scratch_, t);
        if (!keep) {
            ++stats_.filtered[s];
            const time_type ft = time_of(s, tup, len);
            if (!progress_[s] || !(ft < *progress_[s])) {
                advance(s, ft);
                release(node);
            }
            return;
        }
        if (progress_[s] && t < *progress_[s]) {
            ++stats_.late_dropped[s];
            gsq_count_late(node, s, tup, len); // and the rows it stands for
            return;
        }
        advance(s, t);
        release(node); // what the new progress unblocks comes first
        if (s == 0) {
            if (ended_[1] && sbuf_.empty())
                return; // S is over: nothing left to filter
            if (rbuf_.empty() && r_ready(t))
                apply_r(node, scratch_, t);
            else {
                rbuf_.push_back(r_entry{t, scratch_});
                note_held(node);
            }
        } else {
            if (sbuf_.empty() && s_ready(t))
                process_s(node, scratch_, t, tup, len);
            else {
                sbuf_.push_back(s_entry{t, scratch_, tuple_copy(tup, len)});
                sbytes_ += len;
                note_held(node);
            }
        }
        release(node);
        maybe_sweep();
    }

    void apply_r(gsq_node *node, const key_type &k, time_type t)
    {
        ++ops_;
        auto found = last_.find_or_insert(k);
        if (found.second || found.first < t)
            found.first = t;
        if (found.second)
            note_held(node);
    }

    void process_s(gsq_node *node, const key_type &k, time_type t, const void *tup, uint32_t len)
    {
        ++ops_;
        const time_type *last = last_.find(k);
        if (last != nullptr && !(*last < sat_sub(t, back_))) {
            ++stats_.passed;
            functor_.emit(node, tup, len);
        }
    }

    // Release, in time order, every buffered tuple no future tuple can precede.
    void release(gsq_node *node)
    {
        for (;;) {
            if (!rbuf_.empty() && r_ready(rbuf_.front().t)) {
                r_entry &e = rbuf_.front();
                apply_r(node, e.key, e.t);
                rbuf_.pop_front();
            } else if (!sbuf_.empty() && s_ready(sbuf_.front().t)) {
                s_entry &e = sbuf_.front();
                process_s(node, e.key, e.t, e.bytes.data(), e.bytes.size());
                sbytes_ -= e.bytes.size();
                sbuf_.pop_front();
            } else {
                break;
            }
        }
        if (ended_[1] && sbuf_.empty()) { // S is over: the filter is not needed any more
            rbuf_.clear();
            last_.release();
        }
    }

    // The earliest S time still to be processed, if known.
    std::optional<time_type> s_frontier() const
    {
        if (!sbuf_.empty())
            return sbuf_.front().t;
        if (ended_[1])
            return std::nullopt;
        return progress_[1];
    }

    void maybe_sweep()
    {
        if (last_.empty() || ops_ < std::max<uint64_t>(64, last_.size() / 2))
            return;
        const std::optional<time_type> f = s_frontier();
        if (!f)
            return;
        ops_ = 0;
        ++stats_.sweeps;
        const time_type cutoff = sat_sub(*f, back_);
        size_t i = 0;
        while (i < last_.capacity()) {
            // Backward-shift erase moves a later entry into slot i (or one
            // already seen, from the start, to the end): look at i again.
            if (last_.occupied(i) && last_.value_at(i) < cutoff) {
                last_.erase(last_.key_at(i));
                ++stats_.purged_keys;
            } else {
                ++i;
            }
        }
        if (last_.empty())
            last_.release();
        else if (last_.capacity() > 1024 && last_.size() * 8 < last_.capacity())
            last_.shrink_to_fit();
    }

    void note_held(gsq_node *node)
    {
        const size_t held = rbuf_.size() + sbuf_.size() + last_.size();
        if (held > stats_.peak_held) {
            stats_.peak_held = held;
            gsq_peak(node, GSQ_PEAK_HELD_TUPLES, held);
        }
        if (sbytes_ > stats_.peak_bytes) {
            stats_.peak_bytes = sbytes_;
            gsq_peak(node, GSQ_PEAK_HELD_BYTES, sbytes_);
        }
    }

    void emit_heartbeat_if_advanced(gsq_node *node)
    {
        std::optional<time_type> h;
        if (!sbuf_.empty())
            h = sbuf_.front().t;
        else if (!ended_[1])
            h = progress_[1];
        if (!h || (hb_out_ && !(*hb_out_ < *h)))
            return;
        hb_out_ = h;
        ++stats_.heartbeats_out;
        functor_.emit_heartbeat(node, *h);
    }

    F functor_;
    time_type back_;
    input_eofs eofs_{n_inputs};
    std::deque<r_entry> rbuf_;
    std::deque<s_entry> sbuf_;
    size_t sbytes_ = 0;
    open_hash_map<key_type, time_type, typename F::key_hash, typename F::key_eq> last_;
    std::optional<time_type> progress_[2];
    bool ended_[2] = {false, false};
    std::optional<time_type> hb_out_; // last heartbeat emitted
    uint64_t ops_ = 0;                // operations since the last sweep
    key_type scratch_{};              // reused by *_extract
    filter_join_stats stats_;
};

} // namespace gsq

#endif // GSQ_FILTER_JOIN_OP_HPP
