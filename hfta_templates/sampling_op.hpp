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
//   4. CLEANING_WHEN: if it holds, the supergroup's groups are cleaned.
// A cleaning, as Tigon's clean operator does it: the supergroup's groups are
// visited in the order they were created, each asked its question (CLEANING_BY)
// in turn; a group that fails is removed at once and its part leaves the
// super-aggregates (count$ and sum$ lose its count and sum, min$ and max$ keep
// their values), so a later group's question sees the reduced count$ and
// sum$.  count_distinct$() stays at its value before the cleaning while the
// questions are asked and drops by the removed groups afterwards.
// A tuple of a later window ends the current one: every supergroup's states
// are told (final init), then its groups are cleaned once more with HAVING as
// the question (Tigon's final clean), then every remaining group is output --
// its super-aggregates and count_distinct$() without the groups HAVING
// removed.  The window's supergroups are kept for the next window's dirty
// inits.  A tuple of an older window is late (dropped, counted).  At the end
// of the input the current window ends the same way, then GSQ_EOF.
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
//       (a group a cleaning removed: its part leaves the super-aggregates)
//   void sg_final(sg_type &sg);
//   static constexpr bool has_having;
//   bool having(const key_type &, const state_type &, sg_type &sg);
//   void emit(gsq_node *, const key_type &, const state_type &, sg_type &sg);
//       (the group passed HAVING; emit may still output nothing when a
//       PARTIAL function in SELECT has no value)
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
    // A supergroup and its groups' keys in the order the groups were created
    // (the order a cleaning visits them in).  Invariant: `groups` holds
    // exactly the current window's groups of this supergroup, and
    // sg.n_groups == groups.size(); a previous window's entries keep sg only.
    struct sg_entry {
        sg_type sg;
        std::vector<key_type> groups;
    };
    using sg_table_type = open_hash_map<sg_key_type, sg_entry, typename F::sg_hash, typename F::sg_eq>;
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
        auto [entry, new_sg] = supergroups_.find_or_insert(sgk);
        sg_type &sg = entry.sg;
        if (new_sg) {
            const sg_entry *prev = previous_.find(sgk);
            functor_.sg_start(sg, prev != nullptr ? &prev->sg : nullptr);
        }
        if (!functor_.where(tup, len, sg))
            return;
        functor_.sg_update(sg, tup, len);
        auto [state, inserted] = groups_.find_or_insert(key_);
        if (inserted) {
            if (groups_.size() > max_groups_)
                throw too_many_groups();
            entry.groups.push_back(key_);
            ++sg.n_groups;
            functor_.init(state, tup, len, sg);
            gsq_peak(node, GSQ_PEAK_HELD_TUPLES, groups_.size());
        } else {
            functor_.update(state, tup, len, sg);
        }
        if (functor_.cleaning_when(key_, state, sg))
            clean(entry, [this](const key_type &k, const state_type &s, sg_type &g) {
                return functor_.cleaning_by(k, s, g);
            });
    }

    // A cleaning of one supergroup: its groups asked `keep` in the order
    // they were created, each that fails removed at once (its part out of
    // the super-aggregates before the next group is asked); the count of
    // groups drops after the last question.
    template <class Keep>
    void clean(sg_entry &entry, Keep &&keep)
    {
        size_t kept = 0;
        for (size_t i = 0; i < entry.groups.size(); i++) {
            const key_type &k = entry.groups[i];
            const state_type *s = groups_.find(k);
            if (keep(k, *s, entry.sg)) {
                if (kept != i)
                    entry.groups[kept] = std::move(entry.groups[i]);
                kept++;
                continue;
            }
            functor_.sg_remove(entry.sg, *s);
            groups_.erase(k);
        }
        entry.groups.resize(kept);
        entry.sg.n_groups = kept;
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

    // The current window ends: supergroups told, cleaned by HAVING, their
    // groups out; the supergroups kept as the next window's previous ones.
    void end_window(gsq_node *node)
    {
        for (size_t i = supergroups_.next_occupied(0); i < supergroups_.capacity();
             i = supergroups_.next_occupied(i + 1)) {
            sg_entry &entry = supergroups_.value_at(i);
            functor_.sg_final(entry.sg);
            if constexpr (F::has_having)
                clean(entry, [this](const key_type &k, const state_type &s, sg_type &g) {
                    return functor_.having(k, s, g);
                });
        }
        for (size_t i = groups_.next_occupied(0); i < groups_.capacity();
             i = groups_.next_occupied(i + 1)) {
            const key_type &k = groups_.key_at(i);
            sg_entry *entry = supergroups_.find(functor_.sg_key(k));
            if (entry != nullptr)
                functor_.emit(node, k, groups_.value_at(i), entry->sg);
        }
        groups_.clear();
        for (size_t i = supergroups_.next_occupied(0); i < supergroups_.capacity();
             i = supergroups_.next_occupied(i + 1))
            std::vector<key_type>().swap(supergroups_.value_at(i).groups);
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
