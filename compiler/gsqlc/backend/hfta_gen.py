"""The C++ HFTAs of selections and aggregations (functors of the operator
templates in hfta_templates/, templates/hfta/*.cpp.j2), sampling queries'
included, and the C MERGE operators (gsq_merge.h).  Joins are in
hfta_join_gen.py."""
from __future__ import annotations

from typing import Optional

from ..frontend import ast
from ..planner.nodes import HftaAggregate, HftaMerge, HftaNode, HftaSelect, SamplingPlan
from ..semantics.bound import AggRef, FieldRef, GroupRef, SuperAggRef, walk
from ..semantics.types import Temporal, Type
from .cescape import c_identifier, c_string
from .cexpr import CEmitter, EmitContext, field_member
from .gen_shared import (
    GenContext,
    TemplateData,
    expr_comment,
    fold,
    hfta_param,
    hfta_param_data,
    key_equal,
    key_hash_step,
    merge_def,
    no_bound,
    output_assignments,
    param_inits,
    regex_data,
)


def hfta_common(gen: GenContext, n: HftaNode, functor: str) -> TemplateData:
    """What every HFTA's template is told: its names, streams and query."""
    ident = gen.idents[n.name]
    return {
        "functor": functor, "out_t": gen.tup(n.name), "ident": ident,
        "def_name": f"hfta_{ident}_def", "name": c_string(n.name),
        "in_streams": ", ".join(str(gen.stream_index[s]) for s in n.inputs),
        "out_stream": gen.stream_index[n.name],
        "query_comment": c_string(f"query {n.query.name}: {n.note}"),
    }


def render_hfta_merge(gen: GenContext, n: HftaMerge) -> str:
    ident = gen.idents[n.name]
    col = n.output.get(n.merge.field)
    assert col is not None, n.merge.field
    data = hfta_common(gen, n, "")
    head = (f"{data['name']}, {len(n.inputs)}, {ident}_inputs, {data['out_stream']}")
    data.update(merge_def=merge_def(data["def_name"], col, gen.tup(n.inputs[0]), n.ordered,
                                    n.merge.slack, head))
    return gen.render("hfta/merge.c.j2", data)


def _hfta_emitter(gen: GenContext, n: "HftaSelect | HftaAggregate", ident: str) -> CEmitter:
    """C++ expressions of a selection's or aggregation's functor: fields of
    the input tuple `in`, an aggregation's keys `k`, accumulators `s` and a
    sampling query's supergroup `sg`."""
    in_def = n.input_defs[0]

    def in_field(name: str) -> str:
        col = in_def.get(name)
        assert col is not None, name
        m = field_member(name)
        if col.type is Type.STRING:
            return f"gsq_tuple_str(in, in->{m})"
        return f"in->{m}"

    def resolve(e: ast.Expr) -> Optional[str]:
        if isinstance(e, FieldRef):
            return in_field(e.name)
        if not isinstance(n, HftaAggregate):
            return None
        if isinstance(e, GroupRef):
            if n.group_by[e.index][1].info.type is Type.STRING:
                return f"gsq_str_lit(k.k{e.index}.data(), (uint32_t)k.k{e.index}.size())"
            return f"k.k{e.index}"
        if isinstance(e, AggRef):
            ap = n.aggs[e.index]
            j = ap.accums[0]
            if ap.final == "udaf":   # its output, taken once in emit()
                return f"u{j}"
            if ap.final == "avg":
                return f"((double)s.a{j} / (double)s.a{ap.accums[1]})"
            if n.accums[j].type is Type.STRING:
                return f"gsq_str_lit(s.a{j}.data(), (uint32_t)s.a{j}.size())"
            return f"s.a{j}"
        if isinstance(e, SuperAggRef):   # a sampling query's supergroup
            assert n.sampling is not None
            op = n.sampling.superaggs[e.index][0]
            return "sg.n_groups" if op == "count_distinct" else f"sg.sa{e.index}"
        return None

    ctx = EmitContext(resolve, hfta_param, user=gen.user,
                      functor=True, partial_ok=True,
                      regex_ref=lambda v: f"{v}.get()",   # a gsq::regex member
                      const_prefix=ident + "_k")
    if isinstance(n, HftaAggregate) and n.sampling is not None:
        # stateful functions use their supergroup's block, told its groups
        ctx.state_ref = lambda st: f"sg.sf_{st}.get()"
        ctx.samples_ref = "(int)sg.n_groups"
    return CEmitter(ctx)


def _hfta_start(gen: GenContext, n: "HftaSelect | HftaAggregate"
                ) -> tuple[CEmitter, TemplateData, list[tuple[str, str]]]:
    """The emitter and the template data every selection and aggregation
    has, and the WHERE conditions, emitted first (the order numbers regexes
    and constants): (C++ condition, comment) pairs."""
    ident = gen.idents[n.name]
    em = _hfta_emitter(gen, n, ident)
    p_decls, p_init = param_inits(n.params, hfta_param, "return;")
    data = hfta_common(gen, n, f"{ident}_functor")
    # an aggregation by epochs switches a changed parameter at the next epoch
    epochs = isinstance(n, HftaAggregate) and bool(n.epoch_indices)
    data.update(in_t=gen.tup(n.inputs[0]), param_decls=p_decls, param_init=p_init,
                params_rt=hfta_param_data(n.params, epochs))
    return em, data, [(em.expr(c), expr_comment(c, n)) for c in n.where]


def _where(conds: list[tuple[str, str]], reject: str) -> list[str]:
    """The WHERE checks, `reject` leaving on a failed one."""
    return [f"if (!{c}) {reject}  {comment}" for c, comment in conds]


def _states(ctx: EmitContext) -> list[dict[str, str]]:
    """Every state a stateful function of the query uses (emission
    collected them)."""
    return [{"cls": cls, "var": f"sf_{c_identifier(st)}"} for st, cls in sorted(ctx.states.items())]


def render_hfta_select(gen: GenContext, n: HftaSelect) -> str:
    em, data, conds = _hfta_start(gen, n)
    ctx = em.ctx
    assigns, strs = output_assignments(em, n.output, list(n.select), data["out_t"])
    data["hb_assigns"] = [f"t.{field_member(col.name)} = {em.as_type(e, col.type)};"
                          for col, (_, e) in zip(n.output.columns, n.select)
                          if col.temporal.is_temporal]
    data.update(where=_where(conds, "return;"), assigns=assigns,
                strs=strs, regexes=regex_data(ctx), constants=ctx.constants,
                handles=ctx.handles, partial=ctx.partial_used, states=_states(ctx))
    return gen.render("hfta/select.cpp.j2", data)


def _group_keys(em: CEmitter, n: HftaAggregate) -> TemplateData:
    """The group key struct: its members, equality, hash, and extract()
    filling it from an input tuple."""
    key_members: list[str] = []
    key_eq: list[str] = []
    key_hash: list[str] = []
    extract: list[str] = []
    for i, (_, e) in enumerate(n.group_by):
        t = e.info.type
        if t is Type.STRING:
            key_members.append(f"std::string k{i};")
            extract.append(f"{{ gsq_str v_ = {em.expr(e)}; k.k{i}.assign(v_.p, v_.len); }}")
        else:
            key_members.append(f"{t.c_type} k{i}{{}};")
            extract.append(f"k.k{i} = {em.as_type(e, t)};")
        key_eq.append(key_equal(t, f"a.k{i}", f"b.k{i}"))
        key_hash.append(key_hash_step(t, f"k.k{i}"))
    return {"key_members": key_members, "key_eq": " && ".join(key_eq) or "true",
            "key_hash": key_hash, "extract": extract}


def _accumulators(gen: GenContext, em: CEmitter, n: HftaAggregate, data: TemplateData) -> None:
    """A group's state: its members, init (the first tuple), update (each
    later one), the user aggregates' outputs; for a running aggregation
    (CLOSING_WHEN) carrying a group into the next epoch and the first tuple
    of a carried group, and the closing condition.  A PARTIAL function in an
    aggregate's argument is evaluated in extract() (cexpr: partial_cache);
    no value there drops the tuple."""
    ctx = em.ctx
    ctx.partial_cache = []
    state_members: list[str] = []
    init: list[str] = []
    update: list[str] = []
    udaf_outputs: list[str] = []
    carry: list[str] = []
    fresh_update: list[str] = []
    for j, a in enumerate(n.accums):
        if a.op == "udaf":
            assert a.udaf is not None
            cls = gen.user.udaf(a.udaf, True)
            state_members.append(f"{cls} a{j};")
            args = ", ".join(em.udaf_args(a.udaf, a.args))
            init += [f"s.a{j}.init();", f"s.a{j}.update({args});"]
            update.append(f"s.a{j}.update({args});")
            udaf_outputs += [f"const auto u{j} = s.a{j}.output();", f"(void)u{j};"]
            # RUNNING: told of the new epoch; other aggregates start empty
            carry.append(f"s.a{j}.reinit();" if a.udaf.running else f"s.a{j}.init();")
            fresh_update.append(f"s.a{j}.update({args});")
            continue
        if a.type is Type.STRING:
            state_members.append(f"std::string a{j};")
            carry.append(f"s.a{j}.clear();")
        else:
            state_members.append(f"{a.type.c_type} a{j}{{}};")
            carry.append(f"s.a{j} = {{}};")
        val = "1" if a.expr is None else (em.expr(a.expr) if a.type in (Type.STRING, Type.IPV6)
                                          else em.as_type(a.expr, a.type))
        init += fold(a.op, a.type, f"s.a{j}", val, True, True)
        update += fold(a.op, a.type, f"s.a{j}", val, False, True)
        fresh_update += fold(a.op, a.type, f"s.a{j}", val, True, True)
    cached = ctx.partial_cache
    ctx.partial_cache = None
    data["extract"] += [f"{var} = {code};" for var, _, code in cached]
    closing = None
    if n.closing is not None:
        state_members.append("bool fresh_ = false;   // carried into its epoch, no tuple yet")
        update = ["if (s.fresh_) {", "    s.fresh_ = false;",
                  *("    " + x for x in fresh_update), "    return;", "}", *update]
        ctx.partial_ok = False
        closing = em.expr(n.closing)
        ctx.partial_ok = True
    data.update(state_members=state_members, init=init, update=update,
                udaf_outputs=udaf_outputs, carry=carry, closing=closing,
                partial_members=[f"{ct} {var}{{}};   // a PARTIAL call's value, taken in extract()"
                                 for var, ct, _ in cached])


def _epochs(gen: GenContext, em: CEmitter, n: HftaAggregate, ident: str) -> TemplateData:
    """The epoch (the temporal keys), the output heartbeat, and the joint
    punctuation of an aggregation over a join."""
    epoch: list[dict[str, object]] = []
    for i in n.epoch_indices:
        e = n.group_by[i][1]
        epoch.append({"i": i, "ctype": e.info.type.c_type,
                      "later": ">" if e.info.temporal is Temporal.INCREASING else "<",
                      "infer": em.as_type(e, e.info.type)})
    # The output heartbeat: temporal columns from the epoch's values; one
    # that reads anything else (a temporal key outside the epoch, an
    # aggregate) gets the bound that promises nothing.
    epoch_set = set(n.epoch_indices)

    def hb_resolve(e: ast.Expr) -> Optional[str]:
        if isinstance(e, GroupRef):
            return f"e.e{e.index}"
        return None
    hem = CEmitter(EmitContext(hb_resolve, hfta_param, user=gen.user,
                               const_prefix=ident + "_kh"))
    hb_assigns: list[str] = []
    for col, (_, e) in zip(n.output.columns, n.select):
        if not col.temporal.is_temporal:
            continue
        if all(x.index in epoch_set for x in walk(e) if isinstance(x, GroupRef)) \
                and not any(isinstance(x, AggRef) for x in walk(e)):
            hb_assigns.append(f"t.{field_member(col.name)} = {hem.as_type(e, col.type)};")
        elif col.type.is_numeric:
            hb_assigns.append(no_bound(col))
    # Joint punctuation (Li et al. 2008, section 7): the temporal keys over the
    # join's left and right times, evaluated on its joint punctuation.
    joint: list[dict[str, object]] = []
    for side, idx in (("l", n.joint_left), ("r", n.joint_right)):
        for i in idx:
            e = n.group_by[i][1]
            joint.append({"i": i, "side": side, "ctype": e.info.type.c_type,
                          "before": "<" if e.info.temporal is Temporal.INCREASING else ">",
                          "later": ">" if e.info.temporal is Temporal.INCREASING else "<",
                          "infer": em.as_type(e, e.info.type)})
    return {"epoch": epoch, "hb_assigns": hb_assigns, "joint": joint,
            "ordered_output": n.ordered_output,
            # a side whose keys are all in the epoch decides for a whole epoch
            "joint_epoch_sides": [sd for sd, idx in (("l", n.joint_left), ("r", n.joint_right))
                                  if idx and set(idx) <= epoch_set]}


def render_hfta_aggregate(gen: GenContext, n: HftaAggregate) -> str:
    em, data, conds = _hfta_start(gen, n)
    ctx = em.ctx
    data.update(_group_keys(em, n))
    _accumulators(gen, em, n, data)
    partial_in_extract = ctx.partial_used
    data.update(_epochs(gen, em, n, data["ident"]))
    having = having_expr = None
    used_before = ctx.partial_used
    ctx.partial_used = False
    if n.having is not None:
        having_expr = em.expr(n.having)
        having = f"if (!{having_expr}) return;  {expr_comment(n.having, n)}"
    # a sampling query asks HAVING apart from the output (its final cleaning)
    having_partial = ctx.partial_used
    assigns, strs = output_assignments(em, n.output, list(n.select), data["out_t"])
    # a PARTIAL function in HAVING or SELECT: no value, no output
    partial_emit = ctx.partial_used
    ctx.partial_used = used_before or partial_emit
    data.update(where=_where(conds, "return false;"), having=having, partial_emit=partial_emit,
                assigns=assigns, strs=strs, regexes=regex_data(ctx), constants=ctx.constants,
                handles=ctx.handles, partial=partial_in_extract or partial_emit,
                partial_extract=partial_in_extract,
                disorder=n.disorder, strict_heartbeats=n.strict_heartbeats,
                flush_policy=("gsq::flush_policy::immediate" if n.flush == "immediate"
                              else "gsq::flush_policy::slow"),
                operator=(f"gsq::running_op<{data['functor']}>" if n.closing is not None
                          else None))
    if n.sampling is not None:
        data.update(having_expr=having_expr, having_partial=having_partial,
                    having_comment=expr_comment(n.having, n) if n.having is not None else "")
        return _sample_render(gen, n, n.sampling, em, data)
    return gen.render("hfta/aggregate.cpp.j2", data)


def _wrapping_minus(t: Type, target: str, value: str) -> str:
    """`target -= value` for an integer sum, wrapping as the sum does."""
    if t is Type.LLONG:
        return f"{target} = (int64_t)((uint64_t){target} - (uint64_t)({value}));"
    return f"{target} = ({t.c_type})({target} - ({t.c_type})({value}));"


def _sample_render(gen: GenContext, n: HftaAggregate, sp: SamplingPlan, em: CEmitter,
                   data: TemplateData) -> str:
    """A sampling query's functor (gsq::sampling_op): the aggregation's
    parts, and the supergroup's key, super-aggregates and states."""
    ctx = em.ctx
    sg_members: list[str] = []
    sg_key_members: list[str] = []
    sg_key_eq: list[str] = []
    sg_key_hash: list[str] = []
    sg_fill: list[str] = []
    for i in sp.supergroup:
        t = n.group_by[i][1].info.type
        sg_key_members.append(f"std::string k{i};" if t is Type.STRING
                              else f"{t.c_type} k{i}{{}};")
        sg_key_eq.append(key_equal(t, f"a.k{i}", f"b.k{i}"))
        sg_key_hash.append(key_hash_step(t, f"k.k{i}"))
        sg_fill.append(f"g.k{i} = k.k{i};")
    sg_update: list[str] = []
    # A group a cleaning removes (CLEANING_BY, or HAVING at the window's end)
    # takes its part out of the supergroup's count$ and sum$ (Tigon's clean
    # operator, update_minus_superaggr): each group keeps its own count / sum
    # of them (state member g{j}); min$ and max$ keep their values,
    # count_distinct$ loses the group (sampling_op).
    sg_remove: list[str] = []
    for j, (op, arg, t) in enumerate(sp.superaggs):
        if op == "count_distinct":
            continue
        sg_members.append(f"{t.c_type} sa{j}{{}};")
        if op == "count":
            sg_update.append(f"sg.sa{j} += 1;")
            data["state_members"].append(f"{t.c_type} g{j}{{}};   // its part of count$")
            data["init"].append(f"s.g{j} = 1;")
            data["update"].append(f"s.g{j} += 1;")
            sg_remove.append(f"sg.sa{j} -= s.g{j};")
            continue
        assert arg is not None
        val = em.as_type(arg, t)
        if op == "sum":
            sg_update += fold("sum", t, f"sg.sa{j}", val, False, True)
            data["state_members"].append(f"{t.c_type} g{j}{{}};   // its part of sum$")
            data["init"] += fold("sum", t, f"s.g{j}", val, True, True)
            data["update"] += fold("sum", t, f"s.g{j}", val, False, True)
            sg_remove += fold("sum", t, f"sg.sa{j}", f"-s.g{j}", False, True) \
                if t is Type.FLOAT else [_wrapping_minus(t, f"sg.sa{j}", f"s.g{j}")]
        else:   # min, max: the first value, then folded
            sg_members.append(f"bool sa{j}_set = false;")
            sg_update.append(f"if (!sg.sa{j}_set) {{ sg.sa{j} = {val}; sg.sa{j}_set = true; }}")
            sg_update += [f"else {x}" for x in fold(op, t, f"sg.sa{j}", val, False, True)]
    ctx.partial_ok = False
    cw = em.expr(sp.cleaning_when) if sp.cleaning_when is not None else "false"
    cb = em.expr(sp.cleaning_by) if sp.cleaning_by is not None else "true"
    states = _states(ctx)
    sg_members += [f"{st['cls']} {st['var']};" for st in states]
    data.update(sg_members=sg_members, sg_key_members=sg_key_members,
                sg_key_eq=" && ".join(sg_key_eq) or "true", sg_key_hash=sg_key_hash,
                sg_key_fill=sg_fill, sg_update=sg_update, sg_remove=sg_remove, states=states,
                cleaning_when=cw, cleaning_by=cb, handles=ctx.handles, partial=ctx.partial_used,
                constants=ctx.constants, regexes=regex_data(ctx))
    return gen.render("hfta/sample.cpp.j2", data)


