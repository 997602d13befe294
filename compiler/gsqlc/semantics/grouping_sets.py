"""GROUP BY with CUBE, ROLLUP and GROUPING_SETS (Tigon SQL User Manual
§6.2.11.2) as queries gsqlc already runs.

A record updates one group per grouping pattern; a group-by variable
outside a pattern holds its type's default value (0, 0.0.0.0, '', FALSE).
The patterns of a GROUP BY are the product of its entries' patterns: a
plain item is in every pattern, CUBE(a, b) gives (a, b), (a, -), (-, b),
(-, -); ROLLUP(a, b) gives (a, b), (a, -), (-, -); GROUPING_SETS((a, b),
(a)) gives exactly those.  A variable may appear in one entry only.

The query becomes one aggregation query per pattern, `<name>__gs<k>`, the
same query with the absent variables grouped by their default value
(ast.DefaultOf, bound by analysis once the variable's type is known), and
the query's own name a MERGE of them on their first temporal output column
(merge_query, made once the patterns are analysed).  Each pattern's groups
are its own: a group of one pattern whose values equal another pattern's
(a real 0.0.0.0 next to a defaulted one) is output once per pattern.
"""
from __future__ import annotations

import copy
import itertools
from typing import Optional

from ..errors import QueryError
from ..frontend import ast

# patterns a GROUP BY may expand to (CUBE of 6 variables: 64)
MAX_PATTERNS = 256


def has_grouping_sets(q: ast.Query) -> bool:
    return any(isinstance(g, ast.GroupingSets) for g in q.group_by)


def _item_name(g: ast.GroupItem) -> str:
    if g.alias:
        return g.alias
    if isinstance(g.expr, ast.ColumnRef):
        return g.expr.name
    raise QueryError(g.span, "grouping-sets", "an item of CUBE, ROLLUP or GROUPING_SETS that "
                     "is not a plain field needs a name: write it as `expr AS name`")


def _entry_patterns(g: ast.GroupingSets) -> tuple[list[ast.GroupItem], list[list[bool]]]:
    """The items an entry groups by (in order, each once) and its patterns:
    for each, which of the items are present."""
    if g.kind == "grouping_sets":
        items: list[ast.GroupItem] = []
        names: list[str] = []
        sets: list[list[str]] = []
        for s in g.items:
            here = []
            for it in s:
                n = _item_name(it)
                if n not in names:
                    names.append(n)
                    items.append(it)
                here.append(n)
            sets.append(here)
        return items, [[n in s for n in names] for s in sets]
    items = list(g.items)
    width = len(items)
    if g.kind == "cube":
        pats = [[bool(mask >> (width - 1 - i) & 1) for i in range(width)]
                for mask in range((1 << width) - 1, -1, -1)]
    else:   # rollup: (a, b, c), (a, b, -), (a, -, -), (-, -, -)
        pats = [[i < k for i in range(width)] for k in range(width, -1, -1)]
    return items, pats


def expand(q: ast.Query, name: str) -> list[tuple[str, ast.Query]]:
    """The pattern queries of q (named `<name>__gs<k>`), in pattern order."""
    seen: dict[str, ast.GroupItem] = {}
    entries: list[tuple[list[ast.GroupItem], list[list[bool]]]] = []
    for g in q.group_by:
        if isinstance(g, ast.GroupingSets):
            items, pats = _entry_patterns(g)
        else:
            items, pats = [g], [[True]]
        for it in items:
            n = _item_name(it) if isinstance(g, ast.GroupingSets) else (
                it.alias or (it.expr.name if isinstance(it.expr, ast.ColumnRef) else ""))
            if n and n in seen:
                raise QueryError(it.span, "grouping-sets",
                                 f"group-by variable '{n}' appears in two entries of the GROUP "
                                 "BY; a variable may be referenced in one entry only",
                                 notes=[(seen[n].span, "first referenced here")])
            if n:
                seen[n] = it
        entries.append((items, pats))
    count = 1
    for _, pats in entries:
        count *= len(pats)
    if count > MAX_PATTERNS:
        raise QueryError(q.group_by_span or q.span, "grouping-sets",
                         f"the GROUP BY makes {count} grouping patterns; at most {MAX_PATTERNS}")
    out = []
    for k, combo in enumerate(itertools.product(*(pats for _, pats in entries))):
        group_by: list[ast.GroupItem | ast.GroupingSets] = []
        for (items, _), present in zip(entries, combo):
            for it, here in zip(items, present):
                if here:
                    group_by.append(copy.deepcopy(it))
                else:
                    expr = copy.deepcopy(it.expr)
                    group_by.append(ast.GroupItem(ast.DefaultOf(expr, span=it.span),
                                                  alias=_item_name(it), span=it.span))
        pq = copy.deepcopy(q)
        pq.group_by = group_by
        pname = f"{name}__gs{k}"
        items_ = dict(q.defines.items)
        items_["query_name"] = pname
        pq.defines = ast.OptionBlock(items_, dict(q.defines.item_spans), span=q.defines.span)
        out.append((pname, pq))
    return out


def merge_query(q: ast.Query, name: str, patterns: list[str],
                temporal: Optional[str]) -> ast.Query:
    """The query `name`: a MERGE of its pattern queries' outputs on their
    temporal column `temporal` (None: the outputs have none, an error)."""
    if temporal is None:
        raise QueryError(q.group_by_span or q.span, "grouping-sets",
                         "CUBE, ROLLUP and GROUPING_SETS need a temporal group-by variable "
                         "outside them in the SELECT (e.g. GROUP BY time/60 AS tb, "
                         "CUBE(...) with tb selected): the patterns' results are merged on it")
    refs = [ast.TableRef(p, alias=f"_gs{k}", span=q.span) for k, p in enumerate(patterns)]
    fields = [ast.ColumnRef(temporal, table=r.alias, span=q.span) for r in refs]
    defines = ast.OptionBlock({"query_name": name}, {}, span=q.defines.span)
    return ast.Query(defines, [], [], refs, is_merge=True, merge_fields=fields, span=q.span)
