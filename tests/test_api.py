"""The Python API (issue 4, part 1): gsqlc.compile(...).run(...) over CSV
files and Arrow data, yielding pyarrow RecordBatches; errors as exceptions."""
from __future__ import annotations

import csv
import io
import threading

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

import gsqlc
from conftest import REPO

EX = REPO / "examples" / "csv"
SCHEMA = EX / "schema.txt"
SALES = EX / "sales.csv"
PER_MINUTE = EX / "per_minute.gsql"
COLS = ["ts", "store", "item", "qty", "price", "client"]


def sales_table() -> pa.Table:
    return pacsv.read_csv(SALES, read_options=pacsv.ReadOptions(column_names=COLS),
                          convert_options=pacsv.ConvertOptions(
                              column_types={"client": pa.string()}))


def rows(t: pa.Table) -> list[tuple]:
    return sorted(tuple(round(v, 6) if isinstance(v, float) else v for v in r.values())
                  for r in t.to_pylist())


@pytest.fixture(scope="module")
def per_minute():
    return gsqlc.compile([PER_MINUTE], schema=SCHEMA)


def test_csv_uri_gives_record_batches_equal_to_the_cli(per_minute, gsqlc):
    batches = list(per_minute.run(sources={"csv": f"csv:{SALES}"}, output="per_minute"))
    assert batches and all(isinstance(b, pa.RecordBatch) for b in batches)
    t = pa.Table.from_batches(batches)
    assert t.schema == per_minute.output_schema("per_minute")
    assert t.schema.field("store").type == pa.string()
    assert t.schema.field("sales").type == pa.uint64()
    p = gsqlc("run", PER_MINUTE, "--schema", SCHEMA, "--source", f"csv:{SALES}", "--format", "csv")
    assert p.returncode == 0, p.err
    cli = list(csv.DictReader(io.StringIO(p.out)))
    assert len(cli) == t.num_rows > 0
    assert rows(t) == sorted(
        (int(r["minute"]), r["store"], int(r["sales"]), int(r["units"]),
         round(float(r["revenue"]), 6), round(float(r["max_price"]), 6)) for r in cli)


def test_arrow_table_pandas_and_batch_iterator_equal_the_csv_run(per_minute):
    want = rows(per_minute.table({"csv": f"csv:{SALES}"}))
    table = sales_table()
    assert rows(per_minute.table({"csv": table})) == want
    assert rows(per_minute.table({"csv": table.to_pandas()})) == want
    assert rows(per_minute.table({"csv": iter(table.to_batches(max_chunksize=7))})) == want
    assert rows(per_minute.table({"csv": table.to_reader()})) == want


def test_integer_columns_of_other_widths_and_ip_as_integers(per_minute):
    t = sales_table()
    ips = [sum(int(x) << s for x, s in zip(ip.split("."), (24, 16, 8, 0)))
           for ip in t["client"].to_pylist()]
    t2 = t.set_column(0, "ts", t["ts"].cast(pa.uint64())) \
          .set_column(3, "qty", t["qty"].cast(pa.int16())) \
          .set_column(5, "client", pa.array(ips, pa.uint32()))
    assert rows(per_minute.table({"csv": t2})) == rows(per_minute.table({"csv": t}))


def test_column_names_match_case_insensitively_and_in_any_order(per_minute):
    t = sales_table()
    shuffled = t.select(["price", "client", "qty", "item", "store", "ts"]).rename_columns(
        ["PRICE", "client", "Qty", "item", "store", "ts"])
    assert rows(per_minute.table({"csv": shuffled})) == rows(per_minute.table({"csv": t}))


def test_nulls_are_unavailable_fields_and_counted(per_minute):
    t = sales_table()
    qty = t["qty"].to_pylist()
    qty[0] = qty[5] = None
    r = per_minute.run({"csv": t.set_column(3, "qty", pa.array(qty, pa.int64()))})
    got = pa.Table.from_batches(list(r))
    full = per_minute.table({"csv": t})
    assert sum(got["sales"].to_pylist()) == sum(full["sales"].to_pylist()) - 2
    assert "unavailable" in r.report or "field_unavailable" in str(r.stats)


def test_missing_column_and_wrong_type_are_clear_errors(per_minute):
    t = sales_table()
    with pytest.raises((gsqlc.UsageError, gsqlc.RunError)) as e:
        list(per_minute.run({"csv": t.drop_columns(["qty"])}))
    assert "qty" in str(e.value)
    with pytest.raises((gsqlc.UsageError, gsqlc.RunError)) as e:
        list(per_minute.run({"csv": t.set_column(3, "qty", t["qty"].cast(pa.string()))}))
    assert "qty" in str(e.value) and "uint" in str(e.value)


def test_strings_as_bytes(per_minute):
    t = per_minute.table({"csv": f"csv:{SALES}"}, strings="bytes")
    assert t.schema.field("store").type == pa.binary()
    assert set(t["store"].to_pylist()) == {b"north", b"south", b"east"}


def test_query_error_carries_file_line_and_column(tmp_path):
    q = tmp_path / "bad.gsql"
    q.write_text("SELECT ts, stroe\nFROM SALES\n")
    with pytest.raises(gsqlc.QueryError) as e:
        gsqlc.compile([q], schema=SCHEMA)
    err = e.value
    assert (err.file, err.line, err.column) == (str(q), 1, 12)
    assert err.rule == "unknown-field" and "stroe" in str(err)


def test_params_and_missing_params():
    qs = gsqlc.compile([REPO / "tests" / "data" / "big_orders.gsql"],
                       schema=REPO / "tests" / "data" / "schema.txt")
    data = REPO / "tests" / "data" / "sales.csv"
    with pytest.raises(gsqlc.UsageError, match="min_qty"):
        qs.run({"csv": f"csv:{data}"})
    t = qs.table({"csv": f"csv:{data}"}, params={"min_qty": 7})
    assert sorted(t["qty"].to_pylist()) == [7, 9]
    with pytest.raises(gsqlc.RunError, match="lots"):
        qs.table({"csv": f"csv:{data}"}, params={"min_qty": "lots"})


def test_unbound_interface_and_unknown_output(per_minute):
    with pytest.raises(gsqlc.UsageError, match="not bound"):
        per_minute.run({})
    with pytest.raises(gsqlc.UsageError, match="no query of that name"):
        per_minute.run({"csv": f"csv:{SALES}"}, output="per_minit")


def _big(n: int, seed: int = 7) -> pa.Table:
    rng = np.random.default_rng(seed)
    ts = 1_700_000_000 + np.sort(rng.integers(0, 3600, n))
    stores = np.array(["north", "south", "east", "west"])
    return pa.table({
        "ts": pa.array(ts, pa.uint32()),
        "store": pa.array(stores[rng.integers(0, 4, n)]),
        "item": pa.array(np.full(n, "x")),
        "qty": pa.array(rng.integers(1, 10, n), pa.uint32()),
        "price": pa.array(rng.integers(1, 400, n) / 4.0),
        "client": pa.array(np.full(n, "10.0.0.1")),
    })


def test_many_batches_equal_the_same_rows_as_csv(per_minute, tmp_path):
    t = _big(300_000)
    path = tmp_path / "big.csv"
    pacsv.write_csv(t, path, write_options=pacsv.WriteOptions(include_header=False,
                                                               quoting_style="none"))
    a = per_minute.table({"csv": iter(t.to_batches(max_chunksize=10_007))})
    c = per_minute.table({"csv": f"csv:{path}"})
    assert a.num_rows == c.num_rows > 200
    assert rows(a) == rows(c)
    assert sum(a["sales"].to_pylist()) == 300_000


def test_leaving_the_iteration_early_cancels_the_run(per_minute):
    t = _big(300_000)
    run = per_minute.run({"csv": iter(t.to_batches(max_chunksize=1000))}, batch_rows=1)
    before = threading.active_count()
    for _ in run:
        break
    # the run's thread has ended: a new run works and nothing is left running
    assert threading.active_count() <= before
    assert per_minute.table({"csv": f"csv:{SALES}"}).num_rows > 0


def test_a_failing_source_fails_the_run_with_its_message(per_minute):
    t = sales_table()

    def batches():
        yield from t.to_batches(max_chunksize=10)
        raise ValueError("the upstream feed broke")
    with pytest.raises(gsqlc.RunError, match="the upstream feed broke"):
        per_minute.table({"csv": batches()})


def test_lfta_table_size_option_and_define_wins(tmp_path):
    q = REPO / "bench" / "queries" / "spark_q2.gsql"
    sch = REPO / "bench" / "queries" / "packets_columns.txt"
    assert "table of 1048576 slots" in gsqlc.compile([q], schema=sch, lfta_table_size=1_000_000).explain()
    assert "table of 262144 slots" in gsqlc.compile([q], schema=sch).explain()
    d = tmp_path / "d.gsql"
    d.write_text("DEFINE { lfta_table_size '4096'; }\n" + q.read_text().split("\n", 2)[2])
    assert "table of 4096 slots" in gsqlc.compile([d], schema=sch, lfta_table_size=1 << 20).explain()
    with pytest.raises(gsqlc.UsageError):
        gsqlc.compile([q], schema=sch, lfta_table_size=0)


def test_lfta_table_ways_option_define_and_errors(tmp_path):
    q = REPO / "bench" / "queries" / "spark_q2.gsql"
    sch = REPO / "bench" / "queries" / "packets_columns.txt"
    assert "direct-mapped sub-aggregate table" in gsqlc.compile([q], schema=sch).explain()
    assert "4-way set-associative sub-aggregate table of 524288 slots" in gsqlc.compile(
        [q], schema=sch, lfta_table_size=1 << 19, lfta_table_ways=4).explain()
    body = q.read_text().split("\n", 2)[2]
    d = tmp_path / "d.gsql"
    d.write_text("DEFINE { lfta_table_ways '8'; }\n" + body)
    assert "8-way" in gsqlc.compile([d], schema=sch, lfta_table_ways=2).explain()
    for bad in (3, 0, 32, "4"):
        with pytest.raises(gsqlc.UsageError, match="lfta_table_ways must be"):
            gsqlc.compile([q], schema=sch, lfta_table_ways=bad)
    d.write_text("DEFINE {\n  lfta_table_ways '3';\n}\n" + body)
    with pytest.raises(gsqlc.QueryError) as e:
        gsqlc.compile([d], schema=sch)
    assert (e.value.line, e.value.rule) == (2, "bad-define"), str(e.value)
    assert "lfta_table_ways must be one of 1, 2, 4, 8, 16, got '3'" in str(e.value)


def test_a_live_feed_gets_each_batchs_results_before_the_next_is_asked_for(tmp_path):
    """An iterator source may be a live feed whose producer sends the next
    batch only later: the results of each batch reach the consumer before
    the runtime asks for the next one (option arrow_flush)."""
    q = tmp_path / "big.gsql"
    q.write_text("DEFINE { query_name 'big'; }\nSELECT ts, store, qty FROM SALES WHERE qty >= 1\n")
    qs = gsqlc.compile([q], schema=SCHEMA)
    t = sales_table()
    answered = threading.Event()
    asked = []

    def feed():
        for i in range(0, t.num_rows, 10):
            asked.append(i)
            yield t.slice(i, 10).to_batches()[0]
            # a producer that only continues once the consumer saw results
            assert answered.wait(20), f"no results of rows {i}..{i + 9} before the next ask"
            answered.clear()

    seen = []
    for b in qs.run(sources={"sales": feed()}):
        seen.append(b.num_rows)
        answered.set()
    assert sum(seen) == t.num_rows and len(seen) == len(asked) == 5
    # in-memory data is handed over batch_rows at a time, as before
    assert [b.num_rows for b in qs.run(sources={"sales": t}, batch_rows=20)] == [20, 20, 10]


def test_the_next_run_takes_the_buffers_released_results_gave_back(tmp_path):
    """The Arrow results' column buffers go back to the library's pool when
    the results are released, and the next run -- split over threads or not
    -- takes them instead of fresh memory, with unchanged results."""
    import gc

    from gsqlc.runtime import runner
    q = tmp_path / "big_qty.gsql"
    q.write_text("DEFINE { query_name 'big_qty'; }\n"
                 "SELECT ts, store, qty FROM SALES WHERE qty > 2\n")
    qs = gsqlc.compile([q], schema=SCHEMA)
    t = _big(400_000)
    want = t.filter(pa.compute.greater(t["qty"], 2)).select(["ts", "store", "qty"])

    def counts():
        return runner.sink_pool_counts(qs.compiled.library)
    for threads in (1, 2):
        got = qs.table({"csv": t}, threads=threads, batch_rows=4096)
        assert got.cast(want.schema).equals(want)
        del got
        gc.collect()
        before = counts()
        assert before["held_bytes"] > 0
        again = qs.table({"csv": t}, threads=threads, batch_rows=4096)
        after = counts()
        assert again.cast(want.schema).equals(want)
        assert after["reused"] > before["reused"] and after["held_bytes"] < before["held_bytes"]
