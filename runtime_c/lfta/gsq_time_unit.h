/*
 * gsq_time_unit.h -- converting between microseconds and the unit of an
 * LFTA's temporal field, C11, header-only.
 *
 * The run states its times in microseconds (the clock bound, the
 * out-of-order bound, generated heartbeats; gsq_runtime.h), a temporal field
 * holds them in its own unit: seconds for get_time and get_system_time,
 * microseconds for get_timestamp, and for a CSV column the time_unit of its
 * interface (gsq_time_unit_nsec: s, ms, us or ns).
 *
 * Invariants and conventions:
 *  - A unit is given as nanoseconds per unit, `unit_nsec`, a power of 1000
 *    from 1 (ns) to 10^9 (s); no other value is valid.  A unit of at least
 *    a microsecond divides microseconds exactly (unit_nsec / 1000 of them
 *    per unit), a smaller one multiplies them (1000 / unit_nsec units per
 *    microsecond): no step goes through a fraction.
 *  - Integer fields: microseconds to units round down (a promise never runs
 *    ahead of the time it comes from), except an out-of-order bound, which
 *    rounds up (lowering a time by it never lowers it by less than the
 *    bound).  Units to microseconds is exact for units of at least a
 *    microsecond and rounds down below.  Arithmetic is in uint64_t and
 *    wraps as uint64_t does past 2^64 - 1 (about 584,000 years of
 *    microseconds: only a value past every real clock gets there).
 *  - Float fields (a CSV column of type float) hold units with a fraction:
 *    the conversions divide and multiply in double, with no rounding to a
 *    whole unit; a value at or below 0 converts to 0 microseconds.
 *  - gsq_units_less_<t>(v, d): v lowered by d units, never below 0 (a time
 *    at or below 0 becomes 0); the result fits v's type since it is at most
 *    v.  <t> names v's C type: u8, u16, u32, i32, u64, i64 (d in whole
 *    units) and f64 (d in units with a fraction).
 */
#ifndef GSQ_TIME_UNIT_H
#define GSQ_TIME_UNIT_H

#include <stdint.h>

/* nanoseconds per unit of the clock's accessors and of a CSV time_unit */
#define GSQ_UNIT_NSEC_S UINT64_C(1000000000)
#define GSQ_UNIT_NSEC_MS UINT64_C(1000000)
#define GSQ_UNIT_NSEC_US UINT64_C(1000)
#define GSQ_UNIT_NSEC_NS UINT64_C(1)

/* usec microseconds in whole units, rounded down. */
static inline uint64_t gsq_usec_to_units(uint64_t usec, uint64_t unit_nsec)
{
    return unit_nsec >= 1000u ? usec / (unit_nsec / 1000u) : usec * (1000u / unit_nsec);
}

/* usec microseconds in whole units, rounded up (an out-of-order bound). */
static inline uint64_t gsq_usec_to_units_up(uint64_t usec, uint64_t unit_nsec)
{
    if (unit_nsec < 1000u)
        return usec * (1000u / unit_nsec);
    return (usec + unit_nsec / 1000u - 1u) / (unit_nsec / 1000u);
}

/* units whole units in microseconds (rounded down below a microsecond). */
static inline uint64_t gsq_units_to_usec(uint64_t units, uint64_t unit_nsec)
{
    return unit_nsec >= 1000u ? units * (unit_nsec / 1000u) : units / (1000u / unit_nsec);
}

/* usec microseconds in units with a fraction (a float field). */
static inline double gsq_usec_to_units_f64(uint64_t usec, uint64_t unit_nsec)
{
    return (double)usec * 1000.0 / (double)unit_nsec;
}

/* units with a fraction in whole microseconds, truncated; 0 at or below 0. */
static inline uint64_t gsq_units_f64_to_usec(double units, uint64_t unit_nsec)
{
    return units > 0 ? (uint64_t)(units * (double)unit_nsec / 1000.0) : 0u;
}

/* v lowered by d, at least 0: one function per C type of a temporal field. */
#define GSQ_UNITS_LESS_INT(sfx, T)                                                  \
    static inline T gsq_units_less_##sfx(T v, uint64_t d)                           \
    {                                                                               \
        return v > 0 && (uint64_t)v > d ? (T)((uint64_t)v - d) : (T)0;              \
    }
GSQ_UNITS_LESS_INT(u8, uint8_t)
GSQ_UNITS_LESS_INT(u16, uint16_t)
GSQ_UNITS_LESS_INT(u32, uint32_t)
GSQ_UNITS_LESS_INT(i32, int32_t)
GSQ_UNITS_LESS_INT(u64, uint64_t)
GSQ_UNITS_LESS_INT(i64, int64_t)
#undef GSQ_UNITS_LESS_INT

static inline double gsq_units_less_f64(double v, double d)
{
    return v > d ? v - d : 0.0;
}

#endif /* GSQ_TIME_UNIT_H */
