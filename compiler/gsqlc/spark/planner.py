"""The driver's side of run_query: the preparation of a run (its options,
bindings and time bounds checked: _prepare_run), and the planning of the
Spark stages that run the compiled plan over the sources' DataFrames
(SparkPlanner: one frame per stream of the plan, made by a stage of
stages.py, a shuffle, a union or Spark's streaming state)."""
from __future__ import annotations

import dataclasses
import os
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, NamedTuple, Optional, Sequence

from ..errors import SparkQueryError, UsageError
from ..planner.nodes import HftaAggregate, HftaJoin, HftaMerge, HftaSelect, LftaNode
from ..planner.plan import Plan
from ..runtime import session
from ..runtime.arrow_types import check_ip_format, field_column
from ..runtime.bindings import check_params, set_members
from ..runtime.interfaces import DEFAULT_IFACE, Interfaces
from ..semantics.bound import FieldRef
from ..semantics.model import MergeInfo, StreamDef
from ..semantics.types import Temporal
from . import storage
from .readers import DirectFiles, MalformedRows
from .scans import direct_scan, plain_scan_format
from .stages import (
    CsvLftaStage,
    FilesLftaStage,
    FileUnits,
    FiniteLftaStage,
    HftaStage,
    LftaStage,
    OwnedEpochs,
    OwnedEpochsStage,
    PackedHftaStage,
    Packing,
    Stage,
    TaggedHftaStage,
)
from .streaming import (
    plain_column,
    side_columns,
    streaming_aggregate,
    streaming_join,
    streaming_merge,
    watermark_delay,
)
from .task import PACKED_SCHEMA, packable_type
from .types import END_COL, EPOCH_COL, HEARTBEAT_COL, arrow_schema_of, spark_schema

# ============================================================ the run's preparation
#
# _prepare_run is the one place run_query checks its options, bindings,
# parameters, output and time bounds, and compiles the query set, with the
# session the command line and CompiledQuerySet.run prepare their runs with
# (gsqlc.runtime.session); the stages bind the DataFrames themselves.


@dataclass
class PreparedRun:
    """A run checked and compiled: the query set, the interfaces its
    sources bind, the parameters, the output stream, the runtime options,
    and the DataFrame of each interface (or member of a set)."""
    compiled: Any                  # api.CompiledQuerySet
    ifaces: Interfaces
    params: dict[str, str]
    output: str
    options: dict[str, str]
    sources: dict[str, Any]


def _prepare_run(files: Sequence[str], schema: Any, sources: Mapping[str, Any],
                 output: Optional[str], params: Optional[Mapping[str, Any]], *,
                 compiled: Any, compile_options: Mapping[str, Any], interfaces: Any,
                 out_of_order: Optional[Mapping[str, float]],
                 latency: Optional[Mapping[str, float]],
                 skew: Optional[Mapping[tuple[str, str], tuple[float, float]]],
                 heartbeat_timeout: Optional[float], heartbeat_interval: Any,
                 strings: str, ip_format: str, on_malformed: str) -> PreparedRun:
    """The run's preparation (see above): a UsageError, SparkQueryError or
    QueryError for anything wrong before a Spark job starts."""
    from .. import api
    if strings not in ("str", "bytes"):
        raise UsageError(f"strings must be 'str' or 'bytes', got {strings!r}")
    check_ip_format(ip_format)
    if on_malformed not in ("count", "fail"):
        raise UsageError(f"on_malformed must be 'count' or 'fail', got {on_malformed!r}")
    for name, v in sources.items():
        for df in (v if isinstance(v, list) else [v]):
            if not hasattr(df, "mapInArrow"):
                raise SparkQueryError(f"source {name}: expected a pyspark DataFrame, got "
                                      f"{type(df).__name__}")
    bounds = session.time_bounds(out_of_order, latency, skew, heartbeat_timeout)
    cqs = compiled or api.compile(files, schema, interfaces=interfaces, **compile_options)
    # the DataFrames are bound by the stages: placeholders stand for them here
    settled = session.settle(session.RunRequest(
        sources=[(name, object()) for name, v in sources.items()
                 for _ in (v if isinstance(v, list) else [v])],
        interfaces_file=os.fspath(interfaces) if interfaces else cqs.interfaces_file,
        bounds=bounds, params=dict(params or {}), output=output,
        options=session.RunOptions(clock="data", heartbeat_interval=heartbeat_interval)))
    ifaces, options = settled.interfaces, settled.options
    _check_time_bounds(ifaces)
    summary = cqs.compiled.queryset.summary
    str_params = {k: str(v) for k, v in (params or {}).items()}
    check_params(summary, str_params)
    output = session.choose_outputs(summary, output, several=False)[0][0]
    member_df = {}
    for name, v in sources.items():
        vals = v if isinstance(v, list) else [v]
        members = ifaces.members(name or ifaces.default) if isinstance(v, list) else [name]
        for m, df in zip(members, vals):
            member_df[m] = df
    return PreparedRun(cqs, ifaces, str_params, output, options, member_df)


def _check_time_bounds(ifaces: Interfaces) -> None:
    """The declared time bounds a Spark run cannot take (streaming.py):
    UsageError for the estimators, one warning for the wall-clock bounds."""
    hb = ifaces.heartbeats
    refused = ([f"estimate = {hb.estimate!r}"] if hb.estimate != "given" else []) + \
        [k for k in ("horizon", "window", "alpha") if getattr(hb, k) is not None]
    if refused:
        raise UsageError(f"[heartbeats] {refused[0]}: Spark runs take declared bounds only "
                         "(out_of_order becomes each source's watermark delay); remove it")
    clock = [f"{what} of {', '.join(sorted(table))}" for what, table in
             (("latency", ifaces.latency), ("arrival", ifaces.arrival),
              ("max_skew", ifaces.skews)) if table]
    if hb.timeout is not None:
        clock.append("[heartbeats] timeout")
    if clock:
        # stacklevel: the caller of run_query (run_query, _prepare_run, here)
        warnings.warn(f"gsqlc.spark: {'; '.join(clock)}: wall-clock bounds, which Spark's "
                      "event-time watermark cannot take, are ignored (a silent source holds "
                      "the results back; no row is dropped for it)", stacklevel=4)


# ============================================================ the plan in Spark


def spark_plan(plan: Plan, ifaces: Interfaces) -> tuple[Plan, dict[str, tuple[str, str]]]:
    """The plan as Spark runs it, and for each LFTA node of it the LFTA of
    the library it runs (name, interface).  The library runs an LFTA over an
    interface set once per member and merges them itself; in Spark each
    member is a DataFrame of its own, so an LFTA over a set of k >= 2
    members becomes k nodes "<lfta>@<member>" (iface: the member, whose
    DataFrame they read) and a merge node named after the LFTA on its
    temporal column -- a union, or per micro-batch with watermarks when
    streaming.  An LFTA of the default interface reads the DataFrame the
    bindings make the default."""
    from ..runtime.plan_summary import summarize
    lftas = {n.name: n for n in summarize(plan).lftas}
    nodes: list[Any] = []
    runs: dict[str, tuple[str, str]] = {}   # node name -> (library LFTA, its interface)
    for n in plan.nodes:
        if not isinstance(n, LftaNode):
            nodes.append(n)
            continue
        lib_iface = n.iface or DEFAULT_IFACE
        target, members = set_members(lftas[n.name], ifaces)
        if len(members) < 2:
            nodes.append(dataclasses.replace(n, iface=members[0]))
            runs[n.name] = (n.name, lib_iface)
            continue
        merge_col = n.set_merge_column
        assert merge_col is not None   # set_members refused the set otherwise
        copies = []
        for m in members:
            cname = f"{n.name}@{m}"
            copies.append(dataclasses.replace(n, name=cname, iface=m,
                                              output=StreamDef(cname, n.output.columns)))
            runs[cname] = (n.name, lib_iface)
        nodes += copies
        nodes.append(HftaMerge(name=n.name, query=n.query, output=n.output,
                               inputs=tuple(c.name for c in copies),
                               input_defs=tuple(c.output for c in copies),
                               params=n.params, merge=MergeInfo(merge_col.name, 0.0),
                               note=f"merges the LFTAs of interface set [{target}]"))
    return Plan(nodes, plan.queries), runs


def _dry_run(library: Any, node: LftaNode, arrow_schema: Any, options: dict[str, str],
             params: dict[str, str], lib_lfta: tuple[str, str]) -> None:
    """Feed the LFTA an empty table of the source's Arrow schema on the
    driver: the runtime checks the columns against the PROTOCOL fields it
    reads (by name and type) exactly as it will on the executors, so a
    mismatch is raised here, before any Spark job starts."""
    from ..runtime.runner import run_library
    name, iface = lib_lfta
    res = run_library(library, [], [], options, params,
                      arrow_sources={iface: arrow_schema.empty_table().to_reader()},
                      arrow_sinks=[(name, lambda s, b: True)])
    if res.status != 0:
        raise SparkQueryError(f"source {node.iface} of query {node.query.name}: {res.error}")


def _owned_epochs(n: HftaAggregate, lfta: Any, files: DirectFiles, columns: list[str],
                  out_of_order: Mapping[str, float]) -> Optional[OwnedEpochs]:
    """How aggregation n over LFTA `lfta`, whose tasks read `files` (as
    `columns`), runs in one stage (owned_epochs.py), or None when it
    cannot: its epoch is not integer arithmetic of one source field, a
    computed source computes that field (not a file column), or the
    interface's declared out_of_order bound needs more epochs than n keeps
    open.  The disorder allowed is n's open epochs (max_hfta_disorder)
    less one: the task's HFTA counts every row that late."""
    import pyarrow.compute as pc

    from .owned_epochs import epoch_key
    key = epoch_key(n, lfta)
    if key is None:
        return None
    column = field_column(columns, key.column)
    if column is None:
        return None
    key = dataclasses.replace(key, column=column)
    if out_of_order.get(lfta.iface):
        # a declared bound wider than the epochs the aggregation keeps open
        # would pass rows the task's HFTA then drops as late: shuffle them
        e = next(n.group_by[i][1] for i in n.epoch_indices
                 if n.group_by[i][1].info.temporal is Temporal.INCREASING)
        if not isinstance(e, FieldRef) or \
                watermark_delay(lfta, e.name, n.disorder, out_of_order) > n.disorder:
            return None
    stats: Optional[str] = key.column
    if files.computed is not None:
        # the key's column must be a file's: without its statistics the
        # tasks would read the neighbours' keys to place the boundaries,
        # which costs what the stage saves (time + 1 at 65,536 pairs: 1.07-
        # 1.25 s one stage, 1.01-1.19 s shuffled)
        expr = dict(files.computed.columns).get(key.column)
        stats = next((f for f in sorted(files.computed.reads)
                      if expr is not None and expr.equals(pc.field(f))), None)
        if stats is None:
            return None
    return OwnedEpochs(key, max(0, n.disorder - 1), stats, lfta.iface)


def _first_increasing(stream: StreamDef) -> Optional[str]:
    for c in stream.columns:
        if c.temporal is Temporal.INCREASING:
            return c.name
    for c in stream.columns:
        if c.temporal.is_temporal:
            return c.name
    return None


def ip_text_columns(df: Any, stream: StreamDef) -> Any:
    """df with the IP and IPV6 columns of `stream` (LongType, 16-byte
    BinaryType) in GSQL's text forms, by Spark's own expressions (no
    Python pass): dotted quad; eight groups of four lower-case hex digits."""
    from pyspark.sql import functions as F

    from ..semantics.types import Type
    kinds = {c.name: c.type for c in stream.columns if c.type in (Type.IP, Type.IPV6)}
    if not kinds:
        return df
    cols = []
    for name in df.columns:
        c = F.col(name)
        if kinds.get(name) == Type.IP:
            c = F.concat_ws(".", *[F.shiftrightunsigned(c, k).bitwiseAND(255).cast("string")
                                   for k in (24, 16, 8, 0)])
        elif kinds.get(name) == Type.IPV6:
            c = F.regexp_replace(F.lower(F.hex(c)), "(.{4})(?!$)", "$1:")
        cols.append(c.alias(name) if name in kinds else c)
    return df.select(*cols)


# ============================================================ the planner


@dataclass
class SparkSettings:
    """run_query's keywords that shape the Spark stages (see run_query)."""
    strings: str = "str"
    partitions: Optional[int] = None
    direct_files: bool = True
    on_malformed: str = "count"
    pack_partials: bool = True
    time_ordered: bool = True


class _FilesLfta(NamedTuple):
    """An LFTA stage over Parquet units: its frame of unit ids, its
    interface, the units and the files they are of."""
    units: Any
    iface: str
    files: FileUnits
    direct: DirectFiles


# an LFTA over rows or files whose output an aggregation may take packed:
# its frame with the output packed on (key columns, buckets)
Packer = Callable[[list[str], int], Any]


@dataclass
class SparkPlanner:
    """Plans the stages of a prepared run: `frames` holds the DataFrame of
    each stream planned so far, `stages` every stage a frame was made with
    (an LFTA feeding a packed aggregation has two: its packed frame is the
    one that runs)."""
    spark: Any
    run: PreparedRun
    settings: SparkSettings
    digest: str                      # of the library Spark distributes
    malformed: MalformedRows
    frames: dict[str, Any] = field(default_factory=dict)
    stages: list[Stage] = field(default_factory=list)
    packers: dict[str, Packer] = field(default_factory=dict)
    with_hb: set[str] = field(default_factory=set)   # streams whose frame has heartbeat rows
    # LFTA stream whose tasks read Parquet files -> how: an aggregation over
    # it may run in its stage instead (_owned_epochs)
    one_stage: dict[str, _FilesLfta] = field(default_factory=dict)
    splan: Plan = field(init=False)    # the plan as Spark runs it (spark_plan)
    lib_lftas: dict[str, tuple[str, str]] = field(init=False)   # ... its LFTAs' library runs

    def __post_init__(self) -> None:
        self.splan, self.lib_lftas = spark_plan(self.run.compiled.compiled.queryset.plan,
                                                self.run.ifaces)

    def plan(self) -> Any:
        """The frames of every stream the output needs; the output's frame."""
        needed = {n.name for n in self.splan.upstream([self.run.output])}
        for n in self.splan.nodes:
            if n.name in needed:
                self.frames[n.name] = self._frame(n)
        return self.data_rows(self.run.output)

    def _frame(self, n: Any) -> Any:
        if isinstance(n, LftaNode):
            return self._lfta(n)
        streaming = any(self.frames[s].isStreaming for s in n.inputs)
        if isinstance(n, HftaAggregate) and streaming and n.inputs[0] in self.with_hb:
            return streaming_aggregate(n, self.frames[n.inputs[0]],
                                       self.splan.node(n.inputs[0]), self._map_node,
                                       self.run.ifaces.out_of_order)
        if isinstance(n, HftaMerge) and streaming and all(s in self.with_hb for s in n.inputs):
            self.with_hb.add(n.name)
            return streaming_merge(n, self.splan, [self.frames[s] for s in n.inputs],
                                   self.run.ifaces.out_of_order)
        if isinstance(n, HftaMerge):
            return self._union(n)
        if isinstance(n, HftaSelect):
            return self._map_node(self.data_rows(n.inputs[0]), n, HftaStage,
                                  streams=[n.inputs[0]],
                                  stream_cols=[[c.name for c in n.input_defs[0].columns]])
        if isinstance(n, HftaAggregate):
            if streaming:
                raise SparkQueryError(
                    f"query {n.query.name}: over a streaming DataFrame the aggregation must "
                    "read the partials of an LFTA (a query over a PROTOCOL); aggregating "
                    "another query's output is not supported yet in streaming mode")
            return self._aggregate(n)
        if isinstance(n, HftaJoin):
            if streaming:
                return streaming_join(n, self.splan, self.frames, self.with_hb, self._map_node,
                                      self.run.ifaces.out_of_order)
            return self._join(n)
        raise SparkQueryError(f"query {n.query.name}: a {n.kind} node cannot run in Spark yet")

    # ------------------------------------------------ making frames

    def _map(self, df: Any, cls: type[Stage], schema: Any, /, **fields: Any) -> Any:
        """df through a stage of class cls whose output rows are of Spark
        `schema` (fields: the class's own, and any common one to override)."""
        r, s = self.run, self.settings
        stage = cls(**{"digest": self.digest, "options": r.options, "params": r.params,
                       "strings": s.strings, "on_malformed": s.on_malformed,
                       "malformed": self.malformed, **fields})
        self.stages.append(stage)
        return df.mapInArrow(stage, schema)

    def _map_node(self, df: Any, node: Any, cls: type[Stage], /, **fields: Any) -> Any:
        """df through a stage of class cls computing node's output."""
        out = spark_schema(node.output, self.settings.strings)
        return self._map(df, cls, out, output=node.name, out_schema=arrow_schema_of(out),
                         **fields)

    def data_rows(self, stream: str) -> Any:
        """A stream's frame without heartbeat rows (for consumers that only
        take data)."""
        from pyspark.sql import functions as F
        d = self.frames[stream]
        if stream not in self.with_hb:
            return d
        return d.where(~F.col(HEARTBEAT_COL)).drop(HEARTBEAT_COL, EPOCH_COL)

    def _shuffle(self, d: Any, cols: list[str]) -> Any:
        """d hash-partitioned on cols (one partition without keys): into
        `partitions`, or else as Spark shuffles its own aggregations
        (spark.sql.shuffle.partitions, which adaptive execution may coalesce
        when the partials are small: a Python task less per partition)."""
        from pyspark.sql import functions as F
        if not cols:
            return d.repartition(1)
        keys = [F.col(c) for c in cols]
        p = self.settings.partitions
        return d.repartition(p, *keys) if p else d.repartition(*keys)

    def _packer(self, source: Any, cls: type[LftaStage], fields: dict[str, Any]) -> Packer:
        """For an LFTA run by mapInArrow over `source`: a function of (key
        columns, buckets) giving the same LFTA's frame with its output packed
        for the shuffle into an aggregation (task.pack_partials)."""
        def packed(cols: list[str], buckets: int) -> Any:
            return self._map(source, cls, PACKED_SCHEMA, **fields, pack=Packing(cols, buckets))
        return packed

    # ------------------------------------------------ LFTAs

    def _source_of(self, n: LftaNode) -> Any:
        """The DataFrame LFTA n reads, checked against its PROTOCOL."""
        df = self.run.sources.get(n.iface)
        if df is None:
            raise SparkQueryError(
                f"interface '{n.iface}' is not bound: query {n.query.name} reads "
                f"{n.protocol.name}; pass sources={{'{n.iface}': dataframe}}")
        if (n.protocol.source_kind or "csv") != "csv":
            raise SparkQueryError(
                f"query {n.query.name} reads PROTOCOL {n.protocol.name}, whose fields come "
                "from packets; in Spark, read captures with gsqlc.read_pcap and query them "
                "through PROTOCOL PACKETS of gsqlc.PACKET_TABLE_SCHEMA")
        _dry_run(self.run.compiled.compiled.library, n, arrow_schema_of(df.drop(END_COL).schema),
                 self.run.options, self.run.params, self.lib_lftas[n.name])
        return df

    def _direct_files(self, n: LftaNode, df: Any) -> Optional[DirectFiles]:
        """The files LFTA n's tasks read themselves, if they can."""
        if not self.settings.direct_files:
            return None
        files = direct_scan(df)
        if files is None and plain_scan_format(df) == "csv":
            # stacklevel: the caller of run_query (run_query, plan, _frame,
            # _lfta, here)
            warnings.warn(
                f"gsqlc.spark: source {n.iface} is read by Spark's CSV reader and its rows "
                "sent to Python, which costs more than gsqlc's query; "
                "gsqlc.spark.read_csv(spark, paths, schema) parses the files in the tasks "
                "(5-7x Spark SQL in bench/spark_bench.py; malformed rows are counted and "
                "skipped where Spark's reader keeps them as nulls)", stacklevel=6)
        return files

    def _lfta(self, n: LftaNode) -> Any:
        df = self._source_of(n)
        lib_name, lib_iface = self.lib_lftas[n.name]
        out = spark_schema(n.output, self.settings.strings)
        lfta: dict[str, Any] = dict(iface=lib_iface, output=lib_name,
                                    out_schema=arrow_schema_of(out))
        files = self._direct_files(n, df)
        if files is not None:
            return self._files_lfta(n, files, list(df.columns), lfta, out)
        if df.isStreaming:
            return self._streaming_lfta(n, df, lfta, out)
        self.packers[n.name] = self._packer(df, LftaStage, lfta)
        return self._map(df, LftaStage, out, **lfta)

    def _files_lfta(self, n: LftaNode, files: DirectFiles, columns: list[str],
                    lfta: dict[str, Any], out: Any) -> Any:
        # One unit per core: each task of a stage costs Spark ~40 ms (a
        # Python worker's hand-over) whatever its work, so a second wave of
        # tasks costs more than it balances.  The units travel with the
        # stage; a partition holds their ids (spark.range: made in the JVM,
        # nothing pickled per row).
        tasks = storage.plan_pieces(files.files, self.spark.sparkContext.defaultParallelism)
        if files.csv is not None:
            tasks = storage.split_csv_pieces(tasks, dict(files.files))
        units = self.spark.range(len(tasks), numPartitions=max(1, len(tasks)))
        fields = dict(lfta, files=FileUnits(files.filesystem, tasks, columns, files.computed))
        cls: type[LftaStage] = FilesLftaStage
        if files.csv is not None:
            cls, fields["csv"] = CsvLftaStage, files.csv
        elif lfta["output"] == n.name:
            self.one_stage[n.name] = _FilesLfta(units, lfta["iface"], fields["files"], files)
        self.packers[n.name] = self._packer(units, cls, fields)
        return self._map(units, cls, out, **fields)

    def _streaming_lfta(self, n: LftaNode, df: Any, lfta: dict[str, Any], out: Any) -> Any:
        # per micro-batch; the LFTA's heartbeats (one at the end of each
        # micro-batch at least) come along as flagged rows and become the
        # watermark of the aggregation downstream
        from pyspark.sql import types as T
        hb_schema = T.StructType(out.fields +
                                 [T.StructField(HEARTBEAT_COL, T.BooleanType(), False)])
        fields = dict(lfta, out_schema=arrow_schema_of(hb_schema),
                      options={**self.run.options, "arrow_heartbeats": "1",
                               "final_heartbeat": "1"})
        self.with_hb.add(n.name)
        if END_COL in df.columns:   # read_stream(finite=True): an end row comes
            temporal = [c.name for c in n.output.columns if c.temporal.is_temporal]
            return self._map(df, FiniteLftaStage, hb_schema, end_temporal=temporal, **fields)
        return self._map(df, LftaStage, hb_schema, **fields)

    # ------------------------------------------------ HFTAs in batch

    def _union(self, n: HftaMerge) -> Any:
        """A merge: the union of its inputs (a consumer orders it)."""
        ins = [self.data_rows(s) for s in n.inputs]
        u = ins[0]
        cols = [c.name for c in n.output.columns]
        for d in ins[1:]:
            u = u.unionByName(d.toDF(*cols)) if d.columns != cols else u.unionByName(d)
        return u.toDF(*cols)

    def _aggregate(self, n: HftaAggregate) -> Any:
        """An aggregation: in the LFTA's own tasks when they own its epochs
        (one stage), else after a shuffle of the partials on its keys --
        packed when the LFTA can pack them."""
        src = n.inputs[0]
        over = self.one_stage.get(src) if self.settings.time_ordered else None
        owned = None if over is None else _owned_epochs(
            n, self.splan.node(src), over.direct, over.files.columns,
            self.run.ifaces.out_of_order)
        if over is not None and owned is not None:
            # each LFTA task completes the epochs it owns: no shuffle, no second stage
            return self._map_node(over.units, n, OwnedEpochsStage, iface=over.iface,
                                  files=over.files, owned=owned)
        cols = [k for k in (plain_column(e) for _, e in n.group_by) if k is not None]
        tcol = _first_increasing(n.input_defs[0])
        hfta = dict(streams=[src], stream_cols=[[c.name for c in n.input_defs[0].columns]],
                    sort_cols=[tcol] if tcol else None)
        packer = self.packers.get(src) if self.settings.pack_partials else None
        in_schema = arrow_schema_of(self.frames[src].schema)
        if packer is not None and cols and all(packable_type(in_schema.field(c).type)
                                               for c in cols):
            buckets = self.settings.partitions or \
                int(self.spark.conf.get("spark.sql.shuffle.partitions"))
            return self._map_node(self._shuffle(packer(cols, buckets), ["bucket"]), n,
                                  PackedHftaStage, **hfta)
        return self._map_node(self._shuffle(self.data_rows(src), cols), n, HftaStage, **hfta)

    def _join(self, n: HftaJoin) -> Any:
        """Both inputs as one tagged DataFrame (columns of side i renamed
        __i_<name>), hash-partitioned on the join keys, each partition
        ordered on the sides' temporal columns; the task splits it back
        into the two streams."""
        from pyspark.sql import functions as F
        tag = "__side"
        sides, names = [], []
        for i, (s, sd) in enumerate(zip(n.inputs, n.input_defs)):
            renamed, cols = side_columns(i, sd)
            names.append((renamed, cols))
            sides.append(self.data_rows(s).toDF(*renamed).withColumn(tag, F.lit(i)))
        u = sides[0].unionByName(sides[1], allowMissingColumns=True)
        keycols = []
        for j, (le, ri) in enumerate(n.join.keys):
            ln, rn = plain_column(le), plain_column(ri)
            lc = n.input_defs[0].get(ln) if ln is not None else None
            rc = n.input_defs[1].get(rn) if rn is not None else None
            if lc is None or rc is None or \
                    (lc.type != rc.type and not (lc.type.is_integer and rc.type.is_integer)):
                continue
            k = f"__k{j}"
            u = u.withColumn(k, F.coalesce(F.col(f"__0_{ln}"), F.col(f"__1_{rn}")))
            keycols.append(k)
        return self._map_node(self._shuffle(u, keycols), n, TaggedHftaStage,
                              streams=list(n.inputs), tag_col=tag,
                              side_cols=[r for r, _ in names], stream_cols=[c for _, c in names],
                              sort_cols=[_first_increasing(sd) for sd in n.input_defs])
