"""The user's function sources in a query set's build (user_sources.py
adds them to the generated set).

    is_library_source(folder)      a source of gsqlc's library, built with
                                   gsqlc's warnings
    located_link_error(gen, err)   a link that misses a user symbol, as a
                                   QueryError at the def line declaring it

A source is C (.c) or C++ (.cc, .cpp, .cxx, .C), compiled as it is against
Tigon's header names (runtime_c/tigon_compat/) and its own folder, without
gsqlc's warnings (the code is the user's).  Its text, and the headers beside
it, are part of the set's digest: editing either rebuilds the set.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Optional

from ..errors import BuildError, QueryError
from .gen_shared import GeneratedSet
from .user_sources import library_folder


def is_library_source(folder: str) -> bool:
    """Whether a set's source is of gsqlc's library (built with gsqlc's
    warnings, not as a user's code)."""
    return Path(folder) == library_folder()


# GNU ld: undefined reference to `sym'; lld and gold say it in other words
_UNDEFINED = re.compile(r"undefined (?:reference to|symbol:?) [`'\"]?([^'`\"\n]+)['`\"]?")


def located_link_error(gen: GeneratedSet, err: BuildError) -> Optional[QueryError]:
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
