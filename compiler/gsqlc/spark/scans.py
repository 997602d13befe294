"""Which source DataFrames are scans of files that run_query's LFTA tasks
can read themselves with pyarrow (direct_scan), so that no record travels
from the JVM to Python."""
from __future__ import annotations

import re
from typing import Any, Optional
from urllib.parse import urlparse

from . import storage
from .readers import DirectFiles, locations
from .types import arrow_schema_of

_ATTR = re.compile(r"^[^\s,#()\[\]]+#\d+L?$")
# the S3A connector's settings a direct read takes from Spark's Hadoop configuration
_S3A_KEYS = ("fs.s3a.endpoint", "fs.s3a.access.key", "fs.s3a.secret.key",
             "fs.s3a.session.token", "fs.s3a.connection.ssl.enabled",
             "fs.s3a.path.style.access", "fs.s3a.endpoint.region")


def _hadoop_s3a(spark: Any) -> Optional[Any]:
    """A pyarrow S3 filesystem set as Spark's Hadoop S3A connector is, or None."""
    try:
        conf = spark._jsc.hadoopConfiguration()
        return storage.s3_from_hadoop({k: conf.get(k) for k in _S3A_KEYS if conf.get(k)})
    except Exception:  # noqa: BLE001 - no JVM conf to read: pyarrow's defaults
        return None


def direct_scan(df: Any) -> Optional[DirectFiles]:
    """The files of a DataFrame that is a scan of them, or None:
    read_csv(...), read_parquet(...), or spark.read.parquet(...) with
    .select of plain columns, or with projections and filters pyarrow
    computes as Spark does (catalyst.computed_scan), on any filesystem
    pyarrow opens (local, s3a:// as Spark's S3A settings say, gs://,
    hdfs://).  Such a source is read by the LFTA tasks themselves with
    pyarrow: Spark schedules the tasks, but the records do not travel from
    the JVM to Python (what mapInArrow over rows costs is most of a simple
    query's time)."""
    own = getattr(df, "_gsqlc_direct", None)
    if own is not None:
        return own   # type: ignore[no-any-return]
    plan = None
    if plain_scan_format(df) != "parquet":
        from .catalyst import parquet_plan
        plan = parquet_plan(df)
        if plan is None:
            return None
    try:
        uris = sorted(df.inputFiles())   # Spark's set of them: in path order
        s3a = _hadoop_s3a(df.sparkSession) if urlparse(uris[0]).scheme == "s3a" else None
        fs, paths = locations(uris, s3a, "parquet")
        files = storage.list_files(fs, paths)
        file_schema = storage.parquet_schema(fs, files[0][0])
    except Exception:  # noqa: BLE001 - pyarrow cannot open them: Spark reads them (row path)
        return None
    if plan is None:
        if not set(df.columns) <= set(file_schema.names):   # e.g. partition columns of a directory
            return None
        return DirectFiles(fs, files)
    from .catalyst import computed_scan, holds
    computed = computed_scan(plan, file_schema)
    # the expressions' types over the file's columns must be Spark's (or
    # narrower integers holding the same values)
    if computed is None or not holds(computed.schema, arrow_schema_of(df.schema)):
        return None
    return DirectFiles(fs, files, computed=computed)


def plain_scan_format(df: Any) -> Optional[str]:
    """The format ("parquet", "csv", ...) of a batch DataFrame that is
    nothing but Spark's scan of files, optionally with .select of plain
    columns; None for any other DataFrame."""
    if df.isStreaming:
        return None
    try:
        lines = df._jdf.queryExecution().optimizedPlan().toString().strip().splitlines()
    except Exception:  # noqa: BLE001 - not a plain JVM DataFrame
        return None
    leaf = lines[-1].lstrip("+- ").rstrip()
    if not leaf.startswith("Relation [") or "] " not in leaf:
        return None
    if len(lines) == 2:
        head = lines[0]
        if not (head.startswith("Project [") and head.endswith("]")):
            return None
        if not all(_ATTR.match(x.strip()) for x in head[len("Project ["):-1].split(",")):
            return None
    elif len(lines) != 1:
        return None
    return str(leaf.rsplit("] ", 1)[1])
