/*
 * arrow_inject.c -- a stream of the query set fed from an Arrow stream
 * (gsqlc_bind_stream_arrow) instead of by the node that produces it.
 *
 * At open, every column of the stream is matched by name to a column of
 * the Arrow schema (arrow_in.h) whose format gives the column's type; a
 * missing or incompatible column fails the run before anything is read.
 * Each row is packed into the stream's tuple layout -- the fixed struct
 * (columns at their gsq_column offsets, zero elsewhere) followed by the
 * string bytes, each string column holding a gsq_strref to its bytes, as
 * gsq_emit packs them -- and dispatched as GSQ_DATA to the stream's
 * subscribers; GSQ_EOF follows the last batch.  A row with a null value, a
 * value out of its type's range or an invalid address text is malformed:
 * rejected, counted, the first GSQ_MAX_DESCRIBED described.
 *
 * Heartbeat rows: when the Arrow schema has a column __heartbeat (boolean,
 * or an integer 0 / 1) that is not a column of the stream -- what an Arrow
 * sink adds with option arrow_heartbeats -- a row with it true is
 * dispatched as GSQ_HEARTBEAT instead of GSQ_DATA (a null there is
 * malformed), so such a sink's output round-trips, heartbeats included.
 *
 * A stream without strings or heartbeat rows is taken INJECT_RUN rows at a
 * time: converted column by column, packed side by side and dispatched as
 * one run (an HFTA then prefetches its groups); a run with a null or
 * malformed value is taken again a row at a time, which says which.
 *
 * Reader state invariants: batch is the current record batch (release !=
 * NULL while held), row its next row; col_of[i] is the schema child of the
 * stream's column i, hb_col that of __heartbeat (-1: none), and used[]
 * marks those children; pack holds pack_cap bytes of packing scratch
 * (malloc: aligned for the tuple struct).  When `runs` is set, run_vals
 * holds INJECT_RUN values per stream column (column i's at i *
 * INJECT_RUN), run_valid and run_rc INJECT_RUN flags, run_tups INJECT_RUN
 * tuples of the stream's fixed size.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "arrow_in.h"
#include "format.h"

typedef struct inject_reader {
    gsq_buf name;               /* "arrow stream S", for messages */
    struct ArrowSchema schema;
    struct ArrowArray batch;
    int64_t row;
    uint64_t row_no;
    gsq_arrow_col *cols;        /* schema.n_children */
    uint8_t *used;
    int64_t *col_of;            /* per stream column */
    int64_t hb_col;             /* the __heartbeat column, or -1 */
    gsq_csv_value *vals;        /* per stream column: the row's values */
    uint8_t *pack;
    size_t pack_cap;
    uint32_t n_described;
    gsq_buf described;
    int runs;                   /* rows are taken INJECT_RUN at a time */
    gsq_csv_value *run_vals;
    uint8_t *run_valid, *run_rc, *run_tups;
} inject_reader;

#define INJECT_RUN 256u

/* The heartbeat flag column, as a pseudo column of the stream. */
static const gsq_column hb_column = {"__heartbeat", GSQ_T_BOOL, 0};

static int match_columns(gsq_run *r, gsq_inject *in, inject_reader *rd)
{
    const gsq_stream_desc *d = &r->qs->streams[in->stream];
    const struct ArrowSchema *sc = &rd->schema;
    uint32_t i;
    int64_t k;
    for (k = 0; k < sc->n_children; k++) {
        if (!sc->children || !sc->children[k]) {
            gsq_run_fail(r, "stream %s: the Arrow stream's schema is broken (column %lld "
                            "missing)", d->name, (long long)k + 1);
            return -1;
        }
        gsq_arrow_classify(sc->children[k], &rd->cols[k]);
    }
    for (i = 0; i < d->n_cols; i++) {
        const gsq_column *c = &d->cols[i];
        gsq_buf m = {0};
        uint32_t sz = gsq_type_size(c->type);
        if (sz == 0 || c->offset > d->fixed_size || sz > d->fixed_size - c->offset) {
            gsq_run_fail(r, "internal error: column %s of stream %s lies outside its %u bytes",
                         c->name, d->name, (unsigned)d->fixed_size);
            return -1;
        }
        k = gsq_arrow_find(sc, c->name);
        if (k < 0) {
            gsq_arrow_list_columns(&m, sc);
            gsq_run_fail(r, "stream %s is fed from an Arrow stream that has no column '%s' "
                            "(%s) (its columns: %s)",
                         d->name, c->name, gsq_type_name(c->type), gsq_buf_str(&m));
            gsq_buf_free(&m);
            return -1;
        }
        if (!gsq_arrow_compatible(c->type, &rd->cols[k])) {
            gsq_arrow_describe_format(&m, rd->cols[k].format);
            gsq_run_fail(r, "stream %s: column '%s' is %s, but its Arrow column has format %s; "
                            "expected %s%s",
                         d->name, c->name, gsq_type_name(c->type), gsq_buf_str(&m),
                         gsq_arrow_expected(c->type),
                         rd->cols[k].cat == GSQ_AC_DICT
                             ? " (dictionary-encoded columns are not read: decode them first)"
                             : "");
            gsq_buf_free(&m);
            return -1;
        }
        rd->col_of[i] = k;
        rd->used[k] = 1;
    }
    rd->hb_col = -1;
    k = gsq_arrow_find(sc, hb_column.name);
    for (i = 0; k >= 0 && i < d->n_cols; i++)
        if (rd->col_of[i] == k)
            k = -1; /* the stream's own column */
    if (k < 0)
        return 0;
    if (!gsq_arrow_compatible(GSQ_T_BOOL, &rd->cols[k])) {
        gsq_buf m = {0};
        gsq_arrow_describe_format(&m, rd->cols[k].format);
        gsq_run_fail(r, "stream %s: the heartbeat flag column '%s' has format %s; expected %s",
                     d->name, sc->children[k]->name, gsq_buf_str(&m),
                     gsq_arrow_expected(GSQ_T_BOOL));
        gsq_buf_free(&m);
        return -1;
    }
    rd->hb_col = k;
    rd->used[k] = 1;
    return 0;
}

/* Decide whether rows are taken in runs (no string column, no heartbeat
 * flag) and allocate the run scratch.  0, or -1 (run failed). */
static int open_runs(gsq_run *r, const gsq_stream_desc *d, inject_reader *rd)
{
    uint32_t i;
    if (rd->hb_col >= 0 || d->n_cols == 0 || d->fixed_size == 0)
        return 0;
    for (i = 0; i < d->n_cols; i++)
        if (d->cols[i].type == GSQ_T_STRING)
            return 0;
    rd->run_vals = calloc((size_t)d->n_cols * INJECT_RUN, sizeof *rd->run_vals);
    rd->run_valid = malloc(INJECT_RUN);
    rd->run_rc = malloc(INJECT_RUN);
    rd->run_tups = malloc((size_t)d->fixed_size * INJECT_RUN);
    if (!rd->run_vals || !rd->run_valid || !rd->run_rc || !rd->run_tups) {
        gsq_run_fail(r, "out of memory");
        return -1;
    }
    rd->runs = 1;
    return 0;
}

int gsq_inject_open(gsq_run *r, gsq_inject *in)
{
    const gsq_stream_desc *d = &r->qs->streams[in->stream];
    struct ArrowArrayStream *st = in->arrow;
    inject_reader *rd = calloc(1, sizeof *rd);
    gsq_buf who = {0};
    int rc;
    if (!rd) {
        gsq_run_fail(r, "out of memory");
        return -1;
    }
    in->impl = rd;
    gsq_buf_printf(&rd->name, "arrow stream %s", d->name);
    gsq_buf_printf(&who, "stream %s", d->name);
    rc = gsq_arrow_open_schema(r, gsq_buf_str(&who), st, &rd->schema, &rd->cols, &rd->used);
    gsq_buf_free(&who);
    if (rc != 0)
        return -1;
    rd->col_of = calloc(d->n_cols ? d->n_cols : 1, sizeof *rd->col_of);
    rd->vals = calloc(d->n_cols ? d->n_cols : 1, sizeof *rd->vals);
    if (!rd->col_of || !rd->vals) {
        gsq_run_fail(r, "out of memory");
        return -1;
    }
    if (match_columns(r, in, rd) != 0)
        return -1;
    return open_runs(r, d, rd);
}

void gsq_inject_close(gsq_inject *in)
{
    inject_reader *rd = in->impl;
    if (rd) {
        if (rd->batch.release)
            rd->batch.release(&rd->batch);
        if (rd->schema.release)
            rd->schema.release(&rd->schema);
        free(rd->cols);
        free(rd->used);
        free(rd->col_of);
        free(rd->vals);
        free(rd->pack);
        free(rd->run_vals);
        free(rd->run_valid);
        free(rd->run_rc);
        free(rd->run_tups);
        gsq_buf_free(&rd->name);
        gsq_buf_free(&rd->described);
        free(rd);
        in->impl = NULL;
    }
    gsq_arrow_stream_release(&in->arrow);
}

void gsq_inject_eof(gsq_run *r, gsq_inject *in)
{
    if (in->at_eof || !in->active)
        return;
    in->at_eof = 1;
    gsq_dispatch(r, in->stream, GSQ_EOF, NULL, 0);
}

/* Release the current batch and take the next non-empty one; at the end
 * (in->at_eof set) the stream is released and GSQ_EOF dispatched. */
static int next_batch(gsq_run *r, gsq_inject *in, inject_reader *rd)
{
    const char *sname = r->qs->streams[in->stream].name;
    struct ArrowArrayStream *st = in->arrow;
    char msg[256];
    for (;;) {
        int rc;
        if (rd->batch.release)
            rd->batch.release(&rd->batch);
        memset(&rd->batch, 0, sizeof rd->batch);
        rd->row = 0;
        rc = st->get_next(st, &rd->batch);
        if (rc != 0) {
            rd->batch.release = NULL;
            gsq_run_fail(r, "stream %s: the Arrow stream failed: %s", sname,
                         gsq_arrow_stream_error(st, rc));
            return -1;
        }
        if (!rd->batch.release) {
            gsq_arrow_stream_release(&in->arrow);
            gsq_inject_eof(r, in);
            return 0;
        }
        if (gsq_arrow_check_batch(&rd->batch, &rd->schema, rd->cols, rd->used, msg,
                                  sizeof msg) != 0) {
            gsq_run_fail(r, "stream %s: %s", sname, msg);
            return -1;
        }
        if (rd->batch.length > 0)
            return 0;
    }
}

#define WHY_TOO_LARGE (-1) /* beside enum gsq_arrow_value_rc */

static void describe(inject_reader *rd, const gsq_column *col, const struct ArrowArray *ch,
                     const gsq_arrow_col *c, int64_t idx, int why)
{
    gsq_buf *b = &rd->described;
    if (rd->n_described >= GSQ_MAX_DESCRIBED)
        return;
    rd->n_described++;
    gsq_buf_printf(b, "gsqlc: %s: row %llu: column %s: ", gsq_buf_str(&rd->name),
                   (unsigned long long)rd->row_no + 1, col->name);
    switch (why) {
    case GSQ_AV_NULL: gsq_buf_adds(b, "null\n"); return;
    case GSQ_AV_LONG: gsq_buf_adds(b, "a string of 4 GiB or more\n"); return;
    default: break;
    }
    if (why == WHY_TOO_LARGE) {
        gsq_buf_adds(b, "the tuple would be too large\n");
        return;
    }
    gsq_arrow_describe_value(b, ch, c, idx);
    gsq_buf_printf(b, why == GSQ_AV_RANGE ? " is out of range for %s\n" : " is not a valid %s\n",
                   gsq_type_name(col->type));
}

/* Write value v of a column of type `type` at p (the fixed part). */
static void put(uint8_t *p, int type, const gsq_csv_value *v)
{
    switch (type) {
    case GSQ_T_BOOL: p[0] = (uint8_t)(v->u ? 1 : 0); break;
    case GSQ_T_USHORT: { uint16_t x = (uint16_t)v->u; memcpy(p, &x, 2); break; }
    case GSQ_T_UINT: case GSQ_T_IP: { uint32_t x = (uint32_t)v->u; memcpy(p, &x, 4); break; }
    case GSQ_T_INT: { int32_t x = (int32_t)v->i; memcpy(p, &x, 4); break; }
    case GSQ_T_ULLONG: memcpy(p, &v->u, 8); break;
    case GSQ_T_LLONG: memcpy(p, &v->i, 8); break;
    case GSQ_T_FLOAT: memcpy(p, &v->f, 8); break;
    case GSQ_T_IPV6: memcpy(p, v->v6.b, 16); break;
    default: break;
    }
}

/* Convert column k of row rd->row as column `col` into *v.  1: converted;
 * 0: the row is malformed (counted and described); -1: the run failed. */
static int take_value(gsq_run *r, gsq_inject *in, inject_reader *rd, int row_null, int64_t k,
                      const gsq_column *col, gsq_csv_value *v)
{
    const struct ArrowArray *a = &rd->batch;
    int rc = row_null ? GSQ_AV_NULL
                      : gsq_arrow_value(a->children[k], &rd->cols[k], a->offset + rd->row,
                                        col->type, v);
    if (rc == GSQ_AV_BROKEN) {
        gsq_run_fail(r, "stream %s: column %lld of a record batch holds broken offsets or "
                        "lacks a buffer", r->qs->streams[in->stream].name, (long long)k + 1);
        return -1;
    }
    if (rc != GSQ_AV_OK) {
        in->rows_read++;
        in->rows_rejected++;
        describe(rd, col, a->children[k], &rd->cols[k], a->offset + rd->row, rc);
        return 0;
    }
    return 1;
}

/* Convert and dispatch row rd->row.  0, or -1 (run failed). */
static int take_row(gsq_run *r, gsq_inject *in, inject_reader *rd)
{
    const gsq_stream_desc *d = &r->qs->streams[in->stream];
    const struct ArrowArray *a = &rd->batch;
    uint64_t total = d->fixed_size;
    uint32_t i, off;
    int row_null = gsq_arrow_row_null(a, rd->row);
    int kind = GSQ_DATA;

    if (rd->hb_col >= 0) {
        gsq_csv_value hb;
        int rc = take_value(r, in, rd, row_null, rd->hb_col, &hb_column, &hb);
        if (rc <= 0)
            return rc;
        if (hb.u)
            kind = GSQ_HEARTBEAT;
    }
    for (i = 0; i < d->n_cols; i++) {
        int rc = take_value(r, in, rd, row_null, rd->col_of[i], &d->cols[i], &rd->vals[i]);
        if (rc <= 0)
            return rc;
        if (d->cols[i].type == GSQ_T_STRING)
            total += rd->vals[i].s.len;
    }
    if (total > UINT32_MAX / 2) {
        in->rows_read++;
        in->rows_rejected++;
        describe(rd, &d->cols[0], NULL, NULL, 0, WHY_TOO_LARGE);
        return 0;
    }
    if (rd->pack_cap < total || !rd->pack) {
        size_t ncap = rd->pack_cap ? rd->pack_cap : 256;
        uint8_t *nb;
        while (ncap < total)
            ncap *= 2;
        nb = realloc(rd->pack, ncap);
        if (!nb) {
            gsq_run_fail(r, "out of memory");
            return -1;
        }
        rd->pack = nb;
        rd->pack_cap = ncap;
    }
    memset(rd->pack, 0, d->fixed_size);
    off = d->fixed_size;
    for (i = 0; i < d->n_cols; i++) {
        const gsq_column *c = &d->cols[i];
        if (c->type == GSQ_T_STRING) {
            gsq_strref ref;
            ref.off = off;
            ref.len = rd->vals[i].s.len;
            memcpy(rd->pack + c->offset, &ref, sizeof ref);
            if (ref.len)
                memcpy(rd->pack + off, rd->vals[i].s.p, ref.len);
            off += ref.len;
        } else {
            put(rd->pack + c->offset, c->type, &rd->vals[i]);
        }
    }
    in->rows_read++;
    gsq_dispatch(r, in->stream, kind, rd->pack, (uint32_t)total);
    return 0;
}

/* m values of a column into the packed tuples' field at dst (tuple j's at
 * dst + j * stride). */
static void pack_column(uint8_t *dst, size_t stride, int type, const gsq_csv_value *v,
                        uint32_t m)
{
    uint32_t j;
    switch (type) {
    case GSQ_T_UINT: case GSQ_T_IP:
        for (j = 0; j < m; j++) {
            uint32_t x = (uint32_t)v[j].u;
            memcpy(dst + j * stride, &x, 4);
        }
        break;
    case GSQ_T_ULLONG:
        for (j = 0; j < m; j++)
            memcpy(dst + j * stride, &v[j].u, 8);
        break;
    default:
        for (j = 0; j < m; j++)
            put(dst + j * stride, type, &v[j]);
        break;
    }
}

/* Rows [row, row + m) of the current batch as one run: 0 when dispatched;
 * 1 when some value is null or malformed (nothing was dispatched: the rows
 * are to be taken one by one). */
static int take_run(gsq_run *r, gsq_inject *in, inject_reader *rd, uint32_t m)
{
    const gsq_stream_desc *d = &r->qs->streams[in->stream];
    const struct ArrowArray *a = &rd->batch;
    uint32_t i;
    if (a->null_count != 0 && a->buffers[0])
        return 1;       /* rows null as a whole: each one is described */
    memset(rd->run_rc, 0, m);
    for (i = 0; i < d->n_cols; i++) {
        int64_t k = rd->col_of[i];
        if (gsq_arrow_values(a->children[k], &rd->cols[k], a->offset + rd->row, m,
                             d->cols[i].type, (uint8_t *)(rd->run_vals + (size_t)i * INJECT_RUN),
                             sizeof(gsq_csv_value), rd->run_valid, 1, rd->run_rc) != 0)
            return 1;
    }
    memset(rd->run_tups, 0, (size_t)m * d->fixed_size);
    for (i = 0; i < d->n_cols; i++)
        pack_column(rd->run_tups + d->cols[i].offset, d->fixed_size, d->cols[i].type,
                    rd->run_vals + (size_t)i * INJECT_RUN, m);
    in->rows_read += m;
    gsq_dispatch_run(r, in->stream, rd->run_tups, d->fixed_size, d->fixed_size, m);
    return 0;
}

int gsq_inject_step(gsq_run *r, gsq_inject *in)
{
    inject_reader *rd = in->impl;
    uint32_t n = 0, m = 1, one_by_one = 0;
    while (!in->at_eof && !r->failed && n < r->batch) {
        if (!rd->batch.release || rd->row >= rd->batch.length) {
            if (next_batch(r, in, rd) != 0)
                return -1;
            continue;
        }
        if (rd->runs && !one_by_one) {
            int64_t left = rd->batch.length - rd->row;
            m = r->batch - n < INJECT_RUN ? r->batch - n : INJECT_RUN;
            if (left < (int64_t)m)
                m = (uint32_t)left;
            if (take_run(r, in, rd, m) != 0) {
                one_by_one = m;     /* these m rows a row at a time */
                continue;
            }
        } else {
            m = 1;
            if (take_row(r, in, rd) != 0)
                return -1;
            if (one_by_one)
                one_by_one--;
        }
        rd->row += m;
        rd->row_no += m;
        n += m;
    }
    return r->failed ? -1 : 0;
}

void gsq_inject_report(const gsq_inject *in, gsq_buf *out)
{
    const inject_reader *rd = in->impl;
    if (!rd || !in->rows_rejected)
        return;
    gsq_buf_printf(out, "gsqlc: %s: %llu of %llu rows rejected as malformed%s\n",
                   gsq_buf_str(&rd->name), (unsigned long long)in->rows_rejected,
                   (unsigned long long)in->rows_read,
                   in->rows_rejected > rd->n_described ? "; the first ones:" : ":");
    gsq_buf_add(out, rd->described.p, rd->described.len);
}
