"""Parameters changed while a run goes on, from the command line: `gsqlc run
--param-file FILE` and the stand-alone runner's `gsqlc-run --param-file
FILE` read the file again on SIGHUP and hand each value that changed to
the running run (gsqlc_change_param).  Documented in the --param-file help
(runtime_c/tools/run_flags.h), in gsq_runtime.h (gsqlc_change_param, the
nodes' params_changed), in Run.set_param (compiler/gsqlc/runtime/run.py),
in compiler/gsqlc/runtime/param_file.py and in
runtime_c/tools/gsqlc_run_main.c.

Each run reads CSV rows on its standard input, so the instant of a change
is chosen by the test, not by timing: the first part of the rows is
written, the output that proves the run has read all of it is awaited, the
file is rewritten and SIGHUP sent, the line that says the change was taken
is awaited, and only then is the second part written.  The run then waits
idle on its input when the change is queued, and takes it at the top of
its next round, before the second part.  Checked, exactly:

* a selection: the first part filtered with the old value, then the second
  with the new one, line for line; the stats' param_changes entry (its
  records, data time, old and new values), the report's line, the trace's;
* an aggregation reading one parameter in its LFTA (WHERE) and another in
  its HFTA (HAVING), changed together while an epoch is half read: per
  epoch, the answer of a run with the old values up to the epoch of the
  instant and of a run with the new values after it (both computed by
  `gsqlc run` over the whole input) -- no epoch mixes two values;
* a value the run refuses (said with FILE:LINE and the reason the start
  gives for it; the old value kept, the run's answer unchanged); a file
  read again with a line that is not NAME=VALUE, or gone: said, and no
  value taken; such a line at the start: a usage error;
* --param over --param-file: the value the run starts with, whatever the
  order of the flags, kept by a SIGHUP that leaves the file's value alone;
* each through `gsqlc run` and the runner gsqlc-run alike, and (the
  aggregation) through a runner built with ASan and UBSan.
"""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Callable

import pytest

from conftest import SANITIZED_RUN_ENV, build_sanitized, run_gsqlc

SCHEMA = """PROTOCOL PKTS {
    uint time   get_csv_uint_pos1 (increasing, required);
    IP   srcIP  get_csv_ip_pos2;
    uint len    get_csv_uint_pos3;
}
"""
# `seen` reads every row: its output says how far a run has read
QUERIES = """DEFINE { query_name 'sel'; }
PARAM { minlen uint; }
SELECT time, srcIP, len FROM [csv].PKTS WHERE len > $minlen;

DEFINE { query_name 'agg'; }
PARAM { minlen uint; thr ullong; }
SELECT tb, srcIP, count(*) AS n, sum(len) AS bytes FROM [csv].PKTS WHERE len > $minlen
GROUP BY time/10 AS tb, srcIP HAVING count(*) > $thr;

DEFINE { query_name 'seen'; }
SELECT time, srcIP, len FROM [csv].PKTS
"""
EPOCH = 10              # seconds: the aggregation's time/10
SECONDS, PER_SECOND = 100, 20
SPLIT = 55              # the second part starts at this second, inside epoch 5
OLD = {"minlen": "100", "thr": "50"}
NEW = {"minlen": "700", "thr": "25"}
DEADLINE = 300          # seconds: only deadlines (a cold build may come first)
SAID = 60               # for the line that answers a SIGHUP


def make_rows() -> list[tuple[int, str, int]]:
    """(time, srcIP, len): PER_SECOND rows a second, the addresses skewed so
    that some groups pass each HAVING and some do not."""
    rng = random.Random(7)
    ips = ["10.0.0.1"] * 4 + ["10.0.0.2"] * 3 + ["10.0.0.3"] * 2 + ["10.0.0.4"]
    rows = [(t, rng.choice(ips), rng.randrange(0, 1500))
            for t in range(SECONDS) for _ in range(PER_SECOND)]
    # the first part's last row passes every filter: its output line shows
    # that a selection has read the whole first part
    first = SPLIT * PER_SECOND
    t, ip, _ = rows[first - 1]
    rows[first - 1] = (t, ip, 1499)
    return rows


ROWS = make_rows()
PART1, PART2 = ROWS[:SPLIT * PER_SECOND], ROWS[SPLIT * PER_SECOND:]


def csv_text(rows: list[tuple[int, str, int]]) -> str:
    return "".join(f"{t},{ip},{n}\n" for t, ip, n in rows)


def pipe_lines(rows: list[tuple[int, str, int]]) -> list[str]:
    return [f"{t}|{ip}|{n}" for t, ip, n in rows]


def param_text(values: dict[str, str]) -> str:
    return "# the run's parameters\n\n" + "".join(f"{k}={v}\n" for k, v in values.items())


def stats_of(stderr: str) -> dict:
    """The --stats JSON on stderr (after the report; pretty or one line)."""
    at = next(i for i, line in enumerate(stderr.splitlines(True)) if line.startswith("{"))
    text = "".join(stderr.splitlines(True)[at:])
    return json.JSONDecoder().raw_decode(text)[0]


def sanitizer_report(stderr: str) -> bool:
    return "Sanitizer" in stderr or "runtime error" in stderr


# ------------------------------------------------------------ the query sets


@pytest.fixture(scope="module")
def qdir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("param-changes")
    (d / "schema.txt").write_text(SCHEMA)
    (d / "q.gsql").write_text(QUERIES)
    (d / "in.csv").write_text(csv_text(ROWS))
    return d


def agg_rows(lines: list[str]) -> Counter:
    """The aggregation's rows (four fields) of pipe output."""
    return Counter(tuple(line.split("|")) for line in lines if line.count("|") == 3)


def model(values: dict[str, str]) -> Counter:
    """The aggregation's rows over ROWS with these values, in Python."""
    minlen, thr = int(values["minlen"]), int(values["thr"])
    groups: dict[tuple[int, str], list[int]] = {}
    for t, ip, n in ROWS:
        if n > minlen:
            groups.setdefault((t // EPOCH, ip), []).append(n)
    return Counter((str(tb), ip, str(len(ns)), str(sum(ns)))
                   for (tb, ip), ns in groups.items() if len(ns) > thr)


@pytest.fixture(scope="module")
def references(qdir) -> dict[str, Counter]:
    """The aggregation over the whole input with the old and the new values
    fixed: `gsqlc run` over the CSV file (its build then cached for the
    runs of the tests)."""
    out = {}
    for name, values in (("old", OLD), ("new", NEW)):
        p = run_gsqlc("run", str(qdir / "q.gsql"), "--schema", str(qdir / "schema.txt"),
                      "--source", f"csv=csv:{qdir / 'in.csv'}", "--output", "agg",
                      *[a for k, v in values.items() for a in ("--param", f"{k}={v}")],
                      timeout=DEADLINE)
        assert p.returncode == 0, p.stderr.decode()[-3000:]
        out[name] = agg_rows(p.stdout.decode().splitlines())
    assert out["old"] == model(OLD) and out["new"] == model(NEW)
    # each parameter matters, with either value of the other, in the epochs
    # before the split's, in it and after it: taking either change an epoch
    # too early or too late would show
    def cut(rows: Counter, keep: Callable[[int], bool]) -> Counter:
        return Counter({r: n for r, n in rows.items() if keep(int(r[0]))})
    e = (SPLIT - 1) // EPOCH
    for keep in (lambda tb: tb < e, lambda tb: tb == e, lambda tb: tb > e):
        for a, b in ((OLD, {**OLD, "thr": NEW["thr"]}), (OLD, {**OLD, "minlen": NEW["minlen"]}),
                     (NEW, {**NEW, "thr": OLD["thr"]}), (NEW, {**NEW, "minlen": OLD["minlen"]})):
            assert cut(model(a), keep) != cut(model(b), keep), (a, b)
    return out


@pytest.fixture(scope="module")
def runner(qdir) -> Path:
    """The stand-alone runner of the query set (gsqlc compile --build)."""
    p = run_gsqlc("compile", str(qdir / "q.gsql"), "--schema", str(qdir / "schema.txt"),
                  "-o", str(qdir / "rb"), "--build", timeout=DEADLINE)
    assert p.returncode == 0, p.stderr.decode()[-3000:]
    return qdir / "rb" / "build" / "gsqlc-run"


@pytest.fixture(scope="module")
def sanitized_runner(qdir) -> Path:
    return build_sanitized([qdir / "q.gsql", "--schema", qdir / "schema.txt"], qdir / "san")


FACES = ["gsqlc run", "gsqlc-run"]


def command(face: str, qdir: Path, request) -> tuple[list[str], str, dict[str, str]]:
    """The command line of a run reading standard input, the prefix of its
    messages, and its environment."""
    if face == "gsqlc run":
        return ([sys.executable, "-m", "gsqlc", "run", str(qdir / "q.gsql"), "--schema",
                 str(qdir / "schema.txt"), "--source", "csv=csv:-"], "gsqlc", dict(os.environ))
    if face == "gsqlc-run":
        return [str(request.getfixturevalue("runner")), "--source", "csv=csv:-"], "gsqlc-run", \
            dict(os.environ)
    assert face == "sanitized gsqlc-run"
    return ([str(request.getfixturevalue("sanitized_runner")), "--source", "csv=csv:-"],
            "gsqlc-run", dict(os.environ, **SANITIZED_RUN_ENV))


# ------------------------------------------------------------ a live run


class Live:
    """A run fed on its standard input, its stdout and stderr lines gathered
    by threads as they come."""

    def __init__(self, argv: list[str], env: dict[str, str]):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=env)
        self.out: list[str] = []
        self.err: list[str] = []
        self.open = 2
        self.cv = threading.Condition()
        self.threads = [threading.Thread(target=self._gather, args=(s, into), daemon=True)
                        for s, into in ((self.p.stdout, self.out), (self.p.stderr, self.err))]
        for t in self.threads:
            t.start()

    def _gather(self, stream, into: list[str]) -> None:
        for line in iter(stream.readline, ""):
            with self.cv:
                into.append(line.rstrip("\n"))
                self.cv.notify_all()
        with self.cv:
            self.open -= 1
            self.cv.notify_all()

    def write(self, text: str) -> None:
        assert self.p.stdin is not None
        self.p.stdin.write(text)
        self.p.stdin.flush()

    def wait_for(self, what: str, done: Callable[[], bool], deadline: float = DEADLINE) -> None:
        """Until done() (called with the lines so far, under the lock); a
        run that ends first, or the deadline, fails the test."""
        with self.cv:
            ok = self.cv.wait_for(lambda: done() or self.open == 0, deadline) and done()
            if not ok:
                self.p.kill()
                pytest.fail(f"waiting for {what}: status {self.p.poll()}, stderr:\n"
                            + "\n".join(self.err)[-3000:], pytrace=False)

    def hup(self) -> None:
        self.p.send_signal(signal.SIGHUP)

    def finish(self) -> int:
        """Close its input and wait for the end; its status."""
        assert self.p.stdin is not None
        self.p.stdin.close()
        try:
            rc = self.p.wait(DEADLINE)
        except subprocess.TimeoutExpired:
            self.p.kill()
            raise
        for t in self.threads:
            t.join(DEADLINE)
        return rc

    def stderr(self) -> str:
        return "".join(line + "\n" for line in self.err)


def seen_all(live: Live, rows: int) -> Callable[[], bool]:
    """`seen`'s three-field lines, one per row read."""
    return lambda: sum(line.count("|") == 2 for line in live.out) >= rows


def taken(live: Live, prefix: str, pfile: Path, values: dict[str, str]) -> Callable[[], bool]:
    want = [f"{prefix}: parameter ${k}: '{v}' from {pfile} (from the next round of the run)"
            for k, v in values.items()]
    return lambda: all(w in live.err for w in want)


def change_between_parts(live: Live, pfile: Path, values: dict[str, str] | str | None,
                         confirmed: Callable[[], bool],
                         first_read: Callable[[], bool]) -> int:
    """The first part, then (once the run has read it) the file rewritten
    (with these values, this text, or removed: None) and SIGHUP, then (once
    the change is confirmed) the second part; the run's status."""
    live.write(csv_text(PART1))
    live.wait_for("the output of the first part", first_read)
    if values is None:
        pfile.unlink()
    else:
        pfile.write_text(values if isinstance(values, str) else param_text(values))
    live.hup()
    live.wait_for("the answer to SIGHUP", confirmed, SAID)
    live.write(csv_text(PART2))
    return live.finish()


def check_change(event: dict, name: str) -> None:
    """A param_changes entry (stats) or a trace line of the change of $name
    between the parts."""
    assert (event["value"], event["old_value"]) == (NEW[name], OLD[name])
    assert event["records"] == len(PART1)
    assert event["data_usec"] == PART1[-1][0] * 1_000_000
    assert event["round"] > 0 and event["wall_usec"] > 0


def report_line(name: str) -> str:
    return (f"gsqlc: parameter ${name} changed from '{OLD[name]}' to '{NEW[name]}' after "
            f"{len(PART1)} records (data time {PART1[-1][0]}.000000 s)")


# ------------------------------------------------------------ selections


@pytest.mark.parametrize("face", FACES)
def test_a_selection_takes_the_new_value_from_the_next_record(face, qdir, request, tmp_path):
    argv, prefix, env = command(face, qdir, request)
    pfile, trace = tmp_path / "params.txt", tmp_path / "trace.jsonl"
    # (gsqlc run wants every query's parameters, the runner those of its outputs)
    pfile.write_text(param_text(OLD))
    old, new = int(OLD["minlen"]), int(NEW["minlen"])
    want1 = pipe_lines([r for r in PART1 if r[2] > old])
    live = Live([*argv, "--output", "sel", "--param-file", str(pfile), "--stats",
                 "--trace", str(trace)], env)
    rc = change_between_parts(live, pfile, {**OLD, "minlen": NEW["minlen"]},
                              taken(live, prefix, pfile, {"minlen": NEW["minlen"]}),
                              lambda: len(live.out) >= len(want1))
    err = live.stderr()
    assert rc == 0, err
    assert live.out == want1 + pipe_lines([r for r in PART2 if r[2] > new])
    # the stats, the report and the trace say the change and its instant
    (event,) = stats_of(err)["param_changes"]
    assert event["name"] == "minlen"
    check_change(event, "minlen")
    assert report_line("minlen") in err.splitlines()
    lines = [json.loads(line) for line in trace.read_text().splitlines()]
    (traced,) = [line for line in lines if "param" in line]
    assert traced["param"] == "minlen"
    check_change(traced, "minlen")
    assert {k: traced[k] for k in ("round", "records", "data_usec", "wall_usec")} == \
        {k: event[k] for k in ("round", "records", "data_usec", "wall_usec")}


# ------------------------------------------------------------ aggregations


@pytest.mark.parametrize("face", [*FACES, pytest.param("sanitized gsqlc-run",
                                                       marks=pytest.mark.slow)])
def test_an_aggregation_changes_between_epochs(face, qdir, references, request, tmp_path):
    """$minlen (the LFTA's WHERE) and $thr (the HFTA's HAVING) raised
    together while epoch 5 is half read: every epoch up to the instant's
    has the old values' answer, every later one the new values'."""
    argv, prefix, env = command(face, qdir, request)
    pfile = tmp_path / "params.txt"
    pfile.write_text(param_text(OLD))
    live = Live([*argv, "--output", "agg", "--output", "seen", "--param-file", str(pfile),
                 "--stats"], env)
    rc = change_between_parts(live, pfile, NEW, taken(live, prefix, pfile, NEW),
                              seen_all(live, len(PART1)))
    err = live.stderr()
    assert rc == 0, err
    if face.startswith("sanitized"):
        assert not sanitizer_report(err), err[-3000:]
    assert [line for line in live.out if line.count("|") == 2] == pipe_lines(ROWS)
    events = stats_of(err)["param_changes"]
    assert sorted(e["name"] for e in events) == ["minlen", "thr"]
    for e in events:
        check_change(e, e["name"])
        assert report_line(e["name"]) in err.splitlines()
    # the epoch of the instant: the first part's last, the second's first
    estar = events[0]["data_usec"] // 1_000_000 // EPOCH
    assert estar == PART1[-1][0] // EPOCH == PART2[0][0] // EPOCH
    want = Counter({r: n for r, n in references["old"].items() if int(r[0]) <= estar})
    want.update({r: n for r, n in references["new"].items() if int(r[0]) > estar})
    assert sorted(agg_rows(live.out).elements()) == sorted(want.elements())


# ------------------------------------------------------------ refusals


@pytest.mark.parametrize("face", FACES)
def test_a_refused_value_keeps_the_old_one(face, qdir, references, request, tmp_path):
    argv, prefix, env = command(face, qdir, request)
    pfile = tmp_path / "params.txt"
    pfile.write_text(param_text(OLD))
    live = Live([*argv, "--output", "agg", "--output", "seen", "--param-file", str(pfile),
                 "--stats"], env)
    bad = {**OLD, "thr": "abc"}
    reason = "parameter $thr: 'abc' is not a valid ullong"
    # the file's fourth line: the comment, a blank line, minlen, thr
    said = f"{prefix}: error: {pfile}:4: {reason}; the run keeps '{OLD['thr']}'"
    rc = change_between_parts(live, pfile, bad, lambda: said in live.err,
                              seen_all(live, len(PART1)))
    err = live.stderr()
    assert rc == 0, err
    assert [line for line in err.splitlines() if "parameter $" in line] == [said]
    assert stats_of(err)["param_changes"] == []
    assert sorted(agg_rows(live.out).elements()) == sorted(references["old"].elements())
    # the reason is the one the start gives for the same value
    p = subprocess.run([*argv, "--output", "agg", "--param", f"minlen={OLD['minlen']}",
                        "--param", "thr=abc"], stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, env=env, timeout=DEADLINE)
    assert p.returncode == 1 and p.stderr.startswith(f"{prefix}: error: ") and \
        p.stderr.endswith(f": {reason}\n"), p.stderr


@pytest.mark.parametrize("face", FACES)
@pytest.mark.parametrize("case", ["a line not NAME=VALUE", "no file"])
def test_a_file_that_cannot_be_read_again_changes_nothing(face, case, qdir, references, request,
                                                         tmp_path):
    """Read again on SIGHUP, a file with a line that is not NAME=VALUE
    (after the new values) or no file at all: said, and no value taken."""
    argv, prefix, env = command(face, qdir, request)
    pfile = tmp_path / "params.txt"
    pfile.write_text(param_text(OLD))
    live = Live([*argv, "--output", "agg", "--output", "seen", "--param-file", str(pfile),
                 "--stats"], env)
    if case == "no file":
        text = None
        said = f"{prefix}: error: --param-file {pfile}: No such file or directory"
    else:
        text = param_text(NEW) + "thr 25\n"
        said = f"{prefix}: error: {pfile}:5: expected NAME=VALUE, got 'thr 25'"
    said += "; the run keeps its parameters"
    rc = change_between_parts(live, pfile, text, lambda: said in live.err,
                              seen_all(live, len(PART1)))
    err = live.stderr()
    assert rc == 0, err
    assert [line for line in err.splitlines()
            if line.startswith(f"{prefix}: error") or "parameter $" in line] == [said]
    assert stats_of(err)["param_changes"] == []
    assert sorted(agg_rows(live.out).elements()) == sorted(references["old"].elements())


@pytest.mark.parametrize("face", FACES)
def test_a_line_not_name_equals_value_is_a_usage_error(face, qdir, request, tmp_path):
    argv, prefix, env = command(face, qdir, request)
    pfile = tmp_path / "params.txt"
    pfile.write_text("# the run's parameters\nminlen=100\nthr 30\n")
    p = subprocess.run([*argv, "--output", "agg", "--param-file", str(pfile)],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env,
                       timeout=DEADLINE)
    assert (p.returncode, p.stdout) == (2, ""), p.stderr
    assert p.stderr == f"{prefix}: error: {pfile}:3: expected NAME=VALUE, got 'thr 30'\n"


@pytest.mark.parametrize("face", FACES)
def test_a_param_flag_wins_over_the_file(face, qdir, request, tmp_path):
    """--param (given before --param-file, too) sets the value the run
    starts with, and a SIGHUP that leaves the file's value alone keeps it:
    only the value that changed in the file goes to the run."""
    argv, prefix, env = command(face, qdir, request)
    pfile = tmp_path / "params.txt"
    pfile.write_text(param_text(OLD))
    pinned = 1490
    live = Live([*argv, "--param", f"minlen={pinned}", "--param-file", str(pfile),
                 "--output", "sel", "--stats"], env)
    want1 = pipe_lines([r for r in PART1 if r[2] > pinned])
    rc = change_between_parts(live, pfile, {**OLD, "thr": NEW["thr"]},
                              taken(live, prefix, pfile, {"thr": NEW["thr"]}),
                              lambda: len(live.out) >= len(want1))
    err = live.stderr()
    assert rc == 0, err
    assert live.out == pipe_lines([r for r in ROWS if r[2] > pinned])
    (event,) = stats_of(err)["param_changes"]
    assert event["name"] == "thr"
    check_change(event, "thr")
    assert [line for line in err.splitlines() if "parameter $minlen" in line] == []
