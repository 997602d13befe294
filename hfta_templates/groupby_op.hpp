// groupby_op.hpp -- gsq::groupby_op<F>: the HFTA aggregation operator, with
// epochs defined by the temporal group-by columns and a slow flush.
//
// Behaviour.  The groups of each open epoch live in an open_hash_map.  With
// max_disorder K (a functor member, default 1: in-order input) up to K epochs
// are open at once, so input disordered by up to K epochs loses nothing
// (Tigon's max_hfta_disorder; Li et al. 2008, 5.2 and A.2.2).  The open epochs are
// kept sorted, oldest first; each table is allocated by its first group (an
// epoch may be open with no groups).  A data tuple of epoch e:
//   - e open: it folds into e's group (the newest epoch is checked first, so
//     in-order input costs one epoch comparison, as with K = 1);
//   - e newer than every open epoch: e opens; if that makes K + 1 open, the
//     oldest closes;
//   - e between two open epochs: e opens, the oldest closing if that makes
//     K + 1;
//   - e older than every open epoch: e opens if fewer than K are open, e is
//     newer than every closed epoch and e is not older than the last
//     heartbeat this operator emitted (the output never contradicts its
//     heartbeats) nor, with strict heartbeats, than the last one received;
//   - otherwise the tuple is late: dropped and counted
//     (GSQ_CNT_LATE_DROPPED, stats().late_dropped).
// With K = 1 this is: a later epoch closes the current one, an older one is
// late.  Closing: the oldest open epoch's table becomes the flushing table
// (an O(1) swap).  With the slow flush (the default) every later input data
// tuple or heartbeat, before it is processed, emits one group of the flushing
// table, in slot order, so the output of a closed epoch is spread over the
// following input instead of arriving as one burst.  If another epoch closes
// before the flush is done, the remaining old groups are emitted at once
// first.  Epochs close oldest first and every epoch opened later is newer
// than the closed ones, so the groups of an older epoch always come out
// before those of a newer one: the output's temporal columns are
// non-decreasing.  A flushing table frees its memory as soon as its last
// group is out, so memory is bounded by K + 1 epochs' groups
// (allocated_slots()).  When every input has ended: the flushing table, then
// the open epochs oldest first, then GSQ_EOF.
//
// Promised input (Srivastava & Widom 2004: heartbeats generated from declared time bounds).
// When the run keeps the input's heartbeats as promises -- no data tuple
// after a heartbeat h is of an epoch before h's, the run dropping (and
// counting per source) the records that would break one before they get
// here: gsq_input_heartbeats_strict, true for an LFTA over a source with
// generated heartbeats whose heartbeat is the record's time, for the merge
// of such LFTAs over an interface set, and for a MERGE of inputs that are
// all promised -- data never closes an epoch (promised(); the operator has
// one input).  K does not limit the open epochs any more:
//   - a data tuple of an epoch e that is not open opens it wherever it falls
//     (newer than all, between two, or older than all), unless e is before
//     the latest heartbeat received or emitted or not newer than every
//     closed epoch: then, as ever, the tuple is late (dropped, counted) --
//     which, promises kept, only a tuple that broke one can be;
//   - epochs close only on a heartbeat h (every open epoch before h's,
//     oldest first, with the flush above) and at the end;
//   - the open epochs then live in a growing, sorted ring of slots (a binary
//     search finds an older tuple's epoch; the oldest closes and an epoch
//     older than all opens in O(1)); without promises they are the fixed
//     array of K, and in-order input costs what it did.
// So input disordered by any amount within the declared bounds loses
// nothing, whatever K is (an interface's out_of_order, skew bounds through
// their closure, an estimator's estimates), and memory is bounded by the
// groups of the epochs the promises leave open (from the oldest epoch a
// heartbeat left open to the newest data), plus the flushing one, not by K:
// a table is released as its epoch's last group goes out, the slots are
// freed at the end.  Everything else holds as above: the output is in epoch
// order (epochs close oldest first, and only an epoch newer than every
// closed one opens), the slow flush, the heartbeats emitted (below: never going back,
// never below what may still come out), joint punctuation (only the floor
// says when no older epoch can open).  An input that stalls (a silent
// source whose heartbeat cannot advance) holds the other inputs' epochs
// until it moves: declare a skew bound (or a heartbeat timeout) to bound
// that too.  A merge's heartbeat sets only its merge column (the rest
// zero): when the epoch is over another column (an interface set's LFTA
// with several temporal columns, the epoch not over the first), its
// heartbeats announce what a heartbeat of zeros does, below the data's
// epochs -- seeing that, the operator goes back to the K rule for good
// (promised() false) rather than hold every epoch to the end.
//
// Functor interface (F), all generated:
//
//   using key_type = ...;    // the group-by values, temporal ones included;
//                            // owning (strings as std::string), default-
//                            // constructible, copyable
//   using state_type = ...;  // the aggregate state of one group; owning
//                            // (RAII releases UDAF resources), default-
//                            // constructible, movable
//   using epoch_type = ...;  // the values of the temporal group-by columns
//   struct key_hash { size_t operator()(const key_type &) const; };
//   struct key_eq   { bool operator()(const key_type &, const key_type &) const; };
//                            // (the table mixes the hash, a weak one is fine;
//                            //  gsq::hash_combine chains columns)
//   static constexpr int n_inputs = N;   // optional, default 1; every input
//                                        // has the same tuple layout
//   static constexpr unsigned max_disorder = K;  // optional, default 1: how
//                                        // many epochs may be open at once
//                                        // (bounded input disorder, >= 1)
//   static constexpr bool strict_heartbeats = B; // optional, default false:
//                                        // an input heartbeat is a promise
//                                        // (punctuation) that closes every
//                                        // epoch before it (see Heartbeats);
//                                        // the K rule above still holds (the
//                                        // run-time promises of "Promised
//                                        // input" lift it)
//   epoch_type must be default-constructible and copyable.
//
//   explicit F(gsq_node *node);
//       Reads run-time parameters; on a missing or bad one calls gsq_node_fail
//       (the operator is then discarded) or throws.
//
//   bool extract(const void *tup, uint32_t len, key_type &key);
//       Evaluates WHERE; false if the tuple is filtered out.  Otherwise fills
//       every field of `key` (temporal parts included).  `key` is reused from
//       call to call (so string buffers are recycled): assign all fields.
//
//   epoch_type epoch_of(const key_type &key) const;
//
//   int epoch_compare(const epoch_type &current, const epoch_type &e) const;
//       > 0: e is a later epoch than `current`; 0: same epoch; < 0: e is
//       older.  With max_disorder > 1 it must be a total order (epochs are
//       kept sorted by it).
//
//   void init(state_type &state, const void *tup, uint32_t len);
//       The first tuple of a new group; `state` is default-constructed.
//   void update(state_type &state, const void *tup, uint32_t len);
//       Every later tuple of the group.  (Input tuples may be partial
//       aggregates from an LFTA; init/update know how to combine them.)
//
//   void emit(gsq_node *node, const key_type &key, const state_type &state);
//       A finished group: evaluate HAVING and, if it holds, emit the output
//       tuple with gsq_emit(node, GSQ_DATA, ...).  A group rejected by HAVING
//       still counts as the one group a slow-flush step processes.
//
//   Heartbeats (temporal update tuples, GSQ_HEARTBEAT), two optional members
//   detected at compile time:
//
//   bool heartbeat_epoch(const void *tup, uint32_t len, epoch_type &e);
//       The epoch a temporal update on an input announces: the temporal
//       group-by values inferred from its temporal columns ("no future input
//       tuple is of an epoch before e").  False if it announces nothing.
//       May be const.
//
//   void emit_heartbeat(gsq_node *node, const epoch_type &e);
//       Emit the operator's own temporal update with
//       gsq_emit(node, GSQ_HEARTBEAT, ...): the output's temporal columns
//       computed from the epoch values e.  May be const.
//
// Input tuples are valid only during a call; the template copies the key into
// its table, the functor copies anything else it keeps into the state.
//
// Heartbeats (Johnson et al. 2005, 4.4 / 5.3, Li et al. 2008, 5.1).  On a GSQ_HEARTBEAT on any
// input:
//   1. like a data tuple it advances the slow flush by one group (whether or
//      not the functor knows heartbeats: a stalled input still drains);
//   2. if F has heartbeat_epoch and it returns true with h, h is progress,
//      like a tuple of epoch h that folds nothing: when no epoch is known yet
//      h opens; when h is newer than every open epoch it opens as an empty
//      epoch, closing the oldest if that makes more than max_disorder (with
//      K = 1: the current epoch closes exactly as if a tuple of epoch h had
//      arrived -- its slow flush starts, a flush still running completes
//      first -- and h becomes the current epoch, nothing inserted; with
//      promises h opens as the newest, nothing closing).  If
//      F::strict_heartbeats (an HFTA's output, the plan's) or the input is
//      promised (above), h also says every epoch before h is complete:
//      every open epoch older than h closes (oldest first), and h, if it is
//      not open, opens as the oldest open epoch when there is room (with
//      promises: always).  Later data tuples then follow the rules above:
//      with K = 1, or strict heartbeats, a tuple of an epoch before h is
//      late;
//   3. if F has emit_heartbeat, the operator emits its own heartbeat: the
//      oldest epoch that may still produce output,
//        - while groups of a closed epoch remain unflushed: that (flushing)
//          epoch -- the "last flushed" rule, since those groups are still to
//          come out;
//        - otherwise the oldest open epoch (with K = 1 the current one, which
//          after step 2 is the max of the epochs seen in data and
//          heartbeats); while fewer than K epochs are open (with promises:
//          always) an older one may still open, so then no more than
//          max(latest epoch an input heartbeat announced, newest closed
//          epoch) when either is known (the input promised nothing before
//          the one, nothing opens at or before the other) -- and with
//          promises nothing while neither is known;
//      and never an epoch lower than one emitted before (the previous one is
//      repeated instead).  Nothing is emitted before any epoch is known.
//      Emitting commits: a data tuple of an epoch older than the last
//      heartbeat emitted is late (this only matters while fewer than K
//      epochs are open: otherwise an epoch older than every open one is late
//      anyway; with promises it is never above the latest one received or
//      the newest closed epoch, so it makes nothing late that was not).
// A heartbeat without bytes (tup == NULL) only does step 1 and step 3.
// Data tuples never trigger a heartbeat.
//
// Joint punctuation (Li et al. 2008, section 7).  The epoch is made by the temporal
// group-by keys over one temporal input column (the generator picks the
// first one's); a temporal key over another column -- the other input's time
// in an aggregation over a band join -- is an ordinary key, its groups held
// until their epoch closes.  A join's GSQ_JOINT_HEARTBEAT says no later
// tuple is below it on both time columns together; three optional functor
// members, detected at compile time, use it:
//
//   bool joint_update(const void *tup, uint32_t len);
//       A joint punctuation: keep its bounds on the group-by keys (the
//       latest); true when they moved.
//   bool joint_covers(const key_type &k) const;
//       Whether no later tuple can fall into group k by the bounds kept
//       (false before the first joint punctuation).
//   bool joint_may_cover(const epoch_type &e) const;
//       False when no group of epoch e can be covered (a cheap pre-check).
//   static constexpr bool ordered_output = B;  // optional, default true
//
// On a joint punctuation that moved the bounds, every group it covers leaves
// at once (emitted, removed from its table; a flush still running completes
// first): with ordered_output, only groups of the oldest open epoch, and only
// once no older epoch can open (max_disorder open, or the floor is there), so
// the output stays in epoch order; without it, groups of any open epoch, so
// the output is disordered by up to max_disorder epochs (its heartbeats still
// hold: every released group's epoch is open, hence at or after the
// heartbeat).  A later data tuple in a covered group is late (dropped,
// counted).  Without the members a joint punctuation only advances the slow
// flush, like a heartbeat without bytes.
//
// stats(): groups created and flushed, late tuples, epochs closed, open
// epochs (now and peak), groups held by the open epochs (peak; reported as
// GSQ_PEAK_HELD_TUPLES), heartbeats in and out.
#ifndef GSQ_GROUPBY_OP_HPP
#define GSQ_GROUPBY_OP_HPP

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "hash_table.hpp"
#include "hfta_operator.hpp"

namespace gsq {

enum class flush_policy {
    slow,     // one finished group per following input tuple (Tigon's default)
    immediate // every finished group as soon as the epoch closes
};

// Counters exposed for tests and benchmarks.
struct groupby_stats {
    uint64_t groups_created = 0; // groups inserted, over all epochs
    uint64_t groups_flushed = 0; // groups handed to F::emit (HAVING may reject)
    uint64_t late_dropped = 0;   // tuples of an epoch no longer open nor openable
    uint64_t epochs_closed = 0;  // epochs closed (by data or heartbeats)
    uint64_t heartbeats_in = 0;  // temporal updates received
    uint64_t heartbeats_out = 0; // temporal updates emitted
    uint64_t joint_heartbeats_in = 0; // joint punctuations received
    uint64_t joint_released = 0; // groups emitted early, covered by a joint punctuation
    size_t max_table_size = 0;   // most groups one epoch held
    size_t open_epochs = 0;      // epochs open now (<= max_disorder without promises)
    size_t peak_open_epochs = 0; // most epochs open at once
    size_t peak_open_groups = 0; // most groups held by the open epochs at once
                                 // (GSQ_PEAK_HELD_TUPLES); = max_table_size
                                 // when max_disorder is 1
};

// The error of an operator holding more groups than gsq_node_max_groups
// allows (groupby_op, running_op, sampling_op): the limit and where it came from.
inline std::runtime_error too_many_groups_error(uint64_t max_groups, bool given,
                                                size_t bytes_per_group)
{
    std::string why = given
        ? "the limit max_groups (--max-groups N, run(max_groups=N))"
        : "what half of this machine's memory holds at " + std::to_string(bytes_per_group) +
              " bytes a group; --max-groups N (run(max_groups=N)) sets another limit";
    return std::runtime_error("more than " + std::to_string(max_groups) +
                              " groups open at once: " + why);
}

// Heartbeat members of a group-by functor, detected at compile time.
template <class F, class = void>
struct has_heartbeat_epoch : std::false_type {};
template <class F>
struct has_heartbeat_epoch<F, std::void_t<decltype(std::declval<F &>().heartbeat_epoch(
                                  std::declval<const void *>(), std::declval<uint32_t>(),
                                  std::declval<typename F::epoch_type &>()))>> : std::true_type {};

template <class F, class = void>
struct has_epoch_heartbeat_emit : std::false_type {};
template <class F>
struct has_epoch_heartbeat_emit<F, std::void_t<decltype(std::declval<F &>().emit_heartbeat(
                                       std::declval<gsq_node *>(),
                                       std::declval<const typename F::epoch_type &>()))>> : std::true_type {};

// F::max_disorder (default 1) and F::strict_heartbeats (default false).
template <class F, class = void>
struct functor_max_disorder : std::integral_constant<unsigned, 1> {};
template <class F>
struct functor_max_disorder<F, std::void_t<decltype(F::max_disorder)>>
    : std::integral_constant<unsigned, F::max_disorder> {};

// Joint punctuation members (joint_update, joint_covers, joint_may_cover).
template <class F, class = void>
struct has_joint_punctuation : std::false_type {};
template <class F>
struct has_joint_punctuation<
    F, std::void_t<decltype(std::declval<F &>().joint_update(std::declval<const void *>(), std::declval<uint32_t>())),
                   decltype(std::declval<const F &>().joint_covers(std::declval<const typename F::key_type &>())),
                   decltype(std::declval<const F &>().joint_may_cover(
                       std::declval<const typename F::epoch_type &>()))>> : std::true_type {};

// F::ordered_output (default true).
template <class F, class = void>
struct functor_ordered_output : std::true_type {};
template <class F>
struct functor_ordered_output<F, std::void_t<decltype(F::ordered_output)>>
    : std::bool_constant<F::ordered_output> {};

template <class F, class = void>
struct functor_strict_heartbeats : std::false_type {};
template <class F>
struct functor_strict_heartbeats<F, std::void_t<decltype(F::strict_heartbeats)>>
    : std::bool_constant<F::strict_heartbeats> {};

template <class F, flush_policy Policy = flush_policy::slow>
class groupby_op {
public:
    using functor_type = F;
    using key_type = typename F::key_type;
    using state_type = typename F::state_type;
    using epoch_type = typename F::epoch_type;
    using table_type = open_hash_map<key_type, state_type, typename F::key_hash, typename F::key_eq>;

    static constexpr int n_inputs = functor_inputs<F>::value;
    static constexpr unsigned max_disorder = functor_max_disorder<F>::value;
    static constexpr bool strict_heartbeats = functor_strict_heartbeats<F>::value;
    static constexpr bool joint_punctuation = has_joint_punctuation<F>::value;
    static constexpr bool ordered_output = functor_ordered_output<F>::value;
    static_assert(n_inputs >= 1, "an operator needs at least one input");
    static_assert(max_disorder >= 1, "max_disorder: at least one epoch is open");

    explicit groupby_op(gsq_node *node)
        : functor_(node), promised_(input_keeps_promises(node)), strict_(strict_heartbeats || promised_),
          max_groups_(gsq_node_max_groups(node, bytes_per_group, &max_groups_given_)) {}
    // open_ points into the operator itself
    groupby_op(const groupby_op &) = delete;
    groupby_op &operator=(const groupby_op &) = delete;

    void accept(gsq_node *node, int input, int kind, const void *tup, uint32_t len)
    {
        eofs_.check(input, kind);
        switch (kind) {
        case GSQ_DATA:
            on_data(node, tup, len);
            break;
        case GSQ_HEARTBEAT:
            on_heartbeat(node, tup, len);
            break;
        case GSQ_JOINT_HEARTBEAT:
            on_joint_heartbeat(node, tup, len);
            break;
        case GSQ_EOF:
            if (eofs_.mark(input))
                on_end(node);
            break;
        default:
            throw protocol_error("unknown tuple kind " + std::to_string(kind));
        }
    }

    // A hint that data tuple tup will be accepted soon: the slot of its group
    // in its open epoch's table starts loading.  Changes nothing; only for
    // keys that copy without allocating.
    void prefetch(int input, const void *tup, uint32_t len)
    {
        (void)input;
        if constexpr (std::is_trivially_copyable_v<key_type>) {
            key_type k{};
            if (functor_.extract(tup, len, k))
                prefetch_slot(k, key_hash(k));
        }
    }

    // n data tuples on `input`, `stride` bytes apart: what n accept() calls
    // of GSQ_DATA do, each tuple's key extracted and hashed once and its slot
    // prefetched run_lookahead tuples ahead (prefetch() before each accept()
    // extracted and hashed every key twice, a call apart).  Keys that do not
    // copy trivially (strings) go through accept() one by one.
    void accept_run(gsq_node *node, int input, const uint8_t *first, size_t stride, uint32_t len,
                    uint32_t n)
    {
        if constexpr (!std::is_trivially_copyable_v<key_type>) {
            for (uint32_t j = 0; j < n && !gsq_node_failed(node); ++j)
                accept(node, input, GSQ_DATA, first + size_t{j} * stride, len);
        } else {
            eofs_.check(input, GSQ_DATA);
            constexpr uint32_t A = run_lookahead;
            key_type keys[A];
            uint64_t hashes[A] = {}; // read only where have[]; zeroed so that no
                                     // path reads an indeterminate value
            bool have[A] = {};
            const auto look_ahead = [&](uint32_t j) {
                const uint32_t a = j % A;
                have[a] = functor_.extract(first + size_t{j} * stride, len, keys[a]);
                if (have[a]) {
                    hashes[a] = key_hash(keys[a]);
                    prefetch_slot(keys[a], hashes[a]);
                }
            };
            for (uint32_t j = 0; j < A && j < n; ++j)
                look_ahead(j);
            for (uint32_t j = 0; j < n; ++j) {
                const uint32_t a = j % A;
                const bool have_key = have[a];
                const uint64_t h = hashes[a];
                if (have_key)
                    key_ = keys[a];
                if (j + A < n)
                    look_ahead(j + A);
                if constexpr (Policy == flush_policy::slow)
                    flush_step(node);
                if (have_key)
                    on_key(node, first + size_t{j} * stride, len, h);
                if (a == A - 1 && gsq_node_failed(node))
                    return; // as the runtime stops delivering to a failed node
            }
        }
    }

    const groupby_stats &stats() const noexcept { return stats_; }
    // Groups of the open epochs (all of them).
    size_t open_groups() const noexcept { return open_groups_; }
    // Epochs open now (0 before any epoch is known; at most max_disorder
    // unless promised()).
    size_t open_epochs() const noexcept { return n_open_; }
    // Whether the input's heartbeats are promises the run keeps (generated
    // from declared time bounds: gsq_input_heartbeats_strict): epochs then
    // close on heartbeats (and at the end) only, however many are open.
    bool promised() const noexcept { return promised_; }
    // Groups of the closed epoch not yet emitted.
    size_t flush_pending() const noexcept { return flush_remaining_; }
    // Slots allocated by every table, open and flushing (memory check:
    // bounded by max_disorder + 1 epochs' groups, or with promised() by the
    // epochs the input's promises leave open, plus one).
    size_t allocated_slots() const noexcept
    {
        size_t n = flushing_.capacity();
        for (size_t i = 0; i < n_open_; ++i)
            n += open_[i].groups.capacity();
        return n;
    }
    F &functor() noexcept { return functor_; }

private:
    // One open epoch.  A slot outside the open ones holds an unallocated
    // table.
    struct open_epoch {
        epoch_type epoch{};
        table_type groups;
    };

    static void swap_slots(open_epoch &a, open_epoch &b) noexcept
    {
        using std::swap;
        swap(a.epoch, b.epoch);
        a.groups.swap(b.groups);
    }

    // Tuples a run looks ahead of the one it accepts (accept_run).
    static constexpr uint32_t run_lookahead = 16;

    // The hash every epoch's table files key k under (one hash for all of
    // them, whatever their sizes).
    uint64_t key_hash(const key_type &k) const { return flushing_.hash_of(k); }

    // Start loading the slot of key k (hash h) in its open epoch's table.
    void prefetch_slot(const key_type &k, uint64_t h) const
    {
        const epoch_type e = functor_.epoch_of(k);
        if (n_open_ != 0 && functor_.epoch_compare(open_[n_open_ - 1].epoch, e) == 0) {
            open_[n_open_ - 1].groups.prefetch_hash(h); // the common case: the newest epoch
            return;
        }
        prefetch_older(e, h);
    }

    // prefetch_slot of an epoch other than the newest (out of line: the
    // common case stays small where it is inlined).
    [[gnu::noinline]] void prefetch_older(const epoch_type &e, uint64_t h) const
    {
        if (n_open_ < 2)
            return;
        const size_t i = first_not_older(e, n_open_ - 1);
        if (i < n_open_ - 1 && functor_.epoch_compare(open_[i].epoch, e) == 0)
            open_[i].groups.prefetch_hash(h);
    }

    // The first of the n oldest open epochs that is not older than e (n
    // when they all are): e's position among them.  A binary search over
    // the promised epochs (any number of them), from the newest otherwise
    // (at most max_disorder, a tuple is mostly of one of the newest).
    size_t first_not_older(const epoch_type &e, size_t n) const
    {
        if (promised_) {
            size_t lo = 0;
            while (lo < n) {
                const size_t mid = lo + (n - lo) / 2;
                if (functor_.epoch_compare(open_[mid].epoch, e) > 0)
                    lo = mid + 1;
                else
                    n = mid;
            }
            return lo;
        }
        while (n > 0 && functor_.epoch_compare(open_[n - 1].epoch, e) <= 0)
            --n;
        return n;
    }

    void on_data(gsq_node *node, const void *tup, uint32_t len)
    {
        if constexpr (Policy == flush_policy::slow)
            flush_step(node);

        if (!functor_.extract(tup, len, key_))
            return;
        on_key(node, tup, len, key_hash(key_));
    }

    // A data tuple whose key is in key_, h its hash.
    void on_key(gsq_node *node, const void *tup, uint32_t len, uint64_t h)
    {
        if constexpr (joint_punctuation) {
            if (functor_.joint_covers(key_)) { // its group may be out already
                ++stats_.late_dropped;
                gsq_count_late(node, 0, tup, len); // and the rows it stands for
                return;
            }
        }

        table_type *groups = route(node, functor_.epoch_of(key_));
        if (groups == nullptr) {
            ++stats_.late_dropped;
            gsq_count_late(node, 0, tup, len); // and the rows it stands for
            return;
        }

        if (groups->capacity() == 0)
            groups->reserve(epoch_size_hint()); // an epoch's first group
        auto [state, inserted] = groups->find_or_insert(key_, h);
        if (inserted) {
            if (open_groups_ >= max_groups_)
                throw too_many_groups();
            functor_.init(state, tup, len);
            ++stats_.groups_created;
            ++open_groups_;
            stats_.max_table_size = std::max(stats_.max_table_size, groups->size());
            stats_.peak_open_groups = std::max(stats_.peak_open_groups, open_groups_);
            gsq_peak(node, GSQ_PEAK_HELD_TUPLES, stats_.peak_open_groups);
        } else {
            functor_.update(state, tup, len);
        }
    }

    // The table of a data tuple's epoch e, opening (and closing) epochs as
    // the header comment says; nullptr when the tuple is late.
    table_type *route(gsq_node *node, epoch_type e)
    {
        if (n_open_ != 0) {
            open_epoch &newest = open_[n_open_ - 1];
            const int order = functor_.epoch_compare(newest.epoch, e);
            if (order == 0) // the common case: the newest epoch
                return &newest.groups;
            if constexpr (max_disorder > 1) {
                if (order < 0 && !promised_) { // then an older open one (at most K - 1)
                    for (size_t i = n_open_ - 1; i-- > 0;) {
                        const int c = functor_.epoch_compare(open_[i].epoch, e);
                        if (c == 0)
                            return &open_[i].groups;
                        if (c > 0)
                            break; // not open
                    }
                }
            }
        }
        return route_other(node, std::move(e));
    }

    // route() of an epoch other than the newest open one (out of line: once
    // an epoch in order, the common case stays small where it is inlined).
    [[gnu::noinline]] table_type *route_other(gsq_node *node, epoch_type e)
    {
        if (n_open_ == 0) {
            if (!admissible_below(e))
                return nullptr;
            return &open_at(node, 0, std::move(e));
        }
        if (functor_.epoch_compare(open_[n_open_ - 1].epoch, e) > 0)
            return &open_newest(node, std::move(e));
        if constexpr (max_disorder == 1) {
            if (!promised_)
                return nullptr;
        }
        // Older than the newest: an open epoch, a gap between two, or older
        // than them all.
        const size_t i = first_not_older(e, n_open_ - 1);
        if (i < n_open_ - 1 && functor_.epoch_compare(open_[i].epoch, e) == 0)
            return &open_[i].groups;
        if (i > 0)
            return &open_at(node, i, std::move(e));
        if ((!promised_ && n_open_ >= max_disorder) || !admissible_below(e))
            return nullptr;
        return &open_at(node, 0, std::move(e));
    }

    // The groups a new epoch's table is made for at its first group: as many
    // as the largest epoch so far, closed or open, had.  Epochs of a stream
    // tend to hold alike numbers of groups, and a table grown by doubling
    // from 16 slots moves each group ~once more (a cache miss each in a
    // table of millions); an epoch that gets no group allocates nothing.
    size_t epoch_size_hint() const noexcept
    {
        size_t n = largest_closed_;
        for (size_t i = 0; i < n_open_; ++i)
            n = std::max(n, open_[i].groups.size());
        return n;
    }

    // Whether an epoch older than every open one may still be opened: newer
    // than every closed epoch and not before the floor (a heartbeat emitted:
    // the output never contradicts it; a strict heartbeat received).
    bool admissible_below(const epoch_type &e) const
    {
        if (closed_ && functor_.epoch_compare(*closed_, e) <= 0)
            return false;
        if (floor_ && functor_.epoch_compare(*floor_, e) < 0)
            return false;
        return true;
    }

    void raise_floor(const epoch_type &e)
    {
        if (!floor_ || functor_.epoch_compare(*floor_, e) > 0)
            floor_ = e;
    }

    // Opens e, newer than every open epoch; closes the oldest when that makes
    // more than max_disorder (not with promises).
    table_type &open_newest(gsq_node *node, epoch_type e)
    {
        return open_at(node, n_open_, std::move(e));
    }

    // Opens e at position pos of the open epochs (those from pos on are newer
    // than e); when max_disorder are open already the oldest closes first
    // (not with promises: the slots grow instead).
    table_type &open_at(gsq_node *node, size_t pos, epoch_type e)
    {
        if (promised_) {
            free_slot_at(pos);
        } else {
            if (n_open_ == max_disorder) {
                close_oldest(node);
                --pos; // pos > 0 here: an epoch older than all opens only below max_disorder
            }
            for (size_t j = n_open_; j > pos; --j) // the free slot n_open_ moves to pos
                swap_slots(open_[j], open_[j - 1]);
        }
        open_[pos].epoch = std::move(e);
        ++n_open_;
        stats_.open_epochs = n_open_;
        stats_.peak_open_epochs = std::max(stats_.peak_open_epochs, n_open_);
        return open_[pos].groups;
    }

    // With promises: the open epochs are ring_[head_, head_ + n_open_), so
    // that the oldest closes and one older than all opens in O(1), as the
    // newest opens; the slots double when full (or move to the front when
    // half of them are free before the oldest).  Makes the slot at position
    // pos free (those from pos on move up by one; open_ may move).
    void free_slot_at(size_t pos)
    {
        if (head_ != 0 && pos <= n_open_ / 2) { // the free slot before the oldest moves to pos
            --head_;
            open_ = ring_.data() + head_;
            for (size_t j = 0; j < pos; ++j)
                swap_slots(open_[j], open_[j + 1]);
            return;
        }
        if (head_ + n_open_ == ring_.size()) {
            if (head_ != 0 && 2 * head_ >= ring_.size()) {
                for (size_t j = 0; j < n_open_; ++j) // shifts them down by head_
                    swap_slots(ring_[j], ring_[head_ + j]);
                head_ = 0;
            } else {
                ring_.resize(std::max<size_t>(2 * ring_.size(), 2 * max_disorder + 2));
            }
            open_ = ring_.data() + head_;
        }
        for (size_t j = n_open_; j > pos; --j) // the free slot after the newest moves to pos
            swap_slots(open_[j], open_[j - 1]);
    }

    // The oldest open epoch closes: its table becomes the flushing table (a
    // flush still running completes first).
    void close_oldest(gsq_node *node)
    {
        finish_flush(node); // the epoch closed before goes out for good
        open_epoch &oldest = open_[0];
        closed_ = std::move(oldest.epoch);
        oldest.groups.swap(flushing_); // flushing_ was released: the slot's table starts unallocated
        if (promised_) {
            if (--n_open_ == 0)
                head_ = 0;
            else
                ++head_;
            open_ = ring_.data() + head_;
        } else {
            for (size_t j = 0; j + 1 < n_open_; ++j)
                swap_slots(open_[j], open_[j + 1]);
            --n_open_;
        }
        stats_.open_epochs = n_open_;
        open_groups_ -= flushing_.size();
        largest_closed_ = std::max(largest_closed_, flushing_.size());
        flush_pos_ = 0;
        flush_remaining_ = flushing_.size();
        ++stats_.epochs_closed;
        if (flush_remaining_ == 0)
            flushing_.release();
        else if constexpr (Policy == flush_policy::immediate)
            finish_flush(node);
    }

    // A heartbeat announcing epoch h: progress, like a tuple of epoch h that
    // folds nothing; a strict one also closes every open epoch before h.
    void advance_to(gsq_node *node, epoch_type h)
    {
        if (n_open_ == 0) {
            if (admissible_below(h))
                open_at(node, 0, h);
        } else if (functor_.epoch_compare(open_[n_open_ - 1].epoch, h) > 0) {
            open_newest(node, h); // h may still be needed below
        }
        if (strict_) {
            raise_floor(h);
            while (n_open_ != 0 && functor_.epoch_compare(open_[0].epoch, h) > 0)
                close_oldest(node);
            // Every open epoch is now h or newer: h, if not open, becomes the
            // oldest open epoch while there is room (so the heartbeat this
            // operator emits is h, not a newer epoch).
            if (n_open_ != 0 && (promised_ || n_open_ < max_disorder) &&
                functor_.epoch_compare(open_[0].epoch, h) < 0 && admissible_below(h))
                open_at(node, 0, std::move(h));
        }
    }

    void on_heartbeat(gsq_node *node, const void *tup, uint32_t len)
    {
        ++stats_.heartbeats_in;
        if constexpr (Policy == flush_policy::slow)
            flush_step(node);

        if constexpr (has_heartbeat_epoch<F>::value) {
            if (tup != nullptr) {
                epoch_type e{};
                if (functor_.heartbeat_epoch(tup, len, e)) {
                    if (promised_ && announces_nothing(e, len))
                        demote(node);
                    if (max_disorder > 1 || promised_) {
                        if (!h_in_ || functor_.epoch_compare(*h_in_, e) > 0)
                            h_in_ = e;
                    }
                    advance_to(node, std::move(e));
                }
            }
        }

        if constexpr (has_epoch_heartbeat_emit<F>::value) {
            const epoch_type *out = nullptr;
            if (flush_remaining_ != 0) {
                out = &*closed_; // the "last flushed" rule
            } else if (n_open_ != 0) {
                out = &open_[0].epoch;
                // While fewer than K are open (with promises: always) an
                // older epoch may still open: no lower than max(h_in_,
                // closed_), when known -- and with promises nothing before
                // either is known.
                if (promised_ || (max_disorder > 1 && n_open_ < max_disorder)) {
                    const epoch_type *low = h_in_ ? &*h_in_ : nullptr;
                    if (closed_ && (!low || functor_.epoch_compare(*low, *closed_) > 0))
                        low = &*closed_;
                    if (low && functor_.epoch_compare(*low, *out) > 0)
                        out = low;
                    else if (!low && promised_)
                        out = nullptr;
                }
            }
            if (out == nullptr)
                return;
            if (hb_out_ && functor_.epoch_compare(*hb_out_, *out) < 0)
                out = &*hb_out_; // never backwards
            else
                hb_out_ = *out;
            if (max_disorder > 1 || promised_)
                raise_floor(*hb_out_);
            ++stats_.heartbeats_out;
            functor_.emit_heartbeat(node, *hb_out_);
        }
    }

    // With promises: whether heartbeat epoch e is what a heartbeat whose
    // bytes are all zero announces (a merge's heartbeat sets only its merge
    // column, the rest zero) while the data has opened a later epoch: the
    // input's promises then bound another column than this operator's epoch.
    bool announces_nothing(const epoch_type &e, uint32_t len)
    {
        if (n_open_ == 0 || functor_.epoch_compare(e, open_[n_open_ - 1].epoch) <= 0)
            return false;
        return zero_hb_.announced(functor_, e, len);
    }

    // Back to the K rule for good (the promises say nothing of the epochs:
    // announces_nothing): past K open, the oldest close; the rest move to
    // the fixed slots.
    void demote(gsq_node *node)
    {
        while (n_open_ > max_disorder)
            close_oldest(node);
        for (size_t i = 0; i < n_open_; ++i)
            swap_slots(fixed_[i], open_[i]);
        promised_ = false;
        strict_ = strict_heartbeats;
        head_ = 0;
        std::vector<open_epoch>().swap(ring_);
        open_ = fixed_.data();
    }

    // A joint punctuation: groups it covers go out now (see "Joint
    // punctuation" in the header comment).
    void on_joint_heartbeat(gsq_node *node, const void *tup, uint32_t len)
    {
        ++stats_.joint_heartbeats_in;
        if constexpr (Policy == flush_policy::slow)
            flush_step(node);
        if constexpr (joint_punctuation) {
            if (tup == nullptr || !functor_.joint_update(tup, len))
                return;
            size_t eligible = n_open_;
            if constexpr (ordered_output) {
                // Only the oldest open epoch, and only once no older epoch
                // can open: its groups may then leave in any order.
                eligible = n_open_ != 0 && older_epochs_closed() ? 1 : 0;
            }
            bool flushed = false;
            for (size_t i = 0; i < eligible; ++i) {
                if (!functor_.joint_may_cover(open_[i].epoch))
                    continue;
                if (!flushed) { // the closed epoch's groups come first
                    finish_flush(node);
                    flushed = true;
                }
                const size_t n = open_[i].groups.erase_if(
                    [this](const key_type &k, const state_type &) { return functor_.joint_covers(k); },
                    [this, node](const key_type &k, const state_type &v) {
                        ++stats_.groups_flushed;
                        functor_.emit(node, k, v);
                    });
                open_groups_ -= n;
                stats_.joint_released += n;
            }
        }
    }

    // No epoch older than the oldest open one can open any more: all
    // max_disorder are open (an older tuple is late; not with promises), or
    // the floor (a heartbeat received or emitted) is at the oldest open
    // epoch.
    bool older_epochs_closed() const
    {
        if (!promised_ && n_open_ == max_disorder)
            return true;
        return floor_ && functor_.epoch_compare(open_[0].epoch, *floor_) >= 0;
    }

    // Emits the next group of the flushing table, if any.
    void flush_step(gsq_node *node)
    {
        if (flush_remaining_ == 0)
            return;
        const size_t pos = flushing_.next_occupied(flush_pos_);
        flush_pos_ = pos + 1;
        --flush_remaining_;
        ++stats_.groups_flushed;
        functor_.emit(node, flushing_.key_at(pos), flushing_.value_at(pos));
        if (flush_remaining_ == 0) {
            flushing_.release();
            flush_pos_ = 0;
        }
    }

    void finish_flush(gsq_node *node)
    {
        while (flush_remaining_ != 0)
            flush_step(node);
    }

    void on_end(gsq_node *node)
    {
        finish_flush(node);
        for (size_t i = 0; i < n_open_; ++i) { // oldest first
            for (auto entry : open_[i].groups) {
                ++stats_.groups_flushed;
                functor_.emit(node, entry.key, entry.value);
            }
            open_[i].groups.release();
        }
        n_open_ = 0;
        if (promised_) {
            head_ = 0;
            std::vector<open_epoch>().swap(ring_);
            open_ = ring_.data();
        }
        open_groups_ = 0;
        stats_.open_epochs = 0;
        emit_eof(node);
    }

    // gsq_input_heartbeats_strict of the only input (an operator of several
    // inputs takes no promise: a heartbeat of one says nothing of the
    // others; nor one whose functor cannot read heartbeats)
    static bool input_keeps_promises(gsq_node *node)
    {
        if constexpr (n_inputs == 1 && has_heartbeat_epoch<F>::value) {
            return gsq_input_heartbeats_strict(node, 0) != 0;
        } else {
            (void)node;
            return false;
        }
    }

    F functor_;
    // The input's heartbeats are promises the run keeps (Srivastava & Widom 2004: generated
    // from declared time bounds, through merges; gsq_input_heartbeats_strict):
    // epochs close on heartbeats and at the end only, as many open as the
    // input's data opens (ring_).  Initialised after functor_.
    bool promised_;
    // Heartbeats close every older epoch: F::strict_heartbeats (the plan's:
    // an HFTA's output), or promised_.
    bool strict_;
    input_eofs eofs_{n_inputs};
    std::array<open_epoch, max_disorder> fixed_; // the slots without promises
    std::vector<open_epoch> ring_; // the slots with promises (free_slot_at)
    size_t head_ = 0;              // with promises: the oldest open epoch's slot in ring_
    open_epoch *open_ = fixed_.data(); // the open epochs, oldest first: fixed_ or
                                       // ring_ from head_ (moves with them)
    size_t n_open_ = 0;
    size_t open_groups_ = 0;     // groups in the open epochs' tables
    size_t largest_closed_ = 0;  // most groups a closed epoch had (epoch_size_hint)
    // a group's share of the tables: its slot (hash, key, state) at most
    // 1/0.7 times over, and the old array beside the new one while growing
    static constexpr size_t bytes_per_group = 3 * (8 + sizeof(key_type) + sizeof(state_type));
    int max_groups_given_ = 0;
    uint64_t max_groups_;        // gsq_node_max_groups: open_groups_ stays at or below it

    std::runtime_error too_many_groups() const
    {
        return too_many_groups_error(max_groups_, max_groups_given_ != 0, bytes_per_group);
    }
    table_type flushing_;        // the closed epoch, emitted by the slow flush
    size_t flush_pos_ = 0;       // next slot of flushing_ to look at
    size_t flush_remaining_ = 0; // groups of flushing_ not yet emitted
    std::optional<epoch_type> closed_; // the newest epoch closed (flushing_'s)
    std::optional<epoch_type> hb_out_; // the last heartbeat emitted
    std::optional<epoch_type> h_in_;   // K > 1: the latest epoch an input
                                       // heartbeat announced
    zero_heartbeat<F, epoch_type> zero_hb_; // announces_nothing
    std::optional<epoch_type> floor_;  // no epoch before it opens (K > 1: the
                                       // last heartbeat emitted; strict: the
                                       // latest heartbeat received too)
    key_type key_{}; // scratch key, reused so extract recycles its buffers
    groupby_stats stats_;
};

} // namespace gsq

#endif // GSQ_GROUPBY_OP_HPP
