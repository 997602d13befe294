"""The query set's own files: the tuple structs of every stream
(streams.h), the table of streams, LFTAs and HFTAs the runtime loads
(queryset.c), what the stand-alone runner decides by default
(runner_defaults.c: interface sets, outputs) and the CMake project building
the library."""
from __future__ import annotations

from typing import Sequence

from ..planner.nodes import LftaAggregate, LftaNode, PlanNode
from ..planner.params import fixed_params
from ..semantics.bound import AccumRef
from ..semantics.model import StreamDef
from ..semantics.resolve import leaves
from ..semantics.types import Type
from .cescape import c_comment, c_string
from .cexpr import field_member
from .gen_shared import MERGE_TYPES, GenContext, GeneratedSet, TemplateData, struct_member_type
from .kernel_filter_gen import kernel_filter_data


def _stream_data(gen: GenContext, s: StreamDef) -> TemplateData:
    return {
        "name": s.name, "type": gen.tup(s.name),
        "comment": c_comment(s.name),
        "members": [f"{struct_member_type(c.type)} {field_member(c.name)};"
                    + (f"  /* {c.temporal} */" if c.temporal.is_temporal else "")
                    for c in s.columns],
    }


def render_streams_h(gen: GenContext) -> str:
    return gen.render("streams.h.j2", {
        "streams": [_stream_data(gen, n.output) for n in gen.plan.nodes],
        "user_code": bool(gen.user)})


def rows_col(n: PlanNode) -> int:
    """gsq_stream_desc.rows_col of n's output: how many input rows a
    tuple stands for.  An LFTA sub-aggregate's partials hold the rows of
    their count(*) accumulator (a sum of the constant 1), its output
    column's index; without one the rows are unknown (-2).  Every other
    stream's tuple is one row (-1; an HFTA's group counts as one)."""
    if not isinstance(n, LftaAggregate):
        return -1
    names = [c.name for c in n.output.columns]
    for name, e in n.select:
        if isinstance(e, AccumRef) and name in names:
            a = n.accums[e.index]
            if a.op == "sum" and a.expr is None and a.udaf is None and a.type in (
                    Type.USHORT, Type.UINT, Type.INT, Type.ULLONG, Type.LLONG):
                return names.index(name)
    return -2


def render_queryset(gen: GenContext, xdp: bool = False) -> str:
    streams: list[TemplateData] = []
    lftas: list[str] = []
    hftas: list[str] = []
    for n in gen.plan.nodes:
        rc = rows_col(n)
        streams.append({
            "ident": gen.idents[n.name], "name": c_string(n.name), "type": gen.tup(n.name),
            "cols": [{"name": c_string(c.name), "type": c.type.code,
                      "member": field_member(c.name)} for c in n.output.columns],
            "rows_col": {-1: "GSQ_ROWS_ONE", -2: "GSQ_ROWS_UNKNOWN"}.get(rc, str(rc)),
        })
        lfta = isinstance(n, LftaNode)
        (lftas if lfta else hftas).append(
            ("lfta_" if lfta else "hfta_") + gen.idents[n.name] + "_def")
    # each parameter a node reads, with its type: a value given while the
    # run goes on is checked against them (gsqlc_change_param)
    params = sorted({(name, t.code) for n in gen.plan.nodes
                     for name, t in n.params.items()})
    fixed: dict[str, str] = {}
    for n in gen.plan.nodes:
        for name, why in fixed_params(gen.plan, n).items():
            fixed.setdefault(name, why)
    return gen.render("queryset.c.j2", {"streams": streams, "lftas": lftas, "hftas": hftas,
                                        "params": [{"name": c_string(nm), "type": code,
                                                    "fixed": c_string(fixed[nm])
                                                    if nm in fixed else "NULL"}
                                                   for nm, code in params],
                                        "kernel_filters": kernel_filter_data(gen.plan),
                                        "xdp": xdp})


def render_runner_defaults(gen: GenContext, runner_sets: Sequence[tuple[str, str]]) -> str:
    """The runner's defaults: the --interfaces file's sets, the queries no
    other reads (its outputs without --output), and whether a query reads
    the default interface (as `gsqlc run` decides them: runtime.session)."""
    return gen.render("runner_defaults.c.j2", {
        "sets": [(c_string(s), c_string(m)) for s, m in runner_sets],
        "outputs": [c_string(q) for q in leaves(gen.plan.queries)],
        "reads_default": int(any(isinstance(n, LftaNode) and not n.iface
                                 for n in gen.plan.nodes))})


def render_cmake(gen: GenContext, gs: GeneratedSet) -> str:
    return gen.render("CMakeLists.txt.j2", {"lftas": gs.lftas, "hftas": gs.hftas,
                                            "merge_types": MERGE_TYPES, "udfs": gs.udfs,
                                            "xdp": gs.xdp})
