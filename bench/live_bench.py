#!/usr/bin/env python3
"""Live capture measured: gsqlc reading a link while frames arrive, against
`tcpdump -w /dev/null` on the same traffic.

    python bench/live_bench.py capture [--rounds 3]   # CPU per frame, share to user space
    python bench/live_bench.py g1 [--groups 65536 524288] [--seconds 20]
    python bench/live_bench.py all

Needs root: every run happens in a network namespace of the benchmark's own
holding a veth pair (va, vb) that it creates and removes.  Frames come from
bench/live/sender.c (built here with gcc): Ethernet/IPv4/UDP frames of 60
bytes written on va with sendmmsg(2), at a fixed rate or as fast as it goes,
destination port 60000 + k % 16 for frame k, F flows (srcIP, destIP).  The
capture reads vb.  The sender is pinned to CPU 0 -- the kernel delivers a
veth frame to the capture's ring in the sender's softirq, on its CPU -- and
the capturing process to CPU 1.

Measured per run (one capturing process per run, started and ready before
the first frame):

- frames counted exactly: what the capture counted plus the drops it
  reported (the ring's, PACKET_STATISTICS) plus vb's rx_dropped growth must
  equal the frames sent; a run where it does not is marked.
- CPU per frame: the capturing process's user + system time, all threads,
  from /proc/PID/stat, from just before the first frame to one second after
  the last, divided by the frames sent (the sender reads it; the same
  interval from /proc/PID/task/*/schedstat, in ns, resolves what the stat
  file's 10 ms ticks cannot and is reported beside it).
- the share of frames that reach user space (Sonata's metric: Gupta et al.,
  "Sonata: Query-Driven Streaming Network Telemetry", SIGCOMM 2018): frames
  the kernel handed to the process over frames sent.

`capture`: tcpdump, tcpdump with the selective query's filter, and gsqlc's
counting, selective (1 frame in 16; kernel filter on and off) and
aggregating queries, at 100 k, 300 k and 1 M frames/s and at the sender's
highest rate; gsqlc's counting query also through libpcap
(`--pcap-reader libpcap`).

`g1`: Li et al., "Out-of-Order Processing: a New Architecture for
High-Performance Stream Systems" (VLDB 2008), experiment G1 run live: the
count per (srcIP, destIP) and epoch for F = 65,536 and 524,288 flows (LFTA
table of F slots), in-order processing with immediate flush and
out-of-order processing with lazy and slow flush, at rising rates; the
highest rate each sustains without a drop.  Epochs are `--epoch` seconds
(10 by default rather than the paper's 60, so that a run of `--seconds`
crosses several epoch boundaries, where the flush policies differ).

Results (results.md, PNG plots, raw JSON) go to bench/results_live/.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import functools
import json
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
OUT = HERE / "results_live"
SENDER_SRC = HERE / "live" / "sender.c"
SENDER = HERE / "live" / "build" / "sender"
SEND_CPU, CAPTURE_CPU = 0, 1
PORTS = 16
SELECTED_PORT = 60005
FLOWS = 4096

# (asked frames/s, 0 = as fast as the sender goes; frames sent)
RATES = ((100_000, 1_000_000), (300_000, 3_000_000), (1_000_000, 5_000_000), (0, 5_000_000))

QUERIES = {
    "count": "SELECT tb, count(*) AS n FROM PKT GROUP BY time AS tb",
    "select": (f"SELECT time, srcIP, destIP, srcPort FROM UDP "
               f"WHERE destPort = {SELECTED_PORT}"),
    "aggregate": ("SELECT tb, srcIP, destIP, count(*) AS n, sum(len) AS bytes FROM IPV4 "
                  "GROUP BY time AS tb, srcIP, destIP"),
}

G1_QUERY = """\
DEFINE {{ query_name 'g1'; lfta_table_size {table}; }}
SELECT tb, srcIP, destIP, count(*) AS n FROM IPV4
GROUP BY time/{epoch} AS tb, srcIP, destIP
"""
G1_CONFIGS = (("IOP immediate", ["--max-lfta-disorder", "1", "--max-hfta-disorder", "1",
                                  "--flush", "immediate"]),
              ("OOP lazy", ["--flush", "lazy"]), ("OOP slow", ["--flush", "slow"]))


# ------------------------------------------------------------------ the link

def build_sender() -> Path:
    SENDER.parent.mkdir(parents=True, exist_ok=True)
    if not SENDER.exists() or SENDER.stat().st_mtime < SENDER_SRC.stat().st_mtime:
        subprocess.run([os.environ.get("CC", "cc"), "-O2", "-std=c11", "-Wall", "-Wextra",
                        "-Werror", "-o", str(SENDER), str(SENDER_SRC)], check=True)
    return SENDER


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=30, check=check)


@contextlib.contextmanager
def link():
    """A namespace of its own with veth va <-> vb up, IPv6 off (no
    neighbour discovery frames among the counted ones); removed after."""
    ns = f"gsqlb{os.getpid()}"
    _ip("netns", "add", ns)
    try:
        _ip("-n", ns, "link", "add", "va", "type", "veth", "peer", "name", "vb")
        subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-qw",
                        "net.ipv6.conf.all.disable_ipv6=1",
                        "net.ipv6.conf.default.disable_ipv6=1"], check=True, timeout=30)
        for dev in ("va", "vb", "lo"):
            _ip("-n", ns, "link", "set", dev, "up")
        yield ns
    finally:
        _ip("netns", "del", ns, check=False)


def _in_ns(ns: str, *cmd: str) -> str:
    return subprocess.run(["ip", "netns", "exec", ns, *cmd], stdout=subprocess.PIPE,
                          text=True, timeout=30, check=True).stdout


def _bound_packet_sockets(ns: str) -> int:
    rows = [r.split() for r in _in_ns(ns, "cat", "/proc/net/packet").splitlines()[1:]]
    return sum(1 for r in rows if len(r) > 4 and int(r[3], 16) and int(r[4]))


def _xdp_attached(ns: str) -> bool:
    return "prog/xdp" in _in_ns(ns, "ip", "-d", "link", "show", "vb")


def _rx_dropped(ns: str) -> int:
    return int(_in_ns(ns, "cat", "/sys/class/net/vb/statistics/rx_dropped"))


def send(ns: str, frames: int, rate: int, flows: int, watch: int) -> dict:
    p = subprocess.run(["ip", "netns", "exec", ns, "taskset", "-c", str(SEND_CPU), str(SENDER),
                        "va", str(frames), "--rate", str(rate), "--flows", str(flows),
                        "--ports", str(PORTS), "--watch", str(watch)],
                       stdout=subprocess.PIPE, text=True, timeout=600, check=True)
    rec = json.loads(p.stdout)
    cpu = rec.pop("cpu")[str(watch)]
    rec["cpu_s"], rec["cpu_sched_ns"] = cpu["stat_s"], cpu["sched_ns"]
    return rec


# ------------------------------------------------------------------ capturers

class Capture:
    """One capturing process in namespace ns on CPU 1: started, ready once
    its packet socket is bound (and its ring set up), stopped with SIGINT."""

    def __init__(self, ns: str, argv: list[str], workdir: Path):
        self.ns = ns
        self.out_path, self.err_path = workdir / "out.txt", workdir / "err.txt"
        with open(self.out_path, "w") as out, open(self.err_path, "w") as err:
            self.proc = subprocess.Popen(["ip", "netns", "exec", ns, "taskset", "-c",
                                          str(CAPTURE_CPU), *argv], stdout=out, stderr=err)
        deadline = time.time() + 600  # a first run builds the query set
        kernel = "--lfta-in-kernel" in argv  # ready once its XDP program is attached
        while not (_xdp_attached(ns) if kernel else _bound_packet_sockets(ns)):
            if self.proc.poll() is not None:
                raise SystemExit(f"{argv[0]} ended before capturing:\n"
                                 f"{self.err_path.read_text()[-3000:]}")
            if time.time() > deadline:
                raise SystemExit(f"{argv} never opened its capture")
            time.sleep(0.1)
        time.sleep(0.5)  # libpcap binds before it maps its ring

    def stop(self) -> tuple[str, str]:
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=120)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        return self.out_path.read_text(), self.err_path.read_text()


def tcpdump_argv(expr: str = "") -> list[str]:
    return ["tcpdump", "-i", "vb", "-n", "-w", "/dev/null", *([expr] if expr else [])]


def tcpdump_counts(out: str, err: str) -> dict:
    def num(what: str) -> int:
        m = re.search(rf"^(\d+) packets? {what}", err, re.M)
        if m is None:
            raise SystemExit(f"tcpdump printed no '{what}' count:\n{err[-2000:]}")
        return int(m.group(1))
    captured = num("captured")
    return {"counted": captured, "kernel_dropped": num("dropped by kernel"),
            "to_user": captured}


def gsqlc_argv(query: Path, uri: str, extra: list[str]) -> list[str]:
    return [sys.executable, "-m", "gsqlc", "run", str(query), "--source", f"vb={uri}",
            "--stats", *extra]


def gsqlc_stats(err: str) -> dict:
    at = 0 if err.startswith("{") else err.index("\n{") + 1
    return json.JSONDecoder().raw_decode(err, at)[0]


def gsqlc_counts(kind: str, out: str, err: str) -> dict:
    st = gsqlc_stats(err)
    # one, or a fanout's members; a kernel LFTA's source reads no frame
    xdp = [s["xdp"] for s in st["sources"] if s["kind"] == "xdp"]
    srcs = [s for s in st["sources"] if s["kind"] != "xdp"] or \
        [{"kernel_dropped": 0, "packets_read": 0, "pcap_reader": "xdp"}]
    rows = [line.split("|") for line in out.splitlines() if line]
    if kind == "select":
        counted = len(rows)
    else:  # the count is the query's column n
        col = 1 if kind == "count" else 3
        counted = sum(int(r[col]) for r in rows)
    return {"counted": counted, "kernel_dropped": sum(s["kernel_dropped"] for s in srcs),
            "to_user": sum(s["packets_read"] for s in srcs), "reader": srcs[0]["pcap_reader"],
            "kernel_filter": srcs[0].get("kernel_filter"), "ring": srcs[0].get("ring"),
            "threads": st.get("capture_workers", {}).get("threads", 1),
            "late": sum(n.get("late_dropped", 0) for n in st.get("nodes", [])),
            "rows": len(rows),
            # what the XDP program saw and what of it reached user space
            "xdp": ({k: xdp[0][k] for k in ("mode", "packets", "bypassed", "collisions",
                                             "ring_lost", "partials", "drained_epochs")}
                    if xdp else None)}


def expected_selected(frames: int) -> int:
    """Frames k < frames with k % 16 == the selected port's offset."""
    off = SELECTED_PORT - 60000
    return frames // PORTS + (1 if frames % PORTS > off else 0)


def one_run(ns: str, work: Path, label: str, argv: list[str], counts, frames: int, rate: int,
            flows: int, kind: str) -> dict:
    drop0 = _rx_dropped(ns)
    cap = Capture(ns, argv, work)
    rec = send(ns, frames, rate, flows, cap.proc.pid)
    out, err = cap.stop()
    if cap.proc.returncode != 0:
        raise SystemExit(f"{label}: status {cap.proc.returncode}\n{err[-3000:]}")
    c = counts(out, err)
    iface = _rx_dropped(ns) - drop0
    sent = rec["frames"]
    if kind == "select":
        # Drops hit all frames alike: exact only when nothing was dropped.
        exact = c["counted"] == expected_selected(sent) if c["kernel_dropped"] + iface == 0 \
            else None
    else:
        exact = c["counted"] + c["kernel_dropped"] + iface == sent
    return dict(rec, label=label, kind=kind, asked_rate=rate, flows=flows, **c,
                interface_dropped=iface, exact=exact,
                ns_per_frame=rec["cpu_s"] * 1e9 / sent,
                sched_ns_per_frame=rec["cpu_sched_ns"] / sent,
                share=c["to_user"] / sent)


# ------------------------------------------------------------------ experiments

def capture_configs(qdir: Path) -> list[tuple[str, str, list[str], object]]:
    """(label, kind, argv, counts) of every capturer the capture experiment runs."""
    paths = {}
    for kind, text in QUERIES.items():
        paths[kind] = qdir / f"live_{kind}.gsql"
        paths[kind].write_text(text + "\n")

    def g(kind):
        return functools.partial(gsqlc_counts, kind)
    return [
        ("tcpdump -w /dev/null", "count", tcpdump_argv(), tcpdump_counts),
        ("gsqlc count", "count", gsqlc_argv(paths["count"], "pcap-live:vb", []), g("count")),
        # the default block timeout is 100 ms; 10 ms wakes the run ten times as often
        ("gsqlc count, block_timeout=10", "count",
         gsqlc_argv(paths["count"], "pcap-live:vb?block_timeout=10", []), g("count")),
        ("gsqlc count (libpcap)", "count",
         gsqlc_argv(paths["count"], "pcap-live:vb", ["--pcap-reader", "libpcap"]), g("count")),
        (f"tcpdump 'udp dst port {SELECTED_PORT}'", "select",
         tcpdump_argv(f"udp dst port {SELECTED_PORT}"),
         tcpdump_counts),
        ("gsqlc select 1/16", "select", gsqlc_argv(paths["select"], "pcap-live:vb", []),
         g("select")),
        ("gsqlc select 1/16, no kernel filter", "select",
         gsqlc_argv(paths["select"], "pcap-live:vb?kernel_filter=0", []), g("select")),
        ("gsqlc aggregate", "aggregate", gsqlc_argv(paths["aggregate"], "pcap-live:vb", []),
         g("aggregate")),
        # its two capture threads share CPU 1 with the rest of the run: the
        # cost of the fanout's rounds, not its gain (the sender has CPU 0)
        ("gsqlc aggregate, fanout=2", "aggregate",
         gsqlc_argv(paths["aggregate"], "pcap-live:vb?fanout=2", []), g("aggregate")),
        # its LFTA in the XDP hook: no frame reaches the process, only partials
        ("gsqlc aggregate, LFTA in the kernel", "aggregate",
         gsqlc_argv(paths["aggregate"], "pcap-live:vb", ["--lfta-in-kernel"]), g("aggregate")),
    ]


def run_capture(ns: str, rounds: int, only: str | None) -> list[dict]:
    raw = []
    head = _head()
    with tempfile.TemporaryDirectory(prefix="gsqlc-live-") as tmp:
        work = Path(tmp)
        configs = capture_configs(work)
        if only:
            configs = [c for c in configs if only in c[0]]
        # Build each query set once, untimed: its first run compiles.
        for label, kind, argv, counts in configs:
            if argv[0] == sys.executable:
                one_run(ns, work, label, argv, counts, 1000, 0, FLOWS, kind)
        for rnd in range(rounds):
            for label, kind, argv, counts in configs:
                for rate, frames in RATES:
                    rec = one_run(ns, work, label, argv, counts, frames, rate, FLOWS, kind)
                    if kind == "select" and label.startswith("tcpdump"):
                        # tcpdump's captured count is its selected frames.
                        rec["exact"] = (rec["counted"] == expected_selected(rec["frames"])
                                        if rec["kernel_dropped"] + rec["interface_dropped"] == 0
                                        else None)
                    rec["round"] = rnd
                    rec["commit"] = head
                    raw.append(rec)
                    print(f"round {rnd} {label:38s} {rate or 'max':>8} "
                          f"{rec['rate']:>10,.0f}/s {rec['ns_per_frame']:6.1f} ns "
                          f"({rec['sched_ns_per_frame']:6.1f}) share {rec['share']:.4f} "
                          f"drops {rec['kernel_dropped']}+{rec['interface_dropped']} "
                          f"exact {rec['exact']}", flush=True)
    return raw


def run_g1(ns: str, groups: list[int], seconds: float, epoch: int, rates: list[int],
           rings: list[int]) -> list[dict]:
    """Each (flows, ring, config): first at the sender's highest rate; when
    that drops, the asked rates from the lowest up to the first that drops.
    A ring is `blocks` blocks of 1 MiB."""
    raw = []
    with tempfile.TemporaryDirectory(prefix="gsqlc-live-") as tmp:
        work = Path(tmp)
        for f in groups:
            q = work / f"g1_{f}.gsql"
            q.write_text(G1_QUERY.format(table=f, epoch=epoch))
            counts = functools.partial(gsqlc_counts, "aggregate")
            for blocks in rings:
                uri = f"pcap-live:vb?blocks={blocks}"
                for label, opts in G1_CONFIGS:
                    argv = gsqlc_argv(q, uri, opts)
                    one_run(ns, work, label, argv, counts, 1000, 0, f, "count")  # build

                    def at(rate: int) -> dict:
                        frames = int((rate or 1_400_000) * seconds)
                        rec = one_run(ns, work, label, argv, counts, frames, rate, f, "count")
                        rec.update(groups=f, epoch=epoch, blocks=blocks)
                        raw.append(rec)
                        print(f"g1 {f:>8,} ring {blocks:>3} MiB {label:14s} {rate or 'max':>8} "
                              f"{rec['rate']:>10,.0f}/s drops {rec['kernel_dropped']}+"
                              f"{rec['interface_dropped']} late {rec['late']} "
                              f"exact {rec['exact']} {rec['ns_per_frame']:.1f} ns/frame",
                              flush=True)
                        return rec

                    if _dropped(at(0)):
                        for rate in sorted(r for r in rates if r):
                            if _dropped(at(rate)):
                                break
    return raw


def _dropped(rec: dict) -> bool:
    return rec["kernel_dropped"] + rec["interface_dropped"] > 0


# ------------------------------------------------------------------ report

def _head() -> str:
    return subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                          stdout=subprocess.PIPE, text=True).stdout.strip()


def _machine() -> str:
    head = _head()
    cpu = next((line.split(":", 1)[1].strip() for line in
                Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("model name")),
               platform.machine())
    return (f"Measured {datetime.date.today()} at {head}; {os.cpu_count()} cores ({cpu}), "
            f"Linux {platform.release()}, Python {platform.python_version()}, "
            f"{_tool_version(['tcpdump', '--version'])}.")


def _tool_version(argv: list[str]) -> str:
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return p.stdout.splitlines()[0] if p.stdout else argv[0]


def _rate(rate: int) -> str:
    return f"{rate:,}" if rate else "max"


def _median(xs):
    return statistics.median(xs) if xs else float("nan")


def capture_section(raw: list[dict]) -> list[str]:
    labels = list(dict.fromkeys(r["label"] for r in raw))
    rates = list(dict.fromkeys(r["asked_rate"] for r in raw))
    base = {rate: _median([r["ns_per_frame"] for r in raw
                           if r["label"] == labels[0] and r["asked_rate"] == rate])
            for rate in rates}
    md = ["| capturer | asked frames/s | reached frames/s | ns CPU / frame (stat) | "
          "ns CPU / frame (schedstat) | vs tcpdump | frames to user space | share | "
          "drops (ring + interface) | exact |",
          "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for label in labels:
        for rate in rates:
            rs = [r for r in raw if r["label"] == label and r["asked_rate"] == rate]
            if not rs:
                continue
            ns = _median([r["ns_per_frame"] for r in rs])
            md.append(
                f"| {label} | {_rate(rate)} | "
                f"{_median([r['rate'] for r in rs]):,.0f} | {ns:.1f} | "
                f"{_median([r['sched_ns_per_frame'] for r in rs]):.1f} | "
                f"{ns / base[rate]:.2f}x | {_median([r['to_user'] for r in rs]):,.0f} of "
                f"{rs[0]['frames']:,} | {_median([r['share'] for r in rs]):.4f} | "
                f"{sum(r['kernel_dropped'] for r in rs):,} + "
                f"{sum(r['interface_dropped'] for r in rs):,} | "
                f"{'/'.join({True: 'yes', False: 'NO', None: 'n/a'}[r['exact']] for r in rs)} |")
    xdp = [r for r in raw if r.get("xdp")]
    if xdp:
        md += ["", "With the LFTA in the kernel's XDP hook, what reached user space were "
               "partial aggregates, not frames:", "",
               "| asked frames/s | frames the program counted | partials to user space | "
               "partials / frame | epochs drained | ring lost | attach |",
               "|---:|---:|---:|---:|---:|---:|---|"]
        for rate in rates:
            rs = [r for r in xdp if r["asked_rate"] == rate]
            if not rs:
                continue
            x = [r["xdp"] for r in rs]
            seen = _median([v["packets"] + v["bypassed"] for v in x])
            parts = _median([v["partials"] for v in x])
            md.append(f"| {_rate(rate)} | {seen:,.0f} | {parts:,.0f} | "
                      f"{parts / max(seen, 1):.4f} | {_median([v['drained_epochs'] for v in x]):.0f}"
                      f" | {sum(v['ring_lost'] for v in x)} | {x[0]['mode']} |")
    return md


def g1_section(raw: list[dict]) -> list[str]:
    md = ["| flows (groups) | ring MiB | config | asked frames/s | reached frames/s | drops "
          "(ring + interface) | late | ns CPU / frame | CPU busy | rows | exact |",
          "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in raw:
        busy = r["cpu_s"] / (r["seconds"] + 1)
        md.append(f"| {r['groups']:,} | {r['blocks']} | {r['label']} | "
                  f"{_rate(r['asked_rate'])} | "
                  f"{r['rate']:,.0f} | "
                  f"{r['kernel_dropped']:,} + {r['interface_dropped']:,} | {r['late']:,} | "
                  f"{r['ns_per_frame']:.1f} | {busy:.0%} | {r['rows']:,} | "
                  f"{'yes' if r['exact'] else 'NO'} |")
    md += ["", "Highest rate reached without a drop:", "",
           "| flows (groups) | ring MiB | config | frames/s |", "|---:|---:|---|---:|"]
    for f in dict.fromkeys(r["groups"] for r in raw):
        for blocks in dict.fromkeys(r["blocks"] for r in raw):
            for label, _ in G1_CONFIGS:
                ok = [r["rate"] for r in raw if r["groups"] == f and r["label"] == label
                      and r["blocks"] == blocks and not _dropped(r) and r["exact"]]
                md.append(f"| {f:,} | {blocks} | {label} | "
                          f"{f'{max(ok):,.0f}' if ok else 'none tried'} |")
    return md


def plot_capture(raw: list[dict], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for label in dict.fromkeys(r["label"] for r in raw):
        pts = {}
        for r in raw:
            if r["label"] == label:
                pts.setdefault(r["asked_rate"], []).append(r)
        xs = [_median([r["rate"] for r in rs]) for rs in pts.values()]
        ys = [_median([r["sched_ns_per_frame"] for r in rs]) for rs in pts.values()]
        ax.plot(xs, ys, marker="o", label=label)
    ax.set_xscale("log")
    ax.set_xlabel("frames/s reached by the sender")
    ax.set_ylabel("capturing process CPU ns per frame sent")
    ax.set_title("Live capture on a veth pair: CPU per frame")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def plot_g1(raw: list[dict], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    groups = list(dict.fromkeys(r["groups"] for r in raw))
    small = min(r["blocks"] for r in raw)
    fig, axes = plt.subplots(1, len(groups), figsize=(5 * len(groups), 4), squeeze=False)
    for ax, f in zip(axes[0], groups):
        for label, _ in G1_CONFIGS:
            rs = sorted((r for r in raw if r["groups"] == f and r["label"] == label
                         and r["blocks"] == small), key=lambda r: r["rate"])
            ax.plot([r["rate"] for r in rs],
                    [(r["kernel_dropped"] + r["interface_dropped"]) / r["frames"] for r in rs],
                    marker="o", label=label)
        ax.set_title(f"G1 live, {f:,} groups, {small} MiB ring")
        ax.set_xlabel("frames/s reached")
        ax.set_ylabel("share of frames dropped")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def write_results(section: str, title: str, body: list[str]) -> None:
    """Replace (or add) one `## title` section of results.md."""
    OUT.mkdir(exist_ok=True)
    path = OUT / "results.md"
    text = path.read_text() if path.exists() else (
        "# Live capture: gsqlc against tcpdump on a veth pair\n\n"
        "Written by `python bench/live_bench.py all` (or one experiment: its section is "
        "replaced, the others kept).\n\n")
    parts = re.split(r"(?m)^(?=## )", text)
    new = f"## {title}\n\n" + "\n".join(body) + "\n\n"
    kept = [p for p in parts if not p.startswith(f"## {title.split(':')[0]}")]
    at = next((i for i, p in enumerate(parts) if p.startswith(f"## {title.split(':')[0]}")),
              len(parts))
    kept.insert(min(at, len(kept)), new)
    path.write_text("".join(kept))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("experiment", choices=("capture", "g1", "all"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", help="capture: only capturers whose label holds this")
    ap.add_argument("--groups", type=int, nargs="+", default=[65536, 524288])
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--epoch", type=int, default=10)
    ap.add_argument("--g1-rates", type=int, nargs="+",
                    default=[250_000, 500_000, 750_000, 1_000_000, 1_200_000])
    ap.add_argument("--g1-rings", type=int, nargs="+", default=[4, 64],
                    help="ring sizes in blocks of 1 MiB (64: the default ring)")
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        raise SystemExit("live_bench.py needs root (a network namespace and raw sockets)")
    build_sender()
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO / "compiler"), os.environ.get("PYTHONPATH")) if p)
    with link() as ns:
        if args.experiment in ("capture", "all"):
            raw = run_capture(ns, args.rounds, args.only)
            old = OUT / "capture.json"
            if args.only and old.exists():
                # the other capturers' records of an earlier run are kept
                raw = [r for r in json.loads(old.read_text())
                       if args.only not in r["label"]] + raw
            OUT.mkdir(exist_ok=True)
            (OUT / "capture.json").write_text(json.dumps(raw, indent=1))
            plot_capture(raw, OUT / "capture_cpu.png")
            write_results("capture", "Capture: CPU per frame and frames reaching user space",
                          [_machine(), "", *capture_notes(raw), "",
                           *capture_section(raw), "", "![CPU per frame](capture_cpu.png)"])
        if args.experiment in ("g1", "all"):
            raw = run_g1(ns, args.groups, args.seconds, args.epoch, args.g1_rates, args.g1_rings)
            OUT.mkdir(exist_ok=True)
            (OUT / "g1.json").write_text(json.dumps(raw, indent=1))
            plot_g1(raw, OUT / "g1_live.png")
            write_results("g1", "G1 live: the highest rate each flush policy sustains",
                          [_machine(), "", *g1_notes(args), "", *g1_section(raw), "",
                           "![G1 live](g1_live.png)"])
    return 0


def capture_notes(raw: list[dict]) -> list[str]:
    rounds = len({r["round"] for r in raw})
    commits: dict[str, list[str]] = {}
    for r in raw:
        labels = commits.setdefault(r.get("commit", "an earlier commit"), [])
        if r["label"] not in labels:
            labels.append(r["label"])
    later = [] if len(commits) < 2 else [
        "Measured in separate runs (`--only`): " + "; ".join(
            f"at {c}: {', '.join(ls)}" for c, ls in commits.items()) + "."]
    return later + [f"Median of {rounds} rounds, each capturer once per rate in a round, in a process "
            "of its own started before the first frame. Frames of 60 bytes, "
            f"{FLOWS:,} flows, destination ports 60000-60015 in turn. "
            f"Queries: count `{QUERIES['count']}`; select `{QUERIES['select']}` "
            f"(1 frame in 16); aggregate `{QUERIES['aggregate']}`. "
            "Exact: counted + dropped = sent (select: the selected rows equal the frames sent "
            "to the port, when nothing was dropped), one mark per round."]


def g1_notes(args) -> list[str]:
    return [f"Query: `count(*)` per `time/{args.epoch}, srcIP, destIP`, `lfta_table_size` "
            "equal to the flow count (one group per flow and epoch). "
            f"Each run sends {args.seconds:g} s of frames at the asked rate. Each flow count, "
            "ring and config runs first at the sender's highest rate ('max'); when that "
            "drops, at the asked rates from the lowest up to the first that drops. A ring "
            "is N blocks of 1 MiB (`pcap-live:vb?blocks=N`; 64 is the default). CPU busy: "
            "the capturing process's CPU time over the run's seconds plus the second after. "
            "IOP: `--max-lfta-disorder 1 "
            "--max-hfta-disorder 1 --flush immediate`; OOP lazy / slow: `--flush lazy` / "
            "`--flush slow` at the default disorder. Exact: the counts sum to the frames sent "
            "less the drops reported."]


if __name__ == "__main__":
    sys.exit(main())
