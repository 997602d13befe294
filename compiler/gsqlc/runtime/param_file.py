"""A parameter file (`--param-file`): one NAME=VALUE a line, '#' starting a
comment, blank lines ignored -- read at the start of a run and again on
SIGHUP, when each value that changed goes to the running run
(gsqlc_change_param).  gsqlc-run reads the same format (tools/
gsqlc_run_main.c)."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable

from ..errors import RunError, UsageError


def read(path: str) -> dict[str, tuple[str, int]]:
    """NAME -> (VALUE, line number); UsageError naming the file and line of
    a line that is not NAME=VALUE, or the file that cannot be read."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="surrogateescape")
    except OSError as e:
        raise UsageError(f"--param-file {path}: {e.strerror or e}") from None
    out: dict[str, tuple[str, int]] = {}
    for no, line in enumerate(text.splitlines(), 1):
        s = line.split("#", 1)[0].strip()
        if not s:
            continue
        name, eq, value = s.partition("=")
        if not eq or not name.strip():
            raise UsageError(f"{path}:{no}: expected NAME=VALUE, got '{s}'")
        out[name.strip()] = (value.strip(), no)
    return out


class Reloader:
    """Reads the file again (on SIGHUP) and hands each value that changed
    since the last one taken to `change` (RunHandle.change_param); a value
    the run refuses is said on stderr and asked again next time."""

    def __init__(self, path: str, applied: dict[str, str],
                 change: Callable[[str, str], None]):
        self.path = path
        self.applied = dict(applied)
        self.change = change

    def __call__(self) -> None:
        try:
            values = read(self.path)
        except UsageError as e:
            print(f"gsqlc: error: {e}; the run keeps its parameters", file=sys.stderr)
            return
        for name, (value, no) in values.items():
            old = self.applied.get(name)
            if old == value:
                continue
            try:
                self.change(name, value)
            except RunError as e:
                kept = f"'{old}'" if old is not None else "its value"
                print(f"gsqlc: error: {self.path}:{no}: {e}; the run keeps {kept}",
                      file=sys.stderr)
                continue
            self.applied[name] = value
            print(f"gsqlc: parameter ${name}: '{value}' from {self.path} (from the next round "
                  "of the run)", file=sys.stderr)
