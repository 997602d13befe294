/*
 * gsq_internal.h -- the runtime's own structures (C only; generated code
 * never includes this).
 *
 * Ownership tree: a gsq_run owns its options, params, bindings, sinks and,
 * during/after gsqlc_run, its nodes, sources and per-stream subscriber
 * tables.  Nothing is global: the library keeps no process-wide state and
 * installs no signal handler, so runs on different threads are independent
 * (the stand-alone runner, tools/, turns signals into gsqlc_cancel).
 */
#ifndef GSQ_INTERNAL_H
#define GSQ_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "gsq_record.h"
#include "ring_buffer.h"
#include "strbuf.h"
#include "tuple_queue.h"

#define GSQ_MAX_LINE (1u << 20)     /* longer CSV records are malformed */
#define GSQ_MAX_DESCRIBED 10        /* malformed rows described per source */
#define GSQ_PCAP_MAX_CAPLEN 262144u /* libpcap's largest accepted capture */
#define GSQ_RING_BYTES (8u << 20)   /* ring capacity per source */

#define GSQ_ARROW_BATCH_ROWS 65536u /* default rows per Arrow sink batch */

/* GSQ_CLOCK_AUTO (the default) is decided at set-up (setup.c, decide_clock):
 * the data clock when every input is a recording, else the wall clock. */
enum gsq_clock_mode { GSQ_CLOCK_WALL, GSQ_CLOCK_DATA, GSQ_CLOCK_FIXED, GSQ_CLOCK_AUTO };
enum gsq_sink_format { GSQ_FMT_PIPE, GSQ_FMT_CSV, GSQ_FMT_JSONL, GSQ_FMT_ARROW, GSQ_FMT_GDAT };

struct ArrowArrayStream;
typedef struct gsq_arrow_sink gsq_arrow_sink; /* arrow_sink.c */

typedef struct gsq_source gsq_source;
typedef struct gsq_worker gsq_worker; /* run/workers.c */
typedef struct gsq_source_ops gsq_source_ops; /* sources/gsq_source_ops.h */
typedef struct gsq_sink gsq_sink;

/* One LFTA or HFTA instance.
 * Layout of run->nodes (sets.c): the LFTA instances [0, n_lfta_nodes) in
 * queryset order (an LFTA over an interface set of k >= 2 members is k
 * consecutive instances), then the set merges [n_lfta_nodes, hfta_base),
 * then the HFTAs (HFTA i of the query set is nodes[hfta_base + i]).
 * def_index is the LFTA's (instances, set merges) or HFTA's index in the
 * query set.  An LFTA instance reads interface `iface` (its member, or the
 * LFTA's interface); one over a set of k >= 2 has `merge` set: its queue is
 * drained into input merge_input of that node instead of its stream.  A set
 * merge has hfta = its LFTA's set_merge, n_inputs = k, out_stream the
 * LFTA's.  own_name, when set, is `name` (owned).
 * Invariants: exactly one of lfta/hfta is set; a node that is not `needed`
 * (plan.c) is never created, fed or subscribed (state NULL, live 0); state is the LFTA's zeroed
 * state (state_size bytes, owned) or the HFTA's operator (owned, released
 * with hfta->destroy); queue is used by LFTAs only; pack is the HFTA's
 * scratch for packing tuples before synchronous dispatch. */
struct gsq_node {
    gsq_run *run;
    const gsq_lfta_def *lfta;
    const gsq_hfta_def *hfta;
    const char *name;
    char *own_name;
    const char *out_name;         /* stats' "output": NULL is the stream's */
    const char *iface;            /* LFTA: the interface it reads */
    uint32_t def_index;
    int n_inputs;                 /* HFTA: inputs */
    gsq_node *merge;              /* LFTA over a set: the set merge it feeds */
    int merge_input;
    uint8_t partitioned;          /* LFTA: counts only its partition's groups
                                   * (it asked gsq_partition) */
    int out_stream;
    void *state;
    int needed;                   /* some sink depends on it: it runs */
    int live;                     /* init/create succeeded: destroy at end */
    int ended;                    /* LFTA: finished and sent GSQ_EOF, its
                                   * source having ended (loop.c, end_source) */
    int eof_inputs;               /* HFTA: inputs that delivered GSQ_EOF */
    gsq_source *source;           /* LFTA: the source it reads */
    gsq_tuple_queue queue;        /* LFTA: its output stream's queue */
    /* LFTA whose stream has no strings and one subscriber, an Arrow sink
     * without heartbeat rows: its data tuples are dispatched as they are
     * emitted (counted in queue.pushed), not queued; heartbeats and EOF
     * are queued as ever (the sink ignores them) */
    int direct;
    /* HFTA whose stream has no strings and one subscriber, an Arrow sink
     * without heartbeat rows: its data tuples are gathered in `stage`
     * (stage_n of GSQ_STAGE_TUPLES) and written to the sink as a run --
     * when it is full, before the node emits anything else, and when the
     * call into the node returns (gsq_deliver, gsq_dispatch_run) -- so the
     * sink sees the same tuples in the same order, a run at a time */
    int staged;
    uint8_t *stage;
    uint32_t stage_n;
    uint8_t *pack;                /* HFTA: packing scratch (8-aligned) */
    size_t pack_cap;
    uint64_t counters[GSQ_CNT__COUNT];
    uint64_t peaks[GSQ_PEAK__COUNT];    /* maxima given to gsq_peak */
    /* LFTA, heartbeats (heartbeat.c) */
    int has_skew;                 /* max_skew is set for its interface */
    uint64_t skew_usec;
    int has_ooo;                  /* out_of_order is set for its interface */
    uint64_t ooo_usec;
    uint64_t unit_ns;             /* time_unit of its interface (ns per unit) */
    uint64_t seen_pushed;         /* queue.pushed when last observed */
    uint64_t last_emit_usec;      /* clock when an emission was observed */
    int stalled;
    uint32_t trace_cursor;        /* run->traces: first not yet delivered */
    /* LFTA compiled for the kernel too (lfta->xdp): in_kernel when it runs
     * in the XDP hook of its live interface, its source an XDP source of
     * its own (sources/xdp_source.c) -- its heartbeats then come from that
     * source's drains only, never from the run's ticks (a tick would
     * promise progress the kernel has not handed over yet); otherwise
     * xdp_why_not (owned) says why it runs in user space */
    int in_kernel;
    char *xdp_why_not;
};

/* A subscriber of a stream: an HFTA input or a sink. */
typedef struct gsq_sub {
    gsq_node *hfta;   /* NULL for a sink */
    int input;
    gsq_sink *sink;
} gsq_sub;

/* Run-time state of one stream.  Invariant: subs[0..n_subs) are the HFTA
 * inputs reading it (in queryset order) then the sinks added for it. */
typedef struct gsq_stream_rt {
    gsq_sub *subs;
    uint32_t n_subs;
    uint64_t n_data, n_heartbeat, n_joint_heartbeat, n_eof;
} gsq_stream_rt;

/* An output sink: a buffered file descriptor, or (GSQ_FMT_ARROW) column
 * builders handed to a callback as record batches.
 * Invariants: a file sink has fd >= 0 from gsq_sink_open until
 * gsq_sink_close (arrow NULL); an Arrow sink has fd == -1 and arrow set
 * between the same calls (arrow_sink.c; cb, cb_ctx, batch_rows given).
 * heartbeats is set (at open) only for an Arrow sink of a run with option
 * arrow_heartbeats: only such a sink is handed GSQ_HEARTBEAT tuples (rows
 * with __heartbeat true); every other sink sees data tuples only.  tuples
 * counts data rows, heartbeat_rows the heartbeat rows. */
struct gsq_sink {
    char *query;
    int format;           /* enum gsq_sink_format */
    char *path;           /* NULL: stdout */
    int stream;
    int fd;               /* -1 until opened */
    int own_fd;
    int failed;
    gsq_buf out;
    uint64_t tuples;
    uint64_t bytes;
    /* GSQ_FMT_PIPE: what a row of pipe_desc takes besides its strings'
     * bytes (the widest text of each other column, separators, newline),
     * and whether it has strings; set at the first row of that stream */
    const gsq_stream_desc *pipe_desc;
    size_t pipe_fixed;
    int pipe_strings;
    /* GSQ_FMT_ARROW */
    int heartbeats;       /* heartbeat tuples are rows (__heartbeat column) */
    uint64_t heartbeat_rows;
    gsqlc_arrow_cb cb;
    void *cb_ctx;
    uint32_t batch_rows;
    uint64_t batches;     /* record batches delivered */
    uint64_t rows_packed; /* rows packed by a CPU kernel (gsq_emit_masked) */
    gsq_arrow_sink *arrow;
};

/* An interface bound with gsqlc_bind_source, or with gsqlc_bind_arrow
 * (then uri is "arrow" and arrow is the caller's stream struct, whose
 * contents the run owns: released, and arrow set to NULL, by the source's
 * close or by gsqlc_destroy). */
typedef struct gsq_binding {
    char *iface;
    char *uri;
    struct ArrowArrayStream *arrow;
} gsq_binding;

/* A stream fed from Arrow (gsqlc_bind_stream_arrow).  Invariants: stream
 * is a valid stream index, distinct among the run's injections; arrow is
 * the caller's struct (contents owned, released like a binding's); impl is
 * arrow_inject.c's reader state while the run reads it; at_eof once the
 * GSQ_EOF was dispatched. */
typedef struct gsq_inject {
    char *name;
    int stream;
    struct ArrowArrayStream *arrow;
    void *impl;
    int active;               /* some running node or sink reads the stream */
    int at_eof;
    uint64_t rows_read;
    uint64_t rows_rejected;
} gsq_inject;

typedef struct gsq_param_kv {
    char *name;
    char *value;
} gsq_param_kv;

/* A parameter change asked for while the run goes on (gsqlc_change_param),
 * checked when asked and waiting for the next round boundary; owned by the
 * run's queue until gsq_params_apply takes it. */
typedef struct gsq_param_change {
    char *name;
    char *value;
    struct gsq_param_change *next;
} gsq_param_change;

/* A change applied, and its instant: the round boundary after `round`
 * rounds, `records` records read by then, the largest timestamp read by
 * then (data_usec, if data_seen) and the wall clock.  Owns its strings:
 * old_value is the value the nodes read before (kept for the run's life:
 * a node may still hold a string parameter's bytes). */
typedef struct gsq_param_event {
    char *name;
    char *old_value;
    char *value;
    uint64_t round;
    uint64_t records;
    int data_seen;
    uint64_t data_usec;
    uint64_t wall_usec;
} gsq_param_event;

/* One opened source (one per bound interface that some LFTA reads).
 * Invariants: ops is its kind, set with path before anything else, and the
 * only way the run reaches the reader (gsq_source_ops.h); lftas[0..n_lftas)
 * are the LFTAs bound to iface, in queryset order; ring holds the current
 * batch; impl is the reader's state, owned; arrow (gsq_arrow_ops) is the
 * stream taken from the binding, contents owned: released by its close. */
/* A columnar chunk of a source's CSV records, read by the LFTAs'
 * accept_cols (core/chunk.c).  Invariants: n <= cap; one column per slot
 * of the source's value cache (n_slots): slot_cols[k] describes slot k's
 * values, kept at vals + k * cap (validities at valid + k * cap) unless
 * its raw points into the source's own data; when any_skipped, row_ok[i]
 * == 0 marks row i (< n) as not to be read (else every row is read);
 * app_usec, arrival_usec and ts_unreadable hold the first n rows' stamps
 * (when the source has_ts); clock_usec[i] the data clock after row i
 * (run/loop.c); lfta_cols[j] lists the columns LFTA
 * s->lftas[j] reads, in the order of its csv_fields (n_lftas lists).
 * Owns every buffer; the run's teardown frees it (gsq_chunk_free). */
typedef struct gsq_chunk {
    uint32_t n, cap, n_slots, n_lftas;
    uint8_t *row_ok;
    int any_skipped;
    uint64_t *app_usec;
    uint64_t *arrival_usec;
    uint8_t *ts_unreadable;
    uint64_t *clock_usec;     /* run_cols: the data clock after each row */
    int32_t clock_row;        /* -1: every kept row is stamped; else only rows
                               * 0 and clock_row (the last) are, the rows the
                               * data clock moves to when no LFTA reads it */
    gsq_csv_value *vals;
    uint8_t *valid;
    gsq_col *slot_cols;
    const gsq_col *const **lfta_cols;
} gsq_chunk;

struct gsq_source {
    const char *iface;    /* the binding's */
    const char *uri;      /* the binding's */
    const char *path;     /* after the scheme ("" for Arrow) */
    const gsq_source_ops *ops;
    struct ArrowArrayStream *arrow;
    gsq_node **lftas;
    uint32_t n_lftas;
    int clock_readers;    /* some LFTA of it reads the clock (!ignores_clock) */
    gsq_ring ring;
    /* the prefilter (run/loop.c, gsq_prefilter_def): NULL, or the one of
     * the interface of its first LFTA that has one (record batches only,
     * option prefilter); pf_node[b] is the LFTA of bit b bound here (NULL:
     * none), pf_always the LFTAs given every record (no bit here); the
     * buffers hold a batch's want bits, drop marks and class statistics
     * (ring.max_recs entries; classes_size bytes); pf_skipped counts the
     * (record, LFTA) pairs the prefilter kept from an LFTA. */
    const gsq_prefilter_def *pf;
    gsq_node *pf_node[64];
    gsq_node **pf_always;
    uint32_t n_pf_always;
    uint64_t *pf_want;
    uint8_t *pf_dropped;
    void *pf_classes;
    uint64_t pf_skipped;
    int at_eof;
    int ended;            /* at_eof seen by the run loop: its LFTAs ended */
    int drains_on_cancel; /* gsqlc_cancel does not end it at once: it reads
                           * what reached it before (a live ring: until the
                           * kernel has handed over its last block) and then
                           * sets at_eof itself */
    /* a PACKET_FANOUT member (pcap_source.c: fanout sockets in group
     * fanout_group share one interface's frames, by flow): read with its
     * LFTAs on a capture worker of its own (run/workers.c) when threaded
     * is set; its round's outcome then waits in round_rc and round_n (ran:
     * this round read it) for the run loop */
    uint32_t fanout;          /* members of its group (0: not a member) */
    uint16_t fanout_group;
    int threaded;             /* a capture worker reads it */
    int round_ran;
    int round_rc;
    uint32_t round_n;
    uint64_t records_read;    /* rows (csv, non-blank) or packets */
    uint64_t rows_rejected;
    uint64_t values_coerced;
    uint64_t bytes_read;
    int truncated;
    char *failure;        /* why the source ended in an error it could not
                           * read past (a live interface that went down),
                           * owned: its records until then were processed;
                           * the run fails once they are flushed */
    int input_done;       /* Arrow: an input record batch was wholly processed
                           * and the sinks not flushed since (the run loop
                           * flushes before the next one is awaited) */
    void *impl;
    /* record timestamps (source_time.c), decided at set-up before open:
     * has_ts when its records carry them (gsq_record.h): pcap always; a
     * source of CSV records when it has a time column (time_pos, from its
     * first running LFTA that declares one) or an arrival column
     * (arrival_pos, option arrival:NAME).  Both columns are in the value
     * cache (csv_layout.c) and read in unit_ns nanoseconds per unit. */
    int has_ts;
    uint32_t time_pos;        /* 0: none */
    int time_type;
    const gsq_node *time_lfta; /* the LFTA that declared time_pos */
    uint32_t arrival_pos;     /* 0: none (arrival = application time) */
    int arrival_type;
    int arrival_format;       /* enum gsq_time_format of its text (CSV) */
    const char *arrival_name; /* its field's name (the run's option), or NULL */
    uint64_t unit_ns;
    uint64_t last_app_usec;   /* of the last readable record (0: none yet) */
    uint64_t last_arrival_usec;
    uint64_t time_unreadable; /* records stamped ts_unreadable */
    /* replay in time (setup.c): a recording is input recorded before the
     * run (a file that is no pipe, an Arrow table bound with recording:NAME)
     * rather than a live feed; with two or more recordings with timestamps
     * and a peek, each is `aligned`: it reads only records that arrived
     * <= limit_usec this round (UINT64_MAX: no limit); held_back counts the
     * records held back for a later round */
    int recording;
    int aligned;
    uint64_t limit_usec;
    uint64_t held_back;
    /* stall detection (heartbeat.c) */
    uint64_t last_rec_usec;   /* clock when it last delivered records */
    int stalled;
    int no_records;           /* it never delivers records (an XDP source: its
                               * LFTA's output is its progress): no stall of
                               * its own */
    /* heartbeat generation (heartbeat_gen.c): its stream, NULL when the
     * generator is off or the source has no record timestamps */
    struct gsq_tg_stream *tg;
    /* columnar reading, decided at set-up before open: when option
     * columnar is not off, the source delivers CSV records and every LFTA
     * bound to it has accept_cols.  The kind's read_cols then fills
     * `chunk`, or (a kind without) read_batch fills the ring and the run
     * loop transposes it into `chunk` (initialised at the first records) */
    int columnar;
    gsq_chunk chunk;
    /* time progress for gsqlc_progress (run/progress.c): the latest
     * readable timestamp (app_usec) of the batches read, a running maximum
     * noted once per batch by the run loop (wm_seen: one was read) */
    int wm_seen;
    uint64_t wm_usec;
};

/* The counters gsqlc_progress reads (gsq_runtime.h says what each is):
 * written by the run's thread only (gsq_progress_publish, relaxed stores;
 * state last, with release), read by any thread (state with acquire, then
 * the rest relaxed). */
typedef struct gsq_progress_pub {
    _Atomic uint32_t state;
    _Atomic uint32_t has_watermark;
    _Atomic uint64_t publications;
    _Atomic uint64_t input_bytes;
    _Atomic uint64_t input_bytes_total;
    _Atomic uint64_t records_read;
    _Atomic uint64_t rows_out;
    _Atomic uint64_t late_dropped;
    _Atomic uint64_t skew_dropped;
    _Atomic uint64_t malformed;
    _Atomic uint64_t watermark_usec;
} gsq_progress_pub;

/* A stall event (Johnson et al. 2005, 6.1): a source that delivered no record, or an
 * LFTA that emitted no tuple, for stall_intervals heartbeat intervals, and
 * its recovery.  Exactly one of source/node is set; both point into the
 * run's arrays (valid until gsqlc_destroy). */
enum gsq_event_kind { GSQ_EV_STALLED, GSQ_EV_RECOVERED };
typedef struct gsq_event {
    int kind;
    const gsq_source *source;
    const gsq_node *node;
    uint64_t clock_usec;
    uint64_t intervals;       /* whole heartbeat intervals of silence */
} gsq_event;
#define GSQ_MAX_EVENTS 1000      /* kept per run; later ones are counted */
#define GSQ_REPORTED_EVENTS 20   /* described in the report */

/* One hop of a heartbeat trace: an HFTA received the heartbeat. */
typedef struct gsq_hop {
    uint32_t node;            /* index into run->nodes */
    int clock_known;
    uint64_t arrived_usec;    /* CLOCK_MONOTONIC */
    uint64_t clock_usec;      /* the run's clock */
} gsq_hop;

/* A heartbeat emitted by an LFTA (Johnson et al. 2005, 6.2), pending until the drain
 * that delivers it.  Invariant: run->traces[0..n_traces) are in id order;
 * delivered ones have been (or are being) dispatched. */
typedef struct gsq_trace {
    uint64_t id;
    uint32_t origin;          /* index into run->nodes (an LFTA) */
    int delivered;
    int clock_known;
    uint64_t emitted_usec;    /* CLOCK_MONOTONIC */
    uint64_t clock_usec;
    /* the origin's source, when its heartbeats are generated (Srivastava & Widom 2004):
     * the generated heartbeat and the largest timestamp arrived then */
    const char *source;
    int data_known;
    uint64_t heartbeat_usec, data_usec;
    gsq_hop *hops;            /* owned */
    uint32_t n_hops, cap_hops;
} gsq_trace;

/* gsqlc_add_set_member: interface `member` belongs to set `set` */
typedef struct gsq_set_member {
    char *set;
    char *member;
} gsq_set_member;

/* ---- heartbeat generation: types (Srivastava & Widom 2004; core/heartbeat_gen.c) ----- */

/* One skew bound pair (t, delta), microseconds: once a record stamped tau
 * arrived on stream i at wall instant c, every record arriving on stream j
 * after c + t + L_j is stamped >= tau - delta (ties allowed). */
typedef struct gsq_bound_pair {
    uint64_t t_usec;
    uint64_t delta_usec;
} gsq_bound_pair;

/* A skew bound set.  Invariant: p[0..n) sorted by t ascending with delta
 * strictly descending -- no pair is redundant (Srivastava & Widom 2004 footnote 1: none
 * has both a t and a delta no smaller than another pair's); n <= cap <=
 * GSQ_MAX_BOUND_PAIRS (a pair that would not fit is dropped: a weaker
 * guarantee, never a wrong one).  p is owned. */
#define GSQ_MAX_BOUND_PAIRS 64
typedef struct gsq_bound_set {
    gsq_bound_pair *p;
    uint32_t n, cap;
} gsq_bound_set;

/* Add (t, d) to s unless redundant, dropping the pairs it makes redundant;
 * a full set keeps its pairs (the new one is lost: weaker, still valid).
 * 0, or -1 when out of memory. */
int gsq_bound_set_add(gsq_bound_set *s, uint64_t t, uint64_t d);

/* Option skew:FROM:TO -- the declared set B_FROM,TO (owned strings). */
typedef struct gsq_skew_decl {
    char *from;
    char *to;
    gsq_bound_set set;
} gsq_skew_decl;

enum gsq_hb_estimate { GSQ_EST_GIVEN, GSQ_EST_MAX, GSQ_EST_ADAPTIVE };
/* option pcap_reader: how pcap:PATH files and pcap-live:IFACE interfaces
 * are read (sources/pcap_source.c): mmap, the memory-mapped readers (the
 * file mapped; on Linux the interface's AF_PACKET ring), or libpcap */
enum gsq_pcap_reader { GSQ_PCAP_READER_MMAP, GSQ_PCAP_READER_LIBPCAP };
enum gsq_hb_level { GSQ_LEVEL_OPERATOR, GSQ_LEVEL_QUERY };

/* One stream S_i of the generator: a source with record timestamps.
 * Invariants: max_usec is the largest application timestamp that arrived
 * (valid once seen); b_* summarise the arrivals since the last flush
 * (b_n of them, dropped ones included); hb_usec (valid once has_hb)
 * never decreases; pending[k] (valid when pending_set[k]) is the largest
 * heartbeat due at wall quantum q with q % gen->cap == k, for q in
 * [gen->base_q, gen->base_q + gen->cap) -- the seed's array tau_i[c] kept
 * only over the window it can reach (section 5.1); hist[k] is max_usec as
 * of estimation step h with h % gen->steps == k, for the last `steps`
 * steps up to hist_step. */
typedef struct gsq_tg_stream {
    gsq_source *src;
    uint64_t latency_usec;        /* L_i (given bounds only) */
    int seen;
    uint64_t max_usec;
    uint64_t b_n, b_max, b_min;
    uint64_t b_disorder;          /* largest trail behind the running max */
    int has_hb;
    uint64_t hb_usec;
    int issued;                   /* a promise was given downstream */
    uint64_t issued_usec;         /* the least promise of its LFTAs */
    int tick_promised;            /* promises collected in the current tick */
    uint64_t tick_promise_usec;
    uint64_t dropped;             /* arrived below issued_usec */
    uint64_t *pending;            /* gen->cap slots */
    uint8_t *pending_set;
    uint64_t *hist;               /* gen->steps slots (estimation) */
    int hist_init;
    uint64_t hist_first, hist_step;
} gsq_tg_stream;

/* The run's heartbeat generator.  Invariants when active: st[0..n) are the
 * sources with record timestamps, in source order; bstar holds n*n closed
 * bound sets (B*, given bounds; [i*n + j] is B*_ij); est_* hold n*n*steps
 * entries ([(i*n + j)*steps + t] estimates delta_ij at t*step_usec). */
typedef struct gsq_time_gen {
    int active;
    int estimate;                 /* enum gsq_hb_estimate */
    int level;                    /* enum gsq_hb_level */
    uint64_t horizon_usec;        /* t_max (estimation) */
    uint32_t window;              /* W (adaptive) */
    double alpha;                 /* (adaptive) */
    uint64_t timeout_usec;        /* 0: none */
    uint32_t n;
    gsq_tg_stream *st;
    gsq_bound_set *bstar;
    uint32_t pairs_declared, pairs_closure; /* B's pairs; B*'s beyond them */
    int timeout_needed;           /* Srivastava & Widom 2004 theorem 3.3 */
    uint64_t quantum_usec;        /* wall-clock unit of `pending` */
    uint32_t cap;
    uint64_t base_q;              /* pending covers [base_q, base_q + cap) */
    int based;
    uint32_t steps;               /* estimation: t = 0 .. steps-1 */
    uint64_t step_usec;
    uint64_t *est_delta, *est_win, *est_num;
    uint64_t last_arrival_mono;   /* CLOCK_MONOTONIC of the last arrival */
    int idle_fired;               /* the timeout fired in this pause */
    int tick_due;                 /* it fired: the next chance ticks */
    uint64_t timeouts;            /* times the timeout fired */
    uint64_t flushes;
} gsq_time_gen;

/* max_skew:NAME, out_of_order:NAME */
typedef struct gsq_skew {
    char *iface;
    uint64_t usec;
} gsq_skew;

/* time_unit:NAME, arrival:NAME and pcap_range:NAME of one interface (0:
 * not given) */
typedef struct gsq_iface_time {
    char *iface;
    uint64_t unit_ns;         /* ns per unit: 1, 10^3, 10^6 or 10^9 */
    uint32_t arrival_pos;
    int arrival_type;         /* 0: the time column's type */
    int arrival_format;       /* enum gsq_time_format of its text */
    char *arrival_name;       /* its field's name (NULL: not given), owned */
    int csv_header;           /* csv_header:NAME -- 1: a CSV source's first
                               * record names its columns (csv_source.c) */
    int recording;            /* recording:NAME -- 1: the Arrow stream bound to
                               * it is recorded data (replayed in time), 0 or
                               * not given: a feed read as it comes */
    int has_range;            /* pcap_range: read only the capture's records */
    uint64_t range_start;     /*   in bytes [range_start, range_end) */
    uint64_t range_end;
    /* a live interface's capture (sources/pcap_source.c; 0: not given, the
     * GSQ_LIVE_ default): live_snaplen:NAME and live_promisc:NAME (either
     * reader), live_block_size:NAME, live_blocks:NAME and
     * live_block_timeout:NAME (milliseconds; the AF_PACKET ring) */
    uint32_t live_snaplen;
    int live_promisc;
    uint32_t live_block_size;
    uint32_t live_blocks;
    uint32_t live_block_timeout;
    int live_kernel_filter_off; /* live_kernel_filter:NAME=0 (AF_PACKET ring) */
    uint32_t live_fanout;       /* live_fanout:NAME: one of N sockets sharing
                                 * the interface's frames (0: not given) */
    int live_xdp;               /* live_xdp:NAME, enum gsq_live_xdp (0: not
                                 * given, auto) */
    int live_xdp_drop;          /* live_xdp_drop:NAME=1: XDP_DROP every frame */
} gsq_iface_time;

/* live_xdp:NAME: where an LFTA compiled for the kernel runs on a live
 * interface (run/setup.c, sources/xdp_source.c) */
enum gsq_live_xdp {
    GSQ_LIVE_XDP_AUTO = 1, /* the XDP hook, native mode else generic (also 0) */
    GSQ_LIVE_XDP_NATIVE,
    GSQ_LIVE_XDP_GENERIC,
    GSQ_LIVE_XDP_OFF,      /* user space, as any LFTA */
};

#define GSQ_LIVE_SNAPLEN 65535u
#define GSQ_LIVE_BLOCK_SIZE (1u << 20)
#define GSQ_LIVE_BLOCKS 64u
/* a block not full is handed over after this: 100 wake-ups a second at 10
 * ms cost more CPU per frame than tcpdump at 100 k frames/s on a VM (each
 * ~60 us); at 100 ms it is 0.70x tcpdump's (bench/README.md) */
#define GSQ_LIVE_BLOCK_TIMEOUT_MS 100u

/* The settings of interface iface (NULL: none given). */
const gsq_iface_time *gsq_iface_settings(const gsq_run *r, const char *iface);

struct gsq_run {
    const gsq_queryset_def *qs;
    /* options */
    char csv_sep;
    int csv_strict;
    int clock_mode;             /* enum gsq_clock_mode: never AUTO once set up */
    int clock_auto;             /* the clock was left to set-up (option clock=auto) */
    uint32_t clock_fixed;
    uint32_t batch;
    int batch_given;            /* option batch set: Arrow chunks take it too */
    uint64_t hb_interval_usec;  /* 0: no heartbeat ticks */
    uint32_t stall_intervals;
    uint64_t max_groups;        /* option max_groups: the groups an HFTA
                                 * aggregation may hold open at once; 0:
                                 * what half the memory holds (node.c) */
    char *trace_path;           /* NULL: no traces */
    int ip_int;                 /* option ip_format=int: text sinks print IP
                                 * and IPV6 values as integers (format.h) */
    int arrow_heartbeats;       /* Arrow sinks deliver heartbeat rows */
    int final_heartbeat;        /* one last heartbeat of every LFTA at the end */
    int arrow_flush;            /* flush the sinks after each Arrow source batch */
    int report_losses_only;     /* option report=losses: the report leaves out
                                 * what only informs (stalls, recoveries, an
                                 * interruption, heartbeat timeouts) */
    gsqlc_buffer_pool *buffer_pool; /* NULL, or a reference: the Arrow sinks' buffers */
    int columnar;               /* option columnar: 1 auto (default), 0 off */
    int prefilter;              /* option prefilter: 1 on (default), 0 off */
    uint32_t part_k, part_n;    /* option partition K/N: the groups an LFTA
                                 * aggregation counts (part_n 0: all) */
    /* the instruction sets the runtime's CPU-specific kernels may use
     * (column_compress.h's GSQ_COMPRESS_* bits): those
     * GSQLC_DISABLE_CPU_FEATURES does not name (avx512, avx2) at gsqlc_create */
    int cpu_kernels;
    int pcap_reader;            /* enum gsq_pcap_reader (default mmap) */
    gsq_skew *skews;
    uint32_t n_skews;
    gsq_skew *ooos;             /* out_of_order:NAME */
    uint32_t n_ooos;
    gsq_skew *latencies;        /* latency:NAME */
    uint32_t n_latencies;
    gsq_skew_decl *skew_decls;  /* skew:FROM:TO */
    uint32_t n_skew_decls;
    int hb_estimate;            /* hb_estimate: enum gsq_hb_estimate */
    int hb_level;               /* hb_level: enum gsq_hb_level */
    uint64_t hb_horizon_usec;   /* hb_horizon (default 10 s) */
    uint32_t hb_window;         /* hb_window (default 1000) */
    double hb_alpha;            /* hb_alpha (default 0.5) */
    uint64_t hb_timeout_usec;   /* hb_timeout (0: none) */
    gsq_iface_time *times;      /* time_unit:NAME, arrival:NAME */
    uint32_t n_times;
    /* configuration */
    gsq_param_kv *params;
    uint32_t n_params;
    gsq_binding *binds;
    uint32_t n_binds;
    gsq_sink **sinks;
    uint32_t n_sinks;
    gsq_inject *injects;
    uint32_t n_injects;
    gsq_set_member *members;
    uint32_t n_members;
    /* run state */
    int started;
    /* set once, by the first failure (gsq_run_fail: fail_claim makes the
     * first of two threads failing at once the one whose error stands --
     * capture workers, run/workers.c, run LFTAs beside the run loop) */
    atomic_int failed;
    atomic_int fail_claim;
    /* capture workers (run/workers.c): one per fanout member, started by
     * the run loop; workers_why_not: why the members have none (NULL) */
    gsq_worker *workers;
    uint32_t n_workers;
    const char *workers_why_not;
    int interrupted;            /* ended early by gsqlc_cancel */
    int output_closed;          /* failed because a sink's reader closed its
                                 * pipe (EPIPE): `gsqlc run | head` */
    atomic_int cancel;          /* gsqlc_cancel: set from any thread or a
                                 * signal handler, read by the run loop */
    /* parameter changes while the run goes on (run/params.c): param_queue
     * (guarded by param_mu) holds the changes taken and not yet applied, in
     * the order they were asked for; param_pending is nonzero while it is
     * not empty, read by the run loop at each round boundary */
    pthread_mutex_t param_mu;
    gsq_param_change *param_queue;
    atomic_int param_pending;
    gsq_param_event *param_events; /* applied, in order */
    uint32_t n_param_events;
    uint64_t rounds;            /* rounds of batches finished */
    gsq_buf error;
    gsq_node *nodes;        /* LFTA instances, set merges, HFTAs (above) */
    uint32_t n_nodes;
    uint32_t n_lfta_nodes;
    uint32_t hfta_base;
    gsq_source *sources;
    uint32_t n_sources;
    gsq_stream_rt *streams;
    uint64_t data_usec;     /* data clock: largest arrival_usec seen */
    uint64_t data_first_usec; /* the first one seen */
    int data_seen;
    int ts_sources;         /* sources with record timestamps (has_ts) */
    int aligned;            /* sources replayed in time (setup.c:
                             * decide_alignment); 0: none */
    /* heartbeat timer (heartbeat.c); invariant once started: the clock has
     * not reached hb_next since the last tick */
    int hb_started;
    uint64_t hb_next;
    uint64_t hb_ticks;          /* ticks that called the LFTAs */
    uint64_t hb_ticks_skipped;  /* due at once beyond GSQ_MAX_TICKS_AT_ONCE */
    gsq_event *events;
    uint32_t n_events, cap_events;
    uint64_t events_dropped;
    gsq_time_gen tg;            /* heartbeat generation (Srivastava & Widom 2004) */
    /* traces */
    int trace_fd;               /* -1 when closed */
    gsq_buf trace_out;
    gsq_trace *traces;
    uint32_t n_traces, cap_traces;
    uint64_t next_trace_id;
    int64_t cur_trace;          /* index being dispatched, -1: none */
    uint64_t traces_written;
    int streaming;          /* a source is stdin or live: flush per batch */
    gsq_progress_pub progress;  /* gsqlc_progress's counters (run/progress.c) */
    gsq_buf stats;
    gsq_buf report;
};

/* ---- heartbeat generation (Srivastava & Widom 2004; core/heartbeat_gen.c) ------------- */

/* Set up the generator from the run's options once the sources are open
 * (0, or -1 with the run failed); release it. */
int gsq_tg_setup(gsq_run *r);
void gsq_tg_free(gsq_run *r);
/* A record of the stream stamped ts_usec arrived: 0 to deliver it, 1 when
 * it is below a heartbeat already issued (dropped and counted). */
static inline int gsq_tg_arrive(gsq_tg_stream *t, uint64_t ts_usec)
{
    /* measured whether or not it is dropped: the estimators learn from it */
    if (!t->b_n) {
        t->b_max = t->b_min = ts_usec;
    } else {
        if (ts_usec > t->b_max)
            t->b_max = ts_usec;
        if (ts_usec < t->b_min)
            t->b_min = ts_usec;
    }
    if (t->seen || t->b_n) {
        uint64_t run_max = t->seen && t->max_usec > t->b_max ? t->max_usec : t->b_max;
        if (run_max > ts_usec && run_max - ts_usec > t->b_disorder)
            t->b_disorder = run_max - ts_usec;
    }
    t->b_n++;
    if (t->issued && ts_usec < t->issued_usec) {
        t->dropped++;
        return 1;
    }
    return 0;
}
/* After a batch of source s (may be NULL) at run clock now: apply its
 * arrivals (Figure 2; estimation, section 6), move the heartbeats due by
 * now.  Returns nonzero when the timeout fired (every input paused): the
 * caller fires a tick. */
int gsq_tg_after_batch(gsq_run *r, gsq_source *s, uint64_t now);
/* At a tick, before the LFTAs' heartbeat(): heartbeats due by now; after
 * them: the promises collected become the drop thresholds. */
void gsq_tg_tick_begin(gsq_run *r, int clock_known, uint64_t now);
void gsq_tg_tick_end(gsq_run *r);
/* Stats: the generator's part of the run and of a source. */
void gsq_tg_stats_run(const gsq_run *r, gsq_buf *b);
void gsq_tg_stats_source(const gsq_run *r, const gsq_source *s, gsq_buf *b);
void gsq_tg_report(const gsq_run *r, gsq_buf *b);

/* Set the error message (the last one wins) without failing the run: for
 * the configuration calls, whose failure is their return value (node.c). */
void gsq_set_error(gsq_run *r, const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Record the run's failure (the first message wins). */
void gsq_run_fail(gsq_run *r, const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Nonzero once gsqlc_cancel was called for the run (run/run.c). */
int gsq_run_cancelled(gsq_run *r);

/* Parameter changes (run/params.c).  At a round boundary, when
 * param_pending: apply the queued changes (new values for gsq_param, each
 * node told, the instant recorded).  Stats, report and trace lines of the
 * changes applied; release the queue and the events. */
void gsq_params_apply(gsq_run *r);
/* Set $name's value (a copy) in the run's table: 0, or -1 with the error set
 * (options.c; gsqlc_set_param before the start, gsq_params_apply after). */
int gsq_param_put(gsq_run *r, const char *name, const char *value);
void gsq_params_stats(const gsq_run *r, gsq_buf *b);
void gsq_params_report(gsq_run *r, gsq_buf *b);
void gsq_params_free(gsq_run *r);

/* Interface sets (sets.c).  The members of `set` in order (NULL when it is
 * not a set), their count in *n; whether interface `name` is read by some
 * LFTA of the query set (directly or as a member of a set it reads). */
const gsq_set_member *gsq_set_members(const gsq_run *r, const char *set, uint32_t *n);
int gsq_iface_read(const gsq_run *r, const char *name);
/* The nodes (layout above): 0, or -1 with the run failed. */
int gsq_build_nodes(gsq_run *r);
void gsq_free_nodes(gsq_run *r);

/* Hand one tuple to input `input` of HFTA node h (EOF count, trace hop). */
void gsq_deliver(gsq_run *r, gsq_node *h, int input, int kind, const void *tup, uint32_t len);

/* Deliver one tuple of `stream` to its subscribers. */
void gsq_dispatch(gsq_run *r, int stream, int kind, const void *tup, uint32_t len);
/* gsq_dispatch of n GSQ_DATA tuples of len bytes, tuple j at first + j *
 * stride: each subscriber takes them in order (a sink all at once). */
void gsq_dispatch_run(gsq_run *r, int stream, const uint8_t *first, size_t stride, uint32_t len,
                      uint32_t n);
/* Write the data tuples an HFTA node staged (gsq_node.staged) to its sink. */
void gsq_stage_flush(gsq_node *node);

/* Drain every LFTA queue into its stream's subscribers (run/loop.c). */
void gsq_drain(gsq_run *r);

/* The run's clock in microseconds: 0 and *out, or -1 while unknown (the
 * data clock before the first timestamp, when a source has timestamps).
 * wall: CLOCK_REALTIME; fixed:T: T; data: the largest record timestamp, or
 * wall time when no source has timestamps (node.c). */
int gsq_run_clock_usec(const gsq_run *r, uint64_t *out);
uint64_t gsq_mono_usec(void);

/* Heartbeats, stalls and traces (heartbeat.c). */
#define GSQ_MAX_TICKS_AT_ONCE 4096
int gsq_hb_open(gsq_run *r);    /* at run start: the trace file; 0 or -1 */
/* After a source's batch was processed and drained (s NULL: none): note
 * progress; if `fire`, fire the due ticks and detect stalls. */
void gsq_hb_after_batch(gsq_run *r, gsq_source *s, uint32_t n_recs, int fire);
void gsq_hb_close(gsq_run *r);  /* write out and close the trace file */
/* End of input (option final_heartbeat): every running LFTA's heartbeat()
 * once, then a drain -- a tick's path, whatever the clock and the timer. */
void gsq_hb_final(gsq_run *r);
/* How long an idle reader may wait for input: until the next tick of the
 * wall clock, at most 100 ms. */
int gsq_hb_wait_ms(const gsq_run *r);
void gsq_hb_free(gsq_run *r);   /* release events and traces */
void gsq_trace_emitted(gsq_run *r, gsq_node *lfta);        /* LFTA heartbeat */
int64_t gsq_trace_take(gsq_run *r, gsq_node *lfta);         /* before dispatch */
void gsq_trace_hop(gsq_run *r, gsq_node *hfta);             /* HFTA receives */
void gsq_trace_write_pending(gsq_run *r);                   /* after a drain */

/* Streams fed from Arrow (arrow_inject.c).  open: check the schema (0 or
 * -1, run failed); step: dispatch up to a batch of rows, or the GSQ_EOF at
 * the end (then at_eof); -1 on a fatal error; eof: dispatch GSQ_EOF now
 * unless done (an interrupted run). */
int gsq_inject_open(gsq_run *r, gsq_inject *in);
int gsq_inject_step(gsq_run *r, gsq_inject *in);
void gsq_inject_eof(gsq_run *r, gsq_inject *in);
void gsq_inject_close(gsq_inject *in);
void gsq_inject_report(const gsq_inject *in, gsq_buf *out);

/* Release an Arrow stream the run owns (NULL or released: nothing). */
void gsq_arrow_stream_release(struct ArrowArrayStream **stream);

/* Which nodes run (plan.c): sets every node's `needed` and every
 * injection's `active`.  0, or -1 (run failed: out of memory). */
int gsq_plan(gsq_run *r);

/* The value cache layout of a source of CSV records (csv_layout.c).
 * Invariants after a successful build: slot[0..n) are the distinct
 * (position, type) pairs the source's LFTAs declare, sorted by position
 * then type, each with the time format of the first field declaring it
 * (the CSV reader refuses fields that differ: csv_source.c); layout maps
 * them (storage in maps). */
typedef struct gsq_csv_slot {
    uint32_t pos;
    int type;
    int time_format;          /* enum gsq_time_format: how CSV text reads */
    uint32_t unit_ns;         /*   an instant's unit (time_format != 0) */
} gsq_csv_slot;
typedef struct gsq_csv_slots {
    gsq_csv_slot *slot;
    uint32_t n;
    int32_t *maps;
    gsq_csv_layout layout;
} gsq_csv_slots;
int gsq_csv_slots_build(gsq_csv_slots *cs, const gsq_source *s); /* 0, -1 oom */
/* Columnar chunks (core/chunk.c): the buffers of a chunk of cap rows over
 * a value cache's layout, for the LFTAs of s (0, -1 out of memory: free
 * it still); release; the ring's records (at most cap) as the chunk. */
int gsq_chunk_init(gsq_chunk *ch, const gsq_source *s, uint32_t cap,
                   const gsq_csv_layout *layout);
void gsq_chunk_free(gsq_chunk *ch);
void gsq_chunk_from_ring(gsq_chunk *ch, const gsq_ring *ring);
void gsq_csv_slots_free(gsq_csv_slots *cs);

/* The slot of (pos, type) in a built layout, or -1 (csv_layout.c). */
int32_t gsq_csv_slot_of(const gsq_csv_slots *cs, uint32_t pos, int type);

/* Record timestamps (source_time.c).  setup: decide s->has_ts and the
 * columns, before the source is opened (its LFTAs known); 0, or -1 with
 * the run failed (an arrival column the source cannot read).  stamp: the
 * timestamps of a CSV record of s from its cached time value tv and
 * arrival value av (NULL: unavailable -- a failed conversion, a null, a
 * short row; ignored for a column s does not have); an unreadable one
 * gets the source's last readable timestamps and ts_unreadable, and is
 * counted in s->time_unreadable. */
typedef struct gsq_stamp {
    uint64_t app_usec;
    uint64_t arrival_usec;
    uint8_t unreadable;
} gsq_stamp;
int gsq_source_time_setup(gsq_run *r, gsq_source *s);
void gsq_source_stamp(gsq_source *s, const gsq_csv_value *tv, const gsq_csv_value *av,
                      gsq_stamp *out);
/* gsq_source_stamp over n rows at once, for a source with a time column and
 * no arrival column whose values are unsigned of `width` bytes (2 or 4)
 * read as they are (no nulls): every one is readable, so app[j] =
 * arrival[j] = vals[j] in microseconds, unreadable[j] = 0, in one loop
 * with no branch. */
void gsq_source_stamp_uints(gsq_source *s, const void *vals, uint32_t width, uint32_t n,
                            uint64_t *app, uint64_t *arrival, uint8_t *unreadable);
/* "s", "ms", "us" or "ns" for a unit in nanoseconds (NULL: another). */
const char *gsq_time_unit_name(uint64_t unit_ns);

/* Fill pi from a frame of this link type (DLT_*). */
void gsq_pkt_decode(gsq_pkt_info *pi, int linktype, const uint8_t *p, uint32_t caplen);

/* Sinks.  The Arrow sink's part is in arrow_sink.c. */
int gsq_arrow_sink_open(gsq_run *r, gsq_sink *k);
int gsq_arrow_sink_write(gsq_run *r, gsq_sink *k, const gsq_stream_desc *d, int kind,
                         const void *tup, uint32_t len);
int gsq_arrow_sink_flush(gsq_run *r, gsq_sink *k);
void gsq_arrow_sink_close(gsq_sink *k);
/* gsq_sink_write_run for an Arrow sink. */
int gsq_arrow_sink_write_run(gsq_run *r, gsq_sink *k, const gsq_stream_desc *d,
                             const uint8_t *first, size_t stride, uint32_t len, uint32_t n);
/* n tuples given column-wise to an Arrow sink (gsq_emit_gather): column c
 * of tuple j is element sel[j] of cols[c]. */
int gsq_arrow_sink_write_gather(gsq_run *r, gsq_sink *k, const gsq_stream_desc *d,
                                const void *const *cols, const uint32_t *sel, uint32_t n);
/* gsq_arrow_sink_write_gather of the rows first + j of cols whose keep[j]
 * is 1, j < n; m of them (gsq_emit_masked), packed by the CPU's kernels:
 * 0 done, -1 failed, 1 nothing written (no kernel for this CPU, these
 * columns or this run: the caller gathers them by index). */
int gsq_arrow_sink_write_masked(gsq_run *r, gsq_sink *k, const gsq_stream_desc *d,
                                const void *const *cols, uint32_t first, const uint8_t *keep,
                                uint32_t n, uint32_t m);
int gsq_sink_open(gsq_run *r, gsq_sink *k);
/* Write one tuple of kind GSQ_DATA, or GSQ_HEARTBEAT to a sink with
 * `heartbeats` set (a heartbeat given to another sink is ignored). */
int gsq_sink_write(gsq_run *r, gsq_sink *k, const gsq_stream_desc *d, int kind,
                   const void *tup, uint32_t len);
/* gsq_sink_write of n GSQ_DATA tuples of len bytes, tuple j at first + j *
 * stride. */
int gsq_sink_write_run(gsq_run *r, gsq_sink *k, const gsq_stream_desc *d, const uint8_t *first,
                       size_t stride, uint32_t len, uint32_t n);
int gsq_sink_flush(gsq_run *r, gsq_sink *k);
void gsq_sink_close(gsq_sink *k);

/* Live progress (run/progress.c): publish the run's counters for
 * gsqlc_progress -- every few batches of the run loop, and with done set once
 * the stats are built (the last publication).  A source's input position
 * and size (its ops' progress, else bytes_read and 0: unknown). */
void gsq_progress_publish(gsq_run *r, int done);
void gsq_source_input_bytes(const gsq_source *s, uint64_t *pos, uint64_t *total);

/* Reports (report.c). */
void gsq_build_stats(gsq_run *r);
void gsq_build_report(gsq_run *r);

#endif /* GSQ_INTERNAL_H */
