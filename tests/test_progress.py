"""Live progress for long runs (issue 17): `gsqlc run` draws a progress line
on stderr when it is a terminal (input consumed of its total, rows/s,
output rows, late and malformed counts, the lowest watermark) and nothing
when piped, with --quiet or TERM=dumb; --progress forces it; the output is
the same byte for byte.  The counters come from gsqlc_progress, read from
another thread while the run is in C; run(progress=True) shows a bar.

The runs are made long by their reader: stdout is read slowly, so the run
waits on a full pipe, as a run feeding a slow consumer does."""
from __future__ import annotations

import fcntl
import json
import os
import re
import signal
import struct
import subprocess
import sys
import termios
import threading
import time

import pytest

import gsqlc
from conftest import REPO
from gsqlc.runtime import runner

sys.path.insert(0, str(REPO / "bench"))
import pktgen  # noqa: E402

N = 200_000
QUERY = """\
DEFINE { query_name 'pkts'; }
SELECT time, srcIP, destIP, len FROM IPV4;
"""
ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture(scope="module")
def cap(tmp_path_factory):
    d = tmp_path_factory.mktemp("progress")
    pcap = d / "p.pcap"
    pktgen.generate(str(pcap), N, n_groups=1000, pps=20_000, seed=17, truth=False)
    (d / "q.gsql").write_text(QUERY)
    return d, pcap


def _cmd(d, pcap, *extra) -> list[str]:
    return [sys.executable, "-m", "gsqlc", "run", str(d / "q.gsql"), "--source",
            f"pcap:{pcap}", *extra]


@pytest.fixture(scope="module")
def plain(cap):
    """A run with stdout and stderr piped (and the build made): (stdout,
    stderr, stats)."""
    d, pcap = cap
    p = subprocess.run(_cmd(d, pcap, "--stats"), capture_output=True, timeout=300)
    assert p.returncode == 0, p.stderr
    err = p.stderr.decode()
    return p.stdout, err, json.loads(err[err.index("{"):])


def _slow_run(cmd, *, pty_err=True, env=None, pace=0.01, stdin=None):
    """Run cmd with stderr on a pseudo-terminal of 160 x 40 (or a pipe) and
    stdout read 64 KiB at a time, `pace` seconds apart: (status, stdout
    bytes, stderr text).  stdin: bytes fed `pace` seconds per 64 KiB."""
    e = dict(os.environ, TERM="xterm-256color")
    e.pop("NO_COLOR", None)
    e.update(env or {})
    if pty_err:
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
        err_target = slave
    else:
        err_target = subprocess.PIPE
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err_target, env=e,
                         stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL)
    err: list[bytes] = []

    def read_err():
        while True:
            try:
                b = os.read(master, 65536) if pty_err else p.stderr.read1(65536)
            except OSError:     # the pty's other side closed
                break
            if not b:
                break
            err.append(b)

    def feed():
        for i in range(0, len(stdin), 65536):
            p.stdin.write(stdin[i:i + 65536])
            p.stdin.flush()
            time.sleep(pace)
        p.stdin.close()
    threads = [threading.Thread(target=read_err)]
    if stdin is not None:
        threads.append(threading.Thread(target=feed))
    if pty_err:
        os.close(slave)
    for t in threads:
        t.start()
    out = []
    while True:
        b = p.stdout.read1(65536)
        if not b:
            break
        out.append(b)
        time.sleep(pace)
    rc = p.wait(timeout=300)
    for t in threads:
        t.join(timeout=60)
    if pty_err:
        os.close(master)
    text = b"".join(err).decode("utf-8", "replace")
    return rc, b"".join(out), text.replace("\r\n", "\n")


def _draws(err: str) -> list[str]:
    """The progress lines drawn (each after a carriage return), colours off."""
    return [ANSI.sub("", s) for s in err.split("\r") if s.startswith("gsqlc: ") and "out=" in s]


def _value(line: str, key: str) -> int:
    return int(re.search(key + r"=([\d,]+)", line).group(1).replace(",", ""))


def _stats(err: str) -> dict:
    return json.loads(err[err.index("{\n"):])


def test_progress_line_on_a_terminal(cap, plain):
    d, pcap = cap
    out0, _, st0 = plain
    rc, out, err = _slow_run(_cmd(d, pcap, "--stats"))
    assert rc == 0, err
    assert out == out0                          # the output is not touched
    draws = _draws(err)
    assert len(draws) >= 3, err[:2000]          # updates while the run went on
    assert "\x1b[32m" in err                    # a coloured bar
    total = f"{pcap.stat().st_size - 24}"
    for line in draws:
        assert re.match(r"gsqlc: +\d+%\|.*\| [\d.]+[kMG]?B/[\d.]+MB \[", line), line
        for key in ("out=", "late=0", "malformed=0", "hb="):
            assert key in line, line
    outs = [_value(line, "out") for line in draws]
    assert outs == sorted(outs) and outs[0] < outs[-1]
    # the last draw says what --stats says, and the line is cleared after it
    last = draws[-1]
    assert last.startswith("gsqlc: 100%|") and _value(last, "out") == st0["tuples_written"]
    assert "rows=200k" in last and re.search(r"hb=17000000(09|10)\.\d", last), last
    tail = err[err.rindex("out="):err.index("{\n")]
    assert re.search(r"\r +\r$", tail), repr(tail[-200:])
    st = _stats(err)
    assert st["tuples_written"] == st0["tuples_written"] == len(out.splitlines())
    src = st["sources"][0]
    assert src["input_bytes"] == src["input_bytes_total"] == int(total)
    assert src["packets_read"] == N


def test_no_progress_when_piped(plain):
    _, err, _ = plain
    assert "\r" not in err and "%|" not in err and "out=" not in err


@pytest.mark.parametrize("how", [("--quiet",), ("-q",)])
def test_quiet_on_a_terminal_draws_nothing(cap, plain, how):
    d, pcap = cap
    rc, out, err = _slow_run(_cmd(d, pcap, *how), pace=0.005)
    assert rc == 0, err
    assert out == plain[0] and err == ""


def test_term_dumb_draws_nothing(cap, plain):
    d, pcap = cap
    rc, out, err = _slow_run(_cmd(d, pcap), env={"TERM": "dumb"}, pace=0.005)
    assert rc == 0, err
    assert out == plain[0] and err == ""


def test_no_colour_still_draws(cap, plain):
    d, pcap = cap
    rc, out, err = _slow_run(_cmd(d, pcap), env={"NO_COLOR": "1"})
    assert rc == 0, err
    assert out == plain[0]
    assert _draws(err) and "\x1b[" not in err


def test_progress_forced_when_piped(cap, plain):
    d, pcap = cap
    rc, out, err = _slow_run(_cmd(d, pcap, "--progress", "--stats"), pty_err=False)
    assert rc == 0, err
    assert out == plain[0]
    draws = _draws(err)
    assert len(draws) >= 2, err[:2000]
    assert _value(draws[-1], "out") == _stats(err)["tuples_written"] == plain[2]["tuples_written"]


def test_progress_and_quiet_exclude_each_other(cap):
    d, pcap = cap
    p = subprocess.run(_cmd(d, pcap, "--progress", "--quiet"), capture_output=True, timeout=300)
    assert p.returncode == 2 and b"not allowed with" in p.stderr


def test_no_progress_when_the_output_goes_to_the_terminal():
    # stdout and stderr on the same terminal: the line would mix into the rows
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
    p = subprocess.Popen([sys.executable, "-m", "gsqlc", "run", str(REPO / "examples/flows.gsql"),
                          "--schema", str(REPO / "examples/packet_schema.txt"), "--source",
                          f"eth0=pcap:{REPO / 'examples/trace.pcap'}"],
                         stdout=slave, stderr=slave, env=dict(os.environ, TERM="xterm"))
    os.close(slave)
    chunks = []
    while True:
        try:
            b = os.read(master, 65536)
        except OSError:
            break
        if not b:
            break
        chunks.append(b)
    assert p.wait(timeout=300) == 0
    os.close(master)
    text = b"".join(chunks).decode()
    assert "179533523|6|127.0.0.1" in text and "%|" not in text and "out=" not in text


def test_counter_when_the_total_is_unknown(cap, plain):
    # a capture on standard input: no size, so a count of rows and their rate
    d, pcap = cap
    cmd = [sys.executable, "-m", "gsqlc", "run", str(d / "q.gsql"), "--source",
           "pcap:/dev/stdin", "--stats"]
    rc, out, err = _slow_run(cmd, stdin=pcap.read_bytes(), pace=0.005)
    assert rc == 0, err
    assert out == plain[0]
    draws = _draws(err)
    assert len(draws) >= 2, err[:2000]
    for line in draws:
        assert re.match(r"gsqlc: [\d.]+k? rows \[", line) and "%" not in line, line
    assert re.match(r"gsqlc: 200k rows \[", draws[-1]), draws[-1]
    assert _value(draws[-1], "out") == _stats(err)["tuples_written"]
    assert _stats(err)["sources"][0]["input_bytes_total"] is None


def test_split_run_shows_the_sum_over_its_slices(cap, plain):
    d, pcap = cap
    rc, out, err = _slow_run(_cmd(d, pcap, "--threads", "2", "--stats"))
    assert rc == 0, err
    st = _stats(err)
    assert st["threads"]["used"] == 2, st["threads"]
    assert out == plain[0]
    draws = _draws(err)
    assert draws, err[:2000]
    last = draws[-1]
    assert last.startswith("gsqlc: 100%|") and "rows=200k" in last, last
    assert _value(last, "out") == st["tuples_written"] == plain[2]["tuples_written"]
    assert sum(s["input_bytes"] for s in st["sources"]) == pcap.stat().st_size - 24


def test_quiet_leaves_out_informational_report_lines(tmp_path):
    # a CSV on standard input, idle long enough to stall (an informational
    # line), with a malformed row (a line about lost input: kept)
    csv = REPO / "examples/csv"
    base = [sys.executable, "-m", "gsqlc", "run", str(csv / "per_minute.gsql"), "--schema",
            str(csv / "schema.txt")]
    cmd = base + ["--source", "sales=csv:-", "--heartbeat-interval", "0.1",
                  "--stall-intervals", "2"]
    rows = (csv / "sales.csv").read_text().splitlines(keepends=True)
    errs = {}
    subprocess.run(base + ["--source", f"sales=csv:{csv / 'sales.csv'}"], capture_output=True,
                   check=True, timeout=300)      # built before the timed runs
    for quiet in (False, True):
        p = subprocess.Popen(cmd + (["--quiet"] if quiet else []), stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        p.stdin.write("".join(rows[:5]).encode() + b"1700000100,bad\n")
        p.stdin.flush()
        time.sleep(1.5)
        p.stdin.write("".join(rows[5:]).encode())
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        errs[quiet] = err.decode()
    loud, quiet = errs[False], errs[True]
    assert "stalled" in loud and "rows rejected as malformed" in loud, loud
    assert "stalled" not in quiet and "recovered" not in quiet
    assert [line for line in loud.splitlines()
            if "stalled" not in line and "recovered" not in line
            and "more stall events" not in line] == quiet.splitlines()


def test_interrupted_line_left_out_by_quiet(cap):
    d, pcap = cap
    errs = {}
    for quiet in (False, True):
        p = subprocess.Popen(_cmd(d, pcap, *(["--quiet"] if quiet else [])),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        p.stdout.read(4096)          # running, and held by its full pipe now
        time.sleep(0.2)
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        errs[quiet] = err.decode()
    assert "interrupted" in errs[False] and errs[True] == ""


# ------------------------------------------------------------ the counters


def _poll_during(lib_run):
    """Snapshots of a run's counters taken as fast as possible from another
    thread while lib_run(handle) runs; (snapshots, result, handle)."""
    h = runner.RunHandle()
    snaps: list[runner.Progress] = []
    stop = threading.Event()

    def poll():
        while not stop.is_set():
            p = h.progress()
            if p is not None:
                snaps.append(p)
            time.sleep(0.0005)
    t = threading.Thread(target=poll)
    t.start()
    try:
        res = lib_run(h)
    finally:
        stop.set()
        t.join()
    return snaps, res, h


COUNTERS = ("publications", "input_bytes", "input_bytes_total", "records_read", "rows_out",
            "late_dropped", "skew_dropped", "malformed")


def _check_monotone_and_final(snaps, final, stats):
    for a, b in zip(snaps, snaps[1:]):
        for k in COUNTERS:
            assert getattr(a, k) <= getattr(b, k), (k, a, b)
        assert a.state <= b.state
        if a.watermark is not None:
            assert b.watermark is not None and a.watermark <= b.watermark
    assert final.state == runner.PROGRESS_DONE
    srcs = stats["sources"]
    assert final.records_read == sum(s["records_read"] for s in srcs)
    assert final.input_bytes == sum(s["input_bytes"] for s in srcs)
    assert final.malformed == sum(s["rows_rejected"] for s in srcs)
    assert final.rows_out == stats["tuples_written"]
    assert final.late_dropped == sum(n["late_dropped"] for n in stats["nodes"])
    assert final.skew_dropped == sum(n["skew_dropped"] for n in stats["nodes"])


def test_counters_read_during_a_run_never_go_back(cap, tmp_path):
    d, pcap = cap
    qs = gsqlc.compile([d / "q.gsql"])
    rfd, wfd = os.pipe()

    def drain():                  # a slow reader keeps the run going
        while os.read(rfd, 65536):
            time.sleep(0.002)
    reader = threading.Thread(target=drain)
    reader.start()
    try:
        snaps, res, h = _poll_during(lambda h: runner.run_library(
            qs.library, [("default", f"pcap:{pcap}")], [("pkts", "pipe", f"/dev/fd/{wfd}")],
            {}, {}, cancel=h))
    finally:
        os.close(wfd)
        reader.join()
        os.close(rfd)
    assert res.status == 0, res.error
    running = [p for p in snaps if p.state == runner.PROGRESS_RUNNING]
    # the poller ran while the run was in C: gsqlc_run does not hold the GIL
    assert len({p.records_read for p in running}) >= 3, len(running)
    assert all(p.input_bytes_total == pcap.stat().st_size - 24 for p in running)
    assert all(p.input_bytes <= p.input_bytes_total for p in running)
    final = h.progress()
    _check_monotone_and_final(snaps + [final], final, res.stats)
    assert final.input_bytes == final.input_bytes_total
    assert final.records_read == N and final.watermark == pytest.approx(1_700_000_010, abs=0.01)


def test_counters_count_malformed_rows_and_late_tuples(tmp_path):
    csv = REPO / "examples/csv"
    rows = (csv / "sales.csv").read_text().splitlines(keepends=True)
    # a malformed row, and rows two minutes behind (late for the closed minutes)
    data = "".join(rows[:40]) + "1700000100,bad\n" + "".join(rows[40:]) + \
        rows[0].replace("1700000003", "1700000001") * 3
    path = tmp_path / "sales.csv"
    path.write_text(data)
    qs = gsqlc.compile([csv / "per_minute.gsql"], schema=csv / "schema.txt",
                       max_hfta_disorder=1, max_lfta_disorder=1)
    snaps, res, h = _poll_during(lambda h: runner.run_library(
        qs.library, [("default", f"csv:{path}")], [("per_minute", "csv", str(tmp_path / "o"))],
        {}, {}, cancel=h))
    assert res.status == 0, res.error
    final = h.progress()
    _check_monotone_and_final(snaps + [final], final, res.stats)
    assert final.malformed == 1 and final.late_dropped + final.skew_dropped > 0, res.stats
    assert final.input_bytes == final.input_bytes_total == len(data.encode())


# ------------------------------------------------------------ the API


def _api_draws(text: str) -> list[str]:
    return _draws(text)


def test_api_progress_bar(cap, capsys):
    d, pcap = cap
    qs = gsqlc.compile([d / "q.gsql"])
    run = qs.run({"default": f"pcap:{pcap}"}, progress=True, batch_rows=4096)
    n = 0
    for batch in run:
        n += batch.num_rows
        time.sleep(0.01)
    err = capsys.readouterr().err
    draws = _api_draws(err)
    assert len(draws) >= 2, err[:2000]
    assert draws[-1].startswith("gsqlc: 100%|") and _value(draws[-1], "out") == n
    assert n == run.stats["tuples_written"]
    assert re.search(r"\r +\r$", err), repr(err[-200:])      # closed: the line cleared
    assert not any(t.name == "gsqlc-progress" for t in threading.enumerate())


def test_api_progress_off_by_default(cap, capsys):
    d, pcap = cap
    qs = gsqlc.compile([d / "q.gsql"])
    assert sum(b.num_rows for b in qs.run({"default": f"pcap:{pcap}"})) > 0
    assert capsys.readouterr().err == ""
    with pytest.raises(gsqlc.UsageError):
        qs.run({"default": f"pcap:{pcap}"}, progress="yes")


@pytest.mark.parametrize("how", ["leave", "cancel"])
def test_api_progress_bar_closed_when_the_run_stops_early(cap, capsys, how):
    d, pcap = cap
    qs = gsqlc.compile([d / "q.gsql"])
    run = qs.run({"default": f"pcap:{pcap}"}, progress=True, batch_rows=4096)
    seen = 0
    for i, batch in enumerate(run):
        seen += batch.num_rows
        time.sleep(0.02)
        if i == 12:
            if how == "leave":
                break
            run.cancel()
    err = capsys.readouterr().err
    draws = _api_draws(err)
    assert draws, err[:2000]
    assert re.search(r"\r +\r$", err), repr(err[-200:])
    assert not any(t.name == "gsqlc-progress" for t in threading.enumerate())
    last = draws[-1]
    assert not last.startswith("gsqlc: 100%|"), last       # stopped before the end
    if how == "cancel":
        assert run.stats["interrupted"] is True
        assert _value(last, "out") == run.stats["tuples_written"] == seen


def test_api_progress_over_arrow_data_counts_rows(capsys):
    import pyarrow as pa
    csv = REPO / "examples/csv"
    qs = gsqlc.compile([csv / "per_minute.gsql"], schema=csv / "schema.txt")
    n = 400_000
    t = pa.table({"ts": pa.array(range(1_700_000_000, 1_700_000_000 + n), pa.uint32()),
                  "store": ["north", "south"] * (n // 2), "item": ["x"] * n,
                  "qty": pa.array([1] * n, pa.uint32()), "price": [1.5] * n,
                  "client": ["10.0.0.1"] * n})
    run = qs.run({"sales": t}, progress=True, threads=1, batch_rows=64)
    for _ in run:
        time.sleep(0.005)
    err = capsys.readouterr().err
    draws = _api_draws(err)
    assert draws, err[:2000]
    assert re.match(r"gsqlc: 100%\|.*\| 400k/400k rows \[", draws[-1]), draws[-1]
    assert _value(draws[-1], "out") == run.stats["tuples_written"]
