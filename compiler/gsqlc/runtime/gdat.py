"""Tigon's GDAT file header, read before a run binds a gdat:PATH source, so
that a file that is not GDAT, or whose schema cannot be read, is a usage
error naming the file rather than a failed run.

Takes a path; returns its GdatHeader (version, the schema's STREAM name and
its fields as (name, type) pairs, where the records start).  The layout is
runtime_c/sources/gdat_format.h's; the C reader (gdat_source.c) applies the
same rules and reads the records.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import GdatError

__all__ = ["GdatError", "GdatHeader", "parse_header", "read_header", "is_gdat"]

MAX_SCHEMA = 1 << 20
_HEADER = re.compile(rb"GDAT\nVERSION:(\d{1,9})\nSCHEMALENGTH:(\d{1,9})\n")
_TYPES = {"bool": "BOOL", "ushort": "USHORT", "uint": "UINT", "int": "INT",
          "ullong": "ULLONG", "llong": "LLONG", "float": "FLOAT", "string": "V_STR",
          "v_str": "V_STR", "ip": "IP", "ipv6": "IPV6", "timeval": "TIMEVAL"}
_TOKEN = re.compile(r"\s+|//[^\n]*|--[^\n]*|'[^']*'?|[A-Za-z0-9_.$]+|.", re.S)


@dataclass(frozen=True)
class GdatHeader:
    version: int
    stream: str
    fields: tuple[tuple[str, str], ...]   # (name, GDAT type name) in record order
    data_start: int


def _tokens(text: str) -> list[str]:
    out = []
    for m in _TOKEN.finditer(text):
        t = m.group(0)
        if t[0].isspace() or t.startswith("//") or t.startswith("--"):
            continue
        out.append(t.strip("'") if t.startswith("'") else t)
    return out


def _type(word: str) -> str | None:
    t = _TYPES.get(word.lower())
    if t is None and re.fullmatch(r"(?i)fstring[1-9]\d*", word):
        return "FSTRING" + word[7:]
    return t


def parse_header(data: bytes) -> GdatHeader:
    """The header at the start of a GDAT file's bytes (at least its header
    and schema), or a GdatError."""
    if not data.startswith(b"GDAT\n"):
        raise GdatError('not a GDAT file (it does not start with "GDAT" and a line break)')
    m = _HEADER.match(data)
    if not m:
        raise GdatError("the GDAT header has no VERSION:<number> and SCHEMALENGTH:<number> lines")
    version, length = int(m.group(1)), int(m.group(2))
    if not 1 <= version <= 4:
        raise GdatError(f"GDAT version {version} is not one Tigon's schema parser reads (1 to 4)")
    if not 1 <= length <= MAX_SCHEMA:
        raise GdatError(f"the GDAT header's schema length {length} is not from 1 to "
                        f"{MAX_SCHEMA} bytes")
    raw = data[m.end():m.end() + length]
    if len(raw) < length:
        raise GdatError(f"the file ends inside its schema ({length} bytes declared, "
                        f"{len(raw)} present)")
    toks = _tokens(raw.split(b"\0", 1)[0].decode("latin-1"))
    starts = [i for i, t in enumerate(toks) if t.upper() in ("STREAM", "TABLE", "PROTOCOL")]
    if not starts:
        raise GdatError("the GDAT schema declares no STREAM")
    i = starts[0] + 1
    name = toks[i] if i < len(toks) else ""
    i += 1
    if i < len(toks) and toks[i] == "(":
        while i < len(toks) and toks[i] != ")":
            i += 1
        i += 1
    if i >= len(toks) or toks[i] != "{":
        raise GdatError(f"the schema's STREAM {name} has no '{{'")
    i += 1
    fields = []
    while i < len(toks) and toks[i] != "}":
        if toks[i] == ";":
            i += 1
            continue
        t = _type(toks[i])
        if t is None:
            raise GdatError(f"the schema's STREAM {name} has a field of unknown type '{toks[i]}'")
        fields.append((toks[i + 1] if i + 1 < len(toks) else "", t))
        i += 2
        depth = 0
        while i < len(toks) and (depth or toks[i] != ";") and not (depth == 0 and toks[i] == "}"):
            depth += toks[i] == "("
            depth -= toks[i] == ")"
            i += 1
        if i < len(toks) and toks[i] == ";":
            i += 1
    if i >= len(toks):
        raise GdatError(f"the schema's STREAM {name} is not closed by '}}'")
    if not fields:
        raise GdatError(f"the schema's STREAM {name} has no fields")
    return GdatHeader(version, name, tuple(fields), m.end() + length)


def read_header(path: str) -> GdatHeader:
    """The header of the GDAT file at path (OSError, GdatError)."""
    with open(path, "rb") as f:
        head = f.read(64)
        m = _HEADER.match(head)
        if m and int(m.group(2)) <= MAX_SCHEMA:
            head += f.read(m.end() + int(m.group(2)) - len(head))
    return parse_header(head)


def is_gdat(path: str) -> bool:
    """Whether the file at path starts as a GDAT file does."""
    try:
        with open(path, "rb") as f:
            return f.read(5) == b"GDAT\n"
    except OSError:
        return False
