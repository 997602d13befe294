"""Builds and runs the C++ tests of the HFTA operator templates.

The program (test_hfta_templates.cpp) links against a fake runtime of its own,
so only the headers in hfta_templates/ and runtime_c/include/ are needed.
"""

import os
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import assert_not_sanitized, assert_sanitized

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
SOURCE = HERE / "test_hfta_templates.cpp"
INCLUDES = [ROOT / "hfta_templates", ROOT / "runtime_c" / "include"]

WARNINGS = ["-std=c++17", "-Wall", "-Wextra", "-Werror"]
# -O0 under the sanitizers: they find the same faults, and the build is half
# of -O1's (the largest part took minutes at -O1)
BUILDS = {
    "sanitized": ["-O0", "-g1", "-fsanitize=address,undefined", "-fno-sanitize-recover=all"],
    "optimized": ["-O2"],
}
# the program builds in parts (TEST_PART=1..TEST_PARTS), side by side
PARTS = int(re.search(r"^#define TEST_PARTS (\d+)$", SOURCE.read_text(), re.MULTILINE).group(1))

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not installed")


def _build_and_run(build: str, part: int, exe: Path) -> tuple[int, int]:
    cmd = ["g++", *WARNINGS, *BUILDS[build], f"-DTEST_PART={part}", *(f"-I{p}" for p in INCLUDES),
           str(SOURCE), "-o", str(exe)]
    built = subprocess.run(cmd, capture_output=True, text=True)
    assert built.returncode == 0, f"build failed:\n{' '.join(cmd)}\n{built.stderr}"
    # a clean run of the sanitized build proves something only if it is instrumented
    (assert_sanitized if build == "sanitized" else assert_not_sanitized)(exe)

    ran = subprocess.run([str(exe)], capture_output=True, text=True, timeout=300)
    summary = re.search(r"^(\d+) passed, (\d+) failed$", ran.stdout, re.MULTILINE)
    assert summary, f"part {part}: no summary line:\nstdout:\n{ran.stdout}\nstderr:\n{ran.stderr}"
    passed, failed = int(summary.group(1)), int(summary.group(2))
    assert ran.returncode == 0 and failed == 0, f"part {part}: {failed} check(s) failed:\n{ran.stderr}"
    return passed, failed


@pytest.mark.parametrize("build", [pytest.param(b, marks=pytest.mark.slow) if b == "sanitized"
                                   else b for b in sorted(BUILDS)])
def test_hfta_templates(build, tmp_path):
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        runs = [pool.submit(_build_and_run, build, k, tmp_path / f"test_hfta_templates_{build}_{k}")
                for k in range(1, PARTS + 1)]
        passed = [r.result()[0] for r in runs]
    # every part runs checks of its own
    assert all(n > 0 for n in passed), passed
