"""Planning: AnalyzedQuerys (dependency order) -> Plan.

make_plan takes the analyzed queries of a query set and returns a Plan: its
nodes (planner/nodes.py, one class per operator kind and level) in
topological order, producers first.  Each query is split into LFTA and HFTA
nodes on its own (split.py, under the tunables of tunables.py); then the
order pass (order.py) decides what may run out of order.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..semantics.model import AnalyzedQuery, StreamDef
from .nodes import PlanNode
from .order import order_pass
from .split import plan_query
from .tunables import PlanDefaults

__all__ = ["Plan", "make_plan"]


@dataclass(frozen=True)
class Plan:
    nodes: list[PlanNode]            # topological order: producers first
    queries: list[AnalyzedQuery]
    # made for kernel LFTAs (--lfta-in-kernel: planner/kernel_lfta.py)
    lfta_in_kernel: bool = False

    def node(self, name: str) -> PlanNode:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)

    def consumers(self, stream: str) -> list[PlanNode]:
        return [n for n in self.nodes if stream in n.inputs]

    def upstream(self, outputs: Sequence[str]) -> list[PlanNode]:
        """The nodes the streams `outputs` depend on, themselves included,
        in plan order."""
        need: set[str] = set()
        todo = list(outputs)
        while todo:
            s = todo.pop()
            if s not in need:
                need.add(s)
                todo.extend(self.node(s).inputs)
        return [n for n in self.nodes if n.name in need]


def make_plan(queries: list[AnalyzedQuery], defaults: PlanDefaults = PlanDefaults()) -> Plan:
    """Analyzed queries (dependency order) -> Plan.  `defaults`: the LFTA
    tables' size and ways, the aggregations' disorder and flush (a query's
    DEFINEs still win).  Then the order pass decides which merges may pass
    tuples through out of order (order_pass).  The plan does not
    depend on run-time bindings: an LFTA keeps the interface (or interface
    set) name it reads; bound to a set at run time it runs once per member,
    merged on its temporal column (gsq_lfta_def.set_merge)."""
    nodes: list[PlanNode] = []
    streams: dict[str, StreamDef] = {}
    for q in queries:
        for n in plan_query(q, streams, defaults):
            nodes.append(n)
            streams[n.name] = n.output
    return Plan(order_pass(nodes), queries, defaults.lfta_in_kernel)
