"""Schema model: PROTOCOLs with inheritance resolved, STREAM declarations.

A field's accessor decides where its value comes from:
  get_csv_<type>_pos<N>  the N-th field of a CSV row         (source 'csv')
  get_gdat_<type>_pos<N> Tigon's GDAT accessor: read as a CSV field (source 'csv');
                         a gdat:PATH source matches fields by name
  get_system_time        the run's clock in seconds          (source 'system')
  get_schemaId           GS-lite's record schema id: 0, as GS-lite's CSV
                         source sets it (gsqlc's sources carry none) (source 'constant')
  get_<name>             a packet-header accessor             (source 'pcap')

A CSV field of an integer or float type may give two properties of its
own (time_fields): `time_format F` -- its text is an instant, F one of
TIME_FORMATS (ISO-8601 date-times, or numbers of seconds, milliseconds,
microseconds or nanoseconds since 1970) -- and `time_unit U` -- its value
counts U (s, ms, us or ns; seconds by default), the unit of its
interface's time column when it is one (runtime.bindings).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Optional

from ..errors import QueryError
from ..frontend import ast
from .types import Temporal, Type, parse_type_name

_CSV_ACCESSOR = re.compile(r"^get_(?:csv|gdat)_(v_str|[a-z0-9]+)_pos(\d+)$", re.IGNORECASE)
# Tigon's GDAT accessors name strings v_str (get_gdat_v_str_posN) as well as string
_ACCESSOR_TYPE_ALIASES = {"v_str": "string"}

# Accessors implemented by runtime_c/include/gsq_packet.h (gsq_acc_<name>).
PACKET_ACCESSORS = {
    "get_time": Type.UINT, "get_timestamp": Type.ULLONG,
    "get_caplen": Type.UINT, "get_wire_len": Type.UINT,
    "get_eth_src": Type.ULLONG, "get_eth_dst": Type.ULLONG,
    "get_eth_type": Type.UINT, "get_vlan_id": Type.UINT,
    "get_ip_version": Type.UINT, "get_ip_protocol": Type.UINT,
    "get_ip_len": Type.UINT, "get_ip_hdr_length": Type.UINT,
    "get_ip_ttl": Type.UINT, "get_ip_tos": Type.UINT, "get_ip_id": Type.UINT,
    "get_ip_offset": Type.UINT, "get_ip_more_fragments": Type.BOOL,
    "get_ip_dont_fragment": Type.BOOL,
    "get_ipv4_src": Type.IP, "get_ipv4_dst": Type.IP,
    "get_ipv6_src": Type.IPV6, "get_ipv6_dst": Type.IPV6,
    "get_src_port": Type.UINT, "get_dst_port": Type.UINT,
    "get_tcp_src_port": Type.UINT, "get_tcp_dst_port": Type.UINT,
    "get_tcp_seq": Type.UINT, "get_tcp_ack": Type.UINT,
    "get_tcp_flags": Type.UINT, "get_tcp_fin": Type.BOOL,
    "get_tcp_syn": Type.BOOL, "get_tcp_rst": Type.BOOL,
    "get_tcp_psh": Type.BOOL, "get_tcp_ackflag": Type.BOOL,
    "get_tcp_urg": Type.BOOL, "get_tcp_window": Type.UINT,
    "get_tcp_data_length": Type.UINT, "get_tcp_data": Type.STRING,
    "get_udp_src_port": Type.UINT, "get_udp_dst_port": Type.UINT,
    "get_udp_length": Type.UINT, "get_udp_data": Type.STRING,
    "get_icmp_type": Type.UINT, "get_icmp_code": Type.UINT,
}


@dataclass
class Field:
    name: str
    type: Type
    accessor: Optional[str]
    source: str                    # 'csv' | 'system' | 'pcap' | 'stream'
    csv_pos: int = 0
    csv_type: Optional[Type] = None  # type the CSV text is parsed as
    temporal: Temporal = Temporal.NONE
    required: bool = False
    properties: dict[str, Any] = field(default_factory=dict)
    span: ast.Span = ast.NO_SPAN
    # Set when the accessor cannot be read; raised only if a query uses the
    # protocol, so one exotic PROTOCOL does not break a whole schema file.
    problem: Optional[QueryError] = None
    # time_format and time_unit (the module's docstring): None when not given
    time_format: Optional[str] = None
    time_unit: Optional[str] = None


@dataclass
class Protocol:
    name: str
    fields: dict[str, Field]
    kind: str                      # 'protocol' | 'stream'
    source_kind: Optional[str]     # 'csv' | 'pcap' | None (system fields only)
    span: ast.Span = ast.NO_SPAN


@dataclass
class Schema:
    protocols: dict[str, Protocol]
    files: list[ast.SchemaFile]

    def get(self, name: str) -> Optional[Protocol]:
        return self.protocols.get(name)


def stream_source(p: Protocol) -> Protocol:
    """A schema STREAM read as a source: its tuples come from an interface
    as records whose fields are the STREAM's, in declaration order -- field
    i read as CSV position i (a CSV file or TCP stream, a GDAT file written
    from the STREAM, Arrow columns matched by name)."""
    assert p.kind == "stream"
    fields = {}
    for i, (name, f) in enumerate(p.fields.items(), start=1):
        fields[name] = Field(name, f.type, f"get_csv_{f.type.value.lower()}_pos{i}", "csv",
                             csv_pos=i, csv_type=f.type, temporal=f.temporal,
                             required=f.required, properties=dict(f.properties), span=f.span,
                             time_format=f.time_format, time_unit=f.time_unit)
    return Protocol(p.name, fields, "protocol", "csv" if fields else None, p.span)


def protocol_problem(p: Protocol) -> Optional[QueryError]:
    for f in p.fields.values():
        if f.problem is not None:
            return f.problem
    return None


# a CSV field's time_format: how its text is an instant (runtime_c's
# enum gsq_time_format, in this order from 1)
TIME_FORMATS = ("iso8601", "epoch_s", "epoch_ms", "epoch_us", "epoch_ns")
# a time_unit: nanoseconds per unit
TIME_UNIT_NS = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}


def _time_property(fd: ast.FieldDecl, props: dict[str, Any], key: str,
                   allowed: "tuple[str, ...]") -> Optional[str]:
    """The value of time property `key` (time_format or time_unit), checked
    against `allowed`; None when the field does not give it."""
    v = next((val for k, val in props.items() if k.lower() == key), None)
    if v is None:
        return None
    if not isinstance(v, str) or v.lower() not in allowed:
        raise QueryError(fd.span, "schema",
                         f"field '{fd.name}': {key} must be one of {', '.join(allowed)} "
                         f"(got {v!r})")
    return v.lower()


def _time_type(t: Type) -> bool:
    """Whether a field of type t may be a time: a number (not a bool, not
    an address)."""
    return (t.is_integer or t is Type.FLOAT) and t not in (Type.BOOL, Type.IP)


def time_fields(fd: ast.FieldDecl, t: Type, props: dict[str, Any]) -> tuple[Optional[str],
                                                                             Optional[str]]:
    """A field's (time_format, time_unit) properties, checked: only an
    integer or float field takes them."""
    fmt = _time_property(fd, props, "time_format", TIME_FORMATS)
    unit = _time_property(fd, props, "time_unit", tuple(TIME_UNIT_NS))
    if (fmt or unit) and not _time_type(t):
        raise QueryError(fd.span, "schema",
                         f"field '{fd.name}' of type {t} cannot be a time: time_format and "
                         "time_unit are for integer and float fields")
    return fmt, unit


def _field_from_decl(fd: ast.FieldDecl, kind: str) -> Field:
    t = parse_type_name(fd.type_name)
    if t is None:
        raise QueryError(fd.span, "unknown-type",
                        f"unknown type '{fd.type_name}' of field '{fd.name}'")
    props = dict(fd.properties)
    temporal = Temporal.NONE
    if props.get("increasing"):
        temporal = Temporal.INCREASING
    if props.get("decreasing"):
        if temporal is not Temporal.NONE:
            raise QueryError(fd.span, "schema",
                            f"field '{fd.name}' cannot be both increasing and decreasing")
        temporal = Temporal.DECREASING
    if temporal.is_temporal and not (t.is_integer or t is Type.FLOAT):
        raise QueryError(fd.span, "schema",
                        f"field '{fd.name}' of type {t} cannot be {temporal}")
    f = Field(fd.name, t, fd.accessor, "stream", temporal=temporal,
              required=bool(props.get("required")), properties=props,
              span=fd.span)
    f.time_format, f.time_unit = time_fields(fd, t, props)
    if kind == "stream":
        return f
    acc = fd.accessor
    if acc is None:
        raise QueryError(fd.span, "schema",
                        f"field '{fd.name}' of a PROTOCOL needs an accessor "
                        "(get_csv_<type>_pos<N>, get_system_time or a packet accessor)")
    m = _CSV_ACCESSOR.match(acc)
    if m:
        ct = parse_type_name(_ACCESSOR_TYPE_ALIASES.get(m.group(1).lower(), m.group(1)))
        if ct is None:
            raise QueryError(fd.span, "schema", f"accessor '{acc}': unknown type '{m.group(1)}'")
        pos = int(m.group(2))
        if pos < 1:
            raise QueryError(fd.span, "schema", f"accessor '{acc}': positions start at 1")
        if ct.is_string != t.is_string or (ct is Type.IPV6) != (t is Type.IPV6):
            raise QueryError(fd.span, "type-mismatch",
                            f"field '{fd.name}' is {t} but its accessor reads {ct}")
        f.source, f.csv_pos, f.csv_type = "csv", pos, ct
        if (f.time_format or f.time_unit) and not _time_type(ct):
            raise QueryError(fd.span, "schema",
                             f"field '{fd.name}': its accessor reads {ct}, which cannot be a "
                             "time (time_format and time_unit are for integer and float "
                             "accessors)")
    elif f.time_format or f.time_unit:
        raise QueryError(fd.span, "schema",
                         f"field '{fd.name}': time_format and time_unit are for fields read "
                         f"from CSV columns (get_csv_<type>_pos<N>), not {acc}")
    elif acc.lower() == "get_system_time":
        if not t.is_integer:
            raise QueryError(fd.span, "type-mismatch",
                            f"get_system_time gives a uint, field '{fd.name}' is {t}")
        f.source = "system"
    elif acc.lower() == "get_schemaid":
        if not t.is_integer:
            raise QueryError(fd.span, "type-mismatch",
                            f"get_schemaId gives a uint, field '{fd.name}' is {t}")
        f.source = "constant"
    elif acc in PACKET_ACCESSORS:
        at = PACKET_ACCESSORS[acc]
        if at != t and not (at.is_integer and t.is_integer):
            raise QueryError(fd.span, "type-mismatch",
                            f"field '{fd.name}' is {t} but accessor {acc} gives {at}")
        f.source = "pcap"
    else:
        f.source = "unsupported"
        f.problem = QueryError(fd.span, "unknown-accessor",
                              f"unknown accessor '{acc}' for field '{fd.name}': expected "
                              "get_csv_<type>_pos<N>, get_system_time, get_schemaId, or a "
                              "packet accessor "
                              "of gsqlc's packet schema")
    return f


def build_schema(files: list[ast.SchemaFile]) -> Schema:
    decls: dict[str, ast.ProtocolDecl] = {}
    for sf in files:
        for pd in sf.protocols:
            if pd.name in decls:
                prev = decls[pd.name]
                raise QueryError(pd.span, "duplicate-protocol",
                                f"{pd.kind.upper()} '{pd.name}' is declared twice",
                                notes=[(prev.span, "first declared here")])
            decls[pd.name] = pd
    protocols: dict[str, Protocol] = {}
    visiting: set[str] = set()

    def resolve(name: str, span: ast.Span) -> Protocol:
        if name in protocols:
            return protocols[name]
        pd = decls.get(name)
        if pd is None:
            raise QueryError(span, "unknown-protocol", f"unknown parent PROTOCOL '{name}'")
        if name in visiting:
            raise QueryError(pd.span, "schema", f"PROTOCOL '{name}' inherits from itself")
        visiting.add(name)
        fields: dict[str, Field] = {}
        for parent in pd.parents:
            for fname, f in resolve(parent, pd.span).fields.items():
                fields[fname] = f
        for fd in pd.fields:
            fields[fd.name] = _field_from_decl(fd, pd.kind)
        visiting.discard(name)
        sources = {f.source for f in fields.values()} - {"system", "constant", "stream",
                                                         "unsupported"}
        if len(sources) > 1:
            raise QueryError(pd.span, "schema",
                            f"PROTOCOL '{name}' mixes CSV and packet accessors")
        kind = next(iter(sources)) if sources else None
        p = Protocol(name, fields, pd.kind, kind, pd.span)
        protocols[name] = p
        return p

    for name, pd in decls.items():
        resolve(name, pd.span)
    return Schema(protocols, files)
