"""User-defined functions and aggregates (issue 12, part 4): a def file in
the syntax of Tigon's external_fcns.def and C/C++ sources in Tigon's calling
convention (NAME_HFTA_AGGR_INIT_/UPDATE_/OUTPUT_/DESTROY_, vstring and
struct gs_string, the gs_* type names), through the CLI and the Python API,
compared with Python references; the def files of Tigon and GS-lite load
unchanged; errors in a def line or a source are located at the def line."""
from __future__ import annotations

import random
import textwrap
from collections import defaultdict

import pytest

import gsqlc
from conftest import build_sanitized, run_sanitized, shared_dir, shared_missing

SCHEMA = """
PROTOCOL R {
    uint   t get_csv_uint_pos1 (increasing, required);
    uint   k get_csv_uint_pos2;
    float  v get_csv_float_pos3;
    string s get_csv_string_pos4;
}
"""

DEFS = """\
// the user's functions and aggregates, as a Tigon user writes them
float UDAF POSAVG fstring16 (float);
string UDAF longest string (string);
string UDAF avg_pack fstring12 (uint);
float FUN unpack_avg (string);
float EXTR packed_avg avg_pack unpack_avg (uint);
ullong UDAF usum fstring8 (uint);
float FUN scaled (ullong, float);
float EXTR scaled_sum usum scaled (uint, float);
uint FUN [LFTA_LEGAL] twice (uint);
uint FUN slen (string);
PRED [LFTA_LEGAL] is_odd [uint];
uint UDAF [RUNNING] FIRSTV uint (uint);
string UDAF [RUNNING] FIRSTV string (string);
"""

# HFTA functions and aggregates: C++, Tigon's HFTA convention
HFTA_SOURCE = r"""
#include "gsconfig.h"
#include "gstypes.h"
#include "hfta_udaf.h"
#include "rts_udaf.h"
#include <string.h>

struct posavg_state { gs_float_t sum; gs_float_t cnt; };
void POSAVG_HFTA_AGGR_INIT_(gs_sp_t b) { posavg_state *s = (posavg_state *)b; s->sum = 0; s->cnt = 0; }
void POSAVG_HFTA_AGGR_UPDATE_(gs_sp_t b, gs_float_t v) {
    posavg_state *s = (posavg_state *)b;
    if (v >= 0) { s->sum += v; s->cnt += 1; }
}
void POSAVG_HFTA_AGGR_OUTPUT_(gs_float_t *r, gs_sp_t b) {
    posavg_state *s = (posavg_state *)b;
    *r = s->cnt > 0 ? s->sum / s->cnt : -1;
}
void POSAVG_HFTA_AGGR_DESTROY_(gs_sp_t b) { (void)b; }

// a string scratchpad holding an owned copy of the longest string seen
void longest_HFTA_AGGR_INIT_(vstring *s) { hfta_vstr_init(s); }
void longest_HFTA_AGGR_UPDATE_(vstring *s, vstring *v) {
    if (v->length > s->length) hfta_vstr_replace(s, v);
}
void longest_HFTA_AGGR_OUTPUT_(vstring *r, vstring *s) { *r = *s; r->reserved = SHALLOW_COPY; }
void longest_HFTA_AGGR_DESTROY_(vstring *s) { hfta_vstr_destroy(s); }

// an aggregate whose result is its 12-byte scratchpad, read by unpack_avg
struct pack { gs_int64_t sum; gs_uint32_t cnt; } __attribute__((packed));
void avg_pack_HFTA_AGGR_INIT_(gs_sp_t b) { memset(b, 0, 12); }
void avg_pack_HFTA_AGGR_UPDATE_(gs_sp_t b, gs_uint32_t v) {
    pack *p = (pack *)b; p->sum += v; p->cnt++;
}
void avg_pack_HFTA_AGGR_OUTPUT_(vstring *r, gs_sp_t b) {
    r->length = 12; r->offset = (gs_p_t)b; r->reserved = SHALLOW_COPY;
}
void avg_pack_HFTA_AGGR_DESTROY_(gs_sp_t b) { (void)b; }
gs_float_t unpack_avg(vstring *v) {
    if (v->length != 12) return -1;
    pack p; memcpy(&p, (void *)v->offset, 12);
    return p.cnt ? (gs_float_t)p.sum / p.cnt : 0;
}

void usum_HFTA_AGGR_INIT_(gs_sp_t b) { *(gs_uint64_t *)b = 0; }
void usum_HFTA_AGGR_UPDATE_(gs_sp_t b, gs_uint32_t v) { *(gs_uint64_t *)b += v; }
void usum_HFTA_AGGR_OUTPUT_(gs_uint64_t *r, gs_sp_t b) { *r = *(gs_uint64_t *)b; }
void usum_HFTA_AGGR_DESTROY_(gs_sp_t b) { (void)b; }
gs_float_t scaled(gs_uint64_t x, gs_float_t f) { return x * f; }

// overloads: a typed scratchpad of each type
void FIRSTV_HFTA_AGGR_INIT_(gs_uint32_t *s) { *s = 0xffffffffu; }
void FIRSTV_HFTA_AGGR_UPDATE_(gs_uint32_t *s, gs_uint32_t v) { if (*s == 0xffffffffu) *s = v; }
void FIRSTV_HFTA_AGGR_OUTPUT_(gs_uint32_t *r, gs_uint32_t *s) { *r = *s; }
void FIRSTV_HFTA_AGGR_DESTROY_(gs_uint32_t *s) { (void)s; }
void FIRSTV_HFTA_AGGR_INIT_(vstring *s) { s->length = -1; s->offset = 0; s->reserved = SHALLOW_COPY; }
void FIRSTV_HFTA_AGGR_UPDATE_(vstring *s, vstring *v) {
    if (s->length < 0) { s->length = 0; hfta_vstr_assign_with_copy(s, v); }
}
void FIRSTV_HFTA_AGGR_OUTPUT_(vstring *r, vstring *s) {
    // an owned copy: the caller frees an INTERNAL result
    hfta_vstr_assign_with_copy(r, s);
}
void FIRSTV_HFTA_AGGR_DESTROY_(vstring *s) { if (s->length >= 0) hfta_vstr_destroy(s); }

gs_uint32_t twice(gs_uint32_t x) { return 2 * x; }
gs_uint32_t slen(vstring *s) { return (gs_uint32_t)s->length; }
gs_uint32_t is_odd(gs_uint32_t x) { return x & 1; }
"""

# LFTA functions: C, Tigon's LFTA convention
LFTA_SOURCE = r"""
#include "rts_external.h"
gs_uint32_t twice(gs_uint32_t x) { return 2 * x; }
gs_uint32_t is_odd(gs_uint32_t x) { return x & 1; }
"""


def make_rows(n=3000, seed=12):
    rng = random.Random(seed)
    words = ["a", "bb", "ccc", "dddd", "ee", "fffff", ""]
    rows = []
    for i in range(n):
        rows.append((i // 300, rng.randrange(5), rng.choice([-1.0, 0.5, 2.0, 7.25, 10.0]),
                     rng.choice(words)))
    return rows


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("udf")
    (d / "schema.txt").write_text(SCHEMA)
    (d / "my.def").write_text(DEFS)
    (d / "my_hfta.cc").write_text(HFTA_SOURCE)
    (d / "my_lfta.c").write_text(LFTA_SOURCE)
    rows = make_rows()
    (d / "in.csv").write_text("".join(f"{t},{k},{v},{s}\n" for t, k, v, s in rows))
    return d, rows


QUERY = """\
DEFINE { query_name 'u'; }
SELECT tb, k, POSAVG(v) AS pa, longest(s) AS ls, packed_avg(k) AS pk,
       scaled_sum(k, 0.5) AS ss, FIRSTV(k) AS fk, FIRSTV(s) AS fs,
       count(*) AS n, sum(slen(s)) AS tl
FROM [csv].R
WHERE is_odd[t] OR t = 0
GROUP BY t/2 AS tb, k
"""


def reference(rows):
    groups = defaultdict(list)
    for t, k, v, s in rows:
        if t % 2 == 1 or t == 0:
            groups[(t // 2, k)].append((v, s))
    out = []
    for (tb, k), rs in groups.items():
        pos = [v for v, _ in rs if v >= 0]
        longest = ""
        for _, s in rs:
            if len(s) > len(longest):
                longest = s
        out.append((tb, k, sum(pos) / len(pos) if pos else -1.0, longest, float(k),
                    len(rs) * k * 0.5, k, rs[0][1], len(rs), sum(len(s) for _, s in rs)))
    return sorted(out)


def _args(d, *more):
    return ["--schema", d / "schema.txt", "--functions", d / "my.def",
            "--udf", d / "my_hfta.cc", "--udf", d / "my_lfta.c", *more]


def test_cli_runs_user_aggregates_and_functions(files, gsqlc, tmp_path):
    d, rows = files
    (tmp_path / "q.gsql").write_text(QUERY)
    p = gsqlc("run", tmp_path / "q.gsql", *_args(d), "--source", f"csv=csv:{d / 'in.csv'}",
              "--format", "csv")
    assert p.returncode == 0, p.err
    header, *lines = p.out.splitlines()
    assert header == "tb,k,pa,ls,pk,ss,fk,fs,n,tl"
    got = []
    for line in lines:
        tb, k, pa, ls, pk, ss, fk, fs, n, tl = line.split(",")
        got.append((int(tb), int(k), float(pa), ls, float(pk), float(ss), int(fk), fs,
                    int(n), int(tl)))
    want = reference(rows)
    assert len(got) == len(want) > 20
    for g, w in zip(sorted(got), want):
        assert g[:2] == w[:2] and g[3] == w[3] and g[6:] == w[6:], (g, w)
        for x, y in zip((g[2], g[4], g[5]), (w[2], w[4], w[5])):
            assert x == pytest.approx(y), (g, w)


def test_explain_shows_where_each_runs(files, gsqlc, tmp_path):
    d, _ = files
    (tmp_path / "q.gsql").write_text(QUERY)
    p = gsqlc("explain", tmp_path / "q.gsql", *_args(d))
    assert p.returncode == 0, p.err
    lfta, hfta = p.out.split("[HFTA]")
    # the LFTA_LEGAL predicate filters in the LFTA; the aggregates run in the HFTA
    assert "is_odd[t]" in lfta or "is_odd(t)" in lfta, p.out
    assert "a user-defined aggregate runs in the HFTA" in lfta
    assert "POSAVG(v)" in hfta and "unpack_avg(avg_pack(k))" in hfta, p.out


def test_python_api(files):
    d, rows = files
    q = d / "api.gsql"
    q.write_text(QUERY)
    qs = gsqlc.compile([q], schema=d / "schema.txt", functions=d / "my.def",
                       udf=[d / "my_hfta.cc", d / "my_lfta.c"])
    t = qs.table({"csv": f"csv:{d / 'in.csv'}"})
    got = sorted(tuple(r.values()) for r in t.to_pylist())
    want = reference(rows)
    assert [g[:2] + g[3:4] + g[6:] for g in got] == [w[:2] + w[3:4] + w[6:] for w in want]
    assert [g[2] for g in got] == pytest.approx([w[2] for w in want])


def test_lfta_function_in_a_selection(files, gsqlc, tmp_path):
    d, rows = files
    (tmp_path / "s.gsql").write_text("DEFINE { query_name 's'; }\n"
                                     "SELECT t, twice(k) AS k2 FROM [csv].R WHERE twice(k) > 4\n")
    p = gsqlc("explain", tmp_path / "s.gsql", *_args(d))
    assert "runs entirely in the LFTA" in p.out, p.out
    p = gsqlc("run", tmp_path / "s.gsql", *_args(d), "--source", f"csv=csv:{d / 'in.csv'}",
              "--format", "csv")
    assert p.returncode == 0, p.err
    want = [f"{t},{2 * k}" for t, k, _, _ in rows if 2 * k > 4]
    assert p.out.splitlines() == ["t,k2", *want]


def test_tigon_and_gslite_def_files_load_unchanged():
    why = shared_missing()
    if why:
        pytest.skip(why)
    from gsqlc.semantics.user_functions import load_catalog
    ref = shared_dir() / "reference"
    tigon = load_catalog([str(ref / "tigon-external_fcns.def")])
    gslite = load_catalog([str(ref / "gslite-external_fcns.def")])
    assert {"posavg", "avg_udaf", "moving_sum_udaf"} <= set(tigon.user_aggregates)
    assert {"moving_sum", "moving_sum_exp", "extr_avg"} <= set(tigon.extractions)
    assert {"first", "last", "cat_aggr", "count_diff"} <= set(gslite.user_aggregates)
    spec = tigon.user_aggregates["avg_udaf"][0].udaf
    assert spec.sub.name == "avg_udaf_lfta" and spec.sup.name == "avg_udaf_hfta"
    assert len(gslite.user_aggregates["first"]) == 6   # overloads by type


def test_gslite_def_file_with_a_user_source(files, gsqlc, tmp_path):
    """GS-lite's whole external_fcns.def as it is, and a source defining the
    one aggregate the query calls (POSAVG, declared there)."""
    why = shared_missing()
    if why:
        pytest.skip(why)
    d, rows = files
    src = tmp_path / "posavg.cc"
    src.write_text(HFTA_SOURCE.split("// a string scratchpad")[0])
    (tmp_path / "p.gsql").write_text("DEFINE { query_name 'p'; }\n"
                                     "SELECT tb, POSAVG(v) AS pa FROM [csv].R GROUP BY t AS tb\n")
    p = gsqlc("run", tmp_path / "p.gsql", "--schema", d / "schema.txt", "--functions",
              shared_dir() / "reference" / "gslite-external_fcns.def", "--udf", src,
              "--source", f"csv=csv:{d / 'in.csv'}", "--format", "csv")
    assert p.returncode == 0, p.err
    by_t = defaultdict(list)
    for t, _, v, _ in rows:
        if v >= 0:
            by_t[t].append(v)
    got = {int(a): float(b) for a, b in (x.split(",") for x in p.out.splitlines()[1:])}
    assert got == pytest.approx({t: sum(vs) / len(vs) for t, vs in by_t.items()})


@pytest.mark.parametrize("text, line, col, needle", [
    ("uint FUN f(uintt);\n", 1, 12, "FUN f: unknown type 'uintt' of parameter 1"),
    ("uint FUN [FAST] f(uint);\n", 1, 11, "FUN f: unknown modifier 'FAST'"),
    ("\nuint UDAF [SUBAGGR a] u fstring8 (uint);\n", 2, 1, "SUBAGGR without SUPERAGGR"),
    ("uint UDAF [SUBAGGR a, SUPERAGGR b] u fstring8 (uint);\n", 1, 12,
     "SUBAGGR a is not declared as a UDAF"),
    ("float EXTR e nope f (uint);\nfloat FUN f(string);\n", 1, 1,
     "EXTR e: aggregate nope is not declared as a UDAF"),
    ("uint FUN f(uint);\nint FUN f(uint);\n", 2, 1, "declared twice"),
    ("uint UDAF u fstringX (uint);\n", 1, 1, "unknown scratchpad type 'fstringX'"),
    ("uint FUN f(uint\n", 1, 16, "unexpected end of input"),
])
def test_def_file_errors_are_located(tmp_path, gsqlc, text, line, col, needle):
    (tmp_path / "bad.def").write_text(text)
    (tmp_path / "q.gsql").write_text("SELECT time FROM TCP\n")
    p = gsqlc("explain", tmp_path / "q.gsql", "--functions", tmp_path / "bad.def")
    assert p.returncode != 0
    first = p.err.splitlines()[0]
    assert first.startswith(f"{tmp_path / 'bad.def'}:{line}:{col}: error ["), p.err
    assert needle in first, p.err


def test_source_not_defining_a_declared_aggregate(files, gsqlc, tmp_path):
    """A definition whose parameter types differ from the convention's is
    reported at the def line, with what the source does define."""
    d, _ = files
    src = tmp_path / "wrong.cc"
    # (usum: POSAVG, also declared there, is built in -- gsqlc's library's)
    src.write_text(HFTA_SOURCE.replace("usum_HFTA_AGGR_UPDATE_(gs_sp_t b, gs_uint32_t v)",
                                       "usum_HFTA_AGGR_UPDATE_(gs_sp_t b, int v)"))
    (tmp_path / "q.gsql").write_text(QUERY)
    p = gsqlc("run", tmp_path / "q.gsql", "--schema", d / "schema.txt", "--functions",
              d / "my.def", "--udf", src, "--udf", d / "my_lfta.c",
              "--source", f"csv=csv:{d / 'in.csv'}")
    assert p.returncode != 0
    assert f"{d / 'my.def'}:7:1: error [udf-undefined]: UDAF usum" in p.err, p.err
    assert "usum_HFTA_AGGR_UPDATE_(char*, unsigned int)" in p.err
    assert "they define usum_HFTA_AGGR_UPDATE_(char*, int)" in p.err


def test_query_errors_with_user_functions(files, gsqlc, tmp_path):
    d, _ = files
    cases = [
        ("SELECT tb, POSAVG(s) AS x FROM [csv].R GROUP BY t AS tb\n",
         "bad-arguments", "no declaration of POSAVG takes (string)"),
        ("SELECT t FROM [csv].R WHERE POSAVG(v) > 1\n", "aggregate-not-allowed",
         "aggregate POSAVG() is not allowed in WHERE"),
        ("SELECT t, twice(s) AS x FROM [csv].R\n", "bad-arguments", "twice"),
    ]
    for text, rule, needle in cases:
        (tmp_path / "q.gsql").write_text(text)
        p = gsqlc("explain", tmp_path / "q.gsql", *_args(d))
        assert p.returncode != 0, text
        assert f"error [{rule}]" in p.err and needle in p.err, (text, p.err)
        assert p.err.startswith(f"{tmp_path / 'q.gsql'}:1:"), p.err


def test_unsupported_forms_are_located(tmp_path, gsqlc, files):
    d, _ = files
    (tmp_path / "more.def").write_text(textwrap.dedent("""\
        string FUN [PARTIAL] part (string);
        fstring8 STATE st;
        int SFUN sf st (uint);
        """))
    # a stateful function in GROUP BY: its supergroup is not known yet
    (tmp_path / "q.gsql").write_text("SELECT tb, n FROM [csv].R GROUP BY t AS tb, sf(k) AS n\n")
    p = gsqlc("explain", tmp_path / "q.gsql", "--schema", d / "schema.txt",
              "--functions", tmp_path / "more.def")
    assert p.returncode != 0
    assert f"{tmp_path / 'q.gsql'}:1:45: error [sampling]" in p.err, p.err
    # a PARTIAL function in CLOSING_WHEN
    (tmp_path / "q.gsql").write_text(
        "SELECT tb, count(*) AS n FROM [csv].R GROUP BY t AS tb, s\n"
        "CLOSING_WHEN str_length(part(s)) = 0\n")
    (tmp_path / "p.cc").write_text('#include "hfta_udaf.h"\n'
                                   "gs_retval_t part(vstring *r, vstring *s) { *r = *s; return 0; }\n")
    p = gsqlc("run", tmp_path / "q.gsql", "--schema", d / "schema.txt",
              "--functions", tmp_path / "more.def", "--udf", tmp_path / "p.cc",
              "--source", f"csv=csv:{d / 'in.csv'}")
    assert p.returncode != 0
    assert f"{tmp_path / 'q.gsql'}:2:25: error [not-supported-yet]: the PARTIAL function part" \
        in p.err, p.err


HANDLE_DEFS = """\
uint FUN scale_by (uint, string HANDLE);
string FUN [PARTIAL] after_colon (string);
ullong UDAF wsum fstring8 (uint, uint HANDLE);
"""

HANDLE_SOURCE = r"""
#include "hfta_udaf.h"
#include <stdlib.h>
#include <string.h>
// the handle: the factor, parsed once when the query starts
gs_param_handle_t register_handle_for_scale_by_slot_1(vstring *f) {
    char buf[32] = {0};
    memcpy(buf, (const char *)f->offset, f->length < 31 ? f->length : 31);
    gs_uint32_t *p = (gs_uint32_t *)malloc(sizeof *p);
    *p = (gs_uint32_t)atoi(buf);
    return (gs_param_handle_t)p;
}
gs_retval_t deregister_handle_for_scale_by_slot_1(gs_param_handle_t h) {
    free((void *)h);
    return 0;
}
gs_uint32_t scale_by(gs_uint32_t x, gs_param_handle_t h) { return x * *(gs_uint32_t *)h; }
// an aggregate with a HANDLE parameter (Tigon's moving_avg(len, 5) shape)
gs_param_handle_t register_handle_for_wsum_slot_1(gs_uint32_t w) {
    gs_uint32_t *p = (gs_uint32_t *)malloc(sizeof *p);
    *p = w;
    return (gs_param_handle_t)p;
}
gs_retval_t deregister_handle_for_wsum_slot_1(gs_param_handle_t h) { free((void *)h); return 0; }
void wsum_HFTA_AGGR_INIT_(gs_sp_t b) { *(gs_uint64_t *)b = 0; }
void wsum_HFTA_AGGR_UPDATE_(gs_sp_t b, gs_uint32_t v, gs_param_handle_t h) {
    *(gs_uint64_t *)b += (gs_uint64_t)v * *(gs_uint32_t *)h;
}
void wsum_HFTA_AGGR_OUTPUT_(gs_uint64_t *r, gs_sp_t b) { *r = *(gs_uint64_t *)b; }
void wsum_HFTA_AGGR_DESTROY_(gs_sp_t b) { (void)b; }
// PARTIAL: the text after the first ':', no value without one
gs_retval_t after_colon(vstring *r, vstring *s) {
    const char *p = (const char *)s->offset;
    for (gs_int32_t i = 0; i < s->length; i++)
        if (p[i] == ':') {
            r->offset = (gs_p_t)(p + i + 1); r->length = s->length - i - 1;
            r->reserved = SHALLOW_COPY;
            return 0;
        }
    return 1;
}
"""


@pytest.fixture(scope="module")
def handle_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("handles")
    (d / "schema.txt").write_text(SCHEMA)
    (d / "h.def").write_text(HANDLE_DEFS)
    (d / "h.cc").write_text(HANDLE_SOURCE)
    rng = random.Random(5)
    rows = [(i // 20, rng.randrange(7), 1.0, rng.choice(["a:x", "b", "c:yy", ":z", "d:"]))
            for i in range(400)]
    (d / "in.csv").write_text("".join(f"{t},{k},{v},{s}\n" for t, k, v, s in rows))
    return d, rows


def test_handle_parameters_and_partial_functions(handle_files, gsqlc, tmp_path):
    """A HANDLE argument is registered once when the query starts (and
    released at its end); a PARTIAL function with no value drops its tuple
    -- in a selection, and in an aggregation's WHERE and GROUP BY."""
    d, rows = handle_files
    common = ["--schema", d / "schema.txt", "--functions", d / "h.def", "--udf", d / "h.cc",
              "--source", f"csv=csv:{d / 'in.csv'}", "--format", "csv"]
    (tmp_path / "s.gsql").write_text(
        "SELECT t, scale_by(k, '10') AS ks, after_colon(s) AS ac FROM [csv].R\n")
    p = gsqlc("run", tmp_path / "s.gsql", *common)
    assert p.returncode == 0, p.err
    want = [f"{t},{10 * k},{s.split(':', 1)[1]}" for t, k, _, s in rows if ":" in s]
    assert p.out.splitlines() == ["t,ks,ac", *want]
    (tmp_path / "a.gsql").write_text(
        "SELECT tb, ac, count(*) AS n FROM [csv].R WHERE scale_by(k, '3') > 3\n"
        "GROUP BY t/5 AS tb, after_colon(s) AS ac\n")
    p = gsqlc("run", tmp_path / "a.gsql", *common)
    assert p.returncode == 0, p.err
    counts = defaultdict(int)
    for t, k, _, s in rows:
        if ":" in s and 3 * k > 3:
            counts[(t // 5, s.split(":", 1)[1])] += 1
    got = sorted(tuple(x.split(",")) for x in p.out.splitlines()[1:])
    assert got == sorted((str(tb), ac, str(n)) for (tb, ac), n in counts.items())
    p = gsqlc("explain", tmp_path / "s.gsql", *common[:6])
    assert "[HFTA]" in p.out and "after_colon(s)" in p.out.split("[HFTA]")[1]
    # PARTIAL in an aggregate's argument (no value: the tuple is not
    # counted), in SELECT and HAVING (no value: the group is not output)
    (tmp_path / "p.gsql").write_text(
        "SELECT tb, s, after_colon(s) AS tail, count(*) AS n,\n"
        "       sum(str_length(after_colon(s))) AS tl FROM [csv].R\n"
        "GROUP BY t/5 AS tb, s HAVING str_length(after_colon(s)) >= 0\n")
    p = gsqlc("run", tmp_path / "p.gsql", *common)
    assert p.returncode == 0, p.err
    agg: dict = defaultdict(int)
    for t, _, _, s_ in rows:
        if ":" in s_:
            agg[(t // 5, s_)] += 1
    want = sorted((tb, s_, s_.split(":", 1)[1], n, n * len(s_.split(":", 1)[1]))
                  for (tb, s_), n in agg.items())
    got = sorted((int(a), b, c, int(d), int(e)) for a, b, c, d, e in
                 (x.split(",") for x in p.out.splitlines()[1:]))
    assert got == want
    # a user aggregate's HANDLE parameter: registered once, passed to UPDATE
    (tmp_path / "w.gsql").write_text(
        "SELECT tb, wsum(k, 7) AS w, sum(k) AS s FROM [csv].R GROUP BY t/5 AS tb\n")
    p = gsqlc("run", tmp_path / "w.gsql", *common)
    assert p.returncode == 0, p.err
    sums: dict = defaultdict(int)
    for t, k, _, _ in rows:
        sums[t // 5] += k
    got = {int(a): (int(b), int(c)) for a, b, c in (x.split(",") for x in p.out.splitlines()[1:])}
    assert got == {tb: (7 * v, v) for tb, v in sums.items()}


@pytest.mark.slow
def test_sanitized_handles_are_released(handle_files, tmp_path):
    d, rows = handle_files
    (tmp_path / "s.gsql").write_text(
        "DEFINE { query_name 's'; }\n"
        "SELECT t, scale_by(k, '10') AS ks, after_colon(s) AS ac FROM [csv].R\n")
    runner = build_sanitized([tmp_path / "s.gsql", "--schema", d / "schema.txt", "--functions",
                             d / "h.def", "--udf", d / "h.cc"], tmp_path / "build")
    r = run_sanitized(runner, "--source", f"csv=csv:{d / 'in.csv'}", "--output", "s")
    assert r.returncode == 0, r.stderr[-3000:]
    assert len(r.stdout.splitlines()) == sum(":" in s for *_, s in rows)


@pytest.mark.slow
def test_sanitized_run_of_user_aggregates(files, tmp_path):
    """ASan (with leak checks) and UBSan over the user aggregates: the
    scratchpads are destroyed with their groups, string results freed."""
    d, rows = files
    q = tmp_path / "q.gsql"
    q.write_text(QUERY)
    runner = build_sanitized([q, *map(str, _args(d))], tmp_path / "build")
    r = run_sanitized(runner, "--source", f"csv=csv:{d / 'in.csv'}", "--output", "u")
    assert r.returncode == 0, r.stderr[-3000:]
    assert len(r.stdout.splitlines()) == len(reference(rows))


# ---- split aggregates: SUBAGGR in the LFTA, SUPERAGGR in the HFTA

SPLIT_DEFS = """\
string UDAF [SUBAGGR avg_lfta, SUPERAGGR avg_hfta] avg_split fstring12 (uint);
string UDAF avg_hfta fstring12 (string);
string UDAF avg_lfta fstring12 (uint);
float FUN unpack_avg (string);
float EXTR split_avg avg_split unpack_avg (uint);
ullong UDAF [SUBAGGR csum_lfta, SUPERAGGR csum_hfta] csum fstring8 (uint);
ullong UDAF csum_lfta fstring16 (uint);
ullong UDAF csum_hfta fstring8 (ullong);
"""

SPLIT_HFTA = r"""
#include "hfta_udaf.h"
#include <string.h>
struct pack { gs_int64_t sum; gs_uint32_t cnt; } __attribute__((packed));
void avg_hfta_HFTA_AGGR_INIT_(gs_sp_t b) { memset(b, 0, 12); }
void avg_hfta_HFTA_AGGR_UPDATE_(gs_sp_t b, vstring *v) {
    if (v->length != 12) return;
    pack p, q; memcpy(&p, b, 12); memcpy(&q, (void *)v->offset, 12);
    p.sum += q.sum; p.cnt += q.cnt; memcpy(b, &p, 12);
}
void avg_hfta_HFTA_AGGR_OUTPUT_(vstring *r, gs_sp_t b) {
    r->length = 12; r->offset = (gs_p_t)b; r->reserved = SHALLOW_COPY;
}
void avg_hfta_HFTA_AGGR_DESTROY_(gs_sp_t b) { (void)b; }
gs_float_t unpack_avg(vstring *v) {
    if (v->length != 12) return -1;
    pack p; memcpy(&p, (void *)v->offset, 12);
    return p.cnt ? (gs_float_t)p.sum / p.cnt : 0;
}
void csum_hfta_HFTA_AGGR_INIT_(gs_sp_t b) { *(gs_uint64_t *)b = 0; }
void csum_hfta_HFTA_AGGR_UPDATE_(gs_sp_t b, gs_uint64_t v) { *(gs_uint64_t *)b += v; }
void csum_hfta_HFTA_AGGR_OUTPUT_(gs_uint64_t *r, gs_sp_t b) { *r = *(gs_uint64_t *)b; }
void csum_hfta_HFTA_AGGR_DESTROY_(gs_sp_t b) { (void)b; }
"""

SPLIT_LFTA = r"""
#include "rts_udaf.h"
#include <string.h>
struct pack { gs_int64_t sum; gs_uint32_t cnt; } __attribute__((packed));
void avg_lfta_LFTA_AGGR_INIT_(gs_sp_t b) { memset(b, 0, 12); }
void avg_lfta_LFTA_AGGR_UPDATE_(gs_sp_t b, gs_uint32_t v) {
    struct pack p; memcpy(&p, b, 12); p.sum += v; p.cnt++; memcpy(b, &p, 12);
}
gs_retval_t avg_lfta_LFTA_AGGR_FLUSHME_(gs_sp_t b) { (void)b; return 0; }
void avg_lfta_LFTA_AGGR_OUTPUT_(struct gs_string *r, gs_sp_t b) { r->length = 12; r->data = b; }
void avg_lfta_LFTA_AGGR_DESTROY_(gs_sp_t b) { (void)b; }
/* a sum whose group leaves the LFTA after 3 records (FLUSHME) */
struct capped { gs_uint64_t sum; gs_uint64_t n; };
void csum_lfta_LFTA_AGGR_INIT_(gs_sp_t b) { memset(b, 0, 16); }
void csum_lfta_LFTA_AGGR_UPDATE_(gs_sp_t b, gs_uint32_t v) {
    struct capped *c = (struct capped *)b; c->sum += v; c->n++;
}
gs_retval_t csum_lfta_LFTA_AGGR_FLUSHME_(gs_sp_t b) { return ((struct capped *)b)->n >= 3; }
void csum_lfta_LFTA_AGGR_OUTPUT_(gs_uint64_t *r, gs_sp_t b) { *r = ((struct capped *)b)->sum; }
void csum_lfta_LFTA_AGGR_DESTROY_(gs_sp_t b) { (void)b; }
"""

SPLIT_QUERY = """\
DEFINE { query_name 'sp'; }
SELECT tb, k, split_avg(k + t) AS a, csum(k + t) AS cs, count(*) AS n
FROM [csv].R GROUP BY t AS tb, k
"""


@pytest.fixture(scope="module")
def split_files(files):
    d, rows = files
    (d / "split.def").write_text(SPLIT_DEFS)
    (d / "split_hfta.cc").write_text(SPLIT_HFTA)
    (d / "split_lfta.c").write_text(SPLIT_LFTA)
    (d / "split.gsql").write_text(SPLIT_QUERY)
    want = defaultdict(list)
    for t, k, _, _ in rows:
        want[(t, k)].append(k + t)
    ref = sorted((t, k, sum(v) / len(v), sum(v), len(v)) for (t, k), v in want.items())
    return d, ref


def _split_compile(d, **kw):
    return gsqlc.compile([d / "split.gsql"], schema=d / "schema.txt", functions=d / "split.def",
                         udf=[d / "split_hfta.cc", d / "split_lfta.c"], **kw)


def test_split_aggregate_runs_its_sub_aggregate_in_the_lfta(split_files):
    d, ref = split_files
    qs = _split_compile(d)
    text = qs.explain()
    lfta, hfta = text.split("[HFTA]")
    assert "sub-aggregate" in lfta and "avg_lfta((k + t))" in lfta and "csum_lfta((k + t))" in lfta
    assert "super-aggregate of the LFTA partials" in hfta
    run = qs.run({"csv": f"csv:{d / 'in.csv'}"})
    got = sorted(tuple(r.values()) for r in run.to_arrow().to_pylist())
    assert [g[:2] + g[3:] for g in got] == [r[:2] + r[3:] for r in ref]
    assert [g[2] for g in got] == pytest.approx([r[2] for r in ref])
    # FLUSHME: a csum group leaves the LFTA every 3 records, so the LFTA
    # sends at least a third of the records as partials
    lfta_out = next(s["tuples"] for s in run.stats["streams"] if s["name"] == "_fta_sp")
    assert lfta_out >= sum(-(-n // 3) for *_, n in ref)


def test_split_aggregate_with_a_small_colliding_table(split_files, gsqlc, tmp_path):
    """Collisions eject groups whose scratchpads are still a first record's
    arguments: their output starts them; the answer does not change."""
    d, ref = split_files
    p = gsqlc("run", d / "split.gsql", "--schema", d / "schema.txt", "--functions",
              d / "split.def", "--udf", d / "split_hfta.cc", "--udf", d / "split_lfta.c",
              "--source", f"csv=csv:{d / 'in.csv'}", "--format", "csv")
    assert p.returncode == 0, p.err
    (tmp_path / "small.gsql").write_text(SPLIT_QUERY.replace(
        "query_name 'sp';", "query_name 'sp'; lfta_table_size '2';"))
    q = gsqlc("run", tmp_path / "small.gsql", "--schema", d / "schema.txt", "--functions",
              d / "split.def", "--udf", d / "split_hfta.cc", "--udf", d / "split_lfta.c",
              "--source", f"csv=csv:{d / 'in.csv'}", "--format", "csv")
    assert q.returncode == 0, q.err
    assert sorted(q.out.splitlines()) == sorted(p.out.splitlines())
    assert len(p.out.splitlines()) == len(ref) + 1


@pytest.mark.slow
def test_sanitized_run_of_a_split_aggregate(split_files, tmp_path):
    d, ref = split_files
    runner = build_sanitized([d / "split.gsql", "--schema", d / "schema.txt", "--functions",
                             d / "split.def", "--udf", d / "split_hfta.cc", "--udf",
                             d / "split_lfta.c"], tmp_path / "build")
    r = run_sanitized(runner, "--source", f"csv=csv:{d / 'in.csv'}", "--output", "sp")
    assert r.returncode == 0, r.stderr[-3000:]
    assert len(r.stdout.splitlines()) == len(ref)


SFUN_DEFS = """\
fstring8 STATE subset_sum_state;
BOOL SFUN nssample subset_sum_state (UINT, UINT);
"""

SFUN_SOURCE = r"""
#include "hfta_udaf.h"
// the manual's static subset-sum sampling (section 12.4): a tuple is sampled
// when its size passes z, or when the small sizes accumulated pass z
struct subset_sum { gs_uint64_t count; };
void _sfun_state_clean_init_subset_sum_state(void *s) { ((subset_sum *)s)->count = 0; }
void _sfun_state_destroy_subset_sum_state(void *s) { (void)s; }
gs_uint32_t nssample(void *s, int curr_num_samples, gs_uint32_t x, gs_uint32_t z) {
    (void)curr_num_samples;
    subset_sum *st = (subset_sum *)s;
    if (x > z) return 1;
    st->count += x;
    if (st->count > z) { st->count -= z; return 1; }
    return 0;
}
"""


def test_stateful_function_in_a_selection(tmp_path, gsqlc):
    """The manual's static subset-sum sampling (12.4.3): SELECT ... WHERE
    nssample(len, 100) = TRUE, its state kept for the query's run."""
    (tmp_path / "schema.txt").write_text(SCHEMA)
    (tmp_path / "s.def").write_text(SFUN_DEFS)
    (tmp_path / "s.cc").write_text(SFUN_SOURCE)
    rng = random.Random(21)
    rows = [(i // 50, rng.randrange(3), 1.0, "x") for i in range(2000)]
    lens = [rng.choice([20, 40, 60, 150, 300]) for _ in rows]
    (tmp_path / "in.csv").write_text("".join(f"{t},{n},{v},{s}\n" for (t, _, v, s), n
                                             in zip(rows, lens)))
    (tmp_path / "q.gsql").write_text("SELECT t, k AS len FROM [csv].R "
                                     "WHERE nssample(k, 100) = TRUE\n")
    p = gsqlc("run", tmp_path / "q.gsql", "--schema", tmp_path / "schema.txt",
              "--functions", tmp_path / "s.def", "--udf", tmp_path / "s.cc",
              "--source", f"csv=csv:{tmp_path / 'in.csv'}", "--format", "csv")
    assert p.returncode == 0, p.err
    count, want = 0, []
    for (t, *_), n in zip(rows, lens):
        if n > 100:
            want.append(f"{t},{n}")
            continue
        count += n
        if count > 100:
            count -= 100
            want.append(f"{t},{n}")
    assert p.out.splitlines() == ["t,len", *want]
    assert 0 < len(want) < len(rows)
