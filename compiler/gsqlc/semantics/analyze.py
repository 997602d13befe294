"""Analysis: name resolution, types, temporal inference, legality rules.

analyze_query: ast.Query (parsed) + its resolved FROM sources ->
AnalyzedQuery.  semantics/resolve.py calls it once per query, in dependency
order (a query comes after every query it reads).  The AnalyzedQuery holds
bound expressions (see bound.py): new nodes, built here, each with its
ExprInfo (type, temporal direction, LFTA-legality); the parser's AST is left
as it was.

The passes it runs live by concern: binding.py (name resolution),
inference.py (types, temporal directions, overloads), joins.py (a
two-input query's JoinInfo), merge.py (MERGE), sampling.py (SUPERGROUP,
f$, CLEANING_WHEN/BY); what they make is the model of model.py.
"""
from __future__ import annotations

from ..errors import QueryError
from ..frontend import ast
from . import catalog
from .binding import Binder, is_aggregate_call
from .bound import conjuncts, walk
from .inference import not_supported, type_mismatch
from .joins import analyze_join, check_join_without_regexes, drop_temporal_of_empty_sides
from .merge import analyze_merge
from .model import (
    AnalyzedQuery,
    Column,
    GroupItem,
    SamplingInfo,
    Source,
    StreamDef,
)
from .sampling import analyze_sampling, is_sampling
from .types import Temporal, Type, parse_type_name

__all__ = ["analyze_query", "check_supported"]


# ---------------------------------------------------------------- checks of
# syntax that parses but does not execute yet


def check_supported(q: ast.Query) -> None:
    for g in q.group_by:
        if isinstance(g, ast.GroupingSets):   # expanded before analysis (grouping_sets.py)
            raise not_supported(g.span, g.kind.upper())


# ---------------------------------------------------------------- queries


def _output_name(item: ast.SelectItem, bound: ast.Expr, used: set[str], i: int) -> str:
    if item.alias:
        name = item.alias
    elif isinstance(item.expr, ast.ColumnRef):
        name = item.expr.name
    elif isinstance(item.expr, ast.Call):
        parts = [item.expr.name]
        for a in item.expr.args:
            if isinstance(a, ast.ColumnRef):
                parts.append(a.name)
            elif isinstance(a, ast.Star):
                pass
        name = "_".join(parts)
    else:
        name = f"col{i}"
    base, n = name, 2
    while name in used:
        name = f"{base}_{n}"
        n += 1
    used.add(name)
    return name


def analyze_query(q: ast.Query, name: str, file: str, sources: list[Source],
                  functions: catalog.Catalog = catalog.BUILTIN) -> AnalyzedQuery:
    check_supported(q)
    params: dict[str, Type] = {}
    for p in q.params:
        t = parse_type_name(p.type_name)
        if t is None:
            raise QueryError(p.span, "unknown-type", f"unknown type '{p.type_name}' of parameter ${p.name}")
        params[p.name] = t
    aq = AnalyzedQuery(q, name, file, params, sources, [], [], [], None, [],
                       StreamDef(name, []), defines=dict(q.defines.items), catalog=functions)
    b = Binder(aq)
    if q.is_merge:
        return analyze_merge(aq, b)
    if is_sampling(q, functions):
        aq.sampling = SamplingInfo()
    # WHERE
    for c in conjuncts(q.where):
        bc = b.bind_fields(c, "WHERE")
        if bc.info.type is not Type.BOOL:
            raise type_mismatch(c, f"a WHERE condition must be bool, got {bc.info.type}")
        aq.where.append(bc)
    # GROUP BY
    used_gb: set[str] = set()
    for g in q.group_by:
        assert isinstance(g, ast.GroupItem)
        be = b.bind_fields(g.expr, "GROUP BY")
        gname = g.alias or (g.expr.name if isinstance(g.expr, ast.ColumnRef) else None)
        if gname is None:
            gname = f"gb{len(aq.group_by)}"
        if gname in used_gb:
            raise QueryError(g.span, "duplicate-name", f"group-by name '{gname}' is used twice")
        used_gb.add(gname)
        aq.group_by.append(GroupItem(gname, be, g.span))
    has_aggs = any(isinstance(n, ast.Call) and is_aggregate_call(n, aq.catalog)
                   for s in q.select for n in walk(s.expr)) or \
        (q.having is not None and any(isinstance(n, ast.Call) and is_aggregate_call(n, aq.catalog)
                                      for n in walk(q.having)))
    grouped = bool(aq.group_by) or has_aggs
    if q.having is not None and not grouped:
        raise QueryError(q.having.span, "having-without-group-by",
                        "HAVING needs a GROUP BY")
    used: set[str] = set()
    for i, item in enumerate(q.select):
        if grouped:
            be = b.bind_grouped(item.expr, "SELECT")
        else:
            be = b.bind_fields(item.expr, "SELECT")
        cname = _output_name(item, be, used, i)
        aq.select.append((cname, be))
    if q.join is not None and q.join.kind == "filter" and len(sources) != 2:
        raise QueryError(q.join.span, "filter-join",
                        "FILTER_JOIN needs two FROM sources: the filter R, then the "
                        "filtered stream S (FROM R, S)")
    if len(sources) == 2:
        aq.join = analyze_join(aq)
        check_join_without_regexes(aq, aq.join)
        drop_temporal_of_empty_sides(aq, aq.join)
    if q.having is not None:
        hb = b.bind_grouped(q.having, "HAVING")
        if hb.info.type is not Type.BOOL:
            raise type_mismatch(q.having, f"HAVING must be bool, got {hb.info.type}")
        aq.having = hb
    if aq.sampling is not None:
        analyze_sampling(aq, b)
    if q.closing_when is not None:
        if aq.sampling is not None:
            raise not_supported(q.closing_when.span, "CLOSING_WHEN in a sampling query")
        if not grouped or not aq.group_by:
            raise QueryError(q.closing_when.span, "closing-when",
                             "CLOSING_WHEN needs a GROUP BY: it says when a running "
                             "aggregation's group is discarded at an epoch's end")
        cb = b.bind_grouped(q.closing_when, "CLOSING_WHEN")
        if cb.info.type is not Type.BOOL:
            raise type_mismatch(q.closing_when, f"CLOSING_WHEN must be bool, got {cb.info.type}")
        aq.closing = cb
    if grouped:
        temporal = [g for g in aq.group_by if g.expr.info.temporal.is_temporal]
        if not temporal:
            span = q.group_by_span or (q.group_by[0].span if q.group_by else q.span)
            what = ("GROUP BY has no temporal expression" if aq.group_by
                    else "an aggregation without GROUP BY has no temporal group-by")
            raise QueryError(
                span, "temporal-group-by",
                f"{what}: an aggregation must group by at least one increasing or "
                "decreasing expression (e.g. GROUP BY time/60 as tb), so that its "
                "epochs close; fields declared increasing/decreasing in the schema "
                "are temporal")
    aq.output = StreamDef(name, [Column(n, e.info.type, e.info.temporal
                                        if e.info.temporal.is_temporal else Temporal.NONE)
                                 for n, e in aq.select])
    return aq
