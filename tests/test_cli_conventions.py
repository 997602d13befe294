"""The command line's conventions (issue 17, part 5): `gsqlc --version`;
diagnostics coloured on a terminal and plain otherwise (NO_COLOR,
FORCE_COLOR, TERM=dumb, --color); shell completion scripts for bash and
zsh that complete subcommands, options and their choices."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from importlib.metadata import version

import pytest

import gsqlc
from conftest import REPO

ESC = "\x1b["
ANSI = re.compile(r"\x1b\[[0-9;]*m")
GSQLC = [sys.executable, "-m", "gsqlc"]


def run_on_tty(args, env=None):
    """gsqlc with its stderr on a pseudo-terminal: (exit status, stderr text)."""
    master, slave = os.openpty()
    try:
        p = subprocess.Popen([*GSQLC, *map(str, args)], stdout=subprocess.DEVNULL, stderr=slave,
                             env=env, cwd=REPO)
        os.close(slave)
        chunks = []
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:      # EIO: the child closed its end
                break
            if not data:
                break
            chunks.append(data)
        rc = p.wait(timeout=120)
    finally:
        os.close(master)
    return rc, b"".join(chunks).decode().replace("\r\n", "\n")


def run_piped(args, env=None):
    p = subprocess.run([*GSQLC, *map(str, args)], capture_output=True, text=True, env=env,
                       cwd=REPO, timeout=120)
    return p.returncode, p.stderr


def env_with(**kw):
    env = {k: v for k, v in os.environ.items()
           if k not in ("NO_COLOR", "FORCE_COLOR", "CLICOLOR_FORCE")}
    env["TERM"] = "xterm-256color"
    env.update(kw)
    return env


@pytest.fixture(scope="module")
def bad_query(tmp_path_factory):
    q = tmp_path_factory.mktemp("color") / "bad.gsql"
    q.write_text("DEFINE { query_name 'bad'; }\nselect srcIp, count(*) from TCP\n"
                 "group by time/60 as tb, srcIP\n")
    return q


def test_version():
    p = subprocess.run([*GSQLC, "--version"], capture_output=True, text=True)
    assert p.returncode == 0
    assert p.stdout.strip() == f"gsqlc {gsqlc.__version__}" == f"gsqlc {version('gsqlc')}"
    assert shutil.which("gsqlc"), "the gsqlc script is installed"
    p = subprocess.run(["gsqlc", "--version"], capture_output=True, text=True)
    assert p.stdout.strip() == f"gsqlc {version('gsqlc')}"


def test_version_has_one_source(tmp_path):
    """pyproject.toml holds no version of its own: the build backend reads
    gsqlc.__version__, so what a wheel's metadata says (`pip show gsqlc`)
    and what `gsqlc --version` prints cannot differ."""
    import tomllib
    meta = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert "version" not in meta["project"] and "version" in meta["project"]["dynamic"]
    assert meta["tool"]["scikit-build"]["metadata"]["version"] == {
        "provider": "scikit_build_core.metadata.regex", "input": "compiler/gsqlc/__init__.py"}
    pytest.importorskip("scikit_build_core")
    p = subprocess.run([sys.executable, "-c", "import sys\n"
                        "from scikit_build_core.build import prepare_metadata_for_build_wheel as m\n"
                        "print(m(sys.argv[1]))", str(tmp_path)],
                       cwd=REPO, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    info = tmp_path / p.stdout.split()[-1]
    lines = (info / "METADATA").read_text().splitlines()
    assert f"Version: {gsqlc.__version__}" in lines
    assert "License: Apache-2.0" in lines
    assert "Classifier: License :: OSI Approved :: Apache Software License" in lines
    assert any(x.startswith("Project-URL: Repository, https://") for x in lines)
    # the license's text goes with the wheel
    assert (info / "licenses" / "LICENSE").read_text() == (REPO / "LICENSE").read_text()
    assert "Apache License\n                           Version 2.0, January 2004" in \
        (REPO / "LICENSE").read_text()


def test_first_build_message_on_a_terminal_only(monkeypatch):
    """The one-time build of the runtime says so once, on a terminal."""
    import io

    from gsqlc.backend import build_cache

    class Terminal(io.StringIO):
        def isatty(self):
            return True
    monkeypatch.setattr(build_cache, "_first_build_told", False)
    piped, tty = io.StringIO(), Terminal()
    assert not build_cache.tell_first_build(piped) and piped.getvalue() == ""
    assert build_cache.tell_first_build(tty)
    assert not build_cache.tell_first_build(tty)    # once a process
    assert tty.getvalue() == build_cache.FIRST_BUILD_MESSAGE + "\n"
    assert build_cache.FIRST_BUILD_MESSAGE == "gsqlc: building the runtime once (about 15 s)..."


def test_first_build_message_through_the_command(tmp_path):
    """gsqlc compile --build into an empty cache: the line comes first on a
    terminal, and not at all through a pipe.  (The only compilers on PATH
    fail at once, so the build stops right after the line.)"""
    q = tmp_path / "q.gsql"
    q.write_text("SELECT time, len FROM IPV4\n")
    tools = tmp_path / "tools"
    tools.mkdir()
    for name in ("cc", "c++"):
        (tools / name).write_text("#!/bin/sh\nexit 1\n")
        (tools / name).chmod(0o755)
    args = ["compile", q, "-o", tmp_path / "out", "--build"]
    env = env_with(GSQLC_CACHE_DIR=str(tmp_path / "cache"), PATH=str(tools), NO_COLOR="1",
                   CC=str(tools / "cc"), CXX=str(tools / "c++"))
    rc, tty = run_on_tty(args, env)
    assert rc != 0 and "failed to build" in tty, tty
    assert tty.splitlines()[0] == "gsqlc: building the runtime once (about 15 s)...", tty
    rc, piped = run_piped(args, env)
    assert rc != 0 and "failed to build" in piped
    assert "building the runtime" not in piped


def test_query_errors_are_coloured_on_a_terminal_only(bad_query):
    args = ["explain", bad_query]
    rc, tty = run_on_tty(args, env_with())
    assert rc == 2
    assert f"{ESC}1;31merror{ESC}0m" in tty and f"{ESC}1;32m^~~~~{ESC}0m" in tty, tty
    assert f"{ESC}1m{bad_query}:2:8:{ESC}0m" in tty
    rc, piped = run_piped(args, env_with())
    assert rc == 2 and ESC not in piped
    assert f"{bad_query}:2:8: error [unknown-field]" in piped
    # the colours add nothing but styles
    assert ANSI.sub("", tty) == piped


@pytest.mark.parametrize("env, flag, coloured", [
    ({"NO_COLOR": "1"}, [], False),
    ({"NO_COLOR": ""}, [], True),           # empty: not set (no-color.org)
    ({"TERM": "dumb"}, [], False),
    ({}, ["--color", "never"], False),
    ({"NO_COLOR": "1"}, ["--color", "always"], True),
])
def test_colour_conventions_on_a_terminal(bad_query, env, flag, coloured):
    rc, err = run_on_tty([*flag, "explain", bad_query], env_with(**env))
    assert rc == 2 and "error [unknown-field]" in ANSI.sub("", err)
    assert (ESC in err) is coloured, err


@pytest.mark.parametrize("env, flag", [({"FORCE_COLOR": "1"}, []), ({}, ["--color", "always"])])
def test_colour_forced_through_a_pipe(bad_query, env, flag):
    rc, err = run_piped([*flag, "explain", bad_query], env_with(**env))
    assert rc == 2 and f"{ESC}1;31merror{ESC}0m" in err


def test_usage_and_run_errors_and_warnings_are_coloured(tmp_path):
    """gsqlc: error: and the run report's gsqlc: warning: lines."""
    rc, err = run_on_tty(["run", REPO / "examples" / "src_counts.gsql", "--source",
                          f"eth0=pcap:{tmp_path / 'missing.pcap'}"], env_with())
    assert rc != 0 and f"gsqlc: {ESC}1;31merror:{ESC}0m" in err, err
    (tmp_path / "s.txt").write_text("PROTOCOL R { uint t get_csv_uint_pos1 (increasing); "
                                    "IP a get_csv_ip_pos2; }\n")
    (tmp_path / "q.gsql").write_text("DEFINE { query_name 'q'; }\nselect t, a from [csv].R\n")
    (tmp_path / "d.csv").write_text("1,10.0.0.1\n2,not-an-ip\n")
    args = ["run", tmp_path / "q.gsql", "--schema", tmp_path / "s.txt", "--source",
            f"csv={tmp_path / 'd.csv'}"]
    rc, err = run_on_tty(args, env_with())
    assert rc == 0 and f"gsqlc: {ESC}1;35mwarning:{ESC}0m" in err and "not a valid IP" in err
    rc, plain = run_piped(args, env_with())
    assert ANSI.sub("", err) == plain and ESC not in plain


def completion_script(shell: str) -> str:
    p = subprocess.run([*GSQLC, "completion", shell], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return p.stdout


def bash_complete(script_path, line: str) -> list[str]:
    """What bash completes for the command line `line` (the cursor at its end)."""
    words = line.split(" ")
    prog = (f"source {script_path}\n"
            f"COMP_LINE={line!r}; COMP_POINT=${{#COMP_LINE}}\n"
            f"COMP_WORDS=({' '.join(repr(w) for w in words)}); COMP_CWORD={len(words) - 1}\n"
            "_shtab_gsqlc gsqlc\n"
            'printf "%s\\n" "${COMPREPLY[@]}"\n')
    p = subprocess.run(["bash", "-c", prog], capture_output=True, text=True, cwd=REPO)
    assert p.returncode == 0, p.stderr
    return [w.strip() for w in p.stdout.splitlines() if w.strip()]


def test_bash_completion(tmp_path):
    script = tmp_path / "gsqlc.bash"
    script.write_text(completion_script("bash"))
    assert set(bash_complete(script, "gsqlc ")) >= {"compile", "run", "explain", "trace",
                                                    "completion"}
    assert bash_complete(script, "gsqlc ru") == ["run"]
    assert set(bash_complete(script, "gsqlc run --ip")) == {"--ip-format"}
    assert set(bash_complete(script, "gsqlc run --ip-format ")) == {"text", "int"}
    assert set(bash_complete(script, "gsqlc explain --format ")) == {"text", "dot"}
    assert "--max-hfta-disorder" in bash_complete(script, "gsqlc run --max-")
    # file arguments complete to files
    assert "examples/src_counts.gsql" in bash_complete(script, "gsqlc run examples/src_c")


@pytest.mark.skipif(shutil.which("zsh") is None, reason="no zsh (run.sh installs it)")
def test_zsh_completion(tmp_path):
    d = tmp_path / "fpath"
    d.mkdir()
    (d / "_gsqlc").write_text(completion_script("zsh"))
    p = subprocess.run(["zsh", "-n", str(d / "_gsqlc")], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    # installed as the docs say (a directory of $fpath): compinit registers it
    prog = (f"fpath=({d} $fpath); autoload -U compinit; compinit -u -d {tmp_path}/zcomp; "
            "print -r -- $_comps[gsqlc]")
    p = subprocess.run(["zsh", "-f", "-c", prog], capture_output=True, text=True,
                       env={**os.environ, "HOME": str(tmp_path)})
    assert p.returncode == 0 and p.stdout.strip() == "_gsqlc", p.stdout + p.stderr
    text = (d / "_gsqlc").read_text()
    for word in ("run", "compile", "explain", "--ip-format", "--schema", "--max-lfta-disorder"):
        assert word in text, word


def test_completion_needs_a_known_shell():
    p = subprocess.run([*GSQLC, "completion", "fish"], capture_output=True, text=True)
    assert p.returncode == 2 and "invalid choice: 'fish'" in p.stderr
