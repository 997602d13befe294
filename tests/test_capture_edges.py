"""Captures at the edges, through the interfaces users read them with
(`gsqlc run` with either pcap reader, and gsqlc.read_pcap): timestamps from
2038 and past 2106, IPv6 and IPv4 datagrams whose length field is 0
(jumbograms, BIG TCP, TSO), the raw-IPv4/IPv6 link types 228 and 229, and a
pcapng whose interfaces have different link types."""
from __future__ import annotations

import csv
import io
import ipaddress
import struct
import warnings

import pytest

import gsqlc
from test_pcap_mmap import ng_epb, ng_idb, ng_shb
from test_read_pcap import eth, ipv4, ipv6, pcap_bytes, tcp, udp

READERS = ("mmap", "libpcap")


def cli(gsqlc_cmd, tmp_path, pcap, select: str, proto: str = "PKT", reader: str = "mmap"):
    """Rows of `SELECT <select> FROM <proto>` over pcap (csv), and stderr."""
    q = tmp_path / "q.gsql"
    q.write_text(f"DEFINE {{ query_name 'q'; }}\nSELECT {select} FROM {proto}\n")
    p = gsqlc_cmd("run", q, "--source", f"eth0=pcap:{pcap}", "--output", "q", "--format", "csv",
                  "--pcap-reader", reader)
    assert p.returncode == 0, p.err
    rows = list(csv.reader(io.StringIO(p.out)))
    return [[int(v) if v.isdigit() else v for v in r] for r in rows[1:]], p.err


def api(pcap, *cols):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        t = gsqlc.read_pcap(pcap)
    t.validate(full=True)
    return [list(r) for r in zip(*(t.column(c).to_pylist() for c in cols))], \
        [str(x.message) for x in w]


# ---- timestamps -----------------------------------------------------------------

FRAME = eth(ipv4(17, udp(1, 2, b"x")))
# seconds just before and after 2^31 (2038-01-19) and the last 32-bit second
SECONDS = [0x7FFFFFFF, 0x80000000, 0x80000001, 0xFFFFFFFF]


@pytest.mark.parametrize("reader", READERS)
def test_classic_timestamps_from_2038_on(gsqlc, tmp_path, reader):
    pcap = tmp_path / "y2038.pcap"
    pcap.write_bytes(pcap_bytes([(s, 250_000, FRAME) for s in SECONDS]))
    want = [[s, s * 1_000_000 + 250_000] for s in SECONDS]
    rows, err = cli(gsqlc, tmp_path, pcap, "time, timestamp", reader=reader)
    assert rows == want
    assert "warning" not in err
    got, warned = api(pcap, "time", "timestamp")
    assert got == want and warned == []


def test_classic_timestamps_big_endian_and_nanoseconds(gsqlc, tmp_path):
    recs = [(s, 250_000_000, FRAME) for s in SECONDS]
    le = pcap_bytes(recs, magic=0xA1B23C4D)
    # the same file written big-endian: every header field swapped
    be = [struct.pack(">IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, 1)]
    for s, f, fr in recs:
        be.append(struct.pack(">IIII", s, f, len(fr), len(fr)) + fr)
    want = [[s, s * 1_000_000 + 250_000] for s in SECONDS]
    for name, data in (("le_ns.pcap", le), ("be_ns.pcap", b"".join(be))):
        pcap = tmp_path / name
        pcap.write_bytes(data)
        for reader in READERS:
            assert cli(gsqlc, tmp_path, pcap, "time, timestamp", reader=reader)[0] == want, \
                (name, reader)
        assert api(pcap, "time", "timestamp")[0] == want, name


@pytest.mark.parametrize("reader", READERS)
def test_pcapng_past_2106_holds_time_and_says_so(gsqlc, tmp_path, reader):
    last = 0xFFFFFFFF * 1_000_000 + 999_999          # the last microsecond `time` can hold
    stamps = [1_000_000, last, last + 1, (1 << 40) * 1_000_000 + 7]
    pcap = tmp_path / "y2106.pcapng"
    pcap.write_bytes(ng_shb() + ng_idb(1, 0) + b"".join(ng_epb(0, t, FRAME) for t in stamps))
    want = [[1, 1_000_000], [0xFFFFFFFF, last], [0xFFFFFFFF, last + 1],
            [0xFFFFFFFF, (1 << 40) * 1_000_000 + 7]]
    rows, err = cli(gsqlc, tmp_path, pcap, "time, timestamp", reader=reader)
    assert rows == want
    assert "2 packets stamped from 2106-02-07 06:28:16 UTC on" in err
    got, warned = api(pcap, "time", "timestamp")
    assert got == want
    assert any("2 packets stamped from 2106-02-07" in w for w in warned), warned


# ---- datagram lengths -------------------------------------------------------------

def hop_by_hop_jumbo(nh: int, length: int) -> bytes:
    """A hop-by-hop header holding a Jumbo Payload option (RFC 2675)."""
    return struct.pack("!BBBBI", nh, 0, 0xC2, 4, length)


def ipv6_zero_length(nh, payload) -> bytes:
    p = ipv6(nh, payload)
    return p[:4] + b"\0\0" + p[6:]


@pytest.mark.parametrize("reader", READERS)
def test_ipv6_payload_length_zero(gsqlc, tmp_path, reader):
    seg = tcp(5000, 80, b"d" * 100)
    # a jumbogram: its length comes from the option (payload incl. the
    # hop-by-hop header), captured whole or cut short
    jumbo = eth(ipv6_zero_length(0, hop_by_hop_jumbo(6, 8 + len(seg)) + seg), etype=0x86DD)
    # Linux BIG TCP: no option; the length is what was on the wire
    big_tcp = eth(ipv6_zero_length(6, seg), etype=0x86DD)
    recs = [(1, 0, jumbo), (2, 0, jumbo[:14 + 40 + 8 + 20 + 10], len(jumbo)),
            (3, 0, big_tcp), (4, 0, big_tcp[:80], 70_000)]
    pcap = tmp_path / "v6len0.pcap"
    pcap.write_bytes(pcap_bytes(recs))
    want = [[1, 40 + 8 + 120, 100, 5000], [2, 40 + 8 + 120, 100, 5000],
            [3, 40 + 120, 100, 5000], [4, 70_000 - 14, 70_000 - 14 - 60, 5000]]
    rows, _ = cli(gsqlc, tmp_path, pcap, "time, len, data_length, srcPort", "TCP", reader)
    assert rows == want
    got, _ = api(pcap, "time", "len", "data_length", "srcPort")
    assert got == want


def test_ipv4_total_length_zero_is_the_wire_length(gsqlc, tmp_path):
    seg = tcp(5000, 80, b"d" * 100)
    tso = eth(ipv4(6, seg, tot=0))
    pcap = tmp_path / "tso.pcap"
    pcap.write_bytes(pcap_bytes([(1, 0, tso), (2, 0, tso[:60], 9014)]))
    want = [[1, 140, 100], [2, 9000, 9000 - 40]]
    assert cli(gsqlc, tmp_path, pcap, "time, len, data_length", "TCP")[0] == want
    assert api(pcap, "time", "len", "data_length")[0] == want


# ---- link types -------------------------------------------------------------------

@pytest.mark.parametrize("reader", READERS)
def test_raw_ipv4_and_ipv6_link_types(gsqlc, tmp_path, reader):
    v4 = ipv4(17, udp(1000, 53, b"q"), src="192.0.2.1", dst="192.0.2.2")
    v6 = ipv6(17, udp(1001, 53, b"q"))
    cases = {228: (v4, v6), 229: (v6, v4)}         # the other version is not decoded
    for lt, (good, other) in cases.items():
        pcap = tmp_path / f"lt{lt}.pcap"
        pcap.write_bytes(pcap_bytes([(1, 0, good), (2, 0, other)], linktype=lt))
        rows, err = cli(gsqlc, tmp_path, pcap, "time, ipversion, srcPort, destPort", "UDP",
                        reader)
        assert rows == [[1, 4 if lt == 228 else 6, 1000 if lt == 228 else 1001, 53]], lt
        assert "not decoded" not in err
        got, warned = api(pcap, "time", "ipversion", "srcPort", "srcIP", "srcIPv6")
        assert warned == []
        if lt == 228:
            assert got[0] == [1, 4, 1000, "192.0.2.1", None]
        else:
            assert got[0][:4] == [1, 6, 1001, None]
            assert ipaddress.IPv6Address(got[0][4]) == ipaddress.IPv6Address("2001:db8::1")
            assert got[0][4] == ipaddress.IPv6Address("2001:db8::1").exploded
        assert got[1][1:] == [None, None, None, None]     # read, not decoded


def test_pcapng_interfaces_of_different_link_types(gsqlc, tmp_path):
    # the first interface's link type (147, a private one) is not decoded;
    # libpcap refuses such a file at its second interface -- gsqlc reads it
    frame, raw = eth(ipv4(17, udp(7, 53, b"q"))), ipv4(17, udp(8, 53, b"q"))
    pcap = tmp_path / "mixed.pcapng"
    pcap.write_bytes(ng_shb() + ng_idb(147, 0) + ng_idb(1, 0) + ng_idb(101, 0)
                     + ng_epb(0, 1_000_000, b"opaque")
                     + ng_epb(1, 2_000_000, frame)
                     + ng_epb(2, 3_000_000, raw))
    rows, err = cli(gsqlc, tmp_path, pcap, "time, srcPort", "UDP")
    assert rows == [[2, 7], [3, 8]]
    assert "truncated" not in err
    assert "1 packets of pcapng interfaces of a link type not decoded (147 first)" in err
    all_rows, _ = cli(gsqlc, tmp_path, pcap, "time, caplen")
    assert all_rows == [[1, 6], [2, len(frame)], [3, len(raw)]]
    got, warned = api(pcap, "time", "srcPort")
    assert got == [[1, None], [2, 7], [3, 8]]
    assert any("1 packets of pcapng interfaces of a link type not decoded" in w
               for w in warned), warned
