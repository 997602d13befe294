"""The user's function sources that join a generated set.

    add_user_sources(gen, paths)   the `--udf` files join the generated set
    add_library_sources(gen, user) gsqlc's library of GS-lite's aggregates
                                   (runtime_c/udaf_lib/) joins a set calling it

A source is C (.c) or C++ (.cc, .cpp, .cxx, .C).  Its text, and the headers
beside it, are part of the set's digest: editing either rebuilds the set.
How they are built is udf_build.py's.
"""
from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Sequence

from ..errors import UsageError
from ..resources import resource_dir
from ..semantics.user_functions import is_library_decl
from .gen_shared import GeneratedSet
from .user_code import UserCode

C_SUFFIXES = (".c",)
CXX_SUFFIXES = (".cc", ".cpp", ".cxx", ".C")
_HEADER_SUFFIXES = (".h", ".hh", ".hpp", ".hxx", ".H")


def add_user_sources(gen: GeneratedSet, paths: Sequence[str]) -> None:
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
    return resource_dir("runtime_c") / LIBRARY_FOLDER


def calls_library(user: UserCode) -> bool:
    """Whether a set's user functions and aggregates include one of gsqlc's
    library (data/gsqlc_aggregates.def)."""
    decls = [f.decl for fs in (user.lfta_scalars, user.hfta_scalars) for f in fs.values()]
    decls += [u.decl for us in (user.lfta_udafs, user.hfta_udafs) for u in us.values()]
    return any(is_library_decl(d) for d in decls)


def add_library_sources(gen: GeneratedSet, user: UserCode) -> None:
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
