"""FILTER_JOIN(R.col, N): the windowed semi-join, end to end through the CLI.

An S tuple (second FROM source) at time s passes when an R tuple (first
source) of equal keys passing R's own conditions had R.col in [s - N + 1, s];
it is emitted once, in S's order.  The oracle is DuckDB:

    SELECT ... FROM S s WHERE <S filters> AND EXISTS (SELECT 1 FROM R r
        WHERE <keys> AND r.t BETWEEN s.t - N + 1 AND s.t AND <R filters>)
    ORDER BY s.i

over generated two-source CSV data, compared row for row and in order.
gsqlc reads two CSV files in batches of rows alternately, whatever their
times, so the filter join sees its inputs interleaved far out of time
alignment (and the data has idle-then-busy phases on both sides): the result
must not depend on it.  Heartbeats and bounded memory are checked on pcaps
replayed on the data clock (see tests/test_heartbeats.py).
"""
from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import require  # tests/ is on sys.path under pytest

duckdb = require("duckdb")
pa = pytest.importorskip("pyarrow")

from conftest import REPO, run_gsqlc  # noqa: E402

sys.path.insert(0, str(REPO / "bench"))
import pktgen  # noqa: E402

# S lists a second increasing field (tt) before t: the S time of a filter join
# is the field WHERE relates R.t to, not the first temporal one.
SCHEMA = """
PROTOCOL RP {
    uint   t    get_csv_uint_pos1 (increasing);
    uint   k    get_csv_uint_pos2;
    string tag  get_csv_string_pos3;
    int    v    get_csv_int_pos4;
}
PROTOCOL SP {
    ullong tt   get_csv_ullong_pos1 (increasing);
    uint   t    get_csv_uint_pos2 (increasing);
    uint   k    get_csv_uint_pos3;
    string tag  get_csv_string_pos4;
    int    v    get_csv_int_pos5;
    uint   i    get_csv_uint_pos6 (increasing);
}
"""

N_KEYS = 8
TAGS = "abc"


def generate(seed: int = 7) -> tuple[list[tuple], list[tuple]]:
    """R rows (t, k, tag, v) and S rows (tt, t, k, tag, v, i), in time order.

    t in [0, 400):     S busy, R sparse (S starts before any R)
    t in [400, 800):   R busy, S idle
    t in [800, 1600):  both busy; R repeats rows (same key, same or next t)
    t in [1600, 2000): R idle, S busy
    """
    rnd = random.Random(seed)
    rr: list[tuple] = []
    ss: list[tuple] = []

    def r_rows(t, n):
        for _ in range(n):
            row = (t, rnd.randrange(N_KEYS), rnd.choice(TAGS), rnd.randrange(-50, 100))
            rr.append(row)
            if rnd.random() < 0.3:
                rr.append(row)                                   # a duplicate
            if rnd.random() < 0.2:
                rr.append((t, row[1], row[2], rnd.randrange(-50, 100)))  # same key, same t

    def s_rows(t, n):
        for _ in range(n):
            i = len(ss)
            ss.append((t * 100_000 + i, t, rnd.randrange(N_KEYS), rnd.choice(TAGS),
                       rnd.randrange(-50, 100), i))

    for t in range(2000):
        if t < 400:
            s_rows(t, rnd.randrange(4))
            if t % 37 == 36:
                r_rows(t, 1)
        elif t < 800:
            r_rows(t, rnd.randrange(5))
        elif t < 1600:
            r_rows(t, rnd.randrange(3))
            s_rows(t, rnd.randrange(4))
        else:
            s_rows(t, rnd.randrange(4))
    return rr, ss


def _csv(path: Path, rows) -> Path:
    path.write_text("".join(",".join(map(str, r)) + "\n" for r in rows))
    return path


@dataclass
class Data:
    dir: Path
    schema: Path
    r: Path
    s: Path
    con: object


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("filterjoin")
    rr, ss = generate()
    con = duckdb.connect()
    con.register("R", pa.table({n: [r[j] for r in rr] for j, n in enumerate(["t", "k", "tag", "v"])}))
    con.register("S", pa.table({n: [r[j] for r in ss]
                                for j, n in enumerate(["tt", "t", "k", "tag", "v", "i"])}))
    schema = d / "schema.txt"
    schema.write_text(SCHEMA)
    yield Data(d, schema, _csv(d / "r.csv", rr), _csv(d / "s.csv", ss), con)
    con.close()


# ---------------------------------------------------------------- cases
# id -> (GSQL, DuckDB oracle).  Sources: eth0 = R, eth1 = S.


def oracle(cols: str, n: int, keys: str, r_where: str = "", s_where: str = "") -> str:
    return (f"SELECT {cols} FROM S s WHERE {s_where or 'TRUE'} AND EXISTS (SELECT 1 FROM R r "
            f"WHERE {keys} AND r.t BETWEEN s.t - {n} + 1 AND s.t AND {r_where or 'TRUE'}) "
            "ORDER BY s.i")


CASES = {
    # N = 1: an R tuple passes S tuples of its own time only.
    "n1": ("select S.t, S.k, S.tag, S.v FILTER_JOIN(R.t, 1) from eth0.RP R, eth1.SP S\n"
           "where R.k = S.k and R.t = S.t",
           oracle("s.t, s.k, s.tag, s.v", 1, "r.k = s.k")),
    # Two keys (one a string), filters on both sides, R's key fields selected.
    "n7": ("select S.i, S.t, R.k, R.tag, S.v FILTER_JOIN(R.t, 7) from eth0.RP R, eth1.SP S\n"
           "where R.k = S.k and R.tag = S.tag and R.t = S.t and R.v > 10 and S.v % 2 = 0",
           oracle("s.i, s.t, s.k, s.tag, s.v", 7, "r.k = s.k AND r.tag = s.tag",
                  "r.v > 10", "s.v % 2 = 0")),
    # A band picks S.t (not tt, S's first temporal field); the window is N's.
    "n60": ("select S.i, S.tt FILTER_JOIN(R.t, 60) from eth0.RP R, eth1.SP S\n"
            "where S.k = R.k and R.t <= S.t and R.t >= S.t - 2 and R.v < 0",
            oracle("s.i, s.tt", 60, "r.k = s.k", "r.v < 0")),
}

RUNS = {cid: (cid, ("eth0", "eth1")) for cid in CASES}
# The same query with the sources read in the other order each round.
RUNS["n7_swapped"] = ("n7", ("eth1", "eth0"))


def _run(rid: str, data: Data):
    cid, order = RUNS[rid]
    d = data.dir / rid
    d.mkdir(exist_ok=True)
    q = d / "q.gsql"
    q.write_text(f"DEFINE {{ query_name 'fj_{cid}'; }}\n" + CASES[cid][0] + "\n")
    srcs = {"eth0": f"eth0=csv:{data.r}", "eth1": f"eth1=csv:{data.s}"}
    args = [a for name in order for a in ("--source", srcs[name])]
    p = run_gsqlc("run", str(q), "--schema", str(data.schema), *args, "--format", "jsonl",
                  "--stats")
    p.out = p.stdout.decode("utf-8", "replace")
    p.err = p.stderr.decode("utf-8", "replace")
    return p


@pytest.fixture(scope="module")
def runs(data):
    pool = ThreadPoolExecutor(max_workers=max(2, min(4, os.cpu_count() or 2)))
    futs = {rid: pool.submit(_run, rid, data) for rid in RUNS}
    yield lambda rid: futs[rid].result()
    pool.shutdown(wait=True, cancel_futures=True)


def _rows(p) -> list[tuple]:
    assert p.returncode == 0, f"gsqlc failed ({p.returncode}):\n{p.err}"
    return [tuple(v for _, v in json.loads(line, object_pairs_hook=list))
            for line in p.out.splitlines() if line.strip()]


def _stats(err: str) -> dict:
    return json.loads(err[err.index("\n{") + 1:] if "\n{" in err else err[err.index("{"):])


def _node(stats: dict, name: str) -> dict:
    return next(n for n in stats["nodes"] if n["name"] == name)


def test_data_shape(data):
    """Every case passes some S tuples and filters out others; R has duplicates."""
    c = data.con
    (n_s,), = c.sql("SELECT count(*) FROM S").fetchall()
    for cid, (_, duck) in CASES.items():
        (n,), = c.sql(f"SELECT count(*) FROM ({duck})").fetchall()
        assert 50 <= n <= n_s - 50, (cid, n, n_s)
    (dups,), = c.sql("SELECT count(*) FROM (SELECT t, k, tag FROM R GROUP BY ALL "
                     "HAVING count(*) > 1)").fetchall()
    assert dups > 100


@pytest.mark.parametrize("rid", list(RUNS))
def test_against_duckdb_in_s_order(rid, data, runs):
    cid = RUNS[rid][0]
    want = data.con.sql(CASES[cid][1]).fetchall()
    got = _rows(runs(rid))
    if got != want:
        extra = sorted(set(got) - set(want))[:5]
        missing = sorted(set(want) - set(got))[:5]
        pytest.fail(f"{rid}: gsqlc gave {len(got)} rows, DuckDB {len(want)}; "
                    f"only gsqlc: {extra}; only DuckDB: {missing}")


def test_the_operator_buffered_to_restore_time_order(runs):
    # The S file is read 512 rows at a time while R's times run ahead or
    # behind: tuples were held, and none was dropped as late.
    for rid in RUNS:
        node = _node(_stats(runs(rid).err), f"fj_{RUNS[rid][0]}")
        assert node["late_dropped"] == 0, node
        assert node["peak_held_tuples"] > 100, node


def test_explain_shows_the_filter_join(gsqlc, data):
    q = data.dir / "explain.gsql"
    q.write_text(CASES["n60"][0])
    p = gsqlc("explain", q, "--schema", data.schema)
    assert p.returncode == 0, p.err
    assert "gsq::filter_join_op" in p.out
    assert ("FILTER_JOIN(R.t, 60): passes a tuple of S when a tuple of R with equal keys "
            "had R.t in [S.t - 59, S.t]") in p.out, p.out
    assert "AND R.k = S.k" in p.out
    # R's own condition runs in R's LFTA.
    assert re.search(r"\[LFTA\] _fta_\w+_0_R.*\n(.*\n)*?\s+WHERE\s+\(v < 0\)", p.out), p.out


# ---------------------------------------------------------------- errors

BAD = [
    # (query, fragment the caret points at, rule, message part)
    ("select S.t FILTER_JOIN(R.k, 5) from eth0.RP R, eth1.SP S where R.k = S.k and R.t = S.t",
     "R.k, 5", "filter-join", "is not increasing"),
    ("select S.t FILTER_JOIN(S.t, 5) from eth0.RP R, eth1.SP S where R.k = S.k and R.t = S.t",
     "S.t, 5", "filter-join", "must be a field of the first FROM source 'R'"),
    ("select S.t FILTER_JOIN(R.t, 0) from eth0.RP R, eth1.SP S where R.k = S.k and R.t = S.t",
     "0)", "filter-join", "positive integer literal"),
    ("select S.t FILTER_JOIN(R.t, -3) from eth0.RP R, eth1.SP S where R.k = S.k and R.t = S.t",
     "-3)", "filter-join", "positive integer literal"),
    ("select S.t FILTER_JOIN(R.t, 2.5) from eth0.RP R, eth1.SP S where R.k = S.k and R.t = S.t",
     "2.5)", "filter-join", "positive integer literal"),
    ("select S.t, R.v FILTER_JOIN(R.t, 5) from eth0.RP R, eth1.SP S where R.k = S.k and R.t = S.t",
     "R.v FILTER", "filter-join", "R.v cannot be used in SELECT"),
    ("select R.t FILTER_JOIN(R.t, 5) from eth0.RP R, eth1.SP S where R.k = S.k and R.t = S.t",
     "R.t FILTER", "filter-join", "keeps no tuple of 'R'"),
    ("select S.t FILTER_JOIN(R.t, 5) from eth0.RP R, eth1.SP S where R.t = S.t and R.v > 0",
     "FILTER_JOIN", "filter-join", "at least one equality"),
    ("select S.t FILTER_JOIN(R.t, 5) from eth0.RP R, eth1.SP S where R.k = S.k",
     "FILTER_JOIN", "temporal-join", "must relate its column R.t"),
    ("select S.t FILTER_JOIN(R.t, 5) from eth0.RP R, eth1.SP S where R.k = S.k and R.t = S.v",
     "R.t = S.v", "temporal-join", "increasing temporal field of 'S'"),
    ("select S.t FILTER_JOIN(R.t, 5) from eth0.RP R, eth1.SP S "
     "where R.k = S.k and R.t = S.t and R.v < S.v",
     "R.v < S.v", "filter-join", "not a band"),
    ("select t FILTER_JOIN(t, 5) from eth0.RP", "FILTER_JOIN", "filter-join",
     "needs two FROM sources"),
]


@pytest.mark.parametrize("text,at,rule,needle", BAD, ids=[f"bad{i}" for i in range(len(BAD))])
def test_errors_are_located(gsqlc, tmp_path, text, at, rule, needle):
    q = tmp_path / "q.gsql"
    q.write_text(text + "\n")
    schema = tmp_path / "schema.txt"
    schema.write_text(SCHEMA)
    p = gsqlc("explain", q, "--schema", schema)
    assert p.returncode == 2, p.out
    col = text.index(at) + 1
    assert f"{q}:1:{col}: error [{rule}]" in p.err, p.err
    assert needle in p.err, p.err
    assert "^" in p.err


# ---------------------------------------------------------------- state bounds


def test_keys_leave_the_filter_with_the_window(gsqlc, tmp_path):
    # Every R tuple has its own key; S looks for the key R had 3 units ago.
    # Without purging, the filter would hold all 20000 keys.
    n = 20000
    r = _csv(tmp_path / "r.csv", [(t, t, "x", 0) for t in range(n)])
    s = _csv(tmp_path / "s.csv", [(t * 100_000, t, t - 3 if t >= 3 else 10**9, "x", t % 7, t)
                                  for t in range(n)])
    schema = tmp_path / "schema.txt"
    schema.write_text(SCHEMA)
    q = tmp_path / "q.gsql"
    q.write_text("DEFINE { query_name 'fj'; }\n"
                 "select S.i FILTER_JOIN(R.t, 5) from eth0.RP R, eth1.SP S\n"
                 "where R.k = S.k and R.t = S.t")
    p = gsqlc("run", q, "--schema", schema, "--source", f"eth0=csv:{r}",
              "--source", f"eth1=csv:{s}", "--stats")
    assert p.returncode == 0, p.err
    assert [int(x) for x in p.out.split()] == list(range(3, n))
    peak = _node(_stats(p.err), "fj")["peak_held_tuples"]
    assert peak < 2500, peak


def test_heartbeats_release_s_while_r_is_idle(gsqlc, tmp_path):
    # R (eth0) sends 40 packets in its first 20 s and then nothing until one
    # at 299 s; S (eth1) is busy for 300 s.  S tuples wait until R's time
    # passes theirs: without a skew bound only R's last packet releases
    # them; with --max-skew R's heartbeats follow the data clock and S flows
    # through (seed 000 4.5).
    t0 = 1_700_000_000
    a, a1, a2 = tmp_path / "r.pcap", tmp_path / "r1.pcap", tmp_path / "r2.pcap"
    t1 = pktgen.generate(str(a1), 40, 20, pps=2, seed=31, start=t0, frag=0.0)
    t2 = pktgen.generate(str(a2), 1, 20, pps=2, seed=33, start=t0 + 299, frag=0.0)
    a.write_bytes(a1.read_bytes() + a2.read_bytes()[24:])  # one capture, idle inside
    ta = pa.concat_tables([t1, t2])
    b = tmp_path / "s.pcap"
    tb = pktgen.generate(str(b), 3000, 20, pps=10, seed=32, start=t0, frag=0.0)
    q = tmp_path / "q.gsql"
    q.write_text("DEFINE { query_name 'fj'; }\n"
                 "select S.time, S.srcIP, S.destIP FILTER_JOIN(R.time, 30)\n"
                 "from eth0.IPV4 R, eth1.IPV4 S\n"
                 "where R.srcIP = S.srcIP and R.destIP = S.destIP and R.time = S.time")
    base = ["run", q, "--source", f"eth0=pcap:{a}", "--source", f"eth1=pcap:{b}",
            "--clock", "data", "--stats", "--format", "csv"]
    held = gsqlc(*base)
    assert held.returncode == 0, held.err
    freed = gsqlc(*base, "--max-skew", "eth0=2")
    assert freed.returncode == 0, freed.err
    # The same rows either way, and the expected ones.
    seen: dict[tuple, list[int]] = {}
    for t, s_, d_ in zip(ta["time"].to_pylist(), ta["srcIP"].to_pylist(), ta["destIP"].to_pylist()):
        seen.setdefault((s_, d_), []).append(t)
    want = [(t, s_, d_) for t, s_, d_ in zip(tb["time"].to_pylist(), tb["srcIP"].to_pylist(),
                                             tb["destIP"].to_pylist())
            if any(t - 29 <= rt <= t for rt in seen.get((s_, d_), []))]
    assert 20 <= len(want) < 3000
    for p in (held, freed):
        rows = [l.split(",") for l in p.out.splitlines()[1:]]
        assert [(int(r[0]), r[1], r[2]) for r in rows] == \
            [(t, pktgen.ip_str(s_), pktgen.ip_str(d_)) for t, s_, d_ in want]
    s_held, s_freed = _stats(held.err), _stats(freed.err)
    peak_held = _node(s_held, "fj")["peak_held_tuples"]
    peak_freed = _node(s_freed, "fj")["peak_held_tuples"]
    assert peak_held > 2500, peak_held
    assert peak_freed < 150, peak_freed
    hb = {s["name"]: s["heartbeats"] for s in s_freed["streams"]}
    assert hb["fj"] > 200, hb


# ---------------------------------------------------------------- the operator


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not installed")
@pytest.mark.slow
def test_operator_against_brute_force(tmp_path):
    """tests/hfta/test_filter_join_op.cpp: random inputs, interleavings,
    heartbeats and late tuples against a brute-force semi-join, built with
    ASan/UBSan."""
    src = REPO / "tests" / "hfta" / "test_filter_join_op.cpp"
    exe = tmp_path / "test_filter_join_op"
    cmd = ["g++", "-std=c++17", "-Wall", "-Wextra", "-Werror", "-O1", "-g",
           "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
           f"-I{REPO / 'hfta_templates'}", f"-I{REPO / 'runtime_c' / 'include'}", str(src), "-o", str(exe)]
    built = subprocess.run(cmd, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    ran = subprocess.run([str(exe)], capture_output=True, text=True, timeout=300)
    m = re.search(r"^(\d+) passed, (\d+) failed$", ran.stdout, re.MULTILINE)
    assert m and ran.returncode == 0 and int(m.group(2)) == 0, ran.stdout + ran.stderr
