"""gsqlc: a code-generating stream query compiler for GSQL (Gigascope / Tigon SQL).

    import gsqlc
    qs = gsqlc.compile(["q.gsql"], schema="schema.txt")
    for batch in qs.run(sources={"csv": "csv:data.csv"}, output="per_src"):
        ...                                   # pyarrow.RecordBatch

Spark: gsqlc.spark.run_query.  Packets as Arrow: gsqlc.read_pcap.

The package's layout follows the compiler's stages (imports flow one way,
from the faces down to the front end):

    frontend/   text -> AST                 (lark grammars, parser, AST with spans)
    semantics/  AST -> analyzed queries     (types, catalog, schema, resolve, analyze)
    planner/    analyzed queries -> plan    (LFTA/HFTA split, explain)
    backend/    plan -> C/C++ -> library    (codegen, C expressions, escaping, build)
    runtime/    driving a built library     (session: a run's one preparation; run, cffi
                                             loader, options, interfaces, Arrow, traces)
    pipeline    the one chain from files to a built library
    api, cli, spark/                        the faces

The names below are loaded on first use, so that importing one stage (say
the parser) does not load code generation, jinja2 or cffi.
"""
from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "compile": ".api", "sql": ".api", "CompiledQuerySet": ".api", "Run": ".api",
    "GsqlcError": ".errors", "QueryError": ".errors", "UsageError": ".errors",
    "RunError": ".errors", "InternalError": ".errors", "ToolchainError": ".errors",
    "read_pcap": ".runtime.packets", "PACKET_TABLE_SCHEMA": ".runtime.packets",
}

__all__ = [*_EXPORTS, "__version__"]


def __getattr__(name: str) -> Any:
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module 'gsqlc' has no attribute {name!r}")
    value = getattr(importlib.import_module(mod, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
