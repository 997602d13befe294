"""gsqlc.spark.storage (issue 14, part 2): input files on any filesystem pyarrow
supports, planned without reading Parquet footers -- local and on an
S3-compatible server on loopback (moto), with the same answers."""
from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from conftest import put_parquet
from gsqlc.errors import UsageError
from gsqlc.spark import storage


def table(n: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({"time": pa.array(np.arange(n), pa.uint32()),
                     "v": pa.array(rng.integers(0, 1 << 40, n), pa.int64())})


def read_all(fs, units) -> pa.Table:
    return pa.concat_tables(storage.read_pieces(fs, u).read_all() for u in units)


def test_pieces_of_one_file_cover_its_row_groups_once_in_order(tmp_path):
    t = table(10_000)
    pq.write_table(t, tmp_path / "a.parquet", row_group_size=1_000)   # 10 row groups
    fs = pafs.LocalFileSystem()
    files = storage.list_files(fs, [str(tmp_path)])
    for target in (1, 3, 4, 7, 12):      # 12: more pieces than row groups, some empty
        units = storage.plan_pieces(files, target)
        assert len(units) == target
        assert read_all(fs, units).equals(t), target


def test_many_files_make_runs_of_whole_files_of_about_equal_bytes(tmp_path):
    fs = pafs.LocalFileSystem()
    parts = [table(1_000 * (i + 1), i) for i in range(6)]
    for i, t in enumerate(parts):
        pq.write_table(t, tmp_path / f"part{i}.parquet")
    files = storage.list_files(fs, [str(tmp_path)])
    units = storage.plan_pieces(files, 3)
    assert len(units) == 3
    assert [p for u in units for p, _, _ in u] == [p for p, _ in files]   # in order, once
    assert all(k == 0 and n == 1 for u in units for _, k, n in u)
    sizes = [sum(dict(files)[p] for p, _, _ in u) for u in units]
    assert max(sizes) < 2.5 * min(sizes)
    assert read_all(fs, units).equals(pa.concat_tables(parts))


def test_listing_skips_hidden_files_and_says_what_is_missing(tmp_path):
    fs = pafs.LocalFileSystem()
    pq.write_table(table(10), tmp_path / "a.parquet")
    (tmp_path / "_SUCCESS").write_text("")
    (tmp_path / ".a.parquet.crc").write_text("x")
    (tmp_path / "_temporary").mkdir()
    (tmp_path / "_temporary" / "b.parquet").write_text("partial")
    (tmp_path / "sub").mkdir()
    pq.write_table(table(5), tmp_path / "sub" / "c.parquet")
    got = [os.path.relpath(p, tmp_path) for p, _ in storage.list_files(fs, [str(tmp_path)])]
    assert got == ["a.parquet", os.path.join("sub", "c.parquet")]
    with pytest.raises(FileNotFoundError, match="nope"):
        storage.list_files(fs, [str(tmp_path / "nope")])


def test_locations_resolve_local_paths_file_uris_and_paths_in_a_given_filesystem(tmp_path):
    fs, p = storage.resolve(tmp_path / "x.parquet")
    assert isinstance(fs, pafs.LocalFileSystem) and p == str(tmp_path / "x.parquet")
    fs, p = storage.resolve(f"file://{tmp_path}/a%20b.parquet")
    assert isinstance(fs, pafs.LocalFileSystem) and p == f"{tmp_path}/a b.parquet"
    given = pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem())
    assert storage.resolve("s3a://bucket/dir/f.parquet", given) == (given, "bucket/dir/f.parquet")
    assert storage.resolve("rel/f.parquet", given) == (given, "rel/f.parquet")
    with pytest.raises(UsageError, match="nosuchscheme://x/y: pyarrow cannot open"):
        storage.resolve("nosuchscheme://x/y")


def test_parquet_on_an_s3_server_reads_as_the_same_data_locally(s3, tmp_path, monkeypatch):
    fs, client, hostport = s3
    t = table(30_000, 3)
    for i in range(3):
        put_parquet(client, f"tbl/part{i}.parquet", t.slice(i * 10_000, 10_000), 2_500)
        pq.write_table(t.slice(i * 10_000, 10_000), tmp_path / f"part{i}.parquet",
                       row_group_size=2_500)
    client.put_object(Bucket="gsqlc", Key="tbl/_SUCCESS", Body=b"")
    local = pafs.LocalFileSystem()
    lfiles = storage.list_files(local, [str(tmp_path)])
    for fs_, loc in ((fs, "gsqlc/tbl"), (local, str(tmp_path))):
        files = storage.list_files(fs_, [loc])
        assert [os.path.basename(p) for p, _ in files] == [os.path.basename(p) for p, _ in lfiles]
        assert read_all(fs_, storage.plan_pieces(files, 4)).equals(t)
    # a URI alone, credentials from the environment (as pyarrow reads them);
    # s3a:// (Hadoop's name) is s3:// to pyarrow
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    fs_u, p = storage.resolve(f"s3a://gsqlc/tbl?endpoint_override={hostport}&scheme=http"
                              "&region=us-east-1")
    assert p == "gsqlc/tbl"
    assert read_all(fs_u, storage.plan_pieces(storage.list_files(fs_u, [p]), 2)).equals(t)


def test_hadoop_s3a_settings_become_a_pyarrow_s3_filesystem(s3):
    _, client, hostport = s3
    t = table(1_000, 4)
    put_parquet(client, "hadoop/one.parquet", t, 300)
    assert storage.s3_from_hadoop({}) is None      # nothing set: pyarrow's defaults
    conf = {"fs.s3a.endpoint": f"http://{hostport}", "fs.s3a.access.key": "testing",
            "fs.s3a.secret.key": "testing", "fs.s3a.path.style.access": "true",
            "fs.s3a.endpoint.region": "us-east-1"}
    fs = storage.s3_from_hadoop(conf)
    assert read_all(fs, storage.plan_pieces(storage.list_files(fs, ["gsqlc/hadoop"]), 1)).equals(t)
    # an endpoint without a scheme takes fs.s3a.connection.ssl.enabled
    fs = storage.s3_from_hadoop({**conf, "fs.s3a.endpoint": hostport,
                                 "fs.s3a.connection.ssl.enabled": "false"})
    assert storage.parquet_schema(fs, "gsqlc/hadoop/one.parquet").equals(t.schema)


def test_a_remote_file_gets_a_local_copy_that_is_removed(s3, tmp_path):
    fs, client, _ = s3
    client.put_object(Bucket="gsqlc", Key="blob/x.bin", Body=b"\x00\x01" * 5_000_000)
    with storage.local_path(fs, "gsqlc/blob/x.bin") as p:
        assert open(p, "rb").read() == b"\x00\x01" * 5_000_000
    assert not os.path.exists(p)
    local = tmp_path / "y.bin"
    local.write_bytes(b"abc")
    with storage.local_path(pafs.LocalFileSystem(), str(local)) as p:
        assert p == str(local)
    assert local.exists()           # a local file is read in place, never removed


def test_csv_pieces_are_whole_lines_and_malformed_rows_are_counted_once(tmp_path):
    """read_csv_pieces: however a file is cut into byte ranges, every line is
    read once (the header only by the first piece); a row with another number
    of fields, a value that is no number or out of its type's range is
    counted and skipped; an empty field is null."""
    lines = [f"{i},{i * 2},x{i}" for i in range(1000)]
    lines[10] = "10,abc,x10"            # no integer
    lines[20] = "20,5"                  # a field missing
    lines[30] = "99999999999,3,z"       # beyond uint32
    lines[40] = "40,,q"                 # an empty field: null, kept
    path = tmp_path / "a.csv"
    path.write_text("h1,h2,h3\n" + "\n".join(lines) + "\n")
    fs = pafs.LocalFileSystem()
    names, types = ["a", "b", "c"], [pa.uint32(), pa.int64(), pa.string()]
    whole = None
    for n in (1, 3, 7, 64):
        bad = storage.MalformedCount()
        t = pa.concat_tables(storage.read_csv_pieces(fs, [(str(path), k, n)], names, types,
                                                     ",", True, bad).read_all()
                             for k in range(n))
        assert t.num_rows == 997 and bad.rows == 3, n
        assert t.column("b").null_count == 1 and 10 not in t.column("a").to_pylist()
        assert any("has 2 fields, not 3" in r for r in bad.reasons)
        whole = whole or t
        assert t.equals(whole)
    # reading a subset of the columns judges only those values
    bad = storage.MalformedCount()
    t = storage.read_csv_pieces(fs, [(str(path), 0, 1)], names, types, ",", True, bad,
                                ["c", "a"]).read_all()
    assert t.column_names == ["c", "a"] and t.num_rows == 998 and bad.rows == 2
