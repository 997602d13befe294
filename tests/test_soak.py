"""The soak (bench/soak.py) for ~20 seconds: gsqlc on two live interfaces (lo and a
veth pair) with heartbeats, a merge and a join, ended by SIGTERM. It exits 0, every
output query has rows, every packet sent is counted or in a drop gsqlc counts, and the
RSS was sampled. Needs root (veth pair, raw and AF_PACKET sockets)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
import soak  # noqa: E402


@pytest.mark.slow
def test_soak_20_seconds(tmp_path):
    veth = f"gsqt{os.getpid() % 10000}x"
    why = soak.cannot_run(veth)
    if why:
        pytest.skip(f"the soak cannot run here: {why}")
    out = tmp_path / "soak"
    # its own ports and veth names, so a soak running at the same time is not disturbed;
    # the veth side pauses 4 s in every 10 s (its idle heartbeats keep the join flowing)
    p = subprocess.run([sys.executable, str(REPO / "bench" / "soak.py"), "--minutes", "0.33",
                        "--pps", "2000", "--warmup", "5", "--out", str(out), "--veth", veth,
                        "--port", "47101", "--idle-period", "10", "--veth-idle", "4",
                        "--no-readme"],
                       capture_output=True, text=True, timeout=900)
    if p.returncode == soak.EXIT_CANNOT:
        pytest.skip(p.stderr.strip())
    r = json.loads((out / "summary.json").read_text())
    assert r["exit_status"] == 0, (out / "stderr.txt").read_text()[-3000:]
    assert r["interrupted"] is True and r["ok"] is True
    assert all(r["output_rows"][q] > 0 for q in soak.OUTPUTS), r["output_rows"]
    assert all(r["stream_tuples"].get(q, 0) > 0 for q in soak.ALL_QUERIES), r["stream_tuples"]
    for iface, d in r["drops"].items():
        assert d["sent"] > 0, iface
        assert d["uncounted"] == 0 and d["missing"] >= 0, (iface, d)
        assert d["counted"] == d["counted_by_sec_join"], (iface, d)
    assert r["rss"]["samples"] >= 5 and r["rss"]["samples_after_warmup"] >= 2, r["rss"]
    assert r["heartbeats"]["sec_join"] > 0 and r["heartbeats"]["all_flows"] > 0
    assert r["duplicate_flow_groups"] == 0 and not r["bad_output_lines"]
    assert (out / "rss.png").stat().st_size > 0 and (out / "rss.csv").exists()
    assert p.returncode == 0, p.stdout[-3000:]
