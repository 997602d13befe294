"""A kernel LFTA (planner/kernel_lfta.py): its XDP program
(templates/xdp/lfta.bpf.c.j2, built by clang's BPF target) and the LFTA's
user-space side of its partials (templates/lfta/aggregate.c.j2's xdp
part, data from xdp_lfta_data).

Both sides agree on two structs of 64-bit words: struct xdp_key, one word
per group-by key but the temporal one (whose value is the partial's
epoch), and struct xdp_aggr, the group's frames `n` then one word per
accumulator.  A value is stored as its C type converted to 64 bits (a
signed one sign-extended) and read back through that type, so sums wrap,
and min and max compare, as the LFTA's own table does."""
from __future__ import annotations

import shutil
import sysconfig
from pathlib import Path
from typing import Any, Optional, Sequence

from ..errors import UsageError
from ..frontend import ast
from ..planner.kernel_lfta import KernelLfta
from ..semantics.bound import FieldRef, walk
from ..semantics.types import Type
from .cescape import c_identifier, c_string
from .cexpr import CEmitter, EmitContext
from .gen_shared import GenContext

# the C type of a field's local, as xdp_fields.h's getter writes it
_FIELD_CTYPE = {Type.BOOL: "__u8", Type.UINT: "__u32", Type.IP: "__u32", Type.USHORT: "__u32",
                Type.ULLONG: "__u64"}


def _var(name: str) -> str:
    return "f_" + c_identifier(name)


def _emitter(fn: str) -> CEmitter:
    def resolve(e: ast.Expr) -> Optional[str]:
        return _var(e.name) if isinstance(e, FieldRef) else None

    def no_param(p: str) -> str:
        raise AssertionError(f"${p} in a kernel LFTA")
    return CEmitter(EmitContext(resolve, no_param, cxx=False, const_prefix=fn + "_xk"))


def key_members(k: KernelLfta) -> list[tuple[int, str]]:
    """(group-by index, struct xdp_key member) of the keys the program keeps."""
    keys = [(i, f"k{i}") for i in range(len(k.node.group_by)) if i != k.epoch_index]
    return keys or [(-1, "pad")]


def object_symbol(fn: str) -> str:
    """The C array holding LFTA fn's BPF object (its <fn>.bpf.h)."""
    return f"{fn}_bpf_object"


def program_name(fn: str) -> str:
    return ("xdp_" + fn)[:60]


def render_xdp_program(gen: GenContext, k: KernelLfta, fn: str) -> str:
    n = k.node
    em = _emitter(fn)
    decls = [f"{_FIELD_CTYPE[f.type]} {_var(f.name)} = 0;" for f in k.fields]
    steps: list[str] = []
    read: set[str] = set()

    def read_fields(e: ast.Expr) -> None:
        for name in (x.name for x in walk(e) if isinstance(x, FieldRef)):
            if name not in read:
                read.add(name)
                acc = n.protocol.fields[name].accessor
                steps.append(f"if (xf_{acc}(&pkt, &{_var(name)}) != 0)")
                steps.append("    return verdict; /* unavailable: the LFTA skips the frame */")
    # the PROTOCOL's admission, then each WHERE conjunct after its fields
    for f in k.fields:
        if f.required:
            if f.name not in read:
                read.add(f.name)
                steps.append(f"if (xf_{f.accessor}(&pkt, &{_var(f.name)}) != 0)")
                steps.append(f"    return verdict; /* PROTOCOL {n.protocol.name} does not "
                             "admit the frame */")
    for e in n.where:
        read_fields(e)
        steps.append(f"if (!({em.expr(e)}))")
        steps.append("    return verdict;")
    key_fill = []
    for i, m in key_members(k):
        if i < 0:
            continue
        e = n.group_by[i][1]
        read_fields(e)
        key_fill.append(f"key.{m} = (__u64)({em.as_type(e, e.info.type)});")
    aggr_fill, fold = [], []
    for j, a in enumerate(n.accums):
        ct = a.type.c_type
        if a.expr is not None:
            read_fields(a.expr)
        val = "1" if a.expr is None else em.as_type(a.expr, a.type)
        aggr_fill.append(f"one.a{j} = (__u64)({ct})({val});")
        mine, theirs = f"({ct})s->aggr.a{j}", f"({ct})one.a{j}"
        if a.op == "sum":
            fold.append(f"s->aggr.a{j} += one.a{j};")
        elif a.op in ("min", "max"):
            cmp = "<" if a.op == "min" else ">"
            fold.append(f"if ({theirs} {cmp} {mine})")
            fold.append(f"    s->aggr.a{j} = one.a{j};")
        else:
            sym = {"and": "&", "or": "|", "xor": "^"}[a.op]
            fold.append(f"s->aggr.a{j} {sym}= one.a{j};")
    return gen.render("xdp/lfta.bpf.c.j2", {
        "fn": fn, "name": n.name, "program": program_name(fn),
        "query_comment": c_string(f"query {n.query.name}"),
        "slots": k.slots, "epoch_key": n.group_by[k.epoch_index][0], "epoch_ns": k.epoch_ns,
        "key_members": [m for _, m in key_members(k)],
        "aggr_members": [f"a{j}" for j in range(len(n.accums))],
        "constants": em.ctx.constants, "decls": decls, "steps": steps,
        "key_fill": key_fill, "aggr_fill": aggr_fill, "fold": fold,
    })


def xdp_lfta_data(k: KernelLfta, fn: str) -> dict[str, Any]:
    """The aggregate template's data for the LFTA's side: the structs, a
    partial's slot filled from them, the object's symbols."""
    n = k.node
    ekey = n.group_by[k.epoch_index][1].info.type.c_type
    fill = [f"s.k{i} = ({n.group_by[i][1].info.type.c_type})key->{m};"
            for i, m in key_members(k) if i >= 0]
    fill += [f"s.a{j} = ({a.type.c_type})aggr->a{j};" for j, a in enumerate(n.accums)]
    return {
        "program": c_string(program_name(fn)), "slots": k.slots, "epoch_ns": k.epoch_ns,
        "epoch_key": f"k{k.epoch_index}", "epoch_type": ekey,
        "key_members": [m for _, m in key_members(k)],
        "aggr_members": [f"a{j}" for j in range(len(n.accums))],
        "fill": fill, "object": object_symbol(fn), "source": f"{fn}.bpf.c",
    }


# clang's BPF target, the C it compiles and the folder of asm/types.h
# (Debian's clang-14 finds it only in the multiarch include folder)
BPF_CLANGS = ("clang-14", "clang")
BPF_FLAGS = ("-O2", "-g", "-target", "bpf", "-mcpu=v3", "-ffreestanding", "-Wall", "-Werror")
LIBBPF_HEADER = Path("/usr/include/bpf/libbpf.h")


def bpf_clang() -> Optional[str]:
    for name in BPF_CLANGS:
        found = shutil.which(name)
        if found:
            return found
    return None


def multiarch_include() -> list[str]:
    arch = sysconfig.get_config_var("MULTIARCH")
    return [f"/usr/include/{arch}"] if arch else []


def check_bpf_toolchain(lftas: Sequence[str]) -> str:
    """clang for the BPF target; raises UsageError naming what is missing
    for the kernel LFTAs `lftas` (their function prefixes)."""
    missing = []
    clang = bpf_clang()
    if clang is None:
        missing.append("clang-14 (clang's BPF target)")
    if not LIBBPF_HEADER.exists():
        missing.append("libbpf's headers and library (libbpf-dev)")
    if missing:
        names = ", ".join(f.removeprefix("lfta_") for f in lftas)
        raise UsageError(
            f"--lfta-in-kernel: the kernel LFTAs ({names}) are built with clang's BPF target "
            f"and libbpf, and this machine lacks {' and '.join(missing)}; install them "
            "(Debian, Ubuntu: apt-get install clang-14 libbpf-dev), or run without "
            "--lfta-in-kernel (every LFTA then runs in user space)")
    assert clang is not None
    return clang


def bpf_compile_command(clang: str, runtime_c: Path, src: Path, obj: Path) -> list[str]:
    incs = [runtime_c / "include", runtime_c / "xdp", *map(Path, multiarch_include())]
    return [clang, *BPF_FLAGS, *(f"-I{d}" for d in incs), "-c", str(src), "-o", str(obj)]


def embed_header(obj: Path, name: str) -> str:
    """The C header holding obj as `static const unsigned char name[]`
    (runtime_c/xdp/embed_object.cmake writes the same for a CMake build)."""
    data = obj.read_bytes()
    rows = [",".join(f"0x{b:02x}" for b in data[i:i + 16]) for i in range(0, len(data), 16)]
    return (f"/* generated from {obj.name}: do not edit */\n"
            f"static const unsigned char {name}[] = {{\n    " + ",\n    ".join(rows) + "\n};\n")
