"""The plan's tunables per query: the defaults a compilation gives them
(PlanDefaults) and the DEFINEs of a query that win over them -- the LFTA
table's size and ways, the aggregations' open epochs and flush -- read and
checked (a bad value is a located QueryError 'bad-define').
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..frontend import ast
from ..semantics.model import AnalyzedQuery
from .nodes import (
    DEFAULT_FLUSH,
    DEFAULT_HFTA_DISORDER,
    DEFAULT_LFTA_DISORDER,
    DEFAULT_LFTA_TABLE,
    FLUSH_POLICIES,
    Accum,
    Named,
)
from .policies import MAX_DISORDER, TABLE_WAYS


@dataclass(frozen=True)
class PlanDefaults:
    """Defaults of the plan's tunables; a query's DEFINEs win over them."""
    lfta_table_size: Optional[int] = None     # slots of an LFTA aggregation table
    lfta_table_ways: Optional[int] = None     # its associativity
    max_lfta_disorder: int = DEFAULT_LFTA_DISORDER
    max_hfta_disorder: int = DEFAULT_HFTA_DISORDER
    flush: str = DEFAULT_FLUSH
    lfta_in_kernel: bool = False              # planner/kernel_lfta.py


def _define_span(q: AnalyzedQuery, name: str) -> ast.Span:
    return q.query.defines.item_spans.get(name, q.query.span)


def table_size_given(q: AnalyzedQuery) -> Optional[str]:
    """The LFTA table size a query's DEFINE asks for, as written, or None."""
    return q.defines.get("lfta_table_size") or q.defines.get("aggregate_slots")


def table_size_of(q: AnalyzedQuery, default: Optional[int]) -> int:
    v = table_size_given(q)
    if v:
        try:
            n = int(v)
        except ValueError:
            from ..errors import QueryError
            raise QueryError(_define_span(q, "lfta_table_size"),
                             "bad-define", f"lfta_table_size must be an integer, got '{v}'")
        if n > MAX_LFTA_TABLE:
            from ..errors import QueryError
            raise QueryError(_define_span(q, "lfta_table_size"), "bad-define",
                             f"lfta_table_size must be at most {MAX_LFTA_TABLE} slots "
                             f"(2^31), got '{v}'")
        return _power_of_two(n)
    return _power_of_two(default) if default else DEFAULT_LFTA_TABLE


# The largest LFTA table: its size (a power of two) is a 32-bit unsigned
# number in the generated C.
MAX_LFTA_TABLE = 2**31



def _decimal(v: str) -> bool:
    """Whether a DEFINE value is a decimal number int() reads: ASCII digits
    only (str.isdigit also takes '²' and other digits int() refuses)."""
    return v.isascii() and v.isdigit()


def table_ways_of(q: AnalyzedQuery, default: Optional[int]) -> int:
    v = q.defines.get("lfta_table_ways")
    if not v:
        return default or 1
    if not _decimal(v) or int(v) not in TABLE_WAYS:
        from ..errors import QueryError
        raise QueryError(_define_span(q, "lfta_table_ways"),
                         "bad-define", f"lfta_table_ways must be one of "
                         f"{', '.join(map(str, TABLE_WAYS))}, got '{v}'")
    return int(v)


def disorder_of(q: AnalyzedQuery, name: str, default: int) -> int:
    """DEFINE max_lfta_disorder / max_hfta_disorder: epochs open at once."""
    v = q.defines.get(name)
    if not v:
        return default
    if not _decimal(v) or not 1 <= int(v) <= MAX_DISORDER:
        from ..errors import QueryError
        raise QueryError(_define_span(q, name), "bad-define",
                         f"{name} must be an integer from 1 (in order) to {MAX_DISORDER} "
                         f"(epochs of the temporal group-by open at once), got '{v}'")
    return int(v)


def flush_of(q: AnalyzedQuery, default: str) -> str:
    v = q.defines.get("flush")
    if not v:
        return default
    if v.lower() not in FLUSH_POLICIES:
        from ..errors import QueryError
        raise QueryError(_define_span(q, "flush"), "bad-define",
                         f"flush must be one of {', '.join(FLUSH_POLICIES)}, got '{v}'")
    return v.lower()


def lfta_reach(disorder: int, flush: str, hfta_disorder: int) -> tuple[int, str]:
    """The LFTA's open epochs and flush, fitted under the HFTA's bound.  The
    partials an LFTA hands on span its open epochs, and with a slow or lazy
    flush one epoch more (a closed epoch's groups trickle out while the next
    is counted and ejected by collisions): the HFTA completing them must keep
    that many open, or it would drop them as late.  Tigon's 2 and 3 fit; an
    in-order HFTA (1) makes the LFTA hand on a closed epoch at once."""
    if flush != "immediate":
        if hfta_disorder == 1:
            return 1, "immediate"
        return min(disorder, hfta_disorder - 1), flush
    return min(disorder, hfta_disorder), flush


def _power_of_two(n: int) -> int:
    size = 1
    while size < max(n, 16):
        size *= 2
    return size


# The bytes an LFTA table of user sub-aggregates starts with, at most: their
# scratchpads make slots large (GS-lite's quantiles take 2-3 KB each).
UDAF_TABLE_BYTES = 16 << 20


def udaf_table_cap(gb: list[Named], accums: list[Accum]) -> int:
    """The most slots an LFTA table of these accumulators starts with
    (a power of two, at least 1,024)."""
    slot = 8 + 8 * len(gb)
    for a in accums:
        if a.udaf is not None:
            slot += (a.udaf.storage_bytes or 16) + 1 + 8 * len(a.udaf.params)
        else:
            slot += 8
    n = 1024
    while n * 2 * slot <= UDAF_TABLE_BYTES:
        n *= 2
    return n
