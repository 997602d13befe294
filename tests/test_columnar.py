"""Columnar LFTAs through the interfaces people use (issue 13): the Python
API's columnar= keyword and the CLI's --columnar flag choose between chunks
of columns (the default) and a record at a time, with the same results; the
statistics say which path a source took.  The paths' equality over many
queries and inputs is in test_arrow_runtime.py (scenario_columnar_lftas)
and test_conformance.py (test_case_columnar_equals_row_path)."""
from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

import gsqlc
from conftest import REPO

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
