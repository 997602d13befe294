"""gsqlc inside Spark against Spark SQL and a Python UDF (issue 4, part 5).

The query: packets per (srcIP, destIP) per minute (bench/queries/spark_q2.gsql)
over 20 M rows of the packet generator's table, in Spark local[2], with
--groups (srcIP, destIP) pairs, read from --source:

  parquet   spark.read.parquet (gsqlc's LFTA tasks read the files themselves)
  csv       the same rows as CSV: Spark SQL reads them with spark.read.csv,
            gsqlc with gsqlc.spark.read_csv (its LFTA tasks parse the file)
  computed  the Parquet scan with a computed column (abs(time)): not a plain
            scan, so its rows cross from the JVM to Python too

  gsqlc   gsqlc.spark.run_query: over Parquet each task reads its unit of the
          files and completes the epochs it owns (gsqlc.spark.owned_epochs, one stage);
          over CSV the LFTA pre-aggregates each partition in mapInArrow and the
          HFTA completes after a shuffle on the group keys
  gsqlc_shuffle  the same with time_ordered=False: always the shuffle plan
  sql     df.groupBy(floor(time / 60), srcIP, destIP).count()
  udf     the same with the minute computed by a Python UDF

GSQLC_BENCH_MASTER=spark://HOST:PORT runs it on a cluster instead of local[2].
Every variant runs in a fresh SparkSession (same configuration) and writes
its whole result to Spark's `noop` sink; time is the best of --repeat runs
of that action (session start-up and compilation untimed; the first run
warms the page cache).  The results are checked equal before timing.

    python bench/spark_bench.py [--rows 20000000] [--groups 65536] [--source parquet]
                                [--repeat 7] [--out bench/results_spark.md]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
QUERY = HERE / "queries" / "spark_q2.gsql"
SCHEMA = HERE / "queries" / "packets_columns.txt"


def data_path(rows: int, groups: int) -> Path:
    p = HERE / "data" / f"p{rows}_g{groups}.parquet"
    if not p.exists():
        p.parent.mkdir(parents=True, exist_ok=True)
        pcap = p.with_suffix(".pcap")
        subprocess.run([sys.executable, str(HERE / "pktgen.py"), "--packets", str(rows),
                        "--groups", str(groups), "--out", str(pcap), "--parquet", str(p)],
                       check=True)
    return p


def csv_path(parquet: Path) -> Path:
    """The Parquet table's three query columns as CSV (made once)."""
    p = parquet.with_suffix(".csv")
    if not p.exists():
        import pyarrow.csv as pacsv
        import pyarrow.parquet as pq
        t = pq.read_table(parquet, columns=["time", "srcIP", "destIP"])
        pacsv.write_csv(t, p, pacsv.WriteOptions(include_header=False))
    return p


def session(app: str):
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    master = os.environ.get("GSQLC_BENCH_MASTER", "local[2]")   # e.g. spark://host:7077
    return (SparkSession.builder.master(master).appName(app)
            .config("spark.ui.enabled", "false")
            .config("spark.driver.memory", "6g")
            .config("spark.executor.memory", "3g")   # a cluster's executors (local: unused)
            .config("spark.sql.shuffle.partitions", "8")
            .config("spark.sql.execution.arrow.maxRecordsPerBatch", "65536")
            .getOrCreate())


def frame(spark, variant: str, path: Path, source: str = "parquet"):
    from pyspark.sql import functions as F
    from pyspark.sql import types as T
    if source == "csv" and variant.startswith("gsqlc"):
        from gsqlc.spark import read_csv  # gsqlc's CSV reader: its tasks parse the file
        df = read_csv(spark, csv_path(path), "time long, srcIP long, destIP long")
    elif source == "csv":
        df = spark.read.csv(str(csv_path(path)), schema="time long, srcIP long, destIP long")
    else:
        df = spark.read.parquet(str(path)).select("time", "srcIP", "destIP")
        if source == "computed":
            df = df.select(F.abs(F.col("time")).alias("time"), "srcIP", "destIP")
    if variant in ("gsqlc", "gsqlc_shuffle"):
        from gsqlc.spark import run_query
        # ip_format="int": LongType addresses, as Spark SQL's own answer has them;
        # gsqlc_shuffle: the plan for sources in any order (partials shuffled)
        return run_query(spark, [str(QUERY)], schema=str(SCHEMA), sources={"pkts": df},
                         ip_format="int", time_ordered=variant == "gsqlc")
    if variant == "sql":
        return df.groupBy(F.floor(F.col("time") / 60).alias("tb"), "srcIP", "destIP") \
                 .agg(F.count(F.lit(1)).alias("cnt"))
    if variant == "udf":
        minute = F.udf(lambda t: t // 60, T.LongType())
        return df.groupBy(minute("time").alias("tb"), "srcIP", "destIP") \
                 .agg(F.count(F.lit(1)).alias("cnt"))
    raise ValueError(variant)


def one(variant: str, path: Path, repeat: int, source: str = "parquet") -> dict:
    """Run one variant in this process (called in a child per variant)."""
    spark = session(f"gsqlc-bench-{variant}")
    df = frame(spark, variant, path, source)
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        df.write.format("noop").mode("overwrite").save()
        times.append(time.perf_counter() - t)
    rows = sorted(tuple(int(x) for x in r) for r in df.collect())
    spark.stop()
    import hashlib
    return {"variant": variant, "best": min(times), "times": times, "rows": len(rows),
            "digest": hashlib.sha256(repr(rows).encode()).hexdigest()[:16]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=20_000_000)
    ap.add_argument("--groups", type=int, default=65536)
    ap.add_argument("--source", choices=["parquet", "csv", "computed"], default="parquet")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--variants", default="gsqlc,sql,udf")
    ap.add_argument("--out", default=str(HERE / "results_spark.md"))
    ap.add_argument("--one", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    path = data_path(a.rows, a.groups)
    if a.one:
        import json
        print(json.dumps(one(a.one, path, a.repeat, a.source)))
        return 0
    import json
    res = {}
    for v in a.variants.split(","):
        p = subprocess.run([sys.executable, __file__, "--rows", str(a.rows), "--groups",
                            str(a.groups), "--source", a.source, "--repeat", str(a.repeat),
                            "--one", v],
                           stdout=subprocess.PIPE, text=True, check=True)
        res[v] = json.loads(p.stdout.strip().splitlines()[-1])
        print(f"{v:6} best {res[v]['best']:.2f} s  runs {[round(t, 2) for t in res[v]['times']]}  "
              f"rows {res[v]['rows']}  digest {res[v]['digest']}", flush=True)
    digests = {r["digest"] for r in res.values()}
    if len(digests) != 1:
        print("RESULTS DIFFER: " + ", ".join(f"{k}={r['digest']}" for k, r in res.items()))
        return 1
    master = os.environ.get("GSQLC_BENCH_MASTER", "local[2]")
    lines = [f"# Spark benchmark ({a.rows:,} rows, {a.groups:,} (srcIP, destIP) pairs, "
             f"{a.source}, {master})",
             "", "Query: packets per (srcIP, destIP) per minute; result written to Spark's noop sink; "
             f"best of {a.repeat}.", "",
             "| variant | best (s) | runs (s) | result rows | vs Spark SQL |", "|---|---|---|---|---|"]
    base = res.get("sql", {}).get("best")
    for v, r in res.items():
        ratio = f"{base / r['best']:.2f}x" if base else "-"
        lines.append(f"| {v} | {r['best']:.2f} | {', '.join(f'{t:.2f}' for t in r['times'])} | "
                     f"{r['rows']:,} | {ratio} |")
    Path(a.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
