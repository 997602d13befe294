"""MERGE: the union of inputs of identical schemas, in the order of one
temporal field they share (with a SLACK of disorder), into a MergeInfo and
the query's output stream.
"""
from __future__ import annotations

import math
from typing import Optional

from ..errors import QueryError
from .binding import Binder
from .joins import const_value
from .model import AnalyzedQuery, Column, MergeInfo, StreamDef
from .types import Temporal


def analyze_merge(aq: AnalyzedQuery, b: Binder) -> AnalyzedQuery:
    q = aq.query
    srcs = aq.sources
    if len(srcs) < 2:
        raise QueryError(q.span, "merge", "MERGE needs at least two FROM sources")
    if len(q.merge_fields) != len(srcs):
        raise QueryError(q.span, "merge", f"MERGE names {len(q.merge_fields)} fields for "
                        f"{len(srcs)} FROM sources: give one per source (R.t : S.t)")
    first = [Column(c.name, c.type, Temporal.NONE) for c in srcs[0].columns()]
    for s in srcs[1:]:
        other = [(c.name, c.type) for c in s.columns()]
        if [(c.name, c.type) for c in first] != other:
            raise QueryError(s.ref.span, "merge-schema",
                            f"MERGE inputs must have identical schemas: '{s.alias}' has "
                            f"({', '.join(f'{n} {t}' for n, t in other)}) but "
                            f"'{srcs[0].alias}' has "
                            f"({', '.join(f'{c.name} {c.type}' for c in first)})")
    names = []
    direction: Optional[Temporal] = None
    for i, ref in enumerate(q.merge_fields):
        f = b.scope.lookup(ref)
        if f.source != i:
            raise QueryError(ref.span, "merge", f"merge field {i + 1} must belong to FROM "
                            f"source '{srcs[i].alias}' (write {srcs[i].alias}.{ref.name})")
        col = f.info
        if not col.temporal.is_temporal:
            raise QueryError(ref.span, "merge-temporal",
                            f"merge field '{ref.name}' of '{srcs[i].alias}' is not temporal: "
                            "MERGE preserves the order of an increasing or decreasing field")
        if direction is not None and col.temporal != direction:
            raise QueryError(ref.span, "merge-temporal",
                            "merge fields must be temporal in the same direction on every input")
        direction = col.temporal
        names.append(f.name)
    if len(set(names)) != 1:
        raise QueryError(q.merge_fields[1].span, "merge",
                        "the merge fields must be the same column of the (identical) schemas")
    slack = 0.0
    if q.merge_slack is not None:
        v = const_value(q.merge_slack)
        if v is None or not 0 <= v < math.inf:
            raise QueryError(q.merge_slack.span, "merge",
                             "SLACK must be a finite non-negative constant")
        slack = v
    assert direction is not None
    cols = [Column(c.name, c.type, direction if c.name == names[0] else Temporal.NONE)
            for c in first]
    aq.merge = MergeInfo(names[0], slack, q.span)
    aq.output = StreamDef(aq.name, cols)
    return aq
