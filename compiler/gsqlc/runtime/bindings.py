"""Run-time bindings and options, shared by the faces (CLI, Python API,
Spark): validated runtime options, source URIs, interface sets, query
parameters and outputs, and Arrow sources as record-batch readers.

Takes a plan's summary (runtime.plan_summary: what a run needs of the
plan, kept with a cached build) and what the user gave (URIs, Arrow data,
option values); returns what runtime.runner hands to the library: (interface, URI)
pairs, option and parameter dictionaries, record-batch readers.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Optional, Sequence, Union

from ..errors import SettingError, UsageError
from ..record import field, record
from .interfaces import DEFAULT_IFACE, Interfaces, TimeBounds, Where, fanout_of, where_error
from .interfaces import build as build_interfaces
from .interfaces import check_skew as _skew_seconds
from .plan_summary import LftaSummary, PlanSummary

URI_SCHEMES = {"csv": "csv", "csvtcp": "csv", "gdat": "csv", "pcap": "pcap", "pcap-live": "pcap"}
_PCAP_MAGIC = {b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\x4d\x3c\xb2\xa1", b"\x34\xcd\xb2\xa1",
               b"\xa1\xb2\xcd\x34",
               b"\xa1\xb2\x3c\x4d", b"\x0a\x0d\x0d\x0a"}

# ------------------------------------------------------------ options


def run_options(*, clock: str = "auto", heartbeat_interval: Union[str, float] = "1",
                csv_separator: str = ",", csv_strict: bool = False,
                stall_intervals: int = 3, trace: Optional[str] = None,
                batch: Optional[int] = None, columnar: str = "auto",
                prefilter: str = "on", pcap_reader: Optional[str] = None,
                max_groups: Optional[int] = None, report: str = "all") -> dict[str, str]:
    """Validated runtime options (the CLI's flags and run()'s keywords),
    checked against the runtime's own table of options (option_table).
    pcap_reader: how pcap:PATH files are read, 'mmap' (the runtime's
    default: memory-mapped, libpcap for what it does not take) or 'libpcap'.
    max_groups: the groups an HFTA aggregation may hold open at once
    (default: what half of the machine's memory holds); past it the run
    fails naming the query, rather than running out of memory.
    prefilter: 'on' (the runtime's default) or 'off', every LFTA given
    every record (the same results: for comparisons and benchmarks).
    report: 'all', or 'losses' for a report of lost or suspect input and
    warnings only (the CLI's --quiet)."""
    given = {"report": report, "batch": batch, "heartbeat_interval": heartbeat_interval,
             "csv_separator": csv_separator, "clock": clock, "columnar": columnar,
             "prefilter": prefilter,
             "stall_intervals": stall_intervals, "max_groups": max_groups,
             "pcap_reader": pcap_reader, "trace": trace or None,
             "csv_strict": "1" if csv_strict else None}
    # a default is valid (tests/test_option_table.py checks it): a run with
    # the defaults does not read the table (start-up)
    defaults = run_options.__kwdefaults__ or {}
    text = {k: str(v) if type(v) is type(defaults[k]) and v == defaults[k] else _check_option(k, v)
            for k, v in given.items() if v is not None}
    opts = {k: text[k] for k in ("csv_separator", "heartbeat_interval", "stall_intervals")}
    # clock and columnar auto are the runtime's defaults (the clock: the
    # runtime decides, the data clock for a replay)
    for k in ("clock", "max_groups", "trace", "csv_strict", "batch", "columnar", "prefilter",
              "pcap_reader", "report"):
        if k in text and not (k in ("clock", "columnar") and text[k] == "auto"
                              or k == "report" and text[k] == "all"
                              or k == "prefilter" and text[k] == "on"):
            opts[k] = text[k]
    return opts


def _check_option(name: str, value: object) -> str:
    from .option_table import check  # the table is read on first use
    return check(name, value)


def check_skew(name: str, value: Any) -> float:
    return _skew_seconds(f"max skew {name}={value}", value, f"--max-skew {name}={value}")


def check_params(plan: PlanSummary, params: Mapping[str, str]) -> None:
    declared = {n for _, ps in plan.queries for n in ps}
    for name in params:
        if name not in declared:
            raise SettingError(f"parameter {name}", f"--param {name}",
                               ": no query declares it in a PARAM block"
                               + (f" (declared: {', '.join(sorted(declared))})" if declared else ""))
    for q, ps in plan.queries:
        for name in ps:
            if name not in params:
                raise UsageError(f"query {q} needs parameter ${name}: pass --param "
                                 f"{name}=VALUE (params={{'{name}': ...}} in Python)")


def outputs_of(plan: PlanSummary, wanted: Sequence[str]) -> list[str]:
    names = plan.query_names
    if not wanted:
        return list(plan.leaves)
    for w in wanted:
        if w not in names:
            import difflib
            close = difflib.get_close_matches(w, names, n=3)
            hint = ("; did you mean " + " or ".join(close) + "?") if close else ""
            raise SettingError(f"output {w}", f"--output {w}",
                               f": no query of that name (queries: {', '.join(names)}){hint}")
    return list(wanted)


# ------------------------------------------------------------ sources


def normalize_uri(uri: str) -> str:
    """A bare path becomes csv:PATH, or pcap:PATH when the file starts with a
    pcap/pcapng magic number, or gdat:PATH when it starts as a GDAT file."""
    scheme, sep, _ = uri.partition(":")
    if sep and scheme in URI_SCHEMES:
        return uri
    if uri == "-":
        return "csv:-"
    try:
        with open(uri, "rb") as f:
            head = f.read(5)
            if head[:4] in _PCAP_MAGIC:
                return "pcap:" + uri
            if head == b"GDAT\n":
                return "gdat:" + uri
    except OSError:
        pass
    return "csv:" + uri


def _source_error(name: str, uri: str, rest: str) -> SettingError:
    return SettingError(f"source {name}={uri}", f"--source {name}={uri}", ": " + rest)


# the options a CSV source's URI takes after a '?' (csv:PATH?header=1)
CSV_URI_OPTIONS = ("header",)
_CSV_TEXT_SCHEMES = ("csv", "csvtcp")
_TRUE, _FALSE = ("1", "true", "yes"), ("0", "false", "no")


def uri_options(name: str, uri: str) -> tuple[str, dict[str, bool]]:
    """A source URI without its options, and the options: csv:PATH?header=1
    (csvtcp:HOST:PORT?header=1, csv:-?header=1) is csv:PATH with
    {"header": True}.  A csv: file whose name holds the '?' is that file;
    any other URI has no options.  A SettingError for an option that is not
    KEY=VALUE of CSV_URI_OPTIONS, or a value not 1/0 (true/false, yes/no)."""
    scheme, sep, rest = uri.partition(":")
    if not sep or scheme not in _CSV_TEXT_SCHEMES or "?" not in rest:
        return uri, {}
    if scheme == "csv" and os.path.exists(rest):
        return uri, {}
    path, _, query = rest.rpartition("?")
    opts: dict[str, bool] = {}
    for item in query.split("&"):
        key, eq, value = item.partition("=")
        if not eq or key not in CSV_URI_OPTIONS:
            raise _source_error(name, uri, f"unknown source option '{item}' after '?' (a CSV "
                                f"source takes header=1: {scheme}:{path}?header=1)")
        if value.lower() not in _TRUE + _FALSE:
            raise _source_error(name, uri, f"{key}={value}: expected {key}=1 or {key}=0")
        opts[key] = value.lower() in _TRUE
    return f"{scheme}:{path}", opts


# the options a live interface's URI takes after a '?'
# (pcap-live:IFACE?snaplen=128&blocks=16): each is the runtime's
# per-interface option live_KEY:NAME (option_table.h)
LIVE_URI_OPTIONS = ("snaplen", "promisc", "block_size", "blocks", "block_timeout",
                    "kernel_filter", "fanout", "xdp", "xdp_drop")


def live_uri_options(name: str, uri: str) -> tuple[str, dict[str, str]]:
    """A pcap-live URI without its options, and the options by key, each
    value checked as the runtime checks it; any other URI as it is, with
    none.  A SettingError for an option that is not KEY=VALUE of
    LIVE_URI_OPTIONS, or a value the runtime refuses."""
    scheme, sep, rest = uri.partition(":")
    if not sep or scheme != "pcap-live" or "?" not in rest:
        return uri, {}
    from .option_table import find, refusal  # the table is read on first use
    iface, _, query = rest.partition("?")
    opts: dict[str, str] = {}
    for item in query.split("&"):
        key, eq, value = item.partition("=")
        if not eq or key not in LIVE_URI_OPTIONS:
            raise _source_error(name, uri, f"unknown source option '{item}' after '?' (a live "
                                f"interface takes {', '.join(k + '=' for k in LIVE_URI_OPTIONS)}"
                                f" e.g. pcap-live:{iface}?blocks=16)")
        option = find(f"live_{key}:{name}")
        assert option is not None, key
        if refusal(option, value):
            raise _source_error(name, uri, f"{key} must be {option.expects}, got '{value}'")
        opts[key] = value
    return f"{scheme}:{iface}", opts


def check_uri(name: str, uri: str) -> str:
    """The source kind ('csv' or 'pcap') of a URI, or a UsageError (a
    gdat:PATH file's header is read: it must be one the runtime reads)."""
    uri = live_uri_options(name, uri_options(name, uri)[0])[0]
    scheme, sep, rest = uri.partition(":")
    if not sep or scheme not in URI_SCHEMES or not rest:
        raise _source_error(name, uri, "expected csv:PATH, csv:-, csvtcp:HOST:PORT, "
                            "gdat:PATH, pcap:PATH or pcap-live:IFACE")
    if scheme == "csvtcp":
        host, colon, port = rest.rpartition(":")
        if not colon or not host or not (port.isascii() and port.isdigit()
                                         and 1 <= int(port) <= 65535):
            raise _source_error(name, uri, "expected csvtcp:HOST:PORT (a port from 1 "
                                "to 65535)")
    if scheme in ("csv", "pcap", "gdat") and (rest != "-" or scheme == "gdat"):
        p = Path(rest)
        if not p.exists():
            raise _source_error(name, uri, f"{rest}: no such file")
        if p.is_dir():
            raise _source_error(name, uri, f"{rest} is a directory")
        if scheme == "pcap" and p.is_file():
            # a regular file is checked here (a FIFO is not read ahead): one that
            # is not a capture fails as a wrong path does, with nothing else said
            with open(p, "rb") as f:
                head = f.read(4)
            if head not in _PCAP_MAGIC:
                raise _source_error(name, uri, f"{rest} is not a capture file (a classic "
                                    "pcap or pcapng file starts with its magic number; this "
                                    f"one starts with {head.hex(' ') or 'nothing'})")
    if scheme == "gdat":
        from . import gdat  # only a GDAT source reads one (a run's start-up)
        try:
            gdat.read_header(rest)
        except (OSError, gdat.GdatError) as e:
            raise _source_error(name, uri, str(e)) from None
    return URI_SCHEMES[scheme]


ARROW = "arrow"   # the source kind of an in-memory Arrow source


@record
class Bindings:
    """What a run binds: sources (interface, URI without its options, or
    'arrow' for Arrow data: the members of sets included, under their own
    names) and set
    memberships (set, member) in member order, for gsqlc_add_set_member.
    An LFTA over a set runs once per member at run time, so a compiled
    query set serves any binding."""
    sources: list[tuple[str, str]] = field(default_factory=list)
    members: list[tuple[str, str]] = field(default_factory=list)
    # bound interface -> the LFTAs reading it (set members: each member)
    readers: dict[str, list[LftaSummary]] = field(default_factory=dict)
    # bound interface -> its URI's header option (csv:PATH?header=1), when given
    csv_header: dict[str, bool] = field(default_factory=dict)
    # bound interface -> its URI's capture options (pcap-live:IFACE?blocks=16)
    live: dict[str, dict[str, str]] = field(default_factory=dict)


def set_members(n: LftaSummary, ifaces: Interfaces) -> tuple[str, list[str]]:
    """The interface (or set) LFTA n reads under these bindings and its
    members (one: a plain interface); a UsageError when several members
    are bound but n has no temporal column to merge them on."""
    iface = n.iface or DEFAULT_IFACE
    target = ifaces.default if iface == DEFAULT_IFACE else iface
    members = ifaces.members(target)
    if len(members) >= 2 and not n.mergeable:
        if fanout_of(ifaces.sources.get(members[0], "")) is not None:
            raise UsageError(f"query {n.query} reads interface {target} with fanout="
                             f"{len(members)}, whose sockets' outputs are merged in temporal "
                             "order, but its LFTA outputs no temporal column to merge on: "
                             "select a temporal field (e.g. time), or drop fanout")
        raise UsageError(f"query {n.query} reads the interface set [{target}], whose "
                         "members' outputs are merged in temporal order, but its LFTA "
                         "outputs no temporal column to merge on")
    return target, members


def resolve_bindings(plan: PlanSummary, ifaces: Interfaces,
                     arrow: Iterable[str] = (),
                     warn: Optional[Callable[[str], None]] = None) -> Bindings:
    """Every interface an LFTA reads must be bound, by a source whose kind
    suits the LFTA's protocol; an interface set's members each are.  The
    default interface, when the bindings name another one (a single
    --source NAME=URI), is a set of that one's members.  Interfaces in
    `arrow` are bound to Arrow data (URI 'arrow')."""
    arrow = set(arrow)
    out = Bindings()
    done: set[str] = set()
    for n in plan.lftas:
        iface = n.iface or DEFAULT_IFACE
        target, members = set_members(n, ifaces)
        for m in members:
            out.readers.setdefault(m, []).append(n)
        if iface in done:
            continue
        done.add(iface)
        if target != iface or target in ifaces.sets:
            out.members += [(iface, m) for m in members]
        for m in members:
            _bind_member(n, m, ifaces, arrow, out)
    used = {i for i, _ in out.sources}
    for name in sorted((set(ifaces.sources) | arrow) - used):
        (warn or _warn)(f"interface {name} is bound but no query reads it")
    return out


def _bind_member(n: LftaSummary, m: str, ifaces: Interfaces, arrow: set[str], out: Bindings) -> None:
    if any(i == m for i, _ in out.sources):
        return
    pk = n.protocol.source_kind or "csv"
    if m in arrow:
        if pk != "csv":
            raise UsageError(
                f"source {m}: query {n.query} reads PROTOCOL {n.protocol.name}, "
                "whose fields come from packets; Arrow data feeds PROTOCOLs of named "
                "columns (get_csv_* fields), e.g. PACKETS of gsqlc.PACKET_TABLE_SCHEMA "
                "for a table from gsqlc.read_pcap")
        out.sources.append((m, ARROW))
        return
    uri = ifaces.sources.get(m)
    if uri is None:
        shown = f"[{m}].{n.protocol.name}" if m != ifaces.default else n.protocol.name
        raise UsageError(
            f"interface '{m}' is not bound: query {n.query} reads {shown}; "
            f"bind it with --source {m}=URI (or in an --interfaces file), or "
            f"sources={{'{m}': ...}} in Python")
    kind = check_uri(m, uri)
    if kind != pk:
        wanted = ("packets (pcap:PATH or pcap-live:IFACE)" if pk == "pcap"
                  else "CSV rows (csv:PATH), GDAT records (gdat:PATH) or Arrow data")
        raise _source_error(m, uri, f"query {n.query} reads PROTOCOL "
                            f"{n.protocol.name}, whose fields come from {wanted}")
    plain, opts = uri_options(m, uri)
    plain, live = live_uri_options(m, plain)
    out.sources.append((m, plain))
    if "header" in opts:
        out.csv_header[m] = opts["header"]
    if live:
        out.live[m] = live


def source_options(bindings: Bindings, csv_header: bool = False) -> dict[str, str]:
    """The runtime's per-source options: csv_header:NAME for every CSV file
    or stream whose first line names its columns (its URI's header option,
    else the run's csv_header); live_KEY:NAME for each option of a live
    interface's URI (pcap-live:IFACE?KEY=VALUE)."""
    opts = {f"live_{key}:{iface}": value
            for iface, live in bindings.live.items() for key, value in live.items()}
    for iface, uri in bindings.sources:
        if uri.partition(":")[0] in _CSV_TEXT_SCHEMES and \
                bindings.csv_header.get(iface, csv_header):
            opts[f"csv_header:{iface}"] = "1"
    return opts


def time_options(ifaces: Interfaces, bindings: Bindings) -> dict[str, str]:
    """The runtime's time options for the bound interfaces: max_skew,
    out_of_order, latency, time_unit and arrival (the arrival column resolved
    to POS:TYPE through the PROTOCOLs of the queries reading the interface)
    per interface, skew:A:B (Srivastava & Widom 2004 B_ab), the interface properties a
    query reads as @KEY (prop:IFACE:KEY) and the heartbeat generator's hb_*
    settings (runtime_c/core/heartbeat_gen.c)."""
    uris = dict(bindings.sources)
    bound = set(uris)
    opts = {f"max_skew:{iface}": repr(skew) for iface, skew in ifaces.skews.items()
            if iface in uris}
    opts.update({f"out_of_order:{iface}": repr(d) for iface, d in ifaces.out_of_order.items()
                 if iface in bound})
    opts.update({f"latency:{iface}": repr(d) for iface, d in ifaces.latency.items()
                 if iface in bound})
    for (a, b), pairs in ifaces.skew_bounds.items():
        # a bound given for a set holds between each pair of their members
        for ma in ifaces.members(a):
            for mb in ifaces.members(b):
                if ma in bound and mb in bound and ma != mb:
                    opts[f"skew:{ma}:{mb}"] = ";".join(f"{t!r},{d!r}" for t, d in pairs)
    for iface, unit in ifaces.time_unit.items():
        if iface in uris:
            _check_csv_time(ifaces.time_unit_where.get(iface, f"time_unit {iface}"), iface,
                            uris[iface], "time_unit", "the unit of a CSV time column; packet "
                            "timestamps are microseconds")
            opts[f"time_unit:{iface}"] = unit
    for iface in uris:
        declared = declared_time_unit(iface, bindings.readers.get(iface, []),
                                      ifaces.time_unit.get(iface),
                                      ifaces.time_unit_where.get(iface, f"time_unit {iface}"))
        if declared is not None:
            opts[f"time_unit:{iface}"] = declared
    for iface, column in ifaces.arrival.items():
        if iface in uris:
            opts[f"arrival:{iface}"] = arrival_column(
                ifaces.arrival_where.get(iface, f"arrival {iface}"), iface, column,
                uris[iface], bindings.readers.get(iface, []))
    for iface, props in sorted(ifaces.properties.items(), key=lambda kv: kv[0] in ifaces.sets):
        # a set's properties hold for each of its members (a member's own win)
        for m in ifaces.members(iface):
            if m in bound:
                for k, v in props.items():
                    opts.setdefault(f"prop:{m}:{k}", v)
    hb = ifaces.heartbeats
    if hb.estimate != "given":
        opts["hb_estimate"] = hb.estimate
    if hb.level != "operator":
        opts["hb_level"] = hb.level
    for key in ("horizon", "window", "alpha", "timeout"):
        v = getattr(hb, key)
        if v is not None:
            opts[f"hb_{key}"] = repr(v)
    return opts


def declared_time_unit(iface: str, readers: Sequence[LftaSummary], given: Optional[str],
                       where: Where) -> Optional[str]:
    """The time unit of interface `iface` that the PROTOCOLs of its readers
    declare (their temporal CSV fields' time_unit), or None when they declare
    none or it is the one `given` (time_unit, set at `where`); a UsageError
    when it is not the one given, or they declare several."""
    units = {(f.name, n.protocol.name, f.time_unit) for n in readers
             for f in n.protocol.csv_fields if f.temporal and f.time_unit}
    distinct = sorted({u for _, _, u in units})
    if not distinct:
        return None
    named = ", ".join(f"{f} of PROTOCOL {p}: {u}" for f, p, u in sorted(units))
    if given is not None:
        if given not in distinct:
            raise where_error(where, f": time_unit {given} for interface '{iface}', but the "
                                     f"time fields read from it declare another ({named})")
        return None
    if len(distinct) > 1:
        raise UsageError(f"interface '{iface}': the time fields read from it declare different "
                         f"time units ({named}); its records' timestamps have one unit: "
                         "declare one, or read the interface in one unit per query set")
    return distinct[0]


def _check_csv_time(where: Where, iface: str, uri: str, key: str, why: str) -> None:
    if uri.partition(":")[0] in ("pcap", "pcap-live"):
        raise where_error(where, f": {key} is for CSV interfaces ({why}), but interface "
                                 f"'{iface}' is bound to {uri}")


def arrival_column(where: str, iface: str, column: str, uri: str,
                   readers: Sequence[LftaSummary]) -> str:
    """The runtime option arrival:NAME's value POS:TYPE for column
    `column` of interface `iface` (bound to `uri`), found among the CSV
    fields of the PROTOCOLs of `readers`; a UsageError naming `where` if
    there is none, or the interface is not a CSV file."""
    _check_csv_time(where, iface, uri, "arrival", "a packet's arrival is its timestamp")
    if uri == ARROW:
        raise UsageError(f"{where}: arrival '{column}': interface '{iface}' is bound to Arrow "
                         "data; an arrival column is read from CSV files only (give the "
                         "arrival instants as the time column)")
    for n in readers:
        f = next((f for f in n.protocol.csv_fields if f.name == column), None)
        if f is None:
            continue
        if not f.numeric:
            raise UsageError(f"{where}: arrival '{column}': field {column} of PROTOCOL "
                             f"{n.protocol.name} is read as {f.type}; an arrival column holds "
                             "numbers of time units")
        return f"{f.pos}:{f.type}:{f.time_format or 'none'}:{f.name}"
    protos = {n.protocol.name: n.protocol for n in readers}
    known = "; ".join(f"PROTOCOL {name} has "
                      + (", ".join(f.name for f in p.csv_fields) or "none")
                      for name, p in protos.items())
    raise UsageError(f"{where}: arrival '{column}': no query reading interface '{iface}' has "
                     f"a field of that name read from a CSV column (get_csv_<type>_posN)"
                     + (f" ({known})" if known else ""))


def _warn(msg: str) -> None:
    print(f"gsqlc: warning: {msg}", file=sys.stderr)


def in_memory(obj: Any) -> bool:
    """Whether an Arrow source is data at hand (not a reader or iterator
    that may be a live feed)."""
    import pyarrow as pa
    return isinstance(obj, (pa.Table, pa.RecordBatch)) or \
        (type(obj).__module__ or "").startswith("pandas")


def in_memory_table(obj: Any) -> Any:
    """Arrow data at hand (in_memory(obj)) as a pyarrow Table, without
    copying Arrow data (a DataFrame is converted)."""
    import pyarrow as pa
    if isinstance(obj, pa.Table):
        return obj
    if isinstance(obj, pa.RecordBatch):
        return pa.Table.from_batches([obj])
    return pa.Table.from_pandas(obj, preserve_index=False)


def as_record_batch_reader(obj: Any, name: str) -> Any:
    """An Arrow source as a pyarrow.RecordBatchReader, without copying:
    a Table, a RecordBatch, a RecordBatchReader, a pandas DataFrame, anything
    with __arrow_c_stream__, or an iterable of RecordBatches."""
    import pyarrow as pa
    if isinstance(obj, pa.RecordBatchReader):
        return obj
    if in_memory(obj):
        return in_memory_table(obj).to_reader()
    if hasattr(obj, "__arrow_c_stream__"):
        return pa.RecordBatchReader.from_stream(obj)
    if isinstance(obj, Iterable) and not isinstance(obj, (str, bytes)):
        it = iter(obj)
        try:
            first = next(it)
        except StopIteration:
            raise UsageError(f"source {name}: the iterable of record batches is empty "
                             "(give a pyarrow Table with a schema for no rows)") from None
        if isinstance(first, pa.Table):
            first_batches = first.to_batches()
            schema = first.schema
        elif isinstance(first, pa.RecordBatch):
            first_batches, schema = [first], first.schema
        else:
            raise UsageError(f"source {name}: expected pyarrow RecordBatches, got {type(first).__name__}")

        def batches() -> Iterator[Any]:
            yield from first_batches
            for b in it:
                if isinstance(b, pa.Table):
                    yield from b.to_batches()
                else:
                    yield b
        return pa.RecordBatchReader.from_batches(schema, batches())
    raise UsageError(f"source {name}: expected a URI (csv:PATH, pcap:PATH), a pyarrow Table, "
                     f"RecordBatch or RecordBatchReader, a pandas DataFrame or an iterable of "
                     f"record batches, got {type(obj).__name__}")


# ------------------------------------------------------------ interfaces


def interfaces_of(sources: Mapping[str, Any], skews: Mapping[str, float],
                  interfaces_file: Optional[str], bounds: Optional[TimeBounds] = None
                  ) -> tuple[Interfaces, dict[str, Any]]:
    """Interfaces from run()'s sources: a URI binds an interface, a list binds
    an interface set (members NAME.0, NAME.1, ...); Arrow data is kept aside
    (returned by member interface name)."""
    pairs: list[tuple[str, str]] = []
    arrow: dict[str, Any] = {}
    for name, value in sources.items():
        name = name or DEFAULT_IFACE
        values = value if isinstance(value, list) else [value]
        for i, v in enumerate(values):
            if isinstance(v, (str, os.PathLike)):
                pairs.append((name, normalize_uri(os.fspath(v))))
            else:
                # an Arrow member: a placeholder URI marks its place in the set
                member = name if len(values) == 1 else f"{name}.{i}"
                arrow[member] = v
                pairs.append((name, f"{ARROW}:{member}"))
    return build_interfaces(pairs, list(skews.items()), interfaces_file, bounds), arrow
