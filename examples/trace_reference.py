#!/usr/bin/env python3
"""Reference results of the example packet queries, computed independently
of gsqlc with a tiny struct-based pcap reader (Ethernet/IPv4/TCP/UDP).

    python examples/trace_reference.py [QUERY] [PCAP]
        QUERY: flows | src_counts | hostnames | host_counts | all (default)
        PCAP:  default examples/trace.pcap

Rows are printed '|'-separated, sorted, IPs as dotted quads, without header,
under a '# query' line each.  Semantics assumed (see the .gsql files):
FROM IPV4 / TCP read IPv4 packets only (TCP: first fragments carrying a TCP
header); a packet without ports is skipped by a query that reads a port;
str_extract_regex yields the first match, '' when there is none.
"""
import collections
import re
import struct
import sys
from pathlib import Path

HOST_RE = re.compile(rb"[Hh][Oo][Ss][Tt]: *[0-9A-Za-z.:-]*")


def packets(path):
    data = Path(path).read_bytes()
    magic, _, _, _, _, _, link = struct.unpack_from("<IHHiIII", data, 0)
    assert magic == 0xA1B2C3D4 and link == 1, "microsecond little-endian Ethernet pcap"
    off = 24
    while off < len(data):
        sec, usec, caplen, _ = struct.unpack_from("<IIII", data, off)
        f = data[off + 16: off + 16 + caplen]
        off += 16 + caplen
        e = 14
        et = struct.unpack_from("!H", f, 12)[0]
        while et in (0x8100, 0x88A8):
            et = struct.unpack_from("!H", f, e + 2)[0]
            e += 4
        if et != 0x0800:
            continue
        ip = f[e:]
        ihl = (ip[0] & 15) * 4
        tot, frag = struct.unpack_from("!H2xH", ip, 2)
        p = {"time": sec, "protocol": ip[9], "len": tot, "offset": frag & 0x1FFF,
             "srcIP": ip[12:16], "destIP": ip[16:20], "srcPort": None,
             "destPort": None, "TCP_data": None}
        l4 = ip[ihl:]
        if p["offset"] == 0 and p["protocol"] in (6, 17) and len(l4) >= 4:
            p["srcPort"], p["destPort"] = struct.unpack_from("!HH", l4, 0)
            if p["protocol"] == 6:
                p["TCP_data"] = l4[(l4[12] >> 4) * 4:]
        yield p


def dotted(b):
    return ".".join(str(x) for x in b)


def flows(pk):
    agg = collections.defaultdict(lambda: [0, 0])
    for p in pk:
        if p["srcPort"] is None:
            continue
        k = (p["time"] // 10, p["protocol"], dotted(p["srcIP"]), dotted(p["destIP"]),
             p["srcPort"], p["destPort"])
        agg[k][0] += 1
        agg[k][1] += p["len"]
    return [k + tuple(v) for k, v in agg.items()]


def src_counts(pk):
    c = collections.Counter((p["time"] // 60, dotted(p["srcIP"])) for p in pk)
    return [k + (v,) for k, v in c.items()]


def _gets(pk):
    for p in pk:
        d = p["TCP_data"]
        if d is not None and p["offset"] == 0 and d.startswith(b"GET"):
            m = HOST_RE.search(d)
            yield p, (m.group(0).decode("latin-1") if m else "")


def hostnames(pk):
    return [(p["time"] // 60 * 60, dotted(p["destIP"]), p["destPort"], h)
            for p, h in _gets(pk)]


def host_counts(pk):
    c = collections.Counter((p["time"] // 60 * 60, h) for p, h in _gets(pk))
    return [k + (v,) for k, v in c.items()]


QUERIES = {"flows": flows, "src_counts": src_counts, "hostnames": hostnames,
           "host_counts": host_counts}


def main(argv):
    q = argv[1] if len(argv) > 1 else "all"
    path = argv[2] if len(argv) > 2 else Path(__file__).resolve().parent / "trace.pcap"
    pk = list(packets(path))
    for name in (QUERIES if q == "all" else [q]):
        print(f"# {name}")
        for row in sorted(QUERIES[name](pk)):
            print("|".join(str(x) for x in row))


if __name__ == "__main__":
    main(sys.argv)
