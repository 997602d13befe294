"""gsqlc.read_pcap: a capture as a pyarrow.Table through the runtime's own
packet decoder (gsqlc._native), checked against independent decodings:
a struct-based reader, tcpdump, bench/pktgen.py's ground truth and
`gsqlc run` over the same capture.

The native part is the built extension: after changing
compiler/native/native_module.cpp or runtime_c/sources/pkt_decode.c, run
`pip install .` before these tests.  A source checkout on PYTHONPATH has no
extension beside its modules and uses the installed package's (or the
scikit-build tree's), see gsqlc.runtime.packets.native; the tests fail, with that
advice, when there is none.
"""
from __future__ import annotations

import csv
import inspect
import io
import ipaddress
import os
import shutil
import struct
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import gsqlc
from gsqlc.runtime import packets
from gsqlc.runtime.arrow_types import output_type
from gsqlc.semantics.resolve import load_schema
from gsqlc.semantics.schema import PACKET_ACCESSORS
from gsqlc.semantics.types import Temporal

REPO = Path(__file__).resolve().parents[1]
TRACE = REPO / "examples" / "trace.pcap"
sys.path.insert(0, str(REPO / "bench"))
import pktgen  # noqa: E402

COLUMNS = [
    "time", "timestamp", "caplen", "wire_len", "eth_src", "eth_dst", "eth_type", "vlan_id",
    "ipversion", "protocol", "len", "hdr_length", "ttl", "tos", "id", "offset",
    "more_fragments", "dont_fragment", "srcIP", "destIP", "srcIPv6", "destIPv6", "srcPort",
    "destPort", "sequence_number", "ack_number", "flags", "fin", "syn", "rst", "psh", "ack",
    "urg", "window", "data_length", "TCP_data", "udp_length", "UDP_data", "icmp_type",
    "icmp_code"]

def read(path, **kw) -> pa.Table:
    # the runtime's own forms (IP uint32, IPV6 16 bytes): what the decoder
    # checks below compare; the text forms are tests/test_ip_format.py's
    kw.setdefault("ip_format", "int")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning on a sound capture
        t = gsqlc.read_pcap(path, **kw)
    t.validate(full=True)
    return t


@pytest.fixture(scope="module")
def trace() -> pa.Table:
    return read(TRACE)


def ip4(s: str) -> int:
    return int(ipaddress.IPv4Address(s))


# ---- pcap writing (crafted captures) --------------------------------------

def pcap_bytes(records, linktype=1, snaplen=65535, magic=0xA1B2C3D4) -> bytes:
    """records: [(ts_sec, ts_frac, frame[, wire_len])]."""
    out = [struct.pack("<IHHiIII", magic, 2, 4, 0, 0, snaplen, linktype)]
    for rec in records:
        sec, frac, frame = rec[:3]
        wire = rec[3] if len(rec) > 3 else len(frame)
        out.append(struct.pack("<IIII", sec, frac, len(frame), wire) + frame)
    return b"".join(out)


def write_pcap(path, records, **kw) -> Path:
    Path(path).write_bytes(pcap_bytes(records, **kw))
    return Path(path)


MAC_A = bytes.fromhex("020000000001")
MAC_B = bytes.fromhex("0200000000ff")


def eth(payload, etype=0x0800, vlan=None, dst=MAC_B, src=MAC_A) -> bytes:
    tag = struct.pack("!HH", 0x8100, vlan) if vlan is not None else b""
    return dst + src + tag + struct.pack("!H", etype) + payload


def ipv4(proto, payload, src="10.0.0.1", dst="10.0.0.2", ttl=64, tos=0, ident=7, frag=0,
         tot=None) -> bytes:
    tot = 20 + len(payload) if tot is None else tot
    return struct.pack("!BBHHHBBH4s4s", 0x45, tos, tot, ident, frag, ttl, proto, 0,
                       ipaddress.IPv4Address(src).packed,
                       ipaddress.IPv4Address(dst).packed) + payload


def ipv6(nh, payload, src="2001:db8::1", dst="2001:db8::2", hlim=33, tclass=0) -> bytes:
    vtf = (6 << 28) | (tclass << 20)
    return struct.pack("!IHBB16s16s", vtf, len(payload), nh, hlim,
                       ipaddress.IPv6Address(src).packed,
                       ipaddress.IPv6Address(dst).packed) + payload


def tcp(sp, dp, payload=b"", seq=1000, ack=2000, flags=0x18, win=512) -> bytes:
    return struct.pack("!HHIIBBHHH", sp, dp, seq, ack, 5 << 4, flags, win, 0, 0) + payload


def udp(sp, dp, payload=b"") -> bytes:
    return struct.pack("!HHHH", sp, dp, 8 + len(payload), 0) + payload


def icmp(typ, code) -> bytes:
    return struct.pack("!BBHHH", typ, code, 0, 1, 1)


# ---- the columns follow the schemas ----------------------------------------

def test_columns_follow_packet_schema(trace):
    assert trace.column_names == COLUMNS
    cols = packets.packet_columns()
    assert [c[0] for c in cols] == COLUMNS
    acc = dict((c[0], c[1]) for c in cols)
    assert acc["srcPort"] == "get_src_port" and acc["destPort"] == "get_dst_port"  # IP's
    pkt = load_schema([])  # gsqlc's packet schema
    for name, accessor, typ in cols:
        f = next(p.fields[name] for p in pkt.protocols.values() if name in p.fields)
        assert str(f.type) == typ
        # the Arrow type of a GSQL type, as the Arrow sink / input use it
        assert trace.schema.field(name).type == output_type(f.type, strings="bytes", ip_format="int"), name
        assert trace.schema.field(name).nullable


def test_native_accessor_table_covers_the_schema():
    native = dict(packets.native().packet_accessors())
    assert set(native) == set(PACKET_ACCESSORS)
    for name, t in PACKET_ACCESSORS.items():
        assert native[name] == ("uint" if str(t) == "IP" else str(t)), name


def test_packet_table_schema_matches_read_pcap():
    sch = load_schema([gsqlc.PACKET_TABLE_SCHEMA])
    p = sch.protocols["PACKETS"]
    assert p.source_kind == "csv"
    fields = list(p.fields.values())
    assert [(f.name, str(f.type)) for f in fields] == [(c[0], c[2]) for c in packets.packet_columns()]
    assert [f.csv_pos for f in fields] == list(range(1, len(COLUMNS) + 1))
    assert [f.name for f in fields if f.temporal is Temporal.INCREASING] == ["time", "timestamp"]
    assert Path(gsqlc.PACKET_TABLE_SCHEMA).name == "packet_table_schema.txt"


def test_packet_table_schema_compiles(gsqlc, tmp_path):
    q = tmp_path / "q.gsql"
    q.write_text("DEFINE { query_name 'flows'; }\n"
                 "SELECT tb, srcIP, destIP, srcPort, destPort, count(*) as cnt, sum(len) as bytes\n"
                 "FROM PACKETS WHERE ipversion = 4\n"
                 "GROUP BY time/10 as tb, srcIP, destIP, srcPort, destPort\n")
    p = gsqlc("compile", "--schema", packets.PACKET_TABLE_SCHEMA, q, "-o", tmp_path / "out")
    assert p.returncode == 0, p.err


def test_unknown_accessor_and_type_mismatch(tmp_path):
    n = packets.native()
    with pytest.raises(ValueError, match="unknown packet accessor 'get_nope'"):
        n.read_pcap(bytes(TRACE), [("x", "get_nope", "uint")])
    with pytest.raises(ValueError, match="unknown packet accessor 'get_system_time'"):
        n.read_pcap(bytes(TRACE), [("x", "get_system_time", "uint")])
    with pytest.raises(ValueError, match="column 'srcIP' is string but accessor get_ipv4_src"):
        n.read_pcap(bytes(TRACE), [("srcIP", "get_ipv4_src", "string")])
    with pytest.raises(ValueError, match="batch_rows"):
        n.read_pcap(bytes(TRACE), [], 0)


# ---- examples/trace.pcap against independent decoders ---------------------

def struct_decode(path):
    """A small independent reader: little-endian microsecond Ethernet pcap,
    IPv4 / IPv6 without extension headers, TCP / UDP."""
    data = Path(path).read_bytes()
    magic, _, _, _, _, _, link = struct.unpack_from("<IHHiIII", data, 0)
    assert magic == 0xA1B2C3D4 and link == 1
    off, rows = 24, []
    while off < len(data):
        sec, usec, caplen, wire = struct.unpack_from("<IIII", data, off)
        f = data[off + 16: off + 16 + caplen]
        off += 16 + caplen
        r = dict.fromkeys(COLUMNS)
        r.update(time=sec, timestamp=sec * 1_000_000 + usec, caplen=caplen, wire_len=wire,
                 eth_dst=int.from_bytes(f[0:6], "big"), eth_src=int.from_bytes(f[6:12], "big"),
                 eth_type=struct.unpack_from("!H", f, 12)[0], vlan_id=0)
        ip = f[14:]
        if r["eth_type"] == 0x0800:
            ihl = (ip[0] & 15) * 4
            tot, ident, frag = struct.unpack_from("!HHH", ip, 2)
            r.update(ipversion=4, protocol=ip[9], len=tot, hdr_length=ihl, ttl=ip[8], tos=ip[1],
                     id=ident, offset=frag & 0x1FFF, more_fragments=bool(frag & 0x2000),
                     dont_fragment=bool(frag & 0x4000),
                     srcIP=int.from_bytes(ip[12:16], "big"), destIP=int.from_bytes(ip[16:20], "big"))
            l4, end = ip[ihl:tot], tot - ihl
        elif r["eth_type"] == 0x86DD:
            plen, nh, hlim = struct.unpack_from("!HBB", ip, 4)
            r.update(ipversion=6, protocol=nh, len=plen + 40, hdr_length=40, ttl=hlim,
                     tos=(struct.unpack_from("!H", ip, 0)[0] >> 4) & 0xFF, id=0, offset=0,
                     more_fragments=False, dont_fragment=False,
                     srcIPv6=bytes(ip[8:24]), destIPv6=bytes(ip[24:40]))
            l4, end = ip[40:40 + plen], plen
        else:
            rows.append(r)
            continue
        if r["protocol"] == 6:
            sp, dp, seq, ack, doff, fl, win = struct.unpack_from("!HHIIBBH", l4, 0)
            doff = (doff >> 4) * 4
            r.update(srcPort=sp, destPort=dp, sequence_number=seq, ack_number=ack, flags=fl,
                     fin=bool(fl & 1), syn=bool(fl & 2), rst=bool(fl & 4), psh=bool(fl & 8),
                     ack=bool(fl & 16), urg=bool(fl & 32), window=win,
                     data_length=end - doff, TCP_data=bytes(l4[doff:]))
        elif r["protocol"] == 17:
            sp, dp, ulen = struct.unpack_from("!HHH", l4, 0)
            r.update(srcPort=sp, destPort=dp, udp_length=ulen, UDP_data=bytes(l4[8:ulen]))
        rows.append(r)
    return rows


def test_trace_matches_struct_decoder(trace):
    want = struct_decode(TRACE)
    got = trace.to_pylist()
    assert len(got) == len(want) == 1455
    for i, (g, w) in enumerate(zip(got, want)):
        assert g == w, f"packet {i}"
    # the capture's make-up (examples/CAPTURE.md)
    v = trace.column("ipversion").to_pylist()
    assert v.count(4) == 1055 and v.count(6) == 400
    assert trace.column("srcIP").null_count == 400 and trace.column("srcIPv6").null_count == 1055
    assert trace.column("icmp_type").null_count == 1455


@pytest.mark.skipif(shutil.which("tcpdump") is None, reason="no tcpdump")
def test_trace_matches_tcpdump(trace):
    p = subprocess.run(["tcpdump", "-r", str(TRACE), "-nn", "-tt", "-q"], capture_output=True,
                       text=True, check=True)
    lines = p.stdout.splitlines()
    assert len(lines) == trace.num_rows
    cols = trace.select(["timestamp", "ipversion", "srcIP", "destIP", "srcIPv6", "destIPv6",
                         "srcPort", "destPort", "protocol"]).to_pylist()
    for line, r in zip(lines, cols):
        # 1795335231.600375 IP 127.0.0.1.53458 > 127.0.0.1.8765: tcp 0
        ts, fam, src, _, dst, proto = line.split()[:6]
        assert int(ts.replace(".", "")) == r["timestamp"]
        assert fam == {4: "IP", 6: "IP6"}[r["ipversion"]]
        (sa, sp), (da, dp) = src.rsplit(".", 1), dst.rstrip(":").rsplit(".", 1)
        if r["ipversion"] == 4:
            assert (ip4(sa), ip4(da)) == (r["srcIP"], r["destIP"])
        else:
            assert ipaddress.IPv6Address(sa).packed == r["srcIPv6"]
            assert ipaddress.IPv6Address(da).packed == r["destIPv6"]
        assert (int(sp), int(dp)) == (r["srcPort"], r["destPort"])
        assert proto == {6: "tcp", 17: "UDP,"}[r["protocol"]]


def _cli_rows(gsqlc, tmp_path, queries: dict[str, str], output: str, source: str):
    files = []
    for name, body in queries.items():
        q = tmp_path / f"{name}.gsql"
        q.write_text(f"DEFINE {{ query_name '{name}'; }}\n{body}\n")
        files.append(q)
    p = gsqlc("run", *files, "--source", source, "--output", output, "--format", "csv")
    assert p.returncode == 0, p.err
    text = p.stdout.decode("latin-1")  # strings are raw bytes
    rows = list(csv.reader(io.StringIO(text, newline="")))
    return rows[0], rows[1:]


CLI_QUERIES = {
    "tcp4": "SELECT timestamp, srcIP, destIP, srcPort, destPort, len, hdr_length, ttl, "
            "sequence_number, ack_number, flags, window, data_length, TCP_data FROM TCP",
    "tcp6": "SELECT timestamp, srcIPv6, destIPv6, srcPort, destPort, len, flags, syn, TCP_data "
            "FROM TCP WHERE ipversion = 6",
    "udp": "SELECT timestamp, ipversion, srcPort, destPort, udp_length, UDP_data FROM UDP",
    "icmp": "SELECT timestamp, icmp_type, icmp_code, protocol FROM ICMP",
}


def _conv(v: str, t: pa.DataType):
    if pa.types.is_binary(t):
        return v.encode("latin-1")
    if pa.types.is_boolean(t):
        return {"TRUE": True, "FALSE": False}[v]
    if pa.types.is_fixed_size_binary(t):
        return ipaddress.IPv6Address(v).packed
    if "." in v:
        return ip4(v)
    return int(v)


def _compare_with_cli(gsqlc, tmp_path, table, pcap):
    """Each query's CLI output equals read_pcap's rows on which the query's
    fields are all available (and its WHERE holds)."""
    for name, body in CLI_QUERIES.items():
        header, rows = _cli_rows(gsqlc, tmp_path, CLI_QUERIES, name, f"pcap:{pcap}")
        sel = table.select(header)
        want = [tuple(r.values()) for r in sel.to_pylist() if None not in r.values()]
        types = [sel.schema.field(c).type for c in header]
        got = [tuple(_conv(v, t) for v, t in zip(r, types)) for r in rows]
        assert got == want, name
        yield name, len(got)


def test_trace_matches_cli(gsqlc, tmp_path, trace):
    counts = dict(_compare_with_cli(gsqlc, tmp_path, trace, TRACE))
    # examples/CAPTURE.md: 957 IPv4 TCP, 304 IPv6 TCP, 98 + 96 UDP, no ICMP
    assert counts == {"tcp4": 957, "tcp6": 304, "udp": 194, "icmp": 0}


# ---- bench/pktgen.py captures against their ground truth --------------------

TRUTH_COLUMNS = ["time", "timestamp", "caplen", "wire_len", "srcIP", "destIP", "srcPort",
                 "destPort", "protocol", "len", "hdr_length", "ttl", "tos", "id", "offset",
                 "more_fragments", "dont_fragment", "ipversion", "flags", "udp_length",
                 "TCP_data"]


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    d = tmp_path_factory.mktemp("pktgen")
    pcap = d / "g.pcap"
    truth = pktgen.generate(str(pcap), 20_000, 300, pps=500, seed=11, payload=True, frag=0.03)
    return pcap, truth


def test_pktgen_matches_truth(generated):
    pcap, truth = generated
    t = read(pcap)
    assert t.num_rows == truth.num_rows == 20_000
    for c in TRUTH_COLUMNS:
        got, want = t.column(c), truth.column(c)
        if c == "TCP_data":  # the truth holds the bytes as latin-1 text
            assert [None if b is None else b.decode("latin-1") for b in got.to_pylist()] \
                == want.to_pylist()
            continue
        assert got.cast(want.type).to_pylist() == want.to_pylist(), c
    # fields the truth does not list
    proto = t.column("protocol").to_pylist()
    off = t.column("offset").to_pylist()
    icmp_t = t.column("icmp_type").to_pylist()
    assert {p for p in proto} == {1, 6, 17}
    for p, o, it in zip(proto, off, icmp_t):
        assert (it is not None) == (p == 1 and o == 0)
    assert t.column("srcIPv6").null_count == t.num_rows
    assert set(t.column("vlan_id").to_pylist()) == {0}
    assert set(t.column("eth_type").to_pylist()) == {0x0800}


def test_pktgen_matches_cli(gsqlc, tmp_path, generated):
    pcap, _ = generated
    counts = dict(_compare_with_cli(gsqlc, tmp_path, read(pcap), pcap))
    assert counts["tcp4"] > 10_000 and counts["udp"] > 3000 and counts["icmp"] > 500
    assert counts["tcp6"] == 0


def test_batches(generated):
    pcap, _ = generated
    whole = read(pcap)
    assert whole.column("time").num_chunks == 1
    small = read(pcap, batch_rows=3000)
    assert [len(c) for c in small.column("TCP_data").chunks] == [3000] * 6 + [2000]
    assert small.equals(whole)
    one = read(TRACE, batch_rows=1)
    assert one.column("srcPort").num_chunks == 1455
    assert one.equals(read(TRACE))


# ---- crafted captures: link types, headers present and absent ---------------

def test_mixed_headers(tmp_path):
    frames = [
        eth(ipv4(6, tcp(1234, 80, b"GET / HTTP/1.0\r\n", flags=0x19), tos=0x10), vlan=42),
        eth(ipv4(17, udp(5353, 53, b"\x00\x01query"), ttl=3, frag=0x4000)),
        eth(ipv4(1, icmp(8, 0), src="192.168.1.9")),
        eth(b"\x00\x01\x08\x00\x06\x04\x00\x01" + bytes(20), etype=0x0806),  # ARP
        eth(ipv6(17, udp(1000, 2000, b"v6")), etype=0x86DD),
        # IPv6 fragment header, a non-first fragment: no UDP header
        eth(ipv6(44, struct.pack("!BBHI", 17, 0, (100 << 3) | 1, 0xABCDEF01) + bytes(16)),
            etype=0x86DD),
        eth(ipv4(6, bytes(16), frag=0x2000 | 185, ident=99)),          # non-first fragment
        eth(ipv4(6, tcp(1, 2)))[:20],                                   # IP header not captured
        eth(ipv6(58, icmp(128, 0), src="fe80::1", dst="ff02::1"), etype=0x86DD),
        eth(ipv4(6, tcp(7, 8, b"x" * 100)))[:14 + 20 + 20 + 10],        # payload snapped at 10
    ]
    recs = [(1_700_000_000 + i, 250_000 * (i % 4), f) for i, f in enumerate(frames)]
    recs[9] = recs[9] + (14 + 20 + 20 + 100,)
    t = read(write_pcap(tmp_path / "m.pcap", recs))
    r = t.to_pylist()
    assert [x["time"] for x in r] == [1_700_000_000 + i for i in range(10)]
    assert r[1]["timestamp"] == 1_700_000_001_250_000
    # 0: TCP in a VLAN
    assert r[0]["vlan_id"] == 42 and r[0]["eth_type"] == 0x0800
    assert r[0]["eth_src"] == 0x020000000001 and r[0]["eth_dst"] == 0x0200000000FF
    assert (r[0]["srcIP"], r[0]["destIP"]) == (ip4("10.0.0.1"), ip4("10.0.0.2"))
    assert (r[0]["srcPort"], r[0]["destPort"], r[0]["tos"]) == (1234, 80, 0x10)
    assert (r[0]["flags"], r[0]["fin"], r[0]["psh"], r[0]["ack"], r[0]["syn"]) == \
        (0x19, True, True, True, False)
    assert r[0]["TCP_data"] == b"GET / HTTP/1.0\r\n" and r[0]["data_length"] == 16
    assert r[0]["udp_length"] is None and r[0]["UDP_data"] is None and r[0]["icmp_type"] is None
    # 1: UDP, DF
    assert (r[1]["srcPort"], r[1]["destPort"], r[1]["udp_length"]) == (5353, 53, 15)
    assert r[1]["UDP_data"] == b"\x00\x01query" and r[1]["ttl"] == 3
    assert r[1]["dont_fragment"] is True and r[1]["more_fragments"] is False
    assert r[1]["sequence_number"] is None and r[1]["TCP_data"] is None
    # 2: ICMP: no ports
    assert (r[2]["icmp_type"], r[2]["icmp_code"], r[2]["protocol"]) == (8, 0, 1)
    assert r[2]["srcPort"] is None and r[2]["destPort"] is None
    assert r[2]["srcIP"] == ip4("192.168.1.9")
    # 3: ARP: Ethernet only
    assert r[3]["eth_type"] == 0x0806 and r[3]["eth_src"] == 0x020000000001
    assert all(r[3][c] is None for c in COLUMNS[8:])
    # 4: IPv6 UDP
    assert r[4]["ipversion"] == 6 and r[4]["srcIP"] is None
    assert r[4]["srcIPv6"] == ipaddress.IPv6Address("2001:db8::1").packed
    assert r[4]["destIPv6"] == ipaddress.IPv6Address("2001:db8::2").packed
    assert (r[4]["srcPort"], r[4]["UDP_data"], r[4]["ttl"], r[4]["len"]) == (1000, b"v6", 33, 50)
    assert (r[4]["id"], r[4]["offset"], r[4]["hdr_length"]) == (0, 0, 40)
    # 5: IPv6 fragment
    assert (r[5]["id"], r[5]["offset"], r[5]["more_fragments"]) == (0xABCDEF01, 100, True)
    assert (r[5]["protocol"], r[5]["hdr_length"], r[5]["srcPort"]) == (17, 48, None)
    # 6: IPv4 non-first fragment
    assert (r[6]["offset"], r[6]["more_fragments"], r[6]["id"], r[6]["protocol"]) == (185, True, 99, 6)
    assert r[6]["srcPort"] is None and r[6]["sequence_number"] is None
    # 7: truncated before the IP header's end: Ethernet only
    assert r[7]["eth_type"] == 0x0800 and r[7]["ipversion"] is None and r[7]["caplen"] == 20
    # 8: ICMPv6
    assert (r[8]["icmp_type"], r[8]["protocol"], r[8]["srcPort"]) == (128, 58, None)
    # 9: snap-length truncated payload
    assert (r[9]["caplen"], r[9]["wire_len"], r[9]["len"]) == (64, 154, 140)
    assert r[9]["TCP_data"] == b"x" * 10 and r[9]["data_length"] == 100


def _udp4():
    return ipv4(17, udp(4000, 53, b"q"), src="172.16.0.1", dst="172.16.0.2")


@pytest.mark.parametrize("linktype, frame, eth_src", [
    (1, eth(_udp4()), 0x020000000001),                                          # Ethernet
    (113, struct.pack("!HHH8sH", 0, 1, 6, MAC_A + b"\0\0", 0x0800) + _udp4(), 0x020000000001),  # SLL
    (276, struct.pack("!HHIHBB8s", 0x0800, 0, 1, 1, 0, 6, MAC_A + b"\0\0") + _udp4(),
     0x020000000001),                                                          # SLL2
    (101, _udp4(), None),                                                      # raw IP
    (0, struct.pack("<I", 2) + _udp4(), None),                                 # NULL (host order)
    (108, struct.pack("!I", 2) + _udp4(), None),                               # LOOP
])
def test_link_types(tmp_path, linktype, frame, eth_src):
    t = read(write_pcap(tmp_path / "l.pcap", [(5, 6, frame)], linktype=linktype))
    (r,) = t.to_pylist()
    assert r["eth_type"] == 0x0800 and r["ipversion"] == 4
    assert (r["srcIP"], r["destIP"]) == (ip4("172.16.0.1"), ip4("172.16.0.2"))
    assert (r["srcPort"], r["destPort"], r["UDP_data"]) == (4000, 53, b"q")
    assert r["eth_src"] == eth_src
    assert (r["eth_dst"] is None) == (linktype != 1)


def test_unknown_link_type_warns(tmp_path):
    frame = eth(_udp4())
    path = write_pcap(tmp_path / "u.pcap", [(1, 2, frame, 99)], linktype=147)  # USER0
    with pytest.warns(RuntimeWarning, match="link type 147 is not decoded"):
        t = gsqlc.read_pcap(path)
    (r,) = t.to_pylist()
    assert (r["time"], r["timestamp"], r["caplen"], r["wire_len"]) == (1, 1_000_002, len(frame), 99)
    assert all(r[c] is None for c in COLUMNS[4:])


def test_nanosecond_capture(tmp_path):
    path = write_pcap(tmp_path / "n.pcap", [(3, 123_456_789, eth(_udp4()))], magic=0xA1B23C4D)
    (r,) = read(path).select(["time", "timestamp", "srcPort"]).to_pylist()
    assert r == {"time": 3, "timestamp": 3_123_456, "srcPort": 4000}


def test_big_endian_capture(tmp_path):
    frame = eth(_udp4())
    be = struct.pack(">IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1) + \
        struct.pack(">IIII", 9, 10, len(frame), len(frame)) + frame
    (tmp_path / "be.pcap").write_bytes(be)
    le = write_pcap(tmp_path / "le.pcap", [(9, 10, frame)])
    assert read(tmp_path / "be.pcap").equals(read(le))


# ---- empty, truncated and broken files --------------------------------------

def test_empty_capture(tmp_path):
    t = read(write_pcap(tmp_path / "e.pcap", []))
    assert t.num_rows == 0 and t.column_names == COLUMNS
    assert t.schema.equals(read(TRACE).schema)


def test_truncated_capture_warns(tmp_path):
    data = TRACE.read_bytes()
    full = read(TRACE)
    cut_data = tmp_path / "cut_data.pcap"
    cut_data.write_bytes(data[:-10])                  # inside the last packet's bytes
    with pytest.warns(RuntimeWarning, match=r"cut_data.pcap: truncated capture after 1454 packets"):
        t = gsqlc.read_pcap(cut_data, ip_format="int")
    assert t.equals(full.slice(0, 1454))
    # inside a record header: find the last record's start
    off, last = 24, 24
    while off < len(data):
        last = off
        off += 16 + struct.unpack_from("<I", data, off + 8)[0]
    cut_hdr = tmp_path / "cut_hdr.pcap"
    cut_hdr.write_bytes(data[:last + 7])
    with pytest.warns(RuntimeWarning, match="truncated"):
        t = gsqlc.read_pcap(cut_hdr, ip_format="int")
    assert t.equals(full.slice(0, 1454))


def test_missing_file(tmp_path):
    missing = tmp_path / "nope.pcap"
    with pytest.raises(FileNotFoundError, match="nope.pcap") as e:
        gsqlc.read_pcap(missing)
    assert e.value.filename == str(missing)


def test_not_a_capture(tmp_path):
    txt = tmp_path / "notes.txt"
    txt.write_text("this is not a capture, just some text\n" * 10)
    with pytest.raises(ValueError, match=r"notes.txt: not a pcap capture: unknown file format"):
        gsqlc.read_pcap(txt)
    empty = tmp_path / "empty.pcap"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match="empty.pcap: not a pcap capture"):
        gsqlc.read_pcap(empty)
    with pytest.raises(IsADirectoryError):
        gsqlc.read_pcap(tmp_path)


# ---- the native interface ---------------------------------------------------

def test_capsules_released_without_import():
    """Capsules pyarrow never imports release their structures themselves;
    imported batches outlive the capsules and the result."""
    n = packets.native()
    cols = list(packets.packet_columns())
    for _ in range(3):
        res = n.read_pcap(bytes(TRACE), cols, 500)
        assert len(res["batches"]) == 3
        del res
    res = n.read_pcap(bytes(TRACE), cols, 500)
    s, a = res["batches"][1]
    b = pa.RecordBatch._import_from_c_capsule(s, a)
    del res, s, a
    col = b.column("TCP_data")
    del b
    assert len(col) == 500 and col.validate(full=True) is None


def _thread_cpu_seconds(tid: int) -> float:
    """A thread's CPU time (user + system) as the kernel accounts it."""
    fields = Path(f"/proc/self/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux's /proc")
def test_gil_released_while_decoding(tmp_path):
    """The main thread runs Python while a worker thread decodes: it reads the
    worker's CPU time and sees it strictly inside the decode -- past its start
    and short of its end by more than the kernel's accounting grain.  A decode
    holding the GIL would let no Python run in between, however the machine
    is loaded; no timing threshold is involved."""
    pcap = tmp_path / "big.pcap"
    pktgen.generate(str(pcap), 1_000_000, 1000, seed=2)  # ~0.2 s of CPU to decode
    n = packets.native()
    cols = list(packets.packet_columns())
    grain = 2.0 / os.sysconf("SC_CLK_TCK")
    for _ in range(5):      # a decode the scheduler kept the main thread out of: again
        box: dict = {}
        ready = threading.Event()

        def decode():
            box["tid"] = threading.get_native_id()
            ready.set()
            box["t0"] = time.thread_time()
            n.read_pcap(bytes(pcap), cols)
            box["t1"] = time.thread_time()

        th = threading.Thread(target=decode)
        th.start()
        ready.wait()
        seen = []
        while th.is_alive():
            try:
                seen.append(_thread_cpu_seconds(box["tid"]))
            except (FileNotFoundError, ProcessLookupError):
                break
        th.join()
        t0, t1 = box["t0"], box["t1"]
        assert t1 - t0 > 4 * grain, (t0, t1)   # long enough to be seen inside
        if any(t0 + grain < c < t1 - grain for c in seen):
            return
    pytest.fail("no Python ran while read_pcap decoded: the GIL is held")


# ---- a read_pcap table as the Arrow input of a query over PACKETS ------------

def _arrow_input_available() -> bool:
    from gsqlc.runtime import runner
    return "arrow_sources" in inspect.signature(runner.run_library).parameters


@pytest.mark.skipif(not _arrow_input_available(), reason="the runtime's Arrow input is not there yet")
def test_query_over_packet_table(tmp_path):
    q = tmp_path / "q.gsql"
    q.write_text("DEFINE { query_name 'tcp_rows'; }\n"
                 "SELECT timestamp, srcIP, destIP, srcPort, destPort, len FROM PACKETS\n"
                 "WHERE protocol = 6\n")
    t = read(TRACE)
    qs = gsqlc.compile([q], schema=gsqlc.PACKET_TABLE_SCHEMA)
    (iface,) = qs.interfaces()
    out = qs.table({iface: t}, output="tcp_rows", ip_format="int")
    cols = ["timestamp", "srcIP", "destIP", "srcPort", "destPort", "len"]
    want = [r for r in t.filter(pc.equal(t["protocol"], 6)).select(cols).to_pylist()
            if None not in r.values()]  # srcIP is NULL for IPv6: those rows are skipped
    assert out.select(cols).to_pylist() == want and len(want) == 957
