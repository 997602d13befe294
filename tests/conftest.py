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


def shared_missing() -> str | None:
    """Why the conformance data (../shared beside the clone, or $GSQLC_SHARED)
    cannot be used, or None when it can."""
    manifest = shared_dir() / "conformance" / "tigon" / "cases.tsv"
    if manifest.is_file():
        return None
    return ("no ../shared beside the clone: conformance data absent; set GSQLC_SHARED "
            f"(looked for {manifest})")


def require(module: str):
    """A test dependency the test extras install (DuckDB, the oracle of the
    differential suites): imported; without it a test module is skipped,
    saying so, except under CI (CI=true), where its absence fails it --
    no suite may pass there by skipping its oracle."""
    if os.environ.get("CI", "").lower() == "true":
        import importlib
        return importlib.import_module(module)
    return pytest.importorskip(module)


def pytest_runtest_setup(item):
    # Tests marked needs_shared skip without the conformance data, except in
    # CI (CI=true), where its absence fails them.
    if item.get_closest_marker("needs_shared") is None:
        return
    why = shared_missing()
    if why is None:
        return
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{why} (required under CI=true)", pytrace=False)
    pytest.skip(why)


def sanitizer_imports(path: Path) -> dict[str, list[str]]:
    """The ASan and UBSan entry points a binary or shared library imports
    (its undefined dynamic symbols): instrumented code calls
    __asan_report_*/__asan_init and __ubsan_handle_*."""
    p = subprocess.run(["nm", "-D", "--undefined-only", str(path)], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, check=True)
    names = [line.split()[-1] for line in p.stdout.splitlines() if line.strip()]
    return {"asan": sorted(n for n in names if n.startswith("__asan_")),
            "ubsan": sorted(n for n in names if n.startswith("__ubsan_handle_"))}


def assert_sanitized(path: Path) -> None:
    """`path` was compiled with -fsanitize=address,undefined: it calls the
    ASan checks of loads and stores and the UBSan handlers."""
    imp = sanitizer_imports(path)
    assert "__asan_init" in imp["asan"] and any(n.startswith("__asan_report_load")
                                                 for n in imp["asan"]), (path, imp)
    assert imp["ubsan"], (path, imp)


def assert_not_sanitized(path: Path) -> None:
    imp = sanitizer_imports(path)
    assert imp == {"asan": [], "ubsan": []}, (path, imp)


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


# A sanitized runner's environment: any ASan finding (leaks included) or
# UBSan report ends it with a failure.
SANITIZED_RUN_ENV = {"ASAN_OPTIONS": "abort_on_error=1:detect_leaks=1",
                     "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1"}


def build_sanitized(compile_args: list, out: Path) -> Path:
    """`gsqlc compile ARGS -o out --build --sanitize` as a user runs it (query
    files and options in compile_args); the build must succeed.  Returns
    the stand-alone runner, built with ASan and UBSan."""
    p = subprocess.run([sys.executable, "-m", "gsqlc", "compile", *map(str, compile_args),
                        "-o", str(out), "--build", "--sanitize"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.returncode == 0, p.stderr[-3000:]
    return out / "build" / "gsqlc-run"


def run_sanitized(runner: Path, *args: object) -> subprocess.CompletedProcess:
    """The sanitized runner over args (text output), under SANITIZED_RUN_ENV."""
    return subprocess.run([runner, *map(str, args)], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True,
                          env=dict(os.environ, **SANITIZED_RUN_ENV))


@pytest.fixture
def gsqlc():
    def _run(*args, **kw):
        p = run_gsqlc(*[str(a) for a in args], **kw)
        p.out = p.stdout.decode("utf-8", "replace")
        p.err = p.stderr.decode("utf-8", "replace")
        return p
    return _run


@pytest.fixture(scope="session")
def s3():
    """An S3-compatible server (moto) on loopback with a bucket `gsqlc`:
    (pyarrow S3FileSystem on it, boto3 client, 'host:port')."""
    import boto3
    import pyarrow.fs as pafs
    from moto.server import ThreadedMotoServer
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    client = boto3.client("s3", endpoint_url=f"http://{host}:{port}", region_name="us-east-1",
                          aws_access_key_id="testing", aws_secret_access_key="testing")
    client.create_bucket(Bucket="gsqlc")
    fs = pafs.S3FileSystem(access_key="testing", secret_key="testing", region="us-east-1",
                           endpoint_override=f"{host}:{port}", scheme="http")
    yield fs, client, f"{host}:{port}"
    server.stop()


def put_parquet(client, key: str, table, row_group_size: int) -> None:
    """Store `table` as Parquet under `key` of the s3 fixture's bucket."""
    import io

    import pyarrow.parquet as pq
    buf = io.BytesIO()
    pq.write_table(table, buf, row_group_size=row_group_size)
    client.put_object(Bucket="gsqlc", Key=key, Body=buf.getvalue())
