"""What replay in time costs.

1. One source read alone: the default clock (auto, the data clock for a
   recording) against the wall clock, over the 20 M-packet capture (Q1, Q2
   through `gsqlc run`) and the same packets as an Arrow table (Q1, Q2
   through the Python API, one thread).  A single recording needs no
   alignment; what the default adds is the data clock.
2. Four captures as the members of one interface set, replayed in time,
   against the same packets as one capture (pktgen.generate_union): Q2 per
   60 s over [links].IPV4 and over IPV4.  Both answers are compared whole.

Engines are interleaved round by round (the order flipped every round);
best and median of --rounds, and the ratio to the baseline each names.

    python bench/replay_bench.py [--packets 20000000] [--rounds 7] [--out bench/results_replay.md]
"""
from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "compiler"))
import pktgen  # noqa: E402

Q = HERE / "queries"
SET_Q2 = ("DEFINE { query_name 'q2'; }\n"
          "SELECT tb, srcIP, destIP, count(*) as cnt FROM [links].IPV4\n"
          "GROUP BY time/60 as tb, srcIP, destIP\n")


def _cli(args: list[str], out: str = "/dev/null") -> float:
    env = dict(os.environ, PYTHONPATH=str(HERE.parent / "compiler"))
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "gsqlc", "run", *map(str, args), "--output-file", out],
                   env=env, check=True)
    return time.perf_counter() - t


def _rounds(cases: dict, rounds: int) -> dict:
    """cases: name -> callable returning seconds; warmed once, then run
    round by round in alternating order."""
    for f in cases.values():
        f()
    res: dict = {k: [] for k in cases}
    names = list(cases)
    for r in range(rounds):
        for k in (names if r % 2 == 0 else names[::-1]):
            res[k].append(cases[k]())
    return res


def _row(name: str, xs: list, base: list) -> str:
    b, m = sorted(xs)[0], sorted(xs)[len(xs) // 2]
    bb, bm = sorted(base)[0], sorted(base)[len(base) // 2]
    return f"| {name} | {b:.3f} | {m:.3f} | {b / bb:.3f} | {m / bm:.3f} |"


def one_source(pcap: Path, parquet: Path, rounds: int) -> list[str]:
    import pyarrow.parquet as pq

    import gsqlc
    table = pq.read_table(parquet)
    lines = ["| case | best s | median s | best / wall | median / wall |", "|---|---:|---:|---:|---:|"]
    for q in ("q1", "q2"):
        args = [Q / f"{q}.gsql", "--source", f"eth0=pcap:{pcap}"]
        res = _rounds({"wall": lambda a=args: _cli([*a, "--clock", "wall"]),
                       "auto": lambda a=args: _cli(a)}, rounds)
        lines += [_row(f"capture {q}, --clock wall", res["wall"], res["wall"]),
                  _row(f"capture {q}, default (auto: data)", res["auto"], res["wall"])]
    for q, f in (("q1", "arrow_q1.gsql"), ("q2", "spark_q2.gsql")):
        qs = gsqlc.compile([Q / f], schema=Q / "packets_columns.txt")

        def api(clock, qs=qs):
            t = time.perf_counter()
            qs.table({"pkts": table}, clock=clock, threads=1, ip_format="int")
            return time.perf_counter() - t
        res = _rounds({"wall": lambda: api("wall"), "auto": lambda: api("auto")}, rounds)
        lines += [_row(f"Arrow table {q}, clock='wall'", res["wall"], res["wall"]),
                  _row(f"Arrow table {q}, default (auto: data)", res["auto"], res["wall"])]
    return lines


def four_members(d: Path, packets: int, rounds: int) -> list[str]:
    n = packets // 4
    members = [d / f"member{i}.pcap" for i in range(4)]
    one = d / "union.pcap"
    for i, m in enumerate(members):
        if not m.exists():
            pktgen.generate(str(m), n, 65536, pps=25_000, seed=101 + i, truth=False)
    if not one.exists():
        pktgen.generate_union(str(one), n, 65536, seeds=[101, 102, 103, 104], pps=25_000)
    setq = d / "q2_set.gsql"
    setq.write_text(SET_Q2)
    set_args = [setq, *[a for m in members for a in ("--source", f"links=pcap:{m}")]]
    one_args = [Q / "q2.gsql", "--source", f"eth0=pcap:{one}"]
    # the answers, whole: the same groups and counts
    a, b = d / "set.out", d / "one.out"
    _cli(set_args, str(a))
    _cli(one_args, str(b))
    if sorted(a.read_text().splitlines()) != sorted(b.read_text().splitlines()):
        raise SystemExit("the 4-member set and the one capture disagree")
    res = _rounds({"one": lambda: _cli(one_args), "set": lambda: _cli(set_args)}, rounds)
    return ["| case | best s | median s | best / one file | median / one file |",
            "|---|---:|---:|---:|---:|",
            _row(f"one capture of {packets:,} packets, Q2", res["one"], res["one"]),
            _row("the same as 4 members of one set, replayed in time", res["set"], res["one"])]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--packets", type=int, default=20_000_000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--data", default=None, help="folder for the captures (default: a temporary one)")
    ap.add_argument("--out", default=str(HERE / "results_replay.md"))
    a = ap.parse_args()
    d = Path(a.data) if a.data else Path(tempfile.mkdtemp(prefix="gsqlc-replay-"))
    d.mkdir(parents=True, exist_ok=True)
    pcap, parquet = d / "p.pcap", d / "p.parquet"
    if not pcap.exists() or not parquet.exists():
        pktgen.generate(str(pcap), a.packets, 65536, parquet=str(parquet), truth=False)
    lines = [f"# Replay in time: cost ({platform.processor() or platform.machine()}, "
             f"{os.cpu_count()} cores, {a.rounds} interleaved rounds)", "",
             "## One source read alone", "", *one_source(pcap, parquet, a.rounds), "",
             "## Four members of one interface set against one capture", "",
             *four_members(d, a.packets, a.rounds), ""]
    text = "\n".join(lines)
    print(text)
    Path(a.out).write_text(text)


if __name__ == "__main__":
    main()
