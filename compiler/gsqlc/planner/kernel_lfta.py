"""Kernel LFTAs: which aggregating LFTAs run in the kernel's XDP hook
(gsqlc run --lfta-in-kernel).

Gigascope pushes low-level queries as close to the wire as the hardware
allows, so that only their much smaller output reaches the high-level
queries.  On Linux that place is XDP: a BPF program run by the driver
before the kernel allocates anything for a frame.  An LFTA runs there when
the verifier can take it and the program counts exactly the frames the
LFTA counts in user space:

  - an aggregation over packets (a selection's output is per frame: it
    gains nothing, and the kernel filter already keeps its rejects out);
  - a temporal group-by key `time / N` or `timestamp / N` (N a positive
    integer), whose value is the program's epoch; the other keys, the
    WHERE and the aggregates' arguments integer expressions over header
    fields the program decodes (runtime_c/xdp/xdp_fields.h): no string,
    float, IPv6 address, parameter, interface property, function call,
    signed division, caplen, or time outside the temporal key;
  - aggregates sum, count, min, max, and, or, xor (no user aggregate);
  - it reads srcIP or destIP, or no IP field at all: an IPv6 frame then
    lacks a field it reads and it skips the frame in user space too (the
    program does not walk IPv6 extension headers);
  - one program per interface: the first such LFTA of an interface in plan
    order holds its hook, the others stay in user space.

The rest stays in user space, and explain says why.  The program's table
is the LFTA's direct-mapped table in the kernel: XDP_SLOTS slots per epoch
parity and CPU (the LFTA's table size when a DEFINE or compile(lfta_table_size=)
sets it, from 64 to 65,536; else 16,384: a table is per CPU and a drain reads
every slot of every CPU once per epoch).  backend/xdp_gen.py writes the program.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..frontend import ast
from ..semantics.bound import FieldRef, walk
from ..semantics.schema import Field
from ..semantics.types import Type
from .nodes import DEFAULT_LFTA_TABLE, LftaAggregate, LftaNode, describe_expr
from .plan import Plan

# the accessors the program finds (xdp_fields.h's xf_<accessor>)
XDP_ACCESSORS = frozenset({
    "get_wire_len", "get_eth_src", "get_eth_dst", "get_eth_type", "get_vlan_id",
    "get_ip_version", "get_ip_protocol", "get_ip_len", "get_ip_hdr_length", "get_ip_ttl",
    "get_ip_tos", "get_ip_id", "get_ip_offset", "get_ip_more_fragments",
    "get_ip_dont_fragment", "get_ipv4_src", "get_ipv4_dst", "get_src_port", "get_dst_port",
    "get_tcp_src_port", "get_tcp_dst_port", "get_tcp_seq", "get_tcp_ack", "get_tcp_flags",
    "get_tcp_fin", "get_tcp_syn", "get_tcp_rst", "get_tcp_psh", "get_tcp_ackflag",
    "get_tcp_urg", "get_tcp_window", "get_udp_src_port", "get_udp_dst_port",
    "get_udp_length", "get_icmp_type", "get_icmp_code",
})
# a field every frame has (an LFTA's admission never fails on it)
ALWAYS = frozenset({"get_time", "get_timestamp", "get_caplen", "get_wire_len", "get_vlan_id"})
# fields of the Ethernet header and the frame: an IPv6 frame has them
LINK_LEVEL = frozenset({"get_wire_len", "get_eth_src", "get_eth_dst", "get_eth_type",
                        "get_vlan_id", "get_time", "get_timestamp", "get_caplen"})
IPV4_ONLY = frozenset({"get_ipv4_src", "get_ipv4_dst"})
# nanoseconds per unit of the temporal fields
EPOCH_UNIT_NS = {"get_time": 1_000_000_000, "get_timestamp": 1_000}
INT_TYPES = frozenset({Type.BOOL, Type.USHORT, Type.UINT, Type.INT, Type.ULLONG, Type.LLONG,
                       Type.IP})
_INT_LITERALS = frozenset({"int", "ullong", "bool", "ip", "hex", "lhex"})
_BINARY = frozenset({"+", "-", "*", "/", "%", "&", "|", "<<", ">>", "=", "<>", "!=", "<", ">",
                     "<=", ">=", "and", "or"})
_ACCUM_OPS = frozenset({"sum", "min", "max", "and", "or", "xor"})
DEFAULT_SLOTS = 16384
MIN_SLOTS, MAX_SLOTS = 64, 65536


@dataclass(frozen=True)
class KernelLfta:
    """An LFTA the XDP program runs."""
    node: LftaAggregate
    epoch_index: int          # its temporal group-by key, the program's epoch
    epoch_ns: int             # nanoseconds of one epoch
    slots: int                # XDP_SLOTS
    fields: tuple[Field, ...]  # the protocol's fields the program reads (required first)


@dataclass(frozen=True)
class KernelChoice:
    """Whether a packet LFTA runs in the kernel, and if not, why."""
    node: LftaNode
    kernel: Optional[KernelLfta]
    why_not: str = ""


class _NotInKernel(Exception):
    pass


def _fields(n: LftaNode, e: ast.Expr) -> list[Field]:
    return [n.protocol.fields[x.name] for x in walk(e) if isinstance(x, FieldRef)]


def _check_expr(n: LftaNode, e: ast.Expr, what: str) -> None:
    """Raises _NotInKernel when the program cannot compute e as the LFTA does."""
    for x in walk(e):
        t = x.info.type if x.info is not None else None
        if t is not None and t not in INT_TYPES:
            raise _NotInKernel(f"{what} {describe_expr(e, n)} is of type {t}")
        if isinstance(x, FieldRef):
            f = n.protocol.fields[x.name]
            if f.source != "pcap" or f.accessor not in XDP_ACCESSORS:
                raise _NotInKernel(f"{what} reads {f.name}, which the kernel program does "
                                   "not decode")
        elif isinstance(x, ast.Literal):
            if x.kind not in _INT_LITERALS:
                raise _NotInKernel(f"{what} has the {x.kind} constant {x.text or x.value!r}")
        elif isinstance(x, ast.Binary):
            op = x.op.lower()
            if op not in _BINARY:
                raise _NotInKernel(f"{what} uses the operator {x.op}")
            if op in ("/", "%") and x.info.type.is_signed:
                raise _NotInKernel(f"{what} divides signed integers, which the kernel's "
                                   "BPF instruction set (as clang-14 targets it) cannot")
        elif isinstance(x, ast.Unary):
            if x.op.lower() not in ("-", "~", "not", "!"):
                raise _NotInKernel(f"{what} uses the operator {x.op}")
        elif isinstance(x, ast.Param):
            raise _NotInKernel(f"{what} reads the parameter ${x.name}, which may change "
                               "while the run goes on")
        elif isinstance(x, ast.IfaceParam):
            raise _NotInKernel(f"{what} reads the interface property @{x.name}")
        elif isinstance(x, ast.Call):
            raise _NotInKernel(f"{what} calls {x.name}()")
        elif not isinstance(x, ast.InList):
            raise _NotInKernel(f"{what} is not an expression the kernel program computes")


def _epoch(n: LftaAggregate) -> tuple[int, int]:
    """The temporal key's index and the epoch's nanoseconds."""
    idx = n.epoch_indices
    temporal = [i for i, (_, e) in enumerate(n.group_by) if e.info.temporal.is_temporal]
    if len(idx) != 1 or temporal != idx:
        raise _NotInKernel("it does not group by exactly one temporal key (time/N or "
                           "timestamp/N)")
    e = n.group_by[idx[0]][1]
    div = 1
    if isinstance(e, ast.Binary) and e.op == "/" and isinstance(e.right, ast.Literal) \
            and e.right.kind in _INT_LITERALS and int(e.right.value) > 0:
        div, e = int(e.right.value), e.left
    if not isinstance(e, FieldRef):
        raise _NotInKernel("its temporal key is not time/N or timestamp/N")
    acc = n.protocol.fields[e.name].accessor or ""
    if acc not in EPOCH_UNIT_NS:
        raise _NotInKernel("its temporal key is not time/N or timestamp/N")
    return idx[0], EPOCH_UNIT_NS[acc] * div


def _slots(n: LftaAggregate) -> int:
    if n.table_size == DEFAULT_LFTA_TABLE:
        return DEFAULT_SLOTS
    s = MIN_SLOTS
    while s < n.table_size and s < MAX_SLOTS:
        s *= 2
    return s


def kernel_lfta(n: LftaNode) -> KernelLfta:
    """n as the kernel program runs it; raises _NotInKernel."""
    if not isinstance(n, LftaAggregate):
        raise _NotInKernel("a selection: its output is per frame (the kernel filter keeps "
                           "the frames it rejects out of user space)")
    if n.params:
        raise _NotInKernel("it reads parameters (" + ", ".join(f"${p}" for p in n.params)
                           + "), which may change while the run goes on")
    for a in n.accums:
        if a.op not in _ACCUM_OPS:
            name = a.udaf.name if a.udaf is not None else a.op
            raise _NotInKernel(f"it computes the user aggregate {name}")
    epoch_index, epoch_ns = _epoch(n)
    used: list[Field] = [f for f in n.protocol.fields.values()
                         if f.required and f.source == "pcap" and f.accessor not in ALWAYS]
    for f in used:
        if f.accessor not in XDP_ACCESSORS:
            raise _NotInKernel(f"its PROTOCOL {n.protocol.name} requires {f.name}, which the "
                               "kernel program does not decode")
    for e in n.where:
        _check_expr(n, e, "its WHERE conjunct")
        used += _fields(n, e)
    for i, (name, e) in enumerate(n.group_by):
        if i != epoch_index:
            _check_expr(n, e, f"its group-by key {name} :=")
            used += _fields(n, e)
    for a in n.accums:
        if a.expr is not None:
            _check_expr(n, a.expr, f"its aggregate {a.op} over")
            used += _fields(n, a.expr)
    accessors = {f.accessor for f in used}
    if accessors - LINK_LEVEL and not accessors & IPV4_ONLY:
        raise _NotInKernel("it reads IP fields but neither srcIP nor destIP, so IPv6 frames "
                           "count too, and the kernel program does not walk IPv6 extension "
                           "headers")
    seen: dict[str, Field] = {}
    for f in used:
        seen.setdefault(f.name, f)
    return KernelLfta(n, epoch_index, epoch_ns, _slots(n), tuple(seen.values()))


def plan_kernel_lftas(plan: Plan) -> list[KernelChoice]:
    """The choice for every packet LFTA of the plan, in plan order (empty
    unless the plan was made for kernel LFTAs)."""
    if not plan.lfta_in_kernel:
        return []
    out: list[KernelChoice] = []
    holder: dict[str, str] = {}
    for n in plan.nodes:
        if not isinstance(n, LftaNode) or n.protocol.source_kind != "pcap":
            continue
        iface = n.iface or "default"
        try:
            k = kernel_lfta(n)
        except _NotInKernel as e:
            out.append(KernelChoice(n, None, str(e)))
            continue
        if iface in holder:
            out.append(KernelChoice(n, None, f"LFTA {holder[iface]} holds the XDP hook of "
                                             f"interface {iface} (one program per interface)"))
            continue
        holder[iface] = n.name
        out.append(KernelChoice(n, k))
    return out


def explain_lines(plan: Plan) -> list[str]:
    """explain's account of the kernel LFTAs (--lfta-in-kernel)."""
    choices = plan_kernel_lftas(plan)
    if not choices:
        return []
    lines = ["kernel LFTAs (--lfta-in-kernel: the XDP hook of a live interface):"]
    for c in choices:
        if c.kernel is None:
            lines.append(f"    {c.node.name}: stays in user space: {c.why_not}")
            continue
        k = c.kernel
        key = c.kernel.node.group_by[k.epoch_index][0]
        lines.append(f"    {c.node.name} on interface {c.node.iface or 'default'}: in the kernel; "
                     f"epoch {key} = {k.epoch_ns:,} ns, {k.slots:,} slots per epoch parity and "
                     f"CPU; reads " + ", ".join(f.name for f in k.fields))
    lines.append("")
    return lines
