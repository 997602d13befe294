"""GSQL types as the Arrow types of output batches.

The runtime's Arrow sink produces strings as binary, IP values as uint32 and
IPV6 values as 16 bytes, the IP columns marked by the field metadata
gsqlc.type = IP / IPV6 (arrow_sink.c); finish_batch gives the user the
types output_type names: utf8 strings on request (strings='str') and, by
default (ip_format='text'), IP values in their text forms (GSQL.md: dotted
quad, eight groups of four hex digits), as the CLI prints them.  Inputs are matched to fields
by column name and converted by the runtime itself (runtime_c/sources/arrow_in.c),
which is also the one place that checks them.
"""
from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import TYPE_CHECKING, Any

from ..errors import RunError, UsageError
from ..semantics.types import Type

if TYPE_CHECKING:
    from ..semantics.model import StreamDef

IP_FORMATS = ("text", "int")
# the bytes a value of each IP type takes as the runtime holds it
IP_WIDTHS = {"IP": 4, "IPV6": 16}
# the field metadata marking an IP or IPV6 column of the runtime's batches
IP_TYPE_KEY = b"gsqlc.type"


def field_column(names: Collection[str], field: str) -> str | None:
    """The name among an Arrow source's column `names` that PROTOCOL field
    `field` reads -- the runtime's rule (gsq_arrow_find): the exact name,
    else one equal ignoring case -- or None."""
    if field in names:
        return field
    return next((c for c in names if c.lower() == field.lower()), None)


def _pa() -> Any:
    import pyarrow as pa
    return pa


def check_ip_format(ip_format: str) -> str:
    if ip_format not in IP_FORMATS:
        raise UsageError(f"ip_format must be 'text' or 'int', got {ip_format!r}")
    return ip_format


def output_type(t: Type, strings: str = "str", ip_format: str = "text") -> Any:
    pa = _pa()
    if ip_format == "text" and t in (Type.IP, Type.IPV6):
        return pa.string()
    return {
        Type.BOOL: pa.bool_(), Type.USHORT: pa.uint16(), Type.UINT: pa.uint32(),
        Type.INT: pa.int32(), Type.ULLONG: pa.uint64(), Type.LLONG: pa.int64(),
        Type.FLOAT: pa.float64(), Type.IP: pa.uint32(), Type.IPV6: pa.binary(16),
        Type.STRING: pa.string() if strings == "str" else pa.binary(),
    }[t]


def ip_metadata(t: Type) -> dict[bytes, bytes] | None:
    """The field metadata of a column of type t as the runtime gives it."""
    return {IP_TYPE_KEY: str(t).encode()} if t in (Type.IP, Type.IPV6) else None


def stream_schema(stream: StreamDef, strings: str = "str", ip_format: str = "text") -> Any:
    """The pyarrow schema of a stream's (a query's output's) batches."""
    pa = _pa()
    return pa.schema([pa.field(c.name, output_type(c.type, strings, ip_format), nullable=False,
                               metadata=None if ip_format == "text" else ip_metadata(c.type))
                      for c in stream.columns])


def _ip_width(field: Any) -> int | None:
    """4 or 16 for a column the runtime marked IP or IPV6, else None."""
    kind = (field.metadata or {}).get(IP_TYPE_KEY)
    return IP_WIDTHS.get(kind.decode()) if kind else None


def needs_finish(schema: Any, strings: str, ip_format: str = "text") -> bool:
    """Whether finish_batch changes batches of this schema (the same for
    every batch of a stream)."""
    pa = _pa()
    return ((strings == "str" and any(pa.types.is_binary(f.type) for f in schema))
            or (ip_format == "text" and any(_ip_width(f) for f in schema)))


def finish_batches(pairs: Iterable[tuple[str, Any]], strings: str, with_streams: bool,
                   ip_format: str = "text") -> list[Any]:
    """finish_batch over (stream, batch) pairs, a stream's schema looked at
    once: the pairs, or with_streams False the batches alone."""
    needs: dict[str, bool] = {}
    out: list[Any] = []
    for stream, b in pairs:
        if stream not in needs:
            needs[stream] = needs_finish(b.schema, strings, ip_format)
        b = finish_batch(b, strings, ip_format) if needs[stream] else b
        out.append((stream, b) if with_streams else b)
    return out


def ip_text(col: Any, width: int) -> Any:
    """An IP (uint32, width 4) or IPV6 (16 bytes, width 16) array as a utf8
    array of their text forms (nulls stay null), formatted natively."""
    pa = _pa()
    from .extension import native
    offsets, data = native().ip_text(col.buffers()[1], col.offset, len(col), width)
    out = pa.Array.from_buffers(pa.string(), len(col),
                                [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    if col.null_count:
        import pyarrow.compute as pc
        out = pc.if_else(col.is_valid(), out, pa.scalar(None, pa.string()))
    return out


def finish_batch(batch: Any, strings: str, ip_format: str = "text") -> Any:
    """A batch from the runtime as the user receives it: binary string
    columns become utf8 when strings == 'str' (validated, zero-copy); IP
    and IPV6 columns their text forms when ip_format == 'text'."""
    pa = _pa()
    if not needs_finish(batch.schema, strings, ip_format):
        return batch
    cols, fields = [], []
    for f, col in zip(batch.schema, batch.columns):
        width = _ip_width(f)
        if width and ip_format == "text":
            col = ip_text(col, width)
            f = pa.field(f.name, pa.string(), nullable=f.nullable)
        elif width is None and pa.types.is_binary(f.type) and strings == "str":
            try:
                col = col.cast(pa.string())
            except pa.ArrowInvalid:
                raise RunError(f"column {f.name} holds bytes that are not valid UTF-8 (a string "
                               "literal's escapes, or the data's own bytes): run with "
                               "strings='bytes' to receive them as binary") from None
            f = pa.field(f.name, pa.string(), nullable=f.nullable)
        cols.append(col)
        fields.append(f)
    return pa.RecordBatch.from_arrays(cols, schema=pa.schema(fields))
