"""The memory-mapped capture-file reader (runtime_c/sources/pcap_mmap.c)
against libpcap, which read every `pcap:PATH` before and still reads what
the mapped reader does not take (option pcap_reader=libpcap forces it).

Two levels:
  - the reader alone: tests/runtime/pcap_mmap_diff.c, built with ASan and
    UBSan, prints every packet (timestamp, lengths, link type, a hash of
    the bytes) and how the file ended, through either reader; over the
    test captures, their pcapng / nanosecond / big-endian conversions,
    every truncation of small files and thousands of corrupted ones, both
    must agree packet for packet (or the mapped reader declines the file);
  - the whole run: gsqlc-run (the runner built beside a query set) with
    --option pcap_reader=mmap and =libpcap gives the same output, byte for
    byte, for a selection of every packet field and an aggregation, on the
    same captures, under the data clock and in time-aligned replay.
"""
from __future__ import annotations

import json
import os
import random
import shutil
import struct
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from conftest import REPO

RUNTIME = REPO / "runtime_c"
TRACE = REPO / "examples" / "trace.pcap"
sys.path.insert(0, str(REPO / "bench"))
import pktgen  # noqa: E402

SAN = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"]
SAN_ENV = {"ASAN_OPTIONS": "abort_on_error=1:detect_leaks=1",
           "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1"}


# ---- capture writers ---------------------------------------------------------

def pcap_file(records, *, linktype=1, snaplen=65535, nsec=False, big=False,
              version=(2, 4)) -> bytes:
    """Classic pcap.  records: (sec, frac, frame[, wire_len[, caplen]]);
    frac in microseconds, or nanoseconds with nsec."""
    e = ">" if big else "<"
    out = [struct.pack(e + "IHHiIII", 0xA1B23C4D if nsec else 0xA1B2C3D4, *version, 0, 0,
                       snaplen, linktype)]
    for rec in records:
        sec, frac, frame = rec[:3]
        wire = rec[3] if len(rec) > 3 else len(frame)
        cap = rec[4] if len(rec) > 4 else len(frame)
        out.append(struct.pack(e + "IIII", sec, frac, cap, wire) + frame)
    return b"".join(out)


def ng_block(btype: int, body: bytes, e="<", length=None, trailer=None) -> bytes:
    body += b"\0" * (-len(body) % 4)
    n = 12 + len(body) if length is None else length
    return struct.pack(e + "II", btype, n) + body + struct.pack(e + "I", n if trailer is None
                                                                 else trailer)


def ng_opt(code: int, value: bytes, e="<") -> bytes:
    return struct.pack(e + "HH", code, len(value)) + value + b"\0" * (-len(value) % 4)


def ng_shb(e="<", version=(1, 0), options=b"") -> bytes:
    return ng_block(0x0A0D0D0A, struct.pack(e + "IHHq", 0x1A2B3C4D, *version, -1) + options, e)


def ng_idb(linktype=1, snaplen=0, e="<", tsresol=None, tsoffset=None, options=b"") -> bytes:
    opts = options
    if tsresol is not None:
        opts += ng_opt(9, bytes([tsresol]), e)
    if tsoffset is not None:
        opts += ng_opt(14, struct.pack(e + "q", tsoffset), e)
    if opts:
        opts += ng_opt(0, b"", e)
    return ng_block(1, struct.pack(e + "HHI", linktype, 0, snaplen) + opts, e)


def ng_epb(ifid: int, t: int, frame: bytes, e="<", wire=None, caplen=None, options=b"") -> bytes:
    cap = len(frame) if caplen is None else caplen
    body = struct.pack(e + "IIIII", ifid, t >> 32, t & 0xFFFFFFFF, cap,
                       len(frame) if wire is None else wire)
    frame += b"\0" * (-len(frame) % 4)
    return ng_block(6, body + frame + options, e)


def ng_pb(ifid: int, t: int, frame: bytes, e="<", wire=None) -> bytes:
    body = struct.pack(e + "HHIIII", ifid, 0, t >> 32, t & 0xFFFFFFFF, len(frame),
                       len(frame) if wire is None else wire)
    return ng_block(2, body + frame, e)


def ng_spb(frame: bytes, e="<", wire=None) -> bytes:
    return ng_block(3, struct.pack(e + "I", len(frame) if wire is None else wire) + frame, e)


def read_classic(data: bytes):
    """(linktype, snaplen, [(sec, frac, frame, wire)]) of a sound
    microsecond little-endian capture."""
    magic, _, _, _, _, snap, lt = struct.unpack_from("<IHHiIII", data, 0)
    assert magic == 0xA1B2C3D4
    off, recs = 24, []
    while off < len(data):
        sec, usec, cap, wire = struct.unpack_from("<IIII", data, off)
        recs.append((sec, usec, data[off + 16:off + 16 + cap], wire))
        off += 16 + cap
    return lt, snap, recs


def to_variants(data: bytes) -> dict[str, bytes]:
    """A sound microsecond capture written in the other formats, all
    holding the same packets at the same microsecond timestamps."""
    lt, snap, recs = read_classic(data)
    out = {
        "nsec": pcap_file([(s, u * 1000, f, w) for s, u, f, w in recs], linktype=lt,
                          snaplen=snap, nsec=True),
        "big": pcap_file(recs, linktype=lt, snaplen=snap, big=True),
        "big_nsec": pcap_file([(s, u * 1000, f, w) for s, u, f, w in recs], linktype=lt,
                              snaplen=snap, nsec=True, big=True),
    }
    for e, tag in (("<", "le"), (">", "be")):
        us = [s * 1_000_000 + u for s, u, _, _ in recs]
        out[f"ng_{tag}"] = ng_shb(e) + ng_idb(lt, snap, e) + b"".join(
            ng_epb(0, t, f, e, wire=w) for t, (_, _, f, w) in zip(us, recs))
        # nanoseconds, a name option, unknown blocks among the packets
        out[f"ng_{tag}_ns"] = ng_shb(e, (1, 2), ng_opt(1, b"a comment", e) + ng_opt(0, b"", e)) + \
            ng_block(0x0BAD, b"before the IDB", e) + \
            ng_idb(lt, snap, e, tsresol=9, options=ng_opt(2, b"eth0", e)) + b"".join(
                ng_epb(0, t * 1000, f, e, wire=w, options=ng_opt(1, b"c", e) + ng_opt(0, b"", e))
                + (ng_block(5, b"\0" * 20, e) if i % 7 == 3 else b"")
                for i, (t, (_, _, f, w)) in enumerate(zip(us, recs)))
    # two interfaces of the same link type, in 2^-20 s and 10 ms units with
    # an offset; obsolete packet blocks; a second section
    half = len(recs) // 2
    ifs = (ng_idb(lt, snap, tsresol=0x80 | 20) + ng_idb(lt, snap, tsresol=2,
                                                         tsoffset=1_000_000_000))
    blocks = []
    for i, (s, u, f, w) in enumerate(recs[:half]):
        if i % 2:
            blocks.append(ng_epb(0, (s << 20) + (u << 20) // 1_000_000, f, wire=w))
        else:
            blocks.append(ng_pb(1, (s - 1_000_000_000) * 100 + u // 10_000, f, wire=w))
    blocks.append(ng_shb() + ng_idb(lt, snap))
    blocks += [ng_epb(0, s * 1_000_000 + u, f, wire=w) for s, u, f, w in recs[half:]]
    out["ng_mixed"] = ng_shb() + ifs + b"".join(blocks)
    return out


def small_captures() -> dict[str, bytes]:
    """A few packets in every format the mapped reader takes, and some it
    leaves to libpcap."""
    _, _, recs = read_classic(TRACE.read_bytes())
    recs = recs[:5]
    base = pcap_file(recs)
    out = {"classic": base, **to_variants(base)}
    frames = [f for _, _, f, _ in recs]
    # simple packet blocks (no timestamp) under a snapshot length of 64:
    # a longer packet is cut to it
    out["ng_spb"] = ng_shb() + ng_idb(1, 64) + b"".join(ng_spb(f[:64], wire=len(f))
                                                       for f in frames)
    # classic, snapshot length 60: longer records are cut by the readers
    out["classic_snap60"] = pcap_file([(s, u, f, w) for s, u, f, w in recs], snaplen=60)
    # interfaces of other link types (raw IP after the Ethernet one)
    out["ng_two_links"] = (ng_shb() + ng_idb(1) + ng_idb(101)
                           + ng_epb(0, 5_000_001, frames[0]) + ng_epb(1, 5_000_002, frames[1][14:])
                           + ng_epb(0, 5_000_003, frames[2]))
    out["classic_unknown_link"] = pcap_file(recs, linktype=147)
    out["classic_v23"] = pcap_file(recs, version=(2, 3))
    return out


def truncations(data: bytes):
    return {f"cut{n}": data[:n] for n in range(len(data) + 1)}


def mutants(data: bytes, n: int, seed: int):
    """n copies of data with a few bytes or 32-bit words overwritten, mostly
    in the first hundred bytes (file, record and block headers)."""
    rnd = random.Random(seed)
    out = {}
    for i in range(n):
        b = bytearray(data)
        for _ in range(rnd.choice((1, 1, 2, 3))):
            pos = rnd.randrange(min(len(b), 120)) if rnd.random() < 0.7 else rnd.randrange(len(b))
            kind = rnd.random()
            if kind < 0.4:
                b[pos] = rnd.randrange(256)
            elif kind < 0.8 and pos + 4 <= len(b):
                v = rnd.choice((0, 1, 3, 0xFFFFFFFF, 0x7FFFFFFF, 0x80000000, 262144, 262145,
                                rnd.randrange(1 << 32), rnd.randrange(64)))
                b[pos - pos % 4:pos - pos % 4 + 4] = struct.pack("<I", v)
            else:
                del b[pos:pos + rnd.randrange(1, 9)]
        out[f"mut{i}"] = bytes(b)
    return out


# ---- the reader alone, against libpcap -----------------------------------------

@pytest.fixture(scope="module")
def diff_tool(tmp_path_factory):
    """tests/runtime/pcap_mmap_diff.c with the reader and the decoder, under
    ASan and UBSan."""
    out = tmp_path_factory.mktemp("diff") / "pcap_mmap_diff"
    src = RUNTIME / "sources"
    p = subprocess.run(["gcc", "-std=c11", "-O1", "-g", "-Wall", "-Wextra", "-Werror", "-pedantic",
                        *SAN, f"-I{RUNTIME / 'include'}", f"-I{src}", "-o", str(out),
                        str(REPO / "tests" / "runtime" / "pcap_mmap_diff.c"),
                        str(src / "pcap_mmap.c"), str(src / "pkt_decode.c"), "-lpcap"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return out


@pytest.fixture(scope="module")
def cut_tool(tmp_path_factory):
    """pcap_mmap_diff built with blocks of 4 records (GSQ_PCAP_CUT_BLOCK):
    small captures get cut, under ASan and UBSan."""
    out = tmp_path_factory.mktemp("cuts") / "pcap_mmap_cuts"
    src = RUNTIME / "sources"
    p = subprocess.run(["gcc", "-std=c11", "-O1", "-g", "-Wall", "-Wextra", "-Werror", "-pedantic",
                        *SAN, "-DGSQ_PCAP_CUT_BLOCK=4u", f"-I{RUNTIME / 'include'}", f"-I{src}",
                        "-o", str(out), str(REPO / "tests" / "runtime" / "pcap_mmap_diff.c"),
                        str(src / "pcap_mmap.c"), str(src / "pkt_decode.c"), "-lpcap"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return out


def read_with(tool, mode: str, files) -> dict[str, list[str]]:
    """What pcap_mmap_diff prints per file (its lines after `file PATH`)."""
    res: dict[str, list[str]] = {}
    files = [str(f) for f in files]
    for i in range(0, len(files), 400):
        p = subprocess.run([str(tool), mode, *files[i:i + 400]], capture_output=True,
                           env=dict(os.environ, **SAN_ENV), timeout=600)
        assert p.returncode == 0, p.stderr.decode(errors="replace")[-3000:]
        assert b"Sanitizer" not in p.stderr and b"runtime error" not in p.stderr, p.stderr
        cur = None
        for line in p.stdout.decode("latin-1").splitlines():
            if line.startswith("file "):
                cur = line[5:]
                res[cur] = []
            else:
                res[cur].append(line)
    return res


def agree(tool, files, modes=("mmap",)) -> dict[str, str]:
    """Every file read by the mapped reader (each of modes) and by libpcap:
    when the mapped reader takes it, libpcap opens it too and both give the
    same packets and end the same way (at the end, or early), except where
    libpcap refuses a pcapng interface that differs from the first in link
    type or snapshot length: the mapped reader goes on.  Returns per file
    "fallback", "eof" or "error"."""
    ref = read_with(tool, "libpcap", files)
    outcome = {}
    for mode in modes:
        got = read_with(tool, mode, files)
        for f in map(str, files):
            m, lp = got[f], ref[f]
            assert not any(x.startswith(("outside", "not done")) for x in m), (f, m)
            if m[0].startswith("fallback"):
                outcome[f] = "fallback"
                continue
            assert not lp[0].startswith("openfail"), (f, m[:3], lp)
            mp = [x for x in m if x.startswith("p ")]
            lpp = [x for x in lp if x.startswith("p ")]
            end = m[len(mp)].split()[0]
            if lp[-1].startswith("error") and ("an interface has a type" in lp[-1] or
                                               "an interface has a snapshot length" in lp[-1]):
                assert mp[:len(lpp)] == lpp, f
            else:
                assert mp == lpp, (f, len(mp), len(lpp), m[len(mp)], lp[-1])
                assert end == lp[-1].split()[0], (f, m[len(mp)], lp[-1])
            outcome[f] = end
    return outcome


def _write(d: Path, files: dict[str, bytes]) -> list[Path]:
    d.mkdir(parents=True, exist_ok=True)
    out = []
    for name, data in files.items():
        (d / name).write_bytes(data)
        out.append(d / name)
    return out


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """A bench/pktgen.py capture: TCP with payloads, UDP, ICMP, fragments."""
    pcap = tmp_path_factory.mktemp("pktgen") / "g.pcap"
    pktgen.generate(str(pcap), 20_000, 300, pps=500, seed=11, payload=True, frag=0.03)
    return pcap


def _frame_udp4():
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + 9, 7, 0, 64, 17, 0, bytes([172, 16, 0, 1]),
                     bytes([172, 16, 0, 2]))
    return ip + struct.pack("!HHHH", 4000, 53, 9, 0) + b"q"


def _frame_udp6():
    udp = struct.pack("!HHHH", 4000, 53, 9, 0) + b"q"
    return (struct.pack("!IHBB", 6 << 28, len(udp), 17, 64) + bytes(15) + b"\1" + bytes(15)
            + b"\2" + udp)


def link_type_captures() -> dict[str, bytes]:
    """Every decoded link type, classic and pcapng."""
    ip = _frame_udp4()
    frames = {1: bytes(6) + bytes.fromhex("020000000001") + b"\x08\x00" + ip,
              113: struct.pack("!HHH8sH", 0, 1, 6, bytes.fromhex("020000000001") + b"\0\0",
                               0x0800) + ip,
              276: struct.pack("!HHIHBB8s", 0x0800, 0, 1, 1, 0, 6,
                               bytes.fromhex("020000000001") + b"\0\0") + ip,
              101: ip, 0: struct.pack("<I", 2) + ip, 108: struct.pack("!I", 2) + ip,
              228: ip, 229: _frame_udp6()}
    out = {}
    for lt, f in frames.items():
        recs = [(5, 6, f), (7, 8, f[:20]), (9, 10, f + b"\0" * 7, 80)]
        out[f"lt{lt}"] = pcap_file(recs, linktype=lt)
        out[f"lt{lt}_big"] = pcap_file(recs, linktype=lt, big=True)
        out[f"lt{lt}_ng"] = ng_shb(">") + ng_idb(lt, 0, ">") + b"".join(
            ng_epb(0, s * 1_000_000 + u, fr, ">", wire=r[3] if len(r) > 3 else None)
            for r in recs for s, u, fr in [r[:3]])
    return out


def timestamp_captures() -> dict[str, bytes]:
    """Timestamps at the edges: seconds and fractions beyond 2^31 and one
    second, in both byte orders and units; every if_tsresol, if_tsoffset."""
    f = bytes(14)
    odd = [(0xFFFFFFF0, 0xFFFFFFF0), (0x80000000, 999_999), (0x7FFFFFFF, 1_000_000),
           (5, 0x80000000), (0, 0), (1, 0xFFFFFFFF)]
    out = {}
    for nsec in (False, True):
        for big in (False, True):
            out[f"ts_{int(nsec)}{int(big)}"] = pcap_file([(s, u, f) for s, u in odd], nsec=nsec,
                                                         big=big)
    ts = [0, 1, 999_999, 1_000_000, 123_456_789_012, (1 << 32) + 5, (1 << 63) + 12345,
          (1 << 64) - 1]
    for r in [*range(0, 20), *(0x80 | b for b in (0, 1, 10, 20, 30, 32, 40, 63))]:
        for off in (None, -3, 1 << 40):
            for e in "<>":
                out[f"ng_res{r}_{off}_{'be' if e == '>' else 'le'}"] = (
                    ng_shb(e) + ng_idb(1, 0, e, tsresol=r, tsoffset=off)
                    + b"".join(ng_epb(0, t, f, e) for t in ts))
    return out


def snaplen_captures() -> dict[str, bytes]:
    big = bytes(70_000)
    recs = [(1, 1, big[:100]), (2, 2, big[:5]), (3, 3, big[:262_144]), (4, 4, big)]
    out = {}
    for snap in (0, 1, 60, 262_144, 262_145, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF):
        out[f"snap{snap}"] = pcap_file(recs[:3], snaplen=snap)
    out["over_max"] = pcap_file([(1, 1, big[:100]), (2, 2, bytes(262_145))])
    out["ng_over_snap"] = ng_shb() + ng_idb(1, 64) + ng_epb(0, 1, big[:64]) + ng_epb(0, 2, big[:65])
    out["ng_snap0"] = ng_shb() + ng_idb(1, 0) + ng_epb(0, 1, big[:70_000])
    out["ng_block_over_16m"] = (ng_shb() + ng_idb(1, 0) + ng_epb(0, 1, big[:9])
                                + ng_block(0x0BAD, bytes((16 << 20) - 8)) + ng_epb(0, 2, big[:9]))
    out["ng_block_16m"] = (ng_shb() + ng_idb(1, 0) + ng_epb(0, 1, big[:9])
                           + ng_block(0x0BAD, bytes((16 << 20) - 12)) + ng_epb(0, 2, big[:9]))
    return out


def structure_captures() -> dict[str, bytes]:
    """pcapng blocks in unusual places; empty and header-only files."""
    f = bytes(20)
    e1 = ng_epb(0, 1, f)
    out = {
        "header_only": pcap_file([]),
        "header_only_ng": ng_shb() + ng_idb(1, 0),
        "ng_no_idb": ng_shb(),
        "ng_packet_before_idb": ng_shb() + e1 + ng_idb(1, 0),
        "ng_bad_interface": ng_shb() + ng_idb(1, 0) + e1 + ng_epb(1, 2, f),
        "ng_section_without_idb": ng_shb() + ng_idb(1, 0) + e1 + ng_shb() + ng_epb(0, 2, f),
        "ng_spb_without_idb": ng_shb() + ng_idb(1, 0) + e1 + ng_shb() + ng_spb(f),
        "ng_section_other_order": ng_shb() + ng_idb(1, 0) + e1 + ng_shb(">") + ng_idb(1, 0, ">"),
        "ng_section_v2": ng_shb() + ng_idb(1, 0) + e1 + ng_shb(version=(2, 0)) + ng_idb(1, 0),
        "ng_second_section": ng_shb() + ng_idb(1, 0) + e1 + ng_shb() + ng_idb(1, 0) + e1,
        "ng_bad_trailer": ng_shb() + ng_idb(1, 0) + e1 + ng_block(6, e1[8:-4], trailer=99),
        "ng_len_not4": ng_shb() + ng_idb(1, 0) + e1 + ng_block(6, e1[8:-4], length=len(e1) - 2),
        "ng_len_small": ng_shb() + ng_idb(1, 0) + e1 + struct.pack("<II", 6, 8) + e1,
        "ng_short_epb": ng_shb() + ng_idb(1, 0) + e1 + ng_block(6, bytes(12)),
        "ng_epb_caplen_past_block": ng_shb() + ng_idb(1, 0) + e1 + ng_epb(0, 1, f, caplen=40),
        "ng_idb_bad_option": ng_shb() + ng_idb(1, 0) + e1 + ng_idb(1, 0, options=ng_opt(9, b"ab")),
        "ng_idb_two_resol": ng_shb() + ng_idb(1, 0) + e1
        + ng_idb(1, 0, options=ng_opt(9, b"\x06") + ng_opt(9, b"\x06")),
        "ng_idb_cut_option": ng_shb() + ng_idb(1, 0) + e1 + ng_block(1, struct.pack("<HHI", 1, 0, 0)
                                                                     + struct.pack("<HH", 2, 40)),
        "ng_idb_endofopt_len": ng_shb() + ng_idb(1, 0) + e1
        + ng_idb(1, 0, options=ng_opt(0, b"xx")),
        "ng_shb_v12_opts": ng_shb(version=(1, 2), options=ng_opt(2, b"hw") + ng_opt(0, b""))
        + ng_idb(1, 0) + e1,
    }
    return out


def declined_captures() -> dict[str, bytes]:
    """Files the mapped reader leaves to libpcap."""
    _, _, recs = read_classic(TRACE.read_bytes())
    recs = recs[:3]
    return {
        "unknown_link": pcap_file(recs, linktype=147),
        "fcs_bits": pcap_file(recs, linktype=1 | 0x04000000),
        "v2_3": pcap_file(recs, version=(2, 3)),
        "v2_2": pcap_file(recs, version=(2, 2)),
        "kuznetzov": struct.pack("<I", 0xA1B2CD34) + pcap_file(recs)[4:],
        "ng_v2": ng_shb(version=(2, 0)) + ng_idb(1, 0) + ng_epb(0, 1, recs[0][2]),
        "empty": b"",
        "short": b"\xd4\xc3",
        "text": b"this is not a capture, just some text\n" * 10,
        "header_cut": pcap_file(recs)[:20],
    }


def test_reader_agrees_with_libpcap_on_sound_captures(diff_tool, tmp_path, generated):
    tr = TRACE.read_bytes()
    files = {"trace.pcap": tr, "g.pcap": generated.read_bytes()}
    files.update({f"trace_{k}": v for k, v in to_variants(tr).items()})
    files.update({f"g_{k}": v for k, v in to_variants(generated.read_bytes()).items()
                  if k in ("nsec", "big", "ng_be_ns", "ng_mixed")})
    files.update(link_type_captures())
    files.update(timestamp_captures())
    paths = _write(tmp_path, files)
    out = agree(diff_tool, paths, modes=("mmap", "mem"))
    assert set(out.values()) == {"eof"}, [f for f, o in out.items() if o != "eof"]
    got = read_with(diff_tool, "mmap", [tmp_path / "trace.pcap", tmp_path / "g_ng_mixed"])
    assert sum(x.startswith("p ") for x in got[str(tmp_path / "trace.pcap")]) == 1455
    assert sum(x.startswith("p ") for x in got[str(tmp_path / "g_ng_mixed")]) == 20_000


def test_reader_agrees_on_snapshot_lengths_and_structure(diff_tool, tmp_path):
    files = {**snaplen_captures(), **structure_captures()}
    out = {Path(k).name: v for k, v in agree(diff_tool, _write(tmp_path, files)).items()}
    assert out["snap60"] == "eof" and out["snap0"] == "eof" and out["over_max"] == "error"
    assert out["ng_over_snap"] == out["ng_block_over_16m"] == "error"
    assert out["ng_block_16m"] == out["ng_second_section"] == out["ng_shb_v12_opts"] == "eof"
    assert out["header_only"] == out["header_only_ng"] == "eof"
    for name in ("ng_bad_interface", "ng_section_without_idb", "ng_spb_without_idb",
                 "ng_section_other_order", "ng_section_v2", "ng_bad_trailer", "ng_len_not4",
                 "ng_len_small", "ng_short_epb", "ng_epb_caplen_past_block", "ng_idb_bad_option",
                 "ng_idb_two_resol", "ng_idb_cut_option", "ng_idb_endofopt_len"):
        assert out[name] == "error", name
    assert out["ng_no_idb"] == out["ng_packet_before_idb"] == "fallback"
    got = read_with(diff_tool, "mmap", [tmp_path / "snap60", tmp_path / "ng_bad_trailer"])
    assert got[str(tmp_path / "snap60")][-1] == "counts 2 0"   # 100 and 262144 bytes, cut
    assert got[str(tmp_path / "ng_bad_trailer")][-2].startswith(
        "error @") and "trailer" in got[str(tmp_path / "ng_bad_trailer")][-2]


def test_reader_declines_what_it_does_not_take(diff_tool, tmp_path):
    paths = _write(tmp_path, declined_captures())
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got = read_with(diff_tool, "mmap", [*paths, fifo, tmp_path])  # the FIFO is not opened
    for p in [*paths, fifo, tmp_path]:
        assert got[str(p)][0].startswith("fallback"), (p, got[str(p)])
    assert got[str(fifo)] == ["fallback not a regular file"]
    assert got[str(tmp_path / "unknown_link")] == ["fallback link type 147 is not decoded"]


def test_reader_takes_pcapng_whose_first_interface_is_not_decoded(diff_tool, tmp_path):
    # libpcap reads the first file but refuses the second at its second
    # interface (another link type); the mapped reader reads both, counting
    # the packets it cannot decode
    _, _, recs = read_classic(TRACE.read_bytes())
    paths = _write(tmp_path, {
        "ng_unknown_link": ng_shb() + ng_idb(147, 0) + ng_epb(0, 1, recs[0][2]),
        "ng_unknown_then_eth": ng_shb() + ng_idb(147, 0) + ng_idb(1, 0)
        + ng_epb(0, 1, recs[0][2]) + ng_epb(1, 2, recs[1][2]) + ng_epb(1, 3, recs[2][2])})
    got = read_with(diff_tool, "mmap", paths)
    lib = read_with(diff_tool, "libpcap", paths)
    one = got[str(paths[0])]
    assert [x.split()[4] for x in one if x.startswith("p ")] == ["-1"]
    assert one[-2:] == ["eof", "counts 0 1"]
    two = got[str(paths[1])]
    assert [x.split()[4] for x in two if x.startswith("p ")] == ["-1", "1", "1"]
    assert two[-2:] == ["eof", "counts 0 1"]
    assert "an interface has a type" in lib[str(paths[1])][-1]


def test_reader_agrees_on_every_truncation(diff_tool, tmp_path):
    files = {}
    for name, data in small_captures().items():
        files.update({f"{name}_{k}": v for k, v in truncations(data).items()})
    out = agree(diff_tool, _write(tmp_path, files), modes=("mmap", "mem"))
    taken = [o for o in out.values() if o != "fallback"]
    assert taken.count("error") > 3000 and taken.count("eof") > 50


def test_reader_agrees_on_corrupt_captures(diff_tool, tmp_path):
    files = {}
    for i, (name, data) in enumerate(sorted(small_captures().items())):
        files.update({f"{name}_{k}": v for k, v in mutants(data, 600, seed=i).items()})
    out = agree(diff_tool, _write(tmp_path, files), modes=("mem",))
    n = {o: list(out.values()).count(o) for o in ("eof", "error", "fallback")}
    assert n["eof"] > 2000 and n["error"] > 1000 and n["fallback"] > 2000, n


def test_cut_runs_read_as_the_whole_capture(cut_tool, tmp_path, generated):
    """gsq_pcap_mmap_cuts and gsq_pcap_mmap_restrict (the threads' cut of a
    capture): the runs' packets, in order, are the whole file's; no packet
    of a run is later than one of a later run; captures that end early,
    pcapng and corrupt ones are not cut -- over sound, truncated and
    corrupt captures read from heap blocks under ASan and UBSan."""
    files = {"trace.pcap": TRACE.read_bytes(), "g.pcap": generated.read_bytes()}
    files.update({f"trace_{k}": v for k, v in to_variants(TRACE.read_bytes()).items()})
    for name, data in sorted(small_captures().items())[:4]:
        files.update({f"{name}_t{k}": v for k, v in list(truncations(data).items())[::7]})
        files.update({f"{name}_m{k}": v for k, v in mutants(data, 120, seed=3).items()})
    paths = _write(tmp_path, files)
    whole, cut = read_with(cut_tool, "mem", paths), read_with(cut_tool, "cuts", paths)
    n_cut = 0
    for f in map(str, paths):
        w, c = whole[f], cut[f]
        if c[0] == "fallback":
            assert w[0].startswith("fallback"), f
            continue
        if c[0].startswith("nocut"):
            ended = [x for x in w if x.startswith(("eof", "error"))][0]
            assert ("pcapng" in c[0] or "too few" in c[0]
                    or ("ends early" in c[0] and ended.startswith("error"))), (f, c[0], ended)
            continue
        cuts = [int(x) for x in c[0].split()[1:]]
        assert len(cuts) >= 2 and cuts == sorted(set(cuts)), (f, cuts)
        n_cut += len(cuts) > 2      # cut (one run: no clean cut in it)
        assert [x for x in w if x.startswith(("eof", "error"))][0] == "eof", f
        runs, cur = [], None
        for line in c[1:]:
            if line == "run":
                cur = []
                runs.append(cur)
            else:
                cur.append(line)
        assert len(runs) == len(cuts) - 1 and all(r[-1] == "eof" for r in runs), (f, runs)
        packets = [[x for x in r if x.startswith("p ")] for r in runs]
        assert sum(packets, []) == [x for x in w if x.startswith("p ")], f
        times = [[int(x.split()[1]) for x in r] for r in packets]
        for a, b in zip(times, times[1:]):
            assert max(a) <= min(b), f
    assert n_cut >= 10, n_cut


# ---- whole runs: the same output through either reader ---------------------------

QUERIES = {
    "pkt": "SELECT time, timestamp, caplen, wire_len FROM PKT",
    "eth": "SELECT timestamp, eth_src, eth_dst, eth_type, vlan_id FROM ETH",
    "ip4": "SELECT timestamp, ipversion, protocol, len, hdr_length, ttl, tos, id, offset, "
           "more_fragments, dont_fragment, srcIP, destIP FROM IPV4",
    "ip6": "SELECT timestamp, protocol, len, hdr_length, ttl, tos, id, offset, more_fragments, "
           "srcIPv6, destIPv6 FROM IPV6",
    "tcp": "SELECT timestamp, srcPort, destPort, sequence_number, ack_number, flags, fin, syn, "
           "rst, psh, ack, urg, window, data_length, TCP_data FROM TCP",
    "udp": "SELECT timestamp, srcPort, destPort, udp_length, UDP_data FROM UDP",
    "icmp": "SELECT timestamp, icmp_type, icmp_code FROM ICMP",
    "per_proto": "SELECT tb, ipversion, protocol, count(*) as n, sum(len) as bytes, "
                 "max(caplen) as mc FROM IP GROUP BY time/10 as tb, ipversion, protocol",
    "flows": "SELECT tb, srcIP, destIP, count(*) as n FROM IPV4 "
             "GROUP BY time/60 as tb, srcIP, destIP",
}


@pytest.fixture(scope="module")
def runner(tmp_path_factory):
    """gsqlc-run of a query set reading every packet field, built once."""
    from conftest import run_gsqlc
    d = tmp_path_factory.mktemp("qs")
    q = d / "q.gsql"
    q.write_text("".join(f"DEFINE {{ query_name '{n}'; }}\n{body};\n"
                         for n, body in QUERIES.items()))
    p = run_gsqlc("compile", str(q), "-o", str(d / "out"), "--build", "--werror")
    assert p.returncode == 0, p.stderr.decode()
    return d / "out" / "build" / "gsqlc-run"


def run_with(runner, reader: str, sources, *extra, outputs=tuple(QUERIES)):
    """One run of gsqlc-run; (stdout bytes, report lines, stats)."""
    cmd = [str(runner), *(a for n, p in sources for a in ("--source", f"{n}=pcap:{p}")),
           *(a for o in outputs for a in ("--output", o)), "--clock", "data", "--stats",
           "--option", f"pcap_reader={reader}", *extra]
    p = subprocess.run(cmd, capture_output=True, timeout=300)
    err = p.stderr.decode("utf-8", "replace")
    assert p.returncode == 0, err
    i = err.index("{")
    return p.stdout, err[:i].splitlines(), json.loads(err[i:])


def assert_same_runs(runner, sources, *extra, mapped=True, outputs=tuple(QUERIES)):
    """Both readers: the same output, byte for byte; the same counts and
    report, but for the reason a truncated capture gives."""
    out_m, rep_m, st_m = run_with(runner, "mmap", sources, *extra, outputs=outputs)
    out_l, rep_l, st_l = run_with(runner, "libpcap", sources, *extra, outputs=outputs)
    assert out_m == out_l
    strip = [line.split(" (")[0] if "truncated capture" in line else line for line in rep_l]
    assert [line.split(" (")[0] if "truncated capture" in line else line for line in rep_m
            if "cut to it" not in line] == strip
    for sm, sl in zip(st_m["sources"], st_l["sources"]):
        for k in ("packets_read", "bytes_read", "truncated", "held_back", "aligned"):
            assert sm[k] == sl[k], k
        assert sl["pcap_reader"] == "libpcap"
        assert sm["pcap_reader"] == ("mmap" if mapped else "libpcap"), sm["pcap_fallback"]
    assert [s["tuples"] for s in st_m["streams"]] == [s["tuples"] for s in st_l["streams"]]
    assert [s["heartbeats"] for s in st_m["streams"]] == \
        [s["heartbeats"] for s in st_l["streams"]]
    return out_m, rep_m, st_m


def _jumbo() -> bytes:
    """Frames of 9000 to 60000 bytes: a batch ends on the ring's bytes
    before its 512 records, in both readers at the same packet."""
    rnd = random.Random(5)
    recs = []
    for i in range(3000):
        n = rnd.choice((9000, 30000, 60000, 64))
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, min(n - 14, 65535), i & 0xFFFF, 0, 64, 17, 0,
                         bytes([10, 0, 0, 1 + i % 5]), bytes([10, 0, 1, 1]))
        frame = bytes(12) + b"\x08\x00" + ip + struct.pack("!HHHH", 1000 + i % 7, 53, 8, 0)
        recs.append((1_700_000_000 + i // 20, (i % 20) * 50_000, frame + bytes(n - len(frame))))
    return pcap_file(recs)


def test_runs_agree_on_captures(runner, tmp_path, generated):
    tr = TRACE.read_bytes()
    files = {"trace.pcap": tr, **{f"trace_{k}": v for k, v in to_variants(tr).items()},
             **{f"g_{k}": v for k, v in to_variants(generated.read_bytes()).items()
                if k in ("big_nsec", "ng_le_ns", "ng_mixed")},
             **link_type_captures(), "jumbo.pcap": _jumbo()}
    paths = _write(tmp_path, files)
    for p in [generated, *paths]:
        out, rep, st = assert_same_runs(runner, [("default", p)], "--option", "batch=100")
        assert not [r for r in rep if "truncated" in r or "warning" in r], (p, rep)
        assert len(out) > 100, p
    out, _, st = assert_same_runs(runner, [("default", tmp_path / "jumbo.pcap")])
    assert st["sources"][0]["packets_read"] == 3000


def test_runs_agree_on_truncated_and_corrupt_captures(runner, tmp_path):
    tr = TRACE.read_bytes()
    ng = to_variants(tr)["ng_be_ns"]
    files = {"cut_record": tr[:-10], "cut_header": tr[:len(tr) // 2 - 3],
             "ng_cut": ng[:-7], "ng_cut_mid": ng[:len(ng) // 3],
             "snap60": pcap_file(read_classic(tr)[2], snaplen=60),
             **{k: v for k, v in snaplen_captures().items() if k.startswith(("over", "ng_over"))},
             **{k: v for k, v in structure_captures().items()
                if k not in ("ng_no_idb", "ng_packet_before_idb")}}
    rnd = random.Random(3)
    for i in range(20):  # a few corrupt records in the middle
        b = bytearray(tr)
        pos = rnd.randrange(24, len(b) - 4)
        b[pos:pos + 4] = struct.pack("<I", rnd.choice((0xFFFFFFFF, 300_000, 70_000)))
        files[f"corrupt{i}"] = bytes(b)
    for p in _write(tmp_path, files):
        out, rep, st = assert_same_runs(runner, [("default", p)])
        src = st["sources"][0]
        if src["truncated"]:
            assert len(rep) >= 1 and rep[0].startswith(f"gsqlc: {p}: truncated capture after "
                                                       f"{src['packets_read']} packets (at byte ")
            assert src["read_error"].startswith("at byte ")
    _, rep, st = run_with(runner, "mmap", [("default", tmp_path / "snap60")])
    n = sum(len(f) > 60 for _, _, f, _ in read_classic(tr)[2])
    assert f"gsqlc: warning: {tmp_path / 'snap60'}: {n} packets longer than the snapshot " \
           "length 60 were cut to it (as libpcap cuts them)" in rep
    assert st["sources"][0]["cut_to_snaplen"] == n > 1000


def test_runs_agree_in_time_aligned_replay(runner, tmp_path):
    """Two captures replayed together on the data clock: held packets,
    peeks and the rounds' limits are the same through either reader."""
    a, b = tmp_path / "a.pcap", tmp_path / "b.pcap"
    pktgen.generate(str(a), 4000, 50, pps=400, seed=1)
    pktgen.generate(str(b), 1500, 50, pps=100, seed=2)
    bng = tmp_path / "b.pcapng"
    bng.write_bytes(to_variants(b.read_bytes())["ng_le_ns"])
    for second in (b, bng):
        _, _, st = assert_same_runs(runner, [("default", a), ("default", second)],
                                    "--option", "heartbeat_interval=0.25", "--option", "batch=128",
                                    outputs=("pkt", "per_proto", "flows"))
        assert st["aligned_sources"] == 2
        assert all(s["held_back"] > 0 for s in st["sources"])


def test_pipe_and_fifo_are_read_through_libpcap(runner, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)

    def feed():
        with open(fifo, "wb") as f:
            f.write(TRACE.read_bytes())

    t = threading.Thread(target=feed)
    t.start()
    try:
        out, rep, st = run_with(runner, "mmap", [("default", fifo)])
    finally:
        t.join(timeout=60)
    src = st["sources"][0]
    assert (src["pcap_reader"], src["pcap_fallback"]) == ("libpcap", "not a regular file")
    out_f, rep_f, st_f = run_with(runner, "mmap", [("default", TRACE)])
    assert st_f["sources"][0]["pcap_reader"] == "mmap"
    assert out == out_f and rep == rep_f
    # standard input, a pipe
    p = subprocess.run([str(runner), "--source", "default=pcap:/dev/stdin", "--output", "pkt",
                        "--output", "flows", "--clock", "data", "--stats"],
                       input=TRACE.read_bytes(), capture_output=True, timeout=300)
    assert p.returncode == 0, p.stderr
    err = p.stderr.decode()
    assert json.loads(err[err.index("{"):])["sources"][0]["pcap_reader"] == "libpcap"
    assert p.stdout == run_with(runner, "mmap", [("default", TRACE)], outputs=("pkt", "flows"))[0]


def test_pcapng_interfaces_of_other_link_types(runner, tmp_path):
    """Beyond libpcap, which stops at an interface of another link type:
    each packet is decoded with its interface's; an interface of a link
    type the decoder does not know gives the PKT fields only."""
    ip = _frame_udp4()
    eth = bytes(6) + bytes.fromhex("020000000001") + b"\x08\x00" + ip
    data = (ng_shb() + ng_idb(1) + ng_idb(101, tsresol=9) + ng_idb(147)
            + ng_epb(0, 5_000_001, eth) + ng_epb(1, 6_000_002_000, ip)
            + ng_epb(2, 7_000_003, eth) + ng_epb(0, 8_000_004, eth))
    p = tmp_path / "links.pcapng"
    p.write_bytes(data)
    out, rep, st = run_with(runner, "mmap", [("default", p)], outputs=("pkt", "udp"))
    lines = out.decode().splitlines()
    assert sorted(lines) == sorted([
        f"{s}|{s * 1_000_000 + u}|{n}|{n}" for s, u, n in
        [(5, 1, len(eth)), (6, 2, len(ip)), (7, 3, len(eth)), (8, 4, len(eth))]]
        + [f"{t}|4000|53|9|q" for t in (5_000_001, 6_000_002, 8_000_004)])
    assert st["sources"][0]["undecoded_packets"] == 1
    assert rep == [f"gsqlc: warning: {p}: 1 packets of pcapng interfaces of a link type not "
                   "decoded (147 first); only time, timestamp, caplen and wire_len are "
                   "available for them"]
    _, rep, st = run_with(runner, "libpcap", [("default", p)], outputs=("pkt", "udp"))
    assert st["sources"][0]["packets_read"] == 0 and "an interface has a type" in rep[0]


def test_cli_pcap_reader_flag(gsqlc, tmp_path):
    q = tmp_path / "q.gsql"
    q.write_text("DEFINE { query_name 'n'; }\n"
                 "SELECT tb, count(*) as n FROM IPV4 GROUP BY time/10 as tb")
    runs = {}
    for reader in ("mmap", "libpcap"):
        p = gsqlc("run", q, "--source", f"default=pcap:{TRACE}", "--pcap-reader", reader,
                  "--stats")
        assert p.returncode == 0, p.err
        runs[reader] = (p.out, json.loads(p.err[p.err.index("{"):])["sources"][0])
    assert runs["mmap"][0] == runs["libpcap"][0] and len(runs["mmap"][0].splitlines()) > 3
    assert runs["mmap"][1]["pcap_reader"] == "mmap"
    assert runs["libpcap"][1]["pcap_reader"] == "libpcap"
    assert runs["libpcap"][1]["pcap_fallback"] == "option pcap_reader=libpcap"
    p = gsqlc("run", q, "--source", f"default=pcap:{TRACE}", "--pcap-reader", "fread")
    assert p.returncode == 2 and "--pcap-reader" in p.err


@pytest.mark.skipif(shutil.which("tcpdump") is None, reason="no tcpdump")
def test_tcpdump_written_capture_is_mapped(runner, tmp_path):
    """A capture written by another tool: tcpdump rewrites the trace with
    nanosecond timestamps (run.sh installs tcpdump)."""
    out = tmp_path / "t.pcap"
    p = subprocess.run(["tcpdump", "-r", str(TRACE), "-w", str(out),
                        "--time-stamp-precision=nano"], capture_output=True)
    assert p.returncode == 0, p.stderr
    magic = out.read_bytes()[:4]
    assert magic in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d",  # classic, nanoseconds
                     b"\x0a\x0d\x0d\x0a"), magic                      # or pcapng
    assert_same_runs(runner, [("default", out)])
