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

#include "gsq_runtime.h"
#include "strbuf.h"

/* One column value read from a tuple; the member used follows the type. */
typedef union gsq_val {
    uint64_t u;   /* bool, ushort, uint, ullong, IP */
    int64_t i;    /* int, llong */
    double f;
    gsq_ipv6 v6;
    gsq_str s;    /* a view into the tuple */
} gsq_val;

/* Read column c of a tuple of len bytes.  0, or -1 when the column or its
 * string reference lies outside the tuple (a broken tuple). */
int gsq_read_col(const void *tup, uint32_t len, const gsq_column *c, gsq_val *v);

const char *gsq_type_name(int type);
/* Bytes a column of this type takes in a stream's fixed struct (0: unknown). */
uint32_t gsq_type_size(int type);

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
/* out must hold 16 / 40 bytes. */
void gsq_fmt_ip(char *out, uint32_t ip);
/* The text form of a non-string value, written unchecked into out, which
 * must have gsq_fmt_max_width(type) + 1 bytes; returns the length. */
size_t gsq_fmt_max_width(int type);
size_t gsq_fmt_text_raw(char *out, int type, const gsq_val *v);
void gsq_fmt_ipv6(char *out, const gsq_ipv6 *a);

#endif /* GSQ_FORMAT_H */
