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

import importlib.machinery
import importlib.util
import os
import sys
import warnings
from functools import lru_cache
from pathlib import Path

from ..resources import data_path, packet_schema_path

PACKET_TABLE_SCHEMA = str(data_path("packet_table_schema.txt"))
"""Path of a schema file declaring PROTOCOL PACKETS over exactly the columns
of read_pcap's tables, for queries that read such a table as an Arrow
source: gsqlc.compile(files, schema=gsqlc.PACKET_TABLE_SCHEMA)."""

# The read_pcap interface this module speaks (native_module.cpp kReadPcapAbi).
_READ_PCAP_ABI = 3


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
                if f.source == "pcap" and f.name not in out:
                    out[f.name] = (f.name, f.accessor, str(f.type))
    return tuple(out.values())


def _native_candidates() -> list[Path]:
    """Built copies of the extension when this package has none beside it
    (a source checkout on PYTHONPATH): the installed gsqlc's, and the
    scikit-build tree's (build/<wheel tag>/), newest first."""
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    found: list[Path] = []
    try:
        from importlib.metadata import PackageNotFoundError, distribution
        try:
            dist = distribution("gsqlc")
            for f in dist.files or ():
                if f.name.startswith("_native.") and f.name.endswith(suffixes):
                    found.append(Path(dist.locate_file(f)))
        except PackageNotFoundError:
            pass
    except ImportError:  # pragma: no cover
        pass
    build = Path(__file__).resolve().parents[3] / "build"
    if build.is_dir():
        found += [p for p in build.glob("*/_native.*") if p.name.endswith(suffixes)]
    found = [p for p in found if p.is_file()]
    return sorted(set(found), key=lambda p: p.stat().st_mtime, reverse=True)


@lru_cache(maxsize=None)
def native():
    """The gsqlc._native extension (raises ImportError when it is missing or
    older than this module)."""
    try:
        from .. import _native as mod
    except ImportError:
        mod = None
        for cand in _native_candidates():
            spec = importlib.util.spec_from_file_location("gsqlc._native", cand)
            if spec is None or spec.loader is None:
                continue
            m = importlib.util.module_from_spec(spec)
            try:
                spec.loader.exec_module(m)
            except ImportError:
                continue
            if getattr(m, "READ_PCAP_ABI", None) == _READ_PCAP_ABI:
                sys.modules[spec.name] = m
                mod = m
                break
        if mod is None:
            raise ImportError("gsqlc's native extension (gsqlc._native) is not built: "
                              "install gsqlc (pip install .)") from None
    if getattr(mod, "READ_PCAP_ABI", None) != _READ_PCAP_ABI:
        raise ImportError(f"gsqlc._native ({mod.__file__}) is older than gsqlc's Python "
                          "sources: reinstall gsqlc (pip install .)")
    return mod


def read_pcap(path, *, batch_rows: int = 65536, ip_format: str = "text"):
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


def _ip_text_batches(batches, schema):
    """read_pcap's batches and schema with the IP and IPV6 columns as text."""
    import pyarrow as pa

    from .arrow_types import IP_WIDTHS, ip_text
    widths = {n: IP_WIDTHS.get(t) for n, _, t in packet_columns()}
    fields = [pa.field(f.name, pa.string(), True) if widths.get(f.name) else f for f in schema]
    out_schema = pa.schema(fields)
    out = [pa.RecordBatch.from_arrays(
        [ip_text(c, widths[f.name]) if widths.get(f.name) else c
         for f, c in zip(schema, b.columns)], schema=out_schema) for b in batches]
    return out, out_schema
