"""The gsqlc command line: compile, run, explain.

Exit status: 0 ok, 2 query or usage error (message names file:line:col),
1 run-time failure.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional, Sequence

from . import __version__
from .build import BuildError, build
from .codegen import generate
from .diagnostics import GsqlError
from .driver import QuerySet, load_queryset
from .interfaces import DEFAULT_IFACE, InterfaceError, Interfaces
from .interfaces import build as build_interfaces
from .runner import RunError, SetupError, run_library

EXIT_OK, EXIT_RUNTIME, EXIT_USAGE = 0, 1, 2
URI_SCHEMES = {"csv": "csv", "pcap": "pcap", "pcap-live": "pcap"}


class UsageError(Exception):
    pass


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("files", nargs="+", metavar="FILE", help="GSQL query files")
    p.add_argument("--schema", action="append", default=[], metavar="SCHEMA",
                   help="schema file with PROTOCOL/STREAM declarations (repeatable; "
                        "default: gsqlc's packet schema)")
    p.add_argument("-L", "--library", action="append", default=[], metavar="DIR",
                   help="directory holding query libraries (FROM LIB/query)")
    p.add_argument("--interfaces", metavar="FILE",
                   help="interfaces file (TOML): [interface.NAME] source/max_skew, "
                        "[set.NAME] members")


def make_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="gsqlc", description=(
        "Compile GSQL stream queries into native code (C LFTAs, C++ HFTAs) and run them."))
    ap.add_argument("--version", action="version", version=f"gsqlc {__version__}")
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
                   help="bind interface NAME to csv:PATH, csv:-, pcap:PATH or pcap-live:IFACE")
    r.add_argument("--output", action="append", default=[], metavar="QUERY",
                   help="query whose output stream to print (default: every query no other reads)")
    r.add_argument("--output-file", metavar="PATH", help="write the output here instead of stdout")
    r.add_argument("--format", choices=["pipe", "csv", "jsonl"], default="pipe")
    r.add_argument("--clock", default="wall", metavar="wall|data|fixed:T")
    r.add_argument("--heartbeat-interval", default="1", metavar="SECONDS|off",
                   help="seconds of the run's clock between temporal updates (heartbeats); "
                        "off disables them")
    r.add_argument("--max-skew", action="append", default=[], metavar="NAME=SECONDS",
                   help="maximum skew of interface NAME's timestamps behind the clock: an idle "
                        "interface's time advances from the clock less this; later tuples are "
                        "discarded and counted")
    r.add_argument("--stall-intervals", type=int, default=3, metavar="N",
                   help="report a source or LFTA silent for N heartbeat intervals as stalled")
    r.add_argument("--trace", metavar="FILE",
                   help="write every heartbeat's path through the operators as JSON lines")
    r.add_argument("--csv-separator", default=",", metavar="C")
    r.add_argument("--csv-strict", action="store_true",
                   help="reject CSV rows holding a value that is not valid for its type")
    r.add_argument("--param", action="append", default=[], metavar="NAME=VALUE")
    r.add_argument("--stats", action="store_true", help="print run counters as JSON on stderr")
    r.add_argument("--sanitize", action="store_true",
                   help="build with AddressSanitizer and UndefinedBehaviorSanitizer")

    t = sub.add_parser("trace", help="summarise (and plot) the heartbeat traces of a run")
    t.add_argument("file", metavar="FILE", help="the JSON-lines file written by run --trace")
    t.add_argument("--plot", metavar="PNG", help="draw per-operator queueing delay over time")

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


_PCAP_MAGIC = {b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\x4d\x3c\xb2\xa1",
               b"\xa1\xb2\x3c\x4d", b"\x0a\x0d\x0d\x0a"}


def normalize_uri(uri: str) -> str:
    """A bare path (as in `--source csv=data.txt`) becomes csv:PATH, or
    pcap:PATH when the file starts with a pcap/pcapng magic number."""
    scheme, sep, _ = uri.partition(":")
    if sep and scheme in URI_SCHEMES:
        return uri
    if uri == "-":
        return "csv:-"
    try:
        with open(uri, "rb") as f:
            if f.read(4) in _PCAP_MAGIC:
                return "pcap:" + uri
    except OSError:
        pass
    return "csv:" + uri


def _source_binding(text: str) -> tuple[str, str]:
    """NAME=URI, or a bare URI with a scheme for the default interface."""
    scheme = text.partition(":")[0]
    if scheme in URI_SCHEMES and ("=" not in text or text.index(":") < text.index("=")):
        return DEFAULT_IFACE, text
    return _split_binding(text, "--source")


def _check_uri(name: str, uri: str) -> str:
    scheme, sep, rest = uri.partition(":")
    if not sep or scheme not in URI_SCHEMES or not rest:
        raise UsageError(f"--source {name}={uri}: expected csv:PATH, csv:-, pcap:PATH or "
                         "pcap-live:IFACE")
    if scheme in ("csv", "pcap") and rest != "-":
        p = Path(rest)
        if not p.exists():
            raise UsageError(f"--source {name}={uri}: {rest}: no such file")
        if p.is_dir():
            raise UsageError(f"--source {name}={uri}: {rest} is a directory")
    return URI_SCHEMES[scheme]


def resolve_bindings(qs: QuerySet, ifaces: Interfaces) -> list[tuple[str, str]]:
    """The (interface, URI) pairs the run binds: every interface an LFTA reads
    must be bound, by a source whose kind suits the LFTA's protocol."""
    out: list[tuple[str, str]] = []
    for n in qs.plan.nodes:
        if n.level != "lfta" or any(i == n.iface for i, _ in out):
            continue
        uri = ifaces.sources.get(n.iface)
        if uri is None:
            shown = f"[{n.iface}].{n.protocol.name}" if n.iface != ifaces.default else n.protocol.name
            raise UsageError(
                f"interface '{n.iface}' is not bound: query {n.query.name} reads {shown}; "
                f"pass --source {n.iface}=URI" + (" (or bind it in an --interfaces file)"))
        _check_uri(n.iface, uri)
        kind = URI_SCHEMES[uri.partition(":")[0]]
        pk = n.protocol.source_kind or "csv"
        if kind != pk:
            raise UsageError(
                f"--source {n.iface}={uri}: query {n.query.name} reads PROTOCOL "
                f"{n.protocol.name}, whose fields come from "
                f"{'packets (pcap:PATH or pcap-live:IFACE)' if pk == 'pcap' else 'CSV rows (csv:PATH)'}")
        out.append((n.iface, uri))
    used = {i for i, _ in out}
    for name in sorted(set(ifaces.sources) - used):
        print(f"gsqlc: warning: interface {name} is bound but no query reads it", file=sys.stderr)
    return out


def _outputs(qs: QuerySet, wanted: list[str]) -> list[str]:
    names = [q.name for q in qs.queries]
    if not wanted:
        return qs.leaves()
    for w in wanted:
        if w not in names:
            import difflib
            close = difflib.get_close_matches(w, names, n=3)
            hint = ("; did you mean " + " or ".join(close) + "?") if close else ""
            raise UsageError(f"--output {w}: no query of that name (queries: "
                             f"{', '.join(names)}){hint}")
    return wanted


def _interfaces(args, sources=(), skews=()) -> Interfaces:
    try:
        return build_interfaces(list(sources), list(skews), args.interfaces)
    except InterfaceError as e:
        raise UsageError(str(e)) from None


def cmd_compile(args) -> int:
    qs = load_queryset(args.files, args.schema, args.library, _interfaces(args))
    gen = generate(qs.plan)
    out = Path(args.output_dir)
    gen.write(out)
    print(f"gsqlc: wrote {len(gen.files)} files to {out}", file=sys.stderr)
    if args.build:
        res = build(gen, out, sanitize=args.sanitize, werror=args.werror)
        print(f"gsqlc: built {res.library} and {res.runner}", file=sys.stderr)
    return EXIT_OK


def cmd_explain(args) -> int:
    from .explain import explain_dot, explain_text
    qs = load_queryset(args.files, args.schema, args.library, _interfaces(args))
    sys.stdout.write(explain_dot(qs) if args.format == "dot" else explain_text(qs))
    return EXIT_OK


def cmd_trace(args) -> int:
    from .trace import TraceError, load, plot, summary
    try:
        per_node = load(args.file)
        sys.stdout.write(summary(per_node))
        if args.plot:
            plot(per_node, args.plot)
            print(f"gsqlc: wrote {args.plot}", file=sys.stderr)
    except TraceError as e:
        raise UsageError(str(e)) from None
    return EXIT_OK


def cmd_run(args) -> int:
    if args.heartbeat_interval != "off":
        try:
            hb = float(args.heartbeat_interval)
        except ValueError:
            hb = float("nan")
        if not hb > 0:
            raise UsageError(f"--heartbeat-interval must be positive seconds or off, "
                             f"got {args.heartbeat_interval}")
    if len(args.csv_separator) != 1:
        raise UsageError(f"--csv-separator must be one character, got '{args.csv_separator}'")
    clock = args.clock
    if not (clock in ("wall", "data") or (clock.startswith("fixed:") and clock[6:].isdigit())):
        raise UsageError(f"--clock {clock}: expected wall, data or fixed:SECONDS")
    sources = [(n, normalize_uri(u)) for n, u in (_source_binding(s) for s in args.source)]
    for name, uri in sources:
        _check_uri(name, uri)
    if args.stall_intervals < 1:
        raise UsageError(f"--stall-intervals must be at least 1, got {args.stall_intervals}")
    skews = []
    for text in args.max_skew:
        name, value = _split_binding(text, "--max-skew")
        try:
            skew = float(value)
        except ValueError:
            raise UsageError(f"--max-skew {text}: '{value}' is not a number of seconds") from None
        if not skew >= 0:
            raise UsageError(f"--max-skew {text}: the skew must not be negative")
        skews.append((name, skew))
    ifaces = _interfaces(args, sources, skews)
    for name, _ in skews:
        if name not in ifaces.sources and name not in ifaces.sets:
            raise UsageError(f"--max-skew {name}: no --source binds an interface '{name}'")
    params = dict(_split_binding(p, "--param") for p in args.param)
    qs = load_queryset(args.files, args.schema, args.library, ifaces)
    declared = {n for q in qs.queries for n in q.params}
    for name in params:
        if name not in declared:
            raise UsageError(f"--param {name}: no query declares it in a PARAM block"
                             + (f" (declared: {', '.join(sorted(declared))})" if declared else ""))
    for q in qs.queries:
        for name in q.params:
            if name not in params:
                raise UsageError(f"query {q.name} needs parameter ${name}: pass --param {name}=VALUE")
    bindings = resolve_bindings(qs, ifaces)
    outputs = _outputs(qs, args.output)
    gen = generate(qs.plan)
    res = build(gen, sanitize=args.sanitize)
    options = {"clock": clock, "csv_separator": args.csv_separator,
               "heartbeat_interval": args.heartbeat_interval,
               "stall_intervals": str(args.stall_intervals)}
    for iface, skew in ifaces.skews.items():
        if any(iface == b for b, _ in bindings):
            options[f"max_skew:{iface}"] = repr(skew)
    if args.trace:
        options["trace"] = args.trace
    if args.csv_strict:
        options["csv_strict"] = "1"
    sinks = [(q, args.format, args.output_file) for q in outputs]
    try:
        result = run_library(res.library, bindings, sinks, options, params)
    except SetupError as e:
        raise UsageError(str(e)) from None
    if result.report:
        sys.stderr.write(result.report if result.report.endswith("\n") else result.report + "\n")
    if args.stats:
        import json
        print(json.dumps(result.stats, indent=2), file=sys.stderr)
    if result.status != 0:
        print(f"gsqlc: error: {result.error}", file=sys.stderr)
        return EXIT_RUNTIME
    return EXIT_OK


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = make_parser().parse_args(argv)
    try:
        return {"compile": cmd_compile, "run": cmd_run, "explain": cmd_explain,
                "trace": cmd_trace}[args.command](args)
    except GsqlError as e:
        print(str(e), file=sys.stderr)
        return EXIT_USAGE
    except UsageError as e:
        print(f"gsqlc: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except BuildError as e:
        print(f"gsqlc: internal error: the generated code failed to build:\n{e}", file=sys.stderr)
        return EXIT_RUNTIME
    except RunError as e:
        print(f"gsqlc: error: {e}", file=sys.stderr)
        return EXIT_RUNTIME
    except BrokenPipeError:
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
