"""Issue 11 (seed 002, Srivastava & Widom): heartbeats generated from time
bounds, given or estimated -- runtime_c/core/heartbeat_gen.c.

Captures from bench/pktgen.py written in order of arrival: link 0 (sources
10/8) on time, link 1 (11/8) `delay` seconds late, so the interface's
records trail its largest timestamp by the delay.  Replayed with the
default flags: the data clock, and a source with generated heartbeats read
in time (rounds of a quantum of its time, so that its arrivals meet the
generator at their own instants).  Every record is either counted by the query or dropped at
the input and counted per source, so `counted + dropped == sent` holds in
every run; the bounds the generator used are in --stats.
"""
from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from conftest import REPO

sys.path.insert(0, str(REPO / "bench"))
import pktgen  # noqa: E402

START = 1_700_000_000
PER10 = "DEFINE { query_name 'per10'; }\nselect tb, count(*) as cnt from IPV4 group by time/10 as tb\n"
N = 4000    # packets per link, 100 pps: 40 s


def _stats(err: str) -> dict:
    return json.loads(err[err.index("{\n"):])


def _run(gsqlc, q, *args):
    p = gsqlc("run", q, "--heartbeat-interval", "0.1",
              "--stats", *args)
    assert p.returncode == 0, p.err
    st = _stats(p.err)
    counted = sum(int(line.split("|")[1]) for line in p.out.split())
    return counted, st


def _counts_per_interface(names: str) -> str:
    """One 10 s count per interface, query n_X reading [X].IPV4."""
    return "".join(f"DEFINE {{ query_name 'n_{x}'; }}\n"
                   f"select tb, count(*) as cnt from [{x}].IPV4 group by time/10 as tb;\n"
                   for x in names)


def _captures(d, packets: dict[str, int], seed: int) -> list[str]:
    """One capture per interface (packets[name] at 100 pps from START), as
    --source arguments."""
    args = []
    for i, (name, n) in enumerate(packets.items()):
        pcap = d / f"{name}.pcap"
        pktgen.generate(str(pcap), n, 50, pps=100, seed=seed + i, start=START, frag=0.0,
                        truth=False)
        args += ["--source", f"{name}=pcap:{pcap}"]
    return args


def _time(st, iface="default"):
    return next(s for s in st["sources"] if s["iface"] == iface)["time"]


@pytest.fixture(scope="module")
def spike(tmp_path_factory):
    """Link 1 is 1 s late, 4 s late for the packets stamped in [15, 20) s."""
    d = tmp_path_factory.mktemp("hbgen")
    pcap = d / "spike.pcap"
    pktgen.generate_arrivals(str(pcap), N, 50, pps=100, seed=3,
                             delays=[0.0, lambda t: np.where((t >= 15) & (t < 20), 4.0, 1.0)])
    q = d / "per10.gsql"
    q.write_text(PER10)
    return pcap, q


def test_given_bound_covering_the_spike_loses_nothing(gsqlc, spike):
    pcap, q = spike
    counted, st = _run(gsqlc, q, "--source", f"default=pcap:{pcap}", "--out-of-order",
                       "default=4.01")
    t = _time(st)
    assert counted == 2 * N and t["dropped_below_heartbeat"] == 0
    assert st["heartbeat_generator"]["estimate"] == "given"
    assert t["bounds_to"] == {"default": [[0, 4010000]]}
    assert t["heartbeat_lag_usec"] == 4010000


def test_estimators_count_the_spike_then_absorb_it(gsqlc, spike):
    """max keeps the worst skew it saw (4 s) for the rest of the run;
    adaptive lowers it again after `window` records within it.  Both drop
    the spike's first records (a heartbeat was issued before the spike was
    learnt: the seed's "generated too soon") and count them; the records
    after it are kept."""
    pcap, q = spike
    got = {}
    for est in ("max", "adaptive"):
        counted, st = _run(gsqlc, q, "--source", f"default=pcap:{pcap}",
                           "--heartbeats", f"estimate={est}", "--heartbeats", "window=300")
        t = _time(st)
        dropped = t["dropped_below_heartbeat"]
        assert counted + dropped == 2 * N, (est, counted, dropped)
        # the spike holds 500 records trailing by more than 1 s: some are
        # dropped, the rest arrive once the estimate covers them
        assert 0 < dropped < 500, (est, dropped)
        got[est] = t["bounds_to"]["default"][0][1]    # delta at t = 0
        assert st["heartbeat_generator"]["estimate"] == est
    assert got["max"] >= 3_900_000             # the spike, kept
    assert 900_000 <= got["adaptive"] <= 1_200_000   # back to the usual 1 s


def test_max_estimator_converges_on_a_known_skew(gsqlc, tmp_path):
    pcap = tmp_path / "late2.pcap"
    pktgen.generate_arrivals(str(pcap), N, 50, pps=100, seed=5, delays=[0.0, 2.0])
    q = tmp_path / "per10.gsql"
    q.write_text(PER10)
    counted, st = _run(gsqlc, q, "--source", f"default=pcap:{pcap}", "--heartbeats",
                       "estimate=max")
    t = _time(st)
    est = t["bounds_to"]["default"][0][1]
    assert 1_950_000 <= est <= 2_050_000, est
    # only the first records of the late link, before the skew was learnt
    assert counted + t["dropped_below_heartbeat"] == 2 * N
    assert t["dropped_below_heartbeat"] <= 2 * 100, t


def test_closure_gives_a_heartbeat_no_direct_bound_gives(gsqlc, tmp_path):
    """a -> b within 1 s and b -> c within 1 s: c is within 2 s of a (seed
    002 section 3.2), although no bound of a on c is declared.  b and c
    stop after 5 s; a goes on to 40 s, and c's heartbeat follows it."""
    q = tmp_path / "three.gsql"
    q.write_text(_counts_per_interface("abc"))
    src = _captures(tmp_path, {"a": N, "b": 500, "c": 500}, seed=10)
    _, st = _run(gsqlc, q, *src, "--skew", "a:b=0,1", "--skew", "b:c=0,1")
    gen = st["heartbeat_generator"]
    assert gen["pairs_from_closure"] >= 1
    a, c = _time(st, "a"), _time(st, "c")
    assert a["bounds_to"]["c"] == [[0, 2_000_000]]
    assert c["heartbeat_usec"] == a["max_usec"] - 2_000_000
    # what the direct bounds alone give c: its own data and b's less 1 s
    b = _time(st, "b")
    assert c["heartbeat_usec"] > max(c["max_usec"], b["max_usec"]) + 30_000_000
    # without b -> c there is no path: c keeps its own
    _, st = _run(gsqlc, q, *src, "--skew", "a:b=0,1")
    assert _time(st, "c")["heartbeat_usec"] == _time(st, "c")["max_usec"]
    assert st["heartbeat_generator"]["timeout_needed"] is True


def test_query_level_heartbeat_is_the_least(gsqlc, tmp_path):
    """hb_level=query (seed 002 7.1): every source is given the least
    heartbeat of all; operator level (default) each its own."""
    q = tmp_path / "two.gsql"
    q.write_text(_counts_per_interface("ab"))
    src = _captures(tmp_path, {"a": N, "b": 500}, seed=20)
    base = ["--out-of-order", "a=0.5", "--out-of-order", "b=0.5"]
    _, op = _run(gsqlc, q, *src, *base)
    _, qu = _run(gsqlc, q, *src, *base, "--heartbeats", "level=query")
    assert op["heartbeat_generator"]["level"] == "operator"
    assert qu["heartbeat_generator"]["level"] == "query"
    # a's promise: its own heartbeat at operator level, held to b's (which
    # stopped after 5 s) at query level
    a_op, a_qu = _time(op, "a")["issued_usec"], _time(qu, "a")["issued_usec"]
    assert a_op >= (START + 38) * 1_000_000
    assert a_qu <= (START + 6) * 1_000_000


def test_latency_delays_every_guarantee(gsqlc, tmp_path):
    """L_a = 1.5 s (seed 002 lemma 3.1): a record stamped T arrived at c
    promises T - delta only at c + 1.5 s -- the heartbeat trails the data by
    the latency on top of the bound."""
    pcap = tmp_path / "ontime.pcap"
    pktgen.generate_arrivals(str(pcap), N, 50, pps=100, seed=9, delays=[0.0])
    q = tmp_path / "per10.gsql"
    q.write_text(PER10)
    src = ("--source", f"default=pcap:{pcap}")
    counted, st = _run(gsqlc, q, *src, "--out-of-order", "default=0.5")
    lag = _time(st)["heartbeat_lag_usec"]
    assert counted == N and lag == 500_000
    counted, st = _run(gsqlc, q, *src, "--out-of-order", "default=0.5", "--latency",
                       "default=1.5")
    t = _time(st)
    assert counted == N and t["dropped_below_heartbeat"] == 0 and t["latency_usec"] == 1_500_000
    # the last heartbeat is that of a record 1.5 s (of the data clock) older
    assert 1_950_000 <= t["heartbeat_lag_usec"] <= 2_100_000, t


def test_traces_carry_generated_heartbeats(gsqlc, spike, tmp_path):
    pcap, q = spike
    trace = tmp_path / "t.jsonl"
    _run(gsqlc, q, "--source", f"default=pcap:{pcap}", "--heartbeats", "estimate=adaptive",
         "--heartbeats", "window=300", "--trace", trace)
    lines = [json.loads(x) for x in trace.read_text().splitlines()]
    assert lines and all(x["source"] == "default" for x in lines)
    assert all(x["heartbeat_usec"] <= x["data_usec"] for x in lines)
    # the spike shows as a wider gap between data and heartbeat
    gaps = [x["data_usec"] - x["heartbeat_usec"] for x in lines]
    assert max(gaps) >= 2_500_000 and min(gaps[len(gaps) // 2:]) <= 1_100_000
    p = gsqlc("trace", trace)
    assert p.returncode == 0, p.err
    row = next(x for x in p.out.splitlines() if x.startswith("default "))
    assert int(row.split()[1]) == len(lines)


def test_bound_sets_from_the_interfaces_file(gsqlc, spike, tmp_path):
    """[[skew.a.b]] tables give a set of pairs (seed 002 3.1): a loose bound
    at once, a tight one 2 s later; the closure keeps both (neither is
    redundant) and adds nothing to them."""
    pcap, _ = spike
    f = tmp_path / "i.toml"
    f.write_text(f'[interface.a]\nsource = "pcap:{pcap}"\n[interface.b]\nsource = "pcap:{pcap}"\n'
                 "[[skew.a.b]]\nafter = 0\nbound = 5\n[[skew.a.b]]\nafter = 2\nbound = 1\n")
    q = tmp_path / "two.gsql"
    q.write_text(_counts_per_interface("ab"))
    _, st = _run(gsqlc, q, "--interfaces", f)
    assert _time(st, "a")["bounds_to"] == {"a": [[0, 0]], "b": [[0, 5_000_000],
                                                                [2_000_000, 1_000_000]]}
    assert st["heartbeat_generator"]["pairs_declared"] == 4   # two diagonals, two pairs


def _first_line_within(proc, seconds: float) -> str | None:
    """The first line of proc's stdout within `seconds`, else None."""
    import select
    import time
    end = time.time() + seconds
    while time.time() < end:
        r, _, _ = select.select([proc.stdout], [], [], 0.1)
        if r:
            return proc.stdout.readline()
    return None


@pytest.mark.parametrize("timeout", [None, 1.0])
def test_timeout_advances_an_all_idle_plan(gsqlc, tmp_path, timeout):
    """Seed 002 section 3.4: every input pauses.  out_of_order = 30 s holds
    the heartbeat 30 s behind the data, so the count of the second the rows
    were sent in stays open while nothing arrives -- until the timeout says
    no later record is older than the largest seen.  The rows come through
    a pipe (csv:-) that stays open."""
    import subprocess
    schema = tmp_path / "schema.txt"
    schema.write_text("PROTOCOL EV {\n    ullong ts get_csv_ullong_pos1 (increasing);\n"
                      "    uint v get_csv_uint_pos2;\n}\n")
    q = tmp_path / "idle.gsql"
    q.write_text("DEFINE { query_name 'per_s'; }\n"
                 "select tb, count(*) as cnt from EV group by ts as tb")
    args = [sys.executable, "-m", "gsqlc", "run", str(q), "--schema", str(schema),
            "--source", "default=csv:-", "--out-of-order", "default=30",
            "--heartbeat-interval", "0.2", "--stats"]
    if timeout is not None:
        args += ["--heartbeat-timeout", str(timeout)]
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    warm = gsqlc("run", q, "--schema", schema, "--source", f"default=csv:{empty}")
    assert warm.returncode == 0, warm.err   # built before the timed part
    proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        # 5 rows in second 1000, 3 in 1001; then silence, the pipe open
        proc.stdin.write("".join(f"{t},{i}\n" for i, t in enumerate([1000] * 5 + [1001] * 3)))
        proc.stdin.flush()
        # a loaded machine may take a while; nothing comes without the timeout
        line = _first_line_within(proc, 6.0 if timeout is None else 30.0)
        proc.stdin.close()
        out, err = proc.stdout.read(), proc.stderr.read()
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    st = _stats(err)
    gen = st["heartbeat_generator"]
    if timeout is None:
        assert line is None, line          # held 30 s behind: nothing until the end
        assert gen["timeouts"] == 0
        assert sorted(out.split()) == ["1000|5", "1001|3"]
    else:
        assert line == "1000|5\n", (line, err)
        assert gen["timeouts"] >= 1 and gen["timeout_usec"] == 1_000_000
        assert out.split() == ["1001|3"]


THREE_SCHEMA = ("PROTOCOL EV {\n    ullong ts get_csv_ullong_pos1 (increasing);\n"
                "    uint v get_csv_uint_pos2;\n    ullong recv get_csv_ullong_pos3;\n}\n")


def _three_sources(d, seconds: int = 60):
    """CSV files of three sources, rows in order of arrival (recv, ms):
    a on time; b's clock behind a's by up to 5 s (a slow drift, so b is in
    order itself) and silent from 20 s to 30 s; c out of order by up to 2 s."""
    rng = np.random.default_rng(42)
    t0 = 1_700_000_000_000
    files = {}
    for name in "abc":
        arrive = np.sort(rng.uniform(0, seconds * 1000, 20 * seconds)).astype(np.int64)
        if name == "a":
            ts = arrive
        elif name == "b":
            arrive = arrive[(arrive < 20_000) | (arrive >= 30_000)]
            ts = arrive - (2500 + 2500 * np.sin(arrive / 7000.0)).astype(np.int64)
        else:
            ts = arrive - rng.integers(0, 2001, len(arrive))
        v = rng.integers(1, 100, len(arrive))
        files[name] = d / f"{name}.csv"
        files[name].write_text("".join(f"{t0 + t},{x},{t0 + r}\n"
                                       for t, x, r in zip(ts, v, arrive)))
    return files


def test_three_sources_within_their_bounds_lose_nothing(gsqlc, tmp_path):
    """The issue's case: b skewed behind a by up to 5 s, c out of order by up
    to 2 s, a on time, replayed on their arrival columns; with those bounds
    declared nothing is dropped and the 10 s counts and sums of their union
    equal DuckDB's; a skew bound too small drops (and counts) b's rows."""
    import duckdb
    files = _three_sources(tmp_path)
    schema = tmp_path / "schema.txt"
    schema.write_text(THREE_SCHEMA)
    q = tmp_path / "three.gsql"
    q.write_text("".join(f"DEFINE {{ query_name 's_{x}'; }}\nselect ts, v from [{x}].EV;\n"
                         for x in "abc") +
                 "DEFINE { query_name 'all3'; }\nmerge p.ts : q.ts : r.ts from s_a p, s_b q, "
                 "s_c r;\n"
                 "DEFINE { query_name 'per10'; }\nselect tb, count(*) as n, sum(v) as total "
                 "from all3 group by ts/10000 as tb")
    ifaces = tmp_path / "i.toml"
    decl = "".join(f'[interface.{x}]\nsource = "csv:{files[x]}"\ntime_unit = "ms"\n'
                   f'arrival = "recv"\n' + ("out_of_order = 2.0\n" if x == "c" else "")
                   for x in "abc")

    def run(skew_bound: float):
        ifaces.write_text(decl + f"[skew.a.b]\nafter = 0\nbound = {skew_bound}\n")
        p = gsqlc("run", q, "--schema", schema, "--interfaces", ifaces,
                  "--heartbeat-interval", "0.25", "--stats")
        assert p.returncode == 0, p.err
        return sorted(p.out.split()), _stats(p.err)

    want = sorted(f"{tb}|{n}|{s}" for tb, n, s in duckdb.sql(
        "select ts // 10000 as tb, count(*), sum(v) from read_csv("
        f"{[str(files[x]) for x in 'abc']}, header=false, "
        "columns={'ts': 'UBIGINT', 'v': 'UINTEGER', 'recv': 'UBIGINT'}) "
        "group by tb").fetchall())
    sent = sum(_rows(f) for f in files.values())
    out, st = run(5.0)
    drops = {s["iface"]: s["time"]["dropped_below_heartbeat"] for s in st["sources"]}
    late = sum(n["late_dropped"] for n in st["nodes"])
    assert drops == {"a": 0, "b": 0, "c": 0} and late == 0, (drops, late)
    assert out == want
    assert _time(st, "a")["bounds_to"]["b"] == [[0, 5_000_000]]
    assert all(s["heartbeats"] > 10 for s in st["streams"]), st["streams"]
    # b's skew declared too small: b's rows further behind a's are dropped,
    # counted, and missing from the answer -- nothing else is
    out, st = run(1.0)
    b = _time(st, "b")["dropped_below_heartbeat"]
    assert b > 0 and out != want
    assert sum(int(x.split("|")[1]) for x in out) + b == sent


def _rows(path) -> int:
    with open(path) as f:
        return sum(1 for _ in f)
