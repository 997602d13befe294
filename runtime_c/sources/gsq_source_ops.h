/*
 * gsq_source_ops.h -- one operations table per source kind.
 *
 * Every interface the run reads is a gsq_source (gsq_internal.h) whose `ops`
 * says what kind it is; the run loop, the set-up and the reports reach a
 * source only through this table, never by testing its kind.  Each kind
 * implements the table in its own file:
 *
 *   gsq_csv_ops        csv:PATH, csv:- (stdin)   sources/csv_source.c
 *   gsq_csvtcp_ops     csvtcp:HOST:PORT          sources/csv_source.c
 *   gsq_gdat_ops       gdat:PATH (Tigon's GDAT)  sources/gdat_source.c
 *   gsq_pcap_ops       pcap:PATH                 sources/pcap_source.c
 *   gsq_pcap_live_ops  pcap-live:IFACE           sources/pcap_source.c (afpacket.c)
 *   gsq_arrow_ops      gsqlc_bind_arrow          sources/arrow_source.c
 *   gsq_xdp_ops        (set-up: an LFTA run in   sources/xdp_source.c
 *                      a pcap-live: interface's
 *                      XDP hook; Linux)
 *
 * Record timestamps (sources/source_time.c): whether a source's records
 * carry them is decided per source at set-up, before open (s->has_ts:
 * always for a kind with `timestamps`; for CSV records when a time or
 * arrival column is known).  A reader of a source with has_ts stamps every
 * record it delivers (gsq_record.h: app_usec, arrival_usec, ts_unreadable;
 * CSV records through gsq_source_stamp).
 *
 * (Streams fed from Arrow, gsqlc_bind_stream_arrow, are no interface: they
 * feed a stream directly, sources/arrow_inject.c.)
 *
 * Contract, in the order the run calls it:
 *   check_lfta  once per running LFTA bound to the source: 0 when the LFTA
 *               can read its records, else -1 with the run failed (reason).
 *   open        0, or -1 with the run failed.  s->ring is initialised; the
 *               reader keeps its state in s->impl (owned: close frees it).
 *   streaming   (NULL: never) nonzero when input arrives over time (a pipe,
 *               a live interface): the sinks are flushed after every round.
 *   peek        (NULL: the source cannot be replayed time-aligned) the
 *               arrival instant of the next record (read ahead and held
 *               until a read_batch delivers it): 1 and *ts_usec, 0 at the
 *               end (s->at_eof set), -1 on a fatal error.  Only called for
 *               sources with has_ts that are not streaming.
 *   read_batch  fill s->ring with up to a batch of records (none is fine:
 *               an idle input returns at once when the source has a
 *               wait_fd, else within gsq_hb_wait_ms), set
 *               s->at_eof at the end; -1 on a fatal error (run failed).
 *               An idle wait ends early, as at the end of input, once
 *               gsq_run_cancelled(r).  Records that arrived after
 *               s->limit_usec (arrival_usec, not ts_unreadable) are held
 *               back, without being read again, for a later round
 *               (time-aligned replay), and counted in s->held_back.
 *   wait_fd     (NULL: never) the descriptor that becomes readable when an
 *               idle source has input again, or -1.  A source with one does
 *               not wait in read_batch: when a round read no record from
 *               any source, the run loop polls every idle source's
 *               descriptor together for at most gsq_hb_wait_ms, so one idle
 *               input never holds up another that is busy.
 *   read_cols   (NULL: the kind reads no columns) read_batch for a source
 *               set to columnar reading (s->columnar): fill s->chunk with
 *               the next chunk of up to chunk.cap rows (none is fine) and
 *               stamp them, under read_batch's other rules; its records
 *               are never in the ring.
 *   close       release s->impl and what the source owns (s->arrow); safe
 *               after a failed or missing open, and twice.
 *   report      append the source's "gsqlc: " report lines; called at the
 *               end of the run before close (also after a failed open).
 *   stats       (NULL: none) append the kind's own members to the source's
 *               stats object, each as `,"key":value`; called when report
 *               is (also after a failed open: impl may be NULL).
 *   progress    (NULL: *pos = s->bytes_read, *total = 0) where the source
 *               stands in its input, in bytes: *pos consumed so far, *total
 *               all there is (0: not known, as for a pipe); never
 *               decreasing, *pos <= *total when *total != 0.  Called on the
 *               run's thread at each publication and for the stats,
 *               with impl set (run/progress.c): it must be cheap.
 */
#ifndef GSQ_SOURCE_OPS_H
#define GSQ_SOURCE_OPS_H

#include "gsq_internal.h"

struct gsq_source_ops {
    const char *name;        /* the stats' "kind" */
    const char *scheme;      /* URI prefix ("csv:"); NULL: not bound by URI */
    const char *records_key; /* the stats' name of records_read */
    int lfta_kind;           /* enum gsq_source_kind of the records it delivers */
    int timestamps;          /* records always carry timestamps (packets) */
    int arrival;             /* can read an arrival column (arrival:NAME) */
    int (*check_lfta)(gsq_run *r, const gsq_source *s, const gsq_lfta_def *d);
    int (*open)(gsq_run *r, gsq_source *s);
    int (*streaming)(const gsq_source *s);
    int (*peek)(gsq_run *r, gsq_source *s, uint64_t *ts_usec);
    int (*read_batch)(gsq_run *r, gsq_source *s);
    int (*read_cols)(gsq_run *r, gsq_source *s);
    int (*wait_fd)(const gsq_source *s);
    void (*close)(gsq_source *s);
    void (*report)(const gsq_source *s, gsq_buf *out);
    void (*stats)(const gsq_source *s, gsq_buf *out);
    void (*progress)(const gsq_source *s, uint64_t *pos, uint64_t *total);
};

extern const gsq_source_ops gsq_csv_ops;
extern const gsq_source_ops gsq_csvtcp_ops;
extern const gsq_source_ops gsq_gdat_ops;
extern const gsq_source_ops gsq_pcap_ops;
extern const gsq_source_ops gsq_pcap_live_ops;
extern const gsq_source_ops gsq_arrow_ops;
#ifdef __linux__
extern const gsq_source_ops gsq_xdp_ops;
#endif

/* The kind a source URI names, and the part after its scheme in *path;
 * NULL when no kind has that scheme (or the rest is empty). */
const gsq_source_ops *gsq_source_ops_for_uri(const char *uri, const char **path);

/* check_lfta of the kinds whose records are of kind ops->lfta_kind only:
 * fails the run naming both kinds when the LFTA reads the other. */
int gsq_source_check_lfta(gsq_run *r, const gsq_source *s, const gsq_lfta_def *d);

/* The PROTOCOL field an LFTA of s reads at CSV position pos, one of type
 * `type` preferred, else of any type; the first in query-set order, *lfta
 * its LFTA.  NULL: no LFTA names a field there.  (Arrow and GDAT sources
 * match their columns and fields to it by name.) */
const gsq_csv_field *gsq_source_field_at(const gsq_source *s, uint32_t pos, int type,
                                         const gsq_lfta_def **lfta);

#endif /* GSQ_SOURCE_OPS_H */
