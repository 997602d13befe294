"""The cache's builds drive the compiler directly (backend/native_build.py):
with the commands the generated CMake project gives its units and links,
flag for flag; the operator templates' precompiled header leaves every
HFTA unit's code as it was."""
from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from gsqlc.backend import native_build as nb
from gsqlc.backend.build import LIB_NAME, RUNNER_NAME, runtime_archive
from gsqlc.backend.codegen import generate
from gsqlc.pipeline import plan_queries
from gsqlc.resources import resource_dir

REPO = Path(__file__).resolve().parents[1]
# every kind of unit: LFTA select and aggregate; HFTA aggregate, merge, join,
# select, filter join
KINDS = (REPO / "bench" / "queries" / "compile_set.gsql").read_text() + """;
DEFINE { query_name 'hostnames'; }
SELECT time/60*60 as t, destIP, destPort,
       str_extract_regex(TCP_data, '[Hh][Oo][Ss][Tt]: *[0-9A-Za-z.:-]*') as hostheader
FROM TCP WHERE ipversion=4 and offset=0 and protocol=6 and str_match_start[TCP_data, 'GET'];
DEFINE { query_name 'answered'; }
SELECT S.time, S.srcIP, S.len FILTER_JOIN(R.time, 5) FROM eth0.IPV4 R, eth1.IPV4 S
WHERE R.srcIP = S.destIP and R.time = S.time
"""

needs_cmake = pytest.mark.skipif(not (shutil.which("cmake") and shutil.which("ninja")),
                                 reason="needs cmake and ninja")


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    d = tmp_path_factory.mktemp("kinds")
    (d / "kinds.gsql").write_text(KINDS)
    gen = generate(plan_queries([str(d / "kinds.gsql")]).plan)
    gen.write(d / "src")
    return gen, d / "src"


def _configure(src: Path, bdir: Path, flags: dict[str, str]) -> None:
    args = [f"-D{k}={v}" for k, v in flags.items()]
    subprocess.run(["cmake", "-S", str(src), "-B", str(bdir), "-G", "Ninja", *args],
                   check=True, stdout=subprocess.DEVNULL)


def _normal(cmd: list[str], bdir: Path) -> list[str]:
    """A command with what may differ between two equal builds replaced:
    dependency-file options, object names, the folder it runs in."""
    out: list[str] = []
    skip = 0
    for i, t in enumerate(cmd):
        if skip:
            skip -= 1
            continue
        if t == "-MD":
            continue
        if t in ("-MT", "-MF"):
            skip = 1
            continue
        if t == "-o":
            target = cmd[i + 1]
            out += ["-o", "OBJECT" if target.endswith(".o") else Path(target).name]
            skip = 1
            continue
        if t.endswith(".o"):
            t = "OBJECT"
        out.append(t.replace(f"{bdir}/", ""))
    return out


def _cmake_commands(bdir: Path) -> dict[str, list[str]]:
    """The CMake build's commands by what they make (a unit's source name,
    the library, the runner)."""
    text = subprocess.run(["ninja", "-C", str(bdir), "-t", "commands"], check=True,
                          stdout=subprocess.PIPE, text=True).stdout
    out = {}
    for line in text.splitlines():
        # (a shell reads \$ in double quotes as $; shlex keeps the backslash)
        cmd = [t.replace("\\$", "$") for t in shlex.split(line) if t not in (":", "&&")]
        what = Path(cmd[-1]).name if "-c" in cmd else cmd[cmd.index("-o") + 1]
        # the merges' source is compiled once per column type
        what += "".join(":" + t.split("=", 1)[1] for t in cmd if t.startswith("-DGSQ_MERGE_TYPE="))
        out[what] = _normal(cmd, bdir)
    return out


@needs_cmake
@pytest.mark.parametrize("variant", [{}, {"GSQLC_WERROR": "ON", "GSQLC_SANITIZE": "ON"}])
def test_the_units_compile_as_the_generated_cmake_project_compiles_them(generated, tmp_path,
                                                                       variant):
    gen, src = generated
    # the toolchain as the runtime archive's configuration writes it
    _configure(resource_dir("runtime_c"), tmp_path / "runtime", variant)
    tc = nb.Toolchain.read(tmp_path / "runtime" / nb.TOOLCHAIN_FILE)
    runtime = tmp_path / "runtime" / "libgsqlc_runtime.a"
    bdir = tmp_path / "set"
    _configure(src, bdir, {**variant, "GSQLC_RUNTIME_DIR": resource_dir("runtime_c"),
                           "GSQLC_HFTA_DIR": resource_dir("hfta_templates"),
                           "GSQLC_RUNTIME_LIB": runtime})
    want = _cmake_commands(bdir)
    units = [*gen.lftas, *gen.hftas, "queryset.c"]
    ours = {u: _normal(nb.unit_command(tc, src / u, bdir / "x.o"), bdir) for u in units}
    ours["runner_defaults.c"] = _normal(nb.runner_unit_command(tc, src / "runner_defaults.c",
                                                           bdir / "x.o"), bdir)
    main = resource_dir("runtime_c") / "tools" / "gsqlc_run_main.c"
    ours["gsqlc_run_main.c"] = _normal(nb.runner_unit_command(tc, main, bdir / "x.o"), bdir)
    for t in nb.MERGE_TYPES:
        ours[f"{nb.MERGE_SRC}:{t}"] = _normal(nb.merge_unit_command(tc, t, bdir / "x.o"), bdir)
    lib = bdir / LIB_NAME
    merges = [bdir / f"merge_{t}.o" for t in nb.MERGE_TYPES]
    ours[LIB_NAME] = _normal(nb.library_link_command(
        tc, lib, [*(bdir / f"{u}.o" for u in units), *merges], runtime), bdir)
    ours[RUNNER_NAME] = _normal(nb.runner_link_command(tc, bdir / RUNNER_NAME,
                                                       [bdir / "m.o", bdir / "s.o"], lib), bdir)
    assert set(ours) == set(want)
    for what in want:
        assert ours[what] == want[what], what


def _code(obj: Path) -> str:
    """An object's machine code and data, without its file name."""
    p = subprocess.run(["objdump", "-d", "-s", "--no-show-raw-insn", str(obj)], check=True,
                       stdout=subprocess.PIPE, text=True)
    return p.stdout.split("\n", 3)[3]


@pytest.mark.skipif(not shutil.which("objdump"), reason="needs objdump")
def test_the_precompiled_header_leaves_every_hfta_units_code_unchanged(generated, tmp_path):
    gen, src = generated
    runtime = runtime_archive(False)
    tc = nb.Toolchain.read(runtime.parent / nb.TOOLCHAIN_FILE)
    pch = nb.shared_folder(tc).pch
    assert pch is not None and Path(f"{pch}.gch").exists()
    cxx = [u for u in gen.hftas if u.endswith(".cpp")]
    assert len(cxx) == 5   # aggregate x2, join, select, filter join (merges are C)
    cmds = []
    for u in cxx:
        # -Winvalid-pch -Werror: a header the compiler could not use fails
        with_pch = nb.unit_command(tc, src / u, tmp_path / f"{u}.pch.o", pch)
        cmds.append(with_pch[:-4] + ["-Winvalid-pch", "-Werror"] + with_pch[-4:])
        cmds.append(nb.unit_command(tc, src / u, tmp_path / f"{u}.o"))
    nb.run_all(cmds, tmp_path)
    for u in cxx:
        assert _code(tmp_path / f"{u}.pch.o") == _code(tmp_path / f"{u}.o"), u


def test_the_shared_folder_is_built_once_and_again_when_damaged(tmp_path, monkeypatch):
    tc = nb.Toolchain.read(runtime_archive(False).parent / nb.TOOLCHAIN_FILE)
    monkeypatch.setenv("GSQLC_CACHE_DIR", str(tmp_path / "cache"))
    first = nb.shared_folder(tc)
    assert first.pch is not None
    gch = Path(f"{first.pch}.gch")
    stamp = gch.stat().st_mtime_ns
    assert nb.shared_folder(tc) == first and gch.stat().st_mtime_ns == stamp   # kept
    gch.write_bytes(gch.read_bytes()[:1000])                                  # damaged
    assert nb.shared_folder(tc) == first
    assert gch.stat().st_size > 1000
    # a compiler that cannot precompile the header: the units read it as text
    monkeypatch.setenv("GSQLC_CACHE_DIR", str(tmp_path / "cache-no-pch"))
    real_pch_command = nb.pch_command
    monkeypatch.setattr(nb, "pch_command",
                        lambda tc, header: [*real_pch_command(tc, header), "-fno-such-option"])
    shared = nb.shared_folder(tc)
    assert shared.pch is None and shared.runner_main.exists() and all(m.exists() for m in shared.merges)
    assert nb.shared_folder(tc) == shared


def test_cxx_units_built_as_one_group_give_what_each_built_alone_gives(tmp_path, monkeypatch):
    """More C++ units than compilers at once: they compile as groups, one
    translation unit each (cxx_groups); the library's results are those of
    units compiled one by one."""
    import gsqlc
    q = REPO / "bench" / "queries" / "compile_set.gsql"
    trace = REPO / "examples" / "trace.pcap"
    results, objects = {}, {}
    for jobs in (1, 8):
        monkeypatch.setattr(nb, "jobs", lambda jobs=jobs: jobs)
        qs = gsqlc.compile([q], schema=REPO / "examples" / "packet_schema.txt")
        bdir = qs.library.parent
        objects[jobs] = sorted(p.name for p in (bdir / "objects").glob("*.o"))
        results[jobs] = {name: sorted(map(tuple, qs.table({"eth0": f"pcap:{trace}"},
                                                          output=name).to_pylist()))
                         for name in qs.outputs}
        shutil.rmtree(bdir.parent)   # the next build is made, not found in the cache
    cxx_units = [o for o in objects[8] if o.endswith(".cpp.o")]
    assert len(cxx_units) == 3 and not any(o.startswith("cxx_group") for o in objects[8])
    assert [o for o in objects[1] if o.endswith(".cpp.o")] == ["cxx_group_0.cpp.o"]
    assert results[1] == results[8]
    assert set(results[1]) == {"host_counts", "both_ways", "flow_pairs"}
    assert all(results[1].values()), results[1]


def test_cxx_groups_are_balanced_by_size(tmp_path):
    size = {tmp_path / f"{name}.cpp": n
            for name, n in {"a": 900, "b": 500, "c": 450, "d": 400, "e": 100}.items()}
    units = list(size)
    groups = nb.cxx_groups(units, 2, size)
    assert [[u.stem for u in g] for g in groups] == [["a", "d"], ["b", "c", "e"]]
    assert nb.cxx_groups(units[:2], 2, size) == [[units[0]], [units[1]]]
