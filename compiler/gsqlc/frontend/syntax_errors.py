"""Lark's parse errors -> located QueryErrors ('syntax') that say what was
found and what was expected instead, in the user's terms (`GROUP BY`,
`expression`, `operator`), with a keyword hint for a misspelt word.  SQL's
ORDER BY and LIMIT, which a stream cannot have, are errors of their own
('order-by', 'limit') that say what to write instead.
"""
from __future__ import annotations

import difflib
import re
from typing import Iterable, Optional

from lark import Lark, Token
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from ..errors import QueryError
from .span import Span
from .tree_builder import token_span

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


# SQL clauses a stream cannot have: the error and what to write instead
ORDER_BY_MESSAGE = (
    "GSQL has no ORDER BY: a stream never ends, so it cannot be sorted. A query's "
    "output already follows its temporal attributes: a selection keeps its input's order, "
    "an aggregation outputs each epoch of its temporal GROUP BY (e.g. time/60 AS tb) when "
    "the epoch closes, and MERGE unites streams in the order of a temporal field; to sort "
    "a finite output, sort it after the run (e.g. gsqlc run ... | sort)")
LIMIT_MESSAGE = (
    "GSQL has no LIMIT: a stream never ends, so its output has no last row to count to. "
    "To see the first rows, end the run: gsqlc run ... | head -n 10 stops it quietly, and "
    "leaving the loop over a run in Python cancels it; to output fewer rows, filter them "
    "with WHERE or HAVING (e.g. HAVING count(*) > 100), or keep a bounded sample of each "
    "window's groups with a sampling query (SUPERGROUP, CLEANING_WHEN, CLEANING_BY)")


def _unsupported_clause(parser: Lark, path: str, text: str, tok: Token) -> Optional[QueryError]:
    """SQL's `ORDER BY x` or `LIMIT n` where the parse failed: at the word
    ORDER or LIMIT (after an expression), or at what follows it (the word
    was taken as an alias: `FROM IPV4 ORDER BY len`).  None otherwise."""
    if tok.start_pos is None:
        return None
    prev = _previous_token(parser, text, tok.start_pos)
    following = _next_token(parser, text, tok)
    for word, after in ((tok, following), (prev, tok)):
        if word is None or after is None or word.type != "NAME":
            continue
        if str(word).upper() == "ORDER" and after.type == "BY":
            return QueryError(_join_spans(path, word, after), "order-by", ORDER_BY_MESSAGE)
        if str(word).upper() == "LIMIT" and after.type in ("NUMBER", "PARAM_REF", "DEFINE_REF"):
            return QueryError(_join_spans(path, word, after), "limit", LIMIT_MESSAGE)
    return None


def _next_token(parser: Lark, text: str, tok: Token) -> Optional[Token]:
    try:
        for t in parser.lex(text):
            if t.start_pos is not None and tok.start_pos is not None and \
                    t.start_pos > tok.start_pos:
                return t
    except UnexpectedInput:
        pass
    return None


def _join_spans(path: str, first: Token, last: Token) -> Span:
    """From the start of `first` to the end of `last`, when they share a
    line; else `first` alone."""
    a, b = token_span(path, first), token_span(path, last)
    if a.line != b.line:
        return a
    return Span(path, a.line, a.column, b.end_line, b.end_column)


def syntax_error(parser: Lark, path: str, text: str, e: UnexpectedInput) -> QueryError:
    """The QueryError of `parser`'s error e on `text` (file `path`)."""
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
            span = token_span(path, tok)
            return QueryError(span, "syntax", "unterminated comment: '/*' "
                             "without a closing '*/'")
        clause = _unsupported_clause(parser, path, text, tok)
        if clause is not None:
            return clause
        span = token_span(path, tok)
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
                    hint, span, found = h, token_span(path, prev), _describe_token(prev)
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
