"""Tigon's regression cases, run through the gsqlc command line exactly as
../shared/conformance/README.md prescribes."""
from __future__ import annotations

import csv
import re

import pytest

from conftest import shared_dir

TIGON = shared_dir() / "conformance" / "tigon"


def _cases():
    manifest = TIGON / "cases.tsv"
    if not manifest.exists():
        return []
    with open(manifest, newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


CASES = _cases()
NON_JOIN = [c for c in CASES if not c["case"].startswith("TestJoins/")]


def _id(c):
    return f"{c['case']}:{c['output']}"


# Without the conformance data the parametrized tests still have one case,
# which conftest skips (fails under CI=true) for the missing data.
NO_DATA = pytest.param(None, id="no-conformance-data")


def params(cases):
    return cases or [NO_DATA]


@pytest.mark.needs_shared
def test_manifest_present():
    assert len(CASES) >= 20, f"conformance manifest under {TIGON} lists {len(CASES)} cases"
    for c in CASES:
        d = TIGON / c["case"]
        for q in c["queries"].split(","):
            assert (d / q).is_file(), (c, q)
        assert (d / c["input"]).is_file() and (TIGON / c["schema"]).is_file(), c
        assert c["expected"] == "-" or (d / c["expected"]).is_file(), c


def _command(c, *extra):
    d = TIGON / c["case"]
    args = ["run", *[d / q for q in c["queries"].split(",")],
            "--schema", TIGON / c["schema"],
            "--source", f"csv={d / c['input']}", "--csv-separator", "|",
            "--output", c["output"], *extra]
    if c["clock"] != "-":
        args += ["--clock", f"fixed:{c['clock']}"]
    return args


# Text forms of GSQL.md, for the cases without a recorded expectation.
_FORMS = {
    "uint": r"\d+", "ullong": r"\d+", "ushort": r"\d+", "int": r"-?\d+", "llong": r"-?\d+",
    "float": r"-?\d+\.\d{6}", "bool": r"TRUE|FALSE",
    "IP": r"\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}",
    "IPV6": r"[0-9a-f]{4}(:[0-9a-f]{4}){7}", "string": r"[^|]*",
}


@pytest.mark.needs_shared
@pytest.mark.parametrize("case", params(CASES), ids=_id)
def test_case(case, gsqlc):
    p = gsqlc(*_command(case))
    assert p.returncode == 0, p.err
    got = sorted(p.out.splitlines())
    d = TIGON / case["case"]
    if case["expected"] != "-":
        want = sorted(l for l in (d / case["expected"]).read_text().splitlines() if l.strip())
        assert got == want, p.err
        return
    rows = [l for l in (d / case["input"]).read_text().splitlines() if l.strip()]
    assert len(got) == len(rows), p.err
    # Each column prints in its type's text form.
    ex = gsqlc("explain", *[d / q for q in case["queries"].split(",")],
               "--schema", TIGON / case["schema"])
    types = re.findall(r"^    \w+: (\w+), ", ex.out, re.M)
    assert types, ex.out
    for line in got:
        fields = line.split("|")
        assert len(fields) == len(types), line
        for f, t in zip(fields, types):
            assert re.fullmatch(_FORMS[t], f), (t, f, line)


def _columnar(stats_err: str) -> list:
    """The sources' `columnar` flags from --stats JSON on stderr."""
    import json
    start = stats_err.index("{")
    return [s["columnar"] for s in json.JSONDecoder().raw_decode(stats_err[start:])[0]["sources"]]


@pytest.mark.needs_shared
@pytest.mark.parametrize("case", params(CASES), ids=_id)
def test_case_columnar_equals_row_path(case, gsqlc):
    """Every case's LFTAs read the CSV file a chunk of columns at a time by
    default, and give exactly what they give a record at a time."""
    cols = gsqlc(*_command(case, "--stats"))
    rows = gsqlc(*_command(case, "--stats", "--columnar", "off"))
    assert cols.returncode == 0 and rows.returncode == 0, cols.err + rows.err
    assert _columnar(cols.err) == [True] and _columnar(rows.err) == [False]
    assert cols.out == rows.out
