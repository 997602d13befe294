"""gsqlc inside Spark against Spark SQL and a Python UDF.

Over 20 M rows of the packet generator's table, in Spark local[2], with
--groups (srcIP, destIP) pairs, read from --source.  Sources gsqlc's tasks
read themselves (the query: packets per (srcIP, destIP) per minute,
bench/queries/spark_q2.gsql):

  parquet   spark.read.parquet: gsqlc's LFTA tasks read the files
  csv       the same rows as CSV: Spark SQL reads them with spark.read.csv,
            gsqlc with gsqlc.spark.read_csv (its LFTA tasks parse the file)
  computed  the Parquet scan with a computed column (abs(time)): gsqlc's
            tasks read the files and compute the projection with pyarrow
            as Spark would (gsqlc.spark.catalyst)

Sources Spark must materialise, whose rows gsqlc receives from Spark (one
mapInArrow over the DataFrame, as any engine in Python would); the query:
the same counts with the source's site, sites 0-11 only
(bench/queries/spark_q3.gsql, 3/4 of the rows):

  join      the Parquet scan joined with a 256-row table of sites (srcIP ->
            site), broadcast; Spark SQL pushes the site filter into the
            table, gsqlc filters the joined rows
  pyudf     the Parquet scan with the site looked up by a pandas_udf

Variants:

  gsqlc   gsqlc.spark.run_query: over Parquet each task reads its unit of the
          files and completes the epochs it owns (gsqlc.spark.owned_epochs,
          one stage); over CSV and Spark's rows the LFTA pre-aggregates each
          partition in mapInArrow and the HFTA completes after a shuffle on
          the group keys
  gsqlc_shuffle  the same with time_ordered=False: always the shuffle plan
  sql     the DataFrame API: groupBy(floor(time / 60), ...).count()
  udf     the same with the minute computed by a Python UDF
  handoff not a query: the source's rows handed to a mapInArrow that only
          counts them -- what any engine in Python pays for Spark's rows
          (its result is not compared)

Two ways of timing.  By default every variant runs in a fresh SparkSession
(same configuration) and writes its whole result to Spark's `noop` sink;
time is the best of --repeat runs of that action (session start-up and
compilation untimed; the first run warms the page cache); the results are
checked equal once, after timing.  With --rounds R (the default for join
and pyudf) the variants share one session and run round by round, in an
order rotated every round, after one untimed round; each run's action
computes a digest of the whole result in Spark (row count and the sum of
every row's xxhash64), checked equal across variants in every run; the
median and the spread (min-max) of the R runs are printed.

GSQLC_BENCH_MASTER=spark://HOST:PORT runs it on a cluster instead of local[2].

    python bench/spark_bench.py [--rows 20000000] [--groups 65536] [--zipf S] [--source parquet]
                                [--repeat 7] [--rounds R] [--variants gsqlc,sql,udf]
                                [--out FILE]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from run_bench import rotated  # noqa: E402

QUERY = HERE / "queries" / "spark_q2.gsql"
SCHEMA = HERE / "queries" / "packets_columns.txt"
SITE_QUERY = HERE / "queries" / "spark_q3.gsql"
SITE_SCHEMA = HERE / "queries" / "packets_sites_columns.txt"
SOURCES = ["parquet", "csv", "computed", "join", "pyudf"]
SPARK_ROWS = ("join", "pyudf")   # sources Spark materialises: gsqlc gets their rows
SITES = 16                       # the site of a source address: its rank modulo SITES
KEPT_SITES = 12                  # spark_q3's WHERE site < 12


def data_path(rows: int, groups: int, zipf: float = 0.0) -> Path:
    p = HERE / "data" / (f"p{rows}_g{groups}" + (f"_z{zipf:g}" if zipf else "") + ".parquet")
    if not p.exists():
        p.parent.mkdir(parents=True, exist_ok=True)
        pcap = p.with_suffix(".pcap")
        subprocess.run([sys.executable, str(HERE / "pktgen.py"), "--packets", str(rows),
                        "--groups", str(groups), "--out", str(pcap), "--parquet", str(p),
                        "--zipf", str(zipf)],
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


def source_addresses(parquet: Path):
    """The table's distinct source addresses, sorted (numpy int64): the
    keys of the table of sites."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    ips = pc.unique(pq.read_table(parquet, columns=["srcIP"])["srcIP"])
    return np.sort(ips.to_numpy().astype(np.int64))


def session(app: str):
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    master = os.environ.get("GSQLC_BENCH_MASTER", "local[2]")   # e.g. spark://host:7077
    return (SparkSession.builder.master(master).appName(app)
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.driver.memory", "6g")
            .config("spark.executor.memory", "3g")   # a cluster's executors (local: unused)
            .config("spark.sql.shuffle.partitions", "8")
            .config("spark.sql.execution.arrow.maxRecordsPerBatch", "65536")
            .getOrCreate())


def with_site(spark, df, path: Path, source: str):
    """The packets with the site of their source address, made by Spark:
    a broadcast join with the table of sites, or a pandas_udf looking the
    address up in the same table."""
    from pyspark.sql import functions as F
    ips = source_addresses(path)
    if source == "join":
        sites = spark.createDataFrame([(int(ip), i % SITES) for i, ip in enumerate(ips)],
                                      "srcIP long, site long")
        return df.join(F.broadcast(sites), "srcIP")
    return df.withColumn("site", F.pandas_udf(site_lookup(ips), "long")("srcIP"))


def site_lookup(ips: np.ndarray):
    """The pandas_udf's function: each address's rank among `ips`, modulo
    SITES, as the table of sites has it (its type hints, evaluated by
    pyspark in this module, make it a scalar pandas_udf)."""
    def site(src: pd.Series) -> pd.Series:
        return pd.Series(np.searchsorted(ips, src.to_numpy()) % SITES)
    return site


def count_rows(batches):
    """The handoff variant's mapInArrow: one row per batch, its length."""
    import pyarrow as pa
    for b in batches:
        yield pa.RecordBatch.from_pydict({"rows": pa.array([b.num_rows], pa.int64())})


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
        elif source in SPARK_ROWS:
            df = with_site(spark, df, path, source)
    sited = source in SPARK_ROWS
    if variant == "handoff":
        return df.mapInArrow(count_rows, "rows long")
    if variant in ("gsqlc", "gsqlc_shuffle"):
        from gsqlc.spark import run_query
        # ip_format="int": LongType addresses, as Spark SQL's own answer has them;
        # gsqlc_shuffle: the plan for sources in any order (partials shuffled)
        return run_query(spark, [str(SITE_QUERY if sited else QUERY)],
                         schema=str(SITE_SCHEMA if sited else SCHEMA), sources={"pkts": df},
                         ip_format="int", time_ordered=variant == "gsqlc")
    if variant == "sql":
        minute = F.floor(F.col("time") / 60)
    elif variant == "udf":
        minute = F.udf(lambda t: t // 60, T.LongType())("time")
    else:
        raise ValueError(variant)
    if sited:
        df = df.where(F.col("site") < KEPT_SITES)
    keys = ["site", "srcIP", "destIP"] if sited else ["srcIP", "destIP"]
    return df.groupBy(minute.alias("tb"), *keys).agg(F.count(F.lit(1)).alias("cnt"))


def sorted_rows(df) -> list:
    return sorted(tuple(int(x) for x in r) for r in df.collect())


def one(variant: str, path: Path, repeat: int, source: str = "parquet") -> dict:
    """Run one variant in this process (called in a child per variant)."""
    spark = session(f"gsqlc-bench-{variant}")
    df = frame(spark, variant, path, source)
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        df.write.format("noop").mode("overwrite").save()
        times.append(time.perf_counter() - t)
    rows = sorted_rows(df)
    spark.stop()
    return {"variant": variant, "best": min(times), "times": times,
            "rows": None if variant == "handoff" else len(rows),
            "digest": hashlib.sha256(repr(rows).encode()).hexdigest()[:16]}


def digest_frame(df):
    """One row: the result's row count and the sum of its rows' xxhash64
    (every column as a long, so both engines' column types hash alike;
    summed as a decimal, which does not overflow)."""
    from pyspark.sql import functions as F
    h = F.xxhash64(*[F.col(c).cast("long") for c in df.columns])
    return df.select(h.cast("decimal(38,0)").alias("h")) \
             .agg(F.count(F.lit(1)).alias("rows"), F.sum("h").alias("sum"))


def rounds(path: Path, source: str, variants: list[str], n: int) -> dict:
    """The variants in one session, round by round in a rotated order (one
    untimed round first); every run's digest checked equal to the first's."""
    spark = session(f"gsqlc-bench-rounds-{source}")
    frames = {v: frame(spark, v, path, source) for v in variants}
    times: dict[str, list[float]] = {v: [] for v in variants}
    first: tuple[int, str] | None = None
    for r in range(n + 1):
        order = rotated(variants, r)
        seen, took = {}, {}
        for v in order:
            # A new DataFrame each run: collecting the same one again reuses
            # its plan, whose shuffle files Spark would not recompute.
            digest = digest_frame(frames[v])
            t = time.perf_counter()
            row = digest.collect()[0]
            dt = time.perf_counter() - t
            seen[v] = (int(row["rows"]), str(row["sum"]))
            took[v] = dt
            if r:
                times[v].append(dt)
        line = "  ".join(f"{v} {took[v]:.2f}" for v in order)
        print(f"round {r}{' (untimed)' if not r else ''}: {line}", flush=True)
        answers = {seen[v] for v in variants if v != "handoff"}
        first = first or next(iter(answers))
        if answers != {first}:
            print(f"RESULTS DIFFER in round {r}: {seen}", flush=True)
            report_difference(spark, path, source, variants)
            spark.stop()
            raise SystemExit(1)
    spark.stop()
    assert first is not None
    return {v: {"variant": v, "times": ts, "median": statistics.median(ts), "best": min(ts),
                "worst": max(ts), "rows": None if v == "handoff" else first[0],
                "digest": first[1]}
            for v, ts in times.items()}


def report_difference(spark, path: Path, source: str, variants: list[str]) -> None:
    """Where the variants' results differ: each one's rows the first lacks."""
    results = {v: set(sorted_rows(frame(spark, v, path, source)))
               for v in variants if v != "handoff"}
    variants = list(results)
    first = variants[0]
    for v in variants[1:]:
        only_v, only_first = results[v] - results[first], results[first] - results[v]
        print(f"{v}: {len(results[v])} rows; {len(only_v)} not in {first} "
              f"(e.g. {sorted(only_v)[:5]}), {len(only_first)} of {first}'s missing "
              f"(e.g. {sorted(only_first)[:5]})")


def table_best(res: dict) -> list[str]:
    lines = ["| variant | best (s) | runs (s) | result rows | vs Spark SQL |", "|---|---|---|---|---|"]
    base = res.get("sql", {}).get("best")
    for v, r in res.items():
        ratio = f"{base / r['best']:.2f}x" if base else "-"
        lines.append(f"| {v} | {r['best']:.2f} | {', '.join(f'{t:.2f}' for t in r['times'])} | "
                     f"{rows_text(r['rows'])} | {ratio} |")
    return lines


def table_rounds(res: dict) -> list[str]:
    lines = ["| variant | median (s) | min-max (s) | runs (s) | result rows | Spark SQL / variant "
             "(medians) |", "|---|---:|---:|---|---:|---:|"]
    base = res.get("sql", {}).get("median")
    for v, r in res.items():
        ratio = f"{base / r['median']:.2f}x" if base else "-"
        lines.append(f"| {v} | {r['median']:.2f} | {r['best']:.2f}-{r['worst']:.2f} | "
                     f"{', '.join(f'{t:.2f}' for t in r['times'])} | {rows_text(r['rows'])} | {ratio} |")
    return lines


def rows_text(rows) -> str:
    return "-" if rows is None else f"{rows:,}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=20_000_000)
    ap.add_argument("--groups", type=int, default=65536)
    ap.add_argument("--zipf", type=float, default=0.0, metavar="S",
                    help="pairs drawn with probability proportional to 1 / rank^S "
                         "(pktgen.py --zipf; default 0: uniform)")
    ap.add_argument("--source", choices=SOURCES, default="parquet")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--rounds", type=int, help="interleave the variants in one session, "
                    "R timed rounds (default for join and pyudf: 7)")
    ap.add_argument("--variants", default="gsqlc,sql,udf")
    ap.add_argument("--out", help="also write the table here (overwritten)")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    path = data_path(a.rows, a.groups, a.zipf)
    if a.one:
        print(json.dumps(one(a.one, path, a.repeat, a.source)))
        return 0
    variants = a.variants.split(",")
    n_rounds = a.rounds or (7 if a.source in SPARK_ROWS else 0)
    if n_rounds:
        res = rounds(path, a.source, variants, n_rounds)
    else:
        res = {}
        for v in variants:
            p = subprocess.run([sys.executable, __file__, "--rows", str(a.rows), "--groups",
                                str(a.groups), "--zipf", str(a.zipf), "--source", a.source,
                                "--repeat", str(a.repeat), "--one", v],
                               stdout=subprocess.PIPE, text=True, check=True)
            res[v] = json.loads(p.stdout.strip().splitlines()[-1])
            print(f"{v:6} best {res[v]['best']:.2f} s  runs {[round(t, 2) for t in res[v]['times']]}  "
                  f"rows {res[v]['rows']}  digest {res[v]['digest']}", flush=True)
        if len({r["digest"] for v, r in res.items() if v != "handoff"}) != 1:
            print("RESULTS DIFFER: " + ", ".join(f"{k}={r['digest']}" for k, r in res.items()))
            return 1
    master = os.environ.get("GSQLC_BENCH_MASTER", "local[2]")
    what = ("packets per (srcIP, destIP) per minute with the source's site, sites 0-11"
            if a.source in SPARK_ROWS else "packets per (srcIP, destIP) per minute")
    how = (f"{n_rounds} rounds in one session, order rotated, digest checked every run"
           if n_rounds else f"result written to Spark's noop sink; best of {a.repeat}")
    pairs = f"Zipf (s = {a.zipf:g}) over {a.groups:,}" if a.zipf else f"{a.groups:,}"
    lines = [f"# Spark benchmark ({a.rows:,} rows, {pairs} (srcIP, destIP) pairs, "
             f"{a.source}, {master})", "", f"Query: {what}; {how}.", ""]
    lines += table_rounds(res) if n_rounds else table_best(res)
    if a.out:
        Path(a.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
