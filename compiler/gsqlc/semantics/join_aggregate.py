"""An aggregation over a join in one query (Tigon allows
`SELECT ... FROM A, B WHERE ... GROUP BY ...`) as two queries gsqlc runs:
the join, `<name>__join`, selecting every field the query reads of either
source (as `<alias>__<field>`) under the query's WHERE and join kind, and
the aggregation itself over it -- its SELECT, GROUP BY and HAVING with each
field reference renamed, a selected plain field keeping its name.

Made once the two FROM sources are resolved (semantics/resolve.py), since an
unqualified field name belongs to whichever source has it.
"""
from __future__ import annotations

import copy
from typing import Optional, Sequence

from ..errors import QueryError
from ..frontend import ast
from . import catalog
from .analyze import Source
from .bound import children


def is_join_aggregate(q: ast.Query) -> bool:
    if q.is_merge or len(q.from_) != 2:
        return False
    if q.group_by or q.having is not None:
        return True
    return any(_has_aggregate(s.expr) for s in q.select)


def _has_aggregate(e: ast.Expr) -> bool:
    if isinstance(e, ast.Call) and catalog.lookup_aggregate(e.name) and \
            not catalog.lookup_scalar(e.name):
        return True
    if isinstance(e, ast.DefaultOf):
        return _has_aggregate(e.expr)
    return any(_has_aggregate(c) for c in children(e))


def _kids(e: ast.Expr) -> list[ast.Expr]:
    return [e.expr] if isinstance(e, ast.DefaultOf) else children(e)


def _group_names(q: ast.Query) -> set[str]:
    out = set()
    for g in q.group_by:
        if isinstance(g, ast.GroupItem):
            if g.alias:
                out.add(g.alias)
            elif isinstance(g.expr, ast.ColumnRef):
                out.add(g.expr.name)
    return out


class _Fields:
    """The fields the query reads, each as (source index, field name), and
    their names in the join's output."""

    def __init__(self, sources: Sequence[Source]):
        self.sources = sources
        self.read: dict[tuple[int, str], str] = {}

    def source_of(self, ref: ast.ColumnRef) -> int:
        if ref.table is not None:
            for i, s in enumerate(self.sources):
                if s.alias == ref.table:
                    return i
            raise QueryError(ref.span, "unknown-table",
                             f"no FROM source named '{ref.table}' (sources: "
                             f"{', '.join(s.alias for s in self.sources)})")
        have = [i for i, s in enumerate(self.sources) if s.column(ref.name) is not None]
        if len(have) == 1:
            return have[0]
        if not have:
            raise QueryError(ref.span, "unknown-field",
                             f"no field '{ref.name}' in either FROM source")
        raise QueryError(ref.span, "ambiguous-field",
                         f"field '{ref.name}' is in both FROM sources: write "
                         f"{self.sources[0].alias}.{ref.name} or "
                         f"{self.sources[1].alias}.{ref.name}")

    def rename(self, e: ast.Expr, keep: set[str]) -> ast.Expr:
        """e with every field reference renamed to its join output column
        (unqualified names in `keep`, group-by variables, stay)."""
        if isinstance(e, ast.ColumnRef):
            if e.table is None and e.name in keep:
                return e
            i = self.source_of(e)
            out = f"{self.sources[i].alias}__{e.name}"
            self.read[(i, e.name)] = out
            return ast.ColumnRef(out, span=e.span)
        n = copy.copy(e)
        if isinstance(n, ast.DefaultOf):
            n.expr = self.rename(n.expr, keep)
        elif isinstance(n, ast.Unary):
            n.operand = self.rename(n.operand, keep)
        elif isinstance(n, ast.Binary):
            n.left, n.right = self.rename(n.left, keep), self.rename(n.right, keep)
        elif isinstance(n, ast.InList):
            n.expr = self.rename(n.expr, keep)
            n.items = [self.rename(x, keep) for x in n.items]
        elif isinstance(n, ast.Call):
            n.args = [self.rename(x, keep) for x in n.args]
        return n


def split(q: ast.Query, name: str, sources: Sequence[Source]) -> tuple[str, ast.Query, ast.Query]:
    """(the join's name, the join query, the aggregation over it)."""
    fields = _Fields(sources)
    groups = _group_names(q)
    group_by: list[ast.GroupItem | ast.GroupingSets] = []
    for g in q.group_by:
        assert isinstance(g, ast.GroupItem)   # grouping sets are expanded first
        alias = g.alias or (g.expr.name if isinstance(g.expr, ast.ColumnRef) else None)
        group_by.append(ast.GroupItem(fields.rename(g.expr, set()), alias=alias, span=g.span))
    select = []
    for s in q.select:
        alias = s.alias or (s.expr.name if isinstance(s.expr, ast.ColumnRef) else None)
        select.append(ast.SelectItem(fields.rename(s.expr, groups), alias=alias, span=s.span))
    having = fields.rename(q.having, groups) if q.having is not None else None
    # the WHERE reads fields only (it runs in the join)
    if q.where is not None:
        fields.rename(q.where, set())
    join_name = f"{name}__join"
    join_defines = dict(q.defines.items)
    join_defines["query_name"] = join_name
    join_select = [ast.SelectItem(ast.ColumnRef(f, table=sources[i].alias, span=q.span),
                                  alias=out, span=q.span)
                   for (i, f), out in sorted(fields.read.items())]
    join_q = copy.deepcopy(q)
    join_q.defines = ast.OptionBlock(join_defines, dict(q.defines.item_spans), span=q.defines.span)
    join_q.select = join_select
    join_q.group_by, join_q.group_by_span, join_q.having = [], None, None
    agg_defines = dict(q.defines.items)
    agg = ast.Query(ast.OptionBlock(agg_defines, dict(q.defines.item_spans), span=q.defines.span),
                    copy.deepcopy(q.params), select,
                    [ast.TableRef(join_name, span=q.from_[0].span)],
                    where=None, group_by=group_by, group_by_span=q.group_by_span,
                    having=having, span=q.span)
    return join_name, join_q, agg


def check_no_join_kind_options(q: ast.Query) -> Optional[QueryError]:
    """A FILTER_JOIN cannot feed an aggregation in one query (its semantics
    are a join's output order): the error, or None."""
    if q.join is not None and q.join.kind == "filter":
        return QueryError(q.join.span, "not-supported-yet",
                          "an aggregation over a FILTER_JOIN in one query is not supported "
                          "yet by gsqlc: write the join as a query and aggregate FROM it")
    return None
