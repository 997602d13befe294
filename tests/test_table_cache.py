"""The cache of freed table blocks (runtime_c/core/table_mem.c, issue 13):
a large aggregation table a run frees is kept for the library's next large
table -- another table of the same run as it grows, or the next run's --
instead of going back to the kernel, up to a bound, with unchanged results.
GSQLC_TABLE_CACHE_MB=0 turns it off."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import gsqlc
from conftest import REPO

SCHEMA = """\
PROTOCOL PKTS {
    uint    time    get_csv_uint_pos1 (increasing, required);
    uint    src     get_csv_uint_pos2;
    uint    dst     get_csv_uint_pos3;
}
"""
# enough groups per epoch that the LFTA table and the HFTA's epoch tables
# outgrow 2 MiB (the size from which tables are cached)
QUERY = ("DEFINE { query_name 'pairs'; }\n"
         "SELECT tb, src, dst, count(*) as n FROM PKTS GROUP BY time/60 as tb, src, dst\n")
ROWS, PAIRS = 600_000, 150_000


def packets(seed: int = 3) -> pa.Table:
    rng = np.random.default_rng(seed)
    pair = rng.integers(0, PAIRS, ROWS)
    return pa.table({
        "time": pa.array(1_700_000_000 + np.arange(ROWS) // 2_000, pa.uint32()),  # 5 epochs
        "src": pa.array(pair % 1000, pa.uint32()),
        "dst": pa.array(pair // 1000, pa.uint32()),
    })


def reference(t: pa.Table) -> list[tuple]:
    tb = pc.divide(t["time"], pa.scalar(60, pa.uint32()))
    g = pa.table({"tb": tb, "src": t["src"], "dst": t["dst"]}).group_by(
        ["tb", "src", "dst"]).aggregate([([], "count_all")])
    return sorted(zip(*(g[c].to_pylist() for c in ("tb", "src", "dst", "count_all"))))


def rows(t: pa.Table) -> list[tuple]:
    return sorted(zip(*(t[c].to_pylist() for c in ("tb", "src", "dst", "n"))))


@pytest.fixture(scope="module")
def qs(tmp_path_factory):
    d = tmp_path_factory.mktemp("table_cache")
    (d / "schema.txt").write_text(SCHEMA)
    (d / "pairs.gsql").write_text(QUERY)
    return gsqlc.compile([d / "pairs.gsql"], schema=d / "schema.txt")


@pytest.mark.parametrize("threads", [1, 2])
def test_the_next_run_takes_the_tables_the_last_one_freed(qs, threads):
    from gsqlc.runtime import runner
    t = packets()
    want = reference(t)
    lib = qs.compiled.library
    runner.table_cache_trim(lib)
    assert rows(qs.table({"pkts": t}, threads=threads)) == want
    first = runner.table_cache_counts(lib)
    assert first["held_blocks"] > 0 and first["held_bytes"] >= 2 << 20
    assert first["held_bytes"] <= 512 << 20
    assert rows(qs.table({"pkts": t}, threads=threads)) == want
    second = runner.table_cache_counts(lib)
    # the second run's large tables came from what the first one freed
    assert second["reused"] - first["reused"] >= first["held_blocks"] // 2 > 0
    assert second["allocated"] - first["allocated"] < second["reused"] - first["reused"]
    runner.table_cache_trim(lib)
    assert runner.table_cache_counts(lib)["held_bytes"] == 0


def test_a_zero_bound_keeps_nothing(qs):
    """GSQLC_TABLE_CACHE_MB=0: every freed block goes back to the C
    allocator, and the results are the same (a fresh process reads it)."""
    from pathlib import Path
    query = Path(qs.files[0])
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(REPO / 'tests')!r})
        import gsqlc
        from gsqlc.runtime import runner
        from test_table_cache import packets, reference, rows
        qs = gsqlc.compile([{str(query)!r}], schema={str(query.parent / 'schema.txt')!r})
        t = packets()
        for _ in range(2):
            assert rows(qs.table({{"pkts": t}}, threads=1)) == reference(t)
        c = runner.table_cache_counts(qs.compiled.library)
        assert c["held_bytes"] == 0 and c["reused"] == 0 and c["allocated"] > 0, c
        print("ok")
    """)
    env = {**os.environ, "GSQLC_TABLE_CACHE_MB": "0"}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
