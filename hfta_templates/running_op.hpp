// running_op.hpp -- gsq::running_op<F>: a running aggregation (GSQL's
// CLOSING_WHEN; Tigon SQL User Manual 6.2.12, TigonSQL's architecture): groups whose state
// lives across epochs.
//
// Behaviour.  The input arrives in order of its epochs (the planner makes
// the LFTA hand an epoch on whole); one epoch is current and its groups live
// in an open_hash_map.  A data tuple of the current epoch folds into its
// group; one of a later epoch first ends the current one; one of an older
// epoch is late (dropped, counted: GSQ_CNT_LATE_DROPPED).  Ending an epoch,
// for every group in slot order:
//   1. emit (HAVING decides whether a tuple goes out);
//   2. if CLOSING_WHEN holds the group is discarded (its state destroyed:
//      user aggregates' DESTROY_);
//   3. otherwise it is carried into the new epoch: its temporal group-by
//      values become the new epoch's, its regular aggregates are empty again
//      and its RUNNING user aggregates are told (REINIT_).
// So every live group reports once per epoch, also in an epoch in which it
// saw no tuple (a continuous query), and a group discarded by CLOSING_WHEN
// starts anew with its next tuple.  A heartbeat of a later epoch ends the
// current one the same way (an idle input still reports); the operator's own
// heartbeat is the current epoch.  At the end of the input the current
// epoch's groups are emitted (none carried), then GSQ_EOF.
//
// Promised input (Srivastava & Widom 2004; groupby_op.hpp's "Promised input"): when the
// run keeps the input's heartbeats as promises (gsq_input_heartbeats_strict:
// heartbeats generated from declared time bounds, from an LFTA or through
// merges), the input may be disordered by as much as the declared bounds
// allow, and a data tuple of a later epoch does not end the current one.
// Such a tuple is held instead (an owned copy, in its epoch's list, the
// epochs kept sorted); a heartbeat h then says the epochs before h are
// complete: the held epochs before h are taken oldest first, each ending
// the current one as above and then folding its tuples in arrival order,
// and h ends the current epoch if it is later (and takes its own held
// tuples).  A tuple of the current epoch folds at once; one of an epoch
// before it is late (only a tuple that broke a promise can be).  Before the
// first heartbeat every tuple is held; at the end every held epoch is taken
// in order, then the end as above.  So the groups, the reports and the
// carrying are exactly those of the same input sorted by epoch (arrival
// order within an epoch), the output is in epoch order, the heartbeat out
// is the current epoch (nothing before the first heartbeat in), and memory
// is the groups plus the tuples of the epochs the promises leave open.  A
// heartbeat that announces what one of zeros does while the data has a
// later epoch (a merge's heartbeat, the epoch over another column than the
// merge's) promises nothing here: every held epoch is taken in order and
// the operator goes back to in order for good (promised() false).
//
// Functor interface (F): groupby_op's (key_type, state_type, epoch_type,
// key_hash, key_eq, extract, epoch_of, epoch_compare, init, update, emit,
// heartbeat_epoch, emit_heartbeat), and:
//
//   bool closing(const key_type &key, const state_type &state) const;
//       CLOSING_WHEN over the group as it ends its epoch.
//   void carry(key_type &key, state_type &state, const epoch_type &e);
//       The group into epoch e: temporal keys from e, regular aggregates
//       emptied, running ones REINIT_.  update() then sees its first tuple
//       of e (the state remembers it is fresh).
#ifndef GSQ_RUNNING_OP_HPP
#define GSQ_RUNNING_OP_HPP

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "groupby_op.hpp"
#include "hash_table.hpp"
#include "hfta_operator.hpp"

namespace gsq {

template <class F>
class running_op {
public:
    using functor_type = F;
    using key_type = typename F::key_type;
    using state_type = typename F::state_type;
    using epoch_type = typename F::epoch_type;
    using table_type = open_hash_map<key_type, state_type, typename F::key_hash, typename F::key_eq>;
    static constexpr int n_inputs = 1;
    static_assert(functor_inputs<F>::value == 1, "running_op has exactly one input");

    explicit running_op(gsq_node *node)
        : functor_(node), promised_(input_keeps_promises(node)),
          max_groups_(gsq_node_max_groups(node, bytes_per_group, &max_groups_given_))
    {
    }

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
        case GSQ_JOINT_HEARTBEAT: // bounds two columns together: nothing to end here
            break;
        case GSQ_EOF:
            if (eofs_.mark(input)) {
                take_held(node, nullptr); // every held epoch, in order
                for (size_t i = groups_.next_occupied(0); i < groups_.capacity();
                     i = groups_.next_occupied(i + 1))
                    functor_.emit(node, groups_.key_at(i), groups_.value_at(i));
                groups_.clear();
                emit_eof(node);
            }
            break;
        default:
            throw protocol_error("unknown tuple kind " + std::to_string(kind));
        }
    }

    F &functor() noexcept { return functor_; }
    // Whether the input's heartbeats are promises the run keeps (above).
    bool promised() const noexcept { return promised_; }
    // Data tuples held for epochs after the current one (promised input).
    size_t held_tuples() const noexcept { return held_tuples_; }

private:
    // A later epoch's tuples, held until a promise completes the epochs
    // before it (promised input).
    struct held_epoch {
        epoch_type epoch;
        std::vector<tuple_copy> tuples; // arrival order
    };

    static bool input_keeps_promises(gsq_node *node)
    {
        if constexpr (has_heartbeat_epoch<F>::value) {
            return gsq_input_heartbeats_strict(node, 0) != 0;
        } else {
            (void)node;
            return false;
        }
    }

    void on_data(gsq_node *node, const void *tup, uint32_t len)
    {
        if (!functor_.extract(tup, len, key_))
            return;
        const epoch_type e = functor_.epoch_of(key_);
        if (promised_) {
            const int c = current_ ? functor_.epoch_compare(*current_, e) : 1;
            if (c < 0) {
                gsq_count_late(node, 0, tup, len); // and the rows it stands for
                return;
            }
            if (c > 0) { // a later epoch (or none is current yet): held
                hold(node, e, tup, len);
                return;
            }
            fold(tup, len, node);
            return;
        }
        if (!current_) {
            current_ = e;
        } else {
            const int c = functor_.epoch_compare(*current_, e);
            if (c < 0) {
                gsq_count_late(node, 0, tup, len); // and the rows it stands for
                return;
            }
            if (c > 0)
                end_epoch(node, e);
        }
        fold(tup, len, node);
    }

    // The tuple whose key is in key_ into its group of the current epoch.
    void fold(const void *tup, uint32_t len, gsq_node *node)
    {
        auto [state, inserted] = groups_.find_or_insert(key_);
        if (inserted) {
            if (groups_.size() > max_groups_)
                throw too_many_groups();
            functor_.init(state, tup, len);
            gsq_peak(node, GSQ_PEAK_HELD_TUPLES, groups_.size());
        } else {
            functor_.update(state, tup, len);
        }
    }

    // Holds a copy of the tuple in epoch e's list (e after the current one).
    void hold(gsq_node *node, const epoch_type &e, const void *tup, uint32_t len)
    {
        // the held epochs are sorted, oldest first; a tuple is mostly of the
        // newest one
        size_t i = held_.size();
        while (i > 0 && functor_.epoch_compare(held_[i - 1].epoch, e) < 0)
            --i;
        if (i == 0 || functor_.epoch_compare(held_[i - 1].epoch, e) != 0)
            held_.insert(held_.begin() + static_cast<std::ptrdiff_t>(i), held_epoch{e, {}});
        else
            --i;
        held_[i].tuples.emplace_back(tup, len);
        ++held_tuples_;
        held_bytes_ += len;
        gsq_peak(node, GSQ_PEAK_HELD_TUPLES, groups_.size() + held_tuples_);
        gsq_peak(node, GSQ_PEAK_HELD_BYTES, held_bytes_);
    }

    // Takes the held epochs before h (all of them when h is null), oldest
    // first: each ends the current epoch and folds its tuples.
    void take_held(gsq_node *node, const epoch_type *h)
    {
        size_t k = 0;
        for (; k < held_.size(); ++k) {
            held_epoch &he = held_[k];
            if (h && functor_.epoch_compare(he.epoch, *h) <= 0)
                break; // he is h or later
            become_current(node, he.epoch);
            replay(node, he);
        }
        held_.erase(held_.begin(), held_.begin() + static_cast<std::ptrdiff_t>(k));
    }

    void become_current(gsq_node *node, const epoch_type &e)
    {
        if (!current_)
            current_ = e;
        else if (functor_.epoch_compare(*current_, e) > 0)
            end_epoch(node, e);
    }

    void replay(gsq_node *node, held_epoch &he)
    {
        for (const tuple_copy &t : he.tuples) {
            if (functor_.extract(t.data(), t.size(), key_)) // it did when held
                fold(t.data(), t.size(), node);
        }
        held_tuples_ -= he.tuples.size();
        for (const tuple_copy &t : he.tuples)
            held_bytes_ -= t.size();
        he.tuples.clear();
    }

    void on_heartbeat(gsq_node *node, const void *tup, uint32_t len)
    {
        if constexpr (has_heartbeat_epoch<F>::value) {
            epoch_type e{};
            if (tup != nullptr && functor_.heartbeat_epoch(tup, len, e)) {
                if (promised_ && announces_nothing(e, len)) {
                    take_held(node, nullptr); // back to in order, for good
                    promised_ = false;
                }
                if (promised_)
                    take_held(node, &e); // the epochs before e are complete
                become_current(node, e);
                if (promised_ && !held_.empty() &&
                    functor_.epoch_compare(held_.front().epoch, *current_) == 0) {
                    replay(node, held_.front()); // e's own tuples so far
                    held_.erase(held_.begin());
                }
            }
        }
        if constexpr (has_epoch_heartbeat_emit<F>::value) {
            if (current_)
                functor_.emit_heartbeat(node, *current_);
        }
    }

    // Promised input: whether heartbeat epoch e is what a heartbeat of zeros
    // announces (a merge's heartbeat sets only its merge column) while the
    // data has a later epoch: the promises bound another column than the
    // epoch's (groupby_op.hpp, "Promised input").
    bool announces_nothing(const epoch_type &e, uint32_t len)
    {
        const bool later = (current_ && functor_.epoch_compare(e, *current_) > 0) ||
                           (!held_.empty() && functor_.epoch_compare(e, held_.back().epoch) > 0);
        if (!later)
            return false;
        return zero_hb_.announced(functor_, e, len);
    }

    // The current epoch ends and e begins: every group out, then discarded
    // or carried into e.
    void end_epoch(gsq_node *node, const epoch_type &e)
    {
        table_type next;
        for (size_t i = groups_.next_occupied(0); i < groups_.capacity();
             i = groups_.next_occupied(i + 1)) {
            const key_type &k = groups_.key_at(i);
            state_type &s = groups_.value_at(i);
            functor_.emit(node, k, s);
            if (functor_.closing(k, s))
                continue; // destroyed with the old table
            key_type carried = k;
            functor_.carry(carried, s, e);
            auto [slot, inserted] = next.find_or_insert(std::move(carried));
            (void)inserted; // the keys differ in their non-temporal part
            slot = std::move(s);
        }
        groups_ = std::move(next);
        current_ = e;
    }

    std::runtime_error too_many_groups() const
    {
        return too_many_groups_error(max_groups_, max_groups_given_ != 0, bytes_per_group);
    }

    F functor_;
    // The input's heartbeats are promises the run keeps (gsq_input_heartbeats_strict):
    // later epochs' tuples are held until a heartbeat (above).  Initialised
    // after functor_.
    bool promised_;
    input_eofs eofs_{n_inputs};
    table_type groups_;                // the current epoch's groups
    std::optional<epoch_type> current_;
    std::vector<held_epoch> held_;     // promised input: later epochs' tuples, oldest first
    size_t held_tuples_ = 0;
    size_t held_bytes_ = 0;
    zero_heartbeat<F, epoch_type> zero_hb_; // announces_nothing
    key_type key_{};                   // scratch key, reused by extract
    static constexpr size_t bytes_per_group = 3 * (8 + sizeof(key_type) + sizeof(state_type));
    int max_groups_given_ = 0;
    uint64_t max_groups_;
};

} // namespace gsq

#endif // GSQ_RUNNING_OP_HPP
