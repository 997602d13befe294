"""Builds and runs the C unit tests of the LFTA's time-unit conversions and
heartbeat state (runtime_c/lfta/gsq_time_unit.h and gsq_lfta_heartbeat.h,
tests/runtime/test_lfta_heartbeat.c): once optimised and once with ASan and
UBSan, warnings as errors both times."""
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "tests" / "runtime" / "test_lfta_heartbeat.c"
WARNINGS = ["-std=c11", "-Wall", "-Wextra", "-Werror", f"-I{ROOT / 'runtime_c' / 'lfta'}",
            f"-I{SOURCE.parent}"]
SAN = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"]
BUILDS = {"optimized": ["-O2"], "sanitized": ["-O1", "-g", *SAN]}

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not installed")


@pytest.mark.parametrize("build", sorted(BUILDS))
def test_lfta_heartbeat_headers(build, tmp_path):
    exe = tmp_path / f"test_lfta_heartbeat_{build}"
    p = subprocess.run(["gcc", *WARNINGS, *BUILDS[build], str(SOURCE), "-o", str(exe)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    ran = subprocess.run([str(exe)], capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0 and re.search(r"^[1-9]\d* passed, 0 failed$", ran.stdout, re.M), \
        ran.stdout + ran.stderr
