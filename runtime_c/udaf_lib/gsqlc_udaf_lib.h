/* gsqlc_udaf_lib.h -- what the LFTA (C) and HFTA (C++) halves of gsqlc's
 * library of GS-lite's aggregates share: the layout of the partial results
 * an LFTA sub-aggregate sends to its HFTA super-aggregate, and the marking
 * of every definition as weak (a user's --udf source defining the same
 * function in Tigon's convention takes precedence).
 *
 * The declarations are compiler/gsqlc/data/gsqlc_aggregates.def; gsqlc
 * writes their prototypes (gsqlc_udf.h) for the units calling them.
 * Partials are byte strings in the host's byte order, read with memcpy. */
#ifndef GSQLC_UDAF_LIB_H
#define GSQLC_UDAF_LIB_H

#include "gsconfig.h"
#include "gstypes.h"

#define GSQ_LIB __attribute__((weak))

/* count_diff: an LFTA partial {runs u32, first u64, last u64} (20 bytes);
 * values widen to 64 bits (signed ones sign-extended), strings are hashed. */
#define GSQ_CD_PARTIAL 20
/* avg_udaf: {sum i64, count u32} (12 bytes), partial and result alike */
#define GSQ_AVG_BYTES 12
/* running_array_aggr: an LFTA holds up to 4 values, {n u8, values u32[4]} */
#define GSQ_RA_MAX 4
/* quantiles: an LFTA scratchpad is {n u32, pad u32, values[]} */
#define GSQ_Q_HEAD 8

/* a 64-bit finalizer mixing every input bit into every output bit
 * (Murmur3's): an integer's hash for the sketches below (widened to 64 bits,
 * signed values sign-extended, so int 5 and ullong 5 are one value), and
 * the end of a byte string's */
static inline gs_uint64_t gsq_lib_hash_int(gs_uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

/* a 64-bit hash of a byte string (FNV-1a, then the finalizer above) */
static inline gs_uint64_t gsq_lib_hash(const void *p, gs_int32_t len)
{
    const unsigned char *b = (const unsigned char *)p;
    gs_uint64_t h = 0xcbf29ce484222325ULL;
    for (gs_int32_t i = 0; i < len; i++) {
        h ^= b[i];
        h *= 0x100000001b3ULL;
    }
    return gsq_lib_hash_int(h);
}

/* approx_count_distinct: a HyperLogLog sketch of GSQ_HLL_M one-byte
 * registers -- the scratchpad, the LFTA partial and the HFTA state alike.  A
 * value's 64-bit hash picks a register with its high 32 bits (multiply and
 * shift: uniform over 0..GSQ_HLL_M-1); its low 32 bits give the rank (1 +
 * leading zeros, 33 for none set); a register keeps its largest rank, so
 * sketches merge by the larger register. */
#define GSQ_HLL_M 1000

static inline void gsq_hll_add(unsigned char *reg, gs_uint64_t h)
{
    unsigned j = (unsigned)(((h >> 32) * GSQ_HLL_M) >> 32);
    gs_uint32_t w = (gs_uint32_t)h;
    unsigned char rank = (unsigned char)(w ? __builtin_clz(w) + 1 : 33);
    if (rank > reg[j])
        reg[j] = rank;
}

#endif
