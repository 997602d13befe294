"""End to end: an outer equality join's output stays ordered on its join time.

The defect (found by a user): gsq::join_op emitted an unmatched row after
matched rows of a later time, although the join's temporal output column is
declared increasing, so an aggregation over the join's output dropped rows as
late ("jagg: 1 tuples arrived later than the closed epoch allows and were
dropped"; a count of 2 where 3 is right).  The template-level reproduction is
test_join_outer_output_order in test_hfta_templates.cpp.
"""
from __future__ import annotations

import json

SCHEMA = """
PROTOCOL base {
    uint systemTime get_system_time (low_cardinality, required, increasing, snap_len 0);
}
PROTOCOL T (base) {
    uint time get_csv_uint_pos1 (increasing);
    uint k    get_csv_uint_pos2;
}
"""

QUERIES = """
DEFINE {query_name 'ra';}
select tb, k, count(*) as c from r.T group by time as tb, k;
DEFINE {query_name 'sa';}
select tb, k, count(*) as c from s.T group by time as tb, k;
DEFINE {query_name 'jq';}
select R.tb as tb, R.k as k, R.c as rc, S.c as sc LEFT_OUTER_JOIN
from ra R, sa S where R.tb = S.tb and R.k = S.k;
DEFINE {query_name 'jagg';}
select tb, count(*) as n from jq group by tb;
"""

EPOCHS = 30


def test_outer_join_feeds_an_aggregation_without_late_rows(gsqlc, tmp_path):
    # Per epoch t: R has keys 1 and 2; S has key 2 (matched) and key 9 (no
    # partner), so every epoch has one unmatched left row and one matched row.
    r = "".join(f"{t},1\n{t},2\n" for t in range(1, EPOCHS + 1))
    s = "".join(f"{t},9\n{t},2\n" for t in range(1, EPOCHS + 1))
    (tmp_path / "schema.txt").write_text(SCHEMA)
    (tmp_path / "q.gsql").write_text(QUERIES)
    (tmp_path / "r.csv").write_text(r)
    (tmp_path / "s.csv").write_text(s)
    p = gsqlc("run", tmp_path / "q.gsql", "--schema", tmp_path / "schema.txt",
              "--source", f"r=csv:{tmp_path / 'r.csv'}", "--source", f"s=csv:{tmp_path / 's.csv'}",
              "--output", "jagg", "--format", "jsonl", "--stats")
    assert p.returncode == 0, p.err
    assert "later than the closed epoch" not in p.err, p.err
    rows = sorted((d["tb"], d["n"]) for d in map(json.loads, p.out.splitlines()))
    assert rows == [(t, 2) for t in range(1, EPOCHS + 1)]
    stats = json.loads(p.err[p.err.index("{"):])
    nodes = {n["name"]: n for n in stats["nodes"]}
    assert nodes["jagg"]["late_dropped"] == 0
    assert nodes["jq"]["late_dropped"] == 0
