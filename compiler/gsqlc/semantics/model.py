"""The analyzed model: what analysis (analyze.py) makes of a query and the
later stages read.

An AnalyzedQuery holds its resolved FROM sources, its bound expressions
(bound.py) and its output StreamDef; a two-input query its JoinInfo, a MERGE
its MergeInfo, an aggregation its AggCalls and, a sampling query, its
SamplingInfo.  Plain data: no analysis here, so the planner, the back end
and the faces import it without the binder.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ..frontend import ast
from . import catalog
from .schema import Protocol
from .types import Temporal, Type


@dataclass
class Column:
    name: str
    type: Type
    temporal: Temporal = Temporal.NONE


@dataclass
class StreamDef:
    """The schema of a stream: a query's output."""
    name: str
    columns: list[Column]

    def get(self, name: str) -> Optional[Column]:
        for c in self.columns:
            if c.name == name:
                return c
        return None


@dataclass
class Source:
    """One FROM item, resolved."""
    alias: str
    ref: ast.TableRef
    kind: str                          # 'protocol' | 'stream'
    protocol: Optional[Protocol] = None
    stream: Optional[StreamDef] = None
    iface: str = ""                    # interface name ('' = the default one)
    iface_set: bool = False

    def column(self, name: str) -> Optional[Column]:
        if self.protocol is not None:
            f = self.protocol.fields.get(name)
            return Column(f.name, f.type, f.temporal) if f else None
        assert self.stream is not None
        return self.stream.get(name)

    def columns(self) -> list[Column]:
        if self.protocol is not None:
            return [Column(n, f.type, f.temporal) for n, f in self.protocol.fields.items()]
        assert self.stream is not None
        return list(self.stream.columns)

    def column_names(self) -> list[str]:
        if self.protocol is not None:
            return list(self.protocol.fields)
        assert self.stream is not None
        return [c.name for c in self.stream.columns]


@dataclass
class GroupItem:
    name: str
    expr: ast.Expr
    span: ast.Span


@dataclass
class AggCall:
    func: catalog.Aggregate
    arg: Optional[ast.Expr]            # bound; None for count(*) (a UDAF's first)
    type: Type
    span: ast.Span
    text: str
    args: tuple[ast.Expr, ...] = ()    # a user-defined aggregate's, bound


@dataclass
class SuperAggCall:
    """A super-aggregate f$(x) of a sampling query: count$ (tuples), sum$,
    min$, max$ over the supergroup's tuples of the window, count_distinct$()
    its groups."""
    op: str                            # count | sum | min | max | count_distinct
    arg: Optional[ast.Expr]            # bound; None for count$(*), count_distinct$()
    type: Type
    text: str


@dataclass
class SamplingInfo:
    """A sampling query (SUPERGROUP, f$, CLEANING_WHEN/BY, stateful
    functions in an aggregation): Tigon SQL User Manual 6.2.13."""
    supergroup: list[int] = field(default_factory=list)   # group-by indices
    superaggs: list[SuperAggCall] = field(default_factory=list)
    cleaning_when: Optional[ast.Expr] = None
    cleaning_by: Optional[ast.Expr] = None


@dataclass
class JoinInfo:
    """A two-input join: input 0 is the left (R), 1 the right (S)."""
    kind: str                              # inner | left | right | full
    time: tuple[ast.Expr, ast.Expr]        # temporal join expressions (left, right)
    band_lo: float                         # right time in [left - band_lo, left + band_hi]
    band_hi: float
    keys: list[tuple[ast.Expr, ast.Expr]]  # equality keys (left expr, right expr)
    filters: tuple[list[ast.Expr], list[ast.Expr]]  # single-side conjuncts
    # key-fill rule of GSQL.md: (side, field) -> (other side, field) equated by
    # the join predicate, read from the present side on an unmatched row
    fill: dict[tuple[int, str], tuple[int, str]]
    span: ast.Span = ast.NO_SPAN
    # FILTER_JOIN(R.col, N) (kind 'filter'): N, the window in units of R.col;
    # time = (R.col, the S expression WHERE relates it to)
    window: int = 0


@dataclass
class MergeInfo:
    field: str                             # the merge column (same in every input)
    slack: float
    span: ast.Span = ast.NO_SPAN


@dataclass
class AnalyzedQuery:
    query: ast.Query
    name: str
    file: str
    params: dict[str, Type]
    sources: list[Source]
    where: list[ast.Expr]
    group_by: list[GroupItem]
    aggs: list[AggCall]
    having: Optional[ast.Expr]
    select: list[tuple[str, ast.Expr]]
    output: StreamDef
    defines: dict[str, str] = field(default_factory=dict)
    join: Optional[JoinInfo] = None
    merge: Optional[MergeInfo] = None
    # the functions it may call: the built-in ones and the user's
    catalog: catalog.Catalog = field(default_factory=lambda: catalog.BUILTIN, repr=False)
    # CLOSING_WHEN (a running aggregation), bound as HAVING is
    closing: Optional[ast.Expr] = None
    # a sampling query's supergroup, super-aggregates and cleaning
    sampling: Optional[SamplingInfo] = None

    @property
    def is_aggregate(self) -> bool:
        return bool(self.group_by) or bool(self.aggs)
