#!/usr/bin/env python3
"""The high-cardinality aggregation benchmark (a benchmark, not a test):
per-flow statistics per minute over an Arrow table held in memory, gsqlc's
Python API against DuckDB and Polars, in interleaved rounds, every answer
checked.

    python bench/highcard_bench.py [--rows N] [--epochs E] [--dist zipf|uniform]
                                   [--groups G] [--zipf-s S] [--rounds R]
                                   [--engines E,...] [--markdown FILE] [--memory]
                                   [--aggregates count_sum|minmax|distinct]

The table: N rows (default 10 M) over E one-minute epochs (default 5),
`time` increasing; each row's (srcIP, destIP) pair drawn from G pair ids
(default 4 M) -- uniformly, or (zipf, the default) with probability
proportional to 1 / rank^S (S = 1.0: ~490,000 distinct pairs per epoch of 2 M
rows, a few hot, most seen once or twice) -- and `len` uniform in 40..1500.
Query (bench/queries/highcard.gsql):

    SELECT tb, srcIP, destIP, count(*) as n, sum(len) as bytes
    FROM PKTS GROUP BY time/60 as tb, srcIP, destIP

(--aggregates minmax: also min(len) as lo, max(len) as hi,
bench/queries/highcard_minmax.gsql; --aggregates distinct: per minute,
count(*) and approx_count_distinct(destIP), the distinct pairs estimated,
bench/queries/highcard_distinct.gsql) and the same in SQL for DuckDB and in
Polars' API.  Engines (each run in
this process, the table built once; the time is the query alone, the result
materialised as Arrow): gsqlc1 / gsqlc2 (`CompiledQuerySet.table`, threads
1 / 2), duckdb1 / duckdb (threads 1 / all), polars (all cores).  Each round
runs every engine once, the order rotated by one; printed per engine are
the median, min and max and DuckDB-on-one-thread's median over the
engine's (above 1: faster than DuckDB on one thread).

Verification, every run: the result's row count and the sum of DuckDB's
hash of each (tb, srcIP, destIP, n, bytes[, lo, hi]) row, against DuckDB's answer on
one thread computed before the rounds; an estimate (distinct) within 3 of
its engine's stated standard errors of DuckDB's exact count(DISTINCT), the
counts equal.

--memory: instead of the rounds, each engine runs once in a process of its
own (the same table built first) and the table prints the memory the run
took at its peak beyond the process's memory before it (Linux: VmHWM after
the run, the peak reset with /proc/self/clear_refs, less VmRSS before), in
MB and in bytes a group of the result.
"""
from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "compiler"))

sys.path.insert(0, str(HERE))

from run_bench import print_round, publish, rotated  # noqa: E402

QUERY = HERE / "queries" / "highcard.gsql"
SCHEMA = HERE / "queries" / "packets_columns.txt"
FLOW_KEYS = ("tb", "srcIP", "destIP")


@dataclass(frozen=True)
class Workload:
    """--aggregates: what each group computes, the same in every engine."""
    query: Path                          # the GSQL query file
    sql: str                             # DuckDB's SQL
    polars: list[tuple[str, str, str]]   # Polars: (result column, column, method)
    keys: tuple[str, ...]                # the group's columns
    cols: tuple[str, ...]                # the aggregates' columns
    # an estimated column: the reference's exact SQL, and each engine's
    # stated relative standard error of the estimate
    exact_sql: str = ""
    stated_error: dict[str, float] = field(default_factory=dict)


_FLOWS = "FROM pk GROUP BY 1, 2, 3"
AGGREGATES = {
    "count_sum": Workload(
        QUERY, "SELECT time // 60 AS tb, srcIP, destIP, count(*) AS n, sum(len) AS bytes "
        + _FLOWS, [("n", "len", "len"), ("bytes", "len", "sum")], FLOW_KEYS, ("n", "bytes")),
    "minmax": Workload(
        HERE / "queries" / "highcard_minmax.gsql",
        "SELECT time // 60 AS tb, srcIP, destIP, count(*) AS n, sum(len) AS bytes, "
        "min(len) AS lo, max(len) AS hi " + _FLOWS,
        [("n", "len", "len"), ("bytes", "len", "sum"), ("lo", "len", "min"),
         ("hi", "len", "max")], FLOW_KEYS, ("n", "bytes", "lo", "hi")),
    # the distinct pairs of each minute (destIP is a bijection of the pair
    # id), estimated: HyperLogLog in every engine -- gsqlc's 1,000 registers
    # (1.04/sqrt(1000)), DuckDB's 64 (1.04/sqrt(64); Ertl's estimator),
    # Polars' HyperLogLog++ (precision not documented: checked as DuckDB's)
    "distinct": Workload(
        HERE / "queries" / "highcard_distinct.gsql",
        "SELECT time // 60 AS tb, count(*) AS n, approx_count_distinct(destIP) AS d "
        "FROM pk GROUP BY 1",
        [("n", "destIP", "len"), ("d", "destIP", "approx_n_unique")], ("tb",), ("n", "d"),
        exact_sql="SELECT time // 60 AS tb, count(*) AS n, count(DISTINCT destIP) AS d "
                  "FROM pk GROUP BY 1",
        stated_error={"gsqlc": 1.04 / 1000 ** 0.5, "duckdb": 1.04 / 8, "polars": 1.04 / 8}),
}
ENGINES = ["gsqlc1", "gsqlc2", "duckdb1", "duckdb", "polars"]


def make_table(rows: int, epochs: int, dist: str, groups: int, zipf_s: float, seed: int = 1):
    import numpy as np
    import pyarrow as pa
    rng = np.random.default_rng(seed)
    t0 = 1_700_000_040   # a minute boundary
    time_col = (t0 + (np.arange(rows, dtype=np.int64) * (epochs * 60)) // rows).astype(np.uint32)
    if dist == "uniform":
        ids = rng.integers(0, groups, rows, dtype=np.int64)
    else:
        k = np.arange(1, groups + 1, dtype=np.float64)
        cdf = np.cumsum(k ** -zipf_s)
        cdf /= cdf[-1]
        ids = np.searchsorted(cdf, rng.random(rows))
    # a pair id to its addresses: a bijection that scatters them (the hot
    # pairs are not neighbours)
    mixed = (ids.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)) ^ np.uint64(0x5851F42D4C957F2D)
    src = (np.uint32(0x0A000000) | (mixed >> np.uint64(40)).astype(np.uint32) & np.uint32(0xFFFFFF))
    dst = (ids.astype(np.uint32) * np.uint32(2654435761)) ^ np.uint32(0xC0A80000)
    length = rng.integers(40, 1501, rows, dtype=np.int64).astype(np.uint32)
    return pa.table({"time": time_col, "srcIP": src.astype(np.uint32), "destIP": dst,
                     "len": length})


def answer_digest(con, result, w: Workload) -> tuple[int, int]:
    """An exact answer's rows and the sum of DuckDB's hash of each."""
    con.register("res", result)
    values = ", ".join(f"{c}::BIGINT" for c in (*w.keys, *w.cols))
    rows = con.execute(f"SELECT count(*), sum(hash({values})::HUGEINT) FROM res").fetchall()
    con.unregister("res")
    n, h = rows[0]
    return int(n), int(h or 0)


def estimate_errors(con, result, exact, w: Workload, engine: str) -> float:
    """An estimating workload's answer against the exact one: every exact
    column equal, every estimate within 3 of the engine's stated standard
    errors (SystemExit if not); the largest relative error."""
    con.register("res", result)
    con.register("exact", exact)
    keys = " AND ".join(f"r.{k} = x.{k}" for k in w.keys)
    est, *exact_cols = w.cols[::-1]
    rows = con.execute(
        f"SELECT count(*), count(r.{w.keys[0]}), "
        + "".join(f"sum((r.{c} IS DISTINCT FROM x.{c})::INT), " for c in exact_cols)
        + f"max(abs(r.{est} - x.{est}) / x.{est}) FROM exact x LEFT JOIN res r ON {keys}"
    ).fetchall()[0]
    con.unregister("res")
    con.unregister("exact")
    n, matched, *wrong, worst = rows
    bound = 3 * w.stated_error[engine.rstrip("12")]
    if n != len(result) or matched != n or any(wrong) or worst > bound:
        raise SystemExit(f"ANSWER MISMATCH: {engine}: groups {len(result)}/{matched} of {n}, "
                         f"exact columns wrong {wrong}, estimate off by {worst:.1%} "
                         f"(3 standard errors: {bound:.1%})")
    return float(worst)


def run_engine(engine: str, table, qs, aggregates: str = "count_sum"):
    import duckdb
    w = AGGREGATES[aggregates]
    sql = w.sql
    t0 = time.perf_counter()
    if engine.startswith("gsqlc"):
        res = qs.table({"pkts": table}, threads=1 if engine == "gsqlc1" else 2,
                       ip_format="int")
    elif engine.startswith("duckdb"):
        con = duckdb.connect()
        if engine == "duckdb1":
            con.execute("SET threads = 1")
        con.register("pk", table)
        rel = con.sql(sql)
        res = (getattr(rel, "to_arrow_table", None) or rel.arrow)()
        con.close()
    else:
        import polars as pl
        aggs = [pl.len().alias(name) if how == "len" else
                getattr(pl.col(col), how)().alias(name) for name, col, how in w.polars]
        res = (pl.from_arrow(table).lazy()
               .group_by((pl.col("time") // 60).alias("tb"), *w.keys[1:])
               .agg(*aggs).collect().to_arrow())
    return time.perf_counter() - t0, res


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def peak_memory(engine: str, a: argparse.Namespace) -> tuple[int, int]:
    """In this process: the table built, the peak reset, one run of engine:
    (bytes the run took at its peak beyond what the process held before,
    groups of the result)."""
    import gsqlc
    table = make_table(a.rows, a.epochs, a.dist, a.groups, a.zipf_s)
    qs = gsqlc.compile([AGGREGATES[a.aggregates].query], schema=SCHEMA)
    gc.collect()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")                      # VmHWM := VmRSS
    before = _status_kb("VmRSS")
    _, res = run_engine(engine, table, qs, a.aggregates)
    return (_status_kb("VmHWM") - before) * 1024, res.num_rows


def memory_table(a: argparse.Namespace, engines: list[str]) -> list[str]:
    """--memory: each engine in a process of its own (peak_memory)."""
    import json
    import subprocess
    lines = ["| engine | peak MB beyond the table | bytes a group |", "| --- | ---: | ---: |"]
    for e in engines:
        code = ("import json, sys, argparse; sys.path.insert(0, %r); import highcard_bench as hb; "
                "print(json.dumps(hb.peak_memory(%r, argparse.Namespace(**%r))))"
                % (str(HERE), e, vars(a)))
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True).stdout
        peak, groups = json.loads(out.strip().splitlines()[-1])
        lines.append(f"| {e} | {peak / 1e6:,.0f} | {peak / groups:,.0f} |")
        print(lines[-1], flush=True)
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--dist", choices=("zipf", "uniform"), default="zipf")
    ap.add_argument("--groups", type=int, default=4_000_000)
    ap.add_argument("--zipf-s", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--markdown", type=Path)
    ap.add_argument("--aggregates", choices=sorted(AGGREGATES), default="count_sum",
                    help="count(*) and sum(len); those and min(len), max(len); or "
                         "(distinct) count(*) and the distinct pairs a minute, estimated")
    ap.add_argument("--memory", action="store_true",
                    help="each engine's peak memory, in a process of its own, not its time")
    a = ap.parse_args(argv)
    import duckdb

    import gsqlc
    engines = a.engines.split(",")
    if a.memory:
        head = (f"{a.rows:,} rows, {a.epochs} epochs, {a.dist} pairs ({a.groups:,} ids): "
                "peak memory of one run, each engine in a process of its own")
        publish([head, "", *memory_table(argparse.Namespace(**{k: v for k, v in vars(a).items()
                                                              if k != "markdown"}), engines)],
                a.markdown)
        return 0
    w = AGGREGATES[a.aggregates]
    table = make_table(a.rows, a.epochs, a.dist, a.groups, a.zipf_s)
    qs = gsqlc.compile([w.query], schema=SCHEMA)
    check = duckdb.connect()
    if w.exact_sql:
        check.register("pk", table)
        rel = check.sql(w.exact_sql)
        ref = (getattr(rel, "to_arrow_table", None) or rel.arrow)()
        check.unregister("pk")
    else:
        _, ref = run_engine("duckdb1", table, qs, a.aggregates)
        want = answer_digest(check, ref, w)
    check.register("ref", ref)
    groups, per_epoch = check.execute(
        f"SELECT count(*), {'max(d)' if w.exact_sql else 'count(*) / count(DISTINCT tb)'} "
        "FROM ref").fetchall()[0]
    check.unregister("ref")
    times: dict[str, list[float]] = {e: [] for e in engines}
    worst: dict[str, float] = {e: 0.0 for e in engines}
    for r in range(a.rounds):
        for e in rotated(engines, r):
            gc.collect()
            dt, res = run_engine(e, table, qs, a.aggregates)
            if w.exact_sql:
                worst[e] = max(worst[e], estimate_errors(check, res, ref, w, e))
            elif (got := answer_digest(check, res, w)) != want:
                raise SystemExit(f"ANSWER MISMATCH: {e}: {got} != {want}")
            times[e].append(dt)
            del res
        print_round(r, times)
    med = {e: statistics.median(v) for e, v in times.items()}
    base = med.get("duckdb1")
    zipf = f"s = {a.zipf_s}, " if a.dist == "zipf" else ""
    if w.exact_sql:
        what = (f"{groups:,} groups (minutes), up to {per_epoch:,} distinct pairs a minute; "
                f"{a.rounds} interleaved rounds; counts equal to DuckDB's exact ones, every "
                "estimate within 3 of its engine's stated standard errors")
    else:
        what = (f"{groups:,} groups, {per_epoch:,.0f} per epoch; {a.rounds} interleaved "
                "rounds; every answer equal to DuckDB's")
    lines = [f"{a.rows:,} rows, {a.epochs} epochs, {a.dist} pairs, "
             f"{', '.join(['count', *w.cols[1:]])} ({zipf}{a.groups:,} ids): {what}", "",
             "| engine | median s | min-max s | DuckDB 1 thread / engine |"
             + (" largest error |" if w.exact_sql else ""),
             "| --- | ---: | ---: | ---: |" + (" ---: |" if w.exact_sql else "")]
    for e in engines:
        ratio = f"{base / med[e]:.2f}x" if base else ""
        lines.append(f"| {e} | {med[e]:.3f} | {min(times[e]):.3f}-{max(times[e]):.3f} | {ratio} |"
                     + (f" {worst[e]:.2%} |" if w.exact_sql else ""))
    publish(lines, a.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
