"""Temporal progress for micro-batch consumers of Arrow sinks: run options
arrow_heartbeats (heartbeat tuples become rows flagged by a last boolean
column __heartbeat) and final_heartbeat (one last heartbeat of every LFTA at
the end of input, before finish and EOF).  A real compiled query set (the
one of arrow_scenarios.py: big_sales and big_per_minute select qty >= 3 from
SALES) is fed an Arrow table whose last rows the predicate rejects, at a
minute later than every other row.  The core scenario also runs in the
sanitized child of test_arrow_runtime.py."""
from __future__ import annotations

import json
import time

import pytest

pa = pytest.importorskip("pyarrow")
import pyarrow.csv as pacsv  # noqa: E402

import arrow_scenarios as A  # noqa: E402
from arrow_scenarios import HB, HB_OPTIONS, Run, ffi, split_heartbeats  # noqa: E402
from conftest import require, run_gsqlc  # noqa: E402

LAST = max(A.REJECTED_TS)


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("arrow_hb")


@pytest.fixture(scope="module")
def lib(work):
    files, schemas = A.write_sources(work)
    args = [str(f) for f in files]
    for s in schemas:
        args += ["--schema", str(s)]
    p = run_gsqlc("compile", *args, "-o", str(work / "qs"), "--build", "--werror", timeout=900)
    assert p.returncode == 0, p.stderr.decode(errors="replace")
    return ffi.dlopen(str(work / "qs" / "build" / "libgsqlc_queryset.so"))


@pytest.fixture(scope="module")
def baseline(lib):
    """The run without the options."""
    return A.run_heartbeat_streams(lib, A.sales_with_rejected_tail(), {})


def _text(v):
    return v.decode() if isinstance(v, bytes) else v


def test_baseline_is_the_answer_of_duckdb(baseline):
    """The run without the options, which the tests below compare against,
    is the right answer: DuckDB over the same table."""
    duckdb = require("duckdb")
    sales = A.sales_with_rejected_tail()  # noqa: F841 (read by DuckDB)
    want = duckdb.sql("SELECT ts, store, qty FROM sales WHERE qty >= 3").fetchall()
    assert len(want) >= 20
    got = [(r["ts"], _text(r["store"]), r["qty"]) for r in baseline.rows("big_sales")]
    assert got == want  # a selection keeps the order of its input
    want = duckdb.sql("SELECT ts // 60 * 60, store, count(*), sum(qty) FROM sales "
                      "WHERE qty >= 3 GROUP BY ALL ORDER BY 1, 2").fetchall()
    got = [(r["minute"], _text(r["store"]), r["sales"], r["units"])
           for r in baseline.rows("big_per_minute")]
    assert [g[0] for g in got] == sorted(g[0] for g in got)  # minutes close in order
    assert sorted(got) == want


def test_final_heartbeat_row_carries_the_rejected_rows_time(lib, tmp_path):
    A.scenario_heartbeats(lib, tmp_path)


def test_options_are_off_by_default(lib, baseline):
    for s in A.HB_STREAMS:
        t = baseline.table(s)
        assert HB not in t.schema.names
    assert [x["heartbeats"] for x in baseline.stats["streams"]
            if x["name"] in A.HB_STREAMS] == [0, 0, 0]
    explicit = A.run_heartbeat_streams(lib, A.sales_with_rejected_tail(),
                                       {"arrow_heartbeats": "0", "final_heartbeat": "0"})
    for s in A.HB_STREAMS:
        assert explicit.table(s).equals(baseline.table(s))


def test_arrow_heartbeats_alone_without_a_tick_adds_only_the_column(lib, baseline):
    # fixed clock: no tick fires, no final heartbeat: every row is data
    res = A.run_heartbeat_streams(lib, A.sales_with_rejected_tail(), {"arrow_heartbeats": "1"})
    for s in A.HB_STREAMS:
        t = res.table(s)
        assert t.schema.names[-1] == HB and not any(t.column(HB).to_pylist())
        assert t.drop_columns([HB]).equals(baseline.table(s))


def test_final_heartbeat_alone_reaches_the_hftas_not_the_sinks(lib, baseline):
    res = A.run_heartbeat_streams(lib, A.sales_with_rejected_tail(), {"final_heartbeat": "1"})
    streams = {x["name"]: x for x in res.stats["streams"]}
    assert streams["_fta_big_per_minute"]["heartbeats"] == 1
    assert streams["big_per_minute"]["heartbeats"] == 1  # the HFTA answered it
    for s in A.HB_STREAMS:
        assert res.table(s).equals(baseline.table(s))
    assert res.stats["heartbeat_ticks"] == 0


def test_final_heartbeat_from_a_csv_file_source(lib, tmp_path):
    t = A.sales_with_rejected_tail()
    path = tmp_path / "sales.csv"
    pacsv.write_csv(t, str(path), pacsv.WriteOptions(include_header=False, quoting_style="none"))
    r = Run(lib, HB_OPTIONS)
    r.csv("default", path)
    r.sink("big_sales")
    res = r.run()
    assert res.rc == 0, res
    _, beats = split_heartbeats(res.table("big_sales"))
    assert beats.to_pylist() == [{"ts": LAST, "store": b"", "qty": 0}]


def slow_reader(t: pa.Table, rows: int, pause: float) -> pa.RecordBatchReader:
    def gen():
        for b in t.to_batches(rows):
            time.sleep(pause)
            yield b
    return pa.RecordBatchReader.from_batches(t.schema, gen())


def test_timer_heartbeats_of_an_lfta_stream_are_rows(lib, baseline):
    """Heartbeats of the run's timer leave an LFTA stream through the queue
    drain and reach its Arrow sink between the data rows.  The data clock of
    an Arrow source (no record timestamps) is the wall clock: a source that
    pauses 30 ms before each batch of 8 rows lets 20 ms ticks fire."""
    opts = dict(HB_OPTIONS, clock="data", heartbeat_interval="0.02", batch="8")
    res = A.run_heartbeat_streams(lib, slow_reader(A.sales_with_rejected_tail(), 8, 0.03), opts)
    ticks = res.stats["heartbeat_ticks"]
    assert ticks >= 1
    rows = res.rows("big_sales")
    data, beats = split_heartbeats(res.table("big_sales"))
    assert data.equals(baseline.table("big_sales"))
    assert 2 <= beats.num_rows <= ticks + 1  # ticks after data was seen, and the final one
    seen, last_hb = 0, 0
    for x in rows:  # a heartbeat never goes back, nor behind the data before it
        if x[HB]:
            assert x["ts"] >= seen and x["ts"] >= last_hb
            assert (x["store"], x["qty"]) == (b"", 0)
            last_hb = x["ts"]
        else:
            assert x["ts"] >= last_hb
            seen = max(seen, x["ts"])
    assert rows[-1][HB] and rows[-1]["ts"] == LAST
    sink = next(k for k in res.stats["sinks"] if k["query"] == "big_sales")
    stream = next(x for x in res.stats["streams"] if x["name"] == "big_sales")
    assert sink["heartbeat_rows"] == stream["heartbeats"] == beats.num_rows
    assert sink["tuples"] == data.num_rows


def test_final_heartbeat_is_traced(lib, tmp_path):
    trace = tmp_path / "trace.jsonl"
    r = Run(lib, {"final_heartbeat": "1", "trace": str(trace)})
    r.arrow("default", A.sales_with_rejected_tail())
    r.sink("big_per_minute")
    res = r.run()
    assert res.rc == 0, res
    lines = [json.loads(x) for x in trace.read_text().splitlines()]
    assert [x["origin"] for x in lines] == ["_fta_big_per_minute"]
    assert [h["node"] for h in lines[0]["hops"]] == ["big_per_minute"]


def test_heartbeat_rows_round_trip_through_an_arrow_fed_stream(lib, tmp_path):
    """The LFTA stream's output, heartbeat row included, fed back in place
    of the LFTA: the __heartbeat column makes that row a heartbeat again, so
    the HFTA gives the same output, heartbeat row included."""
    _, on, res = A.scenario_heartbeats(lib, tmp_path)
    streams = {x["name"]: x for x in res.stats["streams"]}
    assert streams["_fta_big_per_minute"]["heartbeats"] == 1
    assert res.stats["injected"][0]["rows_read"] == on.table("_fta_big_per_minute").num_rows
    # a null flag is a malformed row; a flag of another type an error
    t = on.table("_fta_big_per_minute")
    flags = t.column(HB).to_pylist()
    flags[0] = None
    r = Run(lib)
    r.inject("_fta_big_per_minute", t.set_column(t.num_columns - 1, HB, pa.array(flags)))
    r.sink("big_per_minute")
    res = r.run()
    assert res.rc == 0, res
    assert res.stats["injected"][0]["rows_rejected"] == 1
    assert "row 1: column __heartbeat: null" in res.report, res.report
    r = Run(lib)
    r.inject("_fta_big_per_minute", t.set_column(t.num_columns - 1, HB,
                                                 pa.array([str(x) for x in flags])))
    r.sink("big_per_minute")
    res = r.run()
    assert res.rc == -1
    assert res.error.startswith("stream _fta_big_per_minute: the heartbeat flag column "
                                "'__heartbeat' has format 'u' (utf8)"), res.error


def test_a_stream_column_named_like_the_flag(lib):
    """hb_clash has a column __heartbeat of its own: it is data, never the
    flag; an Arrow sink of it cannot add the flag column (a run error)."""
    t = A.sales_table()
    r = Run(lib)
    r.arrow("default", t)
    r.sink("hb_clash")
    res = r.run()
    assert res.rc == 0, res
    own = res.table("hb_clash")
    assert own.column(HB).to_pylist() == t.column("ts").to_pylist()
    r = Run(lib)  # fed back: the stream's own column, not a flag
    r.inject("hb_clash", own)
    r.sink("hb_clash")
    res = r.run()
    assert res.rc == 0, res
    assert res.table("hb_clash").equals(own)
    assert next(x for x in res.stats["streams"] if x["name"] == "hb_clash")["heartbeats"] == 0
    r = Run(lib, {"arrow_heartbeats": "1"})
    r.arrow("default", t)
    r.sink("hb_clash")
    r.sink("big_sales")
    res = r.run()
    assert res.rc == -1
    assert res.error == ("stream hb_clash has a column named __heartbeat: option "
                         "arrow_heartbeats adds a column of that name to its Arrow sinks; "
                         "rename it"), res.error


def test_option_values(lib):
    r = lib.gsqlc_create()
    try:
        for key in (b"arrow_heartbeats", b"final_heartbeat"):
            assert lib.gsqlc_set_option(r, key, b"1") == 0
            assert lib.gsqlc_set_option(r, key, b"0") == 0
            assert lib.gsqlc_set_option(r, key, b"yes please") == -1
            err = ffi.string(lib.gsqlc_error(r)).decode()
            assert err == f"{key.decode()} must be 0 or 1, got 'yes please'"
        assert lib.gsqlc_set_option(r, b"heartbeat_rows", b"1") == -1
        err = ffi.string(lib.gsqlc_error(r)).decode()
        assert "arrow_heartbeats, final_heartbeat" in err
    finally:
        lib.gsqlc_destroy(r)
