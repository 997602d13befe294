"""The stages of a run_query plan: each is the function a mapInArrow runs on
every partition of its input, holding what the partition's task needs to
run the query-set library over it (the library itself travels by Spark's
file distribution, task.ship_library, named by its digest).  Stages are
plain dataclasses: cloudpickle ships them to the executors.

    Stage                      what every stage has: the library, one output
    |                          stream cast to out_schema, the run's options,
    |                          and the run-and-report kernel (__call__)
    +-- LftaStage              an LFTA over the interface `iface`: the
    |   |                      partition's rows (output packed for the
    |   |                      shuffle when `pack` is given)
    |   +-- FiniteLftaStage    ... of a finite stream (read_stream(finite=True)),
    |   |                      ended by a heartbeat past every epoch
    |   +-- FilesLftaStage     ... the partition holds ids of Parquet units the
    |       |                  task reads itself
    |       +-- CsvLftaStage   ... of CSV units
    |       +-- OwnedEpochsStage  ... the aggregation over the LFTA completes
    |                          in the task, on the epochs it owns
    +-- HftaStage              streams fed from the partition's rows: one as it
        |                      comes, or each ordered on its sort column
        +-- PackedHftaStage    ... the partition holds packed partials
        +-- TaggedHftaStage    ... several streams in a tagged union (a join)

Each task's own state (the readers it opened, malformed CSV rows, the end
row of a finite stream) lives in a TaskInput, not on the stage."""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Optional

from . import storage
from .owned_epochs import EpochKey, OwnedRead
from .readers import CsvFormat, MalformedRows
from .task import (
    NO_RETRY_HELPS,
    load_on_executor,
    new_run,
    pack_partials,
    rows_rejected,
    unpack_partials,
)
from .types import END_COL, HEARTBEAT_COL, to_spark_arrow


@dataclass
class TaskInput:
    """One task's inputs to the library run, and what the task learns
    reading them."""
    readers: dict[str, Any] = field(default_factory=dict)   # interface -> RecordBatchReader
    streams: dict[str, Any] = field(default_factory=dict)   # stream -> RecordBatchReader
    bad: Optional[storage.MalformedCount] = None   # the CSV rows the task's reader skipped
    ended: bool = False                            # the end row of a finite stream was read
    owned: list[OwnedRead] = field(default_factory=list)   # OwnedEpochsStage: its reads


def _chain(first: Any, rest: Iterator[Any]) -> Iterator[Any]:
    yield first
    yield from rest


@dataclass(kw_only=True)
class Stage:
    """Runs the library over one partition, its inputs bound by the
    subclass (_inputs), and yields the `output` stream's batches cast to
    out_schema (Arrow).  Rows the runtime rejects are counted in
    `malformed` or, on_malformed='fail', fail the task."""
    digest: str
    output: str
    out_schema: Any
    options: dict[str, str]
    params: dict[str, str]
    strings: str = "str"
    on_malformed: str = "count"
    malformed: Optional[MalformedRows] = None

    def __call__(self, batches: Iterable[Any]) -> Iterator[Any]:
        from ..errors import RunError
        path, _ = load_on_executor(self.digest)
        it = iter(batches)
        first = next(it, None)
        if first is None:
            return      # an empty partition: no records, no output
        inp = self._inputs(first, it)
        run = new_run(path, inp.readers, inp.streams, self.output, self.options, self.params,
                      self.strings)
        try:
            yield from self._emit(run, inp)
        except RunError as e:
            raise RuntimeError(f"gsqlc: query stream {self.output}: {e}"
                               f"{self._failure_note()}") from None
        self._report(run, inp)

    def _inputs(self, first: Any, rest: Iterator[Any]) -> TaskInput:
        """The partition (its first batch and the rest) as the run's inputs."""
        raise NotImplementedError

    def _emit(self, run: Any, inp: TaskInput) -> Iterator[Any]:
        """The batches the task yields from the run's output."""
        for batch in run:
            yield to_spark_arrow(batch, self.out_schema)

    def _failure_note(self) -> str:
        """What a run's failure message adds (why a retry cannot help)."""
        return ""

    def _after_run(self, inp: TaskInput) -> None:
        """Checks once the run's output is out."""

    def _report(self, run: Any, inp: TaskInput) -> None:
        """The rows the task rejected: counted, or failing the task."""
        rejected = rows_rejected(run)
        report = run.report
        noted = inp.bad is not None and bool(inp.bad.notes)   # a header skipped
        if inp.bad is not None and (inp.bad.rows or noted):
            rejected += inp.bad.rows
            report = inp.bad.report() + "\n" + report
        self._after_run(inp)
        if rejected and self.on_malformed == "fail":
            raise RuntimeError(f"gsqlc: query stream {self.output}: {rejected} malformed "
                               f"row(s) in this partition (on_malformed='fail') "
                               f"{NO_RETRY_HELPS}:\n{report}")
        if (rejected or noted) and self.malformed is not None:
            self.malformed._add(rejected, f"gsqlc: query stream {self.output}: {report}")
        if run.report:
            print(f"gsqlc: {self.output}: {run.report}", file=sys.stderr)


# ------------------------------------------------------------ LFTA stages


@dataclass
class Packing:
    """The output of an LFTA task packed for the shuffle into an aggregation
    (task.pack_partials): hashed on key columns `cols` into `buckets`."""
    cols: list[str]
    buckets: int


@dataclass(kw_only=True)
class LftaStage(Stage):
    """An LFTA over the interface `iface`, bound to the partition's rows."""
    iface: str
    pack: Optional[Packing] = None

    def _inputs(self, first: Any, rest: Iterator[Any]) -> TaskInput:
        import pyarrow as pa
        return TaskInput(readers={
            self.iface: pa.RecordBatchReader.from_batches(first.schema, _chain(first, rest))})

    def _emit(self, run: Any, inp: TaskInput) -> Iterator[Any]:
        if self.pack is None:
            return super()._emit(run, inp)
        return pack_partials((to_spark_arrow(b, self.out_schema) for b in run),
                             self.out_schema, self.pack.cols, self.pack.buckets)


# The temporal value of the heartbeat that ends a finite stream: past every
# epoch (as seconds, year 36812: within Spark's timestamps)
END_EPOCH = 1 << 40


def end_heartbeat(schema: Any, temporal: list[str]) -> Any:
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


@dataclass(kw_only=True)
class FiniteLftaStage(LftaStage):
    """An LFTA over a finite stream: the partition's rows carry END_COL,
    true on the one row that ends the stream; the task reads the others and,
    when it saw the end, yields a heartbeat with its temporal output columns
    `end_temporal` past every epoch."""
    end_temporal: list[str]

    def _inputs(self, first: Any, rest: Iterator[Any]) -> TaskInput:
        import pyarrow as pa
        import pyarrow.compute as pc
        inp = TaskInput()
        at = first.schema.get_field_index(END_COL)

        def data() -> Iterator[Any]:
            for b in _chain(first, rest):
                end = b.column(at)
                if pc.any(end).as_py():
                    inp.ended = True
                    b = b.filter(pc.invert(pc.fill_null(end, False)))
                yield b.drop_columns([END_COL])
        inp.readers[self.iface] = pa.RecordBatchReader.from_batches(
            first.schema.remove(at), data())
        return inp

    def _emit(self, run: Any, inp: TaskInput) -> Iterator[Any]:
        yield from super()._emit(run, inp)
        if inp.ended:
            yield end_heartbeat(self.out_schema, self.end_temporal)


@dataclass
class FileUnits:
    """The files an LFTA stage's tasks read themselves: `units` (lists of
    storage pieces, a partition holding the ids of its units) on the pyarrow
    `filesystem`, as `columns`; computed so when `computed` is given (a
    catalyst.ComputedScan)."""
    filesystem: Any
    units: list[list[storage.Piece]]
    columns: list[str]
    computed: Any = None

    def pieces(self, ids: list[int]) -> list[storage.Piece]:
        return [p for i in ids for p in self.units[i]]

    def computed_keywords(self, schema: bool = True) -> dict[str, Any]:
        """The keywords of storage's readers that compute the source."""
        c = self.computed
        if c is None:
            return {}
        kw = dict(expressions=c.columns, filter=c.filter)
        if schema:
            kw["schema"] = c.schema
        return kw


def _unit_ids(first: Any, rest: Iterator[Any]) -> list[int]:
    return [i for b in _chain(first, rest) for i in b.column(0).to_pylist()]


@dataclass(kw_only=True)
class FilesLftaStage(LftaStage):
    """An LFTA whose tasks read their units of Parquet files themselves."""
    files: FileUnits

    def _inputs(self, first: Any, rest: Iterator[Any]) -> TaskInput:
        f = self.files
        return TaskInput(readers={self.iface: storage.read_pieces(
            f.filesystem, f.pieces(_unit_ids(first, rest)), f.columns,
            **f.computed_keywords())})

    def _failure_note(self) -> str:
        # a computed source failing on its values (ANSI overflow, a zero
        # divisor) fails on every attempt, as Spark's own plan would
        c = self.files.computed
        if c is None:
            return ""
        return f" (computing its source as Spark does: {c.text}; {NO_RETRY_HELPS[1:]}"


@dataclass(kw_only=True)
class CsvLftaStage(FilesLftaStage):
    """An LFTA whose tasks parse their units of CSV files themselves,
    counting the malformed rows they skip."""
    csv: CsvFormat

    def _inputs(self, first: Any, rest: Iterator[Any]) -> TaskInput:
        f = self.files
        bad = storage.MalformedCount()
        return TaskInput(readers={self.iface: self.csv.reader(
            f.filesystem, f.pieces(_unit_ids(first, rest)), bad, f.columns)}, bad=bad)


@dataclass
class OwnedEpochs:
    """How the tasks of a one-stage aggregation split its epochs: the
    parameters of owned_epochs.OwnedRead."""
    key: EpochKey
    disorder: int                 # epochs a row may come after a later one
    stats_column: Optional[str]   # the file column whose statistics bound the key
    source: str                   # the interface, for messages


@dataclass(kw_only=True)
class OwnedEpochsStage(FilesLftaStage):
    """An aggregation completed in the LFTA's tasks: each reads the rows of
    the epochs its units own (owned_epochs.py) and runs the LFTA and the
    aggregation (`output`) over them; no shuffle, no second stage."""
    owned: OwnedEpochs

    def _inputs(self, first: Any, rest: Iterator[Any]) -> TaskInput:
        import pyarrow as pa
        ids = _unit_ids(first, rest)
        o, f = self.owned, self.files
        reader = storage.RowGroupReader(   # one per task: each footer read once
            f.filesystem, f.columns, **f.computed_keywords(schema=False))
        reads = [OwnedRead(f.units, o.key, o.disorder, reader, o.stats_column, o.source)
                 for _ in ids]
        schema = f.computed.schema if f.computed is not None else \
            storage.parquet_schema(f.filesystem, next(p for u in f.units for p in u)[0],
                                   f.columns)

        def batches() -> Iterator[Any]:
            for read, i in zip(reads, ids):
                yield from read.batches(i)
                if read.error:
                    return
        return TaskInput(readers={self.iface: pa.RecordBatchReader.from_batches(
            schema, batches())}, owned=reads)

    def _after_run(self, inp: TaskInput) -> None:
        for read in inp.owned:
            read.reader.close()
            if read.error:
                raise RuntimeError(
                    f"gsqlc: query {self.output}: {read.error}. Declare the disorder "
                    f"(max_hfta_disorder=, or the interface's out_of_order=) or pass "
                    f"run_query(..., time_ordered=False), which completes the epochs "
                    f"after a shuffle whatever the order {NO_RETRY_HELPS}")


# ------------------------------------------------------------ HFTA stages


@dataclass(kw_only=True)
class HftaStage(Stage):
    """HFTAs fed the partition's rows as `streams`, each of its columns
    `stream_cols`: without sort_cols one stream read as it comes, else each
    stream ordered on its sort column (pyarrow's sort; partials are small)."""
    streams: list[str]
    stream_cols: list[list[str]]
    sort_cols: Optional[list[Optional[str]]] = None

    def _inputs(self, first: Any, rest: Iterator[Any]) -> TaskInput:
        import pyarrow as pa
        if self.sort_cols is None:
            # one stream, in the order Spark gives: read it as it comes
            return TaskInput(streams={self.streams[0]: pa.RecordBatchReader.from_batches(
                first.schema, _chain(first, rest))})
        return TaskInput(streams=self._split(pa.Table.from_batches([first, *rest])))

    def _split(self, table: Any) -> dict[str, Any]:
        """The partition's rows as one Arrow stream per input stream, each
        ordered on its sort column when given."""
        out = {}
        for i, s in enumerate(self.streams):
            t = self._rows_of(table, i)
            col = self.sort_cols[i] if self.sort_cols else None
            if col is not None:
                t = t.sort_by(col)
            out[s] = t.to_reader()
        return out

    def _rows_of(self, table: Any, i: int) -> Any:
        """The rows of the partition's table that are stream i's."""
        return table.select(self.stream_cols[i])


@dataclass(kw_only=True)
class PackedHftaStage(HftaStage):
    """An HFTA over packed partials (task.pack_partials)."""

    def _inputs(self, first: Any, rest: Iterator[Any]) -> TaskInput:
        return TaskInput(streams=self._split(unpack_partials(_chain(first, rest))))


@dataclass(kw_only=True)
class TaggedHftaStage(HftaStage):
    """HFTAs over several streams sent as one tagged union: a row is stream
    i's when its `tag_col` is i, its columns there `side_cols[i]`."""
    tag_col: str
    side_cols: list[list[str]]

    def _inputs(self, first: Any, rest: Iterator[Any]) -> TaskInput:
        import pyarrow as pa
        return TaskInput(streams=self._split(pa.Table.from_batches([first, *rest])))

    def _rows_of(self, table: Any, i: int) -> Any:
        import pyarrow.compute as pc
        t = table.filter(pc.equal(table[self.tag_col], i))
        return t.select(self.side_cols[i]).rename_columns(self.stream_cols[i])
