"""The long fuzzing run.

    python -m fuzz.queries.run --minutes 10            # from the repository root
    python fuzz/queries/run.py --minutes 10 --out fuzz-failures

Draws query sets from the strategies (grammar-generated, mostly valid, and
mutations of real queries) in rounds of hypothesis examples, each round with
its own seed, until the time is up.  Every set goes through the front end and
code generation; a sample of those that compile is also built (warnings are
errors) and run over its sample input (examples/trace.pcap or a CSV), and a
sample goes through `gsqlc compile` in a subprocess.  Prints the examples
tried, the outcomes by class and rule, and the bugs, each saved to a file
under --out.  Exit status 1 when a bug was found.
"""
from __future__ import annotations

import argparse
import collections
import os
import random
import re
import sys
import tempfile
import time
import warnings
from pathlib import Path

if __package__ in (None, ""):    # run as a script: make `fuzz.queries` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from hypothesis import HealthCheck, given, seed, settings  # noqa: E402

from fuzz.queries import oracle  # noqa: E402
from fuzz.queries.strategies import Case, any_case  # noqa: E402


def _bug_key(o: oracle.Outcome) -> str:
    frames = re.findall(r'gsqlc/([\w/]+\.py)", line (\d+)', o.detail)
    first = o.detail.splitlines()[0][:120] if o.detail else o.kind
    compiler = re.search(r"(?:error|warning): (.*)", o.detail) if o.stage == "build" else None
    if compiler:   # the C/C++ compiler's first complaint, without its code
        first = "build: " + re.sub(r"[‘’'][^‘’']*[‘’']", "..", compiler.group(1))[:120]
    first = re.sub(r"'[^']*'|/tmp/\S+", "..", first)
    return f"{o.stage}: {first}" + (f" @ {frames[-1][0]}:{frames[-1][1]}" if frames else "")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--out", default="fuzz-failures", help="folder for failing query sets")
    ap.add_argument("--build-every", type=int, default=25,
                    help="build and run one in N sets that compile (0: never)")
    ap.add_argument("--cli-every", type=int, default=60,
                    help="send one in N sets through `gsqlc compile` (0: never)")
    ap.add_argument("--round", type=int, default=200, help="examples per hypothesis round")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--replay", nargs="+", metavar="JSON",
                    help="check saved failures (bug-*.json) again, built and run, and stop")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    if args.replay:
        bad = 0
        for p in args.replay:
            case = oracle.load_case(Path(p))
            o = oracle.check(case, build=True, run=True)
            if o.kind == oracle.OK:
                o = oracle.check_cli(case)
            bad += o.is_bug
            print(f"{p}: {o.stage}:{o.kind} {o.detail[:2000]}")
        return 1 if bad else 0
    if "GSQLC_CACHE_DIR" not in os.environ:   # builds away from the user's cache
        os.environ["GSQLC_CACHE_DIR"] = tempfile.mkdtemp(prefix="gsqlc-fuzz-cache-")
    out = Path(args.out)
    deadline = time.monotonic() + args.minutes * 60
    rng = random.Random(args.seed)
    counts: collections.Counter[str] = collections.Counter()
    rules: collections.Counter[str] = collections.Counter()
    origins: collections.Counter[str] = collections.Counter()
    bugs: dict[str, tuple[int, Path]] = {}
    state = {"ok": 0, "tried": 0}

    def record(case: Case, o: oracle.Outcome) -> None:
        counts[f"{o.stage}:{o.kind}"] += 1
        if o.kind == oracle.QUERY_ERROR and o.stage == "front":
            rules[o.rule] += 1
        if o.kind == oracle.RUN_ERROR:
            print(f"  run error (not a bug): {o.detail}", flush=True)
        if o.is_bug:
            key = _bug_key(o)
            n, path = bugs.get(key, (0, Path()))
            if n == 0:
                path = oracle.save_failure(case, o, out)
                print(f"BUG {key}\n  saved to {path}", flush=True)
            bugs[key] = (n + 1, path)

    @settings(max_examples=args.round, deadline=None, database=None,
              suppress_health_check=list(HealthCheck), derandomize=False)
    @given(any_case())
    def one(case: Case) -> None:
        if time.monotonic() > deadline:
            return
        state["tried"] += 1
        origins[case.origin.split(":")[0]] += 1
        o = oracle.check(case)
        record(case, o)
        if o.kind != oracle.OK:
            return
        state["ok"] += 1
        if args.build_every and state["ok"] % args.build_every == 0:
            record(case, oracle.check(case, build=True, run=True))
        if args.cli_every and state["ok"] % args.cli_every == 0:
            record(case, oracle.check_cli(case))

    start = time.monotonic()
    rounds = 0
    while time.monotonic() < deadline:
        seed(rng.randrange(2**32))(one)()
        rounds += 1
        el = time.monotonic() - start
        print(f"[{el / 60:5.1f} min] round {rounds}: {state['tried']} examples, "
              f"{sum(n for n, _ in bugs.values())} bugs", flush=True)

    print(f"\nexamples tried: {state['tried']} in {(time.monotonic() - start) / 60:.1f} min "
          f"({', '.join(f'{k} {v}' for k, v in origins.most_common())})")
    print("outcomes by class (stage:class):")
    for k, v in sorted(counts.items()):
        print(f"  {k:24} {v}")
    print("front-end query errors by rule:")
    for k, v in rules.most_common():
        print(f"  {k:24} {v}")
    print(f"bugs found: {sum(n for n, _ in bugs.values())} ({len(bugs)} distinct)")
    for k, (n, p) in bugs.items():
        print(f"  {n:5}  {k}\n         {p}")
    return 1 if bugs else 0


if __name__ == "__main__":
    sys.exit(main())
