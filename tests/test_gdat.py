"""Tigon's GDAT files as an input (gdat:PATH) and an output format (--format
gdat), checked against a reference reader and writer written here from the
layout Tigon's gsgdatprint, gdat2ascii and schemaparser use (independent of
runtime_c/sources/gdat_format.c):

    "GDAT\\nVERSION:4\\nSCHEMALENGTH:<n>\\n" then n bytes of schema text
    (FTA{ STREAM name { TYPE field; ... } ... }, NUL-terminated), then records:
    a big-endian u32 length and the tuple -- the fields packed in order
    (little-endian; strings as {length, offset, reserved}), one tuple-kind
    byte, then the strings' bytes.
"""
from __future__ import annotations

import ipaddress
import json
import math
import struct

import pytest

import gsqlc as api

# ---------------------------------------------------------------- reference

SIZES = {"BOOL": 4, "USHORT": 4, "UINT": 4, "INT": 4, "IP": 4, "ULLONG": 8, "LLONG": 8,
         "FLOAT": 8, "IPV6": 16, "V_STR": 12, "TIMEVAL": 16}


def schema_text(name, fields, extra=""):
    lines = "".join(f"\t{t} {f} {extra};\n" for f, t in fields)
    return (f"FTA{{\n\nSTREAM {name} {{\n{lines}}}\n\nDEFINE{{\n\tquery_name '{name}';\n}}\n\n"
            f"PARAM{{\n}}\nSELECT {', '.join(f for f, _ in fields)} FROM x\n}}\n\n")


def pack_value(t, v):
    if t in ("UINT", "USHORT"):
        return struct.pack("<I", v)
    if t == "BOOL":
        return struct.pack("<I", 1 if v else 0)
    if t == "INT":
        return struct.pack("<i", v)
    if t == "ULLONG":
        return struct.pack("<Q", v)
    if t == "LLONG":
        return struct.pack("<q", v)
    if t == "FLOAT":
        return struct.pack("<d", v)
    if t == "IP":
        return struct.pack("<I", int(ipaddress.IPv4Address(v)))
    if t == "IPV6":
        return ipaddress.IPv6Address(v).packed
    if t == "TIMEVAL":
        return struct.pack("<qq", int(v), 0)
    raise AssertionError(t)


def gdat_record(fields, row, kind=0):
    fixed = sum(SIZES[t] for _, t in fields)
    head, tail = b"", b""
    for (_, t), v in zip(fields, row):
        if t == "V_STR":
            data = v.encode() if isinstance(v, str) else v
            head += struct.pack("<III", len(data), fixed + 1 + len(tail), 0)
            tail += data
        else:
            head += pack_value(t, v)
    tup = head + bytes([kind]) + tail
    return struct.pack(">I", len(tup)) + tup


def gdat_file(name, fields, rows, version=4, schema=None):
    text = (schema or schema_text(name, fields)).encode() + b"\0"
    out = b"GDAT\nVERSION:%d\nSCHEMALENGTH:%d\n" % (version, len(text)) + text
    return out + b"".join(gdat_record(fields, r) for r in rows)


def read_gdat(data):
    """(stream name, [(field, type)], rows) of a GDAT file's bytes."""
    assert data.startswith(b"GDAT\nVERSION:")
    _, ver, slen, rest = data.split(b"\n", 3)
    assert ver.startswith(b"VERSION:") and slen.startswith(b"SCHEMALENGTH:")
    n = int(slen[len(b"SCHEMALENGTH:"):])
    text, body = rest[:n], rest[n:]
    assert text.endswith(b"\0")
    decl = text.decode().split("STREAM", 1)[1]
    name, inner = decl.split("{", 1)
    inner = inner.split("}", 1)[0]
    fields = [tuple(d.split()[:2])[::-1] for d in inner.split(";") if d.strip()]
    fixed = sum(SIZES[t] for _, t in fields)
    rows, i = [], 0
    while i < len(body):
        (length,) = struct.unpack_from(">I", body, i)
        tup = body[i + 4:i + 4 + length]
        i += 4 + length
        assert len(tup) == length and length >= fixed
        row, off = [], 0
        for _, t in fields:
            size = SIZES[t]
            raw = tup[off:off + size]
            off += size
            if t == "V_STR":
                ln, at, _res = struct.unpack("<III", raw)
                row.append(tup[at:at + ln].decode())
            elif t in ("UINT", "USHORT"):
                row.append(struct.unpack("<I", raw)[0])
            elif t == "BOOL":
                row.append(struct.unpack("<I", raw)[0] != 0)
            elif t == "INT":
                row.append(struct.unpack("<i", raw)[0])
            elif t == "ULLONG":
                row.append(struct.unpack("<Q", raw)[0])
            elif t == "LLONG":
                row.append(struct.unpack("<q", raw)[0])
            elif t == "FLOAT":
                row.append(struct.unpack("<d", raw)[0])
            elif t == "IP":
                row.append(str(ipaddress.IPv4Address(struct.unpack("<I", raw)[0])))
            elif t == "IPV6":
                row.append(str(ipaddress.IPv6Address(raw)))
        assert tup[fixed] == 0   # a data tuple
        rows.append(tuple(row))
    return name.strip(), fields, rows


def stats(err):
    """The --stats JSON object printed on stderr."""
    return json.JSONDecoder().raw_decode(err[err.index("{"):])[0]


def ipv6_text(a):
    """GSQL's IPV6 text form: eight groups of four hex digits."""
    return ":".join(f"{g:04x}" for g in struct.unpack(">8H", ipaddress.IPv6Address(a).packed))


# ---------------------------------------------------------------- data

# every type Tigon writes in GDAT and gsqlc reads: (field, GDAT type, PROTOCOL type)
ALL = [("t", "UINT", "uint"), ("u", "USHORT", "ushort"), ("i", "INT", "int"),
       ("ul", "ULLONG", "ullong"), ("ll", "LLONG", "llong"), ("f", "FLOAT", "float"),
       ("b", "BOOL", "bool"), ("a4", "IP", "IP"), ("a6", "IPV6", "IPV6"), ("s", "V_STR", "string")]
FIELDS = [(n, g) for n, g, _ in ALL]


def make_rows(n=200):
    rows = []
    for k in range(n):
        rows.append((k, (k * 977) % 65536, -(k * 7919) + 1000, (1 << 63) + k * 3,
                     -(1 << 62) + k * 11, k * 0.25 - 3.5, k % 3 == 0,
                     f"10.{k % 256}.{k // 256}.{(k * 7) % 256}",
                     f"2001:db8::{k:x}" if k % 5 else "::",
                     "" if k % 7 == 0 else f"s{k}|x" * (k % 4)))
    return rows


def schema_file(path, accessor="csv", fields=ALL):
    decl = "".join(f"    {pt} {n} get_{accessor}_{pt.lower() if pt not in ('IP', 'IPV6') else pt.lower()}"
                   f"_pos{i + 1}{' (increasing)' if n == 't' else ''};\n"
                   for i, (n, _, pt) in enumerate(fields))
    path.write_text(f"PROTOCOL G {{\n{decl}}}\n")
    return path


def pipe_line(row):
    t, u, i, ul, ll, f, b, a4, a6, s = row
    return (f"{t}|{u}|{i}|{ul}|{ll}|{f:f}|{'TRUE' if b else 'FALSE'}|{a4}|{ipv6_text(a6)}|{s}")


QUERY = ("DEFINE { query_name 'all'; }\n"
         "SELECT t, u, i, ul, ll, f, b, a4, a6, s FROM G;\n")


@pytest.fixture
def files(tmp_path):
    schema_file(tmp_path / "schema.txt")
    (tmp_path / "q.gsql").write_text(QUERY)
    rows = make_rows()
    (tmp_path / "in.gdat").write_bytes(gdat_file("tigon_out", FIELDS, rows))
    return tmp_path, rows


# ---------------------------------------------------------------- reading

def test_cli_reads_every_type(gsqlc, files):
    d, rows = files
    p = gsqlc("run", d / "q.gsql", "--schema", d / "schema.txt", "--source",
              f"gdat:{d / 'in.gdat'}")
    assert p.returncode == 0, p.err
    assert p.out.splitlines() == [pipe_line(r) for r in rows]
    assert p.err == ""


def test_python_api_reads_every_type(files):
    d, rows = files
    qs = api.compile([d / "q.gsql"], schema=d / "schema.txt")
    got = qs.run(sources={"": f"gdat:{d / 'in.gdat'}"}, ip_format="int").to_arrow().to_pylist()
    assert len(got) == len(rows)
    for g, r in zip(got, rows):
        assert (g["t"], g["u"], g["i"], g["ul"], g["ll"], g["b"], g["s"]) == \
            (r[0], r[1], r[2], r[3], r[4], r[6], r[9])
        assert g["f"] == r[5]
        assert g["a4"] == int(ipaddress.IPv4Address(r[7]))
        assert g["a6"] == ipaddress.IPv6Address(r[8]).packed


def test_a_bare_path_to_a_gdat_file_is_read_as_gdat(gsqlc, files):
    d, rows = files
    p = gsqlc("run", d / "q.gsql", "--schema", d / "schema.txt", "--source",
              f"default={d / 'in.gdat'}")
    assert p.returncode == 0, p.err
    assert len(p.out.splitlines()) == len(rows)


def test_tigon_layout_by_hand_with_gdat_accessors(gsqlc, tmp_path):
    """A file as gsgdatprint writes it -- Tigon's schema text with
    accessors, modifiers and DEFINE/PARAM parts, an empty record, fields in
    another order than the PROTOCOL's and one the query does not read -- read
    by a PROTOCOL of Tigon's get_gdat_* accessors, matched by name."""
    fields = [("time", "UINT"), ("unused", "TIMEVAL"), ("srcIP", "IP"), ("name", "V_STR"),
              ("bytes", "ULLONG")]
    text = ("FTA{\n\nSTREAM ping {\n"
            "\tUINT time get_gdat_uint_pos1 ( INCREASING ) ;\n"
            "\tTIMEVAL unused  ;\n"
            "\tIP srcIP  ;   // the source\n"
            "\tV_STR name  ( subtype 'x' ) ;\n"
            "\tULLONG bytes  ;\n}\n\n"
            "DEFINE{\n\tquery_name 'ping';\n\t_referenced_ifaces '[default]';\n}\n\n"
            "PARAM{\n}\nSELECT time, srcIP, name, bytes FROM eth0.PKT\n}\n\n")
    rows = [(100 + k, 0, f"192.168.0.{k}", f"host-{k}", k * 1500) for k in range(5)]
    data = gdat_file("ping", fields, rows, schema=text)
    hdr_end = data.index(b"\0") + 1
    data = data[:hdr_end] + struct.pack(">I", 0) + data[hdr_end:]  # an empty record
    (tmp_path / "ping.gdat").write_bytes(data)
    (tmp_path / "schema.txt").write_text(
        "PROTOCOL PING {\n"
        "    uint time get_gdat_uint_pos1 (increasing);\n"
        "    ullong bytes get_gdat_ullong_pos2;\n"
        "    IP srcIP get_gdat_ip_pos3;\n"
        "    string name get_gdat_v_str_pos4;\n}\n")
    (tmp_path / "q.gsql").write_text(
        "SELECT time, name, srcIP, bytes FROM PING WHERE bytes >= 3000")
    p = gsqlc("run", tmp_path / "q.gsql", "--schema", tmp_path / "schema.txt", "--source",
              f"gdat:{tmp_path / 'ping.gdat'}", "--stats")
    assert p.returncode == 0, p.err
    assert p.out.splitlines() == [f"{t}|{n}|{a}|{b}" for t, _, a, n, b in rows if b >= 3000]
    src = stats(p.err)["sources"][0]
    assert (src["records_read"], src["rows_rejected"]) == (5, 0)


def test_an_aggregation_over_gdat_matches_python(gsqlc, files):
    d, rows = files
    (d / "agg.gsql").write_text("SELECT tb, count(*) AS n, sum(ul) AS s, max(s) AS m FROM G "
                                "GROUP BY t / 50 AS tb")
    p = gsqlc("run", d / "agg.gsql", "--schema", d / "schema.txt", "--source",
              f"gdat:{d / 'in.gdat'}")
    assert p.returncode == 0, p.err
    want = {}
    for r in rows:
        n, s, m = want.get(r[0] // 50, (0, 0, ""))
        want[r[0] // 50] = (n + 1, (s + r[3]) % (1 << 64), max(m, r[9]))
    assert sorted(p.out.splitlines()) == sorted(f"{k}|{n}|{s}|{m}"
                                                for k, (n, s, m) in want.items())


# ---------------------------------------------------------------- writing, round trips

def test_cli_writes_gdat_the_reference_reads(gsqlc, files):
    d, rows = files
    out = d / "out.gdat"
    p = gsqlc("run", d / "q.gsql", "--schema", d / "schema.txt", "--source",
              f"gdat:{d / 'in.gdat'}", "--format", "gdat", "--output-file", out)
    assert p.returncode == 0, p.err
    name, fields, got = read_gdat(out.read_bytes())
    assert name == "all"
    assert fields == FIELDS
    want = [r[:8] + (str(ipaddress.IPv6Address(r[8])),) + r[9:] for r in rows]
    assert got == want


def test_round_trip_through_the_cli_is_byte_identical(gsqlc, files):
    """gsqlc's GDAT output read back by gsqlc and written again: the same
    bytes, and the same rows as the first input."""
    d, rows = files
    first, second = d / "1.gdat", d / "2.gdat"
    for src, dst in ((d / "in.gdat", first), (first, second)):
        p = gsqlc("run", d / "q.gsql", "--schema", d / "schema.txt", "--source",
                  f"gdat:{src}", "--format", "gdat", "--output-file", dst)
        assert p.returncode == 0, p.err
    assert first.read_bytes() == second.read_bytes()
    p = gsqlc("run", d / "q.gsql", "--schema", d / "schema.txt", "--source", f"gdat:{second}")
    assert p.out.splitlines() == [pipe_line(r) for r in rows]


def test_round_trip_csv_to_gdat_through_the_python_api(gsqlc, tmp_path):
    """CSV in, GDAT out through the CLI, then read through the Python API:
    the values of every type as the CSV gave them."""
    rows = make_rows(60)
    (tmp_path / "schema.txt").write_text(
        "PROTOCOL C {\n" + "".join(
            f"    {pt} {n} get_csv_{pt.lower()}_pos{i + 1};\n" for i, (n, _, pt) in enumerate(ALL))
        + "}\n")
    schema_file(tmp_path / "g.txt")
    (tmp_path / "c.gsql").write_text("DEFINE { query_name 'all'; }\n"
                                     "SELECT t, u, i, ul, ll, f, b, a4, a6, s FROM C;\n")
    (tmp_path / "q.gsql").write_text(QUERY)
    csv = "".join(",".join(["TRUE" if v is True else "FALSE" if v is False else repr(v)
                            if isinstance(v, float) else str(v) for v in r]) + "\n"
                  for r in rows)
    (tmp_path / "in.csv").write_text(csv)
    p = gsqlc("run", tmp_path / "c.gsql", "--schema", tmp_path / "schema.txt", "--source",
              f"csv:{tmp_path / 'in.csv'}", "--format", "gdat", "--output-file",
              tmp_path / "o.gdat")
    assert p.returncode == 0, p.err
    qs = api.compile([tmp_path / "q.gsql"], schema=tmp_path / "g.txt")
    got = qs.table({"": f"gdat:{tmp_path / 'o.gdat'}"}).to_pylist()
    assert [(g["t"], g["u"], g["i"], g["ul"], g["ll"], g["f"], g["b"], g["a4"], g["a6"], g["s"])
            for g in got] == [r[:8] + (ipv6_text(r[8]), r[9]) for r in rows]


# ---------------------------------------------------------------- bad input

def test_truncated_file_is_counted_and_reported(gsqlc, files):
    d, rows = files
    data = (d / "in.gdat").read_bytes()
    (d / "cut.gdat").write_bytes(data[:-7])
    p = gsqlc("run", d / "q.gsql", "--schema", d / "schema.txt", "--source",
              f"gdat:{d / 'cut.gdat'}", "--stats")
    assert p.returncode == 0, p.err
    assert p.out.splitlines() == [pipe_line(r) for r in rows[:-1]]
    assert f"1 of {len(rows)} records rejected as malformed (the file is truncated)" in p.err
    assert "fewer bytes are left" in p.err
    assert stats(p.err)["sources"][0]["truncated"] is True


def test_corrupt_records_are_counted_and_the_rest_read(gsqlc, files):
    d, rows = files
    data = bytearray(gdat_file("x", FIELDS, rows[:3]))
    start = data.index(b"\0") + 1
    # record 2: its string's offset points past the record
    second = start + 4 + struct.unpack_from(">I", data, start)[0]
    s_off = second + 4 + sum(SIZES[t] for _, t in FIELDS[:-1]) + 4
    struct.pack_into("<I", data, s_off, 10_000)
    # then a record too short for the fixed part, and a ushort out of range
    data += struct.pack(">I", 5) + b"\1\2\3\4\5"
    bad = bytearray(gdat_record(FIELDS, rows[4]))
    struct.pack_into("<I", bad, 4 + 4, 70_000)
    data += bad + gdat_record(FIELDS, rows[5])
    (d / "bad.gdat").write_bytes(bytes(data))
    p = gsqlc("run", d / "q.gsql", "--schema", d / "schema.txt", "--source",
              f"gdat:{d / 'bad.gdat'}")
    assert p.returncode == 0, p.err
    assert p.out.splitlines() == [pipe_line(r) for r in (rows[0], rows[2], rows[5])]
    assert "3 of 6 records rejected as malformed:" in p.err
    assert "record 2" in p.err and "field 's': its string lies outside the record" in p.err
    assert "record 4" in p.err and "shorter than the" in p.err
    assert "record 5" in p.err and "field 'u': a USHORT above 65535" in p.err


def test_corrupt_records_are_counted_through_the_python_api(files):
    d, rows = files
    data = (d / "in.gdat").read_bytes() + struct.pack(">I", 80) + b"abc"  # cut short
    (d / "bad.gdat").write_bytes(data)
    qs = api.compile([d / "q.gsql"], schema=d / "schema.txt")
    run = qs.run(sources={"": f"gdat:{d / 'bad.gdat'}"})
    assert run.to_arrow().num_rows == len(rows)
    src = run.stats["sources"][0]
    assert (src["kind"], src["rows_rejected"], src["truncated"]) == ("gdat", 1, True)


@pytest.mark.parametrize("data,needle", [
    (b"GDAX\nVERSION:4\n", "not a GDAT file"),
    (b"GDAT\nVERSION:9\nSCHEMALENGTH:3\nabc", "GDAT version 9"),
    (b"GDAT\nVERSION:4\nSCHEMALENGTH:400\nFTA{", "the file ends inside its schema"),
    (b"GDAT\nVERSION:4\nSCHEMALENGTH:28\nFTA{ STREAM s { BLOB x; } }\0", "unknown type 'BLOB'"),
    (b"GDAT\nVERSION:4\nSCHEMALENGTH:6\nFTA{}\0", "declares no STREAM"),
])
def test_a_bad_header_is_a_usage_error_naming_the_file(gsqlc, files, data, needle):
    d, _ = files
    (d / "h.gdat").write_bytes(data)
    p = gsqlc("run", d / "q.gsql", "--schema", d / "schema.txt", "--source",
              f"gdat:{d / 'h.gdat'}")
    assert p.returncode == 2, p.err
    assert f"gdat:{d / 'h.gdat'}" in p.err and needle in p.err


def test_a_field_the_file_lacks_is_an_error_naming_it(gsqlc, files):
    d, rows = files
    fields = [f for f in FIELDS if f[0] != "ll"]
    (d / "less.gdat").write_bytes(gdat_file("x", fields,
                                            [r[:4] + r[5:] for r in rows[:3]]))
    p = gsqlc("run", d / "q.gsql", "--schema", d / "schema.txt", "--source",
              f"gdat:{d / 'less.gdat'}")
    assert p.returncode == 1, p.err
    assert "has no field 'll' (llong) of PROTOCOL G" in p.err
    assert "its schema (STREAM x) has: UINT t, USHORT u" in p.err
    assert p.out == ""


def test_a_field_of_another_type_is_an_error_naming_it(gsqlc, files):
    d, rows = files
    fields = [(n, "UINT" if n == "ul" else t) for n, t in FIELDS]
    (d / "other.gdat").write_bytes(gdat_file("x", fields, [r[:3] + (5,) + r[4:]
                                                          for r in rows[:3]]))
    p = gsqlc("run", d / "q.gsql", "--schema", d / "schema.txt", "--source",
              f"gdat:{d / 'other.gdat'}")
    assert p.returncode == 1, p.err
    assert "field 'ul' of PROTOCOL G is ullong, but gdat:" in p.err
    assert "stores 'ul' as UINT" in p.err
    qs = api.compile([d / "q.gsql"], schema=d / "schema.txt")
    with pytest.raises(api.RunError, match="stores 'ul' as UINT"):
        qs.table({"": f"gdat:{d / 'other.gdat'}"})


def test_gdat_output_of_several_queries_is_refused(gsqlc, files):
    d, _ = files
    (d / "two.gsql").write_text("DEFINE { query_name 'a'; }\nSELECT t FROM G;\n"
                                "DEFINE { query_name 'b'; }\nSELECT u FROM G;\n")
    p = gsqlc("run", d / "two.gsql", "--schema", d / "schema.txt", "--source",
              f"gdat:{d / 'in.gdat'}", "--format", "gdat", "--output-file", d / "o.gdat")
    assert p.returncode == 2
    assert "--format gdat writes one query's output" in p.err


def test_float_special_values_round_trip(gsqlc, tmp_path):
    fields = [("t", "UINT"), ("f", "FLOAT")]
    vals = [0.0, -0.0, 1e308, -1e-308, math.inf, -math.inf, 5e-324]
    (tmp_path / "f.gdat").write_bytes(gdat_file("x", fields, list(enumerate(vals))))
    (tmp_path / "s.txt").write_text("PROTOCOL F { uint t get_gdat_uint_pos1; "
                                    "float f get_gdat_float_pos2; }\n")
    (tmp_path / "q.gsql").write_text("SELECT t, f FROM F")
    p = gsqlc("run", tmp_path / "q.gsql", "--schema", tmp_path / "s.txt", "--source",
              f"gdat:{tmp_path / 'f.gdat'}", "--format", "gdat", "--output-file",
              tmp_path / "o.gdat")
    assert p.returncode == 0, p.err
    _, _, got = read_gdat((tmp_path / "o.gdat").read_bytes())
    assert [struct.pack("<d", f) for _, f in got] == [struct.pack("<d", v) for v in vals]
