"""The Python API: compile GSQL once, run it over files or Arrow data.

    import gsqlc
    qs = gsqlc.compile(["q.gsql"], schema="schema.txt")     # parse, generate, build (cached)
    for batch in qs.run(sources={"csv": "csv:data.csv"}, output="per_src"):
        ...                                                 # pyarrow.RecordBatch, as produced
    qs.run(sources={"csv": table}, output="per_src")        # Arrow table / batches / pandas

A run drives the compiled library through its C ABI with cffi (ABI mode: no
compiler at load time) on a background thread: Arrow inputs are handed over
as Arrow C streams (the runtime reads their buffers in place) and each
output batch comes back through the Arrow C data interface.  The CLI's
`gsqlc run` validates its options and binds its sources with the same
functions (run_options, resolve_bindings, execute).
"""
from __future__ import annotations

import os
import queue
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Optional, Sequence, Union

from .build import BuildResult, build
from .codegen import GeneratedSet, generate
from .diagnostics import UsageError
from .driver import QuerySet, load_queryset
from .interfaces import DEFAULT_IFACE, InterfaceError, Interfaces
from .plan import TABLE_WAYS
from .interfaces import build as build_interfaces
from .interfaces import check_skew as _skew_seconds
from . import runner
from .runner import RunError, SetupError

URI_SCHEMES = {"csv": "csv", "pcap": "pcap", "pcap-live": "pcap"}
_PCAP_MAGIC = {b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\x4d\x3c\xb2\xa1",
               b"\xa1\xb2\x3c\x4d", b"\x0a\x0d\x0d\x0a"}

PathLike = Union[str, os.PathLike]


# ------------------------------------------------------------ options


def run_options(*, clock: str = "wall", heartbeat_interval: Union[str, float] = "1",
                csv_separator: str = ",", csv_strict: bool = False,
                stall_intervals: int = 3, trace: Optional[str] = None) -> dict[str, str]:
    """Validated runtime options (the CLI's flags and run()'s keywords)."""
    hb = str(heartbeat_interval)
    if hb != "off":
        try:
            v = float(hb)
        except ValueError:
            v = float("nan")
        if not v > 0:
            raise UsageError(f"the heartbeat interval must be positive seconds or off, got {hb}")
    if len(csv_separator) != 1:
        raise UsageError(f"the CSV separator must be one character, got '{csv_separator}'")
    if not (clock in ("wall", "data") or (clock.startswith("fixed:") and clock[6:].isdigit())):
        raise UsageError(f"clock {clock}: expected wall, data or fixed:SECONDS")
    if not isinstance(stall_intervals, int) or stall_intervals < 1:
        raise UsageError(f"the stall intervals must be an integer of at least 1, got {stall_intervals}")
    opts = {"clock": clock, "csv_separator": csv_separator, "heartbeat_interval": hb,
            "stall_intervals": str(stall_intervals)}
    if trace:
        opts["trace"] = str(trace)
    if csv_strict:
        opts["csv_strict"] = "1"
    return opts


def check_skew(name: str, value) -> float:
    try:
        return _skew_seconds(f"max skew {name}={value}", value)
    except InterfaceError as e:
        raise UsageError(str(e)) from None


def check_params(qs: QuerySet, params: Mapping[str, str]) -> None:
    declared = {n for q in qs.queries for n in q.params}
    for name in params:
        if name not in declared:
            raise UsageError(f"parameter {name}: no query declares it in a PARAM block"
                             + (f" (declared: {', '.join(sorted(declared))})" if declared else ""))
    for q in qs.queries:
        for name in q.params:
            if name not in params:
                raise UsageError(f"query {q.name} needs parameter ${name}: pass --param "
                                 f"{name}=VALUE (params={{'{name}': ...}} in Python)")


def outputs_of(qs: QuerySet, wanted: Sequence[str]) -> list[str]:
    names = [q.name for q in qs.queries]
    if not wanted:
        return qs.leaves()
    for w in wanted:
        if w not in names:
            import difflib
            close = difflib.get_close_matches(w, names, n=3)
            hint = ("; did you mean " + " or ".join(close) + "?") if close else ""
            raise UsageError(f"output {w}: no query of that name (queries: "
                             f"{', '.join(names)}){hint}")
    return list(wanted)


# ------------------------------------------------------------ sources


def normalize_uri(uri: str) -> str:
    """A bare path becomes csv:PATH, or pcap:PATH when the file starts with a
    pcap/pcapng magic number."""
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


def check_uri(name: str, uri: str) -> str:
    """The source kind ('csv' or 'pcap') of a URI, or a UsageError."""
    scheme, sep, rest = uri.partition(":")
    if not sep or scheme not in URI_SCHEMES or not rest:
        raise UsageError(f"source {name}={uri}: expected csv:PATH, csv:-, pcap:PATH or "
                         "pcap-live:IFACE")
    if scheme in ("csv", "pcap") and rest != "-":
        p = Path(rest)
        if not p.exists():
            raise UsageError(f"source {name}={uri}: {rest}: no such file")
        if p.is_dir():
            raise UsageError(f"source {name}={uri}: {rest} is a directory")
    return URI_SCHEMES[scheme]


ARROW = "arrow"   # the source kind of an in-memory Arrow source


def resolve_bindings(qs: QuerySet, ifaces: Interfaces,
                     arrow: Iterable[str] = (), warn=None) -> list[tuple[str, str]]:
    """The (interface, URI) pairs the run binds: every interface an LFTA
    reads must be bound, by a source whose kind suits the LFTA's protocol.
    Interfaces in `arrow` are bound to Arrow data (URI 'arrow')."""
    arrow = set(arrow)
    out: list[tuple[str, str]] = []
    for n in qs.plan.nodes:
        if n.level != "lfta" or any(i == n.iface for i, _ in out):
            continue
        pk = n.protocol.source_kind or "csv"
        if n.iface in arrow:
            if pk != "csv":
                raise UsageError(
                    f"source {n.iface}: query {n.query.name} reads PROTOCOL {n.protocol.name}, "
                    "whose fields come from packets; Arrow data feeds PROTOCOLs of named "
                    "columns (get_csv_* fields), e.g. PACKETS of gsqlc.PACKET_TABLE_SCHEMA "
                    "for a table from gsqlc.read_pcap")
            out.append((n.iface, ARROW))
            continue
        uri = ifaces.sources.get(n.iface)
        if uri is None:
            shown = f"[{n.iface}].{n.protocol.name}" if n.iface != ifaces.default else n.protocol.name
            raise UsageError(
                f"interface '{n.iface}' is not bound: query {n.query.name} reads {shown}; "
                f"bind it with --source {n.iface}=URI (or in an --interfaces file), or "
                f"sources={{'{n.iface}': ...}} in Python")
        kind = check_uri(n.iface, uri)
        if kind != pk:
            raise UsageError(
                f"source {n.iface}={uri}: query {n.query.name} reads PROTOCOL "
                f"{n.protocol.name}, whose fields come from "
                f"{'packets (pcap:PATH or pcap-live:IFACE)' if pk == 'pcap' else 'CSV rows (csv:PATH) or Arrow data'}")
        out.append((n.iface, uri))
    used = {i for i, _ in out}
    for name in sorted((set(ifaces.sources) | arrow) - used):
        (warn or _warn)(f"interface {name} is bound but no query reads it")
    return out


def _warn(msg: str) -> None:
    print(f"gsqlc: warning: {msg}", file=sys.stderr)


def _in_memory(obj: Any) -> bool:
    """Whether an Arrow source is data at hand (not a reader or iterator
    that may be a live feed)."""
    import pyarrow as pa
    return isinstance(obj, (pa.Table, pa.RecordBatch)) or \
        (type(obj).__module__ or "").startswith("pandas")


def as_record_batch_reader(obj: Any, name: str):
    """An Arrow source as a pyarrow.RecordBatchReader, without copying:
    a Table, a RecordBatch, a RecordBatchReader, a pandas DataFrame, anything
    with __arrow_c_stream__, or an iterable of RecordBatches."""
    import pyarrow as pa
    if isinstance(obj, pa.RecordBatchReader):
        return obj
    if isinstance(obj, pa.Table):
        return obj.to_reader()
    if isinstance(obj, pa.RecordBatch):
        return pa.RecordBatchReader.from_batches(obj.schema, [obj])
    mod = type(obj).__module__ or ""
    if mod.startswith("pandas"):
        return pa.Table.from_pandas(obj, preserve_index=False).to_reader()
    if hasattr(obj, "__arrow_c_stream__"):
        return pa.RecordBatchReader.from_stream(obj)
    if isinstance(obj, Iterable) and not isinstance(obj, (str, bytes)):
        it = iter(obj)
        try:
            first = next(it)
        except StopIteration:
            raise UsageError(f"source {name}: the iterable of record batches is empty "
                             "(give a pyarrow Table with a schema for no rows)") from None
        if isinstance(first, pa.Table):
            first_batches = first.to_batches()
            schema = first.schema
        elif isinstance(first, pa.RecordBatch):
            first_batches, schema = [first], first.schema
        else:
            raise UsageError(f"source {name}: expected pyarrow RecordBatches, got {type(first).__name__}")

        def batches():
            yield from first_batches
            for b in it:
                if isinstance(b, pa.Table):
                    yield from b.to_batches()
                else:
                    yield b
        return pa.RecordBatchReader.from_batches(schema, batches())
    raise UsageError(f"source {name}: expected a URI (csv:PATH, pcap:PATH), a pyarrow Table, "
                     f"RecordBatch or RecordBatchReader, a pandas DataFrame or an iterable of "
                     f"record batches, got {type(obj).__name__}")


# ------------------------------------------------------------ compile


def _as_list(x) -> list[str]:
    if x is None:
        return []
    if isinstance(x, (str, os.PathLike)):
        return [os.fspath(x)]
    return [os.fspath(p) for p in x]


def _interfaces(sources: Mapping[str, Any], skews: Mapping[str, float],
                interfaces_file: Optional[str]) -> tuple[Interfaces, dict[str, list]]:
    """Interfaces from run()'s sources: a URI binds an interface, a list binds
    an interface set (members NAME.0, NAME.1, ...); Arrow data is kept aside
    (returned by member interface name)."""
    pairs: list[tuple[str, str]] = []
    arrow: dict[str, Any] = {}
    for name, value in sources.items():
        name = name or DEFAULT_IFACE
        values = value if isinstance(value, list) else [value]
        for i, v in enumerate(values):
            if isinstance(v, (str, os.PathLike)):
                pairs.append((name, normalize_uri(os.fspath(v))))
            else:
                # an Arrow member: a placeholder URI marks its place in the set
                member = name if len(values) == 1 else f"{name}.{i}"
                arrow[member] = v
                pairs.append((name, f"{ARROW}:{member}"))
    try:
        ifaces = build_interfaces(pairs, list(skews.items()), interfaces_file)
    except InterfaceError as e:
        raise UsageError(str(e)) from None
    return ifaces, arrow


@dataclass
class _Build:
    queryset: QuerySet
    generated: GeneratedSet
    built: BuildResult


class CompiledQuerySet:
    """Queries parsed, planned, generated and built into a shared library
    (cached by content).  run() executes it; nothing is global, so several
    runs may proceed at once."""

    def __init__(self, files: list[str], schema: list[str], library_paths: list[str],
                 interfaces_file: Optional[str], sanitize: bool,
                 lfta_table_size: Optional[int] = None,
                 lfta_table_ways: Optional[int] = None):
        self.files = files
        self.schema_files = schema
        self.library_paths = library_paths
        self.interfaces_file = interfaces_file
        self.sanitize = sanitize
        self.lfta_table_size = lfta_table_size
        self.lfta_table_ways = lfta_table_ways
        self._builds: dict[tuple, _Build] = {}
        self._default = self._build(Interfaces() if interfaces_file is None
                                    else _interfaces({}, {}, interfaces_file)[0])

    def _build(self, ifaces: Interfaces) -> _Build:
        key = (ifaces.default, tuple(sorted((k, tuple(v)) for k, v in ifaces.sets.items())))
        b = self._builds.get(key)
        if b is None:
            qs = load_queryset(self.files, self.schema_files, self.library_paths, ifaces,
                               self.lfta_table_size, self.lfta_table_ways)
            gen = generate(qs.plan)
            b = _Build(qs, gen, build(gen, sanitize=self.sanitize))
            self._builds[key] = b
        return b

    # -- what it holds
    @property
    def queryset(self) -> QuerySet:
        return self._default.queryset

    @property
    def library(self) -> Path:
        """The built shared library (what the Spark integration ships)."""
        return self._default.built.library

    @property
    def queries(self) -> list[str]:
        return [q.name for q in self.queryset.queries]

    @property
    def outputs(self) -> list[str]:
        """The queries no other query reads (run()'s default outputs)."""
        return self.queryset.leaves()

    def interfaces(self) -> list[str]:
        """The interfaces the LFTAs read (bind each in run()'s sources)."""
        return self.queryset.interfaces()

    def output_schema(self, query: str, strings: str = "str"):
        """The pyarrow schema of a query's output batches."""
        from .arrow_types import stream_schema
        return stream_schema(self.queryset.query(query).output, strings)

    def explain(self) -> str:
        from .explain import explain_text
        return explain_text(self.queryset)

    def __repr__(self) -> str:
        return f"<gsqlc.CompiledQuerySet {', '.join(self.queries)} ({self.library})>"

    # -- running
    def run(self, sources: Optional[Mapping[str, Any]] = None, output=None, *,
            params: Optional[Mapping[str, Any]] = None, clock: str = "wall",
            heartbeat_interval: Union[str, float] = 1, max_skew: Optional[Mapping[str, float]] = None,
            csv_separator: str = ",", csv_strict: bool = False, stall_intervals: int = 3,
            trace: Optional[PathLike] = None, batch_rows: int = 65536,
            strings: str = "str") -> "Run":
        """Run over `sources` ({interface: URI | Arrow data | list of those for
        an interface set}); iterate the result for pyarrow RecordBatches of
        `output` (a query name; default: the only output query).  With a list
        of query names the iteration yields (query, batch) pairs.
        strings: 'str' gives utf8 columns (the bytes must be valid UTF-8),
        'bytes' gives binary columns."""
        if strings not in ("str", "bytes"):
            raise UsageError(f"strings must be 'str' or 'bytes', got {strings!r}")
        if not isinstance(batch_rows, int) or batch_rows < 1:
            raise UsageError(f"batch_rows must be a positive integer, got {batch_rows!r}")
        sources = dict(sources or {})
        skews = {k: check_skew(k, v) for k, v in (max_skew or {}).items()}
        ifaces, arrow = _interfaces(sources, skews, self.interfaces_file)
        for name in skews:
            if name not in ifaces.sources and name not in ifaces.sets:
                raise UsageError(f"max skew {name}: no source binds an interface '{name}'")
        b = self._build(ifaces)
        qs = b.queryset
        params = {k: str(v) for k, v in (params or {}).items()}
        check_params(qs, params)
        opts = run_options(clock=clock, heartbeat_interval=heartbeat_interval,
                           csv_separator=csv_separator, csv_strict=csv_strict,
                           stall_intervals=stall_intervals,
                           trace=os.fspath(trace) if trace else None)
        ifaces_arrow = {m for m, u in ifaces.sources.items() if u.startswith(ARROW + ":")}
        bindings = resolve_bindings(qs, Interfaces(
            {k: v for k, v in ifaces.sources.items() if k not in ifaces_arrow},
            ifaces.sets, ifaces.skews, ifaces.default), ifaces_arrow)
        for iface, skew in ifaces.skews.items():
            if any(iface == n for n, _ in bindings):
                opts[f"max_skew:{iface}"] = repr(skew)
        if output is None:
            leaves = qs.leaves()
            if len(leaves) != 1:
                raise UsageError(f"the query set has {len(leaves)} output queries "
                                 f"({', '.join(leaves)}): name one with output=, or a list")
            names, pairs = leaves, False
        elif isinstance(output, str):
            names, pairs = outputs_of(qs, [output]), False
        else:
            names, pairs = outputs_of(qs, list(output)), True
        readers = {}
        for iface, uri in bindings:
            if uri == ARROW:
                readers[iface] = as_record_batch_reader(arrow[iface], iface)
                if not _in_memory(arrow[iface]):
                    # an iterator or reader may be a live feed: hand over each
                    # batch's results before awaiting the next
                    opts["arrow_flush"] = "1"
        file_bindings = [(i, u) for i, u in bindings if u != ARROW]
        return Run(b.built.library, file_bindings, readers, [], names, opts, params,
                   batch_rows, strings, pairs)

    def table(self, sources=None, output=None, **kw):
        """run() gathered into one pyarrow.Table (of `output`)."""
        import pyarrow as pa
        if output is not None and not isinstance(output, str):
            raise UsageError("table() takes one output query")
        r = self.run(sources, output, **kw)
        batches = list(r)
        name = r.outputs[0]
        schema = self.output_schema(name, kw.get("strings", "str"))
        return pa.Table.from_batches(batches, schema=schema)


def compile(files: Union[PathLike, Sequence[PathLike]], schema=None, *,
            library_paths: Sequence[PathLike] = (), interfaces: Optional[PathLike] = None,
            sanitize: bool = False, lfta_table_size: Optional[int] = None,
            lfta_table_ways: Optional[int] = None) -> CompiledQuerySet:
    """Parse, analyze, plan, generate and build GSQL query files.  A query
    error raises gsqlc.QueryError (with .file, .line, .column and .rule).
    schema: schema file(s) with PROTOCOL declarations (default: the packet
    schema); interfaces: an interfaces file (TOML) declaring interface sets;
    lfta_table_size: slots of the LFTAs' aggregation tables (default 262,144;
    a query's DEFINE lfta_table_size wins); lfta_table_ways: the slots a
    group may take in them (1, 2, 4, 8 or 16; default 1, direct-mapped;
    DEFINE lfta_table_ways wins).  With more ways, groups that hash alike
    share a bucket instead of ejecting each other."""
    files_l = _as_list(files)
    if not files_l:
        raise UsageError("compile() needs at least one query file")
    if lfta_table_size is not None and (not isinstance(lfta_table_size, int)
                                        or lfta_table_size < 1):
        raise UsageError(f"lfta_table_size must be a positive integer, got {lfta_table_size!r}")
    if lfta_table_ways is not None and (not isinstance(lfta_table_ways, int)
                                        or lfta_table_ways not in TABLE_WAYS):
        raise UsageError(f"lfta_table_ways must be one of {', '.join(map(str, TABLE_WAYS))}, "
                         f"got {lfta_table_ways!r}")
    return CompiledQuerySet(files_l, _as_list(schema), _as_list(library_paths),
                            os.fspath(interfaces) if interfaces else None, sanitize,
                            lfta_table_size, lfta_table_ways)


# ------------------------------------------------------------ runs


_DONE = object()


class Run:
    """One execution, iterated for its output batches.  The library runs on
    a background thread; batches wait in a bounded queue (the run pauses
    while the consumer is behind).  Leaving the iteration early cancels the
    run.  After the iteration: .stats (dict), .report (text)."""

    def __init__(self, library: Path, bindings, readers, file_sinks, outputs, options,
                 params, batch_rows: int, strings: str, pairs: bool, streams=None):
        self.library = library
        self.outputs = outputs
        self.stats: dict = {}
        self.report: str = ""
        self._args = (bindings, readers, streams or {}, file_sinks, options, params, batch_rows)
        self._strings = strings
        self._pairs = pairs
        self._q: "queue.Queue" = queue.Queue(maxsize=4)
        self._cancel = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._result: Optional[runner.RunResult] = None
        self._exc: Optional[BaseException] = None

    def _on_batch(self, query: str, batch) -> bool:
        """Sink callback (runs on the run's thread): False cancels the run."""
        while not self._cancel.is_set():
            try:
                self._q.put((query, batch), timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _work(self) -> None:
        bindings, readers, streams, file_sinks, options, params, batch_rows = self._args
        try:
            self._result = runner.run_library(
                self.library, bindings, file_sinks, options, params,
                arrow_sources=readers, arrow_streams=streams, arrow_sinks=[(q, self._on_batch) for q in self.outputs],
                batch_rows=batch_rows)
        except BaseException as e:  # handed to the consumer's thread
            self._exc = e
        finally:
            while True:
                try:
                    self._q.put(_DONE, timeout=0.1)
                    break
                except queue.Full:
                    if self._cancel.is_set():
                        try:
                            self._q.get_nowait()
                        except queue.Empty:
                            pass

    def __iter__(self) -> Iterator:
        if self._thread is not None:
            raise RuntimeError("a Run can be iterated once; call run() again")
        self._thread = threading.Thread(target=self._work, name="gsqlc-run", daemon=True)
        self._thread.start()
        from .arrow_types import finish_batch
        try:
            while True:
                item = self._q.get()
                if item is _DONE:
                    break
                query, batch = item
                batch = finish_batch(batch, self._strings)
                yield (query, batch) if self._pairs else batch
        finally:
            self._cancel.set()
            self._thread.join()
        self._finish()

    def _finish(self) -> None:
        if self._exc is not None:
            if isinstance(self._exc, SetupError):
                raise UsageError(str(self._exc)) from None
            raise self._exc
        res = self._result
        self.stats, self.report = res.stats, res.report
        if res.status != 0:
            raise RunError(res.error + (("\n" + res.report) if res.report else ""))
