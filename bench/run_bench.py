#!/usr/bin/env python3
"""The gsqlc benchmark (a benchmark, not a test): throughput and peak memory
of gsqlc end to end against the hand-written C loop (the practical limit),
DuckDB in memory (1 thread and all threads) and Polars, on the same 20 M
generated packets.

    python bench/run_bench.py [--packets N] [--repeat R] [--out bench/results.md]

Data (bench/data/, generated once by bench/pktgen.py, 100,000 packets/s):
    p{N}_g65536.pcap   (+ .parquet)  65,536 distinct (srcIP, destIP) pairs
    p{N}_g524288.pcap  (+ .parquet)  524,288 pairs (the OOP paper's G1 sizes)
Queries: bench/queries/q1.gsql (filter + project), q2.gsql (count per pair
per 60 s).  gsqlc runs as a user runs it, `gsqlc run ... --output-file
/dev/null` (`gsqlc1` with --threads 1, `gsqlc` with the default: all cores),
with the query set already built (builds are cached); the time
includes starting Python, reading the pcap (memory-mapped, the default;
`gsqlc_libpcap` reads it through libpcap, --pcap-reader libpcap) and writing
the text output.  Each figure is the best of --repeat runs.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import baselines  # noqa: E402

DATA = HERE / "data"
QUERIES = HERE / "queries"
GROUPS = [65536, 524288]


def ensure_data(packets: int, groups: int) -> Path:
    DATA.mkdir(exist_ok=True)
    pcap = DATA / f"p{packets}_g{groups}.pcap"
    parquet = pcap.with_suffix(".parquet")
    if not (pcap.exists() and parquet.exists()):
        print(f"generating {pcap.name} ...", file=sys.stderr, flush=True)
        subprocess.run([sys.executable, str(HERE / "pktgen.py"), "--packets", str(packets),
                        "--groups", str(groups), "--out", str(pcap), "--parquet", str(parquet)],
                       check=True)
    return pcap


def gsqlc_cmd(query: str, pcap: Path, reader: str = "mmap", threads: int | None = None
              ) -> list[str]:
    return [sys.executable, "-m", "gsqlc", "run", str(QUERIES / f"{query}.gsql"),
            "--source", f"eth0=pcap:{pcap}", "--output-file", "/dev/null",
            "--pcap-reader", reader, *(["--threads", str(threads)] if threads else [])]


def run_gsqlc(query: str, pcap: Path, repeat: int, records: int, reader: str = "mmap",
              threads: int | None = None) -> dict:
    """`gsqlc run` of the query: threads None is the default (the machine's
    cores; the libpcap reader reads on one)."""
    cmd = gsqlc_cmd(query, pcap, reader, threads)
    # First run builds (or finds) the query set in the cache; not timed.
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    best, peak = None, 0.0
    for _ in range(repeat):
        dt, _, rss = baselines._spawn_measured(cmd)
        best = dt if best is None else min(best, dt)
        peak = max(peak, rss)
    engine = "gsqlc_libpcap" if reader != "mmap" else "gsqlc1" if threads == 1 else "gsqlc"
    return {"engine": engine, "query": query, "seconds": best, "records": records,
            "peak_rss_mb": peak}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--packets", type=int, default=20_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=str(HERE / "results.md"))
    args = ap.parse_args(argv)
    baselines.REPEAT = args.repeat

    rows = []
    plan = [("q1", GROUPS[0])] + [("q2", g) for g in GROUPS]
    for query, groups in plan:
        pcap = ensure_data(args.packets, groups)
        for f in (pcap, pcap.with_suffix(".parquet")):
            baselines.warm_cache(f)
        res = [run_gsqlc(query, pcap, args.repeat, args.packets, threads=1),
               run_gsqlc(query, pcap, args.repeat, args.packets),
               run_gsqlc(query, pcap, args.repeat, args.packets, reader="libpcap")]
        for engine in ("c", "duckdb1", "duckdb", "polars", "gsqlc_arrow1", "gsqlc_arrow"):
            r = subprocess.run([sys.executable, str(HERE / "baselines.py"), engine, query, str(pcap)],
                               capture_output=True, text=True, check=True,
                               env={**__import__("os").environ, "GSQ_BENCH_REPEAT": str(args.repeat)})
            res.append(json.loads(r.stdout.strip().splitlines()[-1]))
        c_sec = next(r["seconds"] for r in res if r["engine"] == "c")
        for r in res:
            r["groups"] = groups
            r["mrec_s"] = r["records"] / r["seconds"] / 1e6
            r["vs_c"] = c_sec / r["seconds"]
            rows.append(r)
            print(f"{query} {groups:>7} {r['engine']:13} {r['seconds']:7.3f} s "
                  f"{r['mrec_s']:7.2f} M rec/s  peak {r['peak_rss_mb']:7.0f} MB  "
                  f"x{r['vs_c']:.2f} of the C loop", flush=True)

    names = {"gsqlc1": "gsqlc (end to end, pcap, 1 thread)",
             "gsqlc": "gsqlc (end to end, pcap, all threads)",
             "gsqlc_libpcap": "gsqlc (end to end, pcap through libpcap, 1 thread)",
             "c": "hand-written C loop (pcap)",
             "duckdb1": "DuckDB, 1 thread (in memory)", "duckdb": "DuckDB, all threads (in memory)",
             "polars": "Polars (in memory)",
             "gsqlc_arrow1": "gsqlc Python API over Arrow (in memory, 1 thread)",
             "gsqlc_arrow": "gsqlc Python API over Arrow (in memory, all threads)"}
    qname = {"q1": "Q1 filter+project", "q2": "Q2 count per (src,dst) per 60 s"}
    lines = [f"{args.packets / 1e6:g} M packets, best of {args.repeat}; throughput ratio = "
             "C-loop seconds / engine seconds.", "",
             "| query | groups | engine | seconds | M records/s | peak RSS MB | vs C loop |",
             "|---|---:|---|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {qname[r['query']]} | {r['groups']:,} | {names[r['engine']]} | "
                     f"{r['seconds']:.3f} | {r['mrec_s']:.1f} | {r['peak_rss_mb']:.0f} | "
                     f"{r['vs_c']:.2f} |")
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
