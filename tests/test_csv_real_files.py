"""CSV files as data engineers write them, read through the command line and
the Python API: a header line naming the columns (csv:PATH?header=1,
--csv-header, csv_header=True), RFC 4180 quoting, ISO-8601 and epoch times
read into integer fields with a stated unit (time_format, time_unit), and a
header line given without the option, skipped and reported rather than
read as data.

The fixture (tests/data/real_csv/) is small enough to work out by hand:
orders.csv has a header with an extra column and the fields in another
order, quoted commas, doubled quotes and a quoted line break, times with
and without zones and fractions, and a short last row (line 8, counted
after the record spanning lines 4-5).
"""
from __future__ import annotations

import json
import subprocess

import pytest

import gsqlc
from conftest import REPO

DATA = REPO / "tests" / "data" / "real_csv"
SCHEMA = DATA / "schema.txt"
ORDERS = DATA / "orders.csv"

# orders.csv's rows as the PROTOCOL reads them: ts in milliseconds (time_unit
# ms), worked out by hand (2026-03-01T12:00:00Z is 1772366400 s)
ROWS = [
    {"ts": 1772366405000, "store": "north", "note": "first, of the day", "qty": 3},
    {"ts": 1772366440250, "store": "south", "note": 'said "hi"', "qty": 1},
    {"ts": 1772366459000, "store": "north", "note": "two\nlines", "qty": 7},  # 13:00:59+01:00
    {"ts": 1772366460000, "store": "north", "note": "plain", "qty": 2},
    {"ts": 1772366550500, "store": "south", "note": "", "qty": 5},
]
# per minute (ts / 60000; 12:00 is minute 29539440) and store: n, sum(qty)
PER_MINUTE = sorted(["29539440|north|2|10", "29539440|south|1|1", "29539441|north|1|2",
                     "29539442|south|1|5"])


def _stats(err: str) -> dict:
    return json.loads(err[err.index("{\n"):])


def _source(err: str) -> dict:
    return _stats(err)["sources"][0]


def _run(gsqlc_cmd, query, uri, *flags):
    return gsqlc_cmd("run", DATA / query, "--schema", SCHEMA, "--source", f"o={uri}", *flags)


# ---------------------------------------------------------------- a header


def test_header_maps_columns_by_name_quoted_fields_and_iso_times(gsqlc, tmp_path):
    """?header=1: columns found by name (an extra column skipped, 'Store'
    matched ignoring case), quoted commas, quotes and line breaks read as
    text, ISO-8601 times in milliseconds; the short row is rejected and
    described at its own line."""
    p = _run(gsqlc, "orders.gsql", f"csv:{ORDERS}?header=1", "--format", "jsonl", "--stats")
    assert p.returncode == 0, p.err
    assert [json.loads(x) for x in p.out.splitlines()] == ROWS
    src = _source(p.err)
    assert (src["rows_read"], src["rows_rejected"], src["values_coerced"], src["header"],
            src["uri"]) == (6, 1, 0, "read", f"csv:{ORDERS}")
    assert f"{ORDERS}:8: expected 5 fields, found 2" in p.err
    # the time column's declared unit is the interface's
    assert (src["time_column"], src["time_unit"], src["time_unreadable"]) == (1, "ms", 0)


def test_a_day_of_iso_times_groups_by_minute_not_by_year(gsqlc):
    p = _run(gsqlc, "per_minute.gsql", f"csv:{ORDERS}?header=1", "--clock", "data", "--stats")
    assert p.returncode == 0, p.err
    assert sorted(p.out.splitlines()) == PER_MINUTE
    # record timestamps in the field's unit: the data clock is the last row's
    assert _stats(p.err)["data_clock_usec"] == 1772366550500 * 1000


def test_csv_header_flag_and_an_interfaces_file_give_the_same(gsqlc, tmp_path):
    p = _run(gsqlc, "per_minute.gsql", f"csv:{ORDERS}", "--csv-header")
    assert p.returncode == 0, p.err
    assert sorted(p.out.splitlines()) == PER_MINUTE
    ifaces = tmp_path / "ifaces.toml"
    ifaces.write_text(f'[interface.o]\nsource = "csv:{ORDERS}?header=1"\n')
    p = gsqlc("run", DATA / "per_minute.gsql", "--schema", SCHEMA, "--interfaces", ifaces)
    assert p.returncode == 0, p.err
    assert sorted(p.out.splitlines()) == PER_MINUTE
    # header=0 on the source wins over --csv-header: the header is then data
    p = _run(gsqlc, "orders.gsql", f"csv:{ORDERS}?header=0", "--csv-header")
    assert p.returncode == 0 and "field 1 'order_id' is not an ISO-8601 time" in p.err, p.err


def test_the_stand_alone_runner_reads_a_header_alike(gsqlc, tmp_path):
    """gsqlc-run takes ?header=1 and --csv-header as gsqlc run does."""
    out = tmp_path / "built"
    p = gsqlc("compile", DATA / "per_minute.gsql", "--schema", SCHEMA, "-o", out, "--build")
    assert p.returncode == 0, p.err
    runner = out / "build" / "gsqlc-run"
    for args in ([f"o=csv:{ORDERS}?header=1"], [f"o=csv:{ORDERS}", "--csv-header"]):
        r = subprocess.run([str(runner), "--source", *args], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert sorted(r.stdout.splitlines()) == PER_MINUTE
    r = subprocess.run([str(runner), "--source", f"o=csv:{ORDERS}?header=maybe"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "header=maybe: expected header=1 or header=0" in r.stderr


def test_a_field_missing_from_the_header_fails_the_run_naming_it(gsqlc, tmp_path):
    f = tmp_path / "o.csv"
    f.write_text("ts,store,note,quantity\n2026-03-01T12:00:05Z,n,x,1\n")
    p = _run(gsqlc, "orders.gsql", f"csv:{f}?header=1")
    assert p.returncode == 1 and p.out == ""
    assert (f"{f}:1: the header has no column 'qty' (field qty of PROTOCOL ORDERS); its "
            "columns: ts, store, note, quantity") in p.err, p.err
    f.write_text("ts,qty,store,note,QTY\n")
    p = _run(gsqlc, "orders.gsql", f"csv:{f}?header=1")
    assert p.returncode == 0, p.err   # exactly before ignoring case: qty is column 2
    f.write_text("ts,qty,store,note,qty\n")
    p = _run(gsqlc, "orders.gsql", f"csv:{f}?header=1")
    assert p.returncode == 1 and "the header names column 'qty' (field qty) twice" in p.err


def test_source_options_are_checked(gsqlc):
    p = _run(gsqlc, "orders.gsql", f"csv:{ORDERS}?hdr=1")
    assert p.returncode == 2
    assert "unknown source option 'hdr=1' after '?'" in p.err and "header=1" in p.err, p.err
    p = _run(gsqlc, "orders.gsql", f"csv:{ORDERS}?header=maybe")
    assert p.returncode == 2 and "header=maybe: expected header=1 or header=0" in p.err, p.err
    p = _run(gsqlc, "orders.gsql", f"csv:{DATA}/none.csv?header=1")
    assert p.returncode == 2 and "none.csv: no such file" in p.err, p.err


# ------------------------------------------------- a header without the option


def test_a_header_line_without_the_option_is_skipped_and_reported(gsqlc):
    """The fields in the PROTOCOL's order under a header: the header is not
    a row (nothing coerced, no zero time), it is reported once with the
    option to use, and the rows are read."""
    f = DATA / "orders_in_order.csv"
    p = _run(gsqlc, "orders.gsql", f"csv:{f}", "--format", "jsonl", "--stats")
    assert p.returncode == 0, p.err
    assert [json.loads(x) for x in p.out.splitlines()] == ROWS[:3]
    src = _source(p.err)
    assert (src["rows_read"], src["rows_rejected"], src["values_coerced"], src["header"],
            src["time_unreadable"]) == (3, 0, 0, "skipped", 0)
    warning = (f"gsqlc: warning: {f}:1: the first line names the fields (ts, store, note, qty) "
               f"and was skipped as a header; bind the source as csv:{f}?header=1 to read its "
               "header and find each field's column by its name")
    assert p.err.count("skipped as a header") == 1 and warning in p.err, p.err


def test_a_header_in_another_order_is_skipped_with_a_warning_that_it_was_read_by_position(
        gsqlc, tmp_path):
    f = tmp_path / "o.csv"
    f.write_text("qty,store,note,ts\n3,north,x,2026-03-01T12:00:05Z\n")
    p = _run(gsqlc, "orders.gsql", f"csv:{f}", "--stats")
    assert "skipped as a header, but some are not at their fields' positions" in p.err, p.err
    assert _source(p.err)["header"] == "skipped"


def test_only_a_first_line_of_field_names_is_taken_for_a_header(gsqlc, tmp_path):
    """Malformed rows elsewhere keep their counting; a first line that is
    not every field's name, or whose values are valid, is a row."""
    f = tmp_path / "p.csv"
    q = tmp_path / "q.gsql"
    q.write_text("DEFINE { query_name 'q'; }\nselect ts, store from PLAIN")
    f.write_text("ts,store\n10,a\nts,store\n11,b\n")   # a header, and a bad row later
    p = gsqlc("run", q, "--schema", SCHEMA, "--source", f"p=csv:{f}", "--stats")
    assert p.returncode == 0 and p.out.splitlines() == ["10|a", "0|store", "11|b"], p.err
    src = _source(p.err)
    assert (src["header"], src["rows_read"], src["values_coerced"]) == ("skipped", 3, 1)
    assert f"{f}:3: field 1 'ts' is not a valid uint" in p.err
    f.write_text("ts,north\n10,a\n")                  # not every field's name
    p = gsqlc("run", q, "--schema", SCHEMA, "--source", f"p=csv:{f}", "--stats")
    assert p.out.splitlines() == ["0|north", "10|a"] and _source(p.err)["header"] is None
    # a string-only PROTOCOL: names alone make the header
    q.write_text("DEFINE { query_name 'q'; }\nselect store from PLAIN")
    f.write_text("12,store\n13,b\n")
    p = gsqlc("run", q, "--schema", SCHEMA, "--source", f"p=csv:{f}")
    assert p.out.splitlines() == ["b"] and "skipped as a header" in p.err, p.err


# ------------------------------------------------------------------- times


def test_epoch_and_offset_times_in_stated_units(gsqlc):
    """epoch_ms into seconds (rounded down), epoch_us into milliseconds, an
    ISO-8601 time with an offset into seconds of a signed field."""
    p = _run(gsqlc, "ticks.gsql", f"csv:{DATA / 'ticks.csv'}")
    assert p.returncode == 0, p.err
    assert p.out.splitlines() == ["1772366405|1772366405250|1772359205|1",
                                  "1772366405|1772366406000|1772323200|2"]
    assert p.err == ""


def test_an_unreadable_time_is_rejected_under_csv_strict(gsqlc, tmp_path):
    f = tmp_path / "o.csv"
    f.write_text("2026-03-01T12:00:05Z,n,x,1\nyesterday,n,y,2\n2026-02-30T00:00:00Z,n,z,3\n"
                 "2026-03-01T12:00:06Z,n,w,4\n")
    p = _run(gsqlc, "orders.gsql", f"csv:{f}", "--csv-strict", "--stats")
    assert p.returncode == 0, p.err
    assert p.out.splitlines() == ["1772366405000|n|x|1", "1772366406000|n|w|4"]
    assert _source(p.err)["rows_rejected"] == 2
    assert f"{f}:2: field 1 'yesterday' is not an ISO-8601 time" in p.err
    assert f"{f}:3: field 1 '2026-02-30T00:00:00Z' is not an ISO-8601 time" in p.err
    # without it: counted, read as 0, and the record's time is unreadable
    p = _run(gsqlc, "orders.gsql", f"csv:{f}", "--stats")
    assert p.out.splitlines()[1] == "0|n|y|2"
    src = _source(p.err)
    assert (src["rows_rejected"], src["values_coerced"], src["time_unreadable"]) == (0, 2, 2)


def test_a_time_beyond_the_field_type_is_not_valid(gsqlc, tmp_path):
    schema = tmp_path / "s.txt"
    schema.write_text("PROTOCOL T { uint t get_csv_uint_pos1 (time_format iso8601, "
                      "time_unit ms); }")
    q = tmp_path / "q.gsql"
    q.write_text("DEFINE { query_name 'q'; }\nselect t from T")
    f = tmp_path / "t.csv"
    f.write_text("1970-01-01T00:00:01Z\n2026-03-01T12:00:00Z\n")
    p = gsqlc("run", q, "--schema", schema, "--source", f"t=csv:{f}", "--csv-strict")
    assert p.out.splitlines() == ["1000"]
    assert f"{f}:2: field 1 '2026-03-01T12:00:00Z' is a time beyond the range of type uint " \
           "(in ms)" in p.err, p.err


def test_an_iso_time_in_a_number_field_tells_of_time_format(gsqlc, tmp_path):
    f = tmp_path / "p.csv"
    f.write_text("2026-03-01T12:00:05Z,a\n")
    q = tmp_path / "q.gsql"
    q.write_text("DEFINE { query_name 'q'; }\nselect ts, store from PLAIN")
    p = gsqlc("run", q, "--schema", SCHEMA, "--source", f"p=csv:{f}")
    assert p.out.splitlines() == ["2026|a"]    # Tigon's reading: the valid prefix
    assert ("field 1 '2026-03-01T12:00:05Z' is not a valid uint (it is an ISO-8601 time: the "
            "field's property time_format iso8601 reads it as one)") in p.err, p.err


def test_a_time_unit_given_for_the_interface_must_be_the_declared_one(gsqlc):
    p = _run(gsqlc, "orders.gsql", f"csv:{ORDERS}?header=1", "--time-unit", "o=s")
    assert p.returncode == 2
    assert ("time_unit s for interface 'o', but the time fields read from it declare another "
            "(ts of PROTOCOL ORDERS: ms)") in p.err, p.err
    p = _run(gsqlc, "orders.gsql", f"csv:{ORDERS}?header=1", "--time-unit", "o=ms")
    assert p.returncode == 0, p.err


@pytest.mark.parametrize("decl, message", [
    ("string s get_csv_string_pos1 (time_format iso8601);",
     "field 's' of type string cannot be a time"),
    ("uint t get_csv_uint_pos1 (time_format weekly);",
     "field 't': time_format must be one of iso8601, epoch_s, epoch_ms, epoch_us, epoch_ns "
     "(got 'weekly')"),
    ("uint t get_csv_uint_pos1 (time_unit min);",
     "field 't': time_unit must be one of s, ms, us, ns (got 'min')"),
    ("IP a get_csv_ip_pos1 (time_unit s);", "field 'a' of type IP cannot be a time"),
    ("bool b get_csv_bool_pos1 (time_format epoch_s);", "field 'b' of type bool cannot be a time"),
])
def test_time_properties_are_checked_in_the_schema(gsqlc, tmp_path, decl, message):
    schema = tmp_path / "s.txt"
    schema.write_text("PROTOCOL T {\n    " + decl + "\n}\n")
    q = tmp_path / "q.gsql"
    q.write_text("DEFINE { query_name 'q'; }\nselect count(*) as n from T")
    p = gsqlc("explain", q, "--schema", schema)
    assert p.returncode == 2 and message in p.err and "s.txt:2:" in p.err, p.err


# --------------------------------------------------------------- Python API


def test_python_api_reads_the_header_the_quotes_and_the_times():
    qs = gsqlc.compile([DATA / "orders.gsql"], schema=SCHEMA)
    for kw, uri in (({}, f"csv:{ORDERS}?header=1"), ({"csv_header": True}, str(ORDERS))):
        run = qs.run({"o": uri}, **kw)
        t = run.to_arrow()
        assert t.to_pylist() == ROWS
        src = run.stats["sources"][0]
        assert (src["header"], src["rows_rejected"]) == ("read", 1)
        assert f"{ORDERS}:8: expected 5 fields, found 2" in run.report
    agg = gsqlc.compile([DATA / "per_minute.gsql"], schema=SCHEMA)
    got = agg.table({"o": f"csv:{ORDERS}?header=1"})
    assert sorted(f"{r['tb']}|{r['store']}|{r['n']}|{r['q']}" for r in got.to_pylist()) \
        == PER_MINUTE
    with pytest.raises(gsqlc.UsageError, match="csv_header must be True or False"):
        qs.run({"o": str(ORDERS)}, csv_header="yes")


def test_python_api_warns_of_a_skipped_header_and_fails_on_a_missing_field(tmp_path):
    qs = gsqlc.compile([DATA / "orders.gsql"], schema=SCHEMA)
    f = DATA / "orders_in_order.csv"
    run = qs.run({"o": str(f)})
    with pytest.warns(UserWarning, match=r"orders_in_order\.csv:1: the first line names the "
                                         r"fields .* skipped as a header; bind the source as "
                                         r"csv:.*\?header=1"):
        t = run.to_arrow()
    assert t.to_pylist() == ROWS[:3]
    assert run.stats["sources"][0]["header"] == "skipped" and "skipped as a header" in run.report
    bad = tmp_path / "b.csv"
    bad.write_text("ts,store,note\n")
    with pytest.raises(gsqlc.RunError, match=r"the header has no column 'qty' \(field qty of "
                                             r"PROTOCOL ORDERS\); its columns: ts, store, note"):
        qs.table({"o": f"csv:{bad}?header=1"})
