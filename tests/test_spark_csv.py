"""gsqlc.spark.read_csv given the GSQL schema alone: the columns are a
PROTOCOL's CSV fields, read from their positions or, with header=True, from
the columns their names name; times as their time_format says, agreeing
with gsqlc's own CSV reader (the Python API) value for value; quoted fields
with commas and doubled quotes, and a quoted line break refused with a
clear error; a first line naming the fields skipped and noted.

Files are cut into two pieces here (local[2]), so pieces after a file's
first find their header too.
"""
from __future__ import annotations

import os
import sys

import pyarrow as pa
import pytest

import gsqlc
from conftest import REPO

pyspark = pytest.importorskip("pyspark")
pytestmark = pytest.mark.slow  # a JVM and local Spark jobs

from gsqlc.spark import direct_scan, read_csv, run_query  # noqa: E402

DATA = REPO / "tests" / "data" / "real_csv"
SCHEMA = DATA / "schema.txt"
HEADER = "order_id,Store,qty,note,ts\n"
# orders.csv's rows without the record holding a quoted line break, then a
# short row, a bad quantity and a day that does not exist
LINES = ['1,north,3,"first, of the day",2026-03-01T12:00:05Z',
         '2,south,1,"said ""hi""",2026-03-01 12:00:40.250',
         "4,north,2,plain,2026-03-01T12:01:00Z",
         '5,south,5,"",2026-03-01T12:02:30.5Z']
BAD = ["6,south", "7,north,x,bad,2026-03-01T12:03:00Z", "8,north,1,t,2026-02-30T00:00:00Z"]
# worked out by hand: ts in ms (time_unit ms); an empty field is null in Spark
ROWS = [(1772366405000, "north", "first, of the day", 3),
        (1772366440250, "south", 'said "hi"', 1),
        (1772366460000, "north", "plain", 2),
        (1772366550500, "south", None, 5)]


@pytest.fixture(scope="module")
def spark():
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    s = (SparkSession.builder.master("local[2]").appName("gsqlc-csv-tests")
         .config("spark.ui.enabled", "false")
         .config("spark.sql.shuffle.partitions", "2")
         .getOrCreate())
    s.sparkContext.setLogLevel("ERROR")
    yield s
    s.stop()


@pytest.fixture
def orders(tmp_path):
    d = tmp_path / "orders"
    d.mkdir()
    (d / "a.csv").write_text(HEADER + "\n".join(LINES[:2] + BAD[:1]) + "\n")
    (d / "b.csv").write_text(HEADER + "\n".join(LINES[2:] + BAD[1:]) + "\n")
    return d


def _sorted(df) -> list[tuple]:
    return sorted((tuple(r.values()) for r in df.toArrow().to_pylist()),
                  key=lambda r: tuple((x is None, x) for x in r))


def test_read_csv_takes_the_gsql_schema_and_finds_columns_by_name(spark, orders):
    df = read_csv(spark, orders, SCHEMA, protocol="ORDERS", header=True)
    assert [(f.name, f.dataType.simpleString()) for f in df.schema.fields] == \
        [("ts", "bigint"), ("store", "string"), ("note", "string"), ("qty", "bigint")]
    assert direct_scan(df).csv is not None
    assert _sorted(df) == ROWS
    assert df.gsqlc.rows_rejected == 3
    assert "'6,south' has 2 fields, not 5" in df.gsqlc.report


def test_run_query_over_it_agrees_with_gsqlc_own_csv_reader(spark, orders):
    """The same files through the Python API (csv:PATH?header=1, the
    runtime's reader) and through read_csv's tasks: one answer."""
    q = [str(DATA / "per_minute.gsql")]
    df = read_csv(spark, orders, SCHEMA, protocol="ORDERS", header=True)
    out = run_query(spark, q, schema=str(SCHEMA), sources={"o": df})
    got = sorted(tuple(r.values()) for r in out.toArrow().to_pylist())
    # per minute and store, by hand: 12:00 north 1 row (qty 3), south 1 (1);
    # 12:01 north 1 (2); 12:02 south 1 (5)
    assert got == [(29539440, "north", 1, 3), (29539440, "south", 1, 1),
                   (29539441, "north", 1, 2), (29539442, "south", 1, 5)]
    assert out.gsqlc.rows_rejected == 3
    qs = gsqlc.compile(q, schema=SCHEMA)
    api = [qs.table({"o": f"csv:{orders / name}?header=1"}, csv_strict=True).to_pylist()
           for name in ("a.csv", "b.csv")]
    assert sorted(tuple(r.values()) for t in api for r in t) == got


def test_times_read_as_gsqlc_own_csv_reader_reads_them(spark, tmp_path):
    """ISO-8601 times with and without zones and fractions, dates, epoch
    numbers: read_csv's values are the runtime's, and the times neither
    reads are rejected by both (the API under csv_strict)."""
    times = ["2026-03-01T12:00:05Z", "2026-03-01 12:00:05.250", "2026-03-01T12:00:05+01:00",
             "2026-03-01T12:00:05-0130", "2026-03-01T12:00:05+01", "2026-03-01",
             "2026-03-01T12", "2026-03-01T12:30", " 2026-03-01T12:00:05.999+02:00 ",
             "2024-02-29T23:59:59.123456789Z", "1999-12-31T23:59:59",
             "2026-02-30", "2026-03-01T24:00", "2026-03-01T12:00:05.", "12:00:05",
             "2026-03-01Z", "x"]
    f = tmp_path / "t.csv"
    f.write_text("".join(f"{t},{i}\n" for i, t in enumerate(times)))
    schema = tmp_path / "s.txt"
    schema.write_text("PROTOCOL T {\n"
                      "    llong ts get_csv_llong_pos1 (time_format iso8601, time_unit us);\n"
                      "    uint  i  get_csv_uint_pos2;\n}\n")
    q = tmp_path / "q.gsql"
    q.write_text("DEFINE { query_name 'q'; }\nselect ts, i from T")
    api = gsqlc.compile([q], schema=schema).table({"t": f"csv:{f}"}, csv_strict=True)
    want = sorted(tuple(r.values()) for r in api.to_pylist())
    assert len(want) == 11 and (1772366405000000, 0) in want and (1772359205999000, 8) in want
    df = read_csv(spark, f, schema)
    assert sorted(tuple(r.values()) for r in df.toArrow().to_pylist()) == want
    assert df.gsqlc.rows_rejected == 6
    out = run_query(spark, [str(q)], schema=str(schema), sources={"t": df})
    assert sorted(tuple(r.values()) for r in out.toArrow().to_pylist()) == want

    ticks = read_csv(spark, DATA / "ticks.csv", SCHEMA, protocol="TICKS")
    assert sorted(tuple(r.values()) for r in ticks.toArrow().to_pylist()) == \
        [(1772366405, 1772366405250, 1772359205, 1), (1772366405, 1772366406000, 1772323200, 2)]


def test_a_first_line_of_field_names_is_skipped_and_noted(spark, tmp_path):
    f = tmp_path / "o.csv"
    f.write_text("ts,store,note,qty\n" + "2026-03-01T12:00:05Z,north,x,3\n" * 5)
    df = read_csv(spark, f, SCHEMA, protocol="ORDERS")
    assert _sorted(df) == [(1772366405000, "north", "x", 3)] * 5
    assert df.gsqlc.rows_rejected == 0
    assert ":1: the first line names the fields (ts, store, note, qty) and was skipped as a " \
           "header; read_csv(..., header=True) finds each field's column by its name" \
           in df.gsqlc.report, df.gsqlc.report


def test_a_quoted_line_break_is_refused_naming_the_file(spark, tmp_path):
    f = tmp_path / "o.csv"
    f.write_text(HEADER + '3,north,7,"two\nlines",2026-03-01T13:00:59+01:00\n')
    df = read_csv(spark, f, SCHEMA, protocol="ORDERS", header=True)
    with pytest.raises(Exception, match=r"o\.csv: the quoted field at byte 37 holds a line "
                                         r"break; Spark's CSV readers cut files"):
        df.count()


def test_read_csv_schema_and_header_errors(spark, orders, tmp_path):
    with pytest.raises(gsqlc.UsageError, match=r"declares 3 PROTOCOLs of CSV fields \(ORDERS, "
                                                r"PLAIN, TICKS\): name one with protocol="):
        read_csv(spark, orders, SCHEMA)
    with pytest.raises(gsqlc.UsageError, match="no PROTOCOL SALES of CSV fields"):
        read_csv(spark, orders, SCHEMA, protocol="SALES")
    bad = tmp_path / "h.csv"
    bad.write_text("ts,store,note,quantity\n2026-03-01T12:00:05Z,n,x,1\n")
    with pytest.raises(gsqlc.UsageError, match=r"h\.csv: the header has no column 'qty' \(field "
                                                r"qty\); its columns: ts, store, note, quantity"):
        read_csv(spark, bad, SCHEMA, protocol="ORDERS", header=True)
    # a DDL string is still the files' columns in order
    ddl = read_csv(spark, DATA / "ticks.csv", "t string, t_ms string, local string, v long")
    assert ddl.count() == 2 and isinstance(ddl.toArrow(), pa.Table)
