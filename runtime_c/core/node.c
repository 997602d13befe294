/*
 * node.c -- the services generated code calls on its gsq_node: emitting
 * tuples, parameters, failure, the clock and counters; and the dispatch of
 * a stream's tuples to its subscribers.
 *
 * Every tuple leaving a node is packed into memory the runtime owns (the
 * LFTA's queue, the HFTA's scratch) and checked against the stream index
 * first, so generated code cannot make a subscriber read out of bounds.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "column_compress.h"
#include "format.h"
#include "gsq_internal.h"

static void set_error_v(gsq_run *r, const char *fmt, va_list ap)
{
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    gsq_buf_reset(&r->error);
    gsq_buf_adds(&r->error, msg);
}

void gsq_set_error(gsq_run *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_error_v(r, fmt, ap);
    va_end(ap);
}

void gsq_run_fail(gsq_run *r, const char *fmt, ...)
{
    va_list ap;
    if (atomic_exchange(&r->fail_claim, 1))
        return; /* the first failure is the run's */
    va_start(ap, fmt);
    set_error_v(r, fmt, ap);
    va_end(ap);
    r->failed = 1; /* after the error: whoever sees it failed reads that error */
}

void gsq_node_fail(gsq_node *node, const char *fmt, ...)
{
    va_list ap;
    char msg[1024];
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    gsq_run_fail(node->run, "%s: %s", node->name, msg);
}

int gsq_node_failed(gsq_node *node)
{
    return node->run->failed;
}

uint32_t gsq_partition(gsq_node *node, uint32_t *n)
{
    node->partitioned = 1;
    *n = node->run->part_n > 1 ? node->run->part_n : 0u;
    return node->run->part_k;
}

uint64_t gsq_node_max_groups(gsq_node *node, size_t bytes_per_group, int *given)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    uint64_t half;
    *given = node->run->max_groups != 0;
    if (*given)
        return node->run->max_groups;
    if (pages <= 0 || page <= 0)
        return UINT64_MAX; /* unknown: no limit of ours */
    half = (uint64_t)pages / 2u * (uint64_t)page;
    half /= bytes_per_group ? bytes_per_group : 1u;
    return half ? half : 1u;
}

const char *gsq_param(gsq_node *node, const char *name)
{
    gsq_run *r = node->run;
    uint32_t i;
    if (name && name[0] == '$')
        name++;
    for (i = 0; i < r->n_params; i++)
        if (strcmp(r->params[i].name, name) == 0)
            return r->params[i].value;
    return NULL;
}

const char *gsq_iface_prop(gsq_node *node, const char *name)
{
    gsq_run *r = node->run;
    const char *iface = node->iface ? node->iface : "";
    size_t li = strlen(iface);
    uint32_t i;
    for (i = 0; i < r->n_params; i++) {
        const char *k = r->params[i].name;
        if (k[0] == '@' && strncmp(k + 1, iface, li) == 0 && k[1 + li] == ':' &&
            strcmp(k + 2 + li, name) == 0)
            return r->params[i].value;
    }
    if (strcmp(name, "Name") == 0)
        return iface;
    if (strcmp(name, "Host") == 0)
        return "localhost";
    return NULL;
}

uint32_t gsq_clock_seconds(gsq_node *node)
{
    gsq_run *r = node->run;
    switch (r->clock_mode) {
    case GSQ_CLOCK_FIXED:
        return r->clock_fixed;
    case GSQ_CLOCK_DATA:
        if (r->data_seen)
            return (uint32_t)(r->data_usec / 1000000u);
        return (uint32_t)time(NULL);
    default:
        return (uint32_t)time(NULL);
    }
}

void gsq_cols_row_clock(gsq_node *node, const gsq_cols *cols, uint32_t i)
{
    gsq_run *r = node->run;
    if (!cols->clock_usec || i >= cols->n)
        return;
    r->data_seen = cols->clock_usec[i] != UINT64_MAX;
    r->data_usec = r->data_seen ? cols->clock_usec[i] : 0;
}

static uint64_t clock_usec(clockid_t id)
{
    struct timespec ts;
    if (clock_gettime(id, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

uint64_t gsq_mono_usec(void)
{
    return clock_usec(CLOCK_MONOTONIC);
}

int gsq_run_clock_usec(const gsq_run *r, uint64_t *out)
{
    switch (r->clock_mode) {
    case GSQ_CLOCK_FIXED:
        *out = (uint64_t)r->clock_fixed * 1000000u;
        return 0;
    case GSQ_CLOCK_DATA:
        if (r->data_seen) {
            *out = r->data_usec;
            return 0;
        }
        if (r->ts_sources)
            return -1; /* not before the first timestamp */
        *out = clock_usec(CLOCK_REALTIME);
        return 0;
    default:
        *out = clock_usec(CLOCK_REALTIME);
        return 0;
    }
}

int gsq_clock_bound_usec(gsq_node *node, uint64_t *out)
{
    uint64_t now;
    if (!node->lfta || !node->has_skew || gsq_run_clock_usec(node->run, &now) != 0)
        return 1;
    *out = now > node->skew_usec ? now - node->skew_usec : 0;
    return 0;
}

int gsq_out_of_order_usec(gsq_node *node, uint64_t *out)
{
    if (!node->lfta || !node->has_ooo)
        return 1;
    *out = node->ooo_usec;
    return 0;
}

int gsq_time_unit_nsec(gsq_node *node, uint64_t *out)
{
    if (!node->lfta)
        return 1;
    *out = node->unit_ns;
    return 0;
}

void gsq_count(gsq_node *node, int counter, uint64_t n)
{
    if (counter >= 0 && counter < GSQ_CNT__COUNT)
        node->counters[counter] += n;
    if (counter == GSQ_CNT_LATE_DROPPED) /* tuples of one row each */
        node->counters[GSQ_CNT_LATE_DROPPED_ROWS] += n;
}

/* The stream of an HFTA node's input: its definition's in_streams, or for
 * the merge of an LFTA's instances over an interface set (nodes before
 * hfta_base, sets.c) the LFTA's stream, its own out_stream.  NULL when
 * there is none (an LFTA, an input out of range). */
static const gsq_stream_desc *input_desc(const gsq_node *node, int input)
{
    const gsq_run *r = node->run;
    int s;
    if (!node->hfta || input < 0 || input >= node->n_inputs)
        return NULL;
    if ((uint32_t)(node - r->nodes) < r->hfta_base)
        s = node->out_stream;
    else if (node->hfta->in_streams && input < node->hfta->n_inputs)
        s = node->hfta->in_streams[input];
    else
        return NULL;
    if (s < 0 || (uint32_t)s >= r->qs->n_streams)
        return NULL;
    return &r->qs->streams[s];
}

/* The rows a partial aggregate of stream d holds: its column rows_col, read
 * by the column's type.  0 and *rows set, or -1 when it cannot be read (no
 * integer column, outside the tuple's len or fixed part, negative). */
static int tuple_rows(const gsq_stream_desc *d, const void *tup, uint32_t len, uint64_t *rows)
{
    const gsq_column *c;
    uint32_t size;
    union { uint16_t u16; uint32_t u32; int32_t i32; uint64_t u64; int64_t i64; } v;
    if (!tup || d->rows_col < 0 || (uint32_t)d->rows_col >= d->n_cols)
        return -1;
    c = &d->cols[d->rows_col];
    switch (c->type) {
    case GSQ_T_USHORT: size = 2; break;
    case GSQ_T_UINT: case GSQ_T_INT: size = 4; break;
    case GSQ_T_ULLONG: case GSQ_T_LLONG: size = 8; break;
    default: return -1;
    }
    if (c->offset > len || len - c->offset < size || c->offset > d->fixed_size ||
        d->fixed_size - c->offset < size)
        return -1;
    memcpy(&v, (const uint8_t *)tup + c->offset, size);
    switch (c->type) {
    case GSQ_T_USHORT: *rows = v.u16; return 0;
    case GSQ_T_UINT: *rows = v.u32; return 0;
    case GSQ_T_INT: *rows = (uint64_t)v.i32; return v.i32 < 0 ? -1 : 0;
    case GSQ_T_ULLONG: *rows = v.u64; return 0;
    default: *rows = (uint64_t)v.i64; return v.i64 < 0 ? -1 : 0; /* GSQ_T_LLONG */
    }
}

void gsq_count_late(gsq_node *node, int input, const void *tup, uint32_t len)
{
    const gsq_stream_desc *d = input_desc(node, input);
    uint64_t rows = 1;
    node->counters[GSQ_CNT_LATE_DROPPED]++;
    if (!d || d->rows_col == GSQ_ROWS_ONE) /* no stream known: a row, as gsq_count */
        node->counters[GSQ_CNT_LATE_DROPPED_ROWS]++;
    else if (tuple_rows(d, tup, len, &rows) == 0)
        node->counters[GSQ_CNT_LATE_DROPPED_ROWS] += rows;
    else
        node->counters[GSQ_CNT_LATE_DROPPED_UNKNOWN]++;
}

int gsq_inputs_are_partials(gsq_node *node)
{
    int i;
    if (!node->run->hb_interval_usec || !node->hfta)
        return 0;
    for (i = 0; i < (node->n_inputs > 0 ? node->n_inputs : 1); i++) {
        const gsq_stream_desc *d = input_desc(node, i);
        if (d && d->rows_col != GSQ_ROWS_ONE)
            return 1;
    }
    return 0;
}

void gsq_peak(gsq_node *node, int which, uint64_t value)
{
    if (which >= 0 && which < GSQ_PEAK__COUNT && value > node->peaks[which])
        node->peaks[which] = value;
}

/* Space for an outgoing tuple of `total` bytes (8-aligned): the LFTA's
 * queue or the HFTA's packing scratch.  NULL after failing the run. */
static uint8_t *out_reserve(gsq_node *node, uint64_t total)
{
    uint8_t *dst;
    if (total > UINT32_MAX / 2) {
        gsq_node_fail(node, "tuple of %llu bytes is too large", (unsigned long long)total);
        return NULL;
    }
    if (node->lfta) {
        dst = gsq_tq_reserve(&node->queue, (uint32_t)total);
    } else {
        if (node->pack_cap < total || !node->pack) {
            size_t ncap = node->pack_cap ? node->pack_cap : 256;
            uint8_t *nb;
            while (ncap < total)
                ncap *= 2;
            nb = realloc(node->pack, ncap);
            if (nb) {
                node->pack = nb;
                node->pack_cap = ncap;
            }
        }
        dst = node->pack_cap >= total ? node->pack : NULL;
    }
    if (!dst)
        gsq_node_fail(node, "out of memory");
    return dst;
}

/* Data tuples a staged HFTA gathers before they go to its sink as a run:
 * the per-tuple path through the Arrow sink costs more than the copy (Q2's
 * 2.1 M output rows over 524,288 groups). */
#define GSQ_STAGE_TUPLES 256u

void gsq_stage_flush(gsq_node *node)
{
    uint32_t n = node->stage_n;
    if (n) {
        uint32_t size = node->run->qs->streams[node->out_stream].fixed_size;
        node->stage_n = 0;
        gsq_dispatch_run(node->run, node->out_stream, node->stage, size, size, n);
    }
}

/* Gather a data tuple of a staged HFTA; 0 when the stage could not be had
 * (the tuple is then dispatched as ever). */
static int stage_tuple(gsq_node *node, const uint8_t *dst, uint32_t total)
{
    if (!node->stage) {
        node->stage = malloc((size_t)GSQ_STAGE_TUPLES * total);
        if (!node->stage)
            return 0;
    }
    memcpy(node->stage + (size_t)node->stage_n * total, dst, total);
    if (++node->stage_n == GSQ_STAGE_TUPLES)
        gsq_stage_flush(node);
    return 1;
}

/* Send the tuple packed at dst (from out_reserve): queue it (LFTA) or
 * dispatch it at once (HFTA; a staged one's data tuples a run at a time). */
static void out_commit(gsq_node *node, int kind, const uint8_t *dst, uint32_t total)
{
    gsq_run *r = node->run;
    if (node->lfta) {
        gsq_tq_commit(&node->queue, kind, total);
        if (kind == GSQ_HEARTBEAT && r->trace_path)
            gsq_trace_emitted(r, node);
    } else if (node->staged && kind == GSQ_DATA && stage_tuple(node, dst, total)) {
        return;
    } else {
        gsq_stage_flush(node); /* what it emitted before goes first */
        gsq_dispatch(r, node->out_stream, kind, kind == GSQ_EOF ? NULL : dst, total);
    }
}

static int check_kind(gsq_node *node, int kind)
{
    if (kind != GSQ_DATA && kind != GSQ_HEARTBEAT && kind != GSQ_JOINT_HEARTBEAT &&
        kind != GSQ_EOF) {
        gsq_node_fail(node, "internal error: emit of tuple kind %d", kind);
        return -1;
    }
    return 0;
}

void gsq_emit(gsq_node *node, int kind, const void *fixed, uint32_t fixed_size,
              const gsq_str_field *strs, uint32_t n_strs)
{
    gsq_run *r = node->run;
    const gsq_stream_desc *d;
    uint64_t total;
    uint32_t i, off;
    uint8_t *dst;

    if (r->failed || check_kind(node, kind) != 0)
        return;
    d = &r->qs->streams[node->out_stream];
    if (kind == GSQ_EOF) {
        fixed_size = 0;
        n_strs = 0;
    } else if (!fixed || fixed_size != d->fixed_size) {
        gsq_node_fail(node, "internal error: emit of %u bytes on stream %s of %u bytes",
                      (unsigned)fixed_size, d->name, (unsigned)d->fixed_size);
        return;
    }
    if (node->direct && kind == GSQ_DATA) { /* no strings: the tuple as it is */
        node->queue.pushed++;
        gsq_dispatch(r, node->out_stream, kind, fixed, fixed_size);
        return;
    }
    total = fixed_size;
    for (i = 0; i < n_strs; i++) {
        if (strs[i].field_off > fixed_size ||
            fixed_size - strs[i].field_off < sizeof(gsq_strref)) {
            gsq_node_fail(node, "internal error: string field at offset %u outside the tuple",
                          (unsigned)strs[i].field_off);
            return;
        }
        total += strs[i].s.len;
    }
    dst = out_reserve(node, total);
    if (!dst)
        return;
    if (fixed_size)
        memcpy(dst, fixed, fixed_size);
    off = fixed_size;
    for (i = 0; i < n_strs; i++) {
        gsq_strref ref;
        ref.off = off;
        ref.len = strs[i].s.len;
        memcpy(dst + strs[i].field_off, &ref, sizeof ref);
        if (ref.len)
            memcpy(dst + off, strs[i].s.p, ref.len);
        off += ref.len;
    }
    out_commit(node, kind, dst, (uint32_t)total);
}

void gsq_emit_run(gsq_node *node, const void *tups, uint32_t size, uint32_t n)
{
    gsq_run *r = node->run;
    const uint8_t *p = (const uint8_t *)tups;
    uint32_t j;
    if (r->failed || n == 0 || check_kind(node, GSQ_DATA) != 0)
        return;
    if (node->direct && size == r->qs->streams[node->out_stream].fixed_size) {
        node->queue.pushed += n;
        gsq_dispatch_run(r, node->out_stream, p, size, size, n);
        return;
    }
    for (j = 0; j < n && !r->failed; j++)
        gsq_emit(node, GSQ_DATA, p + (size_t)j * size, size, NULL, 0);
}

void gsq_emit_masked(gsq_node *node, const void *const *cols, uint32_t first,
                     const uint8_t *keep, uint32_t n, uint32_t m)
{
    gsq_run *r = node->run;
    gsq_stream_rt *st;
    uint32_t sel[256], done;

    if (r->failed || m == 0 || check_kind(node, GSQ_DATA) != 0)
        return;
    st = &r->streams[node->out_stream];
    if (node->direct && st->n_subs == 1 && !st->subs[0].hfta &&
        st->subs[0].sink->format == GSQ_FMT_ARROW &&
        gsq_arrow_sink_write_masked(r, st->subs[0].sink, &r->qs->streams[node->out_stream], cols,
                                    first, keep, n, m) <= 0) {
        node->queue.pushed += m;
        st->n_data += m;
        return;
    }
    /* by row index: gathered into the Arrow sink, or built into tuples */
    for (done = 0; done < n && !r->failed; done += 256) {
        uint32_t part = n - done < 256 ? n - done : 256;
        gsq_emit_gather(node, cols, sel, gsq_keep_to_sel(keep + done, part, first + done, sel));
    }
}

void gsq_emit_gather(gsq_node *node, const void *const *cols, const uint32_t *sel, uint32_t k)
{
    gsq_run *r = node->run;
    const gsq_stream_desc *d;
    gsq_stream_rt *st;
    /* tuples built here when the reader is no lone Arrow sink: 16 KiB at a time */
    union { uint8_t b[16384]; uint64_t align_; } buf;
    uint32_t done = 0, per, c;

    if (r->failed || k == 0 || check_kind(node, GSQ_DATA) != 0)
        return;
    d = &r->qs->streams[node->out_stream];
    st = &r->streams[node->out_stream];
    if (node->direct && st->n_subs == 1 && !st->subs[0].hfta &&
        st->subs[0].sink->format == GSQ_FMT_ARROW) {
        node->queue.pushed += k;
        st->n_data += k;
        (void)gsq_arrow_sink_write_gather(r, st->subs[0].sink, d, cols, sel, k);
        return;
    }
    if (d->fixed_size == 0 || d->fixed_size > sizeof buf.b) {
        gsq_node_fail(node, "internal error: gathered emit on stream %s of %u bytes", d->name,
                      (unsigned)d->fixed_size);
        return;
    }
    per = (uint32_t)(sizeof buf.b / d->fixed_size);
    while (done < k && !r->failed) {
        uint32_t m = k - done < per ? k - done : per, j;
        memset(buf.b, 0, (size_t)m * d->fixed_size);
        for (c = 0; c < d->n_cols; c++) {
            uint32_t sz = gsq_type_size(d->cols[c].type);
            for (j = 0; j < m; j++)
                memcpy(buf.b + (size_t)j * d->fixed_size + d->cols[c].offset,
                       (const uint8_t *)cols[c] + (size_t)sel[done + j] * sz, sz);
        }
        gsq_emit_run(node, buf.b, d->fixed_size, m);
        done += m;
    }
}

void gsq_emit_raw(gsq_node *node, int kind, const void *tup, uint32_t len)
{
    gsq_run *r = node->run;
    const gsq_stream_desc *d;
    uint32_t i;
    uint8_t *dst;

    if (r->failed || check_kind(node, kind) != 0)
        return;
    if (kind == GSQ_EOF) {
        gsq_emit(node, GSQ_EOF, NULL, 0, NULL, 0);
        return;
    }
    d = &r->qs->streams[node->out_stream];
    if (!tup || len < d->fixed_size) {
        gsq_node_fail(node, "internal error: raw emit of %u bytes on stream %s of %u bytes",
                      (unsigned)len, d->name, (unsigned)d->fixed_size);
        return;
    }
    for (i = 0; i < d->n_cols; i++) {
        const gsq_column *c = &d->cols[i];
        gsq_strref ref;
        if (c->type != GSQ_T_STRING)
            continue;
        if (c->offset > d->fixed_size || d->fixed_size - c->offset < sizeof ref) {
            gsq_node_fail(node, "internal error: column %s of stream %s lies outside its "
                                "%u bytes", c->name, d->name, (unsigned)d->fixed_size);
            return;
        }
        memcpy(&ref, (const uint8_t *)tup + c->offset, sizeof ref);
        if ((uint64_t)ref.off + ref.len > len) {
            gsq_node_fail(node, "internal error: raw emit on stream %s: string column %s "
                                "(offset %u, length %u) outside the tuple of %u bytes",
                          d->name, c->name, (unsigned)ref.off, (unsigned)ref.len,
                          (unsigned)len);
            return;
        }
    }
    dst = out_reserve(node, len);
    if (!dst)
        return;
    memcpy(dst, tup, len);
    out_commit(node, kind, dst, len);
}

void gsq_deliver(gsq_run *r, gsq_node *h, int input, int kind, const void *tup, uint32_t len)
{
    if (kind == GSQ_EOF)
        h->eof_inputs++;
    else if (kind == GSQ_HEARTBEAT && r->cur_trace >= 0)
        gsq_trace_hop(r, h);
    h->hfta->accept(h->state, h, input, kind, tup, len);
    gsq_stage_flush(h);
}

/* Tuples of a run ahead of the one an HFTA accepts that it is given a
 * prefetch hint for (gsq_hfta_def.prefetch). */
#define GSQ_HFTA_PREFETCH 8u

void gsq_dispatch_run(gsq_run *r, int stream, const uint8_t *first, size_t stride, uint32_t len,
                      uint32_t n)
{
    gsq_stream_rt *st = &r->streams[stream];
    uint32_t j;
    if (st->n_subs != 1) { /* each tuple to every subscriber in turn, as ever */
        for (j = 0; j < n && !r->failed; j++)
            gsq_dispatch(r, stream, GSQ_DATA, first + (size_t)j * stride, len);
        return;
    }
    st->n_data += n;
    if (st->subs[0].hfta) {
        gsq_node *h = st->subs[0].hfta;
        int in = st->subs[0].input;
        void (*pf)(void *, int, const void *, uint32_t) = h->hfta->prefetch;
        if (h->hfta->accept_run) {
            h->hfta->accept_run(h->state, h, in, first, stride, len, n);
            gsq_stage_flush(h);
            return;
        }
        for (j = 0; pf && j < GSQ_HFTA_PREFETCH && j < n; j++)
            pf(h->state, in, first + (size_t)j * stride, len);
        for (j = 0; j < n && !r->failed; j++) {
            if (pf && j + GSQ_HFTA_PREFETCH < n)
                pf(h->state, in, first + (size_t)(j + GSQ_HFTA_PREFETCH) * stride, len);
            gsq_deliver(r, h, in, GSQ_DATA, first + (size_t)j * stride, len);
        }
    } else {
        gsq_sink_write_run(r, st->subs[0].sink, &r->qs->streams[stream], first, stride, len, n);
    }
}

void gsq_dispatch(gsq_run *r, int stream, int kind, const void *tup, uint32_t len)
{
    gsq_stream_rt *st = &r->streams[stream];
    uint32_t i;
    if (kind == GSQ_DATA)
        st->n_data++;
    else if (kind == GSQ_HEARTBEAT)
        st->n_heartbeat++;
    else if (kind == GSQ_JOINT_HEARTBEAT)
        st->n_joint_heartbeat++;
    else
        st->n_eof++;
    for (i = 0; i < st->n_subs && !r->failed; i++) {
        gsq_sub *s = &st->subs[i];
        if (s->hfta) {
            gsq_deliver(r, s->hfta, s->input, kind, tup, len);
        } else if (kind == GSQ_DATA || (kind == GSQ_HEARTBEAT && s->sink->heartbeats)) {
            /* LFTA streams come here from the drain, HFTA streams at emit:
             * a sink sees the heartbeats of either kind of stream (never a
             * joint heartbeat: only operators read those) */
            gsq_sink_write(r, s->sink, &r->qs->streams[stream], kind, tup, len);
        }
    }
}
