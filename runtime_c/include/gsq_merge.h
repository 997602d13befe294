/* gsq_merge.h -- the order-preserving merges compiled once for every query
 * set (hfta_templates/merge_any.cpp) instead of once per query.
 *
 * A merge -- a MERGE query, or the merge of an LFTA's instances over an
 * interface set (gsq_lfta_def.set_merge) -- passes tuples through unchanged
 * and reads one column of them, so it depends on its query only through
 * that column's C type and direction, whether order is kept, where the
 * column is and the slack.  The first three pick one of the operators
 * below; the rest is a gsq_merge_spec, the params of the generated
 * gsq_hfta_def that names the operator's functions:
 *
 *   static const gsq_merge_spec spec = {GSQ_T_UINT, offsetof(...), sizeof(...), 0, 0};
 *   const gsq_hfta_def def = {"name", 2, inputs, out, GSQ_MERGE_FNS(u32, inc, ordered),
 *                             NULL, &spec, NULL, GSQ_PROMISES_KEPT, NULL};
 *
 * Semantics: gsq::merge_op (hfta_templates/merge_op.hpp), exactly as a
 * functor generated for the query would give it.
 */
#ifndef GSQ_MERGE_H
#define GSQ_MERGE_H

#include "gsq_runtime.h"

/* What a merge reads of its tuples (every input has the output's layout).
 * Invariant: col_type is the enum gsq_type of a numeric column, col_offset +
 * its width <= fixed_size; the slack is already the column type's value
 * (negative ones count as 0): slack_int for integer columns, slack_float for
 * FLOAT. */
typedef struct gsq_merge_spec {
    int col_type;
    uint32_t col_offset;
    uint32_t fixed_size;
    uint64_t slack_int;
    double slack_float;
} gsq_merge_spec;

/* X(type tag, direction tag, order tag) for every operator.  Type tags:
 * u8 (BOOL), u16 (USHORT), u32 (UINT, IP), i32 (INT), u64 (ULLONG),
 * i64 (LLONG), f64 (FLOAT); the build compiles each tag's operators apart
 * (backend/native_build.py MERGE_TYPES lists them). */
#define GSQ_MERGES_OF_TYPE(X, t) \
    X(t, inc, ordered)           \
    X(t, inc, unordered)         \
    X(t, dec, ordered)           \
    X(t, dec, unordered)
#define GSQ_MERGES(X)            \
    GSQ_MERGES_OF_TYPE(X, u8)    \
    GSQ_MERGES_OF_TYPE(X, u16)   \
    GSQ_MERGES_OF_TYPE(X, u32)   \
    GSQ_MERGES_OF_TYPE(X, i32)   \
    GSQ_MERGES_OF_TYPE(X, u64)   \
    GSQ_MERGES_OF_TYPE(X, i64)   \
    GSQ_MERGES_OF_TYPE(X, f64)

#define GSQ_MERGE_FN(t, d, o, what) gsq_merge_##t##_##d##_##o##_##what
/* create, accept, destroy of an operator: the middle of its gsq_hfta_def */
#define GSQ_MERGE_FNS(t, d, o) \
    GSQ_MERGE_FN(t, d, o, create), GSQ_MERGE_FN(t, d, o, accept), GSQ_MERGE_FN(t, d, o, destroy)

#ifdef __cplusplus
extern "C" {
#endif

#define GSQ_MERGE_DECLARE(t, d, o)                                                        \
    void *GSQ_MERGE_FN(t, d, o, create)(gsq_node * node);                                 \
    void GSQ_MERGE_FN(t, d, o, accept)(void *op, gsq_node *node, int input, int kind,    \
                                       const void *tup, uint32_t len);                    \
    void GSQ_MERGE_FN(t, d, o, destroy)(void *op);
GSQ_MERGES(GSQ_MERGE_DECLARE)
#undef GSQ_MERGE_DECLARE

#ifdef __cplusplus
}
#endif

#endif /* GSQ_MERGE_H */
