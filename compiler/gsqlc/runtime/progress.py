"""A live progress line for runs (`gsqlc run`, run(progress=True)).

A thread of its own polls the runs' counters about five times a second
(runner.RunHandle.progress: gsqlc_progress, which the run loop publishes
every few batches, never per record, so the run does not slow down; the runs
are in C without the GIL meanwhile) and draws them with tqdm: a bar over the
input's bytes (or rows, for Arrow data held in memory) when its total is
known, else a counter of the records read; after it the records' rate, the
rows delivered, the late and malformed counts and the lowest watermark
(`hb`, seconds of the records' time).  close() draws the last counters and
clears the line (a notebook's widget closes).  tqdm is imported only when
a line is drawn.
"""
from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any, Callable, Optional, Sequence

from ..record import record
from .runner import PROGRESS_DONE, PROGRESS_RUNNING, PROGRESS_SETUP, Progress, RunHandle

POLL_SECONDS = 0.2
# the records' rate: an exponential moving average of each poll's rate
_RATE_SMOOTHING = 0.3

Handles = Callable[[], tuple[Sequence[RunHandle], Sequence[RunHandle]]]


def combine(inputs: Sequence[Optional[Progress]], outputs: Sequence[Optional[Progress]],
            both: Sequence[Optional[Progress]] = ()) -> Progress:
    """Several runs' counters as one run's (a split run: its slices read the
    input, the HFTA run delivers the output): input and records summed over
    `inputs`, rows delivered over `outputs`, drops over every run (`both`:
    the distinct runs; default inputs + outputs).  The input total is known
    when every input run's is; the watermark is the lowest among the runs
    still running that have one, the highest once all are done."""
    ins = [p for p in inputs if p is not None]
    outs = [p for p in outputs if p is not None]
    every = [p for p in (both or [*inputs, *outputs]) if p is not None]
    if not every:
        return Progress()
    states = [p.state for p in every]
    state = (PROGRESS_DONE if all(s == PROGRESS_DONE for s in states) and len(ins) == len(inputs)
             else PROGRESS_RUNNING if any(s != PROGRESS_SETUP for s in states) else PROGRESS_SETUP)
    total = (sum(p.input_bytes_total for p in ins)
             if ins and len(ins) == len(inputs) and all(p.input_bytes_total for p in ins) else 0)
    running = [p.watermark for p in every if p.state != PROGRESS_DONE and p.watermark is not None]
    done = [p.watermark for p in every if p.state == PROGRESS_DONE and p.watermark is not None]
    watermark = min(running) if running else max(done) if done else None
    return Progress(state, sum(p.publications for p in every), sum(p.input_bytes for p in ins),
                    total, sum(p.records_read for p in ins), sum(p.rows_out for p in outs),
                    sum(p.late_dropped for p in every), sum(p.skew_dropped for p in every),
                    sum(p.malformed for p in every), watermark)


def _sizeof(n: float) -> str:
    from tqdm import tqdm
    return str(tqdm.format_sizeof(n))


def postfix(p: Progress, rows_rate: Optional[float], with_rows: bool) -> str:
    """The counters after the bar: 'rows=1.2M 450k/s, out=…, late=…,
    malformed=…, hb=…' (rows only when the bar counts bytes)."""
    parts = []
    if with_rows:
        rate = f" {_sizeof(rows_rate)}/s" if rows_rate is not None else ""
        parts.append(f"rows={_sizeof(p.records_read)}{rate}")
    parts.append(f"out={p.rows_out:,}")
    parts.append(f"late={p.late_dropped + p.skew_dropped:,}")
    parts.append(f"malformed={p.malformed:,}")
    parts.append(f"hb={p.watermark:.1f}" if p.watermark is not None else "hb=-")
    return ", ".join(parts)


def _columns(file: Any) -> int:
    """The width of the terminal `file` is on (0: none, or not known)."""
    try:
        return os.get_terminal_size(file.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return 0


def _isatty(file: Any) -> bool:
    try:
        return bool(file.isatty())
    except (AttributeError, OSError, ValueError):
        return False


def _env_int(name: str, default: int) -> int:
    try:
        return int(os.environ[name]) or default
    except (KeyError, ValueError):
        return default


def colour_wanted() -> bool:
    """Colour unless NO_COLOR is set (to anything but the empty string); the
    CLI passes its own decision (terminal.use_color: a face's module, which
    the runtime may not import)."""
    return not os.environ.get("NO_COLOR")


class ProgressLine:
    """The line for the runs `handles()` names ((runs reading the input,
    runs delivering the output), asked again at every poll: a split run's
    HFTA run starts later).  total_rows / total_bytes: the input's total
    when the caller knows it (Arrow data held in memory; the slices of a
    split capture), else the runs' own.  notebook: tqdm.auto (a widget in
    Jupyter), else the text tqdm on `file` (default stderr)."""

    def __init__(self, handles: Handles, *, file: Any = None, notebook: bool = False,
                 colour: Optional[bool] = None, total_rows: Optional[int] = None,
                 total_bytes: Optional[int] = None, desc: str = "gsqlc",
                 interval: float = POLL_SECONDS):
        self._handles = handles
        self._file = file
        self._notebook = notebook
        self._colour = colour_wanted() if colour is None else colour
        self._total_rows = total_rows or None
        self._total_bytes = total_bytes or None
        self._desc = desc
        self._interval = interval
        self._bar: Any = None
        self._by_bytes = False
        self._last: Optional[tuple[float, int]] = None
        self._rate: Optional[float] = None
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self.last: Optional[Progress] = None     # the counters drawn last

    # -- life
    def start(self) -> "ProgressLine":
        if self._thread is None and not self._stop.is_set():
            self._thread = threading.Thread(target=self._loop, name="gsqlc-progress",
                                            daemon=True)
            self._thread.start()
        return self

    def close(self) -> None:
        """Draw the last counters (when a line is shown) and clear it."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        self._thread = None
        if self._bar is not None:
            try:
                self._poll(final=True)
            except Exception:   # noqa: BLE001 - a display never fails the run
                pass
            self._bar.close()
            self._bar = None

    def __enter__(self) -> "ProgressLine":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- drawing
    def _loop(self) -> None:
        while True:
            try:
                self._poll()
            except Exception:   # noqa: BLE001 - a display never fails the run
                return
            if self._stop.wait(self._interval):
                return

    def _snapshot(self) -> Progress:
        inputs, outputs = self._handles()
        both = list({id(h): h for h in (*inputs, *outputs)}.values())
        read = {id(h): h.progress() for h in both}
        return combine([read[id(h)] for h in inputs], [read[id(h)] for h in outputs],
                       list(read.values()))

    def _open(self, p: Progress) -> None:
        from tqdm import tqdm
        file = self._file if self._file is not None else sys.stderr
        kw: dict[str, Any] = dict(desc=self._desc, leave=False, mininterval=0, miniters=1,
                                  smoothing=_RATE_SMOOTHING, file=file,
                                  colour="green" if self._colour else None)
        total_bytes = self._total_bytes or p.input_bytes_total
        if self._total_rows:
            kw.update(total=self._total_rows, unit=" rows", unit_scale=True,
                      bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} rows "
                                 "[{elapsed}<{remaining}, {rate_fmt}{postfix}]")
        elif total_bytes:
            self._by_bytes = True
            kw.update(total=total_bytes, unit="B", unit_scale=True, unit_divisor=1024,
                      bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}B/{total_fmt}B "
                                 "[{elapsed}<{remaining}{postfix}]")
        else:
            kw.update(total=None, unit=" rows", unit_scale=True,
                      bar_format="{desc}: {n_fmt} rows [{elapsed}, {rate_fmt}{postfix}]")
        if self._notebook:
            import warnings

            from tqdm import TqdmExperimentalWarning
            with warnings.catch_warnings():   # as tqdm.auto does: its notebook mode is meant
                warnings.simplefilter("ignore", TqdmExperimentalWarning)
                from tqdm import autonotebook
            from tqdm.auto import tqdm as auto
            if autonotebook.tqdm is not tqdm:     # in Jupyter: a widget
                try:
                    self._bar = auto(**kw)
                    return
                except Exception:   # noqa: BLE001 - e.g. no ipywidgets: the text line
                    pass
        if _columns(file):
            kw["dynamic_ncols"] = True      # follow the terminal's width
        elif _isatty(file):
            # a terminal of 0 x 0 (a pty nobody sized): tqdm would draw nothing
            kw["ncols"] = _env_int("COLUMNS", 80)
            kw["nrows"] = _env_int("LINES", 24)
        self._bar = tqdm(**kw)

    def _poll(self, final: bool = False) -> None:
        p = self._snapshot()
        if p.state == PROGRESS_SETUP:
            return
        if self._bar is None:
            if final:
                return          # ended before a line was shown: nothing to clear
            self._open(p)
        now = time.monotonic()
        if self._last is not None and now > self._last[0]:
            inst = (p.records_read - self._last[1]) / (now - self._last[0])
            self._rate = inst if self._rate is None else (
                _RATE_SMOOTHING * inst + (1 - _RATE_SMOOTHING) * self._rate)
        self._last = (now, p.records_read)
        self._bar.set_postfix_str(postfix(p, self._rate, self._by_bytes), refresh=False)
        n = p.input_bytes if self._by_bytes else p.records_read
        if n > self._bar.n:
            self._bar.update(n - self._bar.n)   # tqdm's rate and time left follow
        else:
            self._bar.refresh()
        self.last = p


class NoLine:
    """ProgressLine's stand-in when none is shown."""

    last: Optional[Progress] = None

    def __enter__(self) -> "NoLine":
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def start(self) -> "NoLine":
        return self

    def close(self) -> None:
        pass


@record(frozen=True)
class ProgressOptions:
    """A progress line asked for: notebook-aware (the API's) or text on
    stderr (the CLI's), with the input's rows when the caller knows them."""
    notebook: bool = False
    total_rows: Optional[int] = None
    colour: Optional[bool] = None     # None: unless NO_COLOR is set


def line(opts: Optional[ProgressOptions], handles: Handles, *, total_rows: Optional[int] = None,
         total_bytes: Optional[int] = None) -> "ProgressLine | NoLine":
    """A ProgressLine (not started) for `handles` when opts asks for one,
    else a NoLine; total_rows / total_bytes: the input's, when known."""
    if opts is None:
        return NoLine()
    return ProgressLine(handles, notebook=opts.notebook, total_rows=total_rows or opts.total_rows,
                        total_bytes=total_bytes, colour=opts.colour)
