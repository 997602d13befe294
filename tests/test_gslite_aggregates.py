"""GS-lite's aggregates built into gsqlc (issue 12, part 5): FIRST, LAST,
count_diff, CAT_aggr(_diff), POSAVG, avg_udaf/extr_avg, moving_sum(_exp),
run_sum_max (running_sum, running_sum_max), quantile_of/median_of,
(running_)approx_count_distinct, running_array_aggr and time_avg, declared
in compiler/gsqlc/data/gsqlc_aggregates.def with GS-lite's names and types
and defined in runtime_c/udaf_lib/: a query calls them with no --functions
and no --udf.  Each is checked through the CLI or the Python API against a
Python reference written from its documented meaning, split into LFTA and
HFTA parts as the def says (explain shows them), RUNNING ones inside
CLOSING_WHEN queries, the sketches against their error bounds, and one run
under ASan/UBSan."""
from __future__ import annotations

import math
import os
import random
import subprocess
from collections import defaultdict

import pytest

import gsqlc
import gsqlc as gs_api  # where the `gsqlc` fixture (the CLI) takes the name
from conftest import SANITIZED_RUN_ENV, build_sanitized, run_sanitized, shared_dir

SCHEMA = """
PROTOCOL R {
    uint   t  get_csv_uint_pos1 (increasing, required);
    uint   k  get_csv_uint_pos2;
    uint   v  get_csv_uint_pos3;
    int    i  get_csv_int_pos4;
    ullong u  get_csv_ullong_pos5;
    llong  l  get_csv_llong_pos6;
    IP     ip get_csv_ip_pos7;
    float  x  get_csv_float_pos8;
    string s  get_csv_string_pos9;
    llong  ms get_csv_llong_pos10;
}
"""

WORDS = ["a", "bb", "ccc", "bb", "dddd", ""]
IPS = ["10.0.0.1", "10.0.0.2", "192.168.1.7", "255.255.255.255"]
UINT_MAX = 2**32 - 1


def make_rows(n=4000, seed=5):
    rng = random.Random(seed)
    rows, t, j = [], 0, 0
    for _ in range(n):
        step = rng.choice([0] * 30 + [1, 1, 2])   # an epoch the input skips now and then
        if step:
            t, j = t + step, 0
        j += 1
        rows.append(dict(
            t=t, k=rng.randrange(4),
            v=rng.choice([0, 1, 2, 3, 4, 4, UINT_MAX]), i=rng.randrange(-5, 6),
            u=rng.choice([0, 7, 2**63 + 5, 2**64 - 1, rng.randrange(2**64)]),
            l=rng.choice([-(2**63), -3, 0, 9, 2**63 - 1, rng.randrange(-2**40, 2**40)]),
            ip=rng.choice(IPS), x=rng.choice([-1.0, 0.5, 2.0, 7.25]), s=rng.choice(WORDS),
            ms=t * 1000 + min(999, j * 20 + rng.randrange(20))))
    return rows


COLS = ["t", "k", "v", "i", "u", "l", "ip", "x", "s", "ms"]


def write_csv(path, rows):
    path.write_text("".join(",".join(str(r[c]) for c in COLS) + "\n" for r in rows))


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("gslite_aggs")
    (d / "schema.txt").write_text(SCHEMA)
    rows = make_rows()
    write_csv(d / "in.csv", rows)
    return d, rows


def q_rank(vals, phi):
    """The documented quantile: the value of rank ceil(phi * n)."""
    s = sorted(vals)
    phi = min(1.0, max(0.0, phi))
    return s[min(len(s) - 1, max(1, math.ceil(phi * len(s))) - 1)]


def runs(vals):
    """count_diff: 1 + the number of changes between consecutive values."""
    return sum(1 for a, b in zip([object()] + vals, vals) if a != b)


# ---------------------------------------------------------------- split aggregates

SPLIT = """\
DEFINE {{ query_name '{name}'; {define} }}
SELECT {key} FIRST(v) AS fv, LAST(v) AS lv, FIRST(i) AS fi, LAST(i) AS li,
       FIRST(u) AS fu, LAST(u) AS lu, FIRST(l) AS fl, LAST(l) AS ll,
       FIRST(ip) AS fip, LAST(ip) AS lip,
       count_diff(v) AS cdv, count_diff(i) AS cdi, count_diff(u) AS cdu, count_diff(l) AS cdl,
       extr_avg(v) AS av, median_of(v) AS mv, quantile_of(i, 0.25) AS qi,
       quantile_of(u, 0.9) AS qu, quantile_of(l, 0.1) AS ql, median_of(x) AS mx,
       quantile_of(v, 1.5) AS qmax, count(*) AS n
FROM [csv].R GROUP BY {group}
"""


def split_reference(rows, key):
    groups = defaultdict(list)
    for r in rows:
        groups[key(r)].append(r)
    out = {}
    for g, rs in groups.items():
        col = {c: [r[c] for r in rs] for c in COLS}
        out[g] = dict(
            fv=col["v"][0], lv=col["v"][-1], fi=col["i"][0], li=col["i"][-1],
            fu=col["u"][0], lu=col["u"][-1], fl=col["l"][0], ll=col["l"][-1],
            fip=col["ip"][0], lip=col["ip"][-1],
            cdv=runs(col["v"]), cdi=runs(col["i"]), cdu=runs(col["u"]), cdl=runs(col["l"]),
            av=sum(col["v"]) / len(rs), mv=q_rank(col["v"], 0.5), qi=q_rank(col["i"], 0.25),
            qu=q_rank(col["u"], 0.9), ql=q_rank(col["l"], 0.1), mx=q_rank(col["x"], 0.5),
            qmax=max(col["v"]), n=len(rs))
    return out


@pytest.fixture(scope="module")
def split_set(data):
    d, rows = data
    files = []
    for name, key, group, define in [
            ("by_epoch", "tb, k,", "t/5 AS tb, k", ""),
            # a two-slot LFTA table: collisions send groups on in pieces
            ("small_table", "tb, k,", "t/5 AS tb, k", "lfta_table_size '2';"),
            # whole-stream groups: over 520 values, a quantile's LFTA buffer fills
            ("whole", "tb, k,", "t/100000 AS tb, k", "")]:
        f = d / f"{name}.gsql"
        f.write_text(SPLIT.format(name=name, key=key, group=group, define=define))
        files.append(f)
    qs = gsqlc.compile(files, schema=d / "schema.txt")
    return d, rows, qs


def _check_split(got_rows, want, key_cols):
    assert len(got_rows) == len(want) > 3
    for r in got_rows:
        w = want[tuple(r[c] for c in key_cols)]
        for c, x in w.items():
            if isinstance(x, float):
                assert r[c] == pytest.approx(x), (c, r, w)
            else:
                assert r[c] == x, (c, r, w)


def test_split_aggregates_through_the_api(split_set):
    d, rows, qs = split_set
    src = {"csv": f"csv:{d / 'in.csv'}"}
    by_epoch = split_reference(rows, lambda r: (r["t"] // 5, r["k"]))
    for name in ("by_epoch", "small_table"):
        got = qs.table(src, output=name).to_pylist()
        _check_split(got, by_epoch, ["tb", "k"])
    whole = split_reference(rows, lambda r: (0, r["k"]))
    assert min(w["n"] for w in whole.values()) > 520
    _check_split(qs.table(src, output="whole").to_pylist(), whole, ["tb", "k"])


def test_explain_shows_the_lfta_and_hfta_parts(split_set):
    _, _, qs = split_set
    text = qs.explain()
    lfta = text.split("[LFTA] _fta_by_epoch")[1].split("[HFTA]")[0]
    hfta = text.split("[HFTA] by_epoch")[1].split("[LFTA]")[0]
    assert "sub-aggregate" in lfta
    for sub in ("FIRST_lfta(v)", "LAST_INT_lfta(i)", "FIRST_ULL_lfta(u)", "LAST_LL_lfta(l)",
                "count_diff_lfta_ui(v)", "avg_udaf_lfta(v)", "quant_ui_udaf_lfta3(v)",
                "quant_f_udaf_lfta3(x)"):
        assert sub in lfta, (sub, lfta)
    assert "super-aggregate of the LFTA partials" in hfta
    assert "extr_quant_ui_hftaZ_fcn(" in hfta and "extr_avg_fcn(" in hfta, hfta


def test_split_aggregates_through_the_cli(data, split_set, gsqlc, tmp_path):
    d, rows, _ = split_set
    p = gsqlc("run", d / "by_epoch.gsql", "--schema", d / "schema.txt",
              "--source", f"csv=csv:{d / 'in.csv'}", "--format", "csv")
    assert p.returncode == 0, p.err
    header, *lines = p.out.splitlines()
    names = header.split(",")
    want = split_reference(rows, lambda r: (r["t"] // 5, r["k"]))
    got = []
    for line in lines:
        r = dict(zip(names, line.split(",")))
        got.append({c: (x if c in ("fip", "lip") else float(x) if c in ("av", "mx") else int(x))
                    for c, x in r.items()})
    _check_split(got, want, ["tb", "k"])


# ---------------------------------------------------------------- HFTA-only and strings

STRINGS = """\
DEFINE { query_name 'strs'; }
SELECT tb, k, FIRST(s) AS fs, LAST(s) AS ls, count_diff(s) AS cds,
       CAT_aggr('|', s) AS cat, CAT_aggr_diff(s) AS catd, POSAVG(x) AS pa,
       approx_count_distinct(s) AS acd, count(*) AS n
FROM [csv].R GROUP BY t/5 AS tb, k
"""


def test_string_and_hfta_only_aggregates(data, gsqlc, tmp_path):
    d, rows = data
    (tmp_path / "s.gsql").write_text(STRINGS)
    ex = gsqlc("explain", tmp_path / "s.gsql", "--schema", d / "schema.txt")
    assert ex.returncode == 0, ex.err
    assert "a user-defined aggregate runs in the HFTA" in ex.out, ex.out
    t = gs_api.compile([tmp_path / "s.gsql"], schema=d / "schema.txt").table(
        {"csv": f"csv:{d / 'in.csv'}"})
    groups = defaultdict(list)
    for r in rows:
        groups[(r["t"] // 5, r["k"])].append(r)
    got = t.to_pylist()
    assert len(got) == len(groups)
    for g in got:
        rs = groups[(g["tb"], g["k"])]
        ss = [r["s"] for r in rs]
        diff = [s for j, s in enumerate(ss) if j == 0 or s != ss[j - 1]]
        pos = [r["x"] for r in rs if r["x"] >= 0]
        assert (g["fs"], g["ls"], g["cds"], g["cat"], g["catd"], g["n"]) == \
            (ss[0], ss[-1], runs(ss), "|".join(ss), ",".join(diff), len(rs)), g
        assert g["pa"] == pytest.approx(sum(pos) / len(pos) if pos else -1.0)
        # few distinct values: linear counting is all but exact
        assert g["acd"] == pytest.approx(len(set(ss)), rel=0.05, abs=0.5)


def test_approx_count_distinct_error_bound(tmp_path):
    """HyperLogLog in 1000 one-byte registers: relative standard error
    1.04/sqrt(1000) = 3.3%; every estimate here within 4 standard errors,
    their mean error within 1.5 of them."""
    rng = random.Random(9)
    sizes = [10, 100, 1000, 3000, 10000, 40000, 120000]
    lines = []
    for g, n in enumerate(sizes):
        vals = [f"item-{g}-{rng.getrandbits(48):x}" for _ in range(n)]
        for v in vals + rng.choices(vals, k=n // 2):     # repeats count once
            lines.append(f"{g},{v}\n")
    (tmp_path / "in.csv").write_text("".join(lines))
    (tmp_path / "schema.txt").write_text(
        "PROTOCOL D { uint g get_csv_uint_pos1 (increasing); string s get_csv_string_pos2; }\n")
    (tmp_path / "q.gsql").write_text(
        "DEFINE { query_name 'acd'; }\n"
        "SELECT g, approx_count_distinct(s) AS est, count(*) AS n FROM [csv].D GROUP BY g\n")
    t = gsqlc.compile([tmp_path / "q.gsql"], schema=tmp_path / "schema.txt").table(
        {"csv": f"csv:{tmp_path / 'in.csv'}"})
    se = 1.04 / math.sqrt(1000)
    errs = []
    for r in t.to_pylist():
        true = len({line.split(",", 1)[1] for line in lines if line.startswith(f"{r['g']},")})
        err = abs(r["est"] - true) / true
        errs.append(err)
        assert err < 4 * se, (r, true)
    assert sum(errs) / len(errs) < 1.5 * se, errs


def test_approx_count_distinct_of_integers_splits(tmp_path):
    """Over integers and IP addresses approx_count_distinct splits: each LFTA
    group keeps a sketch, and a table of 16 slots ejects groups often, so the
    HFTA merges several partial sketches a group.  A value's hash is its
    64-bit value's (an IP and a ullong column of the same numbers estimate
    alike, negative ints are values of their own); every estimate within 4
    standard errors of the true count; running_ keeps its sketch across
    epochs."""
    rng = random.Random(11)
    lines, truth = [], defaultdict(set)
    for t in range(2):                       # two epochs
        for step in range(6000):
            g = rng.randrange(40)
            v = rng.randrange(1 << (4 + g % 14))  # 16 .. 131,072 values to draw from
            lines.append(f"{t},{g},{v},{-v},{v & 0xFFFFFFFF}\n")
            truth[(t, g)].add(v)
    (tmp_path / "in.csv").write_text("".join(lines))
    (tmp_path / "schema.txt").write_text(
        "PROTOCOL D { uint t get_csv_uint_pos1 (increasing); uint g get_csv_uint_pos2; "
        "ullong u get_csv_ullong_pos3; int i get_csv_int_pos4; IP a get_csv_uint_pos5; }\n")
    (tmp_path / "q.gsql").write_text(
        "DEFINE { query_name 'acd'; lfta_table_size '16'; }\n"
        "SELECT t, g, approx_count_distinct(u) AS eu, approx_count_distinct(i) AS ei,\n"
        "       approx_count_distinct(a) AS ea, count(*) AS n\n"
        "FROM [csv].D GROUP BY t, g\n")
    # a running aggregation (RUNNING does not split): the whole query in the
    # HFTA, a group kept while it has records
    (tmp_path / "r.gsql").write_text(
        "DEFINE { query_name 'racd'; }\n"
        "SELECT t, g, approx_count_distinct(u) AS hu, running_approx_count_distinct(u) AS ru\n"
        "FROM [csv].D GROUP BY t, g CLOSING_WHEN count(*) = 0\n")
    qs = gsqlc.compile([tmp_path / "q.gsql", tmp_path / "r.gsql"], schema=tmp_path / "schema.txt")
    plan = qs.explain()
    assert "approx_count_distinct_lfta_ul(u)" in plan and "approx_count_distinct_lfta_i(i)" in plan
    src = {"csv": f"csv:{tmp_path / 'in.csv'}"}
    se = 1.04 / math.sqrt(1000)
    got, whole = qs.table(src, "acd").to_pylist(), qs.table(src, "racd").to_pylist()
    assert len(got) == len(whole) == len(truth)
    for r, h in zip(sorted(got, key=lambda r: (r["t"], r["g"])),
                    sorted(whole, key=lambda r: (r["t"], r["g"]))):
        true = len(truth[(r["t"], r["g"])])
        ever = len(truth[(0, r["g"])] | truth[(1, r["g"])]) if r["t"] == 1 else true
        assert abs(r["eu"] - true) / true < 4 * se, (r, true)
        # merging partial sketches loses nothing: the whole group's sketch
        assert h["hu"] == r["eu"], (r, h)
        assert abs(h["ru"] - ever) / ever < 4 * se, (h, ever)
        # the same numbers as uint IP and ullong: the same hashes
        assert r["ea"] == r["eu"], r
        assert abs(r["ei"] - true) / true < 4 * se, (r, true)


# ---------------------------------------------------------------- RUNNING, CLOSING_WHEN

RUNNING_SPLIT = """\
DEFINE { query_name 'run_split'; }
SELECT tb, k, FIRST(v) AS fv, LAST(i) AS li, moving_sum(v % 100, 3) AS ms3,
       moving_sum_exp(v % 100, 3, 0.5) AS mse, running_array_aggr(v % 10) AS arr,
       count(*) AS n
FROM [csv].R GROUP BY t AS tb, k
CLOSING_WHEN count(*) = 0
"""

RUNNING_HFTA = """\
DEFINE { query_name 'run_hfta'; }
SELECT tb, k, running_sum(i) AS rs, running_sum_max(i) AS rsm,
       time_avg(v % 100, ms, 1000) AS ta, running_approx_count_distinct(s) AS racd,
       CAT_aggr_diff(s) AS catd, LAST(s) AS ls, count(*) AS n
FROM [csv].R GROUP BY t AS tb, k
CLOSING_WHEN count(*) = 0
"""


def running_reference(rows):
    """The manual's running aggregation (tests/test_running.py), carrying
    each aggregate's documented state."""
    by_epoch = defaultdict(list)
    for r in rows:
        by_epoch[r["t"]].append(r)
    live: dict = {}
    out = []
    for tb in sorted(by_epoch):
        cur = {k: [] for k in live}
        for r in by_epoch[tb]:
            k = r["k"]
            if k not in live:
                live[k] = {"fv": r["v"], "panes": [0, 0, 0], "pos": 0, "arr": [], "sum": 0,
                           "max": 0, "samples": [], "strs": set(), "diff": []}
                cur[k] = []
            g = live[k]
            cur[k].append(r)
            g["li"], g["ls"] = r["i"], r["s"]
            g["panes"][g["pos"]] += r["v"] % 100
            g["arr"].append(r["v"] % 10)
            g["sum"] += r["i"]
            g["max"] = max(g["max"], g["sum"])
            g["samples"].append((r["ms"], r["v"] % 100))
            g["strs"].add(r["s"])
            if not g["diff"] or g["diff"][-1] != r["s"]:
                g["diff"].append(r["s"])
        for k in list(live):
            g, c = live[k], cur[k]
            p = g["panes"]
            mse = sum(p[(g["pos"] - j) % 3] * 0.5 ** j for j in range(3))
            out.append(dict(tb=tb, k=k, fv=g["fv"], li=g["li"], ms3=sum(p) % 2**32, mse=mse,
                            arr=",".join(map(str, g["arr"])), n=len(c), rs=g["sum"],
                            rsm=g["max"], ta=time_avg(g["samples"], bool(c)),
                            racd=len(g["strs"]), catd=",".join(g["diff"]), ls=g["ls"]))
            if not c:
                del live[k]
            else:
                g["pos"] = (g["pos"] + 1) % 3
                g["panes"][g["pos"]] = 0
                g["max"] = g["sum"]
    return out


def time_avg(samples, in_window, window=1000):
    """The mean of the step function 'the latest sample' over the window of
    the latest sample, from the first sample on; no sample in the window:
    the last value."""
    last_ts, last = samples[-1]
    if not in_window:
        return float(last)
    w0 = last_ts // window * window
    lo, hi = max(w0, samples[0][0]), w0 + window
    total = 0.0
    for j, (ts, val) in enumerate(samples):
        nxt = samples[j + 1][0] if j + 1 < len(samples) else hi
        a, b = max(ts, lo), min(nxt, hi)
        if b > a:
            total += (b - a) * val
    return total / (hi - lo) if hi > lo else float(last)


@pytest.fixture(scope="module")
def running_set(data):
    d, rows = data
    (d / "run_split.gsql").write_text(RUNNING_SPLIT)
    (d / "run_hfta.gsql").write_text(RUNNING_HFTA)
    qs = gsqlc.compile([d / "run_split.gsql", d / "run_hfta.gsql"], schema=d / "schema.txt")
    return d, rows, qs, running_reference(rows)


def _by_key(rs):
    return {(r["tb"], r["k"]): r for r in rs}


def test_running_aggregates_split(running_set):
    d, rows, qs, want = running_set
    text = qs.explain()
    lfta = text.split("[LFTA] _fta_run_split")[1].split("[HFTA]")[0]
    assert "moving_sum_lfta(" in lfta and "running_array_aggr_lfta(" in lfta, lfta
    assert "gsq::running_op" in text
    got = _by_key(qs.table({"csv": f"csv:{d / 'in.csv'}"}, output="run_split").to_pylist())
    w = _by_key(want)
    assert got.keys() == w.keys() and any(r["n"] == 0 for r in want)
    for key, g in got.items():
        r = w[key]
        assert (g["fv"], g["li"], g["ms3"], g["arr"], g["n"]) == \
            (r["fv"], r["li"], r["ms3"], r["arr"], r["n"]), (g, r)
        assert g["mse"] == pytest.approx(r["mse"])


def test_running_aggregates_in_the_hfta(running_set, gsqlc):
    d, rows, qs, want = running_set
    p = gsqlc("run", d / "run_hfta.gsql", "--schema", d / "schema.txt",
              "--source", f"csv=csv:{d / 'in.csv'}", "--format", "jsonl")
    assert p.returncode == 0, p.err
    import json
    got = _by_key(json.loads(line) for line in p.out.splitlines())
    w = _by_key(want)
    assert got.keys() == w.keys()
    for key, g in got.items():
        r = w[key]
        assert (g["rs"], g["rsm"], g["catd"], g["ls"], g["n"]) == \
            (r["rs"], r["rsm"], r["catd"], r["ls"], r["n"]), (g, r)
        assert g["ta"] == pytest.approx(r["ta"], rel=1e-6), (g, r)
        assert g["racd"] == pytest.approx(r["racd"], abs=0.5)


# ---------------------------------------------------------------- GS-lite's own shape

def test_gslite_packet_schema_query(tmp_path, gsqlc):
    """A GS-lite query over GS-lite's packet schema, its CSV protocols as
    they are, with no def file and no source."""
    schema = shared_dir() / "reference" / "gslite-packet_schema.txt"
    if not schema.is_file():
        pytest.skip(f"no {schema}")
    rng = random.Random(3)
    rows = [(rng.randrange(50), rng.randrange(2**64), rng.choice(IPS), rng.choice(WORDS),
             rng.randrange(-9, 9), rng.choice([-2.5, 1.0, 4.0])) for _ in range(600)]
    (tmp_path / "in.csv").write_text("".join(
        f"{a},{b},{ip},::,{s},TRUE,{i},{i * 3},{x}\n" for a, b, ip, s, i, x in rows))
    (tmp_path / "q.gsql").write_text(
        "DEFINE { query_name 'by_ip'; }\n"
        "select era, ipInPosition3, FIRST(uintInPosition1) as f, LAST(llongInPosition8) as l,\n"
        "  count_diff(intInPosition7) as cd, median_of(ullongInPosition2) as med,\n"
        "  POSAVG(floatInPosition9) as pa, approx_count_distinct(stringInPosition5) as acd,\n"
        "  count(*) as Cnt\n"
        "from [csv].CSV_EXAMPLE\n"
        "group by systemTime/100000000 as era, ipInPosition3\n")
    p = gsqlc("run", tmp_path / "q.gsql", "--schema", schema,
              "--source", f"csv={tmp_path / 'in.csv'}")
    assert p.returncode == 0, p.err
    groups = defaultdict(list)
    for r in rows:
        groups[r[2]].append(r)
    got = {}
    for line in p.out.splitlines():
        _, ip, f, l, cd, med, pa, acd, n = line.split("|")
        got[ip] = (int(f), int(l), int(cd), int(med), float(pa), float(acd), int(n))
    assert got.keys() == groups.keys()
    for ip, rs in groups.items():
        pos = [r[5] for r in rs if r[5] >= 0]
        f, l, cd, med, pa, acd, n = got[ip]
        assert (f, l, cd, med, n) == (rs[0][0], rs[-1][4] * 3, runs([r[4] for r in rs]),
                                      q_rank([r[1] for r in rs], 0.5), len(rs))
        assert pa == pytest.approx(sum(pos) / len(pos), abs=1e-5)
        assert acd == pytest.approx(len({r[3] for r in rs}), abs=0.5)


# ---------------------------------------------------------------- catalog, docs, errors

def test_library_is_a_layer_of_every_catalog_and_user_lines_are_skipped(tmp_path):
    from gsqlc.semantics.user_functions import is_library_decl, load_catalog
    (tmp_path / "u.def").write_text("float UDAF POSAVG fstring8 (uint);\n"
                                    "uint UDAF mine fstring8 (uint);\n")
    cat = load_catalog([str(tmp_path / "u.def")])
    (posavg,) = cat.user_aggregates["posavg"]
    assert is_library_decl(posavg.udaf.decl)       # the library's, not the user's
    assert not is_library_decl(cat.user_aggregates["mine"][0].udaf.decl)
    first = cat.user_aggregates["first"]
    assert len(first) == 6 and all(a.udaf.running for a in first)
    assert {"quantile_of", "median_of", "moving_sum", "running_sum",
            "approx_count_distinct"} <= set(cat.extractions)


def test_a_wrong_call_is_located(data, gsqlc, tmp_path):
    d, _ = data
    (tmp_path / "e.gsql").write_text("SELECT tb, CAT_aggr(s) AS c FROM [csv].R GROUP BY t AS tb\n")
    p = gsqlc("explain", tmp_path / "e.gsql", "--schema", d / "schema.txt")
    assert p.returncode != 0 and "bad-arguments" in p.err and "e.gsql:1:12" in p.err, p.err


def test_library_builds_warning_free_alone(tmp_path):
    """The library's sources under -Wall -Wextra -Werror, C and C++."""
    import shutil
    import subprocess

    from gsqlc.resources import resource_dir
    lib, compat = resource_dir("runtime_c") / "udaf_lib", resource_dir("runtime_c") / "tigon_compat"
    for cc, std, src in (("cc", "-std=c11", "gsqlc_udaf_lfta.c"),
                         ("c++", "-std=c++17", "gsqlc_udaf_hfta.cc")):
        if shutil.which(cc) is None:
            pytest.skip(f"no {cc}")
        p = subprocess.run([cc, std, "-O2", "-Wall", "-Wextra", "-Wshadow", "-Werror", "-fPIC",
                            f"-I{lib}", f"-I{compat}", "-c", str(lib / src),
                            "-o", str(tmp_path / (src + ".o"))],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert p.returncode == 0, p.stderr


@pytest.mark.slow
def test_sanitized_run_of_the_library(data, tmp_path):
    """ASan (leak checks on) and UBSan over every aggregate of the library:
    the heap state of a group (quantile vectors, CAT_aggr strings, moving
    sums, string copies, in the HFTA and in the LFTA) freed with it."""
    d, rows = data
    (tmp_path / "strs.gsql").write_text(STRINGS)
    for name, key, group, define in [("by_epoch", "tb, k,", "t/5 AS tb, k", ""),
                                     ("small_table", "tb, k,", "t/5 AS tb, k",
                                      "lfta_table_size '2';"),
                                     ("whole", "tb, k,", "t/100000 AS tb, k", "")]:
        (d / f"{name}.gsql").write_text(SPLIT.format(name=name, key=key, group=group,
                                                     define=define))
    (d / "run_split.gsql").write_text(RUNNING_SPLIT)
    (d / "run_hfta.gsql").write_text(RUNNING_HFTA)
    (d / "str_halves.gsql").write_text(STRING_HALVES.format(name="str_halves",
                                                            define="lfta_table_size '2';"))
    files = [d / "by_epoch.gsql", d / "small_table.gsql", d / "whole.gsql",
             d / "run_split.gsql", d / "run_hfta.gsql", tmp_path / "strs.gsql",
             d / "str_halves.gsql"]
    runner = build_sanitized([*map(str, files), "--schema", str(d / "schema.txt")],
                             tmp_path / "build")
    for q, n in (("by_epoch", len({(r["t"] // 5, r["k"]) for r in rows})),
                 ("run_hfta", len(running_reference(rows))),
                 ("strs", len({(r["t"] // 5, r["k"]) for r in rows}))):
        r = run_sanitized(runner, "--source", f"csv=csv:{d / 'in.csv'}", "--output", q)
        assert r.returncode == 0, r.stderr[-3000:]
        assert len(r.stdout.splitlines()) == n, q
    # the LFTA's string copies, freed as each ejected group leaves
    # (count_diff_lfta_s's partial is binary: the output read as bytes)
    p = subprocess.run([runner, "--source", f"csv=csv:{d / 'in.csv'}", "--output", "str_halves"],
                       capture_output=True, env=dict(os.environ, **SANITIZED_RUN_ENV))
    assert p.returncode == 0, p.stderr[-3000:].decode("utf-8", "replace")
    assert p.stdout.count(b"\n") > len({(r["t"] // 5, r["k"]) for r in rows})


def test_docs_table_lists_the_library():
    """docs/hooks renders the library's table from the catalog: every
    aggregate a query calls, with where it runs."""
    import sys
    from pathlib import Path
    hooks = Path(__file__).resolve().parents[1] / "docs" / "hooks"
    sys.path.insert(0, str(hooks))
    try:
        import gsqlc_reference
    finally:
        sys.path.remove(str(hooks))
    table = gsqlc_reference.render_library_aggregates()
    for call in ("FIRST(uint)", "LAST(string)", "count_diff(llong)", "CAT_aggr(string, string)",
                 "quantile_of(float, float)", "median_of(uint)", "moving_sum(uint, uint)",
                 "running_sum_max(int)", "approx_count_distinct(string)", "POSAVG(float)",
                 "extr_avg(uint)", "time_avg(float, llong, llong)", "running_array_aggr(uint)"):
        assert f"<code>{call}</code>" in table, call
    assert "FIRST_lfta(" not in table      # a part, not a call
    row = table[table.index("<code>FIRST(uint)</code>"):]
    assert "LFTA sub-aggregate <code>FIRST_lfta</code>" in row[:row.index("</tr>")]


def test_the_library_declarations_are_parsed_once_and_again_when_damaged(tmp_path, monkeypatch):
    """The bundled def file's declarations are kept in the cache: a second
    process loads what the first parsed; a damaged entry is parsed again."""
    from gsqlc.frontend.fcn_defs import parse_function_defs
    from gsqlc.semantics import user_functions as uf
    monkeypatch.setenv("GSQLC_CACHE_DIR", str(tmp_path))
    parsed = parse_function_defs(uf.library_def_path())
    uf._library_decls.cache_clear()
    assert list(uf._library_decls()) == parsed
    (entry,) = tmp_path.glob("library-decls-*.pickle")
    stamp = entry.stat().st_mtime_ns
    uf._library_decls.cache_clear()
    assert list(uf._library_decls()) == parsed and entry.stat().st_mtime_ns == stamp   # loaded
    entry.write_bytes(entry.read_bytes()[:-100])                                        # damaged
    uf._library_decls.cache_clear()
    assert list(uf._library_decls()) == parsed
    assert entry.stat().st_mtime_ns != stamp   # written again
    uf._library_decls.cache_clear()
    assert uf.is_library_decl(uf._library_decls()[0])


# ---------------------------------------------------------------- LFTA halves called directly

HALVES = """\
DEFINE { query_name 'halves'; }
SELECT tb, k, FIRST_INT_lfta(i) AS fi, LAST_lfta(v) AS lv, FIRST_ULL_lfta(u) AS fu,
       LAST_LL_lfta(l) AS ll, FIRST_lfta(ip) AS fip, avg_udaf_lfta(v) AS a,
       count_diff_lfta_ui(v) AS cd, count(*) AS n
FROM [csv].R GROUP BY t/5 AS tb, k HAVING count(*) > 1
"""


def test_lfta_halves_aggregate_in_the_lfta(data, gsqlc, tmp_path):
    """An aggregate with only an LFTA implementation (GS-lite's
    FIRST_INT_lfta, avg_udaf_lfta, ...) puts the aggregation in the LFTA;
    its result is its declared type (avg_udaf_lfta's and count_diff's
    partials: their scratchpads as strings)."""
    import struct
    d, rows = data
    (tmp_path / "h.gsql").write_text(HALVES)
    ex = gsqlc("explain", tmp_path / "h.gsql", "--schema", d / "schema.txt")
    assert ex.returncode == 0, ex.err
    assert "[LFTA] _fta_halves" in ex.out and "the whole aggregation" in ex.out, ex.out
    assert "FIRST_INT_lfta(i)" in ex.out.split("[LFTA] _fta_halves")[1].split("[HFTA]")[0]
    got = gs_api.compile([tmp_path / "h.gsql"], schema=d / "schema.txt").table(
        {"csv": f"csv:{d / 'in.csv'}"}, strings="bytes").to_pylist()
    groups = defaultdict(list)
    for r in rows:
        groups[(r["t"] // 5, r["k"])].append(r)
    want = {g: rs for g, rs in groups.items() if len(rs) > 1}
    assert len(got) == len(want) > 3
    for g in got:
        rs = want[(g["tb"], g["k"])]
        vs = [r["v"] for r in rs]
        assert (g["fi"], g["lv"], g["fu"], g["ll"], g["fip"], g["n"]) == \
            (rs[0]["i"], vs[-1], rs[0]["u"], rs[-1]["l"], rs[0]["ip"], len(rs)), g
        # avg_udaf_lfta: the sum (64 bits) and the count
        assert struct.unpack("<QI", g["a"]) == (sum(vs) % 2**64, len(rs)), g
        # count_diff's partial: the runs, the first and the last value
        assert struct.unpack("<IQQ", g["cd"]) == (runs(vs), vs[0], vs[-1]), g


STRING_HALVES = """\
DEFINE {{ query_name '{name}'; {define} }}
SELECT tb, k, FIRST_STR_lfta(s) AS fs, LAST_STR_lfta(s) AS ls, count_diff_lfta_s(s) AS cd,
       count(*) AS n
FROM [csv].R GROUP BY t/5 AS tb, k
"""


def lib_hash(b: bytes) -> int:
    """The library's string hash: FNV-1a, then Murmur3's 64-bit finalizer."""
    m = 2**64 - 1
    h = 0xcbf29ce484222325
    for c in b:
        h = ((h ^ c) * 0x100000001b3) & m
    for mul in (0xff51afd7ed558ccd, 0xc4ceb9fe1a85ec53):
        h = ((h ^ (h >> 33)) * mul) & m
    return h ^ (h >> 33)


def check_string_halves(got, rows, whole_groups):
    """Each row a group's run of records in the LFTA: FIRST_STR_lfta its first
    string, LAST_STR_lfta its last, count_diff_lfta_s's partial its runs and
    the hashes of its first and last strings.  whole_groups: the table held
    every group, so a row is a whole group."""
    import struct
    groups = defaultdict(list)
    for r in rows:
        groups[(r["t"] // 5, r["k"])].append(r["s"].encode())
    n = defaultdict(int)
    for g in got:
        ss = groups[(g["tb"], g["k"])]
        runs_, first, last = struct.unpack("<IQQ", g["cd"])
        assert (lib_hash(g["fs"]), lib_hash(g["ls"])) == (first, last), g
        assert g["fs"] in ss and g["ls"] in ss and 1 <= runs_ <= g["n"], g
        n[(g["tb"], g["k"])] += g["n"]
        if whole_groups:
            assert (g["fs"], g["ls"], runs_, g["n"]) == (ss[0], ss[-1], runs(ss), len(ss)), g
    assert n == {k: len(v) for k, v in groups.items()}


def test_string_lfta_halves_aggregate_in_the_lfta(data, tmp_path):
    """FIRST_STR_lfta, LAST_STR_lfta and count_diff_lfta_s take a string in
    the LFTA: the first two keep a copy of it (made as the group's slot is
    filled, while the record is there), the third its hash; a table of 2
    slots, ejecting groups all the time, sends a group in several runs."""
    d, rows = data
    for name, define, whole in (("str_halves", "", True),
                                ("str_halves_small", "lfta_table_size '2';", False)):
        (tmp_path / "q.gsql").write_text(STRING_HALVES.format(name=name, define=define))
        qs = gs_api.compile([tmp_path / "q.gsql"], schema=d / "schema.txt")
        assert "FIRST_STR_lfta(s)" in qs.explain().split("[HFTA]")[0]
        got = qs.table({"csv": f"csv:{d / 'in.csv'}"}, strings="bytes").to_pylist()
        check_string_halves(got, rows, whole)
        if not whole:
            assert len(got) > len({(r["t"] // 5, r["k"]) for r in rows})


@pytest.mark.parametrize("query, at, why, whole", [
    # over another query's output
    ("DEFINE { query_name 'base'; }\nSELECT t, v FROM [csv].R\n;\n"
     "SELECT tb, FIRST_INT_lfta(v) AS f FROM base GROUP BY t AS tb\n",
     "4:12", "over another query's output", "FIRST"),
    # a join
    ("SELECT a.t, avg_udaf_lfta(a.v) AS m FROM [csv].R a, [csv].R b "
     "WHERE a.t = b.t AND a.k = b.k GROUP BY a.t\n",
     # (a join's aggregation reads the join's output)
     "1:13", "over another query's output", "avg_udaf (extr_avg)"),
    # an argument an LFTA cannot evaluate
    ("SELECT tb, count_diff_lfta_s(str_extract_regex(s, 'b+')) AS c "
     "FROM [csv].R GROUP BY t AS tb\n",
     "1:12", "over an argument an LFTA cannot evaluate", "count_diff"),
    # beside an aggregate only an HFTA runs
    ("SELECT tb, LAST_INT_lfta(i) AS l, POSAVG(x) AS p FROM [csv].R GROUP BY t AS tb\n",
     "1:12", "POSAVG(x)", "LAST"),
    ("SELECT tb, quant_ui_udaf_lfta3(v) AS q FROM [csv].R GROUP BY t AS tb, s\n",
     "1:12", "group-by key", "quant_ui_udaf_hftaZ (median_of, quantile_of)"),
])
def test_an_lfta_half_that_cannot_run_in_the_lfta_is_located(data, gsqlc, tmp_path,
                                                              query, at, why, whole):
    d, _ = data
    (tmp_path / "e.gsql").write_text(query)
    p = gsqlc("explain", tmp_path / "e.gsql", "--schema", d / "schema.txt")
    assert p.returncode != 0 and "lfta-only-aggregate" in p.err, p.err
    assert f"e.gsql:{at}" in p.err and why in p.err and f"call {whole} instead" in p.err, p.err
    assert "gsqlc_aggregates.def" not in p.err and "--udf" not in p.err, p.err
