"""The C runtime's run options, read from its own table
(runtime_c/run/option_table.h: one GSQ_OPTION line per option) so that what
Python accepts, what the runtime accepts and the options reference cannot
drift apart.

`options()` parses the table once per process, on first use (a cached
`gsqlc run` pays it only when it validates its options).  `refusal(option,
value)` applies the rule the runtime applies to a value (the option's
setter in runtime_c/run/options.c) and says why it is refused, or None;
`check(keyword, value)` is run_options' validation of one keyword: the
table's rule, the Python-only checks the runtime cannot make (a bool is
not an int), and each face's words for the refusal (a SettingError: the
API's subject and the command line's flag).
"""
from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Callable, NamedTuple, Optional

if TYPE_CHECKING:
    from pathlib import Path

# why a value is refused: not of the option's form or below its range;
# above its range; a character the option cannot take
INVALID, RANGE, FORBIDDEN = "invalid", "range", "forbidden"

_LIMITS = {"UINT32_MAX": (1 << 32) - 1, "UINT64_MAX": (1 << 64) - 1}
_MAX_USEC = 10 ** 15   # parse_seconds' limit: 10^9 seconds


class RunOption(NamedTuple):
    """One GSQ_OPTION line: name is the key's form ("max_skew:NAME" for a
    per-interface key), kind BOOL/WORDS/UINT/SECONDS/REAL/CHAR/TEXT/FORM,
    low/high the inclusive RANGE (None: none), setter the C function's
    name, expects what a value must be, doc the reference's line."""
    name: str
    kind: str
    low: Optional[int]
    high: Optional[int]
    words: tuple[str, ...]
    setter: str
    expects: str
    doc: str

    @property
    def prefix(self) -> str:
        """The key up to and including a per-interface option's first ':'."""
        head, colon, _ = self.name.partition(":")
        return head + colon

    def matches(self, key: str) -> bool:
        return key.startswith(self.prefix) if ":" in self.name else key == self.name


def table_path() -> "Path":
    from ..resources import resource_dir
    return resource_dir("runtime_c") / "run" / "option_table.h"


@lru_cache(maxsize=None)
def options() -> dict[str, RunOption]:
    """Every run option, by name, in the table's order."""
    return {o.name: o for o in parse_table(table_path().read_text())}


# one GSQ_OPTION line: name, kind, the range's bounds, the words, setter,
# expects and doc (adjacent string literals); the other columns are C's
_STRINGS = r'((?:"(?:[^"\\]|\\.)*"\s*)+)'
_ENTRY = (r'^GSQ_OPTION\(\s*"([^"]*)",\s*(\w+),\s*(?:FIELD\(\w+\)|NO_FIELD),'
          r'\s*(?:RANGE\((\w+),\s*(\w+)\)|NO_RANGE),\s*(?:WORDS\(([^)]*)\)|NO_WORDS),'
          r'\s*(?:VALUES\([^)]*\)|NO_VALUES),\s*(\w+),\s*' + _STRINGS + r',\s*' + _STRINGS
          + r'\)\s*$')


def parse_table(text: str) -> list[RunOption]:
    """The GSQ_OPTION lines of option_table.h's text; a ValueError if a
    line starting GSQ_OPTION is not of the table's form."""
    import re
    out = []
    for m in re.finditer(_ENTRY, text, re.M):
        name, kind, low, high, words, setter, expects, doc = m.groups()
        out.append(RunOption(name, kind, _number(low), _number(high),
                             tuple(_string(w) for w in words.split(",")) if words else (),
                             setter, _string(expects), _string(doc)))
    if len(out) != len(re.findall(r"^GSQ_OPTION\(", text, re.M)):
        raise ValueError("option_table.h: a GSQ_OPTION line is not of the table's form "
                         f"(read {', '.join(o.name for o in out)})")
    return out


def _number(text: Optional[str]) -> Optional[int]:
    return None if text is None else _LIMITS[text] if text in _LIMITS else int(text)


def _string(literals: str) -> str:
    """The text of adjacent C string literals ("a" "b")."""
    import re
    text = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', literals))
    # the table's escapes are a backslash and a quote (\\, \")
    return re.sub(r"\\(.)", r"\1", text) if "\\" in text else text


def find(key: str) -> Optional[RunOption]:
    """The option a gsqlc_set_option key names, or None."""
    return next((o for o in options().values() if o.matches(key)), None)


# ------------------------------------------------------------ the runtime's rules


def parse_seconds(text: str) -> tuple[int, int]:
    """options.c's parse_seconds: (0, microseconds), or (-1, 0) not a
    number, (-2, 0) negative, (-3, 0) above 10^9 seconds, (-4, 0) positive
    below half a microsecond."""
    import re
    m = re.fullmatch(r"([+-]?)([0-9]*)(?:\.([0-9]*))?(?:[eE]([+-]?[0-9]+))?", text)
    if not m or not (m.group(2) or m.group(3)):
        return -1, 0
    sign, whole, frac, exp = m.group(1), m.group(2), m.group(3) or "", m.group(4)
    mantissa = int(whole + frac or "0")
    if mantissa == 0:
        return 0, 0
    if sign == "-":
        return -2, 0
    scale = int(exp or 0) - len(frac) + 6   # mantissa * 10^scale microseconds
    if scale > 30:
        return -3, 0
    if scale >= 0:
        usec = mantissa * 10 ** scale
    elif -scale > len(whole + frac) + 1:
        usec = 0
    else:   # to one digit more, then rounded half up
        usec = (mantissa // 10 ** (-scale - 1) + 5) // 10
    if usec > _MAX_USEC:
        return -3, 0
    return (0, usec) if usec else (-4, 0)


def parse_unsigned(text: str) -> Optional[int]:
    """core/parse.c's unsigned integers: blanks around, '+', decimal or
    0x hexadecimal; None if not one (its size is the caller's check)."""
    import re
    m = re.fullmatch(r"[ \t]*\+?(?:0[xX]([0-9a-fA-F]+)|([0-9]+))[ \t]*", text)
    if not m:
        return None
    return int(m.group(1), 16) if m.group(1) else int(m.group(2))


def _bool(o: RunOption, value: str) -> Optional[str]:
    v = value.strip(" \t").lower()
    return None if v in ("0", "1", "true", "false") else INVALID


def _words(o: RunOption, value: str) -> Optional[str]:
    return None if value in o.words else INVALID


def _clock(o: RunOption, value: str) -> Optional[str]:
    if not value.startswith("fixed:"):
        return _words(o, value)
    n = parse_unsigned(value[6:])
    return None if n is not None and n < 1 << 32 else INVALID


def _uint(o: RunOption, value: str) -> Optional[str]:
    n = parse_unsigned(value)
    if n is None or (o.low is not None and n < o.low):
        return INVALID
    return RANGE if o.high is not None and n > o.high else None


def _power_of_two(o: RunOption, value: str) -> Optional[str]:
    why = _uint(o, value)
    n = parse_unsigned(value)
    return why or (INVALID if n is None or n & (n - 1) else None)


def _seconds(o: RunOption, value: str) -> Optional[str]:
    rc, usec = parse_seconds(value)
    if rc in (-1, -2):
        return INVALID
    if rc == -3:
        return RANGE
    return INVALID if o.low is not None and usec < o.low else None


def _heartbeat(o: RunOption, value: str) -> Optional[str]:
    rc, _ = parse_seconds("0" if value == "off" else value)
    return INVALID if rc in (-1, -2) else RANGE if rc in (-3, -4) else None


def _real(o: RunOption, value: str) -> Optional[str]:
    rc, usec = parse_seconds(value)
    if rc in (-1, -2, -3):
        return INVALID
    v = usec / 1e6
    return None if (o.low or 0) <= v <= (o.high if o.high is not None else v) else INVALID


def _csv_separator(o: RunOption, value: str) -> Optional[str]:
    c = "\t" if value in ("\\t", "tab") else value
    if len(c) != 1:
        return INVALID
    return FORBIDDEN if c in '"\n\r' else None


def _text(o: RunOption, value: str) -> Optional[str]:
    return None if value else INVALID


# each setter of the table -> its rule; FORMS: setters of a form of their
# own (interface pairs, CSV positions, byte ranges, properties) that only
# the runtime checks, from values gsqlc builds itself (bindings.time_options)
RULES = {"set_bool": _bool, "set_recording": _bool, "set_csv_header": _bool,
         "set_words": _words, "set_time_unit": _words, "set_clock": _clock, "set_uint": _uint,
         "set_batch": _uint, "set_live_snaplen": _uint, "set_live_blocks": _uint,
         "set_live_block_timeout": _uint, "set_live_block_size": _power_of_two,
         "set_live_promisc": _bool, "set_live_kernel_filter": _bool, "set_live_fanout": _uint,
         "set_live_xdp": _words, "set_live_xdp_drop": _bool,
         "set_seconds": _seconds, "set_max_skew": _seconds, "set_out_of_order": _seconds,
         "set_latency": _seconds, "set_heartbeat_interval": _heartbeat, "set_real": _real,
         "set_csv_separator": _csv_separator, "set_trace": _text}
FORMS = {"set_skew_decl", "set_arrival", "set_pcap_range", "set_prop", "set_partition"}


def refusal(option: RunOption, value: str) -> Optional[str]:
    """Why the runtime refuses `value` for `option` (INVALID, RANGE or
    FORBIDDEN), or None when it takes it (or only it checks the form)."""
    rule = RULES.get(option.setter)
    return rule(option, value) if rule else None


# ------------------------------------------------------------ run_options' faces


def _an_int(value: object) -> Optional[str]:
    """Python-only: an integer option takes an int, and a bool is not one."""
    return INVALID if isinstance(value, bool) or not isinstance(value, int) else None


def _positive_seconds(value: object) -> Optional[str]:
    """Python-only: the heartbeat interval is positive ("off" disables
    heartbeats; the runtime also reads 0 so)."""
    return INVALID if parse_seconds(str(value)) == (0, 0) else None


def _one_character(value: object) -> Optional[str]:
    """Python-only: one character as given (the runtime also reads tab)."""
    return None if isinstance(value, str) and len(value) == 1 else INVALID


class Face(NamedTuple):
    """How run_options names an option and words its refusals: subject in
    the Python API's terms, flag in the command line's; messages: each
    refusal's rest by reason (INVALID's for a reason without one),
    formatted with the value as given and the table's low, high and
    expects; python_only: a check of the Python value before the table's."""
    subject: str
    flag: str
    messages: dict[str, str]
    python_only: Optional[Callable[[object], Optional[str]]] = None


# keyed by table name: run_options' keywords are the runtime's option names
FACES = {
    "batch": Face("the read batch", "--batch",
                  {INVALID: " must be an integer from {low} to {high} records, got {value}"},
                  _an_int),
    "heartbeat_interval": Face(
        "the heartbeat interval", "--heartbeat-interval",
        {INVALID: " must be positive seconds or off, got {value}",
         RANGE: " must be from 0.000001 to 1000000000 seconds, or off, got {value}"},
        _positive_seconds),
    "csv_separator": Face("the CSV separator", "--csv-separator",
                          {INVALID: " must be one character, got '{value}'",
                           FORBIDDEN: " cannot be a quote or a line break, got {value!r}"},
                          _one_character),
    "clock": Face("clock", "--clock", {INVALID: " {value}: expected {expects}"}),
    "columnar": Face("columnar", "--columnar", {INVALID: " must be {expects}, got {value!r}"}),
    "prefilter": Face("prefilter", "--prefilter", {INVALID: " must be {expects}, got {value!r}"}),
    "stall_intervals": Face("the stall intervals", "--stall-intervals",
                            {INVALID: " must be an integer of at least {low}, got {value}",
                             RANGE: " must be an integer from {low} to {high}, got {value}"},
                            _an_int),
    "max_groups": Face("max_groups", "--max-groups",
                       {INVALID: " must be a positive integer, got {value!r}",
                        RANGE: " must be at most {high}, got {value!r}"}, _an_int),
    "pcap_reader": Face("the pcap reader", "--pcap-reader",
                        {INVALID: " must be {expects}, got {value}"}),
    "ip_format": Face("ip_format", "--ip-format", {INVALID: " must be {expects}, got {value!r}"}),
    "report": Face("report", "--quiet", {INVALID: " must be {expects}, got {value!r}"}),
    # passed on as the runtime reads them: only set when given (trace) or
    # true (csv_strict)
    "trace": Face("the trace file", "--trace", {INVALID: " must be {expects}, got {value!r}"}),
    "csv_strict": Face("csv_strict", "--csv-strict", {INVALID: " must be {expects}, got {value}"}),
}


def check(name: str, value: object) -> str:
    """The text of run option `name`'s value for the runtime, or a
    SettingError in the words of FACES[name]."""
    face, option = FACES[name], options()[name]
    text = str(value)
    why = face.python_only(value) if face.python_only else None
    why = why or refusal(option, text)
    if why is None:
        return text
    from ..errors import SettingError
    rest = face.messages.get(why, face.messages[INVALID])
    raise SettingError(face.subject, face.flag,
                       rest.format(value=value, low=option.low, high=option.high,
                                   expects=option.expects))
