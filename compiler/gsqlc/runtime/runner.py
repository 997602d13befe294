"""Driving a built query-set library through its C ABI, with cffi (ABI mode:
no compiler is needed to load a library)."""
from __future__ import annotations

import json
import os
import signal
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any, Callable, Optional, Sequence

from ..errors import RunError, SetupError
from ..record import field, record
from .abi_ffi import abi_ffi
from .c_interface import abi_cdef, abi_key

# the declarations come from the runtime's headers (c_interface), not a copy
_ffi = abi_ffi(abi_cdef, abi_key())
_libs: dict[str, Any] = {}      # path -> the loaded library (cffi)
# Arrow sink buffers a loaded library keeps for its next batches once their
# consumers release them (gsqlc_buffer_pool_create): what a run over 20 M
# rows hands back is taken again by the next run instead of fresh pages
SINK_POOL_BYTES = 128 << 20
_pools: dict[str, Any] = {}


def load_library(path: Path) -> Any:
    key = str(Path(path).resolve())
    lib = _libs.get(key)
    if lib is None:
        try:
            lib = _ffi.dlopen(key)
        except OSError as e:
            raise RunError(f"cannot load the query-set library {key}: {e}") from None
        _libs[key] = lib
    return lib


def sink_pool(library: Path) -> Any:
    """The buffer pool of the loaded library at `library` (made on first use;
    it lives as long as the process, each batch holding it while alive)."""
    key = str(Path(library).resolve())
    pool = _pools.get(key)
    if pool is None:
        lib = load_library(library)
        pool = lib.gsqlc_buffer_pool_create(SINK_POOL_BYTES)
        if pool == _ffi.NULL:
            raise RunError("out of memory")
        _pools[key] = pool
    return pool


def sink_pool_counts(library: Path) -> dict[str, int]:
    """What the library's sink buffer pool holds and has served."""
    out = _ffi.new("uint64_t[3]")
    load_library(library).gsqlc_buffer_pool_counts(sink_pool(library), out)
    return {"held_bytes": int(out[0]), "reused": int(out[1]), "allocated": int(out[2])}


def table_cache_counts(library: Path) -> dict[str, int]:
    """What the loaded library's cache of freed table blocks holds and has
    served (table_mem.c)."""
    out = _ffi.new("uint64_t[4]")
    load_library(library).gsqlc_table_cache_counts(out)
    return {"held_bytes": int(out[0]), "held_blocks": int(out[1]), "reused": int(out[2]),
            "allocated": int(out[3])}


def table_cache_trim(library: Path) -> None:
    """Free the blocks the loaded library's table cache holds."""
    load_library(library).gsqlc_table_cache_trim()


def pcap_cuts(library: Path, path: str, parts: int) -> tuple[list[int], str]:
    """Byte boundaries cutting the classic pcap file at `path` into up to
    `parts` runs whose results, in order, equal the whole file's (option
    pcap_range:NAME reads one): ([start, ..., end], "") with one run or
    more, or ([], why) when the file is not one the reader can cut."""
    lib = load_library(library)
    cuts = _ffi.new("uint64_t[]", parts + 1)
    why = _ffi.new("char[]", 256)
    n = lib.gsqlc_pcap_cuts(os.fsencode(path), parts, cuts, why, 256)
    if n < 0:
        raise RunError("out of memory")
    if n == 0:
        return [], _ffi.string(why).decode("utf-8", "replace")
    return [int(cuts[i]) for i in range(n + 1)], ""


PROGRESS_SETUP, PROGRESS_RUNNING, PROGRESS_DONE = 0, 1, 2


@record(frozen=True)
class Progress:
    """A run's counters as they stand (gsqlc_progress; gsq_runtime.h says
    what each is and its invariants): state PROGRESS_SETUP, _RUNNING or
    _DONE (then every counter equals the stats'); input_bytes_total 0 when
    unknown; watermark in seconds of the records' time, None when none yet."""
    state: int = PROGRESS_SETUP
    publications: int = 0
    input_bytes: int = 0
    input_bytes_total: int = 0
    records_read: int = 0
    rows_out: int = 0
    late_dropped: int = 0
    skew_dropped: int = 0
    malformed: int = 0
    watermark: Optional[float] = None


def _progress_of(lib: Any, run: Any, buf: Any) -> Optional[Progress]:
    try:
        fn = lib.gsqlc_progress
    except AttributeError:      # a library built before gsqlc_progress
        return None
    fn(run, buf)
    return Progress(int(buf.state), int(buf.publications), int(buf.input_bytes),
                    int(buf.input_bytes_total), int(buf.records_read), int(buf.rows_out),
                    int(buf.late_dropped), int(buf.skew_dropped), int(buf.malformed),
                    float(buf.watermark_sec) if buf.has_watermark else None)


class RunHandle:
    """Cancels a run of run_library from any thread (or a signal handler):
    cancel() ends the run as at end of input -- open groups flushed, EOF
    propagated, sinks flushed, stats "interrupted": true, status 0.  A
    cancel() before the run starts ends it at its first round.  progress()
    reads the run's counters (any thread, any time).  One handle serves one
    run."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._cancelled = False
        self._lib: Any = None       # the cffi library and run while attached
        self._run: Any = None
        self._progress: Optional[Progress] = None
        self._buf: Any = None
        self._pending: list[tuple[str, str]] = []   # changes asked before the run existed
        # on SIGHUP while the run goes on (its parameter file read again):
        # called on the main thread that waits for the run (_run_with_signals)
        self.on_hup: Optional[Callable[[], None]] = None

    def progress(self) -> Optional[Progress]:
        """The run's counters now (gsqlc_progress): None before run_library
        has created the run; after it, the last ones (state PROGRESS_DONE
        unless the run failed to start)."""
        with self._lock:
            if self._run is not None:
                if self._buf is None:
                    self._buf = _ffi.new("gsqlc_progress_snapshot *")
                self._progress = _progress_of(self._lib, self._run, self._buf)
            return self._progress

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            if self._run is not None:
                self._lib.gsqlc_cancel(self._run)

    def change_param(self, name: str, value: str) -> None:
        """gsqlc_change_param: $name takes `value` at the run's next round
        boundary (a selection at once, an aggregation from its next epoch).
        Before the run exists the change waits for it.  A value the run
        refuses raises RunError with the reason; the run goes on with the
        value it had."""
        with self._lock:
            if self._run is None:
                if self._progress is not None:
                    raise RunError(f"parameter ${name.lstrip('$')}: the run has ended")
                self._pending.append((name, value))
                return
            self._change(name, value)

    def _change(self, name: str, value: str) -> None:
        err = _ffi.new("char[]", 512)
        if self._lib.gsqlc_change_param(self._run, _s(name), _s(value), err, 512) != 0:
            raise RunError(_ffi.string(err).decode("utf-8", "replace"))

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def _attach(self, lib: Any, run: Any) -> None:
        with self._lock:
            self._lib, self._run = lib, run
            if self._cancelled:
                lib.gsqlc_cancel(run)
            pending, self._pending = self._pending, []
            for name, value in pending:
                self._change(name, value)

    def _detach(self) -> None:
        with self._lock:
            self.progress()     # the last counters outlive the run
            self._lib = self._run = None


_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _run_with_signals(lib: Any, r: Any, handle: RunHandle) -> int:
    """gsqlc_run on a worker thread while this (the main) thread waits and
    turns SIGINT/SIGTERM into a cancel of the run; a second signal gets the
    handler that was there before.  Raises what that handler raises (e.g.
    KeyboardInterrupt) with the worker still running: the caller must not
    destroy the run then."""
    status: list[int] = []
    old: dict[signal.Signals, Any] = {}

    def on_signal(sig: int, frame: Optional[FrameType]) -> None:
        handle.cancel()
        for sg, h in old.items():          # a second signal acts as before
            if sg in _STOP_SIGNALS:
                signal.signal(sg, h)

    def on_hup(sig: int, frame: Optional[FrameType]) -> None:
        if handle.on_hup is not None:
            handle.on_hup()

    worker = threading.Thread(target=lambda: status.append(lib.gsqlc_run(r)),
                              name="gsqlc-run", daemon=True)
    for sg in _STOP_SIGNALS:
        old[sg] = signal.signal(sg, on_signal)
    if handle.on_hup is not None:
        old[signal.SIGHUP] = signal.signal(signal.SIGHUP, on_hup)
    try:
        worker.start()
        # a blocking join: signals interrupt it (their handlers run and the
        # join goes on), and an idle live run does not wake this thread
        worker.join()
    finally:
        for sg, h in old.items():
            if signal.getsignal(sg) in (on_signal, on_hup):
                signal.signal(sg, h)
    return status[0]


def join_runs(threads: Sequence[threading.Thread], handles: Sequence[RunHandle]) -> None:
    """Join the threads running runs, interruptible meanwhile: interrupted
    (KeyboardInterrupt), the runs are cancelled (their handles), the threads
    joined and the exception re-raised."""
    try:
        for t in threads:
            while t.is_alive():
                t.join(0.05)
    except BaseException:
        for h in handles:
            h.cancel()
        for t in threads:
            t.join()
        raise


# an Arrow sink's consumer: fn(stream, pyarrow.RecordBatch), False to cancel the run
ArrowSink = Callable[[str, Any], object]


@record
class RunResult:
    status: int
    error: str
    report: str
    stats: dict[str, Any] = field(default_factory=dict)


def _s(x: str | bytes) -> bytes:
    return x.encode("utf-8", "surrogateescape") if isinstance(x, str) else x


def _ptr(x: Any) -> int:
    return int(_ffi.cast("uintptr_t", x))


def run_library(library: Path, sources: list[tuple[str, str]],
                sinks: list[tuple[str, str, Optional[str]]],
                options: Optional[dict[str, str]] = None,
                params: Optional[dict[str, str]] = None, *,
                arrow_sources: Optional[dict[str, Any]] = None,
                arrow_streams: Optional[dict[str, Any]] = None,
                arrow_sinks: Optional[list[tuple[str, ArrowSink]]] = None, batch_rows: int = 0,
                cancel: Optional[RunHandle] = None, handle_signals: bool = False,
                set_members: Sequence[tuple[str, str]] = (),
                ready: Optional[Callable[[], None]] = None) -> RunResult:
    """Run to end of input.  sources: (iface, uri); set_members: (set,
    member interface) pairs, in member order (gsqlc_add_set_member); sinks: (query, format,
    path or None for stdout).  Arrow data (pyarrow RecordBatchReaders, read
    in place through the Arrow C stream interface): arrow_sources binds
    interfaces, arrow_streams feeds query-set streams (their producers do not
    run).  arrow_sinks: (stream, fn) pairs; fn(stream, pyarrow.RecordBatch)
    is called on the run's thread for every batch and returns False to
    cancel the run.  An exception raised by fn stops the run and is
    re-raised here.  cancel: a RunHandle whose cancel() (any thread) ends the
    run as at end of input.  handle_signals: run the library on a worker
    thread and turn SIGINT/SIGTERM into that cancel (the library installs
    no signal handler; only from the main thread, as the CLI does).  status
    is 0 on success (also when cancelled), nonzero on a run-time failure.
    ready: called once the run is set up, just before it starts (runs on
    several threads start together: their set-up in Python is done first)."""
    lib = load_library(library)
    r = lib.gsqlc_create()
    if r == _ffi.NULL:
        raise RunError("out of memory")
    keep: list[Any] = []                  # C structs and callbacks the run points to
    raised: list[BaseException] = []
    handle = cancel if cancel is not None else RunHandle()
    running = False                  # a worker thread may still be in gsqlc_run
    try:
        def check(rc: int, what: str) -> None:
            if rc != 0:
                msg = _ffi.string(lib.gsqlc_error(r)).decode("utf-8", "replace")
                raise SetupError(f"{what}: {msg}")

        def c_stream(reader: Any) -> Any:
            st = _ffi.new("struct ArrowArrayStream *")
            reader._export_to_c(_ptr(st))
            keep.append(st)
            return st
        for k, v in (options or {}).items():
            check(lib.gsqlc_set_option(r, _s(k), _s(v)), f"option {k}={v}")
        for k, v in (params or {}).items():
            check(lib.gsqlc_set_param(r, _s(k), _s(v)), f"parameter {k}")
        for iface, uri in sources:
            check(lib.gsqlc_bind_source(r, _s(iface), _s(uri)), f"source {iface or 'default'}={uri}")
        for set_name, member in set_members:
            check(lib.gsqlc_add_set_member(r, _s(set_name), _s(member)),
                  f"interface set {set_name or 'default'}")
        for iface, reader in (arrow_sources or {}).items():
            check(lib.gsqlc_bind_arrow(r, _s(iface), c_stream(reader)), f"source {iface or 'default'}")
        for stream, reader in (arrow_streams or {}).items():
            check(lib.gsqlc_bind_stream_arrow(r, _s(stream), c_stream(reader)), f"stream {stream}")
        for query, fmt, path in sinks:
            check(lib.gsqlc_add_sink(r, _s(query), _s(fmt), _s(path) if path else _ffi.NULL),
                  f"output {query}")
        if arrow_sinks:
            check(lib.gsqlc_set_buffer_pool(r, sink_pool(library)), "buffer pool")
        for stream, fn in (arrow_sinks or []):
            def deliver(ctx: Any, arr: Any, sch: Any, stream: str = stream,
                        fn: ArrowSink = fn) -> int:
                try:
                    import pyarrow as pa
                    batch = pa.RecordBatch._import_from_c(_ptr(arr), _ptr(sch))
                    return 0 if fn(stream, batch) is not False else 1
                except BaseException as e:  # noqa: BLE001 - re-raised after the run
                    raised.append(e)
                    return 1
            cb = _ffi.callback("int(void *, struct ArrowArray *, struct ArrowSchema *)", deliver,
                               onerror=lambda *exc: 1)
            keep.append(cb)
            check(lib.gsqlc_add_arrow_sink(r, _s(stream), cb, _ffi.NULL, batch_rows),
                  f"output {stream}")
        sys.stdout.flush()
        sys.stderr.flush()
        handle._attach(lib, r)
        if ready is not None:
            ready()
        if handle_signals and threading.current_thread() is threading.main_thread():
            running = True
            status = _run_with_signals(lib, r, handle)
            running = False
        else:
            status = lib.gsqlc_run(r)
        if raised:
            raise raised[0]
        err = _ffi.string(lib.gsqlc_error(r)).decode("utf-8", "replace") if status else ""
        report = _ffi.string(lib.gsqlc_report(r)).decode("utf-8", "replace")
        stats_text = _ffi.string(lib.gsqlc_stats_json(r)).decode("utf-8", "replace")
        try:
            stats = json.loads(stats_text) if stats_text else {}
        except json.JSONDecodeError:
            stats = {"raw": stats_text}
        return RunResult(status, err, report, stats)
    finally:
        handle._detach()
        if not running:    # else the process is going down under a second signal
            lib.gsqlc_destroy(r)   # releases the streams; `keep` outlives it
