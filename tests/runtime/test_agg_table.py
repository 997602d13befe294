"""Builds and runs the C unit tests of the LFTA aggregation table
(runtime_c/lfta/gsq_agg_table.h, tests/runtime/test_agg_table.c): once
optimised and once with ASan and UBSan, warnings as errors both times."""
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from test_runtime import SAN, sh

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
SOURCE = HERE / "test_agg_table.c"
WARNINGS = ["-std=c11", "-Wall", "-Wextra", "-Werror", f"-I{ROOT / 'runtime_c' / 'lfta'}",
            f"-I{ROOT / 'runtime_c' / 'include'}"]
# the table's memory when it grows (gsq_table_alloc)
TABLE_MEM = ROOT / "runtime_c" / "core" / "table_mem.c"
BUILDS = {"optimized": ["-O2"], "sanitized": ["-O1", "-g", *SAN]}

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not installed")


@pytest.mark.parametrize("build", sorted(BUILDS))
def test_agg_table(build, tmp_path):
    exe = tmp_path / f"test_agg_table_{build}"
    sh(["gcc", *WARNINGS, *BUILDS[build], str(SOURCE), str(TABLE_MEM), "-o", str(exe)])
    ran = subprocess.run([str(exe)], capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0 and re.search(r"^[1-9]\d* passed, 0 failed$", ran.stdout, re.M), \
        ran.stdout + ran.stderr
