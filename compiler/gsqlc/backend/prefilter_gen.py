"""The prefilters as C (planner/prefilter.py decides what each holds):
prefilter.h (each prefilter's admission classes) and prefilter.c (its
run(): a batch of records, each admitted once per class, each predicate
evaluated once, each member's bit from its signature), and in each
member LFTA its gsq_lfta_prefilter (clean() and skipped(), which read
and update its heartbeat state from its class's statistics).

An admission class is what LFTAs share before their predicates: the
records one PROTOCOL admits (its required fields readable) and the
temporal fields their heartbeats follow; its statistics over a batch are
the records admitted and each field's least and largest value.  A
record whose heartbeat field (not a required one) is missing goes to
every member of the class, which counts it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..frontend import ast
from ..planner.nodes import LftaAggregate, LftaNode
from ..planner.prefilter import CHEAP_TYPES, Prefilter, plan_prefilters
from ..semantics.bound import FieldRef
from ..semantics.schema import Protocol
from .cescape import c_comment, c_identifier, c_string
from .cexpr import CEmitter, EmitContext
from .gen_shared import GenContext, TemplateData
from .lfta_heartbeat import HB_TYPE, heartbeat_exprs, lfta_heartbeat
from .lfta_reads import LftaReads, field_var, fields_of


@dataclass(frozen=True)
class _Class:
    protocol: Protocol
    hb_fields: tuple[str, ...]


def _hb_fields(n: LftaNode) -> tuple[str, ...]:
    """The fields n's accept() admits and sees before its predicates."""
    reads = LftaReads(n.protocol)
    hb = lfta_heartbeat(n.name, n.protocol, heartbeat_exprs(n), reads)
    return tuple(hb.fields) if hb.state else ()


class PrefilterSet:
    """The plan's prefilters, their classes, and each member's place."""

    def __init__(self, gen: GenContext):
        self.prefilters = plan_prefilters(gen.plan)
        self.classes: list[list[_Class]] = []
        self.place: dict[str, tuple[int, int, int]] = {}   # LFTA -> (prefilter, bit, class)
        for i, pf in enumerate(self.prefilters):
            classes: list[_Class] = []
            for m in pf.members:
                c = _Class(m.lfta.protocol, _hb_fields(m.lfta))
                if c not in classes:
                    classes.append(c)
                self.place[m.lfta.name] = (i, m.bit, classes.index(c))
            self.classes.append(classes)

    def lfta_hooks(self, n: LftaNode, fn: str, state_t: str) -> Optional[TemplateData]:
        """The template data of n's gsq_lfta_prefilter (None: no prefilter)."""
        if n.name not in self.place:
            return None
        i, bit, k = self.place[n.name]
        c = self.classes[i][k]
        cls_t = f"pf_{i}_c{k}"
        clean, seen = [], []
        for name in c.hb_fields:
            f = c.protocol.fields[name]
            ht, sfx = HB_TYPE[f.type.c_type], c_identifier(name)
            clean.append(f"if (c->n && st->hb_{sfx}.promised && c->lo_{sfx} < st->hb_{sfx}.bound) "
                         "return 0;")
            if f.type.c_type == "double":   # a NaN orders with nothing: give it every record
                clean.append(f"if (c->nan_{sfx}) return 0;")
            seen.append(f"if (c->n) gsq_hb_{ht}_see(&st->hb_{sfx}, c->hi_{sfx});")
        if isinstance(n, LftaAggregate):
            seen.append("st->table.n_offered += n_skipped; /* weighs the table's growth */")
        return {"cls_t": cls_t, "def": f"pf_{i}_def", "bit": bit,
                "classes_t": f"pf_{i}_classes", "member": f"c{k}",
                "clean": clean, "seen": seen,
                "comment": c_comment(f"bit {bit} of the prefilter of interface "
                                     f"{self.prefilters[i].iface}")}

    def files(self, gen: GenContext) -> dict[str, str]:
        """prefilter.h and prefilter.c (none when the plan has no prefilter)."""
        if not self.prefilters:
            return {}
        pfs = [_prefilter_data(i, pf, self.classes[i],
                               [self.place[m.lfta.name][2] for m in pf.members])
               for i, pf in enumerate(self.prefilters)]
        data = {"prefilters": pfs,
                "pcap": any(c.protocol.source_kind == "pcap" for cs in self.classes for c in cs)}
        return {"prefilter.h": gen.render("prefilter.h.j2", data),
                "prefilter.c": gen.render("prefilter.c.j2", data)}


def _avail_read(reads: LftaReads, name: str) -> str:
    """Field `name` read into its variable, a_<name> set when the record
    has it."""
    return f"do {{ {reads.read_step(name, 'break;')} a_{c_identifier(name)} = 1; }} while (0);"


def _emitter(prefix: str) -> CEmitter:
    """C of a prefilterable predicate: fields from their variables (nothing
    else is there to resolve)."""
    def resolve(e: ast.Expr) -> Optional[str]:
        return field_var(e.name) if isinstance(e, FieldRef) else None

    def no_param(p: str) -> str:
        raise AssertionError(f"a prefilter predicate reads parameter {p}")

    return CEmitter(EmitContext(resolve, no_param, cxx=False, const_prefix=prefix))


def _prefilter_data(i: int, pf: Prefilter, classes: list[_Class],
                    class_of: list[int]) -> TemplateData:
    """The template data of prefilter i; class_of[b]: member b's class."""
    em = _emitter(f"pf_{i}_k")
    out_classes = []
    for k, c in enumerate(classes):
        proto = c.protocol
        reads = LftaReads(proto)
        members = [m for m in pf.members if class_of[m.bit] == k]
        preds = sorted({p for m in members for p in m.signature})
        pred_fields = list(dict.fromkeys(
            nm for p in preds for nm in fields_of(pf.predicates[p].expr)))
        required = [nm for nm, f in proto.fields.items() if f.required]
        names = list(dict.fromkeys(required + list(c.hb_fields) + pred_fields))
        # scalars start at 0 (a predicate may read one its record lacks);
        # the others (strings, IPv6) are only ever written
        decls = [f"{proto.fields[nm].type.c_type} {field_var(nm)}"
                 + (" = 0;" if proto.fields[nm].type in CHEAP_TYPES else ";") for nm in names]
        admit = [reads.read_step(nm, "break;") for nm in required]
        hb_reads = [_avail_read(reads, nm) for nm in c.hb_fields if not proto.fields[nm].required]
        hb_missing = " || ".join(f"!a_{c_identifier(nm)}" for nm in c.hb_fields
                                 if not proto.fields[nm].required)
        stats = []
        for nm in c.hb_fields:
            v, sfx = field_var(nm), c_identifier(nm)
            stats.append(f"if (!cl->n || {v} < cl->lo_{sfx}) cl->lo_{sfx} = {v};")
            stats.append(f"if (!cl->n || {v} > cl->hi_{sfx}) cl->hi_{sfx} = {v};")
            if proto.fields[nm].type.c_type == "double":
                stats.append(f"if ({v} != {v}) cl->nan_{sfx} = 1;")
        field_reads = [_avail_read(reads, nm) for nm in pred_fields
                       if not proto.fields[nm].required]
        avail = {nm: ("1" if proto.fields[nm].required else f"a_{c_identifier(nm)}")
                 for nm in pred_fields}
        evals = []
        for p in preds:
            e = pf.predicates[p].expr
            text = em.expr(e)
            a = " && ".join(dict.fromkeys(avail[nm] for nm in fields_of(e))) or "1"
            evals.append((p, c_comment(pf.predicates[p].text), a, text))
        bits = []
        for m in members:
            terms: list[str] = []
            prefix: list[str] = []
            for s in m.signature:
                terms.append("(" + " & ".join(prefix + [f"f{s}"]) + ")" if prefix else f"f{s}")
                prefix.append(f"t{s}")
            bits.append((m.bit, c_comment(m.lfta.name), " | ".join(terms) or "0"))
        out_classes.append({
            "k": k, "comment": c_comment(f"class {k}: PROTOCOL {proto.name}" + (
                f", following {', '.join(c.hb_fields)}" if c.hb_fields else "")),
            "hb": [(c_identifier(nm), proto.fields[nm].type.c_type) for nm in c.hb_fields],
            "decls": decls, "admit": admit,
            "flags": [f"uint8_t a_{c_identifier(nm)} = 0;" for nm in names
                      if not proto.fields[nm].required],
            "hb_reads": hb_reads, "hb_missing": hb_missing,
            "all_bits": " | ".join(f"((uint64_t)1 << {m.bit})" for m in members),
            "stats": stats, "field_reads": field_reads, "evals": evals, "bits": bits,
        })
    return {"i": i, "iface": c_string(pf.iface), "constants": em.ctx.constants,
            "iface_comment": c_comment(f"the prefilter of interface {pf.iface}"),
            "n_bits": len(pf.members), "classes": out_classes}
