"""Builds and runs the C unit tests of the run options' table and dispatch
(runtime_c/run/options.c, option_table.h; tests/runtime/test_options.c),
linked with the runtime objects of test_runtime's sanitized build (ASan and
UBSan, warnings as errors)."""
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from test_runtime import CFLAGS, OWN, build, sh  # noqa: F401 (build: the fixture)

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "test_options.c"

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not installed")


def test_options(build, tmp_path):  # noqa: F811
    objs = [build["dir"] / (src.name + ".o") for src in sorted(p for d in OWN for p in d.glob("*.c"))]
    exe = tmp_path / "test_options"
    sh(["gcc", *CFLAGS, "-o", str(exe), str(SOURCE), *map(str, objs), "-lpcap", "-lm"])
    ran = subprocess.run([str(exe)], capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0 and re.search(r"^[1-9]\d* passed, 0 failed$", ran.stdout, re.M), \
        ran.stdout + ran.stderr
