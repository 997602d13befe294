"""The scalar functions and predicates of Tigon's and GS-lite's
external_fcns.def (issue 12, part 5), end to end through `gsqlc run`, each
against an independent reference computed here in Python: the MIN/MAX
families and comparisons over every pair of numeric types, if_else_i, the
math functions, the string and IP helpers -- with edge values (0 and the
types' bounds, NaN, empty strings, offsets past the end)."""
from __future__ import annotations

import math
import re
import struct

import pytest

SCHEMA = ("PROTOCOL R {\n"
          "    uint   t  get_csv_uint_pos1 (increasing);\n"
          "    uint   u  get_csv_uint_pos2;\n"
          "    int    i  get_csv_int_pos3;\n"
          "    ullong ul get_csv_ullong_pos4;\n"
          "    llong  ll get_csv_llong_pos5;\n"
          "    float  f  get_csv_float_pos6;\n"
          "    string s  get_csv_string_pos7;\n"
          "    IP     a  get_csv_ip_pos8;\n"
          "}\n")

ROWS = [
    (0, 0, 0, 0, 0.0, "", "0.0.0.0"),
    (4294967295, -2147483648, 18446744073709551615, -9223372036854775808, -1.5, "a",
     "255.255.255.255"),
    (1, -1, 9007199254740993, 9223372036854775807, 9007199254740992.0, "north",
     "10.0.0.1"),
    (7, 2147483647, 4294967296, -1, 1e300, "a;bb;;c", "10.0.0.2"),
    (3, -7, 1, 5, math.nan, "34;45;56", "1.2.3.4"),
    (2, 3, 5, -5, -2.5e10, "-9223372036854775809x", "192.168.1.1"),
    (9, 0, 2, 2, 0.25, "99999999999999999999", "8.8.8.8"),
]
FIELDS = ["u", "i", "ul", "ll", "f"]


def _run(gsqlc, tmp_path, select: str, where: str = "") -> list[list[str]]:
    (tmp_path / "s.txt").write_text(SCHEMA)
    (tmp_path / "d.csv").write_text("".join(
        ",".join([str(n)] + [("nan" if isinstance(v, float) and v != v else repr(v))
                             if isinstance(v, float) else str(v) for v in r]) + "\n"
        for n, r in enumerate(ROWS)))
    (tmp_path / "q.gsql").write_text(f"select t, {select} from R {where}")
    p = gsqlc("run", tmp_path / "q.gsql", "--schema", tmp_path / "s.txt",
              "--source", f"csv={tmp_path / 'd.csv'}")
    assert p.returncode == 0, p.err
    return [line.split("|") for line in p.out.splitlines()]


def _row(r) -> dict:
    return dict(zip(FIELDS + ["s", "a"], r))


# ---------------------------------------------------------------- references

def _wrap(v: int, bits: int, signed: bool) -> int:
    v %= 1 << bits
    return v - (1 << bits) if signed and v >= 1 << (bits - 1) else v


def _to(v, r: str):
    """A chosen number as the result type: integers wrap, floats truncate
    toward zero and saturate, NaN gives 0."""
    if r == "float":
        return float(v)
    bits, signed = {"ullong": (64, False), "uint": (32, False), "int": (32, True),
                    "llong": (64, True), "ushort": (16, False)}[r]
    if isinstance(v, float):
        if v != v:
            return 0
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
        if v <= lo - 1:
            return lo
        if v >= hi + 1:
            return hi
        return int(v)
    return _wrap(v, bits, signed)


def _fmt(v, r: str) -> str:
    if r == "float":
        return "nan" if v != v else f"{v:.6f}"
    return str(v)


FAMILIES = {   # name -> (result type, reference on the exact values)
    "ULLMIN": ("ullong", lambda a, b: b if b < a else a),
    "ULLMAX": ("ullong", lambda a, b: b if b > a else a),
    "LLMIN": ("ullong", lambda a, b: b if b < a else a),
    "LLMAX": ("ullong", lambda a, b: b if b > a else a),
    "UMIN": ("uint", lambda a, b: b if b < a else a),
    "UMAX": ("uint", lambda a, b: b if b > a else a),
    "LMIN": ("int", lambda a, b: b if b < a else a),
    "LMAX": ("int", lambda a, b: b if b > a else a),
    "FMIN": ("float", lambda a, b: b if b < a else a),
    "FMAX": ("float", lambda a, b: b if b > a else a),
}
COMPARISONS = {"EQ": lambda a, b: a == b, "GEQ": lambda a, b: a >= b,
               "GE": lambda a, b: a > b, "LEQ": lambda a, b: a <= b,
               "LE": lambda a, b: a < b}


def _norm(s: str) -> str:
    return "nan" if s in ("nan", "-nan") else s


@pytest.mark.parametrize("names", [list(FAMILIES), list(COMPARISONS)],
                         ids=["min-max", "comparisons"])
def test_min_max_families_and_comparisons_over_every_pair_of_types(gsqlc, tmp_path, names):
    exprs = [(n, x, y) for n in names for x in FIELDS for y in FIELDS]
    exprs += [(n, x, lit) for n in names for x in ("i", "f") for lit in ("-1", "4294967295")]
    out = _run(gsqlc, tmp_path, ", ".join(f"{n}({x}, {y}) as c{k}"
                                           for k, (n, x, y) in enumerate(exprs)))
    assert len(out) == len(ROWS)
    for line in out:
        row = _row(ROWS[int(line[0])])
        for k, (n, x, y) in enumerate(exprs):
            a = row[x]
            b = row[y] if y in row else int(y)
            if n in FAMILIES:
                rt, ref = FAMILIES[n]
                want = _fmt(_to(ref(a, b), rt), rt)
            else:
                want = str(int(COMPARISONS[n](a, b)))
            assert _norm(line[k + 1]) == want, (n, x, y, row)


def test_umin_umax_of_ips_are_ips(gsqlc, tmp_path):
    out = _run(gsqlc, tmp_path, "UMIN(a, strtoip_c('10.0.0.2')) as lo, "
                                "UMAX(a, strtoip_c('10.0.0.2')) as hi")
    ip = lambda s: tuple(map(int, s.split(".")))  # noqa: E731
    for line in out:
        a = ROWS[int(line[0])][6]
        assert line[1:] == [min(a, "10.0.0.2", key=ip), max(a, "10.0.0.2", key=ip)]


def test_if_else_i(gsqlc, tmp_path):
    out = _run(gsqlc, tmp_path, "if_else_i(u, i, u) as a, if_else_i(i, ul, i) as b, "
                                "if_else_i(ll, ll, 5) as c, if_else_i(u = 1, u, -1) as d")
    for line in out:
        r = _row(ROWS[int(line[0])])
        want = [_wrap(r["i"] if r["u"] else r["u"], 32, True),
                _wrap(r["ul"] if r["i"] else r["i"], 64, False),
                r["ll"] if r["ll"] else 5,
                r["u"] if r["u"] == 1 else 4294967295]
        assert line[1:] == [str(w) for w in want]


def _c_math(name: str, *xs: float) -> float:
    """C's <math.h> result: Python's math module raises where C returns NaN
    or an infinity."""
    if any(x != x for x in xs):
        return math.nan
    if name in ("log", "log2", "log10") and xs[0] == 0:
        return -math.inf
    if name in ("ceil", "floor", "trunc"):
        return float(getattr(math, name)(xs[0])) if math.isfinite(xs[0]) else xs[0]
    try:
        return getattr(math, name)(*xs)
    except ValueError:
        return math.nan
    except OverflowError:
        return math.inf


MATH1 = ["sqrt", "sin", "cos", "tan", "asin", "acos", "atan", "log", "log2", "log10",
         "ceil", "floor", "trunc"]


def test_math_functions(gsqlc, tmp_path):
    exprs = [(n, (x,)) for n in MATH1 for x in ("f", "u", "i")]
    exprs += [("pow", ("f", "2")), ("pow", ("u", "0.5")), ("pow", ("i", "3")),
              ("fmod", ("f", "7")), ("fmod", ("i", "f")), ("fmod", ("u", "3"))]
    out = _run(gsqlc, tmp_path, ", ".join(f"{n}({', '.join(a)}) as c{k}"
                                           for k, (n, a) in enumerate(exprs)))
    assert len(out) == len(ROWS)
    for line in out:
        r = _row(ROWS[int(line[0])])
        for k, (n, args) in enumerate(exprs):
            xs = [float(r[a]) if a in r else float(a) for a in args]
            assert _norm(line[k + 1]) == _fmt(_c_math(n, *xs), "float"), (n, args, r)


def _fnv1a(data: bytes, bits: int) -> int:
    h, prime = ((2166136261, 16777619) if bits == 32 else
                (14695981039346656037, 1099511628211))
    for c in data:
        h = ((h ^ c) * prime) % (1 << bits)
    return h


def _strtoi(s: str) -> int:
    m = re.match(r"[ \t\n\r\f\v]*([+-]?)(\d*)", s)
    v = int(m.group(2) or 0)
    return (-v if m.group(1) == "-" else v) % (1 << 32)


def _to_llong(s: str) -> int:
    m = re.match(r"[ \t\n\r\f\v]*([+-]?)(\d*)", s)
    v = int(m.group(2) or 0) * (-1 if m.group(1) == "-" else 1)
    return max(-(1 << 63), min((1 << 63) - 1, v))


def _entry(s: str, sep: str, i: int) -> str:
    parts = s.split(sep) if sep else [s]
    return parts[i] if i < len(parts) else ""


def test_string_functions_and_predicates(gsqlc, tmp_path):
    sel = ("str_compare(s, 'north') as c1, str_compare[s, ''] as c2, "
           "byte_match_offset(0, 110, s) as b1, byte_match_offset(4, 104, s) as b2, "
           "byte_match_offset(4294967295, 0, s) as b3, byte_match_offset(0, 366, s) as b4, "
           "str_suffix(s, 0) as x1, str_suffix(s, 2) as x2, str_suffix(s, 4294967295) as x3, "
           "get_list_entry(s, ';', 0) as g1, get_list_entry(s, ';', 2) as g2, "
           "get_list_entry(s, ';', 4294967295) as g3, get_list_entry(s, ';;', 1) as g4, "
           "get_list_entry(s, '', 0) as g5, sum_uint_in_list(s, ';') as m1, "
           "sum_uint_in_list(s, '') as m2, string_hash(s) as h1, string_hash_long(s) as h2, "
           "to_llong(s) as l1, endian_swap_ui(u) as e1, "
           "str_partial_regex_match(s, 'b+', 3) as r1, str_partial_regex_match[s, 'or', 4] as r2, "
           "str_partial_regex_match(s, '^', 0) as r3")
    out = _run(gsqlc, tmp_path, sel)
    tf = lambda b: "TRUE" if b else "FALSE"  # noqa: E731
    for line in out:
        r = _row(ROWS[int(line[0])])
        s = r["s"]
        b = s.encode()
        want = [tf(s == "north"), tf(s == ""),
                tf(len(b) > 0 and b[0] == 110), tf(len(b) > 4 and b[4] == 104), "FALSE", "FALSE",
                "", s[-2:] if len(s) >= 2 else s, s,
                _entry(s, ";", 0), _entry(s, ";", 2), "", _entry(s, ";;", 1), s,
                str(_wrap(sum(_strtoi(e) for e in s.split(";")), 64, True)),
                str(_strtoi(s)), str(_fnv1a(b, 32)), str(_fnv1a(b, 64)),
                str(_to_llong(s)),
                str(struct.unpack("<I", struct.pack(">I", r["u"]))[0]),
                tf(re.search("b+", s[:3])), tf(re.search("or", s[:4])), "TRUE"]
        assert line[1:] == want, (s, line)


def test_constant_string_conversions(gsqlc, tmp_path):
    out = _run(gsqlc, tmp_path, "strtoi_c('  42abc') as a, strtoi_c('') as b, "
                                "strtoi_c('-1') as c, strtoip_c('10.1.2.3') as d, "
                                "strtoip_c('10.0.0.300') as e", "where t = 0")
    assert out == [["0", "42", "0", "4294967295", "10.1.2.3", "0.0.0.0"]]


def test_constant_arguments_are_required(gsqlc, tmp_path):
    (tmp_path / "s.txt").write_text(SCHEMA)
    for text in ("select strtoi_c(s) as x from R", "select get_list_entry(s, ';', u) as x from R",
                 "select sum_uint_in_list(s, s) as x from R"):
        (tmp_path / "q.gsql").write_text(text)
        p = gsqlc("compile", tmp_path / "q.gsql", "--schema", tmp_path / "s.txt",
                  "-o", tmp_path / "out")
        assert p.returncode != 0 and "constant-required" in p.err, p.err


def test_placement_follows_lfta_legality(gsqlc, tmp_path):
    """string_hash (LFTA_LEGAL) runs in the LFTA; string_hash_long (not
    LFTA_LEGAL in the def) in the HFTA."""
    (tmp_path / "s.txt").write_text(SCHEMA)
    (tmp_path / "q.gsql").write_text("select t, string_hash(s) as h, string_hash_long(s) as hl, "
                                     "ULLMAX(ul, f) as m from R where byte_match_offset[0, 97, s]")
    p = gsqlc("explain", tmp_path / "q.gsql", "--schema", tmp_path / "s.txt")
    assert p.returncode == 0, p.err
    lfta, hfta = p.out.split("[HFTA]")
    assert "string_hash(s)" in lfta and "ULLMAX(ul, f)" in lfta
    assert "byte_match_offset[0, 97, s]" in lfta
    assert "string_hash_long" not in lfta and "hl ullong [not temporal] := string_hash_long(s)" in hfta


def test_float_to_integer_conversions_saturate(gsqlc, tmp_path):
    """INT, UINT, ULLONG, LLONG, USHORT of a float: truncated toward zero,
    saturated at the type's bounds, NaN read as 0 (C's conversion is
    undefined out of range)."""
    names = [("INT", "int"), ("UINT", "uint"), ("ULLONG", "ullong"), ("LLONG", "llong"),
             ("USHORT", "ushort")]
    out = _run(gsqlc, tmp_path, ", ".join(f"{n}(f) as {r}, {n}(f * 4) as {r}4"
                                           for n, r in names))
    assert len(out) == len(ROWS)
    for line in out:
        f = _row(ROWS[int(line[0])])["f"]
        want = [str(_to(x, r)) for _n, r in names for x in (f, f * 4)]
        assert line[1:] == want, (f, line)
