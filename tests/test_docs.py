"""The documentation holds: the site (mkdocs.yml, docs/) builds with warnings
as errors, its generated reference names every function of the catalog and
every option of the command line, and every shell example of README.md and
docs/ that shows its output gives that output.

A shell example is a fenced block with lines starting `$ `: each such line
is a command (a line ending in `\\` continues on the next), run from the
repository's root through `bash -o pipefail -c` with `gsqlc` and `python` on
PATH, and the lines after it up to the next command are its stdout, compared
exactly (trailing blank lines aside); a line `...` stands for any number of
lines.  It must exit 0, or 141 where a command before `| head` lost its
reader (SIGPIPE: what pipefail reports for `| head` at random).  A block
that must not run says so: a fence info string `console-no-check`, or
`<!-- no-check: reason -->` on the line before it.
"""
from __future__ import annotations

import argparse
import html
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import pytest

from conftest import REPO

DOC_FILES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`\s]*)")
NO_CHECK = re.compile(r"^\s*<!--\s*no-check:\s*(?P<reason>\S.*?)\s*-->\s*$")
NO_CHECK_INFO = "console-no-check"
SIGPIPE_STATUS = 128 + 13


@dataclass
class Command:
    line: int                  # 1-based line of its `$ `
    text: str                  # the command, continuation lines joined
    expected: list[str]        # the output shown


@dataclass
class Example:
    path: Path
    line: int                  # 1-based line of the opening fence
    commands: list[Command] = field(default_factory=list)
    skip: Optional[str] = None

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"


def _commands(body: list[tuple[int, str]]) -> list[Command]:
    out: list[Command] = []
    i = 0
    while i < len(body):
        no, text = body[i]
        i += 1
        if not text.startswith("$ "):
            if out:
                out[-1].expected.append(text)
            elif text.strip():
                raise ValueError(f"line {no}: output before the first `$ ` command")
            continue
        cmd = text[2:]
        while cmd.endswith("\\") and i < len(body):
            cmd = cmd[:-1] + " " + body[i][1].lstrip().removeprefix("> ")
            i += 1
        out.append(Command(no, cmd, []))
    for c in out:
        while c.expected and not c.expected[-1].strip():
            c.expected.pop()
    return out


def shell_examples(path: Path) -> list[Example]:
    """The fenced blocks of a Markdown file that hold `$ ` commands."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Example] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = m.group("indent"), m.group("fence"), m.group("info")
        start = i
        body: list[tuple[int, str]] = []
        i += 1
        while i < len(lines):
            stripped = lines[i].strip()
            if stripped.startswith(fence[0] * len(fence)) and not stripped.strip(fence[0]):
                break
            text = lines[i]
            body.append((i + 1, text[len(indent):] if text.startswith(indent) else text.lstrip()))
            i += 1
        i += 1
        if not any(t.startswith("$ ") for _, t in body):
            continue
        skip = None
        before = next((lines[k] for k in range(start - 1, -1, -1) if lines[k].strip()), "")
        nc = NO_CHECK.match(before)
        if nc:
            skip = nc.group("reason")
        elif info == NO_CHECK_INFO:
            skip = f"fenced as {NO_CHECK_INFO}"
        found.append(Example(path, start + 1, _commands(body), skip))
    return found


def all_examples() -> list[Example]:
    return [e for p in DOC_FILES for e in shell_examples(p)]


def output_matches(expected: list[str], actual: list[str]) -> bool:
    """Whether actual is expected, where a line `...` stands for any number
    (zero too) of lines."""
    memo: dict[tuple[int, int], bool] = {}

    def at(i: int, j: int) -> bool:
        if (i, j) not in memo:
            if i == len(expected):
                r = j == len(actual)
            elif expected[i] == "...":
                r = at(i + 1, j) or (j < len(actual) and at(i, j + 1))
            else:
                r = j < len(actual) and expected[i] == actual[j] and at(i + 1, j + 1)
            memo[(i, j)] = r
        return memo[(i, j)]
    return at(0, 0)


def test_output_matching():
    assert output_matches(["a", "...", "d"], ["a", "b", "c", "d"])
    assert output_matches(["a", "...", "b"], ["a", "b"])
    assert output_matches(["..."], [])
    assert not output_matches(["a", "...", "d"], ["a", "b", "c"])
    assert not output_matches(["a", "b"], ["a", "b", "c"])


def test_example_extraction(tmp_path):
    md = tmp_path / "x.md"
    md.write_text("text\n\n```console\n$ echo a \\\n  b\na b\n\n$ true\n```\n\n"
                  "<!-- no-check: needs a live interface -->\n  ```\n  $ gsqlc run x\n  ```\n"
                  "```console-no-check\n$ echo\n```\n```\nno commands\n```\n")
    ex = shell_examples(md)
    assert [(e.line, e.skip) for e in ex] == [(3, None), (12, "needs a live interface"),
                                             (15, "fenced as console-no-check")]
    assert [(c.line, c.text, c.expected) for c in ex[0].commands] == [
        (4, "echo a  b", ["a b"]), (8, "true", [])]


EXAMPLES = all_examples()
CHECKED = [e for e in EXAMPLES if e.skip is None]


def test_examples_are_found():
    skipped = [e for e in EXAMPLES if e.skip is not None]
    commands = sum(len(e.commands) for e in CHECKED)
    print(f"\n{len(CHECKED)} shell examples checked ({commands} commands), "
          f"{len(skipped)} skipped:")
    for e in skipped:
        print(f"  {e.id}: {e.skip}")
    # the README's tour and the tutorial at least: finding none means the
    # extraction is broken, not that there is nothing to check
    assert len(CHECKED) >= 10
    assert any(e.path.name == "README.md" for e in CHECKED)


def test_readme_python_tour_is_the_example():
    """The README's Python tour is docs/examples/quickstart.py verbatim, so the
    shell example after it (which runs that file) checks its output."""
    code = (REPO / "docs" / "examples" / "quickstart.py").read_text(encoding="utf-8")
    assert f"```python\n{code}```" in (REPO / "README.md").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def shell_env(tmp_path_factory) -> dict:
    """The environment of the examples: `gsqlc` and `python` are this
    interpreter's, the locale is C (sort), no colour."""
    bin_dir = tmp_path_factory.mktemp("docs-bin")
    for name, args in (("gsqlc", "-m gsqlc"), ("python", ""), ("python3", "")):
        exe = bin_dir / name
        exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" {args} "$@"\n')
        exe.chmod(0o755)
    env = dict(os.environ)
    env.update(PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", LC_ALL="C", NO_COLOR="1",
               COLUMNS="100")
    env.pop("FORCE_COLOR", None)
    # the examples' files in /tmp/gsqlc-docs-* go to this session's own
    # folder, so that two test sessions on one machine cannot mix them
    env["GSQLC_DOCS_TMP"] = str(tmp_path_factory.mktemp("docs-tmp"))
    return env


def _own_tmp(text: str, env: dict) -> str:
    return text.replace("/tmp/gsqlc-docs-", env["GSQLC_DOCS_TMP"] + "/gsqlc-docs-")


@pytest.mark.parametrize("example", CHECKED, ids=[e.id for e in CHECKED])
def test_shell_example(example: Example, shell_env):
    for c in example.commands:
        p = subprocess.run(["bash", "-o", "pipefail", "-c", _own_tmp(c.text, shell_env)],
                           cwd=REPO, env=shell_env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=600)
        where = f"{example.path.relative_to(REPO)}:{c.line}: $ {c.text}"
        # 141 is SIGPIPE's: a command before `| head` whose reader went away
        # (gsqlc's own documented status for it), which pipefail reports
        assert p.returncode in (0, SIGPIPE_STATUS), \
            f"{where}\nexit status {p.returncode}\n{p.stderr}"
        actual = p.stdout.splitlines()
        while actual and not actual[-1].strip():
            actual.pop()
        actual = [line.replace(shell_env["GSQLC_DOCS_TMP"] + "/", "/tmp/") for line in actual]
        assert output_matches(c.expected, actual), (
            f"{where}\n--- shown\n" + "\n".join(c.expected) + "\n--- output\n" +
            "\n".join(actual))


# ------------------------------------------------------------ the site


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site built with warnings as errors (mkdocs build --strict)."""
    try:
        import mkdocs  # noqa: F401
        import mkdocstrings  # noqa: F401
    except ImportError as e:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"the docs tools are not installed ({e}): pip install '.[docs]'")
        pytest.skip(f"the docs tools are not installed ({e}): pip install '.[docs]'")
    out = tmp_path_factory.mktemp("site")
    # NO_MKDOCS_2_WARNING: Material for MkDocs' banner about MkDocs 2.0 (not a build warning)
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    p = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--clean",
                        "-f", str(REPO / "mkdocs.yml"), "-d", str(out)], cwd=REPO, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    assert p.returncode == 0, p.stdout
    assert "WARNING" not in p.stdout, p.stdout
    return out


def _page(site: Path, name: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", (site / name / "index.html").read_text()))


def _html(site: Path, name: str) -> str:
    return html.unescape((site / name / "index.html").read_text())


def test_function_reference_names_the_catalog(site):
    from gsqlc.semantics import catalog
    text = _html(site, "language")
    missing = [f.name for f in catalog.SCALARS.values() if f"<td><code>{f.name}</code></td>" not in text]
    missing += [a.name for a in catalog.AGGREGATES.values() if f"<td><code>{a.name}(x)</code>" not in text]
    assert not missing, f"functions missing from the generated list: {missing}"
    for f in catalog.SCALARS.values():
        row = text[text.index(f"<td><code>{f.name}</code></td>"):]
        row = row[:row.index("</tr>")]
        assert f.doc in row
        assert ("HFTA only" in row) == (not f.lfta_legal)


def test_cli_reference_names_every_option(site):
    from gsqlc.cli import make_parser
    text = _html(site, "cli")
    ap = make_parser()
    subs = [a for a in ap._actions if isinstance(a, argparse._SubParsersAction)]
    assert subs
    missing = []
    for name, parser in subs[0].choices.items():
        start = text.index(f'<h3 id="gsqlc-{name}">')
        section = text[start:text.find("</table>", start)]
        for a in parser._actions:
            if isinstance(a, argparse._HelpAction) or a.help is argparse.SUPPRESS:
                continue
            for opt in a.option_strings:
                if f"<code>{opt}</code>" not in section:
                    missing.append(f"{name} {opt}")
            if a.help and a.option_strings and a.help.split("%")[0] not in section:
                missing.append(f"{name} {a.option_strings[0]}: its help")
    assert not missing, f"options missing from the generated CLI reference: {missing}"


def test_api_pages_document_the_entry_points(site):
    python = _page(site, "python")
    for name in ("compile", "CompiledQuerySet", "Run", "read_pcap", "QueryError", "UsageError",
                 "RunError", "GsqlcError", "InternalError"):
        assert f"{name}" in python, name
    assert "Parse, analyze, plan, generate and build" in python   # compile's docstring
    spark = _page(site, "spark")
    for name in ("run_query", "read_csv", "read_parquet", "read_pcap", "read_stream",
                 "MalformedRows"):
        assert name in spark, name


def test_time_management_page_names_every_setting(site):
    from gsqlc.runtime import interfaces
    text = _page(site, "time-management")
    keys = (*interfaces._IFACE_KEYS, *interfaces._SKEW_KEYS, *interfaces._HB_KEYS,
            *interfaces.ESTIMATES, *interfaces.LEVELS, *interfaces.TIME_UNITS)
    assert not [k for k in keys if k not in text]
