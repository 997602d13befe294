#!/usr/bin/env python3
"""Baselines the gsqlc benchmark compares against, on the same records.

Queries (FROM IPV4; every packet bench/pktgen.py writes is IPv4):
  q1  SELECT time, srcIP, destIP, len WHERE protocol = 6 AND len > 100
  q2  SELECT time/60 AS tb, srcIP, destIP, count(*) GROUP BY time/60, srcIP, destIP

Engines:
  c        bench/baseline_c/loop.c, the fair floor: the capture memory-mapped
           and decoded in place, rows formatted as gsqlc's pipe text to OUT,
           -O3 like gsqlc's generated C                      input: the pcap
  duckdb1  DuckDB, SET threads=1, over the ground-truth Arrow table registered
           in memory; result materialised as an Arrow table  input: the parquet
  duckdb   DuckDB with its default thread count (all cores)
  polars   Polars lazy frame over the same Arrow table, collect() (all cores)
  gsqlc_arrow1  gsqlc's Python API over the same Arrow table: the query over
           PROTOCOL PKTS (queries/arrow_q1.gsql, spark_q2.gsql), LFTA + HFTA
           on one thread (threads=1), result materialised as an Arrow table
           (compiled before the clock starts; default LFTA table); the LFTAs
           read chunks of columns (columnar=auto, the default)
  gsqlc_arrow  the same on all cores (threads: the default): the table cut
           into a slice per core, each slice's LFTAs on a thread
  gsqlc_arrow_rows  gsqlc_arrow1 with the LFTAs a record at a time (columnar=off)

Every time is the best of GSQ_BENCH_REPEAT (default 3) runs, after `all` has
read the files once into the page cache (bench/run_bench.py instead runs each
engine once per round, in interleaved rounds, and checks every answer).  The in-process engines load only
the columns the queries read (time, srcIP, destIP, len, protocol) before the
clock starts; loading is not timed.  Peak memory is the max RSS of a process
that runs just one engine on one query (/usr/bin/time -f %M for the C floor),
so for the in-process engines it includes the loaded table
(rss_after_load_mb says how much that was).

    python bench/baselines.py ENGINE q1|q2 FILE      # one run, JSON on stdout
    python bench/baselines.py ENGINE q1|q2 FILE --render OUT.txt
        # ... and the last run's result rows written to OUT.txt as gsqlc's pipe
        # lines (render_text), untimed, for bench/run_bench.py to compare
    python bench/baselines.py all FILE.pcap          # every engine x query, table
FILE may be the .pcap or the .parquet: the other is found by swapping the
suffix (pktgen.py --out X.pcap --parquet X.parquet).
"""
from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
LOOP = HERE / "baseline_c" / "build" / "loop"
DIGEST = HERE / "baseline_c" / "build" / "digest"
COLUMNS = ["time", "srcIP", "destIP", "len", "protocol"]
ENGINES = ["c", "duckdb1", "duckdb", "polars", "gsqlc_arrow1", "gsqlc_arrow", "gsqlc_arrow_rows"]
QUERIES = ["q1", "q2"]
REPEAT = int(os.environ.get("GSQ_BENCH_REPEAT", "3"))

Q1_SQL = "SELECT time, srcIP, destIP, len FROM pk WHERE protocol = 6 AND len > 100"
Q2_SQL = ("SELECT time // 60 AS tb, srcIP, destIP, count(*) AS cnt FROM pk "
          "GROUP BY time // 60, srcIP, destIP")


def _maxrss_mb(who=resource.RUSAGE_SELF) -> float:
    return resource.getrusage(who).ru_maxrss / 1024.0   # Linux: kilobytes


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _paths(file):
    p = Path(file)
    if p.suffix == ".parquet":
        return p.with_suffix(".pcap"), p
    return p, p.with_suffix(".parquet")


def load(parquet):
    import pyarrow.parquet as pq
    return pq.read_table(parquet, columns=COLUMNS)


# ---- the engines: each returns (seconds, output rows, result) -------------

def _fetch_arrow(rel):
    # duckdb 2.x: relation.to_arrow_table(); older: relation.arrow()
    f = getattr(rel, "to_arrow_table", None) or rel.arrow
    return f()


def run_duckdb(table, query, threads=None, keep=False):
    import duckdb
    con = duckdb.connect()
    if threads is not None:
        con.execute(f"SET threads={int(threads)}")
    con.register("pk", table)
    sql = Q1_SQL if query == "q1" else Q2_SQL
    t0 = time.perf_counter()
    res = _fetch_arrow(con.sql(sql))
    dt = time.perf_counter() - t0
    n = res.num_rows
    con.close()
    return dt, n, (res if keep else None)


def run_polars(table, query, keep=False):
    import polars as pl
    lf = pl.from_arrow(table).lazy()
    t0 = time.perf_counter()
    if query == "q1":
        res = (lf.filter((pl.col("protocol") == 6) & (pl.col("len") > 100))
                 .select("time", "srcIP", "destIP", "len").collect())
    else:
        res = (lf.group_by((pl.col("time") // 60).alias("tb"), "srcIP", "destIP")
                 .agg(pl.len().alias("cnt")).collect())
    dt = time.perf_counter() - t0
    return dt, res.height, (res if keep else None)


def compile_gsqlc_arrow(query):
    """The query set gsqlc_arrow runs (built once, cached by content)."""
    sys.path.insert(0, str(HERE.parent / "compiler"))
    import gsqlc
    q = HERE / "queries" / ("arrow_q1.gsql" if query == "q1" else "spark_q2.gsql")
    return gsqlc.compile([q], schema=HERE / "queries" / "packets_columns.txt")


def run_gsqlc_arrow(table, query, keep=False, qs=None, columnar="auto", threads=None):
    qs = qs or compile_gsqlc_arrow(query)
    t0 = time.perf_counter()
    # ip_format="int": the addresses as the other engines return them (uint32),
    # not as text (gsqlc's default; docs/io.md, "IP addresses")
    res = qs.table({"pkts": table}, columnar=columnar, threads=threads, ip_format="int")
    dt = time.perf_counter() - t0
    return dt, res.num_rows, (res if keep else None)


def build_c():
    """Build the C floor and the line digest (baseline_c/build.sh) when a
    binary is missing or older than its source."""
    src = HERE / "baseline_c"
    if any(not b.exists() or b.stat().st_mtime < (src / f"{b.name}.c").stat().st_mtime
           for b in (LOOP, DIGEST)):
        subprocess.run(["bash", str(src / "build.sh")], check=True)
    return LOOP


def digest(path):
    """{rows, sum, xor} of a text file's lines (baseline_c/digest.c): equal
    for equal multisets of lines, whatever their order."""
    build_c()
    r = subprocess.run([str(DIGEST), str(path)], capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def _ip_text(col):
    return (f"concat({col} >> 24, '.', ({col} >> 16) & 255, '.', ({col} >> 8) & 255, '.', "
            f"{col} & 255)")


def render_text(result, path):
    """Write a Q1 or Q2 result (Arrow table or Polars frame: an unsigned
    integer, two IPv4 addresses as unsigned integers, an unsigned integer)
    to path as `gsqlc run`'s pipe lines: `1700000000|10.0.0.1|172.16.0.2|60`.
    DuckDB formats it (untimed): the same text for every in-memory engine."""
    import duckdb
    t = result if hasattr(result, "rename_columns") else result.to_arrow()
    t = t.rename_columns(["a", "s", "d", "b"])
    con = duckdb.connect()
    con.register("r", t)
    row = f"concat(a, '|', {_ip_text('s')}, '|', {_ip_text('d')}, '|', b)"
    out = str(path).replace("'", "''")
    con.execute(f"COPY (SELECT {row} FROM r) TO '{out}' (FORMAT csv, HEADER false, QUOTE '')")
    con.close()


def _spawn_measured(cmd, env=None):
    """Run cmd; returns (seconds, stderr, peak RSS MB of cmd itself).

    Through /usr/bin/time when present: ru_maxrss of a child forked from this
    interpreter would count the interpreter's pages from before exec."""
    timer = shutil.which("time", path="/usr/bin:/bin")
    full = [timer, "-f", "GSQ_MAXRSS_KB %M"] + cmd if timer else cmd
    t0 = time.perf_counter()
    p = subprocess.run(full, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                       env=env)
    dt = time.perf_counter() - t0
    lines = p.stderr.strip().splitlines()
    if timer and lines and lines[-1].startswith("GSQ_MAXRSS_KB"):
        rss = int(lines.pop().split()[1]) / 1024.0
    else:
        rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0
    if p.returncode != 0:
        raise RuntimeError(f"{cmd}: exit {p.returncode}: {chr(10).join(lines)}")
    return dt, lines, rss


def warm_cache(path):
    """Read a file once so that every engine starts from the page cache."""
    with open(path, "rb") as f:
        while f.read(1 << 24):
            pass


def run_c(pcap, query, out="/dev/null", repeat=1):
    """Run the C floor `repeat` times; best wall time, largest peak RSS."""
    build_c()
    best, peak = None, 0.0
    for _ in range(repeat):
        dt, lines, rss = _spawn_measured([str(LOOP), query, str(pcap), str(out)])
        best = dt if best is None else min(best, dt)
        peak = max(peak, rss)
    stats = json.loads(lines[-1])
    return {"engine": "c", "query": query, "seconds": best, "rows": stats["rows"],
            "records": stats["packets"], "peak_rss_mb": peak}


def run_one(engine, query, file, repeat=REPEAT, render=None):
    """Run one engine on one query in this process (best of `repeat` runs);
    returns the JSON dict.  render: a path to write the last run's result
    rows to as pipe lines (render_text; untimed)."""
    pcap, parquet = _paths(file)
    if engine == "c":
        return run_c(pcap, query, out=render or "/dev/null", repeat=repeat)
    table = load(parquet)
    rss_load = _rss_mb()
    runs, qs = [], None
    for _ in range(repeat):
        if engine == "duckdb1":
            runs.append(run_duckdb(table, query, threads=1, keep=bool(render)))
        elif engine == "duckdb":
            runs.append(run_duckdb(table, query, keep=bool(render)))
        elif engine == "polars":
            runs.append(run_polars(table, query, keep=bool(render)))
        elif engine in ("gsqlc_arrow1", "gsqlc_arrow", "gsqlc_arrow_rows"):
            qs = qs or compile_gsqlc_arrow(query)
            runs.append(run_gsqlc_arrow(table, query, keep=bool(render), qs=qs,
                                        columnar="off" if engine.endswith("_rows") else "auto",
                                        threads=None if engine == "gsqlc_arrow" else 1))
        else:
            raise SystemExit(f"unknown engine {engine}")
        if len(runs) > 1:
            runs[-2] = runs[-2][:2] + (None,)   # keep only the last result
    dt, n = min(r[0] for r in runs), runs[0][1]
    peak = _maxrss_mb()
    if render:
        render_text(runs[-1][2], render)
    return {"engine": engine, "query": query, "seconds": dt, "rows": n,
            "records": table.num_rows, "peak_rss_mb": peak,
            "rss_after_load_mb": rss_load}


def run_subprocess(engine, query, file):
    """run_one in a fresh interpreter (fair peak-memory measurement)."""
    r = subprocess.run([sys.executable, str(Path(__file__).resolve()), engine, query,
                        str(file)], capture_output=True, text=True, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def run_all(file, engines=ENGINES, queries=QUERIES):
    for f in _paths(file):
        if f.exists():
            warm_cache(f)
    rows = []
    for q in queries:
        for e in engines:
            r = run_subprocess(e, q, file)
            r["records_per_s"] = r["records"] / r["seconds"]
            rows.append(r)
            print(f"{q:3} {e:16} {r['seconds']:8.3f} s {r['records_per_s'] / 1e6:8.2f} M rec/s "
                  f"rows {r['rows']:>10}  peak {r['peak_rss_mb']:8.0f} MB"
                  + (f" (table {r['rss_after_load_mb']:.0f} MB)"
                     if "rss_after_load_mb" in r else ""), flush=True)
    return rows


def main(argv):
    if len(argv) == 3 and argv[1] == "all":
        run_all(argv[2])
    elif len(argv) in (4, 6) and argv[1] in ENGINES and argv[2] in QUERIES:
        render = argv[5] if len(argv) == 6 and argv[4] == "--render" else None
        if len(argv) == 6 and render is None:
            raise SystemExit(__doc__)
        print(json.dumps(run_one(argv[1], argv[2], argv[3], render=render)))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
