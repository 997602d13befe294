#!/usr/bin/env python3
"""Li et al. 2008, section 7's joint punctuation, measured: the paper's Q3 -- a band
join of two links (S1.ts within [S0.ts, S0.ts + band]) feeding a count per
(S0.ts, S1.ts) at 1 s granularity -- run three ways over the same CSV data:

  individual   the count grouped on t0 and non_temporal(t1): the join's
               heartbeats only (a group waits until its t0 epoch closes, i.e.
               until the band has passed on the other link)
  joint        grouped on t0 and t1: the join's joint punctuation releases a
               group once both links passed it, from the oldest open epoch
               (the count's output stays in order)
  joint-any    the same, read by an order-agnostic query (a count per 10 s of
               t0), so covered groups leave from every open epoch

    python bench/joint_punctuation.py [--seconds 300] [--pps 500] [--band 120]

One generated capture (pktgen) is read by two interfaces, link A's time
shifted back by --skew, and replayed on the data clock (heartbeats every
second of it).  Reported per way: the count's peak groups held (`peak_held_tuples`), the run's
max RSS and wall time, late tuples and an order-independent digest of the
answer (equal between `individual` and `joint`, and between the two readers).
Results go to bench/results_oop/joint.md and joint.json.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
import oop_experiments  # noqa: E402
import pktgen  # noqa: E402
from oop_experiments import _git, _table, answer_digest  # noqa: E402

JOIN = ("DEFINE {{ query_name 'ra'; }}\nselect time - {skew} as t, srcIP from eth0.IPV4;\n"
        "DEFINE {{ query_name 'rb'; }}\nselect time as t, srcIP from eth1.IPV4;\n"
        "DEFINE {{ query_name 'j'; }}\n"
        "select A.t as t0, B.t as t1 INNER_JOIN from ra A, rb B\n"
        "where A.srcIP = B.srcIP and B.t >= A.t and B.t <= A.t + {band};\n")
COUNT = ("DEFINE {{ query_name 'c'; }}\n"
         "select a, b, count(*) as n from j group by t0 as a, {t1} as b")
READER = (";\nDEFINE { query_name 'per10'; }\n"
          "select a10, sum(n) as n, count(*) as cells from c group by a/10 as a10")
WAYS = {
    "individual": ("non_temporal(t1)", False),
    "joint": ("t1", False),
    "individual-any": ("non_temporal(t1)", True),
    "joint-any": ("t1", True),
}


def run(query: Path, pcap: Path, out_file: Path) -> dict:
    """One run over the capture read as both links (oop_experiments.run, heartbeats
    every second of the data clock), with what this experiment reports."""
    r = oop_experiments.run(query, {"eth0": pcap, "eth1": pcap}, [], out_file=str(out_file),
                            heartbeats="1")
    stats = r["stats"]
    nodes = {n["name"]: n for n in stats["nodes"]}
    streams = {n["name"]: n for n in stats["streams"]}
    return {"wall": r["wall"], "max_rss_kb": r["max_rss_kb"],
            "held": nodes["c"]["peak_held_tuples"], "join_rows": streams["j"]["tuples"],
            "joint_heartbeats": streams["j"]["joint_heartbeats"],
            "late": sum(n["late_dropped"] for n in stats["nodes"]),
            "answer": answer_digest(out_file)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=int, default=300, help="seconds of packets")
    ap.add_argument("--pps", type=int, default=500, help="packets per second")
    ap.add_argument("--sources", type=int, default=2000, help="source addresses (join keys)")
    ap.add_argument("--band", type=int, default=120, help="band in seconds")
    ap.add_argument("--skew", type=int, default=10, help="link A's time shifted back by")
    ap.add_argument("--out", type=Path, default=HERE / "results_oop")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    res = {}
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        pcap = t / "pkts.pcap"
        pktgen.generate(str(pcap), args.seconds * args.pps, args.sources, pps=args.pps, seed=5,
                        start=1_700_000_000, frag=0.0)
        tiny = t / "tiny.pcap"
        pktgen.generate(str(tiny), 200, 20, pps=10, seed=6, start=1_700_000_000, frag=0.0)
        for way, (t1, reader) in WAYS.items():
            q = t / f"{way}.gsql"
            q.write_text(JOIN.format(band=args.band, skew=args.skew) + COUNT.format(t1=t1)
                         + (READER if reader else ""))
            run(q, tiny, t / "warm.out")            # build (cached) before measuring
            res[way] = run(q, pcap, t / f"{way}.out")
            r = res[way]
            print(f"{way}: held {r['held']:,} groups, RSS {r['max_rss_kb'] / 1024:.1f} MB, "
                  f"{r['wall']:.2f} s, late {r['late']}, {r['answer'][1]:,} rows, "
                  f"{r['joint_heartbeats']} joint heartbeats", flush=True)
    equal = (res["individual"]["answer"] == res["joint"]["answer"],
             res["individual-any"]["answer"] == res["joint-any"]["answer"])
    rows = [[way, f"{r['held']:,}", f"{r['max_rss_kb'] / 1024:.1f}", f"{r['wall']:.2f}",
             r["late"], f"{r['answer'][1]:,}", f"{r['joint_heartbeats']:,}"]
            for way, r in res.items()]
    import datetime
    import os
    import platform
    where = (f"Measured {datetime.date.today()} at {_git('rev-parse', '--short', 'HEAD')}; "
             f"{os.cpu_count()} cores, Python {platform.python_version()}.")
    md = ["## Joint punctuation (Li et al. 2008, section 7): Q3", "", where, "",
          f"Q3 over one capture read as two links ({args.seconds} s at {args.pps} pkt/s, "
          f"{args.sources:,} source addresses as join keys; link A {args.skew} s behind), "
          f"band {args.band} s, {res['joint']['join_rows']:,} join rows, a count per (t0, t1) "
          "second. "
          "`individual`: grouped on `non_temporal(t1)` (no joint punctuation); `joint`: on "
          "`t1`; `-any`: read by a count per 10 s of t0, so the count's output order is free.",
          ""]
    md += _table(["way", "peak groups held by the count", "max RSS MB", "wall s", "late",
                  "output rows", "joint heartbeats"], rows)
    md += ["", f"Answers equal: individual = joint: {equal[0]}; individual-any = joint-any: "
           f"{equal[1]}.", "",
           f"Groups held, joint / individual: {res['joint']['held'] / res['individual']['held']:.3f}; "
           f"joint-any / individual-any: "
           f"{res['joint-any']['held'] / res['individual-any']['held']:.3f}.", ""]
    (args.out / "joint.md").write_text("\n".join(md))
    (args.out / "joint.json").write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()},
                                                     "runs": res, "equal": equal}, indent=1))
    print("\n".join(md))
    return 0 if all(equal) and not any(r["late"] for r in res.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
