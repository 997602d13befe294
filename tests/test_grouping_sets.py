"""CUBE, ROLLUP and GROUPING_SETS (issue 12, part 3; Tigon SQL User Manual
§6.2.11.2): a record updates one group per grouping pattern, group-by
variables outside the pattern hold their type's default value; run through
the CLI and the Python API and compared with a reference written from the
manual's definition."""
from __future__ import annotations

import itertools
import random
from collections import defaultdict

import pyarrow as pa
import pytest

import gsqlc

SCHEMA = """
PROTOCOL R {
    uint   t get_csv_uint_pos1 (increasing, required);
    IP     a get_csv_ip_pos2;
    uint   b get_csv_uint_pos3;
    string c get_csv_string_pos4;
    IPV6   d get_csv_ipv6_pos5;
    uint   v get_csv_uint_pos6;
}
"""
DEFAULTS = {"a": "0.0.0.0", "b": 0, "c": "", "d": "0000:0000:0000:0000:0000:0000:0000:0000"}


def make_rows(n=600, seed=3):
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        rows.append({"t": i // 50, "a": rng.choice(["10.0.0.1", "10.0.0.2", "192.168.0.9"]),
                     "b": rng.choice([1, 2, 3, 7]), "c": rng.choice(["x", "yy", "zzz"]),
                     "d": rng.choice(["2001:0db8:0000:0000:0000:0000:0000:0001",
                                      "fe80:0000:0000:0000:0000:0000:0000:0002"]),
                     "v": rng.randrange(100)})
    return rows


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("gsets")
    (d / "schema.txt").write_text(SCHEMA)
    rows = make_rows()
    (d / "in.csv").write_text("".join(f"{r['t']},{r['a']},{r['b']},{r['c']},{r['d']},{r['v']}\n"
                                      for r in rows))
    return d, rows


def reference(rows, patterns, tb_width=2):
    """{(tb, *vars): (count, sum v)} over the patterns (each a set of the
    variables present), the others at their default."""
    names = ["a", "b", "c", "d"]
    out = defaultdict(lambda: [0, 0])
    for r in rows:
        for p in patterns:
            k = (r["t"] // tb_width, *[r[n] if n in p else DEFAULTS[n] for n in names])
            out[k][0] += 1
            out[k][1] += r["v"]
    return sorted((*k, c, s) for k, (c, s) in out.items())


def run(data, group_by, tmp_path):
    d, _ = data
    q = tmp_path / "q.gsql"
    q.write_text("DEFINE { query_name 'g'; }\n"
                 "SELECT tb, a, b, c, d, count(*) AS n, sum(v) AS s FROM [csv].R\n"
                 f"GROUP BY t/2 AS tb, {group_by}\n")
    qs = gsqlc.compile([q], schema=d / "schema.txt")
    t = qs.table({"csv": f"csv:{d / 'in.csv'}"})
    return sorted(tuple(r.values()) for r in t.to_pylist()), qs


def subsets(names):
    return [set(c) for k in range(len(names), -1, -1) for c in itertools.combinations(names, k)]


@pytest.mark.parametrize("group_by, patterns", [
    ("Cube(a, b), c, d", [p | {"c", "d"} for p in subsets(["a", "b"])]),
    ("ROLLUP(a, b, c), d", [{"a", "b", "c", "d"}, {"a", "b", "d"}, {"a", "d"}, {"d"}]),
    ("grouping_sets((a, b), (c), ()), d", [{"a", "b", "d"}, {"c", "d"}, {"d"}]),
    # the manual's mixture: 4 x 3 patterns
    ("cube(a, b), ROLLUP(c, d)", [p | q for p in subsets(["a", "b"])
                                  for q in ({"c", "d"}, {"c"}, set())]),
])
def test_patterns_equal_the_manuals_definition(data, tmp_path, group_by, patterns):
    got, qs = run(data, group_by, tmp_path)
    assert got == reference(data[1], patterns)
    assert len(qs.queries) == len(patterns) + 1     # a query per pattern and their merge


def test_cli_and_explain(data, tmp_path, gsqlc):
    d, rows = data
    q = tmp_path / "q.gsql"
    q.write_text("DEFINE { query_name 'per_a'; }\n"
                 "SELECT tb, a, count(*) AS n FROM [csv].R\n"
                 "GROUP BY t/2 AS tb, ROLLUP(a)\nHAVING count(*) > 10\n")
    p = gsqlc("run", q, "--schema", d / "schema.txt", "--source", f"csv={d / 'in.csv'}")
    assert p.returncode == 0, p.err
    want = defaultdict(int)
    for r in rows:
        want[(r["t"] // 2, r["a"])] += 1
        want[(r["t"] // 2, "0.0.0.0")] += 1
    assert sorted(p.out.splitlines()) == sorted(f"{tb}|{a}|{n}" for (tb, a), n in want.items()
                                                if n > 10)
    ex = gsqlc("explain", q, "--schema", d / "schema.txt")
    assert ex.returncode == 0, ex.err
    assert "[LFTA] _fta_per_a__gs0" in ex.out and "[LFTA] _fta_per_a__gs1" in ex.out
    assert "a := IP_VAL '0.0.0.0'" in ex.out or "a := 0.0.0.0" in ex.out, ex.out


@pytest.mark.parametrize("group_by, rule, where", [
    ("Cube(a, b), rollup(b, c)", "grouping-sets", "appears in two entries"),
    ("Cube(a, b + 1)", "grouping-sets", "needs a name"),
    ("Cube(a, b, c, d), Cube(t % 2 AS e, v, t % 3 AS f, t % 5 AS g, t % 7 AS h)",
     "grouping-sets", "at most 256"),
])
def test_errors_are_located(data, tmp_path, group_by, rule, where):
    d, _ = data
    q = tmp_path / "bad.gsql"
    q.write_text("DEFINE { query_name 'g'; }\nSELECT tb, count(*) FROM [csv].R\n"
                 f"GROUP BY t/2 AS tb, {group_by}\n")
    with pytest.raises(gsqlc.QueryError) as e:
        gsqlc.compile([q], schema=d / "schema.txt")
    assert e.value.rule == rule and where in e.value.message
    assert e.value.file == str(q) and e.value.line == 3


def test_no_temporal_variable_outside_the_patterns(data, tmp_path):
    d, _ = data
    q = tmp_path / "bad.gsql"
    q.write_text("DEFINE { query_name 'g'; }\nSELECT a, count(*) FROM [csv].R\n"
                 "GROUP BY t/2 AS tb, Cube(a)\n")
    with pytest.raises(gsqlc.QueryError, match="temporal group-by variable") as e:
        gsqlc.compile([q], schema=d / "schema.txt")
    assert e.value.rule == "grouping-sets"


def test_over_packets_from_python(tmp_path):
    """The manual's example shape over the bundled capture, as Arrow."""
    from conftest import REPO
    q = tmp_path / "cube.gsql"
    q.write_text("DEFINE { query_name 'cube_counts'; }\n"
                 "SELECT tb, srcIP, destPort, count(*) AS cnt FROM IPV4\n"
                 "GROUP BY time/60 AS tb, Cube(srcIP, destPort)\n")
    qs = gsqlc.compile([q])
    t = qs.table({"eth0": f"pcap:{REPO / 'examples' / 'trace.pcap'}"})
    pk = gsqlc.read_pcap(REPO / "examples" / "trace.pcap")
    pk = pk.filter(pa.compute.and_(pa.compute.equal(pk["ipversion"], 4),
                                   pa.compute.is_valid(pk["destPort"])))
    want = defaultdict(int)
    for r in pk.select(["time", "srcIP", "destPort"]).to_pylist():
        for p in subsets(["srcIP", "destPort"]):
            want[(r["time"] // 60, r["srcIP"] if "srcIP" in p else "0.0.0.0",
                  r["destPort"] if "destPort" in p else 0)] += 1
    assert sorted(tuple(r.values()) for r in t.to_pylist()) == \
        sorted((*k, n) for k, n in want.items())
