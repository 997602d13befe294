/*
 * progress.c -- live progress: the run's thread publishes its counters
 * (gsq_progress_publish: every few batches of the run loop, loop.c says
 * when, and once at the end) into C11 atomics that gsqlc_progress reads
 * from any thread (gsq_runtime.h: gsqlc_progress_snapshot, invariants).
 *
 * Publishing reads the counters the stats are made of (report.c): the
 * sources' records_read, rows_rejected and input position, the nodes'
 * late_dropped and skew_dropped, the sinks' tuples, the Arrow-fed
 * streams' rows_rejected -- a few dozen loads and stores per publication,
 * none per record.  Every store is relaxed but the state's and
 * has_watermark's, which are releases (the done state comes after the
 * final values, a set has_watermark after its watermark); gsqlc_progress
 * loads those two with acquire, before the others.
 */
#include "gsq_source_ops.h"

void gsq_source_input_bytes(const gsq_source *s, uint64_t *pos, uint64_t *total)
{
    *pos = s->bytes_read;
    *total = 0;
    if (s->impl && s->ops->progress)
        s->ops->progress(s, pos, total);
    if (*total && *pos > *total)
        *pos = *total;
}

/* The time progress of source s: 1 and *usec, or 0 when it has none yet
 * (gsq_runtime.h: watermark_sec). */
static int source_watermark(const gsq_source *s, uint64_t *usec)
{
    if (s->tg) {
        if (!s->tg->issued)
            return 0;
        *usec = s->tg->issued_usec;
        return 1;
    }
    if (!s->wm_seen)
        return 0;
    *usec = s->wm_usec;
    return 1;
}

/* The run's watermark: the lowest among the sources with timestamps that
 * are still reading (none while one of them has none), the highest once
 * all ended.  1 and *usec, or 0. */
static int run_watermark(const gsq_run *r, uint64_t *usec)
{
    uint64_t low = UINT64_MAX, high = 0, v;
    int reading = 0, missing = 0, known = 0;
    uint32_t i;
    for (i = 0; i < r->n_sources; i++) {
        const gsq_source *s = &r->sources[i];
        int has;
        if (!s->has_ts)
            continue;
        has = source_watermark(s, &v);
        if (has) {
            known = 1;
            if (v > high)
                high = v;
        }
        if (s->at_eof)
            continue;
        reading = 1;
        if (!has)
            missing = 1;
        else if (v < low)
            low = v;
    }
    if (reading) {
        if (missing)
            return 0;
        *usec = low;
        return 1;
    }
    if (!known)
        return 0;
    *usec = high;
    return 1;
}

void gsq_progress_publish(gsq_run *r, int done)
{
    gsq_progress_pub *p = &r->progress;
    uint64_t bytes = 0, total = 0, recs = 0, out = 0, late = 0, skew = 0, bad = 0, wm = 0;
    int total_known = r->n_sources > 0, has_wm;
    uint32_t i;
    for (i = 0; i < r->n_sources; i++) {
        const gsq_source *s = &r->sources[i];
        uint64_t pos, size;
        gsq_source_input_bytes(s, &pos, &size);
        bytes += pos;
        total += size;
        total_known &= size != 0;
        recs += s->records_read;
        bad += s->rows_rejected;
        if (s->tg)
            skew += s->tg->dropped;
    }
    for (i = 0; i < r->n_injects; i++)
        bad += r->injects[i].rows_rejected;
    for (i = 0; r->nodes && i < r->n_nodes; i++) {
        late += r->nodes[i].counters[GSQ_CNT_LATE_DROPPED];
        skew += r->nodes[i].counters[GSQ_CNT_SKEW_DROPPED];
    }
    for (i = 0; i < r->n_sinks; i++)
        out += r->sinks[i]->tuples;
    has_wm = run_watermark(r, &wm);
    if (atomic_load_explicit(&p->has_watermark, memory_order_relaxed)) {
        /* never back, never cleared (this thread wrote it) */
        uint64_t before = atomic_load_explicit(&p->watermark_usec, memory_order_relaxed);
        if (!has_wm || wm < before)
            wm = before;
        has_wm = 1;
    }
    atomic_store_explicit(&p->input_bytes, bytes, memory_order_relaxed);
    atomic_store_explicit(&p->input_bytes_total, total_known ? total : 0, memory_order_relaxed);
    atomic_store_explicit(&p->records_read, recs, memory_order_relaxed);
    atomic_store_explicit(&p->rows_out, out, memory_order_relaxed);
    atomic_store_explicit(&p->late_dropped, late, memory_order_relaxed);
    atomic_store_explicit(&p->skew_dropped, skew, memory_order_relaxed);
    atomic_store_explicit(&p->malformed, bad, memory_order_relaxed);
    if (has_wm) {
        atomic_store_explicit(&p->watermark_usec, wm, memory_order_relaxed);
        /* a release: whoever sees it set sees a watermark stored with it */
        atomic_store_explicit(&p->has_watermark, 1u, memory_order_release);
    }
    atomic_store_explicit(&p->publications,
                          atomic_load_explicit(&p->publications, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    atomic_store_explicit(&p->state, done ? GSQLC_PROGRESS_DONE : GSQLC_PROGRESS_RUNNING,
                          memory_order_release);
}

GSQ_EXPORT int gsqlc_progress(gsq_run *r, gsqlc_progress_snapshot *out)
{
    const gsq_progress_pub *p;
    if (!r || !out)
        return -1;
    p = &r->progress;
    out->state = atomic_load_explicit(&p->state, memory_order_acquire);
    out->has_watermark = atomic_load_explicit(&p->has_watermark, memory_order_acquire);
    out->publications = atomic_load_explicit(&p->publications, memory_order_relaxed);
    out->input_bytes = atomic_load_explicit(&p->input_bytes, memory_order_relaxed);
    out->input_bytes_total = atomic_load_explicit(&p->input_bytes_total, memory_order_relaxed);
    out->records_read = atomic_load_explicit(&p->records_read, memory_order_relaxed);
    out->rows_out = atomic_load_explicit(&p->rows_out, memory_order_relaxed);
    out->late_dropped = atomic_load_explicit(&p->late_dropped, memory_order_relaxed);
    out->skew_dropped = atomic_load_explicit(&p->skew_dropped, memory_order_relaxed);
    out->malformed = atomic_load_explicit(&p->malformed, memory_order_relaxed);
    out->watermark_sec =
        out->has_watermark
            ? (double)atomic_load_explicit(&p->watermark_usec, memory_order_relaxed) / 1e6
            : 0.0;
    return 0;
}
