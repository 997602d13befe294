"""Code generation: Plan -> GeneratedSet (source files: C LFTAs, C++ HFTA
functors, the query set's tables, a CMake project).

generate(plan) renders one file per plan node, by the node's level and kind
(lfta_gen.py, lfta_aggregate_gen.py, hfta_gen.py, hfta_join_gen.py), then the
set's own files (queryset_gen.py) and the user's sources (user_sources.py).
What the generators share is in gen_shared.py.

Python decides everything here and hands the jinja2 templates in templates/
plain data (declarations, statements, expressions as strings); templates only
lay the code out.  Algorithms the generated code runs are C headers
(runtime_c/lfta/, hfta_templates/), which the generated code calls.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from ..planner.nodes import (
    HftaAggregate,
    HftaFilterJoin,
    HftaJoin,
    HftaMerge,
    HftaSelect,
    LftaAggregate,
    LftaNode,
    LftaSelect,
)
from ..planner.plan import Plan
from .gen_shared import GenContext, GeneratedSet
from .hfta_gen import render_hfta_aggregate, render_hfta_merge, render_hfta_select
from .hfta_join_gen import render_hfta_filter_join, render_hfta_join
from .lfta_aggregate_gen import render_lfta_aggregate
from .lfta_gen import render_lfta_select
from .queryset_gen import render_cmake, render_queryset, render_runner_defaults, render_streams_h
from .user_sources import add_library_sources, add_user_sources
from .xdp_gen import object_symbol, render_xdp_program

__all__ = ["GeneratedSet", "generate"]

# The renderer of each kind of node.
_RENDERERS: dict[type, Callable[[GenContext, Any], str]] = {
    LftaSelect: render_lfta_select, LftaAggregate: render_lfta_aggregate,
    HftaSelect: render_hfta_select, HftaAggregate: render_hfta_aggregate,
    HftaMerge: render_hfta_merge, HftaJoin: render_hfta_join,
    HftaFilterJoin: render_hfta_filter_join,
}


def generate(plan: Plan, runner_sets: Sequence[tuple[str, str]] = (),
             udf: Sequence[str] = ()) -> GeneratedSet:
    """The generated files of `plan`.  runner_sets: (set, member) pairs the
    stand-alone runner binds by default (`gsqlc compile --interfaces`); the
    library itself does not depend on them.  udf: the user's function
    sources, built into the library (backend/udf_build.py)."""
    gen = GenContext(plan)
    files: dict[str, str] = {}
    gs = GeneratedSet(files)
    for i, n in enumerate(plan.nodes):
        # the node's number keeps file names apart: the identifier is
        # cut short so that a long query name stays a valid file name
        ident = gen.idents[n.name][:64]
        text = _RENDERERS[type(n)](gen, n)
        if isinstance(n, LftaNode):
            fname = f"lfta_{i:02d}_{ident}.c"
            gs.lftas.append(fname)
        else:   # a merge is C naming the runtime's operator (gsq_merge.h)
            fname = f"hfta_{i:02d}_{ident}.{'c' if isinstance(n, HftaMerge) else 'cpp'}"
            gs.hftas.append(fname)
        files[fname] = text
    # after the units: they collected the user functions they call
    files["streams.h"] = render_streams_h(gen)
    if gen.user:
        files["gsqlc_udf.h"] = gen.user.header()
        gs.user_symbols = gen.user.symbols()
    for fname, text in gen.prefilters.files(gen).items():
        files[fname] = text
        if fname.endswith(".c"):
            gs.lftas.append(fname)
    for name, k in gen.kernel_lftas.items():
        fn = "lfta_" + gen.idents[name]
        files[f"{fn}.bpf.c"] = render_xdp_program(gen, k, fn)
        gs.xdp.append((fn, object_symbol(fn)))
    files["queryset.c"] = render_queryset(gen, bool(gs.xdp))
    files["runner_defaults.c"] = render_runner_defaults(gen, runner_sets)
    add_user_sources(gs, udf)
    add_library_sources(gs, gen.user)
    files["CMakeLists.txt"] = render_cmake(gen, gs)
    return gs
