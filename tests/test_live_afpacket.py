"""Live capture through gsqlc's own reader on Linux (pcap-live:IFACE read
from an AF_PACKET TPACKET_V3 ring, runtime_c/sources/afpacket.c).

Each test makes a network namespace of its own holding a veth pair (va,
vb), both ends up, and runs the capture on vb inside it while a sender of
its own writes Ethernet/IPv4/UDP frames on va through an AF_PACKET socket:
frame i carries the payload "pkt%06d" % i.  The run ends with SIGINT and
must end with status 0 and its output flushed.  Needs root (network
namespaces, raw sockets) and `ip` with veth support; skipped otherwise.
"""
from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import pytest

from conftest import SANITIZED_RUN_ENV, build_sanitized

PORT = 5555
SRC = "10.9.0.1"

SENDER = r'''
import socket, struct, sys, time

def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    s = (s >> 16) + (s & 0xffff)
    s += s >> 16
    return ~s & 0xffff

def frame(i, port, vlan, pad):
    payload = b"pkt%06d" % i + b"x" * pad
    udp = struct.pack("!HHHH", 40000 + i % 100, port, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), i & 0xffff, 0, 64, 17, 0,
                     bytes([10, 9, 0, 1]), bytes([10, 9, 0, 2]))
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    eth = b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01"
    if vlan:
        eth += struct.pack("!HH", 0x8100, vlan)
    return eth + b"\x08\x00" + ip + udp

# IFACE N PORT RATE (frames/s, 0: at once) VLAN_EVERY (every k-th frame tagged
# VLAN 7; 0: none) PAD (payload bytes after the counter)
iface, n, port, rate, vlan_every, pad = sys.argv[1], *map(int, sys.argv[2:7])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((iface, 0))
t0 = time.monotonic()
for i in range(n):
    s.send(frame(i, port, 7 if vlan_every and i % vlan_every == 0 else 0, pad))
    if rate:
        d = t0 + (i + 1) / rate - time.monotonic()
        if d > 0:
            time.sleep(d)
'''

_seq = itertools.count()


def _why_not() -> str | None:
    if sys.platform != "linux":
        return "AF_PACKET capture is Linux only"
    if os.geteuid() != 0:
        return "needs root (network namespaces, raw sockets)"
    if not shutil.which("ip"):
        return "needs the ip command (iproute2)"
    return None


pytestmark = pytest.mark.skipif(_why_not() is not None, reason=_why_not() or "")


def _ip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=30)


@pytest.fixture
def netns():
    """A fresh namespace with veth va <-> vb, both up (no IPv6 chatter)."""
    ns = f"gsqlt{os.getpid()}x{next(_seq)}"
    p = _ip("netns", "add", ns)
    if p.returncode != 0:
        pytest.skip(f"ip netns unavailable: {p.stderr.strip()}")
    try:
        p = _ip("-n", ns, "link", "add", "va", "type", "veth", "peer", "name", "vb")
        if p.returncode != 0:
            pytest.skip(f"veth unavailable: {p.stderr.strip()}")
        subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-qw",
                        "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)
        for link in ("va", "vb", "lo"):
            assert _ip("-n", ns, "link", "set", link, "up").returncode == 0
        yield ns
    finally:
        _ip("netns", "del", ns)


def _bound_packet_sockets(ns: str) -> int:
    """Packet sockets of the namespace bound to a protocol and an interface
    (/proc/net/packet is per namespace; columns sk RefCnt Type Proto Iface
    ...): a capture receives from then on."""
    p = subprocess.run(["ip", "netns", "exec", ns, "cat", "/proc/net/packet"],
                       stdout=subprocess.PIPE, text=True, timeout=30)
    rows = [l.split() for l in p.stdout.splitlines()[1:]]
    return sum(1 for r in rows if len(r) > 4 and int(r[3], 16) and int(r[4]))


class Capture:
    """A run capturing in namespace ns: started, fed, stopped with SIGINT."""

    def __init__(self, ns: str, cmd: list[str], env: dict | None = None,
                 ready: Callable[[], bool] | None = None):
        """Started once ready() holds: by default, once its packet sockets are
        bound (a fanout=N capture has begun once all N members are bound and
        joined)."""
        self.ns = ns
        self.proc = subprocess.Popen(["ip", "netns", "exec", ns, *cmd], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True,
                                     env=dict(os.environ, **(env or {})))
        if ready is None:
            fanout = [int(m) for a in cmd for m in re.findall(r"fanout=(\d+)", a)]
            ready = lambda: _bound_packet_sockets(ns) >= max(fanout, default=1)  # noqa: E731
        deadline = time.time() + 240  # a first run builds the query set
        while not ready():
            if self.proc.poll() is not None:
                out, err = self.proc.communicate()
                raise AssertionError(f"the run ended before capturing ({self.proc.returncode}): "
                                     f"{err[-3000:]}")
            assert time.time() < deadline, "the run never opened its capture"
            time.sleep(0.1)
        time.sleep(0.3)  # libpcap binds before it sets its ring up

    def send(self, tmp: Path, n: int, rate: int = 0, vlan_every: int = 0, pad: int = 0) -> None:
        script = tmp / "sender.py"
        script.write_text(SENDER)
        subprocess.run(["ip", "netns", "exec", self.ns, sys.executable, str(script), "va", str(n),
                        str(PORT), str(rate), str(vlan_every), str(pad)], check=True, timeout=120)

    def read_for(self, secs: float, expect: int = 0) -> str:
        """What the run wrote within secs (or once `expect` lines came out),
        while it goes on."""
        import select
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()  # read raw: communicate reads the rest from fd
        seen = b""
        deadline = time.time() + secs
        while (seen.count(b"\n") < expect or not expect) and time.time() < deadline:
            r, _, _ = select.select([fd], [], [], 0.2)
            if r:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    break
                seen += chunk
        return seen.decode()

    def stop(self, expect: int = 0, settle: float = 1.0) -> tuple[int, str, str]:
        """SIGINT once `expect` lines came out (a live run flushes its output
        every round; at most 60 s), else after `settle` seconds (the last
        block is handed over within its timeout); the status and output."""
        seen = self.read_for(60 if expect else settle, expect)
        self.proc.send_signal(signal.SIGINT)
        try:
            out, err = self.proc.communicate(timeout=60)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        return self.proc.returncode, seen + out, err


def _gsqlc_run(query: Path, uri: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "gsqlc", "run", str(query), "--source", f"vb={uri}",
            "--stats", *extra]


def _stats(err: str) -> dict:
    at = 0 if err.startswith("{") else err.index("\n{") + 1
    return json.JSONDecoder().raw_decode(err, at)[0]


def _source(err: str) -> dict:
    (src,) = _stats(err)["sources"]
    return src


def _query(tmp: Path, text: str, name: str = "q.gsql") -> Path:
    q = tmp / name
    q.write_text(text)
    return q


SELECTION = f"SELECT time, srcIP, destPort, UDP_data FROM UDP WHERE destPort = {PORT}"
COMPARED = (f"SELECT srcIP, destPort, caplen, wire_len, vlan_id, UDP_data FROM UDP "
            f"WHERE destPort = {PORT}")


def test_every_frame_selected_and_counted(netns, tmp_path):
    q = _query(tmp_path, SELECTION)
    n = 2000
    cap = Capture(netns, _gsqlc_run(q, "pcap-live:vb"))
    t0 = int(time.time())
    cap.send(tmp_path, n)
    t1 = int(time.time())
    rc, out, err = cap.stop(expect=n)
    assert rc == 0, err[-3000:]
    lines = out.splitlines()
    fields = [l.split("|") for l in lines]
    assert [f[1:] for f in fields] == [[SRC, str(PORT), "pkt%06d" % i] for i in range(n)], \
        err[-2000:]
    assert all(t0 <= int(f[0]) <= t1 + 1 for f in fields)
    src = _source(err)
    assert src["pcap_reader"] == "afpacket" and src["pcap_fallback"] is None
    assert src["kernel_dropped"] == 0 and src["interface_dropped"] == 0
    assert len(lines) + src["kernel_dropped"] == n
    assert src["packets_read"] == src["ring"]["frames_read"] == src["kernel_received"] >= n
    assert src["ring"]["block_size"] == 1 << 20 and src["ring"]["blocks"] == 64
    assert src["ring"]["blocks_read"] >= 1 and src["ring"]["frozen"] == 0
    assert "interrupted" in err


def test_aggregation_per_second_flushed_on_sigint(netns, tmp_path):
    q = _query(tmp_path, f"SELECT tb, count(*) FROM UDP WHERE destPort = {PORT} "
                         "GROUP BY time as tb")
    n = 1500
    cap = Capture(netns, _gsqlc_run(q, "pcap-live:vb"))
    cap.send(tmp_path, n, rate=1000)  # over two seconds or more
    rc, out, err = cap.stop()
    assert rc == 0, err[-3000:]
    rows = [l.split("|") for l in out.splitlines()]
    seconds = [int(r[0]) for r in rows]
    assert len(rows) >= 2 and seconds == sorted(set(seconds)), out
    assert sum(int(r[1]) for r in rows) + _source(err)["kernel_dropped"] == n, out


def test_same_output_as_libpcap(netns, tmp_path):
    """The same frames -- every third one VLAN-tagged, which the kernel takes
    off and the reader puts back -- give the same output either way."""
    q = _query(tmp_path, COMPARED)
    outs = {}
    for reader in ("mmap", "libpcap"):
        cap = Capture(netns, _gsqlc_run(q, "pcap-live:vb", "--pcap-reader", reader))
        cap.send(tmp_path, 600, vlan_every=3, pad=200)
        rc, out, err = cap.stop(expect=600)
        assert rc == 0, err[-3000:]
        src = _source(err)
        assert src["pcap_reader"] == {"mmap": "afpacket", "libpcap": "libpcap"}[reader]
        if reader == "mmap":
            assert src["ring"]["vlan_restored"] == 200
        else:
            assert src["pcap_fallback"] == "option pcap_reader=libpcap"
        assert src["kernel_dropped"] == 0
        outs[reader] = out
    lines = outs["mmap"].splitlines()
    assert len(lines) == 600
    assert lines[0] == f"{SRC}|{PORT}|255|255|7|pkt000000" + "x" * 200
    assert lines[1] == f"{SRC}|{PORT}|251|251|0|pkt000001" + "x" * 200
    assert outs["mmap"] == outs["libpcap"]


def test_small_ring_and_snaplen_taken(netns, tmp_path):
    """Eight blocks of one page (32 KiB, some 200 frames), each handed over
    after 1 ms: at a low rate still every frame; frames cut to the
    snapshot length."""
    q = _query(tmp_path, f"SELECT destPort, caplen, wire_len FROM UDP WHERE destPort = {PORT}")
    uri = "pcap-live:vb?block_size=4096&blocks=8&block_timeout=1&snaplen=64&promisc=1"
    n = 400
    cap = Capture(netns, _gsqlc_run(q, uri))
    cap.send(tmp_path, n, rate=500, pad=300)
    rc, out, err = cap.stop(expect=n)
    assert rc == 0, err[-3000:]
    assert out.splitlines() == [f"{PORT}|64|351"] * n, err[-2000:]
    src = _source(err)
    assert src["uri"] == "pcap-live:vb"
    assert src["ring"]["block_size"] == 4096 and src["ring"]["blocks"] == 8
    assert src["ring"]["blocks_read"] >= n // 60  # a page holds about 50 such frames
    assert src["kernel_dropped"] == 0


@pytest.mark.parametrize("option,why", [
    ("blocks=1", "blocks must be an integer from 2 to 65536, got '1'"),
    ("block_size=5000", "block_size must be a power of two from 4096"),
    ("block_timeout=0", "block_timeout must be an integer from 1 to 60000"),
    ("snaplen=abc", "snaplen must be an integer from 64 to 262144"),
    ("promisc=2", "promisc must be 0 or 1, got '2'"),
    ("ring=4", "unknown source option 'ring=4'"),
    ("xdp=on", "xdp must be off, auto, native or generic, got 'on'"),
    ("xdp_drop=2", "xdp_drop must be 0 or 1, got '2'"),
])
def test_bad_option_is_a_usage_error(tmp_path, gsqlc, option, why):
    q = _query(tmp_path, SELECTION)
    p = gsqlc("run", q, "--source", f"vb=pcap-live:vb?{option}")
    assert p.returncode == 2, p.err
    assert why in p.err, p.err


def test_no_such_interface_is_a_run_failure(netns, tmp_path):
    q = _query(tmp_path, SELECTION)
    p = subprocess.run(["ip", "netns", "exec", netns, *_gsqlc_run(q, "pcap-live:nosuch9")],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    assert p.returncode == 1, p.stderr[-2000:]
    assert "pcap-live:nosuch9: no such interface" in p.stderr, p.stderr[-2000:]
    assert "Traceback" not in p.stderr


def test_sanitized_runner_captures(netns, tmp_path):
    """The reader under ASan and UBSan: a few hundred frames through a ring
    small enough to go round it several times (at 1,000 frames/s a 2 ms
    block holds about two: 64 blocks are 128 ms of frames, room for the
    sanitized runner's slow start beside other tests -- 4 blocks, 8 ms,
    once lost two frames, counted, to a stall)."""
    q = _query(tmp_path, SELECTION)
    runner = build_sanitized([q], tmp_path / "san")
    cap = Capture(netns, [str(runner), "--source",
                          "vb=pcap-live:vb?block_size=4096&blocks=64&block_timeout=2",
                          "--stats"], env=SANITIZED_RUN_ENV)
    cap.send(tmp_path, 400, rate=1000, vlan_every=5)
    rc, out, err = cap.stop(expect=400)
    assert rc == 0, err[-3000:]
    assert [l.split("|", 1)[1] for l in out.splitlines()] == \
        [f"{SRC}|{PORT}|pkt%06d" % i for i in range(400)], err[-2000:]
    src = _source(err)
    assert src["pcap_reader"] == "afpacket" and src["ring"]["blocks_read"] > 128


def test_interrupt_reads_what_reached_the_capture(netns, tmp_path):
    """SIGINT right after the frames were sent, while they still sit in the
    block the kernel is filling (a 2 s block timeout): the run waits for
    that block and counts every frame before it ends."""
    q = _query(tmp_path, f"SELECT tb, count(*) FROM UDP WHERE destPort = {PORT} "
                         "GROUP BY time as tb")
    cap = Capture(netns, _gsqlc_run(q, "pcap-live:vb?block_timeout=2000"))
    cap.send(tmp_path, 500)
    t0 = time.monotonic()
    rc, out, err = cap.stop(settle=0.05)
    assert rc == 0, err[-3000:]
    assert time.monotonic() - t0 < 30
    src = _source(err)
    assert sum(int(line.split("|")[1]) for line in out.splitlines()) == 500, (out, src)
    assert src["kernel_dropped"] == 0 and src["packets_read"] >= 500
    assert "interrupted" in err
