"""The LFTA/HFTA split of one query: plan_query(AnalyzedQuery) -> its plan
nodes (planner/nodes.py), producers first.

Every query over a source interface is split (TigonSQL's "Splitting Selection
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
Queries over streams (other queries) are HFTAs; a merge or a join reads each
of its source interfaces through an LFTA of its own.
"""
from __future__ import annotations

import dataclasses
from dataclasses import replace
from typing import Optional

from ..errors import QueryError
from ..frontend import ast
from ..semantics.bound import AccumRef, AggRef, ExprInfo, FieldRef, GroupRef, key, rebuild, walk
from ..semantics.model import AggCall, AnalyzedQuery, Column, MergeInfo, StreamDef
from ..semantics.schema import Protocol
from ..semantics.types import Temporal, Type
from .nodes import (
    LFTA_TABLE_GROW_MIB,
    Accum,
    AggPlan,
    HftaAggregate,
    HftaFilterJoin,
    HftaJoin,
    HftaMerge,
    HftaSelect,
    LftaAggregate,
    LftaSelect,
    Named,
    PlanNode,
    SamplingPlan,
)
from .tunables import (
    PlanDefaults,
    disorder_of,
    flush_of,
    lfta_reach,
    table_size_given,
    table_size_of,
    table_ways_of,
    udaf_table_cap,
)


def _lfta_safe(e: ast.Expr) -> bool:
    return bool(e.info.lfta_ok and e.info.cheap)


def _reads_param(e: ast.Expr) -> bool:
    return any(isinstance(x, ast.Param) for x in walk(e))


def _fixed_size(t: Type) -> bool:
    return t is not Type.STRING


def _column(name: str, info: ExprInfo) -> Column:
    """An output column of expression info `info` (temporal or not)."""
    return Column(name, info.type, info.temporal if info.temporal.is_temporal else Temporal.NONE)


class _Pushdown:
    """Collects the LFTA output columns an HFTA needs and rewrites the HFTA's
    expressions to read them."""

    def __init__(self, q: AnalyzedQuery, keep_params: bool = False):
        self.q = q
        # an aggregation in the HFTA reads its parameters there, where a
        # changed one switches at the next epoch (not in the LFTA's
        # selection, which would take it at once, mid-epoch)
        self.keep_params = keep_params
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
            if n.info is not None and _lfta_safe(n) and not n.info.constant and not (
                    self.keep_params and _reads_param(n)):
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
    hfta_disorder = disorder_of(q, "max_hfta_disorder", defaults.max_hfta_disorder)
    flush = flush_of(q, defaults.flush)
    hfta_flush = "immediate" if flush == "immediate" else "slow"
    if q.closing is not None or q.sampling is not None:
        # a running aggregation carries its groups from epoch to epoch, a
        # sampling query its supergroups' states: in order (and so their
        # LFTA hands epochs on whole)
        hfta_disorder = 1
    lfta_disorder, lfta_flush = lfta_reach(
        disorder_of(q, "max_lfta_disorder", defaults.max_lfta_disorder), flush, hfta_disorder)
    halves = _lfta_halves(q)
    if halves and (q.join is not None or q.sources[0].stream is not None):
        raise _lfta_half_error(halves[0], "over another query's output" if q.join is None
                               else "over a join")
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
                 and all(_udaf_splits(a) or _udaf_in_lfta(a)
                         for a in q.aggs if a.func.udaf is not None)
                 # a sampling query's cleaning removes groups: no partials
                 and q.sampling is None)
    if halves:
        # an aggregate with only an LFTA implementation: the aggregation runs
        # in the LFTA, the HFTA only projects its groups (and filters HAVING)
        if not can_split:
            raise _lfta_half_error(halves[0], _why_not_lfta(q, gb))
        return _plan_lfta_aggregation(q, gb, accums, aggplans, lname, proto, iface,
                                      lfta_table_size, lfta_table_ways, lfta_disorder,
                                      lfta_flush)
    if can_split:
        # LFTA sub-aggregate: emits group keys and accumulators (partials).
        # A user aggregate splits: its SUBAGGR in the LFTA, its SUPERAGGR in
        # the HFTA over the sub-aggregate's outputs
        laccums = [replace(a, udaf=a.udaf.sub, type=a.udaf.sub.result)
                   if a.udaf is not None and a.udaf.sub is not None else a for a in accums]
        lselect, lout = _lfta_aggregate_output(gb, laccums, lname)
        size, ways, grow = _lfta_table(q, gb, laccums, lfta_table_size, lfta_table_ways)
        lagg = LftaAggregate(name=lname, query=q, output=lout, where=tuple(q.where),
                             select=tuple(lselect), group_by=tuple(gb), accums=tuple(laccums),
                             protocol=proto, iface=iface, table_size=size, table_ways=ways,
                             table_grows=grow,
                             params=q.params, disorder=lfta_disorder, flush=lfta_flush,
                             note="sub-aggregate in a hash table"
                                  + (f" that doubles (to {LFTA_TABLE_GROW_MIB} MiB) while "
                                     "records often eject groups that come back" if grow
                                     else " of fixed size")
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

    pd = _Pushdown(q, keep_params=True)
    lfta_where = [c for c in q.where if _lfta_safe(c) and not _reads_param(c)]
    hfta_where = [pd.push(c) for c in q.where if not (_lfta_safe(c) and not _reads_param(c))]
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


def _lfta_halves(q: AnalyzedQuery) -> list[AggCall]:
    """The query's calls of an aggregate that has only an LFTA implementation."""
    return [a for a in q.aggs if a.func.udaf is not None and a.func.udaf.lfta_only]


def _lfta_half_error(a: AggCall, why: str) -> QueryError:
    u = a.func.udaf
    assert u is not None
    return QueryError(a.span, "lfta-only-aggregate",
                      f"{u.name} is the LFTA half of {u.whole}: it aggregates only in an "
                      f"LFTA, over a source interface's records, and this query aggregates "
                      f"{why}; call {u.whole} instead")


def _why_not_lfta(q: AnalyzedQuery, gb: list[Named]) -> str:
    if q.closing is not None:
        return "with CLOSING_WHEN (in the HFTA)"
    if q.sampling is not None:
        return "with sampling (supergroups, cleaning: in the HFTA)"
    if not all(_lfta_safe(c) for c in q.where):
        return "with a predicate an LFTA cannot evaluate"
    if not all(_lfta_safe(e) and _fixed_size(e.info.type) for _, e in gb):
        return "by a group-by key an LFTA cannot hold (a string or an HFTA-only function)"
    for a in _lfta_halves(q):
        if not all(_lfta_safe(x) for x in a.args):
            return f"over an argument an LFTA cannot evaluate ({a.text})"
    for a in q.aggs:
        u = a.func.udaf
        if u is not None and not u.lfta_only and not _udaf_splits(a):
            return f"with {a.text}, which runs only in an HFTA"
    return "with an aggregate or argument an LFTA cannot evaluate"


def _lfta_aggregate_output(gb: list[Named], accums: list[Accum], lname: str
                           ) -> tuple[list[Named], StreamDef]:
    """An LFTA aggregation's SELECT list -- its group keys, then its
    accumulators -- and its output stream."""
    lselect: list[Named] = []
    for i, (n, e) in enumerate(gb):
        lselect.append((n, GroupRef(i, info=ExprInfo(e.info.type, e.info.temporal))))
    for j, acc in enumerate(accums):
        lselect.append((acc.name, AccumRef(j, info=ExprInfo(acc.type))))
    return lselect, StreamDef(lname, [_column(n, e.info) for n, e in lselect])


def _lfta_table(q: AnalyzedQuery, gb: list[Named], accums: list[Accum],
                lfta_table_size: Optional[int], lfta_table_ways: Optional[int]
                ) -> tuple[int, int, bool]:
    """An LFTA aggregation table's slots, ways and whether it grows: a size
    asked for (DEFINE, option) is kept; the default one, capped for large
    user-aggregate scratchpads, grows while records often eject a group
    (gsq_agg_table.h, Growth)."""
    given = bool(table_size_given(q) or lfta_table_size)
    size = table_size_of(q, lfta_table_size)
    if not given:
        size = min(size, udaf_table_cap(gb, accums))
    ways = table_ways_of(q, lfta_table_ways)
    return max(size, ways), ways, not given


def _plan_lfta_aggregation(q: AnalyzedQuery, gb: list[Named], accums: list[Accum],
                           aggplans: list[AggPlan], lname: str, proto: Protocol,
                           iface: str, lfta_table_size: Optional[int],
                           lfta_table_ways: Optional[int], lfta_disorder: int,
                           lfta_flush: str) -> list[PlanNode]:
    """The whole aggregation in an LFTA (its table emits each group it closes
    or ejects, as GS-lite's LFTA aggregation does), and an HFTA that forms
    the SELECT list (and HAVING) from the groups' keys and accumulators."""
    lselect, lout = _lfta_aggregate_output(gb, accums, lname)
    size, ways, grow = _lfta_table(q, gb, accums, lfta_table_size, lfta_table_ways)
    lagg = LftaAggregate(name=lname, query=q, output=lout, where=tuple(q.where),
                         select=tuple(lselect), group_by=tuple(gb), accums=tuple(accums),
                         protocol=proto, iface=iface, table_size=size,
                         table_ways=ways, table_grows=grow, params=q.params,
                         disorder=lfta_disorder, flush=lfta_flush,
                         note="the whole aggregation: "
                              + ", ".join(a.func.udaf.name for a in _lfta_halves(q)
                                          if a.func.udaf is not None)
                              + " has only an LFTA implementation")

    def col(name: str, e: ast.Expr) -> FieldRef:
        return FieldRef(0, name, info=ExprInfo(e.info.type, e.info.temporal))

    def fn(n: ast.Expr) -> Optional[ast.Expr]:
        if isinstance(n, GroupRef):
            return col(gb[n.index][0], lselect[n.index][1])
        if isinstance(n, AggRef):
            plan = aggplans[n.index]
            parts = [col(accums[k].name, lselect[len(gb) + k][1]) for k in plan.accums]
            if plan.final == "avg":
                return ast.Binary("/", parts[0], parts[1], span=n.span,
                                  info=ExprInfo(Type.FLOAT))
            return parts[0]
        return None
    select = tuple((n, rebuild(e, fn)) for n, e in q.select)
    having = tuple(rebuild(h, fn) for h in ([q.having] if q.having is not None else []))
    hsel = HftaSelect(name=q.name, query=q, output=q.output, where=having, select=select,
                      inputs=(lname,), input_defs=(lout,), params=q.params,
                      note="the SELECT list over the LFTA's groups")
    return [lagg, hsel]


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


def _udaf_in_lfta(a: AggCall) -> bool:
    """Whether an aggregate with only an LFTA implementation can run there:
    its arguments are LFTA-safe (a string one is copied or hashed by the
    aggregate as its group's slot is filled)."""
    u = a.func.udaf
    return (u is not None and u.lfta_only and not u.handle_args
            and all(_lfta_safe(x) for x in a.args))


def _hfta_only_functions(q: AnalyzedQuery) -> set[str]:
    names = set()
    exprs = list(q.where) + [e for _, e in q.select]
    for e in exprs:
        for n in walk(e):
            if isinstance(n, ast.Call) and n.info is not None and not (n.info.lfta_ok and n.info.cheap):
                names.add(n.name)
    return names
