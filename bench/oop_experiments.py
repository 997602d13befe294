#!/usr/bin/env python3
"""Li et al. 2008, section 8.1's Gigascope experiments (G1, G2, G3) for gsqlc's
out-of-order processing (OOP) against in-order processing (IOP), on generated
captures replayed with the data clock.

    python bench/oop_experiments.py g2 [--pps 110000] [--seconds 100]  # Figure 1
    python bench/oop_experiments.py g1 [--pps 25000] [--seconds 240]   # Figure 9
    python bench/oop_experiments.py g3 [--pps 10000] [--seconds 60]    # Figure 10
                                       (results_oop/g3.md: --pps 10000 --seconds 120)
    python bench/oop_experiments.py all                                # the three

IOP is `--max-lfta-disorder 1 --max-hfta-disorder 1` (a merge feeding the
aggregation then preserves order by buffering the input that runs ahead); OOP
keeps K > 1 epochs of an aggregation open, and the planner turns a merge whose
readers are order-agnostic into a union that passes tuples straight through.

G2 (Figure 1): a 10 s tumbling count per (srcIP, destIP) over the MERGE of two
    selections, one per link, of ONE capture in which link B's packets arrive
    D = 1..40 s behind link A's (pktgen.generate_delayed: each link in order
    by its own timestamps; B's sources are in 11.0.0.0/8, so the selections
    split the links on srcIP).  Peak memory of IOP against OOP with
    --max-hfta-disorder K, K = D // 10 + 2 (nothing late).
G1 (Figure 9): throughput of the per-minute (srcIP, destIP) count for 65,536
    and 524,288 groups, LFTA tables of half, equal and twice the group count;
    IOP (disorder 1, --flush immediate), OOP lazy, OOP slow.
G3 (Figure 10): memory of a tumbling-window join (10 s windows; equality on
    tb = time/10, srcIP and destIP) whose inputs m1, m2 are each the union
    of two streams, one per link, IOP against OOP; a count per window of the
    join's output is the query's output, so that the join and the unions may
    run out of order (OOP: the merges pass tuples straight through and the
    join takes disordered inputs, purging by both inputs' heartbeats).  Link
    A and link B are two interfaces (eth0, eth1) over two generated captures
    replayed aligned on their timestamps; link B's capture is D = 0..40 s
    later and its selections compute `time - D` (one query per D), so its
    tuples run D s behind link A's and its own heartbeats stay right for
    them.  Heartbeats on (1 s).

Every configuration runs in its own `python -m gsqlc run` process after a
build on a tiny capture (so no compiler is measured); its max RSS is what
resource.getrusage(RUSAGE_CHILDREN) reports in a small fresh Python that
started it and waited for it.  G1 and G2 run with heartbeats off
(--heartbeat-interval off): G2's links share one interface, whose heartbeats
are inferred from every record before the predicates, i.e. from link A's
clock, which would declare link B's tuples late (G2 shows it once with
heartbeats on).  Results (results.md, one PNG per experiment, the queries,
raw JSON) go to bench/results_oop/.
"""
from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
import pktgen  # noqa: E402

START = 1_700_000_000
LINK_B = pktgen.LINK_B_NET          # 11.0.0.0: link B's sources are at or above it
IOP = ["--max-lfta-disorder", "1", "--max-hfta-disorder", "1"]
EXPERIMENTS = ("g2", "g1", "g3")

# ------------------------------------------------------------------ queries

G2_QUERY = f"""\
DEFINE {{ query_name 'link_a'; }}
select time, srcIP, destIP from IPV4 where srcIP < {LINK_B};
DEFINE {{ query_name 'link_b'; }}
select time, srcIP, destIP from IPV4 where srcIP >= {LINK_B};
DEFINE {{ query_name 'both'; }}
merge a.time : b.time from link_a a, link_b b;
DEFINE {{ query_name 'counts'; }}
select tb, srcIP, destIP, count(*) as cnt from both
group by time/10 as tb, srcIP, destIP
"""

G1_QUERY = """\
DEFINE {{ query_name 'q4'; lfta_table_size {table}; }}
select tb, srcIP, destIP, count(*) as cnt from IPV4
group by time/60 as tb, srcIP, destIP
"""

_G3_SEL = ("DEFINE {{ query_name '{name}'; }}\n"
           "select ({time})/10 as tb, {time} as time, srcIP, destIP from {iface}.IPV4\n"
           "where id % 2 = {parity};\n")


def g3_query(skew: int) -> str:
    """G3's query for link B `skew` s late: link A is interface eth0, link B
    eth1, whose selections (b, d) shift its time back by `skew` s, so that its
    tuples carry timestamps `skew` s behind link A's at the same arrival
    instant (and its heartbeats, derived through the selection from eth1's
    clock, are shifted with them)."""
    tb = f"time - {skew}" if skew else "time"
    sel = [("a", "eth0", "time", 0), ("b", "eth1", tb, 0), ("c", "eth0", "time", 1),
           ("d", "eth1", tb, 1)]
    return ("".join(_G3_SEL.format(name=n, iface=i, time=t, parity=par)
                    for n, i, t, par in sel)
            + "DEFINE { query_name 'm1'; }\nmerge x.tb : y.tb from a x, b y;\n"
            "DEFINE { query_name 'm2'; }\nmerge x.tb : y.tb from c x, d y;\n"
            "DEFINE { query_name 'pairs'; }\n"
            "select A.tb, A.srcIP, A.destIP, A.time, B.time as time2 INNER_JOIN from m1 A, m2 B\n"
            "where A.tb = B.tb and A.srcIP = B.srcIP and A.destIP = B.destIP;\n"
            "DEFINE { query_name 'per_tb'; }\n"
            "select tb, count(*) as n from pairs group by tb\n")


def k_for(delay: float) -> int:
    """Epochs the OOP aggregation keeps open so that a link `delay` s late
    loses nothing: a tuple arrives up to delay // 10 + 1 epochs (of 10 s)
    behind the newest."""
    return int(delay) // 10 + 2


# ------------------------------------------------------------------ running

def _stats_of(text: str) -> tuple[dict, str]:
    m = re.search(r"^\{", text, re.M)
    if m is None:
        raise SystemExit(f"no --stats JSON on stderr:\n{text[-4000:]}")
    return json.loads(text[m.start():]), text[:m.start()].strip()


# The run's process is started by a small fresh Python, which reports the
# process's rusage (getrusage(RUSAGE_CHILDREN) after waiting for it): a child
# forked straight from this script would inherit this script's own high-water
# RSS (the captures are generated here) into its ru_maxrss.
_WRAPPER = """\
import json, resource, subprocess, sys, time
t = time.perf_counter()
rc = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL)
wall = time.perf_counter() - t
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"rc": rc, "wall": wall, "cpu": ru.ru_utime + ru.ru_stime,
                  "max_rss_kb": ru.ru_maxrss}))
"""


def run(query: Path, capture: Path | dict[str, Path], opts: list[str],
        out_file: str = "/dev/null", heartbeats: str = "off") -> dict:
    """One `gsqlc run` in a fresh process: its stats, wall time, CPU and max RSS.
    `capture`: one capture bound to interface `default`, or {interface: capture}
    (several pcap sources are replayed aligned on their timestamps)."""
    if not isinstance(capture, dict):
        capture = {"default": capture}
    srcs = [a for iface, cap in capture.items() for a in ("--source", f"{iface}=pcap:{cap}")]
    cmd = [sys.executable, "-m", "gsqlc", "run", str(query), *srcs, "--clock", "data", "--stats",
           "--heartbeat-interval", heartbeats, "--output-file", out_file, *opts]
    with tempfile.TemporaryFile("w+") as err:
        p = subprocess.run([sys.executable, "-c", _WRAPPER, *cmd], stdout=subprocess.PIPE,
                           stderr=err, text=True)
        err.seek(0)
        text = err.read()
    usage = json.loads(p.stdout) if p.returncode == 0 and p.stdout.strip() else {"rc": -1}
    if usage["rc"] != 0:
        raise SystemExit(f"{' '.join(cmd)}\nexit {usage['rc']}\n{text[-4000:]}")
    stats, messages = _stats_of(text)
    return {"stats": stats, "messages": messages, "wall": usage["wall"], "cpu": usage["cpu"],
            "max_rss_kb": usage["max_rss_kb"]}


def _entry(stats: dict, name: str, key: str) -> int:
    """Counter `key` of stream/node `name` (streams first, as the OOP runtime
    reports them per stream; else the node's)."""
    for section in ("streams", "nodes"):
        for e in stats.get(section, []):
            if e.get("name") == name and key in e:
                return int(e[key])
    return 0


def late_dropped(stats: dict) -> int:
    """Tuples dropped as late anywhere in the run (streams' counters if the
    runtime reports them there, else the nodes')."""
    for section in ("streams", "nodes"):
        vals = [int(e["late_dropped"]) for e in stats.get(section, []) if "late_dropped" in e]
        if vals:
            return sum(vals)
    return 0


def lfta_ejections(stats: dict) -> int:
    return sum(int(n.get("lfta_ejections", 0)) for n in stats.get("nodes", [])
               if n.get("kind") == "lfta")


def answer_digest(path: Path) -> tuple[str, int]:
    """Order-independent digest of an output file: sha256 of its sorted lines."""
    lines = path.read_bytes().splitlines()
    lines.sort()
    return hashlib.sha256(b"\n".join(lines)).hexdigest()[:16], len(lines)


def _iop_and_oop(query: Path, capture: Path | dict[str, Path], delay: float, tmp_dir: Path,
                 heartbeats: str = "off") -> dict[str, dict]:
    """run() in order (IOP) and out of order with K = k_for(delay) (OOP), each
    with the digest of its answer ("answer")."""
    res = {}
    for label, opts in (("IOP", IOP), ("OOP", ["--max-hfta-disorder", str(k_for(delay))])):
        with tempfile.NamedTemporaryFile(suffix=".out", dir=tmp_dir) as f:
            r = run(query, capture, opts, out_file=f.name, heartbeats=heartbeats)
            r["answer"] = answer_digest(Path(f.name))
        res[label] = r
    return res


def explain_order(query: Path, opts: list[str]) -> list[str]:
    p = subprocess.run([sys.executable, "-m", "gsqlc", "explain", str(query), *opts],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(p.stderr)
    out, node = [], None
    for line in p.stdout.splitlines():
        if line.startswith("["):
            node = line.split()[1]
        elif line.strip().startswith("order:") and node:
            out.append(f"{node}: {line.split('order:', 1)[1].strip()}")
    return out


def warm(query: Path, tiny: Path | dict[str, Path], opts: list[str],
         heartbeats: str = "off") -> dict:
    """Build (cached by content) on a tiny capture, then run there once more:
    the second run is the floor of a run (interpreter, library, no data)."""
    run(query, tiny, opts, heartbeats=heartbeats)
    return run(query, tiny, opts, heartbeats=heartbeats)


def _tiny(data: Path) -> Path:
    p = data / "tiny_delayed.pcap"
    if not p.exists():
        pktgen.generate_delayed(str(p), 2000, 100, delay=1, pps=1000, seed=7, start=START)
    return p


def _mb(kb: float) -> float:
    return kb / 1024


def _plot(path: Path, title: str, panels: list[tuple[str, str, list, dict]]) -> None:
    """panels: (xlabel, ylabel, xs, {label: ys}) per subplot."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4.2))
    for ax, (xl, yl, xs, series) in zip(axes if len(panels) > 1 else [axes], panels):
        for j, (label, ys) in enumerate(series.items()):
            ax.plot(xs, ys, marker="os^"[j % 3], linestyle=("-", "--", ":")[j % 3],
                    markersize=7 - 2 * j, label=label)
        ax.set_xlabel(xl)
        ax.set_ylabel(yl)
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend()
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _table(header: list[str], rows: list[list]) -> list[str]:
    right = ["---:" if i else "---" for i in range(len(header))]
    return (["| " + " | ".join(header) + " |", "|" + "|".join(right) + "|"]
            + ["| " + " | ".join(str(c) for c in r) + " |" for r in rows])


def _runtime_note(oop_held: list[int], iop_held: list[int]) -> list[str]:
    if oop_held and oop_held == iop_held:
        return ["**The OOP runs held exactly what the IOP runs held: this runtime still "
                "processes in order (the merge buffers whatever the plan says), so these are "
                "dry-run figures.**", ""]
    return []


# ------------------------------------------------------------------ G2

def exp_g2(out: Path, data: Path, pps: int, seconds: int, keep: bool) -> list[str]:
    delays = [1, 5, 10, 20, 30, 40]
    groups = 32768                                  # per link: 65,536 in all
    q = out / "queries" / "g2_union_count.gsql"
    q.write_text(G2_QUERY)
    tiny = _tiny(data)
    floor = {"IOP": warm(q, tiny, IOP)}
    for d in delays:
        floor.setdefault(f"K={k_for(d)}", warm(q, tiny, ["--max-hfta-disorder", str(k_for(d))]))
    rows, raw = [], []
    hb_rows: list[list] = []
    for d in delays:
        cap = data / f"g2_delay{d}_{pps}_{seconds}.pcap"
        if not cap.exists():
            pktgen.generate_delayed(str(cap), pps * seconds, groups, delay=d, pps=pps,
                                    seed=1, start=START)
        res = _iop_and_oop(q, cap, d, data)
        if d == 10:      # once: the same with the default 1 s heartbeats
            for label, r in _iop_and_oop(q, cap, d, data, heartbeats="1").items():
                dig = r["answer"]
                hb_rows.append([label, late_dropped(r["stats"]), f"{dig[1]:,}",
                                "yes" if dig == res[label]["answer"] else "**no**"])
        if not keep:
            cap.unlink()
        i, o = res["IOP"], res["OOP"]
        rec = {"delay": d, "k": k_for(d)}
        for label, r in res.items():
            s = r["stats"]
            rec[label] = {"max_rss_kb": r["max_rss_kb"], "wall": r["wall"],
                          "merge_held_tuples": _entry(s, "both", "peak_held_tuples"),
                          "merge_held_bytes": _entry(s, "both", "peak_held_bytes"),
                          "agg_held_tuples": _entry(s, "counts", "peak_held_tuples"),
                          "agg_held_bytes": _entry(s, "counts", "peak_held_bytes"),
                          "late_dropped": late_dropped(s), "rows": r["answer"][1],
                          "answer": r["answer"][0], "messages": r["messages"]}
        rec["equal"] = i["answer"] == o["answer"]
        raw.append(rec)
        I, O = rec["IOP"], rec["OOP"]
        rows.append([d, rec["k"], f"{_mb(I['max_rss_kb']):.1f}", f"{_mb(O['max_rss_kb']):.1f}",
                     f"{O['max_rss_kb'] / I['max_rss_kb'] * 100:.0f} %",
                     f"{I['merge_held_tuples']:,} / {I['merge_held_bytes'] / 2**20:.1f}",
                     f"{O['merge_held_tuples']:,} / {O['merge_held_bytes'] / 2**20:.1f}",
                     f"{I['agg_held_tuples']:,} / {I['agg_held_bytes'] / 2**20:.1f}",
                     f"{O['agg_held_tuples']:,} / {O['agg_held_bytes'] / 2**20:.1f}",
                     f"{I['late_dropped']} / {O['late_dropped']}",
                     f"{I['rows']:,}", "yes" if rec["equal"] else "**no**"])
        print(f"g2 D={d}: IOP {_mb(I['max_rss_kb']):.1f} MB, OOP(K={rec['k']}) "
              f"{_mb(O['max_rss_kb']):.1f} MB, merge held {I['merge_held_tuples']:,} / "
              f"{O['merge_held_tuples']:,}, late {I['late_dropped']}/{O['late_dropped']}, "
              f"equal {rec['equal']}", flush=True)
    (out / "g2.json").write_text(json.dumps({"pps": pps, "seconds": seconds, "groups": 2 * groups,
                                             "floor": {k: v["max_rss_kb"] for k, v in floor.items()},
                                             "runs": raw}, indent=1))
    xs = [r["delay"] for r in raw]
    _plot(out / "g2_memory.png",
          f"G2 / Figure 1: count per (srcIP, destIP) per 10 s over the union of two links "
          f"({pps:,} pkt/s each)",
          [("arrival delay of link B (s)", "max RSS of the run (MB)", xs,
            {"IOP": [_mb(r["IOP"]["max_rss_kb"]) for r in raw],
             "OOP (K = D//10 + 2)": [_mb(r["OOP"]["max_rss_kb"]) for r in raw]}),
           ("arrival delay of link B (s)", "peak bytes held: merge + aggregation (MB)", xs,
            {lab: [(r[lab]["merge_held_bytes"] + r[lab]["agg_held_bytes"]) / 2**20 for r in raw]
             for lab in ("IOP", "OOP")}),
           ("arrival delay of link B (s)", "peak tuples held by the merge", xs,
            {lab: [r[lab]["merge_held_tuples"] for r in raw] for lab in ("IOP", "OOP")})])
    md = ["## G2 / Figure 1: memory of a window count over the union of a late link", "",
          f"Query `queries/g2_union_count.gsql`: `count(*)` per `time/10, srcIP, destIP` over "
          f"`merge a.time : b.time` of two selections splitting one capture on srcIP (link A "
          f"10.0.0.0/8, link B 11.0.0.0/8). {pps:,} pkt/s per link, {seconds} s of data per "
          f"link ({2 * pps * seconds:,} packets per capture), {groups:,} (srcIP, destIP) pairs "
          f"per link = {2 * groups:,} groups; link B's packets arrive D s behind link A's "
          "(one capture, records in arrival order, `pktgen.generate_delayed`). IOP: "
          "`--max-lfta-disorder 1 --max-hfta-disorder 1`; OOP: `--max-hfta-disorder K`, "
          "K = D // 10 + 2. Data clock, heartbeats off. Max RSS: the `gsqlc run` process "
          "(Python interpreter, loaded query library and runtime; builds were done before, "
          f"on a tiny capture, where a run peaks at {_mb(floor['IOP']['max_rss_kb']):.1f} MB). "
          "Held: the runtime's `peak_held_tuples / peak_held_bytes` (MB) of the merge `both` "
          "and the aggregation `counts`. Late: `late_dropped` over the run (IOP / OOP). "
          "Equal: the two outputs, sorted, are identical.", ""]
    md += _table(["delay s", "K", "IOP RSS MB", "OOP RSS MB", "OOP/IOP",
                  "IOP merge held tuples / MB", "OOP merge held tuples / MB",
                  "IOP agg held groups / MB", "OOP agg held groups / MB", "late IOP / OOP",
                  "rows", "equal"], rows)
    md += [""]
    md += _runtime_note([r["OOP"]["merge_held_tuples"] for r in raw],
                        [r["IOP"]["merge_held_tuples"] for r in raw])
    md += _g2_observations(raw, 2 * groups)
    md += ["With the default 1 s heartbeats instead (D = 10 s): both links share the one "
           "interface, whose heartbeats are inferred from every record before the selections' "
           "predicates, i.e. from link A's clock; link B's selection then promises times it "
           "has not reached.", ""]
    md += _table(["config", "late_dropped", "rows", "same answer as heartbeats off"], hb_rows)
    md += ["", "![G2](g2_memory.png)", ""]
    return md


def _g2_observations(raw: list[dict], groups: int) -> list[str]:
    lo, hi = raw[0], raw[-1]
    I, O = hi["IOP"], hi["OOP"]
    out = [f"At D = {hi['delay']} s the OOP run peaks at {O['max_rss_kb'] / I['max_rss_kb'] * 100:.0f} % "
           f"of the IOP run's RSS (the paper: about 30 % at 40 s)."]
    dt = I["merge_held_tuples"] - lo["IOP"]["merge_held_tuples"]
    if dt > 0 and I["merge_held_tuples"]:
        per = (I["max_rss_kb"] - lo["IOP"]["max_rss_kb"]) * 1024 / dt
        said = I["merge_held_bytes"] / I["merge_held_tuples"]
        out.append(f"IOP's RSS grows by {per:.0f} bytes per tuple the merge holds, where the "
                   f"merge reports {said:.0f} bytes per held tuple (`peak_held_bytes`): the "
                   f"buffered tuples cost about {per / said:.1f}x what the counter says.")
    if all(r[lab]["agg_held_bytes"] == 0 for r in raw for lab in ("IOP", "OOP")):
        dk = hi["k"] - lo["k"]
        grow = (O["max_rss_kb"] - lo["OOP"]["max_rss_kb"]) / 1024
        out.append(f"The aggregation's `peak_held_bytes` is 0 in every run (the runtime does not "
                   f"count it), so its memory shows only in RSS. It holds one epoch of groups in "
                   f"IOP and K epochs in OOP (up to {O['agg_held_tuples']:,} groups of "
                   f"{groups:,} per epoch): nothing closed an epoch before K newer ones had "
                   f"opened (heartbeats off), whatever the links' progress, so OOP's RSS grows "
                   f"with D ({grow:.1f} MB from K = {lo['k']} to K = {hi['k']}"
                   + (f", {grow / dk:.1f} MB per epoch" if dk else "") + ").")
    return [" ".join(out), ""]


# ------------------------------------------------------------------ G1

G1_CONFIGS = (("IOP", [*IOP, "--flush", "immediate"]), ("OOP lazy", ["--flush", "lazy"]),
              ("OOP slow", ["--flush", "slow"]))


def exp_g1(out: Path, data: Path, pps: int, seconds: int, keep: bool, repeat: int) -> list[str]:
    n = pps * seconds
    tiny = _tiny(data)
    rows, raw = [], []
    floor_wall = None
    for groups in (65536, 524288):
        cap = data / f"g1_{groups}_{n}.pcap"
        if not cap.exists():
            pktgen.generate(str(cap), n, groups, pps=pps, seed=1, start=START, truth=False)
        answers = set()
        cells = []
        for mult in (0.5, 1, 2):
            table = int(groups * mult)
            q = out / "queries" / f"g1_count_{groups}_table{table}.gsql"
            q.write_text(G1_QUERY.format(table=table))
            for label, opts in G1_CONFIGS:
                fl = warm(q, tiny, opts)
                floor_wall = min(floor_wall or fl["wall"], fl["wall"])
                with tempfile.NamedTemporaryFile(suffix=".out", dir=data) as f:
                    first = run(q, cap, opts, out_file=f.name)
                    dig = answer_digest(Path(f.name))
                answers.add(dig)
                cells.append((q, opts, {"groups": groups, "table": table, "config": label,
                                        "mult": mult, "walls": [],
                                        "ejections": lfta_ejections(first["stats"]),
                                        "late": late_dropped(first["stats"]),
                                        "max_rss_kb": first["max_rss_kb"], "rows": dig[1],
                                        "answer": dig[0]}))
        # timed rounds: every configuration once per round, so that load from
        # other processes on the machine spreads over all of them
        for _ in range(repeat):
            for q, opts, rec in cells:
                rec["walls"].append(run(q, cap, opts)["wall"])
        for _, _, rec in cells:
            rec["best"] = min(rec["walls"])
            rec["pps"] = n / rec["best"]
            raw.append(rec)
            rows.append([f"{groups:,}", f"{rec['table']:,} ({rec['mult']:g}x)", rec["config"],
                         f"{rec['best']:.2f}", f"{rec['pps'] / 1e6:.2f}",
                         " ".join(f"{w:.2f}" for w in rec["walls"]),
                         f"{rec['ejections']:,}", rec["late"], f"{rec['rows']:,}"])
            print(f"g1 {groups} table {rec['table']} {rec['config']}: best {rec['best']:.2f} s "
                  f"({rec['pps'] / 1e6:.2f} M pkt/s), ejections {rec['ejections']:,}, "
                  f"late {rec['late']}", flush=True)
        for r in raw:
            if r["groups"] == groups:
                r["all_equal"] = len(answers) == 1
        if not keep:
            cap.unlink()
    (out / "g1.json").write_text(json.dumps({"pps": pps, "seconds": seconds, "packets": n,
                                             "repeat": repeat, "floor_wall": floor_wall,
                                             "runs": raw}, indent=1))
    _plot_g1(out / "g1_throughput.png", raw, n)
    equal = {g: all(r["all_equal"] for r in raw if r["groups"] == g) for g in (65536, 524288)}
    md = ["## G1 / Figure 9: throughput of the per-minute count", "",
          "Query `queries/g1_count_*.gsql` (Q4): `count(*)` per `time/60, srcIP, destIP`, "
          "`DEFINE lfta_table_size` half, equal and twice the group count (direct-mapped "
          f"tables). One capture per group count: {n:,} packets at {pps:,} pkt/s of data "
          f"time ({seconds} s, so {seconds / 60:.0f} minute-epochs, the first and last "
          "partial). IOP: `--max-lfta-disorder 1 --max-hfta-disorder 1 --flush immediate`; "
          "OOP lazy: `--flush lazy`, OOP slow: `--flush slow` (both at the default "
          "disorder: LFTA 2 epochs, HFTA 3). Throughput = packets / wall seconds of the "
          f"whole `gsqlc run` process over the capture (best of {repeat} rounds, each "
          "round running the nine configurations in turn; the page cache warm; output to "
          "/dev/null; builds done before). A run over a tiny capture "
          f"takes {floor_wall:.2f} s, included in every wall time. This measures how fast "
          "a capture is processed offline, not the paper's maximum loss-free rate of a live "
          "feed (a replayed capture cannot drop packets). Ejections: the LFTA's "
          "`lfta_ejections` (partials handed to the HFTA early: collisions, plus closed "
          "epochs flushed). All nine configurations give the same answer per group "
          f"count: 65,536 {'yes' if equal[65536] else '**NO**'}, 524,288 "
          f"{'yes' if equal[524288] else '**NO**'}.", ""]
    md += _table(["groups", "LFTA table", "config", f"best of {repeat} s", "M pkt/s",
                  "all runs s", "lfta_ejections", "late", "rows"], rows)
    md += [""] + _g1_observations(raw)
    md += ["![G1](g1_throughput.png)", ""]
    return md


def _g1_observations(raw: list[dict]) -> list[str]:
    cell = {(r["groups"], r["table"], r["config"]): r for r in raw}
    keys = sorted({(g, t) for g, t, _ in cell})
    out = []
    ratios = [cell[(g, t, c)]["pps"] / cell[(g, t, "IOP")]["pps"]
              for g, t in keys for c in ("OOP lazy", "OOP slow")]
    out.append(f"OOP's throughput is {min(ratios):.2f}x to {max(ratios):.2f}x IOP's over the "
               "twelve OOP cells.")
    more = [cell[(g, t, "OOP lazy")]["ejections"] / cell[(g, t, "IOP")]["ejections"] - 1
            for g, t in keys]
    out.append(f"OOP ejects {min(more) * 100:+.0f} % to {max(more) * 100:+.0f} % partials relative to IOP "
               "(two open epochs share the table).")
    if all(cell[(g, t, "OOP lazy")]["ejections"] == cell[(g, t, "OOP slow")]["ejections"]
           for g, t in keys):
        out.append("Lazy and slow flush eject exactly the same number of partials in every "
                   "cell: in a direct-mapped table each group of a closed epoch leaves once, "
                   "whether the slow-flush cursor or the next record needing its slot takes it "
                   "out, and collisions between open groups do not depend on which.")
    return [" ".join(out), ""]


def _plot_g1(path: Path, raw: list[dict], n: int) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    for ax, groups in zip(axes, (65536, 524288)):
        rs = [r for r in raw if r["groups"] == groups]
        tables = sorted({r["table"] for r in rs})
        width = 0.27
        for j, (label, _) in enumerate(G1_CONFIGS):
            ys = [next(r["pps"] for r in rs if r["table"] == t and r["config"] == label) / 1e6
                  for t in tables]
            ax.bar([i + (j - 1) * width for i in range(len(tables))], ys, width, label=label)
        ax.set_xticks(range(len(tables)))
        ax.set_xticklabels([f"{t:,}\n({t / groups:g}x)" for t in tables])
        ax.set_xlabel("LFTA table slots")
        ax.set_ylabel("M packets / s (best of runs)")
        ax.set_title(f"{groups:,} groups")
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend()
    fig.suptitle(f"G1 / Figure 9: per-minute count throughput over {n:,} packets")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ------------------------------------------------------------------ G3

def _stream(stats: dict, name: str, key: str) -> int:
    for e in stats.get("streams", []):
        if e.get("name") == name:
            return int(e.get(key, 0))
    return 0


def _g3_captures(data: Path, pps: int, seconds: int, skew: int, groups: int) -> dict[str, Path]:
    """Link A (eth0) and link B (eth1) for a skew: both pktgen.generate over the
    same `groups` (srcIP, destIP) pairs (10.0.0.0/8), 2 * pps packets/s (two
    streams per link: even / odd IP id), A with seed 3 from START, B with
    seed 4 from START + skew (so B's packets, shifted back by the selections,
    cover the same 10 s windows as A's; a different seed so that B is not a
    copy of A)."""
    n = 2 * pps * seconds
    caps = {"eth0": data / f"g3_linkA_{pps}_{seconds}.pcap",
            "eth1": data / f"g3_linkB_skew{skew}_{pps}_{seconds}.pcap"}
    for (iface, cap), seed, start in zip(caps.items(), (3, 4), (START, START + skew)):
        if not cap.exists():
            pktgen.generate(str(cap), n, groups, pps=2 * pps, seed=seed, start=start,
                            truth=False)
    return caps


def exp_g3(out: Path, data: Path, pps: int, seconds: int, keep: bool) -> list[str]:
    skews = [0, 5, 10, 20, 30, 40]
    groups = 262144                                 # shared by the two links
    hb = "1"                                        # heartbeats on: every 1 s of data time
    queries = {}
    for d in skews:
        q = out / "queries" / f"g3_union_join_skew{d}.gsql"
        q.write_text(g3_query(d))
        queries[d] = q
    old = out / "queries" / "g3_union_join.gsql"     # the one-capture version's query
    if old.exists():
        old.unlink()
    tiny = {"eth0": data / "tiny_g3_A.pcap", "eth1": data / "tiny_g3_B.pcap"}
    for (iface, cap), seed in zip(tiny.items(), (7, 8)):
        if not cap.exists():
            pktgen.generate(str(cap), 2000, 100, pps=1000, seed=seed, start=START, truth=False)
    order = {"IOP": explain_order(queries[skews[-1]], IOP),
             "OOP": explain_order(queries[skews[-1]],
                                  ["--max-hfta-disorder", str(k_for(skews[-1]))])}
    floor = None
    for d in skews:
        fl = warm(queries[d], tiny, IOP, heartbeats=hb)["max_rss_kb"]
        floor = fl if floor is None else min(floor, fl)
        warm(queries[d], tiny, ["--max-hfta-disorder", str(k_for(d))], heartbeats=hb)
    rows, raw = [], []
    for d in skews:
        caps = _g3_captures(data, pps, seconds, d, groups)
        res = _iop_and_oop(queries[d], caps, d, data, heartbeats=hb)
        if not keep:
            caps["eth1"].unlink()
            if d == skews[-1]:
                caps["eth0"].unlink()
        rec = {"skew": d, "k": k_for(d)}
        for label, r in res.items():
            st = r["stats"]
            rec[label] = {"max_rss_kb": r["max_rss_kb"], "wall": r["wall"],
                          "late_dropped": late_dropped(st), "rows": r["answer"][1],
                          "answer": r["answer"][0], "messages": r["messages"],
                          "join_matches": _stream(st, "pairs", "tuples"),
                          "heartbeats_b": _stream(st, "b", "heartbeats"),
                          **{f"{n}_{k}": _entry(st, n, f"peak_held_{k}")
                             for n in ("m1", "m2", "pairs") for k in ("tuples", "bytes")}}
        rec["equal"] = res["IOP"]["answer"] == res["OOP"]["answer"]
        raw.append(rec)
        I, O = rec["IOP"], rec["OOP"]
        merges = {lab: (rec[lab]["m1_tuples"] + rec[lab]["m2_tuples"],
                        (rec[lab]["m1_bytes"] + rec[lab]["m2_bytes"]) / 2**20) for lab in res}
        total = {lab: merges[lab][0] + rec[lab]["pairs_tuples"] for lab in res}
        rows.append([d, rec["k"], f"{_mb(I['max_rss_kb']):.1f}", f"{_mb(O['max_rss_kb']):.1f}",
                     f"{O['max_rss_kb'] / I['max_rss_kb'] * 100:.0f} %",
                     f"{merges['IOP'][0]:,} / {merges['IOP'][1]:.1f}",
                     f"{merges['OOP'][0]:,} / {merges['OOP'][1]:.1f}",
                     f"{I['pairs_tuples']:,} / {I['pairs_bytes'] / 2**20:.1f}",
                     f"{O['pairs_tuples']:,} / {O['pairs_bytes'] / 2**20:.1f}",
                     f"{total['IOP']:,}", f"{total['OOP']:,}",
                     f"{I['late_dropped']} / {O['late_dropped']}", f"{I['join_matches']:,}",
                     "yes" if rec["equal"] else "**no**", f"{I['wall']:.1f} / {O['wall']:.1f}"])
        print(f"g3 skew={d}: IOP {_mb(I['max_rss_kb']):.1f} MB, OOP {_mb(O['max_rss_kb']):.1f} MB, "
              f"join held {I['pairs_tuples']:,} / {O['pairs_tuples']:,}, merges held "
              f"{merges['IOP'][0]:,} / {merges['OOP'][0]:,}, late {I['late_dropped']}/"
              f"{O['late_dropped']}, matches {I['join_matches']:,}/{O['join_matches']:,}, "
              f"equal {rec['equal']}", flush=True)
    (out / "g3.json").write_text(json.dumps({"pps_per_stream": pps, "seconds": seconds,
                                             "groups": groups, "heartbeat_interval": hb,
                                             "floor_kb": floor, "order": order, "runs": raw},
                                            indent=1))
    xs = [r["skew"] for r in raw]
    _plot(out / "g3_memory.png",
          f"G3 / Figure 10: 10 s window join of two unions ({pps:,} pkt/s per stream)",
          [("skew of link B (s)", "max RSS of the run (MB)", xs,
            {lab: [_mb(r[lab]["max_rss_kb"]) for r in raw] for lab in ("IOP", "OOP")}),
           ("skew of link B (s)", "peak tuples held", xs,
            {"IOP merges": [r["IOP"]["m1_tuples"] + r["IOP"]["m2_tuples"] for r in raw],
             "IOP join": [r["IOP"]["pairs_tuples"] for r in raw],
             "OOP join": [r["OOP"]["pairs_tuples"] for r in raw]})])
    md = ["## G3 / Figure 10: memory of a tumbling-window join over two unions", "",
          "Queries `queries/g3_union_join_skew{D}.gsql` (after Q6), one per skew D: link A is "
          "interface eth0, link B interface eth1, each a generated capture "
          "(`pktgen.generate`) replayed with the data clock, the two aligned on their "
          "timestamps. Four selections: a, c over eth0 (`time/10 as tb, time`), b, d over "
          "eth1 (`(time - D)/10 as tb, time - D as time`); a, b: even IP id, c, d: odd. "
          "`m1 = merge a, b` and `m2 = merge c, d` on tb; `pairs`: an INNER_JOIN of m1 and "
          "m2 on tb, srcIP and destIP (the generator has no reverse flows, so the paper's "
          "crossed `M1.srcIP = M2.destIP ...` would match nothing); `per_tb`: `select tb, "
          "count(*) as n from pairs group by tb`, the query's output, which lets the join "
          "and the merges run out of order. Link B's capture has timestamps D s later than "
          "link A's (same 10.0.0.0/8 pairs, another seed), so at each arrival instant link "
          "B's tuples carry timestamps D s behind link A's, and link B's heartbeats (from "
          "eth1's own clock, through the selections) are right for them. "
          f"{pps:,} pkt/s per stream ({2 * pps:,} per link), {seconds} s of data per link, "
          f"{groups:,} (srcIP, destIP) pairs shared by the links (so pairs match within and "
          "across links). Heartbeats on, every 1 s of data time. IOP: `--max-lfta-disorder 1 "
          "--max-hfta-disorder 1`; OOP: `--max-hfta-disorder K`, K = D // 10 + 2 (the "
          "aggregation on the join's output). Builds done before (a run over tiny captures "
          f"peaks at {_mb(floor):.1f} MB). Held: `peak_held_tuples / peak_held_bytes` (MB) "
          "of m1 + m2, and of the join; total: merges + join tuples. Matches: tuples the "
          "join emitted (the same in IOP and OOP). Equal: the two outputs (6 rows, a count "
          "per window), sorted, are identical. Wall: the whole run, IOP / OOP.", "",
          "What `explain` says of the merges and the join (the D = "
          f"{skews[-1]} s query; OOP with K = {k_for(skews[-1])}):", "",
          "| config | operator: order |", "|---|---|"]
    md += [f"| {lab} | {line} |" for lab in ("IOP", "OOP") for line in order[lab]
           if line.split(":")[0] in ("m1", "m2", "pairs", "per_tb")]
    md += [""]
    want = {"m1": "straight through", "m2": "straight through", "pairs": "come out of order"}
    ooo = all(any(line.startswith(f"{n}: out of order") and w in line for line in order["OOP"])
              for n, w in want.items())
    iop_in = all(any(line.startswith(f"{n}: in order") for line in order["IOP"]) for n in want)
    if not (ooo and iop_in):
        md += ["**The plans are not the intended ones: OOP should run m1, m2 straight "
               "through and the join on out-of-order inputs, IOP all three in order.**", ""]
    md += _table(["skew s", "K", "IOP RSS MB", "OOP RSS MB", "OOP/IOP",
                  "IOP merges held tuples / MB", "OOP merges held tuples / MB",
                  "IOP join held tuples / MB", "OOP join held tuples / MB",
                  "IOP total held", "OOP total held", "late IOP / OOP", "matches", "equal",
                  "wall s IOP / OOP"], rows)
    md += [""] + _g3_observations(raw, floor)
    md += ["![G3](g3_memory.png)", ""]
    return md


def _g3_observations(raw: list[dict], floor: int) -> list[str]:
    hi = raw[-1]
    I, O = hi["IOP"], hi["OOP"]

    def total(r: dict) -> int:
        return r["m1_tuples"] + r["m2_tuples"] + r["pairs_tuples"]

    small = [r for r in raw if r["skew"] < 20]
    ratios = [r["OOP"]["max_rss_kb"] / r["IOP"]["max_rss_kb"] * 100 for r in small]
    out = [f"Paper (Figure 10): IOP and OOP hold the same number of tuples (IOP in the "
           f"merges' buffers, OOP in the join's hash tables); below 20 s of skew the "
           f"difference in memory is inconsequential, at the extreme (40 s) OOP uses about "
           f"20 % more. Here: at D = {hi['skew']} s IOP holds {total(I):,} tuples "
           f"({I['m1_tuples'] + I['m2_tuples']:,} in the merges, {I['pairs_tuples']:,} in "
           f"the join) and OOP {total(O):,} ({O['m1_tuples'] + O['m2_tuples']:,} in the "
           f"merges, {O['pairs_tuples']:,} in the join), {total(O) / total(I) * 100:.0f} % "
           f"of IOP's; OOP's max RSS is {_mb(O['max_rss_kb']):.1f} MB against "
           f"{_mb(I['max_rss_kb']):.1f} MB, {O['max_rss_kb'] / I['max_rss_kb'] * 100:.0f} % "
           f"of IOP's"]
    if ratios:
        out[-1] += (f"; below 20 s OOP's RSS is {min(ratios):.0f} % to {max(ratios):.0f} % "
                    "of IOP's.")
    else:
        out[-1] += "."
    if not O["m1_tuples"] + O["m2_tuples"]:
        per = {lab: [(r[lab]["max_rss_kb"] - floor) * 1024 / total(r[lab]) for r in (raw[0], hi)]
               for lab in ("IOP", "OOP")}
        out.append(f"OOP's merges hold nothing: its tuples wait in the join, whose state is "
                   f"purged only as both inputs' heartbeats pass (the late link's); IOP's join "
                   f"holds one 10 s window of both inputs ({I['pairs_tuples']:,} tuples) "
                   f"whatever the skew, and its merges the early link's last D s. The same "
                   f"tuples cost OOP more RSS: above the run's floor, {per['OOP'][0]:.0f} "
                   f"bytes per held tuple at D = {raw[0]['skew']} s and {per['OOP'][1]:.0f} at "
                   f"D = {hi['skew']} s, against IOP's {per['IOP'][0]:.0f} and "
                   f"{per['IOP'][1]:.0f} (the counters say "
                   f"{O['pairs_bytes'] / max(1, O['pairs_tuples']):.0f} bytes per tuple). "
                   "Presumably the disordered side's structures in "
                   "`join_op.hpp`: a vector pool of entries, a min-heap and a free list, "
                   "vectors that grow by doubling (and copy when they grow), where an in-order "
                   "side keeps a deque; not broken down further.")
    lates = sum(r[lab]["late_dropped"] for r in raw for lab in ("IOP", "OOP"))
    eq = all(r["equal"] for r in raw)
    out.append(f"Late drops over all {2 * len(raw)} runs: {lates}; IOP and OOP answers "
               f"{'identical at every skew' if eq else '**differ at some skew**'}.")
    return [" ".join(out), ""]


# ------------------------------------------------------------------ main

def _git(*args: str):
    """git's output (stripped), or None when it fails."""
    p = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True)
    return p.stdout.strip() if p.returncode == 0 else None


def provenance() -> str:
    """Where and on what a section was measured."""
    head = _git("rev-parse", "--short", "HEAD")
    branch = _git("rev-parse", "--abbrev-ref", "HEAD")
    integ = _git("rev-parse", "--verify", "--quiet", "oop-integration")
    if not integ:
        base = "this tree's own compiler and runtime (no oop-integration branch here)"
    else:
        mb = _git("merge-base", "HEAD", integ)
        later = _git("rev-list", "--count", f"{mb}..{integ}") if mb else "?"
        if not mb or _git("merge-base", "--is-ancestor", mb, integ) is None:
            base = "oop-integration not merged: dry run"
        elif mb == integ:
            base = f"on oop-integration at {integ[:7]} (its tip)"
        else:
            base = f"on oop-integration at {mb[:7]} ({later} later commit(s) there not included)"
    if _git("status", "--porcelain", "--untracked-files=no", "--", "compiler", "runtime_c",
            "hfta_templates", "templates"):
        base += "; uncommitted changes to the compiler or runtime"
    cpu = ""
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                   if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return (f"Measured {datetime.date.today()} on tree {branch} at {head}, {base}; "
            f"{os.cpu_count()} cores ({cpu}), Python {platform.python_version()}, machine "
            "shared with other work.")


def _title() -> list[str]:
    return ["# Out-of-order processing: Li et al.'s (2008) Gigascope experiments (G1, G2, G3)", "",
            "Written by `python bench/oop_experiments.py all` (or one experiment: its section "
            "is replaced, the others kept); each section says what it was measured on. "
            "Absolute times and RSS vary with the load of the (shared) machine.", ""]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("experiment", choices=[*EXPERIMENTS, "all"])
    ap.add_argument("--pps", type=int, help="packets per second of data time: per link (g2), "
                    "of the capture (g1), per stream (g3); defaults 110000, 25000, 10000")
    ap.add_argument("--seconds", type=int, help="seconds of data per link (defaults: g2 100, "
                    "g1 240, g3 60)")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per G1 configuration")
    ap.add_argument("--out", default=str(HERE / "results_oop"))
    ap.add_argument("--data", default=str(HERE / "data" / "oop"),
                    help="where the captures are written (removed after use)")
    ap.add_argument("--keep-data", action="store_true", help="keep (and reuse) the captures")
    args = ap.parse_args(argv)
    out, data = Path(args.out), Path(args.data)
    (out / "queries").mkdir(parents=True, exist_ok=True)
    data.mkdir(parents=True, exist_ok=True)
    todo = EXPERIMENTS if args.experiment == "all" else (args.experiment,)
    defaults = {"g2": (110_000, 100), "g1": (25_000, 240), "g3": (10_000, 60)}
    for e in todo:
        pps = args.pps or defaults[e][0]
        seconds = args.seconds or defaults[e][1]
        t0 = time.perf_counter()
        if e == "g2":
            md = exp_g2(out, data, pps, seconds, args.keep_data)
        elif e == "g1":
            md = exp_g1(out, data, pps, seconds, args.keep_data, args.repeat)
        else:
            md = exp_g3(out, data, pps, seconds, args.keep_data)
        md.insert(2, provenance())
        md.insert(3, "")
        md.append(f"({e} took {time.perf_counter() - t0:.0f} s.)")
        md.append("")
        (out / f"{e}.md").write_text("\n".join(md))
        print("\n".join(md), flush=True)
    parts = _title()
    for e in EXPERIMENTS:
        f = out / f"{e}.md"
        if f.exists():
            parts.append(f.read_text())
    (out / "results.md").write_text("\n".join(parts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
