"""DataFrames of files read by Spark tasks with pyarrow and gsqlc's own
readers: read_pcap, read_parquet, read_csv, read_stream (a streaming
directory), and the malformed-row count they and run_query's results carry
(MalformedRows).  A read_parquet or read_csv DataFrame remembers its files
(DirectFiles), so that run_query's LFTA tasks read them themselves."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Optional

from ..errors import UsageError
from ..runtime.arrow_types import check_ip_format
from . import storage
from .types import (
    END_COL,
    arrow_schema_of,
    packet_spark_schema,
    spark_schema_of_arrow,
    to_spark_arrow,
)

MAX_REPORTS = 10   # partitions' malformed-row reports the driver keeps

# a mapInArrow function: a partition's Arrow batches in, batches out
ArrowTask = Callable[[Iterable[Any]], Iterator[Any]]


class MalformedRows:
    """What the tasks of a run_query result rejected as malformed, gathered
    on the driver through Spark accumulators as its jobs run (the result
    DataFrame's .gsqlc): rows_rejected, and the runtime's report of the
    first MAX_REPORTS pieces (partitions, CSV file ranges) that rejected any.
    Each piece's count is kept under its (SQL action, piece) key, so a task
    that Spark runs again -- a retry, or a stage run again after an executor
    was lost -- replaces its count rather than adding to it; a second action
    over the same DataFrame counts its rows again."""

    def __init__(self, sc: Any) -> None:
        from pyspark.accumulators import AccumulatorParam

        class _ByPiece(AccumulatorParam[dict[Any, Any]]):
            def zero(self, value: Any) -> dict[Any, Any]:
                return {}

            def addInPlace(self, a: dict[Any, Any], b: dict[Any, Any]) -> dict[Any, Any]:
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


@dataclass
class CsvFormat:
    """How read_csv parses its files: columns `names` of Arrow `types`,
    separated by `sep`, the first line of each file a header or not.  In
    the GSQL form, `fields` (one per name) say where each is read (its
    position, or with a header its name) and how (a time's format)."""
    names: list[str]
    types: list[Any]
    sep: str = ","
    header: bool = False
    fields: Optional[list[storage.CsvColumn]] = None

    def reader(self, fs: Any, pieces: list[storage.Piece], bad: storage.MalformedCount,
               columns: Optional[list[str]] = None) -> Any:
        """A RecordBatchReader of the pieces (columns: a subset, in order)."""
        return storage.read_csv_pieces(fs, pieces, self.names, self.types, self.sep,
                                       self.header, bad, columns, self.fields)


@dataclass
class DirectFiles:
    """Files the LFTA tasks read themselves: their filesystem, (path, size)
    each (storage.list_files), and their CSV format (None: Parquet); for a
    computed Parquet source, what the tasks compute (catalyst.ComputedScan)."""
    filesystem: Any
    files: list[tuple[str, int]]
    csv: Optional[CsvFormat] = None
    computed: Any = None


# ------------------------------------------------------------ locations


def as_list(paths: Any) -> list[Any]:
    """One path or URI, or several, as a list."""
    return [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)


def locations(paths: Any, filesystem: Any, what: str) -> tuple[Any, list[str]]:
    """The pyarrow filesystem and the paths in it of one or more local paths
    or URIs (all on one filesystem)."""
    locs = as_list(paths)
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


def _listed(fs: Any, paths: list[str], originals: Any, what: str,
            kind: str = "file") -> list[tuple[str, int]]:
    """storage.list_files, a missing path reported as the user gave it, and
    a UsageError when there is no file at all."""
    try:
        files = storage.list_files(fs, paths)
    except FileNotFoundError as e:
        given = dict(zip(paths, as_list(originals)))
        raise FileNotFoundError(os.fspath(given.get(str(e.args[0]), e.args[0]))) from None
    if not files:
        raise UsageError(f"{what}: no {kind} under {', '.join(paths)}")
    return files


def _per_unit(units: int, spark: Any, task: ArrowTask, schema: Any) -> Any:
    """A DataFrame of `schema` made by `task` over a partition per unit id."""
    return spark.range(units, numPartitions=units).mapInArrow(task, schema)


# ------------------------------------------------------------ captures


def _read_pcap_task(filesystem: Any, paths: list[str], target: Any,
                    ip_format: str) -> ArrowTask:
    def task(batches: Iterable[Any]) -> Iterator[Any]:
        from ..runtime.packets import read_pcap as read_one
        for b in batches:
            for i in b.column(0).to_pylist():
                with storage.local_path(filesystem, paths[i]) as local:
                    for rb in read_one(local, ip_format=ip_format).to_batches():
                        yield to_spark_arrow(rb, target)
    return task


def read_pcap(spark: Any, paths: Any, filesystem: Any = None, *,
              ip_format: str = "text") -> Any:
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
    fs, ps = locations(paths, filesystem, "read_pcap")
    files = [p for p, _ in _listed(fs, ps, paths, "read_pcap", "capture file")]
    schema = packet_spark_schema(ip_format)
    target = arrow_schema_of(schema)
    return _per_unit(len(files), spark, _read_pcap_task(fs, files, target, ip_format), schema)


# ------------------------------------------------------------ Parquet and CSV


def _read_parquet_task(fs: Any, units: list[list[storage.Piece]], target: Any) -> ArrowTask:
    def task(batches: Iterable[Any]) -> Iterator[Any]:
        for b in batches:
            for i in b.column(0).to_pylist():
                for rb in storage.read_pieces(fs, units[i]):
                    yield to_spark_arrow(rb, target)
    return task


def read_parquet(spark: Any, paths: Any, filesystem: Any = None) -> Any:
    """Parquet files as a DataFrame, read by Spark tasks with pyarrow.
    paths: local paths or URIs of any filesystem pyarrow supports (s3://,
    gs://, hdfs://, ...; a directory means its files, hidden ones skipped),
    or paths in `filesystem`, a pyarrow FileSystem (it travels to the tasks,
    credentials included).  The driver lists the files and reads one footer
    (the schema); each task opens only its own files.  As a run_query
    source the LFTA tasks read the files directly (no JVM rows); anything
    else reads it as any DataFrame.  Columns take the types Spark's own
    reader gives (unsigned integers widen)."""
    fs, ps = locations(paths, filesystem, "read_parquet")
    files = _listed(fs, ps, paths, "read_parquet")
    schema = spark_schema_of_arrow(storage.parquet_schema(fs, files[0][0]))
    units = storage.plan_pieces(files, spark.sparkContext.defaultParallelism)
    df = _per_unit(len(units), spark,
                   _read_parquet_task(fs, units, arrow_schema_of(schema)), schema)
    df._gsqlc_direct = DirectFiles(fs, files)
    return df


def _read_csv_task(fs: Any, units: list[list[storage.Piece]], fmt: CsvFormat, target: Any,
                   malformed: MalformedRows) -> ArrowTask:
    def task(batches: Iterable[Any]) -> Iterator[Any]:
        for b in batches:
            for i in b.column(0).to_pylist():
                bad = storage.MalformedCount()
                for rb in fmt.reader(fs, units[i], bad):
                    yield to_spark_arrow(rb, target)
                if bad.rows or bad.notes:
                    malformed._add(bad.rows, bad.report() + "\n", piece=f"csv-unit-{i:09d}")
    return task


def _struct_type(schema: Any) -> Any:
    """A StructType given as one or as a DDL string."""
    from pyspark.sql import types as T
    return T._parse_datatype_string(schema) if isinstance(schema, str) else schema


def _is_gsql_schema(schema: Any, protocol: Optional[str]) -> bool:
    """Whether read_csv's schema is a GSQL schema (files) rather than a
    StructType or a DDL string: a path, a list of them, or protocol= given."""
    if protocol is not None or isinstance(schema, os.PathLike):
        return True
    if isinstance(schema, str):
        return os.path.isfile(schema)
    return isinstance(schema, (list, tuple)) and bool(schema) and all(
        isinstance(x, (str, os.PathLike)) for x in schema)


def gsql_csv_format(schema: Any, protocol: Optional[str], sep: str,
                    header: bool) -> tuple[Any, CsvFormat]:
    """The Spark schema and the CsvFormat of the CSV fields of a PROTOCOL of
    a GSQL schema (files; `protocol`: its name, or None for the only
    PROTOCOL of CSV fields): a column per field, named as it, of the Spark
    type run_query gives its GSQL type (IP and IPV6 as text, as the files
    hold them), read from its position or, with a header, its name."""
    from pyspark.sql import types as T

    from ..semantics.resolve import load_schema
    from ..semantics.schema import TIME_UNIT_NS
    from .types import spark_type
    files = [os.fspath(p) for p in as_list(schema)]
    sch = load_schema(files)
    csv = {n: p for n, p in sch.protocols.items()
           if p.kind == "protocol" and p.source_kind == "csv"}
    if protocol is None:
        if len(csv) != 1:
            raise UsageError(f"read_csv: {', '.join(files)} declares "
                             + (f"{len(csv)} PROTOCOLs of CSV fields ({', '.join(sorted(csv))})"
                                if csv else "no PROTOCOL of CSV fields")
                             + ": name one with protocol=")
        protocol = next(iter(csv))
    p = csv.get(protocol)
    if p is None:
        raise UsageError(f"read_csv: no PROTOCOL {protocol} of CSV fields in "
                         f"{', '.join(files)} (it has {', '.join(sorted(csv)) or 'none'})")
    fields = [f for f in p.fields.values() if f.source == "csv"]
    struct = T.StructType([T.StructField(f.name, spark_type(f.type, "str", "text"), True)
                           for f in fields])
    target = arrow_schema_of(struct)
    cols = [storage.CsvColumn(f.name, target.field(f.name).type, f.csv_pos, f.time_format,
                              TIME_UNIT_NS[f.time_unit or "s"]) for f in fields]
    return struct, CsvFormat(list(target.names), list(target.types), sep, header, cols)


def read_csv(spark: Any, paths: Any, schema: Any, *, protocol: Optional[str] = None,
             sep: str = ",", header: bool = False, filesystem: Any = None) -> Any:
    """CSV files as a DataFrame, parsed by Spark tasks with pyarrow.  schema:
    the GSQL schema of the queries (a schema file, or several) -- the
    columns are then the CSV fields of its PROTOCOL `protocol` (the only one
    when None), of the types run_query reads them as, each read from its
    accessor's position or, with header=True, from the column its name
    names (exactly, else ignoring case; a field no column names is an
    error), times as their time_format says -- or a StructType or a DDL
    string such as "time long, srcIP long" of the files' columns in order.
    paths: as read_parquet's.  Each file is cut into byte ranges of whole
    lines, one task per core, so a quoted field may hold the separator and
    doubled quotes but not a line break (refused, naming the file).  A row
    with another number of fields, or a value its column's type cannot take
    (a time that is not one), is counted and skipped (the DataFrame's
    .gsqlc, a MalformedRows, and a run_query result's); an empty field is
    null.  In the GSQL form without header=True, a first line naming the
    fields is skipped and noted in that report.  As a run_query source the
    LFTA tasks parse the files themselves, and no row crosses from the JVM
    to Python (Spark's CSV reader and that transfer cost more than gsqlc's
    whole query)."""
    from pyspark.sql import types as T
    if len(sep) != 1:
        raise UsageError(f"read_csv: sep must be one character, got {sep!r}")
    if _is_gsql_schema(schema, protocol):
        schema, fmt = gsql_csv_format(schema, protocol, sep, header)
    else:
        schema = _struct_type(schema)
        if not isinstance(schema, T.StructType) or not schema.fields:
            raise UsageError("read_csv: schema must be a GSQL schema file, a StructType or a "
                             "DDL string of columns")
        target = arrow_schema_of(schema)
        fmt = CsvFormat(list(target.names), list(target.types), sep, header)
    fs, ps = locations(paths, filesystem, "read_csv")
    files = _listed(fs, ps, paths, "read_csv")
    if fmt.fields is not None and header:   # the first file's header, checked here
        with storage.open_input(fs, files[0][0]) as f:
            storage.header_positions(fmt.fields, storage.csv_header_cells(f, f.size(), sep),
                                     files[0][0])
    target = arrow_schema_of(schema)
    units = storage.split_csv_pieces(
        storage.plan_pieces(files, spark.sparkContext.defaultParallelism), dict(files))
    malformed = MalformedRows(spark.sparkContext)
    df = _per_unit(len(units), spark, _read_csv_task(fs, units, fmt, target, malformed), schema)
    df._gsqlc_direct = DirectFiles(fs, files, fmt)
    df.gsqlc = malformed
    return df


# ------------------------------------------------------------ streams


def read_stream(spark: Any, paths: Any, format: str, schema: Any = None, *,
                finite: bool = False, files_per_batch: int = 0, sep: str = ",",
                header: bool = False, filesystem: Any = None, ip_format: str = "text") -> Any:
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

    from .files_source import FORMATS, GsqlcFiles, pack_location
    if format not in FORMATS:
        raise UsageError(f"read_stream: format must be one of {', '.join(FORMATS)}, "
                         f"got {format!r}")
    fs, ps = locations(paths, filesystem, "read_stream")
    if format == "csv" and schema is None:
        raise UsageError("read_stream: format 'csv' needs schema= (a StructType or DDL)")
    schema = _struct_type(schema)
    if schema is None and format == "parquet":
        files = storage.list_files(fs, ps, missing_ok=True)
        if not files:
            raise UsageError(f"read_stream: no Parquet file under {', '.join(ps)} to take the "
                             "schema from: give schema=")
        schema = spark_schema_of_arrow(storage.parquet_schema(fs, files[0][0]))
    elif schema is None:
        schema = packet_spark_schema(check_ip_format(ip_format))
    fields = [T.StructField(f.name, f.dataType, True) for f in schema.fields]
    if finite:
        fields.append(T.StructField(END_COL, T.BooleanType(), True))
    spark.dataSource.register(GsqlcFiles)
    return (spark.readStream.format(GsqlcFiles.name()).schema(T.StructType(fields))
            .option("location", pack_location(fs, ps)).option("format", format)
            .option("finite", "true" if finite else "false").option("sep", sep)
            .option("files_per_batch", str(int(files_per_batch)))
            .option("header", "true" if header else "false").load())
