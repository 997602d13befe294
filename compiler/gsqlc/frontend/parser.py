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
the lark parsers are built once per process and cached.  This module loads
them, parses and checks the tree's depth; the trees become AST in
query_builder.py (DEFINE and PARAM blocks: option_builder.py) and
schema_builder.py, literal text becomes values in literals.py, and lark's
errors become located ones in syntax_errors.py.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from lark import Lark, Token, Transformer, Tree
from lark.exceptions import UnexpectedInput, VisitError

from ..errors import QueryError, register_source
from . import ast
from .query_builder import QueryBuilder
from .schema_builder import SchemaBuilder
from .span import Span
from .syntax_errors import syntax_error

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
    queries = _transform(QueryBuilder(path, text), tree)
    return ast.QueryFile(path=path, queries=queries, text=text,
                         span=_file_span(path, text))


def parse_schema_file(path: str, text: Optional[str] = None) -> ast.SchemaFile:
    """Parse a schema file (PROTOCOL and STREAM declarations)."""
    if text is None:
        text = _read(path)
    register_source(path, text)
    tree = _parse("schema", path, text)
    protocols = _transform(SchemaBuilder(path, text), tree)
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
        raise syntax_error(parser, path, text, e) from None
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
