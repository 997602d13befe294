"""The XDP runtime blocks (runtime_c/xdp): a hand-written aggregating LFTA
(tests/xdp/count_by_src.bpf.c, COUNT(*) and SUM(len) per epoch, srcIP and
destPort in a direct-mapped table of 64 slots per CPU) attached by
xdp_loader to one end of a veth pair in a network namespace of the test's
own, fed UDP frames through an AF_PACKET socket on the other end.  Every
frame must be counted exactly once over the drained tables and the ring's
partials -- when user space drains on time, and when it drains late (after
the epoch two on began), the rule of xdp_table.h's ownership words.  Also:
a missing interface, an object that is not ELF, a program the verifier
refuses, each give the error that names it.  The end of a run
(xdp_loader_finish: detach, then every open table drained whatever the
clock), an object opened from memory, and the verdict (XDP_DROP: the frames
counted and dropped)."""
from __future__ import annotations

import os
import random
import shutil
import struct
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
XDP_RT = ROOT / "runtime_c" / "xdp"
XDP_TESTS = ROOT / "tests" / "xdp"
CLANG = "clang-14"
BPF_CFLAGS = ["-O2", "-g", "-target", "bpf", "-mcpu=v3", "-I/usr/include/x86_64-linux-gnu", f"-I{XDP_RT}"]
EPOCH_MS = 1500
GRACE_MS = 150
KEY_BYTES, AGGR_BYTES = 8, 16
KIND = {1: "collision", 2: "old", 3: "bypass", 4: "drain"}


def _why_not() -> str | None:
    if not sys.platform.startswith("linux"):
        return "XDP is Linux's"
    if os.geteuid() != 0:
        return "needs root (BPF, XDP attach, network namespaces)"
    if not shutil.which(CLANG):
        return f"no {CLANG} to build the BPF object"
    if not Path("/usr/include/bpf/libbpf.h").exists():
        return "no libbpf headers (libbpf-dev)"
    if not shutil.which("ip"):
        return "no ip (iproute2)"
    if not (shutil.which("cc") or shutil.which("gcc")):
        return "no C compiler"
    return None


pytestmark = pytest.mark.skipif(_why_not() is not None, reason=_why_not() or "")


def _run(*cmd, **kw):
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(BPF object, driver) built in a tmp dir."""
    d = tmp_path_factory.mktemp("xdp")
    obj = d / "count_by_src.bpf.o"
    p = _run(CLANG, *BPF_CFLAGS, "-Wall", "-c", XDP_TESTS / "count_by_src.bpf.c", "-o", obj)
    assert p.returncode == 0, p.stderr
    drive = d / "drive"
    cc = shutil.which("cc") or "gcc"
    p = _run(cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-O2", f"-I{XDP_RT}", XDP_TESTS / "drive.c",
             XDP_RT / "xdp_loader.c", "-o", drive, "-lbpf", "-lelf", "-lz")
    assert p.returncode == 0, p.stderr
    return obj, drive


@pytest.fixture
def netns():
    """A namespace with veth va <-> vb, both up, IPv6 off; removed after."""
    name = f"gsqlc_xdp_{os.getpid()}_{time.monotonic_ns() % 100000}"
    p = _run("ip", "netns", "add", name)
    if p.returncode != 0:
        pytest.skip(f"cannot make a network namespace: {p.stderr.strip()}")
    try:
        for cmd in (["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"],
                    ["sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1"],
                    ["ip", "link", "add", "va", "type", "veth", "peer", "name", "vb"],
                    ["ip", "link", "set", "va", "up"], ["ip", "link", "set", "vb", "up"]):
            p = _run("ip", "netns", "exec", name, *cmd)
            if p.returncode != 0 and cmd[0] == "ip":
                pytest.skip(f"cannot set up the veth pair: {p.stderr.strip()}")
        yield name
    finally:
        _run("ip", "netns", "del", name)


class Driver:
    """drive.c in the namespace, one command at a time."""

    def __init__(self, ns, obj, drive, ifname="vb", key=KEY_BYTES, aggr=AGGR_BYTES, mode="auto",
                 flags=()):
        self.ns = ns
        self.p = subprocess.Popen(
            ["ip", "netns", "exec", ns, str(drive), *flags, str(obj), ifname, str(EPOCH_MS),
             str(GRACE_MS), str(key), str(aggr), mode],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        first = self.p.stdout.readline().strip()
        self.error = first[6:] if first.startswith("error ") else None
        if self.error is None:
            assert first.startswith("ready "), first + self.p.stderr.read()
            _, self.mode, off, bound = first.split()
            self.off, self.bound = int(off), int(bound)
            self.epoch_ns = EPOCH_MS * 1_000_000
            self.first_epoch = self.now()
            self.next_drain = self.first_epoch

    def cmd(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        recs = []
        while True:
            out = self.p.stdout.readline()
            assert out, f"driver ended: {self.p.stderr.read()}"
            w = out.split()
            if w[0] == "rec":
                recs.append((int(w[1]), int(w[2]), int(w[3]), bytes.fromhex(w[4]), bytes.fromhex(w[5])))
                continue
            assert w[0] != "error", out
            return w, recs

    def now(self):
        return int(self.cmd("now")[0][1])

    def epoch_start_mono(self, e):
        return e * self.epoch_ns - self.off

    def drain_through(self, last):
        """Drains every epoch up to `last` in order, each once drainable."""
        recs = []
        for e in range(self.next_drain, last + 1):
            wait = (self.epoch_start_mono(e + 1) + GRACE_MS * 1_000_000 - time.monotonic_ns()) / 1e9
            if wait > 0:
                time.sleep(wait + 0.01)
            recs += self.cmd(f"drain {e}")[1]
        self.next_drain = last + 1
        return recs

    def stats(self):
        w, _ = self.cmd("stats")
        return dict(zip(("packets", "collisions", "old", "bypassed", "ring_lost", "busy"), map(int, w[1:])))

    def close(self):
        if self.p.poll() is None:
            try:
                self.p.stdin.write("quit\n")
                self.p.stdin.flush()
                self.p.wait(10)
            except (BrokenPipeError, subprocess.TimeoutExpired):
                self.p.kill()
                self.p.wait()


@pytest.fixture(params=["auto", "generic"])
def attach_mode(request):
    """auto: native (driver) mode where the interface has it (veth does), else
    generic; generic: the SKB-mode path that must work on any interface."""
    return request.param


@pytest.fixture
def driver(built, netns, attach_mode):
    obj, drive = built
    d = Driver(netns, obj, drive, mode=attach_mode)
    if d.error is not None:
        d.close()
        if any(s in d.error for s in ("not permitted", "not supported", "Function not implemented")):
            pytest.skip(f"the kernel refuses BPF here: {d.error}")
        pytest.fail(d.error)
    try:
        yield d
    finally:
        d.close()
    # the program is gone from vb once the driver closed
    p = _run("ip", "netns", "exec", netns, "ip", "link", "show", "vb")
    assert "xdp" not in p.stdout, p.stdout


# ---- frames -------------------------------------------------------------------------

def _csum(b: bytes) -> int:
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    s = (s >> 16) + (s & 0xFFFF)
    return ~(s + (s >> 16)) & 0xFFFF


def frame(src: int, dport: int, payload: int) -> bytes:
    udp = struct.pack("!HHHH", 40000, dport, 8 + payload, 0) + bytes(payload)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0x4000, 64, 17, 0,
                     struct.pack("!I", src), bytes([10, 9, 9, 9]))
    ip = ip[:10] + struct.pack("!H", _csum(ip)) + ip[12:]
    return bytes.fromhex("020000000002" "020000000001" "0800") + ip + udp


def batch(seed: int, n: int, sources=40, ports=(53, 80, 443, 5000, 9999)):
    """n frames from `sources` IPs to `ports` (more groups than slots), shuffled."""
    rng = random.Random(seed)
    frames = []
    for _ in range(n):
        src = 0x0A010000 + rng.randrange(sources)
        frames.append(frame(src, rng.choice(ports), 18 + rng.randrange(200)))
    return frames


def expected(frames, epoch):
    want: Counter = Counter()
    for f in frames:
        key = (epoch, f[26:30], struct.unpack("!H", f[36:38])[0])
        want[key + ("n",)] += 1
        want[key + ("bytes",)] += len(f)
    return want


def got(recs):
    have: Counter = Counter()
    for _kind, epoch, _cpu, key, aggr in recs:
        src, dport, _pad = struct.unpack("=4sHH", key)
        n, nbytes = struct.unpack("=QQ", aggr)
        have[(epoch, src, dport, "n")] += n
        have[(epoch, src, dport, "bytes")] += nbytes
    return have


SENDER = r"""
import socket, struct, sys, time
path, off, epoch_ns, at_epoch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
data = open(path, "rb").read()
frames, i = [], 0
while i < len(data):
    (n,) = struct.unpack_from("!H", data, i); frames.append(data[i + 2:i + 2 + n]); i += 2 + n
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(("va", 0))
ep = lambda: (time.monotonic_ns() + off) // epoch_ns
if at_epoch >= 0:   # wait for that epoch's start, plus 50 ms
    w = (at_epoch * epoch_ns - off - time.monotonic_ns()) / 1e9 + 0.05
    if w > 0: time.sleep(w)
first = ep()
for k, f in enumerate(frames):
    s.send(f)
    if k % 32 == 31: time.sleep(0.001)   # veth's XDP ring holds 256 frames
print(first, ep())
"""


def send(d: Driver, tmp_path, frames, at_epoch=-1):
    """Sends frames from va; the epoch they were all sent in."""
    path = tmp_path / f"frames{at_epoch}.bin"
    path.write_bytes(b"".join(struct.pack("!H", len(f)) + f for f in frames))
    tx_drop0 = _tx_dropped(d.ns)
    p = _run("ip", "netns", "exec", d.ns, sys.executable, "-c", SENDER, path, d.off, d.epoch_ns, at_epoch,
             timeout=60)
    assert p.returncode == 0, p.stderr
    first, last = map(int, p.stdout.split())
    assert first == last, f"the frames straddle epochs {first} and {last}: a slow sender"
    assert _tx_dropped(d.ns) == tx_drop0, "veth dropped frames before XDP saw them"
    return first


def _tx_dropped(ns) -> int:
    p = _run("ip", "netns", "exec", ns, "cat", "/sys/class/net/va/statistics/tx_dropped")
    return int(p.stdout.strip() or 0)


# ---- tests --------------------------------------------------------------------------

def test_drained_on_time_counts_every_frame_once(driver, tmp_path, record_property, attach_mode):
    frames = batch(1, 3000)
    e = send(driver, tmp_path, frames, at_epoch=driver.now() + 1)
    recs = driver.drain_through(e)
    recs += driver.cmd("poll")[1]
    st = driver.stats()
    record_property("xdp_mode", driver.mode)
    groups = len(expected(frames, e)) // 2
    kinds = Counter(KIND[r[0]] for r in recs)
    print(f"XDP {driver.mode} mode; {len(frames)} frames, {groups} groups, 64 slots; "
          f"clock offset error bound {driver.bound} ns; partials {dict(kinds)}; stats {st}")
    assert got(recs) == expected(frames, e)
    assert groups > 64 and st["collisions"] > 0 and kinds["collision"] == st["collisions"]
    assert kinds["drain"] > 40, "the hash leaves most of the 64 slots unused"
    assert st["ring_lost"] == 0 and st["bypassed"] == 0 and st["old"] == 0
    assert st["packets"] == len(frames) and st["busy"] == 0
    if attach_mode == "generic":
        assert driver.mode == "generic"


def test_drained_late_counts_every_frame_once(driver, tmp_path):
    """User space drains epoch E only after E+2 began: E+2's frames until
    then bypass E's table (the ring has them one by one), those after go
    into the table the late drain reopened for E+2; none lost, none twice."""
    a, b, c = batch(2, 2000), batch(3, 1500), batch(4, 1000)
    e = send(driver, tmp_path, a, at_epoch=driver.now() + 1)
    assert send(driver, tmp_path, b, at_epoch=e + 2) == e + 2
    recs = driver.drain_through(e)           # late: during E+2
    assert driver.now() == e + 2
    assert send(driver, tmp_path, c) == e + 2
    recs += driver.drain_through(e + 2)
    recs += driver.cmd("poll")[1]
    st = driver.stats()
    kinds = Counter(KIND[r[0]] for r in recs)
    print(f"XDP {driver.mode} mode; late drain; frames {len(a)}+{len(b)}+{len(c)}; "
          f"partials {dict(kinds)}; stats {st}")
    assert got(recs) == expected(a, e) + expected(b + c, e + 2)
    assert st["bypassed"] == len(b) == kinds["bypass"]
    assert st["packets"] == len(a) + len(c)
    assert st["ring_lost"] == 0 and st["old"] == 0


def test_draining_early_is_refused(driver):
    e = driver.now()
    driver.p.stdin.write(f"drain {e}\n")
    driver.p.stdin.flush()
    out = driver.p.stdout.readline()
    assert out.startswith(f"error epoch {e} is not over"), out


def test_located_errors(built, netns, tmp_path):
    obj, drive = built
    d = Driver(netns, obj, drive, ifname="nope0")
    assert d.error == "interface nope0: no such interface"
    d.close()
    junk = tmp_path / "junk.o"
    junk.write_text("not an ELF object\n")
    d = Driver(netns, junk, drive)
    assert d.error == f"opening BPF object {junk}: BPF object format invalid", d.error
    d.close()
    d = Driver(netns, obj, drive, key=16)
    assert d.error == f"BPF object {obj}: its slots are 32 bytes, not 8 + 16 of key + 16 of aggregates"
    d.close()
    bad = tmp_path / "bad.bpf.c"
    bad.write_text('#include <linux/types.h>\nstruct xdp_key { __u64 k; };\nstruct xdp_aggr { __u64 n; };\n'
                   '#define XDP_SLOTS 64\n#include "xdp_table.h"\n'
                   'SEC("xdp") int bad(struct xdp_md *ctx) {\n'
                   '    unsigned char *p = (void *)(long)ctx->data;\n'
                   '    return p[40] == 7 ? XDP_DROP : XDP_PASS;  /* no bounds check */\n}\n'
                   'char LICENSE[] SEC("license") = "GPL";\n')
    bad_o = tmp_path / "bad.o"
    p = _run(CLANG, *BPF_CFLAGS, "-c", bad, "-o", bad_o)
    assert p.returncode == 0, p.stderr
    d = Driver(netns, bad_o, drive, key=8, aggr=8)
    assert d.error is not None
    assert d.error.startswith(f"loading the XDP program bad of {bad_o}: the verifier refused it"), d.error
    d.close()
    # the error's log is on the following lines of the driver's output
    p = _run("ip", "netns", "exec", netns, drive, bad_o, "vb", EPOCH_MS, GRACE_MS, 8, 8)
    assert "invalid access to packet" in p.stdout, p.stdout


def _open(built, netns, **kw):
    obj, drive = built
    d = Driver(netns, obj, drive, **kw)
    if d.error is not None:
        d.close()
        pytest.fail(d.error)
    return d


RECEIVER = r"""
import socket, sys, time
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
s.bind((sys.argv[1], 0))
s.settimeout(0.1)
print("up", flush=True)
n, end = 0, time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    try:
        f = s.recv(2048)
    except socket.timeout:
        continue
    n += f[30:34] == bytes([10, 9, 9, 9])
print(n)
"""


def _received(d: Driver, tmp_path, frames) -> int:
    """How many of `frames`, sent from va, vb's stack saw (a packet socket on it)."""
    p = subprocess.Popen(["ip", "netns", "exec", d.ns, sys.executable, "-c", RECEIVER, "vb", "3"],
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "up"
    send(d, tmp_path, frames)
    return int(p.communicate(timeout=30)[0])


def test_finish_drains_open_epochs_and_detaches(built, netns, tmp_path):
    """Opened from memory; finish, in the epoch the frames were sent in (not
    over: drain would refuse it), detaches and hands on every frame, the
    collisions the ring held without a wake-up among them; a second finish
    has nothing."""
    d = _open(built, netns, flags=("--mem",))
    try:
        frames = batch(5, 1500)
        e = send(d, tmp_path, frames, at_epoch=d.now() + 1)
        # a few collisions wait in the ring without waking user space (the
        # program wakes it once an eighth of the ring is full)
        assert d.cmd("ready")[0] == ["readable", "0"]
        w, recs = d.cmd("finish")
        assert w[0] == "finished" and int(w[1]) == len(recs) and int(w[2]) >= e
        assert d.now() == e, "a slow test: the epoch ended before finish"
        p = _run("ip", "netns", "exec", netns, "ip", "link", "show", "vb")
        assert "xdp" not in p.stdout, p.stdout
        assert got(recs) == expected(frames, e)
        assert {KIND[r[0]] for r in recs} <= {"drain", "collision"}
        st = d.stats()
        assert st["packets"] == len(frames) and st["busy"] == 0
        # nothing runs any more: later frames are not counted, finish again hands on nothing
        send(d, tmp_path, batch(6, 100))
        w, recs = d.cmd("finish")
        assert w[:2] == ["finished", "0"] and recs == []
        assert d.stats()["packets"] == len(frames)
    finally:
        d.close()


def test_a_filling_ring_wakes_user_space(built, netns, tmp_path):
    """Past an eighth of the ring (128 KiB of its 1 MiB: some 2,700 records
    of 48 bytes with their headers) the program wakes user space: the epoll
    fd is readable; every frame is still counted once."""
    d = _open(built, netns, flags=("--mem",))
    try:
        frames = batch(7, 6000, sources=400)    # 2,000 groups in 64 slots: collisions
        e = send(d, tmp_path, frames, at_epoch=d.now() + 1)
        assert d.cmd("ready")[0] == ["readable", "1"]
        w, recs = d.cmd("finish")
        assert w[0] == "finished" and d.now() == e, "a slow test: the epoch ended before finish"
        assert got(recs) == expected(frames, e)
        assert sum(1 for r in recs if KIND[r[0]] == "collision") > 2700
    finally:
        d.close()


def test_memory_object_errors_name_it(built, netns):
    obj, drive = built
    junk = obj.parent / "junk_mem.o"
    junk.write_text("not an ELF object\n")
    d = Driver(netns, junk, drive, flags=("--mem",))
    assert d.error == "opening BPF object xdp_object (in memory): BPF object format invalid", d.error
    d.close()


def test_drop_verdict(built, netns, tmp_path):
    """--drop: every frame is counted, then dropped before the stack (a
    packet socket on vb sees none of them); without it they pass."""
    d = _open(built, netns, flags=("--drop",))
    try:
        frames = batch(7, 200)
        assert _received(d, tmp_path, frames) == 0
        recs = d.cmd("finish")[1]
        assert sum(v for k, v in got(recs).items() if k[3] == "n") == len(frames)
    finally:
        d.close()
    d = _open(built, netns)
    try:
        assert _received(d, tmp_path, batch(8, 200)) == 200
    finally:
        d.close()
