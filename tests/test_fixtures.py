"""Golden fixtures: `gsqlc explain` over the query files of tests/fixtures,
each compared with the expected output kept beside it.

    explain/NAME.gsql   NAME.explain   its standard output (exit 0, nothing on stderr)
    errors/NAME.gsql    NAME.err       its standard error (exit 2, nothing on stdout)
    NAME.schema         optional, either directory: given as --schema
                        (without it, gsqlc's packet schema)

Each fixture runs `python -m gsqlc explain NAME.gsql [--schema NAME.schema]`
in its own directory, as a user there would, so the paths in messages are
relative; colour is off (NO_COLOR).  A mismatch shows a unified diff of the
expected file against what gsqlc printed.

The expected files record today's behaviour.  When a change of output is
meant (or for a new fixture), record it on purpose and read the diff before
committing it:

    GSQLC_UPDATE_FIXTURES=1 python -m pytest tests/test_fixtures.py
    git diff tests/fixtures

An expected file or schema without its .gsql fails test_no_orphans.
"""
from __future__ import annotations

import difflib
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent / "fixtures"
UPDATE = os.environ.get("GSQLC_UPDATE_FIXTURES", "") not in ("", "0")
UPDATE_HINT = "GSQLC_UPDATE_FIXTURES=1 python -m pytest tests/test_fixtures.py"


@dataclass(frozen=True)
class Kind:
    """What one directory of fixtures expects of `gsqlc explain`."""
    suffix: str        # of the expected file
    status: int        # exit status
    stream: str        # the stream the expected file holds; the other stays empty


KINDS = {"explain": Kind(".explain", 0, "stdout"), "errors": Kind(".err", 2, "stderr")}


def fixture_files(kind: str, root: Path = FIXTURES) -> list[Path]:
    return sorted((root / kind).glob("*.gsql"))


def explain_env(pycache: Path) -> dict[str, str]:
    """The environment of the fixtures' runs: no colour, and gsqlc's
    compiled modules kept in `pycache` from one run to the next (where
    bytecode is not written, compiling them is a quarter of each run)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("FORCE_COLOR", "CLICOLOR_FORCE", "PYTHONDONTWRITEBYTECODE")}
    env["NO_COLOR"] = "1"
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    # the runs change directory: keep a relative PYTHONPATH (compiler/) pointing where it did
    if env.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) if p else p
                                            for p in env["PYTHONPATH"].split(os.pathsep))
    return env


def run_explain(gsql: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """`python -m gsqlc explain NAME.gsql [--schema NAME.schema]` in the
    fixture's directory; text stdout and stderr."""
    schema = gsql.with_suffix(".schema")
    args = ["explain", gsql.name] + (["--schema", schema.name] if schema.exists() else [])
    p = subprocess.run([sys.executable, "-m", "gsqlc", *args], cwd=gsql.parent, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    return subprocess.CompletedProcess(p.args, p.returncode,
                                       p.stdout.decode("utf-8", "replace"),
                                       p.stderr.decode("utf-8", "replace"))


def mismatch(gsql: Path, env: dict[str, str], update: bool = False) -> str | None:
    """How gsqlc's explain of the fixture `gsql` differs from what is
    expected of it (a readable report), or None when it does not.  With
    `update`, a run that ends as its kind must (exit status, silent other
    stream) is recorded as the expected file instead."""
    kind = KINDS[gsql.parent.name]
    expected_file = gsql.with_suffix(kind.suffix)
    command = f"gsqlc explain {gsql.name}" + (
        f" --schema {gsql.stem}.schema" if gsql.with_suffix(".schema").exists() else "")
    where = f"{gsql.parent.name}/{gsql.name}"
    if not update and not expected_file.exists():
        return f"{where}: no {expected_file.name} beside it; record one with {UPDATE_HINT}"
    p = run_explain(gsql, env)
    got, other = (p.stdout, p.stderr) if kind.stream == "stdout" else (p.stderr, p.stdout)
    if p.returncode != kind.status or other:
        other_name = "stderr" if kind.stream == "stdout" else "stdout"
        return (f"{where}: `{command}` exited {p.returncode}, expected {kind.status} "
                f"with nothing on {other_name}\n--- stdout:\n{p.stdout}--- stderr:\n{p.stderr}")
    if update:
        if not expected_file.exists() or expected_file.read_text() != got:
            expected_file.write_text(got)
        return None
    want = expected_file.read_text()
    if got == want:
        return None
    diff = difflib.unified_diff(want.splitlines(keepends=True), got.splitlines(keepends=True),
                                fromfile=f"{expected_file.name} (expected)",
                                tofile=f"{command} (actual {kind.stream})")
    return (f"{where}: output differs from {expected_file.name}\n" + "".join(diff) +
            f"\n(if the change is meant: {UPDATE_HINT})")


def orphans(root: Path = FIXTURES) -> list[str]:
    """Files of the fixture directories that belong to no .gsql: an expected
    file or schema whose query is gone, or a file of an unknown kind."""
    found = []
    for name, kind in KINDS.items():
        for f in sorted((root / name).iterdir()):
            if f.suffix == ".gsql":
                continue
            if f.suffix not in (kind.suffix, ".schema"):
                found.append(f"{name}/{f.name}: not a .gsql, {kind.suffix} or .schema file")
            elif not f.with_suffix(".gsql").exists():
                found.append(f"{name}/{f.name}: no {f.stem}.gsql beside it")
    return found


CASES = [pytest.param(f, id=f"{kind}/{f.stem}") for kind in KINDS for f in fixture_files(kind)]


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    return explain_env(tmp_path_factory.mktemp("pycache"))


@pytest.mark.parametrize("gsql", CASES)
def test_fixture(gsql, env):
    report = mismatch(gsql, env, update=UPDATE)
    if report:
        pytest.fail(report, pytrace=False)


def test_no_orphans():
    assert orphans() == []


def test_every_kind_has_fixtures():
    # a renamed directory or suffix would otherwise leave nothing to compare
    for kind in KINDS:
        assert len(fixture_files(kind)) >= 20, kind


# ---------------------------------------------------------------- the checks themselves


def _copy(name: str, kind: str, dest_kind: str, root: Path, with_expected: bool = True) -> Path:
    (root / dest_kind).mkdir(exist_ok=True)
    src = FIXTURES / kind / f"{name}.gsql"
    shutil.copy(src, root / dest_kind / src.name)
    if with_expected:
        exp = src.with_suffix(KINDS[kind].suffix)
        shutil.copy(exp, (root / dest_kind / src.name).with_suffix(KINDS[dest_kind].suffix))
    return root / dest_kind / src.name


def test_update_records_and_a_wrong_expectation_is_reported(tmp_path, env):
    gsql = _copy("selection", "explain", "explain", tmp_path, with_expected=False)
    assert "no selection.explain beside it" in mismatch(gsql, env)
    assert mismatch(gsql, env, update=True) is None
    expected = gsql.with_suffix(".explain")
    assert expected.read_text() == (FIXTURES / "explain" / "selection.explain").read_text()
    expected.write_text(expected.read_text().replace("(ipversion = 4)", "(ipversion = 6)"))
    report = mismatch(gsql, env)
    assert report is not None
    assert "--- selection.explain (expected)" in report, report
    assert "-    WHERE    (ipversion = 6)" in report and "+    WHERE    (ipversion = 4)" in report


def test_a_wrong_exit_status_is_reported(tmp_path, env):
    # an error query under explain/, with a plan expected of it: refused, and
    # update does not record the error as a plan
    gsql = _copy("unknown_field", "errors", "explain", tmp_path)
    before = gsql.with_suffix(".explain").read_text()
    report = mismatch(gsql, env, update=True)
    assert report is not None and "exited 2, expected 0 with nothing on stderr" in report, report
    assert "error [unknown-field]" in report
    assert gsql.with_suffix(".explain").read_text() == before


def test_an_orphan_is_reported(tmp_path):
    for kind in KINDS:
        (tmp_path / kind).mkdir()
    for name in ("explain/a.gsql", "explain/a.explain", "explain/b.explain", "explain/a.schema",
                 "errors/c.schema", "errors/d.gsql", "errors/d.explain"):
        (tmp_path / name).write_text("")
    assert orphans(tmp_path) == ["explain/b.explain: no b.gsql beside it",
                                 "errors/c.schema: no c.gsql beside it",
                                 "errors/d.explain: not a .gsql, .err or .schema file"]
