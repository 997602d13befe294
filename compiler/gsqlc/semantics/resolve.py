"""Resolution: query and schema files -> analyzed queries.

Takes the paths of query files, schema files and query-library directories;
parses them (frontend), resolves every FROM item (a PROTOCOL of the schema,
another query's output, a library query `LIB/q`), analyzes each query in
dependency order (semantics.analyze) and returns an `AnalyzedSet`: the schema
and the analyzed queries, producers before their readers.

    aset = resolve_files(["flows.gsql"], ["schema.txt"])
"""
from __future__ import annotations

import difflib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional, Sequence

from ..errors import QueryError
from ..frontend import ast
from ..frontend.parser import parse_query_file, parse_schema_file
from ..resources import packet_schema_path
from . import catalog, grouping_sets, join_aggregate
from .analyze import analyze_query
from .model import AnalyzedQuery, Source, StreamDef
from .schema import Schema, build_schema, protocol_problem, stream_source


@dataclass
class _Entry:
    query: ast.Query
    name: str
    file: str
    # a GROUP BY with CUBE/ROLLUP/GROUPING_SETS: its pattern queries' names;
    # the entry's query becomes their MERGE once they are analysed
    patterns: Optional[list[str]] = None


@dataclass(frozen=True)
class AnalyzedSet:
    """The analyzed queries of a query set, producers before readers."""
    schema: Schema
    queries: tuple[AnalyzedQuery, ...]
    files: tuple[str, ...] = ()


def leaves(queries: Sequence[AnalyzedQuery]) -> list[str]:
    """The queries whose output no other query reads."""
    read = {s.stream.name for q in queries for s in q.sources if s.stream}
    return [q.name for q in queries if q.name not in read]



def _read(path: str, texts: Mapping[str, str]) -> str:
    """A query or schema file's text; a name of `texts` (text given as a
    string, named like <query>) is that text."""
    if path in texts:
        return texts[path]
    try:
        return Path(path).read_text(encoding="utf-8", errors="surrogateescape")
    except FileNotFoundError:
        raise QueryError(None, "no-such-file", f"{path}: no such file") from None
    except IsADirectoryError:
        raise QueryError(None, "no-such-file", f"{path}: is a directory, not a file") from None
    except OSError as e:
        raise QueryError(None, "no-such-file", f"{path}: {e.strerror}") from None


def load_schema(paths: Sequence[str], texts: Mapping[str, str] = {}) -> Schema:
    if not paths:
        paths = [str(packet_schema_path())]
    files = [parse_schema_file(p, _read(p, texts)) for p in paths]
    return build_schema(files)


def _name_queries(qf: ast.QueryFile) -> list[_Entry]:
    out = []
    # a query without a query_name is named after its file; text given as a
    # string (<query>, <query 2>) names it query, query_2
    stem = Path(qf.path).stem
    if stem.startswith("<") and stem.endswith(">"):
        stem = "_".join(stem[1:-1].split())
    for i, q in enumerate(qf.queries):
        name = q.name
        if not name:
            name = stem if len(qf.queries) == 1 else f"{stem}_{i + 1}"
        out.append(_Entry(q, name, qf.path))
    return out


def _expand_grouping_sets(entries: list[_Entry]) -> list[_Entry]:
    """The entries with each query grouping by CUBE/ROLLUP/GROUPING_SETS
    replaced by its pattern queries and the entry that merges them
    (semantics/grouping_sets.py)."""
    out = []
    for e in entries:
        if not grouping_sets.has_grouping_sets(e.query):
            out.append(e)
            continue
        pats = grouping_sets.expand(e.query, e.name)
        out += [_Entry(q, n, e.file) for n, q in pats]
        out.append(_Entry(e.query, e.name, e.file, patterns=[n for n, _ in pats]))
    return out


class _Resolver:
    def __init__(self, schema: Schema, library_paths: list[Path],
                 texts: Mapping[str, str] = {}):
        self.schema = schema
        self.library_paths = library_paths
        self.texts = texts
        self.entries: dict[str, _Entry] = {}
        self.loaded_files: set[str] = set()
        self.last_file: Optional[ast.QueryFile] = None

    def add_file(self, path: str) -> None:
        rp = path if path in self.texts else str(Path(path).resolve())
        if rp in self.loaded_files:
            return
        self.loaded_files.add(rp)
        qf = parse_query_file(path, _read(path, self.texts))
        self.last_file = qf
        for e in _expand_grouping_sets(_name_queries(qf)):
            if e.name in self.entries:
                prev = self.entries[e.name]
                raise QueryError(e.query.span, "duplicate-query",
                                f"query '{e.name}' is defined twice",
                                notes=[(prev.query.span, "first defined here")])
            if self.schema.get(e.name) is not None:
                raise QueryError(e.query.span, "duplicate-query",
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
        raise QueryError(ref.span, "unknown-source",
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
        if proto is not None and proto.kind == "stream":
            # a schema STREAM: its tuples are read from the interface of its
            # name (or the one given), fields in declaration order
            if not proto.fields:
                raise QueryError(ref.span, "unknown-source", f"STREAM '{ref.name}' has no fields")
            return Source(alias, ref, "protocol", protocol=stream_source(proto),
                          iface=ref.iface or ref.name,
                          iface_set=ref.iface_set), None
        if proto is None:
            names = list(self.entries) + list(self.schema.protocols)
            close = difflib.get_close_matches(ref.name, names, n=3)
            hint = ("; did you mean " + " or ".join(f"'{c}'" for c in close) + "?") if close else ""
            what = "PROTOCOL" if ref.kind == "protocol" else "query or PROTOCOL"
            raise QueryError(ref.span, "unknown-source", f"no {what} named '{ref.name}'{hint}")
        problem = protocol_problem(proto)
        if problem is not None:
            raise QueryError(ref.span, problem.rule,
                            f"PROTOCOL '{proto.name}' cannot be read: {problem.message}",
                            notes=[(problem.span, "declared here")])
        if ref.host and ref.host not in ("localhost", "127.0.0.1"):
            raise QueryError(ref.span, "not-supported-yet",
                            f"reading interface {ref.iface} of remote host {ref.host} "
                            "is not supported yet by gsqlc")
        if proto.source_kind is None and not any(f.source == "system" for f in proto.fields.values()):
            raise QueryError(ref.span, "unknown-source", f"PROTOCOL '{ref.name}' has no fields")
        return Source(alias, ref, "protocol", protocol=proto, iface=ref.iface or "",
                      iface_set=ref.iface_set), None


def library_roots(query_files: Sequence[str], library_paths: Sequence[str] = ()) -> list[Path]:
    """The directories a `FROM LIB/q` looks in, in order: the given library
    paths, those of GSQLC_LIBRARY_PATH, then the query files' own."""
    libs = [Path(p) for p in library_paths]
    libs += [Path(p) for p in os.environ.get("GSQLC_LIBRARY_PATH", "").split(os.pathsep) if p]
    for f in query_files:
        d = Path(f).parent
        if d not in libs:
            libs.append(d)
    return libs


def libraries_read(queries: Sequence[AnalyzedQuery]) -> list[str]:
    """The query libraries (LIB of `FROM LIB/q`) the queries read."""
    out: list[str] = []
    for q in queries:
        for s in q.sources:
            lib = s.ref.library
            if lib and lib not in out:
                out.append(lib)
    return out


def resolve_files(query_files: Sequence[str], schema_files: Sequence[str] = (),
                  library_paths: Sequence[str] = (),
                  functions: catalog.Catalog = catalog.BUILTIN,
                  texts: Mapping[str, str] = {}) -> AnalyzedSet:
    """texts: the files given as text (a name of query_files or
    schema_files -> its text)."""
    schema = load_schema(schema_files, texts)
    r = _Resolver(schema, library_roots([f for f in query_files if f not in texts],
                                        library_paths), texts)
    for f in query_files:
        r.add_file(f)
    if not r.entries:
        # located where a query was expected: the end of the last file
        end = r.last_file.span if r.last_file is not None else None
        raise QueryError(ast.Span(end.file, end.end_line, end.end_column) if end else None,
                         "no-queries", "the query files hold no query (expected SELECT or "
                         "MERGE)")

    analyzed: dict[str, AnalyzedQuery] = {}
    order: list[AnalyzedQuery] = []
    visiting: list[str] = []

    def register(join_name: str, join_q: ast.Query, name: str, e: _Entry) -> None:
        """A join gsqlc made of query `name` (semantics/join_aggregate.py)."""
        if join_name in r.entries:
            raise QueryError(e.query.span, "duplicate-query",
                             f"query '{join_name}' is defined twice (gsqlc names a join "
                             f"of query '{name}' so)")
        r.entries[join_name] = _Entry(join_q, join_name, e.file)

    def resolve_sources(query: ast.Query) -> list[Source]:
        streams: dict[str, StreamDef] = {}
        sources = []
        for ref in query.from_:
            src, producer = r.source(ref, streams)
            if producer is not None:
                src.stream = visit(producer, ref.span).output
            sources.append(src)
        if not sources:
            raise QueryError(query.span, "syntax", "a query needs a FROM clause")
        return sources

    def visit(name: str, from_span: Optional[ast.Span] = None) -> AnalyzedQuery:
        if name in analyzed:
            return analyzed[name]
        e = r.entries[name]
        if name in visiting:
            cycle = " -> ".join(visiting[visiting.index(name):] + [name])
            raise QueryError(from_span or e.query.span, "cyclic-query",
                            f"queries read each other in a cycle: {cycle}")
        visiting.append(name)
        if e.patterns is not None:
            outs = [visit(p, e.query.span).output for p in e.patterns]
            temporal = next((c.name for c in outs[0].columns if c.temporal.is_temporal), None)
            e = _Entry(grouping_sets.merge_query(e.query, name, e.patterns, temporal), name,
                       e.file)
        sources = resolve_sources(e.query)
        while join_aggregate.is_multi_join(e.query):
            join_name, join_q, rest = join_aggregate.split_first_join(e.query, name, sources)
            register(join_name, join_q, name, e)
            e = _Entry(rest, name, e.file)
            sources = resolve_sources(e.query)
        if join_aggregate.is_join_aggregate(e.query, functions):
            err = join_aggregate.check_no_join_kind_options(e.query)
            if err is not None:
                raise err
            join_name, join_q, agg_q = join_aggregate.split(e.query, name, sources)
            register(join_name, join_q, name, e)
            e = _Entry(agg_q, name, e.file)
            sources = resolve_sources(e.query)
        aq = analyze_query(e.query, name, e.file, sources, functions)
        visiting.pop()
        analyzed[name] = aq
        order.append(aq)
        return aq

    for name in list(r.entries):
        visit(name)
    return AnalyzedSet(schema, tuple(order), tuple(query_files))
