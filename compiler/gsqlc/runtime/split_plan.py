"""Planning a run over threads (runtime.parallel runs it): where in-memory
Arrow tables and capture files are cut, at clean boundaries, or why the run
stays on one thread.  Imported only when a run may split: runtime.split
holds what deciding that takes, runtime.session decides.
"""
from __future__ import annotations

import dataclasses
import os
import threading
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Optional, Sequence

from ..errors import RunError
from . import runner
from .split import AUTO_MIN_BYTES, AUTO_MIN_ROWS, FileSlice, Split, machine_threads

if TYPE_CHECKING:
    from ..frontend import ast
    from ..planner.nodes import PlanNode
    from ..planner.plan import Plan

_PACKET_TIME_ACCESSORS = {"get_time", "get_timestamp"}
# a clean boundary is searched within this many rows from each even cut
_SEARCH = 1 << 20
# options a split run accepts (any other, e.g. a time bound, keeps one thread)
_SPLIT_OPTIONS = {"clock", "csv_separator", "csv_strict", "heartbeat_interval",
                  "stall_intervals", "columnar", "batch", "pcap_reader", "max_groups",
                  "report"}


def _exprs(x: Any) -> Iterator[ast.Expr]:
    """Every expression of a query's syntax tree."""
    from ..frontend import ast
    if isinstance(x, ast.Expr):
        yield x
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        for f in dataclasses.fields(x):
            if f.name != "span":
                yield from _exprs(getattr(x, f.name))
    elif isinstance(x, (list, tuple)):
        for y in x:
            yield from _exprs(y)
    elif isinstance(x, dict):
        for y in x.values():
            yield from _exprs(y)


def _reads_clock(nodes: Sequence[PlanNode]) -> Optional[str]:
    """The name of a query of these plan nodes that reads the run's clock (a
    function of the clock, or a PROTOCOL field of the system's), or None."""
    from ..frontend import ast
    from ..planner.nodes import LftaNode
    from ..semantics import catalog
    for n in nodes:
        system = {name for name, f in n.protocol.fields.items()
                  if f.source == "system"} if isinstance(n, LftaNode) else set()
        if isinstance(n, LftaNode) and any(f.required for f in n.protocol.fields.values()
                                           if f.source == "system"):
            return n.query.name
        for x in _exprs(n.query.query):
            if catalog.reads_clock(x) or (isinstance(x, ast.ColumnRef) and x.name in system):
                return n.query.name
    return None


def _column(table: Any, name: str) -> Any:
    """The column of `table` a PROTOCOL field reads, or None."""
    from .arrow_types import field_column
    c = field_column(table.column_names, name)
    return table.column(c) if c is not None else None


def _clean_boundary(cols: list[tuple[Any, bool]], start: int, n: int) -> Optional[int]:
    """The first row b in [start, start + _SEARCH) (b < n) where every
    temporal column is clean: max(col[:b]) <= min(col[b:]) (increasing; the
    reverse for decreasing), or None.  Each column is read once: the rows
    before the span and after it by one pyarrow aggregate each, the span
    itself with running maxima and minima."""
    import numpy as np
    import pyarrow.compute as pc
    end = min(n, start + _SEARCH)
    if start >= end:
        return None
    ok = np.ones(end - start, dtype=bool)
    for col, increasing in cols:
        sign = 1.0 if increasing else -1.0    # decreasing: the same test on -col
        head = (pc.max if increasing else pc.min)(col.slice(0, start)).as_py()
        tail = (pc.min if increasing else pc.max)(col.slice(end)).as_py() if end < n else None
        v = col.slice(start, end - start).to_numpy(zero_copy_only=False).astype(np.float64) * sign
        before = np.empty_like(v)              # the largest value before row start + j
        before[0] = -np.inf if head is None else sign * float(head)
        before[1:] = np.maximum(before[0], np.maximum.accumulate(v)[:-1])
        after = np.minimum.accumulate(v[::-1])[::-1]  # the smallest from row start + j on
        if tail is not None:
            after = np.minimum(after, sign * float(tail))
        ok &= before <= after
    hits = np.flatnonzero(ok)
    return start + int(hits[0]) if len(hits) else None


def multi_member(members: Sequence[tuple[str, str]]) -> bool:
    """Whether some interface set of these (set, member) pairs has several
    members (a single bound interface is the default set's one member)."""
    sets = [s for s, _ in members]
    return len(sets) != len(set(sets))


def lfta_streams(plan: Plan, outputs: Sequence[str], readers: Mapping[str, Sequence[Any]],
                 split: Split) -> dict[str, list[tuple[str, Any]]]:
    """SplitRun's lfta_streams: per sliced interface, the LFTAs reading it
    (readers: plan summaries with a name) that the outputs need, with the
    Arrow schema of each one's stream."""
    from .arrow_types import stream_schema
    by_name = {n.name: n for n in plan.upstream(outputs)}
    return {iface: [(n.name, stream_schema(by_name[n.name].output, "bytes", "int"))
                    for n in ns if n.name in by_name]
            for iface, ns in readers.items() if iface in split.slices}


def options_reason(options: Mapping[str, str], has_files: bool) -> str:
    """Why a run with these options stays on one thread ("": it need not)."""
    for k, v in options.items():
        if k.startswith(("recording:", "csv_header:")):   # a table held in memory: what
            continue                                          # is split; a CSV file is not
        if k not in _SPLIT_OPTIONS or (k == "clock" and v == "data"):
            what = "clock=data" if k == "clock" else f"option {k}"
            return f"{what}: time bounds and the data clock keep a run on one thread"
    if has_files and options.get("pcap_reader") == "libpcap":
        return "option pcap_reader=libpcap: captures are cut by the memory-mapped reader"
    return ""


class CaptureCuts:
    """The cuts of capture files (runner.pcap_cuts), found on a thread of
    their own from the start, so that the walk of a large capture's headers
    overlaps what comes before the split (planning, imports)."""

    def __init__(self, library: Any, files: Mapping[str, str], threads: Optional[int]) -> None:
        self._parts = machine_threads() if threads is None else threads
        self._found: dict[tuple[str, int], tuple[list[int], str]] = {}
        paths = [u.partition(":")[2] for u in files.values() if u.partition(":")[0] == "pcap"]
        self._library = library
        self._thread = threading.Thread(target=self._find, args=(paths,), daemon=True,
                                        name="gsqlc-capture-cuts")
        if self._parts > 1 and paths:
            self._thread.start()

    def _find(self, paths: list[str]) -> None:
        for path in paths:
            try:
                self._found[(path, self._parts)] = runner.pcap_cuts(self._library, path,
                                                                    self._parts)
            except (RunError, OSError):
                pass            # found again (and reported) by get()

    def get(self, path: str, parts: int) -> tuple[list[int], str]:
        if self._thread.is_alive():
            self._thread.join()
        found = self._found.get((path, parts))
        return found if found is not None else runner.pcap_cuts(self._library, path, parts)


def plan_split(plan: Plan, arrow: Mapping[str, Any], readers: Mapping[str, Sequence[str]],
               files: Mapping[str, str], has_sets: bool, options: Mapping[str, str],
               outputs: Sequence[str], threads: Optional[int], library: Any = None,
               cuts: Optional[CaptureCuts] = None) -> Split:
    """How a run of `plan` over these sources splits (see the module's
    docstring).  arrow: the Arrow data bound to each interface; files: the
    URI bound to each other interface; readers: the LFTAs reading each bound
    interface; library: the built query set (it finds a capture's cuts, or
    `cuts` found them); threads None is the machine's cores, each slice then
    at least AUTO_MIN_ROWS rows or AUTO_MIN_BYTES bytes."""
    from ..planner.nodes import HftaAggregate, LftaAggregate
    from ..semantics.types import Temporal
    from .bindings import in_memory, in_memory_table
    want = machine_threads() if threads is None else threads
    sp = Split(want)
    if want <= 1:
        sp.reason = "one thread asked for"
        return sp
    for iface, uri in files.items():
        scheme, _, path = uri.partition(":")
        if scheme != "pcap" or path == "-":
            what = ("a CSV file" if scheme == "csv" else "a live interface"
                    if scheme == "pcap-live" else "a TCP stream" if scheme == "csvtcp"
                    else "a GDAT file" if scheme == "gdat"
                    else "standard input")
            sp.reason = f"source {iface or 'default'} is {what}, read on one thread"
            return sp
    if has_sets:
        sp.reason = "an interface set is read on one thread"
        return sp
    if not arrow and not files:
        sp.reason = "no Arrow source or capture file"
        return sp
    for iface, obj in arrow.items():
        if not in_memory(obj):
            sp.reason = (f"source {iface or 'default'} is a reader or iterator, read as it comes "
                         "on one thread")
            return sp
    sp.reason = options_reason(options, bool(files))
    if sp.reason:
        return sp
    nodes = plan.upstream(outputs)
    needed = {n.name for n in nodes}
    q = _reads_clock(nodes)
    if q is not None:
        sp.reason = f"query {q} reads the clock"
        return sp
    for n in nodes:
        if isinstance(n, LftaAggregate) and (n.name in outputs or not all(
                isinstance(r, HftaAggregate) for r in plan.consumers(n.name) if r.name in needed)):
            sp.reason = f"the LFTA aggregation {n.name} is read as it is (no HFTA merges it)"
            return sp
    for iface in files:
        for n in nodes:
            if isinstance(n, LftaAggregate) and n.name in readers.get(iface, ()):
                for f in n.protocol.fields.values():
                    if (f.temporal in (Temporal.INCREASING, Temporal.DECREASING)
                            and f.accessor not in _PACKET_TIME_ACCESSORS):
                        sp.reason = (f"query {n.query.name} groups by a temporal field "
                                     f"({f.name}) a capture is not cut by")
                        return sp
    tables = {iface: in_memory_table(obj) for iface, obj in arrow.items()}
    if not files and _partitions(sp, plan, outputs, nodes, tables, readers, threads):
        return sp
    sizes = {iface: os.path.getsize(uri.partition(":")[2]) for iface, uri in files.items()}
    if threads is not None:
        used = min([want, *(t.num_rows for t in tables.values())])
    else:
        used = min([want, *(t.num_rows // AUTO_MIN_ROWS for t in tables.values()),
                    *(b // AUTO_MIN_BYTES for b in sizes.values())])
    if used <= 1:
        sp.reason = "too few to split: " + ", ".join(
            [*(f"{t.num_rows} rows" for t in tables.values()),
             *(f"{b} bytes" for b in sizes.values())])
        return sp
    for iface, t in tables.items():
        reason = _cut_table(sp, iface, t, nodes, readers, used)
        if reason:
            sp.reason = reason
            return sp
    for iface, uri in files.items():
        path = uri.partition(":")[2]
        found, why = (cuts.get(path, used) if cuts is not None
                      else runner.pcap_cuts(library, path, used))
        if not found:
            sp.reason = f"source {iface or 'default'}: {why}"
            return sp
        sp.slices[iface] = [FileSlice(uri, a, b) for a, b in zip(found, found[1:])]
        sp.offsets[iface] = [0] * (len(found) - 1)
    used = min(len(s) for s in sp.slices.values())
    if used <= 1:
        sp.reason = "no clean boundary: the temporal columns are out of order throughout"
        sp.slices, sp.offsets = {}, {}
        return sp
    # every interface is cut into the same number of slices (the fewest found)
    for iface in list(sp.slices):
        s, o = sp.slices[iface], sp.offsets[iface]
        if len(s) > used:
            if isinstance(s[0], FileSlice):
                s[used - 1] = FileSlice(s[0].uri, s[used - 1].start, s[-1].end)
            else:
                import pyarrow as pa
                s[used - 1] = pa.concat_tables(s[used - 1:])
            del s[used:], o[used:]
    sp.used = used
    return sp


def _partitions(sp: Split, plan: Plan, outputs: Sequence[str], nodes: Sequence[PlanNode],
                tables: Mapping[str, Any], readers: Mapping[str, Sequence[str]],
                threads: Optional[int]) -> bool:
    """Split the run into hash partitions (into sp) when it can: every
    output an aggregation merging the partials of one LFTA aggregation
    (its groups then fall apart by their keys' hash), over tables held in
    memory whose temporal columns are in order (no record late: each
    partition's run counts each of its groups as one run counts it).  The
    partitions share no work but reading the rows, and the HFTAs run in
    each, not once after slices."""
    from ..planner.nodes import HftaAggregate, LftaAggregate
    if len(outputs) != 1 or len(nodes) != 2:
        return False    # the partitions' outputs are merged one query at a time, and
                        # nothing but the aggregation's two halves may be needed
    by_name = {n.name: n for n in nodes}
    n = by_name[outputs[0]]
    lfta = by_name.get(n.inputs[0]) if len(n.inputs) == 1 else None
    if not (isinstance(n, HftaAggregate) and n.closing is None and n.sampling is None
            and isinstance(lfta, LftaAggregate) and lfta.query is n.query):
        return False    # not the two halves of one aggregation
    from ..semantics.types import Temporal
    if all(e.info.temporal is not Temporal.NONE for _, e in lfta.group_by):
        return False    # groups by time alone: a partition would hold whole epochs in turn
    rows = min(t.num_rows for t in tables.values())
    used = sp.requested if threads is not None else min(sp.requested, rows // AUTO_MIN_ROWS)
    if used <= 1:
        return False
    for iface, t in tables.items():
        if not all(_in_order(c, increasing)
                   for c, increasing in _temporal_columns(t, iface, nodes, readers)):
            return False
    sp.partitions = True
    sp.used = used
    sp.slices = {iface: [t] for iface, t in tables.items()}
    sp.offsets = {iface: [0] for iface in tables}
    return True


def _in_order(col: Any, increasing: bool) -> bool:
    """Whether a column has no nulls and never goes back."""
    import numpy as np
    if col.null_count:
        return False
    v = col.to_numpy(zero_copy_only=False)
    if len(v) < 2:
        return True
    d = v[1:] >= v[:-1] if increasing else v[1:] <= v[:-1]
    return bool(np.all(d))


def _temporal_columns(t: Any, iface: str, nodes: Sequence[PlanNode],
                      readers: Mapping[str, Sequence[str]]) -> list[tuple[Any, bool]]:
    """The columns of Arrow table t (interface iface) that the LFTA
    aggregations among `nodes` reading it take as temporal fields, with
    whether each increases."""
    from ..planner.nodes import LftaAggregate
    from ..semantics.types import Temporal
    cols: list[tuple[Any, bool]] = []
    for n in nodes:
        if isinstance(n, LftaAggregate) and n.name in readers.get(iface, ()):
            for f in n.protocol.fields.values():
                if f.temporal in (Temporal.INCREASING, Temporal.DECREASING):
                    c = _column(t, f.name)
                    if c is not None:
                        cols.append((c, f.temporal == Temporal.INCREASING))
    return cols


def _cut_table(sp: Split, iface: str, t: Any, nodes: Sequence[PlanNode], readers: Mapping[str, Sequence[str]],
               used: int) -> str:
    """Cut Arrow table t of interface iface into up to `used` slices at
    clean boundaries (into sp); a reason when it cannot be cut."""
    cols = _temporal_columns(t, iface, nodes, readers)
    if any(c.null_count for c, _ in cols):
        return f"source {iface or 'default'}: a temporal column has nulls"
    cuts = [0]
    for k in range(1, used):
        target = max(k * t.num_rows // used, cuts[-1] + 1)
        b = _clean_boundary(cols, target, t.num_rows) if cols else target
        if b is not None and b > cuts[-1] and b < t.num_rows:
            cuts.append(b)
    cuts.append(t.num_rows)
    sp.offsets[iface] = cuts[:-1]
    sp.slices[iface] = [t.slice(a, b - a) for a, b in zip(cuts, cuts[1:])]
    return ""
