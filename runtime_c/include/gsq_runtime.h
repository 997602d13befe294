/*
 * gsq_runtime.h -- the contract between the C runtime and generated code.
 *
 * A compiled query set is one shared library made of
 *   - the runtime sources in runtime_c/ (this header and its siblings),
 *   - one generated C file per LFTA, one generated C++ file per HFTA,
 *   - a generated queryset.c that defines `gsq_queryset` (a gsq_queryset_def)
 *     listing the streams, LFTAs and HFTAs.
 *
 * Data flow of a run (single-threaded, batch at a time):
 *
 *   source reader --records--> ring_buffer --> every LFTA bound to that
 *   interface (accept) --gsq_emit--> tuple_queue of the LFTA's output stream
 *   --drained after each batch--> subscribers of the stream (HFTAs, sinks)
 *   HFTA --gsq_emit--> synchronous dispatch to its subscribers.
 *
 * Heartbeat timer: whenever the run's clock (wall, data or fixed) passed the
 * next tick (every heartbeat_interval seconds from the first clock value),
 * the runtime calls every LFTA's heartbeat() in query-set order and drains
 * the queues, so temporal updates reach the HFTAs even without traffic.
 * Option final_heartbeat adds one such round at the end of input.
 *
 * Ownership: the runtime owns every node state, every queue, every sink.
 * A tuple handed to accept() is valid only during that call: an operator
 * that keeps anything (a group key string, a buffered tuple) copies it.
 *
 * Streams are numbered 0..n_streams-1 in gsq_queryset_def.streams.
 */
#ifndef GSQ_RUNTIME_H
#define GSQ_RUNTIME_H

#include "gsq_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- records: what an LFTA reads from the ring buffer ------------------ */

typedef struct gsq_record gsq_record; /* defined in gsq_record.h */
struct gsq_cols; /* a columnar chunk, defined in gsq_record.h */

/* ---- the per-node context handed to generated code --------------------- */

typedef struct gsq_node gsq_node; /* opaque: one per LFTA / HFTA instance */

/* Emit one tuple on the node's output stream.  `fixed` is the stream's
 * fixed-layout struct (fixed_size bytes); string columns are given as
 * (field offset, view) pairs, the runtime packs their bytes into the tail and
 * writes the gsq_strref at each field offset.  For GSQ_EOF pass fixed=NULL.
 * The runtime copies everything: the caller's buffers may be reused at once. */
typedef struct gsq_str_field {
    uint32_t field_off;
    gsq_str s;
} gsq_str_field;

void gsq_emit(gsq_node *node, int kind, const void *fixed, uint32_t fixed_size,
              const gsq_str_field *strs, uint32_t n_strs);

/* Emit an already packed tuple unchanged on the node's output stream: the
 * fixed struct followed by its string tail, exactly as an HFTA received it
 * (merge and join operators pass tuples through).  The runtime checks that
 * len >= the stream's fixed_size and that every string column's reference
 * lies inside len (otherwise the run fails with an "internal error"), and
 * copies the bytes: `tup` may be reused at once.  For GSQ_EOF, tup and len
 * are ignored (same as gsq_emit). */
void gsq_emit_raw(gsq_node *node, int kind, const void *tup, uint32_t len);

/* Run-time parameters ($name).  Returns the text given with --param, or NULL
 * if unset.  Generated init code parses it with the gsq_parse_* helpers and
 * fails init (gsq_node_fail) with a clear message if it is missing or bad. */
const char *gsq_param(gsq_node *node, const char *name);
/* Interface property `name` (@name in a query) of the interface an LFTA node
 * reads: the run's option prop:IFACE:name, else for Name the interface's
 * name and for Host "localhost"; NULL when it has none. */
const char *gsq_iface_prop(gsq_node *node, const char *name);

/* Record an error that stops the run (init failures, impossible states).
 * printf-style; gsqlc_run then returns -1 with this message. */
void gsq_node_fail(gsq_node *node, const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Nonzero once gsq_node_fail was called on this node (or any node: a
 * failure stops the whole run). */
int gsq_node_failed(gsq_node *node);

/* The run's hash partition (option partition K/N): K, and *n = N, or 0 when
 * the run counts every group.  An LFTA aggregation asks at init and then
 * counts only the groups whose key hash h has gsq_part_of(h, N) == K
 * (gsq_ops.h); a run with the option fails when an LFTA did not ask. */
uint32_t gsq_partition(gsq_node *node, uint32_t *n);

/* The run's clock in seconds (wall: time(NULL); fixed:T: T; data: the
 * largest source timestamp seen so far, or wall time for sources without
 * timestamps).  Used by get_system_time and the function of that name. */
uint32_t gsq_clock_seconds(gsq_node *node);

/* n GSQ_DATA tuples of the stream's fixed size and without strings, tuple
 * j at tups + j * size: what n gsq_emit calls do, at once. */
void gsq_emit_run(gsq_node *node, const void *tups, uint32_t size, uint32_t n);

/* k GSQ_DATA tuples given column-wise (a selection whose every output
 * column is an input column as it is): column c of tuple j is element
 * sel[j] of the array cols[c], of the column's C type (no bool, string or
 * IPV6 columns).  What gsq_emit_run does with the tuples built; an Arrow
 * sink that is the stream's only reader gathers straight into its columns. */
void gsq_emit_gather(gsq_node *node, const void *const *cols, const uint32_t *sel, uint32_t k);

/* gsq_emit_gather of the rows first + j (j < n) whose keep[j] is 1 (keep:
 * 0 or 1 each; m of them): what a selection over a chunk's columns
 * computes with no branch; an Arrow sink packs each column with the CPU's
 * compress instructions where it has them. */
void gsq_emit_masked(gsq_node *node, const void *const *cols, uint32_t first,
                     const uint8_t *keep, uint32_t n, uint32_t m);

/* Before an LFTA reading the clock takes row i of a columnar chunk: the
 * data clock as it stood when row i was read (gsq_cols.clock_usec; nothing
 * under the other clocks), so the row sees what it would as a record. */
void gsq_cols_row_clock(gsq_node *node, const struct gsq_cols *cols, uint32_t i);

/* The time bound an idle source can promise from the clock (Johnson et al. 2005, 4.5).
 * For an LFTA whose interface has a maximum skew (option max_skew:NAME) and
 * while the run's clock is known: *out = clock in microseconds - skew
 * (0 if the skew is larger) and the result is 0.  Otherwise (no skew for the
 * interface, an HFTA, or the data clock before the first timestamp) the
 * result is nonzero and *out is untouched: no clock-based inference.
 * An LFTA that promised a bound in a heartbeat discards later records whose
 * time is below it and counts them as GSQ_CNT_SKEW_DROPPED. */
int gsq_clock_bound_usec(gsq_node *node, uint64_t *out);

/* The out-of-order bound of an LFTA's interface (option out_of_order:NAME;
 * Srivastava & Widom 2004, B_ii): no record trails the largest timestamp read before it by
 * more than *out microseconds.  Result 0 and *out set when the option is
 * set for the interface, else nonzero (*out untouched).  The LFTA's
 * heartbeat then promises only (largest timestamp seen - bound), and a
 * later record below a promise is discarded and counted as
 * GSQ_CNT_SKEW_DROPPED. */
int gsq_out_of_order_usec(gsq_node *node, uint64_t *out);

/* Generated heartbeats (Srivastava & Widom 2004; core/heartbeat_gen.c).  When the run
 * generates heartbeats for the LFTA's source (time bounds declared: skew,
 * latency, out_of_order of a source with record timestamps, an estimator,
 * a timeout), the heartbeat it may promise now, in microseconds of the
 * source's record timestamps: 0 and *out; -1 while none is known yet (emit
 * nothing); 1 when the source's heartbeats are not generated (the LFTA
 * infers its own).  Every later record of the source is stamped >= the
 * promise the LFTA reports back with gsq_heartbeat_promised (its time
 * field's value in microseconds): the runtime drops and counts the others
 * before any LFTA sees them. */
int gsq_generated_heartbeat_usec(gsq_node *node, uint64_t *out);
void gsq_heartbeat_promised(gsq_node *node, uint64_t usec);
/* Nonzero when the run generates heartbeats (any source): a stream's data
 * may then trail its largest value by a declared bound, and only its
 * heartbeats carry progress (operators must not infer it from data). */
int gsq_heartbeats_generated(gsq_node *node);
/* Nonzero when the heartbeats on HFTA input `input` are promises kept: each
 * such heartbeat h says no later tuple of that input belongs to an epoch
 * before h's.  The input is then fed by an LFTA whose heartbeats are
 * generated from declared bounds (records below them are dropped before
 * it), by the set merge of such LFTAs or a MERGE of such inputs, or --
 * while heartbeats run -- by an operator whose definition keeps them
 * (gsq_hfta_def.promises: merges, joins and aggregations drop what would
 * break a heartbeat they emitted), or a selection forwarding such an
 * input's.  An aggregation over such an input closes its epochs only on
 * those heartbeats (and at the end), never because data ran ahead. */
int gsq_input_heartbeats_strict(gsq_node *node, int input);
/* The unit of an LFTA's interface's CSV time values (option time_unit:NAME:
 * s, ms, us or ns; seconds by default), in nanoseconds per unit (a power of
 * 1000 from 1 to 10^9): result 0 and *out set for an LFTA, nonzero for an
 * HFTA (*out untouched).  The generated heartbeat converts the out-of-order
 * bound into the unit of a temporal field read from a CSV column with it
 * (a float column holds units with a fraction). */
int gsq_time_unit_nsec(gsq_node *node, uint64_t *out);

/* The most groups an HFTA aggregation may hold open at once: option
 * max_groups, or else (*given 0) what half of the machine's physical
 * memory holds at bytes_per_group a group (at least 1).  Past it the
 * aggregation fails the run, naming the limit, rather than the process
 * running out of memory. */
uint64_t gsq_node_max_groups(gsq_node *node, size_t bytes_per_group, int *given);

/* n zeroed elements of `size` bytes for an operator's hash table (NULL if
 * out of memory); tables of GSQ_TABLE_HUGE_BYTES or more are backed by
 * huge pages where the kernel allows (table_mem.c).  gsq_table_reserve: the
 * same memory not zeroed (the caller initialises it: an HFTA table's
 * std::vector constructs its slots).  Free either with gsq_table_free. */
#define GSQ_TABLE_HUGE_BYTES ((size_t)2 << 20)
void *gsq_table_alloc(size_t n, size_t size);
void *gsq_table_reserve(size_t n, size_t size);
void gsq_table_free(void *p);

/* Counters a node may bump; reported at the end of the run. */
enum gsq_counter {
    GSQ_CNT_LATE_DROPPED = 0,   /* tuple older than the closed epoch */
    GSQ_CNT_LFTA_EJECTIONS,     /* LFTA hash-table collisions */
    GSQ_CNT_FIELD_UNAVAILABLE,  /* record lacked a referenced field */
    GSQ_CNT_SKEW_DROPPED,       /* record older than a bound an LFTA had
                                 * already promised in a heartbeat */
    GSQ_CNT_LATE_DROPPED_ROWS,  /* input rows the late tuples stood for
                                 * (gsq_count_late): 1 for a tuple that is
                                 * one row, a partial aggregate's count(*)
                                 * [stats: late_dropped_rows] */
    GSQ_CNT_LATE_DROPPED_UNKNOWN, /* late tuples whose rows are not known:
                                 * partial aggregates of a query without
                                 * count(*) (gsq_stream_desc.rows_col
                                 * GSQ_ROWS_UNKNOWN) [stats:
                                 * late_dropped_rows_unknown] */
    GSQ_CNT__COUNT
};
/* Bump a counter by n.  Tuples counted as GSQ_CNT_LATE_DROPPED here are
 * one row each (GSQ_CNT_LATE_DROPPED_ROWS grows by n too); gsq_count_late
 * counts a late tuple by the rows it stands for. */
void gsq_count(gsq_node *node, int counter, uint64_t n);

/* An HFTA node drops data tuple tup (len bytes, as accept() got it) of
 * input `input` as late: GSQ_CNT_LATE_DROPPED counts it, and the rows it
 * stands for (by the rows_col of the input's stream: 1, or the partial
 * aggregate's count of rows) go to GSQ_CNT_LATE_DROPPED_ROWS, or, when
 * they are not known (rows_col GSQ_ROWS_UNKNOWN, or a count that cannot
 * be read within len), the tuple to GSQ_CNT_LATE_DROPPED_UNKNOWN.  The
 * inputs of the merge of an LFTA's instances over an interface set are
 * the instances: their stream is the LFTA's (the merge's own out_stream).
 * An input without a stream counts as one row.  The run report says how
 * many rows the dropped tuples held. */
void gsq_count_late(gsq_node *node, int input, const void *tup, uint32_t len);

/* Nonzero when an input of HFTA node is a stream of partial aggregates
 * (gsq_stream_desc.rows_col is not GSQ_ROWS_ONE: an LFTA sub-aggregate's,
 * whose partials go out up to its open epochs apart, and out of order when
 * its table ejects a group early) and heartbeats run.  A merge of such
 * inputs (an interface set's) takes their progress from their heartbeats
 * only -- the oldest epoch each may still produce -- not from their data. */
int gsq_inputs_are_partials(gsq_node *node);

/* High-water marks of what an operator holds (a merge's buffers, a join's
 * state, an aggregation's groups); the run's stats report each node's peak. */
enum gsq_peak {
    GSQ_PEAK_HELD_TUPLES = 0,   /* tuples or groups held */
    GSQ_PEAK_HELD_BYTES,        /* bytes of the tuples held (an LFTA
                                 * aggregation: its table's memory) */
    GSQ_PEAK__COUNT
};
void gsq_peak(gsq_node *node, int which, uint64_t value);

/* The number of inputs of an HFTA node: its definition's n_inputs, or, for
 * the merge of an LFTA over an interface set (gsq_lfta_def.set_merge), the
 * number of members of the set; 0 for an LFTA. */
int gsq_node_n_inputs(gsq_node *node);

/* The params of an HFTA node's definition (gsq_hfta_def.params, also for
 * the merge of an LFTA over an interface set); NULL for an LFTA. */
const void *gsq_node_params(gsq_node *node);

/* ---- text parsing helpers (also used by the CSV reader) ---------------- */
/* Each returns 0 when the whole text is a valid value of the type, 1 when a
 * value was read from a valid prefix or the text was empty (Tigon's strtoul
 * semantics: *out still set), -1 when nothing usable (then *out = 0). */
int gsq_parse_bool(const char *p, size_t n, uint8_t *out);
int gsq_parse_ushort(const char *p, size_t n, uint16_t *out);
int gsq_parse_uint(const char *p, size_t n, uint32_t *out);
int gsq_parse_int(const char *p, size_t n, int32_t *out);
int gsq_parse_ullong(const char *p, size_t n, uint64_t *out);
int gsq_parse_llong(const char *p, size_t n, int64_t *out);
int gsq_parse_float(const char *p, size_t n, double *out);
int gsq_parse_ip(const char *p, size_t n, uint32_t *out);
int gsq_parse_ipv6(const char *p, size_t n, gsq_ipv6 *out);
/* An IP / IPV6 value of input data (CSV fields, Arrow text) in either form
 * gsqlc outputs: text (as gsq_parse_ip / gsq_parse_ipv6 take it) or, all
 * digits, its unsigned integer (32 / 128 bits: --ip-format int).  The
 * returns are those of gsq_parse_ip / gsq_parse_ipv6. */
int gsq_parse_ip_value(const char *p, size_t n, uint32_t *out);
int gsq_parse_ipv6_value(const char *p, size_t n, gsq_ipv6 *out);

/* Instants written as text (core/time_text.c; a CSV field's time_format):
 * ISO-8601 date-times (2026-03-01T12:00:05.250+01:00, 2026-03-01 12:00:05,
 * 2026-03-01) and numbers of seconds, milliseconds, microseconds or
 * nanoseconds since 1970-01-01T00:00:00Z. */
enum gsq_time_format {
    GSQ_TF_NONE = 0,   /* not an instant: a value of the field's type */
    GSQ_TF_ISO8601 = 1,
    GSQ_TF_EPOCH_S = 2,
    GSQ_TF_EPOCH_MS = 3,
    GSQ_TF_EPOCH_US = 4,
    GSQ_TF_EPOCH_NS = 5
};
/* p[0..n) in `format` as an instant: *sec seconds since the epoch (negative
 * before it) and *nsec nanoseconds (0 <= *nsec < 10^9) after them.  0, or
 * -1 when the text is not one (both then 0). */
int gsq_parse_instant(const char *p, size_t n, int format, int64_t *sec, uint32_t *nsec);
/* The instant (sec, nsec) as a count of units of unit_ns nanoseconds (1,
 * 10^3, 10^6 or 10^9), rounded down: 0, or -1 when it does not fit. */
int gsq_instant_units(int64_t sec, uint32_t nsec, uint64_t unit_ns, int64_t *out);
/* "iso8601", "epoch_s", "epoch_ms", "epoch_us" or "epoch_ns" (NULL: none). */
const char *gsq_time_format_name(int format);

/* ---- descriptions emitted by the compiler ------------------------------ */

typedef struct gsq_column {
    const char *name;
    int type;        /* enum gsq_type */
    uint32_t offset; /* offsetof in the stream struct */
} gsq_column;

/* How many input rows a tuple of a stream stands for (gsq_stream_desc.
 * rows_col), so that losses are reported in rows (gsq_count_late):
 *   >= 0  the tuple is a partial aggregate (an LFTA sub-aggregate emits one
 *         tuple per group and epoch): column rows_col, an integer column
 *         (the count(*) partial), holds the rows it aggregated;
 *   GSQ_ROWS_ONE (-1)  each tuple is one row (selections, merges of
 *         tuples, an HFTA's output: a group counts as one);
 *   GSQ_ROWS_UNKNOWN (-2)  a partial aggregate whose rows the query does
 *         not count (a sub-aggregate without count(*)). */
#define GSQ_ROWS_ONE (-1)
#define GSQ_ROWS_UNKNOWN (-2)

typedef struct gsq_stream_desc {
    const char *name;       /* query name, e.g. "flows" or "_lfta_flows" */
    uint32_t fixed_size;    /* sizeof the stream struct */
    uint32_t n_cols;
    const gsq_column *cols;
    int32_t rows_col;       /* the rows a tuple stands for: a column index,
                             * GSQ_ROWS_ONE or GSQ_ROWS_UNKNOWN (above) */
} gsq_stream_desc;

/* Source kinds an LFTA can read. */
enum gsq_source_kind {
    GSQ_SRC_CSV = 1,
    GSQ_SRC_PCAP = 2
};

/* One CSV position a protocol reads, for validation and counting at ingest,
 * and the name of the PROTOCOL field read there: an Arrow source (see
 * gsqlc_bind_arrow) finds the column of a position by that name.  Several
 * entries may share a position (fields of different names or types at the
 * same position); name may be NULL in hand-written query sets, which then
 * cannot read Arrow sources. */
typedef struct gsq_csv_field {
    uint32_t pos;      /* 1-based */
    int type;          /* enum gsq_type */
    const char *name;  /* the PROTOCOL field's name, or NULL */
    /* How a CSV file's text is read (the field's time_format and
     * time_unit): GSQ_TF_NONE as a value of `type`, else as an instant
     * (time_text.c) counted in units of time_unit_ns nanoseconds (1, 10^3,
     * 10^6 or 10^9; an integer or float type).  time_unit_ns is the
     * field's declared unit (0: none declared; seconds for an instant). */
    int time_format;   /* enum gsq_time_format */
    uint32_t time_unit_ns;
} gsq_csv_field;

/* The prefilter of an interface (TigonSQL's prefilter; generated as
 * prefilter.c): the cheap predicates of the LFTAs reading the interface,
 * each evaluated once per record, and which LFTA may want the record.
 * run() over a batch of n records: want[i] gets bit b when the LFTA of bit
 * b (gsq_lfta_prefilter.bit) may do anything with record i beyond its
 * admission; a clear bit means the LFTA would admit the record (or not)
 * and then reject it by its predicates, counting nothing.  dropped (NULL
 * or n bytes) marks records no LFTA is given (a generated heartbeat's
 * drops): their bits are clear and they count in no class.  classes
 * (classes_size bytes) gets, per admission class (the LFTAs of one
 * PROTOCOL following the same temporal fields), the batch's records the
 * class admits and their temporal fields' least and largest values. */
typedef struct gsq_prefilter_def {
    const char *iface;
    uint32_t n_bits;
    size_t classes_size;
    void (*run)(const gsq_record *recs, uint32_t n, const uint8_t *dropped, uint64_t *want,
                void *classes);
} gsq_prefilter_def;

/* An LFTA's place in its interface's prefilter.  Before a batch the run
 * loop asks clean(): 1 when every record of the batch its class admits is
 * also admitted by the LFTA's heartbeat state (none below a promise), so
 * that a record it rejects changes only the largest value seen; 0 and the
 * LFTA gets every record of the batch.  After a clean batch, skipped()
 * applies what the n_skipped records it was not given would have done:
 * the class's largest values seen, the records offered. */
typedef struct gsq_lfta_prefilter {
    const gsq_prefilter_def *prefilter;
    uint32_t bit;
    uint32_t class_off;   /* its class's statistics at classes + class_off */
    int (*clean)(const void *state, const void *cls);
    void (*skipped)(void *state, const void *cls, uint32_t n_skipped);
} gsq_lfta_prefilter;

typedef struct gsq_lfta_def {
    const char *name;     /* node name, e.g. "_lfta_flows" */
    const char *iface;    /* interface or interface-set name bound by --source */
    const char *protocol; /* PROTOCOL name, for messages */
    int source_kind;      /* enum gsq_source_kind */
    int out_stream;       /* index into gsq_queryset_def.streams */
    uint32_t n_csv_fields;            /* CSV positions read (CSV only) */
    const gsq_csv_field *csv_fields;
    size_t state_size;    /* runtime allocates this many zeroed bytes */
    /* 0 on success; on failure call gsq_node_fail and return -1. */
    int (*init)(void *state, gsq_node *node);
    void (*accept)(void *state, gsq_node *node, const gsq_record *rec);
    /* end of input: emit every open group; the runtime sends GSQ_EOF after */
    void (*finish)(void *state, gsq_node *node);
    void (*destroy)(void *state); /* release what init acquired; may be NULL */
    /* Called on every heartbeat tick of the run's clock (may be NULL): emit
     * a GSQ_HEARTBEAT tuple through gsq_emit when the temporal values are
     * known (the last seen ones, or gsq_clock_bound_usec's).  Heartbeats
     * flow through the queue and reach HFTAs like data; sinks ignore them
     * (except Arrow sinks under option arrow_heartbeats).  With option
     * final_heartbeat it is also called once at the end of input, before
     * finish(). */
    void (*heartbeat)(void *state, gsq_node *node);
    /* May be NULL: a hint that rec will be accepted soon (the run loop
     * calls it GSQ_PREFETCH_AHEAD records ahead); it must not change any
     * state.  Aggregations start loading the table slot of rec's group. */
    void (*prefetch)(void *state, gsq_node *node, const gsq_record *rec);
    /* The order-preserving merge of this LFTA's output, on its first
     * temporal output column; NULL when the output has no temporal column.
     * Used only when the LFTA's interface is an interface set of k >= 2
     * members at run time (gsqlc_add_set_member): the LFTA then runs as k
     * instances, named "<name>@<member>", each with its own state and its
     * own member's source, whose outputs feed inputs 0..k-1 of one node of
     * this definition, named after the LFTA, whose output is the LFTA's
     * stream (out_stream).  Its n_inputs is 0 and in_streams and name are
     * unused: create() reads the number of inputs from gsq_node_n_inputs.
     * Binding a set of k >= 2 members to an LFTA without it is a run
     * error.  The generator defines it with one of the runtime's merges
     * (gsq_merge.h). */
    const struct gsq_hfta_def *set_merge;
    /* The CSV column of the LFTA's temporal field (CSV-kind PROTOCOLs: the
     * first field its heartbeat follows, an increasing numeric field behind
     * its temporal output): 1-based position and the enum gsq_type it is
     * read as, also listed in csv_fields; 0 and 0 when there is none (and
     * for packet PROTOCOLs).  A source of CSV records (a CSV file, an Arrow
     * stream) takes its time column from its first running LFTA that
     * declares one: its records then carry timestamps (gsq_record.h). */
    uint32_t time_pos;
    int time_type;
    /* Nonzero when every field its heartbeat follows is the record's own
     * timestamp (a packet's, or the CSV time column): under generated
     * heartbeats (Srivastava & Widom 2004) its heartbeats are then kept promises, and an
     * HFTA reading it may take them as closing every older epoch
     * (gsq_input_heartbeats_strict). */
    int hb_record_time;
    /* May be NULL: accept over a columnar chunk (gsq_record.h, gsq_cols),
     * row by row exactly as accept() would take the rows as records.  An
     * Arrow source reads columnar chunks when every LFTA bound to it has
     * one (option columnar, default auto); an LFTA that reads the clock
     * sets it back to each row's (gsq_cols_row_clock, from the chunk's
     * clock_usec under the data clock), as a record would see it. */
    void (*accept_cols)(void *state, gsq_node *node, const struct gsq_cols *cols);
    /* Nonzero when accept() and accept_cols() never read the run's clock:
     * under the data clock the run loop then moves the clock once per batch
     * instead of before every record (0: it may read it). */
    int ignores_clock;
    /* May be NULL: its place in its interface's prefilter (above). */
    const gsq_lfta_prefilter *prefilter;
    /* Parameters changed while the run goes on (gsqlc_change_param).  May
     * be NULL: the LFTA reads none.  gsq_param gives the new values, already
     * checked.  A selection takes them at once; an aggregation keeps the old
     * ones for its epochs up to `mark` -- a tuple of its output stream whose
     * temporal columns name the last epoch of the old values -- and takes
     * the new ones for every later epoch (mark NULL: for every epoch). */
    void (*params_changed)(void *state, gsq_node *node, const void *mark);
    /* May be NULL (no temporal output).  Fill tup, zeroed and of the output
     * stream's size, with the temporal columns of the newest epoch the LFTA
     * has read (inferred from the largest temporal values it admitted): 1,
     * or 0 when it has read none. */
    int (*epoch_mark)(void *state, gsq_node *node, void *tup);
    /* May be NULL as epoch_mark: the order of two marks' epochs, < 0, 0 or
     * > 0 as a's is older than, the same as or newer than b's. */
    int (*mark_cmp)(const void *a, const void *b);
    /* May be NULL: the LFTA was not compiled to run in the kernel.  Else
     * (gsqlc run --lfta-in-kernel) it runs in the XDP hook of a live
     * interface bound to it (pcap-live:, option live_xdp:NAME not off),
     * its partials read back by an XDP source (sources/xdp_source.c); bound
     * to anything else it reads records as usual. */
    const struct gsq_xdp_def *xdp;
} gsq_lfta_def;

/* An aggregating LFTA compiled for the kernel's XDP hook as well
 * (compiler/gsqlc/backend/xdp_gen.py): its BPF object, built on
 * runtime_c/xdp/xdp_table.h, and the LFTA's side of its partials.  A
 * partial's key and aggregates are the program's struct xdp_key and
 * struct xdp_aggr; its epoch is the packet's wall-clock nanoseconds over
 * epoch_ns, the value of the LFTA's temporal group-by key. */
typedef struct gsq_xdp_def {
    const unsigned char *object; /* the BPF object (ELF), object_len bytes */
    size_t object_len;
    const char *program;         /* its XDP function's name */
    uint32_t key_bytes;          /* sizeof(struct xdp_key) */
    uint32_t aggr_bytes;         /* sizeof(struct xdp_aggr) */
    uint32_t slots;              /* XDP_SLOTS: slots of one epoch's table per CPU */
    uint64_t epoch_ns;
    /* one partial of epoch `epoch`: emit it as the LFTA's output tuple */
    void (*partial)(void *state, gsq_node *node, uint64_t epoch, const void *key,
                    const void *aggr);
    /* every partial of the epochs below `epoch` has been handed on: emit
     * the heartbeat saying so */
    void (*closed)(void *state, gsq_node *node, uint64_t epoch);
} gsq_xdp_def;

/* The XDP loader (runtime_c/xdp/xdp_loader.h), reached through this table
 * so that the runtime itself needs no libbpf: the generated queryset.c of a
 * query set with kernel LFTAs defines it over xdp_loader.c, which its
 * library links with libbpf.  The types are xdp_loader.h's. */
struct xdp_loader;
struct xdp_loader_opts;
struct xdp_cpu_state;
typedef struct gsq_xdp_loader_ops {
    int (*open)(const struct xdp_loader_opts *o, struct xdp_loader **out, char *err,
                size_t errlen);
    void (*close)(struct xdp_loader *ld);
    const char *(*mode)(const struct xdp_loader *ld);
    int64_t (*wall_minus_mono_ns)(const struct xdp_loader *ld, uint64_t *error_bound_ns);
    uint64_t (*epoch_now)(const struct xdp_loader *ld);
    uint64_t (*first_epoch)(const struct xdp_loader *ld);
    uint64_t (*drainable_at)(const struct xdp_loader *ld, uint64_t epoch);
    int (*poll)(struct xdp_loader *ld, int timeout_ms, char *err, size_t errlen);
    int (*drain)(struct xdp_loader *ld, uint64_t epoch, char *err, size_t errlen);
    int (*finish)(struct xdp_loader *ld, char *err, size_t errlen);
    int (*epoll_fd)(const struct xdp_loader *ld);
    int (*stats)(const struct xdp_loader *ld, struct xdp_cpu_state *sum, char *err,
                 size_t errlen);
} gsq_xdp_loader_ops;

typedef struct gsq_hfta_def {
    const char *name;     /* unused for an LFTA's set_merge */
    int n_inputs;
    const int *in_streams; /* stream index of each input */
    int out_stream;
    /* Returns the operator (owned by the runtime from then on) or NULL after
     * gsq_node_fail. */
    void *(*create)(gsq_node *node);
    /* One tuple on input `input` (0-based), of any enum gsq_tuple_kind: an
     * operator that has no use for GSQ_JOINT_HEARTBEAT ignores it.  On
     * GSQ_EOF of every input the operator flushes its state and emits
     * GSQ_EOF itself. */
    void (*accept)(void *op, gsq_node *node, int input, int kind,
                   const void *tup, uint32_t len);
    void (*destroy)(void *op);
    /* May be NULL: a hint that data tuple tup will be accepted on `input`
     * soon (the runtime gives it some tuples ahead of a run of them); it
     * changes nothing.  Aggregations start loading the group's slot. */
    void (*prefetch)(void *op, int input, const void *tup, uint32_t len);
    /* May be NULL: what an operator compiled once for every query set reads
     * to know its query (gsq_node_params), e.g. the gsq_merge_spec of the
     * runtime's merges (gsq_merge.h); generated operators have it built in. */
    const void *params;
    /* May be NULL: a run of n data tuples on `input`, each `len` bytes and
     * `stride` bytes after the previous one -- what n accept() calls of
     * GSQ_DATA would do, in one call (an aggregation extracts and hashes
     * each key once and prefetches its slot some tuples ahead).  Given, it
     * replaces both accept() and prefetch() for such runs. */
    void (*accept_run)(void *op, gsq_node *node, int input, const uint8_t *first,
                       size_t stride, uint32_t len, uint32_t n);
    /* What its heartbeats promise (enum gsq_hfta_promises): whether a later
     * output tuple can fall below a heartbeat it emitted. */
    int promises;
    /* May be NULL: the operator reads no parameter.  Parameters changed
     * while the run goes on (gsq_param gives the new values, checked): a
     * selection, join or merge takes them at once; an aggregation keeps the
     * old ones for its epochs up to the one marks[i] names (a tuple of input
     * i's stream from the LFTA producing it, as gsq_lfta_def.epoch_mark
     * fills it; NULL for an input no LFTA produces: up to the newest epoch
     * the operator has read) and takes the new ones for later epochs. */
    void (*params_changed)(void *op, gsq_node *node, const void *const *marks);
} gsq_hfta_def;

enum gsq_hfta_promises {
    GSQ_PROMISES_NONE = 0,     /* not known to be kept */
    GSQ_PROMISES_KEPT = 1,     /* never: what would break one is dropped and
                                * counted (merges, joins, aggregations) */
    GSQ_PROMISES_FORWARDED = 2 /* its input's heartbeats, passed on with its
                                * data (a selection): kept when the input's are */
};

/* A run-time parameter some query of the set reads ($name, declared in its
 * PARAM block): its name and enum gsq_type, for checking a value given
 * while the run goes on as a node's init checks one at the start. */
typedef struct gsq_param_decl {
    const char *name;
    int type;
    /* NULL, or why it cannot change while the run goes on (a query reading
     * it has no epochs a change could wait for: gsqlc_change_param refuses) */
    const char *fixed;
} gsq_param_decl;

/* A classic BPF instruction, laid out as Linux's struct sock_filter
 * (linux/filter.h): the generated code needs no Linux header. */
typedef struct gsq_bpf_insn {
    uint16_t code;
    uint8_t jt;
    uint8_t jf;
    uint32_t k;
} gsq_bpf_insn;

/* The kernel filter of an interface (compiler/gsqlc/planner/kernel_filter.py):
 * a classic BPF socket filter over Ethernet frames that drops only frames
 * every LFTA reading the interface would reject silently.  gsqlc's
 * AF_PACKET reader attaches it when every LFTA bound to the source reads
 * interface `iface`, the interface is Ethernet (or loopback), option
 * live_kernel_filter:NAME is not 0 and the snapshot length is at least
 * min_snaplen.  Its accept returns are RET #0xffffffff (the reader puts its
 * snapshot length there), its drops RET #0; every jump is forward. */
typedef struct gsq_kernel_filter {
    const char *iface;
    uint32_t n_insns;
    const gsq_bpf_insn *insns;
    uint32_t min_snaplen;
} gsq_kernel_filter;

typedef struct gsq_queryset_def {
    uint32_t n_streams;
    const gsq_stream_desc *streams;
    uint32_t n_lftas;
    const gsq_lfta_def *const *lftas;
    uint32_t n_hftas;
    const gsq_hfta_def *const *hftas; /* in topological order */
    uint32_t n_params;
    const gsq_param_decl *params;     /* each (name, type) once */
    uint32_t n_kernel_filters;        /* one per interface that has one */
    const gsq_kernel_filter *kernel_filters;
    /* NULL unless some LFTA has an xdp definition */
    const gsq_xdp_loader_ops *xdp_loader;
} gsq_queryset_def;

/* Defined by the generated queryset.c. */
extern const gsq_queryset_def gsq_queryset;

/* ---- the exported ABI (cffi / CLI / Spark drive a query set through it) - */

typedef struct gsq_run gsq_run;

/* The Arrow C data / stream interface structures (arrow_abi.h defines them
 * as the Arrow specification does). */
struct ArrowSchema;
struct ArrowArray;
struct ArrowArrayStream;

#if defined(__GNUC__)
#define GSQ_EXPORT __attribute__((visibility("default")))
#else
#define GSQ_EXPORT
#endif

/* On a generated function whose loops the C compiler vectorizes: built for
 * x86-64-v4 (AVX-512) and -v3 (AVX2) too, the best the CPU has chosen when
 * the library loads (GNU ifunc), so the loops use the CPU they run on and
 * the library still runs on any x86-64 (a Spark executor's included). */
#if defined(__GNUC__) && defined(__x86_64__) && defined(__linux__)
#define GSQ_CPU_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define GSQ_CPU_CLONES
#endif

/* The exported ABI.  Return convention, for every call returning int:
 * 0 on success, -1 on failure with gsqlc_error() set.  Runs share nothing:
 * several may be created and run at once on different threads (each run
 * used by one thread at a time, except gsqlc_cancel).  The library
 * installs no signal handler; a program that wants Ctrl-C to end a run
 * calls gsqlc_cancel from its handler (tools/gsqlc_run_main.c does).
 *
 * Create a run of this library's query set. Never NULL unless out of memory.*/
GSQ_EXPORT gsq_run *gsqlc_create(void);
/* Set option key to value before gsqlc_run.  The options, the values each
 * takes and what it does are one table, run/option_table.h (the options
 * reference and gsqlc's Python checks are made from it).  Two let a
 * consumer of Arrow batches, e.g. a micro-batch engine, see temporal
 * progress:
 *   arrow_heartbeats=1: every Arrow sink of the run (gsqlc_add_arrow_sink)
 *     has one more, last column "__heartbeat" (boolean "b", not nullable),
 *     false on data rows, and also delivers a row, with it true, for every
 *     GSQ_HEARTBEAT tuple of its stream (LFTA or HFTA output): the tuple's
 *     columns as the heartbeat carries them -- temporal columns set, the
 *     others as the tuple holds them (zero, empty strings).  File sinks
 *     (gsqlc_add_sink) never get heartbeat rows.  A stream with a column
 *     named __heartbeat cannot have an Arrow sink then (a run error).
 *   final_heartbeat=1: at the end of input (also after an interruption),
 *     before any EOF and before the LFTAs' finish(), every running LFTA's
 *     heartbeat() is called once and the queues are drained, as on a timer
 *     tick (traces included; not counted in heartbeat_ticks), whatever the
 *     clock and heartbeat_interval: the last temporal values each LFTA
 *     saw, those of records its predicate rejected included, reach the
 *     HFTAs and sinks even when no tick fired (a short run, the fixed
 *     clock, an Arrow source without record timestamps).
 * "arrow_flush" ("0", the default, or "1"): after each record batch of an
 * Arrow source (gsqlc_bind_arrow) is processed, the sinks are flushed
 * before the next batch is asked for, so the results of a batch reach the
 * consumer even when the producer sends the next one only later (a live
 * feed); without it Arrow sinks hand over batch_rows rows at a time.
 * Return 0, or -1 with gsqlc_error() set. */
GSQ_EXPORT int gsqlc_set_option(gsq_run *r, const char *key, const char *value);
/* Bind parameter $name (a query's PARAM block) to its value in text; before
 * the run starts.  Return 0, or -1 with gsqlc_error() set. */
GSQ_EXPORT int gsqlc_set_param(gsq_run *r, const char *name, const char *value);
/* Change parameter $name to `value` while the run goes on: from any thread
 * (the run's or another), before or after gsqlc_run starts.  The value is
 * checked now as a node checks one at the start: 0 when the change is
 * taken, -1 when it is refused -- an unknown parameter, a value that is not
 * one of its type -- and then err (errlen bytes; may be NULL) says why and
 * the run goes on with the value it had.  Before the start this is
 * gsqlc_set_param.  After it, the change takes effect at the instant the
 * run next finishes a round of batches (every record read before it has
 * reached every operator): a selection, join or merge reading the
 * parameter takes the new value for every record read after that instant;
 * an aggregation keeps the old value for each epoch its query had reached
 * by then (the newest epoch of the temporal values its LFTAs had read) and
 * takes the new one from the next epoch on, in its LFTAs and its HFTA
 * alike, so that no epoch mixes two values.  Each change and its instant
 * are in the stats ("param_changes"), the report and the trace file. */
GSQ_EXPORT int gsqlc_change_param(gsq_run *r, const char *name, const char *value, char *err,
                                  size_t errlen);
/* Bind interface NAME ("" is "default", the default interface) to a source
 * URI: csv:PATH, csv:-, pcap:PATH, pcap-live:IFACE.  One binding per name
 * (an interface set is made of named members: gsqlc_add_set_member). */
GSQ_EXPORT int gsqlc_bind_source(gsq_run *r, const char *iface, const char *uri);
/* Make interface `member` ("" is "default") a member of interface set
 * `set` ("" is "default"), in the order of the calls (a member once per
 * set).  The member is bound like any interface (gsqlc_bind_source or
 * gsqlc_bind_arrow, under its own name) and has its own max_skew:member and out_of_order:member.
 * At gsqlc_run, an LFTA reading `set` runs once per member: with one
 * member it simply reads that member (same node name); with k >= 2 it runs
 * as k instances "<lfta>@<member>" whose outputs an order-preserving merge
 * named "<lfta>" joins on the LFTA's temporal column (its set_merge; an
 * LFTA without one is then a run error).  A set name takes precedence over
 * a binding of the same name.  Before gsqlc_run; -1 with gsqlc_error()
 * set. */
GSQ_EXPORT int gsqlc_add_set_member(gsq_run *r, const char *set, const char *member);
/* Subscribe a sink to the output stream of query `query` (or any stream of
 * the query set by its name, e.g. an LFTA's "_fta_q").  format: "pipe",
 * "csv", "jsonl"; path NULL or "-" for stdout. */
GSQ_EXPORT int gsqlc_add_sink(gsq_run *r, const char *query, const char *format,
                              const char *path);

/* ---- Arrow input and output (arrow_source.c, arrow_inject.c, arrow_sink.c)
 *
 * Ownership of an ArrowArrayStream passed in: from the call on -- whatever
 * its result -- the run owns the stream's contents and calls its release
 * (when the run is done with it, at the latest in gsqlc_destroy); the
 * struct's memory stays the caller's and must stay alive (and unmoved)
 * until gsqlc_destroy.
 *
 * Conversions (Arrow format -> GSQL type; anything else is a run error at
 * start naming the field, the GSQL type and the Arrow format found):
 *   bool          <- boolean "b", any integer (0 or 1)
 *   ushort, uint, int, ullong, llong
 *                 <- any integer "c" "C" "s" "S" "i" "I" "l" "L"
 *   float         <- "f", "g", any integer
 *   IP            <- any integer (0 .. 2^32-1), utf8 "u" / "U" dotted quad
 *   IPV6          <- fixed_size_binary(16) "w:16", utf8 "u" / "U" text
 *   string        <- utf8 "u" / "U", binary "z" / "Z" (views into the
 *                    Arrow buffers, no copy)
 * A value outside the GSQL type's range, or text that is not a valid
 * address, makes the row malformed: rejected, counted in rows_rejected, the
 * first GSQ_MAX_DESCRIBED described in the report (like malformed CSV
 * rows).  Dictionary-encoded columns are not supported (an error). */

/* Bind interface iface ("" or "default": the default interface) to an
 * Arrow stream of record batches.  It feeds the LFTAs of CSV-kind
 * PROTOCOLs (fields get_csv_*) of that interface: every field they read is
 * matched BY NAME to a column of the stream's schema (exactly, else
 * ignoring case; extra columns are ignored), on the schema from
 * get_schema, before any row is read.  A null value is an unavailable
 * field (as an absent packet header: the LFTA skips the row and counts
 * field_unavailable).  A packet PROTOCOL's LFTA bound to an Arrow source is
 * a run error.  One binding per interface name (as gsqlc_bind_source);
 * -1 with gsqlc_error() set. */
GSQ_EXPORT int gsqlc_bind_arrow(gsq_run *r, const char *iface, struct ArrowArrayStream *stream);

/* Feed stream `stream_name` of the query set (a query's output or an LFTA
 * stream such as "_fta_q") from an Arrow stream instead of from the node
 * that produces it: that node (and whatever only it needs) is not run.
 * Columns are matched by name to the stream's columns (as above; every
 * column of the stream must be present); each row is dispatched as one
 * tuple to the stream's subscribers, then one GSQ_EOF when the Arrow stream
 * ends.  A row with a null value is malformed.  A column "__heartbeat"
 * (boolean, or integer 0 / 1) that is not one of the stream's makes the
 * rows where it is true GSQ_HEARTBEAT tuples.  What gsqlc_add_arrow_sink
 * produces round-trips exactly (heartbeat rows included).  -1 with
 * gsqlc_error() set. */
GSQ_EXPORT int gsqlc_bind_stream_arrow(gsq_run *r, const char *stream_name,
                                       struct ArrowArrayStream *stream);

/* Receives one record batch: a struct array (format "+s") and its schema.
 * The callee owns both contents and calls their release callbacks (after
 * moving the structs out: they are the caller's).  Nonzero stops the run:
 * gsqlc_run returns -1, error "cancelled by the consumer of S". */
typedef int (*gsqlc_arrow_cb)(void *ctx, struct ArrowArray *array, struct ArrowSchema *schema);

/* Subscribe an in-memory sink to stream `stream_name` (a query's output or
 * any stream of the query set).  Tuples are gathered column-wise (64-byte
 * aligned buffers) and handed to cb as a record batch every batch_rows rows
 * (0: 65536), at the end of the run (the last, partial batch) and, when the
 * run is streaming (a source is stdin or a live interface), after each
 * batch of input.  Columns are named after the stream's; types: bool "b",
 * ushort "S", uint "I", int "i", ullong "L", llong "l", float "g", IP "I"
 * (host order value), IPV6 "w:16", string "z" (binary).  No nulls (the
 * fields are not nullable).  Only data tuples are rows, unless option
 * arrow_heartbeats is set: then the last column is "__heartbeat" (boolean)
 * and heartbeat tuples are rows too, flagged true (see gsqlc_set_option);
 * a batch may then hold heartbeat rows only.  No batch is
 * delivered after the run failed.  array and schema are valid during the
 * call only: the callee moves them (e.g. pyarrow's _import_from_c) or
 * releases them; the sink releases whatever is left in them after it. */
GSQ_EXPORT int gsqlc_add_arrow_sink(gsq_run *r, const char *stream_name, gsqlc_arrow_cb cb,
                                    void *ctx, uint32_t batch_rows);

/* A pool of freed Arrow sink buffers (sinks/buffer_pool.h says why): runs
 * it is set on take their batches' column buffers from it, and the
 * batches' release callbacks give them back, up to max_bytes held for the
 * next batches (of this run or a later one, on any thread).  Created with
 * one reference, the caller's; gsqlc_set_buffer_pool gives the run one
 * (dropped by gsqlc_destroy) and every exported column holds one until
 * released, so the caller may release its own at any time.  NULL: out of
 * memory.  counts: bytes held, takes served from the pool, takes that
 * allocated. */
typedef struct gsqlc_buffer_pool gsqlc_buffer_pool;
GSQ_EXPORT gsqlc_buffer_pool *gsqlc_buffer_pool_create(uint64_t max_bytes);
GSQ_EXPORT void gsqlc_buffer_pool_release(gsqlc_buffer_pool *pool);
GSQ_EXPORT void gsqlc_buffer_pool_counts(gsqlc_buffer_pool *pool, uint64_t out[3]);
/* Set before gsqlc_run (replacing any pool set before).  0, or -1 when
 * the run has started. */
GSQ_EXPORT int gsqlc_set_buffer_pool(gsq_run *r, gsqlc_buffer_pool *pool);
/* The cache of freed table blocks (table_mem.c): tables of
 * GSQ_TABLE_HUGE_BYTES or more freed by a run are kept for the later
 * tables of this library, up to 512 MiB (environment GSQLC_TABLE_CACHE_MB;
 * 0: none).  counts: bytes held, blocks held, requests served from them,
 * requests that allocated.  trim: free every held block. */
GSQ_EXPORT void gsqlc_table_cache_counts(uint64_t out[4]);
GSQ_EXPORT void gsqlc_table_cache_trim(void);
/* Run to end of input: every open group is flushed, EOF propagates, sinks
 * are flushed.  0 on success (also when cancelled), -1 on a run-time
 * failure (gsqlc_error()); a run runs once (a second call fails).
 * Only the nodes some sink depends on run (streams fed by
 * gsqlc_bind_stream_arrow cut the dependency), and only the interfaces
 * their LFTAs read are opened; without any sink, every node whose output
 * nobody reads counts as having one. */
GSQ_EXPORT int gsqlc_run(gsq_run *r);
/* End the run as at end of input: the sources stop reading (an idle wait
 * of a pipe or live interface ends within 100 ms), open groups are flushed,
 * EOF propagates and the sinks are flushed; gsqlc_run then returns 0 and
 * the stats say "interrupted": true.  Thread-safe and async-signal-safe (it
 * only sets an atomic flag): call it from another thread or a signal
 * handler, before or during gsqlc_run, never after gsqlc_destroy.
 * 0, or -1 when r is NULL. */
GSQ_EXPORT int gsqlc_cancel(gsq_run *r);
/* ---- live progress (run/progress.c) ------------------------------------
 *
 * gsqlc_progress_snapshot: a run's counters as they stand, for a progress
 * display polling from another thread while gsqlc_run runs.  The run's
 * thread publishes them (C11 atomics, relaxed) at the end of a round of its
 * loop (every source read and processed a batch: up to `batch` records, 512
 * by default, or a chunk of an Arrow source) once 4096 records or more were
 * read since the last publication, after every round that read none (an
 * idle input, Arrow-fed streams), and once more at the end; never per
 * record.
 *
 * Invariants:
 *   - every counter (all members but state, has_watermark and
 *     watermark_sec) never decreases from one snapshot to a later one, and
 *     watermark_sec never decreases while has_watermark is set (it is
 *     never cleared once set);
 *   - a snapshot's members are read one at a time: two of them may come
 *     from consecutive publications (each is a value the run had);
 *   - state GSQLC_PROGRESS_DONE is published last, once gsqlc_run has
 *     built its stats: every counter then equals the stats' (the keys in
 *     brackets below) and no longer changes;
 *   - input_bytes <= input_bytes_total whenever input_bytes_total != 0.
 *
 *   state           GSQLC_PROGRESS_SETUP (gsqlc_run not in its loop yet:
 *                   all zero), _RUNNING, _DONE
 *   publications    how many times the run published (a new value: fresh
 *                   counters)
 *   input_bytes     input consumed: of a capture file its bytes up to the
 *                   next record (headers included), of a CSV file the bytes
 *                   read; otherwise (pipes, live interfaces, Arrow) the
 *                   sources' bytes_read [sources[].input_bytes]
 *   input_bytes_total  the bytes there are to consume, when every source is
 *                   a file (or a pcap_range of one); 0: unknown (a pipe,
 *                   standard input, a live interface, an Arrow stream, no
 *                   source) [sources[].input_bytes_total]
 *   records_read    records (packets, rows) read by the sources
 *                   [sources[].records_read]
 *   rows_out        data rows delivered to the sinks [tuples_written]
 *   late_dropped    tuples dropped as later than a closed epoch allows
 *                   [nodes[].late_dropped]
 *   skew_dropped    records discarded below a promised heartbeat
 *                   [nodes[].skew_dropped, sources[].time.dropped_below_heartbeat]
 *   malformed       rows rejected as malformed [sources[].rows_rejected,
 *                   injected[].rows_rejected]
 *   has_watermark, watermark_sec
 *                   the lowest temporal progress among the sources whose
 *                   records have timestamps, in seconds of the records' time
 *                   (microsecond resolution): a source's is the heartbeat
 *                   it was issued when heartbeats are generated for it
 *                   (Srivastava & Widom 2004), else the latest timestamp of the batches
 *                   it read (a running maximum); the lowest over the
 *                   sources still reading, the highest once all ended.
 *                   has_watermark 0: none yet (no source with timestamps,
 *                   or one that is still reading has none). */
#define GSQLC_PROGRESS_SETUP 0u
#define GSQLC_PROGRESS_RUNNING 1u
#define GSQLC_PROGRESS_DONE 2u
typedef struct gsqlc_progress_snapshot {
    uint32_t state;
    uint32_t has_watermark;
    uint64_t publications;
    uint64_t input_bytes;
    uint64_t input_bytes_total;
    uint64_t records_read;
    uint64_t rows_out;
    uint64_t late_dropped;
    uint64_t skew_dropped;
    uint64_t malformed;
    double watermark_sec;
} gsqlc_progress_snapshot;
/* Fill *out from the counters last published.  Thread-safe and lock-free:
 * any thread, at any time between gsqlc_create and gsqlc_destroy, also
 * during gsqlc_run (it reads atomics only).  0, or -1 when r or out is
 * NULL. */
GSQ_EXPORT int gsqlc_progress(gsq_run *r, gsqlc_progress_snapshot *out);

/* Counters of the last run as a JSON object (owned by the run). */
GSQ_EXPORT const char *gsqlc_stats_json(gsq_run *r);
/* Human-readable end-of-run report for stderr (malformed rows, drops). */
GSQ_EXPORT const char *gsqlc_report(gsq_run *r);
GSQ_EXPORT const char *gsqlc_error(gsq_run *r);
GSQ_EXPORT void gsqlc_destroy(gsq_run *r);

/* Where the classic pcap file at path can be cut into up to `parts` runs
 * of records whose results, run after run, equal the whole file's (option
 * pcap_range:NAME takes each; pcap_mmap.h gsq_pcap_mmap_cuts says how they
 * are found): the number of runs n >= 1, with cuts[0..n] their byte
 * boundaries (cuts has parts + 1 entries).  0: the file is not to be cut
 * (why says why: the memory-mapped reader does not take it, pcapng, it
 * ends early, too few packets; read it whole); -1: out of memory. */
GSQ_EXPORT int gsqlc_pcap_cuts(const char *path, uint32_t parts, uint64_t *cuts, char *why,
                               size_t why_len);

#ifdef __cplusplus
}
#endif

#endif /* GSQ_RUNTIME_H */
