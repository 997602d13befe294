"""Heartbeats, interface sets, traces and stall reports, end to end through
`gsqlc run` on generated captures (seed 000)."""
from __future__ import annotations

import ipaddress
import json
import sys
from collections import Counter

import pyarrow as pa
import pytest

from conftest import REPO

sys.path.insert(0, str(REPO / "bench"))
import pktgen  # noqa: E402


def _trace(tmp_path, name, n, start, pps, seed=1):
    path = tmp_path / f"{name}.pcap"
    truth = pktgen.generate(str(path), n, 50, pps=pps, seed=seed, start=start, frag=0.0)
    return path, truth


def _per10(*truths) -> list[str]:
    """The lines `tb|n` of count(*) per time/10 over the packets of `truths`
    (pktgen's own record of what it wrote), in order of tb."""
    n = Counter(t // 10 for truth in truths for t in truth["time"].to_pylist())
    return [f"{tb}|{n[tb]}" for tb in sorted(n)]


def _times(*truths) -> list[str]:
    return sorted(str(t) for truth in truths for t in truth["time"].to_pylist())


def _stats(err: str) -> dict:
    return json.loads(err[err.index("\n{") + 1:]) if "\n{" in err else json.loads(err[err.index("{"):])


def _streams(stats: dict) -> dict:
    return {s["name"]: s for s in stats["streams"]}


def test_heartbeats_follow_the_data_clock(gsqlc, tmp_path):
    pcap, truth = _trace(tmp_path, "a", 3000, 1_700_000_000, 25)   # 120 s of packets
    q = tmp_path / "q.gsql"
    q.write_text("DEFINE { query_name 'per10'; }\n"
                 "select tb, count(*) as n from IPV4 group by time/10 as tb")
    for interval, lo, hi in (("1", 110, 121), ("10", 10, 13)):
        p = gsqlc("run", q, "--source", f"eth0=pcap:{pcap}", "--clock", "data",
                  "--heartbeat-interval", interval, "--stats")
        assert p.returncode == 0, p.err
        s = _streams(_stats(p.err))
        assert lo <= s["_fta_per10"]["heartbeats"] <= hi, s
        # The aggregation propagates them (its own temporal updates).
        assert s["per10"]["heartbeats"] > 0, s
        assert p.out.splitlines() == _per10(truth)


@pytest.mark.parametrize("args,needle", [
    (["--heartbeat-interval", "0"], "--heartbeat-interval must be positive"),
    (["--heartbeat-interval", "-2"], "--heartbeat-interval must be positive"),
    (["--max-skew", "eth0=-1"], "must not be negative"),
    (["--max-skew", "eth9=1"], "no --source binds an interface 'eth9'"),
])
def test_bad_heartbeat_settings(gsqlc, tmp_path, args, needle):
    pcap, _ = _trace(tmp_path, "a", 10, 1_700_000_000, 10)
    q = tmp_path / "q.gsql"
    q.write_text("select time from IPV4")
    p = gsqlc("run", q, "--source", f"eth0=pcap:{pcap}", *args)
    assert p.returncode == 2 and needle in p.err, p.err


def test_interface_set_merges_members_in_time_order(gsqlc, tmp_path):
    a, ta = _trace(tmp_path, "a", 400, 1_700_000_000, 10, seed=1)
    b, tb = _trace(tmp_path, "b", 300, 1_700_000_000, 7, seed=2)
    q = tmp_path / "q.gsql"
    q.write_text("DEFINE { query_name 'both'; }\nselect time, srcIP, len from [links].IPV4")
    p = gsqlc("run", q, "--source", f"links=pcap:{a}", "--source", f"links=pcap:{b}",
              "--clock", "data", "--format", "jsonl")
    assert p.returncode == 0, p.err
    rows = [json.loads(l) for l in p.out.splitlines()]
    times = [r["time"] for r in rows]
    assert times == sorted(times), "a merge must preserve the order of time"
    truth = pa.concat_tables([ta.select(["time", "len"]), tb.select(["time", "len"])])
    assert sorted((r["time"], r["len"]) for r in rows) == \
        sorted(zip(truth["time"].to_pylist(), truth["len"].to_pylist()))
    ex = gsqlc("explain", q, "--interfaces", _set_file(tmp_path, a, b))
    assert "merges the LFTAs of interface set [links]" in ex.out, ex.out


def _set_file(tmp_path, a, b):
    f = tmp_path / "ifaces.toml"
    f.write_text(f'[interface.main0]\nsource = "pcap:{a}"\nmax_skew = 1.5\n'
                 f'[interface.main1]\nsource = "pcap:{b}"\n'
                 '[set.links]\nmembers = ["main0", "main1"]\n')
    return f


def test_interfaces_file_binds_a_set(gsqlc, tmp_path):
    a, ta = _trace(tmp_path, "a", 200, 1_700_000_000, 10, seed=3)
    b, tb = _trace(tmp_path, "b", 100, 1_700_000_000, 10, seed=4)
    q = tmp_path / "q.gsql"
    q.write_text("DEFINE { query_name 'per10'; }\n"
                 "select tb, count(*) as n from [links].IPV4 group by time/10 as tb")
    p = gsqlc("run", q, "--interfaces", _set_file(tmp_path, a, b), "--clock", "data")
    assert p.returncode == 0, p.err
    assert p.out.splitlines() == _per10(ta, tb)


def test_trace_file_and_plot(gsqlc, tmp_path):
    pcap, truth = _trace(tmp_path, "a", 600, 1_700_000_000, 20)
    q = tmp_path / "q.gsql"
    q.write_text("DEFINE { query_name 'per10'; }\n"
                 "select tb, count(*) as n from IPV4 group by time/10 as tb")
    trace = tmp_path / "t.jsonl"
    p = gsqlc("run", q, "--source", f"eth0=pcap:{pcap}", "--clock", "data", "--trace", trace)
    assert p.returncode == 0, p.err
    assert p.out.splitlines() == _per10(truth)  # tracing leaves the answer alone
    lines = [json.loads(l) for l in trace.read_text().splitlines()]
    assert len(lines) >= 25
    assert all(l["origin"] == "_fta_per10" for l in lines)
    assert any(h["node"] == "per10" for l in lines for h in l["hops"])
    png = tmp_path / "delay.png"
    t = gsqlc("trace", trace, "--plot", png)
    assert t.returncode == 0, t.err
    assert "per10" in t.out and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_stalled_source_is_reported_and_recovers(gsqlc, tmp_path):
    # b has a 40-second gap in the middle while a keeps the clock going.
    a, ta = _trace(tmp_path, "a", 1000, 1_700_000_000, 10, seed=5)
    b1, t1 = _trace(tmp_path, "b1", 50, 1_700_000_000, 5, seed=6)
    b2, t2 = _trace(tmp_path, "b2", 50, 1_700_000_050, 5, seed=7)
    b = tmp_path / "b.pcap"
    b.write_bytes(b1.read_bytes() + b2.read_bytes()[24:])  # one file, gap inside
    q = tmp_path / "q.gsql"
    q.write_text("select time from [links].IPV4")
    p = gsqlc("run", q, "--source", f"links=pcap:{a}", "--source", f"links=pcap:{b}",
              "--clock", "data", "--stall-intervals", "5", "--output-file", tmp_path / "o")
    assert p.returncode == 0, p.err
    assert "stalled" in p.err and "recovered" in p.err, p.err
    # every packet of both members, in order of time
    assert (tmp_path / "o").read_text().splitlines() == _times(ta, t1, t2)


def _merge_peak(stats: dict) -> int:
    return max(n["peak_held_tuples"] for n in stats["nodes"] if n["name"] == "idle")


def test_idle_member_holds_the_merge_until_skew_heartbeats_advance_it(gsqlc, tmp_path):
    # Seed 000 section 4.5: b is busy for 5 s and then idle until its last
    # packet at 99 s; without a skew bound its time cannot advance and the
    # merge must hold a's tuples; with --max-skew the idle member's
    # heartbeats follow the clock.  (A member at its end holds nothing: its
    # end is its progress.)
    a, ta = _trace(tmp_path, "a", 1000, 1_700_000_000, 10, seed=8)
    b1, t1 = _trace(tmp_path, "b1", 50, 1_700_000_000, 10, seed=9)
    b2, t2 = _trace(tmp_path, "b2", 1, 1_700_000_099, 10, seed=10)
    b = tmp_path / "b.pcap"
    b.write_bytes(b1.read_bytes() + b2.read_bytes()[24:])  # one file, idle inside
    tb = {k: t1[k].to_pylist() + t2[k].to_pylist() for k in ("time", "srcIP")}
    q = tmp_path / "q.gsql"
    q.write_text("DEFINE { query_name 'idle'; }\nselect time, srcIP from [links].IPV4")
    base = ["run", q, "--source", f"links=pcap:{a}", "--source", f"links=pcap:{b}",
            "--clock", "data", "--stats", "--output-file", tmp_path / "o"]
    want = sorted((t, str(ipaddress.IPv4Address(ip))) for truth in (ta.to_pydict(), tb)
                  for t, ip in zip(truth["time"], truth["srcIP"]))

    def output():  # every packet of both members, in order of time
        rows = [line.split("|") for line in (tmp_path / "o").read_text().splitlines()]
        assert [int(t) for t, _ in rows] == sorted(int(t) for t, _ in rows)
        return sorted((int(t), ip) for t, ip in rows)

    held = gsqlc(*base)
    assert held.returncode == 0, held.err
    assert output() == want
    freed = gsqlc(*base, "--max-skew", "links=2")
    assert freed.returncode == 0, freed.err
    assert output() == want
    peak_held, peak_freed = _merge_peak(_stats(held.err)), _merge_peak(_stats(freed.err))
    assert peak_held > 800, peak_held
    assert peak_freed < 100, peak_freed
