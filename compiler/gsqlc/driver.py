"""The compile pipeline: files -> parse -> resolve -> analyze -> plan -> code.

    qs = load_queryset(["flows.gsql"], ["schema.txt"])
    gen = codegen.generate(qs.plan)
"""
from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from . import ast
from .analyze import AnalyzedQuery, Source, StreamDef, analyze_query
from .diagnostics import GsqlError
from .parser import parse_query_file, parse_schema_file
from .plan import Plan, make_plan
from .resources import packet_schema_path
from .schema import Schema, build_schema, protocol_problem


@dataclass
class _Entry:
    query: ast.Query
    name: str
    file: str


@dataclass
class QuerySet:
    schema: Schema
    queries: list[AnalyzedQuery]
    plan: Plan
    files: list[str] = field(default_factory=list)

    def query(self, name: str) -> AnalyzedQuery:
        for q in self.queries:
            if q.name == name:
                return q
        raise KeyError(name)

    def leaves(self) -> list[str]:
        """Queries whose output no other query reads."""
        read = {s.stream.name for q in self.queries for s in q.sources if s.stream}
        return [q.name for q in self.queries if q.name not in read]

    def interfaces(self) -> list[str]:
        """Interface names the LFTAs read ('' = the default interface)."""
        out: list[str] = []
        for n in self.plan.nodes:
            if n.level == "lfta" and n.iface not in out:
                out.append(n.iface)
        return out


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8", errors="surrogateescape")
    except FileNotFoundError:
        raise GsqlError(None, "no-such-file", f"{path}: no such file") from None
    except IsADirectoryError:
        raise GsqlError(None, "no-such-file", f"{path}: is a directory, not a file") from None
    except OSError as e:
        raise GsqlError(None, "no-such-file", f"{path}: {e.strerror}") from None


def load_schema(paths: Sequence[str]) -> Schema:
    if not paths:
        paths = [str(packet_schema_path())]
    files = [parse_schema_file(p, _read(p)) for p in paths]
    return build_schema(files)


def _name_queries(qf: ast.QueryFile) -> list[_Entry]:
    out = []
    stem = Path(qf.path).stem
    for i, q in enumerate(qf.queries):
        name = q.name
        if not name:
            name = stem if len(qf.queries) == 1 else f"{stem}_{i + 1}"
        out.append(_Entry(q, name, qf.path))
    return out


class _Resolver:
    def __init__(self, schema: Schema, library_paths: list[Path]):
        self.schema = schema
        self.library_paths = library_paths
        self.entries: dict[str, _Entry] = {}
        self.loaded_files: set[str] = set()

    def add_file(self, path: str) -> None:
        rp = str(Path(path).resolve())
        if rp in self.loaded_files:
            return
        self.loaded_files.add(rp)
        qf = parse_query_file(path, _read(path))
        for e in _name_queries(qf):
            if e.name in self.entries:
                prev = self.entries[e.name]
                raise GsqlError(e.query.span, "duplicate-query",
                                f"query '{e.name}' is defined twice",
                                notes=[(prev.query.span, "first defined here")])
            if self.schema.get(e.name) is not None:
                raise GsqlError(e.query.span, "duplicate-query",
                                f"query name '{e.name}' is also a PROTOCOL of the schema")
            self.entries[e.name] = e

    def library_query(self, ref: ast.TableRef) -> str:
        """Load LIB/query from a library directory; returns the query name."""
        lib, name = ref.library, ref.name
        tried = []
        for root in self.library_paths:
            d = root / lib  # type: ignore[operator]
            tried.append(str(d))
            if not d.is_dir():
                continue
            cands = [d / f"{name}.gsql"] + sorted(p for p in d.glob("*.gsql"))
            for f in cands:
                if f.is_file():
                    self.add_file(str(f))
                    if name in self.entries:
                        return name
        raise GsqlError(ref.span, "unknown-source",
                        f"no query '{name}' in library '{lib}' (searched: "
                        + (", ".join(tried) or "no library path") + ")")

    def source(self, ref: ast.TableRef, streams: dict[str, StreamDef]) -> tuple[Source, Optional[str]]:
        """Resolve one FROM item.  Returns the source and, for a stream, the
        name of the query producing it."""
        alias = ref.alias or ref.name
        if ref.kind == "stream" or ref.library:
            qname = self.library_query(ref) if ref.library else ref.name
            return Source(alias, ref, "stream"), qname
        if ref.kind == "name" and ref.name in self.entries:
            return Source(alias, ref, "stream"), ref.name
        proto = self.schema.get(ref.name)
        if proto is None or proto.kind == "stream":
            if proto is not None:
                raise GsqlError(ref.span, "not-supported-yet",
                                f"reading the schema STREAM '{ref.name}' as a source is not supported "
                                "yet by gsqlc; define it as a query or a PROTOCOL")
            names = list(self.entries) + list(self.schema.protocols)
            close = difflib.get_close_matches(ref.name, names, n=3)
            hint = ("; did you mean " + " or ".join(f"'{c}'" for c in close) + "?") if close else ""
            what = "PROTOCOL" if ref.kind == "protocol" else "query or PROTOCOL"
            raise GsqlError(ref.span, "unknown-source", f"no {what} named '{ref.name}'{hint}")
        problem = protocol_problem(proto)
        if problem is not None:
            raise GsqlError(ref.span, problem.rule,
                            f"PROTOCOL '{proto.name}' cannot be read: {problem.message}",
                            notes=[(problem.span, "declared here")])
        if ref.host and ref.host not in ("localhost", "127.0.0.1"):
            raise GsqlError(ref.span, "not-supported-yet",
                            f"reading interface {ref.iface} of remote host {ref.host} "
                            "is not supported yet by gsqlc")
        if proto.source_kind is None and not any(f.source == "system" for f in proto.fields.values()):
            raise GsqlError(ref.span, "unknown-source", f"PROTOCOL '{ref.name}' has no fields")
        return Source(alias, ref, "protocol", protocol=proto, iface=ref.iface or "",
                      iface_set=ref.iface_set), None


def load_queryset(query_files: Sequence[str], schema_files: Sequence[str] = (),
                  library_paths: Sequence[str] = (), ifaces=None,
                  lfta_table_size: Optional[int] = None,
                  lfta_table_ways: Optional[int] = None) -> QuerySet:
    schema = load_schema(schema_files)
    libs = [Path(p) for p in library_paths]
    libs += [Path(p) for p in os.environ.get("GSQLC_LIBRARY_PATH", "").split(os.pathsep) if p]
    for f in query_files:
        d = Path(f).parent
        if d not in libs:
            libs.append(d)
    r = _Resolver(schema, libs)
    for f in query_files:
        r.add_file(f)
    if not r.entries:
        raise GsqlError(None, "no-queries", "the query files hold no query")

    analyzed: dict[str, AnalyzedQuery] = {}
    order: list[AnalyzedQuery] = []
    visiting: list[str] = []

    def visit(name: str, from_span: Optional[ast.Span] = None) -> AnalyzedQuery:
        if name in analyzed:
            return analyzed[name]
        e = r.entries[name]
        if name in visiting:
            cycle = " -> ".join(visiting[visiting.index(name):] + [name])
            raise GsqlError(from_span or e.query.span, "cyclic-query",
                            f"queries read each other in a cycle: {cycle}")
        visiting.append(name)
        streams: dict[str, StreamDef] = {}
        sources = []
        for ref in e.query.from_:
            src, producer = r.source(ref, streams)
            if producer is not None:
                src.stream = visit(producer, ref.span).output
            sources.append(src)
        if not sources:
            raise GsqlError(e.query.span, "syntax", "a query needs a FROM clause")
        aq = analyze_query(e.query, name, e.file, sources)
        visiting.pop()
        analyzed[name] = aq
        order.append(aq)
        return aq

    for name in list(r.entries):
        visit(name)
    plan = make_plan(order, ifaces, lfta_table_size, lfta_table_ways)
    return QuerySet(schema, order, plan, list(query_files))
