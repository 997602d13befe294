"""What the CLI writes to a terminal: whether to colour a stream, and the
styles of its diagnostics.

Colour follows the usual conventions, first match wins: `--color always` /
`never`; NO_COLOR set to anything non-empty (no-color.org) turns it off;
FORCE_COLOR or CLICOLOR_FORCE non-empty turns it on; TERM=dumb turns it off;
otherwise colour when the stream is a terminal.
"""
from __future__ import annotations

import os
from typing import IO, Any, Optional

COLOR_MODES = ("auto", "always", "never")

# ANSI SGR codes of the diagnostics' parts (as gcc and rustc colour them)
_STYLES = {
    "location": "1",        # bold
    "error": "1;31",        # bold red
    "warning": "1;35",      # bold magenta
    "note": "1;36",         # bold cyan
    "caret": "1;32",        # bold green
    "rule": "2",            # dim
}


def is_dumb_terminal() -> bool:
    return os.environ.get("TERM", "") == "dumb"


def no_color_asked() -> bool:
    """NO_COLOR set to anything but the empty string (no-color.org)."""
    return bool(os.environ.get("NO_COLOR"))


def use_color(stream: IO[Any], mode: str = "auto") -> bool:
    """Whether to colour what is written to `stream` (module docstring)."""
    if mode == "always":
        return True
    if mode == "never" or no_color_asked():
        return False
    if os.environ.get("FORCE_COLOR") or os.environ.get("CLICOLOR_FORCE"):
        return True
    if is_dumb_terminal():
        return False
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:   # a closed stream
        return False


def style(text: str, part: str, on: bool) -> str:
    """text in the style of diagnostic part `part` when `on`."""
    if not on or not text:
        return text
    return f"\x1b[{_STYLES[part]}m{text}\x1b[0m"


def color_report_line(line: str, on: bool) -> str:
    """A line of a run's report ("gsqlc: warning: ...", "gsqlc: error: ...")
    with its kind styled."""
    if not on:
        return line
    for kind in ("warning", "error", "note"):
        prefix = f"gsqlc: {kind}:"
        if line.startswith(prefix):
            return "gsqlc: " + style(f"{kind}:", kind, on) + line[len(prefix):]
    return line


def color_mode_of(args: Optional[object]) -> str:
    return getattr(args, "color", None) or "auto"
