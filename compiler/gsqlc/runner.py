"""Driving a built query-set library through its C ABI, with cffi (ABI mode:
no compiler is needed to load a library)."""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import cffi

ABI_CDEF = """
typedef struct gsq_run gsq_run;
gsq_run *gsqlc_create(void);
int gsqlc_set_option(gsq_run *r, const char *key, const char *value);
int gsqlc_set_param(gsq_run *r, const char *name, const char *value);
int gsqlc_bind_source(gsq_run *r, const char *iface, const char *uri);
int gsqlc_add_sink(gsq_run *r, const char *query, const char *format, const char *path);
int gsqlc_run(gsq_run *r);
const char *gsqlc_stats_json(gsq_run *r);
const char *gsqlc_report(gsq_run *r);
const char *gsqlc_error(gsq_run *r);
void gsqlc_destroy(gsq_run *r);
"""

_ffi = cffi.FFI()
_ffi.cdef(ABI_CDEF)
_libs: dict[str, object] = {}


class RunError(Exception):
    """A run-time failure reported by the library (exit status 1)."""


class SetupError(Exception):
    """A bad option, binding or sink (a usage error, exit status 2)."""


def load_library(path: Path):
    key = str(Path(path).resolve())
    lib = _libs.get(key)
    if lib is None:
        try:
            lib = _ffi.dlopen(key)
        except OSError as e:
            raise RunError(f"cannot load the query-set library {key}: {e}") from None
        _libs[key] = lib
    return lib


@dataclass
class RunResult:
    status: int
    error: str
    report: str
    stats: dict = field(default_factory=dict)


def _s(x) -> bytes:
    return x.encode("utf-8", "surrogateescape") if isinstance(x, str) else x


def run_library(library: Path, sources: list[tuple[str, str]],
                sinks: list[tuple[str, str, Optional[str]]],
                options: Optional[dict[str, str]] = None,
                params: Optional[dict[str, str]] = None) -> RunResult:
    """Run to end of input.  sources: (iface, uri); sinks: (query, format,
    path or None for stdout)."""
    lib = load_library(library)
    r = lib.gsqlc_create()
    if r == _ffi.NULL:
        raise RunError("out of memory")
    try:
        def check(rc: int, what: str) -> None:
            if rc != 0:
                msg = _ffi.string(lib.gsqlc_error(r)).decode("utf-8", "replace")
                raise SetupError(f"{what}: {msg}")
        for k, v in (options or {}).items():
            check(lib.gsqlc_set_option(r, _s(k), _s(v)), f"option {k}={v}")
        for k, v in (params or {}).items():
            check(lib.gsqlc_set_param(r, _s(k), _s(v)), f"parameter {k}")
        for iface, uri in sources:
            check(lib.gsqlc_bind_source(r, _s(iface), _s(uri)), f"source {iface or 'default'}={uri}")
        for query, fmt, path in sinks:
            check(lib.gsqlc_add_sink(r, _s(query), _s(fmt), _s(path) if path else _ffi.NULL),
                  f"output {query}")
        sys.stdout.flush()
        sys.stderr.flush()
        status = lib.gsqlc_run(r)
        err = _ffi.string(lib.gsqlc_error(r)).decode("utf-8", "replace") if status else ""
        report = _ffi.string(lib.gsqlc_report(r)).decode("utf-8", "replace")
        stats_text = _ffi.string(lib.gsqlc_stats_json(r)).decode("utf-8", "replace")
        try:
            stats = json.loads(stats_text) if stats_text else {}
        except json.JSONDecodeError:
            stats = {"raw": stats_text}
        return RunResult(status, err, report, stats)
    finally:
        lib.gsqlc_destroy(r)
