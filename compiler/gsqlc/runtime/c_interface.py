"""The C ABI's declarations for cffi, read from the runtime's own headers.

gsq_runtime.h is the one source of truth of the exported interface: every
declaration it marks GSQ_EXPORT, the typedefs those name (gsqlc_*), the run
handle, and the Arrow C data and stream interface structures of
arrow_abi.h.  Reading them costs well under a millisecond; the parsed FFI
is cached by the text's digest (abi_ffi), so a changed header is a new
cache entry, never a stale one.
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from ..resources import resource_dir

_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_DIRECTIVE = re.compile(r"^\s*#.*?(?<!\\)$", re.M | re.S)
_EXPORT = re.compile(r"\bGSQ_EXPORT\s+([^;]*;)", re.S)
_TYPEDEF_STRUCT = re.compile(r"typedef\s+struct\s+(gsqlc_\w+)\s*\{[^}]*\}\s*\1\s*;", re.S)
_TYPEDEF_OPAQUE = re.compile(r"typedef\s+struct\s+(gsq(?:lc)?_\w+)\s+\1\s*;")
_TYPEDEF_CALLBACK = re.compile(r"typedef\s+\w[\w\s\*]*\(\s*\*\s*gsqlc_\w+\s*\)\s*\([^;]*\)\s*;",
                               re.S)
_ARROW_STRUCTS = ("ArrowSchema", "ArrowArray", "ArrowArrayStream")


def _code(path: Path) -> str:
    """The header's text without comments and preprocessor lines."""
    return _DIRECTIVE.sub("", _COMMENT.sub(" ", path.read_text()))


def _one_line(decl: str) -> str:
    return " ".join(decl.split())


def _arrow_struct(code: str, name: str) -> str:
    m = re.search(r"struct\s+" + name + r"\s*\{[^}]*\}\s*;", code, re.S)
    if m is None:
        raise RuntimeError(f"gsqlc: arrow_abi.h defines no struct {name}: reinstall gsqlc")
    return m.group(0)


def cdef_from(include: Path) -> str:
    """The cffi cdef of the exported ABI, from the headers in `include`:
    the Arrow structures, then the runtime's typedefs and exported
    declarations in the order the header gives them."""
    arrow = _code(include / "arrow_abi.h")
    runtime = _code(include / "gsq_runtime.h")
    exported_at = runtime.index("GSQ_EXPORT") if "GSQ_EXPORT" in runtime else len(runtime)
    parts = [_arrow_struct(arrow, s) for s in _ARROW_STRUCTS]
    found = []
    for pattern in (_TYPEDEF_OPAQUE, _TYPEDEF_STRUCT, _TYPEDEF_CALLBACK, _EXPORT):
        for m in pattern.finditer(runtime):
            # opaque handles: the run's and those the exported calls take
            if pattern is _TYPEDEF_OPAQUE and m.start() < exported_at and m.group(1) != "gsq_run":
                continue
            found.append((m.start(), m.group(1) if pattern is _EXPORT else m.group(0)))
    parts += [decl for _, decl in sorted(found)]
    return "\n".join(_one_line(p) for p in parts) + "\n"


@lru_cache(maxsize=1)
def abi_cdef() -> str:
    """The cdef of the installed (or checked-out) runtime's headers."""
    return cdef_from(resource_dir("runtime_c") / "include")
