"""What the stages' tasks need on an executor: the query-set library
(shipped by the driver through Spark's file distribution, loaded on the
executor), the one run of it a task makes, and the packing of partials for
the shuffle."""
from __future__ import annotations

import hashlib
import os
from typing import Any, Iterable, Iterator

# A failure that is the same on every attempt says so: Spark re-runs a failed
# task (spark.task.maxFailures, 4 on a cluster, 1 in local mode) before it fails
# the job, and a user watching the retries should know they cannot help.
NO_RETRY_HELPS = ("(this fails the same way on every attempt: Spark retries a failed task "
                  "spark.task.maxFailures times -- 4 by default on a cluster -- before it "
                  "fails the job)")


# ------------------------------------------------------------ the library


def library_name(digest: str) -> str:
    """The name the query-set library of this digest is distributed under."""
    return f"gsqlc-{digest}.so"


def ship_library(sc: Any, library: Any) -> str:
    """On the driver: register the query-set library with Spark's file
    distribution (once per SparkContext and content): each executor fetches
    it once into its SparkFiles directory, which Spark removes when the
    application ends.  Returns the library's digest."""
    from pathlib import Path
    library = Path(library)
    data = library.read_bytes()
    digest = hashlib.sha256(data).hexdigest()[:24]
    named = library.parent / library_name(digest)   # beside it in gsqlc's build cache
    if not named.exists() or named.stat().st_size != len(data):
        tmp = named.with_name(f"{named.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, named)
    if not any(f.rstrip("/").endswith("/" + named.name) for f in sc.listFiles):
        sc.addFile(str(named))
    return digest


def load_on_executor(digest: str) -> tuple[str, Any]:
    """The library Spark distributed (ship_library), loaded: (path, lib)."""
    import platform
    from pathlib import Path

    from pyspark import SparkFiles

    from ..errors import RunError
    from ..runtime.runner import load_library
    path: str = SparkFiles.get(library_name(digest))
    if not os.path.exists(path):
        raise RuntimeError(
            f"gsqlc: the compiled query library {library_name(digest)} is not in this "
            f"executor's SparkFiles directory on {platform.node()}: run_query registers it "
            "with SparkContext.addFile; was the DataFrame made by another SparkContext? "
            + NO_RETRY_HELPS)
    try:
        return path, load_library(Path(path))
    except RunError as e:
        raise RuntimeError(
            f"gsqlc: the compiled query library cannot be loaded on executor "
            f"{platform.node()}: {e}. The executors need the driver's platform "
            f"({platform.machine()}, glibc, libstdc++) and libpcap (apt-get install "
            f"libpcap0.8). " + NO_RETRY_HELPS) from None


# ------------------------------------------------------------ the run


def new_run(path: str, readers: dict[str, Any], streams: dict[str, Any], output: str,
            options: dict[str, str], params: dict[str, str], strings: str) -> Any:
    """The one run of the library a task makes: its Arrow inputs (interface
    readers, stream readers) in, the batches of the one `output` stream out,
    IP values as integers (Spark's frames carry them so between stages)."""
    from pathlib import Path

    from ..runtime.run import ArrowOutput, Run, RunInputs
    return Run(Path(path), RunInputs(readers=readers, streams=streams, options=options, params=params),
               ArrowOutput([output], strings, ip_format="int"))


def rows_rejected(run: Any) -> int:
    """The rows the run's sources and injected streams rejected as malformed."""
    return sum(int(x.get("rows_rejected", 0))
               for x in run.stats.get("sources", []) + run.stats.get("injected", []))


# ------------------------------------------------------------ packed partials

# Partials an LFTA task sends an aggregation, packed: the task's output rows
# hashed on the aggregation's key columns into buckets, each bucket's rows one
# Arrow IPC stream in a binary cell, so the shuffle moves a row per bucket and
# the HFTA task unpacks Arrow columns -- not hundreds of thousands of rows
# converted to Spark's rows and back (0.30-0.38 s against 0.20-0.24 s for two
# tasks' 350,000 partials, measured on Spark local[2]).
PACKED_SCHEMA = "bucket int, partials binary"
PACK_ROWS = 1 << 20   # rows a task packs at once (its memory while packing)


def packable_type(t: Any) -> bool:
    """Whether a key column of this Arrow type is hashed by pack_partials."""
    import pyarrow as pa
    return bool(pa.types.is_integer(t) or pa.types.is_boolean(t) or pa.types.is_floating(t))


def buckets_of(table: Any, cols: list[str], buckets: int) -> Any:
    """Each row's bucket (int32), a hash of its values in `cols` (integer,
    boolean or floating columns; a null hashes as 0, -0.0 as 0.0): rows
    equal on `cols` share a bucket, in every task."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    h = np.zeros(table.num_rows, dtype=np.uint64)
    for c in cols:
        col = table.column(c)
        if pa.types.is_floating(col.type):
            # + 0.0: -0.0 becomes 0.0, which it equals (one group, one bucket)
            v = pc.add(pc.fill_null(col.cast(pa.float64()), 0.0), 0.0).to_numpy().view(np.uint64)
        else:
            v = pc.fill_null(col.cast(pa.int64()), 0).to_numpy().view(np.uint64)
        h = (h ^ v) * np.uint64(0x9E3779B97F4A7C15)
        h ^= h >> np.uint64(29)
    return (h % np.uint64(buckets)).astype(np.int32)


def pack_partials(batches: Iterable[Any], schema: Any, cols: list[str],
                  buckets: int) -> Iterator[Any]:
    """(bucket, Arrow IPC stream of its rows) record batches of the rows of
    `batches`, PACK_ROWS at a time."""
    import numpy as np
    import pyarrow as pa
    pending: list[Any] = []
    n = 0

    def packed() -> Any:
        table = pa.Table.from_batches(pending, schema=schema)
        b = buckets_of(table, cols, buckets)
        order = np.argsort(b, kind="stable")
        table, b = table.take(pa.array(order)), b[order]
        starts = np.flatnonzero(np.r_[True, b[1:] != b[:-1]])
        ends = np.r_[starts[1:], len(b)]
        ids, blobs = [], []
        for s, e in zip(starts, ends):
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, schema) as w:
                w.write_table(table.slice(int(s), int(e - s)))
            ids.append(int(b[s]))
            blobs.append(sink.getvalue().to_pybytes())
        return pa.RecordBatch.from_arrays([pa.array(ids, pa.int32()), pa.array(blobs, pa.binary())],
                                          names=["bucket", "partials"])
    for batch in batches:
        if batch.num_rows:
            pending.append(batch)
            n += batch.num_rows
        if n >= PACK_ROWS:
            yield packed()
            pending, n = [], 0
    if n:
        yield packed()


def unpack_partials(batches: Iterable[Any]) -> Any:
    """The rows packed in (bucket, partials) record batches, one table."""
    import pyarrow as pa
    tables = [pa.ipc.open_stream(blob).read_all()
              for b in batches for blob in b.column(1).to_pylist()]
    return pa.concat_tables(tables)
