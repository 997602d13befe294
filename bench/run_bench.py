#!/usr/bin/env python3
"""The gsqlc packet benchmark (a benchmark, not a test): gsqlc end to end
over a pcap against the C floor (bench/baseline_c/loop.c: the same work in
the cheapest single-threaded C we know) and against DuckDB and Polars in
memory over the same generated packets, in interleaved rounds, every
answer checked.

    python bench/run_bench.py [--packets N ...] [--groups G ...] [--zipf S] [--rounds R]
                              [--engines E,...] [--markdown FILE] [--json FILE]

Data (--data, default bench/data/; generated once by bench/pktgen.py at
100,000 packets/s): p{N}_g{G}.pcap and .parquet, G distinct (srcIP, destIP)
pairs.  Queries: bench/queries/q1.gsql (filter + project) on the first
--groups, q2.gsql (count per pair per 60 s) on each.

Rounds: for each query, every engine runs once a round, R rounds (default
5), the order rotated by one each round, so that a drift of the machine
reaches every engine alike.  Printed per engine: the median, min and max of
its R times and the ratio of its median to the C floor's median.  gsqlc's
start-up is `gsqlc run` of the same query over a capture with no packets
(`gsqlc_empty`), run in the same rounds; its time per packet beyond start-up
is (median - median of gsqlc_empty) / packets, and the floor's the same with
`c_empty`.

Times: the C floor and `gsqlc run` are the wall time of their process
(Python's start included for gsqlc; the query set already built: builds are
cached), writing their text to a file in --scratch (tmpfs by default); the
in-memory engines are timed in their process around the query alone
(bench/baselines.py: table loaded before, result materialised as Arrow).

Verification, every run: each engine's result rows as gsqlc's pipe text (the
C floor and gsqlc write it; DuckDB's, Polars' and gsqlc's Arrow results are
formatted by DuckDB after the clock stops) go through baseline_c/digest (the
number of lines and the sum and xor of a 64-bit hash per line: equal for
equal multisets whatever the order), compared to the digest of DuckDB's
answer (one thread) computed once before the rounds.  A mismatch stops the
benchmark with the first rows that differ (both sides sorted).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import struct
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import baselines  # noqa: E402

QUERIES = HERE / "queries"
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    [str(HERE.parent / "compiler"), *filter(None, [os.environ.get("PYTHONPATH")])])}

ENGINES = {
    "c": "C floor (pcap, mmap)",
    "c_empty": "C floor over an empty capture (start-up)",
    "gsqlc": "gsqlc run (pcap, mmap, 1 thread)",
    "gsqlc_empty": "gsqlc run over an empty capture (start-up)",
    "gsqlc2": "gsqlc run (pcap, mmap, --threads 2)",
    "gsqlc_libpcap": "gsqlc run (pcap through libpcap, 1 thread)",
    "duckdb1": "DuckDB, 1 thread (in memory)",
    "duckdb": "DuckDB, all threads (in memory)",
    "polars": "Polars (in memory)",
    "gsqlc_arrow1": "gsqlc API over Arrow, 1 thread (in memory)",
    "gsqlc_arrow": "gsqlc API over Arrow, all threads (in memory)",
}
IN_MEMORY = {"duckdb1", "duckdb", "polars", "gsqlc_arrow1", "gsqlc_arrow"}
EMPTY = {"c_empty", "gsqlc_empty"}


class Mismatch(SystemExit):
    pass


def ensure_data(data: Path, packets: int, groups: int, zipf: float = 0.0) -> Path:
    data.mkdir(parents=True, exist_ok=True)
    pcap = data / (f"p{packets}_g{groups}" + (f"_z{zipf:g}" if zipf else "") + ".pcap")
    parquet = pcap.with_suffix(".parquet")
    if not (pcap.exists() and parquet.exists()):
        print(f"generating {pcap.name} ...", file=sys.stderr, flush=True)
        subprocess.run([sys.executable, str(HERE / "pktgen.py"), "--packets", str(packets),
                        "--groups", str(groups), "--out", str(pcap), "--parquet", str(parquet),
                        "--zipf", str(zipf)],
                       check=True)
    return pcap


def empty_capture(scratch: Path) -> Path:
    """A classic pcap header (Ethernet) and no record."""
    path = scratch / "empty.pcap"
    path.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    return path


def gsqlc_cmd(engine: str, query: str, pcap: Path, out: Path) -> list[str]:
    threads = "2" if engine == "gsqlc2" else "1"
    reader = "libpcap" if engine == "gsqlc_libpcap" else "mmap"
    return [sys.executable, "-m", "gsqlc", "run", str(QUERIES / f"{query}.gsql"),
            "--source", f"eth0=pcap:{pcap}", "--output-file", str(out),
            "--pcap-reader", reader, "--threads", threads]


def run_engine(engine: str, query: str, pcap: Path, empty: Path, out: Path
               ) -> tuple[float, float]:
    """One run of engine; its rows are in `out` afterwards.  Returns
    (seconds, peak RSS MB)."""
    src = empty if engine in EMPTY else pcap
    if engine in ("c", "c_empty"):
        dt, _, rss = baselines._spawn_measured([str(baselines.LOOP), query, str(src), str(out)])
        return dt, rss
    if engine in IN_MEMORY:
        r = subprocess.run([sys.executable, str(HERE / "baselines.py"), engine, query, str(pcap),
                            "--render", str(out)],
                           capture_output=True, text=True, env={**ENV, "GSQ_BENCH_REPEAT": "1"})
        if r.returncode != 0:
            raise SystemExit(f"{engine} {query}: exit {r.returncode}\n{r.stderr}")
        res = json.loads(r.stdout.strip().splitlines()[-1])
        return res["seconds"], res["peak_rss_mb"]
    cmd = gsqlc_cmd("gsqlc" if engine == "gsqlc_empty" else engine, query, src, out)
    dt, _, rss = baselines._spawn_measured(cmd, env=ENV)
    return dt, rss


def first_differences(want: Path, got: Path, limit: int = 10) -> list[str]:
    """The first rows (in byte order) found on one side only; both files
    sorted by sort(1) and merged a line at a time."""
    def sorted_file(p: Path) -> Path:
        s = p.with_suffix(".sorted")
        subprocess.run(["sort", "-o", str(s), str(p)], env={**os.environ, "LC_ALL": "C"},
                       check=True)
        return s
    out: list[str] = []
    with open(sorted_file(want), "rb") as fa, open(sorted_file(got), "rb") as fb:
        x, y = fa.readline(), fb.readline()
        while (x or y) and len(out) < limit:
            if not y or (x and x < y):
                out.append(f"  only in DuckDB's answer: {x.decode().rstrip()}")
                x = fa.readline()
            elif not x or y < x:
                out.append(f"  only in this engine's:   {y.decode().rstrip()}")
                y = fb.readline()
            else:
                x, y = fa.readline(), fb.readline()
    return out


def check(engine: str, query: str, out: Path, ref: dict, ref_text: Path) -> None:
    got = baselines.digest(out)
    want = {"rows": 0, "sum": "0" * 16, "xor": "0" * 16} if engine in EMPTY else ref
    if got != want:
        lines = [f"ANSWER MISMATCH: {engine} {query}: {got} != {want}"]
        if engine not in EMPTY:
            lines += first_differences(ref_text, out)
        raise Mismatch("\n".join(lines) + f"\n(kept: {out}, {ref_text})")
    out.unlink()


def rotated(names: list[str], r: int) -> list[str]:
    """Round r's order: names rotated by r, so that a drift of the machine
    reaches every one alike."""
    return names[r % len(names):] + names[:r % len(names)]


def print_round(r: int, times: dict[str, list[float]]) -> None:
    """Round r's last time of each name, on stderr."""
    print(f"  round {r + 1}: " + "  ".join(f"{e} {t[-1]:.3f}" for e, t in times.items()),
          file=sys.stderr, flush=True)


def publish(lines: list[str], markdown: Path | None) -> None:
    """A benchmark's table printed, and written to `markdown` when given."""
    text = "\n".join(lines)
    print(text)
    if markdown:
        markdown.write_text(text + "\n")


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def bench_query(query: str, pcap: Path, engines: list[str], rounds: int, scratch: Path
                ) -> dict:
    """R interleaved rounds of every engine on one query and capture."""
    empty = empty_capture(scratch)
    ref_text = scratch / f"reference_{query}.txt"
    subprocess.run([sys.executable, str(HERE / "baselines.py"), "duckdb1", query, str(pcap),
                    "--render", str(ref_text)], check=True, capture_output=True, env=ENV)
    ref = baselines.digest(ref_text)
    for e in engines:   # build (or find) gsqlc's query sets; untimed
        if e.startswith("gsqlc") and e not in IN_MEMORY:
            run_engine(e, query, pcap, empty, scratch / "warm.txt")
    times: dict[str, list[float]] = {e: [] for e in engines}
    rss: dict[str, float] = {e: 0.0 for e in engines}
    load = [load_average()]
    for r in range(rounds):
        for e in rotated(engines, r):
            out = scratch / f"{e}_{query}.txt"
            dt, mb = run_engine(e, query, pcap, empty, out)
            check(e, query, out, ref, ref_text)
            times[e].append(dt)
            rss[e] = max(rss[e], mb)
        load.append(load_average())
        print_round(r, times)
    ref_text.unlink()
    return {"query": query, "pcap": str(pcap), "reference": ref, "times": times,
            "peak_rss_mb": rss, "load": load}


def summarize(res: dict, packets: int, groups: int) -> list[str]:
    """Markdown rows: engine, median, min-max, ratio to the floor, ns/packet."""
    t = res["times"]
    med = {e: statistics.median(v) for e, v in t.items()}
    floor = med.get("c")
    start = {"c": med.get("c_empty"), "gsqlc": med.get("gsqlc_empty"),
             "gsqlc2": med.get("gsqlc_empty"), "gsqlc_libpcap": med.get("gsqlc_empty")}
    rows = []
    for e, v in t.items():
        ratio = f"{med[e] / floor:.2f}x" if floor and e not in EMPTY else ""
        base = start.get(e) if e not in IN_MEMORY else 0.0
        per = f"{(med[e] - base) / packets * 1e9:.1f}" if base is not None and e not in EMPTY \
            else ""
        rows.append(f"| {res['query'].upper()} | {groups:,} | {ENGINES[e]} | {med[e]:.3f} | "
                    f"{min(v):.3f}-{max(v):.3f} | {ratio} | {per} | {res['peak_rss_mb'][e]:.0f} |")
    return rows


HEADER = ["| query | groups | engine | median s | min-max s | median / floor's | "
          "ns/packet beyond start-up | peak RSS MB |",
          "|---|---:|---|---:|---:|---:|---:|---:|"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--packets", type=int, nargs="+", default=[20_000_000])
    ap.add_argument("--groups", type=int, nargs="+", default=[65536, 524288])
    ap.add_argument("--zipf", type=float, default=0.0, metavar="S",
                    help="pairs drawn with probability proportional to 1 / rank^S "
                         "(pktgen.py --zipf; default 0: uniform)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--queries", default="q1,q2")
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--data", type=Path, default=HERE / "data")
    ap.add_argument("--scratch", type=Path, default=Path("/dev/shm/gsqlc_bench"))
    ap.add_argument("--markdown", type=Path, help="write the tables here")
    ap.add_argument("--json", type=Path, help="write every run's figures here")
    args = ap.parse_args(argv)
    engines = args.engines.split(",")
    unknown = [e for e in engines if e not in ENGINES]
    if unknown:
        ap.error(f"unknown engines {unknown}; known: {', '.join(ENGINES)}")
    args.scratch.mkdir(parents=True, exist_ok=True)
    baselines.build_c()
    commit = subprocess.run(["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    md, results = [], []
    for packets in args.packets:
        plan = [(q, g) for q in args.queries.split(",")
                for g in (args.groups[:1] if q == "q1" else args.groups)]
        md += [f"{packets / 1e6:g} M packets, {args.rounds} interleaved rounds, "
               f"commit {commit}; median / floor's = engine's median over the C floor's.",
               "", *HEADER]
        notes: list[str] = []
        for query, groups in plan:
            pcap = ensure_data(args.data, packets, groups, args.zipf)
            for f in (pcap, pcap.with_suffix(".parquet")):
                baselines.warm_cache(f)
            print(f"{query} {packets:,} packets {groups:,} groups, load {load_average()}",
                  file=sys.stderr, flush=True)
            res = bench_query(query, pcap, engines, args.rounds, args.scratch)
            res.update(packets=packets, groups=groups)
            results.append(res)
            rows = summarize(res, packets, groups)
            md += rows
            print("\n".join(rows), flush=True)
            print(f"  verified: {res['reference']['rows']:,} rows a run, every engine, every "
                  f"round; load {' -> '.join(res['load'])}", flush=True)
            notes.append(f"{query.upper()} over {groups:,} groups: {res['reference']['rows']:,} "
                         f"rows checked in every run of every engine; load average "
                         f"(1, 5, 15 min) {' -> '.join(res['load'])}")
        md += ["", *notes, ""]
    if args.markdown:
        args.markdown.write_text("\n".join(md) + "\n")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    if not args.markdown:
        print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
