"""The C ABI has one definition: cffi's declarations are read from the
runtime's headers (gsqlc.runtime.c_interface), and every function the
shared library exports is declared, with the signature the header gives."""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from gsqlc.resources import resource_dir
from gsqlc.runtime.abi_ffi import abi_ffi
from gsqlc.runtime.c_interface import abi_cdef, cdef_from

INCLUDE = resource_dir("runtime_c") / "include"


def _exported(cdef: str) -> set[str]:
    return set(re.findall(r"\b(gsqlc_\w+)\s*\(", cdef))


def test_every_exported_declaration_reaches_cffi():
    header = (INCLUDE / "gsq_runtime.h").read_text()
    declared = set(re.findall(r"GSQ_EXPORT[^;(]*?\b(gsqlc_\w+)\s*\(", header, re.S))
    assert len(declared) >= 20, declared
    assert _exported(abi_cdef()) == declared
    ffi = abi_ffi(abi_cdef())      # the declarations parse as C
    assert ffi.sizeof("gsqlc_progress_snapshot") == 8 + 8 * 8 + 8
    assert ffi.sizeof("struct ArrowArrayStream") == 40


def test_a_changed_header_changes_the_declarations(tmp_path):
    # the drift the old hand-kept copy allowed: a parameter added in C
    for name in ("gsq_runtime.h", "arrow_abi.h"):
        shutil.copy(INCLUDE / name, tmp_path / name)
    h = tmp_path / "gsq_runtime.h"
    text = h.read_text()
    changed = text.replace("GSQ_EXPORT int gsqlc_cancel(gsq_run *r);",
                           "GSQ_EXPORT int gsqlc_cancel(gsq_run *r, int how);")
    assert changed != text
    h.write_text(changed)
    assert "int gsqlc_cancel(gsq_run *r, int how);" in cdef_from(tmp_path)
    assert "int gsqlc_cancel(gsq_run *r);" in abi_cdef()


@pytest.mark.skipif(shutil.which("nm") is None, reason="needs nm (binutils)")
def test_the_built_library_exports_what_the_header_declares(tmp_path):
    from gsqlc import compile as gsqlc_compile
    q = tmp_path / "q.gsql"
    q.write_text("select time, srcIP from IPV4\n")
    lib = gsqlc_compile([q]).library
    out = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True,
                         text=True, check=True).stdout
    exported = set(re.findall(r"\bT (gsqlc_\w+)$", out, re.M))
    assert _exported(abi_cdef()) <= exported, _exported(abi_cdef()) - exported
