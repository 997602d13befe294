/*
 * gsq_ops.h -- integer operators with defined behaviour for generated code.
 *
 * GSQL arithmetic follows C, but a query must never make the generated code
 * undefined: division or modulo by zero yields 0, INT_MIN / -1 wraps, shift
 * counts are taken modulo the width, and signed shifts happen on the
 * unsigned bit pattern.  (Signed + - * are emitted on unsigned operands and
 * converted back, which wraps.)  Usable from C11 and C++17.
 */
#ifndef GSQ_OPS_H
#define GSQ_OPS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GSQ_DEF_UOPS(SUF, T, BITS)                                            \
    static inline T gsq_div_##SUF(T a, T b) { return b ? (T)(a / b) : (T)0; } \
    static inline T gsq_mod_##SUF(T a, T b) { return b ? (T)(a % b) : (T)0; } \
    static inline T gsq_shl_##SUF(T a, uint64_t n)                            \
    {                                                                         \
        return (T)(a << (n & (BITS - 1)));                                    \
    }                                                                         \
    static inline T gsq_shr_##SUF(T a, uint64_t n)                            \
    {                                                                         \
        return (T)(a >> (n & (BITS - 1)));                                    \
    }

#define GSQ_DEF_SOPS(SUF, T, UT, BITS, MINV)                                  \
    static inline T gsq_div_##SUF(T a, T b)                                   \
    {                                                                         \
        if (b == 0)                                                           \
            return 0;                                                         \
        if (b == -1)                                                          \
            return (T)(0 - (UT)a); /* wraps for the minimum value */          \
        return (T)(a / b);                                                    \
    }                                                                         \
    static inline T gsq_mod_##SUF(T a, T b)                                   \
    {                                                                         \
        if (b == 0 || b == -1)                                                \
            return 0;                                                         \
        return (T)(a % b);                                                    \
    }                                                                         \
    static inline T gsq_shl_##SUF(T a, uint64_t n)                            \
    {                                                                         \
        return (T)((UT)a << (n & (BITS - 1)));                                \
    }                                                                         \
    static inline T gsq_shr_##SUF(T a, uint64_t n)                            \
    {                                                                         \
        /* arithmetic shift, as gcc does, without relying on it */           \
        UT u = (UT)a, s = (UT)(n & (BITS - 1));                               \
        if (a < 0 && s)                                                       \
            return (T)((u >> s) | ~(((UT)-1) >> s));                          \
        return (T)(u >> s);                                                   \
    }

GSQ_DEF_UOPS(u32, uint32_t, 32)
GSQ_DEF_UOPS(u64, uint64_t, 64)
GSQ_DEF_SOPS(i32, int32_t, uint32_t, 32, INT32_MIN)
GSQ_DEF_SOPS(i64, int64_t, uint64_t, 64, INT64_MIN)

#undef GSQ_DEF_UOPS
#undef GSQ_DEF_SOPS

/* 64-bit mixing for LFTA and HFTA group hashing (splitmix64 finaliser). */
static inline uint64_t gsq_hash_mix(uint64_t h)
{
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebULL;
    h ^= h >> 31;
    return h;
}

/* The hash partition of N (N > 0) a group of LFTA key hash h is in (option
 * partition): h mixed again, so that it owes nothing to the bits that pick
 * the group's table slot (32-bit key hashes have no high bits). */
static inline uint32_t gsq_part_of(uint64_t h, uint32_t n)
{
    return (uint32_t)(((gsq_hash_mix(h) >> 32) * (uint64_t)n) >> 32);
}

/* One key column into a running group hash: a multiply per column, cheap
 * enough for the per-row aggregation loop.  Not well mixed on its own: the
 * caller finishes with gsq_hash_mix (the LFTA key hash does; HFTA tables mix
 * every hash they are given). */
static inline uint64_t gsq_hash_add(uint64_t h, uint64_t v)
{
    return (((h << 5) | (h >> 59)) ^ v) * 0x9e3779b97f4a7c15ULL;
}

/* The same in 32-bit lanes, for LFTA group keys of at most 32 bits each:
 * a block of rows' hashes then vectorizes with 32-bit multiplies, which
 * every SIMD level has (AVX2 has no 64-bit one: the 64-bit hash took 2.5
 * times as long there).  gsq_hash32_fin mixes (murmur3's fmix32) and
 * widens: the table takes its bucket from the low bits and a victim way
 * from bits 28 and up (gsq_agg_table.h). */
static inline uint32_t gsq_hash32_add(uint32_t h, uint32_t v)
{
    return (((h << 5) | (h >> 27)) ^ v) * 0x9e3779b1u;
}

static inline uint64_t gsq_hash32_fin(uint32_t h)
{
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return h;
}

static inline uint64_t gsq_hash_bytes(uint64_t h, const void *p, uint32_t n)
{
    const unsigned char *b = (const unsigned char *)p;
    uint64_t x = 0xcbf29ce484222325ULL;
    for (uint32_t i = 0; i < n; i++)
        x = (x ^ b[i]) * 0x100000001b3ULL;
    return gsq_hash_add(h, x ^ n);
}

static inline uint64_t gsq_double_bits(double d)
{
    uint64_t u;
    if (d == 0)
        d = 0; /* -0.0 and 0.0 group together */
    __builtin_memcpy(&u, &d, sizeof u);
    return u;
}

#ifdef __cplusplus
}
#endif

#endif /* GSQ_OPS_H */
