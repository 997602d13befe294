"""The order pass: once every query is split, decide for each stream
whether its readers need it in order of its temporal columns, and what each
node may then do out of order -- merges that pass tuples through as they
come, aggregations that keep more epochs open behind a band join, joins'
joint punctuation for the aggregations that read them (Li et al. 2008).
"""
from __future__ import annotations

import dataclasses
from typing import Iterable, Optional

from ..frontend import ast
from ..semantics.bound import key
from ..semantics.model import JoinInfo
from .nodes import (
    HftaAggregate,
    HftaFilterJoin,
    HftaJoin,
    HftaMerge,
    HftaNode,
    HftaSelect,
    LftaNode,
    PlanNode,
    fields_of,
)

# open epochs the planner may give an HFTA aggregation that reads a band join
# (the band's span in epochs; the HFTA operator has no fixed limit)
MAX_BAND_EPOCHS = 1024


def requires_order(n: PlanNode, needs_order: dict[str, bool]) -> bool:
    """Whether n needs its inputs in order of their temporal columns (seed
    004 section 5): an in-order aggregation (one open epoch), a join, an
    order-preserving merge; a selection as much as its own consumers do."""
    if isinstance(n, HftaAggregate):
        return n.disorder == 1
    if isinstance(n, HftaSelect):
        return needs_order[n.name]
    if isinstance(n, HftaMerge):
        return needs_order[n.name]
    if isinstance(n, HftaFilterJoin):
        return True
    if isinstance(n, HftaJoin):
        # Li et al. 2008, 5.3: a join purges by its inputs' heartbeats and takes
        # them out of order -- its output then is out of order too
        return needs_order[n.name]
    return True


def band_output_disorder(j: JoinInfo) -> float:
    """How far below an earlier row's a band join's output row's join time
    may be (join_op.hpp, "Output order"); 0 for an equality join."""
    lo, hi = j.band_lo, j.band_hi
    d = max(0.0, lo + hi)
    if j.kind in ("right", "full"):
        d = max(d, lo, hi)
        if lo + hi < 0:
            d = max(d, -lo, -hi if j.kind == "full" else 0.0)
    return d


def _output_spread(n: PlanNode, spread: dict[str, float]) -> float:
    if isinstance(n, HftaFilterJoin):
        return 0.0
    if isinstance(n, HftaJoin):
        return band_output_disorder(n.join)
    if isinstance(n, (HftaSelect, HftaMerge)):
        return max((spread.get(i, 0.0) for i in n.inputs), default=0.0)
    if isinstance(n, HftaAggregate) and not n.ordered_output:
        return float(n.disorder - 1)    # groups leave from any of its open epochs
    return 0.0      # LFTAs read sources; aggregations close epochs in order


def _node_named(nodes: list[PlanNode], name: str) -> Optional[PlanNode]:
    return next((x for x in nodes if x.name == name), None)


def _time_columns(j: HftaJoin, side: int) -> set[str]:
    """The join's temporal output columns that are its left (0) or right (1)
    time itself."""
    return {col.name for col, (_, e) in zip(j.output.columns, j.select)
            if col.temporal.is_temporal and key(e) == key(j.join.time[side])}


def _right_time_lag(n: HftaAggregate, earlier: list[PlanNode]) -> float:
    """A band join's output is ordered by its left time up to its spread;
    an aggregation whose epochs are made by the right time sees that time
    spread by the band's width more (tr = tl + delta, delta in [-lo, hi])."""
    src = _node_named(earlier, n.inputs[0])
    if not isinstance(src, HftaJoin) or isinstance(src, HftaFilterJoin) or not n.epoch_indices:
        return 0.0
    right = {(0, name) for name in _time_columns(src, 1)}
    if not fields_of(n.group_by[n.epoch_indices[0]][1]) <= right:
        return 0.0
    return max(0.0, src.join.band_lo + src.join.band_hi)


def epochs_spanning(keys: Iterable[ast.Expr], d: float) -> int:
    """Open epochs that cover input disordered by up to d time units: an
    epoch of a temporal key `col / w` (or `col`, w = 1) spans w units, so a
    row up to d behind is at most ceil(d / w) epochs behind (the largest
    over `keys`; 1 for none)."""
    need = 1
    for e in keys:
        w = 1.0
        if isinstance(e, ast.Binary) and e.op == "/" and isinstance(e.right, ast.Literal) \
                and isinstance(e.right.value, (int, float)) and e.right.value > 0:
            w = float(e.right.value)
        need = max(need, int(-(-d // w)) + 1)
    return need


def _epochs_spanning(n: HftaAggregate, d: float) -> int:
    """epochs_spanning over n's epoch keys, at most MAX_BAND_EPOCHS."""
    return min(epochs_spanning((n.group_by[i][1] for i in n.epoch_indices), d),
               MAX_BAND_EPOCHS)


def order_pass(nodes: list[PlanNode]) -> list[PlanNode]:
    """Consumers first, decide for every stream whether some reader needs it
    in order; a stream nobody in the set reads is a query's output and keeps
    its order.  A merge (or an LFTA's interface-set merge) whose output no
    reader needs in order becomes the OOP union; an aggregation whose input
    is an HFTA's output takes that input's heartbeats as promises."""
    needs_order: dict[str, bool] = {}
    readers: dict[str, list[PlanNode]] = {}
    for n in nodes:
        for i in n.inputs:
            readers.setdefault(i, []).append(n)
    for n in reversed(nodes):
        rs = readers.get(n.name, [])
        needs_order[n.name] = not rs or any(requires_order(r, needs_order) for r in rs)
    strict: dict[str, bool] = {}
    spread: dict[str, float] = {}    # how far a stream's time may go back (band joins)
    ordered: dict[str, bool] = {}    # a stream arrives in order of its temporal columns
    out: list[PlanNode] = []
    for n in nodes:
        if isinstance(n, HftaAggregate):
            n = _with_joint_punctuation(n, out, not needs_order[n.name])
        if isinstance(n, HftaJoin) and not isinstance(n, HftaFilterJoin):
            ins = (ordered.get(n.inputs[0], True), ordered.get(n.inputs[1], True))
            if ins != (True, True):
                n = dataclasses.replace(n, inputs_ordered=ins)
        if isinstance(n, HftaAggregate) and spread.get(n.inputs[0], 0) > 0:
            d = spread[n.inputs[0]] + _right_time_lag(n, out)
            need = _epochs_spanning(n, d)
            if need > n.disorder:
                src = _node_named(out, n.inputs[0])
                what = ("an aggregation's output, its groups released by joint punctuation"
                        if isinstance(src, HftaAggregate) else "a band join's output")
                n = dataclasses.replace(
                    n, disorder=need,
                    note=n.note + f"; {need} epochs open (raised from {n.disorder}): its input "
                                  f"is {what}, disordered by up to {d:g}")
        spread[n.name] = _output_spread(n, spread)      # after the raise: it may use it
        if isinstance(n, LftaNode):
            strict[n.name] = False
            if not needs_order[n.name] and n.set_merge_column is not None:
                n = dataclasses.replace(n, set_merge_ordered=False)
        elif isinstance(n, (HftaMerge, HftaSelect)):
            if isinstance(n, HftaMerge) and not needs_order[n.name]:
                n = dataclasses.replace(n, ordered=False)
            strict[n.name] = all(strict[i] for i in n.inputs)
        elif isinstance(n, HftaAggregate):
            if n.disorder > 1 and strict[n.inputs[0]]:
                n = dataclasses.replace(n, strict_heartbeats=True)
            strict[n.name] = True
        else:
            assert isinstance(n, HftaNode)
            strict[n.name] = True
        ordered[n.name] = _arrives_in_order(n, ordered)
        out.append(n)
    return out


def _with_joint_punctuation(n: HftaAggregate, earlier: list[PlanNode],
                            any_order: bool) -> HftaAggregate:
    """An aggregation reading a join directly whose temporal group-by keys
    cover both the join's left time and its right time (each key over one of
    them) uses the join's joint punctuation (Li et al. 2008, section 7); the join
    (in `earlier`, replaced there) then emits it.  any_order: no reader needs
    the aggregation's output in order, so covered groups may leave from any
    open epoch."""
    src = _node_named(earlier, n.inputs[0])
    if not isinstance(src, HftaJoin) or isinstance(src, HftaFilterJoin):
        return n
    sides = (_time_columns(src, 0), _time_columns(src, 1))
    keys: tuple[list[int], list[int]] = ([], [])
    for i, (_, e) in enumerate(n.group_by):
        reads = fields_of(e)
        if not e.info.temporal.is_temporal or len(reads) != 1:
            continue
        (_, name), = reads
        for s in (0, 1):
            if name in sides[s]:
                keys[s].append(i)
    if not keys[0] or not keys[1]:
        return n
    earlier[earlier.index(src)] = dataclasses.replace(src, joint_punctuation=True)
    return dataclasses.replace(n, joint_left=tuple(keys[0]), joint_right=tuple(keys[1]),
                               ordered_output=not any_order)


def _arrives_in_order(n: PlanNode, ordered: dict[str, bool]) -> bool:
    """Whether n's output comes in order of its temporal columns."""
    if isinstance(n, LftaNode):
        return n.set_merge_ordered      # an interface set's pass-through merge is not
    if isinstance(n, HftaMerge):
        return n.ordered and all(ordered[i] for i in n.inputs)
    if isinstance(n, HftaSelect):
        return ordered[n.inputs[0]]
    if isinstance(n, HftaJoin) and not isinstance(n, HftaFilterJoin):
        return all(n.inputs_ordered) and band_output_disorder(n.join) == 0
    if isinstance(n, HftaAggregate):
        return n.ordered_output
    return True     # filter joins follow S
