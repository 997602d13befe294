"""An aggregation LFTA (sub-aggregate, templates/lfta/aggregate.c.j2): the
shape of its gsq_agg_table (runtime_c/lfta/gsq_agg_table.h holds the
algorithm).  A record enters the table as a one-record group `g` (its keys,
and accumulators holding its contribution), which fold() adds to a resident
group `s`."""
from __future__ import annotations

from typing import Any, Optional

from ..planner.nodes import LFTA_TABLE_GROW_MIB, LftaAggregate
from ..semantics.types import Temporal, Type
from .gen_shared import GenContext, fold, key_equal, key_hash_step, output_assignments
from .lfta_gen import finish_lfta, lfta_parts
from .xdp_gen import xdp_lfta_data

# group-key types an LFTA hashes in 32-bit lanes when every key is one
# (gsq_hash32_add): its block of row hashes then vectorizes without 64-bit
# multiplies, which AVX2 lacks
_HASH32_TYPES = frozenset({Type.BOOL, Type.USHORT, Type.UINT, Type.INT, Type.IP})


def lfta_key_hash_step(t: Type, v: str, hash32: bool) -> str:
    """key_hash_step for an LFTA's group table: into the 32-bit running
    hash h32 when every key fits 32 bits (hash32)."""
    if hash32:
        return f"h32 = gsq_hash32_add(h32, (uint32_t){v});"
    return key_hash_step(t, v)


def _xdp(gen: GenContext, n: LftaAggregate, fn: str) -> Optional[dict[str, Any]]:
    """The kernel side's data when n runs in the kernel's XDP hook too."""
    k = gen.kernel_lftas.get(n.name)
    return xdp_lfta_data(k, fn) if k is not None else None


def render_lfta_aggregate(gen: GenContext, n: LftaAggregate) -> str:
    p = lfta_parts(gen, n)
    em, data = p.em, p.data
    out_t, fn = data["out_t"], data["fn"]
    slot_members, key_locals, key_eq, hash_steps, group_fill = [], [], [], [], []
    slot_hash_steps: list[str] = []
    hit_key_eq: list[str] = []    # a row's keys (kv<i>) against a slot's (sl)
    hash32 = all(e.info.type in _HASH32_TYPES for _, e in n.group_by)
    for i, (_, e) in enumerate(n.group_by):
        t = e.info.type
        slot_members.append(f"{t.c_type} k{i};")
        key_locals.append(f"{t.c_type} kv{i} = {em.as_type(e, t)};")
        group_fill.append(f"g.k{i} = kv{i};")
        key_eq.append(key_equal(t, f"a->k{i}", f"b->k{i}"))
        hit_key_eq.append(key_equal(t, f"sl->k{i}", f"kv{i}"))
        hash_steps.append(lfta_key_hash_step(t, f"kv{i}", hash32))
        slot_hash_steps.append(lfta_key_hash_step(t, f"s->k{i}", hash32))
    fold_stmts: list[str] = []
    hit_fold: list[str] = []
    udaf_helpers: list[str] = []
    udaf_out: list[str] = []
    udaf_destroy: list[str] = []
    placed: list[str] = []
    for j, a in enumerate(n.accums):
        if a.op == "udaf":
            # a user sub-aggregate (SUBAGGR): the slot keeps its first
            # record's arguments until a second record or its output
            # makes the scratchpad live (INIT, then that first UPDATE); a
            # string argument is a view of the record's bytes, so an
            # aggregate taking one goes live as its slot is filled (placed)
            assert a.udaf is not None
            u, cls = a.udaf, gen.user.udaf(a.udaf, False)
            if Type.STRING in u.params:
                placed.append(f"{fn}_live{j}(s);")
            slot_members += [f"{cls} a{j};", f"uint8_t a{j}_live;"]
            slot_members += [f"{t.c_type} a{j}_x{m};" for m, t in enumerate(u.params)]
            vals = em.user_args(u.params, a.args)
            group_fill.append(f"g.a{j}_live = 0;")
            group_fill += [f"g.a{j}_x{m} = {v};" for m, v in enumerate(vals)]
            first = "".join(f", s->a{j}_x{m}" for m in range(len(u.params)))
            udaf_helpers.append(
                f"static inline void {fn}_live{j}({fn}_slot *s)\n{{\n"
                f"    if (!s->a{j}_live) {{\n        {cls}_init(&s->a{j});\n"
                f"        {cls}_update(&s->a{j}{first});\n        s->a{j}_live = 1;\n"
                f"    }}\n}}")
            from_g = "".join(f", g->a{j}_x{m}" for m in range(len(u.params)))
            fold_stmts += [f"{fn}_live{j}(s);", f"{cls}_update(&s->a{j}{from_g});",
                           f"eject_ |= {cls}_flushme(&s->a{j});"]
            hit_fold += [f"{fn}_live{j}(sl);",
                         f"{cls}_update(&sl->a{j}{''.join(', ' + v for v in vals)});",
                         f"eject_ |= {cls}_flushme(&sl->a{j});"]
            udaf_out += [f"{a.type.c_type} u{j};", f"memset(&u{j}, 0, sizeof u{j});",
                         f"if (why != GSQ_AGG_EJECT_HEARTBEAT) {{ {fn}_live{j}(w_); "
                         f"u{j} = {cls}_output(&w_->a{j}); }}"]
            udaf_destroy.append(f"if (why != GSQ_AGG_EJECT_HEARTBEAT) "
                                f"{cls}_destroy(&w_->a{j});")
            continue
        slot_members.append(f"{a.type.c_type} a{j};")
        val = "1" if a.expr is None else em.as_type(a.expr, a.type)
        group_fill += fold(a.op, a.type, f"g.a{j}", val, True, False)
        fold_stmts += fold(a.op, a.type, f"s->a{j}", f"g->a{j}", False, False)
        hit_fold += fold(a.op, a.type, f"sl->a{j}", val, False, False)
    epoch = []
    hit_epoch_eq: list[str] = []  # a row's temporal keys against the newest epoch's (ep)
    for i in n.epoch_indices:
        e = n.group_by[i][1]
        hit_epoch_eq.append(key_equal(e.info.type, f"ep->k{i}", f"kv{i}"))
        inc = e.info.temporal is Temporal.INCREASING
        epoch.append({"i": i, "later": ">" if inc else "<",
                      "infer": em.as_type(e, e.info.type)})
    if udaf_helpers:
        # a user aggregate may ask its group to leave now (FLUSHME)
        hit_fold = ["int eject_ = 0;", *hit_fold,
                    f"if (eject_) gsq_agg_eject_slot(&st->table, &{fn}_shape, "
                    "(unsigned char *)(void *)sl, node);"]
    # strings only from user sub-aggregates' outputs (keys and built-in
    # accumulators of an LFTA are fixed-size)
    assigns, strs = output_assignments(em, n.output, list(n.select), out_t)
    data.update(udaf_helpers=udaf_helpers, udaf_out=udaf_out, udaf_destroy=udaf_destroy,
                strs=strs, placed=placed)
    data.update(slot_members=slot_members, key_locals=key_locals,
                key_eq=" && ".join(key_eq) or "1", hash_steps=hash_steps,
                slot_hash_steps=slot_hash_steps, hash32=hash32, grow=int(n.table_grows),
                grow_mib=LFTA_TABLE_GROW_MIB,
                group_fill=group_fill, fold=fold_stmts, hit_fold=hit_fold,
                hit_key_eq=" && ".join(hit_key_eq) or "1",
                # the same as 0/1 with no branch (every key compared):
                # a bucket's slots are all tested at once
                hit_key_bits=" & ".join(f"({x})" for x in hit_key_eq) or "1",
                hit_epoch_eq=" && ".join(hit_epoch_eq) or "1",
                epoch=epoch, assigns=assigns, xdp=_xdp(gen, n, fn), table_size=n.table_size,
                ways=n.table_ways,
                disorder=n.disorder, flush=n.flush, constants=em.ctx.constants)
    return finish_lfta(gen, em, "lfta/aggregate.c.j2", data)
