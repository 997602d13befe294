"""The flags the test suite asks of every build reach the compiler: conftest
sets GSQLC_WERROR=1, so generated query sets and the runtime archive compile
with -Werror (and a warning fails the build); without it they do not."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import gsqlc
from gsqlc.backend.build import build
from gsqlc.backend.codegen import generate
from gsqlc.errors import BuildError
from gsqlc.pipeline import plan_queries

QUERY = "DEFINE { query_name 'wq'; }\nselect time, len from IPV4 where len > 40\n"


def compile_commands(bdir: Path) -> list[str]:
    """The compiler invocations of a build directory: the compilation
    database of a cached query set's build (backend/native_build.py), or a
    CMake build's (Ninja or Make)."""
    if (bdir / "compile_commands.json").exists():
        return [" ".join(e["arguments"]) for e in json.loads((bdir / "compile_commands.json").read_text())]
    if (bdir / "build.ninja").exists():
        ninja = shutil.which("ninja")
        assert ninja, "a Ninja build directory but no ninja"
        out = subprocess.run([ninja, "-C", str(bdir), "-t", "commands"], stdout=subprocess.PIPE,
                             text=True, check=True).stdout
        return [c for c in out.splitlines() if re.search(r"\s-c\s", c)]
    return [line for f in sorted(bdir.glob("CMakeFiles/*/flags.make"))
            for line in f.read_text().splitlines() if re.match(r"(C|CXX)_FLAGS", line)]


def optimization_levels(cmds: list[str]) -> dict[str, str]:
    """The optimization level each compiler invocation ends up with (its last
    -O option), by language: "c" and "cxx" map to the set of levels seen.
    A CMake flags.make line (C_FLAGS = ..., CXX_FLAGS = ...) counts as one."""
    out: dict[str, set[str]] = {"c": set(), "cxx": set()}
    for c in cmds:
        levels = re.findall(r"(?:^|\s)-O(\w*)", c)
        if not levels:
            continue
        cxx = c.startswith("CXX_FLAGS") or bool(re.search(r"\.cpp(\s|$)", c))
        out["cxx" if cxx else "c"].add(levels[-1])
    return {k: ",".join(sorted(v)) for k, v in out.items()}


def _runtime_dir(bdir: Path) -> Path:
    """The build folder of the runtime archive the query set was linked with
    (its link command, in the build's log)."""
    log = (bdir.parent / "build.log").read_text()
    m = re.search(r"-Wl,--whole-archive (\S+/libgsqlc_runtime\.a) ", log)
    assert m, "the query set was not linked against the cached runtime archive"
    return Path(m.group(1)).parent


def test_test_builds_compile_with_werror(tmp_path):
    assert os.environ.get("GSQLC_WERROR") == "1"
    q = tmp_path / "q.gsql"
    q.write_text(QUERY)
    bdir = gsqlc.compile(q).library.parent
    runtime = _runtime_dir(bdir)
    assert "GSQLC_WERROR:BOOL=ON" in (runtime / "CMakeCache.txt").read_text()
    for d in (bdir, runtime):
        cmds = compile_commands(d)
        assert cmds, d
        assert all(" -Werror" in c for c in cmds), (d, [c for c in cmds if "-Werror" not in c])


def _warning_set(tmp_path):
    """A generated set with an unused static function in its LFTA: a warning
    (-Wunused-function, part of -Wall), not an error."""
    q = tmp_path / "q.gsql"
    q.write_text(QUERY)
    gen = generate(plan_queries([str(q)]).plan)
    lfta = gen.lftas[0]
    assert lfta.endswith(".c")
    gen.files[lfta] += "\nstatic int gsqlc_werror_probe(void) { return 0; }\n"
    return gen


def test_a_warning_fails_the_build_only_under_gsqlc_werror(tmp_path, monkeypatch):
    gen = _warning_set(tmp_path)
    monkeypatch.delenv("GSQLC_WERROR")
    assert build(gen).library.exists()          # a warning only
    monkeypatch.setenv("GSQLC_WERROR", "0")
    assert build(gen).cached                    # "0" is off: the same build
    # werror is part of the cache key: the build above is not reused
    monkeypatch.setenv("GSQLC_WERROR", "1")
    with pytest.raises(BuildError, match=r"gsqlc_werror_probe. defined but not used \[-Werror="):
        build(gen)
    monkeypatch.delenv("GSQLC_WERROR")
    with pytest.raises(BuildError, match="gsqlc_werror_probe"):
        build(gen, werror=True)                 # the caller's request, without the variable


def test_templates_compiled_once_into_the_cache(tmp_path, monkeypatch):
    """The code templates' compiled form is kept in the cache folder (a
    cached run's start-up) and reused; a cache that cannot be written only
    costs the compile."""
    q = tmp_path / "q.gsql"
    q.write_text(QUERY)
    monkeypatch.setenv("GSQLC_CACHE_DIR", str(tmp_path / "cache"))
    first = generate(plan_queries([str(q)]).plan)
    kept = sorted((tmp_path / "cache" / "templates").glob("*.cache"))
    assert kept
    stamps = [p.stat().st_mtime_ns for p in kept]
    assert generate(plan_queries([str(q)]).plan).files == first.files
    assert [p.stat().st_mtime_ns for p in kept] == stamps      # read, not rewritten
    blocked = tmp_path / "file"
    blocked.write_text("")
    monkeypatch.setenv("GSQLC_CACHE_DIR", str(blocked / "cache"))   # under a file
    assert generate(plan_queries([str(q)]).plan).files == first.files


AGG_QUERY = ("DEFINE { query_name 'per_src'; }\n"
             "select tb, srcIP, count(*) from IPV4 group by time/60 as tb, srcIP\n")


@pytest.mark.parametrize("sanitize", [False, True])
def test_hfta_units_compile_at_O1_and_lfta_units_at_O3(tmp_path, sanitize):
    """The C++ units (HFTA operators) at -O1 -- the cold compile is mostly
    theirs -- the C units (LFTAs, the runtime's hot loops) at the Release -O3;
    a sanitized build is -O1 throughout.  The C++ units still use the
    precompiled header (built with the same flags)."""
    q = tmp_path / "q.gsql"
    q.write_text(AGG_QUERY)
    gen = generate(plan_queries([str(q)]).plan)
    assert gen.lftas and gen.hftas and all(h.endswith(".cpp") for h in gen.hftas)
    bdir = build(gen, sanitize=sanitize).library.parent
    cmds = compile_commands(bdir)
    assert optimization_levels(cmds) == ({"c": "1", "cxx": "1"} if sanitize else
                                         {"c": "3", "cxx": "1"})
    cxx = [c for c in cmds if re.search(r"\.cpp(\s|$)", c)]
    assert len(cxx) == len(gen.hftas)
    assert all(re.search(r"-include \S+\.hpp ", c) for c in cxx), cxx
