"""What Spark itself costs a plan of gsqlc's shape, whatever the query: the
time of an action over stages that do nothing, in the same SparkSession.

  python        spark.range(2, 2 partitions).mapInArrow(identity): one
                Python stage, as an LFTA stage over read units
  python x2     the same, repartitioned and mapInArrow'd again: an LFTA
                stage and an HFTA stage after a shuffle
  jvm, jvm x2   the same shapes without Python (a range; a range
                repartitioned and projected)

Each action writes to Spark's noop sink; best and median of --repeat runs
after one warm-up.  gsqlc's time in bench/spark_bench.py is this floor plus
its work: on the Intel Xeon VM of 2026-11-29 the floor was 0.2 s a Python
stage against 0.05-0.1 s a JVM one.  GSQLC_BENCH_MASTER as in
spark_bench.py.

    python bench/spark_floor.py [--repeat 9]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time


def identity(batches):
    yield from batches


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=9)
    a = ap.parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F
    master = os.environ.get("GSQLC_BENCH_MASTER", "local[2]")
    spark = (SparkSession.builder.master(master).appName("gsqlc-spark-floor")
             .config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "8").getOrCreate())
    units = spark.range(2, numPartitions=2)
    python = units.mapInArrow(identity, units.schema)
    plans = {
        "python": python,
        "python x2": python.repartition("id").mapInArrow(identity, units.schema),
        "jvm": units,
        "jvm x2": units.repartition("id").select((F.col("id") + 1).alias("id")),
    }
    print(f"{master}, best / median of {a.repeat} (s)")
    for name, df in plans.items():
        df.write.format("noop").mode("overwrite").save()     # warm-up
        times = []
        for _ in range(a.repeat):
            t = time.perf_counter()
            df.write.format("noop").mode("overwrite").save()
            times.append(time.perf_counter() - t)
        print(f"{name:10} {min(times):.3f} / {statistics.median(times):.3f}", flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
