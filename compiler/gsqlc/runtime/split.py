"""How a run is cut over threads, as far as deciding it needs: the Split
record, the thread count of the machine and the automatic thresholds.
Kept apart from runtime.parallel (which runs a split) so that a run that
stays on one thread -- the CLI's default on fewer than three cores -- does
not import the machinery of one (a cached run's start-up)."""
from __future__ import annotations

import os
from typing import Any

from ..record import field, record

# the automatic thread count gives each slice at least this many rows
AUTO_MIN_ROWS = 1 << 17
# ... and each slice of a capture file at least this many bytes
AUTO_MIN_BYTES = 16 << 20


def machine_threads() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


@record(frozen=True)
class FileSlice:
    """Bytes [start, end) of a capture file: whole records (pcap_range)."""
    uri: str
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start


def _size(piece: Any) -> int:
    """A slice's rows (Arrow) or bytes (a capture file)."""
    return piece.size if isinstance(piece, FileSlice) else piece.num_rows


@record
class Split:
    """How a run is split.  used == 1 (and reason set) when it is not:
    slices[iface] are then empty.  Otherwise, with partitions, the run is
    `used` runs over the whole of every interface's data (slices[iface]
    its one pyarrow Table), run k counting the groups of hash partition k
    (option partition); else slices[iface] are `used` contiguous pieces of
    interface iface's data: pyarrow Tables, with offsets[iface] their first
    rows, or FileSlices of its capture file."""
    requested: int
    used: int = 1
    reason: str = ""
    slices: dict[str, list[Any]] = field(default_factory=dict)
    offsets: dict[str, list[int]] = field(default_factory=dict)
    partitions: bool = False

    def info(self) -> dict[str, Any]:
        return {"requested": self.requested, "used": self.used,
                "reason": self.reason or None,
                "how": None if self.used <= 1 else "partitions" if self.partitions
                else "slices",
                "slices": {} if self.partitions else
                {i: [_size(t) for t in s] for i, s in self.slices.items()}}
