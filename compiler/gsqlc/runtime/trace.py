"""`gsqlc trace FILE [--plot out.png]`: per-operator queueing delay of the
heartbeats a run traced (`gsqlc run --trace FILE`, Johnson et al. 2005, section 6.2).

Each line of FILE is one heartbeat's path:
    {"trace": 7, "origin": "_fta_flows", "emitted_usec": T0,
     "hops": [{"node": "flows", "arrived_usec": T1, "clock_usec": C}, ...]}
The delay of a hop is its arrival time less the previous hop's (the
origin's emission for the first hop): the time the heartbeat spent queued
before that operator.

When the run generates heartbeats from time bounds (Srivastava & Widom 2004), a line also
has the origin's "source", its generated "heartbeat_usec" and "data_usec",
the largest timestamp that had arrived on it: `read` gathers them per
source, the summary reports each source's heartbeat lag and the plot draws
data and heartbeat progress per source against the run's clock.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import TraceError


@dataclass
class NodeDelays:
    node: str
    times_s: list[float] = field(default_factory=list)   # emission time since the first trace
    delays_us: list[float] = field(default_factory=list)


@dataclass
class SourceProgress:
    source: str
    clock_s: list[float] = field(default_factory=list)      # run clock, s since the first
    data_s: list[float] = field(default_factory=list)       # largest timestamp arrived
    heartbeat_s: list[float] = field(default_factory=list)  # generated heartbeat


def read(path: str) -> tuple[dict[str, NodeDelays], dict[str, SourceProgress]]:
    """Both views of a trace file, in one pass over its lines: the delay of
    every hop per operator, and -- for sources with generated heartbeats --
    data and heartbeat progress per source (seconds since the run clock's
    first traced value, one point per traced heartbeat of one of its
    LFTAs)."""
    per_node: dict[str, NodeDelays] = {}
    per_source: dict[str, SourceProgress] = {}
    t_first = c_first = None
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as e:
        raise TraceError(f"{path}: {e.strerror}") from None
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            t0 = float(rec["emitted_usec"])
            arrivals = [(h["node"], float(h["arrived_usec"])) for h in rec["hops"]]
            progress_of = ("source" in rec and rec.get("clock_usec") is not None
                           and rec.get("data_usec") is not None)
            if progress_of:
                clock, hb, data = (float(rec[k]) for k in ("clock_usec", "heartbeat_usec",
                                                            "data_usec"))
        except (ValueError, KeyError, TypeError, AttributeError):
            raise TraceError(f"{path}:{lineno}: not a heartbeat trace line") from None
        if t_first is None:
            t_first = t0
        prev = t0
        for node, arrived in arrivals:
            nd = per_node.setdefault(node, NodeDelays(node))
            nd.times_s.append((t0 - t_first) / 1e6)
            nd.delays_us.append(max(arrived - prev, 0.0))
            prev = arrived
        if progress_of:
            if c_first is None:
                c_first = clock
            sp = per_source.setdefault(str(rec["source"]), SourceProgress(str(rec["source"])))
            sp.clock_s.append((clock - c_first) / 1e6)
            sp.data_s.append((data - c_first) / 1e6)
            sp.heartbeat_s.append((hb - c_first) / 1e6)
    return per_node, per_source


def _pct(sorted_vals: list[float], q: float) -> float:
    if not sorted_vals:
        return 0.0
    i = min(len(sorted_vals) - 1, max(0, int(round(q * (len(sorted_vals) - 1)))))
    return sorted_vals[i]


def summary(per_node: dict[str, NodeDelays],
            per_source: dict[str, SourceProgress] | None = None) -> str:
    out = [f"{'operator':32} {'heartbeats':>10} {'mean us':>10} {'p50 us':>10} "
           f"{'p99 us':>10} {'max us':>10}"]
    for name, nd in per_node.items():
        d = sorted(nd.delays_us)
        mean = sum(d) / len(d) if d else 0.0
        out.append(f"{name:32} {len(d):>10} {mean:>10.1f} {_pct(d, 0.5):>10.1f} "
                   f"{_pct(d, 0.99):>10.1f} {(d[-1] if d else 0):>10.1f}")
    if per_source:
        out.append("")
        out.append(f"{'source':32} {'heartbeats':>10} {'lag mean s':>10} {'lag p50 s':>10} "
                   f"{'lag p99 s':>10} {'lag max s':>10}")
        for name, sp in per_source.items():
            lag = sorted(max(d - h, 0.0) for d, h in zip(sp.data_s, sp.heartbeat_s))
            mean = sum(lag) / len(lag) if lag else 0.0
            out.append(f"{name:32} {len(lag):>10} {mean:>10.3f} {_pct(lag, 0.5):>10.3f} "
                       f"{_pct(lag, 0.99):>10.3f} {(lag[-1] if lag else 0):>10.3f}")
    return "\n".join(out) + "\n"


def plot(per_node: dict[str, NodeDelays], out: str,
         per_source: dict[str, SourceProgress] | None = None) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise TraceError("plotting needs matplotlib: pip install 'gsqlc[plot]'") from None
    if per_source:
        fig, (ax, ax2) = plt.subplots(2, 1, figsize=(8, 8))
        for i, (name, sp) in enumerate(per_source.items()):
            color = f"C{i % 10}"
            ax2.plot(sp.clock_s, sp.data_s, color=color, linewidth=1.2, label=f"{name}: data")
            ax2.plot(sp.clock_s, sp.heartbeat_s, color=color, linestyle="--", linewidth=1.2,
                     label=f"{name}: heartbeat")
        ax2.set_xlabel("run clock (s since the first trace)")
        ax2.set_ylabel("application time (s)")
        ax2.set_title("per source: largest timestamp arrived and generated heartbeat")
        ax2.grid(True, alpha=0.3)
        ax2.legend(loc="upper left", fontsize=8)
    else:
        fig, ax = plt.subplots(figsize=(8, 4.5))
    for name, nd in per_node.items():
        ax.plot(nd.times_s, nd.delays_us, marker=".", linewidth=1, label=name)
    ax.set_xlabel("heartbeat emitted at (s since the first)")
    ax.set_ylabel("queueing delay before the operator (us)")
    ax.set_title("heartbeat traces: per-operator queueing delay")
    ax.grid(True, alpha=0.3)
    if per_node:
        ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
