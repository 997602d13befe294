"""The C LFTAs: what every LFTA has (its field reads, heartbeat, parameters,
interface properties, gsq_lfta_def) and a selection LFTA's tuples
(templates/lfta/select.c.j2).  An aggregation LFTA's table shape is in
lfta_aggregate_gen.py."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..frontend import ast
from ..planner.nodes import LftaAggregate, LftaNode, LftaSelect
from ..semantics import catalog
from ..semantics.bound import AccumRef, FieldRef, GroupRef, walk
from ..semantics.schema import TIME_UNIT_NS, Field
from ..semantics.types import Temporal, Type
from .cescape import c_comment, c_identifier, c_string
from .cexpr import CEmitter, EmitContext, field_member
from .gen_shared import (
    GenContext,
    TemplateData,
    expr_comment,
    merge_def,
    output_assignments,
    param_inits,
)
from .lfta_heartbeat import HB_TYPE, LftaHeartbeat, heartbeat_exprs, lfta_heartbeat
from .lfta_reads import COL_RAW, RAW_CTYPE, LftaReads, field_var, fields_of

_UNSIGNED = {Type.USHORT, Type.UINT, Type.ULLONG, Type.IP}


def _plain(e: ast.Expr) -> bool:
    """Whether evaluating e for any row is harmless and cheap: fields,
    numbers, parameters, arithmetic without division, comparisons, logic,
    conversions."""
    if isinstance(e, ast.Binary):
        return e.op.lower() not in ("/", "%")
    if isinstance(e, ast.Literal):
        return e.kind != "string"
    if isinstance(e, ast.Call):
        f = catalog.lookup_scalar(e.name)
        return f is not None and f.emit in ("cast", "identity")
    return isinstance(e, (FieldRef, ast.Param, ast.Unary, ast.InList))


def _iface_prop_inits(ctx: EmitContext, decls: list[str], inits: list[str]) -> None:
    """An LFTA's interface properties (@name), read once at init into its
    state (gsq_iface_prop); one its interface lacks fails the node."""
    for name in sorted(ctx.iface_props):
        var, lit = f"ip_{c_identifier(name)}", c_string(name)
        decls.append(f"gsq_str {var};")
        inits.append(f"{{ const char *v = gsq_iface_prop(node, {lit});")
        inits.append(f"  if (!v) {{ gsq_node_fail(node, \"interface %s has no property %s (@%s "
                     f"in the query): give it in the interfaces file, [interface.NAME] "
                     f"properties = {{ %s = ... }}\", gsq_iface_prop(node, \"Name\"), {lit}, "
                     f"{lit}, {lit}); return -1; }}")
        inits.append(f"  st->{var} = gsq_str_lit(v, (uint32_t)strlen(v)); }}")


def csv_field_init(pos: int, code: str, name: str, f: Field) -> str:
    """The initializer of a gsq_csv_field: the CSV position read, the type
    it is read as, the field's name, and its time format and unit (enum
    gsq_time_format; nanoseconds, 0 when not declared)."""
    fmt = (f"GSQ_TF_{f.time_format.upper()}" if f.time_format else "GSQ_TF_NONE")
    unit = TIME_UNIT_NS[f.time_unit] if f.time_unit else 0
    return f"{{{pos}u, {code}, {c_string(name)}, {fmt}, {unit}u}}"


def _set_merge(gen: GenContext, n: LftaNode, fn: str) -> Optional[str]:
    """C defining fn_set_merge, the merge of n's instances over an
    interface set on its first temporal column (None: it has none)."""
    col = n.set_merge_column
    if col is None:
        return None
    return merge_def(f"{fn}_set_merge", col, gen.tup(n.name), n.set_merge_ordered, 0,
                     "NULL, 0, NULL, -1", storage="static ")


def _emitter(gen: GenContext, n: LftaNode, fn: str) -> CEmitter:
    """C expressions of an LFTA: fields from their variables, an
    aggregation's keys and accumulators from its slot `s`."""
    def resolve(e: ast.Expr) -> Optional[str]:
        if isinstance(e, FieldRef):
            return field_var(e.name)
        if isinstance(e, GroupRef):
            return f"s->k{e.index}"
        if isinstance(e, AccumRef):
            if isinstance(n, LftaAggregate) and n.accums[e.index].op == "udaf":
                return f"u{e.index}"    # its output, taken in _out
            return f"s->a{e.index}"
        return None

    ctx = EmitContext(resolve, lambda p: f"st->p_{c_identifier(p)}", user=gen.user, cxx=False,
                      const_prefix=fn + "_k",
                      iface_prop_ref=lambda name: f"st->ip_{c_identifier(name)}")
    return CEmitter(ctx)


@dataclass
class LftaParts:
    """An LFTA's common parts, for its kind's renderer: the emitter of its
    expressions, its reads, heartbeat, and the template data so far."""
    em: CEmitter
    reads: LftaReads
    hb: LftaHeartbeat
    reads_clock: bool
    branchless: bool
    data: TemplateData


def _prefetch_reads(n: LftaNode, reads: LftaReads) -> TemplateData:
    """What an aggregation's prefetch reads: the group-by fields, with no
    counting (accept() reads them again and counts); only for group-by
    expressions of fields, constants and operators (no calls)."""
    out: TemplateData = {"prefetch_reads": None, "col_prefetch_reads": None,
                         "raw_prefetch_reads": None}
    proto = n.protocol
    # (a parameter or interface property is read from the LFTA's state,
    # which the vectorized hashing of raw columns has not)
    if not isinstance(n, LftaAggregate) or any(
            isinstance(x, (ast.Call, ast.Param, ast.IfaceParam)) for _, e in n.group_by
            for x in walk(e)) or any(
            proto.fields[nm].source == "system" for _, e in n.group_by for nm in fields_of(e)):
        return out
    key_fields = list(dict.fromkeys(nm for _, e in n.group_by for nm in fields_of(e)))
    key_decls = [f"{proto.fields[nm].type.c_type} {field_var(nm)};" for nm in key_fields]
    out["prefetch_reads"] = key_decls + [reads.read_step(nm, "return;") for nm in key_fields]
    col_reads = [reads.col_read_step(nm, "return 0;") for nm in key_fields]
    if all(r is not None for r in col_reads):
        out["col_prefetch_reads"] = key_decls + [r for r in col_reads if r is not None]
    raw_reads = [reads.raw_read_step(nm) for nm in key_fields]
    if all(r is not None for r in raw_reads):
        out["raw_prefetch_reads"] = key_decls + [r for r in raw_reads if r is not None]
    return out


def _param_parts(n: LftaNode, em: CEmitter, hb: LftaHeartbeat, fn: str) -> TemplateData:
    """What templates/lfta/_params.j2 and the LFTA templates need for
    parameters changed while the run goes on: the statements reading them
    again, the temporal fields behind the epoch mark, and for an
    aggregation by epochs (switching) the epoch of a record's temporal
    fields and the mark's keys.  A selection's mark columns and assignments
    are filled in by render_lfta_select."""
    fields = [(n.params[p].c_type, c_identifier(p)) for p in sorted(n.params)]
    _, reload = param_inits(n.params, lambda p: f"st->p_{c_identifier(p)}", "return;")
    pr: TemplateData = {"fields": fields, "reload": reload, "switching": False,
                        "hb": [], "mark_cols": [], "mark_assigns": [], "epoch_assigns": [],
                        "mark_to_slot": []}
    if not hb.body:
        return pr
    proto = n.protocol
    pr["hb"] = [(proto.fields[nm].type.c_type, field_var(nm), f"hb_{c_identifier(nm)}")
                for nm in hb.fields]
    if isinstance(n, LftaAggregate) and n.epoch_indices:
        for i in n.epoch_indices:
            e = n.group_by[i][1]
            col = field_member(n.output.columns[i].name)
            infer = em.as_type(e, e.info.type)
            pr["mark_cols"].append((col, ">" if e.info.temporal is Temporal.INCREASING else "<"))
            pr["mark_assigns"].append(f"t.{col} = {infer};")
            pr["epoch_assigns"].append(f"e.k{i} = {infer};")
            pr["mark_to_slot"].append(f"k{i} = m->{col};")
        pr["switching"] = bool(n.params)
    return pr


def lfta_parts(gen: GenContext, n: LftaNode) -> LftaParts:
    proto = n.protocol
    fn = "lfta_" + gen.idents[n.name]
    em = _emitter(gen, n, fn)
    reads = LftaReads(proto)
    for name, f in proto.fields.items():
        if f.required:
            reads.unpack(name)
    # Heartbeats (Johnson et al. 2005, 4.3-4.5): the temporal fields behind the
    # temporal output are unpacked and saved before the predicate, so a
    # rejected record still advances time.
    hb_exprs = heartbeat_exprs(n)
    hb = lfta_heartbeat(n.name, proto, hb_exprs, reads)
    # Over columns read as they are, a selection whose predicates and
    # outputs are plain arithmetic (nothing to fail, count or call)
    # computes every row's tuple and keeps it by the predicates' value:
    # no branch on the data to mispredict.
    branchless = isinstance(n, LftaSelect) and all(
        _plain(x) for e in [*n.where, *(e for _, e in n.select)] for x in walk(e)) and \
        not any(col.type is Type.STRING for col in n.output.columns)
    pr = _param_parts(n, em, hb, fn)
    if pr["switching"]:
        # a changed parameter: the values of the record's epoch, before any
        # expression reads them (its temporal fields are admitted by now)
        args = "".join(f", {var}" for _, var, _ in pr["hb"])
        reads.add_step(f"if (__builtin_expect(st->psw_n != 0, 0)) {fn}_params_for(st{args});")
    for c in n.where:
        reads.unpack_all([c])
        reads.add_step(f"if (!{em.expr(c)}) return;  {expr_comment(c, n)}", "",
                       f"keep_ &= {em.expr(c)};  {expr_comment(c, n)}" if branchless else "")
    value_exprs: list[ast.Expr]
    if isinstance(n, LftaAggregate):
        value_exprs = [e for _, e in n.group_by] + [a.expr for a in n.accums
                                                    if a.expr is not None]
        # a user sub-aggregate's arguments (a field only they read too)
        value_exprs += [x for a in n.accums if a.op == "udaf" for x in a.args]
    else:
        value_exprs = [e for _, e in n.select]
    reads.unpack_all(value_exprs)
    prefetch = _prefetch_reads(n, reads)
    # The clock follows each record's arrival under the data clock: an
    # LFTA that reads it sets it back row by row over a chunk.
    reads_clock = any(catalog.reads_clock(x) for e in [*n.where, *value_exprs, *hb_exprs]
                      for x in walk(e)) or any(proto.fields[nm].source == "system"
                                               for nm in reads.unpacked)
    p_decls, p_init = param_inits(n.params, lambda p: f"st->p_{c_identifier(p)}", "return -1;")
    time_field = hb.time_field
    tf = proto.fields[time_field] if time_field else None
    csv_fields = reads.csv_fields
    col_steps = reads.col_steps
    data: TemplateData = {
        "fn": fn, "state_t": fn + "_state", "out_t": gen.tup(n.name), "name": c_string(n.name),
        "iface": c_string(n.iface or "default"), "protocol": c_string(proto.name),
        "source_kind": "GSQ_SRC_PCAP" if proto.source_kind == "pcap" else "GSQ_SRC_CSV",
        "is_pcap": proto.source_kind == "pcap",
        "out_stream": gen.stream_index[n.name],
        "csv_fields": [csv_field_init(pos, code, fname, proto.fields[fname])
                       for pos, code, fname in csv_fields],
        "param_decls": p_decls, "param_init": p_init,
        "reads_params": bool(n.params), "pr": pr,
        "decls": reads.decls, "steps": reads.steps, "uses": reads.uses,
        "query_comment": c_string(f"query {n.query.name}: {n.note}"),
        "hb_state": hb.state, "hb_body": hb.body, "has_heartbeat": bool(hb.body),
        "hb_promise": hb.promise(), "hb_unit_nsec": hb.unit_nsec,
        **prefetch,
        "col_steps": col_steps, "col_reads_clock": reads_clock,
        # the columns of the chunk read as they are: (index, C type) each
        "raw_steps": (reads.raw_steps if col_steps is not None and all(
            RAW_CTYPE[code] for _, code, _ in csv_fields) else None),
        "branchless": branchless,
        "raw_cols": [(j, RAW_CTYPE[code]) for j, (_, code, _) in enumerate(csv_fields)],
        "set_merge": _set_merge(gen, n, fn),
        "prefilter": gen.prefilters.lfta_hooks(n, fn, fn + "_state"),
        "hb_record_time": int(hb.record_time and bool(hb.body)),
        "time_pos": tf.csv_pos if tf else 0,
        "time_type": (tf.csv_type or tf.type).code if tf else "0",
        "time_comment": c_comment(f"time column: field {time_field}" if time_field
                                  else "no time column"),
    }
    if col_steps is None:
        data["col_prefetch_reads"] = None
    return LftaParts(em, reads, hb, reads_clock, branchless, data)


def render_lfta_select(gen: GenContext, n: LftaSelect) -> str:
    """A selection LFTA: one tuple per record that passes."""
    p = lfta_parts(gen, n)
    em, data, proto = p.em, p.data, n.protocol
    out_t = data["out_t"]
    assigns, strs = output_assignments(em, n.output, list(n.select), out_t)
    hb_assigns = [f"t.{field_member(col.name)} = {em.as_type(e, col.type)};"
                  for col, (_, e) in zip(n.output.columns, n.select)
                  if col.temporal.is_temporal]
    # Every output column an input column as it is (read raw, of the
    # same type, no bool): the rows kept go out gathered column by
    # column (gsq_emit_gather), no tuple built for an Arrow sink.
    gather: Optional[list[str]] = None
    if data["raw_steps"] is not None and not strs:
        gather = []
        for col, (_, e) in zip(n.output.columns, n.select):
            f = proto.fields.get(e.name) if isinstance(e, FieldRef) else None
            if f is None or f.source != "csv" or (f.csv_type or f.type) != f.type \
                    or f.type != col.type or f.type not in COL_RAW:
                gather = None
                break
            assert isinstance(e, FieldRef)
            gather.append(f"r{p.reads.col_slot(e.name)}")
    # A gathered selection with no branch on the data (and unsigned
    # heartbeat fields, whose running max starts at 0) computes a
    # block's keep bytes in one loop and packs the columns by them.
    hb_fields = p.hb.fields
    hb_mask = [(c_identifier(nm), proto.fields[nm].type.c_type,
                HB_TYPE[proto.fields[nm].type.c_type]) for nm in hb_fields]
    masked = gather is not None and p.branchless and not p.reads_clock and all(
        proto.fields[nm].type in _UNSIGNED for nm in hb_fields)
    if p.hb.body:
        pr = data["pr"]
        pr["mark_assigns"] = hb_assigns
        pr["mark_cols"] = [(field_member(col.name),
                            ">" if col.temporal is Temporal.INCREASING else "<")
                           for col in n.output.columns if col.temporal.is_temporal]
    data.update(assigns=assigns, strs=strs, constants=em.ctx.constants,
                hb_assigns=hb_assigns, gather=gather,
                mask_steps=p.reads.mask_steps if masked else None, hb_mask=hb_mask)
    return finish_lfta(gen, em, "lfta/select.c.j2", data)


def finish_lfta(gen: GenContext, em: CEmitter, template: str, data: TemplateData) -> str:
    """The LFTA's file, once its kind's data are in: its interface
    properties read at init (found while its expressions were emitted)."""
    _iface_prop_inits(em.ctx, data["param_decls"], data["param_init"])
    return gen.render(template, data)
