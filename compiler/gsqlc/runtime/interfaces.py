"""Interfaces and interface sets: what `FROM [NAME].P`, `FROM NAME.P` and a
bare `FROM P` read.

They come from `--source NAME=URI` (a name bound several times is an
interface set whose members are NAME.0, NAME.1, ...) and from an interfaces
file (TOML) for larger setups:

    [interface.main0]
    source = "pcap:/data/main0.pcap"
    max_skew = 2.0            # seconds, optional: the clock less this is a bound

    [interface.control]
    source = "pcap-live:eth2"

    [set.links]
    members = ["main0", "control"]

A query over a set runs its LFTA on every member and merges their outputs in
the order of the LFTA's temporal column.  This is a run-time binding: the plan
and the library do not depend on it (bindings.resolve_bindings returns the
memberships, runner.run_library calls gsqlc_add_set_member; the runtime runs
the LFTA's instances and its generated set merge, run/sets.c).

Time bounds (seed 002, Srivastava & Widom, "Flexible time management in data
stream systems"; issue 11).  An interface's table may also give

    [interface.a]
    source = "pcap:/data/a.pcap"
    out_of_order = 2.0    # B_aa, application-time seconds: a record never
                          # trails the largest timestamp read before it on
                          # this interface by more
    latency = 0.5         # L_a, wall-clock seconds from emission to arrival
    arrival = "recv_ts"   # a column giving each row's arrival instant

and the file may give skew bounds between two declared interfaces and the
heartbeat generator's settings:

    [skew.a.b]            # B_ab = (t_ab, delta_ab)
    after = 1.0           # t_ab, wall-clock seconds
    bound = 5.0           # delta_ab, application-time seconds

    [heartbeats]
    estimate = "given"    # "given" | "max" | "adaptive"
    horizon = 10          # t_max, seconds
    window = 1000         # W, tuples, for "adaptive"
    alpha = 0.5           # in [0, 1], for "adaptive"
    timeout = 3.0         # seconds: progress when every input pauses

Numbers are >= 0 (window a positive integer); a [skew.a.b] needs a != b,
both declared (by an [interface.NAME] or [set.NAME] table or a --source);
unknown tables and keys are errors naming the file, the table and the key.
The command line gives the same: --out-of-order NAME=S, --latency NAME=S,
--skew A:B=AFTER,BOUND, --heartbeat-timeout S (the Python API: out_of_order=,
latency=, skew={("a", "b"): (after, bound)}, heartbeat_timeout=).

In use today: out_of_order (the runtime's option out_of_order:NAME; an
LFTA's heartbeats promise only the largest timestamp it read less the bound,
and a record below a promise is discarded and counted as skew_dropped) and
estimate = "given".  The others are parsed and validated, and a run that
sets them is refused (bindings.time_options) until the generator uses them.
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from typing import Any, Optional

from ..errors import InterfaceError

DEFAULT_IFACE = "default"


ESTIMATES = ("given", "max", "adaptive")
_IFACE_KEYS = ("source", "max_skew", "out_of_order", "latency", "arrival")
_SKEW_KEYS = ("after", "bound")
_HB_KEYS = ("estimate", "horizon", "window", "alpha", "timeout")


@dataclass
class Heartbeats:
    """[heartbeats]: how the heartbeat generator gets its bounds."""
    estimate: str = "given"
    horizon: Optional[float] = None
    window: Optional[int] = None
    alpha: Optional[float] = None
    timeout: Optional[float] = None


@dataclass
class Interfaces:
    sources: dict[str, str] = field(default_factory=dict)     # interface -> URI
    sets: dict[str, list[str]] = field(default_factory=dict)  # set -> member interfaces
    skews: dict[str, float] = field(default_factory=dict)     # interface -> seconds
    default: str = DEFAULT_IFACE
    out_of_order: dict[str, float] = field(default_factory=dict)  # interface -> seconds
    latency: dict[str, float] = field(default_factory=dict)       # interface -> seconds
    arrival: dict[str, str] = field(default_factory=dict)         # interface -> column
    # (a, b) -> (after, bound), and where it was given (for errors)
    skew_bounds: dict[tuple[str, str], tuple[float, float]] = field(default_factory=dict)
    skew_where: dict[tuple[str, str], str] = field(default_factory=dict)
    heartbeats: Heartbeats = field(default_factory=Heartbeats)
    declared: set[str] = field(default_factory=set)  # [interface.NAME] tables

    def members(self, name: str) -> list[str]:
        return self.sets.get(name, [name])


@dataclass
class TimeBounds:
    """The command line's (or the API's) time bounds, applied over a file's."""
    out_of_order: list[tuple[str, float]] = field(default_factory=list)
    latency: list[tuple[str, float]] = field(default_factory=list)
    skew: list[tuple[str, str, float, float]] = field(default_factory=list)
    heartbeat_timeout: Optional[float] = None


def check_skew(where: str, value: Any) -> float:
    """A maximum skew in seconds (a number >= 0), or InterfaceError."""
    return check_seconds(where, "max_skew", value)


def check_seconds(where: str, key: str, value: Any) -> float:
    """Seconds (a number >= 0, not a boolean), or InterfaceError naming
    `where` and `key`."""
    if isinstance(value, bool):
        raise InterfaceError(f"{where}: {key} '{value}' is not a number of seconds")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InterfaceError(f"{where}: {key} '{value}' is not a number of seconds") from None
    if not v >= 0:
        raise InterfaceError(f"{where}: {key} must not be negative (got {value})")
    if v == float("inf"):
        raise InterfaceError(f"{where}: {key} must be a finite number of seconds (got {value})")
    return v


def _unknown_keys(where: str, spec: dict, known: tuple[str, ...]) -> None:
    bad = sorted(set(spec) - set(known))
    if bad:
        raise InterfaceError(f"{where}: unknown key(s) {', '.join(bad)} "
                             f"(known: {', '.join(known)})")


def check_heartbeats(where: str, spec: dict) -> Heartbeats:
    """[heartbeats] (or the same from the command line), or InterfaceError."""
    _unknown_keys(where, spec, _HB_KEYS)
    hb = Heartbeats()
    if "estimate" in spec:
        if spec["estimate"] not in ESTIMATES:
            raise InterfaceError(f"{where}: estimate must be one of "
                                 f"{', '.join(repr(e) for e in ESTIMATES)} "
                                 f"(got {spec['estimate']!r})")
        hb.estimate = spec["estimate"]
    if "horizon" in spec:
        hb.horizon = check_seconds(where, "horizon", spec["horizon"])
    if "timeout" in spec:
        hb.timeout = check_seconds(where, "timeout", spec["timeout"])
    if "window" in spec:
        w = spec["window"]
        if isinstance(w, bool) or not isinstance(w, int) or w < 1:
            raise InterfaceError(f"{where}: window must be a positive integer "
                                 f"(a number of tuples; got {w!r})")
        hb.window = w
    if "alpha" in spec:
        a = spec["alpha"]
        if isinstance(a, bool) or not isinstance(a, (int, float)) or not 0 <= a <= 1:
            raise InterfaceError(f"{where}: alpha must be a number in [0, 1] (got {a!r})")
        hb.alpha = float(a)
    return hb


def load_file(path: str, into: Interfaces) -> None:
    try:
        with open(path, "rb") as f:
            doc = tomllib.load(f)
    except FileNotFoundError:
        raise InterfaceError(f"{path}: no such file") from None
    except tomllib.TOMLDecodeError as e:
        raise InterfaceError(f"{path}: {e}") from None
    unknown = set(doc) - {"interface", "set", "skew", "heartbeats"}
    if unknown:
        raise InterfaceError(f"{path}: unknown table(s) {', '.join(sorted(unknown))}; "
                             "expected [interface.NAME], [set.NAME], [skew.A.B] and "
                             "[heartbeats]")
    for name, spec in doc.get("interface", {}).items():
        where = f"{path}: [interface.{name}]"
        if not isinstance(spec, dict):
            raise InterfaceError(f"{where} must be a table")
        _unknown_keys(where, spec, _IFACE_KEYS)
        into.declared.add(name)
        if "source" in spec:
            into.sources[name] = str(spec["source"])
        if "max_skew" in spec:
            into.skews[name] = check_skew(where, spec["max_skew"])
        if "out_of_order" in spec:
            into.out_of_order[name] = check_seconds(where, "out_of_order", spec["out_of_order"])
        if "latency" in spec:
            into.latency[name] = check_seconds(where, "latency", spec["latency"])
        if "arrival" in spec:
            if not isinstance(spec["arrival"], str) or not spec["arrival"]:
                raise InterfaceError(f"{where}: arrival must be a column name "
                                     f"(got {spec['arrival']!r})")
            into.arrival[name] = spec["arrival"]
    for name, spec in doc.get("set", {}).items():
        members = spec.get("members") if isinstance(spec, dict) else None
        if not isinstance(members, list) or not members or \
                not all(isinstance(m, str) for m in members):
            raise InterfaceError(f"{path}: [set.{name}] needs members = [\"iface\", ...]")
        into.sets[name] = list(members)
    skew = doc.get("skew", {})
    if not isinstance(skew, dict):
        raise InterfaceError(f"{path}: skew must be tables [skew.A.B]")
    for a, row in skew.items():
        if not isinstance(row, dict) or not row or \
                not all(isinstance(v, dict) for v in row.values()):
            raise InterfaceError(f"{path}: [skew.{a}] must hold tables [skew.{a}.B], one per "
                                 "interface B (a skew bound is for a pair of interfaces)")
        for b, spec in row.items():
            where = f"{path}: [skew.{a}.{b}]"
            _unknown_keys(where, spec, _SKEW_KEYS)
            missing = [k for k in _SKEW_KEYS if k not in spec]
            if missing:
                raise InterfaceError(f"{where}: needs {' and '.join(missing)}")
            add_skew_bound(into, where, a, b, check_seconds(where, "after", spec["after"]),
                           check_seconds(where, "bound", spec["bound"]))
    hb = doc.get("heartbeats")
    if hb is not None:
        if not isinstance(hb, dict):
            raise InterfaceError(f"{path}: heartbeats must be a table [heartbeats]")
        into.heartbeats = check_heartbeats(f"{path}: [heartbeats]", hb)


def add_skew_bound(into: Interfaces, where: str, a: str, b: str, after: float,
                   bound: float) -> None:
    if a == b:
        raise InterfaceError(f"{where}: a skew bound is between two interfaces; the bound "
                             f"of {a} on itself is [interface.{a}] out_of_order")
    into.skew_bounds[(a, b)] = (after, bound)
    into.skew_where[(a, b)] = where


def _check_declared(ifs: Interfaces) -> None:
    """Every interface named by a time bound is declared (a source or a set)."""
    names = set(ifs.sources) | set(ifs.sets) | ifs.declared
    for (a, b), where in ifs.skew_where.items():
        missing = [x for x in (a, b) if x not in names]
        if len(missing) == 2:
            raise InterfaceError(f"{where}: unknown interfaces '{a}' and '{b}' (declare them "
                                 "with [interface.NAME] source or --source NAME=URI)")
        if missing:
            other = b if missing[0] == a else a
            raise InterfaceError(f"{where}: unknown interface '{missing[0]}': the pair is not "
                                 f"both declared (only '{other}' is; declare it with "
                                 f"[interface.{missing[0]}] source or --source "
                                 f"{missing[0]}=URI)")


def build(bindings: list[tuple[str, str]], skews: list[tuple[str, float]],
          file: Optional[str] = None, bounds: Optional[TimeBounds] = None) -> Interfaces:
    """Interfaces from an optional file, then the command line's bindings
    (which win), skews and time bounds."""
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
    if bounds is not None:
        for name, v in bounds.out_of_order:
            ifs.out_of_order[name] = v
        for name, v in bounds.latency:
            ifs.latency[name] = v
        for a, b, after, bound in bounds.skew:
            add_skew_bound(ifs, f"--skew {a}:{b}", a, b, after, bound)
        if bounds.heartbeat_timeout is not None:
            ifs.heartbeats.timeout = bounds.heartbeat_timeout
    # a bound given for a set holds for each of its members
    for table in (ifs.out_of_order, ifs.latency):
        for name in [n for n in table if n in ifs.sets]:
            v = table.pop(name)
            for m in ifs.members(name):
                table.setdefault(m, v)
    _check_declared(ifs)
    names = set(by_name) | set(ifs.sets) | set(ifs.sources)
    if DEFAULT_IFACE not in names and len(set(by_name)) == 1:
        ifs.default = next(iter(by_name))
    elif DEFAULT_IFACE not in names and not by_name and len(names) == 1:
        ifs.default = next(iter(names))
    return ifs
