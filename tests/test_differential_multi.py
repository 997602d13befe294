"""Differential tests over TWO sources: merges, interface sets and joins.

Two pcaps from bench/pktgen.py (different seeds and rates, overlapping time
spans, the same (srcIP, destIP) group addresses so that joins match) are read
by gsqlc as eth0 and eth1 (`--clock data --format jsonl`); DuckDB computes
the expected answer over the two ground-truth tables `pa` and `pb`. Rows are
compared as multisets (floats to 6 decimals, IPs as dotted quads), as in
tests/test_differential.py.

Outer joins follow gsqlc's key-fill rule (docs/language.md, "Joins"): on an
unmatched row the columns equated by the join predicate take the present
side's value; the absent side's other columns are empty strings and zeros (a
missing count prints as 0).
"""
from __future__ import annotations

import json
import math
import os
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import require  # tests/ is on sys.path under pytest

duckdb = require("duckdb")
pytest.importorskip("pyarrow")

pytestmark = pytest.mark.slow  # every run starts at once: many builds

from conftest import run_gsqlc  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
import pktgen  # noqa: E402

# ---------------------------------------------------------------- the data
# eth0: 1500 packets at 10 packets/s from T0        -> [T0, T0 + 150)
# eth1: 1050 packets at  7 packets/s from T0 + 40   -> [T0 + 40, T0 + 190)
# 150 (srcIP, destIP) groups, the same addresses on both links (pktgen's
# group_addresses is deterministic), so per-10-second cells and +-2 s bands
# match on some groups and not on others.
T0 = 1_700_000_000
N_GROUPS = 150
SRC_A = dict(n=1500, pps=10, seed=21, start=T0)
SRC_B = dict(n=1050, pps=7, seed=22, start=T0 + 40)


@dataclass
class Data:
    dir: Path
    pa: Path
    pb: Path
    con: object


_PRELUDE = """
CREATE MACRO ip(a) AS concat_ws('.', (a >> 24)::VARCHAR, ((a >> 16) & 255)::VARCHAR,
                                 ((a >> 8) & 255)::VARCHAR, (a & 255)::VARCHAR);
CREATE VIEW q1 AS SELECT time // 10 AS tb, srcIP, destIP, count(*) AS c1, sum(len) AS b1
                  FROM pa GROUP BY ALL;
CREATE VIEW q2 AS SELECT time // 10 AS tb, srcIP, destIP, count(*) AS c2, sum(len) AS b2
                  FROM pb GROUP BY ALL;
"""


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("diffmulti")
    pa, pb = d / "a.pcap", d / "b.pcap"
    ta = pktgen.generate(str(pa), SRC_A["n"], N_GROUPS, pps=SRC_A["pps"],
                         seed=SRC_A["seed"], start=SRC_A["start"])
    tb = pktgen.generate(str(pb), SRC_B["n"], N_GROUPS, pps=SRC_B["pps"],
                         seed=SRC_B["seed"], start=SRC_B["start"])
    con = duckdb.connect()
    con.register("pa", ta)
    con.register("pb", tb)
    con.execute(_PRELUDE)
    yield Data(d, pa, pb, con)
    con.close()


# ---------------------------------------------------------------- cases

PKT_COLS = "time, srcIP, destIP, len"
DUCK_PKT = "SELECT time, ip(srcIP), ip(destIP), len FROM {t}"

MERGE_Q = (
    f"DEFINE {{query_name 'a';}}\nselect {PKT_COLS} from eth0.IPV4;\n"
    f"DEFINE {{query_name 'b';}}\nselect {PKT_COLS} from eth1.IPV4;\n"
    "DEFINE {query_name 'm';}\nmerge a.time : b.time from a, b;")
UNION_DUCK = DUCK_PKT.format(t="pa") + " UNION ALL " + DUCK_PKT.format(t="pb")

IFSET_Q = f"select {PKT_COLS} from [links].IPV4"

AGG_Q = (
    "DEFINE {query_name 'q1';}\n"
    "select tb, srcIP, destIP, count(*) as c1, sum(len) as b1 from eth0.IPV4\n"
    "group by time/10 as tb, srcIP, destIP;\n"
    "DEFINE {query_name 'q2';}\n"
    "select tb, srcIP, destIP, count(*) as c2, sum(len) as b2 from eth1.IPV4\n"
    "group by time/10 as tb, srcIP, destIP;\n")

JOIN_KINDS = {
    "INNER_JOIN": "INNER JOIN",
    "LEFT_OUTER_JOIN": "LEFT JOIN",
    "RIGHT_OUTER_JOIN": "RIGHT JOIN",
    "OUTER_JOIN": "FULL OUTER JOIN",
}


def join_gsql(kind: str) -> str:
    return AGG_Q + (
        "DEFINE {query_name 'j';}\n"
        f"select A.tb, A.srcIP, A.destIP, A.c1, B.tb, B.srcIP, B.c2\n{kind}\n"
        "from q1 A, q2 B\n"
        "where A.tb = B.tb and A.srcIP = B.srcIP and A.destIP = B.destIP;")


def join_duck(kind: str) -> str:
    # key fill: equated columns take the present side's value; others 0
    return (
        "SELECT coalesce(A.tb, B.tb), ip(coalesce(A.srcIP, B.srcIP)), "
        "ip(coalesce(A.destIP, B.destIP)), coalesce(A.c1, 0), "
        "coalesce(B.tb, A.tb), ip(coalesce(B.srcIP, A.srcIP)), coalesce(B.c2, 0) "
        f"FROM q1 A {JOIN_KINDS[kind]} q2 B "
        "ON A.tb = B.tb AND A.srcIP = B.srcIP AND A.destIP = B.destIP")


BAND_Q = ("select A.time, A.srcIP, B.time INNER_JOIN from eth0.IPV4 A, eth1.IPV4 B\n"
          "where A.srcIP = B.srcIP and A.destIP = B.destIP\n"
          "  and A.time >= B.time - 2 and A.time <= B.time + 2")
BAND_DUCK = ("SELECT A.time, ip(A.srcIP), B.time FROM pa A JOIN pb B "
             "ON A.srcIP = B.srcIP AND A.destIP = B.destIP "
             "AND B.time::BIGINT BETWEEN A.time::BIGINT - 2 AND A.time::BIGINT + 2")

BOTH = ("--source", "eth0=pcap:{a}", "--source", "eth1=pcap:{b}")
LINKS = ("--source", "links=pcap:{a}", "--source", "links=pcap:{b}")

# id -> (gsql text, source args)
RUNS = {"merge": (MERGE_Q, BOTH), "ifset": (IFSET_Q, LINKS), "band": (BAND_Q, BOTH)}
RUNS.update({f"join_{k}": (join_gsql(k), BOTH) for k in JOIN_KINDS})


def _run(rid: str, data: Data):
    text, srcs = RUNS[rid]
    d = data.dir / rid
    d.mkdir(exist_ok=True)
    q = d / "q.gsql"
    q.write_text(text + "\n")
    p = run_gsqlc("run", str(q), *(s.format(a=data.pa, b=data.pb) for s in srcs),
                  "--format", "jsonl")
    p.out = p.stdout.decode("utf-8", "replace")
    p.err = p.stderr.decode("utf-8", "replace")
    return p


@pytest.fixture(scope="module")
def runs(data):
    """All runs started together (each is mostly a C build)."""
    pool = ThreadPoolExecutor(max_workers=max(2, min(4, os.cpu_count() or 2)))
    futs = {rid: pool.submit(_run, rid, data) for rid in RUNS}
    yield lambda rid: futs[rid].result()
    pool.shutdown(wait=True, cancel_futures=True)


def _rows(p) -> list[tuple]:
    assert p.returncode == 0, f"gsqlc failed ({p.returncode}):\n{p.err}"
    return [tuple(v for _, v in json.loads(line, object_pairs_hook=list))
            for line in p.out.splitlines() if line.strip()]


# ---------------------------------------------------------------- comparison


def _norm(v):
    if isinstance(v, bool) or v is None or isinstance(v, (int, str)):
        return v
    if isinstance(v, float):
        return round(v, 6)
    try:
        return round(float(v), 6)
    except (TypeError, ValueError):
        return str(v)


def _key(row):
    return tuple((0, x) if isinstance(x, (int, float)) and not isinstance(x, bool)
                 else (1, str(x)) for x in row)


def _close(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
            return False
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=2e-6)
    return a == b and isinstance(a, bool) == isinstance(b, bool)


def assert_same_multiset(got, want, what=""):
    got = sorted((tuple(_norm(v) for v in r) for r in got), key=_key)
    want = sorted((tuple(_norm(v) for v in r) for r in want), key=_key)
    if len(got) == len(want) and all(
            len(g) == len(w) and all(_close(x, y) for x, y in zip(g, w))
            for g, w in zip(got, want)):
        return
    cg, cw = Counter(got), Counter(want)
    extra = list((cg - cw).elements())
    missing = list((cw - cg).elements())
    msg = [f"{what}: gsqlc gave {len(got)} rows, DuckDB {len(want)}; "
           f"{len(extra)} only in gsqlc, {len(missing)} only in DuckDB"]
    msg += ["  only gsqlc : " + repr(r) for r in extra[:8]]
    msg += ["  only duckdb: " + repr(r) for r in missing[:8]]
    pytest.fail("\n".join(msg))


# ---------------------------------------------------------------- tests


def test_generated_data_shape(data):
    """Overlapping spans, shared groups; joins have matched and unmatched cells."""
    c = data.con
    (a0, a1), = c.sql("SELECT min(time), max(time) FROM pa").fetchall()
    (b0, b1), = c.sql("SELECT min(time), max(time) FROM pb").fetchall()
    assert a0 < b0 < a1 < b1 and a1 - b0 >= 100
    (shared,), = c.sql("SELECT count(*) FROM (SELECT DISTINCT srcIP, destIP FROM pa "
                       "INTERSECT SELECT DISTINCT srcIP, destIP FROM pb)").fetchall()
    assert shared >= 100
    (inner, left, right), = c.sql(
        "SELECT count(*) FILTER (A.tb IS NOT NULL AND B.tb IS NOT NULL), "
        "count(*) FILTER (B.tb IS NULL), count(*) FILTER (A.tb IS NULL) "
        "FROM q1 A FULL JOIN q2 B USING (tb, srcIP, destIP)").fetchall()
    assert inner >= 50 and left >= 50 and right >= 50
    (band,), = c.sql(f"SELECT count(*) FROM ({BAND_DUCK})").fetchall()
    assert 50 <= band <= 5000


def test_merge_is_union(data, runs):
    got = _rows(runs("merge"))
    assert_same_multiset(got, data.con.sql(UNION_DUCK).fetchall(), "merge")


def test_merge_is_time_ordered(runs):
    times = [r[0] for r in _rows(runs("merge"))]
    assert times, "empty merge output"
    bad = [(i, times[i - 1], times[i]) for i in range(1, len(times)) if times[i] < times[i - 1]]
    assert not bad, f"{len(bad)} decreases in merge output, first: {bad[:5]}"


def test_interface_set_is_union(data, runs):
    got = _rows(runs("ifset"))
    assert_same_multiset(got, data.con.sql(UNION_DUCK).fetchall(), "[links].IPV4")
    times = [r[0] for r in got]
    assert all(a <= b for a, b in zip(times, times[1:])), "interface-set output not time-ordered"


@pytest.mark.parametrize("kind", list(JOIN_KINDS))
def test_join_of_aggregations(kind, data, runs):
    want = data.con.sql(join_duck(kind)).fetchall()
    assert want
    assert_same_multiset(_rows(runs(f"join_{kind}")), want, kind)


def test_band_join_on_packets(data, runs):
    want = data.con.sql(BAND_DUCK).fetchall()
    assert want
    assert_same_multiset(_rows(runs("band")), want, "band join")
