/*
 * gsq_lfta_heartbeat.h -- an LFTA's heartbeat state for one temporal input
 * field, C11, header-only.
 *
 * A heartbeat (a temporal update, punctuation) tells the operators above
 * that no later tuple has a temporal column below its values.  An LFTA
 * infers it from each increasing temporal field its temporal output reads:
 * from the largest value seen, from the run's clock less the interface's
 * skew on an idle source, less the interface's out-of-order bound; or, when
 * the run generates the source's heartbeats from declared bounds, it takes
 * the generated one.  The generated code calls these functions with the
 * field's values in the field's unit (gsq_time_unit.h converts the run's
 * microseconds); it chooses which apply to a field, this header holds what
 * each does.
 *
 * State (gsq_hb_<t>, <t> the field's C type: u8, u16, u32, i32, u64, i64,
 * f64), zeroed at the LFTA's init:
 *  - seen: a record was admitted; `last` is the largest value admitted
 *    (records are admitted before the query's predicate, so a record the
 *    query rejects still advances time).
 *  - promised: a heartbeat promised `bound`: no later record is below it.
 *    A record below a promised bound is dropped (and counted by the caller,
 *    GSQ_CNT_SKEW_DROPPED); so every admitted record is >= bound.
 *  - bound never decreases once promised: each new promise is the larger of
 *    the old bound and the new value.
 *
 * A heartbeat's value for the field:
 *  - generated (gsq_hb_<t>_promise): the generated value, raised to the
 *    bound already promised; promised from then on.
 *  - inferred (gsq_hb_<t>_clock, then gsq_hb_<t>_infer): the clock's bound
 *    (when known) raises the promised bound; then, if anything is known,
 *    the largest value seen (or else the bound), lowered by the out-of-order
 *    bound when there is one, raised to the promised bound.  Only with an
 *    out-of-order bound is the inference itself promised (records may trail
 *    the largest value by at most that bound; without it a record older
 *    than the last seen is not dropped but goes to the HFTA as late).
 *
 * Block loops (gsq_hb_<t>_mask_*, integer types): the same admission over a
 * block of rows with no branch, for a loop the compiler vectorizes: a row
 * is `live` (1) until dropped; the block's largest live value is noted with
 * gsq_hb_<t>_see once at the end of the block.  The masked maximum starts
 * at 0, so it is for unsigned types only (a signed field's rows take the
 * branching path).
 */
#ifndef GSQ_LFTA_HEARTBEAT_H
#define GSQ_LFTA_HEARTBEAT_H

#include <stdint.h>

#include "gsq_time_unit.h"

/* The state and functions of fields of C type T; D is an out-of-order
 * bound's type in units (uint64_t, or double for a float field). */
#define GSQ_HB_DEFINE(sfx, T, D)                                                    \
    typedef struct gsq_hb_##sfx {                                                   \
        T last;           /* largest value admitted (if seen) */                    \
        T bound;          /* the promise (if promised) */                           \
        uint8_t seen;                                                               \
        uint8_t promised;                                                           \
    } gsq_hb_##sfx;                                                                 \
                                                                                    \
    /* Whether a record with value v may pass: not below a promise. */              \
    static inline int gsq_hb_##sfx##_admits(const gsq_hb_##sfx *h, T v)             \
    {                                                                               \
        return !(h->promised && v < h->bound);                                      \
    }                                                                               \
                                                                                    \
    /* An admitted record's value. */                                               \
    static inline void gsq_hb_##sfx##_see(gsq_hb_##sfx *h, T v)                     \
    {                                                                               \
        if (!h->seen || v > h->last) {                                              \
            h->last = v;                                                            \
            h->seen = 1;                                                            \
        }                                                                           \
    }                                                                               \
                                                                                    \
    /* v, or the promised bound if that is larger. */                               \
    static inline T gsq_hb_##sfx##_raise(const gsq_hb_##sfx *h, T v)                \
    {                                                                               \
        return h->promised && h->bound > v ? h->bound : v;                          \
    }                                                                               \
                                                                                    \
    /* A promise of v (a generated heartbeat's value, in the field's unit           \
     * rounded down): what is promised, never below an earlier promise. */          \
    static inline T gsq_hb_##sfx##_promise(gsq_hb_##sfx *h, T v)                    \
    {                                                                               \
        v = gsq_hb_##sfx##_raise(h, v);                                             \
        h->bound = v;                                                               \
        h->promised = 1;                                                            \
        return v;                                                                   \
    }                                                                               \
                                                                                    \
    /* The clock's bound b (the clock less the skew, in the field's unit):          \
     * promised when it is the first promise or raises the last one. */            \
    static inline void gsq_hb_##sfx##_clock(gsq_hb_##sfx *h, T b)                   \
    {                                                                               \
        (void)gsq_hb_##sfx##_promise(h, b);                                         \
    }                                                                               \
                                                                                    \
    /* The inferred heartbeat value into *out, lowered by ooo units when            \
     * have_ooo (and then promised); 0 when nothing is known yet (no record        \
     * seen, nothing promised): no heartbeat. */                                    \
    static inline int gsq_hb_##sfx##_infer(gsq_hb_##sfx *h, int have_ooo, D ooo,    \
                                           T *out)                                  \
    {                                                                               \
        T v;                                                                        \
        if (!h->seen && !h->promised)                                               \
            return 0;                                                               \
        v = h->seen ? h->last : h->bound;                                           \
        *out = have_ooo ? gsq_hb_##sfx##_promise(h, gsq_units_less_##sfx(v, ooo))   \
                        : gsq_hb_##sfx##_raise(h, v);                               \
        return 1;                                                                   \
    }

/* The branch-free admission of a block loop (unsigned T): *live cleared and
 * *drops counted when the live row's v is below the promised bound (the
 * state's promised and bound, read once before the block); the block's
 * largest live value into *mx, *any set when a row was live. */
#define GSQ_HB_DEFINE_MASK(sfx, T)                                                  \
    static inline void gsq_hb_##sfx##_mask_admit(uint32_t *live, uint32_t *drops,   \
                                                 uint8_t promised, T bound, T v)    \
    {                                                                               \
        uint32_t d = *live & (uint32_t)promised & (uint32_t)(v < bound);            \
        *drops += d;                                                                \
        *live &= d ^ 1u;                                                            \
    }                                                                               \
                                                                                    \
    static inline void gsq_hb_##sfx##_mask_see(T *mx, uint32_t *any, uint32_t live, \
                                               T v)                                 \
    {                                                                               \
        T w = (T)(v & ((T)0 - (T)live));                                            \
        *mx = w > *mx ? w : *mx;                                                    \
        *any |= live;                                                               \
    }

GSQ_HB_DEFINE(u8, uint8_t, uint64_t)
GSQ_HB_DEFINE(u16, uint16_t, uint64_t)
GSQ_HB_DEFINE(u32, uint32_t, uint64_t)
GSQ_HB_DEFINE(i32, int32_t, uint64_t)
GSQ_HB_DEFINE(u64, uint64_t, uint64_t)
GSQ_HB_DEFINE(i64, int64_t, uint64_t)
GSQ_HB_DEFINE(f64, double, double)
GSQ_HB_DEFINE_MASK(u16, uint16_t)
GSQ_HB_DEFINE_MASK(u32, uint32_t)
GSQ_HB_DEFINE_MASK(u64, uint64_t)
#undef GSQ_HB_DEFINE
#undef GSQ_HB_DEFINE_MASK

#endif /* GSQ_LFTA_HEARTBEAT_H */
