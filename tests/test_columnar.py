"""Columnar LFTAs through the interfaces people use (issue 13): the Python
API's columnar= keyword and the CLI's --columnar flag choose between chunks
of columns (the default) and a record at a time, with the same results; the
statistics say which path a source took.  The paths' equality over many
queries and inputs is in test_arrow_runtime.py (scenario_columnar_lftas)
and test_conformance.py (test_case_columnar_equals_row_path)."""
from __future__ import annotations

import json
import os
import re

import numpy as np
import pyarrow as pa
import pytest

import gsqlc
from conftest import REPO
from gsqlc.planner.nodes import LFTA_TABLE_GROW_MIB

BENCH = REPO / "bench" / "queries"


def packets(n: int, seed: int = 5) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({
        "time": pa.array(1_700_000_000 + np.arange(n) // 1000, pa.uint32()),
        "srcIP": pa.array(rng.integers(0, 200, n) + 0x0A000000, pa.uint32()),
        "destIP": pa.array(rng.integers(0, 50, n) + 0x0B000000, pa.uint32()),
        "len": pa.array(rng.integers(40, 1500, n), pa.uint32()),
        "protocol": pa.array(rng.choice([1, 6, 17], n), pa.uint32()),
    })


@pytest.fixture(scope="module")
def q1():
    return gsqlc.compile([BENCH / "arrow_q1.gsql"], schema=BENCH / "packets_columns.txt")


@pytest.fixture(scope="module")
def q2():
    return gsqlc.compile([BENCH / "spark_q2.gsql"], schema=BENCH / "packets_columns.txt")


def _run(qs, t, **kw):
    kw.setdefault("ip_format", "int")   # compared with pyarrow's group-by of the uint32 input
    r = qs.run({"pkts": t}, **kw)
    out = pa.Table.from_batches(list(r))
    return out, r.stats


@pytest.mark.parametrize("chunk", [None, 333])
def test_selection_and_aggregation_equal_on_both_paths(q1, q2, chunk):
    t = packets(20_000)
    for qs in (q1, q2):
        a, sa = _run(qs, t if chunk is None else pa.RecordBatchReader.from_batches(
            t.schema, t.to_batches(max_chunksize=chunk)))
        b, sb = _run(qs, t, columnar="off")
        assert sa["sources"][0]["columnar"] is True
        assert sb["sources"][0]["columnar"] is False
        assert a.num_rows > 0 and a.equals(b)
    # Q1 against a plain filter of the same table
    want = t.filter(pa.compute.and_(pa.compute.equal(t["protocol"], 6),
                                    pa.compute.greater(t["len"], 100)))
    got, _ = _run(q1, t)
    assert got.num_rows == want.num_rows
    assert got.column("len").to_pylist() == want.column("len").to_pylist()


def test_a_bad_columnar_value_is_refused(q1):
    with pytest.raises(gsqlc.UsageError, match="columnar must be auto or off"):
        q1.run({"pkts": packets(10)}, columnar="sideways")


def test_cli_flag_chooses_the_path(gsqlc, tmp_path):
    ex = REPO / "examples" / "csv"
    outs = {}
    for mode in ("auto", "off"):
        p = gsqlc("run", ex / "per_minute.gsql", "--schema", ex / "schema.txt",
                  "--source", f"default=csv:{ex / 'sales.csv'}", "--columnar", mode, "--stats")
        assert p.returncode == 0, p.err
        stats = json.JSONDecoder().raw_decode(p.err[p.err.index("{"):])[0]
        assert stats["sources"][0]["columnar"] is (mode == "auto")
        outs[mode] = p.out
    assert outs["auto"] == outs["off"] and outs["auto"].count("\n") > 3
    p = gsqlc("run", ex / "per_minute.gsql", "--schema", ex / "schema.txt",
              "--source", f"default=csv:{ex / 'sales.csv'}", "--columnar", "sideways")
    assert p.returncode != 0 and "--columnar" in p.err


ALL_TYPES = """PROTOCOL T {
    uint   ts  get_csv_uint_pos1 (increasing, required);
    ushort us  get_csv_ushort_pos2;
    int    i   get_csv_int_pos3;
    ullong ull get_csv_ullong_pos4;
    llong  ll  get_csv_llong_pos5;
    float  f   get_csv_float_pos6;
    IP     ip  get_csv_ip_pos7;
}
"""
GATHERED = """DEFINE { query_name 'kept'; }
SELECT ts, ip, f, ll, ull, i, us FROM T WHERE i > 0 AND us < 60000;
DEFINE { query_name 'per_10s'; }
SELECT tb, count(*) as n, sum(ull) as s, max(f) as hi FROM kept GROUP BY ts/10 as tb
"""


def _all_types(n: int) -> pa.Table:
    rng = np.random.default_rng(9)
    return pa.table({
        "ts": pa.array(1000 + np.arange(n) // 50, pa.uint32()),
        "us": pa.array(rng.integers(0, 65536, n), pa.uint16()),
        "i": pa.array(rng.integers(-1000, 1000, n), pa.int32()),
        "ull": pa.array(rng.integers(0, 2**63, n, dtype=np.uint64) * 2 + 1, pa.uint64()),
        "ll": pa.array(rng.integers(-2**62, 2**62, n), pa.int64()),
        "f": pa.array(rng.normal(0, 1e6, n), pa.float64()),
        "ip": pa.array(rng.integers(0, 2**32, n, dtype=np.uint64), pa.uint32()),
    })


def _has_packing_kernel() -> bool:
    """Whether this CPU has what a packing kernel of a ushort column needs
    (AVX-512 with VBMI2, or AVX2) and the environment does not turn it off."""
    off = os.environ.get("GSQLC_DISABLE_CPU_FEATURES", "").lower()
    try:
        flags = open("/proc/cpuinfo").read()
    except OSError:
        return False
    avx512 = "avx512" not in off and all(re.search(rf"\b{f}\b", flags) for f in
                                         ("avx512f", "avx512bw", "avx512_?vbmi2"))
    avx2 = "avx2" not in off and re.search(r"\bavx2\b", flags) is not None
    return avx512 or avx2


def test_a_selection_of_plain_columns_is_gathered_for_every_reader(tmp_path):
    """A selection whose outputs are input columns as they are goes out
    gathered column by column (gsq_emit_gather): straight into an Arrow sink
    that is its stream's only reader, built into tuples for the rest (here
    an HFTA aggregation reads it too); every column type, both paths equal,
    and equal to pyarrow's own filter."""
    (tmp_path / "schema.txt").write_text(ALL_TYPES)
    (tmp_path / "q.gsql").write_text(GATHERED)
    qs = gsqlc.compile([tmp_path / "q.gsql"], schema=tmp_path / "schema.txt")
    lfta = next((qs.library.parent.parent / "src").glob("lfta_*kept.c")).read_text()
    # chunks with no rejected rows: keep bytes, packed (every column size:
    # 2, 4 and 8 bytes); with some: row indices, gathered
    assert "gsq_emit_masked(" in lfta and "gsq_emit_gather(" in lfta
    t = _all_types(30_000)
    want = t.filter(pa.compute.and_(pa.compute.greater(t["i"], 0),
                                    pa.compute.less(t["us"], 60000)))
    want = want.select(["ts", "ip", "f", "ll", "ull", "i", "us"])
    for outputs in (["kept"], ["kept", "per_10s"]):
        got = {}
        for mode in ("auto", "off"):
            r = qs.run({"default": pa.RecordBatchReader.from_batches(
                t.schema, t.to_batches(max_chunksize=4001))}, outputs, columnar=mode,
                ip_format="int")
            parts: dict[str, list] = {o: [] for o in outputs}
            for o, b in r:
                parts[o].append(b)
            got[mode] = {o: pa.Table.from_batches(bs) for o, bs in parts.items()}
            assert r.stats["sources"][0]["columnar"] is (mode == "auto")
        for o in outputs:
            assert got["auto"][o].equals(got["off"][o]), o
        kept = got["auto"]["kept"]
        if outputs == ["kept"]:
            # the CPU's kernels off: the same rows, none packed by them
            kernels = _has_packing_kernel()
            r = qs.run({"default": t}, "kept", ip_format="int")
            with_kernels = pa.Table.from_batches(list(r))
            packed = r.stats["sinks"][0]["rows_packed"]
            before = os.environ.get("GSQLC_DISABLE_CPU_FEATURES")
            os.environ["GSQLC_DISABLE_CPU_FEATURES"] = "sse4, AVX512,avx2"
            try:
                r = qs.run({"default": t}, "kept", ip_format="int")
                without = pa.Table.from_batches(list(r))
            finally:
                if before is None:
                    del os.environ["GSQLC_DISABLE_CPU_FEATURES"]
                else:
                    os.environ["GSQLC_DISABLE_CPU_FEATURES"] = before
            assert without.equals(with_kernels) and with_kernels.equals(kept)
            assert r.stats["sinks"][0]["rows_packed"] == 0
            assert packed == (kept.num_rows if kernels else 0)
        assert kept.num_rows == want.num_rows > 0
        for c in want.column_names:
            assert kept.column(c).to_pylist() == want.column(c).to_pylist(), c


def test_the_default_lfta_table_grows_while_collisions_eject_many_groups(q2):
    """Q2 over 150,000 (srcIP, destIP) groups in one minute: the default
    262,144-slot table doubles while collisions eject groups (each ejection a
    partial for the HFTA), a table whose size was asked for keeps it.  Both
    give pyarrow's counts.  A group moved by the doubling is found again in
    its new bucket (the slot's hash is the records'): else it would be
    counted in a second slot and leave the table twice at the end, beyond the
    one flushed partial a group can leave."""
    n, groups = 1_500_000, 150_000
    rng = np.random.default_rng(11)
    g = rng.integers(0, groups, n)
    t = pa.table({
        "time": pa.array(np.full(n, 1_700_000_020), pa.uint32()),
        "srcIP": pa.array(0x0A000000 + g // 600, pa.uint32()),
        "destIP": pa.array(0x0B000000 + g % 600, pa.uint32()),
        "len": pa.array(np.full(n, 60), pa.uint32()),
        "protocol": pa.array(np.full(n, 6), pa.uint32()),
    })
    fixed = gsqlc.compile([BENCH / "spark_q2.gsql"], schema=BENCH / "packets_columns.txt",
                          lfta_table_size=262_144)
    assert "growing to 64 MiB while ejected groups come back" in q2.explain()
    # the bound the planner states is the runtime's
    header = (REPO / "runtime_c" / "lfta" / "gsq_agg_table.h").read_text()
    bound = re.search(r"#define GSQ_AGG_GROW_BYTES \(\(size_t\)(\d+) << 20\)", header)
    assert bound and int(bound.group(1)) == LFTA_TABLE_GROW_MIB == 64
    assert "growing" not in fixed.explain()
    want = t.group_by(["srcIP", "destIP"]).aggregate([("time", "count")])
    want = sorted(zip(want["srcIP"].to_pylist(), want["destIP"].to_pylist(),
                      want["time_count"].to_pylist()))
    ejected, held = {}, {}
    for name, qs in (("grows", q2), ("fixed", fixed)):
        out, st = _run(qs, t, threads=1)
        assert sorted(zip(out["srcIP"].to_pylist(), out["destIP"].to_pylist(),
                          out["cnt"].to_pylist())) == want, name
        lfta = next(x for x in st["nodes"] if x["kind"] == "lfta")
        partials = next(s["tuples"] for s in st["streams"] if s["name"] == lfta["output"])
        ejected[name] = lfta["lfta_ejections"]
        held[name] = lfta["peak_held_bytes"]   # the table's memory, reported
        # every partial is a collision's, or a group flushed once at the end
        assert partials - ejected[name] <= len(want), (name, partials, ejected[name])
    assert ejected["fixed"] > 20_000
    assert ejected["grows"] * 10 < ejected["fixed"] * 7, ejected
    # 262,144 slots of (tag, tb, srcIP, destIP, count) at least; doubled at least once
    assert held["fixed"] >= 262_144 * 20 and held["grows"] >= 2 * held["fixed"], held


def test_a_selection_keeps_time_over_disordered_columns_as_a_record_at_a_time():
    """The branch-free selection over a chunk (keep bytes, the heartbeat's
    running max as a select) against the row path: rows 20 s behind their
    neighbours, an out-of-order bound of 2 s, heartbeats every second of
    data -- the same rows, heartbeats and counts, and the rows below the
    promise dropped at the input."""
    qs = gsqlc.compile([BENCH / "arrow_q1.gsql"], schema=BENCH / "packets_columns.txt")
    lfta = next((qs.library.parent.parent / "src").glob("lfta_*arrow_q1.c")).read_text()
    assert "gsq_emit_masked(" in lfta and "live_" in lfta
    t = packets(60_000)
    tm = t["time"].to_numpy().copy()
    tm[30_000::997] -= 20
    t = t.set_column(0, "time", pa.array(tm, pa.uint32()))
    got = {}
    for mode in ("auto", "off"):
        r = qs.run({"pkts": pa.RecordBatchReader.from_batches(
            t.schema, t.to_batches(max_chunksize=5000))}, columnar=mode,
            out_of_order={"pkts": 2}, clock="data", heartbeat_interval=1)
        out = pa.Table.from_batches(list(r))
        assert r.stats["sources"][0]["columnar"] is (mode == "auto")
        got[mode] = (out, r.stats["sources"][0]["time"], r.stats["streams"][0]["heartbeats"],
                     {k: v for k, v in r.stats["nodes"][0].items() if "drop" in k})
    assert got["auto"][0].equals(got["off"][0])
    assert got["auto"][1:] == got["off"][1:]
    out, time, heartbeats, _ = got["auto"]
    assert time["dropped_below_heartbeat"] > 0 and heartbeats > 30
    # the last heartbeat: the largest time seen less the bound
    assert time["heartbeat_usec"] == (int(tm.max()) - 2) * 1_000_000
    passing = t.filter(pa.compute.and_(pa.compute.equal(t["protocol"], 6),
                                       pa.compute.greater(t["len"], 100))).num_rows
    assert passing - time["dropped_below_heartbeat"] <= out.num_rows < passing


def test_table_chunks_are_larger_than_runs_batches(q1):
    """table() asks for TABLE_BATCH_ROWS-row batches (fewer to hand over and
    assemble) unless given batch_rows; the rows are run()'s either way."""
    from gsqlc.api import TABLE_BATCH_ROWS
    t = packets(2_000_000)
    got = q1.table({"pkts": t}, threads=1)
    batches = list(q1.run({"pkts": t}, threads=1))
    assert got.num_rows > 2 * TABLE_BATCH_ROWS
    assert {len(c) for c in got.column(0).chunks[:-1]} == {TABLE_BATCH_ROWS}
    assert {b.num_rows for b in batches[:-1]} == {65_536}
    assert got.equals(pa.Table.from_batches(batches))
    small = q1.table({"pkts": t}, threads=1, batch_rows=1000)
    assert {len(c) for c in small.column(0).chunks[:-1]} == {1000} and small.equals(got)


@pytest.mark.parametrize("ctype,unit", [("uint", "s"), ("uint", "ns"), ("ushort", "ms")])
def test_the_data_clock_stamps_a_chunk_as_records_are_stamped(tmp_path, ctype, unit):
    """Under the data clock a raw unsigned time column stamps a chunk's rows
    in one loop (gsq_source_stamp_uints): in every unit, and from a 16-bit
    column, the clock, the heartbeats it drives and the results equal the
    record path's."""
    (tmp_path / "s.txt").write_text(
        "PROTOCOL P {\n"
        f"    {ctype} t get_csv_{ctype}_pos1 (increasing, required);\n"
        "    uint k get_csv_uint_pos2;\n}\n")
    (tmp_path / "q.gsql").write_text(
        "DEFINE { query_name 'per10'; }\n"
        "SELECT tb, k, count(*) as n FROM P GROUP BY t/10 as tb, k\n")
    qs = gsqlc.compile([tmp_path / "q.gsql"], schema=tmp_path / "s.txt")
    n = 50_000
    rng = np.random.default_rng(3)
    ticks = np.arange(n, dtype=np.int64) * 7 // 100          # 0 .. 3,499, increasing
    t = pa.table({"t": pa.array(ticks, pa.uint16() if ctype == "ushort" else pa.uint32()),
                  "k": pa.array(rng.integers(0, 40, n), pa.uint32())})
    got = {}
    for mode in ("auto", "off"):
        r = qs.run({"P": pa.RecordBatchReader.from_batches(t.schema, t.to_batches(max_chunksize=4096))},
                   columnar=mode, clock="data", heartbeat_interval=0.5, time_unit={"P": unit})
        out = pa.Table.from_batches(list(r))
        src = r.stats["sources"][0]
        assert src["columnar"] is (mode == "auto") and src["time_unit"] == unit
        got[mode] = (out.sort_by([("tb", "ascending"), ("k", "ascending")]),
                     r.stats["data_clock_usec"], r.stats["data_clock_first_usec"],
                     r.stats["heartbeat_ticks"], src["time_unreadable"])
    assert got["auto"][0].equals(got["off"][0]) and got["auto"][0].num_rows > 0
    assert got["auto"][1:] == got["off"][1:]
    per_unit = {"s": 1_000_000, "ms": 1_000, "ns": 0.001}[unit]
    assert got["auto"][1] == int(int(ticks.max()) * per_unit)
    assert got["auto"][2] == 0 and got["auto"][4] == 0


@pytest.mark.parametrize("ways", [2, 4, 16])
def test_a_bucket_of_several_slots_finds_groups_over_columns(ways):
    """The columnar fold tests every slot of a bucket at once (no branch per
    slot): with a table small enough that buckets fill and eject, the counts
    equal pyarrow's group-by and the record path's."""
    qs = gsqlc.compile([BENCH / "spark_q2.gsql"], schema=BENCH / "packets_columns.txt",
                       lfta_table_size=64, lfta_table_ways=ways)
    t = packets(30_000)
    a, sa = _run(qs, t)
    b, _ = _run(qs, t, columnar="off")
    assert sa["sources"][0]["columnar"] is True
    lfta = next(x for x in sa["nodes"] if x["kind"] == "lfta")
    assert lfta["lfta_ejections"] > 0          # full buckets ejected groups
    key = [("tb", "ascending"), ("srcIP", "ascending"), ("destIP", "ascending")]
    assert a.sort_by(key).equals(b.sort_by(key))
    want = (t.append_column("tb", pa.compute.divide(t["time"], 60))
             .group_by(["tb", "srcIP", "destIP"]).aggregate([("time", "count")]))
    assert sorted(zip(a["tb"].to_pylist(), a["srcIP"].to_pylist(), a["destIP"].to_pylist(),
                      a["cnt"].to_pylist())) == \
        sorted(zip(want["tb"].to_pylist(), want["srcIP"].to_pylist(), want["destIP"].to_pylist(),
                   want["time_count"].to_pylist()))
