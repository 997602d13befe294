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
watermark on the temporal key (see _streaming_aggregate).

Declared time bounds (seed 002, Srivastava & Widom; runtime/interfaces.py)
become per-source watermarks.  They come as for CompiledQuerySet.run: the
interfaces file (compile's interfaces=, or run_query's) and the keywords
out_of_order=, latency=, skew=, heartbeat_timeout=.

    out = run_query(spark, ["j.gsql"], schema="schema.txt", output="j",
                    sources={"eth0": s0, "eth1": s1},    # streaming DataFrames
                    out_of_order={"eth1": 25})           # B_11 = 25 s
    # GROUP BY time/10 (w = 10), the plan's M = 3 epochs: eth0's partials are
    # watermarked 3 epochs behind their latest, eth1's ceil(25/10) + 1 = 4

  * out_of_order.  Every LFTA reads one source (an interface, or one member
    of a set); the temporal column of its output, as seconds plus one (EPOCH_COL),
    is that source's event time, under its own withWatermark(EPOCH_COL,
    delay) with delay = max(M, ceil(B / w) + 1) units of the column: B the
    interface's out_of_order, counted in units of its time field (a
    DataFrame column has no other unit; EPOCH_COL reads them as seconds), w
    the epoch width (the column is `field / w`, else w = 1:
    planner.plan.epochs_spanning) and M what the plan needs -- the disorder
    of the aggregation over the source, of those reading a merge, of those
    feeding a join.  A source's watermark is the latest event time it
    showed in earlier micro-batches less the delay; Spark counts for sure
    a row less than the delay behind that latest time and may drop a later
    one (numRowsDroppedByWatermark).  A record up to B behind its
    interface's latest makes a partial at most ceil(B / w) epochs behind,
    less than the delay: none is lost.  (The runtime's option
    out_of_order:NAME is not passed to the LFTAs: their heartbeats only
    move the watermark, which the data rows move as far.)
  * Skew bounds B_ab.  Spark event time has no per-pair bound; its query
    watermark is the MIN of the sources' (spark.sql.streaming.
    multipleWatermarkPolicy = min, the default: run_query sets it and
    refuses max, which would drop the lagging source's rows), so a source
    behind the others holds every epoch open until it moved past it, and
    nothing it sends within its own bound is dropped.  What is lost: with
    B_ab gsqlc's heartbeat generator may advance b from a's timestamps (less
    delta_ab, t_ab after) while b is silent; Spark waits for b's own data.
  * latency, arrival, max_skew and [heartbeats] timeout are wall-clock
    notions an event-time watermark cannot take: ignored with one warning
    (a silent source delays results, it drops none).  The estimators
    ([heartbeats] estimate other than "given", horizon, window, alpha) are
    refused: they learn bounds from the arrival of each record in gsqlc's
    input manager, which a Spark micro-batch does not expose; declare the
    bounds instead.
"""
from __future__ import annotations

import hashlib
import os
import re
import sys
import warnings
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence
from urllib.parse import urlparse

from . import storage
from .api import CompiledQuerySet
from .errors import SparkQueryError, UsageError
from .planner.nodes import HftaAggregate, HftaFilterJoin, HftaJoin, HftaMerge, HftaSelect, LftaNode
from .planner.plan import epochs_spanning
from .runtime.arrow_types import check_ip_format, field_column
from .runtime.bindings import check_params, interfaces_of, outputs_of, run_options, set_members
from .runtime.interfaces import DEFAULT_IFACE, Interfaces
from .semantics.bound import FieldRef, GroupRef
from .semantics.types import Temporal, Type

END_COL = "__gsqlc_end"         # true on the one row that ends a finite stream (read_stream)
HEARTBEAT_COL = "__heartbeat"   # the runtime's flag column (option arrow_heartbeats)
EPOCH_COL = "__epoch"           # streaming: the watermarked event time (an epoch, as seconds)
WATERMARK_POLICY = "spark.sql.streaming.multipleWatermarkPolicy"


MAX_REPORTS = 10   # partitions' malformed-row reports the driver keeps


class MalformedRows:
    """What the tasks of a run_query result rejected as malformed, gathered
    on the driver through Spark accumulators as its jobs run (the result
    DataFrame's .gsqlc): rows_rejected, and the runtime's report of the
    first MAX_REPORTS pieces (partitions, CSV file ranges) that rejected any.
    Each piece's count is kept under its (SQL action, piece) key, so a task
    that Spark runs again -- a retry, or a stage run again after an executor
    was lost -- replaces its count rather than adding to it; a second action
    over the same DataFrame counts its rows again."""

    def __init__(self, sc):
        from pyspark.accumulators import AccumulatorParam

        class _ByPiece(AccumulatorParam):
            def zero(self, value):
                return {}

            def addInPlace(self, a, b):
                a.update(b)
                return a
        self._pieces = sc.accumulator({}, _ByPiece())

    @property
    def rows_rejected(self) -> int:
        """The rows rejected by every piece so far (0 before the result's
        jobs ran)."""
        return sum(rows for rows, _ in self._pieces.value.values())

    @property
    def report(self) -> str:
        """The runtime's report of the first MAX_REPORTS pieces that
        rejected rows (each names what it rejected and why)."""
        kept = [self._pieces.value[k] for k in sorted(self._pieces.value)][:MAX_REPORTS]
        return "".join(report for _, report in kept)

    def _add(self, rows: int, report: str, piece: Any = None) -> None:
        """On an executor: one piece's count and report.  piece names it
        within its stage (default: the task's partition)."""
        from pyspark import TaskContext
        tc = TaskContext.get()
        # the SQL action the task serves: the same for every stage and job it
        # runs (adaptive execution runs a lost map output again in a new
        # stage), another for the next action or streaming micro-batch
        action = None
        if tc is not None:
            action = tc.getLocalProperty("spark.sql.execution.id") or f"stage-{tc.stageId()}"
        if piece is None:
            piece = f"{tc.partitionId() if tc is not None else 0:09d}"
        self._pieces.add({(str(action), piece): (rows, report)})


# ------------------------------------------------------------ types


def spark_type(t: Type, strings: str = "str", ip_format: str = "int"):
    """The Spark type of a GSQL type: between stages (ip_format 'int') IP
    values travel as LongType and IPV6 as BinaryType; as text, StringType."""
    from pyspark.sql import types as T
    if ip_format == "text" and t in (Type.IP, Type.IPV6):
        return T.StringType()
    return {
        Type.BOOL: T.BooleanType(), Type.USHORT: T.IntegerType(), Type.UINT: T.LongType(),
        Type.INT: T.IntegerType(), Type.ULLONG: T.LongType(), Type.LLONG: T.LongType(),
        Type.FLOAT: T.DoubleType(), Type.IP: T.LongType(), Type.IPV6: T.BinaryType(),
        Type.STRING: T.StringType() if strings == "str" else T.BinaryType(),
    }[t]


def spark_schema(stream, strings: str = "str"):
    from pyspark.sql import types as T
    return T.StructType([T.StructField(c.name, spark_type(c.type, strings), False)
                         for c in stream.columns])


def _arrow_schema_of(spark_struct):
    """The Arrow schema Spark hands to mapInArrow for a DataFrame schema."""
    from pyspark.sql.pandas.types import to_arrow_schema
    return to_arrow_schema(spark_struct)


def _to_spark_arrow(batch, target):
    """A runtime output batch cast to the Arrow types Spark declared
    (unsigned integers widen to signed; a ullong beyond 2^63 fails the task
    with pyarrow's overflow message rather than wrapping)."""
    import pyarrow as pa
    cols = []
    for f, col in zip(target, batch.columns):
        if col.type != f.type:
            col = col.cast(f.type, safe=True)
        cols.append(col)
    return pa.RecordBatch.from_arrays(cols, schema=target)


# Partials an LFTA task sends an aggregation, packed: the task's output rows
# hashed on the aggregation's key columns into buckets, each bucket's rows one
# Arrow IPC stream in a binary cell, so the shuffle moves a row per bucket and
# the HFTA task unpacks Arrow columns -- not hundreds of thousands of rows
# converted to Spark's rows and back (0.30-0.38 s against 0.20-0.24 s for two
# tasks' 350,000 partials, measured on Spark local[2]).
PACKED_SCHEMA = "bucket int, partials binary"
PACK_ROWS = 1 << 20   # rows a task packs at once (its memory while packing)


def packable_type(t) -> bool:
    """Whether a key column of this Arrow type is hashed by _pack_partials."""
    import pyarrow as pa
    return pa.types.is_integer(t) or pa.types.is_boolean(t) or pa.types.is_floating(t)


def _buckets(table, cols: list[str], buckets: int):
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


def _pack_partials(batches, schema, cols: list[str], buckets: int):
    """(bucket, Arrow IPC stream of its rows) record batches of the rows of
    `batches`, PACK_ROWS at a time."""
    import numpy as np
    import pyarrow as pa
    pending: list = []
    n = 0

    def packed():
        table = pa.Table.from_batches(pending, schema=schema)
        b = _buckets(table, cols, buckets)
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


def _unpack_partials(batches):
    """The rows packed in (bucket, partials) record batches, one table."""
    import pyarrow as pa
    tables = [pa.ipc.open_stream(blob).read_all()
              for b in batches for blob in b.column(1).to_pylist()]
    return pa.concat_tables(tables)


# ------------------------------------------------------------ executor side


# A failure that is the same on every attempt says so: Spark re-runs a failed
# task (spark.task.maxFailures, 4 on a cluster, 1 in local mode) before it fails
# the job, and a user watching the retries should know they cannot help.
NO_RETRY_HELPS = ("(this fails the same way on every attempt: Spark retries a failed task "
                  "spark.task.maxFailures times -- 4 by default on a cluster -- before it "
                  "fails the job)")


def _library_name(digest: str) -> str:
    """The name the query-set library of this digest is distributed under."""
    return f"gsqlc-{digest}.so"


def _ship_library(sc, library) -> str:
    """Register the query-set library with Spark's file distribution (once
    per SparkContext and content): each executor fetches it once into its
    SparkFiles directory, which Spark removes when the application ends.
    Returns the library's digest."""
    from pathlib import Path
    library = Path(library)
    data = library.read_bytes()
    digest = hashlib.sha256(data).hexdigest()[:24]
    named = library.parent / _library_name(digest)   # beside it in gsqlc's build cache
    if not named.exists() or named.stat().st_size != len(data):
        tmp = named.with_name(f"{named.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, named)
    if not any(f.rstrip("/").endswith("/" + named.name) for f in sc.listFiles):
        sc.addFile(str(named))
    return digest


def _load_on_executor(digest: str):
    """The library Spark distributed (_ship_library), loaded: (path, lib)."""
    import platform

    from pyspark import SparkFiles

    from .runtime.runner import RunError, load_library
    path = SparkFiles.get(_library_name(digest))
    if not os.path.exists(path):
        raise RuntimeError(
            f"gsqlc: the compiled query library {_library_name(digest)} is not in this "
            f"executor's SparkFiles directory on {platform.node()}: run_query registers it "
            "with SparkContext.addFile; was the DataFrame made by another SparkContext? "
            + NO_RETRY_HELPS)
    try:
        return path, load_library(path)
    except RunError as e:
        raise RuntimeError(
            f"gsqlc: the compiled query library cannot be loaded on executor "
            f"{platform.node()}: {e}. The executors need the driver's platform "
            f"({platform.machine()}, glibc, libstdc++) and libpcap (apt-get install "
            f"libpcap0.8). " + NO_RETRY_HELPS) from None


@dataclass
class _OwnedEpochs:
    """How the tasks of a one-stage aggregation split its epochs: the
    parameters of owned_epochs.OwnedRead."""
    key: Any                      # owned_epochs.EpochKey
    disorder: int                 # epochs a row may come after a later one
    stats_column: Optional[str]   # the file column whose statistics bound the key
    source: str                   # the interface, for messages


@dataclass
class _Stage:
    """What one mapInArrow task runs: the library with `inputs` bound (an
    interface for an LFTA stage, stream names otherwise) and one output
    stream, cast to `out_schema` (Arrow).  The library travels by Spark's
    file distribution (_ship_library), named by its digest."""
    digest: str
    iface: Optional[str]            # LFTA stage: the interface bound to the partition
    streams: list[str]              # HFTA stage: the streams fed from the partition
    tag_col: Optional[str]          # several streams: the column telling rows apart
    stream_cols: list[list[str]]    # HFTA stage: each stream's columns in the partition
    output: str
    out_schema: Any
    options: dict
    params: dict
    sort_cols: Optional[list]       # per stream: order its rows on this column in
                                    # the task (pyarrow's sort; partials are small)
    strings: str = "str"
    parquet_columns: Optional[list[str]] = None  # the partition lists Parquet units:
    parquet_units: Optional[list] = None         # (lists of storage pieces) by the ids it holds
    filesystem: Any = None                       # ... on this pyarrow filesystem
    parquet_computed: Any = None                 # ... computed so (spark_plan.ComputedScan)
    csv: Optional["CsvFormat"] = None            # ... CSV of this format (else Parquet)
    pack_cols: Optional[list[str]] = None   # LFTA stage: output packed by these key columns
    pack_buckets: int = 0                   # ... into this many buckets (_pack_partials)
    packed_input: bool = False              # HFTA stage: the partition holds packed partials
    on_malformed: str = "count"     # 'count': gathered in `malformed`; 'fail'
    malformed: Optional[MalformedRows] = None
    _csv_bad: Optional[storage.MalformedCount] = None   # a task's CSV rows skipped
    end_temporal: Optional[list[str]] = None   # LFTA stage of a finite stream: its
                                               # temporal output columns (END_COL)
    _ended: bool = False                       # ... the end row was in this partition
    owned: Optional["_OwnedEpochs"] = None     # one stage: each task reads the rows of the
                                               # epochs it owns (owned_epochs.py)
    _owned_reads: Optional[list] = None        # ... this task's OwnedReads

    def __call__(self, batches):
        from .api import Run
        from .runtime.runner import RunError
        path, _ = _load_on_executor(self.digest)
        it = iter(batches)
        first = next(it, None)
        if first is None:
            return      # an empty partition: no records, no output
        readers, streams = self._inputs(first, it)
        run = Run(path, [], readers, [], [self.output], self.options, self.params,
                  65536, self.strings, False, streams=streams, ip_format="int")
        try:
            if self.pack_cols:
                yield from _pack_partials((_to_spark_arrow(b, self.out_schema) for b in run),
                                          self.out_schema, self.pack_cols, self.pack_buckets)
            else:
                for batch in run:
                    yield _to_spark_arrow(batch, self.out_schema)
                if self._ended:
                    yield _end_heartbeat(self.out_schema, self.end_temporal)
        except RunError as e:
            # a computed source failing on its values (ANSI overflow, a zero
            # divisor) fails on every attempt, as Spark's own plan would
            computed = (f" (computing its source as Spark does: {self.parquet_computed.text}; "
                        f"{NO_RETRY_HELPS[1:]}" if self.parquet_computed is not None else "")
            raise RuntimeError(f"gsqlc: query stream {self.output}: {e}{computed}") from None
        rejected = sum(x.get("rows_rejected", 0)
                       for x in run.stats.get("sources", []) + run.stats.get("injected", []))
        report = run.report
        if self._csv_bad is not None and self._csv_bad.rows:
            rejected += self._csv_bad.rows
            report = self._csv_bad.report() + "\n" + report
        if self.owned is not None:
            for read in self._owned_reads or []:
                read.reader.close()
                if read.error:
                    raise RuntimeError(
                        f"gsqlc: query {self.output}: {read.error}. Declare the disorder "
                        f"(max_hfta_disorder=, or the interface's out_of_order=) or pass "
                        f"run_query(..., time_ordered=False), which completes the epochs "
                        f"after a shuffle whatever the order {NO_RETRY_HELPS}")
        if rejected and self.on_malformed == "fail":
            raise RuntimeError(f"gsqlc: query stream {self.output}: {rejected} malformed "
                               f"row(s) in this partition (on_malformed='fail') "
                               f"{NO_RETRY_HELPS}:\n{report}")
        if rejected and self.malformed is not None:
            self.malformed._add(rejected, f"gsqlc: query stream {self.output}: {report}")
        if run.report:
            print(f"gsqlc: {self.output}: {run.report}", file=sys.stderr)

    def _inputs(self, first, it) -> tuple[dict, dict]:
        """The task's Arrow inputs: (interface readers, stream readers)."""
        import pyarrow as pa

        def chain():
            yield first
            yield from it
        if self.packed_input:
            return {}, self._streams(_unpack_partials(chain()))
        if self.owned is not None:
            ids = [i for b in chain() for i in b.column(0).to_pylist()]
            return {self.iface: self._owned_reader(ids)}, {}
        if self.parquet_columns is not None:
            pieces = [p for b in chain() for i in b.column(0).to_pylist()
                      for p in self.parquet_units[i]]
            if self.csv is not None:
                self._csv_bad = storage.MalformedCount()
                return {self.iface: self.csv.reader(self.filesystem, pieces, self._csv_bad,
                                                    self.parquet_columns)}, {}
            c = self.parquet_computed
            return {self.iface: storage.read_pieces(
                self.filesystem, pieces, self.parquet_columns,
                **({} if c is None else dict(expressions=c.columns, filter=c.filter,
                                             schema=c.schema)))}, {}
        if self.iface is not None and self.end_temporal is not None:
            return {self.iface: self._without_end(first.schema, chain())}, {}
        if self.iface is not None:
            return {self.iface: pa.RecordBatchReader.from_batches(first.schema, chain())}, {}
        if self.tag_col is None and self.sort_cols is None:
            # one stream, in the order Spark gives: read it as it comes
            return {}, {self.streams[0]: pa.RecordBatchReader.from_batches(first.schema, chain())}
        return {}, self._split(first, it)

    def _owned_reader(self, ids: list[int]):
        """The rows of the epochs units `ids` own (owned_epochs.py), read as
        the LFTA stage reads its units."""
        import pyarrow as pa

        from .owned_epochs import OwnedRead
        o, c = self.owned, self.parquet_computed
        assert o is not None and self.parquet_units is not None and self.parquet_columns
        reader = storage.RowGroupReader(   # one per task: each footer read once
            self.filesystem, self.parquet_columns,
            **({} if c is None else dict(expressions=c.columns, filter=c.filter)))
        self._owned_reads = [OwnedRead(self.parquet_units, o.key, o.disorder, reader,
                                       o.stats_column, o.source) for _ in ids]
        first = next(p for u in self.parquet_units for p in u)[0]
        schema = c.schema if c is not None else \
            storage.parquet_schema(self.filesystem, first, self.parquet_columns)

        def batches():
            for read, i in zip(self._owned_reads, ids):
                yield from read.batches(i)
                if read.error:
                    return
        return pa.RecordBatchReader.from_batches(schema, batches())

    def _without_end(self, schema, batches):
        """The batches of a finite stream without its end row (noted in
        _ended) and without END_COL."""
        import pyarrow as pa
        import pyarrow.compute as pc
        at = schema.get_field_index(END_COL)

        def data():
            for b in batches:
                end = b.column(at)
                if pc.any(end).as_py():
                    self._ended = True
                    b = b.filter(pc.invert(pc.fill_null(end, False)))
                yield b.drop_columns([END_COL])
        return pa.RecordBatchReader.from_batches(schema.remove(at), data())

    def _split(self, first, it):
        import pyarrow as pa
        return self._streams(pa.Table.from_batches([first, *it]))

    def _streams(self, table):
        """The partition's rows as one Arrow stream per input stream (rows of
        a tagged union go to the stream their tag names), each ordered on
        its sort column when given."""
        import pyarrow.compute as pc
        out = {}
        for i, (s, cols) in enumerate(zip(self.streams, self.stream_cols)):
            t = table
            if self.tag_col is not None:
                t = t.filter(pc.equal(t[self.tag_col], i))
            t = t.select(cols[0]).rename_columns(cols[1]) if isinstance(cols, tuple) else t.select(cols)
            col = self.sort_cols[i] if self.sort_cols else None
            if col is not None:
                t = t.sort_by(col)
            out[s] = t.to_reader()
        return out


# The temporal value of the heartbeat that ends a finite stream: past every
# epoch (as seconds, year 36812: within Spark's timestamps)
END_EPOCH = 1 << 40


def _end_heartbeat(schema, temporal: list[str]):
    """The heartbeat row that ends a finite stream (read_stream): its
    temporal columns END_EPOCH, so the watermark passes every epoch."""
    import pyarrow as pa
    cols = []
    for f in schema:
        if f.name == HEARTBEAT_COL:
            v: Any = True
        elif f.name in temporal:
            v = END_EPOCH
        elif pa.types.is_boolean(f.type):
            v = False
        elif pa.types.is_string(f.type):
            v = ""
        elif pa.types.is_binary(f.type):
            v = b""
        else:
            v = 0
        cols.append(pa.array([v], f.type))
    return pa.RecordBatch.from_arrays(cols, schema=schema)


def read_stream(spark, paths, format: str, schema=None, *, finite: bool = False,
                files_per_batch: int = 0, sep: str = ",", header: bool = False,
                filesystem=None, ip_format: str = "text") -> Any:
    """A streaming DataFrame of the files of a directory (paths: as
    read_parquet's), a micro-batch taking the files that appeared since the
    last, in order of modification time (at most files_per_batch of them,
    when given): format "csv" (schema needed; parsed
    as read_csv does, malformed rows counted in the executors' logs),
    "parquet" (schema from the first file) or "pcap" (read_pcap's columns,
    the IP columns in the form ip_format says, as read_pcap's).
    Columns are nullable.  finite=True: the files there when the query starts
    (under Trigger.AvailableNow, at its start) are the whole input: it ends
    with a row flagged __gsqlc_end, which run_query turns into a heartbeat
    past every epoch, so the last epochs of an aggregation come out before
    the query stops (Spark's own file sources leave them in state: its
    watermark moves only with later rows).  The stream is then finished: a
    later run on the same checkpoint finds every epoch closed."""
    from pyspark.sql import types as T

    from .spark_files import FORMATS, GsqlcFiles, pack_location
    if format not in FORMATS:
        raise UsageError(f"read_stream: format must be one of {', '.join(FORMATS)}, "
                         f"got {format!r}")
    fs, ps = _locations(paths, filesystem, "read_stream")
    if format == "csv" and schema is None:
        raise UsageError("read_stream: format 'csv' needs schema= (a StructType or DDL)")
    if isinstance(schema, str):
        schema = T._parse_datatype_string(schema)
    if schema is None and format == "parquet":
        files = storage.list_files(fs, ps, missing_ok=True)
        if not files:
            raise UsageError(f"read_stream: no Parquet file under {', '.join(ps)} to take the "
                             "schema from: give schema=")
        schema = _spark_schema_of_arrow(storage.parquet_schema(fs, files[0][0]))
    elif schema is None:
        schema = _packet_spark_schema(check_ip_format(ip_format))
    fields = [T.StructField(f.name, f.dataType, True) for f in schema.fields]
    if finite:
        fields.append(T.StructField(END_COL, T.BooleanType(), True))
    spark.dataSource.register(GsqlcFiles)
    return (spark.readStream.format(GsqlcFiles.name()).schema(T.StructType(fields))
            .option("location", pack_location(fs, ps)).option("format", format)
            .option("finite", "true" if finite else "false").option("sep", sep)
            .option("files_per_batch", str(int(files_per_batch)))
            .option("header", "true" if header else "false").load())


# ------------------------------------------------------------ captures


def _read_pcap_task(filesystem, paths: list[str], target, ip_format: str):
    def task(batches):
        from .runtime.packets import read_pcap as read_one
        for b in batches:
            for i in b.column(0).to_pylist():
                with storage.local_path(filesystem, paths[i]) as local:
                    for rb in read_one(local, ip_format=ip_format).to_batches():
                        yield _to_spark_arrow(rb, target)
    return task


def _packet_spark_schema(ip_format: str = "text"):
    """The Spark schema of decoded packets (read_pcap's columns, nullable)."""
    from pyspark.sql import types as T

    from .runtime.packets import packet_columns
    return T.StructType([T.StructField(n, spark_type(Type(t), "bytes", ip_format), True)
                         for n, _, t in packet_columns()])


def _as_list(paths) -> list:
    """One path or URI, or several, as a list."""
    return [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)


def _locations(paths, filesystem, what: str) -> tuple[Any, list[str]]:
    """The pyarrow filesystem and the paths in it of one or more local paths
    or URIs (all on one filesystem)."""
    locs = _as_list(paths)
    if not locs:
        raise UsageError(f"{what} needs at least one path or URI")
    fs, out = None, []
    for loc in locs:
        f, p = storage.resolve(loc, filesystem)
        if fs is not None and not f.equals(fs):
            raise UsageError(f"{what}: {os.fspath(loc)} is on another filesystem than "
                             f"{os.fspath(locs[0])}; read each filesystem's files separately")
        fs = f
        out.append(p)
    return fs, out


def _listed(fs, paths: list[str], originals) -> list[tuple[str, int]]:
    """storage.list_files, a missing path reported as the user gave it."""
    try:
        return storage.list_files(fs, paths)
    except FileNotFoundError as e:
        given = dict(zip(paths, _as_list(originals)))
        raise FileNotFoundError(os.fspath(given.get(str(e.args[0]), e.args[0]))) from None


def read_pcap(spark, paths, filesystem=None, *, ip_format: str = "text") -> Any:
    """Packet captures as a DataFrame with the columns of gsqlc.read_pcap
    (the packet schema's fields; NULL where a header is absent).  paths:
    local paths or URIs of any filesystem pyarrow supports (s3://, gs://,
    hdfs://, ...; a directory means its files), or paths in `filesystem`, a
    pyarrow FileSystem (it travels to the tasks, credentials included).
    Each task decodes whole files with the runtime's own packet reader (a
    remote file through a local copy it removes).  Unsigned integers become
    LongType (Spark has no unsigned types), payload strings BinaryType; IP
    and IPV6 StringType in GSQL's text forms, or with ip_format='int'
    LongType and BinaryType.  Query it with PROTOCOL PACKETS of
    gsqlc.PACKET_TABLE_SCHEMA (either form)."""
    check_ip_format(ip_format)
    fs, ps = _locations(paths, filesystem, "read_pcap")
    files = [p for p, _ in _listed(fs, ps, paths)]
    if not files:
        raise UsageError(f"read_pcap: no capture file under {', '.join(ps)}")
    schema = _packet_spark_schema(ip_format)
    target = _arrow_schema_of(schema)
    ids = spark.range(len(files), numPartitions=len(files))
    return ids.mapInArrow(_read_pcap_task(fs, files, target, ip_format), schema)


# ------------------------------------------------------------ Parquet scans

_ATTR = re.compile(r"^[^\s,#()\[\]]+#\d+L?$")
# the S3A connector's settings a direct read takes from Spark's Hadoop configuration
_S3A_KEYS = ("fs.s3a.endpoint", "fs.s3a.access.key", "fs.s3a.secret.key",
             "fs.s3a.session.token", "fs.s3a.connection.ssl.enabled",
             "fs.s3a.path.style.access", "fs.s3a.endpoint.region")


@dataclass
class DirectFiles:
    """Files the LFTA tasks read themselves: their filesystem, (path, size)
    each (storage.list_files), and their CSV format (None: Parquet); for a
    computed Parquet source, what the tasks compute (spark_plan.ComputedScan)."""
    filesystem: Any
    files: list
    csv: Optional["CsvFormat"] = None
    computed: Any = None


def _hadoop_s3a(spark) -> Optional[Any]:
    """A pyarrow S3 filesystem set as Spark's Hadoop S3A connector is, or None."""
    try:
        conf = spark._jsc.hadoopConfiguration()
        return storage.s3_from_hadoop({k: conf.get(k) for k in _S3A_KEYS if conf.get(k)})
    except Exception:  # noqa: BLE001 - no JVM conf to read: pyarrow's defaults
        return None


def direct_scan(df) -> Optional[DirectFiles]:
    """The files of a DataFrame that is a scan of them, or None:
    read_csv(...), read_parquet(...), or spark.read.parquet(...) with
    .select of plain columns, or with projections and filters pyarrow
    computes as Spark does (spark_plan.computed_scan), on any filesystem
    pyarrow opens (local, s3a:// as Spark's S3A settings say, gs://,
    hdfs://).  Such a source is read by the LFTA tasks themselves with
    pyarrow: Spark schedules the tasks, but the records do not travel from
    the JVM to Python (what mapInArrow over rows costs is most of a simple
    query's time)."""
    own = getattr(df, "_gsqlc_direct", None)
    if own is not None:
        return own
    plan = None
    if _plain_scan_format(df) != "parquet":
        from .spark_plan import computed_scan, holds, parquet_plan
        plan = parquet_plan(df)
        if plan is None:
            return None
    try:
        uris = sorted(df.inputFiles())   # Spark's set of them: in path order
        s3a = _hadoop_s3a(df.sparkSession) if urlparse(uris[0]).scheme == "s3a" else None
        fs, paths = _locations(uris, s3a, "parquet")
        files = storage.list_files(fs, paths)
        file_schema = storage.parquet_schema(fs, files[0][0])
    except Exception:  # noqa: BLE001 - pyarrow cannot open them: Spark reads them (row path)
        return None
    if plan is None:
        if not set(df.columns) <= set(file_schema.names):   # e.g. partition columns of a directory
            return None
        return DirectFiles(fs, files)
    computed = computed_scan(plan, file_schema)
    # the expressions' types over the file's columns must be Spark's (or
    # narrower integers holding the same values)
    if computed is None or not holds(computed.schema, _arrow_schema_of(df.schema)):
        return None
    return DirectFiles(fs, files, computed=computed)


def _plain_scan_format(df) -> Optional[str]:
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
    return leaf.rsplit("] ", 1)[1]


def _spark_type_of_arrow(t, column: str):
    """The Spark type a Parquet column of Arrow type t is read as (as
    Spark's own reader: unsigned integers widen; a uint64 beyond 2^63 fails
    the task rather than wrapping)."""
    import pyarrow as pa
    from pyspark.sql import types as T
    from pyspark.sql.pandas.types import from_arrow_type
    if pa.types.is_dictionary(t):
        t = t.value_type
    unsigned = {pa.uint8(): T.ShortType(), pa.uint16(): T.IntegerType(),
                pa.uint32(): T.LongType(), pa.uint64(): T.LongType()}
    if t in unsigned:
        return unsigned[t]
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return T.StringType()
    if pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return T.BinaryType()
    try:
        return from_arrow_type(t)
    except Exception as e:  # noqa: BLE001 - pyspark's own message says which type
        raise UsageError(f"read_parquet: column {column} of type {t} has no Spark type: "
                         f"{e}") from None


def _spark_schema_of_arrow(arrow):
    """The Spark schema a Parquet file of this Arrow schema is read as
    (_spark_type_of_arrow), nullable."""
    from pyspark.sql import types as T
    return T.StructType([T.StructField(f.name, _spark_type_of_arrow(f.type, f.name), True)
                         for f in arrow])


def _read_parquet_task(fs, units: list, target):
    def task(batches):
        for b in batches:
            for i in b.column(0).to_pylist():
                for rb in storage.read_pieces(fs, units[i]):
                    yield _to_spark_arrow(rb, target)
    return task


def read_parquet(spark, paths, filesystem=None) -> Any:
    """Parquet files as a DataFrame, read by Spark tasks with pyarrow.
    paths: local paths or URIs of any filesystem pyarrow supports (s3://,
    gs://, hdfs://, ...; a directory means its files, hidden ones skipped),
    or paths in `filesystem`, a pyarrow FileSystem (it travels to the tasks,
    credentials included).  The driver lists the files and reads one footer
    (the schema); each task opens only its own files.  As a run_query
    source the LFTA tasks read the files directly (no JVM rows); anything
    else reads it as any DataFrame.  Columns take the types Spark's own
    reader gives (unsigned integers widen)."""
    fs, ps = _locations(paths, filesystem, "read_parquet")
    files = _listed(fs, ps, paths)
    if not files:
        raise UsageError(f"read_parquet: no file under {', '.join(ps)}")
    schema = _spark_schema_of_arrow(storage.parquet_schema(fs, files[0][0]))
    units = storage.plan_pieces(files, spark.sparkContext.defaultParallelism)
    ids = spark.range(len(units), numPartitions=len(units))
    df = ids.mapInArrow(_read_parquet_task(fs, units, _arrow_schema_of(schema)), schema)
    df._gsqlc_direct = DirectFiles(fs, files)
    return df


@dataclass
class CsvFormat:
    """How read_csv parses its files: columns `names` of Arrow `types`,
    separated by `sep`, the first line of each file a header or not."""
    names: list
    types: list
    sep: str = ","
    header: bool = False

    def reader(self, fs, pieces, bad, columns=None):
        """A RecordBatchReader of the pieces (columns: a subset, in order)."""
        return storage.read_csv_pieces(fs, pieces, self.names, self.types, self.sep,
                                       self.header, bad, columns)


def _read_csv_task(fs, units: list, fmt: CsvFormat, target, malformed: MalformedRows):
    def task(batches):
        for b in batches:
            for i in b.column(0).to_pylist():
                bad = storage.MalformedCount()
                for rb in fmt.reader(fs, units[i], bad):
                    yield _to_spark_arrow(rb, target)
                if bad.rows:
                    malformed._add(bad.rows, bad.report() + "\n", piece=f"csv-unit-{i:09d}")
    return task


def read_csv(spark, paths, schema, *, sep: str = ",", header: bool = False,
             filesystem=None) -> Any:
    """CSV files as a DataFrame of `schema` (a StructType or a DDL string such
    as "time long, srcIP long"), parsed by Spark tasks with pyarrow.  paths:
    as read_parquet's.  Each file is cut into byte ranges of whole lines
    (fields hold no newline), one task per core; a row with another number
    of fields, or a value its column's type cannot take, is counted and
    skipped (the DataFrame's .gsqlc, a MalformedRows, and a run_query
    result's); an empty field is null.  As a run_query source the LFTA
    tasks parse the files themselves, and no row crosses from the JVM to
    Python (Spark's CSV reader and that transfer cost more than gsqlc's
    whole query)."""
    from pyspark.sql import types as T
    if isinstance(schema, str):
        schema = T._parse_datatype_string(schema)
    if not isinstance(schema, T.StructType) or not schema.fields:
        raise UsageError("read_csv: schema must be a StructType or a DDL string of columns")
    if len(sep) != 1:
        raise UsageError(f"read_csv: sep must be one character, got {sep!r}")
    fs, ps = _locations(paths, filesystem, "read_csv")
    files = _listed(fs, ps, paths)
    if not files:
        raise UsageError(f"read_csv: no file under {', '.join(ps)}")
    target = _arrow_schema_of(schema)
    fmt = CsvFormat(list(target.names), list(target.types), sep, header)
    units = storage.split_csv_pieces(
        storage.plan_pieces(files, spark.sparkContext.defaultParallelism), dict(files))
    malformed = MalformedRows(spark.sparkContext)
    ids = spark.range(len(units), numPartitions=len(units))
    df = ids.mapInArrow(_read_csv_task(fs, units, fmt, target, malformed), schema)
    df._gsqlc_direct = DirectFiles(fs, files, fmt)
    df.gsqlc = malformed
    return df


# ------------------------------------------------------------ driver side


def _spark_plan(plan, ifaces):
    """The plan as Spark runs it, and for each LFTA node of it the LFTA of
    the library it runs (name, interface).  The library runs an LFTA over an
    interface set once per member and merges them itself; in Spark each
    member is a DataFrame of its own, so an LFTA over a set of k >= 2
    members becomes k nodes "<lfta>@<member>" (iface: the member, whose
    DataFrame they read) and a merge node named after the LFTA on its
    temporal column -- a union, or per micro-batch with watermarks when
    streaming.  An LFTA of the default interface reads the DataFrame the
    bindings make the default."""
    import dataclasses

    from .planner.plan import Plan
    from .runtime.plan_summary import summarize
    from .semantics.analyze import MergeInfo, StreamDef
    lftas = {n.name: n for n in summarize(plan).lftas}
    nodes: list = []
    runs: dict[str, tuple[str, str]] = {}   # node name -> (library LFTA, its interface)
    for n in plan.nodes:
        if not isinstance(n, LftaNode):
            nodes.append(n)
            continue
        lib_iface = n.iface or DEFAULT_IFACE
        target, members = set_members(lftas[n.name], ifaces)
        if len(members) < 2:
            nodes.append(dataclasses.replace(n, iface=members[0]))
            runs[n.name] = (n.name, lib_iface)
            continue
        merge_col = n.set_merge_column
        assert merge_col is not None   # set_members refused the set otherwise
        copies = []
        for m in members:
            cname = f"{n.name}@{m}"
            copies.append(dataclasses.replace(n, name=cname, iface=m,
                                              output=StreamDef(cname, n.output.columns)))
            runs[cname] = (n.name, lib_iface)
        nodes += copies
        nodes.append(HftaMerge(name=n.name, query=n.query, output=n.output,
                               inputs=tuple(c.name for c in copies),
                               input_defs=tuple(c.output for c in copies),
                               params=n.params, merge=MergeInfo(merge_col.name, 0.0),
                               note=f"merges the LFTAs of interface set [{target}]"))
    return Plan(nodes, plan.queries), runs


def _dry_run(library, node, arrow_schema, options, params, lib_lfta=None) -> None:
    """Feed the LFTA an empty table of the source's Arrow schema on the
    driver: the runtime checks the columns against the PROTOCOL fields it
    reads (by name and type) exactly as it will on the executors, so a
    mismatch is raised here, before any Spark job starts."""
    from .runtime.runner import run_library
    name, iface = lib_lfta or (node.name, node.iface)
    res = run_library(library, [], [], options, params,
                      arrow_sources={iface: arrow_schema.empty_table().to_reader()},
                      arrow_sinks=[(name, lambda s, b: True)])
    if res.status != 0:
        raise SparkQueryError(f"source {node.iface} of query {node.query.name}: {res.error}")


def _owned_epochs(n, lfta, files: DirectFiles, columns: list[str],
                  out_of_order: Mapping[str, float]) -> Optional[_OwnedEpochs]:
    """How aggregation n over LFTA `lfta`, whose tasks read `files` (as
    `columns`), runs in one stage (owned_epochs.py), or None when it
    cannot: its epoch is not integer arithmetic of one source field, a
    computed source computes that field (not a file column), or the
    interface's declared out_of_order bound needs more epochs than n keeps
    open.  The disorder allowed is n's open epochs (max_hfta_disorder)
    less one: the task's HFTA counts every row that late."""
    import dataclasses

    import pyarrow.compute as pc

    from .owned_epochs import epoch_key
    key = epoch_key(n, lfta)
    if key is None:
        return None
    column = field_column(columns, key.column)
    if column is None:
        return None
    key = dataclasses.replace(key, column=column)
    if out_of_order.get(lfta.iface):
        # a declared bound wider than the epochs the aggregation keeps open
        # would pass rows the task's HFTA then drops as late: shuffle them
        e = next(n.group_by[i][1] for i in n.epoch_indices
                 if n.group_by[i][1].info.temporal is Temporal.INCREASING)
        if not isinstance(e, FieldRef) or \
                _watermark_delay(lfta, e.name, n.disorder, out_of_order) > n.disorder:
            return None
    stats: Optional[str] = key.column
    if files.computed is not None:
        # the key's column must be a file's: without its statistics the
        # tasks would read the neighbours' keys to place the boundaries,
        # which costs what the stage saves (time + 1 at 65,536 pairs: 1.07-
        # 1.25 s one stage, 1.01-1.19 s shuffled)
        expr = dict(files.computed.columns).get(key.column)
        stats = next((f for f in sorted(files.computed.reads)
                      if expr is not None and expr.equals(pc.field(f))), None)
        if stats is None:
            return None
    return _OwnedEpochs(key, max(0, n.disorder - 1), stats, lfta.iface)


def _first_increasing(stream) -> Optional[str]:
    for c in stream.columns:
        if c.temporal is Temporal.INCREASING:
            return c.name
    for c in stream.columns:
        if c.temporal.is_temporal:
            return c.name
    return None


def _merge_info(node):
    """The MergeInfo of a merge node, None for any other node."""
    return node.merge if isinstance(node, HftaMerge) else None


def _plain(e) -> Optional[str]:
    return e.name if isinstance(e, FieldRef) else None


def run_query(spark, files: Sequence[str], schema=None, sources: Optional[Mapping[str, Any]] = None,
              output: Optional[str] = None, *, params: Optional[Mapping[str, Any]] = None,
              library_paths: Sequence[str] = (), strings: str = "str",
              partitions: Optional[int] = None, heartbeat_interval="off",
              direct_files: bool = True, on_malformed: str = "count",
              lfta_table_size: int = 1 << 19, lfta_table_ways: int = 4,
              max_lfta_disorder: Optional[int] = None, max_hfta_disorder: Optional[int] = None,
              compiled: Optional[CompiledQuerySet] = None, interfaces=None,
              out_of_order: Optional[Mapping[str, float]] = None,
              latency: Optional[Mapping[str, float]] = None,
              skew: Optional[Mapping[tuple[str, str], tuple[float, float]]] = None,
              heartbeat_timeout: Optional[float] = None, pack_partials: bool = True,
              ip_format: str = "text", functions: Sequence[str] = (), udf: Sequence[str] = (),
              time_ordered: bool = True):
    """Run GSQL queries over Spark DataFrames; returns the DataFrame of
    `output` (default: the only output query).  sources: {interface:
    DataFrame, or a list of DataFrames for an interface set}.  Columns are
    matched to the PROTOCOL's fields by name and type; a mismatch raises
    SparkQueryError before any job starts.  partitions: the shuffle's
    partition count (default: as Spark's own aggregations, from
    spark.sql.shuffle.partitions, coalesced by adaptive execution).
    compiled: a CompiledQuerySet to run (else files are compiled here, with
    library_paths, interfaces and the table and disorder options).
    lfta_table_size, lfta_table_ways: the LFTA aggregation tables (a task
    pre-aggregates a whole partition: 2^19 slots, 4-way by default).
    direct_files: LFTA tasks read Parquet and read_csv sources' files
    themselves instead of rows from the JVM (False: always rows), also
    through Spark's projections and filters of a Parquet scan where
    pyarrow computes them as Spark does (gsqlc.spark_plan).
    heartbeat_interval: as in CompiledQuerySet.run (default off: a batch
    job needs none; streaming queries end each micro-batch with one).
    on_malformed: rows the runtime rejects (values out of range, bad
    addresses) are counted -- the result's .gsqlc (MalformedRows) holds the
    count and the first partitions' reports once its jobs ran -- or, with
    'fail', fail the job.  max_lfta_disorder, max_hfta_disorder: as in
    gsqlc.compile; over streaming DataFrames an aggregation's disorder K is
    its watermark delay, K epochs: an epoch closes once the watermark passes
    it plus the bound, so rows up to K-1 epochs late -- in a later
    micro-batch -- still count.  interfaces (an interfaces file, else
    compiled's), out_of_order, latency, skew, heartbeat_timeout: declared
    time bounds, as in CompiledQuerySet.run; over streaming DataFrames an
    interface's out_of_order lengthens its own watermark delay (module
    docstring).  pack_partials: the partials an LFTA task sends an
    aggregation over integer, boolean or floating keys travel through the
    shuffle packed, as Arrow IPC streams of a bucket of keys each (False:
    as Spark rows, one per partial).  ip_format: 'text' (default) gives IP
    and IPV6 columns as StringType in GSQL's text forms, as the CLI and
    CompiledQuerySet.run print them; 'int' gives IP as LongType and IPV6 as
    BinaryType (16 bytes, network order).  Between the stages they travel
    as integers and bytes either way.  functions, udf: the user's
    function-definition files and sources (as in gsqlc.compile): built into
    the library Spark distributes, they run on every executor.
    time_ordered: an aggregation over an LFTA whose tasks read Parquet files
    themselves completes in those tasks, one stage with no shuffle
    (owned_epochs.py), which needs the files -- in path order, or as listed
    -- in order of its increasing time field up to its disorder; a source
    out of order beyond that fails the job saying where.  False: partials
    are shuffled to the HFTA, right whatever the order."""
    from pyspark.sql import functions as F

    from . import api
    if strings not in ("str", "bytes"):
        raise UsageError(f"strings must be 'str' or 'bytes', got {strings!r}")
    check_ip_format(ip_format)
    if on_malformed not in ("count", "fail"):
        raise UsageError(f"on_malformed must be 'count' or 'fail', got {on_malformed!r}")
    bounds = api.time_bounds(out_of_order, latency, skew, heartbeat_timeout)
    sources = dict(sources or {})
    placeholder = {}
    for name, v in sources.items():
        vals = v if isinstance(v, list) else [v]
        for df in vals:
            if not hasattr(df, "mapInArrow"):
                raise SparkQueryError(f"source {name}: expected a pyspark DataFrame, got "
                                      f"{type(df).__name__}")
        placeholder[name] = [object() for _ in vals] if isinstance(v, list) else object()
    # A Spark task pre-aggregates a whole partition (millions of records):
    # a larger, 4-way table ejects far fewer partials into the shuffle (on
    # 65,536 groups a minute: 2^20 slots direct-mapped eject 2.2 partials per
    # group and epoch, 2^19 slots 4-way 1.01) and, denser, misses the cache
    # less.
    cqs = compiled or api.compile(files, schema, library_paths=library_paths,
                                  interfaces=interfaces, lfta_table_size=lfta_table_size,
                                  lfta_table_ways=lfta_table_ways,
                                  max_lfta_disorder=max_lfta_disorder,
                                  max_hfta_disorder=max_hfta_disorder,
                                  functions=functions, udf=udf)
    ifaces, _ = interfaces_of(placeholder, {}, os.fspath(interfaces) if interfaces
                              else cqs.interfaces_file, bounds)
    api.check_bound_interfaces(ifaces, bounds)
    _check_time_bounds(ifaces)
    b = cqs.compiled
    qs = b.queryset
    params = {k: str(v) for k, v in (params or {}).items()}
    check_params(qs.summary, params)
    if output is None:
        leaves = qs.leaves()
        if len(leaves) != 1:
            raise UsageError(f"the query set has {len(leaves)} output queries "
                             f"({', '.join(leaves)}): name one with output=")
        output = leaves[0]
    else:
        outputs_of(qs.summary, [output])
    options = run_options(clock="data", heartbeat_interval=heartbeat_interval)
    digest = _ship_library(spark.sparkContext, b.library)
    member_df = {}
    for name, v in sources.items():
        vals = v if isinstance(v, list) else [v]
        members = ifaces.members(name or ifaces.default) if isinstance(v, list) else [name]
        for m, df in zip(members, vals):
            member_df[m] = df
    if any(df.isStreaming for df in member_df.values()):
        _min_watermark_policy(spark)

    def shuffle(d, cols: list[str]):
        """d hash-partitioned on cols (one partition without keys): into
        `partitions`, or else as Spark shuffles its own aggregations
        (spark.sql.shuffle.partitions, which adaptive execution may coalesce
        when the partials are small: a Python task less per partition)."""
        if not cols:
            return d.repartition(1)
        keys = [F.col(c) for c in cols]
        return d.repartition(partitions, *keys) if partitions else d.repartition(*keys)

    malformed = MalformedRows(spark.sparkContext)
    frames: dict[str, Any] = {}   # stream name -> DataFrame
    packers: dict[str, Any] = {}  # LFTA stream -> its frame with packed output (_packer)
    with_hb: set[str] = set()     # streams whose frame carries heartbeat rows

    def stage(opts=None, **kw) -> _Stage:
        return _Stage(digest=digest, options=opts or options, params=params,
                      strings=strings, on_malformed=on_malformed, malformed=malformed, **kw)

    def data_rows(stream: str):
        """A stream's frame without heartbeat rows (for consumers that only
        take data)."""
        d = frames[stream]
        if stream not in with_hb:
            return d
        return d.where(~F.col(HEARTBEAT_COL)).drop(HEARTBEAT_COL, EPOCH_COL)

    # LFTA stream -> (its units, its stage's keywords, its files): an
    # aggregation over it may run in its stage instead (_owned_epochs)
    one_stage: dict[str, tuple[Any, dict, DirectFiles]] = {}
    splan, lib_lftas = _spark_plan(qs.plan, ifaces)
    needed = {n.name for n in splan.upstream([output])}
    for n in splan.nodes:
        if n.name not in needed:
            continue
        out_schema_spark = spark_schema(n.output, strings)
        out_schema = _arrow_schema_of(out_schema_spark)
        streaming = False
        if isinstance(n, LftaNode):
            df = member_df.get(n.iface)
            if df is None:
                raise SparkQueryError(
                    f"interface '{n.iface}' is not bound: query {n.query.name} reads "
                    f"{n.protocol.name}; pass sources={{'{n.iface}': dataframe}}")
            if (n.protocol.source_kind or "csv") != "csv":
                raise SparkQueryError(
                    f"query {n.query.name} reads PROTOCOL {n.protocol.name}, whose fields come "
                    "from packets; in Spark, read captures with gsqlc.read_pcap and query them "
                    "through PROTOCOL PACKETS of gsqlc.PACKET_TABLE_SCHEMA")
            lib_name, lib_iface = lib_lftas[n.name]
            _dry_run(b.library, n, _arrow_schema_of(df.drop(END_COL).schema), options, params,
                     (lib_name, lib_iface))
            lfta = dict(iface=lib_iface, streams=[], tag_col=None, stream_cols=[],
                        output=lib_name, out_schema=out_schema, sort_cols=None)
            files = direct_scan(df) if direct_files else None
            if files is None and direct_files and _plain_scan_format(df) == "csv":
                warnings.warn(
                    f"gsqlc.spark: source {n.iface} is read by Spark's CSV reader and its rows "
                    "sent to Python, which costs more than gsqlc's query; "
                    "gsqlc.spark.read_csv(spark, paths, schema) parses the files in the tasks "
                    "(5-7x Spark SQL in bench/spark_bench.py; malformed rows are counted and "
                    "skipped where Spark's reader keeps them as nulls)", stacklevel=2)
            if files is not None:
                # One unit per core: each task of a stage costs Spark ~40 ms
                # (a Python worker's hand-over) whatever its work, so a
                # second wave of tasks costs more than it balances.  The
                # units travel with the stage; a partition holds their ids
                # (spark.range: made in the JVM, nothing pickled per row).
                tasks = storage.plan_pieces(files.files, spark.sparkContext.defaultParallelism)
                if files.csv is not None:
                    tasks = storage.split_csv_pieces(tasks, dict(files.files))
                units = spark.range(len(tasks), numPartitions=max(1, len(tasks)))
                lfta.update(parquet_columns=list(df.columns), parquet_units=tasks,
                            filesystem=files.filesystem, csv=files.csv,
                            parquet_computed=files.computed)
                frames[n.name] = units.mapInArrow(stage(**lfta), out_schema_spark)
                packers[n.name] = _packer(units, stage, lfta)
                if files.csv is None and lib_name == n.name:
                    one_stage[n.name] = (units, lfta, files)
            elif df.isStreaming:
                # per micro-batch; the LFTA's heartbeats (one at the end of
                # each micro-batch at least) come along as flagged rows and
                # become the watermark of the aggregation downstream
                from pyspark.sql import types as T
                hb_schema = T.StructType(out_schema_spark.fields +
                                         [T.StructField(HEARTBEAT_COL, T.BooleanType(), False)])
                lfta["out_schema"] = _arrow_schema_of(hb_schema)
                if END_COL in df.columns:   # read_stream(finite=True): an end row comes
                    lfta["end_temporal"] = [c.name for c in n.output.columns
                                            if c.temporal.is_temporal]
                frames[n.name] = df.mapInArrow(
                    stage(opts={**options, "arrow_heartbeats": "1", "final_heartbeat": "1"},
                          **lfta), hb_schema)
                with_hb.add(n.name)
            else:
                frames[n.name] = df.mapInArrow(stage(**lfta), out_schema_spark)
                packers[n.name] = _packer(df, stage, lfta)
            continue
        streaming = any(frames[s].isStreaming for s in n.inputs)
        if isinstance(n, HftaAggregate) and streaming and n.inputs[0] in with_hb:
            frames[n.name] = _streaming_aggregate(n, frames[n.inputs[0]], stage, out_schema,
                                                  out_schema_spark, splan.node(n.inputs[0]),
                                                  ifaces.out_of_order)
            continue
        if isinstance(n, HftaMerge) and streaming and all(s in with_hb for s in n.inputs):
            frames[n.name] = _streaming_merge(n, splan, [frames[s] for s in n.inputs],
                                              ifaces.out_of_order)
            with_hb.add(n.name)
            continue
        ins = [data_rows(s) for s in n.inputs]
        if isinstance(n, HftaMerge):
            u = ins[0]
            cols = [c.name for c in n.output.columns]
            for d in ins[1:]:
                u = u.unionByName(d.toDF(*cols)) if d.columns != cols else u.unionByName(d)
            frames[n.name] = u.toDF(*cols)
            continue
        if isinstance(n, HftaSelect):
            frames[n.name] = ins[0].mapInArrow(
                stage(iface=None, streams=[n.inputs[0]], tag_col=None,
                      stream_cols=[[c.name for c in n.input_defs[0].columns]],
                      output=n.name, out_schema=out_schema, sort_cols=None), out_schema_spark)
            continue
        over = one_stage.get(n.inputs[0]) if isinstance(n, HftaAggregate) and \
            not streaming and time_ordered else None
        owned = None if over is None else _owned_epochs(
            n, splan.node(n.inputs[0]), over[2], over[1]["parquet_columns"], ifaces.out_of_order)
        if over is not None and owned is not None:
            # each LFTA task completes the epochs it owns: no shuffle, no second stage
            units, lfta, _ = over
            frames[n.name] = units.mapInArrow(
                stage(**{**lfta, "output": n.name, "out_schema": out_schema, "owned": owned}),
                out_schema_spark)
            continue
        if isinstance(n, HftaAggregate):
            d = ins[0]
            keys = [_plain(e) for _, e in n.group_by]
            cols = [k for k in keys if k is not None]
            tcol = _first_increasing(n.input_defs[0])
            if streaming:
                raise SparkQueryError(
                    f"query {n.query.name}: over a streaming DataFrame the aggregation must read "
                    "the partials of an LFTA (a query over a PROTOCOL); aggregating another "
                    "query's output is not supported yet in streaming mode")
            packer = packers.get(n.inputs[0]) if pack_partials else None
            in_schema = _arrow_schema_of(frames[n.inputs[0]].schema)
            packed = packer is not None and bool(cols) and all(
                packable_type(in_schema.field(c).type) for c in cols)
            if packed:
                buckets = partitions or int(spark.conf.get("spark.sql.shuffle.partitions"))
                d = shuffle(packer(cols, buckets), ["bucket"])
            else:
                d = shuffle(d, cols)
            frames[n.name] = d.mapInArrow(
                stage(iface=None, streams=[n.inputs[0]], tag_col=None,
                      stream_cols=[[c.name for c in n.input_defs[0].columns]],
                      output=n.name, out_schema=out_schema,
                      sort_cols=[tcol] if tcol else None, packed_input=packed), out_schema_spark)
            continue
        if isinstance(n, HftaJoin):
            if streaming:
                frames[n.name] = _streaming_join(n, splan, frames, with_hb, stage, out_schema,
                                                 out_schema_spark, ifaces.out_of_order)
                continue
            frames[n.name] = _join(n, ins, shuffle, stage, out_schema, out_schema_spark)
            continue
        raise SparkQueryError(f"query {n.query.name}: a {n.kind} node cannot run in Spark yet")
    out = data_rows(output)
    if ip_format == "text":
        out = _ip_text_columns(out, splan.node(output).output)
    out.gsqlc = malformed
    return out


def _ip_text_columns(df, stream):
    """df with the IP and IPV6 columns of `stream` (LongType, 16-byte
    BinaryType) in GSQL's text forms, by Spark's own expressions (no
    Python pass): dotted quad; eight groups of four lower-case hex digits."""
    from pyspark.sql import functions as F
    kinds = {c.name: c.type for c in stream.columns if c.type in (Type.IP, Type.IPV6)}
    if not kinds:
        return df
    cols = []
    for name in df.columns:
        c = F.col(name)
        if kinds.get(name) == Type.IP:
            c = F.concat_ws(".", *[F.shiftrightunsigned(c, k).bitwiseAND(255).cast("string")
                                   for k in (24, 16, 8, 0)])
        elif kinds.get(name) == Type.IPV6:
            c = F.regexp_replace(F.lower(F.hex(c)), "(.{4})(?!$)", "$1:")
        cols.append(c.alias(name) if name in kinds else c)
    return df.select(*cols)


def _packer(source, stage, lfta: dict):
    """For an LFTA run by mapInArrow over `source`: a function of (key
    columns, buckets) giving the same LFTA's frame with its output packed
    for the shuffle into an aggregation (_pack_partials)."""
    def packed(cols: list[str], buckets: int):
        return source.mapInArrow(stage(**lfta, pack_cols=cols, pack_buckets=buckets),
                                 PACKED_SCHEMA)
    return packed


def _with_epoch(d, col: str, disorder: int = 1):
    """d with EPOCH_COL, the value of its temporal column `col` as seconds,
    under a watermark `disorder` epochs (units of col) behind the latest
    seen: Spark releases state at or below the watermark, so an epoch is
    released once an epoch `disorder` later was seen (data or heartbeat
    rows) -- `disorder` epochs are open at once (seed 004) -- and drops
    rows older than the watermark.  The epochs start one second after
    Spark's zero: a stream's watermark starts at 0 and Spark drops rows at
    or below it, so an epoch 0 (times from 0) would be dropped whole."""
    from pyspark.sql import functions as F
    return d.withColumn(EPOCH_COL, F.timestamp_seconds(F.col(col).cast("long") + 1)) \
            .withWatermark(EPOCH_COL, f"{disorder} seconds")


def _readers_disorder(plan, stream: str) -> int:
    """The epochs the aggregations reading `stream` keep open (1: none reads it)."""
    return max((r.disorder for r in plan.consumers(stream) if isinstance(r, HftaAggregate)),
               default=1)


def _watermark_delay(node, col: str, epochs: int, out_of_order: Mapping[str, float]) -> int:
    """The watermark delay, in units of column `col`, of the stream `node`
    makes when it is an LFTA (of one source): the plan's `epochs`, or more
    if the interface's declared out_of_order bound B needs it -- a record B
    behind its interface's latest makes a row of col (`field / w`, else w =
    1) at most ceil(B / w) epochs behind, and Spark counts for sure only a
    row less than the delay behind (module docstring)."""
    bound = out_of_order.get(node.iface) if isinstance(node, LftaNode) else None
    if not bound:
        return epochs
    e = dict(node.select)[col]
    if isinstance(e, GroupRef):
        e = node.group_by[e.index][1]
    return max(epochs, epochs_spanning([e], bound))


def _check_time_bounds(ifaces: Interfaces) -> None:
    """The declared time bounds a Spark run cannot take (module docstring):
    UsageError for the estimators, one warning for the wall-clock bounds."""
    hb = ifaces.heartbeats
    refused = ([f"estimate = {hb.estimate!r}"] if hb.estimate != "given" else []) + \
        [k for k in ("horizon", "window", "alpha") if getattr(hb, k) is not None]
    if refused:
        raise UsageError(f"[heartbeats] {refused[0]}: Spark runs take declared bounds only "
                         "(out_of_order becomes each source's watermark delay); remove it")
    clock = [f"{what} of {', '.join(sorted(table))}" for what, table in
             (("latency", ifaces.latency), ("arrival", ifaces.arrival),
              ("max_skew", ifaces.skews)) if table]
    if hb.timeout is not None:
        clock.append("[heartbeats] timeout")
    if clock:
        warnings.warn(f"gsqlc.spark: {'; '.join(clock)}: wall-clock bounds, which Spark's "
                      "event-time watermark cannot take, are ignored (a silent source holds "
                      "the results back; no row is dropped for it)", stacklevel=3)


def _min_watermark_policy(spark) -> None:
    """Spark's watermark over several watermarked inputs is the MIN of
    theirs, so a lagging source holds epochs open: set it so explicitly;
    'max' would drop the lagging source's rows, and is refused."""
    policy = spark.conf.get(WATERMARK_POLICY, None) or "min"
    if policy.lower() != "min":
        raise SparkQueryError(
            f"{WATERMARK_POLICY} is {policy!r}: over streaming DataFrames gsqlc needs 'min' "
            "(the default), or rows of a source behind the others are dropped as late")
    spark.conf.set(WATERMARK_POLICY, "min")


def _release_per_epoch(marked, group_cols: list, cols: list[str]):
    """The data rows (columns `cols`) of a watermarked stream, gathered in
    Spark state per group_cols (EPOCH_COL first) and released, once, when
    the watermark passes their epoch; heartbeat rows only move the
    watermark."""
    from pyspark.sql import functions as F
    gathered = (marked.groupBy(*group_cols)
                .agg(F.collect_list(F.when(~F.col(HEARTBEAT_COL),
                                           F.struct(*[F.col(c) for c in cols])))
                     .alias("__rows")))
    return gathered.select(F.explode("__rows").alias("__r")).select("__r.*")


def _side_columns(i: int, sd) -> tuple[list[str], list[str]]:
    """The columns of input i of a join in a tagged union (renamed
    __i_<name>), and their names in the stream."""
    cols = [c.name for c in sd.columns]
    return [f"__{i}_{c}" for c in cols], cols


def _streaming_merge(n, plan, ins, out_of_order: Mapping[str, float]):
    """A merge of streams (an interface set's LFTAs) per micro-batch: the
    union of its inputs, heartbeat rows kept, each input under its own
    watermark on the merge column -- the epochs its readers keep open, or
    more for its source's out_of_order -- so the query's watermark -- the
    smallest -- waits for the input that lags (a consumer's epoch closes
    only once every member moved past it)."""
    cols = [c.name for c in n.output.columns] + [HEARTBEAT_COL]
    at = cols.index(n.merge.field)
    epochs = _readers_disorder(plan, n.name)
    parts = [_with_epoch(d.toDF(*cols), n.merge.field,
                         _watermark_delay(plan.node(s), sd.columns[at].name, epochs, out_of_order))
             for s, sd, d in zip(n.inputs, n.input_defs, ins)]
    u = parts[0]
    for d in parts[1:]:
        u = u.unionByName(d)
    return u      # EPOCH_COL stays: the watermarked column an aggregation groups on


def _epoch_source(plan, j, side: int, with_hb: set) -> tuple[Any, str]:
    """For side `side` of streaming join j: the aggregation feeding it and
    the temporal column of that aggregation's LFTA its epochs are, or a
    SparkQueryError saying which condition fails."""
    q = j.query.name
    a = plan.node(j.inputs[side])
    t = _plain(j.join.time[side])
    why = None
    if not isinstance(a, HftaAggregate) or a.inputs[0] not in with_hb or \
            not isinstance(plan.node(a.inputs[0]), LftaNode):
        why = (f"its input {j.inputs[side]} is not an aggregation over a PROTOCOL of one "
               "interface")
    else:
        sel = dict(a.select)
        g = sel.get(t) if t else None
        key = a.group_by[g.index][1] if isinstance(g, GroupRef) else None
        col = _plain(key) if key is not None else None
        if col is None or not a.input_defs[0].get(col).temporal.is_temporal:
            why = (f"its temporal predicate does not read a temporal GROUP BY key of "
                   f"{j.inputs[side]} that is a column of its input")
        else:
            return a, col
    raise SparkQueryError(
        f"query {q}: over streaming DataFrames a join runs per epoch, so it must equate the "
        f"temporal GROUP BY keys of two aggregations over PROTOCOL streams; {why} "
        "(run it in batch)")


def _streaming_join(n, plan, frames, with_hb, stage, out_schema, out_schema_spark,
                    out_of_order: Mapping[str, float]):
    """A join of two aggregations over streams, per epoch.  Both LFTAs'
    partials (with their heartbeat rows) are gathered in Spark state per
    epoch -- the common value of the temporal keys the join equates --
    under a watermark on each side (its aggregation's open epochs, or more
    for its source's out_of_order), so an epoch is released once both
    sides have moved past it (data or heartbeats) and its state dropped.
    One task then runs both aggregations and the join over the epoch's
    partials, exactly as in batch mode (outer rows included)."""
    from pyspark.sql import functions as F
    q = n.query.name
    if isinstance(n, HftaFilterJoin) or n.join.band_lo or n.join.band_hi:
        raise SparkQueryError(f"query {q}: over streaming DataFrames only joins with a "
                              "temporal equality run (run band and filter joins in batch)")
    sides = [_epoch_source(plan, n, i, with_hb) for i in (0, 1)]
    lftas = [a.inputs[0] for a, _ in sides]
    if lftas[0] == lftas[1]:
        raise SparkQueryError(f"query {q}: over streaming DataFrames the two sides of a join "
                              "must read different streams (run a self-join in batch)")
    tag = "__side"
    parts, names = [], []
    for i, ((a, tcol), lf) in enumerate(zip(sides, lftas)):
        renamed, cols = _side_columns(i, a.input_defs[0])
        names.append((renamed, cols))
        side = frames[lf].select(*[F.col(c).alias(r) for c, r in zip(cols, renamed)],
                                 F.col(HEARTBEAT_COL), F.lit(i).alias(tag))
        # a watermark per side: the query's is the smaller of the two
        parts.append(_with_epoch(side, f"__{i}_{tcol}",
                                 _watermark_delay(plan.node(lf), tcol, a.disorder, out_of_order)))
    u = parts[0].unionByName(parts[1], allowMissingColumns=True)
    released = _release_per_epoch(u, [EPOCH_COL], [c for r, _ in names for c in r] + [tag])
    return released.mapInArrow(
        stage(iface=None, streams=lftas, tag_col=tag, stream_cols=[tuple(x) for x in names],
              output=n.name, out_schema=out_schema,
              sort_cols=[t for _, t in sides]), out_schema_spark)


def _join(n, ins, shuffle, stage, out_schema, out_schema_spark):
    """Both inputs as one tagged DataFrame (columns of side i renamed
    __i_<name>), hash-partitioned on the join keys, each partition ordered
    on the sides' temporal columns; the task splits it back into the two
    streams."""
    from pyspark.sql import functions as F
    tag = "__side"
    sides = []
    names = []
    for i, (d, sd) in enumerate(zip(ins, n.input_defs)):
        renamed, cols = _side_columns(i, sd)
        names.append((renamed, cols))
        sides.append(d.toDF(*renamed).withColumn(tag, F.lit(i)))
    u = sides[0].unionByName(sides[1], allowMissingColumns=True)
    keycols = []
    for j, (le, ri) in enumerate(n.join.keys):
        ln, rn = _plain(le), _plain(ri)
        if ln is None or rn is None:
            continue
        lt = n.input_defs[0].get(ln).type
        rt = n.input_defs[1].get(rn).type
        if lt != rt and not (lt.is_integer and rt.is_integer):
            continue
        k = f"__k{j}"
        u = u.withColumn(k, F.coalesce(F.col(f"__0_{ln}"), F.col(f"__1_{rn}")))
        keycols.append(k)
    u = shuffle(u, keycols)
    return u.mapInArrow(
        stage(iface=None, streams=list(n.inputs), tag_col=tag,
              stream_cols=[tuple(x) for x in names], output=n.name, out_schema=out_schema,
              sort_cols=[_first_increasing(sd) for sd in n.input_defs]), out_schema_spark)


def _streaming_aggregate(n, d, stage, out_schema, out_schema_spark, source,
                         out_of_order: Mapping[str, float]):
    """An HFTA aggregation over a stream, per micro-batch.  Spark's stateful
    aggregation gathers the input rows of each (epoch, group key) with a
    watermark on the temporal key: a group is released, and its state
    dropped, once a later epoch has been seen -- from data or from the
    LFTAs' heartbeats, which arrive as rows flagged __heartbeat (so records
    the LFTA's predicate rejected still advance time); the watermark is
    n.disorder epochs behind, or more for its source's out_of_order.  The
    HFTA then runs over the released rows, ordered on the temporal key, and
    computes the groups exactly as in batch mode (its own folds, HAVING,
    SELECT)."""
    q = n.query.name
    in_def = n.input_defs[0]
    cols = [c.name for c in in_def.columns]
    keys = [k for k in (_plain(e) for _, e in n.group_by) if k is not None]
    tkeys = [k for k in keys if in_def.get(k).temporal.is_temporal]
    if not tkeys:
        raise SparkQueryError(f"query {q}: aggregation over a streaming DataFrame needs a "
                              "temporal GROUP BY key that is a column of its input (its epochs "
                              "become the watermark)")
    if EPOCH_COL in d.columns:
        # a streaming merge's output: its inputs' watermarks (Spark lets no
        # operator redefine them) are on the merge column's epochs
        merge = _merge_info(source)
        if merge is None or merge.field != tkeys[0]:
            raise SparkQueryError(
                f"query {q}: over a streaming merge the aggregation's temporal GROUP BY key "
                f"must be the merge column {merge.field if merge else '?'} (got {tkeys[0]})")
        marked = d
    else:
        marked = _with_epoch(d, tkeys[0],
                             _watermark_delay(source, tkeys[0], n.disorder, out_of_order))
    released = _release_per_epoch(marked, [EPOCH_COL, *keys], cols)
    return released.mapInArrow(
        stage(iface=None, streams=[n.inputs[0]], tag_col=None, stream_cols=[cols],
              output=n.name, out_schema=out_schema, sort_cols=[tkeys[0]]), out_schema_spark)
