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
import os
import shutil
import subprocess
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from ..errors import BuildError, ToolchainError
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


def build_tool(name: str) -> Optional[str]:
    """A build tool (cmake, ninja) installed beside this interpreter -- the
    pip packages gsqlc depends on, found in a virtual environment that is
    not activated -- or else on PATH."""
    here = Path(sysconfig.get_path("scripts")) / name
    if here.is_file() and os.access(here, os.X_OK):
        return str(here)
    return shutil.which(name)


NO_COMPILER = (
    "no C and C++ compiler found: gsqlc compiles each query set to native code. Install "
    "gcc and g++ (Debian, Ubuntu: apt-get install gcc g++; Fedora: dnf install gcc gcc-c++), "
    "or the compiler the ziglang package ships: pip install 'gsqlc[toolchain]'")


def _zig_wrappers() -> Optional[dict[str, str]]:
    """Scripts running the ziglang package's compiler as cc, c++, ar and
    ranlib (CMake takes a compiler as one program), written once into the
    cache; None without the package."""
    import importlib.util
    spec = importlib.util.find_spec("ziglang")
    if spec is None or spec.origin is None:
        return None
    zig = Path(spec.origin).parent / "zig"
    if not zig.is_file():
        return None
    out = cache_root() / "zig-toolchain"
    out.mkdir(parents=True, exist_ok=True)
    tools = {}
    for name, verb in (("cc", "cc"), ("c++", "c++"), ("ar", "ar"), ("ranlib", "ranlib")):
        script = out / f"zig-{name}"
        text = f'#!/bin/sh\nexec "{zig}" {verb} "$@"\n'
        if not script.is_file() or script.read_text() != text:
            tmp = script.with_suffix(".tmp")
            tmp.write_text(text)
            tmp.chmod(0o755)
            tmp.replace(script)
        tools[name] = str(script)
    return tools


def compiler_args() -> list[str]:
    """CMake arguments choosing the compilers: none where a C and a C++
    compiler are at hand (CC/CXX or PATH: CMake's own choice), else the
    ziglang package's (gsqlc[toolchain]); ToolchainError where there is neither."""
    def have(env: str, *names: str) -> bool:
        return bool(os.environ.get(env)) or any(shutil.which(n) for n in names)
    if have("CC", "cc", "gcc", "clang") and have("CXX", "c++", "g++", "clang++"):
        return []
    zig = _zig_wrappers()
    if zig is None:
        raise ToolchainError(NO_COMPILER)
    return [f"-DCMAKE_C_COMPILER={zig['cc']}", f"-DCMAKE_CXX_COMPILER={zig['c++']}",
            f"-DCMAKE_AR={zig['ar']}", f"-DCMAKE_RANLIB={zig['ranlib']}"]


def bundled_pcap() -> Optional[tuple[Path, Path]]:
    """libpcap as a wheel of gsqlc bundles it -- its headers
    (gsqlc/vendor/pcap/include) and auditwheel's copy of the library
    (gsqlc.libs/libpcap-*.so*) -- or None (a source tree, or a wheel not
    repaired: the system's libpcap-dev)."""
    pkg = Path(__file__).resolve().parent.parent
    include = pkg / "vendor" / "pcap" / "include"
    libs = sorted((pkg.parent / "gsqlc.libs").glob("libpcap*.so*"))
    if (include / "pcap.h").is_file() and libs:
        return include, libs[0]
    return None


def toolchain_args() -> list[str]:
    """The CMake arguments choosing the toolchain: the compilers, and the
    bundled libpcap where there is one (the same copy gsqlc._native loaded)."""
    args = compiler_args()
    pcap = bundled_pcap()
    if pcap is not None:
        args += [f"-DPCAP_INCLUDE_DIR={pcap[0]}", f"-DPCAP_LIBRARY={pcap[1]}"]
    return args


def cmake_build(source_dir: Path, build_dir: Path, sanitize: bool = False,
                werror: bool = False, jobs: int = 2,
                runtime_lib: Optional[Path] = None) -> str:
    """Configure and build a CMake project (a generated query set, or the
    runtime archive); returns the build log."""
    cmake = build_tool("cmake")
    if cmake is None:
        raise ToolchainError("cmake is not installed (pip install cmake, or apt-get install cmake)")
    cfg = [cmake, "-S", str(source_dir), "-B", str(build_dir),
           f"-DGSQLC_RUNTIME_DIR={resource_dir('runtime_c')}",
           f"-DGSQLC_HFTA_DIR={resource_dir('hfta_templates')}",
           f"-DGSQLC_RUNTIME_LIB={runtime_lib or ''}",
           f"-DGSQLC_SANITIZE={'ON' if sanitize else 'OFF'}",
           f"-DGSQLC_WERROR={'ON' if werror else 'OFF'}", *toolchain_args()]
    ninja = build_tool("ninja")
    if ninja and not (build_dir / "CMakeCache.txt").exists():
        cfg += ["-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={ninja}"]
    try:
        log = _run(cfg, source_dir)
    except BuildError as e:
        if "libpcap not found" in str(e):
            raise ToolchainError("libpcap's headers and library were not found: install "
                                 "libpcap-dev (Debian, Ubuntu) or libpcap-devel (Fedora), "
                                 "or gsqlc's wheel, which bundles libpcap") from e
        raise
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
    # another toolchain (the compilers, a bundled libpcap) builds another runtime
    h.update(";".join(toolchain_args()).encode())
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
                         gen.udfs, no_undefined=bool(gen.user_symbols), xdp=gen.xdp)
    # a runtime configured without writing its toolchain: CMake builds
    return cmake_build(src, bdir, sanitize, werror, runtime_lib=runtime)


def build(gen: "GeneratedSet", out_dir: Optional[Path] = None, sanitize: bool = False,
          werror: Optional[bool] = None) -> BuildResult:
    """Build `gen`.  With out_dir, the sources go there and the build into
    out_dir/build; otherwise into the content-addressed cache.  werror: see
    werror_default (GSQLC_WERROR=1 turns it on)."""
    werror = werror_default(werror)
    if gen.xdp:  # before anything is built: what is missing, said plainly
        from .xdp_gen import check_bpf_toolchain
        check_bpf_toolchain([fn for fn, _ in gen.xdp])
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
