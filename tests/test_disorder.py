"""Out-of-order processing (seed 004) end to end: bounded disorder in
aggregation (max_lfta_disorder / max_hfta_disorder as DEFINEs and options),
the OOP union feeding an order-agnostic aggregation, what explain says, and
the answers against DuckDB on inputs disordered within and beyond the bound."""
from __future__ import annotations

import json
import random

import pytest

from conftest import REPO, require

duckdb = require("duckdb")

SCHEMA = REPO / "tests" / "data" / "schema.txt"
PER5 = ("DEFINE { query_name 'per5'; }\n"
        "select tb, count(*) as n, sum(qty) as q from S.SALES group by time/5 as tb")


def _csv(path, times, qtys=None, links=None):
    rows = []
    for i, t in enumerate(times):
        q = qtys[i] if qtys else 1
        link = links[i] if links else 0
        rows.append(f"{t},s{link},10.0.0.{link + 1},{q},{link},1.0,TRUE")
    path.write_text("\n".join(rows) + "\n")
    return path


def _stats(err: str) -> dict:
    return json.loads(err[err.index("{"):])


def _late(stats: dict) -> int:
    return sum(s["late_dropped"] for s in stats["nodes"])


def _rows(out: str) -> list[tuple[int, ...]]:
    return sorted(tuple(int(x) for x in line.split("|")) for line in out.splitlines())


def _run(gsqlc, tmp_path, text, csv, *args):
    q = tmp_path / "q.gsql"
    q.write_text(text)
    p = gsqlc("run", "--schema", SCHEMA, q, "--source", f"S=csv:{csv}", "--stats", *args)
    assert p.returncode == 0, p.err
    return _rows(p.out), _stats(p.err), p.err


def test_a_tuple_two_epochs_behind_counts_by_default(gsqlc, tmp_path):
    # The example: epochs 0, 1, 2 and then 0 again.
    csv = _csv(tmp_path / "s.csv", [1, 6, 11, 3])
    rows, stats, _ = _run(gsqlc, tmp_path, PER5, csv)
    assert rows == [(0, 2, 2), (1, 1, 1), (2, 1, 1)]
    assert _late(stats) == 0
    # In order (one epoch open at both levels, the LFTA handing on a closed
    # epoch at once) the same tuple is late: counted.  (With the slow flush
    # the HFTA would not have seen epoch 1 yet and would still count it.)
    rows, stats, err = _run(gsqlc, tmp_path, PER5, csv, "--max-lfta-disorder", "1",
                            "--max-hfta-disorder", "1", "--flush", "immediate")
    assert rows == [(0, 1, 1), (1, 1, 1), (2, 1, 1)]
    assert _late(stats) == 1
    assert "1 tuples arrived later" in err
    # The query's DEFINE wins over the option.
    text = PER5.replace("query_name 'per5';", "query_name 'per5'; max_hfta_disorder 1; "
                        "max_lfta_disorder 1; flush immediate;")
    rows, stats, _ = _run(gsqlc, tmp_path, text, csv, "--max-hfta-disorder", "5")
    assert _late(stats) == 1


@pytest.mark.parametrize("flush", ["slow", "lazy", "immediate"])
@pytest.mark.parametrize("k", [2, 3, 5])
def test_local_disorder_within_the_bound_equals_duckdb(gsqlc, tmp_path, flush, k):
    """Every tuple is at most k-1 epochs behind the newest before it: nothing
    is dropped and the answer is DuckDB's, whatever the flush."""
    rnd = random.Random(k * 7 + len(flush))
    times, newest = [], 0
    for i in range(6000):
        t = 1000 + i // 20                     # 20 rows a second, 5 s epochs
        newest = max(newest, t // 5)
        lag = rnd.randrange(0, 5 * (k - 1)) if rnd.random() < 0.3 else 0
        t2 = max(t - lag, (newest - (k - 1)) * 5)
        times.append(t2)
    qtys = [rnd.randrange(1, 100) for _ in times]
    csv = _csv(tmp_path / "s.csv", times, qtys)
    text = ("DEFINE { query_name 'per5'; lfta_table_size 16; }\n"
            "select tb, qty % 7 as g, count(*) as n, sum(qty) as q from S.SALES "
            "group by time/5 as tb, qty % 7 as g")
    rows, stats, _ = _run(gsqlc, tmp_path, text, csv, "--max-hfta-disorder", str(k),
                          "--max-lfta-disorder", str(k), "--flush", flush)
    want = duckdb.sql(f"select t//5 as tb, q % 7 as g, count(*), sum(q) from "
                      f"(select unnest({times}) as t, unnest({qtys}) as q) "
                      f"group by all order by all").fetchall()
    assert _late(stats) == 0
    assert rows == [tuple(int(x) for x in r) for r in want]


def test_tuples_beyond_the_bound_are_counted_and_the_rest_equal(gsqlc, tmp_path):
    rnd = random.Random(5)
    times, late = [], []
    for i in range(4000):
        t = 1000 + i // 20
        times.append(t)
        if i > 1500 and rnd.random() < 0.01:      # of epochs already closed
            late.append(len(times))
            times.append(t - 60)             # twelve epochs behind
    qtys = [rnd.randrange(1, 50) for _ in times]
    csv = _csv(tmp_path / "s.csv", times, qtys)
    rows, stats, err = _run(gsqlc, tmp_path, PER5, csv)
    assert _late(stats) == len(late) > 0
    keep = [i for i in range(len(times)) if i not in set(late)]
    kt, kq = [times[i] for i in keep], [qtys[i] for i in keep]
    want = duckdb.sql(f"select t//5, count(*), sum(q) from (select unnest({kt}) as t, "
                      f"unnest({kq}) as q) group by all order by all").fetchall()
    assert rows == [tuple(int(x) for x in r) for r in want]
    assert f"{len(late)} tuples arrived later" in err


UNION = ("DEFINE { query_name 'a'; }\nselect time, qty from S.SALES where delta = 0;\n"
         "DEFINE { query_name 'b'; }\nselect time, qty from S.SALES where delta = 1;\n"
         "DEFINE { query_name 'u'; }\nmerge x.time : y.time from a x, b y;\n"
         "DEFINE { query_name 'per10'; }\n"
         "select tb, count(*) as n, sum(qty) as q from u group by time/10 as tb")


def _delayed_union(delay: int, seconds: int = 120, rate: int = 200):
    """Two links at `rate` rows/s each; link 1 arrives `delay` s late.  (The
    run reads 512 records a batch and hands on each LFTA's output of a batch
    in turn, which adds a batch's span, here 1.3 s, to the union's disorder.)"""
    rows = []
    for s in range(seconds):
        for j in range(rate):
            rows.append((s, 0, s * rate + j))
            if s >= delay:
                rows.append((s - delay, 1, (s - delay) * rate + j))
    for s in range(seconds - delay, seconds):
        for j in range(rate):
            rows.append((s, 1, s * rate + j))
    return rows


def _duck_per10(csv) -> list[tuple[int, ...]]:
    return [tuple(int(x) for x in r) for r in duckdb.sql(
        f"select column0 // 10, count(*), sum(column3) from read_csv('{csv}', header=false) "
        "group by all order by all").fetchall()]


@pytest.mark.parametrize("delay", [3, 25])
def test_union_of_a_delayed_stream_passes_through_and_equals_duckdb(gsqlc, tmp_path, delay):
    rows = _delayed_union(delay)
    times = [1000 + r[0] for r in rows]
    csv = _csv(tmp_path / "u.csv", times, [r[2] % 13 for r in rows], [r[1] for r in rows])
    k = delay // 10 + 3
    # S's rows trail its largest time by up to `delay` s: declared, so that the
    # LFTAs' heartbeats promise no more than the data keeps (replayed on the
    # data clock, heartbeats come every second of the data, as they would live)
    bound = ("--out-of-order", f"S={delay}")
    got, stats, _ = _run(gsqlc, tmp_path, UNION, csv, "--max-hfta-disorder", str(k), *bound)
    want = _duck_per10(csv)
    assert _late(stats) == 0
    assert got == want
    merge = next(s for s in stats["nodes"] if s["name"] == "u")
    # The OOP union holds nothing: tuples pass straight through.
    assert merge["peak_held_tuples"] == 0, merge
    # In order, the merge buffers the link that runs ahead instead.
    got1, stats1, _ = _run(gsqlc, tmp_path, UNION, csv, "--max-hfta-disorder", "1", *bound)
    assert got1 == got and _late(stats1) == 0
    merge1 = next(s for s in stats1["nodes"] if s["name"] == "u")
    assert merge1["peak_held_tuples"] >= (delay - 2) * 200, merge1


def test_union_beyond_the_bound_counts_late_tuples(gsqlc, tmp_path):
    rows = _delayed_union(40)
    times = [1000 + r[0] for r in rows]
    csv = _csv(tmp_path / "u.csv", times, links=[r[1] for r in rows])
    got, stats, _ = _run(gsqlc, tmp_path, UNION, csv, "--max-hfta-disorder", "2")
    late = _late(stats)
    assert late > 0
    assert sum(n for _, n, _ in got) + late == len(rows)
    want = {tb: n for tb, n, _ in _duck_per10(csv)}
    assert all(n <= want[tb] for tb, n, _ in got)


def test_explain_shows_each_operators_order(gsqlc, tmp_path):
    q = tmp_path / "q.gsql"
    q.write_text(UNION + ";\n" + PER5.replace("'per5';", "'per5'; max_lfta_disorder 1;"))
    p = gsqlc("explain", "--schema", SCHEMA, q)
    assert p.returncode == 0, p.err
    blocks = {b.split()[1]: b for b in p.out.split("\n[")[1:]}
    assert "out of order: its readers are order-agnostic" in blocks["u"]
    assert "up to 3 epochs open" in blocks["per10"]
    assert "1 epoch open: in order" in blocks["_fta_per5"] and "slow flush" in blocks["_fta_per5"]
    p = gsqlc("explain", "--schema", SCHEMA, q, "--max-hfta-disorder", "1", "--flush", "lazy")
    blocks = {b.split()[1]: b for b in p.out.split("\n[")[1:]}
    assert "in order: releases tuples in merge-field order" in blocks["u"]
    assert "1 epoch open: in order" in blocks["per10"]
    # an in-order HFTA takes a closed epoch's partials at once
    assert "immediate flush" in blocks["_fta_per5"]
    q.write_text(PER5)
    p = gsqlc("explain", "--schema", SCHEMA, q, "--max-lfta-disorder", "4", "--flush", "lazy")
    blocks = {b.split()[1]: b for b in p.out.split("\n[")[1:]}
    # 4 open LFTA epochs and a lazy flush's lag would outrun the HFTA's 3
    assert "up to 2 epochs open" in blocks["_fta_per5"] and "lazy flush" in blocks["_fta_per5"]
    assert "up to 3 epochs open" in blocks["per5"]


@pytest.mark.parametrize("define,needle", [
    ("max_lfta_disorder 0;", "max_lfta_disorder must be an integer from 1"),
    ("max_hfta_disorder many;", "max_hfta_disorder must be an integer from 1"),
    ("flush sometimes;", "flush must be one of slow, lazy, immediate"),
])
def test_bad_define_is_a_located_error(gsqlc, tmp_path, define, needle):
    q = tmp_path / "q.gsql"
    q.write_text(PER5.replace("query_name 'per5';", f"query_name 'per5';\n  {define}"))
    p = gsqlc("explain", "--schema", SCHEMA, q)
    assert p.returncode == 2
    assert f"{q}:2:3: error [bad-define]: {needle}" in p.err, p.err


def test_bad_options_name_the_flag_and_the_keyword(gsqlc, tmp_path):
    q = tmp_path / "q.gsql"
    q.write_text(PER5)
    p = gsqlc("explain", "--schema", SCHEMA, q, "--max-hfta-disorder", "0")
    assert p.returncode == 2 and "--max-hfta-disorder must be an integer from 1" in p.err
    import gsqlc as g
    with pytest.raises(g.UsageError, match="max_lfta_disorder must be an integer"):
        g.compile([q], schema=SCHEMA, max_lfta_disorder=-1)
    with pytest.raises(g.UsageError, match="flush must be one of"):
        g.compile([q], schema=SCHEMA, flush="never")


def test_api_takes_the_disorder(tmp_path):
    import gsqlc as g
    q = tmp_path / "q.gsql"
    q.write_text(PER5)
    csv = _csv(tmp_path / "s.csv", [1, 6, 11, 3])
    for k, want in ((3, [2, 1, 1]), (1, [1, 1, 1])):
        qs = g.compile([q], schema=SCHEMA, max_hfta_disorder=k, max_lfta_disorder=k,
                       flush="immediate")
        t = qs.table({"S": f"csv:{csv}"})
        assert sorted(zip(t["tb"].to_pylist(), t["n"].to_pylist())) == list(enumerate(want))


BAND = ("DEFINE { query_name 'j'; }\n"
        "select A.time as t, A.qty as aq, B.qty as bq INNER_JOIN from A.SALES A, B.SALES B\n"
        "where A.store = B.store and A.time >= B.time - 15 and A.time <= B.time + 15;\n"
        "DEFINE { query_name 'per10'; }\n"
        "select tb, count(*) as n, sum(bq) as q from j group by t/10 as tb")


@pytest.mark.parametrize("skew", [0, 7])
def test_aggregation_over_a_band_join_of_skewed_streams_equals_duckdb(gsqlc, tmp_path, skew):
    """A band join's output is disordered by up to its band (30 s here): the
    planner opens enough epochs downstream (4 of 10 s), so nothing is lost,
    whatever the skew between the two inputs."""
    rnd = random.Random(skew)
    a = [1000 + i // 4 for i in range(1200)]
    b = [1000 + skew + i // 3 for i in range(900)]
    links_a = [rnd.randrange(6) for _ in a]
    links_b = [rnd.randrange(6) for _ in b]
    qa, qb = [rnd.randrange(1, 9) for _ in a], [rnd.randrange(1, 9) for _ in b]
    ca = _csv(tmp_path / "a.csv", a, qa, links_a)
    cb = _csv(tmp_path / "b.csv", b, qb, links_b)
    q = tmp_path / "q.gsql"
    q.write_text(BAND)
    ex = gsqlc("explain", "--schema", SCHEMA, q)
    assert "4 epochs open (raised from 3)" in ex.out, ex.out
    p = gsqlc("run", "--schema", SCHEMA, q, "--source", f"A=csv:{ca}", "--source", f"B=csv:{cb}",
              "--stats", "--clock", "data")
    assert p.returncode == 0, p.err
    assert _late(_stats(p.err)) == 0
    want = duckdb.sql(
        f"select a.column0 // 10, count(*), sum(b.column3) from read_csv('{ca}', header=false) a "
        f"join read_csv('{cb}', header=false) b on a.column1 = b.column1 "
        "and a.column0 between b.column0 - 15 and b.column0 + 15 group by all order by all"
    ).fetchall()
    assert _rows(p.out) == [tuple(int(x) for x in r) for r in want]


JOIN_UNIONS = (
    "DEFINE { query_name 'a0'; }\nselect time, store, qty from A.SALES where delta = 0;\n"
    "DEFINE { query_name 'a1'; }\nselect time, store, qty from A.SALES where delta = 1;\n"
    "DEFINE { query_name 'm1'; }\nmerge x.time : y.time from a0 x, a1 y;\n"
    "DEFINE { query_name 'b0'; }\nselect time, store, qty from B.SALES where delta = 0;\n"
    "DEFINE { query_name 'b1'; }\nselect time, store, qty from B.SALES where delta = 1;\n"
    "DEFINE { query_name 'm2'; }\nmerge x.time : y.time from b0 x, b1 y;\n"
    "DEFINE { query_name 'j'; }\n"
    "select L.time as t, L.qty as lq, R.qty as rq INNER_JOIN from m1 L, m2 R\n"
    "where L.time = R.time and L.store = R.store;\n"
    "DEFINE { query_name 'per10'; }\n"
    "select tb, count(*) as n, sum(rq) as q from j group by t/10 as tb")


def test_join_of_two_delayed_unions_runs_out_of_order_and_equals_duckdb(gsqlc, tmp_path):
    """Seed 004's G3 shape: each join input is the union of two links, one
    arriving 20 s late.  The unions pass tuples through, the join purges by
    their heartbeats, the aggregation keeps enough epochs: nothing is lost,
    and the answer is DuckDB's; in order the merges buffer instead."""
    rows = _delayed_union(20, seconds=90, rate=100)
    times = [1000 + r[0] for r in rows]
    ca = _csv(tmp_path / "a.csv", times, [r[2] % 11 for r in rows], [r[1] for r in rows])
    cb = _csv(tmp_path / "b.csv", times, [r[2] % 7 for r in rows], [r[1] for r in rows])
    q = tmp_path / "q.gsql"
    q.write_text(JOIN_UNIONS)
    ex = gsqlc("explain", "--schema", SCHEMA, q)
    blocks = {b.split()[1]: b for b in ex.out.split("\n[")[1:]}
    assert "out of order: m1 and m2 come out of order" in blocks["j"], blocks["j"]
    assert "passes tuples" in blocks["m1"] or "straight through" in blocks["m1"]
    want = [tuple(int(x) for x in r) for r in duckdb.sql(
        f"select a.column0 // 10, count(*), sum(b.column3) from read_csv('{ca}', header=false) a "
        f"join read_csv('{cb}', header=false) b on a.column0 = b.column0 "
        "and a.column1 = b.column1 group by all order by all").fetchall()]
    peaks = {}
    for k in ("6", "1"):
        # Both links of a union come through ONE interface, one of them 20 s
        # late: out_of_order = 20 s makes the interface's heartbeats (on the
        # data clock of the CSV time column) wait for it (seed 002, B_ii).
        p = gsqlc("run", "--schema", SCHEMA, q, "--source", f"A=csv:{ca}",
                  "--source", f"B=csv:{cb}", "--stats", "--clock", "data",
                  "--heartbeat-interval", "1", "--out-of-order", "A=20",
                  "--out-of-order", "B=20", "--max-hfta-disorder", k)
        assert p.returncode == 0, p.err
        st = _stats(p.err)
        assert _late(st) == 0, k
        assert all(x["time"]["dropped_below_heartbeat"] == 0 for x in st["sources"]), k
        assert min(x["heartbeats"] for x in st["streams"]) > 10, k
        assert _rows(p.out) == want, k
        peaks[k] = {s["name"]: s["peak_held_tuples"] for s in st["nodes"]}
    assert peaks["6"]["m1"] == peaks["6"]["m2"] == 0          # OOP: the unions hold nothing
    assert peaks["1"]["m1"] > 0 and peaks["1"]["m2"] > 0      # IOP: they buffer the late link
