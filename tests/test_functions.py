"""The built-in functions of the catalog, DEFINE values, range variables and
interface names, end to end through `gsqlc run`."""
from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
SCHEMA = DATA / "schema.txt"
SALES = DATA / "sales.csv"


def _run(gsqlc, tmp_path, text, *extra, source=f"csv={SALES}", stdin=None):
    q = tmp_path / "q.gsql"
    q.write_text(text)
    p = gsqlc("run", q, "--schema", SCHEMA, "--source", source, *extra, input=stdin)
    assert p.returncode == 0, p.err
    return p.out.splitlines()


def test_string_functions(gsqlc, tmp_path):
    out = _run(gsqlc, tmp_path,
               "select store, str_truncate(store, 3) as t, str_length(store) as n, "
               "str_regex_match[store, '^(no|ea)'] as m, "
               "str_extract_regex(store, '[aeiou]+[a-z]') as x "
               "from SALES where str_match_start[store, 'no'] or str_exists_substr[store, 'ast'] "
               "or str_match_offset[1, store, 'ou']")
    assert sorted(set(out)) == ["east|eas|4|TRUE|eas", "north|nor|5|TRUE|or",
                                "south|sou|5|FALSE|out"]


def test_conversions_and_unsigned_min_max(gsqlc, tmp_path):
    out = _run(gsqlc, tmp_path,
               "select INT(qty) - 5 as a, UINT(delta) as b, FLOAT(qty) / 2 as c, "
               "ULLONG(qty) * 4294967296 as d, LLONG(delta) * 3 as e, "
               "UMIN(qty, 4) as f, UMAX(qty, 4) as g, strtoi(store) as h, "
               "strtoip('10.1.2.3') as i from SALES where time = 10")
    assert out == ["-2|4294967294|1.500000|12884901888|-6|3|4|0|10.1.2.3"]


def test_system_time_non_temporal_and_defines(gsqlc, tmp_path):
    text = ("DEFINE { query_name 'clocked'; min_qty 4; label 'big'; }\n"
            "select get_system_time() as now, systemTime, non_temporal(time) as t, #label as l "
            "from SALES where qty >= #min_qty")
    out = _run(gsqlc, tmp_path, text, "--clock", "fixed:1234")
    assert sorted(out) == ["1234|1234|130|big", "1234|1234|30|big", "1234|1234|65|big"]
    ex = gsqlc("explain", tmp_path / "q.gsql", "--schema", SCHEMA)
    assert "now: uint, increasing" in ex.out and "t: uint, not temporal" in ex.out


def test_range_variable_and_interface_name(gsqlc, tmp_path):
    out = _run(gsqlc, tmp_path, "select S.time, S.store from shop.SALES S where S.qty > 5",
               source=f"shop=csv:{SALES}")
    assert sorted(out) == ["130|south", "30|north"]


def test_csv_from_stdin_with_a_separator(gsqlc, tmp_path):
    rows = SALES.read_text().replace(",", ";").encode()
    out = _run(gsqlc, tmp_path, "select time, client from SALES where online = TRUE",
               "--csv-separator", ";", source="csv:-", stdin=rows)
    assert out == ["10|10.0.0.1", "30|10.0.0.1", "65|10.0.0.2", "130|10.0.0.1"]
