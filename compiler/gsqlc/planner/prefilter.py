"""The prefilter of each interface (TigonSQL's prefilter): the cheap
predicates of the LFTAs reading an interface, each evaluated once per
record however many LFTAs share it, so that an LFTA runs only on the
records its predicates may let through.

This module decides what a prefilter holds; backend/prefilter_gen.py
writes it as C, and a kernel filter derived from the same predicates
reads the same analysis.

A predicate is prefilterable when evaluating it for any record is cheap,
harmless and the same for every LFTA: fields of the record's headers or
CSV columns, constants, arithmetic without division, comparisons, logic
and conversions (no parameters, interface properties, clock or calls).
An LFTA's signature is the leading run of its WHERE conjuncts that are
prefilterable, in the order the LFTA evaluates them: it rejects a record
silently exactly when, in that order, a conjunct is false after every
earlier one was true (a conjunct whose field the record lacks makes the
LFTA count it, so the LFTA is given that record).  An LFTA is a member
when its PROTOCOL's required fields are all header or CSV fields (its
admission reads no clock); an interface has a prefilter when two members
or more have a non-empty signature: for one query alone it would read
the record's fields twice to save one call (5-8 % more CPU time on a
capture, measured).  At most 64 members (one bit each)."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..frontend import ast
from ..semantics import catalog
from ..semantics.bound import FieldRef, walk
from ..semantics.schema import Protocol
from ..semantics.types import Type
from .nodes import LftaNode, describe_expr
from .plan import Plan

MAX_MEMBERS = 64
# the field sources a prefilter reads: a packet's headers, a CSV column
_RECORD_SOURCES = ("pcap", "csv")
# the types of the fields a prefilter reads (scalars: cheap to read and compare)
CHEAP_TYPES = {Type.BOOL, Type.USHORT, Type.UINT, Type.INT, Type.ULLONG, Type.LLONG,
                Type.FLOAT, Type.IP}


@dataclass(frozen=True)
class Predicate:
    """A prefilter predicate: `text` as explain shows it; `expr` over the
    fields of `protocol` (every member evaluating it reads that PROTOCOL)."""
    index: int
    protocol: str
    text: str
    expr: ast.Expr = field(compare=False, hash=False)


@dataclass
class Member:
    """An LFTA of the interface: its bit, and its signature as indices into
    the prefilter's predicates, in the LFTA's order of evaluation."""
    lfta: LftaNode
    bit: int
    signature: tuple[int, ...]


@dataclass
class Prefilter:
    iface: str
    predicates: list[Predicate]
    members: list[Member]


def prefilterable(e: ast.Expr, proto: Protocol) -> bool:
    """Whether e may be evaluated by the prefilter for every record."""
    for x in walk(e):
        if isinstance(x, FieldRef):
            f = proto.fields.get(x.name)
            if f is None or f.source not in _RECORD_SOURCES or f.type not in CHEAP_TYPES:
                return False
        elif isinstance(x, ast.Literal):
            if x.kind in ("string", "ipv6"):
                return False
        elif isinstance(x, ast.Binary):
            if x.op.lower() in ("/", "%"):
                return False
        elif isinstance(x, ast.Call):
            fn = catalog.lookup_scalar(x.name)
            if fn is None or fn.emit not in ("cast", "identity") or catalog.reads_clock(x):
                return False
        elif not isinstance(x, ast.Unary):
            return False
    return True


def _admits_without_clock(proto: Protocol) -> bool:
    return all(f.source in _RECORD_SOURCES for f in proto.fields.values() if f.required)


def plan_prefilters(plan: Plan) -> list[Prefilter]:
    """The prefilter of each interface the plan's LFTAs read (where fewer
    than two members have a signature, none), in the order of the
    interfaces' first LFTAs."""
    by_iface: dict[str, list[LftaNode]] = {}
    for n in plan.nodes:
        if isinstance(n, LftaNode) and _admits_without_clock(n.protocol):
            by_iface.setdefault(n.iface or "default", []).append(n)
    out: list[Prefilter] = []
    for iface, lftas in by_iface.items():
        pf = Prefilter(iface, [], [])
        index: dict[tuple[str, str], int] = {}
        for n in lftas[:MAX_MEMBERS]:
            sig: list[int] = []
            for c in n.where:
                if not prefilterable(c, n.protocol):
                    break
                key = (n.protocol.name, describe_expr(c, n))
                if key not in index:
                    index[key] = len(pf.predicates)
                    pf.predicates.append(Predicate(len(pf.predicates), key[0], key[1], c))
                if index[key] not in sig:
                    sig.append(index[key])
            pf.members.append(Member(n, len(pf.members), tuple(sig)))
        if sum(1 for m in pf.members if m.signature) >= 2:
            out.append(pf)
    return out


def explain_lines(plan: Plan) -> list[str]:
    """explain's account of the prefilters."""
    lines: list[str] = []
    for pf in plan_prefilters(plan):
        lines.append(f"prefilter of interface {pf.iface} (each predicate evaluated once a record):")
        for p in pf.predicates:
            lines.append(f"    p{p.index} {p.text}  [PROTOCOL {p.protocol}]")
        for m in pf.members:
            sig = " and ".join(f"p{i}" for i in m.signature) or "every record its PROTOCOL admits"
            lines.append(f"    {m.lfta.name}: {sig}")
        lines.append("")
    return lines
