"""The base of the lark-tree -> AST transformers (query_builder.py,
schema_builder.py): spans from lark's positions, the source text of a rule,
a located QueryError.
"""
from __future__ import annotations

from typing import Any

from lark import Token, Transformer
from lark.tree import Meta

from ..errors import QueryError
from . import ast
from .span import Span


class TreeBuilder(Transformer[Token, Any]):
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
        return token_span(self.path, tok)

    def source(self, meta: Meta) -> str:
        return self.text[meta.start_pos:meta.end_pos]

    def err(self, span: Span, rule: str, message: str) -> QueryError:
        return QueryError(span, rule, message)


def string_body(tok: Token) -> str:
    return str(tok)[1:-1]


def token_span(path: str, tok: Token) -> Span:
    assert tok.line is not None and tok.column is not None
    end_line = tok.end_line if tok.end_line is not None else tok.line
    end_col = tok.end_column if tok.end_column is not None else tok.column + 1
    return Span(path, tok.line, tok.column, end_line, end_col)
