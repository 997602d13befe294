"""gsqlc inside a PySpark pipeline, on the bundled example data.

    python examples/spark/run_example.py

1. CSV rows read by Spark, per-store sales per minute computed by the
   compiled GSQL query examples/csv/per_minute.gsql (LFTAs per partition,
   HFTA after a shuffle on the group keys), next to Spark SQL's answer.
2. A packet capture decoded by the runtime's own packet reader into a
   DataFrame (gsqlc.spark.read_pcap; gsqlc.read_pcap gives a pyarrow Table)
   and the flow query flows_from_pcap.gsql run over it.
"""
import os
import sys
from pathlib import Path

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

from pyspark.sql import SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

import gsqlc  # noqa: E402
from gsqlc.spark import read_pcap, run_query  # noqa: E402

HERE = Path(__file__).resolve().parent
EX = HERE.parent


def main() -> int:
    spark = (SparkSession.builder.master("local[2]").appName("gsqlc-example")
             .config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "4").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")

    sales = spark.read.csv(str(EX / "csv" / "sales.csv"),
                           schema="ts long, store string, item string, qty long, "
                                  "price double, client string").repartition(3)
    per_minute = run_query(spark, [str(EX / "csv" / "per_minute.gsql")],
                           schema=str(EX / "csv" / "schema.txt"), sources={"sales": sales})
    print("per_minute (gsqlc in Spark):")
    per_minute.orderBy("minute", "store").show(truncate=False)
    sql = (sales.groupBy((F.floor(F.col("ts") / 60) * 60).alias("minute"), "store")
           .agg(F.count(F.lit(1)).alias("sales"), F.sum("qty").alias("units")))
    same = per_minute.select("minute", "store", "sales", "units").exceptAll(sql).count() == 0
    print("equal to Spark SQL on minute/store/sales/units:", same)

    pdf = read_pcap(spark, [EX / "trace.pcap"])
    print(f"read_pcap: {pdf.count()} packets, {len(pdf.columns)} columns")
    flows = run_query(spark, [str(HERE / "flows_from_pcap.gsql")],
                      schema=gsqlc.PACKET_TABLE_SCHEMA, sources={"pkts": pdf})
    print("flows_from_pcap (top 10 by bytes):")
    flows.orderBy(F.desc("bytes")).show(10, truncate=False)
    spark.stop()
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
