"""Times written as text in CSV columns, for Spark's read_csv: a column of
strings in a field's time_format (ISO-8601, or epoch seconds, milliseconds,
microseconds or nanoseconds) as the field's values in its time_unit,
vectorized with pyarrow.

It reads what the runtime's CSV reader reads (runtime_c/core/time_text.c,
whose header gives the forms): ISO-8601 YYYY-MM-DD, optionally with
T-or-space HH[:MM[:SS[.F]]] (F 1 to 9 digits) and a zone Z, +HH, +HHMM or
+HH:MM; epoch numbers [+-]DIGITS[.DIGITS]; blanks around ignored.  An
instant becomes a count of the unit rounded down (towards the past).  A
value that is no such time, or one the column's type cannot hold, is not
valid: the caller counts its row as malformed.  pyarrow's own ISO-8601
parser checks the days and times (2026-02-30 is none); a regular
expression first keeps it to the forms above.
"""
from __future__ import annotations

from typing import Any

NS_PER_S = 1_000_000_000
# the forms: a date, then optionally a time (and then optionally a zone)
_ISO = (r"^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}(?::\d{2}(?::\d{2}(?:\.\d{1,9})?)?)?"
        r"(?:Z|[+-]\d{2}(?::?\d{2})?)?)?$")
_ISO_ZONED = r"[T ]\d{2}(?::\d{2}(?::\d{2})?)?(?:Z|[+-]\d{2}(?::?\d{2})?)$"
_EPOCH = r"^(?P<sign>[+-]?)(?P<int>\d+)(?:\.(?P<frac>\d+))?$"
_EPOCH_DIGITS = {"epoch_s": 0, "epoch_ms": 3, "epoch_us": 6, "epoch_ns": 9}


def _trimmed(col: Any) -> Any:
    import pyarrow.compute as pc
    return pc.utf8_trim(col, " \t")


def _digits(s: Any, width: int) -> Any:
    """The first `width` digits of strings of digits, right-padded with
    zeros, as int64 (width 0: zeros)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    if width == 0:
        return pa.repeat(pa.scalar(0, pa.int64()), len(s))
    padded = pc.utf8_rpad(pc.utf8_slice_codeunits(s, 0, width), width, "0")
    return pc.cast(padded, pa.int64())


def _iso_seconds(text: Any, ok: Any) -> tuple[Any, Any]:
    """Whole seconds since 1970 of the ISO-8601 strings `text` where `ok`
    (their fractions removed), and `ok` less those pyarrow finds no day or
    time (2026-02-30)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    zoned = pc.fill_null(pc.match_substring_regex(text, _ISO_ZONED), False)
    parts = []
    for is_zoned, filler, typ in ((False, "1970-01-01", pa.timestamp("s")),
                                  (True, "1970-01-01T00Z", pa.timestamp("s", "UTC"))):
        mine = pc.and_(ok, zoned if is_zoned else pc.invert(zoned))
        use = pc.if_else(mine, text, filler)
        try:
            parts.append((mine, pc.cast(pc.cast(use, typ), pa.int64())))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            parts.append((mine, _one_by_one(use, typ)))
    secs = pc.if_else(parts[0][0], parts[0][1], parts[1][1])
    return pc.fill_null(secs, 0), pc.and_(ok, pc.is_valid(secs))


def _one_by_one(text: Any, typ: Any) -> Any:
    """int64 seconds of each string cast alone (null where pyarrow finds no
    day or time): the rare column holding a value the regular expression
    let through."""
    import pyarrow as pa
    out = []
    for v in text.to_pylist():
        try:
            out.append(pa.scalar(v).cast(typ).cast(pa.int64()).as_py())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            out.append(None)
    return pa.array(out, pa.int64())


def _instants(col: Any, time_format: str) -> tuple[Any, Any, Any]:
    """(seconds since 1970 as int64, nanoseconds into them, valid) of a
    column of strings in `time_format`."""
    import pyarrow as pa
    import pyarrow.compute as pc
    text = _trimmed(col)
    if time_format == "iso8601":
        ok = pc.fill_null(pc.match_substring_regex(text, _ISO), False)
        # the one '.' of a form is the fraction's
        frac = pc.struct_field(pc.extract_regex(pc.if_else(ok, text, ""),
                                                r"^[^.]*(?:\.(?P<f>\d+))?"), [0])
        nsec = _digits(pc.fill_null(frac, ""), 9)
        whole = pc.replace_substring_regex(text, r"\.\d+", "")
        secs, ok = _iso_seconds(pc.fill_null(whole, ""), ok)
        return secs, nsec, ok
    d = _EPOCH_DIGITS[time_format]
    parts = pc.extract_regex(pc.fill_null(text, ""), _EPOCH)
    ok = pc.fill_null(pc.is_valid(parts), False)
    sign, whole, frac = (pc.fill_null(pc.struct_field(parts, [i]), "") for i in range(3))
    whole = pc.if_else(ok, whole, "0")
    # seconds: the digits before the last d; below them, d digits of a second
    # and the fraction's first 9 - d digits (finer ones dropped)
    sec_digits = pc.utf8_slice_codeunits(whole, 0, -d) if d else whole
    sec_digits = pc.if_else(pc.equal(pc.utf8_length(sec_digits), 0), "0", sec_digits)
    too_long = pc.greater(pc.utf8_length(sec_digits), 18)
    ok = pc.and_(ok, pc.invert(too_long))
    sec = pc.cast(pc.if_else(too_long, "0", sec_digits), pa.int64())
    sub = pc.utf8_slice_codeunits(pc.utf8_lpad(whole, d, "0"), -d) if d else None
    nsec = pc.multiply(_digits(sub, d), 10 ** (9 - d)) if d else _digits(whole, 0)
    nsec = pc.add(nsec, _digits(frac, 9 - d))
    neg = pc.equal(sign, "-")
    borrow = pc.and_(neg, pc.greater(nsec, 0))
    sec = pc.if_else(neg, pc.negate(sec), sec)
    sec = pc.if_else(borrow, pc.subtract(sec, 1), sec)
    nsec = pc.if_else(borrow, pc.subtract(NS_PER_S, nsec), nsec)
    return sec, nsec, ok


def time_values(col: Any, time_format: str, unit_ns: int, target: Any) -> tuple[Any, Any]:
    """(values, valid) of a column of strings in `time_format`: each instant
    as a count of units of `unit_ns` nanoseconds (rounded down) of Arrow
    type `target` (an integer or float64), and whether it is one the type
    holds; values where not valid are 0."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    sec, nsec, ok = _instants(col, time_format)
    per_sec = NS_PER_S // unit_ns
    if pa.types.is_floating(target):
        value = pc.add(pc.multiply(pc.cast(sec, pa.float64()), float(per_sec)),
                       pc.divide(pc.cast(nsec, pa.float64()), float(unit_ns)))
        return pc.if_else(ok, value, 0.0), ok
    info = np.iinfo(target.to_pandas_dtype())
    # sec * per_sec + nsec // unit_ns within the type: sec bounded first
    lo, hi = -(2 ** 63) // per_sec + 1, (2 ** 63 - 1) // per_sec - 1
    ok = pc.and_(ok, pc.and_(pc.greater_equal(sec, lo), pc.less_equal(sec, hi)))
    sec = pc.if_else(ok, sec, 0)
    value = pc.add(pc.multiply(sec, per_sec), pc.divide(nsec, unit_ns))
    ok = pc.and_(ok, pc.and_(pc.greater_equal(value, int(info.min)),
                             pc.less_equal(value, int(info.max))))
    return pc.cast(pc.if_else(ok, value, 0), target), ok
