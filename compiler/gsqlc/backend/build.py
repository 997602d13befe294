"""Building: GeneratedSet -> BuildResult (a shared library and a runner).

Into an output folder, the generated CMake project is built with CMake;
into the cache, the compiler is driven directly with the toolchain CMake
found for the runtime archive (native_build: the units in parallel, the
operator templates precompiled once).

Builds are cached by a hash of everything that goes into them (generated
sources, runtime sources, operator templates, build flags): compiling the
same queries again reuses the library.  A finished build's `done` marker
holds a digest of what it built (build_cache.py), so that a damaged library
is built again rather than trusted.
"""
from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from ..errors import BuildError
from ..resources import cache_root, resource_dir
from .build_cache import LIB_NAME as LIB_NAME
from .build_cache import RUNNER_NAME as RUNNER_NAME
from .build_cache import mark_done, tell_first_build, verified
from .build_cache import werror_default as werror_default

if TYPE_CHECKING:   # a cached run checks its build without loading code generation
    from .codegen import GeneratedSet



@dataclass
class BuildResult:
    source_dir: Path
    build_dir: Path
    library: Path
    runner: Path
    cached: bool


def _tree_digest(h: "hashlib._Hash", root: Path) -> None:
    for p in sorted(root.rglob("*")):
        # sources and the build files that say how they are built
        if p.is_file() and (p.suffix in (".c", ".h", ".hpp", ".cpp", ".cmake")
                            or p.name == "CMakeLists.txt"):
            h.update(str(p.relative_to(root)).encode() + b"\0")
            h.update(p.read_bytes())


def build_key(gen: "GeneratedSet", sanitize: bool, werror: bool) -> str:
    h = hashlib.sha256()
    h.update(gen.digest().encode())
    _tree_digest(h, resource_dir("runtime_c"))
    _tree_digest(h, resource_dir("hfta_templates"))
    h.update(f"sanitize={sanitize};werror={werror}".encode())
    return h.hexdigest()[:24]


def _run(cmd: list[str], cwd: Path) -> str:
    p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        raise BuildError(f"command failed: {' '.join(cmd)}\n{p.stdout}")
    return p.stdout


def cmake_build(source_dir: Path, build_dir: Path, sanitize: bool = False,
                werror: bool = False, jobs: int = 2,
                runtime_lib: Optional[Path] = None) -> str:
    """Configure and build a CMake project (a generated query set, or the
    runtime archive); returns the build log."""
    cmake = shutil.which("cmake")
    if cmake is None:
        raise BuildError("cmake is not installed (pip install cmake, or apt-get install cmake)")
    cfg = [cmake, "-S", str(source_dir), "-B", str(build_dir),
           f"-DGSQLC_RUNTIME_DIR={resource_dir('runtime_c')}",
           f"-DGSQLC_HFTA_DIR={resource_dir('hfta_templates')}",
           f"-DGSQLC_RUNTIME_LIB={runtime_lib or ''}",
           f"-DGSQLC_SANITIZE={'ON' if sanitize else 'OFF'}",
           f"-DGSQLC_WERROR={'ON' if werror else 'OFF'}"]
    if shutil.which("ninja") and not (build_dir / "CMakeCache.txt").exists():
        cfg += ["-G", "Ninja"]
    log = _run(cfg, source_dir)
    log += _run([cmake, "--build", str(build_dir), "-j", str(jobs)], source_dir)
    return log


def runtime_archive(sanitize: bool, werror: Optional[bool] = None) -> Path:
    """The C runtime built once as libgsqlc_runtime.a, cached by a hash of its
    sources and the flags, so that a new query set compiles only its own
    generated files."""
    werror = werror_default(werror)
    h = hashlib.sha256()
    _tree_digest(h, resource_dir("runtime_c"))
    h.update(f"sanitize={sanitize};werror={werror}".encode())
    root = cache_root() / f"runtime-{h.hexdigest()[:24]}"
    root.mkdir(parents=True, exist_ok=True)
    lib = root / "build" / "libgsqlc_runtime.a"
    with open(root / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not verified(root, lib):
            tell_first_build()
            lib.unlink(missing_ok=True)
            log = cmake_build(resource_dir("runtime_c"), root / "build", sanitize, werror)
            (root / "build.log").write_text(log)
            mark_done(root, lib)
    return lib



def _build_units(gen: "GeneratedSet", src: Path, bdir: Path, sanitize: bool, werror: bool) -> str:
    """Build the generated set written in src into bdir against the cached
    runtime archive; returns the build log."""
    from .native_build import TOOLCHAIN_FILE, build_set
    runtime = runtime_archive(sanitize, werror)
    if (runtime.parent / TOOLCHAIN_FILE).exists():
        bdir.mkdir(parents=True, exist_ok=True)
        return build_set(src, bdir, gen.lftas, gen.hftas, runtime, LIB_NAME, RUNNER_NAME,
                         gen.udfs, no_undefined=bool(gen.user_symbols))
    # a runtime configured without writing its toolchain: CMake builds
    return cmake_build(src, bdir, sanitize, werror, runtime_lib=runtime)


def build(gen: "GeneratedSet", out_dir: Optional[Path] = None, sanitize: bool = False,
          werror: Optional[bool] = None) -> BuildResult:
    """Build `gen`.  With out_dir, the sources go there and the build into
    out_dir/build; otherwise into the content-addressed cache.  werror: see
    werror_default (GSQLC_WERROR=1 turns it on)."""
    werror = werror_default(werror)
    if out_dir is not None:
        # the folder holds a CMake project a user can rebuild; built here the
        # same way as into the cache (the runtime archive and the shared merge
        # objects are compiled once, not again for every folder)
        src = Path(out_dir)
        gen.write(src)
        bdir = src / "build"
        log = _build_units(gen, src, bdir, sanitize, werror)
        (bdir / "build.log").write_text(log)
        return BuildResult(src, bdir, bdir / LIB_NAME, bdir / RUNNER_NAME, False)
    key = build_key(gen, sanitize, werror)
    root = cache_root() / key
    root.mkdir(parents=True, exist_ok=True)
    src, bdir = root / "src", root / "build"
    done = root / "done"
    with open(root / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if verified(root, bdir / LIB_NAME):
            return BuildResult(src, bdir, bdir / LIB_NAME, bdir / RUNNER_NAME, True)
        done.unlink(missing_ok=True)
        (bdir / LIB_NAME).unlink(missing_ok=True)   # relinked, not trusted
        gen.write(src)
        log = _build_units(gen, src, bdir, sanitize, werror)
        (root / "build.log").write_text(log)
        mark_done(root, bdir / LIB_NAME)
    return BuildResult(src, bdir, bdir / LIB_NAME, bdir / RUNNER_NAME, False)
