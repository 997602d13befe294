"""Parameters changed while a run goes on, through the Python API
(Run.set_param; gsqlc_change_param underneath; docs/language.md, "Changing
a parameter while the run goes on").

The answer of a run whose parameter changed is checked against runs whose
values never change, split at the change's instant as the stats record it:
a selection record by record (the records read before the instant with the
old value, the rest with the new), an aggregation epoch by epoch (the
epochs up to the one of the largest timestamp read by the instant from a
run with the old values, later ones from a run with the new) -- in its LFTA
(WHERE) and its HFTA (HAVING) alike.  The command line, the stand-alone
runner and the sanitizers are tests/test_param_changes_cli.py's."""
from __future__ import annotations

import random
import sys
from pathlib import Path

import pyarrow as pa
import pytest

import gsqlc
from gsqlc.errors import RunError, UsageError

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
import pktgen  # noqa: E402

SCHEMA = """
PROTOCOL PKTS {
    uint time   get_csv_uint_pos1 (increasing, required);
    IP   srcIP  get_csv_ip_pos2;
    uint len    get_csv_uint_pos3;
}
"""

QUERIES = """\
DEFINE { query_name 'agg'; }
PARAM { minlen uint; thr ullong; }
SELECT tb, srcIP, count(*) AS n, sum(len) AS bytes FROM [csv].PKTS WHERE len > $minlen
GROUP BY time/10 AS tb, srcIP HAVING count(*) > $thr
;
DEFINE { query_name 'sel'; }
PARAM { minlen uint; watch IP; }
SELECT time, srcIP, len FROM [csv].PKTS WHERE len > $minlen OR srcIP = $watch
;
DEFINE { query_name 'hagg'; }
PARAM { minlen uint; }
SELECT tb, srcIP, count(*) AS n, POSAVG(len * 1.0) AS avg_len FROM [csv].PKTS
WHERE len > $minlen GROUP BY time/10 AS tb, srcIP
;
DEFINE { query_name 'samp'; }
PARAM { k ullong; j ullong; }
SELECT tb, srcIP, count(*) AS n, count$(*) AS pkts FROM [csv].PKTS
GROUP BY time/10 AS tb, srcIP
CLEANING_WHEN count$(*) >= $k CLEANING_BY count(*) >= $j
;
DEFINE { query_name 'halves'; }
PARAM { top ullong; }
SELECT tb, FIRST_lfta(len) AS first_len, count(*) AS n FROM [csv].PKTS
GROUP BY time/10 AS tb HAVING count(*) > $top
"""

START = {"minlen": 100, "thr": 30, "watch": "10.0.0.3", "top": 0, "k": 600, "j": 25}
BATCH = 2000


def make_rows(n=60000, seed=3):
    rng = random.Random(seed)
    return [(i // 1000, f"10.0.0.{rng.randrange(1, 20)}", rng.randrange(0, 1500))
            for i in range(n)]


ROWS = make_rows()


def to_batch(rows):
    return pa.record_batch([pa.array([r[0] for r in rows], pa.uint32()),
                            pa.array([r[1] for r in rows]),
                            pa.array([r[2] for r in rows], pa.uint32())],
                           names=["time", "srcIP", "len"])


@pytest.fixture(scope="module")
def qs(tmp_path_factory):
    d = tmp_path_factory.mktemp("params")
    (d / "schema.txt").write_text(SCHEMA)
    (d / "q.gsql").write_text(QUERIES)
    return gsqlc.compile([d / "q.gsql"], schema=d / "schema.txt")


def run_changing(qs, output, changes, rows=ROWS, params=START):
    """The run of `output` over rows fed batch by batch, the changes
    {row index: {name: value}} asked for as the batch starting at that row
    is handed over (the run then is between rounds): the rows it gave and
    its stats."""
    box = []

    def feed():
        for k in range(0, len(rows), BATCH):
            for name, value in changes.get(k, {}).items():
                box[0].set_param(name, value)
            yield to_batch(rows[k:k + BATCH])
    run = qs.run({"csv": feed()}, output, params=dict(params))
    box.append(run)
    got = pa.Table.from_batches(list(run), schema=run.schema).to_pylist()
    return got, run.stats


def run_fixed(qs, output, params):
    run = qs.run({"csv": to_batch(ROWS)}, output, params=dict(params))
    return pa.Table.from_batches(list(run), schema=run.schema).to_pylist()


def agg_key(r):
    return (r["tb"], r["srcIP"])


def by_epoch_split(before, after, estar):
    """Rows of `before` for epochs up to estar, of `after` for later ones."""
    return sorted([r for r in before if r["tb"] <= estar] + [r for r in after if r["tb"] > estar],
                  key=agg_key)


def test_selection_takes_a_change_at_the_instant(qs):
    """The records read before the instant with the old values, the rest with
    the new ones, line for line (a threshold and a watched address)."""
    got, stats = run_changing(qs, "sel", {20000: {"minlen": 700, "watch": "10.0.0.7"}})
    changes = stats["param_changes"]
    assert [(c["name"], c["old_value"], c["value"]) for c in changes] == [
        ("minlen", "100", "700"), ("watch", "10.0.0.3", "10.0.0.7")]
    n = changes[0]["records"]
    assert changes[1]["records"] == n and 20000 <= n < 22000
    want = [(t, s, ln) for i, (t, s, ln) in enumerate(ROWS)
            if (ln > 100 or s == "10.0.0.3" if i < n else ln > 700 or s == "10.0.0.7")]
    assert [(r["time"], r["srcIP"], r["len"]) for r in got] == want


def test_aggregation_switches_at_the_next_epoch(qs):
    """The LFTA's WHERE and the HFTA's HAVING switch together: per epoch,
    the answer of a run with the old values up to the instant's epoch and of
    a run with the new ones after it -- the instant falls inside an epoch."""
    got, stats = run_changing(qs, "agg", {24000: {"minlen": 700, "thr": 45}})
    (c1, c2) = stats["param_changes"]
    estar = c1["data_usec"] // 1_000_000 // 10
    assert estar == 2 and c2["data_usec"] == c1["data_usec"]
    old = run_fixed(qs, "agg", START)
    new = run_fixed(qs, "agg", {**START, "minlen": 700, "thr": 45})
    want = by_epoch_split(old, new, estar)
    assert sorted(got, key=agg_key) == want
    # the epoch of the instant differs from what the new values give it
    assert [r for r in want if r["tb"] == estar] != [r for r in new if r["tb"] == estar]


def test_changes_at_two_instants(qs):
    """Three values over the run: each epoch takes the one in force when
    the query reached it."""
    got, stats = run_changing(qs, "agg", {16000: {"thr": 60}, 42000: {"thr": 20}})
    e1, e2 = (c["data_usec"] // 1_000_000 // 10 for c in stats["param_changes"])
    assert e1 < e2
    runs = [run_fixed(qs, "agg", {**START, "thr": t}) for t in (30, 60, 20)]
    want = sorted([r for r in runs[0] if r["tb"] <= e1]
                  + [r for r in runs[1] if e1 < r["tb"] <= e2]
                  + [r for r in runs[2] if r["tb"] > e2], key=agg_key)
    assert sorted(got, key=agg_key) == want


def test_an_aggregation_in_the_hfta_reads_its_parameters_there(qs):
    """POSAVG runs only in an HFTA: its WHERE stays there, switched by epoch
    (the LFTA's selection would take the change mid-epoch)."""
    plan = qs.explain()
    hfta = plan.split("[HFTA] hagg")[1].split("\n\n")[0]
    assert "WHERE    (len > $minlen)" in hfta, plan
    assert "$minlen: a change while running takes effect from the next epoch" in hfta
    got, stats = run_changing(qs, "hagg", {34000: {"minlen": 900}})
    estar = stats["param_changes"][0]["data_usec"] // 1_000_000 // 10
    want = by_epoch_split(run_fixed(qs, "hagg", START),
                          run_fixed(qs, "hagg", {**START, "minlen": 900}), estar)
    assert sorted(got, key=agg_key) == want


def test_a_sampling_query_switches_at_the_next_window(qs):
    """CLEANING_WHEN and CLEANING_BY read the values of the tuple's window."""
    got, stats = run_changing(qs, "samp", {36000: {"k": 300, "j": 12}})
    estar = stats["param_changes"][0]["data_usec"] // 1_000_000 // 10
    want = by_epoch_split(run_fixed(qs, "samp", START),
                          run_fixed(qs, "samp", {**START, "k": 300, "j": 12}), estar)
    assert sorted(got, key=agg_key) == want


def test_a_threshold_raised_over_a_replayed_capture(tmp_path):
    """A capture replayed in time, the threshold raised from the consumer's
    thread after the first batch of results: per epoch the answer of two
    runs, split at the recorded instant."""
    pcap = tmp_path / "c.pcap"
    pktgen.generate(str(pcap), 200_000, 64, pps=2_000, seed=4, truth=False)
    (tmp_path / "q.gsql").write_text(
        "DEFINE { query_name 'flows'; }\nPARAM { minlen uint; thr ullong; }\n"
        "SELECT tb, srcIP, count(*) AS n FROM TCP WHERE len > $minlen\n"
        "GROUP BY time/5 AS tb, srcIP HAVING count(*) > $thr\n")
    q = gsqlc.compile([tmp_path / "q.gsql"])
    src = {"default": f"pcap:{pcap}"}
    start = {"minlen": 60, "thr": 2}
    run = q.run(src, "flows", params=start, batch_rows=1, threads=1)
    it = iter(run)
    first = [next(it)]
    run.set_param("thr", 8)
    got = pa.Table.from_batches(first + list(it), schema=run.schema).to_pylist()
    (change,) = run.stats["param_changes"]
    assert 0 < change["records"] < 200_000
    estar = change["data_usec"] // 1_000_000 // 5
    old = q.table(src, "flows", params=start, threads=1).to_pylist()
    new = q.table(src, "flows", params={**start, "thr": 8}, threads=1).to_pylist()
    assert max(r["tb"] for r in old) > estar >= min(r["tb"] for r in old)
    assert sorted(got, key=agg_key) == by_epoch_split(old, new, estar)


def test_a_bad_value_is_refused_as_at_the_start_and_the_run_goes_on(qs):
    def feed_refusing(box, messages):
        for k in range(0, len(ROWS), BATCH):
            if k == 20000:
                for name, value in (("thr", "abc"), ("minlen", "-3"), ("nope", "1")):
                    try:
                        box[0].set_param(name, value)
                    except RunError as e:
                        messages.append(str(e))
            yield to_batch(ROWS[k:k + BATCH])
    box, messages = [], []
    run = qs.run({"csv": feed_refusing(box, messages)}, "agg", params=START)
    box.append(run)
    got = pa.Table.from_batches(list(run), schema=run.schema).to_pylist()
    assert run.stats["param_changes"] == []
    assert sorted(got, key=agg_key) == sorted(run_fixed(qs, "agg", START), key=agg_key)
    assert messages[0] == "parameter $thr: 'abc' is not a valid ullong"
    assert messages[1] == "parameter $minlen: '-3' is not a valid uint"
    assert messages[2] == "parameter $nope is not read by any query of this set"
    # the start's words for the same values
    for name, value, msg in (("thr", "abc", messages[0]), ("minlen", "-3", messages[1])):
        with pytest.raises(RunError) as e:
            run_fixed(qs, "agg", {**START, name: value})
        assert msg in str(e.value)


def test_a_parameter_no_epoch_can_switch_cannot_change(qs):
    """`halves` aggregates wholly in its LFTA (FIRST_lfta has no HFTA half);
    its HAVING is a selection over the LFTA's groups, whose epochs it does
    not follow: its parameter is refused, saying why; explain says so too."""
    assert "$top: fixed while running (query halves reads it over the groups" in qs.explain()
    messages = []

    def feed(box):
        for k in range(0, len(ROWS), BATCH):
            if k == 10000:
                try:
                    box[0].set_param("top", 5)
                except RunError as e:
                    messages.append(str(e))
            yield to_batch(ROWS[k:k + BATCH])
    box = []
    run = qs.run({"csv": feed(box)}, "halves", params={**START, "top": 900})
    box.append(run)
    got = pa.Table.from_batches(list(run), schema=run.schema).to_pylist()
    assert messages == ["parameter $top cannot change while the run goes on: query halves "
                        "reads it over the groups of an aggregation in its LFTA, whose epochs "
                        "it does not follow"]
    assert got and all(r["n"] > 900 for r in got)


def test_a_parameter_drawing_the_epochs_cannot_change(tmp_path):
    """GROUP BY time/$w: $w draws the epochs a change would wait for."""
    (tmp_path / "s.txt").write_text(SCHEMA)
    (tmp_path / "q.gsql").write_text(
        "DEFINE { query_name 'tw'; }\nPARAM { w uint; thr ullong; }\n"
        "SELECT tb, count(*) AS n FROM [csv].PKTS GROUP BY time/$w AS tb HAVING count(*) > $thr\n")
    q = gsqlc.compile([tmp_path / "q.gsql"], schema=tmp_path / "s.txt")
    assert "$w: fixed while running (query tw's temporal group-by reads it" in q.explain()
    messages = []

    def feed(box):
        for k in range(0, 8000, BATCH):
            if k == 4000:
                try:
                    box[0].set_param("w", 5)
                except RunError as e:
                    messages.append(str(e))
                box[0].set_param("thr", 5)     # the other one can change
            yield to_batch(ROWS[k:k + BATCH])
    box = []
    run = q.run({"csv": feed(box)}, "tw", params={"w": 10, "thr": 0})
    box.append(run)
    list(run)
    assert messages == ["parameter $w cannot change while the run goes on: query tw's temporal "
                        "group-by reads it: it draws the epochs a change would wait for"]
    assert [c["name"] for c in run.stats["param_changes"]] == ["thr"]


def test_a_run_split_over_threads_takes_no_change(qs):
    run = qs.run({"csv": to_batch(ROWS * 4)}, "sel", params=START, threads=2)
    try:
        with pytest.raises(UsageError, match="run it with threads=1"):
            run.set_param("minlen", 5)
    finally:
        list(run)


def test_a_change_after_the_run_ended_is_an_error(qs):
    run = qs.run({"csv": to_batch(ROWS[:5000])}, "sel", params=START)
    list(run)
    with pytest.raises(RunError, match="the run has ended"):
        run.set_param("minlen", 5)
