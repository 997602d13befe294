"""The function catalog, as data.

Each scalar function says its signature, cost class, whether an LFTA may run
it, whether it is a predicate (usable as f[...]), and how it is emitted in C.
Each aggregate says its result type and its split into an LFTA
sub-aggregate and an HFTA super-aggregate (Tigon's sub/super scheme, as in
data-cube computation: count becomes a sum of counts, avg a sum over a count).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from ..frontend import ast
from .types import Type

# Argument classes used in signatures.
ANY_INT = "int-like"      # any integer type (incl. bool, IP)
ANY_NUM = "numeric"       # integer or float
ANY = "any"

CHEAP = "cheap"
EXPENSIVE = "expensive"


@dataclass(frozen=True)
class ScalarFunction:
    name: str
    params: tuple[object, ...]   # Type or class string per argument
    result: object          # Type, or a callable(arg types) -> Type
    cost: str = CHEAP
    lfta_legal: bool = True
    predicate: bool = False  # returns bool, usable as f[args]
    c_name: Optional[str] = None
    # Indices of arguments that must be constant (literals or parameters) and
    # are prepared once at initialisation (a compiled regular expression).
    handle_args: tuple[int, ...] = ()
    # Emission strategy: 'call' (c_name(args)), 'cast' (a C conversion),
    # 'identity', 'clock'.
    emit: str = "call"
    doc: str = ""

    def result_type(self, args: list[Type]) -> Type:
        r = self.result(args) if callable(self.result) else self.result
        assert isinstance(r, Type)
        return r


def _umin_result(args: list[Type]) -> Type:
    if any(a in (Type.ULLONG, Type.LLONG) for a in args):
        return Type.ULLONG
    return Type.UINT


SCALARS: dict[str, ScalarFunction] = {}


def _scalar(f: ScalarFunction) -> None:
    SCALARS[f.name.lower()] = f


_scalar(ScalarFunction("str_match_start", (Type.STRING, Type.STRING), Type.BOOL,
                       cost=EXPENSIVE, predicate=True,
                       c_name="gsq_fn_str_match_start",
                       doc="TRUE if the string starts with the literal"))
_scalar(ScalarFunction("str_exists_substr", (Type.STRING, Type.STRING), Type.BOOL,
                       cost=EXPENSIVE, predicate=True,
                       c_name="gsq_fn_str_exists_substr",
                       doc="TRUE if the literal occurs in the string"))
_scalar(ScalarFunction("str_match_offset", (Type.UINT, Type.STRING, Type.STRING),
                       Type.BOOL, cost=CHEAP, predicate=True,
                       c_name="gsq_fn_str_match_offset",
                       doc="TRUE if the literal occurs at the byte offset"))
_scalar(ScalarFunction("str_regex_match", (Type.STRING, Type.STRING), Type.BOOL,
                       cost=EXPENSIVE, lfta_legal=False, predicate=True,
                       c_name="gsq_fn_str_regex_match", handle_args=(1,),
                       doc="TRUE if the POSIX extended regular expression matches"))
_scalar(ScalarFunction("str_extract_regex", (Type.STRING, Type.STRING), Type.STRING,
                       cost=EXPENSIVE, lfta_legal=False,
                       c_name="gsq_fn_str_extract_regex", handle_args=(1,),
                       doc="the first match of the POSIX extended regular expression"))
_scalar(ScalarFunction("str_truncate", (Type.STRING, Type.UINT), Type.STRING,
                       c_name="gsq_fn_str_truncate",
                       doc="the first N bytes of the string"))
_scalar(ScalarFunction("str_length", (Type.STRING,), Type.UINT,
                       c_name="gsq_fn_str_length", doc="length in bytes"))
_scalar(ScalarFunction("strtoi", (Type.STRING,), Type.UINT,
                       c_name="gsq_fn_strtoi", doc="decimal prefix of a string"))
_scalar(ScalarFunction("strtoip", (Type.STRING,), Type.IP,
                       c_name="gsq_fn_strtoip", doc="dotted quad to IP"))
_scalar(ScalarFunction("UMIN", (ANY_INT, ANY_INT), _umin_result,
                       c_name="gsq_fn_umin", doc="unsigned minimum"))
_scalar(ScalarFunction("UMAX", (ANY_INT, ANY_INT), _umin_result,
                       c_name="gsq_fn_umax", doc="unsigned maximum"))
for _name, _t in (("INT", Type.INT), ("UINT", Type.UINT), ("FLOAT", Type.FLOAT),
                  ("ULLONG", Type.ULLONG), ("LLONG", Type.LLONG),
                  ("USHORT", Type.USHORT)):
    _scalar(ScalarFunction(_name, (ANY_NUM,), _t, emit="cast",
                           doc=f"conversion to {_t}"))
_scalar(ScalarFunction("non_temporal", (ANY,), lambda args: args[0],
                       emit="identity",
                       doc="the value, without its temporal property"))
_scalar(ScalarFunction("get_system_time", (), Type.UINT, emit="clock",
                       doc="the run's clock in seconds"))


@dataclass(frozen=True)
class AggComponent:
    """One accumulator: `op` folds contributions (sum|min|max|and|or|xor);
    `arg` says what an input row contributes: 'one' (count), 'arg' (the
    aggregate's argument), 'arg_float' (the argument as float)."""
    op: str
    arg: str


@dataclass(frozen=True)
class Aggregate:
    name: str
    # Result type from the argument type (None for count(*)).
    result: Callable[[Optional[Type]], Optional[Type]]
    # Accumulators, identical at both levels: the LFTA folds raw rows into
    # them (sub-aggregate), the HFTA folds LFTA partials with the same ops
    # (super-aggregate; a count is summed).
    components: tuple[AggComponent, ...]
    # How the final value is formed from the accumulators.
    final: str = "first"   # 'first' | 'avg'
    lfta_legal: bool = True
    star_ok: bool = False
    doc: str = ""


def _sum_type(t: Optional[Type]) -> Optional[Type]:
    if t is None or not t.is_numeric:
        return None
    if t is Type.FLOAT:
        return Type.FLOAT
    if t in (Type.INT, Type.LLONG):
        return Type.LLONG
    return Type.ULLONG


def _same(t: Optional[Type]) -> Optional[Type]:
    return t


def _bitwise(t: Optional[Type]) -> Optional[Type]:
    if t is None or not (t.is_integer):
        return None
    return t


AGGREGATES: dict[str, Aggregate] = {}


def _agg(a: Aggregate) -> None:
    AGGREGATES[a.name.lower()] = a


_agg(Aggregate("count", lambda t: Type.ULLONG, (AggComponent("sum", "one"),),
               star_ok=True, doc="number of rows (count(x) counts rows too: there are no NULLs)"))
_agg(Aggregate("sum", _sum_type, (AggComponent("sum", "arg"),), doc="sum"))
_agg(Aggregate("min", _same, (AggComponent("min", "arg"),), doc="minimum"))
_agg(Aggregate("max", _same, (AggComponent("max", "arg"),), doc="maximum"))
_agg(Aggregate("avg", lambda t: Type.FLOAT if t is not None and t.is_numeric else None,
               (AggComponent("sum", "arg_float"), AggComponent("sum", "one")),
               final="avg", doc="mean"))
_agg(Aggregate("And_Aggr", _bitwise, (AggComponent("and", "arg"),),
               doc="bitwise and (logical on bool)"))
_agg(Aggregate("Or_Aggr", _bitwise, (AggComponent("or", "arg"),),
               doc="bitwise or (logical on bool)"))
_agg(Aggregate("Xor_Aggr", _bitwise, (AggComponent("xor", "arg"),),
               doc="bitwise xor (logical on bool)"))


def lookup_scalar(name: str) -> Optional[ScalarFunction]:
    return SCALARS.get(name.lower())


def reads_clock(e: ast.Expr) -> bool:
    """Whether e is a call of a function that reads the run's clock
    (get_system_time and its kind)."""
    f = lookup_scalar(e.name) if isinstance(e, ast.Call) else None
    return f is not None and f.emit == "clock"


def lookup_aggregate(name: str) -> Optional[Aggregate]:
    return AGGREGATES.get(name.lower())


def all_function_names() -> list[str]:
    return sorted({f.name for f in SCALARS.values()} |
                  {a.name for a in AGGREGATES.values()})
