"""Record timestamps of CSV sources (issue 11): the data clock, time units,
arrival columns and time-aligned replay for CSV files, end to end.

A CSV interface's time column is the field its first LFTA's heartbeats
follow (an increasing get_csv_*_posN field); under --clock data its values
(time_unit units, seconds by default) drive the heartbeat ticks, and several
files -- CSV, or CSV and pcap -- advance together on the data clock.  An
interfaces file's `arrival` names a CSV field whose values are the rows'
arrival instants: they drive the clock and the replay instead.
"""
from __future__ import annotations

import json
import random
import sys
from collections import Counter

import pytest

from conftest import REPO, require

sys.path.insert(0, str(REPO / "bench"))
import pktgen  # noqa: E402

duckdb = require("duckdb")

SALES = REPO / "tests" / "data" / "schema.txt"
PACKETS = REPO / "compiler" / "gsqlc" / "data" / "packet_schema.txt"
EVENTS = """\
PROTOCOL EV {
    ullong ts      get_csv_ullong_pos1 (increasing);
    uint   k       get_csv_uint_pos2;
    uint   v       get_csv_uint_pos3;
    ullong recv    get_csv_ullong_pos4;
}
PROTOCOL EVF {
    float  ts      get_csv_float_pos1 (increasing);
    uint   v       get_csv_uint_pos2;
}
"""
PER10 = ("DEFINE { query_name 'per10'; }\n"
         "select tb, count(*) as n, sum(qty) as q from S.SALES group by time/10 as tb")
SEC = 1_000_000


def _stats(err: str) -> dict:
    return json.loads(err[err.index("{\n"):])


def _sales(path, rows):
    """rows: (time, store, qty, delta)."""
    path.write_text("".join(f"{t},{s},10.0.0.1,{q},{d},1.0,TRUE\n" for t, s, q, d in rows))
    return path


def _events(path, rows):
    """rows: (ts, k, v, recv)."""
    path.write_text("".join(f"{t},{k},{v},{r}\n" for t, k, v, r in rows))
    return path


def _per10(rows) -> list[str]:
    n, q = Counter(), Counter()
    for t, _, qty, _ in rows:
        n[t // 10] += 1
        q[t // 10] += qty
    return [f"{tb}|{n[tb]}|{q[tb]}" for tb in sorted(n)]


def _source(stats: dict, iface: str) -> dict:
    return next(s for s in stats["sources"] if s["iface"] == iface)


def _node(stats: dict, name: str) -> dict:
    return next(n for n in stats["nodes"] if n["name"] == name)


def _events_schema(tmp_path):
    f = tmp_path / "events.txt"
    f.write_text(EVENTS)
    return f


# ---------------------------------------------------------------- the clock


def test_csv_aggregation_gets_heartbeats_from_the_data_clock(gsqlc, tmp_path):
    rows = [(1000 + i // 25, f"s{i % 3}", i % 17, 0) for i in range(3000)]  # 120 s
    csv = _sales(tmp_path / "s.csv", rows)
    q = tmp_path / "q.gsql"
    q.write_text(PER10)
    for interval, lo, hi in (("1", 110, 120), ("10", 10, 12)):
        p = gsqlc("run", "--schema", SALES, q, "--source", f"S=csv:{csv}", "--clock", "data",
                  "--heartbeat-interval", interval, "--stats")
        assert p.returncode == 0, p.err
        assert p.out.splitlines() == _per10(rows)
        st = _stats(p.err)
        src = _source(st, "S")
        assert (src["timestamps"], src["time_column"], src["time_type"], src["time_unit"],
                src["time_lfta"], src["arrival_column"]) == \
            (True, 1, "uint", "s", "_fta_per10", None), src
        assert src["time_unreadable"] == 0 and not src["aligned"]
        assert st["data_clock_first_usec"] == 1000 * SEC
        assert st["data_clock_usec"] == 1119 * SEC
        assert lo <= st["heartbeat_ticks"] <= hi, st["heartbeat_ticks"]
        streams = {s["name"]: s for s in st["streams"]}
        assert streams["_fta_per10"]["heartbeats"] == st["heartbeat_ticks"]
        assert streams["per10"]["heartbeats"] > 0


def test_unreadable_times_flow_without_moving_the_clock(gsqlc, tmp_path):
    rows = [(1000 + i, "s", 1, 0) for i in range(30)]
    text = "".join(f"{t},s,10.0.0.1,1,0,1.0,TRUE\n" for t, _, _, _ in rows)
    text = text.replace("1010,", "-3,").replace("1020,", "x,").replace("1025,", ",")
    csv = tmp_path / "s.csv"
    csv.write_text(text + "9999999999999,s,10.0.0.1,1,0,1.0,TRUE\n")  # beyond uint: coerced
    q = tmp_path / "q.gsql"
    q.write_text("DEFINE { query_name 'q'; }\nselect time, qty from S.SALES")
    p = gsqlc("run", "--schema", SALES, q, "--source", f"S=csv:{csv}", "--clock", "data",
              "--stats")
    assert p.returncode == 0, p.err
    # every row reaches the LFTA (with the value it reads as)
    assert len(p.out.splitlines()) == 31
    st = _stats(p.err)
    assert _source(st, "S")["time_unreadable"] == 4
    assert st["data_clock_usec"] == 1029 * SEC
    assert "4 records had an unreadable time" in p.err, p.err


# ---------------------------------------------------------- time alignment


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


def test_two_csv_files_of_different_rates_are_replayed_time_aligned(tmp_path):
    import gsqlc
    rnd = random.Random(3)
    a = [(1000 + i // 10, f"s{rnd.randrange(4)}", rnd.randrange(1, 50), 0) for i in range(600)]
    b = [(1000 + i // 3, f"s{rnd.randrange(4)}", rnd.randrange(1, 50), 0) for i in range(180)]
    ca, cb = _sales(tmp_path / "a.csv", a), _sales(tmp_path / "b.csv", b)
    q = tmp_path / "q.gsql"
    q.write_text(ALIGNED)
    qs = gsqlc.compile([q], SALES)
    cols = ("{'t': 'INT', 's': 'VARCHAR', 'c': 'VARCHAR', 'q': 'INT', 'd': 'INT', "
            "'p': 'DOUBLE', 'o': 'BOOLEAN'}")
    ra, rb = (f"read_csv('{c}', header=false, columns={cols})" for c in (ca, cb))
    want = {
        "per5": duckdb.sql(f"select t // 5, count(*), sum(q) from (select t, q from {ra} "
                           f"union all select t, q from {rb}) group by all order by all"
                           ).fetchall(),
        "jper10": duckdb.sql(f"select x.t // 10, count(*), sum(x.q), sum(y.q) from {ra} x "
                             f"join {rb} y on x.t = y.t and x.s = y.s group by all order by all"
                             ).fetchall(),
    }
    # Recordings are replayed in time whatever the clock: the default (the
    # data clock, for a replay) and the wall clock give the same answer
    for clock in ("auto", "wall"):
        run = qs.run({"A": f"csv:{ca}", "B": f"csv:{cb}"}, ["per5", "jper10"], clock=clock)
        got: dict[str, list] = {"per5": [], "jper10": []}
        for name, batch in run:
            got[name] += [tuple(r.values()) for r in batch.to_pylist()]
        st = run.stats
        assert sorted(got["jper10"]) == [tuple(int(x) for x in r) for r in want["jper10"]]
        assert sorted(got["per5"]) == [tuple(int(x) for x in r) for r in want["per5"]]
        assert _node(st, "per5")["late_dropped"] == 0
        assert st["aligned_sources"] == 2
        for iface in ("A", "B"):
            src = _source(st, iface)
            assert src["aligned"] and src["timestamps"] and src["held_back"] > 0, src
            assert src["read"] == "in time" and src["recording"], src
        if clock == "auto":
            assert st["clock"] == "data", st["clock_chosen"]
            assert st["data_clock_usec"] == 1059 * SEC
            assert st["heartbeat_ticks"] > 50
            # the join holds about a round of each file (its heartbeats,
            # every second of the data, purge the rest)
            assert _node(st, "j")["peak_held_tuples"] < 100
        else:
            assert st["clock"] == "wall" and st["clock_chosen"] == "given"


MIXED = """\
DEFINE { query_name 'pk'; }
select time, len as qty from P.IPV4;
DEFINE { query_name 'cs'; }
select time, qty from C.SALES;
DEFINE { query_name 'both'; }
merge x.time : y.time from pk x, cs y;
DEFINE { query_name 'per10'; }
select tb, count(*) as n from both group by time/10 as tb
"""


def test_a_csv_file_and_a_capture_advance_together(gsqlc, tmp_path):
    start = 1_700_000_000
    pcap = tmp_path / "p.pcap"
    truth = pktgen.generate(str(pcap), 1200, 50, pps=20, seed=4, start=start, frag=0.0)
    rows = [(start + i // 5, "s", 1, 0) for i in range(300)]                # 60 s
    csv = _sales(tmp_path / "c.csv", rows)
    q = tmp_path / "q.gsql"
    q.write_text(MIXED)
    p = gsqlc("run", "--schema", PACKETS, "--schema", SALES, q, "--source", f"P=pcap:{pcap}",
              "--source", f"C=csv:{csv}", "--clock", "data", "--stats")
    assert p.returncode == 0, p.err
    n = Counter(t // 10 for t in truth["time"].to_pylist()) + \
        Counter(t // 10 for t, _, _, _ in rows)
    assert p.out.splitlines() == [f"{tb}|{n[tb]}" for tb in sorted(n)]
    st = _stats(p.err)
    assert st["aligned_sources"] == 2
    assert _source(st, "P")["aligned"] and _source(st, "C")["aligned"]
    assert _source(st, "C")["held_back"] > 0 and _source(st, "P")["held_back"] > 0
    assert _node(st, "both")["peak_held_tuples"] < 100, _node(st, "both")


# ------------------------------------------------------------ units


def test_time_unit_ms(gsqlc, tmp_path):
    import gsqlc as G
    t0 = 1_700_000_000_000
    rows = [(t0 + i * 50, i % 5, i, 0) for i in range(2000)]                # 100 s in ms
    csv = _events(tmp_path / "ms.csv", rows)
    schema = _events_schema(tmp_path)
    q = tmp_path / "q.gsql"
    q.write_text("DEFINE { query_name 'per10'; }\n"
                 "select tb, count(*) as n, sum(v) as s from EV group by ts/10000 as tb")
    n, s = Counter(), Counter()
    for t, _, v, _ in rows:
        n[t // 10000] += 1
        s[t // 10000] += v
    want = [f"{tb}|{n[tb]}|{s[tb]}" for tb in sorted(n)]
    p = gsqlc("run", "--schema", schema, q, "--source", f"csv:{csv}", "--clock", "data",
              "--time-unit", "default=ms", "--stats")
    assert p.returncode == 0, p.err
    assert p.out.splitlines() == want
    st = _stats(p.err)
    assert _source(st, "default")["time_unit"] == "ms"
    assert st["data_clock_first_usec"] == t0 * 1000
    assert st["data_clock_usec"] == (t0 + 1999 * 50) * 1000
    assert 95 <= st["heartbeat_ticks"] <= 100, st["heartbeat_ticks"]
    # read as seconds, the same values are a clock 1000 times too fast
    p = gsqlc("run", "--schema", schema, q, "--source", f"csv:{csv}", "--clock", "data",
              "--stats")
    assert p.returncode == 0, p.err
    st = _stats(p.err)
    assert _source(st, "default")["time_unit"] == "s"
    assert st["data_clock_usec"] == (t0 + 1999 * 50) * SEC
    # the API's time_unit=
    qs = G.compile([q], schema)
    run = qs.run({"default": f"csv:{csv}"}, "per10", clock="data", time_unit={"default": "ms"})
    got = [r for b in run for r in b.to_pylist()]
    assert [f"{r['tb']}|{r['n']}|{r['s']}" for r in got] == want
    assert run.stats["data_clock_usec"] == (t0 + 1999 * 50) * 1000
    # an Arrow source has the same time column (no arrival column, no replay)
    import pyarrow as pa
    table = pa.table({"ts": pa.array([r[0] for r in rows], pa.uint64()),
                      "k": pa.array([r[1] for r in rows], pa.uint32()),
                      "v": pa.array([r[2] for r in rows], pa.uint32())})
    run = qs.run({"default": table}, "per10", clock="data", time_unit={"default": "ms"})
    got = [r for b in run for r in b.to_pylist()]
    assert [f"{r['tb']}|{r['n']}|{r['s']}" for r in got] == want
    src = _source(run.stats, "default")
    assert (src["kind"], src["timestamps"], src["time_unit"]) == ("arrow", True, "ms")
    assert run.stats["data_clock_usec"] == (t0 + 1999 * 50) * 1000
    assert 95 <= run.stats["heartbeat_ticks"] <= 100
    f = tmp_path / "i.toml"
    f.write_text('[interface.default]\narrival = "recv"\n')
    with pytest.raises(G.UsageError, match=r"\[interface.default\]: arrival 'recv': interface "
                                           r"'default' is bound to Arrow data"):
        G.compile([q], schema, interfaces=f).run({"default": table}, "per10")
    with pytest.raises(G.UsageError, match=r"time_unit default: time_unit must be one of 's', "
                                           r"'ms', 'us', 'ns' \(got 'min'\)"):
        qs.run({"default": f"csv:{csv}"}, "per10", time_unit={"default": "min"})
    with pytest.raises(G.UsageError, match="time_unit eth9: no source binds"):
        qs.run({"default": f"csv:{csv}"}, "per10", time_unit={"eth9": "ms"})


def test_float_times_are_units_with_a_fraction(gsqlc, tmp_path):
    csv = tmp_path / "f.csv"
    csv.write_text("".join(f"{1_700_000_000_000 + i * 12.5:.3f},{i}\n" for i in range(400)))
    q = tmp_path / "q.gsql"
    q.write_text("DEFINE { query_name 'q'; }\nselect ts, v from EVF")
    p = gsqlc("run", "--schema", _events_schema(tmp_path), q, "--source", f"csv:{csv}",
              "--clock", "data", "--time-unit", "default=ms", "--stats",
              "--output-file", tmp_path / "o")
    assert p.returncode == 0, p.err
    st = _stats(p.err)
    assert _source(st, "default")["time_type"] == "float"
    assert st["data_clock_first_usec"] == 1_700_000_000_000_000
    assert st["data_clock_usec"] == 1_700_000_000_000_000 + 399 * 12_500
    assert 4 <= st["heartbeat_ticks"] <= 5


# ---------------------------------------------------------- arrival column


ARRIVAL = """\
DEFINE { query_name 'ea'; }
select ts, v from A.EV;
DEFINE { query_name 'eb'; }
select ts, v from B.EV;
DEFINE { query_name 'both'; }
merge x.ts : y.ts from ea x, eb y
"""


def test_arrival_column_drives_the_clock_and_the_replay(gsqlc, tmp_path):
    """File A's rows arrive 20 s (and up to 0.5 s more) after their time,
    B's when stamped.  Replayed on A's time column, the two files keep step
    and the merge holds little; replayed on A's arrival column, A's rows
    come 20 s of data clock late and the merge holds B's meanwhile.  The
    answer -- every row, in order of time -- is the same."""
    rnd = random.Random(9)
    t0 = 1_700_000_000_000
    a = [(t0 + i * 100, 0, i, t0 + i * 100 + 20_000 + rnd.randrange(500)) for i in range(600)]
    b = [(t0 + i * 100, 1, 1000 + i, t0 + i * 100) for i in range(600)]
    ca, cb = _events(tmp_path / "a.csv", a), _events(tmp_path / "b.csv", b)
    q = tmp_path / "q.gsql"
    q.write_text(ARRIVAL)
    want = sorted((t, v) for t, _, v, _ in a + b)
    schema = _events_schema(tmp_path)
    base = (f'[interface.A]\nsource = "csv:{ca}"\ntime_unit = "ms"\n'
            f'[interface.B]\nsource = "csv:{cb}"\ntime_unit = "ms"\n')
    f = tmp_path / "i.toml"
    runs = {}
    for arrival in (False, True):
        f.write_text(base.replace('"ms"\n', '"ms"\narrival = "recv"\n', 1) if arrival else base)
        p = gsqlc("run", "--schema", schema, q, "--interfaces", f, "--clock", "data", "--stats")
        assert p.returncode == 0, p.err
        got = [tuple(int(x) for x in line.split("|")) for line in p.out.splitlines()]
        assert [t for t, _ in got] == sorted(t for t, _ in got)
        assert sorted(got) == want, arrival
        runs[arrival] = _stats(p.err)
    plain, arr = runs[False], runs[True]
    assert _source(plain, "A")["arrival_column"] is None
    assert _source(arr, "A")["arrival_column"] == 4 and _source(arr, "B")["arrival_column"] is None
    assert plain["data_clock_usec"] == (t0 + 599 * 100) * 1000
    assert arr["data_clock_usec"] == max(r[3] for r in a) * 1000
    assert arr["data_clock_first_usec"] == t0 * 1000       # B's first row
    assert arr["aligned_sources"] == plain["aligned_sources"] == 2
    held_plain, held_arr = (_node(x, "both")["peak_held_tuples"] for x in (plain, arr))
    assert held_plain < 40 and held_arr > 150, (held_plain, held_arr)


def test_bad_arrival_and_time_unit_are_located_errors(gsqlc, tmp_path):
    csv = _events(tmp_path / "e.csv", [(1, 0, 1, 1)])
    schema = _events_schema(tmp_path)
    q = tmp_path / "q.gsql"
    q.write_text("DEFINE { query_name 'q'; }\nselect ts, v from EV")
    f = tmp_path / "i.toml"
    for text, needle in (
            ('arrival = "recv_ts"\n', "[interface.default]: arrival 'recv_ts': no query reading "
             "interface 'default' has a field of that name read from a CSV column "
             "(get_csv_<type>_posN) (PROTOCOL EV has ts, k, v, recv)"),
            ('time_unit = "min"\n', "[interface.default]: time_unit must be one of 's', 'ms', "
             "'us', 'ns' (got 'min')"),
            ('time_unit = 1\n', "[interface.default]: time_unit must be one of")):
        f.write_text(f'[interface.default]\nsource = "csv:{csv}"\n{text}')
        p = gsqlc("run", "--schema", schema, q, "--interfaces", f)
        assert p.returncode == 2 and f"{f}: {needle}" in p.err, p.err
    # arrival and time_unit are for CSV interfaces
    pcap = tmp_path / "p.pcap"
    pktgen.generate(str(pcap), 10, 5, pps=10, seed=1, frag=0.0)
    qp = tmp_path / "qp.gsql"
    qp.write_text("DEFINE { query_name 'q'; }\nselect time, len from IPV4")
    for text, needle in (('arrival = "time"\n', "arrival is for CSV interfaces"),
                         ('time_unit = "ms"\n', "time_unit is for CSV interfaces")):
        f.write_text(f'[interface.default]\nsource = "pcap:{pcap}"\n{text}')
        p = gsqlc("run", qp, "--interfaces", f)
        assert p.returncode == 2 and f"{f}: [interface.default]: {needle}" in p.err, p.err
    p = gsqlc("run", "--schema", schema, q, "--source", f"csv:{csv}", "--time-unit",
              "default=hours")
    assert p.returncode == 2 and "--time-unit default: time_unit must be one of" in p.err, p.err
