#!/usr/bin/env python3
"""Fast synthetic IPv4 packet streams: a pcap file plus the ground truth.

    python bench/pktgen.py --packets N --groups G --out FILE.pcap [--parquet FILE.parquet]
    python bench/pktgen.py ... --link-delay D    # two links in one capture, one D s late

`generate()` writes a classic pcap (magic a1b2c3d4, microsecond timestamps,
LINKTYPE_ETHERNET) and returns a pyarrow Table whose columns are named as in
compiler/gsqlc/data/packet_schema.txt, holding for every packet the value each
field must take:

    time (uint32 s), timestamp (uint64 us), caplen, wire_len, srcIP, destIP
    (uint32 host order), srcPort, destPort, protocol, len (IPv4 total length),
    hdr_length, ttl, tos, id, offset (fragment offset, 8-byte units),
    more_fragments, dont_fragment, ipversion (always 4), flags (TCP flags),
    udp_length, TCP_data (string)

A field a packet does not carry is null (ports of ICMP packets and of
non-first fragments, flags of non-TCP packets, TCP_data of non-TCP packets;
"" for a TCP segment without payload).

Frames are minimal: 14 Ethernet + 20 IPv4 + 20 TCP / 8 UDP / 8 ICMP (+ the
payload when --payload is on).  The IPv4 total length `len` is drawn from a
realistic mix and is usually larger than what is captured: the records are
snap-length truncated (caplen < wire_len), as a capture with a small -s would
be.  Non-first fragments (offset > 0) carry 8 bytes after the IPv4 header and
no transport header.  IPv4 header checksums are correct.

Everything is vectorised with numpy over chunks of CHUNK packets, so the
output depends only on the parameters (not on the machine): 20 M packets take
a few seconds.  Time advances monotonically at `pps` packets per second from
`start` (seconds); packet i has timestamp floor((i + u_i) * 1e6 / pps) with
u_i uniform in [0, 0.9), which never decreases.

`generate_delayed()` writes two such links into one capture in order of
arrival, the second `delay` seconds behind the first (its sources in
11.0.0.0/8): the disorder a union of a late link sees (Li et al. 2008, Figure 1).
"""
from __future__ import annotations

import argparse
import os
import sys
import time as _time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

CHUNK = 1 << 20
PCAP_MAGIC = 0xA1B2C3D4
LINKTYPE_ETHERNET = 1

# ---- byte layout of one record (pcap record header + frame) ---------------
L4 = 50          # start of the transport header in the record
PAY = 70         # start of the TCP payload in the record
PMAX = 64        # longest payload template (bytes)

_FIELDS = [
    ("ts_sec", "<u4", 0), ("ts_usec", "<u4", 4), ("caplen", "<u4", 8),
    ("wirelen", "<u4", 12),
    ("eth_dst_hi", ">u2", 16), ("eth_dst_lo", ">u4", 18),
    ("eth_src_hi", ">u2", 22), ("eth_src_lo", ">u4", 24),
    ("eth_type", ">u2", 28),
    ("ver_ihl", "u1", 30), ("tos", "u1", 31), ("tot_len", ">u2", 32),
    ("ip_id", ">u2", 34), ("frag", ">u2", 36), ("ttl", "u1", 38),
    ("proto", "u1", 39), ("ip_sum", ">u2", 40), ("src", ">u4", 42),
    ("dst", ">u4", 46),
    # transport header, generic 16/32-bit words (TCP / UDP / ICMP share them)
    ("w0", ">u2", 50), ("w1", ">u2", 52), ("w2", ">u4", 54), ("w3", ">u4", 58),
    ("doff", "u1", 62), ("tflags", "u1", 63), ("win", ">u2", 64),
    ("tsum", ">u2", 66), ("urg", ">u2", 68),
]

# HTTP-ish payloads for TCP segments (when payload is on)
_HOSTS = [f"h{i}.example" for i in range(8)] + [
    "www.example.com", "api.test.local", "cdn.example.net", "mail.example.org"]


def _payload_templates():
    t = []
    for i, h in enumerate(_HOSTS):
        t.append(f"GET /x HTTP/1.1\r\nHost: {h}\r\n")
        t.append(f"GET /p/{i} HTTP/1.1\r\nhost: {h}\r\n")
    t += [
        "POST /api HTTP/1.1\r\nHost: api.test.local\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 12\r\n",
        "HTTP/1.1 404 Not Found\r\n",
        "HEAD / HTTP/1.1\r\nHost: www.example.com\r\n",
        "GET / HTTP/1.0\r\n\r\n",
        "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",   # TLS-ish bytes
        "SSH-2.0-OpenSSH_9.2\r\n",
        "GETX not http\r\n",
    ]
    enc = [s.encode("latin-1") for s in t]
    assert max(map(len, enc)) <= PMAX
    arr = np.zeros((len(enc), PMAX), np.uint8)
    for i, b in enumerate(enc):
        arr[i, :len(b)] = np.frombuffer(b, np.uint8)
    return t, arr, np.array([len(b) for b in enc], np.uint32)


PAYLOAD_STRS, PAYLOAD_BYTES, PAYLOAD_LENS = _payload_templates()


def _dtype(width):
    return np.dtype({"names": [f[0] for f in _FIELDS],
                     "formats": [f[1] for f in _FIELDS],
                     "offsets": [f[2] for f in _FIELDS],
                     "itemsize": width})


def group_addresses(n_groups: int, src_net: int = 0x0A000000):
    """srcIP, destIP (uint32) of each of the n_groups distinct pairs; the
    sources lie in the /8 network src_net (10.0.0.0/8 by default)."""
    g = np.arange(n_groups, dtype=np.uint64)
    n_src = int(np.ceil(np.sqrt(n_groups)))
    a = g % n_src
    b = g // n_src
    # odd multipliers are bijections mod 2^24: distinct a -> distinct address
    src = (src_net + ((a * 2654435761) & 0xFFFFFF)).astype(np.uint32)
    dst = (0xAC000000 + ((b * 40503 + 7) & 0xFFFFFF)).astype(np.uint32)
    return src, dst


def _ip_checksum(tos, tot_len, ip_id, frag, ttl, proto, src, dst):
    s = (np.uint32(0x4500) | tos.astype(np.uint32))
    s = s + tot_len + ip_id + frag + ((ttl.astype(np.uint32) << 8) | proto)
    s = s + (src >> 16) + (src & 0xFFFF) + (dst >> 16) + (dst & 0xFFFF)
    s = (s & 0xFFFF) + (s >> 16)
    s = (s & 0xFFFF) + (s >> 16)
    return (~s & 0xFFFF).astype(np.uint16)


def _chunk(rng, i0, c, *, n_groups, pps, start, payload, payload_frac,
           mix, frag_frac, gsrc, gdst, gsport, gdport, zipf_cdf=None, zipf_order=None):
    """Field values of packets i0 .. i0+c-1 (numpy arrays)."""
    idx = np.arange(i0, i0 + c, dtype=np.float64)
    ts = (np.floor((idx + rng.random(c) * 0.9) * (1e6 / pps))).astype(np.uint64)
    ts += np.uint64(int(start) * 1_000_000)
    if zipf_cdf is None:
        g = rng.integers(0, n_groups, c)
    else:   # a pair of rank r with probability proportional to 1 / r^s
        g = zipf_order[np.searchsorted(zipf_cdf, rng.random(c))]
    src = gsrc[g]
    dst = gdst[g]
    u = rng.random(c)
    proto = np.where(u < mix[0], 6, np.where(u < mix[0] + mix[1], 17, 1)).astype(np.uint8)
    nonfirst = rng.random(c) < frag_frac            # offset > 0: no L4 header
    mf = nonfirst | (rng.random(c) < frag_frac)      # first fragments too
    offset = np.where(nonfirst, rng.integers(1, 185, c), 0).astype(np.uint16)
    tcp = (proto == 6) & ~nonfirst
    udp = (proto == 17) & ~nonfirst
    icmp = (proto == 1) & ~nonfirst

    # IPv4 total length: acks, full-size, uniform; small UDP/ICMP
    v = rng.random(c)
    tcp_len = np.where(v < 0.4, 40, np.where(v < 0.5, 52, np.where(
        v < 0.75, 1500, rng.integers(41, 1500, c))))
    udp_len = np.where(v < 0.7, rng.integers(40, 300, c), rng.integers(28, 1500, c))
    icmp_len = rng.integers(28, 100, c)
    iplen = np.where(proto == 6, tcp_len, np.where(proto == 17, udp_len, icmp_len))

    has_pay = np.zeros(c, bool)
    tmpl = np.zeros(c, np.int64)
    plen = np.zeros(c, np.uint32)
    if payload:
        has_pay = tcp & (rng.random(c) < payload_frac)
        tmpl = rng.integers(0, len(PAYLOAD_STRS), c)
        plen = np.where(has_pay, PAYLOAD_LENS[tmpl], 0).astype(np.uint32)
        iplen = np.maximum(iplen, np.where(has_pay, 40 + plen, 0))
    iplen = iplen.astype(np.uint32)

    caplen = np.where(tcp, 54 + plen, 42).astype(np.uint32)   # 14+20+20(+p) | 14+20+8
    ttl = rng.integers(32, 129, c).astype(np.uint8)
    ip_id = rng.integers(0, 65536, c).astype(np.uint16)
    tos = np.where(rng.random(c) < 0.05, 0x10, 0).astype(np.uint8)
    df = tcp & ~mf
    fragw = (offset | np.where(mf, 0x2000, 0) | np.where(df, 0x4000, 0)).astype(np.uint16)

    f = rng.random(c)
    tflags = np.where(f < 0.05, 0x02, np.where(f < 0.08, 0x12, np.where(
        f < 0.11, 0x11, np.where(f < 0.12, 0x04, np.where(f < 0.40, 0x18, 0x10)))))
    tflags = np.where(has_pay, 0x18, tflags).astype(np.uint8)

    sport = np.where(icmp | nonfirst, 0, gsport[g]).astype(np.uint16)
    dport = np.where(icmp | nonfirst, 0, gdport[g]).astype(np.uint16)
    return dict(ts=ts, g=g, src=src, dst=dst, proto=proto, nonfirst=nonfirst,
                mf=mf, df=df, offset=offset, tcp=tcp, udp=udp, icmp=icmp,
                iplen=iplen, has_pay=has_pay, tmpl=tmpl, plen=plen,
                caplen=caplen, ttl=ttl, ip_id=ip_id, tos=tos, fragw=fragw,
                tflags=tflags, sport=sport, dport=dport,
                seq=rng.integers(0, 1 << 32, c, dtype=np.uint64).astype(np.uint32),
                ack=rng.integers(0, 1 << 32, c, dtype=np.uint64).astype(np.uint32),
                win=rng.integers(1024, 65536, c).astype(np.uint16),
                icmp_type=np.where(rng.random(c) < 0.5, 8, 0).astype(np.uint32))


def _records(p, payload):
    """Byte image of the pcap records of one chunk."""
    c = len(p["ts"])
    width = PAY + (PMAX if payload else 0)
    rec = np.zeros(c, _dtype(width))
    rec["ts_sec"] = (p["ts"] // 1_000_000).astype(np.uint32)
    rec["ts_usec"] = (p["ts"] % 1_000_000).astype(np.uint32)
    rec["caplen"] = p["caplen"]
    rec["wirelen"] = p["iplen"] + 14
    rec["eth_dst_hi"] = 0x0200
    rec["eth_dst_lo"] = p["dst"]
    rec["eth_src_hi"] = 0x0200
    rec["eth_src_lo"] = p["src"]
    rec["eth_type"] = 0x0800
    rec["ver_ihl"] = 0x45
    rec["tos"] = p["tos"]
    rec["tot_len"] = p["iplen"]
    rec["ip_id"] = p["ip_id"]
    rec["frag"] = p["fragw"]
    rec["ttl"] = p["ttl"]
    rec["proto"] = p["proto"]
    rec["src"] = p["src"]
    rec["dst"] = p["dst"]
    rec["ip_sum"] = _ip_checksum(p["tos"], p["iplen"].astype(np.uint32),
                                 p["ip_id"].astype(np.uint32), p["fragw"].astype(np.uint32),
                                 p["ttl"], p["proto"].astype(np.uint32),
                                 p["src"].astype(np.uint32), p["dst"].astype(np.uint32))
    tcp, udp, icmp = p["tcp"], p["udp"], p["icmp"]
    # w0/w1: ports (TCP, UDP) | type<<8|code, checksum (ICMP, checksum left 0)
    rec["w0"] = np.where(icmp, p["icmp_type"] << 8, p["sport"])
    rec["w1"] = p["dport"]
    # w2: TCP seq | UDP length<<16 (checksum 0) | ICMP id<<16|seq
    udp_length = (p["iplen"].astype(np.uint32) - 20)
    rec["w2"] = np.where(tcp, p["seq"], np.where(udp, udp_length << 16, np.where(
        icmp, (p["ip_id"].astype(np.uint32) << 16) | 1, 0)))
    rec["w3"] = np.where(tcp, p["ack"], 0)
    rec["doff"] = np.where(tcp, 0x50, 0)
    rec["tflags"] = np.where(tcp, p["tflags"], 0)
    rec["win"] = np.where(tcp, p["win"], 0)
    raw = rec.view(np.uint8).reshape(c, width)
    if payload and p["has_pay"].any():
        rows = np.nonzero(p["has_pay"])[0]
        raw[rows, PAY:PAY + PMAX] = PAYLOAD_BYTES[p["tmpl"][rows]]
    keep = np.arange(width, dtype=np.uint32)[None, :] < (p["caplen"] + 16)[:, None]
    return raw[keep]


def _truth(p):
    tcp, udp, icmp, nonfirst = p["tcp"], p["udp"], p["icmp"], p["nonfirst"]
    ports_ok = ~(icmp | nonfirst)
    c = len(tcp)
    u32 = lambda a: pa.array(np.asarray(a, np.uint32), pa.uint32())
    # TCP_data: "" for TCP without payload, template for TCP with, null else
    if p["has_pay"].any():
        dict_strs = pa.array([""] + PAYLOAD_STRS, pa.string())
        codes = np.where(p["has_pay"], p["tmpl"] + 1, 0).astype(np.int32)
        data = pa.DictionaryArray.from_arrays(
            pa.array(codes, mask=~tcp), dict_strs).cast(pa.string())
    else:
        offsets = pa.py_buffer(np.zeros(c + 1, np.int32).tobytes())
        validity = pa.py_buffer(np.packbits(tcp, bitorder="little").tobytes())
        data = pa.StringArray.from_buffers(c, offsets, pa.py_buffer(b""), validity,
                                           null_count=int(c - tcp.sum()))
    return {
        "time": u32(p["ts"] // 1_000_000),
        "timestamp": pa.array(p["ts"], pa.uint64()),
        "caplen": u32(p["caplen"]),
        "wire_len": u32(p["iplen"].astype(np.uint32) + 14),
        "srcIP": u32(p["src"]),
        "destIP": u32(p["dst"]),
        "srcPort": pa.array(p["sport"].astype(np.uint32), pa.uint32(), mask=~ports_ok),
        "destPort": pa.array(p["dport"].astype(np.uint32), pa.uint32(), mask=~ports_ok),
        "protocol": u32(p["proto"]),
        "len": u32(p["iplen"]),
        "hdr_length": u32(np.full(c, 20)),
        "ttl": u32(p["ttl"]),
        "tos": u32(p["tos"]),
        "id": u32(p["ip_id"]),
        "offset": u32(p["offset"]),
        "more_fragments": pa.array(p["mf"], pa.bool_()),
        "dont_fragment": pa.array(p["df"], pa.bool_()),
        "ipversion": u32(np.full(c, 4)),
        "flags": pa.array(p["tflags"].astype(np.uint32), pa.uint32(), mask=~tcp),
        "udp_length": pa.array(p["iplen"].astype(np.uint32) - 20, pa.uint32(), mask=~udp),
        "TCP_data": data,
    }


def _link_chunks(n: int, n_groups: int, *, pps: float, seed: int, payload: bool,
                 payload_frac: float, tcp: float, udp: float, icmp: float, frag: float,
                 start: int, src_net: int = 0x0A000000, zipf: float = 0.0):
    """The field arrays of one link's packets, CHUNK packets at a time."""
    tot = tcp + udp + icmp
    mix = (tcp / tot, udp / tot, icmp / tot)
    gsrc, gdst = group_addresses(n_groups, src_net)
    grng = np.random.default_rng([seed, 0xFFFFFFFF])
    gsport = grng.integers(1024, 65536, n_groups).astype(np.uint16)
    gdport = grng.choice(np.array([80, 443, 8080, 53, 22, 25, 123, 5060], np.uint16),
                         n_groups, p=[.35, .35, .05, .1, .05, .03, .04, .03])
    cdf = order = None
    if zipf > 0:
        cdf = np.cumsum(np.arange(1, n_groups + 1, dtype=np.float64) ** -zipf)
        cdf /= cdf[-1]
        order = grng.permutation(n_groups)     # the hot pairs are not neighbours
    for k, i0 in enumerate(range(0, n, CHUNK)):
        c = min(CHUNK, n - i0)
        rng = np.random.default_rng([seed, k])
        yield _chunk(rng, i0, c, n_groups=n_groups, pps=pps, start=start,
                     payload=payload, payload_frac=payload_frac, mix=mix,
                     frag_frac=frag, gsrc=gsrc, gdst=gdst, gsport=gsport,
                     gdport=gdport, zipf_cdf=cdf, zipf_order=order)


def _write(out, chunks, payload: bool, truth: bool, parquet):
    """Write the chunks' packets to pcap `out` (or nowhere when None); the
    ground-truth Table when truth (written to `parquet` when given)."""
    f = open(out, "wb") if out else None
    want_truth = truth or parquet is not None
    parts = []
    writer = None
    try:
        if f:
            f.write(np.array([PCAP_MAGIC, 0x00040002, 0, 0, 262144, LINKTYPE_ETHERNET],
                             np.uint32).tobytes())
            # (0x00040002 = version 2.4 little-endian as two u16; thiszone, sigfigs 0)
        for p in chunks:
            if f:
                f.write(_records(p, payload).tobytes())
            if want_truth:
                batch = pa.RecordBatch.from_pydict(_truth(p))
                if parquet:
                    if writer is None:
                        writer = pq.ParquetWriter(parquet, batch.schema)
                    writer.write_batch(batch)
                if truth:
                    parts.append(batch)
    finally:
        if f:
            f.close()
        if writer is not None:
            writer.close()
    if not truth:
        return None
    if not parts:
        return _schema().empty_table()
    return pa.Table.from_batches(parts)


def generate(out, n: int, n_groups: int = 65536, *, pps: float = 100_000,
             seed: int = 1, payload: bool = False, payload_frac: float = 0.3,
             tcp: float = 0.7, udp: float = 0.25, icmp: float = 0.05,
             frag: float = 0.005, start: int = 1_700_000_000,
             truth: bool = True, parquet: str | None = None, zipf: float = 0.0):
    """Write n packets to pcap file `out` (path or None for no pcap).

    n_groups distinct (srcIP, destIP) pairs, each packet's pair uniform among
    them (zipf = s > 0: the pair of rank r with probability proportional to
    1 / r^s, the ranks scattered over the pairs); protocol mix tcp/udp/icmp
    (normalised); `frag` is the fraction of non-first fragments (and,
    separately, of first fragments with MF set).
    Returns the ground-truth pyarrow Table (None if truth=False and no
    parquet).  When `parquet` is given the table is also written there.
    """
    if n_groups < 1 or n < 0:
        raise ValueError("need n >= 0 and n_groups >= 1")
    chunks = _link_chunks(n, n_groups, pps=pps, seed=seed, payload=payload,
                          payload_frac=payload_frac, tcp=tcp, udp=udp, icmp=icmp,
                          frag=frag, start=start, zipf=zipf)
    return _write(out, chunks, payload, truth, parquet)


def generate_union(out, n: int, n_groups: int = 65536, *, seeds, pps: float = 100_000,
                   start: int = 1_700_000_000, frag: float = 0.005):
    """One capture holding the packets of generate(out_i, n, n_groups,
    pps=pps, seed=s, start=start) for every s in seeds, merged in timestamp
    order (ties to the earlier seed): the same data as those captures bound
    as the members of one interface set."""
    kw = dict(pps=pps, payload=False, payload_frac=0.3, tcp=0.7, udp=0.25, icmp=0.05,
              frag=frag, start=start)
    links = [(_link_chunks(n, n_groups, seed=s, **kw), 0) for s in seeds]
    return _write(out, _arrival_merge(links), False, False, None)


LINK_B_NET = 0x0B000000    # sources of the delayed link: 11.0.0.0/8


def _take(p: dict, idx) -> dict:
    return {k: v[idx] for k, v in p.items()}


def _cat(ps: list) -> dict:
    return {k: np.concatenate([p[k] for p in ps]) for k in ps[0]}


def _arrival_merge(links):
    """Merge chunk streams by arrival time.  links: (chunk iterator, delay in
    microseconds) per link; a packet of timestamp ts arrives at ts + delay.
    Each link's chunks are in timestamp order; ties go to the earlier link."""
    pend: list = [None] * len(links)
    done = [False] * len(links)
    while True:
        for i, (it, _) in enumerate(links):
            while not done[i] and (pend[i] is None or len(pend[i]["ts"]) == 0):
                pend[i] = next(it, None)
                done[i] = pend[i] is None
        live = [i for i in range(len(links)) if pend[i] is not None and len(pend[i]["ts"])]
        if not live:
            return
        # every packet arriving no later than the earliest "last pending
        # arrival" of a link that may still send more can be written now
        cut = min((int(pend[i]["ts"][-1]) + links[i][1] for i in live if not done[i]),
                  default=None)
        parts, arr = [], []
        for i in live:
            a = pend[i]["ts"].astype(np.int64) + links[i][1]
            k = len(a) if cut is None else int(np.searchsorted(a, cut, side="right"))
            if k:
                parts.append(_take(pend[i], slice(0, k)))
                arr.append(a[:k])
                pend[i] = _take(pend[i], slice(k, None))
        if parts:
            order = np.argsort(np.concatenate(arr), kind="stable")
            yield _take(_cat(parts), order)


def generate_delayed(out, n: int, n_groups: int = 32768, *, delay: float,
                     pps: float = 100_000, seed: int = 1, payload: bool = False,
                     payload_frac: float = 0.3, tcp: float = 0.7, udp: float = 0.25,
                     icmp: float = 0.05, frag: float = 0.005, start: int = 1_700_000_000,
                     truth: bool = False, parquet: str | None = None):
    """One capture of two links whose packets ARRIVE `delay` seconds apart.

    Link A is exactly generate(n, n_groups, seed=seed, ...): sources in
    10.0.0.0/8.  Link B is the same with seed + 1 and its sources in
    11.0.0.0/8 (LINK_B_NET), so a predicate on srcIP tells the links apart
    (2 * n_groups distinct pairs in all).  Each packet keeps its own link's
    timestamp; the records are written in order of arrival, a packet of B
    with timestamp t where A's packets of time t + delay are: each link is in
    timestamp order, the capture as a whole is not (B runs `delay` s behind).
    """
    if n_groups < 1 or n < 0 or delay < 0:
        raise ValueError("need n >= 0, n_groups >= 1 and delay >= 0")
    kw = dict(pps=pps, payload=payload, payload_frac=payload_frac, tcp=tcp, udp=udp,
              icmp=icmp, frag=frag, start=start)
    a = _link_chunks(n, n_groups, seed=seed, **kw)
    b = _link_chunks(n, n_groups, seed=seed + 1, src_net=LINK_B_NET, **kw)
    chunks = _arrival_merge([(a, 0), (b, int(round(delay * 1_000_000)))])
    return _write(out, chunks, payload, truth, parquet)


def generate_arrivals(out, n: int, n_groups: int = 4096, *, delays, pps: float = 1000,
                      seed: int = 1, frag: float = 0.0, start: int = 1_700_000_000,
                      truth: bool = False, parquet: str | None = None):
    """One capture of len(delays) links written in order of ARRIVAL.

    Link i is generate(n, n_groups, seed=seed + i) with its sources in
    (10 + i).0.0.0/8 (so link 0 is 10/8, link 1 is 11/8 = LINK_B_NET, ...).
    delays[i] is link i's delay in seconds: a number, or a function of the
    packets' timestamps (numpy float seconds since `start`) returning the
    delay of each -- e.g. an occasional spike.  A packet stamped t arrives
    at t + delay; ties keep link order.  For the heartbeat generator's tests
    and experiments (Srivastava & Widom 2004): a link's records trail the capture's
    largest timestamp by its delay (and by the jumps of a varying delay).
    Holds every packet in memory: meant for up to a few million."""
    kw = dict(pps=pps, payload=False, payload_frac=0.0, tcp=0.7, udp=0.25, icmp=0.05,
              frag=frag, start=start)
    links, arrive = [], []
    for i, d in enumerate(delays):
        chunks = list(_link_chunks(n, n_groups, seed=seed + i,
                                   src_net=0x0A000000 + (i << 24), **kw))
        p = _cat(chunks) if chunks else None
        if p is None:
            continue
        rel = (p["ts"].astype(np.int64) - start * 1_000_000) / 1e6
        dl = d(rel) if callable(d) else np.full(len(rel), float(d))
        arrive.append(p["ts"].astype(np.int64) + np.round(np.asarray(dl) * 1e6).astype(np.int64))
        links.append(p)
    if not links:
        return _write(out, [], False, truth, parquet)
    order = np.argsort(np.concatenate(arrive), kind="stable")
    return _write(out, [_take(_cat(links), order)], False, truth, parquet)


def _schema():
    s = pa.schema([
        ("time", pa.uint32()), ("timestamp", pa.uint64()), ("caplen", pa.uint32()),
        ("wire_len", pa.uint32()), ("srcIP", pa.uint32()), ("destIP", pa.uint32()),
        ("srcPort", pa.uint32()), ("destPort", pa.uint32()), ("protocol", pa.uint32()),
        ("len", pa.uint32()), ("hdr_length", pa.uint32()), ("ttl", pa.uint32()),
        ("tos", pa.uint32()), ("id", pa.uint32()), ("offset", pa.uint32()),
        ("more_fragments", pa.bool_()), ("dont_fragment", pa.bool_()),
        ("ipversion", pa.uint32()), ("flags", pa.uint32()), ("udp_length", pa.uint32()),
        ("TCP_data", pa.string()),
    ])
    return s


def read_truth(path, columns=None) -> pa.Table:
    """The ground-truth table written with --parquet (optionally some columns)."""
    return pq.read_table(path, columns=columns)


def ip_str(a) -> str:
    a = int(a)
    return f"{a >> 24}.{(a >> 16) & 255}.{(a >> 8) & 255}.{a & 255}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--packets", "-n", type=int, required=True)
    ap.add_argument("--groups", "-g", type=int, default=65536,
                    help="distinct (srcIP, destIP) pairs")
    ap.add_argument("--out", "-o", required=True, help="pcap file to write")
    ap.add_argument("--parquet", help="also write the ground truth here")
    ap.add_argument("--pps", type=float, default=100_000, help="packets per second")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--zipf", type=float, default=0.0, metavar="S",
                    help="pairs drawn with probability proportional to 1 / rank^S "
                         "(default 0: uniform)")
    ap.add_argument("--payload", action="store_true",
                    help="HTTP-like payloads on some TCP segments")
    ap.add_argument("--payload-frac", type=float, default=0.3)
    ap.add_argument("--tcp", type=float, default=0.7)
    ap.add_argument("--udp", type=float, default=0.25)
    ap.add_argument("--icmp", type=float, default=0.05)
    ap.add_argument("--frag", type=float, default=0.005)
    ap.add_argument("--start", type=int, default=1_700_000_000,
                    help="time of the first packet (epoch seconds)")
    ap.add_argument("--link-delay", type=float, metavar="SECONDS",
                    help="write two links in one capture: the packets above, and a second "
                         "link like them (seed + 1, sources in 11.0.0.0/8) whose packets "
                         "arrive SECONDS behind (generate_delayed)")
    a = ap.parse_args(argv)
    t0 = _time.perf_counter()
    kw = dict(pps=a.pps, seed=a.seed, payload=a.payload, payload_frac=a.payload_frac,
              tcp=a.tcp, udp=a.udp, icmp=a.icmp, frag=a.frag, start=a.start,
              truth=False, parquet=a.parquet)
    if a.link_delay is None:
        generate(a.out, a.packets, a.groups, zipf=a.zipf, **kw)
    else:
        generate_delayed(a.out, a.packets, a.groups, delay=a.link_delay, **kw)
    dt = _time.perf_counter() - t0
    links = "" if a.link_delay is None else f"2 links delayed {a.link_delay:g} s, 2 x "
    print(f"{a.out}: {links}{a.packets} packets, {a.groups} groups, "
          f"{os.path.getsize(a.out)} bytes in {dt:.2f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
