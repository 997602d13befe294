"""Runs share nothing (issue 9, runtime seams): several runs of one or of
different query-set libraries proceed at once on Python threads, each with
its own answer; gsqlc_cancel ends one run as at end of input without
touching the others; the library installs no signal handler (the CLI and
the stand-alone runner turn SIGINT/SIGTERM into gsqlc_cancel)."""
from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import threading
import time

import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

import gsqlc
from conftest import REPO
from test_api import _big
from test_api import rows as _rows

EX = REPO / "examples" / "csv"
SCHEMA = EX / "schema.txt"
SALES = EX / "sales.csv"
PER_MINUTE = EX / "per_minute.gsql"
ROWS = 300_000
CHUNK = 10_000


@pytest.fixture(scope="module")
def per_minute():
    return gsqlc.compile([PER_MINUTE], schema=SCHEMA)


@pytest.fixture(scope="module")
def per_hour(tmp_path_factory):
    q = tmp_path_factory.mktemp("q") / "per_hour.gsql"
    q.write_text("DEFINE { query_name 'per_hour'; }\n"
                 "SELECT hr*3600 as hour, store, count(*) as sales, sum(qty) as units\n"
                 "FROM SALES GROUP BY ts/3600 as hr, store\n")
    return gsqlc.compile([q], schema=SCHEMA)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """Two generated inputs of ROWS rows, as tables and as CSV files."""
    d = tmp_path_factory.mktemp("data")
    out = {}
    for seed in (7, 8):
        t = _big(ROWS, seed)
        path = d / f"big{seed}.csv"
        pacsv.write_csv(t, path, write_options=pacsv.WriteOptions(include_header=False,
                                                                   quoting_style="none"))
        out[seed] = (t, path)
    return out


class Meeting:
    """Feeds a table in chunks; after the first chunk, waits until every
    feed of the meeting is there.  The feed is called from inside gsqlc_run
    (the Arrow source asks it for the next batch), so passing the barrier
    proves that all runs are inside gsqlc_run at once."""

    def __init__(self, parties: int):
        self.barrier = threading.Barrier(parties, timeout=120)
        self.threads: set[int] = set()

    def feed(self, t: pa.Table, after=None):
        for i, b in enumerate(t.to_batches(max_chunksize=CHUNK)):
            if i == 1:
                self.threads.add(threading.get_ident())
                self.barrier.wait()   # BrokenBarrierError: the runs did not overlap
                if after is not None:
                    after()
            yield b


def _in_threads(*fns):
    """Run each fn on its own thread; returns their results (re-raises)."""
    res: list = [None] * len(fns)
    errs: list = []

    def call(i, fn):
        try:
            res[i] = fn()
        except BaseException as e:  # noqa: BLE001
            errs.append(e)
    ts = [threading.Thread(target=call, args=(i, fn)) for i, fn in enumerate(fns)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(600)
    if errs:
        raise errs[0]
    return res


def test_two_query_sets_run_at_once_each_with_its_own_answer(per_minute, per_hour, data):
    (t7, p7), (t8, p8) = data[7], data[8]
    alone_m = per_minute.table({"csv": f"csv:{p7}"})
    alone_h = per_hour.table({"csv": f"csv:{p8}"})
    meet = Meeting(2)
    both = _in_threads(lambda: per_minute.table({"csv": meet.feed(t7)}),
                       lambda: per_hour.table({"csv": meet.feed(t8)}))
    assert len(meet.threads) == 2   # two library threads were inside gsqlc_run at once
    assert alone_m.num_rows > 200 and alone_h.num_rows == 8  # two hours, four stores
    assert _rows(both[0]) == _rows(alone_m)
    assert _rows(both[1]) == _rows(alone_h)
    assert sum(both[1]["sales"].to_pylist()) == ROWS


def test_two_runs_of_one_library_at_once(per_minute, data):
    (t7, p7), (t8, p8) = data[7], data[8]
    alone7 = per_minute.table({"csv": f"csv:{p7}"})
    alone8 = per_minute.table({"csv": f"csv:{p8}"})
    assert _rows(alone7) != _rows(alone8)
    meet = Meeting(2)
    a, b = _in_threads(lambda: per_minute.table({"csv": meet.feed(t7)}),
                       lambda: per_minute.table({"csv": meet.feed(t8)}))
    assert len(meet.threads) == 2
    assert _rows(a) == _rows(alone7) and _rows(b) == _rows(alone8)
    # and two CSV file runs at once, of the same data
    c, d = _in_threads(lambda: per_minute.table({"csv": f"csv:{p7}"}),
                       lambda: per_minute.table({"csv": f"csv:{p7}"}))
    assert _rows(c) == _rows(d) == _rows(alone7)


def test_cancelling_one_run_leaves_the_other_running_to_its_full_answer(
        per_minute, per_hour, data):
    t7, _ = data[7]
    t8, p8 = data[8]
    alone_h = per_hour.table({"csv": f"csv:{p8}"})
    meet = Meeting(2)
    a_cancelled = threading.Event()
    fed = [0]

    def endless():
        """A feed that never ends by itself (a live source)."""
        for b in meet.feed(t7):
            fed[0] += b.num_rows
            yield b
        give_up = time.monotonic() + 120
        while True:
            if time.monotonic() > give_up:
                raise RuntimeError("gsqlc_cancel did not end the run")
            fed[0] += t7.num_rows
            yield from t7.to_batches(max_chunksize=CHUNK)

    run_a = per_minute.run({"csv": endless()})

    def consume_a():
        out = list(run_a)
        return out, run_a.stats

    def run_b():
        # B stays inside gsqlc_run until A was cancelled and has ended
        return per_hour.table({"csv": meet.feed(t8, after=lambda: a_cancelled.wait(120))})

    def cancel_a():
        meet.barrier.wait()        # a third party: both runs are running
        time.sleep(0.2)
        run_a.cancel()

    meet.barrier = threading.Barrier(3, timeout=120)
    results: dict = {}

    def a_then_signal():
        results["a"] = consume_a()
        a_cancelled.set()
    threads = [threading.Thread(target=a_then_signal),
               threading.Thread(target=lambda: results.__setitem__("b", run_b())),
               threading.Thread(target=cancel_a)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(600)
    assert not any(th.is_alive() for th in threads)
    batches, stats_a = results["a"]
    # A ended as at end of input: interrupted, its groups flushed
    assert stats_a["ok"] is True and stats_a["interrupted"] is True
    a = pa.Table.from_batches(batches)
    assert 0 < sum(a["sales"].to_pylist()) <= fed[0]
    # B was not interrupted and has its full answer
    b = results["b"]
    assert _rows(b) == _rows(alone_h) and sum(b["sales"].to_pylist()) == ROWS


def test_a_cancel_before_the_run_ends_it_at_once(per_minute, data):
    from gsqlc.runtime import runner
    _, p7 = data[7]
    h = runner.RunHandle()
    h.cancel()
    res = runner.run_library(per_minute.library, [("default", f"csv:{p7}")],
                             [("per_minute", "csv", os.devnull)], cancel=h)
    assert res.status == 0 and res.stats["interrupted"] is True
    assert 0 < res.stats["sources"][0]["rows_read"] < ROWS
    assert res.stats["sinks"][0]["tuples"] > 0     # its groups were flushed


def _handler(sig: int) -> int:
    """The C-level disposition of sig (sa_handler), whatever Python says."""
    libc = ctypes.CDLL(None, use_errno=True)
    buf = ctypes.create_string_buffer(512)   # larger than any struct sigaction
    assert libc.sigaction(sig, None, buf) == 0
    return ctypes.c_void_p.from_buffer(buf).value or 0


def test_the_library_installs_no_signal_handler(per_minute, data):
    t7, _ = data[7]
    before = {s: _handler(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGPIPE)}
    # Python's own handler, or SIG_IGN when the process was started with
    # SIGINT ignored (a background job of a shell without job control)
    python_sigint = signal.getsignal(signal.SIGINT)
    during = {}

    def feed():
        for i, b in enumerate(t7.to_batches(max_chunksize=CHUNK)):
            if i == 1:   # called from inside gsqlc_run
                during.update({s: _handler(s) for s in before})
            yield b
    per_minute.table({"csv": feed()})
    assert during == before
    assert {s: _handler(s) for s in before} == before
    assert signal.getsignal(signal.SIGINT) is python_sigint


def _signal_once_written(p: subprocess.Popen, out, sig: int) -> bytes:
    """Feed sales.csv to p's stdin and keep it open; once p wrote output (a
    streaming run writes the closed minutes as they close), send sig; returns
    p's stderr."""
    try:
        p.stdin.write(SALES.read_bytes())
        p.stdin.flush()
        deadline = time.time() + 120
        while not out.exists() or not out.read_bytes():
            assert time.time() < deadline and p.poll() is None
            time.sleep(0.05)
        p.send_signal(sig)
        # the signal alone must end the run: stdin stays open until it has
        # (closing it first would race the signal with end of input)
        p.wait(timeout=60)
        return p.communicate(timeout=60)[1]
    finally:
        if p.poll() is None:
            p.kill()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_to_gsqlc_run_over_stdin_ends_it_with_the_groups_flushed(gsqlc, tmp_path, sig):
    full = gsqlc("run", PER_MINUTE, "--schema", SCHEMA, "--source", f"csv:{SALES}")
    assert full.returncode == 0 and full.out, full.err
    out = tmp_path / "out.txt"
    p = subprocess.Popen([sys.executable, "-m", "gsqlc", "run", str(PER_MINUTE), "--schema",
                          str(SCHEMA), "--source", "csv:-", "--output-file", str(out)],
                         stdin=subprocess.PIPE, stderr=subprocess.PIPE)
    err = _signal_once_written(p, out, sig)
    assert p.returncode == 0, err.decode(errors="replace")
    assert "interrupted; the input read so far was processed and flushed" in err.decode()
    # every group, the last open minute included, is there
    assert out.read_text() == full.out


def test_the_stand_alone_runner_ends_on_sigint_with_the_groups_flushed(gsqlc, tmp_path):
    d = tmp_path / "qs"
    p = gsqlc("compile", PER_MINUTE, "--schema", SCHEMA, "-o", d, "--build", timeout=900)
    assert p.returncode == 0, p.err
    runner = d / "build" / "gsqlc-run"
    full = subprocess.run([str(runner), "--source", f"default=csv:{SALES}", "--output", "per_minute"],
                          capture_output=True)
    assert full.returncode == 0 and full.stdout, full.stderr
    out = tmp_path / "out.txt"
    with open(out, "wb") as o:
        r = subprocess.Popen([str(runner), "--source", "default=csv:-", "--output", "per_minute"],
                             stdin=subprocess.PIPE, stdout=o, stderr=subprocess.PIPE)
    err = _signal_once_written(r, out, signal.SIGINT)
    assert r.returncode == 0, err.decode(errors="replace")
    assert b"interrupted" in err
    assert out.read_bytes() == full.stdout
