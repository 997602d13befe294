// join_op.hpp -- gsq::join_op<F>: two-input equi-join with a temporal
// predicate (GSQL INNER_JOIN | LEFT_OUTER_JOIN | RIGHT_OUTER_JOIN |
// OUTER_JOIN, seed 000 5.5 and 7.2).
//
// Functor interface (F), generated:
//
//   static constexpr int n_inputs = 2;            // input 0 = left (R), 1 = right (S)
//   static constexpr gsq::join_kind kind = gsq::join_kind::inner;
//                                   // | left_outer | right_outer | full_outer
//   using key_type = ...;           // the equality keys other than time; owning
//                                   // (strings as std::string), default-
//                                   // constructible, copyable; may be an empty
//                                   // struct (a pure temporal join)
//   struct key_hash { size_t operator()(const key_type &) const; };
//   struct key_eq   { bool operator()(const key_type &, const key_type &) const; };
//   using time_type = ...;          // the temporal join attribute: integer or double,
//                                   // increasing on both inputs
//   explicit F(gsq_node *node);     // may gsq_node_fail or throw
//
//   bool left_extract(const void *tup, uint32_t len, key_type &k, time_type &t);
//   bool right_extract(const void *tup, uint32_t len, key_type &k, time_type &t);
//       A data tuple of input 0 / 1: false if a predicate on that side alone
//       rejects it (it takes no part in the join, not even as an unmatched
//       outer row); else fill every field of k (reused between calls) and t.
//
//   time_type band_lo() const;
//   time_type band_hi() const;
//       A left tuple at tl matches right tuples (of equal key) with
//       tr in [tl - band_lo, tl + band_hi].  Equality join (R.tb = S.tb):
//       both 0.  The values may be negative for a signed or double time
//       (S.t BETWEEN R.t + 2 AND R.t + 5: band_lo = -2, band_hi = 5).
//
//   time_type left_time_of(const void *tup, uint32_t len) const;
//   time_type right_time_of(const void *tup, uint32_t len) const;
//       The temporal join value of a tuple of input 0 / 1: called on
//       heartbeats, and on data tuples that *_extract rejected (their time
//       still advances the input's progress, as seed 000 4.3 saves temporal
//       values whether or not the predicate holds).
//
//   void emit(gsq_node *node, const void *l, uint32_t llen, const void *r, uint32_t rlen);
//       One output row (evaluate the rest, gsq_emit GSQ_DATA).  l is a left
//       tuple and r a right one, in that order always; for an unmatched row
//       of an outer join the missing side is (nullptr, 0).
//
//   void emit_heartbeat(gsq_node *node, time_type t);
//       Emit a GSQ_HEARTBEAT whose temporal columns derive from join time t
//       (see "Heartbeats" for what t bounds).
//
// Behaviour.  Each side keeps owned copies of its data tuples that may still
// match future tuples of the other side: a FIFO in arrival order (= time
// order) plus an open_hash_map from key to the side's chain of entries.  A
// new tuple probes the other side's chain of its key, emits every pair whose
// times are in the band (many-to-many: every pair once, in the other side's
// arrival order), marks both as matched, and is stored.
//
// Progress p_L, p_R: the latest time seen on each input (data, filtered data
// or heartbeat); +infinity once the input ended; unknown before anything
// arrived (nothing of the other side is purged then).  Purge, in FIFO order,
// after every tuple, heartbeat and EOF:
//   a left entry at tl once  p_R > tl + band_hi  (no future right can match),
//   a right entry at tr once p_L > tr + band_lo.
// A purged entry that never matched is emitted with nullptr for the other
// side when its side is preserved (left: left_outer/full_outer; right:
// right_outer/full_outer) -- exactly once.  Memory is freed as entries go.
//
// Late tuples.  Inputs must arrive in time order: a data tuple whose time is
// before its own input's progress (a previous tuple or heartbeat of that
// input) is dropped and counted (GSQ_CNT_LATE_DROPPED).  This is exactly the
// condition under which its band could reach entries of the other side that
// were already purged (or a heartbeat already promised more), so accepting it
// could silently lose matches or emit a row below a heartbeat.
//
// Heartbeats.  The join time of an output row is its left time tl; for a
// right-only row (outer join) its right time tr (for an equality join that is
// the value the equated temporal columns take from the present side).  On a
// heartbeat on either input the operator updates progress, purges, and emits
// its own heartbeat with
//   H = min( p_L,                         future left tuples
//            p_R - band_hi,               stored/future lefts matched by a future right
//            [left preserved]  oldest stored left time,
//            [right preserved] p_R, oldest stored right time )
// (ended inputs contribute no p term) -- no future output row has a join time
// below H -- when both inputs' progress is known and H is after the last
// heartbeat emitted (strictly).  Equality join: H = min(p_L, p_R) (seed 000
// 5.5's MIN(RMIN, SMIN)).  Data tuples and the EOF of one input purge but
// emit no heartbeat.  A heartbeat without bytes (tup == NULL) is ignored.
//
// End of stream: the EOF of an input makes its progress infinite, which
// purges the other side's entries as they become unmatchable; when both
// inputs have ended everything is purged (unmatched preserved rows out), then
// GSQ_EOF.
//
// stats(): entries and bytes per side (current, peak), peak of both sides
// together, matches, unmatched rows, late and filtered tuples, heartbeats.
// Bytes are packed tuple bytes held (what the join experiment of seed 000
// 7.2 watches); the per-entry overhead (key copy, index) is not counted.
#ifndef GSQ_JOIN_OP_HPP
#define GSQ_JOIN_OP_HPP

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "hash_table.hpp"
#include "hfta_operator.hpp"

namespace gsq {

enum class join_kind { inner, left_outer, right_outer, full_outer };

struct join_stats {
    size_t entries[2] = {0, 0};         // tuples held now, per side (0 left, 1 right)
    size_t bytes[2] = {0, 0};           // their packed bytes
    size_t peak_side_entries[2] = {0, 0};
    size_t peak_side_bytes[2] = {0, 0};
    size_t peak_entries = 0;            // most tuples held by both sides at once
    size_t peak_bytes = 0;              // most bytes held by both sides at once
    uint64_t received[2] = {0, 0};      // data tuples in
    uint64_t filtered[2] = {0, 0};      // rejected by *_extract
    uint64_t late_dropped[2] = {0, 0};  // dropped as out of order
    uint64_t matches = 0;               // matched rows emitted
    uint64_t unmatched[2] = {0, 0};     // outer rows emitted (left-only, right-only)
    uint64_t purged[2] = {0, 0};        // entries purged
    uint64_t heartbeats_in = 0;
    uint64_t heartbeats_out = 0;
};

template <class F>
class join_op {
public:
    using functor_type = F;
    using key_type = typename F::key_type;
    using time_type = typename F::time_type;
    static constexpr int n_inputs = 2;
    static constexpr join_kind kind = F::kind;
    static constexpr bool preserve_left = kind == join_kind::left_outer || kind == join_kind::full_outer;
    static constexpr bool preserve_right = kind == join_kind::right_outer || kind == join_kind::full_outer;
    static_assert(functor_inputs<F>::value == 2, "join_op has exactly two inputs");
    static_assert(std::is_arithmetic_v<time_type>, "the temporal join attribute is an integer or double");

    explicit join_op(gsq_node *node) : functor_(node) {}

    void accept(gsq_node *node, int input, int kind_, const void *tup, uint32_t len)
    {
        eofs_.check(input, kind_);
        const int s = input; // 0 left, 1 right
        switch (kind_) {
        case GSQ_DATA:
            on_data(node, s, tup, len);
            break;
        case GSQ_HEARTBEAT:
            if (tup == nullptr)
                break;
            ++stats_.heartbeats_in;
            advance(sides_[s], time_of(s, tup, len));
            purge_all(node);
            emit_heartbeat_if_advanced(node);
            break;
        case GSQ_EOF:
            end_input(node, eofs_, input, [&] {
                sides_[s].ended = true;
                purge_all(node);
            });
            break;
        default:
            throw protocol_error("unknown tuple kind " + std::to_string(kind_));
        }
    }

    const join_stats &stats() const noexcept { return stats_; }
    // Tuples held by side s (0 left, 1 right).
    size_t entries(int s) const noexcept { return sides_[s].fifo.size(); }
    // Distinct keys indexed by side s, and the slots of its index.
    size_t keys(int s) const noexcept { return sides_[s].index.size(); }
    size_t index_slots(int s) const noexcept { return sides_[s].index.capacity(); }
    F &functor() noexcept { return functor_; }

private:
    static constexpr uint64_t none = std::numeric_limits<uint64_t>::max();

    struct entry {
        time_type t;
        uint64_t next;  // seq of the next entry with the same key, or none
        bool matched;
        key_type key;
        tuple_copy bytes;
    };

    struct chain {
        uint64_t head = none;
        uint64_t tail = none;
    };

    struct side {
        std::deque<entry> fifo; // arrival (= time) order; fifo[i] has seq base + i
        uint64_t base = 0;
        open_hash_map<key_type, chain, typename F::key_hash, typename F::key_eq> index;
        std::optional<time_type> progress;
        bool ended = false;
        key_type scratch{}; // reused by *_extract

        entry &at(uint64_t seq) { return fifo[static_cast<size_t>(seq - base)]; }
    };

    time_type time_of(int s, const void *tup, uint32_t len) const
    {
        return s == 0 ? functor_.left_time_of(tup, len) : functor_.right_time_of(tup, len);
    }

    static void advance(side &sd, time_type t)
    {
        if (!sd.progress || *sd.progress < t)
            sd.progress = t;
    }

    // Whether a left tuple at tl and a right tuple at tr are in the band.
    bool in_band(time_type tl, time_type tr) const
    {
        return !(tr < sat_sub(tl, functor_.band_lo())) && !(sat_add(tl, functor_.band_hi()) < tr);
    }

    void on_data(gsq_node *node, int s, const void *tup, uint32_t len)
    {
        side &me = sides_[s];
        side &other = sides_[1 - s];
        ++stats_.received[s];
        time_type t{};
        const bool keep = s == 0 ? functor_.left_extract(tup, len, me.scratch, t)
                                 : functor_.right_extract(tup, len, me.scratch, t);
        if (!keep) {
            ++stats_.filtered[s];
            const time_type ft = time_of(s, tup, len);
            if (!me.progress || !(ft < *me.progress)) {
                advance(me, ft);
                purge_all(node);
            }
            return;
        }
        if (me.progress && t < *me.progress) {
            ++stats_.late_dropped[s];
            gsq_count(node, GSQ_CNT_LATE_DROPPED, 1);
            return;
        }

        // Probe the other side's entries of this key.
        bool matched = false;
        if (const chain *c = other.index.find(me.scratch)) {
            for (uint64_t q = c->head; q != none;) {
                entry &e = other.at(q);
                q = e.next;
                const bool hit = s == 0 ? in_band(t, e.t) : in_band(e.t, t);
                if (!hit)
                    continue;
                matched = true;
                e.matched = true;
                ++stats_.matches;
                if (s == 0)
                    functor_.emit(node, tup, len, e.bytes.data(), e.bytes.size());
                else
                    functor_.emit(node, e.bytes.data(), e.bytes.size(), tup, len);
            }
        }

        // Store it.
        const uint64_t seq = me.base + me.fifo.size();
        me.fifo.push_back(entry{t, none, matched, me.scratch, tuple_copy(tup, len)});
        auto found = me.index.find_or_insert(me.scratch);
        chain &c = found.first;
        if (found.second)
            c.head = seq;
        else
            me.at(c.tail).next = seq;
        c.tail = seq;
        stats_.entries[s] += 1;
        stats_.bytes[s] += len;
        stats_.peak_side_entries[s] = std::max(stats_.peak_side_entries[s], stats_.entries[s]);
        stats_.peak_side_bytes[s] = std::max(stats_.peak_side_bytes[s], stats_.bytes[s]);
        stats_.peak_entries = std::max(stats_.peak_entries, stats_.entries[0] + stats_.entries[1]);
        stats_.peak_bytes = std::max(stats_.peak_bytes, stats_.bytes[0] + stats_.bytes[1]);
        gsq_peak(node, GSQ_PEAK_HELD_TUPLES, stats_.peak_entries);
        gsq_peak(node, GSQ_PEAK_HELD_BYTES, stats_.peak_bytes);

        advance(me, t);
        purge_all(node);
    }

    // Whether the entry at t of side s can no longer match anything.
    bool dead(int s, time_type t) const
    {
        const side &other = sides_[1 - s];
        if (other.ended)
            return true;
        if (!other.progress)
            return false;
        const time_type reach = s == 0 ? sat_add(t, functor_.band_hi()) : sat_add(t, functor_.band_lo());
        return reach < *other.progress;
    }

    void purge_all(gsq_node *node)
    {
        purge(node, 0);
        purge(node, 1);
    }

    void purge(gsq_node *node, int s)
    {
        side &me = sides_[s];
        bool any = false;
        while (!me.fifo.empty() && dead(s, me.fifo.front().t)) {
            entry &e = me.fifo.front();
            chain *c = me.index.find(e.key);
            // The oldest entry is the head of its key's chain.
            if (e.next == none)
                me.index.erase(e.key);
            else
                c->head = e.next;
            if (!e.matched && (s == 0 ? preserve_left : preserve_right)) {
                ++stats_.unmatched[s];
                if (s == 0)
                    functor_.emit(node, e.bytes.data(), e.bytes.size(), nullptr, 0);
                else
                    functor_.emit(node, nullptr, 0, e.bytes.data(), e.bytes.size());
            }
            stats_.entries[s] -= 1;
            stats_.bytes[s] -= e.bytes.size();
            ++stats_.purged[s];
            me.fifo.pop_front();
            ++me.base;
            any = true;
        }
        if (!any)
            return;
        if (me.fifo.empty()) // (an empty deque keeps a single block)
            me.index.release();
        else if (me.index.capacity() > 1024 && me.index.size() * 8 < me.index.capacity())
            me.index.shrink_to_fit();
    }

    // H of the header comment, or nothing while a progress is unknown.
    std::optional<time_type> heartbeat_bound() const
    {
        const side &l = sides_[0];
        const side &r = sides_[1];
        if ((!l.ended && !l.progress) || (!r.ended && !r.progress))
            return std::nullopt;
        std::optional<time_type> h;
        auto lower = [&h](time_type v) {
            if (!h || v < *h)
                h = v;
        };
        if (!l.ended)
            lower(*l.progress);
        if (!r.ended) {
            lower(sat_sub(*r.progress, functor_.band_hi()));
            if (preserve_right)
                lower(*r.progress);
        }
        if (preserve_left && !l.fifo.empty())
            lower(l.fifo.front().t);
        if (preserve_right && !r.fifo.empty())
            lower(r.fifo.front().t);
        return h;
    }

    void emit_heartbeat_if_advanced(gsq_node *node)
    {
        const std::optional<time_type> h = heartbeat_bound();
        if (!h || (hb_out_ && !(*hb_out_ < *h)))
            return;
        hb_out_ = h;
        ++stats_.heartbeats_out;
        functor_.emit_heartbeat(node, *h);
    }

    F functor_;
    input_eofs eofs_{n_inputs};
    side sides_[2];
    std::optional<time_type> hb_out_; // last heartbeat emitted
    join_stats stats_;
};

} // namespace gsq

#endif // GSQ_JOIN_OP_HPP
