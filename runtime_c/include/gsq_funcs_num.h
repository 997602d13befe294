/*
 * gsq_funcs_num.h -- the catalog's numeric scalar functions (included by
 * gsq_funcs.h): the MIN/MAX families of GS-lite's external_fcns.def
 * (ULLMIN, LLMIN, UMIN, LMIN, FMIN and their MAX), the comparisons EQ, GEQ,
 * GE, LEQ, LE, float-to-integer conversions that never overflow, the math
 * functions.  All static inline, no state; defined for every input.
 *
 * The families take any two numbers.  Generated code passes each argument
 * as one of three kinds -- u (uint64_t: bool, ushort, uint, IP, ullong),
 * s (int64_t: int, llong), f (double) -- and calls the helper named by the
 * kinds, e.g. gsq_fn_lmin_sf(int64_t, double).  Numbers are compared by
 * their mathematical values (-1 < 4294967295u, 2^53 + 1 > 2^53 as a float);
 * a NaN compares unordered with everything.
 */
#ifndef GSQ_FUNCS_NUM_H
#define GSQ_FUNCS_NUM_H

#include <math.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- exact comparison: -1 (a < b), 0 (a == b), 1 (a > b), 2 (unordered) */

static inline int gsq_cmp_uu(uint64_t a, uint64_t b) { return a < b ? -1 : a > b; }
static inline int gsq_cmp_ss(int64_t a, int64_t b) { return a < b ? -1 : a > b; }
static inline int gsq_cmp_su(int64_t a, uint64_t b)
{
    return a < 0 ? -1 : gsq_cmp_uu((uint64_t)a, b);
}
static inline int gsq_cmp_us(uint64_t a, int64_t b)
{
    return b < 0 ? 1 : gsq_cmp_uu(a, (uint64_t)b);
}
static inline int gsq_cmp_ff(double a, double b)
{
    if (a != a || b != b)
        return 2;
    return a < b ? -1 : a > b;
}
/* A float against an integer: the float's integral part (in range, so the
 * conversion is exact) decides, then its fractional part. */
static inline int gsq_cmp_fs(double a, int64_t b)
{
    int64_t t;
    double fr;
    if (a != a)
        return 2;
    if (a < -0x1p63)
        return -1;
    if (a >= 0x1p63)
        return 1;
    t = (int64_t)a;
    if (t != b)
        return t < b ? -1 : 1;
    fr = a - (double)t;
    return fr < 0 ? -1 : fr > 0;
}
static inline int gsq_cmp_fu(double a, uint64_t b)
{
    uint64_t t;
    if (a != a)
        return 2;
    if (a < 0)
        return -1;
    if (a >= 0x1p64)
        return 1;
    t = (uint64_t)a;
    if (t != b)
        return t < b ? -1 : 1;
    return a - (double)t > 0;
}
static inline int gsq_cmp__flip(int c) { return c == 2 ? 2 : -c; }
static inline int gsq_cmp_sf(int64_t a, double b) { return gsq_cmp__flip(gsq_cmp_fs(b, a)); }
static inline int gsq_cmp_uf(uint64_t a, double b) { return gsq_cmp__flip(gsq_cmp_fu(b, a)); }

/* ---- conversions ------------------------------------------------------ */

/* Float to integer: truncation toward zero, saturating at the type's
 * bounds; NaN gives 0. */
static inline uint64_t gsq_f2u64(double d)
{
    if (!(d > -1.0))
        return 0;
    if (d >= 0x1p64)
        return UINT64_MAX;
    return (uint64_t)d;
}
static inline int64_t gsq_f2i64(double d)
{
    if (d != d)
        return 0;
    if (d < -0x1p63)
        return INT64_MIN;
    if (d >= 0x1p63)
        return INT64_MAX;
    return (int64_t)d;
}
static inline uint32_t gsq_f2u32(double d)
{
    if (!(d > -1.0))
        return 0;
    if (d >= 0x1p32)
        return UINT32_MAX;
    return (uint32_t)d;
}
static inline int32_t gsq_f2i32(double d)
{
    if (d != d)
        return 0;
    if (d <= -2147483649.0)
        return INT32_MIN;
    if (d >= 2147483648.0)
        return INT32_MAX;
    return (int32_t)d;
}
static inline uint16_t gsq_f2u16(double d)
{
    if (!(d > -1.0))
        return 0;
    if (d >= 65536.0)
        return UINT16_MAX;
    return (uint16_t)d;
}
/* The low 32 bits as a two's-complement int, without implementation-
 * defined conversions. */
static inline int32_t gsq_u32_to_i32(uint32_t v)
{
    return v <= (uint32_t)INT32_MAX ? (int32_t)v
                                    : (int32_t)(v - 2147483648u) - INT32_MAX - 1;
}

/* To a result type R (ull: uint64_t, u: uint32_t, l: int32_t, f: double)
 * from an argument kind: integers wrap (modulo 2^bits), floats saturate. */
#define GSQ__TO_ull_u(x) (x)
#define GSQ__TO_ull_s(x) ((uint64_t)(x))
#define GSQ__TO_ull_f(x) gsq_f2u64(x)
#define GSQ__TO_u_u(x) ((uint32_t)(x))
#define GSQ__TO_u_s(x) ((uint32_t)(uint64_t)(x))
#define GSQ__TO_u_f(x) gsq_f2u32(x)
#define GSQ__TO_l_u(x) gsq_u32_to_i32((uint32_t)(x))
#define GSQ__TO_l_s(x) gsq_u32_to_i32((uint32_t)(uint64_t)(x))
#define GSQ__TO_l_f(x) gsq_f2i32(x)
#define GSQ__TO_f_u(x) ((double)(x))
#define GSQ__TO_f_s(x) ((double)(x))
#define GSQ__TO_f_f(x) (x)

/* ---- the MIN/MAX families --------------------------------------------- */

/* NAME_xy(a, b): b when b compares WANT (-1: less, 1: greater) to a,
 * otherwise a (so equal or unordered arguments give a), as type R. */
#define GSQ__MM1(NAME, R, RT, WANT, KX, TX, KY, TY)                          \
    static inline RT gsq_fn_##NAME##_##KX##KY(TX a, TY b)                    \
    {                                                                        \
        return gsq_cmp_##KY##KX(b, a) == (WANT) ? GSQ__TO_##R##_##KY(b)     \
                                                : GSQ__TO_##R##_##KX(a);     \
    }
#define GSQ__MM(NAME, R, RT, WANT)                                           \
    GSQ__MM1(NAME, R, RT, WANT, u, uint64_t, u, uint64_t)                    \
    GSQ__MM1(NAME, R, RT, WANT, u, uint64_t, s, int64_t)                     \
    GSQ__MM1(NAME, R, RT, WANT, u, uint64_t, f, double)                      \
    GSQ__MM1(NAME, R, RT, WANT, s, int64_t, u, uint64_t)                     \
    GSQ__MM1(NAME, R, RT, WANT, s, int64_t, s, int64_t)                      \
    GSQ__MM1(NAME, R, RT, WANT, s, int64_t, f, double)                       \
    GSQ__MM1(NAME, R, RT, WANT, f, double, u, uint64_t)                      \
    GSQ__MM1(NAME, R, RT, WANT, f, double, s, int64_t)                       \
    GSQ__MM1(NAME, R, RT, WANT, f, double, f, double)

GSQ__MM(ullmin, ull, uint64_t, -1)
GSQ__MM(ullmax, ull, uint64_t, 1)
GSQ__MM(umin, u, uint32_t, -1)
GSQ__MM(umax, u, uint32_t, 1)
GSQ__MM(lmin, l, int32_t, -1)
GSQ__MM(lmax, l, int32_t, 1)
GSQ__MM(fmin, f, double, -1)
GSQ__MM(fmax, f, double, 1)

/* ---- EQ, GEQ, GE, LEQ, LE: 1 or 0 (0 when a NaN is compared) ------------ */

#define GSQ__CMP1(NAME, TEST, KX, TX, KY, TY)                                \
    static inline uint32_t gsq_fn_##NAME##_##KX##KY(TX a, TY b)              \
    {                                                                        \
        int c = gsq_cmp_##KX##KY(a, b);                                      \
        return (uint32_t)(TEST);                                             \
    }
#define GSQ__CMP(NAME, TEST)                                                 \
    GSQ__CMP1(NAME, TEST, u, uint64_t, u, uint64_t)                          \
    GSQ__CMP1(NAME, TEST, u, uint64_t, s, int64_t)                           \
    GSQ__CMP1(NAME, TEST, u, uint64_t, f, double)                            \
    GSQ__CMP1(NAME, TEST, s, int64_t, u, uint64_t)                           \
    GSQ__CMP1(NAME, TEST, s, int64_t, s, int64_t)                            \
    GSQ__CMP1(NAME, TEST, s, int64_t, f, double)                             \
    GSQ__CMP1(NAME, TEST, f, double, u, uint64_t)                            \
    GSQ__CMP1(NAME, TEST, f, double, s, int64_t)                             \
    GSQ__CMP1(NAME, TEST, f, double, f, double)

GSQ__CMP(eq, c == 0)
GSQ__CMP(geq, c == 0 || c == 1)
GSQ__CMP(ge, c == 1)
GSQ__CMP(leq, c == -1 || c == 0)
GSQ__CMP(le, c == -1)

#undef GSQ__MM
#undef GSQ__MM1
#undef GSQ__CMP
#undef GSQ__CMP1

/* ---- math (C's <math.h>: NaN or an infinity outside the domain) --------- */

static inline double gsq_fn_sqrt(double x) { return sqrt(x); }
static inline double gsq_fn_pow(double x, double y) { return pow(x, y); }
static inline double gsq_fn_sin(double x) { return sin(x); }
static inline double gsq_fn_cos(double x) { return cos(x); }
static inline double gsq_fn_tan(double x) { return tan(x); }
static inline double gsq_fn_asin(double x) { return asin(x); }
static inline double gsq_fn_acos(double x) { return acos(x); }
static inline double gsq_fn_atan(double x) { return atan(x); }
static inline double gsq_fn_log(double x) { return log(x); }
static inline double gsq_fn_log2(double x) { return log2(x); }
static inline double gsq_fn_log10(double x) { return log10(x); }
static inline double gsq_fn_ceil(double x) { return ceil(x); }
static inline double gsq_fn_floor(double x) { return floor(x); }
static inline double gsq_fn_fmod(double x, double y) { return fmod(x, y); }
static inline double gsq_fn_trunc(double x) { return trunc(x); }

/* endian_swap_ui(x): the four bytes of x in the opposite order. */
static inline uint32_t gsq_fn_endian_swap_ui(uint32_t x)
{
    return (x >> 24) | ((x >> 8) & 0xff00u) | ((x << 8) & 0xff0000u) | (x << 24);
}

#ifdef __cplusplus
}
#endif

#endif /* GSQ_FUNCS_NUM_H */
