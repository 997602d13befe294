"""How each plan node takes a parameter changed while the run goes on
(gsqlc_change_param, Run.set_param, --param-file and SIGHUP).

A node that is not an aggregation takes the new value at the change's
instant: every record read after it.  An aggregation switches at an epoch
boundary so that no epoch mixes two values: the epochs its query had reached
at the instant keep the old value, later ones take the new -- which needs
epochs it can follow: temporal group-by keys, and in an LFTA increasing
numeric fields behind them (the fields its heartbeats follow).  A parameter
some node cannot switch that way cannot change while running: the run
refuses the change, saying why (param_fixed)."""
from __future__ import annotations

import dataclasses
from typing import Optional

from ..frontend import ast
from ..semantics.bound import FieldRef, walk
from ..semantics.types import Temporal
from .nodes import HftaAggregate, LftaAggregate, LftaNode, PlanNode
from .plan import Plan


def _lfta_follows_epochs(n: LftaAggregate) -> bool:
    """Whether the LFTA's epoch keys read only increasing numeric fields
    (it then knows each record's epoch from the fields it admits first)."""
    if not n.epoch_indices:
        return False
    for i in n.epoch_indices:
        for x in walk(n.group_by[i][1]):
            if isinstance(x, FieldRef):
                f = n.protocol.fields.get(x.name)
                if f is None or f.temporal is not Temporal.INCREASING or not f.type.is_numeric:
                    return False
    return True


def params_read(n: PlanNode) -> set[str]:
    """The parameters n's own expressions read (its query may declare more:
    an aggregation in the HFTA reads its WHERE's there, not in its LFTA)."""
    names: set[str] = set()

    def visit(x: object) -> None:
        if isinstance(x, ast.Expr):
            names.update(p.name for p in walk(x) if isinstance(p, ast.Param))
        elif isinstance(x, (tuple, list)):
            for y in x:
                visit(y)
        elif dataclasses.is_dataclass(x) and not isinstance(x, type):
            for f in dataclasses.fields(x):
                if f.name not in ("query", "output", "input_defs", "protocol", "params"):
                    visit(getattr(x, f.name))
    visit(n)
    return names


def _node_fixed(plan: Plan, n: PlanNode) -> Optional[str]:
    """Why node n cannot take any parameter changed while the run goes on
    (None: it can)."""
    q = n.query.name
    if isinstance(n, LftaAggregate):
        if _lfta_follows_epochs(n):
            return None
        return (f"query {q} aggregates without epochs it can follow (a temporal group-by "
                "over increasing fields): its input is one epoch a change would split")
    if isinstance(n, HftaAggregate):
        if n.epoch_indices:
            return None
        return (f"query {q} aggregates without a temporal group-by: its input is one epoch "
                "a change would split")
    if any(isinstance(plan.node(i), LftaAggregate) for i in n.inputs):
        return (f"query {q} reads it over the groups of an aggregation in its LFTA, whose "
                "epochs it does not follow")
    return None


def fixed_params(plan: Plan, n: PlanNode) -> dict[str, str]:
    """The parameters n reads that cannot change while the run goes on, and
    why: all of them when n cannot switch by epoch; those its temporal
    group-by reads (they draw the epochs a change would wait for)."""
    read = params_read(n)
    why = _node_fixed(plan, n) if read else None
    if why is not None:
        return {p: why for p in read}
    out: dict[str, str] = {}
    if isinstance(n, (LftaAggregate, HftaAggregate)):
        for i in n.epoch_indices:
            for x in walk(n.group_by[i][1]):
                if isinstance(x, ast.Param):
                    out[x.name] = (f"query {n.query.name}'s temporal group-by reads it: it "
                                   "draws the epochs a change would wait for")
    return out


def explain_line(plan: Plan, n: PlanNode) -> Optional[str]:
    """explain's line on n's parameters and how a change reaches them."""
    read = params_read(n)
    if not read:
        return None
    fixed = fixed_params(plan, n)
    free = sorted(p for p in read if p not in fixed)
    parts = []
    if free:
        names = ", ".join(f"${p}" for p in free)
        if isinstance(n, (LftaAggregate, HftaAggregate)):
            parts.append(f"{names}: a change while running takes effect from the next epoch "
                         "(the epochs reached keep the old value)")
        else:
            parts.append(f"{names}: a change while running takes effect from the next batch"
                         + (" (a predicate reading one stays out of the interface's "
                            "prefilter)" if isinstance(n, LftaNode) else ""))
    for why in sorted(set(fixed.values())):
        names = ", ".join(f"${p}" for p in sorted(fixed) if fixed[p] == why)
        parts.append(f"{names}: fixed while running ({why})")
    return "    PARAMS   " + "\n             ".join(parts)
