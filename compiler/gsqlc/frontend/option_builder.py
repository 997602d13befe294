"""A query's DEFINE and PARAM blocks: lark tree -> ast.OptionBlock and
ast.ParamDecls, duplicates refused (a located QueryError 'syntax').
"""
from __future__ import annotations

from typing import Any

from lark import v_args
from lark.tree import Meta

from . import ast
from .literals import decode_string
from .tree_builder import TreeBuilder, string_body


def _utf8(text: str) -> bool:
    """Whether text (decoded with surrogateescape) was valid UTF-8."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _escaped(text: str) -> str:
    """text's bytes as GSQL writes them: printable ASCII, else \\xHH."""
    return "".join(chr(b) if 32 <= b < 127 and b != 39 else f"\\x{b:02x}"
                   for b in text.encode("utf-8", "surrogateescape"))


@v_args(meta=True)
class OptionBlockBuilder(TreeBuilder):
    # v_args wraps only a class's own methods: this class carries its own
    # decorator for the rules QueryBuilder inherits from it
    def define_block(self, meta: Meta, children: list[Any]) -> Any:
        block = ast.OptionBlock(span=self.span(meta))
        for key, value, span in children:
            if key in block.items:
                raise self.err(span, "syntax", f"duplicate DEFINE item '{key}'")
            if key == "query_name" and not _utf8(value):
                # a query's name names its output: files, Arrow fields, Spark columns
                raise self.err(span, "invalid-name", f"query_name '{_escaped(value)}' is not valid "
                               "UTF-8 text: a query's name names its output (files, Arrow and "
                               "Spark columns); use letters, digits and _")
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
        return decode_string(string_body(children[0])).decode("utf-8", "surrogateescape")

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
