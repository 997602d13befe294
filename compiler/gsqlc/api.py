"""The Python API: compile GSQL once, run it over files or Arrow data.

    import gsqlc
    qs = gsqlc.compile(["q.gsql"], schema="schema.txt")     # parse, generate, build (cached)
    for batch in qs.run(sources={"csv": "csv:data.csv"}, output="per_src"):
        ...                                                 # pyarrow.RecordBatch, as produced
    qs.run(sources={"csv": table}, output="per_src")        # Arrow table / batches / pandas

A run drives the compiled library through its C ABI with cffi (ABI mode: no
compiler at load time) on a background thread: Arrow inputs are handed over
as Arrow C streams (the runtime reads their buffers in place) and each
output batch comes back through the Arrow C data interface.  Compiling is
the pipeline's (pipeline.compile_queries); options and bindings are checked
by runtime.bindings, the same functions the CLI's `gsqlc run` uses.
"""
from __future__ import annotations

import os
import queue
import threading
from pathlib import Path
from typing import Any, Iterator, Mapping, Optional, Sequence, Union

from .errors import RunError, UsageError
from .pipeline import Compiled, CompileOptions, QuerySet, check_plan_options, compile_queries
from .planner.plan import TABLE_WAYS
from .runtime import parallel, runner
from .runtime import progress as progress_lines
from .runtime.arrow_types import check_ip_format
from .runtime.bindings import (
    ARROW,
    as_record_batch_reader,
    check_params,
    check_skew,
    in_memory,
    in_memory_table,
    interfaces_of,
    outputs_of,
    resolve_bindings,
    run_options,
    time_options,
)
from .runtime.interfaces import Interfaces, TimeBounds, check_seconds, check_time_unit
from .runtime.progress import ProgressOptions
from .runtime.results import ResultConversions

PathLike = Union[str, os.PathLike]

# The rows of table()'s chunks: nothing waits for a batch there, and fewer,
# larger batches cost less to hand over and assemble (Q1 over 20 M rows 1-1.5
# ms less than in run()'s 65,536-row batches, on one thread and on two).
TABLE_BATCH_ROWS = 262_144


def _as_list(x) -> list[str]:
    if x is None:
        return []
    if isinstance(x, (str, os.PathLike)):
        return [os.fspath(x)]
    return [os.fspath(p) for p in x]


class CompiledQuerySet:
    """Queries parsed, planned, generated and built into a shared library
    (cached by content) by the compile pipeline.  run() executes it; nothing
    is global, so several runs may proceed at once."""

    def __init__(self, files: list[str], options: CompileOptions,
                 interfaces_file: Optional[str]):
        self.files = files
        self.options = options
        self.interfaces_file = interfaces_file
        if interfaces_file is not None:
            interfaces_of({}, {}, interfaces_file)   # checked now, read at each run
        # ONE build serves every binding: interface sets are bound at run
        # time (an LFTA over a set runs once per member, merged in the
        # library), so the plan does not depend on them.
        self.compiled: Compiled = compile_queries(self.files, self.options)

    # -- what it holds
    @property
    def queryset(self) -> QuerySet:
        """The planned query set (the pipeline's QuerySet: queries, plan,
        the summary runs bind against)."""
        return self.compiled.queryset

    @property
    def library(self) -> Path:
        """The built shared library (what the Spark integration ships)."""
        return self.compiled.library

    @property
    def queries(self) -> list[str]:
        """The names of every query of the set (their query_name)."""
        return [q.name for q in self.queryset.queries]

    @property
    def outputs(self) -> list[str]:
        """The queries no other query reads (run()'s default outputs)."""
        return self.queryset.leaves()

    def interfaces(self) -> list[str]:
        """The interfaces the LFTAs read (bind each in run()'s sources)."""
        return self.queryset.interfaces()

    def output_schema(self, query: str, strings: str = "str", ip_format: str = "text"):
        """The pyarrow schema of a query's output batches (run()'s strings
        and ip_format)."""
        from .runtime.arrow_types import check_ip_format, stream_schema
        return stream_schema(self.queryset.query(query).output, strings,
                             check_ip_format(ip_format))

    def explain(self) -> str:
        """The plan as `gsqlc explain` prints it: each operator, its level
        (LFTA or HFTA), why the split fell there, its order and the
        temporal property of every column."""
        from .planner.explain import explain_text
        return explain_text(self.queryset.plan)

    def explain_dot(self) -> str:
        """The plan as a Graphviz graph (what `gsqlc explain --format dot` prints)."""
        from .planner.explain import explain_dot
        return explain_dot(self.queryset.plan)

    def plan_svg(self) -> Optional[str]:
        """The plan drawn as SVG by Graphviz's `dot`, or None where Graphviz is
        not installed (or fails: its message is then warned)."""
        import shutil
        import subprocess
        import warnings
        dot = shutil.which("dot")
        if dot is None:
            return None
        p = subprocess.run([dot, "-Tsvg"], input=self.explain_dot(), capture_output=True,
                           text=True, timeout=60)
        if p.returncode != 0:
            warnings.warn(f"gsqlc: Graphviz could not draw the plan: {p.stderr.strip()}",
                          RuntimeWarning, stacklevel=2)
            return None
        return p.stdout

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        """Jupyter's display: the plan as SVG where Graphviz is installed, the
        explain text otherwise (and as the plain-text form)."""
        import html
        text = self.explain()
        svg = self.plan_svg()
        bundle = {"text/plain": f"{self!r}\n{text}"}
        if svg is not None:
            bundle["image/svg+xml"] = svg
        else:
            bundle["text/html"] = f"<pre>{html.escape(text)}</pre>"
        return bundle

    def __repr__(self) -> str:
        return f"<gsqlc.CompiledQuerySet {', '.join(self.queries)} ({self.library})>"

    # -- running
    def run(self, sources: Optional[Mapping[str, Any]] = None, output=None, *,
            params: Optional[Mapping[str, Any]] = None, clock: str = "auto",
            heartbeat_interval: Union[str, float] = 1, max_skew: Optional[Mapping[str, float]] = None,
            out_of_order: Optional[Mapping[str, float]] = None,
            latency: Optional[Mapping[str, float]] = None,
            skew: Optional[Mapping[tuple[str, str], tuple[float, float]]] = None,
            heartbeat_timeout: Optional[float] = None,
            heartbeats: Optional[Mapping[str, Any]] = None,
            time_unit: Optional[Mapping[str, str]] = None,
            csv_separator: str = ",", csv_strict: bool = False, stall_intervals: int = 3,
            trace: Optional[PathLike] = None, batch_rows: int = 65536,
            strings: str = "str", ip_format: str = "text", columnar: str = "auto",
            threads: Optional[int] = None, max_groups: Optional[int] = None,
            progress: bool = False) -> "Run":
        """Run over `sources` ({interface: URI | Arrow data | list of those for
        an interface set}); iterate the result for pyarrow RecordBatches of
        `output` (a query name; default: the only output query).  With a list
        of query names the iteration yields (query, batch) pairs.
        strings: 'str' gives utf8 columns (the bytes must be valid UTF-8),
        'bytes' gives binary columns.
        ip_format: 'text' (default) gives IP and IPV6 columns as utf8 text in
        GSQL's forms, as the CLI prints them ('10.0.0.1',
        '2001:0db8:0000:0000:0000:0000:0000:0001'); 'int' gives IP as uint32
        (10.0.0.1 is 0x0A000001) and IPV6 as fixed_size_binary(16) in network
        order, which skips formatting them (the faster form for data that
        feeds more computation).
        clock: 'auto' (the default) follows the records' own time when every
        source is a recording (files, Tables, DataFrames: replayed in time)
        and the wall clock when one is a live feed (a reader or iterator);
        'wall', 'data' or 'fixed:SECONDS' force one.
        Time bounds (as in the interfaces file):
        out_of_order= {interface: seconds} (B_ii: its heartbeats promise the
        largest timestamp read less this); latency= {interface: seconds}
        (L_i); skew= {(a, b): (after, bound)} (B_ab); heartbeat_timeout=
        seconds; heartbeats= {"estimate": "given" | "max" | "adaptive",
        "horizon": s, "window": n, "alpha": a, "level": "operator" |
        "query"} (the file's [heartbeats]).  time_unit= {interface: 's' |
        'ms' | 'us' | 'ns'}: the unit of a CSV (or Arrow) interface's time
        column, whose values are its records' timestamps (the data clock
        under clock='data').
        columnar: 'auto' runs the LFTAs over Arrow data a chunk of columns at
        a time (when none reads the clock); 'off' forces the row path (the
        same results: for comparisons and benchmarks).
        threads: how many threads run the LFTAs over Arrow data held in
        memory (a Table, RecordBatch or DataFrame): each thread reads a
        contiguous slice of the rows with tables of its own, the HFTAs merge
        their partials (gsqlc.runtime.parallel).  Default: the machine's
        cores, each slice at least 131,072 rows; 1 runs on one thread.  The
        results are the one thread's; .stats["threads"] says how the run was
        split, or why not (file sources, live feeds, time bounds, the data
        clock and queries reading the clock run on one thread).
        max_groups: the groups an HFTA aggregation may hold open at once
        (default: what half of the machine's memory holds); past it the run
        fails (RunError naming the query) instead of exhausting memory.
        progress: show a progress bar (tqdm.auto: a widget in Jupyter, else
        a text line on stderr) while the run is iterated -- the input
        consumed of its total (rows of Arrow data held in memory, bytes of
        files; a count of records when it is not known), the rows
        delivered, late and malformed counts, the lowest watermark -- closed
        when the run ends, is cancelled or the iteration is left."""
        if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int)
                                    or threads < 1):
            raise UsageError(f"threads must be a positive integer, got {threads!r}")
        if strings not in ("str", "bytes"):
            raise UsageError(f"strings must be 'str' or 'bytes', got {strings!r}")
        check_ip_format(ip_format)
        if not isinstance(batch_rows, int) or batch_rows < 1:
            raise UsageError(f"batch_rows must be a positive integer, got {batch_rows!r}")
        if not isinstance(progress, bool):
            raise UsageError(f"progress must be True or False, got {progress!r}")
        sources = dict(sources or {})
        skews = {k: check_skew(k, v) for k, v in (max_skew or {}).items()}
        bounds = time_bounds(out_of_order, latency, skew, heartbeat_timeout, heartbeats,
                             time_unit)
        ifaces, arrow = interfaces_of(sources, skews, self.interfaces_file, bounds)
        check_bound_interfaces(ifaces, bounds, skews)
        qs = self.compiled.queryset
        params = {k: str(v) for k, v in (params or {}).items()}
        check_params(qs.summary, params)
        opts = run_options(clock=clock, heartbeat_interval=heartbeat_interval,
                           csv_separator=csv_separator, csv_strict=csv_strict,
                           stall_intervals=stall_intervals,
                           trace=os.fspath(trace) if trace else None, columnar=columnar,
                           max_groups=max_groups)
        ifaces_arrow = {m for m, u in ifaces.sources.items() if u.startswith(ARROW + ":")}
        bindings = resolve_bindings(qs.summary, Interfaces(
            {k: v for k, v in ifaces.sources.items() if k not in ifaces_arrow},
            ifaces.sets, ifaces.skews, ifaces.default), ifaces_arrow)
        set_members = bindings.members
        opts.update(time_options(ifaces, bindings))
        if output is None:
            leaves = qs.leaves()
            if len(leaves) != 1:
                raise UsageError(f"the query set has {len(leaves)} output queries "
                                 f"({', '.join(leaves)}): name one with output=, or a list")
            names, pairs = leaves, False
        elif isinstance(output, str):
            names, pairs = outputs_of(qs.summary, [output]), False
        else:
            names, pairs = outputs_of(qs.summary, list(output)), True
        readers, data = {}, {}
        for iface, uri in bindings.sources:
            if uri == ARROW:
                data[iface] = arrow[iface]
                if in_memory(data[iface]):   # converted once (a DataFrame is copied)
                    data[iface] = in_memory_table(data[iface])
                    opts[f"recording:{iface}"] = "1"   # replayed in time, as a file is
                else:
                    # an iterator or reader may be a live feed: hand over each
                    # batch's results before awaiting the next
                    opts["arrow_flush"] = "1"
                readers[iface] = as_record_batch_reader(data[iface], iface)
        file_bindings = [(i, u) for i, u in bindings.sources if u != ARROW]
        split = parallel.plan_split(
            qs.plan, data,
            {i: [n.name for n in ns] for i, ns in bindings.readers.items()},
            dict(file_bindings), parallel.multi_member(set_members), opts, names, threads,
            self.compiled.library)
        run: Union[Run, parallel.SplitRun]
        if split.used > 1:
            run = self._split_run(split, bindings, names, opts, params, batch_rows, strings,
                                  pairs, set_members, ip_format, progress)
        else:
            # a bar over rows when every source is Arrow data held in memory
            rows = (sum(in_memory_table(d).num_rows for d in data.values())
                    if data and not file_bindings and all(in_memory(d) for d in data.values())
                    else None)
            run = Run(self.compiled.library, file_bindings, readers, [], names, opts, params,
                      batch_rows, strings, pairs, set_members=set_members,
                      extra_stats={"threads": split.info()}, ip_format=ip_format,
                      progress=ProgressOptions(True, rows) if progress else None)
        run.schema = None if pairs else self.output_schema(names[0], strings, ip_format)
        return run

    def _split_run(self, split, bindings, names, opts, params, batch_rows, strings, pairs,
                   set_members, ip_format, progress=False):
        """run() over threads (gsqlc.runtime.parallel): the LFTAs each
        sliced interface's bindings name, their outputs into the HFTAs' run."""
        from .planner.nodes import HftaNode
        plan = self.compiled.queryset.plan
        needed = plan.upstream(names)
        lftas = parallel.lfta_streams(plan, names, bindings.readers, split)
        make_final = None
        if any(isinstance(n, HftaNode) for n in needed):
            def make_final(streams):
                return Run(self.compiled.library, [], {}, [], names, opts, params, batch_rows,
                           strings, pairs, streams=streams, ip_format=ip_format)
        return parallel.SplitRun(self.compiled.library, split, lftas, names, opts, params,
                                 batch_rows, strings, pairs, make_final, set_members,
                                 ip_format=ip_format,
                                 progress=ProgressOptions(True) if progress else None)

    def table(self, sources=None, output=None, **kw):
        """run() gathered into one pyarrow.Table (of `output`), in chunks of
        TABLE_BATCH_ROWS rows unless batch_rows= says otherwise."""
        if output is not None and not isinstance(output, str):
            raise UsageError("table() takes one output query")
        kw.setdefault("batch_rows", TABLE_BATCH_ROWS)
        return self.run(sources, output, **kw).to_arrow()


def time_bounds(out_of_order: Optional[Mapping[str, float]] = None,
                latency: Optional[Mapping[str, float]] = None,
                skew: Optional[Mapping[tuple[str, str], tuple[float, float]]] = None,
                heartbeat_timeout: Optional[float] = None,
                heartbeats: Optional[Mapping[str, Any]] = None,
                time_unit: Optional[Mapping[str, str]] = None) -> TimeBounds:
    """The time-bound keywords of run() (and of gsqlc.spark.run_query),
    checked: out_of_order= and latency= {interface: seconds}, skew= {(a, b):
    (after, bound)}, heartbeat_timeout= seconds, heartbeats= the [heartbeats]
    keys (checked with the interfaces), time_unit= {interface: unit}."""
    return TimeBounds(
        [(k, check_seconds(f"out_of_order {k}", "out_of_order", v))
         for k, v in (out_of_order or {}).items()],
        [(k, check_seconds(f"latency {k}", "latency", v)) for k, v in (latency or {}).items()],
        [_skew_entry(k, v) for k, v in (skew or {}).items()],
        None if heartbeat_timeout is None else
        check_seconds("heartbeat_timeout", "timeout", heartbeat_timeout),
        heartbeats=dict(heartbeats) if heartbeats else None,
        time_unit=[(k, check_time_unit(f"time_unit {k}", v), f"time_unit {k}")
                   for k, v in (time_unit or {}).items()])


def check_bound_interfaces(ifaces: Interfaces, bounds: TimeBounds,
                           skews: Optional[Mapping[str, float]] = None) -> None:
    """UsageError for a max skew, out_of_order or latency keyword naming an
    interface no source binds (a skew pair's are checked by build)."""
    for what, names in (("max skew", list(skews or {})),
                        ("out_of_order", [n for n, _ in bounds.out_of_order]),
                        ("latency", [n for n, _ in bounds.latency]),
                        ("time_unit", [n for n, _, _ in bounds.time_unit])):
        for name in names:
            if name not in ifaces.sources and name not in ifaces.sets:
                raise UsageError(f"{what} {name}: no source binds an interface '{name}'")


def _skew_entry(pair: Any, value: Any) -> tuple[str, str, float, float]:
    """skew={(a, b): (after, bound)} of run(), checked."""
    if not (isinstance(pair, tuple) and len(pair) == 2 and all(isinstance(x, str) for x in pair)):
        raise UsageError(f"skew: key {pair!r} must be a pair of interface names (a, b)")
    where = f"skew {pair[0]}:{pair[1]}"
    if not (isinstance(value, (tuple, list)) and len(value) == 2):
        raise UsageError(f"{where}: value {value!r} must be (after, bound) in seconds")
    return (pair[0], pair[1], check_seconds(where, "after", value[0]),
            check_seconds(where, "bound", value[1]))


def compile(files: Union[PathLike, Sequence[PathLike]], schema=None, *,
            library_paths: Sequence[PathLike] = (), interfaces: Optional[PathLike] = None,
            sanitize: bool = False, lfta_table_size: Optional[int] = None,
            lfta_table_ways: Optional[int] = None, max_lfta_disorder: Optional[int] = None,
            max_hfta_disorder: Optional[int] = None,
            flush: Optional[str] = None, functions: Union[PathLike, Sequence[PathLike]] = (),
            udf: Union[PathLike, Sequence[PathLike]] = ()) -> CompiledQuerySet:
    """Parse, analyze, plan, generate and build GSQL query files.

    The build is cached by content (in $GSQLC_CACHE_DIR, by default
    ~/.cache/gsqlc): compiling a query set built before takes milliseconds.
    One build serves every binding of its interfaces (interface sets are
    bound at run time).

    Args:
        files: one query file or several; a query reads another by its
            query_name across all of them.
        schema (PathLike | Sequence[PathLike] | None): schema file(s) with
            PROTOCOL and STREAM declarations (default: gsqlc's packet schema).
        library_paths: directories holding query libraries (FROM LIB/query).
        interfaces: an interfaces file (TOML) declaring interfaces,
            interface sets and time bounds; checked now, read at each run.
        sanitize: build with AddressSanitizer and UndefinedBehaviorSanitizer.
        lfta_table_size: slots of the LFTAs' aggregation tables (default
            262,144; a query's DEFINE lfta_table_size wins).
        lfta_table_ways: the slots a group may take in them (1, 2, 4, 8 or
            16; default 1, direct-mapped; DEFINE lfta_table_ways wins).
            With more ways, groups that hash alike share a bucket instead
            of ejecting each other.
        max_lfta_disorder: how many epochs of the temporal group-by an
            LFTA aggregation keeps open at once (default 2, as Tigon; 1
            processes in order; a query's DEFINE wins).
        max_hfta_disorder: the same for an HFTA aggregation (default 3): a
            tuple up to that many epochs behind the newest still counts, an
            older one is dropped and counted.
        flush: how a closed epoch's groups are handed on -- 'slow'
            (default: one per following input tuple), 'lazy' (LFTA: when
            their slot is needed or the next epoch closes) or 'immediate'.
        functions: function-definition file(s) in the syntax of Tigon's
            external_fcns.def (FUN, PRED, UDAF, EXTR) declaring the user's
            functions and aggregates.
        udf: the C (.c) or C++ (.cc, .cpp) sources defining them in Tigon's
            calling convention; they are built into the query set's library.

    Returns:
        The CompiledQuerySet, ready to run.

    Raises:
        QueryError: a query or schema breaks a rule (with .file, .line,
            .column and .rule).
        UsageError: a bad option or file.
    """
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
    check_plan_options(max_lfta_disorder=max_lfta_disorder,
                       max_hfta_disorder=max_hfta_disorder, flush=flush)
    options = CompileOptions(tuple(_as_list(schema)), tuple(_as_list(library_paths)),
                             lfta_table_size=lfta_table_size, lfta_table_ways=lfta_table_ways,
                             max_lfta_disorder=max_lfta_disorder,
                             max_hfta_disorder=max_hfta_disorder, flush=flush,
                             sanitize=sanitize,
                             functions=tuple(os.fspath(p) for p in _as_list(functions)),
                             udf=tuple(os.fspath(p) for p in _as_list(udf)))
    return CompiledQuerySet(files_l, options, os.fspath(interfaces) if interfaces else None)


# ------------------------------------------------------------ runs


_DONE = object()


class Run(ResultConversions):
    """One execution, iterated for its output batches.  The library runs on
    a background thread; batches wait in a bounded queue (the run pauses
    while the consumer is behind).  Leaving the iteration early cancels the
    run.  After the iteration: .stats (dict), .report (text).

    A Run is made by CompiledQuerySet.run(), and can be iterated (or
    collected) once.

    Attributes:
        outputs: the names of the queries whose batches it yields.
        stats: after the run, its counters (as `gsqlc run --stats` prints
            them): per source, stream, operator and sink, and the run's.
        report: after the run, the report's lines (malformed rows, late
            tuples, stalls), as `gsqlc run` prints them on stderr.
        library: the shared library it runs.
    """

    def __init__(self, library: Path, bindings, readers, file_sinks, outputs, options,
                 params, batch_rows: int, strings: str, pairs: bool, streams=None,
                 set_members=(), extra_stats: Optional[dict] = None, ip_format: str = "text",
                 progress: Optional[ProgressOptions] = None):
        self.library = library
        self._ip_format = ip_format
        self._progress = progress
        self._set_members = list(set_members)   # (set, member): gsqlc_add_set_member
        self._extra_stats = dict(extra_stats or {})
        self.outputs = outputs
        self.stats: dict = {}
        self.report: str = ""
        self._args = (bindings, readers, streams or {}, file_sinks, options, params, batch_rows)
        self._strings = strings
        self._pairs = pairs
        self._q: "queue.Queue" = queue.Queue(maxsize=4)
        self._cancel = threading.Event()
        self._handle = runner.RunHandle()     # gsqlc_cancel of the library's run
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

    def _run_library(self, on_batch) -> None:
        bindings, readers, streams, file_sinks, options, params, batch_rows = self._args
        self._result = runner.run_library(
            self.library, bindings, file_sinks, options, params,
            arrow_sources=readers, arrow_streams=streams,
            arrow_sinks=[(q, on_batch) for q in self.outputs],
            batch_rows=batch_rows, cancel=self._handle, set_members=self._set_members)

    def _work(self) -> None:
        try:
            self._run_library(self._on_batch)
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
        line = self._progress_line().start()
        from .runtime.arrow_types import finish_batch
        try:
            while True:
                item = self._q.get()
                if item is _DONE:
                    break
                query, batch = item
                batch = finish_batch(batch, self._strings, self._ip_format)
                yield (query, batch) if self._pairs else batch
        finally:
            self._cancel.set()
            self._handle.cancel()   # an early exit ends the run as at end of input
            self._thread.join()
            line.close()
        self._finish()

    def collect(self) -> list:
        """The whole run's output, as the iteration would give it: the run's
        thread keeps the batches until it ends (no hand-over of each batch
        to this thread, which would take a core from the run).  Interrupted
        (KeyboardInterrupt), the run is cancelled and the exception raised."""
        if self._thread is not None:
            raise RuntimeError("a Run can be iterated once; call run() again")
        from .runtime.arrow_types import finish_batches
        got: list = []

        def keep(query: str, batch) -> bool:
            got.append((query, batch))
            return True

        def work() -> None:
            try:
                self._run_library(keep)
            except BaseException as e:  # noqa: BLE001 - raised by _finish
                self._exc = e
        self._thread = threading.Thread(target=work, name="gsqlc-run", daemon=True)
        self._thread.start()
        with self._progress_line():
            runner.join_runs([self._thread], [self._handle])
        self._finish()
        return finish_batches(got, self._strings, self._pairs, self._ip_format)

    def cancel(self) -> None:
        """End the run as at end of input, from any thread: open groups are
        flushed and the iteration ends after the batches produced so far;
        .stats then says "interrupted": true."""
        self._handle.cancel()

    @property
    def handle(self) -> runner.RunHandle:
        """The library run's handle (its cancel and progress counters)."""
        return self._handle

    def _progress_line(self):
        return progress_lines.line(self._progress, lambda: ([self._handle], [self._handle]))

    def _finish(self) -> None:
        if self._exc is not None:
            raise self._exc
        res = self._result
        self.stats, self.report = res.stats, res.report
        self.stats.update(self._extra_stats)
        if res.status != 0:
            raise RunError(res.error + (("\n" + res.report) if res.report else ""))
