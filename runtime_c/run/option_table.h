/*
 * option_table.h -- the run options of gsqlc_set_option, one GSQ_OPTION
 * line each (an X-macro list: options.c defines GSQ_OPTION and the column
 * macros, includes this file inside a table's initializer, and undefines
 * them; no include guard, on purpose).  gsqlc's Python side reads this
 * file as text (compiler/gsqlc/runtime/option_table.py) to check the same
 * values and to write the options reference, so each column is a string
 * literal, a number or one of the column macros below, nothing else.
 *
 *   GSQ_OPTION(NAME, KIND, FIELD, RANGE, WORDS, VALUES, SETTER, EXPECTS, DOC)
 *
 *   NAME     the key; a per-interface key shows its form, its prefix up to
 *            and including the first ':' ("max_skew:NAME" matches any key
 *            starting "max_skew:"; the rest is the setter's argument)
 *   KIND     what the value is: BOOL (0/1/true/false), WORDS (one of
 *            WORDS), UINT (an integer in RANGE), SECONDS (a number of
 *            seconds, RANGE in microseconds), REAL (a number in RANGE),
 *            CHAR (one character), TEXT (any text), FORM (a form of its own
 *            that SETTER parses, described by EXPECTS)
 *   FIELD    FIELD(member): the gsq_run member the option sets (the
 *            generic setters store through it); NO_FIELD for an option kept
 *            elsewhere (per interface, or as a query parameter)
 *   RANGE    RANGE(LOW, HIGH), inclusive, or NO_RANGE
 *   WORDS    WORDS("a", "b", ...) the accepted words, in the order the
 *            refusal names them, or NO_WORDS
 *   VALUES   VALUES(x, y, ...) what each word stores, or NO_VALUES
 *   SETTER   the function that parses and stores the value: set_bool,
 *            set_words, set_uint, set_seconds, set_real store into FIELD
 *            for any option of their kind; the others are the option's own
 *   EXPECTS  what a value must be, as a refusal says it ("KEY must be
 *            EXPECTS, got 'VALUE'") and the options reference shows it
 *   DOC      one line for the options reference
 *
 * Invariants: names are unique; no prefix (the part of a per-interface
 * NAME up to its first ':') is a prefix of another entry's name, so at
 * most one entry matches a key and the scan's order does not matter; a
 * per-interface NAME ending ":NAME" takes one interface name, refused
 * empty before its setter runs; WORDS and VALUES have as many items, and
 * EXPECTS of a WORDS option lists its words ("a, b or c").  The order is
 * the one the "unknown option" error lists the names in (tests assert it),
 * not sorted: the table is scanned (42 entries, each option set once).
 */
GSQ_OPTION("csv_separator", CHAR, FIELD(csv_sep), NO_RANGE, NO_WORDS, NO_VALUES,
           set_csv_separator, "one character",
           "The field separator of CSV sources (default ','; 'tab' or '\\t' for a tab; "
           "not a quote or a line break).")
GSQ_OPTION("csv_strict", BOOL, FIELD(csv_strict), NO_RANGE, NO_WORDS, NO_VALUES, set_bool,
           "0 or 1",
           "1: a CSV row holding a value not valid for its column's type is rejected and "
           "counted, rather than converted as Tigon does.")
GSQ_OPTION("clock", WORDS, FIELD(clock_mode), NO_RANGE,
           WORDS("auto", "wall", "data", "fixed:SECONDS"),
           VALUES(GSQ_CLOCK_AUTO, GSQ_CLOCK_WALL, GSQ_CLOCK_DATA, GSQ_CLOCK_FIXED), set_clock,
           "auto, wall, data or fixed:SECONDS",
           "The run's clock: the wall clock, the data's timestamps, or a fixed instant; auto "
           "(default) takes the data clock when every input is a recording.")
GSQ_OPTION("batch", UINT, FIELD(batch), RANGE(1, 1048576), NO_WORDS, NO_VALUES, set_batch,
           "an integer from 1 to 1048576", "Records read from a source at a time.")
GSQ_OPTION("columnar", WORDS, FIELD(columnar), NO_RANGE, WORDS("auto", "off"), VALUES(1, 0),
           set_words, "auto or off",
           "auto (default): LFTAs read CSV records a column batch at a time where they can.")
GSQ_OPTION("prefilter", WORDS, FIELD(prefilter), NO_RANGE, WORDS("on", "off"), VALUES(1, 0),
           set_words, "on or off",
           "on (default): the cheap predicates of the LFTAs reading an interface are evaluated "
           "once per record, and an LFTA runs only on the records they let through.")
GSQ_OPTION("heartbeat_interval", SECONDS, FIELD(hb_interval_usec),
           RANGE(1, 1000000000000000), NO_WORDS, NO_VALUES, set_heartbeat_interval,
           "a number of seconds (e.g. 1 or 0.5), or 0 or off to disable heartbeats",
           "Seconds of the run's clock between heartbeat ticks (default 1).")
GSQ_OPTION("max_skew:NAME", SECONDS, NO_FIELD, RANGE(0, 1000000000000000), NO_WORDS, NO_VALUES,
           set_max_skew, "a number of seconds >= 0 (e.g. 2 or 0.5)",
           "Seconds that interface NAME's timestamps may lag the run's clock.")
GSQ_OPTION("out_of_order:NAME", SECONDS, NO_FIELD, RANGE(0, 1000000000000000), NO_WORDS,
           NO_VALUES, set_out_of_order, "a number of seconds >= 0 (e.g. 2 or 0.5)",
           "Seconds that a record of interface NAME may trail the largest timestamp read before it.")
GSQ_OPTION("latency:NAME", SECONDS, NO_FIELD, RANGE(0, 1000000000000000), NO_WORDS, NO_VALUES,
           set_latency, "a number of seconds >= 0 (e.g. 2 or 0.5)",
           "Wall-clock seconds after it was emitted that a record of interface NAME arrives at most.")
GSQ_OPTION("skew:FROM:TO", FORM, NO_FIELD, NO_RANGE, NO_WORDS, NO_VALUES, set_skew_decl,
           "AFTER,BOUND seconds >= 0 (wall-clock delay, application-time bound), several "
           "separated by ';'",
           "After AFTER wall-clock seconds, TO's timestamps are within BOUND seconds of FROM's.")
GSQ_OPTION("hb_estimate", WORDS, FIELD(hb_estimate), NO_RANGE, WORDS("given", "max", "adaptive"),
           VALUES(GSQ_EST_GIVEN, GSQ_EST_MAX, GSQ_EST_ADAPTIVE), set_words,
           "given, max or adaptive",
           "The time bounds in force: as given, or learnt from the data (the largest skew seen, "
           "or adapted to recent records).")
GSQ_OPTION("hb_level", WORDS, FIELD(hb_level), NO_RANGE, WORDS("operator", "query"),
           VALUES(GSQ_LEVEL_OPERATOR, GSQ_LEVEL_QUERY), set_words, "operator or query",
           "operator (default): each source has its own heartbeat; query: every source gets the "
           "least heartbeat of all.")
GSQ_OPTION("hb_horizon", SECONDS, FIELD(hb_horizon_usec), RANGE(1, 1000000000000000), NO_WORDS,
           NO_VALUES, set_seconds, "a number of seconds > 0 (at most 1000000000)",
           "Seconds after an arrival that the learnt skew estimates reach (default 10).")
GSQ_OPTION("hb_window", UINT, FIELD(hb_window), RANGE(1, UINT32_MAX), NO_WORDS, NO_VALUES,
           set_uint, "an integer >= 1 (records)",
           "Records after which the adaptive estimate is lowered (default 1000).")
GSQ_OPTION("hb_alpha", REAL, FIELD(hb_alpha), RANGE(0, 1), NO_WORDS, NO_VALUES, set_real,
           "a number from 0 to 1", "The weight of the old estimate when the adaptive estimate is lowered (default 0.5).")
GSQ_OPTION("hb_timeout", SECONDS, FIELD(hb_timeout_usec), RANGE(0, 1000000000000000), NO_WORDS,
           NO_VALUES, set_seconds, "a number of seconds >= 0 (0: none) (at most 1000000000)",
           "Seconds without a record on any source after which every heartbeat moves to the "
           "largest timestamp seen (0, the default: never).")
GSQ_OPTION("time_unit:NAME", WORDS, NO_FIELD, NO_RANGE, WORDS("s", "ms", "us", "ns"),
           VALUES(1000000000, 1000000, 1000, 1), set_time_unit, "s, ms, us or ns",
           "The unit of interface NAME's CSV time and arrival columns (default s).")
GSQ_OPTION("arrival:NAME", FORM, NO_FIELD, NO_RANGE, NO_WORDS, NO_VALUES, set_arrival,
           "a CSV position, optionally with a numeric type, time format and field name "
           "(e.g. 3, 3:ullong or 3:ullong:iso8601:recv)",
           "The CSV column of interface NAME giving each record's arrival instant.")
GSQ_OPTION("csv_header:NAME", BOOL, NO_FIELD, NO_RANGE, NO_WORDS, NO_VALUES, set_csv_header,
           "0 or 1",
           "1: the first line of interface NAME's CSV input names its columns, and each "
           "field's column is found by its name.")
GSQ_OPTION("stall_intervals", UINT, FIELD(stall_intervals), RANGE(1, 1000000), NO_WORDS,
           NO_VALUES, set_uint, "an integer from 1 to 1000000",
           "Heartbeat intervals of silence after which a source or LFTA is reported stalled "
           "(default 3).")
GSQ_OPTION("max_groups", UINT, FIELD(max_groups), RANGE(1, UINT64_MAX), NO_WORDS, NO_VALUES,
           set_uint, "a positive integer",
           "The groups an HFTA aggregation may hold open at once (default: what half of the "
           "memory holds); past it the run fails.")
GSQ_OPTION("ip_format", WORDS, FIELD(ip_int), NO_RANGE, WORDS("text", "int"), VALUES(0, 1),
           set_words, "text or int",
           "How text sinks print IP and IPV6 values: dotted/colon text (default) or integers.")
GSQ_OPTION("report", WORDS, FIELD(report_losses_only), NO_RANGE, WORDS("all", "losses"),
           VALUES(0, 1), set_words, "all or losses",
           "The end-of-run report: all (default), or losses: only input lost or suspect and "
           "warnings, without stalls, recoveries, an interruption or heartbeat timeouts.")
GSQ_OPTION("trace", TEXT, FIELD(trace_path), NO_RANGE, NO_WORDS, NO_VALUES, set_trace, "a file path",
           "A file to write one JSON line per heartbeat trace to.")
GSQ_OPTION("arrow_heartbeats", BOOL, FIELD(arrow_heartbeats), NO_RANGE, NO_WORDS, NO_VALUES,
           set_bool, "0 or 1",
           "1: Arrow sinks also deliver heartbeats, as rows flagged by a last column __heartbeat.")
GSQ_OPTION("final_heartbeat", BOOL, FIELD(final_heartbeat), NO_RANGE, NO_WORDS, NO_VALUES,
           set_bool, "0 or 1",
           "1: every LFTA sends one last heartbeat at the end of input, before its end of stream.")
GSQ_OPTION("arrow_flush", BOOL, FIELD(arrow_flush), NO_RANGE, NO_WORDS, NO_VALUES, set_bool,
           "0 or 1", "1: the sinks are flushed after each record batch of an Arrow source.")
GSQ_OPTION("pcap_reader", WORDS, FIELD(pcap_reader), NO_RANGE, WORDS("mmap", "libpcap"),
           VALUES(GSQ_PCAP_READER_MMAP, GSQ_PCAP_READER_LIBPCAP), set_words, "mmap or libpcap",
           "How pcap:PATH files and pcap-live:IFACE interfaces are read: memory-mapped "
           "(default: the file mapped; on Linux the interface's AF_PACKET ring) or through "
           "libpcap.")
GSQ_OPTION("live_snaplen:NAME", UINT, NO_FIELD, RANGE(64, 262144), NO_WORDS, NO_VALUES,
           set_live_snaplen, "an integer from 64 to 262144 (bytes)",
           "Bytes kept of each frame of live interface NAME (default 65535).")
GSQ_OPTION("live_promisc:NAME", BOOL, NO_FIELD, NO_RANGE, NO_WORDS, NO_VALUES,
           set_live_promisc, "0 or 1",
           "1: live interface NAME is captured in promiscuous mode (default 0).")
GSQ_OPTION("live_block_size:NAME", UINT, NO_FIELD, RANGE(4096, 268435456), NO_WORDS,
           NO_VALUES, set_live_block_size,
           "a power of two from 4096 to 268435456 (bytes), a multiple of the page size",
           "Bytes of each block of live interface NAME's AF_PACKET ring (default 1048576).")
GSQ_OPTION("live_blocks:NAME", UINT, NO_FIELD, RANGE(2, 65536), NO_WORDS, NO_VALUES,
           set_live_blocks, "an integer from 2 to 65536",
           "Blocks of live interface NAME's AF_PACKET ring (default 64).")
GSQ_OPTION("live_block_timeout:NAME", UINT, NO_FIELD, RANGE(1, 60000), NO_WORDS, NO_VALUES,
           set_live_block_timeout, "an integer from 1 to 60000 (milliseconds)",
           "Milliseconds after which the kernel hands over a block of live interface NAME's "
           "AF_PACKET ring that is not full (default 10).")
GSQ_OPTION("live_fanout:NAME", UINT, NO_FIELD, RANGE(2, 64), NO_WORDS, NO_VALUES,
           set_live_fanout, "an integer from 2 to 64",
           "Live interface NAME is one of N members of a set whose sockets share one "
           "interface's frames by flow (PACKET_FANOUT): each is read, with its own LFTAs, "
           "on a thread of its own.")
GSQ_OPTION("live_kernel_filter:NAME", BOOL, NO_FIELD, NO_RANGE, NO_WORDS, NO_VALUES,
           set_live_kernel_filter, "0 or 1",
           "1 (default): live interface NAME's AF_PACKET ring drops in the kernel the frames "
           "no query reading it wants (gsqlc explain shows the filter); 0: every frame.")
GSQ_OPTION("live_xdp:NAME", WORDS, NO_FIELD, NO_RANGE, WORDS("off", "auto", "native", "generic"),
           VALUES(GSQ_LIVE_XDP_OFF, GSQ_LIVE_XDP_AUTO, GSQ_LIVE_XDP_NATIVE, GSQ_LIVE_XDP_GENERIC),
           set_live_xdp, "off, auto, native or generic",
           "How an LFTA compiled for the kernel (gsqlc run --lfta-in-kernel) runs on live "
           "interface NAME: in its XDP hook, attached in native (driver) mode, else generic "
           "(auto, default), in that mode only, or off: in user space.")
GSQ_OPTION("live_xdp_drop:NAME", BOOL, NO_FIELD, NO_RANGE, NO_WORDS, NO_VALUES,
           set_live_xdp_drop, "0 or 1",
           "1: live interface NAME is dedicated to monitoring: its XDP program drops every "
           "frame once counted (only when no LFTA reads it in user space); 0 (default): passed on.")
GSQ_OPTION("partition", FORM, NO_FIELD, NO_RANGE, NO_WORDS, NO_VALUES, set_partition,
           "K/N (0 <= K < N <= 4096)",
           "LFTA aggregations count only the groups of hash partition K of N: N runs over the "
           "same input, one for each K, hold every group once between them.")
GSQ_OPTION("pcap_range:NAME", FORM, NO_FIELD, NO_RANGE, NO_WORDS, NO_VALUES, set_pcap_range,
           "START:END (byte offsets, START <= END)",
           "Read only the records of interface NAME's classic pcap file between these offsets.")
GSQ_OPTION("prop:NAME:PROPERTY", TEXT, NO_FIELD, NO_RANGE, NO_WORDS, NO_VALUES, set_prop,
           "any text", "Interface NAME's property PROPERTY, read as @PROPERTY by its LFTAs.")
GSQ_OPTION("recording:NAME", BOOL, NO_FIELD, NO_RANGE, NO_WORDS, NO_VALUES, set_recording,
           "0 or 1",
           "1: the Arrow stream bound to NAME is recorded data, replayed in time beside other "
           "recordings; 0 (default): a feed read as it comes.")
