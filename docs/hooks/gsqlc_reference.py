"""MkDocs hook: the reference tables generated from gsqlc itself, so that the
site cannot drift from the code.

A page holds a placeholder on a line of its own; the build replaces it:

    <!-- gsqlc:functions -->     the scalar functions of semantics/catalog.py
    <!-- gsqlc:aggregates -->    the aggregates of the same catalog
    <!-- gsqlc:library-aggregates --> GS-lite's aggregates gsqlc builds in
                                 (data/gsqlc_aggregates.def, its comments)
    <!-- gsqlc:library-stateful --> GS-lite's stateful functions (SFUN) and
                                 their STATEs, of the same file
    <!-- gsqlc:cli -->           every subcommand and option of cli.make_parser()
    <!-- gsqlc:packet-schema --> the packet schema's protocols and fields
    <!-- gsqlc:run-options -->   the runtime's options (runtime_c/run/option_table.h)

The hook imports gsqlc from this checkout's compiler/ folder (ahead of an
installed copy), so the site describes the code beside it.  An unknown
placeholder, or a catalog entry the renderer does not know how to describe,
fails the build.
"""
from __future__ import annotations

import argparse
import html
import itertools
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "compiler") not in sys.path:
    sys.path.insert(0, str(ROOT / "compiler"))

PLACEHOLDER = re.compile(r"^<!-- gsqlc:([a-z-]+) -->$", re.M)


def on_page_markdown(markdown: str, page, config, files) -> str:
    def replace(m: re.Match) -> str:
        name = m.group(1)
        if name not in RENDERERS:
            raise ValueError(f"{page.file.src_path}: unknown placeholder gsqlc:{name} "
                             f"(known: {', '.join(sorted(RENDERERS))})")
        return RENDERERS[name]()
    return PLACEHOLDER.sub(replace, markdown)


# ------------------------------------------------------------ helpers


def _e(text: object) -> str:
    return html.escape(str(text), quote=False)


def _code(text: object) -> str:
    return f"<code>{_e(text)}</code>"


def _table(headers: list[str], rows: list[list[str]], cls: str) -> str:
    """An HTML table (cells are HTML already): markdown tables cannot hold a
    `|` inside a cell, which metavars such as wall|data|fixed:T do."""
    head = "".join(f"<th>{h}</th>" for h in headers)
    body = "\n".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return (f'<table class="{cls}">\n<thead><tr>{head}</tr></thead>\n'
            f"<tbody>\n{body}\n</tbody>\n</table>\n")


# ------------------------------------------------------------ the catalog


def _type_classes() -> dict[object, tuple[list, str]]:
    """The catalog's argument classes: the types each accepts (as the
    analyzer checks them) and how the table names it."""
    from gsqlc.semantics import catalog
    from gsqlc.semantics.types import Type
    return {
        catalog.ANY_INT: ([t for t in Type if t.is_integer], "any integer type (bool, IP included)"),
        catalog.ANY_NUM: ([t for t in Type if t.is_numeric], "any number"),
        catalog.FLOAT_ARG: ([t for t in Type if t.is_numeric], "any number (as a float)"),
        catalog.ANY: (list(Type), "any type"),
    }


def _param_types(p) -> tuple[list, str]:
    from gsqlc.semantics.types import Type
    if isinstance(p, Type):
        return [p], str(p)
    classes = _type_classes()
    if p not in classes:
        raise ValueError(f"catalog: argument class {p!r} has no description in the docs hook")
    return classes[p]


def _result_text(f) -> str:
    """A scalar function's result type; a computed one by what it gives over
    every argument type the function accepts."""
    from gsqlc.semantics.types import Type
    if isinstance(f.result, Type):
        return _code(f.result)
    combos = list(itertools.product(*(_param_types(p)[0] for p in f.params)))
    results = {}
    for args in combos:
        results.setdefault(f.result(list(args)), []).append(args)
    if len(f.params) == 1 and all(r == args[0] for r, arg_sets in results.items()
                                  for args in arg_sets):
        return "the argument's type"
    return " or ".join(_code(r) for r in sorted(results, key=lambda t: t.value)) + \
        " (by the arguments)"


def _level(f) -> str:
    from gsqlc.semantics import catalog
    if not f.lfta_legal:
        return "HFTA only"
    if f.cost != catalog.CHEAP:
        return "HFTA (expensive)"
    return "LFTA or HFTA"


def render_functions() -> str:
    from gsqlc.semantics import catalog
    rows = []
    for f in sorted(catalog.SCALARS.values(), key=lambda f: f.name.lower()):
        args = ", ".join(_code(p) if not isinstance(p, str) else _e(_param_types(p)[1])
                         for p in f.params) or "none"
        call = ", ".join("xyzw"[i] for i in range(len(f.params)))
        use = _code(f"{f.name}({call})")
        if f.predicate:
            use = f"{_code(f'{f.name}[{call}]')} or {use}"
        notes = []
        if f.handle_args:
            which = ", ".join(str(i + 1) for i in f.handle_args)
            notes.append(f"argument {which} must be a string literal: it is compiled once, "
                         "when the query starts" if f.handle_kind == "regex" else
                         f"argument {which} must be a string literal")
        if f.const_args:
            which = ", ".join(str(i + 1) for i in f.const_args)
            notes.append(f"argument {which} must be a constant")
        if f.emit == "clock":
            notes.append("reads the run's clock")
        desc = _e(f.doc) + ("" if not notes else " <em>(" + "; ".join(notes) + ")</em>")
        rows.append([_code(f.name), use, args, _result_text(f), _e(f.cost), _level(f), desc])
    return _table(["Function", "Written", "Arguments", "Result", "Cost", "Runs in",
                   "What it gives"], rows, "gsqlc-functions")


_ARG_TEXT = {"one": "1 per row", "arg": "the argument", "arg_float": "the argument as float"}
_FINAL_TEXT = {"first": "the accumulator", "avg": "the sum divided by the count"}


def _agg_results(a) -> str:
    from gsqlc.semantics.types import Type
    if a.star_ok and a.result(None) is not None:
        return _code(a.result(None))
    by_result: dict = {}
    for t in Type:
        r = a.result(t)
        if r is not None:
            by_result.setdefault(r, []).append(t)
    accepted = [t for ts in by_result.values() for t in ts]
    if all(r == t for r, ts in by_result.items() for t in ts):
        if len(accepted) == len(Type):
            return "the argument's type (any type)"
        return "the argument's type (" + ", ".join(_code(t) for t in accepted) + ")"
    parts = []
    for r, ts in by_result.items():
        parts.append(f"{_code(r)} over " + ", ".join(_code(t) for t in ts))
    return "; ".join(parts)


def render_aggregates() -> str:
    from gsqlc.semantics import catalog
    rows = []
    for a in catalog.AGGREGATES.values():
        for c in a.components:
            if c.arg not in _ARG_TEXT:
                raise ValueError(f"catalog: aggregate component argument {c.arg!r} has no "
                                 "description in the docs hook")
        if a.final not in _FINAL_TEXT:
            raise ValueError(f"catalog: aggregate final {a.final!r} has no description")
        written = _code(f"{a.name}(x)") + (" or " + _code(f"{a.name}(*)") if a.star_ok else "")
        parts = ", ".join(f"{c.op} of {_ARG_TEXT[c.arg]}" for c in a.components)
        split = (f"LFTA sub-aggregate: {_e(parts)}; HFTA super-aggregate: the same "
                 f"operation{'s' if len(a.components) > 1 else ''} over the partials; "
                 f"result: {_FINAL_TEXT[a.final]}")
        rows.append([written, _agg_results(a), "LFTA or HFTA" if a.lfta_legal else "HFTA only",
                     split, _e(a.doc)])
    return _table(["Aggregate", "Result type", "Runs in", "Split into sub- and super-aggregate",
                   "What it gives"], rows, "gsqlc-aggregates")


def _def_comments(path: str) -> dict[int, str]:
    """Each line of a def file -> the comment block above its group of
    declarations (the text of the `//` lines, rules of slashes dropped)."""
    out: dict[int, str] = {}
    block: list[str] = []
    in_comment = False
    for n, line in enumerate(Path(path).read_text().splitlines(), 1):
        t = line.strip()
        if t.startswith("//"):
            if not in_comment:
                block = []
            in_comment = True
            text = t.lstrip("/").strip().lstrip("-").strip()
            if text:
                block.append(text)
        else:
            in_comment = False
            out[n] = " ".join(block)
    return out


def render_library_aggregates() -> str:
    """GS-lite's aggregates of gsqlc's library: every overload a query calls
    (an aggregate that is only another's LFTA or HFTA part is not listed),
    where it runs, its scratchpad, and the def file's comment."""
    from gsqlc.semantics.user_functions import library_def_path, load_catalog
    cat = load_catalog([])
    comments = _def_comments(library_def_path())
    parts = {u.name.lower() for over in cat.user_aggregates.values() for a in over
             for u in (a.udaf.sub, a.udaf.sup) if a.udaf is not None and u is not None}
    rows = []
    for name in sorted(cat.user_aggregates, key=str.lower):
        if name in parts:
            continue
        for a in cat.user_aggregates[name]:
            u = a.udaf
            if u is None:
                raise ValueError(f"library aggregate {name} has no UDAF spec")
            sig = f"{u.name}({', '.join(str(t) for t in u.params)})"
            if u.splits and any(str(t) == "string" for t in u.params):
                where = "HFTA (a string argument: the whole aggregate, not split)"
            elif u.splits:
                where = (f"LFTA sub-aggregate {_code(u.sub.name)}, HFTA super-aggregate "
                         f"{_code(u.sup.name)}")
            else:
                where = "HFTA only" + (" (declared HFTA_ONLY)" if u.hfta_only else "")
            pad = f"{u.storage_bytes} bytes" if u.storage_bytes is not None else \
                f"one {u.storage_type}"
            rows.append([_code(sig), _code(u.result), where, "yes" if u.running else "",
                         _e(pad), _e(comments.get(u.decl.span.line, ""))])
    for name in sorted(cat.extractions, key=str.lower):
        for x in cat.extractions[name]:
            sig = f"{x.name}({', '.join(str(t) for t in x.params)})"
            rows.append([_code(sig), _code(x.result),
                         _e(f"{x.extractor}({x.udaf}(...)): where {x.udaf} runs"), "", "",
                         _e(comments.get(x.decl.span.line, ""))])
    return _table(["Call", "Result type", "Runs in", "RUNNING", "Scratchpad", "What it gives"],
                  rows, "gsqlc-library-aggregates")


def render_library_stateful() -> str:
    """GS-lite's stateful functions of gsqlc's library: every overload, its
    STATE block and the def file's comment."""
    from gsqlc.semantics.user_functions import is_library_decl, library_def_path, load_catalog
    cat = load_catalog([])
    comments = _def_comments(library_def_path())
    rows = []
    for name in sorted(cat.user_scalars, key=str.lower):
        for f in cat.user_scalars[name]:
            if f.state is None or not is_library_decl(f.decl):
                continue
            sig = f"{f.name}({', '.join(str(t) for t in f.params)})"
            rows.append([_code(sig), _code(f.result_type([])),
                         _e(f"{f.state} ({f.state_bytes} bytes)"),
                         _e(comments.get(f.decl.span.line, ""))])
    if not rows:
        raise ValueError("the library declares no stateful function")
    return _table(["Call", "Result type", "STATE", "What it gives"], rows,
                  "gsqlc-library-stateful")


# ------------------------------------------------------------ the command line


def _subcommands(ap: argparse.ArgumentParser):
    """(name, help, parser) of every subcommand, in the parser's order."""
    for action in ap._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            for name, parser in action.choices.items():
                yield name, helps.get(name) or "", parser


def _usage(p: argparse.ArgumentParser) -> str:
    fmt = argparse.HelpFormatter(p.prog, width=88)
    fmt.add_usage(p.usage, p._actions, p._mutually_exclusive_groups)
    return fmt.format_help().strip()


def _help(action: argparse.Action) -> str:
    text = action.help or ""
    if "%" in text:
        params = {k: v for k, v in vars(action).items() if v is not argparse.SUPPRESS}
        if params.get("choices") is not None:
            params["choices"] = ", ".join(map(str, params["choices"]))
        text = text % params
    return text


def _argument(action: argparse.Action) -> str:
    if action.nargs == 0:
        return ""
    if action.metavar is not None:
        return _code(action.metavar)
    if action.choices is not None:
        return " ".join(_code(c) for c in action.choices)
    return _code(action.dest.upper())


def _default(action: argparse.Action) -> str:
    d = action.default
    if d is None or d is False or d == [] or d is argparse.SUPPRESS or action.nargs == 0:
        return ""
    return _code(d)


def _options_table(p: argparse.ArgumentParser) -> str:
    rows = []
    for a in p._actions:
        if isinstance(a, (argparse._HelpAction, argparse._SubParsersAction)) or \
                a.help is argparse.SUPPRESS:
            continue
        names = ", ".join(_code(o) for o in a.option_strings) if a.option_strings \
            else _code(a.metavar or a.dest) + " (positional)"
        notes = []
        if isinstance(a, argparse._AppendAction):
            notes.append("repeatable")
        if a.nargs in ("+", "*") and not a.option_strings:
            notes.append("one or more" if a.nargs == "+" else "any number")
        if a.choices is not None and a.metavar is not None:
            notes.append("one of " + ", ".join(_code(c) for c in a.choices))
        desc = _e(_help(a)) + (" <em>(" + "; ".join(notes) + ")</em>" if notes else "")
        rows.append([names, _argument(a), _default(a), desc])
    return _table(["Option", "Argument", "Default", "What it does"], rows, "gsqlc-cli")


def render_cli() -> str:
    from gsqlc.cli import make_parser
    ap = make_parser()
    out = [f"```text\n{_usage(ap)}\n```\n", _e(ap.description or "") + "\n",
           "### Global options\n", _options_table(ap)]
    for name, text, parser in _subcommands(ap):
        out += [f"### gsqlc {name}\n", _e(text[:1].upper() + text[1:]) + ".\n" if text else "",
                f"```text\n{_usage(parser)}\n```\n", _options_table(parser)]
    return "\n".join(out)


# ------------------------------------------------------------ packets

_PROTOCOL = re.compile(r"^PROTOCOL\s+(\w+)\s*(?:\(([^)]*)\))?")
_FIELD = re.compile(r"^\s+(\w+)\s+(\w+)\s+(\w+)\s*(?:\(([^)]*)\))?\s*;\s*(?://\s*(.*))?$")


def render_packet_schema() -> str:
    """gsqlc's packet schema, a table per PROTOCOL, with the schema file's
    own comments on its fields."""
    from gsqlc.resources import packet_schema_path
    out: list[str] = []
    rows: list[list[str]] = []

    def close():
        if rows:
            out.append(_table(["Field", "Type", "Accessor", "Properties", "Notes"], rows,
                              "gsqlc-packet-schema"))
            rows.clear()
    for line in packet_schema_path().read_text().splitlines():
        m = _PROTOCOL.match(line)
        if m:
            close()
            parent = f" (inherits {_code(m.group(2).strip())})" if m.group(2) else ""
            out.append(f"<p><strong><code>PROTOCOL {_e(m.group(1))}</code></strong>{parent}</p>\n")
            continue
        f = _FIELD.match(line)
        if f:
            ftype, name, accessor, props, note = f.groups()
            rows.append([_code(name), _code(ftype), _code(accessor), _e(props or ""),
                         _e(note or "")])
    close()
    if not out:
        raise ValueError("the packet schema declares no PROTOCOL the docs hook could read")
    return "\n".join(out)


def render_run_options() -> str:
    """The runtime's options, one row per entry of its table
    (runtime_c/run/option_table.h, read by gsqlc.runtime.option_table):
    the key, what a value must be, what it does, and the flag of `gsqlc
    run` and gsqlc-run that sets it, where one does (their one table of
    flags, runtime_c/tools/run_flags.h, read by gsqlc.runtime.run_flags)."""
    from gsqlc.runtime import option_table, run_flags
    rows = []
    for o in option_table.options().values():
        rows.append([_code(o.name), _e(o.expects), _e(o.doc),
                     ", ".join(_code(f) for f in _flags_setting(run_flags.flags(), o))])
    if not rows:
        raise ValueError("the runtime's option table has no GSQ_OPTION the docs hook could read")
    return _table(["Option", "Value", "What it does", "Flag"], rows, "gsqlc-run-options")


def _flags_setting(flags, option) -> list[str]:
    """How the shared flags set `option`: --batch N, --csv-strict,
    --max-skew NAME=SECONDS, --heartbeats estimate=VALUE (not --option,
    which sets any)."""
    out = []
    for f in flags:
        if not f.both:
            continue
        if f.action in ("OPTION", "SWITCH") and f.key == option.name:
            out.append(f.name if f.action == "SWITCH" else f"{f.name} {f.metavar or '|'.join(f.choices)}")
        elif f.action == "KEYED" and f.key and option.name.startswith(f.key):
            rest = option.name[len(f.key):]
            out.append(f"{f.name} {f.metavar}" if ":" in option.name else f"{f.name} {rest}=VALUE")
    return out


RENDERERS = {
    "functions": render_functions,
    "aggregates": render_aggregates,
    "library-aggregates": render_library_aggregates,
    "library-stateful": render_library_stateful,
    "cli": render_cli,
    "packet-schema": render_packet_schema,
    "run-options": render_run_options,
}
