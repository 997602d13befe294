"""The join side of joint punctuation (seed 004 section 7) and the join's
per-column heartbeat bounds, end to end through `gsqlc run`.

A band join's heartbeat gives its right-time columns hr, a bound of their
own: before, they took hl, the bound on the left time, which overclaims when
band_lo > 0 (a matched row's right time may be band_lo below its left time),
so an aggregation over the right time closed its epochs too early and
dropped rows as late (23,589 in the first test below, on the code before the
fix).  Heartbeats need a clock: the inputs are pcap captures replayed on the
data clock; the left input's time runs 20 s behind the right one's, so the
right input's progress leads and the overclaim shows.  An outer band join's
column of the side its unmatched rows leave empty is not temporal.  With
joint punctuation on (the planner pass that sets it is not here: the test
sets HftaJoin.joint_punctuation on the plan), GSQ_JOINT_HEARTBEAT tuples go
from the join to its readers, never to a sink.
"""
from __future__ import annotations

import json
import sys

import pytest

from conftest import REPO, require, run_gsqlc

duckdb = require("duckdb")
sys.path.insert(0, str(REPO / "bench"))
import pktgen  # noqa: E402

SCHEMA = REPO / "tests" / "data" / "schema.txt"

# A band with band_lo > 0: B.t in [A.t - 15, A.t + 15].
BAND = """
DEFINE { query_name 'ra'; }
select time - 20 as t, srcIP from eth0.IPV4;
DEFINE { query_name 'rb'; }
select time as t, srcIP from eth1.IPV4;
DEFINE { query_name 'j'; }
select A.t as t0, B.t as t1 INNER_JOIN from ra A, rb B
where A.srcIP = B.srcIP and A.t >= B.t - 15 and A.t <= B.t + 15;
"""
PER10_OF_RIGHT_TIME = """
DEFINE { query_name 'per10'; }
select tb, count(*) as n from j group by t1/10 as tb
"""
# The rows of the band join by DuckDB, over pktgen's record of the capture.
BAND_SQL = ("from pkts a join pkts b on a.srcIP = b.srcIP "
            "and a.time - 20 between b.time - 15 and b.time + 15")


@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    """One capture, read by both interfaces: 1500 packets over 150 s."""
    d = tmp_path_factory.mktemp("joint")
    pcap = d / "pkts.pcap"
    truth = pktgen.generate(str(pcap), 1500, 25, pps=10, seed=4, start=1_700_000_000, frag=0.0)
    return pcap, truth


def _stats(err: str) -> dict:
    return json.loads(err[err.index("\n{") + 1:]) if "\n{" in err else json.loads(err[err.index("{"):])


def _run(tmp_path, text, pcap, *args, cli=None):
    tmp_path.mkdir(parents=True, exist_ok=True)
    q = tmp_path / "q.gsql"
    q.write_text(text)
    argv = ["run", str(q), "--source", f"eth0=pcap:{pcap}", "--source", f"eth1=pcap:{pcap}",
            "--clock", "data", "--stats", *args]
    if cli is None:
        p = run_gsqlc(*argv)
    else:   # a script standing in for `python -m gsqlc`
        import subprocess
        p = subprocess.run([sys.executable, "-c", cli, *argv], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=300)
    out, err = p.stdout.decode(), p.stderr.decode()
    assert p.returncode == 0, err
    st = _stats(err)
    return out, st, {s["name"]: s for s in st["streams"]}, {n["name"]: n for n in st["nodes"]}


def test_right_time_heartbeats_let_an_aggregation_over_it_lose_nothing(capture, tmp_path):
    pcap, truth = capture
    out, st, streams, nodes = _run(tmp_path, BAND + PER10_OF_RIGHT_TIME, pcap)
    # heartbeats went through the join to the aggregation (else nothing is tested)
    assert streams["j"]["heartbeats"] > 50 and streams["per10"]["heartbeats"] > 0
    assert all(n["late_dropped"] == 0 for n in st["nodes"]), nodes
    pkts = truth  # noqa: F841 (read by DuckDB)
    want = duckdb.sql(f"select b.time // 10, count(*) {BAND_SQL} group by all order by all").fetchall()
    got = sorted(tuple(int(x) for x in line.split("|")) for line in out.splitlines())
    assert got == [tuple(r) for r in want] and len(got) > 10


def _join_code(tmp_path, text, joint):
    import dataclasses

    from gsqlc.backend.codegen import generate
    from gsqlc.pipeline import plan_queries
    from gsqlc.planner.nodes import HftaJoin
    q = tmp_path / "q.gsql"
    q.write_text(text)
    qs = plan_queries([str(q)])
    nodes = [dataclasses.replace(n, joint_punctuation=joint) if type(n) is HftaJoin else n
             for n in qs.plan.nodes]
    files = generate(dataclasses.replace(qs.plan, nodes=nodes)).files
    return next(text for name, text in files.items() if name.endswith("_j.cpp"))


@pytest.mark.parametrize("joint", [False, True])
def test_generated_heartbeats_bound_each_time_column(tmp_path, joint):
    code = _join_code(tmp_path, BAND, joint)
    hb = code[code.index("void emit_heartbeat("):code.index("GSQ_HEARTBEAT, &t")]
    assert "t.c_t0 = (uint32_t)hl;" in hb and "t.c_t1 = (uint32_t)hr;" in hb
    assert ("void emit_joint_heartbeat(" in code) == joint
    if joint:
        jhb = code[code.index("void emit_joint_heartbeat("):code.index("GSQ_JOINT_HEARTBEAT, &t")]
        assert "t.c_t0 = (uint32_t)jl;" in jhb and "t.c_t1 = (uint32_t)jr;" in jhb


def test_outer_band_join_empty_side_column_is_not_temporal(tmp_path):
    q = tmp_path / "q.gsql"
    q.write_text(
        "DEFINE { query_name 'lb'; }\n"
        "select A.time as t0, B.time as t1, B.time / 10 as b10, B.qty as bq LEFT_OUTER_JOIN\n"
        "from A.SALES A, B.SALES B\n"
        "where A.store = B.store and A.time >= B.time - 15 and A.time <= B.time + 15;\n"
        "DEFINE { query_name 'rb'; }\n"
        "select A.time as t0, B.time as t1 RIGHT_OUTER_JOIN from A.SALES A, B.SALES B\n"
        "where A.store = B.store and A.time >= B.time - 15 and A.time <= B.time + 15;\n"
        "DEFINE { query_name 'fe'; }\n"
        "select A.time as t0, B.time as t1 OUTER_JOIN from A.SALES A, B.SALES B\n"
        "where A.store = B.store and A.time = B.time;\n")
    p = run_gsqlc("explain", "--schema", str(SCHEMA), str(q))
    assert p.returncode == 0, p.stderr.decode()
    out = p.stdout.decode()
    blocks = {b.split()[1]: b for b in out.split("\n[")[1:]}
    # a left-only row leaves B's fields empty: B.time is 0 there
    assert "t0 uint [increasing] := A.time" in blocks["lb"]
    assert "t1 uint [not temporal] := B.time" in blocks["lb"]
    assert "b10 uint [not temporal] := (B.time / 10)" in blocks["lb"]
    assert "t0 uint [not temporal] := A.time" in blocks["rb"]
    assert "t1 uint [increasing] := B.time" in blocks["rb"]
    # an equality outer join fills the missing side's time from the present one
    assert "t0 uint [increasing] := A.time" in blocks["fe"]
    assert "t1 uint [increasing] := B.time" in blocks["fe"]
    # and a group-by on the empty side's time is refused: it is not temporal
    q.write_text(q.read_text() + "DEFINE { query_name 'agg'; }\n"
                 "select tb, count(*) as n from lb group by t1 / 10 as tb;\n")
    p = run_gsqlc("explain", "--schema", str(SCHEMA), str(q))
    assert p.returncode == 2 and "temporal-group-by" in p.stderr.decode() + p.stdout.decode()


# `python -m gsqlc` with joint punctuation set on every join of the plan.
WITH_JOINT = """
import dataclasses, sys
import gsqlc.cli as cli
import gsqlc.record as record
from gsqlc.planner.nodes import HftaJoin

planned = cli.plan_queries

def plan_queries(*args, **kw):
    qs = planned(*args, **kw)
    nodes = [dataclasses.replace(n, joint_punctuation=True) if type(n) is HftaJoin else n
             for n in qs.plan.nodes]
    return record.replace(qs, plan=dataclasses.replace(qs.plan, nodes=nodes))

cli.plan_queries = plan_queries
sys.exit(cli.main(sys.argv[1:]))
"""


def test_joint_punctuation_goes_to_operators_not_to_sinks(capture, tmp_path):
    pcap, truth = capture
    text = BAND + "DEFINE { query_name 's'; }\nselect t1 as u from j where t0 >= t1;\n"
    args = ("--output", "j", "--output", "s", "--format", "jsonl")
    plain = _run(tmp_path / "plain", text, pcap, *args)
    joint = _run(tmp_path / "joint", text, pcap, *args, cli=WITH_JOINT)
    for out, _, streams, _ in (plain, joint):
        # the selection ignores the joint heartbeats it reads, and passes none on
        assert streams["s"]["joint_heartbeats"] == 0 and streams["s"]["heartbeats"] > 0
    assert plain[2]["j"]["joint_heartbeats"] == 0
    assert joint[2]["j"]["joint_heartbeats"] > 50
    assert {k: v for k, v in joint[2]["j"].items() if k != "joint_heartbeats"} == \
        {k: v for k, v in plain[2]["j"].items() if k != "joint_heartbeats"}
    # the sinks saw the same rows (no heartbeat of either kind)
    assert sorted(joint[0].splitlines()) == sorted(plain[0].splitlines())
    rows = [json.loads(line) for line in joint[0].splitlines()]
    pkts = truth  # noqa: F841 (read by DuckDB)
    want = duckdb.sql(f"select a.time - 20, b.time {BAND_SQL} order by all").fetchall()
    assert sorted((r["t0"], r["t1"]) for r in rows if "t0" in r) == [tuple(w) for w in want]
    assert sorted(r["u"] for r in rows if "u" in r) == sorted(t1 for t0, t1 in want if t0 >= t1)
