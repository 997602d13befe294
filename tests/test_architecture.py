"""The package's structure as a contract: imports flow one way (front end <-
semantics <- planner <- back end; the faces on top), importing a stage loads
nothing of the later ones, and every error has one root with the CLI's exit
status on it."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import gsqlc
from gsqlc import errors

PKG = Path(gsqlc.__file__).resolve().parent

# Which packages a stage may import from (besides itself and the leaf
# modules errors, resources and record).  spark is a face, not a stage: it
# runs the compiled plan inside PySpark, built on the faces' api (compile,
# Run) and on the stages below it.
ALLOWED = {
    "frontend": set(),
    "semantics": {"frontend"},
    "planner": {"frontend", "semantics"},
    "backend": {"frontend", "semantics", "planner"},
    "runtime": {"frontend", "semantics", "planner"},
    "spark": {"frontend", "semantics", "planner", "runtime", "api"},
}
STAGES = ("frontend", "semantics", "planner", "backend", "runtime")
LEAVES = {"errors", "resources", "record", "_native"}


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, top-level gsqlc module) of every relative import in a file."""
    rel_parts = path.relative_to(PKG).parts
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = list(rel_parts[:-1])[: len(rel_parts) - node.level]
            target = base + (node.module.split(".") if node.module else [])
            if not target:   # from . import x at the top level
                target = [a.name for a in node.names][:1]
            out.append((node.lineno, target[0]))
    return out


@pytest.mark.parametrize("stage", sorted(ALLOWED))
def test_stage_imports_flow_one_way(stage):
    bad = []
    for f in sorted((PKG / stage).rglob("*.py")):
        for line, target in _imports(f):
            if target not in ALLOWED[stage] | LEAVES | {stage}:
                bad.append(f"{f.relative_to(PKG)}:{line} imports {target}")
    assert not bad, "imports against the stage order:\n" + "\n".join(bad)


@pytest.mark.parametrize("stage", STAGES)
def test_no_stage_imports_the_spark_face(stage):
    bad = [f"{f.relative_to(PKG)}:{line}" for f in sorted((PKG / stage).rglob("*.py"))
           for line, target in _imports(f) if target == "spark"]
    assert not bad, "stages importing gsqlc.spark:\n" + "\n".join(bad)


def test_the_checker_sees_a_backward_import(tmp_path):
    # the rule above must be able to fail: a planner module importing the
    # back end is reported
    f = PKG / "planner" / "_probe_backward.py"
    f.write_text("from ..backend import codegen\n")
    try:
        assert (1, "backend") in _imports(f)
    finally:
        f.unlink()


def _module_name(path: Path) -> str:
    parts = ("gsqlc", *path.relative_to(PKG).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _eager(body: list[ast.stmt]):
    """The import statements run when a module is imported: those at its
    top level, also under an if, try, with or class there -- not those in a
    function (the lazy ones) nor under `if TYPE_CHECKING:`."""
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If):
            test = node.test
            if not (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING"
                    or isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"):
                yield from _eager(node.body)
            yield from _eager(node.orelse)
        elif isinstance(node, ast.Try):
            for part in (node.body, *(h.body for h in node.handlers), node.orelse,
                         node.finalbody):
                yield from _eager(part)
        elif isinstance(node, (ast.With, ast.ClassDef, ast.For, ast.While)):
            yield from _eager(node.body)


def _eager_imports(source: str, module: str, is_package: bool, modules: set[str]) -> set[str]:
    """The modules of `modules` that `module` (its source text) imports when
    it is imported.  `from P import m` counts P.m when that is a module, P
    itself only for names that are not its modules."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    out = set()
    for node in _eager(ast.parse(source).body):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name in modules}
            continue
        base = package[:len(package) - node.level + 1] if node.level else []
        target = ".".join(base + (node.module.split(".") if node.module else []))
        named = [f"{target}.{a.name}" for a in node.names]
        out |= {m for m in named if m in modules}
        if target in modules and any(m not in modules for m in named):
            out.add(target)
    return out - {module}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles of a graph (module -> modules it imports): each
    strongly connected component of two modules or more, sorted (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while not component or component[-1] != v:
                component.append(stack.pop())
            if len(component) > 1:
                out.append(sorted(component))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def test_no_import_cycles():
    # a module importing, at its top, one that imports it back works only
    # in one order of first imports; a cycle through a function's import
    # (a lazy one) does not count
    files = {_module_name(p): p for p in sorted(PKG.rglob("*.py"))}
    graph = {m: _eager_imports(p.read_text(), m, p.name == "__init__.py", set(files))
             for m, p in files.items()}
    cycles = _cycles(graph)
    assert not cycles, "import cycles among gsqlc's modules:\n" + "\n".join(
        " <-> ".join(c) for c in cycles)


def test_the_cycle_check_sees_a_cycle():
    # it must be able to fail: a <-> b at the top level is one; c reached
    # only from a function or under TYPE_CHECKING is not
    modules = {"p", "p.a", "p.b", "p.c"}
    sources = {
        "p.a": "from typing import TYPE_CHECKING\nfrom .b import f\n"
               "if TYPE_CHECKING:\n    from . import c\n",
        "p.b": "from . import a\n\ndef f():\n    from .c import g\n",
        "p.c": "try:\n    import p.b\nexcept ImportError:\n    pass\n",
    }
    graph = {m: _eager_imports(s, m, False, modules) for m, s in sources.items()}
    assert graph == {"p.a": {"p.b"}, "p.b": {"p.a"}, "p.c": {"p.b"}}
    assert _cycles(graph) == [["p.a", "p.b"]]
    assert _eager_imports("from .. import a\n", "p.sub", True, modules) == {"p.a"}


@pytest.mark.parametrize("module,absent", [
    ("gsqlc.frontend.parser", ["jinja2", "cffi", "gsqlc.backend", "gsqlc.planner", "pyarrow"]),
    ("gsqlc.semantics.resolve", ["jinja2", "cffi", "gsqlc.backend", "gsqlc.planner"]),
    ("gsqlc.planner.plan", ["jinja2", "cffi", "gsqlc.backend"]),
    ("gsqlc", ["jinja2", "cffi", "lark", "pyarrow"]),
    ("gsqlc.spark", ["pyspark", "pyarrow"]),
])
def test_importing_a_stage_loads_no_later_stage(module, absent):
    code = (f"import sys, {module}\n"
            f"print(','.join(m for m in {absent!r} "
            "if any(k == m or k.startswith(m + '.') for k in sys.modules)))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert p.stdout.strip() == "", f"importing {module} loaded {p.stdout.strip()}"


def test_error_hierarchy_and_exit_status():
    assert gsqlc.GsqlcError is errors.GsqlcError
    for cls, status in [(errors.QueryError, 2), (errors.UsageError, 2),
                        (errors.InterfaceError, 2), (errors.SetupError, 2),
                        (errors.TraceError, 2), (errors.SparkQueryError, 2),
                        (errors.GdatError, 2),
                        (errors.RunError, 1), (errors.InternalError, 1),
                        (errors.BuildError, 1)]:
        assert issubclass(cls, errors.GsqlcError), cls
        assert cls.exit_status == status, cls
    assert issubclass(errors.BuildError, errors.InternalError)
    assert not issubclass(errors.QueryError, errors.InternalError)
    # the GDAT header reader's error is a usage error (a bad gdat:PATH), and
    # still the ValueError it was, under the name its module gives it
    from gsqlc.runtime import gdat
    assert gdat.GdatError is errors.GdatError
    assert issubclass(errors.GdatError, errors.UsageError)
    assert issubclass(errors.GdatError, ValueError)
    with pytest.raises(errors.GdatError, match="not a GDAT file"):
        gdat.parse_header(b"PCAP")


def test_internal_error_exits_1_and_keeps_the_traceback(tmp_path):
    # A bug inside the compiler (here: code generation raising) is not the
    # user's query error: exit 1, "internal error", traceback in a file.
    q = tmp_path / "q.gsql"
    q.write_text("select time, srcIP from IPV4\n")
    code = (
        "import sys\n"
        "import gsqlc.backend.codegen as cg\n"
        "def broken(plan, *rest):\n"
        "    raise KeyError('no renderer for this node')\n"
        "cg.generate = broken\n"
        "import gsqlc.pipeline as p\n"
        "p.generate = broken\n"
        "from gsqlc.cli import main\n"
        f"sys.exit(main(['compile', {str(q)!r}, '-o', {str(tmp_path / 'out')!r}]))\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={**__import__('os').environ, "TMPDIR": str(tmp_path)})
    assert p.returncode == 1, p.stderr
    assert "gsqlc: internal error: KeyError" in p.stderr
    assert "bug in gsqlc" in p.stderr
    kept = list(tmp_path.glob("gsqlc-internal-error-*.txt"))
    assert len(kept) == 1, p.stderr
    text = kept[0].read_text()
    assert "Traceback (most recent call last)" in text and "no renderer for this node" in text
    assert str(kept[0]) in p.stderr


def test_query_error_still_exits_2(tmp_path, gsqlc):
    q = tmp_path / "bad.gsql"
    q.write_text("select nosuchfield from IPV4\n")
    p = gsqlc("explain", q)
    assert p.returncode == 2
    assert "bad.gsql:1:8: error [unknown-field]" in p.err
    assert "internal error" not in p.err
