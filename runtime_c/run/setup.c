/*
 * setup.c -- from a configured run to one ready to loop: the nodes, which
 * of them run (plan.c), the sources (bindings -> gsq_source, their record
 * timestamps decided, opened through their ops), the subscriber tables, the
 * Arrow-fed streams, the sinks, the trace file, and the nodes' init/create
 * (queryset order).
 *
 * Replay in time.  A source is a recording when its input was recorded
 * before the run: a file that is not a pipe (pcap, CSV, GDAT), or an Arrow
 * stream bound with option recording:NAME (an in-memory table); stdin,
 * pipes, sockets, live interfaces and other Arrow streams are live feeds.
 * The recordings with timestamps that can be peeked are replayed in time
 * -- read in the order of their records' arrival instants, run/loop.c --
 * when there are two or more of them, whatever the clock (and one alone
 * whose heartbeats are generated: decide_alignment).  The clock left
 * to set-up (clock=auto, the default) is the data clock when every source
 * is a recording and one has timestamps, so that a replay's heartbeats,
 * stalls and generated heartbeats follow the recorded time as they
 * followed the wall clock live; else the wall clock.
 *
 * LFTAs in the kernel.  An LFTA compiled for the XDP hook as well
 * (gsq_lfta_def.xdp) bound to a pcap-live: interface gets an XDP source of
 * its own (sources/xdp_source.c) instead of the interface's capture source,
 * unless: the query library has no loader, option live_xdp:NAME is off,
 * the interface is a fanout member, the run is a partition, or another
 * LFTA already runs in that interface's hook (one XDP program per
 * interface) -- the node's xdp_why_not says which.  The capture source is
 * made only for the LFTAs left in user space: with none, no frame is
 * copied to user space at all.  live_xdp_drop:NAME (the program drops
 * every frame) needs every LFTA reading the interface in the kernel.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gsq_run_steps.h"
#include "gsq_source_ops.h"

#ifdef __linux__
#define GSQ_XDP_OPS (&gsq_xdp_ops)
#else
#define GSQ_XDP_OPS NULL /* no XDP source elsewhere */
#endif


#ifdef __linux__
/* Whether LFTA node n, bound to b, runs in the kernel's XDP hook: 1, or 0
 * with n->xdp_why_not set (NULL: it is not compiled for the kernel); -1
 * out of memory. */
static int xdp_chosen(gsq_run *r, gsq_node *n, const gsq_binding *b)
{
    const gsq_iface_time *t = gsq_iface_settings(r, b->iface);
    const char *path = NULL, *why = NULL;
    char buf[512];
    uint32_t j;
    if (!n->lfta->xdp)
        return 0;
    buf[0] = '\0';
    if (b->arrow || gsq_source_ops_for_uri(b->uri, &path) != &gsq_pcap_live_ops)
        why = "its interface is not a live one (pcap-live:)";
    else if (!r->qs->xdp_loader)
        why = "the query library was built without the XDP loader (libbpf)";
    else if (t && t->live_xdp == GSQ_LIVE_XDP_OFF)
        why = "option live_xdp:NAME is off";
    else if (t && t->live_fanout >= 2)
        why = "its interface is a fanout member (live_fanout): its frames are shared between sockets";
    else if (r->part_n > 1)
        why = "option partition: the kernel counts every group";
    for (j = 0; !why && j < r->n_sources; j++)
        if (r->sources[j].ops == &gsq_xdp_ops && strcmp(r->sources[j].path, path) == 0) {
            snprintf(buf, sizeof buf, "LFTA %s already runs in the XDP hook of %s (one XDP "
                     "program per interface)", r->sources[j].lftas[0]->name, path);
            why = buf;
        }
    if (!why)
        return 1;
    n->xdp_why_not = gsq_strdup(why);
    return n->xdp_why_not ? 0 : -1;
}

/* live_xdp_drop:NAME: refused while some LFTA reads NAME in user space. */
static int check_xdp_drop(gsq_run *r)
{
    uint32_t i;
    for (i = 0; i < r->n_sources; i++) {
        const gsq_source *s = &r->sources[i];
        const gsq_iface_time *t = gsq_iface_settings(r, s->iface);
        if (!t || !t->live_xdp_drop || s->ops == &gsq_xdp_ops || s->n_lftas == 0)
            continue;
        gsq_run_fail(r, "option live_xdp_drop:%s: LFTA %s reads interface %s in user space (%s), "
                        "so its frames cannot be dropped in the kernel",
                     s->iface, s->lftas[0]->name, s->path,
                     s->lftas[0]->xdp_why_not ? s->lftas[0]->xdp_why_not
                                              : "it is not compiled for the kernel");
        return -1;
    }
    return 0;
}

/* An XDP source of its own for LFTA node n, bound to b: 0, or -1 (run failed). */
static int add_xdp_source(gsq_run *r, gsq_node *n, const gsq_binding *b)
{
    gsq_source *s = &r->sources[r->n_sources++];
    s->iface = b->iface;
    s->uri = b->uri;
    gsq_source_ops_for_uri(b->uri, &s->path);
    s->ops = &gsq_xdp_ops;
    s->recording = 0;
    s->lftas = calloc(1, sizeof *s->lftas);
    if (!s->lftas) {
        gsq_run_fail(r, "out of memory");
        return -1;
    }
    if (s->ops->check_lfta(r, s, n->lfta) != 0)
        return -1;
    s->lftas[s->n_lftas++] = n;
    s->clock_readers |= !n->lfta->ignores_clock;
    n->source = s;
    n->in_kernel = 1;
    return 0;
}
#endif

/* Bindings -> sources; every LFTA that runs gets its source. */
static int setup_sources(gsq_run *r)
{
    uint32_t i, j;

    for (i = 0; i < r->n_binds; i++)
        for (j = i + 1; j < r->n_binds; j++)
            if (strcmp(r->binds[i].iface, r->binds[j].iface) == 0) {
                gsq_run_fail(r,
                             "interface '%s' is bound to more than one source (%s, %s): "
                             "binding a name twice is not supported yet; an interface set has named members "
                             "(gsqlc_add_set_member)",
                             r->binds[i].iface, r->binds[i].uri, r->binds[j].uri);
                return -1;
            }
    /* a source per binding, and one per LFTA in the kernel */
    r->sources = calloc(r->n_binds + r->n_lfta_nodes + 1, sizeof *r->sources);
    if (!r->sources) {
        gsq_run_fail(r, "out of memory");
        return -1;
    }
    for (i = 0; i < r->n_lfta_nodes; i++) {
        gsq_node *n = &r->nodes[i];
        const gsq_lfta_def *d = n->lfta;
        gsq_source *s = NULL;
        gsq_binding *b = NULL;
        if (!n->needed)
            continue;
        for (j = 0; j < r->n_binds; j++)
            if (strcmp(r->binds[j].iface, n->iface) == 0)
                b = &r->binds[j];
        if (!b) {
            gsq_run_fail(r,
                         "interface '%s' is not bound (used by LFTA %s reading PROTOCOL %s); "
                         "bind it with --source %s=URI",
                         n->iface, n->name, d->protocol, n->iface);
            return -1;
        }
#ifdef __linux__
        {
            int rc = xdp_chosen(r, n, b);
            if (rc < 0) {
                gsq_run_fail(r, "out of memory");
                return -1;
            }
            if (rc > 0) {
                if (add_xdp_source(r, n, b) != 0)
                    return -1;
                continue;
            }
        }
#endif
        for (j = 0; j < r->n_sources; j++)
            if (r->sources[j].iface == b->iface && r->sources[j].ops != GSQ_XDP_OPS)
                s = &r->sources[j];
        if (!s) {
            gsq_node **l;
            s = &r->sources[r->n_sources++];
            s->iface = b->iface;
            s->uri = b->uri;
            if (b->arrow) {
                const gsq_iface_time *t = gsq_iface_settings(r, b->iface);
                s->recording = t && t->recording; /* a stream handed over: live unless told */
                s->ops = &gsq_arrow_ops;
                s->path = "";
                s->arrow = b->arrow; /* the source owns it from now on */
                b->arrow = NULL;
            } else {
                s->ops = gsq_source_ops_for_uri(b->uri, &s->path);
                s->recording = 1; /* a file, unless it is streaming (open_sources) */
            }
            l = calloc(r->n_lfta_nodes, sizeof *l);
            if (!l) {
                gsq_run_fail(r, "out of memory");
                return -1;
            }
            s->lftas = l;
        }
        if (s->ops->check_lfta(r, s, d) != 0)
            return -1;
        s->lftas[s->n_lftas++] = n;
        s->clock_readers |= !d->ignores_clock;
        n->source = s;
    }
#ifdef __linux__
    return check_xdp_drop(r);
#else
    return 0;
#endif
}

/* Whether every LFTA bound to s reads columnar chunks. */
static int lftas_read_cols(const gsq_source *s)
{
    uint32_t j;
    for (j = 0; j < s->n_lftas; j++)
        if (!s->lftas[j]->lfta->accept_cols)
            return 0;
    return s->n_lftas > 0;
}

/* The prefilter of s (gsq_prefilter_def): the one its first LFTA with a
 * place in a prefilter names; that prefilter's LFTAs bound here get their
 * bits, every other LFTA is given every record (pf_always).  0, or -1 out
 * of memory; s->pf stays NULL when no LFTA of s has a prefilter. */
static int prefilter_setup(gsq_source *s)
{
    uint32_t j;
    for (j = 0; j < s->n_lftas && !s->pf; j++)
        if (s->lftas[j]->lfta->prefilter)
            s->pf = s->lftas[j]->lfta->prefilter->prefilter;
    if (!s->pf)
        return 0;
    s->pf_always = calloc(s->n_lftas, sizeof *s->pf_always);
    s->pf_want = calloc(s->ring.max_recs ? s->ring.max_recs : 1u, sizeof *s->pf_want);
    s->pf_dropped = calloc(s->ring.max_recs ? s->ring.max_recs : 1u, 1);
    s->pf_classes = calloc(1, s->pf->classes_size ? s->pf->classes_size : 1u);
    if (!s->pf_always || !s->pf_want || !s->pf_dropped || !s->pf_classes)
        return -1;
    for (j = 0; j < s->n_lftas; j++) {
        gsq_node *n = s->lftas[j];
        const gsq_lfta_prefilter *p = n->lfta->prefilter;
        if (p && p->prefilter == s->pf && p->bit < 64 && !s->pf_node[p->bit])
            s->pf_node[p->bit] = n;
        else
            s->pf_always[s->n_pf_always++] = n;
    }
    return 0;
}

static int open_sources(gsq_run *r)
{
    uint32_t i;
    for (i = 0; i < r->n_sources; i++) {
        gsq_source *s = &r->sources[i];
        int streaming;
        if (gsq_ring_init(&s->ring, GSQ_RING_BYTES, r->batch) != 0) {
            gsq_run_fail(r, "out of memory");
            return -1;
        }
        s->columnar = r->columnar && s->ops->lfta_kind == GSQ_SRC_CSV && lftas_read_cols(s);
        if (!s->columnar && r->prefilter && prefilter_setup(s) != 0) {
            gsq_run_fail(r, "out of memory");
            return -1;
        }
        if (gsq_source_time_setup(r, s) != 0 || s->ops->open(r, s) != 0)
            return -1;
        streaming = s->ops->streaming && s->ops->streaming(s);
        if (streaming) {
            r->streaming = 1;
            s->recording = 0;
        }
        s->limit_usec = UINT64_MAX;
        if (s->has_ts) {
            r->ts_sources++;
            if (s->recording && s->ops->peek) {
                s->aligned = 1; /* a candidate: decide_alignment */
                r->aligned++;
            }
        }
    }
    return 0;
}

/* Replay in time (after gsq_tg_setup): two or more recordings with
 * timestamps are read in time together.  A recording alone is too when its
 * heartbeats are generated (s->tg): its rounds then span a quantum of its
 * time, so that its arrivals meet the generator at their own instants as
 * they would live, not a read batch later.  Otherwise one recording alone
 * is read as recorded, in whole batches. */
static void decide_alignment(gsq_run *r)
{
    uint32_t i;
    if (r->aligned >= 2)
        return;
    r->aligned = 0;
    for (i = 0; i < r->n_sources; i++) {
        gsq_source *s = &r->sources[i];
        s->aligned = s->aligned && s->tg;
        r->aligned += s->aligned;
    }
}

/* clock=auto: the data clock when every source is a recording, one of them
 * has timestamps and no stream is fed from Arrow (such a feed has no
 * timestamps the clock could follow); else the wall clock. */
static void decide_clock(gsq_run *r)
{
    uint32_t i;
    int replay = r->ts_sources > 0;
    if (r->clock_mode != GSQ_CLOCK_AUTO)
        return;
    r->clock_auto = 1;
    for (i = 0; i < r->n_sources; i++)
        replay &= r->sources[i].recording;
    for (i = 0; i < r->n_injects; i++)
        replay &= !r->injects[i].active;
    r->clock_mode = replay ? GSQ_CLOCK_DATA : GSQ_CLOCK_WALL;
}

static int add_sub(gsq_stream_rt *st, gsq_node *h, int input, gsq_sink *k)
{
    gsq_sub *ns = realloc(st->subs, (st->n_subs + 1) * sizeof *ns);
    if (!ns)
        return -1;
    st->subs = ns;
    ns[st->n_subs].hfta = h;
    ns[st->n_subs].input = input;
    ns[st->n_subs].sink = k;
    st->n_subs++;
    return 0;
}

/* Whether stream s has no string columns and one subscriber, an Arrow sink
 * without heartbeat rows: its data tuples may then reach the sink without
 * the queue (an LFTA's, gsq_node.direct) or a run at a time (an HFTA's,
 * gsq_node.staged). */
static int only_arrow_rows(const gsq_run *r, int s)
{
    const gsq_stream_rt *st = &r->streams[s];
    const gsq_stream_desc *d = &r->qs->streams[s];
    for (uint32_t c = 0; c < d->n_cols; c++)
        if (d->cols[c].type == GSQ_T_STRING)
            return 0;
    return st->n_subs == 1 && !st->subs[0].hfta && st->subs[0].sink->format == GSQ_FMT_ARROW &&
           !st->subs[0].sink->heartbeats;
}

static int setup_streams(gsq_run *r)
{
    const gsq_queryset_def *qs = r->qs;
    uint32_t i;
    int j;
    r->streams = calloc(qs->n_streams ? qs->n_streams : 1, sizeof *r->streams);
    if (!r->streams)
        goto oom;
    for (i = 0; i < qs->n_hftas; i++) {
        const gsq_hfta_def *d = qs->hftas[i];
        if (!r->nodes[r->hfta_base + i].needed)
            continue;
        for (j = 0; j < d->n_inputs; j++) {
            int s = d->in_streams[j];
            if (s < 0 || (uint32_t)s >= qs->n_streams) {
                gsq_run_fail(r, "internal error: HFTA %s reads stream %d of %u", d->name, s,
                             (unsigned)qs->n_streams);
                return -1;
            }
            if (add_sub(&r->streams[s], &r->nodes[r->hfta_base + i], j, NULL) != 0)
                goto oom;
        }
    }
    for (i = 0; i < r->n_sinks; i++)
        if (add_sub(&r->streams[r->sinks[i]->stream], NULL, 0, r->sinks[i]) != 0)
            goto oom;
    for (i = 0; i < r->n_lfta_nodes; i++)
        r->nodes[i].direct = !r->nodes[i].merge && only_arrow_rows(r, r->nodes[i].out_stream);
    for (i = 0; i < qs->n_hftas; i++) {
        gsq_node *n = &r->nodes[r->hfta_base + i];
        n->staged = n->needed && qs->streams[n->out_stream].fixed_size > 0 &&
                    only_arrow_rows(r, n->out_stream);
    }
    return 0;
oom:
    gsq_run_fail(r, "out of memory");
    return -1;
}

/* Check the schemas of the Arrow-fed streams that are read. */
static int open_injects(gsq_run *r)
{
    uint32_t i;
    for (i = 0; i < r->n_injects; i++)
        if (r->injects[i].active && gsq_inject_open(r, &r->injects[i]) != 0)
            return -1;
    return 0;
}

static int check_queryset(gsq_run *r)
{
    const gsq_queryset_def *qs = r->qs;
    uint32_t i;
    for (i = 0; i < qs->n_lftas; i++)
        if (qs->lftas[i]->out_stream < 0 || (uint32_t)qs->lftas[i]->out_stream >= qs->n_streams)
            goto bad;
    for (i = 0; i < qs->n_hftas; i++)
        if (qs->hftas[i]->out_stream < 0 || (uint32_t)qs->hftas[i]->out_stream >= qs->n_streams)
            goto bad;
    return 0;
bad:
    gsq_run_fail(r, "internal error: the query set names a stream that does not exist");
    return -1;
}

static int create_nodes(gsq_run *r)
{
    uint32_t i;
    for (i = 0; i < r->n_nodes && !r->failed; i++) {
        gsq_node *n = &r->nodes[i];
        if (!n->needed)
            continue;
        if (n->lfta) {
            n->state = calloc(1, n->lfta->state_size ? n->lfta->state_size : 1);
            if (!n->state) {
                gsq_run_fail(r, "out of memory");
                return -1;
            }
            if (n->lfta->init && n->lfta->init(n->state, n) != 0) {
                if (!r->failed)
                    gsq_node_fail(n, "initialization failed");
                return -1;
            }
            if (r->part_n > 1 && !n->partitioned) {
                /* its output would be every partition's, in each run */
                gsq_run_fail(r, "option partition: LFTA %s is not an aggregation whose groups "
                                "hash partitions can split; run it without the option",
                             n->lfta->name);
                return -1;
            }
            n->live = 1;
        } else {
            n->state = n->hfta->create(n);
            if (!n->state) {
                if (!r->failed)
                    gsq_node_fail(n, "initialization failed");
                return -1;
            }
            n->live = 1;
        }
    }
    return r->failed ? -1 : 0;
}

int gsq_setup_nodes(gsq_run *r)
{
    return gsq_build_nodes(r); /* sets.c */
}

int gsq_setup_graph(gsq_run *r)
{
    if (check_queryset(r) == 0 && gsq_plan(r) == 0 && setup_sources(r) == 0 &&
        open_sources(r) == 0 && gsq_tg_setup(r) == 0 && setup_streams(r) == 0 &&
        open_injects(r) == 0) {
        decide_alignment(r);
        decide_clock(r);
        return 0;
    }
    return -1;
}

int gsq_start_nodes(gsq_run *r)
{
    uint32_t i;
    for (i = 0; i < r->n_sinks && !r->failed; i++)
        gsq_sink_open(r, r->sinks[i]);
    if (r->failed || gsq_hb_open(r) != 0)
        return -1;
    return create_nodes(r);
}
