"""The gsqlc command line: compile, run, explain, trace.

A thin face over the pipeline (compile_queries / plan_queries) and the
runtime (bindings, runner).  Exit status: 0 ok, 2 query or usage error
(a query error names file:line:col), 1 run-time failure or internal error
(a bug in gsqlc: "internal error", the traceback kept in a file for a bug
report).
"""
from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Optional, Sequence

from . import __version__, input_cache
from .errors import BuildError, GsqlcError, InternalError, QueryError, SettingError, UsageError, render
from .pipeline import CompileOptions, check_plan_options, compile_planned, compile_queries, plan_queries
from .planner.policies import FLUSH_POLICIES
from .runtime import param_file, progress, session
from .runtime.bindings import URI_SCHEMES, normalize_uri
from .runtime.interfaces import DEFAULT_IFACE, Interfaces, TimeBounds
from .runtime.interfaces import build as build_interfaces
from .runtime.run import Run, TextOutput, run_to_end
from .runtime.run_flags import add_run_flags
from .terminal import (
    COLOR_MODES,
    color_mode_of,
    color_report_line,
    is_dumb_terminal,
    style,
    use_color,
)

if TYPE_CHECKING:   # planned only when a run may split
    from .planner.plan import Plan

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
    p.add_argument("--lfta-in-kernel", action="store_true",
                   help="run each live interface's aggregating LFTA in the kernel's XDP hook "
                        "where it can (explain says which and why not); needs clang-14 and "
                        "libbpf-dev to build, root to run")
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

    r = sub.add_parser("run", help="compile (cached), build and run",
                       description="Compile the queries (cached), build them and run them. "
                       "The options that concern running are those of the stand-alone runner "
                       "gsqlc-run too (gsqlc compile --build).")
    _common(r)
    shown = r.add_mutually_exclusive_group()
    # the options that concern running: one table with gsqlc-run's
    add_run_flags(r, groups={"--quiet": shown})
    r.add_argument("--threads", type=_positive_int, metavar="N",
                   help="threads to run on (default: the machine's cores when it has 3 or "
                        "more, each given at least 16 MiB of capture; else 1): a classic pcap "
                        "file is cut into runs of records, "
                        "each read by its LFTAs on a thread of its own, the HFTAs merging "
                        "them; the results equal one thread's.  Other sources, and runs the "
                        "cut cannot keep equal, use one thread (--stats says why)")
    shown.add_argument("--progress", action="store_true",
                       help="draw the live progress line on stderr even when it is not a "
                            "terminal (default: only on a terminal, TERM not dumb, the output "
                            "not going to that terminal)")
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


def _interfaces(args: argparse.Namespace) -> Interfaces:
    """The --interfaces file's interfaces (compile and explain check it)."""
    return build_interfaces([], [], args.interfaces)


def _time_bounds(args: argparse.Namespace) -> TimeBounds:
    """--out-of-order, --latency, --skew, --heartbeat-timeout, --heartbeats
    and --time-unit, parsed (checked by the session, in the flags' order)."""
    skews: list[tuple[tuple[str, str], list[str]]] = []
    for text in args.skew:
        pair, value = _split_binding(text, "--skew")
        a, _, b = pair.partition(":")
        parts = value.split(",")
        if not a or not b or len(parts) != 2:
            raise UsageError(f"--skew '{text}': expected A:B=AFTER,BOUND (two interfaces, "
                             "wall-clock seconds after which B's timestamps are within BOUND "
                             "application seconds of A's)")
        skews.append(((a, b), parts))
    heartbeats: dict[str, Any] = {}
    for text in args.heartbeats:
        key, value = _split_binding(text, "--heartbeats")
        heartbeats[key] = _setting_value(value)
    return session.time_bounds(
        [_split_binding(t, "--out-of-order") for t in args.out_of_order],
        [_split_binding(t, "--latency") for t in args.latency], skews,
        args.heartbeat_timeout, heartbeats,
        [_split_binding(t, "--time-unit") for t in args.time_unit])


def _setting_value(text: str) -> int | float | str:
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


def _options(args: argparse.Namespace, **extra: Any) -> CompileOptions:
    check_plan_options(args.max_lfta_disorder, args.max_hfta_disorder, args.flush)
    return CompileOptions(tuple(args.schema), tuple(args.library),
                          max_lfta_disorder=args.max_lfta_disorder,
                          max_hfta_disorder=args.max_hfta_disorder, flush=args.flush,
                          functions=tuple(args.functions), udf=tuple(args.udf),
                          lfta_in_kernel=args.lfta_in_kernel, **extra)


def cmd_compile(args: argparse.Namespace) -> int:
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


def cmd_explain(args: argparse.Namespace) -> int:
    from .planner.explain import explain_dot, explain_text
    _interfaces(args)  # validated; sets are bound at run time
    qs = plan_queries(args.files, _options(args))
    sys.stdout.write(explain_dot(qs.plan) if args.format == "dot" else explain_text(qs.plan))
    return EXIT_OK


def cmd_trace(args: argparse.Namespace) -> int:
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


def _show_progress(args: argparse.Namespace) -> bool:
    """Whether `gsqlc run` draws its progress line on stderr: --progress
    always, --quiet never; by default when stderr is a terminal whose TERM
    is not dumb and the output does not go to a terminal (the line would
    mix into it)."""
    if args.progress or args.quiet:
        shown: bool = args.progress
        return shown
    if is_dumb_terminal() or not sys.stderr.isatty():
        return False
    to_stdout = args.output_file in (None, "-")
    return not (to_stdout and sys.stdout.isatty())


def _run_request(args: argparse.Namespace, from_file: dict[str, str]) -> session.RunRequest:
    """The run `gsqlc run`'s flags ask for (a flag not given: the session's
    default); from_file: the values --param-file gave."""
    given = {"clock": args.clock, "heartbeat_interval": args.heartbeat_interval,
             "csv_separator": args.csv_separator, "stall_intervals": args.stall_intervals,
             "trace": args.trace, "batch": args.batch, "columnar": args.columnar,
             "prefilter": args.prefilter, "pcap_reader": args.pcap_reader,
             "max_groups": args.max_groups}
    return session.RunRequest(
        sources=[(n, normalize_uri(u)) for n, u in (_source_binding(s) for s in args.source)],
        interfaces_file=args.interfaces,
        max_skew=[_split_binding(t, "--max-skew") for t in args.max_skew],
        bounds=_time_bounds(args),
        params={**from_file, **dict(_split_binding(p, "--param") for p in args.param)},
        output=args.output or None, all_outputs=True,
        options=session.RunOptions(**{k: v for k, v in given.items() if v is not None},
                                   csv_strict=args.csv_strict, csv_header=args.csv_header,
                                   report="losses" if args.quiet else "all"))


def cmd_run(args: argparse.Namespace) -> int:
    # the run starts with --param-file's values, each --param over them; on
    # SIGHUP a value that changed in the file since goes to the run (one the
    # file left alone keeps its --param)
    from_file = ({name: v for name, (v, _) in param_file.read(args.param_file).items()}
                 if args.param_file else {})
    hup_early: list[int] = []
    if args.param_file:
        if args.threads is not None and args.threads > 1:
            raise UsageError("--param-file runs on one thread (a change takes effect at one "
                             "instant of the run): drop --threads")
        # a SIGHUP before the run starts (while it is built) is kept for it
        signal.signal(signal.SIGHUP, lambda sig, frame: hup_early.append(sig))
    settled = session.settle(_run_request(args, from_file))
    compile_options = _options(args, sanitize=args.sanitize)
    # a query set built before runs from the input-keyed cache: no parsing,
    # planning or code generation (an error in a query is never cached)
    key = input_cache.input_key(args.files, compile_options)
    hit = input_cache.lookup(key)
    qs = plan_queries(args.files, compile_options) if hit is None else None
    if qs is not None:
        summary = qs.summary
    else:
        assert hit is not None   # planned exactly when no build is cached
        summary = hit.summary
    # the bindings are checked before anything is built
    prep = session.bind(summary, settled)
    fmt = args.format or "pipe"
    if fmt == "gdat" and len(prep.outputs) > 1:
        raise UsageError(f"--format gdat writes one query's output (a GDAT file has one "
                         f"schema), but {len(prep.outputs)} are chosen "
                         f"({', '.join(prep.outputs)}): name one with --output")
    if qs is not None:
        deps = input_cache.library_deps(qs, compile_options)
        library = compile_planned(qs, compile_options).library
        input_cache.store(args.files, compile_options, key, deps, summary, library)
    else:
        assert hit is not None
        library = hit.library

    def plan() -> Plan:   # planned only when a split is possible (a cache hit has none)
        return (qs if qs is not None else plan_queries(args.files, compile_options)).plan
    # a parameter file read again on SIGHUP: one run, whose instant a change has
    threads = 1 if args.param_file else args.threads
    split = session.decide_split(prep, library, plan, threads, captures_need_cores=True)
    shown = (progress.ProgressOptions(colour=use_color(sys.stderr, color_mode_of(args)))
             if _show_progress(args) else None)
    output = TextOutput([(q, fmt, args.output_file) for q in prep.outputs],
                        args.ip_format or "text")
    run = session.start(prep, library, output, split, plan, shown)
    if args.param_file:
        assert isinstance(run, Run)   # one thread (threads=1 above)
        run.handle.on_hup = param_file.Reloader(args.param_file, from_file,
                                                run.handle.change_param)
        if hup_early:    # read again now: its values are the ones the run starts with
            run.handle.on_hup()
    result = run_to_end(run)
    report = result.report
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


def cmd_completion(args: argparse.Namespace) -> int:
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


def _all_actions(parser: argparse.ArgumentParser) -> Iterator[argparse.Action]:
    for action in parser._actions:
        yield action
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _all_actions(sub)


def _print_error(args: argparse.Namespace, message: str) -> None:
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
    except SettingError as e:   # a setting's bad value, named by its flag
        _print_error(args, e.in_flags())
        return e.exit_status
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
