"""The C++ HFTAs of joins: a band or equi-join (gsq::join_op,
templates/hfta/join.cpp.j2) and a FILTER_JOIN (gsq::filter_join_op,
templates/hfta/filter_join.cpp.j2)."""
from __future__ import annotations

from typing import Optional

from ..frontend import ast
from ..planner.nodes import HftaFilterJoin, HftaJoin
from ..semantics.bound import FieldRef, key, walk
from ..semantics.types import Type, arithmetic_result
from .cexpr import CEmitter, EmitContext, field_member
from .gen_shared import (
    GenContext,
    TemplateData,
    expr_comment,
    hfta_param,
    hfta_param_data,
    key_equal,
    key_hash_step,
    no_bound,
    output_assignments,
    param_inits,
)
from .hfta_gen import hfta_common


def _access(n: HftaJoin, var: str, side: int, name: str) -> str:
    """The C++ reading field `name` of input `side` through the tuple
    pointer `var`."""
    col = n.input_defs[side].get(name)
    assert col is not None, name
    m = field_member(name)
    return f"gsq_tuple_str({var}, {var}->{m})" if col.type is Type.STRING else f"{var}->{m}"


def _side_emitter(gen: GenContext, n: HftaJoin, ident: str, side: int) -> CEmitter:
    """The emitter of input `side`'s expressions over its tuple `in`."""
    def resolve(e: ast.Expr) -> Optional[str]:
        if isinstance(e, FieldRef):
            assert e.source == side
            return _access(n, "in", side, e.name)
        return None
    return CEmitter(EmitContext(resolve, hfta_param, const_prefix=f"{ident}_k{side}",
                                user=gen.user))


def _join_sides(gen: GenContext, n: HftaJoin, ident: str) -> tuple[CEmitter, CEmitter, TemplateData]:
    """What a join and a filter join share: an emitter per input, and the
    template data built with them: the input types, each input's WHERE
    filters, the key struct with the code filling it from either input, and
    the query parameters."""
    j = n.join
    lem, rem = _side_emitter(gen, n, ident, 0), _side_emitter(gen, n, ident, 1)
    key_members, key_eq, key_hash, lkeys, rkeys = [], [], [], [], []
    for i, (le, re_) in enumerate(j.keys):
        lt, rt = le.info.type, re_.info.type
        t = lt if lt == rt or not (lt.is_numeric and rt.is_numeric) else (
            arithmetic_result(lt, rt) or lt)
        if t is Type.BOOL:
            t = Type.INT
        if t is Type.STRING:
            key_members.append(f"std::string k{i};")
            lkeys.append(f"{{ gsq_str v_ = {lem.expr(le)}; k.k{i}.assign(v_.p, v_.len); }}")
            rkeys.append(f"{{ gsq_str v_ = {rem.expr(re_)}; k.k{i}.assign(v_.p, v_.len); }}")
        else:
            key_members.append(f"{t.c_type} k{i}{{}};")
            lkeys.append(f"k.k{i} = {lem.as_type(le, t)};")
            rkeys.append(f"k.k{i} = {rem.as_type(re_, t)};")
        key_eq.append(key_equal(t, f"a.k{i}", f"b.k{i}"))
        key_hash.append(key_hash_step(t, f"k.k{i}"))
    lwhere = [f"if (!{lem.expr(c)}) return false;  {expr_comment(c, n)}" for c in j.filters[0]]
    rwhere = [f"if (!{rem.expr(c)}) return false;  {expr_comment(c, n)}" for c in j.filters[1]]
    p_decls, p_init = param_inits(n.params, hfta_param, "return;")
    data: TemplateData = dict(
        key_members=key_members, key_eq=" && ".join(key_eq) or "true", key_hash=key_hash,
        left_t=gen.tup(n.inputs[0]), right_t=gen.tup(n.inputs[1]),
        left_where=lwhere, right_where=rwhere, left_keys=lkeys, right_keys=rkeys,
        param_decls=p_decls, param_init=p_init, params_rt=hfta_param_data(n.params, False))
    return lem, rem, data



def render_hfta_join(gen: GenContext, n: HftaJoin) -> str:
    j = n.join
    ident = gen.idents[n.name]
    data = hfta_common(gen, n, f"{ident}_functor")
    lem, rem, sides = _join_sides(gen, n, ident)

    def default(t: Type) -> str:
        if t is Type.STRING:
            return 'gsq_str_lit("", 0u)'
        if t is Type.IPV6:
            return "gsq_ipv6{}"
        return f"(({t.c_type})0)"

    def out_resolve(e: ast.Expr) -> Optional[str]:
        if not isinstance(e, FieldRef):
            return None
        var, ovar = ("l", "r") if e.source == 0 else ("r", "l")
        t = e.info.type
        present = _access(n, var, e.source, e.name)
        fill = j.fill.get((e.source, e.name))
        if fill is not None:
            other = _access(n, ovar, fill[0], fill[1])
            if t not in (Type.STRING, Type.IPV6):
                other = f"(({t.c_type})({other}))"
            return f"({var} ? {present} : {other})"
        return f"({var} ? {present} : {default(t)})"

    octx = EmitContext(out_resolve, hfta_param, const_prefix=ident + "_ko", user=gen.user)
    oem = CEmitter(octx)
    time_t = arithmetic_result(j.time[0].info.type, j.time[1].info.type) or j.time[0].info.type
    assigns, strs = output_assignments(oem, n.output, list(n.select), data["out_t"])
    # The heartbeat tuples (join_op.hpp "Heartbeats", "Joint
    # punctuation"): a column that is exactly the left time takes hl (jl),
    # exactly the right time hr (jr); any other temporal column the bound
    # that promises nothing.  A heartbeat sets temporal columns only: hr
    # does not bound the empty right-time column of a band join's
    # left-only rows (analysis makes it not temporal).  A joint heartbeat
    # bounds the two times together, which holds of every row whatever
    # its columns' temporal properties (an outer row meets the bound of
    # its present side), so it sets them regardless.
    left_key, right_key = key(j.time[0]), key(j.time[1])
    hb_assigns: list[str] = []
    joint_assigns: list[str] = []
    for col, (_, e) in zip(n.output.columns, n.select):
        if not col.type.is_numeric:
            continue
        m, ct = field_member(col.name), col.type.c_type
        side = "l" if key(e) == left_key else "r" if key(e) == right_key else None
        if side is not None:
            if col.temporal.is_temporal:
                hb_assigns.append(f"t.{m} = ({ct})h{side};")
            joint_assigns.append(f"t.{m} = ({ct})j{side};")
        elif col.temporal.is_temporal:
            hb_assigns.append(no_bound(col))
            joint_assigns.append(no_bound(col))
    data.update(
        sides,
        join_kind={"inner": "inner", "left": "left_outer", "right": "right_outer",
                   "full": "full_outer"}[j.kind],
        time_t=time_t.c_type,
        left_time=lem.as_type(j.time[0], time_t), right_time=rem.as_type(j.time[1], time_t),
        band_lo=f"(({time_t.c_type})({j.band_lo!r}))", band_hi=f"(({time_t.c_type})({j.band_hi!r}))",
        assigns=assigns, strs=strs, hb_assigns=hb_assigns,
        joint_punctuation=n.joint_punctuation, joint_assigns=joint_assigns,
        constants=lem.ctx.constants + rem.ctx.constants + octx.constants)
    data.update(left_ordered=n.inputs_ordered[0], right_ordered=n.inputs_ordered[1])
    return gen.render("hfta/join.cpp.j2", data)


def render_hfta_filter_join(gen: GenContext, n: HftaFilterJoin) -> str:
    """FILTER_JOIN: a gsq::filter_join_op functor.  Input 0 (R) gives
    keys and times only; the output row is computed from the S tuple,
    a key field of R reading the S field WHERE equates it with."""
    j = n.join
    ident = gen.idents[n.name]
    data = hfta_common(gen, n, f"{ident}_functor")
    lem, rem, sides = _join_sides(gen, n, ident)

    def out_resolve(e: ast.Expr) -> Optional[str]:
        if not isinstance(e, FieldRef):
            return None
        if e.source == 1:
            return _access(n, "s", 1, e.name)
        _, sname = j.fill[(0, e.name)]   # analysis admits only key fields of R
        v = _access(n, "s", 1, sname)
        t = e.info.type
        return v if t in (Type.STRING, Type.IPV6) else f"(({t.c_type})({v}))"

    octx = EmitContext(out_resolve, hfta_param, const_prefix=ident + "_ko", user=gen.user)
    oem = CEmitter(octx)
    col, s_time = j.time
    tt = arithmetic_result(col.info.type, s_time.info.type) or col.info.type
    assigns, strs = output_assignments(oem, n.output, list(n.select), data["out_t"])

    # The output heartbeat at S time tm: a temporal column over S's time
    # field alone is evaluated at tm; any other temporal column gets the
    # bound that promises nothing (the lowest value if increasing).
    s_field = s_time.name if isinstance(s_time, FieldRef) else None

    def hb_resolve(e: ast.Expr) -> Optional[str]:
        if isinstance(e, FieldRef):
            return f"(({e.info.type.c_type})tm)"
        return None
    hem = CEmitter(EmitContext(hb_resolve, hfta_param, const_prefix=ident + "_kh", user=gen.user))
    hb_assigns: list[str] = []
    for ocol, (_, e) in zip(n.output.columns, n.select):
        if not ocol.temporal.is_temporal or not ocol.type.is_numeric:
            continue
        m, ct = field_member(ocol.name), ocol.type.c_type
        refs = [x for x in walk(e) if isinstance(x, FieldRef)]
        if key(e) == key(s_time):
            hb_assigns.append(f"t.{m} = ({ct})tm;")
        elif s_field is not None and refs and all(x.source == 1 and x.name == s_field
                                                  for x in refs):
            hb_assigns.append(f"t.{m} = {hem.as_type(e, ocol.type)};")
        else:
            hb_assigns.append(no_bound(ocol))
    if tt.is_integer:
        hi = (1 << (tt.bits - 1)) - 1 if tt.is_signed else (1 << tt.bits) - 1
        window_back = f"(({tt.c_type})({min(j.window - 1, hi)}ULL))"
    else:
        window_back = f"(({tt.c_type})({j.window - 1}.0))"
    data.update(
        sides,
        time_t=tt.c_type,
        left_time=lem.as_type(col, tt), right_time=rem.as_type(s_time, tt),
        window=j.window, window_back=window_back,
        assigns=assigns, strs=strs, hb_assigns=hb_assigns,
        constants=lem.ctx.constants + rem.ctx.constants + octx.constants
        + hem.ctx.constants)
    return gen.render("hfta/filter_join.cpp.j2", data)

