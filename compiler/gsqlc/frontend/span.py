"""Where a piece of source text is: file, line, column (1-based) and end.

Its own module, apart from the AST, so that the errors module (and with it
every face) can locate a diagnostic without loading the AST's classes.
"""
from __future__ import annotations

from ..record import record


@record(frozen=True)
class Span:
    file: str
    line: int
    column: int
    end_line: int = 0
    end_column: int = 0

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


NO_SPAN = Span("<builtin>", 0, 0)
