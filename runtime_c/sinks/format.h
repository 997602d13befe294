/*
 * format.h -- reading columns out of serialized tuples and rendering values
 * as text (Tigon's forms) and JSON, for the sinks.
 *
 * Text forms: integers decimal; float "%f"; bool TRUE/FALSE; IP dotted
 * quad; IPV6 eight groups of four lower-case hex digits joined by ':' (no
 * compression); strings raw.  Under the run option ip_format=int an IP
 * prints as its unsigned 32-bit integer and an IPV6 as its unsigned
 * 128-bit integer (decimal), through the format-only type GSQ_FMT_T_U128.
 */
#ifndef GSQ_FORMAT_H
#define GSQ_FORMAT_H

#include <string.h>

#include "gsq_runtime.h"
#include "strbuf.h"

#ifdef __cplusplus
extern "C" { /* gsqlc._native (compiler/native) formats IP values with it */
#endif

/* One column value read from a tuple; the member used follows the type. */
typedef union gsq_val {
    uint64_t u;   /* bool, ushort, uint, ullong, IP */
    int64_t i;    /* int, llong */
    double f;
    gsq_ipv6 v6;
    gsq_str s;    /* a view into the tuple */
} gsq_val;

const char *gsq_type_name(int type);
/* Bytes a column of this type takes in a stream's fixed struct (0: unknown). */
static inline uint32_t gsq_type_size(int type)
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

/* Read column c of a tuple of len bytes.  0, or -1 when the column or its
 * string reference lies outside the tuple (a broken tuple).  Inline: sinks
 * read every column of every row. */
static inline int gsq_read_col(const void *tup, uint32_t len, const gsq_column *c,
                               gsq_val *v)
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

/* A format-only type code (no column has it): a 16-byte value printed as
 * its big-endian unsigned 128-bit integer. */
#define GSQ_FMT_T_U128 100

/* The type a value of column type `type` is printed as: itself, or with
 * ip_int (option ip_format=int) an IP as a uint and an IPV6 as a U128. */
static inline int gsq_fmt_type(int type, int ip_int)
{
    if (!ip_int)
        return type;
    return type == GSQ_T_IP ? GSQ_T_UINT : type == GSQ_T_IPV6 ? GSQ_FMT_T_U128 : type;
}

/* Text form (pipe and CSV sinks). */
void gsq_fmt_text(gsq_buf *b, int type, const gsq_val *v);
/* JSON form: numbers, true/false, null for NaN/Inf floats, strings. */
void gsq_fmt_json(gsq_buf *b, int type, const gsq_val *v);
/* out must hold 16 / 40 bytes; gsq_fmt_ip returns the length (without
 * the terminator it writes). */
size_t gsq_fmt_ip(char *out, uint32_t ip);
/* The text form of a non-string value, written unchecked into out, which
 * must have gsq_fmt_max_width(type) + 1 bytes; returns the length. */
size_t gsq_fmt_max_width(int type);
size_t gsq_fmt_text_raw(char *out, int type, const gsq_val *v);
void gsq_fmt_ipv6(char *out, const gsq_ipv6 *a);

#ifdef __cplusplus
}
#endif

#endif /* GSQ_FORMAT_H */
