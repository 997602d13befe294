/*
 * format.c -- column reading and value rendering for sinks.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"

const char *gsq_type_name(int type)
{
    switch (type) {
    case GSQ_T_BOOL: return "bool";
    case GSQ_T_USHORT: return "ushort";
    case GSQ_T_UINT: return "uint";
    case GSQ_T_INT: return "int";
    case GSQ_T_ULLONG: return "ullong";
    case GSQ_T_LLONG: return "llong";
    case GSQ_T_FLOAT: return "float";
    case GSQ_T_IP: return "IP";
    case GSQ_T_IPV6: return "IPV6";
    case GSQ_T_STRING: return "string";
    default: return "?";
    }
}

/* "00".."99": two digits per table look-up. */
static const char digit_pairs[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/* How many decimal digits v has (1 for 0): from its bit length, then one
 * comparison with a power of ten. */
static inline size_t dec_digits(uint64_t v)
{
    static const uint64_t pow10[20] = {
        1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull,
        100000000ull, 1000000000ull, 10000000000ull, 100000000000ull, 1000000000000ull,
        10000000000000ull, 100000000000000ull, 1000000000000000ull, 10000000000000000ull,
        100000000000000000ull, 1000000000000000000ull, 10000000000000000000ull};
    /* bits * log10(2), rounded down, is the count or one short of it; v | 1
     * has v's digits (a power of ten is even) and bits for 0 too */
    uint64_t u = v | 1u;
    unsigned bits = 64u - (unsigned)__builtin_clzll(u);
    size_t n = (bits * 1233u) >> 12;
    return n + (u >= pow10[n]);
}

/* Decimal digits of v into out (no terminator); returns the count.  Sinks
 * format millions of integers: printf's generality costs more than the
 * query itself, so the digits go straight to their places, two at a time
 * (in 32-bit arithmetic while the value fits it). */
static size_t fmt_u64(char *out, uint64_t v)
{
    size_t n = dec_digits(v);
    char *o = out + n;
    while (v > UINT32_MAX) {
        unsigned r = (unsigned)(v % 100u);
        v /= 100u;
        o -= 2;
        memcpy(o, digit_pairs + 2 * r, 2);
    }
    uint32_t w = (uint32_t)v;
    while (w >= 100u) {
        unsigned r = w % 100u;
        w /= 100u;
        o -= 2;
        memcpy(o, digit_pairs + 2 * r, 2);
    }
    if (w >= 10u) {
        o -= 2;
        memcpy(o, digit_pairs + 2 * w, 2);
    } else {
        *--o = (char)('0' + w);
    }
    return n;
}

static size_t fmt_i64(char *out, int64_t v)
{
    if (v < 0) {
        out[0] = '-';
        return 1 + fmt_u64(out + 1, (uint64_t)0 - (uint64_t)v);
    }
    return fmt_u64(out, (uint64_t)v);
}

/* The decimal digits of a 16-byte big-endian unsigned integer (at most
 * 39), by repeated division by 10 of its bytes; out needs 40 bytes. */
static size_t fmt_u128(char *out, const gsq_ipv6 *a)
{
    uint8_t n[16];
    char rev[40];
    size_t k = 0, i;
    int nonzero = 1;
    memcpy(n, a->b, 16);
    while (nonzero) {
        unsigned rem = 0;
        nonzero = 0;
        for (i = 0; i < 16; i++) {
            unsigned cur = rem * 256u + n[i];
            n[i] = (uint8_t)(cur / 10u);
            rem = cur % 10u;
            nonzero |= n[i];
        }
        rev[k++] = (char)('0' + rem);
    }
    for (i = 0; i < k; i++)
        out[i] = rev[k - 1 - i];
    out[k] = '\0';
    return k;
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
/* The text of each octet value as one word: its digits from the lowest
 * byte up (no leading zeros), its length in the top byte.  Built by the
 * compiler from the macros below. */
#define OCT_LEN(x) ((x) >= 100 ? 3u : (x) >= 10 ? 2u : 1u)
#define OCT_DIGITS(x)                                                                   \
    ((x) >= 100 ? (uint32_t)('0' + (x) / 100) | (uint32_t)('0' + (x) / 10 % 10) << 8     \
                      | (uint32_t)('0' + (x) % 10) << 16                                 \
     : (x) >= 10 ? (uint32_t)('0' + (x) / 10) | (uint32_t)('0' + (x) % 10) << 8          \
                 : (uint32_t)('0' + (x)))
#define OCT(x) (OCT_DIGITS(x) | OCT_LEN(x) << 24)
#define OCT4(x) OCT(x), OCT((x) + 1), OCT((x) + 2), OCT((x) + 3)
#define OCT16(x) OCT4(x), OCT4((x) + 4), OCT4((x) + 8), OCT4((x) + 12)
#define OCT64(x) OCT16(x), OCT16((x) + 16), OCT16((x) + 32), OCT16((x) + 48)
static const uint32_t octet_text[256] = {OCT64(0), OCT64(64), OCT64(128), OCT64(192)};

/* One octet (0..255) of a dotted quad at o; returns the end.  Addresses
 * are random to a branch predictor: one look-up and one 4-byte store (its
 * last byte is overwritten by what follows: out has room, see
 * gsq_fmt_max_width). */
static inline char *put_octet(char *o, unsigned x)
{
    uint32_t w = octet_text[x];
    memcpy(o, &w, 4);
    return o + (w >> 24);
}
#else
static inline char *put_octet(char *o, unsigned x)
{
    if (x >= 100u) {
        unsigned h = x >= 200u ? 2u : 1u;
        *o++ = (char)('0' + h);
        x -= 100u * h;
        memcpy(o, digit_pairs + 2 * x, 2);
        return o + 2;
    }
    if (x >= 10u) {
        memcpy(o, digit_pairs + 2 * x, 2);
        return o + 2;
    }
    *o++ = (char)('0' + x);
    return o;
}
#endif

size_t gsq_fmt_ip(char *out, uint32_t ip)
{
    char *o = put_octet(out, ip >> 24);
    *o++ = '.';
    o = put_octet(o, (ip >> 16) & 255u);
    *o++ = '.';
    o = put_octet(o, (ip >> 8) & 255u);
    *o++ = '.';
    o = put_octet(o, ip & 255u);
    *o = '\0';
    return (size_t)(o - out);
}

size_t gsq_fmt_max_width(int type)
{
    switch (type) {
    case GSQ_T_BOOL: return 5;
    case GSQ_T_IP: return 15;
    case GSQ_T_IPV6: case GSQ_FMT_T_U128: return 39;
    case GSQ_T_FLOAT: return 330; /* "%f" of -DBL_MAX: 309 digits, point, 6 decimals */
    default: return 20;
    }
}

size_t gsq_fmt_text_raw(char *out, int type, const gsq_val *v)
{
    switch (type) {
    case GSQ_T_BOOL:
        memcpy(out, v->u ? "TRUE" : "FALSE", v->u ? 4 : 5);
        return v->u ? 4 : 5;
    case GSQ_T_USHORT: case GSQ_T_UINT: case GSQ_T_ULLONG: return fmt_u64(out, v->u);
    case GSQ_T_INT: case GSQ_T_LLONG: return fmt_i64(out, v->i);
    case GSQ_T_FLOAT: {
        int n = snprintf(out, 331, "%f", v->f);
        return n < 0 ? 0 : (size_t)n;
    }
    case GSQ_T_IP: return gsq_fmt_ip(out, (uint32_t)v->u);
    case GSQ_T_IPV6: gsq_fmt_ipv6(out, &v->v6); return 39;
    case GSQ_FMT_T_U128: return fmt_u128(out, &v->v6);
    default: return 0;
    }
}

void gsq_fmt_ipv6(char *out, const gsq_ipv6 *a)
{
    static const char hex[] = "0123456789abcdef";
    int g, k = 0;
    for (g = 0; g < 8; g++) {
        unsigned hi = a->b[2 * g], lo = a->b[2 * g + 1];
        if (g)
            out[k++] = ':';
        out[k++] = hex[hi >> 4];
        out[k++] = hex[hi & 15];
        out[k++] = hex[lo >> 4];
        out[k++] = hex[lo & 15];
    }
    out[k] = '\0';
}

void gsq_fmt_text(gsq_buf *b, int type, const gsq_val *v)
{
    char tmp[48];
    switch (type) {
    case GSQ_T_BOOL: gsq_buf_adds(b, v->u ? "TRUE" : "FALSE"); break;
    case GSQ_T_USHORT: case GSQ_T_UINT: case GSQ_T_ULLONG:
        gsq_buf_add(b, tmp, fmt_u64(tmp, v->u));
        break;
    case GSQ_T_INT: case GSQ_T_LLONG:
        gsq_buf_add(b, tmp, fmt_i64(tmp, v->i));
        break;
    case GSQ_T_FLOAT: gsq_buf_printf(b, "%f", v->f); break;
    case GSQ_T_IP: gsq_buf_add(b, tmp, gsq_fmt_ip(tmp, (uint32_t)v->u)); break;
    case GSQ_T_IPV6: gsq_fmt_ipv6(tmp, &v->v6); gsq_buf_adds(b, tmp); break;
    case GSQ_FMT_T_U128: gsq_buf_add(b, tmp, fmt_u128(tmp, &v->v6)); break;
    case GSQ_T_STRING: gsq_buf_add(b, v->s.p, v->s.len); break;
    }
}

/* The shortest decimal that reads back as the same double (433.02, not
 * 433.01999999999998): JSON readers parse it to the identical value. */
static void fmt_json_double(gsq_buf *b, double d)
{
    char tmp[40];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, d);
        if (prec == 17 || strtod(tmp, NULL) == d)
            break;
    }
    gsq_buf_adds(b, tmp);
}

void gsq_fmt_json(gsq_buf *b, int type, const gsq_val *v)
{
    char tmp[48];
    switch (type) {
    case GSQ_T_BOOL: gsq_buf_adds(b, v->u ? "true" : "false"); break;
    case GSQ_T_FLOAT:
        if (isnan(v->f) || isinf(v->f))
            gsq_buf_adds(b, "null");
        else
            fmt_json_double(b, v->f);
        break;
    case GSQ_T_IP: gsq_buf_json_str(b, tmp, gsq_fmt_ip(tmp, (uint32_t)v->u)); break;
    case GSQ_T_IPV6: gsq_fmt_ipv6(tmp, &v->v6); gsq_buf_json_str(b, tmp, strlen(tmp)); break;
    case GSQ_T_STRING: gsq_buf_json_str(b, v->s.p, v->s.len); break;
    default: gsq_fmt_text(b, type, v); break;
    }
}
