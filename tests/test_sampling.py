"""Sampling queries (issue 12, part 2; Tigon SQL User Manual 6.2.13):
SUPERGROUP, super-aggregates f$(...), CLEANING_WHEN / CLEANING_BY and
stateful functions with a state per supergroup (clean, dirty and final
inits).  Each is checked against a reference that follows the manual's
evaluation process tuple by tuple."""
from __future__ import annotations

import random
from collections import defaultdict

import pytest

from conftest import build_sanitized, run_sanitized

SCHEMA = """
PROTOCOL PKTS {
    uint time   get_csv_uint_pos1 (increasing, required);
    IP   srcIP  get_csv_ip_pos2;
    IP   destIP get_csv_ip_pos3;
    uint len    get_csv_uint_pos4;
}
"""

# a sample of at most `cap` flows per supergroup: over capacity, the
# threshold doubles and the flows below it go; a new window starts from the
# previous one's threshold, halved (dirty init)
THR_DEFS = """\
fstring12 STATE thr_state;
BOOL SFUN admit thr_state (UINT);
BOOL SFUN over_capacity thr_state (UINT);
BOOL SFUN keep thr_state (ULLONG);
UINT SFUN threshold thr_state ();
"""

THR_SOURCE = r"""
#include "hfta_udaf.h"
struct thr { gs_uint32_t threshold; gs_uint32_t finals; gs_uint32_t seen; };
void _sfun_state_clean_init_thr_state(void *s) {
    thr *t = (thr *)s; t->threshold = 1; t->finals = 0; t->seen = 0;
}
void _sfun_state_dirty_init_thr_state(void *s, void *old, int n) {
    (void)n;
    thr *t = (thr *)s, *o = (thr *)old;
    t->threshold = o->threshold / 2 > 1 ? o->threshold / 2 : 1;
    t->finals = 0;
    t->seen = 0;
}
// WHERE: every other tuple of the supergroup's window
gs_uint32_t admit(void *s, int n, gs_uint32_t len) { (void)n; (void)len; return ++((thr *)s)->seen % 2; }
void _sfun_state_final_init_thr_state(void *s, int n) { (void)n; ((thr *)s)->finals++; }
void _sfun_state_destroy_thr_state(void *s) { (void)s; }
gs_uint32_t over_capacity(void *s, int n, gs_uint32_t cap) {
    thr *t = (thr *)s;
    if ((gs_uint32_t)n <= cap) return 0;
    if (t->threshold < 1024) t->threshold *= 2;
    return 1;
}
gs_uint32_t keep(void *s, int n, gs_uint64_t count) { (void)n; return count >= ((thr *)s)->threshold; }
gs_uint32_t threshold(void *s, int n) { (void)n; return ((thr *)s)->threshold * 10 + ((thr *)s)->finals; }
"""


def make_rows(seed=11, n=3000):
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        # a few heavy sources among many light ones
        src = rng.choice([1, 2, 3]) if rng.random() < 0.4 else rng.randrange(4, 60)
        rows.append((i // 150, f"10.0.0.{src}", f"10.1.0.{rng.randrange(1, 4)}",
                     rng.choice([40, 60, 200, 1500])))
    return rows


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("sampling")
    (d / "schema.txt").write_text(SCHEMA)
    (d / "thr.def").write_text(THR_DEFS)
    (d / "thr.cc").write_text(THR_SOURCE)
    rows = make_rows()
    (d / "in.csv").write_text("".join(f"{t},{s},{dst},{ln}\n" for t, s, dst, ln in rows))
    return d, rows


def run_csv(gsqlc, d, text, tmp_path, *more):
    (tmp_path / "q.gsql").write_text(text)
    p = gsqlc("run", tmp_path / "q.gsql", "--schema", d / "schema.txt", *more,
              "--source", f"csv=csv:{d / 'in.csv'}", "--format", "csv")
    assert p.returncode == 0, p.err
    return [line.split(",") for line in p.out.splitlines()[1:]]


def test_supergroups_and_super_aggregates(files, gsqlc, tmp_path):
    """At the window's end HAVING cleans as CLEANING_BY does (Tigon's final
    clean): a group it removes takes its tuples out of count$ and sum$ and
    itself out of count_distinct$(); min$ and max$ keep every tuple's value."""
    d, rows = files
    got = run_csv(gsqlc, d, (
        "SELECT tb, destIP, srcIP, count(*) AS n, count_distinct$() AS flows,\n"
        "       count$(*) AS pkts, sum$(len) AS bytes, min$(len) AS lo, max$(len) AS hi\n"
        "FROM [csv].PKTS GROUP BY time/5 AS tb, destIP, srcIP\n"
        "SUPERGROUP destIP HAVING count(*) > 1\n"), tmp_path)
    groups = defaultdict(list)
    sgs = defaultdict(list)
    for t, s, dst, ln in rows:
        groups[(t // 5, dst, s)].append(ln)
        sgs[(t // 5, dst)].append(ln)
    kept = {k: lens for k, lens in groups.items() if len(lens) > 1}
    flows = defaultdict(int)
    pkts = defaultdict(int)
    octets = defaultdict(int)
    for (tb, dst, _s), lens in kept.items():
        flows[(tb, dst)] += 1
        pkts[(tb, dst)] += len(lens)
        octets[(tb, dst)] += sum(lens)
    want = sorted((tb, dst, s, len(lens), flows[(tb, dst)], pkts[(tb, dst)],
                   octets[(tb, dst)], min(sgs[(tb, dst)]), max(sgs[(tb, dst)]))
                  for (tb, dst, s), lens in kept.items())
    assert any(len(lens) == 1 for lens in groups.values())   # HAVING removes some
    assert sorted((int(r[0]), r[1], r[2], *map(int, r[3:])) for r in got) == want


def test_cleaning_without_stateful_functions(files, gsqlc, tmp_path):
    """CLEANING_WHEN over a super-aggregate, CLEANING_BY over the group's
    aggregate: at most 8 flows per destination, the lightest cleaned out."""
    d, rows = files
    got = run_csv(gsqlc, d, (
        "SELECT tb, destIP, srcIP, count(*) AS n FROM [csv].PKTS\n"
        "GROUP BY time/5 AS tb, destIP, srcIP SUPERGROUP destIP\n"
        "CLEANING_WHEN count_distinct$() > 8\n"
        "CLEANING_BY count(*) > 2\n"), tmp_path)
    windows = defaultdict(dict)     # (tb, dst) -> {src: count}, insertion-ordered
    for t, s, dst, _ in rows:
        g = windows[(t // 5, dst)]
        g[s] = g.get(s, 0) + 1
        if len(g) > 8:
            for k in [k for k, c in g.items() if not c > 2]:
                del g[k]
    want = sorted((tb, dst, s, c) for (tb, dst), g in windows.items() for s, c in g.items())
    assert sorted((int(r[0]), r[1], r[2], int(r[3])) for r in got) == want


def test_stateful_functions_per_supergroup(files, gsqlc, tmp_path):
    """States per supergroup: clean init, CLEANING_WHEN/BY through the
    state, final init before a window's output, dirty init from the same
    supergroup of the previous window."""
    d, rows = files
    got = run_csv(gsqlc, d, (
        "SELECT tb, destIP, srcIP, count(*) AS n, threshold() AS thr, count_distinct$() AS kept\n"
        "FROM [csv].PKTS GROUP BY time/5 AS tb, destIP, srcIP SUPERGROUP destIP\n"
        "CLEANING_WHEN over_capacity(6) = TRUE\n"
        "CLEANING_BY keep(count(*)) = TRUE\n"),
        tmp_path, "--functions", d / "thr.def", "--udf", d / "thr.cc")
    state: dict = {}        # dst -> threshold (the previous window's)
    out = []
    by_window = defaultdict(list)
    for t, s, dst, _ in rows:
        by_window[t // 5].append((s, dst))
    for tb in sorted(by_window):
        prev, state = state, {}
        groups: dict = defaultdict(dict)
        for s, dst in by_window[tb]:
            if dst not in state:
                state[dst] = max(prev[dst] // 2, 1) if dst in prev else 1
            g = groups[dst]
            g[s] = g.get(s, 0) + 1
            if len(g) > 6:                       # over_capacity(6), told len(g)
                if state[dst] < 1024:
                    state[dst] *= 2
                for k in [k for k, c in g.items() if not c >= state[dst]]:
                    del g[k]
        for dst, g in groups.items():
            for s, c in g.items():
                out.append((tb, dst, s, c, state[dst] * 10 + 1, len(g)))
    assert sorted((int(r[0]), r[1], r[2], *map(int, r[3:])) for r in got) == sorted(out)


def test_stateful_function_in_where(files, gsqlc, tmp_path):
    """WHERE admit(len) = TRUE: the tuple's supergroup state decides before
    the tuple is counted (the manual's ssample(len, 100) = TRUE)."""
    d, rows = files
    got = run_csv(gsqlc, d, (
        "SELECT tb, destIP, count(*) AS n, count$(*) AS admitted FROM [csv].PKTS\n"
        "WHERE admit(len) = TRUE GROUP BY time/5 AS tb, destIP SUPERGROUP destIP\n"),
        tmp_path, "--functions", d / "thr.def", "--udf", d / "thr.cc")
    seen: dict = defaultdict(int)
    counts: dict = defaultdict(int)
    for t, _, dst, _ in rows:
        seen[(t // 5, dst)] += 1
        if seen[(t // 5, dst)] % 2:
            counts[(t // 5, dst)] += 1
    want = sorted((tb, dst, n, n) for (tb, dst), n in counts.items())
    assert sorted((int(r[0]), r[1], int(r[2]), int(r[3])) for r in got) == want


def test_explain_and_errors(files, gsqlc, tmp_path):
    d, _ = files
    (tmp_path / "q.gsql").write_text(
        "SELECT tb, destIP, count(*) AS n, sum$(len) AS b FROM [csv].PKTS\n"
        "GROUP BY time/5 AS tb, destIP SUPERGROUP destIP\n")
    p = gsqlc("explain", tmp_path / "q.gsql", "--schema", d / "schema.txt")
    assert p.returncode == 0, p.err
    assert "gsq::sampling_op" in p.out and "SUPERGROUP destIP" in p.out
    assert "SUPER-AGGREGATES sum$(len)" in p.out
    cases = [
        ("SELECT tb, count(*) AS n FROM [csv].PKTS GROUP BY time/5 AS tb SUPERGROUP nope\n",
         "sampling", "SUPERGROUP variable 'nope' is not a GROUP BY variable"),
        ("SELECT tb, count(*) AS n FROM [csv].PKTS GROUP BY time/5 AS tb SUPERGROUP tb\n",
         "sampling", "is temporal"),
        ("SELECT tb, count(*) AS n FROM [csv].PKTS GROUP BY time/5 AS tb\n"
         "CLEANING_WHEN count(*) > 2\n", "sampling", "CLEANING_WHEN and CLEANING_BY go together"),
        ("SELECT tb, median$(len) AS m FROM [csv].PKTS GROUP BY time/5 AS tb\n",
         "unknown-function", "unknown super-aggregate median$"),
        ("SELECT time FROM [csv].PKTS WHERE sum$(len) > 3\n",
         "aggregate-not-allowed", "super-aggregate sum$() is not allowed in WHERE"),
    ]
    for text, rule, needle in cases:
        (tmp_path / "e.gsql").write_text(text)
        p = gsqlc("explain", tmp_path / "e.gsql", "--schema", d / "schema.txt")
        assert p.returncode != 0, text
        assert f"error [{rule}]" in p.err and needle in p.err, (text, p.err)
        assert p.err.startswith(f"{tmp_path / 'e.gsql'}:"), p.err


@pytest.mark.slow
def test_sanitized_sampling_query(files, tmp_path):
    d, _ = files
    (tmp_path / "q.gsql").write_text(
        "DEFINE { query_name 'hh'; }\n"
        "SELECT tb, destIP, srcIP, count(*) AS n, threshold() AS thr FROM [csv].PKTS\n"
        "GROUP BY time/5 AS tb, destIP, srcIP SUPERGROUP destIP\n"
        "CLEANING_WHEN over_capacity(6) = TRUE CLEANING_BY keep(count(*)) = TRUE\n")
    runner = build_sanitized([tmp_path / "q.gsql", "--schema", d / "schema.txt", "--functions",
                             d / "thr.def", "--udf", d / "thr.cc"], tmp_path / "build")
    r = run_sanitized(runner, "--source", f"csv=csv:{d / 'in.csv'}", "--output", "hh")
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip()
