// join_op.hpp -- gsq::join_op<F>: two-input equi-join with a temporal
// predicate (GSQL INNER_JOIN | LEFT_OUTER_JOIN | RIGHT_OUTER_JOIN |
// OUTER_JOIN, Johnson et al. 2005, 5.5 and 7.2).
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
//                                   // increasing on both inputs (for a
//                                   // disordered one: up to its heartbeats)
//   static constexpr bool left_ordered = true;   // optional, default true: input 0
//   static constexpr bool right_ordered = true;  // / 1 arrives in time order;
//                                   // false: it may arrive in any order, its
//                                   // heartbeats carry its progress (see
//                                   // "Disordered inputs")
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
//       heartbeats, and on data tuples of an in-order input that *_extract
//       rejected (their time still advances the input's progress, as seed
//       000 4.3 saves temporal values whether or not the predicate holds).
//
//   void emit(gsq_node *node, const void *l, uint32_t llen, const void *r, uint32_t rlen);
//       One output row (evaluate the rest, gsq_emit GSQ_DATA).  l is a left
//       tuple and r a right one, in that order always; for an unmatched row
//       of an outer join the missing side is (nullptr, 0).
//
//   void emit_heartbeat(gsq_node *node, time_type hl, time_type hr);
//       Emit a GSQ_HEARTBEAT: the output columns that are the left time take
//       hl, those that are the right time take hr (see "Heartbeats" for what
//       each bounds).
//
//   void emit_joint_heartbeat(gsq_node *node, time_type jl, time_type jr);
//       Optional, detected at compile time (without it the operator emits no
//       joint punctuation): emit a GSQ_JOINT_HEARTBEAT whose left-time
//       columns take jl and right-time columns jr (see "Joint punctuation").
//
// Behaviour.  Each side keeps owned copies of its data tuples that may still
// match future tuples of the other side: for an in-order input a FIFO in
// arrival order (= time order), for a disordered one a pool of entries with
// a min-heap on (time, arrival); either way an open_hash_map from key to the
// side's chain of entries (arrival order).  A new tuple probes the other
// side's chain of its key, emits every pair whose times are in the band
// (many-to-many: every pair once, in the other side's arrival order), marks
// both as matched, and is stored.
//
// Progress p_L, p_R: for an in-order input the latest time seen on it (data,
// filtered data or heartbeat); for a disordered input the latest heartbeat
// (see "Disordered inputs"); +infinity once the input ended; unknown before
// anything that sets it arrived (nothing of the other side is purged then).
// Purge, oldest first, after every tuple, heartbeat and EOF:
//   a left entry at tl once  p_R > tl + band_hi  (no future right can match),
//   a right entry at tr once p_L > tr + band_lo.
// A purged entry that never matched is emitted with nullptr for the other
// side when its side is preserved (left: left_outer/full_outer; right:
// right_outer/full_outer) -- exactly once.  Memory is freed as entries go.
//
// Output order.  The join time of a row is its left time tl, or for a
// right-only row its right time tr.  A data tuple first advances its input's
// progress and purges the other side's entries that progress makes
// unmatchable (their unmatched rows go out, oldest first), then probes (its
// matches, in the other side's time order), then is stored (and goes out at
// once as unmatched if the other side is already past its band).  Hence:
//   - equality join (band_lo == band_hi == 0): the join times of the output
//     are non-decreasing.  Invariant: after every input, each row emitted so
//     far has join time <= m = min(p_L, p_R), and every stored entry and
//     every future tuple (hence every future row) has time >= m; within one
//     input the purged rows (times < t) precede the rows at the tuple's
//     time t.  An outer join's unmatched rows therefore never follow a
//     matched row of a later time.
//   - band join: a row's join time is at most
//         output_disorder() = max(0, band_lo + band_hi,
//                                 [right preserved] band_lo, band_hi)
//     below the join time of any earlier row: inner and left outer, the
//     band width (a right tuple at tr matches stored lefts down to
//     tr - band_hi while a left up to tr + band_lo may already have
//     matched); a right-only row may also come band_lo below a matched row,
//     and a row band_hi below an earlier right-only row.  (For an empty band,
//     band_lo + band_hi < 0, which matches nothing, a right-preserving join
//     adds -band_lo, and a full one -band_hi: the unmatched rows of the two
//     sides interleave.)  The bound is attained by some inputs.  No row is
//     ever below a heartbeat emitted before it (its join time below hl, its
//     right time below hr; see "Heartbeats"), whatever the band.
//   output_disorder_of(lo, hi) is the same bound as a constexpr function of
//   the band, for a code generator that knows the band at compile time
//   (the direction of the output's join-time column may be declared
//   "increasing" only when it is 0).
// All of this is for two in-order inputs (output_ordered).  With a
// disordered input the output is ordered only up to its heartbeats: rows
// come in the order their tuples arrive, so a row may be below an earlier
// row by as much as the input's own disorder (plus the band), and neither
// output_disorder() nor the equality join's order holds.  What still holds
// are the heartbeat promises: no row is below a heartbeat emitted before it
// (nor below both halves of a joint heartbeat).
// The reader of such a join's output must therefore be order-agnostic (an
// operator that takes disordered input and honours heartbeats); the
// compiler sees to that.
//
// Late tuples.  A data tuple whose time is before its own input's progress
// is dropped and counted (gsq_count_late, stats().late_dropped): for
// an in-order input, before a previous tuple or heartbeat of that input; for
// a disordered one, before its latest heartbeat (a tuple that contradicts
// its input's own punctuation).  This is exactly the condition under which
// its band could reach entries of the other side that were already purged
// (or a heartbeat already promised more), so accepting it could silently
// lose matches or emit a row below a heartbeat.
//
// Disordered inputs (F::left_ordered / F::right_ordered false; Li et al. 2008, 5.3,
// OOP-Join, Figure 4).  For an input fed, say, by an OOP union that passes
// tuples on as they arrive with heartbeats that are the least of its
// inputs' progress:
//   - its progress is its latest heartbeat only (b_i of Figure 4); its data
//     tuples, filtered or not, never move it (left_time_of/right_time_of is
//     not called on its data);
//   - a data tuple below that progress is late (above); any other one,
//     however far behind earlier data of its input, is joined as usual:
//     purges nothing (the progress did not move), probes the other side,
//     emits its matches, and is stored -- unless the other side's progress
//     is already past its band (it can match no future tuple there), in
//     which case it is not stored and, unmatched and preserved, goes out at
//     once as an unmatched row;
//   - its entries are purged as the other side's progress passes them, and
//     the other side's entries as its heartbeats do, by the rule above:
//     state is freed by the punctuation of both inputs.  Held entries of a
//     side are then exactly its accepted tuples (time t) not yet past the
//     other side's progress p_o: left t + band_hi >= p_o, right
//     t + band_lo >= p_o, so how many are held is bounded by the other
//     side's punctuation (and its lag behind this side's data).  Until a
//     disordered input's first heartbeat nothing of the other side goes
//     (except at its end of stream).
// An in-order input of a join whose other input is disordered keeps the
// in-order rules (progress from its data and heartbeats, late below that).
//
// Heartbeats.  The join time of an output row is its left time tl; for a
// right-only row (outer join) its right time tr (for an equality join that is
// the value the equated temporal columns take from the present side).  On a
// heartbeat on either input the operator updates progress, purges, and emits
// its own heartbeat, two bounds (hl, hr):
//   hl = min( p_L,                        future left tuples
//             p_R - band_hi,              stored/future lefts matched by a future right
//             [left preserved]  oldest stored left time,
//             [right preserved] p_R, oldest stored right time )
//   hr = min( p_R,                        future right tuples
//             p_L - band_lo,              stored/future rights matched by a future left
//             [right preserved] oldest stored right time,
//             [left preserved]  p_L, oldest stored left time )
// (ended inputs contribute no p term; a bound without any term is the type's
// max) when both inputs' progress is known and either bound is after the one
// last emitted (strictly); each goes out as the max of itself and the one
// emitted before, so neither ever goes back.  What they bound, for every
// output row emitted after them, whatever the order of the inputs (a future
// row comes from a future left, tl >= p_L, smaller ones being late; from a
// future right, tr >= p_R; or is the unmatched row of a stored or future
// tuple of a preserved side):
//   - hl: the join time (tl of matched and left-only rows, tr of right-only
//     rows).  A future right matches lefts at tl >= tr - band_hi >=
//     p_R - band_hi.
//   - hr: the right time tr of matched and right-only rows -- a future left
//     matches rights at tr >= tl - band_lo >= p_L - band_lo -- and the left
//     time of left-only rows: what an equality join's right-time column holds
//     on them (filled from the left time).
// hl says nothing about the right time of a matched row (down to
// hl - band_lo), which is why the right-time columns get hr (a band with
// band_lo > 0 puts hr below hl); nor does hr bound the left time.  Neither
// bounds the missing side's column of a band join's outer row (it is empty);
// the compiler declares such a column not temporal.  Equality join:
// hl = hr = min(p_L, p_R) and the oldest stored entries of preserved sides
// (Johnson et al. 2005, 5.5's MIN(RMIN, SMIN); Figure 4's min(b_0, b_1)).  Data tuples
// and the EOF of one input purge but emit no heartbeat.  A heartbeat without
// bytes (tup == NULL) is ignored, and so is a joint heartbeat
// (GSQ_JOINT_HEARTBEAT) on an input: it moves no progress.
//
// Joint punctuation (Li et al. 2008, 7; only when F has emit_joint_heartbeat).  With
//   J_L = min(p_L, [left preserved]  oldest stored left time)
//   J_R = min(p_R, [right preserved] oldest stored right time)
// (an ended input's p is +infinity: the type's max, as is a J without a
// finite term), every output row emitted later has tl >= J_L or tr >= J_R: it
// involves a future left (tl >= p_L) or a future right (tr >= p_R), or is the
// unmatched row of a stored entry of a preserved side (two stored entries
// make no new row: the later one probed the earlier when it came).  An outer
// row satisfies the half of its present side, so the empty or filled column
// of its missing side does not matter.  On a heartbeat on either input,
// after the heartbeat step above, when both inputs' progress is known, the
// operator emits (jl, jr), the componentwise max of (J_L, J_R) and the pair
// last emitted, when either component rose (strictly).  A consumer grouping
// on both times may close the group (a, b) once a < jl and b < jr.  Unlike
// hl and hr, J does not lose the band: on a band join it leads the
// individual bounds by up to the band (Li et al. 2008 Figure 8: punctuation (2,1)
// comes before (*,1)).
//
// End of stream: the EOF of an input makes its progress infinite, which
// purges the other side's entries as they become unmatchable; when both
// inputs have ended everything is purged (unmatched preserved rows out), then
// GSQ_EOF.
//
// stats(): entries and bytes per side (current, peak), peak of both sides
// together, matches, unmatched rows, late and filtered tuples, heartbeats
// (in, out) and joint heartbeats out.
// Bytes are packed tuple bytes held (what the join experiment of Johnson et al. 2005
// 7.2 watches); the per-entry overhead (key copy, index, a disordered side's
// heap item and free pool slots) is not counted.  A disordered side's pool
// is freed when the side empties and compacted when fewer than 1/8 of its
// slots hold entries.
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
#include <vector>

#include "hash_table.hpp"
#include "hfta_operator.hpp"

namespace gsq {

enum class join_kind { inner, left_outer, right_outer, full_outer };

// F::left_ordered / F::right_ordered, or true when F declares none.
template <class F, class = void>
struct join_left_ordered : std::true_type {};
template <class F>
struct join_left_ordered<F, std::void_t<decltype(F::left_ordered)>> : std::bool_constant<F::left_ordered> {};
template <class F, class = void>
struct join_right_ordered : std::true_type {};
template <class F>
struct join_right_ordered<F, std::void_t<decltype(F::right_ordered)>> : std::bool_constant<F::right_ordered> {};

// Whether F has emit_joint_heartbeat(gsq_node*, time_type, time_type).
template <class F, class = void>
struct join_has_joint_heartbeat : std::false_type {};
template <class F>
struct join_has_joint_heartbeat<F, std::void_t<decltype(std::declval<F &>().emit_joint_heartbeat(
                                       std::declval<gsq_node *>(), std::declval<typename F::time_type>(),
                                       std::declval<typename F::time_type>()))>> : std::true_type {};

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
    uint64_t joint_heartbeats_out = 0;  // joint punctuation emitted
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
    // Whether each input arrives in time order (see "Disordered inputs").
    static constexpr bool left_ordered = join_left_ordered<F>::value;
    static constexpr bool right_ordered = join_right_ordered<F>::value;
    // Whether the output's join times keep the output_disorder() bound; with
    // a disordered input only the heartbeats order the output.
    static constexpr bool output_ordered = left_ordered && right_ordered;
    // Whether the operator emits joint punctuation (F::emit_joint_heartbeat).
    static constexpr bool joint_punctuation = join_has_joint_heartbeat<F>::value;
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
            emit_heartbeats_if_advanced(node);
            break;
        case GSQ_JOINT_HEARTBEAT: // moves no progress (header comment)
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

    // The output-order bound of the header comment ("Output order"): how far
    // a row's join time may be below an earlier row's.  0 for an equality
    // join.
    static constexpr time_type output_disorder_of(time_type lo, time_type hi) noexcept
    {
        time_type d = time_type(0);
        const time_type width = sat_add(lo, hi);
        if (d < width)
            d = width;
        if constexpr (preserve_right) {
            if (d < lo)
                d = lo;
            if (d < hi)
                d = hi;
            if constexpr (std::is_signed_v<time_type>) { // empty bands only
                if (d < sat_sub(time_type(0), lo))
                    d = sat_sub(time_type(0), lo);
                if (preserve_left && d < sat_sub(time_type(0), hi))
                    d = sat_sub(time_type(0), hi);
            }
        }
        return d;
    }
    time_type output_disorder() const { return output_disorder_of(functor_.band_lo(), functor_.band_hi()); }

    const join_stats &stats() const noexcept { return stats_; }
    // Tuples held by side s (0 left, 1 right).
    size_t entries(int s) const noexcept { return ordered(s) ? sides_[s].fifo.size() : sides_[s].heap.size(); }
    // Distinct keys indexed by side s, and the slots of its index.
    size_t keys(int s) const noexcept { return sides_[s].index.size(); }
    size_t index_slots(int s) const noexcept { return sides_[s].index.capacity(); }
    // Entry slots allocated by side s: its entries, and for a disordered side
    // the free slots of its pool.
    size_t entry_slots(int s) const noexcept
    {
        return ordered(s) ? sides_[s].fifo.size() : sides_[s].pool.size();
    }
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

    // An entry of a disordered input: in a slot of the side's pool, doubly
    // linked in its key's chain (arrival order) so that it can leave from
    // the middle.
    struct loose_entry {
        time_type t{};
        uint64_t prev = none; // slots of the neighbours in the key's chain, or none
        uint64_t next = none;
        bool matched = false;
        key_type key{};
        tuple_copy bytes;
    };

    // A disordered input's entries in time order: a min-heap on (t, arrival).
    struct heap_item {
        time_type t;
        uint64_t arrival;
        uint64_t slot;
    };
    struct heap_later { // the heap's "less": the oldest item is on top
        bool operator()(const heap_item &a, const heap_item &b) const
        {
            if (a.t < b.t)
                return false;
            if (b.t < a.t)
                return true;
            return b.arrival < a.arrival;
        }
    };

    // The ids in a chain are seqs (in-order input) or pool slots (disordered).
    struct chain {
        uint64_t head = none;
        uint64_t tail = none;
    };

    struct side {
        // In-order input.
        std::deque<entry> fifo; // arrival (= time) order; fifo[i] has seq base + i
        uint64_t base = 0;
        // Disordered input.
        std::vector<loose_entry> pool;    // slots; the free ones are listed in free_slots
        std::vector<uint64_t> free_slots;
        std::vector<heap_item> heap;      // one item per held entry
        uint64_t arrivals = 0;
        open_hash_map<key_type, chain, typename F::key_hash, typename F::key_eq> index;
        std::optional<time_type> progress;
        bool ended = false;
        key_type scratch{}; // reused by *_extract

        entry &at(uint64_t seq) { return fifo[static_cast<size_t>(seq - base)]; }
    };

    static constexpr bool ordered(int s) noexcept { return s == 0 ? left_ordered : right_ordered; }
    static constexpr bool preserved(int s) noexcept { return s == 0 ? preserve_left : preserve_right; }

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
        ++stats_.received[s];
        time_type t{};
        const bool keep = s == 0 ? functor_.left_extract(tup, len, me.scratch, t)
                                 : functor_.right_extract(tup, len, me.scratch, t);
        if (!keep) {
            ++stats_.filtered[s];
            // (A disordered input's data never moves its progress.)
            if (ordered(s)) {
                const time_type ft = time_of(s, tup, len);
                if (!me.progress || !(ft < *me.progress)) {
                    advance(me, ft);
                    purge_all(node);
                }
            }
            return;
        }
        if (me.progress && t < *me.progress) {
            ++stats_.late_dropped[s];
            gsq_count_late(node, s, tup, len); // and the rows it stands for
            return;
        }

        if (ordered(s)) {
            // Progress first: the other side's entries this tuple's time makes
            // unmatchable (all below its band, so it could not match them) go
            // out before any row of this tuple -- the output order (see
            // "Output order" in the header comment).
            advance(me, t);
            purge(node, 1 - s);
        }

        const bool matched = probe(node, s, t, tup, len);

        if (ordered(s)) {
            store_in_order(node, s, t, matched, tup, len);
            // The new entry itself, if the other side is already past its band
            // (the rest of this side was purged when that progress came).
            purge(node, s);
        } else if (!dead(s, t)) {
            store_loose(node, s, t, matched, tup, len);
        } else if (!matched && preserved(s)) {
            // Past the other side's band already (Figure 4: not stored).
            emit_unmatched(node, s, tup, len);
        }
    }

    // Probes the other side's entries of the key in me.scratch with a tuple of
    // side s at t: emits every pair in the band (in the other side's arrival
    // order) and marks the other side's entries matched.  Whether any matched.
    bool probe(gsq_node *node, int s, time_type t, const void *tup, uint32_t len)
    {
        side &other = sides_[1 - s];
        const chain *c = other.index.find(sides_[s].scratch);
        if (!c)
            return false;
        bool matched = false;
        auto visit = [&](auto &e) {
            const bool hit = s == 0 ? in_band(t, e.t) : in_band(e.t, t);
            if (!hit)
                return;
            matched = true;
            e.matched = true;
            ++stats_.matches;
            if (s == 0)
                functor_.emit(node, tup, len, e.bytes.data(), e.bytes.size());
            else
                functor_.emit(node, e.bytes.data(), e.bytes.size(), tup, len);
        };
        if (ordered(1 - s)) {
            for (uint64_t q = c->head; q != none;) {
                entry &e = other.at(q);
                q = e.next;
                visit(e);
            }
        } else {
            for (uint64_t q = c->head; q != none;) {
                loose_entry &e = other.pool[static_cast<size_t>(q)];
                q = e.next;
                visit(e);
            }
        }
        return matched;
    }

    // Appends to an in-order side's FIFO and its key's chain.
    void store_in_order(gsq_node *node, int s, time_type t, bool matched, const void *tup, uint32_t len)
    {
        side &me = sides_[s];
        const uint64_t seq = me.base + me.fifo.size();
        me.fifo.push_back(entry{t, none, matched, me.scratch, tuple_copy(tup, len)});
        auto found = me.index.find_or_insert(me.scratch);
        chain &c = found.first;
        if (found.second)
            c.head = seq;
        else
            me.at(c.tail).next = seq;
        c.tail = seq;
        note_stored(node, s, len);
    }

    // Puts a disordered side's tuple in a free slot (or a new one), at the
    // tail of its key's chain, and on the heap.
    void store_loose(gsq_node *node, int s, time_type t, bool matched, const void *tup, uint32_t len)
    {
        side &me = sides_[s];
        uint64_t slot;
        if (!me.free_slots.empty()) {
            slot = me.free_slots.back();
            me.free_slots.pop_back();
        } else {
            slot = me.pool.size();
            me.pool.emplace_back();
        }
        loose_entry &e = me.pool[static_cast<size_t>(slot)];
        e.t = t;
        e.matched = matched;
        e.key = me.scratch;
        e.bytes = tuple_copy(tup, len);
        auto found = me.index.find_or_insert(me.scratch);
        chain &c = found.first;
        if (found.second) {
            c.head = slot;
        } else {
            me.pool[static_cast<size_t>(c.tail)].next = slot;
            e.prev = c.tail;
        }
        c.tail = slot;
        me.heap.push_back(heap_item{t, me.arrivals++, slot});
        std::push_heap(me.heap.begin(), me.heap.end(), heap_later{});
        note_stored(node, s, len);
    }

    void note_stored(gsq_node *node, int s, uint32_t len)
    {
        stats_.entries[s] += 1;
        stats_.bytes[s] += len;
        stats_.peak_side_entries[s] = std::max(stats_.peak_side_entries[s], stats_.entries[s]);
        stats_.peak_side_bytes[s] = std::max(stats_.peak_side_bytes[s], stats_.bytes[s]);
        stats_.peak_entries = std::max(stats_.peak_entries, stats_.entries[0] + stats_.entries[1]);
        stats_.peak_bytes = std::max(stats_.peak_bytes, stats_.bytes[0] + stats_.bytes[1]);
        gsq_peak(node, GSQ_PEAK_HELD_TUPLES, stats_.peak_entries);
        gsq_peak(node, GSQ_PEAK_HELD_BYTES, stats_.peak_bytes);
    }

    // An unmatched row of a preserved side s.
    void emit_unmatched(gsq_node *node, int s, const void *tup, uint32_t len)
    {
        ++stats_.unmatched[s];
        if (s == 0)
            functor_.emit(node, tup, len, nullptr, 0);
        else
            functor_.emit(node, nullptr, 0, tup, len);
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
        if (!ordered(s)) {
            purge_loose(node, s);
            return;
        }
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
            if (!e.matched && preserved(s))
                emit_unmatched(node, s, e.bytes.data(), e.bytes.size());
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

    // A disordered side: the dead entries are the oldest ones (dead() is
    // monotone in t), so they leave from the top of the heap, oldest first.
    void purge_loose(gsq_node *node, int s)
    {
        side &me = sides_[s];
        bool any = false;
        while (!me.heap.empty() && dead(s, me.heap.front().t)) {
            std::pop_heap(me.heap.begin(), me.heap.end(), heap_later{});
            const uint64_t slot = me.heap.back().slot;
            me.heap.pop_back();
            loose_entry &e = me.pool[static_cast<size_t>(slot)];
            if (e.prev == none && e.next == none) {
                me.index.erase(e.key);
            } else {
                chain *c = me.index.find(e.key);
                if (e.prev == none)
                    c->head = e.next;
                else
                    me.pool[static_cast<size_t>(e.prev)].next = e.next;
                if (e.next == none)
                    c->tail = e.prev;
                else
                    me.pool[static_cast<size_t>(e.next)].prev = e.prev;
            }
            if (!e.matched && preserved(s))
                emit_unmatched(node, s, e.bytes.data(), e.bytes.size());
            stats_.entries[s] -= 1;
            stats_.bytes[s] -= e.bytes.size();
            ++stats_.purged[s];
            e = loose_entry{}; // frees the copy (and the key's)
            me.free_slots.push_back(slot);
            any = true;
        }
        if (!any)
            return;
        if (me.heap.empty()) {
            me.index.release();
            std::vector<loose_entry>().swap(me.pool);
            std::vector<uint64_t>().swap(me.free_slots);
            std::vector<heap_item>().swap(me.heap);
            return;
        }
        if (me.index.capacity() > 1024 && me.index.size() * 8 < me.index.capacity())
            me.index.shrink_to_fit();
        if (me.pool.size() > 1024 && me.heap.size() * 8 < me.pool.size())
            compact(me);
    }

    // Moves a disordered side's held entries to the front slots of a pool of
    // their size (the free slots go), renumbering chains and heap.  Runs when
    // fewer than 1/8 of the slots hold entries, so its cost is amortized over
    // the purges that freed them.
    static void compact(side &me)
    {
        std::vector<uint64_t> to(me.pool.size(), none);
        std::vector<loose_entry> pool;
        pool.reserve(me.heap.size());
        for (heap_item &h : me.heap) {
            const size_t from = static_cast<size_t>(h.slot);
            to[from] = pool.size();
            pool.push_back(std::move(me.pool[from]));
            h.slot = to[from];
        }
        for (loose_entry &e : pool) {
            if (e.prev != none)
                e.prev = to[static_cast<size_t>(e.prev)];
            if (e.next != none)
                e.next = to[static_cast<size_t>(e.next)];
        }
        for (size_t i = me.index.next_occupied(0); i < me.index.capacity(); i = me.index.next_occupied(i + 1)) {
            chain &c = me.index.value_at(i);
            c.head = to[static_cast<size_t>(c.head)];
            c.tail = to[static_cast<size_t>(c.tail)];
        }
        me.pool.swap(pool);
        std::vector<uint64_t>().swap(me.free_slots);
        me.heap.shrink_to_fit();
    }

    // The oldest time held by side s.
    std::optional<time_type> oldest(int s) const
    {
        const side &sd = sides_[s];
        if (ordered(s))
            return sd.fifo.empty() ? std::nullopt : std::optional<time_type>(sd.fifo.front().t);
        return sd.heap.empty() ? std::nullopt : std::optional<time_type>(sd.heap.front().t);
    }

    // A pair of bounds, one on each time of an output row.
    struct time_pair {
        time_type left;
        time_type right;
    };

    // The least of the terms given; the type's max (no bound) without any.
    class least {
    public:
        void operator()(time_type v)
        {
            if (!v_ || v < *v_)
                v_ = v;
        }
        time_type value() const { return v_ ? *v_ : std::numeric_limits<time_type>::max(); }

    private:
        std::optional<time_type> v_;
    };

    bool progress_known() const
    {
        for (const side &sd : sides_)
            if (!sd.ended && !sd.progress)
                return false;
        return true;
    }

    // (hl, hr) of the header comment ("Heartbeats"), or nothing while a
    // progress is unknown.
    std::optional<time_pair> heartbeat_bounds() const
    {
        if (!progress_known())
            return std::nullopt;
        const side &l = sides_[0];
        const side &r = sides_[1];
        least hl, hr;
        if (!l.ended) {
            hl(*l.progress);
            hr(sat_sub(*l.progress, functor_.band_lo()));
            if (preserve_left) // an unmatched future left (its right time filled from it)
                hr(*l.progress);
        }
        if (!r.ended) {
            hr(*r.progress);
            hl(sat_sub(*r.progress, functor_.band_hi()));
            if (preserve_right) // an unmatched future right
                hl(*r.progress);
        }
        for (int s = 0; s < 2; ++s) {
            if (!preserved(s))
                continue;
            if (const std::optional<time_type> o = oldest(s)) { // its unmatched row
                hl(*o);
                hr(*o);
            }
        }
        return time_pair{hl.value(), hr.value()};
    }

    // (J_L, J_R) of the header comment ("Joint punctuation"), or nothing
    // while a progress is unknown.
    std::optional<time_pair> joint_bounds() const
    {
        if (!progress_known())
            return std::nullopt;
        least j[2];
        for (int s = 0; s < 2; ++s) {
            if (!sides_[s].ended)
                j[s](*sides_[s].progress);
            if (preserved(s))
                if (const std::optional<time_type> o = oldest(s))
                    j[s](*o);
        }
        return time_pair{j[0].value(), j[1].value()};
    }

    // Raises `last` (the pair emitted before, if any) to `next`
    // componentwise; whether a component rose (strictly), i.e. whether the
    // raised pair is news worth emitting.
    static bool raise(std::optional<time_pair> &last, const time_pair &next)
    {
        if (!last) {
            last = next;
            return true;
        }
        bool rose = false;
        if (last->left < next.left) {
            last->left = next.left;
            rose = true;
        }
        if (last->right < next.right) {
            last->right = next.right;
            rose = true;
        }
        return rose;
    }

    // After an input heartbeat: the heartbeat (hl, hr), then the joint
    // punctuation, each when it moved.
    void emit_heartbeats_if_advanced(gsq_node *node)
    {
        if (const std::optional<time_pair> h = heartbeat_bounds(); h && raise(hb_out_, *h)) {
            ++stats_.heartbeats_out;
            functor_.emit_heartbeat(node, hb_out_->left, hb_out_->right);
        }
        if constexpr (joint_punctuation) {
            if (const std::optional<time_pair> j = joint_bounds(); j && raise(joint_out_, *j)) {
                ++stats_.joint_heartbeats_out;
                functor_.emit_joint_heartbeat(node, joint_out_->left, joint_out_->right);
            }
        }
    }

    F functor_;
    input_eofs eofs_{n_inputs};
    side sides_[2];
    std::optional<time_pair> hb_out_;    // last heartbeat (hl, hr) emitted
    std::optional<time_pair> joint_out_; // last joint punctuation (jl, jr) emitted
    join_stats stats_;
};

} // namespace gsq

#endif // GSQ_JOIN_OP_HPP
