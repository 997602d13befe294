// sampling_op.hpp -- gsq::sampling_op<F>: a sampling query (Tigon SQL User
// Manual 6.2.13: SUPERGROUP, super-aggregates f$(...), CLEANING_WHEN and
// CLEANING_BY, stateful functions).
//
// Behaviour.  The input arrives in order of its epochs (sampling windows);
// one window is current.  Its groups live in one open_hash_map, and each
// group belongs to a supergroup -- the values of the SUPERGROUP variables
// (default: none, one supergroup per window) -- holding the super-aggregates
// and the states of the stateful functions.  A data tuple (its group-by
// values computed first):
//   1. finds or creates its supergroup; a new one starts its states from the
//      same supergroup of the previous window if there was one (Tigon's
//      dirty init), else from nothing (clean init);
//   2. WHERE, which may call stateful functions: false drops the tuple;
//   3. updates the supergroup's super-aggregates, then finds or creates its
//      group and updates the group's aggregates;
//   4. CLEANING_WHEN: if it holds, CLEANING_BY is evaluated on every group of
//      the supergroup and a group for which it is false is removed: as in
//      Tigon's clean operator its part leaves the super-aggregates (count$
//      and sum$ lose its count and sum, min$ and max$ are kept) and the
//      supergroup's count of groups, count_distinct$(), drops.
// A tuple of a later window ends the current one: every supergroup's states
// are told (final init), then every group is output if HAVING holds; the
// window's supergroups are kept for the next window's dirty inits.  A tuple
// of an older window is late (dropped, counted).  At the end of the input
// the current window ends the same way, then GSQ_EOF.
//
// Functor interface (F):
//   key_type, state_type, epoch_type, key_hash, key_eq   as in groupby_op
//   sg_key_type, sg_type, sg_hash, sg_eq                  the supergroup's;
//       sg_type has a member `uint64_t n_groups` (the operator keeps it),
//       is default-constructible and movable
//   bool keys(const void *tup, uint32_t len, key_type &key);
//       The group-by values (no WHERE); false: the tuple has none.
//   epoch_type epoch_of(const key_type &) const;
//   int epoch_compare(const epoch_type &cur, const epoch_type &e) const;
//   sg_key_type sg_key(const key_type &) const;
//   void sg_start(sg_type &sg, const sg_type *previous);
//   bool where(const void *tup, uint32_t len, sg_type &sg);
//   void sg_update(sg_type &sg, const void *tup, uint32_t len);
//   void init(state_type &, const void *tup, uint32_t len, sg_type &sg);
//   void update(state_type &, const void *tup, uint32_t len, sg_type &sg);
//   bool cleaning_when(const key_type &, const state_type &, sg_type &sg);
//       (the group of the tuple just counted)
//   bool cleaning_by(const key_type &, const state_type &, sg_type &sg);
//   void sg_remove(sg_type &sg, const state_type &);
//       (a group CLEANING_BY removed: its part leaves the super-aggregates)
//   void sg_final(sg_type &sg);
//   void emit(gsq_node *, const key_type &, const state_type &, sg_type &sg);
//   heartbeat_epoch / emit_heartbeat (optional)          as in groupby_op
#ifndef GSQ_SAMPLING_OP_HPP
#define GSQ_SAMPLING_OP_HPP

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
class sampling_op {
public:
    using functor_type = F;
    using key_type = typename F::key_type;
    using state_type = typename F::state_type;
    using epoch_type = typename F::epoch_type;
    using sg_key_type = typename F::sg_key_type;
    using sg_type = typename F::sg_type;
    using table_type = open_hash_map<key_type, state_type, typename F::key_hash, typename F::key_eq>;
    using sg_table_type = open_hash_map<sg_key_type, sg_type, typename F::sg_hash, typename F::sg_eq>;
    static constexpr int n_inputs = 1;
    static_assert(functor_inputs<F>::value == 1, "sampling_op has exactly one input");

    explicit sampling_op(gsq_node *node)
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
        case GSQ_JOINT_HEARTBEAT:
            break;
        case GSQ_EOF:
            if (eofs_.mark(input)) {
                end_window(node);
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
        if (!functor_.keys(tup, len, key_))
            return;
        const epoch_type e = functor_.epoch_of(key_);
        if (!current_) {
            current_ = e;
        } else {
            const int c = functor_.epoch_compare(*current_, e);
            if (c < 0) {
                gsq_count_late(node, 0, tup, len); // and the rows it stands for
                return;
            }
            if (c > 0) {
                end_window(node);
                current_ = e;
            }
        }
        const sg_key_type sgk = functor_.sg_key(key_);
        auto [sg, new_sg] = supergroups_.find_or_insert(sgk);
        if (new_sg)
            functor_.sg_start(sg, previous_.find(sgk));
        if (!functor_.where(tup, len, sg))
            return;
        functor_.sg_update(sg, tup, len);
        auto [state, inserted] = groups_.find_or_insert(key_);
        if (inserted) {
            if (groups_.size() > max_groups_)
                throw too_many_groups();
            ++sg.n_groups;
            functor_.init(state, tup, len, sg);
            gsq_peak(node, GSQ_PEAK_HELD_TUPLES, groups_.size());
        } else {
            functor_.update(state, tup, len, sg);
        }
        if (functor_.cleaning_when(key_, state, sg))
            clean(sgk, sg);
    }

    // The cleaning phase of supergroup sgk: its groups CLEANING_BY rejects
    // are removed.
    // CLEANING_BY is asked once per group (it may call stateful functions,
    // which count what they see), then the rejected groups go.
    void clean(const sg_key_type &sgk, sg_type &sg)
    {
        typename F::sg_eq same;
        std::vector<key_type> gone;
        for (size_t i = groups_.next_occupied(0); i < groups_.capacity();
             i = groups_.next_occupied(i + 1)) {
            const key_type &k = groups_.key_at(i);
            if (same(functor_.sg_key(k), sgk) && !functor_.cleaning_by(k, groups_.value_at(i), sg))
                gone.push_back(k);
        }
        for (const key_type &k : gone) {
            const state_type *s = groups_.find(k);
            if (s != nullptr)
                functor_.sg_remove(sg, *s);
            groups_.erase(k);
            --sg.n_groups;
        }
    }

    void on_heartbeat(gsq_node *node, const void *tup, uint32_t len)
    {
        if constexpr (has_heartbeat_epoch<F>::value) {
            epoch_type e{};
            if (tup != nullptr && functor_.heartbeat_epoch(tup, len, e)) {
                if (!current_) {
                    current_ = e;
                } else if (functor_.epoch_compare(*current_, e) > 0) {
                    end_window(node);
                    current_ = e;
                }
            }
        }
        if constexpr (has_epoch_heartbeat_emit<F>::value) {
            if (current_)
                functor_.emit_heartbeat(node, *current_);
        }
    }

    // The current window ends: supergroups told, groups out (HAVING), the
    // supergroups kept as the next window's previous ones.
    void end_window(gsq_node *node)
    {
        for (size_t i = supergroups_.next_occupied(0); i < supergroups_.capacity();
             i = supergroups_.next_occupied(i + 1))
            functor_.sg_final(supergroups_.value_at(i));
        for (size_t i = groups_.next_occupied(0); i < groups_.capacity();
             i = groups_.next_occupied(i + 1)) {
            const key_type &k = groups_.key_at(i);
            sg_type *sg = supergroups_.find(functor_.sg_key(k));
            if (sg != nullptr)
                functor_.emit(node, k, groups_.value_at(i), *sg);
        }
        groups_.clear();
        previous_ = std::move(supergroups_);
        supergroups_ = sg_table_type();
    }

    std::runtime_error too_many_groups() const
    {
        return too_many_groups_error(max_groups_, max_groups_given_ != 0, bytes_per_group);
    }

    F functor_;
    input_eofs eofs_{n_inputs};
    table_type groups_;            // the current window's groups
    sg_table_type supergroups_;    // its supergroups
    sg_table_type previous_;       // the previous window's (dirty inits)
    std::optional<epoch_type> current_;
    key_type key_{};
    static constexpr size_t bytes_per_group = 3 * (8 + sizeof(key_type) + sizeof(state_type));
    int max_groups_given_ = 0;
    uint64_t max_groups_;
};

} // namespace gsq

#endif // GSQ_SAMPLING_OP_HPP
