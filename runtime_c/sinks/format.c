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

uint32_t gsq_type_size(int type)
{
    switch (type) {
    case GSQ_T_BOOL: return 1;
    case GSQ_T_USHORT: return 2;
    case GSQ_T_UINT: case GSQ_T_INT: case GSQ_T_IP: return 4;
    case GSQ_T_ULLONG: case GSQ_T_LLONG: case GSQ_T_FLOAT: return 8;
    case GSQ_T_IPV6: return 16;
    case GSQ_T_STRING: return (uint32_t)sizeof(gsq_strref);
    default: return 0;
    }
}

int gsq_read_col(const void *tup, uint32_t len, const gsq_column *c, gsq_val *v)
{
    const uint8_t *p = (const uint8_t *)tup + c->offset;
    uint32_t sz = gsq_type_size(c->type);
    memset(v, 0, sizeof *v);
    if (sz == 0 || c->offset > len || sz > len - c->offset)
        return -1;
    switch (c->type) {
    case GSQ_T_BOOL: v->u = p[0] ? 1 : 0; break;
    case GSQ_T_USHORT: { uint16_t x; memcpy(&x, p, 2); v->u = x; break; }
    case GSQ_T_UINT: case GSQ_T_IP: { uint32_t x; memcpy(&x, p, 4); v->u = x; break; }
    case GSQ_T_INT: { int32_t x; memcpy(&x, p, 4); v->i = x; break; }
    case GSQ_T_ULLONG: memcpy(&v->u, p, 8); break;
    case GSQ_T_LLONG: memcpy(&v->i, p, 8); break;
    case GSQ_T_FLOAT: memcpy(&v->f, p, 8); break;
    case GSQ_T_IPV6: memcpy(v->v6.b, p, 16); break;
    case GSQ_T_STRING: {
        gsq_strref r;
        memcpy(&r, p, sizeof r);
        if (r.off > len || r.len > len - r.off)
            return -1;
        v->s = gsq_tuple_str(tup, r);
        break;
    }
    }
    return 0;
}

/* Decimal digits of v into out (no terminator); returns the count.  Sinks
 * format millions of integers: printf's generality costs more than the
 * query itself. */
static size_t fmt_u64(char *out, uint64_t v)
{
    static const char pairs[] =
        "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
        "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
        "8081828384858687888990919293949596979899";
    char tmp[24];
    size_t k = sizeof tmp;
    while (v >= 100) {
        unsigned r = (unsigned)(v % 100);
        v /= 100;
        tmp[--k] = pairs[2 * r + 1];
        tmp[--k] = pairs[2 * r];
    }
    if (v >= 10) {
        tmp[--k] = pairs[2 * v + 1];
        tmp[--k] = pairs[2 * v];
    } else {
        tmp[--k] = (char)('0' + v);
    }
    memcpy(out, tmp + k, sizeof tmp - k);
    return sizeof tmp - k;
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

void gsq_fmt_ip(char *out, uint32_t ip)
{
    size_t k = 0;
    for (int shift = 24; shift >= 0; shift -= 8) {
        k += fmt_u64(out + k, (ip >> shift) & 255u);
        if (shift)
            out[k++] = '.';
    }
    out[k] = '\0';
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
    case GSQ_T_IP: gsq_fmt_ip(out, (uint32_t)v->u); return strlen(out);
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
    case GSQ_T_IP: gsq_fmt_ip(tmp, (uint32_t)v->u); gsq_buf_adds(b, tmp); break;
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
    case GSQ_T_IP: gsq_fmt_ip(tmp, (uint32_t)v->u); gsq_buf_json_str(b, tmp, strlen(tmp)); break;
    case GSQ_T_IPV6: gsq_fmt_ipv6(tmp, &v->v6); gsq_buf_json_str(b, tmp, strlen(tmp)); break;
    case GSQ_T_STRING: gsq_buf_json_str(b, v->s.p, v->s.len); break;
    default: gsq_fmt_text(b, type, v); break;
    }
}
