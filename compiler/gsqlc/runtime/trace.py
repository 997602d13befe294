"""`gsqlc trace FILE [--plot out.png]`: per-operator queueing delay of the
heartbeats a run traced (`gsqlc run --trace FILE`, seed 000 section 6.2).

Each line of FILE is one heartbeat's path:
    {"trace": 7, "origin": "_fta_flows", "emitted_usec": T0,
     "hops": [{"node": "flows", "arrived_usec": T1, "clock_usec": C}, ...]}
The delay of a hop is its arrival time less the previous hop's (the
origin's emission for the first hop): the time the heartbeat spent queued
before that operator.
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


def load(path: str) -> dict[str, NodeDelays]:
    per_node: dict[str, NodeDelays] = {}
    t_first = None
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
            hops = rec["hops"]
        except (ValueError, KeyError, TypeError):
            raise TraceError(f"{path}:{lineno}: not a heartbeat trace line") from None
        if t_first is None:
            t_first = t0
        prev = t0
        for h in hops:
            arrived = float(h["arrived_usec"])
            nd = per_node.setdefault(h["node"], NodeDelays(h["node"]))
            nd.times_s.append((t0 - t_first) / 1e6)
            nd.delays_us.append(max(arrived - prev, 0.0))
            prev = arrived
    return per_node


def _pct(sorted_vals: list[float], q: float) -> float:
    if not sorted_vals:
        return 0.0
    i = min(len(sorted_vals) - 1, max(0, int(round(q * (len(sorted_vals) - 1)))))
    return sorted_vals[i]


def summary(per_node: dict[str, NodeDelays]) -> str:
    out = [f"{'operator':32} {'heartbeats':>10} {'mean us':>10} {'p50 us':>10} "
           f"{'p99 us':>10} {'max us':>10}"]
    for name, nd in per_node.items():
        d = sorted(nd.delays_us)
        mean = sum(d) / len(d) if d else 0.0
        out.append(f"{name:32} {len(d):>10} {mean:>10.1f} {_pct(d, 0.5):>10.1f} "
                   f"{_pct(d, 0.99):>10.1f} {(d[-1] if d else 0):>10.1f}")
    return "\n".join(out) + "\n"


def plot(per_node: dict[str, NodeDelays], out: str) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise TraceError("plotting needs matplotlib: pip install 'gsqlc[plot]'") from None
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
