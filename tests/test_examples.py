"""The bundled examples run as the README shows, and their answers equal an
independent reference computed from the same capture."""
from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import REPO

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
    # The stand-alone runner gives the same answer as `gsqlc run`.
    r = subprocess.run([str(runner), "--source", f"default=pcap:{EX / 'trace.pcap'}",
                        "--output", "flows"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert r.returncode == 0, r.stderr
    assert sorted(r.stdout.splitlines()) == _reference("flows")


def test_csv_example(gsqlc):
    p = gsqlc("run", EX / "csv" / "per_minute.gsql", "--schema", EX / "csv" / "schema.txt",
              "--source", f"csv:{EX / 'csv' / 'sales.csv'}", "--format", "csv")
    assert p.returncode == 0, p.err
    lines = p.out.splitlines()
    assert lines[0].count(",") >= 2 and len(lines) > 2
