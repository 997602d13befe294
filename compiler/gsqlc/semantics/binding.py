"""Name resolution: the binder.

Binder turns a parsed expression into a bound one (bound.py): a column
reference becomes the FieldRef of its FROM source (Scope), a group-by name
or an expression equal to a group-by item its GroupRef, an aggregate call
an AggRef (its AggCall appended to the query's), a super-aggregate f$ a
SuperAggRef; #DEFINE values become literals.  Each bound expression is then
annotated (inference.py).
"""
from __future__ import annotations

import difflib
from typing import Callable, Optional

from ..errors import QueryError
from ..frontend import ast
from . import catalog
from .bound import AggRef, ExprInfo, FieldRef, GroupRef, SuperAggRef, children, key, rebuild, walk
from .inference import annotate, check_user_args, pick_overload, user_arg_cost
from .model import AggCall, AnalyzedQuery, Column, Source, SuperAggCall
from .types import Temporal, Type


class Scope:
    def __init__(self, q: AnalyzedQuery):
        self.q = q

    def lookup(self, ref: ast.ColumnRef) -> FieldRef:
        srcs = self.q.sources
        if ref.table is not None:
            for i, s in enumerate(srcs):
                if s.alias == ref.table:
                    col = s.column(ref.name)
                    if col is None:
                        raise _unknown_field(ref, s)
                    return FieldRef(i, ref.name, info=_column_info(col), span=ref.span)
            raise QueryError(ref.span, "unknown-table",
                            f"no FROM source is named '{ref.table}'; sources: "
                            + ", ".join(s.alias for s in srcs))
        hits = [i for i, s in enumerate(srcs) if s.column(ref.name) is not None]
        if not hits:
            raise _unknown_field(ref, srcs[0] if len(srcs) == 1 else None, srcs)
        if len(hits) > 1:
            raise QueryError(ref.span, "ambiguous-field",
                            f"field '{ref.name}' is in several FROM sources; "
                            "qualify it (" + ", ".join(f"{srcs[i].alias}.{ref.name}" for i in hits) + ")")
        col = srcs[hits[0]].column(ref.name)
        assert col is not None
        return FieldRef(hits[0], ref.name, info=_column_info(col), span=ref.span)


def _column_info(col: Column) -> ExprInfo:
    return ExprInfo(col.type, col.temporal)


def _group_ref(q: AnalyzedQuery, i: int, span: ast.Span) -> GroupRef:
    """A reference to group-by item i: its value, as the item's expression."""
    g = q.group_by[i].expr.info
    return GroupRef(i, info=ExprInfo(g.type, g.temporal, g.lfta_ok, g.cheap, g.constant),
                    span=span)


def _agg_ref(q: AnalyzedQuery, i: int, span: ast.Span) -> AggRef:
    return AggRef(i, info=ExprInfo(q.aggs[i].type, Temporal.NONE), span=span)


def _unknown_field(ref: ast.ColumnRef, src: Optional[Source],
                   srcs: Optional[list[Source]] = None) -> QueryError:
    names = src.column_names() if src else [n for s in (srcs or []) for n in s.column_names()]
    where = (f"{'PROTOCOL' if src.kind == 'protocol' else 'stream'} "
             f"{src.protocol.name if src.protocol else src.ref.name}") if src else "the FROM sources"
    msg = f"no field '{ref.name}' in {where}"
    close = difflib.get_close_matches(ref.name, names, n=3)
    if close:
        msg += "; did you mean " + " or ".join(f"'{c}'" for c in close) + "?"
    return QueryError(ref.span, "unknown-field", msg)


def default_value(t: Type, span: ast.Span) -> ast.Expr:
    """The default value of type t (Tigon manual, Table 6), as an expression
    of exactly that type: 0 (through the type's conversion), FALSE, '',
    0.0.0.0, ::."""
    if t == Type.BOOL:
        return ast.Literal("bool", False, "FALSE", span=span)
    if t == Type.STRING:
        return ast.Literal("string", b"", "''", span=span)
    if t == Type.IP:
        return ast.Literal("ip", 0, "IP_VAL '0.0.0.0'", span=span)
    if t == Type.IPV6:
        return ast.Literal("ipv6", bytes(16), "IPV6_VAL '::'", span=span)
    return ast.Call(str(t).upper(), [ast.Literal("int", 0, "0", span=span)], span=span)


def define_literal(name: str, q: AnalyzedQuery, span: ast.Span) -> ast.Literal:
    if name not in q.defines:
        raise QueryError(span, "unknown-define",
                        f"#{name} is not set in the query's DEFINE block")
    text = q.defines[name]
    try:
        v = int(text, 0)
    except ValueError:
        pass
    else:
        if not -2**63 <= v <= 2**64 - 1:
            raise QueryError(span, "bad-literal",
                             f"#{name} is {text}, out of range: an integer DEFINE value is "
                             "at least -2^63 and at most 2^64-1 (ullong)")
        return ast.Literal("int", v, text, span=span)
    try:
        return ast.Literal("float", float(text), text, span=span)
    except ValueError:
        # the value's own bytes, escapes that are not UTF-8 included
        return ast.Literal("string", text.encode("utf-8", "surrogateescape"), "", span=span)


class Binder:
    """Binds and annotates the expressions of one query."""

    def __init__(self, q: AnalyzedQuery):
        self.q = q
        self.scope = Scope(q)

    # -- field context: WHERE, GROUP BY, aggregate arguments, selections
    def bind_fields(self, e: ast.Expr, where: str) -> ast.Expr:
        def fn(n: ast.Expr) -> Optional[ast.Expr]:
            if isinstance(n, ast.DefaultOf):
                t = self.bind_fields(n.expr, where).info.type
                return self.bind_fields(default_value(t, n.span), where)
            if isinstance(n, ast.ColumnRef):
                return self.scope.lookup(n)
            if isinstance(n, ast.DefineRef):
                return define_literal(n.name, self.q, n.span)
            if isinstance(n, ast.Call) and n.superagg:
                raise QueryError(n.span, "aggregate-not-allowed",
                                 f"super-aggregate {n.name}$() is not allowed in {where}")
            if isinstance(n, ast.Call) and is_aggregate_call(n, self.q.catalog):
                raise QueryError(n.span, "aggregate-not-allowed",
                                f"aggregate {n.name}() is not allowed in {where}")
            return None
        return annotate(rebuild(e, fn), self.q)

    # -- aggregation context: SELECT and HAVING of an aggregation query
    def bind_grouped(self, e: ast.Expr, where: str) -> ast.Expr:
        q = self.q
        gb_keys = [key(g.expr) for g in q.group_by]

        def has_agg_or_alias(n: ast.Expr) -> bool:
            for m in walk(n):
                if isinstance(m, ast.Call) and (m.superagg or is_aggregate_call(m, q.catalog)):
                    return True
                if isinstance(m, ast.ColumnRef) and m.table is None and \
                        any(g.name == m.name for g in q.group_by):
                    return True
            return False

        def go(n: ast.Expr) -> ast.Expr:
            if isinstance(n, ast.ColumnRef) and n.table is None:
                for i, g in enumerate(q.group_by):
                    if g.name == n.name:
                        return _group_ref(q, i, n.span)
            if isinstance(n, ast.Call) and n.superagg:
                return self.bind_superagg(n)
            if isinstance(n, ast.Call) and is_aggregate_call(n, q.catalog):
                extr = _extraction_call(n, q.catalog,
                                        lambda a: self.bind_fields(a, where).info.type)
                if extr is not None:
                    return go(extr)
                return self.bind_aggregate(n)
            if not has_agg_or_alias(n):
                b = self.bind_fields(n, where)
                k = key(b)
                for i, gk in enumerate(gb_keys):
                    if k == gk:
                        return _group_ref(q, i, n.span)
                if isinstance(b, FieldRef):
                    raise QueryError(n.span, "not-grouped",
                                    f"'{b.name}' must be in GROUP BY or inside an "
                                    f"aggregate: {where} of an aggregation sees only "
                                    "group-by values and aggregates")
                if not children(n):
                    return b
            m = rebuild(n, lambda x: None if x is n else go(x))
            return m

        return annotate(go(e), self.q)

    def bind_aggregate(self, c: ast.Call) -> AggRef:
        if self.q.catalog.user_aggregates.get(c.name.lower()) and \
                catalog.lookup_aggregate(c.name) is None:
            return self.bind_udaf(c)
        agg = catalog.lookup_aggregate(c.name)
        assert agg is not None
        arg: Optional[ast.Expr] = None
        if len(c.args) == 1 and isinstance(c.args[0], ast.Star):
            if not agg.star_ok:
                raise QueryError(c.span, "bad-arguments", f"{c.name}(*) is not allowed; only count(*)")
        elif len(c.args) != 1:
            raise QueryError(c.span, "bad-arguments",
                            f"aggregate {c.name} takes one argument, got {len(c.args)}")
        else:
            for n in walk(c.args[0]):
                if isinstance(n, ast.Call) and is_aggregate_call(n, self.q.catalog):
                    raise QueryError(n.span, "nested-aggregate",
                                    f"aggregate {n.name}() inside aggregate {c.name}()")
            arg = self.bind_fields(c.args[0], f"the argument of {c.name}")
        at = arg.info.type if arg is not None else None
        rt = agg.result(at) if (arg is not None or agg.star_ok) else None
        if agg.name == "count":
            rt = Type.ULLONG
        if rt is None:
            raise QueryError(c.span, "type-mismatch",
                            f"aggregate {c.name} cannot take an argument of type {at}")
        from .bound import to_text
        text = to_text(c)
        k = (agg.name, key(arg) if arg is not None else None)
        for i, a in enumerate(self.q.aggs):
            if (a.func.name, key(a.arg) if a.arg is not None else None) == k:
                return _agg_ref(self.q, i, c.span)
        self.q.aggs.append(AggCall(agg, arg, rt, c.span, text))
        return _agg_ref(self.q, len(self.q.aggs) - 1, c.span)


    def bind_superagg(self, c: ast.Call) -> SuperAggRef:
        """f$(x): a super-aggregate of a sampling query's supergroup."""
        sampling = self.q.sampling
        if sampling is None:
            raise QueryError(c.span, "sampling", f"super-aggregate {c.name}$ outside an "
                             "aggregation")
        op = c.name.lower()
        star = len(c.args) == 1 and isinstance(c.args[0], ast.Star)
        arg: Optional[ast.Expr] = None
        if op == "count_distinct":
            if c.args and not star:
                raise QueryError(c.span, "bad-arguments",
                                 "count_distinct$() counts the supergroup's groups: it takes "
                                 "no argument")
            t = Type.ULLONG
        elif op in ("count", "sum", "min", "max"):
            if star:
                if op != "count":
                    raise QueryError(c.span, "bad-arguments", f"{c.name}$(*): only count$(*)")
            elif len(c.args) != 1:
                raise QueryError(c.span, "bad-arguments", f"{c.name}$ takes one argument")
            else:
                arg = self.bind_fields(c.args[0], f"the argument of {c.name}$")
            at = arg.info.type if arg is not None else None
            if op == "count":
                t = Type.ULLONG
            elif at is None or not at.is_numeric:
                raise QueryError(c.span, "type-mismatch",
                                 f"super-aggregate {c.name}$ takes a number, got {at}")
            elif op == "sum":
                t = Type.FLOAT if at is Type.FLOAT else (
                    Type.LLONG if at.is_signed else Type.ULLONG)
            else:
                t = at
        else:
            raise QueryError(c.span, "unknown-function",
                             f"unknown super-aggregate {c.name}$ (count$, sum$, min$, max$, "
                             "count_distinct$)")
        from .bound import to_text
        k = (op, key(arg) if arg is not None else None)
        for i, sa in enumerate(sampling.superaggs):
            if (sa.op, key(sa.arg) if sa.arg is not None else None) == k:
                return SuperAggRef(i, info=ExprInfo(sa.type), span=c.span)
        sampling.superaggs.append(SuperAggCall(op, arg, t, to_text(c)))
        return SuperAggRef(len(sampling.superaggs) - 1, info=ExprInfo(t), span=c.span)

    def bind_udaf(self, c: ast.Call) -> AggRef:
        """A call of a user-defined aggregate: its overload by the argument
        types (semantics/user_functions.py), its arguments bound."""
        cat = self.q.catalog
        args = []
        for a in c.args:
            if isinstance(a, ast.Star):
                raise QueryError(a.span, "bad-arguments", f"{c.name}(*) is not allowed; only count(*)")
            for n in walk(a):
                if isinstance(n, ast.Call) and is_aggregate_call(n, cat):
                    raise QueryError(n.span, "nested-aggregate",
                                     f"aggregate {n.name}() inside aggregate {c.name}()")
            args.append(self.bind_fields(a, f"the argument of {c.name}"))
        agg = pick_overload(c, cat.aggregate_overloads(c.name),
                             lambda x: x.udaf.params if x.udaf else (), args)
        spec = agg.udaf
        assert spec is not None
        check_user_args(c, spec.name, args, spec.handle_args, spec.const_args)

        from .bound import to_text
        text = to_text(c)
        k = (agg.name, spec.params, tuple(key(a) for a in args))
        for i, prev in enumerate(self.q.aggs):
            if prev.func.udaf is not None and \
                    (prev.func.name, prev.func.udaf.params,
                     tuple(key(x) for x in prev.args)) == k:
                return _agg_ref(self.q, i, c.span)
        self.q.aggs.append(AggCall(agg, args[0] if args else None, spec.result, c.span, text,
                                   args=tuple(args)))
        return _agg_ref(self.q, len(self.q.aggs) - 1, c.span)


def is_aggregate_call(c: ast.Call, cat: catalog.Catalog = catalog.BUILTIN) -> bool:
    return cat.is_aggregate(c.name) and not c.predicate


def _extraction_call(c: ast.Call, cat: catalog.Catalog,
                     type_of: Optional[Callable[[ast.Expr], Optional[Type]]] = None
                     ) -> Optional[ast.Call]:
    """EXTR: name(a1..an, b1..bm) as extractor(udaf(a1..an), b1..bm), the
    aggregate taking the arguments its declaration has (None: c is not an
    extraction).  Of overloads taking as many arguments, the one whose
    parameters the argument types (`type_of`) fit best."""
    over = cat.extraction_overloads(c.name)
    if not over:
        return None
    fits = [x for x in over if len(x.params) == len(c.args)]
    x = fits[0] if fits else None
    if len(fits) > 1 and type_of is not None:
        types = [type_of(a) for a in c.args]
        best = None
        for f in fits:
            costs = [None if t is None else user_arg_cost(w, t)
                     for w, t in zip(f.params, types)]
            if all(k is not None for k in costs):
                total = sum(k for k in costs if k is not None)
                if best is None or total < best[0]:
                    best = (total, f)
        if best is not None:
            x = best[1]
    if x is None:
        counts = sorted({len(x.params) for x in over})
        raise QueryError(c.span, "bad-arguments",
                         f"{c.name} takes {' or '.join(map(str, counts))} argument(s), "
                         f"got {len(c.args)}")
    ext = cat.scalar_overloads(x.extractor)
    n_extra = max(len(ext[0].params) - 1, 0) if ext else 0
    n_udaf = len(c.args) - n_extra
    inner = ast.Call(x.udaf, list(c.args[:n_udaf]), span=c.span)
    return ast.Call(x.extractor, [inner, *c.args[n_udaf:]], span=c.span)
