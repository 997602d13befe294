// running_op.hpp -- gsq::running_op<F>: a running aggregation (GSQL's
// CLOSING_WHEN; Tigon SQL User Manual 6.2.12, seed 003): groups whose state
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

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

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
        : functor_(node), max_groups_(gsq_node_max_groups(node, bytes_per_group, &max_groups_given_))
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

private:
    void on_data(gsq_node *node, const void *tup, uint32_t len)
    {
        if (!functor_.extract(tup, len, key_))
            return;
        const epoch_type e = functor_.epoch_of(key_);
        if (!current_) {
            current_ = e;
        } else {
            const int c = functor_.epoch_compare(*current_, e);
            if (c < 0) {
                gsq_count(node, GSQ_CNT_LATE_DROPPED, 1);
                return;
            }
            if (c > 0)
                end_epoch(node, e);
        }
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

    void on_heartbeat(gsq_node *node, const void *tup, uint32_t len)
    {
        if constexpr (has_heartbeat_epoch<F>::value) {
            epoch_type e{};
            if (tup != nullptr && functor_.heartbeat_epoch(tup, len, e)) {
                if (!current_)
                    current_ = e;
                else if (functor_.epoch_compare(*current_, e) > 0)
                    end_epoch(node, e);
            }
        }
        if constexpr (has_epoch_heartbeat_emit<F>::value) {
            if (current_)
                functor_.emit_heartbeat(node, *current_);
        }
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
    input_eofs eofs_{n_inputs};
    table_type groups_;                // the current epoch's groups
    std::optional<epoch_type> current_;
    key_type key_{};                   // scratch key, reused by extract
    static constexpr size_t bytes_per_group = 3 * (8 + sizeof(key_type) + sizeof(state_type));
    int max_groups_given_ = 0;
    uint64_t max_groups_;
};

} // namespace gsq

#endif // GSQ_RUNNING_OP_HPP
