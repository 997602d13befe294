/*
 * arrow_in.c -- reading Arrow record batches into GSQL values (see
 * arrow_in.h).
 */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "arrow_in.h"

/* ---- formats ---------------------------------------------------------- */

void gsq_arrow_classify(const struct ArrowSchema *s, gsq_arrow_col *c)
{
    const char *f = s && s->format ? s->format : "";
    c->cat = GSQ_AC_NONE;
    c->width = 0;
    c->format = f;
    if (s && s->dictionary) {
        c->cat = GSQ_AC_DICT;
        return;
    }
    if (strcmp(f, "w:16") == 0) {
        c->cat = GSQ_AC_FSB16;
        c->width = 16;
        return;
    }
    if (!f[0] || f[1])
        return;
    switch (f[0]) {
    case 'b': c->cat = GSQ_AC_BOOL; break;
    case 'c': c->cat = GSQ_AC_INT; c->width = 1; break;
    case 'C': c->cat = GSQ_AC_UINT; c->width = 1; break;
    case 's': c->cat = GSQ_AC_INT; c->width = 2; break;
    case 'S': c->cat = GSQ_AC_UINT; c->width = 2; break;
    case 'i': c->cat = GSQ_AC_INT; c->width = 4; break;
    case 'I': c->cat = GSQ_AC_UINT; c->width = 4; break;
    case 'l': c->cat = GSQ_AC_INT; c->width = 8; break;
    case 'L': c->cat = GSQ_AC_UINT; c->width = 8; break;
    case 'f': c->cat = GSQ_AC_F32; c->width = 4; break;
    case 'g': c->cat = GSQ_AC_F64; c->width = 8; break;
    case 'u': c->cat = GSQ_AC_UTF8; c->width = 4; break;
    case 'U': c->cat = GSQ_AC_UTF8; c->width = 8; break;
    case 'z': c->cat = GSQ_AC_BIN; c->width = 4; break;
    case 'Z': c->cat = GSQ_AC_BIN; c->width = 8; break;
    default: break;
    }
}

int gsq_arrow_compatible(int type, const gsq_arrow_col *c)
{
    int integer = c->cat == GSQ_AC_INT || c->cat == GSQ_AC_UINT;
    switch (type) {
    case GSQ_T_BOOL: return c->cat == GSQ_AC_BOOL || integer;
    case GSQ_T_USHORT: case GSQ_T_UINT: case GSQ_T_INT: case GSQ_T_ULLONG: case GSQ_T_LLONG:
        return integer;
    case GSQ_T_FLOAT: return c->cat == GSQ_AC_F32 || c->cat == GSQ_AC_F64 || integer;
    case GSQ_T_IP: return integer || c->cat == GSQ_AC_UTF8;
    case GSQ_T_IPV6: /* binary: 16-byte values (Spark's BinaryType of ip_format='int') */
        return c->cat == GSQ_AC_FSB16 || c->cat == GSQ_AC_UTF8 || c->cat == GSQ_AC_BIN;
    case GSQ_T_STRING: return c->cat == GSQ_AC_UTF8 || c->cat == GSQ_AC_BIN;
    default: return 0;
    }
}

const char *gsq_arrow_expected(int type)
{
    switch (type) {
    case GSQ_T_BOOL: return "boolean or an integer type";
    case GSQ_T_USHORT: case GSQ_T_UINT: case GSQ_T_INT: case GSQ_T_ULLONG: case GSQ_T_LLONG:
        return "an integer type (int8 .. int64, uint8 .. uint64)";
    case GSQ_T_FLOAT: return "float32, float64 or an integer type";
    case GSQ_T_IP: return "an integer type (uint32) or utf8 text";
    case GSQ_T_IPV6: return "fixed_size_binary(16), binary of 16-byte values or utf8 text";
    case GSQ_T_STRING: return "utf8, large_utf8, binary or large_binary";
    default: return "?";
    }
}

static const char *format_name(const char *f)
{
    static const struct { const char *f, *name; } names[] = {
        {"n", "null"}, {"b", "boolean"}, {"c", "int8"}, {"C", "uint8"}, {"s", "int16"},
        {"S", "uint16"}, {"i", "int32"}, {"I", "uint32"}, {"l", "int64"}, {"L", "uint64"},
        {"e", "float16"}, {"f", "float32"}, {"g", "float64"}, {"u", "utf8"},
        {"U", "large_utf8"}, {"z", "binary"}, {"Z", "large_binary"}, {"vu", "string_view"},
        {"vz", "binary_view"}, {"tdD", "date32"}, {"tdm", "date64"}, {"+s", "struct"},
        {"+l", "list"}, {"+L", "large_list"},
    };
    size_t i;
    for (i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(f, names[i].f) == 0)
            return names[i].name;
    if (f[0] == 'w' && f[1] == ':')
        return "fixed_size_binary";
    if (f[0] == 'd' && f[1] == ':')
        return "decimal";
    if (f[0] == 't' && f[1] == 's')
        return "timestamp";
    if (f[0] == 't' && (f[1] == 't' || f[1] == 'D' || f[1] == 'i'))
        return "time or duration";
    return NULL;
}

void gsq_arrow_describe_format(gsq_buf *b, const char *format)
{
    const char *n = format_name(format);
    gsq_buf_addc(b, '\'');
    gsq_buf_quote_text(b, format, strlen(format), 40);
    gsq_buf_addc(b, '\'');
    if (n)
        gsq_buf_printf(b, " (%s)", n);
}

/* ---- names ------------------------------------------------------------ */

static const char *child_name(const struct ArrowSchema *schema, int64_t i)
{
    const struct ArrowSchema *c = schema->children ? schema->children[i] : NULL;
    return c && c->name ? c->name : "";
}

int64_t gsq_arrow_find(const struct ArrowSchema *schema, const char *name)
{
    int64_t i;
    for (i = 0; i < schema->n_children; i++)
        if (strcmp(child_name(schema, i), name) == 0)
            return i;
    for (i = 0; i < schema->n_children; i++)
        if (strcasecmp(child_name(schema, i), name) == 0)
            return i;
    return -1;
}

void gsq_arrow_list_columns(gsq_buf *b, const struct ArrowSchema *schema)
{
    int64_t i;
    if (schema->n_children == 0) {
        gsq_buf_adds(b, "none");
        return;
    }
    for (i = 0; i < schema->n_children && i < 40; i++) {
        const char *n = child_name(schema, i);
        if (i)
            gsq_buf_adds(b, ", ");
        gsq_buf_quote_text(b, n, strlen(n), 40);
    }
    if (schema->n_children > 40)
        gsq_buf_adds(b, ", ...");
}

/* ---- batches ---------------------------------------------------------- */

static int bit(const void *bitmap, int64_t i)
{
    return (((const uint8_t *)bitmap)[i >> 3] >> (i & 7)) & 1;
}

int gsq_arrow_check_batch(const struct ArrowArray *a, const struct ArrowSchema *schema,
                          const gsq_arrow_col *cols, const uint8_t *used, char *msg,
                          size_t msg_size)
{
    int64_t i;
    if (a->length < 0 || a->offset < 0 || a->offset > INT64_MAX - a->length ||
        a->n_buffers < 1 || !a->buffers) {
        snprintf(msg, msg_size, "a record batch is not a valid struct array");
        return -1;
    }
    if (a->n_children != schema->n_children || (a->n_children && !a->children)) {
        snprintf(msg, msg_size, "a record batch has %" PRId64 " columns, the schema %" PRId64,
                 a->n_children, schema->n_children);
        return -1;
    }
    for (i = 0; i < a->n_children; i++) {
        const struct ArrowArray *ch = a->children[i];
        const gsq_arrow_col *c = &cols[i];
        int64_t nb = (c->cat == GSQ_AC_UTF8 || c->cat == GSQ_AC_BIN) ? 3 : 2;
        if (!used[i])
            continue;
        if (!ch || !ch->release || ch->offset < 0 || ch->length < a->offset + a->length ||
            ch->offset > INT64_MAX - ch->length || ch->n_buffers != nb || !ch->buffers) {
            snprintf(msg, msg_size, "column %" PRId64 " of a record batch is not a valid %s array",
                     i + 1, c->format);
            return -1;
        }
        if (a->length > 0 && !ch->buffers[1]) { /* string bytes: see str_at */
            snprintf(msg, msg_size, "column %" PRId64 " of a record batch lacks its data buffer",
                     i + 1);
            return -1;
        }
    }
    return 0;
}

int gsq_arrow_row_null(const struct ArrowArray *a, int64_t row)
{
    return a->null_count != 0 && a->buffers[0] && !bit(a->buffers[0], a->offset + row);
}

/* ---- values ----------------------------------------------------------- */

/* The range an integer read as GSQL type `type` must lie in; 0 for a type
 * no integer converts to (FLOAT takes any, as a double). */
static int int_range(int type, int64_t *lo, uint64_t *hi)
{
    switch (type) {
    case GSQ_T_BOOL: *lo = 0; *hi = 1; return 1;
    case GSQ_T_USHORT: *lo = 0; *hi = UINT16_MAX; return 1;
    case GSQ_T_UINT: case GSQ_T_IP: *lo = 0; *hi = UINT32_MAX; return 1;
    case GSQ_T_INT: *lo = INT32_MIN; *hi = INT32_MAX; return 1;
    case GSQ_T_ULLONG: *lo = 0; *hi = UINT64_MAX; return 1;
    case GSQ_T_LLONG: *lo = INT64_MIN; *hi = INT64_MAX; return 1;
    default: return 0;
    }
}

static inline int signed_out_of_range(int64_t x, int64_t lo, uint64_t hi)
{
    return x < lo || (x > 0 && (uint64_t)x > hi);
}

/* An integer (x's bits; is_signed: read as int64_t) as GSQL type `type`
 * (int_range's rules): its bits for the integer types (v->u and v->i
 * alias), a double for FLOAT. */
static int from_int(int type, int is_signed, uint64_t x, gsq_csv_value *v)
{
    int64_t lo;
    uint64_t hi;
    if (type == GSQ_T_FLOAT) {
        v->f = is_signed ? (double)(int64_t)x : (double)x;
        return GSQ_AV_OK;
    }
    if (!int_range(type, &lo, &hi))
        return GSQ_AV_BROKEN;
    if (is_signed ? signed_out_of_range((int64_t)x, lo, hi) : x > hi)
        return GSQ_AV_RANGE;
    v->u = x;
    return GSQ_AV_OK;
}

static int64_t read_int(const void *data, int width, int64_t i)
{
    const uint8_t *p = (const uint8_t *)data + i * width;
    switch (width) {
    case 1: { int8_t x; memcpy(&x, p, 1); return x; }
    case 2: { int16_t x; memcpy(&x, p, 2); return x; }
    case 4: { int32_t x; memcpy(&x, p, 4); return x; }
    default: { int64_t x; memcpy(&x, p, 8); return x; }
    }
}

static uint64_t read_uint(const void *data, int width, int64_t i)
{
    const uint8_t *p = (const uint8_t *)data + i * width;
    switch (width) {
    case 1: return p[0];
    case 2: { uint16_t x; memcpy(&x, p, 2); return x; }
    case 4: { uint32_t x; memcpy(&x, p, 4); return x; }
    default: { uint64_t x; memcpy(&x, p, 8); return x; }
    }
}

/* The string between offsets a and b of `data`, whose bytes end at offset
 * `end` (the array's last offset: the C data interface sizes the data
 * buffer by it; the offsets between are the producer's, not trusted): 0,
 * or GSQ_AV_BROKEN / GSQ_AV_LONG (*s untouched). */
static inline int str_view(int64_t a, int64_t b, int64_t end, const char *data, gsq_str *s)
{
    if (a < 0 || b < a || b > end || (b > a && !data))
        return GSQ_AV_BROKEN;
    if (b - a > (int64_t)UINT32_MAX - 1)
        return GSQ_AV_LONG;
    s->p = b > a ? data + a : "";
    s->len = (uint32_t)(b - a);
    return GSQ_AV_OK;
}

/* The bytes of string element i: 0, or GSQ_AV_BROKEN / GSQ_AV_LONG. */
static int str_at(const struct ArrowArray *ch, const gsq_arrow_col *c, int64_t i, gsq_str *s)
{
    return str_view(read_int(ch->buffers[1], c->width, i),
                    read_int(ch->buffers[1], c->width, i + 1),
                    read_int(ch->buffers[1], c->width, ch->offset + ch->length),
                    (const char *)ch->buffers[2], s);
}

int gsq_arrow_value(const struct ArrowArray *ch, const gsq_arrow_col *c, int64_t idx, int type,
                    gsq_csv_value *v)
{
    int64_t i = ch->offset + idx;
    gsq_str s;
    int rc;
    memset(v, 0, sizeof *v);
    if (ch->null_count != 0 && ch->buffers[0] && !bit(ch->buffers[0], i)) {
        if (type == GSQ_T_STRING)
            v->s.p = "";
        return GSQ_AV_NULL;
    }
    switch (c->cat) {
    case GSQ_AC_BOOL:
        if (type != GSQ_T_BOOL)
            return GSQ_AV_BROKEN;
        v->u = (uint64_t)bit(ch->buffers[1], i);
        return GSQ_AV_OK;
    case GSQ_AC_INT:
        return from_int(type, 1, (uint64_t)read_int(ch->buffers[1], c->width, i), v);
    case GSQ_AC_UINT:
        return from_int(type, 0, read_uint(ch->buffers[1], c->width, i), v);
    case GSQ_AC_F32: {
        float f;
        memcpy(&f, (const uint8_t *)ch->buffers[1] + i * 4, 4);
        v->f = f;
        return type == GSQ_T_FLOAT ? GSQ_AV_OK : GSQ_AV_BROKEN;
    }
    case GSQ_AC_F64:
        memcpy(&v->f, (const uint8_t *)ch->buffers[1] + i * 8, 8);
        return type == GSQ_T_FLOAT ? GSQ_AV_OK : GSQ_AV_BROKEN;
    case GSQ_AC_FSB16:
        memcpy(v->v6.b, (const uint8_t *)ch->buffers[1] + i * 16, 16);
        return type == GSQ_T_IPV6 ? GSQ_AV_OK : GSQ_AV_BROKEN;
    case GSQ_AC_UTF8: case GSQ_AC_BIN:
        rc = str_at(ch, c, i, &s);
        if (rc != GSQ_AV_OK)
            return rc;
        if (type == GSQ_T_STRING) {
            v->s = s;
            return GSQ_AV_OK;
        }
        if (type == GSQ_T_IP) {
            uint32_t x;
            if (gsq_parse_ip_value(s.p, s.len, &x) != 0)
                return GSQ_AV_TEXT;
            v->u = x;
            return GSQ_AV_OK;
        }
        if (type == GSQ_T_IPV6 && c->cat == GSQ_AC_BIN) { /* the address's bytes */
            if (s.len != 16)
                return GSQ_AV_TEXT;
            memcpy(v->v6.b, s.p, 16);
            return GSQ_AV_OK;
        }
        if (type == GSQ_T_IPV6)
            return gsq_parse_ipv6_value(s.p, s.len, &v->v6) == 0 ? GSQ_AV_OK : GSQ_AV_TEXT;
        return GSQ_AV_BROKEN;
    default:
        return GSQ_AV_BROKEN;
    }
}

/* ---- columns ---------------------------------------------------------- */

#define OUT_VAL(j) ((gsq_csv_value *)(void *)(vals + (size_t)(j) * stride))
#define OUT_VALID(j) (valid[(size_t)(j) * vstride])

/* The integer loops: one per (signedness, width) so the element read and
 * the range check are straight-line code.  `nulls` is the validity bitmap
 * or NULL. */
#define INT_LOOP(CT, SIGNED)                                                          \
    for (j = 0; j < m; j++) {                                                         \
        gsq_csv_value *v = OUT_VAL(j);                                                \
        CT x;                                                                         \
        memset(v, 0, sizeof *v);                                                      \
        if (nulls && !bit(nulls, i0 + j)) {                                           \
            OUT_VALID(j) = 0;                                                         \
            flags |= GSQ_AVS_NULL;                                                    \
            continue;                                                                 \
        }                                                                             \
        memcpy(&x, (const uint8_t *)data + (i0 + j) * (int64_t)sizeof(CT), sizeof(CT)); \
        OUT_VALID(j) = 1;                                                             \
        if (to_float) {                                                               \
            v->f = (double)x;                                                         \
        } else if (SIGNED ? signed_out_of_range((int64_t)x, lo, hi)                  \
                          : (uint64_t)x > hi) {                                       \
            if (!rc[j])                                                               \
                rc[j] = GSQ_AV_RANGE;                                                 \
            flags |= GSQ_AVS_FAILED;                                                  \
        } else {                                                                      \
            v->u = (uint64_t)x;                                                       \
        }                                                                             \
    }

static int int_column(const struct ArrowArray *ch, const gsq_arrow_col *c, int64_t i0, int64_t m,
                      int type, uint8_t *vals, size_t stride, uint8_t *valid, size_t vstride,
                      uint8_t *rc)
{
    const void *data = ch->buffers[1];
    const void *nulls = ch->null_count != 0 ? ch->buffers[0] : NULL;
    int to_float = type == GSQ_T_FLOAT, flags = 0;
    int64_t lo = 0, j;
    uint64_t hi = 0;
    if (!to_float && !int_range(type, &lo, &hi))
        return -1;
    if (c->cat == GSQ_AC_INT) {
        switch (c->width) {
        case 1: INT_LOOP(int8_t, 1) break;
        case 2: INT_LOOP(int16_t, 1) break;
        case 4: INT_LOOP(int32_t, 1) break;
        default: INT_LOOP(int64_t, 1) break;
        }
    } else {
        switch (c->width) {
        case 1: INT_LOOP(uint8_t, 0) break;
        case 2: INT_LOOP(uint16_t, 0) break;
        case 4: INT_LOOP(uint32_t, 0) break;
        default: INT_LOOP(uint64_t, 0) break;
        }
    }
    return flags;
}

/* Strings read as GSQL strings: views into the array's buffers. */
#define STR_LOOP(OT)                                                                  \
    for (j = 0; j < m; j++) {                                                         \
        gsq_csv_value *v = OUT_VAL(j);                                                \
        OT a, b;                                                                      \
        int r;                                                                        \
        v->s.p = "";                                                                  \
        v->s.len = 0;                                                                 \
        if (nulls && !bit(nulls, i0 + j)) {                                           \
            OUT_VALID(j) = 0;                                                         \
            flags |= GSQ_AVS_NULL;                                                    \
            continue;                                                                 \
        }                                                                             \
        memcpy(&a, (const uint8_t *)offs + (i0 + j) * (int64_t)sizeof(OT), sizeof(OT)); \
        memcpy(&b, (const uint8_t *)offs + (i0 + j + 1) * (int64_t)sizeof(OT), sizeof(OT)); \
        OUT_VALID(j) = 1;                                                             \
        if ((r = str_view(a, b, end, data, &v->s)) != GSQ_AV_OK) {                    \
            if (!rc[j] || r == GSQ_AV_BROKEN)                                         \
                rc[j] = (uint8_t)r;                                                   \
            flags |= GSQ_AVS_FAILED;                                                  \
        }                                                                             \
    }

static int str_column(const struct ArrowArray *ch, const gsq_arrow_col *c, int64_t i0, int64_t m,
                      uint8_t *vals, size_t stride, uint8_t *valid, size_t vstride,
                      uint8_t *rc)
{
    const void *offs = ch->buffers[1];
    const char *data = (const char *)ch->buffers[2];
    const void *nulls = ch->null_count != 0 ? ch->buffers[0] : NULL;
    int flags = 0;
    int64_t j;
    int64_t end = read_int(offs, c->width, ch->offset + ch->length); /* the data's end */
    if (c->width == 4) {
        STR_LOOP(int32_t)
    } else {
        STR_LOOP(int64_t)
    }
    return flags;
}

int gsq_arrow_values(const struct ArrowArray *ch, const gsq_arrow_col *c, int64_t idx, int64_t m,
                     int type, uint8_t *vals, size_t stride, uint8_t *valid, size_t vstride,
                     uint8_t *rc)
{
    int64_t i0 = ch->offset + idx, j;
    int flags = 0;
    if ((c->cat == GSQ_AC_INT || c->cat == GSQ_AC_UINT) &&
        (flags = int_column(ch, c, i0, m, type, vals, stride, valid, vstride, rc)) >= 0)
        return flags;
    if ((c->cat == GSQ_AC_UTF8 || c->cat == GSQ_AC_BIN) && type == GSQ_T_STRING)
        return str_column(ch, c, i0, m, vals, stride, valid, vstride, rc);
    flags = 0;
    for (j = 0; j < m; j++) { /* the rarer conversions, a value at a time */
        int r = gsq_arrow_value(ch, c, idx + j, type, OUT_VAL(j));
        OUT_VALID(j) = r != GSQ_AV_NULL;
        if (r == GSQ_AV_NULL) {
            flags |= GSQ_AVS_NULL;
        } else if (r != GSQ_AV_OK) {
            if (!rc[j] || r == GSQ_AV_BROKEN)
                rc[j] = (uint8_t)r;
            flags |= GSQ_AVS_FAILED;
        }
    }
    return flags;
}

#undef OUT_VAL
#undef OUT_VALID

void gsq_arrow_describe_value(gsq_buf *b, const struct ArrowArray *ch, const gsq_arrow_col *c,
                              int64_t idx)
{
    int64_t i = ch->offset + idx;
    gsq_str s;
    switch (c->cat) {
    case GSQ_AC_INT:
        gsq_buf_printf(b, "%" PRId64, read_int(ch->buffers[1], c->width, i));
        break;
    case GSQ_AC_UINT:
        gsq_buf_printf(b, "%" PRIu64, read_uint(ch->buffers[1], c->width, i));
        break;
    case GSQ_AC_UTF8: case GSQ_AC_BIN:
        if (str_at(ch, c, i, &s) == GSQ_AV_OK) {
            gsq_buf_addc(b, '\'');
            gsq_buf_quote_text(b, s.p, s.len, 40);
            gsq_buf_addc(b, '\'');
            break;
        }
        /* fall through */
    default:
        gsq_buf_adds(b, "the value");
        break;
    }
}

uint64_t gsq_arrow_bytes(const struct ArrowArray *ch, const gsq_arrow_col *c, int64_t off,
                         int64_t n)
{
    int64_t i = ch->offset + off;
    if (n <= 0)
        return 0;
    switch (c->cat) {
    case GSQ_AC_BOOL:
        return (uint64_t)(n + 7) / 8;
    case GSQ_AC_UTF8: case GSQ_AC_BIN: {
        int64_t a = read_int(ch->buffers[1], c->width, i);
        int64_t b = read_int(ch->buffers[1], c->width, i + n);
        /* (the producer's offsets: b - a may not fit an int64_t) */
        return (uint64_t)n * (uint64_t)c->width + (b > a ? (uint64_t)b - (uint64_t)a : 0);
    }
    default:
        return (uint64_t)n * (uint64_t)c->width;
    }
}

const char *gsq_arrow_stream_error(struct ArrowArrayStream *st, int rc)
{
    const char *e = st->get_last_error ? st->get_last_error(st) : NULL;
    if (e && *e)
        return e;
    return rc > 0 ? strerror(rc) : "unknown error";
}

int gsq_arrow_open_schema(gsq_run *r, const char *who, struct ArrowArrayStream *st,
                          struct ArrowSchema *schema, gsq_arrow_col **cols, uint8_t **used)
{
    int64_t nc;
    int rc;
    if (!st || !st->release) {
        gsq_run_fail(r, "%s: the Arrow stream was already released", who);
        return -1;
    }
    rc = st->get_schema(st, schema);
    if (rc != 0) {
        schema->release = NULL;
        gsq_run_fail(r, "%s: cannot read the Arrow stream's schema: %s", who,
                     gsq_arrow_stream_error(st, rc));
        return -1;
    }
    if (!schema->release || !schema->format || strcmp(schema->format, "+s") != 0 ||
        schema->n_children < 0) {
        gsq_buf m = {0};
        gsq_arrow_describe_format(&m, schema->format ? schema->format : "");
        gsq_run_fail(r, "%s: an Arrow stream of record batches (struct arrays, format "
                        "'+s') is needed, not format %s", who, gsq_buf_str(&m));
        gsq_buf_free(&m);
        return -1;
    }
    nc = schema->n_children;
    *cols = calloc((size_t)(nc ? nc : 1), sizeof **cols);
    *used = calloc((size_t)(nc ? nc : 1), 1);
    if (!*cols || !*used) {
        gsq_run_fail(r, "out of memory");
        return -1;
    }
    return 0;
}
