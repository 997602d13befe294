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
from .bound import conjuncts, rebuild, walk
from .model import Source


def is_join_aggregate(q: ast.Query, functions: catalog.Catalog = catalog.BUILTIN) -> bool:
    if q.is_merge or len(q.from_) != 2:
        return False
    if q.group_by or q.having is not None:
        return True
    return any(_has_aggregate(s.expr, functions) for s in q.select)


def _has_aggregate(e: ast.Expr, functions: catalog.Catalog = catalog.BUILTIN) -> bool:
    return any(isinstance(n, ast.Call) and functions.is_aggregate(n.name) and not n.predicate
               for n in walk(e))


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
        return _rename_some(e, self, keep, set(range(len(self.sources))))


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
    closing = fields.rename(q.closing_when, groups) if q.closing_when is not None else None
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
    join_q.closing_when = None
    agg_defines = dict(q.defines.items)
    agg = ast.Query(ast.OptionBlock(agg_defines, dict(q.defines.item_spans), span=q.defines.span),
                    copy.deepcopy(q.params), select,
                    [ast.TableRef(join_name, span=q.from_[0].span)],
                    where=None, group_by=group_by, group_by_span=q.group_by_span,
                    having=having, closing_when=closing, span=q.span)
    return join_name, join_q, agg


def check_no_join_kind_options(q: ast.Query) -> Optional[QueryError]:
    """A FILTER_JOIN cannot feed an aggregation in one query (its semantics
    are a join's output order): the error, or None."""
    if q.join is not None and q.join.kind == "filter":
        return QueryError(q.join.span, "not-supported-yet",
                          "an aggregation over a FILTER_JOIN in one query is not supported "
                          "yet by gsqlc: write the join as a query and aggregate FROM it")
    return None


# ---------------------------------------------------------------- joins of
# more than two sources


def is_multi_join(q: ast.Query) -> bool:
    return not q.is_merge and len(q.from_) > 2


def _conjoin(parts: list[ast.Expr]) -> Optional[ast.Expr]:
    out: Optional[ast.Expr] = None
    for p in parts:
        out = p if out is None else ast.Binary("AND", out, p, span=p.span)
    return out


def _sources_read(e: ast.Expr, fields: _Fields, keep: set[str]) -> set[int]:
    out: set[int] = set()
    for n in walk(e):
        if isinstance(n, ast.ColumnRef) and not (n.table is None and n.name in keep):
            out.add(fields.source_of(n))
    return out


def split_first_join(q: ast.Query, name: str, sources: Sequence[Source]
                     ) -> tuple[str, ast.Query, ast.Query]:
    """A join of n > 2 sources as the join of the first two, `<name>__j<n-1>`
    (the WHERE conjuncts reading only them, every field the query reads of
    them as <alias>__<field>), and the query over it and the other sources
    (references to the first two renamed).  Inner joins only."""
    if q.join is not None and q.join.kind != "inner":
        raise QueryError(q.join.span, "not-supported-yet",
                         f"a {q.join.kind.upper()} join of more than two sources is not "
                         "supported yet by gsqlc (inner joins are): write the joins as queries")
    fields = _Fields(sources)
    groups = _group_names(q)
    pair = {0, 1}
    inner: list[ast.Expr] = []
    outer: list[ast.Expr] = []
    for c in conjuncts(q.where):
        (inner if _sources_read(c, fields, set()) <= pair else outer).append(c)
    # every field of the first two sources the rest of the query reads, renamed
    first = _Fields(sources)

    def rename_first(e: ast.Expr, keep: set[str]) -> ast.Expr:
        return _rename_some(e, first, keep, pair)
    new_where = _conjoin([rename_first(c, set()) for c in outer])
    select = [ast.SelectItem(rename_first(s.expr, groups),
                             alias=s.alias or (s.expr.name if isinstance(s.expr, ast.ColumnRef)
                                               else None), span=s.span)
              for s in q.select]
    group_by: list[ast.GroupItem | ast.GroupingSets] = []
    for g in q.group_by:
        assert isinstance(g, ast.GroupItem)
        alias = g.alias or (g.expr.name if isinstance(g.expr, ast.ColumnRef) else None)
        group_by.append(ast.GroupItem(rename_first(g.expr, set()), alias=alias, span=g.span))
    having = rename_first(q.having, groups) if q.having is not None else None
    join_name = f"{name}__j{len(sources) - 1}"
    defines = dict(q.defines.items)
    defines["query_name"] = join_name
    join_q = ast.Query(ast.OptionBlock(defines, dict(q.defines.item_spans), span=q.defines.span),
                       copy.deepcopy(q.params),
                       [ast.SelectItem(ast.ColumnRef(f, table=sources[i].alias, span=q.span),
                                       alias=out, span=q.span)
                        for (i, f), out in sorted(first.read.items())],
                       [copy.deepcopy(q.from_[0]), copy.deepcopy(q.from_[1])],
                       where=_conjoin(inner), span=q.span)
    if not first.read:
        raise QueryError(q.from_[1].span, "join",
                         f"the join reads no field of '{sources[0].alias}' or "
                         f"'{sources[1].alias}' beyond its join conditions")
    rest = copy.deepcopy(q)
    rest.from_ = [ast.TableRef(join_name, alias=f"_{join_name}", span=q.from_[0].span),
                  *copy.deepcopy(q.from_[2:])]
    rest.where, rest.select, rest.group_by, rest.having = new_where, select, group_by, having
    return join_name, join_q, rest


def _rename_some(e: ast.Expr, fields: _Fields, keep: set[str], which: set[int]) -> ast.Expr:
    """e with the references to the sources `which` renamed to
    <alias>__<field> (unqualified, unique across the join's output)."""
    def fn(n: ast.Expr) -> Optional[ast.Expr]:
        if not isinstance(n, ast.ColumnRef):
            return None
        if n.table is None and n.name in keep:
            return n
        i = fields.source_of(n)
        if i not in which:
            return n
        out = f"{fields.sources[i].alias}__{n.name}"
        fields.read[(i, n.name)] = out
        return ast.ColumnRef(out, span=n.span)
    return rebuild(e, fn)
