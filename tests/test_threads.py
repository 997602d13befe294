"""A run over Arrow data on several threads (issue 13, gsqlc.runtime.parallel):
run(threads=N) cuts each in-memory table into contiguous slices whose LFTAs
run on threads of their own, and merges their outputs in the HFTAs.  The
results, statistics and report are the one thread's: selections row for row
and in order, aggregations group for group (also with rows arriving late and
rows rejected as malformed); runs that cannot be split so run on one thread
and say why."""
from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pytest

import gsqlc
from conftest import REPO
from gsqlc.errors import SetupError

SALES_SCHEMA = REPO / "examples" / "csv" / "schema.txt"
QUERIES = {
    "per_minute": (REPO / "examples" / "csv" / "per_minute.gsql").read_text(),
    "sales_all": "DEFINE { query_name 'sales_all'; }\n"
                 "SELECT ts, store, item, qty, price, client FROM SALES\n",
    "big_sales": "DEFINE { query_name 'big_sales'; }\n"
                 "SELECT ts, store, qty FROM SALES WHERE qty >= 3\n",
    "stats_per_minute": "DEFINE { query_name 'stats_per_minute'; }\n"
                        "SELECT tb, client, min(qty) as lo, max(qty) as hi, avg(price) as p,\n"
                        "       count(*) as n FROM SALES GROUP BY ts/60 as tb, client\n"
                        "HAVING count(*) > 1\n",
    # an HFTA over an HFTA: the stores' busiest minute per ten minutes
    "busiest": "DEFINE { query_name 'busiest'; }\n"
               "SELECT tt, max(sales) as most FROM per_minute GROUP BY minute/600 as tt\n",
    # groups by time alone: a hash partition would hold whole epochs in turn
    "minutes": "DEFINE { query_name 'minutes'; }\n"
               "SELECT tb, count(*) as n, sum(qty) as q FROM SALES GROUP BY ts/60 as tb\n",
    "clocked": "DEFINE { query_name 'clocked'; }\n"
               "SELECT ts, qty, get_system_time() as now FROM SALES WHERE qty > 10\n",
}
AGGREGATES = ["per_minute", "stats_per_minute", "busiest"]
SELECTIONS = ["sales_all", "big_sales"]


@pytest.fixture(scope="module")
def qs(tmp_path_factory):
    d = tmp_path_factory.mktemp("threads")
    files = []
    for name, text in QUERIES.items():
        (d / f"{name}.gsql").write_text(text)
        files.append(d / f"{name}.gsql")
    return gsqlc.compile(files, schema=SALES_SCHEMA)


def sales(n: int, seed: int = 7, late: float = 0.0, bad: int = 0) -> pa.Table:
    """n sales, ts rising a second per 7 rows; a fraction `late` of the rows
    stamped up to 5 minutes early (late arrivals, some beyond what the
    aggregations keep open); `bad` rows with a quantity out of range."""
    rng = np.random.default_rng(seed)
    ts = 1_700_000_000 + np.arange(n, dtype=np.int64) // 7
    back = rng.random(n) < late
    ts[back] -= rng.integers(1, 300, back.sum())
    qty = rng.integers(0, 20, n).astype(np.int64)
    qty[rng.choice(n, bad, replace=False)] = -1
    return pa.table({
        "ts": pa.array(ts, pa.int64()),
        "store": pa.array(rng.choice(["north", "south", "east", "west"], n)),
        "item": pa.array(rng.choice(["apple", "bread", "milk"], n)),
        "qty": pa.array(qty, pa.int64()),
        "price": pa.array(rng.random(n) * 10, pa.float64()),
        "client": pa.array(rng.integers(0xC0A80000, 0xC0A80000 + 40, n), pa.uint32()),
    })


def run(qs, t, threads, outputs, **kw):
    r = qs.run({"default": t}, outputs, threads=threads, **kw)
    got: dict[str, list] = {o: [] for o in outputs}
    for q, b in r:
        got[q].append(b)
    tables = {q: pa.Table.from_batches(bs, schema=qs.output_schema(q)) for q, bs in got.items()}
    return tables, r


def sort(t: pa.Table) -> pa.Table:
    """Rows in order; float columns to 9 significant digits (partial sums
    are added in another order)."""
    cols = [pa.array(np.vectorize(lambda x: float(f"{x:.9g}"))(c.to_numpy()), pa.float64())
            if pa.types.is_floating(c.type) and len(c) else c for c in t.columns]
    t = pa.table(cols, names=t.column_names)
    return t.sort_by([(c, "ascending") for c in t.column_names])


def counters(stats: dict) -> dict:
    keep = ("late_dropped", "field_unavailable", "skew_dropped")
    return {n["name"]: {k: n[k] for k in keep} for n in stats["nodes"]}


@pytest.mark.parametrize("late,bad", [(0.0, 0), (0.002, 0), (0.002, 25), (0.0, 1)])
def test_split_run_equals_one_thread(qs, late, bad):
    t = sales(60_000, late=late, bad=bad)
    outs = AGGREGATES + SELECTIONS
    one, r1 = run(qs, t, 1, outs)
    many, r3 = run(qs, t, 3, outs)
    info = r3.stats["threads"]
    assert info["used"] == 3 and sum(info["slices"]["default"]) == t.num_rows, info
    assert r1.stats["threads"]["used"] == 1
    for q in SELECTIONS:                  # row for row, in order
        assert one[q].num_rows > 0 and many[q].equals(one[q]), q
    for q in AGGREGATES:                  # group for group
        assert one[q].num_rows > 0 and sort(many[q]).equals(sort(one[q])), q
    s1, s3 = r1.stats, r3.stats
    for key in ("rows_read", "rows_rejected", "values_coerced"):
        assert s3["sources"][0][key] == s1["sources"][0][key], key
    assert s3["sources"][0]["rows_rejected"] == bad
    assert counters(s3) == counters(s1)
    if late:
        assert sum(n["late_dropped"] for n in s1["nodes"]) > 0   # the case is exercised
    assert {s["name"]: s["tuples"] for s in s3["streams"] if not s["name"].startswith("_")} == \
        {s["name"]: s["tuples"] for s in s1["streams"] if not s["name"].startswith("_")}
    assert s3["tuples_written"] == s1["tuples_written"]
    assert r3.report == r1.report        # counts added, malformed rows numbered as one input


@pytest.mark.parametrize("threads", [2, 3])
def test_an_aggregation_in_order_runs_in_hash_partitions(qs, threads):
    """One aggregation over rows in time order: each thread runs the whole
    query over every row, counting the groups of one hash partition of the
    keys (option partition); together they give one thread's groups, in its
    epoch order, and its statistics and report."""
    t = sales(90_000)
    one, r1 = run(qs, t, 1, ["stats_per_minute"])
    many, rn = run(qs, t, threads, ["stats_per_minute"])
    info = rn.stats["threads"]
    assert info["how"] == "partitions" and info["used"] == threads and info["slices"] == {}
    a, b = one["stats_per_minute"], many["stats_per_minute"]
    assert a.num_rows > 100 and sort(b).equals(sort(a))
    tb = b.column("tb").to_numpy()
    assert (tb[1:] >= tb[:-1]).all()      # epoch order, as one thread gives it
    s1, sn = r1.stats, rn.stats
    assert sn["sources"][0]["rows_read"] == s1["sources"][0]["rows_read"] == t.num_rows
    assert sn["tuples_written"] == s1["tuples_written"] == a.num_rows
    # each partition counted its own groups: the LFTA's partials and the
    # HFTA's groups add up to one run's
    lfta = [x for x in sn["streams"] if x["name"] == "_fta_stats_per_minute"][0]["tuples"]
    assert lfta == [x for x in s1["streams"] if x["name"] == "_fta_stats_per_minute"][0]["tuples"]
    assert rn.report == r1.report
    # table() and collect() take the same way
    assert sort(qs.table({"default": t}, "stats_per_minute", threads=threads)).equals(
        sort(qs.table({"default": t}, "stats_per_minute", threads=1)))


@pytest.mark.parametrize("case,how", [
    ("late rows", "slices"),             # a partition could judge lateness otherwise
    ("two outputs", "slices"),
    ("an HFTA over an HFTA", "slices"),  # its groups are not the LFTA's
    ("groups by time alone", "slices"),  # a partition would hold whole epochs in turn
])
def test_hash_partitions_only_where_they_give_one_runs_answer(qs, case, how):
    t = sales(60_000, late=0.002 if case == "late rows" else 0.0)
    outs = {"late rows": ["per_minute"], "two outputs": ["per_minute", "stats_per_minute"],
            "an HFTA over an HFTA": ["busiest"], "groups by time alone": ["minutes"]}[case]
    one, _ = run(qs, t, 1, outs)
    many, r = run(qs, t, 2, outs)
    assert r.stats["threads"]["how"] == how
    for q in outs:
        assert sort(many[q]).equals(sort(one[q])), q


def test_the_partition_option_is_checked(qs):
    from gsqlc.runtime import runner
    for bad in ("x", "3/3", "0/0", "1/5000", "-1/2", "1/"):
        with pytest.raises(SetupError,
                           match=re.escape(f"partition must be K/N (0 <= K < N <= 4096), "
                                           f"got '{bad}'")):
            runner.run_library(qs.library, [], [], {"partition": bad}, {},
                               arrow_sources={"default": sales(100).to_reader()},
                               arrow_sinks=[("per_minute", lambda s, b: True)])
    # the partitions of 3 hold every group once between them
    t = sales(30_000)
    parts = []
    for k in range(3):
        got: list = []
        res = runner.run_library(qs.library, [], [], {"partition": f"{k}/3"}, {},
                                 arrow_sources={"default": t.to_reader()},
                                 arrow_sinks=[("stats_per_minute",
                                               lambda s, b: got.append(b) or True)])
        assert res.status == 0, res.error
        parts.append(pa.Table.from_batches(got))
    assert all(p.num_rows for p in parts)
    whole = qs.table({"default": t}, "stats_per_minute", threads=1, strings="bytes",
                     ip_format="int")
    assert sort(pa.concat_tables(parts)).equals(sort(whole.cast(parts[0].schema)))
    # per_minute groups by a string: its LFTA passes records on, and cannot split
    res = runner.run_library(qs.library, [], [], {"partition": "0/2"}, {},
                             arrow_sources={"default": t.to_reader()},
                             arrow_sinks=[("per_minute", lambda s, b: True)])
    assert res.status != 0 and "option partition: LFTA _fta_per_minute is not an aggregation" \
        in res.error, res.error


def test_slices_start_at_clean_boundaries(qs):
    """Where rows arrive out of order, a slice of an LFTA aggregation's
    input starts only where no earlier row is newer than a later one."""
    assert "sub-aggregate table" in qs.explain().split("[LFTA] _fta_stats_per_minute")[1]
    t = sales(40_000, late=0.05)
    _, r = run(qs, t, 4, ["stats_per_minute"])
    sizes = r.stats["threads"]["slices"]["default"]
    assert len(sizes) == r.stats["threads"]["used"] >= 2
    ts = t.column("ts").to_numpy()
    start = 0
    for size in sizes[:-1]:
        start += size
        assert ts[:start].max() <= ts[start:].min(), start


def test_selection_only_runs_need_no_hfta_run(qs):
    t = sales(30_000)
    one, _ = run(qs, t, 1, ["big_sales"])
    many, r = run(qs, t, 2, ["big_sales"])
    assert r.stats["threads"]["used"] == 2
    assert many["big_sales"].equals(one["big_sales"])
    assert r.stats["sinks"][0]["tuples"] == one["big_sales"].num_rows


def test_table_and_strings_pass_through(qs):
    t = sales(20_000)
    a = qs.table({"default": t}, "sales_all", threads=3, strings="bytes")
    b = qs.table({"default": t}, "sales_all", threads=1, strings="bytes")
    assert a.schema.field("store").type == pa.binary() and a.equals(b)


@pytest.mark.parametrize("case,reason", [
    ("one", "one thread asked for"),
    ("reader", "reader or iterator"),
    ("data_clock", "clock=data"),
    ("bound", "option out_of_order"),
    ("clock_query", "query clocked reads the clock"),
    ("small", "too few to split"),
])
def test_runs_that_stay_on_one_thread_say_why(qs, case, reason):
    t = sales(5_000)
    kw: dict = {"threads": 4}
    outs = ["clocked"] if case == "clock_query" else ["per_minute"]
    src = t
    if case == "one":
        kw["threads"] = 1
    elif case == "reader":
        src = pa.RecordBatchReader.from_batches(t.schema, t.to_batches(max_chunksize=1000))
    elif case == "data_clock":
        kw["clock"] = "data"
    elif case == "bound":
        kw["out_of_order"] = {"default": 5}
    elif case == "small":
        kw.pop("threads")             # the automatic count wants 131,072 rows a slice
    r = qs.run({"default": src}, outs[0], **kw)
    rows = sum(b.num_rows for b in r)
    assert rows > 0
    info = r.stats["threads"]
    assert info["used"] == 1 and reason in info["reason"], info


def test_csv_files_stay_on_one_thread(qs, tmp_path):
    r = qs.run({"default": f"csv:{REPO / 'examples' / 'csv' / 'sales.csv'}"}, "per_minute",
               threads=2)
    assert sum(b.num_rows for b in r) > 0
    assert "a CSV file, read on one thread" in r.stats["threads"]["reason"]


def test_bad_thread_counts_are_refused(qs):
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(gsqlc.UsageError, match="threads must be a positive integer"):
            qs.run({"default": sales(10)}, "per_minute", threads=bad)


@pytest.mark.parametrize("output", ["sales_all", "per_minute"])
def test_leaving_early_ends_every_run(qs, output):
    """A selection's slices, or the slices and the HFTA run of an
    aggregation, end when the consumer stops reading."""
    import threading
    r = qs.run({"default": sales(300_000)}, output, threads=3, batch_rows=10)
    for i, _ in enumerate(r):
        if i == 1:
            break
    assert r.stats == {}                  # ended early: no statistics, and no thread left
    assert not [x for x in threading.enumerate()
                if x.name.startswith(("gsqlc-slice", "gsqlc-part")) or x.name == "gsqlc-run"]


def test_a_failing_slice_fails_the_run_as_one_thread_does(qs):
    t = sales(60_000)
    t = t.set_column(3, "qty", t.column("qty").cast(pa.string()))
    msgs = []
    for threads in (1, 3):
        with pytest.raises(gsqlc.RunError) as e:
            list(qs.run({"default": t}, "per_minute", threads=threads))
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1] and "Arrow column 'qty' has format 'u' (utf8)" in msgs[0]


@pytest.mark.parametrize("threads", [1, 3])
def test_collect_gives_what_the_iteration_gives(qs, threads):
    """collect() (what table() uses: the run's threads keep their batches
    until they end) against iterating the run: the same batches in the same
    order, the same statistics; a run is collected once; a failing run
    raises its error."""
    t = sales(60_000, late=0.002, bad=3)
    for outputs in ("big_sales", ["big_sales", "per_minute"]):
        a = qs.run({"default": t}, outputs, threads=threads, batch_rows=4096)
        b = qs.run({"default": t}, outputs, threads=threads, batch_rows=4096)
        got, want = a.collect(), list(b)
        assert len(got) == len(want) > 1
        for x, y in zip(got, want):
            if isinstance(outputs, list):
                assert x[0] == y[0] and x[1].equals(y[1])
            else:
                assert x.equals(y)
        assert counters(a.stats) == counters(b.stats) and a.report == b.report
        assert a.stats["threads"]["used"] == b.stats["threads"]["used"]
        with pytest.raises(RuntimeError, match="once"):
            a.collect()
    bad = t.set_column(3, "qty", t.column("qty").cast(pa.string()))
    with pytest.raises(gsqlc.RunError, match="Arrow column 'qty'"):
        qs.run({"default": bad}, "big_sales", threads=threads).collect()
