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

Time bounds (Srivastava & Widom, "Flexible time management in data
stream systems"; issue 11).  An interface's table may also give

    [interface.a]
    source = "csv:/data/a.csv"
    out_of_order = 2.0    # B_aa, application-time seconds: a record never
                          # trails the largest timestamp read before it on
                          # this interface by more
    latency = 0.5         # L_a, wall-clock seconds from emission to arrival
    time_unit = "ms"      # "s" (default) | "ms" | "us" | "ns": the unit of
                          # a CSV interface's time and arrival columns
    properties = { Dir = "in", Class = "gold" }   # interface properties: a
                          # query reads @Dir (a string); @Name is the
                          # interface's name and @Host "localhost" unless given
    arrival = "recv_ts"   # a CSV field giving each row's arrival instant

and the file may give skew bounds between two declared interfaces and the
heartbeat generator's settings:

    [skew.a.b]            # B_ab = (t_ab, delta_ab)
    after = 1.0           # t_ab, wall-clock seconds
    bound = 5.0           # delta_ab, application-time seconds

(or several [[skew.a.b]] tables: a set of pairs, Srivastava & Widom 2004, section 3.1 -- e.g.
a loose bound at once and a tight one later; a pair given again on the
command line is added to the set)
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

They become the runtime's options (bindings.time_options): out_of_order:NAME,
latency:NAME, skew:A:B ("after,bound;after,bound"), hb_estimate, hb_horizon,
hb_window, hb_alpha, hb_timeout and hb_level (the [heartbeats] key `level`,
"operator" or "query"), for the heartbeat generator (runtime_c/core/
heartbeat_gen.c, Srivastava & Widom 2004), with time_unit:NAME and arrival:NAME below.

Record timestamps of CSV (and Arrow) interfaces.  A CSV interface's records
carry timestamps when its time column is known: the temporal field the
heartbeats of the first query reading it follow (an increasing
get_csv_<type>_posN field behind its temporal output).  Its values are
time_unit units (a float column: units with a fraction; runtime option
time_unit:NAME, --time-unit NAME=UNIT, run(time_unit={NAME: UNIT})).  Under
--clock data the data clock is the largest arrival instant read: the arrival
column's value when `arrival` names one (a CSV field of a PROTOCOL of a
query reading the interface, resolved to its position: runtime option
arrival:NAME=POS:TYPE; CSV files only), else the time column's; several
files (CSV or pcap) are replayed time-aligned on it, and out_of_order works
in the column's unit.  A time value that is negative or not a number leaves
the record's time unchanged (counted as time_unreadable in the stats).
"""
from __future__ import annotations

from typing import Any, Optional, Union

from ..errors import InterfaceError, SettingError, UsageError
from ..record import field, record

DEFAULT_IFACE = "default"


ESTIMATES = ("given", "max", "adaptive")
_IFACE_KEYS = ("source", "max_skew", "out_of_order", "latency", "arrival", "time_unit",
               "properties")
TIME_UNITS = ("s", "ms", "us", "ns")
_SKEW_KEYS = ("after", "bound")
_HB_KEYS = ("estimate", "horizon", "window", "alpha", "timeout", "level")
LEVELS = ("operator", "query")


@record
class Heartbeats:
    """[heartbeats]: how the heartbeat generator gets its bounds."""
    estimate: str = "given"
    horizon: Optional[float] = None
    window: Optional[int] = None
    alpha: Optional[float] = None
    timeout: Optional[float] = None
    level: str = "operator"   # "query": one heartbeat for every source (Srivastava & Widom 2004, 7.1)


def _properties(where: str, props: object) -> dict[str, str]:
    """An interface's (or set's) properties table: names to strings."""
    if not isinstance(props, dict) or not all(
            isinstance(k, str) and k.isidentifier() and isinstance(v, (str, int, float))
            and not isinstance(v, bool) for k, v in props.items()):
        raise InterfaceError(f"{where}: properties must be a table of names to strings or "
                             "numbers, e.g. properties = { Dir = \"in\" } (a query reads "
                             "them as @Dir)")
    return {k: str(v) for k, v in props.items()}


@record
class Interfaces:
    sources: dict[str, str] = field(default_factory=dict)     # interface -> URI
    sets: dict[str, list[str]] = field(default_factory=dict)  # set -> member interfaces
    skews: dict[str, float] = field(default_factory=dict)     # interface -> seconds
    default: str = DEFAULT_IFACE
    out_of_order: dict[str, float] = field(default_factory=dict)  # interface -> seconds
    latency: dict[str, float] = field(default_factory=dict)       # interface -> seconds
    arrival: dict[str, str] = field(default_factory=dict)         # interface -> column
    time_unit: dict[str, str] = field(default_factory=dict)       # interface -> unit
    # where arrival and time_unit were given (for errors), by interface
    arrival_where: dict[str, str] = field(default_factory=dict)
    time_unit_where: dict[str, Where] = field(default_factory=dict)
    # (a, b) -> the set of (after, bound) pairs (Srivastava & Widom 2004, 3.1: usually one),
    # and where it was given (for errors)
    skew_bounds: dict[tuple[str, str], list[tuple[float, float]]] = field(default_factory=dict)
    skew_where: dict[tuple[str, str], str] = field(default_factory=dict)
    heartbeats: Heartbeats = field(default_factory=Heartbeats)
    declared: set[str] = field(default_factory=set)  # [interface.NAME] tables
    # interface -> its properties (@KEY in a query; Name and Host have defaults)
    properties: dict[str, dict[str, str]] = field(default_factory=dict)

    def members(self, name: str) -> list[str]:
        return self.sets.get(name, [name])


@record(frozen=True)
class SettingWhere:
    """Where a value was given to a run rather than in a file: the setting
    as the API names it and as the command line does (errors.SettingError)."""
    subject: str
    flag: str

    def __str__(self) -> str:
        return self.subject


Where = Union[str, SettingWhere]     # a file's location, or a run's setting


def where_error(where: Where, rest: str) -> UsageError:
    """The error of a value given at `where` (rest: ": what is wrong")."""
    if isinstance(where, SettingWhere):
        return SettingError(where.subject, where.flag, rest)
    return UsageError(where + rest)


@record
class TimeBounds:
    """The command line's (or the API's) time bounds, applied over a file's."""
    out_of_order: list[tuple[str, float]] = field(default_factory=list)
    latency: list[tuple[str, float]] = field(default_factory=list)
    skew: list[tuple[str, str, float, float]] = field(default_factory=list)
    heartbeat_timeout: Optional[float] = None
    heartbeats: Optional[dict[str, Any]] = None     # [heartbeats] keys, over the file's
    time_unit: list[tuple[str, str, Where]] = field(default_factory=list)  # name, unit, where


def check_skew(where: str, value: Any, flag: Optional[str] = None) -> float:
    """A maximum skew in seconds (a number >= 0), or InterfaceError."""
    return check_seconds(where, "max_skew", value, flag)


def check_seconds(where: str, key: str, value: Any, flag: Optional[str] = None) -> float:
    """Seconds (a number >= 0, not a boolean), or an error naming `where`
    and `key`: InterfaceError for a file's value, SettingError naming the
    command line's `flag` too for a setting given to a run."""
    def bad(rest: str) -> UsageError:
        return InterfaceError(where + rest) if flag is None else SettingError(where, flag, rest)
    if isinstance(value, bool):
        raise bad(f": {key} '{value}' is not a number of seconds")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise bad(f": {key} '{value}' is not a number of seconds") from None
    if not v >= 0:
        raise bad(f": {key} must not be negative (got {value})")
    if v == float("inf"):
        raise bad(f": {key} must be a finite number of seconds (got {value})")
    return v


def check_time_unit(where: str, value: Any, flag: Optional[str] = None) -> str:
    """A time unit ("s", "ms", "us" or "ns"), or an error naming `where`
    (and `flag`, as check_seconds)."""
    if not isinstance(value, str) or value not in TIME_UNITS:
        rest = (f": time_unit must be one of {', '.join(repr(u) for u in TIME_UNITS)} "
                f"(got {value!r})")
        raise InterfaceError(where + rest) if flag is None else SettingError(where, flag, rest)
    return value


def _unknown_keys(where: str, spec: dict[str, Any], known: tuple[str, ...]) -> None:
    bad = sorted(set(spec) - set(known))
    if bad:
        raise InterfaceError(f"{where}: unknown key(s) {', '.join(bad)} "
                             f"(known: {', '.join(known)})")


def check_heartbeats(where: str, spec: dict[str, Any]) -> Heartbeats:
    """[heartbeats] (or the same from the command line), or InterfaceError."""
    _unknown_keys(where, spec, _HB_KEYS)
    hb = Heartbeats()
    if "estimate" in spec:
        if spec["estimate"] not in ESTIMATES:
            raise InterfaceError(f"{where}: estimate must be one of "
                                 f"{', '.join(repr(e) for e in ESTIMATES)} "
                                 f"(got {spec['estimate']!r})")
        hb.estimate = spec["estimate"]
    if "level" in spec:
        if spec["level"] not in LEVELS:
            raise InterfaceError(f"{where}: level must be one of "
                                 f"{', '.join(repr(e) for e in LEVELS)} (got {spec['level']!r})")
        hb.level = spec["level"]
    if "horizon" in spec:
        hb.horizon = check_seconds(where, "horizon", spec["horizon"])
        if hb.horizon == 0:
            raise InterfaceError(f"{where}: horizon must be more than 0 seconds")
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
    import tomllib  # here: most runs have no interfaces file
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
            into.arrival_where[name] = where
        if "time_unit" in spec:
            into.time_unit[name] = check_time_unit(where, spec["time_unit"])
            into.time_unit_where[name] = where
        if "properties" in spec:
            into.properties[name] = _properties(where, spec["properties"])
    for name, spec in doc.get("set", {}).items():
        members = spec.get("members") if isinstance(spec, dict) else None
        if not isinstance(members, list) or not members or \
                not all(isinstance(m, str) for m in members):
            raise InterfaceError(f"{path}: [set.{name}] needs members = [\"iface\", ...]")
        into.sets[name] = list(members)
        _unknown_keys(f"{path}: [set.{name}]", spec, ("members", "properties"))
        if "properties" in spec:   # each member's, unless it gives its own
            into.properties[name] = _properties(f"{path}: [set.{name}]", spec["properties"])
    skew = doc.get("skew", {})
    if not isinstance(skew, dict):
        raise InterfaceError(f"{path}: skew must be tables [skew.A.B]")
    for a, row in skew.items():
        if not isinstance(row, dict) or not row or not all(
                isinstance(v, dict) or (isinstance(v, list) and v and
                                        all(isinstance(x, dict) for x in v))
                for v in row.values()):
            raise InterfaceError(f"{path}: [skew.{a}] must hold tables [skew.{a}.B], one per "
                                 "interface B (a skew bound is for a pair of interfaces; "
                                 f"[[skew.{a}.B]] tables give a set of pairs)")
        for b, specs in row.items():
            where = f"{path}: [skew.{a}.{b}]"
            for spec in specs if isinstance(specs, list) else [specs]:
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
    into.skew_bounds.setdefault((a, b), []).append((after, bound))
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


def fanout_of(uri: str) -> Optional[int]:
    """N of a live interface's URI option fanout=N (pcap-live:IFACE?fanout=4),
    None when it has none (the value is checked where the URI's options are
    read, bindings.live_uri_options: here any digits)."""
    scheme, _, rest = uri.partition(":")
    if scheme != "pcap-live" or "?" not in rest:
        return None
    for item in rest.partition("?")[2].split("&"):
        key, _, value = item.partition("=")
        if key == "fanout" and value.isascii() and value.isdigit():
            return int(value)
    return None


def expand_fanout(ifs: Interfaces) -> None:
    """A live interface bound with fanout=N is an interface set of N members
    NAME.0 ... NAME.(N-1), each a socket of one PACKET_FANOUT group on the
    same interface, bound to the same URI: the kernel gives each socket the
    frames of its share of the flows, and the runtime reads each member,
    with its own LFTA instances, on a thread of its own (run/workers.c),
    merging their outputs as a set's.  UsageError for a member of a set
    (sets do not nest)."""
    for name, uri in list(ifs.sources.items()):
        n = fanout_of(uri)
        if n is None or n < 2:
            continue   # fanout=1 and the like are refused with the URI's other options
        owner = next((s for s, ms in ifs.sets.items() if name in ms), None)
        if owner is not None:
            raise UsageError(f"source {name}={uri}: fanout={n} makes {name} a set of {n} "
                             f"sockets, but {name} is already a member of interface set "
                             f"{owner} (sets do not nest): bind the interface once, with "
                             "fanout, as its own set")
        del ifs.sources[name]
        ifs.sets[name] = [f"{name}.{i}" for i in range(n)]
        for m in ifs.sets[name]:
            ifs.sources[m] = uri


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
    expand_fanout(ifs)
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
        if bounds.heartbeats:
            merged = {k: v for k, v in vars(ifs.heartbeats).items()
                      if v is not None and not (k == "estimate" and v == "given")
                      and not (k == "level" and v == "operator")}
            merged.update(bounds.heartbeats)
            ifs.heartbeats = check_heartbeats("--heartbeats", merged)
        if bounds.heartbeat_timeout is not None:
            ifs.heartbeats.timeout = bounds.heartbeat_timeout
        for name, unit, where in bounds.time_unit:
            ifs.time_unit[name] = unit
            ifs.time_unit_where[name] = where
    # a bound (or a column, a unit) given for a set holds for each member
    per_set: list[tuple[dict[str, Any], Optional[dict[str, Any]]]] = [
        (ifs.out_of_order, None), (ifs.latency, None), (ifs.arrival, ifs.arrival_where),
        (ifs.time_unit, ifs.time_unit_where)]
    for table, wheres in per_set:
        for name in [n for n in table if n in ifs.sets]:
            v = table.pop(name)
            w = wheres.pop(name, None) if wheres is not None else None
            for m in ifs.members(name):
                if m not in table:
                    table[m] = v
                    if wheres is not None and w is not None:
                        wheres[m] = w
    _check_declared(ifs)
    names = set(by_name) | set(ifs.sets) | set(ifs.sources)
    if DEFAULT_IFACE not in names and len(set(by_name)) == 1:
        ifs.default = next(iter(by_name))
    elif DEFAULT_IFACE not in names and not by_name and len(names) == 1:
        ifs.default = next(iter(names))
    return ifs
