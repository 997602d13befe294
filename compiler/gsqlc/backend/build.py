"""Building: GeneratedSet -> BuildResult (a shared library and a runner,
built with CMake).

Builds are cached by a hash of everything that goes into them (generated
sources, runtime sources, operator templates, build flags): compiling the
same queries again reuses the library.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ..errors import BuildError
from ..resources import cache_root, resource_dir
from .codegen import GeneratedSet

LIB_NAME = "libgsqlc_queryset.so"
RUNNER_NAME = "gsqlc-run"


@dataclass
class BuildResult:
    source_dir: Path
    build_dir: Path
    library: Path
    runner: Path
    cached: bool


def _tree_digest(h, root: Path) -> None:
    for p in sorted(root.rglob("*")):
        # sources and the build files that say how they are built
        if p.is_file() and (p.suffix in (".c", ".h", ".hpp", ".cpp", ".cmake")
                            or p.name == "CMakeLists.txt"):
            h.update(str(p.relative_to(root)).encode() + b"\0")
            h.update(p.read_bytes())


def build_key(gen: GeneratedSet, sanitize: bool, werror: bool) -> str:
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


def werror_default(werror: Optional[bool] = None) -> bool:
    """-Werror when the caller asks for it, or when the environment variable
    GSQLC_WERROR is set (to anything but "" or "0"): the test suite sets it so
    that every build treats warnings as errors."""
    return bool(werror) or os.environ.get("GSQLC_WERROR", "") not in ("", "0")


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
        if not ((root / "done").exists() and lib.exists()):
            log = cmake_build(resource_dir("runtime_c"), root / "build", sanitize, werror)
            (root / "build.log").write_text(log)
            (root / "done").write_text("ok\n")
    return lib


def build(gen: GeneratedSet, out_dir: Optional[Path] = None, sanitize: bool = False,
          werror: Optional[bool] = None) -> BuildResult:
    """Build `gen`.  With out_dir, the sources go there and the build into
    out_dir/build; otherwise into the content-addressed cache.  werror: see
    werror_default (GSQLC_WERROR=1 turns it on)."""
    werror = werror_default(werror)
    if out_dir is not None:
        src = Path(out_dir)
        gen.write(src)
        bdir = src / "build"
        cmake_build(src, bdir, sanitize, werror)
        return BuildResult(src, bdir, bdir / LIB_NAME, bdir / RUNNER_NAME, False)
    key = build_key(gen, sanitize, werror)
    root = cache_root() / key
    root.mkdir(parents=True, exist_ok=True)
    src, bdir = root / "src", root / "build"
    done = root / "done"
    with open(root / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.exists() and (bdir / LIB_NAME).exists():
            return BuildResult(src, bdir, bdir / LIB_NAME, bdir / RUNNER_NAME, True)
        gen.write(src)
        log = cmake_build(src, bdir, sanitize, werror,
                          runtime_lib=runtime_archive(sanitize, werror))
        (root / "build.log").write_text(log)
        done.write_text("ok\n")
    return BuildResult(src, bdir, bdir / LIB_NAME, bdir / RUNNER_NAME, False)
