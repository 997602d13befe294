"""Located diagnostics: every query error names file, line, column and rule.

`GsqlError` is raised by every compiler pass; `render` prints it the way a
user sees it:

    flows.gsql:3:9: error [unknown-field]: no field 'srcIp' in protocol TCP
        select srcIp, count(*)
               ^~~~~
"""
from __future__ import annotations

from typing import Optional

from .ast import NO_SPAN, Span

# Source text of every file the compiler has read, for rendering carets.
_SOURCES: dict[str, str] = {}


def register_source(path: str, text: str) -> None:
    _SOURCES[path] = text


class GsqlError(Exception):
    """A query, schema or usage error, located at `span`.

    `rule` is a short stable identifier of the rule broken (used in tests and
    by users searching the docs), e.g. 'syntax', 'unknown-field',
    'type-mismatch', 'temporal-group-by', 'unknown-function',
    'not-supported-yet'."""

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


def _caret_block(span: Span) -> str:
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
    caret = " " * (col - 1) + "^" + "~" * (width - 1)
    return f"    {src}\n    {caret}\n"


def render(err: GsqlError) -> str:
    out = f"{err.span}: error [{err.rule}]: {err.message}\n"
    out += _caret_block(err.span)
    for span, note in err.notes:
        out += f"{span}: note: {note}\n"
        out += _caret_block(span)
    return out.rstrip("\n")


class UsageError(Exception):
    """A bad option, binding or argument (not located in a query file)."""
