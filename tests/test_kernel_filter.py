"""The kernel filter (planner/kernel_filter.py, backend/kernel_filter_gen.py,
runtime_c/sources/afpacket.c): a classic BPF program per live interface,
the disjunction over the LFTAs reading it of their admission and their
leading expressible conjuncts, attached as the AF_PACKET reader's socket
filter.  It must drop only frames every LFTA rejects silently.

Offline: the program is run by a small classic-BPF interpreter over random
frames (every IPv4 shape the decoder meets: options, later fragments,
lengths of 0 or cut short, truncated frames, ICMP, other protocols; IPv6,
ARP, VLAN-tagged and runt frames); the query set's rows and counters over
the frames it keeps are those over every frame, and it drops what it
should.  Live (root, a network namespace with a veth pair, as
test_live_afpacket.py): a query keeping 1 frame in 16 gives the same
rows with the filter on and off, and only the kept frames reach the run."""
from __future__ import annotations

import json
import random
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gsqlc.pipeline import plan_queries  # noqa: E402
from gsqlc.planner.kernel_filter import ACCEPT, plan_kernel_filters  # noqa: E402

# ---- a classic BPF interpreter (linux/filter.h semantics) ----------------


def run_bpf(prog, pkt: bytes, vlan_present: int = 0) -> int:
    """The filter's return for frame pkt (a load past its end returns 0)."""
    A = X = 0
    M = [0] * 16
    pc = 0
    n = len(pkt)
    while True:
        code, jt, jf, k = prog[pc]
        pc += 1
        cls = code & 0x07
        if cls in (0x00, 0x01):          # LD, LDX
            mode, size = code & 0xE0, code & 0x18
            if cls == 0x01:
                if mode == 0xA0:         # MSH
                    if k >= n:
                        return 0
                    X = 4 * (pkt[k] & 0xF)
                elif mode == 0x60:
                    X = M[k]
                elif mode == 0x00:
                    X = k
                elif mode == 0x80:
                    X = n
                else:
                    raise AssertionError(hex(code))
                continue
            if mode == 0x00:
                A = k
            elif mode == 0x80:
                A = n
            elif mode == 0x60:
                A = M[k]
            elif mode in (0x20, 0x40):
                off = k + (X if mode == 0x40 else 0)
                if mode == 0x20 and k >= 0xFFFFF000:
                    assert k - 0xFFFFF000 == 48, "only VLAN_TAG_PRESENT"
                    A = vlan_present
                    continue
                w = {0x00: 4, 0x08: 2, 0x10: 1}[size]
                if off + w > n:
                    return 0
                A = int.from_bytes(pkt[off:off + w], "big")
            else:
                raise AssertionError(hex(code))
        elif cls == 0x02:
            M[k] = A
        elif cls == 0x03:
            M[k] = X
        elif cls == 0x04:                # ALU
            op, src = code & 0xF0, (X if code & 0x08 else k)
            A = {0x00: lambda: A + src, 0x10: lambda: A - src, 0x20: lambda: A * src,
                 0x40: lambda: A | src, 0x50: lambda: A & src, 0x60: lambda: A << src,
                 0x70: lambda: A >> src}[op]() & 0xFFFFFFFF
        elif cls == 0x05:                # JMP
            op, src = code & 0xF0, (X if code & 0x08 else k)
            if op == 0x00:
                pc += k
                continue
            c = {0x10: A == src, 0x20: A > src, 0x30: A >= src, 0x40: (A & src) != 0}[op]
            pc += jt if c else jf
        elif cls == 0x06:
            return k
        elif cls == 0x07:
            if code == 0x07:
                X = A
            else:
                A = X
        else:
            raise AssertionError(hex(code))


# ---- frames ----------------------------------------------------------------

MACS = b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01"


def _ipv4(rng: random.Random, proto: int, l4: bytes) -> bytes:
    ihl = rng.choice([5, 5, 5, 6, 15]) if rng.random() < 0.8 else rng.choice([0, 4])
    opts = b"\x01" * (max(ihl, 5) * 4 - 20)
    tot = 20 + len(opts) + len(l4)
    r = rng.random()
    if r < 0.05:
        tot = 0                                   # TSO
    elif r < 0.1:
        tot = rng.randrange(0, tot)               # says less than there is
    frag = 0
    r = rng.random()
    if r < 0.1:
        frag = rng.randrange(1, 0x2000)           # a later fragment
    elif r < 0.2:
        frag = 0x2000                             # first fragment, more to come
    elif r < 0.4:
        frag = 0x4000
    ver = 4 if rng.random() < 0.97 else 5
    hdr = struct.pack("!BBHHHBBH4s4s", (ver << 4) | (ihl & 0xF), rng.choice([0, 1, 5, 0x10]),
                      tot, rng.randrange(65536), frag, rng.choice([1, 63, 64, 65, 128]), proto, 0,
                      bytes([10, 0, 0, rng.randrange(1, 9)]), bytes([10, 0, 1, 1]))
    return hdr + opts + l4


def _udp(rng: random.Random, port: int) -> bytes:
    pay = b"u" * rng.randrange(0, 40)
    return struct.pack("!HHHH", rng.choice([53, 1234, 40000]), port, 8 + len(pay), 0) + pay


def _tcp(rng: random.Random, port: int) -> bytes:
    return struct.pack("!HHIIBBHHH", rng.choice([80, 5000]), port, rng.randrange(1 << 32), 0,
                       rng.choice([0x50, 0x60, 0x40]), rng.randrange(256), 512, 0, 0) + b"t" * 10


def random_frame(rng: random.Random) -> bytes:
    port = rng.choice([53, 80, 443, 5555, 1234])
    kind = rng.choices(["udp", "tcp", "icmp", "gre", "ipv6", "arp", "vlan", "runt"],
                       [30, 30, 8, 4, 6, 3, 5, 2])[0]
    if kind == "runt":
        return MACS[:rng.randrange(0, 14)]
    if kind == "arp":
        return MACS + b"\x08\x06" + b"\0" * 28
    if kind == "ipv6":
        udp = _udp(rng, port)
        return (MACS + b"\x86\xdd" + struct.pack("!IHBB", 6 << 28, len(udp), 17, 64)
                + b"\x20" * 32 + udp)
    if kind == "vlan":
        return MACS + b"\x81\x00\x00\x07\x08\x00" + _ipv4(rng, 17, _udp(rng, port))
    l4 = {"udp": lambda: _udp(rng, port), "tcp": lambda: _tcp(rng, port),
          "icmp": lambda: bytes([rng.choice([0, 8]), 0, 0, 0]) + b"i" * 8,
          "gre": lambda: b"g" * 12}[kind]()
    proto = {"udp": 17, "tcp": 6, "icmp": 1, "gre": 47}[kind]
    frame = MACS + b"\x08\x00" + _ipv4(rng, proto, l4)
    if rng.random() < 0.08:
        frame = frame[:rng.randrange(14, len(frame))]   # cut short
    return frame


def write_pcap(path: Path, frames: list[tuple[int, bytes]]) -> None:
    """Frames (i, bytes), frame i stamped 10 ms after frame i - 1."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, fr in frames:
            f.write(struct.pack("<IIII", 1_700_000_000 + i // 100, (i % 100) * 10_000,
                                len(fr), len(fr)))
            f.write(fr)


# ---- offline: the program against the queries ----------------------------

QUERIES = """
DEFINE { query_name 'dns'; }
SELECT timestamp, srcIP, srcPort, destPort FROM UDP WHERE destPort = 53;

DEFINE { query_name 'syn'; }
SELECT timestamp, srcIP, flags FROM TCP WHERE syn and not ack and ttl >= 64;

DEFINE { query_name 'web'; }
SELECT timestamp, srcIP, len FROM IPV4 WHERE destPort = 443 or ttl = 1;

DEFINE { query_name 'ping'; }
SELECT timestamp, icmp_type FROM ICMP WHERE icmp_type = 8 and (tos & 1) = 1;

DEFINE { query_name 'frag'; }
SELECT timestamp, id, offset FROM IPV4 WHERE more_fragments and protocol <> 6 and len > 30;

DEFINE { query_name 'per_port'; }
SELECT tb, destPort, count(*) as n FROM TCP WHERE destPort <> 80 and hdr_length > 20
GROUP BY time/10 as tb, destPort;
"""


def _plan(tmp: Path, text: str):
    q = tmp / "q.gsql"
    q.write_text(text)
    return q, plan_kernel_filters(plan_queries([str(q)]).plan)


def _rows_and_counters(gsqlc, q: Path, pcap: Path):
    p = gsqlc("run", q, "--source", f"default=pcap:{pcap}", "--stats", "--format", "jsonl")
    assert p.returncode == 0, p.err[-3000:]
    stats = json.loads(p.err[p.err.index("{"):])
    counters = {n["name"]: {k: v for k, v in n.items()
                            if k in ("field_unavailable", "tuples_out")}
                for n in stats["nodes"]}
    return sorted(p.out.splitlines()), counters


def test_program_keeps_every_frame_a_query_keeps(gsqlc, tmp_path):
    """Random frames: the rows and the counters of missing fields over the
    frames the program keeps are those over every frame; and it drops a
    good share of them."""
    q, (kf,) = _plan(tmp_path, QUERIES)
    assert kf.program is not None and len(kf.program) < 600
    rng = random.Random(7)
    frames = [(i, random_frame(rng)) for i in range(6000)]
    kept = [(i, f) for i, f in frames if run_bpf(kf.program, f)]
    assert all(run_bpf(kf.program, f) in (0, ACCEPT) for _, f in frames)
    assert len(frames) * 0.3 < len(kept) < len(frames) * 0.8, len(kept)
    write_pcap(tmp_path / "all.pcap", frames)
    write_pcap(tmp_path / "kept.pcap", kept)
    rows_all, c_all = _rows_and_counters(gsqlc, q, tmp_path / "all.pcap")
    rows_kept, c_kept = _rows_and_counters(gsqlc, q, tmp_path / "kept.pcap")
    assert len(rows_all) > 300
    assert rows_kept == rows_all
    assert c_kept == c_all
    assert any(c.get("field_unavailable") for c in c_all.values())   # web's ICMP frames


def test_what_the_program_decides(tmp_path):
    """Frame by frame: what a query over UDP port 53 keeps and drops."""
    _, (kf,) = _plan(tmp_path, "SELECT destPort FROM UDP WHERE destPort = 53")
    rng = random.Random(1)
    assert kf.program is not None

    def udp(port, **kw):
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 28, 1, kw.get("frag", 0), 64, 17, 0,
                         b"\x0a\0\0\1", b"\x0a\0\0\2")
        return MACS + kw.get("eth", b"\x08\x00") + ip + struct.pack("!HHHH", 9, port, 8, 0)
    assert run_bpf(kf.program, udp(53))
    assert not run_bpf(kf.program, udp(54))
    assert not run_bpf(kf.program, udp(53, frag=0x10))            # a later fragment: no port
    assert not run_bpf(kf.program, udp(53)[:40])                   # the UDP header cut short
    assert run_bpf(kf.program, udp(54), vlan_present=1)           # tagged: kept
    assert run_bpf(kf.program, udp(54, eth=b"\x81\x00\x00\x07\x08\x00"))
    assert not run_bpf(kf.program, MACS + b"\x08\x06" + b"\0" * 28)  # ARP
    assert run_bpf(kf.program, MACS[:10])                          # runt: kept
    ipv6 = MACS + b"\x86\xdd" + bytes(40) + _udp(rng, 54)
    assert run_bpf(kf.program, ipv6)                               # IPv6: kept


def test_explain_and_what_keeps_every_frame(gsqlc, tmp_path):
    q, (kf,) = _plan(tmp_path, QUERIES)
    p = gsqlc("explain", q)
    assert p.returncode == 0, p.err
    text = p.out[p.out.index("kernel filter of interface default"):]
    assert f"    {len(kf.program)} BPF instructions; keeps a frame when" in text
    assert "dns: PROTOCOL UDP admits it and (destPort = 53)" in text
    assert "syn: PROTOCOL TCP admits it and syn and (not ack) and (ttl >= 64)" in text \
        or "syn: PROTOCOL TCP admits it and syn and" in text
    # a parameter is kept out: the program stops before it
    _, (kf,) = _plan(tmp_path, "PARAM { port uint; }\n"
                     "SELECT destPort FROM UDP WHERE ttl > 1 and destPort = $port")
    (part,) = kf.parts
    assert [str(t) for t in part.texts] == ["(ttl > 1)"] and "destPort = $port" in part.stopped
    # nothing to check: every frame
    _, (kf,) = _plan(tmp_path, "SELECT destPort FROM UDP WHERE destPort = 53;\n"
                     "SELECT caplen FROM PKT WHERE caplen > 100")
    assert kf.program is None and "keeps every frame" in kf.why
    # a conjunct the kernel cannot compute (caplen depends on the snap length)
    _, (kf,) = _plan(tmp_path, "SELECT destPort FROM UDP WHERE caplen > 100 and destPort = 53")
    assert kf.program is not None and kf.parts[0].texts == [] \
        and "not expressible" in kf.parts[0].stopped


# ---- live --------------------------------------------------------------------

import test_live_afpacket as _live  # noqa: E402
from test_live_afpacket import SENDER, Capture, _gsqlc_run, _source, _why_not  # noqa: E402

netns = _live.netns   # the fixture: a namespace with veth va <-> vb
FIXTURES = (netns,)
live = pytest.mark.skipif(_why_not() is not None, reason=_why_not() or "")

SENDER_PORTS = SENDER.replace(
    "    s.send(frame(i, port, 7 if vlan_every and i % vlan_every == 0 else 0, pad))",
    "    s.send(frame(i, port + i % 16 if port > 60000 else port, "
    "7 if vlan_every and i % vlan_every == 0 else 0, pad))")


def _send_ports(cap: Capture, tmp: Path, n: int) -> None:
    """n frames to ports 60001 + i % 16 (one in 16 to port 60001)."""
    script = tmp / "sender16.py"
    script.write_text(SENDER_PORTS)
    subprocess.run(["ip", "netns", "exec", cap.ns, sys.executable, str(script), "va", str(n),
                    "60001", "2000", "0", "0"], check=True, timeout=120)


def _capture(netns, tmp, query, uri, n=1600, expect=100):
    q = tmp / f"q{time.monotonic_ns()}.gsql"
    q.write_text(query)
    cap = Capture(netns, _gsqlc_run(q, uri))
    _send_ports(cap, tmp, n)
    rc, out, err = cap.stop(expect=expect)
    assert rc == 0, err[-3000:]
    return out, _source(err)


ONE_IN_16 = "SELECT srcPort, destPort, UDP_data FROM UDP WHERE destPort = 60001"


@live
def test_one_frame_in_16_read_into_the_run(netns, tmp_path):
    n = 1600
    out_on, on = _capture(netns, tmp_path, ONE_IN_16, "pcap-live:vb")
    out_off, off = _capture(netns, tmp_path, ONE_IN_16, "pcap-live:vb?kernel_filter=0")
    assert out_on.splitlines() == [f"{40000 + i % 100}|60001|pkt%06d" % i
                                   for i in range(0, n, 16)], out_on[-500:]
    assert out_on == out_off
    assert on["kernel_filter"]["instructions"] > 0
    assert off["kernel_filter"] == {"instructions": 0,
                                    "why_not": "option live_kernel_filter:vb=0"}
    assert on["packets_read"] == on["kernel_received"] == n // 16
    assert off["packets_read"] >= n
    assert on["kernel_filter"]["filtered"] >= n - n // 16
    assert on["kernel_filter"]["filtered"] <= n - n // 16 + 20


@live
def test_libpcap_reader_has_no_kernel_filter(netns, tmp_path):
    out, src = _capture(netns, tmp_path, ONE_IN_16, "pcap-live:vb", expect=100)
    q = tmp_path / "lp.gsql"
    q.write_text(ONE_IN_16)
    cap = Capture(netns, _gsqlc_run(q, "pcap-live:vb", "--pcap-reader", "libpcap"))
    _send_ports(cap, tmp_path, 1600)
    rc, out_lp, err = cap.stop(expect=100)
    assert rc == 0, err[-3000:]
    lp = _source(err)
    assert lp["pcap_reader"] == "libpcap" and "kernel_filter" not in lp
    assert out_lp == out and lp["packets_read"] >= 1600


@live
def test_two_queries_the_disjunction(netns, tmp_path):
    query = ("DEFINE { query_name 'a'; }\n" + ONE_IN_16 + ";\n"
             "DEFINE { query_name 'b'; }\n"
             "SELECT destPort, UDP_data FROM UDP WHERE destPort >= 60015;\n")
    out, src = _capture(netns, tmp_path, query, "pcap-live:vb", expect=300)
    assert src["packets_read"] == src["kernel_received"] == 3 * 100
    assert len(out.splitlines()) == 300


@live
def test_no_expressible_predicate_keeps_every_frame(netns, tmp_path):
    query = ("DEFINE { query_name 'a'; }\n" + ONE_IN_16 + ";\n"
             "DEFINE { query_name 'b'; }\n"
             "SELECT wire_len FROM PKT WHERE caplen > 1000;\n")
    out, src = _capture(netns, tmp_path, query, "pcap-live:vb")
    assert src["kernel_filter"]["instructions"] == 0
    assert "keep every frame" in src["kernel_filter"]["why_not"]
    assert src["packets_read"] >= 1600 and len(out.splitlines()) == 100


@live
def test_parameter_kept_out(netns, tmp_path):
    """destPort = $port is left to the query: the program checks UDP only."""
    query = ("PARAM { port uint; }\n"
             "SELECT destPort, UDP_data FROM UDP WHERE ttl = 64 and destPort = $port")
    q = tmp_path / "p.gsql"
    q.write_text(query)
    cap = Capture(netns, _gsqlc_run(q, "pcap-live:vb", "--param", "port=60001"))
    _send_ports(cap, tmp_path, 1600)
    rc, out, err = cap.stop(expect=100)
    assert rc == 0, err[-3000:]
    src = _source(err)
    assert src["kernel_filter"]["instructions"] > 0
    assert src["packets_read"] >= 1600 and len(out.splitlines()) == 100
