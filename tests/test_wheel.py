"""The wheel a user installs: packaging/build_wheel.py builds it (pip wheel,
then auditwheel repair bundling libpcap), pip installs it into a clean
virtual environment, and there it runs the demo

- on a machine without libpcap-dev or libpcap: both hidden in a mount
  namespace (bind mounts over the headers and the library), so a query set
  can only build and load against the copy the wheel bundles;
- with no compiler on PATH: a clear error saying what to install;
- with the ziglang package (`gsqlc[toolchain]`) and still no gcc or g++ on
  PATH: the same rows as the source tree's gsqlc gives.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

pytestmark = pytest.mark.slow

DEMO = ["run", str(REPO / "examples" / "flows.gsql"), "--schema",
        str(REPO / "examples" / "packet_schema.txt"),
        "--source", f"eth0=pcap:{REPO / 'examples' / 'trace.pcap'}"]
# what a machine without libpcap-dev and libpcap would lack
PCAP_FILES = ["/usr/include/pcap.h", "/usr/include/pcap-bpf.h", "/usr/include/pcap-namedb.h"]
PCAP_DIRS = ["/usr/include/pcap"]
PCAP_LIB_GLOBS = ["/usr/lib/*/libpcap.so*", "/usr/lib/libpcap.so*", "/lib/*/libpcap.so*"]


def _pip(venv: Path, *args: str) -> None:
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
                    "--disable-pip-version-check", *args], check=True)


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    """A clean virtual environment with the repaired wheel installed."""
    root = tmp_path_factory.mktemp("wheel")
    out = subprocess.run([sys.executable, str(REPO / "packaging" / "build_wheel.py"),
                          "--out", str(root / "dist")], check=True, capture_output=True,
                         text=True).stdout.strip().splitlines()[-1]
    wheel = Path(out)
    assert "manylinux" in wheel.name, wheel.name
    names = subprocess.run([sys.executable, "-m", "zipfile", "-l", str(wheel)], check=True,
                           capture_output=True, text=True).stdout
    assert "gsqlc.libs/libpcap-" in names and "gsqlc/vendor/pcap/include/pcap.h" in names
    env = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(env)], check=True)
    _pip(env, str(wheel))
    return env


@pytest.fixture(scope="module")
def demo_rows() -> str:
    """The demo's rows from the source tree's gsqlc."""
    p = subprocess.run([sys.executable, "-m", "gsqlc", *DEMO], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert p.stdout.count("\n") > 10
    return p.stdout


def _hide_pcap_script(tmp: Path) -> Path:
    """A shell script running its arguments after bind-mounting /dev/null
    over libpcap's headers and libraries and an empty folder over
    <pcap/...>; run in a mount namespace of its own (unshare -m), so the
    machine's view is unchanged."""
    empty = tmp / "empty"
    empty.mkdir(exist_ok=True)
    mount = shutil.which("mount")    # the script may run with a bare PATH
    lines = ["#!/bin/sh", "set -e"]
    for d in PCAP_DIRS:
        lines.append(f'[ ! -d {d} ] || {mount} --bind "{empty}" {d}')
    files = " ".join(PCAP_FILES + PCAP_LIB_GLOBS)
    lines.append(f'for f in {files}; do [ ! -e "$f" ] || {mount} --bind /dev/null "$f"; done')
    lines.append('exec "$@"')
    script = tmp / "hide_pcap.sh"
    script.write_text("\n".join(lines) + "\n")
    script.chmod(0o755)
    return script


def _bare_env(venv: Path, cache: Path) -> dict[str, str]:
    """No compiler on PATH: the environment's own programs only."""
    return {"HOME": os.environ.get("HOME", "/root"), "PATH": str(venv / "bin"),
            "GSQLC_CACHE_DIR": str(cache), "LC_ALL": "C"}


def _unshare() -> str:
    """unshare's path (a test may run with a bare PATH); skips without it."""
    path = shutil.which("unshare")
    if os.geteuid() != 0 or path is None or shutil.which("mount") is None:
        pytest.skip("hiding libpcap-dev needs root, unshare and mount (a mount namespace)")
    return path


def test_wheel_builds_and_runs_without_libpcap(venv, demo_rows, tmp_path):
    unshare = _unshare()
    hide = _hide_pcap_script(tmp_path)
    # the environment's gsqlc, never a source tree's on PYTHONPATH
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["GSQLC_CACHE_DIR"] = str(tmp_path / "cache")
    # the hiding works: the system's libpcap cannot be linked in there
    probe = tmp_path / "probe.c"
    probe.write_text("#include <pcap.h>\nint main(void) { return pcap_datalink(0); }\n")
    p = subprocess.run([unshare, "-m", str(hide), "cc", str(probe), "-lpcap",
                        "-o", str(tmp_path / "probe")], capture_output=True, text=True)
    assert p.returncode != 0, "libpcap is still visible in the namespace"
    p = subprocess.run([unshare, "-m", str(hide), str(venv / "bin" / "gsqlc"), *DEMO],
                       env=env, capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout == demo_rows
    toolchain = next((tmp_path / "cache").glob("runtime-*/build/gsqlc_toolchain.txt")).read_text()
    assert "gsqlc.libs/libpcap-" in toolchain and "gsqlc/vendor/pcap/include" in toolchain


def test_no_compiler_says_what_to_install(venv, tmp_path):
    env = _bare_env(venv, tmp_path / "cache")
    p = subprocess.run([str(venv / "bin" / "gsqlc"), *DEMO], env=env, capture_output=True,
                       text=True, cwd=tmp_path)
    assert p.returncode == 1
    assert p.stdout == ""
    assert p.stderr.startswith("gsqlc: error: no C and C++ compiler found"), p.stderr
    assert "apt-get install gcc g++" in p.stderr and "gsqlc[toolchain]" in p.stderr
    assert "internal error" not in p.stderr
    # the Python API raises the same, as a ToolchainError
    code = ("import gsqlc, sys\n"
            f"try:\n    gsqlc.compile([{str(REPO / 'examples' / 'flows.gsql')!r}], "
            f"schema={str(REPO / 'examples' / 'packet_schema.txt')!r})\n"
            "except gsqlc.ToolchainError as e:\n    print(type(e).__name__, e)\n")
    p = subprocess.run([str(venv / "bin" / "python"), "-c", code], env=env,
                       capture_output=True, text=True, cwd=tmp_path)
    assert p.stdout.startswith("ToolchainError no C and C++ compiler found"), p.stdout + p.stderr


def test_ziglang_compiles_where_there_is_no_gcc(venv, demo_rows, tmp_path):
    unshare = _unshare()
    _pip(venv, "ziglang>=0.13")
    env = _bare_env(venv, tmp_path / "cache")
    hide = _hide_pcap_script(tmp_path)
    p = subprocess.run([unshare, "-m", str(hide), str(venv / "bin" / "gsqlc"), *DEMO],
                       env=env, capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout == demo_rows
    toolchain = next((tmp_path / "cache").glob("runtime-*/build/gsqlc_toolchain.txt")).read_text()
    assert "c_compiler=" + str(tmp_path / "cache" / "zig-toolchain" / "zig-cc") in toolchain
