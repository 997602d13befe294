"""run_query: GSQL queries over Spark DataFrames, on the driver -- the run
prepared and the query set compiled, the library shipped to the executors,
the stages planned (planner.py) -- returning the output stream's DataFrame."""
from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from ..api import CompiledQuerySet
from ..errors import UsageError
from ..resources import packet_schema_path
from .planner import SparkPlanner, SparkSettings, _prepare_run, ip_text_columns
from .readers import MalformedRows
from .streaming import min_watermark_policy
from .task import ship_library


def run_query(spark: Any, files: Sequence[str], schema: Any = None,
              sources: Optional[Mapping[str, Any]] = None,
              output: Optional[str] = None, *, params: Optional[Mapping[str, Any]] = None,
              library_paths: Sequence[str] = (), strings: str = "str",
              partitions: Optional[int] = None, heartbeat_interval: Any = "off",
              direct_files: bool = True, on_malformed: str = "count",
              lfta_table_size: int = 1 << 19, lfta_table_ways: int = 4,
              max_lfta_disorder: Optional[int] = None, max_hfta_disorder: Optional[int] = None,
              compiled: Optional[CompiledQuerySet] = None, interfaces: Any = None,
              out_of_order: Optional[Mapping[str, float]] = None,
              latency: Optional[Mapping[str, float]] = None,
              skew: Optional[Mapping[tuple[str, str], tuple[float, float]]] = None,
              heartbeat_timeout: Optional[float] = None, pack_partials: bool = True,
              ip_format: str = "text", functions: Sequence[str] = (), udf: Sequence[str] = (),
              time_ordered: bool = True, temporal: Optional[Mapping[str, str]] = None,
              ip: Sequence[str] = ()) -> Any:
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
    pyarrow computes them as Spark does (gsqlc.spark.catalyst).
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
    docstring of gsqlc.spark.streaming).  pack_partials: the partials an LFTA task sends an
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
    (gsqlc.spark.owned_epochs), which needs the files -- in path order, or as listed
    -- in order of its increasing time field up to its disorder; a source
    out of order beyond that fails the job saying where.  False: partials
    are shuffled to the HFTA, right whatever the order.

    files may be query text itself (a str holding a SELECT or MERGE, as
    gsqlc.compile takes it).  Without schema=, each source's DataFrame is
    also a STREAM of its name whose fields are its columns (gsqlc.sql's
    rule: `FROM events` reads sources={"events": df}), beside the packet
    schema; temporal and ip name its temporal and address columns as in
    gsqlc.sql."""

    streams = {}
    if schema is None and compiled is None:
        schema = [str(packet_schema_path())]
        streams = dataframe_streams(dict(sources or {}), temporal, ip)
    elif temporal or ip:
        raise UsageError("temporal= and ip= describe the sources' columns when the schema "
                         "comes from them: give them without schema= (or declare the columns "
                         "in the schema file)")
    prepared = _prepare_run(
        files, schema, dict(sources or {}), output, params, compiled=compiled,
        # A Spark task pre-aggregates a whole partition (millions of records):
        # a larger, 4-way table ejects far fewer partials into the shuffle (on
        # 65,536 groups a minute: 2^20 slots direct-mapped eject 2.2 partials per
        # group and epoch, 2^19 slots 4-way 1.01) and, denser, misses the cache
        # less.
        compile_options=dict(library_paths=library_paths, lfta_table_size=lfta_table_size,
                             lfta_table_ways=lfta_table_ways,
                             max_lfta_disorder=max_lfta_disorder,
                             max_hfta_disorder=max_hfta_disorder,
                             functions=functions, udf=udf,
                             streams=streams or None, temporal=temporal if streams else None,
                             ip=ip if streams else ()),
        interfaces=interfaces, out_of_order=out_of_order, latency=latency, skew=skew,
        heartbeat_timeout=heartbeat_timeout, heartbeat_interval=heartbeat_interval,
        strings=strings, ip_format=ip_format, on_malformed=on_malformed)
    digest = ship_library(spark.sparkContext, prepared.compiled.compiled.library)
    if any(df.isStreaming for df in prepared.sources.values()):
        min_watermark_policy(spark)
    settings = SparkSettings(strings=strings, partitions=partitions, direct_files=direct_files,
                             on_malformed=on_malformed, pack_partials=pack_partials,
                             time_ordered=time_ordered)
    planner = SparkPlanner(spark, prepared, settings, digest, MalformedRows(spark.sparkContext))
    out = planner.plan()
    if ip_format == "text":
        out = ip_text_columns(out, planner.splan.node(prepared.output).output)
    out.gsqlc = planner.malformed
    return out


def dataframe_streams(sources: Mapping[str, Any], temporal: Optional[Mapping[str, str]],
                      ip: Sequence[str]) -> dict[str, Any]:
    """The Arrow schemas of the sources' DataFrames (an interface set's
    first), by source name, for gsqlc.compile's streams=: those GSQL can
    hold, and every one temporal or ip names (its error raised)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    from ..semantics.from_data import stream_declaration
    named = set(temporal or {}) | set(ip)
    out = {}
    for name, v in sources.items():
        df = v[0] if isinstance(v, list) else v
        if not hasattr(df, "schema"):
            continue        # _prepare_run says what a source must be
        schema = to_arrow_schema(df.schema, timezone="UTC")
        mine = named & set(schema.names)
        try:
            stream_declaration(name, schema, {c: o for c, o in (temporal or {}).items()
                                              if c in mine}, [c for c in ip if c in mine])
        except UsageError:
            if mine:
                raise
            continue        # read through a schema's PROTOCOL (the packet schema's) instead
        out[name] = schema
    return out
