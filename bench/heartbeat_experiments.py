#!/usr/bin/env python3
"""The experiments of Johnson et al. 2005, section 7, on generated captures replayed with
the data clock (so they run in seconds).

    python bench/heartbeat_experiments.py [--pps 100000] [--seconds 120] [--out bench/results_heartbeats]

(a) flow counts over the merge of two busy links and one idle link (an
    interface set [links] = main0, main1, control; control goes quiet after
    5 s): peak tuples held by the merge for heartbeat intervals 1..30 s and
    without heartbeats;
(b) the full outer join of flow1/flow2 (section 7.2): peak tuples held by
    the join for intervals 1..60 s and without heartbeats;
(c) CPU cost: the flow query on two busy links with 1 s heartbeats against
    heartbeats off (best of 3, user+system CPU seconds of the run).
Each experiment prints a table and writes a PNG plot and a markdown table.
The idle link is given --max-skew 1 s, as an administrator would (section
4.5): its heartbeats then follow the clock.
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import pktgen  # noqa: E402

START = 1_700_000_000
FLOWS = ("select tb, protocol, srcIP, destIP, count(*) as cnt, sum(len) as bytes "
         "from {src}.IPV4 group by time/10 as tb, protocol, srcIP, destIP")


def _data(d: Path, pps: int, seconds: int) -> dict[str, Path]:
    d.mkdir(parents=True, exist_ok=True)
    out = {}
    for name, seed, n in (("main0", 1, pps * seconds), ("main1", 2, pps * seconds),
                          ("control", 3, 50)):
        p = d / f"{name}_{pps}_{seconds}.pcap"
        if not p.exists():
            pktgen.generate(str(p), n, 4096, pps=pps if name != "control" else 10,
                            seed=seed, start=START, truth=False)
        out[name] = p
    return out


def _run(args: list[str]) -> tuple[dict, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run([sys.executable, "-m", "gsqlc", "run", *map(str, args), "--stats",
                        "--clock", "data", "--output-file", "/dev/null"],
                       stderr=subprocess.PIPE, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise SystemExit(p.stderr)
    err = p.stderr
    stats = json.loads(err[err.index("{"):])
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return stats, cpu


def _peak(stats: dict, node: str) -> int:
    return next(n["peak_held_tuples"] for n in stats["nodes"] if n["name"] == node)


def _peaks_by_interval(args: list, intervals: list[int], node: str) -> tuple[list[int], int]:
    """Peak tuples held by `node` for each heartbeat interval, and without
    heartbeats."""
    peaks = [_peak(_run([*args, "--heartbeat-interval", str(x)])[0], node) for x in intervals]
    return peaks, _peak(_run([*args, "--heartbeat-interval", "off"])[0], node)


def _plot(path: Path, title: str, xs, ys, off: int, ylabel: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(xs, ys, marker="o", label="with heartbeats")
    ax.axhline(off, color="red", linestyle="--", label=f"without heartbeats ({off:,})")
    ax.set_xlabel("heartbeat interval (s)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pps", type=int, default=100000, help="packets per second of each busy link")
    ap.add_argument("--seconds", type=int, default=120)
    ap.add_argument("--out", default=str(HERE / "results_heartbeats"))
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    data = _data(HERE / "data", args.pps, args.seconds)
    qdir = out / "queries"
    qdir.mkdir(exist_ok=True)
    report = []

    # (a) merge memory
    qa = qdir / "flows_merge.gsql"
    qa.write_text("DEFINE { query_name 'flows'; }\n" + FLOWS.format(src="[links]"))
    srcs = ["--source", f"links=pcap:{data['main0']}", "--source", f"links=pcap:{data['main1']}",
            "--source", f"links=pcap:{data['control']}", "--max-skew", "links=1"]
    xs_a = [1, 2, 5, 10, 15, 20, 30]
    ys_a, off_a = _peaks_by_interval([qa, *srcs], xs_a, "_fta_flows")
    _plot(out / "merge_memory.png", "(a) merge of two busy links and an idle one: peak tuples held",
          xs_a, ys_a, off_a, "peak tuples buffered by the merge")
    report += ["## (a) merge memory against heartbeat interval", "",
               "| interval s | peak tuples held by the merge |", "|---:|---:|"]
    report += [f"| {x} | {y:,} |" for x, y in zip(xs_a, ys_a)] + [f"| off | {off_a:,} |", ""]

    # (b) full outer join memory
    qb = qdir / "flow_join.gsql"
    qb.write_text(
        "DEFINE { query_name 'flow1'; }\n" + FLOWS.format(src="[main0_and_control]") + ";\n"
        "DEFINE { query_name 'flow2'; }\n" + FLOWS.format(src="main1") + ";\n"
        "DEFINE { query_name 'joined'; }\n"
        "select A.tb, A.protocol, A.srcIP, A.destIP, A.cnt, B.cnt as cnt2 OUTER_JOIN "
        "from flow1 A, flow2 B where A.tb = B.tb and A.protocol = B.protocol and "
        "A.srcIP = B.srcIP and A.destIP = B.destIP\n")
    srcs_b = ["--source", f"main0_and_control=pcap:{data['main0']}",
              "--source", f"main0_and_control=pcap:{data['control']}",
              "--source", f"main1=pcap:{data['main1']}", "--max-skew", "main0_and_control=1",
              "--output", "joined"]
    xs_b = [1, 5, 10, 20, 30, 40, 60]
    ys_b, off_b = _peaks_by_interval([qb, *srcs_b], xs_b, "joined")
    _plot(out / "join_memory.png", "(b) full outer join flow1/flow2: peak tuples held",
          xs_b, ys_b, off_b, "peak tuples held by the join")
    report += ["## (b) full outer join memory against heartbeat interval", "",
               "| interval s | peak tuples held by the join |", "|---:|---:|"]
    report += [f"| {x} | {y:,} |" for x, y in zip(xs_b, ys_b)] + [f"| off | {off_b:,} |", ""]

    # (c) CPU overhead on two busy links
    qc = qdir / "flows_busy.gsql"
    qc.write_text("DEFINE { query_name 'flows'; }\n" + FLOWS.format(src="[busy]"))
    srcs_c = ["--source", f"busy=pcap:{data['main0']}", "--source", f"busy=pcap:{data['main1']}"]
    cpu = {}
    for label, iv in (("1 s", "1"), ("off", "off")):
        cpu[label] = min(_run([qc, *srcs_c, "--heartbeat-interval", iv])[1] for _ in range(3))
    overhead = (cpu["1 s"] - cpu["off"]) / cpu["off"] * 100
    report += ["## (c) CPU cost of 1 s heartbeats on two busy links", "",
               f"{2 * args.pps * args.seconds:,} packets over {args.seconds} s of data time; "
               "user+system CPU seconds, best of 3.", "",
               "| heartbeats | CPU s |", "|---|---:|",
               f"| every 1 s | {cpu['1 s']:.3f} |", f"| off | {cpu['off']:.3f} |", "",
               f"overhead: {overhead:+.2f} %", ""]
    text = "\n".join(report)
    (out / "results.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
