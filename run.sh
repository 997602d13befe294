#!/usr/bin/env bash
# One entry point for a fresh machine.
#   ./run.sh demo   install everything, compile and run the flow query on the bundled capture
#   ./run.sh test   install everything, lint (ruff), type-check (mypy) and run the whole test suite
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}

need_apt=()
[ -f /usr/include/pcap.h ] || [ -f /usr/include/pcap/pcap.h ] || need_apt+=(libpcap-dev)
command -v g++ >/dev/null || need_apt+=(g++)
command -v tcpdump >/dev/null || need_apt+=(tcpdump)
# Spark (gsqlc.spark, its tests and example) needs a Java 17+ runtime
command -v java >/dev/null || need_apt+=(openjdk-17-jre-headless)
# the readers' coverage-guided fuzzing (fuzz/readers): clang and its libFuzzer runtime
command -v clang-14 >/dev/null || need_apt+=(clang-14 libclang-rt-14-dev)
# the shell completion tests source gsqlc's zsh script in zsh
command -v zsh >/dev/null || need_apt+=(zsh)
# Graphviz draws query plans (gsqlc explain --format dot, the notebooks' plan display)
command -v dot >/dev/null || need_apt+=(graphviz)
if [ ${#need_apt[@]} -gt 0 ]; then
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}"
fi

$PY -m pip install --quiet --disable-pip-version-check cmake ninja
$PY -m pip install --quiet --disable-pip-version-check ".[test]"
# Spark's Python workers run this interpreter, the one that has gsqlc
export PYSPARK_PYTHON=${PYSPARK_PYTHON:-$(command -v "$PY")}

case "${1:-demo}" in
demo)
    exec $PY -m gsqlc run examples/flows.gsql --schema examples/packet_schema.txt \
        --source eth0=pcap:examples/trace.pcap
    ;;
test)
    shift || true
    # lint and type-check first: any ruff finding in the repository's Python files
    # and notebooks (pyproject's extend-exclude leaves out build/, .venv, site and
    # bench/data), or any mypy --strict error in the gsqlc package, fails the run
    $PY -m ruff check .
    (cd compiler && $PY -m mypy --strict --follow-imports=silent gsqlc)
    # one pytest worker per core, at most 4 (pytest-xdist), each file's tests on one
    # worker so that its module fixtures (built query sets) are made once
    jobs=$(nproc 2>/dev/null || echo 1); [ "$jobs" -le 4 ] || jobs=4
    exec $PY -m pytest -q -n "$jobs" --dist loadfile "$@"
    ;;
*)
    echo "usage: $0 demo|test" >&2
    exit 2
    ;;
esac
