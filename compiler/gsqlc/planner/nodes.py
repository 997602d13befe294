"""Plan nodes: one frozen class per operator kind and level.

    PlanNode                       name, query, output, params, note, inputs
    +-- LftaNode                   protocol, iface, where, select   (C, level 'lfta')
    |   +-- LftaSelect             selection and projection
    |   +-- LftaAggregate          group_by, accums, table_size, table_ways
    +-- HftaNode                   inputs, input_defs               (C++, level 'hfta')
        +-- HftaSelect             where, select
        +-- HftaAggregate          where, select, group_by, accums, aggs, having
        +-- HftaMerge              merge
        +-- HftaJoin               select, join
            +-- HftaFilterJoin     FILTER_JOIN: a windowed semi-join

`level` and `kind` are class constants, for explain's text only; passes
dispatch on the class.  Nodes are never changed once built: a pass that
needs another node builds a new one (dataclasses.replace).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Optional, Union

from ..frontend import ast
from ..semantics.analyze import AnalyzedQuery, Column, JoinInfo, MergeInfo, StreamDef
from ..semantics.schema import Protocol
from ..semantics.types import Type

DEFAULT_LFTA_TABLE = 262144

Named = tuple[str, ast.Expr]     # an output column or group-by key and its expression


@dataclass(frozen=True)
class Accum:
    """An accumulator of a group: folds `expr` (None: the constant 1) with op."""
    op: str                  # sum | min | max | and | or | xor
    type: Type
    expr: Optional[ast.Expr]
    name: str


@dataclass(frozen=True)
class AggPlan:
    """Final value of one aggregate from its accumulators."""
    final: str               # 'first' | 'avg'
    accums: tuple[int, ...]
    type: Type
    text: str


@dataclass(frozen=True, eq=False, kw_only=True)
class PlanNode:
    level: ClassVar[str]
    kind: ClassVar[str]
    name: str                          # the stream it produces
    query: AnalyzedQuery
    output: StreamDef
    params: dict[str, Type]
    note: str = ""
    inputs: tuple[str, ...] = ()       # the streams it reads (none for an LFTA)


class _Grouped:
    """What an aggregation at either level derives from its GROUP BY."""
    group_by: tuple[Named, ...]

    @property
    def epoch_indices(self) -> list[int]:
        """The temporal group-by keys: their values make the epoch."""
        return [i for i, (_, e) in enumerate(self.group_by) if e.info.temporal.is_temporal]


@dataclass(frozen=True, eq=False, kw_only=True)
class LftaNode(PlanNode):
    """Runs in C on the records of one interface."""
    level: ClassVar[str] = "lfta"
    protocol: Protocol
    iface: str = ""                    # '' = the default interface
    where: tuple[ast.Expr, ...] = ()
    select: tuple[Named, ...] = ()

    @property
    def set_merge_column(self) -> Optional[Column]:
        """The column this LFTA's instances over an interface set are merged
        on: its output's first temporal column (None: it has none, and it
        cannot read a set of several members)."""
        return next((c for c in self.output.columns if c.temporal.is_temporal), None)


@dataclass(frozen=True, eq=False, kw_only=True)
class LftaSelect(LftaNode):
    kind: ClassVar[str] = "select"


@dataclass(frozen=True, eq=False, kw_only=True)
class LftaAggregate(_Grouped, LftaNode):
    """A sub-aggregate in a table of table_size slots, table_ways of which a
    group may occupy (1: direct-mapped); emits partials."""
    kind: ClassVar[str] = "aggregate"
    group_by: tuple[Named, ...] = ()
    accums: tuple[Accum, ...] = ()
    table_size: int = DEFAULT_LFTA_TABLE
    table_ways: int = 1


@dataclass(frozen=True, eq=False, kw_only=True)
class HftaNode(PlanNode):
    """Runs in C++ over streams."""
    level: ClassVar[str] = "hfta"
    input_defs: tuple[StreamDef, ...] = ()


@dataclass(frozen=True, eq=False, kw_only=True)
class HftaSelect(HftaNode):
    kind: ClassVar[str] = "select"
    where: tuple[ast.Expr, ...] = ()
    select: tuple[Named, ...] = ()


@dataclass(frozen=True, eq=False, kw_only=True)
class HftaAggregate(_Grouped, HftaNode):
    kind: ClassVar[str] = "aggregate"
    where: tuple[ast.Expr, ...] = ()
    select: tuple[Named, ...] = ()
    group_by: tuple[Named, ...] = ()
    accums: tuple[Accum, ...] = ()
    aggs: tuple[AggPlan, ...] = ()
    having: Optional[ast.Expr] = None


@dataclass(frozen=True, eq=False, kw_only=True)
class HftaMerge(HftaNode):
    """Order-preserving union of its inputs on a temporal column."""
    kind: ClassVar[str] = "merge"
    merge: MergeInfo


@dataclass(frozen=True, eq=False, kw_only=True)
class HftaJoin(HftaNode):
    """A two-input join on a temporal equality or band."""
    kind: ClassVar[str] = "join"
    select: tuple[Named, ...] = ()
    join: JoinInfo


@dataclass(frozen=True, eq=False, kw_only=True)
class HftaFilterJoin(HftaJoin):
    """FILTER_JOIN: passes tuples of input 1 whose keys input 0 had within
    the window."""


# Nodes by the clauses they carry.
Filtering = Union[LftaNode, HftaSelect, HftaAggregate]       # WHERE
Projecting = Union[LftaNode, HftaSelect, HftaAggregate, HftaJoin]   # SELECT
Grouping = Union[LftaAggregate, HftaAggregate]               # GROUP BY, accumulators
FILTERING = (LftaNode, HftaSelect, HftaAggregate)
PROJECTING = (LftaNode, HftaSelect, HftaAggregate, HftaJoin)
GROUPING = (LftaAggregate, HftaAggregate)
