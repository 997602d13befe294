"""Self-checks of bench/pktgen.py and of the baselines in bench/baselines.py.

    python -m pytest bench/test_pktgen.py -q
"""
import collections
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # benchmark tooling

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import baselines  # noqa: E402
import pktgen  # noqa: E402

# ---- a tiny independent pcap reader (struct only) --------------------------

def read_pcap(path):
    data = Path(path).read_bytes()
    magic, vmaj, vmin, _, _, snap, link = struct.unpack_from("<IHHiIII", data, 0)
    assert magic == 0xA1B2C3D4 and (vmaj, vmin) == (2, 4) and link == 1
    off, out = 24, []
    while off < len(data):
        sec, usec, caplen, wirelen = struct.unpack_from("<IIII", data, off)
        frame = data[off + 16: off + 16 + caplen]
        assert len(frame) == caplen
        off += 16 + caplen
        out.append(decode(sec, usec, caplen, wirelen, frame))
    return out


def decode(sec, usec, caplen, wirelen, f):
    r = {"time": sec, "timestamp": sec * 1_000_000 + usec, "caplen": caplen,
         "wire_len": wirelen}
    (etype,) = struct.unpack_from("!H", f, 12)
    assert etype == 0x0800
    ip = f[14:]
    vihl, tos, tot, ident, frag, ttl, proto, csum, src, dst = struct.unpack_from(
        "!BBHHHBBHII", ip, 0)
    words = struct.unpack("!10H", ip[:20])
    s = sum(words)
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    assert s == 0xFFFF, "IPv4 header checksum"
    ihl = (vihl & 15) * 4
    r.update(ipversion=vihl >> 4, hdr_length=ihl, tos=tos, len=tot, id=ident,
             offset=frag & 0x1FFF, more_fragments=bool(frag & 0x2000),
             dont_fragment=bool(frag & 0x4000), ttl=ttl, protocol=proto,
             srcIP=src, destIP=dst, srcPort=None, destPort=None, flags=None,
             udp_length=None, TCP_data=None)
    l4 = ip[ihl:]
    if r["offset"] == 0 and proto == 6:
        sp, dp, _seq, _ack, doff, fl = struct.unpack_from("!HHIIBB", l4, 0)
        r.update(srcPort=sp, destPort=dp, flags=fl,
                 TCP_data=l4[(doff >> 4) * 4:].decode("latin-1"))
    elif r["offset"] == 0 and proto == 17:
        sp, dp, ulen = struct.unpack_from("!HHH", l4, 0)
        r.update(srcPort=sp, destPort=dp, udp_length=ulen)
    return r


@pytest.mark.parametrize("payload", [False, True])
def test_pcap_matches_truth(tmp_path, payload):
    pcap = tmp_path / "t.pcap"
    truth = pktgen.generate(str(pcap), 1000, 37, pps=40, seed=5, payload=payload,
                            frag=0.03, parquet=str(tmp_path / "t.parquet"))
    assert truth.num_rows == 1000
    assert truth.equals(pktgen.read_truth(tmp_path / "t.parquet"))
    got = read_pcap(pcap)
    want = truth.to_pylist()
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g == w, f"packet {i}"
    # shape of the stream
    times = [w["timestamp"] for w in want]
    assert times == sorted(times)
    assert times[-1] - times[0] > 20 * 1_000_000            # ~25 s at 40 pps
    assert len({(w["srcIP"], w["destIP"]) for w in want}) == 37
    protos = collections.Counter(w["protocol"] for w in want)
    assert set(protos) == {1, 6, 17} and protos[6] > protos[17] > protos[1]
    assert any(w["offset"] > 0 for w in want)
    assert sum(w["len"] > 100 for w in want if w["protocol"] == 6) > 100
    if payload:
        assert sum((w["TCP_data"] or "").startswith("GET") for w in want) > 20


def test_zipf_pairs(tmp_path):
    """--zipf s: the pair of rank r drawn with probability ~ 1 / r^s; the
    pcap still matches its truth."""
    pcap = tmp_path / "z.pcap"
    truth = pktgen.generate(str(pcap), 20000, 5000, seed=3, zipf=1.0)
    assert read_pcap(pcap) == truth.to_pylist()
    counts = sorted(collections.Counter(
        zip(truth.column("srcIP").to_pylist(), truth.column("destIP").to_pylist())).values(),
        reverse=True)
    # harmonic weights over 5,000 ranks: the top pair ~1/H(5000) = 11 % of the
    # packets, the second half; uniform would give ~4 each
    assert 0.08 * 20000 < counts[0] < 0.14 * 20000 and 0.3 < counts[1] / counts[0] < 0.7
    assert 2000 < len(counts) < 5000


def test_deterministic_and_chunked(tmp_path, monkeypatch):
    a = pktgen.generate(str(tmp_path / "a.pcap"), 3000, 100, seed=9)
    b = pktgen.generate(str(tmp_path / "b.pcap"), 3000, 100, seed=9)
    assert (tmp_path / "a.pcap").read_bytes() == (tmp_path / "b.pcap").read_bytes()
    assert a.equals(b)
    monkeypatch.setattr(pktgen, "CHUNK", 1024)               # several chunks
    c = pktgen.generate(str(tmp_path / "c.pcap"), 3000, 100, seed=9)
    got = read_pcap(tmp_path / "c.pcap")
    assert [g["timestamp"] for g in got] == c.column("timestamp").to_pylist()
    assert c.column("timestamp").to_pylist() == sorted(c.column("timestamp").to_pylist())


def test_group_addresses_distinct():
    for n in (1, 2, 1000, 65536, 524288):
        s, d = pktgen.group_addresses(n)
        assert len(set(zip(s.tolist(), d.tolist()))) == n


def test_group_addresses_network():
    s, _ = pktgen.group_addresses(1000, pktgen.LINK_B_NET)
    assert ((s >> 24) == 11).all()
    assert (pktgen.group_addresses(1000)[0] >> 24 == 10).all()


@pytest.mark.parametrize("delay", [0, 2.5, 7])
def test_delayed_links(tmp_path, monkeypatch, delay):
    """Link A is generate()'s stream, link B the same with seed + 1 in
    11.0.0.0/8; the capture is in arrival order (B `delay` s behind), each
    link in timestamp order, across chunk boundaries."""
    monkeypatch.setattr(pktgen, "CHUNK", 512)               # several chunks per link
    kw = dict(pps=200, start=1_700_000_005)
    pktgen.generate_delayed(str(tmp_path / "d.pcap"), 3000, 40, delay=delay, seed=4, **kw)
    a = pktgen.generate(str(tmp_path / "a.pcap"), 3000, 40, seed=4, **kw).to_pylist()
    got = read_pcap(tmp_path / "d.pcap")
    assert len(got) == 6000
    link_a = [g for g in got if g["srcIP"] >> 24 == 10]
    link_b = [g for g in got if g["srcIP"] >> 24 == 11]
    assert link_a == a
    assert len(link_b) == 3000 and len({(g["srcIP"], g["destIP"]) for g in link_b}) == 40
    assert [g["timestamp"] for g in link_b] == sorted(g["timestamp"] for g in link_b)
    arrival = [g["timestamp"] + (delay * 1e6 if g["srcIP"] >> 24 == 11 else 0) for g in got]
    assert arrival == sorted(arrival)
    if delay > 1:
        # B's first packet comes after A's packets of its first `delay` seconds
        first_b = next(i for i, g in enumerate(got) if g["srcIP"] >> 24 == 11)
        assert got[first_b - 1]["timestamp"] - got[first_b]["timestamp"] > (delay - 1) * 1e6


def test_delayed_cli(tmp_path):
    out = tmp_path / "x.pcap"
    subprocess.run([sys.executable, str(HERE / "pktgen.py"), "--packets", "300",
                    "--groups", "20", "--out", str(out), "--pps", "50", "--link-delay", "3"],
                   check=True, capture_output=True)
    got = read_pcap(out)
    assert len(got) == 600 and sum(g["srcIP"] >> 24 == 11 for g in got) == 300


def test_cli(tmp_path):
    out, pq_ = tmp_path / "x.pcap", tmp_path / "x.parquet"
    subprocess.run([sys.executable, str(HERE / "pktgen.py"), "--packets", "500",
                    "--groups", "20", "--out", str(out), "--parquet", str(pq_)],
                   check=True, capture_output=True)
    assert len(read_pcap(out)) == 500 == pktgen.read_truth(pq_).num_rows


# ---- the baselines agree with each other and with the truth --------------

def _ip(s):
    a, b, c, d = map(int, s.split("."))
    return a << 24 | b << 16 | c << 8 | d


def _c_rows(pcap, q, tmp_path):
    out = tmp_path / f"{q}.out"
    r = baselines.run_c(pcap, q, out)
    lines = out.read_text().splitlines()
    assert r["rows"] == len(lines)
    return collections.Counter(
        (int(x), _ip(s), _ip(d), int(n)) for x, s, d, n in (l.split("|") for l in lines))


def _arrow_rows(t, cols):
    return collections.Counter(zip(*(t.column(c).to_pylist() for c in cols)))


@pytest.mark.skipif(shutil.which("gcc") is None, reason="no C compiler")
def test_baselines_agree(tmp_path):
    pcap = tmp_path / "b.pcap"
    # 90 s at 2000 pps: two epoch changes of time/60
    truth = pktgen.generate(str(pcap), 180_000, 500, pps=2000, seed=3,
                            parquet=str(tmp_path / "b.parquet"), start=1_700_000_030)
    tbl = baselines.load(tmp_path / "b.parquet")
    rows = truth.to_pydict()
    want1 = collections.Counter(
        (t, s, d, n) for t, s, d, n, p in zip(rows["time"], rows["srcIP"], rows["destIP"],
                                              rows["len"], rows["protocol"])
        if p == 6 and n > 100)
    want2 = collections.Counter(
        (t // 60, s, d) for t, s, d in zip(rows["time"], rows["srcIP"], rows["destIP"]))
    want2 = collections.Counter({k + (v,): 1 for k, v in want2.items()})
    assert len({k[0] for k in want2}) == 3

    assert _c_rows(pcap, "q1", tmp_path) == want1
    assert _c_rows(pcap, "q2", tmp_path) == want2
    for threads in (1, None):
        _, n1, r1 = baselines.run_duckdb(tbl, "q1", threads=threads, keep=True)
        _, n2, r2 = baselines.run_duckdb(tbl, "q2", threads=threads, keep=True)
        assert n1 == sum(want1.values()) and n2 == len(want2)
        assert _arrow_rows(r1, ["time", "srcIP", "destIP", "len"]) == want1
        assert _arrow_rows(r2, ["tb", "srcIP", "destIP", "cnt"]) == want2
    for threads in (1, 3):
        _, n1, r1 = baselines.run_gsqlc_arrow(tbl, "q1", keep=True, threads=threads)
        _, n2, r2 = baselines.run_gsqlc_arrow(tbl, "q2", keep=True, threads=threads)
        assert _arrow_rows(r1, ["time", "srcIP", "destIP", "len"]) == want1
        assert _arrow_rows(r2, ["tb", "srcIP", "destIP", "cnt"]) == want2
    _, n1, r1 = baselines.run_polars(tbl, "q1", keep=True)
    _, n2, r2 = baselines.run_polars(tbl, "q2", keep=True)
    assert _arrow_rows(r1.to_arrow(), ["time", "srcIP", "destIP", "len"]) == want1
    assert _arrow_rows(r2.to_arrow(), ["tb", "srcIP", "destIP", "cnt"]) == want2


def test_baselines_cli_json(tmp_path):
    pcap = tmp_path / "s.pcap"
    pktgen.generate(str(pcap), 5000, 50, parquet=str(tmp_path / "s.parquet"))
    for engine in baselines.ENGINES:
        r = baselines.run_subprocess(engine, "q2", pcap)
        assert r["rows"] == 50 and r["records"] == 5000 and r["peak_rss_mb"] > 0
