"""The user's function sources in a query set's build.

    add_user_sources(gen, paths)   the `--udf` files join the generated set
    add_library_sources(gen, user) gsqlc's library of GS-lite's aggregates
                                   (runtime_c/udaf_lib/) joins a set calling it
    located_link_error(gen, err)   a link that misses a user symbol, as a
                                   QueryError at the def line declaring it

A source is C (.c) or C++ (.cc, .cpp, .cxx, .C), compiled as it is against
Tigon's header names (runtime_c/tigon_compat/) and its own folder, without
gsqlc's warnings (the code is the user's).  Its text, and the headers beside
it, are part of the set's digest: editing either rebuilds the set.
"""
from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Sequence

from ..errors import BuildError, QueryError, UsageError

if TYPE_CHECKING:
    from .codegen import GeneratedSet
    from .user_code import UserCode

C_SUFFIXES = (".c",)
CXX_SUFFIXES = (".cc", ".cpp", ".cxx", ".C")
_HEADER_SUFFIXES = (".h", ".hh", ".hpp", ".hxx", ".H")


def add_user_sources(gen: "GeneratedSet", paths: Sequence[str]) -> None:
    manifest = []
    for k, p in enumerate(paths):
        path = Path(p)
        if path.suffix not in C_SUFFIXES + CXX_SUFFIXES:
            raise UsageError(f"--udf {p}: a C (.c) or C++ (.cc, .cpp, .cxx) source, "
                             f"not '{path.suffix or 'no suffix'}'")
        try:
            text = path.read_text(encoding="utf-8", errors="surrogateescape")
        except OSError as e:
            raise UsageError(f"--udf {p}: {e.strerror or e}") from None
        name = f"udf_{k:02d}_{re.sub(r'[^A-Za-z0-9_.-]', '_', path.name)}"
        gen.files[name] = text
        folder = path.resolve().parent
        gen.udfs.append((name, str(folder)))
        gen.udf_paths.append(p)
        for h in sorted(folder.iterdir()):
            if h.suffix in _HEADER_SUFFIXES and h.is_file():
                digest = hashlib.sha256(h.read_bytes()).hexdigest()
                manifest.append(f"{h} {digest}")
    if manifest:
        # the headers beside the sources, by content: a change rebuilds
        gen.files["udf_headers.txt"] = "\n".join(manifest) + "\n"


LIBRARY_FOLDER = "udaf_lib"
# the library's sources: C for an LFTA, C++ for an HFTA
LIBRARY_SOURCES = ("gsqlc_udaf_lfta.c", "gsqlc_udaf_hfta.cc", "gsqlc_sampling_hfta.cc")


def library_folder() -> Path:
    from ..resources import resource_dir
    return resource_dir("runtime_c") / LIBRARY_FOLDER


def calls_library(user: "UserCode") -> bool:
    """Whether a set's user functions and aggregates include one of gsqlc's
    library (data/gsqlc_aggregates.def)."""
    from ..semantics.user_functions import is_library_decl
    decls = [f.decl for fs in (user.lfta_scalars, user.hfta_scalars) for f in fs.values()]
    decls += [u.decl for us in (user.lfta_udafs, user.hfta_udafs) for u in us.values()]
    return any(is_library_decl(d) for d in decls)


def add_library_sources(gen: "GeneratedSet", user: "UserCode") -> None:
    """The library's sources join a set that calls one of its aggregates or
    extraction functions.  Their definitions are weak: a user's --udf source
    defining the same function (GS-lite's own, say) takes precedence."""
    if not calls_library(user):
        return
    folder = library_folder()
    for src in LIBRARY_SOURCES:
        name = f"gsqlc_lib_{src}"
        gen.files[name] = (folder / src).read_text(encoding="utf-8")
        gen.udfs.append((name, str(folder)))
    header = folder / "gsqlc_udaf_lib.h"
    gen.files["gsqlc_lib_headers.txt"] = \
        f"{header} {hashlib.sha256(header.read_bytes()).hexdigest()}\n"


def is_library_source(folder: str) -> bool:
    """Whether a set's source is of gsqlc's library (built with gsqlc's
    warnings, not as a user's code)."""
    return Path(folder) == library_folder()


# GNU ld: undefined reference to `sym'; lld and gold say it in other words
_UNDEFINED = re.compile(r"undefined (?:reference to|symbol:?) [`'\"]?([^'`\"\n]+)['`\"]?")


def located_link_error(gen: "GeneratedSet", err: BuildError) -> Optional[QueryError]:
    """The first user symbol the link could not find, as an error at the
    def line that declared it (None: the failure is not about one)."""
    if not gen.user_symbols:
        return None
    for m in _UNDEFINED.finditer(str(err)):
        sym = m.group(1).strip()
        name = sym.split("(", 1)[0].strip()
        decl = gen.user_symbols.get(name)
        if decl is None:
            continue
        kind, fname = getattr(decl, "kind", "FUN"), getattr(decl, "name", name)
        given = ", ".join(gen.udf_paths) or "none given"
        others = _definitions_named(name, str(err))
        hint = ("; they define " + " and ".join(others)) if others else ""
        return QueryError(getattr(decl, "span", None), "udf-undefined",
                          f"{kind} {fname}: the --udf sources ({given}) do not define {sym}, "
                          f"which Tigon's calling convention gives this declaration{hint}")
    return None


def _definitions_named(name: str, link_log: str) -> list[str]:
    """The functions called `name` that the user objects of the failed link
    (named in its command) define, demangled: a definition with other
    parameter types."""
    objs = [t for t in link_log.split() if re.search(r"/udf_\d+_[^/]*\.o$", t)]
    nm = shutil.which("nm")
    if not objs or nm is None:
        return []
    p = subprocess.run([nm, "-C", "--defined-only", *objs], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, text=True)
    found = []
    for line in p.stdout.splitlines():
        parts = line.split(" ", 2)
        if len(parts) == 3 and parts[1] in "TtWw" and \
                (parts[2] == name or parts[2].startswith(name + "(")):
            found.append(parts[2])
    return sorted(set(found))
