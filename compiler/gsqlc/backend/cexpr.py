"""C expressions from bound expressions.

One emitter serves the LFTAs (C11) and the HFTAs (C++17): the code it writes
is the common subset.  What a column reference means depends on where the
expression runs (an unpacked packet field, a member of an input tuple, a
group key, an accumulator), so the caller passes a `resolve` function.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Optional

from ..errors import QueryError
from ..frontend import ast
from ..semantics import catalog
from ..semantics.types import Type, arithmetic_result
from .cescape import c_identifier, c_string

_SUFFIX = {Type.UINT: "u32", Type.IP: "u32", Type.INT: "i32",
           Type.ULLONG: "u64", Type.LLONG: "i64"}
_UNSIGNED_OF = {Type.INT: "uint32_t", Type.LLONG: "uint64_t"}


@dataclass
class Regex:
    var: str
    pattern: bytes


@dataclass
class EmitContext:
    resolve: Callable[[ast.Expr], Optional[str]]
    param_ref: Callable[[str], str]
    node_var: str = "node"
    # the gsq_regex * of a prepared regex argument, from its variable
    regex_ref: Callable[[str], str] = lambda v: "&" + v
    regexes: list[Regex] = field(default_factory=list)
    constants: list[str] = field(default_factory=list)   # file-level declarations
    const_prefix: str = "k"


def c_literal_int(v: int, t: Type) -> str:
    if t in (Type.ULLONG,):
        return f"UINT64_C({v})"
    if t is Type.LLONG:
        return f"INT64_C({v})"
    if t in (Type.UINT, Type.IP):
        return f"{v}u"
    return str(v)


def c_float(v: float) -> str:
    if math.isnan(v):
        return "(0.0/0.0)"
    if math.isinf(v):
        return "(1e308*10.0)" if v > 0 else "(-1e308*10.0)"
    s = repr(float(v))
    if "e" not in s and "." not in s:
        s += ".0"
    return s


class CEmitter:
    def __init__(self, ctx: EmitContext):
        self.ctx = ctx

    # ----------------------------------------------------------------- api
    def expr(self, e: ast.Expr) -> str:
        r = self.ctx.resolve(e)
        if r is not None:
            return r
        m = getattr(self, "_" + type(e).__name__, None)
        if m is None:
            raise QueryError(e.span, "internal", f"cannot generate code for {type(e).__name__}")
        return m(e)

    def as_type(self, e: ast.Expr, t: Type) -> str:
        """e converted to C type of t (numeric conversions only)."""
        s = self.expr(e)
        et = e.info.type
        if et == t or t in (Type.STRING, Type.IPV6) or et in (Type.STRING, Type.IPV6):
            return s
        if t is Type.BOOL:
            return f"(uint8_t)((({s})) != 0)"
        return f"(({t.c_type})({s}))"

    # ----------------------------------------------------------------- nodes
    def _Literal(self, e: ast.Literal) -> str:
        t = e.info.type
        k = e.kind
        if k == "string":
            data: bytes = e.value
            return f"gsq_str_lit({c_string(data)}, {len(data)}u)"
        if k == "bool":
            return "((uint8_t)1)" if e.value else "((uint8_t)0)"
        if k == "float":
            return c_float(e.value)
        if k == "ipv6":
            name = f"{self.ctx.const_prefix}_ipv6_{len(self.ctx.constants)}"
            b = ", ".join(f"0x{x:02x}" for x in bytes(e.value))
            self.ctx.constants.append(f"static const gsq_ipv6 {name} = {{{{{b}}}}};")
            return name
        return c_literal_int(int(e.value), t)

    def _Param(self, e: ast.Param) -> str:
        return self.ctx.param_ref(e.name)

    def _Unary(self, e: ast.Unary) -> str:
        op = e.op.lower()
        x = self.expr(e.operand)
        t = e.info.type
        if op in ("not", "!"):
            return f"((uint8_t)!({x}))"
        if op == "~":
            return f"(({t.c_type})~(({t.c_type})({x})))"
        # unary minus
        if t is Type.FLOAT:
            return f"(-(double)({x}))"
        ut = _UNSIGNED_OF.get(t, t.c_type)
        return f"(({t.c_type})(({ut})0 - ({ut})({x})))"

    def _Binary(self, e: ast.Binary) -> str:
        op = e.op.lower()
        if op == "and":
            return f"((uint8_t)(({self.expr(e.left)}) && ({self.expr(e.right)})))"
        if op == "or":
            return f"((uint8_t)(({self.expr(e.left)}) || ({self.expr(e.right)})))"
        if op in ("=", "<>", "!=", "<", ">", "<=", ">="):
            return self.compare(op, e.left, e.right)
        t = e.info.type
        if op in ("+", "-", "*"):
            if t is Type.FLOAT:
                return f"({self.as_type(e.left, t)} {op} {self.as_type(e.right, t)})"
            if t in _UNSIGNED_OF:
                ut = _UNSIGNED_OF[t]
                return (f"(({t.c_type})(({ut})({self.expr(e.left)}) {op} "
                        f"({ut})({self.expr(e.right)})))")
            return (f"(({t.c_type})(({t.c_type})({self.expr(e.left)}) {op} "
                    f"({t.c_type})({self.expr(e.right)})))")
        if op in ("/", "%"):
            if t is Type.FLOAT:
                return f"({self.as_type(e.left, t)} / {self.as_type(e.right, t)})"
            fn = "gsq_div_" if op == "/" else "gsq_mod_"
            return f"{fn}{_SUFFIX[t]}({self.as_type(e.left, t)}, {self.as_type(e.right, t)})"
        if op in ("&", "|"):
            return (f"(({t.c_type})(({t.c_type})({self.expr(e.left)}) {op} "
                    f"({t.c_type})({self.expr(e.right)})))")
        if op in ("<<", ">>"):
            fn = "gsq_shl_" if op == "<<" else "gsq_shr_"
            return f"{fn}{_SUFFIX[t]}({self.as_type(e.left, t)}, (uint64_t)({self.expr(e.right)}))"
        raise QueryError(e.span, "internal", f"operator {e.op}")

    def compare(self, op: str, left: ast.Expr, right: ast.Expr) -> str:
        cop = {"=": "==", "<>": "!=", "!=": "!="}.get(op, op)
        lt, rt = left.info.type, right.info.type
        a, b = self.expr(left), self.expr(right)
        if lt is Type.STRING:
            if cop == "==":
                return f"((uint8_t)gsq_str_eq({a}, {b}))"
            if cop == "!=":
                return f"((uint8_t)!gsq_str_eq({a}, {b}))"
            return f"((uint8_t)(gsq_str_cmp({a}, {b}) {cop} 0))"
        if lt is Type.IPV6:
            return f"((uint8_t)(gsq_ipv6_cmp({a}, {b}) {cop} 0))"
        ct = arithmetic_result(lt, rt) or lt
        if lt is Type.BOOL and rt is Type.BOOL:
            ct = Type.INT
        if ct.is_integer and not ct.is_signed:
            # an unsigned value against a literal 0 (`port >= 0`): the query's
            # tautology, folded here so the C compiler has nothing to warn of
            zero = lambda e: isinstance(e, ast.Literal) and e.value == 0  # noqa: E731
            if zero(right) and cop in (">=", "<"):
                return "((uint8_t)1)" if cop == ">=" else "((uint8_t)0)"
            if zero(left) and cop in ("<=", ">"):
                return "((uint8_t)1)" if cop == "<=" else "((uint8_t)0)"
        return f"((uint8_t)(({ct.c_type})({a}) {cop} ({ct.c_type})({b})))"

    def _InList(self, e: ast.InList) -> str:
        parts = [self.compare("=", e.expr, item) for item in e.items]
        return "((uint8_t)(" + " || ".join(parts) + "))"

    def _Call(self, e: ast.Call) -> str:
        f = catalog.lookup_scalar(e.name)
        assert f is not None
        t = e.info.type
        if f.emit == "cast":
            x = e.args[0]
            if t is Type.BOOL:
                return f"((uint8_t)(({self.expr(x)}) != 0))"
            return f"(({t.c_type})({self.expr(x)}))"
        if f.emit == "identity":
            return self.expr(e.args[0])
        if f.emit == "clock":
            return f"gsq_clock_seconds({self.ctx.node_var})"
        args = []
        handles = []   # prepared arguments come first in the C signature
        for i, (want, a) in enumerate(zip(f.params, e.args)):
            if i in f.handle_args:
                var = f"re_{len(self.ctx.regexes)}"
                self.ctx.regexes.append(Regex(var, a.value))
                handles.append(self.ctx.regex_ref(var))
                continue
            if want in (catalog.ANY_INT, catalog.ANY_NUM):
                args.append(f"(uint64_t)({self.expr(a)})")
            elif isinstance(want, Type) and want.is_integer and a.info.type != want:
                args.append(f"({want.c_type})({self.expr(a)})")
            else:
                args.append(self.expr(a))
        call = f"{f.c_name}({', '.join(handles + args)})"
        if f.name in ("UMIN", "UMAX"):
            return f"(({t.c_type})({call}))"
        return call


def field_member(name: str) -> str:
    return "c_" + c_identifier(name)
