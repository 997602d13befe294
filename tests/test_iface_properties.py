"""Interface properties in queries (issue 12, part 6; Tigon SQL User Manual
4.1.7): @Name, @Host and the properties an interfaces file gives an
interface or a set of them, read by the LFTA over each member as a string."""
from __future__ import annotations

import random

import pytest

import gsqlc

SCHEMA = """
PROTOCOL R {
    uint t get_csv_uint_pos1 (increasing, required);
    uint k get_csv_uint_pos2;
}
"""


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("props")
    (d / "schema.txt").write_text(SCHEMA)
    rng = random.Random(3)
    data = {}
    for name in ("a", "b", "c"):
        rows = [(i // 10, rng.randrange(4)) for i in range(60)]
        (d / f"{name}.csv").write_text("".join(f"{t},{k}\n" for t, k in rows))
        data[name] = rows
    (d / "ifaces.toml").write_text(f"""
[interface.a]
source = "csv:{d / 'a.csv'}"
properties = {{ Dir = "in", Class = "gold" }}

[interface.b]
source = "csv:{d / 'b.csv'}"
properties = {{ Dir = "out", Host = "probe7" }}

[interface.c]
source = "csv:{d / 'c.csv'}"
properties = {{ Dir = "in" }}

[set.links]
members = ["a", "b", "c"]
properties = {{ Class = "silver" }}
""")
    return d, data


def test_properties_in_a_selection_and_a_grouping(files, gsqlc, tmp_path):
    d, data = files
    (tmp_path / "q.gsql").write_text(
        "DEFINE { query_name 'sel'; }\n"
        "SELECT t, k, @Name AS iface, @Dir AS dir, @Class AS cls, @Host AS host\n"
        "FROM [links].R WHERE k = 1;\n"
        "DEFINE { query_name 'per_dir'; }\n"
        "SELECT tb, dir, count(*) AS n FROM [links].R GROUP BY t/100 AS tb, @Dir AS dir\n")
    props = {"a": ("in", "gold", "localhost"), "b": ("out", "silver", "probe7"),
             "c": ("in", "silver", "localhost")}
    p = gsqlc("run", tmp_path / "q.gsql", "--schema", d / "schema.txt",
              "--interfaces", d / "ifaces.toml", "--output", "sel", "--format", "csv")
    assert p.returncode == 0, p.err
    want = sorted(f"{t},{k},{m},{','.join(props[m])}" for m, rows in data.items()
                  for t, k in rows if k == 1)
    assert sorted(p.out.splitlines()[1:]) == want
    # (one epoch: the members are read one after another, and a member's
    # epochs behind the others' by more than the disorder would be late)
    qs = gsqlc_api_compile(tmp_path / "q.gsql", d)
    t = qs.table(output="per_dir")
    counts: dict = {}
    for m, rows in data.items():
        for t_, _ in rows:
            counts[(t_ // 100, props[m][0])] = counts.get((t_ // 100, props[m][0]), 0) + 1
    assert sorted((r["tb"], r["dir"], r["n"]) for r in t.to_pylist()) == \
        sorted((tb, dr, n) for (tb, dr), n in counts.items())


def gsqlc_api_compile(q, d):
    return gsqlc.compile([q], schema=d / "schema.txt", interfaces=d / "ifaces.toml")


def test_a_missing_property_fails_the_run_naming_it(files, gsqlc, tmp_path):
    d, _ = files
    (tmp_path / "q.gsql").write_text("SELECT t, @Class AS c FROM [links].R\n")
    (tmp_path / "i.toml").write_text((d / "ifaces.toml").read_text().replace(
        'properties = { Class = "silver" }', ""))
    p = gsqlc("run", tmp_path / "q.gsql", "--schema", d / "schema.txt",
              "--interfaces", tmp_path / "i.toml")
    assert p.returncode != 0
    assert "interface b has no property Class (@Class in the query)" in p.err, p.err


def test_property_errors_are_located(files, gsqlc, tmp_path):
    d, _ = files
    (tmp_path / "q.gsql").write_text(
        "DEFINE { query_name 'base'; }\nSELECT t, k FROM [links].R;\n"
        "DEFINE { query_name 'up'; }\nSELECT t, @Name AS n FROM base\n")
    p = gsqlc("explain", tmp_path / "q.gsql", "--schema", d / "schema.txt")
    assert p.returncode != 0
    assert f"{tmp_path / 'q.gsql'}:4:11: error [interface-property]" in p.err, p.err
    (tmp_path / "bad.toml").write_text('[interface.a]\nsource = "csv:x"\nproperties = 3\n')
    (tmp_path / "s.gsql").write_text("SELECT t, @Dir AS d FROM R\n")
    p = gsqlc("run", tmp_path / "s.gsql", "--schema", d / "schema.txt",
              "--interfaces", tmp_path / "bad.toml")
    assert p.returncode != 0
    assert "[interface.a]: properties must be a table of names to strings" in p.err, p.err
