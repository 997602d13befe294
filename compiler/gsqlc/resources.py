"""Locating the resources gsqlc compiles with: code templates, the C runtime
sources, the C++ operator templates and the shipped packet schema.

An installed package carries them beside its modules (CMakeLists.txt installs
them there); a source checkout has them at the repository root.
"""
from __future__ import annotations

import hashlib
import os
from functools import lru_cache
from pathlib import Path
from typing import Optional

_PKG = Path(__file__).resolve().parent


@lru_cache(maxsize=None)
def resource_dir(name: str) -> Path:
    for cand in (_PKG / name, _PKG.parents[1] / name):
        if cand.is_dir():
            return cand
    raise FileNotFoundError(
        f"gsqlc resource directory '{name}' is missing: reinstall gsqlc (pip install .)")


def package_dir() -> Path:
    """The gsqlc package's own folder."""
    return _PKG


def data_path(name: str) -> Path:
    """A file shipped in the package's data/ folder."""
    return _PKG / "data" / name


def packet_schema_path() -> Path:
    return data_path("packet_schema.txt")


def cache_root() -> Path:
    env = os.environ.get("GSQLC_CACHE_DIR")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "gsqlc"


# the first line of a file write_checked wrote; the body's SHA-256 follows
_DIGEST_PREFIX = b"# gsqlc digest "


def write_checked(path: Path, body: bytes, prefix: str = "") -> None:
    """Put a cache file in place whole or not at all: `body` after a line
    holding its digest, written to a temporary file in path's folder and
    renamed (a concurrent reader finds no file or a whole one).  prefix:
    the temporary file's name starts with it.  Raises OSError."""
    import tempfile
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{prefix or path.name}.", suffix=".tmp")
    try:
        with open(fd, "wb") as f:
            f.write(_DIGEST_PREFIX + hashlib.sha256(body).hexdigest().encode() + b"\n" + body)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_checked(path: Path) -> Optional[bytes]:
    """The body of a file write_checked wrote, or None when it is missing,
    unreadable or damaged (its digest does not match)."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    first, _, body = data.partition(b"\n")
    if first != _DIGEST_PREFIX + hashlib.sha256(body).hexdigest().encode():
        return None
    return body
