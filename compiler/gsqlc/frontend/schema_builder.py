"""Schema files: lark tree (grammar/schema.lark) -> ast.ProtocolDecls, one
per PROTOCOL or STREAM, with their fields and properties; a duplicate field
is a located QueryError 'syntax'.
"""
from __future__ import annotations

from typing import Any

from lark import v_args
from lark.tree import Meta

from . import ast
from .literals import decode_string, prop_number
from .tree_builder import TreeBuilder, string_body


@v_args(meta=True)
class SchemaBuilder(TreeBuilder):
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
        return prop_number(str(children[0]))

    def prop_neg_number(self, meta: Meta, children: list[Any]) -> Any:
        return -prop_number(str(children[1]))

    def prop_name(self, meta: Meta, children: list[Any]) -> Any:
        return str(children[0])

    def prop_string(self, meta: Meta, children: list[Any]) -> Any:
        return decode_string(string_body(children[0])).decode("utf-8", "surrogateescape")
