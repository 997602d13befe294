"""Compiled GSQL inside PySpark: the C/C++ code does the per-record work,
Spark spreads it over the cluster.

    from gsqlc.spark import run_query
    out = run_query(spark, ["q.gsql"], schema="schema.txt",
                    sources={"csv": df}, output="per_src")     # -> DataFrame

How a plan becomes Spark work (compiled once on the driver; the library's
bytes travel with the tasks and are loaded on each executor with cffi):

  * every LFTA runs per partition of its source DataFrame in mapInArrow, so
    the bulk of the records is filtered and pre-aggregated where it lies;
  * an aggregation over an LFTA whose tasks read Parquet files completes in
    those tasks, each owning the epochs that lie mostly in its unit
    (owned_epochs.py; the files in time order up to the disorder, checked);
  * any other HFTA aggregation, and a join, runs after a shuffle of its inputs on the
    group or join keys plus the temporal key (hash partitioning), with each
    partition ordered on the temporal column, so every group or join key is
    complete in one task whatever the source partitioning was;
  * a selection HFTA runs where its input is; a merge (and an interface
    set's merge) is a union, ordered by the consumer's sort.
On a streaming DataFrame the same plan runs per micro-batch; aggregations
over a stream are completed by Spark's own stateful aggregation with a
watermark on the temporal key (streaming.py).

The modules: run.py (run_query), planner.py (the run's preparation and the
stages of a plan), stages.py (what each stage's tasks run), task.py (the
library on the executors, partials packed for the shuffle), streaming.py
(watermarks and Spark state for streaming DataFrames), readers.py
(read_pcap, read_parquet, read_csv, read_stream), files_source.py (the
streaming source of read_stream), scans.py (sources the tasks read
themselves), catalyst.py (Spark's projections and filters in pyarrow),
storage.py (files on any pyarrow filesystem), csv_times.py (times written
as text in CSV columns, read_csv's), owned_epochs.py (the epochs
each task of a one-stage aggregation owns), types.py (Spark and Arrow
types).  Importing gsqlc.spark loads neither pyspark nor pyarrow.
"""
from __future__ import annotations

from ..errors import SparkQueryError
from .readers import (
    CsvFormat,
    DirectFiles,
    MalformedRows,
    read_csv,
    read_parquet,
    read_pcap,
    read_stream,
)
from .run import run_query
from .scans import direct_scan
from .task import PACKED_SCHEMA, packable_type
from .types import END_COL, EPOCH_COL, HEARTBEAT_COL, spark_schema, spark_type

__all__ = ["run_query", "read_csv", "read_parquet", "read_pcap", "read_stream", "MalformedRows",
           "SparkQueryError", "direct_scan", "DirectFiles", "CsvFormat", "spark_type",
           "spark_schema", "packable_type", "PACKED_SCHEMA", "END_COL", "EPOCH_COL",
           "HEARTBEAT_COL"]
