/*
 * node.c -- the services generated code calls on its gsq_node: emitting
 * tuples, parameters, failure, the clock and counters; and the dispatch of
 * a stream's tuples to its subscribers.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gsq_internal.h"

void gsq_run_fail(gsq_run *r, const char *fmt, ...)
{
    va_list ap;
    char msg[1024];
    if (r->failed)
        return;
    r->failed = 1;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    gsq_buf_reset(&r->error);
    gsq_buf_adds(&r->error, msg);
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

void gsq_count(gsq_node *node, int counter, uint64_t n)
{
    if (counter >= 0 && counter < GSQ_CNT__COUNT)
        node->counters[counter] += n;
}

void gsq_emit(gsq_node *node, int kind, const void *fixed, uint32_t fixed_size,
              const gsq_str_field *strs, uint32_t n_strs)
{
    gsq_run *r = node->run;
    const gsq_stream_desc *d;
    uint64_t total;
    uint32_t i, off;
    uint8_t *dst;

    if (r->failed)
        return;
    d = &r->qs->streams[node->out_stream];
    if (kind == GSQ_EOF) {
        fixed_size = 0;
        n_strs = 0;
    } else {
        if (kind != GSQ_DATA && kind != GSQ_HEARTBEAT) {
            gsq_node_fail(node, "internal error: emit of tuple kind %d", kind);
            return;
        }
        if (!fixed || fixed_size != d->fixed_size) {
            gsq_node_fail(node, "internal error: emit of %u bytes on stream %s of %u bytes",
                          (unsigned)fixed_size, d->name, (unsigned)d->fixed_size);
            return;
        }
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
    if (total > UINT32_MAX / 2) {
        gsq_node_fail(node, "tuple of %llu bytes is too large", (unsigned long long)total);
        return;
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
    if (!dst) {
        gsq_node_fail(node, "out of memory");
        return;
    }
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

    if (node->lfta)
        gsq_tq_commit(&node->queue, kind, (uint32_t)total);
    else
        gsq_dispatch(r, node->out_stream, kind, kind == GSQ_EOF ? NULL : dst,
                     (uint32_t)total);
}

void gsq_dispatch(gsq_run *r, int stream, int kind, const void *tup, uint32_t len)
{
    gsq_stream_rt *st = &r->streams[stream];
    uint32_t i;
    if (kind == GSQ_DATA)
        st->n_data++;
    else if (kind == GSQ_HEARTBEAT)
        st->n_heartbeat++;
    else
        st->n_eof++;
    for (i = 0; i < st->n_subs && !r->failed; i++) {
        gsq_sub *s = &st->subs[i];
        if (s->hfta) {
            gsq_node *h = s->hfta;
            if (kind == GSQ_EOF)
                h->eof_inputs++;
            h->hfta->accept(h->state, h, s->input, kind, tup, len);
        } else if (kind == GSQ_DATA) {
            gsq_sink_write(r, s->sink, &r->qs->streams[stream], tup, len);
        }
    }
}
