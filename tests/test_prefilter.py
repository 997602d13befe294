"""The prefilter (planner/prefilter.py, backend/prefilter_gen.py,
runtime_c/run/loop.c): the cheap predicates of the LFTAs reading an
interface evaluated once per record, each LFTA run only on the records its
predicates may let through.  It must change nothing but the work: every
query's rows, in order, and every counter of the run (fields missing,
records dropped below a heartbeat, tuples in and out) are those of the
same run with --prefilter off -- over a capture in order, over one out of
order whose late records are dropped (batches where the skipped records'
effects cannot be summed up), and over CSV records."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
pytest.importorskip("pyarrow")
import pktgen  # noqa: E402

# Queries of every shape the prefilter meets: shared predicates, a field
# the record may lack read first (destPort of an ICMP packet: counted) or
# after a predicate that rules it out, a predicate it cannot evaluate (a
# division, a parameter) before or after one it can, another PROTOCOL
# (TCP: another admission class), no predicate at all, selections and
# aggregations.
QUERIES = """
DEFINE { query_name 'web'; }
SELECT tb, srcIP, count(*) as n, sum(len) as bytes FROM IPV4
WHERE protocol = 6 and destPort = 80 GROUP BY time/10 as tb, srcIP;

DEFINE { query_name 'dns_first'; }
SELECT time, srcIP, destIP, len FROM IPV4 WHERE destPort = 53 and protocol = 17;

DEFINE { query_name 'big_tcp'; }
SELECT time, srcIP, len FROM IPV4 WHERE protocol = 6 and len > 100;

DEFINE { query_name 'half'; }
SELECT time, srcIP FROM IPV4 WHERE len / 2 > 300 and protocol = 6;

DEFINE { query_name 'after_param'; }
PARAM { port uint; }
SELECT tb, destIP, count(*) as n FROM IPV4 WHERE protocol = 6 and destPort = $port
GROUP BY time/10 as tb, destIP;

DEFINE { query_name 'tls'; }
SELECT time, srcIP, destPort FROM TCP WHERE destPort = 443 and ipversion = 4;

DEFINE { query_name 'all'; }
SELECT tb, count(*) as n FROM IPV4 GROUP BY time/10 as tb;
"""


def _run(gsqlc, q, *args):
    p = gsqlc("run", q, "--stats", "--format", "jsonl", *args)
    assert p.returncode == 0, p.err[-3000:]
    stats = json.loads(p.err[p.err.index("{"):])
    return p.out, stats


def _counters(stats):
    """What must not change: each node's counters, each source's reading
    and drops (not the prefilter's own figures)."""
    nodes = {n["name"]: {k: v for k, v in n.items()
                         if not k.startswith(("peak", "queue")) and not isinstance(v, float)}
             for n in stats["nodes"]}
    sources = [{k: v for k, v in s.items()
                if k not in ("prefilter", "prefilter_skipped", "ring_high_water_bytes")
                and not isinstance(v, float)} for s in stats["sources"]]
    return nodes, sources


def _same_with_and_without(gsqlc, q, *args):
    if "$port" in Path(q).read_text():
        args = ("--param", "port=443", *args)
    on_out, on = _run(gsqlc, q, *args)
    off_out, off = _run(gsqlc, q, *args, "--prefilter", "off")
    assert on_out == off_out
    assert _counters(on) == _counters(off)
    return on_out, on, off


@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    d = tmp_path_factory.mktemp("prefilter")
    pcap = d / "mixed.pcap"
    pktgen.generate(str(pcap), 40_000, 300, pps=400, seed=5, payload=True, frag=0.02,
                    truth=False)
    q = d / "q.gsql"
    q.write_text(QUERIES)
    return pcap, q


def test_explain_shows_the_prefilter_and_each_signature(gsqlc, capture):
    _, q = capture
    p = gsqlc("explain", q)
    assert p.returncode == 0, p.err
    text = p.out[p.out.index("prefilter of interface default"):]
    preds = dict(line.strip().split(" ", 1) for line in text.splitlines()[1:]
                 if line.startswith("    p"))
    assert {v.split("  [")[0] for v in preds.values()} == {
        "(protocol = 6)", "(destPort = 80)", "(destPort = 53)", "(protocol = 17)",
        "(len > 100)", "(destPort = 443)", "(ipversion = 4)"}
    by_text = {v.split("  [")[0] + v.split("  [")[1]: k for k, v in preds.items()}
    p6 = by_text["(protocol = 6)PROTOCOL IPV4]"]
    sig = {line.split(":")[0].strip(): line.split(":", 1)[1].strip()
           for line in text.splitlines() if line.startswith("    _fta") or
           line.startswith("    ") and ": " in line and not line.startswith("    p")}
    assert sig["_fta_web"] == f"{p6} and {by_text['(destPort = 80)PROTOCOL IPV4]']}"
    assert sig["half"] == "every record its PROTOCOL admits"     # a division first
    assert sig["_fta_after_param"] == p6                         # stops at the parameter
    assert sig["tls"].endswith(by_text["(ipversion = 4)PROTOCOL TCP]"])
    assert sig["_fta_all"] == "every record its PROTOCOL admits"


def test_same_rows_and_counters_over_a_capture(gsqlc, capture):
    pcap, q = capture
    out, on, _ = _same_with_and_without(gsqlc, q, "--source", f"default=pcap:{pcap}")
    assert out.count("\n") > 1000, out[:500]
    src = on["sources"][0]
    assert src["prefilter"] is True and src["prefilter_skipped"] > 0
    # the ICMP packets dns_first reads destPort of are counted, prefilter or not
    assert on_node(on, "dns_first")["field_unavailable"] > 0


def on_node(stats, name):
    return next(n for n in stats["nodes"] if n["name"] == name)


def test_late_records_dropped_the_same(gsqlc, tmp_path):
    """Out of order: link 1's packets 4 s late in [15, 20) s.  With a
    bound of 0.5 s the late ones fall below heartbeats (the generated
    heartbeats' drops, the LFTAs' own promises) and are counted the same."""
    pcap = tmp_path / "late.pcap"
    pktgen.generate_arrivals(str(pcap), 6_000, 50, pps=100, seed=3,
                             delays=[0.0, lambda t: np.where((t >= 15) & (t < 20), 4.0, 1.0)])
    q = tmp_path / "q.gsql"
    q.write_text(QUERIES)
    for bound in (["--out-of-order", "default=0.5"], ["--max-skew", "default=0.5"]):
        _, on, _ = _same_with_and_without(gsqlc, q, "--source", f"default=pcap:{pcap}",
                                          *bound)
        lost = sum(n.get("skew_dropped", 0) for n in on["nodes"]) + \
            sum((s.get("time") or {}).get("dropped_below_heartbeat", 0) for s in on["sources"])
        assert lost > 0, (bound, on["sources"])


@pytest.mark.parametrize("time_type", ["uint", "float"])
def test_csv_records(gsqlc, tmp_path, time_type):
    """A float time column holds a NaN now and then (it orders with
    nothing: such a batch goes to every LFTA whole)."""
    schema = tmp_path / "schema.txt"
    schema.write_text(f"PROTOCOL EV {{ {time_type} t get_csv_{time_type}_pos1 (increasing, required);"
                      " uint k get_csv_uint_pos2; uint v get_csv_uint_pos3; }\n")
    q = tmp_path / "q.gsql"
    q.write_text("""
DEFINE { query_name 'k1'; } SELECT tb, count(*) as n FROM EV WHERE k = 1 GROUP BY t/10 as tb;
DEFINE { query_name 'sel'; } SELECT t, k FROM EV WHERE k = 4;
DEFINE { query_name 'k2big'; } SELECT t, v FROM EV WHERE k = 2 and v > 50;
DEFINE { query_name 'vk'; } SELECT t, k FROM EV WHERE v < 10 and k <> 3;
""")
    rng = np.random.default_rng(1)
    # 5 % of the rows end after their time (counted as the reader says)
    rows = [f"{t},{rng.integers(0, 5)},{rng.integers(0, 100)}" if rng.random() > 0.05 else f"{t}"
            for t in range(0, 5000)]
    if time_type == "float":
        rows = [("nan" + r[r.index(","):] if "," in r else r) if i % 700 == 3 else r
                for i, r in enumerate(rows)]
    csv = tmp_path / "ev.csv"
    csv.write_text("\n".join(rows) + "\n")
    out, on, _ = _same_with_and_without(gsqlc, q, "--schema", schema,
                                        "--source", f"default=csv:{csv}",
                                        "--columnar", "off")
    assert on["sources"][0]["prefilter"] is True and on["sources"][0]["prefilter_skipped"] > 0
    assert out.count("\n") > 500


def test_sanitized_runner_gives_the_same_rows(gsqlc, capture, tmp_path):
    """The prefilter and the LFTAs' hooks under ASan and UBSan, through the
    stand-alone runner: each query's rows equal those of `gsqlc run`."""
    from conftest import build_sanitized, run_sanitized
    pcap, q = capture
    runner = build_sanitized([q], tmp_path / "san")
    for query in ("web", "dns_first", "tls", "after_param"):
        r = run_sanitized(runner, "--source", f"default=pcap:{pcap}", "--output", query,
                          "--param", "port=443")
        assert r.returncode == 0, r.stderr[-3000:]
        want = gsqlc("run", q, "--source", f"default=pcap:{pcap}", "--output", query,
                     "--param", "port=443", "--prefilter", "off")
        assert want.returncode == 0, want.err
        assert r.stdout == want.out and r.stdout.count("\n") > 10, query


def test_interface_set_members_each_prefiltered(gsqlc, capture):
    """An interface set of two members: each member's source has the
    prefilter of the set's LFTAs, and rows and counters are those without."""
    pcap, q = capture
    _, on, _ = _same_with_and_without(gsqlc, q, "--source", f"default=pcap:{pcap}",
                                      "--source", f"default=pcap:{pcap}")
    assert len(on["sources"]) == 2
    assert all(s["prefilter"] and s["prefilter_skipped"] > 0 for s in on["sources"])


def test_python_api_prefilter_keyword(capture):
    """CompiledQuerySet.run(prefilter=...): the same batches on and off; a
    value other than on/off refused, naming the setting."""
    import pyarrow as pa

    import gsqlc
    pcap, q = capture
    qs = gsqlc.compile([q])
    got = {}
    for pf in ("on", "off"):
        run = qs.run({"default": f"pcap:{pcap}"}, output="web", params={"port": 443},
                     prefilter=pf)
        got[pf] = pa.Table.from_batches(list(run))
    assert got["on"].num_rows > 10 and got["on"].equals(got["off"])
    with pytest.raises(gsqlc.errors.SettingError, match="prefilter must be on or off"):
        qs.run({"default": f"pcap:{pcap}"}, output="web", params={"port": 443},
               prefilter="maybe")
