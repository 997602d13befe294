"""Shared fixtures: how tests reach the gsqlc command, the conformance data
and a per-session build cache."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def shared_dir() -> Path:
    env = os.environ.get("GSQLC_SHARED")
    return Path(env) if env else REPO.parent / "shared"


@pytest.fixture(scope="session", autouse=True)
def _build_cache(tmp_path_factory):
    # Keep compiled query sets of one test session together (and away from
    # the user's cache) unless the caller chose a cache.
    if "GSQLC_CACHE_DIR" not in os.environ:
        os.environ["GSQLC_CACHE_DIR"] = str(tmp_path_factory.mktemp("gsqlc-cache"))
    # Generated code must build warning-free: every build in the tests uses -Werror.
    os.environ["GSQLC_WERROR"] = "1"
    yield


def run_gsqlc(*args: str, input: bytes | None = None, timeout: float = 300,
              env: dict | None = None) -> subprocess.CompletedProcess:
    """Run the gsqlc command as a user would; returns the completed process
    with text stdout/stderr."""
    e = dict(os.environ)
    if env:
        e.update(env)
    return subprocess.run([sys.executable, "-m", "gsqlc", *args], input=input,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=timeout, env=e)


@pytest.fixture
def gsqlc():
    def _run(*args, **kw):
        p = run_gsqlc(*[str(a) for a in args], **kw)
        p.out = p.stdout.decode("utf-8", "replace")
        p.err = p.stderr.decode("utf-8", "replace")
        return p
    return _run
