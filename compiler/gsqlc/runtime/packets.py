"""Packet captures as Arrow tables, decoded by the C runtime's own packet
reader (runtime_c/sources/pkt_decode.c and the accessors of runtime_c/include/gsq_packet.h,
built into gsqlc._native).

    t = gsqlc.read_pcap("trace.pcap")           # pyarrow.Table, one row per packet
    qs = gsqlc.compile(["q.gsql"], schema=gsqlc.PACKET_TABLE_SCHEMA)   # FROM PACKETS

The columns are the fields of gsqlc's packet schema (data/packet_schema.txt),
one per distinct name in schema order, the first definition of a name
winning (srcPort/destPort are IP's: the TCP or UDP port).  A field whose
header a packet lacks is null.  Types: IP and IPV6 -> utf8 text in GSQL's
forms (ip_format='text', the default: '10.0.0.1'; eight groups of four hex
digits), or with ip_format='int' IP -> uint32 (10.0.0.1 is 0x0A000001) and
IPV6 -> fixed_size_binary(16), as the runtime holds them (queries read
either form; the integers skip formatting and parsing them); uint ->
uint32, ullong -> uint64, bool -> bool, string -> binary.

PACKET_TABLE_SCHEMA is a schema file declaring PROTOCOL PACKETS over exactly
these columns, for queries that read such a table as an Arrow source.
"""
from __future__ import annotations

import os
import warnings
from functools import lru_cache
from typing import Any

from ..resources import data_path, packet_schema_path
from .extension import native

PACKET_TABLE_SCHEMA = str(data_path("packet_table_schema.txt"))
"""Path of a schema file declaring PROTOCOL PACKETS over exactly the columns
of read_pcap's tables, for queries that read such a table as an Arrow
source: gsqlc.compile(files, schema=gsqlc.PACKET_TABLE_SCHEMA)."""


@lru_cache(maxsize=None)
def packet_columns() -> tuple[tuple[str, str, str], ...]:
    """(name, accessor, GSQL type) of read_pcap's columns, from the packet
    schema: every distinct field name in declaration order, first
    definition wins."""
    from ..semantics.resolve import load_schema
    schema = load_schema([str(packet_schema_path())])
    out: dict[str, tuple[str, str, str]] = {}
    for sf in schema.files:
        for decl in sf.protocols:
            for f in schema.protocols[decl.name].fields.values():
                if f.source == "pcap" and f.accessor is not None and f.name not in out:
                    out[f.name] = (f.name, f.accessor, str(f.type))
    return tuple(out.values())


def read_pcap(path: str | bytes | os.PathLike[str] | os.PathLike[bytes], *,
              batch_rows: int = 65536, ip_format: str = "text") -> Any:
    """Decode every packet of a pcap/pcapng capture into a pyarrow.Table
    (record batches of at most batch_rows rows).

    Raises OSError (FileNotFoundError, ...) when the file cannot be read,
    ValueError when it is not a capture.  A capture cut short in a record
    gives the packets before the cut and a RuntimeWarning; a link type the
    decoder does not know gives time, timestamp, caplen and wire_len only
    (every other column null) and a RuntimeWarning.  ip_format: 'text'
    (default) or 'int', the form of the IP and IPV6 columns (module
    docstring)."""
    import pyarrow as pa

    from .arrow_types import check_ip_format
    check_ip_format(ip_format)

    p = os.fspath(path)
    res = native().read_pcap(os.fsencode(p), list(packet_columns()), int(batch_rows))
    schema = pa.Schema._import_from_c_capsule(res["schema"])
    batches = [pa.RecordBatch._import_from_c_capsule(s, a) for s, a in res["batches"]]
    name = os.fsdecode(p)
    if res["truncated"] is not None:
        warnings.warn(f"{name}: truncated capture after {res['packets']} packets "
                      f"({res['truncated']}); the packets before were read",
                      RuntimeWarning, stacklevel=2)
    if not res["decoded"]:
        warnings.warn(f"{name}: link type {res['linktype']} is not decoded; only time, "
                      "timestamp, caplen and wire_len are available", RuntimeWarning,
                      stacklevel=2)
    if res["undecoded_packets"]:
        warnings.warn(f"{name}: {res['undecoded_packets']} packets of pcapng interfaces of a "
                      f"link type not decoded ({res['undecoded_linktype']} first); only time, "
                      "timestamp, caplen and wire_len are available for them", RuntimeWarning,
                      stacklevel=2)
    if res["past_time_end"]:
        warnings.warn(f"{name}: {res['past_time_end']} packets stamped from 2106-02-07 "
                      "06:28:16 UTC on, past the 32-bit `time` (seconds): their time is "
                      "4294967295; timestamp holds their exact time", RuntimeWarning,
                      stacklevel=2)
    if ip_format == "text":
        batches, schema = _ip_text_batches(batches, schema)
    return pa.Table.from_batches(batches, schema=schema)


def _ip_text_batches(batches: list[Any], schema: Any) -> tuple[list[Any], Any]:
    """read_pcap's batches and schema with the IP and IPV6 columns as text."""
    import pyarrow as pa

    from .arrow_types import IP_WIDTHS, ip_text
    widths = {n: w for n, _, t in packet_columns() if (w := IP_WIDTHS.get(t))}
    fields = [pa.field(f.name, pa.string(), True) if widths.get(f.name) else f for f in schema]
    out_schema = pa.schema(fields)
    out = [pa.RecordBatch.from_arrays(
        [ip_text(c, widths[f.name]) if widths.get(f.name) else c
         for f, c in zip(schema, b.columns)], schema=out_schema) for b in batches]
    return out, out_schema
