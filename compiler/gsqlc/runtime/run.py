"""One run of a built query-set library on one thread of the runtime: what
it binds (RunInputs), where its output goes (ArrowOutput: batches handed to
Python; TextOutput: the runtime's own sinks, files or standard output), and
Run, the object a run is iterated, collected or waited through.

A Run is made by runtime.session.start (for the CLI and the Python API) or
directly by a Spark task over the streams of its partition; runs split over
threads are runtime.parallel.SplitRun, which makes a Run for its HFTAs.
"""
from __future__ import annotations

import queue
import threading
from pathlib import Path
from typing import Any, Callable, Generator, Optional, Union

from ..errors import RunError
from ..record import field, record
from . import runner
from .progress import ProgressOptions
from .progress import line as progress_line
from .results import ResultConversions


@record(frozen=True)
class RunInputs:
    """What one library run binds: file sources (interface, URI), Arrow
    readers of interfaces and of query-set streams (their producers do not
    run), interface-set memberships (set, member) in member order, the
    runtime's options and the query parameters, as the C ABI takes them."""
    sources: list[tuple[str, str]] = field(default_factory=list)
    readers: dict[str, Any] = field(default_factory=dict)
    streams: dict[str, Any] = field(default_factory=dict)
    set_members: list[tuple[str, str]] = field(default_factory=list)
    options: dict[str, str] = field(default_factory=dict)
    params: dict[str, str] = field(default_factory=dict)


@record(frozen=True)
class ArrowOutput:
    """Output queries' batches handed to Python: utf8 or binary strings,
    IP addresses as text or integers, batches of up to batch_rows rows;
    pairs: iteration yields (query, batch) rather than batches."""
    queries: list[str]
    strings: str = "str"
    ip_format: str = "text"
    batch_rows: int = 65536
    pairs: bool = False


@record(frozen=True)
class TextOutput:
    """Output written by the runtime's sinks: (query, format, path or None
    for standard output).  The run goes on the calling thread, SIGINT and
    SIGTERM ending it as at end of input (from the main thread)."""
    sinks: list[tuple[str, str, Optional[str]]]
    ip_format: str = "text"      # 'int': IP as a number, IPV6 as 128 bits

    @property
    def queries(self) -> list[str]:
        return [q for q, _, _ in self.sinks]

    def runtime_options(self) -> dict[str, str]:
        return {} if self.ip_format == "text" else {"ip_format": self.ip_format}


Output = Union[ArrowOutput, TextOutput]
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

    def __init__(self, library: Path, inputs: RunInputs, output: Output,
                 extra_stats: Optional[dict[str, Any]] = None,
                 progress: Optional[ProgressOptions] = None):
        self.library = library
        self._inputs = inputs
        self._output = output
        self._progress = progress
        self._extra_stats = dict(extra_stats or {})
        self.outputs = output.queries
        self.stats: dict[str, Any] = {}
        self.report: str = ""
        self._q: "queue.Queue[Any]" = queue.Queue(maxsize=4)
        self._cancel = threading.Event()
        self._handle = runner.RunHandle()     # gsqlc_cancel of the library's run
        self._thread: Optional[threading.Thread] = None
        self._started = False
        self._result: Optional[runner.RunResult] = None
        self._exc: Optional[BaseException] = None

    def _on_batch(self, query: str, batch: Any) -> bool:
        """Sink callback (runs on the run's thread): False cancels the run."""
        while not self._cancel.is_set():
            try:
                self._q.put((query, batch), timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _run_library(self, on_batch: Optional[Callable[[str, Any], bool]],
                     handle_signals: bool = False) -> None:
        i, out = self._inputs, self._output
        arrow = isinstance(out, ArrowOutput)
        self._result = runner.run_library(
            self.library, i.sources, [] if isinstance(out, ArrowOutput) else out.sinks,
            i.options, i.params, arrow_sources=i.readers, arrow_streams=i.streams,
            arrow_sinks=[(q, on_batch) for q in out.queries] if arrow and on_batch else None,
            batch_rows=out.batch_rows if isinstance(out, ArrowOutput) else 0,
            cancel=self._handle, handle_signals=handle_signals, set_members=i.set_members)

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

    def _begin(self) -> None:
        if self._started:
            raise RuntimeError("a Run can be iterated once; call run() again")
        self._started = True

    def __iter__(self) -> Generator[Any, None, None]:
        self._begin()
        out = self._output
        if isinstance(out, TextOutput):
            # nothing to hand over: the run goes on this thread, which turns
            # SIGINT/SIGTERM into its cancel
            with self._progress_line():
                self._run_library(None, handle_signals=True)
            self._finish()
            return
        self._thread = threading.Thread(target=self._work, name="gsqlc-run", daemon=True)
        self._thread.start()
        line = self._progress_line().start()
        from .arrow_types import finish_batch
        try:
            while True:
                item = self._q.get()
                if item is _DONE:
                    break
                query, batch = item
                batch = finish_batch(batch, out.strings, out.ip_format)
                yield (query, batch) if out.pairs else batch
        finally:
            self._cancel.set()
            self._handle.cancel()   # an early exit ends the run as at end of input
            self._thread.join()
            line.close()
        self._finish()

    def collect(self) -> list[Any]:
        """The whole run's output, as the iteration would give it: the run's
        thread keeps the batches until it ends (no hand-over of each batch
        to this thread, which would take a core from the run).  Interrupted
        (KeyboardInterrupt), the run is cancelled and the exception raised."""
        out = self._output
        if not isinstance(out, ArrowOutput):
            return list(self)
        self._begin()
        from .arrow_types import finish_batches
        got: list[tuple[str, Any]] = []

        def keep(query: str, batch: Any) -> bool:
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
        return finish_batches(got, out.strings, out.pairs, out.ip_format)

    def cancel(self) -> None:
        """End the run as at end of input, from any thread: open groups are
        flushed and the iteration ends after the batches produced so far;
        .stats then says "interrupted": true."""
        self._handle.cancel()

    def set_param(self, name: str, value: Any) -> None:
        """Change parameter $name while the run goes on, from any thread.
        The value is checked as at the start (RunError with the reason when
        refused: the run keeps the value it had).  It takes effect when the
        run next finishes a round of batches: a selection reads it for every
        record after that instant; an aggregation keeps the old value for
        the epochs it had reached and takes the new one from the next epoch,
        in its LFTA and HFTA alike.  .stats["param_changes"] lists each
        change with its instant."""
        self._handle.change_param(str(name), str(value))

    @property
    def handle(self) -> runner.RunHandle:
        """The library run's handle (its cancel and progress counters)."""
        return self._handle

    def _progress_line(self) -> Any:
        return progress_line(self._progress, lambda: ([self._handle], [self._handle]))

    def _finish(self) -> None:
        if self._exc is not None:
            raise self._exc
        res = self._result
        assert res is not None
        self.stats, self.report = res.stats, res.report
        self.stats.update(self._extra_stats)
        if isinstance(self._output, ArrowOutput):
            warn_skipped_headers(self.report)
        if res.status != 0:
            # text output: the report is printed beside the error, not in it
            shown = isinstance(self._output, ArrowOutput) and res.report
            raise RunError(res.error + (("\n" + res.report) if shown else ""))


# the report line of a CSV source's first line skipped as a header
# (runtime_c/sources/csv_source.c, csv_report)
_HEADER_SKIPPED = "skipped as a header"


def warn_skipped_headers(report: str) -> None:
    """A warning for each CSV source of a run whose first line named the
    fields and was skipped (the report says so, with the option to use):
    a Python caller seldom reads the report, and that line was data to
    nobody."""
    import warnings
    for line in report.splitlines():
        if _HEADER_SKIPPED in line:
            warnings.warn(line.removeprefix("gsqlc: warning: "), UserWarning, stacklevel=4)


def run_to_end(run: Any) -> runner.RunResult:
    """Run a Run (or a SplitRun) of text output to its end: its result as
    runner.run_library gives it, a run-time failure as a nonzero status."""
    try:
        for _ in run:
            pass
    except RunError as e:
        return runner.RunResult(1, str(e), run.report, run.stats)
    return runner.RunResult(0, "", run.report, run.stats)
