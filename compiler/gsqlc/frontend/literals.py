"""Literal text -> values: string bodies (escapes), integer literals and
their suffixes, TIMEVAL, IPv4, schema property numbers.  Plain string
functions (no lark), shared by the query and schema builders.
"""
from __future__ import annotations

import re
from typing import Any, Optional

_SIMPLE_ESCAPES = {
    "\\": b"\\", "'": b"'", '"': b'"', "n": b"\n", "r": b"\r", "t": b"\t",
    "0": b"\0",
}
_HEX2 = re.compile(r"[0-9A-Fa-f]{2}")


def decode_string(body: str) -> bytes:
    """The bytes of a string literal's body (the text between the quotes).

    \\\\ \\' \\" \\n \\r \\t \\0 and \\xHH are escapes; '' is one quote;
    any other backslash sequence (e.g. \\. in a regex) is kept as written.
    Non-ASCII text is UTF-8 encoded."""
    out = bytearray()
    i, n = 0, len(body)
    while i < n:
        c = body[i]
        if c == "\\" and i + 1 < n:
            d = body[i + 1]
            esc = _SIMPLE_ESCAPES.get(d)
            if esc is not None:
                out += esc
                i += 2
                continue
            if d == "x" and _HEX2.fullmatch(body, i + 2, i + 4):
                out.append(int(body[i + 2:i + 4], 16))
                i += 4
                continue
            out += ("\\" + d).encode("utf-8")
            i += 2
            continue
        if c == "'" and i + 1 < n and body[i + 1] == "'":
            out += b"'"
            i += 2
            continue
        out += c.encode("utf-8")
        i += 1
    return bytes(out)


_INT_RE = re.compile(r"(0[xX][0-9A-Fa-f]+|[0-9]+)([uUlL]*)")


def number_literal(text: str) -> tuple[str, Any]:
    m = _INT_RE.fullmatch(text)
    if m is None:
        return "float", float(text)
    digits, suffix = m.group(1), m.group(2).lower()
    value = int(digits, 16) if digits[:2].lower() == "0x" else int(digits)
    kind = {"": "int", "u": "uint", "ul": "uint", "ll": "llong",
            "ull": "ullong"}[suffix]
    return kind, value


# The largest value of an integer literal of each kind (by its suffix: U
# and UL are uint, LL llong, ULL ullong; a bare literal takes the smallest
# type that holds it, at most ullong) and the type named in the error.
INT_LIMITS = {"int": (2**64 - 1, "ullong"), "uint": (2**32 - 1, "uint"),
               "llong": (2**63 - 1, "llong"), "ullong": (2**64 - 1, "ullong")}

_TIMEVAL = re.compile(r"([0-9]+)(?:\.([0-9]{1,6}))?")
MAX_ULLONG = 2**64 - 1


def parse_timeval(body: str) -> Optional[int]:
    """TIMEVAL 'S[.F]': the ULLONG number of microseconds S*1000000 + F (F
    up to 6 decimal digits, padded: '1.5' is 1500000, '12' is 12000000), the
    unit of the packet schema's `timestamp`; None when the body is not of
    that form (surrounding blanks aside) or above 2^64-1."""
    m = _TIMEVAL.fullmatch(body.strip())
    if m is None:
        return None
    value = int(m.group(1)) * 1_000_000 + int((m.group(2) or "").ljust(6, "0"))
    return value if value <= MAX_ULLONG else None


def parse_ipv4(s: str) -> int:
    parts = s.strip().split(".")
    if len(parts) != 4 or not all(p.isascii() and p.isdigit() and len(p) <= 3 and int(p) <= 255
                                   for p in parts):
        raise ValueError(s)
    v = 0
    for p in parts:
        v = (v << 8) | int(p)
    return v


def prop_number(text: str) -> "int | float":
    if text[:2].lower() == "0x":
        return int(text, 16)
    if "." in text:
        return float(text)
    return int(text)
