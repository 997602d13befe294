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
the pipeline's (pipeline.compile_queries); a run is prepared by
runtime.session, as the CLI's `gsqlc run` and Spark's are, and is a
runtime.run.Run (or a runtime.parallel.SplitRun or PartitionRun over threads).
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Optional, Sequence, Union

from .errors import UsageError
from .pipeline import Compiled, CompileOptions, QuerySet, check_plan_options, compile_queries
from .planner.policies import TABLE_WAYS
from .runtime import session
from .runtime.arrow_types import check_ip_format
from .runtime.progress import ProgressOptions
from .runtime.run import ArrowOutput, Run
from .runtime.session import check_bound_interfaces, time_bounds

if TYPE_CHECKING:   # a run over threads; the module is loaded only for one
    from .runtime.parallel import PartitionRun, SplitRun

__all__ = ["compile", "CompiledQuerySet", "Run", "time_bounds", "check_bound_interfaces"]

PathLike = Union[str, "os.PathLike[str]"]

# The rows of table()'s chunks: nothing waits for a batch there, and fewer,
# larger batches cost less to hand over and assemble (Q1 over 20 M rows 1-1.5
# ms less than in run()'s 65,536-row batches, on one thread and on two).
TABLE_BATCH_ROWS = 262_144


def _as_list(x: Union[PathLike, Iterable[PathLike], None]) -> list[str]:
    if x is None:
        return []
    if isinstance(x, (str, os.PathLike)):
        return [os.fspath(x)]
    return [os.fspath(p) for p in x]


_QUERY_WORD = re.compile(r"\b(select|merge)\b", re.IGNORECASE)


def is_query_text(x: Any) -> bool:
    """Whether a str given where query files are taken is GSQL text: not an
    existing path, with white space and a SELECT or MERGE in it (a mistyped
    file name is still an unknown file)."""
    return (isinstance(x, str) and not os.path.exists(x) and any(c.isspace() for c in x)
            and _QUERY_WORD.search(x) is not None)


def query_inputs(files: Union[PathLike, Sequence[PathLike], None], text: Optional[str] = None
                 ) -> tuple[list[str], list[tuple[str, str]]]:
    """The query files of `files` and `text`, and the texts among them:
    (names, [(name, text)]), a text named <query> (<query 2>, ... after
    the first) in errors."""
    items: list[Any] = [files] if isinstance(files, (str, os.PathLike)) else list(files or [])
    if text is not None:
        if not isinstance(text, str):
            raise UsageError(f"text= takes GSQL query text (a str), not a {type(text).__name__}")
        items.append(_Text(text))
    names: list[str] = []
    texts: list[tuple[str, str]] = []
    for x in items:
        if isinstance(x, _Text) or is_query_text(x):
            name = "<query>" if not texts else f"<query {len(texts) + 1}>"
            texts.append((name, str(x)))
            names.append(name)
        else:
            names.append(os.fspath(x))
    return names, texts


class _Text(str):
    """Query text given as text= (never taken for a path)."""


def stream_texts(streams: Optional[Mapping[str, Any]], temporal: Optional[Mapping[str, str]],
                 ip: Sequence[str]) -> list[tuple[str, str]]:
    """The schema of data at hand: <streams>, a STREAM per source
    (semantics.from_data), temporal and ip columns found in the sources
    that have them -- a name no source has is an error."""
    from .semantics.from_data import arrow_schema, stream_declaration
    if not streams:
        if temporal or ip:
            raise UsageError("temporal= and ip= describe the columns of streams= (or of "
                             "gsqlc.sql's sources): give those")
        return []
    decls, used = [], set()
    for name, data in streams.items():
        cols = set(arrow_schema(data).names)
        t = {c: o for c, o in (temporal or {}).items() if c in cols}
        i = [c for c in ip if c in cols]
        used |= set(t) | set(i)
        decls.append(stream_declaration(name, data, t, i))
    missing = [c for c in list(temporal or {}) + list(ip) if c not in used]
    if missing:
        raise UsageError(f"no source has a column '{missing[0]}' (sources: "
                         f"{', '.join(streams)})")
    return [("<streams>", "".join(decls))]


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
            # checked now, read at each run
            session.settle(session.RunRequest(interfaces_file=interfaces_file))
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

    def output_schema(self, query: str, strings: str = "str", ip_format: str = "text") -> Any:
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

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
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
    def run(self, sources: Optional[Mapping[str, Any]] = None,
            output: Union[None, str, Sequence[str]] = None, *,
            params: Optional[Mapping[str, Any]] = None, clock: str = "auto",
            heartbeat_interval: Union[str, float] = 1, max_skew: Optional[Mapping[str, float]] = None,
            out_of_order: Optional[Mapping[str, float]] = None,
            latency: Optional[Mapping[str, float]] = None,
            skew: Optional[Mapping[tuple[str, str], tuple[float, float]]] = None,
            heartbeat_timeout: Optional[float] = None,
            heartbeats: Optional[Mapping[str, Any]] = None,
            time_unit: Optional[Mapping[str, str]] = None,
            csv_separator: str = ",", csv_strict: bool = False, csv_header: bool = False,
            stall_intervals: int = 3,
            trace: Optional[PathLike] = None, batch_rows: int = 65536,
            strings: str = "str", ip_format: str = "text", columnar: str = "auto",
            prefilter: str = "on",
            threads: Optional[int] = None, max_groups: Optional[int] = None,
            progress: bool = False) -> Union[Run, SplitRun, PartitionRun]:
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
        out_of_order= {interface: seconds} (a record trails the largest
        timestamp read before it by at most this: its heartbeats promise
        that timestamp less this); latency= {interface: seconds} (the most
        wall-clock seconds from a record's emission to its arrival);
        skew= {(a, b): (after, bound)} (after wall-clock seconds past a
        record of a stamped T, b's records are stamped at least T - bound);
        heartbeat_timeout= seconds; heartbeats= {"estimate": "given" | "max" | "adaptive",
        "horizon": s, "window": n, "alpha": a, "level": "operator" |
        "query"} (the file's [heartbeats]).  time_unit= {interface: 's' |
        'ms' | 'us' | 'ns'}: the unit of a CSV (or Arrow) interface's time
        column, whose values are its records' timestamps (the data clock
        under clock='data').
        csv_header: the first line of every CSV source names its columns,
        and each field's column is found by its name (one source:
        'csv:PATH?header=1'; 'csv:PATH?header=0' keeps a source positional).
        Without it, a first line naming the fields is skipped and reported
        (.report, .stats, a warning).
        columnar: 'auto' runs the LFTAs over Arrow data a chunk of columns at
        a time (when none reads the clock); 'off' forces the row path (the
        same results: for comparisons and benchmarks).
        prefilter: 'on' evaluates the cheap predicates of the LFTAs reading
        an interface once per record and runs each LFTA only on the records
        they let through; 'off' gives every LFTA every record (the same
        results).
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
        if not isinstance(csv_header, bool):
            raise UsageError(f"csv_header must be True or False, got {csv_header!r}")
        request = session.RunRequest(
            sources=[(name, v) for name, value in (sources or {}).items()
                     for v in (value if isinstance(value, list) else [value])],
            interfaces_file=self.interfaces_file,
            max_skew=list((max_skew or {}).items()),
            bounds=session.time_bounds(out_of_order, latency, skew, heartbeat_timeout,
                                       heartbeats, time_unit),
            params=dict(params or {}), output=output,
            options=session.RunOptions(clock=clock, heartbeat_interval=heartbeat_interval,
                                       csv_separator=csv_separator, csv_strict=csv_strict,
                                       csv_header=csv_header, stall_intervals=stall_intervals,
                                       trace=os.fspath(trace) if trace else None,
                                       columnar=columnar, prefilter=prefilter,
                                       max_groups=max_groups))
        qs = self.compiled.queryset
        prep = session.prepare(qs.summary, request)
        library = self.compiled.library
        split = session.decide_split(prep, library, lambda: qs.plan, threads)
        out = ArrowOutput(prep.outputs, strings, ip_format, batch_rows, prep.pairs)
        run = session.start(prep, library, out, split, lambda: qs.plan,
                            ProgressOptions(True) if progress else None)
        run.schema = None if prep.pairs else self.output_schema(prep.outputs[0], strings,
                                                                ip_format)
        return run

    def table(self, sources: Optional[Mapping[str, Any]] = None, output: Optional[str] = None,
              **kw: Any) -> Any:
        """run() gathered into one pyarrow.Table (of `output`), in chunks of
        TABLE_BATCH_ROWS rows unless batch_rows= says otherwise."""
        if output is not None and not isinstance(output, str):
            raise UsageError("table() takes one output query")
        kw.setdefault("batch_rows", TABLE_BATCH_ROWS)
        return self.run(sources, output, **kw).to_arrow()


def compile(files: Union[PathLike, Sequence[PathLike], None] = None,
            schema: Union[PathLike, Sequence[PathLike], None] = None, *,
            text: Optional[str] = None, streams: Optional[Mapping[str, Any]] = None,
            temporal: Optional[Mapping[str, str]] = None, ip: Sequence[str] = (),
            library_paths: Sequence[PathLike] = (), interfaces: Optional[PathLike] = None,
            sanitize: bool = False, lfta_table_size: Optional[int] = None,
            lfta_table_ways: Optional[int] = None, max_lfta_disorder: Optional[int] = None,
            max_hfta_disorder: Optional[int] = None,
            flush: Optional[str] = None, functions: Union[PathLike, Sequence[PathLike]] = (),
            udf: Union[PathLike, Sequence[PathLike]] = (),
            lfta_in_kernel: bool = False) -> CompiledQuerySet:
    """Parse, analyze, plan, generate and build GSQL query files.

    The build is cached by content (in $GSQLC_CACHE_DIR, by default
    ~/.cache/gsqlc): compiling a query set built before takes milliseconds.
    One build serves every binding of its interfaces (interface sets are
    bound at run time).

    Args:
        files: one query file or several; a query reads another by its
            query_name across all of them.  A str that names no file and
            holds white space and a SELECT or MERGE is query text itself.
        schema (PathLike | Sequence[PathLike] | None): schema file(s) with
            PROTOCOL and STREAM declarations (default: gsqlc's packet
            schema, unless streams= gives the schema).
        text: GSQL query text (one query or several, separated by ';'),
            named <query> in errors.
        streams: a schema from data at hand: name -> a pyarrow Table,
            RecordBatch, RecordBatchReader or Schema, or a pandas or
            Polars DataFrame; each is a STREAM of that name whose fields
            are its columns (integers by width and sign, floats, booleans,
            strings), read by `FROM name` from the source bound as name.
        temporal: columns of streams that are temporal: name ->
            'increasing' or 'decreasing'.
        ip: columns of streams holding IP addresses (IPv4 from integers or
            text, IPv6 from 16 bytes).
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
        lfta_in_kernel: run each live interface's aggregating LFTA in the
            kernel's XDP hook where it can (explain() says which, and why
            not); building needs clang-14 and libbpf-dev, running root.
            Bound to a file the same LFTA reads its records as usual.

    Returns:
        The CompiledQuerySet, ready to run.

    Raises:
        QueryError: a query or schema breaks a rule (with .file, .line,
            .column and .rule).
        UsageError: a bad option or file.
    """
    files_l, texts = query_inputs(files, text)
    if not files_l:
        raise UsageError("compile() needs at least one query file, or text=")
    texts += stream_texts(streams, temporal, ip)
    if lfta_table_size is not None and (not isinstance(lfta_table_size, int)
                                        or lfta_table_size < 1):
        raise UsageError(f"lfta_table_size must be a positive integer, got {lfta_table_size!r}")
    if lfta_table_ways is not None and (not isinstance(lfta_table_ways, int)
                                        or lfta_table_ways not in TABLE_WAYS):
        raise UsageError(f"lfta_table_ways must be one of {', '.join(map(str, TABLE_WAYS))}, "
                         f"got {lfta_table_ways!r}")
    check_plan_options(max_lfta_disorder=max_lfta_disorder,
                       max_hfta_disorder=max_hfta_disorder, flush=flush)
    schema_l = _as_list(schema) + ([texts[-1][0]] if streams else [])
    options = CompileOptions(tuple(schema_l), tuple(_as_list(library_paths)),
                             lfta_table_size=lfta_table_size, lfta_table_ways=lfta_table_ways,
                             max_lfta_disorder=max_lfta_disorder,
                             max_hfta_disorder=max_hfta_disorder, flush=flush,
                             sanitize=sanitize,
                             functions=tuple(os.fspath(p) for p in _as_list(functions)),
                             udf=tuple(os.fspath(p) for p in _as_list(udf)),
                             texts=tuple(texts), lfta_in_kernel=bool(lfta_in_kernel))
    return CompiledQuerySet(files_l, options, os.fspath(interfaces) if interfaces else None)


# sql(): query sets compiled for text and the schema of its sources, the most
# recent kept (a CompiledQuerySet holds its library and the memory its runs
# gave back, so a query asked again runs at once)
_SQL_SETS: "dict[tuple[str, tuple[tuple[str, str], ...]], CompiledQuerySet]" = {}
_SQL_SETS_KEPT = 16


def sql(text: str, *, temporal: Optional[Mapping[str, str]] = None, ip: Sequence[str] = (),
        out_of_order: Optional[float] = None, params: Optional[Mapping[str, Any]] = None,
        output: Optional[str] = None, stream: bool = False, **sources: Any) -> Any:
    """Run GSQL query text over data at hand, its schema taken from the data.

        gsqlc.sql("select tb, k, count(*) as n from events group by ts/60 as tb, k",
                  events=table, temporal={"ts": "increasing"})

    Args:
        text: GSQL query text (one query or several, separated by ';');
            errors are located in it (<query>:LINE:COLUMN).
        temporal: the temporal columns: name -> 'increasing' or
            'decreasing' (an aggregation groups by a temporal expression).
        ip: the columns holding IP addresses.
        out_of_order: a declared disorder: seconds (of the temporal
            column's unit) by which a row of any source may trail the
            largest time seen before it -- such rows still count (as
            CompiledQuerySet.run's out_of_order for every source).
        params: the queries' parameters (their PARAM blocks).
        output: the query whose output to return (default: the only one
            no other query reads).
        stream: return the Run (an iterator of pyarrow.RecordBatch) rather
            than the whole result.
        **sources: name -> a pyarrow Table, RecordBatch or
            RecordBatchReader, or a pandas or Polars DataFrame: the STREAM
            `FROM name` reads, its fields the columns.

    Returns:
        A pyarrow.Table (a Run with stream=True).  The query set is compiled
        once (cached by content on disk, and the last few kept in memory).
    """
    if not sources:
        raise UsageError("sql() needs the data its queries read: sql(text, NAME=table, ...)")
    data = {name: _arrow_data(d) for name, d in sources.items()}
    decls = tuple(stream_texts(data, temporal, ip))
    key = (text, decls)
    qs = _SQL_SETS.pop(key, None)
    if qs is None:
        qs = compile(text=text, streams=data, temporal=temporal, ip=ip)
    _SQL_SETS[key] = qs          # the most recent last
    while len(_SQL_SETS) > _SQL_SETS_KEPT:
        _SQL_SETS.pop(next(iter(_SQL_SETS)))
    kw: dict[str, Any] = {"params": params}
    if out_of_order is not None:
        kw["out_of_order"] = {name: out_of_order for name in data}
    return qs.run(data, output, **kw) if stream else qs.table(data, output, **kw)


def _arrow_data(d: Any) -> Any:
    """A source sql() binds: Polars' frames as Arrow (the runtime reads
    Arrow and pandas), the rest as given."""
    if type(d).__module__.split(".")[0] == "polars" and hasattr(d, "to_arrow"):
        return d.to_arrow()
    return d
