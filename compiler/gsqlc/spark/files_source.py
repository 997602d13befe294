"""A streaming source of files for gsqlc in Spark (readers.read_stream):
a Python data source, "gsqlc_files", over the CSV, Parquet or capture files
of a directory on any filesystem pyarrow opens, one micro-batch taking the
files that appeared since the last (in order of modification time, then
path).

Why a source of our own: over a finite input Spark's file sources never
close the last epochs of an aggregation -- its watermark only moves with
later rows, and none come.  Given finite=True, this source takes the files
present when the query starts (or, under Trigger.AvailableNow, at its
start) as the whole input and ends it with one row flagged END_COL; the
LFTA stage turns that row into a heartbeat past every epoch, so the
watermark passes them all and the last epochs come out before the query
stops.  The stream is then finished: a later run on the same checkpoint
finds every epoch closed (its rows are late).
"""
from __future__ import annotations

import base64
import pickle
import sys
from typing import Any, Iterator

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow

from . import storage
from .types import END_COL, to_spark_arrow  # END_COL: true on the row ending a finite input

FORMATS = ("csv", "parquet", "pcap")


def pack_location(filesystem: Any, paths: list[str]) -> str:
    """The (filesystem, paths) of a source as an option string."""
    return base64.b64encode(pickle.dumps((filesystem, paths))).decode()


class GsqlcFiles(DataSource):
    """Options: location (pack_location), format (FORMATS), finite
    ("true"/"false"), files_per_batch (0: all new files), sep and header
    (CSV).  The schema is always given:
    the data columns, all nullable, then END_COL when finite."""

    @classmethod
    def name(cls) -> str:
        return "gsqlc_files"

    def streamReader(self, schema: Any) -> "_FilesReader":
        return _FilesReader(dict(self.options), schema)


class _FilesReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Offsets: {"files": files read, "end": 1 once the end row was read}."""

    def __init__(self, options: dict[str, str], schema: Any) -> None:
        self.fs, self.paths = pickle.loads(base64.b64decode(options["location"]))
        self.format = options["format"]
        self.finite = options.get("finite", "false") == "true"
        self.sep = options.get("sep", ",")
        self.header = options.get("header", "false") == "true"
        self.per_batch = int(options.get("files_per_batch", "0"))   # 0: all there are
        self.schema = schema
        self.target: int | None = None      # the files of the whole input, when known

    def _files(self) -> list[str]:
        return [p for p, _ in storage.list_in_arrival_order(self.fs, self.paths)]

    def initialOffset(self) -> dict[str, int]:
        return {"files": 0, "end": 0}

    def prepareForTriggerAvailableNow(self) -> None:
        self.target = len(self._files())

    def latestOffset(self, start: dict[str, int], limit: Any = None) -> dict[str, int]:
        n = len(self._files())
        if self.finite and self.target is None:
            self.target = n     # the files there at the first look are the whole input
        if self.target is not None:
            n = min(n, self.target)
        if self.per_batch:
            n = min(n, start["files"] + self.per_batch)
        end = 1 if self.finite and n >= (self.target or 0) else 0
        return {"files": max(n, start["files"]), "end": max(end, start["end"])}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[Any]:
        files = self._files()[start["files"]:end["files"]]
        parts = [InputPartition(("file", p)) for p in files]   # value: (kind, path)
        if end["end"] > start["end"]:
            parts.append(InputPartition(("end", "")))
        return parts

    def read(self, partition: Any) -> Iterator[Any]:
        import pyarrow as pa
        from pyspark.sql.pandas.types import to_arrow_schema
        target = to_arrow_schema(self.schema)
        data = [f for f in target if f.name != END_COL]
        kind, path = partition.value
        if kind == "end":
            cols = [pa.nulls(1, f.type) for f in data]
            if END_COL in target.names:
                cols.append(pa.array([True]))
            yield pa.RecordBatch.from_arrays(cols, schema=target)
            return
        data_schema = pa.schema(data)
        for batch in self._batches(path, data_schema):
            b = to_spark_arrow(batch.select(data_schema.names), data_schema)
            cols = b.columns
            if END_COL in target.names:
                cols.append(pa.repeat(False, b.num_rows))
            yield pa.RecordBatch.from_arrays(cols, schema=target)

    def _batches(self, path: str, schema: Any) -> Iterator[Any]:
        if self.format == "parquet":
            yield from storage.read_pieces(self.fs, [(path, 0, 1)], schema.names)
        elif self.format == "csv":
            bad = storage.MalformedCount()
            yield from storage.read_csv_pieces(self.fs, [(path, 0, 1)], schema.names,
                                               schema.types, self.sep, self.header, bad)
            if bad.rows:   # a source has no accumulator: the executor's log says it
                print(f"gsqlc: {bad.report()}", file=sys.stderr)
        else:
            import pyarrow as pa

            from ..runtime.packets import read_pcap
            # the form of the IP columns read_stream declared (its ip_format)
            text = "srcIP" in schema.names and pa.types.is_string(schema.field("srcIP").type)
            with storage.local_path(self.fs, path) as local:
                yield from read_pcap(local, ip_format="text" if text else "int").to_batches()
