"""IP values in one form at every interface (issue 17, part 1): text by
default -- dotted quad, and eight groups of four lower-case hex digits for
IPV6 (GSQL.md's text forms, what the CLI prints) -- in the CLI's formats,
Arrow batches and pandas through the API (one thread and split runs),
read_pcap and Spark; ip_format='int' / --ip-format int gives the integers
(IPV6: 16 bytes in Arrow and Spark, its 128-bit integer in text outputs).
Inputs take either form.  Every interface is checked against the same
expected values, made by Python's ipaddress from the addresses the inputs
were made of."""
from __future__ import annotations

import csv
import io
import ipaddress
import json
import os
import sys

import numpy as np
import pyarrow as pa
import pytest

import gsqlc
from test_read_pcap import eth, ipv4, ipv6, pcap_bytes, udp

V4 = ["10.0.0.1", "0.0.0.0", "255.255.255.255", "192.168.1.200", "127.0.0.1"]
V6 = ["2001:db8::1", "::", "fe80::1:2", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "::1"]

PACKET_Q = ("DEFINE { query_name 'v4'; }\n"
            "SELECT time, srcIP, destIP FROM IPV4 WHERE protocol = 17;\n"
            "DEFINE { query_name 'v6'; }\n"
            "SELECT time, srcIPv6, destIPv6 FROM IPV6 WHERE protocol = 17;\n")

ROW_SCHEMA = """
PROTOCOL R {
    uint t get_csv_uint_pos1 (increasing, required);
    IP   a get_csv_ip_pos2;
    IPV6 b get_csv_ipv6_pos3;
}
"""
ROW_Q = "DEFINE { query_name 'rows'; }\nSELECT t, a, b FROM [csv].R WHERE t >= 0\n"


def text4(s) -> str:
    return str(ipaddress.IPv4Address(s))


def text6(s) -> str:
    return ipaddress.IPv6Address(s).exploded


@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    """A capture of UDP datagrams, IPv4 then IPv6, packet i at second i + 1:
    source V4[i] / V6[i], destination the next address of the list."""
    d = tmp_path_factory.mktemp("ipfmt")
    recs = []
    for i, src in enumerate(V4):
        recs.append((i + 1, 0, eth(ipv4(17, udp(1000 + i, 53, b"x"), src=src,
                                        dst=V4[(i + 1) % len(V4)]))))
    for i, src in enumerate(V6):
        recs.append((10 + i, 0, eth(ipv6(17, udp(2000 + i, 53, b"y"), src=src,
                                         dst=V6[(i + 1) % len(V6)]), etype=0x86DD)))
    pcap = d / "ips.pcap"
    pcap.write_bytes(pcap_bytes(recs))
    (d / "q.gsql").write_text(PACKET_Q)
    return d


def want_packets(form: str) -> dict:
    """The expected rows of v4 and v6 over `capture`, in `form`: 'text',
    'int' (the CLI's integers) or 'arrow-int' (uint32 and 16 bytes)."""
    def f4(s):
        return text4(s) if form == "text" else int(ipaddress.IPv4Address(s))

    def f6(s):
        a = ipaddress.IPv6Address(s)
        return a.exploded if form == "text" else int(a) if form == "int" else a.packed
    return {
        "v4": [(i + 1, f4(s), f4(V4[(i + 1) % len(V4)])) for i, s in enumerate(V4)],
        "v6": [(10 + i, f6(s), f6(V6[(i + 1) % len(V6)])) for i, s in enumerate(V6)],
    }


def cli_rows(p, fmt: str) -> list[tuple]:
    assert p.returncode == 0, p.err
    if fmt == "pipe":
        rows = [l.split("|") for l in p.out.splitlines()]
    elif fmt == "csv":
        rows = list(csv.reader(io.StringIO(p.out)))[1:]
    else:
        rows = [list(json.loads(l).values()) for l in p.out.splitlines()]
    return [tuple(int(v) if isinstance(v, str) and v.isdigit() else v for v in r) for r in rows]


@pytest.mark.parametrize("fmt", ["pipe", "csv", "jsonl"])
@pytest.mark.parametrize("form", ["text", "int"])
def test_cli(gsqlc, capture, fmt, form):
    for q in ("v4", "v6"):
        args = ["run", capture / "q.gsql", "--source", f"eth0=pcap:{capture / 'ips.pcap'}",
                "--output", q, "--format", fmt]
        if form == "int":
            args += ["--ip-format", "int"]
        got = cli_rows(gsqlc(*args), fmt)
        assert got == want_packets(form)[q], (q, fmt, form)
        if fmt == "jsonl":   # text as JSON strings, integers as JSON numbers
            first = json.loads(gsqlc(*args).out.splitlines()[0])
            assert all(isinstance(v, int if form == "int" else str)
                       for k, v in first.items() if k != "time")


def test_cli_default_is_text_and_bad_form_is_a_usage_error(gsqlc, capture):
    args = ["run", capture / "q.gsql", "--source", f"eth0=pcap:{capture / 'ips.pcap'}",
            "--output", "v4"]
    assert gsqlc(*args).out == gsqlc(*args, "--ip-format", "text").out
    p = gsqlc(*args, "--ip-format", "hex")
    assert p.returncode == 2 and "--ip-format" in p.err and "'hex'" in p.err


def test_api_arrow_and_pandas(capture):
    qs = gsqlc.compile([capture / "q.gsql"])
    src = {"eth0": f"pcap:{capture / 'ips.pcap'}"}
    for q in ("v4", "v6"):
        t = qs.table(src, q)
        assert t.schema.field(1).type == pa.string() == t.schema.field(2).type
        assert t.schema == qs.output_schema(q)
        df = t.to_pandas()
        assert list(df.itertuples(index=False, name=None)) == want_packets("text")[q]
        ti = qs.table(src, q, ip_format="int")
        assert ti.schema.field(1).type == (pa.uint32() if q == "v4" else pa.binary(16))
        assert ti.schema.equals(qs.output_schema(q, ip_format="int"), check_metadata=True)
        assert [tuple(r.values()) for r in ti.to_pylist()] == want_packets("arrow-int")[q]
        # iterated batches, and collect(), in the same forms
        assert pa.Table.from_batches(list(qs.run(src, q))).equals(t)
        assert pa.Table.from_batches(qs.run(src, q, ip_format="int").collect()).equals(ti)
    with pytest.raises(gsqlc.UsageError, match="ip_format must be 'text' or 'int'"):
        qs.run(src, "v4", ip_format="hex")


def test_read_pcap_forms(capture):
    pcap = capture / "ips.pcap"
    t, ti = gsqlc.read_pcap(pcap), gsqlc.read_pcap(pcap, ip_format="int")
    for name in ("srcIP", "destIP", "srcIPv6", "destIPv6"):
        assert t.schema.field(name).type == pa.string()
    assert ti.schema.field("srcIP").type == pa.uint32()
    assert ti.schema.field("srcIPv6").type == pa.binary(16)
    n4 = len(V4)
    assert t.column("srcIP").to_pylist() == [text4(s) for s in V4] + [None] * len(V6)
    assert t.column("srcIPv6").to_pylist() == [None] * n4 + [text6(s) for s in V6]
    assert ti.column("srcIP").to_pylist()[:n4] == [int(ipaddress.IPv4Address(s)) for s in V4]
    assert ti.column("srcIPv6").to_pylist()[n4:] == [ipaddress.IPv6Address(s).packed for s in V6]
    # the other columns are the same
    others = [c for c in t.column_names if "IP" not in c]
    assert t.select(others).equals(ti.select(others))
    with pytest.raises(gsqlc.UsageError):
        gsqlc.read_pcap(pcap, ip_format="dotted")


def test_packet_tables_in_either_form_give_the_same_results(capture):
    """A PROTOCOL PACKETS query reads read_pcap's tables in either form."""
    q = capture / "packets.gsql"
    q.write_text("DEFINE { query_name 'v4'; }\n"
                 "SELECT time, srcIP, destIP FROM PACKETS WHERE ipversion = 4;\n"
                 "DEFINE { query_name 'v6'; }\n"
                 "SELECT time, srcIPv6, destIPv6 FROM PACKETS WHERE ipversion = 6;\n")
    qs = gsqlc.compile([q], schema=gsqlc.PACKET_TABLE_SCHEMA)
    (iface,) = qs.interfaces()
    pcap = capture / "ips.pcap"
    for name in ("v4", "v6"):
        as_text = qs.table({iface: gsqlc.read_pcap(pcap)}, name)
        as_int = qs.table({iface: gsqlc.read_pcap(pcap, ip_format="int")}, name)
        assert as_text.equals(as_int)
        assert [tuple(r.values()) for r in as_text.to_pylist()] == want_packets("text")[name]


def rows_table(n: int, seed: int = 7):
    """n rows of R: t increasing, a random IPv4 (uint32), b random IPV6 bytes."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    a[:3] = [0, 0xFFFFFFFF, 0x0A000001]
    b = rng.integers(0, 256, (n, 16), dtype=np.uint8)
    b[0], b[1] = 0, 255
    return pa.table({"t": pa.array(np.arange(n) // 1000, pa.uint32()), "a": pa.array(a),
                     "b": pa.array([bytes(x) for x in b], pa.binary(16))})


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    d = tmp_path_factory.mktemp("iprows")
    (d / "schema.txt").write_text(ROW_SCHEMA)
    (d / "q.gsql").write_text(ROW_Q)
    t = rows_table(300_000)
    a = [str(ipaddress.IPv4Address(int(x))) for x in t.column("a").to_pylist()]
    b = [ipaddress.IPv6Address(x) for x in t.column("b").to_pylist()]
    text = pa.table({"t": t.column("t"), "a": pa.array(a),
                     "b": pa.array([x.exploded for x in b])})
    # input text may be in any form ipaddress writes: compressed here
    compressed = text.set_column(2, "b", pa.array([x.compressed for x in b]))
    return d, t, text, compressed


@pytest.mark.parametrize("threads", [1, 2])
def test_arrow_inputs_in_either_form_and_split_runs(rows, threads):
    d, t, text, compressed = rows
    qs = gsqlc.compile([d / "q.gsql"], schema=d / "schema.txt")
    # IPV6 as variable binary of 16-byte values too (Spark's BinaryType)
    var_binary = t.set_column(2, "b", t.column("b").cast(pa.binary()))
    for source in (t, text, compressed, var_binary):
        r = qs.run({"csv": source}, threads=threads)
        got = pa.Table.from_batches(r.collect())
        assert r.stats["threads"]["used"] == threads, r.stats["threads"]
        assert got.column_names == text.column_names
        assert all(got.column(c).equals(text.column(c)) for c in text.column_names)
        gi = pa.Table.from_batches(qs.run({"csv": source}, threads=threads,
                                          ip_format="int").collect())
        assert gi.column("a").equals(t.column("a")) and gi.column("b").equals(t.column("b"))


def test_malformed_addresses_are_counted(rows):
    d, t, text, _ = rows
    qs = gsqlc.compile([d / "q.gsql"], schema=d / "schema.txt")
    bad = pa.table({"t": pa.array([1, 2, 3], pa.uint32()),
                    "a": pa.array(["10.0.0.1", "10.0.0.300", "167772161"]),
                    "b": pa.array([bytes(16), bytes(15), bytes(range(16))], pa.binary())})
    r = qs.run({"csv": bad})
    got = pa.Table.from_batches(r.collect())
    assert got.column("a").to_pylist() == ["10.0.0.1", "10.0.0.1"]
    assert got.column("b").to_pylist()[1] == "0001:0203:0405:0607:0809:0a0b:0c0d:0e0f"
    assert r.stats["sources"][0]["rows_rejected"] == 1, r.stats
    assert "10.0.0.300" in r.report and "is not a valid IP" in r.report


def test_csv_inputs_in_either_form(gsqlc, rows, tmp_path):
    """The CLI's text output read back, and its integer output read back,
    give the same rows (inputs take both forms)."""
    d, t, text, _ = rows
    small = text.slice(0, 2000)
    src = tmp_path / "text.csv"
    src.write_text("".join(f"{r['t']},{r['a']},{r['b']}\n" for r in small.to_pylist()))
    base = ["run", d / "q.gsql", "--schema", d / "schema.txt", "--format", "csv"]
    as_text = gsqlc(*base, "--source", f"csv={src}")
    as_int = gsqlc(*base, "--source", f"csv={src}", "--ip-format", "int")
    assert as_text.returncode == 0 and as_int.returncode == 0, as_text.err + as_int.err
    back = tmp_path / "int.csv"
    back.write_text("".join(l + "\n" for l in as_int.out.splitlines()[1:]))
    again = gsqlc(*base, "--source", f"csv={back}")
    assert again.returncode == 0 and "not valid" not in again.err, again.err
    assert again.out == as_text.out
    got = list(csv.reader(io.StringIO(as_text.out)))[1:]
    assert got == [[str(r["t"]), r["a"], r["b"]] for r in small.to_pylist()]
    ints = list(csv.reader(io.StringIO(as_int.out)))[1:]
    assert ints == [[str(r["t"]), str(int(ipaddress.IPv4Address(r["a"]))),
                     str(int(ipaddress.IPv6Address(r["b"])))] for r in small.to_pylist()]


@pytest.mark.slow
def test_spark(capture, rows, tmp_path):
    pytest.importorskip("pyspark")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    from pyspark.sql import types as T

    from gsqlc.spark import read_pcap, run_query
    spark = (SparkSession.builder.master("local[2]").appName("gsqlc-ip-format")
             .config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    try:
        d, t, text, compressed = rows
        small = t.slice(0, 5000)
        want_text = [tuple(r.values()) for r in text.slice(0, 5000).to_pylist()]
        # t, a: LongType (Spark has no uint32: widened first), b: BinaryType
        int_df = spark.createDataFrame(small.to_pandas().astype({"t": "int64", "a": "int64"}))
        text_df = spark.createDataFrame(     # a, b: StringType
            compressed.slice(0, 5000).to_pandas().astype({"t": "int64"}))
        assert dict(int_df.dtypes)["b"] == "binary" and dict(text_df.dtypes)["a"] == "string"
        for df in (int_df, text_df):
            out = run_query(spark, [str(d / "q.gsql")], str(d / "schema.txt"), {"csv": df})
            assert [f.dataType for f in out.schema.fields][1:] == [T.StringType()] * 2
            assert sorted(tuple(r) for r in out.collect()) == sorted(want_text)
            oi = run_query(spark, [str(d / "q.gsql")], str(d / "schema.txt"), {"csv": df},
                           ip_format="int")
            assert [f.dataType for f in oi.schema.fields][1:] == [T.LongType(), T.BinaryType()]
            assert sorted((r[0], r[1], bytes(r[2])) for r in oi.collect()) == \
                sorted(tuple(r.values()) for r in small.to_pylist())
        # an aggregation: the keys cross the shuffle as integers, come out as text
        (tmp_path / "agg.gsql").write_text(
            "DEFINE { query_name 'agg'; }\n"
            "SELECT tb, a, count(*) AS n FROM [csv].R GROUP BY t / 2 AS tb, a\n")
        agg = run_query(spark, [str(tmp_path / "agg.gsql")], str(d / "schema.txt"),
                        {"csv": int_df})
        api = gsqlc.compile([tmp_path / "agg.gsql"], schema=d / "schema.txt").table(
            {"csv": small})
        assert sorted(tuple(r) for r in agg.collect()) == \
            sorted(tuple(r.values()) for r in api.to_pylist())
        # read_pcap in Spark: the same forms as gsqlc.read_pcap
        pk = read_pcap(spark, str(capture / "ips.pcap"))
        assert dict(pk.dtypes)["srcIP"] == "string" and dict(pk.dtypes)["srcIPv6"] == "string"
        got = [r.srcIP for r in pk.orderBy("timestamp").collect()][:len(V4)]
        assert got == [text4(s) for s in V4]
        pki = read_pcap(spark, str(capture / "ips.pcap"), ip_format="int")
        assert dict(pki.dtypes)["srcIP"] == "bigint" and dict(pki.dtypes)["srcIPv6"] == "binary"
    finally:
        spark.stop()

