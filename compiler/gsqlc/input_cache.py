"""The input-keyed cache: from what a compilation reads to the library it
built and what a run needs of its plan, so that running a query set built
before skips parsing, planning and code generation (and their imports).

The build cache (backend.build) is keyed by the generated code: finding a
build there needs the code, hence the whole compiler.  An entry here is
keyed by the inputs instead:

    the query files (paths as given, and contents), the schema files (the
    packet schema by default), the compile options (warnings-as-errors as
    GSQLC_WERROR decides), GSQLC_LIBRARY_PATH, and gsqlc itself: its
    modules, grammars, code templates, runtime and operator templates

and holds the build's key and the plan's summary (runtime.plan_summary).
A query set reading query libraries (`FROM LIB/q`) depends on more than
its files: the entry lists the library folders looked in and the digest of
every query file there, and is used only while they are the same.

Only a compilation that succeeded is kept, so an error in a query is
always found by the compiler itself (located, file:line:col).  An entry
carries a digest of its own text, and the library one of its build
(backend.build_cache): a damaged entry or library is a miss, and the
compilation that follows writes them again.  Entries are written whole
(a temporary file renamed into place), so concurrent runs read either
none or a whole one.

    key = input_key(files, options)
    hit = lookup(key)                # None: compile, then:
    deps = library_deps(qs, options)             # once planned
    store(files, options, key, deps, qs.summary, library)   # once built
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Sequence

from .record import as_dict, record
from .resources import cache_root, package_dir, packet_schema_path, read_checked, resource_dir, write_checked
from .runtime.plan_summary import PlanSummary

if TYPE_CHECKING:
    from .pipeline import CompileOptions, QuerySet

FORMAT = 1                      # of an entry; a new one misses every older entry
ENTRIES = "inputs"              # the entries' folder in the cache
_BUILD_KEY = re.compile(r"^[0-9a-f]{24}$")
# gsqlc's own files that can change what it compiles (not caches or binaries)
_SKIPPED_DIRS = {"__pycache__"}
_SKIPPED_SUFFIXES = (".pyc", ".so", ".gch")


@record(frozen=True)
class CachedBuild:
    """A hit: the built library and the summary of its plan."""
    library: Path
    summary: PlanSummary


def _sources_digest() -> str:
    """A digest of gsqlc's own files: its package (modules, grammars, the
    packet schema) and the resources it compiles with, each by name, size
    and modification time (as Python's bytecode cache checks its sources):
    reading them all was a tenth of a cached run's start-up.  A file
    rewritten changes its time; a key that changes without a change of
    content costs one compile that finds its build in the build cache."""
    h = hashlib.sha256()
    roots = [package_dir()] + [resource_dir(r) for r in ("templates", "runtime_c", "hfta_templates")]
    seen: set[str] = set()
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d not in _SKIPPED_DIRS)
            if dirpath in seen:   # an installed package holds its resources
                continue
            seen.add(dirpath)
            rel = os.path.relpath(dirpath, root)
            for name in sorted(filenames):
                if name.endswith(_SKIPPED_SUFFIXES):
                    continue
                st = os.stat(os.path.join(dirpath, name))
                h.update(f"{rel}/{name}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    return h.hexdigest()


def input_key(files: Sequence[str], options: "CompileOptions") -> Optional[str]:
    """The key of compiling `files` with `options`; None when a file cannot
    be read (the compiler then says why)."""
    from .backend.build_cache import werror_default
    h = hashlib.sha256(f"gsqlc input cache {FORMAT}\0{_sources_digest()}\0".encode())
    opts = as_dict(options)
    opts["werror"] = werror_default(options.werror)
    opts["GSQLC_LIBRARY_PATH"] = os.environ.get("GSQLC_LIBRARY_PATH", "")
    h.update(json.dumps(opts, sort_keys=True).encode() + b"\0")
    schema = list(options.schema) or [str(packet_schema_path())]
    try:
        texts = dict(options.texts)    # in opts above
        for kind, paths in (("query", files), ("schema", schema)):
            for p in paths:
                if p in texts:
                    continue
                with open(p, "rb") as f:
                    h.update(f"{kind}\0{p}\0".encode() + hashlib.sha256(f.read()).digest())
    except OSError:
        return None
    return h.hexdigest()[:32]


def _entry_path(key: str) -> Path:
    return cache_root() / ENTRIES / f"{key}.json"


# ------------------------------------------------------------ library folders


def _listing(d: Path) -> Optional[list[str]]:
    """The query files of a library folder (None: no such folder)."""
    if not d.is_dir():
        return None
    return sorted(p.name for p in d.glob("*.gsql") if p.is_file())


def _file_digest(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def library_deps(qs: "QuerySet", options: "CompileOptions") -> Optional[dict[str, Any]]:
    """The library folders the compilation of `qs` looked in, and their
    files (taken right after planning, while they are what was read); None
    when one cannot be read (nothing is kept then)."""
    from .semantics.resolve import libraries_read, library_roots
    libs = libraries_read(qs.queries)
    dirs = [root / lib for root in library_roots(qs.files, options.library_paths) for lib in libs]
    try:
        listed = [(d, _listing(d)) for d in dirs]
        return {"dirs": [[str(d), names] for d, names in listed],
                "files": [[str(d / n), _file_digest(d / n)]
                          for d, names in listed for n in names or ()]}
    except OSError:
        return None


def _deps_unchanged(deps: Any) -> bool:
    try:
        return (all(_listing(Path(d)) == names for d, names in deps["dirs"])
                and all(_file_digest(Path(p)) == digest for p, digest in deps["files"]))
    except OSError:
        return False


# ------------------------------------------------------------ lookup, store


def lookup(key: Optional[str]) -> Optional[CachedBuild]:
    """The build of the inputs of `key` (input_key), or None (a miss: no
    entry, a damaged one, a changed library folder, a missing or damaged
    library)."""
    from .backend.build_cache import cached_library
    if key is None:
        return None
    body = read_checked(_entry_path(key))
    if body is None:
        return None
    try:
        entry = json.loads(body)
        if entry["format"] != FORMAT or not _BUILD_KEY.match(entry["build"]):
            return None
        summary = PlanSummary.from_json(entry["summary"])
        if not _deps_unchanged(entry["deps"]):
            return None
    except (ValueError, TypeError, KeyError):
        return None
    library = cached_library(entry["build"])
    return CachedBuild(library, summary) if library is not None else None


def store(files: Sequence[str], options: "CompileOptions", key: Optional[str],
          deps: Optional[dict[str, Any]], summary: PlanSummary, library: Path) -> None:
    """Keep `library`, built from `files`, under the key computed before
    compiling them (input_key) with the library folders as `deps` found
    them: not when a file changed since (the entry would name other
    contents), nor when the cache cannot be written (best effort)."""
    build_key = library.parent.parent.name
    if not _BUILD_KEY.match(build_key):   # built outside the cache (an output folder)
        return
    if (key is None or deps is None or input_key(files, options) != key
            or not _deps_unchanged(deps)):
        return
    body = json.dumps({"format": FORMAT, "build": build_key, "summary": summary.to_json(),
                       "deps": deps})
    try:
        write_checked(_entry_path(key), body.encode(), prefix=key)
    except OSError:
        pass
