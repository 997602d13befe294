"""Type and temporal inference of bound expressions.

annotate gives every node of a bound expression its ExprInfo (bound.py):
its type (C-like promotion, types.py), its temporal direction, whether an
LFTA may evaluate it, whether it is cheap, whether it is constant; a
function call's overload is resolved here (the built-in catalog, or the
user's declarations by argument types).  Errors are QueryErrors located on
the offending expression.
"""
from __future__ import annotations

import dataclasses
import difflib
from typing import Any, Callable, Optional, Sequence

from ..errors import QueryError
from ..frontend import ast
from . import catalog
from .bound import BOUND_REFS, ExprInfo, children, with_children
from .model import AnalyzedQuery
from .types import Temporal, Type, arithmetic_result, comparable, unary_result

# ---------------------------------------------------------------- errors


def not_supported(span: ast.Span, what: str) -> QueryError:
    return QueryError(span, "not-supported-yet",
                     f"{what} is not supported yet by gsqlc")


def type_mismatch(e: ast.Expr, msg: str) -> QueryError:
    return QueryError(e.span, "type-mismatch", msg)


# ---------------------------------------------------------------- typing


# literal kinds whose value is an integer
INT_LITERAL_KINDS = ("int", "uint", "ullong", "llong", "hex", "lhex", "timeval")


def _nonneg_const(e: ast.Expr) -> bool:
    if isinstance(e, ast.Literal) and e.kind in INT_LITERAL_KINDS:
        return bool(e.value >= 0)
    return bool(e.info and e.info.constant and not e.info.type.is_signed)


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
            raise type_mismatch(e, f"NOT needs a bool, got {t}")
        return _merge_flags(ExprInfo(Type.BOOL), e.operand)
    if op == "!":
        if not (t is Type.BOOL or t.is_integer):
            raise type_mismatch(e, f"! needs a bool or an integer, got {t}")
        return _merge_flags(ExprInfo(Type.BOOL), e.operand)
    if op == "~":
        if not t.is_integer:
            raise type_mismatch(e, f"~ needs an integer, got {t}")
        return _merge_flags(ExprInfo(unary_result(t) or t), e.operand)
    if op == "-":
        r = unary_result(t)
        if r is None:
            raise type_mismatch(e, f"unary - needs a number, got {t}")
        tmp = e.operand.info.temporal
        info = ExprInfo(r, tmp.flipped() if tmp.is_temporal else tmp)
        return _merge_flags(info, e.operand)
    raise type_mismatch(e, f"unknown operator {e.op}")


_ARITH = {"+", "-", "*", "/", "%"}
_BITS = {"&", "|", "<<", ">>"}
_CMP = {"=", "<>", "!=", "<", ">", "<=", ">="}


def _infer_binary(e: ast.Binary) -> ExprInfo:
    op = e.op.lower()
    lt, rt = e.left.info.type, e.right.info.type
    if op in ("and", "or"):
        for side in (e.left, e.right):
            if side.info.type is not Type.BOOL:
                raise type_mismatch(side, f"{op.upper()} needs bool operands, got {side.info.type}")
        return _merge_flags(ExprInfo(Type.BOOL), e.left, e.right)
    if op in _CMP:
        if not comparable(lt, rt):
            raise type_mismatch(e, f"cannot compare {lt} with {rt}")
        if lt.is_string and op not in ("=", "<>", "!=", "<", ">", "<=", ">="):
            raise type_mismatch(e, f"operator {op} does not apply to strings")
        return _merge_flags(ExprInfo(Type.BOOL), e.left, e.right)
    if op in _ARITH:
        r = arithmetic_result(lt, rt)
        if r is None:
            raise type_mismatch(e, f"operator {e.op} needs numbers, got {lt} and {rt}")
        if op == "%" and r is Type.FLOAT:
            raise type_mismatch(e, "operator % needs integers, got float")
        if lt is Type.IP and rt is Type.IP and op in ("+", "*", "/", "%"):
            raise type_mismatch(e, f"operator {e.op} does not apply to two IP addresses")
        return _merge_flags(ExprInfo(r, _temporal_arith(op, e)), e.left, e.right)
    if op in _BITS:
        if not (lt.is_integer and rt.is_integer):
            raise type_mismatch(e, f"operator {e.op} needs integers, got {lt} and {rt}")
        if op in ("<<", ">>"):
            r = unary_result(lt) or lt
            if lt is Type.IP:
                r = Type.UINT
        else:
            r = arithmetic_result(lt, rt) or lt
            if Type.IP in (lt, rt) and r is Type.UINT:
                r = Type.IP
        return _merge_flags(ExprInfo(r), e.left, e.right)
    raise type_mismatch(e, f"unknown operator {e.op}")


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
        # a non-negative factor keeps the direction of a signed x too (x / c
        # truncates, which is monotone): Tigon's rule asks unsigned operands
        # because a negative factor flips it, and time columns from Spark
        # or pandas are signed (int64)
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
            raise type_mismatch(item, f"IN list item of type {item.info.type} cannot be compared with {t}")
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
            raise type_mismatch(a, f"argument {i + 1} of {f.name} must be {want}, got {t}")
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
    f = pick_overload(e, q.catalog.scalar_overloads(e.name), lambda x: x.params, e.args)
    check_user_args(e, f.name, e.args, f.handle_args, f.const_args)
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


# ---------------------------------------------------------------- the
# overloads of a user's function or aggregate, by argument types


def user_arg_cost(want: Type, t: Type) -> Optional[int]:
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


def pick_overload(c: ast.Call, over: Sequence[Any], params_of: Callable[[Any], tuple[Type, ...]],
                   args: Sequence[ast.Expr]) -> Any:
    """The overload whose parameters the argument types fit best (the
    first of equals); a located error naming the declarations otherwise."""
    best, best_cost = None, None
    for f in over:
        ps = params_of(f)
        if len(ps) != len(args):
            continue
        costs = [user_arg_cost(w, a.info.type) for w, a in zip(ps, args)]
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


def check_user_args(c: ast.Call, name: str, args: Sequence[ast.Expr],
                     handles: tuple[int, ...], consts: tuple[int, ...]) -> None:
    for i, a in enumerate(args):
        if (i in handles or i in consts) and not a.info.constant:
            what = "HANDLE" if i in handles else "CONST"
            raise QueryError(a.span, "constant-required",
                             f"argument {i + 1} of {name} must be a constant (its "
                             f"declaration marks it {what})")
