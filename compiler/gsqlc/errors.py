"""Every error gsqlc raises, under one root, and how a located one is shown.

    GsqlcError                 root: `except gsqlc.GsqlcError` catches them all
      QueryError               a query or schema breaks a rule (located; exit 2)
      UsageError               a bad option, binding or argument (exit 2)
        SettingError           one setting's bad value, named as the face that took it names it
        InterfaceError         a bad interfaces file or binding
        SetupError             the runtime refused an option, source or sink
        TraceError             an unreadable trace file
        GdatError              a gdat:PATH source that is not a GDAT file gsqlc reads
        SparkQueryError        a query or its sources do not suit a Spark run
      RunError                 a run-time failure reported by the library (exit 1)
      ToolchainError           the machine lacks what a build needs: a compiler, cmake (exit 1)
      InternalError            a bug in gsqlc (exit 1, "internal error")
        BuildError             the generated code failed to build

`QueryError` is raised by every compiler pass; `render` prints it the way a
user sees it:

    flows.gsql:3:9: error [unknown-field]: no field 'srcIp' in protocol TCP
        select srcIp, count(*)
               ^~~~~
"""
from __future__ import annotations

from typing import Optional

from .frontend.span import NO_SPAN, Span

# Source text of every file the compiler has read, for rendering carets.
_SOURCES: dict[str, str] = {}


def register_source(path: str, text: str) -> None:
    _SOURCES[path] = text


class GsqlcError(Exception):
    """Root of gsqlc's errors.  `exit_status` is what the CLI exits with."""
    exit_status = 1


class QueryError(GsqlcError):
    """A query, schema or usage error, located at `span`.

    `rule` is a short stable identifier of the rule broken (used in tests and
    by users searching the docs), e.g. 'syntax', 'unknown-field',
    'type-mismatch', 'temporal-group-by', 'unknown-function',
    'not-supported-yet'."""
    exit_status = 2

    def __init__(self, span: Optional[Span], rule: str, message: str,
                 notes: Optional[list[tuple[Span, str]]] = None):
        super().__init__(message)
        self.span = span or NO_SPAN
        self.rule = rule
        self.message = message
        self.notes = notes or []

    @property
    def file(self) -> str:
        return self.span.file

    @property
    def line(self) -> int:
        return self.span.line

    @property
    def column(self) -> int:
        return self.span.column

    def __str__(self) -> str:
        return render(self)


def _caret_block(span: Span, color: bool = False) -> str:
    text = _SOURCES.get(span.file)
    if text is None or span.line <= 0:
        return ""
    lines = text.splitlines()
    if span.line > len(lines):
        return ""
    src = lines[span.line - 1].expandtabs(4)
    raw = lines[span.line - 1]
    # column is 1-based in the raw line; account for tabs expanded before it
    col = len(raw[: max(span.column - 1, 0)].expandtabs(4)) + 1
    width = 1
    if span.end_line == span.line and span.end_column > span.column:
        width = span.end_column - span.column
    caret = " " * (col - 1) + _style("^" + "~" * (width - 1), "caret", color)
    return f"    {src}\n    {caret}\n"


def _style(text: str, part: str, color: bool) -> str:
    if not color:
        return text
    from .terminal import style
    return style(text, part, True)


def render(err: QueryError, color: bool = False) -> str:
    """The error as the CLI shows it; color: with ANSI styles (a terminal)."""
    out = (f"{_style(f'{err.span}:', 'location', color)} {_style('error', 'error', color)} "
           f"{_style(f'[{err.rule}]', 'rule', color)}: {err.message}\n")
    out += _caret_block(err.span, color)
    for span, note in err.notes:
        out += f"{_style(f'{span}:', 'location', color)} {_style('note:', 'note', color)} {note}\n"
        out += _caret_block(span, color)
    return out.rstrip("\n")


class UsageError(GsqlcError):
    """A bad option, binding or argument (not located in a query file)."""
    exit_status = 2


class SettingError(UsageError):
    """A bad value of one named setting (a run option, a parameter, a time
    bound).  The message is `subject` + `rest`; `subject` is the setting as
    the Python API names it ("the heartbeat interval", "max skew eth0") and
    `flag` as the command line does ("--heartbeat-interval", "--max-skew
    eth0"), so that each face says it in its own terms without rewriting
    text."""

    def __init__(self, subject: str, flag: str, rest: str, flag_rest: Optional[str] = None):
        super().__init__(subject + rest)
        self.subject = subject
        self.flag = flag
        self.rest = rest
        self.flag_rest = rest if flag_rest is None else flag_rest

    def in_flags(self) -> str:
        """The message as the command line says it (`flag_rest`: where the
        rest names other settings, e.g. "no --source binds ...")."""
        return self.flag + self.flag_rest


class InterfaceError(UsageError):
    """A bad interfaces file or binding."""


class SetupError(UsageError):
    """The runtime refused an option, a binding or a sink."""


class TraceError(UsageError):
    """A trace file that cannot be read."""


class GdatError(UsageError, ValueError):
    """A file bound as a GDAT source that is not one gsqlc's reader takes;
    the message says why.  Also a ValueError, as it was before it joined
    this hierarchy."""


class SparkQueryError(UsageError):
    """A query or its sources do not suit a Spark run (raised on the driver,
    before any Spark job starts)."""


class RunError(GsqlcError):
    """A run-time failure reported by the library (exit status 1)."""


class ToolchainError(GsqlcError):
    """The machine lacks what building a query set needs (a C and C++
    compiler, cmake): exit status 1, the message says what to install."""


class InternalError(GsqlcError):
    """A bug in gsqlc (not in the user's query): exit status 1, reported as
    "internal error" with the traceback kept for a bug report."""


class BuildError(InternalError):
    """The generated C/C++ failed to build: a bug in gsqlc or a broken
    toolchain."""
