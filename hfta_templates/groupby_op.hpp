// groupby_op.hpp -- gsq::groupby_op<F>: the HFTA aggregation operator, with
// epochs defined by the temporal group-by columns and a slow flush.
//
// Behaviour.  The groups of the current epoch live in an open_hash_map.  When
// a tuple of a later epoch arrives the epoch closes: its table becomes the
// flushing table (an O(1) swap) and a fresh, unallocated table takes the new
// epoch.  With the slow flush (the default) every later input data tuple,
// before it is processed, emits one group of the flushing table, in slot
// order, so the output of a closed epoch is spread over the following input
// instead of arriving as one burst.  If the epoch changes again before the
// flush is done, the remaining old groups are emitted at once.  A flushing
// table frees its memory as soon as its last group is out, so memory is
// bounded by the two most recent epochs.  A tuple of an epoch older than the
// current one is dropped and counted (GSQ_CNT_LATE_DROPPED).  When every
// input has ended: the flushing table, then every current group, then GSQ_EOF.
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
//       > 0: e is a later epoch (the current one closes); 0: same epoch;
//       < 0: e is older than the current epoch (a late tuple, dropped).
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
// Heartbeats (seed 000 4.4 / 5.3).  On a GSQ_HEARTBEAT on any input:
//   1. like a data tuple it advances the slow flush by one group (whether or
//      not the functor knows heartbeats: a stalled input still drains);
//   2. if F has heartbeat_epoch and it returns true with e: when there is no
//      current epoch yet, e becomes it; when e is later than the current epoch
//      (epoch_compare > 0) the current epoch closes exactly as if a tuple of
//      epoch e had arrived (its slow flush starts; a flush still running
//      completes first) and e becomes the current epoch -- nothing is
//      inserted.  Later data tuples of an epoch before e are late (dropped);
//   3. if F has emit_heartbeat, the operator emits its own heartbeat with
//        - while groups of a closed epoch remain unflushed: that (flushing)
//          epoch -- the "last flushed" rule, since those groups are still to
//          come out;
//        - otherwise the latest epoch known: the current epoch, which after
//          step 2 is the max of the epoch seen in data and the heartbeat's;
//      and never an epoch lower than one emitted before (the previous one is
//      repeated instead).  Nothing is emitted before any epoch is known.
// A heartbeat without bytes (tup == NULL) only does step 1 and step 3.
// Data tuples never trigger a heartbeat.
#ifndef GSQ_GROUPBY_OP_HPP
#define GSQ_GROUPBY_OP_HPP

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

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
    uint64_t late_dropped = 0;   // tuples of an epoch older than the current one
    uint64_t epochs_closed = 0;  // epoch changes seen (by data or heartbeats)
    uint64_t heartbeats_in = 0;  // temporal updates received
    uint64_t heartbeats_out = 0; // temporal updates emitted
    size_t max_table_size = 0;   // most groups one epoch held
};

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

template <class F, flush_policy Policy = flush_policy::slow>
class groupby_op {
public:
    using functor_type = F;
    using key_type = typename F::key_type;
    using state_type = typename F::state_type;
    using epoch_type = typename F::epoch_type;
    using table_type = open_hash_map<key_type, state_type, typename F::key_hash, typename F::key_eq>;

    static constexpr int n_inputs = functor_inputs<F>::value;
    static_assert(n_inputs >= 1, "an operator needs at least one input");

    explicit groupby_op(gsq_node *node) : functor_(node) {}

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
        case GSQ_EOF:
            if (eofs_.mark(input))
                on_end(node);
            break;
        default:
            throw protocol_error("unknown tuple kind " + std::to_string(kind));
        }
    }

    const groupby_stats &stats() const noexcept { return stats_; }
    // Groups of the current epoch.
    size_t open_groups() const noexcept { return groups_.size(); }
    // Groups of the closed epoch not yet emitted.
    size_t flush_pending() const noexcept { return flush_remaining_; }
    // Slots allocated by both tables (memory check: bounded across epochs).
    size_t allocated_slots() const noexcept { return groups_.capacity() + flushing_.capacity(); }
    F &functor() noexcept { return functor_; }

private:
    void on_data(gsq_node *node, const void *tup, uint32_t len)
    {
        if constexpr (Policy == flush_policy::slow)
            flush_step(node);

        if (!functor_.extract(tup, len, key_))
            return;

        epoch_type epoch = functor_.epoch_of(key_);
        if (!epoch_) {
            epoch_ = std::move(epoch);
        } else {
            const int order = functor_.epoch_compare(*epoch_, epoch);
            if (order < 0) {
                ++stats_.late_dropped;
                gsq_count(node, GSQ_CNT_LATE_DROPPED, 1);
                return;
            }
            if (order > 0)
                close_epoch(node, std::move(epoch));
        }

        auto [state, inserted] = groups_.find_or_insert(key_);
        if (inserted) {
            functor_.init(state, tup, len);
            ++stats_.groups_created;
            stats_.max_table_size = std::max(stats_.max_table_size, groups_.size());
            gsq_peak(node, GSQ_PEAK_HELD_TUPLES, stats_.max_table_size);
        } else {
            functor_.update(state, tup, len);
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
                    if (!epoch_)
                        epoch_ = std::move(e);
                    else if (functor_.epoch_compare(*epoch_, e) > 0)
                        close_epoch(node, std::move(e));
                }
            }
        }

        if constexpr (has_epoch_heartbeat_emit<F>::value) {
            const epoch_type *out = nullptr;
            if (flush_remaining_ != 0)
                out = &*flushing_epoch_; // the "last flushed" rule
            else if (epoch_)
                out = &*epoch_;
            if (out == nullptr)
                return;
            if (hb_out_ && functor_.epoch_compare(*hb_out_, *out) < 0)
                out = &*hb_out_; // never backwards
            else
                hb_out_ = *out;
            ++stats_.heartbeats_out;
            functor_.emit_heartbeat(node, *hb_out_);
        }
    }

    // The current epoch closes; `next` becomes the current one.
    void close_epoch(gsq_node *node, epoch_type next)
    {
        finish_flush(node); // the epoch before closes for good
        flushing_epoch_ = std::move(epoch_);
        epoch_ = std::move(next);
        groups_.swap(flushing_); // flushing_ was released: groups_ starts unallocated
        flush_pos_ = 0;
        flush_remaining_ = flushing_.size();
        ++stats_.epochs_closed;
        if (flush_remaining_ == 0)
            flushing_.release();
        else if constexpr (Policy == flush_policy::immediate)
            finish_flush(node);
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
        for (auto entry : groups_) {
            ++stats_.groups_flushed;
            functor_.emit(node, entry.key, entry.value);
        }
        groups_.release();
        epoch_.reset();
        emit_eof(node);
    }

    F functor_;
    input_eofs eofs_{n_inputs};
    table_type groups_;   // the current epoch
    table_type flushing_; // the closed epoch, emitted by the slow flush
    size_t flush_pos_ = 0;       // next slot of flushing_ to look at
    size_t flush_remaining_ = 0; // groups of flushing_ not yet emitted
    std::optional<epoch_type> epoch_;          // the current epoch
    std::optional<epoch_type> flushing_epoch_; // the epoch of flushing_
    std::optional<epoch_type> hb_out_;         // the last heartbeat emitted
    key_type key_{}; // scratch key, reused so extract recycles its buffers
    groupby_stats stats_;
};

} // namespace gsq

#endif // GSQ_GROUPBY_OP_HPP
