// param_switches.hpp -- gsq::param_switches<V, E>: an aggregation's
// parameter values across the changes made while the run goes on
// (gsqlc_change_param).
//
// A change keeps the values it replaced for every epoch up to its mark (the
// newest epoch the query had reached at the change's instant) and gives the
// new ones to later epochs, so that no epoch mixes two values.  The switches
// are kept in the order of the changes; their marks do not decrease (the
// instants follow the data).  Invariant: before_[k] are the values in force
// before switch k, for the epochs e with e <= marks_[k] and e > marks_[k-1].
// At most max_kept switches are kept: an epoch older than the oldest mark
// kept takes that switch's old values (such epochs closed long before).
#ifndef GSQ_PARAM_SWITCHES_HPP
#define GSQ_PARAM_SWITCHES_HPP

#include <cstddef>
#include <vector>

namespace gsq {

template <class V, class E>
class param_switches {
public:
    static constexpr std::size_t max_kept = 64;

    // Nonzero once a change kept old values for some epochs.
    bool active() const noexcept { return !marks_.empty(); }

    // A change: the values `before` stay for the epochs up to `mark`.
    void push(const E &mark, const V &before)
    {
        if (marks_.size() == max_kept) {
            marks_.erase(marks_.begin());
            before_.erase(before_.begin());
        }
        marks_.push_back(mark);
        before_.push_back(before);
    }

    // The values of epoch e: `newest` unless e is at or before a mark.
    // later(a, b): epoch b is later than epoch a.
    template <class Later>
    const V &at(const E &e, const V &newest, Later later) const
    {
        for (std::size_t k = 0; k < marks_.size(); k++)
            if (!later(marks_[k], e))
                return before_[k];
        return newest;
    }

private:
    std::vector<E> marks_;
    std::vector<V> before_;
};

} // namespace gsq

#endif // GSQ_PARAM_SWITCHES_HPP
