"""What a run needs to know of a plan, as plain data: the queries, their
parameters and the outputs no query reads, and for every LFTA the interface
it reads and the PROTOCOL's kind and CSV columns.

The run-time checks and bindings (runtime.bindings) read this rather than
the plan, so that a run whose query set is built already (the input-keyed
cache, gsqlc.input_cache) binds its sources from the summary kept with the
build, without parsing or planning the queries again: it is saved as JSON.

    summary = summarize(plan)
    PlanSummary.from_json(summary.to_json()) == summary
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from ..record import record

if TYPE_CHECKING:
    from ..planner.plan import Plan


@record(frozen=True)
class CsvField:
    """A PROTOCOL field read from a CSV column (get_csv_<type>_posN), with
    its time_format and time_unit properties (None: not given) and whether
    it is temporal (increasing or decreasing)."""
    name: str
    pos: int
    type: str        # the type the column's text is read as
    numeric: bool
    time_format: Optional[str] = None
    time_unit: Optional[str] = None
    temporal: bool = False


@record(frozen=True)
class ProtocolSummary:
    name: str
    source_kind: Optional[str]         # 'csv' | 'pcap' | None (system fields only)
    csv_fields: tuple[CsvField, ...]   # in declaration order


@record(frozen=True)
class LftaSummary:
    name: str
    query: str                         # the query it belongs to
    iface: str                         # '' = the default interface
    mergeable: bool                    # its output has a temporal column (sets need one)
    protocol: ProtocolSummary


@record(frozen=True)
class PlanSummary:
    queries: tuple[tuple[str, tuple[str, ...]], ...]   # (query, its parameters) in plan order
    leaves: tuple[str, ...]                            # queries no other query reads
    lftas: tuple[LftaSummary, ...]                     # in plan order

    @property
    def query_names(self) -> list[str]:
        return [q for q, _ in self.queries]

    def to_json(self) -> dict[str, Any]:
        return {"queries": [[q, list(ps)] for q, ps in self.queries],
                "leaves": list(self.leaves),
                "lftas": [{"name": n.name, "query": n.query, "iface": n.iface,
                           "mergeable": n.mergeable,
                           "protocol": {"name": n.protocol.name,
                                        "source_kind": n.protocol.source_kind,
                                        "csv_fields": [[f.name, f.pos, f.type, f.numeric,
                                                        f.time_format, f.time_unit,
                                                        f.temporal]
                                                       for f in n.protocol.csv_fields]}}
                          for n in self.lftas]}

    @classmethod
    def from_json(cls, d: Any) -> "PlanSummary":
        """The summary to_json gave; ValueError (or TypeError, KeyError) on
        anything else, so that a damaged cache entry is not trusted."""
        def text(x: Any) -> str:
            if not isinstance(x, str):
                raise ValueError(f"expected a string, got {x!r}")
            return x

        def items(x: Any) -> list[Any]:
            if not isinstance(x, list):
                raise ValueError(f"expected a list, got {x!r}")
            return x

        def flag(x: Any) -> bool:
            if not isinstance(x, bool):
                raise ValueError(f"expected a boolean, got {x!r}")
            return x

        def maybe_text(x: Any) -> Optional[str]:
            return None if x is None else text(x)

        def protocol(p: Any) -> ProtocolSummary:
            kind = p["source_kind"]
            fields = []
            for name, pos, typ, numeric, fmt, unit, temporal in items(p["csv_fields"]):
                if not isinstance(pos, int) or isinstance(pos, bool):
                    raise ValueError(f"expected a column position, got {pos!r}")
                fields.append(CsvField(text(name), pos, text(typ), flag(numeric),
                                       maybe_text(fmt), maybe_text(unit), flag(temporal)))
            return ProtocolSummary(text(p["name"]), None if kind is None else text(kind),
                                   tuple(fields))

        return cls(tuple((text(q), tuple(text(p) for p in items(ps)))
                         for q, ps in items(d["queries"])),
                   tuple(text(q) for q in items(d["leaves"])),
                   tuple(LftaSummary(text(n["name"]), text(n["query"]), text(n["iface"]),
                                     flag(n["mergeable"]), protocol(n["protocol"]))
                         for n in items(d["lftas"])))


def summarize(plan: "Plan") -> PlanSummary:
    from ..planner.nodes import LftaNode
    from ..semantics.resolve import leaves
    protocols: dict[str, ProtocolSummary] = {}

    def protocol(n: LftaNode) -> ProtocolSummary:
        p = n.protocol
        if p.name not in protocols:
            csv = []
            for name, f in p.fields.items():
                if f.source == "csv":
                    t = f.csv_type or f.type
                    csv.append(CsvField(name, f.csv_pos, str(t), t.is_numeric, f.time_format,
                                        f.time_unit, f.temporal.is_temporal))
            protocols[p.name] = ProtocolSummary(p.name, p.source_kind, tuple(csv))
        return protocols[p.name]

    return PlanSummary(
        tuple((q.name, tuple(q.params)) for q in plan.queries),
        tuple(leaves(plan.queries)),
        tuple(LftaSummary(n.name, n.query.name, n.iface, n.set_merge_column is not None,
                          protocol(n))
              for n in plan.nodes if isinstance(n, LftaNode)))
