/*
 * loop.c -- the run loop.  Each round: per source, read a batch into its
 * ring (through its ops), run every LFTA bound to it over each record (or,
 * reading columns, a chunk into s->chunk and every LFTA over the chunk),
 * release the batch, drain the LFTA queues into the streams' subscribers,
 * fire due heartbeat ticks; per Arrow-fed stream, dispatch a batch of its
 * rows (or its GSQ_EOF); when the round read no record, wait on the idle
 * sources' descriptors together (wait_idle_sources); every few batches,
 * publish the counters for gsqlc_progress (run/progress.c).  A source
 * that reaches its end ends its LFTAs at once (end_source), so the epochs
 * they hold reach the operators downstream before anything newer from the
 * other sources can close them.  Until every source and Arrow-fed stream is at
 * its end, or the run is cancelled (gsqlc_cancel: every source is then at
 * its end).  Then, with option final_heartbeat, one last heartbeat of every
 * LFTA still open and a drain; their finish + GSQ_EOF, and a drain.
 */
#include <poll.h>
#include <stdint.h>

#include "gsq_run_steps.h"
#include "gsq_source_ops.h"


/* A heartbeat popped from an LFTA queue carries its trace (if tracing)
 * while it is dispatched: every HFTA it reaches, directly or through
 * heartbeats emitted on the way, becomes a hop of that trace. */
void gsq_drain(gsq_run *r)
{
    uint32_t i;
    for (i = 0; i < r->n_lfta_nodes && !r->failed; i++) {
        gsq_node *n = &r->nodes[i];
        int kind;
        const void *tup;
        uint32_t len;
        const gsq_stream_desc *d = &r->qs->streams[n->out_stream];
        for (;;) {
            /* runs of data tuples without strings go to the subscribers
             * together; anything else one at a time */
            const uint8_t *first;
            size_t stride;
            uint32_t m = n->merge || r->failed
                             ? 0
                             : gsq_tq_pop_run(&n->queue, GSQ_DATA, d->fixed_size, UINT32_MAX,
                                              &first, &stride);
            if (m) {
                gsq_dispatch_run(r, n->out_stream, first, stride, d->fixed_size, m);
                continue;
            }
            if (r->failed || !gsq_tq_pop(&n->queue, &kind, &tup, &len))
                break;
            if (kind == GSQ_HEARTBEAT && r->trace_path)
                r->cur_trace = gsq_trace_take(r, n);
            if (n->merge) /* an instance over an interface set */
                gsq_deliver(r, n->merge, n->merge_input, kind, kind == GSQ_EOF ? NULL : tup,
                            len);
            else
                gsq_dispatch(r, n->out_stream, kind, kind == GSQ_EOF ? NULL : tup, len);
            r->cur_trace = -1;
        }
    }
    if (r->trace_path)
        gsq_trace_write_pending(r);
}

/* Records ahead of accept() that an LFTA's prefetch hint is given: enough
 * to cover a memory access at ~10-20 ns of work per record. */
#define GSQ_PREFETCH_AHEAD 8u

static void prefetch_record(gsq_source *s, uint32_t i)
{
    uint32_t j;
    for (j = 0; j < s->n_lftas; j++) {
        gsq_node *n = s->lftas[j];
        if (n->lfta->prefetch)
            n->lfta->prefetch(n->state, n, &s->ring.recs[i]);
    }
}

/* The data clock over a whole batch at once, for a source none of whose
 * LFTAs reads it (the clock is not seen between its records): its first
 * readable record starts the clock, and the clock moves to its last
 * readable one (a running maximum over batches; for records out of order
 * within a batch it may trail their largest until the next batch -- the
 * timing of the ticks, not what any LFTA sees). */
static void batch_clock(gsq_run *r, const gsq_ring *ring)
{
    uint32_t i;
    for (i = 0; !r->data_seen && i < ring->n_recs; i++)
        if (!ring->recs[i].ts_unreadable) {
            r->data_first_usec = r->data_usec = ring->recs[i].arrival_usec;
            r->data_seen = 1;
        }
    for (i = ring->n_recs; i-- > 0;)
        if (!ring->recs[i].ts_unreadable) {
            if (ring->recs[i].arrival_usec > r->data_usec)
                r->data_usec = ring->recs[i].arrival_usec;
            break;
        }
}

/* The data clock's step for record rec of a source whose LFTAs read it. */
static inline void record_clock(gsq_run *r, const gsq_record *rec)
{
    if (!rec->ts_unreadable && (!r->data_seen || rec->arrival_usec > r->data_usec)) {
        if (!r->data_seen)
            r->data_first_usec = rec->arrival_usec;
        r->data_usec = rec->arrival_usec;
        r->data_seen = 1;
    }
}

/* run_batch through the source's prefilter (gsq_prefilter_def): a
 * generated heartbeat's drops are taken first (a record's only effect
 * before the LFTAs read it, and independent of them), then the prefilter
 * gives each record the bits of the LFTAs that may want it.  An LFTA whose
 * class is not clean for the batch (a record below its promise) is given
 * every record, as without a prefilter; the others only their bits', and
 * after the batch what the rest would have done (skipped()).  The LFTAs
 * that want a record take it in bit order: each has its own state and
 * queue, so their order within a record changes nothing. */
static void run_batch_prefiltered(gsq_run *r, gsq_source *s)
{
    const gsq_prefilter_def *pf = s->pf;
    uint32_t n = s->ring.n_recs, i, j, b;
    const gsq_record *recs = s->ring.recs;
    int data_clock = r->clock_mode == GSQ_CLOCK_DATA && s->has_ts && s->clock_readers;
    uint32_t n_dropped = 0;
    int prefetch = 0;
    uint64_t bits = 0, unclean = 0;
    uint32_t calls[64];
    if (r->clock_mode == GSQ_CLOCK_DATA && s->has_ts && !s->clock_readers)
        batch_clock(r, &s->ring);
    if (s->tg)
        for (i = 0; i < n; i++) {
            s->pf_dropped[i] = (uint8_t)(!recs[i].ts_unreadable &&
                                         gsq_tg_arrive(s->tg, recs[i].app_usec));
            n_dropped += s->pf_dropped[i];
        }
    pf->run(recs, n, n_dropped ? s->pf_dropped : NULL, s->pf_want, s->pf_classes);
    for (b = 0; b < 64; b++) {
        gsq_node *nd = s->pf_node[b];
        if (!nd)
            continue;
        const gsq_lfta_prefilter *p = nd->lfta->prefilter;
        bits |= (uint64_t)1 << b;
        calls[b] = 0;
        prefetch |= nd->lfta->prefetch != NULL;
        if (!p->clean(nd->state, (const char *)s->pf_classes + p->class_off))
            unclean |= (uint64_t)1 << b;
    }
    for (j = 0; j < s->n_pf_always; j++)
        prefetch |= s->pf_always[j]->lfta->prefetch != NULL;
    for (i = 0; i < n && !r->failed; i++) {
        const gsq_record *rec = &recs[i];
        uint64_t m;
        if (prefetch && i + GSQ_PREFETCH_AHEAD < n) {
            uint32_t k = i + GSQ_PREFETCH_AHEAD;
            if (!n_dropped || !s->pf_dropped[k]) {
                for (m = (s->pf_want[k] | unclean) & bits; m; m &= m - 1) {
                    gsq_node *nd = s->pf_node[__builtin_ctzll(m)];
                    if (nd->lfta->prefetch)
                        nd->lfta->prefetch(nd->state, nd, &recs[k]);
                }
                for (j = 0; j < s->n_pf_always; j++) {
                    gsq_node *nd = s->pf_always[j];
                    if (nd->lfta->prefetch)
                        nd->lfta->prefetch(nd->state, nd, &recs[k]);
                }
            }
        }
        if (data_clock)
            record_clock(r, rec);
        if (n_dropped && s->pf_dropped[i])
            continue;
        for (m = (s->pf_want[i] | unclean) & bits; m && !r->failed; m &= m - 1) {
            b = (uint32_t)__builtin_ctzll(m);
            calls[b]++;
            s->pf_node[b]->lfta->accept(s->pf_node[b]->state, s->pf_node[b], rec);
        }
        for (j = 0; j < s->n_pf_always && !r->failed; j++) {
            gsq_node *nd = s->pf_always[j];
            nd->lfta->accept(nd->state, nd, rec);
        }
    }
    if (!r->failed) {
        uint64_t m;
        uint32_t given = n - n_dropped; /* records the LFTAs were offered */
        for (m = bits & ~unclean; m; m &= m - 1) {
            gsq_node *nd;
            const gsq_lfta_prefilter *p;
            b = (uint32_t)__builtin_ctzll(m);
            nd = s->pf_node[b];
            p = nd->lfta->prefilter;
            s->pf_skipped += given - calls[b];
            p->skipped(nd->state, (const char *)s->pf_classes + p->class_off, given - calls[b]);
        }
    }
    gsq_ring_release(&s->ring);
}

/* The data clock follows the arrival instants of the records of sources
 * with timestamps (an unreadable one advances nothing): record by record
 * when an LFTA of the source reads it, else once for the batch. */
static void run_batch(gsq_run *r, gsq_source *s)
{
    uint32_t i, j;
    if (s->pf) {
        run_batch_prefiltered(r, s);
        return;
    }
    int data_clock = r->clock_mode == GSQ_CLOCK_DATA && s->has_ts && s->clock_readers;
    gsq_tg_stream *tg = s->tg;
    int prefetch = 0;
    if (r->clock_mode == GSQ_CLOCK_DATA && s->has_ts && !s->clock_readers)
        batch_clock(r, &s->ring);
    for (j = 0; j < s->n_lftas; j++)
        prefetch |= s->lftas[j]->lfta->prefetch != NULL;
    for (i = 0; prefetch && i < GSQ_PREFETCH_AHEAD && i < s->ring.n_recs; i++)
        prefetch_record(s, i);
    for (i = 0; i < s->ring.n_recs && !r->failed; i++) {
        const gsq_record *rec = &s->ring.recs[i];
        if (prefetch && i + GSQ_PREFETCH_AHEAD < s->ring.n_recs)
            prefetch_record(s, i + GSQ_PREFETCH_AHEAD);
        if (data_clock)
            record_clock(r, rec);
        /* below a heartbeat already issued: dropped and counted (Srivastava & Widom 2004) */
        if (tg && !rec->ts_unreadable && gsq_tg_arrive(tg, rec->app_usec))
            continue;
        for (j = 0; j < s->n_lftas && !r->failed; j++) {
            gsq_node *n = s->lftas[j];
            n->lfta->accept(n->state, n, rec);
        }
    }
    gsq_ring_release(&s->ring);
}

/* Whether row i of the chunk has a timestamp the clock may read: kept, and
 * its time value readable. */
static inline int row_readable(const gsq_source *s, const gsq_chunk *ch, uint32_t i)
{
    return s->has_ts && !(ch->any_skipped && !ch->row_ok[i]) && !ch->ts_unreadable[i];
}

/* run_batch over a columnar chunk: the data clock and the generated
 * heartbeats' drops first (a row's only effects before the LFTAs read
 * it), then each LFTA over the whole chunk.  Under the data clock the
 * clock after each row is kept (clock_usec) when an LFTA reads it: it
 * sets it back row by row (gsq_cols_row_clock), as records would see it;
 * the clock is left as the whole chunk moved it. */
static void run_cols(gsq_run *r, gsq_source *s)
{
    gsq_chunk *ch = &s->chunk;
    int data_clock = r->clock_mode == GSQ_CLOCK_DATA;
    int row_clock = data_clock && s->clock_readers; /* kept per row for its readers */
    uint32_t i, j;
    if (data_clock && !s->tg && !row_clock && ch->clock_row >= 0 && ch->n) {
        /* only the first row and clock_row are stamped (arrow_source.c):
         * the clock moves to clock_row's */
        uint32_t top = (uint32_t)ch->clock_row;
        if (!r->data_seen && row_readable(s, ch, 0)) {
            r->data_first_usec = ch->arrival_usec[0];
            r->data_usec = ch->arrival_usec[0];
            r->data_seen = 1;
        }
        if (row_readable(s, ch, top) && (!r->data_seen || ch->arrival_usec[top] > r->data_usec)) {
            if (!r->data_seen)
                r->data_first_usec = ch->arrival_usec[top];
            r->data_usec = ch->arrival_usec[top];
            r->data_seen = 1;
        }
    } else if (data_clock && !s->tg) {
        /* the clock alone: a running maximum, kept in locals (the stores
         * to clock_usec may alias the run) and taken with no branch */
        int seen = r->data_seen;
        uint64_t usec = r->data_usec, first = r->data_first_usec;
        for (i = 0; i < ch->n; i++) {
            int readable = row_readable(s, ch, i);
            uint64_t a = readable ? ch->arrival_usec[i] : 0;
            int take = readable & (!seen | (a > usec));
            first = (readable & !seen) ? a : first;
            usec = take ? a : usec;
            seen |= readable;
            if (row_clock)
                ch->clock_usec[i] = seen ? usec : UINT64_MAX;
        }
        r->data_seen = seen;
        r->data_usec = usec;
        r->data_first_usec = first;
    }
    for (i = 0; i < ch->n && s->tg; i++) {
        int readable = row_readable(s, ch, i);
        if (readable && data_clock && (!r->data_seen || ch->arrival_usec[i] > r->data_usec)) {
            if (!r->data_seen)
                r->data_first_usec = ch->arrival_usec[i];
            r->data_usec = ch->arrival_usec[i];
            r->data_seen = 1;
        }
        if (row_clock)
            ch->clock_usec[i] = r->data_seen ? r->data_usec : UINT64_MAX;
        if (readable && gsq_tg_arrive(s->tg, ch->app_usec[i])) {
            ch->row_ok[i] = 0;
            ch->any_skipped = 1;
        }
    }
    for (j = 0; j < s->n_lftas && !r->failed; j++) {
        gsq_node *n = s->lftas[j];
        gsq_cols cv;
        cv.n = ch->n;
        cv.row_ok = ch->any_skipped ? ch->row_ok : NULL;
        cv.col = ch->lfta_cols[j];
        cv.clock_usec = row_clock ? ch->clock_usec : NULL;
        n->lfta->accept_cols(n->state, n, &cv);
    }
    if (row_clock && ch->n) { /* as the last row left it */
        r->data_seen = ch->clock_usec[ch->n - 1] != UINT64_MAX;
        r->data_usec = r->data_seen ? ch->clock_usec[ch->n - 1] : 0;
    }
}

/* The source's time progress after a batch (gsqlc_progress): its last
 * readable timestamp, kept as a running maximum -- once per batch. */
static inline void note_time(gsq_source *s, uint64_t app_usec)
{
    if (!s->wm_seen || app_usec > s->wm_usec) {
        s->wm_usec = app_usec;
        s->wm_seen = 1;
    }
}

static inline void note_chunk_time(gsq_source *s)
{
    const gsq_chunk *ch = &s->chunk;
    if (ch->n && row_readable(s, ch, ch->n - 1))
        note_time(s, ch->app_usec[ch->n - 1]);
}

/* The end of one LFTA: finish() -- the epochs and groups it holds go out
 * as data -- and GSQ_EOF, which downstream operators take as infinite
 * progress of that input.  Once per LFTA (n->ended); with option
 * final_heartbeat, its last heartbeat first (at the run's end the caller
 * has fired every LFTA's already, gsq_hb_final). */
static void end_lfta(gsq_node *n, int last_heartbeat)
{
    if (!n->live || n->ended || n->run->failed)
        return;
    n->ended = 1;
    /* in the kernel: its source's finish gave the last heartbeat */
    if (last_heartbeat && n->run->final_heartbeat && !n->in_kernel && n->lfta->heartbeat)
        n->lfta->heartbeat(n->state, n);
    if (n->lfta->finish)
        n->lfta->finish(n->state, n);
    gsq_emit(n, GSQ_EOF, NULL, 0, NULL, 0);
}

/* Source s is at its end: its LFTAs end now, not when the run does.  An
 * LFTA over one member of an interface set holds its last epochs until
 * it ends; were they released only at the run's end, the other members'
 * newer partials would have closed those epochs downstream by then (two
 * rotated captures as one set lost the first one's last epochs). */
static void end_source(gsq_run *r, gsq_source *s)
{
    uint32_t j;
    for (j = 0; j < s->n_lftas && !r->failed; j++)
        end_lfta(s->lftas[j], 1);
    gsq_drain(r);
}

void gsq_flush_sinks(gsq_run *r)
{
    uint32_t i;
    for (i = 0; i < r->n_sinks; i++)
        if (r->sinks[i]->fd >= 0 || r->sinks[i]->arrow)
            gsq_sink_flush(r, r->sinks[i]);
}

/* Replay in time: this round reads, from every recording with timestamps
 * (setup.c: pcap, CSV with a time or arrival column, Arrow tables, GDAT),
 * the records that arrived up to the earliest next arrival instant among
 * them plus a quantum (the heartbeat interval, at most 1 s), so the
 * recordings advance together as live interfaces would -- no source is
 * read more than a quantum ahead of the slowest one still open, and the
 * heartbeats fire only once the round is complete -- and an idle stretch of
 * one of them shows (stalls, heartbeats from the clock) instead of being
 * read ahead.  A recording at its end no longer holds the others back. */
static int align_round(gsq_run *r)
{
    uint64_t min = UINT64_MAX, ts, limit, q;
    uint32_t i;
    q = r->hb_interval_usec && r->hb_interval_usec < 1000000u ? r->hb_interval_usec : 1000000u;
    for (i = 0; i < r->n_sources; i++) {
        gsq_source *s = &r->sources[i];
        int rc;
        if (!s->aligned || s->at_eof)
            continue;
        rc = s->ops->peek(r, s, &ts);
        if (rc < 0)
            return -1;
        if (rc > 0 && ts < min)
            min = ts;
    }
    limit = min > UINT64_MAX - q ? UINT64_MAX : min + q;
    for (i = 0; i < r->n_sources; i++)
        if (r->sources[i].aligned)
            r->sources[i].limit_usec = limit;
    return 0;
}

/* A round that read no record: wait, for at most gsq_hb_wait_ms (the next
 * heartbeat tick, 100 ms), until an idle source that has a descriptor to
 * poll (ops->wait_fd: live interfaces, pipes) has input.  Sources without
 * one (files, Arrow feeds) never leave a round empty while they have data. */
#define GSQ_MAX_WAIT_FDS 64
static void wait_idle_sources(gsq_run *r)
{
    struct pollfd pfd[GSQ_MAX_WAIT_FDS];
    nfds_t n = 0;
    uint32_t i;
    for (i = 0; i < r->n_sources && n < GSQ_MAX_WAIT_FDS; i++) {
        const gsq_source *s = &r->sources[i];
        int fd;
        if (s->at_eof || !s->ops->wait_fd || (fd = s->ops->wait_fd(s)) < 0)
            continue;
        pfd[n].fd = fd;
        pfd[n].events = POLLIN;
        pfd[n].revents = 0;
        n++;
    }
    if (n > 0)
        (void)poll(pfd, n, gsq_hb_wait_ms(r));
}

/* Read a batch of source s and run its LFTAs over it: the records read in
 * *n; 0, or -1 when the read failed (the run has failed).  Touches only s,
 * its LFTA nodes and their queues (and the data clock, which capture
 * workers never run under): a capture worker runs it for its source. */
int gsq_read_and_run(gsq_run *r, gsq_source *s, uint32_t *n)
{
    *n = 0;
    if (s->columnar && s->ops->read_cols) {
        if (s->ops->read_cols(r, s) < 0)
            return -1;
        *n = s->chunk.n;
        run_cols(r, s);
        note_chunk_time(s);
    } else if (s->columnar) { /* records, transposed */
        if (s->ops->read_batch(r, s) < 0)
            return -1;
        *n = s->ring.n_recs;
        if (*n && !s->chunk.cap &&
            gsq_chunk_init(&s->chunk, s, s->ring.max_recs, s->ring.recs[0].layout) != 0) {
            gsq_run_fail(r, "out of memory");
            return -1;
        }
        if (*n) {
            gsq_chunk_from_ring(&s->chunk, &s->ring);
            run_cols(r, s);
            note_chunk_time(s);
        }
        gsq_ring_release(&s->ring);
    } else {
        if (s->ops->read_batch(r, s) < 0)
            return -1;
        *n = s->ring.n_recs;
        if (*n && s->has_ts && !s->ring.recs[*n - 1].ts_unreadable)
            note_time(s, s->ring.recs[*n - 1].app_usec);
        run_batch(r, s);
    }
    return 0;
}

/* Records read between two publications of the counters (gsqlc_progress):
 * a few batches, so that publishing costs nothing measurable; a round that
 * read nothing (idle, or only Arrow-fed streams) publishes at once. */
#define GSQ_PUBLISH_RECORDS 4096u

void gsq_main_loop(gsq_run *r)
{
    uint32_t i;
    uint64_t unpublished = 0;
    gsq_hb_after_batch(r, NULL, 0, 1); /* start the timer if the clock is known */
    gsq_progress_publish(r, 0);        /* running: the inputs' sizes are known */
    if (gsq_workers_start(r) != 0) {
        gsq_workers_stop(r);
        return;
    }
    for (;;) {
        int active = 0, input_done = 0;
        uint64_t round_records = 0;
        /* a round boundary: every record read so far has reached every
         * operator -- the instant parameter changes take effect */
        if (atomic_load(&r->param_pending))
            gsq_params_apply(r);
        if (r->failed)
            break;
        if (r->aligned && align_round(r) != 0)
            break;
        if (r->n_workers)
            gsq_workers_round(r); /* the fanout members, side by side */
        for (i = 0; i < r->n_sources && !r->failed; i++) {
            gsq_source *s = &r->sources[i];
            uint32_t n;
            int rc;
            /* at its end (found by peek, or by the last round's read, whose
             * heartbeats have fired): the end reaches its LFTAs before any
             * source reads past the round that ended it */
            if (s->at_eof) {
                s->round_ran = 0; /* cancelled: its worker read nothing */
                if (!s->ended) {
                    s->ended = 1;
                    end_source(r, s);
                }
                continue;
            }
            active = 1;
            if (s->round_ran) { /* read and run by its worker this round */
                s->round_ran = 0;
                n = s->round_n;
                rc = s->round_rc;
            } else {
                rc = gsq_read_and_run(r, s, &n);
            }
            if (rc < 0)
                break;
            gsq_drain(r);
            gsq_hb_after_batch(r, s, n, !r->aligned);
            round_records += n;
            input_done |= s->input_done;
            s->input_done = 0;
        }
        for (i = 0; i < r->n_injects && !r->failed; i++) {
            gsq_inject *in = &r->injects[i];
            if (!in->active || in->at_eof)
                continue;
            active = 1;
            if (gsq_inject_step(r, in) < 0)
                break;
            gsq_hb_after_batch(r, NULL, 0, !r->aligned);
        }
        if (r->aligned)
            gsq_hb_after_batch(r, NULL, 0, 1); /* the round is complete */
        r->rounds++;
        if (r->failed || !active)
            break;
        if (gsq_run_cancelled(r)) {
            r->interrupted = 1;
            for (i = 0; i < r->n_sources; i++)
                if (!r->sources[i].drains_on_cancel)
                    r->sources[i].at_eof = 1;
            for (i = 0; i < r->n_injects; i++)
                gsq_inject_eof(r, &r->injects[i]);
        }
        if (r->streaming || input_done)
            gsq_flush_sinks(r);
        unpublished += round_records;
        if (round_records == 0 || unpublished >= GSQ_PUBLISH_RECORDS) {
            gsq_progress_publish(r, 0);
            unpublished = 0;
        }
        if (round_records == 0 && !r->failed && !gsq_run_cancelled(r))
            wait_idle_sources(r);
    }
    gsq_workers_stop(r); /* no more reads: the rest is the run loop's */
    if (gsq_run_cancelled(r))
        r->interrupted = 1;
    if (r->failed)
        return;
    if (r->final_heartbeat)
        gsq_hb_final(r); /* before any EOF: the inputs of the HFTAs are open */
    for (i = 0; i < r->n_injects && !r->failed; i++)
        gsq_inject_eof(r, &r->injects[i]);
    for (i = 0; i < r->n_lfta_nodes && !r->failed; i++)
        end_lfta(&r->nodes[i], 0);
    gsq_drain(r);
}
