"""Parsing: source text -> typed AST (frontend/ast.py), with spans.

Takes a file's text (or reads its path); returns an ast.QueryFile or an
ast.SchemaFile.  No names are resolved and no types checked here.

    parse_query_file(path, text=None)  -> ast.QueryFile
    parse_schema_file(path, text=None) -> ast.SchemaFile

Both register the source text for diagnostics and raise
`QueryError(span, 'syntax', message)` on a lexical or syntax error (and
`QueryError(span, 'bad-literal', ...)` on an invalid typed literal such as
`IP_VAL '10.0.0.256'`).

The grammars live in grammar/gsql.lark and grammar/schema.lark (LALR(1));
the lark parsers are built once per process and cached.
"""
from __future__ import annotations

import difflib
import ipaddress
import re
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

from lark import Lark, Token, Transformer, Tree, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken, VisitError
from lark.tree import Meta

from ..errors import QueryError, register_source
from . import ast
from .ast import Span

_GRAMMAR_DIR = Path(__file__).resolve().parent / "grammar"
_PARSERS: dict[str, Lark] = {}


def _table_cache(name: str) -> "str | bool":
    """Where lark keeps the LALR tables it computed for a grammar (keyed by
    the grammar's hash inside the file), so that a gsqlc command does not
    spend 0.2 s rebuilding them."""
    from ..resources import cache_root
    try:
        d = cache_root()
        d.mkdir(parents=True, exist_ok=True)
        return str(d / f"lark-{name}.tables")
    except OSError:
        return True  # lark's own temporary-directory cache


def _get_parser(kind: str) -> Lark:
    """The cached lark parser for 'query', 'schema' or 'fcn_defs'."""
    p = _PARSERS.get(kind)
    if p is None:
        if kind == "query":
            p = Lark((_GRAMMAR_DIR / "gsql.lark").read_text(), parser="lalr",
                     lexer="basic", propagate_positions=True,
                     maybe_placeholders=False, cache=_table_cache("gsql"))
        elif kind == "fcn_defs":
            # contextual lexer: FUN, UDAF, ... are keywords only where a
            # declaration's kind is read (function-definition files)
            p = Lark((_GRAMMAR_DIR / "fcn_defs.lark").read_text(), parser="lalr",
                     lexer="contextual", propagate_positions=True,
                     maybe_placeholders=False, cache=_table_cache("fcn_defs"))
        else:
            # contextual lexer: PROTOCOL / STREAM are keywords only where a
            # declaration can start, so fields may be named `protocol`.
            p = Lark((_GRAMMAR_DIR / "schema.lark").read_text(), parser="lalr",
                     lexer="contextual", propagate_positions=True,
                     maybe_placeholders=False, cache=_table_cache("schema"))
        _PARSERS[kind] = p
    return p


# ====================================================================== API


def parse_query_file(path: str, text: Optional[str] = None) -> ast.QueryFile:
    """Parse a GSQL query file (one or more queries separated by ';')."""
    if text is None:
        text = _read(path)
    register_source(path, text)
    tree = _parse("query", path, text)
    queries = _transform(_QueryBuilder(path, text), tree)
    return ast.QueryFile(path=path, queries=queries, text=text,
                         span=_file_span(path, text))


def parse_schema_file(path: str, text: Optional[str] = None) -> ast.SchemaFile:
    """Parse a schema file (PROTOCOL and STREAM declarations)."""
    if text is None:
        text = _read(path)
    register_source(path, text)
    tree = _parse("schema", path, text)
    protocols = _transform(_SchemaBuilder(path, text), tree)
    return ast.SchemaFile(path=path, protocols=protocols, text=text,
                          span=_file_span(path, text))


def read_source(path: str) -> str:
    """A source file's text (UTF-8, else Latin-1)."""
    return _read(path)


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", newline="") as f:
            return f.read()
    except UnicodeDecodeError:
        with open(path, encoding="latin-1", newline="") as f:
            return f.read()


def _file_span(path: str, text: str) -> Span:
    lines = text.split("\n")
    return Span(path, 1, 1, len(lines), len(lines[-1]) + 1)


def parse_tree(kind: str, path: str, text: str) -> Any:
    """The lark tree of `text` by grammar `kind` ('query', 'schema',
    'fcn_defs'); raises a located QueryError('syntax')."""
    return _parse(kind, path, text)


def _parse(kind: str, path: str, text: str) -> Any:
    parser = _get_parser(kind)
    try:
        tree = parser.parse(text)
    except UnexpectedInput as e:
        raise _syntax_error(kind, path, text, e) from None
    _check_nesting(path, tree)
    return tree


# How deeply expressions may nest (operators, calls and IN lists inside one
# another).  Every pass after the parser walks expressions recursively, the
# tree transformer first; beyond a few hundred levels Python's recursion
# limit would end the compilation with a RecursionError instead of an error
# located in the query.  Parentheses alone do not count.
MAX_NESTING = 100
_NESTING_RULES = frozenset({
    "binop", "or_expr", "and_expr", "not_expr", "unary", "in_list", "call", "call_star",
    "super_call", "super_call_star", "predicate_call"})


def _check_nesting(path: str, tree: Tree[Token]) -> None:
    """Raise QueryError(span, 'nesting-too-deep', ...) at the first
    expression nested deeper than MAX_NESTING (iteratively: the tree may be
    too deep to recurse over)."""
    stack: list[tuple[Tree[Token], int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if node.data in _NESTING_RULES:
            depth += 1
            if depth > MAX_NESTING:
                meta = node.meta
                span = Span(path, meta.line, meta.column, meta.end_line, meta.end_column) \
                    if not getattr(meta, "empty", True) else ast.NO_SPAN
                raise QueryError(span, "nesting-too-deep",
                                 f"expression nested too deeply: more than {MAX_NESTING} "
                                 "levels of operators and function calls inside one another "
                                 "(split it, or name parts in a query that this one reads)")
        for c in node.children:
            if isinstance(c, Tree):
                stack.append((c, depth))


def _transform(builder: "Transformer[Token, Any]", tree: Any) -> Any:
    try:
        return builder.transform(tree)
    except VisitError as e:
        if isinstance(e.orig_exc, QueryError):
            raise e.orig_exc from None
        raise


# ====================================================================== errors

# How terminals are shown to users in "expected ..." lists.
_DISPLAY = {
    "NAME": "name",
    "SUPER_NAME": "name$",
    "NUMBER": "number",
    "STRING": "string",
    "DEFINE_REF": "#NAME",
    "PARAM_REF": "$param",
    "IFACE_PARAM": "@param",
    "NE": "'<>'",
    "GROUP": "GROUP BY",
    "$END": "end of input",
}
_PUNCT_ORDER = [",", ";", ":", "(", ")", "[", "]", "{", "}", "."]
_KEYWORD_ORDER = [
    "SELECT", "MERGE", "DEFINE", "PARAM", "PROTOCOL", "STREAM",
    "join keyword", "INNER_JOIN", "LEFT_OUTER_JOIN", "RIGHT_OUTER_JOIN", "OUTER_JOIN",
    "FILTER_JOIN", "FROM", "WHERE", "GROUP BY", "SUPERGROUP", "HAVING",
    "CLEANING_WHEN", "CLEANING_BY", "CLOSING_WHEN", "AS", "SLACK",
    "HANDLE", "BY", "IN", "AND", "OR", "NOT",
]
_CATEGORY_ORDER = ["operator", "expression", "name", "number", "string",
                   "end of input"]
# Terminals that may start an expression, and binary operators.
_EXPR_START = {"NAME", "SUPER_NAME", "NUMBER", "STRING", "TRUE", "FALSE",
               "IP_VAL", "IPV6_VAL", "HEX", "LHEX", "TIMEVAL", "DEFINE_REF",
               "PARAM_REF", "IFACE_PARAM", "LPAR", "MINUS", "BANG", "TILDE",
               "NOT"}
_EXPR_CORE = {"NAME", "NUMBER", "STRING", "LPAR"}
_OPERATORS = {"PLUS", "MINUS", "STAR", "SLASH", "PERCENT", "AMP", "PIPE",
              "SHL", "SHR", "EQ", "NE", "LT", "GT", "LE", "GE", "AND", "OR",
              "IN"}
_JOIN_KEYWORDS = {"INNER_JOIN", "LEFT_OUTER_JOIN", "RIGHT_OUTER_JOIN",
                  "OUTER_JOIN", "FILTER_JOIN"}
_MAX_EXPECTED = 8


def _terminal_display(parser: Lark, name: str) -> str:
    if name in _DISPLAY:
        return _DISPLAY[name]
    try:
        term = parser.get_terminal(name)
    except KeyError:
        return name
    pat = term.pattern
    if pat.type == "str":
        v = pat.value
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", v):
            return v.upper()
        return f"'{v}'"
    return name.lower()


def _rank(item: str) -> tuple[object, ...]:
    if item.startswith("'"):
        sym = item[1:-1]
        idx = _PUNCT_ORDER.index(sym) if sym in _PUNCT_ORDER else len(_PUNCT_ORDER)
        return (0, idx, item)
    if item in _CATEGORY_ORDER:
        return (3, _CATEGORY_ORDER.index(item), item)
    if item in _KEYWORD_ORDER:
        return (1, _KEYWORD_ORDER.index(item), item)
    return (2, 0, item)


def _expected_list(parser: Lark, expected: Iterable[str]) -> list[str]:
    exp = set(expected)
    items: set[str] = set()
    if _EXPR_CORE <= exp:
        exp -= _EXPR_START
        items.add("expression")
    ops = exp & _OPERATORS
    if len(ops) >= 3:
        exp -= _OPERATORS
        # '(' '[' '.' after a name are postfix forms; not worth listing next
        # to every operator.
        exp -= {"LPAR", "LSQB", "DOT"}
        items.add("operator")
    joins = exp & _JOIN_KEYWORDS
    if len(joins) >= 3:
        exp -= _JOIN_KEYWORDS
        items.add("join keyword")
    for name in exp:
        items.add(_terminal_display(parser, name))
    return sorted(items, key=_rank)


def _format_expected(items: list[str]) -> str:
    if not items:
        return ""
    if len(items) == 1:
        return f"; expected {items[0]}"
    shown = items[:_MAX_EXPECTED]
    more = ", ..." if len(items) > _MAX_EXPECTED else ""
    return "; expected one of: " + ", ".join(shown) + more


def _describe_token(tok: Token) -> str:
    if tok.type == "$END":
        return "end of input"
    text = str(tok)
    if len(text) > 30:
        text = text[:27] + "..."
    return f"'{text}'"


def _keyword_hint(word: str, expected_items: list[str]) -> Optional[str]:
    """'grup' -> 'GROUP BY' when GROUP BY is expected."""
    kws = [k for k in expected_items if k in _KEYWORD_ORDER or
           re.fullmatch(r"[A-Z_]+( BY)?", k)]
    if not kws:
        return None
    firsts = {k.split()[0].lower(): k for k in kws}
    m = difflib.get_close_matches(word.lower(), list(firsts), n=1, cutoff=0.7)
    return firsts[m[0]] if m else None


def _precise_expected(e: UnexpectedToken) -> set[str]:
    """The terminals really acceptable at the error.

    An LALR state's lookahead set may list tokens that only become errors
    after a few reductions (LALR merges lookaheads); the interactive parser
    tries each candidate on a copy of the parser stack."""
    ip = getattr(e, "interactive_parser", None)
    if ip is not None:
        try:
            acc = ip.accepts()
            if acc:
                return set(acc)
        except Exception:  # pragma: no cover - fall back to lark's set
            pass
    return set(e.expected)


def _token_span(path: str, tok: Token) -> Span:
    assert tok.line is not None and tok.column is not None
    end_line = tok.end_line if tok.end_line is not None else tok.line
    end_col = tok.end_column if tok.end_column is not None else tok.column + 1
    return Span(path, tok.line, tok.column, end_line, end_col)


def _line_end_col(text: str, pos: int) -> int:
    """1-based exclusive column of the end of the line holding pos."""
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    if end < 0:
        end = len(text)
    line = text[start:end].rstrip("\r")
    return len(line) + 1


def _previous_token(parser: Lark, text: str, pos: int) -> Optional[Token]:
    prev = None
    try:
        for tok in parser.lex(text):
            if tok.start_pos is not None and tok.start_pos >= pos:
                break
            prev = tok
    except UnexpectedInput:
        pass
    return prev


def _syntax_error(kind: str, path: str, text: str, e: UnexpectedInput) -> QueryError:
    parser = _get_parser(kind)
    if isinstance(e, UnexpectedCharacters):
        pos = e.pos_in_stream
        assert pos is not None
        ch = text[pos] if pos < len(text) else ""
        if ch == "'":
            span = Span(path, e.line, e.column, e.line, _line_end_col(text, pos))
            return QueryError(span, "syntax", "unterminated string literal "
                             "(a string must close with ' on the same line)")
        if text.startswith("/*", pos):
            span = Span(path, e.line, e.column, e.line, e.column + 2)
            return QueryError(span, "syntax", "unterminated comment: '/*' "
                             "without a closing '*/'")
        span = Span(path, e.line, e.column, e.line, e.column + 1)
        shown = ch if ch.isprintable() else f"\\x{ord(ch):02x}" if ord(ch) < 256 \
            else f"\\u{ord(ch):04x}"
        return QueryError(span, "syntax", f"unexpected character '{shown}'")

    if isinstance(e, UnexpectedToken):
        tok = e.token
        expected = _expected_list(parser, _precise_expected(e))
        if tok.type == "$END":
            # Point just after the last token (where something is missing).
            if tok.end_line is not None and text.strip():
                line, col = tok.end_line, tok.end_column
            else:
                line, col = 1, 1
            span = Span(path, line, col, line, col + 1)
            return QueryError(span, "syntax", "unexpected end of input"
                             + _format_expected(expected))
        if tok.type in ("SLASH", "STAR") and tok.start_pos is not None and \
                text.startswith("/*", tok.start_pos - (1 if tok.type == "STAR" else 0)):
            span = _token_span(path, tok)
            return QueryError(span, "syntax", "unterminated comment: '/*' "
                             "without a closing '*/'")
        span = _token_span(path, tok)
        found = _describe_token(tok)
        hint = None
        if tok.type == "NAME":
            hint = _keyword_hint(str(tok), expected)
        if hint is None and tok.start_pos is not None:
            # `from T grup by x`: 'grup' was taken as an alias and the error
            # only shows at 'by'.  Blame the misspelt word instead.
            prev = _previous_token(parser, text, tok.start_pos)
            if prev is not None and prev.type == "NAME":
                h = _keyword_hint(str(prev), expected)
                if h is not None:
                    hint, span, found = h, _token_span(path, prev), _describe_token(prev)
        msg = f"unexpected {found}"
        if hint:
            msg += f" (did you mean {hint}?)"
        return QueryError(span, "syntax", msg + _format_expected(expected))

    if isinstance(e, UnexpectedEOF):
        expected = _expected_list(parser, e.expected)
        lines = text.split("\n")
        span = Span(path, len(lines), len(lines[-1]) + 1)
        return QueryError(span, "syntax", "unexpected end of input"
                         + _format_expected(expected))

    span = Span(path, getattr(e, "line", 1) or 1, getattr(e, "column", 1) or 1)
    return QueryError(span, "syntax", str(e))


# ====================================================================== literals

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


def _number_literal(text: str) -> tuple[str, Any]:
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
_INT_LIMITS = {"int": (2**64 - 1, "ullong"), "uint": (2**32 - 1, "uint"),
               "llong": (2**63 - 1, "llong"), "ullong": (2**64 - 1, "ullong")}

_TIMEVAL = re.compile(r"([0-9]+)(?:\.([0-9]{1,6}))?")
_MAX_ULLONG = 2**64 - 1


def parse_timeval(body: str) -> Optional[int]:
    """TIMEVAL 'S[.F]': the ULLONG number of microseconds S*1000000 + F (F
    up to 6 decimal digits, padded: '1.5' is 1500000, '12' is 12000000), the
    unit of the packet schema's `timestamp`; None when the body is not of
    that form (surrounding blanks aside) or above 2^64-1."""
    m = _TIMEVAL.fullmatch(body.strip())
    if m is None:
        return None
    value = int(m.group(1)) * 1_000_000 + int((m.group(2) or "").ljust(6, "0"))
    return value if value <= _MAX_ULLONG else None


def _parse_ipv4(s: str) -> int:
    parts = s.strip().split(".")
    if len(parts) != 4 or not all(p.isascii() and p.isdigit() and len(p) <= 3 and int(p) <= 255
                                   for p in parts):
        raise ValueError(s)
    v = 0
    for p in parts:
        v = (v << 8) | int(p)
    return v


# ====================================================================== builders


class _Builder(Transformer[Token, Any]):
    def __init__(self, path: str, text: str):
        super().__init__(visit_tokens=False)
        self.path = path
        self.text = text

    def span(self, meta: Meta) -> Span:
        if getattr(meta, "empty", True):
            return ast.NO_SPAN
        return Span(self.path, meta.line, meta.column, meta.end_line,
                    meta.end_column)

    def tspan(self, tok: Token) -> Span:
        return _token_span(self.path, tok)

    def source(self, meta: Meta) -> str:
        return self.text[meta.start_pos:meta.end_pos]

    def err(self, span: Span, rule: str, message: str) -> QueryError:
        return QueryError(span, rule, message)


def _string_body(tok: Token) -> str:
    return str(tok)[1:-1]


@v_args(meta=True)
class _QueryBuilder(_Builder):
    # ------------------------------------------------------------ file
    def start(self, meta: Meta, children: list[Any]) -> Any:
        return list(children)

    def query(self, meta: Meta, children: list[Any]) -> Any:
        defines: Optional[ast.OptionBlock] = None
        params: Optional[tuple[list[ast.ParamDecl], Span]] = None
        body = children[-1]
        for ch in children[:-1]:
            if isinstance(ch, ast.OptionBlock):
                if defines is not None:
                    raise self.err(ch.span, "syntax",
                                   "a query has at most one DEFINE block")
                defines = ch
            else:
                if params is not None:
                    raise self.err(ch[1], "syntax",
                                   "a query has at most one PARAM block")
                params = ch
        q = ast.Query(defines=defines or ast.OptionBlock(),
                      params=params[0] if params else [],
                      select=[], from_=[], span=self.span(meta))
        for k, v in body.items():
            setattr(q, k, v)
        return q

    # ------------------------------------------------------------ DEFINE / PARAM
    def define_block(self, meta: Meta, children: list[Any]) -> Any:
        block = ast.OptionBlock(span=self.span(meta))
        for key, value, span in children:
            if key in block.items:
                raise self.err(span, "syntax", f"duplicate DEFINE item '{key}'")
            block.items[key] = value
            block.item_spans[key] = span
        return block

    def define_item(self, meta: Meta, children: list[Any]) -> Any:
        key = children[0]
        value = " ".join(children[1:])
        return (key, value, self.span(meta))

    def any_word(self, meta: Meta, children: list[Any]) -> Any:
        # a keyword used as a word (`slack 1`) is an anonymous terminal,
        # filtered from the children: its text is the source's
        return str(children[0]) if children else self.source(meta)

    def define_string(self, meta: Meta, children: list[Any]) -> Any:
        return decode_string(_string_body(children[0])).decode("utf-8", "surrogateescape")

    def define_number(self, meta: Meta, children: list[Any]) -> Any:
        return str(children[0])

    def define_neg_number(self, meta: Meta, children: list[Any]) -> Any:
        return "-" + str(children[1])

    def param_block(self, meta: Meta, children: list[Any]) -> Any:
        seen: dict[str, ast.ParamDecl] = {}
        for p in children:
            if p.name in seen:
                raise self.err(p.span, "syntax", f"duplicate PARAM '{p.name}'")
            seen[p.name] = p
        return (list(children), self.span(meta))

    def param_decl(self, meta: Meta, children: list[Any]) -> Any:
        return ast.ParamDecl(name=str(children[0]), type_name=str(children[1]),
                             handle=len(children) > 2, span=self.span(meta))

    def handle(self, meta: Meta, children: list[Any]) -> Any:
        return True

    # ------------------------------------------------------------ SELECT
    def select_query(self, meta: Meta, children: list[Any]) -> Any:
        it = list(children)
        fields: dict[str, Any] = {"select": it.pop(0)}
        if isinstance(it[0], ast.JoinSpec):
            fields["join"] = it.pop(0)
        fields["from_"] = it.pop(0)
        where, group, supergroup, having, cw, cb, clw = it
        fields["where"] = where
        if group is not None:
            fields["group_by"], fields["group_by_span"] = group
        if supergroup is not None:
            fields["supergroup"], fields["supergroup_span"] = supergroup
        fields["having"] = having
        fields["cleaning_when"] = cw
        fields["cleaning_by"] = cb
        fields["closing_when"] = clw
        return fields

    def select_list(self, meta: Meta, children: list[Any]) -> Any:
        return list(children)

    def select_item(self, meta: Meta, children: list[Any]) -> Any:
        alias = str(children[1]) if len(children) > 1 else None
        return ast.SelectItem(expr=children[0], alias=alias, span=self.span(meta))

    def _join(kind: str) -> Callable[[Any, Meta, list[Any]], ast.JoinSpec]:  # type: ignore[misc]
        def f(self: "_QueryBuilder", meta: Meta, children: list[Any]) -> ast.JoinSpec:
            return ast.JoinSpec(kind=kind, args=list(children), span=self.span(meta))
        return f

    inner_join = _join("inner")
    left_outer_join = _join("left")
    right_outer_join = _join("right")
    outer_join = _join("outer")
    filter_join = _join("filter")
    del _join

    def from_list(self, meta: Meta, children: list[Any]) -> Any:
        return list(children)

    def table_ref(self, meta: Meta, children: list[Any]) -> Any:
        ref = children[0]
        ref.span = self.span(meta)
        if len(children) > 1:
            ref.alias = children[1]
        return ref

    def table_alias(self, meta: Meta, children: list[Any]) -> Any:
        return str(children[-1])

    def src_name(self, meta: Meta, children: list[Any]) -> Any:
        return ast.TableRef(name=str(children[0]), kind="name")

    def src_iface(self, meta: Meta, children: list[Any]) -> Any:
        return ast.TableRef(name=str(children[1]), kind="protocol",
                            iface=str(children[0]))

    def src_host(self, meta: Meta, children: list[Any]) -> Any:
        return ast.TableRef(name=str(children[2]), kind="protocol",
                            host=str(children[0]), iface=str(children[1]))

    def src_iface_set(self, meta: Meta, children: list[Any]) -> Any:
        return ast.TableRef(name=str(children[1]), kind="protocol",
                            iface=str(children[0]), iface_set=True)

    def src_library(self, meta: Meta, children: list[Any]) -> Any:
        return ast.TableRef(name=str(children[2]), kind="stream",
                            library=str(children[0]))

    def _single(self, meta: Meta, children: list[Any]) -> Any:
        return children[0] if children else None

    where_clause = _single
    having_clause = _single
    cleaning_when_clause = _single
    cleaning_by_clause = _single
    closing_when_clause = _single

    def group_clause(self, meta: Meta, children: list[Any]) -> Any:
        if not children:
            return None
        return (children[0], self.span(meta))

    def supergroup_clause(self, meta: Meta, children: list[Any]) -> Any:
        if not children:
            return None
        return ([str(c) for c in children], self.span(meta))

    def group_list(self, meta: Meta, children: list[Any]) -> Any:
        return list(children)

    def group_item(self, meta: Meta, children: list[Any]) -> Any:
        alias = str(children[1]) if len(children) > 1 else None
        return ast.GroupItem(expr=children[0], alias=alias, span=self.span(meta))

    def rollup(self, meta: Meta, children: list[Any]) -> Any:
        return ast.GroupingSets(kind="rollup", items=list(children),
                                span=self.span(meta))

    def cube(self, meta: Meta, children: list[Any]) -> Any:
        return ast.GroupingSets(kind="cube", items=list(children),
                                span=self.span(meta))

    def grouping_sets(self, meta: Meta, children: list[Any]) -> Any:
        return ast.GroupingSets(kind="grouping_sets", items=list(children),
                                span=self.span(meta))

    def grouping_set(self, meta: Meta, children: list[Any]) -> Any:
        return list(children)

    # ------------------------------------------------------------ MERGE
    def merge_query(self, meta: Meta, children: list[Any]) -> Any:
        *cols, slack, from_ = children
        return {"is_merge": True, "merge_fields": cols, "merge_slack": slack,
                "from_": from_}

    merge_slack = _single

    # ------------------------------------------------------------ expressions
    _BINOPS = {"!=": "<>"}

    def binop(self, meta: Meta, children: list[Any]) -> Any:
        left, op, right = children
        op = self._BINOPS.get(str(op), str(op))
        return ast.Binary(op=op, left=left, right=right, span=self.span(meta))

    def or_expr(self, meta: Meta, children: list[Any]) -> Any:
        return ast.Binary(op="or", left=children[0], right=children[1],
                          span=self.span(meta))

    def and_expr(self, meta: Meta, children: list[Any]) -> Any:
        return ast.Binary(op="and", left=children[0], right=children[1],
                          span=self.span(meta))

    def not_expr(self, meta: Meta, children: list[Any]) -> Any:
        return ast.Unary(op="not", operand=children[0], span=self.span(meta))

    def unary(self, meta: Meta, children: list[Any]) -> Any:
        return ast.Unary(op=str(children[0]), operand=children[1],
                         span=self.span(meta))

    def in_list(self, meta: Meta, children: list[Any]) -> Any:
        return ast.InList(expr=children[0], items=list(children[1:]),
                          span=self.span(meta))

    def define_ref(self, meta: Meta, children: list[Any]) -> Any:
        return ast.DefineRef(name=str(children[0])[1:], span=self.span(meta))

    def param_ref(self, meta: Meta, children: list[Any]) -> Any:
        return ast.Param(name=str(children[0])[1:], span=self.span(meta))

    def iface_param(self, meta: Meta, children: list[Any]) -> Any:
        return ast.IfaceParam(name=str(children[0])[1:], span=self.span(meta))

    def column_ref(self, meta: Meta, children: list[Any]) -> Any:
        if len(children) == 2:
            return ast.ColumnRef(name=str(children[1]), table=str(children[0]),
                                 span=self.span(meta))
        return ast.ColumnRef(name=str(children[0]), span=self.span(meta))

    def call_args(self, meta: Meta, children: list[Any]) -> Any:
        return list(children)

    def _call(self, meta: Meta, children: list[Any], *, superagg: bool = False,
              predicate: bool = False, star: bool = False) -> ast.Call:
        name = str(children[0])
        if superagg:
            name = name[:-1]
        if star:
            args: list[ast.Expr] = [ast.Star(span=self.tspan(children[1]))]
        else:
            args = children[1] if len(children) > 1 else []
        return ast.Call(name=name, args=args, superagg=superagg,
                        predicate=predicate, span=self.span(meta))

    def call(self, meta: Meta, children: list[Any]) -> Any:
        return self._call(meta, children)

    def call_star(self, meta: Meta, children: list[Any]) -> Any:
        return self._call(meta, children, star=True)

    def super_call(self, meta: Meta, children: list[Any]) -> Any:
        return self._call(meta, children, superagg=True)

    def super_call_star(self, meta: Meta, children: list[Any]) -> Any:
        return self._call(meta, children, superagg=True, star=True)

    def predicate_call(self, meta: Meta, children: list[Any]) -> Any:
        return self._call(meta, children, predicate=True)

    # ------------------------------------------------------------ literals
    def _lit(self, meta: Meta, kind: str, value: Any) -> ast.Literal:
        return ast.Literal(kind=kind, value=value, text=self.source(meta),
                           span=self.span(meta))

    def number(self, meta: Meta, children: list[Any]) -> Any:
        kind, value = _number_literal(str(children[0]))
        limit = _INT_LIMITS.get(kind)
        if limit is not None and value > limit[0]:
            raise self.err(self.span(meta), "bad-literal",
                           f"integer literal {children[0]} is out of range: "
                           f"{limit[1]} holds at most {limit[0]}")
        return self._lit(meta, kind, value)

    def string(self, meta: Meta, children: list[Any]) -> Any:
        return self._lit(meta, "string", decode_string(_string_body(children[0])))

    def true(self, meta: Meta, children: list[Any]) -> Any:
        return self._lit(meta, "bool", True)

    def false(self, meta: Meta, children: list[Any]) -> Any:
        return self._lit(meta, "bool", False)

    def _typed_body(self, children: list[Any]) -> str:
        return decode_string(_string_body(children[0])).decode("utf-8", "replace")

    def _bad(self, meta: Meta, what: str, body: str) -> QueryError:
        return self.err(self.span(meta), "bad-literal",
                        f"invalid {what} '{body}'")

    def ip_val(self, meta: Meta, children: list[Any]) -> Any:
        body = self._typed_body(children)
        try:
            value = _parse_ipv4(body)
        except ValueError:
            raise self._bad(meta, "IPv4 address in IP_VAL literal", body) from None
        return self._lit(meta, "ip", value)

    def ipv6_val(self, meta: Meta, children: list[Any]) -> Any:
        body = self._typed_body(children)
        try:
            value = ipaddress.IPv6Address(body.strip()).packed
        except ValueError:
            raise self._bad(meta, "IPv6 address in IPV6_VAL literal", body) from None
        return self._lit(meta, "ipv6", value)

    def _hex(self, meta: Meta, children: list[Any], kind: str) -> ast.Literal:
        body = self._typed_body(children)
        if not re.fullmatch(r"(0[xX])?[0-9A-Fa-f]+", body.strip()):
            raise self._bad(meta, f"hexadecimal number in {kind.upper()} literal",
                            body)
        value = int(body.strip(), 16)
        limit, type_name = _INT_LIMITS["uint" if kind == "hex" else "ullong"]
        if value > limit:
            raise self.err(self.span(meta), "bad-literal",
                           f"{kind.upper()} literal '{body}' is out of range: a {kind.upper()} "
                           f"value is a {type_name}, at most {limit:#x}")
        return self._lit(meta, kind, value)

    def hex_val(self, meta: Meta, children: list[Any]) -> Any:
        return self._hex(meta, children, "hex")

    def lhex_val(self, meta: Meta, children: list[Any]) -> Any:
        return self._hex(meta, children, "lhex")

    def timeval(self, meta: Meta, children: list[Any]) -> Any:
        body = self._typed_body(children)
        value = parse_timeval(body)
        if value is None:
            raise self.err(self.span(meta), "bad-literal",
                           f"invalid TIMEVAL literal '{body}': expected seconds[.fraction] "
                           "in decimal, at most 6 fraction digits, at most "
                           f"{_MAX_ULLONG} microseconds")
        return self._lit(meta, "timeval", value)


@v_args(meta=True)
class _SchemaBuilder(_Builder):
    def start(self, meta: Meta, children: list[Any]) -> Any:
        return list(children)

    def _decl(self, meta: Meta, children: list[Any], kind: str) -> ast.ProtocolDecl:
        name = str(children[0])
        parents: list[str] = []
        fields = children[-1]
        if len(children) == 3:
            parents = children[1]
        seen: set[str] = set()
        for f in fields:
            if f.name in seen:
                raise self.err(f.span, "syntax",
                               f"duplicate field '{f.name}' in {kind} {name}")
            seen.add(f.name)
        return ast.ProtocolDecl(name=name, parents=parents, fields=fields,
                                kind=kind, span=self.span(meta))

    def protocol(self, meta: Meta, children: list[Any]) -> Any:
        return self._decl(meta, children, "protocol")

    def stream(self, meta: Meta, children: list[Any]) -> Any:
        return self._decl(meta, children, "stream")

    def parents(self, meta: Meta, children: list[Any]) -> Any:
        return [str(c) for c in children]

    def field_list(self, meta: Meta, children: list[Any]) -> Any:
        return list(children)

    def field(self, meta: Meta, children: list[Any]) -> Any:
        props: dict[str, Any] = {}
        if children and isinstance(children[-1], dict):
            props = children.pop()
        accessor = str(children[2]) if len(children) > 2 else None
        return ast.FieldDecl(type_name=str(children[0]), name=str(children[1]),
                             accessor=accessor, properties=props,
                             span=self.span(meta))

    def properties(self, meta: Meta, children: list[Any]) -> Any:
        return dict(children)

    def property(self, meta: Meta, children: list[Any]) -> Any:
        value = children[1] if len(children) > 1 else True
        return (str(children[0]), value)

    def prop_number(self, meta: Meta, children: list[Any]) -> Any:
        return _prop_number(str(children[0]))

    def prop_neg_number(self, meta: Meta, children: list[Any]) -> Any:
        return -_prop_number(str(children[1]))

    def prop_name(self, meta: Meta, children: list[Any]) -> Any:
        return str(children[0])

    def prop_string(self, meta: Meta, children: list[Any]) -> Any:
        return decode_string(_string_body(children[0])).decode("utf-8", "surrogateescape")


def _prop_number(text: str) -> "int | float":
    if text[:2].lower() == "0x":
        return int(text, 16)
    if "." in text:
        return float(text)
    return int(text)
