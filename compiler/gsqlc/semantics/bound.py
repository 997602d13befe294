"""Bound expressions: AST expressions after name resolution.

Analysis replaces each ColumnRef by what it names (a field of a FROM source,
a group-by value, an aggregate) and builds every node anew with its `info`
(an ExprInfo: type, temporal direction, LFTA-legality).  The references
below take their ExprInfo at construction.  Planning then rewrites sources
(a field of the protocol becomes a column of the LFTA's output stream); code
generation only sees these nodes.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional, Sequence, Union

from ..frontend import ast
from .types import Temporal, Type


@dataclass(frozen=True)
class ExprInfo:
    type: Type
    temporal: Temporal = Temporal.NONE
    lfta_ok: bool = True       # an LFTA may evaluate it
    cheap: bool = True         # no expensive function inside
    constant: bool = False     # literals, parameters, DEFINE values
    # a call's function as analysis resolved it (catalog.ScalarFunction:
    # a user's overload among others of its name)
    func: Any = field(default=None, compare=False)


@dataclass(eq=False)
class FieldRef(ast.Expr):
    """Column `name` of FROM source number `source`."""
    source: int
    name: str
    info: ExprInfo = field(kw_only=True, repr=False)


@dataclass(eq=False)
class GroupRef(ast.Expr):
    """The value of group-by item number `index`."""
    index: int
    info: ExprInfo = field(kw_only=True, repr=False)


@dataclass(eq=False)
class AggRef(ast.Expr):
    """The final value of aggregate number `index`."""
    index: int
    info: ExprInfo = field(kw_only=True, repr=False)


@dataclass(eq=False)
class AccumRef(ast.Expr):
    """Accumulator number `index` of a group (LFTA partial output)."""
    index: int
    info: ExprInfo = field(kw_only=True, repr=False)


@dataclass(eq=False)
class SuperAggRef(ast.Expr):
    """The value of super-aggregate number `index` (f$(...)) of a sampling
    query: over the group's supergroup."""
    index: int
    info: ExprInfo = field(kw_only=True, repr=False)


BoundRef = Union[FieldRef, GroupRef, AggRef, AccumRef, SuperAggRef]
BOUND_REFS = (FieldRef, GroupRef, AggRef, AccumRef, SuperAggRef)


def children(e: ast.Expr) -> list[ast.Expr]:
    if isinstance(e, ast.Unary):
        return [e.operand]
    if isinstance(e, ast.Binary):
        return [e.left, e.right]
    if isinstance(e, ast.InList):
        return [e.expr, *e.items]
    if isinstance(e, ast.Call):
        return list(e.args)
    if isinstance(e, ast.DefaultOf):
        return [e.expr]
    return []


def walk(e: ast.Expr) -> Iterator[ast.Expr]:
    yield e
    for c in children(e):
        yield from walk(c)


def with_children(e: ast.Expr, kids: Sequence[ast.Expr]) -> ast.Expr:
    """A copy of e (info included) whose children are `kids`, in the order
    children() lists them."""
    n = copy.copy(e)
    if isinstance(n, ast.Unary):
        (n.operand,) = kids
    elif isinstance(n, ast.Binary):
        n.left, n.right = kids
    elif isinstance(n, ast.InList):
        n.expr, n.items = kids[0], list(kids[1:])
    elif isinstance(n, ast.Call):
        n.args = list(kids)
    elif isinstance(n, ast.DefaultOf):
        (n.expr,) = kids
    return n


def rebuild(e: ast.Expr, fn: Callable[[ast.Expr], Optional[ast.Expr]]) -> ast.Expr:
    """Copy `e` bottom-up; where fn returns a node, it replaces the subtree
    (fn is tried top-down first, so a replaced subtree is not descended)."""
    r = fn(e)
    if r is not None:
        return r
    return with_children(e, [rebuild(c, fn) for c in children(e)])


def key(e: ast.Expr) -> tuple[object, ...]:
    """A structural key: equal keys mean the same computation."""
    if isinstance(e, ast.Literal):
        return ("lit", e.kind, e.value if not isinstance(e.value, float) else repr(e.value))
    if isinstance(e, FieldRef):
        return ("field", e.source, e.name)
    if isinstance(e, GroupRef):
        return ("group", e.index)
    if isinstance(e, AggRef):
        return ("agg", e.index)
    if isinstance(e, AccumRef):
        return ("accum", e.index)
    if isinstance(e, SuperAggRef):
        return ("superagg", e.index)
    if isinstance(e, ast.Param):
        return ("param", e.name)
    if isinstance(e, ast.IfaceParam):
        return ("iface-param", e.name)
    if isinstance(e, ast.DefineRef):
        return ("define", e.name)
    if isinstance(e, ast.ColumnRef):
        return ("col", e.table, e.name)
    if isinstance(e, ast.Star):
        return ("star",)
    if isinstance(e, ast.Unary):
        return ("un", e.op.lower(), key(e.operand))
    if isinstance(e, ast.Binary):
        return ("bin", e.op.lower(), key(e.left), key(e.right))
    if isinstance(e, ast.InList):
        return ("in", key(e.expr), tuple(key(i) for i in e.items))
    if isinstance(e, ast.Call):
        return ("call", e.name.lower(), e.predicate, e.superagg,
                tuple(key(a) for a in e.args))
    return ("other", id(e))


def to_text(e: ast.Expr, names: Optional[Callable[[ast.Expr], Optional[str]]] = None) -> str:
    """GSQL-like text of an expression, for explain output and comments."""
    if names is not None:
        s = names(e)
        if s is not None:
            return s
    def t(x: ast.Expr) -> str:
        return to_text(x, names)
    if isinstance(e, ast.Literal):
        if e.text:
            return e.text
        if e.kind == "string":
            return "'" + str(e.value.decode("utf-8", "backslashreplace")) + "'"
        return str(e.value)
    if isinstance(e, FieldRef):
        return e.name
    if isinstance(e, GroupRef):
        return f"group[{e.index}]"
    if isinstance(e, AggRef):
        return f"agg[{e.index}]"
    if isinstance(e, AccumRef):
        return f"accum[{e.index}]"
    if isinstance(e, SuperAggRef):
        return f"superagg[{e.index}]"
    if isinstance(e, ast.Param):
        return "$" + e.name
    if isinstance(e, ast.IfaceParam):
        return "@" + e.name
    if isinstance(e, ast.DefineRef):
        return "#" + e.name
    if isinstance(e, ast.ColumnRef):
        return f"{e.table}.{e.name}" if e.table else e.name
    if isinstance(e, ast.Star):
        return "*"
    if isinstance(e, ast.Unary):
        op = e.op.upper() + " " if e.op.lower() == "not" else e.op
        return f"{op}{t(e.operand)}"
    if isinstance(e, ast.Binary):
        op = e.op.upper() if e.op.lower() in ("and", "or") else e.op
        return f"({t(e.left)} {op} {t(e.right)})"
    if isinstance(e, ast.InList):
        return f"{t(e.expr)} IN [{', '.join(t(i) for i in e.items)}]"
    if isinstance(e, ast.Call):
        args = ", ".join(t(a) for a in e.args)
        if e.predicate:
            return f"{e.name}[{args}]"
        return f"{e.name}{'$' if e.superagg else ''}({args})"
    return "?"


def conjuncts(e: Optional[ast.Expr]) -> list[ast.Expr]:
    if e is None:
        return []
    if isinstance(e, ast.Binary) and e.op.lower() == "and":
        return conjuncts(e.left) + conjuncts(e.right)
    return [e]
