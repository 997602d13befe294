"""The user's function-definition files -> a Catalog.

    load_catalog(def_files) -> Catalog

Each file is in the syntax of Tigon's external_fcns.def (frontend/fcn_defs.py).
A FUN or PRED becomes a scalar function of the user's sources, a UDAF an
aggregate, an EXTR an extraction (`name(...)` read as `extractor(udaf(...),
...)`), a STATE or SFUN a stateful function.  A declaration of a name gsqlc
builds in is skipped: the built-in function is used (so Tigon's or GS-lite's
whole external_fcns.def may be given as it is).

Every catalog has a first layer: gsqlc's library of GS-lite's aggregates
(data/gsqlc_aggregates.def; their sources are runtime_c/udaf_lib/).  A
user's declaration of a name that library declares is skipped too.

Every error is a QueryError located at the def line, rule 'function-def',
naming the function: an unknown type or modifier, a SUBAGGR without its
SUPERAGGR, a split whose types do not chain, an EXTR whose aggregate or
extractor is not declared, a declaration given twice.
"""
from __future__ import annotations

import dataclasses
import re
from functools import lru_cache
from pathlib import Path
from typing import Callable, Optional, Sequence

from ..errors import QueryError
from ..frontend.fcn_defs import FunctionDecl, parse_function_defs
from ..frontend.span import Span
from .catalog import (
    AGGREGATES,
    CHEAP,
    EXPENSIVE,
    SCALARS,
    Aggregate,
    Catalog,
    Extraction,
    ScalarFunction,
    UdafSpec,
)
from .types import Type, parse_type_name

# Tigon's modifiers (User Manual section 8); those gsqlc does not act on are
# accepted and have no effect (COMBINABLE, CLASS: the prefilter; SAMPLING,
# LFTA_BAILOUT, HFTA_SUBAGGR/HFTA_SUPERAGGR: distributed mode).
_MODIFIERS = {"COST", "LFTA_LEGAL", "LFTA_ONLY", "HFTA_ONLY", "PARTIAL", "SUBAGGR",
              "SUPERAGGR", "HFTA_SUBAGGR", "HFTA_SUPERAGGR", "RUNNING", "MULT_RETURNS",
              "LFTA_BAILOUT", "COMBINABLE", "SAMPLING"}
_VALUED = {"COST", "SUBAGGR", "SUPERAGGR", "HFTA_SUBAGGR", "HFTA_SUPERAGGR"}
_COSTS = ("FREE", "LOW", "HIGH", "EXPENSIVE", "TOP")
_PARAM_MODIFIERS = {"HANDLE", "CONST", "CLASS"}
_FSTRING = re.compile(r"fstring([0-9]+)$", re.IGNORECASE)


def _error(d: FunctionDecl, msg: str, span: Optional[Span] = None) -> QueryError:
    return QueryError(span or d.span, "function-def", f"{d.kind} {d.name}: {msg}")


def _type(d: FunctionDecl, name: str, span: Optional[Span], what: str) -> Type:
    t = parse_type_name(name)
    if t is None:
        raise _error(d, f"unknown type '{name}' of {what} (the types are "
                     "bool, ushort, uint, int, ullong, llong, float, IP, IPV6, string)", span)
    return t


def _params(d: FunctionDecl) -> tuple[tuple[Type, ...], tuple[int, ...], tuple[int, ...]]:
    types, handles, consts = [], [], []
    for i, p in enumerate(d.params):
        types.append(_type(d, p.type, p.span, f"parameter {i + 1}"))
        for m in p.modifiers:
            if m not in _PARAM_MODIFIERS:
                raise _error(d, f"unknown parameter modifier '{m}' (HANDLE, CONST or CLASS)",
                             p.span)
        if "HANDLE" in p.modifiers:
            handles.append(i)
        if "CONST" in p.modifiers:
            consts.append(i)
    return tuple(types), tuple(handles), tuple(consts)


def _check_modifiers(d: FunctionDecl) -> None:
    for m in d.modifiers:
        if m.name not in _MODIFIERS:
            raise _error(d, f"unknown modifier '{m.name}' (one of "
                         + ", ".join(sorted(_MODIFIERS)) + ")", m.span)
        if m.name in _VALUED and m.value is None:
            raise _error(d, f"modifier {m.name} needs a value", m.span)
        if m.name == "COST" and (m.value or "").upper() not in _COSTS:
            raise _error(d, f"COST is one of {', '.join(_COSTS)}, not '{m.value}'", m.span)
        if m.name not in _VALUED and m.value is not None:
            raise _error(d, f"modifier {m.name} takes no value ('{m.value}')", m.span)


def _scalar(d: FunctionDecl) -> ScalarFunction:
    params, handles, consts = _params(d)
    if d.kind == "PRED":
        result = Type.BOOL
    else:
        assert d.result is not None
        result = _type(d, d.result, d.span, "the result")
    cost_mod = d.modifier("COST")
    cost = (cost_mod.value or "LOW").upper() if cost_mod else "LOW"
    return ScalarFunction(
        d.name, params, result,
        cost=CHEAP if cost in ("FREE", "LOW") else EXPENSIVE,
        lfta_legal=d.has("LFTA_LEGAL") or d.has("LFTA_ONLY"),
        predicate=d.kind == "PRED" or result is Type.BOOL,
        c_name=d.name, handle_args=handles, handle_kind="user", const_args=consts,
        emit="user", partial=d.has("PARTIAL"), decl=d,
        doc=f"declared in {d.span.file}:{d.span.line}")


def _storage(d: FunctionDecl) -> tuple[Optional[int], Optional[Type]]:
    assert d.storage is not None
    m = _FSTRING.match(d.storage)
    if m:
        n = int(m.group(1))
        if not 0 < n <= 1 << 20:
            raise _error(d, f"scratchpad {d.storage}: a size from 1 to 1048576 bytes")
        return n, None
    t = parse_type_name(d.storage)
    if t is None:
        raise _error(d, f"unknown scratchpad type '{d.storage}' (fstringN, N bytes, or a "
                     "type: uint, int, ullong, llong, float, IP, string, ...)")
    return None, t


def _udaf_base(d: FunctionDecl) -> UdafSpec:
    params, handles, consts = _params(d)
    assert d.result is not None
    result = _type(d, d.result, d.span, "the result")
    nbytes, stype = _storage(d)
    return UdafSpec(d.name, params, result, storage_bytes=nbytes, storage_type=stype,
                    handle_args=handles, const_args=consts, running=d.has("RUNNING"),
                    hfta_only=d.has("HFTA_ONLY"), decl=d)


def _find_udaf(d: FunctionDecl, role: str, name: str, want: tuple[Type, ...],
               udafs: dict[str, list[UdafSpec]]) -> UdafSpec:
    mod = d.modifier(role)
    over = udafs.get(name.lower())
    if not over:
        raise _error(d, f"{role} {name} is not declared as a UDAF in the def files",
                     mod.span if mod else None)
    for u in over:
        if u.params == want:
            return u
    shown = ", ".join(str(t) for t in want)
    raise _error(d, f"{role} {name} is not declared with parameters ({shown})",
                 mod.span if mod else None)


def _constant_result(t: Type) -> Callable[[Optional[Type]], Optional[Type]]:
    return lambda _arg: t


def library_def_path() -> str:
    """gsqlc's def file of GS-lite's aggregates (its first catalog layer)."""
    from ..resources import data_path
    return str(data_path(LIBRARY_DEF))


LIBRARY_DEF = "gsqlc_aggregates.def"


@lru_cache(maxsize=None)
def _library_decls() -> tuple[FunctionDecl, ...]:
    """The library's declarations, parsed once per content of its def file
    and of the parser and kept in the cache (parsing them was 50 ms of every
    compile; loading them 3 ms)."""
    import hashlib
    import pickle

    from ..errors import register_source
    from ..frontend import fcn_defs
    from ..frontend.parser import _GRAMMAR_DIR, read_source
    from ..resources import cache_root, read_checked, write_checked
    path = library_def_path()
    text = read_source(path)
    register_source(path, text)   # its declarations' spans are shown from it
    h = hashlib.sha256(f"{path}\0{text}\0".encode())
    for f in (Path(fcn_defs.__file__), _GRAMMAR_DIR / "fcn_defs.lark"):
        h.update(f.read_bytes())
    entry = cache_root() / f"library-decls-{h.hexdigest()[:24]}.pickle"
    body = read_checked(entry)
    if body is not None:
        try:
            return tuple(pickle.loads(body))
        except Exception:  # noqa: BLE001 - an entry that does not load is rewritten
            pass
    decls = tuple(parse_function_defs(path, text))
    try:
        write_checked(entry, pickle.dumps(decls))
    except OSError:
        pass   # an unwritable cache costs the parse only
    return decls


def is_library_decl(decl: object) -> bool:
    """Whether a declaration is one of gsqlc's library (its sources are
    runtime_c/udaf_lib/, built into a set that calls it)."""
    span = getattr(decl, "span", None)
    return span is not None and span.file == library_def_path()


def library_names() -> frozenset[str]:
    """The lower-cased names the library declares."""
    return frozenset(d.name.lower() for d in _library_decls())


def _library_lfta_halves(udaf_decls: Sequence[FunctionDecl],
                         extrs: Sequence[FunctionDecl]) -> dict[str, str]:
    """The library's aggregates that are only the LFTA half (SUBAGGR) of a
    split one, each with the names of the whole aggregate(s) to call instead
    (and the extraction functions over them): 'FIRST', 'quant_ui_udaf_hftaZ
    (quantile_of, median_of)'."""
    subs: dict[str, list[str]] = {}
    sups: set[str] = set()
    for d in udaf_decls:
        if not is_library_decl(d):
            continue
        sub_m, sup_m = d.modifier("SUBAGGR"), d.modifier("SUPERAGGR")
        if sub_m is not None and sub_m.value and sup_m is not None and sup_m.value:
            names = subs.setdefault(sub_m.value.lower(), [])
            if d.name not in names:
                names.append(d.name)
            sups.add(sup_m.value.lower())
    out: dict[str, str] = {}
    for sub, wholes in subs.items():
        if sub in sups:
            continue
        shown = []
        for w in wholes:
            ex = sorted({e.name for e in extrs if is_library_decl(e) and e.udaf is not None
                         and e.udaf.lower() == w.lower()})
            shown.append(w + (f" ({', '.join(ex)})" if ex else ""))
        out[sub] = " or ".join(shown)
    return out


def load_catalog(def_files: Sequence[str]) -> Catalog:
    """The catalog of the built-in functions, gsqlc's library of GS-lite's
    aggregates and the user's `def_files`."""
    decls: list[FunctionDecl] = list(_library_decls())
    for f in def_files:
        decls.extend(parse_function_defs(f))
    return catalog_of(decls, tuple(def_files))


def catalog_of(decls: Sequence[FunctionDecl], def_files: tuple[str, ...] = ()) -> Catalog:
    scalars: dict[str, list[ScalarFunction]] = {}
    udafs: dict[str, list[UdafSpec]] = {}
    udaf_decls: list[FunctionDecl] = []
    extrs: list[FunctionDecl] = []
    states: dict[str, int] = {}
    sfuns: list[FunctionDecl] = []
    seen: dict[tuple[str, str, tuple[str, ...]], FunctionDecl] = {}
    library = {d.name.lower() for d in decls if is_library_decl(d)}
    for d in decls:
        _check_modifiers(d)
        low = d.name.lower()
        if d.kind in ("FUN", "PRED", "UDAF", "EXTR") and (low in SCALARS or low in AGGREGATES):
            continue    # gsqlc's own
        if low in library and not is_library_decl(d):
            continue    # gsqlc's library's
        sig = (d.kind if d.kind != "PRED" else "FUN", low,
               tuple(p.type.lower() for p in d.params))
        if d.kind != "STATE" and sig in seen:
            first = seen[sig]
            if (first.result or "").lower() == (d.result or "").lower() and \
                    (first.storage or "").lower() == (d.storage or "").lower():
                continue    # the same declaration again (GS-lite's file has some)
            raise _error(d, f"declared twice with the same parameters and another result "
                         f"(first at {first.span.file}:{first.span.line})")
        seen[sig] = d
        if d.kind in ("FUN", "PRED"):
            scalars.setdefault(low, []).append(_scalar(d))
        elif d.kind == "UDAF":
            udafs.setdefault(low, []).append(_udaf_base(d))
            udaf_decls.append(d)
        elif d.kind == "EXTR":
            extrs.append(d)
        elif d.kind == "STATE":
            nbytes, stype = _storage(d)
            if nbytes is None:
                raise _error(d, f"a state block is fstringN (N bytes), not '{d.storage}'")
            states[low] = nbytes
        else:
            sfuns.append(d)
    # stateful functions: each names a STATE of the files
    for d in sfuns:
        assert d.state is not None
        if d.state.lower() not in states:
            raise _error(d, f"state {d.state} is not declared (fstringN STATE {d.state};)")
        f = _scalar(d)
        scalars.setdefault(d.name.lower(), []).append(dataclasses.replace(
            f, state=d.state, state_bytes=states[d.state.lower()], lfta_legal=False))
    # splits: SUBAGGR and SUPERAGGR name other UDAFs of the files
    aggregates: dict[str, list[Aggregate]] = {}
    halves = _library_lfta_halves(udaf_decls, extrs)
    for d in udaf_decls:
        low = d.name.lower()
        base = next(u for u in udafs[low] if u.decl is d)
        sub_m, sup_m = d.modifier("SUBAGGR"), d.modifier("SUPERAGGR")
        if (sub_m is None) != (sup_m is None):
            have, miss = ("SUBAGGR", "SUPERAGGR") if sub_m else ("SUPERAGGR", "SUBAGGR")
            raise _error(d, f"{have} without {miss}: a split aggregate names both its "
                         "LFTA sub-aggregate and its HFTA super-aggregate")
        spec = base
        if sub_m is not None and sup_m is not None:
            assert sub_m.value is not None and sup_m.value is not None
            sub = _find_udaf(d, "SUBAGGR", sub_m.value, base.params, udafs)
            sup = _find_udaf(d, "SUPERAGGR", sup_m.value, (sub.result,), udafs)
            if sup.result != base.result:
                raise _error(d, f"SUPERAGGR {sup.name} returns {sup.result}, the aggregate "
                             f"{base.result}", sup_m.span)
            spec = UdafSpec(**{**base.__dict__, "sub": sub, "sup": sup})
        elif is_library_decl(d) and low in halves:
            # the library defines only its LFTA half: it aggregates in an LFTA
            spec = dataclasses.replace(base, lfta_only=True, whole=halves[low])
        aggregates.setdefault(low, []).append(Aggregate(
            d.name, _constant_result(base.result), (), lfta_legal=spec.splits or spec.lfta_only,
            doc=f"user-defined aggregate ({d.span.file}:{d.span.line})", udaf=spec))
    extractions: dict[str, list[Extraction]] = {}
    for d in extrs:
        params, _, _ = _params(d)
        assert d.result is not None and d.udaf is not None and d.extractor is not None
        result = _type(d, d.result, d.span, "the result")
        if d.udaf.lower() not in udafs and d.udaf.lower() not in AGGREGATES:
            raise _error(d, f"aggregate {d.udaf} is not declared as a UDAF")
        if d.extractor.lower() not in scalars and d.extractor.lower() not in SCALARS:
            raise _error(d, f"extraction function {d.extractor} is not declared as a FUN")
        extractions.setdefault(d.name.lower(), []).append(
            Extraction(d.name, params, result, d.udaf, d.extractor, decl=d))
    return Catalog(user_scalars={k: tuple(v) for k, v in scalars.items()},
                   user_aggregates={k: tuple(v) for k, v in aggregates.items()},
                   extractions={k: tuple(v) for k, v in extractions.items()},
                   states=dict(states),
                   def_files=def_files)


__all__ = ["load_catalog", "catalog_of", "is_library_decl", "library_def_path",
           "library_names"]
