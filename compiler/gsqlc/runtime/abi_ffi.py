"""The cffi FFI of the query-set library's C ABI, without parsing its C
declarations at every start-up.

cffi parses a cdef with pycparser: importing pycparser and parsing took a
fifth of a cached run's start-up.  cffi's out-of-line ABI mode writes the
parsed declarations out as a small Python module that rebuilds the same FFI
from a serialized form with no parser; that module is kept in the cache
folder, named by a hash of the declarations and of the cffi backend's
version, and carries a digest of its own text, so that a damaged one is
written again rather than trusted.  Anything going wrong (no cache folder,
an unwritable one) falls back to parsing the declarations here.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import tempfile
from pathlib import Path
from typing import Any, Callable, Optional, Union

from ..resources import cache_root, read_checked, write_checked


def abi_ffi(cdef: Union[str, Callable[[], str]], key: Optional[bytes] = None) -> Any:
    """A cffi FFI holding the declarations `cdef` (ABI mode: dlopen).  With
    `key` (what the declarations are made from) cdef may be a function
    making them, called only when the module is not in the cache."""
    try:
        import _cffi_backend
        version = _cffi_backend.__version__
    except ImportError:
        version = "none"
    made = key if key is not None else cdef.encode() if isinstance(cdef, str) else None
    if made is None:
        raise TypeError("abi_ffi: a function making the declarations needs a key")

    def text() -> str:
        return cdef if isinstance(cdef, str) else cdef()
    name = "gsqlc_abi_" + hashlib.sha256(version.encode() + b"\0" + made).hexdigest()[:16]
    path = cache_root() / "ffi" / f"{name}.py"
    ffi = _load(name, path)
    if ffi is None:
        try:
            _write(name, path, text())
        except Exception:  # noqa: BLE001 - any failure costs the parse only
            return _parsed(text())
        ffi = _load(name, path)
    return ffi if ffi is not None else _parsed(text())


def _parsed(cdef: str) -> Any:
    import cffi
    ffi = cffi.FFI()
    ffi.cdef(cdef)
    return ffi


def _load(name: str, path: Path) -> Optional[Any]:
    """The FFI of the module at `path`, or None when it is missing, damaged
    (its digest does not match its text) or does not load."""
    if read_checked(path) is None:
        return None
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            return None
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod.ffi
    except Exception:  # noqa: BLE001 - a module that does not load is rewritten
        return None


def _write(name: str, path: Path, cdef: str) -> None:
    """Generate the out-of-line module and put it in place atomically (a
    concurrent process reads either no module or a whole one)."""
    from cffi.recompiler import make_py_source
    ffi = _parsed(cdef)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{name}.", suffix=".py")
    os.close(fd)
    try:
        make_py_source(ffi, name, tmp)   # quietly (emit_python_code prints)
        write_checked(path, Path(tmp).read_bytes(), prefix=name)
    finally:
        Path(tmp).unlink(missing_ok=True)
