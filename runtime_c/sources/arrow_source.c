/*
 * arrow_source.c -- an interface bound to an Arrow stream of record batches
 * (gsqlc_bind_arrow).  Its records are CSV records (kind GSQ_SRC_CSV): only
 * the value cache is filled, so the LFTAs of CSV-kind PROTOCOLs read it
 * through the gsq_csv_get_* accessors unchanged.
 *
 * At open, every (position, type) slot the LFTAs read is given a column of
 * the stream's schema: the column named like a PROTOCOL field read at that
 * position (arrow_in.h: exact name, else ignoring case); a missing column
 * or one whose format cannot give the slot's type fails the run before any
 * row is read.
 *
 * Row policy: a null value leaves its slot invalid (record->valid), which
 * the accessors report as an unavailable field; a value out of its type's
 * range, or an invalid address text, rejects the row (counted, the first
 * GSQ_MAX_DESCRIBED described, like malformed CSV rows).
 *
 * Timestamps (source_time.c): with a time column (s->has_ts) every record
 * is stamped from its cached value (a null time is unreadable).  There is
 * no arrival column: a row arrives at its time.  Replay in time (run/loop.c,
 * a table bound as a recording): arrow_peek gives the next row's instant
 * (a row with an unreadable time: the last readable one), and a read stops
 * before the first row that arrived after s->limit_usec -- found by a scan
 * of the time column alone (time_cut), only when there is a limit -- so
 * that row stays where it is, the next row of its batch, read by a later
 * round (counted in s->held_back each time a read stops at it).  Nothing
 * is stamped or counted ahead: peek converts the next row to learn its
 * instant without stamping it (stamp_ahead), and the rows before it that a
 * conversion rejects are counted and passed then, once.
 *
 * Columnar reading (s->columnar, run/loop.c): the same rows, the same
 * conversion, rejections and stamps, delivered as chunks of columns
 * (s->chunk, core/chunk.c, over the value cache's slots) instead of ring
 * records; a column that needs no conversion is not converted but read
 * where it is (gsq_col.raw), and an integer column of another width or sign
 * than its 32-bit slot is narrowed into rd->narrowed when its values fit.
 * A chunk never spans two record batches either, and is processed before
 * the next read_cols; under a time limit it also ends before the first row
 * past it.
 *
 * Reader state invariants: batch is the current record batch (release !=
 * NULL while held) and row the next of its rows to convert; a ring batch
 * never spans two record batches, so the records of the ring (whose string
 * values point into batch's buffers) are processed before batch is
 * released.  peek is called between rounds only (the ring empty, the last
 * chunk processed), so it may release the batch for the next.  schema is
 * held from open to close.  slot_col[k] is the schema child of slot
 * cs.slot[k]; used[i] marks the children some slot reads.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "arrow_in.h"
#include "format.h"
#include "gsq_source_ops.h"

typedef struct arrow_reader {
    gsq_buf name;              /* "arrow:IFACE", for messages */
    struct ArrowSchema schema;
    struct ArrowArray batch;
    int64_t row;
    uint64_t row_no;           /* rows seen so far (1-based row numbers) */
    gsq_csv_slots cs;
    int64_t *slot_col;
    gsq_arrow_col *cols;       /* schema.n_children */
    uint8_t *used;
    uint32_t n_described;
    gsq_buf described;
    uint8_t *rc;               /* per row of a run: its gsq_arrow_value_rc */
    uint32_t *fail_slot;       /* per row of a run: the slot that failed, or
                                * NO_SLOT (kept NO_SLOT between runs) */
    int batch_flushed;         /* batch is wholly read and its end signalled */
    uint32_t *narrowed;        /* columnar: per slot, chunk->cap values of an integer
                                * column of another width or sign, narrowed to the
                                * slot's 32-bit type (narrow_column); NULL until needed */
    int32_t time_slot;         /* the slot of the source's time column, -1 */
    gsq_csv_value *peek_vals;  /* arrow_peek: the next row's cs.n values */
    uint8_t *peek_valid;       /*   and their validity */
    /* time_cut over an integer time column: a value x stamps after
     * cut_limit exactly when cut_h < x <= cut_b (above cut_b: unreadable,
     * or not a value of the slot's type); cut_b set when cut_known */
    int cut_known;
    uint64_t cut_b, cut_h, cut_limit;
} arrow_reader;

void gsq_arrow_stream_release(struct ArrowArrayStream **stream)
{
    struct ArrowArrayStream *st = *stream;
    if (st && st->release)
        st->release(st);
    *stream = NULL;
}

/* ---- setup ------------------------------------------------------------ */

/* The column read at position pos: the first name of a field at pos that
 * matches a column exactly, else the first that matches ignoring case. */
static int64_t column_of(const gsq_source *s, const struct ArrowSchema *schema, uint32_t pos)
{
    int pass;
    uint32_t i, j;
    int64_t k;
    for (pass = 0; pass < 2; pass++)
        for (i = 0; i < s->n_lftas; i++) {
            const gsq_lfta_def *d = s->lftas[i]->lfta;
            for (j = 0; j < d->n_csv_fields; j++) {
                const gsq_csv_field *f = &d->csv_fields[j];
                if (f->pos != pos || !f->name)
                    continue;
                if (pass == 0) {
                    for (k = 0; k < schema->n_children; k++)
                        if (schema->children[k] && schema->children[k]->name &&
                            strcmp(schema->children[k]->name, f->name) == 0)
                            return k;
                } else if ((k = gsq_arrow_find(schema, f->name)) >= 0) {
                    return k;
                }
            }
        }
    return -1;
}

static int match_columns(gsq_run *r, gsq_source *s, arrow_reader *rd)
{
    const struct ArrowSchema *sc = &rd->schema;
    uint32_t k;
    int64_t i;
    for (i = 0; i < sc->n_children; i++) {
        if (!sc->children || !sc->children[i]) {
            gsq_run_fail(r, "interface '%s': the Arrow stream's schema is broken (column %lld "
                            "missing)", s->iface, (long long)i + 1);
            return -1;
        }
        gsq_arrow_classify(sc->children[i], &rd->cols[i]);
    }
    for (k = 0; k < rd->cs.n; k++) {
        uint32_t pos = rd->cs.slot[k].pos;
        int type = rd->cs.slot[k].type;
        const gsq_lfta_def *d = NULL;
        const gsq_csv_field *f = gsq_source_field_at(s, pos, type, &d);
        gsq_buf m = {0};
        int64_t c;
        if (!f) {
            d = NULL;
            for (i = 0; i < (int64_t)s->n_lftas && !d; i++) {
                uint32_t j;
                for (j = 0; j < s->lftas[i]->lfta->n_csv_fields; j++)
                    if (s->lftas[i]->lfta->csv_fields[j].pos == pos)
                        d = s->lftas[i]->lfta;
            }
            gsq_run_fail(r, "interface '%s' is bound to an Arrow stream, but LFTA %s (PROTOCOL "
                            "%s) does not name the field it reads at CSV position %u: rebuild "
                            "the query set with this gsqlc", s->iface, d ? d->name : "?",
                         d ? d->protocol : "?", (unsigned)pos);
            return -1;
        }
        c = column_of(s, sc, pos);
        if (c < 0) {
            gsq_arrow_list_columns(&m, sc);
            gsq_run_fail(r, "interface '%s': the Arrow stream has no column for field '%s' "
                            "(%s) of PROTOCOL %s (its columns: %s)",
                         s->iface, f->name, gsq_type_name(type), d->protocol,
                         gsq_buf_str(&m));
            gsq_buf_free(&m);
            return -1;
        }
        if (!gsq_arrow_compatible(type, &rd->cols[c])) {
            const char *cn = sc->children[c]->name ? sc->children[c]->name : "";
            gsq_arrow_describe_format(&m, rd->cols[c].format);
            gsq_run_fail(r, "interface '%s': field '%s' of PROTOCOL %s is %s, but Arrow column "
                            "'%s' has format %s; expected %s%s",
                         s->iface, f->name, d->protocol, gsq_type_name(type), cn,
                         gsq_buf_str(&m), gsq_arrow_expected(type),
                         rd->cols[c].cat == GSQ_AC_DICT
                             ? " (dictionary-encoded columns are not read: decode them first)"
                             : "");
            gsq_buf_free(&m);
            return -1;
        }
        rd->slot_col[k] = c;
        rd->used[c] = 1;
    }
    return 0;
}

/* Rows a columnar chunk of a run's only input takes from a batch by
 * default (otherwise a ring batch's: r->batch); gsq_record.h says why. */
#define ARROW_CHUNK_ROWS GSQ_ARROW_CHUNK_ROWS

static int arrow_open(gsq_run *r, gsq_source *s)
{
    arrow_reader *rd = calloc(1, sizeof *rd);
    struct ArrowArrayStream *st = s->arrow;
    gsq_buf who = {0};
    int rc;
    uint32_t rows;
    if (!rd) {
        gsq_run_fail(r, "out of memory");
        return -1;
    }
    s->impl = rd;
    gsq_buf_printf(&rd->name, "arrow:%s", s->iface);
    gsq_buf_printf(&who, "interface '%s'", s->iface);
    rc = gsq_arrow_open_schema(r, gsq_buf_str(&who), st, &rd->schema, &rd->cols, &rd->used);
    gsq_buf_free(&who);
    if (rc != 0)
        return -1;
    if (gsq_csv_slots_build(&rd->cs, s) != 0)
        goto oom;
    /* Data held in memory that is the run's only input takes more rows per
     * chunk than a ring batch (unless the run was given its batch): what a
     * chunk costs besides its rows (the LFTAs' calls and set-up, an
     * aggregation's prefetch pipeline filling, the heartbeat checks) is then
     * paid once per ARROW_CHUNK_ROWS.  Otherwise the batch stays the step
     * by which the run loop interleaves its inputs and a live feed's rows
     * meet the clock and the heartbeats (a larger step lets one interface
     * run further ahead of another, past the disorder its readers keep). */
    rows = s->columnar && !r->batch_given && !r->arrow_flush && r->n_sources == 1 &&
                   r->n_injects == 0 && s->ring.max_recs < ARROW_CHUNK_ROWS
               ? ARROW_CHUNK_ROWS
               : s->ring.max_recs;
    rd->slot_col = calloc(rd->cs.n ? rd->cs.n : 1, sizeof *rd->slot_col);
    rd->rc = malloc(rows);
    rd->fail_slot = malloc(rows * sizeof *rd->fail_slot);
    rd->peek_vals = calloc(rd->cs.n ? rd->cs.n : 1, sizeof *rd->peek_vals);
    rd->peek_valid = calloc(rd->cs.n ? rd->cs.n : 1, 1);
    if (!rd->slot_col || !rd->rc || !rd->fail_slot || !rd->peek_vals || !rd->peek_valid)
        goto oom;
    memset(rd->fail_slot, 0xff, rows * sizeof *rd->fail_slot);
    rd->time_slot = gsq_csv_slot_of(&rd->cs, s->time_pos, s->time_type);
    if (s->columnar && gsq_chunk_init(&s->chunk, s, rows, &rd->cs.layout) != 0)
        goto oom;
    return match_columns(r, s, rd);
oom:
    gsq_run_fail(r, "out of memory");
    return -1;
}

static void arrow_close(gsq_source *s)
{
    arrow_reader *rd = s->impl;
    if (rd) {
        if (rd->batch.release)
            rd->batch.release(&rd->batch);
        if (rd->schema.release)
            rd->schema.release(&rd->schema);
        gsq_csv_slots_free(&rd->cs);
        free(rd->slot_col);
        free(rd->rc);
        free(rd->fail_slot);
        free(rd->narrowed);
        free(rd->peek_vals);
        free(rd->peek_valid);
        free(rd->cols);
        free(rd->used);
        gsq_buf_free(&rd->name);
        gsq_buf_free(&rd->described);
        free(rd);
        s->impl = NULL;
    }
    gsq_arrow_stream_release(&s->arrow);
}

/* ---- rows ------------------------------------------------------------- */

/* Release the current batch and take the next non-empty one; at the end of
 * the stream set at_eof and release the stream.  0, or -1 (run failed). */
static int next_batch(gsq_run *r, gsq_source *s, arrow_reader *rd)
{
    struct ArrowArrayStream *st = s->arrow;
    char msg[256];
    for (;;) {
        int rc;
        int64_t k;
        if (rd->batch.release)
            rd->batch.release(&rd->batch);
        memset(&rd->batch, 0, sizeof rd->batch);
        rd->row = 0;
        rc = st->get_next(st, &rd->batch);
        if (rc != 0) {
            rd->batch.release = NULL;
            gsq_run_fail(r, "interface '%s': the Arrow stream failed: %s", s->iface,
                         gsq_arrow_stream_error(st, rc));
            return -1;
        }
        if (!rd->batch.release) { /* end of stream */
            s->at_eof = 1;
            gsq_arrow_stream_release(&s->arrow);
            return 0;
        }
        if (gsq_arrow_check_batch(&rd->batch, &rd->schema, rd->cols, rd->used, msg,
                                  sizeof msg) != 0) {
            gsq_run_fail(r, "interface '%s': %s", s->iface, msg);
            return -1;
        }
        for (k = 0; k < rd->schema.n_children; k++)
            if (rd->used[k])
                s->bytes_read += gsq_arrow_bytes(rd->batch.children[k], &rd->cols[k],
                                                 rd->batch.offset, rd->batch.length);
        if (rd->batch.length > 0)
            return 0;
    }
}

static void describe(arrow_reader *rd, uint64_t row, const struct ArrowSchema *col,
                     const struct ArrowArray *ch, const gsq_arrow_col *c, int64_t idx, int type,
                     int why)
{
    gsq_buf *b = &rd->described;
    const char *cn = col->name ? col->name : "";
    if (rd->n_described >= GSQ_MAX_DESCRIBED)
        return;
    rd->n_described++;
    gsq_buf_printf(b, "gsqlc: %s: row %llu: column '", gsq_buf_str(&rd->name),
                   (unsigned long long)row);
    gsq_buf_quote_text(b, cn, strlen(cn), 40);
    gsq_buf_adds(b, "': ");
    if (why == GSQ_AV_LONG) {
        gsq_buf_adds(b, "a string of 4 GiB or more\n");
        return;
    }
    gsq_arrow_describe_value(b, ch, c, idx);
    gsq_buf_printf(b, why == GSQ_AV_RANGE ? " is out of range for %s\n" : " is not a valid %s\n",
                   gsq_type_name(type));
}

enum { ROW_DONE, ROW_FULL, ROW_ERR, ROW_HELD };

#define NO_SLOT UINT32_MAX

/* Convert the next m rows of the batch, a column at a time
 * (gsq_arrow_values): slot k's value of row j goes to vals + k * kstep +
 * j * stride, its validity to valid + k * vkstep + j * vstride; a row that
 * a conversion rejects gets rd->rc[j] set and rd->fail_slot[j] to its
 * first failing slot; a row null as a whole is a row of nulls.  Slots
 * with raw[k].raw set (raw may be NULL) are left as they are.  Returns
 * the GSQ_AVS_* flags seen, or -1 with the run failed (a broken array). */
static int convert_rows(gsq_run *r, gsq_source *s, arrow_reader *rd, uint32_t m, uint8_t *vals,
                        size_t kstep, size_t stride, uint8_t *valid, size_t vkstep,
                        size_t vstride, const gsq_col *raw)
{
    const struct ArrowArray *a = &rd->batch;
    uint32_t n = rd->cs.n, k, j;
    int flags = 0, struct_nulls = a->null_count != 0 && a->buffers[0];
    uint8_t *rc = rd->rc;
    memset(rc, 0, m);
    for (k = 0; k < n; k++) {
        int64_t c = rd->slot_col[k];
        int f;
        if (raw && raw[k].raw)
            continue; /* read as it is */
        f = gsq_arrow_values(a->children[c], &rd->cols[c], a->offset + rd->row, m,
                                 rd->cs.slot[k].type, vals + k * kstep, stride,
                                 valid + k * vkstep, vstride, rc);
        if (f & GSQ_AVS_FAILED)
            for (j = 0; j < m; j++)
                if (rc[j] && rd->fail_slot[j] == NO_SLOT)
                    rd->fail_slot[j] = k;
        flags |= f;
    }
    if (struct_nulls) /* a null row is a row of nulls, never a rejection */
        for (j = 0; j < m; j++)
            if (gsq_arrow_row_null(a, rd->row + j)) {
                for (k = 0; k < n; k++) {
                    gsq_csv_value *v = (gsq_csv_value *)(void *)(vals + k * kstep + j * stride);
                    memset(v, 0, sizeof *v);
                    if (rd->cs.slot[k].type == GSQ_T_STRING)
                        v->s.p = "";
                    valid[k * vkstep + j * vstride] = 0;
                }
                rc[j] = 0;
                rd->fail_slot[j] = NO_SLOT;
                flags |= GSQ_AVS_NULL;
            }
    for (j = 0; (flags & GSQ_AVS_FAILED) && j < m; j++) /* rc is set only with FAILED */
        if (rc[j] == GSQ_AV_BROKEN) {
            gsq_run_fail(r, "interface '%s': column %lld of a record batch holds broken "
                            "offsets or lacks a buffer",
                         s->iface, (long long)rd->slot_col[rd->fail_slot[j]] + 1);
            return -1;
        }
    return flags;
}

/* Count and describe row j of the last conversion, which it rejected. */
static void reject_row(gsq_source *s, arrow_reader *rd, uint32_t j)
{
    const struct ArrowArray *a = &rd->batch;
    int64_t c = rd->slot_col[rd->fail_slot[j]];
    s->rows_rejected++;
    describe(rd, rd->row_no + j + 1, rd->schema.children[c], a->children[c], &rd->cols[c],
             a->offset + rd->row + j, rd->cs.slot[rd->fail_slot[j]].type, rd->rc[j]);
    rd->fail_slot[j] = NO_SLOT;
}

static void advance(gsq_source *s, arrow_reader *rd, uint32_t m)
{
    s->records_read += m;
    rd->row += m;
    rd->row_no += m;
}

/* ---- replay in time ----------------------------------------------------- */

/* The stamp gsq_source_stamp gives a row whose time value is tv, the
 * source's stamping state and counters left as they were: a row looked at
 * ahead is stamped, and its unreadable time counted, when it is read. */
static void stamp_ahead(gsq_source *s, const gsq_csv_value *tv, gsq_stamp *st)
{
    uint64_t app = s->last_app_usec, arrival = s->last_arrival_usec;
    uint64_t unreadable = s->time_unreadable;
    gsq_source_stamp(s, tv, NULL, st);
    s->last_app_usec = app;
    s->last_arrival_usec = arrival;
    s->time_unreadable = unreadable;
}

/* Row `row` of the batch's time value read from its column alone (NULL:
 * null, a null row, or a value the slot's type cannot hold -- an
 * unreadable time either way). */
static const gsq_csv_value *row_time(const arrow_reader *rd, int64_t row, gsq_csv_value *tmp)
{
    const struct ArrowArray *a = &rd->batch;
    int32_t ts = rd->time_slot;
    int64_t c = rd->slot_col[ts];
    if (gsq_arrow_row_null(a, row))
        return NULL;
    return gsq_arrow_value(a->children[c], &rd->cols[c], a->offset + row, rd->cs.slot[ts].type,
                           tmp) == GSQ_AV_OK
               ? tmp
               : NULL;
}

/* The largest value of integer type `type` (0: not an integer type). */
static uint64_t int_type_max(int type)
{
    switch (type) {
    case GSQ_T_USHORT: return UINT16_MAX;
    case GSQ_T_UINT: case GSQ_T_IP: return UINT32_MAX;
    case GSQ_T_INT: return INT32_MAX;
    case GSQ_T_ULLONG: return UINT64_MAX;
    case GSQ_T_LLONG: return INT64_MAX;
    default: return 0;
    }
}

/* Whether the time value x (>= 0, of the time slot's integer type) is
 * readable and stamps at or before `limit` (UINT64_MAX: readable). */
static int int_time_by(gsq_source *s, const arrow_reader *rd, uint64_t x, uint64_t limit)
{
    int type = rd->cs.slot[rd->time_slot].type;
    gsq_csv_value v;
    gsq_stamp st;
    memset(&v, 0, sizeof v);
    if (type == GSQ_T_INT || type == GSQ_T_LLONG)
        v.i = (int64_t)x;
    else
        v.u = x;
    stamp_ahead(s, &v, &st);
    return !st.unreadable && st.arrival_usec <= limit;
}

/* The largest x in [0, hi] for which int_time_by holds: it holds at 0 (0
 * units is 0 us) and a stamp grows with its value, up to where values
 * turn unreadable -- so the rows past a limit are those between two
 * values, found by bisection, not by stamping each row. */
static uint64_t int_time_last(gsq_source *s, const arrow_reader *rd, uint64_t hi,
                              uint64_t limit)
{
    uint64_t lo = 0;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2 + 1;
        if (int_time_by(s, rd, mid, limit))
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

#define CUT_LOOP(CT, VT)                                                     \
    for (j = 0; j < m; j++) {                                                \
        CT x;                                                                \
        memcpy(&x, p + (size_t)j * sizeof(CT), sizeof(CT));                 \
        if ((VT)x > (VT)h && (VT)x <= (VT)b)                                 \
            break;                                                           \
    }

/* time_cut over a time column of integers without nulls, by value: 1
 * and *cut, or 0 when the column is not one. */
static int int_time_cut(gsq_source *s, arrow_reader *rd, uint32_t m, uint32_t *cut)
{
    const struct ArrowArray *a = &rd->batch, *c = a->children[rd->slot_col[rd->time_slot]];
    const gsq_arrow_col *col = &rd->cols[rd->slot_col[rd->time_slot]];
    uint64_t hi = int_type_max(rd->cs.slot[rd->time_slot].type), h, b;
    const uint8_t *p;
    uint32_t j;
    if (!hi || (col->cat != GSQ_AC_INT && col->cat != GSQ_AC_UINT) ||
        (a->null_count != 0 && a->buffers[0]) || (c->null_count != 0 && c->buffers[0]))
        return 0;
    if (!rd->cut_known) {
        rd->cut_b = int_time_last(s, rd, hi, UINT64_MAX);
        rd->cut_known = 1;
        rd->cut_limit = UINT64_MAX; /* cut_h not yet known */
    }
    if (rd->cut_limit != s->limit_usec) {
        rd->cut_h = int_time_last(s, rd, rd->cut_b, s->limit_usec);
        rd->cut_limit = s->limit_usec;
    }
    h = rd->cut_h;
    b = rd->cut_b;
    if (col->cat == GSQ_AC_INT) { /* compared as int64_t: a negative x is never past */
        h = h > INT64_MAX ? INT64_MAX : h;
        b = b > INT64_MAX ? INT64_MAX : b;
    }
    p = (const uint8_t *)c->buffers[1] + (size_t)(c->offset + a->offset + rd->row) * (size_t)col->width;
    switch (col->width * (col->cat == GSQ_AC_INT ? -1 : 1)) {
    case 1: CUT_LOOP(uint8_t, uint64_t) break;
    case 2: CUT_LOOP(uint16_t, uint64_t) break;
    case 4: CUT_LOOP(uint32_t, uint64_t) break;
    case 8: CUT_LOOP(uint64_t, uint64_t) break;
    case -1: CUT_LOOP(int8_t, int64_t) break;
    case -2: CUT_LOOP(int16_t, int64_t) break;
    case -4: CUT_LOOP(int32_t, int64_t) break;
    case -8: CUT_LOOP(int64_t, int64_t) break;
    default: return 0;
    }
    *cut = j;
    return 1;
}

#undef CUT_LOOP

/* time_cut over any time column: the next m rows stamped one by one. */
static uint32_t stamp_time_cut(gsq_source *s, const arrow_reader *rd, uint32_t m)
{
    uint32_t j;
    for (j = 0; j < m; j++) {
        gsq_csv_value tmp;
        gsq_stamp st;
        const gsq_csv_value *tv = row_time(rd, rd->row + j, &tmp);
        if (!tv)
            continue;
        stamp_ahead(s, tv, &st);
        if (!st.unreadable && st.arrival_usec > s->limit_usec)
            break;
    }
    return j;
}

/* How many of the next m rows of the batch a read under s->limit_usec
 * takes: those before the first whose time is readable and after it (a
 * row with an unreadable time is never held back).  A scan of the time
 * column, one row past the cut at most, and none without a limit: by
 * value for integers without nulls (int_time_cut), else a stamp a row. */
static uint32_t time_cut(gsq_source *s, arrow_reader *rd, uint32_t m)
{
    uint32_t cut;
    if (s->limit_usec == UINT64_MAX || !s->has_ts || rd->time_slot < 0)
        return m;
    return int_time_cut(s, rd, m, &cut) ? cut : stamp_time_cut(s, rd, m);
}

/* Convert the next rows of the batch into a run of ring records; the rows
 * a conversion rejects are counted and described in row order, and take
 * no record.  ROW_HELD: the run ends before a row past the time limit. */
static int take_rows(gsq_run *r, gsq_source *s, arrow_reader *rd)
{
    const struct ArrowArray *a = &rd->batch;
    uint32_t n = rd->cs.n, j, got = 0, kept = 0, want, cut;
    size_t vals_sz = (size_t)n * sizeof(gsq_csv_value);
    size_t rec_sz = (vals_sz + n + 7u) & ~(size_t)7u;
    int64_t left = a->length - rd->row;
    int flags;
    uint8_t *base, *rc = rd->rc;
    gsq_record *rec;

    /* at most the records the batch has room for: the time scan reads no further */
    want = s->ring.max_recs - s->ring.n_recs;
    if (left < (int64_t)want)
        want = (uint32_t)left;
    cut = time_cut(s, rd, want);
    if (cut == 0) { /* the next row is a later round's */
        s->held_back++;
        return ROW_HELD;
    }
    base = gsq_ring_reserve_run(&s->ring, vals_sz + n, cut, &got);
    if (!base) {
        if (s->ring.used == 0) {
            gsq_run_fail(r, "out of memory reading %s", gsq_buf_str(&rd->name));
            return ROW_ERR;
        }
        return ROW_FULL;
    }
    flags = convert_rows(r, s, rd, got, base, sizeof(gsq_csv_value), rec_sz, base + vals_sz, 1,
                         rec_sz, NULL);
    if (flags < 0)
        return ROW_ERR;
    for (j = 0; j < got; j++)
        kept += rc[j] == 0;
    rec = gsq_ring_commit_run(&s->ring, (size_t)got * rec_sz, kept);
    for (j = 0; j < got; j++) {
        uint8_t *mem = base + j * rec_sz;
        if (rc[j]) {
            reject_row(s, rd, j);
            continue;
        }
        rec->kind = GSQ_SRC_CSV;
        rec->vals = (const gsq_csv_value *)(void *)mem;
        rec->layout = &rd->cs.layout;
        rec->valid = (flags & GSQ_AVS_NULL) && memchr(mem + vals_sz, 0, n) ? mem + vals_sz
                                                                           : NULL;
        if (s->has_ts) {
            gsq_stamp st;
            int32_t ts = rd->time_slot;
            gsq_source_stamp(s, ts >= 0 && mem[vals_sz + (size_t)ts] ? &rec->vals[ts] : NULL,
                             NULL, &st);
            rec->app_usec = st.app_usec;
            rec->arrival_usec = st.arrival_usec;
            rec->ts_unreadable = st.unreadable;
        }
        rec++;
    }
    advance(s, rd, got);
    if (got == cut && cut < want) { /* the next row is a later round's */
        s->held_back++;
        return ROW_HELD;
    }
    return ROW_DONE;
}

/* Whether slot type `type` may be read from column c as it is (gsq_col.raw):
 * the values have exactly the type's C representation. */
static int raw_width(int type, const gsq_arrow_col *c)
{
    switch (type) {
    case GSQ_T_USHORT: return c->cat == GSQ_AC_UINT && c->width == 2;
    case GSQ_T_UINT: case GSQ_T_IP: return c->cat == GSQ_AC_UINT && c->width == 4;
    case GSQ_T_INT: return c->cat == GSQ_AC_INT && c->width == 4;
    case GSQ_T_ULLONG: return c->cat == GSQ_AC_UINT && c->width == 8;
    case GSQ_T_LLONG: return c->cat == GSQ_AC_INT && c->width == 8;
    case GSQ_T_FLOAT: return c->cat == GSQ_AC_F64;
    default: return 0;
    }
}

/* The values of an integer column of another width or sign than slot k's
 * 32-bit type (UINT, IP, INT) -- e.g. Spark's LongType or a pandas int64
 * column for a uint field -- narrowed into rd->narrowed when all m are in
 * the type's range, so the slot is read as it is (gsq_col.raw) instead of
 * through gsq_csv_value conversion; NULL when one is out of range (the
 * conversion then rejects its row) or the column is not such a column.
 * `p` is the column's first value of the chunk, aligned for its width; the
 * column has no nulls. */
#define NARROW_LOOP(CT)                                                                  \
    for (j = 0; j < m; j++) {                                                            \
        CT x;                                                                            \
        memcpy(&x, p + (size_t)j * sizeof(CT), sizeof(CT));                             \
        /* x - lo (mod 2^64) is past span exactly when x is outside [lo, lo + span] */ \
        bad |= (uint64_t)(int64_t)x - (uint64_t)lo > span;                               \
        out[j] = (uint32_t)x;                                                            \
    }

static const void *narrow_column(arrow_reader *rd, uint32_t k, size_t cap,
                                 const gsq_arrow_col *col, const uint8_t *p, uint32_t m)
{
    int type = rd->cs.slot[k].type;
    int64_t lo = type == GSQ_T_INT ? INT32_MIN : 0;
    uint64_t span = UINT32_MAX, bad = 0;
    uint32_t *out, j;
    if (type != GSQ_T_UINT && type != GSQ_T_IP && type != GSQ_T_INT)
        return NULL;
    if (col->cat != GSQ_AC_INT && col->cat != GSQ_AC_UINT)
        return NULL;
    if (col->width != 8 && col->width != 4)
        return NULL;
    if (!rd->narrowed && !(rd->narrowed = malloc((size_t)rd->cs.n * cap * sizeof(uint32_t))))
        return NULL; /* converted as any column instead */
    out = rd->narrowed + (size_t)k * cap;
    if (col->cat == GSQ_AC_UINT && col->width == 8) {
        uint64_t over = 0; /* above INT64_MAX: (int64_t)x would wrap into range */
        for (j = 0; j < m; j++) {
            uint64_t x;
            memcpy(&x, p + (size_t)j * 8, 8);
            over |= x >> 63;
        }
        if (over)
            return NULL;
        NARROW_LOOP(uint64_t)
    } else if (col->width == 8) {
        NARROW_LOOP(int64_t)
    } else if (col->cat == GSQ_AC_INT) {
        NARROW_LOOP(int32_t)
    } else {
        NARROW_LOOP(uint32_t)
    }
    return bad ? NULL : out;
}

/* Row j's value of the time slot in the chunk (NULL: none, or null). */
static const gsq_csv_value *time_value(const arrow_reader *rd, const gsq_chunk *ch, uint32_t j,
                                       gsq_csv_value *tmp)
{
    size_t cap = ch->cap;
    int32_t ts = rd->time_slot;
    int64_t c;
    if (ts < 0)
        return NULL;
    if (!ch->slot_cols[ts].raw)
        return ch->valid[(size_t)ts * cap + j] ? &ch->vals[(size_t)ts * cap + j] : NULL;
    /* a column read in place: its one value converted as any other */
    c = rd->slot_col[ts];
    return gsq_arrow_value(rd->batch.children[c], &rd->cols[c], rd->batch.offset + rd->row + j,
                           rd->cs.slot[ts].type, tmp) == GSQ_AV_OK
               ? tmp
               : NULL;
}

/* Stamp row j of the chunk, as take_rows stamps a record. */
static void stamp_row(gsq_source *s, const arrow_reader *rd, gsq_chunk *ch, uint32_t j)
{
    gsq_stamp st;
    gsq_csv_value tv;
    gsq_source_stamp(s, time_value(rd, ch, j, &tv), NULL, &st);
    ch->app_usec[j] = st.app_usec;
    ch->arrival_usec[j] = st.arrival_usec;
    ch->ts_unreadable[j] = (uint8_t)st.unreadable;
}

/* Convert the next rows of the batch into s->chunk: the same values,
 * rejections and stamps as take_rows, a column per slot.  Under a time
 * limit the chunk ends before the first row past it (time_cut): every
 * step below, the fast paths too, then sees the shorter chunk only. */
static int take_cols(gsq_run *r, gsq_source *s, arrow_reader *rd)
{
    gsq_chunk *ch = &s->chunk;
    int64_t left = rd->batch.length - rd->row;
    uint32_t m = left > (int64_t)ch->cap ? ch->cap : (uint32_t)left, k, j, cut;
    int summary, raw_times, data_clock;
    uint32_t last_kept;
    size_t cap = ch->cap;
    const struct ArrowArray *a = &rd->batch;
    int flags, struct_nulls = a->null_count != 0 && a->buffers[0];
    if ((cut = time_cut(s, rd, m)) < m) {
        s->held_back++; /* the row after the chunk is a later round's */
        if ((m = cut) == 0)
            return 0;
    }
    for (k = 0; k < rd->cs.n; k++) {
        const struct ArrowArray *c = a->children[rd->slot_col[k]];
        const gsq_arrow_col *col = &rd->cols[rd->slot_col[k]];
        const uint8_t *p = (const uint8_t *)c->buffers[1] +
                           (size_t)(c->offset + a->offset + rd->row) * (size_t)col->width;
        /* as it is (no nulls, the exact representation, aligned for it),
         * or narrowed into rd->narrowed (an integer of another width or sign) */
        int plain = !struct_nulls && (c->null_count == 0 || !c->buffers[0]) &&
                    (col->cat == GSQ_AC_INT || col->cat == GSQ_AC_UINT || col->cat == GSQ_AC_F64) &&
                    (uintptr_t)p % (uintptr_t)col->width == 0;
        ch->slot_cols[k].raw = !plain                                 ? NULL
                               : raw_width(rd->cs.slot[k].type, col) ? (const void *)p
                                                                     : narrow_column(rd, k, cap, col, p, m);
    }
    flags = convert_rows(r, s, rd, m, (uint8_t *)ch->vals, cap * sizeof(gsq_csv_value),
                         sizeof(gsq_csv_value), ch->valid, cap, 1, ch->slot_cols);
    if (flags < 0)
        return -1;
    for (k = 0; k < rd->cs.n; k++)
        ch->slot_cols[k].valid = !ch->slot_cols[k].raw && (flags & GSQ_AVS_NULL) &&
                                         memchr(ch->valid + k * cap, 0, m)
                                     ? ch->valid + k * cap
                                     : NULL;
    ch->any_skipped = 0;
    /* Stamps row by row only for those who read them (the data clock,
     * generated heartbeats): a time column of uint32 or narrower values,
     * read as it is, is readable in any unit, so its last kept row says
     * all. */
    raw_times = s->has_ts && !s->arrival_pos && rd->time_slot >= 0 &&
                ch->slot_cols[rd->time_slot].raw &&
                (rd->cs.slot[rd->time_slot].type == GSQ_T_UINT ||
                 rd->cs.slot[rd->time_slot].type == GSQ_T_USHORT);
    /* under the data clock, a source none of whose LFTAs reads the clock
     * needs only the chunk's first and last stamps (ch->clock_row): the
     * clock moves to the last row of each chunk (a running maximum over
     * chunks), which for a column out of order within a chunk may trail
     * its largest value until the next chunk -- the timing of the ticks,
     * not what any LFTA of the source sees */
    data_clock = r->clock_mode == GSQ_CLOCK_DATA;
    summary = raw_times && !s->tg && (!data_clock || !s->clock_readers);
    ch->clock_row = -1;
    for (last_kept = m; last_kept > 0 && rd->rc[last_kept - 1]; last_kept--)
        ;
    last_kept--; /* UINT32_MAX when every row was rejected */
    if (!(flags & GSQ_AVS_FAILED) && (!s->has_ts || raw_times)) {
        /* no row rejected; no stamps but the last (row_ok is not read), or
         * every row's from the time column at once (row_ok read when
         * generated heartbeats drop rows: all kept so far) */
        if (summary && m) {
            if (data_clock) { /* the clock: the first row, then the last */
                stamp_row(s, rd, ch, 0);
                ch->clock_row = (int32_t)(m - 1);
            }
            stamp_row(s, rd, ch, m - 1);
        } else if (raw_times) {
            gsq_source_stamp_uints(s, ch->slot_cols[rd->time_slot].raw,
                                   rd->cs.slot[rd->time_slot].type == GSQ_T_UINT ? 4u : 2u, m,
                                   ch->app_usec, ch->arrival_usec, ch->ts_unreadable);
            memset(ch->row_ok, 1, m);
        }
        ch->n = m;
        advance(s, rd, m);
        return 0;
    }
    for (j = 0; j < m; j++) {
        ch->row_ok[j] = rd->rc[j] == 0;
        if (rd->rc[j]) {
            ch->any_skipped = 1;
            reject_row(s, rd, j);
        } else if (s->has_ts && (!summary || data_clock || j == last_kept)) {
            stamp_row(s, rd, ch, j);
        }
    }
    ch->n = m;
    advance(s, rd, m);
    return 0;
}

/* The current batch is wholly read (or there is none yet): with option
 * arrow_flush, signal its end once, handing its results over before the
 * next is awaited (a live producer may only send it in response); else
 * take the next batch.  1: back to the run loop (signalled, or at the
 * end), 0: rows to read, -1: the run failed. */
static int batch_done(gsq_run *r, gsq_source *s, arrow_reader *rd)
{
    if (r->arrow_flush && rd->batch.release && !rd->batch_flushed) {
        rd->batch_flushed = 1;
        s->input_done = 1;
        return 1;
    }
    rd->batch_flushed = 0;
    if (next_batch(r, s, rd) != 0)
        return -1;
    return s->at_eof ? 1 : 0;
}

static int arrow_read_batch(gsq_run *r, gsq_source *s)
{
    arrow_reader *rd = s->impl;
    while (!gsq_ring_batch_full(&s->ring) && !r->failed) {
        int rc;
        if (!rd->batch.release || rd->row >= rd->batch.length) {
            if (s->ring.n_recs > 0)
                return 0; /* its records point into this batch: process them first */
            if ((rc = batch_done(r, s, rd)) != 0)
                return rc < 0 ? -1 : 0;
            continue;
        }
        rc = take_rows(r, s, rd);
        if (rc == ROW_ERR)
            return -1;
        if (rc == ROW_FULL || rc == ROW_HELD)
            return 0;
    }
    return r->failed ? -1 : 0;
}

/* read_batch's rules, a chunk of columns instead of ring records: the
 * previous chunk was processed before this call, so the batch it viewed
 * may be released. */
static int arrow_read_cols(gsq_run *r, gsq_source *s)
{
    arrow_reader *rd = s->impl;
    s->chunk.n = 0;
    s->chunk.any_skipped = 0;
    while (!r->failed) {
        int rc;
        if (!rd->batch.release || rd->row >= rd->batch.length) {
            if ((rc = batch_done(r, s, rd)) != 0)
                return rc < 0 ? -1 : 0;
            continue;
        }
        return take_cols(r, s, rd);
    }
    return -1;
}

/* The arrival instant of the next row a read delivers (its time: a row
 * with an unreadable time gives the last readable one), converted here
 * and again when read, stamped then only.  The rows before it that a
 * conversion rejects are counted and passed now, once.  Called between
 * rounds (the ring empty, the last chunk processed): the batch may be
 * released for the next -- unless option arrow_flush has yet to signal
 * its end, which read_batch does first: till then the last instant read
 * stands for the next row's. */
static int arrow_peek(gsq_run *r, gsq_source *s, uint64_t *ts_usec)
{
    arrow_reader *rd = s->impl;
    while (!s->at_eof) {
        int32_t ts = rd->time_slot;
        gsq_stamp st;
        if (!rd->batch.release || rd->row >= rd->batch.length) {
            if (r->arrow_flush && rd->batch.release && !rd->batch_flushed) {
                *ts_usec = s->last_arrival_usec;
                return 1;
            }
            rd->batch_flushed = 0;
            if (next_batch(r, s, rd) != 0)
                return -1;
            continue;
        }
        if (convert_rows(r, s, rd, 1, (uint8_t *)rd->peek_vals, sizeof(gsq_csv_value), 0,
                         rd->peek_valid, 1, 0, NULL) < 0)
            return -1;
        if (rd->rc[0]) {
            reject_row(s, rd, 0);
            advance(s, rd, 1);
            continue;
        }
        stamp_ahead(s, ts >= 0 && rd->peek_valid[ts] ? &rd->peek_vals[ts] : NULL, &st);
        *ts_usec = st.arrival_usec;
        return 1;
    }
    return 0;
}

static void arrow_report(const gsq_source *s, gsq_buf *out)
{
    const arrow_reader *rd = s->impl;
    if (!rd || !s->rows_rejected)
        return;
    gsq_buf_printf(out, "gsqlc: %s: %llu of %llu rows rejected as malformed%s\n",
                   gsq_buf_str(&rd->name), (unsigned long long)s->rows_rejected,
                   (unsigned long long)s->records_read,
                   s->rows_rejected > rd->n_described ? "; the first ones:" : ":");
    gsq_buf_add(out, rd->described.p, rd->described.len);
}

/* Its records are CSV records: LFTAs of CSV-kind PROTOCOLs read it. */
static int arrow_check_lfta(gsq_run *r, const gsq_source *s, const gsq_lfta_def *d)
{
    (void)s;
    if (d->source_kind == GSQ_SRC_CSV)
        return 0;
    gsq_run_fail(r,
                 "LFTA %s: PROTOCOL %s reads packets; an Arrow source feeds CSV-style "
                 "PROTOCOLs (fields get_csv_*), e.g. the one of gsqlc's packet table "
                 "schema, but interface '%s' is bound to an Arrow stream",
                 d->name, d->protocol, d->iface);
    return -1;
}

const gsq_source_ops gsq_arrow_ops = {
    .name = "arrow",
    .records_key = "rows_read",
    .lfta_kind = GSQ_SRC_CSV,
    .check_lfta = arrow_check_lfta,
    .open = arrow_open,
    .peek = arrow_peek,
    .read_batch = arrow_read_batch,
    .read_cols = arrow_read_cols,
    .close = arrow_close,
    .report = arrow_report,
};
