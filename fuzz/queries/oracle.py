"""The oracle: compile a fuzzed query set the way users do and classify the outcome.

    outcome = check(case)                       # front end + code generation
    outcome = check(case, build=True)           # ... + the real build (warnings are errors)
    outcome = check(case, build=True, run=True) # ... + a run over its sample input
    outcome = check_cli(case)                   # `gsqlc compile` in a subprocess

Classes:
  ok           compiled (generated; built; ran when asked)
  query-error  a QueryError located inside one of the query files: file, a line
               and column inside its text, a rule name (not 'internal')
  run-error    the run exited 1 with "gsqlc: error: ..." (a run-time failure
               reported as such; counted, not a bug)
  bug          anything else: a traceback (any other exception), an unlocated
               or internal QueryError, a build failure or warning, a signal,
               a hang (time limit), "internal error" from the command line
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from .strategies import REPO, TRACE, Case

OK, QUERY_ERROR, RUN_ERROR, BUG = "ok", "query-error", "run-error", "bug"
_RULE = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")
FRONT_TIMEOUT = 20.0      # seconds for parse .. generate of one set
RUN_TIMEOUT = 60.0


@dataclass
class Outcome:
    kind: str
    detail: str = ""
    rule: str = ""
    stage: str = "front"        # front | build | run | cli

    @property
    def is_bug(self) -> bool:
        return self.kind == BUG


class _Hang(BaseException):
    """Raised by the alarm when one compilation exceeds its time."""


class _alarm:
    def __init__(self, seconds: float):
        self.seconds = seconds
        self.active = False

    def __enter__(self) -> "_alarm":
        import threading
        if threading.current_thread() is threading.main_thread():
            def fire(signum: int, frame: object) -> None:
                raise _Hang()
            self.old = signal.signal(signal.SIGALRM, fire)
            signal.setitimer(signal.ITIMER_REAL, self.seconds)
            self.active = True
        return self

    def __exit__(self, *exc: object) -> None:
        if self.active:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.old)


def _write(case: Case, d: Path) -> tuple[list[str], tuple[str, ...]]:
    files = []
    for name, text in case.files:
        p = d / name
        # bytes exactly as generated (a lone surrogate cannot be written: replaced)
        p.write_bytes(text.encode("utf-8", "surrogatepass"))
        files.append(str(p))
    schema: tuple[str, ...] = ()
    if case.schema is not None:
        s = d / "schema.txt"
        s.write_text(case.schema)
        schema = (str(s),)
    return files, schema


def check_location(err: object, case: Case, files: list[str]) -> Optional[str]:
    """Why a QueryError is not a proper located error (None when it is)."""
    from gsqlc.errors import QueryError
    assert isinstance(err, QueryError)
    if not err.rule or not _RULE.fullmatch(err.rule) or err.rule == "internal":
        return f"bad rule name {err.rule!r}"
    if err.file not in files:
        return f"error located in {err.file!r}, not in a query file"
    text = case.files[files.index(err.file)][1]
    lines = text.split("\n")
    if not 1 <= err.line <= len(lines):
        return f"line {err.line} outside the file's {len(lines)} lines"
    width = len(lines[err.line - 1])
    if not 1 <= err.column <= width + 2:
        return f"column {err.column} outside line {err.line} (length {width})"
    try:
        rendered = str(err)
    except Exception as e:  # noqa: BLE001
        return f"rendering the error raised {type(e).__name__}: {e}"
    if f":{err.line}:{err.column}:" not in rendered or f"[{err.rule}]" not in rendered:
        return f"rendered error lacks its location or rule: {rendered!r}"
    return None


def _classify(exc: BaseException, case: Case, files: list[str], stage: str) -> Outcome:
    from gsqlc.errors import BuildError, QueryError
    if isinstance(exc, _Hang):
        tb = "".join(traceback.format_exception(exc))
        return Outcome(BUG, f"hang: over {FRONT_TIMEOUT:.0f} s\n{tb[-3000:]}", stage=stage)
    if isinstance(exc, QueryError):
        why = check_location(exc, case, files)
        if why is None:
            return Outcome(QUERY_ERROR, str(exc).splitlines()[0], exc.rule, stage)
        return Outcome(BUG, f"unlocated QueryError ({why}): {exc.rule}: {exc.message}",
                       exc.rule, stage)
    if isinstance(exc, BuildError):
        return Outcome(BUG, f"generated code failed to build: {str(exc)[-3000:]}", stage=stage)
    tb = "".join(traceback.format_exception(exc))
    return Outcome(BUG, f"{type(exc).__name__}: {exc}\n{tb[-4000:]}", stage=stage)


def check(case: Case, build: bool = False, run: bool = False) -> Outcome:
    """Compile `case` in process through the pipeline (plan_queries, then the
    generation and build compile_planned does; what `gsqlc compile` runs)."""
    from gsqlc.backend.build import build as build_gen
    from gsqlc.backend.codegen import generate
    from gsqlc.pipeline import CompileOptions, plan_queries
    with tempfile.TemporaryDirectory(prefix="gsqlc-fuzz-") as tmp:
        d = Path(tmp)
        files, schema = _write(case, d)
        opts = CompileOptions(schema, case.library_paths, werror=True)
        stage = "front"
        try:
            with _alarm(FRONT_TIMEOUT):
                qs = plan_queries(files, opts)
                gen = generate(qs.plan)
            if not build:
                return Outcome(OK)
            stage = "build"
            built = build_gen(gen, werror=True)
        except RecursionError as e:
            return _classify(e, case, files, stage)
        except (Exception, _Hang) as e:  # noqa: BLE001 - classified
            return _classify(e, case, files, stage)
        if not run:
            return Outcome(OK, stage="build")
        return run_built(case, files, schema, qs, built.runner, d)


def _bindings(case: Case, qs: object) -> Optional[list[str]]:
    """--source arguments for the set's interfaces, or None when it is not
    cheap to run (interface sets, parameters)."""
    ifaces = qs.interfaces()  # type: ignore[attr-defined]
    if any(params for _, params in qs.summary.queries):  # type: ignore[attr-defined]
        return None
    if case.kind == "pcap":
        uri = f"pcap:{TRACE}"
    elif case.kind == "csv" and case.csv_path:
        uri = f"csv:{case.csv_path}"
    else:
        return None
    return [f"--source={i}={uri}" for i in ifaces]


def gsqlc_command() -> list[str]:
    exe = Path(sys.executable).parent / "gsqlc"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "gsqlc"]


def run_built(case: Case, files: list[str], schema: tuple[str, ...], qs: object,
              runner: Path, d: Path) -> Outcome:
    """`gsqlc run` over the case's sample input, with a time limit."""
    srcs = _bindings(case, qs)
    if srcs is None:
        return Outcome(OK, "not run (parameters or interface sets)", stage="build")
    cmd = gsqlc_command() + ["run", *files, *[f"--schema={s}" for s in schema],
                             *srcs, f"--csv-separator={case.csv_separator}",
                             "--clock=fixed:1409698284",
                             f"--output-file={d / 'out.txt'}"]
    for lp in case.library_paths:
        cmd.append(f"-L{lp}")
    return run_cli(cmd, "run", RUN_TIMEOUT)


def run_cli(cmd: list[str], stage: str, timeout: float) -> Outcome:
    try:
        p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           timeout=timeout, env=os.environ.copy())
    except subprocess.TimeoutExpired:
        return Outcome(BUG, f"hang: `{' '.join(cmd)}` over {timeout:.0f} s", stage=stage)
    err = p.stderr.decode("utf-8", "replace")
    if p.returncode < 0:
        return Outcome(BUG, f"killed by signal {-p.returncode}: {err[-2000:]}", stage=stage)
    if "internal error" in err or "Traceback" in err:
        return Outcome(BUG, f"exit {p.returncode}: {err[-3000:]}", stage=stage)
    if p.returncode == 0:
        return Outcome(OK, stage=stage)
    if p.returncode == 2 and re.search(r":\d+:\d+: error \[[a-z0-9-]+\]", err):
        return Outcome(QUERY_ERROR, err.splitlines()[0], stage=stage)
    if p.returncode in (1, 2) and "gsqlc: error:" in err:
        return Outcome(RUN_ERROR, err.strip().splitlines()[-1][:300], stage=stage)
    return Outcome(BUG, f"exit {p.returncode}: {err[-3000:]}", stage=stage)


def check_cli(case: Case, timeout: float = 120.0) -> Outcome:
    """`gsqlc compile FILES --schema S -o DIR` in a subprocess (what a user
    types); the same classes, from the exit status and stderr."""
    with tempfile.TemporaryDirectory(prefix="gsqlc-fuzz-cli-") as tmp:
        d = Path(tmp)
        files, schema = _write(case, d)
        cmd = gsqlc_command() + ["compile", *files, *[f"--schema={s}" for s in schema],
                                 "-o", str(d / "out")]
        for lp in case.library_paths:
            cmd.append(f"-L{lp}")
        out = run_cli(cmd, "cli", timeout)
        if out.kind == RUN_ERROR:   # `gsqlc compile` has no run: exit 2 must be located
            return Outcome(BUG, f"unlocated error from gsqlc compile: {out.detail}", stage="cli")
        return out


def save_failure(case: Case, outcome: Outcome, folder: Path) -> Path:
    """Write the failing query set and what happened to a file under folder."""
    import hashlib
    folder.mkdir(parents=True, exist_ok=True)
    key = hashlib.sha256(case.describe().encode("utf-8", "surrogatepass")).hexdigest()[:12]
    p = folder / f"bug-{key}.txt"
    p.write_text(f"# {outcome.stage}: {outcome.detail}\n{case.describe()}\n",
                 encoding="utf-8", errors="surrogatepass")
    for name, text in case.files:
        (folder / f"bug-{key}-{name}").write_text(text, encoding="utf-8",
                                                  errors="surrogatepass")
    (folder / f"bug-{key}.json").write_text(json.dumps(dataclasses.asdict(case), indent=1))
    return p


def load_case(path: Path) -> Case:
    """A Case saved by save_failure (its .json), to replay it."""
    d = json.loads(Path(path).read_text())
    d["files"] = tuple(tuple(f) for f in d["files"])
    d["library_paths"] = tuple(d["library_paths"])
    return Case(**d)


__all__ = ["Outcome", "check", "check_cli", "check_location", "save_failure", "load_case",
           "OK", "QUERY_ERROR", "RUN_ERROR", "BUG", "REPO"]
