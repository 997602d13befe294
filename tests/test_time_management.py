"""Issue 11 (seed 002, Srivastava & Widom): declared time bounds.

The interfaces file and the command line declare an interface's
out-of-order bound (B_ii), latency (L_i), arrival column, time unit, skew
bounds between interfaces (B_ij = (t_ij, delta_ij)) and the heartbeat
generator's settings; bad ones are usage errors naming the file, the table
and the key.  They reach the runtime's heartbeat generator
(tests/test_heartbeat_generation.py); for a CSV interface in the unit of its
time column (time_unit; tests/test_csv_time.py has the rest of CSV time).

End to end: a capture of two links, link B's packets arriving DELAY s
after link A's of the same time (pktgen.generate_delayed), so the
interface's records trail its largest timestamp by up to DELAY s; a MERGE
of the two links' selections feeds a 10 s count.  With heartbeats from the
leading records, the merge drops link B's tuples as late; with
out_of_order = DELAY (file or --out-of-order) none are dropped and the
counts equal the truth from the generator's table.
"""
from __future__ import annotations

import ipaddress
import json
import random
import sys
from collections import Counter

import pytest

from conftest import REPO

sys.path.insert(0, str(REPO / "bench"))
import pktgen  # noqa: E402

DELAY = 4
QUERY = f"""\
DEFINE {{ query_name 'link_a'; }}
select time, srcIP, destIP from IPV4 where srcIP < {pktgen.LINK_B_NET};
DEFINE {{ query_name 'link_b'; }}
select time, srcIP, destIP from IPV4 where srcIP >= {pktgen.LINK_B_NET};
DEFINE {{ query_name 'both'; }}
merge a.time : b.time from link_a a, link_b b;
DEFINE {{ query_name 'counts'; }}
select tb, srcIP, destIP, count(*) as cnt from both
group by time/10 as tb, srcIP, destIP
"""


@pytest.fixture(scope="module")
def delayed(tmp_path_factory):
    """2 x 2000 packets at 50 pps per link (40 s), link B DELAY s behind."""
    d = tmp_path_factory.mktemp("tm")
    pcap = d / "delayed.pcap"
    truth = pktgen.generate_delayed(str(pcap), 2000, 20, delay=DELAY, pps=50, seed=1,
                                    start=1_700_000_000, frag=0.0, truth=True)
    q = d / "q.gsql"
    q.write_text(QUERY)
    return pcap, truth, q


def _stats(err: str) -> dict:
    return json.loads(err[err.index("{\n"):])


def _truth(table) -> list[str]:
    c = Counter(zip((t // 10 for t in table.column("time").to_pylist()),
                    table.column("srcIP").to_pylist(), table.column("destIP").to_pylist()))
    return sorted(f"{tb}|{ipaddress.IPv4Address(s)}|{ipaddress.IPv4Address(d)}|{n}"
                  for (tb, s, d), n in c.items())


def _counts(gsqlc, q, *args):
    p = gsqlc("run", q, "--heartbeat-interval", "1", "--stats", *args)
    assert p.returncode == 0, p.err
    st = _stats(p.err)
    streams = {s["name"]: s for s in st["streams"]}
    assert streams["link_b"]["heartbeats"] > 0, streams
    late = sum(int(n.get("late_dropped", 0)) for n in st["nodes"])
    return sorted(p.out.splitlines()), late, _below_promise(st)


def _below_promise(st: dict) -> int:
    """Records below a promise: dropped by an LFTA (its own heartbeats) or at
    the input (generated heartbeats, counted per source)."""
    return sum(int(n.get("skew_dropped", 0)) for n in st["nodes"]) + \
        sum(int((s["time"] or {}).get("dropped_below_heartbeat", 0)) for s in st["sources"])


def test_out_of_order_bound_keeps_the_late_link(gsqlc, delayed, tmp_path):
    pcap, truth, q = delayed
    want = _truth(truth)
    # Without the bound: heartbeats from the leading link A declare link B's
    # tuples late, and the merge drops them (1232 of 4000 when written).
    out, late, promised = _counts(gsqlc, q, "--source", f"default=pcap:{pcap}")
    assert late > 1000 and promised == 0
    assert out != want
    # With out_of_order = DELAY in the interfaces file.
    f = tmp_path / "ifaces.toml"
    f.write_text(f'[interface.default]\nsource = "pcap:{pcap}"\nout_of_order = {DELAY}.0\n')
    out, late, promised = _counts(gsqlc, q, "--interfaces", f)
    assert (late, promised) == (0, 0)
    assert out == want
    # The same from the command line.
    out, late, promised = _counts(gsqlc, q, "--source", f"default=pcap:{pcap}",
                                  "--out-of-order", f"default={DELAY}")
    assert (late, promised) == (0, 0)
    assert out == want
    # A bound too small: the promise is kept -- the records below it are
    # dropped at the input and counted -- so nothing reaches the merge late.
    out, late, promised = _counts(gsqlc, q, "--source", f"default=pcap:{pcap}",
                                  "--out-of-order", "default=2")
    assert late == 0 and promised > 0


BAD_FILES = [
    ('[interface.a]\nsource = "csv:x.csv"\nout_of_order = -1\n',
     "[interface.a]: out_of_order must not be negative"),
    ('[interface.a]\nsource = "csv:x.csv"\nlatency = "soon"\n',
     "[interface.a]: latency 'soon' is not a number"),
    ('[interface.a]\nsource = "csv:x.csv"\narrival = 3\n',
     "[interface.a]: arrival must be a column name"),
    ('[interface.a]\nsource = "csv:x.csv"\nout_of_ordr = 1\n',
     "[interface.a]: unknown key(s) out_of_ordr"),
    ('[interface.a]\nsource = "csv:x.csv"\ntime_unit = "min"\n',
     "[interface.a]: time_unit must be one of 's', 'ms', 'us', 'ns' (got 'min')"),
    ('[interface.a]\nsource = "csv:x.csv"\n[skew.a.b]\nafter = 1.0\nbound = 5.0\n',
     "[skew.a.b]: unknown interface 'b'"),
    ('[skew.a.b]\nafter = 1.0\nbound = 5.0\n', "[skew.a.b]: unknown interfaces 'a' and 'b'"),
    ('[interface.a]\nsource = "csv:x.csv"\n[skew.a]\nafter = 1.0\nbound = 5.0\n',
     "[skew.a] must hold tables [skew.a.B]"),
    ('[interface.a]\nsource = "csv:x.csv"\n[skew.a.a]\nafter = 1.0\nbound = 5.0\n',
     "[skew.a.a]: a skew bound is between two interfaces"),
    ('[interface.a]\n[interface.b]\n[skew.a.b]\nafter = 1.0\n', "[skew.a.b]: needs bound"),
    ('[interface.a]\n[interface.b]\n[skew.a.b]\nafter = -1.0\nbound = 2\n',
     "[skew.a.b]: after must not be negative"),
    ('[interface.a]\n[interface.b]\n[skew.a.b]\nafter = 1\nbound = 2\nuntil = 3\n',
     "[skew.a.b]: unknown key(s) until"),
    ('[heartbeats]\nalpha = 1.5\n', "[heartbeats]: alpha must be a number in [0, 1]"),
    ('[heartbeats]\nestimate = "guess"\n', "[heartbeats]: estimate must be one of"),
    ('[heartbeats]\nwindow = 0\n', "[heartbeats]: window must be a positive integer"),
    ('[heartbeats]\ntimeout = -3\n', "[heartbeats]: timeout must not be negative"),
    ('[heartbeats]\nperiod = 3\n', "[heartbeats]: unknown key(s) period"),
    ('[heartbeat]\ntimeout = 3\n', "unknown table(s) heartbeat"),
    ('[heartbeats]\nlevel = "global"\n', "[heartbeats]: level must be one of"),
    ('[heartbeats]\nhorizon = 0\n', "[heartbeats]: horizon must be more than 0 seconds"),
]
BAD_FLAGS = [
    (["--out-of-order", "default=-2"], "--out-of-order default: out_of_order must not be negative"),
    (["--out-of-order", "eth9=2"], "--out-of-order eth9: no --source binds an interface 'eth9'"),
    (["--latency", "default=x"], "--latency default: latency 'x' is not a number"),
    (["--skew", "default=1,2"], "--skew 'default=1,2': expected A:B=AFTER,BOUND"),
    (["--skew", "default:eth9=1,2"], "--skew default:eth9: unknown interface 'eth9'"),
    (["--skew", "default:default=1,2"], "a skew bound is between two interfaces"),
    (["--heartbeat-timeout", "-1"], "--heartbeat-timeout: timeout must not be negative"),
    (["--heartbeats", "estimate=guess"], "--heartbeats: estimate must be one of"),
    (["--heartbeats", "level=global"], "--heartbeats: level must be one of"),
    (["--heartbeats", "alpha=2"], "--heartbeats: alpha must be a number in [0, 1]"),
    (["--heartbeats", "windw=5"], "--heartbeats: unknown key(s) windw"),
    (["--time-unit", "default=hours"], "--time-unit default: time_unit must be one of 's', "
     "'ms', 'us', 'ns' (got 'hours')"),
    (["--time-unit", "eth9=ms"], "--time-unit eth9: no --source binds an interface 'eth9'"),
    (["--time-unit", "default=ms"], "--time-unit default: time_unit is for CSV interfaces"),
]


@pytest.mark.parametrize("case", range(len(BAD_FILES) + len(BAD_FLAGS)))
def test_bad_time_bounds(gsqlc, tmp_path, case):
    q = tmp_path / "q.gsql"
    q.write_text("DEFINE { query_name 'q'; }\nselect time, srcIP from IPV4")
    if case < len(BAD_FILES):
        text, needle = BAD_FILES[case]
        f = tmp_path / "bad.toml"
        f.write_text(text)
        args = ["--interfaces", f, "--source", "default=pcap:/dev/null"]
        needle = f"{f}: {needle}"
    else:
        flags, needle = BAD_FLAGS[case - len(BAD_FILES)]
        args = ["--source", "default=pcap:/dev/null", *flags]
    p = gsqlc("run", q, *args)
    assert p.returncode == 2 and needle in p.err, p.err


def test_out_of_order_from_the_python_api(delayed):
    import gsqlc
    pcap, truth, q = delayed
    qs = gsqlc.compile([q])
    t = qs.table({"default": f"pcap:{pcap}"}, "counts", clock="data", out_of_order={"default": DELAY})
    got = sorted(f"{tb}|{ipaddress.IPv4Address(s)}|{ipaddress.IPv4Address(d)}|{n}"
                 for tb, s, d, n in zip(*(t.column(c).to_pylist() for c in t.column_names)))
    assert got == _truth(truth)
    with pytest.raises(gsqlc.UsageError, match=r"heartbeats: estimate must be one of"):
        qs.table({"default": f"pcap:{pcap}"}, "counts", heartbeats={"estimate": "guess"})
    with pytest.raises(gsqlc.UsageError, match="out_of_order eth9: no source binds"):
        qs.table({"default": f"pcap:{pcap}"}, "counts", out_of_order={"eth9": 1})
    with pytest.raises(gsqlc.UsageError, match=r"skew: key 'a' must be a pair"):
        qs.table({"default": f"pcap:{pcap}"}, "counts", skew={"a": (1, 2)})


# ------------------------------------------------ a CSV interface (seconds, ms)

SALES = REPO / "tests" / "data" / "schema.txt"
CSV_QUERY = """\
DEFINE { query_name 'link_a'; }
select time, store, qty from S.SALES where delta = 0;
DEFINE { query_name 'link_b'; }
select time, store, qty from S.SALES where delta = 1;
DEFINE { query_name 'both'; }
merge a.time : b.time from link_a a, link_b b;
DEFINE { query_name 'counts'; }
select tb, store, count(*) as cnt, sum(qty) as q from both group by time/10 as tb, store
"""
MS_SCHEMA = """\
PROTOCOL EV {
    ullong ts      get_csv_ullong_pos1 (increasing);
    uint   link    get_csv_uint_pos2;
    uint   v       get_csv_uint_pos3;
}
"""
MS_QUERY = CSV_QUERY.replace("time, store, qty from S.SALES where delta", "ts, v from S.EV "
                             "where link").replace("a.time : b.time", "a.ts : b.ts").replace(
    "tb, store, count(*) as cnt, sum(qty) as q from both group by time/10 as tb, store",
    "tb, count(*) as cnt, sum(v) as q from both group by ts/10000 as tb")


def _delayed_rows(unit: int) -> list[tuple[int, int, int]]:
    """Two links of 2000 rows at 50 a second (40 s) on one interface, in
    order of arrival, link 1 DELAY s behind link 0: (time in 1/unit s,
    link, value)."""
    rnd = random.Random(11)
    rows = []
    for link in (0, 1):
        for i in range(2000):
            t = 1_700_000_000 * unit + i * unit // 50
            rows.append((t + link * DELAY * unit, link, t, rnd.randrange(1, 100)))
    rows.sort(key=lambda r: (r[0], r[1]))
    return [(t, link, v) for _, link, t, v in rows]


def _csv_counts(gsqlc, args):
    p = gsqlc("run", *args, "--heartbeat-interval", "1", "--stats")
    assert p.returncode == 0, p.err
    st = _stats(p.err)
    late = sum(int(n.get("late_dropped", 0)) for n in st["nodes"])
    return sorted(p.out.splitlines()), late, _below_promise(st)


def test_out_of_order_bound_for_a_csv_interface(gsqlc, tmp_path):
    rows = _delayed_rows(1)
    csv = tmp_path / "s.csv"
    csv.write_text("".join(f"{t},s{v % 3},10.0.0.1,{v},{link},1.0,TRUE\n" for t, link, v in rows))
    c = Counter()
    for t, _, v in rows:
        c[(t // 10, f"s{v % 3}", "n")] += 1
        c[(t // 10, f"s{v % 3}", "q")] += v
    want = sorted(f"{tb}|{s}|{c[(tb, s, 'n')]}|{c[(tb, s, 'q')]}" for tb, s, k in c if k == "n")
    q = tmp_path / "q.gsql"
    q.write_text(CSV_QUERY)
    base = ["--schema", SALES, q, "--source", f"S=csv:{csv}"]
    # Without the bound the leading link's heartbeats make link 1 late.
    out, late, promised = _csv_counts(gsqlc, base)
    assert late > 0 and promised == 0 and out != want
    # With it (it used to fail: "no known unit of seconds"), nothing is lost.
    out, late, promised = _csv_counts(gsqlc, [*base, "--out-of-order", f"S={DELAY}"])
    assert (late, promised) == (0, 0) and out == want
    f = tmp_path / "ifaces.toml"
    f.write_text(f'[interface.S]\nsource = "csv:{csv}"\nout_of_order = {DELAY}.0\n')
    out, late, promised = _csv_counts(gsqlc, ["--schema", SALES, q, "--interfaces", f])
    assert (late, promised) == (0, 0) and out == want
    # Too small: the LFTAs discard and count what trails their promises.
    out, late, promised = _csv_counts(gsqlc, [*base, "--out-of-order", "S=2"])
    assert late == 0 and promised > 0


def test_out_of_order_bound_in_the_time_unit(gsqlc, tmp_path):
    rows = _delayed_rows(1000)                                   # milliseconds
    csv = tmp_path / "ms.csv"
    csv.write_text("".join(f"{t},{link},{v}\n" for t, link, v in rows))
    n, s = Counter(), Counter()
    for t, _, v in rows:
        n[t // 10000] += 1
        s[t // 10000] += v
    want = sorted(f"{tb}|{n[tb]}|{s[tb]}" for tb in n)
    schema = tmp_path / "ev.txt"
    schema.write_text(MS_SCHEMA)
    q = tmp_path / "q.gsql"
    q.write_text(MS_QUERY)
    base = ["--schema", schema, q, "--source", f"S=csv:{csv}", "--out-of-order", f"S={DELAY}"]
    out, late, promised = _csv_counts(gsqlc, [*base, "--time-unit", "S=ms"])
    assert (late, promised) == (0, 0) and out == want
    # Read as seconds, the bound is DELAY milliseconds: far too small.
    out, late, promised = _csv_counts(gsqlc, base)
    assert late == 0 and promised > 0
