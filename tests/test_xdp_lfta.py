"""Kernel LFTAs (gsqlc run --lfta-in-kernel): an aggregating LFTA of a live
interface runs as a BPF program in the interface's XDP hook, and only its
partial aggregates reach user space.

The planner's choice (planner/kernel_lfta.py) is checked through explain;
the rest end to end through `gsqlc run` on a veth pair in a network
namespace of each test's own (test_live_afpacket's), fed by its sender:
frame i is UDP from 10.9.0.1 port 40000 + i % 100 to port 5555, TTL 64.
The same query set run with its LFTA in user space (pcap-live:vb?xdp=off)
is the reference.  Needs root, clang-14 and libbpf-dev; skipped otherwise.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import SANITIZED_RUN_ENV, build_sanitized
from test_live_afpacket import PORT, Capture, _bound_packet_sockets, _stats, netns
from test_live_afpacket import _why_not as _live_why_not

__all__ = ["netns"]   # the fixture, shared

BY_FLOW = (f"SELECT tb, srcIP, srcPort, count(*) AS n, sum(wire_len) AS bytes, "
           f"max(ttl) AS top_ttl, min(len) AS low_len FROM UDP WHERE destPort = {PORT} "
           f"GROUP BY time/{{secs}} AS tb, srcIP, srcPort")
# reads no IPv4-only field: IPv6 frames would count, so it stays in user space
BY_PORT = "SELECT tb, destPort, count(*) AS n FROM UDP GROUP BY time/86400 AS tb, destPort"


def _why_not() -> str | None:
    why = _live_why_not()
    if why:
        return why
    if not shutil.which("clang-14"):
        return "needs clang-14 (clang's BPF target)"
    if not Path("/usr/include/bpf/libbpf.h").exists():
        return "needs libbpf-dev"
    return None


def _query(tmp: Path, *texts: str) -> Path:
    q = tmp / "q.gsql"
    q.write_text("\n\n".join(f"DEFINE {{ query_name 'q{i}'; }}\n{t};" for i, t in enumerate(texts))
                 + "\n")
    return q


def _explain(tmp: Path, *texts: str) -> str:
    p = subprocess.run([sys.executable, "-m", "gsqlc", "explain", str(_query(tmp, *texts)),
                        "--lfta-in-kernel"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_explain_says_which_lftas_run_in_the_kernel_and_why_not(tmp_path):
    out = _explain(tmp_path, BY_FLOW.format(secs=60), BY_PORT,
                   "SELECT srcIP, count(*) AS n FROM UDP GROUP BY time/60 AS tb, srcIP",
                   f"SELECT time, srcIP FROM UDP WHERE destPort = {PORT}",
                   "SELECT tb, srcIP, sum(len * 0.5) AS half FROM UDP GROUP BY time/60 AS tb, "
                   "srcIP")
    lines = out[out.index("kernel LFTAs"):].splitlines()
    assert lines[1].startswith("    _fta_q0 on interface default: in the kernel; epoch tb = "
                               "60,000,000,000 ns, 16,384 slots per epoch parity and CPU; reads ")
    assert lines[2] == ("    _fta_q1: stays in user space: it reads IP fields but neither srcIP "
                        "nor destIP, so IPv6 frames count too, and the kernel program does not "
                        "walk IPv6 extension headers")
    assert lines[3] == ("    _fta_q2: stays in user space: LFTA _fta_q0 holds the XDP hook of "
                        "interface default (one program per interface)")
    assert lines[4].startswith("    q3: stays in user space: a selection")
    assert lines[5].startswith("    _fta_q4: stays in user space: its aggregate sum over "), \
        lines[5]
    assert lines[5].endswith(" is of type float"), lines[5]
    # without the option: nothing about the kernel
    p = subprocess.run([sys.executable, "-m", "gsqlc", "explain", str(tmp_path / "q.gsql")],
                       capture_output=True, text=True)
    assert p.returncode == 0 and "kernel LFTAs" not in p.stdout


def test_missing_toolchain_is_a_usage_error_naming_it(tmp_path):
    q = _query(tmp_path, BY_FLOW.format(secs=60))
    bare = tmp_path / "bin"
    bare.mkdir()
    env = dict(os.environ, PATH=str(bare))
    p = subprocess.run([sys.executable, "-m", "gsqlc", "run", str(q), "--lfta-in-kernel",
                        "--source", "vb=pcap-live:vb"], capture_output=True, text=True, env=env)
    assert p.returncode == 2, p.stderr
    assert "--lfta-in-kernel: the kernel LFTAs (_fta_q0) are built with clang's BPF target" \
        in p.stderr and "clang-14" in p.stderr, p.stderr


live = pytest.mark.skipif(_why_not() is not None, reason=_why_not() or "")


def _attached(ns: str) -> bool:
    p = subprocess.run(["ip", "-n", ns, "-d", "link", "show", "vb"], capture_output=True,
                       text=True, timeout=30)
    return "prog/xdp" in p.stdout


class Run(Capture):
    """gsqlc run --lfta-in-kernel on vb in namespace ns: started once its
    program is attached (and, with a user-space LFTA beside it, its capture
    socket bound; with xdp=off, its capture socket), fed, stopped with SIGINT."""

    def __init__(self, ns: str, q: Path, uri: str, *extra: str, cmd: list | None = None,
                 env: dict | None = None, sockets: int = 0):
        cmd = cmd or [sys.executable, "-m", "gsqlc", "run", str(q), "--lfta-in-kernel",
                      "--source", f"vb={uri}", "--stats", *extra]
        if "xdp=off" in uri:
            super().__init__(ns, cmd, env)
        else:
            super().__init__(ns, cmd, env, lambda: _attached(ns) and
                             _bound_packet_sockets(ns) >= sockets)

    def stop(self, expect: int = 0, settle: float = 0.5) -> tuple[int, str, str]:
        return super().stop(expect, settle)


def _rows(out: str) -> list[list[str]]:
    return [line.split("|") for line in sorted(out.splitlines())]


@live
def test_kernel_lfta_gives_the_user_space_rows_from_partials_alone(netns, tmp_path):
    """One day's epoch (all of it comes out at the end): the rows of the
    kernel run are the user-space run's, the program saw every frame, and
    no frame reached user space -- the interface has no capture socket."""
    q = _query(tmp_path, BY_FLOW.format(secs=86400))
    n = 2000
    outs, stats = {}, {}
    for uri in ("pcap-live:vb?xdp=off", "pcap-live:vb"):
        run = Run(netns, q, uri)
        run.send(tmp_path, n, rate=4000)
        rc, out, err = run.stop()
        assert rc == 0, err[-3000:]
        outs[uri], stats[uri] = _rows(out), _stats(err)
    rows = outs["pcap-live:vb?xdp=off"]
    assert len(rows) == 100 and sum(int(r[3]) for r in rows) == n
    assert {r[5] for r in rows} == {"64"}
    assert outs["pcap-live:vb"] == rows
    st = stats["pcap-live:vb"]
    (src,) = st["sources"]
    assert src["kind"] == "xdp", src
    x = src["xdp"]
    assert x["packets"] + x["bypassed"] == n and x["ring_lost"] == 0, x
    assert x["partials"] < n // 4, x      # user space read partials, not frames
    node = next(nd for nd in st["nodes"] if nd["name"] == "_fta_q0")
    assert node["in_kernel"] is True


@live
def test_epochs_close_while_the_run_goes_on(netns, tmp_path):
    """One-second epochs: each is drained once it ended and its heartbeat
    closes it downstream, so its rows come out before the run ends; over
    all epochs every frame is counted once."""
    q = _query(tmp_path, BY_FLOW.format(secs=1))
    run = Run(netns, q, "pcap-live:vb")
    n = 3000
    run.send(tmp_path, n, rate=1000)
    early = run.read_for(2.5)    # the last epoch ended and was drained by now
    rc, out, err = run.stop()
    assert rc == 0, err[-3000:]
    assert early, "no epoch came out while the run went on"
    rows = _rows(early + out)
    assert sum(int(r[3]) for r in rows) == n
    assert len({r[0] for r in rows}) >= 3   # three seconds of frames or more
    per_flow: dict[str, int] = {}
    for r in rows:
        per_flow[r[2]] = per_flow.get(r[2], 0) + int(r[3])
    assert per_flow == {str(40000 + p): n // 100 for p in range(100)}
    x = _stats(err)["sources"][0]["xdp"]
    assert x["drained_epochs"] >= 3 and x["ring_lost"] == 0, x


@live
def test_a_user_space_lfta_beside_it_reads_the_capture(netns, tmp_path):
    q = _query(tmp_path, BY_FLOW.format(secs=86400), BY_PORT)
    # in generic (SKB) mode, asked for: the capture socket sees the frames too
    run = Run(netns, q, "pcap-live:vb?xdp=generic", "--output", "q0", "--output", "q1",
              sockets=1)
    n = 1000
    run.send(tmp_path, n, rate=4000)
    rc, out, err = run.stop(settle=1.0)
    assert rc == 0, err[-3000:]
    st = _stats(err)
    kinds = sorted(s["kind"] for s in st["sources"])
    assert kinds == ["pcap-live", "xdp"], st["sources"]
    assert next(s for s in st["sources"] if s["kind"] == "xdp")["xdp"]["mode"] == "generic"
    # q0's rows have 7 columns, q1's 3
    by_flow = [r for r in _rows(out) if len(r) == 7]
    by_port = [r for r in _rows(out) if len(r) == 3]
    assert sum(int(r[3]) for r in by_flow) == n
    assert [r[1:] for r in by_port] == [[str(PORT), str(n)]]


@live
def test_no_such_interface_is_a_located_error(netns, tmp_path):
    q = _query(tmp_path, BY_FLOW.format(secs=60))
    p = subprocess.run(["ip", "netns", "exec", netns, sys.executable, "-m", "gsqlc", "run",
                        str(q), "--lfta-in-kernel", "--source", "vb=pcap-live:nosuch0"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode != 0
    assert "pcap-live:nosuch0" in p.stderr and "_fta_q0" in p.stderr and \
        "XDP" in p.stderr, p.stderr


@live
@pytest.mark.skipif(not shutil.which("setpriv"), reason="needs setpriv (util-linux)")
def test_without_the_capabilities_the_error_says_what_is_needed(netns, tmp_path):
    q = _query(tmp_path, BY_FLOW.format(secs=60))
    caps = "-bpf,-sys_admin,-net_admin,-perfmon"
    p = subprocess.run(["ip", "netns", "exec", netns, "setpriv", "--bounding-set", caps,
                        "--inh-caps", caps, sys.executable, "-m", "gsqlc", "run", str(q),
                        "--lfta-in-kernel", "--source", "vb=pcap-live:vb"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 1, p.stderr
    assert p.stderr.strip().splitlines()[-1] == (
        "gsqlc: error: pcap-live:vb: cannot run LFTA _fta_q0 in the kernel's XDP hook: loading "
        "the XDP program xdp_lfta__fta_q0: Operation not permitted (needs root or CAP_BPF + "
        "CAP_NET_ADMIN)"), p.stderr
    assert "libbpf" not in p.stderr   # its own messages only with GSQLC_XDP_DEBUG


@live
def test_sanitized_runner_runs_the_kernel_lfta(netns, tmp_path):
    q = _query(tmp_path, BY_FLOW.format(secs=86400))
    runner = build_sanitized([q, "--lfta-in-kernel"], tmp_path / "san")
    run = Run(netns, q, "pcap-live:vb", cmd=[str(runner), "--source", "vb=pcap-live:vb",
                                             "--stats"], env=SANITIZED_RUN_ENV)
    run.send(tmp_path, 500, rate=2000)
    rc, out, err = run.stop()
    assert rc == 0, err[-3000:]
    assert sum(int(r[3]) for r in _rows(out)) == 500, err[-2000:]
    assert json.dumps(_stats(err)["sources"][0]["kind"]) == '"xdp"'


# Frames of many shapes, each sent once per (shape, i): IPv4 with and
# without options, TCP, UDP, ICMP, other protocols, a later fragment (no
# ports), a first fragment, 802.1Q and QinQ tags, a truncated TCP header,
# IPv6 and ARP (no IPv4 field: skipped by both), a header length below 20.
SHAPES = r'''
import socket, struct, sys

def ip4(proto, payload, ttl=64, tos=0, ident=1, frag=0, ihl=5, src=(10, 9, 0, 1)):
    opts = b"\x01" * ((ihl - 5) * 4)
    h = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, tos, 20 + len(opts) + len(payload), ident,
                    frag, ttl, proto, 0, bytes(src), bytes([10, 9, 0, 2]))
    return h + opts + payload

def eth(body, etype=0x0800, tags=()):
    e = b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01"
    for tpid, vid in tags:
        e += struct.pack("!HH", tpid, vid)
    return e + struct.pack("!H", etype) + body

def tcp(sp, dp, flags, win=512, pad=0):
    return struct.pack("!HHIIBBHHH", sp, dp, 7, 9, 5 << 4, flags, win, 0, 0) + b"t" * pad

def udp(sp, dp, pad=4):
    return struct.pack("!HHHH", sp, dp, 8 + pad, 0) + b"u" * pad

frames = []
for i in range(40):
    src = (10, 9, i % 4, 1)
    frames += [
        eth(ip4(6, tcp(1000 + i, 80, 0x12, pad=i), ttl=64 - i % 3, src=src)),
        eth(ip4(17, udp(2000 + i, 53, pad=i % 7), tos=i % 4, ident=i, src=src)),
        eth(ip4(1, b"\x08\x00\x00\x00" + b"i" * 8, ttl=30, src=src)),
        eth(ip4(47, b"g" * 12, src=src)),                        # GRE: no ports
        eth(ip4(17, udp(3000, 53), ihl=6, src=src)),             # IP options
        eth(ip4(17, b"later fragment", frag=185, src=src)),      # offset 185: no ports
        eth(ip4(17, udp(4000, 53), frag=0x2000, src=src)),       # first fragment, MF
        eth(ip4(6, tcp(5000, 443, 0x02)), tags=((0x8100, 7),)),
        eth(ip4(17, udp(6000, 53)), tags=((0x88a8, 100), (0x8100, 200))),
        eth(ip4(6, tcp(7000, 22, 0x10)[:12], src=src)),          # TCP header cut short
        eth(b"\x60" + b"\x00" * 5 + b"\x11\x40" + b"\x00" * 32 + udp(8000, 53), 0x86DD),
        eth(b"\x00\x01\x08\x00\x06\x04\x00\x01" + b"\x00" * 20, 0x0806),   # ARP
        eth(struct.pack("!BB", 0x44, 0) + b"\x00" * 18 + udp(9000, 53)),    # ihl 4
    ]
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((sys.argv[1], 0))
for f in frames:
    s.send(f + b"\x00" * max(0, 60 - len(f)))
print(len(frames))
'''

# every header field the program decodes, read by one query or another
FIELD_QUERIES = [
    "SELECT tb, srcIP, protocol, ttl, tos, hdr_length, offset, more_fragments, "
    "dont_fragment, vlan_id, eth_type, count(*) AS n, sum(len) AS l, max(id) AS i, "
    "sum(wire_len) AS w, min(ipversion) AS v FROM IP "
    "GROUP BY time/86400 AS tb, srcIP, protocol, ttl, tos, hdr_length, offset, "
    "more_fragments, dont_fragment, vlan_id, eth_type",
    "SELECT tb, destIP, srcPort, destPort, count(*) AS n, Or_Aggr(flags) AS f, max(window) AS w, "
    "sum(sequence_number) AS s, Xor_Aggr(ack_number) AS a, max(syn) AS y FROM TCP "
    "GROUP BY time/86400 AS tb, destIP, srcPort, destPort",
    "SELECT tb, srcIP, srcPort, udp_length, count(*) AS n FROM UDP WHERE srcPort <> 1 "
    "GROUP BY time/86400 AS tb, srcIP, srcPort, udp_length",
    "SELECT tb, srcIP, icmp_type, icmp_code, count(*) AS n, max(eth_src) AS m FROM ICMP "
    "GROUP BY time/86400 AS tb, srcIP, icmp_type, icmp_code",
]


@live
@pytest.mark.parametrize("text", FIELD_QUERIES, ids=["ip", "tcp", "udp", "icmp"])
def test_the_program_decodes_every_field_as_user_space_does(netns, tmp_path, text):
    """Frames of many shapes: the kernel program counts exactly the frames,
    and finds exactly the field values, that the LFTA does in user space."""
    q = _query(tmp_path, text)
    assert "_fta_q0 on interface default: in the kernel" in _explain(tmp_path, text)
    script = tmp_path / "shapes.py"
    script.write_text(SHAPES)
    outs = {}
    for uri in ("pcap-live:vb?xdp=off", "pcap-live:vb"):
        run = Run(netns, q, uri)
        p = subprocess.run(["ip", "netns", "exec", netns, sys.executable, str(script), "va"],
                           capture_output=True, text=True, timeout=60, check=True)
        rc, out, err = run.stop()
        assert rc == 0, err[-3000:]
        outs[uri] = _rows(out)
    assert int(p.stdout) == 520
    assert outs["pcap-live:vb"] == outs["pcap-live:vb?xdp=off"]
    assert len(outs["pcap-live:vb"]) >= 4


@live
def test_a_killed_run_leaves_no_program_behind(netns, tmp_path):
    """The program hangs on a bpf_link the run holds: killed outright, the
    run takes it along, and the next run attaches as the first did."""
    q = _query(tmp_path, BY_FLOW.format(secs=60))
    run = Run(netns, q, "pcap-live:vb")
    run.proc.kill()
    run.proc.communicate(timeout=60)
    deadline = time.time() + 10
    while _attached(netns) and time.time() < deadline:
        time.sleep(0.1)
    assert not _attached(netns)
    again = Run(netns, q, "pcap-live:vb")
    again.send(tmp_path, 100)
    rc, out, err = again.stop()
    assert rc == 0, err[-3000:]
    assert sum(int(r[3]) for r in _rows(out)) == 100


@live
def test_a_monitoring_interface_drops_its_frames_once_counted(netns, tmp_path):
    """?xdp_drop=1: every frame is counted, then dropped in the driver (a
    packet socket on the interface sees none of them)."""
    q = _query(tmp_path, BY_FLOW.format(secs=86400))
    run = Run(netns, q, "pcap-live:vb?xdp_drop=1")
    tap = subprocess.Popen(["ip", "netns", "exec", netns, "tcpdump", "-i", "vb", "-n", "-w",
                            str(tmp_path / "tap.pcap")], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)
    run.send(tmp_path, 300, rate=3000)
    time.sleep(0.5)
    tap.send_signal(signal.SIGINT)
    _, tap_err = tap.communicate(timeout=30)
    rc, out, err = run.stop()
    assert rc == 0, err[-3000:]
    assert sum(int(r[3]) for r in _rows(out)) == 300
    assert "0 packets captured" in tap_err, tap_err
    assert "frames dropped once counted" in err
    assert _stats(err)["sources"][0]["xdp"]["verdict"] == "drop"


@live
def test_dropping_frames_a_user_space_lfta_reads_is_refused(netns, tmp_path):
    q = _query(tmp_path, BY_FLOW.format(secs=86400), BY_PORT)
    p = subprocess.run(["ip", "netns", "exec", netns, sys.executable, "-m", "gsqlc", "run",
                        str(q), "--lfta-in-kernel", "--source", "vb=pcap-live:vb?xdp_drop=1"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode != 0
    assert "_fta_q1 reads interface vb in user space" in p.stderr, p.stderr
