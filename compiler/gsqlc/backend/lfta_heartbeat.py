"""The shape of an LFTA's heartbeats (Johnson et al. 2005, 4.3-4.5, Srivastava & Widom 2004): which
temporal input fields its heartbeat follows, and for each the calls of
runtime_c/lfta/gsq_lfta_heartbeat.h (the algorithm: admission, the largest
value seen, the clock's bound, inference, generated promises) with the
conversions of gsq_time_unit.h from the run's microseconds to the field's
unit.  This module only chooses the calls, by the field's type, unit and
source."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ..frontend import ast
from ..planner.nodes import LftaAggregate, LftaNode, LftaSelect
from ..semantics.schema import Field, Protocol
from ..semantics.types import Temporal
from .cescape import c_identifier
from .lfta_reads import LftaReads, field_var, fields_of

# Accessors whose value follows the capture clock, and their unit
# (gsq_time_unit.h): an idle source's heartbeat may advance them from the
# run's clock less the interface's maximum skew.
_CLOCK_UNIT = {"get_time": "GSQ_UNIT_NSEC_S", "get_timestamp": "GSQ_UNIT_NSEC_US",
               "get_system_time": "GSQ_UNIT_NSEC_S"}
# accessors of the record's own timestamp: the run's generated heartbeats
# (runtime_c/core/heartbeat_gen.c) are in its microseconds
_RECORD_TIME = ("get_time", "get_timestamp")
# the heartbeat state type of a temporal field's C type (gsq_lfta_heartbeat.h)
HB_TYPE = {"uint8_t": "u8", "uint16_t": "u16", "uint32_t": "u32", "int32_t": "i32",
           "uint64_t": "u64", "int64_t": "i64", "double": "f64"}


@dataclass
class LftaHeartbeat:
    """fields: the increasing numeric input fields the temporal output
    reads.  state: the LFTA state's members (one gsq_hb_<t> per field, when
    the heartbeat follows them).  body: the heartbeat function's statements
    computing each field's value (empty: no heartbeat).  unit_nsec: the body
    reads the interface's time_unit.  record_time: every field is the
    record's own time (gsq_lfta_def.hb_record_time).  time_field: the CSV
    column of the record's time (gsq_lfta_def.time_pos), if any."""
    fields: list[str] = field(default_factory=list)
    state: list[str] = field(default_factory=list)
    body: list[str] = field(default_factory=list)
    unit_nsec: bool = False
    record_time: bool = False
    time_field: Optional[str] = None

    def promise(self) -> str:
        """C: the heartbeat is a promise the LFTA keeps (it drops the records
        below it), when every field's bound was promised."""
        if not self.body:
            return "0"
        return " && ".join(f"st->hb_{c_identifier(nm)}.promised" for nm in self.fields)


def heartbeat_exprs(n: LftaNode) -> list[ast.Expr]:
    """The expressions behind n's temporal output, which its heartbeat
    follows: an aggregation's epoch keys, a selection's temporal columns."""
    if isinstance(n, LftaAggregate):
        return [e for i, (_, e) in enumerate(n.group_by) if i in n.epoch_indices]
    assert isinstance(n, LftaSelect)
    return [e for col, (_, e) in zip(n.output.columns, n.select) if col.temporal.is_temporal]


def heartbeat_fields(proto: Protocol, hb_exprs: list[ast.Expr]) -> list[str]:
    """The increasing numeric fields that the temporal outputs read."""
    names: list[str] = []
    for e in hb_exprs:
        for name in fields_of(e):
            f = proto.fields[name]
            if name not in names and f.temporal is Temporal.INCREASING and f.type.is_numeric:
                names.append(name)
    return names


def lfta_follows(proto: Protocol, hb_exprs: list[ast.Expr]) -> bool:
    """Whether an LFTA follows the temporal fields behind its temporal
    outputs hb_exprs (it then has heartbeats): every field they read is an
    increasing numeric one."""
    fields = heartbeat_fields(proto, hb_exprs)
    return bool(hb_exprs) and all(nm in fields for e in hb_exprs for nm in fields_of(e))


def lfta_heartbeat(node_name: str, proto: Protocol, hb_exprs: list[ast.Expr],
                   reads: LftaReads) -> LftaHeartbeat:
    """The heartbeat of an LFTA whose temporal outputs are hb_exprs.  The
    fields it follows are unpacked and admitted before the predicate
    (reads' steps), so a rejected record still advances time."""
    hb = LftaHeartbeat(heartbeat_fields(proto, hb_exprs))
    hb.record_time = bool(hb.fields)
    if not lfta_follows(proto, hb_exprs):
        return hb
    hb.time_field = next((nm for nm in hb.fields if proto.fields[nm].source == "csv"), None)
    for name in hb.fields:
        reads.unpack(name)
        _admit_steps(name, proto.fields[name], reads)
        hb.state.append(f"gsq_hb_{HB_TYPE[proto.fields[name].type.c_type]} hb_{c_identifier(name)};")
        _field_body(hb, node_name, proto, name)
    return hb


def _admit_steps(name: str, f: Field, reads: LftaReads) -> None:
    """A record below a promise is dropped; the largest value admitted is
    kept (and the same with no branch over a block of rows)."""
    var, sfx, ht = field_var(name), c_identifier(name), HB_TYPE[f.type.c_type]
    reads.add_step(f"if (!gsq_hb_{ht}_admits(&st->hb_{sfx}, {var})) "
                   "{ gsq_count(node, GSQ_CNT_SKEW_DROPPED, 1); return; }",
                   mask_step=f"gsq_hb_{ht}_mask_admit(&live_, &drops_, prom_{sfx}, "
                   f"bound_{sfx}, {var});")
    reads.add_step(f"gsq_hb_{ht}_see(&st->hb_{sfx}, {var});",
                   mask_step=f"gsq_hb_{ht}_mask_see(&mx_{sfx}, &any_{sfx}, live_, {var});")


def _field_body(hb: LftaHeartbeat, node_name: str, proto: Protocol, name: str) -> None:
    """The heartbeat's statements computing field `name`'s value into its
    variable; they leave the function when nothing is known yet."""
    f = proto.fields[name]
    ct, var = f.type.c_type, field_var(name)
    ht, state = HB_TYPE[ct], f"&st->hb_{c_identifier(name)}"
    hb.body.append(f"{ct} {var};")
    # The field's unit: the clock accessors' own, a CSV column's its
    # interface's time_unit (unit_nsec, which the template reads)
    clock_unit = _CLOCK_UNIT.get(f.accessor.lower() if f.accessor else "")
    unit = clock_unit or "unit_nsec"
    hb.unit_nsec = hb.unit_nsec or (clock_unit is None and f.source == "csv")
    frac = clock_unit is None and ct == "double"   # a float column: units with a fraction
    # A field of the record's own timestamp follows the run's generated
    # heartbeat (Srivastava & Widom 2004) when there is one: it promises that (in its unit,
    # rounded down) and reports the promise back, so the runtime drops what
    # arrives below it.  (A CSV source's record time is its time column.)
    from_record = (f.accessor is not None and f.accessor.lower() in _RECORD_TIME) \
        or (f.source == "csv" and name == hb.time_field)
    hb.record_time = hb.record_time and from_record
    if from_record:
        conv = (f"gsq_usec_to_units_f64(gen_usec, {unit})" if frac else
                f"({ct})gsq_usec_to_units(gen_usec, {unit})")
        back = (f"gsq_units_f64_to_usec({var}, {unit})" if frac else
                f"gsq_units_to_usec((uint64_t){var}, {unit})")
        hb.body.append(f"if (gen == 0) {{ {var} = gsq_hb_{ht}_promise({state}, {conv}); "
                       f"gsq_heartbeat_promised(node, {back}); }} else {{")
    # Otherwise the heartbeat infers max(largest value seen - the
    # out-of-order bound (Srivastava & Widom 2004, B_ii; rounded up to the field's unit),
    # the clock less the skew, earlier promises).
    if clock_unit is not None:
        hb.body.append(f"if (have_bound) gsq_hb_{ht}_clock({state}, "
                       f"({ct})gsq_usec_to_units(bound_usec, {unit}));")
    if clock_unit is None and f.source != "csv":
        hb.body.append(
            f"if (have_ooo) {{ gsq_node_fail(node, \"out_of_order is set for the "
            f"interface of {node_name}, whose time field {name} (PROTOCOL "
            f"{proto.name}) has no known unit of seconds\"); return; }}")
        ooo = "0"
    else:
        ooo = (f"gsq_usec_to_units_f64(ooo_usec, {unit})" if frac else
               f"gsq_usec_to_units_up(ooo_usec, {unit})")
    hb.body.append(f"if (!gsq_hb_{ht}_infer({state}, have_ooo, {ooo}, &{var})) return;")
    if from_record:
        hb.body.append("}")
