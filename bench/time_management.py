#!/usr/bin/env python3
"""Srivastava & Widom's heartbeat generation ("Flexible time
management in data stream systems") measured in gsqlc: issue 11's
experiments, on generated captures replayed with the data clock.

    python bench/time_management.py estimators [--pps 2000] [--seconds 60]
    python bench/time_management.py window     [--pps 2000] [--seconds 60]
    python bench/time_management.py level      [--pps 2000] [--seconds 60]
    python bench/time_management.py all

estimators: one interface, two links (pktgen.generate_arrivals): link A on
    time, link B 0.5 s late with a 3 s spike for 1 s every 15 s.  A count per
    second and (srcIP, destIP).  Given bounds (out_of_order = 3 s, the worst
    case, declared), the "max" estimator (section 6.1) and the "adaptive" one
    (section 6.2, W = 1000, alpha = 0.5).  Reported: records dropped below an
    issued heartbeat, the heartbeat lag (largest timestamp arrived less the
    generated heartbeat, from the run's heartbeat traces: how long, in
    application time, a closed second waits before its results go out) and
    the groups the aggregations held at their peak.
window: the adaptive estimator's drops and lag against W (100 .. 10000
    records) and alpha (0, 0.5, 0.9), same data.
level: query-level against operator-level heartbeats (section 7.1-7.2): two
    interfaces, `a` on time and `b` whose records arrive up to 3 s out of
    order (out_of_order b = 3 declared), each counted per second and
    (srcIP, destIP).  At query level every source is given the least
    heartbeat of all, so `a`'s count waits for `b`: its groups held and its
    heartbeat lag, against operator level.

Each configuration is one `python -m gsqlc run` (bench/oop_experiments.run:
fresh process, max RSS) with --stats and --trace, heartbeats every 0.1 s of
the data clock, and otherwise the defaults: a captured source with generated
heartbeats is read in time, a quantum of its time a round, and the HFTA
aggregation closes its seconds on the generated promises alone, however
far the data runs ahead.  Results (results.md, one PNG per
experiment, raw JSON) go to bench/results_time/.
"""
from __future__ import annotations

import argparse
import datetime
import json
import platform
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "compiler"))
import oop_experiments  # noqa: E402
import pktgen  # noqa: E402
from gsqlc.runtime.trace import read as read_trace  # noqa: E402

OUT = HERE / "results_time"
N_GROUPS = 4096
COMMON: list[str] = []   # the defaults: declared bounds alone are enough
PER_SECOND = ("DEFINE {{ query_name 'per_s{sfx}'; }}\n"
              "select tb, srcIP, destIP, count(*) as cnt from {src}IPV4\n"
              "group by time as tb, srcIP, destIP;\n")


def spiky(t):
    """Link B's delay: 0.5 s, 3 s for the packets stamped in [10, 11) mod 15 s."""
    return np.where((t % 15 >= 10) & (t % 15 < 11), 3.0, 0.5)


_BUILT: set[str] = set()


def _run(query: Path, capture, opts: list[str], work: Path, tag: str) -> dict:
    if str(query) not in _BUILT:   # build once, outside what is measured
        oop_experiments.run(query, capture, COMMON, heartbeats="0.1")
        _BUILT.add(str(query))
    trace = work / f"{tag}.trace"
    r = oop_experiments.run(query, capture, [*COMMON, "--trace", str(trace), *opts],
                            heartbeats="0.1")
    st = r["stats"]
    lags: dict[str, list[float]] = {}
    for name, sp in read_trace(str(trace))[1].items():
        lags[name] = [max(d - h, 0.0) for d, h in zip(sp.data_s, sp.heartbeat_s)]
    return {
        "dropped": {s["iface"]: (s["time"] or {}).get("dropped_below_heartbeat", 0)
                    for s in st["sources"]},
        "late": oop_experiments.late_dropped(st),
        "held": {n["name"]: n["peak_held_tuples"] for n in st["nodes"]},
        "lag": {k: _summary(v) for k, v in lags.items()},
        "bounds": {s["iface"]: (s["time"] or {}).get("bounds_to") for s in st["sources"]},
        "wall": r["wall"], "max_rss_kb": r["max_rss_kb"],
        "records": sum(s["records_read"] for s in st["sources"]),
    }


def _summary(v: list[float]) -> dict:
    if not v:
        return {"mean": 0.0, "p50": 0.0, "p99": 0.0, "max": 0.0}
    a = np.array(v)
    return {"mean": float(a.mean()), "p50": float(np.percentile(a, 50)),
            "p99": float(np.percentile(a, 99)), "max": float(a.max())}


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _bars(ax, labels: list[str], values: list[float], ylabel: str) -> None:
    ax.bar(range(len(labels)), values, color=[f"C{i}" for i in range(len(labels))])
    ax.set_xticks(range(len(labels)), labels)
    ax.set_ylabel(ylabel)


def _save(fig, plt, name: str, title: str) -> None:
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(OUT / f"{name}.png", dpi=110)
    plt.close(fig)


def _spiky_capture(work: Path, pps: int, seconds: int) -> tuple[Path, Path]:
    cap = work / "spiky.pcap"
    pktgen.generate_arrivals(str(cap), pps * seconds, N_GROUPS, pps=pps, seed=7,
                             delays=[0.0, spiky])
    q = work / "per_s.gsql"
    q.write_text(PER_SECOND.format(sfx="", src=""))
    return cap, q


def estimators(work: Path, pps: int, seconds: int) -> tuple[str, dict]:
    cap, q = _spiky_capture(work, pps, seconds)
    configs = {
        "given (out_of_order 3 s)": ["--out-of-order", "default=3.0"],
        "max": ["--heartbeats", "estimate=max"],
        "adaptive (W 1000, alpha 0.5)": ["--heartbeats", "estimate=adaptive", "--heartbeats",
                                         "window=1000", "--heartbeats", "alpha=0.5"],
    }
    res = {name: _run(q, cap, opts, work, f"est{i}") for i, (name, opts) in
           enumerate(configs.items())}
    lines = ["| bounds | records | dropped below a heartbeat | late in operators | "
             "heartbeat lag mean / p50 / p99 / max (s) | groups held at peak (LFTA + HFTA) | "
             "wall (s) |", "|---|---:|---:|---:|---|---:|---:|"]
    for name, r in res.items():
        lag = r["lag"].get("default", _summary([]))
        lines.append(f"| {name} | {r['records']:,} | {sum(r['dropped'].values()):,} | "
                     f"{r['late']:,} | {lag['mean']:.2f} / {lag['p50']:.2f} / {lag['p99']:.2f} "
                     f"/ {lag['max']:.2f} | {sum(r['held'].values()):,} | {r['wall']:.2f} |")
    plt = _plt()
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    names = list(res)
    short = [n.split(" (")[0] for n in names]
    _bars(ax[0], short, [res[n]["lag"].get("default", _summary([]))["mean"] for n in names],
          "mean heartbeat lag (s of application time)")
    _bars(ax[1], short, [sum(res[n]["dropped"].values()) for n in names],
          "records dropped below an issued heartbeat")
    _save(fig, plt, "estimators",
          "given bounds vs estimated (max, adaptive): link B 0.5 s late, 3 s spikes")
    return "\n".join(lines), res


def window(work: Path, pps: int, seconds: int) -> tuple[str, dict]:
    cap, q = _spiky_capture(work, pps, seconds)
    res: dict = {}
    for alpha in (0.0, 0.5, 0.9):
        for w in (100, 1000, 10000):
            res[f"{alpha}/{w}"] = _run(q, cap, ["--heartbeats", "estimate=adaptive",
                                                "--heartbeats", f"window={w}",
                                                "--heartbeats", f"alpha={alpha}"],
                                       work, f"w{alpha}_{w}")
    lines = ["| alpha | W | dropped below a heartbeat | heartbeat lag mean / p99 (s) |",
             "|---:|---:|---:|---|"]
    for key, r in res.items():
        alpha, w = key.split("/")
        lag = r["lag"].get("default", _summary([]))
        lines.append(f"| {alpha} | {int(w):,} | {sum(r['dropped'].values()):,} | "
                     f"{lag['mean']:.2f} / {lag['p99']:.2f} |")
    plt = _plt()
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    for alpha in (0.0, 0.5, 0.9):
        ws = [100, 1000, 10000]
        ax[0].plot(ws, [sum(res[f"{alpha}/{w}"]["dropped"].values()) for w in ws], marker="o",
                   label=f"alpha {alpha}")
        ax[1].plot(ws, [res[f"{alpha}/{w}"]["lag"].get("default", _summary([]))["mean"]
                        for w in ws], marker="o", label=f"alpha {alpha}")
    for a, yl in zip(ax, ("records dropped", "mean heartbeat lag (s)")):
        a.set_xscale("log")
        a.set_xlabel("W (records without a higher skew before lowering)")
        a.set_ylabel(yl)
        a.grid(True, alpha=0.3)
        a.legend()
    _save(fig, plt, "window",
          "adaptive estimator (Srivastava & Widom 2004 Figure 4): drops and lag against W and alpha")
    return "\n".join(lines), res


def level(work: Path, pps: int, seconds: int) -> tuple[str, dict]:
    caps = {"a": work / "a.pcap", "b": work / "b.pcap"}
    pktgen.generate_arrivals(str(caps["a"]), pps * seconds, N_GROUPS, pps=pps, seed=11,
                             delays=[0.0])
    rng = np.random.default_rng(12)
    pktgen.generate_arrivals(str(caps["b"]), pps * seconds, N_GROUPS, pps=pps, seed=13,
                             delays=[lambda t: rng.uniform(0.0, 3.0, len(t))])
    q = work / "two.gsql"
    q.write_text(PER_SECOND.format(sfx="_a", src="[a].") + PER_SECOND.format(sfx="_b",
                                                                             src="[b]."))
    base = ["--out-of-order", "b=3.0", "--out-of-order", "a=0"]
    res = {lv: _run(q, caps, [*base, "--heartbeats", f"level={lv}"], work, f"lv_{lv}")
           for lv in ("operator", "query")}
    lines = ["| heartbeats | a: heartbeat lag mean / p99 (s) | b: lag mean / p99 (s) | "
             "groups held at peak, a's count (LFTA + HFTA) | b's count | dropped | max RSS (MB) |",
             "|---|---|---|---:|---:|---:|---:|"]
    for lv, r in res.items():
        la, lb = r["lag"].get("a", _summary([])), r["lag"].get("b", _summary([]))
        ha = sum(v for k, v in r["held"].items() if k.endswith("per_s_a"))
        hb = sum(v for k, v in r["held"].items() if k.endswith("per_s_b"))
        lines.append(f"| {lv} level | {la['mean']:.2f} / {la['p99']:.2f} | {lb['mean']:.2f} / "
                     f"{lb['p99']:.2f} | {ha:,} | {hb:,} | {sum(r['dropped'].values()):,} | "
                     f"{r['max_rss_kb'] / 1024:.0f} |")
    plt = _plt()
    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    lv = list(res)
    _bars(ax[0], [f"{x} level" for x in lv], [res[x]["lag"].get("a", _summary([]))["mean"]
                                              for x in lv], "source a: mean heartbeat lag (s)")
    _bars(ax[1], [f"{x} level" for x in lv],
          [sum(v for k, v in res[x]["held"].items() if k.endswith("per_s_a")) for x in lv],
          "a's count: groups held at peak")
    _save(fig, plt, "level", "query-level vs operator-level heartbeats (b out of order by 3 s)")
    return "\n".join(lines), res


EXPERIMENTS = {"estimators": estimators, "window": window, "level": level}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("which", choices=[*EXPERIMENTS, "all"])
    ap.add_argument("--pps", type=int, default=2000, help="packets per second per link")
    ap.add_argument("--seconds", type=int, default=60)
    args = ap.parse_args(argv)
    OUT.mkdir(exist_ok=True)
    names = list(EXPERIMENTS) if args.which == "all" else [args.which]
    md = [f"# Heartbeat generation (Srivastava & Widom 2004): {', '.join(names)}", "",
          f"{datetime.date.today()}, {platform.processor() or platform.machine()}, "
          f"{args.pps} packets/s per link, {args.seconds} s; "
          f"`python bench/time_management.py {args.which} --pps {args.pps} "
          f"--seconds {args.seconds}`", ""]
    raw = {}
    with tempfile.TemporaryDirectory() as d:
        for name in names:
            table, res = EXPERIMENTS[name](Path(d), args.pps, args.seconds)
            print(f"## {name}\n{table}\n", flush=True)
            md += [f"## {name}", "", table, "", f"![{name}]({name}.png)", ""]
            raw[name] = res
    suffix = "" if args.which == "all" else f"_{args.which}"
    (OUT / f"results{suffix}.md").write_text("\n".join(md))
    (OUT / f"raw{suffix}.json").write_text(json.dumps(raw, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
