"""What the generators of every level share: the generated set, the
templates' environment, the set's naming (GenContext), and the C shapes both
the C LFTAs and the C++ HFTAs are made of (parameters, folds, group keys,
merges, output tuples).

Python decides everything here and hands the jinja2 templates in templates/
plain data (declarations, statements, expressions as strings); templates only
lay the code out.
"""
from __future__ import annotations

import functools
import hashlib
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional

import jinja2
import jinja2.bccache

from ..frontend import ast
from ..planner.nodes import PlanNode, describe_expr
from ..planner.plan import Plan
from ..resources import cache_root, resource_dir
from ..semantics.model import Column, StreamDef
from ..semantics.types import Temporal, Type
from .cescape import c_comment, c_identifier, c_string
from .cexpr import CEmitter, EmitContext, field_member
from .user_code import UserCode

if TYPE_CHECKING:
    from ..planner.kernel_lfta import KernelLfta
    from .prefilter_gen import PrefilterSet

# Template data: names to plain values (strings, lists of them, flags).
TemplateData = dict[str, Any]


@dataclass
class GeneratedSet:
    files: dict[str, str]                 # file name -> content
    lftas: list[str] = field(default_factory=list)
    hftas: list[str] = field(default_factory=list)
    # the user's sources (file name among `files`, the folder it came from:
    # its own headers are found there) and the user symbols the units call
    # (name -> the def line's declaration)
    udfs: list[tuple[str, str]] = field(default_factory=list)
    udf_paths: list[str] = field(default_factory=list)       # as the user gave them
    user_symbols: dict[str, object] = field(default_factory=dict)
    # the kernel LFTAs' programs: (LFTA function prefix, its object's symbol),
    # each built from <prefix>.bpf.c into <prefix>.bpf.h (xdp_gen.py)
    xdp: list[tuple[str, str]] = field(default_factory=list)

    def digest(self) -> str:
        h = hashlib.sha256()
        for name in sorted(self.files):
            h.update(name.encode() + b"\0" + self.files[name].encode() + b"\0")
        return h.hexdigest()

    def write(self, out_dir: Path) -> None:
        out_dir.mkdir(parents=True, exist_ok=True)
        for name, text in self.files.items():
            p = out_dir / name
            if not p.exists() or p.read_text() != text:
                p.write_text(text)


# ---------------------------------------------------------------- templates


class _TemplateCache(jinja2.FileSystemBytecodeCache):
    """The templates compiled once and kept in the cache folder (jinja keys
    them by source checksum): compiling them was most of a cached run's
    start-up.  Best effort: a folder that cannot be written only costs the
    compile."""

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:
            super().dump_bytecode(bucket)
        except OSError:
            pass


def _template_cache() -> Optional[jinja2.BytecodeCache]:
    d = cache_root() / "templates"
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return _TemplateCache(str(d))


def template_env() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(resource_dir("templates"))),
        autoescape=False, keep_trailing_newline=True, undefined=jinja2.StrictUndefined,
        trim_blocks=True, lstrip_blocks=True, bytecode_cache=_template_cache())


class GenContext:
    """One plan's generation: its templates, the user functions its units
    call (collected as they are emitted), each stream's number and C
    identifier (unique, from its name)."""

    def __init__(self, plan: Plan):
        self.plan = plan
        self.env = template_env()
        self.user = UserCode()
        self.stream_index = {n.name: i for i, n in enumerate(plan.nodes)}
        self.idents: dict[str, str] = {}
        used: set[str] = set()
        for n in plan.nodes:
            base = c_identifier(n.name)
            ident, k = base, 2
            while ident in used:
                ident = f"{base}_{k}"
                k += 1
            used.add(ident)
            self.idents[n.name] = ident

    @functools.cached_property
    def kernel_lftas(self) -> dict[str, "KernelLfta"]:
        """The LFTAs that run in the kernel's XDP hook, by name
        (planner/kernel_lfta.py; none unless the plan was made for them)."""
        from ..planner.kernel_lfta import plan_kernel_lftas
        return {c.node.name: c.kernel for c in plan_kernel_lftas(self.plan) if c.kernel}

    @functools.cached_property
    def prefilters(self) -> "PrefilterSet":
        """The plan's prefilters (prefilter_gen.py)."""
        from .prefilter_gen import PrefilterSet
        return PrefilterSet(self)

    def tup(self, stream: str) -> str:
        """The C struct of a stream's tuples."""
        return "tup_" + self.idents[stream]

    def render(self, template: str, data: TemplateData) -> str:
        return self.env.get_template(template).render(**data)


# ---------------------------------------------------------------- C shapes


def struct_member_type(t: Type) -> str:
    return "gsq_strref" if t is Type.STRING else t.c_type


_PARSE_FN = {
    Type.BOOL: "gsq_parse_bool", Type.USHORT: "gsq_parse_ushort",
    Type.UINT: "gsq_parse_uint", Type.INT: "gsq_parse_int",
    Type.ULLONG: "gsq_parse_ullong", Type.LLONG: "gsq_parse_llong",
    Type.FLOAT: "gsq_parse_float", Type.IP: "gsq_parse_ip",
    Type.IPV6: "gsq_parse_ipv6",
}


def param_inits(params: dict[str, Type], ref: Callable[[str], str],
                on_fail: str) -> tuple[list[str], list[str]]:
    """Declarations and init statements that read run-time parameters.
    `ref(name)` is the lvalue of the parameter's variable; `on_fail` the
    statement leaving the init function once gsq_node_fail has reported a
    missing or bad value."""
    decls, stmts = [], []
    for name, t in sorted(params.items()):
        var = ref(name)
        decls.append((f"{t.c_type} {var.split('->')[-1].split('.')[-1]};"))
        lit = c_string(name)
        stmts.append(f"{{ const char *v = gsq_param(node, {lit});")
        stmts.append("  if (!v) { gsq_node_fail(node, \"parameter $%s is not set: pass --param %s=VALUE\", "
                     f"{lit}, {lit}); {on_fail} }}")
        if t is Type.STRING:
            stmts.append(f"  {var} = gsq_str_lit(v, (uint32_t)strlen(v)); }}")
        else:
            stmts.append(f"  if ({_PARSE_FN[t]}(v, strlen(v), &{var}) != 0) {{ "
                         f"gsq_node_fail(node, \"parameter $%s: '%s' is not a valid %s\", {lit}, v, "
                         f"{c_string(str(t))}); {on_fail} }} }}")
    return decls, stmts


def fold(op: str, t: Type, target: str, value: str, init: bool, cxx: bool) -> list[str]:
    """Statements folding `value` into accumulator `target` of type t."""
    if t is Type.STRING:
        assert cxx
        if init:
            return [f"{{ gsq_str v_ = {value}; {target}.assign(v_.p, v_.len); }}"]
        cmp = "<" if op == "min" else ">"
        return [f"{{ gsq_str v_ = {value}; if (gsq_str_cmp(v_, gsq_str_lit({target}.data(), "
                f"(uint32_t){target}.size())) {cmp} 0) {target}.assign(v_.p, v_.len); }}"]
    if init:
        if t is Type.IPV6:
            return [f"{target} = {value};"]
        return [f"{target} = ({t.c_type})({value});"]
    if t is Type.IPV6:
        cmp = "<" if op == "min" else ">"
        return [f"{{ gsq_ipv6 v_ = {value}; if (gsq_ipv6_cmp(v_, {target}) {cmp} 0) {target} = v_; }}"]
    if op == "sum":
        if t is Type.FLOAT:
            return [f"{target} += (double)({value});"]
        if t is Type.LLONG:
            return [f"{target} = (int64_t)((uint64_t){target} + (uint64_t)({value}));"]
        return [f"{target} = ({t.c_type})({target} + ({t.c_type})({value}));"]
    if op in ("min", "max"):
        cmp = "<" if op == "min" else ">"
        return [f"{{ {t.c_type} v_ = ({t.c_type})({value}); if (v_ {cmp} {target}) {target} = v_; }}"]
    sym = {"and": "&", "or": "|", "xor": "^"}[op]
    return [f"{target} = ({t.c_type})({target} {sym} ({t.c_type})({value}));"]


def key_equal(t: Type, a: str, b: str) -> str:
    """C/C++ equality of two group-key values (a string key is a std::string;
    floats compare by bits, as they hash)."""
    if t is Type.IPV6:
        return f"gsq_ipv6_eq({a}, {b})"
    if t is Type.FLOAT:
        return f"gsq_double_bits({a}) == gsq_double_bits({b})"
    return f"{a} == {b}"


def key_hash_step(t: Type, v: str) -> str:
    """The statement mixing group-key value v into the running hash h."""
    if t is Type.STRING:
        return f"h = gsq_hash_bytes(h, {v}.data(), (uint32_t){v}.size());"
    if t is Type.IPV6:
        return f"h = gsq_hash_bytes(h, {v}.b, 16);"
    if t is Type.FLOAT:
        return f"h = gsq_hash_add(h, gsq_double_bits({v}));"
    return f"h = gsq_hash_add(h, (uint64_t){v});"


# gsq_merge.h's type tag of a merge column's type
_MERGE_TYPE_TAGS = {Type.BOOL: "u8", Type.USHORT: "u16", Type.UINT: "u32", Type.IP: "u32",
                    Type.INT: "i32", Type.ULLONG: "u64", Type.LLONG: "i64", Type.FLOAT: "f64"}
# the merges every library links (hfta_templates/merge_any.cpp, once per tag)
MERGE_TYPES = ("u8", "u16", "u32", "i32", "u64", "i64", "f64")


def merge_slack(t: Type, slack: float) -> str:
    """SLACK as gsq_merge_spec's two slack initialisers: the value the
    merge's column type gives it (C's conversion: truncated, wrapped to the
    type's width; negative counts as 0)."""
    if t is Type.FLOAT:
        v = float(slack)
        return f"0u, {repr(v) if math.isfinite(v) and v > 0 else '0.0'}"
    bits = t.bits
    n = int(slack) & ((1 << bits) - 1)
    if t.is_signed and n >> (bits - 1):
        n -= 1 << bits
    return f"UINT64_C({max(n, 0)}), 0.0"


def merge_def(var: str, col: Column, struct_t: str, ordered: bool, slack: float,
              head: str, storage: str = "") -> str:
    """C defining the gsq_hfta_def `var` of a merge on column `col` of
    `struct_t` tuples: one of the runtime's merges (gsq_merge.h) and its
    gsq_merge_spec.  head: the definition's name, n_inputs, in_streams and
    out_stream initialisers."""
    tag = _MERGE_TYPE_TAGS[col.type]
    direction = "inc" if col.temporal is Temporal.INCREASING else "dec"
    order = "ordered" if ordered else "unordered"
    member = field_member(col.name)
    return (f"static const gsq_merge_spec {var}_spec = {{\n"
            f"    {col.type.code}, (uint32_t)offsetof({struct_t}, {member}),"
            f" (uint32_t)sizeof({struct_t}), {merge_slack(col.type, slack)}}};\n"
            f"{storage}const gsq_hfta_def {var} = {{\n"
            f"    {head},\n"
            f"    GSQ_MERGE_FNS({tag}, {direction}, {order}), NULL, &{var}_spec, NULL,\n"
            f"    GSQ_PROMISES_KEPT, NULL}};\n")


def output_assignments(em: CEmitter, out: StreamDef, select: list[tuple[str, ast.Expr]],
                       tup_type: str) -> tuple[list[str], list[str]]:
    """Statements filling a local `t` of the output struct; string fields as
    gsq_str_field initialisers."""
    assigns, strs = [], []
    for col, (_, e) in zip(out.columns, select):
        m = field_member(col.name)
        if col.type is Type.STRING:
            strs.append(f"{{(uint32_t)offsetof({tup_type}, {m}), {em.expr(e)}}}")
        else:
            assigns.append(f"t.{m} = {em.as_type(e, col.type)};")
    return assigns, strs


def no_bound(col: Column) -> str:
    """C++ giving temporal column `col` of a heartbeat tuple `t` the bound
    that promises nothing (the lowest value if increasing)."""
    bound = "lowest" if col.temporal is Temporal.INCREASING else "max"
    return f"t.{field_member(col.name)} = std::numeric_limits<{col.type.c_type}>::{bound}();"


def regex_data(ctx: EmitContext) -> list[dict[str, str]]:
    return [{"var": r.var, "pattern_c": c_string(r.pattern)} for r in ctx.regexes]


def expr_comment(e: ast.Expr, node: PlanNode) -> str:
    return c_comment(describe_expr(e, node))


def hfta_param_data(params: dict[str, Type], epochs: bool) -> Optional[TemplateData]:
    """What templates/hfta/_params.j2 needs of a functor reading `params`
    (None: it reads none): its values' fields, statements reading them into
    `pv` (as the constructor checks them), loading `pv` into the members
    and saving the members into pv_; epochs: the functor aggregates by
    epochs (a change switches at the next one)."""
    if not params:
        return None
    _, read = param_inits(params, lambda p: f"pv.{c_identifier(p)}", "return false;")
    names = sorted(params)
    return {"fields": [(params[p].c_type, c_identifier(p)) for p in names], "read": read,
            "load": [f"{hfta_param(p)} = pv.{c_identifier(p)};" for p in names],
            "save": [f"pv_.{c_identifier(p)} = {hfta_param(p)};" for p in names],
            "epochs": epochs}


def hfta_param(p: str) -> str:
    """The C++ member holding query parameter p in an HFTA functor."""
    return f"p_{c_identifier(p)}"
