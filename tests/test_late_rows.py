"""Late drops are reported in rows, not only in tuples.

An HFTA operator that drops a tuple as late counts it (late_dropped) and the
input rows it stands for (late_dropped_rows; gsq_count_late): a selected
row is one row, an LFTA sub-aggregate's partial holds the rows of its
count(*) accumulator (gsq_stream_desc.rows_col).  A partial of a query that
counts no rows (no count(*)) is counted apart (late_dropped_rows_unknown).
The run report says the same on stderr: "N tuples ..." when every dropped
tuple was one row (the text of old), else "N partial aggregates holding R
rows ...".

A partial aggregate holds the rows of its count(*); the counting of
partials and the report's wording for them are unit-tested in C
(tests/runtime/test_late_rows.c, run by tests/runtime/test_c_units.py).
Here: a dropped row is one row and the report's text is the old one; and
the merge of an aggregation LFTA's instances over an interface set, whose
members' tables eject partials early by collision (a small table, many
groups), takes the members' progress from their heartbeats -- the oldest
epoch each may still produce -- so that no partial is late (with progress
taken from data, partials of a member's older epoch, still counting, fell
behind and were dropped).
"""
from __future__ import annotations

import json
import random

from conftest import REPO

SCHEMA = REPO / "tests" / "data" / "schema.txt"
LATE = "arrived later than the closed epoch allows and were dropped"

PER5 = ("DEFINE { query_name 'per5'; }\n"
        "select tb, count(*) as n, sum(qty) as q from S.SALES group by time/5 as tb")
# over an interface set, a table of 16 slots and 40 groups an epoch
WITH_COUNT = ("DEFINE { query_name 'agg'; lfta_table_size 16; }\n"
              "select tb, g, count(*) as n, sum(qty) as q from [S].SALES "
              "group by time/10 as tb, qty % 40 as g")
SUM_ONLY = ("DEFINE { query_name 'agg'; lfta_table_size 16; }\n"
            "select tb, g, sum(qty) as q from [S].SALES group by time/10 as tb, qty % 40 as g")

def _write(path, rows):
    path.write_text("".join(f"{t},s0,10.0.0.1,{q},0,1.0,TRUE\n" for t, q in rows))
    return path


def _run(gsqlc, tmp_path, text, *args):
    q = tmp_path / "q.gsql"
    q.write_text(text)
    p = gsqlc("run", "--schema", SCHEMA, q, "--stats", *args)
    assert p.returncode == 0, p.err
    i = p.err.index("{")
    return p.out, json.loads(p.err[i:]), p.err[:i]


def _dropping(stats: dict) -> list[dict]:
    return [n for n in stats["nodes"] if n["late_dropped"]]


def _late_lines(report: str) -> list[str]:
    return [line for line in report.splitlines() if LATE in line]


def test_late_rows_of_a_selection_are_its_tuples(gsqlc, tmp_path):
    """Rows two epochs behind, in order at both levels: each reaches the
    HFTA as a one-row partial and is dropped; rows equal tuples and the
    report keeps its text."""
    times = [t for t in range(0, 20) for _ in range(3)]
    late = [t for t in range(0, 5) for _ in range(2)]        # epoch 0, after epoch 3
    rows = [(t, 1) for t in times[:48]] + [(t, 2) for t in late] + [(t, 1) for t in times[48:]]
    csv = _write(tmp_path / "s.csv", rows)
    out, stats, report = _run(gsqlc, tmp_path, PER5, "--source", f"S=csv:{csv}",
                              "--max-hfta-disorder", "1", "--max-lfta-disorder", "1",
                              "--flush", "immediate")
    [node] = _dropping(stats)
    assert node["name"] == "per5"
    assert node["late_dropped"] == node["late_dropped_rows"] == len(late)
    assert node["late_dropped_rows_unknown"] == 0
    counted = sum(int(line.split("|")[1]) for line in out.splitlines())
    assert counted + node["late_dropped_rows"] == len(rows)
    assert _late_lines(report) == [f"gsqlc: per5: {len(late)} tuples {LATE}"]
    # every node reports the counters, dropping or not
    assert all(n["late_dropped_rows"] == n["late_dropped_rows_unknown"] == 0
               for n in stats["nodes"] if n["name"] != "per5")


def _members(tmp_path):
    """Two interfaces of 120 s at 20 rows a second, in order, as members of
    set S: (the interfaces file, every row)."""
    every = []
    for name, seed in (("a", 1), ("b", 2)):
        rnd = random.Random(seed)
        rows = [(i // 20, rnd.randrange(1, 60)) for i in range(120 * 20)]
        _write(tmp_path / f"{name}.csv", rows)
        every += rows
    toml = tmp_path / "ifaces.toml"
    toml.write_text(f'[interface.a]\nsource = "csv:{tmp_path / "a.csv"}"\n'
                    f'[interface.b]\nsource = "csv:{tmp_path / "b.csv"}"\n'
                    '[set.S]\nmembers = ["a", "b"]\n')
    return toml, every


def _answer(out: str) -> dict[tuple[int, int], list[int]]:
    return {(int(r[0]), int(r[1])): [int(x) for x in r[2:]]
            for r in (line.split("|") for line in out.splitlines())}


def test_with_heartbeats_the_set_merge_loses_no_partials(gsqlc, tmp_path):
    """The same members and the same small table under the default flags:
    the set's merge takes each member's progress from its heartbeats, so no
    partial a member's table ejected early makes another one late."""
    toml, every = _members(tmp_path)
    for text in (WITH_COUNT, SUM_ONLY):
        out, stats, report = _run(gsqlc, tmp_path, text, "--interfaces", toml)
        assert _dropping(stats) == [] and _late_lines(report) == []
        assert sum(int(line.split("|")[-1]) for line in out.splitlines()) == sum(
            q for _, q in every)
