"""Sampling queries (Tigon SQL User Manual 6.2.13): SUPERGROUP,
super-aggregates f$, CLEANING_WHEN/BY, stateful functions in an
aggregation.  is_sampling recognizes one; analyze_sampling checks its
supergroup and binds its cleaning clauses into the query's SamplingInfo.
"""
from __future__ import annotations

from ..errors import QueryError
from ..frontend import ast
from . import catalog
from .binding import Binder
from .bound import walk
from .inference import type_mismatch
from .model import AnalyzedQuery
from .types import Type


def is_sampling(q: ast.Query, cat: catalog.Catalog) -> bool:
    """Whether q is a sampling query: SUPERGROUP, CLEANING_WHEN/BY, a
    super-aggregate, or a stateful function in an aggregation."""
    if q.supergroup or q.cleaning_when is not None or q.cleaning_by is not None:
        return True
    exprs = [s.expr for s in q.select] + [x for x in (q.where, q.having) if x is not None]
    exprs += [g.expr for g in q.group_by if isinstance(g, ast.GroupItem)]
    calls = [n for e in exprs for n in walk(e) if isinstance(n, ast.Call)]
    if any(c.superagg for c in calls):
        return True
    return bool(q.group_by) and any(
        f.state is not None for c in calls for f in cat.scalar_overloads(c.name))


def analyze_sampling(aq: AnalyzedQuery, b: Binder) -> None:
    """SUPERGROUP (group-by variables, not temporal ones), CLEANING_WHEN and
    CLEANING_BY (both or neither), bound as HAVING is."""
    q, sampling = aq.query, aq.sampling
    assert sampling is not None
    span = q.supergroup_span or q.span
    if not aq.group_by:
        raise QueryError(span, "sampling", "a sampling query (SUPERGROUP, CLEANING_WHEN/BY, "
                         "super-aggregates, stateful functions) needs a GROUP BY with a "
                         "temporal variable: its windows")
    for g in aq.group_by:
        for n in walk(g.expr):
            f = n.info.func if isinstance(n, ast.Call) and n.info is not None else None
            if f is not None and f.state is not None:
                raise QueryError(n.span, "sampling", f"the stateful function {f.name} in GROUP "
                                 "BY: a group's values decide its supergroup, whose state the "
                                 "function reads")
    for name in q.supergroup:
        idx = next((i for i, g in enumerate(aq.group_by) if g.name == name), None)
        if idx is None:
            raise QueryError(span, "sampling", f"SUPERGROUP variable '{name}' is not a GROUP "
                             "BY variable (" + ", ".join(g.name for g in aq.group_by) + ")")
        if aq.group_by[idx].expr.info.temporal.is_temporal:
            raise QueryError(span, "sampling", f"SUPERGROUP variable '{name}' is temporal: a "
                             "supergroup lives within its window")
        if idx not in sampling.supergroup:
            sampling.supergroup.append(idx)
    if (q.cleaning_when is None) != (q.cleaning_by is None):
        given = q.cleaning_when if q.cleaning_when is not None else q.cleaning_by
        assert given is not None
        raise QueryError(given.span, "sampling", "CLEANING_WHEN and CLEANING_BY go together: "
                         "the one says when a cleaning phase runs, the other which groups it "
                         "keeps")
    for clause, attr in ((q.cleaning_when, "cleaning_when"), (q.cleaning_by, "cleaning_by")):
        if clause is None:
            continue
        what = attr.upper()
        bound = b.bind_grouped(clause, what)
        if bound.info.type is not Type.BOOL:
            raise type_mismatch(clause, f"{what} must be bool, got {bound.info.type}")
        setattr(sampling, attr, bound)
