"""A live interface on several threads: pcap-live:IFACE?fanout=N binds N
AF_PACKET sockets of one PACKET_FANOUT group (the kernel gives each the
frames of its share of the flows), each read with its own LFTA instances on
a capture worker of its own (runtime_c/run/workers.c), their outputs merged
in temporal order as an interface set's.  The results are one thread's.

Each test runs in a network namespace of its own over a veth pair, frames
from an AF_PACKET sender (test_live_afpacket's): frame i carries "pkt%06d"
% i, source port 40000 + i % 100 (100 flows for the kernel's hash).
Needs root and iproute2; skipped otherwise.
"""
from __future__ import annotations

import subprocess

import pytest

from conftest import SANITIZED_RUN_ENV, build_sanitized
from test_live_afpacket import PORT, SELECTION, Capture, _gsqlc_run, _query, _stats, _why_not, netns

pytestmark = pytest.mark.skipif(_why_not() is not None, reason=_why_not() or "")
__all__ = ["netns"]   # the fixture, shared

BY_PORT = (f"SELECT tb, srcPort, count(*) AS n, sum(wire_len) AS bytes FROM UDP "
           f"WHERE destPort = {PORT} GROUP BY time/86400 AS tb, srcPort")


def _members(err: str) -> list[dict]:
    return _stats(err)["sources"]


def test_every_frame_once_in_time_order_on_two_threads(netns, tmp_path):
    # rows short enough that the 3000 of them fit the pipe the test reads
    # only once the sender is done (a run blocked writing would drop frames)
    q = _query(tmp_path, f"SELECT time, UDP_data FROM UDP WHERE destPort = {PORT}")
    n = 3000
    cap = Capture(netns, _gsqlc_run(q, "pcap-live:vb?fanout=2"))
    cap.send(tmp_path, n, rate=1500)  # two seconds and more: the merge orders them
    rc, out, err = cap.stop(expect=n)
    assert rc == 0, err[-3000:]
    rows = [line.split("|") for line in out.splitlines()]
    assert sorted(r[1] for r in rows) == ["pkt%06d" % i for i in range(n)], \
        [(m["iface"], m["packets_read"], m["kernel_dropped"]) for m in _stats(err)["sources"]]
    times = [int(r[0]) for r in rows]
    assert times == sorted(times) and times[0] < times[-1]
    st = _stats(err)
    assert st["capture_workers"] == {"fanout_members": 2, "threads": 2, "why_not": None}
    members = st["sources"]
    assert [m["iface"] for m in members] == ["vb.0", "vb.1"]
    assert all(m["pcap_reader"] == "afpacket" and m["fanout"]["members"] == 2 and
               m["fanout"]["thread"] == "capture worker" for m in members)
    assert len({m["fanout"]["group"] for m in members}) == 1
    # the kernel's flow hash gave each socket a share, and no frame twice
    assert all(m["packets_read"] > n // 10 for m in members), members
    assert sum(m["packets_read"] for m in members) == n
    assert sum(m["kernel_dropped"] for m in members) == 0
    nodes = {nd["name"] for nd in st["nodes"]}
    assert {"q@vb.0", "q@vb.1"} <= nodes


def test_aggregation_equals_one_threads(netns, tmp_path):
    """The same frames counted per flow on one thread and on three: the
    same rows (one epoch of a day, so the runs' timing cannot split them)."""
    q = _query(tmp_path, BY_PORT)
    outs, got = {}, {}
    for uri in ("pcap-live:vb", "pcap-live:vb?fanout=3"):
        cap = Capture(netns, _gsqlc_run(q, uri))
        cap.send(tmp_path, 2000, rate=4000, pad=40)
        rc, out, err = cap.stop(settle=0.5)  # the day's rows come out at the end
        assert rc == 0, err[-3000:]
        outs[uri] = sorted(out.splitlines())
        got[uri] = [(m["iface"], m["packets_read"], m["kernel_dropped"]) for m in _members(err)]
        if "fanout" in uri:
            assert _stats(err)["capture_workers"]["threads"] == 3
            assert len(_members(err)) == 3
    rows = [r.split("|") for r in outs["pcap-live:vb"]]
    assert len(rows) == 100 and sum(int(r[2]) for r in rows) == 2000, got
    assert outs["pcap-live:vb?fanout=3"] == outs["pcap-live:vb"], got


def test_data_clock_reads_the_members_on_the_run_loop(netns, tmp_path):
    """Under the data clock every record moves the run's clock: the members
    are read by the run loop one after the other, the stats say why, and
    the output is the same."""
    q = _query(tmp_path, SELECTION)
    cap = Capture(netns, _gsqlc_run(q, "pcap-live:vb?fanout=2", "--clock", "data"))
    cap.send(tmp_path, 500)
    rc, out, err = cap.stop(expect=500)
    assert rc == 0, err[-3000:]
    assert sorted(line.split("|")[3] for line in out.splitlines()) == \
        ["pkt%06d" % i for i in range(500)]
    cw = _stats(err)["capture_workers"]
    assert cw["threads"] == 0 and "data clock" in cw["why_not"]
    assert all(m["fanout"]["thread"] == "run loop" for m in _members(err))


def test_no_temporal_column_is_a_located_usage_error(tmp_path, gsqlc):
    q = _query(tmp_path, f"SELECT srcIP, UDP_data FROM UDP WHERE destPort = {PORT}")
    p = gsqlc("run", q, "--source", "vb=pcap-live:vb?fanout=2")
    assert p.returncode == 2, p.err
    assert ("reads interface vb with fanout=2, whose sockets' outputs are merged in temporal "
            "order, but its LFTA outputs no temporal column") in p.err


@pytest.mark.parametrize("sources,why", [
    (["vb=pcap-live:vb?fanout=1"], "fanout must be an integer from 2 to 64, got '1'"),
    (["vb=pcap-live:vb?fanout=65"], "fanout must be an integer from 2 to 64, got '65'"),
    (["vb=pcap-live:vb?fanout=2", "vb=pcap-live:va"], "sets do not nest"),
])
def test_bad_fanout_is_a_usage_error(tmp_path, gsqlc, sources, why):
    q = _query(tmp_path, SELECTION)
    p = gsqlc("run", q, *[a for s in sources for a in ("--source", s)])
    assert p.returncode == 2, p.err
    assert why in p.err, p.err


def test_sanitized_runner_on_two_threads(netns, tmp_path):
    """The capture workers under ASan and UBSan, through the stand-alone
    runner (which binds fanout=N as gsqlc run does)."""
    q = _query(tmp_path, SELECTION)
    runner = build_sanitized([q], tmp_path / "san")
    cap = Capture(netns, [str(runner), "--source",
                          "vb=pcap-live:vb?fanout=2&block_size=4096&blocks=64&block_timeout=2",
                          "--stats"], env=SANITIZED_RUN_ENV)
    cap.send(tmp_path, 800, rate=2000)
    rc, out, err = cap.stop(expect=800)
    assert rc == 0, err[-3000:]
    assert sorted(line.split("|")[3] for line in out.splitlines()) == \
        ["pkt%06d" % i for i in range(800)], err[-2000:]
    st = _stats(err)
    assert st["capture_workers"]["threads"] == 2
    assert all(m["packets_read"] > 0 for m in st["sources"])
    p = subprocess.run([str(runner), "--source", "vb=pcap-live:vb?fanout=2", "--source",
                        "vb=pcap-live:va"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, env=SANITIZED_RUN_ENV, timeout=60)
    assert p.returncode == 2 and "sets do not nest" in p.stderr, p.stderr

