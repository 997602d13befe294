"""gsqlc's native extension (gsqlc._native: the C runtime's packet reader
and IP formatting, built from compiler/native/native_module.cpp), found
beside this package or, in a source checkout on PYTHONPATH, in an
installed gsqlc or the scikit-build tree.  A module of its own so that
packets (read_pcap) and arrow_types (IP text) both use it without
importing each other."""
from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

# The read_pcap interface this module speaks (native_module.cpp kReadPcapAbi).
_READ_PCAP_ABI = 3


def _native_candidates() -> list[Path]:
    """Built copies of the extension when this package has none beside it
    (a source checkout on PYTHONPATH): the installed gsqlc's, and the
    scikit-build tree's (build/<wheel tag>/), newest first."""
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    found: list[Path] = []
    try:
        from importlib.metadata import PackageNotFoundError, distribution
        try:
            dist = distribution("gsqlc")
            for f in dist.files or ():
                if f.name.startswith("_native.") and f.name.endswith(suffixes):
                    found.append(Path(str(dist.locate_file(f))))
        except PackageNotFoundError:
            pass
    except ImportError:  # pragma: no cover
        pass
    build = Path(__file__).resolve().parents[3] / "build"
    if build.is_dir():
        found += [p for p in build.glob("*/_native.*") if p.name.endswith(suffixes)]
    found = [p for p in found if p.is_file()]
    return sorted(set(found), key=lambda p: p.stat().st_mtime, reverse=True)


@lru_cache(maxsize=None)
def native() -> Any:
    """The gsqlc._native extension (raises ImportError when it is missing or
    older than this module)."""
    try:
        from .. import _native as mod
    except ImportError:
        mod = None
        for cand in _native_candidates():
            spec = importlib.util.spec_from_file_location("gsqlc._native", cand)
            if spec is None or spec.loader is None:
                continue
            m = importlib.util.module_from_spec(spec)
            try:
                spec.loader.exec_module(m)
            except ImportError:
                continue
            if getattr(m, "READ_PCAP_ABI", None) == _READ_PCAP_ABI:
                sys.modules[spec.name] = m
                mod = m
                break
        if mod is None:
            raise ImportError("gsqlc's native extension (gsqlc._native) is not built: "
                              "install gsqlc (pip install .)") from None
    if getattr(mod, "READ_PCAP_ABI", None) != _READ_PCAP_ABI:
        raise ImportError(f"gsqlc._native ({mod.__file__}) is older than gsqlc's Python "
                          "sources: reinstall gsqlc (pip install .)")
    return mod
