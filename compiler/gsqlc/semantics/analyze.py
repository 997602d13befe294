"""Analysis: name resolution, types, temporal inference, legality rules.

analyze_query: ast.Query (parsed) + its resolved FROM sources ->
AnalyzedQuery.  semantics/resolve.py calls it once per query, in dependency
order (a query comes after every query it reads).  The AnalyzedQuery holds
bound expressions (see bound.py): new nodes, built here, each with its
ExprInfo (type, temporal direction, LFTA-legality); the parser's AST is left
as it was.
"""
from __future__ import annotations

import dataclasses
import difflib
import math
from typing import Any, Callable, Iterator, Optional, Sequence

from ..errors import QueryError
from ..frontend import ast
from . import catalog
from .bound import (
    BOUND_REFS,
    AggRef,
    ExprInfo,
    FieldRef,
    GroupRef,
    SuperAggRef,
    children,
    conjuncts,
    key,
    rebuild,
    walk,
    with_children,
)
from .model import (
    AggCall,
    AnalyzedQuery,
    Column,
    GroupItem,
    JoinInfo,
    MergeInfo,
    SamplingInfo,
    Source,
    StreamDef,
    SuperAggCall,
)
from .types import Temporal, Type, arithmetic_result, comparable, parse_type_name, unary_result

# The model's names stay importable from here (backend/codegen.py and
# spark.py read Column, StreamDef and MergeInfo from this module); new code
# imports them from semantics.model.
__all__ = [
    "AggCall", "AnalyzedQuery", "Column", "GroupItem", "JoinInfo", "MergeInfo",
    "SamplingInfo", "Source", "StreamDef", "SuperAggCall",
    "analyze_query", "annotate", "check_supported", "default_value", "not_supported",
]


def not_supported(span: ast.Span, what: str) -> QueryError:
    return QueryError(span, "not-supported-yet",
                     f"{what} is not supported yet by gsqlc")


# ---------------------------------------------------------------- checks of
# syntax that parses but does not execute yet


def check_supported(q: ast.Query) -> None:
    for g in q.group_by:
        if isinstance(g, ast.GroupingSets):   # expanded before analysis (grouping_sets.py)
            raise not_supported(g.span, g.kind.upper())


# ---------------------------------------------------------------- binding


class _Scope:
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


def _literal_type(lit: ast.Literal) -> Type:
    k = lit.kind
    if k == "int":
        v = lit.value
        if v < 2**31:
            return Type.INT
        if v < 2**32:
            return Type.UINT
        if v < 2**63:
            return Type.LLONG
        return Type.ULLONG
    return {
        "uint": Type.UINT, "ullong": Type.ULLONG, "llong": Type.LLONG,
        "float": Type.FLOAT, "string": Type.STRING, "bool": Type.BOOL,
        "ip": Type.IP, "ipv6": Type.IPV6, "hex": Type.UINT, "lhex": Type.ULLONG,
        "timeval": Type.ULLONG,
    }[k]


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


def _define_literal(name: str, q: AnalyzedQuery, span: ast.Span) -> ast.Literal:
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
        return ast.Literal("string", text.encode(), "", span=span)


class Binder:
    """Binds and annotates the expressions of one query."""

    def __init__(self, q: AnalyzedQuery):
        self.q = q
        self.scope = _Scope(q)

    # -- field context: WHERE, GROUP BY, aggregate arguments, selections
    def bind_fields(self, e: ast.Expr, where: str) -> ast.Expr:
        def fn(n: ast.Expr) -> Optional[ast.Expr]:
            if isinstance(n, ast.DefaultOf):
                t = self.bind_fields(n.expr, where).info.type
                return self.bind_fields(default_value(t, n.span), where)
            if isinstance(n, ast.ColumnRef):
                return self.scope.lookup(n)
            if isinstance(n, ast.DefineRef):
                return _define_literal(n.name, self.q, n.span)
            if isinstance(n, ast.Call) and n.superagg:
                raise QueryError(n.span, "aggregate-not-allowed",
                                 f"super-aggregate {n.name}$() is not allowed in {where}")
            if isinstance(n, ast.Call) and _is_aggregate_call(n, self.q.catalog):
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
                if isinstance(m, ast.Call) and (m.superagg or _is_aggregate_call(m, q.catalog)):
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
            if isinstance(n, ast.Call) and _is_aggregate_call(n, q.catalog):
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
                if isinstance(n, ast.Call) and _is_aggregate_call(n, self.q.catalog):
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
                if isinstance(n, ast.Call) and _is_aggregate_call(n, cat):
                    raise QueryError(n.span, "nested-aggregate",
                                     f"aggregate {n.name}() inside aggregate {c.name}()")
            args.append(self.bind_fields(a, f"the argument of {c.name}"))
        agg = _pick_overload(c, cat.aggregate_overloads(c.name),
                             lambda x: x.udaf.params if x.udaf else (), args)
        spec = agg.udaf
        assert spec is not None
        _check_user_args(c, spec.name, args, spec.handle_args, spec.const_args)

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


def _is_aggregate_call(c: ast.Call, cat: catalog.Catalog = catalog.BUILTIN) -> bool:
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
            costs = [None if t is None else _user_arg_cost(w, t)
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


def _user_arg_cost(want: Type, t: Type) -> Optional[int]:
    """How far an argument of type t is from a user parameter of type
    `want`: 0 the same, 1 another integer, 2 an integer as a float; None
    when it cannot be passed."""
    if want == t:
        return 0
    if want.is_integer and t.is_integer:
        return 1
    if want is Type.FLOAT and t.is_numeric:
        return 2
    return None


def _pick_overload(c: ast.Call, over: Sequence[Any], params_of: Callable[[Any], tuple[Type, ...]],
                   args: Sequence[ast.Expr]) -> Any:
    """The overload whose parameters the argument types fit best (the
    first of equals); a located error naming the declarations otherwise."""
    best, best_cost = None, None
    for f in over:
        ps = params_of(f)
        if len(ps) != len(args):
            continue
        costs = [_user_arg_cost(w, a.info.type) for w, a in zip(ps, args)]
        if any(x is None for x in costs):
            continue
        total = sum(x for x in costs if x is not None)
        if best_cost is None or total < best_cost:
            best, best_cost = f, total
    if best is None:
        got = ", ".join(str(a.info.type) for a in args)
        decls = "; ".join("(" + ", ".join(str(t) for t in params_of(f)) + ")" for f in over)
        raise QueryError(c.span, "bad-arguments",
                         f"no declaration of {c.name} takes ({got}); declared: {decls}")
    return best


def _check_user_args(c: ast.Call, name: str, args: Sequence[ast.Expr],
                     handles: tuple[int, ...], consts: tuple[int, ...]) -> None:
    for i, a in enumerate(args):
        if (i in handles or i in consts) and not a.info.constant:
            what = "HANDLE" if i in handles else "CONST"
            raise QueryError(a.span, "constant-required",
                             f"argument {i + 1} of {name} must be a constant (its "
                             f"declaration marks it {what})")


# ---------------------------------------------------------------- typing


def _err_type(e: ast.Expr, msg: str) -> QueryError:
    return QueryError(e.span, "type-mismatch", msg)


# literal kinds whose value is an integer
_INT_LITERAL_KINDS = ("int", "uint", "ullong", "llong", "hex", "lhex", "timeval")


def _nonneg_const(e: ast.Expr) -> bool:
    if isinstance(e, ast.Literal) and e.kind in _INT_LITERAL_KINDS:
        return bool(e.value >= 0)
    return bool(e.info and e.info.constant and not e.info.type.is_signed)


def annotate(e: ast.Expr, q: AnalyzedQuery) -> ast.Expr:
    """A copy of e whose every node has its info (type, temporal, lfta_ok,
    cheap, constant), computed bottom-up; bound references keep theirs."""
    if isinstance(e, BOUND_REFS):
        return e
    n = with_children(e, [annotate(c, q) for c in children(e)])
    return dataclasses.replace(n, info=_infer(n, q))


def _infer(e: ast.Expr, q: AnalyzedQuery) -> ExprInfo:
    if isinstance(e, ast.Literal):
        return ExprInfo(_literal_type(e), Temporal.CONSTANT, constant=True)
    if isinstance(e, ast.Param):
        t = q.params.get(e.name)
        if t is None:
            raise QueryError(e.span, "unknown-param",
                            f"parameter ${e.name} is not declared in the query's PARAM block")
        return ExprInfo(t, Temporal.CONSTANT, constant=True)
    if isinstance(e, ast.Star):
        raise QueryError(e.span, "syntax", "'*' is only allowed in count(*)")
    if isinstance(e, ast.IfaceParam):
        return _infer_iface_param(e, q)
    if isinstance(e, ast.Unary):
        return _infer_unary(e)
    if isinstance(e, ast.Binary):
        return _infer_binary(e)
    if isinstance(e, ast.InList):
        return _infer_in(e)
    if isinstance(e, ast.Call):
        return _infer_call(e, q)
    raise QueryError(e.span, "internal", f"unexpected expression {type(e).__name__}")


def _infer_iface_param(e: ast.IfaceParam, q: AnalyzedQuery) -> ExprInfo:
    """@name: a property of the interface a record came from (a string, as
    in Tigon), read by the LFTA over that interface: the query reads one
    PROTOCOL source."""
    if len(q.sources) != 1 or q.sources[0].protocol is None:
        what = ("a query reading another query's stream" if q.sources[0].protocol is None
                else "a query of several sources")
        raise QueryError(e.span, "interface-property",
                         f"@{e.name} is a property of the interface a record comes from: "
                         f"{what} has no one interface (read @{e.name} in the query over "
                         "the PROTOCOL and select it)")
    return ExprInfo(Type.STRING, Temporal.NONE)


def _merge_flags(info: ExprInfo, *subs: ast.Expr) -> ExprInfo:
    return dataclasses.replace(info, lfta_ok=all(s.info.lfta_ok for s in subs),
                               cheap=all(s.info.cheap for s in subs),
                               constant=all(s.info.constant for s in subs))


def _infer_unary(e: ast.Unary) -> ExprInfo:
    t = e.operand.info.type
    op = e.op.lower()
    if op == "not":
        if t is not Type.BOOL:
            raise _err_type(e, f"NOT needs a bool, got {t}")
        return _merge_flags(ExprInfo(Type.BOOL), e.operand)
    if op == "!":
        if not (t is Type.BOOL or t.is_integer):
            raise _err_type(e, f"! needs a bool or an integer, got {t}")
        return _merge_flags(ExprInfo(Type.BOOL), e.operand)
    if op == "~":
        if not t.is_integer:
            raise _err_type(e, f"~ needs an integer, got {t}")
        return _merge_flags(ExprInfo(unary_result(t) or t), e.operand)
    if op == "-":
        r = unary_result(t)
        if r is None:
            raise _err_type(e, f"unary - needs a number, got {t}")
        tmp = e.operand.info.temporal
        info = ExprInfo(r, tmp.flipped() if tmp.is_temporal else tmp)
        return _merge_flags(info, e.operand)
    raise _err_type(e, f"unknown operator {e.op}")


_ARITH = {"+", "-", "*", "/", "%"}
_BITS = {"&", "|", "<<", ">>"}
_CMP = {"=", "<>", "!=", "<", ">", "<=", ">="}


def _infer_binary(e: ast.Binary) -> ExprInfo:
    op = e.op.lower()
    lt, rt = e.left.info.type, e.right.info.type
    if op in ("and", "or"):
        for side in (e.left, e.right):
            if side.info.type is not Type.BOOL:
                raise _err_type(side, f"{op.upper()} needs bool operands, got {side.info.type}")
        return _merge_flags(ExprInfo(Type.BOOL), e.left, e.right)
    if op in _CMP:
        if not comparable(lt, rt):
            raise _err_type(e, f"cannot compare {lt} with {rt}")
        if lt.is_string and op not in ("=", "<>", "!=", "<", ">", "<=", ">="):
            raise _err_type(e, f"operator {op} does not apply to strings")
        return _merge_flags(ExprInfo(Type.BOOL), e.left, e.right)
    if op in _ARITH:
        r = arithmetic_result(lt, rt)
        if r is None:
            raise _err_type(e, f"operator {e.op} needs numbers, got {lt} and {rt}")
        if op == "%" and r is Type.FLOAT:
            raise _err_type(e, "operator % needs integers, got float")
        if lt is Type.IP and rt is Type.IP and op in ("+", "*", "/", "%"):
            raise _err_type(e, f"operator {e.op} does not apply to two IP addresses")
        return _merge_flags(ExprInfo(r, _temporal_arith(op, e)), e.left, e.right)
    if op in _BITS:
        if not (lt.is_integer and rt.is_integer):
            raise _err_type(e, f"operator {e.op} needs integers, got {lt} and {rt}")
        if op in ("<<", ">>"):
            r = unary_result(lt) or lt
            if lt is Type.IP:
                r = Type.UINT
        else:
            r = arithmetic_result(lt, rt) or lt
            if Type.IP in (lt, rt) and r is Type.UINT:
                r = Type.IP
        return _merge_flags(ExprInfo(r), e.left, e.right)
    raise _err_type(e, f"unknown operator {e.op}")


def _temporal_arith(op: str, e: ast.Binary) -> Temporal:
    lt: Temporal = e.left.info.temporal
    rt: Temporal = e.right.info.temporal
    C = Temporal.CONSTANT
    if lt == C and rt == C:
        return C
    if op == "+":
        if rt == C and lt.is_temporal:
            return lt
        if lt == C and rt.is_temporal:
            return rt
        if lt.is_temporal and lt == rt:
            return lt
        return Temporal.NONE
    if op == "-":
        if rt == C and lt.is_temporal:
            return lt
        if lt == C and rt.is_temporal:
            return rt.flipped()
        if lt.is_temporal and rt.is_temporal and lt != rt:
            return lt  # increasing - decreasing is increasing
        return Temporal.NONE
    if op in ("*", "/"):
        x, c = (e.left, e.right) if rt == C else (e.right, e.left)
        xt: Temporal = x.info.temporal
        if c.info.temporal != C or not xt.is_temporal:
            return Temporal.NONE
        if op == "/" and x is e.right:
            return Temporal.NONE  # c / x reverses and is not linear
        if _is_negative_const(c):
            return xt.flipped()
        if x.info.type.is_signed and x.info.type is not Type.FLOAT:
            return Temporal.NONE
        if _nonneg_const(c) or not c.info.type.is_signed:
            return xt
        return Temporal.NONE
    return Temporal.NONE


def _is_negative_const(e: ast.Expr) -> bool:
    if isinstance(e, ast.Unary) and e.op == "-" and isinstance(e.operand, ast.Literal):
        return isinstance(e.operand.value, (int, float)) and e.operand.value > 0
    return False


def _infer_in(e: ast.InList) -> ExprInfo:
    t = e.expr.info.type
    for item in e.items:
        if not item.info.constant:
            raise QueryError(item.span, "constant-required", "IN lists hold constants only")
        if not comparable(t, item.info.type):
            raise _err_type(item, f"IN list item of type {item.info.type} cannot be compared with {t}")
    return _merge_flags(ExprInfo(Type.BOOL), e.expr, *e.items)


def _arg_matches(want: object, t: Type) -> bool:
    if want == catalog.ANY:
        return True
    if want == catalog.ANY_INT:
        return t.is_integer
    if want in (catalog.ANY_NUM, catalog.FLOAT_ARG):
        return t.is_numeric
    if isinstance(want, Type):
        if want == t:
            return True
        return want.is_integer and t.is_integer
    return False


def _infer_call(e: ast.Call, q: AnalyzedQuery) -> ExprInfo:
    cat = q.catalog
    f = catalog.lookup_scalar(e.name)
    if f is None and cat.scalar_overloads(e.name):
        return _infer_user_call(e, q)
    if f is None:
        if cat.is_aggregate(e.name):
            raise QueryError(e.span, "aggregate-not-allowed",
                            f"aggregate {e.name}() is not allowed here")
        close = difflib.get_close_matches(e.name, cat.all_function_names(), n=3,
                                          cutoff=0.6)
        hint = ("; did you mean " + " or ".join(close) + "?") if close else ""
        raise QueryError(e.span, "unknown-function", f"unknown function '{e.name}'{hint}")
    if e.predicate and not f.predicate:
        raise QueryError(e.span, "not-a-predicate",
                        f"{f.name} is not a predicate; write {f.name}(...) not {f.name}[...]")
    if len(e.args) != len(f.params):
        raise QueryError(e.span, "bad-arguments",
                        f"{f.name} takes {len(f.params)} argument(s), got {len(e.args)}")
    types = []
    for i, (want, a) in enumerate(zip(f.params, e.args)):
        t = a.info.type
        if not _arg_matches(want, t):
            raise _err_type(a, f"argument {i + 1} of {f.name} must be {want}, got {t}")
        if i in f.handle_args and not (isinstance(a, ast.Literal) and a.kind == "string"):
            why = (" (it is compiled once, when the query starts)" if f.handle_kind == "regex"
                   else " (the map file is read once, when the query starts)"
                   if f.handle_kind == "map" else "")
            raise QueryError(a.span, "constant-required",
                            f"argument {i + 1} of {f.name} must be a string literal{why}")
        if i in f.const_args and not a.info.constant:
            raise QueryError(a.span, "constant-required",
                            f"argument {i + 1} of {f.name} must be a constant")
        types.append(t)
    rt = f.result_type(types)
    info = _merge_flags(ExprInfo(rt), *e.args)
    info = dataclasses.replace(info, lfta_ok=info.lfta_ok and f.lfta_legal,
                               cheap=info.cheap and f.cost == catalog.CHEAP, func=f)
    if f.emit == "clock":
        return dataclasses.replace(info, constant=False, temporal=Temporal.INCREASING)
    if f.out_buffer or f.handle_kind == "map":
        # computed by the HFTA functor's call site (its storage, its map)
        return dataclasses.replace(info, constant=False)
    if f.emit == "identity" and f.name == "non_temporal":
        return dataclasses.replace(info, temporal=Temporal.NONE)
    if f.emit == "cast":
        x = e.args[0].info
        widening = x.type.bits <= rt.bits and (rt is Type.FLOAT or not x.type.is_signed or rt.is_signed)
        return dataclasses.replace(info, temporal=x.temporal if widening else (
            Temporal.CONSTANT if x.constant else Temporal.NONE))
    if info.constant:
        return dataclasses.replace(info, temporal=Temporal.CONSTANT)
    return info


def _infer_user_call(e: ast.Call, q: AnalyzedQuery) -> ExprInfo:
    """A call of a function of the user's def files: its overload by the
    argument types; a HANDLE or CONST argument must be constant.  One with
    a HANDLE parameter or PARTIAL runs in an HFTA (its functor registers the
    handle and drops the tuple a PARTIAL function has no value for)."""
    f = _pick_overload(e, q.catalog.scalar_overloads(e.name), lambda x: x.params, e.args)
    _check_user_args(e, f.name, e.args, f.handle_args, f.const_args)
    if f.state is not None and (q.query.is_merge or len(q.sources) != 1):
        raise not_supported(e.span, f"the stateful function {f.name} in a join or merge")
    hfta_only = bool(f.handle_args) or f.partial or f.state is not None
    info = _merge_flags(ExprInfo(f.result_type([])), *e.args)
    info = dataclasses.replace(info, lfta_ok=info.lfta_ok and f.lfta_legal and not hfta_only,
                               cheap=info.cheap and f.cost == catalog.CHEAP, func=f)
    if info.constant:
        # a user function may keep state or read the clock: never folded
        info = dataclasses.replace(info, constant=False)
    return info


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
        return _analyze_merge(aq, b)
    if _is_sampling(q, functions):
        aq.sampling = SamplingInfo()
    # WHERE
    for c in conjuncts(q.where):
        bc = b.bind_fields(c, "WHERE")
        if bc.info.type is not Type.BOOL:
            raise _err_type(c, f"a WHERE condition must be bool, got {bc.info.type}")
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
    has_aggs = any(isinstance(n, ast.Call) and _is_aggregate_call(n, aq.catalog)
                   for s in q.select for n in walk(s.expr)) or \
        (q.having is not None and any(isinstance(n, ast.Call) and _is_aggregate_call(n, aq.catalog)
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
        aq.join = _analyze_join(aq)
        _check_join_without_regexes(aq, aq.join)
        _drop_temporal_of_empty_sides(aq, aq.join)
    if q.having is not None:
        hb = b.bind_grouped(q.having, "HAVING")
        if hb.info.type is not Type.BOOL:
            raise _err_type(q.having, f"HAVING must be bool, got {hb.info.type}")
        aq.having = hb
    if aq.sampling is not None:
        _analyze_sampling(aq, b)
    if q.closing_when is not None:
        if aq.sampling is not None:
            raise not_supported(q.closing_when.span, "CLOSING_WHEN in a sampling query")
        if not grouped or not aq.group_by:
            raise QueryError(q.closing_when.span, "closing-when",
                             "CLOSING_WHEN needs a GROUP BY: it says when a running "
                             "aggregation's group is discarded at an epoch's end")
        cb = b.bind_grouped(q.closing_when, "CLOSING_WHEN")
        if cb.info.type is not Type.BOOL:
            raise _err_type(q.closing_when, f"CLOSING_WHEN must be bool, got {cb.info.type}")
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


def _is_sampling(q: ast.Query, cat: catalog.Catalog) -> bool:
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


def _analyze_sampling(aq: AnalyzedQuery, b: "Binder") -> None:
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
            raise _err_type(clause, f"{what} must be bool, got {bound.info.type}")
        setattr(sampling, attr, bound)


# ---------------------------------------------------------------- joins


def _sides(e: ast.Expr) -> set[int]:
    return {n.source for n in walk(e) if isinstance(n, FieldRef)}


def _const_value(e: ast.Expr) -> Optional[float]:
    """The value of a constant numeric expression (literals and + - * of
    them), or None."""
    if isinstance(e, ast.Literal) and isinstance(e.value, (int, float)) and \
            not isinstance(e.value, bool):
        return e.value
    if isinstance(e, ast.Unary) and e.op == "-":
        v = _const_value(e.operand)
        return -v if v is not None else None
    if isinstance(e, ast.Binary) and e.op in ("+", "-", "*"):
        a, b2 = _const_value(e.left), _const_value(e.right)
        if a is None or b2 is None:
            return None
        return a + b2 if e.op == "+" else (a - b2 if e.op == "-" else a * b2)
    return None


def _split_offset(e: ast.Expr) -> tuple[ast.Expr, float]:
    """e = x + c or x - c with c constant: (x, +-c); otherwise (e, 0)."""
    if isinstance(e, ast.Binary) and e.op in ("+", "-"):
        c = _const_value(e.right)
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


def _analyze_join(aq: AnalyzedQuery) -> JoinInfo:
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


def _drop_temporal_of_empty_sides(aq: AnalyzedQuery, j: JoinInfo) -> None:
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


def _check_join_without_regexes(aq: AnalyzedQuery, j: JoinInfo) -> None:
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
    """FILTER_JOIN(R.col, N) ... FROM R, S (README, "Filter join"): a windowed
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
    col = _Scope(aq).lookup(col_e)
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
    n_lit = _define_literal(n_e.name, aq, n_e.span) if isinstance(n_e, ast.DefineRef) else n_e
    if not (isinstance(n_lit, ast.Literal) and n_lit.kind in _INT_LITERAL_KINDS
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


# ---------------------------------------------------------------- merge


def _analyze_merge(aq: AnalyzedQuery, b: "Binder") -> AnalyzedQuery:
    q = aq.query
    srcs = aq.sources
    if len(srcs) < 2:
        raise QueryError(q.span, "merge", "MERGE needs at least two FROM sources")
    if len(q.merge_fields) != len(srcs):
        raise QueryError(q.span, "merge", f"MERGE names {len(q.merge_fields)} fields for "
                        f"{len(srcs)} FROM sources: give one per source (R.t : S.t)")
    first = [Column(c.name, c.type, Temporal.NONE) for c in srcs[0].columns()]
    for s in srcs[1:]:
        other = [(c.name, c.type) for c in s.columns()]
        if [(c.name, c.type) for c in first] != other:
            raise QueryError(s.ref.span, "merge-schema",
                            f"MERGE inputs must have identical schemas: '{s.alias}' has "
                            f"({', '.join(f'{n} {t}' for n, t in other)}) but "
                            f"'{srcs[0].alias}' has "
                            f"({', '.join(f'{c.name} {c.type}' for c in first)})")
    names = []
    direction: Optional[Temporal] = None
    for i, ref in enumerate(q.merge_fields):
        f = b.scope.lookup(ref)
        if f.source != i:
            raise QueryError(ref.span, "merge", f"merge field {i + 1} must belong to FROM "
                            f"source '{srcs[i].alias}' (write {srcs[i].alias}.{ref.name})")
        col = f.info
        if not col.temporal.is_temporal:
            raise QueryError(ref.span, "merge-temporal",
                            f"merge field '{ref.name}' of '{srcs[i].alias}' is not temporal: "
                            "MERGE preserves the order of an increasing or decreasing field")
        if direction is not None and col.temporal != direction:
            raise QueryError(ref.span, "merge-temporal",
                            "merge fields must be temporal in the same direction on every input")
        direction = col.temporal
        names.append(f.name)
    if len(set(names)) != 1:
        raise QueryError(q.merge_fields[1].span, "merge",
                        "the merge fields must be the same column of the (identical) schemas")
    slack = 0.0
    if q.merge_slack is not None:
        v = _const_value(q.merge_slack)
        if v is None or not 0 <= v < math.inf:
            raise QueryError(q.merge_slack.span, "merge",
                             "SLACK must be a finite non-negative constant")
        slack = v
    assert direction is not None
    cols = [Column(c.name, c.type, direction if c.name == names[0] else Temporal.NONE)
            for c in first]
    aq.merge = MergeInfo(names[0], slack, q.span)
    aq.output = StreamDef(aq.name, cols)
    return aq
