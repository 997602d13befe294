/*
 * run_flags.h -- the command-line flags of a run, one GSQ_RUN_FLAG line
 * each: those `gsqlc run` and the stand-alone runner gsqlc-run share, and
 * the runner's own (an X-macro list: gsqlc_run_main.c defines GSQ_RUN_FLAG
 * and the column macros, includes this file inside a table's initializer,
 * and undefines them; no include guard, on purpose).  gsqlc's Python side
 * reads this file as text (compiler/gsqlc/runtime/run_flags.py) to declare
 * the shared flags of `gsqlc run`, so each column is a string literal or
 * one of the column macros below, nothing else.
 *
 *   GSQ_RUN_FLAG(NAMES, ARG, ACTION, FACES, HELP)
 *
 *   NAMES    the flag, then its short form if it has one ("--quiet -q")
 *   ARG      VALUE("METAVAR"): the flag takes a value, shown as METAVAR
 *            (VALUE("N"): an integer); CHOICES("a", "b", ...): one of these
 *            words; NO_ARG: a switch
 *   ACTION   what the flag does, as gsqlc-run does it (`gsqlc run` turns
 *            the same flags into the same run through its Python session):
 *            OPTION("key")       gsqlc_set_option(key, VALUE)
 *            SWITCH("key", "v")  gsqlc_set_option(key, v)
 *            KEYED("prefix")     VALUE is NAME=V: gsqlc_set_option(prefix NAME, V)
 *            OWN(WHAT)           the face's own: SOURCE, MEMBER, PARAM (NAME=V),
 *                                PARAM_FILE, OUTPUT, OUTPUT_FILE, FORMAT, STATS,
 *                                CSV_HEADER, HELP
 *            A KEYED flag, and OWN(SOURCE), OWN(MEMBER), OWN(PARAM) and
 *            OWN(OUTPUT), may be given several times.
 *   FACES    BOTH: `gsqlc run` and gsqlc-run; RUNNER: gsqlc-run only
 *   HELP     the flag's help, as both faces' --help show it
 *
 * Invariants (tests/test_run_flags.py): names are unique; every OPTION,
 * SWITCH and KEYED key is one of option_table.h's (a KEYED prefix names a
 * per-interface option, or the hb_ options); the CHOICES of an OPTION are
 * its option's words.  The order is --help's.
 */
GSQ_RUN_FLAG("--source", VALUE("NAME=URI"), OWN(SOURCE), BOTH,
             "bind interface NAME to csv:PATH, csv:-, csvtcp:HOST:PORT, gdat:PATH, pcap:PATH "
             "or pcap-live:IFACE[?KEY=VALUE&...] (NAME=PATH: a capture or GDAT file by its first bytes, else "
             "CSV); a URI without NAME binds the default interface (FROM PROTOCOL), and when "
             "a single NAME is bound the queries reading the default interface read it; a "
             "NAME given again makes an interface set of its sources; csv:PATH?header=1 (and csvtcp:, "
             "csv:-) reads a header line and finds each field's column by its name; pcap-live:IFACE "
             "takes snaplen=, promisc=, block_size=, blocks=, block_timeout=, kernel_filter=, "
             "fanout=N (N sockets sharing its frames by flow, each on a thread of its own: "
             "the interface set NAME.0 ... NAME.N-1), xdp=off|auto|native|generic (where an "
             "LFTA compiled for the kernel runs) and xdp_drop=1 (its XDP program drops every "
             "frame: an interface dedicated to monitoring)")
GSQ_RUN_FLAG("--member", VALUE("SET=IFACE"), OWN(MEMBER), RUNNER,
             "make interface IFACE (bound by its own --source) a member of interface set SET")
GSQ_RUN_FLAG("--output", VALUE("QUERY"), OWN(OUTPUT), BOTH,
             "query whose output stream to print (default: every query no other reads)")
GSQ_RUN_FLAG("--output-file", VALUE("PATH"), OWN(OUTPUT_FILE), BOTH,
             "write the output here instead of stdout")
GSQ_RUN_FLAG("--format", CHOICES("pipe", "csv", "jsonl", "gdat"), OWN(FORMAT), BOTH,
             "pipe (Tigon's '|' lines, the default), csv, jsonl, or gdat (Tigon's binary GDAT "
             "file: give --output-file)")
GSQ_RUN_FLAG("--ip-format", CHOICES("text", "int"), OPTION("ip_format"), BOTH,
             "IP and IPV6 values as text (10.0.0.1; eight groups of four hex digits, the "
             "default) or as unsigned integers (32- and 128-bit, decimal)")
GSQ_RUN_FLAG("--param", VALUE("NAME=VALUE"), OWN(PARAM), BOTH,
             "the value of a query's parameter $NAME (declared in its PARAM block)")
GSQ_RUN_FLAG("--param-file", VALUE("FILE"), OWN(PARAM_FILE), BOTH,
             "parameter values, one NAME=VALUE a line ('#' starts a comment), read at the start "
             "and again on SIGHUP: a value that changed takes effect while the run goes on (a "
             "selection from the next batch, an aggregation from its next epoch); a value the "
             "run refuses is reported and the old one kept")
GSQ_RUN_FLAG("--clock", VALUE("auto|wall|data|fixed:T"), OPTION("clock"), BOTH,
             "the run's clock: auto (the default) follows the records' own time when every "
             "source is a recording (files, in-memory tables) and the wall clock when one is "
             "live; wall, data or fixed:SECONDS force one")
GSQ_RUN_FLAG("--heartbeat-interval", VALUE("SECONDS|off"), OPTION("heartbeat_interval"), BOTH,
             "seconds of the run's clock between temporal updates (heartbeats; default 1); "
             "off disables them")
GSQ_RUN_FLAG("--max-skew", VALUE("NAME=SECONDS"), KEYED("max_skew:"), BOTH,
             "maximum skew of interface NAME's timestamps behind the clock: an idle "
             "interface's time advances from the clock less this; later records are "
             "discarded and counted")
GSQ_RUN_FLAG("--out-of-order", VALUE("NAME=SECONDS"), KEYED("out_of_order:"), BOTH,
             "a record of interface NAME never trails the largest timestamp read before it by "
             "more than this (application time): its heartbeats promise only that largest "
             "timestamp less this; later records are discarded and counted")
GSQ_RUN_FLAG("--time-unit", VALUE("NAME=UNIT"), KEYED("time_unit:"), BOTH,
             "unit of CSV interface NAME's time column: s (default), ms, us or ns (a float "
             "column holds units with a fraction)")
GSQ_RUN_FLAG("--latency", VALUE("NAME=SECONDS"), KEYED("latency:"), BOTH,
             "the most wall-clock seconds between a record's emission and its arrival on "
             "interface NAME: the heartbeats generated for NAME wait this long")
GSQ_RUN_FLAG("--skew", VALUE("A:B=AFTER,BOUND"), KEYED("skew:"), BOTH,
             "how far interface B's timestamps may trail A's: AFTER wall-clock seconds after "
             "a record of A stamped T arrived, every later record of B is stamped at least "
             "T - BOUND, so B's heartbeats advance from A's records")
GSQ_RUN_FLAG("--heartbeat-timeout", VALUE("SECONDS"), OPTION("hb_timeout"), BOTH,
             "when every input pauses this long, every interface's heartbeat moves to the "
             "largest timestamp seen")
GSQ_RUN_FLAG("--heartbeats", VALUE("KEY=VALUE"), KEYED("hb_"), BOTH,
             "heartbeat generator setting, as in the interfaces file's [heartbeats]: "
             "estimate=given|max|adaptive, horizon=SECONDS, window=N, alpha=A, "
             "level=operator|query, timeout=SECONDS")
GSQ_RUN_FLAG("--batch", VALUE("N"), OPTION("batch"), BOTH,
             "records read per batch (default 512): heartbeats, generated ones included, are "
             "brought up to date between batches")
GSQ_RUN_FLAG("--columnar", CHOICES("auto", "off"), OPTION("columnar"), BOTH,
             "auto (the default): LFTAs over CSV records (files, Arrow data) run a chunk of "
             "columns at a time when none reads the clock; off: a record at a time (the same "
             "results)")
GSQ_RUN_FLAG("--prefilter", CHOICES("on", "off"), OPTION("prefilter"), BOTH,
             "on (the default): the cheap predicates of the queries reading an interface are "
             "evaluated once per record, and each query runs only on the records they let "
             "through; off: every query sees every record (the same results)")
GSQ_RUN_FLAG("--pcap-reader", CHOICES("mmap", "libpcap"), OPTION("pcap_reader"), BOTH,
             "how pcap:PATH files and pcap-live:IFACE interfaces are read: mmap (the default: "
             "in place, zero copy -- files memory-mapped, libpcap for pipes and formats it "
             "does not take; on Linux interfaces from an AF_PACKET ring) or libpcap")
GSQ_RUN_FLAG("--stall-intervals", VALUE("N"), OPTION("stall_intervals"), BOTH,
             "report a source or LFTA silent for N heartbeat intervals as stalled (default 3)")
GSQ_RUN_FLAG("--max-groups", VALUE("N"), OPTION("max_groups"), BOTH,
             "the groups an HFTA aggregation may hold open at once; past it the run fails "
             "naming the query (default: what half of the machine's memory holds)")
GSQ_RUN_FLAG("--trace", VALUE("FILE"), OPTION("trace"), BOTH,
             "write every heartbeat's path through the operators as JSON lines")
GSQ_RUN_FLAG("--csv-separator", VALUE("C"), OPTION("csv_separator"), BOTH,
             "the field separator of CSV sources (default ','; tab or \\t for a tab)")
GSQ_RUN_FLAG("--csv-strict", NO_ARG, SWITCH("csv_strict", "1"), BOTH,
             "reject CSV rows holding a value that is not valid for its type")
GSQ_RUN_FLAG("--csv-header", NO_ARG, OWN(CSV_HEADER), BOTH,
             "the first line of every CSV source names its columns: each field's column is "
             "found by its name (per source: csv:PATH?header=1, ?header=0 to exempt one)")
GSQ_RUN_FLAG("--option", VALUE("KEY=VALUE"), KEYED(""), RUNNER,
             "set any runtime option (the options reference of gsqlc's documentation), e.g. "
             "--option hb_estimate=adaptive or --option arrival:eth0=4:ullong")
GSQ_RUN_FLAG("--stats", NO_ARG, OWN(STATS), BOTH,
             "print run counters as JSON on stderr")
GSQ_RUN_FLAG("--quiet -q", NO_ARG, SWITCH("report", "losses"), BOTH,
             "no informational report lines at the end (interruption, stalls, heartbeat "
             "timeouts) and no progress line; warnings, errors and --stats are still written")
GSQ_RUN_FLAG("--help -h", NO_ARG, OWN(HELP), RUNNER, "show this help and exit")
