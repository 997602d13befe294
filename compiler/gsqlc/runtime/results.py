"""What a run's results convert to: an Arrow table, pandas, Polars and DuckDB
(the last two without copying: they take Arrow's buffers as they are), and
the Arrow PyCapsule stream interface (`__arrow_c_stream__`), through which
pyarrow, Polars, DuckDB and others read the batches as they come.

A mixin of api.Run and parallel.SplitRun: they provide .schema (the output's
pyarrow schema; None for a run of several outputs, which yields pairs),
iteration over batches and collect().
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Optional

from ..errors import UsageError


class ResultConversions:
    schema: Any = None
    outputs: list[str]

    if TYPE_CHECKING:   # provided by the classes this is mixed into
        def collect(self) -> list[Any]: ...

        def __iter__(self) -> Iterator[Any]: ...

    def _one_output(self, what: str) -> Any:
        if self.schema is None:
            raise UsageError(f"{what} takes a run of one output query; this run has "
                             f"{', '.join(self.outputs)}: run each, or iterate the pairs")
        return self.schema

    def to_arrow(self) -> Any:
        """The whole output as a pyarrow.Table (its batches as they came)."""
        import pyarrow as pa
        schema = self._one_output("to_arrow()")
        return pa.Table.from_batches(self.collect(), schema=schema)

    def to_pandas(self, **kw: Any) -> Any:
        """The output as a pandas DataFrame (pyarrow's Table.to_pandas(**kw);
        types_mapper=pandas.ArrowDtype keeps Arrow's buffers, no copy)."""
        return self.to_arrow().to_pandas(**kw)

    def to_polars(self) -> Any:
        """The output as a Polars DataFrame over the same Arrow buffers."""
        import polars as pl
        return pl.from_arrow(self.to_arrow(), rechunk=False)

    def to_duckdb(self, connection: Optional[Any] = None) -> Any:
        """The output as a DuckDB relation (of `connection`, else DuckDB's
        default one), reading the Arrow table in place."""
        import duckdb
        return (connection or duckdb).from_arrow(self.to_arrow())

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        """The Arrow PyCapsule stream interface: the batches as the run makes
        them (pyarrow.RecordBatchReader.from_stream(run), polars.DataFrame(run),
        DuckDB's scans of Python objects: duckdb.sql('... FROM run'))."""
        import pyarrow as pa
        schema = self._one_output("the Arrow stream interface")
        reader = pa.RecordBatchReader.from_batches(schema, iter(self))
        return reader.__arrow_c_stream__(requested_schema)
