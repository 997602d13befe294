"""Faults around a run, as a user meets them: output to a full disk, an
output pipe its reader closes, an input file deleted while it is read, a
live interface that goes away, a Python consumer that stops reading.  Each
ends in a clear message and the documented exit status (docs/cli.md, "Exit
status": 0 ok, 1 run-time failure, 141 the output's reader went away), never
a hang, and the counters say what was processed."""
from __future__ import annotations

import gc
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyarrow as pa
import pytest

import gsqlc
import gsqlc as gsqlc_api  # where a test takes the `gsqlc` fixture (the CLI)

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
import pktgen  # noqa: E402

PACKETS = 300_000
ALL = "DEFINE { query_name 'allp'; }\nSELECT time, timestamp, caplen, srcIP, destIP FROM IPV4\n"
PER_SECOND = ("DEFINE { query_name 'persec'; }\n"
              "SELECT tb, count(*) AS n FROM PKT GROUP BY time AS tb\n")


@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    d = tmp_path_factory.mktemp("faults")
    pcap = d / "p.pcap"
    pktgen.generate(str(pcap), PACKETS, 1000, pps=50_000, seed=3)
    q = d / "all.gsql"
    q.write_text(ALL)
    return pcap, q


def _stats(stderr: str) -> dict:
    """The --stats JSON on stderr (a message may follow it)."""
    return json.JSONDecoder().raw_decode(stderr[stderr.index("{"):])[0]


# a CSV protocol S: an increasing time t and a value (uint v, or string name)
SCHEMA_TV = ("PROTOCOL S { uint t get_csv_uint_pos1 (increasing); "
             "uint v get_csv_uint_pos2; }\n")


def _files(tmp_path, schema: str, query: str):
    """The schema file and the query file (s.txt, q.gsql) of a CSV test."""
    (tmp_path / "s.txt").write_text(schema)
    (tmp_path / "q.gsql").write_text(query)
    return tmp_path / "s.txt", tmp_path / "q.gsql"


def test_output_to_a_full_disk(gsqlc, capture):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    pcap, q = capture
    p = gsqlc("run", q, "--source", f"eth0=pcap:{pcap}", "--output-file", "/dev/full", "--stats")
    assert p.returncode == 1
    assert "gsqlc: error: cannot write to /dev/full: No space left on device" in p.err
    st = _stats(p.err)
    assert st["ok"] is False and st["output_closed"] is False
    assert st["sources"][0]["packets_read"] > 0          # what was read before it failed
    assert st["sinks"][0]["path"] == "/dev/full"


@pytest.mark.parametrize("threads", ["1", "2"])
def test_output_pipe_closed_by_its_reader(capture, threads):
    # `gsqlc run ... | head -1`: the reader goes away after one line
    pcap, q = capture
    proc = subprocess.Popen([sys.executable, "-m", "gsqlc", "run", str(q), "--source",
                             f"eth0=pcap:{pcap}", "--threads", threads, "--stats"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    rc = proc.wait(timeout=120)
    assert first.count(b"|") == 4
    assert rc == 141, err                               # as a tool SIGPIPE ended
    st = _stats(err)
    text = err[:err.index("{")]                           # stderr besides the --stats JSON
    assert text == "" and err.rstrip().endswith("}"), err
    assert st["output_closed"] is True and st["interrupted"] is False
    assert 0 < st["tuples_written"] < PACKETS             # it stopped early: counted


def test_input_file_deleted_while_read(tmp_path):
    # an open capture or CSV file stays readable when its name is removed:
    # the run reads it to its end
    pcap = tmp_path / "d.pcap"
    pktgen.generate(str(pcap), 50_000, 100, pps=10_000, seed=5)
    csv = tmp_path / "d.csv"
    csv.write_text("".join(f"{i // 100},{i % 7}\n" for i in range(50_000)))
    schema, qc = _files(tmp_path, SCHEMA_TV, "DEFINE { query_name 'c'; }\n"
                        "SELECT t, count(*) AS n, sum(v) AS s FROM S GROUP BY t\n")
    qp = tmp_path / "p.gsql"
    qp.write_text(PER_SECOND)
    cases = [(gsqlc.compile([qp]), "eth0", pcap, "pcap"),
             (gsqlc.compile([qc], schema=schema), "s", csv, "csv")]
    for qs, iface, path, scheme in cases:
        whole = qs.table({iface: f"{scheme}:{path}"})
        copy = path.with_suffix(".copy" + path.suffix)
        shutil.copy(path, copy)
        run = qs.run({iface: f"{scheme}:{copy}"}, batch_rows=16)
        batches = iter(run)
        got = [next(batches)]
        copy.unlink()                                   # mid-read
        got.extend(batches)
        assert pa.Table.from_batches(got).equals(whole), scheme
        assert run.stats["ok"] is True


def _veth_or_skip(name: str, peer: str) -> None:
    if shutil.which("ip") is None:
        pytest.skip("no `ip` command (iproute2)")
    p = subprocess.run(["ip", "link", "add", name, "type", "veth", "peer", "name", peer],
                       capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip(f"cannot create a veth pair here: {p.stderr.strip()}")
    for n in (name, peer):
        subprocess.run(["ip", "link", "set", n, "up"], check=True)


def test_live_interface_that_goes_away(tmp_path):
    name, peer = f"gsqf{os.getpid() % 10000}", f"gsqp{os.getpid() % 10000}"
    _veth_or_skip(name, peer)
    try:
        q = tmp_path / "live.gsql"
        q.write_text(PER_SECOND)
        proc = subprocess.Popen([sys.executable, "-m", "gsqlc", "run", str(q), "--source",
                                 f"eth0=pcap-live:{name}", "--stats"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(3)                                   # compiled (cached) and capturing
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        s.bind((peer, 0))
        frame = b"\xff" * 6 + b"\x02" * 6 + b"\x08\x00" + bytes([0x45]) + bytes(40)
        for _ in range(40):
            s.send(frame)
        s.close()
        time.sleep(1)
    finally:
        subprocess.run(["ip", "link", "del", name], capture_output=True)
    out, err = proc.communicate(timeout=60)
    err = err.decode()
    assert proc.returncode == 1, err
    assert f"gsqlc: error: error reading interface {name} after" in err
    assert "what was read before was processed" in err
    st = _stats(err)
    read = st["sources"][0]["packets_read"]
    assert read >= 40 and st["sources"][0]["failure"].startswith("error reading interface")
    # what was captured came out: one count per second, adding up to the packets read
    counts = [int(line.split(b"|")[1]) for line in out.splitlines()]
    assert sum(counts) == read


def test_consumer_that_stops_reading(tmp_path):
    schema, q = _files(tmp_path, SCHEMA_TV, "DEFINE { query_name 'sel'; }\nSELECT t, v FROM S\n")
    qs = gsqlc.compile([q], schema=schema)
    pulled = []

    def feed():                                         # a live feed: 1,000 batches
        for i in range(1000):
            pulled.append(i)
            yield pa.record_batch({"t": pa.array([i] * 100, pa.uint32()),
                                   "v": pa.array(range(100), pa.uint32())})
    run = qs.run({"s": feed()}, batch_rows=100)
    it = iter(run)
    next(it)
    time.sleep(1.0)
    paused_at = len(pulled)
    time.sleep(1.0)
    # the run waits for its consumer: a bounded number of batches ahead
    assert len(pulled) == paused_at < 20
    done = threading.Event()
    threading.Thread(target=lambda: (run.cancel(), done.set()), daemon=True).start()
    assert done.wait(10)
    rest = list(it)                                     # ends: no hang
    assert len(rest) < 20
    assert run.stats["interrupted"] is True
    assert run.stats["sources"][0]["records_read"] < 1000 * 100
    # an abandoned iteration (never closed by the consumer) ends its run too
    before = threading.active_count()
    it2 = iter(qs.run({"s": feed()}, batch_rows=100))
    next(it2)
    del it2
    gc.collect()
    deadline = time.time() + 10
    while threading.active_count() > before and time.time() < deadline:
        time.sleep(0.05)
    assert threading.active_count() <= before


def test_sigterm_ends_a_run_with_its_counts(capture):
    pcap, q = capture
    live_q = q.parent / "persec.gsql"
    live_q.write_text(PER_SECOND)
    # a FIFO that never ends: the run waits for input until it is told to stop
    fifo = q.parent / "feed.pcap"
    if not fifo.exists():
        os.mkfifo(fifo)
    proc = subprocess.Popen([sys.executable, "-m", "gsqlc", "run", str(live_q), "--source",
                             f"eth0=pcap:{fifo}", "--stats"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    with open(fifo, "wb") as w:
        data = pcap.read_bytes()
        w.write(data[:len(data) // 2])
        w.flush()
        time.sleep(2)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    err = err.decode()
    assert proc.returncode == 0, err                     # interrupted, flushed: a clean end
    assert "gsqlc: interrupted; the input read so far was processed and flushed" in err
    st = _stats(err)
    assert st["interrupted"] is True
    counts = [int(line.split(b"|")[1]) for line in out.splitlines()]
    assert 0 < sum(counts) == st["sources"][0]["packets_read"] < PACKETS


def test_arrow_strings_whose_offsets_leave_the_data(tmp_path):
    # a producer's string offsets are not trusted: one past the data buffer
    # (the fuzzer's heap overflow, fixed) fails the run with a clear error
    import numpy as np
    schema, q = _files(tmp_path, "PROTOCOL S { uint t get_csv_uint_pos1 (increasing); "
                       "string name get_csv_string_pos2; }\n",
                       "DEFINE { query_name 'sel'; }\nSELECT t, name FROM S\n")
    qs = gsqlc.compile([q], schema=schema)
    offsets = pa.py_buffer(np.array([0, 2, 900, 6], dtype=np.int32).tobytes())
    names = pa.Array.from_buffers(pa.string(), 3, [None, offsets, pa.py_buffer(b"abcdef")])
    t = pa.table({"t": pa.array([1, 2, 3], pa.uint32()), "name": names})
    with pytest.raises(gsqlc.RunError, match="column 2 of a record batch holds broken offsets"):
        qs.table({"s": t})
    good = pa.Array.from_buffers(pa.string(), 3, [None, pa.py_buffer(
        np.array([0, 2, 4, 6], dtype=np.int32).tobytes()), pa.py_buffer(b"abcdef")])
    assert qs.table({"s": t.set_column(1, "name", good)})["name"].to_pylist() == ["ab", "cd", "ef"]


def test_an_idle_input_never_holds_up_a_busy_one(tmp_path):
    """Two pipes, one silent (its writer open), one busy: the busy one's
    rows come out as fast as they are read.  Was: every round waited up to
    100 ms on the silent one, so the busy one got one batch per 100 ms --
    a live interface beside an idle one lost half its packets to the kernel
    (bench/results_soak)."""
    schema, q = _files(tmp_path, "PROTOCOL S { uint t get_csv_uint_pos1; uint v get_csv_uint_pos2; }\n",
                       "DEFINE { query_name 'busy'; }\nSELECT t, v FROM b.S;\n"
                       "DEFINE { query_name 'quiet'; }\nSELECT t, v FROM a.S\n")
    idle, busy = tmp_path / "idle.fifo", tmp_path / "busy.fifo"
    os.mkfifo(idle)
    os.mkfifo(busy)
    rows = 400
    proc = subprocess.Popen([sys.executable, "-m", "gsqlc", "run", str(q), "--schema", str(schema),
                             "--source", f"a=csv:{idle}", "--source", f"b=csv:{busy}",
                             "--output", "busy", "--batch", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # O_RDWR: a FIFO opened so never waits for its reader (whatever order
    # gsqlc opens its sources in); both stay open until the rows came out
    quiet = os.open(idle, os.O_RDWR)              # open, and silent
    w = os.open(busy, os.O_RDWR)
    try:
        os.write(w, "".join(f"{i},{i}\n" for i in range(rows)).encode())
        # one batch of one row per round: 400 rounds; waiting 100 ms on the
        # idle pipe each round would take 40 s
        got = b""
        deadline = time.monotonic() + 20
        while got.count(b"\n") < rows and time.monotonic() < deadline:
            ready, _, _ = select.select([proc.stdout], [], [], 0.5)
            if ready:
                chunk = os.read(proc.stdout.fileno(), 65536)
                if not chunk:
                    break
                got += chunk
        n = got.count(b"\n")
        assert n == rows, f"{n} of {rows} rows in 20 s"
    finally:
        os.close(w)
        os.close(quiet)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err.decode()


def test_a_file_that_is_not_a_capture_is_a_usage_error(gsqlc, capture, tmp_path):
    """pcap:PATH naming a text file, or an empty one: one line saying what is
    wrong and the usage exit status a wrong path gets -- no word of a link
    type it never read.  The Python API refuses it alike."""
    _, q = capture
    text = tmp_path / "notes.md"
    text.write_text("# notes\n")
    empty = tmp_path / "empty.pcap"
    empty.write_bytes(b"")
    for f, first in ((text, "23 20 6e 6f"), (empty, "nothing")):
        p = gsqlc("run", q, "--source", f"eth0=pcap:{f}")
        assert p.returncode == 2 and p.out == ""
        assert p.err == (f"gsqlc: error: --source eth0=pcap:{f}: {f} is not a capture file "
                         "(a classic pcap or pcapng file starts with its magic number; this one "
                         f"starts with {first})\n")
    with pytest.raises(gsqlc_api.UsageError, match="is not a capture file"):
        gsqlc_api.compile([q]).table({"eth0": f"pcap:{text}"})


def test_literal_bytes_that_are_not_utf8_reach_every_output(gsqlc, capture, tmp_path):
    """A string literal's escapes are bytes (payload matching needs '\\xff'):
    the text formats write them (JSON lines as code points 0-255), Arrow
    gives them as binary with strings='bytes' and otherwise says so, a
    RunError naming the column -- never an internal error."""
    pcap, _ = capture
    q = tmp_path / "lit.gsql"
    q.write_text("DEFINE { query_name 'lit'; }\nSELECT time, '\\xff\\xfeok' AS s FROM IPV4\n")
    pipe = gsqlc("run", q, "--source", f"eth0=pcap:{pcap}")
    assert pipe.returncode == 0 and pipe.out.splitlines()[0].endswith("|\ufffd\ufffdok")
    jl = gsqlc("run", q, "--source", f"eth0=pcap:{pcap}", "--format", "jsonl")
    assert jl.returncode == 0 and json.loads(jl.out.splitlines()[0])["s"] == "\xff\xfeok"
    qs = gsqlc_api.compile([q])
    assert qs.table({"eth0": f"pcap:{pcap}"}, strings="bytes").column("s")[0].as_py() == \
        b"\xff\xfeok"
    with pytest.raises(gsqlc_api.RunError, match="column s holds bytes that are not valid UTF-8"):
        qs.table({"eth0": f"pcap:{pcap}"})


def test_files_of_other_formats_as_captures_and_as_csv(gsqlc, capture, tmp_path):
    """Whatever file a source names -- text, an image, a compressed file,
    random bytes, a capture given as CSV -- the run says what is wrong (a
    usage error, exit 2) or reads what it can, counting what it rejects
    (exit 0): never an internal error or a signal."""
    import gzip
    import random
    pcap, q = capture
    rng = random.Random(5)
    files = {
        "text.md": b"# a title\n\nsome text, with commas, 1, 2\n",
        "image.png": b"\x89PNG\r\n\x1a\n" + bytes(rng.randrange(256) for _ in range(2000)),
        "data.gz": gzip.compress(b"1,2,3\n" * 1000),
        "random.bin": bytes(rng.randrange(256) for _ in range(5000)),
        "capture.pcap": pcap.read_bytes()[:20000],
    }
    csv_q = tmp_path / "csv.gsql"
    csv_q.write_text("SELECT t, v FROM [csv].S\n")
    (tmp_path / "s.txt").write_text(SCHEMA_TV)
    for name, data in files.items():
        f = tmp_path / name
        f.write_bytes(data)
        as_pcap = gsqlc("run", q, "--source", f"eth0=pcap:{f}")
        assert "internal error" not in as_pcap.err and as_pcap.returncode in (0, 2), \
            (name, as_pcap.returncode, as_pcap.err)
        assert (as_pcap.returncode == 0) == name.endswith(".pcap"), (name, as_pcap.err)
        as_csv = gsqlc("run", csv_q, "--schema", tmp_path / "s.txt", "--source", f"csv=csv:{f}",
                       "--stats")
        assert as_csv.returncode == 0 and "internal error" not in as_csv.err, (name, as_csv.err)
        src = _stats(as_csv.err)["sources"][0]
        # none of them is CSV of two numbers: rows rejected, or values read as
        # Tigon reads them (coerced), counted and said
        assert src["rows_rejected"] + src["values_coerced"] >= 1, (name, src)
        assert src["rows_rejected"] <= src["rows_read"], (name, src)
        assert "rejected as malformed" in as_csv.err or "not valid for their type" in as_csv.err, \
            (name, as_csv.err)
