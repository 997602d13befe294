"""GS-lite's sampling state functions built into gsqlc (issue 12, part 5):
the manual's dynamic subset-sum sampling (smart_sampling_state: ssample,
ssdo_clean, ssclean_with, ssfinal_clean, ssthreshold and GS-lite's reporting
functions) and Manku-Motwani lossy counting (manku_hh_state: local_count,
current_bucket), declared in compiler/gsqlc/data/gsqlc_aggregates.def and
defined in runtime_c/udaf_lib/gsqlc_sampling_hfta.cc -- no --functions, no
--udf.  Each query is checked against a Python simulation of the Tigon SQL
User Manual's algorithm (section 14.1) run through the sampling query's
evaluation process (docs/language.md, "Sampling queries"): exactly where the result
does not depend on the order groups are visited in, statistically (sample
size, estimated sums) where it does; the lossy counting against its
guarantees; and one run under ASan/UBSan."""
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
    uint uts    get_csv_uint_pos5;
}
"""

WINDOW = 20
LENS = [40, 64, 200, 576, 1500]


def make_rows(n=60000, per_second=1000, seed=5):
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        # a few heavy sources among many light ones
        src = rng.randrange(1, 200) if rng.random() < 0.7 else rng.randrange(1, 5)
        rows.append((i // per_second, f"10.0.0.{src}", f"10.1.0.{rng.randrange(1, 20)}",
                     rng.choice(LENS), i % 7))
    return rows


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("gsl_sampling")
    (d / "schema.txt").write_text(SCHEMA)
    rows = make_rows()
    (d / "in.csv").write_text("".join(",".join(map(str, r)) + "\n" for r in rows))
    return d, rows


def run_csv(gsqlc, d, text, tmp_path):
    (tmp_path / "q.gsql").write_text(text)
    p = gsqlc("run", tmp_path / "q.gsql", "--schema", d / "schema.txt",
              "--source", f"csv=csv:{d / 'in.csv'}", "--format", "csv")
    assert p.returncode == 0, p.err
    return [line.split(",") for line in p.out.splitlines()[1:]]


def dss_query(n):
    return (f"SELECT tb, srcIP, destIP, uts, sum(len) AS s, UMAX(sum(len), ssthreshold()) AS est\n"
            f"FROM [csv].PKTS\n"
            f"WHERE ssample(len, {n}) = TRUE\n"
            f"GROUP BY time/{WINDOW} as tb, srcIP, destIP, uts\n"
            f"HAVING ssfinal_clean(sum(len)) = TRUE\n"
            f"CLEANING_WHEN ssdo_clean() = TRUE\n"
            f"CLEANING_BY ssclean_with(sum(len)) = TRUE\n")


# ---------------------------------------------------------------- reference

class SS:
    """The manual's SSstate and its functions (section 14.1.2)."""

    def __init__(self, old=None, n_old=0):
        self.count = self.gcount = self.fcount = 0.0
        self.z_prev = 0.0
        self.bcount = 0
        self.final_z = False
        if old is None:       # clean init
            self.z, self.gamma, self.do_clean, self.s_size = 200.0, 2.0, False, 0
        else:                 # dirty init: z aimed at N from the old window's groups
            self.z = old.retarget(n_old)
            self.gamma, self.do_clean, self.s_size = old.gamma, old.do_clean, old.s_size

    def retarget(self, n):
        z = self.z
        if n < self.s_size:
            z *= max(n - self.bcount, 1) / (self.s_size - self.bcount)
        else:
            z *= n / self.s_size
        return max(z, 1.0)

    def ssample(self, length, size):
        self.s_size = size
        if self.do_clean:
            self.gcount, self.do_clean = 0.0, False
        if length > self.z:
            self.bcount += 1
            return True
        self.count += length
        if self.count >= self.z:
            self.count -= self.z
            return True
        return False

    def ssdo_clean(self, n):
        if n > self.gamma * self.s_size:
            self.do_clean = True
            self.z_prev, self.z = self.z, self.gamma * self.z
            self.bcount, self.count, self.gcount = 0, 0.0, 0.0
        return self.do_clean

    def _keep(self, glen, acc):
        x = max(glen, self.z_prev)
        if x > self.z:
            self.bcount += 1
            return True, acc
        acc += x
        if acc >= self.z:
            return True, acc - self.z
        return False, acc

    def ssclean_with(self, glen):
        keep, self.gcount = self._keep(glen, self.gcount)
        return keep

    def final_init(self, n):
        if not self.final_z:
            self.z_prev = self.z
            self.z = self.retarget(n)
            self.bcount, self.final_z = 0, True
            # ssthreshold() now: the threshold the final sample is drawn at
            self.z_sampled = self.z_prev if n <= self.s_size else self.z

    def ssfinal_clean(self, n, glen):
        self.do_clean = True
        if n <= self.s_size:
            return True
        keep, self.fcount = self._keep(glen, self.fcount)
        return keep


def simulate_dss(rows, n_wanted):
    """The query's output, the sampling query's process tuple by tuple (one
    supergroup per window; groups visited in insertion order)."""
    out, state, groups, cur = [], None, {}, None

    def end():
        # HAVING cleans as CLEANING_BY does: the groups it rejects leave, and the
        # next window's dirty init is told how many stayed
        n = len(groups)
        state.final_init(n)
        for k, s in list(groups.items()):
            if state.ssfinal_clean(n, s):
                out.append((*k, s, min(max(s, int(state.z_sampled)), 2**32 - 1)))
            else:
                del groups[k]

    for t, src, dst, ln, uts in rows:
        tb = t // WINDOW
        if tb != cur:
            if cur is not None:
                end()
                state = SS(state, len(groups))
            else:
                state = SS()
            groups, cur = {}, tb
        if not state.ssample(ln, n_wanted):
            continue
        k = (tb, src, dst, uts)
        groups[k] = groups.get(k, 0) + ln
        if state.ssdo_clean(len(groups)):
            for g in list(groups):
                if not state.ssclean_with(groups[g]):
                    del groups[g]
    end()
    return out


def heavy_or_light(src):
    return "heavy" if src in ("10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4") else "light"


def parse(got):
    return sorted((int(r[0]), r[1], r[2], int(r[3]), int(r[4]), int(r[5])) for r in got)


# --------------------------------------------------------------------- tests

def test_dss_without_cleaning_is_exact(files, gsqlc, tmp_path):
    """N beyond the number of groups: no cleaning, no final subsampling, so
    every group ssample admits is output with its sampled sum and the
    threshold the manual's final init gives -- independent of visiting
    order, equal to the simulation exactly, window after window (dirty inits
    carrying the threshold on)."""
    d, rows = files
    got = parse(run_csv(gsqlc, d, dss_query(100000), tmp_path))
    want = sorted(simulate_dss(rows, 100000))
    assert len(want) > 1000
    assert got == want


def test_dss_sample_size_and_estimates(files, gsqlc, tmp_path):
    """The manual's query with N = 100: each window's sample is near N (as
    the simulation's), and the estimates track the true sums -- a window's
    total and the heavy sources' totals."""
    d, rows = files
    n = 100
    got = parse(run_csv(gsqlc, d, dss_query(n), tmp_path))
    sim = simulate_dss(rows, n)
    sizes, sim_sizes = defaultdict(int), defaultdict(int)
    est, sim_est = defaultdict(int), defaultdict(int)
    for r in got:
        sizes[r[0]] += 1
        est[(r[0], heavy_or_light(r[1]))] += r[5]
        est[r[0]] += r[5]
    for r in sim:
        sim_sizes[r[0]] += 1
        sim_est[r[0]] += r[5]
    true = defaultdict(int)
    for t, src, _dst, ln, _uts in rows:
        true[t // WINDOW] += ln
        true[(t // WINDOW, heavy_or_light(src))] += ln
    windows = sorted(sizes)
    assert windows == sorted(sim_sizes) == list(range(len(rows) // 1000 // WINDOW))
    for w in windows:
        # never more than the final pass allows, and not far below N
        assert n // 3 <= sizes[w] <= 2 * n, (w, sizes[w])
        assert abs(sizes[w] - sim_sizes[w]) <= max(15, sim_sizes[w] // 4), \
            (w, sizes[w], sim_sizes[w])
        # the subset-sum estimate of the window's bytes
        assert abs(est[w] - true[w]) <= 0.15 * true[w], (w, est[w], true[w])
        assert abs(sim_est[w] - true[w]) <= 0.15 * true[w], (w, sim_est[w], true[w])
        # the heavy sources together (about 30% of the bytes, some 30 of the
        # sampled groups) and the light ones
        for part in ("heavy", "light"):
            e, tr = est[(w, part)], true[(w, part)]
            assert abs(e - tr) <= 0.4 * tr, (w, part, e, tr)


def test_dss_reporting_functions(files, gsqlc, tmp_path):
    """GS-lite's reporting functions over the same state, in SELECT: the
    window's ssample calls (packet_count), gamma, the threshold it began
    with (init_threshold), and the flow-sampling counters (0)."""
    d, rows = files
    got = run_csv(gsqlc, d, (
        "SELECT tb, count(*) AS n, packet_count() AS pc, gamma() AS g, init_threshold() AS z0,\n"
        "       do_clean_count() AS dc, delay() AS dl, newly_closed() AS nc\n"
        "FROM [csv].PKTS WHERE ssample(len, 100000) = TRUE\n"
        f"GROUP BY time/{WINDOW} AS tb\n"), tmp_path)
    per_window = defaultdict(int)
    for t, *_ in rows:
        per_window[t // WINDOW] += 1
    # no cleaning: the only adjustment is the final one; the first window
    # starts at the manual's z = 200
    assert [(int(r[0]), int(r[2]), float(r[3]), int(r[5]), int(r[6]), int(r[7])) for r in got] == \
        [(w, c, 2.0, 1, 0, 0) for w, c in sorted(per_window.items())]
    assert int(got[0][4]) == 200
    # a later window starts from the previous one's threshold, scaled by the
    # manual's dirty init from its one group
    st = SS()
    for t, _s, _d, ln, _u in rows:
        if t // WINDOW == 0:
            st.ssample(ln, 100000)
    st.final_init(1)
    assert int(got[1][4]) == int(SS(st, 1).z)


# --------------------------------------------------------- lossy counting

HH_BUCKET = 50


def hh_query(w):
    return ("SELECT tb, srcIP, count(*) AS n, min(current_bucket()) AS b0\n"
            f"FROM [csv].PKTS GROUP BY time/{WINDOW} AS tb, srcIP\n"
            f"CLEANING_WHEN local_count({w}) = TRUE\n"
            "CLEANING_BY count(*) + min(current_bucket()) > current_bucket()\n")


def lossy_counting(rows, w):
    """Manku and Motwani's lossy counting per window: entries (f, delta);
    at the end of each bucket b the entries with f + delta <= b go."""
    out, cur, entries, seen = [], None, {}, 0
    for t, src, *_ in rows:
        tb = t // WINDOW
        if tb != cur:
            out += [(cur, s, f, dl + 1) for s, (f, dl) in entries.items()]
            cur, entries, seen = tb, {}, 0
        seen += 1
        bucket = (seen - 1) // w + 1
        f, dl = entries.get(src, (0, bucket - 1))
        entries[src] = (f + 1, dl)
        if seen % w == 0:
            entries = {s: e for s, e in entries.items() if e[0] + e[1] > bucket}
    out += [(cur, s, f, dl + 1) for s, (f, dl) in entries.items()]
    return sorted(out)


def test_lossy_counting_heavy_hitters(files, gsqlc, tmp_path):
    """local_count(w) in CLEANING_WHEN and current_bucket() in the group's
    aggregate and CLEANING_BY: the output equals lossy counting's entries
    (the deletion of an entry depends on it alone, not on the order the
    groups are visited in), and so keeps its guarantees -- every source
    over 1/w of a window's tuples is there, its count under by at most
    the window's tuples / w."""
    d, rows = files
    got = sorted((int(r[0]), r[1], int(r[2]), int(r[3]))
                 for r in run_csv(gsqlc, d, hh_query(HH_BUCKET), tmp_path))
    want = lossy_counting(rows, HH_BUCKET)
    assert got == want
    true = defaultdict(int)
    for t, src, *_ in rows:
        true[(t // WINDOW, src)] += 1
    n_window = 1000 * WINDOW
    kept = {(tb, s): n for tb, s, n, _ in got}
    for (tb, s), c in true.items():
        if c > n_window / HH_BUCKET:
            assert (tb, s) in kept
            assert c - n_window / HH_BUCKET <= kept[(tb, s)] <= c
    assert len(kept) < len(true) / 3


@pytest.mark.slow
def test_sanitized_smart_sampling(files, tmp_path):
    d, _ = files
    (tmp_path / "q.gsql").write_text("DEFINE { query_name 'dss'; }\n" + dss_query(50))
    runner = build_sanitized([tmp_path / "q.gsql", "--schema", d / "schema.txt"],
                             tmp_path / "build")
    r = run_sanitized(runner, "--source", f"csv=csv:{d / 'in.csv'}", "--output", "dss")
    assert r.returncode == 0, r.stderr[-3000:]
    assert len(r.stdout.strip().splitlines()) > 50
