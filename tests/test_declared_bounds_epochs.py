"""Declared time bounds alone keep an HFTA aggregation's epochs open.

An HFTA aggregation keeps max_hfta_disorder (K, default 3) epochs open and,
past K, closes the oldest on data.  When the run generates heartbeats from
declared bounds (--out-of-order, [interface.X] out_of_order: seed 002) and
they reach the aggregation as promises -- from an LFTA, through a MERGE, or
through the merge of an interface set -- it closes epochs on those
heartbeats instead (groupby_op.hpp, "Promised input";
gsq_input_heartbeats_strict): data disordered by more than K epochs but
within the declared bound loses nothing, with the defaults (no
--max-hfta-disorder, --clock, --batch).  A running aggregation (CLOSING_WHEN,
in order by design) holds a later epoch's rows until a heartbeat completes
the epochs before it (running_op.hpp).  A record beyond the bound is
dropped at the input and counted per source.

Each interface's rows trail the largest time read before them on that
interface by up to 25 s (a tenth of them by exactly 25 s): with 10-s epochs
that is three epochs behind the newest, one more than K = 3 allows.
"""
from __future__ import annotations

import json
import random

import pytest

from conftest import REPO, require

duckdb = require("duckdb")

SCHEMA = REPO / "tests" / "data" / "schema.txt"
BOUND = 25
T0 = 1_000

MERGED = ("DEFINE { query_name 'from_a'; }\nselect time, qty from a.SALES;\n"
          "DEFINE { query_name 'from_b'; }\nselect time, qty from b.SALES;\n"
          "DEFINE { query_name 'both'; }\nmerge x.time : y.time from from_a x, from_b y;\n"
          "DEFINE { query_name 'per10'; }\n"
          "select tb, count(*) as n, sum(qty) as q from both group by time/10 as tb\n")
OVER_SET = ("DEFINE { query_name 'per10'; }\n"
            "select tb, count(*) as n, sum(qty) as q from [s].SALES group by time/10 as tb\n")
DIRECT = ("DEFINE { query_name 'per10'; }\n"
          "select tb, count(*) as n, sum(qty) as q from a.SALES group by time/10 as tb\n")
# a running aggregation (CLOSING_WHEN): in order, one epoch at a time; over
# promises it holds a later epoch's rows until a heartbeat completes the
# epochs before it.  One group, with rows in every epoch: it reports each
# epoch's count.
RUNNING = ("DEFINE { query_name 'run10'; }\n"
           "select tb, store, count(*) as n, sum(qty) as q from a.SALES\n"
           "group by time/10 as tb, store closing_when count(*) = 0\n")


def _rows(seed: int, seconds: int = 240, rate: int = 20, far: int = 0,
          bound: int = BOUND) -> list[tuple[int, int]]:
    """(time, qty) rows of one interface in the order they arrive: `rate` a
    second for `seconds` s, each trailing the clock by 0 to `bound` s (never
    by more than `bound` behind the largest time before it).  `far` rows are
    in addition 200 s behind, beyond any bound, after the first 100 s (qty
    99, which no other row has)."""
    rnd = random.Random(seed)
    rows = []
    for i in range(seconds * rate):
        now = T0 + i // rate
        r = rnd.random()
        delay = bound if r < 0.1 else rnd.randint(1, bound - 1) if r < 0.35 else 0
        rows.append((max(T0, now - delay), rnd.randrange(1, 50)))
    for k in range(far):
        at = rnd.randrange(100 * rate, len(rows))
        rows.insert(at, (T0 + at // rate - 200, 99))
    return rows


def _trail(rows) -> int:
    """The most a row trails the largest time before it."""
    top, worst = None, 0
    for t, _ in rows:
        if top is not None:
            worst = max(worst, top - t)
        top = t if top is None else max(top, t)
    return worst


def _write(path, rows):
    path.write_text("".join(f"{t},s0,10.0.0.1,{q},0,1.0,TRUE\n" for t, q in rows))
    return path


def _duck_per10(rows) -> list[tuple[int, int, int]]:
    ts, qs = [t for t, _ in rows], [q for _, q in rows]
    return [tuple(int(x) for x in r) for r in duckdb.sql(
        f"select t // 10, count(*), sum(q) from (select unnest({ts}) as t, unnest({qs}) as q) "
        "group by all order by all").fetchall()]


def _got(out: str) -> list[tuple[int, ...]]:
    return sorted(tuple(int(x) for x in line.split("|")) for line in out.splitlines())


def _stats(err: str) -> dict:
    return json.loads(err[err.index("{"):])


def _late(stats: dict) -> int:
    return sum(n["late_dropped"] for n in stats["nodes"])


def _dropped_at_input(stats: dict) -> dict[str, int]:
    return {s["iface"]: s["time"]["dropped_below_heartbeat"] for s in stats["sources"]}


def _run(gsqlc, tmp_path, query: str, *args):
    q = tmp_path / "q.gsql"
    q.write_text(query)
    p = gsqlc("run", "--schema", SCHEMA, q, "--stats", *args)
    assert p.returncode == 0, p.err
    return _got(p.out), _stats(p.err), p.err


def _links(tmp_path, bound: int = BOUND):
    """Two interfaces' CSV files, disordered within `bound`, and their rows."""
    a, b = _rows(seed=1, bound=bound), _rows(seed=2, bound=bound)
    assert _trail(a) == bound and _trail(b) == bound
    return _write(tmp_path / "a.csv", a), _write(tmp_path / "b.csv", b), a + b


@pytest.fixture
def links(tmp_path):
    return _links(tmp_path)


def _interfaces(path, a, b, members: bool = False, bound: int = BOUND):
    text = (f'[interface.a]\nsource = "csv:{a}"\nout_of_order = {bound}\n'
            f'[interface.b]\nsource = "csv:{b}"\nout_of_order = {bound}\n')
    if members:
        text += '[set.s]\nmembers = ["a", "b"]\n'
    path.write_text(text)
    return path


def test_merge_then_count_loses_nothing_within_the_declared_bound(gsqlc, tmp_path, links):
    a, b, rows = links
    toml = _interfaces(tmp_path / "ifaces.toml", a, b)
    got, stats, err = _run(gsqlc, tmp_path, MERGED, "--interfaces", toml)
    assert _late(stats) == 0, err
    assert _dropped_at_input(stats) == {"a": 0, "b": 0}
    assert got == _duck_per10(rows)
    assert "later than the closed epoch allows" not in err
    # the same bound on the command line
    got2, stats2, _ = _run(gsqlc, tmp_path, MERGED, "--source", f"a=csv:{a}", "--source",
                           f"b=csv:{b}", "--out-of-order", f"a={BOUND}", "--out-of-order",
                           f"b={BOUND}")
    assert got2 == got and _late(stats2) == 0
    assert _dropped_at_input(stats2) == {"a": 0, "b": 0}


def test_without_the_declaration_the_epochs_close_on_data(gsqlc, tmp_path, links):
    """The control: no bound declared, nothing generates promises, and K = 3
    open epochs drop the rows three epochs behind (counted)."""
    a, b, rows = links
    got, stats, err = _run(gsqlc, tmp_path, MERGED, "--source", f"a=csv:{a}", "--source",
                           f"b=csv:{b}")
    late = _late(stats)
    assert late > 0, err
    assert sum(n for _, n, _ in got) + late == len(rows)
    assert f"{late} tuples arrived later" in err


# Over an interface set or an interface, the LFTA's sub-aggregate holds its
# newest epochs and hands older rows on, which hides a few epochs of the
# disorder from the HFTA: 55 s are needed to go beyond K there.
@pytest.mark.parametrize("bound", [BOUND, 55])
def test_interface_set_then_count_loses_nothing_within_the_declared_bound(gsqlc, tmp_path, bound):
    a, b, rows = _links(tmp_path, bound)
    toml = _interfaces(tmp_path / "ifaces.toml", a, b, members=True, bound=bound)
    got, stats, err = _run(gsqlc, tmp_path, OVER_SET, "--interfaces", toml)
    assert _late(stats) == 0, err
    assert _dropped_at_input(stats) == {"a": 0, "b": 0}
    assert got == _duck_per10(rows)
    names = {n["name"] for n in stats["nodes"]}
    assert {"_fta_per10@a", "_fta_per10@b"} <= names, names   # the set's instances


@pytest.mark.parametrize("bound", [BOUND, 55])
def test_direct_count_loses_nothing_within_the_declared_bound(gsqlc, tmp_path, bound):
    a, _, _ = _links(tmp_path, bound)
    rows = _rows(seed=1, bound=bound)
    got, stats, err = _run(gsqlc, tmp_path, DIRECT, "--source", f"a=csv:{a}",
                           "--out-of-order", f"a={bound}")
    assert _late(stats) == 0, err
    assert _dropped_at_input(stats) == {"a": 0}
    assert got == _duck_per10(rows)


def test_running_aggregation_loses_nothing_within_the_declared_bound(gsqlc, tmp_path, links):
    a, _, _ = links
    rows = _rows(seed=1)
    q = tmp_path / "q.gsql"
    q.write_text(RUNNING)
    p = gsqlc("run", "--schema", SCHEMA, q, "--stats", "--source", f"a=csv:{a}",
              "--out-of-order", f"a={BOUND}")
    assert p.returncode == 0, p.err
    stats = _stats(p.err)
    assert _late(stats) == 0, p.err
    assert _dropped_at_input(stats) == {"a": 0}
    got = sorted((int(tb), int(n), int(sq)) for tb, _, n, sq in
                 (line.split("|") for line in p.out.splitlines()))
    assert got == _duck_per10(rows)


def test_rows_beyond_the_declared_bound_are_dropped_and_counted(gsqlc, tmp_path):
    """Rows 200 s behind break the bound of 25: each is dropped at the input
    (its source's dropped_below_heartbeat) with a warning naming the
    interface; the rest is counted exactly."""
    a_rows, b_rows = _rows(seed=3, far=30), _rows(seed=4)
    far = [r for r in a_rows if r[1] == 99]
    assert _trail(a_rows) > BOUND and _trail(b_rows) == BOUND
    a, b = _write(tmp_path / "a.csv", a_rows), _write(tmp_path / "b.csv", b_rows)
    toml = _interfaces(tmp_path / "ifaces.toml", a, b)
    got, stats, err = _run(gsqlc, tmp_path, MERGED, "--interfaces", toml)
    assert _dropped_at_input(stats) == {"a": 30, "b": 0}, err
    assert _late(stats) == 0
    assert "interface 'a'" in err and "dropped" in err
    assert len(far) == 30
    kept = [r for r in a_rows if r[1] != 99]
    assert got == _duck_per10(kept + b_rows)
