"""Replay in time: several recorded sources feeding one query set are read in
the order of their record times, under the default flags (no --clock, no
--batch).

Members of an interface set (`[s].P` bound by repeating `--source s=...`),
the two inputs of a MERGE and the inputs of a join may be CSV files or
captures that cover the same stretch of time, follow one another (a rotated
capture), overlap in part, start at different times and fall silent for a
while.  Read in time, the operators downstream see no disorder the live
arrival would not have had, so for inputs within the declared bounds (rows
in time order, or out of order within an interface's declared out_of_order,
which holds for each member of a set):

- nothing is dropped: no node counts a late tuple (late_dropped) or one
  below its heartbeats (skew_dropped), no source a record below a heartbeat
  (time.dropped_below_heartbeat), a rejected row or an unreadable time, and
  stderr has no "were dropped" / "were discarded" report line;
- every record of every member is read;
- the answer equals DuckDB's over the union of the inputs (multisets, as in
  tests/test_differential_multi.py; outer joins follow the key-fill rule:
  the columns the predicate equates take the present side's value, the
  absent side's other columns are zeros).

A seeded generator draws the scenarios (test_random_scenario); the cases of
the issue are explicit tests below, through the CLI and the Python API, and
a few scenarios run through a sanitized stand-alone runner (slow).

The CSV schema is P (ts, k, x); a capture is read as IPV4 with time, ttl
and len in the roles of ts, k and x (the captures are written here: UDP over
IPv4, ttl = the key, IPv4 total length = the value, arbitrary gaps).  Each
query file is compiled once per module (builds are cached by content).
"""
from __future__ import annotations

import json
import os
import random
import struct
import subprocess
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from conftest import require  # tests/ is on sys.path under pytest

duckdb = require("duckdb")
pa = pytest.importorskip("pyarrow")

from conftest import REPO, SANITIZED_RUN_ENV, build_sanitized, run_gsqlc  # noqa: E402

PACKETS = REPO / "compiler" / "gsqlc" / "data" / "packet_schema.txt"
T0 = 1_700_000_000          # record times start here (seconds)
EPOCH = 10                  # the aggregations' epoch (seconds)
FJ_WINDOW = 5               # FILTER_JOIN(R.t, 5): R.t in [s - 4, s]

SCHEMA = """
PROTOCOL P {
    uint ts get_csv_uint_pos1 (increasing);
    uint k  get_csv_uint_pos2;
    uint x  get_csv_uint_pos3;
}
"""

# the fields of a member's kind in the roles of (time, key, value)
KINDS = {
    "csv": dict(proto="P", t="ts", k="k", x="x"),
    "pcap": dict(proto="IPV4", t="time", k="ttl", x="len"),
}
# (a, b) kinds of the two-interface query files
KIND_PAIRS = [("csv", "csv"), ("csv", "pcap"), ("pcap", "pcap")]
JOIN_KINDS = {
    "INNER_JOIN": "INNER JOIN",
    "LEFT_OUTER_JOIN": "LEFT JOIN",
    "RIGHT_OUTER_JOIN": "RIGHT JOIN",
    "OUTER_JOIN": "FULL OUTER JOIN",
}
DROP_WORDS = ("were dropped", "were discarded")


# ---------------------------------------------------------------- queries


def set_queries(kind: str) -> str:
    """Queries over one interface set `s` of members of `kind`."""
    f = KINDS[kind]
    return (
        "DEFINE { query_name 'rows'; }\n"
        f"select {f['t']} as t, {f['k']} as k, {f['x']} as x from [s].{f['proto']};\n"
        "DEFINE { query_name 'agg'; }\n"
        f"select tb, count(*) as n, sum({f['x']}) as sx from [s].{f['proto']}\n"
        f"group by {f['t']}/{EPOCH} as tb;\n"
        "DEFINE { query_name 'aggk'; }\n"
        f"select tb, k, count(*) as n, sum({f['x']}) as sx from [s].{f['proto']}\n"
        f"group by {f['t']}/{EPOCH} as tb, {f['k']} as k;\n")


def join_query(kind: str) -> str:
    return (f"DEFINE {{ query_name 'j_{kind}'; }}\n"
            f"select A.tb, A.k, A.n, A.sx, B.tb, B.k, B.n, B.sx {kind}\n"
            "from ga A, gb B\nwhere A.tb = B.tb and A.k = B.k;\n")


def ab_queries(ka: str, kb: str) -> str:
    """Queries over two interfaces (each possibly a set) a and b: a MERGE and
    an aggregation over it, joins of their aggregations, a LEFT_OUTER_JOIN
    of their records feeding an aggregation, and a FILTER_JOIN."""
    a, b = KINDS[ka], KINDS[kb]
    text = ""
    for name, f, side in (("sa", a, "a"), ("sb", b, "b")):
        text += (f"DEFINE {{ query_name '{name}'; }}\n"
                 f"select {f['t']} as t, {f['k']} as k, {f['x']} as x from [{side}].{f['proto']};\n")
    text += ("DEFINE { query_name 'm'; }\nmerge A.t : B.t from sa A, sb B;\n"
             "DEFINE { query_name 'magg'; }\n"
             f"select tb, k, count(*) as n, sum(x) as sx from m group by t/{EPOCH} as tb, k;\n")
    for name, f, side in (("ga", a, "a"), ("gb", b, "b")):
        text += (f"DEFINE {{ query_name '{name}'; }}\n"
                 f"select tb, k, count(*) as n, sum({f['x']}) as sx from [{side}].{f['proto']}\n"
                 f"group by {f['t']}/{EPOCH} as tb, {f['k']} as k;\n")
    text += "".join(join_query(k) for k in JOIN_KINDS)
    text += ("DEFINE { query_name 'lj'; }\n"
             f"select A.{a['t']} as t, A.{a['k']} as k, A.{a['x']} as ax, B.{b['x']} as bx\n"
             f"LEFT_OUTER_JOIN from [a].{a['proto']} A, [b].{b['proto']} B\n"
             f"where A.{a['t']} = B.{b['t']} and A.{a['k']} = B.{b['k']};\n"
             "DEFINE { query_name 'ljagg'; }\n"
             "select tb, count(*) as n, sum(ax) as sa, sum(bx) as sb from lj\n"
             f"group by t/{EPOCH} as tb;\n"
             "DEFINE { query_name 'fj'; }\n"
             f"select S.{b['t']} as t, S.{b['k']} as k, S.{b['x']} as x\n"
             f"FILTER_JOIN(R.{a['t']}, {FJ_WINDOW}) from [a].{a['proto']} R, [b].{b['proto']} S\n"
             f"where R.{a['k']} = S.{b['k']} and R.{a['t']} = S.{b['t']};\n")
    return text


def qname(family: str, kinds: tuple[str, ...]) -> str:
    return f"{family}_{'_'.join(kinds)}"


QUERY_FILES = {qname("set", (k,)): set_queries(k) for k in KINDS}
QUERY_FILES.update({qname("ab", p): ab_queries(*p) for p in KIND_PAIRS})

# DuckDB over tables s (a set's union) or a and b (each an interface's
# union), columns t (seconds), k, x
_GA = f"(SELECT t // {EPOCH} AS tb, k, count(*) AS n, sum(x) AS sx FROM a GROUP BY ALL)"
_GB = f"(SELECT t // {EPOCH} AS tb, k, count(*) AS n, sum(x) AS sx FROM b GROUP BY ALL)"
DUCK = {
    "rows": "SELECT t, k, x FROM s",
    "agg": f"SELECT t // {EPOCH}, count(*), sum(x) FROM s GROUP BY ALL",
    "aggk": f"SELECT t // {EPOCH}, k, count(*), sum(x) FROM s GROUP BY ALL",
    "magg": (f"SELECT t // {EPOCH}, k, count(*), sum(x) FROM "
             "(SELECT * FROM a UNION ALL SELECT * FROM b) GROUP BY ALL"),
    "ljagg": (f"SELECT A.t // {EPOCH}, count(*), sum(A.x), sum(coalesce(B.x, 0)) "
              "FROM a A LEFT JOIN b B ON A.t = B.t AND A.k = B.k GROUP BY ALL"),
    "fj": ("SELECT t, k, x FROM b S WHERE EXISTS (SELECT 1 FROM a R WHERE R.k = S.k "
           f"AND R.t BETWEEN S.t - {FJ_WINDOW - 1} AND S.t)"),
}
for _kind, _sql in JOIN_KINDS.items():
    DUCK[f"j_{_kind}"] = (
        "SELECT coalesce(A.tb, B.tb), coalesce(A.k, B.k), coalesce(A.n, 0), "
        "coalesce(A.sx, 0), coalesce(B.tb, A.tb), coalesce(B.k, A.k), coalesce(B.n, 0), "
        f"coalesce(B.sx, 0) FROM {_GA} A {_sql} {_GB} B ON A.tb = B.tb AND A.k = B.k")
# which column of an output counts input records (for the message)
COUNT_COL = {"agg": 1, "aggk": 2, "magg": 2, "ljagg": 1}


# ---------------------------------------------------------------- inputs


@dataclass
class Member:
    """One recorded source: its records in file order as (time, key, value);
    time in seconds (CSV) or microseconds (pcap)."""
    name: str
    kind: str
    records: list
    start: int                      # the span it was drawn over (s from T0)
    end: int
    gaps: list = field(default_factory=list)
    disorder: int = 0               # rows trail the largest time before by <= this (s)
    path: Path | None = None

    def truth(self) -> list[tuple[int, int, int]]:
        if self.kind == "pcap":
            return [(t // 1_000_000, k, x) for t, k, x in self.records]
        return list(self.records)

    def uri(self) -> str:
        return f"{self.kind}:{self.path}"

    def describe(self) -> str:
        ts = [r[0] for r in self.truth()]
        gaps = "".join(f" gap[{g0},{g1})" for g0, g1 in self.gaps)
        dis = f" disorder<={self.disorder}s" if self.disorder else ""
        span = f"[{min(ts) - T0},{max(ts) - T0}]" if ts else "[]"
        return (f"{self.name}: {self.kind} {len(ts)} records, drawn over "
                f"[{self.start},{self.end}) s, times {span}{gaps}{dis}")


def _active(start: int, end: int, gaps) -> list[tuple[int, int]]:
    """[start, end) less the gaps, as intervals (seconds from T0)."""
    out, cur = [], start
    for g0, g1 in sorted(gaps):
        if g0 > cur:
            out.append((cur, g0))
        cur = max(cur, g1)
    if cur < end:
        out.append((cur, end))
    return out


def make_member(rng: random.Random, name: str, kind: str, start: int, end: int, n: int,
                n_keys: int, gaps=(), disorder: int = 0) -> Member:
    """n records at times drawn uniformly over [start, end) less the gaps,
    keys 1..n_keys; CSV rows optionally out of order within `disorder`."""
    gaps = sorted(gaps)
    parts = _active(start, end, gaps)
    total = sum(b - a for a, b in parts)
    assert total > 0, (start, end, gaps)

    def draw_usec() -> int:
        u = rng.randrange(total * 1_000_000)
        for a, b in parts:
            if u < (b - a) * 1_000_000:
                return (T0 + a) * 1_000_000 + u
            u -= (b - a) * 1_000_000
        raise AssertionError("unreachable")

    times = sorted(draw_usec() for _ in range(n))
    records = []
    for t in times:
        k = rng.randint(1, n_keys)
        if kind == "pcap":
            records.append((t, k, rng.randint(28, 1500)))
        else:
            ts = t // 1_000_000
            if disorder and rng.random() < 0.4:
                # never more than `disorder` behind any earlier row (they are <= t)
                ts -= rng.randint(1, disorder)
            records.append((ts, k, rng.randint(0, 999)))
    return Member(name, kind, records, start, end, list(gaps), disorder if kind == "csv" else 0)


def _ip_checksum(header: bytes) -> int:
    s = sum(struct.unpack(">10H", header))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def write_pcap(path: Path, records) -> None:
    """A classic pcap (microseconds, Ethernet) of UDP/IPv4 packets: each
    record (time usec, ttl, IPv4 total length), captured 42 bytes long."""
    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)]
    eth = b"\x02\x00\x00\x00\x00\x02" + b"\x02\x00\x00\x00\x00\x01" + b"\x08\x00"
    src, dst = 0x0A000001, 0xAC100001
    for i, (t, ttl, iplen) in enumerate(records):
        ip = struct.pack(">BBHHHBBHII", 0x45, 0, iplen, i & 0xFFFF, 0, ttl, 17, 0, src, dst)
        ip = ip[:10] + struct.pack(">H", _ip_checksum(ip)) + ip[12:]
        frame = eth + ip + struct.pack(">HHHH", 40000 + i % 1000, 53, iplen - 20, 0)
        out.append(struct.pack("<IIII", t // 1_000_000, t % 1_000_000, len(frame), iplen + 14))
        out.append(frame)
    path.write_bytes(b"".join(out))


def write_member(m: Member, d: Path) -> Member:
    if m.kind == "pcap":
        m.path = d / f"{m.name}.pcap"
        write_pcap(m.path, m.records)
    else:
        m.path = d / f"{m.name}.csv"
        m.path.write_text("".join(f"{t},{k},{x}\n" for t, k, x in m.records))
    return m


# ---------------------------------------------------------------- scenarios


@dataclass
class Scenario:
    """Interfaces (a set `s`, or `a` and `b`) bound to members, the
    out_of_order bounds declared, and how (a flag or an interfaces file)."""
    title: str
    family: str                      # "set" | "ab"
    ifaces: dict                     # name -> [Member]
    ooo: dict = field(default_factory=dict)   # name -> seconds
    declare: str = "flag"            # "flag" | "file"

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(ms[0].kind for ms in self.ifaces.values())

    @property
    def query(self) -> str:
        return qname(self.family, self.kinds)

    @property
    def n_records(self) -> int:
        return sum(len(m.records) for ms in self.ifaces.values() for m in ms)

    def disordered(self) -> bool:
        return any(m.disorder for ms in self.ifaces.values() for m in ms)

    def outputs(self) -> list[str]:
        if self.family == "set":
            return ["agg", "aggk"] + ([] if self.disordered() else ["rows"])
        return (["magg"] + [f"j_{k}" for k in JOIN_KINDS] + ["ljagg"]
                + ([] if self.disordered() else ["fj"]))

    def describe(self) -> str:
        lines = [f"scenario {self.title}: {self.family} over {self.query}, "
                 f"{self.n_records} records"]
        for name, ms in self.ifaces.items():
            bound = f", out_of_order {self.ooo[name]} s ({self.declare})" if name in self.ooo else ""
            lines.append(f"  interface {name}: {len(ms)} member(s){bound}")
            lines += [f"    {m.describe()}" for m in ms]
        return "\n".join(lines)


def random_scenario(seed: int, d: Path, kinds=None) -> Scenario:
    """Seed -> scenario: even seeds an interface set, odd ones two
    interfaces (each a set of 1-3 members); 2-5 members in all, of
    different sizes and spans (overlapping, rotated, staggered or mixed;
    bound in time order or not), some with gaps, CSV interfaces sometimes
    out of order within a bound.  Kinds alternate over the seeds."""
    rng = random.Random(seed)
    family = "set" if seed % 2 == 0 else "ab"
    if family == "set":
        counts = {"s": rng.randint(2, 5)}
        kinds = kinds or (list(KINDS)[seed // 2 % 2],)
    else:
        na = rng.randint(1, 3)
        counts = {"a": na, "b": rng.randint(1, min(3, 5 - na))}
        kinds = kinds or KIND_PAIRS[seed // 2 % 3]
    n_keys = rng.randint(2, 6)
    pattern = rng.choice(["overlap", "rotated", "staggered", "mixed"])
    total = sum(counts.values())
    order = list(range(total))
    if rng.random() < 0.5:        # else each interface's members in time order
        rng.shuffle(order)
    spans: list = [None] * total
    cur = rng.randint(0, 15)
    for i in order:
        if pattern == "overlap":
            s = rng.randint(0, 20)
            spans[i] = (s, s + rng.randint(200, 400))
        elif pattern == "rotated":        # one after the other
            cur += rng.choice([0, 0, 1, 25])
            spans[i] = (cur, cur + rng.randint(60, 200))
            cur = spans[i][1]
        elif pattern == "staggered":      # later starts, partly overlapping
            spans[i] = (cur, cur + rng.randint(100, 400))
            cur += rng.randint(20, 120)
        else:
            s = rng.randint(0, 300)
            spans[i] = (s, s + rng.randint(30, 400))
    ooo = {}
    for name, kind in zip(counts, kinds):
        if kind == "csv" and rng.random() < 0.35:
            ooo[name] = rng.randint(2, 8)
    ifaces: dict = {}
    j = 0
    for name, kind in zip(counts, kinds):
        ms = []
        for _ in range(counts[name]):
            s, e = spans[j]
            gaps = []
            if e - s >= 80 and rng.random() < 0.5:
                g0 = rng.randint(s + 10, e - 60)
                gaps.append((g0, g0 + rng.randint(15, min(80, e - 10 - g0))))
            n = rng.randint(50, 2000)
            n = min(n, 8 * sum(b - a for a, b in _active(s, e, gaps)))
            m = make_member(rng, f"{name}{len(ms)}", kind, s, e, n, n_keys, gaps,
                            ooo.get(name, 0))
            ms.append(write_member(m, d))
            j += 1
        ifaces[name] = ms
    return Scenario(f"seed {seed} ({pattern})", family, ifaces, ooo,
                    rng.choice(["flag", "file"]))


# ---------------------------------------------------------------- running


@pytest.fixture(scope="module")
def qdir(tmp_path_factory):
    """The query files, each built once: a first run over two records per
    member populates the build cache (two at a time)."""
    d = tmp_path_factory.mktemp("replay_q")
    (d / "schema.txt").write_text(SCHEMA)
    for name, text in QUERY_FILES.items():
        (d / f"{name}.gsql").write_text(text)
    warm = d / "warm"
    warm.mkdir()
    rng = random.Random(0)
    tiny = {k: write_member(make_member(rng, f"tiny_{k}", k, 0, 2, 2, 2), warm) for k in KINDS}

    def build(name):
        family, *kinds = name.split("_")
        ifaces = ["s"] if family == "set" else ["a", "b"]
        args = [a for i, k in zip(ifaces, kinds) for a in ("--source", f"{i}={tiny[k].uri()}")]
        out = "agg" if family == "set" else "magg"
        return run_gsqlc("run", str(d / f"{name}.gsql"), "--schema", str(d / "schema.txt"),
                         "--schema", str(PACKETS), *args, "--output", out)

    with ThreadPoolExecutor(max_workers=2) as pool:
        done = dict(zip(QUERY_FILES, pool.map(build, QUERY_FILES)))
    for name, p in done.items():
        assert p.returncode == 0, f"{name}: {p.stderr.decode(errors='replace')[-3000:]}"
    return d


def _stats(err: str) -> dict | None:
    """The --stats JSON: from the last line that starts with "{" (the CLI
    indents it, the stand-alone runner prints it on one line)."""
    i = 0 if err.startswith("{") else err.rfind("\n{") + 1
    if i == 0 and not err.startswith("{"):
        return None          # (rfind gave -1)
    try:
        return json.loads(err[i:])
    except ValueError:
        return None


def declare_args(scn: Scenario, d: Path) -> list[str]:
    if not scn.ooo:
        return []
    if scn.declare == "file":
        f = d / "interfaces.toml"
        f.write_text("".join(f"[interface.{n}]\nout_of_order = {s}\n" for n, s in scn.ooo.items()))
        return ["--interfaces", str(f)]
    return [a for n, s in scn.ooo.items() for a in ("--out-of-order", f"{n}={s}")]


def source_args(scn: Scenario) -> list[str]:
    return [a for name, ms in scn.ifaces.items() for m in ms
            for a in ("--source", f"{name}={m.uri()}")]


@dataclass
class Result:
    output: str
    returncode: int
    rows: list
    stats: dict | None
    err: str


def run_cli(scn: Scenario, qd: Path, decl: list[str], output: str) -> Result:
    """`gsqlc run` with the default flags (and the scenario's bounds: decl)."""
    p = run_gsqlc("run", str(qd / f"{scn.query}.gsql"), "--schema", str(qd / "schema.txt"),
                  "--schema", str(PACKETS), *source_args(scn), *decl,
                  "--output", output, "--format", "jsonl", "--stats")
    return _result(output, p.returncode, p.stdout.decode("utf-8", "replace"),
                   p.stderr.decode("utf-8", "replace"))


def _result(output: str, rc: int, out: str, err: str) -> Result:
    rows = []
    for line in out.splitlines():
        if line.strip():
            rows.append(tuple(v for _, v in json.loads(line, object_pairs_hook=list)))
    return Result(output, rc, rows, _stats(err), err)


def expected(scn: Scenario, output: str) -> list[tuple]:
    con = duckdb.connect()
    try:
        for name, ms in scn.ifaces.items():
            rows = [r for m in ms for r in m.truth()]
            tbl = pa.table({"t": pa.array([r[0] for r in rows], pa.int64()),
                            "k": pa.array([r[1] for r in rows], pa.int64()),
                            "x": pa.array([r[2] for r in rows], pa.int64())})
            con.register(name, tbl)
        return [tuple(int(v) for v in r) for r in con.sql(DUCK[output]).fetchall()]
    finally:
        con.close()


def _report_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("gsqlc:")]


def drop_problems(stats: dict | None, n_records: int) -> list[str]:
    """What the --stats counters say was dropped, rejected or not read."""
    if stats is None:
        return ["no --stats JSON on stderr"]
    probs = []
    for n in stats.get("nodes", []):
        for c in ("late_dropped", "skew_dropped"):
            if n.get(c):
                probs.append(f"node {n['name']}: {c} = {n[c]}")
    read = 0
    for s in stats.get("sources", []):
        read += s.get("records_read", 0)
        for c in ("rows_rejected", "time_unreadable"):
            if s.get(c):
                probs.append(f"source {s['iface']} ({s['uri']}): {c} = {s[c]}")
        t = s.get("time") or {}
        if t.get("dropped_below_heartbeat"):
            probs.append(f"source {s['iface']} ({s['uri']}): time.dropped_below_heartbeat = "
                         f"{t['dropped_below_heartbeat']}")
    if read != n_records:
        probs.append(f"sources read {read} records of {n_records}")
    return probs


def _sorted(rows) -> list[tuple]:
    return sorted(rows, key=lambda r: tuple((0, v) if isinstance(v, (int, float)) else (1, str(v))
                                            for v in r))


def bound_problems(stats: dict | None, ooo: dict) -> list[str]:
    """A declared out_of_order must be in force on every member of its
    interface (else the run would prove nothing about the bound)."""
    probs = []
    for name, sec in ooo.items():
        srcs = [s for s in (stats or {}).get("sources", [])
                if s["iface"] == name or s["iface"].startswith(name + ".")]
        for s in srcs:
            pairs = ((s.get("time") or {}).get("bounds_to") or {}).get(s["iface"], [])
            if [0, sec * 1_000_000] not in pairs:
                probs.append(f"source {s['iface']}: out_of_order {sec} s not in force "
                             f"(time: {s.get('time')})")
        if not srcs:
            probs.append(f"no source of interface {name} in the stats")
    return probs


def check(res: Result, want: list[tuple], scn: Scenario, ordered: bool = False) -> list[str]:
    """The problems of one run of scn (empty: it passed)."""
    out = res.output
    if res.returncode != 0:
        return [f"{out}: gsqlc exited {res.returncode}:\n" + res.err[-2000:]]
    probs = [f"{out}: {p}" for p in drop_problems(res.stats, scn.n_records)]
    probs += [f"{out}: {p}" for p in bound_problems(res.stats, scn.ooo)]
    probs += [f"{out}: stderr: {line}" for line in _report_lines(res.err)
              if any(w in line for w in DROP_WORDS)]
    got = [tuple(r) for r in res.rows]
    if Counter(got) != Counter(want):
        extra = list((Counter(got) - Counter(want)).elements())
        missing = list((Counter(want) - Counter(got)).elements())
        msg = (f"{out}: gsqlc gave {len(got)} rows, DuckDB {len(want)}; "
               f"{len(extra)} only in gsqlc, {len(missing)} only in DuckDB")
        if out in COUNT_COL:
            c = COUNT_COL[out]
            msg += (f"; records counted: gsqlc {sum(r[c] for r in got)}, "
                    f"expected {sum(r[c] for r in want)}")
        msg += "".join(f"\n    only gsqlc : {r}" for r in _sorted(extra)[:8])
        msg += "".join(f"\n    only duckdb: {r}" for r in _sorted(missing)[:8])
        probs.append(msg)
    if ordered:
        bad = [(i, got[i - 1][0], got[i][0]) for i in range(1, len(got)) if got[i][0] < got[i - 1][0]]
        if bad:
            probs.append(f"{out}: {len(bad)} decreases of time in the output, first {bad[:5]}")
    return probs


def failure(scn: Scenario, probs: list[str], reports=()) -> str:
    """The scenario and its problems, for a failure message ("": none)."""
    if not probs:
        return ""
    lines = [scn.describe(), "problems:"] + [f"  {p}" for p in probs]
    rep = sorted({line for err in reports for line in _report_lines(err)})
    other = [line for line in rep if not any(w in line for w in DROP_WORDS)]
    if other:      # (the drop lines are among the problems)
        lines += [f"other report lines on stderr ({len(other)}):"]
        lines += [f"  {line}" for line in other[:6]] + (["  ..."] if len(other) > 6 else [])
    return "\n".join(lines)


def fail_on(scn: Scenario, probs: list[str], reports=()) -> None:
    if probs:
        pytest.fail(failure(scn, probs, reports), pytrace=False)


def run_scenario(scn: Scenario, qd: Path, d: Path, outputs=None) -> None:
    outputs = outputs or scn.outputs()
    decl = declare_args(scn, d)
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda o: run_cli(scn, qd, decl, o), outputs))
    probs = []
    for res in results:
        probs += check(res, expected(scn, res.output), scn,
                       ordered=res.output == "rows")
    fail_on(scn, probs, [r.err for r in results])


# ---------------------------------------------------------------- random scenarios

SEEDS = list(range(16))


def test_scenarios_cover_the_cases(tmp_path):
    """The seeds draw every family, kind, span pattern, gaps, disorder and
    both ways of declaring it (else the random test proves less than it
    says)."""
    seen: Counter = Counter()
    for seed in SEEDS:
        d = tmp_path / str(seed)
        d.mkdir()
        scn = random_scenario(seed, d)
        seen[scn.query] += 1
        seen[scn.title.split("(")[1].rstrip(")")] += 1
        seen["gaps"] += any(m.gaps for ms in scn.ifaces.values() for m in ms)
        seen[f"ooo_{scn.declare}"] += bool(scn.ooo)
        seen["set_under_ab"] += scn.family == "ab" and any(len(ms) > 1 for ms in scn.ifaces.values())
        seen["5_members"] += sum(len(ms) for ms in scn.ifaces.values()) == 5
        for ms in scn.ifaces.values():
            for m in ms:
                assert m.records and m.path.stat().st_size > 0
                ts = [r[0] for r in m.truth()]
                top = ts[0]
                for t in ts:              # within the bound (0: in order)
                    assert t >= top - m.disorder, (seed, m.name)
                    top = max(top, t)
                seen["out_of_order"] += ts != sorted(ts)
    for key in (*QUERY_FILES, "overlap", "rotated", "staggered", "mixed", "gaps", "ooo_flag",
                "ooo_file", "out_of_order", "set_under_ab", "5_members"):
        assert seen[key] > 0, (key, seen)


@pytest.mark.parametrize("seed", SEEDS)
def test_random_scenario(seed, qdir, tmp_path):
    scn = random_scenario(seed, tmp_path)
    run_scenario(scn, qdir, tmp_path)


# ---------------------------------------------------------------- the cases


def _scenario(title, family, ifaces, d, ooo=None, declare="flag") -> Scenario:
    for ms in ifaces.values():
        for m in ms:
            write_member(m, d)
    return Scenario(title, family, ifaces, ooo or {}, declare)


def test_three_csv_members_over_the_same_300_seconds(qdir, tmp_path):
    rng = random.Random(101)
    ms = [make_member(rng, f"s{i}", "csv", 0, 300, n, 4) for i, n in enumerate((900, 400, 1500))]
    scn = _scenario("three CSV members, same 300 s", "set", {"s": ms}, tmp_path)
    want = expected(scn, "agg")
    assert sum(r[1] for r in want) == 2800 and len(want) == 30
    run_scenario(scn, qdir, tmp_path)


def test_rotated_capture_as_members_of_a_set(qdir, tmp_path):
    rng = random.Random(102)
    first = make_member(rng, "s0", "pcap", 0, 150, 1500, 5)
    second = make_member(rng, "s1", "pcap", 150, 330, 1200, 5)   # where the first ends
    scn = _scenario("rotated capture", "set", {"s": [first, second]}, tmp_path)
    assert max(r[0] for r in first.records) < min(r[0] for r in second.records)
    run_scenario(scn, qdir, tmp_path)


def test_two_csv_links_of_20_minutes_five_minutes_apart(qdir, tmp_path):
    rng = random.Random(103)
    ms = [make_member(rng, "l0", "csv", 0, 1200, 2400, 3),
          make_member(rng, "l1", "csv", 300, 1500, 2400, 3)]
    as_set = _scenario("two 20-minute CSV links, 5 min apart (a set)", "set", {"s": ms}, tmp_path)
    run_scenario(as_set, qdir, tmp_path)
    two = _scenario("two 20-minute CSV links, 5 min apart (a and b)", "ab",
                    {"a": [ms[0]], "b": [ms[1]]}, tmp_path)
    run_scenario(two, qdir, tmp_path, ["magg", "j_OUTER_JOIN", "ljagg"])


def test_merge_of_captures_overlapping_by_15_seconds(qdir, tmp_path):
    rng = random.Random(104)
    a = make_member(rng, "a0", "pcap", 0, 120, 1200, 4)
    b = make_member(rng, "b0", "pcap", 105, 225, 1200, 4)
    scn = _scenario("MERGE of captures overlapping by 15 s", "ab", {"a": [a], "b": [b]}, tmp_path)
    run_scenario(scn, qdir, tmp_path, ["magg"])


@pytest.mark.parametrize("declare", ["flag", "file"])
def test_set_of_three_csv_members_out_of_order_within_the_bound(qdir, tmp_path, declare):
    rng = random.Random(105)
    ms = [make_member(rng, "s0", "csv", 0, 240, 1200, 4, disorder=5),
          make_member(rng, "s1", "csv", 30, 200, 800, 4, gaps=[(90, 140)], disorder=5),
          make_member(rng, "s2", "csv", 60, 300, 1000, 4, disorder=5)]
    assert all([r[0] for r in m.records] != sorted(r[0] for r in m.records) for m in ms)
    scn = _scenario("set of three CSV members, out of order within 5 s", "set", {"s": ms},
                    tmp_path, {"s": 5}, declare)
    run_scenario(scn, qdir, tmp_path)


def test_left_outer_join_of_two_csv_sources_feeding_an_aggregation(qdir, tmp_path):
    rng = random.Random(106)
    a = make_member(rng, "a0", "csv", 0, 200, 800, 3, gaps=[(60, 100)])
    b = make_member(rng, "b0", "csv", 50, 260, 600, 3)
    scn = _scenario("LEFT_OUTER_JOIN of two CSV sources", "ab", {"a": [a], "b": [b]}, tmp_path)
    want = expected(scn, "ljagg")
    assert sum(r[3] for r in want) > 0                       # matches,
    assert sum(r[1] for r in want) > len(b.records)          # and unmatched rows of a
    run_scenario(scn, qdir, tmp_path, ["ljagg", "j_LEFT_OUTER_JOIN"])


# ---------------------------------------------------------------- Python API


def _api_check(scn: Scenario, qd: Path, sources: dict, output: str = "agg") -> None:
    import gsqlc
    qs = gsqlc.compile([qd / f"{scn.query}.gsql"], [qd / "schema.txt", PACKETS])
    run = qs.run(sources=sources, output=output)
    rows = [tuple(r.values()) for b in run for r in b.to_pylist()]
    res = Result(output, 0, rows, run.stats, run.report)
    probs = check(res, expected(scn, output), scn)
    fail_on(scn, probs, [run.report])


def test_api_set_of_three_csv_paths(qdir, tmp_path):
    rng = random.Random(107)
    ms = [make_member(rng, "s0", "csv", 0, 300, 900, 3),
          make_member(rng, "s1", "csv", 100, 250, 500, 3),
          make_member(rng, "s2", "csv", 200, 420, 700, 3, gaps=[(260, 330)])]
    scn = _scenario("API: set of three CSV files", "set", {"s": ms}, tmp_path)
    _api_check(scn, qdir, {"s": [str(m.path) for m in ms]})
    _api_check(scn, qdir, {"s": [str(m.path) for m in ms]}, "aggk")


def test_api_set_of_arrow_tables(qdir, tmp_path):
    rng = random.Random(108)
    ms = [make_member(rng, "s0", "csv", 0, 200, 800, 3),
          make_member(rng, "s1", "csv", 200, 400, 800, 3),       # follows the first
          make_member(rng, "s2", "csv", 50, 350, 600, 3)]
    scn = _scenario("API: set of three Arrow tables", "set", {"s": ms}, tmp_path)
    tables = [pa.table({"ts": pa.array([r[0] for r in m.records], pa.uint32()),
                        "k": pa.array([r[1] for r in m.records], pa.uint32()),
                        "x": pa.array([r[2] for r in m.records], pa.uint32())}) for m in ms]
    _api_check(scn, qdir, {"s": tables})


# ---------------------------------------------------------------- sanitized runner

SANITIZED_SEEDS = [1, 3, 5, 7]


@pytest.mark.slow
def test_scenarios_through_a_sanitized_runner(qdir, tmp_path):
    """Two-interface CSV scenarios (sets of 1-3 members, gaps, disorder)
    through the stand-alone runner built with ASan and UBSan: clean, and
    the same answers."""
    q = qname("ab", ("csv", "csv"))
    runner = build_sanitized([qdir / f"{q}.gsql", "--schema", qdir / "schema.txt",
                              "--schema", PACKETS], tmp_path / "san")
    failures = []
    for seed in SANITIZED_SEEDS:
        d = tmp_path / f"seed{seed}"
        d.mkdir()
        scn = random_scenario(seed, d, kinds=("csv", "csv"))
        # the runner's options name sources: the members of a set are n.0, n.1, ...
        opts = [a for n, s in scn.ooo.items()
                for m in (range(len(scn.ifaces[n])) if len(scn.ifaces[n]) > 1 else [None])
                for a in ("--option", f"out_of_order:{n if m is None else f'{n}.{m}'}={s}")]
        probs, errs = [], []
        for output in scn.outputs():
            p = subprocess.run([str(runner), *source_args(scn), *opts, "--output", output,
                                "--format", "jsonl", "--stats"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, timeout=600,
                               env=dict(os.environ, **SANITIZED_RUN_ENV))
            errs.append(p.stderr)
            if "Sanitizer" in p.stderr or "runtime error" in p.stderr:
                probs.append(f"{output}: sanitizer report:\n{p.stderr[-3000:]}")
                continue
            res = _result(output, p.returncode, p.stdout, p.stderr)
            probs += check(res, expected(scn, output), scn)
        failures.append(failure(scn, probs, errs))
    if any(failures):
        pytest.fail("\n\n".join(f for f in failures if f), pytrace=False)


def test_a_live_source_beside_a_recording_keeps_the_wall_clock(tmp_path):
    """A mixed run: rows on standard input (a live feed) beside a CSV file
    (a recording).  The default clock is then the wall clock, and --stats
    says which rule each source follows; without the live feed the same
    file is replayed on its own time."""
    import json as _json
    schema, q = tmp_path / "schema.txt", tmp_path / "q.gsql"
    schema.write_text(SCHEMA)
    q.write_text("DEFINE { query_name 'ra'; }\nselect ts, x from a.P;\n"
                 "DEFINE { query_name 'rb'; }\nselect ts, x from b.P;\n")
    f = tmp_path / "b.csv"
    f.write_text("".join(f"{1000 + i},1,{i}\n" for i in range(100)))
    live = "".join(f"{2000 + i},2,{i}\n" for i in range(50)).encode()
    p = run_gsqlc("run", str(q), "--schema", str(schema), "--source", "a=csv:-",
                  "--source", f"b=csv:{f}", "--stats", input=live)
    assert p.returncode == 0, p.stderr
    err = p.stderr.decode()
    st = _json.loads(err[err.index("{\n"):])
    assert st["clock"] == "wall" and st["clock_chosen"].startswith("auto: a live source"), st
    read = {s["iface"]: (s["read"], s["recording"]) for s in st["sources"]}
    assert read == {"a": ("live", False), "b": ("as recorded", True)}
    assert len(p.stdout.decode().split()) == 150
    q.write_text("DEFINE { query_name 'rb'; }\nselect ts, x from b.P;\n")
    p = run_gsqlc("run", str(q), "--schema", str(schema), "--source", f"b=csv:{f}", "--stats")
    err = p.stderr.decode()
    st = _json.loads(err[err.index("{\n"):])
    assert st["clock"] == "data" and st["clock_chosen"] == "auto: every source is a recording"


def test_band_join_of_two_sets_with_gaps_feeding_an_aggregation(tmp_path):
    """A band join (A.ts within 2 s of B.ts, same key) of two interface sets
    of CSV members -- staggered, one member silent for 70 s, one for 50 s --
    feeding a count per 10 s: DuckDB's answer over the union, 0 late."""
    import json as _json
    rng = random.Random(23)

    def member(path, start, end, n, gap=None):
        ts = sorted(rng.randint(start, end) for _ in range(n))
        ts = [t for t in ts if not (gap and gap[0] <= t < gap[1])]
        path.write_text("".join(f"{t},{rng.randint(1, 5)},{rng.randint(1, 100)}\n" for t in ts))
        return path
    a = [member(tmp_path / "a0.csv", 1000, 1200, 400, (1050, 1120)),
         member(tmp_path / "a1.csv", 1100, 1400, 500)]
    b = [member(tmp_path / "b0.csv", 1020, 1300, 600), member(tmp_path / "b1.csv", 1280, 1350, 100),
         member(tmp_path / "b2.csv", 990, 1100, 200, (1010, 1060))]
    schema, q = tmp_path / "schema.txt", tmp_path / "q.gsql"
    schema.write_text(SCHEMA)
    q.write_text("DEFINE { query_name 'bj'; }\n"
                 "select A.ts as ta, B.ts as tb, A.k as k, A.x as ax, B.x as bx INNER_JOIN\n"
                 "from [a].P A, [b].P B\n"
                 "where A.k = B.k and A.ts >= B.ts - 2 and A.ts <= B.ts + 2;\n"
                 "DEFINE { query_name 'bagg'; }\n"
                 "select tq, count(*) as n, sum(ax) as s from bj group by ta/10 as tq;\n")
    srcs = [x for m in a for x in ("--source", f"a=csv:{m}")] + \
        [x for m in b for x in ("--source", f"b=csv:{m}")]
    p = run_gsqlc("run", str(q), "--schema", str(schema), "--output", "bagg", *srcs, "--stats")
    assert p.returncode == 0, p.stderr
    err = p.stderr.decode()
    st = _json.loads(err[err.index("{\n"):])
    assert [n["name"] for n in st["nodes"] if n["late_dropped"]] == []
    got = sorted(tuple(int(x) for x in line.split("|")) for line in p.stdout.decode().split())
    cols = "{'ts': 'INT', 'k': 'INT', 'x': 'INT'}"
    want = sorted(tuple(int(v) for v in r) for r in duckdb.sql(
        f"with a as (select * from read_csv({[str(m) for m in a]}, header=false, columns={cols})), "
        f"b as (select * from read_csv({[str(m) for m in b]}, header=false, columns={cols})) "
        "select a.ts // 10, count(*), sum(a.x) from a join b on a.k = b.k "
        "and a.ts >= b.ts - 2 and a.ts <= b.ts + 2 group by 1").fetchall())
    assert got == want and len(got) > 20
