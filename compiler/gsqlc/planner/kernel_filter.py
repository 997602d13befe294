"""The kernel filter of each live interface: a classic BPF program, derived
from the LFTAs reading the interface, that gsqlc's AF_PACKET reader
(runtime_c/sources/afpacket.c) attaches as its socket filter, so that a
frame no query wants never leaves the kernel.

It keeps a frame when, for some LFTA of the interface, the frame passes
the LFTA's admission (its PROTOCOL's required fields available, as the
accessors of runtime_c/include/gsq_packet.h find them) and the leading run
of its WHERE conjuncts the filter expresses.  Soundness is the rule: the
filter drops only a frame that every LFTA of the interface would reject
silently, and keeps whatever it cannot decide:

  - an LFTA reads each conjunct's fields before evaluating it and counts a
    frame lacking one (field_unavailable): such a frame is kept;
  - the run stops at the first conjunct the filter cannot express (a
    parameter, which may change while the run goes on, an interface
    property, a call, a division, arithmetic that may overflow, a field
    whose value the kernel cannot compute such as caplen or time): what
    follows it is not used, since that conjunct's own fields, read before
    the later ones, may be unavailable (and counted);
  - frames with an 802.1Q/802.1ad tag (inline, or taken off by the
    kernel), frames shorter than an Ethernet header, and IPv6 frames for
    every field that depends on the IPv6 decoding are kept;
  - an LFTA with no check at all (a PROTOCOL admitting every frame and no
    expressible conjunct), an LFTA of a PROTOCOL whose admission reads the
    clock, or a program too long for classic BPF makes the filter keep
    every frame (no program).

A frame the filter drops never reaches the LFTAs, so it does not advance
the largest packet time an LFTA has seen (its heartbeats and the closing
of its epochs then follow the frames it keeps and the run's clock): the
rows are those of the same run without the filter; the run's counters of
frames read are smaller by the frames the kernel filtered.

The program is for Ethernet frames (link type EN10MB: an Ethernet or
loopback interface) as the socket filter sees them: from the Ethernet
header on, `len` the frame's length.  Accept returns are RET #0xffffffff,
which the reader replaces by its snapshot length; the reader attaches the
program only when its snapshot length is at least MIN_SNAPLEN (the bytes
the decoding of every field here depends on), so that a field is
available to the accessors exactly when the program finds it.

FIELDS maps each packet accessor (packet_schema.txt) to where the program
finds it; planner/prefilter.py decides which conjuncts are cheap enough
(its `prefilterable`), and backend/kernel_filter_gen.py writes the
program as C."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional, Union

from ..frontend import ast
from ..semantics.bound import FieldRef, walk
from ..semantics.schema import PACKET_ACCESSORS, Field, Protocol
from ..semantics.types import Type
from .nodes import LftaAggregate, LftaNode, LftaSelect, describe_expr
from .plan import Plan
from .prefilter import prefilterable

# ---- classic BPF (linux/filter.h) -------------------------------------

LD_W_ABS, LD_H_ABS, LD_B_ABS = 0x20, 0x28, 0x30
LD_W_IND, LD_H_IND, LD_B_IND = 0x40, 0x48, 0x50
LD_W_LEN, LD_IMM, LD_MEM, LDX_MEM, LDX_MSH = 0x80, 0x00, 0x60, 0x61, 0xb1
ST = 0x02
ALU_ADD_K, ALU_SUB_K, ALU_AND_K, ALU_OR_K = 0x04, 0x14, 0x54, 0x44
ALU_LSH_K, ALU_RSH_K, ALU_AND_X, ALU_OR_X = 0x64, 0x74, 0x5c, 0x4c
JA, JEQ_K, JGT_K, JGE_K, JSET_K = 0x05, 0x15, 0x25, 0x35, 0x45
JEQ_X, JGT_X, JGE_X = 0x1d, 0x2d, 0x3d
RET_K = 0x06
SKF_AD_OFF = 0xFFFFF000          # -0x1000 as a 32-bit k
SKF_AD_VLAN_TAG_PRESENT = 48

ACCEPT = 0xFFFFFFFF              # RET k of a kept frame (the reader: its snap length)
MAX_INSNS = 4096                 # BPF_MAXINSNS
MIN_SNAPLEN = 96                 # Ethernet 14 + IPv4 header up to 60 + TCP 20, rounded up
SCRATCH = 16                     # BPF_MEMWORDS

Insn = tuple[int, int, int, int]   # (code, jt, jf, k), as struct sock_filter


class Label:
    """A place in a program under assembly."""


@dataclass
class _Op:
    code: int
    k: int = 0
    jt: Optional[Label] = None
    jf: Optional[Label] = None


class TooFar(Exception):
    """A conditional jump past 255 instructions (or a program too long)."""


class _Asm:
    """A program being written: instructions and labels, jumps by label."""

    def __init__(self) -> None:
        self.items: list[Union[_Op, Label]] = []

    def op(self, code: int, k: int = 0, jt: Optional[Label] = None,
           jf: Optional[Label] = None) -> None:
        self.items.append(_Op(code, k & 0xFFFFFFFF, jt, jf))

    def jump(self, code: int, k: int, jt: Label, jf: Label) -> None:
        self.op(code, k, jt, jf)

    def ja(self, to: Label) -> None:
        self.op(JA, 0, to, None)

    def place(self, label: Label) -> None:
        self.items.append(label)

    def _drop_idle_jumps(self) -> None:
        """A ja to the label right after it (only labels between) goes."""
        keep: list[Union[_Op, Label]] = []
        for i, it in enumerate(self.items):
            if isinstance(it, _Op) and it.code == JA:
                j = i + 1
                while j < len(self.items) and isinstance(self.items[j], Label):
                    if self.items[j] is it.jt:
                        break
                    j += 1
                else:
                    keep.append(it)
                    continue
                continue
            keep.append(it)
        self.items = keep

    def assemble(self) -> list[Insn]:
        self._drop_idle_jumps()
        at: dict[int, int] = {}
        pos = 0
        for it in self.items:
            if isinstance(it, Label):
                at[id(it)] = pos
            else:
                pos += 1
        out: list[Insn] = []
        for it in self.items:
            if isinstance(it, Label):
                continue
            here = len(out)

            def off(lb: Optional[Label]) -> int:
                if lb is None:
                    return 0
                d = at[id(lb)] - here - 1
                assert d >= 0, "backward jump"
                return d
            if it.code == JA:
                out.append((JA, 0, 0, off(it.jt)))
                continue
            jt, jf = off(it.jt), off(it.jf)
            if jt > 255 or jf > 255:
                raise TooFar()
            out.append((it.code, jt, jf, it.k))
        # a jump to the end of the program would leave it without a return
        assert all(at[k] < len(out) for k in at), "a label past the last instruction"
        return out


# ---- where the fields are (the accessors of gsq_packet.h) ------------

ETH_IPV4, ETH_IPV6 = 0x0800, 0x86DD


@dataclass(frozen=True)
class Avail:
    """When an accessor finds its field, over an untagged Ethernet frame of
    at least 14 bytes: `ip` -- "": always; "ip": an IPv4 header (IPv6:
    unknown, kept); "ipv4": an IPv4 header (IPv6: unavailable);
    "ipv6": unknown for an IPv6 frame, else unavailable; "l4": the
    transport header of a protocol in `protos` (IPv4, not a later
    fragment, its fixed part of `need` bytes captured and inside the
    datagram, as gsq_pkt__decode_l4; IPv6: unknown)."""
    ip: str = ""
    protos: tuple[int, ...] = ()


# value: the BPF code loading the field into A once it is available
# (X free to use), or None when the kernel cannot compute it exactly
Load = Optional[Callable[[_Asm], None]]


def _abs(code: int, k: int, *alu: tuple[int, int]) -> Load:
    def emit(a: _Asm) -> None:
        a.op(code, k)
        for c, v in alu:
            a.op(c, v)
    return emit


def _l4(code: int, k: int, *alu: tuple[int, int]) -> Load:
    """A load at offset k of the transport header (X: 4 * IHL)."""
    def emit(a: _Asm) -> None:
        a.op(LDX_MSH, 14)
        a.op(code, 14 + k)
        for c, v in alu:
            a.op(c, v)
    return emit


def _ip_len(a: _Asm) -> None:
    # the total length; 0 (TSO): the wire length from the IP header on
    done, zero = Label(), Label()
    a.op(LD_H_ABS, 16)
    a.jump(JEQ_K, 0, zero, done)
    a.place(zero)
    a.op(LD_W_LEN)
    a.op(ALU_SUB_K, 14)
    a.place(done)


def _const(v: int) -> Load:
    return _abs(LD_IMM, v)


def _flag(bit: int) -> Load:
    return _l4(LD_B_IND, 13, (ALU_AND_K, 1 << bit), (ALU_RSH_K, bit))


_TCP, _UDP, _ICMP = (6,), (17,), (1,)
FIELDS: dict[str, tuple[Avail, Load]] = {
    # PKT: the frame's length is `len` (caplen depends on the snap length,
    # time on the kernel's stamp: neither is known to the program)
    "get_time": (Avail(), None),
    "get_timestamp": (Avail(), None),
    "get_caplen": (Avail(), None),
    "get_wire_len": (Avail(), _abs(LD_W_LEN, 0)),
    # ETH (untagged: the program keeps tagged frames)
    "get_eth_src": (Avail(), None),
    "get_eth_dst": (Avail(), None),
    "get_eth_type": (Avail(), _abs(LD_H_ABS, 12)),
    "get_vlan_id": (Avail(), _const(0)),
    # IP: IPv4 at offset 14 (IPv6 frames are kept)
    "get_ip_version": (Avail("ip"), _const(4)),
    "get_ip_protocol": (Avail("ip"), _abs(LD_B_ABS, 23)),
    "get_ip_len": (Avail("ip"), _ip_len),
    "get_ip_hdr_length": (Avail("ip"), _abs(LD_B_ABS, 14, (ALU_AND_K, 0xF), (ALU_LSH_K, 2))),
    "get_ip_ttl": (Avail("ip"), _abs(LD_B_ABS, 22)),
    "get_ip_tos": (Avail("ip"), _abs(LD_B_ABS, 15)),
    "get_ip_id": (Avail("ip"), _abs(LD_H_ABS, 18)),
    "get_ip_offset": (Avail("ip"), _abs(LD_H_ABS, 20, (ALU_AND_K, 0x1FFF))),
    "get_ip_more_fragments": (Avail("ip"), _abs(LD_H_ABS, 20, (ALU_AND_K, 0x2000),
                                                (ALU_RSH_K, 13))),
    "get_ip_dont_fragment": (Avail("ip"), _abs(LD_H_ABS, 20, (ALU_AND_K, 0x4000),
                                               (ALU_RSH_K, 14))),
    # gsq_pkt__u32: the address's 4 bytes in network order, as BPF loads them
    "get_ipv4_src": (Avail("ipv4"), _abs(LD_W_ABS, 26)),
    "get_ipv4_dst": (Avail("ipv4"), _abs(LD_W_ABS, 30)),
    "get_ipv6_src": (Avail("ipv6"), None),
    "get_ipv6_dst": (Avail("ipv6"), None),
    "get_src_port": (Avail("l4", (6, 17)), _l4(LD_H_IND, 0)),
    "get_dst_port": (Avail("l4", (6, 17)), _l4(LD_H_IND, 2)),
    "get_tcp_src_port": (Avail("l4", _TCP), _l4(LD_H_IND, 0)),
    "get_tcp_dst_port": (Avail("l4", _TCP), _l4(LD_H_IND, 2)),
    "get_tcp_seq": (Avail("l4", _TCP), _l4(LD_W_IND, 4)),
    "get_tcp_ack": (Avail("l4", _TCP), _l4(LD_W_IND, 8)),
    "get_tcp_flags": (Avail("l4", _TCP), _l4(LD_B_IND, 13)),
    "get_tcp_fin": (Avail("l4", _TCP), _flag(0)),
    "get_tcp_syn": (Avail("l4", _TCP), _flag(1)),
    "get_tcp_rst": (Avail("l4", _TCP), _flag(2)),
    "get_tcp_psh": (Avail("l4", _TCP), _flag(3)),
    "get_tcp_ackflag": (Avail("l4", _TCP), _flag(4)),
    "get_tcp_urg": (Avail("l4", _TCP), _flag(5)),
    "get_tcp_window": (Avail("l4", _TCP), _l4(LD_H_IND, 14)),
    "get_tcp_data_length": (Avail("l4", _TCP), None),
    "get_tcp_data": (Avail("l4", _TCP), None),
    "get_udp_src_port": (Avail("l4", _UDP), _l4(LD_H_IND, 0)),
    "get_udp_dst_port": (Avail("l4", _UDP), _l4(LD_H_IND, 2)),
    "get_udp_length": (Avail("l4", _UDP), _l4(LD_H_IND, 4)),
    "get_udp_data": (Avail("l4", _UDP), None),
    "get_icmp_type": (Avail("l4", _ICMP), _l4(LD_B_IND, 14)),
    "get_icmp_code": (Avail("l4", _ICMP), _l4(LD_B_IND, 15)),
}
_NEED = {6: 20, 17: 8, 1: 4}       # gsq_pkt__decode_l4: the fixed header's bytes
_VALUE_TYPES = {Type.BOOL, Type.USHORT, Type.UINT, Type.IP}


def _implies(p: Avail, q: Avail) -> bool:
    """Whether a field found per p is proof that one per q is found."""
    if p == q or not q.ip:
        return True
    if q.ip in ("ip", "ipv4"):
        return p.ip in ("ip", "ipv4", "l4")
    return q.ip == "l4" and p.ip == "l4" and set(p.protos) <= set(q.protos)


def _always(f: Field) -> bool:
    """Whether the program finds field f in every frame it decides."""
    spec = FIELDS.get(f.accessor or "") if f.source == "pcap" else None
    return spec is not None and not spec[0].ip


def _emit_avail(a: _Asm, av: Avail, ok: Label, absent: Label, unknown: Label) -> None:
    """Jump to ok when the accessor finds its field, absent when it does
    not, unknown when the program cannot tell."""
    if not av.ip:
        a.ja(ok)
        return
    v4 = Label()
    a.op(LD_H_ABS, 12)
    if av.ip == "ipv4":
        a.jump(JEQ_K, ETH_IPV4, v4, absent)
    else:
        not_v6 = Label()
        a.jump(JEQ_K, ETH_IPV6, unknown, not_v6)
        a.place(not_v6)
        a.jump(JEQ_K, ETH_IPV4, absent if av.ip == "ipv6" else v4, absent)
    a.place(v4)
    if av.ip == "ipv6":
        return
    # decode_ipv4: 20 bytes captured, version 4, IHL at least 5
    c1, c2, c3 = Label(), Label(), Label()
    a.op(LD_W_LEN)
    a.jump(JGE_K, 34, c1, absent)
    a.place(c1)
    a.op(LD_B_ABS, 14)
    a.op(ALU_RSH_K, 4)
    a.jump(JEQ_K, 4, c2, absent)
    a.place(c2)
    a.op(LD_B_ABS, 14)
    a.op(ALU_AND_K, 0xF)
    a.jump(JGE_K, 5, c3, absent)
    a.place(c3)
    if av.ip == "l4":
        _emit_l4(a, av, ok, absent)
    else:
        a.ja(ok)


def _emit_l4(a: _Asm, av: Avail, ok: Label, absent: Label) -> None:
    """The transport header of one of av.protos, given a valid IPv4 header:
    not a later fragment, and per protocol (need n bytes, X = IHL * 4):
    len >= 14 + IHL + n and (total < IHL or total >= IHL + n)."""
    first = Label()
    a.op(LD_H_ABS, 20)
    a.jump(JSET_K, 0x1FFF, absent, first)
    a.place(first)
    for i, p in enumerate(av.protos):
        n = _NEED[p]
        here, other = Label(), Label()
        last = i == len(av.protos) - 1
        a.op(LD_B_ABS, 23)
        a.jump(JEQ_K, p, here, absent if last else other)
        a.place(here)
        c1, c2, c3, c4 = Label(), Label(), Label(), Label()
        a.op(LDX_MSH, 14)
        a.op(LD_W_LEN)
        a.jump(JGE_K, 14 + n, c1, absent)
        a.place(c1)
        a.op(ALU_SUB_K, 14 + n)
        a.jump(JGE_X, 0, c2, absent)          # len - 14 - n >= IHL
        a.place(c2)
        a.op(LD_H_ABS, 16)
        a.jump(JGE_X, 0, c3, ok)              # total < IHL: the captured bytes decide
        a.place(c3)
        a.jump(JGE_K, n, c4, absent)
        a.place(c4)
        a.op(ALU_SUB_K, n)
        a.jump(JGE_X, 0, ok, absent)          # total - n >= IHL
        if not last:
            a.place(other)


# ---- expressions ---------------------------------------------------------

class NotExpressible(Exception):
    pass


def _literal(e: ast.Expr) -> Optional[int]:
    if isinstance(e, ast.Literal):
        v = e.value
        if isinstance(v, bool):
            return int(v)
        if isinstance(v, int) and 0 <= v <= 0xFFFFFFFF and e.kind not in ("string", "ipv6"):
            return v
        raise NotExpressible()
    return None


def _typed(e: ast.Expr) -> None:
    info = getattr(e, "info", None)
    if info is None or info.type not in _VALUE_TYPES:
        raise NotExpressible()


class _Expr:
    """A conjunct's code: its value in A, its truth as jumps."""

    def __init__(self, a: _Asm, proto: Protocol):
        self.a, self.proto = a, proto
        self.depth = 0

    def value(self, e: ast.Expr) -> None:
        lit = _literal(e)
        if lit is not None:
            self.a.op(LD_IMM, lit)
            return
        _typed(e)
        if isinstance(e, FieldRef):
            f = self.proto.fields[e.name]
            spec = FIELDS.get(f.accessor or "")
            if spec is None or spec[1] is None or PACKET_ACCESSORS.get(f.accessor or "") != f.type:
                raise NotExpressible()
            spec[1](self.a)
            return
        if isinstance(e, ast.Binary) and e.op in ("&", "|"):
            k = _literal(e.right)
            if k is not None:
                self.value(e.left)
                self.a.op(ALU_AND_K if e.op == "&" else ALU_OR_K, k)
                return
            if self.depth >= SCRATCH:
                raise NotExpressible()
            slot = self.depth
            self.depth += 1
            self.value(e.right)
            self.a.op(ST, slot)
            self.value(e.left)
            self.a.op(LDX_MEM, slot)
            self.a.op(ALU_AND_X if e.op == "&" else ALU_OR_X)
            self.depth -= 1
            return
        raise NotExpressible()

    def cond(self, e: ast.Expr, t: Label, f: Label) -> None:
        a = self.a
        if isinstance(e, ast.Binary):
            op = e.op.lower()
            if op in ("and", "or"):
                mid = Label()
                if op == "and":
                    self.cond(e.left, mid, f)
                else:
                    self.cond(e.left, t, mid)
                a.place(mid)
                self.cond(e.right, t, f)
                return
            if op in ("=", "<>", "!=", "<", "<=", ">", ">="):
                self._compare(op, e.left, e.right, t, f)
                return
        if isinstance(e, ast.Unary) and e.op.lower() in ("not", "!"):
            self.cond(e.operand, f, t)
            return
        lit = _literal(e)
        if lit is not None and isinstance(e, ast.Literal) and isinstance(e.value, bool):
            a.ja(t if lit else f)
            return
        if getattr(getattr(e, "info", None), "type", None) is Type.BOOL:
            self.value(e)
            a.jump(JEQ_K, 0, f, t)
            return
        raise NotExpressible()

    def _compare(self, op: str, left: ast.Expr, right: ast.Expr, t: Label, f: Label) -> None:
        a = self.a
        for side in (left, right):
            if _literal(side) is None:
                _typed(side)
        kr, kl = _literal(right), _literal(left)
        if kr is None and kl is not None:    # a constant on the left: mirror
            left, right, kr = right, left, kl
            op = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}.get(op, op)
        if kr is not None:
            self.value(left)
            code, k = {"=": (JEQ_K, kr), "<>": (JEQ_K, kr), "!=": (JEQ_K, kr),
                       ">": (JGT_K, kr), ">=": (JGE_K, kr), "<": (JGE_K, kr),
                       "<=": (JGT_K, kr)}[op]
        else:
            if self.depth >= SCRATCH:
                raise NotExpressible()
            slot = self.depth
            self.depth += 1
            self.value(right)
            a.op(ST, slot)
            self.value(left)
            a.op(LDX_MEM, slot)
            self.depth -= 1
            code, k = {"=": JEQ_X, "<>": JEQ_X, "!=": JEQ_X, ">": JGT_X, ">=": JGE_X,
                       "<": JGE_X, "<=": JGT_X}[op], 0
        if op in ("<>", "!=", "<", "<="):
            a.jump(code, k, f, t)
        else:
            a.jump(code, k, t, f)


# ---- the analysis ----------------------------------------------------------

@dataclass
class LftaPart:
    """One LFTA's share of the filter: the conjuncts the program checks
    after its admission, and why it stops where it does."""
    lfta: LftaNode
    conjuncts: list[ast.Expr]
    texts: list[str]
    stopped: str = ""          # why the next conjunct is not checked ("": none left)
    admits_all: bool = False   # no check at all: the filter keeps every frame


@dataclass
class KernelFilter:
    iface: str
    program: Optional[list[Insn]]
    why: str = ""                       # program None: why it keeps every frame
    parts: list[LftaPart] = field(default_factory=list)


def _fields_in_order(e: ast.Expr) -> list[str]:
    return list(dict.fromkeys(x.name for x in walk(e) if isinstance(x, FieldRef)))


def _emit_lfta(a: _Asm, n: LftaNode, conjuncts: list[ast.Expr], nxt: Label) -> None:
    """n's block: its admission (a required field absent: the LFTA rejects
    the frame silently, on to nxt), its temporal fields that are not
    required, then each conjunct's fields (absent: counted, kept) and
    truth (false: rejected, on to nxt); past the last, kept."""
    acc = Label()
    proto = n.protocol
    seen: set[str] = set()
    proven: list[Avail] = []   # established on the block's path so far

    def avail(name: str, absent: Label) -> None:
        f = proto.fields[name]
        spec = FIELDS.get(f.accessor or "") if f.source == "pcap" else None
        if spec is None:
            a.ja(acc)
            return
        seen.add(name)
        if any(_implies(p, spec[0]) for p in proven):
            return
        ok = Label()
        _emit_avail(a, spec[0], ok, absent, acc)
        a.place(ok)
        proven.append(spec[0])

    # the strongest admission check first: it proves the weaker ones
    order = {"l4": 0, "ipv4": 1, "ip": 2, "ipv6": 3}
    required = sorted((nm for nm, f in proto.fields.items() if f.required and not _always(f)),
                      key=lambda nm: order.get(FIELDS[proto.fields[nm].accessor or ""][0].ip
                                               if proto.fields[nm].accessor in FIELDS else "", 9))
    for name in required:
        avail(name, nxt)
    for name, f in proto.fields.items():
        if f.temporal.is_temporal and not f.required:
            avail(name, acc)
    for c in conjuncts:
        for name in _fields_in_order(c):
            if name not in seen and not proto.fields[name].required:
                avail(name, acc)
        t = Label()
        _Expr(a, proto).cond(c, t, nxt)
        a.place(t)
    a.place(acc)
    a.op(RET_K, ACCEPT)


def _block(n: LftaNode, conjuncts: list[ast.Expr]) -> list[Union[_Op, Label]]:
    """The items of n's block (ending at a label placed by the caller)."""
    a = _Asm()
    nxt = Label()
    _emit_lfta(a, n, conjuncts, nxt)
    a.place(nxt)
    a.op(RET_K, 0)
    a.assemble()                                   # TooFar, NotExpressible
    return a.items[:-2] + [nxt]


def _part(n: LftaNode) -> LftaPart:
    proto = n.protocol
    conj: list[ast.Expr] = []
    texts: list[str] = []
    stopped = ""
    for c in n.where:
        text = describe_expr(c, n)
        if not prefilterable(c, proto):
            stopped = f"{text}: reads what the kernel does not see (parameter, call, division...)"
            break
        try:
            _block(n, conj + [c])
        except NotExpressible:
            stopped = f"{text}: not expressible in the kernel"
            break
        except TooFar:
            stopped = f"{text}: the program would be too long"
            break
        conj.append(c)
        texts.append(text)
    checks = any(f.required and not _always(f) for f in proto.fields.values())
    return LftaPart(n, conj, texts, stopped, admits_all=not conj and not checks)


def _admission_checkable(proto: Protocol) -> bool:
    return proto.source_kind == "pcap" and all(
        f.source == "pcap" for f in proto.fields.values() if f.required)


def _prologue(a: _Asm, body: Label) -> None:
    """Frames the body does not decide, kept: a VLAN tag the kernel took
    off, fewer than 14 bytes, an inline 802.1Q / 802.1ad tag."""
    keep, c1, c2, c3, c4 = Label(), Label(), Label(), Label(), Label()
    a.op(LD_W_ABS, SKF_AD_OFF + SKF_AD_VLAN_TAG_PRESENT)
    a.jump(JEQ_K, 0, c1, keep)
    a.place(c1)
    a.op(LD_W_LEN)
    a.jump(JGE_K, 14, c2, keep)
    a.place(c2)
    a.op(LD_H_ABS, 12)
    a.jump(JEQ_K, 0x8100, keep, c3)
    a.place(c3)
    a.jump(JEQ_K, 0x88A8, keep, c4)
    a.place(c4)
    a.jump(JEQ_K, 0x9100, keep, body)
    a.place(keep)
    a.op(RET_K, ACCEPT)
    a.place(body)


def build(iface: str, lftas: list[LftaNode]) -> KernelFilter:
    """The kernel filter of interface iface read by lftas."""
    for n in lftas:
        if not isinstance(n, (LftaSelect, LftaAggregate)) or not _admission_checkable(n.protocol):
            return KernelFilter(iface, None, f"LFTA {n.name} (PROTOCOL {n.protocol.name}) "
                                "is not over packet headers alone")
    parts = [_part(n) for n in lftas]
    for p in parts:
        if p.admits_all:
            return KernelFilter(iface, None, f"LFTA {p.lfta.name} keeps every frame its "
                                f"PROTOCOL {p.lfta.protocol.name} admits, and that is every "
                                "frame" + (f" (stops at {p.stopped})" if p.stopped else ""),
                                parts)
    a = _Asm()
    _prologue(a, Label())
    for p in parts:
        a.items.extend(_block(p.lfta, p.conjuncts))
    a.op(RET_K, 0)
    prog = a.assemble()
    if len(prog) > MAX_INSNS:
        return KernelFilter(iface, None, f"the program would have {len(prog)} instructions "
                            f"(at most {MAX_INSNS})", parts)
    return KernelFilter(iface, prog, "", parts)


def plan_kernel_filters(plan: Plan) -> list[KernelFilter]:
    """The kernel filter of each interface the plan's packet LFTAs read, in
    the order of the interfaces' first LFTAs (interfaces of CSV LFTAs
    only: none)."""
    by_iface: dict[str, list[LftaNode]] = {}
    for n in plan.nodes:
        if isinstance(n, LftaNode):
            by_iface.setdefault(n.iface or "default", []).append(n)
    return [build(iface, lftas) for iface, lftas in by_iface.items()
            if any(n.protocol.source_kind == "pcap" for n in lftas)]


def explain_lines(plan: Plan) -> list[str]:
    """explain's account of the kernel filters."""
    lines: list[str] = []
    for kf in plan_kernel_filters(plan):
        head = f"kernel filter of interface {kf.iface} (a live capture through the AF_PACKET reader):"
        if kf.program is None:
            lines += [head, f"    accepts every frame: {kf.why}", ""]
            continue
        lines.append(head)
        lines.append(f"    {len(kf.program)} BPF instructions; keeps a frame when")
        for p in kf.parts:
            words = " and ".join([f"PROTOCOL {p.lfta.protocol.name} admits it"] + p.texts)
            lines.append(f"    {p.lfta.name}: {words}"
                         + (f"  [stops at {p.stopped}]" if p.stopped else ""))
        lines.append("    or it has a VLAN tag, is shorter than 14 bytes, or is IPv6 where "
                     "an IPv6 field decides")
        lines.append("")
    return lines
