"""Issue 11 (seed 002, Srivastava & Widom): declared time bounds.

The interfaces file and the command line declare an interface's
out-of-order bound (B_ii), latency (L_i), arrival column, skew bounds
between interfaces (B_ij = (t_ij, delta_ij)) and the heartbeat generator's
settings; bad ones are usage errors naming the file, the table and the key.
out_of_order is used: an LFTA's heartbeats promise only the largest
timestamp it read less the bound.  The others are refused at run time as
not yet used.

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
    p = gsqlc("run", q, "--clock", "data", "--heartbeat-interval", "1", "--stats", *args)
    assert p.returncode == 0, p.err
    st = _stats(p.err)
    streams = {s["name"]: s for s in st["streams"]}
    assert streams["link_b"]["heartbeats"] > 0, streams
    late = sum(int(n.get("late_dropped", 0)) for n in st["nodes"])
    promised = sum(int(n.get("skew_dropped", 0)) for n in st["nodes"])
    return sorted(p.out.splitlines()), late, promised


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
    # A bound too small: the LFTAs keep their promise and discard (and
    # count) the records below it, so nothing reaches the merge late.
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
]
BAD_FLAGS = [
    (["--out-of-order", "default=-2"], "--out-of-order default: out_of_order must not be negative"),
    (["--out-of-order", "eth9=2"], "--out-of-order eth9: no --source binds an interface 'eth9'"),
    (["--latency", "default=x"], "--latency default: latency 'x' is not a number"),
    (["--skew", "default=1,2"], "--skew 'default=1,2': expected A:B=AFTER,BOUND"),
    (["--skew", "default:eth9=1,2"], "--skew default:eth9: unknown interface 'eth9'"),
    (["--skew", "default:default=1,2"], "a skew bound is between two interfaces"),
    (["--heartbeat-timeout", "-1"], "--heartbeat-timeout: timeout must not be negative"),
    # parsed and valid, but not used yet: refused, not ignored
    (["--latency", "default=0.5"], "latency for interface 'default' is parsed but not yet used"),
    (["--heartbeat-timeout", "3"], "--heartbeat-timeout is parsed but not yet used"),
    (["--source", "b=csv:/dev/null", "--skew", "default:b=1,5"],
     "--skew default:b: the skew bound of default on b is parsed but not yet used"),
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


def test_refused_file_bounds_name_the_file(gsqlc, tmp_path):
    q = tmp_path / "q.gsql"
    q.write_text("DEFINE { query_name 'q'; }\nselect time, srcIP from IPV4")
    f = tmp_path / "ifaces.toml"
    f.write_text('[interface.default]\nsource = "pcap:/dev/null"\n'
                 '[interface.b]\nsource = "pcap:/dev/null"\n'
                 '[skew.default.b]\nafter = 1.0\nbound = 5.0\n')
    p = gsqlc("run", q, "--interfaces", f)
    assert p.returncode == 2 and f"{f}: [skew.default.b]: the skew bound" in p.err \
        and "not yet used" in p.err, p.err


def test_out_of_order_from_the_python_api(delayed):
    import gsqlc
    pcap, truth, q = delayed
    qs = gsqlc.compile([q])
    t = qs.table({"default": f"pcap:{pcap}"}, "counts", clock="data", out_of_order={"default": DELAY})
    got = sorted(f"{tb}|{ipaddress.IPv4Address(s)}|{ipaddress.IPv4Address(d)}|{n}"
                 for tb, s, d, n in zip(*(t.column(c).to_pylist() for c in t.column_names)))
    assert got == _truth(truth)
    with pytest.raises(gsqlc.UsageError, match="latency for interface 'default' is parsed but "
                                               "not yet used"):
        qs.table({"default": f"pcap:{pcap}"}, "counts", clock="data", latency={"default": 0.5})
    with pytest.raises(gsqlc.UsageError, match="out_of_order eth9: no source binds"):
        qs.table({"default": f"pcap:{pcap}"}, "counts", out_of_order={"eth9": 1})
    with pytest.raises(gsqlc.UsageError, match=r"skew: key 'a' must be a pair"):
        qs.table({"default": f"pcap:{pcap}"}, "counts", skew={"a": (1, 2)})
