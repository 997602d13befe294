"""The live benchmark's own parts: the sender sends exactly the frames it
says, of the flows and ports it says, and one measured run accounts for
every frame (needs root and iproute2, as the benchmark does)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import live_bench  # noqa: E402

pytestmark = pytest.mark.skipif(
    sys.platform != "linux" or os.geteuid() != 0 or not shutil.which("ip")
    or not shutil.which("cc"),
    reason="the live benchmark needs Linux, root, iproute2 and a C compiler")


@pytest.fixture(scope="module")
def ns():
    live_bench.build_sender()
    with live_bench.link() as name:
        yield name


def _rx_packets(ns: str) -> int:
    return int(live_bench._in_ns(ns, "cat", "/sys/class/net/vb/statistics/rx_packets"))


def test_sender_sends_exactly_and_paces(ns):
    before = _rx_packets(ns)
    rec = live_bench.send(ns, 20_000, 20_000, 64, os.getpid())
    assert rec["frames"] == 20_000
    assert _rx_packets(ns) - before == 20_000
    # 20,000 frames at 20,000/s: one second, within the pacing's burst
    assert 0.95 <= rec["seconds"] <= 1.5, rec
    assert rec["cpu_s"] >= 0 and rec["cpu_sched_ns"] >= 0


def test_frames_are_the_flows_and_ports_said(ns, tmp_path):
    """tcpdump reads back what the sender wrote: 32 flows over 16 ports."""
    if not shutil.which("tcpdump"):
        pytest.skip("tcpdump is not installed")
    pcap = tmp_path / "sent.pcap"
    cap = subprocess.Popen(["ip", "netns", "exec", ns, "tcpdump", "-i", "vb", "-n", "-w",
                            str(pcap), "-c", "64"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    deadline = time.time() + 30
    while live_bench._bound_packet_sockets(ns) == 0 and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    live_bench.send(ns, 64, 0, 32, os.getpid())
    cap.wait(timeout=30)
    out = subprocess.run(["tcpdump", "-n", "-r", str(pcap)], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True, check=True).stdout.splitlines()
    assert len(out) == 64
    pairs = {(line.split()[2].rsplit(".", 1)[0], line.split()[4].rsplit(".", 1)[0])
             for line in out}
    ports = {int(line.split()[4].rstrip(":").rsplit(".", 1)[1]) for line in out}
    assert len(pairs) == 32
    assert ports == set(range(60000, 60016))
    assert all("UDP, length 18" in line for line in out)


def test_a_measured_run_accounts_for_every_frame(ns, tmp_path):
    rec = live_bench.one_run(ns, tmp_path, "tcpdump", live_bench.tcpdump_argv(),
                             live_bench.tcpdump_counts, 5_000, 50_000, 16, "count")
    assert rec["frames"] == 5_000 and rec["exact"] is True
    assert rec["counted"] + rec["kernel_dropped"] + rec["interface_dropped"] == 5_000
    assert rec["share"] == rec["to_user"] / 5_000


def test_expected_selected():
    # ports 60000 + k % 16; the selected one is 60005
    assert live_bench.expected_selected(16) == 1
    assert live_bench.expected_selected(5) == 0
    assert live_bench.expected_selected(6) == 1
    assert live_bench.expected_selected(1_000_000) == 62_500
