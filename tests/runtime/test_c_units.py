"""Builds and runs the C unit tests linked with the runtime objects of
test_runtime's sanitized build (ASan and UBSan, warnings as errors), each a
program printing one line per failed CHECK and "N passed, M failed"
(unit_check.h):

    test_late_rows.c      late drops counted in rows (core/node.c
                          gsq_count_late, run/report.c)
    test_options.c        the run options' table and dispatch (run/options.c,
                          run/option_table.h)
    test_arrow_replay.c   the Arrow source's replay in time: where a read is
                          cut at a time limit (sources/arrow_source.c, which
                          the test includes for its static functions)
    test_pkt_decode_fast.c  the inline Ethernet/IPv4 decoder against the
                          general one, byte for byte (sources/gsq_pkt_decode.h)
    test_time_text.c      instants written as text: ISO-8601 and epoch numbers,
                          as CSV fields' time_format reads them (core/time_text.c)
"""
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from test_runtime import CFLAGS, OWN, build, sh  # noqa: F401 (build: the fixture)

HERE = Path(__file__).resolve().parent
# test program -> the runtime sources it includes itself (not linked)
UNITS = {"test_late_rows.c": (), "test_options.c": (), "test_arrow_replay.c": ("arrow_source.c",),
         "test_pkt_decode_fast.c": (), "test_time_text.c": ()}

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not installed")


@pytest.mark.parametrize("source", sorted(UNITS))
def test_c_unit(build, tmp_path, source):  # noqa: F811
    objs = [build["dir"] / (src.name + ".o")
            for src in sorted(p for d in OWN for p in d.glob("*.c")) if src.name not in UNITS[source]]
    exe = tmp_path / Path(source).stem
    sh(["gcc", *CFLAGS, "-o", str(exe), str(HERE / source), *map(str, objs), "-lpcap", "-lm"])
    ran = subprocess.run([str(exe)], capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0 and re.search(r"^[1-9]\d* passed, 0 failed$", ran.stdout, re.M), \
        ran.stdout + ran.stderr
