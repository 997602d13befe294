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
needs another node builds a new one (dataclasses.replace).  describe_expr
gives an expression's text as a node computes it (for explain and the
generated code's comments).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Optional, Union

from ..frontend import ast
from ..semantics.bound import AccumRef, AggRef, FieldRef, GroupRef, SuperAggRef, to_text, walk
from ..semantics.catalog import UdafSpec
from ..semantics.model import AnalyzedQuery, Column, JoinInfo, MergeInfo, StreamDef
from ..semantics.schema import Protocol
from ..semantics.types import Type

# re-exported: the order knobs are the nodes' to the passes
from .policies import DEFAULT_FLUSH as DEFAULT_FLUSH
from .policies import DEFAULT_HFTA_DISORDER as DEFAULT_HFTA_DISORDER
from .policies import DEFAULT_LFTA_DISORDER as DEFAULT_LFTA_DISORDER
from .policies import FLUSH_POLICIES as FLUSH_POLICIES

DEFAULT_LFTA_TABLE = 262144
# what a growing LFTA table's slots may take (GSQ_AGG_GROW_BYTES of gsq_agg_table.h)
LFTA_TABLE_GROW_MIB = 64

Named = tuple[str, ast.Expr]     # an output column or group-by key and its expression


@dataclass(frozen=True)
class Accum:
    """An accumulator of a group: folds `expr` (None: the constant 1) with
    op; op 'udaf' is a user-defined aggregate `udaf` (catalog.UdafSpec) of
    `args`, its value the aggregate's output."""
    op: str                  # sum | min | max | and | or | xor | udaf
    type: Type
    expr: Optional[ast.Expr]
    name: str
    args: tuple[ast.Expr, ...] = ()
    udaf: Optional[UdafSpec] = None


@dataclass(frozen=True)
class AggPlan:
    """Final value of one aggregate from its accumulators."""
    final: str               # 'first' | 'avg' | 'udaf' (its accumulator's output)
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
        """The temporal group-by keys over the input field(s) of the first
        one: their values make the epoch.  A temporal key over another field
        (the other input's time, after a band join) is an ordinary key: its
        groups close with their epoch, or earlier by joint punctuation (seed
        004 section 7) -- an epoch of both would count a band's worth of
        epochs as disorder."""
        temporal = [i for i, (_, e) in enumerate(self.group_by) if e.info.temporal.is_temporal]
        if not temporal:
            return []
        first = fields_of(self.group_by[temporal[0]][1])
        return [i for i in temporal if fields_of(self.group_by[i][1]) == first]


def fields_of(e: ast.Expr) -> frozenset[tuple[int, str]]:
    """The (source, name) of every input field e reads."""
    return frozenset((x.source, x.name) for x in walk(e) if isinstance(x, FieldRef))


@dataclass(frozen=True, eq=False, kw_only=True)
class LftaNode(PlanNode):
    """Runs in C on the records of one interface."""
    level: ClassVar[str] = "lfta"
    protocol: Protocol
    iface: str = ""                    # '' = the default interface
    where: tuple[ast.Expr, ...] = ()
    select: tuple[Named, ...] = ()
    # the merge of this LFTA's instances over an interface set preserves
    # order (False: its consumers are order-agnostic, it passes tuples
    # straight through -- Li et al.'s (2008) OOP union)
    set_merge_ordered: bool = True

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
    group may occupy (1: direct-mapped); emits partials.  table_grows: the
    table doubles at run time while records often eject groups that come back
    (gsq_agg_table.h, Growth)."""
    kind: ClassVar[str] = "aggregate"
    group_by: tuple[Named, ...] = ()
    accums: tuple[Accum, ...] = ()
    table_size: int = DEFAULT_LFTA_TABLE
    table_ways: int = 1
    table_grows: bool = False
    disorder: int = DEFAULT_LFTA_DISORDER   # epochs open at once
    flush: str = DEFAULT_FLUSH


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
    disorder: int = DEFAULT_HFTA_DISORDER   # epochs open at once
    flush: str = DEFAULT_FLUSH              # 'lazy' is the LFTA's: 'slow' here
    # its input's heartbeats are promises (an HFTA's output): a heartbeat
    # closes every older epoch; from an LFTA they only report progress
    strict_heartbeats: bool = False
    # joint punctuation from a band join (Li et al. 2008, section 7): the temporal
    # group-by keys over the join's left time and over its right time; a
    # group below a joint punctuation on both leaves before its epoch closes
    joint_left: tuple[int, ...] = ()
    joint_right: tuple[int, ...] = ()
    # its output is read in epoch order (False: groups released early by
    # joint punctuation may leave ahead of an older open epoch's)
    ordered_output: bool = True
    # CLOSING_WHEN: a running aggregation (gsq::running_op): at an epoch's
    # end every group is output (HAVING), then discarded if this holds, else
    # carried into the next epoch -- regular aggregates empty again, RUNNING
    # user aggregates told (REINIT)
    closing: Optional[ast.Expr] = None
    # a sampling query (gsq::sampling_op): supergroups, super-aggregates
    # (their arguments over the input), CLEANING_WHEN / CLEANING_BY
    sampling: Optional["SamplingPlan"] = None


@dataclass(frozen=True)
class SamplingPlan:
    supergroup: tuple[int, ...]                                # group-by indices
    superaggs: tuple[tuple[str, Optional[ast.Expr], Type], ...]  # (op, arg, type)
    cleaning_when: Optional[ast.Expr] = None
    cleaning_by: Optional[ast.Expr] = None


@dataclass(frozen=True, eq=False, kw_only=True)
class HftaMerge(HftaNode):
    """Union of its inputs on a temporal column: order-preserving, or (when
    every consumer is order-agnostic) passing tuples straight through and
    forwarding the least of its inputs' progress (Li et al.'s (2008) OOP union)."""
    kind: ClassVar[str] = "merge"
    merge: MergeInfo
    ordered: bool = True


@dataclass(frozen=True, eq=False, kw_only=True)
class HftaJoin(HftaNode):
    """A two-input join on a temporal equality or band."""
    kind: ClassVar[str] = "join"
    select: tuple[Named, ...] = ()
    join: JoinInfo
    # each input arrives in order of its temporal column; an input that does
    # not (an OOP union) advances the join only by its heartbeats
    inputs_ordered: tuple[bool, bool] = (True, True)
    # emit joint punctuation (Li et al. 2008, 7, join_op.hpp "Joint punctuation"):
    # GSQ_JOINT_HEARTBEAT tuples bounding the left and right time columns
    # together, for a reader that groups on both
    joint_punctuation: bool = False


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


def describe_expr(e: ast.Expr, node: PlanNode) -> str:
    """GSQL-like text of e as node computes it: references to group-by keys,
    aggregates and accumulators by what they are."""
    group_by = node.group_by if isinstance(node, (LftaAggregate, HftaAggregate)) else ()
    accums = node.accums if isinstance(node, (LftaAggregate, HftaAggregate)) else ()
    aggs = node.aggs if isinstance(node, HftaAggregate) else ()

    def names(x: ast.Expr) -> Optional[str]:
        if isinstance(x, FieldRef) and isinstance(node, HftaJoin):
            return f"{node.query.sources[x.source].alias}.{x.name}"
        if isinstance(x, GroupRef):
            return group_by[x.index][0] if group_by else f"group[{x.index}]"
        if isinstance(x, AggRef):
            return aggs[x.index].text if aggs else f"agg[{x.index}]"
        if isinstance(x, AccumRef):
            a = accums[x.index]
            if a.udaf is not None:   # a user (sub-)aggregate: its name and arguments
                return f"{a.udaf.name}({', '.join(to_text(y) for y in a.args)})"
            inner = to_text(a.expr) if a.expr is not None else "1"
            return f"{a.op}({inner})"
        if isinstance(x, SuperAggRef) and node.query.sampling is not None:
            return node.query.sampling.superaggs[x.index].text
        return None
    return to_text(e, names)
