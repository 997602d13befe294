"""run_query with query text and no schema file: the sources' DataFrames
are STREAMs of their names (gsqlc.sql's rule), batch and streaming, with
the answers of the same query from files with a schema file."""
from __future__ import annotations

import os
import sys

import pytest

import gsqlc
from conftest import REPO

pyspark = pytest.importorskip("pyspark")
pytestmark = pytest.mark.slow  # a JVM and local Spark jobs

from gsqlc.spark import run_query  # noqa: E402

EX = REPO / "examples" / "csv"
COLUMNS = "ts long, store string, item string, qty long, price double, client string"
TEXT = ("select tb, store, count(*) as n, sum(qty) as units, max(client) as top\n"
        "from sales where qty >= 2 group by ts/60 as tb, store")
SCHEMA_FILE = ("STREAM sales { llong ts (increasing); string store; string item; llong qty; "
               "float price; IP client; }\n")


@pytest.fixture(scope="module")
def spark():
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    s = (SparkSession.builder.master("local[2]").appName("gsqlc-sql-text-tests")
         .config("spark.ui.enabled", "false")
         .config("spark.sql.shuffle.partitions", "2")
         .getOrCreate())
    s.sparkContext.setLogLevel("ERROR")
    yield s
    s.stop()


def rows(df) -> list:
    return sorted(tuple(r) for r in df.collect())


@pytest.fixture(scope="module")
def want(tmp_path_factory) -> list:
    d = tmp_path_factory.mktemp("sqltext_spark")
    (d / "q.gsql").write_text(TEXT + "\n")
    (d / "schema.txt").write_text(SCHEMA_FILE)
    t = gsqlc.compile([d / "q.gsql"], schema=d / "schema.txt").table(
        {"sales": f"csv:{EX / 'sales.csv'}"})
    return sorted(tuple(r.values()) for r in t.to_pylist())


def test_text_over_a_dataframe_without_a_schema_file(spark, want):
    df = spark.read.csv(str(EX / "sales.csv"), schema=COLUMNS)
    out = run_query(spark, TEXT, sources={"sales": df}, temporal={"ts": "increasing"},
                    ip=["client"])
    assert len(want) > 5 and rows(out) == want


def test_text_over_a_streaming_dataframe(spark, want, tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    lines = (EX / "sales.csv").read_text().splitlines()
    files = [lines[i:i + 7] for i in range(0, len(lines), 7)]
    # a last file 5 minutes on, its rows rejected by the WHERE (qty 1): the
    # watermark passes the last data epochs, which close
    last_ts = int(lines[-1].split(",")[0])
    files.append([f"{last_ts + 300},north,bread,1,1.0,10.0.0.1",
                  f"{last_ts + 301},south,bread,1,1.0,10.0.0.2"])
    for i, chunk in enumerate(files):   # modified in order: Spark reads the oldest first
        f = src / f"part{i:03d}.csv"
        f.write_text("".join(r + "\n" for r in chunk))
        os.utime(f, (1_700_000_000 + i, 1_700_000_000 + i))
    stream_df = spark.readStream.schema(COLUMNS).option("maxFilesPerTrigger", 1).csv(str(src))
    out = run_query(spark, TEXT, sources={"sales": stream_df}, temporal={"ts": "increasing"},
                    ip=["client"])
    assert out.isStreaming
    w = (out.writeStream.format("memory").queryName("gsqlc_sql_text").outputMode("append")
         .option("checkpointLocation", str(tmp_path / "ckpt")).trigger(availableNow=True).start())
    w.awaitTermination(300)
    assert w.exception() is None
    assert rows(spark.table("gsqlc_sql_text")) == want


def test_errors_name_the_column_and_the_text(spark):
    import datetime
    df = spark.createDataFrame([(datetime.datetime(2026, 3, 1), "a")], "ts timestamp, store string")
    with pytest.raises(gsqlc.UsageError, match="column 'ts' has Arrow type timestamp"):
        run_query(spark, "select ts, store from sales", sources={"sales": df},
                  temporal={"ts": "increasing"})
    df = spark.read.csv(str(EX / "sales.csv"), schema=COLUMNS)
    with pytest.raises(gsqlc.QueryError) as e:
        run_query(spark, "select ts, stor from sales", sources={"sales": df},
                  temporal={"ts": "increasing"})
    assert (e.value.file, e.value.line, e.value.column) == ("<query>", 1, 12)
