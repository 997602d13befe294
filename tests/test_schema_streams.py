"""A schema STREAM read as a source (issue 12, part 6): `FROM flows` where
the schema declares `STREAM flows {...}` reads tuples of its fields, in
declaration order, from the interface of its name -- a CSV file, Arrow data
matched by column name, or a GDAT file another query (or Tigon) wrote."""
from __future__ import annotations

import random
from collections import defaultdict

import pyarrow as pa
import pytest

import gsqlc

SCHEMA = """
STREAM flows {
    uint   tb (increasing);
    IP     src;
    ullong bytes;
    string app;
}
"""

# what the reading query set declares: the GDAT file's STREAM
READER_SCHEMA = """
STREAM web {
    uint   tb (increasing);
    IP     src;
    ullong bytes;
}
"""

QUERIES = """\
DEFINE { query_name 'per_src'; }
SELECT tb, src, sum(bytes) AS b, count(*) AS n FROM flows GROUP BY tb, src;
DEFINE { query_name 'web'; }
SELECT tb, src, bytes FROM flows WHERE app = 'web'
"""


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("streams")
    (d / "schema.txt").write_text(SCHEMA)
    (d / "q.gsql").write_text(QUERIES)
    rng = random.Random(8)
    rows = [(i // 40, f"10.0.0.{rng.randrange(1, 6)}", rng.randrange(1, 1500),
             rng.choice(["web", "dns", "ssh"])) for i in range(400)]
    (d / "flows.csv").write_text("".join(f"{t},{s},{b},{a}\n" for t, s, b, a in rows))
    return d, rows


def per_src(rows):
    g = defaultdict(lambda: [0, 0])
    for t, s, b, _ in rows:
        g[(t, s)][0] += b
        g[(t, s)][1] += 1
    return sorted((t, s, b, n) for (t, s), (b, n) in g.items())


def test_stream_from_a_csv_file(files, gsqlc):
    d, rows = files
    p = gsqlc("run", d / "q.gsql", "--schema", d / "schema.txt",
              "--source", f"flows=csv:{d / 'flows.csv'}", "--output", "per_src",
              "--format", "csv")
    assert p.returncode == 0, p.err
    got = sorted((int(t), s, int(b), int(n)) for t, s, b, n in
                 (line.split(",") for line in p.out.splitlines()[1:]))
    assert got == per_src(rows)
    p = gsqlc("explain", d / "q.gsql", "--schema", d / "schema.txt")
    assert "reads interface flows, PROTOCOL flows" in p.out, p.out


def test_stream_from_arrow_data(files):
    d, rows = files
    t = pa.table({"tb": pa.array([r[0] for r in rows], pa.uint32()),
                  "src": [r[1] for r in rows],
                  "bytes": pa.array([r[2] for r in rows], pa.uint64()),
                  "app": [r[3] for r in rows]})
    qs = gsqlc.compile([d / "q.gsql"], schema=d / "schema.txt")
    out = qs.table({"flows": t}, output="per_src")
    assert sorted(tuple(r.values()) for r in out.to_pylist()) == per_src(rows)


def test_stream_from_a_gdat_file_another_query_wrote(files, gsqlc, tmp_path):
    """Query `web` writes a GDAT file (its STREAM); a second query set reads
    it back through the schema's STREAM web."""
    d, rows = files
    gdat = tmp_path / "web.gdat"
    p = gsqlc("run", d / "q.gsql", "--schema", d / "schema.txt",
              "--source", f"flows=csv:{d / 'flows.csv'}", "--output", "web",
              "--format", "gdat", "--output-file", gdat)
    assert p.returncode == 0, p.err
    (tmp_path / "r.gsql").write_text("SELECT tb, sum(bytes) AS b FROM web GROUP BY tb\n")
    (tmp_path / "reader.txt").write_text(READER_SCHEMA)
    p = gsqlc("run", tmp_path / "r.gsql", "--schema", tmp_path / "reader.txt",
              "--source", f"web=gdat:{gdat}", "--format", "csv")
    assert p.returncode == 0, p.err
    want = defaultdict(int)
    for t, _, b, a in rows:
        if a == "web":
            want[t] += b
    got = {int(t): int(b) for t, b in (line.split(",") for line in p.out.splitlines()[1:])}
    assert got == dict(want)


def test_an_unbound_stream_names_its_interface(files, gsqlc):
    d, _ = files
    p = gsqlc("run", d / "q.gsql", "--schema", d / "schema.txt")
    assert p.returncode != 0
    assert "interface 'flows' is not bound" in p.err, p.err
