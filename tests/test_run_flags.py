"""The flags of a run's one table (runtime_c/tools/run_flags.h), which both
`gsqlc run` (its argument parser, through gsqlc.runtime.run_flags) and the
stand-alone runner gsqlc-run (compiled from it) read: the table's
invariants, `gsqlc run`'s flags equal to it, and the runner as a user runs
it -- its --help, its defaults (the outputs, the interface) decided as
`gsqlc run` decides them, every shared flag giving what `gsqlc run` gives,
and its usage errors."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, run_gsqlc
from gsqlc.cli import make_parser
from gsqlc.runtime import option_table as ot
from gsqlc.runtime import run_flags as rf

TRACE = REPO / "examples" / "trace.pcap"
QUERIES = """DEFINE { query_name 'big'; }
PARAM { min_len uint; }
SELECT time, srcIP, destIP, len FROM IPV4 WHERE len > $min_len;
DEFINE { query_name 'per_minute'; }
SELECT tb, count(*) as n, sum(len) as bytes FROM IPV4 GROUP BY time/60 as tb
"""
PARAM = ["--param", "min_len=100"]


def _run_parser():
    return make_parser()._subparsers._group_actions[0].choices["run"]


# ------------------------------------------------------------ the table


def test_the_table_is_read_whole():
    flags = rf.flags()
    assert len(flags) == len(rf.parse_table(rf.table_path().read_text())) >= 29
    names = [n for f in flags for n in f.names]
    assert len(names) == len(set(names))
    assert all(f.help and f.name.startswith("--") for f in flags)
    with pytest.raises(ValueError):
        rf.parse_table('GSQ_RUN_FLAG("--x", VALUE("X"), NOPE, BOTH, "x")\n')


def test_every_key_is_a_runtime_option():
    for f in rf.flags():
        if f.action in (rf.OPTION, rf.SWITCH):
            o = ot.find(f.key)
            assert o is not None and o.name == f.key, f
            if f.action == rf.SWITCH:
                assert ot.refusal(o, f.value) is None, f
            if f.arg == rf.CHOICES:
                assert f.choices == o.words, f
        elif f.action == rf.KEYED and f.key:
            opts = [o for o in ot.options().values() if o.name.startswith(f.key)]
            assert opts, f
            # a per-interface option's own prefix, or the hb_ family
            assert all(":" in o.name for o in opts) == f.key.endswith(":"), f
            if f.key.endswith(":"):
                assert [o.prefix for o in opts] == [f.key], f
        elif f.action == rf.OWN:
            assert f.key in {"SOURCE", "MEMBER", "PARAM", "OUTPUT", "OUTPUT_FILE", "FORMAT",
                             "STATS", "CSV_HEADER", "HELP", "PARAM_FILE"}, f


def test_gsqlc_run_takes_the_shared_flags_as_the_table_says():
    actions = {s: a for a in _run_parser()._actions for s in a.option_strings}
    for f in rf.flags():
        if not f.both:   # the runner's own (argparse has a --help of its own)
            assert f.name not in actions or f.key == "HELP", f"{f.name} is the runner's own"
            continue
        a = actions[f.name]
        assert tuple(a.option_strings) == f.names and a.help == f.help.replace("%", "%%")
        assert a.nargs == (0 if f.arg == rf.NO_ARG else None), f
        if f.arg == rf.CHOICES:
            assert tuple(a.choices) == f.choices
        elif f.arg == rf.VALUE:
            assert a.metavar == f.metavar and a.default in (None, [])
    # the refusals of gsqlc run name a flag that sets their option
    for name, face in ot.FACES.items():
        f = rf.find(face.flag)
        assert f is not None and f.both and f.key == name, name


def test_help_speaks_of_gsqlc_alone():
    """No internal words in any --help: papers by their title, no shorthand."""
    texts = [f.help for f in rf.flags()]
    for sub in ("", "compile", "run", "explain", "trace", "completion"):
        p = run_gsqlc(*([sub] if sub else []), "--help")
        assert p.returncode == 0
        texts.append(p.stdout.decode())
    for t in texts:
        for word in ("seed", "issue", "session", "../shared", "L_i", "B_ab", "delta_ab",
                     "Widom 2004"):
            assert word not in t, (word, t[:200])


# ------------------------------------------------------------ the runner


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("runner")
    (d / "q.gsql").write_text(QUERIES)
    p = run_gsqlc("compile", str(d / "q.gsql"), "-o", str(d / "out"), "--build")
    assert p.returncode == 0, p.stderr.decode()[-3000:]
    return d / "q.gsql", d / "out" / "build" / "gsqlc-run"


def _runner(runner: Path, *args) -> subprocess.CompletedProcess:
    return subprocess.run([str(runner), *map(str, args)], capture_output=True, text=True,
                          timeout=120)


def _gsqlc_run(query: Path, *args) -> subprocess.CompletedProcess:
    p = run_gsqlc("run", str(query), *map(str, args))
    return subprocess.CompletedProcess(p.args, p.returncode, p.stdout.decode(), p.stderr.decode())


def test_runner_help(built):
    _, runner = built
    for flag in ("--help", "-h"):
        p = _runner(runner, flag)
        assert (p.returncode, p.stderr) == (0, ""), p.stderr
        assert p.stdout.startswith("usage: gsqlc-run ")
        for f in rf.flags():
            assert f"  {', '.join(f.names)}" in p.stdout, f.name
        assert all(len(line) <= 79 for line in p.stdout.splitlines())
    # answered whatever else the command line holds
    p = _runner(runner, "--output", "--help")
    assert p.returncode == 0 and p.stdout.startswith("usage: gsqlc-run ")


@pytest.mark.parametrize("source", [f"pcap:{TRACE}", f"eth0=pcap:{TRACE}", f"eth0={TRACE}"])
def test_runner_decides_outputs_and_interface_as_gsqlc_run(built, source):
    """No --output: every query no other reads; a URI alone binds the
    default interface, a single NAME is read as it, a path is a capture by
    its first bytes."""
    query, runner = built
    want = _gsqlc_run(query, "--source", source, *PARAM)
    got = _runner(runner, "--source", source, *PARAM)
    assert (got.returncode, want.returncode) == (0, 0), got.stderr + want.stderr
    lines = sorted(got.stdout.splitlines())
    assert lines == sorted(want.stdout.splitlines())
    # both queries' outputs: 4 and 3 fields
    assert {len(line.split("|")) for line in lines} == {3, 4}


# each a set of shared flags, given alike to both commands
SHARED = [
    ["--output", "per_minute", "--format", "csv", "--ip-format", "int"],
    ["--output", "big", "--format", "jsonl", "--ip-format", "int", "--clock", "data",
     "--heartbeat-interval", "2", "--batch", "64", "--columnar", "off", "--prefilter", "off",
     "--pcap-reader", "libpcap", "--stall-intervals", "5", "--max-groups", "100000",
     "--csv-separator", ";", "--csv-strict", "--quiet"],
    ["--max-skew", "eth0=1", "--out-of-order", "eth0=0.5", "--latency", "eth0=1",
     "--heartbeat-timeout", "5", "--heartbeats", "estimate=max", "--heartbeats", "window=50",
     "-q"],
    ["--heartbeat-interval=off", "--output=per_minute"],
]


@pytest.mark.parametrize("flags", SHARED, ids=lambda f: " ".join(f)[:40])
def test_shared_flags_give_what_gsqlc_run_gives(built, flags):
    query, runner = built
    args = ["--source", f"eth0=pcap:{TRACE}", *PARAM, *flags]
    want, got = _gsqlc_run(query, *args), _runner(runner, *args)
    assert (got.returncode, want.returncode) == (0, 0), got.stderr + want.stderr
    assert sorted(got.stdout.splitlines()) == sorted(want.stdout.splitlines())
    assert got.stdout


# a valid value of each flag that takes one (a new flag needs its own here)
SAMPLES = {"--source": f"eth0=pcap:{TRACE}", "--member": "s=eth0", "--output": "big",
           "--output-file": "-", "--param": "min_len=1", "--clock": "wall",
           "--heartbeat-interval": "off", "--max-skew": "eth0=1", "--out-of-order": "eth0=1",
           "--time-unit": "eth0=ms", "--latency": "eth0=1", "--skew": "eth0:eth1=1,2",
           "--heartbeat-timeout": "5", "--heartbeats": "timeout=5", "--batch": "10",
           "--stall-intervals": "4", "--max-groups": "1000", "--trace": "TRACE",
           "--csv-separator": ";", "--option": "batch=20", "--param-file": "PARAMS"}


def test_runner_takes_every_flag_of_the_table(built, tmp_path):
    """Each flag given once, with a valid value: all are taken (the run then
    stops at the first binding that cannot be made, a query named nowhere)."""
    _, runner = built
    args = []
    for f in rf.flags():
        if f.key == "HELP":
            continue
        args.append(f.name)
        if f.arg == rf.CHOICES:
            args.append(f.choices[0])
        elif f.arg == rf.VALUE:
            assert f.name in SAMPLES, f"a sample value of {f.name}"
            args.append(SAMPLES[f.name].replace("TRACE", str(tmp_path / "t.jsonl"))
                        .replace("PARAMS", str(tmp_path / "params.txt")))
    (tmp_path / "params.txt").write_text("# the query's parameter\nmin_len = 1\n")
    p = _runner(runner, *args, "--output", "nowhere")
    assert p.returncode == 2, p.stderr
    assert p.stderr == "gsqlc-run: error: no query named 'nowhere' (queries: big, per_minute)\n"


def test_runner_files_stats_and_trace(built, tmp_path):
    query, runner = built
    out, trace = tmp_path / "big.gdat", tmp_path / "trace.jsonl"
    p = _runner(runner, "--source", f"pcap:{TRACE}", *PARAM, "--output", "big", "--format",
                "gdat", "--output-file", out, "--trace", trace, "--stats")
    assert p.returncode == 0, p.stderr
    assert p.stdout == "" and out.read_bytes().startswith(b"GDAT\n")
    assert trace.stat().st_size > 0
    stats = json.loads(p.stderr[p.stderr.index("{"):])
    assert stats["sinks"] and stats["sources"]
    # gdat is one query's output, as gsqlc run says
    p = _runner(runner, "--source", f"pcap:{TRACE}", *PARAM, "--format", "gdat",
                "--output-file", out)
    assert p.returncode == 2
    assert "--format gdat writes one query's output" in p.stderr
    assert "name one with --output" in p.stderr


def test_runner_ends_quietly_when_the_output_is_closed(built):
    """gsqlc-run ... | head: status 141 and no message, as gsqlc run."""
    _, runner = built
    # twenty members of one set: more output than a pipe holds
    sources = [a for _ in range(20) for a in ("--source", f"eth0={TRACE}")]
    p = subprocess.Popen([str(runner), *sources, "--param", "min_len=0", "--output",
                          "big"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout.readline().count(b"|") == 3
    p.stdout.close()
    assert p.wait(timeout=120) == 141
    assert b"error" not in p.stderr.read()


@pytest.mark.parametrize("args, message", [
    (["--output"], "--output needs a value (QUERY)"),
    (["--format"], "--format needs a value (pipe|csv|jsonl|gdat)"),
    (["--bogus"], "unknown option '--bogus'"),
    (["--threads", "2"], "unknown option '--threads'"),
    (["q.gsql"], "unexpected argument 'q.gsql': gsqlc-run takes options only"),
    (["--format", "xml"], "--format must be pipe, csv, jsonl or gdat, got 'xml'"),
    (["--batch", "0"], "--batch 0: batch must be"),
    (["--max-skew", "eth0"], "--max-skew 'eth0': expected NAME=SECONDS"),
    (["--csv-strict=1"], "--csv-strict takes no value"),
    (["--source", "trace.pcap"], "--source 'trace.pcap': expected NAME=URI"),
    (["--param", "x"], "--param 'x': expected NAME=VALUE"),
])
def test_runner_usage_errors(built, args, message):
    _, runner = built
    p = _runner(runner, *args)
    assert p.returncode == 2, p.stderr
    assert p.stderr.startswith("gsqlc-run: error: ") and message in p.stderr, p.stderr
    assert "missing value after an option" not in p.stderr
