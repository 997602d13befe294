"""Calling the user's functions and aggregates in Tigon's calling convention.

A def file declares them (semantics/user_functions.py); the user's C and C++
sources (`--udf`) define them as Tigon's would be defined, against Tigon's
type names (gs_uint32_t, vstring, struct gs_string; runtime_c/tigon_compat/
holds headers of Tigon's names that give them).  This module writes
gsqlc_udf.h, which the generated units include through streams.h:

  * the prototypes Tigon's convention gives each declaration used:
      LFTA (C):   T f(args)  or, for a string result or a PARTIAL function,
                  gs_retval_t f(T *result, args); strings as struct gs_string *
                  NAME_LFTA_AGGR_INIT_/UPDATE_/FLUSHME_/OUTPUT_/DESTROY_
      HFTA (C++): the same with vstring *, and NAME_HFTA_AGGR_..., no FLUSHME_
    An aggregate's scratchpad is passed as gs_sp_t (fstringN: N bytes) or as
    a pointer to its one value (a typed scratchpad: `uint`, `string`);
  * wrappers in gsqlc's own types (gsq_str, uint32_t, ...) that convert, so
    expression code calls `gsq_udf_<id>(...)` like any built-in, and an
    aggregate is a `gsq_udaf_<id>` state (C: a struct and five functions;
    C++: an RAII class that destroys its scratchpad with DESTROY_).

The wrappers are keyed by a C identifier made of the name and the parameter
types (overloads are distinct functions in C++, and distinct declarations).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ..semantics.catalog import ScalarFunction, UdafSpec
from ..semantics.types import Type

# Tigon's C type of a value of each GSQL type (its gstypes.h names).
_TIGON_SCALAR = {
    Type.BOOL: "gs_uint32_t", Type.USHORT: "gs_uint32_t", Type.UINT: "gs_uint32_t",
    Type.INT: "gs_int32_t", Type.ULLONG: "gs_uint64_t", Type.LLONG: "gs_int64_t",
    Type.FLOAT: "gs_float_t", Type.IP: "gs_uint32_t",
}


def supported_type(t: Type) -> bool:
    """Whether a value of t can cross to a user function (IPV6 cannot yet)."""
    return t in _TIGON_SCALAR or t is Type.STRING


def _tigon_type(t: Type, cxx: bool) -> str:
    if t is Type.STRING:
        return "vstring" if cxx else "struct gs_string"
    return _TIGON_SCALAR[t]


def param_types(params: "tuple[object, ...] | tuple[Type, ...]") -> tuple[Type, ...]:
    """A user function's parameter types (a user function's parameters are
    all types; a built-in's may name a class of argument instead)."""
    types = tuple(t for t in params if isinstance(t, Type))
    assert len(types) == len(params), params
    return types


def ident(name: str, params: tuple[Type, ...]) -> str:
    return name + "".join("_" + t.value.lower() for t in params)


@dataclass
class UserCode:
    """The user functions and aggregates a query set calls, collected while
    its units are generated; `header()` writes gsqlc_udf.h."""
    lfta_scalars: dict[str, ScalarFunction] = field(default_factory=dict)
    hfta_scalars: dict[str, ScalarFunction] = field(default_factory=dict)
    lfta_udafs: dict[str, UdafSpec] = field(default_factory=dict)
    hfta_udafs: dict[str, UdafSpec] = field(default_factory=dict)
    # HFTA handle classes: class name -> (function, parameter slot)
    handles: dict[str, tuple["ScalarFunction | UdafSpec", int]] = field(default_factory=dict)
    # stateful functions' state blocks: class name -> (STATE name, bytes, a
    # function declaring it)
    states: dict[str, tuple[str, int, ScalarFunction]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.lfta_scalars or self.hfta_scalars or self.lfta_udafs
                    or self.hfta_udafs)

    def scalar(self, f: ScalarFunction, cxx: bool) -> str:
        """The wrapper to call for f at a level (C++ is the HFTA's)."""
        i = ident(f.name, param_types(f.params))
        (self.hfta_scalars if cxx else self.lfta_scalars)[i] = f
        return f"gsq_udf_{i}"

    def handle(self, f: "ScalarFunction | UdafSpec", slot: int) -> str:
        """The class holding an HFTA's registered handle of the parameter
        `slot` of f, a function or an aggregate (Tigon's
        register_handle_for_F_slot_N)."""
        cls = f"gsq_uh_{ident(f.name, param_types(f.params))}_{slot}"
        self.handles[cls] = (f, slot)
        return cls

    def state(self, f: ScalarFunction) -> str:
        """The class holding the STATE block of stateful function f for an
        HFTA functor's life (Tigon's _sfun_state_clean_init_/destroy_)."""
        assert f.state is not None
        cls = f"gsq_sfstate_{f.state}"
        self.states.setdefault(cls, (f.state, f.state_bytes, f))
        return cls

    def udaf(self, u: UdafSpec, cxx: bool) -> str:
        """The state type of aggregate u at a level."""
        i = ident(u.name, u.params)
        (self.hfta_udafs if cxx else self.lfta_udafs)[i] = u
        return f"gsq_udaf_{i}"

    # ------------------------------------------------------------ gsqlc_udf.h

    def header(self) -> str:
        out = ["/* gsqlc_udf.h -- generated by gsqlc: the user's functions and aggregates",
               " * this query set calls, declared in Tigon's calling convention, and",
               " * wrappers in gsqlc's types (backend/user_code.py). */",
               "#ifndef GSQLC_UDF_H", "#define GSQLC_UDF_H", "",
               '#include "gsq_types.h"', '#include "gstypes.h"', '#include "vstring.h"',
               '#include "rts_string.h"', ""]
        out += ["#ifndef __cplusplus", "/* ---- LFTA (C) */"]
        for i, f in sorted(self.lfta_scalars.items()):
            out += _scalar_code(i, f, False)
        for i, u in sorted(self.lfta_udafs.items()):
            out += _udaf_c(i, u)
        out += ["#else", "/* ---- HFTA (C++) */", "#include <cstdlib>", "#include <cstring>",
                "#include <memory>", "#include <string>", ""]
        for cls, (h, slot) in sorted(self.handles.items()):
            out += _handle_class(cls, h, slot)
        for cls, (name, nbytes, sf) in sorted(self.states.items()):
            out += _state_class(cls, name, nbytes, sf)
        for i, f in sorted(self.hfta_scalars.items()):
            out += _scalar_code(i, f, True)
        for i, u in sorted(self.hfta_udafs.items()):
            out += _udaf_cxx(i, u)
        out += ["#endif", "", "#endif", ""]
        return "\n".join(out)

    def symbols(self) -> dict[str, object]:
        """Each user symbol the generated code calls -> the def line's
        declaration (FunctionDecl), for locating a missing definition."""
        out: dict[str, object] = {}
        for fs in (self.lfta_scalars, self.hfta_scalars):
            for f in fs.values():
                out[f.name] = f.decl
        for name, _, sf in self.states.values():
            for step in ("clean_init", "destroy", "dirty_init", "final_init"):
                out[f"_sfun_state_{step}_{name}"] = sf.decl
        for h, slot in self.handles.values():
            out[f"register_handle_for_{h.name}_slot_{slot}"] = h.decl
            out[f"deregister_handle_for_{h.name}_slot_{slot}"] = h.decl
        for level, us in (("LFTA", self.lfta_udafs), ("HFTA", self.hfta_udafs)):
            for u in us.values():
                for step in _steps(u, level):
                    out[f"{u.name}_{level}_AGGR_{step}_"] = u.decl
        return out


def _steps(u: UdafSpec, level: str) -> list[str]:
    steps = ["INIT", "UPDATE", "OUTPUT", "DESTROY"]
    if level == "LFTA":
        steps.insert(2, "FLUSHME")
    if level == "HFTA" and u.running:
        steps.append("REINIT")
    return steps


def _arg_decls(params: tuple[Type, ...], cxx: bool) -> list[str]:
    """The user function's parameter types, in Tigon's convention."""
    return [_tigon_type(t, cxx) + (" *" if t is Type.STRING else "") for t in params]


def _arg_convert(params: tuple[Type, ...], cxx: bool) -> tuple[list[str], list[str], list[str]]:
    """Wrapper parameters (gsqlc types), conversion statements, and the
    arguments passed on."""
    decls, stmts, passed = [], [], []
    for k, t in enumerate(params):
        decls.append(f"{t.c_type} a{k}")
        if t is Type.STRING:
            if cxx:
                stmts.append(f"vstring s{k}; s{k}.length = (gs_int32_t)a{k}.len; "
                             f"s{k}.offset = (gs_p_t)a{k}.p; s{k}.reserved = SHALLOW_COPY;")
            else:
                stmts.append(f"struct gs_string s{k}; s{k}.length = (gs_int32_t)a{k}.len; "
                             f"s{k}.data = (gs_sp_t)(uintptr_t)a{k}.p; s{k}.owner = 0;")
            passed.append(f"&s{k}")
        else:
            passed.append(f"({_TIGON_SCALAR[t]})a{k}")
    return decls, stmts, passed


def _result_from(var: str, t: Type, cxx: bool) -> str:
    """The gsqlc value of Tigon result variable `var`."""
    if t is Type.STRING:
        if cxx:
            return f"gsq_str_lit((const char *){var}.offset, (uint32_t){var}.length)"
        return f"gsq_str_lit((const char *){var}.data, (uint32_t){var}.length)"
    if t is Type.BOOL:
        return f"(uint8_t)({var} != 0)"
    return f"({t.c_type}){var}"


def _scalar_code(i: str, f: ScalarFunction, cxx: bool) -> list[str]:
    """The prototype and wrapper of a user function.  The wrapper takes, in
    order: a PARTIAL function's failure flag (bool &, set when it returns no
    value), the registered handles of its HANDLE parameters (slot order),
    then its other arguments in gsqlc's types."""
    params = param_types(f.params)
    rt = f.result_type([])
    by_pointer = rt is Type.STRING or f.partial
    proto_args = [("gs_param_handle_t" if k in f.handle_args else a)
                  for k, a in enumerate(_arg_decls(params, cxx))]
    if f.state is not None:   # a stateful function: its state, the groups sampled
        proto_args = ["void *", "int", *proto_args]
    if by_pointer:
        proto = f"gs_retval_t {f.name}({', '.join([_tigon_type(rt, cxx) + ' *', *proto_args])});"
    else:
        proto = f"{_tigon_type(rt, cxx)} {f.name}({', '.join(proto_args) or 'void'});"
    plain = tuple(t for k, t in enumerate(params) if k not in f.handle_args)
    decls, stmts, plain_passed = _arg_convert(plain, cxx)
    handles = [f"gs_param_handle_t h{k}" for k in f.handle_args]
    it = iter(plain_passed)
    passed = [f"h{k}" if k in f.handle_args else next(it) for k in range(len(params))]
    lead = (["bool &failed_"] if f.partial else []) + handles
    if f.state is not None:
        # the state block and curr_num_samples: its supergroup's groups
        # (0 in a selection)
        lead = ["void *state_", "int samples_", *lead]
        passed = ["state_", "samples_", *passed]
    body = [f"static inline {rt.c_type} gsq_udf_{i}({', '.join(lead + decls) or 'void'})", "{"]
    body += ["    " + s for s in stmts]
    if by_pointer:
        body.append(f"    {_tigon_type(rt, cxx)} r;")
        body.append("    memset(&r, 0, sizeof r);")
        if f.partial:
            body.append(f"    if ({f.name}({', '.join(['&r', *passed])}) != 0) {{")
            body.append("        failed_ = true;   // no value: the tuple is dropped")
            body.append(f"        return {rt.c_type}{{}};")
            body.append("    }")
        else:
            body.append(f"    (void){f.name}({', '.join(['&r', *passed])});")
        body.append(f"    return {_result_from('r', rt, cxx)};")
    else:
        body.append(f"    {_tigon_type(rt, cxx)} r = {f.name}({', '.join(passed)});")
        body.append(f"    return {_result_from('r', rt, cxx)};")
    body.append("}")
    return [f"/* {f.decl.kind if f.decl else 'FUN'} {f.name}: {_where(f.decl)} */", proto,
            *body, ""]


def _handle_class(cls: str, f: "ScalarFunction | UdafSpec", slot: int) -> list[str]:
    """An HFTA functor's member holding the handle Tigon's
    register_handle_for_F_slot_N gives for a constant argument, released by
    deregister_handle_for_F_slot_N with the functor."""
    t = f.params[slot]
    assert isinstance(t, Type)
    reg, dereg = f"register_handle_for_{f.name}_slot_{slot}", \
        f"deregister_handle_for_{f.name}_slot_{slot}"
    decls, stmts, passed = _arg_convert((t,), True)
    return [f"// the handle of {f.name}'s parameter {slot + 1} (HANDLE): {_where(f.decl)}",
            f"gs_param_handle_t {reg}({_arg_decls((t,), True)[0]});",
            f"gs_retval_t {dereg}(gs_param_handle_t);",
            f"class {cls} {{",
            "    gs_param_handle_t h_{};",
            "    bool open_ = false;",
            "",
            "public:",
            f"    {cls}() = default;",
            f"    {cls}(const {cls} &) = delete;",
            f"    {cls} &operator=(const {cls} &) = delete;",
            f"    ~{cls}() {{ if (open_) (void){dereg}(h_); }}",
            f"    void open({decls[0]})",
            "    {",
            *("        " + x for x in stmts),
            f"        h_ = {reg}({passed[0]});",
            "        open_ = true;",
            "    }",
            "    gs_param_handle_t get() const { return h_; }",
            "};", ""]


def _state_class(cls: str, name: str, nbytes: int, f: ScalarFunction) -> list[str]:
    """A STATE block of stateful functions (Tigon's convention): empty until
    clean() (_sfun_state_clean_init_) or dirty() from the previous window's
    block (_sfun_state_dirty_init_); final() before a window's output
    (_sfun_state_final_init_); destroyed with its holder (_sfun_state_destroy_).
    Its block stays put while a supergroup table moves its holder."""
    init, destroy = f"_sfun_state_clean_init_{name}", f"_sfun_state_destroy_{name}"
    dirty, final = f"_sfun_state_dirty_init_{name}", f"_sfun_state_final_init_{name}"
    return [f"// STATE {name}: the block its stateful functions share ({_where(f.decl)})",
            f"void {init}(void *);", f"void {destroy}(void *);",
            f"void {dirty}(void *, void *, int);", f"void {final}(void *, int);",
            f"class {cls} {{",
            f"    struct block {{ alignas(16) char b[{nbytes}]; }};",
            "    std::unique_ptr<block> b_;",
            "    void release() noexcept",
            "    {",
            f"        if (b_) {destroy}(b_->b);",
            "        b_.reset();",
            "    }",
            "",
            "public:",
            f"    {cls}() = default;",
            f"    {cls}({cls} &&o) noexcept : b_(std::move(o.b_)) {{}}",
            f"    {cls} &operator=({cls} &&o) noexcept",
            "    {",
            "        if (this != &o) {",
            "            release();",
            "            b_ = std::move(o.b_);",
            "        }",
            "        return *this;",
            "    }",
            f"    {cls}(const {cls} &) = delete;",
            f"    {cls} &operator=(const {cls} &) = delete;",
            f"    ~{cls}() {{ release(); }}",
            "    void clean()",
            "    {",
            "        release();",
            "        b_ = std::make_unique<block>();",
            f"        {init}(b_->b);",
            "    }",
            f"    void dirty(const {cls} &old, int n)",
            "    {",
            "        if (!old.b_) {",
            "            clean();",
            "            return;",
            "        }",
            "        release();",
            "        b_ = std::make_unique<block>();",
            f"        {dirty}(b_->b, old.b_->b, n);",
            "    }",
            f"    void final(int n) {{ if (b_) {final}(b_->b, n); }}",
            "    void *get() const { return b_ ? b_->b : nullptr; }",
            "};", ""]


def _where(decl: Optional[object]) -> str:
    span = getattr(decl, "span", None)
    return f"{span.file}:{span.line}" if span is not None else "a def file"


def _scratch(u: UdafSpec, cxx: bool) -> tuple[str, str]:
    """The scratchpad's storage declaration and the expression passing it
    (from a pointer `s` to the state)."""
    if u.storage_bytes is not None:
        align = "alignas(16) " if cxx else "_Alignas(16) "
        return f"{align}char b[{u.storage_bytes}];", "(gs_sp_t)s->b"
    assert u.storage_type is not None
    return f"{_tigon_type(u.storage_type, cxx)} v;", "&s->v"


def _udaf_protos(u: UdafSpec, level: str, cxx: bool) -> list[str]:
    if u.storage_bytes is not None:
        sp = "gs_sp_t"
    else:
        assert u.storage_type is not None
        sp = _tigon_type(u.storage_type, cxx) + " *"
    args = ", ".join([sp, *("gs_param_handle_t" if k in u.handle_args else a
                            for k, a in enumerate(_arg_decls(u.params, cxx)))])
    out = _tigon_type(u.result, cxx) + " *"
    p = f"{u.name}_{level}_AGGR_"
    protos = [f"void {p}INIT_({sp});", f"void {p}UPDATE_({args});"]
    if level == "LFTA":
        protos.append(f"gs_retval_t {p}FLUSHME_({sp});")
    protos += [f"void {p}OUTPUT_({out}, {sp});", f"void {p}DESTROY_({sp});"]
    if level == "HFTA" and u.running:
        protos.append(f"void {p}REINIT_({sp});")
    return protos


def _udaf_c(i: str, u: UdafSpec) -> list[str]:
    storage, scratch = _scratch(u, False)
    t = f"gsq_udaf_{i}"
    p = f"{u.name}_LFTA_AGGR_"
    decls, stmts, passed = _arg_convert(u.params, False)
    rt = u.result
    out = [f"/* UDAF {u.name} in an LFTA: {_where(u.decl)} */", *_udaf_protos(u, "LFTA", False),
           f"typedef struct {t} {{ {storage} }} {t};",
           f"static inline void {t}_init({t} *s) {{ {p}INIT_({scratch}); }}",
           f"static inline void {t}_update({', '.join([f'{t} *s', *decls])})", "{",
           *("    " + x for x in stmts),
           f"    {p}UPDATE_({', '.join([scratch, *passed])});", "}",
           f"static inline int {t}_flushme({t} *s) {{ return {p}FLUSHME_({scratch}) != 0; }}",
           f"static inline {rt.c_type} {t}_output({t} *s)", "{",
           f"    {_tigon_type(rt, False)} r;", "    memset(&r, 0, sizeof r);",
           f"    {p}OUTPUT_(&r, {scratch});", f"    return {_result_from('r', rt, False)};", "}",
           f"static inline void {t}_destroy({t} *s) {{ {p}DESTROY_({scratch}); }}", ""]
    return out


def _udaf_cxx(i: str, u: UdafSpec) -> list[str]:
    storage, scratch = _scratch(u, True)
    scratch = scratch.replace("s->", "s_->")
    t = f"gsq_udaf_{i}"
    p = f"{u.name}_HFTA_AGGR_"
    # a HANDLE parameter: the functor's registered handle, passed as it is
    plain = tuple(x for k, x in enumerate(u.params) if k not in u.handle_args)
    decls, stmts, plain_passed = _arg_convert(plain, True)
    it = iter(zip(decls, plain_passed))
    decls, passed = [], []
    for k in range(len(u.params)):
        if k in u.handle_args:
            decls.append(f"gs_param_handle_t h{k}")
            passed.append(f"h{k}")
        else:
            d, a = next(it)
            decls.append(d)
            passed.append(a)
    rt = u.result
    if rt is Type.STRING:
        ret, out_stmts = "gsq_str", [
            "        vstring r;", "        std::memset(&r, 0, sizeof r);",
            f"        {p}OUTPUT_(&r, {scratch});",
            "        out_.assign(r.length > 0 ? (const char *)r.offset : \"\", "
            "(size_t)(r.length > 0 ? r.length : 0));",
            "        if (r.length > 0 && r.reserved == INTERNAL)",
            "            std::free((void *)r.offset);   // the aggregate's copy, now ours",
            "        return gsq_str_lit(out_.data(), (uint32_t)out_.size());"]
    else:
        ret, out_stmts = rt.c_type, [
            f"        {_tigon_type(rt, True)} r{{}};", f"        {p}OUTPUT_(&r, {scratch});",
            f"        return {_result_from('r', rt, True)};"]
    return [f"// UDAF {u.name} in an HFTA: {_where(u.decl)}", *_udaf_protos(u, "HFTA", True),
            "// One group's aggregate: empty until init(), its scratchpad on the heap (it",
            "// stays put while the group table moves states) and destroyed with it.",
            f"class {t} {{",
            f"    struct scratch {{ {storage} }};",
            "    std::unique_ptr<scratch> s_;",
            "    mutable std::string out_;   // a string result, copied out of the scratchpad",
            "    void release() noexcept",
            "    {",
            f"        if (s_) {p}DESTROY_({scratch});",
            "        s_.reset();",
            "    }",
            "",
            "public:",
            f"    {t}() = default;",
            f"    {t}({t} &&o) noexcept : s_(std::move(o.s_)) {{}}",
            f"    {t} &operator=({t} &&o) noexcept",
            "    {",
            "        if (this != &o) {",
            "            release();",
            "            s_ = std::move(o.s_);",
            "        }",
            "        return *this;",
            "    }",
            f"    {t}(const {t} &) = delete;",
            f"    {t} &operator=(const {t} &) = delete;",
            f"    ~{t}() {{ release(); }}",
            "    void init()",
            "    {",
            "        release();",
            "        s_ = std::make_unique<scratch>();",
            f"        {p}INIT_({scratch});",
            "    }",
            *([
                "    // a running aggregation carried the group into a new epoch",
                f"    void reinit() {{ if (s_) {p}REINIT_({scratch}); }}"] if u.running else []),
            f"    void update({', '.join(decls)})",
            "    {",
            *("        " + x for x in stmts),
            f"        {p}UPDATE_({', '.join([scratch, *passed])});",
            "    }",
            f"    {ret} output() const",
            "    {",
            *out_stmts,
            "    }",
            "};", ""]
