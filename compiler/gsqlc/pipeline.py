"""The compile pipeline, the only place where the stages are chained:

    query files ──parse, resolve, analyze──► AnalyzedSet      (semantics.resolve)
                ──plan──────────────────────► Plan             (planner.plan)
                ──generate──────────────────► GeneratedSet     (backend.codegen)
                ──build─────────────────────► BuildResult      (backend.build)

`plan_queries` stops after planning (what `gsqlc explain` needs);
`compile_queries` goes on to the built library and returns one `Compiled`
(`compile_planned` does the second half for a QuerySet at hand).
The CLI, the Python API and Spark call these two and nothing in between.

    compiled = compile_queries(["flows.gsql"], CompileOptions(schema=("schema.txt",)))
    compiled.library            # the query set's shared library
"""
from __future__ import annotations

import os
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Sequence

from .record import record

# The stages are imported where they are used: a face that finds its query
# set built (a cached run) loads neither the front end nor code generation.
if TYPE_CHECKING:
    from .backend.build import BuildResult
    from .backend.codegen import GeneratedSet
    from .planner.plan import Plan
    from .planner.tunables import PlanDefaults
    from .runtime.plan_summary import PlanSummary
    from .semantics.model import AnalyzedQuery
    from .semantics.schema import Schema


@record(frozen=True)
class CompileOptions:
    """What a compilation depends on besides the query files."""
    schema: tuple[str, ...] = ()           # schema files (default: the packet schema)
    library_paths: tuple[str, ...] = ()    # directories of query libraries (FROM LIB/q)
    lfta_table_size: Optional[int] = None  # default LFTA table slots (a DEFINE wins)
    lfta_table_ways: Optional[int] = None  # default LFTA table associativity (a DEFINE wins)
    # epochs an LFTA / HFTA aggregation keeps open (None: Tigon's 2 and 3;
    # DEFINE max_lfta_disorder / max_hfta_disorder win)
    max_lfta_disorder: Optional[int] = None
    max_hfta_disorder: Optional[int] = None
    flush: Optional[str] = None            # slow | lazy | immediate (DEFINE flush wins)
    sanitize: bool = False                 # build with ASan and UBSan
    werror: Optional[bool] = None          # warnings as errors (None: GSQLC_WERROR decides)
    # (set, member) pairs the stand-alone runner gsqlc-run binds by default
    # (`gsqlc compile --interfaces`); the library does not depend on them
    runner_sets: tuple[tuple[str, str], ...] = ()
    # function-definition files (Tigon's external_fcns.def syntax) and the
    # C/C++ sources of the functions and aggregates they declare
    functions: tuple[str, ...] = ()
    udf: tuple[str, ...] = ()
    # query and schema files given as text: (name, text), each name (such as
    # <query>) standing among the files for that text
    texts: tuple[tuple[str, str], ...] = ()
    # run the aggregating LFTAs of live interfaces in the kernel's XDP hook
    # where they can (planner/kernel_lfta.py)
    lfta_in_kernel: bool = False


@record(frozen=True)
class QuerySet:
    """Analyzed and planned queries."""
    schema: Schema
    queries: tuple[AnalyzedQuery, ...]
    plan: Plan
    files: tuple[str, ...]

    def query(self, name: str) -> AnalyzedQuery:
        for q in self.queries:
            if q.name == name:
                return q
        raise KeyError(name)

    @cached_property
    def summary(self) -> "PlanSummary":
        """What a run needs of the plan (runtime.plan_summary)."""
        from .runtime.plan_summary import summarize
        return summarize(self.plan)

    def leaves(self) -> list[str]:
        """Queries whose output no other query reads."""
        from .semantics.resolve import leaves
        return leaves(self.queries)

    def interfaces(self) -> list[str]:
        """Interface (or interface set) names the LFTAs read ("default" for
        a bare FROM PROTOCOL)."""
        from .planner.nodes import LftaNode
        out: list[str] = []
        for n in self.plan.nodes:
            if isinstance(n, LftaNode) and (n.iface or "default") not in out:
                out.append(n.iface or "default")
        return out


@record(frozen=True)
class Compiled:
    """A query set carried through every stage: its plan, generated code and
    built library."""
    queryset: QuerySet
    generated: GeneratedSet
    built: BuildResult

    @property
    def library(self) -> Path:
        return self.built.library


def check_plan_options(max_lfta_disorder: object = None, max_hfta_disorder: object = None,
                       flush: object = None) -> None:
    """Raise UsageError on a bad disorder or flush option (None: default)."""
    from .errors import SettingError, UsageError
    from .planner.policies import FLUSH_POLICIES, MAX_DISORDER
    for name, v in (("max_lfta_disorder", max_lfta_disorder),
                    ("max_hfta_disorder", max_hfta_disorder)):
        if v is not None and (not isinstance(v, int) or isinstance(v, bool)
                              or not 1 <= v <= MAX_DISORDER):
            raise SettingError(name, "--" + name.replace("_", "-"),
                               f" must be an integer from 1 (in order) to {MAX_DISORDER}, "
                               f"got {v!r}")
    if flush is not None and flush not in FLUSH_POLICIES:
        raise UsageError(f"flush must be one of {', '.join(FLUSH_POLICIES)}, got {flush!r}")


def plan_defaults(options: CompileOptions) -> PlanDefaults:
    """The planner's defaults from the compile options (None: the planner's own)."""
    from .planner.tunables import PlanDefaults
    given = {k: getattr(options, k) for k in ("lfta_table_size", "lfta_table_ways",
                                              "max_lfta_disorder", "max_hfta_disorder", "flush")
             if getattr(options, k) is not None}
    return PlanDefaults(**given, lfta_in_kernel=options.lfta_in_kernel)


def plan_queries(files: Sequence[str], options: CompileOptions = CompileOptions()) -> QuerySet:
    """Parse, resolve, analyze and plan `files`; raises QueryError.  The
    plan does not depend on run-time bindings (interface sets included)."""
    from .planner.plan import make_plan
    from .semantics.resolve import resolve_files
    from .semantics.user_functions import load_catalog
    aset = resolve_files(files, options.schema, options.library_paths,
                         load_catalog(options.functions), dict(options.texts))
    plan = make_plan(list(aset.queries), plan_defaults(options))
    return QuerySet(aset.schema, aset.queries, plan, aset.files)


def compile_queries(files: Sequence[str], options: CompileOptions = CompileOptions(),
                    out_dir: "Optional[os.PathLike[str]]" = None) -> Compiled:
    """Every stage up to the built library.  Without out_dir the build is
    cached by content (the same queries build once); with it the sources and
    the build go there."""
    return compile_planned(plan_queries(files, options), options, out_dir)


def compile_planned(qs: QuerySet, options: CompileOptions = CompileOptions(),
                    out_dir: "Optional[os.PathLike[str]]" = None) -> Compiled:
    """Generate and build an already planned query set (a face that checks
    the plan against the user's bindings first builds only when they fit)."""
    from .backend.build import build
    from .backend.codegen import generate
    from .backend.udf_build import located_link_error
    from .errors import BuildError
    gen = generate(qs.plan, options.runner_sets, options.udf)
    # absolute: the C compiler runs in the build directory, not the caller's
    try:
        built = build(gen, Path(out_dir).resolve() if out_dir is not None else None,
                      sanitize=options.sanitize, werror=options.werror)
    except BuildError as e:
        located = located_link_error(gen, e)
        if located is not None:
            raise located from None
        raise
    return Compiled(qs, gen, built)
