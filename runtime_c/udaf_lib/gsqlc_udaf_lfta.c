/* gsqlc_udaf_lfta.c -- the LFTA (C) halves of gsqlc's library of GS-lite's
 * aggregates: the SUBAGGRs of compiler/gsqlc/data/gsqlc_aggregates.def in
 * Tigon's LFTA convention (NAME_LFTA_AGGR_INIT_/UPDATE_/FLUSHME_/OUTPUT_/
 * DESTROY_).  A scratchpad is the def's fstringN, 16-byte aligned, or one
 * value of its storage type; only FIRST_STR_lfta and LAST_STR_lfta allocate
 * (their scratchpad owns a copy of a string, freed by DESTROY_).  A string
 * result points into the scratchpad. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rts_udaf.h"
#include "gsqlc_udaf_lib.h"

/* ---- FIRST and LAST: {set u32, pad u32, value 8 bytes} */

#define GSQ_FIRST_LAST(NAME, T, FIRST)                                             \
    GSQ_LIB void NAME##_LFTA_AGGR_INIT_(gs_sp_t b) { memset(b, 0, 16); }              \
    GSQ_LIB void NAME##_LFTA_AGGR_UPDATE_(gs_sp_t b, T v)                             \
    {                                                                                 \
        gs_uint32_t set;                                                              \
        memcpy(&set, b, 4);                                                           \
        if (FIRST && set)                                                             \
            return;                                                                   \
        set = 1;                                                                      \
        memcpy(b, &set, 4);                                                           \
        memcpy(b + 8, &v, sizeof v);                                                  \
    }                                                                                 \
    GSQ_LIB gs_retval_t NAME##_LFTA_AGGR_FLUSHME_(gs_sp_t b) { (void)b; return 0; }   \
    GSQ_LIB void NAME##_LFTA_AGGR_OUTPUT_(T *r, gs_sp_t b) { memcpy(r, b + 8, sizeof *r); } \
    GSQ_LIB void NAME##_LFTA_AGGR_DESTROY_(gs_sp_t b) { (void)b; }

GSQ_FIRST_LAST(FIRST_lfta, gs_uint32_t, 1)
GSQ_FIRST_LAST(FIRST_INT_lfta, gs_int32_t, 1)
GSQ_FIRST_LAST(FIRST_ULL_lfta, gs_uint64_t, 1)
GSQ_FIRST_LAST(FIRST_LL_lfta, gs_int64_t, 1)
GSQ_FIRST_LAST(LAST_lfta, gs_uint32_t, 0)
GSQ_FIRST_LAST(LAST_INT_lfta, gs_int32_t, 0)
GSQ_FIRST_LAST(LAST_ULL_lfta, gs_uint64_t, 0)
GSQ_FIRST_LAST(LAST_LL_lfta, gs_int64_t, 0)

/* ---- FIRST and LAST over strings: a struct gs_string owning a copy of the
 * value (data NULL: none yet).  GS-lite's LAST_STR_lfta replaced its copy
 * only by an equal string, keeping the first value; this one keeps the last. */

static void gsq_str_keep(struct gs_string *s, const struct gs_string *v)
{
    size_t n = v->length > 0 ? (size_t)v->length : 0;
    if (s->data == NULL || (size_t)s->length != n) {
        char *p = (char *)malloc(n > 0 ? n : 1);
        if (p == NULL) {
            fputs("gsqlc: out of memory copying a string in FIRST/LAST\n", stderr);
            abort();
        }
        free(s->data);
        s->data = p;
    }
    if (n > 0)
        memcpy(s->data, v->data, n);
    s->length = (gs_int32_t)n;
}

#define GSQ_FIRST_LAST_STR(NAME, FIRST)                                             \
    GSQ_LIB void NAME##_LFTA_AGGR_INIT_(struct gs_string *s)                          \
    {                                                                                 \
        s->length = 0;                                                                \
        s->data = NULL;                                                               \
        s->owner = NULL;                                                              \
    }                                                                                 \
    GSQ_LIB void NAME##_LFTA_AGGR_UPDATE_(struct gs_string *s, struct gs_string *v)   \
    {                                                                                 \
        if (!(FIRST && s->data != NULL))                                              \
            gsq_str_keep(s, v);                                                       \
    }                                                                                 \
    GSQ_LIB gs_retval_t NAME##_LFTA_AGGR_FLUSHME_(struct gs_string *s)                \
    {                                                                                 \
        (void)s;                                                                      \
        return 0;                                                                     \
    }                                                                                 \
    GSQ_LIB void NAME##_LFTA_AGGR_OUTPUT_(struct gs_string *r, struct gs_string *s)   \
    {                                                                                 \
        r->length = s->length;                                                        \
        r->data = s->data;                                                            \
        r->owner = NULL;                                                              \
    }                                                                                 \
    GSQ_LIB void NAME##_LFTA_AGGR_DESTROY_(struct gs_string *s)                       \
    {                                                                                 \
        free(s->data);                                                                \
        s->data = NULL;                                                               \
        s->length = 0;                                                                \
    }

GSQ_FIRST_LAST_STR(FIRST_STR_lfta, 1)
GSQ_FIRST_LAST_STR(LAST_STR_lfta, 0)

/* ---- count_diff: {runs u32, first u64, last u64}, the partial itself */

static void gsq_count_diff_step(gs_sp_t b, gs_uint64_t w)
{
    gs_uint32_t runs;
    gs_uint64_t last;
    memcpy(&runs, b, 4);
    memcpy(&last, b + 12, 8);
    if (runs == 0)
        memcpy(b + 4, &w, 8);
    if (runs == 0 || last != w)
        runs++;
    memcpy(b, &runs, 4);
    memcpy(b + 12, &w, 8);
}

static void gsq_count_diff_output(struct gs_string *r, gs_sp_t b)
{
    r->length = GSQ_CD_PARTIAL;
    r->data = b;
    r->owner = 0;
}

#define GSQ_COUNT_DIFF(NAME, T, WIDEN)                                                \
    GSQ_LIB void NAME##_LFTA_AGGR_INIT_(gs_sp_t b) { memset(b, 0, GSQ_CD_PARTIAL); }  \
    GSQ_LIB void NAME##_LFTA_AGGR_UPDATE_(gs_sp_t b, T v) { gsq_count_diff_step(b, WIDEN); } \
    GSQ_LIB gs_retval_t NAME##_LFTA_AGGR_FLUSHME_(gs_sp_t b) { (void)b; return 0; }   \
    GSQ_LIB void NAME##_LFTA_AGGR_OUTPUT_(struct gs_string *r, gs_sp_t b)             \
    {                                                                                 \
        gsq_count_diff_output(r, b);                                                  \
    }                                                                                 \
    GSQ_LIB void NAME##_LFTA_AGGR_DESTROY_(gs_sp_t b) { (void)b; }

GSQ_COUNT_DIFF(count_diff_lfta_ui, gs_uint32_t, (gs_uint64_t)v)
GSQ_COUNT_DIFF(count_diff_lfta_i, gs_int32_t, (gs_uint64_t)(gs_int64_t)v)
GSQ_COUNT_DIFF(count_diff_lfta_ul, gs_uint64_t, v)
GSQ_COUNT_DIFF(count_diff_lfta_l, gs_int64_t, (gs_uint64_t)v)
/* strings by their 64-bit hashes, as the whole count_diff compares them */
GSQ_COUNT_DIFF(count_diff_lfta_s, struct gs_string *, gsq_lib_hash(v->data, v->length))

/* ---- approx_count_distinct: the sketch (gsqlc_udaf_lib.h), sent whole */

#define GSQ_APPROX_DISTINCT(NAME, T)                                                  \
    GSQ_LIB void NAME##_LFTA_AGGR_INIT_(gs_sp_t b) { memset(b, 0, GSQ_HLL_M); }        \
    GSQ_LIB void NAME##_LFTA_AGGR_UPDATE_(gs_sp_t b, T v)                             \
    {                                                                                 \
        gsq_hll_add((unsigned char *)b, gsq_lib_hash_int((gs_uint64_t)(gs_int64_t)v)); \
    }                                                                                 \
    GSQ_LIB gs_retval_t NAME##_LFTA_AGGR_FLUSHME_(gs_sp_t b) { (void)b; return 0; }   \
    GSQ_LIB void NAME##_LFTA_AGGR_OUTPUT_(struct gs_string *r, gs_sp_t b)             \
    {                                                                                 \
        r->length = GSQ_HLL_M;                                                        \
        r->data = b;                                                                  \
        r->owner = 0;                                                                 \
    }                                                                                 \
    GSQ_LIB void NAME##_LFTA_AGGR_DESTROY_(gs_sp_t b) { (void)b; }

GSQ_APPROX_DISTINCT(approx_count_distinct_lfta_ui, gs_uint32_t)
GSQ_APPROX_DISTINCT(approx_count_distinct_lfta_i, gs_int32_t)
GSQ_APPROX_DISTINCT(approx_count_distinct_lfta_ul, gs_uint64_t)
GSQ_APPROX_DISTINCT(approx_count_distinct_lfta_l, gs_int64_t)

/* ---- avg_udaf: {sum i64, count u32} */

GSQ_LIB void avg_udaf_lfta_LFTA_AGGR_INIT_(gs_sp_t b) { memset(b, 0, GSQ_AVG_BYTES); }
GSQ_LIB void avg_udaf_lfta_LFTA_AGGR_UPDATE_(gs_sp_t b, gs_uint32_t v)
{
    gs_int64_t sum;
    gs_uint32_t n;
    memcpy(&sum, b, 8);
    memcpy(&n, b + 8, 4);
    sum += v;
    n++;
    memcpy(b, &sum, 8);
    memcpy(b + 8, &n, 4);
}
GSQ_LIB gs_retval_t avg_udaf_lfta_LFTA_AGGR_FLUSHME_(gs_sp_t b) { (void)b; return 0; }
GSQ_LIB void avg_udaf_lfta_LFTA_AGGR_OUTPUT_(struct gs_string *r, gs_sp_t b)
{
    r->length = GSQ_AVG_BYTES;
    r->data = b;
    r->owner = 0;
}
GSQ_LIB void avg_udaf_lfta_LFTA_AGGR_DESTROY_(gs_sp_t b) { (void)b; }

/* ---- moving_sum_lfta: {sum u32, N u32} -> (N << 32) | sum */

GSQ_LIB void moving_sum_lfta_LFTA_AGGR_INIT_(gs_sp_t b) { memset(b, 0, 8); }
GSQ_LIB void moving_sum_lfta_LFTA_AGGR_UPDATE_(gs_sp_t b, gs_uint32_t v, gs_uint32_t n)
{
    gs_uint32_t s;
    memcpy(&s, b, 4);
    s += v;
    memcpy(b, &s, 4);
    memcpy(b + 4, &n, 4);
}
GSQ_LIB gs_retval_t moving_sum_lfta_LFTA_AGGR_FLUSHME_(gs_sp_t b) { (void)b; return 0; }
GSQ_LIB void moving_sum_lfta_LFTA_AGGR_OUTPUT_(gs_uint64_t *r, gs_sp_t b)
{
    gs_uint32_t s, n;
    memcpy(&s, b, 4);
    memcpy(&n, b + 4, 4);
    *r = ((gs_uint64_t)n << 32) | s;
}
GSQ_LIB void moving_sum_lfta_LFTA_AGGR_DESTROY_(gs_sp_t b) { (void)b; }

/* ---- running_array_aggr_lfta: {n u8, values u32[4]}; full: sent on */

GSQ_LIB void running_array_aggr_lfta_LFTA_AGGR_INIT_(gs_sp_t b) { memset(b, 0, 17); }
GSQ_LIB void running_array_aggr_lfta_LFTA_AGGR_UPDATE_(gs_sp_t b, gs_uint32_t v)
{
    unsigned char n = (unsigned char)b[0];
    if (n >= GSQ_RA_MAX)
        return;     /* not reached: a full scratchpad is flushed first */
    memcpy(b + 1 + 4 * n, &v, 4);
    b[0] = (gs_int8_t)(n + 1);
}
GSQ_LIB gs_retval_t running_array_aggr_lfta_LFTA_AGGR_FLUSHME_(gs_sp_t b)
{
    return (unsigned char)b[0] >= GSQ_RA_MAX;
}
GSQ_LIB void running_array_aggr_lfta_LFTA_AGGR_OUTPUT_(struct gs_string *r, gs_sp_t b)
{
    r->length = 4 * (gs_int32_t)(unsigned char)b[0];
    r->data = b + 1;
    r->owner = 0;
}
GSQ_LIB void running_array_aggr_lfta_LFTA_AGGR_DESTROY_(gs_sp_t b) { (void)b; }

/* ---- quantiles: {n u32, pad u32, values[CAP]}; full: sent on */

#define GSQ_QUANT(NAME, T, BYTES)                                                     \
    enum { NAME##_cap = (BYTES - GSQ_Q_HEAD) / (int)sizeof(T) };                      \
    GSQ_LIB void NAME##_LFTA_AGGR_INIT_(gs_sp_t b) { memset(b, 0, GSQ_Q_HEAD); }      \
    GSQ_LIB void NAME##_LFTA_AGGR_UPDATE_(gs_sp_t b, T v)                             \
    {                                                                                 \
        gs_uint32_t n;                                                                \
        memcpy(&n, b, 4);                                                             \
        if (n >= (gs_uint32_t)NAME##_cap)                                             \
            return;     /* not reached: a full scratchpad is flushed first */         \
        memcpy(b + GSQ_Q_HEAD + n * sizeof(T), &v, sizeof v);                         \
        n++;                                                                          \
        memcpy(b, &n, 4);                                                             \
    }                                                                                 \
    GSQ_LIB gs_retval_t NAME##_LFTA_AGGR_FLUSHME_(gs_sp_t b)                          \
    {                                                                                 \
        gs_uint32_t n;                                                                \
        memcpy(&n, b, 4);                                                             \
        return n >= (gs_uint32_t)NAME##_cap;                                          \
    }                                                                                 \
    GSQ_LIB void NAME##_LFTA_AGGR_OUTPUT_(struct gs_string *r, gs_sp_t b)             \
    {                                                                                 \
        gs_uint32_t n;                                                                \
        memcpy(&n, b, 4);                                                             \
        r->length = (gs_int32_t)(n * sizeof(T));                                      \
        r->data = b + GSQ_Q_HEAD;                                                     \
        r->owner = 0;                                                                 \
    }                                                                                 \
    GSQ_LIB void NAME##_LFTA_AGGR_DESTROY_(gs_sp_t b) { (void)b; }

GSQ_QUANT(quant_ui_udaf_lfta3, gs_uint32_t, 2088)
GSQ_QUANT(quant_i_udaf_lfta3, gs_int32_t, 2088)
GSQ_QUANT(quant_ul_udaf_lfta3, gs_uint64_t, 2904)
GSQ_QUANT(quant_l_udaf_lfta3, gs_int64_t, 2904)
GSQ_QUANT(quant_f_udaf_lfta3, gs_float_t, 2904)
