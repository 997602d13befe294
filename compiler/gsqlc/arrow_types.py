"""GSQL types as Arrow types: what output batches carry, what Arrow inputs
may hold, and the check of an input's columns against a PROTOCOL.

The runtime's Arrow sink produces the types of OUTPUT_TYPES (strings as
binary; finish_batch casts them to utf8 on request).  Inputs are matched by
column name (exact, then case-insensitive) and accept the wider families of
ACCEPTS; the runtime converts (range-checked) as it reads.
"""
from __future__ import annotations

from typing import Optional

from .types import Type


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


def finish_batch(batch, strings: str):
    """A batch from the runtime as the user receives it: binary string
    columns become utf8 when strings == 'str' (validated, zero-copy)."""
    pa = _pa()
    if strings != "str" or not any(pa.types.is_binary(f.type) for f in batch.schema):
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


def accepts(t: Type, at) -> bool:
    """May an Arrow column of type `at` feed a field of GSQL type `t`?"""
    pa = _pa()
    is_int = pa.types.is_integer(at)
    is_text = pa.types.is_string(at) or pa.types.is_large_string(at)
    if t is Type.BOOL:
        return pa.types.is_boolean(at) or is_int
    if t.is_integer:
        return is_int
    if t is Type.FLOAT:
        return pa.types.is_floating(at) or is_int
    if t is Type.IP:
        return is_int or is_text
    if t is Type.IPV6:
        return (pa.types.is_fixed_size_binary(at) and at.byte_width == 16) or is_text
    if t is Type.STRING:
        return is_text or pa.types.is_binary(at) or pa.types.is_large_binary(at)
    return False


def match_column(schema, name: str) -> Optional[str]:
    """The column of `schema` a field named `name` reads: exact name first,
    then case-insensitive (as the runtime matches)."""
    names = list(schema.names)
    if name in names:
        return name
    low = [n for n in names if n.lower() == name.lower()]
    return low[0] if low else None


def check_columns(where: str, fields: list[tuple[str, Type]], schema) -> None:
    """Raise ValueError naming every field that `schema` lacks or holds in
    an incompatible type.  fields: (name, GSQL type) read from the source."""
    problems = []
    for name, t in fields:
        col = match_column(schema, name)
        if col is None:
            problems.append(f"no column '{name}' (a {t} field)")
        elif not accepts(t, schema.field(col).type):
            problems.append(f"column '{col}' is {schema.field(col).type}, "
                            f"which cannot hold the {t} field '{name}'")
    if problems:
        raise ValueError(f"{where}: " + "; ".join(problems)
                         + f" (columns: {', '.join(schema.names) or 'none'})")
