"""The limits gsqlc states (docs/limits.md, "Limits") are enforced with a clear
message, not a crash: the groups an HFTA aggregation holds open
(max_groups), a tuple's size, a string literal far larger than any query
needs."""
from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa
import pytest

import gsqlc

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
import pktgen  # noqa: E402

PER_PAIR = ("DEFINE { query_name 'per_pair'; }\n"
            "SELECT tb, srcIP, destIP, count(*) AS n FROM IPV4 "
            "GROUP BY time/60 AS tb, srcIP, destIP\n")


@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    d = tmp_path_factory.mktemp("limits")
    pcap = d / "p.pcap"
    pktgen.generate(str(pcap), 60_000, 3000, pps=1000, seed=9)   # 3,000 pairs a minute
    q = d / "per_pair.gsql"
    q.write_text(PER_PAIR)
    return pcap, q


def test_max_groups_through_the_cli(gsqlc, capture):
    pcap, q = capture
    whole = gsqlc("run", q, "--source", f"eth0=pcap:{pcap}")
    assert whole.returncode == 0, whole.err
    rows = whole.out.splitlines()
    per_minute = max(sum(1 for r in rows if r.startswith(f"{tb}|"))
                     for tb in {r.split("|")[0] for r in rows})
    assert per_minute > 1000
    ok = gsqlc("run", q, "--source", f"eth0=pcap:{pcap}", "--max-groups", str(2 * per_minute + 10))
    assert ok.returncode == 0 and ok.out == whole.out
    over = gsqlc("run", q, "--source", f"eth0=pcap:{pcap}", "--max-groups", "500")
    assert over.returncode == 1
    assert ("gsqlc: error: per_pair: more than 500 groups open at once: the limit max_groups "
            "(--max-groups N, run(max_groups=N))") in over.err
    bad = gsqlc("run", q, "--source", f"eth0=pcap:{pcap}", "--max-groups", "0")
    assert bad.returncode == 2 and "--max-groups" in bad.err


def test_max_groups_through_the_api(capture):
    pcap, q = capture
    qs = gsqlc.compile([q])
    whole = qs.table({"eth0": f"pcap:{pcap}"})
    assert qs.table({"eth0": f"pcap:{pcap}"}, max_groups=1 << 20).equals(whole)
    with pytest.raises(gsqlc.RunError, match="per_pair: more than 100 groups open at once"):
        qs.table({"eth0": f"pcap:{pcap}"}, max_groups=100)
    for bad in (0, -1, 1.5, True, "10"):
        with pytest.raises(gsqlc.UsageError, match="max_groups must be a positive integer"):
            qs.run({"eth0": f"pcap:{pcap}"}, max_groups=bad)


def test_max_groups_over_arrow_on_several_threads(tmp_path):
    # the HFTA run of a split run holds the merged groups: the same limit
    schema = tmp_path / "s.txt"
    schema.write_text("PROTOCOL S { uint t get_csv_uint_pos1 (increasing); "
                      "uint k get_csv_uint_pos2; }\n")
    q = tmp_path / "q.gsql"
    q.write_text("DEFINE { query_name 'per_key'; }\n"
                 "SELECT t, k, count(*) AS n FROM S GROUP BY t, k\n")
    qs = gsqlc.compile([q], schema=schema)
    n = 400_000
    t = pa.table({"t": pa.array([0] * n, pa.uint32()),
                  "k": pa.array([i % 50_000 for i in range(n)], pa.uint32())})
    assert qs.table({"s": t}, threads=2).num_rows == 50_000
    with pytest.raises(gsqlc.RunError, match="per_key: more than 20000 groups open at once"):
        qs.table({"s": t}, threads=2, max_groups=20_000)


def test_a_large_string_literal_reaches_the_output_unchanged(tmp_path):
    # 400 KB of bytes that C and printf treat specially: escaped, never
    # pasted into the generated code as they are
    text = "*/ %n %s \" ' \\\\ \t ?" * 20_000
    q = tmp_path / "lit.gsql"
    body = text.replace("'", "\\'")
    q.write_text(f"DEFINE {{ query_name 'lit'; }}\nSELECT time, '{body}' AS s FROM PKT\n")
    qs = gsqlc.compile([q])
    out = qs.table({"eth0": f"pcap:{REPO / 'examples' / 'trace.pcap'}"}, strings="bytes")
    want = text.replace("\\\\", "\\").encode()
    assert out.num_rows == 1455
    assert set(out["s"].to_pylist()) == {want}
