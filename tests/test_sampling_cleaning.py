"""Super-aggregates after a cleaning phase: a group CLEANING_BY removes takes
its part out of its supergroup's super-aggregates, as Tigon's clean operator
does (update_minus_superaggr before the group is deleted): count$ and sum$
lose the group's count and sum, count_distinct$ loses the group, min$ and
max$ keep their values.  The expected rows are worked out by hand."""
from __future__ import annotations

SCHEMA = """
PROTOCOL PKTS {
    uint time   get_csv_uint_pos1 (increasing, required);
    IP   srcIP  get_csv_ip_pos2;
    IP   destIP get_csv_ip_pos3;
    uint len    get_csv_uint_pos4;
}
"""

D1, D2 = "10.1.0.1", "10.1.0.2"
A, B, C, D, E, F, G = (f"10.0.0.{i}" for i in range(1, 8))

# one window (time/10 = 0), two supergroups (destIP); in arrival order
ROWS = [
    (0, A, D1, 10),
    (1, B, D1, 5),
    (1, F, D2, 7),
    (2, A, D1, 30),
    (3, C, D1, 40),
    (3, G, D2, 8),
    (4, C, D1, 50),
    (5, D, D1, 60),
    (6, A, D1, 70),
    (7, E, D1, 80),
    (8, B, D1, 90),
]

QUERY = """\
SELECT tb, destIP, srcIP, count(*) AS n, sum(len) AS s,
       count$(*) AS pkts, sum$(len) AS bytes, sum$(len * 0.5) AS half,
       count_distinct$() AS flows, min$(len) AS lo, max$(len) AS hi
FROM [csv].PKTS
GROUP BY time/10 AS tb, destIP, srcIP
SUPERGROUP destIP
CLEANING_WHEN count$(*) >= 6
CLEANING_BY count(*) >= 2
"""


def run(gsqlc, tmp_path, query, rows):
    (tmp_path / "schema.txt").write_text(SCHEMA)
    (tmp_path / "in.csv").write_text("".join(",".join(map(str, r)) + "\n" for r in rows))
    (tmp_path / "q.gsql").write_text(query)
    p = gsqlc("run", tmp_path / "q.gsql", "--schema", tmp_path / "schema.txt",
              "--source", f"csv=csv:{tmp_path / 'in.csv'}", "--format", "csv")
    assert p.returncode == 0, p.err
    return sorted(line.split(",") for line in p.out.splitlines()[1:])


def test_removed_groups_leave_the_super_aggregates(gsqlc, tmp_path):
    """Supergroup D1, tuple by tuple (count$, sum$ after the tuple):
      A 10 -> 1, 10;  B 5 -> 2, 15;  A 30 -> 3, 45;  C 40 -> 4, 85;
      C 50 -> 5, 135;  D 60 -> 6, 195: CLEANING_WHEN holds; B (1 tuple, 5)
      and D (1 tuple, 60) fail count(*) >= 2 and go: 4, 130 (A 40 + C 90);
      A 70 -> 5, 200: no cleaning;
      E 80 -> 6, 280: E goes: 5, 200;
      B 90 (a new group B) -> 6, 290: B goes: 5, 200.
    Output: A (3 tuples, 110) and C (2, 90) with count$ 5, sum$ 200,
    sum$(len * 0.5) 100, count_distinct$ 2; min$ 5 and max$ 90 come from
    removed groups and stay, as Tigon's operator leaves MIN and MAX alone.
    (Keeping the removed groups' parts would give count$ 9 and sum$ 435.)
    Supergroup D2 never reaches 6 tuples: no cleaning, its two one-tuple
    groups stay with count$ 2 and sum$ 15 -- D1's cleanings leave it alone."""
    got = run(gsqlc, tmp_path, QUERY, ROWS)
    d1 = ["5", "200", "100", "2", "5", "90"]
    d2 = ["2", "15", "7.5", "2", "7", "8"]
    want = sorted([
        ["0", D1, A, "3", "110", *d1],
        ["0", D1, C, "2", "90", *d1],
        ["0", D2, F, "1", "7", *d2],
        ["0", D2, G, "1", "8", *d2],
    ])
    assert [[*r[:7], str(float(r[7])).removesuffix(".0"), *r[8:]] for r in got] == want


def test_cleaning_when_sees_the_reduced_count(gsqlc, tmp_path):
    """CLEANING_WHEN reads count$ after earlier cleanings: with the removed
    groups' tuples taken out, count$(*) >= 4 is reached again only later.
      A, A, B, C -> count$ 4: B and C (one tuple each) go: count$ 2;
      A -> 3: below 4, no cleaning;
      D -> 4: D goes: count$ 3;
      D (a new group D) -> 4: D goes: 3.
    Output: A alone, 3 tuples, count$ 3, sum$ 1+2+5 = 8, count_distinct$ 1
    (keeping the removed groups' parts would give count$ 7 and sum$ 28)."""
    rows = [(0, A, D1, 1), (0, A, D1, 2), (0, B, D1, 3), (0, C, D1, 4),
            (0, A, D1, 5), (0, D, D1, 6), (0, D, D1, 7)]
    got = run(gsqlc, tmp_path, (
        "SELECT tb, srcIP, count(*) AS n, count$(*) AS pkts, sum$(len) AS bytes,\n"
        "       count_distinct$() AS flows\n"
        "FROM [csv].PKTS GROUP BY time/10 AS tb, srcIP\n"
        "CLEANING_WHEN count$(*) >= 4 CLEANING_BY count(*) >= 2\n"), rows)
    assert got == [["0", A, "3", "3", "8", "1"]]
