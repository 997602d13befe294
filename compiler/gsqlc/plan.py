"""Planning: the query DAG and the LFTA/HFTA split.

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
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional

from . import ast
from .analyze import AggCall, AnalyzedQuery, Column, JoinInfo, MergeInfo, StreamDef
from .bound import (AccumRef, AggRef, ExprInfo, FieldRef, GroupRef, key, rebuild,
                    to_text, walk)
from .schema import Protocol

if TYPE_CHECKING:
    from .interfaces import Interfaces
from .types import Temporal, Type

DEFAULT_LFTA_TABLE = 262144


@dataclass
class Accum:
    """An accumulator of a group: folds `expr` (None: the constant 1) with op."""
    op: str                  # sum | min | max | and | or | xor
    type: Type
    expr: Optional[ast.Expr]
    name: str


@dataclass
class AggPlan:
    """Final value of one aggregate from its accumulators."""
    final: str               # 'first' | 'avg'
    accums: list[int]
    type: Type
    text: str


@dataclass
class PlanNode:
    name: str                # the stream it produces
    level: str               # 'lfta' | 'hfta'
    kind: str                # 'select' | 'aggregate'
    query: AnalyzedQuery
    output: StreamDef
    where: list[ast.Expr]
    select: list[tuple[str, ast.Expr]]
    group_by: list[tuple[str, ast.Expr]] = field(default_factory=list)
    accums: list[Accum] = field(default_factory=list)
    aggs: list[AggPlan] = field(default_factory=list)
    having: Optional[ast.Expr] = None
    # LFTA only
    protocol: Optional[Protocol] = None
    iface: str = ""
    table_size: int = DEFAULT_LFTA_TABLE
    table_ways: int = 1      # slots a group may occupy (1: direct-mapped)
    # HFTA only
    inputs: list[str] = field(default_factory=list)
    input_defs: list[StreamDef] = field(default_factory=list)
    params: dict = field(default_factory=dict)
    note: str = ""
    join: Optional[JoinInfo] = None
    merge: Optional[MergeInfo] = None

    @property
    def epoch_indices(self) -> list[int]:
        return [i for i, (_, e) in enumerate(self.group_by) if e.info.temporal.is_temporal]


@dataclass
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


def _lfta_safe(e: ast.Expr) -> bool:
    return e.info.lfta_ok and e.info.cheap


def _fixed_size(t: Type) -> bool:
    return t is not Type.STRING


class _Pushdown:
    """Collects the LFTA output columns an HFTA needs and rewrites the HFTA's
    expressions to read them."""

    def __init__(self, q: AnalyzedQuery):
        self.q = q
        self.cols: list[tuple[str, ast.Expr]] = []
        self._by_key: dict[tuple, str] = {}
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
                r = FieldRef(0, col, span=n.span)
                r.info = ExprInfo(n.info.type, n.info.temporal)
                return r
            return None
        out = rebuild(e, fn)
        return out

    def stream(self, name: str) -> StreamDef:
        return StreamDef(name, [Column(n, e.info.type,
                                       e.info.temporal if e.info.temporal.is_temporal
                                       else Temporal.NONE)
                                for n, e in self.cols])


def _accums_for(aggs: list[AggCall]) -> tuple[list[Accum], list[AggPlan]]:
    accums: list[Accum] = []
    plans: list[AggPlan] = []
    for i, a in enumerate(aggs):
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
        plans.append(AggPlan(a.func.final, idx, a.type, a.text))
    return accums, plans


def _source_stream_name(q: AnalyzedQuery) -> str:
    return q.sources[0].stream.name  # type: ignore[union-attr]


def _lfta_table_size(q: AnalyzedQuery) -> int:
    v = q.defines.get("lfta_table_size") or q.defines.get("aggregate_slots")
    if v:
        try:
            n = int(v)
        except ValueError:
            from .diagnostics import GsqlError
            raise GsqlError(q.query.defines.item_spans.get("lfta_table_size", q.query.span),
                            "bad-define", f"lfta_table_size must be an integer, got '{v}'")
        return _power_of_two(n)
    return DEFAULT_LFTA_TABLE


TABLE_WAYS = (1, 2, 4, 8, 16)   # the associativities an LFTA table may have


def _lfta_table_ways(q: AnalyzedQuery) -> int:
    v = q.defines.get("lfta_table_ways")
    if not v:
        return 1
    if not v.isdigit() or int(v) not in TABLE_WAYS:
        from .diagnostics import GsqlError
        raise GsqlError(q.query.defines.item_spans.get("lfta_table_ways", q.query.span),
                        "bad-define", f"lfta_table_ways must be one of "
                        f"{', '.join(map(str, TABLE_WAYS))}, got '{v}'")
    return int(v)


def _power_of_two(n: int) -> int:
    size = 1
    while size < max(n, 16):
        size *= 2
    return size


def _protocol_lfta(q: AnalyzedQuery, side: int, fields: list[str],
                   where: list[ast.Expr], name: str) -> PlanNode:
    """An LFTA that reads one FROM source of a multi-input query: it applies
    the LFTA-safe single-source conjuncts and projects the fields the HFTA
    needs, under their own names."""
    src = q.sources[side]
    proto = src.protocol
    select = []
    for f in fields:
        fd = proto.fields[f]
        r = FieldRef(side, f)
        r.info = ExprInfo(fd.type, fd.temporal)
        select.append((f, r))
    out = StreamDef(name, [Column(f, e.info.type, e.info.temporal) for f, e in select])
    return PlanNode(name, "lfta", "select", q, out, where, select, protocol=proto,
                    iface=src.iface, params=q.params,
                    note=f"reads FROM source '{src.alias}' for the HFTA")


def _side_inputs(q: AnalyzedQuery, needed: list[list[str]], pushed: list[list[ast.Expr]]
                 ) -> tuple[list[PlanNode], list[str], list[StreamDef]]:
    lftas, names, defs = [], [], []
    for i, src in enumerate(q.sources):
        if src.kind == "stream":
            names.append(src.stream.name)
            defs.append(src.stream)
            continue
        lname = f"_fta_{q.name}_{i}_{src.alias}"
        node = _protocol_lfta(q, i, needed[i], pushed[i], lname)
        lftas.append(node)
        names.append(lname)
        defs.append(node.output)
    return lftas, names, defs


def _plan_merge(q: AnalyzedQuery) -> list[PlanNode]:
    needed = [src.column_names() for src in q.sources]
    lftas, names, defs = _side_inputs(q, needed, [[] for _ in q.sources])
    node = PlanNode(q.name, "hfta", "merge", q, q.output, [], [], inputs=names,
                    input_defs=defs, params=q.params, merge=q.merge,
                    note=f"order-preserving merge on {q.merge.field}")
    return lftas + [node]


def _plan_join(q: AnalyzedQuery) -> list[PlanNode]:
    j = q.join
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
    if j.kind == "filter":
        note = (f"filter join: '{q.sources[1].alias}' tuples whose keys "
                f"'{q.sources[0].alias}' had within {j.window} of "
                f"{q.sources[0].alias}.{j.time[0].name}")
    else:
        note = (f"{j.kind} join on a temporal "
                f"{'equality' if j.band_lo == 0 and j.band_hi == 0 else 'band'}")
    node = PlanNode(q.name, "hfta", "join", q, q.output, [], q.select, inputs=names,
                    input_defs=defs, params=q.params, join=info, note=note)
    return lftas + [node]


def plan_query(q: AnalyzedQuery, streams: dict[str, StreamDef]) -> list[PlanNode]:
    if q.merge is not None:
        return _plan_merge(q)
    if q.join is not None:
        return _plan_join(q)
    src = q.sources[0]
    accums, aggplans = _accums_for(q.aggs)
    kind = "aggregate" if q.is_aggregate else "select"
    gb = [(g.name, g.expr) for g in q.group_by]

    if src.kind == "stream":
        node = PlanNode(q.name, "hfta", kind, q, q.output, q.where, q.select, gb,
                        accums, aggplans, q.having, inputs=[src.stream.name],
                        input_defs=[src.stream], params=q.params,
                        note="reads a stream: runs entirely as an HFTA")
        return [node]

    # A query over a source interface.
    proto = src.protocol
    iface = src.iface
    if kind == "select":
        if all(_lfta_safe(c) for c in q.where) and all(_lfta_safe(e) for _, e in q.select):
            return [PlanNode(q.name, "lfta", "select", q, q.output, q.where, q.select,
                             protocol=proto, iface=iface, params=q.params,
                             note="every predicate and projection is LFTA-safe: "
                                  "runs entirely in the LFTA")]
        pd = _Pushdown(q)
        lfta_where = [c for c in q.where if _lfta_safe(c)]
        hfta_where = [pd.push(c) for c in q.where if not _lfta_safe(c)]
        hfta_select = [(n, pd.push(e, n)) for n, e in q.select]
        lname = f"_fta_{q.name}"
        lout = pd.stream(lname)
        lfta = PlanNode(lname, "lfta", "select", q, lout, lfta_where, pd.cols,
                        protocol=proto, iface=iface, params=q.params,
                        note="cheap LFTA-safe predicates and projections")
        hfta = PlanNode(q.name, "hfta", "select", q, q.output, hfta_where, hfta_select,
                        inputs=[lname], input_defs=[lout], params=q.params,
                        note="expensive or HFTA-only functions: " +
                             ", ".join(sorted(_hfta_only_functions(q))))
        return [lfta, hfta]

    # Aggregation over an interface.
    can_split = (all(_lfta_safe(c) for c in q.where)
                 and all(_lfta_safe(e) and _fixed_size(e.info.type) for _, e in gb)
                 and all(a.arg is None or (_lfta_safe(a.arg) and _fixed_size(a.arg.info.type))
                         for a in q.aggs)
                 and all(a.func.lfta_legal for a in q.aggs))
    lname = f"_fta_{q.name}"
    if can_split:
        # LFTA sub-aggregate: emits group keys and accumulators (partials).
        lselect: list[tuple[str, ast.Expr]] = []
        for i, (n, e) in enumerate(gb):
            r = GroupRef(i)
            r.info = ExprInfo(e.info.type, e.info.temporal)
            lselect.append((n, r))
        for j, acc in enumerate(accums):
            r = AccumRef(j)
            r.info = ExprInfo(acc.type)
            lselect.append((acc.name, r))
        lout = StreamDef(lname, [Column(n, e.info.type,
                                        e.info.temporal if e.info.temporal.is_temporal
                                        else Temporal.NONE) for n, e in lselect])
        lfta = PlanNode(lname, "lfta", "aggregate", q, lout, q.where, lselect, gb,
                        accums, [], None, protocol=proto, iface=iface,
                        table_size=_lfta_table_size(q), table_ways=_lfta_table_ways(q),
                        params=q.params,
                        note="sub-aggregate in a hash table of fixed size; a collision "
                             "ejects a resident group as a partial")
        hgb = []
        for n, e in gb:
            r = FieldRef(0, n)
            r.info = ExprInfo(e.info.type, e.info.temporal)
            hgb.append((n, r))
        haccums = []
        for acc in accums:
            r = FieldRef(0, acc.name)
            r.info = ExprInfo(acc.type)
            haccums.append(Accum(acc.op, acc.type, r, acc.name))
        hfta = PlanNode(q.name, "hfta", "aggregate", q, q.output, [], q.select, hgb,
                        haccums, aggplans, q.having, inputs=[lname], input_defs=[lout],
                        params=q.params,
                        note="super-aggregate of the LFTA partials")
        return [lfta, hfta]

    pd = _Pushdown(q)
    lfta_where = [c for c in q.where if _lfta_safe(c)]
    hfta_where = [pd.push(c) for c in q.where if not _lfta_safe(c)]
    hgb = [(n, pd.push(e, n)) for n, e in gb]
    haccums = [Accum(a.op, a.type, pd.push(a.expr) if a.expr is not None else None, a.name)
               for a in accums]
    lout = pd.stream(lname)
    lfta = PlanNode(lname, "lfta", "select", q, lout, lfta_where, pd.cols,
                    protocol=proto, iface=iface, params=q.params,
                    note="selection and projection only: a group-by key, predicate or "
                         "aggregate argument needs an HFTA-only or expensive function "
                         "or a string")
    hfta = PlanNode(q.name, "hfta", "aggregate", q, q.output, hfta_where, q.select, hgb,
                    haccums, aggplans, q.having, inputs=[lname], input_defs=[lout],
                    params=q.params, note="the whole aggregation")
    return [lfta, hfta]


def _hfta_only_functions(q: AnalyzedQuery) -> set[str]:
    names = set()
    exprs = list(q.where) + [e for _, e in q.select]
    for e in exprs:
        for n in walk(e):
            if isinstance(n, ast.Call) and n.info is not None and not (n.info.lfta_ok and n.info.cheap):
                names.add(n.name)
    return names


def expand_interface_sets(nodes: list[PlanNode], ifaces: "Interfaces") -> list[PlanNode]:
    """An LFTA over an interface set runs once per member; a merge HFTA on the
    LFTA's temporal column joins their outputs into the stream the rest of
    the plan reads (seed 000: FROM [main0_and_control].DataProtocol)."""
    import dataclasses
    out: list[PlanNode] = []
    for n in nodes:
        if n.level == "lfta" and not n.iface:
            n.iface = ifaces.default
        members = ifaces.sets.get(n.iface) if n.level == "lfta" else None
        if not members or len(members) < 2:
            out.append(n)
            continue
        tcols = [c for c in n.output.columns if c.temporal.is_temporal]
        if not tcols:
            from .diagnostics import GsqlError
            raise GsqlError(n.query.query.span, "interface-set",
                            f"query {n.query.name} reads the interface set [{n.iface}], whose "
                            "members' outputs are merged in temporal order, but its LFTA "
                            "outputs no temporal column to merge on")
        copies = []
        for m in members:
            cname = f"{n.name}@{m}"
            copies.append(dataclasses.replace(n, name=cname, iface=m,
                                              output=StreamDef(cname, n.output.columns)))
        merge = PlanNode(n.name, "hfta", "merge", n.query, n.output, [], [],
                         inputs=[c.name for c in copies], input_defs=[c.output for c in copies],
                         params=n.params, merge=MergeInfo(tcols[0].name, 0.0),
                         note=f"merges the LFTAs of interface set [{n.iface}] "
                              f"({', '.join(members)}) on {tcols[0].name}")
        out += copies + [merge]
    return out


def make_plan(queries: list[AnalyzedQuery], ifaces: Optional["Interfaces"] = None,
              lfta_table_size: Optional[int] = None,
              lfta_table_ways: Optional[int] = None) -> Plan:
    """lfta_table_size, lfta_table_ways: the default slot count and
    associativity of LFTA aggregation tables (a query's DEFINEs still win)."""
    from .interfaces import Interfaces
    nodes: list[PlanNode] = []
    streams: dict[str, StreamDef] = {}
    for q in queries:
        for n in plan_query(q, streams):
            if lfta_table_size and n.level == "lfta" and n.kind == "aggregate" and not (
                    q.defines.get("lfta_table_size") or q.defines.get("aggregate_slots")):
                n.table_size = _power_of_two(lfta_table_size)
            if lfta_table_ways and n.level == "lfta" and n.kind == "aggregate" and \
                    not q.defines.get("lfta_table_ways"):
                n.table_ways = lfta_table_ways
            if n.level == "lfta" and n.kind == "aggregate":
                n.table_size = max(n.table_size, n.table_ways)
            nodes.append(n)
            streams[n.name] = n.output
    return Plan(expand_interface_sets(nodes, ifaces or Interfaces()), queries)


def describe_expr(e: ast.Expr, node: PlanNode) -> str:
    def names(x: ast.Expr) -> Optional[str]:
        if isinstance(x, FieldRef) and node.kind == "join":
            return f"{node.query.sources[x.source].alias}.{x.name}"
        if isinstance(x, GroupRef):
            return node.group_by[x.index][0] if node.group_by else f"group[{x.index}]"
        if isinstance(x, AggRef):
            return node.aggs[x.index].text if node.aggs else f"agg[{x.index}]"
        if isinstance(x, AccumRef):
            a = node.accums[x.index]
            inner = to_text(a.expr) if a.expr is not None else "1"
            return f"{a.op}({inner})"
        return None
    return to_text(e, names)
