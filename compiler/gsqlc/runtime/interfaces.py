"""Interfaces and interface sets: what `FROM [NAME].P`, `FROM NAME.P` and a
bare `FROM P` read.

They come from `--source NAME=URI` (a name bound several times is an
interface set whose members are NAME.0, NAME.1, ...) and from an interfaces
file (TOML) for larger setups:

    [interface.main0]
    source = "pcap:/data/main0.pcap"
    max_skew = 2.0            # seconds, optional

    [interface.control]
    source = "pcap-live:eth2"

    [set.links]
    members = ["main0", "control"]

A query over a set runs its LFTA on every member and merges their outputs in
the order of the LFTA's temporal column.  This is a run-time binding: the plan
and the library do not depend on it (bindings.resolve_bindings returns the
memberships, runner.run_library calls gsqlc_add_set_member; the runtime runs
the LFTA's instances and its generated set merge, run/sets.c).
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from typing import Any, Optional

from ..errors import InterfaceError

DEFAULT_IFACE = "default"


@dataclass
class Interfaces:
    sources: dict[str, str] = field(default_factory=dict)     # interface -> URI
    sets: dict[str, list[str]] = field(default_factory=dict)  # set -> member interfaces
    skews: dict[str, float] = field(default_factory=dict)     # interface -> seconds
    default: str = DEFAULT_IFACE

    def members(self, name: str) -> list[str]:
        return self.sets.get(name, [name])


def check_skew(where: str, value: Any) -> float:
    """A maximum skew in seconds (a number >= 0), or InterfaceError."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InterfaceError(f"{where}: max_skew '{value}' is not a number of seconds") from None
    if not v >= 0:
        raise InterfaceError(f"{where}: max_skew must not be negative (got {value})")
    return v


def load_file(path: str, into: Interfaces) -> None:
    try:
        with open(path, "rb") as f:
            doc = tomllib.load(f)
    except FileNotFoundError:
        raise InterfaceError(f"{path}: no such file") from None
    except tomllib.TOMLDecodeError as e:
        raise InterfaceError(f"{path}: {e}") from None
    unknown = set(doc) - {"interface", "set"}
    if unknown:
        raise InterfaceError(f"{path}: unknown table(s) {', '.join(sorted(unknown))}; "
                             "expected [interface.NAME] and [set.NAME]")
    for name, spec in doc.get("interface", {}).items():
        if not isinstance(spec, dict):
            raise InterfaceError(f"{path}: [interface.{name}] must be a table")
        if "source" in spec:
            into.sources[name] = str(spec["source"])
        if "max_skew" in spec:
            into.skews[name] = check_skew(f"{path}: [interface.{name}]", spec["max_skew"])
    for name, spec in doc.get("set", {}).items():
        members = spec.get("members") if isinstance(spec, dict) else None
        if not isinstance(members, list) or not members or \
                not all(isinstance(m, str) for m in members):
            raise InterfaceError(f"{path}: [set.{name}] needs members = [\"iface\", ...]")
        into.sets[name] = list(members)


def build(bindings: list[tuple[str, str]], skews: list[tuple[str, float]],
          file: Optional[str] = None) -> Interfaces:
    """Interfaces from an optional file, then the command line's bindings
    (which win) and skews."""
    ifs = Interfaces()
    if file:
        load_file(file, ifs)
    by_name: dict[str, list[str]] = {}
    for name, uri in bindings:
        by_name.setdefault(name, []).append(uri)
    for name, uris in by_name.items():
        if len(uris) == 1:
            ifs.sources[name] = uris[0]
            continue
        members = [f"{name}.{i}" for i in range(len(uris))]
        ifs.sets[name] = members
        for m, uri in zip(members, uris):
            ifs.sources[m] = uri
    for name, v in skews:
        for m in ifs.members(name):
            ifs.skews[m] = v
    names = set(by_name) | set(ifs.sets) | set(ifs.sources)
    if DEFAULT_IFACE not in names and len(set(by_name)) == 1:
        ifs.default = next(iter(by_name))
    elif DEFAULT_IFACE not in names and not by_name and len(names) == 1:
        ifs.default = next(iter(names))
    return ifs
