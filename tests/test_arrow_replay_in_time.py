"""Arrow tables replayed in time (recording:NAME): two in-memory tables, as
two interfaces or as the members of an interface set, advance together on
their time column as two CSV files do -- each round reads the rows up to
the earliest next instant plus a quantum (arrow_peek, time_cut in
runtime_c/sources/arrow_source.c) -- on the row path and on the columnar
path, with a uint32 time column (read in place, its stamps at once) and an
int64 one (narrowed); malformed rows are counted once and rows with a null
time are never held back.

run() binds a Table as a recording (option recording:NAME=1); a reader is a
live feed unless the test adds the option itself (the `recording` fixture,
wrapping gsqlc.runtime.session's run_options): then it is replayed in time too, with
arrow_flush on."""
from __future__ import annotations

import random
from collections import Counter

import pyarrow as pa
import pytest

import gsqlc
import gsqlc.runtime.session as session
from conftest import REPO

SALES = REPO / "tests" / "data" / "schema.txt"

ALIGNED = """\
DEFINE { query_name 'sa'; }
select time, store, qty from A.SALES;
DEFINE { query_name 'sb'; }
select time, store, qty from B.SALES;
DEFINE { query_name 'both'; }
merge x.time : y.time from sa x, sb y;
DEFINE { query_name 'per5'; }
select tb, count(*) as n, sum(qty) as q from both group by time/5 as tb;
DEFINE { query_name 'j'; }
select L.time as t, L.qty as lq, R.qty as rq INNER_JOIN from sa L, sb R
where L.time = R.time and L.store = R.store;
DEFINE { query_name 'jper10'; }
select tb, count(*) as n, sum(lq) as a, sum(rq) as b from j group by t/10 as tb
"""
SET = """\
DEFINE { query_name 'rows'; }
select time, store, qty from [s].SALES;
DEFINE { query_name 'sper5'; }
select tb, count(*) as n, sum(qty) as q from rows group by time/5 as tb
"""


@pytest.fixture
def recording(monkeypatch):
    """recording(names): the runs that follow bind the Arrow data of those
    interfaces as recordings (option recording:NAME=1)."""
    names: list[str] = []
    orig = session.run_options

    def run_options(**kw):
        opts = orig(**kw)
        opts.update({f"recording:{n}": "1" for n in names})  # run() adds a table's
        return opts

    monkeypatch.setattr(session, "run_options", run_options)

    def set_names(ns):
        names[:] = list(ns)
    return set_names


def _rows(seed, n, per_s):
    rnd = random.Random(seed)
    return [(1000 + i // per_s, f"s{rnd.randrange(4)}", rnd.randrange(1, 50)) for i in range(n)]


def _table(rows, time_type=pa.uint32(), qty_type=pa.uint32(), chunk=None):
    t = pa.table({"time": pa.array([r[0] for r in rows], time_type),
                  "store": pa.array([r[1] for r in rows], pa.string()),
                  "qty": pa.array([r[2] for r in rows], qty_type)})
    if chunk:  # several record batches
        t = pa.Table.from_batches(t.to_batches(max_chunksize=chunk))
    return t


def _reader(t):
    return pa.RecordBatchReader.from_batches(t.schema, t.to_batches())


def _per5(*tables):
    c, q = Counter(), Counter()
    for rows in tables:
        for t, _, qty in rows:
            if t is None or qty is None or qty >= 1 << 32:
                continue
            c[t // 5] += 1
            q[t // 5] += qty
    return sorted((tb, c[tb], q[tb]) for tb in c)


def _jper10(a, b):
    out: dict[int, list[int]] = {}
    idx: dict[tuple, list[int]] = {}
    for t, s, q in b:
        idx.setdefault((t, s), []).append(q)
    for t, s, q in a:
        for rq in idx.get((t, s), []):
            o = out.setdefault(t // 10, [0, 0, 0])
            o[0] += 1
            o[1] += q
            o[2] += rq
    return sorted((tb, *v) for tb, v in out.items())


def _source(st, iface):
    return next(s for s in st["sources"] if s["iface"] == iface)


def _node(st, name):
    return next(n for n in st["nodes"] if n["name"] == name)


def _collect(run):
    got: dict[str, list] = {}
    for name, batch in run:
        got.setdefault(name, []).extend(tuple(r.values()) for r in batch.to_pylist())
    return got


@pytest.fixture(scope="module")
def qs(tmp_path_factory):
    d = tmp_path_factory.mktemp("arrow_in_time")
    (d / "q.gsql").write_text(ALIGNED)
    return gsqlc.compile([d / "q.gsql"], SALES)


@pytest.fixture(scope="module")
def qset(tmp_path_factory):
    d = tmp_path_factory.mktemp("arrow_set_in_time")
    (d / "q.gsql").write_text(SET)
    return gsqlc.compile([d / "q.gsql"], SALES)


@pytest.mark.parametrize("columnar", ["auto", "off"])
@pytest.mark.parametrize("time_type", [pa.uint32(), pa.int64()], ids=["uint32", "int64"])
@pytest.mark.parametrize("chunk", [None, 97], ids=["one-batch", "batches-of-97"])
@pytest.mark.parametrize("clock", ["data", "wall"])
def test_two_tables_advance_together(qs, recording, columnar, time_type, chunk, clock):
    # (the wall clock: no stamps read row by row -- the columnar path's
    # summary stamps -- but the replay in time all the same)
    a, b = _rows(3, 6000, 10), _rows(4, 1800, 3)          # 600 s each, different rates
    ta, tb = _table(a, time_type, chunk=chunk), _table(b, time_type, chunk=chunk)
    want = {"per5": _per5(a, b), "jper10": _jper10(a, b)}
    recording(["A", "B"])
    run = qs.run({"A": ta, "B": tb}, ["per5", "jper10"], clock=clock, columnar=columnar,
                 threads=1)
    got = _collect(run)
    st = run.stats
    assert sorted(got["per5"]) == want["per5"]
    assert sorted(got["jper10"]) == want["jper10"]
    assert st["aligned_sources"] == 2
    for iface, rows in (("A", a), ("B", b)):
        src = _source(st, iface)
        assert src["aligned"] and src["held_back"] > 0, src
        assert src["rows_read"] == len(rows) and src["rows_rejected"] == 0, src
        assert src["time_unreadable"] == 0, src
    assert _node(st, "per5")["late_dropped"] == 0
    if clock == "data":
        # the join holds about a round of each table, not one table whole
        # (its heartbeats follow the data; on the wall clock the run is over
        # before the first tick)
        assert _node(st, "j")["peak_held_tuples"] < 300, _node(st, "j")
        assert st["data_clock_usec"] == 1599 * 1_000_000

    # readers, not recordings: read as they come (B's batches run ahead in time)
    recording([])
    run = qs.run({"A": _reader(ta), "B": _reader(tb)}, ["per5", "jper10"], clock="data",
                 columnar=columnar, threads=1)
    got = _collect(run)
    st = run.stats
    assert st["aligned_sources"] == 0
    assert all(s["held_back"] == 0 and not s["aligned"] for s in st["sources"])
    assert sorted(got["jper10"]) == want["jper10"]
    assert _node(st, "j")["peak_held_tuples"] > 300, _node(st, "j")


@pytest.mark.parametrize("columnar", ["auto", "off"])
def test_malformed_rows_and_null_times(qs, recording, columnar):
    a, b = _rows(5, 3000, 10), _rows(6, 900, 3)
    # in A: 7 rows whose qty does not fit the uint field (rejected, once each),
    # 5 rows with a null time (unreadable: read, never held back)
    bad = sorted(random.Random(7).sample(range(len(a)), 12))
    for k, i in enumerate(bad):
        t, s, q = a[i]
        a[i] = (t, s, (1 << 40) + k) if k < 7 else (None, s, q)
    ta = _table(a, pa.int64(), pa.int64(), chunk=250)
    tb = _table(b, pa.int64(), pa.int64(), chunk=250)
    recording(["A", "B"])
    run = qs.run({"A": ta, "B": tb}, ["per5"], clock="data", columnar=columnar, threads=1)
    got = _collect(run)
    st = run.stats
    src = _source(st, "A")
    assert src["aligned"] and src["held_back"] > 0, src
    assert src["rows_read"] == len(a) and src["rows_rejected"] == 7, src
    assert src["time_unreadable"] == 5, src
    assert "7 of 3000 rows rejected as malformed" in run.report, run.report
    assert sorted(got["per5"]) == _per5(a, b)
    assert _node(st, "per5")["late_dropped"] == 0


@pytest.mark.parametrize("columnar", ["auto", "off"])
def test_interface_set_of_two_tables(qset, recording, columnar):
    a, b = _rows(8, 5000, 10), _rows(9, 1500, 3)
    ta, tb = _table(a, chunk=300), _table(b, chunk=300)
    recording(["s.0", "s.1"])
    run = qset.run({"s": [ta, tb]}, ["sper5", "rows"], clock="data", columnar=columnar,
                   threads=1)
    got = _collect(run)
    st = run.stats
    assert sorted(got["sper5"]) == _per5(a, b)
    assert sorted(got["rows"]) == sorted(a + b)
    assert st["aligned_sources"] == 2
    for m in ("s.0", "s.1"):
        src = _source(st, m)
        assert src["aligned"] and src["held_back"] > 0, src
    assert _node(st, "sper5")["late_dropped"] == 0


@pytest.mark.parametrize("columnar", ["auto", "off"])
def test_readers_as_recordings_with_arrow_flush(qs, recording, columnar):
    # readers get option arrow_flush (each batch's end signalled before the
    # next is taken): peek waits for that signal before it takes a batch
    a, b = _rows(10, 3000, 10), _rows(11, 900, 3)
    ta, tb = _table(a, chunk=128), _table(b, chunk=128)
    recording(["A", "B"])
    run = qs.run({"A": _reader(ta), "B": _reader(tb)}, ["per5", "jper10"], clock="data",
                 columnar=columnar, threads=1)
    got = _collect(run)
    st = run.stats
    assert st["aligned_sources"] == 2
    assert all(s["held_back"] > 0 for s in st["sources"]), st["sources"]
    assert sorted(got["per5"]) == _per5(a, b)
    assert sorted(got["jper10"]) == _jper10(a, b)
    assert _node(st, "per5")["late_dropped"] == 0


# ------------------------------------------------------------------ GDAT

def _gdat(path, rows, corrupt=()):
    """rows (time, store, qty) as a GDAT file; corrupt: indexes of records
    replaced by a record too short for the fixed part, plus an empty record
    before the first row (skipped, not counted)."""
    import struct
    import sys
    sys.path.insert(0, str(REPO / "tests"))
    from test_gdat import gdat_file, gdat_record
    fields = [("time", "UINT"), ("store", "V_STR"), ("qty", "UINT")]
    head = gdat_file("sales", fields, [])
    body = struct.pack(">I", 0)
    for i, r in enumerate(rows):
        body += struct.pack(">I", 5) + b"\1\2\3\4\5" if i in corrupt else gdat_record(fields, r)
    path.write_bytes(head + body)
    return f"gdat:{path}"


@pytest.mark.parametrize("columnar", ["auto", "off"])
@pytest.mark.parametrize("other", ["gdat", "csv", "table"])
def test_a_gdat_file_replayed_in_time(qs, tmp_path, columnar, other):
    a, b = _rows(12, 4000, 10), _rows(13, 1200, 3)
    bad = set(random.Random(14).sample(range(len(a)), 9))
    ga = _gdat(tmp_path / "a.gdat", a, bad)
    if other == "gdat":
        sb = _gdat(tmp_path / "b.gdat", b)
    elif other == "csv":
        (tmp_path / "b.csv").write_text("".join(f"{t},{s},10.0.0.1,{q},0,1.0,TRUE\n"
                                                for t, s, q in b))
        sb = f"csv:{tmp_path / 'b.csv'}"
    else:
        sb = _table(b, chunk=200)
    good = [r for i, r in enumerate(a) if i not in bad]
    run = qs.run({"A": ga, "B": sb}, ["per5", "jper10"], clock="data", columnar=columnar,
                 threads=1)
    got = _collect(run)
    st = run.stats
    assert sorted(got["per5"]) == _per5(good, b)
    assert sorted(got["jper10"]) == _jper10(good, b)
    assert st["aligned_sources"] == 2
    src = _source(st, "A")
    assert src["kind"] == "gdat" and src["aligned"] and src["held_back"] > 0, src
    assert src["records_read"] == len(a) and src["rows_rejected"] == len(bad), src
    assert f"{len(bad)} of {len(a)} records rejected as malformed" in run.report
    assert _source(st, "B")["held_back"] > 0
    assert _node(st, "per5")["late_dropped"] == 0
    assert _node(st, "j")["peak_held_tuples"] < 300, _node(st, "j")
    assert st["data_clock_usec"] == 1399 * 1_000_000


@pytest.mark.parametrize("cut", ["truncated", "empty"])
def test_a_truncated_or_empty_gdat_file_replayed_in_time(qs, tmp_path, cut):
    a, b = _rows(15, 2000, 10), _rows(16, 600, 3)
    if cut == "empty":
        a = []
    ga = _gdat(tmp_path / "a.gdat", a)
    if cut == "truncated":
        data = (tmp_path / "a.gdat").read_bytes()
        (tmp_path / "a.gdat").write_bytes(data[:-5])     # the last record cut short
        a = a[:-1]
    run = qs.run({"A": ga, "B": _table(b, chunk=150)}, ["per5"], clock="data", threads=1)
    got = _collect(run)
    st = run.stats
    assert sorted(got.get("per5", [])) == _per5(a, b)
    src = _source(st, "A")
    assert src["aligned"] and src["truncated"] == (cut == "truncated"), src
    assert src["rows_rejected"] == (cut == "truncated"), src
    assert _node(st, "per5")["late_dropped"] == 0
