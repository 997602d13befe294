"""The one escaping function for text from queries that lands in generated code.

Every string that comes from a query or schema file -- string literals,
regular expressions, parameter and query names used in messages, the text of
expressions quoted in comments -- reaches C/C++ only through `c_string`, which
produces a C string literal whose bytes are exactly the input bytes:

  * printable ASCII is kept except `"`, `\\` and `?` (trigraphs: -std=c11
    turns `??/` into a backslash);
  * every other byte becomes a three-digit octal escape (octal, not \\x: a
    hex escape swallows any hex digits that follow it);
  * `/` next to `*` is escaped, so the literal can also sit inside a comment
    without ending it (`*/`) or opening one (`/*`).

`c_comment` wraps the same escaping for comments.
"""
from __future__ import annotations

from typing import Union


def c_string(data: Union[bytes, str]) -> str:
    if isinstance(data, str):
        data = data.encode("utf-8")
    out = ['"']
    n = len(data)
    for i, b in enumerate(data):
        ch = chr(b)
        if ch == "/" and ((i > 0 and data[i - 1] == 0x2A) or (i + 1 < n and data[i + 1] == 0x2A)):
            out.append("\\057")
        elif ch in '"\\?':
            out.append("\\" + ch if ch != "?" else "\\077")
        elif 0x20 <= b < 0x7F:
            out.append(ch)
        else:
            out.append("\\%03o" % b)
    out.append('"')
    return "".join(out)


def c_comment(text: Union[bytes, str]) -> str:
    """A C comment holding `text`, escaped by c_string (quotes included)."""
    return "/* " + c_string(text) + " */"


def c_identifier(name: str) -> str:
    """A C identifier derived from a GSQL name: letters, digits, underscore."""
    out = []
    for ch in name:
        out.append(ch if (ch.isascii() and (ch.isalnum() or ch == "_")) else "_")
    s = "".join(out) or "_"
    if s[0].isdigit():
        s = "_" + s
    return s
