"""The bundled examples run as the README and the tutorial show, and their
answers equal an independent reference computed from the same capture."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from conftest import REPO, assert_not_sanitized, require
from gsqlc.backend.build import cmake_build
from test_build_flags import compile_commands, optimization_levels

EX = REPO / "examples"


def _reference(query: str) -> list[str]:
    p = subprocess.run([sys.executable, str(EX / "trace_reference.py"), query, str(EX / "trace.pcap")],
                       stdout=subprocess.PIPE, text=True, check=True)
    return sorted(l for l in p.stdout.splitlines() if l and not l.startswith("#"))


@pytest.mark.parametrize("query", ["flows", "src_counts", "hostnames", "host_counts"])
def test_packet_examples_match_the_reference(gsqlc, query):
    p = gsqlc("run", EX / f"{query}.gsql", "--schema", EX / "packet_schema.txt",
              "--source", f"eth0=pcap:{EX / 'trace.pcap'}")
    assert p.returncode == 0, p.err
    got = sorted(p.out.splitlines())
    assert got and got == _reference(query)


def test_compile_and_build_the_flows_example(gsqlc, tmp_path):
    out = tmp_path / "flows"
    p = gsqlc("compile", EX / "flows.gsql", "--schema", EX / "packet_schema.txt", "-o", out, "--build")
    assert p.returncode == 0, p.err
    lib, runner = out / "build" / "libgsqlc_queryset.so", out / "build" / "gsqlc-run"
    assert lib.exists() and runner.exists()
    assert_not_sanitized(lib)  # the instrumentation check of test_sanitizers.py discriminates
    # The folder is a CMake project of its own: rebuilt with CMake (the
    # runtime compiled in it too), it gives the same runner.
    cmake_dir = out / "cmake-build"
    cmake_build(out, cmake_dir)
    # its C++ units (the HFTAs) at -O1, its C units at the Release -O3, as
    # gsqlc's own build does (test_build_flags.py)
    assert optimization_levels(compile_commands(cmake_dir)) == {"c": "3", "cxx": "1"}
    # The stand-alone runners give the same answer as `gsqlc run`.
    for exe in (runner, cmake_dir / "gsqlc-run"):
        r = subprocess.run([str(exe), "--source", f"default=pcap:{EX / 'trace.pcap'}",
                            "--output", "flows"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert r.returncode == 0, r.stderr
        assert sorted(r.stdout.splitlines()) == _reference("flows")


def test_csv_example(gsqlc):
    p = gsqlc("run", EX / "csv" / "per_minute.gsql", "--schema", EX / "csv" / "schema.txt",
              "--source", f"csv:{EX / 'csv' / 'sales.csv'}", "--format", "csv")
    assert p.returncode == 0, p.err
    lines = p.out.splitlines()
    assert lines[0] == "minute,store,sales,units,revenue,max_price"
    got = [line.split(",") for line in lines[1:]]
    # minutes close in order of time
    minutes = [int(r[0]) for r in got]
    assert minutes == sorted(minutes)
    # floats print with six decimals
    assert all(re.fullmatch(r"-?\d+\.\d{6}", r[i]) for r in got for i in (4, 5)), got
    # the answer of DuckDB over the same file
    duckdb = require("duckdb")
    want = duckdb.sql(
        "SELECT ts // 60 * 60, store, count(*), sum(qty), sum(qty * price), max(price) "
        f"FROM read_csv('{EX / 'csv' / 'sales.csv'}', header = false, "
        "columns = {'ts': 'UBIGINT', 'store': 'VARCHAR', 'item': 'VARCHAR', 'qty': 'UBIGINT', "
        "'price': 'DOUBLE', 'client': 'VARCHAR'}) GROUP BY ALL ORDER BY 1, 2").fetchall()
    assert len(want) >= 10
    assert sorted((int(m), s, int(n), int(u), float(r), float(x)) for m, s, n, u, r, x in got) \
        == [(m, s, n, u, pytest.approx(r, abs=5e-7), pytest.approx(x, abs=5e-7))
            for m, s, n, u, r, x in want]
