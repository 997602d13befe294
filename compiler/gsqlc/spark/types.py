"""GSQL, Spark and Arrow types of the columns gsqlc hands to Spark, and the
columns gsqlc adds to the frames it makes.

pyspark and pyarrow are imported inside the functions: `import gsqlc.spark`
loads neither."""
from __future__ import annotations

from typing import Any

from ..semantics.model import StreamDef
from ..semantics.types import Type

END_COL = "__gsqlc_end"         # true on the one row that ends a finite stream (read_stream)
HEARTBEAT_COL = "__heartbeat"   # the runtime's flag column (option arrow_heartbeats)
EPOCH_COL = "__epoch"           # streaming: the watermarked event time (an epoch, as seconds)


def spark_type(t: Type, strings: str = "str", ip_format: str = "int") -> Any:
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


def spark_schema(stream: StreamDef, strings: str = "str") -> Any:
    """The Spark StructType of a stream's columns (not nullable)."""
    from pyspark.sql import types as T
    return T.StructType([T.StructField(c.name, spark_type(c.type, strings), False)
                         for c in stream.columns])


def arrow_schema_of(spark_struct: Any) -> Any:
    """The Arrow schema Spark hands to mapInArrow for a DataFrame schema."""
    from pyspark.sql.pandas.types import to_arrow_schema
    return to_arrow_schema(spark_struct)


def to_spark_arrow(batch: Any, target: Any) -> Any:
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


def packet_spark_schema(ip_format: str = "text") -> Any:
    """The Spark schema of decoded packets (read_pcap's columns, nullable)."""
    from pyspark.sql import types as T

    from ..runtime.packets import packet_columns
    return T.StructType([T.StructField(n, spark_type(Type(t), "bytes", ip_format), True)
                         for n, _, t in packet_columns()])


def spark_type_of_arrow(t: Any, column: str) -> Any:
    """The Spark type a Parquet column of Arrow type t is read as (as
    Spark's own reader: unsigned integers widen; a uint64 beyond 2^63 fails
    the task rather than wrapping)."""
    import pyarrow as pa
    from pyspark.sql import types as T
    from pyspark.sql.pandas.types import from_arrow_type

    from ..errors import UsageError
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


def spark_schema_of_arrow(arrow: Any) -> Any:
    """The Spark schema a Parquet file of this Arrow schema is read as
    (spark_type_of_arrow), nullable."""
    from pyspark.sql import types as T
    return T.StructType([T.StructField(f.name, spark_type_of_arrow(f.type, f.name), True)
                         for f in arrow])
