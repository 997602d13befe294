"""The gsqlc command line: compile, run, explain, trace.

A thin face over the pipeline (compile_queries / plan_queries) and the
runtime (bindings, runner).  Exit status: 0 ok, 2 query or usage error
(a query error names file:line:col), 1 run-time failure or internal error
(a bug in gsqlc: "internal error", the traceback kept in a file for a bug
report).
"""
from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path
from typing import Optional, Sequence

from . import __version__, input_cache
from .errors import BuildError, GsqlcError, InternalError, QueryError, UsageError, render
from .pipeline import CompileOptions, check_plan_options, compile_planned, compile_queries, plan_queries
from .planner.policies import FLUSH_POLICIES
from .runtime import progress
from .runtime.bindings import (
    URI_SCHEMES,
    check_params,
    check_skew,
    check_uri,
    normalize_uri,
    outputs_of,
    resolve_bindings,
    run_options,
    time_options,
)
from .runtime.interfaces import (
    DEFAULT_IFACE,
    Interfaces,
    TimeBounds,
    check_seconds,
    check_time_unit,
)
from .runtime.interfaces import build as build_interfaces
from .runtime.runner import RunHandle, run_library
from .runtime.split import AUTO_MIN_BYTES, Split, machine_threads
from .terminal import (
    COLOR_MODES,
    color_mode_of,
    color_report_line,
    is_dumb_terminal,
    style,
    use_color,
)

EXIT_OK, EXIT_RUNTIME, EXIT_USAGE = 0, 1, 2
EXIT_OUTPUT_CLOSED = 128 + 13  # SIGPIPE's number, as the shell reports a tool it killed


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("files", nargs="+", metavar="FILE", help="GSQL query files")
    p.add_argument("--schema", action="append", default=[], metavar="SCHEMA",
                   help="schema file with PROTOCOL/STREAM declarations (repeatable; "
                        "default: gsqlc's packet schema)")
    p.add_argument("-L", "--library", action="append", default=[], metavar="DIR",
                   help="directory holding query libraries (FROM LIB/query)")
    p.add_argument("--interfaces", metavar="FILE",
                   help="interfaces file (TOML): [interface.NAME] source/max_skew/"
                        "out_of_order/latency/arrival/time_unit, [set.NAME] members, "
                        "[skew.A.B] after/bound, [heartbeats]")
    p.add_argument("--max-lfta-disorder", type=int, metavar="N",
                   help="epochs of the temporal group-by an LFTA aggregation keeps open "
                        "(default 2; 1: in order; DEFINE max_lfta_disorder wins)")
    p.add_argument("--max-hfta-disorder", type=int, metavar="N",
                   help="epochs an HFTA aggregation keeps open: a tuple up to N-1 epochs "
                        "behind the newest still counts (default 3; 1: in order)")
    p.add_argument("--functions", action="append", default=[], metavar="DEF",
                   help="function-definition file in the syntax of Tigon's external_fcns.def "
                        "(FUN, PRED, UDAF, EXTR lines; repeatable)")
    p.add_argument("--udf", action="append", default=[], metavar="SOURCE",
                   help="C (.c) or C++ (.cc, .cpp) source defining the functions and "
                        "aggregates of --functions in Tigon's calling convention (repeatable)")
    p.add_argument("--flush", choices=FLUSH_POLICIES,
                   help="how a closed epoch's groups are handed on (default slow: one per "
                        "following tuple; lazy: LFTA groups when their slot is needed)")


def make_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="gsqlc", description=(
        "Compile GSQL stream queries into native code (C LFTAs, C++ HFTAs) and run them."))
    ap.add_argument("--version", action="version", version=f"gsqlc {__version__}")
    ap.add_argument("--color", choices=COLOR_MODES, default="auto",
                    help="colour diagnostics: auto (on a terminal, unless NO_COLOR is set or "
                         "TERM=dumb), always, never")
    sub = ap.add_subparsers(dest="command", required=True)

    c = sub.add_parser("compile", help="emit the C/C++ sources and CMake project")
    _common(c)
    c.add_argument("-o", "--output-dir", default="gsqlc_out", metavar="DIR")
    c.add_argument("--build", action="store_true", help="also build the library and runner")
    c.add_argument("--sanitize", action="store_true",
                   help="build with AddressSanitizer and UndefinedBehaviorSanitizer")
    c.add_argument("--werror", action="store_true", help="treat C/C++ warnings as errors")

    r = sub.add_parser("run", help="compile (cached), build and run")
    _common(r)
    r.add_argument("--source", action="append", default=[], metavar="NAME=URI",
                   help="bind interface NAME to csv:PATH, csv:-, csvtcp:HOST:PORT, gdat:PATH, "
                        "pcap:PATH or pcap-live:IFACE")
    r.add_argument("--output", action="append", default=[], metavar="QUERY",
                   help="query whose output stream to print (default: every query no other reads)")
    r.add_argument("--output-file", metavar="PATH", help="write the output here instead of stdout")
    r.add_argument("--format", choices=["pipe", "csv", "jsonl", "gdat"], default="pipe",
                   help="pipe (Tigon's '|' lines), csv, jsonl, or gdat (Tigon's binary GDAT "
                        "file: give --output-file)")
    r.add_argument("--ip-format", choices=["text", "int"], default="text",
                   help="IP and IPV6 values as text (10.0.0.1; eight groups of four hex digits) "
                        "or as unsigned integers (32- and 128-bit, decimal)")
    r.add_argument("--clock", default="auto", metavar="auto|wall|data|fixed:T",
                   help="the run's clock: auto (the default) follows the records' own time "
                        "when every source is a recording (files, in-memory tables) and the "
                        "wall clock when one is live; wall, data or fixed:SECONDS force one")
    r.add_argument("--heartbeat-interval", default="1", metavar="SECONDS|off",
                   help="seconds of the run's clock between temporal updates (heartbeats); "
                        "off disables them")
    r.add_argument("--max-skew", action="append", default=[], metavar="NAME=SECONDS",
                   help="maximum skew of interface NAME's timestamps behind the clock: an idle "
                        "interface's time advances from the clock less this; later tuples are "
                        "discarded and counted")
    r.add_argument("--out-of-order", action="append", default=[], metavar="NAME=SECONDS",
                   help="a record of interface NAME never trails the largest timestamp read "
                        "before it by more than this (application time): its heartbeats "
                        "promise only that largest timestamp less this; later records are "
                        "discarded and counted")
    r.add_argument("--time-unit", action="append", default=[], metavar="NAME=UNIT",
                   help="unit of CSV interface NAME's time column: s (default), ms, us or ns "
                        "(a float column holds units with a fraction)")
    r.add_argument("--latency", action="append", default=[], metavar="NAME=SECONDS",
                   help="wall-clock seconds from emission to arrival on interface NAME: its "
                        "generated heartbeats wait this long (seed 002 L_i)")
    r.add_argument("--skew", action="append", default=[], metavar="A:B=AFTER,BOUND",
                   help="skew bound of interface A on B (seed 002 B_ab = (t_ab, delta_ab)): "
                        "AFTER wall-clock seconds after A's record stamped T arrived, B's "
                        "records are stamped >= T - BOUND, so B's heartbeats advance from A's")
    r.add_argument("--heartbeat-timeout", metavar="SECONDS",
                   help="when every input pauses this long, every interface's heartbeat "
                        "moves to the largest timestamp seen (seed 002 section 3.4)")
    r.add_argument("--heartbeats", action="append", default=[], metavar="KEY=VALUE",
                   help="heartbeat generator setting, as in the interfaces file's [heartbeats]: "
                        "estimate=given|max|adaptive, horizon=S, window=N, alpha=A, "
                        "level=operator|query")
    r.add_argument("--batch", type=int, metavar="N",
                   help="records read per batch (default 512): heartbeats, generated ones "
                        "included, are brought up to date between batches")
    r.add_argument("--columnar", choices=("auto", "off"), default="auto",
                   help="auto: LFTAs over CSV records (files, Arrow data) run a chunk of "
                        "columns at a time when none reads the clock; off: a record at a "
                        "time (the same results)")
    r.add_argument("--pcap-reader", choices=["mmap", "libpcap"],
                   help="how pcap:PATH files are read: mmap (default: memory-mapped, zero "
                        "copy; libpcap for pipes and formats it does not take) or libpcap")
    r.add_argument("--threads", type=_positive_int, metavar="N",
                   help="threads to run on (default: the machine's cores when it has 3 or "
                        "more, each given at least 16 MiB of capture; else 1): a classic pcap "
                        "file is cut into runs of records, "
                        "each read by its LFTAs on a thread of its own, the HFTAs merging "
                        "them; the results equal one thread's.  Other sources, and runs the "
                        "cut cannot keep equal, use one thread (--stats says why)")
    r.add_argument("--stall-intervals", type=int, default=3, metavar="N",
                   help="report a source or LFTA silent for N heartbeat intervals as stalled")
    r.add_argument("--max-groups", type=_positive_int, metavar="N",
                   help="the groups an HFTA aggregation may hold open at once; past it the "
                        "run fails naming the query (default: what half of the machine's "
                        "memory holds)")
    r.add_argument("--trace", metavar="FILE",
                   help="write every heartbeat's path through the operators as JSON lines")
    r.add_argument("--csv-separator", default=",", metavar="C")
    r.add_argument("--csv-strict", action="store_true",
                   help="reject CSV rows holding a value that is not valid for its type")
    r.add_argument("--param", action="append", default=[], metavar="NAME=VALUE")
    r.add_argument("--stats", action="store_true", help="print run counters as JSON on stderr")
    shown = r.add_mutually_exclusive_group()
    shown.add_argument("--progress", action="store_true",
                       help="draw the live progress line on stderr even when it is not a "
                            "terminal (default: only on a terminal, TERM not dumb, the output "
                            "not going to that terminal)")
    shown.add_argument("--quiet", "-q", action="store_true",
                       help="no progress line, and no informational report lines at the end "
                            "(interruption, stalls, heartbeat timeouts); warnings, errors and "
                            "--stats are still written")
    r.add_argument("--sanitize", action="store_true",
                   help="build with AddressSanitizer and UndefinedBehaviorSanitizer")

    t = sub.add_parser("trace", help="summarise (and plot) the heartbeat traces of a run")
    t.add_argument("file", metavar="FILE", help="the JSON-lines file written by run --trace")
    t.add_argument("--plot", metavar="PNG", help="draw per-operator queueing delay over time")

    k = sub.add_parser("completion", help="print a shell completion script (bash or zsh)",
                       description="Print gsqlc's completion script for a shell.  bash: "
                       "eval \"$(gsqlc completion bash)\" in ~/.bashrc; zsh: gsqlc completion "
                       "zsh > a directory of your $fpath, as _gsqlc")
    k.add_argument("shell", choices=["bash", "zsh"])

    e = sub.add_parser("explain", help="show the plan, the LFTA/HFTA split and temporal properties")
    _common(e)
    e.add_argument("--format", choices=["text", "dot"], default="text")
    return ap


def _split_binding(text: str, what: str) -> tuple[str, str]:
    if "=" not in text:
        raise UsageError(f"{what} '{text}': expected NAME=VALUE")
    name, value = text.split("=", 1)
    if not name:
        raise UsageError(f"{what} '{text}': the name is empty")
    return name, value


def _source_binding(text: str) -> tuple[str, str]:
    """NAME=URI, or a bare URI with a scheme for the default interface."""
    scheme = text.partition(":")[0]
    if scheme in URI_SCHEMES and ("=" not in text or text.index(":") < text.index("=")):
        return DEFAULT_IFACE, text
    return _split_binding(text, "--source")


_FLAGS = [("the heartbeat interval", "--heartbeat-interval"), ("the CSV separator", "--csv-separator"),
          ("the stall intervals", "--stall-intervals"), ("clock ", "--clock "),
          ("max skew ", "--max-skew "), ("parameter ", "--param "), ("output ", "--output "),
          ("source ", "--source "), ("max_lfta_disorder", "--max-lfta-disorder"),
          ("max_hfta_disorder", "--max-hfta-disorder")]


def _flag_names(msg: str) -> str:
    """A shared validation message in the CLI's terms (flags, not keywords)."""
    for a, b in _FLAGS:
        if msg.startswith(a):
            return b + msg[len(a):]
    return msg


def _usage(fn, *a):
    try:
        return fn(*a)
    except UsageError as e:
        raise UsageError(_flag_names(str(e))) from None


def _interfaces(args, sources=(), skews=(), bounds=None) -> Interfaces:
    return build_interfaces(list(sources), list(skews), args.interfaces, bounds)


def _time_bounds(args) -> TimeBounds:
    """--out-of-order, --latency, --skew and --heartbeat-timeout."""
    b = TimeBounds()
    for flag, key, texts, into in (("--out-of-order", "out_of_order", args.out_of_order,
                                    b.out_of_order),
                                   ("--latency", "latency", args.latency, b.latency)):
        for text in texts:
            name, value = _split_binding(text, flag)
            into.append((name, check_seconds(f"{flag} {name}", key, value)))
    for text in args.skew:
        pair, value = _split_binding(text, "--skew")
        a, _, bb = pair.partition(":")
        parts = value.split(",")
        if not a or not bb or len(parts) != 2:
            raise UsageError(f"--skew '{text}': expected A:B=AFTER,BOUND (two interfaces, "
                             "wall-clock seconds after which B's timestamps are within BOUND "
                             "application seconds of A's)")
        where = f"--skew {a}:{bb}"
        b.skew.append((a, bb, check_seconds(where, "after", parts[0]),
                       check_seconds(where, "bound", parts[1])))
    if args.heartbeat_timeout is not None:
        b.heartbeat_timeout = check_seconds("--heartbeat-timeout", "timeout",
                                            args.heartbeat_timeout)
    if args.heartbeats:
        b.heartbeats = {}
        for text in args.heartbeats:
            key, value = _split_binding(text, "--heartbeats")
            b.heartbeats[key] = _setting_value(value)
    for text in args.time_unit:
        name, value = _split_binding(text, "--time-unit")
        where = f"--time-unit {name}"
        b.time_unit.append((name, check_time_unit(where, value), where))
    return b


def _setting_value(text: str):
    """A [heartbeats] value from the command line: an integer, a number, or
    the text itself (checked as the file's would be)."""
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def _runner_sets(ifaces: Interfaces) -> tuple[tuple[str, str], ...]:
    """The sets of an --interfaces file, as gsqlc-run's default memberships
    (the library serves any binding; the stand-alone runner has no TOML)."""
    return tuple((s, m) for s, members in ifaces.sets.items() for m in members)


def _options(args, **extra) -> CompileOptions:
    _usage(check_plan_options, args.max_lfta_disorder, args.max_hfta_disorder, args.flush)
    return CompileOptions(tuple(args.schema), tuple(args.library),
                          max_lfta_disorder=args.max_lfta_disorder,
                          max_hfta_disorder=args.max_hfta_disorder, flush=args.flush,
                          functions=tuple(args.functions), udf=tuple(args.udf), **extra)


def cmd_compile(args) -> int:
    out = Path(args.output_dir)
    if args.build:
        sets = _runner_sets(_interfaces(args))
        c = compile_queries(args.files, _options(args, sanitize=args.sanitize, werror=args.werror or None,
                                                 runner_sets=sets), out_dir=out)
        print(f"gsqlc: wrote {len(c.generated.files)} files to {out}", file=sys.stderr)
        print(f"gsqlc: built {c.built.library} and {c.built.runner}", file=sys.stderr)
        return EXIT_OK
    from .backend.codegen import generate
    sets = _runner_sets(_interfaces(args))
    plan = plan_queries(args.files, _options(args)).plan
    gen = generate(plan, sets, args.udf)
    gen.write(out)
    print(f"gsqlc: wrote {len(gen.files)} files to {out}", file=sys.stderr)
    return EXIT_OK


def cmd_explain(args) -> int:
    from .planner.explain import explain_dot, explain_text
    _interfaces(args)  # validated; sets are bound at run time
    qs = plan_queries(args.files, _options(args))
    sys.stdout.write(explain_dot(qs.plan) if args.format == "dot" else explain_text(qs.plan))
    return EXIT_OK


def cmd_trace(args) -> int:
    from .runtime.trace import plot, read, summary
    per_node, per_source = read(args.file)
    sys.stdout.write(summary(per_node, per_source))
    if args.plot:
        plot(per_node, args.plot, per_source)
        print(f"gsqlc: wrote {args.plot}", file=sys.stderr)
    return EXIT_OK


def _positive_int(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got '{text}'")
    return n


# the cores below which `gsqlc run` reads a capture on one thread unless
# --threads says otherwise: on 2 cores the split measured 0.92-1.21x of one
# thread (bench/README.md), the text output and the HFTAs being one more thread
CLI_AUTO_MIN_CORES = 3


class _TextFinal:
    """The HFTA run of a split CLI run (runtime/parallel.py): the LFTA
    streams from the slices' runs, the outputs to the text sinks."""

    def __init__(self, library, sinks, options, params, streams):
        self._args = (library, [], sinks, options, params)
        self._streams = streams
        self.stats: dict = {}
        self.report = ""
        self.handle = RunHandle()       # its counters, for the progress line

    def __iter__(self):
        from .errors import RunError
        res = run_library(*self._args, arrow_streams=self._streams, handle_signals=True,
                          cancel=self.handle)
        self.stats, self.report = res.stats, res.report
        if res.status != 0:
            raise RunError(res.error)
        yield from ()

    def cancel(self) -> None:   # the run ends with its inputs (the slices are cancelled)
        pass


def _split_run(args, library, files, bindings, outputs, options, params, sinks, qs,
               compile_options):
    """A run over capture files on several threads (runtime/parallel.py),
    or the Split saying why it stays on one (qs: the planned query set, or
    None when the build came from the input-keyed cache)."""
    if args.threads == 1:
        return Split(1, reason="one thread asked for")
    cores = machine_threads()
    if args.threads is None and cores < CLI_AUTO_MIN_CORES:
        return Split(cores, reason=(
            f"{cores} core(s): the runs of records and the run merging them would share them "
            "(no gain measured on 2 cores); --threads N splits"))
    paths = [u.partition(":")[2] for u in files.values() if u.partition(":")[0] == "pcap"]
    if args.threads is None and not any(
            os.path.isfile(f) and os.path.getsize(f) >= 2 * AUTO_MIN_BYTES
            for f in paths):
        # no need to plan: too small to split
        return Split(cores, reason="too few to split: no capture file of 32 MiB or more")
    # the machinery of a split run, imported only for one
    from .runtime import parallel
    reason = parallel.options_reason(options, True)
    if reason:
        return Split(args.threads or cores, reason=reason)
    cuts = parallel.CaptureCuts(library, files, args.threads)   # meanwhile: plan, imports
    plan = (qs if qs is not None else plan_queries(args.files, compile_options)).plan
    readers = {i: [n.name for n in ns] for i, ns in bindings.readers.items()}
    split = parallel.plan_split(plan, {}, readers, files, parallel.multi_member(bindings.members),
                                options, outputs, args.threads, library, cuts)
    if split.used <= 1:
        return split
    return parallel.SplitRun(
        library, split, parallel.lfta_streams(plan, outputs, bindings.readers, split), outputs,
        options, params, 0, "bytes", True,
        lambda streams: _TextFinal(library, sinks, options, params, streams),
        bindings.members)


def _finish_split(split):
    """Run a split run to its end: its result as run_library's."""
    from .errors import RunError
    from .runtime.runner import RunResult
    try:
        for _ in split:
            pass
    except RunError as e:
        return RunResult(1, str(e), split.report, split.stats)
    return RunResult(0, "", split.report, split.stats)


# report lines --quiet leaves out: they say what happened, not that input
# was lost or is suspect (malformed rows, late tuples, truncated captures
# and every "warning:" line stay)
_INFORMATIONAL = re.compile(r"gsqlc: (interrupted; |(source|node) .* (stalled|recovered): "
                            r"|\d+ more stall events |every input paused for the heartbeat)")


def _show_progress(args) -> bool:
    """Whether `gsqlc run` draws its progress line on stderr: --progress
    always, --quiet never; by default when stderr is a terminal whose TERM
    is not dumb and the output does not go to a terminal (the line would
    mix into it)."""
    if args.progress or args.quiet:
        return args.progress
    if is_dumb_terminal() or not sys.stderr.isatty():
        return False
    to_stdout = args.output_file in (None, "-")
    return not (to_stdout and sys.stdout.isatty())


def cmd_run(args) -> int:
    try:
        options = run_options(clock=args.clock, heartbeat_interval=args.heartbeat_interval,
                              csv_separator=args.csv_separator, csv_strict=args.csv_strict,
                              stall_intervals=args.stall_intervals, trace=args.trace,
                              batch=args.batch, columnar=args.columnar,
                              pcap_reader=args.pcap_reader, max_groups=args.max_groups)
    except UsageError as e:
        raise UsageError(_flag_names(str(e))) from None
    if args.ip_format != "text":
        options["ip_format"] = args.ip_format
    sources = [(n, normalize_uri(u)) for n, u in (_source_binding(s) for s in args.source)]
    for name, uri in sources:
        _usage(check_uri, name, uri)
    skews = []
    for text in args.max_skew:
        name, value = _split_binding(text, "--max-skew")
        skews.append((name, _usage(check_skew, name, value)))
    bounds = _time_bounds(args)
    ifaces = _interfaces(args, sources, skews, bounds)
    for name, _ in skews:
        if name not in ifaces.sources and name not in ifaces.sets:
            raise UsageError(f"--max-skew {name}: no --source binds an interface '{name}'")
    for flag, given in (("--out-of-order", bounds.out_of_order), ("--latency", bounds.latency),
                        ("--time-unit", [(n, u) for n, u, _ in bounds.time_unit])):
        for name, _ in given:
            if name not in ifaces.sources and name not in ifaces.sets:
                raise UsageError(f"{flag} {name}: no --source binds an interface '{name}'")
    params = dict(_split_binding(p, "--param") for p in args.param)
    compile_options = _options(args, sanitize=args.sanitize)
    # a query set built before runs from the input-keyed cache: no parsing,
    # planning or code generation (an error in a query is never cached)
    key = input_cache.input_key(args.files, compile_options)
    hit = input_cache.lookup(key)
    if hit is None:
        qs = plan_queries(args.files, compile_options)
        summary = qs.summary
        deps = input_cache.library_deps(qs, compile_options)
    else:
        summary = hit.summary
    # the bindings are checked before anything is built
    _usage(check_params, summary, params)
    bindings = _usage(resolve_bindings, summary, ifaces)
    outputs = _usage(outputs_of, summary, args.output)
    if args.format == "gdat" and len(outputs) > 1:
        raise UsageError(f"--format gdat writes one query's output (a GDAT file has one "
                         f"schema), but {len(outputs)} are chosen ({', '.join(outputs)}): "
                         "name one with --output")
    if hit is None:
        library = compile_planned(qs, compile_options).library
        input_cache.store(args.files, compile_options, key, deps, summary, library)
    else:
        library = hit.library
    options.update(time_options(ifaces, bindings))
    sinks = [(q, args.format, args.output_file) for q in outputs]
    split = _split_run(args, library, dict(bindings.sources), bindings, outputs, options, params,
                       sinks, qs if hit is None else None, compile_options)
    shown = (progress.ProgressOptions(colour=use_color(sys.stderr, color_mode_of(args)))
             if _show_progress(args) else None)
    if isinstance(split, Split):
        handle = RunHandle()
        with progress.line(shown, lambda: ([handle], [handle])):
            result = run_library(library, bindings.sources, sinks, options, params,
                                 handle_signals=True, set_members=bindings.members,
                                 cancel=handle)
        result.stats["threads"] = split.info()
    else:
        with progress.line(shown, split.progress_handles,
                           total_bytes=split.input_bytes_total()):
            result = _finish_split(split)
    report = result.report
    if report and args.quiet:
        report = "".join(line for line in report.splitlines(keepends=True)
                         if not _INFORMATIONAL.match(line))
    if report:
        color = use_color(sys.stderr, color_mode_of(args))
        sys.stderr.write("".join(color_report_line(line, color) + "\n"
                                 for line in report.rstrip("\n").split("\n")))
    if args.stats:
        import json
        print(json.dumps(result.stats, indent=2), file=sys.stderr)
    if result.status != 0:
        if result.stats.get("output_closed"):
            # the reader of the output went away (`gsqlc run ... | head`):
            # stop as a tool killed by SIGPIPE does, without a message
            return EXIT_OUTPUT_CLOSED
        _print_error(args, result.error)
        return EXIT_RUNTIME
    return EXIT_OK


def cmd_completion(args) -> int:
    """The completion script of `args.shell`, made from the argument parser
    by shtab (so it cannot drift from the options)."""
    import shtab
    parser = make_parser()
    files = {"FILE", "SCHEMA", "PATH", "PNG"}
    for action in _all_actions(parser):
        if action.metavar in files or action.dest in ("files", "file"):
            action.complete = shtab.FILE   # type: ignore[attr-defined]
        elif action.metavar == "DIR":
            action.complete = shtab.DIRECTORY   # type: ignore[attr-defined]
    sys.stdout.write(shtab.complete(parser, shell=args.shell))
    return EXIT_OK


def _all_actions(parser: argparse.ArgumentParser):
    for action in parser._actions:
        yield action
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _all_actions(sub)


def _print_error(args, message: str) -> None:
    color = use_color(sys.stderr, color_mode_of(args))
    print(f"gsqlc: {style('error:', 'error', color)} {message}", file=sys.stderr)


def _internal_error(exc: BaseException) -> int:
    """A bug in gsqlc: say so, and keep the traceback for a bug report."""
    import tempfile
    import traceback
    text = "".join(traceback.format_exception(exc))
    try:
        fd, path = tempfile.mkstemp(prefix="gsqlc-internal-error-", suffix=".txt")
        with open(fd, "w") as f:
            f.write(f"gsqlc {__version__}\nargv: {sys.argv!r}\n\n{text}")
        where = f"the traceback is in {path}"
    except OSError:
        where = "traceback:\n" + text
    print(f"gsqlc: internal error: {type(exc).__name__}: {exc}\n"
          f"gsqlc: this is a bug in gsqlc, not in your query; {where} "
          "(please attach it to a bug report)", file=sys.stderr)
    return EXIT_RUNTIME


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = make_parser().parse_args(argv)
    try:
        return {"compile": cmd_compile, "run": cmd_run, "explain": cmd_explain,
                "trace": cmd_trace, "completion": cmd_completion}[args.command](args)
    except QueryError as e:
        print(render(e, use_color(sys.stderr, color_mode_of(args))), file=sys.stderr)
        return e.exit_status
    except BuildError as e:
        print(f"gsqlc: internal error: the generated code failed to build:\n{e}", file=sys.stderr)
        return e.exit_status
    except InternalError as e:
        return _internal_error(e)
    except GsqlcError as e:   # usage errors (exit 2) and run-time failures (exit 1)
        _print_error(args, str(e))
        return e.exit_status
    except BrokenPipeError:
        return EXIT_OUTPUT_CLOSED
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # noqa: BLE001 - anything else is a bug in gsqlc
        return _internal_error(e)


if __name__ == "__main__":
    sys.exit(main())
