"""Queries as strings, the schema from the data: gsqlc.sql(text, NAME=data,
temporal=..., ip=...) over Arrow, pandas and Polars gives the answers of
the same query compiled from files with a schema file; compile() takes
query text (text=, or a str that is a query) and streams= for the schema;
errors are located in the string; a column GSQL cannot hold is named."""
from __future__ import annotations

import pyarrow as pa
import pytest

import gsqlc
from gsqlc import api

QUERY = ("select tb, k, count(*) as n, sum(v) as total, max(name) as last_name\n"
         "from events group by ts/60 as tb, k")
SCHEMA = """\
STREAM events { ullong ts (increasing); uint k; IP src; float v; string name; }
"""


@pytest.fixture(scope="module")
def events() -> pa.Table:
    n = 5000
    return pa.table({
        "ts": pa.array([1_700_000_000 + i // 7 for i in range(n)], pa.uint64()),
        "k": pa.array([(i * 7919) % 13 for i in range(n)], pa.uint32()),
        "src": pa.array([0x0A000000 + i % 300 for i in range(n)], pa.uint32()),
        "v": pa.array([(i % 17) / 4 for i in range(n)], pa.float64()),
        "name": pa.array([f"n{i % 23:02d}" for i in range(n)]),
    })


def _rows(t: pa.Table) -> list:
    return sorted(tuple(r.values()) for r in t.to_pylist())


@pytest.fixture(scope="module")
def from_files(events, tmp_path_factory) -> list:
    d = tmp_path_factory.mktemp("sqltext")
    (d / "q.gsql").write_text(QUERY + "\n")
    (d / "schema.txt").write_text(SCHEMA)
    return _rows(gsqlc.compile([d / "q.gsql"], schema=d / "schema.txt").table({"events": events}))


@pytest.mark.parametrize("kind", ["arrow", "batch", "pandas", "polars"])
def test_sql_over_data_at_hand_equals_the_file_based_answer(events, from_files, kind):
    data = {"arrow": lambda t: t, "batch": lambda t: t.combine_chunks().to_batches()[0],
            "pandas": lambda t: t.to_pandas(),
            "polars": lambda t: pytest.importorskip("polars").from_arrow(t)}[kind](events)
    got = gsqlc.sql(QUERY, events=data, temporal={"ts": "increasing"}, ip=["src"])
    assert len(from_files) > 20
    assert _rows(got) == from_files


def test_ip_columns_and_streaming_runs(events):
    run = gsqlc.sql("select ts, src from events where k = 3", events=events,
                    temporal={"ts": "increasing"}, ip=["src"], stream=True)
    rows = [r for b in run for r in b.to_pylist()]
    want = [(t, s) for t, s, k in zip(events["ts"].to_pylist(), events["src"].to_pylist(),
                                       events["k"].to_pylist()) if k == 3]
    assert [(r["ts"], r["src"]) for r in rows] == \
        [(t, f"10.0.{s >> 8 & 255}.{s & 255}") for t, s in want]


def test_a_query_set_is_compiled_once(events):
    q = "select tb, count(*) as n from events group by ts/60 as tb"
    gsqlc.sql(q, events=events, temporal={"ts": "increasing"})
    kept = dict(api._SQL_SETS)
    gsqlc.sql(q, events=events.slice(0, 10), temporal={"ts": "increasing"})
    assert any(api._SQL_SETS[k] is v for k, v in kept.items() if k in api._SQL_SETS)


def test_errors_are_located_in_the_string(events):
    with pytest.raises(gsqlc.QueryError) as e:
        gsqlc.sql("select tb, count(*) as n\nfrom events group by ts/60 as tb, kk",
                  events=events, temporal={"ts": "increasing"})
    assert (e.value.file, e.value.line, e.value.column, e.value.rule) == \
        ("<query>", 2, 35, "unknown-field")
    assert "from events group by ts/60 as tb, kk\n" in str(e.value)
    assert "^~" in str(e.value)


def test_compile_takes_text_and_explains_it(events, tmp_path):
    qs = gsqlc.compile("DEFINE { query_name 'per_k'; }\n" + QUERY, streams={"events": events},
                       temporal={"ts": "increasing"}, ip=["src"])
    assert qs.outputs == ["per_k"]
    plan = qs.explain()
    assert "query per_k (<query>)" in plan and "reads interface events" in plan
    # text= as well, beside a file
    (tmp_path / "other.gsql").write_text("DEFINE { query_name 'other'; }\n"
                                         "select ts, k from events where k = 1\n")
    qs = gsqlc.compile([tmp_path / "other.gsql"], text=QUERY, streams={"events": events},
                       temporal={"ts": "increasing"})
    assert sorted(qs.outputs) == ["other", "query"]
    # unnamed queries of a text are named after it, as after a file
    qs = gsqlc.compile(text="select ts, k from events; select k from events",
                       streams={"events": events}, temporal={"ts": "increasing"})
    assert qs.outputs == ["query_1", "query_2"]
    # a mistyped file name is still an unknown file, not text
    with pytest.raises(gsqlc.QueryError, match="no-such-file|no such file"):
        gsqlc.compile("flows_typo.gsql")


@pytest.mark.parametrize("data,kw,message", [
    (pa.table({"ts": pa.array([1], pa.timestamp("us"))}), {},
     "column 'ts' has Arrow type timestamp[us], which gsqlc cannot read as a GSQL value: "
     "cast it to integers first"),
    (pa.table({"my col": [1]}), {}, "column 'my col' is not a GSQL name"),
    (pa.table({"ts": [1]}), {"temporal": {"ts": "sideways"}},
     "'sideways' is not one of increasing, decreasing"),
    (pa.table({"ts": [1]}), {"temporal": {"time": "increasing"}}, "no source has a column 'time'"),
    (pa.table({"a": [1.5]}), {"ip": ["a"]}, "column 'a' has Arrow type double, which gsqlc "
                                            "cannot read as an IP address"),
])
def test_columns_gsql_cannot_hold_are_named(data, kw, message):
    with pytest.raises(gsqlc.UsageError) as e:
        gsqlc.sql("select * from events", events=data, **kw)
    assert message in str(e.value)


def test_a_declared_disorder_keeps_late_rows():
    """A row five minutes behind the newest (among 600,000 over ten
    minutes): dropped as late (and counted) unless out_of_order declares
    that much disorder, then counted in its minute."""
    import numpy as np
    n, t0 = 600_000, 1_700_000_040
    ts = (t0 + np.arange(n) * 600 // n).astype(np.uint32)
    ts = np.concatenate([ts[:400_000], np.array([t0 + 75], np.uint32), ts[400_000:]])
    events = pa.table({"ts": ts})
    q = "select tb, count(*) as n from events group by ts/60 as tb"
    minute = (t0 + 75) // 60
    run = gsqlc.sql(q, events=events, temporal={"ts": "increasing"}, stream=True)
    plain = {r["tb"]: r["n"] for b in run for r in b.to_pylist()}
    assert plain[minute] == 60_000 and sum(x["late_dropped"] for x in run.stats["nodes"]) == 1
    assert "arrived later than the closed epoch allows" in run.report
    run = gsqlc.sql(q, events=events, temporal={"ts": "increasing"}, out_of_order=330,
                    stream=True)
    kept = {r["tb"]: r["n"] for b in run for r in b.to_pylist()}
    assert kept[minute] == 60_001 and sum(kept.values()) == n + 1
    assert sum(x["late_dropped"] for x in run.stats["nodes"]) == 0
