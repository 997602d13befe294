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


# A selection's row as Tigon's CSV accessors read it (Tigon's get_csv_*: C's
# strtol/strtoul/strtod take a number's leading characters, so "135.197.192.237"
# read as uint is 135 and "TRUE" is 0), printed in the output's text forms;
# a field the row lacks reads as its type's zero.
def _as_tigon_reads(value: str, t: str) -> str:
    import ipaddress
    if t in ("uint", "ullong", "ushort", "int", "llong"):
        m = re.match(r"\s*([+-]?\d+)" if t in ("int", "llong") else r"\s*\+?(\d+)", value)
        return str(int(m.group(1))) if m else "0"
    if t == "float":
        m = re.match(r"\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", value)
        return f"{float(m.group(0)) if m else 0.0:.6f}"
    if t == "bool":
        return "TRUE" if value in ("TRUE", "true", "1") else "FALSE"
    if t == "IP":
        return str(ipaddress.IPv4Address(value))
    if t == "IPV6":
        return ipaddress.IPv6Address(value).exploded
    return value


_ZERO = {"uint": "0", "ullong": "0", "ushort": "0", "int": "0", "llong": "0",
         "float": "0.000000", "bool": "FALSE", "string": "", "IP": "0.0.0.0",
         "IPV6": ":".join(["0000"] * 8)}


def _derived_rows(rows: list[str], types: list[str]) -> list[str]:
    """The output of `SELECT <every field> FROM [csv].P` over rows: field i
    of each row read as its type, a missing field its zero."""
    out = []
    for row in rows:
        parts = row.split("|")
        out.append("|".join(_as_tigon_reads(parts[i], t) if i < len(parts) else _ZERO[t]
                            for i, t in enumerate(types)))
    return sorted(out)


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
    if case["case"].startswith("TestTypes/"):
        # a selection of every field: its rows follow from the input, row by row
        assert got == _derived_rows(rows, types)


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
