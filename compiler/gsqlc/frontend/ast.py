"""Typed AST of GSQL query files and schema files.

Every node carries a `span` (file, line, column, end line, end column) so that
every later diagnostic can point at the source.  Nodes are plain dataclasses;
passes are functions over them.  The parser leaves the `info` slot of
expression nodes empty: analysis builds new expression nodes carrying their
semantics.bound.ExprInfo (type, temporal direction, LFTA-legality) and
leaves the parsed tree as it was.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Union

# re-exported: a node's span is ast.Span to the passes
from .span import NO_SPAN as NO_SPAN
from .span import Span as Span


@dataclass(eq=False)
class Node:
    span: Span = field(default=NO_SPAN, kw_only=True)


# ---------------------------------------------------------------- expressions


@dataclass(eq=False)
class Expr(Node):
    # None from the parser; the ExprInfo of a node that analysis built
    # (semantics/bound.py, whose references require it).
    info: Any = field(default=None, kw_only=True, repr=False)


@dataclass(eq=False)
class Literal(Expr):
    """A constant.  kind: int, ullong, float, string, bool, ip, ipv6, hex,
    lhex, timeval.  `value` is the Python value (int, float, str, bool,
    bytes for ipv6; a timeval's microseconds); `text` is the source text."""
    kind: str
    value: Any
    text: str = ""


@dataclass(eq=False)
class DefineRef(Expr):
    """#NAME: a value from the query's DEFINE block."""
    name: str


@dataclass(eq=False)
class Param(Expr):
    """$name: a run-time parameter declared in PARAM."""
    name: str


@dataclass(eq=False)
class IfaceParam(Expr):
    """@name: an interface parameter."""
    name: str


@dataclass(eq=False)
class ColumnRef(Expr):
    """A field or a group-by / select alias: `srcIP`, `A.srcIP`."""
    name: str
    table: Optional[str] = None


@dataclass(eq=False)
class Star(Expr):
    """`*` inside count(*)."""


@dataclass(eq=False)
class Unary(Expr):
    op: str  # '-', '!', '~', 'not'
    operand: Expr


@dataclass(eq=False)
class Binary(Expr):
    """Arithmetic, bitwise, comparison and boolean operators.
    op is one of + - * / % & | << >> = <> < > <= >= and or."""
    op: str
    left: Expr
    right: Expr


@dataclass(eq=False)
class InList(Expr):
    expr: Expr
    items: list[Expr]


@dataclass(eq=False)
class Call(Expr):
    """f(args) -- scalar function, aggregate, or super-aggregate (f$(args)).
    `predicate` is True for the bracket form f[args]."""
    name: str
    args: list[Expr]
    predicate: bool = False
    superagg: bool = False


# ---------------------------------------------------------------- queries


@dataclass(eq=False)
class SelectItem(Node):
    expr: Expr
    alias: Optional[str] = None


@dataclass(eq=False)
class TableRef(Node):
    """A FROM item.

    kind: 'protocol' (PROTOCOL, iface.PROTOCOL, host.iface.PROTOCOL,
    [ifaceset].PROTOCOL) or 'stream' (query_name, LIB/query_name) -- the
    parser cannot tell a bare name apart, so a bare NAME is parsed as
    kind 'name' and resolved later."""
    name: str
    kind: str = "name"
    iface: Optional[str] = None
    host: Optional[str] = None
    iface_set: bool = False
    library: Optional[str] = None
    alias: Optional[str] = None


@dataclass(eq=False)
class GroupItem(Node):
    expr: Expr
    alias: Optional[str] = None


@dataclass(eq=False)
class DefaultOf(Expr):
    """The default value of expr's type (0, 0.0.0.0, '', FALSE): what a
    group-by variable outside a grouping pattern holds
    (semantics/grouping_sets.py); analysis binds it to a constant."""
    expr: Expr


@dataclass(eq=False)
class GroupingSets(Node):
    """ROLLUP(...), CUBE(...) or GROUPING_SETS((...), ...)."""
    kind: str  # 'rollup' | 'cube' | 'grouping_sets'
    items: list[Any]  # list[GroupItem] or list[list[GroupItem]]


@dataclass(eq=False)
class JoinSpec(Node):
    kind: str  # 'inner' | 'left' | 'right' | 'outer' | 'filter'
    args: list[Expr] = field(default_factory=list)  # FILTER_JOIN(col, N)


@dataclass(eq=False)
class OptionBlock(Node):
    """DEFINE { name value; ... } -- values are strings or plain words."""
    items: dict[str, str] = field(default_factory=dict)
    item_spans: dict[str, Span] = field(default_factory=dict)


@dataclass(eq=False)
class ParamDecl(Node):
    name: str
    type_name: str
    handle: bool = False


@dataclass(eq=False)
class Query(Node):
    """One query of a file (selection, aggregation, join or merge)."""
    defines: OptionBlock
    params: list[ParamDecl]
    select: list[SelectItem]
    from_: list[TableRef]
    where: Optional[Expr] = None
    group_by: list[Union[GroupItem, GroupingSets]] = field(default_factory=list)
    group_by_span: Optional[Span] = None
    supergroup: list[str] = field(default_factory=list)
    supergroup_span: Optional[Span] = None
    having: Optional[Expr] = None
    cleaning_when: Optional[Expr] = None
    cleaning_by: Optional[Expr] = None
    closing_when: Optional[Expr] = None
    join: Optional[JoinSpec] = None
    # MERGE R.t : S.t [SLACK n] FROM ...
    merge_fields: list[ColumnRef] = field(default_factory=list)
    merge_slack: Optional[Expr] = None
    is_merge: bool = False

    @property
    def name(self) -> Optional[str]:
        return self.defines.items.get("query_name")


@dataclass(eq=False)
class QueryFile(Node):
    path: str
    queries: list[Query]
    text: str = ""


# ---------------------------------------------------------------- schemas


@dataclass(eq=False)
class FieldDecl(Node):
    type_name: str
    name: str
    accessor: Optional[str]
    # property name -> value (True for bare flags, int/str for `snap_len 0`)
    properties: dict[str, Any] = field(default_factory=dict)


@dataclass(eq=False)
class ProtocolDecl(Node):
    name: str
    parents: list[str]
    fields: list[FieldDecl]
    kind: str = "protocol"  # 'protocol' | 'stream'


@dataclass(eq=False)
class SchemaFile(Node):
    path: str
    protocols: list[ProtocolDecl]
    text: str = ""
