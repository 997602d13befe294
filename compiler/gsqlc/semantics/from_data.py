"""A schema STREAM declared from data: the fields of an Arrow schema (of a
pyarrow Table, RecordBatch, RecordBatchReader or Schema, a pandas or Polars
DataFrame) as GSQL types, so that a query over data at hand needs no schema
file.

    stream_declaration("events", table, temporal={"ts": "increasing"}, ip=["src"])
    -> 'STREAM events {\n    ullong ts (increasing);\n    IP src;\n ... }'

A STREAM reads its tuples from the interface of its name, matching Arrow
columns to fields by name (docs/language.md, "Schema streams as sources"),
so `FROM events` reads the data bound as `events`.  Types: integers by
width and sign (8 to 32 bits: int / uint; 64: llong / ullong), floats,
booleans, strings (text, binary, dictionary-encoded text); a column the call
names in `ip` is an IP address (IPv4 from integers or text, IPV6 from 16
bytes).  Any other type (timestamps, dates, decimals, lists...) is a
UsageError naming the column, its type and what to do.
"""
from __future__ import annotations

import re
from typing import Any, Collection, Mapping, Optional

from ..errors import UsageError

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
TEMPORAL = ("increasing", "decreasing")


def arrow_schema(data: Any) -> Any:
    """The pyarrow.Schema of data (see the module docstring), read without
    consuming a stream."""
    import pyarrow as pa
    if isinstance(data, pa.Schema):
        return data
    if isinstance(data, (pa.Table, pa.RecordBatch, pa.RecordBatchReader)):
        return data.schema
    module = type(data).__module__.split(".")[0]
    if module == "pandas":
        return pa.Schema.from_pandas(data, preserve_index=False)
    if module == "polars" and hasattr(data, "to_arrow"):
        return data.head(0).to_arrow().schema if hasattr(data, "head") else data.to_arrow().schema
    if hasattr(data, "__arrow_c_schema__"):
        return pa.schema(data)
    raise UsageError(f"cannot read a schema from a {type(data).__name__}: give a pyarrow "
                     "Table, RecordBatch, RecordBatchReader or Schema, or a pandas or Polars "
                     "DataFrame")


def gsql_type(field: Any, ip: bool) -> Optional[str]:
    """The GSQL type of an Arrow field (ip: the call named it an address),
    or None when GSQL has none for it."""
    import pyarrow.types as t
    ty = field.type
    if t.is_dictionary(ty):
        ty = ty.value_type
    if ip:
        if t.is_fixed_size_binary(ty) and ty.byte_width == 16:
            return "IPV6"
        if t.is_binary(ty) or t.is_large_binary(ty):
            return "IPV6"
        if t.is_integer(ty) or t.is_string(ty) or t.is_large_string(ty):
            return "IP"
        return None
    if t.is_boolean(ty):
        return "bool"
    if t.is_integer(ty):
        if ty.bit_width == 64:
            return "llong" if t.is_signed_integer(ty) else "ullong"
        return "int" if t.is_signed_integer(ty) else "uint"
    if t.is_float32(ty) or t.is_float64(ty):
        return "float"
    if t.is_string(ty) or t.is_large_string(ty) or t.is_binary(ty) or t.is_large_binary(ty):
        return "string"
    return None


def _hint(field: Any) -> str:
    import pyarrow.types as t
    ty = field.type
    if t.is_timestamp(ty) or t.is_date(ty) or t.is_duration(ty):
        unit = getattr(ty, "unit", "day")
        return (f": cast it to integers first (pyarrow.compute.cast(column, 'int64') gives "
                f"{unit} since the epoch) and divide in the query for coarser epochs")
    if t.is_decimal(ty):
        return ": cast it to float64 or int64 first"
    if t.is_fixed_size_binary(ty) and ty.byte_width == 16:
        return ": if it holds IPv6 addresses, name it in ip="
    return ""


def stream_declaration(name: str, data: Any, temporal: Mapping[str, str] = {},
                       ip: Collection[str] = ()) -> str:
    """The text of `STREAM name { ... }` with a field per column of data.
    temporal: column -> 'increasing' or 'decreasing' (the temporal fields,
    as a schema file's properties say); ip: the columns holding addresses."""
    if not _NAME.match(name):
        raise UsageError(f"source '{name}': a stream's name must be a GSQL name (letters, "
                         "digits and _, not starting with a digit)")
    schema = arrow_schema(data)
    names = set(schema.names)
    for col in list(temporal) + list(ip):
        if col not in names:
            raise UsageError(f"source '{name}' has no column '{col}' (its columns: "
                             f"{', '.join(schema.names)})")
    for col, order in temporal.items():
        if order not in TEMPORAL:
            raise UsageError(f"temporal column '{col}': '{order}' is not one of "
                             f"{', '.join(TEMPORAL)}")
    lines = []
    for f in schema:
        if not _NAME.match(f.name):
            raise UsageError(f"source '{name}': column '{f.name}' is not a GSQL name (letters, "
                             "digits and _, not starting with a digit): rename it")
        ty = gsql_type(f, f.name in ip)
        if ty is None:
            what = "an IP address" if f.name in ip else "a GSQL value"
            raise UsageError(f"source '{name}': column '{f.name}' has Arrow type {f.type}, "
                             f"which gsqlc cannot read as {what}{_hint(f)}")
        props = f" ({temporal[f.name]})" if f.name in temporal else ""
        lines.append(f"    {ty} {f.name}{props};")
    return f"STREAM {name} {{\n" + "\n".join(lines) + "\n}\n"


__all__ = ["arrow_schema", "gsql_type", "stream_declaration", "TEMPORAL"]
