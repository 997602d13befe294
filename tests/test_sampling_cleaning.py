"""Super-aggregates after a cleaning phase: a group CLEANING_BY removes takes
its part out of its supergroup's super-aggregates, as Tigon's clean operator
does (update_minus_superaggr before the group is deleted): count$ and sum$
lose the group's count and sum, count_distinct$ loses the group, min$ and
max$ keep their values.  A cleaning visits the groups in the order they were
created and removes each at once, so a later group's question sees count$
and sum$ reduced (count_distinct$ keeps its value until the cleaning ends);
at the window's end HAVING cleans the same way before the output.  The
expected rows are worked out by hand."""
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


# three groups of one supergroup, created in the order X, Y, Z; 8 tuples
X, Y, Z, W = A, B, C, D
XYZ = [(0, X, D1, 1), (0, Y, D1, 2), (0, Y, D1, 3)] + [(0, Z, D1, 10)] * 5


def test_a_cleaning_removes_group_by_group(gsqlc, tmp_path):
    """CLEANING_BY count(*) * 4 > count$(*), asked at the 8th tuple (count$ 8)
    of groups X (1 tuple), Y (2), Z (5), in that order:
      X: 4 > 8 no, X goes: count$ 7, sum$ 42;
      Y: 8 > 7 yes, Y stays (asked against the count$ before the cleaning,
         8 > 8, it would go);
      Z: 20 > 7 yes.
    Output: Y and Z, count$ 7, sum$ 2+3+50 = 55, count_distinct$ 2."""
    got = run(gsqlc, tmp_path, (
        "SELECT tb, srcIP, count(*) AS n, count$(*) AS pkts, sum$(len) AS bytes,\n"
        "       count_distinct$() AS flows\n"
        "FROM [csv].PKTS GROUP BY time/10 AS tb, srcIP\n"
        "CLEANING_WHEN count$(*) >= 8 CLEANING_BY count(*) * 4 > count$(*)\n"), XYZ)
    assert got == sorted([["0", Y, "2", "7", "55", "2"], ["0", Z, "5", "7", "55", "2"]])


def test_having_cleans_at_the_window_end(gsqlc, tmp_path):
    """No CLEANING_WHEN: the same groups meet HAVING count(*) * 4 > count$(*)
    at the window's end, in the order they were created, as a cleaning:
    X goes (4 > 8 no: count$ 7, sum$ 55), Y stays (8 > 7), Z stays; the
    output's super-aggregates are those after HAVING: count$ 7, sum$ 55,
    count_distinct$ 2; min$ 1 is X's, kept.  The next window (a tuple at
    time 10) starts from nothing."""
    got = run(gsqlc, tmp_path, (
        "SELECT tb, srcIP, count(*) AS n, count$(*) AS pkts, sum$(len) AS bytes,\n"
        "       count_distinct$() AS flows, min$(len) AS lo\n"
        "FROM [csv].PKTS GROUP BY time/10 AS tb, srcIP\n"
        "HAVING count(*) * 4 > count$(*)\n"), XYZ + [(10, W, D1, 4)])
    assert got == sorted([["0", Y, "2", "7", "55", "2", "1"],
                          ["0", Z, "5", "7", "55", "2", "1"],
                          ["1", W, "1", "1", "4", "1", "4"]])


def test_count_distinct_holds_its_value_through_a_cleaning(gsqlc, tmp_path):
    """CLEANING_BY count(*) >= count_distinct$() at the tuple that makes a
    third group: A (1 tuple), B (2), C (1) are asked against 3 -- all go
    (with B's question asked after A had gone, 2 >= 2, B would stay); then
    D starts alone: count_distinct$ 1, below 3, no cleaning.
    Output: D alone."""
    rows = [(0, A, D1, 1), (0, B, D1, 2), (0, B, D1, 3), (0, C, D1, 4), (0, D, D1, 5)]
    got = run(gsqlc, tmp_path, (
        "SELECT tb, srcIP, count(*) AS n, count$(*) AS pkts, count_distinct$() AS flows\n"
        "FROM [csv].PKTS GROUP BY time/10 AS tb, srcIP\n"
        "CLEANING_WHEN count_distinct$() >= 3 CLEANING_BY count(*) >= count_distinct$()\n"),
        rows)
    assert got == [["0", D, "1", "1", "1"]]
