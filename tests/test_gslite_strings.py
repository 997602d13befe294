"""GS-lite's HFTA-only string functions built into gsqlc (issue 12, part 5):
to_hex_string(s) (two lower-case hex digits a byte) and
int_to_string_map(x, 'file') (the value a map file of KEY,VALUE lines gives
x, read once when the query starts; empty for a missing key).  Both return
new strings, each call site into storage of its own in the HFTA functor
(hfta_templates/string_fns.hpp): two calls in one SELECT, in a group key
and in HAVING are checked against Python references over many tuples of
varying lengths; a missing or malformed map file is a run error naming it;
a non-constant file a located error; one run under ASan/UBSan."""
from __future__ import annotations

import random
from collections import defaultdict

import pytest

from conftest import build_sanitized, run_sanitized

SCHEMA = """
PROTOCOL R {
    uint   t  get_csv_uint_pos1 (increasing, required);
    int    i  get_csv_int_pos2;
    string s  get_csv_string_pos3;
    ullong u  get_csv_ullong_pos4;
    string w  get_csv_string_pos5;
}
"""

ALPHABET = "abcxyz0189-_.~"


def make_rows(n=3000, seed=9):
    rng = random.Random(seed)
    rows = []
    for k in range(n):
        s = "".join(rng.choice(ALPHABET) for _ in range(rng.choice([0, 1, 3, 8, 40])))
        w = "".join(rng.choice(ALPHABET) for _ in range(rng.randrange(0, 6)))
        rows.append((k // 100, rng.randrange(-6, 12), s,
                     rng.choice([0, 3, 7, 11, 2**64 - 1, 2**63]), w))
    return rows


# map A: keys -5..9 some missing, a later line winning, blanks, values cut at
# the first blank; map B: the integers' 64-bit images
MAP_A = ("1,one\n2, two  extra\n\n-5,minus_five\n3,three\n7,seven\n9,nine\n3,THREE\n"
         "  4,four\r\n")
MAP_B = "-1,all_ones\n-9223372036854775808,top_bit\n7,u_seven\n"


def read_map(text):
    out = {}
    for line in text.split("\n"):
        if not line.strip():
            continue
        key, value = line.split(",", 1)
        v = value.lstrip(" \t\r")
        out[int(key)] = v.split()[0] if v.split() else ""
    return out


def signed64(x):
    return x - 2**64 if x >= 2**63 else x


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("gsl_strings")
    (d / "schema.txt").write_text(SCHEMA)
    (d / "a.map").write_text(MAP_A)
    (d / "b.map").write_text(MAP_B)
    rows = make_rows()
    (d / "in.csv").write_text("".join(",".join(map(str, r)) + "\n" for r in rows))
    return d, rows


def run(gsqlc, d, text, tmp_path):
    (tmp_path / "q.gsql").write_text(text)
    return gsqlc("run", tmp_path / "q.gsql", "--schema", d / "schema.txt",
                 "--source", f"csv=csv:{d / 'in.csv'}", "--format", "csv")


def rows_of(p):
    assert p.returncode == 0, p.err
    return [line.split(",") for line in p.out.splitlines()[1:]]


def test_two_calls_of_each_in_one_select(files, gsqlc, tmp_path):
    d, rows = files
    got = rows_of(run(gsqlc, d, (
        "SELECT t, to_hex_string(s) AS h1, to_hex_string(w) AS h2,\n"
        f"       int_to_string_map(i, '{d / 'a.map'}') AS m1,\n"
        f"       int_to_string_map(u, '{d / 'b.map'}') AS m2,\n"
        f"       int_to_string_map(i, '{d / 'b.map'}') AS m3\n"
        "FROM [csv].R WHERE str_length(to_hex_string(s)) >= 0\n"), tmp_path))
    a, b = read_map(MAP_A), read_map(MAP_B)
    assert a[3] == "THREE" and a[2] == "two" and a[4] == "four" and 5 not in a
    want = [[str(t), s.encode().hex(), w.encode().hex(), a.get(i, ""),
             b.get(signed64(u), ""), b.get(i, "")] for t, i, s, u, w in rows]
    assert got == want
    assert {r[3] for r in got} >= {"", "one", "THREE", "minus_five"}
    assert {r[4] for r in got} == {"", "all_ones", "top_bit", "u_seven"}


def test_in_group_key_aggregate_and_having(files, gsqlc, tmp_path):
    d, rows = files
    got = rows_of(run(gsqlc, d, (
        "SELECT tb, hw, count(*) AS n, int_to_string_map(min(i), "
        f"'{d / 'a.map'}') AS m, CAT_aggr('|', to_hex_string(str_truncate(s, 2))) AS cat\n"
        "FROM [csv].R GROUP BY t AS tb, to_hex_string(w) AS hw\n"
        "HAVING to_hex_string(hw) <> '' AND count(*) > 1\n"), tmp_path))
    a = read_map(MAP_A)
    groups = defaultdict(list)
    for t, i, s, _u, w in rows:
        groups[(t, w.encode().hex())].append((i, s))
    want = sorted([str(t), hw, str(len(g)), a.get(min(i for i, _ in g), ""),
                   "|".join(s[:2].encode().hex() for _, s in g)]
                  for (t, hw), g in groups.items() if hw and len(g) > 1)
    assert sorted(got) == want


def test_map_file_errors(files, gsqlc, tmp_path):
    d, _ = files
    p = run(gsqlc, d, f"SELECT t, int_to_string_map(i, '{d / 'none.map'}') AS m FROM [csv].R\n",
            tmp_path)
    assert p.returncode != 0
    assert f"cannot read the map file {d / 'none.map'}" in p.err
    (d / "bad.map").write_text("1,one\n2;two\n")
    p = run(gsqlc, d, f"SELECT t, int_to_string_map(i, '{d / 'bad.map'}') AS m FROM [csv].R\n",
            tmp_path)
    assert p.returncode != 0
    assert f"the map file {d / 'bad.map'}, line 2: expected KEY,VALUE" in p.err
    p = run(gsqlc, d, "SELECT t, int_to_string_map(i, s) AS m FROM [csv].R\n", tmp_path)
    assert p.returncode != 0
    assert "constant-required" in p.err and "argument 2 of int_to_string_map" in p.err
    assert "q.gsql:1:" in p.err


@pytest.mark.slow
def test_sanitized_string_functions(files, tmp_path):
    d, rows = files
    (tmp_path / "q.gsql").write_text(
        "DEFINE { query_name 'hx'; }\n"
        "SELECT t, to_hex_string(s) AS h1, to_hex_string(w) AS h2, "
        f"int_to_string_map(i, '{d / 'a.map'}') AS m FROM [csv].R\n")
    runner = build_sanitized([tmp_path / "q.gsql", "--schema", d / "schema.txt"],
                             tmp_path / "build")
    r = run_sanitized(runner, "--source", f"csv=csv:{d / 'in.csv'}", "--output", "hx")
    assert r.returncode == 0, r.stderr[-3000:]
    assert len(r.stdout.strip().splitlines()) >= len(rows)
