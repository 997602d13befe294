"""Live capture (pcap-live:IFACE) on the loopback interface: packets sent
while the query runs come out, and SIGINT ends the run cleanly (flushing)."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import pytest


def _can_capture() -> bool:
    try:
        import ctypes.util
        return os.geteuid() == 0 and ctypes.util.find_library("pcap") is not None
    except Exception:
        return False


@pytest.mark.skipif(not _can_capture(), reason="live capture needs root (CAP_NET_RAW)")
def test_live_loopback_capture(tmp_path, gsqlc):
    port = 40000 + os.getpid() % 20000
    q = tmp_path / "live.gsql"
    q.write_text(f"select destPort, UDP_data from UDP where destPort = {port}")
    warm = gsqlc("explain", q)  # fail fast on a query error
    assert warm.returncode == 0, warm.err
    proc = subprocess.Popen([sys.executable, "-m", "gsqlc", "run", str(q),
                             "--source", "lo=pcap-live:lo"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        deadline = time.time() + 60
        # The build and the capture start take a moment: keep sending until
        # a packet shows up, then send the numbered ones.
        started = False
        while not started and time.time() < deadline and proc.poll() is None:
            sock.sendto(b"warmup", ("127.0.0.1", port))
            started = _line_with(proc, "warmup", 0.3)
        assert started, "the live query never saw a packet"
        for i in range(5):
            sock.sendto(f"msg{i}".encode(), ("127.0.0.1", port))
        time.sleep(1.0)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    lines = [l for l in out.splitlines() if not l.endswith("|warmup")]
    assert lines == [f"{port}|msg{i}" for i in range(5)], (out, err)


def _line_with(proc, text: str, timeout: float) -> bool:
    """True if the process printed a line holding `text` within timeout."""
    import select
    r, _, _ = select.select([proc.stdout], [], [], timeout)
    return bool(r) and text in proc.stdout.readline()
