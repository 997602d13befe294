/*
 * report.c -- end-of-run statistics (JSON) and the human report (stderr
 * text, every line starting with "gsqlc: "; empty when there is nothing to
 * say).  Both are built once at the end of gsqlc_run, before the nodes and
 * sources are torn down, and cached in the run.
 */
#include <string.h>

#include "format.h"
#include "gsq_source_ops.h"

static const char *const counter_key[GSQ_CNT__COUNT] = {
    "late_dropped",
    "lfta_ejections",
    "field_unavailable",
    "skew_dropped",
    "late_dropped_rows",
    "late_dropped_rows_unknown",
};

static void kv_u64(gsq_buf *b, const char *key, uint64_t v, int comma)
{
    gsq_buf_printf(b, "%s\"%s\":%llu", comma ? "," : "", key, (unsigned long long)v);
}

static void kv_str(gsq_buf *b, const char *key, const char *v, int comma)
{
    gsq_buf_printf(b, "%s\"%s\":", comma ? "," : "", key);
    if (v)
        gsq_buf_json_str(b, v, strlen(v));
    else
        gsq_buf_adds(b, "null");
}

static void kv_pos(gsq_buf *b, const char *key, uint32_t pos)
{
    if (pos)
        gsq_buf_printf(b, ",\"%s\":%u", key, (unsigned)pos);
    else
        gsq_buf_printf(b, ",\"%s\":null", key);
}

/* A source's record timestamps (source_time.c): whether it has them, its
 * CSV time and arrival columns and their unit, and the time-aligned
 * replay's hold-backs. */
static void source_time_stats(gsq_buf *b, const gsq_source *s)
{
    int csv_cols = s->time_pos || s->arrival_pos;
    gsq_buf_printf(b, ",\"timestamps\":%s", s->has_ts ? "true" : "false");
    kv_pos(b, "time_column", s->time_pos);
    kv_str(b, "time_type", s->time_pos ? gsq_type_name(s->time_type) : NULL, 1);
    kv_str(b, "time_lfta", s->time_lfta ? s->time_lfta->name : NULL, 1);
    kv_pos(b, "arrival_column", s->arrival_pos);
    kv_str(b, "time_unit", csv_cols ? gsq_time_unit_name(s->unit_ns) : NULL, 1);
    kv_u64(b, "time_unreadable", s->time_unreadable, 1);
    /* the rule it is read by: a recording replayed in time beside others
     * (aligned), a recording read alone, or a live feed */
    gsq_buf_printf(b, ",\"recording\":%s", s->recording ? "true" : "false");
    kv_str(b, "read", s->aligned ? "in time" : s->recording ? "as recorded" : "live", 1);
    gsq_buf_printf(b, ",\"aligned\":%s", s->aligned ? "true" : "false");
    kv_u64(b, "held_back", s->held_back, 1);
}

/* "capture_workers": the threads reading fanout members (run/workers.c),
 * and why there are none when members were read by the run loop. */
static void capture_workers(const gsq_run *r, gsq_buf *b)
{
    uint32_t i, members = 0, threaded = 0;
    for (i = 0; i < r->n_sources; i++) {
        members += r->sources[i].fanout != 0;
        threaded += r->sources[i].threaded;
    }
    if (!members)
        return;
    gsq_buf_printf(b, ",\"capture_workers\":{\"fanout_members\":%u,\"threads\":%u,\"why_not\":",
                   members, threaded);
    if (r->workers_why_not)
        gsq_buf_json_str(b, r->workers_why_not, strlen(r->workers_why_not));
    else
        gsq_buf_adds(b, "null");
    gsq_buf_addc(b, '}');
}

static const char *clock_name(const gsq_run *r)
{
    return r->clock_mode == GSQ_CLOCK_DATA ? "data"
           : r->clock_mode == GSQ_CLOCK_FIXED ? "fixed"
           : r->clock_mode == GSQ_CLOCK_AUTO  ? "auto" /* never set up */
                                              : "wall";
}

void gsq_build_stats(gsq_run *r)
{
    gsq_buf *b = &r->stats;
    uint32_t i, c;
    uint64_t written = 0;

    gsq_buf_reset(b);
    gsq_buf_printf(b, "{\"ok\":%s,\"interrupted\":%s,\"output_closed\":%s",
                   r->started && !r->failed ? "true" : "false",
                   r->interrupted ? "true" : "false", r->output_closed ? "true" : "false");
    kv_str(b, "clock", clock_name(r), 1);
    kv_str(b, "clock_chosen", r->clock_auto ? (r->clock_mode == GSQ_CLOCK_DATA
                                                    ? "auto: every source is a recording"
                                                    : "auto: a live source, or none with "
                                                      "timestamps")
                                             : "given", 1);
    gsq_tg_stats_run(r, b);
    gsq_buf_addc(b, ',');
    gsq_params_stats(r, b);
    capture_workers(r, b);

    gsq_buf_adds(b, ",\"sources\":[");
    for (i = 0; i < r->n_sources; i++) {
        const gsq_source *s = &r->sources[i];
        gsq_buf_adds(b, i ? ",{" : "{");
        kv_str(b, "iface", s->iface, 0);
        kv_str(b, "uri", s->uri, 1);
        kv_str(b, "kind", s->ops->name, 1);
        kv_u64(b, "records_read", s->records_read, 1);
        kv_u64(b, s->ops->records_key, s->records_read, 1);
        kv_u64(b, "rows_rejected", s->rows_rejected, 1);
        kv_u64(b, "values_coerced", s->values_coerced, 1);
        kv_u64(b, "bytes_read", s->bytes_read, 1);
        {
            uint64_t pos, total;
            gsq_source_input_bytes(s, &pos, &total);
            kv_u64(b, "input_bytes", pos, 1);
            if (total)
                kv_u64(b, "input_bytes_total", total, 1);
            else
                gsq_buf_adds(b, ",\"input_bytes_total\":null");
        }
        gsq_buf_printf(b, ",\"truncated\":%s", s->truncated ? "true" : "false");
        kv_str(b, "failure", s->failure, 1);
        gsq_buf_printf(b, ",\"columnar\":%s", s->columnar ? "true" : "false");
        gsq_buf_printf(b, ",\"prefilter\":%s", s->pf ? "true" : "false");
        kv_u64(b, "prefilter_skipped", s->pf_skipped, 1);
        kv_u64(b, "ring_high_water_bytes", s->ring.high_water, 1);
        source_time_stats(b, s);
        if (s->ops->stats)
            s->ops->stats(s, b);
        gsq_tg_stats_source(r, s, b);
        gsq_buf_addc(b, '}');
    }

    gsq_buf_adds(b, "],\"streams\":[");
    for (i = 0; i < r->qs->n_streams; i++) {
        const gsq_stream_rt *st = r->streams ? &r->streams[i] : NULL;
        gsq_buf_adds(b, i ? ",{" : "{");
        kv_str(b, "name", r->qs->streams[i].name, 0);
        kv_u64(b, "tuples", st ? st->n_data : 0, 1);
        kv_u64(b, "heartbeats", st ? st->n_heartbeat : 0, 1);
        kv_u64(b, "joint_heartbeats", st ? st->n_joint_heartbeat : 0, 1);
        kv_u64(b, "eof", st ? st->n_eof : 0, 1);
        gsq_buf_addc(b, '}');
    }

    gsq_buf_adds(b, "],\"nodes\":[");
    for (i = 0; r->nodes && i < r->n_nodes; i++) {
        const gsq_node *n = &r->nodes[i];
        gsq_buf_adds(b, i ? ",{" : "{");
        kv_str(b, "name", n->name, 0);
        kv_str(b, "kind", n->lfta ? "lfta" : "hfta", 1);
        kv_str(b, "output", n->out_name ? n->out_name : r->qs->streams[n->out_stream].name, 1);
        gsq_buf_printf(b, ",\"running\":%s", n->needed ? "true" : "false");
        for (c = 0; c < GSQ_CNT__COUNT; c++)
            kv_u64(b, counter_key[c], n->counters[c], 1);
        kv_u64(b, "peak_held_tuples", n->peaks[GSQ_PEAK_HELD_TUPLES], 1);
        kv_u64(b, "peak_held_bytes", n->peaks[GSQ_PEAK_HELD_BYTES], 1);
        if (n->lfta) {
            kv_u64(b, "queue_high_water_entries", n->queue.hw_entries, 1);
            kv_u64(b, "queue_high_water_bytes", n->queue.hw_bytes, 1);
            gsq_buf_printf(b, ",\"in_kernel\":%s", n->in_kernel ? "true" : "false");
            if (n->lfta->xdp) /* compiled for the kernel: why it runs in user space */
                kv_str(b, "xdp_why_not", n->in_kernel ? NULL : n->xdp_why_not, 1);
        }
        gsq_buf_addc(b, '}');
    }

    gsq_buf_adds(b, "],\"sinks\":[");
    for (i = 0; i < r->n_sinks; i++) {
        const gsq_sink *k = r->sinks[i];
        gsq_buf_adds(b, i ? ",{" : "{");
        kv_str(b, "query", k->query, 0);
        kv_str(b, "format", k->format == GSQ_FMT_PIPE ? "pipe"
                            : k->format == GSQ_FMT_CSV ? "csv"
                            : k->format == GSQ_FMT_ARROW ? "arrow"
                            : k->format == GSQ_FMT_GDAT ? "gdat" : "jsonl", 1);
        kv_str(b, "path", k->path, 1);
        kv_u64(b, "tuples", k->tuples, 1);
        kv_u64(b, "bytes", k->bytes, 1);
        if (k->format == GSQ_FMT_ARROW) {
            kv_u64(b, "batches", k->batches, 1);
            kv_u64(b, "rows_packed", k->rows_packed, 1);
        }
        if (k->heartbeats)
            kv_u64(b, "heartbeat_rows", k->heartbeat_rows, 1);
        gsq_buf_addc(b, '}');
        written += k->tuples;
    }
    gsq_buf_adds(b, "],\"injected\":[");
    for (i = 0; i < r->n_injects; i++) {
        const gsq_inject *in = &r->injects[i];
        gsq_buf_adds(b, i ? ",{" : "{");
        kv_str(b, "stream", r->qs->streams[in->stream].name, 0);
        gsq_buf_printf(b, ",\"read\":%s", in->active ? "true" : "false");
        kv_u64(b, "rows_read", in->rows_read, 1);
        kv_u64(b, "rows_rejected", in->rows_rejected, 1);
        gsq_buf_addc(b, '}');
    }
    gsq_buf_adds(b, "]");
    kv_u64(b, "tuples_written", written, 1);
    if (r->data_seen) {
        kv_u64(b, "data_clock_usec", r->data_usec, 1);
        kv_u64(b, "data_clock_first_usec", r->data_first_usec, 1);
    } else {
        gsq_buf_adds(b, ",\"data_clock_usec\":null,\"data_clock_first_usec\":null");
    }
    kv_u64(b, "aligned_sources", (uint64_t)r->aligned, 1);
    kv_u64(b, "heartbeat_interval_usec", r->hb_interval_usec, 1);
    kv_u64(b, "heartbeat_ticks", r->hb_ticks, 1);
    kv_u64(b, "heartbeat_ticks_skipped", r->hb_ticks_skipped, 1);
    kv_u64(b, "stall_intervals", r->stall_intervals, 1);
    gsq_buf_adds(b, ",\"events\":[");
    for (i = 0; i < r->n_events; i++) {
        const gsq_event *e = &r->events[i];
        gsq_buf_adds(b, i ? ",{" : "{");
        kv_str(b, "event", e->kind == GSQ_EV_STALLED ? "stalled" : "recovered", 0);
        if (e->source) {
            kv_str(b, "source", e->source->iface, 1);
            kv_str(b, "uri", e->source->uri, 1);
        } else {
            kv_str(b, "node", e->node->name, 1);
        }
        kv_u64(b, "clock_usec", e->clock_usec, 1);
        if (e->kind == GSQ_EV_STALLED)
            kv_u64(b, "intervals", e->intervals, 1);
        gsq_buf_addc(b, '}');
    }
    gsq_buf_adds(b, "]");
    kv_u64(b, "events_dropped", r->events_dropped, 1);
    kv_u64(b, "traces_written", r->traces_written, 1);
    gsq_buf_adds(b, "}");
}

/* "gsqlc: source b (pcap:/x) stalled: ..." */
static void report_event(gsq_buf *b, const gsq_event *e)
{
    unsigned long long sec = e->clock_usec / 1000000u, usec = e->clock_usec % 1000000u;
    if (e->source)
        gsq_buf_printf(b, "gsqlc: source %s (%s) ", e->source->iface, e->source->uri);
    else
        gsq_buf_printf(b, "gsqlc: node %s ", e->node->name);
    if (e->kind == GSQ_EV_STALLED)
        gsq_buf_printf(b, "stalled: no %s for %llu heartbeat intervals (clock %llu.%06llu)\n",
                       e->source ? "records" : "tuples", (unsigned long long)e->intervals, sec,
                       usec);
    else
        gsq_buf_printf(b, "recovered: %s again (clock %llu.%06llu)\n",
                       e->source ? "records arrive" : "tuples flow", sec, usec);
}

/* The tuples a node dropped as late, in rows (gsq_count_late): when each
 * was one row, as tuples; else the partial aggregates and the rows they
 * held, and those of a query that counts no rows apart. */
static void report_late(gsq_buf *b, const gsq_node *n)
{
    const unsigned long long tuples = n->counters[GSQ_CNT_LATE_DROPPED],
                             rows = n->counters[GSQ_CNT_LATE_DROPPED_ROWS],
                             unknown = n->counters[GSQ_CNT_LATE_DROPPED_UNKNOWN],
                             known = tuples > unknown ? tuples - unknown : 0;
    const char *what = "arrived later than the closed epoch allows and were dropped";
    if (unknown == 0 && rows == tuples)
        gsq_buf_printf(b, "gsqlc: %s: %llu tuples %s\n", n->name, tuples, what);
    else if (known == 0)
        gsq_buf_printf(b,
                       "gsqlc: %s: %llu partial aggregates of a query that counts no rows %s "
                       "(the rows they held are unknown: add count(*) to the query to count "
                       "them)\n",
                       n->name, unknown, what);
    else if (unknown == 0)
        gsq_buf_printf(b, "gsqlc: %s: %llu partial aggregates holding %llu rows %s\n", n->name,
                       known, rows, what);
    else
        gsq_buf_printf(b,
                       "gsqlc: %s: %llu partial aggregates holding %llu rows %s (and %llu more "
                       "partial aggregates of a query that counts no rows)\n",
                       n->name, known, rows, what, unknown);
}

void gsq_build_report(gsq_run *r)
{
    gsq_buf *b = &r->report;
    uint32_t i, j;
    uint64_t extra;

    gsq_buf_reset(b);
    for (i = 0; i < r->n_sources; i++) {
        const gsq_source *s = &r->sources[i];
        s->ops->report(s, b);
        if (s->time_unreadable)
            gsq_buf_printf(b,
                           "gsqlc: warning: source %s (%s): %llu records had an unreadable time "
                           "(negative, empty or not a number in column %u%s); they were "
                           "processed without advancing its time\n",
                           s->iface, s->uri, (unsigned long long)s->time_unreadable,
                           (unsigned)(s->time_pos ? s->time_pos : s->arrival_pos),
                           s->time_pos && s->arrival_pos ? " or the arrival column" : "");
    }
    for (i = 0; i < r->n_injects; i++)
        gsq_inject_report(&r->injects[i], b);
    if (r->sources) {
        /* a binding no query reads (not one whose LFTAs no sink needs) */
        for (i = 0; i < r->n_binds; i++) {
            int used = 0;
            for (j = 0; j < r->n_sources; j++)
                used |= r->sources[j].iface == r->binds[i].iface;
            used |= gsq_iface_read(r, r->binds[i].iface);
            if (!used)
                gsq_buf_printf(b,
                               "gsqlc: warning: interface '%s' is bound to %s but no query reads "
                               "it\n",
                               r->binds[i].iface, r->binds[i].uri);
        }
    }
    if (r->sources)
        gsq_tg_report(r, b);
    gsq_params_report(r, b);
    for (i = 0; r->nodes && i < r->n_nodes; i++) {
        const gsq_node *n = &r->nodes[i];
        if (n->counters[GSQ_CNT_LATE_DROPPED])
            report_late(b, n);
        if (n->counters[GSQ_CNT_SKEW_DROPPED])
            gsq_buf_printf(b,
                           "gsqlc: %s: %llu tuples arrived later than the time its heartbeats "
                           "had already promised (max_skew, out_of_order) and were discarded\n",
                           n->name, (unsigned long long)n->counters[GSQ_CNT_SKEW_DROPPED]);
    }
    for (i = 0; r->nodes && i < r->n_skews; i++) {
        int used = 0;
        used |= gsq_iface_read(r, r->skews[i].iface);
        if (!used)
            gsq_buf_printf(b,
                           "gsqlc: warning: max_skew is set for interface '%s', which no query "
                           "reads\n",
                           r->skews[i].iface);
    }
    for (i = 0; r->nodes && i < r->n_ooos; i++)
        if (!gsq_iface_read(r, r->ooos[i].iface))
            gsq_buf_printf(b,
                           "gsqlc: warning: out_of_order is set for interface '%s', which no "
                           "query reads\n",
                           r->ooos[i].iface);
    if (r->report_losses_only)
        return; /* what follows informs; nothing was lost */
    for (i = 0; i < r->n_events && i < GSQ_REPORTED_EVENTS; i++)
        report_event(b, &r->events[i]);
    extra = (r->n_events > GSQ_REPORTED_EVENTS ? r->n_events - GSQ_REPORTED_EVENTS : 0) +
            r->events_dropped;
    if (extra)
        gsq_buf_printf(b, "gsqlc: %llu more stall events (the stats list the first %u)\n",
                       (unsigned long long)extra, (unsigned)GSQ_MAX_EVENTS);
    if (r->interrupted)
        gsq_buf_adds(b, "gsqlc: interrupted; the input read so far was processed and flushed\n");
}
