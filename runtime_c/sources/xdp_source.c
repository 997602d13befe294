/*
 * xdp_source.c -- an aggregating LFTA run in the kernel's XDP hook of a live
 * interface (gsq_xdp_ops): the source of that one LFTA node (s->lftas[0]),
 * in place of the capture source (run/setup.c decides when).  It reads no
 * record: the LFTA's BPF program (gsq_lfta_def.xdp) counts the frames in
 * the kernel, and this source hands the partial aggregates it gets back to
 * the LFTA's partial() -- each becomes an output tuple -- and, once an
 * epoch is drained, calls its closed() for the heartbeat that epoch's end
 * allows.
 *
 * The loader (runtime_c/xdp/xdp_loader.c, on libbpf) is reached through
 * r->qs->xdp_loader only, so the runtime archive needs no libbpf;
 * xdp_loader.h is included for its types (options, partials, counters).
 *
 * Each round (read_batch): the ring's partials are handed on (no wait),
 * then every epoch whose end plus the grace period has passed is drained,
 * in order, from next_drain on -- next_drain starts at the first epoch the
 * loader opened a table for (no earlier epoch has packets) -- each followed by
 * closed(E + 1).  An idle run sleeps on the ring's epoll descriptor
 * (wait_fd) for at most the heartbeat wait (100 ms), so drains come that
 * late at most.  When the run is cancelled the loader finishes (detach,
 * every open table drained whatever the clock, the ring), closed() is
 * called for the epoch after the one the clock is in -- every partial of
 * every epoch has been handed on -- and the source is at its end.
 *
 * Invariants: impl (xdp_reader) is owned, and owns the loader from a
 * successful open to close; partial() and closed() are only called while
 * the node is live (created: nodes are created after the sources open, and
 * the ring is first read in the run loop) and the run has not failed.  A
 * packet stamped in epoch E that reaches the program after E's drain began
 * is handed on after closed(E + 1) (xdp_table.h: a late partial); the grace
 * period makes that rare.
 */
#ifdef __linux__
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gsq_source_ops.h"
/* by its path from here: the runtime's own include path need not name the
 * loader's directory for its types */
#include "../xdp/xdp_loader.h"

/* How long past an epoch's end before it is drained: time for a frame
 * stamped in the epoch to reach the program's owner check.  Half the
 * epoch when that is shorter (the loader wants it below the epoch). */
#define GSQ_XDP_GRACE_NS 200000000ull

/* partials by kind: XDP_REC_COLLISION .. XDP_REC_DRAIN are 1 .. 4 */
#define GSQ_XDP_KINDS 5

typedef struct xdp_reader {
    const gsq_xdp_loader_ops *ops;
    struct xdp_loader *ld;     /* owned: NULL before open and after close */
    gsq_node *node;
    const gsq_xdp_def *def;
    uint64_t grace_ns;
    int drop;
    uint64_t next_drain;       /* the first epoch not drained yet */
    uint64_t drained_epochs;   /* drained on time (not by the finish) */
    uint64_t partials[GSQ_XDP_KINDS];
    int finished;
} xdp_reader;

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int node_open(const gsq_node *n)
{
    return n->live && !n->ended && !n->run->failed;
}

static int on_partial(void *arg, const struct xdp_partial *p)
{
    xdp_reader *xr = arg;
    xr->partials[p->kind < GSQ_XDP_KINDS ? p->kind : 0]++;
    if (node_open(xr->node))
        xr->def->partial(xr->node->state, xr->node, p->epoch, p->key, p->aggr);
    return 0;
}

static void closed(xdp_reader *xr, uint64_t epoch)
{
    if (node_open(xr->node))
        xr->def->closed(xr->node->state, xr->node, epoch);
}

static int xdp_src_check_lfta(gsq_run *r, const gsq_source *s, const gsq_lfta_def *d)
{
    if (gsq_source_check_lfta(r, s, d) != 0)
        return -1;
    if (!d->xdp || s->n_lftas > 0) {
        gsq_run_fail(r, "internal error: interface %s: an XDP source reads one LFTA compiled "
                        "for the kernel, not %s", s->iface, d->name);
        return -1;
    }
    return 0;
}

static int xdp_src_open(gsq_run *r, gsq_source *s)
{
    gsq_node *n = s->lftas[0];
    const gsq_iface_time *t = gsq_iface_settings(r, s->iface);
    struct xdp_loader_opts o;
    char err[4096];
    xdp_reader *xr = calloc(1, sizeof *xr);
    if (!xr) {
        gsq_run_fail(r, "out of memory");
        return -1;
    }
    s->impl = xr;
    xr->ops = r->qs->xdp_loader;
    xr->node = n;
    xr->def = n->lfta->xdp;
    xr->grace_ns = xr->def->epoch_ns > 2 * GSQ_XDP_GRACE_NS ? GSQ_XDP_GRACE_NS
                                                            : xr->def->epoch_ns / 2;
    xr->drop = t && t->live_xdp_drop;
    memset(&o, 0, sizeof o);
    o.object_mem = xr->def->object;
    o.object_len = xr->def->object_len;
    o.ifname = s->path;
    o.program = xr->def->program;
    o.key_bytes = xr->def->key_bytes;
    o.aggr_bytes = xr->def->aggr_bytes;
    o.epoch_ns = xr->def->epoch_ns;
    o.grace_ns = xr->grace_ns;
    o.mode = !t                                    ? XDP_ATTACH_AUTO
             : t->live_xdp == GSQ_LIVE_XDP_NATIVE  ? XDP_ATTACH_NATIVE
             : t->live_xdp == GSQ_LIVE_XDP_GENERIC ? XDP_ATTACH_GENERIC
                                                   : XDP_ATTACH_AUTO;
    o.drop = xr->drop;
    o.on_partial = on_partial;
    o.arg = xr;
    err[0] = '\0';
    if (xr->ops->open(&o, &xr->ld, err, sizeof err) != 0) {
        xr->ld = NULL;
        gsq_run_fail(r, "pcap-live:%s: cannot run LFTA %s in the kernel's XDP hook: %s", s->path,
                     n->name, err);
        return -1;
    }
    xr->next_drain = xr->ops->first_epoch(xr->ld); /* not epoch_now: open may span a boundary */
    s->drains_on_cancel = 1; /* the finish hands on what the kernel still holds */
    s->no_records = 1;
    return 0;
}

static int loader_failed(gsq_run *r, const gsq_source *s, const xdp_reader *xr, const char *err)
{
    gsq_run_fail(r, "pcap-live:%s: LFTA %s in the kernel's XDP hook: %s", s->path,
                 xr->node->name, err);
    return -1;
}

/* The run was cancelled: the last partials, the last heartbeat, the end. */
static int xdp_finish(gsq_run *r, gsq_source *s, xdp_reader *xr)
{
    char err[1024];
    if (xr->ops->finish(xr->ld, err, sizeof err) < 0)
        return loader_failed(r, s, xr, err);
    xr->finished = 1;
    /* finish detached the program: every packet was stamped by now */
    closed(xr, xr->ops->epoch_now(xr->ld) + 1);
    s->at_eof = 1;
    return 0;
}

static int xdp_src_read_batch(gsq_run *r, gsq_source *s)
{
    xdp_reader *xr = s->impl;
    char err[1024];
    uint64_t now;
    if (xr->finished) {
        s->at_eof = 1;
        return 0;
    }
    if (gsq_run_cancelled(r))
        return xdp_finish(r, s, xr);
    if (xr->ops->poll(xr->ld, 0, err, sizeof err) < 0)
        return loader_failed(r, s, xr, err);
    now = mono_ns();
    while (!r->failed && now >= xr->ops->drainable_at(xr->ld, xr->next_drain)) {
        if (xr->ops->drain(xr->ld, xr->next_drain, err, sizeof err) < 0)
            return loader_failed(r, s, xr, err);
        xr->drained_epochs++;
        closed(xr, ++xr->next_drain);
    }
    return 0;
}

static int xdp_src_wait_fd(const gsq_source *s)
{
    const xdp_reader *xr = s->impl;
    return xr && xr->ld && !xr->finished ? xr->ops->epoll_fd(xr->ld) : -1;
}

static int xdp_src_streaming(const gsq_source *s)
{
    (void)s;
    return 1;
}

static void xdp_src_close(gsq_source *s)
{
    xdp_reader *xr = s->impl;
    if (!xr)
        return;
    if (xr->ld)
        xr->ops->close(xr->ld);
    free(xr);
    s->impl = NULL;
}

static uint64_t partials_total(const xdp_reader *xr)
{
    uint64_t sum = 0;
    for (int k = 0; k < GSQ_XDP_KINDS; k++)
        sum += xr->partials[k];
    return sum;
}

/* The program's counters now (zeros when the map cannot be read). */
static void counters(const xdp_reader *xr, struct xdp_cpu_state *st)
{
    char err[256];
    if (xr->ops->stats(xr->ld, st, err, sizeof err) != 0)
        memset(st, 0, sizeof *st);
}

static void xdp_src_report(const gsq_source *s, gsq_buf *out)
{
    const xdp_reader *xr = s->impl;
    struct xdp_cpu_state st;
    if (!xr || !xr->ld)
        return;
    counters(xr, &st);
    if (!s->lftas[0]->run->report_losses_only)
        gsq_buf_printf(out,
                       "gsqlc: %s: LFTA %s ran in the kernel's XDP hook (%s%s): %llu packets "
                       "aggregated into %llu partials\n",
                       s->path, xr->node->name, xr->ops->mode(xr->ld),
                       xr->drop ? ", frames dropped once counted" : "",
                       (unsigned long long)(st.packets + st.bypassed),
                       (unsigned long long)partials_total(xr));
    if (st.ring_lost)
        gsq_buf_printf(out,
                       "gsqlc: warning: %s: LFTA %s lost %llu partials to a full XDP ring: "
                       "its counts are short\n",
                       s->path, xr->node->name, (unsigned long long)st.ring_lost);
}

/* "xdp": the program and its counters (xdp_table.h's, summed over CPUs,
 * read now): "packets" aggregated in its tables, "collisions",
 * "old_ejections" and "bypassed" sent to the ring, "ring_lost"; the
 * partials handed on ("partials", and "partials_by_kind"), the epochs
 * drained on time; null when the program was never attached. */
static void xdp_src_stats(const gsq_source *s, gsq_buf *out)
{
    const xdp_reader *xr = s->impl;
    struct xdp_cpu_state st;
    uint64_t bound = 0;
    if (!xr || !xr->ld) {
        gsq_buf_adds(out, ",\"xdp\":null");
        return;
    }
    counters(xr, &st);
    xr->ops->wall_minus_mono_ns(xr->ld, &bound);
    gsq_buf_printf(out, ",\"xdp\":{\"mode\":\"%s\",\"program\":", xr->ops->mode(xr->ld));
    gsq_buf_json_str(out, xr->def->program ? xr->def->program : "",
                     xr->def->program ? strlen(xr->def->program) : 0);
    gsq_buf_adds(out, ",\"lfta\":");
    gsq_buf_json_str(out, xr->node->name, strlen(xr->node->name));
    gsq_buf_printf(out,
                   ",\"verdict\":\"%s\",\"slots\":%u,\"epoch_ns\":%llu,"
                   "\"grace_ns\":%llu,\"clock_offset_error_ns\":%llu,\"packets\":%llu,"
                   "\"collisions\":%llu,\"old_ejections\":%llu,\"bypassed\":%llu,"
                   "\"ring_lost\":%llu,\"partials\":%llu,\"partials_by_kind\":{\"drain\":%llu,"
                   "\"collision\":%llu,\"old\":%llu,\"bypass\":%llu},\"drained_epochs\":%llu}",
                   xr->drop ? "drop" : "pass", (unsigned)xr->def->slots,
                   (unsigned long long)xr->def->epoch_ns, (unsigned long long)xr->grace_ns,
                   (unsigned long long)bound, (unsigned long long)st.packets,
                   (unsigned long long)st.collisions, (unsigned long long)st.old_ejections,
                   (unsigned long long)st.bypassed, (unsigned long long)st.ring_lost,
                   (unsigned long long)partials_total(xr),
                   (unsigned long long)xr->partials[XDP_REC_DRAIN],
                   (unsigned long long)xr->partials[XDP_REC_COLLISION],
                   (unsigned long long)xr->partials[XDP_REC_OLD],
                   (unsigned long long)xr->partials[XDP_REC_BYPASS],
                   (unsigned long long)xr->drained_epochs);
}

/* Not bound by URI: set-up gives a kernel LFTA on a pcap-live: interface
 * one of its own (run/setup.c). */
const gsq_source_ops gsq_xdp_ops = {
    .name = "xdp",
    .scheme = NULL,
    .records_key = "frames_read",
    .lfta_kind = GSQ_SRC_PCAP,
    .timestamps = 0,
    .check_lfta = xdp_src_check_lfta,
    .open = xdp_src_open,
    .streaming = xdp_src_streaming,
    .read_batch = xdp_src_read_batch,
    .wait_fd = xdp_src_wait_fd,
    .close = xdp_src_close,
    .report = xdp_src_report,
    .stats = xdp_src_stats,
};
#endif /* __linux__ */
