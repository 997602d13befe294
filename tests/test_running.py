"""Running aggregation: CLOSING_WHEN (issue 12, part 1; Tigon SQL User Manual
6.2.12, seed 003).  At each epoch's end every group is output (HAVING), then
discarded when CLOSING_WHEN holds, else carried into the next epoch with its
regular aggregates empty and its RUNNING user aggregates told (REINIT_).
Checked against a reference written from the manual's rules: a moving sum
over N epochs, the seed's duplicate sequence numbers per TCP connection
closing on FIN over a capture whose connections span epochs, and a query
split into an LFTA sub-aggregate and the running HFTA."""
from __future__ import annotations

import random
from collections import defaultdict

import pytest

import gsqlc
from conftest import REPO, build_sanitized, run_sanitized
from test_read_pcap import eth, ipv4, tcp, write_pcap

SCHEMA = """
PROTOCOL R {
    uint   t   get_csv_uint_pos1 (increasing, required);
    uint   k   get_csv_uint_pos2;
    uint   v   get_csv_uint_pos3;
    bool   fin get_csv_bool_pos4;
}
"""

DEFS = """\
ullong UDAF [RUNNING] total fstring8 (uint);
uint UDAF [RUNNING] msum3 fstring16 (uint);
"""

SOURCE = r"""
#include "hfta_udaf.h"
#include <string.h>
// a running total: kept across epochs
void total_HFTA_AGGR_INIT_(gs_sp_t b) { *(gs_uint64_t *)b = 0; }
void total_HFTA_AGGR_UPDATE_(gs_sp_t b, gs_uint32_t v) { *(gs_uint64_t *)b += v; }
void total_HFTA_AGGR_OUTPUT_(gs_uint64_t *r, gs_sp_t b) { *r = *(gs_uint64_t *)b; }
void total_HFTA_AGGR_DESTROY_(gs_sp_t b) { (void)b; }
void total_HFTA_AGGR_REINIT_(gs_sp_t b) { (void)b; }
// a moving sum over the last 3 epochs of the group (pane per epoch)
struct ms { gs_uint32_t s[3]; gs_uint32_t pos; };
void msum3_HFTA_AGGR_INIT_(gs_sp_t b) { memset(b, 0, sizeof(ms)); }
void msum3_HFTA_AGGR_UPDATE_(gs_sp_t b, gs_uint32_t v) { ms *m = (ms *)b; m->s[m->pos] += v; }
void msum3_HFTA_AGGR_OUTPUT_(gs_uint32_t *r, gs_sp_t b) {
    ms *m = (ms *)b; *r = m->s[0] + m->s[1] + m->s[2];
}
void msum3_HFTA_AGGR_DESTROY_(gs_sp_t b) { (void)b; }
void msum3_HFTA_AGGR_REINIT_(gs_sp_t b) {
    ms *m = (ms *)b; m->pos = (m->pos + 1) % 3; m->s[m->pos] = 0;
}
"""

QUERY = """\
DEFINE { query_name 'run'; }
SELECT tb, k, total(v) AS tot, msum3(v) AS ms, count(*) AS n, sum(v) AS s
FROM [csv].R GROUP BY t AS tb, k
HAVING msum3(v) > 0
CLOSING_WHEN Or_Aggr(fin) OR count(*) = 0
"""


def make_rows(seed=4, n=1500):
    rng = random.Random(seed)
    rows, t = [], 0
    for _ in range(n):
        t += rng.choice([0, 0, 0, 0, 1, 1, 2])       # gaps: epochs with no tuples
        rows.append((t, rng.randrange(6), rng.randrange(50), rng.random() < 0.03))
    return rows


def reference(rows):
    """The manual's running aggregation, epoch by epoch."""
    by_epoch = defaultdict(list)
    for t, k, v, fin in rows:
        by_epoch[t].append((k, v, fin))
    live = {}    # k -> {total, panes: [3], pos}
    out = []
    for tb in sorted(by_epoch):
        cur = {k: {"n": 0, "s": 0, "fin": False} for k in live}
        for k, v, fin in by_epoch[tb]:
            if k not in live:
                live[k] = {"total": 0, "panes": [0, 0, 0], "pos": 0}
                cur[k] = {"n": 0, "s": 0, "fin": False}
            g, c = live[k], cur[k]
            g["total"] += v
            g["panes"][g["pos"]] += v
            c["n"] += 1
            c["s"] += v
            c["fin"] = c["fin"] or fin
        for k in list(live):
            g, c = live[k], cur[k]
            ms = sum(g["panes"])
            if ms > 0:
                out.append((tb, k, g["total"], ms, c["n"], c["s"]))
            if c["fin"] or c["n"] == 0:
                del live[k]
            else:
                g["pos"] = (g["pos"] + 1) % 3
                g["panes"][g["pos"]] = 0
    return sorted(out)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("running")
    (d / "schema.txt").write_text(SCHEMA)
    (d / "r.def").write_text(DEFS)
    (d / "r.cc").write_text(SOURCE)
    (d / "q.gsql").write_text(QUERY)
    rows = make_rows()
    (d / "in.csv").write_text("".join(f"{t},{k},{v},{'TRUE' if f else 'FALSE'}\n"
                                      for t, k, v, f in rows))
    return d, rows


def test_running_aggregation_with_running_user_aggregates(files, gsqlc):
    d, rows = files
    p = gsqlc("run", d / "q.gsql", "--schema", d / "schema.txt", "--functions", d / "r.def",
              "--udf", d / "r.cc", "--source", f"csv=csv:{d / 'in.csv'}", "--format", "csv")
    assert p.returncode == 0, p.err
    header, *lines = p.out.splitlines()
    assert header == "tb,k,tot,ms,n,s"
    got = sorted(tuple(int(x) for x in line.split(",")) for line in lines)
    want = reference(rows)
    assert got == want
    # carried groups report in epochs where they saw nothing (n = 0)
    assert any(r[4] == 0 for r in want) and len(want) > 500


def test_running_aggregation_through_the_api_and_explain(files):
    d, rows = files
    qs = gsqlc.compile([d / "q.gsql"], schema=d / "schema.txt", functions=d / "r.def",
                       udf=d / "r.cc")
    text = qs.explain()
    assert "gsq::running_op" in text and "CLOSING_WHEN (Or_Aggr(fin) OR (count(*) = 0))" in text
    t = qs.table({"csv": f"csv:{d / 'in.csv'}"})
    assert sorted(tuple(r.values()) for r in t.to_pylist()) == reference(rows)


def test_running_aggregation_split_with_an_lfta(files, gsqlc, tmp_path):
    """Regular aggregates only: the LFTA sub-aggregates each epoch (handing it
    on whole) and the running HFTA carries the groups."""
    d, rows = files
    (tmp_path / "s.gsql").write_text(
        "DEFINE { query_name 's'; }\n"
        "SELECT tb, k, count(*) AS n, sum(v) AS s, max(v) AS mx FROM [csv].R\n"
        "GROUP BY t AS tb, k CLOSING_WHEN count(*) = 0\n")
    p = gsqlc("explain", tmp_path / "s.gsql", "--schema", d / "schema.txt")
    assert "sub-aggregate" in p.out.split("[HFTA]")[0] and "gsq::running_op" in p.out
    p = gsqlc("run", tmp_path / "s.gsql", "--schema", d / "schema.txt",
              "--source", f"csv=csv:{d / 'in.csv'}", "--format", "csv")
    assert p.returncode == 0, p.err
    by_epoch = defaultdict(lambda: defaultdict(list))
    for t, k, v, _ in rows:
        by_epoch[t][k].append(v)
    live, want = set(), []
    for tb in sorted(by_epoch):
        groups = by_epoch[tb]
        for k in sorted(live | set(groups)):
            vs = groups.get(k, [])
            want.append((tb, k, len(vs), sum(vs), max(vs) if vs else 0))
        live = {k for k in live | set(groups) if groups.get(k)}
    got = sorted(tuple(int(x) for x in line.split(",")) for line in p.out.splitlines()[1:])
    assert got == sorted(want)


SEED_DEFS = "int UDAF [RUNNING] sum_of_dups fstring8 (uint);\n"

# The seed's running aggregate: duplicate sequence numbers over a whole
# connection -- the sequence numbers seen live across epochs.
SEED_SOURCE = r"""
#include "hfta_udaf.h"
#include <set>
struct dups { std::set<gs_uint32_t> *seen; gs_int32_t n; };
void sum_of_dups_HFTA_AGGR_INIT_(gs_sp_t b) {
    dups *d = (dups *)b; d->seen = new std::set<gs_uint32_t>(); d->n = 0;
}
void sum_of_dups_HFTA_AGGR_UPDATE_(gs_sp_t b, gs_uint32_t seq) {
    dups *d = (dups *)b;
    if (!d->seen->insert(seq).second) d->n++;
}
void sum_of_dups_HFTA_AGGR_OUTPUT_(gs_int32_t *r, gs_sp_t b) { *r = ((dups *)b)->n; }
void sum_of_dups_HFTA_AGGR_DESTROY_(gs_sp_t b) { delete ((dups *)b)->seen; }
void sum_of_dups_HFTA_AGGR_REINIT_(gs_sp_t b) { (void)b; }
"""

SEED_QUERY = """\
DEFINE { query_name 'dups'; }
SELECT tb, srcIP, destIP, srcPort, destPort, sum_of_dups(sequence_number) AS dups,
       count(*) AS n
FROM TCP
WHERE protocol = 6
GROUP BY time/60 AS tb, srcIP, destIP, srcPort, destPort
CLOSING_WHEN Or_Aggr(fin) = TRUE OR count(*) = 0
"""


def tcp_capture(path, seed=9):
    """Connections of 40-200 packets over 0-6 minutes, some retransmitting
    (a repeated sequence number), each ending with FIN; packets in time
    order.  Returns the packets as (time, conn, seq, fin)."""
    rng = random.Random(seed)
    pkts = []
    for c in range(30):
        start = rng.randrange(0, 300)
        n = rng.randrange(40, 200)
        span = rng.randrange(1, 360)
        seqs, seq = [], rng.randrange(1 << 20)
        for i in range(n):
            if seqs and rng.random() < 0.1:
                seqs.append(rng.choice(seqs))          # a retransmission
            else:
                seq += rng.randrange(1, 1400)
                seqs.append(seq)
        times = sorted(start + rng.random() * span for _ in range(n))
        for i, (tm, sq) in enumerate(zip(times, seqs)):
            pkts.append((tm, c, sq, i == n - 1))
    pkts.sort()
    records = []
    for tm, c, sq, fin in pkts:
        flags = 0x11 if fin else 0x10
        frame = eth(ipv4(6, tcp(10000 + c, 80, b"x" * 10, seq=sq, flags=flags),
                         src=f"10.0.{c // 200}.{c % 200 + 1}", dst="10.9.9.9"))
        sec = int(tm)
        records.append((1_000_000 + sec, int((tm - sec) * 1e6), frame))
    write_pcap(path, records)
    return [(1_000_000 + int(tm), c, sq, fin) for tm, c, sq, fin in pkts]


def seed_reference(pkts):
    by_epoch = defaultdict(list)
    for tm, c, sq, fin in pkts:
        by_epoch[tm // 60].append((c, sq, fin))
    live, out = {}, []
    for tb in sorted(by_epoch):
        cur = {c: [0, False] for c in live}
        for c, sq, fin in by_epoch[tb]:
            if c not in live:
                live[c] = [set(), 0]
                cur[c] = [0, False]
            seen = live[c][0]
            if sq in seen:
                live[c][1] += 1
            seen.add(sq)
            cur[c][0] += 1
            cur[c][1] = cur[c][1] or fin
        for c in list(live):
            out.append((tb, 10000 + c, live[c][1], cur[c][0]))
            if cur[c][1] or cur[c][0] == 0:
                del live[c]
    return sorted(out)


def test_seed_003_duplicate_sequence_numbers_per_connection(tmp_path, gsqlc):
    pkts = tcp_capture(tmp_path / "tcp.pcap")
    (tmp_path / "d.def").write_text(SEED_DEFS)
    (tmp_path / "d.cc").write_text(SEED_SOURCE)
    (tmp_path / "q.gsql").write_text(SEED_QUERY)
    p = gsqlc("run", tmp_path / "q.gsql", "--functions", tmp_path / "d.def",
              "--udf", tmp_path / "d.cc", "--source", f"default=pcap:{tmp_path / 'tcp.pcap'}",
              "--format", "csv")
    assert p.returncode == 0, p.err
    got = sorted((int(r[0]), int(r[3]), int(r[5]), int(r[6]))
                 for r in (line.split(",") for line in p.out.splitlines()[1:]))
    want = seed_reference(pkts)
    assert got == want
    # connections span epochs, and a per-epoch aggregate would undercount
    # their duplicates (the seed's point): a retransmission of a sequence
    # number first seen in an earlier minute
    per_conn_epochs = defaultdict(set)
    for tb, port, *_ in want:
        per_conn_epochs[port].add(tb)
    assert max(len(v) for v in per_conn_epochs.values()) >= 3
    within = defaultdict(set)
    per_epoch_dups = 0
    for tm, c, sq, _ in pkts:
        key = (c, tm // 60)
        per_epoch_dups += sq in within[key]
        within[key].add(sq)
    running_dups = sum(max(r[2] for r in want if r[1] == port) for port in per_conn_epochs)
    assert running_dups > per_epoch_dups


def test_closing_when_errors_are_located(tmp_path, gsqlc):
    (tmp_path / "a.gsql").write_text("SELECT time FROM TCP CLOSING_WHEN time > 3\n")
    p = gsqlc("explain", tmp_path / "a.gsql")
    assert p.returncode != 0
    assert f"{tmp_path / 'a.gsql'}:1:35: error [closing-when]" in p.err, p.err
    (tmp_path / "b.gsql").write_text(
        "SELECT tb, count(*) AS n FROM TCP GROUP BY time/60 AS tb CLOSING_WHEN count(*)\n")
    p = gsqlc("explain", tmp_path / "b.gsql")
    assert p.returncode != 0 and "CLOSING_WHEN must be bool" in p.err, p.err


def test_moving_average_example_runs(gsqlc, tmp_path):
    """examples/running: the moving average over the last N epochs."""
    ex = REPO / "examples" / "running"
    p = gsqlc("run", ex / "moving_avg.gsql", "--schema", ex / "schema.txt",
              "--functions", ex / "moving_avg.def", "--udf", ex / "moving_avg.cc",
              "--source", f"sales=csv:{ex / 'sales.csv'}", "--format", "csv")
    assert p.returncode == 0, p.err
    rows = [line.split(",") for line in (ex / "sales.csv").read_text().splitlines()]
    per = defaultdict(lambda: defaultdict(list))
    for ts, store, qty in rows:
        per[int(ts) // 60][store].append(int(qty))
    # the reference: mean quantity per sale over the store's last 3 minutes,
    # a store closing after a minute without sales
    live, want = {}, []
    for m in sorted(per):
        for s in sorted(set(live) | set(per[m])):
            panes = live.setdefault(s, [])
            panes.append(per[m].get(s, []))
            window = [q for pane in panes[-3:] for q in pane]
            want.append((m * 60, s, round(sum(window) / len(window), 3)))
            if not per[m].get(s):
                del live[s]
    got = sorted((int(a), b, round(float(c), 3)) for a, b, c in
                 (line.split(",") for line in p.out.splitlines()[1:]))
    assert got == sorted(want)


@pytest.mark.slow
def test_sanitized_running_aggregation(files, tmp_path):
    d, rows = files
    runner = build_sanitized([d / "q.gsql", "--schema", d / "schema.txt", "--functions",
                             d / "r.def", "--udf", d / "r.cc"], tmp_path / "build")
    r = run_sanitized(runner, "--source", f"csv=csv:{d / 'in.csv'}", "--output", "run")
    assert r.returncode == 0, r.stderr[-3000:]
    assert len(r.stdout.splitlines()) == len(reference(rows))

