"""Driving a compiled query set's Arrow ABI (gsqlc_bind_arrow,
gsqlc_bind_stream_arrow, gsqlc_add_arrow_sink) through cffi in ABI mode, as
gsqlc.runtime.runner does, with pyarrow producing and consuming the record batches.

Used by test_arrow_runtime.py, and run as a script in a child process that
preloads the ASan runtime (python arrow_scenarios.py LIB SCHEMA_DIR) so the
runtime's Arrow paths run sanitized end to end.
"""
from __future__ import annotations

import gc
import json
import random
import re
import sys
from pathlib import Path

import cffi
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "compiler"))
from gsqlc.runtime.c_interface import abi_cdef  # noqa: E402

ffi = cffi.FFI()
ffi.cdef(abi_cdef())

SALES_CSV = REPO / "examples" / "csv" / "sales.csv"
SALES_SCHEMA = REPO / "examples" / "csv" / "schema.txt"
SALES_COLS = ["ts", "store", "item", "qty", "price", "client"]

# A PROTOCOL reading every GSQL type, and a query set over it and SALES.
ALLT_SCHEMA = """
PROTOCOL ALLT {
    uint    ts   get_csv_uint_pos1 (increasing, required);
    bool    b    get_csv_bool_pos2;
    ushort  us   get_csv_ushort_pos3;
    int     i    get_csv_int_pos4;
    ullong  ull  get_csv_ullong_pos5;
    llong   ll   get_csv_llong_pos6;
    float   f    get_csv_float_pos7;
    IP      ip   get_csv_ip_pos8;
    IPV6    ip6  get_csv_ipv6_pos9;
    string  s    get_csv_string_pos10;
}
"""
ALLT_COLS = ["ts", "b", "us", "i", "ull", "ll", "f", "ip", "ip6", "s"]
ALLT_CSV = (
    "1,TRUE,1,-3,4,-5,1.5,10.0.0.1,2002:87c5:c0e4::87c5:c0e4,plain\n"
    "2,FALSE,65535,-2147483648,18446744073709551615,-9223372036854775808,-0.25,"
    "255.255.255.255,::1,\"quoted, with \"\"quotes\"\"\"\n"
    "3,1,0,2147483647,0,9223372036854775807,0,0.0.0.0,::,\n"
)

QUERIES = {
    "per_minute.gsql": (REPO / "examples" / "csv" / "per_minute.gsql").read_text(),
    "sales_all.gsql": "DEFINE { query_name 'sales_all'; }\n"
                      "SELECT ts, store, item, qty, price, client FROM SALES\n",
    "other_q.gsql": "DEFINE { query_name 'other_q'; }\nSELECT ts, qty FROM other.SALES\n",
    "allt.gsql": "DEFINE { query_name 'allt'; }\n"
                 "SELECT ts, b, us, i, ull, ll, f, ip, ip6, s FROM t.ALLT\n",
    "pk_q.gsql": "DEFINE { query_name 'pk_q'; }\nSELECT time, srcIP FROM pk.TCP\n",
    # selections whose predicate rejects the rows of sales_with_rejected_tail's tail
    "big_sales.gsql": "DEFINE { query_name 'big_sales'; }\n"
                      "SELECT ts, store, qty FROM SALES WHERE qty >= 3\n",
    "big_per_minute.gsql": "DEFINE { query_name 'big_per_minute'; }\n"
                           "SELECT tb*60 as minute, store, count(*) as sales, sum(qty) as units\n"
                           "FROM SALES WHERE qty >= 3 GROUP BY ts/60 as tb, store\n",
    # the clock read per row (get_system_time: the data clock follows ts)
    "clocked.gsql": "DEFINE { query_name 'clocked'; }\n"
                    "SELECT ts, qty, get_system_time() as now FROM SALES WHERE qty > 10\n",
    # a stream with a column of the name option arrow_heartbeats adds
    "hb_clash.gsql": "DEFINE { query_name 'hb_clash'; }\n"
                     "SELECT ts as __heartbeat, qty FROM SALES\n",
}


def write_sources(d: Path) -> tuple[list[Path], list[Path]]:
    """The query files and schema files of the test query set, in d."""
    d.mkdir(parents=True, exist_ok=True)
    (d / "allt_schema.txt").write_text(ALLT_SCHEMA)
    (d / "allt.csv").write_text(ALLT_CSV)
    files = []
    for name, text in QUERIES.items():
        (d / name).write_text(text)
        files.append(d / name)
    schemas = [SALES_SCHEMA, d / "allt_schema.txt", REPO / "examples" / "packet_schema.txt"]
    return files, schemas


def ptr(x) -> int:
    return int(ffi.cast("uintptr_t", x))


def sales_table() -> pa.Table:
    return pacsv.read_csv(str(SALES_CSV),
                          read_options=pacsv.ReadOptions(column_names=SALES_COLS))


def allt_table(d: Path) -> pa.Table:
    return pacsv.read_csv(str(d / "allt.csv"), read_options=pacsv.ReadOptions(
        column_names=ALLT_COLS), convert_options=pacsv.ConvertOptions(
        column_types={c: pa.string() for c in ALLT_COLS}))


def reader_of(data, max_chunksize=None) -> pa.RecordBatchReader:
    if isinstance(data, pa.RecordBatchReader):
        return data
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    if isinstance(data, list):
        data = pa.Table.from_batches(data)
    return pa.RecordBatchReader.from_batches(data.schema, data.to_batches(max_chunksize))


class Result:
    def __init__(self, rc, error, report, stats, outputs, calls):
        self.rc, self.error, self.report, self.stats = rc, error, report, stats
        self.outputs, self.calls = outputs, calls

    def table(self, stream: str) -> pa.Table:
        return self.outputs[stream]

    def rows(self, stream: str) -> list[dict]:
        return self.outputs[stream].to_pylist()

    def node(self, name: str) -> dict:
        return next(n for n in self.stats["nodes"] if n["name"] == name)

    def __repr__(self):
        return f"Result(rc={self.rc}, error={self.error!r}, report={self.report!r})"


class Run:
    """One gsq_run: bindings, sinks, then run() (which destroys it)."""

    def __init__(self, lib, options=None, pool=None):
        self.lib = lib
        self.r = lib.gsqlc_create()
        if pool is not None:
            assert lib.gsqlc_set_buffer_pool(self.r, pool) == 0
        self.keep = []          # the callbacks must outlive the run
        self.streams = []       # the stream structs too (the run owns their contents)
        self.batches: dict[str, list] = {}
        self.schemas: dict[str, pa.Schema] = {}
        self.calls: dict[str, int] = {}
        self.setup_errors: list[str] = []
        for k, v in {"clock": "fixed:0", **(options or {})}.items():
            self._check(lib.gsqlc_set_option(self.r, k.encode(), v.encode()))

    def _check(self, rc):
        if rc != 0:
            self.setup_errors.append(ffi.string(self.lib.gsqlc_error(self.r)).decode())
        return rc

    def _stream(self, data, max_chunksize=None):
        st = ffi.new("struct ArrowArrayStream *")
        reader_of(data, max_chunksize)._export_to_c(ptr(st))
        self.streams.append(st)
        return st

    def csv(self, iface: str, path) -> int:
        return self._check(self.lib.gsqlc_bind_source(self.r, iface.encode(),
                                                      f"csv:{path}".encode()))

    def arrow(self, iface: str, data, max_chunksize=None) -> int:
        return self._check(self.lib.gsqlc_bind_arrow(self.r, iface.encode(),
                                                     self._stream(data, max_chunksize)))

    def inject(self, stream: str, data, max_chunksize=None) -> int:
        return self._check(self.lib.gsqlc_bind_stream_arrow(self.r, stream.encode(),
                                                            self._stream(data, max_chunksize)))

    def sink(self, stream: str, batch_rows: int = 0, cancel_after: int | None = None) -> int:
        self.batches[stream] = []
        self.calls[stream] = 0

        @ffi.callback("int(void *, struct ArrowArray *, struct ArrowSchema *)")
        def cb(ctx, arr, sch):
            b = pa.RecordBatch._import_from_c(ptr(arr), ptr(sch))
            self.batches[stream].append(b)
            self.schemas[stream] = b.schema
            self.calls[stream] += 1
            return 1 if cancel_after is not None and self.calls[stream] >= cancel_after else 0

        self.keep.append(cb)
        return self._check(self.lib.gsqlc_add_arrow_sink(self.r, stream.encode(), cb, ffi.NULL,
                                                         batch_rows))

    def file_sink(self, stream: str, path, fmt: str = "csv") -> int:
        return self._check(self.lib.gsqlc_add_sink(self.r, stream.encode(), fmt.encode(),
                                                   str(path).encode()))

    def run(self) -> Result:
        assert not self.setup_errors, self.setup_errors
        lib, r = self.lib, self.r
        try:
            rc = lib.gsqlc_run(r)
            error = ffi.string(lib.gsqlc_error(r)).decode()
            report = ffi.string(lib.gsqlc_report(r)).decode()
            stats = json.loads(ffi.string(lib.gsqlc_stats_json(r)).decode())
        finally:
            lib.gsqlc_destroy(r)
            self.r = None
        # every stream's contents were released by the run
        assert all(st.release == ffi.NULL for st in self.streams)
        outputs = {}
        for s, bs in self.batches.items():
            outputs[s] = pa.Table.from_batches(bs) if bs else None
        return Result(rc, error, report, stats, outputs, dict(self.calls))

    def destroy(self):
        if self.r is not None:
            self.lib.gsqlc_destroy(self.r)
            self.r = None


def as_utf8(t: pa.Table) -> pa.Table:
    """The Python layer's view: binary columns cast to utf8."""
    return t.cast(pa.schema([pa.field(f.name, pa.string() if f.type == pa.binary() else f.type)
                             for f in t.schema]))


# --------------------------------------------------------------------------
# scenarios shared with the sanitized child

def scenario_source_matches_csv(lib):
    a = Run(lib)
    a.csv("default", SALES_CSV)
    a.sink("per_minute")
    a.sink("sales_all", batch_rows=7)
    ra = a.run()
    assert ra.rc == 0, ra
    b = Run(lib)
    b.arrow("", sales_table(), max_chunksize=9)
    b.sink("per_minute")
    b.sink("sales_all", batch_rows=7)
    rb = b.run()
    assert rb.rc == 0, rb
    assert rb.table("per_minute").equals(ra.table("per_minute"))
    assert rb.table("sales_all").equals(ra.table("sales_all"))
    assert rb.calls["sales_all"] == 8  # 50 rows, 7 per batch
    return ra, rb


def scenario_round_trip(lib):
    a = Run(lib)
    a.arrow("default", sales_table())
    a.sink("_fta_per_minute", batch_rows=13)
    a.sink("per_minute")
    ra = a.run()
    assert ra.rc == 0, ra
    b = Run(lib)
    b.inject("_fta_per_minute", ra.table("_fta_per_minute"), max_chunksize=5)
    b.sink("per_minute")
    rb = b.run()
    assert rb.rc == 0, rb
    assert rb.table("per_minute").equals(ra.table("per_minute"))
    assert rb.stats["sources"] == []
    assert not rb.node("_fta_per_minute")["running"]
    return ra, rb


def scenario_all_types(lib, d: Path):
    a = Run(lib)
    a.csv("t", d / "allt.csv")
    a.sink("allt")
    ra = a.run()
    assert ra.rc == 0, ra
    t = ra.table("allt")
    # the stream injected back gives the same rows, its producer not run
    b = Run(lib)
    b.inject("allt", t)
    b.sink("allt", batch_rows=2)
    rb = b.run()
    assert rb.rc == 0, rb
    assert rb.table("allt").equals(t)
    # an Arrow source of text columns (IP / IPV6 parsed) reads like the CSV
    c = Run(lib)
    src = allt_table(d)
    c.arrow("t", pa.table({
        "ts": pa.array([1, 2, 3], pa.uint32()),
        "b": pa.array([True, False, True]),
        "us": pa.array([1, 65535, 0], pa.int32()),
        "i": pa.array([-3, -2147483648, 2147483647], pa.int64()),
        "ull": pa.array([4, 18446744073709551615, 0], pa.uint64()),
        "ll": pa.array([-5, -9223372036854775808, 9223372036854775807], pa.int64()),
        "f": pa.array([1.5, -0.25, 0.0], pa.float32()),
        "ip": src.column("ip"),
        "ip6": src.column("ip6"),
        "s": src.column("s"),
    }))
    c.sink("allt")
    rc_ = c.run()
    assert rc_.rc == 0, rc_
    assert rc_.table("allt").equals(t)
    return t


def scenario_nulls(lib):
    t = sales_table()
    qty = t.column("qty").to_pylist()
    ts = t.column("ts").to_pylist()
    for i in (0, 10, 20):
        qty[i] = None
    ts[30] = None
    t = t.set_column(3, "qty", pa.array(qty, pa.int64()))
    t = t.set_column(0, "ts", pa.array(ts, pa.int64()))
    a = Run(lib)
    a.arrow("default", t, max_chunksize=16)
    a.sink("sales_all")
    ra = a.run()
    assert ra.rc == 0, ra
    assert ra.table("sales_all").num_rows == 46
    # qty is optional: counted as unavailable; ts is required: skipped silently
    assert ra.node("sales_all")["field_unavailable"] == 3
    assert ra.stats["sources"][0]["rows_read"] == 50
    assert ra.stats["sources"][0]["rows_rejected"] == 0
    return ra


def scenario_rejects(lib):
    t = sales_table()
    qty = t.column("qty").to_pylist()
    qty[1] = 2 ** 40
    qty[2] = -1
    t = t.set_column(3, "qty", pa.array(qty, pa.int64()))
    a = Run(lib)
    a.arrow("default", t)
    a.sink("sales_all")
    ra = a.run()
    assert ra.rc == 0, ra
    assert ra.table("sales_all").num_rows == 48
    src = ra.stats["sources"][0]
    assert src["rows_rejected"] == 2 and src["rows_read"] == 50
    assert "2 of 50 rows rejected as malformed" in ra.report
    assert "row 2: column 'qty': 1099511627776 is out of range for uint" in ra.report
    assert "row 3: column 'qty': -1 is out of range for uint" in ra.report
    return ra


def scenario_cancel(lib):
    a = Run(lib)
    a.arrow("default", sales_table())
    a.sink("sales_all", batch_rows=4, cancel_after=2)
    ra = a.run()
    assert ra.rc == -1
    assert ra.error == "cancelled by the consumer of sales_all"
    assert ra.calls["sales_all"] == 2
    return ra


# Heartbeat rows (options arrow_heartbeats, final_heartbeat)

HB = "__heartbeat"
HB_OPTIONS = {"arrow_heartbeats": "1", "final_heartbeat": "1"}
# big_sales' LFTA stream, big_per_minute's LFTA stream (a selection with the
# WHERE) and its HFTA's output
HB_STREAMS = ["big_sales", "_fta_big_per_minute", "big_per_minute"]
HB_LFTA_STREAMS = ["big_sales", "_fta_big_per_minute"]
REJECTED_TS = (1700000900, 1700000901)


def sales_with_rejected_tail() -> pa.Table:
    """The SALES rows, then two that the predicate qty >= 3 rejects, of a
    minute later than every other row's."""
    t = sales_table()
    tail = pa.table({"ts": list(REJECTED_TS), "store": ["north", "south"], "item": ["x", "y"],
                     "qty": [1, 2], "price": [1.0, 2.0], "client": ["10.0.0.1", "10.0.0.2"]},
                    schema=t.schema)
    return pa.concat_tables([t, tail])


def split_heartbeats(t: pa.Table) -> tuple[pa.Table, pa.Table]:
    """(data rows, heartbeat rows) of an Arrow sink's output, without the
    __heartbeat column."""
    flag = t.column(HB)
    data = t.filter(pc.invert(flag)).drop_columns([HB])
    return data, t.filter(flag).drop_columns([HB])


def run_heartbeat_streams(lib, data, options, csv_path=None, batch_rows=10) -> Result:
    r = Run(lib, options)
    r.arrow("default", data, max_chunksize=16)
    for s in HB_STREAMS:
        r.sink(s, batch_rows=batch_rows)
    if csv_path is not None:
        r.file_sink("big_sales", csv_path, "csv")
    res = r.run()
    assert res.rc == 0, res
    return res


def scenario_heartbeats(lib, d: Path):
    """With both options (fixed clock: no tick), every Arrow sink has a last
    boolean column __heartbeat, false on the unchanged data rows, and one
    heartbeat row: the final heartbeat, carrying the time of the rows the
    predicate rejected; a csv sink of the same run shows no heartbeat."""
    t = sales_with_rejected_tail()
    off = run_heartbeat_streams(lib, t, {}, d / "hb_off.csv")
    on = run_heartbeat_streams(lib, t, HB_OPTIONS, d / "hb_on.csv")
    for s in HB_STREAMS:
        assert HB not in off.table(s).schema.names
        f = on.table(s).schema.field(HB)
        assert on.table(s).schema.names[-1] == HB
        assert f.type == pa.bool_() and not f.nullable
        data, beats = split_heartbeats(on.table(s))
        assert data.equals(off.table(s)), s
        assert beats.num_rows == 1, (s, beats.to_pylist())
        sink = next(k for k in on.stats["sinks"] if k["query"] == s and k["format"] == "arrow")
        assert sink["heartbeat_rows"] == 1 and sink["tuples"] == data.num_rows
        assert "heartbeat_rows" not in next(k for k in off.stats["sinks"] if k["query"] == s)
    for s in HB_LFTA_STREAMS:  # the final heartbeat comes before the EOF: last
        assert on.table(s).column(HB).to_pylist()[-1] is True
    last = max(REJECTED_TS)
    data, beats = split_heartbeats(on.table("big_sales"))
    assert max(data.column("ts").to_pylist()) < last
    assert beats.to_pylist() == [{"ts": last, "store": b"", "qty": 0}]
    data, beats = split_heartbeats(on.table("_fta_big_per_minute"))
    assert max(data.column("tb").to_pylist()) < last // 60
    assert beats.to_pylist() == [{"tb": last // 60, "store": b"", "qty": 0}]
    data, beats = split_heartbeats(on.table("big_per_minute"))
    hb = beats.to_pylist()[0]
    # The HFTA keeps 3 epochs open (seed 004): the final heartbeat, a jump
    # to the last minute, opens one (empty) epoch and closes the oldest; the
    # HFTA's own heartbeat is the oldest epoch that may still produce output:
    # past the first minute, not past the last, and no row after it is older.
    minutes = data.column("minute").to_pylist()
    assert min(minutes) < hb["minute"] <= last // 60 * 60
    flags = on.table("big_per_minute").column(HB).to_pylist()
    after = on.table("big_per_minute").column("minute").to_pylist()[flags.index(True) + 1:]
    assert after and all(m >= hb["minute"] for m in after)
    assert (hb["store"], hb["sales"], hb["units"]) == (b"", 0, 0)
    assert on.stats["heartbeat_ticks"] == 0
    streams = {x["name"]: x for x in on.stats["streams"]}
    assert all(streams[s]["heartbeats"] == 1 for s in HB_STREAMS)
    # the csv sink of the same run: data only, as without the options
    assert (d / "hb_on.csv").read_bytes() == (d / "hb_off.csv").read_bytes()
    assert len((d / "hb_on.csv").read_text().splitlines()) == 1 + off.table("big_sales").num_rows
    # the LFTA stream's rows fed back in place of the LFTA: the flagged row is
    # a heartbeat again, so the HFTA's output is the same, heartbeat included
    r = Run(lib, {"arrow_heartbeats": "1"})
    r.inject("_fta_big_per_minute", on.table("_fta_big_per_minute"), max_chunksize=7)
    r.sink("big_per_minute")
    back = r.run()
    assert back.rc == 0, back
    assert back.table("big_per_minute").equals(on.table("big_per_minute"))
    return off, on, back


def scenario_columnar(lib):
    """The Arrow source converts a run of rows a column at a time: over
    sliced batches of random rows with null values, null rows (of the struct
    itself), out-of-range numbers and invalid addresses, the rows kept, the
    rows rejected and the order they are described in are those a row at a
    time reading gives."""
    rng = random.Random(7)
    n = 5000
    ts, store, qty, price, client = [], [], [], [], []
    for i in range(n):
        ts.append(None if rng.random() < 0.01 else 1000 + i // 10)
        store.append(None if rng.random() < 0.01 else f"s{rng.randrange(9)}")
        q = rng.randrange(100)
        bad_q = rng.random() < 0.02
        qty.append(None if rng.random() < 0.01 else (rng.choice([-1, 2 ** 40]) if bad_q else q))
        price.append(rng.random() * 10)
        bad_c = rng.random() < 0.02
        client.append("1.2.3" if bad_c else f"10.0.{rng.randrange(256)}.{rng.randrange(256)}")
    struct_null = [rng.random() < 0.01 for _ in range(n)]
    arrays = [pa.array(ts, pa.int64()), pa.array(store, pa.string()),
              pa.array(["x"] * n, pa.large_string()), pa.array(qty, pa.int64()),
              pa.array(price, pa.float64()), pa.array(client, pa.string())]
    st = pa.StructArray.from_arrays(arrays, names=SALES_COLS, mask=pa.array(struct_null))
    whole = pa.RecordBatch.from_struct_array(st)
    cuts = sorted(rng.sample(range(1, n), 40))
    batches = [whole.slice(a, b - a) for a, b in zip([0] + cuts, cuts + [n])]

    rejected, kept = [], []
    for i in range(n):
        if struct_null[i]:
            continue
        if (qty[i] is not None and not 0 <= qty[i] < 2 ** 32) or client[i] == "1.2.3":
            rejected.append(i + 1)
        elif None not in (ts[i], store[i], qty[i]):
            kept.append(i)

    r = Run(lib)
    r.arrow("default", pa.RecordBatchReader.from_batches(whole.schema, iter(batches)))
    r.sink("sales_all")
    res = r.run()
    assert res.rc == 0, res
    src = res.stats["sources"][0]
    assert src["rows_read"] == n and src["rows_rejected"] == len(rejected)
    described = [int(x) for x in re.findall(r"row (\d+): column", res.report)]
    assert described == rejected[:10], res.report
    out = res.table("sales_all")
    assert out.column("ts").to_pylist() == [ts[i] for i in kept]
    assert out.column("store").to_pylist() == [store[i].encode() for i in kept]
    assert out.column("qty").to_pylist() == [qty[i] for i in kept]
    assert out.column("price").to_pylist() == [price[i] for i in kept]
    return res


def _random_sales(rng: random.Random, n: int, ts_type, qty_type, nulls: bool) -> pa.Table:
    def maybe(v):
        return None if nulls and rng.random() < 0.02 else v
    return pa.table({
        "ts": pa.array([maybe(1000 + i // 7) for i in range(n)], ts_type),
        "store": pa.array([maybe(f"s{rng.randrange(5)}") for _ in range(n)], pa.string()),
        "item": pa.array(["x"] * n, pa.string()),
        "qty": pa.array([maybe(rng.randrange(40)) for _ in range(n)], qty_type),
        "price": pa.array([maybe(rng.random() * 10) for _ in range(n)], pa.float64()),
        "client": pa.array([f"10.0.0.{rng.randrange(256)}" for _ in range(n)], pa.string()),
    })


def _out_of_range_qty(rng: random.Random, qty_type, bad: list[int]) -> pa.Table:
    """Sales without nulls whose qty (of qty_type) is out of uint's range on
    a few rows."""
    t = _random_sales(rng, 3000, pa.uint32(), pa.uint32(), nulls=False)
    qty = [rng.choice(bad) if rng.random() < 0.01 else v for v in t.column("qty").to_pylist()]
    return t.set_column(SALES_COLS.index("qty"), "qty", pa.array(qty, qty_type))


def scenario_columnar_lftas(lib):
    """LFTAs over columnar chunks (the default) give what they give a
    record at a time (option columnar off), output for output and statistic
    for statistic: selections, predicates, aggregations, a query reading
    the data clock row by row; columns read as they are (uint32, no nulls),
    narrowed (int64, uint64, int32 without nulls, some out of range) or
    converted (int64, nulls, out-of-range rows); chunks cut by odd batch
    and read-batch sizes, in sliced record batches."""
    rng = random.Random(13)
    streams = ["sales_all", "big_sales", "per_minute", "big_per_minute", "clocked"]
    tables = [
        _random_sales(rng, 3000, pa.uint32(), pa.uint32(), nulls=False),  # raw columns
        _random_sales(rng, 3000, pa.int64(), pa.int64(), nulls=True),     # converted
        scenario_columnar_input(rng),                                     # rejects, null rows
        # narrowed to the uint slots (no nulls, another width or sign), with
        # values out of range in some chunks: those rows rejected alone
        _random_sales(rng, 3000, pa.int64(), pa.int64(), nulls=False),
        _random_sales(rng, 3000, pa.uint64(), pa.int32(), nulls=False),
        _out_of_range_qty(rng, pa.int64(), [-1, 2 ** 32, -(2 ** 63)]),
        _out_of_range_qty(rng, pa.uint64(), [2 ** 63 + 5, 2 ** 64 - 1, 2 ** 32]),
        _out_of_range_qty(rng, pa.int32(), [-3, -(2 ** 31)]),
    ]
    for k, t in enumerate(tables):
        for clock in ("fixed:0", "data"):
            got = {}
            for mode in ("auto", "off"):
                r = Run(lib, {"columnar": mode, "clock": clock, "batch": "97"})
                batches = [b.slice(1) for b in t.to_batches(max_chunksize=401)]
                r.arrow("default", pa.RecordBatchReader.from_batches(t.schema, iter(batches)))
                for st in streams:
                    r.sink(st)
                res = r.run()
                assert res.rc == 0, res
                assert res.stats["sources"][0]["columnar"] is (mode == "auto"), (k, mode)
                got[mode] = res
            a, b = got["auto"], got["off"]
            for st in streams:
                ta, tb = a.table(st), b.table(st)
                assert (ta is None and tb is None) or ta.equals(tb), (k, clock, st)
            assert a.report == b.report, (k, clock)
            for key in ("rows_read", "rows_rejected", "time_unreadable"):
                assert a.stats["sources"][0][key] == b.stats["sources"][0][key], (k, key)
            for st in streams:
                na, nb = a.node(st), b.node(st)
                assert {x: na[x] for x in na if x not in _TIMINGS} == \
                    {x: nb[x] for x in nb if x not in _TIMINGS}, (k, clock, st)


# per-node statistics of time and buffering, not of what was done (a chunk
# of columns holds the rows rejected as malformed, a ring batch does not)
_TIMINGS = {"cpu_usec", "busy_usec", "wall_usec", "queue_high_water_entries",
            "queue_high_water_bytes"}


def scenario_columnar_input(rng: random.Random) -> pa.Table:
    """Rows with out-of-range numbers, invalid addresses and null rows."""
    n = 2000
    qty = [rng.randrange(100) if rng.random() > 0.02 else rng.choice([-1, 2 ** 40])
           for _ in range(n)]
    client = ["1.2.3" if rng.random() < 0.02 else f"10.0.1.{rng.randrange(256)}"
              for _ in range(n)]
    arrays = [pa.array([2000 + i // 9 for i in range(n)], pa.int64()),
              pa.array([f"s{rng.randrange(4)}" for _ in range(n)], pa.string()),
              pa.array(["y"] * n, pa.string()), pa.array(qty, pa.int64()),
              pa.array([rng.random() for _ in range(n)], pa.float64()),
              pa.array(client, pa.string())]
    st = pa.StructArray.from_arrays(arrays, names=SALES_COLS,
                                    mask=pa.array([rng.random() < 0.01 for _ in range(n)]))
    return pa.Table.from_batches([pa.RecordBatch.from_struct_array(st)])


def pool_counts(lib, pool) -> tuple[int, int, int]:
    """(bytes held, takes served by the pool, takes that allocated)."""
    out = ffi.new("uint64_t[3]")
    lib.gsqlc_buffer_pool_counts(pool, out)
    return int(out[0]), int(out[1]), int(out[2])


def scenario_buffer_pool(lib, d: Path):
    """Sinks with a buffer pool: the buffers released batches give back
    are taken by the next run, whose results are whole and equal a run
    without the pool (no byte of the earlier contents shows: bits, string
    offsets, Arrow's zero padding); the pool outlives its creator's
    reference while batches hold it, and never holds more than its bound."""
    def run(stream, iface, data, pool, batch_rows):
        a = Run(lib, pool=pool)
        a.arrow(iface, data)
        a.sink(stream, batch_rows=batch_rows)
        res = a.run()
        assert res.rc == 0, res
        return res
    allt = Run(lib)
    allt.csv("t", d / "allt.csv")
    allt.sink("allt")
    plain_allt = allt.run().table("allt")
    plain_sales = run("sales_all", "", sales_table(), None, 0).table("sales_all")
    pool = lib.gsqlc_buffer_pool_create(1 << 20)
    first = run("allt", "t", plain_allt, pool, 2)
    assert first.table("allt").equals(plain_allt)
    held, reused, allocated = pool_counts(lib, pool)
    assert held == 0 and reused == 0 and allocated > 0   # the batches hold them
    first = None
    gc.collect()            # a Run and its sink callback hold each other
    held, _, _ = pool_counts(lib, pool)
    assert held > 0                                       # given back on release
    again = run("sales_all", "", sales_table(), pool, 4)  # other columns, other sizes
    assert again.table("sales_all").equals(plain_sales)
    held2, reused2, _ = pool_counts(lib, pool)
    assert reused2 > 0
    bits = run("allt", "t", plain_allt, pool, 3)
    assert bits.table("allt").equals(plain_allt)
    # the creator lets go first: the batches still alive keep the pool
    lib.gsqlc_buffer_pool_release(pool)
    t = bits.table("allt")
    bits = None
    gc.collect()
    assert t.num_rows == 3
    # a pool bounded at 0 bytes holds nothing and still serves
    tiny = lib.gsqlc_buffer_pool_create(0)
    r = run("sales_all", "", sales_table(), tiny, 5)
    assert r.table("sales_all").equals(plain_sales)
    r = None
    gc.collect()
    assert pool_counts(lib, tiny)[0] == 0
    lib.gsqlc_buffer_pool_release(tiny)


def main(lib_path: str, work_dir: str) -> None:
    lib = ffi.dlopen(lib_path)
    d = Path(work_dir)
    scenario_source_matches_csv(lib)
    scenario_round_trip(lib)
    scenario_all_types(lib, d)
    scenario_nulls(lib)
    scenario_rejects(lib)
    scenario_columnar(lib)
    scenario_columnar_lftas(lib)
    scenario_cancel(lib)
    scenario_heartbeats(lib, d)
    scenario_buffer_pool(lib, d)
    print("ok")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
