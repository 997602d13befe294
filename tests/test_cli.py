"""The gsqlc command line, end to end: features and bad input."""
from __future__ import annotations

import json
import re
import struct
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parent / "data"
SCHEMA = DATA / "schema.txt"
SALES = DATA / "sales.csv"


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def run_query(gsqlc, tmp_path, text, *extra, source=f"csv={SALES}"):
    q = write(tmp_path, "q.gsql", text)
    return gsqlc("run", q, "--schema", SCHEMA, "--source", source, *extra), q


# ---------------------------------------------------------------- features


def test_aggregation_per_minute(gsqlc):
    p = gsqlc("run", DATA / "per_minute.gsql", "--schema", SCHEMA, "--source", f"sales={SALES}")
    assert p.returncode == 0, p.err
    assert sorted(p.out.splitlines()) == [
        "0|north|2|10|0.750000|1.500000",
        "0|south|1|1|2.250000|2.250000",
        "1|east|1|2|10.000000|10.000000",
        "1|north|1|4|3.000000|3.000000",
        "2|south|1|9|1.000000|1.000000",
    ]


def test_composition_across_files_and_params(gsqlc):
    p = gsqlc("run", DATA / "big_orders.gsql", DATA / "orders_per_minute.gsql",
              "--schema", SCHEMA, "--source", f"csv:{SALES}", "--param", "min_qty=3",
              "--format", "jsonl")
    assert p.returncode == 0, p.err
    rows = [json.loads(l) for l in p.out.splitlines()]
    # qty >= 3: minute 0 -> 3*1.5 + 7*0.75; minute 1 -> 4*3.0; minute 2 -> 9*1.0
    assert sorted((r["tb"], r["orders"], round(r["revenue"], 6)) for r in rows) == [
        (0, 2, 9.75), (1, 1, 12.0), (2, 1, 9.0)]


def test_output_selects_an_intermediate_query(gsqlc):
    p = gsqlc("run", DATA / "big_orders.gsql", DATA / "orders_per_minute.gsql",
              "--schema", SCHEMA, "--source", f"csv:{SALES}", "--param", "min_qty=7",
              "--output", "big_orders")
    assert p.returncode == 0, p.err
    assert sorted(p.out.splitlines()) == ["130|south|9|9.000000", "30|north|7|5.250000"]


def test_missing_and_unknown_params(gsqlc):
    args = ("run", DATA / "big_orders.gsql", "--schema", SCHEMA, "--source", f"csv:{SALES}")
    p = gsqlc(*args)
    assert p.returncode == 2 and "--param min_qty=VALUE" in p.err
    p = gsqlc(*args, "--param", "min_qty=3", "--param", "nope=1")
    assert p.returncode == 2 and "--param nope" in p.err
    p = gsqlc(*args, "--param", "min_qty=lots")
    assert p.returncode == 1 and "min_qty" in p.err and "lots" in p.err


def test_query_library(gsqlc):
    p = gsqlc("run", DATA / "online_per_minute.gsql", "--schema", SCHEMA,
              "--source", f"csv:{SALES}", "-L", DATA / "lib")
    assert p.returncode == 0, p.err
    assert sorted(p.out.splitlines()) == ["0|10", "1|4", "2|9"]


def test_output_formats(gsqlc, tmp_path):
    text = "select time, store, client, price, online from SALES where qty = 3"
    p, _ = run_query(gsqlc, tmp_path, text, "--format", "csv")
    assert p.returncode == 0, p.err
    assert p.out.splitlines() == ["time,store,client,price,online", "10,north,10.0.0.1,1.500000,TRUE"]
    p, _ = run_query(gsqlc, tmp_path, text, "--format", "jsonl")
    assert json.loads(p.out) == {"time": 10, "store": "north", "client": "10.0.0.1",
                                 "price": 1.5, "online": True}
    out = tmp_path / "out.txt"
    p, _ = run_query(gsqlc, tmp_path, text, "--output-file", out)
    assert p.returncode == 0 and p.out == ""
    assert out.read_text() == "10|north|10.0.0.1|1.500000|TRUE\n"


def test_operators_and_in(gsqlc, tmp_path):
    text = ("select time, qty * 2 + 1 as a, delta % 4 as b, qty & 5 as c, qty | 8 as d, "
            "qty << 2 as e, -delta as f, qty / 0 as g, UMAX(qty, 5) as h, "
            "str_truncate(store, 2) as s "
            "from SALES where store in ['north', 'east'] and not (qty = 4)")
    p, _ = run_query(gsqlc, tmp_path, text)
    assert p.returncode == 0, p.err
    assert sorted(p.out.splitlines()) == [
        "10|7|-2|1|11|12|2|0|5|no",
        "30|15|0|5|15|28|0|0|7|no",
        "61|5|-1|0|10|8|9|0|5|ea",
    ]


def test_string_literals_reach_the_output_byte_exact(gsqlc, tmp_path):
    # Quotes, backslashes, a newline, a comment terminator, printf
    # conversions, a NUL and a trigraph: every byte must come out as written.
    lit = r"'it''s \\ \" \n */ /* %s %n \0 ??/ \x7f end'"
    want = "it's \\ \" \n */ /* %s %n \x00 ??/ \x7f end"
    text = f"select time, {lit} as s from SALES where qty = 3 and str_exists_substr[{lit}, '*/']"
    p, q = run_query(gsqlc, tmp_path, text, "--format", "jsonl")
    assert p.returncode == 0, p.err
    assert json.loads(p.out)["s"] == want
    # The generated sources compile warning-free with that literal in them.
    out = tmp_path / "gen"
    c = gsqlc("compile", q, "--schema", SCHEMA, "-o", out, "--build", "--werror")
    assert c.returncode == 0, c.err
    assert any("\\000" in f.read_text() for f in out.glob("*.c*"))


# ---------------------------------------------------------------- bad input


def test_syntax_error_is_located(gsqlc, tmp_path):
    p, q = run_query(gsqlc, tmp_path, "select time, store\nfrom SALES\nwhere qty > 1 grup by store\n")
    assert p.returncode == 2
    assert f"{q}:3:15: error [syntax]" in p.err
    lines = p.err.splitlines()
    assert lines[1].strip() == "where qty > 1 grup by store"
    assert lines[2].index("^") == lines[1].index("grup")
    assert "expected" in lines[0] and "GROUP BY" in lines[0]


@pytest.mark.parametrize("text,rule,where,needle", [
    ("select tme, store from SALES", "unknown-field", (1, 8), "did you mean 'time'"),
    ("select time from SALES where store + 1 > 2", "type-mismatch", (1, 30), "needs numbers"),
    ("select store, count(*) from SALES\ngroup by store", "temporal-group-by", (2, 1),
     "must group by at least one increasing or decreasing"),
    ("select time, strlen(store) from SALES", "unknown-function", (1, 14), "unknown function 'strlen'"),
    ("select time, store from NOPE", "unknown-source", (1, 25), "no query or PROTOCOL named 'NOPE'"),
    ("select tb, store, qty from SALES group by time/60 as tb, store", "not-grouped", (1, 19),
     "must be in GROUP BY"),
    ("select time, sum(store) from SALES group by time", "type-mismatch", (1, 14), "cannot take"),
    ("select time from SALES where count(*) > 1", "aggregate-not-allowed", (1, 30), "WHERE"),
    ("select time, $x from SALES", "unknown-param", (1, 14), "PARAM"),
])
def test_query_errors_are_located(gsqlc, tmp_path, text, rule, where, needle):
    p, q = run_query(gsqlc, tmp_path, text)
    assert p.returncode == 2, p.out
    assert f"{q}:{where[0]}:{where[1]}: error [{rule}]" in p.err, p.err
    assert needle in p.err
    assert "^" in p.err


@pytest.mark.parametrize("text,what", [
    ("select time from far.eth0.SALES", "remote host far"),
])
def test_later_features_are_refused_not_ignored(gsqlc, tmp_path, text, what):
    p, q = run_query(gsqlc, tmp_path, text)
    assert p.returncode == 2
    assert re.search(rf"{re.escape(str(q))}:1:\d+: error \[not-supported-yet\]", p.err), p.err
    assert what in p.err


@pytest.mark.parametrize("text,rule,needle", [
    ("select A.time, B.store inner_join from SALES A, SALES B where A.store = B.store",
     "temporal-join", "must relate a temporal field of each input"),
    ("select A.time outer_join from SALES A, SALES B where A.time >= B.time - 5",
     "temporal-join", "open on one side"),
    ("merge A.time : B.systemTime from SALES A, SALES B", "merge", "same column"),
    ("merge A.store : B.store from SALES A, SALES B", "merge-temporal", "not temporal"),
])
def test_join_and_merge_rules(gsqlc, tmp_path, text, rule, needle):
    p, q = run_query(gsqlc, tmp_path, text)
    assert p.returncode == 2
    assert re.search(rf"{re.escape(str(q))}:1:\d+: error \[{rule}\]", p.err), p.err
    assert needle in p.err


@pytest.mark.parametrize("command", ["run", "explain"])
def test_regex_in_a_join_is_refused_by_analysis(gsqlc, tmp_path, command):
    """A rule of analysis: explain refuses the query as run does."""
    q = write(tmp_path, "q.gsql", "select A.time, B.store inner_join from SALES A, SALES B\n"
                                  "where A.time = B.time and str_regex_match[A.store, 'a.*']")
    extra = ("--source", f"csv={SALES}") if command == "run" else ()
    p = gsqlc(command, q, "--schema", SCHEMA, *extra)
    assert p.returncode == 2, p.out
    assert f"{q}:1:1: error [not-supported-yet]" in p.err, p.err
    assert "regular-expression functions inside a join are not supported yet" in p.err


def test_merge_of_different_schemas_is_refused(gsqlc, tmp_path):
    a = write(tmp_path, "a.gsql", "DEFINE { query_name 'a'; } select time, store from SALES")
    b = write(tmp_path, "b.gsql", "DEFINE { query_name 'b'; } select time, qty from SALES")
    m = write(tmp_path, "m.gsql", "DEFINE { query_name 'm'; } merge a.time : b.time from a, b")
    p = gsqlc("run", a, b, m, "--schema", SCHEMA, "--source", f"csv={SALES}")
    assert p.returncode == 2
    assert f"{m}:1:" in p.err and "[merge-schema]" in p.err and "identical schemas" in p.err


def test_missing_source_binding(gsqlc, tmp_path):
    q = write(tmp_path, "q.gsql", "select time from [csv].SALES")
    p = gsqlc("run", q, "--schema", SCHEMA)
    assert p.returncode == 2
    assert "interface 'csv' is not bound" in p.err and "--source csv=URI" in p.err
    p = gsqlc("run", q, "--schema", SCHEMA, "--source", f"other={SALES}")
    assert p.returncode == 2 and "--source csv=URI" in p.err


def test_nonexistent_files(gsqlc, tmp_path):
    p = gsqlc("run", tmp_path / "nope.gsql", "--schema", SCHEMA, "--source", f"csv:{SALES}")
    assert p.returncode == 2 and "nope.gsql: no such file" in p.err
    q = write(tmp_path, "q.gsql", "select time from SALES")
    p = gsqlc("run", q, "--schema", tmp_path / "nope.txt", "--source", f"csv:{SALES}")
    assert p.returncode == 2 and "nope.txt: no such file" in p.err
    p = gsqlc("run", q, "--schema", SCHEMA, "--source", f"csv:{tmp_path / 'missing.csv'}")
    assert p.returncode == 2 and "missing.csv: no such file" in p.err


def test_malformed_csv_rows_are_counted_and_skipped(gsqlc, tmp_path):
    data = write(tmp_path, "d.csv", (
        "10,north,10.0.0.1,3,-2,1.5,TRUE\n"
        "11,north,10.0.0.1\n"                       # truncated row
        "12,south,10.0.0.2,1,5,2.25,FALSE\n"
        "13,south,10.0.0.2,1,5,2.25,FALSE,extra\n"  # stray field
        "14,east,10.0.0.3,2,-9,10,FALSE\n"))
    p, _ = run_query(gsqlc, tmp_path, "select time, store from SALES", source=f"csv={data}")
    assert p.returncode == 0, p.err
    assert p.out.splitlines() == ["10|north", "12|south", "14|east"]
    assert "2 of 5 rows rejected as malformed" in p.err, p.err
    assert f"{data}:2:" in p.err and f"{data}:4:" in p.err


def test_csv_strict_rejects_bad_values(gsqlc, tmp_path):
    data = write(tmp_path, "d.csv", "10,north,10.0.0.1,3,-2,1.5,TRUE\n"
                                    "11,north,10.0.0.1,lots,-2,1.5,TRUE\n")
    text = "select time, qty from SALES"
    p, _ = run_query(gsqlc, tmp_path, text, source=f"csv={data}")
    assert p.returncode == 0 and p.out.splitlines() == ["10|3", "11|0"]
    assert "not a valid uint" in p.err
    p, _ = run_query(gsqlc, tmp_path, text, "--csv-strict", source=f"csv={data}")
    assert p.returncode == 0 and p.out.splitlines() == ["10|3"]
    assert f"{data}:2:" in p.err


def _pcap(packets: list[tuple[int, bytes]]) -> bytes:
    out = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    for ts, frame in packets:
        out += struct.pack("<IIII", ts, 0, len(frame), len(frame)) + frame
    return out


def _udp_frame(src: int, dst: int, sport: int, dport: int, payload: bytes) -> bytes:
    eth = b"\x00\x11\x22\x33\x44\x55" + b"\x66\x77\x88\x99\xaa\xbb" + b"\x08\x00"
    udp = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBHII", 0x45, 0, 20 + len(udp), 1, 0, 64, 17, 0, src, dst)
    return eth + ip + udp


def test_truncated_pcap_is_reported_and_what_was_read_is_processed(gsqlc, tmp_path):
    frames = [(100 + i, _udp_frame(0x0A000001, 0x0A000002, 1000 + i, 53, b"x" * 20))
              for i in range(3)]
    blob = _pcap(frames)
    trace = tmp_path / "t.pcap"
    trace.write_bytes(blob[:-10])  # cut into the last packet
    q = write(tmp_path, "q.gsql", "select time, srcIP, srcPort from UDP")
    p = gsqlc("run", q, "--source", f"eth0=pcap:{trace}")
    assert p.returncode == 0, p.err
    assert p.out.splitlines() == ["100|10.0.0.1|1000", "101|10.0.0.1|1001"]
    assert "truncated" in p.err and str(trace) in p.err


def test_source_kind_must_suit_the_protocol(gsqlc, tmp_path):
    q = write(tmp_path, "q.gsql", "select time, srcIP from IPV4")
    p = gsqlc("run", q, "--source", f"eth0=csv:{SALES}")
    assert p.returncode == 2 and "pcap:PATH" in p.err


def test_explain_hostnames_split(gsqlc, tmp_path):
    q = write(tmp_path, "h.gsql", (
        "DEFINE { query_name 'hostnames'; }\n"
        "SELECT time/60*60 as t, destIP, destPort,\n"
        "  str_extract_regex(TCP_data, '[Hh][Oo][Ss][Tt]: *[0-9A-Za-z.:-]*') as hostheader\n"
        "FROM TCP\n"
        "WHERE ipversion=4 and offset=0 and protocol=6 and str_match_start[TCP_data, 'GET']\n"))
    p = gsqlc("explain", q)
    assert p.returncode == 0, p.err
    lfta, hfta = p.out.split("[HFTA]")
    lfta = lfta.split("[LFTA]")[1]
    for cond in ("(ipversion = 4)", "(offset = 0)", "(protocol = 6)"):
        assert cond in lfta
    assert "str_match_start" not in lfta and "str_extract_regex" not in lfta
    assert "TCP_data" in lfta  # projected for the HFTA
    assert "str_match_start[TCP_data, 'GET']" in hfta and "str_extract_regex(TCP_data" in hfta
    assert re.search(r"t uint \[increasing\]", p.out)
    d = gsqlc("explain", q, "--format", "dot")
    assert d.returncode == 0
    assert d.out.startswith("digraph") and d.out.rstrip().endswith("}")
    assert d.out.count("->") >= 3 and "interface default" in d.out


def test_several_outputs_to_one_file(gsqlc, tmp_path):
    """--output-file with several --output: the file holds every query's
    lines whole, as standard output would (was: each output opened and
    truncated the file itself and wrote over the others)."""
    trace = DATA.parents[1] / "examples" / "trace.pcap"
    q = tmp_path / "q.gsql"
    q.write_text("DEFINE { query_name 'a'; }\nSELECT time, srcIP, destIP FROM IPV4;\n"
                 "DEFINE { query_name 'b'; }\nSELECT tb, count(*) AS n FROM PKT GROUP BY time AS tb\n")
    solo = {name: gsqlc("run", q, "--source", f"eth0=pcap:{trace}", "--output", name).out
            for name in ("a", "b")}
    out = tmp_path / "out.txt"
    p = gsqlc("run", q, "--source", f"eth0=pcap:{trace}", "--output", "a", "--output", "b",
              "--output-file", out)
    assert p.returncode == 0, p.err
    lines = out.read_text().splitlines()
    assert sorted(lines) == sorted(solo["a"].splitlines() + solo["b"].splitlines())
    assert solo["a"].count("\n") > 1000 and solo["b"].count("\n") > 10


@pytest.mark.parametrize("clock", ["fixed:x", "fixed:", "fixed:\u00b2", "fixed:\u0661\u0662", "sundial"])
def test_bad_clock_is_a_usage_error(gsqlc, clock):
    """--clock fixed:SECONDS takes ASCII digits only (str.isdigit also takes
    '²' and Arabic-Indic digits, which the runtime refuses)."""
    trace = DATA.parents[1] / "examples" / "trace.pcap"
    p = gsqlc("run", DATA.parents[1] / "examples" / "flows.gsql", "--source", f"eth0=pcap:{trace}",
              "--clock", clock)
    assert p.returncode == 2
    assert f"gsqlc: error: --clock {clock}: expected auto, wall, data or fixed:SECONDS" in p.err
