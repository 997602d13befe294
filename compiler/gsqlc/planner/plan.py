"""Planning: AnalyzedQuerys (dependency order) -> Plan.

make_plan takes the analyzed queries of a query set and returns a Plan: its
nodes (planner/nodes.py, one class per operator kind and level) in
topological order, producers first.

Every query over a source interface is split (seed 003, "Splitting Selection
and Aggregation Queries"):
  * LFTA-safe, cheap WHERE conjuncts and the maximal LFTA-safe, cheap
    sub-expressions of the projection run in the LFTA (C, on the ring buffer);
  * the rest -- expensive functions such as str_extract_regex -- runs in an
    HFTA (C++) over the LFTA's output stream;
  * an aggregation whose WHERE, group-by keys and aggregate arguments are all
    LFTA-safe becomes an LFTA sub-aggregate in a fixed-size direct-mapped
    table (a collision ejects the resident group as a partial; DEFINE
    lfta_table_ways makes it set-associative) completed by an
    HFTA super-aggregate; otherwise the LFTA only selects and projects and the
    HFTA aggregates.
Queries over streams (other queries) are HFTAs.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, replace
from typing import Iterable, Optional, Sequence

from ..frontend import ast
from ..semantics.bound import (
    AccumRef,
    AggRef,
    ExprInfo,
    FieldRef,
    GroupRef,
    SuperAggRef,
    key,
    rebuild,
    to_text,
    walk,
)
from ..semantics.model import AggCall, AnalyzedQuery, Column, JoinInfo, MergeInfo, StreamDef
from ..semantics.types import Temporal, Type
from .nodes import (
    DEFAULT_FLUSH,
    DEFAULT_HFTA_DISORDER,
    DEFAULT_LFTA_DISORDER,
    DEFAULT_LFTA_TABLE,
    FLUSH_POLICIES,
    LFTA_TABLE_GROW_MIB,
    Accum,
    AggPlan,
    HftaAggregate,
    HftaFilterJoin,
    HftaJoin,
    HftaMerge,
    HftaNode,
    HftaSelect,
    LftaAggregate,
    LftaNode,
    LftaSelect,
    Named,
    PlanNode,
    SamplingPlan,
    fields_of,
)
from .policies import MAX_DISORDER

__all__ = ["Accum", "AggPlan", "DEFAULT_LFTA_TABLE", "MAX_DISORDER", "Plan", "PlanDefaults",
           "PlanNode", "TABLE_WAYS", "describe_expr", "make_plan", "plan_query"]


@dataclass(frozen=True)
class PlanDefaults:
    """Defaults of the plan's tunables; a query's DEFINEs win over them."""
    lfta_table_size: Optional[int] = None     # slots of an LFTA aggregation table
    lfta_table_ways: Optional[int] = None     # its associativity
    max_lfta_disorder: int = DEFAULT_LFTA_DISORDER
    max_hfta_disorder: int = DEFAULT_HFTA_DISORDER
    flush: str = DEFAULT_FLUSH


@dataclass(frozen=True)
class Plan:
    nodes: list[PlanNode]            # topological order: producers first
    queries: list[AnalyzedQuery]

    def node(self, name: str) -> PlanNode:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)

    def consumers(self, stream: str) -> list[PlanNode]:
        return [n for n in self.nodes if stream in n.inputs]

    def upstream(self, outputs: Sequence[str]) -> list[PlanNode]:
        """The nodes the streams `outputs` depend on, themselves included,
        in plan order."""
        need: set[str] = set()
        todo = list(outputs)
        while todo:
            s = todo.pop()
            if s not in need:
                need.add(s)
                todo.extend(self.node(s).inputs)
        return [n for n in self.nodes if n.name in need]


def _lfta_safe(e: ast.Expr) -> bool:
    return bool(e.info.lfta_ok and e.info.cheap)


def _fixed_size(t: Type) -> bool:
    return t is not Type.STRING


def _column(name: str, info: ExprInfo) -> Column:
    """An output column of expression info `info` (temporal or not)."""
    return Column(name, info.type, info.temporal if info.temporal.is_temporal else Temporal.NONE)


class _Pushdown:
    """Collects the LFTA output columns an HFTA needs and rewrites the HFTA's
    expressions to read them."""

    def __init__(self, q: AnalyzedQuery):
        self.q = q
        self.cols: list[Named] = []
        self._by_key: dict[tuple[object, ...], str] = {}
        self._names: set[str] = set()

    def column_for(self, e: ast.Expr, preferred: Optional[str] = None) -> str:
        k = key(e)
        if k in self._by_key:
            return self._by_key[k]
        if isinstance(e, FieldRef):
            name = e.name
        else:
            name = preferred or f"_e{len(self.cols)}"
        base, n = name, 2
        while name in self._names:
            name = f"{base}_{n}"
            n += 1
        self._names.add(name)
        self._by_key[k] = name
        self.cols.append((name, e))
        return name

    def push(self, e: ast.Expr, preferred: Optional[str] = None) -> ast.Expr:
        """Rewrite e for the HFTA: maximal LFTA-safe non-constant subtrees are
        computed by the LFTA and read back as columns of its output."""
        def fn(n: ast.Expr) -> Optional[ast.Expr]:
            if isinstance(n, (GroupRef, AggRef, AccumRef)):
                return n
            if n.info is not None and _lfta_safe(n) and not n.info.constant:
                col = self.column_for(n, preferred if n is e else None)
                return FieldRef(0, col, info=ExprInfo(n.info.type, n.info.temporal), span=n.span)
            return None
        return rebuild(e, fn)

    def stream(self, name: str) -> StreamDef:
        return StreamDef(name, [_column(n, e.info) for n, e in self.cols])


def _accums_for(aggs: list[AggCall]) -> tuple[list[Accum], list[AggPlan]]:
    accums: list[Accum] = []
    plans: list[AggPlan] = []
    for i, a in enumerate(aggs):
        if a.func.udaf is not None:
            accums.append(Accum("udaf", a.type, None, f"_a{i}", args=a.args, udaf=a.func.udaf))
            plans.append(AggPlan("udaf", (len(accums) - 1,), a.type, a.text))
            continue
        idx = []
        for comp in a.func.components:
            if comp.arg == "one":
                acc = Accum(comp.op, Type.ULLONG, None, f"_a{i}_cnt")
            elif comp.arg == "arg_float":
                acc = Accum(comp.op, Type.FLOAT, a.arg, f"_a{i}_sum")
            else:
                t = a.type
                acc = Accum(comp.op, t, a.arg, f"_a{i}")
            accums.append(acc)
            idx.append(len(accums) - 1)
        plans.append(AggPlan(a.func.final, tuple(idx), a.type, a.text))
    return accums, plans


def _define_span(q: AnalyzedQuery, name: str) -> ast.Span:
    return q.query.defines.item_spans.get(name, q.query.span)


def _lfta_table_size_given(q: AnalyzedQuery) -> Optional[str]:
    """The LFTA table size a query's DEFINE asks for, as written, or None."""
    return q.defines.get("lfta_table_size") or q.defines.get("aggregate_slots")


def _lfta_table_size(q: AnalyzedQuery, default: Optional[int]) -> int:
    v = _lfta_table_size_given(q)
    if v:
        try:
            n = int(v)
        except ValueError:
            from ..errors import QueryError
            raise QueryError(_define_span(q, "lfta_table_size"),
                             "bad-define", f"lfta_table_size must be an integer, got '{v}'")
        if n > MAX_LFTA_TABLE:
            from ..errors import QueryError
            raise QueryError(_define_span(q, "lfta_table_size"), "bad-define",
                             f"lfta_table_size must be at most {MAX_LFTA_TABLE} slots "
                             f"(2^31), got '{v}'")
        return _power_of_two(n)
    return _power_of_two(default) if default else DEFAULT_LFTA_TABLE


# The largest LFTA table: its size (a power of two) is a 32-bit unsigned
# number in the generated C.
MAX_LFTA_TABLE = 2**31


TABLE_WAYS = (1, 2, 4, 8, 16)   # the associativities an LFTA table may have


def _decimal(v: str) -> bool:
    """Whether a DEFINE value is a decimal number int() reads: ASCII digits
    only (str.isdigit also takes '²' and other digits int() refuses)."""
    return v.isascii() and v.isdigit()


def _lfta_table_ways(q: AnalyzedQuery, default: Optional[int]) -> int:
    v = q.defines.get("lfta_table_ways")
    if not v:
        return default or 1
    if not _decimal(v) or int(v) not in TABLE_WAYS:
        from ..errors import QueryError
        raise QueryError(_define_span(q, "lfta_table_ways"),
                         "bad-define", f"lfta_table_ways must be one of "
                         f"{', '.join(map(str, TABLE_WAYS))}, got '{v}'")
    return int(v)


def _disorder(q: AnalyzedQuery, name: str, default: int) -> int:
    """DEFINE max_lfta_disorder / max_hfta_disorder: epochs open at once."""
    v = q.defines.get(name)
    if not v:
        return default
    if not _decimal(v) or not 1 <= int(v) <= MAX_DISORDER:
        from ..errors import QueryError
        raise QueryError(_define_span(q, name), "bad-define",
                         f"{name} must be an integer from 1 (in order) to {MAX_DISORDER} "
                         f"(epochs of the temporal group-by open at once), got '{v}'")
    return int(v)


def _flush(q: AnalyzedQuery, default: str) -> str:
    v = q.defines.get("flush")
    if not v:
        return default
    if v.lower() not in FLUSH_POLICIES:
        from ..errors import QueryError
        raise QueryError(_define_span(q, "flush"), "bad-define",
                         f"flush must be one of {', '.join(FLUSH_POLICIES)}, got '{v}'")
    return v.lower()


def _lfta_reach(disorder: int, flush: str, hfta_disorder: int) -> tuple[int, str]:
    """The LFTA's open epochs and flush, fitted under the HFTA's bound.  The
    partials an LFTA hands on span its open epochs, and with a slow or lazy
    flush one epoch more (a closed epoch's groups trickle out while the next
    is counted and ejected by collisions): the HFTA completing them must keep
    that many open, or it would drop them as late.  Tigon's 2 and 3 fit; an
    in-order HFTA (1) makes the LFTA hand on a closed epoch at once."""
    if flush != "immediate":
        if hfta_disorder == 1:
            return 1, "immediate"
        return min(disorder, hfta_disorder - 1), flush
    return min(disorder, hfta_disorder), flush


# open epochs the planner may give an HFTA aggregation that reads a band join
# (the band's span in epochs; the HFTA operator has no fixed limit)
MAX_BAND_EPOCHS = 1024


def _power_of_two(n: int) -> int:
    size = 1
    while size < max(n, 16):
        size *= 2
    return size


def _protocol_lfta(q: AnalyzedQuery, side: int, fields: list[str],
                   where: list[ast.Expr], name: str) -> LftaSelect:
    """An LFTA that reads one FROM source of a multi-input query: it applies
    the LFTA-safe single-source conjuncts and projects the fields the HFTA
    needs, under their own names."""
    src = q.sources[side]
    proto = src.protocol
    assert proto is not None
    select: list[Named] = []
    for f in fields:
        fd = proto.fields[f]
        select.append((f, FieldRef(side, f, info=ExprInfo(fd.type, fd.temporal))))
    out = StreamDef(name, [Column(f, e.info.type, e.info.temporal) for f, e in select])
    return LftaSelect(name=name, query=q, output=out, where=tuple(where), select=tuple(select),
                      protocol=proto, iface=src.iface, params=q.params,
                      note=f"reads FROM source '{src.alias}' for the HFTA")


def _side_inputs(q: AnalyzedQuery, needed: list[list[str]], pushed: list[list[ast.Expr]]
                 ) -> tuple[list[PlanNode], tuple[str, ...], tuple[StreamDef, ...]]:
    lftas: list[PlanNode] = []
    names: list[str] = []
    defs: list[StreamDef] = []
    for i, src in enumerate(q.sources):
        if src.stream is not None:
            names.append(src.stream.name)
            defs.append(src.stream)
            continue
        lname = f"_fta_{q.name}_{i}_{src.alias}"
        node = _protocol_lfta(q, i, needed[i], pushed[i], lname)
        lftas.append(node)
        names.append(lname)
        defs.append(node.output)
    return lftas, tuple(names), tuple(defs)


def _plan_merge(q: AnalyzedQuery, merge: MergeInfo) -> list[PlanNode]:
    needed = [src.column_names() for src in q.sources]
    lftas, names, defs = _side_inputs(q, needed, [[] for _ in q.sources])
    node = HftaMerge(name=q.name, query=q, output=q.output, inputs=names, input_defs=defs,
                     params=q.params, merge=merge,
                     note=f"order-preserving merge on {merge.field}")
    return lftas + [node]


def _plan_join(q: AnalyzedQuery) -> list[PlanNode]:
    j = q.join
    assert j is not None
    exprs: list[ast.Expr] = [e for _, e in q.select] + list(j.time)
    exprs += [e for pair in j.keys for e in pair] + j.filters[0] + j.filters[1]
    needed: list[list[str]] = [[], []]
    for e in exprs:
        for n in walk(e):
            if isinstance(n, FieldRef) and n.name not in needed[n.source]:
                needed[n.source].append(n.name)
    for (side, name), (other, oname) in j.fill.items():
        for s_, n_ in ((side, name), (other, oname)):
            if n_ not in needed[s_]:
                needed[s_].append(n_)
    pushed: list[list[ast.Expr]] = [[], []]
    kept: list[list[ast.Expr]] = [[], []]
    for side in (0, 1):
        for c in j.filters[side]:
            if q.sources[side].kind == "protocol" and _lfta_safe(c):
                pushed[side].append(c)
            else:
                kept[side].append(c)
    lftas, names, defs = _side_inputs(q, needed, pushed)
    info = dataclasses.replace(j, filters=(kept[0], kept[1]))
    cls: type[HftaJoin]
    if j.kind == "filter":
        cls = HftaFilterJoin
        t0 = j.time[0]
        assert isinstance(t0, FieldRef)
        note = (f"filter join: '{q.sources[1].alias}' tuples whose keys "
                f"'{q.sources[0].alias}' had within {j.window} of "
                f"{q.sources[0].alias}.{t0.name}")
    else:
        cls = HftaJoin
        note = (f"{j.kind} join on a temporal "
                f"{'equality' if j.band_lo == 0 and j.band_hi == 0 else 'band'}")
    node = cls(name=q.name, query=q, output=q.output, select=tuple(q.select), inputs=names,
               input_defs=defs, params=q.params, join=info, note=note)
    return lftas + [node]


def plan_query(q: AnalyzedQuery, streams: dict[str, StreamDef],
               defaults: PlanDefaults = PlanDefaults()) -> list[PlanNode]:
    """The nodes of one query (the query's DEFINEs win over `defaults`)."""
    lfta_table_size, lfta_table_ways = defaults.lfta_table_size, defaults.lfta_table_ways
    hfta_disorder = _disorder(q, "max_hfta_disorder", defaults.max_hfta_disorder)
    flush = _flush(q, defaults.flush)
    hfta_flush = "immediate" if flush == "immediate" else "slow"
    if q.closing is not None or q.sampling is not None:
        # a running aggregation carries its groups from epoch to epoch, a
        # sampling query its supergroups' states: in order (and so their
        # LFTA hands epochs on whole)
        hfta_disorder = 1
    lfta_disorder, lfta_flush = _lfta_reach(
        _disorder(q, "max_lfta_disorder", defaults.max_lfta_disorder), flush, hfta_disorder)
    if q.merge is not None:
        return _plan_merge(q, q.merge)
    if q.join is not None:
        return _plan_join(q)
    src = q.sources[0]
    accums, aggplans = _accums_for(q.aggs)
    gb: list[Named] = [(g.name, g.expr) for g in q.group_by]

    if src.stream is not None:
        if q.is_aggregate:
            return [HftaAggregate(name=q.name, query=q, output=q.output, where=tuple(q.where),
                                  select=tuple(q.select), group_by=tuple(gb),
                                  accums=tuple(accums), aggs=tuple(aggplans), having=q.having,
                                  closing=q.closing, sampling=_sampling_plan(q, None),
                                  inputs=(src.stream.name,), input_defs=(src.stream,),
                                  params=q.params, disorder=hfta_disorder, flush=hfta_flush,
                                  note="reads a stream: runs entirely as an HFTA")]
        return [HftaSelect(name=q.name, query=q, output=q.output, where=tuple(q.where),
                           select=tuple(q.select), inputs=(src.stream.name,),
                           input_defs=(src.stream,), params=q.params,
                           note="reads a stream: runs entirely as an HFTA")]

    # A query over a source interface.
    proto = src.protocol
    assert proto is not None
    iface = src.iface
    lname = f"_fta_{q.name}"
    if not q.is_aggregate:
        if all(_lfta_safe(c) for c in q.where) and all(_lfta_safe(e) for _, e in q.select):
            return [LftaSelect(name=q.name, query=q, output=q.output, where=tuple(q.where),
                               select=tuple(q.select), protocol=proto, iface=iface,
                               params=q.params,
                               note="every predicate and projection is LFTA-safe: "
                                    "runs entirely in the LFTA")]
        pd = _Pushdown(q)
        lfta_where = [c for c in q.where if _lfta_safe(c)]
        hfta_where = [pd.push(c) for c in q.where if not _lfta_safe(c)]
        hfta_select = [(n, pd.push(e, n)) for n, e in q.select]
        lout = pd.stream(lname)
        lfta = LftaSelect(name=lname, query=q, output=lout, where=tuple(lfta_where),
                          select=tuple(pd.cols), protocol=proto, iface=iface, params=q.params,
                          note="cheap LFTA-safe predicates and projections")
        hfta = HftaSelect(name=q.name, query=q, output=q.output, where=tuple(hfta_where),
                          select=tuple(hfta_select), inputs=(lname,), input_defs=(lout,),
                          params=q.params,
                          note="expensive or HFTA-only functions: " +
                               ", ".join(sorted(_hfta_only_functions(q))))
        return [lfta, hfta]

    # Aggregation over an interface.
    can_split = (all(_lfta_safe(c) for c in q.where)
                 and all(_lfta_safe(e) and _fixed_size(e.info.type) for _, e in gb)
                 and all(a.func.udaf is not None or a.arg is None
                         or (_lfta_safe(a.arg) and _fixed_size(a.arg.info.type))
                         for a in q.aggs)
                 and all(a.func.lfta_legal for a in q.aggs)
                 and all(_udaf_splits(a) for a in q.aggs if a.func.udaf is not None)
                 # a sampling query's cleaning removes groups: no partials
                 and q.sampling is None)
    if can_split:
        # LFTA sub-aggregate: emits group keys and accumulators (partials).
        lselect: list[Named] = []
        for i, (n, e) in enumerate(gb):
            lselect.append((n, GroupRef(i, info=ExprInfo(e.info.type, e.info.temporal))))
        # a user aggregate splits: its SUBAGGR in the LFTA, its SUPERAGGR in
        # the HFTA over the sub-aggregate's outputs
        laccums = [replace(a, udaf=a.udaf.sub, type=a.udaf.sub.result)
                   if a.udaf is not None and a.udaf.sub is not None else a for a in accums]
        for j, acc in enumerate(laccums):
            lselect.append((acc.name, AccumRef(j, info=ExprInfo(acc.type))))
        lout = StreamDef(lname, [_column(n, e.info) for n, e in lselect])
        size = _lfta_table_size(q, lfta_table_size)
        if not (_lfta_table_size_given(q) or lfta_table_size):
            size = min(size, _udaf_table_cap(gb, laccums))
        ways = _lfta_table_ways(q, lfta_table_ways)
        size = max(size, ways)
        # a size asked for (DEFINE, option) is kept; the default one grows
        # while records often eject a group (gsq_agg_table.h, Growth)
        grow = not (_lfta_table_size_given(q) or lfta_table_size)
        lagg = LftaAggregate(name=lname, query=q, output=lout, where=tuple(q.where),
                             select=tuple(lselect), group_by=tuple(gb), accums=tuple(laccums),
                             protocol=proto, iface=iface, table_size=size, table_ways=ways,
                             table_grows=grow,
                             params=q.params, disorder=lfta_disorder, flush=lfta_flush,
                             note="sub-aggregate in a hash table"
                                  + (f" that doubles (to {LFTA_TABLE_GROW_MIB} MiB) while "
                                     "records often eject a group" if grow else " of fixed size")
                                  + "; a collision ejects a resident group as a partial")
        hgb: list[Named] = [(n, FieldRef(0, n, info=ExprInfo(e.info.type, e.info.temporal)))
                            for n, e in gb]
        haccums = [Accum(acc.op, acc.type, FieldRef(0, acc.name, info=ExprInfo(acc.type)),
                         acc.name) if acc.udaf is None else
                   Accum("udaf", acc.udaf.sup.result if acc.udaf.sup else acc.type, None,
                         acc.name, args=(FieldRef(0, acc.name, info=ExprInfo(lacc.type)),),
                         udaf=acc.udaf.sup)
                   for acc, lacc in zip(accums, laccums)]
        hagg = HftaAggregate(name=q.name, query=q, output=q.output, select=tuple(q.select),
                             group_by=tuple(hgb), accums=tuple(haccums), aggs=tuple(aggplans),
                             having=q.having, closing=q.closing,
                             sampling=_sampling_plan(q, None),
                             inputs=(lname,), input_defs=(lout,),
                             params=q.params, disorder=hfta_disorder, flush=hfta_flush,
                             note="super-aggregate of the LFTA partials")
        return [lagg, hagg]

    pd = _Pushdown(q)
    lfta_where = [c for c in q.where if _lfta_safe(c)]
    hfta_where = [pd.push(c) for c in q.where if not _lfta_safe(c)]
    hgb = [(n, pd.push(e, n)) for n, e in gb]
    haccums = [Accum(a.op, a.type, pd.push(a.expr) if a.expr is not None else None, a.name,
                     args=tuple(pd.push(x) for x in a.args), udaf=a.udaf)
               for a in accums]
    sampling = _sampling_plan(q, pd)   # its super-aggregates' arguments read too
    lout = pd.stream(lname)
    lfta = LftaSelect(name=lname, query=q, output=lout, where=tuple(lfta_where),
                      select=tuple(pd.cols), protocol=proto, iface=iface, params=q.params,
                      note="selection and projection only: " + (
                          "a sampling query (supergroups, cleaning) runs in the HFTA"
                          if q.sampling is not None else
                          "a user-defined aggregate runs in the HFTA"
                          if any(a.func.udaf is not None for a in q.aggs) else
                          "a group-by key, predicate or aggregate argument needs an "
                          "HFTA-only or expensive function or a string"))
    hagg = HftaAggregate(name=q.name, query=q, output=q.output, where=tuple(hfta_where),
                         select=tuple(q.select), group_by=tuple(hgb), accums=tuple(haccums),
                         aggs=tuple(aggplans), having=q.having, closing=q.closing,
                         sampling=sampling, inputs=(lname,),
                         input_defs=(lout,), params=q.params, disorder=hfta_disorder,
                         flush=hfta_flush, note="the whole aggregation")
    return [lfta, hagg]


def _sampling_plan(q: AnalyzedQuery, pd: Optional["_Pushdown"]) -> Optional[SamplingPlan]:
    """A sampling query's plan, super-aggregate arguments read through pd
    (the LFTA's columns) when it has an LFTA."""
    sp = q.sampling
    if sp is None:
        return None
    return SamplingPlan(
        tuple(sp.supergroup),
        tuple((sa.op, pd.push(sa.arg) if pd is not None and sa.arg is not None else sa.arg,
               sa.type) for sa in sp.superaggs),
        sp.cleaning_when, sp.cleaning_by)


def _udaf_splits(a: AggCall) -> bool:
    """Whether a user aggregate's SUBAGGR can run in the LFTA: it splits,
    and its arguments are LFTA-safe fixed-size values (a group keeps its
    first record's until its scratchpad starts)."""
    u = a.func.udaf
    return (u is not None and u.splits and u.sub is not None and not u.sub.handle_args
            and all(_lfta_safe(x) and _fixed_size(x.info.type) for x in a.args))


# The bytes an LFTA table of user sub-aggregates starts with, at most: their
# scratchpads make slots large (GS-lite's quantiles take 2-3 KB each).
UDAF_TABLE_BYTES = 16 << 20


def _udaf_table_cap(gb: list[Named], accums: list[Accum]) -> int:
    """The most slots an LFTA table of these accumulators starts with
    (a power of two, at least 1,024)."""
    slot = 8 + 8 * len(gb)
    for a in accums:
        if a.udaf is not None:
            slot += (a.udaf.storage_bytes or 16) + 1 + 8 * len(a.udaf.params)
        else:
            slot += 8
    n = 1024
    while n * 2 * slot <= UDAF_TABLE_BYTES:
        n *= 2
    return n


def _hfta_only_functions(q: AnalyzedQuery) -> set[str]:
    names = set()
    exprs = list(q.where) + [e for _, e in q.select]
    for e in exprs:
        for n in walk(e):
            if isinstance(n, ast.Call) and n.info is not None and not (n.info.lfta_ok and n.info.cheap):
                names.add(n.name)
    return names


def make_plan(queries: list[AnalyzedQuery], defaults: PlanDefaults = PlanDefaults()) -> Plan:
    """Analyzed queries (dependency order) -> Plan.  `defaults`: the LFTA
    tables' size and ways, the aggregations' disorder and flush (a query's
    DEFINEs still win).  Then the order pass decides which merges may pass
    tuples through out of order (order_pass).  The plan does not
    depend on run-time bindings: an LFTA keeps the interface (or interface
    set) name it reads; bound to a set at run time it runs once per member,
    merged on its temporal column (gsq_lfta_def.set_merge)."""
    nodes: list[PlanNode] = []
    streams: dict[str, StreamDef] = {}
    for q in queries:
        for n in plan_query(q, streams, defaults):
            nodes.append(n)
            streams[n.name] = n.output
    return Plan(order_pass(nodes), queries)


def requires_order(n: PlanNode, needs_order: dict[str, bool]) -> bool:
    """Whether n needs its inputs in order of their temporal columns (seed
    004 section 5): an in-order aggregation (one open epoch), a join, an
    order-preserving merge; a selection as much as its own consumers do."""
    if isinstance(n, HftaAggregate):
        return n.disorder == 1
    if isinstance(n, HftaSelect):
        return needs_order[n.name]
    if isinstance(n, HftaMerge):
        return needs_order[n.name]
    if isinstance(n, HftaFilterJoin):
        return True
    if isinstance(n, HftaJoin):
        # seed 004 5.3: a join purges by its inputs' heartbeats and takes
        # them out of order -- its output then is out of order too
        return needs_order[n.name]
    return True


def band_output_disorder(j: JoinInfo) -> float:
    """How far below an earlier row's a band join's output row's join time
    may be (join_op.hpp, "Output order"); 0 for an equality join."""
    lo, hi = j.band_lo, j.band_hi
    d = max(0.0, lo + hi)
    if j.kind in ("right", "full"):
        d = max(d, lo, hi)
        if lo + hi < 0:
            d = max(d, -lo, -hi if j.kind == "full" else 0.0)
    return d


def _output_spread(n: PlanNode, spread: dict[str, float]) -> float:
    if isinstance(n, HftaFilterJoin):
        return 0.0
    if isinstance(n, HftaJoin):
        return band_output_disorder(n.join)
    if isinstance(n, (HftaSelect, HftaMerge)):
        return max((spread.get(i, 0.0) for i in n.inputs), default=0.0)
    if isinstance(n, HftaAggregate) and not n.ordered_output:
        return float(n.disorder - 1)    # groups leave from any of its open epochs
    return 0.0      # LFTAs read sources; aggregations close epochs in order


def _node_named(nodes: list[PlanNode], name: str) -> Optional[PlanNode]:
    return next((x for x in nodes if x.name == name), None)


def _time_columns(j: HftaJoin, side: int) -> set[str]:
    """The join's temporal output columns that are its left (0) or right (1)
    time itself."""
    return {col.name for col, (_, e) in zip(j.output.columns, j.select)
            if col.temporal.is_temporal and key(e) == key(j.join.time[side])}


def _right_time_lag(n: HftaAggregate, earlier: list[PlanNode]) -> float:
    """A band join's output is ordered by its left time up to its spread;
    an aggregation whose epochs are made by the right time sees that time
    spread by the band's width more (tr = tl + delta, delta in [-lo, hi])."""
    src = _node_named(earlier, n.inputs[0])
    if not isinstance(src, HftaJoin) or isinstance(src, HftaFilterJoin) or not n.epoch_indices:
        return 0.0
    right = {(0, name) for name in _time_columns(src, 1)}
    if not fields_of(n.group_by[n.epoch_indices[0]][1]) <= right:
        return 0.0
    return max(0.0, src.join.band_lo + src.join.band_hi)


def epochs_spanning(keys: Iterable[ast.Expr], d: float) -> int:
    """Open epochs that cover input disordered by up to d time units: an
    epoch of a temporal key `col / w` (or `col`, w = 1) spans w units, so a
    row up to d behind is at most ceil(d / w) epochs behind (the largest
    over `keys`; 1 for none)."""
    need = 1
    for e in keys:
        w = 1.0
        if isinstance(e, ast.Binary) and e.op == "/" and isinstance(e.right, ast.Literal) \
                and isinstance(e.right.value, (int, float)) and e.right.value > 0:
            w = float(e.right.value)
        need = max(need, int(-(-d // w)) + 1)
    return need


def _epochs_spanning(n: HftaAggregate, d: float) -> int:
    """epochs_spanning over n's epoch keys, at most MAX_BAND_EPOCHS."""
    return min(epochs_spanning((n.group_by[i][1] for i in n.epoch_indices), d),
               MAX_BAND_EPOCHS)


def order_pass(nodes: list[PlanNode]) -> list[PlanNode]:
    """Consumers first, decide for every stream whether some reader needs it
    in order; a stream nobody in the set reads is a query's output and keeps
    its order.  A merge (or an LFTA's interface-set merge) whose output no
    reader needs in order becomes the OOP union; an aggregation whose input
    is an HFTA's output takes that input's heartbeats as promises."""
    needs_order: dict[str, bool] = {}
    readers: dict[str, list[PlanNode]] = {}
    for n in nodes:
        for i in n.inputs:
            readers.setdefault(i, []).append(n)
    for n in reversed(nodes):
        rs = readers.get(n.name, [])
        needs_order[n.name] = not rs or any(requires_order(r, needs_order) for r in rs)
    strict: dict[str, bool] = {}
    spread: dict[str, float] = {}    # how far a stream's time may go back (band joins)
    ordered: dict[str, bool] = {}    # a stream arrives in order of its temporal columns
    out: list[PlanNode] = []
    for n in nodes:
        if isinstance(n, HftaAggregate):
            n = _with_joint_punctuation(n, out, not needs_order[n.name])
        if isinstance(n, HftaJoin) and not isinstance(n, HftaFilterJoin):
            ins = (ordered.get(n.inputs[0], True), ordered.get(n.inputs[1], True))
            if ins != (True, True):
                n = dataclasses.replace(n, inputs_ordered=ins)
        if isinstance(n, HftaAggregate) and spread.get(n.inputs[0], 0) > 0:
            d = spread[n.inputs[0]] + _right_time_lag(n, out)
            need = _epochs_spanning(n, d)
            if need > n.disorder:
                src = _node_named(out, n.inputs[0])
                what = ("an aggregation's output, its groups released by joint punctuation"
                        if isinstance(src, HftaAggregate) else "a band join's output")
                n = dataclasses.replace(
                    n, disorder=need,
                    note=n.note + f"; {need} epochs open (raised from {n.disorder}): its input "
                                  f"is {what}, disordered by up to {d:g}")
        spread[n.name] = _output_spread(n, spread)      # after the raise: it may use it
        if isinstance(n, LftaNode):
            strict[n.name] = False
            if not needs_order[n.name] and n.set_merge_column is not None:
                n = dataclasses.replace(n, set_merge_ordered=False)
        elif isinstance(n, (HftaMerge, HftaSelect)):
            if isinstance(n, HftaMerge) and not needs_order[n.name]:
                n = dataclasses.replace(n, ordered=False)
            strict[n.name] = all(strict[i] for i in n.inputs)
        elif isinstance(n, HftaAggregate):
            if n.disorder > 1 and strict[n.inputs[0]]:
                n = dataclasses.replace(n, strict_heartbeats=True)
            strict[n.name] = True
        else:
            assert isinstance(n, HftaNode)
            strict[n.name] = True
        ordered[n.name] = _arrives_in_order(n, ordered)
        out.append(n)
    return out


def _with_joint_punctuation(n: HftaAggregate, earlier: list[PlanNode],
                            any_order: bool) -> HftaAggregate:
    """An aggregation reading a join directly whose temporal group-by keys
    cover both the join's left time and its right time (each key over one of
    them) uses the join's joint punctuation (seed 004 section 7); the join
    (in `earlier`, replaced there) then emits it.  any_order: no reader needs
    the aggregation's output in order, so covered groups may leave from any
    open epoch."""
    src = _node_named(earlier, n.inputs[0])
    if not isinstance(src, HftaJoin) or isinstance(src, HftaFilterJoin):
        return n
    sides = (_time_columns(src, 0), _time_columns(src, 1))
    keys: tuple[list[int], list[int]] = ([], [])
    for i, (_, e) in enumerate(n.group_by):
        reads = fields_of(e)
        if not e.info.temporal.is_temporal or len(reads) != 1:
            continue
        (_, name), = reads
        for s in (0, 1):
            if name in sides[s]:
                keys[s].append(i)
    if not keys[0] or not keys[1]:
        return n
    earlier[earlier.index(src)] = dataclasses.replace(src, joint_punctuation=True)
    return dataclasses.replace(n, joint_left=tuple(keys[0]), joint_right=tuple(keys[1]),
                               ordered_output=not any_order)


def _arrives_in_order(n: PlanNode, ordered: dict[str, bool]) -> bool:
    """Whether n's output comes in order of its temporal columns."""
    if isinstance(n, LftaNode):
        return n.set_merge_ordered      # an interface set's pass-through merge is not
    if isinstance(n, HftaMerge):
        return n.ordered and all(ordered[i] for i in n.inputs)
    if isinstance(n, HftaSelect):
        return ordered[n.inputs[0]]
    if isinstance(n, HftaJoin) and not isinstance(n, HftaFilterJoin):
        return all(n.inputs_ordered) and band_output_disorder(n.join) == 0
    if isinstance(n, HftaAggregate):
        return n.ordered_output
    return True     # filter joins follow S


def describe_expr(e: ast.Expr, node: PlanNode) -> str:
    """GSQL-like text of e as node computes it: references to group-by keys,
    aggregates and accumulators by what they are."""
    group_by = node.group_by if isinstance(node, (LftaAggregate, HftaAggregate)) else ()
    accums = node.accums if isinstance(node, (LftaAggregate, HftaAggregate)) else ()
    aggs = node.aggs if isinstance(node, HftaAggregate) else ()

    def names(x: ast.Expr) -> Optional[str]:
        if isinstance(x, FieldRef) and isinstance(node, HftaJoin):
            return f"{node.query.sources[x.source].alias}.{x.name}"
        if isinstance(x, GroupRef):
            return group_by[x.index][0] if group_by else f"group[{x.index}]"
        if isinstance(x, AggRef):
            return aggs[x.index].text if aggs else f"agg[{x.index}]"
        if isinstance(x, AccumRef):
            a = accums[x.index]
            if a.udaf is not None:   # a user (sub-)aggregate: its name and arguments
                return f"{a.udaf.name}({', '.join(to_text(y) for y in a.args)})"
            inner = to_text(a.expr) if a.expr is not None else "1"
            return f"{a.op}({inner})"
        if isinstance(x, SuperAggRef) and node.query.sampling is not None:
            return node.query.sampling.superaggs[x.index].text
        return None
    return to_text(e, names)
