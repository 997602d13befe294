"""The kernel filters as C (planner/kernel_filter.py decides each
program): in queryset.c, one array of gsq_bpf_insn per interface that has
a program, and the table gsq_queryset_def.kernel_filters the AF_PACKET
reader looks its interface up in (gsq_runtime.h, gsq_kernel_filter)."""
from __future__ import annotations

from ..planner.kernel_filter import MIN_SNAPLEN, plan_kernel_filters
from ..planner.plan import Plan
from .cescape import c_comment, c_string
from .gen_shared import TemplateData


def kernel_filter_data(plan: Plan) -> list[TemplateData]:
    """The template data of each kernel filter with a program."""
    out: list[TemplateData] = []
    for kf in plan_kernel_filters(plan):
        if kf.program is None:
            continue
        i = len(out)
        out.append({
            "i": i, "iface": c_string(kf.iface), "n": len(kf.program),
            "min_snaplen": MIN_SNAPLEN,
            "comment": c_comment(f"the kernel filter of interface {kf.iface}: keeps a frame "
                                 "when " + "; or ".join(
                                     f"{p.lfta.name}: PROTOCOL {p.lfta.protocol.name}"
                                     + "".join(f" and {t}" for t in p.texts)
                                     for p in kf.parts)),
            "insns": [f"{{0x{code:02x}, {jt}, {jf}, 0x{k:x}u}}"
                      for code, jt, jf, k in kf.program],
        })
    return out
