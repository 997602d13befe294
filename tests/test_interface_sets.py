"""Interface sets are bound at run time: ONE compiled query set (one build)
runs over a set of 1, 2 or 3 members -- CSV files, pcaps and Arrow data --
and each answer equals the CLI's `gsqlc run` with the same --source
bindings; a TOML [set.NAME] names its members and gives one a max_skew."""
from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

import gsqlc as G
from gsqlc.resources import cache_root

SCHEMA = """
PROTOCOL LINK {
    uint    ts      get_csv_uint_pos1 (increasing, required);
    uint    host    get_csv_uint_pos2;
    uint    bytes   get_csv_uint_pos3;
}
"""
QUERIES = """
DEFINE { query_name 'ifsets_rows'; }
select ts, host, bytes from [links].LINK where bytes > 100;

DEFINE { query_name 'ifsets_per10'; }
select tb, host, sum(bytes) as total, count(*) as n from [links].LINK
group by ts/10 as tb, host;
"""
COLS = ["ts", "host", "bytes"]


def _link(path: Path, seed: int, n: int) -> Path:
    rng = random.Random(seed)
    ts = 1_700_000_000
    rows = []
    for _ in range(n):
        ts += rng.randint(0, 3)
        rows.append(f"{ts},{rng.randint(1, 5)},{rng.randint(0, 1500)}\n")
    path.write_text("".join(rows))
    return path


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    d = tmp_path_factory.mktemp("ifsets")
    (d / "schema.txt").write_text(SCHEMA)
    (d / "q.gsql").write_text(QUERIES)
    links = [_link(d / f"l{i}.csv", seed=i, n=300 + 50 * i) for i in range(3)]
    return d, links


def _builds() -> set[Path]:
    """The query-set builds in the cache (not the runtime archive)."""
    root = cache_root()
    return {p for p in root.iterdir() if p.is_dir() and not p.name.startswith("runtime-")} \
        if root.exists() else set()


def _ours(builds: set[Path]) -> list[Path]:
    return [b for b in sorted(builds) if (b / "src" / "queryset.c").exists()
            and "ifsets_rows" in (b / "src" / "queryset.c").read_text()]


def _cli(gsqlc_cli, d: Path, query: str, *args) -> list[dict]:
    p = gsqlc_cli("run", d / "q.gsql", "--schema", d / "schema.txt", "--output", query,
                  "--format", "jsonl", *args)
    assert p.returncode == 0, p.err
    return [json.loads(line) for line in p.out.splitlines()]


def _api(cqs, query: str, sources, **kw) -> list[dict]:
    return cqs.table(sources, query, **kw).to_pylist()


def _key(rows: list[dict]) -> list[tuple]:
    return sorted(tuple(sorted(r.items())) for r in rows)


def test_one_build_serves_every_binding(gsqlc, setup):
    d, links = setup
    before = _builds()
    cqs = gsqlc_compile(d)
    lib = cqs.library
    st = lib.stat()
    after_compile = _ours(_builds())
    csv = [f"csv:{p}" for p in links]
    arrow_b = pacsv.read_csv(str(links[1]), read_options=pacsv.ReadOptions(column_names=COLS),
                             convert_options=pacsv.ConvertOptions(
                                 column_types={c: pa.uint32() for c in COLS}))
    cases = [
        ("one member", {"links": [csv[0]]}, csv[:1]),
        ("two members", {"links": csv[:2]}, csv[:2]),
        ("three members", {"links": csv}, csv),
        ("an Arrow member", {"links": [csv[0], arrow_b, csv[2]]}, csv),
    ]
    for what, sources, cli_uris in cases:
        cli_args = [a for u in cli_uris for a in ("--source", f"links={u}")]
        for query in ("ifsets_rows", "ifsets_per10"):
            got = _api(cqs, query, sources)
            want = _cli(gsqlc, d, query, *cli_args)
            assert _key(got) == _key(want), (what, query)
            if query == "ifsets_rows":
                # the members' rows merged in the order of ts
                assert [r["ts"] for r in got] == sorted(r["ts"] for r in got), what
                n = sum(1 for u in cli_uris for line in Path(u[4:]).read_text().splitlines()
                        if int(line.split(",")[2]) > 100)
                assert len(got) == n, what
    run = cqs.run({"links": csv}, "ifsets_rows")
    list(run)
    names = {n["name"]: n for n in run.stats["nodes"]}
    assert {"ifsets_rows@links.0", "ifsets_rows@links.1", "ifsets_rows@links.2",
            "ifsets_rows"} <= set(names)
    assert names["ifsets_rows"]["kind"] == "hfta"
    assert names["ifsets_rows@links.2"]["output"] == "ifsets_rows@links.2"
    # one build: the library was neither rebuilt nor replaced, and the cache
    # holds one build of this query set (the CLI's runs found it too)
    assert cqs.library == lib
    st2 = lib.stat()
    assert (st2.st_ino, st2.st_mtime_ns) == (st.st_ino, st.st_mtime_ns)
    root = lib.parent.parent
    assert set(_ours(_builds() - before)) <= {root}     # no build but the compile's
    assert root in _ours(_builds())
    assert after_compile == _ours(_builds())             # the CLI's runs found it too
    assert not hasattr(cqs, "compiled_for")


def gsqlc_compile(d: Path):
    return G.compile(d / "q.gsql", d / "schema.txt")


def test_toml_set_with_named_members_and_a_skew(gsqlc, setup, tmp_path):
    d, links = setup
    toml = tmp_path / "ifaces.toml"
    toml.write_text(f'[interface.main0]\nsource = "csv:{links[0]}"\nmax_skew = 1.5\n'
                    f'[interface.main1]\nsource = "csv:{links[2]}"\n'
                    '[set.links]\nmembers = ["main0", "main1"]\n')
    cqs = G.compile(d / "q.gsql", d / "schema.txt", interfaces=toml)
    assert cqs.library == gsqlc_compile(d).library   # the file binds; it builds nothing
    answers = {}
    for query in ("ifsets_rows", "ifsets_per10"):
        run = cqs.run(None, query)
        got = answers[query] = [r for b in run for r in b.to_pylist()]
        want = _cli(gsqlc, d, query, "--interfaces", toml)
        assert _key(got) == _key(want), query
        assert "max_skew" not in run.report, run.report   # main0's skew is read
        names = {n["name"] for n in run.stats["nodes"]}
        lfta = "ifsets_rows" if query == "ifsets_rows" else "_fta_ifsets_per10"
        assert {f"{lfta}@main0", f"{lfta}@main1", lfta} <= names
    both = _cli(gsqlc, d, "ifsets_rows", "--source", f"links=csv:{links[0]}",
                "--source", f"links=csv:{links[2]}")
    assert _key(both) == _key(answers["ifsets_rows"])   # the names do not matter


def test_set_over_an_lfta_without_temporal_column(gsqlc, setup, tmp_path):
    d, links = setup
    q = tmp_path / "nt.gsql"
    q.write_text("DEFINE { query_name 'hosts'; }\nselect host from [links].LINK")
    cqs = G.compile(q, d / "schema.txt")
    assert len(cqs.table({"links": [f"csv:{links[0]}"]})) == 300   # one member: fine
    with pytest.raises(G.UsageError, match=r"reads the interface set \[links\], whose "
                       "members' outputs are merged in temporal order, but its LFTA outputs "
                       "no temporal column to merge on"):
        cqs.table({"links": [f"csv:{p}" for p in links[:2]]})
    p = gsqlc("run", q, "--schema", d / "schema.txt", "--source", f"links=csv:{links[0]}",
              "--source", f"links=csv:{links[1]}")
    assert p.returncode == 2 and "no temporal column to merge on" in p.err, p.err


def test_explain_and_compile_accept_interfaces(gsqlc, setup, tmp_path):
    d, links = setup
    toml = tmp_path / "i.toml"
    toml.write_text('[set.links]\nmembers = ["a", "b"]\n')
    ex = gsqlc("explain", d / "q.gsql", "--schema", d / "schema.txt", "--interfaces", toml)
    assert ex.returncode == 0, ex.err
    assert "reads interface links" in ex.out
    assert "runs once per member" in ex.out and "merges the LFTAs of interface set [links]" \
        in ex.out
    assert "gsq::merge_op" not in ex.out   # no merge node in the plan
    plain = gsqlc("explain", d / "q.gsql", "--schema", d / "schema.txt")
    assert plain.out == ex.out
    bad = tmp_path / "bad.toml"
    bad.write_text("[set.links]\nmembers = 3\n")
    p = gsqlc("explain", d / "q.gsql", "--schema", d / "schema.txt", "--interfaces", bad)
    assert p.returncode == 2 and "members" in p.err, p.err
    assert os.environ.get("GSQLC_CACHE_DIR")


def test_a_bound_given_for_a_set_holds_for_each_member_in_the_runner(tmp_path):
    """gsqlc-run: --option out_of_order:SET=S (and skew:SET:X) holds for every
    member of SET that has no bound of its own, as the command line's
    expansion does: rows out of order within the bound are all counted."""
    import subprocess
    import sys
    rng = random.Random(9)
    srcs = []
    for k in range(2):
        p = tmp_path / f"m{k}.csv"
        rows = [max(1000, 1000 + i // 10 - rng.choice([0, 0, 0, 1, 2, 3])) for i in range(3000)]
        p.write_text("".join(f"{t},{k},100\n" for t in rows))
        srcs += ["--source", f"links=csv:{p}"]
    schema, q = tmp_path / "schema.txt", tmp_path / "q.gsql"
    schema.write_text(SCHEMA)
    q.write_text("DEFINE { query_name 'n10'; }\n"
                 "select tb, count(*) as n from [links].LINK group by ts/10 as tb")
    out = tmp_path / "out"
    c = subprocess.run([sys.executable, "-m", "gsqlc", "compile", str(q), "--schema", str(schema),
                        "-o", str(out), "--build"], capture_output=True, text=True)
    assert c.returncode == 0, c.stderr

    def run(*opts):
        p = subprocess.run([str(out / "build" / "gsqlc-run"), *srcs, "--output", "n10",
                            *opts, "--stats"], capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        st = json.loads(p.stderr[p.stderr.index("{"):])
        return sum(int(l.split("|")[1]) for l in p.stdout.split()), st

    counted, st = run("--option", "out_of_order:links=3")
    srcs_st = {s["iface"]: s for s in st["sources"]}
    assert srcs_st["links.0"]["time"]["bounds_to"]["links.0"] == [[0, 3_000_000]]
    assert srcs_st["links.1"]["time"]["bounds_to"]["links.1"] == [[0, 3_000_000]]
    assert counted == 6000
    assert all(s["time"]["dropped_below_heartbeat"] == 0 for s in st["sources"])
    # a member's own bound wins over its set's: too small, its rows are dropped
    counted, st = run("--option", "out_of_order:links=3", "--option", "out_of_order:links.1=0")
    drops = {s["iface"]: s["time"]["dropped_below_heartbeat"] for s in st["sources"]}
    assert drops["links.0"] == 0 and drops["links.1"] > 0
    assert counted + drops["links.1"] == 6000
