"""Hypothesis strategies producing GSQL query sets for gsqlc.

Two families:

* `generated_cases()`: query sets built from the grammar's structure
  (compiler/gsqlc/frontend/grammar/gsql.lark): SELECT / FROM / WHERE /
  GROUP BY (ROLLUP, CUBE, GROUPING_SETS) / SUPERGROUP / HAVING / CLEANING /
  CLOSING, MERGE, the joins, FILTER_JOIN, DEFINE and PARAM blocks, literals of
  every kind (IP_VAL, IPV6_VAL, HEX, LHEX, TIMEVAL, strings holding unicode,
  `*/`, `%n`, backslashes, NULs, quotes ...), expressions with every
  operator, deep nesting and huge integers, calls of the catalog's functions
  with right and wrong arity and types, temporal attributes used rightly and
  wrongly -- against the bundled packet schema and small CSV schemas.
  `valid=True` leaves out the deliberate mistakes (mostly compiling sets).
* `mutated_cases()`: real query sets (the conformance cases, examples/,
  tests/data/) mutated token-wise: deletion, duplication, swaps, literal
  replacement, nesting, truncation, stray characters.

A `Case` is what the oracle (fuzz/queries/oracle.py) compiles: query files
(name, text), a schema text (None: gsqlc's packet schema) and what to run
it over.
"""
from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Optional

from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[2]
PACKET_SCHEMA = REPO / "compiler" / "gsqlc" / "data" / "packet_schema.txt"
TRACE = REPO / "examples" / "trace.pcap"
FUZZ_CSV = Path(__file__).resolve().parent / "data"


@dataclass(frozen=True)
class Case:
    files: tuple[tuple[str, str], ...]          # (file name, query text)
    schema: Optional[str] = None                # schema text; None: the packet schema
    kind: str = "pcap"                          # what it runs over: pcap | csv | none
    csv_path: Optional[str] = None              # the CSV input (kind csv)
    csv_separator: str = ","
    library_paths: tuple[str, ...] = ()
    origin: str = "grammar"

    def describe(self) -> str:
        out = [f"# origin: {self.origin}  kind: {self.kind}"]
        for name, text in self.files:
            out.append(f"# ---- {name}\n{text}")
        if self.schema is not None:
            out.append(f"# ---- schema\n{self.schema}")
        return "\n".join(out)


# ====================================================================== schemas

@dataclass(frozen=True)
class Field:
    name: str
    type: str                  # bool ushort uint int ullong llong float IP IPV6 string
    temporal: str = ""         # "" | increasing | decreasing


@dataclass(frozen=True)
class SchemaModel:
    name: str
    text: Optional[str]
    protocols: dict[str, tuple[Field, ...]] = field(hash=False)
    kind: str = "pcap"
    csv_path: Optional[str] = None


_DECL = re.compile(r"(PROTOCOL|STREAM)\s+(\w+)\s*(?:\(([^)]*)\))?\s*\{(.*?)\}", re.S | re.I)
_FIELD = re.compile(r"^\s*(\w+)\s+(\w+)\s*(\w*)\s*(?:\(([^)]*)\))?\s*;", re.M)


def read_schema(text: str) -> dict[str, tuple[Field, ...]]:
    """PROTOCOL name -> its fields (inherited first), from a schema's text."""
    text = re.sub(r"//[^\n]*", "", text)
    out: dict[str, tuple[Field, ...]] = {}
    for _, name, parents, body in _DECL.findall(text):
        fields: dict[str, Field] = {}
        for p in (parents or "").split(","):
            for f in out.get(p.strip(), ()):
                fields[f.name] = f
        for typ, fname, _acc, props in _FIELD.findall(body):
            props = props.lower()
            temporal = ("increasing" if "increasing" in props else
                        "decreasing" if "decreasing" in props else "")
            fields[fname] = Field(fname, typ, temporal)
        out[name] = tuple(fields.values())
    return out


FUZZ_SCHEMA_TEXT = """\
PROTOCOL base {
    uint systemTime get_system_time (low_cardinality, required, increasing, snap_len 0);
}
PROTOCOL FZ (base) {
    ullong ts   get_csv_ullong_pos1 (increasing);
    uint   t    get_csv_uint_pos2 (increasing);
    int    i    get_csv_int_pos3;
    llong  ll   get_csv_llong_pos4;
    ullong ull  get_csv_ullong_pos5;
    float  f    get_csv_float_pos6;
    bool   b    get_csv_bool_pos7;
    IP     ip   get_csv_ip_pos8;
    IPV6   ip6  get_csv_ipv6_pos9;
    string s    get_csv_string_pos10;
    ushort us   get_csv_ushort_pos11;
    uint   down get_csv_uint_pos12 (decreasing);
}
"""


@lru_cache(maxsize=None)
def schemas() -> tuple[SchemaModel, ...]:
    sales = REPO / "tests" / "data" / "schema.txt"
    out = [SchemaModel("packet", None, read_schema(PACKET_SCHEMA.read_text()), "pcap"),
           SchemaModel("fz", FUZZ_SCHEMA_TEXT, read_schema(FUZZ_SCHEMA_TEXT), "csv",
                       str(FUZZ_CSV / "fz.csv"))]
    if sales.is_file():
        out.append(SchemaModel("sales", sales.read_text(), read_schema(sales.read_text()), "csv",
                               str(REPO / "tests" / "data" / "sales.csv")))
    return tuple(out)


# ====================================================================== literals

INT_TYPES = ("bool", "ushort", "uint", "int", "ullong", "llong", "IP")
NUM_TYPES = INT_TYPES + ("float",)

# Bodies of string literals (between the quotes, as written): C-comment
# closers, printf formats, backslashes, NULs, quotes, unicode, trigraphs.
STRING_BODIES = [
    "", "abc", "GET", "*/", "/*", "*/ int x; /*", "%n%n%n%s", "%s%x%p", "%", "100%",
    "\\\\", "\\", "a\\nb", "\\0", "\\x00", "a\\x00b", "\\xff\\xfe", "\\x4", "\\q",
    "''", "\\'", "\"", "\"\"\"", "??/", "??=", "??)", "??'", "é", "日本語", "\U0001F600",
    "\u202e", "\x00", "a\x00b", "\x01\x1f\x7f", "\t", "\u2028", "\ufeff", "\\\\'", "x" * 300,
    "[Hh][Oo][Ss][Tt]: *", "(", "[", "a{1,2}", "(*)", "\\d+", "^$", "a|b", "0", "-1",
    "1.5", "10.0.0.1", "TRUE", "#define X 1", "\"); system(\"x", "*/*/", "/*/",
]

IP_BODIES = ["\\xff\\xfe", "10.\\xff.0.1", "10.0.0.1", "0.0.0.0", "255.255.255.255",
             "127.0.0.1", "10.0.0.256", "1.2.3",
             "1.2.3.4.5", " 10.0.0.1 ", "", "a.b.c.d", "01.02.03.04", "1..2.3", "-1.0.0.0",
             "1.2.3.4\\0", "١.٢.٣.٤", "0x1.2.3.4", "9999.1.1.1"]
IPV6_BODIES = ["\\xc3::1", "::", "::1", "2001:db8::1", "fe80::1%eth0", "::ffff:10.0.0.1", "1::2::3",
               "", "gggg::", "1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8:9", "::ffff:256.0.0.1"]
HEX_BODIES = ["f\\xff", "ff", "0", "0xff", "FFFFFFFF", "100000000", "ffffffffffffffff",
              "10000000000000000", "f" * 40, "", "g", "0x", " ff ", "-1", "1_0", "٣",
              "0X1F", "ff\\0"]
TIMEVAL_BODIES = ["1.\\x80", "0", "1", "12", "1.5", "12.5", "0.000001", "1.123456", "1.1234567",
                  "18446744073709.551615", "18446744073709.551616", "99999999999999999999",
                  "", ".", "1.", ".5", "-1", "+1", "1e3", "abc", " 1.5", "1.5 ", "1,5",
                  "١٢", "1.2.3", "0x10", "1409698284.000000", "nan", "inf"]
INT_TEXTS = ["0", "1", "7", "42", "255", "65535", "65536", "2147483647", "2147483648",
             "4294967295", "4294967296", "9223372036854775807", "9223372036854775808",
             "18446744073709551615", "18446744073709551616", "99999999999999999999999999",
             "1" + "0" * 60, "0x0", "0xff", "0xFFFFFFFF", "0x100000000", "0xFFFFFFFFFFFFFFFF",
             "0x10000000000000000", "42U", "42UL", "42LL", "42ULL", "0x10ULL",
             "4294967296U", "18446744073709551616ULL", "18446744073709551615ULL",
             "9223372036854775808LL", "007", "0u", "1ll"]
FLOAT_TEXTS = ["0.0", "1.5", ".5", "2.", "1e3", "1.5e-3", "1e308", "1e309", "1e-400",
               "123456789012345678901234567890.5", "0.1", "3.14159265358979323846264338"]


def _string_lit(body: str) -> str:
    return f"'{body}'"


@st.composite
def literal(draw: st.DrawFn, typ: Optional[str] = None) -> str:
    """A literal, of `typ`'s family when given (bool/int/float/string/IP/IPV6)."""
    kinds = ["int", "float", "string", "bool", "ip", "ipv6", "hex", "lhex", "timeval"]
    if typ == "string":
        kinds = ["string"]
    elif typ == "float":
        kinds = ["float", "int"]
    elif typ == "bool":
        kinds = ["bool"]
    elif typ == "IP":
        kinds = ["ip", "int", "hex"]
    elif typ == "IPV6":
        kinds = ["ipv6"]
    elif typ in INT_TYPES:
        kinds = ["int", "hex", "lhex", "timeval"]
    k = draw(st.sampled_from(kinds))
    if k == "int":
        return draw(st.one_of(st.sampled_from(INT_TEXTS),
                              st.integers(0, 2**70).map(str)))
    if k == "float":
        return draw(st.one_of(st.sampled_from(FLOAT_TEXTS),
                              st.floats(0, 1e300, allow_nan=False).map(repr)
                              .filter(lambda s: "e" not in s or "." in s)))
    if k == "string":
        body = draw(st.one_of(st.sampled_from(STRING_BODIES),
                              st.text(alphabet=st.characters(
                                  blacklist_characters="'\\\n\r", blacklist_categories=("Cs",)),
                                  max_size=12)))
        return _string_lit(body)
    if k == "bool":
        return draw(st.sampled_from(["TRUE", "FALSE", "true", "False"]))
    if k == "ip":
        return "IP_VAL " + _string_lit(draw(st.sampled_from(IP_BODIES)))
    if k == "ipv6":
        return "IPV6_VAL " + _string_lit(draw(st.sampled_from(IPV6_BODIES)))
    if k in ("hex", "lhex"):
        return f"{k.upper()} " + _string_lit(draw(st.sampled_from(HEX_BODIES)))
    body = draw(st.one_of(st.sampled_from(TIMEVAL_BODIES),
                          st.builds(lambda a, b: f"{a}.{b}", st.integers(0, 2**45),
                                    st.integers(0, 10**7))))
    return "TIMEVAL " + _string_lit(body)


# ====================================================================== expressions

@dataclass
class Scope:
    """What an expression may name."""
    fields: list[tuple[str, Field]]             # (text to write, field)
    params: dict[str, str] = field(default_factory=dict)    # name -> type
    defines: list[str] = field(default_factory=list)
    valid: bool = False

    def of_family(self, typ: Optional[str]) -> list[tuple[str, Field]]:
        if typ is None:
            return self.fields
        if typ in INT_TYPES:
            return [f for f in self.fields if f[1].type in INT_TYPES]
        if typ == "float":
            return [f for f in self.fields if f[1].type in NUM_TYPES]
        return [f for f in self.fields if f[1].type == typ]


# catalog functions: name -> (argument families, result family)
FUNCS: dict[str, tuple[tuple[str, ...], str]] = {
    "str_match_start": (("string", "string"), "bool"),
    "str_exists_substr": (("string", "string"), "bool"),
    "str_match_offset": (("uint", "string", "string"), "bool"),
    "str_regex_match": (("string", "string"), "bool"),
    "str_extract_regex": (("string", "string"), "string"),
    "str_truncate": (("string", "uint"), "string"),
    "str_length": (("string",), "uint"),
    "strtoi": (("string",), "uint"),
    "strtoip": (("string",), "IP"),
    "UMIN": (("uint", "uint"), "uint"),
    "UMAX": (("uint", "uint"), "uint"),
    "INT": (("float",), "int"),
    "UINT": (("float",), "uint"),
    "FLOAT": (("float",), "float"),
    "ULLONG": (("float",), "ullong"),
    "LLONG": (("float",), "llong"),
    "USHORT": (("float",), "ushort"),
    "non_temporal": (("uint",), "uint"),
    "get_system_time": ((), "uint"),
    # the def files' scalars (issue 12, part 5)
    "ULLMIN": (("ullong", "float"), "ullong"),
    "LLMAX": (("llong", "uint"), "ullong"),
    "LMAX": (("int", "uint"), "int"),
    "FMIN": (("float", "llong"), "float"),
    "EQ": (("float", "int"), "uint"),
    "GE": (("ullong", "int"), "uint"),
    "if_else_i": (("uint", "llong", "int"), "llong"),
    "sqrt": (("float",), "float"),
    "pow": (("float", "uint"), "float"),
    "fmod": (("float", "float"), "float"),
    "endian_swap_ui": (("uint",), "uint"),
    "str_compare": (("string", "string"), "bool"),
    "byte_match_offset": (("uint", "uint", "string"), "bool"),
    "str_suffix": (("string", "uint"), "string"),
    "get_list_entry": (("string", "string", "uint"), "string"),
    "sum_uint_in_list": (("string", "string"), "llong"),
    "string_hash": (("string",), "uint"),
    "string_hash_long": (("string",), "ullong"),
    "to_llong": (("string",), "llong"),
    "strtoi_c": (("string",), "uint"),
    "str_partial_regex_match": (("string", "string", "uint"), "bool"),
}
# (function, argument index) that must be a literal of the argument's type
_LITERAL_ARGS = {("get_list_entry", 2), ("sum_uint_in_list", 1), ("strtoi_c", 0)}
AGGS = ["count", "sum", "min", "max", "avg", "And_Aggr", "Or_Aggr", "Xor_Aggr"]
ARITH = ["+", "-", "*", "/", "%"]
BITS = ["&", "|", "<<", ">>"]
CMPS = ["=", "<>", "!=", "<", ">", "<=", ">="]
ANY_TYPES = ("bool", "uint", "int", "ullong", "llong", "float", "string", "IP", "IPV6")


def _family_result(typ: Optional[str]) -> list[str]:
    """Function names whose result suits `typ`."""
    out = []
    for name, (_args, res) in FUNCS.items():
        if typ is None or res == typ or (typ in NUM_TYPES and res in NUM_TYPES and
                                         (typ == "float" or res != "float")):
            out.append(name)
    return out


@st.composite
def expr(draw: st.DrawFn, scope: Scope, typ: Optional[str] = None, depth: int = 3) -> str:
    """An expression, of `typ`'s family when given (mistakes aside)."""
    wrong = not scope.valid and draw(st.integers(0, 19)) == 0
    if wrong:
        typ = draw(st.sampled_from(ANY_TYPES))
    choices = ["field", "literal"]
    if depth > 0:
        choices += ["unary", "binary", "call", "paren"]
        if typ in (None, "bool"):
            choices += ["cmp", "logic", "in"]
    if scope.params:
        choices.append("param")
    if not scope.valid:
        choices += ["define", "oddref"] + (["deep"] if depth > 0 else [])
    c = draw(st.sampled_from(choices))
    fs = scope.of_family(typ)
    if c == "field" and fs:
        return draw(st.sampled_from(fs))[0]
    if c == "field" or c == "literal":
        return draw(literal(typ))
    if c == "param":
        name = draw(st.sampled_from(sorted(scope.params)))
        return f"${name}"
    if c == "define":
        return "#" + draw(st.sampled_from(scope.defines + ["NOPE", "query_name"]))
    if c == "oddref":
        return draw(st.sampled_from(["$undeclared", "@Name", "@iface", "nosuchfield",
                                     "X.time", "count(*)", "sum$(len)", "*",
                                     "f(1)", "str_length[TCP_data]"]))
    if c == "paren":
        return "(" + draw(expr(scope, typ, depth - 1)) + ")"
    if c == "unary":
        if typ == "bool":
            op = draw(st.sampled_from(["NOT ", "!", "not "]))
        elif typ == "float":
            op = "-"
        else:
            op = draw(st.sampled_from(["-", "~", "!"]))
        return op + draw(expr(scope, typ, depth - 1))
    if c == "binary":
        if typ in ("string", "IPV6", "bool") and scope.valid:
            return draw(expr(scope, typ, 0))
        ops = ARITH + (BITS if typ != "float" else [])
        op = draw(st.sampled_from(ops))
        sub = typ if typ in NUM_TYPES else None
        return f"{draw(expr(scope, sub, depth - 1))} {op} {draw(expr(scope, sub, depth - 1))}"
    if c == "cmp":
        t = draw(st.sampled_from(["uint", "int", "ullong", "float", "string", "IP", "bool"]))
        op = draw(st.sampled_from(CMPS))
        return f"{draw(expr(scope, t, depth - 1))} {op} {draw(expr(scope, t, depth - 1))}"
    if c == "logic":
        op = draw(st.sampled_from(["AND", "OR", "and", "or"]))
        return (f"({draw(expr(scope, 'bool', depth - 1))}) {op} "
                f"({draw(expr(scope, 'bool', depth - 1))})")
    if c == "in":
        t = draw(st.sampled_from(["uint", "int", "string", "IP", "ullong"]))
        items = draw(st.lists(literal(t), min_size=0 if not scope.valid else 1, max_size=4))
        return f"{draw(expr(scope, t, depth - 1))} IN [{', '.join(items)}]"
    if c == "call":
        names = _family_result(typ) if scope.valid else list(FUNCS)
        if scope.valid:
            # regex and clock functions only where they build anywhere
            names = [n for n in names if n not in ("get_system_time",)] or ["str_length"]
        name = draw(st.sampled_from(names))
        args_t, res = FUNCS[name]
        if not scope.valid and draw(st.integers(0, 3)) == 0:
            # wrong arity or types
            n = draw(st.integers(0, 4))
            args = [draw(expr(scope, None, depth - 1)) for _ in range(n)]
        else:
            args = []
            for i, at in enumerate(args_t):
                if name in ("str_regex_match", "str_extract_regex",
                            "str_partial_regex_match") and i == 1:
                    args.append(draw(literal("string")) if not scope.valid else
                                _string_lit(draw(st.sampled_from(
                                    ["GET", "[0-9]+", "Host: *[a-z.]*", "a|b", "%s"]))))
                elif name in ("str_match_start", "str_exists_substr") and i == 1:
                    args.append(draw(literal("string")))
                elif (name, i) in _LITERAL_ARGS:
                    args.append(draw(literal(at)))
                else:
                    args.append(draw(expr(scope, at, depth - 1)))
        if res == "bool" and draw(st.booleans()):
            return f"{name}[{', '.join(args)}]"
        name = draw(st.sampled_from([name, name.upper(), name.lower()])) if not scope.valid \
            else name
        return f"{name}({', '.join(args)})"
    # deep nesting
    n = draw(st.sampled_from([20, 64, 100, 200, 500, 1000, 3000]))
    form = draw(st.integers(0, 5))
    base = draw(expr(scope, typ, 0))
    if form == 0:
        return "(" * n + base + ")" * n
    if form == 1:
        return "-" * n + base if typ != "bool" else "NOT " * n + base
    if form == 2:
        return " + ".join([base] * n)
    if form == 3:
        return f"{base} + " * n + "1"          # right operand chain, left-assoc tree
    if form == 4:
        return "(" * n + base + " + 1)" * n
    return "str_length(" * min(n, 300) + "'x'" + ")" * min(n, 300)


# ====================================================================== queries

PKT_PROTOCOLS = ("PKT", "ETH", "IP", "IPV4", "IPV6", "TCP", "UDP", "ICMP")


@dataclass
class QueryText:
    text: str
    name: str
    out: list[tuple[str, Field]]     # output columns (name, field with its type/temporal)


def _qname(draw: st.DrawFn, valid: bool, i: int) -> str:
    if valid or draw(st.integers(0, 5)):
        return f"q{i}"
    return draw(st.sampled_from([
        "", "a b", "a-b", "select", "q'x", "é", "日本", "1abc", "_", "a" * 300, "*/", "%n",
        "q\\0", "default", "gsq_main", "main", "q0", "PKT", "TCP", "A", "x.y", "..", "/tmp/x",
        # escapes written as such (not escaped again): names that are not UTF-8
        RAW + "\\xff\\xfe", RAW + "q\\x80", RAW + "\\xc3", RAW + "ok\\xed\\xa0\\x80"]))


# a name that define_block writes as it is, its escapes read by gsqlc's lexer
RAW = "\x00raw:"


@st.composite
def define_block(draw: st.DrawFn, name: str, valid: bool) -> str:
    qn = name[len(RAW):] if name.startswith(RAW) else \
        name.replace("\\", "\\\\").replace("'", "''")
    items = [f"query_name '{qn}'"]
    if not valid or draw(st.booleans()):
        pool = [
            ("visibility", ["'external'", "'internal'"]),
            ("lfta_table_size", ["1024", "16", "0", "-1", "'abc'", "99999999999999999999",
                                 "4096", "1e9", "'²'", "2147483648", "1048576"]),
            ("aggregate_slots", ["64", "0", "'x'"]),
            ("lfta_table_ways", ["1", "2", "4", "3", "16", "0", "'²'", "'٤'", "99"]),
            ("max_lfta_disorder", ["1", "2", "0", "100", "'²'", "'٢'", "-1"]),
            ("max_hfta_disorder", ["1", "3", "0", "'³'", "99999999999999999999"]),
            ("flush", ["'slow'", "'lazy'", "'immediate'", "'bogus'", "''"]),
            ("slack", ["1", "x"]),
            ("PORT", ["80", "'abc'", "1.5", "-3", "0x10", "99999999999999999999999", "'*/'",
                      "'\\xff\\xfe'"]),
            ("N", ["10", "'%n'", "1e400", "'\\0'"]),
        ]
        for _ in range(draw(st.integers(0, 3))):
            key, vals = draw(st.sampled_from(pool))
            if valid and key in ("lfta_table_size", "aggregate_slots", "lfta_table_ways",
                                 "max_lfta_disorder", "max_hfta_disorder", "flush", "slack"):
                continue
            if any(it.startswith(key + " ") for it in items):
                continue
            items.append(f"{key} {draw(st.sampled_from(vals))}")
    sep = draw(st.sampled_from(["; ", ";\n", " ;"])) if not valid else "; "
    tail = draw(st.sampled_from([";", "", ";;"])) if not valid else ";"
    return "DEFINE { " + sep.join(items) + tail + " }\n"


@st.composite
def param_block(draw: st.DrawFn, valid: bool) -> tuple[str, dict[str, str]]:
    params: dict[str, str] = {}
    decls = []
    types = ["uint", "int", "ullong", "llong", "float", "bool", "string", "IP"]
    if not valid:
        types += ["IPV6", "ushort", "nosuchtype", "UINT"]
    for i in range(draw(st.integers(1, 3))):
        t = draw(st.sampled_from(types))
        handle = " HANDLE" if (not valid and draw(st.integers(0, 4)) == 0) else ""
        params[f"p{i}"] = t
        decls.append(f"p{i} {t}{handle};")
    return "PARAM { " + " ".join(decls) + " }\n", params


def _source_text(draw: st.DrawFn, model: SchemaModel, proto: str, valid: bool) -> str:
    if model.kind == "csv":
        forms = [f"[csv].{proto}", f"csv.{proto}"]
        if not valid:
            forms += [proto, f"[nosuch].{proto}", f"h.csv.{proto}", "NOSUCH", "lib/x"]
    else:
        forms = [proto, f"eth0.{proto}"]
        if not valid:
            forms += [f"[set].{proto}", f"host.eth0.{proto}", "NOSUCH", "lib/x", f"{proto}.x"]
    return draw(st.sampled_from(forms))


def _temporal(fields: list[tuple[str, Field]]) -> list[tuple[str, Field]]:
    return [f for f in fields if f[1].temporal == "increasing"]


@st.composite
def selection(draw: st.DrawFn, model: SchemaModel, idx: int, valid: bool,
              params: Optional[dict[str, str]] = None,
              upstream: Optional[QueryText] = None) -> QueryText:
    if upstream is not None:
        src = upstream.name
        fields = [(n, f) for n, f in upstream.out]
    else:
        proto = draw(st.sampled_from(sorted(model.protocols)))
        src = _source_text(draw, model, proto, valid)
        fields = [(f.name, f) for f in model.protocols[proto]]
    scope = Scope(fields, dict(params or {}), ["PORT", "N"], valid)
    temporal = _temporal(fields)
    items: list[str] = []
    out: list[tuple[str, Field]] = []
    if temporal and (valid or draw(st.integers(0, 3))):
        tn, tf = draw(st.sampled_from(temporal))
        items.append(tn)
        out.append((tn, tf))
    for j in range(draw(st.integers(0 if items else 1, 3))):
        if fields and draw(st.booleans()):
            n, f = draw(st.sampled_from(fields))
            if any(n == o for o, _ in out):
                continue
            items.append(n)
            out.append((n, f))
        else:
            t = draw(st.sampled_from(["uint", "int", "ullong", "float", "string", "bool", "IP"]))
            e = draw(expr(scope, t, draw(st.integers(0, 3))))
            items.append(f"{e} AS c{j}")
            out.append((f"c{j}", Field(f"c{j}", t)))
    text = "SELECT " + ", ".join(items) + f"\nFROM {src}"
    if draw(st.booleans()):
        text += "\nWHERE " + draw(expr(scope, "bool", draw(st.integers(1, 3))))
    name = _qname(draw, valid, idx)
    return QueryText(text, name, out)


@st.composite
def aggregation(draw: st.DrawFn, model: SchemaModel, idx: int, valid: bool,
                params: Optional[dict[str, str]] = None,
                upstream: Optional[QueryText] = None) -> QueryText:
    if upstream is not None:
        src = upstream.name
        fields = list(upstream.out)
    else:
        proto = draw(st.sampled_from(sorted(model.protocols)))
        src = _source_text(draw, model, proto, valid)
        fields = [(f.name, f) for f in model.protocols[proto]]
    scope = Scope(fields, dict(params or {}), ["PORT", "N"], valid)
    temporal = _temporal(fields)
    gb: list[str] = []
    out: list[tuple[str, Field]] = []
    if temporal and (valid or draw(st.integers(0, 4))):
        tn, tf = draw(st.sampled_from(temporal))
        form = draw(st.sampled_from([f"{tn}/60", f"{tn}", f"{tn}/10", f"{tn} + 5",
                                     f"{tn}*2", f"({tn}/60)*60"] +
                                    ([] if valid else [f"100 - {tn}", f"{tn} - 5",
                                                       f"-{tn}", f"{tn} % 60", f"{tn}/0",
                                                       f"{tn}/-1", f"non_temporal({tn})",
                                                       f"{tn} * {tn}", f"{tn}/60.0"])))
        gb.append(f"{form} AS tb")
        out.append(("tb", Field("tb", tf.type, "increasing")))
    elif fields:
        n, f = draw(st.sampled_from(fields))       # a non-temporal group-by: an error
        gb.append(f"{n} AS tb")
        out.append(("tb", f))
    plain = [f for f in fields if f[1].type not in ("float",)]
    for n, f in draw(st.lists(st.sampled_from(plain), max_size=2, unique=True)) if plain else []:
        if any(n == o for o, _ in out):
            continue
        gb.append(n)
        out.append((n, f))
    if not valid and draw(st.integers(0, 5)) == 0:
        kind = draw(st.sampled_from(["ROLLUP", "CUBE", "GROUPING_SETS"]))
        names = [g.split(" AS ")[0] for g in gb[1:]] or ["len"]
        if kind == "GROUPING_SETS":
            gb[1:] = [f"GROUPING_SETS(({', '.join(names)}), ())"]
        else:
            gb[1:] = [f"{kind}({', '.join(names)})"]
    items = [o for o, _ in out]
    numeric = [f for f in fields if f[1].type in NUM_TYPES]
    for j in range(draw(st.integers(1, 3))):
        agg = draw(st.sampled_from(AGGS))
        if agg == "count" and draw(st.booleans()):
            items.append(f"count(*) AS a{j}")
            out.append((f"a{j}", Field(f"a{j}", "ullong")))
            continue
        if valid:
            cands = [f for f in numeric if agg not in ("And_Aggr", "Or_Aggr", "Xor_Aggr")
                     or f[1].type != "float"]
            if not cands:
                items.append(f"count(*) AS a{j}")
                out.append((f"a{j}", Field(f"a{j}", "ullong")))
                continue
            arg = draw(st.sampled_from(cands))[0]
        else:
            arg = draw(expr(scope, None, 1))
            if draw(st.integers(0, 6)) == 0:
                arg = draw(st.sampled_from(["*", "", "len, len", "count(*)", "sum(len)"]))
            if draw(st.integers(0, 8)) == 0:
                agg = agg + "$"
        items.append(f"{agg}({arg}) AS a{j}")
        out.append((f"a{j}", Field(f"a{j}", "ullong")))
    if not valid and draw(st.integers(0, 4)) == 0 and fields:
        items.append(draw(st.sampled_from(fields))[0])       # a field not grouped
    text = "SELECT " + ", ".join(items) + f"\nFROM {src}"
    if draw(st.booleans()):
        text += "\nWHERE " + draw(expr(scope, "bool", draw(st.integers(1, 2))))
    text += "\nGROUP BY " + ", ".join(gb)
    if not valid and draw(st.integers(0, 5)) == 0:
        text += "\nSUPERGROUP " + draw(st.sampled_from(["tb", "nosuch", "tb, tb"]))
    if draw(st.integers(0, 2)) == 0:
        if valid:
            text += "\nHAVING count(*) > " + draw(st.sampled_from(["0", "1", "5"]))
        else:
            text += "\nHAVING " + draw(expr(scope, "bool", 1))
    if not valid:
        for clause in ("CLEANING_WHEN", "CLEANING_BY", "CLOSING_WHEN"):
            if draw(st.integers(0, 7)) == 0:
                text += f"\n{clause} " + draw(st.sampled_from(
                    ["count(*) > 2", "tb > 0", "TRUE", "sum$(len) > 0", "len > 0"]))
    return QueryText(text, _qname(draw, valid, idx), out)


@st.composite
def two_input(draw: st.DrawFn, model: SchemaModel, left: QueryText, right: QueryText,
              idx: int, valid: bool) -> QueryText:
    """A join, filter join or merge of two named queries."""
    a, b = "A", "B"
    lt = _temporal(left.out)
    rt = _temporal(right.out)
    form = draw(st.sampled_from(["join", "merge", "filter"]))
    if form == "merge":
        common = [n for n, f in left.out if f.temporal and any(n == m for m, _ in right.out)]
        col = draw(st.sampled_from(common)) if common else (left.out[0][0] if left.out else "x")
        if not valid and draw(st.integers(0, 3)) == 0:
            col = draw(st.sampled_from([n for n, _ in left.out] or ["x"]))
        slack = f" SLACK {draw(st.sampled_from(['1', '0', '10', '-1', 'x', '1.5']))}" \
            if draw(st.integers(0, 3)) == 0 else ""
        text = f"MERGE {a}.{col} : {b}.{col}{slack}\nFROM {left.name} {a}, {right.name} {b}"
        out = [(n, f) for n, f in left.out]
        return QueryText(text, _qname(draw, valid, idx), out)
    cols = [f"{a}.{n}" for n, _ in left.out[:2]] + [f"{b}.{n} AS r_{n}" for n, _ in right.out[:2]]
    preds = []
    if lt and rt:
        ln, rn = draw(st.sampled_from(lt))[0], draw(st.sampled_from(rt))[0]
        if draw(st.booleans()):
            preds.append(f"{a}.{ln} = {b}.{rn}")
        else:
            preds.append(f"{a}.{ln} >= {b}.{rn} - 5 AND {a}.{ln} <= {b}.{rn} + 5")
    if not valid and draw(st.integers(0, 3)) == 0:
        preds = preds[:0]
    same = [(n, f) for n, f in left.out if any(n == m and f.type == g.type for m, g in right.out)
            and not f.temporal]
    if same and draw(st.booleans()):
        n = draw(st.sampled_from(same))[0]
        preds.append(f"{a}.{n} = {b}.{n}")
    if form == "filter":
        spec = f"FILTER_JOIN({a}.{lt[0][0] if lt else 'x'}, " \
               f"{draw(st.sampled_from(['10', '1', '0', '-1', 'x', '99999999999', '#N']))})"
    else:
        spec = draw(st.sampled_from(["INNER_JOIN", "LEFT_OUTER_JOIN", "RIGHT_OUTER_JOIN",
                                     "OUTER_JOIN", ""]))
    text = "SELECT " + ", ".join(cols or ["1"]) + f"\n{spec} FROM {left.name} {a}, {right.name} {b}"
    if preds:
        text += "\nWHERE " + " AND ".join(preds)
    out = [(n.split(".")[-1], f) for n, f in left.out[:2]]
    return QueryText(text, _qname(draw, valid, idx), out)


@st.composite
def query_set(draw: st.DrawFn, valid: bool = False) -> Case:
    model = draw(st.sampled_from(schemas()))
    if model.name == "packet" and valid:
        # keep builds cheap: the common protocols
        model = SchemaModel(model.name, model.text,
                            {k: v for k, v in model.protocols.items() if k in ("IPV4", "TCP", "UDP")},
                            model.kind)
    params: dict[str, str] = {}
    preamble = ""
    if not valid and draw(st.integers(0, 4)) == 0:
        preamble, params = draw(param_block(valid))
    shape = draw(st.sampled_from(["sel", "agg", "sel>agg", "two", "sel>sel"]))
    queries: list[tuple[QueryText, str]] = []
    idx = 0

    def add(q: QueryText, pre: str = "") -> QueryText:
        queries.append((q, pre))
        return q

    if shape == "sel":
        add(draw(selection(model, idx, valid, params)), preamble)
    elif shape == "agg":
        add(draw(aggregation(model, idx, valid, params)), preamble)
    elif shape in ("sel>agg", "sel>sel"):
        up = add(draw(selection(model, 0, valid)))
        gen = aggregation if shape == "sel>agg" else selection
        add(draw(gen(model, 1, valid, params, upstream=up)), preamble)
    else:
        left = add(draw(selection(model, 0, valid)))
        right = add(draw(selection(model, 1, valid)))
        add(draw(two_input(model, left, right, 2, valid)))
    parts = []
    for q, pre in queries:
        parts.append(draw(define_block(q.name, valid)) + pre + q.text)
    if not valid and draw(st.integers(0, 9)) == 0:
        parts.append(draw(st.sampled_from(["", ";", "SELECT", "DEFINE { }", "x"])))
    text = _render(draw, ";\n".join(parts) + draw(st.sampled_from(["", ";", "\n", ";\n"])), valid)
    if len(queries) > 1 and draw(st.booleans()):
        files = tuple((f"f{i}.gsql", _render(draw, draw(define_block(q.name, valid)) + pre
                                             + q.text, valid))
                      for i, (q, pre) in enumerate(queries))
    else:
        files = (("q.gsql", text),)
    return Case(files, model.text, model.kind, model.csv_path,
                origin=f"grammar{'-valid' if valid else ''}:{model.name}:{shape}")


def _render(draw: st.DrawFn, text: str, valid: bool) -> str:
    """Layout noise: comments, keyword case, CRLF, tabs, a BOM."""
    if valid:
        return text
    n = draw(st.integers(0, 9))
    if n == 0:
        text = text.replace("\n", "\r\n")
    elif n == 1:
        text = "\ufeff" + text
    elif n == 2:
        text = "/* leading */ -- x\n// y\n" + text.replace("\n", " /* c */\n")
    elif n == 3:
        text = text.replace(" ", "\t")
    elif n == 4:
        text = re.sub(r"\b(SELECT|FROM|WHERE|GROUP BY|AND)\b", lambda m: m.group(1).lower(), text)
    elif n == 5:
        text = text + "\n-- trailing comment without newline"
    return text


def generated_cases(valid: bool = False) -> st.SearchStrategy[Case]:
    return query_set(valid)


# ====================================================================== mutations

_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<comment>--[^\n]*|//[^\n]*|/\*.*?\*/)
  | (?P<string>'(?:[^'\\\n]|\\.|'')*')
  | (?P<number>0[xX][0-9A-Fa-f]+\w*|\d+\.?\d*(?:[eE][+-]?\d+)?\w*|\.\d+)
  | (?P<word>[A-Za-z_$#@][A-Za-z0-9_$]*)
  | (?P<op><>|!=|<=|>=|<<|>>|.)
""", re.X | re.S)


def tokens(text: str) -> list[tuple[str, str]]:
    return [(m.lastgroup or "op", m.group()) for m in _TOKEN.finditer(text)]


@dataclass(frozen=True)
class Seed:
    name: str
    files: tuple[tuple[str, str], ...]
    schema: Optional[str]
    kind: str
    csv_path: Optional[str] = None
    csv_separator: str = ","
    library_paths: tuple[str, ...] = ()


def _shared() -> Path:
    import os
    env = os.environ.get("GSQLC_SHARED")
    return Path(env) if env else REPO.parent / "shared"


@lru_cache(maxsize=None)
def seeds() -> tuple[Seed, ...]:
    """The real query sets the mutations start from."""
    out: list[Seed] = []
    manifest = _shared() / "conformance" / "tigon" / "cases.tsv"
    if manifest.is_file():
        root = manifest.parent
        with open(manifest, newline="") as f:
            for row in csv.DictReader(f, delimiter="\t"):
                case = root / row["case"]
                files = tuple((q, (case / q).read_text(encoding="utf-8", errors="replace"))
                              for q in row["queries"].split(","))
                out.append(Seed("conformance:" + row["case"], files,
                                (root / row["schema"]).read_text(), "csv",
                                str(case / row["input"]), "|"))
    pkt = (REPO / "examples" / "packet_schema.txt")
    for p in sorted((REPO / "examples").glob("*.gsql")):
        out.append(Seed("examples:" + p.name, ((p.name, p.read_text()),),
                        pkt.read_text() if pkt.is_file() else None, "pcap"))
    data = REPO / "tests" / "data"
    if (data / "schema.txt").is_file():
        texts = {p.name: p.read_text() for p in sorted(data.glob("*.gsql"))}
        for name, text in texts.items():
            files = ((name, text),)
            if name == "orders_per_minute.gsql" and "big_orders.gsql" in texts:
                files = (("big_orders.gsql", texts["big_orders.gsql"]), files[0])
            out.append(Seed("tests-data:" + name, files, (data / "schema.txt").read_text(),
                            "csv", str(data / "sales.csv"), ",", (str(data / "lib"),)))
    return tuple(out)


def _literal_pool() -> list[str]:
    return (INT_TEXTS + FLOAT_TEXTS + [_string_lit(s) for s in STRING_BODIES[:30]]
            + ["IP_VAL '10.0.0.1'", "IP_VAL '1.2.3'", "HEX 'ff'", "LHEX 'f'",
               "TIMEVAL '1.5'", "TIMEVAL 'x'", "IPV6_VAL '::1'", "TRUE", "FALSE"])


_WORDS = ["SELECT", "FROM", "WHERE", "GROUP", "BY", "HAVING", "AS", "AND", "OR", "NOT", "IN",
          "MERGE", "SLACK", "DEFINE", "PARAM", "INNER_JOIN", "FILTER_JOIN", "SUPERGROUP",
          "CLOSING_WHEN", "ROLLUP", "CUBE", "count", "sum", "avg", "str_length", "UMAX",
          "time", "timestamp", "len", "srcIP", "systemTime", "query_name", "x", "sum$",
          "$p", "#X", "@i", "get_system_time", "non_temporal", "str_regex_match"]
_PUNCT = ["(", ")", "[", "]", ",", ";", ".", ":", "{", "}", "*", "/", "+", "-", "<", "=",
          "'", "/*", "*/", "--", "\\", "$", "#", "@", "\x00", "\u00e9", "\ufeff", "\n", "%"]


@st.composite
def mutated_cases(draw: st.DrawFn) -> Case:
    seed = draw(st.sampled_from(seeds()))
    fi = draw(st.integers(0, len(seed.files) - 1))
    name, text = seed.files[fi]
    toks = tokens(text)
    for _ in range(draw(st.integers(1, 4))):
        sig = [i for i, (k, _) in enumerate(toks) if k not in ("ws", "comment")]
        if not sig:
            break
        op = draw(st.sampled_from(["delete", "dup", "swap", "literal", "word", "nest",
                                   "insert", "truncate", "dupspan", "number"]))
        i = draw(st.sampled_from(sig))
        if op == "delete":
            del toks[i]
        elif op == "dup":
            toks.insert(i, toks[i])
        elif op == "swap":
            j = draw(st.sampled_from(sig))
            toks[i], toks[j] = toks[j], toks[i]
        elif op == "literal":
            lits = [k for k in sig if toks[k][0] in ("string", "number", "word")]
            k = draw(st.sampled_from(lits)) if lits else i
            toks[k] = ("string", draw(st.one_of(st.sampled_from(_literal_pool()), literal())))
        elif op == "number":
            nums = [k for k in sig if toks[k][0] == "number"] or [i]
            toks[draw(st.sampled_from(nums))] = ("number", draw(st.sampled_from(INT_TEXTS)))
        elif op == "word":
            toks[i] = ("word", draw(st.sampled_from(_WORDS)))
        elif op == "insert":
            toks.insert(i, ("op", " " + draw(st.sampled_from(_PUNCT + _WORDS)) + " "))
        elif op == "truncate":
            toks = toks[:i]
        elif op == "dupspan":
            j = draw(st.integers(i, min(len(toks), i + 12)))
            toks[i:i] = toks[i:j]
        else:   # nest: wrap an operand in parentheses, or negate it
            if toks[i][0] in ("word", "number", "string"):
                n = draw(st.sampled_from([1, 3, 50, 400, 2000]))
                how = draw(st.sampled_from(["paren", "neg", "not", "call"]))
                v = toks[i][1]
                if how == "paren":
                    v = "(" * n + v + ")" * n
                elif how == "neg":
                    v = "-" * n + v
                elif how == "not":
                    v = "NOT " * n + v
                else:
                    v = "UMAX(" * n + v + ", 1)" * n
                toks[i] = ("nest", v)
    new = "".join(t for _, t in toks)
    files = list(seed.files)
    files[fi] = (name, new)
    return Case(tuple(files), seed.schema, seed.kind, seed.csv_path, seed.csv_separator,
                seed.library_paths, origin=f"mutation:{seed.name}")


def any_case() -> st.SearchStrategy[Case]:
    return st.one_of(generated_cases(False), generated_cases(True), mutated_cases())


__all__: list[str] = ["Case", "generated_cases", "mutated_cases", "any_case", "seeds",
                      "schemas", "tokens", "FUZZ_SCHEMA_TEXT"]
