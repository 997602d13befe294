"""A run over a capture file on several threads (issue 13): `gsqlc run
--threads N` and run(threads=N) cut a classic pcap file into runs of
records between packets whose timestamps allow it (gsqlc_pcap_cuts), read
each run's records on a thread of its own (option pcap_range:NAME) and
merge the LFTAs' outputs in the HFTAs: output, statistics and report equal
one thread's; captures the cut cannot keep equal stay on one thread and
say why."""
from __future__ import annotations

import json
import sys

import pytest

import gsqlc
from conftest import REPO
from gsqlc.runtime import runner

sys.path.insert(0, str(REPO / "bench"))
import pktgen  # noqa: E402

QUERIES = """\
DEFINE { query_name 'per10'; }
SELECT tb, srcIP, destIP, count(*) as cnt, sum(len) as bytes, max(ttl) as hi
FROM IPV4 GROUP BY time/10 as tb, srcIP, destIP;
DEFINE { query_name 'per30'; }
SELECT t3, sum(cnt) as cnt FROM per10 GROUP BY tb/3 as t3;
DEFINE { query_name 'big'; }
SELECT time, timestamp, srcIP, len FROM IPV4 WHERE len > 600;
"""
N = 60_000          # 14 blocks of 4096 records


def _stats(err: str) -> dict:
    return json.loads(err[err.index("{\n"):])


@pytest.fixture(scope="module")
def cap(tmp_path_factory):
    d = tmp_path_factory.mktemp("pcap_threads")
    ordered = d / "ordered.pcap"
    pktgen.generate(str(ordered), N, n_groups=700, pps=200, seed=4, truth=False)
    # two links, one 20 s behind the other: no packet is later than every
    # packet after it anywhere, so no cut is clean
    delayed = d / "delayed.pcap"
    pktgen.generate_delayed(str(delayed), N // 2, n_groups=300, delay=20.0, pps=800, seed=5)
    (d / "q.gsql").write_text(QUERIES)
    return d, ordered, delayed


@pytest.mark.parametrize("query", ["per10", "per30", "big"])
def test_cli_threads_equal_one_thread(gsqlc, cap, query):
    d, ordered, _ = cap
    runs = {}
    for n in (1, 3):
        p = gsqlc("run", d / "q.gsql", "--source", f"pcap:{ordered}", "--output", query,
                  "--threads", str(n), "--stats")
        assert p.returncode == 0, p.err
        runs[n] = (p.out.splitlines(), _stats(p.err))
    (one, st1), (three, st3) = runs[1], runs[3]
    assert len(one) >= 10
    info = st3["threads"]
    assert info["used"] == 3 and info["reason"] is None, info
    assert len(info["slices"]["default"]) == 3
    assert sum(info["slices"]["default"]) == ordered.stat().st_size - 24   # every record
    if query == "big":
        assert three == one                       # a selection: row for row, in order
    else:
        assert sorted(three) == sorted(one)
    src1, src3 = st1["sources"][0], st3["sources"][0]
    assert src3["records_read"] == src1["records_read"] == N
    assert st1["threads"]["used"] == 1 and "one thread asked for" in st1["threads"]["reason"]


def test_api_threads_over_a_capture_equal_one_thread(cap):
    d, ordered, _ = cap
    qs = gsqlc.compile([d / "q.gsql"])
    one = qs.table({"default": f"pcap:{ordered}"}, "per10", threads=1)
    run = qs.run({"default": f"pcap:{ordered}"}, "per10", threads=2)
    two = [b for b in run]
    import pyarrow as pa
    two = pa.Table.from_batches(two, schema=one.schema)
    keys = [(c, "ascending") for c in one.column_names]
    assert two.sort_by(keys).equals(one.sort_by(keys))
    assert run.stats["threads"]["used"] == 2
    assert run.stats["sources"][0]["records_read"] == N


def test_a_capture_without_a_clean_cut_stays_on_one_thread(gsqlc, cap):
    d, _, delayed = cap
    out = {}
    for n in (1, 3):
        p = gsqlc("run", d / "q.gsql", "--source", f"pcap:{delayed}", "--output", "per10",
                  "--threads", str(n), "--stats")
        assert p.returncode == 0, p.err
        out[n] = sorted(p.out.splitlines())
        info = _stats(p.err)["threads"]
    assert info["used"] == 1 and "no clean boundary" in info["reason"], info
    assert out[3] == out[1]


def test_a_capture_that_ends_early_is_read_whole(gsqlc, cap, tmp_path):
    """A capture cut short mid-record is not cut into runs: read on one
    thread, it reports where it ends, as without --threads."""
    d, ordered, _ = cap
    short = tmp_path / "short.pcap"
    short.write_bytes(ordered.read_bytes()[:-30])
    got = {}
    for n in ("1", "2"):
        p = gsqlc("run", d / "q.gsql", "--source", f"pcap:{short}", "--output", "per10",
                  "--threads", n, "--stats")
        got[n] = (p.returncode, sorted(p.out.splitlines()), p.err[:p.err.index("{\n")])
    assert got["1"] == got["2"]
    assert "truncated" in got["2"][2], got["2"][2]
    assert "ends early" in _stats(p.err)["threads"]["reason"]


def test_pcap_ranges_are_checked(cap):
    """pcap_range:NAME (the option a slice is read with) takes only record
    boundaries inside the records; the message names the interface."""
    d, ordered, _ = cap
    qs = gsqlc.compile([d / "q.gsql"])
    cuts, why = runner.pcap_cuts(qs.library, str(ordered), 4)
    assert why == "" and len(cuts) == 5 and cuts[0] == 24 and cuts[-1] == ordered.stat().st_size
    for bad, what in ((f"{cuts[1] + 1}:{cuts[2]}", "not a record"),
                      (f"10:{cuts[1]}", "outside the capture's records"),
                      ("5", "must be START:END")):
        try:
            res = runner.run_library(qs.library, [("default", f"pcap:{ordered}")],
                                     [("big", "csv", None)], {"pcap_range:default": bad})
            msg = res.error
        except gsqlc.GsqlcError as e:
            msg = str(e)
        assert what in msg and "pcap_range:default" in msg, msg
    # a range of whole records is read alone
    res = runner.run_library(qs.library, [("default", f"pcap:{ordered}")], [],
                             {"pcap_range:default": f"{cuts[1]}:{cuts[2]}"},
                             arrow_sinks=[("big", lambda s, b: True)])
    assert res.status == 0
    assert 0 < res.stats["sources"][0]["records_read"] < N


@pytest.mark.parametrize("args,reason", [
    (["--pcap-reader", "libpcap"], "pcap_reader=libpcap"),
    (["--clock", "data"], "clock=data"),
])
def test_runs_the_cut_cannot_keep_equal_say_why(gsqlc, cap, args, reason):
    d, ordered, _ = cap
    p = gsqlc("run", d / "q.gsql", "--source", f"pcap:{ordered}", "--output", "per10",
              "--threads", "2", "--stats", *args)
    assert p.returncode == 0, p.err
    info = _stats(p.err)["threads"]
    assert info["used"] == 1 and reason in info["reason"], info


def test_pcapng_and_bad_thread_counts(gsqlc, cap, tmp_path):
    d, ordered, _ = cap
    import struct

    from test_pcap_mmap import ng_epb, ng_idb, ng_shb
    raw = ordered.read_bytes()
    blocks, off = [ng_shb(), ng_idb(linktype=1)], 24
    while off < len(raw):
        sec, usec, caplen, wire = struct.unpack_from("<IIII", raw, off)
        blocks.append(ng_epb(0, sec * 1_000_000 + usec, raw[off + 16:off + 16 + caplen],
                             wire=wire))
        off += 16 + caplen
    ng = tmp_path / "c.pcapng"
    ng.write_bytes(b"".join(blocks))
    out = {}
    for n in ("1", "2"):
        p = gsqlc("run", d / "q.gsql", "--source", f"pcap:{ng}", "--output", "per10",
                  "--threads", n, "--stats")
        assert p.returncode == 0, p.err
        out[n] = sorted(p.out.splitlines())
    info = _stats(p.err)["threads"]
    assert info["used"] == 1 and "pcapng" in info["reason"], info
    assert out["1"] == out["2"] and len(out["1"]) > 100
    for bad in ("0", "-2", "x"):
        p = gsqlc("run", d / "q.gsql", "--source", f"pcap:{ordered}", "--threads", bad)
        assert p.returncode == 2 and "--threads: expected a positive integer" in p.err, p.err


def test_the_cli_default_says_why_it_stays_on_one_thread(gsqlc, cap):
    """Without --threads: one thread on fewer than 3 cores (the split
    measured no gain on 2), else a capture this small is not cut."""
    from gsqlc.runtime.split import machine_threads
    d, ordered, _ = cap
    p = gsqlc("run", d / "q.gsql", "--source", f"pcap:{ordered}", "--output", "per10", "--stats")
    assert p.returncode == 0, p.err
    info = _stats(p.err)["threads"]
    want = "core(s)" if machine_threads() < 3 else "too few to split"
    assert info["used"] == 1 and want in info["reason"], info
