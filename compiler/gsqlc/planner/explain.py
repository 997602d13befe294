"""`gsqlc explain`: the plan, the LFTA/HFTA split and each column's temporal
property, as text or Graphviz DOT."""
from __future__ import annotations

from ..semantics.resolve import leaves
from .kernel_filter import explain_lines as kernel_filter_explain_lines
from .kernel_lfta import explain_lines as kernel_lfta_explain_lines
from .nodes import (
    FILTERING,
    GROUPING,
    LFTA_TABLE_GROW_MIB,
    PROJECTING,
    HftaAggregate,
    HftaFilterJoin,
    HftaJoin,
    HftaMerge,
    HftaSelect,
    LftaAggregate,
    LftaNode,
    LftaSelect,
    PlanNode,
    describe_expr,
)
from .params import explain_line as params_explain_line
from .plan import Plan
from .prefilter import explain_lines as prefilter_explain_lines


def _reads(n: PlanNode) -> str:
    if isinstance(n, LftaNode):
        iface = n.iface or "default"
        return f"interface {iface}, PROTOCOL {n.protocol.name}"
    return "stream " + ", ".join(n.inputs)


def _operator(n: PlanNode) -> str:
    if isinstance(n, HftaFilterJoin):
        return "C++ HFTA, gsq::filter_join_op (windowed semi-join, FILTER_JOIN)"
    if isinstance(n, HftaJoin):
        return f"C++ HFTA, gsq::join_op ({n.join.kind} join)"
    if isinstance(n, HftaMerge):
        return "C++ HFTA, gsq::merge_op"
    if isinstance(n, LftaSelect):
        return "C LFTA, selection"
    if isinstance(n, LftaAggregate):
        shape = "direct-mapped" if n.table_ways == 1 else f"{n.table_ways}-way set-associative"
        grows = (f", growing to {LFTA_TABLE_GROW_MIB} MiB while ejected groups come back"
                 if n.table_grows else "")
        return f"C LFTA, {shape} sub-aggregate table of {n.table_size} slots{grows}"
    if isinstance(n, HftaAggregate):
        if n.closing is not None:
            return ("C++ HFTA, gsq::running_op (a running aggregation: its groups carry over "
                    "from epoch to epoch until CLOSING_WHEN holds)")
        if n.sampling is not None:
            return ("C++ HFTA, gsq::sampling_op (a sampling query: groups in supergroups, "
                    "cleaned as CLEANING_WHEN/CLEANING_BY say)")
        return f"C++ HFTA, gsq::groupby_op ({n.flush} flush)"
    assert isinstance(n, HftaSelect), type(n).__name__
    return "C++ HFTA, gsq::selection_op"


def _join_lines(n: HftaJoin) -> list[str]:
    j = n.join
    lines = []
    if isinstance(n, HftaFilterJoin):
        st = describe_expr(j.time[1], n)
        lines.append(f"    FILTER_JOIN({describe_expr(j.time[0], n)}, {j.window}): "
                     f"passes a tuple of {n.query.sources[1].alias} when a tuple of "
                     f"{n.query.sources[0].alias} with equal keys had "
                     f"{describe_expr(j.time[0], n)} in [{st} - {j.window - 1}, {st}]")
    else:
        lines.append(f"    JOIN     {describe_expr(j.time[1], n)} in "
                     f"[{describe_expr(j.time[0], n)} - {j.band_lo:g}, "
                     f"{describe_expr(j.time[0], n)} + {j.band_hi:g}]")
    for le, re_ in j.keys:
        lines.append(f"             AND {describe_expr(le, n)} = {describe_expr(re_, n)}")
    for i in (0, 1):
        for c in j.filters[i]:
            lines.append(f"    FILTER   {n.inputs[i]}: {describe_expr(c, n)}")
    return lines


def _set_line(n: LftaNode) -> str:
    """What the LFTA does when its interface is bound to an interface set at
    run time (the plan does not depend on bindings)."""
    iface = n.iface or "default"
    col = n.set_merge_column.name if n.set_merge_column else None
    if col is None:
        return (f"    set:      its output has no temporal column: interface {iface} cannot be "
                "bound to an interface set of several members")
    how = ("in temporal order" if n.set_merge_ordered else
           "as they come, out of order (its readers are order-agnostic), forwarding the least "
           "of the members' progress")
    return (f"    set:      bound to an interface set at run time, it runs once per member "
            f"({n.name}@MEMBER); a merge on {col} merges the LFTAs of interface set "
            f"[{iface}] {how}")


def _epochs(k: int) -> str:
    return "1 epoch open: in order" if k == 1 else \
        f"up to {k} epochs open: out of order, a tuple up to {k - 1} epoch(s) behind counts"


def _order_line(n: PlanNode) -> str:
    """How the operator treats the order of its input (Li et al. 2008)."""
    if isinstance(n, LftaAggregate):
        return (f"    order:    {_epochs(n.disorder)} (older ones pass on to the HFTA); "
                f"{n.flush} flush")
    if isinstance(n, HftaAggregate):
        hb = ("its input's heartbeats close older epochs" if n.strict_heartbeats else
              "heartbeats report progress")
        line = f"    order:    {_epochs(n.disorder)}; {hb}"
        if n.joint_left:
            names = [n.group_by[i][0] for i in n.joint_left + n.joint_right]
            line += ("; joint punctuation: a group below it on both "
                     + " and ".join(names) + " leaves before its epoch closes"
                     + (" (from the oldest epoch, in order)" if n.ordered_output else
                        " (from any open epoch: its readers are order-agnostic)"))
        return line
    if isinstance(n, HftaMerge):
        if n.ordered:
            return "    order:    in order: releases tuples in merge-field order (buffers)"
        return ("    order:    out of order: its readers are order-agnostic, tuples pass straight "
                "through and the heartbeat is the least of the inputs' progress")
    if isinstance(n, HftaJoin):
        joint = ("; it emits joint punctuation on both inputs' times together (Li et al. 2008, "
                 "section 7)" if n.joint_punctuation else "")
        if isinstance(n, HftaFilterJoin) or all(n.inputs_ordered):
            return "    order:    in order: each input in order of its temporal column" + joint
        late = [i for i, o in zip(n.inputs, n.inputs_ordered) if not o]
        return (f"    order:    out of order: {' and '.join(late)} "
                f"{'comes' if len(late) == 1 else 'come'} out of order; the join purges by its "
                "inputs' heartbeats, and its output is in order only up to its heartbeats" + joint)
    return "    order:    keeps its input's order"


def _node_lines(plan: Plan, n: PlanNode) -> list[str]:
    lines = [f"[{n.level.upper()}] {n.name}    reads {_reads(n)}",
             f"    operator: {_operator(n)}",
             f"    split:    {n.note}",
             _order_line(n)]
    params = params_explain_line(plan, n)
    if params is not None:
        lines.append(params)
    if isinstance(n, LftaNode):
        lines.append(_set_line(n))
    if isinstance(n, FILTERING) and n.where:
        lines.append("    WHERE    " + "\n             AND ".join(describe_expr(c, n) for c in n.where))
    if isinstance(n, HftaJoin):
        lines += _join_lines(n)
    if isinstance(n, HftaMerge):
        lines.append(f"    MERGE    on {n.merge.field}"
                     + (f" SLACK {n.merge.slack:g}" if n.merge.slack else ""))
    if isinstance(n, GROUPING) and n.group_by:
        gbs = []
        for name, e in n.group_by:
            tmp = f"  [{e.info.temporal}]" if e.info.temporal.is_temporal else ""
            gbs.append(f"{name} := {describe_expr(e, n)}{tmp}")
        lines.append("    GROUP BY " + "\n             ".join(gbs))
    if isinstance(n, HftaAggregate) and n.accums:
        lines.append("    AGGREGATES " + ", ".join(a.text for a in n.aggs))
    if isinstance(n, HftaAggregate) and n.having is not None:
        lines.append("    HAVING   " + describe_expr(n.having, n))
    if isinstance(n, HftaAggregate) and n.closing is not None:
        lines.append("    CLOSING_WHEN " + describe_expr(n.closing, n))
    if isinstance(n, HftaAggregate) and n.sampling is not None:
        sp = n.sampling
        lines.append("    SUPERGROUP " + (", ".join(n.group_by[i][0] for i in sp.supergroup)
                                         or "ALL (one per window)"))
        if sp.superaggs:
            lines.append("    SUPER-AGGREGATES " + ", ".join(
                n.query.sampling.superaggs[j].text for j in range(len(sp.superaggs))
                if n.query.sampling is not None))
        if sp.cleaning_when is not None:
            lines.append("    CLEANING_WHEN " + describe_expr(sp.cleaning_when, n))
        if sp.cleaning_by is not None:
            lines.append("    CLEANING_BY " + describe_expr(sp.cleaning_by, n))
    cols = []
    select = n.select if isinstance(n, PROJECTING) else ()
    exprs = [describe_expr(e, n) for _, e in select] if select else \
        [f"input.{c.name}" for c in n.output.columns]
    for col, text in zip(n.output.columns, exprs):
        tmp = str(col.temporal) if col.temporal.is_temporal else "not temporal"
        cols.append(f"{col.name} {col.type} [{tmp}] := {text}")
    lines.append("    OUTPUT   " + "\n             ".join(cols))
    return lines


def explain_text(plan: Plan) -> str:
    out = []
    lftas = sum(1 for n in plan.nodes if isinstance(n, LftaNode))
    hftas = len(plan.nodes) - lftas
    out.append(f"query set: {len(plan.queries)} queries -> {lftas} LFTA(s), {hftas} HFTA(s)")
    for q in plan.queries:
        out.append(f"query {q.name} ({q.file})")
        for c in q.output.columns:
            tmp = str(c.temporal) if c.temporal.is_temporal else "not temporal"
            out.append(f"    {c.name}: {c.type}, {tmp}")
    out.append("")
    out.append("plan (producers first):")
    for n in plan.nodes:
        out.extend(_node_lines(plan, n))
        out.append("")
    out.extend(kernel_filter_explain_lines(plan))
    out.extend(kernel_lfta_explain_lines(plan))
    out.extend(prefilter_explain_lines(plan))
    out.append("outputs: " + ", ".join(leaves(plan.queries)))
    return "\n".join(out).rstrip() + "\n"


def _dot_escape(s: str) -> str:
    out = []
    for ch in s:
        if ch in '"\\{}<>|':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\l")
        elif ord(ch) < 0x20:
            out.append(" ")
        else:
            out.append(ch)
    return "".join(out)


def explain_dot(plan: Plan) -> str:
    out = ["digraph gsqlc_plan {", "  rankdir=BT;",
           '  node [shape=box, fontname="monospace", fontsize=10];']
    ids = {n.name: f"n{i}" for i, n in enumerate(plan.nodes)}
    ifaces: dict[str, str] = {}
    for n in plan.nodes:
        if isinstance(n, LftaNode):
            iface = n.iface or "default"
            if iface not in ifaces:
                ifaces[iface] = f"i{len(ifaces)}"
                out.append(f'  {ifaces[iface]} [shape=ellipse, label="interface {_dot_escape(iface)}"];')
    for n in plan.nodes:
        label = "\n".join(line.strip() for line in _node_lines(plan, n)) + "\n"
        style = 'style=filled, fillcolor="#dbe9f6"' if isinstance(n, LftaNode) else \
            'style=filled, fillcolor="#f6e7d2"'
        out.append(f'  {ids[n.name]} [{style}, label="{_dot_escape(label)}"];')
    for n in plan.nodes:
        if isinstance(n, LftaNode):
            out.append(f'  {ifaces[n.iface or "default"]} -> {ids[n.name]} '
                       f'[label="{_dot_escape(n.protocol.name)}"];')
        for s in n.inputs:
            out.append(f"  {ids[s]} -> {ids[n.name]};")
    for name in leaves(plan.queries):
        out.append(f'  out_{ids[name]} [shape=plaintext, label="output {_dot_escape(name)}"];')
        out.append(f"  {ids[name]} -> out_{ids[name]};")
    out.append("}")
    return "\n".join(out) + "\n"
