"""The C ABI of interface sets (gsqlc_add_set_member), driven directly: a
compiled query set's LFTA over [links] runs once per member, its instances
merged in the library by the generated set merge (gsq_lfta_def.set_merge);
also from the stand-alone runner (repeated --source NAME, --member)."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pyarrow as pa
import pytest

import gsqlc as G
from gsqlc.runtime.runner import run_library

SCHEMA = """
PROTOCOL LINK {
    uint    ts      get_csv_uint_pos1 (increasing, required);
    uint    v       get_csv_uint_pos2;
}
"""
QUERIES = """
DEFINE { query_name 'merged'; }
select ts, v from [links].LINK;

DEFINE { query_name 'plain'; }
select v from [other].LINK;
"""


@pytest.fixture(scope="module")
def qs(tmp_path_factory):
    d = tmp_path_factory.mktemp("setabi")
    (d / "schema.txt").write_text(SCHEMA)
    (d / "q.gsql").write_text(QUERIES)
    for name, rows in (("a", [(1, 10), (4, 11), (9, 12)]), ("b", [(2, 20), (3, 21), (8, 22)]),
                       ("c", [(5, 30), (6, 31), (7, 32)])):
        (d / f"{name}.csv").write_text("".join(f"{t},{v}\n" for t, v in rows))
    return d, G.compile(d / "q.gsql", d / "schema.txt")


def _run(qs, members, *, output="merged", arrow=None, binds=None):
    d, cqs = qs
    out = d / f"out_{output}_{len(members)}_{bool(arrow)}.txt"
    binds = binds if binds is not None else [(m, f"csv:{d / (m + '.csv')}") for _, m in members
                                             if not arrow or m not in arrow]
    res = run_library(cqs.library, binds, [(output, "csv", str(out))], {},
                      arrow_sources=arrow, set_members=members)
    return res, (out.read_text().splitlines()[1:] if out.exists() else [])  # no header


def test_one_member_is_that_member(qs):
    res, rows = _run(qs, [("links", "b")])
    assert res.status == 0, res.error
    assert rows == ["2,20", "3,21", "8,22"]
    names = [n["name"] for n in res.stats["nodes"] if n["running"]]
    assert names == ["merged"]   # no instance, no merge


def test_three_members_merge_in_time_order(qs):
    res, rows = _run(qs, [("links", "a"), ("links", "b"), ("links", "c")])
    assert res.status == 0, res.error
    assert [int(r.split(",")[0]) for r in rows] == list(range(1, 10))
    nodes = {n["name"]: n for n in res.stats["nodes"]}
    assert [n for n in nodes if n.startswith("merged")] == \
        ["merged@a", "merged@b", "merged@c", "merged"]
    assert [nodes[f"merged@{m}"]["kind"] for m in "abc"] == ["lfta"] * 3
    assert nodes["merged"]["kind"] == "hfta" and nodes["merged"]["output"] == "merged"
    assert nodes["merged@b"]["output"] == "merged@b"
    assert {s["uri"].split("/")[-1] for s in res.stats["sources"]} == {"a.csv", "b.csv", "c.csv"}


def test_an_arrow_member(qs):
    t = pa.table({"ts": pa.array([0, 7], pa.uint32()), "v": pa.array([90, 91], pa.uint32())})
    res, rows = _run(qs, [("links", "a"), ("links", "x")], arrow={"x": t.to_reader()})
    assert res.status == 0, res.error
    assert rows == ["0,90", "1,10", "4,11", "7,91", "9,12"]


def test_a_member_must_be_bound(qs):
    res, _ = _run(qs, [("links", "a"), ("links", "nope")],
                  binds=[("a", f"csv:{qs[0] / 'a.csv'}")])
    assert res.status != 0 and "interface 'nope' is not bound" in res.error, res.error


def test_an_lfta_without_temporal_column_cannot_read_a_set(qs):
    d, _ = qs
    res, _ = _run(qs, [("other", "a"), ("other", "b")], output="plain")
    assert res.status != 0
    assert ("query plain reads the interface set [other], whose members' outputs are merged "
            "in temporal order, but its LFTA outputs no temporal column to merge on") in \
        res.error, res.error
    res, rows = _run(qs, [("other", "c")], output="plain")   # one member: fine
    assert res.status == 0 and rows == ["30", "31", "32"], res.error


def test_bad_memberships_are_refused(qs):
    from gsqlc.runtime.runner import SetupError
    with pytest.raises(SetupError, match="already a member"):
        _run(qs, [("links", "a"), ("links", "a")])
    with pytest.raises(SetupError, match="member of itself"):
        _run(qs, [("links", "links")])


def test_standalone_runner(qs, tmp_path):
    d, cqs = qs
    runner = Path(cqs.compiled.built.runner)
    src = [a for m in "abc" for a in ("--source", f"links=csv:{d / (m + '.csv')}")]
    p = subprocess.run([str(runner), *src, "--output", "merged", "--format", "pipe"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert [int(r.split("|")[0]) for r in p.stdout.splitlines()] == list(range(1, 10))
    named = [a for m in "ac" for a in ("--source", f"{m}=csv:{d / (m + '.csv')}",
                                       "--member", f"links={m}")]
    p = subprocess.run([str(runner), *named, "--output", "merged", "--stats"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == ["1|10", "4|11", "5|30", "6|31", "7|32", "9|12"]
    assert '"merged@c"' in p.stderr
