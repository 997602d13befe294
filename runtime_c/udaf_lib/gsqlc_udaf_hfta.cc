// gsqlc_udaf_hfta.cc -- the HFTA (C++) halves of gsqlc's library of GS-lite's
// aggregates: the UDAFs of compiler/gsqlc/data/gsqlc_aggregates.def run whole
// in an HFTA and the SUPERAGGRs over LFTA partials, in Tigon's HFTA
// convention (NAME_HFTA_AGGR_INIT_/UPDATE_/OUTPUT_/DESTROY_, REINIT_ for a
// RUNNING one), and the EXTR extraction functions.  A scratchpad is the def's
// fstringN (16-byte aligned) or one typed value; what does not fit is on the
// heap, owned by the scratchpad and freed by DESTROY_.  A string result is
// SHALLOW_COPY: gsqlc copies it while the scratchpad lives.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "hfta_udaf.h"
#include "gsqlc_udaf_lib.h"

namespace {

template <class T> T load(const void *p)
{
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

template <class T> void store(void *p, const T &v) { std::memcpy(p, &v, sizeof v); }

// a heap object whose address is kept in a scratchpad's first 8 bytes
template <class T> T *held(gs_sp_t b) { return load<T *>(b); }

void shallow(vstring *r, const void *p, size_t n)
{
    r->length = (gs_int32_t)n;
    r->offset = (gs_p_t)(uintptr_t)p;
    r->reserved = SHALLOW_COPY;
}

const char *bytes(const vstring *v) { return (const char *)(uintptr_t)v->offset; }

}  // namespace

// ---------------------------------------------------------------- FIRST, LAST
// A numeric scratchpad: {set u32, pad u32, value (8 bytes)}.  A string one
// (typed `string`): an owned copy, offset 0 until the first value.

#define GSQ_FL_COMMON(NAME)                                                          \
    GSQ_LIB void NAME##_HFTA_AGGR_INIT_(gs_sp_t b) { std::memset(b, 0, 16); }         \
    GSQ_LIB void NAME##_HFTA_AGGR_REINIT_(gs_sp_t b) { (void)b; }                     \
    GSQ_LIB void NAME##_HFTA_AGGR_DESTROY_(gs_sp_t b) { (void)b; }

#define GSQ_FL_TYPED(NAME, T, FIRST)                                                  \
    GSQ_LIB void NAME##_HFTA_AGGR_UPDATE_(gs_sp_t b, T v)                             \
    {                                                                                 \
        if (FIRST && load<gs_uint32_t>(b))                                            \
            return;                                                                   \
        store<gs_uint32_t>(b, 1);                                                     \
        store<T>(b + 8, v);                                                           \
    }                                                                                 \
    GSQ_LIB void NAME##_HFTA_AGGR_OUTPUT_(T *r, gs_sp_t b) { *r = load<T>(b + 8); }

#define GSQ_FL_STRING(NAME, FIRST)                                                    \
    GSQ_LIB void NAME##_HFTA_AGGR_INIT_(vstring *s) { hfta_vstr_init(s); }            \
    GSQ_LIB void NAME##_HFTA_AGGR_REINIT_(vstring *s) { (void)s; }                    \
    GSQ_LIB void NAME##_HFTA_AGGR_UPDATE_(vstring *s, vstring *v)                     \
    {                                                                                 \
        if (FIRST && s->offset != 0)                                                  \
            return;                                                                   \
        char *p = (char *)std::malloc(v->length > 0 ? (size_t)v->length : 1);         \
        if (p == nullptr)                                                             \
            throw std::bad_alloc();                                                   \
        if (v->length > 0)                                                            \
            std::memcpy(p, bytes(v), (size_t)v->length);                              \
        hfta_vstr_destroy(s);                                                         \
        s->length = v->length > 0 ? v->length : 0;                                    \
        s->offset = (gs_p_t)(uintptr_t)p;                                             \
        s->reserved = INTERNAL;                                                       \
    }                                                                                 \
    GSQ_LIB void NAME##_HFTA_AGGR_OUTPUT_(vstring *r, vstring *s)                     \
    {                                                                                 \
        shallow(r, bytes(s), (size_t)s->length);                                      \
    }                                                                                 \
    GSQ_LIB void NAME##_HFTA_AGGR_DESTROY_(vstring *s) { hfta_vstr_destroy(s); }

GSQ_FL_COMMON(FIRST)
GSQ_FL_TYPED(FIRST, gs_uint32_t, 1)
GSQ_FL_TYPED(FIRST, gs_int32_t, 1)
GSQ_FL_TYPED(FIRST, gs_uint64_t, 1)
GSQ_FL_TYPED(FIRST, gs_int64_t, 1)
GSQ_FL_STRING(FIRST, 1)
GSQ_FL_COMMON(LAST)
GSQ_FL_TYPED(LAST, gs_uint32_t, 0)
GSQ_FL_TYPED(LAST, gs_int32_t, 0)
GSQ_FL_TYPED(LAST, gs_uint64_t, 0)
GSQ_FL_TYPED(LAST, gs_int64_t, 0)
GSQ_FL_STRING(LAST, 0)

// the super-aggregates over LFTA partials: the first (last) partial's value
GSQ_FL_COMMON(FIRST_hfta)
GSQ_FL_TYPED(FIRST_hfta, gs_uint32_t, 1)
GSQ_FL_COMMON(FIRST_INT_hfta)
GSQ_FL_TYPED(FIRST_INT_hfta, gs_int32_t, 1)
GSQ_FL_COMMON(FIRST_ULL_hfta)
GSQ_FL_TYPED(FIRST_ULL_hfta, gs_uint64_t, 1)
GSQ_FL_COMMON(FIRST_LL_hfta)
GSQ_FL_TYPED(FIRST_LL_hfta, gs_int64_t, 1)
GSQ_FL_STRING(FIRST_STR_hfta, 1)
GSQ_FL_COMMON(LAST_hfta)
GSQ_FL_TYPED(LAST_hfta, gs_uint32_t, 0)
GSQ_FL_COMMON(LAST_INT_hfta)
GSQ_FL_TYPED(LAST_INT_hfta, gs_int32_t, 0)
GSQ_FL_COMMON(LAST_ULL_hfta)
GSQ_FL_TYPED(LAST_ULL_hfta, gs_uint64_t, 0)
GSQ_FL_COMMON(LAST_LL_hfta)
GSQ_FL_TYPED(LAST_LL_hfta, gs_int64_t, 0)
GSQ_FL_STRING(LAST_STR_hfta, 0)

// ---------------------------------------------------------------- count_diff
// {runs u32, pad u32, last u64}: values widened to 64 bits, strings hashed.

namespace {
void count_diff_step(gs_sp_t b, gs_uint64_t w)
{
    gs_uint32_t runs = load<gs_uint32_t>(b);
    if (runs == 0 || load<gs_uint64_t>(b + 8) != w)
        store<gs_uint32_t>(b, runs + 1);
    store<gs_uint64_t>(b + 8, w);
}
}  // namespace

GSQ_LIB void count_diff_HFTA_AGGR_INIT_(gs_sp_t b) { std::memset(b, 0, 16); }
GSQ_LIB void count_diff_HFTA_AGGR_UPDATE_(gs_sp_t b, gs_uint32_t v) { count_diff_step(b, v); }
GSQ_LIB void count_diff_HFTA_AGGR_UPDATE_(gs_sp_t b, gs_int32_t v)
{
    count_diff_step(b, (gs_uint64_t)(gs_int64_t)v);
}
GSQ_LIB void count_diff_HFTA_AGGR_UPDATE_(gs_sp_t b, gs_uint64_t v) { count_diff_step(b, v); }
GSQ_LIB void count_diff_HFTA_AGGR_UPDATE_(gs_sp_t b, gs_int64_t v)
{
    count_diff_step(b, (gs_uint64_t)v);
}
GSQ_LIB void count_diff_HFTA_AGGR_UPDATE_(gs_sp_t b, vstring *v)
{
    count_diff_step(b, gsq_lib_hash(bytes(v), v->length));
}
GSQ_LIB void count_diff_HFTA_AGGR_OUTPUT_(gs_uint32_t *r, gs_sp_t b) { *r = load<gs_uint32_t>(b); }
GSQ_LIB void count_diff_HFTA_AGGR_DESTROY_(gs_sp_t b) { (void)b; }

// over LFTA partials {runs, first, last}, in the order the LFTA sent them
GSQ_LIB void count_diff_hfta_HFTA_AGGR_INIT_(gs_sp_t b) { std::memset(b, 0, 16); }
GSQ_LIB void count_diff_hfta_HFTA_AGGR_UPDATE_(gs_sp_t b, vstring *v)
{
    if (v->length != GSQ_CD_PARTIAL)
        return;
    const char *p = bytes(v);
    gs_uint32_t runs = load<gs_uint32_t>(b), pruns = load<gs_uint32_t>(p);
    if (pruns == 0)
        return;
    gs_uint64_t first = load<gs_uint64_t>(p + 4), last = load<gs_uint64_t>(p + 12);
    if (runs > 0 && load<gs_uint64_t>(b + 8) == first)
        pruns--;    // the partial's first run goes on the group's last one
    store<gs_uint32_t>(b, runs + pruns);
    store<gs_uint64_t>(b + 8, last);
}
GSQ_LIB void count_diff_hfta_HFTA_AGGR_OUTPUT_(gs_uint32_t *r, gs_sp_t b)
{
    *r = load<gs_uint32_t>(b);
}
GSQ_LIB void count_diff_hfta_HFTA_AGGR_DESTROY_(gs_sp_t b) { (void)b; }

// ---------------------------------------------------------------- POSAVG
// {sum double, count double}; -1 when no value was >= 0

GSQ_LIB void POSAVG_HFTA_AGGR_INIT_(gs_sp_t b) { std::memset(b, 0, 16); }
GSQ_LIB void POSAVG_HFTA_AGGR_UPDATE_(gs_sp_t b, gs_float_t v)
{
    if (v >= 0) {
        store<double>(b, load<double>(b) + v);
        store<double>(b + 8, load<double>(b + 8) + 1);
    }
}
GSQ_LIB void POSAVG_HFTA_AGGR_OUTPUT_(gs_float_t *r, gs_sp_t b)
{
    double n = load<double>(b + 8);
    *r = n > 0 ? load<double>(b) / n : -1;
}
GSQ_LIB void POSAVG_HFTA_AGGR_DESTROY_(gs_sp_t b) { (void)b; }

// ---------------------------------------------------------------- avg_udaf
// {sum i64, count u32} (12 bytes), the result a string of those bytes

GSQ_LIB void avg_udaf_HFTA_AGGR_INIT_(gs_sp_t b) { std::memset(b, 0, GSQ_AVG_BYTES); }
GSQ_LIB void avg_udaf_HFTA_AGGR_UPDATE_(gs_sp_t b, gs_uint32_t v)
{
    store<gs_int64_t>(b, load<gs_int64_t>(b) + v);
    store<gs_uint32_t>(b + 8, load<gs_uint32_t>(b + 8) + 1);
}
GSQ_LIB void avg_udaf_HFTA_AGGR_OUTPUT_(vstring *r, gs_sp_t b) { shallow(r, b, GSQ_AVG_BYTES); }
GSQ_LIB void avg_udaf_HFTA_AGGR_DESTROY_(gs_sp_t b) { (void)b; }

GSQ_LIB void avg_udaf_hfta_HFTA_AGGR_INIT_(gs_sp_t b) { std::memset(b, 0, GSQ_AVG_BYTES); }
GSQ_LIB void avg_udaf_hfta_HFTA_AGGR_UPDATE_(gs_sp_t b, vstring *v)
{
    if (v->length != GSQ_AVG_BYTES)
        return;
    store<gs_int64_t>(b, load<gs_int64_t>(b) + load<gs_int64_t>(bytes(v)));
    store<gs_uint32_t>(b + 8, load<gs_uint32_t>(b + 8) + load<gs_uint32_t>(bytes(v) + 8));
}
GSQ_LIB void avg_udaf_hfta_HFTA_AGGR_OUTPUT_(vstring *r, gs_sp_t b)
{
    shallow(r, b, GSQ_AVG_BYTES);
}
GSQ_LIB void avg_udaf_hfta_HFTA_AGGR_DESTROY_(gs_sp_t b) { (void)b; }

GSQ_LIB gs_float_t extr_avg_fcn(vstring *v)
{
    if (v->length != GSQ_AVG_BYTES)
        return 0;
    gs_uint32_t n = load<gs_uint32_t>(bytes(v) + 8);
    return n ? (gs_float_t)load<gs_int64_t>(bytes(v)) / n : 0;
}

// ---------------------------------------------------------------- moving sum
// {sums u64* (N panes, one per epoch), N u32, pos u32}; the result is the
// scratchpad's address, which the extractors read (GS-lite's convention).

namespace {
struct moving_sum {
    gs_uint64_t *sums;
    gs_uint32_t n;
    gs_uint32_t pos;
};
static_assert(sizeof(moving_sum) == 16, "moving_sum_udaf's scratchpad is 16 bytes");

const gs_uint32_t MOVING_SUM_MAX_N = 1u << 16;

void moving_sum_add(gs_sp_t b, gs_uint32_t v, gs_uint32_t n)
{
    moving_sum *m = (moving_sum *)b;
    if (m->sums == nullptr) {
        m->n = std::min(std::max(n, 1u), MOVING_SUM_MAX_N);
        m->sums = new gs_uint64_t[m->n]();
        m->pos = 0;
    }
    m->sums[m->pos] += v;
}

void moving_sum_reinit(gs_sp_t b)
{
    moving_sum *m = (moving_sum *)b;
    if (m->sums == nullptr)
        return;
    m->pos = (m->pos + 1) % m->n;
    m->sums[m->pos] = 0;
}
}  // namespace

GSQ_LIB void moving_sum_udaf_HFTA_AGGR_INIT_(gs_sp_t b) { std::memset(b, 0, 16); }
GSQ_LIB void moving_sum_udaf_HFTA_AGGR_UPDATE_(gs_sp_t b, gs_uint32_t v, gs_uint32_t n)
{
    moving_sum_add(b, v, n);
}
GSQ_LIB void moving_sum_udaf_HFTA_AGGR_OUTPUT_(gs_uint64_t *r, gs_sp_t b)
{
    *r = (gs_uint64_t)(uintptr_t)b;
}
GSQ_LIB void moving_sum_udaf_HFTA_AGGR_DESTROY_(gs_sp_t b) { delete[] ((moving_sum *)b)->sums; }
GSQ_LIB void moving_sum_udaf_HFTA_AGGR_REINIT_(gs_sp_t b) { moving_sum_reinit(b); }

// over LFTA partials (N << 32) | sum
GSQ_LIB void super_moving_sum_udaf_HFTA_AGGR_INIT_(gs_sp_t b) { std::memset(b, 0, 16); }
GSQ_LIB void super_moving_sum_udaf_HFTA_AGGR_UPDATE_(gs_sp_t b, gs_uint64_t p)
{
    moving_sum_add(b, (gs_uint32_t)(p & 0xffffffffu), (gs_uint32_t)(p >> 32));
}
GSQ_LIB void super_moving_sum_udaf_HFTA_AGGR_OUTPUT_(gs_uint64_t *r, gs_sp_t b)
{
    *r = (gs_uint64_t)(uintptr_t)b;
}
GSQ_LIB void super_moving_sum_udaf_HFTA_AGGR_DESTROY_(gs_sp_t b)
{
    delete[] ((moving_sum *)b)->sums;
}
GSQ_LIB void super_moving_sum_udaf_HFTA_AGGR_REINIT_(gs_sp_t b) { moving_sum_reinit(b); }

GSQ_LIB gs_uint32_t moving_sum_extract(gs_uint64_t p)
{
    const moving_sum *m = (const moving_sum *)(uintptr_t)p;
    gs_uint64_t s = 0;
    for (gs_uint32_t i = 0; m->sums != nullptr && i < m->n; i++)
        s += m->sums[i];
    return (gs_uint32_t)s;
}

// the pane k epochs back weighted alpha^k
GSQ_LIB gs_float_t moving_sum_extract_exp(gs_uint64_t p, gs_float_t alpha)
{
    const moving_sum *m = (const moving_sum *)(uintptr_t)p;
    double s = 0, w = 1;
    for (gs_uint32_t k = 0; m->sums != nullptr && k < m->n; k++) {
        s += w * (double)m->sums[(m->pos + m->n - k) % m->n];
        w *= alpha;
    }
    return s;
}

// ---------------------------------------------------------------- quantiles
// The HFTA scratchpad (32 bytes) holds a std::vector of every value; the
// result is the sorted values' bytes.  An LFTA partial is values' bytes.

namespace {
template <class T> void quant_init(gs_sp_t b)
{
    std::memset(b, 0, 32);
    store<std::vector<T> *>(b, new std::vector<T>());
}
template <class T> void quant_add(gs_sp_t b, T v) { held<std::vector<T>>(b)->push_back(v); }
template <class T> void quant_add_partial(gs_sp_t b, const vstring *v)
{
    std::vector<T> *vals = held<std::vector<T>>(b);
    size_t n = v->length > 0 ? (size_t)v->length / sizeof(T) : 0;
    size_t at = vals->size();
    vals->resize(at + n);
    if (n)
        std::memcpy(vals->data() + at, bytes(v), n * sizeof(T));
}
template <class T> void quant_output(vstring *r, gs_sp_t b)
{
    std::vector<T> *vals = held<std::vector<T>>(b);
    std::sort(vals->begin(), vals->end());
    shallow(r, vals->data(), vals->size() * sizeof(T));
}
template <class T> void quant_destroy(gs_sp_t b) { delete held<std::vector<T>>(b); }

// the value of rank ceil(phi * n) among the n sorted values of v
template <class T> T quant_extract(const vstring *v, double phi)
{
    size_t n = v->length > 0 ? (size_t)v->length / sizeof(T) : 0;
    if (n == 0)
        return T();
    if (!(phi > 0))
        phi = 0;   // NaN included
    if (phi > 1)
        phi = 1;
    double rank = std::ceil(phi * (double)n);
    size_t k = rank < 1 ? 0 : std::min(n - 1, (size_t)rank - 1);
    return load<T>(bytes(v) + k * sizeof(T));
}
}  // namespace

#define GSQ_QUANT(TAG, T)                                                             \
    GSQ_LIB void quant_##TAG##_udaf_hftaZ_HFTA_AGGR_INIT_(gs_sp_t b) { quant_init<T>(b); }   \
    GSQ_LIB void quant_##TAG##_udaf_hftaZ_HFTA_AGGR_UPDATE_(gs_sp_t b, T v) { quant_add<T>(b, v); } \
    GSQ_LIB void quant_##TAG##_udaf_hftaZ_HFTA_AGGR_OUTPUT_(vstring *r, gs_sp_t b)    \
    {                                                                                 \
        quant_output<T>(r, b);                                                        \
    }                                                                                 \
    GSQ_LIB void quant_##TAG##_udaf_hftaZ_HFTA_AGGR_DESTROY_(gs_sp_t b) { quant_destroy<T>(b); } \
    GSQ_LIB void quant_##TAG##_udaf_hfta3_HFTA_AGGR_INIT_(gs_sp_t b) { quant_init<T>(b); }   \
    GSQ_LIB void quant_##TAG##_udaf_hfta3_HFTA_AGGR_UPDATE_(gs_sp_t b, vstring *v)    \
    {                                                                                 \
        quant_add_partial<T>(b, v);                                                   \
    }                                                                                 \
    GSQ_LIB void quant_##TAG##_udaf_hfta3_HFTA_AGGR_OUTPUT_(vstring *r, gs_sp_t b)    \
    {                                                                                 \
        quant_output<T>(r, b);                                                        \
    }                                                                                 \
    GSQ_LIB void quant_##TAG##_udaf_hfta3_HFTA_AGGR_DESTROY_(gs_sp_t b) { quant_destroy<T>(b); } \
    GSQ_LIB T extr_quant_##TAG##_hftaZ_fcn(vstring *v, gs_float_t phi)                \
    {                                                                                 \
        return quant_extract<T>(v, phi);                                              \
    }                                                                                 \
    GSQ_LIB T extr_med_##TAG##_hftaZ_fcn(vstring *v) { return quant_extract<T>(v, 0.5); }

GSQ_QUANT(ui, gs_uint32_t)
GSQ_QUANT(i, gs_int32_t)
GSQ_QUANT(ul, gs_uint64_t)
GSQ_QUANT(l, gs_int64_t)
GSQ_QUANT(f, gs_float_t)

// ---------------------------------------------------------------- CAT_aggr
// The scratchpad (8 bytes) points to the heap state.

namespace {
struct cat_state {
    std::string val;
    std::string prev;     // CAT_aggr_diff: the previous string
    gs_uint64_t n = 0;    // strings taken
};
}  // namespace

GSQ_LIB void CAT_aggr_HFTA_AGGR_INIT_(gs_sp_t b) { store<cat_state *>(b, new cat_state()); }
GSQ_LIB void CAT_aggr_HFTA_AGGR_UPDATE_(gs_sp_t b, vstring *sep, vstring *s)
{
    cat_state *c = held<cat_state>(b);
    if (c->n++ > 0 && sep->length > 0)
        c->val.append(bytes(sep), (size_t)sep->length);
    if (s->length > 0)
        c->val.append(bytes(s), (size_t)s->length);
}
GSQ_LIB void CAT_aggr_HFTA_AGGR_OUTPUT_(vstring *r, gs_sp_t b)
{
    cat_state *c = held<cat_state>(b);
    shallow(r, c->val.data(), c->val.size());
}
GSQ_LIB void CAT_aggr_HFTA_AGGR_DESTROY_(gs_sp_t b) { delete held<cat_state>(b); }

GSQ_LIB void CAT_aggr_diff_HFTA_AGGR_INIT_(gs_sp_t b) { store<cat_state *>(b, new cat_state()); }
GSQ_LIB void CAT_aggr_diff_HFTA_AGGR_REINIT_(gs_sp_t b) { (void)b; }
GSQ_LIB void CAT_aggr_diff_HFTA_AGGR_UPDATE_(gs_sp_t b, vstring *s)
{
    cat_state *c = held<cat_state>(b);
    std::string v(bytes(s), s->length > 0 ? (size_t)s->length : 0);
    if (c->n > 0 && v == c->prev)
        return;
    if (c->n++ > 0)
        c->val.push_back(',');
    c->val += v;
    c->prev.swap(v);
}
GSQ_LIB void CAT_aggr_diff_HFTA_AGGR_OUTPUT_(vstring *r, gs_sp_t b)
{
    cat_state *c = held<cat_state>(b);
    shallow(r, c->val.data(), c->val.size());
}
GSQ_LIB void CAT_aggr_diff_HFTA_AGGR_DESTROY_(gs_sp_t b) { delete held<cat_state>(b); }

// ---------------------------------------------------------------- running_array_aggr
// The scratchpad (8 bytes) points to the list "v1,v2,...".

namespace {
void array_append(std::string *s, gs_uint32_t v)
{
    char buf[16];
    int n = std::snprintf(buf, sizeof buf, "%u", v);
    if (!s->empty())
        s->push_back(',');
    s->append(buf, (size_t)n);
}
}  // namespace

#define GSQ_ARRAY_COMMON(NAME)                                                        \
    GSQ_LIB void NAME##_HFTA_AGGR_INIT_(gs_sp_t b) { store<std::string *>(b, new std::string()); } \
    GSQ_LIB void NAME##_HFTA_AGGR_REINIT_(gs_sp_t b) { (void)b; }                     \
    GSQ_LIB void NAME##_HFTA_AGGR_OUTPUT_(vstring *r, gs_sp_t b)                      \
    {                                                                                 \
        std::string *s = held<std::string>(b);                                        \
        shallow(r, s->data(), s->size());                                             \
    }                                                                                 \
    GSQ_LIB void NAME##_HFTA_AGGR_DESTROY_(gs_sp_t b) { delete held<std::string>(b); }

GSQ_ARRAY_COMMON(running_array_aggr)
GSQ_LIB void running_array_aggr_HFTA_AGGR_UPDATE_(gs_sp_t b, gs_uint32_t v)
{
    array_append(held<std::string>(b), v);
}
GSQ_ARRAY_COMMON(running_array_aggr_hfta)
GSQ_LIB void running_array_aggr_hfta_HFTA_AGGR_UPDATE_(gs_sp_t b, vstring *v)
{
    for (gs_int32_t k = 0; k + 4 <= v->length; k += 4)
        array_append(held<std::string>(b), load<gs_uint32_t>(bytes(v) + k));
}

// ---------------------------------------------------------------- time_avg
// {sum, last value (double), last ts, window, first ts (i64), flags u32}
// = 44 bytes.  sum: the integral of the step function over the current
// window up to the last sample.

namespace {
struct time_avg {
    double sum;
    double last;
    gs_int64_t last_ts;
    gs_int64_t window;
    gs_int64_t first_ts;
    gs_uint32_t flags;   // 1: a sample seen, 2: one in this epoch
};
const size_t TIME_AVG_BYTES = 44;

gs_int64_t window_start(gs_int64_t ts, gs_int64_t w)
{
    gs_int64_t q = ts / w;
    if (ts % w != 0 && ts < 0)
        q--;
    return q * w;
}

void time_avg_update(gs_sp_t b, double v, gs_int64_t ts, gs_int64_t window)
{
    time_avg a;
    std::memcpy(&a, b, TIME_AVG_BYTES);
    a.window = window > 0 ? window : 1;
    if (!(a.flags & 1)) {
        a.first_ts = ts;
    } else if (a.flags & 2) {
        a.sum += (double)(ts - a.last_ts) * a.last;
    } else {
        // the first sample of a window: the one before holds from its start
        gs_int64_t w0 = window_start(ts, a.window);
        gs_int64_t from = std::max(w0, a.first_ts);
        a.sum = (double)(ts - from) * a.last;
    }
    a.last = v;
    a.last_ts = ts;
    a.flags = 3;
    std::memcpy(b, &a, TIME_AVG_BYTES);
}
}  // namespace

GSQ_LIB void time_avg_HFTA_AGGR_INIT_(gs_sp_t b) { std::memset(b, 0, TIME_AVG_BYTES); }
GSQ_LIB void time_avg_HFTA_AGGR_REINIT_(gs_sp_t b)
{
    time_avg a;
    std::memcpy(&a, b, TIME_AVG_BYTES);
    a.flags &= ~2u;
    a.sum = 0;
    std::memcpy(b, &a, TIME_AVG_BYTES);
}
GSQ_LIB void time_avg_HFTA_AGGR_UPDATE_(gs_sp_t b, gs_uint32_t v, gs_int64_t ts, gs_int64_t w)
{
    time_avg_update(b, (double)v, ts, w);
}
GSQ_LIB void time_avg_HFTA_AGGR_UPDATE_(gs_sp_t b, gs_int32_t v, gs_int64_t ts, gs_int64_t w)
{
    time_avg_update(b, (double)v, ts, w);
}
GSQ_LIB void time_avg_HFTA_AGGR_UPDATE_(gs_sp_t b, gs_uint64_t v, gs_int64_t ts, gs_int64_t w)
{
    time_avg_update(b, (double)v, ts, w);
}
GSQ_LIB void time_avg_HFTA_AGGR_UPDATE_(gs_sp_t b, gs_int64_t v, gs_int64_t ts, gs_int64_t w)
{
    time_avg_update(b, (double)v, ts, w);
}
GSQ_LIB void time_avg_HFTA_AGGR_UPDATE_(gs_sp_t b, gs_float_t v, gs_int64_t ts, gs_int64_t w)
{
    time_avg_update(b, v, ts, w);
}
GSQ_LIB void time_avg_HFTA_AGGR_OUTPUT_(gs_float_t *r, gs_sp_t b)
{
    time_avg a;
    std::memcpy(&a, b, TIME_AVG_BYTES);
    if (!(a.flags & 2)) {    // no sample in this window: the value held throughout
        *r = a.last;
        return;
    }
    gs_int64_t w0 = window_start(a.last_ts, a.window), end = w0 + a.window;
    gs_int64_t from = std::max(w0, a.first_ts);
    double total = a.sum + (double)(end - a.last_ts) * a.last;
    *r = end > from ? total / (double)(end - from) : a.last;
}
GSQ_LIB void time_avg_HFTA_AGGR_DESTROY_(gs_sp_t b) { (void)b; }

// ---------------------------------------------------------------- run_sum_max
// {sum i64, max i64}: the result is those 16 bytes

namespace {
void run_sum_max_add(gs_sp_t b, gs_int64_t v)
{
    gs_int64_t s = (gs_int64_t)((gs_uint64_t)load<gs_int64_t>(b) + (gs_uint64_t)v);
    store<gs_int64_t>(b, s);
    if (s > load<gs_int64_t>(b + 8))
        store<gs_int64_t>(b + 8, s);
}
}  // namespace

GSQ_LIB void run_sum_max_HFTA_AGGR_INIT_(gs_sp_t b) { std::memset(b, 0, 16); }
GSQ_LIB void run_sum_max_HFTA_AGGR_REINIT_(gs_sp_t b) { std::memcpy(b + 8, b, 8); }
GSQ_LIB void run_sum_max_HFTA_AGGR_UPDATE_(gs_sp_t b, gs_uint32_t v) { run_sum_max_add(b, v); }
GSQ_LIB void run_sum_max_HFTA_AGGR_UPDATE_(gs_sp_t b, gs_int32_t v) { run_sum_max_add(b, v); }
GSQ_LIB void run_sum_max_HFTA_AGGR_UPDATE_(gs_sp_t b, gs_uint64_t v)
{
    run_sum_max_add(b, (gs_int64_t)v);
}
GSQ_LIB void run_sum_max_HFTA_AGGR_UPDATE_(gs_sp_t b, gs_int64_t v) { run_sum_max_add(b, v); }
GSQ_LIB void run_sum_max_HFTA_AGGR_OUTPUT_(vstring *r, gs_sp_t b) { shallow(r, b, 16); }
GSQ_LIB void run_sum_max_HFTA_AGGR_DESTROY_(gs_sp_t b) { (void)b; }

GSQ_LIB gs_int64_t extr_running_sum(vstring *v)
{
    return v->length == 16 ? load<gs_int64_t>(bytes(v)) : 0;
}
GSQ_LIB gs_int64_t extr_running_sum_max(vstring *v)
{
    return v->length == 16 ? load<gs_int64_t>(bytes(v) + 8) : 0;
}

// ---------------------------------------------------------------- approx_count_distinct
// HyperLogLog: GSQ_HLL_M one-byte registers (gsqlc_udaf_lib.h), the
// 1000-byte scratchpad.  Strings hash their bytes, integers their value.
// Standard error 1.04/sqrt(1000).  Split over integers: each LFTA partial
// is a sketch, merged here by the larger register.

namespace {
const unsigned HLL_M = GSQ_HLL_M;

unsigned char *registers(gs_sp_t b) { return reinterpret_cast<unsigned char *>(b); }
void hll_add(gs_sp_t b, const vstring *v) { gsq_hll_add(registers(b), gsq_lib_hash(bytes(v), v->length)); }
void hll_add(gs_sp_t b, gs_int64_t v) { gsq_hll_add(registers(b), gsq_lib_hash_int((gs_uint64_t)v)); }
void hll_add(gs_sp_t b, gs_uint64_t v) { gsq_hll_add(registers(b), gsq_lib_hash_int(v)); }
}  // namespace

#define GSQ_HLL_UPDATES(NAME)                                                                  \
    GSQ_LIB void NAME##_HFTA_AGGR_UPDATE_(gs_sp_t b, vstring *v) { hll_add(b, v); }            \
    GSQ_LIB void NAME##_HFTA_AGGR_UPDATE_(gs_sp_t b, gs_uint32_t v) { hll_add(b, (gs_uint64_t)v); } \
    GSQ_LIB void NAME##_HFTA_AGGR_UPDATE_(gs_sp_t b, gs_int32_t v) { hll_add(b, (gs_int64_t)v); } \
    GSQ_LIB void NAME##_HFTA_AGGR_UPDATE_(gs_sp_t b, gs_uint64_t v) { hll_add(b, v); }         \
    GSQ_LIB void NAME##_HFTA_AGGR_UPDATE_(gs_sp_t b, gs_int64_t v) { hll_add(b, v); }          \
    GSQ_LIB void NAME##_HFTA_AGGR_OUTPUT_(vstring *r, gs_sp_t b) { shallow(r, b, HLL_M); }     \
    GSQ_LIB void NAME##_HFTA_AGGR_DESTROY_(gs_sp_t b) { (void)b; }

GSQ_LIB void approx_count_distinct_udaf_HFTA_AGGR_INIT_(gs_sp_t b) { std::memset(b, 0, HLL_M); }
GSQ_HLL_UPDATES(approx_count_distinct_udaf)

GSQ_LIB void running_approx_count_distinct_udaf_HFTA_AGGR_INIT_(gs_sp_t b)
{
    std::memset(b, 0, HLL_M);
}
GSQ_LIB void running_approx_count_distinct_udaf_HFTA_AGGR_REINIT_(gs_sp_t b) { (void)b; }
GSQ_HLL_UPDATES(running_approx_count_distinct_udaf)

// over LFTA partials (sketches): the larger register wins
GSQ_LIB void approx_count_distinct_hfta_HFTA_AGGR_INIT_(gs_sp_t b) { std::memset(b, 0, HLL_M); }
GSQ_LIB void approx_count_distinct_hfta_HFTA_AGGR_UPDATE_(gs_sp_t b, vstring *v)
{
    if (v->length != (gs_int32_t)HLL_M)
        return;
    const unsigned char *p = reinterpret_cast<const unsigned char *>(bytes(v));
    unsigned char *reg = registers(b);
    for (unsigned j = 0; j < HLL_M; j++)
        reg[j] = p[j] > reg[j] ? p[j] : reg[j];
}
GSQ_LIB void approx_count_distinct_hfta_HFTA_AGGR_OUTPUT_(vstring *r, gs_sp_t b)
{
    shallow(r, b, HLL_M);
}
GSQ_LIB void approx_count_distinct_hfta_HFTA_AGGR_DESTROY_(gs_sp_t b) { (void)b; }

GSQ_LIB gs_float_t extr_approx_count_distinct(vstring *v)
{
    if (v->length != (gs_int32_t)HLL_M)
        return 0;
    const unsigned char *reg = (const unsigned char *)bytes(v);
    double z = 0;
    unsigned zeros = 0;
    for (unsigned j = 0; j < HLL_M; j++) {
        z += std::ldexp(1.0, -(int)reg[j]);
        zeros += reg[j] == 0;
    }
    const double m = HLL_M, alpha = 0.7213 / (1 + 1.079 / m);
    double e = alpha * m * m / z;
    if (e <= 2.5 * m && zeros > 0)
        e = m * std::log(m / zeros);   // linear counting for small counts
    return e;
}
