"""Query files: lark tree (grammar/gsql.lark) -> ast.Query: its SELECT or
MERGE, FROM, clauses, expressions and typed literals (an invalid one is a
located QueryError 'bad-literal'); its DEFINE and PARAM blocks come from
option_builder.py.
"""
from __future__ import annotations

import ipaddress
import re
from typing import Any, Callable, Optional

from lark import v_args
from lark.tree import Meta

from ..errors import QueryError
from . import ast
from .literals import INT_LIMITS, MAX_ULLONG, decode_string, number_literal, parse_ipv4, parse_timeval
from .option_builder import OptionBlockBuilder
from .span import Span
from .tree_builder import string_body


@v_args(meta=True)
class QueryBuilder(OptionBlockBuilder):
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
        def f(self: "QueryBuilder", meta: Meta, children: list[Any]) -> ast.JoinSpec:
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
        kind, value = number_literal(str(children[0]))
        limit = INT_LIMITS.get(kind)
        if limit is not None and value > limit[0]:
            raise self.err(self.span(meta), "bad-literal",
                           f"integer literal {children[0]} is out of range: "
                           f"{limit[1]} holds at most {limit[0]}")
        return self._lit(meta, kind, value)

    def string(self, meta: Meta, children: list[Any]) -> Any:
        return self._lit(meta, "string", decode_string(string_body(children[0])))

    def true(self, meta: Meta, children: list[Any]) -> Any:
        return self._lit(meta, "bool", True)

    def false(self, meta: Meta, children: list[Any]) -> Any:
        return self._lit(meta, "bool", False)

    def _typed_body(self, children: list[Any]) -> str:
        return decode_string(string_body(children[0])).decode("utf-8", "replace")

    def _bad(self, meta: Meta, what: str, body: str) -> QueryError:
        return self.err(self.span(meta), "bad-literal",
                        f"invalid {what} '{body}'")

    def ip_val(self, meta: Meta, children: list[Any]) -> Any:
        body = self._typed_body(children)
        try:
            value = parse_ipv4(body)
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
        limit, type_name = INT_LIMITS["uint" if kind == "hex" else "ullong"]
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
                           f"{MAX_ULLONG} microseconds")
        return self._lit(meta, "timeval", value)
