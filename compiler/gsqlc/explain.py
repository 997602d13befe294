"""`gsqlc explain`: the plan, the LFTA/HFTA split and each column's temporal
property, as text or Graphviz DOT."""
from __future__ import annotations

from .driver import QuerySet
from .plan import PlanNode, describe_expr


def _reads(n: PlanNode) -> str:
    if n.level == "lfta":
        iface = n.iface or "<default>"
        return f"interface {iface}, PROTOCOL {n.protocol.name}"  # type: ignore[union-attr]
    return "stream " + ", ".join(n.inputs)


def _operator(n: PlanNode) -> str:
    if n.kind == "join" and n.join.kind == "filter":
        return "C++ HFTA, gsq::filter_join_op (windowed semi-join, FILTER_JOIN)"
    if n.kind == "join":
        return f"C++ HFTA, gsq::join_op ({n.join.kind} join)"
    if n.kind == "merge":
        return "C++ HFTA, gsq::merge_op"
    if n.level == "lfta":
        if n.kind != "aggregate":
            return "C LFTA, selection"
        shape = "direct-mapped" if n.table_ways == 1 else f"{n.table_ways}-way set-associative"
        return f"C LFTA, {shape} sub-aggregate table of {n.table_size} slots"
    return "C++ HFTA, gsq::groupby_op (slow flush)" if n.kind == "aggregate" \
        else "C++ HFTA, gsq::selection_op"


def _node_lines(n: PlanNode) -> list[str]:
    lines = [f"[{n.level.upper()}] {n.name}    reads {_reads(n)}",
             f"    operator: {_operator(n)}",
             f"    split:    {n.note}"]
    if n.where:
        lines.append("    WHERE    " + "\n             AND ".join(describe_expr(c, n) for c in n.where))
    if n.join is not None:
        j = n.join
        side = [n.inputs[0], n.inputs[1]]
        if j.kind == "filter":
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
                lines.append(f"    FILTER   {side[i]}: {describe_expr(c, n)}")
    if n.merge is not None:
        lines.append(f"    MERGE    on {n.merge.field}"
                     + (f" SLACK {n.merge.slack:g}" if n.merge.slack else ""))
    if n.group_by:
        gbs = []
        for name, e in n.group_by:
            tmp = f"  [{e.info.temporal}]" if e.info.temporal.is_temporal else ""
            gbs.append(f"{name} := {describe_expr(e, n)}{tmp}")
        lines.append("    GROUP BY " + "\n             ".join(gbs))
    if n.accums and n.level == "hfta":
        lines.append("    AGGREGATES " + ", ".join(a.text for a in n.aggs))
    if n.having is not None:
        lines.append("    HAVING   " + describe_expr(n.having, n))
    cols = []
    exprs = [describe_expr(e, n) for _, e in n.select] if n.select else \
        [f"input.{c.name}" for c in n.output.columns]
    for col, text in zip(n.output.columns, exprs):
        tmp = str(col.temporal) if col.temporal.is_temporal else "not temporal"
        cols.append(f"{col.name} {col.type} [{tmp}] := {text}")
    lines.append("    OUTPUT   " + "\n             ".join(cols))
    return lines


def explain_text(qs: QuerySet) -> str:
    out = []
    lftas = sum(1 for n in qs.plan.nodes if n.level == "lfta")
    hftas = len(qs.plan.nodes) - lftas
    out.append(f"query set: {len(qs.queries)} queries -> {lftas} LFTA(s), {hftas} HFTA(s)")
    for q in qs.queries:
        out.append(f"query {q.name} ({q.file})")
        for c in q.output.columns:
            tmp = str(c.temporal) if c.temporal.is_temporal else "not temporal"
            out.append(f"    {c.name}: {c.type}, {tmp}")
    out.append("")
    out.append("plan (producers first):")
    for n in qs.plan.nodes:
        out.extend(_node_lines(n))
        out.append("")
    out.append("outputs: " + ", ".join(qs.leaves()))
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


def explain_dot(qs: QuerySet) -> str:
    out = ["digraph gsqlc_plan {", "  rankdir=BT;",
           '  node [shape=box, fontname="monospace", fontsize=10];']
    ids = {n.name: f"n{i}" for i, n in enumerate(qs.plan.nodes)}
    ifaces: dict[str, str] = {}
    for n in qs.plan.nodes:
        if n.level == "lfta":
            iface = n.iface or "<default>"
            if iface not in ifaces:
                ifaces[iface] = f"i{len(ifaces)}"
                out.append(f'  {ifaces[iface]} [shape=ellipse, label="interface {_dot_escape(iface)}"];')
    for n in qs.plan.nodes:
        label = "\n".join(line.strip() for line in _node_lines(n)) + "\n"
        style = 'style=filled, fillcolor="#dbe9f6"' if n.level == "lfta" else \
            'style=filled, fillcolor="#f6e7d2"'
        out.append(f'  {ids[n.name]} [{style}, label="{_dot_escape(label)}"];')
    for n in qs.plan.nodes:
        if n.level == "lfta":
            out.append(f'  {ifaces[n.iface or "<default>"]} -> {ids[n.name]} '
                       f'[label="{_dot_escape(n.protocol.name)}"];')  # type: ignore[union-attr]
        for s in n.inputs:
            out.append(f"  {ids[s]} -> {ids[n.name]};")
    for name in qs.leaves():
        out.append(f'  out_{ids[name]} [shape=plaintext, label="output {_dot_escape(name)}"];')
        out.append(f"  {ids[name]} -> out_{ids[name]};")
    out.append("}")
    return "\n".join(out) + "\n"
