"""Epoch-owning reads (gsqlc.spark.owned_epochs, issue 14 part 1): the tasks of a
one-stage Spark aggregation each read their unit of Parquet row groups and
the rows of the epochs they own around it.  Whatever the cut into units,
every row reaches exactly one task and every epoch one task, for input in
order or disordered within the aggregation's bound; beyond the bound a
task says where.  Without Spark: the reads are run here task by task."""
from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

import gsqlc
from gsqlc.planner.nodes import HftaAggregate
from gsqlc.spark import storage
from gsqlc.spark.owned_epochs import OwnedRead, epoch_key

SCHEMA = """
PROTOCOL PKTS {
    uint time   get_csv_uint_pos1 (increasing, required);
    int  stime  get_csv_int_pos2 (increasing);
    uint len    get_csv_uint_pos3;
}
"""


def nodes(tmp_path, query: str):
    (tmp_path / "s.txt").write_text(SCHEMA)
    (tmp_path / "q.gsql").write_text(query)
    cqs = gsqlc.compile([str(tmp_path / "q.gsql")], schema=str(tmp_path / "s.txt"))
    plan = cqs.compiled.queryset.plan
    hfta = next((n for n in plan.nodes if isinstance(n, HftaAggregate)), None)
    return cqs, hfta, plan.node(hfta.inputs[0]) if hfta is not None else None


def key_of(tmp_path, group: str = "time/10"):
    _, hfta, lfta = nodes(tmp_path, f"select tb, count(*) from PKTS group by {group} as tb")
    return epoch_key(hfta, lfta)


def write(tmp_path, times, files: int, group_rows: int) -> list[tuple[str, int]]:
    """`times` (with a row id) as `files` Parquet files of row groups of
    `group_rows`; the files as storage.list_files gives them."""
    t = pa.table({"time": times, "id": pa.array(np.arange(len(times)), pa.int64())})
    d = tmp_path / "data"
    d.mkdir(exist_ok=True)
    per = -(-len(t) // files)
    for i in range(files):
        pq.write_table(t.slice(i * per, per), d / f"part{i:03d}.parquet", row_group_size=group_rows)
    return storage.list_files(pafs.LocalFileSystem(), [str(d)])


def run_tasks(files, tasks: int, key, disorder: int, stats: bool):
    """Each task's rows (their ids and keys) and errors, as the Spark tasks
    of one stage would read them."""
    units = storage.plan_pieces(files, tasks)
    out, errors = [], []
    for j in range(len(units)):
        reader = storage.RowGroupReader(pafs.LocalFileSystem(), ["time", "id"], batch_rows=500)
        read = OwnedRead(units, key, disorder, reader, "time" if stats else None, "pkts")
        ids, keys = [], []
        for b in read.batches(j):
            ids += b.column("id").to_pylist()
            k, valid = key.values(b.column("time"))
            keys += [int(x) for x, ok in zip(k, valid if valid is not None else [True] * len(k))
                     if ok]
        reader.close()
        out.append((ids, set(keys)))
        if read.error:
            errors.append(read.error)
    return out, errors


def assert_partition(out, n: int) -> None:
    seen = Counter(i for ids, _ in out for i in ids)
    assert sorted(seen) == list(range(n)) and set(seen.values()) == {1}
    for a in range(len(out)):
        for b in range(a + 1, len(out)):
            assert not out[a][1] & out[b][1], (a, b, out[a][1] & out[b][1])


@pytest.mark.parametrize("stats", [True, False])
def test_every_row_and_every_epoch_reaches_one_task_whatever_the_cut(tmp_path, stats):
    rng = np.random.default_rng(1)
    times = pa.array(np.cumsum(rng.integers(0, 3, 6_000)) + 1_000, pa.int64())
    files = write(tmp_path, times, 3, 700)
    key = key_of(tmp_path)
    for tasks in (1, 2, 3, 5, 8, 13):
        out, errors = run_tasks(files, tasks, key, 2, stats)
        assert not errors
        assert_partition(out, len(times))


@pytest.mark.parametrize("stats", [True, False])
def test_disorder_within_the_bound_is_read_by_the_owner_of_each_epoch(tmp_path, stats):
    rng = np.random.default_rng(2)
    base = np.repeat(np.arange(1_000, 1_600, 10), 100)      # epochs of 100 rows
    jitter = rng.integers(0, 20, len(base))                   # back up to 2 epochs of time/10
    times = pa.array(np.maximum(base - jitter, 1_000), pa.int64())
    files = write(tmp_path, times, 2, 450)
    key = key_of(tmp_path)
    for tasks in (2, 3, 6, 9):
        out, errors = run_tasks(files, tasks, key, 2, stats)
        assert not errors, errors
        assert_partition(out, len(times))
    # the same rows allow no less than 2 epochs of disorder
    _, errors = run_tasks(files, 6, key, 1, stats)
    assert errors and re.search(r"time/10 goes back from \d+ to \d+, more than 1 epoch", errors[0])


def test_rows_out_of_order_beyond_the_bound_fail_saying_where(tmp_path):
    times = pa.array(np.concatenate([np.arange(1_000, 2_000), np.arange(1_000, 1_500)]),
                     pa.int64())
    files = write(tmp_path, times, 1, 250)
    out, errors = run_tasks(files, 3, key_of(tmp_path), 2, True)
    assert errors
    assert "row group" in errors[0] and "part000.parquet" in errors[0] and "time/10" in errors[0]


def test_rows_without_a_key_are_read_once(tmp_path):
    rng = np.random.default_rng(3)
    t = (np.cumsum(rng.integers(0, 2, 5_000)) + 1_000).astype(object)
    t[rng.integers(0, 5_000, 300)] = None                    # nulls
    t[rng.integers(0, 5_000, 100)] = -5                       # no uint value: rejected rows
    t[:40] = None                                             # a start without keys
    times = pa.array(list(t), pa.int64())
    files = write(tmp_path, times, 2, 400)
    key = key_of(tmp_path)
    for stats in (True, False):
        for tasks in (2, 4, 7):
            out, errors = run_tasks(files, tasks, key, 2, stats)
            assert not errors, errors
            assert_partition(out, len(times))


def test_an_epoch_cut_by_a_unit_goes_to_the_side_with_more_of_it(tmp_path):
    times = pa.array(np.repeat([100, 110, 120], [100, 900, 100]), pa.int64())   # epochs 10-12
    files = write(tmp_path, times, 1, 100)        # 11 row groups, 2 units of 6 and 5
    out, errors = run_tasks(files, 2, key_of(tmp_path), 2, True)
    assert not errors
    # epoch 11 (900 rows) starts in the first unit but lies mostly in the second
    assert out[0][1] == {10} and out[1][1] == {11, 12}
    assert_partition(out, len(times))


def test_the_key_is_computed_as_the_generated_code_computes_it(tmp_path):
    """Per row, the key of an integer expression (C's unsigned wrap-around,
    negative ints) equals the value the compiled code computes for it."""
    rng = np.random.default_rng(4)
    n = 3_000
    time = np.sort(rng.integers(0, 1 << 32, n)).astype(np.int64)
    time[:3] = [0, 3, 6]       # time - 7 wraps around in uint; so does time * 2
    stime = np.sort(rng.integers(-(1 << 31), 1 << 31, n)).astype(np.int64)
    table = pa.table({"time": time, "stime": stime, "len": np.ones(n, np.int64)})
    for group, col in (("time/60", "time"), ("(time - 7) / 13 * 5 + 1", "time"),
                       ("time * 2 / 3", "time"), ("stime - 100", "stime"), ("stime", "stime")):
        _, hfta, lfta = nodes(tmp_path, f"select tb, count(*) as c from PKTS group by {group} as tb")
        key = epoch_key(hfta, lfta)
        assert key is not None and key.column == col
        got, valid = key.values(table[col].combine_chunks())
        assert valid is None
        cqs, _, _ = nodes(tmp_path, f"select {group} as tb, len from PKTS")
        assert got.tolist() == cqs.table({"": table})["tb"].to_pylist(), group


def test_keys_that_are_not_one_field_s_integer_arithmetic_have_none(tmp_path):
    """Temporal keys (so the queries compile) that are not one field's
    integer arithmetic: two increasing fields, a conversion.  Keys that are
    not temporal at all are no aggregation's epoch: the query is refused."""
    for group in ("time + stime", "ULLONG(time) / 60"):
        _, hfta, lfta = nodes(tmp_path, f"select tb, count(*) from PKTS group by {group} as tb")
        assert hfta is not None and epoch_key(hfta, lfta) is None, group
    for group in ("time/len", "time + len"):
        with pytest.raises(gsqlc.QueryError, match="temporal-group-by"):
            nodes(tmp_path, f"select tb, count(*) from PKTS group by {group} as tb")


def test_a_task_over_many_files_keeps_one_open(tmp_path):
    """A task looks at the footers of its neighbours' files too: only the
    file it reads stays open, however many files its units hold."""
    import os
    times = pa.array(np.arange(30_000) // 7 + 1_000, pa.int64())
    files = write(tmp_path, times, 300, 50)
    key = key_of(tmp_path)
    units = storage.plan_pieces(files, 3)
    before = len(os.listdir("/proc/self/fd"))
    most = before
    for j in range(3):
        reader = storage.RowGroupReader(pafs.LocalFileSystem(), ["time", "id"])
        read = OwnedRead(units, key, 2, reader, "time", "pkts")
        for _ in read.batches(j):
            most = max(most, len(os.listdir("/proc/self/fd")))
        reader.close()
        assert read.error is None
    assert most - before <= 3, (before, most)
    assert len(os.listdir("/proc/self/fd")) == before


@pytest.mark.parametrize("stats", [True, False])
def test_an_epoch_longer_than_a_unit_has_one_owner(tmp_path, stats):
    """An epoch that covers whole units (and so two or more unit
    boundaries) is owned by one task, whichever side holds more of it."""
    times = pa.array(np.repeat([100, 110, 120, 130], [300, 3_000, 250, 2_000]), pa.int64())
    files = write(tmp_path, times, 2, 100)
    key = key_of(tmp_path)
    for tasks in (2, 3, 4, 5, 7, 11):
        out, errors = run_tasks(files, tasks, key, 2, stats)
        assert not errors, (tasks, errors)
        assert_partition(out, len(times))


def test_random_inputs_reach_one_task_each_or_fail_saying_so(tmp_path):
    """Seeded random inputs (epochs of 1-3,000 rows, files of row groups of
    20-700 rows, nulls and out-of-range times, jitter within the disorder
    or beyond it) cut into 1-11 tasks: within the disorder every row and
    epoch reaches one task; beyond it a task reports it or the partition
    still holds -- never a row lost or read twice silently."""
    rng = np.random.default_rng(2026)
    detected = 0
    for it in range(16):
        d = tmp_path / f"in{it}"
        d.mkdir()
        lens = rng.integers(1, 3_000, rng.integers(1, 12))
        base = np.repeat(np.arange(len(lens)) * 10 + 100, lens)
        disorder = int(rng.integers(0, 3))
        beyond = it % 4 == 3
        jitter = rng.integers(0, 10 * disorder + (31 if beyond else 1), len(base))
        t = np.maximum(base - jitter, 100).astype(object)
        if it % 2:
            t[rng.integers(0, len(t), 1 + len(t) // 20)] = None
            t[rng.integers(0, len(t), 1 + len(t) // 50)] = -3
        files = write(d, pa.array(list(t), pa.int64()), int(rng.integers(1, 5)),
                      int(rng.integers(20, 700)))
        key = key_of(d)
        for tasks in rng.integers(1, 12, 2):
            out, errors = run_tasks(files, int(tasks), key, disorder, bool(it % 3))
            assert beyond or not errors, (it, tasks, errors)
            detected += bool(errors)
            if not errors:
                assert_partition(out, len(t))
    assert detected
