"""Function-definition files: Tigon's external_fcns.def syntax -> declarations.

    parse_function_defs(path, text=None) -> list[FunctionDecl]

One declaration per `;` (grammar/fcn_defs.lark):

    ret FUN [mods] name(params);            a scalar function
    PRED [mods] name[params];               a predicate
    ret UDAF [mods] name storage(params);   a user-defined aggregate
    ret EXTR name udaf extractor(params);   name(...) = extractor(udaf(...), ...)
    storage STATE name;                     a state block of stateful functions
    ret SFUN [mods] name state(params);     a stateful function

Modifiers are kept as written (upper-cased names, an optional value:
`COST HIGH`, `SUBAGGR name`); what they mean is the semantics' business
(semantics/user_functions.py).  Every declaration, parameter and modifier
carries its span, so a later error points at the def line.  No name is
resolved and no type checked here.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from lark import Token, Transformer, v_args

from ..errors import register_source
from .parser import _transform, parse_tree, read_source
from .span import Span


@dataclass(frozen=True)
class Modifier:
    name: str                 # upper-cased: LFTA_LEGAL, COST, SUBAGGR, ...
    value: Optional[str]      # COST's level, SUBAGGR's aggregate, ...
    span: Span


@dataclass(frozen=True)
class ParamDecl:
    type: str                 # as written: uint, string, IP, ...
    modifiers: tuple[str, ...]  # upper-cased: HANDLE, CONST, CLASS
    span: Span


@dataclass(frozen=True)
class FunctionDecl:
    """One declaration.  kind: FUN, PRED, UDAF, EXTR, STATE, SFUN."""
    kind: str
    name: str
    result: Optional[str]             # None for PRED
    params: tuple[ParamDecl, ...] = ()
    modifiers: tuple[Modifier, ...] = ()
    storage: Optional[str] = None     # UDAF's scratchpad type, STATE's block type
    udaf: Optional[str] = None        # EXTR: the aggregate it reads
    extractor: Optional[str] = None   # EXTR: the function applied to it
    state: Optional[str] = None       # SFUN: its STATE
    span: Span = field(default_factory=lambda: Span("", 0, 0, 0, 0))
    name_span: Optional[Span] = None

    def modifier(self, name: str) -> Optional[Modifier]:
        return next((m for m in self.modifiers if m.name == name), None)

    def has(self, name: str) -> bool:
        return self.modifier(name) is not None


def parse_function_defs(path: str, text: Optional[str] = None) -> list[FunctionDecl]:
    """The declarations of a function-definition file, in file order; raises
    a located QueryError('syntax') on text that is not one."""
    if text is None:
        text = read_source(path)
    register_source(path, text)
    tree = parse_tree("fcn_defs", path, text)
    decls: list[FunctionDecl] = _transform(_DeclBuilder(path), tree)
    return decls


def _span(path: str, x: Any) -> Span:
    if isinstance(x, Token):
        return Span(path, x.line or 0, x.column or 0, x.end_line or 0, x.end_column or 0)
    m = x
    return Span(path, m.line, m.column, m.end_line, m.end_column)


class _DeclBuilder(Transformer[Token, Any]):
    def __init__(self, path: str):
        super().__init__()
        self.path = path

    def start(self, items: list[Any]) -> list[FunctionDecl]:
        return [d for d in items if isinstance(d, FunctionDecl)]

    @v_args(meta=True)
    def mod(self, meta: Any, items: list[Token]) -> Modifier:
        value = str(items[1]) if len(items) > 1 else None
        return Modifier(str(items[0]).upper(), value, _span(self.path, meta))

    def mods(self, items: list[Modifier]) -> tuple[Modifier, ...]:
        return tuple(items)

    @v_args(meta=True)
    def param(self, meta: Any, items: list[Token]) -> ParamDecl:
        return ParamDecl(str(items[0]), tuple(str(t).upper() for t in items[1:]),
                         _span(self.path, meta))

    def params(self, items: list[ParamDecl]) -> tuple[ParamDecl, ...]:
        return tuple(items)

    def _decl(self, meta: Any, kind: str, items: list[Any], **kw: Any) -> FunctionDecl:
        mods = next((x for x in items if isinstance(x, tuple) and x
                     and isinstance(x[0], Modifier)), ())
        params = next((x for x in items if isinstance(x, tuple)
                       and (not x or isinstance(x[0], ParamDecl)) and x is not mods), ())
        name_tok = kw.pop("name_tok")
        return FunctionDecl(kind=kind, name=str(name_tok), params=params, modifiers=mods,
                            span=_span(self.path, meta),
                            name_span=_span(self.path, name_tok), **kw)

    @staticmethod
    def _names(items: list[Any]) -> list[Token]:
        return [x for x in items if isinstance(x, Token)]

    @v_args(meta=True)
    def fun(self, meta: Any, items: list[Any]) -> FunctionDecl:
        ret, name = self._names(items)
        return self._decl(meta, "FUN", items, name_tok=name, result=str(ret))

    @v_args(meta=True)
    def pred(self, meta: Any, items: list[Any]) -> FunctionDecl:
        (name,) = self._names(items)
        return self._decl(meta, "PRED", items, name_tok=name, result=None)

    @v_args(meta=True)
    def udaf(self, meta: Any, items: list[Any]) -> FunctionDecl:
        ret, name, storage = self._names(items)
        return self._decl(meta, "UDAF", items, name_tok=name, result=str(ret),
                          storage=str(storage))

    @v_args(meta=True)
    def extr(self, meta: Any, items: list[Any]) -> FunctionDecl:
        ret, name, udaf, extractor = self._names(items)
        return self._decl(meta, "EXTR", items, name_tok=name, result=str(ret),
                          udaf=str(udaf), extractor=str(extractor))

    @v_args(meta=True)
    def state(self, meta: Any, items: list[Any]) -> FunctionDecl:
        storage, name = self._names(items)
        return self._decl(meta, "STATE", items, name_tok=name, result=None,
                          storage=str(storage))

    @v_args(meta=True)
    def sfun(self, meta: Any, items: list[Any]) -> FunctionDecl:
        ret, name, state = self._names(items)
        return self._decl(meta, "SFUN", items, name_tok=name, result=str(ret),
                          state=str(state))
