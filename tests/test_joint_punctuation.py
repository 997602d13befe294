"""Joint punctuation (seed 004 section 7) end to end: an aggregation over a
band join, grouped on both inputs' times (the paper's Q3: connections per
(S0.ts, S1.ts)), through the CLI against DuckDB.

A temporal key over the join's right time is an ordinary key of the
aggregation's epochs (which are made by the left time), so the band costs no
extra epochs and nothing is dropped; the join's joint punctuation lets a group
below it on both times leave before its epoch closes, so fewer groups are
held.  The same query with `non_temporal(t1)` (no joint punctuation) is the
contrast: the same answer, more groups held.  Heartbeats need a clock: the
inputs are one pcap capture read by two interfaces, replayed on the data
clock (link A's time shifted back by a skew)."""
from __future__ import annotations

import json
import sys

import pytest

from conftest import REPO, require

duckdb = require("duckdb")
sys.path.insert(0, str(REPO / "bench"))
import pktgen  # noqa: E402


def q3(t1: str = "t1", reader: bool = False, skew: int = 0) -> str:
    """Q3: a count per pair of 5 s epochs of the two times; with `reader`, a
    query that does not need its output in order (so the count's groups may
    leave from any open epoch)."""
    text = (f"DEFINE {{ query_name 'ra'; }}\nselect time - {skew} as t, srcIP from eth0.IPV4;\n"
            "DEFINE { query_name 'rb'; }\nselect time as t, srcIP from eth1.IPV4;\n"
            "DEFINE { query_name 'j'; }\n"
            "select A.t as t0, B.t as t1 INNER_JOIN from ra A, rb B\n"
            "where A.srcIP = B.srcIP and B.t >= A.t and B.t <= A.t + 40;\n"
            "DEFINE { query_name 'c'; }\n"
            f"select a, b, count(*) as n from j group by t0/5 as a, {t1}/5 as b")
    if reader:
        text += (";\nDEFINE { query_name 'per_a'; }\n"
                 "select a2, sum(n) as n, count(*) as cells from c group by a/2 as a2")
    return text


@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    """1500 packets of 25 sources over 150 s."""
    pcap = tmp_path_factory.mktemp("q3") / "pkts.pcap"
    truth = pktgen.generate(str(pcap), 1500, 25, pps=10, seed=9, start=1_700_000_000, frag=0.0)
    return pcap, truth


def _run(gsqlc, tmp_path, text, pcap, name="q"):
    q = tmp_path / f"{name}.gsql"
    q.write_text(text)
    p = gsqlc("run", q, "--source", f"eth0=pcap:{pcap}", "--source", f"eth1=pcap:{pcap}",
              "--clock", "data", "--stats")
    assert p.returncode == 0, p.err
    stats = json.loads(p.err[p.err.index("{"):])
    rows = sorted(tuple(int(x) for x in line.split("|")) for line in p.out.splitlines())
    return rows, {s["name"]: s for s in stats["nodes"]}, {s["name"]: s for s in stats["streams"]}


def _q3_duckdb(truth, skew):
    pkts = truth  # noqa: F841 (read by DuckDB)
    return [tuple(int(x) for x in r) for r in duckdb.sql(
        f"select (a.time - {skew}) // 5, b.time // 5, count(*) from pkts a join pkts b "
        f"on a.srcIP = b.srcIP and b.time between a.time - {skew} and a.time - {skew} + 40 "
        "group by all order by all").fetchall()]


def test_explain_names_joint_punctuation(gsqlc, tmp_path):
    q = tmp_path / "q.gsql"
    q.write_text(q3())
    out = gsqlc("explain", q).out
    blocks = {b.split()[1]: b for b in out.split("\n[")[1:]}
    assert "emits joint punctuation" in blocks["j"], blocks["j"]
    assert "joint punctuation: a group below it on both a and b leaves before its epoch " \
           "closes (from the oldest epoch, in order)" in blocks["c"], blocks["c"]
    # the band does not multiply c's epochs: only t0 makes them
    assert "9 epochs open (raised from 3)" in blocks["c"], blocks["c"]
    q.write_text(q3(reader=True))
    blocks = {b.split()[1]: b for b in gsqlc("explain", q).out.split("\n[")[1:]}
    assert "(from any open epoch: its readers are order-agnostic)" in blocks["c"], blocks["c"]
    # c's output is then disordered by up to 8 of its epochs (a): per_a opens 5 of a/2
    assert "5 epochs open (raised from 3): its input is an aggregation's output, its groups " \
           "released by joint punctuation, disordered by up to 8" in blocks["per_a"], blocks["per_a"]
    q.write_text(q3("non_temporal(t1)"))
    out = gsqlc("explain", q).out
    assert "joint punctuation" not in out


@pytest.mark.parametrize("skew", [0, 12])
def test_q3_equals_duckdb_and_holds_fewer_groups(gsqlc, tmp_path, capture, skew):
    pcap, truth = capture
    want = _q3_duckdb(truth, skew)
    rows, nodes, streams = _run(gsqlc, tmp_path, q3(skew=skew), pcap)
    assert rows == want and len(want) > 100
    assert sum(n["late_dropped"] for n in nodes.values()) == 0
    assert streams["j"]["joint_heartbeats"] > 20
    base, base_nodes, base_streams = _run(gsqlc, tmp_path, q3("non_temporal(t1)", skew=skew),
                                          pcap, "base")
    assert base == want
    assert base_streams["j"]["joint_heartbeats"] == 0
    held, base_held = nodes["c"]["peak_held_tuples"], base_nodes["c"]["peak_held_tuples"]
    assert 0 < held < base_held, (held, base_held)


def test_q3_any_order_output_equals_duckdb(gsqlc, tmp_path, capture):
    """c's reader is order-agnostic: covered groups leave from every open
    epoch (c's output is then out of order by up to its open epochs, which
    the planner passes on to per_a), and per_a still loses nothing."""
    pcap, truth = capture
    want: dict[int, list[int]] = {}
    for a, _, n in _q3_duckdb(truth, 7):
        w = want.setdefault(a // 2, [0, 0])
        w[0] += n
        w[1] += 1
    rows, nodes, _ = _run(gsqlc, tmp_path, q3(reader=True, skew=7), pcap)
    assert rows == sorted((a2, n, c) for a2, (n, c) in want.items())
    assert sum(n["late_dropped"] for n in nodes.values()) == 0
    _, ordered_nodes, _ = _run(gsqlc, tmp_path, q3(skew=7), pcap, "ordered")
    assert nodes["c"]["peak_held_tuples"] < ordered_nodes["c"]["peak_held_tuples"]
