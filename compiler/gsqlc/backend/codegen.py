"""Code generation: Plan -> GeneratedSet (source files: C LFTAs, C++ HFTA
functors, the query set's tables, a CMake project).

generate(plan) renders one file per plan node, chosen by the node's class.

Python decides everything here and hands the jinja2 templates in templates/
plain data (declarations, statements, expressions as strings); templates only
lay the code out.
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import jinja2
import jinja2.bccache

from ..frontend import ast
from ..planner.nodes import (
    LFTA_TABLE_GROW_MIB,
    HftaAggregate,
    HftaFilterJoin,
    HftaJoin,
    HftaMerge,
    HftaNode,
    HftaSelect,
    LftaAggregate,
    LftaNode,
    LftaSelect,
    PlanNode,
    SamplingPlan,
)
from ..planner.plan import Plan, describe_expr
from ..resources import cache_root, resource_dir
from ..semantics import catalog
from ..semantics.analyze import Column, StreamDef
from ..semantics.bound import AccumRef, AggRef, FieldRef, GroupRef, SuperAggRef, key, walk
from ..semantics.types import Temporal, Type
from .cescape import c_comment, c_identifier, c_string
from .cexpr import CEmitter, EmitContext, field_member
from .native_build import MERGE_TYPES
from .udf_build import add_library_sources, add_user_sources
from .user_code import UserCode

_PARSE_FN = {
    Type.BOOL: "gsq_parse_bool", Type.USHORT: "gsq_parse_ushort",
    Type.UINT: "gsq_parse_uint", Type.INT: "gsq_parse_int",
    Type.ULLONG: "gsq_parse_ullong", Type.LLONG: "gsq_parse_llong",
    Type.FLOAT: "gsq_parse_float", Type.IP: "gsq_parse_ip",
    Type.IPV6: "gsq_parse_ipv6",
}
# Accessors whose value follows the capture clock, and the divisor from
# microseconds to their unit: an idle source's heartbeat may advance them from
# the run's clock less the interface's maximum skew.
_CLOCK_DIVISOR = {"get_time": 1000000, "get_timestamp": 1, "get_system_time": 1000000}
# accessors of the record's own timestamp: the run's generated heartbeats
# (runtime_c/core/heartbeat_gen.c) are in its microseconds
_RECORD_TIME = ("get_time", "get_timestamp")

def _ooo_in_unit(ct: str, var: str) -> str:
    """C statements lowering `var` (a temporal field of C type `ct` read
    from a CSV column) by the out-of-order bound `ooo_usec`, in the unit of
    the interface's time column (gsq_time_unit_nsec: a power of 1000 ns),
    rounded up; a float column holds units with a fraction."""
    unit = "uint64_t u_ = 1000000000u; (void)gsq_time_unit_nsec(node, &u_);"
    if ct == "double":
        return (f"{unit} double d_ = (double)ooo_usec * 1000.0 / (double)u_; "
                f"{var} = {var} > d_ ? {var} - d_ : 0.0;")
    return (f"{unit} uint64_t d_ = u_ >= 1000u ? (ooo_usec + u_ / 1000u - 1u) / (u_ / 1000u) "
            f": ooo_usec * (1000u / u_); "
            f"{var} = {var} > 0 && (uint64_t){var} > d_ ? ({ct})((uint64_t){var} - d_) "
            f": ({ct})0;")


# A column value (gsq_csv_value) as the C type of the accessor of its type.
_COL_VALUE = {
    Type.BOOL: "(uint8_t)({v}.u != 0)", Type.USHORT: "(uint16_t){v}.u",
    Type.UINT: "(uint32_t){v}.u", Type.INT: "(int32_t){v}.i", Type.ULLONG: "{v}.u",
    Type.LLONG: "{v}.i", Type.FLOAT: "{v}.f", Type.IP: "(uint32_t){v}.u",
    Type.IPV6: "{v}.v6", Type.STRING: "{v}.s",
}


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


# Types whose Arrow column may be read as it is (gsq_col.raw).
_COL_RAW = {Type.USHORT, Type.UINT, Type.INT, Type.ULLONG, Type.LLONG, Type.FLOAT, Type.IP}
_RAW_CTYPE = {t.code: (t.c_type if t in _COL_RAW else None) for t in Type}
_UNSIGNED = {Type.USHORT, Type.UINT, Type.ULLONG, Type.IP}

_CSV_GET = {
    Type.BOOL: "bool", Type.USHORT: "ushort", Type.UINT: "uint", Type.INT: "int",
    Type.ULLONG: "ullong", Type.LLONG: "llong", Type.FLOAT: "float", Type.IP: "ip",
    Type.IPV6: "ipv6", Type.STRING: "string",
}


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


def _env() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(resource_dir("templates"))),
        autoescape=False, keep_trailing_newline=True, undefined=jinja2.StrictUndefined,
        trim_blocks=True, lstrip_blocks=True, bytecode_cache=_template_cache())


def struct_member_type(t: Type) -> str:
    return "gsq_strref" if t is Type.STRING else t.c_type


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


# ---------------------------------------------------------------- helpers


def param_inits(params: dict, ref, on_fail: str) -> tuple[list[str], list[str]]:
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


# gsq_merge.h's type tag of a merge column's type
_MERGE_TYPE_TAGS = {Type.BOOL: "u8", Type.USHORT: "u16", Type.UINT: "u32", Type.IP: "u32",
                    Type.INT: "i32", Type.ULLONG: "u64", Type.LLONG: "i64", Type.FLOAT: "f64"}


def merge_slack(t: Type, slack: float) -> str:
    """SLACK as gsq_merge_spec's two slack initialisers: the value the
    merge's column type gives it (C's conversion: truncated, wrapped to the
    type's width; negative counts as 0)."""
    if t is Type.FLOAT:
        v = float(slack)
        return f"0u, {repr(v) if math.isfinite(v) and v > 0 else '0.0'}"
    bits = t.bits
    v = int(slack) & ((1 << bits) - 1)
    if t.is_signed and v >> (bits - 1):
        v -= 1 << bits
    return f"UINT64_C({max(v, 0)}), 0.0"


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
            f"    GSQ_PROMISES_KEPT}};\n")


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


def _regex_data(ctx: EmitContext) -> list[dict]:
    return [{"var": r.var, "pattern_c": c_string(r.pattern)} for r in ctx.regexes]


def _expr_comment(e: ast.Expr, node: PlanNode) -> str:
    return c_comment(describe_expr(e, node))


def _hfta_param(p: str) -> str:
    """The C++ member holding query parameter p in an HFTA functor."""
    return f"p_{c_identifier(p)}"


# ---------------------------------------------------------------- generator


class Generator:
    def __init__(self, plan: Plan):
        self.plan = plan
        self.env = _env()
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

    def tup(self, stream: str) -> str:
        return "tup_" + self.idents[stream]

    def generate(self, runner_sets: "Sequence[tuple[str, str]]" = (),
                 udf: "Sequence[str]" = ()) -> GeneratedSet:
        files: dict[str, str] = {}
        gs = GeneratedSet(files)
        for i, n in enumerate(self.plan.nodes):
            # the node's number keeps file names apart: the identifier is
            # cut short so that a long query name stays a valid file name
            ident = self.idents[n.name][:64]
            text = _RENDERERS[type(n)](self, n)
            if isinstance(n, LftaNode):
                fname = f"lfta_{i:02d}_{ident}.c"
                gs.lftas.append(fname)
            else:   # a merge is C naming the runtime's operator (gsq_merge.h)
                fname = f"hfta_{i:02d}_{ident}.{'c' if isinstance(n, HftaMerge) else 'cpp'}"
                gs.hftas.append(fname)
            files[fname] = text
        # after the units: they collected the user functions they call
        files["streams.h"] = self.env.get_template("streams.h.j2").render(
            streams=[self._stream_data(n.output) for n in self.plan.nodes],
            user_code=bool(self.user))
        if self.user:
            files["gsqlc_udf.h"] = self.user.header()
            gs.user_symbols = self.user.symbols()
        files["queryset.c"] = self._queryset()
        files["runner_sets.c"] = self.env.get_template("runner_sets.c.j2").render(
            sets=[(c_string(s), c_string(m)) for s, m in runner_sets])
        add_user_sources(gs, udf)
        add_library_sources(gs, self.user)
        files["CMakeLists.txt"] = self.env.get_template("CMakeLists.txt.j2").render(
            lftas=gs.lftas, hftas=gs.hftas, merge_types=MERGE_TYPES, udfs=gs.udfs)
        return gs

    # -------------------------------------------------------------- streams
    def _stream_data(self, s: StreamDef) -> dict:
        return {
            "name": s.name, "type": self.tup(s.name),
            "comment": c_comment(s.name),
            "members": [f"{struct_member_type(c.type)} {field_member(c.name)};"
                        + (f"  /* {c.temporal} */" if c.temporal.is_temporal else "")
                        for c in s.columns],
        }

    @staticmethod
    def _rows_col(n: PlanNode) -> int:
        """gsq_stream_desc.rows_col of n's output: how many input rows a
        tuple stands for.  An LFTA sub-aggregate's partials hold the rows of
        their count(*) accumulator (a sum of the constant 1), its output
        column's index; without one the rows are unknown (-2).  Every other
        stream's tuple is one row (-1; an HFTA's group counts as one)."""
        if not isinstance(n, LftaAggregate):
            return -1
        names = [c.name for c in n.output.columns]
        for name, e in n.select:
            if isinstance(e, AccumRef) and name in names:
                a = n.accums[e.index]
                if a.op == "sum" and a.expr is None and a.udaf is None and a.type in (
                        Type.USHORT, Type.UINT, Type.INT, Type.ULLONG, Type.LLONG):
                    return names.index(name)
        return -2

    def _queryset(self) -> str:
        streams, lftas, hftas = [], [], []
        for n in self.plan.nodes:
            t = self.tup(n.name)
            rows_col = self._rows_col(n)
            streams.append({
                "ident": self.idents[n.name], "name": c_string(n.name), "type": t,
                "cols": [{"name": c_string(c.name), "type": c.type.code,
                          "member": field_member(c.name)} for c in n.output.columns],
                "rows_col": {-1: "GSQ_ROWS_ONE", -2: "GSQ_ROWS_UNKNOWN"}.get(rows_col,
                                                                           str(rows_col)),
            })
            lfta = isinstance(n, LftaNode)
            (lftas if lfta else hftas).append(
                ("lfta_" if lfta else "hfta_") + self.idents[n.name] + "_def")
        return self.env.get_template("queryset.c.j2").render(
            streams=streams, lftas=lftas, hftas=hftas)

    # -------------------------------------------------------------- LFTA
    def _set_merge(self, n: LftaNode, fn: str) -> Optional[str]:
        """C defining fn_set_merge, the merge of n's instances over an
        interface set on its first temporal column (None: it has none)."""
        col = n.set_merge_column
        if col is None:
            return None
        return merge_def(f"{fn}_set_merge", col, self.tup(n.name), n.set_merge_ordered, 0,
                         "NULL, 0, NULL, -1", storage="static ")

    def _lfta(self, n: LftaNode) -> str:
        proto = n.protocol
        fn = "lfta_" + self.idents[n.name]
        state_t = fn + "_state"
        out_t = self.tup(n.name)
        set_merge = self._set_merge(n, fn)

        def field_var(name: str) -> str:
            return "f_" + c_identifier(name)

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

        ctx = EmitContext(resolve, lambda p: f"st->p_{c_identifier(p)}", user=self.user, cxx=False,
                          const_prefix=fn + "_k",
                          iface_prop_ref=lambda name: f"st->ip_{c_identifier(name)}")
        em = CEmitter(ctx)

        # Field unpacking, lazily in the order predicates need them.
        unpacked: set[str] = set()
        decls: list[str] = []
        uses: list[str] = []   # required fields may be read only to admit the record
        steps: list[str] = []
        # the same steps over a columnar chunk (row i of gsq_cols *cv); None
        # once a step needs the record itself
        # (their functions take the chunk cv and row index i, which a query
        # reading no column -- only get_system_time fields -- leaves unused)
        col_steps: Optional[list[str]] = (["(void)cv;", "(void)i;"]
                                          if proto.source_kind != "pcap" else None)
        raw_steps: Optional[list[str]] = ["(void)i;"] if proto.source_kind != "pcap" else None
        # raw_steps with no branch at all (the heartbeat steps as selects):
        # a selection's block loop, which the C compiler vectorizes
        mask_steps: list[str] = []
        # (position, type code, field name): one entry per PROTOCOL field read
        # from the CSV record, so an Arrow source can match columns by name.
        csv_fields: dict[tuple, None] = {}

        def read_step(name: str, skip: str) -> str:
            """The statement reading field `name` into its variable; `skip`
            runs when the field is unavailable."""
            f = proto.fields[name]
            var = field_var(name)
            if f.source == "csv":
                ct = f.csv_type or f.type
                if ct == f.type:
                    return f"if (gsq_csv_get_{_CSV_GET[ct]}(node, rec, {f.csv_pos}u, &{var})) {skip}"
                return (f"{{ {ct.c_type} tmp_; if (gsq_csv_get_{_CSV_GET[ct]}(node, rec, "
                        f"{f.csv_pos}u, &tmp_)) {skip} {var} = ({f.type.c_type})tmp_; }}")
            if f.source == "system":
                return (f"{{ uint32_t tmp_; gsq_acc_get_system_time(node, rec, &tmp_); "
                        f"{var} = ({f.type.c_type})tmp_; }}")
            if f.source == "constant":   # get_schemaId: GS-lite's CSV records carry 0
                return f"{var} = 0;"
            from ..semantics.schema import PACKET_ACCESSORS
            at = PACKET_ACCESSORS[f.accessor]
            if at == f.type:
                return f"if (gsq_acc_{f.accessor}(node, rec, &{var})) {skip}"
            return (f"{{ {at.c_type} tmp_; if (gsq_acc_{f.accessor}(node, rec, &tmp_)) "
                    f"{skip} {var} = ({f.type.c_type})tmp_; }}")

        def col_slot(name: str) -> int:
            """The chunk column (gsq_cols.col[j]) of CSV field `name`."""
            f = proto.fields[name]
            return list(csv_fields).index((f.csv_pos, (f.csv_type or f.type).code, name))

        def col_read_step(name: str, skip: str) -> Optional[str]:
            """read_step over row i of a columnar chunk (None: a field that
            is no CSV column, e.g. the clock's)."""
            f = proto.fields[name]
            if f.source in ("system", "constant"):
                return read_step(name, skip)   # the clock or a constant: rec is unused
            if f.source != "csv":
                return None
            ct = f.csv_type or f.type
            j = col_slot(name)
            val = _COL_VALUE[ct].format(v="c_->vals[i]")
            if ct in _COL_RAW:
                val = f"(c_->raw ? ((const {ct.c_type} *)c_->raw)[i] : {val})"
            if ct != f.type:
                val = f"({f.type.c_type})({val})"
            return (f"{{ const gsq_col *c_ = cv->col[{j}]; if (c_->valid && !c_->valid[i]) "
                    f"{skip} {field_var(name)} = {val}; }}")

        def raw_read_step(name: str) -> Optional[str]:
            """col_read_step when every column of the chunk is read as it
            is (gsq_col.raw, no nulls: the pointers in locals r<j>)."""
            f = proto.fields[name]
            if f.source in ("system", "constant"):
                return read_step(name, "return;")
            ct = f.csv_type or f.type
            if f.source != "csv" or ct not in _COL_RAW:
                return None
            j = col_slot(name)
            val = f"r{j}[i]" if ct == f.type else f"({f.type.c_type})r{j}[i]"
            return f"{field_var(name)} = {val};"

        def add_step(step: str, col_step: Optional[str] = "",
                     raw_step: Optional[str] = "", mask_step: str = "") -> None:
            """A step of accept(); col_step is its columnar form, raw_step its
            form over columns read as they are ("": the same text, None: it
            has none, so there is no such form); mask_step the raw form with
            no branch ("": the raw form is one)."""
            nonlocal col_steps, raw_steps
            steps.append(step)
            mask_steps.append(mask_step or raw_step or step)
            if col_steps is not None:
                if col_step is None:
                    col_steps = None
                else:
                    col_steps.append(col_step or step)
            if raw_steps is not None:
                if raw_step is None:
                    raw_steps = None
                else:
                    raw_steps.append(raw_step or step)

        def unpack(name: str) -> None:
            if name in unpacked:
                return
            unpacked.add(name)
            f = proto.fields[name]
            var = field_var(name)
            decls.append(f"{f.type.c_type} {var};")
            uses.append(f"(void){var};")
            if f.source == "csv":
                csv_fields[(f.csv_pos, (f.csv_type or f.type).code, name)] = None
            skip = ("return;" if f.required else
                    "{ gsq_count(node, GSQ_CNT_FIELD_UNAVAILABLE, 1); return; }")
            add_step(read_step(name, skip), col_read_step(name, skip), raw_read_step(name))

        def fields_of(e: ast.Expr) -> list[str]:
            return [x.name for x in walk(e) if isinstance(x, FieldRef)]

        for name, f in proto.fields.items():
            if f.required:
                unpack(name)
        # Heartbeats (seed 000 4.3-4.5): the temporal fields behind the
        # temporal output are unpacked and saved before the predicate, so a
        # rejected record still advances time.
        hb_exprs = ([e for i, (_, e) in enumerate(n.group_by) if i in n.epoch_indices]
                    if isinstance(n, LftaAggregate) else
                    [e for col, (_, e) in zip(n.output.columns, n.select) if col.temporal.is_temporal])
        hb_fields: list[str] = []
        for e in hb_exprs:
            for name in fields_of(e):
                if name not in hb_fields and proto.fields[name].temporal is Temporal.INCREASING \
                        and proto.fields[name].type.is_numeric:
                    hb_fields.append(name)
        hb_state, hb_body = [], []
        hb_record_time = bool(hb_fields)   # every heartbeat field is the record's time
        time_field: Optional[str] = None   # gsq_lfta_def.time_pos / time_type
        if hb_exprs and all(nm in hb_fields for e in hb_exprs for nm in fields_of(e)):
            time_field = next((nm for nm in hb_fields if proto.fields[nm].source == "csv"), None)
            for name in hb_fields:
                unpack(name)
                f = proto.fields[name]
                ct, var, sfx = f.type.c_type, field_var(name), c_identifier(name)
                hb_state += [f"{ct} hb_last_{sfx};", f"{ct} hb_bound_{sfx};",
                             f"uint8_t hb_seen_{sfx};", f"uint8_t hb_promised_{sfx};"]
                add_step(f"if (st->hb_promised_{sfx} && {var} < st->hb_bound_{sfx}) "
                         "{ gsq_count(node, GSQ_CNT_SKEW_DROPPED, 1); return; }",
                         mask_step=f"{{ uint32_t d_ = live_ & (uint32_t)prom_{sfx} & "
                         f"(uint32_t)({var} < bound_{sfx}); drops_ += d_; live_ &= d_ ^ 1u; }}")
                add_step(f"if (!st->hb_seen_{sfx} || {var} > st->hb_last_{sfx}) "
                         f"{{ st->hb_last_{sfx} = {var}; st->hb_seen_{sfx} = 1; }}",
                         mask_step=f"{{ {ct} v_ = ({ct})({var} & (({ct})0 - ({ct})live_)); "
                         f"mx_{sfx} = v_ > mx_{sfx} ? v_ : mx_{sfx}; any_{sfx} |= live_; }}")
                hb_body.append(f"{ct} {var};")
                div = _CLOCK_DIVISOR.get(f.accessor.lower() if f.accessor else "")
                # A field of the record's own timestamp follows the run's
                # generated heartbeat (seed 002) when there is one: it
                # promises that (in its unit, rounded down) and reports the
                # promise back, so the runtime drops what arrives below it.
                # (A CSV source's record time is its time column, in the
                # interface's unit: gsq_time_unit_nsec.)
                from_record = (f.accessor is not None and f.accessor.lower() in _RECORD_TIME) \
                    or (f.source == "csv" and name == time_field)
                hb_record_time = hb_record_time and from_record
                if from_record:
                    if div is not None:
                        conv = f"{var} = ({ct})(gen_usec / {div}u);"
                        back = f"(uint64_t){var} * {div}u"
                    else:
                        conv = ("uint64_t u_ = 1000000000u; (void)gsq_time_unit_nsec(node, &u_); "
                                + (f"{var} = (double)gen_usec * 1000.0 / (double)u_;"
                                   if ct == "double" else
                                   f"{var} = ({ct})(u_ >= 1000u ? gen_usec / (u_ / 1000u) "
                                   f": gen_usec * (1000u / u_));"))
                        back = (f"{var} > 0 ? (uint64_t)({var} * (double)u_ / 1000.0) : 0u"
                                if ct == "double" else
                                f"(u_ >= 1000u ? (uint64_t){var} * (u_ / 1000u) "
                                f": (uint64_t){var} / (1000u / u_))")
                    hb_body.append(
                        f"if (gen == 0) {{ {conv} "
                        f"if (st->hb_promised_{sfx} && st->hb_bound_{sfx} > {var}) "
                        f"{var} = st->hb_bound_{sfx}; st->hb_bound_{sfx} = {var}; "
                        f"st->hb_promised_{sfx} = 1; "
                        f"gsq_heartbeat_promised(node, {back}); }} else {{")
                # Otherwise the heartbeat promises max(largest value seen -
                # the out-of-order bound (seed 002, B_ii; rounded up to the
                # field's unit), the clock less the skew, earlier promises).
                # A CSV column's unit is its interface's time_unit.
                if div is not None:
                    hb_body.append(
                        f"if (have_bound) {{ {ct} b_ = ({ct})(bound_usec / {div}u); "
                        f"if (!st->hb_promised_{sfx} || b_ > st->hb_bound_{sfx}) "
                        f"{{ st->hb_bound_{sfx} = b_; st->hb_promised_{sfx} = 1; }} }}")
                elif f.source != "csv":
                    hb_body.append(
                        f"if (have_ooo) {{ gsq_node_fail(node, \"out_of_order is set for the "
                        f"interface of {n.name}, whose time field {name} (PROTOCOL "
                        f"{proto.name}) has no known unit of seconds\"); return; }}")
                hb_body.append(f"if (!st->hb_seen_{sfx} && !st->hb_promised_{sfx}) return;")
                hb_body.append(f"{var} = st->hb_seen_{sfx} ? st->hb_last_{sfx} : st->hb_bound_{sfx};")
                if div is not None:
                    hb_body.append(
                        f"if (have_ooo) {{ {ct} d_ = ({ct})((ooo_usec + {div - 1}u) / {div}u); "
                        f"{var} = {var} > d_ ? ({ct})({var} - d_) : ({ct})0; }}")
                elif f.source == "csv":
                    hb_body.append(f"if (have_ooo) {{ {_ooo_in_unit(ct, var)} }}")
                hb_body.append(f"if (st->hb_promised_{sfx} && st->hb_bound_{sfx} > {var}) "
                               f"{var} = st->hb_bound_{sfx};")
                hb_body.append(f"if (have_ooo) {{ st->hb_bound_{sfx} = {var}; "
                               f"st->hb_promised_{sfx} = 1; }}")
                if from_record:
                    hb_body.append("}")
        # Over columns read as they are, a selection whose predicates and
        # outputs are plain arithmetic (nothing to fail, count or call)
        # computes every row's tuple and keeps it by the predicates' value:
        # no branch on the data to mispredict.
        branchless = isinstance(n, LftaSelect) and all(
            _plain(x) for e in [*n.where, *(e for _, e in n.select)] for x in walk(e)) and \
            not any(col.type is Type.STRING for col in n.output.columns)
        for c in n.where:
            for name in fields_of(c):
                unpack(name)
            add_step(f"if (!{em.expr(c)}) return;  {_expr_comment(c, n)}", "",
                     f"keep_ &= {em.expr(c)};  {_expr_comment(c, n)}" if branchless else "")
        if isinstance(n, LftaAggregate):
            value_exprs = [e for _, e in n.group_by] + [a.expr for a in n.accums
                                                        if a.expr is not None]
            # a user sub-aggregate's arguments (a field only they read too)
            value_exprs += [x for a in n.accums if a.op == "udaf" for x in a.args]
        else:
            value_exprs = [e for _, e in n.select]
        for e in value_exprs:
            for name in fields_of(e):
                unpack(name)

        # What an aggregation's prefetch reads: the group-by fields, with no
        # counting (accept() reads them again and counts); only for group-by
        # expressions of fields, constants and operators (no calls).
        prefetch_reads: Optional[list[str]] = None
        col_prefetch_reads: Optional[list[str]] = None
        raw_prefetch_reads: Optional[list[str]] = None
        if isinstance(n, LftaAggregate) and not any(
                isinstance(x, ast.Call) for _, e in n.group_by for x in walk(e)) and all(
                proto.fields[nm].source != "system" for _, e in n.group_by for nm in fields_of(e)):
            key_fields = list(dict.fromkeys(nm for _, e in n.group_by for nm in fields_of(e)))
            key_decls = [f"{proto.fields[nm].type.c_type} {field_var(nm)};" for nm in key_fields]
            prefetch_reads = key_decls + [read_step(nm, "return;") for nm in key_fields]
            col_reads = [col_read_step(nm, "return 0;") for nm in key_fields]
            if all(r is not None for r in col_reads):
                col_prefetch_reads = key_decls + [r for r in col_reads if r is not None]
            raw_reads = [raw_read_step(nm) for nm in key_fields]
            if all(r is not None for r in raw_reads):
                raw_prefetch_reads = key_decls + [r for r in raw_reads if r is not None]
        # The clock follows each record's arrival under the data clock: an
        # LFTA that reads it sets it back row by row over a chunk.
        reads_clock = any(catalog.reads_clock(x) for e in [*n.where, *value_exprs, *hb_exprs]
                          for x in walk(e)) or any(proto.fields[nm].source == "system"
                                                   for nm in unpacked)
        p_decls, p_init = param_inits(n.params, lambda p: f"st->p_{c_identifier(p)}",
                                      "return -1;")
        data = {
            "fn": fn, "state_t": state_t, "out_t": out_t, "name": c_string(n.name),
            "iface": c_string(n.iface or "default"), "protocol": c_string(proto.name),
            "source_kind": "GSQ_SRC_PCAP" if proto.source_kind == "pcap" else "GSQ_SRC_CSV",
            "is_pcap": proto.source_kind == "pcap",
            "out_stream": self.stream_index[n.name],
            "csv_fields": [f"{{{pos}u, {code}, {c_string(fname)}}}"
                           for pos, code, fname in csv_fields],
            "param_decls": p_decls, "param_init": p_init,
            "decls": decls, "steps": steps, "uses": uses,
            "query_comment": c_string(f"query {n.query.name}: {n.note}"),
            "hb_state": hb_state, "hb_body": hb_body, "has_heartbeat": bool(hb_body),
            # the heartbeat is a promise the LFTA keeps (it drops the records
            # below it) when every temporal field's bound was promised
            "hb_promise": " && ".join(f"st->hb_promised_{c_identifier(nm)}"
                                      for nm in hb_fields) if hb_body else "0",
            "prefetch_reads": prefetch_reads,
            "col_steps": col_steps, "col_reads_clock": reads_clock,
            # the columns of the chunk read as they are: (index, C type) each
            "raw_steps": (raw_steps if col_steps is not None and all(
                _RAW_CTYPE[code] for _, code, _ in csv_fields) else None),
            "branchless": branchless,
            "raw_cols": [(j, _RAW_CTYPE[code]) for j, (_, code, _) in enumerate(csv_fields)],
            "col_prefetch_reads": col_prefetch_reads if col_steps is not None else None,
            "raw_prefetch_reads": raw_prefetch_reads,
            "set_merge": set_merge,
            "hb_record_time": int(hb_record_time and bool(hb_body)),
            "time_pos": proto.fields[time_field].csv_pos if time_field else 0,
            "time_type": ((proto.fields[time_field].csv_type or proto.fields[time_field].type).code
                          if time_field else "0"),
            "time_comment": c_comment(f"time column: field {time_field}" if time_field
                                      else "no time column"),
        }
        if isinstance(n, LftaSelect):
            assigns, strs = output_assignments(em, n.output, n.select, out_t)
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
                            or f.type != col.type or f.type not in _COL_RAW:
                        gather = None
                        break
                    gather.append(f"r{col_slot(e.name)}")
            # A gathered selection with no branch on the data (and unsigned
            # heartbeat fields, whose running max starts at 0) computes a
            # block's keep bytes in one loop and packs the columns by them.
            hb_mask = [(c_identifier(nm), proto.fields[nm].type.c_type) for nm in hb_fields]
            masked = gather is not None and branchless and not reads_clock and all(
                proto.fields[nm].type in _UNSIGNED for nm in hb_fields)
            data.update(assigns=assigns, strs=strs, constants=ctx.constants,
                        hb_assigns=hb_assigns, gather=gather,
                        mask_steps=mask_steps if masked else None, hb_mask=hb_mask)
            _iface_prop_inits(ctx, data["param_decls"], data["param_init"])
            return self.env.get_template("lfta/select.c.j2").render(**data)
        return self._lfta_aggregate(n, em, ctx, data)

    def _lfta_aggregate(self, n: LftaAggregate, em: CEmitter, ctx: EmitContext, data: dict) -> str:
        """The shape of an aggregation LFTA's gsq_agg_table: a record enters
        it as a one-record group `g` (its keys, and accumulators holding its
        contribution), which fold() adds to a resident group `s`."""
        out_t = data["out_t"]
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
        fold_stmts, hit_fold = [], []
        udaf_helpers, udaf_out, udaf_destroy = [], [], []
        fn = data["fn"]
        for j, a in enumerate(n.accums):
            if a.op == "udaf":
                # a user sub-aggregate (SUBAGGR): the slot keeps its first
                # record's arguments until a second record or its output
                # makes the scratchpad live (INIT, then that first UPDATE)
                assert a.udaf is not None
                u, cls = a.udaf, self.user.udaf(a.udaf, False)
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
        assigns, strs = output_assignments(em, n.output, n.select, out_t)
        data.update(udaf_helpers=udaf_helpers, udaf_out=udaf_out, udaf_destroy=udaf_destroy,
                    strs=strs)
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
                    epoch=epoch, assigns=assigns, table_size=n.table_size, ways=n.table_ways,
                    disorder=n.disorder, flush=n.flush, constants=ctx.constants)
        _iface_prop_inits(ctx, data["param_decls"], data["param_init"])
        return self.env.get_template("lfta/aggregate.c.j2").render(**data)

    # -------------------------------------------------------------- HFTA
    def _hfta_common(self, n: HftaNode, functor: str) -> dict:
        ident = self.idents[n.name]
        return {
            "functor": functor, "out_t": self.tup(n.name), "ident": ident,
            "def_name": f"hfta_{ident}_def", "name": c_string(n.name),
            "in_streams": ", ".join(str(self.stream_index[s]) for s in n.inputs),
            "out_stream": self.stream_index[n.name],
            "query_comment": c_string(f"query {n.query.name}: {n.note}"),
        }

    def _hfta_merge(self, n: HftaMerge) -> str:
        ident = self.idents[n.name]
        col = n.output.get(n.merge.field)
        data = self._hfta_common(n, "")
        head = (f"{data['name']}, {len(n.inputs)}, {ident}_inputs, {data['out_stream']}")
        data.update(merge_def=merge_def(data["def_name"], col, self.tup(n.inputs[0]), n.ordered,
                                        n.merge.slack, head))
        return self.env.get_template("hfta/merge.c.j2").render(**data)

    def _join_sides(self, n: HftaJoin, ident: str) -> tuple:
        """What a join and a filter join share.  Returns access(var, side,
        name), the C++ reading field `name` of input `side` through the
        tuple pointer `var`; an emitter per input over its tuple `in`; and
        the template data built with them: the input types, each input's
        WHERE filters, the key struct with the code filling it from either
        input, and the query parameters."""
        from ..semantics.types import arithmetic_result

        def access(var: str, side: int, name: str) -> str:
            col = n.input_defs[side].get(name)
            m = field_member(name)
            return f"gsq_tuple_str({var}, {var}->{m})" if col.type is Type.STRING else f"{var}->{m}"

        def side_emitter(side: int) -> CEmitter:
            def resolve(e):
                if isinstance(e, FieldRef):
                    assert e.source == side
                    return access("in", side, e.name)
                return None
            return CEmitter(EmitContext(resolve, _hfta_param, const_prefix=f"{ident}_k{side}",
                                         user=self.user))

        j = n.join
        lem, rem = side_emitter(0), side_emitter(1)
        key_members, key_eq, key_hash, lkeys, rkeys = [], [], [], [], []
        for i, (le, re_) in enumerate(j.keys):
            lt, rt = le.info.type, re_.info.type
            t = lt if lt == rt or not (lt.is_numeric and rt.is_numeric) else arithmetic_result(lt, rt)
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
        lwhere = [f"if (!{lem.expr(c)}) return false;  {_expr_comment(c, n)}" for c in j.filters[0]]
        rwhere = [f"if (!{rem.expr(c)}) return false;  {_expr_comment(c, n)}" for c in j.filters[1]]
        p_decls, p_init = param_inits(n.params, _hfta_param, "return;")
        data = dict(
            key_members=key_members, key_eq=" && ".join(key_eq) or "true", key_hash=key_hash,
            left_t=self.tup(n.inputs[0]), right_t=self.tup(n.inputs[1]),
            left_where=lwhere, right_where=rwhere, left_keys=lkeys, right_keys=rkeys,
            param_decls=p_decls, param_init=p_init)
        return access, lem, rem, data

    def _hfta_join(self, n: HftaJoin) -> str:
        from ..semantics.types import arithmetic_result
        j = n.join
        ident = self.idents[n.name]
        data = self._hfta_common(n, f"{ident}_functor")
        access, lem, rem, sides = self._join_sides(n, ident)

        def default(t: Type) -> str:
            if t is Type.STRING:
                return 'gsq_str_lit("", 0u)'
            if t is Type.IPV6:
                return "gsq_ipv6{}"
            return f"(({t.c_type})0)"

        def out_resolve(e):
            if not isinstance(e, FieldRef):
                return None
            var, ovar = ("l", "r") if e.source == 0 else ("r", "l")
            t = e.info.type
            present = access(var, e.source, e.name)
            fill = j.fill.get((e.source, e.name))
            if fill is not None:
                other = access(ovar, fill[0], fill[1])
                if t not in (Type.STRING, Type.IPV6):
                    other = f"(({t.c_type})({other}))"
                return f"({var} ? {present} : {other})"
            return f"({var} ? {present} : {default(t)})"

        octx = EmitContext(out_resolve, _hfta_param, const_prefix=ident + "_ko", user=self.user)
        oem = CEmitter(octx)
        time_t = arithmetic_result(j.time[0].info.type, j.time[1].info.type) or j.time[0].info.type
        assigns, strs = output_assignments(oem, n.output, n.select, data["out_t"])
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
        hb_assigns, joint_assigns = [], []
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
                bound = "lowest" if col.temporal is Temporal.INCREASING else "max"
                no_bound = f"t.{m} = std::numeric_limits<{ct}>::{bound}();"
                hb_assigns.append(no_bound)
                joint_assigns.append(no_bound)
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
        return self.env.get_template("hfta/join.cpp.j2").render(**data)

    def _hfta_filter_join(self, n: HftaFilterJoin) -> str:
        """FILTER_JOIN: a gsq::filter_join_op functor.  Input 0 (R) gives
        keys and times only; the output row is computed from the S tuple,
        a key field of R reading the S field WHERE equates it with."""
        from ..semantics.types import arithmetic_result
        j = n.join
        ident = self.idents[n.name]
        data = self._hfta_common(n, f"{ident}_functor")
        access, lem, rem, sides = self._join_sides(n, ident)

        def out_resolve(e):
            if not isinstance(e, FieldRef):
                return None
            if e.source == 1:
                return access("s", 1, e.name)
            _, sname = j.fill[(0, e.name)]   # analysis admits only key fields of R
            v = access("s", 1, sname)
            t = e.info.type
            return v if t in (Type.STRING, Type.IPV6) else f"(({t.c_type})({v}))"

        octx = EmitContext(out_resolve, _hfta_param, const_prefix=ident + "_ko", user=self.user)
        oem = CEmitter(octx)
        col, s_time = j.time
        tt = arithmetic_result(col.info.type, s_time.info.type) or col.info.type
        assigns, strs = output_assignments(oem, n.output, n.select, data["out_t"])

        # The output heartbeat at S time tm: a temporal column over S's time
        # field alone is evaluated at tm; any other temporal column gets the
        # bound that promises nothing (the lowest value if increasing).
        s_field = s_time.name if isinstance(s_time, FieldRef) else None

        def hb_resolve(e):
            if isinstance(e, FieldRef):
                return f"(({e.info.type.c_type})tm)"
            return None
        hem = CEmitter(EmitContext(hb_resolve, _hfta_param, const_prefix=ident + "_kh", user=self.user))
        hb_assigns = []
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
                bound = "lowest" if ocol.temporal is Temporal.INCREASING else "max"
                hb_assigns.append(f"t.{m} = std::numeric_limits<{ct}>::{bound}();")
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
        return self.env.get_template("hfta/filter_join.cpp.j2").render(**data)

    def _hfta(self, n: "HftaSelect | HftaAggregate") -> str:
        ident = self.idents[n.name]
        functor = f"{ident}_functor"
        out_t = self.tup(n.name)
        in_t = self.tup(n.inputs[0])
        in_def = n.input_defs[0]

        def in_field(name: str) -> str:
            col = in_def.get(name)
            assert col is not None, name
            m = field_member(name)
            if col.type is Type.STRING:
                return f"gsq_tuple_str(in, in->{m})"
            return f"in->{m}"

        def key_ref(i: int) -> str:
            t = n.group_by[i][1].info.type
            if t is Type.STRING:
                return f"gsq_str_lit(k.k{i}.data(), (uint32_t)k.k{i}.size())"
            return f"k.k{i}"

        def accum_ref(j: int) -> str:
            t = n.accums[j].type
            if t is Type.STRING:
                return f"gsq_str_lit(s.a{j}.data(), (uint32_t)s.a{j}.size())"
            return f"s.a{j}"

        def resolve(e: ast.Expr) -> Optional[str]:
            if isinstance(e, FieldRef):
                return in_field(e.name)
            if isinstance(e, GroupRef):
                return key_ref(e.index)
            if isinstance(e, AggRef):
                ap = n.aggs[e.index]
                if ap.final == "udaf":   # its output, taken once in emit()
                    return f"u{ap.accums[0]}"
                if ap.final == "avg":
                    return f"((double)s.a{ap.accums[0]} / (double)s.a{ap.accums[1]})"
                return accum_ref(ap.accums[0])
            if isinstance(e, SuperAggRef):   # a sampling query's supergroup
                assert isinstance(n, HftaAggregate) and n.sampling is not None
                op = n.sampling.superaggs[e.index][0]
                return "sg.n_groups" if op == "count_distinct" else f"sg.sa{e.index}"
            return None

        sampling = n.sampling if isinstance(n, HftaAggregate) else None
        ctx = EmitContext(resolve, lambda p: f"p_{c_identifier(p)}", user=self.user,
                          functor=True, partial_ok=True,
                          regex_ref=lambda v: f"{v}.get()",   # a gsq::regex member
                          const_prefix=ident + "_k")
        if sampling is not None:
            # stateful functions use their supergroup's block, told its groups
            ctx.state_ref = lambda st: f"sg.sf_{st}.get()"
            ctx.samples_ref = "(int)sg.n_groups"
        em = CEmitter(ctx)
        p_decls, p_init = param_inits(n.params, lambda p: f"p_{c_identifier(p)}", "return;")
        data = {
            "functor": functor, "out_t": out_t, "in_t": in_t,
            "def_name": f"hfta_{ident}_def", "name": c_string(n.name),
            "ident": ident,
            "in_streams": ", ".join(str(self.stream_index[s]) for s in n.inputs),
            "out_stream": self.stream_index[n.name],
            "param_decls": p_decls, "param_init": p_init,
            "query_comment": c_string(f"query {n.query.name}: {n.note}"),
        }
        # WHERE, emitted first (the order numbers regexes and constants);
        # where(reject) gives the checks, `reject` leaving on a failed one
        conds = [(em.expr(c), _expr_comment(c, n)) for c in n.where]

        def where(reject: str) -> list[str]:
            return [f"if (!{c}) {reject}  {comment}" for c, comment in conds]

        if isinstance(n, HftaSelect):
            assigns, strs = output_assignments(em, n.output, n.select, out_t)
            data["hb_assigns"] = [f"t.{field_member(col.name)} = {em.as_type(e, col.type)};"
                                  for col, (_, e) in zip(n.output.columns, n.select)
                                  if col.temporal.is_temporal]
            data.update(where=where("return;"), assigns=assigns,
                        strs=strs, regexes=_regex_data(ctx), constants=ctx.constants,
                        handles=ctx.handles, partial=ctx.partial_used,
                        states=[{"cls": cls, "var": f"sf_{c_identifier(st)}"}
                                for st, cls in sorted(ctx.states.items())])
            return self.env.get_template("hfta/select.cpp.j2").render(**data)

        key_members, key_eq, key_hash, extract = [], [], [], []
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
        # a PARTIAL function in an aggregate's argument is evaluated in
        # extract() (cexpr: partial_cache); no value there drops the tuple
        ctx.partial_cache = []
        state_members, init, update, udaf_outputs = [], [], [], []
        # a running aggregation (CLOSING_WHEN): carrying a group into the
        # next epoch, and the first tuple of a carried group
        carry, fresh_update = [], []
        for j, a in enumerate(n.accums):
            if a.op == "udaf":
                assert a.udaf is not None
                cls = self.user.udaf(a.udaf, True)
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
        cached, ctx.partial_cache = ctx.partial_cache, None
        extract += [f"{var} = {code};" for var, _, code in cached]
        partial_members = [f"{ct} {var}{{}};   // a PARTIAL call's value, taken in extract()"
                           for var, ct, _ in cached]
        partial_in_extract = ctx.partial_used
        closing = None
        if n.closing is not None:
            state_members.append("bool fresh_ = false;   // carried into its epoch, no tuple yet")
            update = ["if (s.fresh_) {", "    s.fresh_ = false;",
                      *("    " + x for x in fresh_update), "    return;", "}", *update]
            ctx.partial_ok = False
            closing = em.expr(n.closing)
            ctx.partial_ok = True
        epoch = []
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
        hem = CEmitter(EmitContext(hb_resolve, lambda p: f"p_{c_identifier(p)}", user=self.user,
                                   const_prefix=ident + "_kh"))
        hb_assigns = []
        for col, (_, e) in zip(n.output.columns, n.select):
            if not col.temporal.is_temporal:
                continue
            if all(x.index in epoch_set for x in walk(e) if isinstance(x, GroupRef)) \
                    and not any(isinstance(x, AggRef) for x in walk(e)):
                hb_assigns.append(f"t.{field_member(col.name)} = {hem.as_type(e, col.type)};")
            elif col.type.is_numeric:
                bound = "lowest" if col.temporal is Temporal.INCREASING else "max"
                hb_assigns.append(f"t.{field_member(col.name)} = "
                                  f"std::numeric_limits<{col.type.c_type}>::{bound}();")
        data["hb_assigns"] = hb_assigns
        # Joint punctuation (seed 004 section 7): the temporal keys over the
        # join's left and right times, evaluated on its joint punctuation.
        joint = []
        for side, idx in (("l", n.joint_left), ("r", n.joint_right)):
            for i in idx:
                e = n.group_by[i][1]
                joint.append({"i": i, "side": side, "ctype": e.info.type.c_type,
                              "before": "<" if e.info.temporal is Temporal.INCREASING else ">",
                              "later": ">" if e.info.temporal is Temporal.INCREASING else "<",
                              "infer": em.as_type(e, e.info.type)})
        data.update(joint=joint, ordered_output=n.ordered_output,
                    # a side whose keys are all in the epoch decides for a whole epoch
                    joint_epoch_sides=[sd for sd, idx in (("l", n.joint_left), ("r", n.joint_right))
                                       if idx and set(idx) <= epoch_set])
        having = None
        used_before = ctx.partial_used
        ctx.partial_used = False
        if n.having is not None:
            having = f"if (!{em.expr(n.having)}) return;  {_expr_comment(n.having, n)}"
        assigns, strs = output_assignments(em, n.output, n.select, out_t)
        # a PARTIAL function in HAVING or SELECT: no value, no output
        partial_emit = ctx.partial_used
        ctx.partial_used = used_before or partial_emit
        data.update(partial_emit=partial_emit, partial_members=partial_members)
        data.update(where=where("return false;"),
                    key_members=key_members, key_eq=" && ".join(key_eq) or "true",
                    key_hash=key_hash, extract=extract, state_members=state_members,
                    init=init, update=update, epoch=epoch, having=having,
                    udaf_outputs=udaf_outputs, closing=closing, carry=carry,
                    assigns=assigns, strs=strs, regexes=_regex_data(ctx), constants=ctx.constants,
                    handles=ctx.handles, partial=partial_in_extract or partial_emit,
                    partial_extract=partial_in_extract,
                    disorder=n.disorder, strict_heartbeats=n.strict_heartbeats,
                    flush_policy=("gsq::flush_policy::immediate" if n.flush == "immediate"
                                  else "gsq::flush_policy::slow"),
                    operator=(f"gsq::running_op<{functor}>" if n.closing is not None else None))
        if sampling is not None:
            return self._sample_render(n, sampling, em, ctx, data)
        return self.env.get_template("hfta/aggregate.cpp.j2").render(**data)

    def _sample_render(self, n: HftaAggregate, sp: SamplingPlan, em: CEmitter,
                       ctx: EmitContext, data: dict) -> str:
        """A sampling query's functor (gsq::sampling_op): the aggregation's
        parts, and the supergroup's key, super-aggregates and states."""
        sg_members, sg_key_members, sg_key_eq, sg_key_hash, sg_fill = [], [], [], [], []
        for i in sp.supergroup:
            t = n.group_by[i][1].info.type
            sg_key_members.append(f"std::string k{i};" if t is Type.STRING
                                  else f"{t.c_type} k{i}{{}};")
            sg_key_eq.append(key_equal(t, f"a.k{i}", f"b.k{i}"))
            sg_key_hash.append(key_hash_step(t, f"k.k{i}"))
            sg_fill.append(f"g.k{i} = k.k{i};")
        sg_update = []
        for j, (op, arg, t) in enumerate(sp.superaggs):
            if op == "count_distinct":
                continue
            sg_members.append(f"{t.c_type} sa{j}{{}};")
            if op == "count":
                sg_update.append(f"sg.sa{j} += 1;")
                continue
            assert arg is not None
            val = em.as_type(arg, t)
            if op == "sum":
                sg_update += fold("sum", t, f"sg.sa{j}", val, False, True)
            else:   # min, max: the first value, then folded
                sg_members.append(f"bool sa{j}_set = false;")
                sg_update.append(f"if (!sg.sa{j}_set) {{ sg.sa{j} = {val}; sg.sa{j}_set = true; }}")
                sg_update += [f"else {x}" for x in fold(op, t, f"sg.sa{j}", val, False, True)]
        ctx.partial_ok = False
        cw = em.expr(sp.cleaning_when) if sp.cleaning_when is not None else "false"
        cb = em.expr(sp.cleaning_by) if sp.cleaning_by is not None else "true"
        # every state a stateful function of the query uses (emission above
        # collected them)
        states = [{"cls": cls, "var": f"sf_{c_identifier(st)}"}
                  for st, cls in sorted(ctx.states.items())]
        sg_members += [f"{st['cls']} {st['var']};" for st in states]
        data.update(sg_members=sg_members, sg_key_members=sg_key_members,
                    sg_key_eq=" && ".join(sg_key_eq) or "true", sg_key_hash=sg_key_hash,
                    sg_key_fill=sg_fill, sg_update=sg_update, states=states,
                    cleaning_when=cw, cleaning_by=cb, handles=ctx.handles, partial=ctx.partial_used,
                    constants=ctx.constants, regexes=_regex_data(ctx))
        return self.env.get_template("hfta/sample.cpp.j2").render(**data)


# The Generator method rendering each kind of node.
_RENDERERS: dict[type, Callable[[Generator, Any], str]] = {
    LftaSelect: Generator._lfta, LftaAggregate: Generator._lfta,
    HftaSelect: Generator._hfta, HftaAggregate: Generator._hfta,
    HftaMerge: Generator._hfta_merge, HftaJoin: Generator._hfta_join,
    HftaFilterJoin: Generator._hfta_filter_join,
}


def generate(plan: Plan, runner_sets: "Sequence[tuple[str, str]]" = (),
             udf: "Sequence[str]" = ()) -> GeneratedSet:
    """The generated files of `plan`.  runner_sets: (set, member) pairs the
    stand-alone runner binds by default (`gsqlc compile --interfaces`); the
    library itself does not depend on them.  udf: the user's function
    sources, built into the library (backend/udf_build.py)."""
    return Generator(plan).generate(runner_sets, udf)
