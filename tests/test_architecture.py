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
                        (errors.RunError, 1), (errors.InternalError, 1),
                        (errors.BuildError, 1)]:
        assert issubclass(cls, errors.GsqlcError), cls
        assert cls.exit_status == status, cls
    assert issubclass(errors.BuildError, errors.InternalError)
    assert not issubclass(errors.QueryError, errors.InternalError)


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
