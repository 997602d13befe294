"""A run over in-memory Arrow data or capture files on several threads.

Each Arrow source held in memory is cut into contiguous row ranges (slices),
each classic pcap file into contiguous runs of records (byte ranges read
with option pcap_range:NAME).
The LFTAs of each slice run on a thread of their own -- a run of the library
with its own aggregation tables, whose outputs are the LFTA streams -- and
one more run, the HFTAs', reads those streams: each LFTA stream is its
slices' outputs concatenated in slice order, handed over as the slices
produce them.  A super-aggregate merges the partials of every slice as it
merges the partials an LFTA ejects (the split Spark's tasks use too).  When
every output asked for is an LFTA's, the slices' batches are the result, in
slice order, and no HFTA run is needed.

Results equal one thread's.  A selection is stateless, and the concatenated
outputs of its slices are its one-thread output.  An LFTA aggregation
decides what is late by the largest temporal value it has seen: a slice
starts only at a *clean* boundary, where no earlier row's temporal value is
greater than a later row's (smaller, for a decreasing attribute), so every
row meets the same decision it meets on one thread; boundaries are searched
near the even cuts, and where none is near there are fewer slices (a
capture's packets are cut by their timestamps, between blocks of 4096
records: gsqlc_pcap_cuts).  A run this cannot be said of -- a query reading
the clock, time bounds or a data clock (heartbeats that follow the data),
interface sets, CSV files, live interfaces, pcapng captures or a live Arrow
feed -- runs on one thread; stats["threads"] says which and why.  Where the
cuts go is planned by runtime.split_plan; this module runs the slices and
the HFTA run over them, and merges their statistics and reports.
"""
from __future__ import annotations

import copy
import queue
import re
import threading
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Optional, Sequence

from ..errors import RunError, UsageError
from . import progress, runner
from .progress import ProgressOptions
from .results import ResultConversions
from .split import FileSlice, Split

if TYPE_CHECKING:
    from .progress import NoLine, ProgressLine
    from .run import Run

# ------------------------------------------------------------ running


_DONE = object()


def shift_rows(text: str, iface: str, offset: int) -> str:
    """Row numbers of a slice's messages about its Arrow source made the
    whole input's (the slice starts at row `offset` + 1)."""
    if not offset:
        return text
    pat = re.compile(r"(arrow:" + re.escape(iface) + r": row )(\d+)")
    return pat.sub(lambda m: m.group(1) + str(int(m.group(2)) + offset), text)


class SplitRun(ResultConversions):
    """A run split over threads (the module's docstring); iterated and used
    like api.Run.  final: the HFTA run made by make_final(streams) from
    readers of the LFTA streams, None when every output is an LFTA's."""

    def __init__(self, library: Any, split: Split, lfta_streams: dict[str, list[tuple[str, Any]]],
                 outputs: list[str], options: Mapping[str, str], params: Mapping[str, str],
                 batch_rows: int, strings: str, pairs: bool,
                 make_final: Optional[Callable[[dict[str, Any]], Run]],
                 set_members: Sequence[tuple[str, str]] = (), ip_format: str = "text",
                 progress: Optional[ProgressOptions] = None) -> None:
        self.library = library
        self._progress = progress           # run(progress=True): a bar while iterated
        self.split = split
        self.outputs = outputs
        self.stats: dict[str, Any] = {}
        self.report: str = ""
        self._lfta = lfta_streams            # iface -> [(stream, raw schema)]
        self._options = dict(options)
        self._params = dict(params)
        self._batch_rows = batch_rows
        self._strings = strings
        self._ip_format = ip_format
        self._pairs = pairs
        self._make_final = make_final
        self._set_members = list(set_members)    # one member each (plan_split)
        self._final: Optional[Run] = None
        self._queues: dict[tuple[str, int], queue.Queue[Any]] = {}
        self._results: dict[tuple[str, int], runner.RunResult] = {}
        self._errors: list[BaseException] = []
        self._handles: list[runner.RunHandle] = []
        self._threads: list[threading.Thread] = []
        self._started = False
        # collect(): each slice's batches, kept by its thread until the end
        self._collected: Optional[dict[tuple[str, int], list[Any]]] = None

    # -- the slices' runs
    def _slice(self, iface: str, k: int, handle: runner.RunHandle,
               ready: Optional[Callable[[], None]] = None) -> None:
        piece = self.split.slices[iface][k]
        streams = [s for s, _ in self._lfta[iface]]

        def deliver(stream: str, batch: Any) -> bool:
            if self._collected is not None:
                self._collected[(stream, k)].append(batch)
            else:
                self._queues[(stream, k)].put(batch)
            return True
        try:
            sources: list[tuple[str, str]]
            arrow: Optional[dict[str, Any]]
            if isinstance(piece, FileSlice):
                sources = [(iface, piece.uri)]
                options = {**self._options, f"pcap_range:{iface}": f"{piece.start}:{piece.end}"}
                arrow = None
            else:
                sources, options, arrow = [], self._options, {iface: piece.to_reader()}
            res = runner.run_library(self.library, sources, [], options, self._params,
                                     arrow_sources=arrow,
                                     arrow_sinks=[(s, deliver) for s in streams],
                                     batch_rows=self._batch_rows, cancel=handle,
                                     set_members=self._set_members, ready=ready)
            self._results[(iface, k)] = res
            if res.status != 0:
                msg = shift_rows(res.error, iface, self.split.offsets[iface][k])
                raise RunError(msg + (("\n" + res.report) if res.report else ""))
        except BaseException as e:  # noqa: BLE001 - handed to the consumer
            self._errors.append(e)
            for h in self._handles:
                h.cancel()
        finally:
            if self._collected is None:
                for s in streams:
                    self._queues[(s, k)].put(_DONE)

    def _start(self) -> None:
        n = self.split.used
        work: list[tuple[str, int]] = []
        for k in range(n):
            for iface, streams in self._lfta.items():
                for s, _ in streams:
                    self._queues[(s, k)] = queue.Queue()
                work.append((iface, k))
        pending: queue.SimpleQueue[tuple[str, int]] = queue.SimpleQueue()
        for w in work:                 # slice order: the first slices first
            pending.put(w)
        self._handles = [runner.RunHandle() for _ in work]
        handle_of = dict(zip(work, self._handles))

        # When every slice has a thread, the slices' runs start together once
        # all are set up: a run started early would slow the others' set-up
        # (its batches take the interpreter), and the last slice decides.
        n_threads = min(n, len(work))
        together = threading.Barrier(n_threads) if n_threads == len(work) > 1 else None

        def ready() -> None:
            try:
                if together is not None:
                    together.wait()
            except threading.BrokenBarrierError:
                pass    # a slice failed to set up: the run ends with its error

        def worker() -> None:
            while True:
                try:
                    iface, k = pending.get_nowait()
                except queue.Empty:
                    return
                try:
                    self._slice(iface, k, handle_of[(iface, k)], ready)
                finally:
                    if together is not None and (iface, k) not in self._results:
                        together.abort()    # never set up: the others go on
        self._threads = [threading.Thread(target=worker, name=f"gsqlc-slice-{i}", daemon=True)
                         for i in range(n_threads)]
        for t in self._threads:
            t.start()

    def _batches_of(self, stream: str, k: int) -> Iterator[Any]:
        """Slice k's batches of a stream, as they come."""
        q = self._queues[(stream, k)]
        while True:
            b = q.get()
            if b is _DONE:
                break
            yield b
        if self._errors:
            raise self._errors[0]

    def _batches(self, stream: str) -> Iterator[Any]:
        """A stream's batches, slice after slice, as they come."""
        for k in range(self.split.used):
            yield from self._batches_of(stream, k)

    def _reader(self, stream: str, schema: Any) -> Any:
        import pyarrow as pa
        return pa.RecordBatchReader.from_batches(schema, self._batches(stream))

    def __iter__(self) -> Iterator[Any]:
        if self._started:
            raise RuntimeError("a Run can be iterated once; call run() again")
        self._started = True
        self._start()
        # also when the HFTA run failed (e.g. its output closed) the
        # statistics are kept: the counters say what was processed
        yield from serve(self, self._items(), self._progress_line().start())

    def _items(self) -> Iterator[Any]:
        """The output: the slices' batches, or the HFTA run's."""
        from .arrow_types import finish_batch
        if self._make_final is None:
            for k in range(self.split.used):
                for iface, streams in self._lfta.items():
                    for s, _ in streams:
                        if s not in self.outputs:
                            continue
                        for b in self._batches_of(s, k):
                            b = finish_batch(b, self._strings, self._ip_format)
                            yield (s, b) if self._pairs else b
            return
        self._final = self._make_final(
            {s: self._reader(s, sch) for ss in self._lfta.values() for s, sch in ss})
        final = iter(self._final)
        try:
            yield from final
        except RunError:
            if self._errors:
                raise self._errors[0] from None
            raise
        finally:
            # slices first: the HFTA run may be waiting for their rows
            for h in self._handles:
                h.cancel()
            final.close()

    def collect(self) -> list[Any]:
        """The whole run's output, as the iteration would give it.  With no
        HFTA run after the slices, each slice's thread keeps its batches
        until it ends (no hand-over of each batch to the caller's thread,
        which would take a core from the slices)."""
        if self._make_final is not None or self._started:
            return list(self)
        from .arrow_types import finish_batches
        self._started = True
        self._collected = {(s, k): [] for k in range(self.split.used)
                           for ss in self._lfta.values() for s, _ in ss}
        self._start()
        with self._progress_line():
            runner.join_runs(self._threads, self._handles)
        if self._errors:
            raise self._errors[0]
        self._finish()
        got = [(s, b) for k in range(self.split.used) for streams in self._lfta.values()
               for s, _ in streams if s in self.outputs for b in self._collected[(s, k)]]
        return finish_batches(got, self._strings, self._pairs, self._ip_format)

    def _progress_line(self) -> ProgressLine | NoLine:
        return progress.line(self._progress, self.progress_handles,
                             total_rows=self.input_rows_total(),
                             total_bytes=self.input_bytes_total())

    def progress_handles(self) -> tuple[list[runner.RunHandle], list[runner.RunHandle]]:
        """(the slices' runs, the runs delivering the output: the HFTA run
        once it exists, else the slices'), for a progress line
        (runtime/progress.py)."""
        final = getattr(self._final, "handle", None)
        return list(self._handles), [final] if final is not None else list(self._handles)

    def input_bytes_total(self) -> Optional[int]:
        """The bytes of the capture slices (None: Arrow slices)."""
        pieces = [p for s in self.split.slices.values() for p in s]
        return (sum(p.size for p in pieces)
                if pieces and all(isinstance(p, FileSlice) for p in pieces) else None)

    def input_rows_total(self) -> Optional[int]:
        """The rows of the Arrow slices (None: capture slices)."""
        pieces = [p for s in self.split.slices.values() for p in s]
        return (sum(p.num_rows for p in pieces)
                if pieces and not any(isinstance(p, FileSlice) for p in pieces) else None)

    def cancel(self) -> None:
        """End the run as at end of input (see api.Run.cancel)."""
        for h in self._handles:
            h.cancel()
        if self._final is not None:
            self._final.cancel()

    def set_param(self, name: str, value: Any) -> None:
        """Refused: the threads of a split run read different parts of the
        input at once, so a change has no one instant; run with threads=1."""
        raise UsageError(f"parameter ${str(name).lstrip('$')}: a run split over threads has no "
                         "one instant for a change; run it with threads=1 to change parameters "
                         "while it goes on")

    def _finish(self) -> None:
        parts = [(iface, k, self._results[(iface, k)]) for iface, k in sorted(
            self._results, key=lambda x: (x[1], x[0]))]
        final = self._final
        self.stats = merge_stats([(i, r.stats) for i, _, r in parts],
                                 final.stats if final is not None else None, self.split.info(),
                                 [s for ss in self._lfta.values() for s, _ in ss])
        reports = [shift_rows(r.report, i, self.split.offsets[i][k]) for i, k, r in parts]
        if self.stats.get("output_closed"):
            # the slices were stopped because the output's reader went away,
            # not by the user (merge_stats says interrupted: false too)
            reports = ["".join(line for line in rep.splitlines(keepends=True)
                               if not line.startswith("gsqlc: interrupted;")) for rep in reports]
        if final is not None:
            reports.append(final.report)
        self.report = merge_reports(reports)
        for src in self.stats.get("sources", []):
            # "N of M rows rejected": M is every slice's rows, not only those
            # of the slices that rejected some
            pat = re.compile(r"^(gsqlc: arrow:" + re.escape(src["iface"]) + r": \d+ of )\d+",
                             re.M)
            self.report = pat.sub(lambda m: m.group(1) + str(src["records_read"]), self.report)


def serve(run: Any, items: Iterator[Any], line: Any) -> Iterator[Any]:
    """A threaded run's output (SplitRun, PartitionRun: their _handles,
    _threads, _errors and _finish): items as they come; however it ends, the
    runs cancelled and joined and the progress line closed; the statistics
    unless the consumer left early (as one thread's run: none); a run's
    error raised."""
    left_early = False
    try:
        yield from items
    except GeneratorExit:
        left_early = True
        raise
    finally:
        for h in run._handles:
            h.cancel()
        for t in run._threads:
            t.join()
        line.close()
        if not run._errors and not left_early:
            run._finish()
    if run._errors:
        raise run._errors[0]


class PartitionRun(ResultConversions):
    """A run over split.used hash partitions: run k is the whole run over
    every source (each reads all the rows), its LFTA aggregations counting
    only the groups of partition k (option partition k/used), on a thread
    of its own.  Its groups are its own, each counted as one run counts it
    (split_plan._partitions says when), so the outputs together are one
    run's.  The one output query's batches are merged as they come, in the
    order of its temporal columns (temporal: their names, and whether each
    increases), as one run gives them: each partition's output is in that
    order, so rows of an epoch go out once every partition has passed it
    (within an epoch, partition by partition)."""

    def __init__(self, library: Any, split: Split, outputs: list[str],
                 temporal: Sequence[tuple[str, bool]], options: Mapping[str, str],
                 params: Mapping[str, str], batch_rows: int, strings: str, pairs: bool,
                 set_members: Sequence[tuple[str, str]] = (), ip_format: str = "text",
                 progress: Optional[ProgressOptions] = None) -> None:
        self.library = library
        self.split = split
        self.outputs = outputs
        self.stats: dict[str, Any] = {}
        self.report: str = ""
        self._temporal = list(temporal)
        self._options = dict(options)
        self._params = dict(params)
        self._batch_rows = batch_rows
        self._strings = strings
        self._pairs = pairs
        self._set_members = list(set_members)
        self._ip_format = ip_format
        self._progress = progress
        self._results: dict[int, runner.RunResult] = {}
        self._errors: list[BaseException] = []
        self._queues: list[queue.Queue[Any]] = []
        self._handles: list[runner.RunHandle] = []
        self._threads: list[threading.Thread] = []
        self._started = False

    def _part(self, k: int, ready: Callable[[], None]) -> None:
        q = self._queues[k]

        def deliver(stream: str, batch: Any) -> bool:
            q.put(batch)
            return True
        try:
            arrow = {iface: t[0].to_reader() for iface, t in self.split.slices.items()}
            options = {**self._options, "partition": f"{k}/{self.split.used}"}
            res = runner.run_library(self.library, [], [], options, self._params,
                                     arrow_sources=arrow,
                                     arrow_sinks=[(s, deliver) for s in self.outputs],
                                     batch_rows=self._batch_rows, cancel=self._handles[k],
                                     set_members=self._set_members, ready=ready)
            self._results[k] = res
            if res.status != 0:
                raise RunError(res.error + (("\n" + res.report) if res.report else ""))
        except BaseException as e:  # noqa: BLE001 - handed to the consumer
            self._errors.append(e)
            for h in self._handles:
                h.cancel()
        finally:
            q.put(_DONE)

    def _start(self) -> None:
        n = self.split.used
        self._queues = [queue.Queue() for _ in range(n)]
        self._handles = [runner.RunHandle() for _ in range(n)]
        together = threading.Barrier(n)

        def ready() -> None:
            try:
                together.wait()
            except threading.BrokenBarrierError:
                pass    # a partition failed to set up: the run ends with its error

        def work(k: int) -> None:
            try:
                self._part(k, ready)
            finally:
                if k not in self._results:
                    together.abort()
        self._threads = [threading.Thread(target=work, args=(k,), name=f"gsqlc-part-{k}",
                                          daemon=True) for k in range(n)]
        for t in self._threads:
            t.start()

    def _merged(self) -> Iterator[Any]:
        """The partitions' batches merged (see the class), as they come."""
        import heapq
        import math
        n = self.split.used
        width = len(self._temporal)
        low, high = (-math.inf,) * width, (math.inf,) * width
        frontier: list[tuple[Any, ...]] = [low] * n    # no later row of k is below
        held: list[tuple[tuple[Any, ...], int, int, Any]] = []   # a heap
        seq = 0
        while True:
            waiting = [k for k in range(n) if frontier[k] != high]
            if not waiting:
                break
            k = min(waiting, key=lambda j: frontier[j])   # the one holding the rest back
            b = self._queues[k].get()
            if b is _DONE:
                frontier[k] = high
            elif b.num_rows:
                for key, piece in epoch_runs(b, self._temporal):
                    heapq.heappush(held, (key, k, seq, piece))
                    seq += 1
                    frontier[k] = key
            bound = min(frontier)
            while held and held[0][0] < bound:
                yield heapq.heappop(held)[3]
        while held:
            yield heapq.heappop(held)[3]

    def __iter__(self) -> Iterator[Any]:
        if self._started:
            raise RuntimeError("a Run can be iterated once; call run() again")
        self._started = True
        self._start()
        line = progress.line(self._progress, self.progress_handles,
                             total_rows=self.input_rows_total(), total_bytes=None).start()
        yield from serve(self, self._items(), line)

    def _items(self) -> Iterator[Any]:
        """The output: the partitions' batches merged."""
        from .arrow_types import finish_batch
        stream = self.outputs[0]
        for b in self._merged():
            b = finish_batch(b, self._strings, self._ip_format)
            yield (stream, b) if self._pairs else b

    def collect(self) -> list[Any]:
        """The whole run's output, as the iteration gives it."""
        return list(self)

    def progress_handles(self) -> tuple[list[runner.RunHandle], list[runner.RunHandle]]:
        """(the first partition's run: each reads every row, at about the same
        pace; every partition's run: each delivers output)."""
        return list(self._handles[:1]), list(self._handles)

    def input_bytes_total(self) -> Optional[int]:
        return None

    def input_rows_total(self) -> Optional[int]:
        """The input's rows (each partition reads them all)."""
        rows: int = sum(t[0].num_rows for t in self.split.slices.values())
        return rows

    def cancel(self) -> None:
        """End the run as at end of input (see api.Run.cancel)."""
        for h in self._handles:
            h.cancel()

    def set_param(self, name: str, value: Any) -> None:
        """Refused: the threads of a split run read different parts of the
        input at once, so a change has no one instant; run with threads=1."""
        raise UsageError(f"parameter ${str(name).lstrip('$')}: a run split over threads has no "
                         "one instant for a change; run it with threads=1 to change parameters "
                         "while it goes on")

    def _finish(self) -> None:
        parts = [self._results[k] for k in sorted(self._results)]
        self.stats = merge_stats([("", r.stats) for r in parts], None, self.split.info())
        if parts:
            # every partition read every row: the sources' figures are one run's
            first = parts[0].stats
            self.stats["sources"] = copy.deepcopy(first.get("sources", []))
            for k in _PER_SOURCE:
                if k in first:
                    self.stats[k] = first[k]
        self.report = merge_reports(
            [r.report if k == 0 else "".join(
                line for line in r.report.splitlines(keepends=True)
                if not line.startswith(_SOURCE_LINES)) for k, r in enumerate(parts)])


def epoch_runs(b: Any, temporal: Sequence[tuple[str, bool]]) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """The runs of rows of batch b with equal temporal columns (temporal:
    name, increasing), in order: (their sort key, the slice of b)."""
    if not temporal:
        yield (), b
        return
    import numpy as np
    cols = [b.column(name).to_numpy() for name, _ in temporal]
    change = np.zeros(b.num_rows, dtype=bool)
    change[0] = True
    for c in cols:
        change[1:] |= c[1:] != c[:-1]
    starts = np.flatnonzero(change).tolist()
    for x, y in zip(starts, starts[1:] + [b.num_rows]):
        key = tuple(c[x].item() if inc else -c[x].item() for c, (_, inc) in zip(cols, temporal))
        yield key, b.slice(x, y - x)


# top-level figures of a run that count its input, not its groups: one
# partition's (each read the whole input)
_PER_SOURCE = ("heartbeat_ticks", "heartbeat_ticks_skipped", "data_clock_usec",
               "data_clock_first_usec", "stall_intervals")
# report lines of the sources (each partition's are alike): the first's
_SOURCE_LINES = ("gsqlc: arrow:", "gsqlc: pcap:", "gsqlc: csv:")


# ------------------------------------------------------------ stats and reports


_SUM = {"records_read", "rows_read", "rows_rejected", "values_coerced", "bytes_read",
        "input_bytes", "input_bytes_total",
        "time_unreadable", "held_back", "tuples", "heartbeats", "joint_heartbeats",
        "late_dropped", "late_dropped_rows", "late_dropped_rows_unknown",
        "lfta_ejections", "field_unavailable", "skew_dropped", "batches",
        "bytes", "heartbeat_rows", "tuples_written", "heartbeat_ticks",
        "heartbeat_ticks_skipped", "events_dropped", "traces_written", "rows_packed"}
_ANY = {"truncated", "interrupted", "output_closed", "running"}
_ALL = {"ok", "columnar"}


def _combine(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Two parts' stats entries of one thing as one: counts added, high
    waters the larger, flags joined; the rest is the first part's."""
    out = dict(a)
    for k, v in b.items():
        if k not in a:
            out[k] = v
        elif k in _SUM and isinstance(v, int) and isinstance(a[k], int):
            out[k] = a[k] + v
        elif ("high_water" in k or k.startswith("peak_")) and isinstance(v, int):
            out[k] = max(a[k], v)
        elif k in _ANY:
            out[k] = bool(a[k]) or bool(v)
        elif k in _ALL:
            out[k] = bool(a[k]) and bool(v)
    return out


_KEYS = {"sources": "iface", "streams": "name", "nodes": "name", "sinks": "query"}


def _combine_lists(parts: list[list[dict[str, Any]]], key: str) -> list[dict[str, Any]]:
    out: dict[Any, dict[str, Any]] = {}
    for entries in parts:
        for e in entries:
            k = e.get(key)
            out[k] = _combine(out[k], e) if k in out else copy.deepcopy(e)
    return list(out.values())


def merge_stats(parts: list[tuple[str, dict[str, Any]]], final: Optional[dict[str, Any]],
                info: dict[str, Any], lfta_streams: Sequence[str] = ()) -> dict[str, Any]:
    """The stats of a split run: its slices' runs (parts, in slice order)
    and the HFTA run (final, None without one, which read lfta_streams
    from the slices) as one run's."""
    slices = [s for _, s in parts if s]
    merged: dict[str, Any] = {}
    for s in slices:
        top = {k: v for k, v in s.items() if not isinstance(v, list)}
        merged = _combine(merged, top) if merged else top
    for name, key in _KEYS.items():
        merged[name] = _combine_lists([s.get(name, []) for s in slices], key)
    for k in ("events",):
        merged[k] = [e for s in slices for e in s.get(k, [])]
    if final is not None:
        lfta_nodes = {e["name"] for e in merged["nodes"] if e.get("kind") == "lfta"}
        out = copy.deepcopy(final)
        out["ok"] = bool(final.get("ok")) and bool(merged.get("ok", True))
        out["output_closed"] = bool(final.get("output_closed"))
        # slices stopped because the output closed were not interrupted
        out["interrupted"] = bool(final.get("interrupted")) or (
            bool(merged.get("interrupted")) and not out["output_closed"])
        out["sources"] = merged["sources"]
        out["streams"] = [next(m for m in merged["streams"] if m["name"] == e["name"])
                          if e["name"] in lfta_streams else e for e in final.get("streams", [])]
        out["nodes"] = [next(m for m in merged["nodes"] if m["name"] == e["name"])
                        if e["name"] in lfta_nodes else e for e in final.get("nodes", [])]
        out["injected"] = []
        out["events"] = merged["events"] + list(final.get("events", []))
        merged = out
    merged["threads"] = info
    return merged


_DESCRIBED = re.compile(r"^gsqlc: arrow:[^:]*: row \d+")
# the counts of a report line: numbers right after ": " or " of " (the
# "3 of 50 rows rejected", "7 tuples arrived later", ...); other numbers
# (a column, a clock) are part of the line's text
_COUNT = re.compile(r"(?:(?<=: )|(?<= of ))\d+(?![\w.])")
_FIRST_ONES = "; the first ones:"
_MAX_DESCRIBED = 10   # GSQ_MAX_DESCRIBED: malformed rows described per source


def merge_reports(reports: list[str]) -> str:
    """The slices' and the HFTA run's reports as one run's.  Lines that
    differ only in their counts are one line with the counts added (the
    n-th such line of each report, as the runs' reports list the same
    things in the same order); the malformed rows described follow the line
    that counts them, in order, at most _MAX_DESCRIBED of them."""
    order: list[tuple[str, int]] = []
    sums: dict[tuple[str, int], list[int]] = {}
    described: dict[tuple[str, int], list[str]] = {}
    for rep in reports:
        seen: dict[str, int] = {}
        last: Optional[tuple[str, int]] = None
        for line in rep.splitlines():
            if _DESCRIBED.match(line) and last is not None:
                described.setdefault(last, []).append(line)
                continue
            text = _COUNT.sub("\0", line.replace(_FIRST_ONES, ":"))
            key = (text, seen.get(text, 0))
            seen[text] = key[1] + 1
            counts = [int(x) for x in _COUNT.findall(line)]
            if key not in sums:
                order.append(key)
                sums[key] = counts
            else:
                sums[key] = [a + b for a, b in zip(sums[key], counts)]
            last = key
    out = []
    for key in order:
        it = iter(sums[key])
        line = re.sub("\0", lambda m: str(next(it)), key[0])
        rows = described.get(key, [])[:_MAX_DESCRIBED]
        if rows and line.endswith(":") and sums[key] and sums[key][0] > len(rows):
            line = line[:-1] + _FIRST_ONES
        out.append(line)
        out.extend(rows)
    return "".join(x + "\n" for x in out)
