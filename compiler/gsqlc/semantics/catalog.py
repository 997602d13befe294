"""The function catalog, as data.

Each scalar function says its signature, cost class, whether an LFTA may run
it, whether it is a predicate (usable as f[...]), and how it is emitted in C.
Each aggregate says its result type and its split into an LFTA
sub-aggregate and an HFTA super-aggregate (Tigon's sub/super scheme, as in
data-cube computation: count becomes a sum of counts, avg a sum over a count).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional

from ..frontend import ast
from .types import Type

# Argument classes used in signatures.
ANY_INT = "int-like"      # any integer type (incl. bool, IP)
ANY_NUM = "numeric"       # integer or float
FLOAT_ARG = "float-like"  # any number, passed as a float
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
    # What a handle argument is: 'regex' (compiled when the operator starts),
    # 'const' (a string literal passed as it is: strtoi_c, strtoip_c) or
    # 'map' (a map file read when the HFTA functor starts: int_to_string_map).
    handle_kind: str = "regex"
    # The result is a new string: each call site writes it into storage of
    # its own, a member of the HFTA functor (gsq::str_buffer, strings.hpp),
    # so that it outlives the expression and two calls do not share it.
    out_buffer: bool = False
    # Indices of arguments that must be constant (literals, parameters,
    # DEFINE values): the def files' CONST.
    const_args: tuple[int, ...] = ()
    # Emission strategy: 'call' (c_name(args)), 'cast' (a C conversion),
    # 'identity', 'clock', 'family' (c_name_XY(a, b), X and Y the kinds u/s/f
    # of the two numbers: gsq_funcs_num.h), 'if_else' (C's ?:), 'user' (a
    # function of the user's sources, in Tigon's calling convention:
    # backend/user_code.py).
    emit: str = "call"
    doc: str = ""
    # A user function (emit 'user'): PARTIAL (it may return no value, and
    # the tuple is then dropped), and the def line declaring it.
    partial: bool = False
    decl: Any = None
    # a stateful function (SFUN): the STATE block it shares with the others
    # declaring it, and that block's size in bytes
    state: Optional[str] = None
    state_bytes: int = 0

    def result_type(self, args: list[Type]) -> Type:
        r = self.result(args) if callable(self.result) else self.result
        assert isinstance(r, Type)
        return r


def _umin_result(args: list[Type]) -> Type:
    if args and all(a is Type.IP for a in args):
        return Type.IP
    return Type.UINT


def _if_else_result(args: list[Type]) -> Type:
    t = args[1] if len(args) > 1 else Type.UINT
    return t if t in (Type.INT, Type.LLONG, Type.ULLONG) else Type.UINT


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
_scalar(ScalarFunction("strtoi", (Type.STRING,), Type.UINT, cost=EXPENSIVE, lfta_legal=False,
                       c_name="gsq_fn_strtoi",
                       doc="decimal prefix of a string (the def: PARTIAL, COST HIGH)"))
_scalar(ScalarFunction("strtoip", (Type.STRING,), Type.IP, cost=EXPENSIVE, lfta_legal=False,
                       c_name="gsq_fn_strtoip",
                       doc="dotted quad to IP, 0.0.0.0 when not one (the def: PARTIAL, COST HIGH)"))
_scalar(ScalarFunction("strtoi_c", (Type.STRING,), Type.UINT, c_name="gsq_fn_strtoi",
                       handle_args=(0,), handle_kind="const",
                       doc="strtoi of a constant string"))
_scalar(ScalarFunction("strtoip_c", (Type.STRING,), Type.IP, c_name="gsq_fn_strtoip",
                       handle_args=(0,), handle_kind="const",
                       doc="strtoip of a constant string"))
# ---- GS-lite's MIN/MAX families and comparisons: each name takes the 25
# overloads (uint|int|ullong|llong|float) x (uint|int|ullong|llong|float);
# the numbers are compared exactly (-1 < 4294967295), then the chosen one is
# converted to the result type (integers wrap, floats truncate and saturate,
# NaN gives 0).  The def declares LLMIN/LLMAX's result ullong (its comment
# says llong): gsqlc follows the declaration.
_NUM2 = (ANY_NUM, ANY_NUM)
for _name, _c, _t, _what in (
        ("ULLMIN", "ullmin", Type.ULLONG, "minimum, as a ullong"),
        ("ULLMAX", "ullmax", Type.ULLONG, "maximum, as a ullong"),
        ("LLMIN", "ullmin", Type.ULLONG, "minimum, as a ullong (as the def declares it)"),
        ("LLMAX", "ullmax", Type.ULLONG, "maximum, as a ullong (as the def declares it)"),
        ("LMIN", "lmin", Type.INT, "minimum, as an int"),
        ("LMAX", "lmax", Type.INT, "maximum, as an int"),
        ("FMIN", "fmin", Type.FLOAT, "minimum, as a float"),
        ("FMAX", "fmax", Type.FLOAT, "maximum, as a float"),
        ("EQ", "eq", Type.UINT, "1 if x = y (compared exactly), else 0"),
        ("GEQ", "geq", Type.UINT, "1 if x >= y (compared exactly), else 0"),
        ("GE", "ge", Type.UINT, "1 if x > y (compared exactly), else 0"),
        ("LEQ", "leq", Type.UINT, "1 if x <= y (compared exactly), else 0"),
        ("LE", "le", Type.UINT, "1 if x < y (compared exactly), else 0")):
    _scalar(ScalarFunction(_name, _NUM2, _t, c_name="gsq_fn_" + _c, emit="family",
                           doc=_what))
_scalar(ScalarFunction("UMIN", _NUM2, _umin_result, c_name="gsq_fn_umin", emit="family",
                       doc="minimum, as a uint (an IP of two IPs)"))
_scalar(ScalarFunction("UMAX", _NUM2, _umin_result, c_name="gsq_fn_umax", emit="family",
                       doc="maximum, as a uint (an IP of two IPs)"))
_scalar(ScalarFunction("if_else_i", (ANY_INT, ANY_INT, ANY_INT), _if_else_result,
                       emit="if_else",
                       doc="y if x is not 0, else z (as y's type: int, uint, llong or ullong)"))

# ---- math (GS-lite's numeric functions: float arguments, COST LOW)
for _name, _what in (("sqrt", "square root"), ("sin", "sine (radians)"),
                     ("cos", "cosine (radians)"), ("tan", "tangent (radians)"),
                     ("asin", "arc sine"), ("acos", "arc cosine"), ("atan", "arc tangent"),
                     ("log", "natural logarithm"), ("log2", "base-2 logarithm"),
                     ("log10", "base-10 logarithm"), ("ceil", "smallest integral value >= x"),
                     ("floor", "largest integral value <= x"),
                     ("trunc", "x rounded toward zero")):
    _scalar(ScalarFunction(_name, (FLOAT_ARG,), Type.FLOAT, c_name="gsq_fn_" + _name,
                           doc=_what + " (C's; NaN or an infinity outside the domain)"))
_scalar(ScalarFunction("pow", (FLOAT_ARG, FLOAT_ARG), Type.FLOAT, c_name="gsq_fn_pow",
                       doc="x to the power y (C's pow)"))
_scalar(ScalarFunction("fmod", (FLOAT_ARG, FLOAT_ARG), Type.FLOAT, c_name="gsq_fn_fmod",
                       doc="remainder of x / y with x's sign (C's fmod; the def's one-argument "
                           "fmod(float) is read as fmod(float, float))"))
_scalar(ScalarFunction("endian_swap_ui", (Type.UINT,), Type.UINT,
                       c_name="gsq_fn_endian_swap_ui",
                       doc="the four bytes of x in the opposite order"))

# ---- strings
_scalar(ScalarFunction("str_compare", (Type.STRING, Type.STRING), Type.BOOL,
                       cost=EXPENSIVE, predicate=True, c_name="gsq_fn_str_compare",
                       doc="TRUE if the two strings are equal"))
_scalar(ScalarFunction("byte_match_offset", (Type.UINT, Type.UINT, Type.STRING), Type.BOOL,
                       predicate=True, c_name="gsq_fn_byte_match_offset",
                       doc="TRUE if the byte at offset x of the string is y"))
_scalar(ScalarFunction("str_suffix", (Type.STRING, Type.UINT), Type.STRING,
                       c_name="gsq_fn_str_suffix", doc="the last N bytes of the string"))
_scalar(ScalarFunction("get_list_entry", (Type.STRING, Type.STRING, Type.UINT), Type.STRING,
                       c_name="gsq_fn_get_list_entry", const_args=(2,),
                       doc="entry z (0 is the first; the def does not say) of x split at "
                           "each y; empty when there is none"))
_scalar(ScalarFunction("sum_uint_in_list", (Type.STRING, Type.STRING), Type.LLONG,
                       c_name="gsq_fn_sum_uint_in_list", const_args=(1,),
                       doc="sum of the entries of x split at each y, each read as strtoi "
                           "reads ('34|45|56', '|' gives 135)"))
_scalar(ScalarFunction("string_hash", (Type.STRING,), Type.UINT, c_name="gsq_fn_string_hash",
                       doc="32-bit FNV-1a hash of the bytes (the def names no hash)"))
_scalar(ScalarFunction("string_hash_long", (Type.STRING,), Type.ULLONG, lfta_legal=False,
                       c_name="gsq_fn_string_hash_long",
                       doc="64-bit FNV-1a hash of the bytes (the def names no hash)"))
_scalar(ScalarFunction("to_llong", (Type.STRING,), Type.LLONG, c_name="gsq_fn_to_llong",
                       doc="decimal prefix of a string, as C's strtoll (saturating)"))
_scalar(ScalarFunction("str_partial_regex_match", (Type.STRING, Type.STRING, Type.UINT),
                       Type.BOOL, cost=EXPENSIVE, lfta_legal=False, predicate=True,
                       c_name="gsq_fn_str_partial_regex_match", handle_args=(1,),
                       doc="TRUE if the POSIX extended regular expression matches within "
                           "the first N bytes"))

_scalar(ScalarFunction("to_hex_string", (Type.STRING,), Type.STRING, cost=EXPENSIVE,
                       lfta_legal=False, c_name="gsq_fn_to_hex_string", out_buffer=True,
                       doc="the bytes of the string as lower-case hex digits, two a byte "
                           "(GS-lite's; HFTA only)"))
_scalar(ScalarFunction("int_to_string_map", (ANY_INT, Type.STRING), Type.STRING,
                       cost=EXPENSIVE, lfta_legal=False, c_name="gsq_fn_int_to_string_map",
                       handle_args=(1,), handle_kind="map",
                       doc="the string the map file y (read once, when the query starts; "
                           "lines KEY,VALUE) gives the integer x, empty when none "
                           "(GS-lite's; HFTA only)"))

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
class UdafSpec:
    """A user-defined aggregate of a def file, in Tigon's calling convention
    (NAME_HFTA_AGGR_INIT_/UPDATE_/OUTPUT_/DESTROY_, and NAME_LFTA_AGGR_...
    with FLUSHME_ for one an LFTA runs).  Its scratchpad is `storage_bytes`
    bytes (fstringN) or one value of `storage_type`.  `sub`/`sup`: the
    aggregates it splits into (SUBAGGR in the LFTA, SUPERAGGR in the HFTA
    over the sub-aggregate's outputs).  `lfta_only`: the aggregate has an
    LFTA implementation only (the low half of one of gsqlc's library's split
    aggregates, GS-lite's FIRST_INT_lfta, avg_udaf_lfta, ...): a query that
    calls it aggregates in the LFTA; `whole` names the aggregate (and its
    extraction functions) that a query runs anywhere instead."""
    name: str
    params: tuple[Type, ...]
    result: Type
    storage_bytes: Optional[int] = None
    storage_type: Optional[Type] = None
    handle_args: tuple[int, ...] = ()
    const_args: tuple[int, ...] = ()
    running: bool = False
    hfta_only: bool = False
    sub: Optional["UdafSpec"] = None
    sup: Optional["UdafSpec"] = None
    decl: Any = None
    lfta_only: bool = False
    whole: str = ""

    @property
    def splits(self) -> bool:
        return self.sub is not None and self.sup is not None and not self.hfta_only


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
    udaf: Optional[UdafSpec] = None   # a user-defined aggregate


@dataclass(frozen=True)
class Extraction:
    """EXTR: `name(a1..an, b1..bm)` means `extractor(udaf(a1..an), b1..bm)`."""
    name: str
    params: tuple[Type, ...]
    result: Type
    udaf: str
    extractor: str
    decl: Any = None


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
    """A built-in scalar function (a user's are looked up in a Catalog)."""
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


@dataclass(eq=False)
class Catalog:
    """The functions a compilation may call: the built-in ones, and those of
    the user's function-definition files (semantics/user_functions.py), by
    lower-cased name, overloads in file order.  A built-in name always means
    the built-in function."""
    user_scalars: Mapping[str, tuple[ScalarFunction, ...]] = field(default_factory=dict)
    user_aggregates: Mapping[str, tuple[Aggregate, ...]] = field(default_factory=dict)
    extractions: Mapping[str, tuple[Extraction, ...]] = field(default_factory=dict)
    # STATE declarations, by name: their blocks' sizes in bytes
    states: Mapping[str, int] = field(default_factory=dict)
    def_files: tuple[str, ...] = ()

    def lookup_scalar(self, name: str) -> Optional[ScalarFunction]:
        """The built-in function, else the first user overload."""
        f = SCALARS.get(name.lower())
        if f is not None:
            return f
        over = self.user_scalars.get(name.lower())
        return over[0] if over else None

    def scalar_overloads(self, name: str) -> tuple[ScalarFunction, ...]:
        f = SCALARS.get(name.lower())
        return (f,) if f is not None else self.user_scalars.get(name.lower(), ())

    def aggregate_overloads(self, name: str) -> tuple[Aggregate, ...]:
        a = AGGREGATES.get(name.lower())
        return (a,) if a is not None else self.user_aggregates.get(name.lower(), ())

    def extraction_overloads(self, name: str) -> tuple[Extraction, ...]:
        if name.lower() in AGGREGATES or name.lower() in SCALARS:
            return ()
        return self.extractions.get(name.lower(), ())

    def is_aggregate(self, name: str) -> bool:
        """Whether a call of `name` aggregates (an aggregate, a UDAF or an
        extraction over one) rather than computes a scalar."""
        n = name.lower()
        if n in SCALARS:
            return False
        return n in AGGREGATES or n in self.user_aggregates or (
            n in self.extractions and n not in self.user_scalars)

    def all_function_names(self) -> list[str]:
        return sorted(set(all_function_names())
                      | {f.name for fs in self.user_scalars.values() for f in fs}
                      | {a.name for aa in self.user_aggregates.values() for a in aa}
                      | {x.name for xs in self.extractions.values() for x in xs})


BUILTIN = Catalog()
