"""Building a generated query set into the cache without CMake: the
compiler driven directly, the set's units compiled in parallel.

CMake configures once, for the runtime archive (runtime_c/CMakeLists.txt):
it finds the compilers and libpcap, and writes them with the flags a
generated CMake project uses (runtime_c/gsqlc_flags.cmake) to
gsqlc_toolchain.txt.  A query set is then compiled with those flags as its
generated CMakeLists.txt would compile it (tests/test_native_build.py holds
the two to the same commands), without CMake's configure and compiler
checks, which cost more than the C units of a small set.

Built once for every query set of a toolchain and flags, in the cache's
shared-KEY folder (shared_folder):

  gsq_hfta.hpp(.gch)   the operator templates and runtime headers the HFTA
                       units include, precompiled: parsing them was half of
                       a C++ unit's compile.  Units take it with -include;
                       their code is the same (a header the compiler cannot
                       use is read as text).
  gsqlc_run_main.o     the stand-alone runner's main (the runner_defaults.c of
                       a set is its only own part)
  merge_any_TAG.o      the merges (gsq_merge.h: MERGE queries and the merge
                       of an LFTA's instances over an interface set), one
                       object per merge column type, compiled side by side:
                       a query set's merges are then a few lines of C
                       (before, each compiled its own C++, about a third of
                       a small set's compile time)

A set with more C++ units than compilers run at once compiles them as that
many groups (cxx_groups), each one translation unit that includes its
members: every C++ unit pays for loading the precompiled header (a quarter
of a unit's compile), a group pays once.  Generated units keep their names
apart (a functor, its constants and its definition carry the query's name)
so that they can share one.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional, Sequence

from ..errors import BuildError
from ..resources import cache_root, resource_dir
from .build_cache import mark_done, tell_first_build, verified
from .gen_shared import MERGE_TYPES
from .udf_build import is_library_source
from .user_sources import CXX_SUFFIXES
from .xdp_gen import bpf_compile_command, check_bpf_toolchain, embed_header

TOOLCHAIN_FILE = "gsqlc_toolchain.txt"
UNIT_DEFINE = "-Dgsqlc_queryset_EXPORTS"   # CMake's define for a shared library's sources
PCH_NAME = "gsq_hfta.hpp"
RUNNER_MAIN = "gsqlc_run_main.o"
# in hfta_templates, compiled once per gsq_merge.h type tag (MERGE_TYPES, GSQ_MERGE_TYPE)
MERGE_SRC = "merge_any.cpp"
# runtime headers every HFTA unit may include before its operator templates
_HFTA_HEADERS = ("<cstddef>", "<cstring>", "<limits>", "<string>",
                 '"gsq_runtime.h"', '"gsq_ops.h"', '"gsq_funcs.h"')
# include folders the compiler searches anyway (CMake leaves them out)
_IMPLICIT_INCLUDES = {"/usr/include", "/usr/local/include"}


@dataclass(frozen=True)
class Toolchain:
    """gsqlc_toolchain.txt: compilers, flags and libpcap as CMake found them."""
    c_compiler: str
    cxx_compiler: str
    c_flags: tuple[str, ...]
    cxx_flags: tuple[str, ...]
    c_standard: str
    cxx_standard: str
    shared_linker_flags: tuple[str, ...]
    exe_linker_flags: tuple[str, ...]
    cxx_options: tuple[str, ...]          # C++ units' (before compile_options)
    compile_options: tuple[str, ...]      # warnings, -Werror, sanitizers
    link_options: tuple[str, ...]
    pcap_include_dir: str
    pcap_library: str

    @classmethod
    def read(cls, path: Path) -> "Toolchain":
        values = dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)

        def items(name: str) -> tuple[str, ...]:
            return tuple(x for x in values[name].split(";") if x)
        return cls(values["c_compiler"], values["cxx_compiler"], items("c_flags"),
                   items("cxx_flags"), values["c_standard"], values["cxx_standard"],
                   items("shared_linker_flags"), items("exe_linker_flags"),
                   items("cxx_options"), items("compile_options"), items("link_options"),
                   values["pcap_include_dir"], values["pcap_library"])

    def identity(self) -> str:
        """What the shared folder's contents depend on: these settings and
        the compilers' binaries (a precompiled header is theirs alone)."""
        parts = [repr(self)]
        for c in (self.c_compiler, self.cxx_compiler):
            real = os.path.realpath(c)
            try:
                st = os.stat(real)
                parts.append(f"{real}:{st.st_size}:{st.st_mtime_ns}")
            except OSError:
                parts.append(real)
        return "\n".join(parts)


# ------------------------------------------------------------ commands


def public_includes() -> list[Path]:
    """What generated code has on its include path besides its own folder
    (the runtime's include/ and lfta/, the operator templates)."""
    rt = resource_dir("runtime_c")
    return [rt / "include", rt / "lfta", resource_dir("hfta_templates")]


def _pcap_include(tc: Toolchain) -> list[Path]:
    d = tc.pcap_include_dir
    return [] if not d or d in _IMPLICIT_INCLUDES else [Path(d)]


def _unit_flags(tc: Toolchain, cxx: bool) -> list[str]:
    """Flags of a library unit, in CMake's order: the build type's, the
    language standard, position-independent code, hidden symbols, gsqlc's."""
    # target options as CMake gives them: each once, where it first appears
    options = dict.fromkeys([*(tc.cxx_options if cxx else ()), *tc.compile_options])
    return [*(tc.cxx_flags if cxx else tc.c_flags), tc.cxx_standard if cxx else tc.c_standard,
            "-fPIC", "-fvisibility=hidden", *options]


def unit_command(tc: Toolchain, src: Path, obj: Path, pch: Optional[Path] = None,
                 folder: Optional[Path] = None, xdp: Sequence[Path] = ()) -> list[str]:
    """Compile a generated library unit (C, or C++ with the precompiled
    header `pch`); folder: the generated set's, if src is not in it; xdp:
    the include folders of a set with kernel LFTAs (its embedded objects',
    runtime_c/xdp)."""
    cxx = src.suffix == ".cpp"
    # tigon_compat: the type names of gsqlc_udf.h's user declarations
    incs = [folder or src.parent, *public_includes(), *_pcap_include(tc),
            resource_dir("runtime_c") / "tigon_compat", *xdp]
    cmd = [tc.cxx_compiler if cxx else tc.c_compiler, UNIT_DEFINE,
           *(f"-I{d}" for d in incs), *_unit_flags(tc, cxx)]
    if cxx and pch is not None:
        cmd += ["-include", str(pch)]
    return cmd + ["-o", str(obj), "-c", str(src)]


def udf_unit_command(tc: Toolchain, src: Path, obj: Path, folder: Path) -> list[str]:
    """Compile a user's function source (C or C++ by its suffix) against
    Tigon's header names and its own folder, with a library unit's flags
    but not gsqlc's warnings: the code is the user's."""
    cxx = src.suffix in CXX_SUFFIXES
    incs = [folder, resource_dir("runtime_c") / "tigon_compat"]
    if is_library_source(str(folder)):
        # gsqlc's library of GS-lite's aggregates: gsqlc's own code, its warnings
        return [tc.cxx_compiler if cxx else tc.c_compiler, *(f"-I{d}" for d in incs),
                *_unit_flags(tc, cxx), "-o", str(obj), "-c", str(src)]
    flags = [f for f in _unit_flags(tc, cxx) if not f.startswith("-W")]
    return [tc.cxx_compiler if cxx else tc.c_compiler, *(f"-I{d}" for d in incs), *flags,
            "-w", "-o", str(obj), "-c", str(src)]


def merge_unit_command(tc: Toolchain, type_tag: str, obj: Path) -> list[str]:
    """Compile the merges of one column type (the generated CMake project's
    object library gsqlc_merges_TAG): a library unit's flags, without the
    generated folder on its include path."""
    incs = [*public_includes(), *_pcap_include(tc)]
    return [tc.cxx_compiler, f"-DGSQ_MERGE_TYPE={type_tag}", *(f"-I{d}" for d in incs),
            *_unit_flags(tc, True), "-o", str(obj), "-c",
            str(resource_dir("hfta_templates") / MERGE_SRC)]


def pch_command(tc: Toolchain, header: Path) -> list[str]:
    """Precompile `header` with a C++ unit's flags (a unit can use it only then)."""
    incs = [*public_includes(), *_pcap_include(tc)]
    return [tc.cxx_compiler, UNIT_DEFINE, *(f"-I{d}" for d in incs), *_unit_flags(tc, True),
            "-x", "c++-header", "-o", f"{header}.gch", "-c", str(header)]


def runner_unit_command(tc: Toolchain, src: Path, obj: Path) -> list[str]:
    """Compile a unit of the stand-alone runner (an executable's: no PIC)."""
    incs = public_includes()[:2]
    return [tc.c_compiler, *(f"-I{d}" for d in incs), *tc.c_flags, tc.c_standard,
            *tc.compile_options, "-o", str(obj), "-c", str(src)]


_SYSTEM_LIB_DIRS = (Path("/lib"), Path("/usr/lib"), Path("/lib64"), Path("/usr/lib64"))


def _pcap_rpath(tc: Toolchain) -> list[str]:
    """The run-time search path of libpcap's folder where the loader would
    not look (a copy a wheel bundles, gsqlc.libs/), as CMake adds one for a
    library outside the system's folders (/usr/lib and its multiarch ones)."""
    folder = Path(tc.pcap_library).parent
    if not folder.is_absolute() or folder in _SYSTEM_LIB_DIRS or \
            folder.parent in _SYSTEM_LIB_DIRS[:2]:
        return []
    return [f"-Wl,-rpath,{folder}"]


def library_link_command(tc: Toolchain, lib: Path, objs: Sequence[Path], runtime: Path,
                         no_undefined: bool = False, libbpf: bool = False) -> list[str]:
    """no_undefined: a symbol nothing defines fails the link (a user function
    the --udf sources miss), not the library's loading; libbpf: the set
    has kernel LFTAs (their loader's library)."""
    return [tc.cxx_compiler, "-fPIC", *tc.cxx_flags, *tc.shared_linker_flags, "-shared",
            *tc.link_options, *(["-Wl,--no-undefined"] if no_undefined else []),
            f"-Wl,-soname,{lib.name}", "-o", str(lib), *map(str, objs),
            "-Wl,--whole-archive", str(runtime), "-Wl,--no-whole-archive", tc.pcap_library,
            *(["-lbpf"] if libbpf else []), *_pcap_rpath(tc)]


def runner_link_command(tc: Toolchain, exe: Path, objs: Sequence[Path], lib: Path) -> list[str]:
    return [tc.c_compiler, *tc.c_flags, *tc.exe_linker_flags, *tc.link_options,
            *map(str, objs), "-o", str(exe), f"-Wl,-rpath,$ORIGIN:{lib.parent}", str(lib),
            *_pcap_rpath(tc)]


def write_if_changed(path: Path, text: str) -> None:
    """A build input rewritten only when it differs (its mtime then stays)."""
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


# ------------------------------------------------------------ running them


def jobs() -> int:
    """Compilers run at once: one per core this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return os.cpu_count() or 1


def _run_one(cmd: list[str], cwd: Path) -> tuple[int, str]:
    p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return p.returncode, p.stdout


def run_all(cmds: Sequence[list[str]], cwd: Path) -> str:
    """Run `cmds` in `cwd`, jobs() at once, in order; their log.  On a
    failure the ones running finish, none starts, and a BuildError carries
    the failed command and its output."""
    log: list[str] = []
    with ThreadPoolExecutor(max_workers=jobs()) as pool:
        futures = [pool.submit(_run_one, c, cwd) for c in cmds]
        failed: Optional[tuple[list[str], str]] = None
        for cmd, fut in zip(cmds, futures):
            if failed is not None:
                fut.cancel()
                continue
            rc, out = fut.result()
            log.append(" ".join(cmd) + "\n" + out)
            if rc != 0:
                failed = (cmd, out)
                for f in futures:
                    f.cancel()
    if failed is not None:
        raise BuildError(f"command failed: {' '.join(failed[0])}\n{failed[1]}")
    return "".join(log)


# ------------------------------------------------------------ the shared folder


def pch_text() -> str:
    ops = sorted(p.name for p in resource_dir("hfta_templates").glob("*.hpp"))
    return ("// generated by gsqlc: what HFTA units include, precompiled once "
            "(backend/native_build.py)\n"
            + "".join(f"#include {h}\n" for h in _HFTA_HEADERS)
            + "".join(f'#include "{h}"\n' for h in ops))


def _shared_key(tc: Toolchain) -> str:
    h = hashlib.sha256(tc.identity().encode() + b"\0" + pch_text().encode())
    for d in (resource_dir("runtime_c") / "include", resource_dir("runtime_c") / "lfta",
              resource_dir("runtime_c") / "tools", resource_dir("hfta_templates")):
        for p in sorted(d.iterdir()):
            if p.is_file():
                h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:24]


@dataclass(frozen=True)
class Shared:
    """What every query set of a toolchain and flags shares."""
    runner_main: Path
    merges: tuple[Path, ...]    # linked into every library
    pch: Optional[Path]     # the header whose .gch is beside it (None: not precompiled)


def shared_folder(tc: Toolchain) -> Shared:
    """The runner's main and the precompiled header for `tc`, built once
    (under a lock: concurrent builds wait for the first).  A compiler that
    cannot precompile the header only costs the time it saves."""
    root = cache_root() / f"shared-{_shared_key(tc)}"
    root.mkdir(parents=True, exist_ok=True)
    header, main_obj = root / PCH_NAME, root / RUNNER_MAIN
    merges = tuple(root / f"merge_any_{t}.o" for t in MERGE_TYPES)
    gch = Path(f"{header}.gch")
    with open(root / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if verified(root, main_obj, *merges, gch):
            return Shared(main_obj, merges, header)
        if verified(root, main_obj, *merges):
            return Shared(main_obj, merges, None)
        tell_first_build()
        (root / "done").unlink(missing_ok=True)
        gch.unlink(missing_ok=True)
        main_src = resource_dir("runtime_c") / "tools" / "gsqlc_run_main.c"
        header.write_text(pch_text())
        cmd = pch_command(tc, header)
        # the header is precompiled beside the units (its failure is not one)
        with ThreadPoolExecutor(max_workers=1) as pool:
            pch_run = pool.submit(_run_one, cmd, root)
            log = run_all([*(merge_unit_command(tc, t, o) for t, o in zip(MERGE_TYPES, merges)),
                           runner_unit_command(tc, main_src, main_obj)], root)
            rc, out = pch_run.result()
        (root / "build.log").write_text(log + " ".join(cmd) + "\n" + out)
        built = rc == 0 and gch.exists()
        mark_done(root, main_obj, *merges, *([gch] if built else []))
        return Shared(main_obj, merges, header if built else None)


# ------------------------------------------------------------ a query set


def cxx_groups(units: Sequence[Path], n: int, size: Mapping[Path, int]) -> list[list[Path]]:
    """The C++ units in at most n groups of about equal source size (`size`:
    a unit's; the largest unit first, each to the smallest group so far), in
    the units' order within a group."""
    if len(units) <= n:
        return [[u] for u in units]
    groups: list[list[Path]] = [[] for _ in range(n)]
    for u in sorted(units, key=lambda u: -size[u]):
        min(groups, key=lambda g: sum(size[m] for m in g)).append(u)
    return [sorted(g, key=list(units).index) for g in groups]


def _group_unit(objdir: Path, i: int, members: Sequence[Path]) -> Path:
    """Write the translation unit of C++ group i (its members included by
    their absolute paths, so each one's diagnostics name its own file)."""
    unit = objdir / f"cxx_group_{i}.cpp"
    unit.write_text("// generated by gsqlc: C++ units compiled as one (native_build.cxx_groups)\n"
                    + "".join(f'#include "{m.resolve()}"\n' for m in members))
    return unit


def build_set(src: Path, bdir: Path, lftas: Sequence[str], hftas: Sequence[str],
              runtime: Path, lib_name: str, runner_name: str,
              udfs: Sequence[tuple[str, str]] = (), no_undefined: bool = False,
              xdp: Sequence[tuple[str, str]] = ()) -> str:
    """Compile the generated units in `src` into bdir/lib_name (linked with
    the runtime archive `runtime`) and the runner bdir/runner_name; the log.
    The toolchain is the one CMake found for `runtime`.  xdp: the kernel
    LFTAs (GeneratedSet.xdp): their programs are built first, by clang's
    BPF target, and embedded; the loader is compiled in, libbpf linked."""
    tc = Toolchain.read(runtime.parent / TOOLCHAIN_FILE)
    shared = shared_folder(tc)
    objdir = bdir / "objects"
    objdir.mkdir(parents=True, exist_ok=True)
    lib_units = [src / f for f in (*lftas, *hftas, "queryset.c")]
    log = ""
    xdp_incs: list[Path] = []
    if xdp:
        rt = resource_dir("runtime_c")
        clang = check_bpf_toolchain([fn for fn, _ in xdp])
        log += run_all([bpf_compile_command(clang, rt, src / f"{fn}.bpf.c",
                                            objdir / f"{fn}.bpf.o") for fn, _ in xdp], bdir)
        for fn, obj in xdp:
            write_if_changed(objdir / f"{fn}.bpf.h", embed_header(objdir / f"{fn}.bpf.o", obj))
        xdp_incs = [objdir, rt / "xdp"]
        lib_units.append(rt / "xdp" / "xdp_loader.c")
    size = {u: u.stat().st_size for u in lib_units}
    units = [u for u in lib_units if u.suffix != ".cpp"]
    for i, g in enumerate(cxx_groups([u for u in lib_units if u.suffix == ".cpp"], jobs(), size)):
        unit = g[0] if len(g) == 1 else _group_unit(objdir, i, g)
        size[unit] = sum(size[m] for m in g)
        units.append(unit)
    # the longest first (C++ before C, larger before smaller): the last to
    # finish decides when the link starts
    order = sorted(units, key=lambda p: (p.suffix != ".cpp", -size[p]))
    objs = {u: objdir / f"{u.name}.o" for u in units}
    sets_src, sets_obj = src / "runner_defaults.c", objdir / "runner_defaults.c.o"
    compiles = [unit_command(tc, u, objs[u], shared.pch, src, xdp_incs) for u in order]
    udf_objs = [objdir / f"{name}.o" for name, _ in udfs]
    compiles += [udf_unit_command(tc, src / name, o, Path(folder))
                 for (name, folder), o in zip(udfs, udf_objs)]
    compiles.append(runner_unit_command(tc, sets_src, sets_obj))
    (bdir / "compile_commands.json").write_text(json.dumps(
        [{"directory": str(bdir), "arguments": c, "file": c[-1], "output": c[-3]}
         for c in compiles], indent=1))
    log += run_all(compiles, bdir)
    lib, exe = bdir / lib_name, bdir / runner_name
    log += run_all([library_link_command(tc, lib, [*(objs[u] for u in units), *udf_objs,
                                                   *shared.merges], runtime,
                                         no_undefined or bool(udfs), bool(xdp))], bdir)
    log += run_all([runner_link_command(tc, exe, [shared.runner_main, sets_obj], lib)], bdir)
    return log
