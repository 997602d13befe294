"""Tigon's CSV-over-TCP source (issue 12, part 6): `csvtcp:HOST:PORT`
connects to a server and reads its CSV rows as they arrive (a stream, as a
pipe is), to the end of the connection; through the CLI and the Python API."""
from __future__ import annotations

import socket
import threading
import time

import pytest

import gsqlc

SCHEMA = """
PROTOCOL R {
    uint t get_csv_uint_pos1 (increasing, required);
    IP   a get_csv_ip_pos2;
    uint v get_csv_uint_pos3;
}
"""
ROWS = [(t, f"10.0.0.{t % 4}", t * 7 % 101) for t in range(300)]


def serve(rows, chunk=37, pause=0.002):
    """A one-connection server sending rows as CSV in chunks that cut lines
    anywhere; returns its port."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    data = "".join(f"{t},{a},{v}\n" for t, a, v in rows).encode()

    def run():
        c, _ = srv.accept()
        with c:
            for i in range(0, len(data), chunk):
                c.sendall(data[i:i + chunk])
                time.sleep(pause)
        srv.close()
    threading.Thread(target=run, daemon=True).start()
    return srv.getsockname()[1]


@pytest.fixture
def files(tmp_path):
    (tmp_path / "s.txt").write_text(SCHEMA)
    (tmp_path / "q.gsql").write_text(
        "DEFINE { query_name 'sel'; }\nSELECT t, a, v FROM [csv].R WHERE v > 20;\n"
        "DEFINE { query_name 'agg'; }\nSELECT tb, count(*) AS n, sum(v) AS s FROM [csv].R "
        "GROUP BY t / 50 AS tb;\n")
    return tmp_path


def test_cli_reads_rows_as_they_arrive(gsqlc, files):
    port = serve(ROWS)
    p = gsqlc("run", files / "q.gsql", "--schema", files / "s.txt", "--source",
              f"csv=csvtcp:127.0.0.1:{port}", "--output", "sel", "--stats")
    assert p.returncode == 0, p.err
    assert p.out.splitlines() == [f"{t}|{a}|{v}" for t, a, v in ROWS if v > 20]


def test_python_api_aggregates_a_tcp_stream(files):
    port = serve(ROWS, chunk=1000)
    qs = gsqlc.compile([files / "q.gsql"], schema=files / "s.txt")
    t = qs.table({"csv": f"csvtcp:localhost:{port}"}, "agg")
    want = {}
    for r in ROWS:
        n, s = want.get(r[0] // 50, (0, 0))
        want[r[0] // 50] = (n + 1, s + r[2])
    assert sorted(tuple(r.values()) for r in t.to_pylist()) == \
        sorted((k, n, s) for k, (n, s) in want.items())


def test_refused_connection_is_a_run_error(gsqlc, files):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()                     # nothing listens there
    p = gsqlc("run", files / "q.gsql", "--schema", files / "s.txt", "--source",
              f"csv=csvtcp:127.0.0.1:{port}", "--output", "sel")
    assert p.returncode == 1
    assert f"cannot connect to csvtcp:127.0.0.1:{port}: Connection refused" in p.err


@pytest.mark.parametrize("uri", ["csvtcp:localhost", "csvtcp:localhost:0", "csvtcp::9000",
                                 "csvtcp:localhost:http"])
def test_bad_addresses_are_usage_errors(gsqlc, files, uri):
    p = gsqlc("run", files / "q.gsql", "--schema", files / "s.txt", "--source", f"csv={uri}",
              "--output", "sel")
    assert p.returncode == 2 and "expected csvtcp:HOST:PORT" in p.err, p.err
