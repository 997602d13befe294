/*
 * arrow_sink.c -- the in-memory Arrow sink (gsqlc_add_arrow_sink): tuples
 * of a stream gathered column-wise and handed to a callback as record
 * batches through the Arrow C data interface.
 *
 * Column buffers (Arrow layouts, no validity bitmaps, no nulls):
 *   bool                 bit-packed values                 "b"
 *   ushort/uint/int/...  little-endian values (IP: uint32) "S" "I" "i" "L" "l" "g" "I"
 *   IPV6                 16 bytes per value                "w:16"
 *   string               int32 offsets (rows + 1), bytes   "z"
 * IP and IPV6 columns carry the field metadata gsqlc.type = IP / IPV6, so
 * that a consumer tells them from uint32 / 16-byte columns (the Python
 * side turns them into their text forms: runtime/arrow_types.py).
 * Every buffer is a 64-byte aligned allocation of 64 << k bytes, taken
 * from the run's buffer pool when it has one (buffer_pool.h) and given back
 * to it when released; once exported, zero from its content to the next
 * 64-byte boundary (Arrow's padding).  Bytes past the content are not
 * zeroed before (a first touch of each page saved).
 *
 * Export moves the buffers into the exported arrays (no copy) and starts
 * new ones.  The exported ArrowArray is a struct array of the columns: the
 * parent's private data owns the children's structures; each child's
 * private data owns its buffers; the parent's release releases the
 * children not yet moved away.  The ArrowSchema likewise ("+s", children
 * named after the stream's columns, which live in the library as the
 * release callbacks do).
 *
 * Heartbeat rows (option arrow_heartbeats): the sink has one more column
 * than its stream, the last, GSQ_HB_COLUMN (boolean "b", not nullable):
 * false on data rows, true on the rows of GSQ_HEARTBEAT tuples (their
 * columns as the heartbeat carries them).  Without the option only data
 * tuples are rows and the columns are exactly the stream's.
 *
 * Invariants of gsq_arrow_sink: n_cols is the stream's column count plus
 * hb (0 or 1); every column buffer holds `rows` values (strings: rows + 1
 * offsets once rows > 0, or before: none); the bytes of any string column
 * stay below 2^31 (a batch is exported early otherwise).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "arrow_abi.h"
#include "buffer_pool.h"
#include "column_compress.h"
#include "format.h"
#include "gsq_internal.h"

#define ALIGN GSQ_POOL_ALIGN
#define GSQ_HB_COLUMN "__heartbeat"

typedef struct abuf {
    uint8_t *p;
    size_t len, cap;
    size_t hint;         /* capacity of the previous batch's buffer */
} abuf;

typedef struct acol {
    int type;
    abuf data;           /* values, bits, or string offsets */
    abuf bytes;          /* string bytes */
} acol;

struct gsq_arrow_sink {
    gsqlc_buffer_pool *pool; /* the run's (NULL: none): it outlives the sink */
    uint32_t n_cols;     /* the stream's columns, then __heartbeat if hb */
    int hb;
    acol *cols;
    gsq_val *row;        /* n_cols: the tuple being appended */
    uint32_t rows;
};

/* ---- buffers ---------------------------------------------------------- */

static int abuf_reserve(gsqlc_buffer_pool *pool, abuf *b, size_t extra)
{
    size_t need = b->len + extra, ncap;
    void *np;
    if (need <= b->cap && b->p)
        return 0;
    ncap = b->cap ? b->cap : (b->hint > ALIGN ? b->hint : ALIGN);
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2)
            return -1;
        ncap *= 2;
    }
    ncap = (ncap + ALIGN - 1) / ALIGN * ALIGN;
    np = gsq_pool_take(pool, ncap);
    if (!np)
        return -1;
    if (b->len)
        memcpy(np, b->p, b->len);
    gsq_pool_give(pool, b->p, b->cap);
    b->p = np;
    b->cap = ncap;
    return 0;
}

static int abuf_add(gsqlc_buffer_pool *pool, abuf *b, const void *p, size_t n)
{
    if (abuf_reserve(pool, b, n) != 0)
        return -1;
    if (n)
        memcpy(b->p + b->len, p, n);
    b->len += n;
    return 0;
}

/* Hand the buffer over (never NULL: an empty one is allocated); *cap is
 * set to its capacity. */
static void *abuf_take(gsqlc_buffer_pool *pool, abuf *b, size_t *cap)
{
    void *p;
    if (!b->p && abuf_reserve(pool, b, 0) != 0)
        return NULL;
    *cap = b->cap;
    p = b->p;
    {
        /* an empty buffer reads as zeros too (a string column's offset 0) */
        size_t pad = b->len ? (b->len + ALIGN - 1) / ALIGN * ALIGN : ALIGN;
        memset(b->p + b->len, 0, (pad < b->cap ? pad : b->cap) - b->len);
    }
    b->hint = b->cap;
    b->p = NULL;
    b->len = b->cap = 0;
    return p;
}

/* ---- export ----------------------------------------------------------- */

typedef struct exp_child {
    gsqlc_buffer_pool *pool; /* a reference, or NULL: bufs go back to it */
    void *bufs[3];
    size_t caps[3];
    const void *ptrs[3];
} exp_child;

typedef struct exp_parent {
    const void *ptrs[1];          /* the struct's validity: NULL */
    struct ArrowArray *kids;
    struct ArrowArray **kid_ptrs;
    int64_t n;
} exp_parent;

static void release_child(struct ArrowArray *a)
{
    exp_child *e = a->private_data;
    int i;
    for (i = 0; i < 3; i++)
        gsq_pool_give(e->pool, e->bufs[i], e->caps[i]);
    gsqlc_buffer_pool_release(e->pool);
    free(e);
    a->release = NULL;
}

static void release_parent(struct ArrowArray *a)
{
    exp_parent *e = a->private_data;
    int64_t i;
    for (i = 0; i < e->n; i++)
        if (e->kids[i].release)
            e->kids[i].release(&e->kids[i]);
    free(e->kids);
    free(e->kid_ptrs);
    free(e);
    a->release = NULL;
}

typedef struct exp_schema {
    struct ArrowSchema *kids;
    struct ArrowSchema **kid_ptrs;
    int64_t n;
} exp_schema;

static void release_schema_child(struct ArrowSchema *s)
{
    s->release = NULL;
}

static void release_schema(struct ArrowSchema *s)
{
    exp_schema *e = s->private_data;
    int64_t i;
    for (i = 0; i < e->n; i++)
        if (e->kids[i].release)
            e->kids[i].release(&e->kids[i]);
    free(e->kids);
    free(e->kid_ptrs);
    free(e);
    s->release = NULL;
}

/* Arrow C data interface metadata (int32 pair count, then each key and
 * value as an int32 length and its bytes, in native byte order): one pair,
 * gsqlc.type = IP or IPV6.  Static: it outlives every exported schema. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define META_I32(n) 0, 0, 0, (n)
#else
#define META_I32(n) (n), 0, 0, 0
#endif
static const char ip_metadata[] = {META_I32(1), META_I32(10), 'g', 's', 'q', 'l', 'c', '.',
                                   't', 'y', 'p', 'e', META_I32(2), 'I', 'P'};
static const char ipv6_metadata[] = {META_I32(1), META_I32(10), 'g', 's', 'q', 'l', 'c', '.',
                                     't', 'y', 'p', 'e', META_I32(4), 'I', 'P', 'V', '6'};

static const char *arrow_format(int type)
{
    switch (type) {
    case GSQ_T_BOOL: return "b";
    case GSQ_T_USHORT: return "S";
    case GSQ_T_UINT: case GSQ_T_IP: return "I";
    case GSQ_T_INT: return "i";
    case GSQ_T_ULLONG: return "L";
    case GSQ_T_LLONG: return "l";
    case GSQ_T_FLOAT: return "g";
    case GSQ_T_IPV6: return "w:16";
    default: return "z";
    }
}

/* The schema of sink a's batches: the stream's columns, then __heartbeat. */
static int make_schema(const gsq_arrow_sink *a, const gsq_stream_desc *d,
                       struct ArrowSchema *out)
{
    exp_schema *e = calloc(1, sizeof *e);
    uint32_t i;
    memset(out, 0, sizeof *out);
    if (!e)
        return -1;
    e->n = a->n_cols;
    e->kids = calloc(a->n_cols ? a->n_cols : 1, sizeof *e->kids);
    e->kid_ptrs = calloc(a->n_cols ? a->n_cols : 1, sizeof *e->kid_ptrs);
    if (!e->kids || !e->kid_ptrs) {
        free(e->kids);
        free(e->kid_ptrs);
        free(e);
        return -1;
    }
    for (i = 0; i < a->n_cols; i++) {
        struct ArrowSchema *k = &e->kids[i];
        k->format = arrow_format(a->cols[i].type);
        k->metadata = a->cols[i].type == GSQ_T_IP     ? ip_metadata
                      : a->cols[i].type == GSQ_T_IPV6 ? ipv6_metadata
                                                      : NULL;
        k->name = i < d->n_cols ? d->cols[i].name : GSQ_HB_COLUMN;
        k->flags = 0; /* not nullable: sinks never produce nulls */
        k->release = release_schema_child;
        e->kid_ptrs[i] = k;
    }
    out->format = "+s";
    out->name = "";
    out->n_children = a->n_cols;
    out->children = e->kid_ptrs;
    out->release = release_schema;
    out->private_data = e;
    return 0;
}

/* Move the built columns into *out.  0, or -1 (out of memory: nothing
 * moved, *out released). */
static int make_array(gsq_arrow_sink *a, struct ArrowArray *out, uint64_t *bytes)
{
    exp_parent *e = calloc(1, sizeof *e);
    uint32_t i;
    memset(out, 0, sizeof *out);
    if (!e)
        return -1;
    e->n = a->n_cols;
    e->kids = calloc(a->n_cols ? a->n_cols : 1, sizeof *e->kids);
    e->kid_ptrs = calloc(a->n_cols ? a->n_cols : 1, sizeof *e->kid_ptrs);
    out->length = a->rows;
    out->n_buffers = 1;
    out->buffers = e->ptrs;
    out->n_children = a->n_cols;
    out->children = e->kid_ptrs;
    out->release = release_parent;
    out->private_data = e;
    if (!e->kids || !e->kid_ptrs) {
        e->n = 0;
        release_parent(out);
        return -1;
    }
    for (i = 0; i < a->n_cols; i++) {
        acol *c = &a->cols[i];
        struct ArrowArray *k = &e->kids[i];
        exp_child *x = calloc(1, sizeof *x);
        int str = c->type == GSQ_T_STRING;
        e->kid_ptrs[i] = k;
        if (!x) {
            release_parent(out);
            return -1;
        }
        *bytes += c->data.len + c->bytes.len;
        x->pool = gsq_pool_retain(a->pool);
        x->bufs[1] = abuf_take(a->pool, &c->data, &x->caps[1]);
        if (str)
            x->bufs[2] = abuf_take(a->pool, &c->bytes, &x->caps[2]);
        x->ptrs[1] = x->bufs[1];
        x->ptrs[2] = x->bufs[2];
        k->length = a->rows;
        k->n_buffers = str ? 3 : 2;
        k->buffers = x->ptrs;
        k->release = release_child;
        k->private_data = x;
        if (!x->bufs[1] || (str && !x->bufs[2])) {
            release_parent(out);
            return -1;
        }
    }
    return 0;
}

/* ---- the sink --------------------------------------------------------- */

int gsq_arrow_sink_open(gsq_run *r, gsq_sink *k)
{
    const gsq_stream_desc *d = &r->qs->streams[k->stream];
    gsq_arrow_sink *a = calloc(1, sizeof *a);
    uint32_t i;
    k->fd = -1;
    if (!a)
        goto oom;
    k->arrow = a;
    a->pool = r->buffer_pool;
    k->heartbeats = r->arrow_heartbeats;
    a->hb = k->heartbeats;
    for (i = 0; a->hb && i < d->n_cols; i++)
        if (strcmp(d->cols[i].name, GSQ_HB_COLUMN) == 0) {
            gsq_run_fail(r, "stream %s has a column named " GSQ_HB_COLUMN ": option "
                            "arrow_heartbeats adds a column of that name to its Arrow sinks; "
                            "rename it", d->name);
            return -1;
        }
    a->n_cols = d->n_cols + (uint32_t)a->hb;
    a->cols = calloc(a->n_cols ? a->n_cols : 1, sizeof *a->cols);
    a->row = calloc(a->n_cols ? a->n_cols : 1, sizeof *a->row);
    if (!a->cols || !a->row)
        goto oom;
    for (i = 0; i < d->n_cols; i++)
        a->cols[i].type = d->cols[i].type;
    if (a->hb)
        a->cols[d->n_cols].type = GSQ_T_BOOL;
    return 0;
oom:
    gsq_run_fail(r, "out of memory");
    return -1;
}

void gsq_arrow_sink_close(gsq_sink *k)
{
    gsq_arrow_sink *a = k->arrow;
    uint32_t i;
    if (!a)
        return;
    for (i = 0; a->cols && i < a->n_cols; i++) {
        gsq_pool_give(a->pool, a->cols[i].data.p, a->cols[i].data.cap);
        gsq_pool_give(a->pool, a->cols[i].bytes.p, a->cols[i].bytes.cap);
    }
    free(a->cols);
    free(a->row);
    free(a);
    k->arrow = NULL;
}

/* Deliver the rows gathered so far as one record batch. */
int gsq_arrow_sink_flush(gsq_run *r, gsq_sink *k)
{
    gsq_arrow_sink *a = k->arrow;
    const gsq_stream_desc *d = &r->qs->streams[k->stream];
    struct ArrowArray arr;
    struct ArrowSchema sch;
    uint64_t bytes = 0;
    int rc;
    if (!a || r->failed || k->failed)
        return -1;
    if (a->rows == 0)
        return 0;
    if (make_array(a, &arr, &bytes) != 0 || make_schema(a, d, &sch) != 0) {
        if (arr.release)
            arr.release(&arr);
        k->failed = 1;
        gsq_run_fail(r, "out of memory building an Arrow batch of %s", d->name);
        return -1;
    }
    a->rows = 0;
    k->batches++;
    k->bytes += bytes;
    rc = k->cb(k->cb_ctx, &arr, &sch);
    /* the callee moved or released them; release whatever it left */
    if (arr.release)
        arr.release(&arr);
    if (sch.release)
        sch.release(&sch);
    if (rc != 0) {
        k->failed = 1;
        gsq_run_fail(r, "cancelled by the consumer of %s", d->name);
        return -1;
    }
    return 0;
}

static int append(gsq_arrow_sink *a, const gsq_val *v)
{
    uint32_t i;
    for (i = 0; i < a->n_cols; i++) {
        acol *c = &a->cols[i];
        const gsq_val *x = &v[i];
        int rc = 0;
        switch (c->type) {
        case GSQ_T_BOOL:
            if (a->rows % 8 == 0)
                rc = abuf_add(a->pool, &c->data, "", 1); /* a zeroed byte for 8 more rows */
            if (rc == 0 && x->u)
                c->data.p[a->rows / 8] |= (uint8_t)(1u << (a->rows % 8));
            break;
        case GSQ_T_USHORT: {
            uint16_t y = (uint16_t)x->u;
            rc = abuf_add(a->pool, &c->data, &y, 2);
            break;
        }
        case GSQ_T_UINT: case GSQ_T_IP: {
            uint32_t y = (uint32_t)x->u;
            rc = abuf_add(a->pool, &c->data, &y, 4);
            break;
        }
        case GSQ_T_INT: {
            int32_t y = (int32_t)x->i;
            rc = abuf_add(a->pool, &c->data, &y, 4);
            break;
        }
        case GSQ_T_ULLONG: rc = abuf_add(a->pool, &c->data, &x->u, 8); break;
        case GSQ_T_LLONG: rc = abuf_add(a->pool, &c->data, &x->i, 8); break;
        case GSQ_T_FLOAT: rc = abuf_add(a->pool, &c->data, &x->f, 8); break;
        case GSQ_T_IPV6: rc = abuf_add(a->pool, &c->data, x->v6.b, 16); break;
        default: {
            int32_t end;
            if (a->rows == 0) {
                int32_t zero = 0;
                rc = abuf_add(a->pool, &c->data, &zero, 4);
            }
            if (rc == 0)
                rc = abuf_add(a->pool, &c->bytes, x->s.p, x->s.len);
            end = (int32_t)c->bytes.len;
            if (rc == 0)
                rc = abuf_add(a->pool, &c->data, &end, 4);
            break;
        }
        }
        if (rc != 0)
            return -1;
    }
    a->rows++;
    return 0;
}

/* A data tuple, or (a->hb) a heartbeat: a row with __heartbeat true. */
int gsq_arrow_sink_write(gsq_run *r, gsq_sink *k, const gsq_stream_desc *d, int kind,
                         const void *tup, uint32_t len)
{
    gsq_arrow_sink *a = k->arrow;
    uint32_t i;
    int full = 0;
    if (!a || k->failed || r->failed)
        return -1;
    if (kind != GSQ_DATA && !(kind == GSQ_HEARTBEAT && a->hb))
        return 0;
    if (a->hb)
        a->row[d->n_cols].u = kind == GSQ_HEARTBEAT;
    for (i = 0; i < d->n_cols; i++) {
        const gsq_column *c = &d->cols[i];
        if (gsq_read_col(tup, len, c, &a->row[i]) != 0) {
            gsq_run_fail(r, "internal error: tuple of stream %s (%u bytes) has a broken column %s",
                         d->name, (unsigned)len, c->name);
            return -1;
        }
        if (c->type == GSQ_T_STRING &&
            (uint64_t)a->cols[i].bytes.len + a->row[i].s.len > (uint64_t)INT32_MAX)
            full = 1;
    }
    if (full && a->rows > 0 && gsq_arrow_sink_flush(r, k) != 0)
        return -1;
    for (i = 0; i < d->n_cols; i++)
        if (d->cols[i].type == GSQ_T_STRING &&
            (uint64_t)a->cols[i].bytes.len + a->row[i].s.len > (uint64_t)INT32_MAX) {
            gsq_run_fail(r, "a string of column %s of %s is too long for an Arrow batch (2 GiB "
                            "or more)", d->cols[i].name, d->name);
            return -1;
        }
    if (append(a, a->row) != 0) {
        k->failed = 1;
        gsq_run_fail(r, "out of memory gathering an Arrow batch of %s", d->name);
        return -1;
    }
    if (kind == GSQ_HEARTBEAT)
        k->heartbeat_rows++;
    else
        k->tuples++;
    if (a->rows >= k->batch_rows)
        return gsq_arrow_sink_flush(r, k);
    return 0;
}

/* Append m values of a fixed-width column, value t at src + t * stride
 * (sz bytes each, the column's Arrow width). */
static int append_fixed(gsqlc_buffer_pool *pool, acol *c, const uint8_t *src, size_t stride,
                        uint32_t sz, uint32_t m)
{
    uint8_t *dst;
    uint32_t t;
    if (abuf_reserve(pool, &c->data, (size_t)m * sz) != 0)
        return -1;
    dst = c->data.p + c->data.len;
    switch (sz) { /* constant sizes: each copy is one load and store */
    case 2: for (t = 0; t < m; t++) memcpy(dst + 2u * t, src + t * stride, 2); break;
    case 4: for (t = 0; t < m; t++) memcpy(dst + 4u * t, src + t * stride, 4); break;
    case 8: for (t = 0; t < m; t++) memcpy(dst + 8u * t, src + t * stride, 8); break;
    default: for (t = 0; t < m; t++) memcpy(dst + (size_t)sz * t, src + t * stride, sz); break;
    }
    c->data.len += (size_t)m * sz;
    return 0;
}

/* Append m bits (rows `rows`..rows+m-1) of a boolean column: value t is
 * src[t * stride] != 0, or 0 for every row when src is NULL. */
static int append_bits(gsqlc_buffer_pool *pool, acol *c, uint32_t rows, const uint8_t *src,
                       size_t stride, uint32_t m)
{
    size_t need = ((size_t)rows + m + 7u) / 8u;
    uint32_t t;
    if (need > c->data.len) {
        if (abuf_reserve(pool, &c->data, need - c->data.len) != 0)
            return -1;
        memset(c->data.p + c->data.len, 0, need - c->data.len);
        c->data.len = need;
    }
    if (src)
        for (t = 0; t < m; t++)
            if (src[t * stride])
                c->data.p[(rows + t) / 8u] |= (uint8_t)(1u << ((rows + t) % 8u));
    return 0;
}

/* How many of `want` rows fit in the batch being gathered (at least 1). */
static uint32_t batch_room(const gsq_sink *k, uint32_t want)
{
    uint32_t rows = k->arrow->rows, room = k->batch_rows > rows ? k->batch_rows - rows : 1;
    return want < room ? want : room;
}

/* After m data rows' columns were appended (rc: how that went): their
 * __heartbeat bits (false), the counts, and the batch out once full. */
static int rows_added(gsq_run *r, gsq_sink *k, const gsq_stream_desc *d, uint32_t m, int rc)
{
    gsq_arrow_sink *a = k->arrow;
    if (rc == 0 && a->hb)
        rc = append_bits(a->pool, &a->cols[d->n_cols], a->rows, NULL, 0, m);
    if (rc != 0) {
        k->failed = 1;
        gsq_run_fail(r, "out of memory gathering an Arrow batch of %s", d->name);
        return -1;
    }
    a->rows += m;
    k->tuples += m;
    if (a->rows >= k->batch_rows && gsq_arrow_sink_flush(r, k) != 0)
        return -1;
    return 0;
}

int gsq_arrow_sink_write_run(gsq_run *r, gsq_sink *k, const gsq_stream_desc *d,
                             const uint8_t *first, size_t stride, uint32_t len, uint32_t n)
{
    gsq_arrow_sink *a = k->arrow;
    uint32_t i, j, done = 0;
    if (!a || k->failed || r->failed)
        return -1;
    for (i = 0; i < d->n_cols; i++) {
        const gsq_column *c = &d->cols[i];
        uint32_t sz = gsq_type_size(c->type);
        if (c->type == GSQ_T_STRING) { /* strings: a row at a time */
            for (j = 0; j < n; j++)
                if (gsq_arrow_sink_write(r, k, d, GSQ_DATA, first + (size_t)j * stride, len) != 0)
                    return -1;
            return 0;
        }
        if (sz == 0 || c->offset > len || sz > len - c->offset) {
            gsq_run_fail(r, "internal error: tuple of stream %s (%u bytes) has a broken column %s",
                         d->name, (unsigned)len, c->name);
            return -1;
        }
    }
    while (done < n) {
        const uint8_t *base = first + (size_t)done * stride;
        uint32_t m = batch_room(k, n - done);
        int rc = 0;
        for (i = 0; i < d->n_cols && rc == 0; i++) {
            const gsq_column *c = &d->cols[i];
            rc = c->type == GSQ_T_BOOL
                     ? append_bits(a->pool, &a->cols[i], a->rows, base + c->offset, stride, m)
                     : append_fixed(a->pool, &a->cols[i], base + c->offset, stride,
                                    gsq_type_size(c->type), m);
        }
        if (rows_added(r, k, d, m, rc) != 0)
            return -1;
        done += m;
    }
    return 0;
}

/* Append m values of a fixed-width column gathered by row index: value t
 * is element sel[t] of src (sz bytes each). */
static int gather_fixed(gsqlc_buffer_pool *pool, acol *c, const void *src, const uint32_t *sel,
                        uint32_t sz, uint32_t m)
{
    uint8_t *dst;
    uint32_t t;
    if (abuf_reserve(pool, &c->data, (size_t)m * sz) != 0)
        return -1;
    dst = c->data.p + c->data.len;
    switch (sz) { /* typed loops: one load and one store per value */
    case 2: {
        const uint16_t *v = (const uint16_t *)src;
        uint16_t *o = (uint16_t *)(void *)dst;
        for (t = 0; t < m; t++) o[t] = v[sel[t]];
        break;
    }
    case 4: {
        const uint32_t *v = (const uint32_t *)src;
        uint32_t *o = (uint32_t *)(void *)dst;
        for (t = 0; t < m; t++) o[t] = v[sel[t]];
        break;
    }
    case 8: {
        const uint64_t *v = (const uint64_t *)src;
        uint64_t *o = (uint64_t *)(void *)dst;
        for (t = 0; t < m; t++) o[t] = v[sel[t]];
        break;
    }
    default:
        for (t = 0; t < m; t++)
            memcpy(dst + (size_t)sz * t, (const uint8_t *)src + (size_t)sel[t] * sz, sz);
        break;
    }
    c->data.len += (size_t)m * sz;
    return 0;
}

int gsq_arrow_sink_write_gather(gsq_run *r, gsq_sink *k, const gsq_stream_desc *d,
                                const void *const *cols, const uint32_t *sel, uint32_t n)
{
    gsq_arrow_sink *a = k->arrow;
    uint32_t i, done = 0;
    if (!a || k->failed || r->failed)
        return -1;
    for (i = 0; i < d->n_cols; i++) {
        int t = d->cols[i].type;
        if (t == GSQ_T_BOOL || t == GSQ_T_STRING || t == GSQ_T_IPV6 || gsq_type_size(t) == 0) {
            gsq_run_fail(r, "internal error: gathered column %s of stream %s", d->cols[i].name,
                         d->name);
            return -1;
        }
    }
    while (done < n) {
        uint32_t m = batch_room(k, n - done);
        int rc = 0;
        for (i = 0; i < d->n_cols && rc == 0; i++)
            rc = gather_fixed(a->pool, &a->cols[i], cols[i], sel + done,
                              gsq_type_size(d->cols[i].type), m);
        if (rows_added(r, k, d, m, rc) != 0)
            return -1;
        done += m;
    }
    return 0;
}

/* The rows keep[0..n) kept packed into the batch's columns (m of them, all
 * fitting in the batch): 1 when the CPU has no compress kernel for them. */
static int compress_rows(gsq_run *r, gsq_sink *k, const gsq_stream_desc *d,
                         const void *const *cols, uint32_t first, const uint8_t *keep,
                         uint32_t n, uint32_t m)
{
    gsq_arrow_sink *a = k->arrow;
    void *dst[GSQ_COMPRESS_MAX_COLS];
    const void *src[GSQ_COMPRESS_MAX_COLS];
    uint32_t size[GSQ_COMPRESS_MAX_COLS];
    uint32_t i;
    if (d->n_cols > GSQ_COMPRESS_MAX_COLS || !r->cpu_kernels)
        return 1;
    for (i = 0; i < d->n_cols; i++) {
        acol *c = &a->cols[i];
        size[i] = gsq_type_size(d->cols[i].type);
        if (abuf_reserve(a->pool, &c->data, (size_t)m * size[i]) != 0)
            return rows_added(r, k, d, 0, -1);
        dst[i] = c->data.p + c->data.len;
        src[i] = (const uint8_t *)cols[i] + (size_t)first * size[i];
    }
    if (gsq_compress_columns(r->cpu_kernels, dst, src, size, d->n_cols, keep, n) < 0)
        return 1;
    for (i = 0; i < d->n_cols; i++)
        a->cols[i].data.len += (size_t)m * size[i];
    k->rows_packed += m;
    return rows_added(r, k, d, m, 0);
}

int gsq_arrow_sink_write_masked(gsq_run *r, gsq_sink *k, const gsq_stream_desc *d,
                                const void *const *cols, uint32_t first, const uint8_t *keep,
                                uint32_t n, uint32_t m)
{
    if (!k->arrow || k->failed || r->failed)
        return -1;
    while (m > 0) {
        /* the rows up to the one that fills the batch, then the rest */
        uint32_t room = batch_room(k, m), part = n, got = m;
        int rc;
        if (room < m)
            for (part = 0, got = 0; got < room; part++)
                got += keep[part];
        rc = compress_rows(r, k, d, cols, first, keep, part, got);
        if (rc != 0)
            return rc; /* 1: no kernel, so nothing was written (nor on an earlier turn) */
        first += part, keep += part, n -= part, m -= got;
    }
    return 0;
}
