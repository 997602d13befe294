"""Write the seed corpora of the reader fuzzers (fuzz/readers/corpus/<target>/).

    python3 fuzz/readers/make_seeds.py [CORPUS_DIR]

Deterministic: the seeds are small hand-built captures (classic pcap in both
byte orders, micro- and nanosecond; pcapng with two interfaces of different
link types, timestamp resolutions and offsets, every packet block kind, two
sections; IPv6 with extension headers, VLAN tags, SLL/SLL2/NULL/LOOP frames),
the first records of examples/trace.pcap, CSV rows of tests/data and
examples/csv behind a layout header (fuzz_csv.c), and Arrow layouts in the
byte language of fuzz_arrow.c.  The fuzzed and minimised corpus is kept
beside them (files named by their SHA-1, written by libFuzzer)."""
from __future__ import annotations

import struct
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent

# ---- packets ------------------------------------------------------------


def ipv4(proto: int, l4: bytes, frag: int = 0) -> bytes:
    hdr = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(l4), 7, frag, 64, proto, 0,
                      bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
    return hdr + l4


def tcp(payload: bytes = b"GET / HTTP/1.0\r\n") -> bytes:
    return struct.pack(">HHIIBBHHH", 1234, 80, 1, 0, 5 << 4, 0x18, 512, 0, 0) + payload


def udp(payload: bytes = b"\x12\x34hello") -> bytes:
    return struct.pack(">HHHH", 5353, 53, 8 + len(payload), 0) + payload


def ipv6(nh: int, rest: bytes) -> bytes:
    src = bytes(range(16))
    dst = bytes(range(16, 32))
    return struct.pack(">IHBB", 6 << 28, len(rest), nh, 64) + src + dst + rest


def ipv6_ext() -> bytes:
    # hop-by-hop -> routing -> fragment (first) -> AH -> TCP
    ah = bytes([6, 4, 0, 0]) + b"\x00" * 20          # (4 + 2) * 4 = 24 bytes
    frag = bytes([51, 0, 0, 1]) + struct.pack(">I", 0xabcdef)
    rout = bytes([44, 0, 0, 0]) + b"\x00" * 4
    hbh = bytes([43, 0]) + b"\x01\x04\x00\x00\x00\x00"
    return ipv6(0, hbh + rout + frag + ah + tcp())


def ipv6_frag_later() -> bytes:
    frag = bytes([17, 0]) + struct.pack(">H", (100 << 3) | 1) + struct.pack(">I", 9)
    return ipv6(44, frag + udp())


def eth(payload: bytes, etype: int = 0x0800, tags: tuple[int, ...] = ()) -> bytes:
    b = b"\x00\x11\x22\x33\x44\x55" + b"\x66\x77\x88\x99\xaa\xbb"
    for t in tags:
        b += struct.pack(">HH", t, 42)
    return b + struct.pack(">H", etype) + payload


def sll(payload: bytes, etype: int) -> bytes:
    return struct.pack(">HHH", 0, 1, 6) + b"\x66\x77\x88\x99\xaa\xbb\x00\x00" + \
        struct.pack(">H", etype) + payload


def sll2(payload: bytes, etype: int) -> bytes:
    return struct.pack(">HHIHBB", etype, 0, 2, 1, 0, 6) + b"\x66\x77\x88\x99\xaa\xbb\x00\x00" + payload


ICMP = ipv4(1, b"\x08\x00\x00\x00\x00\x01\x00\x01")
ICMP6 = ipv6(58, b"\x80\x00\x00\x00\x00\x01\x00\x01")

ETH_FRAMES = [
    eth(ipv4(6, tcp())),
    eth(ipv4(17, udp()), tags=(0x8100,)),
    eth(ipv4(17, udp()), etype=0x0800, tags=(0x88a8, 0x8100)),
    eth(ipv6_ext(), 0x86dd),
    eth(ipv6_frag_later(), 0x86dd),
    eth(ICMP),
    eth(ICMP6, 0x86dd),
    eth(ipv4(6, tcp(), frag=0x2000)) + b"\x00" * 6,  # more fragments, Ethernet padding
    eth(ipv4(6, tcp(), frag=5)),                      # a later fragment
    eth(b"\x00" * 30, 0x0806),                        # ARP
]

# ---- classic pcap -----------------------------------------------------------


def classic(frames: list[bytes], linktype: int = 1, big: bool = False, nsec: bool = False,
            snaplen: int = 65535, cut_last: int = 0) -> bytes:
    e = ">" if big else "<"
    magic = 0xa1b23c4d if nsec else 0xa1b2c3d4
    out = struct.pack(e + "IHHiIII", magic, 2, 4, 0, 0, snaplen, linktype)
    for i, f in enumerate(frames):
        frac = (i * 1000 + 7) * (1000 if nsec else 1)
        out += struct.pack(e + "IIII", 1700000000 + i // 3, frac, len(f), len(f) + 4) + f
    return out[:len(out) - cut_last] if cut_last else out


# ---- pcapng -------------------------------------------------------------


def block(e: str, btype: int, body: bytes) -> bytes:
    body += b"\x00" * (-len(body) % 4)
    n = len(body) + 12
    return struct.pack(e + "II", btype, n) + body + struct.pack(e + "I", n)


def opt(e: str, code: int, val: bytes) -> bytes:
    return struct.pack(e + "HH", code, len(val)) + val + b"\x00" * (-len(val) % 4)


def shb(e: str) -> bytes:
    return block(e, 0x0a0d0d0a, struct.pack(e + "IHHq", 0x1a2b3c4d, 1, 0, -1))


def idb(e: str, linktype: int, snaplen: int = 0, opts: bytes = b"") -> bytes:
    if opts:
        opts += struct.pack(e + "HH", 0, 0)
    return block(e, 1, struct.pack(e + "HHI", linktype, 0, snaplen) + opts)


def epb(e: str, ifid: int, ts: int, data: bytes) -> bytes:
    return block(e, 6, struct.pack(e + "IIIII", ifid, ts >> 32, ts & 0xffffffff, len(data),
                                   len(data)) + data)


def pb(e: str, ifid: int, ts: int, data: bytes) -> bytes:
    return block(e, 2, struct.pack(e + "HHIIII", ifid, 0, ts >> 32, ts & 0xffffffff, len(data),
                                   len(data)) + data)


def spb(e: str, data: bytes) -> bytes:
    return block(e, 3, struct.pack(e + "I", len(data)) + data)


def pcapng(big: bool = False) -> bytes:
    e = ">" if big else "<"
    raw = ipv4(17, udp())
    out = shb(e)
    out += idb(e, 1, 0, opt(e, 9, b"\x09") + opt(e, 14, struct.pack(e + "q", 100)))  # ns, offset
    out += idb(e, 101, 128, opt(e, 9, b"\x94"))                                   # 2^-20, raw IP
    out += epb(e, 0, 1700000000 * 10**9 + 5, ETH_FRAMES[0])
    out += epb(e, 1, (1700000000 << 20) + 12345, raw)
    out += block(e, 0x0bad, b"custom")                                            # skipped
    out += spb(e, ETH_FRAMES[3])
    out += pb(e, 0, 1700000001 * 10**9, ETH_FRAMES[1])
    out += epb(e, 1, (1700000001 << 20), ipv6(17, udp()))
    # a second section: its own interfaces (SLL, microseconds; SLL2)
    out += shb(e)
    out += idb(e, 113, 0)
    out += idb(e, 276, 0, opt(e, 9, b"\x03"))                                     # ms
    out += epb(e, 0, 1700000002 * 10**6, sll(ipv4(6, tcp()), 0x0800))
    out += epb(e, 1, 1700000002 * 10**3, sll2(ipv6(6, tcp()), 0x86dd))
    return out


def trace_prefix(n: int) -> bytes:
    data = (ROOT / "examples" / "trace.pcap").read_bytes()
    off = 24
    big = data[:4] in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d")
    e = ">" if big else "<"
    for _ in range(n):
        if off + 16 > len(data):
            break
        off += 16 + struct.unpack_from(e + "I", data, off + 8)[0]
    return data[:off]


def pcap_seeds() -> dict[str, bytes]:
    null_frames = [struct.pack("<I", 2) + ipv4(6, tcp()), struct.pack(">I", 24) + ICMP6,
                   struct.pack("<I", 30) + ipv6_ext()]
    loop_frames = [struct.pack(">I", 2) + ipv4(17, udp()), struct.pack(">I", 28) + ipv6_ext()]
    return {
        "trace_first20.pcap": trace_prefix(20),
        "eth_le_usec.pcap": classic(ETH_FRAMES),
        "eth_be_usec.pcap": classic(ETH_FRAMES, big=True),
        "eth_le_nsec.pcap": classic(ETH_FRAMES, nsec=True),
        "eth_be_nsec_snap60.pcap": classic(ETH_FRAMES, big=True, nsec=True, snaplen=60),
        "eth_cut_short.pcap": classic(ETH_FRAMES[:3], cut_last=5),
        "raw_ip.pcap": classic([ipv4(6, tcp()), ipv6_ext(), ICMP6, ipv6_frag_later()], 101),
        "sll.pcap": classic([sll(ipv4(17, udp()), 0x0800), sll(ipv6_ext(), 0x86dd),
                             sll(ipv4(6, tcp()), 0x8100)], 113),
        "sll2_be.pcap": classic([sll2(ipv4(6, tcp()), 0x0800), sll2(ipv6_ext(), 0x86dd)], 276,
                                big=True),
        "null.pcap": classic(null_frames, 0),
        "loop.pcap": classic(loop_frames, 108),
        "two_ifaces_le.pcapng": pcapng(),
        "two_ifaces_be.pcapng": pcapng(big=True),
    }


# ---- CSV ------------------------------------------------------------------

T = {"bool": 1, "ushort": 2, "uint": 3, "int": 4, "ullong": 5, "llong": 6, "float": 7,
     "ip": 8, "ipv6": 9, "string": 10}
SEP = {",": 0, "|": 1, "\t": 2, ";": 3}
UNIT = {"s": 0, "ms": 1, "us": 2, "ns": 3}
BATCH = {1: 0, 2: 1, 3: 2, 5: 3, 8: 4, 64: 5, 1000: 6, 4096: 7}


# a field's time format (fuzz_csv.c: (b >> 3) / 10; epoch_us only for bool
# and ushort codes, as a byte holds it)
TIME_FMT = {None: 0, "iso8601": 1, "epoch_ms": 2, "epoch_us": 3}


def csv_seed(text: str | bytes, fields: list[tuple[int, str] | tuple[int, str, str]],
             sep: str = ",", strict: bool = False,
             time_slot: int | None = None, arrival: tuple[int, str | None] | None = None,
             aligned: bool = False, unit: str = "s", batch: int = 5, ring: int = 1,
             quantum: int = 1, columnar: bool = False, header: bool = False) -> bytes:
    h0 = SEP[sep] | (4 if strict else 0) | (8 if time_slot is not None else 0) | \
        (16 if arrival else 0) | (32 if aligned else 0) | (UNIT[unit] << 6)
    h1 = BATCH[batch] | (ring << 3) | (quantum << 5)
    h2 = len(fields) | (16 if columnar else 0) | ((time_slot or 0) << 5) | (128 if header else 0)
    b = bytes([h0, h1, h2]) + bytes(((T[f[1]] - 1 + 10 * TIME_FMT[f[2] if len(f) > 2 else None])
                                     << 3) | (f[0] - 1) for f in fields)
    if arrival:
        p, t = arrival
        b += bytes([(0 if t is None else T[t]) << 3 | (p - 1)])
    return b + (text.encode() if isinstance(text, str) else text)


def csv_seeds() -> dict[str, bytes]:
    sales = (ROOT / "tests" / "data" / "sales.csv").read_text()
    ex = "".join((ROOT / "examples" / "csv" / "sales.csv").read_text().splitlines(True)[:12])
    quoted = ('1,"a,b",2001:db8::1,TRUE\r\n'
              '2,"say ""hi""",::ffff:10.0.0.1,false\n'
              '\n'
              '3,"multi\nline",fe80::1%eth0,1\n'
              '4,short\n'
              '5,x,1::,0,extra\n'
              '-6,,,\n'
              '7,"unterminated,::1,TRUE\n')
    numbers = ("18446744073709551615|-9223372036854775808|4294967296|0x1F|1e308|65536\n"
               "  42 |+7|-1|12abc|-0.0|nan\n"
               "0x|--1|99999999999999999999|inf|1.5e-320|65535\n")
    return {
        "tests_data_sales.csv": csv_seed(sales, [(1, "uint"), (2, "string"), (3, "ip"), (4, "uint"),
                                                 (5, "int"), (6, "float"), (7, "bool")],
                                         time_slot=0, aligned=True, columnar=True),
        "examples_sales_arrival_ms.csv": csv_seed(
            ex, [(1, "ullong"), (2, "string"), (3, "string"), (4, "ushort"), (5, "float"),
                 (6, "ip")], time_slot=0, arrival=(1, "llong"), aligned=True, unit="ms",
            batch=2, ring=0, quantum=2),
        "examples_sales_strict.csv": csv_seed(ex, [(1, "uint"), (6, "ip"), (5, "float")],
                                              strict=True, batch=1000, ring=3),
        "quoted_ipv6.csv": csv_seed(quoted, [(1, "int"), (2, "string"), (3, "ipv6"), (4, "bool"),
                                             (5, "string")], time_slot=0, aligned=True, batch=3),
        "bom_pipe_numbers.csv": csv_seed(b"\xef\xbb\xbf" + numbers.encode(),
                                         [(1, "ullong"), (2, "llong"), (3, "uint"), (4, "int"),
                                          (5, "float"), (6, "ushort"), (1, "float"), (2, "string")],
                                         sep="|", columnar=True, batch=8),
        "tab_float_time_ns.csv": csv_seed("1.5\t10.0.0.1\ta\n2.25\t10.0.0.256\tb\n-3\tx\tc\n"
                                          "nan\t1.2.3\td\n1e30\t255.255.255.255\te\n",
                                          [(1, "float"), (2, "ip"), (3, "string")], sep="\t",
                                          time_slot=0, aligned=True, unit="ns", quantum=7),
        # a header naming the columns in another order (fields a, b, c at
        # positions 1-3), ISO-8601 and epoch times
        "header_iso_times.csv": csv_seed(
            ' c ,"b", A ,x\n2026-03-01T12:00:05Z,7,"1772366405250",q\n'
            "2026-03-01 12:00:05.250+01:00,8,1772366405251,r\n"
            "1969-12-31T23:59:59.5,9,-1,s\nnot a time,x,1.5,t\n2026-02-29,1,2\n",
            [(1, "ullong", "epoch_ms"), (2, "uint"), (3, "llong", "iso8601"), (3, "string")],
            time_slot=2, header=True, aligned=True, batch=2),
        # no header option: a first line naming the fields is skipped
        "header_skipped.csv": csv_seed("a,b,c\n1,2026-03-01,x\n2,2026-03-02T00:00Z,y\n",
                                       [(1, "uint"), (2, "llong", "iso8601"), (3, "string")],
                                       strict=True, columnar=True),
    }


# ---- Arrow ----------------------------------------------------------------

FMT = ["b", "c", "C", "s", "S", "i", "I", "l", "L", "f", "g", "u", "U", "z", "Z", "w:16"]
COMPAT = {  # as gsq_arrow_compatible: the GSQL types each format can give, in type order
    "b": ["bool"], "f": ["float"], "g": ["float"], "w:16": ["ipv6"],
    "u": ["ip", "ipv6", "string"], "U": ["ip", "ipv6", "string"],
    "z": ["string"], "Z": ["string"],
}
for _f in "cCsSiIlL":
    COMPAT[_f] = ["bool", "ushort", "uint", "int", "ullong", "llong", "float", "ip"]
WIDTH = {"b": 0, "c": 1, "C": 1, "s": 2, "S": 2, "i": 4, "I": 4, "l": 8, "L": 8, "f": 4,
         "g": 8, "u": 4, "U": 8, "z": 4, "Z": 8, "w:16": 16}


def arrow_seed(cols: list[tuple[str, str]], batches: list[dict], columnar: bool = False,
               batch: int = 64, time: bool = False, given: bool = True, flush: bool = False,
               unit: str = "s") -> bytes:
    """cols: (format, GSQL type); batches: dicts with `len`, optional `off` (3),
    `nulls` (struct: 0-3), per-column `children` entries (coff, extra, short,
    nulls, values) where values is a list of ints (fixed width), bools, or strings."""
    h0 = (len(cols) - 1) | (8 if columnar else 0) | (16 if given else 0) | (32 if flush else 0) | \
        (64 if time else 0)
    h1 = BATCH[batch] | (len(batches) << 3) | (UNIT[unit] << 6)
    out = bytes([h0, h1])
    for fmt, t in cols:
        out += bytes([FMT.index(fmt), COMPAT[fmt].index(t)])
    for b in batches:
        n, off = b["len"], b.get("off", 0)
        assert n < 64
        out += bytes([n | (128 if off else 0), b.get("nulls", 0)])
        if b.get("nulls", 0):
            out += bytes([0xf5] * ((off + n + 7) // 8))
        for (fmt, _), ch in zip(cols, b["children"]):
            coff, extra, short, nulls, vals = ch
            out += bytes([coff | (extra << 3) | (short << 5) | (nulls << 6)])
            elems = coff + off + n + extra - short
            vals = (list(vals) * (elems // max(len(vals), 1) + 1))[:elems] if vals else [0] * elems
            w = WIDTH[fmt]
            if fmt in ("u", "U", "z", "Z"):
                data = b"".join(v.encode() for v in vals)
                assert len(data) < 256
                out += bytes([len(data)])
                prev = 0
                for k in range(elems):  # offsets[k], as a step from offsets[k - 1]
                    o = sum(len(v.encode()) for v in vals[:k])
                    out += bytes([o - prev]) if o - prev < 128 else b"\x80" + struct.pack("<q", o)
                    prev = o
                out += data  # offsets[elems] is the data's length
                if not data:
                    out += b"\x01"
            elif fmt == "b":
                bits = sum((1 << k) for k, v in enumerate(vals) if v)
                out += bits.to_bytes((elems + 7) // 8, "little")
            elif fmt == "w:16":
                out += b"".join(int(v).to_bytes(16, "big") for v in vals)
            elif fmt in ("f", "g"):
                out += b"".join(struct.pack("<f" if w == 4 else "<d", float(v)) for v in vals)
            else:
                signed = fmt.islower()
                out += b"".join(int(v).to_bytes(w, "little", signed=signed) for v in vals)
            if nulls:
                out += bytes([0xef] * ((elems + 7) // 8))
    return out


def arrow_seeds() -> dict[str, bytes]:
    ints = [("I", "uint"), ("l", "llong"), ("s", "int"), ("C", "bool"), ("L", "ullong"),
            ("c", "float"), ("S", "ushort"), ("i", "ip")]
    strs = [("u", "string"), ("U", "ip"), ("u", "ipv6"), ("z", "string"), ("Z", "string"),
            ("w:16", "ipv6"), ("b", "bool"), ("g", "float")]
    ivals = [[1700000000 + k for k in range(8)], [-5, 7, 1 << 40], [-32768, 1, 32767], [0, 1, 2],
             [0, 1 << 63], [-128, 127], [65535, 0], [0x0a000001, 0x7fffffff, -1]]
    svals = [["ab", "", "héllo"], ["10.0.0.1", "1.2.3.4", "x"], ["::1", "2001:db8::2", "bad"],
             ["\x00\x01", "z"], ["large"], [1, 2 ** 128 - 1], [True, False, True], [1.5, -0.0]]

    def kids(vals, nulls=0, coff=0, extra=0):
        return [(coff, extra, 0, nulls, v) for v in vals]

    return {
        "ints_rows.arrow": arrow_seed(ints, [{"len": 8, "children": kids(ivals)},
                                             {"len": 3, "off": 3, "children": kids(ivals, 1, 2, 1)}],
                                      batch=5, time=True),
        "ints_columnar.arrow": arrow_seed(ints, [{"len": 20, "children": kids(ivals)},
                                                 {"len": 0, "children": kids(ivals)},
                                                 {"len": 5, "nulls": 2, "children": kids(ivals, 2)}],
                                          columnar=True, time=True, unit="ms"),
        "strings_rows.arrow": arrow_seed(strs, [{"len": 3, "children": kids(svals)},
                                                {"len": 4, "off": 3, "nulls": 1,
                                                 "children": kids(svals, 3, 1)}], batch=2, flush=True),
        "strings_columnar.arrow": arrow_seed(strs, [{"len": 6, "children": kids(svals, 0, 4)}],
                                             columnar=True, given=False),
        "short_child.arrow": arrow_seed([("i", "int"), ("u", "string")],
                                        [{"len": 4, "children": [(0, 0, 1, 0, [1]), (0, 0, 0, 0, ["a"])]}]),
    }


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "corpus"
    for target, seeds in (("pcap", pcap_seeds()), ("csv", csv_seeds()), ("arrow", arrow_seeds())):
        d = out / target
        d.mkdir(parents=True, exist_ok=True)
        for name, data in seeds.items():
            (d / f"seed_{name}").write_bytes(data)
        print(f"{target}: {len(seeds)} seeds in {d}")


if __name__ == "__main__":
    main()
