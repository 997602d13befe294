"""The command-line flags of a run, read from the table the stand-alone
runner is built from (runtime_c/tools/run_flags.h: one GSQ_RUN_FLAG line per
flag), so that `gsqlc run` and gsqlc-run take the same flags, with the same
help, and cannot drift apart.

`flags()` parses the table once per process; `add_run_flags(parser)`
declares the flags both faces take on `gsqlc run`'s argument parser (the
runner's own, --member, --option and --help, stay the runner's).  What a
flag does at run time is each face's: the runner calls gsqlc_set_option as
the table's ACTION says, `gsqlc run` gives the values to its session
(runtime.session), which checks them and sets the same options.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING, Any, NamedTuple, Optional

if TYPE_CHECKING:
    from pathlib import Path

# what a flag's ARG column says it takes
VALUE, CHOICES, NO_ARG = "VALUE", "CHOICES", "NO_ARG"
# what its ACTION column says it does
OPTION, SWITCH, KEYED, OWN = "OPTION", "SWITCH", "KEYED", "OWN"
# the OWN flags that may be given several times (a KEYED flag always may)
REPEATED = {"SOURCE", "MEMBER", "PARAM", "OUTPUT"}


class RunFlag(NamedTuple):
    """One GSQ_RUN_FLAG line: names ("--quiet", "-q"), arg VALUE/CHOICES/
    NO_ARG with its metavar or choices, action OPTION/SWITCH/KEYED/OWN with
    its key (an option, a KEYED prefix, or the OWN word) and a SWITCH's
    value, both (a flag of `gsqlc run` too) and help."""
    names: tuple[str, ...]
    arg: str
    metavar: Optional[str]
    choices: tuple[str, ...]
    action: str
    key: str
    value: Optional[str]
    both: bool
    help: str

    @property
    def name(self) -> str:
        return self.names[0]

    @property
    def repeated(self) -> bool:
        return self.action == KEYED or (self.action == OWN and self.key in REPEATED)


def table_path() -> "Path":
    from ..resources import resource_dir
    return resource_dir("runtime_c") / "tools" / "run_flags.h"


@lru_cache(maxsize=None)
def flags() -> tuple[RunFlag, ...]:
    """Every flag of the table, in its order (--help's)."""
    return tuple(parse_table(table_path().read_text()))


_STR = r'"(?:[^"\\]|\\.)*"'
_STRINGS = r'((?:' + _STR + r'\s*)+)'
_ENTRY = (r'^GSQ_RUN_FLAG\(\s*(' + _STR + r'),\s*'
          r'(VALUE\(\s*' + _STR + r'\s*\)|CHOICES\([^)]*\)|NO_ARG),\s*'
          r'(OPTION\(\s*' + _STR + r'\s*\)|SWITCH\(\s*' + _STR + r',\s*' + _STR + r'\s*\)'
          r'|KEYED\(\s*' + _STR + r'\s*\)|OWN\(\s*\w+\s*\)),\s*'
          r'(BOTH|RUNNER),\s*' + _STRINGS + r'\)\s*$')


def parse_table(text: str) -> list[RunFlag]:
    """The GSQ_RUN_FLAG lines of run_flags.h's text; a ValueError if a line
    starting GSQ_RUN_FLAG is not of the table's form."""
    out = []
    for m in re.finditer(_ENTRY, text, re.M):
        names, arg, action, faces, help_text = m.groups()
        arg_kind, _, arg_rest = arg.partition("(")
        strings = _strings(arg_rest)
        act_kind, _, act_rest = action.partition("(")
        act_strings = _strings(act_rest)
        key = act_strings[0] if act_strings else act_rest.rstrip(")").strip()
        out.append(RunFlag(tuple(_strings(names)[0].split()), arg_kind,
                           strings[0] if arg_kind == VALUE else None,
                           tuple(strings) if arg_kind == CHOICES else (),
                           act_kind, key, act_strings[1] if act_kind == SWITCH else None,
                           faces == "BOTH", "".join(_strings(help_text))))
    if len(out) != len(re.findall(r"^GSQ_RUN_FLAG\(", text, re.M)):
        raise ValueError("run_flags.h: a GSQ_RUN_FLAG line is not of the table's form "
                         f"(read {', '.join(f.name for f in out)})")
    return out


def _strings(text: str) -> list[str]:
    """The C string literals in text, unescaped (the table's escapes are a
    backslash and a quote)."""
    return [re.sub(r"\\(.)", r"\1", s) for s in re.findall(r'"((?:[^"\\]|\\.)*)"', text)]


def find(name: str) -> Optional[RunFlag]:
    return next((f for f in flags() if name in f.names), None)


def add_run_flags(parser: Any, groups: Optional[dict[str, Any]] = None) -> None:
    """Declare on `parser` (argparse) every flag of the table `gsqlc run`
    takes, in the table's order: a switch stores True, a KEYED flag and
    the repeated OWN ones append, VALUE("N") is an integer, CHOICES are
    argparse's choices.  No defaults: a flag not given is None (or [] or
    False), the session's default.  groups: a flag's name -> the group
    (e.g. mutually exclusive) to add it to instead."""
    for f in flags():
        if not f.both:
            continue
        where = (groups or {}).get(f.name, parser)
        kw: dict[str, Any] = {"help": _argparse_text(f.help)}
        if f.arg == NO_ARG:
            kw["action"] = "store_true"
        else:
            if f.arg == CHOICES:
                kw["choices"] = list(f.choices)
            else:
                kw["metavar"] = f.metavar
                if f.metavar == "N":
                    kw["type"] = int
            if f.repeated:
                kw["action"] = "append"
                kw["default"] = []
        where.add_argument(*f.names, **kw)


def _argparse_text(text: str) -> str:
    """argparse formats help with %: a literal one is doubled."""
    return text.replace("%", "%%")
