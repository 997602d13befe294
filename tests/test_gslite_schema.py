"""GS-lite's packet schema works unchanged (issue 12, part 6): its `base`
protocol reads `systemTime` (get_system_time) and `schemaId`
(get_schemaId: the record's schema id, 0 for CSV records as GS-lite's CSV
source leaves it), which every CSV protocol of it inherits."""
from __future__ import annotations

import pytest

import gsqlc
from conftest import shared_dir

SCHEMA = shared_dir() / "reference" / "gslite-packet_schema.txt"

ROWS = [(1, 2, "3.3.3.3", "2001:db8::1", "hello", "TRUE", -7, -8, 1.5),
        (1, 2, "3.3.3.3", "2001:db8::1", "hello", "TRUE", -7, -8, 1.5),
        (2, 5, "4.4.4.4", "::", "x", "FALSE", 0, 9, 2.25)]


@pytest.mark.needs_shared
def test_gslite_csv_protocol_runs_unchanged(tmp_path, gsqlc):
    data = tmp_path / "in.csv"
    data.write_text("".join(",".join(map(str, r)) + "\n" for r in ROWS))
    q = tmp_path / "q.gsql"
    q.write_text("DEFINE { query_name 'per_value'; }\n"
                 "select schemaId, uintInPosition1, ullongInPosition2, ipInPosition3,\n"
                 "  ipv6InPosition4, stringInPosition5, boolInPosition6, intInPosition7,\n"
                 "  llongInPosition8, floatInPosition9, count(*) as Cnt\n"
                 "from [csv].CSV_EXAMPLE\n"
                 "where schemaId = 0\n"
                 "group by systemTime, schemaId, uintInPosition1, ullongInPosition2,\n"
                 "  ipInPosition3, ipv6InPosition4, stringInPosition5, boolInPosition6,\n"
                 "  intInPosition7, llongInPosition8, floatInPosition9\n")
    p = gsqlc("run", q, "--schema", SCHEMA, "--source", f"csv={data}")
    assert p.returncode == 0, p.err
    assert sorted(p.out.splitlines()) == sorted([
        "0|1|2|3.3.3.3|2001:0db8:0000:0000:0000:0000:0000:0001|hello|TRUE|-7|-8|1.500000|2",
        "0|2|5|4.4.4.4|0000:0000:0000:0000:0000:0000:0000:0000|x|FALSE|0|9|2.250000|1"])
    # systemTime is the run's clock: increasing, so it may be an epoch
    ex = gsqlc("explain", q, "--schema", SCHEMA)
    assert ex.returncode == 0 and "systemTime" in ex.out, ex.err


@pytest.mark.needs_shared
def test_gslite_schema_over_arrow(tmp_path):
    import pyarrow as pa
    q = tmp_path / "q.gsql"
    q.write_text("DEFINE { query_name 'q'; }\nselect schemaId, ivalue, value "
                 "from [csv].CSV_TCPEXAMPLE where value > 1\n")
    qs = gsqlc.compile([q], schema=SCHEMA)
    t = pa.table({"ivalue": pa.array([4, 5, 9], pa.uint32()),
                  "value": pa.array([1, 2, 3], pa.uint32())})
    out = qs.table({"csv": t})
    assert out.to_pydict() == {"schemaId": [0, 0], "ivalue": [5, 9], "value": [2, 3]}


def test_schema_id_is_an_integer(tmp_path):
    s = tmp_path / "s.txt"
    s.write_text("PROTOCOL B { string sid get_schemaId; uint t get_csv_uint_pos1; }\n")
    q = tmp_path / "q.gsql"
    q.write_text("DEFINE { query_name 'q'; }\nselect t, sid from [csv].B\n")
    with pytest.raises(gsqlc.QueryError, match="get_schemaId gives a uint") as e:
        gsqlc.compile([q], schema=s)
    assert e.value.rule == "type-mismatch" and e.value.file == str(s) and e.value.line == 1
