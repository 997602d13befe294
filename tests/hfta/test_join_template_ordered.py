"""templates/hfta/join.cpp.j2: the functor declares left_ordered /
right_ordered, and has emit_joint_heartbeat exactly when joint_punctuation is
true, from the code generator's variables, which it must provide (the
generator's environment refuses an undefined variable)."""
from __future__ import annotations

import re
from pathlib import Path

import jinja2
import jinja2.meta
import pytest

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = ROOT / "templates"


def _render(**extra) -> str:
    # The code generator's settings (compiler/gsqlc/backend/gen_shared.py template_env).
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=False,
                             keep_trailing_newline=True, undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True)
    source = (TEMPLATES / "hfta" / "join.cpp.j2").read_text()
    names = jinja2.meta.find_undeclared_variables(env.parse(source))
    lists = set(re.findall(r"{%\s*for\s+\w+\s+in\s+(\w+)\s*%}", source)) | {"strs"}
    required = {"left_ordered", "right_ordered", "joint_punctuation"}
    data = {n: ([] if n in lists else f"<{n}>") for n in names - required}
    data["params_rt"] = None    # reads no parameter
    data.update(extra)
    return env.get_template("hfta/join.cpp.j2").render(**data)


def _members(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if "_ordered" in line]


def test_the_variables_are_required():
    with pytest.raises(jinja2.UndefinedError, match="left_ordered"):
        _render(right_ordered=True, joint_punctuation=False)
    with pytest.raises(jinja2.UndefinedError, match="right_ordered"):
        _render(left_ordered=True, joint_punctuation=False)
    with pytest.raises(jinja2.UndefinedError, match="joint_punctuation"):
        _render(left_ordered=True, right_ordered=True)


@pytest.mark.parametrize("joint", [False, True])
def test_joint_heartbeat_member_from_the_variable(joint):
    text = _render(left_ordered=True, right_ordered=True, joint_punctuation=joint,
                   joint_assigns=["t.c_t0 = (uint32_t)jl;"])
    member = "void emit_joint_heartbeat(gsq_node *node, time_type jl, time_type jr)"
    assert (member in text) == joint
    assert ("GSQ_JOINT_HEARTBEAT" in text) == joint
    assert ("t.c_t0 = (uint32_t)jl;" in text) == joint
    # the individual heartbeat takes both bounds either way
    assert "void emit_heartbeat(gsq_node *node, time_type hl, time_type hr)" in text


@pytest.mark.parametrize("left,right", [(False, False), (False, True), (True, False), (True, True)])
def test_members_from_the_variables(left, right):
    text = _render(left_ordered=left, right_ordered=right, joint_punctuation=False)
    want = [f"static constexpr bool left_ordered = {'true' if left else 'false'};",
            f"static constexpr bool right_ordered = {'true' if right else 'false'};"]
    assert _members(text) == want
    # inside the functor, after its time_type
    assert text.index("using time_type") < text.index(want[0]) < text.index("struct key_type")
    assert "    static constexpr bool left_ordered" in text

