"""gsqlc inside PySpark (issue 4, parts 2, 4 and 6; issue 11, part 8): run_query
over Spark DataFrames in local[2] gives the same answer as the Python API / CLI
and as Spark SQL, whatever the partitioning; bad input fails early and
clearly; over streams, declared time bounds are per-source watermarks."""
from __future__ import annotations

import os
import re
import sys
from datetime import datetime

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import gsqlc
from conftest import REPO, put_parquet

pyspark = pytest.importorskip("pyspark")   # installed by ./run.sh (the test extra)

pytestmark = pytest.mark.slow  # a JVM and local Spark jobs
from gsqlc.spark import SparkQueryError, run_query  # noqa: E402
from gsqlc.spark.stages import LftaStage  # noqa: E402
from gsqlc.spark.task import library_name as _library_name  # noqa: E402

EX = REPO / "examples" / "csv"
SCHEMA_TEXT = """
PROTOCOL PKTS {
    uint time   get_csv_uint_pos1 (increasing, required);
    IP   srcIP  get_csv_ip_pos2;
    IP   destIP get_csv_ip_pos3;
    uint len    get_csv_uint_pos4;
}
"""
AGG_Q = (
    "DEFINE {query_name 'q1';}\n"
    "select tb, srcIP, destIP, count(*) as c1, sum(len) as b1 from eth0.PKTS\n"
    "group by time/10 as tb, srcIP, destIP;\n"
    "DEFINE {query_name 'q2';}\n"
    "select tb, srcIP, destIP, count(*) as c2, sum(len) as b2 from eth1.PKTS\n"
    "group by time/10 as tb, srcIP, destIP;\n")
JOIN_Q = AGG_Q + (
    "DEFINE {query_name 'j';}\n"
    "select A.tb, A.srcIP, A.destIP, A.c1, B.c2 OUTER_JOIN from q1 A, q2 B\n"
    "where A.tb = B.tb and A.srcIP = B.srcIP and A.destIP = B.destIP;")
MERGE_Q = "select time, srcIP, len from [links].PKTS where len > 500"


@pytest.fixture(scope="module")
def spark():
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    s = (SparkSession.builder.master("local[2]").appName("gsqlc-tests")
         .config("spark.ui.enabled", "false")
         .config("spark.sql.shuffle.partitions", "4")
         .config("spark.sql.execution.arrow.maxRecordsPerBatch", "5000")
         .getOrCreate())
    s.sparkContext.setLogLevel("ERROR")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("spark")
    (d / "schema.txt").write_text(SCHEMA_TEXT)
    for name, text in (("join.gsql", JOIN_Q), ("merge.gsql", MERGE_Q)):
        (d / name).write_text(text)
    return d


def packets(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({
        "time": pa.array(1000 + np.sort(rng.integers(0, 120, n)), pa.int64()),
        "srcIP": pa.array(0x0A000000 + rng.integers(0, 40, n), pa.int64()),
        "destIP": pa.array(0x0B000000 + rng.integers(0, 8, n), pa.int64()),
        "len": pa.array(rng.integers(40, 1500, n), pa.int64()),
    })


def rows(df_or_table) -> list[tuple]:
    t = df_or_table if isinstance(df_or_table, pa.Table) else df_or_table.toArrow()
    return sorted(tuple(round(v, 6) if isinstance(v, float) else v for v in r.values())
                  for r in t.to_pylist())


def test_aggregation_equals_the_api_and_spark_sql_whatever_the_partitioning(spark):
    from pyspark.sql import functions as F
    sales = spark.read.csv(str(EX / "sales.csv"),
                           schema="ts long, store string, item string, qty long, "
                                  "price double, client string")
    q, sch = [str(EX / "per_minute.gsql")], str(EX / "schema.txt")
    want = rows(gsqlc.compile(q, schema=sch).table({"sales": f"csv:{EX / 'sales.csv'}"}))
    for parts in (1, 3, 7):
        df = sales.repartition(parts) if parts > 1 else sales.coalesce(1)
        out = run_query(spark, q, schema=sch, sources={"sales": df})
        assert rows(out) == want, parts
    sql = sales.groupBy((F.floor(F.col("ts") / 60) * 60).alias("minute"), "store") \
               .agg(F.count(F.lit(1)).alias("sales"), F.sum("qty").alias("units"))
    got = run_query(spark, q, schema=sch, sources={"sales": sales.repartition(5)})
    assert got.select("minute", "store", "sales", "units").exceptAll(sql).count() == 0
    assert sql.exceptAll(got.select("minute", "store", "sales", "units")).count() == 0


def test_join_of_two_aggregations_over_two_dataframes(spark, files):
    a, b = packets(30_000, 1), packets(20_000, 2)
    q, sch = [str(files / "join.gsql")], str(files / "schema.txt")
    want = rows(gsqlc.compile(q, schema=sch).table({"eth0": a, "eth1": b}, output="j"))
    assert len(want) > 500
    da = spark.createDataFrame(a.to_pandas()).repartition(3)
    db = spark.createDataFrame(b.to_pandas()).repartition(2)
    got = run_query(spark, q, schema=sch, sources={"eth0": da, "eth1": db}, output="j")
    assert rows(got) == want


def test_interface_set_merge_of_several_dataframes(spark, files):
    a, b = packets(5_000, 3), packets(4_000, 4)
    q, sch = [str(files / "merge.gsql")], str(files / "schema.txt")
    want = rows(gsqlc.compile(q, schema=sch).table({"links": [a, b]}))
    got = run_query(spark, q, schema=sch, sources={
        "links": [spark.createDataFrame(a.to_pandas()), spark.createDataFrame(b.to_pandas())]})
    assert rows(got) == want and len(want) > 1000


def _exchanges(df) -> int:
    """The shuffles in a DataFrame's physical plan."""
    return df._jdf.queryExecution().executedPlan().toString().count("Exchange")


def test_parquet_sources_are_read_by_the_tasks_and_agree_with_the_row_path(spark, files, tmp_path):
    from gsqlc.spark import direct_scan
    t = packets(60_000, 5)
    for i in range(3):   # three files of several row groups each
        pq.write_table(t.slice(i * 20_000, 20_000), tmp_path / f"part{i}.parquet",
                       row_group_size=4_000)
    q, sch = [str(files / "join.gsql")], str(files / "schema.txt")
    df = spark.read.parquet(str(tmp_path)).select("time", "srcIP", "destIP", "len")
    assert direct_scan(df) is not None
    assert direct_scan(df.where("upper(cast(len as string)) = '1'")) is None   # rows path
    direct = run_query(spark, q, schema=sch, sources={"eth0": df, "eth1": df}, output="q1")
    via_rows = run_query(spark, q, schema=sch, sources={"eth0": df, "eth1": df}, output="q1",
                         direct_files=False)
    want = rows(gsqlc.compile(q, schema=sch).table({"eth0": t, "eth1": t}, output="q1"))
    assert rows(direct) == rows(via_rows) == want


def test_a_computed_parquet_source_is_computed_by_the_tasks_and_agrees_with_the_row_path(
        spark, files, tmp_path):
    """Spark's projections and filters over a Parquet scan (abs, arithmetic,
    a widening cast, a filter with and/or/not and null tests) are computed
    by the LFTA tasks with pyarrow: the same answer as the rows Spark sends
    and as the Python API over the table computed the same way."""
    from pyspark.sql import functions as F

    from gsqlc.spark import direct_scan
    t = packets(60_000, 7)
    t = t.set_column(3, "len", pa.array(t["len"].to_numpy().astype("int32")))  # an int column
    for i in range(2):
        pq.write_table(t.slice(i * 30_000, 30_000), tmp_path / f"part{i}.parquet",
                       row_group_size=5_000)
    q, sch = [str(files / "join.gsql")], str(files / "schema.txt")
    df = (spark.read.parquet(str(tmp_path))
          .where((F.col("len") > 100) & ~((F.col("len") > 1400) | F.col("srcIP").isNull()))
          .select(F.abs(F.col("time") - 500).alias("time"), (F.col("srcIP") + 1).alias("srcIP"),
                  "destIP", F.col("len").cast("long").alias("len")))
    scan = direct_scan(df)
    assert scan is not None and scan.computed is not None and scan.computed.filter is not None
    direct = run_query(spark, q, schema=sch, sources={"eth0": df, "eth1": df}, output="q1")
    assert _exchanges(direct) > 0   # a time Spark computes: the shuffle plan (no statistics)
    via_rows = run_query(spark, q, schema=sch, sources={"eth0": df, "eth1": df}, output="q1",
                         direct_files=False)
    lens = t["len"].to_numpy()
    kept = t.filter(pa.array((lens > 100) & (lens <= 1400)))
    computed = pa.table({"time": pa.array(np.abs(kept["time"].to_numpy() - 500)),
                         "srcIP": pa.array(kept["srcIP"].to_numpy() + 1),
                         "destIP": kept["destIP"], "len": kept["len"].cast(pa.int64())})
    want = rows(gsqlc.compile(q, schema=sch).table({"eth0": computed, "eth1": computed}, output="q1"))
    assert rows(direct) == rows(via_rows) == want and len(want) > 100


def test_an_aggregation_over_files_in_time_order_completes_in_the_tasks_that_read_them(
        spark, files, tmp_path):
    """Over Parquet files in time order, up to the aggregation's disorder
    (2 epochs by default), each LFTA task completes the epochs it owns
    (gsqlc.spark.owned_epochs): no shuffle, and the answer of the Python API
    and of Spark SQL -- with epochs cut by the tasks' units and rows up to
    15 s (1-2 epochs of time/10) out of order."""
    from pyspark.sql import functions as F
    t = packets(60_000, 9)
    rng = np.random.default_rng(9)
    jitter = rng.integers(0, 16, len(t))
    t = t.set_column(0, "time", pa.array(np.maximum(t["time"].to_numpy() - jitter, 1000)))
    for i in range(3):
        pq.write_table(t.slice(i * 20_000, 20_000), tmp_path / f"part{i}.parquet",
                       row_group_size=1_500)
    q, sch = [str(files / "join.gsql")], str(files / "schema.txt")
    df = spark.read.parquet(str(tmp_path)).select("time", "srcIP", "destIP", "len")
    out = run_query(spark, q, schema=sch, sources={"eth0": df, "eth1": df}, output="q1")
    assert _exchanges(out) == 0
    want = rows(gsqlc.compile(q, schema=sch).table({"eth0": t, "eth1": t}, output="q1"))
    assert rows(out) == want and len(want) > 1000
    # a column the runtime binds by another case, computed by the tasks (a renaming)
    upper = df.withColumnRenamed("time", "TIME")
    out = run_query(spark, q, schema=sch, sources={"eth0": upper, "eth1": upper}, output="q1")
    assert _exchanges(out) == 0 and rows(out) == want
    sql = df.groupBy((F.col("time") / 10).cast("long").alias("tb"), "srcIP", "destIP") \
            .agg(F.count(F.lit(1)).alias("c1"), F.sum("len").alias("b1"))
    as_ints = run_query(spark, q, schema=sch, sources={"eth0": df, "eth1": df}, output="q1",
                        ip_format="int")
    assert rows(as_ints) == rows(sql)
    shuffled = run_query(spark, q, schema=sch, sources={"eth0": df, "eth1": df}, output="q1",
                         time_ordered=False)
    assert _exchanges(shuffled) > 0 and rows(shuffled) == want
    # a declared bound past the 3 epochs the aggregation keeps open (25 s: 4 epochs of
    # time/10) keeps the shuffle, whose HFTA orders the partials
    bounded = run_query(spark, q, schema=sch, sources={"eth0": df, "eth1": df}, output="q1",
                        out_of_order={"eth0": 25})
    assert _exchanges(bounded) > 0


def test_files_out_of_time_order_fail_saying_where_or_run_shuffled(spark, files, tmp_path):
    """Files whose times go back further than the aggregation allows fail
    the one-stage plan at the first attempt, naming the file, the row
    group and the way out; time_ordered=False gives Spark SQL's answer."""
    from pyspark.sql import functions as F
    t = packets(40_000, 10)
    for i in range(2):   # part0 holds the later half
        pq.write_table(t.slice((1 - i) * 20_000, 20_000), tmp_path / f"part{i}.parquet",
                       row_group_size=2_000)
    q, sch = [str(files / "join.gsql")], str(files / "schema.txt")
    df = spark.read.parquet(str(tmp_path)).select("time", "srcIP", "destIP", "len")
    out = run_query(spark, q, schema=sch, sources={"eth0": df, "eth1": df}, output="q1")
    with pytest.raises(Exception) as e:
        out.collect()
    text = str(e.value)
    assert re.search(r"time/10 .* in row group \d+ of \S*part\d\.parquet", text), text
    assert "time_ordered=False" in text and "fails the same way on every attempt" in text
    shuffled = run_query(spark, q, schema=sch, sources={"eth0": df, "eth1": df}, output="q1",
                         time_ordered=False, ip_format="int")
    sql = df.groupBy((F.col("time") / 10).cast("long").alias("tb"), "srcIP", "destIP") \
            .agg(F.count(F.lit(1)).alias("c1"), F.sum("len").alias("b1"))
    assert rows(shuffled) == rows(sql)


@pytest.mark.parametrize("ansi", [False, True])
def test_computed_columns_have_spark_s_values_at_the_edges(spark, tmp_path, ansi):
    """Each translated expression against Spark itself on values at the
    edges (the extreme longs, zero divisors, nulls), in both evaluation
    modes: LEGACY wraps and gives null for x / 0; ANSI fails, as Spark does.
    Expressions without Spark's meaning in pyarrow are left to Spark."""
    from pyspark.sql import functions as F

    from gsqlc.spark import direct_scan, storage
    lo, hi = -(1 << 63), (1 << 63) - 1
    t = pa.table({"a": pa.array([lo, hi, -5, 0, None, 7], pa.int64()),
                  "b": pa.array([1, 2, 0, None, 3, -1], pa.int32()),
                  "x": pa.array([1.5, 0.0, -2.0, None, 4.0, float("nan")]),
                  "s": pa.array(["a", "b", None, "d", "e", "f"])})
    path = tmp_path / "edges.parquet"
    pq.write_table(t, path)
    spark.conf.set("spark.sql.ansi.enabled", str(ansi).lower())
    try:
        base = spark.read.parquet(str(path))
        safe = [F.col("b").cast("long") + F.col("a") % 3, -F.col("b"), F.col("x") / 2.0,
                F.col("b").cast("double"), (F.col("a") > 0) | F.col("s").isNull(),
                F.col("s") == "b", ~(F.col("b") <= 1)]
        # overflow or a zero divisor on some row
        overflowing = [F.abs("a"), F.col("a") + 1, F.col("a") * 2, -F.col("a"),
                       F.col("x") / F.col("b").cast("double")]
        left_to_spark = []
        for i, e in enumerate(safe + overflowing):
            df = base.select(e.alias("v"))
            if i < len(safe) or not ansi:
                scan = direct_scan(df)
                if scan is None:          # % has no entry: Spark computes it
                    left_to_spark.append(i)
                    continue
                got = storage.read_pieces(scan.filesystem, [(str(path), 0, 1)], ["v"],
                                          expressions=scan.computed.columns).read_all()
                # repr: NaN equal to NaN, -0.0 told from 0.0
                assert list(map(repr, got.column("v").to_pylist())) == \
                    [repr(r.v) for r in df.collect()], str(e)
            else:                         # both fail: Spark on its rows, pyarrow in the task
                assert direct_scan(df) is not None
                with pytest.raises(Exception):
                    df.collect()
                with pytest.raises(pa.ArrowInvalid):
                    scan = direct_scan(df)
                    storage.read_pieces(scan.filesystem, [(str(path), 0, 1)], ["v"],
                                        expressions=scan.computed.columns).read_all()
        assert left_to_spark == [0]
        # Spark skips the right side of an and when the left is false: under
        # ANSI abs(a) there would fail on a row Spark never computes it for
        guarded = base.where((F.col("a") > 0) & (F.abs("a") > 5)).select("a")
        assert [r.a for r in guarded.collect()] == [hi, 7]
        assert (direct_scan(guarded) is None) == ansi
        # no translation with another meaning: NaN orders above every double in Spark
        assert direct_scan(base.where(F.col("x") > 1.0)) is None
        assert direct_scan(base.select(F.col("a").cast("int").alias("n"))) is None   # narrowing
        assert direct_scan(base.select(F.upper("s").alias("u"))) is None
    finally:
        spark.conf.unset("spark.sql.ansi.enabled")


def test_narrow_file_columns_are_computed_without_widening_and_keep_spark_s_values(
        spark, tmp_path):
    """Spark reads uint32 as long (uint16 as int, uint8 as short): a computed
    source passes such a column, its abs and its widening casts on in the
    file's type -- the same values, nothing copied into a wider column --
    and widens it only for an operation that needs Spark's type."""
    from pyspark.sql import functions as F

    from gsqlc.spark import direct_scan, storage
    t = pa.table({"u": pa.array([0, 1, (1 << 31) + 5, (1 << 32) - 1, None], pa.uint32()),
                  "h": pa.array([0, 7, 40_000, 65_535, 3], pa.uint16()),
                  "b": pa.array([1, 2, 200, None, 255], pa.uint8()),
                  "i": pa.array([-3, 4, 1 - (1 << 31), 9, None], pa.int32())})
    path = tmp_path / "narrow.parquet"
    pq.write_table(t, path)
    base = spark.read.parquet(str(path))
    df = base.select(F.abs("u").alias("au"), "h", F.col("b").cast("long").alias("bl"),
                     F.abs(F.col("h")).cast("long").alias("ah"), (F.col("u") + 1).alias("u1"),
                     (-F.col("b")).alias("nb"), F.abs("i").cast("long").alias("ai"))
    scan = direct_scan(df)
    assert scan is not None and scan.computed is not None
    types = dict(zip(scan.computed.schema.names, scan.computed.schema.types))
    assert types == {"au": pa.uint32(), "h": pa.uint16(), "bl": pa.uint8(), "ah": pa.uint16(),
                     "u1": pa.int64(), "nb": pa.int16(), "ai": pa.int64()}
    got = storage.read_pieces(scan.filesystem, [(str(path), 0, 1)], df.columns,
                              expressions=scan.computed.columns,
                              schema=scan.computed.schema).read_all()
    assert got.schema == scan.computed.schema
    assert [tuple(r) for r in zip(*(got.column(c).to_pylist() for c in df.columns))] == \
        [tuple(r) for r in df.collect()]


def test_a_computed_source_that_overflows_fails_saying_what_it_computed(spark, tmp_path):
    """Under ANSI (Spark 4's default) abs of the smallest long fails Spark's
    own plan; computed by gsqlc's task it fails too, naming Spark's
    expression, the file and that a retry fails the same way."""
    from pyspark.sql import functions as F
    path = tmp_path / "edge.parquet"
    pq.write_table(pa.table({"time": pa.array([5, 6, -(1 << 63)], pa.int64()),
                             "srcIP": pa.array([1, 2, 3], pa.int64()),
                             "destIP": pa.array([1, 2, 3], pa.int64())}), path)
    df = spark.read.parquet(str(path)).select(F.abs("time").alias("time"), "srcIP", "destIP")
    out = run_query(spark, [str(REPO / "bench" / "queries" / "spark_q2.gsql")],
                    schema=str(REPO / "bench" / "queries" / "packets_columns.txt"),
                    sources={"pkts": df}, ip_format="int")
    with pytest.raises(Exception) as e:
        out.collect()
    text = str(e.value)
    assert f"overflow in row groups 0-0 of {path}" in text
    assert "computing its source as Spark does: SELECT abs(time) AS time, srcIP, destIP" in text
    assert "fails the same way on every attempt" in text


def test_parquet_on_an_s3_server_is_read_by_the_tasks_with_the_local_answer(
        spark, files, s3, tmp_path, monkeypatch):
    """read_parquet of an s3:// URI (an S3-compatible server on loopback):
    the driver lists the files and opens one (the schema); the LFTA tasks
    read their pieces themselves; the answer is the local files' and the
    Python API's."""
    from gsqlc.spark import direct_scan, read_parquet, storage
    fs, client, _ = s3
    t = packets(60_000, 6)
    (tmp_path / "local").mkdir()
    for i in range(3):
        part = t.slice(i * 20_000, 20_000)
        put_parquet(client, f"pkts/part{i}.parquet", part, 4_000)
        pq.write_table(part, tmp_path / "local" / f"part{i}.parquet", row_group_size=4_000)
    client.put_object(Bucket="gsqlc", Key="pkts/_SUCCESS", Body=b"")
    opened = []
    real_open = storage.open_input
    monkeypatch.setattr(storage, "open_input", lambda f, p: opened.append(p) or real_open(f, p))
    q, sch = [str(files / "join.gsql")], str(files / "schema.txt")
    remote = read_parquet(spark, "s3://gsqlc/pkts/", filesystem=fs)
    direct = run_query(spark, q, schema=sch, sources={"eth0": remote, "eth1": remote},
                       output="q1")
    assert opened == ["gsqlc/pkts/part0.parquet"]     # planning read one footer
    src = direct_scan(remote)
    assert src is not None and [p for p, _ in src.files] == [
        f"gsqlc/pkts/part{i}.parquet" for i in range(3)]
    via_rows = run_query(spark, q, schema=sch, sources={"eth0": remote, "eth1": remote},
                         output="q1", direct_files=False)
    local = read_parquet(spark, tmp_path / "local")
    on_disk = run_query(spark, q, schema=sch, sources={"eth0": local, "eth1": local},
                        output="q1")
    want = rows(gsqlc.compile(q, schema=sch).table({"eth0": t, "eth1": t}, output="q1"))
    assert rows(direct) == rows(via_rows) == rows(on_disk) == want and len(want) > 1000
    assert remote.count() == 60_000 and rows(remote) == rows(t)
    with pytest.raises(FileNotFoundError, match="s3://gsqlc/nothing"):
        read_parquet(spark, "s3://gsqlc/nothing", filesystem=fs)


def test_csv_read_by_the_tasks_counts_malformed_rows_and_agrees_with_the_api(
        spark, files, s3, tmp_path):
    """read_csv: the LFTA tasks parse byte ranges of the files with pyarrow
    (local and on an S3 server); malformed rows are counted and skipped, as
    the Python API's CSV source does, and the answers agree."""
    import io

    from gsqlc.spark import direct_scan, read_csv
    fs, client, _ = s3
    t = packets(40_000, 7)
    text = pa.BufferOutputStream()
    import pyarrow.csv as pacsv
    pacsv.write_csv(t, text, pacsv.WriteOptions(include_header=False))
    lines = text.getvalue().to_pybytes().decode().splitlines()
    lines[100] = "1001,not-a-number,184549377,60"     # a value its type cannot take
    lines[2000] = "1010,167772161"                    # two fields missing
    body = "time,srcIP,destIP,len\n" + "\n".join(lines) + "\n"
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "p.csv").write_text(body)
    client.put_object(Bucket="gsqlc", Key="csv/p.csv", Body=body.encode())
    clean = pacsv.read_csv(io.BytesIO("\n".join(
        x for i, x in enumerate(lines) if i not in (100, 2000)).encode()),
        read_options=pacsv.ReadOptions(column_names=t.column_names),
        convert_options=pacsv.ConvertOptions(column_types=t.schema))
    q, sch = [str(files / "join.gsql")], str(files / "schema.txt")
    want = rows(gsqlc.compile(q, schema=sch).table({"eth0": clean, "eth1": clean}, output="q1"))
    ddl = "time long, srcIP long, destIP long, len long"
    for loc, kw in ((tmp_path / "in", {}), ("s3://gsqlc/csv", {"filesystem": fs})):
        df = read_csv(spark, loc, ddl, header=True, **kw)
        assert direct_scan(df).csv is not None
        out = run_query(spark, q, schema=sch, sources={"eth0": df, "eth1": df}, output="q1")
        assert rows(out) == want and len(want) > 500
        assert out.gsqlc.rows_rejected == 2        # by the one LFTA q1 needs
        assert "has 2 fields, not 4" in out.gsqlc.report
        assert df.count() == 40_000 - 2 and df.gsqlc.rows_rejected == 2
    with pytest.raises(Exception, match="on_malformed='fail'"):
        run_query(spark, q, schema=sch, sources={"eth0": df, "eth1": df}, output="q1",
                  on_malformed="fail").collect()
    # Spark's own CSV reader works, and the user is told of read_csv
    spark_csv = spark.read.csv(str(tmp_path / "in"), schema=ddl, header=True)
    with pytest.warns(UserWarning, match=r"gsqlc\.spark\.read_csv\(spark, paths, schema\)"):
        run_query(spark, q, schema=sch, sources={"eth0": spark_csv, "eth1": spark_csv},
                  output="q1")


def test_read_pcap_of_a_capture_on_an_s3_server(spark, s3):
    from gsqlc.spark import read_pcap
    fs, client, _ = s3
    trace = REPO / "examples" / "trace.pcap"
    client.put_object(Bucket="gsqlc", Key="caps/trace.pcap", Body=trace.read_bytes())
    df = read_pcap(spark, "s3://gsqlc/caps", filesystem=fs)
    table = gsqlc.read_pcap(trace)
    assert df.count() == table.num_rows
    q = REPO / "examples" / "spark" / "flows_from_pcap.gsql"
    got = run_query(spark, [str(q)], schema=gsqlc.PACKET_TABLE_SCHEMA, sources={"pkts": df})
    want = gsqlc.compile([q], schema=gsqlc.PACKET_TABLE_SCHEMA).table({"pkts": table})
    assert rows(got) == rows(want) and want.num_rows > 10


def test_packed_partials_round_trip_and_keep_equal_keys_in_one_bucket(monkeypatch):
    """_pack_partials (the LFTA task's side of a packed shuffle): every row
    comes back out of unpack_partials once, each packed stream holds one
    bucket, and rows equal on the key columns -- integers (negative ones
    too), floats, booleans, nulls -- share a bucket across flushes."""
    import gsqlc.spark.task as gs
    monkeypatch.setattr(gs, "PACK_ROWS", 1000)   # several flushes per task
    rng = np.random.default_rng(7)
    n = 4321
    keys = {"k": pa.array(rng.integers(-50, 50, n), pa.int64()),
            "f": pa.array((rng.integers(0, 4, n) - 1) / 2.0 * rng.choice([1.0, -1.0], n),
                          pa.float64()),   # 0.0 and -0.0 among them: equal, one bucket
            "b": pa.array(rng.integers(0, 2, n) == 1, pa.bool_()),
            "z": pa.array([None if i % 11 == 0 else int(i % 3) for i in range(n)], pa.int32())}
    t = pa.table({**keys, "v": pa.array(np.arange(n), pa.int64())})
    cols = list(keys)
    packed = list(gs.pack_partials(t.to_batches(max_chunksize=300), t.schema, cols, 5))
    assert len(packed) == 4 and all(b.schema.names == ["bucket", "partials"] for b in packed)
    bucket_of: dict = {}
    for b in packed:
        for bucket, blob in zip(b.column(0).to_pylist(), b.column(1).to_pylist()):
            part = pa.ipc.open_stream(blob).read_all()
            assert set(gs.buckets_of(part, cols, 5).tolist()) == {bucket}
            for r in part.select(cols).to_pylist():
                assert bucket_of.setdefault(tuple(r.values()), bucket) == bucket
    assert len(bucket_of) > 100 and len(set(bucket_of.values())) == 5
    back = gs.unpack_partials(packed)
    assert {0.0, -0.0} <= set(t.column("f").to_pylist())
    assert any(str(x) == "-0.0" for x in t.column("f").to_pylist())
    assert sorted(back.column("v").to_pylist()) == list(range(n))
    assert back.sort_by("v").equals(t)


def test_packed_partials_agree_with_partials_as_rows(spark, files, tmp_path):
    """An aggregation over integer keys: the LFTA tasks' partials cross the
    shuffle packed (pack_partials, the default) or one row each; both equal
    the Python API's answer, from Parquet read by the tasks and from rows."""
    t = packets(30_000, 11)
    pq.write_table(t, tmp_path / "p.parquet", row_group_size=5_000)
    q, sch = [str(files / "join.gsql")], str(files / "schema.txt")
    want = rows(gsqlc.compile(q, schema=sch).table({"eth0": t, "eth1": t}, output="q1"))
    for df in (spark.read.parquet(str(tmp_path)).select("time", "srcIP", "destIP", "len"),
               spark.createDataFrame(t.to_pandas()).repartition(3)):
        # three HFTA partitions, not coalesced: a group split between two
        # of them would come out twice (time_ordered=False: Parquet read by
        # the tasks would complete the epochs there, with no shuffle)
        packed = run_query(spark, q, schema=sch, sources={"eth0": df, "eth1": df}, output="q1",
                           partitions=3, time_ordered=False)
        as_rows = run_query(spark, q, schema=sch, sources={"eth0": df, "eth1": df},
                            output="q1", partitions=3, pack_partials=False, time_ordered=False)
        plan = packed._jdf.queryExecution().analyzed().toString()
        assert "partials" in plan
        assert "partials" not in as_rows._jdf.queryExecution().analyzed().toString()
        assert rows(packed) == rows(as_rows) == want and len(want) > 1000


def test_read_pcap_table_flows_through_spark(spark):
    q = REPO / "examples" / "spark" / "flows_from_pcap.gsql"
    table = gsqlc.read_pcap(REPO / "examples" / "trace.pcap")
    from gsqlc.spark import read_pcap
    df = read_pcap(spark, [REPO / "examples" / "trace.pcap"])
    assert df.count() == table.num_rows
    got = run_query(spark, [str(q)], schema=gsqlc.PACKET_TABLE_SCHEMA, sources={"pkts": df})
    want = gsqlc.compile([q], schema=gsqlc.PACKET_TABLE_SCHEMA).table({"pkts": table})
    assert rows(got) == rows(want) and want.num_rows > 10


def test_column_mismatch_is_raised_before_any_job(spark):
    sales = spark.read.csv(str(EX / "sales.csv"),
                           schema="ts long, store string, item string, qty string, "
                                  "price double, client string")
    spark.sparkContext.setJobGroup("mismatch", "mismatch")
    with pytest.raises(SparkQueryError) as e:
        run_query(spark, [str(EX / "per_minute.gsql")], schema=str(EX / "schema.txt"),
                  sources={"sales": sales.withColumn("qty", sales["qty"].cast("long"))
                                         .drop("price")})
    assert "price" in str(e.value)
    with pytest.raises(SparkQueryError) as e:
        run_query(spark, [str(EX / "per_minute.gsql")], schema=str(EX / "schema.txt"),
                  sources={"sales": sales})
    assert "qty" in str(e.value) and "uint" in str(e.value)
    assert list(spark.sparkContext.statusTracker().getJobIdsForGroup("mismatch")) == []
    with pytest.raises(SparkQueryError, match="not bound"):
        run_query(spark, [str(EX / "per_minute.gsql")], schema=str(EX / "schema.txt"),
                  sources={})


def test_query_error_is_a_located_exception(spark, tmp_path):
    bad = tmp_path / "bad.gsql"
    bad.write_text("SELECT ts,\n  count(*) FROM SALES GROUP BY stor\n")
    with pytest.raises(gsqlc.QueryError) as e:
        run_query(spark, [str(bad)], schema=str(EX / "schema.txt"),
                  sources={"sales": spark.range(1)})
    assert (e.value.file, e.value.line) == (str(bad), 2) and e.value.column > 1


def test_a_library_that_cannot_load_on_an_executor_fails_the_job_saying_why(spark, tmp_path):
    from pyspark.sql import types as T
    broken = tmp_path / _library_name("broken1")
    broken.write_bytes(b"not a library")
    spark.sparkContext.addFile(str(broken))
    st = LftaStage(digest="broken1", iface="x", output="q", out_schema=None, options={},
                   params={})
    out = T.StructType([T.StructField("id", T.LongType())])
    with pytest.raises(Exception) as e:
        spark.range(10).mapInArrow(st, out).collect()
    assert "cannot be loaded on executor" in str(e.value)
    assert "fails the same way on every attempt" in str(e.value)
    missing = LftaStage(digest="neverShipped", iface="x", output="q", out_schema=None,
                        options={}, params={})
    with pytest.raises(Exception) as e:
        spark.range(10).mapInArrow(missing, out).collect()
    assert "not in this executor's SparkFiles directory" in str(e.value)


def _executor_files(spark, digest: str):
    """Per executor task: the gsqlc files in its SparkFiles directory, and
    whether the library of `digest` is also in its temp dir (where gsqlc
    once wrote a copy per digest that nothing removed)."""
    def listing(_):
        import tempfile

        from pyspark import SparkFiles
        root = SparkFiles.getRootDirectory()
        old = os.path.join(tempfile.gettempdir(), f"gsqlc-{os.getuid()}", f"{digest}.so")
        yield sorted(f for f in os.listdir(root) if f.startswith("gsqlc-")), os.path.exists(old)
    return spark.sparkContext.parallelize(range(2), 2).mapPartitions(listing).collect()


def _remove_old_copy(digest: str) -> None:
    """Remove a copy of the library an older gsqlc left in the temp dir (the
    local executors share this machine's), so finding one after the run
    means this gsqlc wrote it."""
    import tempfile
    old = os.path.join(tempfile.gettempdir(), f"gsqlc-{os.getuid()}", f"{digest}.so")
    if os.path.exists(old):
        os.unlink(old)


def test_the_library_is_shipped_once_by_spark_and_written_nowhere_else(spark, tmp_path):
    """Spark's file distribution carries the library: one file per digest in
    each executor's SparkFiles directory (removed by Spark with the
    application), however many runs use it, and no copy in a temp dir."""
    import hashlib
    q = tmp_path / "per_store.gsql"
    q.write_text(BIG_PER_MINUTE)
    sales = spark.read.csv(str(EX / "sales.csv"),
                           schema="ts long, store string, item string, qty long, "
                                  "price double, client string")
    args = dict(schema=str(EX / "schema.txt"), sources={"sales": sales.repartition(2)})
    lib = gsqlc.compile([str(q)], schema=str(EX / "schema.txt")).library
    digest = hashlib.sha256(lib.read_bytes()).hexdigest()[:24]
    _remove_old_copy(digest)
    first = sorted(map(tuple, run_query(spark, [str(q)], **args).collect()))
    again = sorted(map(tuple, run_query(spark, [str(q)], **args).collect()))
    assert first == again and len(first) > 0
    shipped = [f for f in spark.sparkContext.listFiles if f.endswith(_library_name(digest))]
    assert len(shipped) == 1
    for files, in_temp in _executor_files(spark, digest):
        assert files.count(_library_name(digest)) == 1 and not in_temp


def test_a_failing_partition_fails_the_job_with_the_runtime_message(spark, tmp_path):
    q = tmp_path / "clients.gsql"
    q.write_text("SELECT ts, client FROM SALES WHERE qty > 0\n")
    sales = spark.read.csv(str(EX / "sales.csv"),
                           schema="ts long, store string, item string, qty long, "
                                  "price double, client string")
    bad = sales.withColumn("client", sales["store"])     # 'north' is no IP address
    args = dict(schema=str(EX / "schema.txt"), sources={"sales": bad.repartition(3)})
    # counted and skipped by default: no row survives, and none is invented;
    # the count and the partitions' reports reach the driver
    out = run_query(spark, [str(q)], **args)
    assert out.gsqlc.rows_rejected == 0 and out.gsqlc.report == ""
    assert out.count() == 0
    assert out.gsqlc.rows_rejected == sales.count() == 50
    assert "rows rejected as malformed" in out.gsqlc.report
    assert "'north' is not a valid IP" in out.gsqlc.report
    with pytest.raises(Exception) as e:
        run_query(spark, [str(q)], on_malformed="fail", **args).collect()
    assert "malformed" in str(e.value) and "north" in str(e.value)
    assert "fails the same way on every attempt" in str(e.value)


BIG_PER_MINUTE = ("SELECT tb*60 as minute, store, count(*) as sales, sum(qty) as units\n"
                  "FROM SALES WHERE qty >= 3\nGROUP BY ts/60 as tb, store\n")


def _stream_files(d, rows_by_file: list[list[str]]) -> None:
    """One file per micro-batch, modified in order (Spark's file source
    takes the oldest files first)."""
    d.mkdir()
    for i, rows_ in enumerate(rows_by_file):
        f = d / f"part{i:03d}.csv"
        f.write_text("".join(r + "\n" for r in rows_))
        os.utime(f, (1_700_000_000 + i, 1_700_000_000 + i))


@pytest.mark.filterwarnings("ignore:gsqlc.spark. source .* read by Spark's CSV reader")  # the batch answer
def test_structured_streaming_closes_epochs_by_watermark(spark, tmp_path):
    """A streaming DataFrame over a directory of CSV files, one file per
    micro-batch: epochs close as later ones are seen (watermark), and the
    last rows -- which the WHERE rejects -- still close the last data
    epoch through the LFTA's heartbeat.  The result equals the batch
    answer."""
    q = tmp_path / "big_per_minute.gsql"
    q.write_text(BIG_PER_MINUTE)
    lines = (EX / "sales.csv").read_text().splitlines()
    files = [lines[i:i + 7] for i in range(0, len(lines), 7)]
    last_ts = int(lines[-1].split(",")[0])
    files.append([f"{last_ts + 300},north,bread,1,1.0,10.0.0.1",   # qty 1 < 3: rejected
                  f"{last_ts + 301},south,bread,2,1.0,10.0.0.2"])
    src = tmp_path / "in"
    _stream_files(src, files)
    schema = "ts long, store string, item string, qty long, price double, client string"
    sch = str(EX / "schema.txt")
    batch_df = spark.read.csv(str(src), schema=schema)
    want = rows(run_query(spark, [str(q)], schema=sch, sources={"sales": batch_df}))
    assert want == rows(gsqlc.compile([q], schema=sch).table({"sales": f"csv:{EX / 'sales.csv'}"}))

    stream_df = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).csv(str(src))
    out = run_query(spark, [str(q)], schema=sch, sources={"sales": stream_df})
    assert out.isStreaming
    w = (out.writeStream.format("memory").queryName("gsqlc_stream_test").outputMode("append")
         .option("checkpointLocation", str(tmp_path / "ckpt")).trigger(availableNow=True).start())
    w.awaitTermination(300)
    assert w.exception() is None
    got = rows(spark.table("gsqlc_stream_test"))
    assert got == want and len(want) > 5
    # the state of closed epochs is dropped: what the aggregation holds at the
    # end is at most the last (heartbeat-only) epoch's groups
    state = w.lastProgress["stateOperators"][0]["numRowsTotal"]
    assert state <= 2


def test_a_finite_stream_ends_with_its_last_epochs_out(spark, tmp_path):
    """read_stream(finite=True) over a directory of CSV files, one file per
    micro-batch, under Trigger.AvailableNow: with no row after the last
    epoch, its groups still come out -- the result is the batch answer.
    Over Spark's own file source the last epoch stays in state."""
    from gsqlc.spark import read_stream
    q = tmp_path / "big_per_minute.gsql"
    q.write_text(BIG_PER_MINUTE)
    lines = (EX / "sales.csv").read_text().splitlines()
    src = tmp_path / "in"
    _stream_files(src, [lines[i:i + 7] for i in range(0, len(lines), 7)])
    schema = "ts long, store string, item string, qty long, price double, client string"
    sch = str(EX / "schema.txt")
    want = rows(gsqlc.compile([q], schema=sch).table({"sales": f"csv:{EX / 'sales.csv'}"}))

    def stream(df, name):
        out = run_query(spark, [str(q)], schema=sch, sources={"sales": df})
        w = (out.writeStream.format("memory").queryName(name).outputMode("append")
             .option("checkpointLocation", str(tmp_path / name)).trigger(availableNow=True)
             .start())
        w.awaitTermination(300)
        assert w.exception() is None
        return rows(spark.table(name)), w
    got, w = stream(read_stream(spark, src, "csv", schema, finite=True, files_per_batch=1),
                    "gsqlc_finite_stream")
    assert got == want and len(want) > 5
    assert w.lastProgress["stateOperators"][0]["numRowsTotal"] <= 1   # the end's own epoch
    plain, _ = stream(spark.readStream.schema(schema).option("maxFilesPerTrigger", 1)
                      .csv(str(src)), "spark_file_stream")
    missing = set(want) - set(plain)     # the last epochs (the watermark's delay)
    assert set(plain) < set(want) and min(r[0] for r in missing) > max(r[0] for r in plain)


def test_a_stream_whose_times_start_at_zero_keeps_its_first_epoch(spark, tmp_path):
    """Spark's watermark starts at 0 and drops rows at or below it: a stream
    whose temporal column starts at 0 (relative times) still gives the batch
    answer, its first epoch included."""
    from gsqlc.spark import read_stream
    q = tmp_path / "big_per_minute.gsql"
    q.write_text(BIG_PER_MINUTE)
    lines = (EX / "sales.csv").read_text().splitlines()
    t0 = int(lines[0].split(",")[0])
    lines = [f"{int(r.split(',')[0]) - t0},{r.split(',', 1)[1]}" for r in lines]
    (tmp_path / "all.csv").write_text("".join(r + "\n" for r in lines))
    src = tmp_path / "in"
    _stream_files(src, [lines[i:i + 7] for i in range(0, len(lines), 7)])
    schema = "ts long, store string, item string, qty long, price double, client string"
    sch = str(EX / "schema.txt")
    want = rows(gsqlc.compile([q], schema=sch).table({"sales": f"csv:{tmp_path / 'all.csv'}"}))
    assert min(r[0] for r in want) == 0
    out = run_query(spark, [str(q)], schema=sch,
                    sources={"sales": read_stream(spark, src, "csv", schema, finite=True,
                                                  files_per_batch=1)})
    w = (out.writeStream.format("memory").queryName("gsqlc_from_zero").outputMode("append")
         .option("checkpointLocation", str(tmp_path / "ckpt")).trigger(availableNow=True)
         .start())
    w.awaitTermination(300)
    assert w.exception() is None
    assert rows(spark.table("gsqlc_from_zero")) == want


def test_a_finite_parquet_stream_on_an_s3_server_gives_the_batch_answer(spark, files, s3,
                                                                        tmp_path):
    """read_stream of Parquet files on an S3 server, finite: the aggregation
    over the stream equals the Python API's over the whole table."""
    import time as _time

    from gsqlc.spark import read_stream
    fs, client, _ = s3
    t = packets(30_000, 8)
    for i in range(3):     # arriving in order: one file per micro-batch
        put_parquet(client, f"stream/part{i}.parquet", t.slice(i * 10_000, 10_000), 2_500)
        _time.sleep(1.1)   # S3 keeps modification times to the second
    q, sch = [str(files / "join.gsql")], str(files / "schema.txt")
    want = rows(gsqlc.compile(q, schema=sch).table({"eth0": t, "eth1": t}, output="q1"))
    df = read_stream(spark, "s3://gsqlc/stream", "parquet", finite=True, files_per_batch=1,
                     filesystem=fs)
    out = run_query(spark, q, schema=sch, sources={"eth0": df}, output="q1")
    w = (out.writeStream.format("memory").queryName("gsqlc_parquet_stream").outputMode("append")
         .option("checkpointLocation", str(tmp_path / "ckpt")).trigger(availableNow=True)
         .start())
    w.awaitTermination(300)
    assert w.exception() is None
    assert rows(spark.table("gsqlc_parquet_stream")) == want and len(want) > 500


def test_the_spark_example_runs(tmp_path):
    import subprocess
    p = subprocess.run([sys.executable, str(REPO / "examples" / "spark" / "run_example.py")],
                       cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "equal to Spark SQL on minute/store/sales/units: True" in p.stdout
    assert "read_pcap: 1455 packets, 40 columns" in p.stdout
    assert "flows_from_pcap (top 10 by bytes)" in p.stdout


STREAM_JOIN_Q = (
    "DEFINE {query_name 'q1';}\n"
    "select tb, srcIP, destIP, count(*) as c1, sum(len) as b1 from eth0.PKTS where len > 0\n"
    "group by time/10 as tb, srcIP, destIP;\n"
    "DEFINE {query_name 'q2';}\n"
    "select tb, srcIP, destIP, count(*) as c2, sum(len) as b2 from eth1.PKTS where len > 0\n"
    "group by time/10 as tb, srcIP, destIP;\n"
    "DEFINE {query_name 'j';}\n"
    "select A.tb, A.srcIP, A.destIP, A.c1, B.c2, B.b2 OUTER_JOIN from q1 A, q2 B\n"
    "where A.tb = B.tb and A.srcIP = B.srcIP and A.destIP = B.destIP;")


@pytest.mark.filterwarnings("ignore:gsqlc.spark. source .* read by Spark's CSV reader")  # the batch answer
def test_structured_streaming_join_of_two_aggregations_runs_per_epoch(spark, tmp_path, files):
    """Two streaming DataFrames (directories of CSV files, one file each per
    micro-batch): the join of their per-epoch aggregations gathers both
    LFTAs' partials per epoch under a watermark on each side, releases an
    epoch once both moved past it and drops its state; the result equals
    the batch answer (full outer join: unmatched groups of either side)."""
    q = tmp_path / "sj.gsql"
    q.write_text(STREAM_JOIN_Q)
    sch = str(files / "schema.txt")
    a, b = packets(3000, 5), packets(2000, 6)
    want = rows(gsqlc.compile([q], schema=sch).table({"eth0": a, "eth1": b}, output="j"))
    assert len(want) > 100
    last = int(max(a.column("time").to_pylist() + b.column("time").to_pylist()))
    dirs = {}
    for name, t in (("eth0", a), ("eth1", b)):
        recs = [f"{r['time']},{r['srcIP']},{r['destIP']},{r['len']}" for r in t.to_pylist()]
        chunks = [recs[i:i + 600] for i in range(0, len(recs), 600)]
        # a last row the WHERE rejects: its heartbeat closes the last epoch
        chunks.append([f"{last + 30},{0x0A000000},{0x0B000000},0"])
        _stream_files(tmp_path / name, chunks)
        dirs[name] = tmp_path / name
    schema = "time long, srcIP long, destIP long, len long"
    batch = run_query(spark, [str(q)], schema=sch, output="j",
                      sources={k: spark.read.csv(str(d), schema=schema) for k, d in dirs.items()})
    assert rows(batch) == want
    streams = {k: spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).csv(str(d))
               for k, d in dirs.items()}
    out = run_query(spark, [str(q)], schema=sch, output="j", sources=streams)
    assert out.isStreaming
    w = (out.writeStream.format("memory").queryName("gsqlc_stream_join").outputMode("append")
         .option("checkpointLocation", str(tmp_path / "ckpt")).trigger(availableNow=True).start())
    w.awaitTermination(300)
    assert w.exception() is None
    assert rows(spark.table("gsqlc_stream_join")) == want
    # epochs are released as the micro-batches go, and their state dropped:
    # at the end at most the closing (heartbeat) epoch remains
    removed = [s.get("numRowsRemoved", 0) for p in w.recentProgress for s in p["stateOperators"]]
    assert sum(1 for r in removed if r > 0) >= 3, w.recentProgress
    assert w.lastProgress["stateOperators"][-1]["numRowsTotal"] <= 2, w.lastProgress


def test_streaming_join_that_cannot_run_per_epoch_is_refused_before_any_job(spark, files, tmp_path):
    q = tmp_path / "band.gsql"
    q.write_text("DEFINE {query_name 'r';}\nselect time, srcIP from eth0.PKTS;\n"
                 "DEFINE {query_name 's';}\nselect time, srcIP from eth1.PKTS;\n"
                 "DEFINE {query_name 'b';}\n"
                 "select R.time, R.srcIP, S.time as t2 INNER_JOIN from r R, s S\n"
                 "where R.srcIP = S.srcIP and R.time >= S.time - 5 and R.time <= S.time + 5;")
    d = tmp_path / "in"
    _stream_files(d, [["1000,1,2,3"]])
    s = spark.readStream.schema("time long, srcIP long, destIP long, len long").csv(str(d))
    with pytest.raises(SparkQueryError, match="only joins with a temporal equality"):
        run_query(spark, [str(q)], schema=str(files / "schema.txt"), output="b",
                  sources={"eth0": s, "eth1": s})


def test_structured_streaming_aggregation_over_an_interface_set_waits_for_the_lagging_member(
        spark, tmp_path, files):
    """An aggregation over [links].PKTS with two streaming members, one
    delivering its rows in 6 micro-batches and the other in 2: each member's
    LFTA partials come under their own watermark, so an epoch closes only
    once both moved past it; the result equals the batch answer."""
    q = tmp_path / "pm.gsql"
    q.write_text("DEFINE {query_name 'pm';}\n"
                 "select tb, srcIP, count(*) as c, sum(len) as b from [links].PKTS where len > 0\n"
                 "group by time/10 as tb, srcIP\n")
    sch = str(files / "schema.txt")
    a, b = packets(3000, 7), packets(3000, 8)
    want = rows(gsqlc.compile([q], schema=sch).table({"links": [a, b]}))
    assert len(want) > 100
    last = int(max(a.column("time").to_pylist() + b.column("time").to_pylist()))
    dirs = []
    for name, t, per_file in (("m0", a, 500), ("m1", b, 1500)):
        recs = [f"{r['time']},{r['srcIP']},{r['destIP']},{r['len']}" for r in t.to_pylist()]
        chunks = [recs[i:i + per_file] for i in range(0, len(recs), per_file)]
        chunks.append([f"{last + 30},{0x0A000000},{0x0B000000},0"])   # rejected: closes
        _stream_files(tmp_path / name, chunks)
        dirs.append(tmp_path / name)
    schema = "time long, srcIP long, destIP long, len long"
    streams = [spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).csv(str(d))
               for d in dirs]
    out = run_query(spark, [str(q)], schema=sch, sources={"links": streams})
    w = (out.writeStream.format("memory").queryName("gsqlc_stream_set").outputMode("append")
         .option("checkpointLocation", str(tmp_path / "ckpt")).trigger(availableNow=True).start())
    w.awaitTermination(300)
    assert w.exception() is None
    assert rows(spark.table("gsqlc_stream_set")) == want
    assert w.lastProgress["stateOperators"][-1]["numRowsTotal"] <= 2, w.lastProgress


@pytest.mark.filterwarnings("ignore:gsqlc.spark. source .* read by Spark's CSV reader")  # the batch answer
def test_structured_streaming_counts_rows_late_within_the_disorder(spark, tmp_path):
    """Micro-batches deliver rows out of order: the second holds rows of the
    minute two epochs behind the newest already seen.  With three epochs
    open (Tigon's HFTA default) the watermark still holds that epoch and
    they count: the batch answer.  (Below the watermark Spark only may drop
    rows, so the in-order case has no exact answer to test.)"""
    disorder = 3
    q = tmp_path / "per_minute.gsql"
    q.write_text(BIG_PER_MINUTE)
    b = 1_700_000_040                       # a minute boundary
    first = [f"{b + 60 * m + 5},north,bread,5,1.0,10.0.0.1" for m in (0, 1, 2)]
    late = [f"{b + 10},north,bread,4,1.0,10.0.0.1", f"{b + 20},north,bread,3,1.0,10.0.0.1",
            f"{b + 60 * 3 + 1},north,bread,3,1.0,10.0.0.1"]
    closing = [f"{b + 60 * 9 + 1},north,bread,3,1.0,10.0.0.1"]
    src = tmp_path / "in"
    _stream_files(src, [first, late, closing])
    schema = "ts long, store string, item string, qty long, price double, client string"
    sch = str(EX / "schema.txt")
    want = rows(run_query(spark, [str(q)], schema=sch,
                          sources={"sales": spark.read.csv(str(src), schema=schema)}))
    assert want[0] == (b, "north", 3, 12)
    stream_df = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).csv(str(src))
    out = run_query(spark, [str(q)], schema=sch, sources={"sales": stream_df},
                    max_hfta_disorder=disorder, max_lfta_disorder=min(disorder, 2))
    name = f"gsqlc_disorder_{disorder}"
    w = (out.writeStream.format("memory").queryName(name).outputMode("append")
         .option("checkpointLocation", str(tmp_path / "ckpt")).trigger(availableNow=True).start())
    w.awaitTermination(300)
    assert w.exception() is None
    got = rows(spark.table(name))
    assert got == [r for r in want if r[0] <= b + 180]


# ------------------------------------------------ declared time bounds (issue 11, part 8)

PER_SECOND_Q = ("DEFINE {query_name 'ps';}\n"
                "select tb, srcIP, count(*) as c, sum(len) as b from eth0.PKTS where len > 0\n"
                "group by time as tb, srcIP\n")
PKT_SCHEMA = "time long, srcIP long, destIP long, len long"


def _packet_files(d, files: list[list[tuple]]) -> None:
    """PKTS rows (time, srcIP, destIP, len), one CSV file (micro-batch) per list."""
    _stream_files(d, [[",".join(map(str, r)) for r in f] for f in files])


def _run_stream(spark, out, name: str, ckpt):
    """out to a memory table `name` with trigger(availableNow=True): (the
    sorted rows, the query's progress reports)."""
    w = (out.writeStream.format("memory").queryName(name).outputMode("append")
         .option("checkpointLocation", str(ckpt)).trigger(availableNow=True).start())
    w.awaitTermination(300)
    assert w.exception() is None
    return rows(spark.table(name)), w.recentProgress


def _dropped(progress) -> int:
    return sum(s.get("numRowsDroppedByWatermark", 0) for p in progress
               for s in p["stateOperators"])


def _watermarks(out) -> dict[str, str]:
    """{source directory name: the delay of the EventTimeWatermark over it}
    in the analyzed plan (each watermark's subtree, printed below it,
    reaches one file source)."""
    lines = out._jdf.queryExecution().analyzed().toString().splitlines()
    found = {}
    for i, line in enumerate(lines):
        m = re.search(r"EventTimeWatermark .*, (\d+ seconds?)$", line)
        if m:
            src = next(x for x in lines[i:] if "FileSource[" in x)
            found[os.path.basename(re.search(r"FileSource\[([^\]]+)\]", src).group(1))] = \
                m.group(1)
    return found


def test_declared_out_of_order_keeps_late_rows_in_structured_streaming(spark, tmp_path, files):
    """One source out of order by up to 2 s across micro-batches (each late
    file after a file that does not advance time, so Spark's watermark has
    caught up with the newest row when the late ones come), epochs of one
    second, in-order processing (M = 1).  Declared out_of_order = 2 makes
    the source's watermark 3 epochs behind: no row lost, the answer is the
    true count.  Without the declaration (watermark 1 behind) both late
    partials are dropped, with out_of_order = 1 (2 behind) the one 2 s
    late is."""
    q = tmp_path / "ps.gsql"
    q.write_text(PER_SECOND_Q)
    sch = str(files / "schema.txt")
    batches = [
        [(t, 1 + t % 3, 100 + t % 7) for t in range(1000, 1011)],
        [(1010, 2, 50)],                                   # time stands still
        [(1008, 1, 7), (1009, 2, 7), (1011, 1, 70), (1012, 2, 70)],   # 2 s and 1 s late
        [(1030, 1, 0)],                       # rejected by the WHERE: its heartbeat closes
    ]
    counts: dict = {}
    for t, ip, n in (r for b in batches for r in b if r[2] > 0):
        c, s = counts.get((t, ip), (0, 0))
        counts[(t, ip)] = (c + 1, s + n)
    truth = sorted((t, ip, c, s) for (t, ip), (c, s) in counts.items())
    _packet_files(tmp_path / "in", [[(t, ip, ip, n) for t, ip, n in b] for b in batches])

    def run(tag, **bounds):
        stream = spark.readStream.schema(PKT_SCHEMA).option("maxFilesPerTrigger", 1) \
                      .csv(str(tmp_path / "in"))
        out = run_query(spark, [str(q)], schema=sch, sources={"eth0": stream},
                        max_hfta_disorder=1, max_lfta_disorder=1, ip_format="int", **bounds)
        return _watermarks(out)["in"], *_run_stream(spark, out, f"gsqlc_ooo_{tag}",
                                                   tmp_path / f"ckpt_{tag}")

    delay, got, progress = run("declared", out_of_order={"eth0": 2})
    assert delay == "3 seconds"
    assert got == truth and _dropped(progress) == 0
    delay, got, progress = run("undeclared")
    assert delay == "1 seconds"
    assert _dropped(progress) == 2 and got != truth
    assert {r[:2] for r in truth} - {r[:2] for r in got} == set()   # counts short, not groups
    delay, got, progress = run("too_small", out_of_order={"eth0": 1})
    assert delay == "2 seconds"
    assert _dropped(progress) == 1 and got != truth


def test_each_source_gets_the_watermark_delay_of_its_declared_bound(spark, tmp_path, files):
    """Two sources of a join, with bounds from the interfaces file and from
    out_of_order=: each side's watermark is its own, max(M, ceil(B / w) + 1)
    epochs of time/10 (M = 3); a member of an interface set takes the bound
    given for it.  Wall-clock bounds warn; the estimators and Spark's 'max'
    watermark policy are refused."""
    q = tmp_path / "sj.gsql"
    q.write_text(STREAM_JOIN_Q)
    sch = str(files / "schema.txt")
    for name in ("eth0", "eth1", "m0", "m1"):
        _packet_files(tmp_path / name, [[(1000, 1, 1, 1)]])

    def stream(name):
        return spark.readStream.schema(PKT_SCHEMA).csv(str(tmp_path / name))
    ifile = tmp_path / "ifaces.toml"
    ifile.write_text("[interface.eth0]\nout_of_order = 45.0\n")    # ceil(4.5) + 1 = 6
    join = dict(schema=sch, output="j", sources={"eth0": stream("eth0"), "eth1": stream("eth1")})
    out = run_query(spark, [str(q)], interfaces=ifile, out_of_order={"eth1": 35}, **join)
    assert _watermarks(out) == {"eth0": "6 seconds", "eth1": "5 seconds"}
    out = run_query(spark, [str(q)], out_of_order={"eth1": 5}, **join)   # ceil(.5) + 1 < M
    assert _watermarks(out) == {"eth0": "3 seconds", "eth1": "3 seconds"}
    assert spark.conf.get("spark.sql.streaming.multipleWatermarkPolicy") == "min"

    pm = tmp_path / "pm.gsql"
    pm.write_text("DEFINE {query_name 'pm';}\n"
                  "select tb, srcIP, count(*) as c from [links].PKTS group by time/10 as tb, srcIP")
    out = run_query(spark, [str(pm)], schema=sch, sources={"links": [stream("m0"), stream("m1")]},
                    out_of_order={"links.1": 25})
    assert _watermarks(out) == {"m0": "3 seconds", "m1": "4 seconds"}

    with pytest.warns(UserWarning, match=r"latency of eth0; \[heartbeats\] timeout: wall-clock"):
        run_query(spark, [str(q)], latency={"eth0": 0.5}, heartbeat_timeout=3, **join)
    bad = tmp_path / "estimate.toml"
    bad.write_text('[heartbeats]\nestimate = "adaptive"\n')
    with pytest.raises(gsqlc.UsageError, match=r"\[heartbeats\] estimate = 'adaptive'"):
        run_query(spark, [str(q)], interfaces=bad, **join)
    with pytest.raises(gsqlc.UsageError, match="out_of_order eth7: no source binds"):
        run_query(spark, [str(q)], out_of_order={"eth7": 1}, **join)
    spark.conf.set("spark.sql.streaming.multipleWatermarkPolicy", "max")
    try:
        with pytest.raises(SparkQueryError, match="needs 'min'"):
            run_query(spark, [str(q)], **join)
    finally:
        spark.conf.set("spark.sql.streaming.multipleWatermarkPolicy", "min")


def test_a_lagging_source_holds_the_watermark_back_and_loses_nothing(spark, tmp_path, files):
    """Spark's watermark is the MIN over the sources' (the policy run_query
    sets), which is how a skew bound between two sources holds: eth0 sends
    all its 2 minutes in the first micro-batch, eth1 the same minutes over
    three.  The query's watermark follows eth1 -- its latest epoch less 3 --
    so no eth1 row is late and the join equals the batch answer; with the
    'max' policy (forced after run_query) eth1's rows are dropped."""
    q = tmp_path / "sj.gsql"
    q.write_text(STREAM_JOIN_Q)
    sch = str(files / "schema.txt")
    a, b = packets(1500, 11), packets(1500, 12)
    want = rows(gsqlc.compile([q], schema=sch).table({"eth0": a, "eth1": b}, output="j"))
    last = int(max(a.column("time").to_pylist() + b.column("time").to_pylist()))
    closing = (last + 30, 0x0A000000, 0x0B000000, 0)
    recs = {k: [tuple(r.values()) for r in t.to_pylist()] for k, t in (("eth0", a), ("eth1", b))}
    _packet_files(tmp_path / "eth0", [recs["eth0"], [closing]])
    chunks = [recs["eth1"][i:i + 500] for i in range(0, 1500, 500)]
    _packet_files(tmp_path / "eth1", chunks + [[closing]])

    def run(tag, skew=None):
        streams = {k: spark.readStream.schema(PKT_SCHEMA).option("maxFilesPerTrigger", 1)
                   .csv(str(tmp_path / k)) for k in ("eth0", "eth1")}
        out = run_query(spark, [str(q)], schema=sch, output="j", sources=streams, skew=skew)
        if tag == "max":
            spark.conf.set("spark.sql.streaming.multipleWatermarkPolicy", "max")
        try:
            return _run_stream(spark, out, f"gsqlc_lag_{tag}", tmp_path / f"ckpt_{tag}")
        finally:
            spark.conf.set("spark.sql.streaming.multipleWatermarkPolicy", "min")

    got, progress = run("min", skew={("eth0", "eth1"): (1.0, 120.0)})
    assert got == want and _dropped(progress) == 0
    # after the first micro-batch eth0 is at its last epoch, eth1 at the
    # epoch of its first chunk's last row: the watermark is eth1's, less 3
    # (an epoch e is Spark's second e + 1: _with_epoch)
    epoch0, epoch1 = int(max(a.column("time").to_pylist())) // 10, chunks[0][-1][0] // 10
    wm = datetime.fromisoformat(progress[1]["eventTime"]["watermark"].replace("Z", "+00:00"))
    assert wm.timestamp() == epoch1 + 1 - 3 < epoch0 + 1 - 3, progress[1]
    got, progress = run("max")
    assert _dropped(progress) > 0 and got != want


def test_malformed_counts_are_kept_per_piece(spark):
    """A piece's malformed count replaces what an earlier attempt of the
    same piece (same SQL action; outside SQL, same stage) added: a task
    Spark runs again is not counted twice; different pieces and actions add
    up."""
    from gsqlc.spark import MalformedRows
    m = MalformedRows(spark.sparkContext)

    def task(it):
        n = sum(1 for _ in it)
        m._add(n, f"{n} rows\n")          # this partition's count ...
        m._add(n, f"{n} rows\n")          # ... and the same again, as a re-run gives it
        m._add(1, "a file range\n", piece="csv-unit-7")
        yield n
    sc = spark.sparkContext
    assert sum(sc.parallelize(range(10), 2).mapPartitions(task).collect()) == 10
    assert m.rows_rejected == 10 + 1
    assert m.report.count("rows\n") == 2 and m.report.count("a file range") == 1
    sc.parallelize(range(6), 3).mapPartitions(task).collect()     # another stage: added
    assert m.rows_rejected == 10 + 1 + 6 + 1


def test_user_aggregates_and_functions_run_on_the_executors(spark, files, tmp_path):
    """A def file and a C++ source in Tigon's convention (issue 12, part 4):
    built into the library Spark ships, they run in the executors' tasks and
    agree with the Python API."""
    (tmp_path / "my.def").write_text("float UDAF POSAVG fstring16 (float);\n"
                                     "uint FUN [LFTA_LEGAL] twice (uint);\n")
    (tmp_path / "my.cc").write_text(
        '#include "hfta_udaf.h"\n'
        "struct st { gs_float_t sum, cnt; };\n"
        "void POSAVG_HFTA_AGGR_INIT_(gs_sp_t b) { st *s = (st *)b; s->sum = s->cnt = 0; }\n"
        "void POSAVG_HFTA_AGGR_UPDATE_(gs_sp_t b, gs_float_t v)\n"
        "{ st *s = (st *)b; if (v >= 0) { s->sum += v; s->cnt += 1; } }\n"
        "void POSAVG_HFTA_AGGR_OUTPUT_(gs_float_t *r, gs_sp_t b)\n"
        "{ st *s = (st *)b; *r = s->cnt > 0 ? s->sum / s->cnt : -1; }\n"
        "void POSAVG_HFTA_AGGR_DESTROY_(gs_sp_t b) { (void)b; }\n")
    (tmp_path / "my.c").write_text('#include "rts_external.h"\n'
                                   "gs_uint32_t twice(gs_uint32_t x) { return 2 * x; }\n")
    q = tmp_path / "u.gsql"
    q.write_text("select tb, srcIP, POSAVG(FLOAT(len) - 700.0) as pa, count(*) as n\n"
                 "from eth0.PKTS where twice(len) > 1000 group by time/10 as tb, srcIP")
    kw = dict(functions=[str(tmp_path / "my.def")],
              udf=[str(tmp_path / "my.cc"), str(tmp_path / "my.c")])
    t = packets(4000, 7)
    want = rows(gsqlc.compile([q], schema=files / "schema.txt", **kw)
                .table({"eth0": t}, ip_format="int"))
    df = spark.createDataFrame(t.to_pandas()).repartition(3)
    got = run_query(spark, [str(q)], schema=str(files / "schema.txt"), sources={"eth0": df},
                    ip_format="int", **kw)
    assert rows(got) == want and len(want) > 100
