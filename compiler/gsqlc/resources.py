"""Locating the resources gsqlc compiles with: code templates, the C runtime
sources, the C++ operator templates and the shipped packet schema.

An installed package carries them beside its modules (CMakeLists.txt installs
them there); a source checkout has them at the repository root.
"""
from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

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
