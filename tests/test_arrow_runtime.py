"""Arrow C data interface input and output of the C runtime: a compiled query
set (per_minute over examples/csv, a selection over every GSQL type, a
packet query, a query on another interface) driven through cffi with
pyarrow -- Arrow sources (gsqlc_bind_arrow), Arrow-fed streams
(gsqlc_bind_stream_arrow), Arrow sinks (gsqlc_add_arrow_sink) and the
pruning of nodes no sink needs.  The scenarios live in arrow_scenarios.py;
they also run in a sanitized child (ASan + UBSan)."""
from __future__ import annotations

import os
import select
import subprocess
import sys
from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow")

import arrow_scenarios as A  # noqa: E402
from arrow_scenarios import Run, ffi  # noqa: E402
from conftest import assert_sanitized, run_gsqlc  # noqa: E402

HERE = Path(__file__).resolve().parent


def _build(d: Path, out: str, *flags: str) -> Path:
    files, schemas = A.write_sources(d)
    args = [str(f) for f in files]
    for s in schemas:
        args += ["--schema", str(s)]
    p = run_gsqlc("compile", *args, "-o", str(d / out), "--build", "--werror", *flags,
                  timeout=900)
    assert p.returncode == 0, p.stderr.decode(errors="replace")
    return d / out / "build" / "libgsqlc_queryset.so"


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("arrow")


@pytest.fixture(scope="module")
def lib(work):
    return ffi.dlopen(str(_build(work, "qs")))


def stream_released(st) -> bool:
    return st.release == ffi.NULL


# ---------------------------------------------------------------- sources

def test_arrow_source_gives_the_csv_rows(lib):
    ra, rb = A.scenario_source_matches_csv(lib)
    src = rb.stats["sources"][0]
    assert src["kind"] == "arrow" and src["iface"] == "default"
    assert src["rows_read"] == 50 and src["rows_rejected"] == 0 and src["bytes_read"] > 0
    assert rb.report == ""
    sink = next(k for k in rb.stats["sinks"] if k["query"] == "sales_all")
    assert sink["format"] == "arrow" and sink["tuples"] == 50 and sink["batches"] == 8
    # the Arrow types of the sink, and the values against the CSV sink's text
    t = rb.table("sales_all")
    assert [str(f.type) for f in t.schema] == ["uint32", "binary", "binary", "uint32", "double",
                                               "uint32"]
    assert len(rb.table("per_minute")) == 11


def test_arrow_sink_matches_the_text_sink(lib, tmp_path):
    r = Run(lib)
    r.arrow("default", A.sales_table())
    r.sink("per_minute")
    r.file_sink("per_minute", tmp_path / "pm.csv", "csv")
    res = r.run()
    assert res.rc == 0, res
    lines = (tmp_path / "pm.csv").read_text().splitlines()
    assert lines[0] == "minute,store,sales,units,revenue,max_price"
    want = sorted(tuple(l.split(",")) for l in lines[1:])
    got = sorted((str(x["minute"]), x["store"].decode(), str(x["sales"]), str(x["units"]),
                  "%f" % x["revenue"], "%f" % x["max_price"]) for x in res.rows("per_minute"))
    assert got == want


def test_names_match_ignoring_case_and_extra_columns_are_ignored(lib):
    t = A.sales_table()
    t = t.rename_columns(["TS", "Store", "ITEM", "qty", "PRICE", "client"])
    t = t.append_column("extra", pa.array(range(len(t)), pa.int64()))
    r = Run(lib)
    r.arrow("default", t)
    r.sink("per_minute")
    res = r.run()
    assert res.rc == 0, res
    base = Run(lib)
    base.csv("default", A.SALES_CSV)
    base.sink("per_minute")
    assert res.table("per_minute").equals(base.run().table("per_minute"))


def test_other_arrow_types_convert(lib):
    # narrower / unsigned integers, float32, large strings, IP from uint32
    t = A.sales_table()
    ip = [int.from_bytes(bytes(int(x) for x in s.split(".")), "big")
          for s in t.column("client").to_pylist()]
    t2 = pa.table({
        "ts": t.column("ts").cast(pa.uint64()),
        "store": t.column("store").cast(pa.large_string()),
        "item": t.column("item").cast(pa.binary()),
        "qty": t.column("qty").cast(pa.int8()),
        "price": t.column("price"),
        "client": pa.array(ip, pa.uint32()),
    })
    r = Run(lib)
    r.arrow("default", t2)
    r.sink("sales_all")
    res = r.run()
    assert res.rc == 0, res
    base = Run(lib)
    base.csv("default", A.SALES_CSV)
    base.sink("sales_all")
    assert res.table("sales_all").equals(base.run().table("sales_all"))


def test_nulls_are_unavailable_fields(lib):
    A.scenario_nulls(lib)


def test_out_of_range_and_invalid_values_reject_rows(lib):
    A.scenario_rejects(lib)
    t = A.sales_table()
    client = t.column("client").to_pylist()
    client[4] = "not.an.ip"
    t = t.set_column(5, "client", pa.array(client))
    r = Run(lib)
    r.arrow("default", t)
    r.sink("sales_all")
    res = r.run()
    assert res.rc == 0, res
    assert res.stats["sources"][0]["rows_rejected"] == 1
    assert "row 5: column 'client': 'not.an.ip' is not a valid IP" in res.report
    assert res.table("sales_all").num_rows == 49


def test_missing_column_is_an_error_before_any_row(lib):
    t = A.sales_table().drop_columns(["price"])
    r = Run(lib)
    r.arrow("default", t)
    r.sink("per_minute")
    res = r.run()
    assert res.rc == -1
    assert res.error.startswith("interface 'default': the Arrow stream has no column for field "
                                "'price' (float) of PROTOCOL SALES (its columns: ts, store, item, "
                                "qty, client)"), res.error
    assert res.stats["sources"][0]["rows_read"] == 0
    assert res.calls["per_minute"] == 0
    assert all(map(stream_released, r.streams))


def test_incompatible_type_is_an_error(lib):
    t = A.sales_table()
    t = t.set_column(3, "qty", t.column("qty").cast(pa.string()))
    r = Run(lib)
    r.arrow("default", t)
    r.sink("per_minute")
    res = r.run()
    assert res.rc == -1
    assert res.error == ("interface 'default': field 'qty' of PROTOCOL SALES is uint, but Arrow "
                         "column 'qty' has format 'u' (utf8); expected an integer type (int8 .. "
                         "int64, uint8 .. uint64)")
    t = A.sales_table()
    t = t.set_column(1, "store", t.column("store").dictionary_encode())
    r = Run(lib)
    r.arrow("default", t)
    r.sink("per_minute")
    res = r.run()
    assert res.rc == -1 and "dictionary-encoded columns are not read" in res.error, res


def test_packet_protocol_cannot_read_arrow(lib):
    r = Run(lib)
    r.arrow("pk", A.sales_table())
    r.sink("pk_q")
    res = r.run()
    assert res.rc == -1
    assert ("PROTOCOL TCP reads packets; an Arrow source feeds CSV-style PROTOCOLs "
            "(fields get_csv_*)") in res.error, res.error


def test_stream_error_fails_the_run(lib):
    t = A.sales_table()

    def gen():
        yield from t.to_batches(10)[:2]
        raise ValueError("the producer broke")

    r = Run(lib)
    r.arrow("default", pa.RecordBatchReader.from_batches(t.schema, gen()))
    r.sink("sales_all")
    res = r.run()
    assert res.rc == -1
    assert res.error.startswith("interface 'default': the Arrow stream failed: "), res.error
    assert "the producer broke" in res.error


def test_empty_stream(lib):
    t = A.sales_table().slice(0, 0)
    r = Run(lib)
    r.arrow("default", t)
    r.sink("per_minute")
    res = r.run()
    assert res.rc == 0, res
    assert res.calls["per_minute"] == 0 and res.outputs["per_minute"] is None


def test_streaming_run_delivers_after_each_batch(work, lib):
    """Reading csv:- (a streaming run), the Arrow sink hands over what each
    batch of input produced without waiting for batch_rows rows."""
    # The child reports its sink's first delivery; we send the rest of the
    # input only after it (no sleep: a loaded machine only makes it slower).
    script = ("import sys, threading, time, arrow_scenarios as A\n"
              "r = A.Run(A.ffi.dlopen(sys.argv[1]))\n"
              "r.csv('default', '-')\n"
              "r.sink('sales_all', batch_rows=1000)\n"
              "def watch():\n"
              "    while r.calls['sales_all'] == 0:\n"
              "        time.sleep(0.01)\n"
              "    print('first', sum(b.num_rows for b in r.batches['sales_all']), flush=True)\n"
              "threading.Thread(target=watch, daemon=True).start()\n"
              "res = r.run()\n"
              "print(res.rc, res.calls['sales_all'], res.table('sales_all').num_rows)\n")
    lines = A.SALES_CSV.read_bytes().splitlines(keepends=True)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE.parent / "compiler"),
                                                        str(HERE)]))
    p = subprocess.Popen([sys.executable, "-c", script, str(work / "qs" / "build" /
                                                             "libgsqlc_queryset.so")],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=env)
    try:
        p.stdin.write(b"".join(lines[:10]))
        p.stdin.flush()
        ready, _, _ = select.select([p.stdout], [], [], 120)
        assert ready, "no delivery of the first 10 rows while the input stays open"
        first = p.stdout.readline()
        assert first == b"first 10\n", first
        out, err = p.communicate(b"".join(lines[10:]), timeout=120)
    finally:
        p.kill()
        p.wait()
    assert p.returncode == 0, err.decode()
    rc, calls, rows = out.decode().split()
    assert rc == "0" and rows == "50" and int(calls) >= 2, (out, err)


# ---------------------------------------------------------------- streams

def test_lfta_stream_round_trip(lib):
    ra, rb = A.scenario_round_trip(lib)
    assert ra.stats["sinks"][0]["batches"] == 4  # 50 rows, 13 per batch
    inj = rb.stats["injected"]
    assert inj == [{"stream": "_fta_per_minute", "read": True, "rows_read": 50,
                    "rows_rejected": 0}]
    # the Python layer's utf8 view of the same batches feeds it too
    r = Run(lib)
    r.inject("_fta_per_minute", A.as_utf8(ra.table("_fta_per_minute")))
    r.sink("per_minute")
    res = r.run()
    assert res.rc == 0, res
    assert res.table("per_minute").equals(ra.table("per_minute"))


def test_every_type_round_trips(lib, work):
    t = A.scenario_all_types(lib, work)
    assert [str(f.type) for f in t.schema] == [
        "uint32", "bool", "uint16", "int32", "uint64", "int64", "double", "uint32",
        "fixed_size_binary[16]", "binary"]
    rows = t.to_pylist()
    assert rows[1]["s"] == b'quoted, with "quotes"'
    assert rows[0]["ip"] == 0x0A000001
    assert rows[1]["ip6"] == bytes(15) + b"\x01"
    assert rows[1]["ull"] == 2 ** 64 - 1 and rows[1]["ll"] == -2 ** 63


def test_injected_rows_with_nulls_or_bad_values_are_rejected(lib):
    t = A.sales_table()
    r0 = Run(lib)
    r0.arrow("default", t)
    r0.sink("_fta_per_minute")
    lt = r0.run().table("_fta_per_minute")
    qty = lt.column("qty").to_pylist()
    qty[3] = None
    tb = lt.column("tb").cast(pa.int64()).to_pylist()
    tb[4] = -1
    lt = lt.set_column(lt.schema.get_field_index("qty"), "qty", pa.array(qty, pa.uint32()))
    lt = lt.set_column(lt.schema.get_field_index("tb"), "tb", pa.array(tb, pa.int64()))
    r = Run(lib)
    r.inject("_fta_per_minute", lt)
    r.sink("per_minute")
    res = r.run()
    assert res.rc == 0, res
    assert res.stats["injected"][0]["rows_rejected"] == 2
    assert "arrow stream _fta_per_minute: 2 of 50 rows rejected as malformed:" in res.report
    assert "row 4: column qty: null" in res.report
    assert "row 5: column tb: -1 is out of range for uint" in res.report
    assert sum(x["sales"] for x in res.rows("per_minute")) == 48


def test_injected_stream_schema_errors(lib):
    r0 = Run(lib)
    r0.arrow("default", A.sales_table())
    r0.sink("_fta_per_minute")
    lt = r0.run().table("_fta_per_minute")
    r = Run(lib)
    r.inject("_fta_per_minute", lt.drop_columns(["_e3"]))
    r.sink("per_minute")
    res = r.run()
    assert res.rc == -1
    assert res.error.startswith("stream _fta_per_minute is fed from an Arrow stream that has no "
                                "column '_e3' (float)"), res.error
    r = Run(lib)
    r.inject("_fta_per_minute", lt.set_column(0, "tb", lt.column("tb").cast(pa.float64())))
    r.sink("per_minute")
    res = r.run()
    assert res.rc == -1
    assert res.error.startswith("stream _fta_per_minute: column 'tb' is uint, but its Arrow "
                                "column has format 'g' (float64)"), res.error


def test_cancellation_by_the_consumer(lib):
    A.scenario_cancel(lib)


# ---------------------------------------------------------------- pruning

def test_only_what_a_sink_needs_runs(lib):
    # other_q reads interface 'other', which is not bound: not needed, no error
    r = Run(lib)
    r.csv("default", A.SALES_CSV)
    r.sink("per_minute")
    res = r.run()
    assert res.rc == 0, res
    running = {n["name"]: n["running"] for n in res.stats["nodes"]}
    assert running["per_minute"] and running["_fta_per_minute"]
    assert not running["other_q"] and not running["sales_all"] and not running["pk_q"]
    # the same unbound interface is an error once a sink needs it
    r = Run(lib)
    r.csv("default", A.SALES_CSV)
    r.sink("other_q")
    res = r.run()
    assert res.rc == -1
    assert res.error.startswith("interface 'other' is not bound (used by LFTA other_q"), res.error


def test_unused_arrow_bindings_are_released(lib):
    r = Run(lib)
    r.arrow("other", A.sales_table())       # other_q: no sink needs it
    r.inject("allt", A.sales_table())       # nobody reads allt
    r.csv("default", A.SALES_CSV)
    r.sink("per_minute")
    res = r.run()
    assert res.rc == 0, res
    assert res.stats["injected"][0]["read"] is False
    assert len(r.streams) == 2 and all(map(stream_released, r.streams))
    # a run never run releases them too
    r = Run(lib)
    r.arrow("default", A.sales_table())
    r.inject("_fta_per_minute", A.sales_table())
    r.destroy()
    assert len(r.streams) == 2 and all(map(stream_released, r.streams))


def test_bind_errors(lib):
    r = Run(lib)
    st = ffi.new("struct ArrowArrayStream *")
    A.reader_of(A.sales_table())._export_to_c(A.ptr(st))
    assert lib.gsqlc_bind_stream_arrow(r.r, b"nope", st) == -1
    assert ffi.string(lib.gsqlc_error(r.r)).decode().startswith("no query named 'nope'")
    assert stream_released(st)  # owned even on failure
    assert lib.gsqlc_bind_arrow(r.r, b"default", st) == -1  # already released
    assert "already released" in ffi.string(lib.gsqlc_error(r.r)).decode()
    assert r.inject("per_minute", A.sales_table()) == 0
    assert r.inject("per_minute", A.sales_table()) == -1
    assert r.setup_errors[-1] == "stream per_minute is already fed from an Arrow stream"
    assert r.sink("nope") == -1
    r.destroy()


# ---------------------------------------------------------------- sanitizers

@pytest.mark.slow
def test_arrow_paths_under_sanitizers(work, tmp_path):
    """Every scenario again in a child that preloads ASan, against the query
    set built with --sanitize: no ASan/UBSan finding, and no leak of memory
    the runtime allocated (Python's and pyarrow's own allocations are not
    the runtime's business)."""
    lib = _build(work, "qsan", "--sanitize")
    assert_sanitized(lib)
    libasan = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True,
                             text=True).stdout.strip()
    supp = tmp_path / "lsan.supp"
    supp.write_text("".join(f"leak:{f}\n" for f in [
        "_PyObject_Malloc", "_PyObject_Realloc", "PyMem_RawMalloc", "_PyMem_RawMalloc",
        "PyMem_RawRealloc", "_PyMem_RawRealloc", "PyMem_RawCalloc", "_PyMem_RawCalloc"]))
    env = dict(os.environ, LD_PRELOAD=libasan,
               ASAN_OPTIONS="detect_leaks=1:exitcode=99",
               LSAN_OPTIONS=f"suppressions={supp}:print_suppressions=0",
               UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1",
               PYTHONPATH=os.pathsep.join([str(HERE.parent / "compiler"), str(HERE)]))
    p = subprocess.run([sys.executable, str(HERE / "arrow_scenarios.py"), str(lib), str(work)],
                       capture_output=True, text=True, env=env, timeout=600)
    err = p.stderr
    assert "runtime error" not in err, err
    assert "ERROR: AddressSanitizer" not in err, err
    assert p.stdout.strip() == "ok", p.stdout + err
    leaks = [b for b in err.split("\n\n") if "leak of" in b]
    ours = [b for b in leaks if "libgsqlc_queryset" in b or "runtime_c/" in b or " gsq_" in b]
    assert not ours, "\n\n".join(ours)
    assert p.returncode in (0, 99), err  # 99: leaks of the interpreter only


def test_sink_buffers_come_back_through_a_pool(lib, work):
    A.scenario_buffer_pool(lib, work)


def test_column_at_a_time_conversion_matches_a_row_reference(lib):
    A.scenario_columnar(lib)


def test_columnar_lftas_equal_the_row_path(lib):
    A.scenario_columnar_lftas(lib)


@pytest.mark.parametrize("chunk", [1000, 97])
def test_injected_runs_keep_order_and_reject_rows_alone(lib, chunk):
    """A stream without strings is taken many rows at a time; a null row, a
    null value or a value out of range in such a run is rejected alone (and
    numbered as a row at a time would), the run's other rows kept in order."""
    n = 1000
    times = list(range(1_000_000, 1_000_000 + n))
    times[700] = -1                                   # out of range for uint
    src = [0x0A000000 + i for i in range(n)]
    src[300] = None                                   # a null value
    st = pa.StructArray.from_arrays(
        [pa.array(times, pa.int64()), pa.array(src, pa.uint32())], names=["time", "srcIP"],
        mask=pa.array([i == 500 for i in range(n)]))  # row 501 null as a whole
    t = pa.Table.from_batches([pa.RecordBatch.from_struct_array(st)])
    r = Run(lib)
    r.inject("pk_q", t, max_chunksize=chunk)
    r.sink("pk_q")
    res = r.run()
    assert res.rc == 0, res
    got = res.table("pk_q")
    keep = [i for i in range(n) if i not in (300, 500, 700)]
    assert got.column("time").to_pylist() == [times[i] for i in keep]
    assert got.column("srcIP").to_pylist() == [src[i] for i in keep]
    assert res.stats["injected"][0]["rows_read"] == n
    assert res.stats["injected"][0]["rows_rejected"] == 3
    assert "row 301: column srcIP: null" in res.report
    assert "row 701: column time: -1 is out of range for uint" in res.report
    assert "row 501" in res.report
