#!/usr/bin/env python3
"""The prefilter benchmark (a benchmark, not a test): sixteen selective
queries over one capture against one of them, with and without the
prefilter, in interleaved rounds, every answer checked.

    python bench/prefilter_bench.py [--packets N] [--groups G] [--rounds R]
                                    [--data DIR] [--scratch DIR] [--markdown FILE]

Queries: bench/queries/ports16.gsql (count per minute and source of the
TCP packets to one destination port, sixteen ports: six of them among the
generator's eight, so those queries each keep ~9 % of the packets, the
other ten none) and ports1.gsql (the first of them).  Configurations, each
a `gsqlc run` process writing its rows to --scratch:

    one          ports1.gsql
    sixteen      ports16.gsql (the prefilter on: the default)
    sixteen_off  ports16.gsql --prefilter off (every LFTA given every packet)
    sixteen_rare, sixteen_rare_off
                 ports16_rare.gsql: the first query's port and fifteen the
                 generator never draws (what the prefilter itself costs)

and each over a capture with no packet (`*_empty`: start-up, the query set
already built).  A configuration's work is its median less its start-up's
median; printed is each work and sixteen's work over one's (the goal: at
most 1.5).  Every run's rows go through baseline_c/digest against DuckDB's
answer to the same queries over the generator's table (the same packets).
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import baselines  # noqa: E402
from run_bench import (  # noqa: E402
    ENV,
    QUERIES,
    empty_capture,
    ensure_data,
    load_average,
    print_round,
    publish,
    rotated,
)

CONFIGS = {"one": ("ports1", []), "sixteen": ("ports16", []),
           "sixteen_off": ("ports16", ["--prefilter", "off"]),
           "sixteen_rare": ("ports16_rare", []),
           "sixteen_rare_off": ("ports16_rare", ["--prefilter", "off"])}


def ports(query: str) -> list[int]:
    text = (QUERIES / f"{query}.gsql").read_text()
    return [int(line.split("destPort = ")[1].split()[0]) for line in text.splitlines()
            if "destPort = " in line]


def reference(parquet: Path, query: str, out: Path) -> dict:
    """DuckDB's rows for every query of the file, as gsqlc's pipe text."""
    import duckdb
    ip = " || '.' || ".join(f"((srcIP >> {s}) & 255)::VARCHAR" for s in (24, 16, 8, 0))
    union = " UNION ALL ".join(
        f"SELECT time // 60 AS tb, srcIP, count(*) AS n FROM '{parquet}' "
        f"WHERE protocol = 6 AND destPort = {k} GROUP BY 1, 2" for k in ports(query))
    con = duckdb.connect()
    con.execute("SET threads = 1")
    rows = con.execute(f"SELECT tb::VARCHAR || '|' || {ip} || '|' || n::VARCHAR FROM ({union})"
                       ).fetchall()
    out.write_text("".join(r[0] + "\n" for r in rows))
    return baselines.digest(out)


def run(config: str, pcap: Path, out: Path) -> float:
    query, extra = CONFIGS[config]
    cmd = [sys.executable, "-m", "gsqlc", "run", str(QUERIES / f"{query}.gsql"),
           "--source", f"eth0=pcap:{pcap}", "--output-file", str(out), *extra]
    dt, _, _ = baselines._spawn_measured(cmd, env=ENV)
    return dt


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--packets", type=int, default=10_000_000)
    ap.add_argument("--groups", type=int, default=65536)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--data", type=Path, default=HERE / "data")
    ap.add_argument("--scratch", type=Path, default=Path("/dev/shm"))
    ap.add_argument("--markdown", type=Path)
    a = ap.parse_args(argv)
    pcap = ensure_data(a.data, a.packets, a.groups)
    empty = empty_capture(a.scratch)
    refs = {q: reference(pcap.with_suffix(".parquet"), q, a.scratch / f"ref_{q}.txt")
            for q in ("ports1", "ports16", "ports16_rare")}
    runs = [c for c in CONFIGS] + [c + "_empty" for c in CONFIGS]
    for c in CONFIGS:   # build (or find) the query sets; untimed
        run(c, empty, a.scratch / "warm.txt")
    times: dict[str, list[float]] = {c: [] for c in runs}
    load = [load_average()]
    for r in range(a.rounds):
        for c in rotated(runs, r):
            base = c.removesuffix("_empty")
            out = a.scratch / f"{c}.txt"
            times[c].append(run(base, empty if c.endswith("_empty") else pcap, out))
            got = baselines.digest(out)
            want = ({"rows": 0, "sum": "0" * 16, "xor": "0" * 16} if c.endswith("_empty")
                    else refs[CONFIGS[base][0]])
            if got != want:
                raise SystemExit(f"ANSWER MISMATCH: {c}: {got} != {want} (kept: {out})")
            out.unlink()
        load.append(load_average())
        print_round(r, times)
    med = {c: statistics.median(v) for c, v in times.items()}
    work = {c: med[c] - med[c + "_empty"] for c in CONFIGS}
    lines = [f"{a.packets:,} packets, {a.groups:,} pairs, {a.rounds} rounds; load {load[0]} .. "
             f"{load[-1]}; every answer equal to DuckDB's", "",
             "| configuration | median s | min-max s | start-up s | work s | work / one's |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for c in CONFIGS:
        t = times[c]
        lines.append(f"| {c} | {med[c]:.3f} | {min(t):.3f}-{max(t):.3f} | "
                     f"{med[c + '_empty']:.3f} | {work[c]:.3f} | {work[c] / work['one']:.2f} |")
    publish(lines, a.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
