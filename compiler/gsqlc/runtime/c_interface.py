"""The C ABI's declarations for cffi, read from the runtime's own headers.

gsq_runtime.h is the one source of truth of the exported interface: every
declaration it marks GSQ_EXPORT, the typedefs those name (gsqlc_*), the run
handle, and the Arrow C data and stream interface structures of
arrow_abi.h.  The parsed FFI is cached (abi_ffi) under a digest of the
headers and of this module, so a start-up reads them without extracting
anything, and a changed header is a new cache entry, never a stale one.
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from ..resources import resource_dir

_ARROW_STRUCTS = ("ArrowSchema", "ArrowArray", "ArrowArrayStream")


@lru_cache(maxsize=1)
def _patterns() -> dict[str, re.Pattern[str]]:
    """The patterns of the headers' parts (compiled on first use: a start-up
    with the declarations cached needs none)."""
    return {
        "comment": re.compile(r"/\*.*?\*/|//[^\n]*", re.S),
        "directive": re.compile(r"^\s*#.*?(?<!\\)$", re.M | re.S),
        "export": re.compile(r"\bGSQ_EXPORT\s+([^;]*;)", re.S),
        "struct": re.compile(r"typedef\s+struct\s+(gsqlc_\w+)\s*\{[^}]*\}\s*\1\s*;", re.S),
        "opaque": re.compile(r"typedef\s+struct\s+(gsq(?:lc)?_\w+)\s+\1\s*;"),
        "callback": re.compile(
            r"typedef\s+\w[\w\s\*]*\(\s*\*\s*gsqlc_\w+\s*\)\s*\([^;]*\)\s*;", re.S),
    }


def _code(path: Path) -> str:
    """The header's text without comments and preprocessor lines."""
    p = _patterns()
    return p["directive"].sub("", p["comment"].sub(" ", path.read_text()))


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
    for kind in ("opaque", "struct", "callback", "export"):
        for m in _patterns()[kind].finditer(runtime):
            # opaque handles: the run's and those the exported calls take
            if kind == "opaque" and m.start() < exported_at and m.group(1) != "gsq_run":
                continue
            found.append((m.start(), m.group(1) if kind == "export" else m.group(0)))
    parts += [decl for _, decl in sorted(found)]
    return "\n".join(_one_line(p) for p in parts) + "\n"


def _include() -> Path:
    return resource_dir("runtime_c") / "include"


@lru_cache(maxsize=1)
def abi_cdef() -> str:
    """The cdef of the installed (or checked-out) runtime's headers."""
    return cdef_from(_include())


def abi_key() -> bytes:
    """What abi_cdef() is made from: the headers and this module's text."""
    return b"\0".join(p.read_bytes() for p in (_include() / "gsq_runtime.h",
                                               _include() / "arrow_abi.h", Path(__file__)))
