"""Coverage-guided fuzzing of the C input readers (fuzz/readers/): the
memory-mapped pcap / pcapng reader with the packet decoder, the CSV source,
and the Arrow C data interface import, each a libFuzzer harness built with
clang, AddressSanitizer and UndefinedBehaviorSanitizer from the runtime's own
sources (fuzz/readers/build.sh).  The whole corpus in the repo (seeds,
minimised fuzzing results and the reproducers of fixed bugs) is replayed,
then each target is fuzzed for a short, bounded time with a fixed seed: any
crash, sanitizer finding, leak or timeout fails.  Long runs:
fuzz/readers/run.sh TARGET|all SECONDS."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from conftest import REPO

pytestmark = pytest.mark.slow  # a clang build and ~50 s of fuzzing

FUZZ = REPO / "fuzz" / "readers"
TARGETS = ["pcap", "csv", "arrow"]
FUZZ_SECONDS = 15
ENV_OPTS = {"ASAN_OPTIONS": "abort_on_error=0:detect_leaks=1",
            "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1"}


@pytest.fixture(scope="module")
def harnesses(tmp_path_factory):
    if shutil.which("clang-14") is None:
        pytest.skip("clang-14 is not installed (Debian: apt-get install clang-14 "
                    "libclang-rt-14-dev, the libFuzzer runtime)")
    out = tmp_path_factory.mktemp("fuzz_readers")
    p = subprocess.run(["bash", str(FUZZ / "build.sh"), str(out), *TARGETS],
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stdout + p.stderr
    return out


def _run(binary, *args, cwd):
    env = dict(os.environ, **ENV_OPTS)
    return subprocess.run([str(binary), *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=600)


def _artifacts(d):
    return sorted(p.name for p in d.iterdir()
                  if p.name.split("-")[0] in ("crash", "leak", "timeout", "oom"))


@pytest.mark.parametrize("target", TARGETS)
def test_corpus_replays_clean(harnesses, tmp_path, target):
    corpus = FUZZ / "corpus" / target
    files = sorted(p for p in corpus.iterdir() if p.is_file())
    assert len(files) >= 5, f"corpus/{target} has only {len(files)} files"
    # reproducers of the bugs found so far are part of the corpus
    if target == "arrow":
        assert any(p.name.startswith("repro_") for p in files)
    r = _run(harnesses / f"fuzz_{target}", "-runs=0", f"-artifact_prefix={tmp_path}/",
             corpus, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-4000:]
    assert "ERROR:" not in r.stderr and "runtime error" not in r.stderr, r.stderr[-4000:]
    assert not _artifacts(tmp_path)


@pytest.mark.parametrize("target", TARGETS)
def test_fuzz_briefly(harnesses, tmp_path, target):
    # fuzz a copy of the corpus (the repo's is not changed) for a bounded time
    work = tmp_path / "corpus"
    shutil.copytree(FUZZ / "corpus" / target, work)
    r = _run(harnesses / f"fuzz_{target}", f"-max_total_time={FUZZ_SECONDS}", "-seed=12345",
             "-timeout=20", "-rss_limit_mb=2048", "-print_final_stats=1",
             f"-artifact_prefix={tmp_path}/", work, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-4000:]
    assert not _artifacts(tmp_path), r.stderr[-4000:]
    execs = [int(l.rsplit(":", 1)[1]) for l in r.stderr.splitlines()
             if l.startswith("stat::number_of_executed_units:")]
    assert execs and execs[0] > 1000, r.stderr[-2000:]
