/*
 * heartbeat.c -- the heartbeat timer, stall detection and heartbeat traces
 * (Johnson et al. 2005 sections 4 and 6).
 *
 * Timer.  The first time the run's clock is known (at the start for the
 * wall and fixed clocks, at the first timestamp for the data clock) the
 * next tick is set one interval later.  After every batch (an empty one
 * too: idle pipes and live interfaces return every 100 ms) -- in a
 * time-aligned replay after every round, once all files were read up to
 * the same time, so no tick promises a time a file has not reached yet --
 * the due ticks fire: every LFTA's heartbeat() in query-set order, then a
 * drain, so the temporal updates reach the HFTAs like data.  All ticks due at once see
 * the same clock and LFTA state, so beyond GSQ_MAX_TICKS_AT_ONCE (a jump of
 * the clock) only the last one fires; the others are counted as skipped.
 * A wall clock set back by more than an interval restarts the schedule.
 * The fixed clock never advances: no ticks.  With option final_heartbeat,
 * the end of input fires one more tick (gsq_hb_final), before the LFTAs'
 * finish(), whatever the clock.
 *
 * Stalls (Johnson et al. 2005, 6.1), checked at every tick.  A source that is not at
 * its end and delivered no record while the clock advanced stall_intervals
 * intervals is stalled; an LFTA whose source is not at its end and that
 * emitted nothing (data or heartbeat) as long likewise.  Progress is
 * observed after every batch and tick (a source's records; an LFTA's queue
 * `pushed` count), so "last seen" is the clock at that observation.  Each
 * change is an event (kept up to GSQ_MAX_EVENTS) for the report and stats.
 *
 * Traces (Johnson et al. 2005, 6.2), with option trace.  Every heartbeat an LFTA emits
 * gets the next trace id and an origin (LFTA, CLOCK_MONOTONIC time, run
 * clock; for a source with generated heartbeats, Srivastava & Widom 2004, also the
 * source, its generated heartbeat and its largest timestamp then).  The
 * drain dispatches it with run->cur_trace set, and every HFTA that
 * receives a heartbeat meanwhile -- the LFTA's, or one an HFTA emitted
 * while handling it -- is a hop.  After each drain every pending trace has
 * been delivered and is written as one JSON line (id order) to a buffer
 * that goes to the file when it is large and at the end of the run.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gsq_internal.h"

#define TRACE_FLUSH_AT (1u << 20)

/* ---- stalls ----------------------------------------------------------- */

static void add_event(gsq_run *r, int kind, const gsq_source *s, const gsq_node *n,
                      uint64_t now, uint64_t intervals)
{
    gsq_event *e;
    if (r->n_events >= GSQ_MAX_EVENTS) {
        r->events_dropped++;
        return;
    }
    if (r->n_events == r->cap_events) {
        uint32_t ncap = r->cap_events ? r->cap_events * 2 : 16;
        gsq_event *ne = realloc(r->events, ncap * sizeof *ne);
        if (!ne) { /* the event is lost, not the run */
            r->events_dropped++;
            return;
        }
        r->events = ne;
        r->cap_events = ncap;
    }
    e = &r->events[r->n_events++];
    e->kind = kind;
    e->source = s;
    e->node = n;
    e->clock_usec = now;
    e->intervals = intervals;
}

/* Note what moved: the records of source s (if any), every LFTA's output. */
static void observe(gsq_run *r, gsq_source *s, uint32_t n_recs, uint64_t now)
{
    uint32_t i;
    if (s && n_recs) {
        s->last_rec_usec = now;
        if (s->stalled) {
            s->stalled = 0;
            add_event(r, GSQ_EV_RECOVERED, s, NULL, now, 0);
        }
    }
    for (i = 0; i < r->n_lfta_nodes; i++) {
        gsq_node *n = &r->nodes[i];
        if (n->queue.pushed == n->seen_pushed)
            continue;
        n->seen_pushed = n->queue.pushed;
        n->last_emit_usec = now;
        if (n->stalled) {
            n->stalled = 0;
            add_event(r, GSQ_EV_RECOVERED, NULL, n, now, 0);
        }
    }
}

static void check_stalls(gsq_run *r, uint64_t now)
{
    uint64_t iv = r->hb_interval_usec, limit;
    uint32_t i;
    limit = r->stall_intervals > UINT64_MAX / iv ? UINT64_MAX : iv * r->stall_intervals;
    for (i = 0; i < r->n_sources; i++) {
        gsq_source *s = &r->sources[i];
        /* a recording replayed in time whose first record lies ahead has
         * not begun (the second of two rotated captures): not stalled */
        if (s->at_eof || s->stalled || s->no_records || (s->aligned && !s->records_read) ||
            now < s->last_rec_usec || now - s->last_rec_usec < limit)
            continue;
        s->stalled = 1;
        add_event(r, GSQ_EV_STALLED, s, NULL, now, (now - s->last_rec_usec) / iv);
    }
    for (i = 0; i < r->n_lfta_nodes; i++) {
        gsq_node *n = &r->nodes[i];
        /* an LFTA in the kernel emits once per epoch, at its drain */
        uint64_t epoch = n->in_kernel ? n->lfta->xdp->epoch_ns / 1000 + 1000000 : 0;
        uint64_t nl = limit > UINT64_MAX - epoch ? UINT64_MAX : limit + epoch;
        if (!n->source || n->source->at_eof || n->stalled ||
            (n->source->aligned && !n->source->records_read) || now < n->last_emit_usec ||
            now - n->last_emit_usec < nl)
            continue;
        n->stalled = 1;
        add_event(r, GSQ_EV_STALLED, NULL, n, now, (now - n->last_emit_usec) / iv);
    }
}

/* ---- the timer -------------------------------------------------------- */

/* Every LFTA's heartbeat(), then a drain.  Generated heartbeats (seed
 * 002) are brought up to the clock first, and the promises the LFTAs made
 * become their sources' drop thresholds after. */
static void tick(gsq_run *r)
{
    uint32_t i;
    uint64_t now = 0;
    int known = gsq_run_clock_usec(r, &now) == 0;
    gsq_tg_tick_begin(r, known, now);
    for (i = 0; i < r->n_lfta_nodes && !r->failed; i++) {
        gsq_node *n = &r->nodes[i];
        if (n->live && !n->ended && !n->in_kernel && n->lfta->heartbeat)
            n->lfta->heartbeat(n->state, n);
    }
    gsq_tg_tick_end(r);
    gsq_drain(r);
}

/* The final heartbeat is a tick outside the timer: not counted in
 * hb_ticks, no stall check (every source has ended), and fired whether or
 * not the clock is known or ever ticked (fixed clock, heartbeat_interval
 * off, a run shorter than an interval, an Arrow source without record
 * timestamps): the LFTAs' heartbeat() gives their last seen temporal
 * values, those of records their predicate rejected included. */
void gsq_hb_final(gsq_run *r)
{
    if (!r->failed)
        tick(r);
}

void gsq_hb_after_batch(gsq_run *r, gsq_source *s, uint32_t n_recs, int fire)
{
    uint64_t now, iv = r->hb_interval_usec;
    uint32_t i;
    if (r->failed || gsq_run_clock_usec(r, &now) != 0)
        return;
    if (!r->hb_started) {
        /* the data clock started at the first timestamp, within the batch */
        uint64_t first = r->clock_mode == GSQ_CLOCK_DATA && r->data_seen ? r->data_first_usec
                                                                         : now;
        r->hb_started = 1;
        r->hb_next = first + iv;
        for (i = 0; i < r->n_sources; i++)
            r->sources[i].last_rec_usec = now;
        for (i = 0; i < r->n_lfta_nodes; i++) {
            r->nodes[i].last_emit_usec = now;
            r->nodes[i].seen_pushed = r->nodes[i].queue.pushed;
        }
    }
    observe(r, s, n_recs, now);
    /* arrivals into generated heartbeats; every input paused past the
     * timeout: a tick now, whether or not the clock moved */
    if (gsq_tg_after_batch(r, s, now))
        r->tg.tick_due = 1;
    if (!iv || !fire)
        return;
    if (r->tg.tick_due) {
        r->tg.tick_due = 0;
        tick(r);
        observe(r, NULL, 0, now);
    }
    if (now + iv < r->hb_next) /* the wall clock was set back */
        r->hb_next = now + iv;
    while (!r->failed && now >= r->hb_next) {
        uint64_t due = (now - r->hb_next) / iv + 1;
        if (due > GSQ_MAX_TICKS_AT_ONCE) {
            r->hb_ticks_skipped += due - 1;
            r->hb_next += (due - 1) * iv;
        }
        tick(r);
        r->hb_ticks++;
        r->hb_next += iv;
        observe(r, NULL, 0, now);
        check_stalls(r, now);
    }
}

int gsq_hb_wait_ms(const gsq_run *r)
{
    uint64_t now, ms;
    /* only wall time advances while nothing arrives */
    if (!r->hb_started || !r->hb_interval_usec || r->clock_mode == GSQ_CLOCK_FIXED ||
        (r->clock_mode == GSQ_CLOCK_DATA && r->ts_sources) || gsq_run_clock_usec(r, &now) != 0)
        return 100;
    if (now >= r->hb_next)
        return 0;
    ms = (r->hb_next - now + 999) / 1000;
    return ms < 100 ? (int)ms : 100;
}

/* ---- traces ----------------------------------------------------------- */

int gsq_hb_open(gsq_run *r)
{
    if (!r->trace_path)
        return 0;
    r->trace_fd = open(r->trace_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (r->trace_fd < 0) {
        gsq_run_fail(r, "cannot open trace file %s: %s", r->trace_path, strerror(errno));
        return -1;
    }
    return 0;
}

/* Write the buffered trace lines; a write error fails the run (once). */
static void trace_flush(gsq_run *r)
{
    gsq_buf *b = &r->trace_out;
    size_t done = 0;
    if (r->trace_fd < 0)
        return;
    if (b->oom) {
        gsq_run_fail(r, "out of memory writing trace file %s", r->trace_path);
        close(r->trace_fd);
        r->trace_fd = -1;
        return;
    }
    while (done < b->len) {
        ssize_t n = write(r->trace_fd, b->p + done, b->len - done);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            gsq_run_fail(r, "cannot write trace file %s: %s", r->trace_path, strerror(errno));
            close(r->trace_fd);
            r->trace_fd = -1;
            break;
        }
        done += (size_t)n;
    }
    gsq_buf_reset(b);
}

void gsq_trace_emitted(gsq_run *r, gsq_node *lfta)
{
    gsq_trace *t;
    if (r->n_traces == r->cap_traces) {
        uint32_t ncap = r->cap_traces ? r->cap_traces * 2 : 16;
        gsq_trace *nt = realloc(r->traces, ncap * sizeof *nt);
        if (!nt) {
            gsq_run_fail(r, "out of memory");
            return;
        }
        r->traces = nt;
        r->cap_traces = ncap;
    }
    t = &r->traces[r->n_traces++];
    memset(t, 0, sizeof *t);
    t->id = ++r->next_trace_id;
    t->origin = (uint32_t)(lfta - r->nodes);
    t->emitted_usec = gsq_mono_usec();
    t->clock_known = gsq_run_clock_usec(r, &t->clock_usec) == 0;
    /* the heartbeat the LFTA was given (the least of all at query level) */
    if (lfta->source && lfta->source->tg &&
        gsq_generated_heartbeat_usec(lfta, &t->heartbeat_usec) == 0) {
        const gsq_tg_stream *g = lfta->source->tg;
        t->source = lfta->source->iface;
        t->data_known = g->seen;
        t->data_usec = g->max_usec;
    }
}

/* The trace of the heartbeat just popped from this LFTA's queue: its
 * oldest undelivered one (its queue keeps emission order). */
int64_t gsq_trace_take(gsq_run *r, gsq_node *lfta)
{
    uint32_t origin = (uint32_t)(lfta - r->nodes), i;
    for (i = lfta->trace_cursor; i < r->n_traces; i++) {
        gsq_trace *t = &r->traces[i];
        if (!t->delivered && t->origin == origin) {
            t->delivered = 1;
            lfta->trace_cursor = i + 1;
            return (int64_t)i;
        }
    }
    return -1;
}

void gsq_trace_hop(gsq_run *r, gsq_node *hfta)
{
    gsq_trace *t = &r->traces[r->cur_trace];
    gsq_hop *h;
    if (t->n_hops == t->cap_hops) {
        uint32_t ncap = t->cap_hops ? t->cap_hops * 2 : 4;
        gsq_hop *nh = realloc(t->hops, ncap * sizeof *nh);
        if (!nh) {
            gsq_run_fail(r, "out of memory");
            return;
        }
        t->hops = nh;
        t->cap_hops = ncap;
    }
    h = &t->hops[t->n_hops++];
    h->node = (uint32_t)(hfta - r->nodes);
    h->arrived_usec = gsq_mono_usec();
    h->clock_known = gsq_run_clock_usec(r, &h->clock_usec) == 0;
}

static void json_clock(gsq_buf *b, int known, uint64_t v)
{
    if (known)
        gsq_buf_printf(b, "%llu", (unsigned long long)v);
    else
        gsq_buf_adds(b, "null");
}

void gsq_trace_write_pending(gsq_run *r)
{
    gsq_buf *b = &r->trace_out;
    uint32_t i, j;
    for (i = 0; i < r->n_traces; i++) {
        gsq_trace *t = &r->traces[i];
        const char *origin = r->nodes[t->origin].name;
        if (t->delivered && r->trace_fd >= 0) {
            gsq_buf_printf(b, "{\"trace\":%llu,\"origin\":", (unsigned long long)t->id);
            gsq_buf_json_str(b, origin, strlen(origin));
            gsq_buf_printf(b, ",\"emitted_usec\":%llu,\"clock_usec\":",
                           (unsigned long long)t->emitted_usec);
            json_clock(b, t->clock_known, t->clock_usec);
            if (t->source) {
                gsq_buf_adds(b, ",\"source\":");
                gsq_buf_json_str(b, t->source, strlen(t->source));
                gsq_buf_printf(b, ",\"heartbeat_usec\":%llu,\"data_usec\":",
                               (unsigned long long)t->heartbeat_usec);
                json_clock(b, t->data_known, t->data_usec);
            }
            gsq_buf_adds(b, ",\"hops\":[");
            for (j = 0; j < t->n_hops; j++) {
                const gsq_hop *h = &t->hops[j];
                const char *name = r->nodes[h->node].name;
                gsq_buf_adds(b, j ? ",{\"node\":" : "{\"node\":");
                gsq_buf_json_str(b, name, strlen(name));
                gsq_buf_printf(b, ",\"arrived_usec\":%llu,\"clock_usec\":",
                               (unsigned long long)h->arrived_usec);
                json_clock(b, h->clock_known, h->clock_usec);
                gsq_buf_addc(b, '}');
            }
            gsq_buf_adds(b, "]}\n");
            r->traces_written++;
        }
        free(t->hops);
        t->hops = NULL;
    }
    r->n_traces = 0;
    for (i = 0; i < r->n_lfta_nodes; i++)
        r->nodes[i].trace_cursor = 0;
    if (b->len >= TRACE_FLUSH_AT || b->oom)
        trace_flush(r);
}

void gsq_hb_close(gsq_run *r)
{
    if (r->trace_fd < 0)
        return;
    trace_flush(r);
    if (r->trace_fd >= 0 && close(r->trace_fd) != 0 && !r->failed)
        gsq_run_fail(r, "cannot write trace file %s: %s", r->trace_path, strerror(errno));
    r->trace_fd = -1;
}

void gsq_hb_free(gsq_run *r)
{
    uint32_t i;
    for (i = 0; i < r->n_traces; i++)
        free(r->traces[i].hops);
    free(r->traces);
    r->traces = NULL;
    r->n_traces = r->cap_traces = 0;
    free(r->events);
    r->events = NULL;
    r->n_events = r->cap_events = 0;
    gsq_buf_free(&r->trace_out);
}
