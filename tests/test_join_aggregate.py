"""An aggregation over a join in one query (issue 12, part 6), as Tigon
writes it: `SELECT ... FROM A, B WHERE <join> GROUP BY ...`; gsqlc runs the
join as `<name>__join` and aggregates its output.  Compared with the join
and aggregation computed in Python."""
from __future__ import annotations

import csv
import io
import random
from collections import defaultdict

import pytest

import gsqlc

SCHEMA = """
PROTOCOL PKTS {
    uint time   get_csv_uint_pos1 (increasing, required);
    IP   srcIP  get_csv_ip_pos2;
    uint len    get_csv_uint_pos3;
    uint port   get_csv_uint_pos4;
}
"""


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("joinagg")
    (d / "s.txt").write_text(SCHEMA)
    rng = random.Random(5)
    rows = {}
    for f in ("a", "b"):
        rows[f] = []
        for t in range(120):
            for _ in range(rng.randrange(0, 4)):
                rows[f].append((t, f"10.0.0.{rng.randrange(1, 4)}", rng.randrange(40, 1500),
                                rng.choice([53, 80, 443])))
        (d / f"{f}.csv").write_text("".join(",".join(map(str, r)) + "\n" for r in rows[f]))
    return d, rows


def run(gsqlc, d, text, files=("a", "b")):
    """The CSV output of `text` over eth0, eth1, ... bound to the files
    a.csv, b.csv, ...: (header, sorted rows)."""
    q = d / "q.gsql"
    q.write_text(text)
    sources = [x for i, f in enumerate(files) for x in ("--source", f"eth{i}=csv:{d / f}.csv")]
    p = gsqlc("run", q, "--schema", d / "s.txt", *sources, "--format", "csv")
    assert p.returncode == 0, p.err
    rows = list(csv.reader(io.StringIO(p.out)))
    return rows[0], sorted(tuple(int(v) if v.isdigit() else v for v in r) for r in rows[1:])


def test_inner_join_aggregation(gsqlc, data):
    d, rows = data
    header, got = run(gsqlc, d,
                      "DEFINE { query_name 'joined'; }\n"
                      "SELECT tb, A.srcIP, count(*) AS n, sum(B.len) AS bytes, max(A.port) AS p\n"
                      "FROM eth0.PKTS A, eth1.PKTS B\n"
                      "WHERE A.time = B.time AND A.srcIP = B.srcIP AND B.port <> 53\n"
                      "GROUP BY A.time/10 AS tb, A.srcIP\n"
                      "HAVING count(*) > 1\n")
    assert header == ["tb", "srcIP", "n", "bytes", "p"]
    want = defaultdict(lambda: [0, 0, 0])
    for a in rows["a"]:
        for b in rows["b"]:
            if a[0] == b[0] and a[1] == b[1] and b[3] != 53:
                w = want[(a[0] // 10, a[1])]
                w[0] += 1
                w[1] += b[2]
                w[2] = max(w[2], a[3])
    assert got == sorted((*k, *v) for k, v in want.items() if v[0] > 1)
    assert len(got) > 10


def test_unqualified_fields_and_explain(gsqlc, data):
    d, rows = data
    (d / "s2.txt").write_text(SCHEMA + "PROTOCOL OTHER {\n uint t2 get_csv_uint_pos1 "
                              "(increasing, required);\n uint w get_csv_uint_pos3;\n}\n")
    q = d / "q2.gsql"
    q.write_text("DEFINE { query_name 'j2'; }\n"
                 "SELECT tb, count(*) AS n, sum(w) AS sw\n"
                 "FROM eth0.PKTS A, eth1.OTHER B\nWHERE A.time = t2\n"
                 "GROUP BY time/20 AS tb\n")
    p = gsqlc("run", q, "--schema", d / "s2.txt", "--source", f"eth0=csv:{d / 'a.csv'}",
              "--source", f"eth1=csv:{d / 'b.csv'}")
    assert p.returncode == 0, p.err
    want = defaultdict(lambda: [0, 0])
    for a in rows["a"]:
        for b in rows["b"]:
            if a[0] == b[0]:
                want[a[0] // 20][0] += 1
                want[a[0] // 20][1] += b[2]
    assert sorted(p.out.splitlines()) == sorted(f"{k}|{n}|{s}" for k, (n, s) in want.items())
    ex = gsqlc("explain", q, "--schema", d / "s2.txt")
    assert ex.returncode == 0 and "j2__join" in ex.out, ex.err


@pytest.mark.parametrize("text, rule, needle", [
    ("SELECT tb, count(*) FROM eth0.PKTS A, eth1.PKTS B WHERE A.time = B.time "
     "GROUP BY time/10 AS tb", "ambiguous-field", "in both FROM sources"),
    ("SELECT tb, count(*) FROM eth0.PKTS A, eth1.PKTS B WHERE A.time = B.time "
     "GROUP BY A.time/10 AS tb HAVING sum(C.len) > 0", "unknown-table", "no FROM source"),
])
def test_errors_are_located(data, text, rule, needle):
    d, _ = data
    q = d / "bad.gsql"
    q.write_text("DEFINE { query_name 'bad'; }\n" + text + "\n")
    with pytest.raises(gsqlc.QueryError) as e:
        gsqlc.compile([q], schema=d / "s.txt")
    assert e.value.rule == rule and needle in e.value.message
    assert e.value.file == str(q) and e.value.line == 2


# ---- joins of more than two sources (issue 12, part 6): the first two joined
# as <name>__j<k>, then the rest


@pytest.fixture(scope="module")
def third(data):
    d, rows = data
    rng = random.Random(9)
    rows["c"] = [(t, f"10.0.0.{rng.randrange(1, 4)}", rng.randrange(40, 1500), 80)
                 for t in range(120) for _ in range(rng.randrange(0, 3))]
    (d / "c.csv").write_text("".join(",".join(map(str, r)) + "\n" for r in rows["c"]))
    return d, rows


def test_three_way_join(gsqlc, third):
    d, rows = third
    header, got = run(gsqlc, d,
                      "DEFINE { query_name 'three'; }\n"
                      "SELECT A.time, A.srcIP, A.len, B.len AS blen, C.len AS clen\n"
                      "FROM eth0.PKTS A, eth1.PKTS B, eth2.PKTS C\n"
                      "WHERE A.time = B.time AND A.srcIP = B.srcIP AND C.time = A.time\n"
                      "  AND C.srcIP = B.srcIP AND C.len > 300 AND A.len < 1200\n",
                      files=("a", "b", "c"))
    assert header == ["time", "srcIP", "len", "blen", "clen"]
    want = sorted((a[0], a[1], a[2], b[2], c[2]) for a in rows["a"] for b in rows["b"]
                  for c in rows["c"] if a[0] == b[0] == c[0] and a[1] == b[1] == c[1]
                  and c[2] > 300 and a[2] < 1200)
    assert got == want and len(want) >= 5


def test_three_way_join_aggregation(gsqlc, third):
    d, rows = third
    _, got = run(gsqlc, d,
                 "DEFINE { query_name 'three_agg'; }\n"
                 "SELECT tb, count(*) AS n, sum(C.len) AS cl\n"
                 "FROM eth0.PKTS A, eth1.PKTS B, eth2.PKTS C\n"
                 "WHERE A.time = B.time AND B.time = C.time AND A.srcIP = C.srcIP\n"
                 "GROUP BY A.time/30 AS tb\n", files=("a", "b", "c"))
    want = defaultdict(lambda: [0, 0])
    for a in rows["a"]:
        for b in rows["b"]:
            for c in rows["c"]:
                if a[0] == b[0] == c[0] and a[1] == c[1]:
                    want[a[0] // 30][0] += 1
                    want[a[0] // 30][1] += c[2]
    assert got == sorted((k, n, s) for k, (n, s) in want.items())


def test_outer_join_of_three_is_refused(third):
    d, _ = third
    q = d / "bad3.gsql"
    q.write_text("DEFINE { query_name 'bad'; }\nSELECT A.time OUTER_JOIN\n"
                 "FROM eth0.PKTS A, eth1.PKTS B, eth2.PKTS C\n"
                 "WHERE A.time = B.time AND B.time = C.time\n")
    with pytest.raises(gsqlc.QueryError, match="more than two sources") as e:
        gsqlc.compile([q], schema=d / "s.txt")
    assert e.value.rule == "not-supported-yet" and e.value.line == 2
