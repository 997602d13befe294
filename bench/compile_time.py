#!/usr/bin/env python3
"""The compile path's benchmark (issue 13; a benchmark, not a timed test):

  cold     `gsqlc run` of a five-query set (bench/queries/compile_set.gsql:
           an LFTA selection, an LFTA sub-aggregate under an HFTA aggregate,
           an HFTA aggregate, an HFTA merge and an HFTA join) with no build of
           it in the cache: parse, plan, generate, compile the C/C++ and run
           on a tiny capture.  What gsqlc builds once for every query set (the
           runtime archive, its precompiled headers, the templates' and the
           grammars' compiled forms) is made beforehand, untimed.
  parse    200 small query files parsed in one process (the parser's
           tables built once, before): seconds for the 200
  cached   the start-up of `gsqlc run examples/flows.gsql --schema
           examples/packet_schema.txt` on examples/trace.pcap (the run.sh
           demo) once its build is in the cache: the median of --repeat runs.

    python bench/compile_time.py [--repeat N] [--cold N] [--no-bytecode] [--imports]

Each figure is wall time of a fresh process (`python -m gsqlc ...`), so it
includes the interpreter's own start-up, printed as "python -c pass" for
scale.  Modules are byte-compiled once beforehand into a scratch folder
(PYTHONPYCACHEPREFIX), as an installed package's are; --no-bytecode keeps
PYTHONDONTWRITEBYTECODE as the environment has it.  The machine's load
shows in the figures: they are medians, with the CPU seconds beside them.
--imports adds where a cached run's imports go (python -X importtime, the
median of 5 runs per module).
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
COMPILE_SET = HERE / "queries" / "compile_set.gsql"
EXAMPLES = REPO / "examples"
TRACE = EXAMPLES / "trace.pcap"

COLD_GOAL = 2.0       # seconds: a five-query set compiled with an empty build cache
CACHED_GOAL = 0.15    # seconds: a cached run's start-up

COLD_CMD = ["run", str(COMPILE_SET), "--source", f"pcap:{TRACE}"]
CACHED_CMD = ["run", str(EXAMPLES / "flows.gsql"), "--schema", str(EXAMPLES / "packet_schema.txt"),
              "--source", f"eth0=pcap:{TRACE}"]
# a query set's own entries in the cache: its build (a 24-digit key) and the
# input-keyed entries; everything else is built once for all query sets
_QUERY_SET_ENTRY = re.compile(r"^[0-9a-f]{24}$")
_INPUT_ENTRIES = "inputs"


def _env(cache: Path, bytecode: Path | None) -> dict[str, str]:
    env = dict(os.environ, GSQLC_CACHE_DIR=str(cache))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO / "compiler"),
                                                    os.environ.get("PYTHONPATH", "")) if p)
    if bytecode is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(bytecode)
    return env


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _timed(cmd: list[str], env: dict[str, str], cpu: list[float] | None = None) -> float:
    """Wall seconds of `cmd`; its CPU seconds (the compilers' included) go
    to `cpu`: on a loaded machine they vary less than the wall time."""
    c0, t0 = _cpu(), time.perf_counter()
    p = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stderr}")
    if cpu is not None:
        cpu.append(_cpu() - c0)
    return dt


def _gsqlc(args: list[str]) -> list[str]:
    return [sys.executable, "-m", "gsqlc", *args]


def _forget_query_sets(cache: Path) -> None:
    """Empty the build cache of query sets, keeping what every set shares."""
    for p in cache.iterdir():
        if p.is_dir() and (_QUERY_SET_ENTRY.match(p.name) or p.name == _INPUT_ENTRIES):
            shutil.rmtree(p)


def _import_times(env: dict[str, str], runs: int = 5) -> list[tuple[str, float, float]]:
    """(module, self ms, cumulative ms) of a cached run's imports, medians."""
    seen: dict[str, list[tuple[int, int]]] = {}
    for _ in range(runs):
        p = subprocess.run([sys.executable, "-X", "importtime", "-m", "gsqlc", *CACHED_CMD],
                           env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        for line in p.stderr.splitlines():
            m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \| (\s*)(\S+)", line)
            if m and len(m.group(3)) <= 2:   # imported by the script or one level down
                seen.setdefault(m.group(3) + m.group(4), []).append((int(m.group(1)),
                                                                     int(m.group(2))))
    return [(name, statistics.median(s for s, _ in t) / 1000, statistics.median(c for _, c in t) / 1000)
            for name, t in seen.items()]


def _parse_times(repeat: int) -> list[float]:
    """Seconds to parse 200 small query files, `repeat` times, in this
    process (the parser's tables built before, untimed)."""
    sys.path.insert(0, str(REPO / "compiler"))
    from gsqlc.frontend.parser import parse_query_file
    text = ("DEFINE { query_name 'f'; }\nselect tb, srcIP, count(*) from TCP "
            "where a = 1 and b in [1,2,3] group by time/60 as tb, srcIP")
    parse_query_file("warm.gsql", text)
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for i in range(200):
            parse_query_file(f"f{i}.gsql", text)
        out.append(time.perf_counter() - t0)
    return out


def _line(what: str, seconds: float, goal: float, detail: str) -> str:
    verdict = "met" if seconds < goal else "NOT met"
    return f"{what:<34} {seconds:7.3f} s   goal < {goal:.2f} s ({verdict})   {detail}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=15, help="cached runs timed (median)")
    ap.add_argument("--cold", type=int, default=3, help="cold compiles timed (median; 0: none)")
    ap.add_argument("--no-bytecode", action="store_true",
                    help="do not byte-compile gsqlc's modules beforehand")
    ap.add_argument("--imports", action="store_true",
                    help="also show where a cached run's imports go")
    args = ap.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="gsqlc-compile-time-") as tmp:
        cache = Path(tmp) / "cache"
        bytecode = None if args.no_bytecode else Path(tmp) / "pyc"
        env = _env(cache, bytecode)
        # untimed: what every query set shares, and the modules' bytecode
        _timed(_gsqlc(CACHED_CMD), env)
        bare = statistics.median(_timed([sys.executable, "-c", "pass"], env) for _ in range(5))

        cold: list[float] = []
        cold_cpu: list[float] = []
        for _ in range(args.cold):
            _forget_query_sets(cache)
            cold.append(_timed(_gsqlc(COLD_CMD), env, cold_cpu))
        if not cold:
            _timed(_gsqlc(COLD_CMD), env)    # untimed: the set's build, for the cached figure below
        cached_cpu: list[float] = []
        cached = [_timed(_gsqlc(CACHED_CMD), env, cached_cpu) for _ in range(args.repeat)]
        cached_set = [_timed(_gsqlc(COLD_CMD), env) for _ in range(max(3, args.repeat // 3))]
        imports = _import_times(env) if args.imports else []

    print(f"gsqlc compile path ({os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; "
          f"bytecode {'off' if args.no_bytecode else 'on'}; python -c pass: {bare:.3f} s)")
    if cold:
        print(_line("cold compile, 5-query set", statistics.median(cold), COLD_GOAL,
                    f"median of {len(cold)}: " + ", ".join(f"{t:.2f}" for t in cold)
                    + f"; CPU {statistics.median(cold_cpu):.2f} s"))
    print(_line("cached start-up, flows demo", statistics.median(cached), CACHED_GOAL,
                f"median of {len(cached)} (min {min(cached):.3f}, max {max(cached):.3f}); "
                f"CPU {statistics.median(cached_cpu):.3f} s"))
    print(f"{'(cached start-up, 5-query set)':<34} {statistics.median(cached_set):7.3f} s   "
          f"median of {len(cached_set)}")
    parses = _parse_times(args.repeat)
    print(f"{'parse 200 small query files':<34} {statistics.median(parses):7.3f} s   "
          f"median of {len(parses)}, in one process, the parser built before")
    if imports:
        print("a cached run's imports (ms, self / cumulative; top level and one down):")
        for name, own, cum in sorted(imports, key=lambda t: -t[2])[:16]:
            print(f"  {name:<40} {own:7.1f} {cum:7.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
