"""Two-input queries: the temporal join (equality keys and a band on one
temporal relation between the inputs, inner or outer) and FILTER_JOIN (a
windowed semi-join), each read from the WHERE conjuncts into a JoinInfo.
"""
from __future__ import annotations

import dataclasses
from typing import Iterator, Optional

from ..errors import QueryError
from ..frontend import ast
from . import catalog
from .binding import Scope, define_literal
from .bound import FieldRef, key, walk
from .inference import INT_LITERAL_KINDS, not_supported
from .model import AnalyzedQuery, JoinInfo
from .types import Temporal


def _sides(e: ast.Expr) -> set[int]:
    return {n.source for n in walk(e) if isinstance(n, FieldRef)}


def const_value(e: ast.Expr) -> Optional[float]:
    """The value of a constant numeric expression (literals and + - * of
    them), or None."""
    if isinstance(e, ast.Literal) and isinstance(e.value, (int, float)) and \
            not isinstance(e.value, bool):
        return e.value
    if isinstance(e, ast.Unary) and e.op == "-":
        v = const_value(e.operand)
        return -v if v is not None else None
    if isinstance(e, ast.Binary) and e.op in ("+", "-", "*"):
        a, b2 = const_value(e.left), const_value(e.right)
        if a is None or b2 is None:
            return None
        return a + b2 if e.op == "+" else (a - b2 if e.op == "-" else a * b2)
    return None


def _split_offset(e: ast.Expr) -> tuple[ast.Expr, float]:
    """e = x + c or x - c with c constant: (x, +-c); otherwise (e, 0)."""
    if isinstance(e, ast.Binary) and e.op in ("+", "-"):
        c = const_value(e.right)
        if c is not None and _sides(e.left):
            return e.left, (c if e.op == "+" else -c)
    return e, 0


_FLIP = {"<": ">", ">": "<", "<=": ">=", ">=": "<=", "=": "="}


_Filters = tuple[list[ast.Expr], list[ast.Expr]]   # single-input conjuncts per input


def _join_conditions(aq: AnalyzedQuery, filters: _Filters, other: str
                     ) -> Iterator[tuple[ast.Expr, ast.Expr, str, ast.Expr]]:
    """Sorts the WHERE conjuncts of a two-input query: one over a single
    input goes to that input's list in `filters` (a constant one to the
    first); each one relating the inputs is yielded as (c, left, op, right),
    a comparison with `left` over input 0 and `right` over input 1.  `other`
    names what is not supported, for any other condition between the inputs."""
    for c in aq.where:
        sides = _sides(c)
        if len(sides) <= 1:
            filters[next(iter(sides)) if sides else 0].append(c)
            continue
        if not (isinstance(c, ast.Binary) and c.op in ("=", "<", ">", "<=", ">=")):
            raise not_supported(c.span, other)
        left, right, op = c.left, c.right, c.op
        if _sides(left) == {1} and _sides(right) == {0}:
            left, right, op = right, left, _FLIP[op]
        if _sides(left) != {0} or _sides(right) != {1}:
            raise not_supported(c.span, "a join condition mixing both inputs on one side")
        yield c, left, op, right


def analyze_join(aq: AnalyzedQuery) -> JoinInfo:
    q = aq.query
    if q.join is not None and q.join.kind == "filter":
        return _analyze_filter_join(aq)
    kind = {"inner": "inner", "left": "left", "right": "right", "outer": "full"}.get(
        q.join.kind if q.join else "inner", "inner")
    span = q.join.span if q.join else q.from_[1].span
    filters: _Filters = ([], [])
    keys: list[tuple[ast.Expr, ast.Expr]] = []
    times: list[tuple[ast.Expr, ast.Expr]] = []
    lo: Optional[float] = None
    hi: Optional[float] = None
    fill: dict[tuple[int, str], tuple[int, str]] = {}
    for c, left, op, right in _join_conditions(
            aq, filters, "a join condition other than equalities and a temporal band "
            "between the two inputs"):
        lt, rt = left.info.temporal, right.info.temporal
        if op == "=" and not (lt.is_temporal and rt.is_temporal):
            keys.append((left, right))
            if isinstance(left, FieldRef) and isinstance(right, FieldRef):
                fill[(1, right.name)] = (0, left.name)
                fill[(0, left.name)] = (1, right.name)
            continue
        # A temporal relation: left_time OP right_time + offset.
        rx, off = _split_offset(right)
        lx, loff = _split_offset(left)
        off -= loff
        if not (lx.info.temporal.is_temporal and rx.info.temporal.is_temporal):
            raise QueryError(c.span, "temporal-join",
                            "a join inequality must relate temporal expressions of the two "
                            "inputs (e.g. R.t >= S.t - 5 and R.t <= S.t + 5)")
        if times and (key(times[0][0]), key(times[0][1])) != (key(lx), key(rx)):
            raise not_supported(c.span, "a join on two different temporal relations")
        times = [(lx, rx)]
        integral = lx.info.type.is_integer and rx.info.type.is_integer
        # l OP r + off; the band is r in [l - lo, l + hi].
        if op == "=":
            lo = off if lo is None else min(lo, off)
            hi = -off if hi is None else min(hi, -off)
            if isinstance(lx, FieldRef) and isinstance(rx, FieldRef) and off == 0:
                fill[(1, rx.name)] = (0, lx.name)
                fill[(0, lx.name)] = (1, rx.name)
        elif op in (">=", ">"):      # r <= l - off  (strict: r <= l - off - 1)
            v = -off - (1 if op == ">" and integral else 0)
            hi = v if hi is None else min(hi, v)
        else:                         # r >= l - off  (strict: r >= l - off + 1)
            v = off - (1 if op == "<" and integral else 0)
            lo = v if lo is None else min(lo, v)
    if not times:
        raise QueryError(span, "temporal-join",
                        "a join must relate a temporal field of each input, by an equality "
                        "(R.tb = S.tb) or a band (R.t >= S.t - 5 and R.t <= S.t + 5), so that "
                        "its state can be purged as both inputs progress")
    if lo is None or hi is None:
        raise QueryError(span, "temporal-join",
                        "the temporal join band is open on one side: bound it both ways "
                        "(R.t >= S.t - a and R.t <= S.t + b)")
    if lo + hi < 0:
        raise QueryError(span, "temporal-join", "the temporal join band is empty")
    lx, rx = times[0]
    if lx.info.temporal != rx.info.temporal:
        raise QueryError(span, "temporal-join",
                        "the joined temporal expressions must run in the same direction")
    if lx.info.temporal is Temporal.DECREASING:
        raise not_supported(span, "a join on decreasing temporal fields")
    return JoinInfo(kind, (lx, rx), lo, hi, keys, filters, fill, span)


# The sides whose fields an outer join's unmatched rows of the other side
# leave empty (zero).
_EMPTY_SIDES = {"inner": (), "left": (1,), "right": (0,), "full": (0, 1)}


def drop_temporal_of_empty_sides(aq: AnalyzedQuery, j: JoinInfo) -> None:
    """An outer join's unmatched row leaves the fields of the missing side
    empty, except those the join predicate equates with a field of the
    present side (the key-fill rule, `j.fill`).  An output column reading
    such an unfilled field (e.g. B.time of a LEFT_OUTER_JOIN on a band) then
    holds zero on those rows, so it follows no order and bounds nothing: it
    is not temporal."""
    empty = _EMPTY_SIDES.get(j.kind, ())
    for i, (name, e) in enumerate(aq.select):
        if not e.info.temporal.is_temporal:
            continue
        if any(isinstance(n, FieldRef) and n.source in empty and (n.source, n.name) not in j.fill
               for n in walk(e)):
            aq.select[i] = (name, dataclasses.replace(
                e, info=dataclasses.replace(e.info, temporal=Temporal.NONE)))


def check_join_without_regexes(aq: AnalyzedQuery, j: JoinInfo) -> None:
    """The join operators hold no compiled regular expressions: no function
    taking a pattern may run inside a join (in its keys, time, filters or
    output columns)."""
    exprs = [e for _, e in aq.select] + list(j.time) + [e for pair in j.keys for e in pair]
    for e in exprs + j.filters[0] + j.filters[1]:
        for n in walk(e):
            f = catalog.lookup_scalar(n.name) if isinstance(n, ast.Call) else None
            if f is not None and f.handle_args and f.handle_kind == "regex":
                raise QueryError(aq.query.span, "not-supported-yet",
                                 "regular-expression functions inside a join are not "
                                 "supported yet")
            if f is not None and (f.out_buffer or f.handle_kind == "map"):
                raise QueryError(n.span, "not-supported-yet",
                                 f"{f.name} inside a join is not supported yet by gsqlc")


# ---------------------------------------------------------------- filter join



def _analyze_filter_join(aq: AnalyzedQuery) -> JoinInfo:
    """FILTER_JOIN(R.col, N) ... FROM R, S (docs/language.md, "FILTER_JOIN"): a windowed
    semi-join.  R, the first source, fills a filter keyed on the WHERE's
    equalities between the inputs; an S tuple passes when an R tuple of equal
    keys had R.col in [s_t - N + 1, s_t], s_t being the expression of S that
    WHERE relates R.col to (R.col = S.t, or a band on them)."""
    q = aq.query
    spec = q.join
    assert spec is not None and len(spec.args) == 2
    r_alias, s_alias = aq.sources[0].alias, aq.sources[1].alias
    col_e, n_e = spec.args
    if not isinstance(col_e, ast.ColumnRef):
        raise QueryError(col_e.span, "filter-join",
                        "the first argument of FILTER_JOIN must be a field of the first FROM "
                        f"source '{r_alias}' that is declared increasing "
                        f"(e.g. FILTER_JOIN({r_alias}.time, 10))")
    col = Scope(aq).lookup(col_e)
    cname = f"{r_alias}.{col.name}"
    if col.source != 0:
        raise QueryError(col_e.span, "filter-join",
                        f"FILTER_JOIN's column must be a field of the first FROM source "
                        f"'{r_alias}', which fills the filter; '{col.name}' is a field of "
                        f"'{s_alias}', the stream being filtered")
    if col.info.temporal is not Temporal.INCREASING:
        raise QueryError(col_e.span, "filter-join",
                        f"FILTER_JOIN's column {cname} is not increasing: the window of N "
                        f"epochs is measured on a temporal field of '{r_alias}' declared "
                        "increasing")
    n_lit = define_literal(n_e.name, aq, n_e.span) if isinstance(n_e, ast.DefineRef) else n_e
    if not (isinstance(n_lit, ast.Literal) and n_lit.kind in INT_LITERAL_KINDS
            and isinstance(n_lit.value, int) and n_lit.value >= 1):
        raise QueryError(n_e.span, "filter-join",
                        "FILTER_JOIN's window N must be a positive integer literal: an R "
                        f"tuple passes S tuples for N units of {cname} "
                        f"(FILTER_JOIN({cname}, 10))")
    window = int(n_lit.value)

    filters: _Filters = ([], [])
    keys: list[tuple[ast.Expr, ast.Expr]] = []
    fill: dict[tuple[int, str], tuple[int, str]] = {}
    s_time: Optional[ast.Expr] = None
    for c, left, op, right in _join_conditions(
            aq, filters, "a FILTER_JOIN condition other than equalities and a temporal "
            "relation between the two inputs"):
        lx, _ = _split_offset(left)
        rx, _ = _split_offset(right)
        if isinstance(lx, FieldRef) and lx.name == col.name:
            # Relates R.col to S: it only picks S's time (the window is N).
            if rx.info.temporal is not Temporal.INCREASING:
                raise QueryError(c.span, "temporal-join",
                                f"{cname} must be related to an increasing temporal field of "
                                f"'{s_alias}' (e.g. {cname} = {s_alias}.time): that field orders "
                                f"'{s_alias}' against the FILTER_JOIN window")
            if s_time is not None and key(s_time) != key(rx):
                raise QueryError(c.span, "filter-join",
                                f"{cname} is related to two different expressions of "
                                f"'{s_alias}': relate it to one temporal field")
            s_time = rx
            continue
        if op == "=":
            keys.append((left, right))
            if isinstance(left, FieldRef) and isinstance(right, FieldRef):
                fill[(0, left.name)] = (1, right.name)
            continue
        raise QueryError(c.span, "filter-join",
                        "a FILTER_JOIN condition between the inputs is an equality (a key) or "
                        f"relates {cname} to a temporal field of '{s_alias}'; the window is "
                        "FILTER_JOIN's N, not a band")
    if s_time is None:
        raise QueryError(spec.span, "temporal-join",
                        f"a FILTER_JOIN must relate its column {cname} to an increasing "
                        f"temporal field of '{s_alias}' in WHERE ({cname} = {s_alias}.time, "
                        f"or a band): that field is the time of an '{s_alias}' tuple, in "
                        f"the units of {cname}")
    if not keys:
        raise QueryError(spec.span, "filter-join",
                        "a FILTER_JOIN needs at least one equality between the two inputs "
                        f"in WHERE besides the temporal one ({r_alias}.k = {s_alias}.k): "
                        "the keys the filter remembers")
    # Only S tuples come out: a field of R is known only where WHERE equates
    # it with a field of S.  Such a column is not temporal in the output,
    # which follows S's order.
    for i, (name, e) in enumerate(aq.select):
        r_refs = [n for n in walk(e) if isinstance(n, FieldRef) and n.source == 0]
        for n in r_refs:
            if (0, n.name) not in fill:
                raise QueryError(n.span, "filter-join",
                                f"{r_alias}.{n.name} cannot be used in SELECT: a FILTER_JOIN "
                                f"keeps no tuple of '{r_alias}', only its keys; use fields "
                                f"of '{s_alias}', or fields of '{r_alias}' that WHERE equates "
                                f"with fields of '{s_alias}'")
        if r_refs and e.info.temporal.is_temporal:
            aq.select[i] = (name, dataclasses.replace(
                e, info=dataclasses.replace(e.info, temporal=Temporal.NONE)))
    return JoinInfo("filter", (col, s_time), 0, window - 1, keys, filters, fill, spec.span,
                    window=window)
