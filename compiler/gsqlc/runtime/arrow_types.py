"""GSQL types as the Arrow types of output batches.

The runtime's Arrow sink produces output_type's types (strings as binary;
finish_batch casts them to utf8 on request).  Inputs are matched to fields
by column name and converted by the runtime itself (runtime_c/sources/arrow_in.c),
which is also the one place that checks them.
"""
from __future__ import annotations

from ..semantics.types import Type


def _pa():
    import pyarrow as pa
    return pa


def output_type(t: Type, strings: str = "str"):
    pa = _pa()
    return {
        Type.BOOL: pa.bool_(), Type.USHORT: pa.uint16(), Type.UINT: pa.uint32(),
        Type.INT: pa.int32(), Type.ULLONG: pa.uint64(), Type.LLONG: pa.int64(),
        Type.FLOAT: pa.float64(), Type.IP: pa.uint32(), Type.IPV6: pa.binary(16),
        Type.STRING: pa.string() if strings == "str" else pa.binary(),
    }[t]


def stream_schema(stream, strings: str = "str"):
    """The pyarrow schema of a stream's (a query's output's) batches."""
    pa = _pa()
    return pa.schema([pa.field(c.name, output_type(c.type, strings), nullable=False)
                      for c in stream.columns])


def needs_finish(schema, strings: str) -> bool:
    """Whether finish_batch changes batches of this schema (the same for
    every batch of a stream)."""
    pa = _pa()
    return strings == "str" and any(pa.types.is_binary(f.type) for f in schema)


def finish_batches(pairs, strings: str, with_streams: bool) -> list:
    """finish_batch over (stream, batch) pairs, a stream's schema looked at
    once: the pairs, or with_streams False the batches alone."""
    needs: dict = {}
    out = []
    for stream, b in pairs:
        if stream not in needs:
            needs[stream] = needs_finish(b.schema, strings)
        b = finish_batch(b, strings) if needs[stream] else b
        out.append((stream, b) if with_streams else b)
    return out


def finish_batch(batch, strings: str):
    """A batch from the runtime as the user receives it: binary string
    columns become utf8 when strings == 'str' (validated, zero-copy)."""
    pa = _pa()
    if not needs_finish(batch.schema, strings):
        return batch
    cols, fields = [], []
    for f, col in zip(batch.schema, batch.columns):
        if pa.types.is_binary(f.type):
            try:
                col = col.cast(pa.string())
            except pa.ArrowInvalid:
                raise ValueError(f"column {f.name} holds bytes that are not valid UTF-8; "
                                 "run with strings='bytes' to receive them as binary") from None
            f = pa.field(f.name, pa.string(), nullable=f.nullable)
        cols.append(col)
        fields.append(f)
    return pa.RecordBatch.from_arrays(cols, schema=pa.schema(fields))
