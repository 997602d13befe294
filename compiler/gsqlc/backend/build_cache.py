"""Where a query set's build lives in the cache, and whether it finished.

A build is the folder cache_root()/KEY (KEY: a hash of its generated code,
runtime, templates and flags; backend/build.py) holding src/ and build/,
the library build/libgsqlc_queryset.so and the runner build/gsqlc-run.
Its `done` marker, written last, holds the digests of what it built, so
that a build cut short, or a product since damaged (truncated, overwritten,
removed), is built again rather than trusted.  (The shared folder of
backend/native_build.py is marked the same way.)

Apart from build.py so that a run finding its build (gsqlc.input_cache)
loads no more than this.
"""
from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path
from typing import Optional, TextIO

from ..resources import cache_root

LIB_NAME = "libgsqlc_queryset.so"
RUNNER_NAME = "gsqlc-run"


def werror_default(werror: Optional[bool] = None) -> bool:
    """-Werror when the caller asks for it, or when the environment variable
    GSQLC_WERROR is set (to anything but "" or "0"): the test suite sets it so
    that every build treats warnings as errors."""
    return bool(werror) or os.environ.get("GSQLC_WERROR", "") not in ("", "0")


# What a terminal user is told before the one-time build of the runtime
# (build.runtime_archive, then native_build.shared_folder: about 15 s of a
# 2-core machine, and nothing else said meanwhile)
FIRST_BUILD_MESSAGE = "gsqlc: building the runtime once (about 15 s)..."
_first_build_told = False


def tell_first_build(stream: Optional[TextIO] = None) -> bool:
    """Say FIRST_BUILD_MESSAGE on `stream` (stderr) when it is a terminal,
    once a process however many parts of the runtime are built; whether it
    was said now.  A pipe, a file or a notebook's stream is told nothing:
    the line is for a person waiting at a terminal, not for a log."""
    global _first_build_told
    out = sys.stderr if stream is None else stream
    if _first_build_told:
        return False
    try:
        tty = out.isatty()
    except (AttributeError, ValueError):   # a stream without one, or closed
        tty = False
    if not tty:
        return False
    _first_build_told = True
    try:
        print(FIRST_BUILD_MESSAGE, file=out, flush=True)
    except OSError:
        pass
    return True


# A product larger than this (the precompiled header, 40 MB) is known by
# its size and modification time: hashing it would cost a tenth of a second
# of every build that uses it.
_HASHED_UP_TO = 8 << 20


def _fingerprint(p: Path) -> str:
    st = p.stat()
    if st.st_size > _HASHED_UP_TO:
        return f"{st.st_size}:{st.st_mtime_ns}"
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _marker(products: tuple[Path, ...]) -> str:
    return "ok " + " ".join(_fingerprint(p) for p in products) + "\n"


def mark_done(root: Path, *products: Path) -> None:
    """Record that the build under `root` finished, with its products' digests."""
    (root / "done").write_text(_marker(products))


def verified(root: Path, *products: Path) -> bool:
    """Whether the build under `root` finished with exactly these products,
    each as it was built."""
    try:
        return (root / "done").read_text() == _marker(products)
    except OSError:
        return False


def cached_library(key: str) -> Optional[Path]:
    """The library of the finished build `key` (its folder's name), or None
    when there is none or it is damaged."""
    root = cache_root() / key
    lib = root / "build" / LIB_NAME
    return lib if verified(root, lib) else None
