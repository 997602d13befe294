"""run_query over streaming DataFrames: the plan runs per micro-batch, and
aggregations over a stream are completed by Spark's own stateful
aggregation with a watermark on the temporal key (streaming_aggregate).

Declared time bounds ("Flexible Time Management in Data Stream Systems",
Srivastava and Widom, PODS 2004; runtime/interfaces.py) become per-source watermarks.
They come as for CompiledQuerySet.run: the interfaces file (compile's
interfaces=, or run_query's) and the keywords out_of_order=, latency=,
skew=, heartbeat_timeout=.

    out = run_query(spark, ["j.gsql"], schema="schema.txt", output="j",
                    sources={"eth0": s0, "eth1": s1},    # streaming DataFrames
                    out_of_order={"eth1": 25})           # B_11 = 25 s
    # GROUP BY time/10 (w = 10), the plan's M = 3 epochs: eth0's partials are
    # watermarked 3 epochs behind their latest, eth1's ceil(25/10) + 1 = 4

  * out_of_order.  Every LFTA reads one source (an interface, or one member
    of a set); the temporal column of its output, as seconds plus one (EPOCH_COL),
    is that source's event time, under its own withWatermark(EPOCH_COL,
    delay) with delay = max(M, ceil(B / w) + 1) units of the column: B the
    interface's out_of_order, counted in units of its time field (a
    DataFrame column has no other unit; EPOCH_COL reads them as seconds), w
    the epoch width (the column is `field / w`, else w = 1:
    planner.order.epochs_spanning) and M what the plan needs -- the disorder
    of the aggregation over the source, of those reading a merge, of those
    feeding a join.  A source's watermark is the latest event time it
    showed in earlier micro-batches less the delay; Spark counts for sure
    a row less than the delay behind that latest time and may drop a later
    one (numRowsDroppedByWatermark).  A record up to B behind its
    interface's latest makes a partial at most ceil(B / w) epochs behind,
    less than the delay: none is lost.  (The runtime's option
    out_of_order:NAME is not passed to the LFTAs: their heartbeats only
    move the watermark, which the data rows move as far.)
  * Skew bounds B_ab.  Spark event time has no per-pair bound; its query
    watermark is the MIN of the sources' (spark.sql.streaming.
    multipleWatermarkPolicy = min, the default: run_query sets it and
    refuses max, which would drop the lagging source's rows), so a source
    behind the others holds every epoch open until it moved past it, and
    nothing it sends within its own bound is dropped.  What is lost: with
    B_ab gsqlc's heartbeat generator may advance b from a's timestamps (less
    delta_ab, t_ab after) while b is silent; Spark waits for b's own data.
  * latency, arrival, max_skew and [heartbeats] timeout are wall-clock
    notions an event-time watermark cannot take: ignored with one warning
    (a silent source delays results, it drops none).  The estimators
    ([heartbeats] estimate other than "given", horizon, window, alpha) are
    refused: they learn bounds from the arrival of each record in gsqlc's
    input manager, which a Spark micro-batch does not expose; declare the
    bounds instead.
"""
from __future__ import annotations

from typing import Any, Mapping, Optional, Protocol

from ..errors import SparkQueryError
from ..planner.nodes import HftaAggregate, HftaFilterJoin, HftaJoin, HftaMerge, LftaNode
from ..planner.order import epochs_spanning
from ..planner.plan import Plan
from ..semantics.bound import FieldRef, GroupRef
from ..semantics.model import StreamDef
from .stages import HftaStage, Stage, TaggedHftaStage
from .types import EPOCH_COL, HEARTBEAT_COL

WATERMARK_POLICY = "spark.sql.streaming.multipleWatermarkPolicy"


class MapStage(Protocol):
    """The planner's df.mapInArrow of a stage computing node's output."""

    def __call__(self, df: Any, node: Any, cls: type[Stage], /, **fields: Any) -> Any: ...


def plain_column(e: Any) -> Optional[str]:
    """The column an expression reads when it is just that column."""
    return e.name if isinstance(e, FieldRef) else None


def side_columns(i: int, sd: StreamDef) -> tuple[list[str], list[str]]:
    """The columns of input i of a join in a tagged union (renamed
    __i_<name>), and their names in the stream."""
    cols = [c.name for c in sd.columns]
    return [f"__{i}_{c}" for c in cols], cols


def with_epoch(d: Any, col: str, disorder: int = 1) -> Any:
    """d with EPOCH_COL, the value of its temporal column `col` as seconds,
    under a watermark `disorder` epochs (units of col) behind the latest
    seen: Spark releases state at or below the watermark, so an epoch is
    released once an epoch `disorder` later was seen (data or heartbeat
    rows) -- `disorder` epochs are open at once, as max_hfta_disorder
    keeps them -- and drops rows older than the watermark.  The epochs start one second after
    Spark's zero: a stream's watermark starts at 0 and Spark drops rows at
    or below it, so an epoch 0 (times from 0) would be dropped whole."""
    from pyspark.sql import functions as F
    return d.withColumn(EPOCH_COL, F.timestamp_seconds(F.col(col).cast("long") + 1)) \
            .withWatermark(EPOCH_COL, f"{disorder} seconds")


def _readers_disorder(plan: Plan, stream: str) -> int:
    """The epochs the aggregations reading `stream` keep open (1: none reads it)."""
    return max((r.disorder for r in plan.consumers(stream) if isinstance(r, HftaAggregate)),
               default=1)


def watermark_delay(node: Any, col: str, epochs: int, out_of_order: Mapping[str, float]) -> int:
    """The watermark delay, in units of column `col`, of the stream `node`
    makes when it is an LFTA (of one source): the plan's `epochs`, or more
    if the interface's declared out_of_order bound B needs it -- a record B
    behind its interface's latest makes a row of col (`field / w`, else w =
    1) at most ceil(B / w) epochs behind, and Spark counts for sure only a
    row less than the delay behind (module docstring)."""
    bound = out_of_order.get(node.iface) if isinstance(node, LftaNode) else None
    if not bound:
        return epochs
    e = dict(node.select)[col]
    if isinstance(e, GroupRef):
        e = node.group_by[e.index][1]
    return max(epochs, epochs_spanning([e], bound))


def min_watermark_policy(spark: Any) -> None:
    """Spark's watermark over several watermarked inputs is the MIN of
    theirs, so a lagging source holds epochs open: set it so explicitly;
    'max' would drop the lagging source's rows, and is refused."""
    policy = spark.conf.get(WATERMARK_POLICY, None) or "min"
    if policy.lower() != "min":
        raise SparkQueryError(
            f"{WATERMARK_POLICY} is {policy!r}: over streaming DataFrames gsqlc needs 'min' "
            "(the default), or rows of a source behind the others are dropped as late")
    spark.conf.set(WATERMARK_POLICY, "min")


def _release_per_epoch(marked: Any, group_cols: list[str], cols: list[str]) -> Any:
    """The data rows (columns `cols`) of a watermarked stream, gathered in
    Spark state per group_cols (EPOCH_COL first) and released, once, when
    the watermark passes their epoch; heartbeat rows only move the
    watermark."""
    from pyspark.sql import functions as F
    gathered = (marked.groupBy(*group_cols)
                .agg(F.collect_list(F.when(~F.col(HEARTBEAT_COL),
                                           F.struct(*[F.col(c) for c in cols])))
                     .alias("__rows")))
    return gathered.select(F.explode("__rows").alias("__r")).select("__r.*")


def streaming_merge(n: HftaMerge, plan: Plan, ins: list[Any],
                    out_of_order: Mapping[str, float]) -> Any:
    """A merge of streams (an interface set's LFTAs) per micro-batch: the
    union of its inputs, heartbeat rows kept, each input under its own
    watermark on the merge column -- the epochs its readers keep open, or
    more for its source's out_of_order -- so the query's watermark -- the
    smallest -- waits for the input that lags (a consumer's epoch closes
    only once every member moved past it)."""
    cols = [c.name for c in n.output.columns] + [HEARTBEAT_COL]
    at = cols.index(n.merge.field)
    epochs = _readers_disorder(plan, n.name)
    parts = [with_epoch(d.toDF(*cols), n.merge.field,
                        watermark_delay(plan.node(s), sd.columns[at].name, epochs, out_of_order))
             for s, sd, d in zip(n.inputs, n.input_defs, ins)]
    u = parts[0]
    for d in parts[1:]:
        u = u.unionByName(d)
    return u      # EPOCH_COL stays: the watermarked column an aggregation groups on


def _epoch_source(plan: Plan, j: HftaJoin, side: int, with_hb: set[str]) -> tuple[Any, str]:
    """For side `side` of streaming join j: the aggregation feeding it and
    the temporal column of that aggregation's LFTA its epochs are, or a
    SparkQueryError saying which condition fails."""
    q = j.query.name
    a = plan.node(j.inputs[side])
    t = plain_column(j.join.time[side])
    why = None
    if not isinstance(a, HftaAggregate) or a.inputs[0] not in with_hb or \
            not isinstance(plan.node(a.inputs[0]), LftaNode):
        why = (f"its input {j.inputs[side]} is not an aggregation over a PROTOCOL of one "
               "interface")
    else:
        sel = dict(a.select)
        g = sel.get(t) if t else None
        key = a.group_by[g.index][1] if isinstance(g, GroupRef) else None
        col = plain_column(key) if key is not None else None
        in_col = a.input_defs[0].get(col) if col is not None else None
        if in_col is None or not in_col.temporal.is_temporal:
            why = (f"its temporal predicate does not read a temporal GROUP BY key of "
                   f"{j.inputs[side]} that is a column of its input")
        else:
            return a, in_col.name
    raise SparkQueryError(
        f"query {q}: over streaming DataFrames a join runs per epoch, so it must equate the "
        f"temporal GROUP BY keys of two aggregations over PROTOCOL streams; {why} "
        "(run it in batch)")


def streaming_join(n: HftaJoin, plan: Plan, frames: Mapping[str, Any], with_hb: set[str],
                   map_stage: MapStage, out_of_order: Mapping[str, float]) -> Any:
    """A join of two aggregations over streams, per epoch.  Both LFTAs'
    partials (with their heartbeat rows) are gathered in Spark state per
    epoch -- the common value of the temporal keys the join equates --
    under a watermark on each side (its aggregation's open epochs, or more
    for its source's out_of_order), so an epoch is released once both
    sides have moved past it (data or heartbeats) and its state dropped.
    One task then runs both aggregations and the join over the epoch's
    partials, exactly as in batch mode (outer rows included)."""
    from pyspark.sql import functions as F
    q = n.query.name
    if isinstance(n, HftaFilterJoin) or n.join.band_lo or n.join.band_hi:
        raise SparkQueryError(f"query {q}: over streaming DataFrames only joins with a "
                              "temporal equality run (run band and filter joins in batch)")
    sides = [_epoch_source(plan, n, i, with_hb) for i in (0, 1)]
    lftas = [a.inputs[0] for a, _ in sides]
    if lftas[0] == lftas[1]:
        raise SparkQueryError(f"query {q}: over streaming DataFrames the two sides of a join "
                              "must read different streams (run a self-join in batch)")
    tag = "__side"
    parts, names = [], []
    for i, ((a, tcol), lf) in enumerate(zip(sides, lftas)):
        renamed, cols = side_columns(i, a.input_defs[0])
        names.append((renamed, cols))
        side = frames[lf].select(*[F.col(c).alias(r) for c, r in zip(cols, renamed)],
                                 F.col(HEARTBEAT_COL), F.lit(i).alias(tag))
        # a watermark per side: the query's is the smaller of the two
        parts.append(with_epoch(side, f"__{i}_{tcol}",
                                watermark_delay(plan.node(lf), tcol, a.disorder, out_of_order)))
    u = parts[0].unionByName(parts[1], allowMissingColumns=True)
    released = _release_per_epoch(u, [EPOCH_COL], [c for r, _ in names for c in r] + [tag])
    return map_stage(released, n, TaggedHftaStage, streams=lftas, tag_col=tag,
                     side_cols=[r for r, _ in names], stream_cols=[c for _, c in names],
                     sort_cols=[t for _, t in sides])


def streaming_aggregate(n: HftaAggregate, d: Any, source: Any, map_stage: MapStage,
                        out_of_order: Mapping[str, float]) -> Any:
    """An HFTA aggregation over a stream, per micro-batch.  Spark's stateful
    aggregation gathers the input rows of each (epoch, group key) with a
    watermark on the temporal key: a group is released, and its state
    dropped, once a later epoch has been seen -- from data or from the
    LFTAs' heartbeats, which arrive as rows flagged __heartbeat (so records
    the LFTA's predicate rejected still advance time); the watermark is
    n.disorder epochs behind, or more for its source's out_of_order.  The
    HFTA then runs over the released rows, ordered on the temporal key, and
    computes the groups exactly as in batch mode (its own folds, HAVING,
    SELECT)."""
    q = n.query.name
    in_def = n.input_defs[0]
    cols = [c.name for c in in_def.columns]
    keys = [k for k in (plain_column(e) for _, e in n.group_by) if k is not None]
    tkeys = [k for k in keys if _is_temporal(in_def, k)]
    if not tkeys:
        raise SparkQueryError(f"query {q}: aggregation over a streaming DataFrame needs a "
                              "temporal GROUP BY key that is a column of its input (its epochs "
                              "become the watermark)")
    if EPOCH_COL in d.columns:
        # a streaming merge's output: its inputs' watermarks (Spark lets no
        # operator redefine them) are on the merge column's epochs
        merge = source.merge if isinstance(source, HftaMerge) else None
        if merge is None or merge.field != tkeys[0]:
            raise SparkQueryError(
                f"query {q}: over a streaming merge the aggregation's temporal GROUP BY key "
                f"must be the merge column {merge.field if merge else '?'} (got {tkeys[0]})")
        marked = d
    else:
        marked = with_epoch(d, tkeys[0],
                            watermark_delay(source, tkeys[0], n.disorder, out_of_order))
    released = _release_per_epoch(marked, [EPOCH_COL, *keys], cols)
    return map_stage(released, n, HftaStage, streams=[n.inputs[0]], stream_cols=[cols],
                     sort_cols=[tkeys[0]])


def _is_temporal(stream: StreamDef, col: str) -> bool:
    c = stream.get(col)
    return c is not None and c.temporal.is_temporal
