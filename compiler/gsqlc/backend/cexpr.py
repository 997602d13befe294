"""C expressions from bound expressions.

One emitter serves the LFTAs (C11) and the HFTAs (C++17): the code it writes
is the common subset.  What a column reference means depends on where the
expression runs (an unpacked packet field, a member of an input tuple, a
group key, an accumulator), so the caller passes a `resolve` function.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

from ..errors import QueryError
from ..frontend import ast
from ..semantics import catalog
from ..semantics.types import Type, arithmetic_result
from .cescape import c_identifier, c_string

if TYPE_CHECKING:
    from .user_code import UserCode

_SUFFIX = {Type.UINT: "u32", Type.IP: "u32", Type.INT: "i32",
           Type.ULLONG: "u64", Type.LLONG: "i64"}
_UNSIGNED_OF = {Type.INT: "uint32_t", Type.LLONG: "uint64_t"}


@dataclass
class Regex:
    var: str
    pattern: bytes


@dataclass
class Handle:
    """A user function's HANDLE argument, registered once when the HFTA
    functor starts: member `var` of class `cls` (backend/user_code.py),
    opened with the constant's C value `arg`."""
    var: str
    cls: str
    arg: str


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
    # the user functions the set calls (backend/user_code.py) and whether
    # this code is C++ (an HFTA's) or C (an LFTA's)
    user: Optional["UserCode"] = None
    cxx: bool = True
    # an HFTA functor's code: user HANDLE arguments become its members
    # (`handles`); PARTIAL user functions may fail the tuple (`failed_`)
    # while `partial_ok` (its WHERE, group keys and selections)
    functor: bool = False
    handles: list[Handle] = field(default_factory=list)
    # an LFTA's interface properties (@name): the variable of one, and the
    # names read
    iface_prop_ref: Optional[Callable[[str], str]] = None
    iface_props: set[str] = field(default_factory=set)
    # a functor's stateful-function state blocks: STATE name -> member class;
    # how code reaches a block (a functor member, or its supergroup's) and
    # the number of groups a stateful function is told of
    states: dict[str, str] = field(default_factory=dict)
    state_ref: Callable[[str], str] = lambda st: f"sf_{st}.get()"
    samples_ref: str = "0"
    partial_ok: bool = False
    partial_used: bool = False
    # an aggregation's aggregate arguments: a PARTIAL call is evaluated once
    # in extract() (no value drops the tuple before any group is touched)
    # into a functor member: (member, C type, call) each
    partial_cache: Optional[list[tuple[str, str, str]]] = None


# The values of the integer types (IP as uint, bool as its 0 and 1).
_RANGES = {Type.BOOL: (0, 1), Type.USHORT: (0, 0xFFFF), Type.INT: (-2**31, 2**31 - 1),
           Type.UINT: (0, 2**32 - 1), Type.IP: (0, 2**32 - 1),
           Type.LLONG: (-2**63, 2**63 - 1), Type.ULLONG: (0, 2**64 - 1)}
_MIRROR = {"==": "==", "!=": "!=", "<": ">", ">": "<", "<=": ">=", ">=": "<="}


def _wrap(v: int, t: Type) -> int:
    """v converted to integer type t as C converts (modulo 2^width)."""
    lo, hi = _RANGES[t]
    n = hi - lo + 1
    return (v - lo) % n + lo


def const_int(e: ast.Expr) -> Optional[int]:
    """The value of an integer literal, or of - or ~ applied to one, as the
    C code computes it in the expression's type; None for anything else."""
    t = e.info.type if e.info is not None else None
    if t not in _RANGES or t is Type.BOOL:
        return None
    if isinstance(e, ast.Literal):
        v = e.value
        return _wrap(v, t) if isinstance(v, int) and not isinstance(v, bool) else None
    if isinstance(e, ast.Unary) and e.op in ("-", "~"):
        x = const_int(e.operand)
        if x is None:
            return None
        return _wrap(-x if e.op == "-" else ~x, t)
    return None


def _image(t: Type, ct: Type) -> list[tuple[int, int]]:
    """The values of type t converted to ct, as intervals."""
    lo, hi = _RANGES[t]
    clo, chi = _RANGES[ct]
    if clo <= lo and hi <= chi:
        return [(lo, hi)]
    if hi - lo >= chi - clo:
        return [(clo, chi)]
    a, b = _wrap(lo, ct), _wrap(hi, ct)
    return [(a, b)] if a <= b else [(a, chi), (clo, b)]


def fold_compare(cop: str, left: ast.Expr, right: ast.Expr, ct: Type) -> Optional[bool]:
    """The value of `left cop right` (compared in type ct) when one side is
    an integer constant and the comparison has the same result for every
    value of the other side's type; None otherwise."""
    if ct not in _RANGES or cop not in _MIRROR:
        return None
    lv, rv = const_int(left), const_int(right)
    if (lv is None) == (rv is None):
        return None
    if lv is not None:
        cop, left, rv = _MIRROR[cop], right, lv
    assert rv is not None
    t = left.info.type if left.info is not None else None
    if t not in _RANGES:
        return None
    c = _wrap(rv, ct)
    spans = _image(t, ct)
    if cop in ("==", "!="):
        inside = any(lo <= c <= hi for lo, hi in spans)
        single = spans == [(c, c)]
        if inside and not single:
            return None
        eq = single
        return eq if cop == "==" else not eq
    ops = {"<": lambda v: v < c, ">": lambda v: v > c, "<=": lambda v: v <= c,
           ">=": lambda v: v >= c}
    # monotone over each interval: its ends say every value's result
    results = {ops[cop](v) for span in spans for v in span}
    return results.pop() if len(results) == 1 else None


_OPAQUE = ("#ifndef GSQ_OPAQUE_U64\n#define GSQ_OPAQUE_U64\n"
           "static inline uint64_t gsq_opaque_u64(uint64_t v) { return v; }\n"
           "static inline int64_t gsq_opaque_i64(int64_t v) { return v; }\n#endif")


def _foldable(e: ast.Expr) -> bool:
    """Whether the C compiler may fold e to a constant: literals, and
    operators and casts (UINT(...), emitted as C casts) over them only."""
    if isinstance(e, ast.Literal):
        return True
    if isinstance(e, ast.Unary):
        return _foldable(e.operand)
    if isinstance(e, ast.Binary):
        return _foldable(e.left) and _foldable(e.right)
    if isinstance(e, ast.Call):   # a cast (UINT(...)) is C's own; other calls are not folded
        f = catalog.lookup_scalar(e.name)
        return (f is not None and f.emit in ("cast", "identity") and bool(e.args)
                and all(_foldable(a) for a in e.args))
    return False


def _complement(e: ast.Expr) -> bool:
    """Whether e is ~x or an all-ones constant minus x (an unsigned complement)."""
    if isinstance(e, ast.Unary) and e.op == "~":
        return True
    if isinstance(e, ast.Binary) and e.op == "-" and e.info is not None \
            and e.info.type in _RANGES:
        c = const_int(e.left)
        return c is not None and _wrap(c, e.info.type) == _wrap(-1, e.info.type)
    return False


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
        code: str = m(e)
        return code

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

    def _IfaceParam(self, e: ast.IfaceParam) -> str:
        # an LFTA reads its interface's property once, at init (codegen)
        if self.ctx.iface_prop_ref is None:
            raise QueryError(e.span, "internal", f"@{e.name} outside an LFTA")
        self.ctx.iface_props.add(e.name)
        return self.ctx.iface_prop_ref(e.name)

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
        # a value against a constant its type cannot reach (`port >= 0`,
        # `ushort_field = 100000`): the query's tautology or contradiction,
        # folded here so the C compiler has nothing to warn of (-Wtype-limits)
        folded = fold_compare(cop, left, right, ct)
        if folded is not None:
            return "((uint8_t)1)" if folded else "((uint8_t)0)"
        if ct.is_integer and not ct.is_signed and (_complement(left) or _complement(right)):
            # `~x` or `ALL_ONES - x` (the C compiler folds it to ~x) of a
            # narrower unsigned x compared: gcc's -Wsign-compare warns of the
            # promoted complement; the value passes through a function it
            # does not look into
            if _OPAQUE not in self.ctx.constants:
                self.ctx.constants.append(_OPAQUE)
            a, b = (f"gsq_opaque_u64((uint64_t)({x}))" if _complement(e) else x
                    for x, e in ((a, left), (b, right)))
        elif ct.is_integer and _foldable(left) != _foldable(right):
            # a constant the C compiler computes (`UINT(1e-300)` is 0) against
            # a value: what it cannot reach fold_compare only sees for plain
            # literals, so the computed constant passes through a function the
            # compiler does not look into (-Wtype-limits has nothing to see)
            side = left if _foldable(left) else right
            if not isinstance(side, ast.Literal):
                if _OPAQUE not in self.ctx.constants:
                    self.ctx.constants.append(_OPAQUE)
                wrap = ("gsq_opaque_i64((int64_t)({}))" if ct.is_signed
                        else "gsq_opaque_u64((uint64_t)({}))")
                if side is left:
                    a = wrap.format(a)
                else:
                    b = wrap.format(b)
        return f"((uint8_t)(({ct.c_type})({a}) {cop} ({ct.c_type})({b})))"

    def _InList(self, e: ast.InList) -> str:
        if not e.items:   # x IN []: no value is in an empty list
            return "((uint8_t)0)"
        parts = [self.compare("=", e.expr, item) for item in e.items]
        return "((uint8_t)(" + " || ".join(parts) + "))"

    def _Call(self, e: ast.Call) -> str:
        f = e.info.func or catalog.lookup_scalar(e.name)
        assert f is not None
        t = e.info.type
        if f.emit == "user":
            return self._user_call(f, e)
        if f.emit == "cast":
            x = e.args[0]
            if t is Type.BOOL:
                return f"((uint8_t)(({self.expr(x)}) != 0))"
            if x.info.type is Type.FLOAT and t in _F2I and not _foldable(x):
                # a float out of the integer's range: saturated, NaN is 0
                # (C's conversion is undefined there)
                return f"{_F2I[t]}({self.expr(x)})"
            return f"(({t.c_type})({self.expr(x)}))"
        if f.emit == "identity":
            return self.expr(e.args[0])
        if f.emit == "clock":
            return f"gsq_clock_seconds({self.ctx.node_var})"
        if f.emit == "family":
            kinds = "".join(_num_kind(a.info.type) for a in e.args)
            ab = ", ".join(f"({_KIND_C[k]})({self.expr(a)})" for k, a in zip(kinds, e.args))
            return f"(({t.c_type}){f.c_name}_{kinds}({ab}))"
        if f.emit == "if_else":
            c, y, z = (self.expr(a) for a in e.args)
            return f"(({c}) ? ({t.c_type})({y}) : ({t.c_type})({z}))"
        args = []
        handles = []   # prepared arguments come first in the C signature
        if f.out_buffer or f.handle_kind == "map":
            if not self.ctx.functor:
                raise QueryError(e.span, "not-supported-yet",
                                 f"{f.name} {'in a join' if self.ctx.cxx else 'in an LFTA'} "
                                 "is not supported yet by gsqlc")
        if f.out_buffer:
            # the call site's own storage for the new string
            var = f"sb_{len(self.ctx.handles)}"
            self.ctx.handles.append(Handle(var, "gsq::str_buffer", ""))
            handles.append(var)
        for i, (want, a) in enumerate(zip(f.params, e.args)):
            if i in f.handle_args and f.handle_kind == "map":
                var = f"sm_{len(self.ctx.handles)}"
                self.ctx.handles.append(Handle(var, "gsq::int_string_map",
                                               f"node, {self.expr(a)}"))
                args.append(var)
                continue
            if i in f.handle_args and f.handle_kind == "const":
                args.append(self.expr(a))
                continue
            if i in f.handle_args:
                var = f"re_{len(self.ctx.regexes)}"
                assert isinstance(a, ast.Literal)   # analysis: a constant pattern
                self.ctx.regexes.append(Regex(var, a.value))
                handles.append(self.ctx.regex_ref(var))
                continue
            if want == catalog.FLOAT_ARG:
                args.append(f"(double)({self.expr(a)})")
            elif want in (catalog.ANY_INT, catalog.ANY_NUM):
                args.append(f"(uint64_t)({self.expr(a)})")
            elif isinstance(want, Type) and want.is_integer and a.info.type != want:
                args.append(f"({want.c_type})({self.expr(a)})")
            else:
                args.append(self.expr(a))
        return f"{f.c_name}({', '.join(handles + args)})"


    def _user_call(self, f: catalog.ScalarFunction, e: ast.Call) -> str:
        """A call of a user function through its wrapper (user_code.py): a
        HANDLE argument passes the functor's registered handle, a PARTIAL
        function first the functor's failure flag."""
        ctx = self.ctx
        assert ctx.user is not None, "a user function without user code"
        where = "in a join" if ctx.cxx else "in an LFTA"
        if (f.handle_args or f.partial or f.state) and not ctx.functor:
            what = ("a HANDLE parameter" if f.handle_args else "a PARTIAL function"
                    if f.partial else "a stateful function")
            raise QueryError(e.span, "not-supported-yet",
                             f"{f.name}: {what} {where} is not supported yet by gsqlc")
        if f.partial and not ctx.partial_ok:
            raise QueryError(e.span, "not-supported-yet",
                             f"the PARTIAL function {f.name} in CLOSING_WHEN, CLEANING_WHEN "
                             "or CLEANING_BY is not supported yet by gsqlc")
        fn = ctx.user.scalar(f, ctx.cxx)
        params = [t for i, t in enumerate(f.params) if i not in f.handle_args]
        plain = [a for i, a in enumerate(e.args) if i not in f.handle_args]
        if f.partial and ctx.partial_cache is not None:
            saved, ctx.partial_cache = ctx.partial_cache, None
            call = self._user_call(f, e)
            ctx.partial_cache = saved
            for var, _, code in saved:
                if code == call:
                    return var
            var = f"pr_{len(saved)}"
            saved.append((var, f.result_type([]).c_type, call))
            return var
        lead = []    # the state, the failure flag, the handles in slot order (user_code.py)
        if f.state is not None:
            ctx.states[f.state] = ctx.user.state(f)
            lead += [ctx.state_ref(c_identifier(f.state)), ctx.samples_ref]
        if f.partial:
            ctx.partial_used = True
            lead.append("failed_")
        lead += [self._handle(f, i, e.args[i]) for i in f.handle_args]
        return f"{fn}({', '.join(lead + self.user_args(params, plain))})"

    def _handle(self, owner: Any, slot: int, arg: ast.Expr) -> str:
        """A HANDLE argument (of a user function or aggregate `owner`):
        registered once, when the functor starts, as a member; its handle."""
        assert self.ctx.user is not None and self.ctx.functor
        want = owner.params[slot]
        assert isinstance(want, Type)
        var = f"uh_{len(self.ctx.handles)}"
        val = self.expr(arg) if want is Type.STRING else self.as_type(arg, want)
        self.ctx.handles.append(Handle(var, self.ctx.user.handle(owner, slot), val))
        return f"{var}.get()"

    def udaf_args(self, u: "catalog.UdafSpec", args: Sequence[ast.Expr]) -> list[str]:
        """The arguments of a user aggregate's update in an HFTA functor: a
        HANDLE argument as the functor's handle registered for it (once,
        when the functor starts), the others as user_args gives them."""
        return [self._handle(u, k, a) if k in u.handle_args else self.user_args((want,), (a,))[0]
                for k, (want, a) in enumerate(zip(u.params, args))]

    def user_args(self, params: Sequence[object], args: Sequence[ast.Expr]) -> list[str]:
        """Arguments of a user function or aggregate, as its wrapper takes
        them (backend/user_code.py): each in its parameter's gsqlc type."""
        out = []
        for want, a in zip(params, args):
            assert isinstance(want, Type)
            out.append(self.expr(a) if want is Type.STRING else self.as_type(a, want))
        return out


# Float-to-integer conversions without undefined behaviour (gsq_funcs_num.h).
_F2I = {Type.INT: "gsq_f2i32", Type.UINT: "gsq_f2u32", Type.IP: "gsq_f2u32",
        Type.USHORT: "gsq_f2u16", Type.LLONG: "gsq_f2i64", Type.ULLONG: "gsq_f2u64"}

# The kind a number is passed to a 'family' helper as (gsq_funcs_num.h).
_KIND_C = {"u": "uint64_t", "s": "int64_t", "f": "double"}


def _num_kind(t: Type) -> str:
    if t is Type.FLOAT:
        return "f"
    return "s" if t.is_signed else "u"


def field_member(name: str) -> str:
    return "c_" + c_identifier(name)
