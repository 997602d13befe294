"""Merges are the runtime's own operators, compiled once per merge column
type (gsq_merge.h, hfta_templates/merge_any.cpp): a MERGE query and an
interface set's merge over every column type a temporal field can have, in
both directions, with and without a slack, against the order the query asks
for; and SLACK converted to the column's type as C converts it."""
from __future__ import annotations

import itertools
import random

import pytest

from gsqlc.backend.gen_shared import merge_slack
from gsqlc.semantics.types import Type

# (GSQL type, values it holds in increasing order): each type's own range
TYPES = {
    "ushort": list(range(60000, 60120, 3)),
    "uint": list(range(4_000_000_000, 4_000_000_120, 3)),
    "int": list(range(-60, 60, 3)),
    "ullong": list(range(2**40, 2**40 + 120, 3)),
    "llong": list(range(-(2**40), -(2**40) + 120, 3)),
    "float": [x / 4 for x in range(-60, 60, 3)],
}
DIRECTIONS = ("increasing", "decreasing")


def _ident(t: str, d: str) -> str:
    return f"{t}_{d[:3]}"


@pytest.fixture(scope="module")
def merged(tmp_path_factory):
    """One query set: for every type and direction a MERGE of two CSV
    interfaces' selections, and a selection over an interface set of both."""
    import gsqlc
    d = tmp_path_factory.mktemp("merges")
    schema, queries, sources, rows = [], [], {}, {}
    rnd = random.Random(5)
    for (t, values), direction in itertools.product(TYPES.items(), DIRECTIONS):
        i = _ident(t, direction)
        schema.append(f"PROTOCOL P_{i} {{\n    {t} ts get_csv_{t}_pos1 ({direction});\n"
                      f"    uint v get_csv_uint_pos2;\n}}\n")
        ordered = values if direction == "increasing" else values[::-1]
        # each time on one side or the other, some on both, in the direction
        a, b = [], []
        for n, ts in enumerate(ordered):
            for side in rnd.choice(([a], [b], [a, b])):
                side.append((ts, n))
        for name, part in (("A", a), ("B", b)):
            f = d / f"{i}_{name}.csv"
            f.write_text("".join(f"{ts!r},{v}\n" for ts, v in part))
            sources.setdefault(f"{name}_{i}", f"csv:{f}")
            sources.setdefault(f"S_{i}", []).append(f"csv:{f}")
        rows[i] = a + b
        queries.append(
            f"DEFINE {{ query_name 'a_{i}'; }}\nSELECT ts, v FROM A_{i}.P_{i};\n"
            f"DEFINE {{ query_name 'b_{i}'; }}\nSELECT ts, v FROM B_{i}.P_{i};\n"
            f"DEFINE {{ query_name 'm_{i}'; }}\nMERGE x.ts : y.ts FROM a_{i} x, b_{i} y;\n"
            f"DEFINE {{ query_name 's_{i}'; }}\nSELECT ts, v FROM S_{i}.P_{i};\n")
    (d / "schema.txt").write_text("".join(schema))
    (d / "q.gsql").write_text("".join(queries))
    qs = gsqlc.compile([d / "q.gsql"], d / "schema.txt")
    outputs = [f"{k}_{_ident(t, dr)}" for k in "ms" for t in TYPES for dr in DIRECTIONS]
    got: dict[str, list] = {o: [] for o in outputs}
    run = qs.run(sources, outputs)
    for name, batch in run:
        got[name] += [(r["ts"], r["v"]) for r in batch.to_pylist()]
    return got, rows, run.stats


@pytest.mark.parametrize("t", list(TYPES))
@pytest.mark.parametrize("direction", DIRECTIONS)
def test_merges_keep_the_order_of_every_column_type(merged, t, direction):
    got, rows, stats = merged
    i = _ident(t, direction)
    want = sorted(rows[i], key=lambda r: r[0], reverse=direction == "decreasing")
    for query in (f"m_{i}", f"s_{i}"):
        ts = [r[0] for r in got[query]]
        assert ts == [r[0] for r in want], query          # in the merge order
        assert sorted(got[query]) == sorted(want), query  # every row, once
    late = {n["name"]: n.get("late_dropped", 0) for n in stats["nodes"]}
    assert late.get(f"m_{i}", 0) == 0 and late.get(f"s_{i}", 0) == 0


def test_merge_slack_is_the_column_types_value():
    assert merge_slack(Type.UINT, 5.7) == "UINT64_C(5), 0.0"          # truncated
    assert merge_slack(Type.UINT, -1) == "UINT64_C(4294967295), 0.0"  # (uint32_t)(-1)
    assert merge_slack(Type.USHORT, 70000) == "UINT64_C(4464), 0.0"   # wrapped to 16 bits
    assert merge_slack(Type.INT, -3) == "UINT64_C(0), 0.0"            # negative: none
    assert merge_slack(Type.LLONG, 2**63) == "UINT64_C(0), 0.0"       # wraps negative
    assert merge_slack(Type.ULLONG, 2**64 - 1) == f"UINT64_C({2**64 - 1}), 0.0"
    assert merge_slack(Type.FLOAT, 1.5) == "0u, 1.5"
    assert merge_slack(Type.FLOAT, -2) == "0u, 0.0"


def test_an_infinite_slack_is_a_located_error(gsqlc, tmp_path):
    q = tmp_path / "q.gsql"
    q.write_text("DEFINE { query_name 'a'; }\nSELECT time, len FROM eth0.IPV4;\n"
                 "DEFINE { query_name 'b'; }\nSELECT time, len FROM eth1.IPV4;\n"
                 "MERGE x.time : y.time SLACK 1e999 FROM a x, b y;\n")
    p = gsqlc("compile", q)
    assert p.returncode != 0
    assert f"{q}:5:" in p.err and "SLACK must be a finite non-negative constant" in p.err, p.err
