"""One preparation of a run, for every face that starts one.

    gsqlc run (cli) ──┐            settle()             bind()            decide_split()   start()
    run() (api) ──────┼─► RunRequest ──► SettledRequest ──► PreparedRun ──► Split ──► Run | SplitRun
    run_query (spark) ┘  (before a compile: options,      (with the plan's      (threads)   (runner:
                          sources, time bounds)            summary: bindings,                 the C ABI)
                                                           params, outputs)

A face only turns its own arguments (flags, keywords) into a RunRequest and
shows what comes back; every check, binding and choice is made here once.
Errors name each setting in both faces' terms (errors.SettingError), so no
face rewrites another's messages.  Spark's driver settles its request here
too and binds the DataFrames itself; its tasks make a run.Run directly.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional, Sequence, Union

from ..errors import SettingError, UsageError
from ..record import field, record
from .bindings import (
    ARROW,
    Bindings,
    as_record_batch_reader,
    check_params,
    check_skew,
    check_uri,
    in_memory,
    in_memory_table,
    interfaces_of,
    outputs_of,
    resolve_bindings,
    run_options,
    source_options,
    time_options,
)
from .interfaces import Interfaces, SettingWhere, TimeBounds, check_seconds, check_time_unit
from .plan_summary import PlanSummary
from .progress import ProgressOptions
from .run import ArrowOutput, Output, Run, RunInputs, TextOutput
from .split import AUTO_MIN_BYTES, Split, machine_threads

if TYPE_CHECKING:
    from .parallel import PartitionRun, SplitRun


@record(frozen=True)
class RunOptions:
    """The runtime's settings of a run, typed (the CLI's flags and run()'s
    keywords); runtime() checks them and gives the C ABI's key=value form.
    clock: 'auto' lets the runtime choose (the records' own time when every
    source is a recording, else the wall clock).  csv_header: every CSV
    file or stream's first line names its columns, unless its URI says
    otherwise (bindings.source_options: an option per source)."""
    clock: str = "auto"
    heartbeat_interval: Union[str, float] = 1
    csv_separator: str = ","
    csv_strict: bool = False
    csv_header: bool = False
    stall_intervals: int = 3
    trace: Optional[str] = None
    batch: Optional[int] = None
    columnar: str = "auto"
    prefilter: str = "on"
    pcap_reader: Optional[str] = None
    max_groups: Optional[int] = None
    report: str = "all"        # 'losses': only lost or suspect input and warnings

    def runtime(self) -> dict[str, str]:
        return run_options(clock=self.clock, heartbeat_interval=self.heartbeat_interval,
                           csv_separator=self.csv_separator, csv_strict=self.csv_strict,
                           stall_intervals=self.stall_intervals, trace=self.trace,
                           batch=self.batch, columnar=self.columnar, prefilter=self.prefilter,
                           pcap_reader=self.pcap_reader, max_groups=self.max_groups,
                           report=self.report)


@record(frozen=True)
class RunRequest:
    """What a face asks of a run.  sources: (interface, URI or Arrow data)
    pairs, a name given again binding an interface set (members NAME.0,
    NAME.1, ...); max_skew: (interface, seconds); output: a query name, a
    list of names (iteration then yields pairs), or None for every output
    query (all_outputs) or else the only one."""
    sources: list[tuple[str, Any]] = field(default_factory=list)
    interfaces_file: Optional[str] = None
    max_skew: list[tuple[str, Any]] = field(default_factory=list)
    bounds: TimeBounds = field(default_factory=TimeBounds)
    params: dict[str, Any] = field(default_factory=dict)
    output: Union[None, str, Sequence[str]] = None
    all_outputs: bool = False
    options: RunOptions = field(default_factory=RunOptions)


@record(frozen=True)
class SettledRequest:
    """A request checked without the queries: its interfaces (the file's,
    then the sources', skews and bounds), the Arrow data by member
    interface, and the runtime options."""
    request: RunRequest
    interfaces: Interfaces
    arrow: dict[str, Any]
    options: dict[str, str]


@record(frozen=True)
class PreparedRun:
    """A request bound to a query set: what each interface is bound to, the
    runtime options with the bindings' time options, the checked
    parameters, the output queries, and the Arrow data bound."""
    settled: SettledRequest
    bindings: Bindings
    options: dict[str, str]
    params: dict[str, str]
    outputs: list[str]
    pairs: bool
    data: dict[str, Any]          # interface -> Arrow data (in-memory data as a Table)

    @property
    def files(self) -> list[tuple[str, str]]:
        """(interface, URI) of the sources that are not Arrow data."""
        return [(i, u) for i, u in self.bindings.sources if u != ARROW]

    def rows_in_memory(self) -> Optional[int]:
        """The rows of the input when all of it is Arrow data held in memory."""
        if not self.data or self.files or not all(in_memory(d) for d in self.data.values()):
            return None
        rows: int = sum(in_memory_table(d).num_rows for d in self.data.values())
        return rows


# ------------------------------------------------------------ time bounds


def time_bounds(out_of_order: Union[None, Mapping[str, Any], Sequence[tuple[str, Any]]] = None,
                latency: Union[None, Mapping[str, Any], Sequence[tuple[str, Any]]] = None,
                skew: Union[None, Mapping[tuple[str, str], Any],
                            Sequence[tuple[tuple[str, str], Any]]] = None,
                heartbeat_timeout: Optional[Any] = None,
                heartbeats: Optional[Mapping[str, Any]] = None,
                time_unit: Union[None, Mapping[str, Any], Sequence[tuple[str, Any]]] = None
                ) -> TimeBounds:
    """The time bounds of a run, checked: out_of_order and latency
    {interface: seconds}, skew {(a, b): (after, bound)}, heartbeat_timeout
    seconds, heartbeats the [heartbeats] keys (checked with the
    interfaces), time_unit {interface: unit}.  Each may be given as
    (key, value) pairs, in the order the command line gave them."""
    def pairs(x: Any) -> list[tuple[Any, Any]]:
        return list(x.items()) if isinstance(x, Mapping) else list(x or ())
    return TimeBounds(
        [(k, check_seconds(f"out_of_order {k}", "out_of_order", v, f"--out-of-order {k}"))
         for k, v in pairs(out_of_order)],
        [(k, check_seconds(f"latency {k}", "latency", v, f"--latency {k}"))
         for k, v in pairs(latency)],
        [_skew_entry(k, v) for k, v in pairs(skew)],
        None if heartbeat_timeout is None else
        check_seconds("heartbeat_timeout", "timeout", heartbeat_timeout, "--heartbeat-timeout"),
        heartbeats=dict(heartbeats) if heartbeats else None,
        time_unit=[(k, check_time_unit(f"time_unit {k}", v, f"--time-unit {k}"),
                    SettingWhere(f"time_unit {k}", f"--time-unit {k}"))
                   for k, v in pairs(time_unit)])


def _skew_entry(pair: Any, value: Any) -> tuple[str, str, float, float]:
    """A skew bound {(a, b): (after, bound)}, checked."""
    if not (isinstance(pair, tuple) and len(pair) == 2 and all(isinstance(x, str) for x in pair)):
        raise UsageError(f"skew: key {pair!r} must be a pair of interface names (a, b)")
    where, flag = f"skew {pair[0]}:{pair[1]}", f"--skew {pair[0]}:{pair[1]}"
    if not (isinstance(value, (tuple, list)) and len(value) == 2):
        raise SettingError(where, flag, f": value {value!r} must be (after, bound) in seconds",
                           f"={value}: expected A:B=AFTER,BOUND")
    return (pair[0], pair[1], check_seconds(where, "after", value[0], flag),
            check_seconds(where, "bound", value[1], flag))


def check_bound_interfaces(ifaces: Interfaces, bounds: TimeBounds,
                           skews: Sequence[tuple[str, float]] = ()) -> None:
    """A max skew, out_of_order, latency or time_unit setting must name an
    interface a source binds (a skew pair's are checked by the interfaces)."""
    for what, flag, names in (("max skew", "--max-skew", [n for n, _ in skews]),
                              ("out_of_order", "--out-of-order",
                               [n for n, _ in bounds.out_of_order]),
                              ("latency", "--latency", [n for n, _ in bounds.latency]),
                              ("time_unit", "--time-unit", [n for n, _, _ in bounds.time_unit])):
        for name in names:
            if name not in ifaces.sources and name not in ifaces.sets:
                raise SettingError(f"{what} {name}", f"{flag} {name}",
                                   f": no source binds an interface '{name}'",
                                   f": no --source binds an interface '{name}'")


# ------------------------------------------------------------ preparing


def settle(request: RunRequest) -> SettledRequest:
    """Check a request as far as it goes without the queries: the options,
    every source URI, the skews, the interfaces and the time bounds."""
    options = request.options.runtime()
    for name, value in request.sources:
        if isinstance(value, (str, os.PathLike)):
            check_uri(name, _uri(value))
    skews = [(name, check_skew(name, value)) for name, value in request.max_skew]
    by_name: dict[str, list[Any]] = {}
    for name, value in request.sources:
        by_name.setdefault(name, []).append(value)
    ifaces, arrow = interfaces_of({k: v if len(v) > 1 else v[0] for k, v in by_name.items()},
                                  dict(skews), request.interfaces_file, request.bounds)
    check_bound_interfaces(ifaces, request.bounds, skews)
    return SettledRequest(request, ifaces, arrow, options)


def _uri(value: Union[str, "os.PathLike[str]"]) -> str:
    from .bindings import normalize_uri
    return normalize_uri(os.fspath(value))


def choose_outputs(summary: PlanSummary, output: Union[None, str, Sequence[str]],
                   all_outputs: bool = False, several: bool = True) -> tuple[list[str], bool]:
    """(the output queries, whether the run yields (query, batch) pairs);
    several: whether the face takes a list of outputs."""
    if output is None:
        if all_outputs:
            return list(summary.leaves), False
        if len(summary.leaves) != 1:
            raise UsageError(f"the query set has {len(summary.leaves)} output queries "
                             f"({', '.join(summary.leaves)}): name one with output="
                             + (", or a list" if several else ""))
        return list(summary.leaves), False
    if isinstance(output, str):
        return outputs_of(summary, [output]), False
    return outputs_of(summary, list(output)), not all_outputs


def bind(summary: PlanSummary, settled: SettledRequest) -> PreparedRun:
    """Bind a settled request to a query set: parameters, each LFTA's
    interface (sets by member), the time options of what is bound, the
    outputs, and Arrow data held in memory marked as a recording (replayed
    in time, as a file is)."""
    req, ifaces = settled.request, settled.interfaces
    params = {k: str(v) for k, v in req.params.items()}
    check_params(summary, params)
    arrow_members = {m for m, u in ifaces.sources.items() if u.startswith(ARROW + ":")}
    bindings = resolve_bindings(summary, Interfaces(
        {k: v for k, v in ifaces.sources.items() if k not in arrow_members},
        ifaces.sets, ifaces.skews, ifaces.default), arrow_members)
    options = {**settled.options, **time_options(ifaces, bindings),
               **source_options(bindings, req.options.csv_header)}
    outputs, pairs = choose_outputs(summary, req.output, req.all_outputs)
    data: dict[str, Any] = {}
    for iface, uri in bindings.sources:
        if uri == ARROW:
            data[iface] = settled.arrow[iface]
            if in_memory(data[iface]):   # converted once (a DataFrame is copied)
                data[iface] = in_memory_table(data[iface])
                options[f"recording:{iface}"] = "1"
            else:
                # an iterator or reader may be a live feed: hand over each
                # batch's results before awaiting the next
                options["arrow_flush"] = "1"
    return PreparedRun(settled, bindings, options, params, outputs, pairs, data)


def prepare(summary: PlanSummary, request: RunRequest) -> PreparedRun:
    """settle() and bind() at once (the query set is at hand)."""
    return bind(summary, settle(request))


# ------------------------------------------------------------ threads


# the cores below which a run over capture files stays on one thread unless
# threads= says otherwise: on 2 cores the split measured 0.92-1.21x of one
# thread (bench/README.md), the text output and the HFTAs being one more thread
CAPTURE_MIN_CORES = 3


def decide_split(prep: PreparedRun, library: Any, plan_of: Callable[[], Any],
                 threads: Optional[int], captures_need_cores: bool = False) -> Split:
    """How the run splits over threads (runtime.split_plan), or why it stays
    on one.  plan_of gives the planned query set's plan, asked only when a
    split is possible.  captures_need_cores: a run over capture files splits
    unasked only on CAPTURE_MIN_CORES cores or more, and only files of twice
    AUTO_MIN_BYTES or more (decided here without loading the split's
    machinery: the cached start-up of `gsqlc run`)."""
    files = dict(prep.files)
    if captures_need_cores and not prep.data:
        if threads == 1:
            return Split(1, reason="one thread asked for")
        cores = machine_threads()
        if threads is None and cores < CAPTURE_MIN_CORES:
            return Split(cores, reason=(
                f"{cores} core(s): the runs of records and the run merging them would share "
                "them (no gain measured on 2 cores); --threads N splits"))
        paths = [u.partition(":")[2] for u in files.values() if u.partition(":")[0] == "pcap"]
        if threads is None and not any(os.path.isfile(f) and os.path.getsize(f) >= 2 * AUTO_MIN_BYTES
                                       for f in paths):
            return Split(cores, reason="too few to split: no capture file of 32 MiB or more")
    from . import split_plan
    reason = split_plan.options_reason(prep.options, bool(files)) if files and not prep.data else ""
    if reason:
        return Split(threads or machine_threads(), reason=reason)
    cuts = split_plan.CaptureCuts(library, files, threads) if files and not prep.data else None
    readers = {i: [n.name for n in ns] for i, ns in prep.bindings.readers.items()}
    return split_plan.plan_split(plan_of(), prep.data, readers, files,
                                 split_plan.multi_member(prep.bindings.members), prep.options,
                                 prep.outputs, threads, library, cuts)


# ------------------------------------------------------------ starting


def start(prep: PreparedRun, library: Any, output: Output, split: Split,
          plan_of: Callable[[], Any], progress: Optional[ProgressOptions] = None
          ) -> Union[Run, "SplitRun", "PartitionRun"]:
    """The run: on one thread, over split.used threads whose LFTAs feed one
    HFTA run, or over split.used hash partitions (runtime.parallel)."""
    if split.partitions and not isinstance(output, ArrowOutput):
        split = Split(split.requested, reason=("text output is written by one run (hash "
                                               "partitions give Arrow batches)"))
    readers = {iface: as_record_batch_reader(d, iface) for iface, d in prep.data.items()}
    options = {**prep.options,
               **(output.runtime_options() if isinstance(output, TextOutput) else {})}
    inputs = RunInputs(prep.files, readers, {}, list(prep.bindings.members), options,
                       prep.params)
    if split.used <= 1:
        if progress is not None and progress.total_rows is None:
            progress = ProgressOptions(progress.notebook, prep.rows_in_memory(), progress.colour)
        return Run(library, inputs, output, extra_stats={"threads": split.info()},
                   progress=progress)
    from ..planner.nodes import HftaNode
    from ..semantics.types import Temporal
    from . import parallel
    from .split_plan import lfta_streams
    plan = plan_of()
    names = prep.outputs
    if split.partitions and isinstance(output, ArrowOutput):
        temporal = [(c.name, c.temporal == Temporal.INCREASING)
                    for c in plan.node(names[0]).output.columns if c.temporal.is_temporal]
        return parallel.PartitionRun(library, split, list(names), temporal, options, prep.params,
                                     output.batch_rows, output.strings, output.pairs,
                                     prep.bindings.members, ip_format=output.ip_format,
                                     progress=progress)
    make_final = None
    # text is written by a run of its own, also of LFTA outputs; Arrow
    # batches of LFTAs come from the slices' runs
    if isinstance(output, TextOutput) or any(isinstance(n, HftaNode)
                                             for n in plan.upstream(names)):
        def make_final(streams: dict[str, Any]) -> Run:
            return Run(library, RunInputs(streams=streams, options=options, params=prep.params),
                       output)
    arrow = output if isinstance(output, ArrowOutput) else ArrowOutput(
        names, strings="bytes", batch_rows=0, pairs=True)
    return parallel.SplitRun(library, split,
                             lfta_streams(plan, names, prep.bindings.readers, split),
                             names, options, prep.params, arrow.batch_rows, arrow.strings,
                             arrow.pairs, make_final, prep.bindings.members,
                             ip_format=arrow.ip_format, progress=progress)


__all__ = ["RunOptions", "RunRequest", "SettledRequest", "PreparedRun", "time_bounds",
           "check_bound_interfaces", "settle", "bind", "prepare", "choose_outputs",
           "decide_split", "start", "ArrowOutput", "TextOutput", "Run"]
