"""The conformance queries' generated code, built with AddressSanitizer and
UndefinedBehaviorSanitizer (-fno-sanitize-recover: any finding aborts), runs
clean and still gives the expected answers.  The stand-alone runner is used so
no Python is in the sanitized process."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter, defaultdict

import pytest

from conftest import REPO, assert_sanitized
from test_conformance import CASES, TIGON, params
from test_examples import _reference

pytestmark = pytest.mark.slow  # sanitized builds

EX = REPO / "examples"
sys.path.insert(0, str(EX))
import trace_reference  # noqa: E402

# One sanitized build per case directory: all of its query files together.
_GROUPS: dict[tuple[str, str], list[dict]] = defaultdict(list)
for _c in CASES:
    _GROUPS[(_c["case"], _c["schema"])].append(_c)

SAN_ENV = {
    "ASAN_OPTIONS": "abort_on_error=1:detect_leaks=1:strict_string_checks=1",
    "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
}


def _compile(gsqlc, out, *args):
    """Compile and build with --sanitize; the library and the runner are
    instrumented (else a clean run below would prove nothing)."""
    p = gsqlc("compile", *args, "-o", out, "--build", "--sanitize", "--werror")
    assert p.returncode == 0, p.err
    assert_sanitized(out / "build" / "libgsqlc_queryset.so")
    assert_sanitized(out / "build" / "gsqlc-run")
    return out / "build" / "gsqlc-run"


def _runner(gsqlc, tmp_path, files, schema):
    return _compile(gsqlc, tmp_path / "san", *files, "--schema", schema)


def _tcp_flows() -> list[str]:
    """count(*) per time/10 and TCP 4-tuple of the capture, by the
    independent reader of examples/trace_reference.py."""
    n = Counter((p["time"] // 10, trace_reference.dotted(p["srcIP"]),
                 trace_reference.dotted(p["destIP"]), p["srcPort"], p["destPort"])
                for p in trace_reference.packets(EX / "trace.pcap")
                if p["protocol"] == 6 and p["srcPort"] is not None)
    return sorted("|".join(map(str, k + (c,))) for k, c in n.items())


def _run(runner, *args):
    env = dict(os.environ, **SAN_ENV)
    return subprocess.run([str(runner), *map(str, args)], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, env=env, timeout=300)


@pytest.mark.needs_shared
@pytest.mark.parametrize("group", params(sorted(_GROUPS)), ids=lambda g: g[0])
def test_conformance_under_sanitizers(gsqlc, tmp_path, group):
    cases = _GROUPS[group]
    d = TIGON / group[0]
    files = sorted({d / q for c in cases for q in c["queries"].split(",")})
    runner = _runner(gsqlc, tmp_path, files, TIGON / group[1])
    for c in cases:
        args = ["--source", f"csv=csv:{d / c['input']}", "--csv-separator", "|",
                "--output", c["output"]]
        if c["clock"] != "-":
            args += ["--clock", f"fixed:{c['clock']}"]
        r = _run(runner, *args)
        assert r.returncode == 0, r.stderr
        assert "Sanitizer" not in r.stderr and "runtime error" not in r.stderr, r.stderr
        got = sorted(r.stdout.splitlines())
        if c["expected"] != "-":
            want = sorted(l for l in (d / c["expected"]).read_text().splitlines() if l.strip())
            assert got == want
        else:
            rows = [l for l in (d / c["input"]).read_text().splitlines() if l.strip()]
            assert len(got) == len(rows)


def test_packet_examples_under_sanitizers(gsqlc, tmp_path):
    names = ["flows", "src_counts", "hostnames", "host_counts"]
    runner = _runner(gsqlc, tmp_path, [EX / f"{n}.gsql" for n in names], EX / "packet_schema.txt")
    args = ["--source", f"default=pcap:{EX / 'trace.pcap'}", "--clock", "data"]
    for n in names:
        args += ["--output", n]
    r = _run(runner, *args)
    assert r.returncode == 0, r.stderr
    assert "Sanitizer" not in r.stderr and "runtime error" not in r.stderr, r.stderr
    want = sorted(line for n in names for line in _reference(n))
    assert len(want) > 100
    assert sorted(r.stdout.splitlines()) == want


def test_set_associative_lfta_table_under_sanitizers(gsqlc, tmp_path):
    # A 4-way table of 16 slots over the capture's flows: buckets fill,
    # groups are found past a bucket's first slot, full buckets eject; the
    # prefetch hint runs on every record.  The HFTA completes the partials to
    # the answer of the default table.  (`srcPort >= 0`, a tautology on an
    # unsigned field, must not make the generated C warn.)
    flows = ("select tb, srcIP, destIP, srcPort, destPort, count(*) as n from TCP\n"
             "where srcPort >= 0 group by time/10 as tb, srcIP, destIP, srcPort, destPort;\n")
    q = tmp_path / "q.gsql"
    q.write_text("DEFINE { query_name 'flows4'; lfta_table_size 16; lfta_table_ways 4; }\n"
                 + flows + "DEFINE { query_name 'flows1'; }\n" + flows)
    out = tmp_path / "san"
    _compile(gsqlc, out, q)
    got = {}
    for name in ("flows4", "flows1"):
        r = _run(out / "build" / "gsqlc-run", "--source", f"default=pcap:{EX / 'trace.pcap'}",
                 "--clock", "data", "--output", name, "--stats")
        assert r.returncode == 0, r.stderr
        assert "Sanitizer" not in r.stderr and "runtime error" not in r.stderr, r.stderr
        got[name] = (sorted(r.stdout.splitlines()),
                     max(int(x) for x in re.findall(r'"lfta_ejections": *(\d+)', r.stderr)))
    want = _tcp_flows()
    assert len(want) > 50
    assert got["flows4"][0] == got["flows1"][0] == want
    assert got["flows4"][1] > 0 and got["flows1"][1] == 0


def test_interface_set_merge_under_sanitizers(gsqlc, tmp_path):
    # Two members of [links] (the same capture twice): LFTA heartbeats, the
    # merge and the aggregation's epoch closing all run sanitized.
    q = tmp_path / "q.gsql"
    q.write_text("DEFINE { query_name 'per10'; }\n"
                 "select tb, count(*) as n from [links].IPV4 group by time/10 as tb")
    ifaces = tmp_path / "i.toml"
    ifaces.write_text('[set.links]\nmembers = ["l0", "l1"]\n')
    out = tmp_path / "san"
    _compile(gsqlc, out, q, "--interfaces", ifaces)
    trace = EX / "trace.pcap"
    r = _run(out / "build" / "gsqlc-run", "--source", f"l0=pcap:{trace}", "--source",
             f"l1=pcap:{trace}", "--clock", "data", "--output", "per10")
    assert r.returncode == 0, r.stderr
    assert "Sanitizer" not in r.stderr and "runtime error" not in r.stderr, r.stderr
    n = Counter(p["time"] // 10 for p in trace_reference.packets(trace))
    assert sum(n.values()) == 1055
    assert r.stdout.splitlines() == [f"{tb}|{2 * n[tb]}" for tb in sorted(n)]


def test_filter_join_under_sanitizers(gsqlc, tmp_path):
    # FILTER_JOIN over two CSV sources read out of time alignment: buffering,
    # the key table and its purge, string keys, all sanitized.
    from test_filter_join import SCHEMA, generate
    rr, ss = generate(seed=11)
    for name, rows in (("r.csv", rr), ("s.csv", ss)):
        (tmp_path / name).write_text("".join(",".join(map(str, r)) + "\n" for r in rows))
    schema = tmp_path / "schema.txt"
    schema.write_text(SCHEMA)
    q = tmp_path / "q.gsql"
    q.write_text("DEFINE { query_name 'fj'; }\n"
                 "select S.i, R.tag, S.v FILTER_JOIN(R.t, 9) from eth0.RP R, eth1.SP S\n"
                 "where R.k = S.k and R.tag = S.tag and R.t = S.t and R.v > 0")
    out = tmp_path / "san"
    _compile(gsqlc, out, q, "--schema", schema)
    r = _run(out / "build" / "gsqlc-run", "--source", f"eth0=csv:{tmp_path / 'r.csv'}",
             "--source", f"eth1=csv:{tmp_path / 's.csv'}", "--output", "fj")
    assert r.returncode == 0, r.stderr
    assert "Sanitizer" not in r.stderr and "runtime error" not in r.stderr, r.stderr
    want = [f"{i}|{tag}|{v}" for (_, t, k, tag, v, i) in ss
            if any(rk == k and rtag == tag and rv > 0 and t - 8 <= rt <= t
                   for (rt, rk, rtag, rv) in rr)]
    assert len(want) > 50
    assert r.stdout.splitlines() == want


def test_heartbeat_generator_under_sanitizers(gsqlc, tmp_path):
    # Generated heartbeats (seed 002) sanitized: given bounds closed over
    # three captures, and the adaptive estimator on a capture whose second
    # link runs late; every record counted or dropped-and-counted.
    sys.path.insert(0, str(REPO / "bench"))
    import numpy as np

    import pktgen
    q = tmp_path / "q.gsql"
    q.write_text("".join(f"DEFINE {{ query_name 'n_{x}'; }}\n"
                         f"select tb, count(*) as n from [{x}].IPV4 group by time/10 as tb;\n"
                         for x in "abc"))
    out = tmp_path / "san"
    runner = _compile(gsqlc, out, q)
    caps = {}
    for i, x in enumerate("abc"):
        caps[x] = tmp_path / f"{x}.pcap"
        pktgen.generate_arrivals(str(caps[x]), 600, 20, pps=100, seed=i,
                                 delays=[0.0, lambda t: np.where(t > 3, 2.0, 0.5)])
    src = [a for x in "abc" for a in ("--source", f"{x}=pcap:{caps[x]}")]
    outs = [a for x in "abc" for a in ("--output", f"n_{x}")]
    common = [*src, *outs, "--clock", "data", "--option", "batch=8", "--option",
              "heartbeat_interval=0.1", "--stats"]
    for opts in (["--option", "skew:a:b=0,1;2,0.5", "--option", "skew:b:c=0,1", "--option",
                  "out_of_order:a=2.5", "--option", "latency:c=0.25", "--option",
                  "hb_timeout=5"],
                 ["--option", "hb_estimate=adaptive", "--option", "hb_window=50",
                  "--option", "hb_alpha=0.25", "--option", "hb_horizon=3"]):
        r = _run(runner, *common, *opts)
        assert r.returncode == 0, r.stderr
        assert "Sanitizer" not in r.stderr and "runtime error" not in r.stderr, r.stderr
        st = json.loads(r.stderr[r.stderr.index("{"):])
        dropped = sum(s["time"]["dropped_below_heartbeat"] for s in st["sources"])
        counted = sum(int(line.split("|")[1]) for line in r.stdout.split())
        assert counted + dropped == 3 * 2 * 600


def test_time_aligned_csv_replay_under_sanitizers(gsqlc, tmp_path):
    # Two CSV files replayed time-aligned on the data clock, one on its
    # arrival column (ms): rows held back across rounds (quoted strings
    # among their cached values, moved back into the ring) and read ahead
    # by peek, the merge of both, all sanitized.
    schema = tmp_path / "schema.txt"
    schema.write_text("PROTOCOL RV {\n"
                      "    ullong ts   get_csv_ullong_pos1 (increasing);\n"
                      "    string tag  get_csv_string_pos2;\n"
                      "    uint   v    get_csv_uint_pos3;\n"
                      "    ullong recv get_csv_ullong_pos4;\n}\n")
    t0 = 1_700_000_000_000
    a = [(t0 + i * 40, f't"{i},a', i, t0 + i * 40 + 3000 + i % 7) for i in range(500)]
    b = [(t0 + i * 130, f"b{i}", 1000 + i, t0 + i * 130) for i in range(150)]
    for name, rows in (("a.csv", a), ("b.csv", b)):
        (tmp_path / name).write_text("".join(
            f'{t},"{tag.replace(chr(34), chr(34) * 2)}",{v},{r}\n' for t, tag, v, r in rows))
    q = tmp_path / "q.gsql"
    q.write_text("DEFINE { query_name 'ra'; }\nselect ts, tag, v from A.RV;\n"
                 "DEFINE { query_name 'rb'; }\nselect ts, tag, v from B.RV;\n"
                 "DEFINE { query_name 'both'; }\nmerge x.ts : y.ts from ra x, rb y")
    out = tmp_path / "san"
    _compile(gsqlc, out, q, "--schema", schema)
    r = _run(out / "build" / "gsqlc-run", "--source", f"A=csv:{tmp_path / 'a.csv'}",
             "--source", f"B=csv:{tmp_path / 'b.csv'}", "--clock", "data",
             "--option", "time_unit:A=ms", "--option", "time_unit:B=ms",
             "--option", "arrival:A=4:ullong", "--option", "heartbeat_interval=0.5",
             "--output", "both", "--stats")
    assert r.returncode == 0, r.stderr
    assert "Sanitizer" not in r.stderr and "runtime error" not in r.stderr, r.stderr
    lines = r.stdout.splitlines()
    ts = [int(line.split("|")[0]) for line in lines]
    assert ts == sorted(ts)
    assert sorted(lines) == sorted(f"{t}|{tag}|{v}" for t, tag, v, _ in a + b)
    held = [int(x) for x in re.findall(r'"held_back": *(\d+)', r.stderr)]
    assert len(held) == 2 and min(held) > 0, r.stderr


def test_csv_headers_quotes_and_times_under_sanitizers(gsqlc, tmp_path):
    """A header naming the columns in another order (option csv_header), a
    first line of field names skipped without it, quoted fields with commas,
    quotes and line breaks, ISO-8601 and epoch times into fields of stated
    units, an arrival column found by its name in the header, strict
    rejections: all sanitized (tests/test_csv_real_files.py has the same
    through the command line and the Python API)."""
    data = REPO / "tests" / "data" / "real_csv"
    run = _compile(gsqlc, tmp_path / "san", data / "orders.gsql", data / "ticks.gsql",
                   "--schema", data / "schema.txt")
    # (the stand-alone runner binds the queries' default interface by its name)
    r = _run(run, "--source", f"default=csv:{data / 'orders.csv'}", "--output", "orders",
             "--option", "csv_header:default=1", "--option", "time_unit:default=ms",
             "--option", "arrival:default=1:ullong:iso8601:ts", "--clock", "data", "--stats")
    assert r.returncode == 0, r.stderr
    assert "Sanitizer" not in r.stderr and "runtime error" not in r.stderr, r.stderr
    assert r.stdout.startswith("1772366405000|north|first, of the day|3\n"), r.stdout
    assert r.stdout.count("\n") == 6 and '"header":"read"' in r.stderr, r.stderr
    skipped = tmp_path / "in_order.csv"
    skipped.write_text((data / "orders_in_order.csv").read_text() + "bad,x,y,1\n")
    r = _run(run, "--source", f"default=csv:{skipped}", "--output", "orders", "--csv-strict",
             "--option", "time_unit:default=ms", "--stats")
    assert r.returncode == 0 and "Sanitizer" not in r.stderr, r.stderr
    assert len(r.stdout.splitlines()) == 4 and "skipped as a header" in r.stderr
    assert "field 1 'bad' is not an ISO-8601 time" in r.stderr, r.stderr
    r = _run(run, "--source", f"default=csv:{data / 'ticks.csv'}", "--output", "ticks")
    assert r.returncode == 0 and "Sanitizer" not in r.stderr, r.stderr
    assert r.stdout.splitlines() == ["1772366405|1772366405250|1772359205|1",
                                     "1772366405|1772366406000|1772323200|2"]
    missing = tmp_path / "missing.csv"
    missing.write_text("ts,store\n")
    r = _run(run, "--source", f"default=csv:{missing}", "--output", "orders",
             "--option", "csv_header:default=1")
    assert r.returncode != 0 and "the header has no column 'note'" in r.stderr, r.stderr
    assert "Sanitizer" not in r.stderr, r.stderr


def test_ip_forms_under_sanitizers(gsqlc, tmp_path):
    """The IP forms (issue 17): addresses read in text and integer forms
    (CSV), printed as text and as integers (option ip_format=int, the
    128-bit decimal included) in every text format, under ASan and UBSan."""
    (tmp_path / "s.txt").write_text("PROTOCOL R {\n uint t get_csv_uint_pos1 (increasing);\n"
                                    " IP a get_csv_ip_pos2;\n IPV6 b get_csv_ipv6_pos3;\n}\n")
    (tmp_path / "q.gsql").write_text("DEFINE { query_name 'q'; }\nselect t, a, b from [csv].R\n")
    rows = [(1, "10.0.0.1", "2001:db8::1"), (2, "4294967295", "0"),
            (3, "0.0.0.0", "340282366920938463463374607431768211455"),
            (4, "255.255.255.255", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"),
            (5, "10.0.0.300", "2001:db8::1::")]        # malformed: counted, read as 0
    (tmp_path / "d.csv").write_text("".join(f"{t},{a},{b}\n" for t, a, b in rows))
    runner = _runner(gsqlc, tmp_path, [tmp_path / "q.gsql"], tmp_path / "s.txt")
    base = ["--source", f"csv=csv:{tmp_path / 'd.csv'}", "--output", "q"]
    top = str((1 << 128) - 1)
    want = {"text": ["1|10.0.0.1|2001:0db8:0000:0000:0000:0000:0000:0001",
                     "2|255.255.255.255|0000:0000:0000:0000:0000:0000:0000:0000",
                     "3|0.0.0.0|ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
                     "4|255.255.255.255|ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
                     "5|0.0.0.0|0000:0000:0000:0000:0000:0000:0000:0000"],
            "int": ["1|167772161|42540766411282592856903984951653826561", "2|4294967295|0",
                    f"3|0|{top}", f"4|4294967295|{top}", "5|0|0"]}
    for form, lines in want.items():
        for fmt in ("pipe", "csv", "jsonl"):
            r = _run(runner, *base, "--format", fmt, "--option", f"ip_format={form}")
            assert r.returncode == 0, r.stderr
            assert "Sanitizer" not in r.stderr and "runtime error" not in r.stderr, r.stderr
            if fmt == "pipe":
                assert r.stdout.splitlines() == lines, (form, r.stdout)
            else:
                assert len(r.stdout.splitlines()) == len(lines) + (fmt == "csv")


def test_catalog_functions_under_sanitizers(gsqlc, tmp_path):
    """Every scalar function of the def files (issue 12, part 5) over the
    edge rows of test_functions_catalog (0 and the types' bounds, NaN, 1e300,
    empty strings, offsets and indices past the end), in the LFTA (C) and
    the HFTA (C++), under ASan and UBSan."""
    import test_functions_catalog as tfc
    (tmp_path / "s.txt").write_text(tfc.SCHEMA)
    (tmp_path / "d.csv").write_text("".join(
        ",".join([str(n)] + [("nan" if v != v else repr(v)) if isinstance(v, float) else str(v)
                             for v in r]) + "\n" for n, r in enumerate(tfc.ROWS)))
    pairs = [(x, y) for x in tfc.FIELDS for y in tfc.FIELDS]
    cols = [f"ULLMIN({x}, {y})" for x, y in pairs] + [f"EQ({x}, {y})" for x, y in pairs]
    cols += [f"{n}({x}, {y})" for n in list(tfc.FAMILIES) + list(tfc.COMPARISONS)
             for x, y in (("f", "f"), ("ll", "f"), ("i", "ul"))]
    cols += [f"{n}(f)" for n in tfc.MATH1] + ["pow(f, i)", "fmod(u, f)", "endian_swap_ui(u)",
             "if_else_i(u, ll, i)", "str_suffix(s, u)", "get_list_entry(s, ';', 4294967295)",
             "get_list_entry(s, '', 0)", "sum_uint_in_list(s, ';')", "string_hash(s)",
             "string_hash_long(s)", "to_llong(s)", "strtoi_c('99999999999')",
             "strtoip_c('1.2.3')", "byte_match_offset(u, 0, s)", "str_compare(s, '')",
             "str_partial_regex_match(s, '[0-9]+', u)", "INT(f)", "UINT(f)", "ULLONG(f)",
             "LLONG(f)", "USHORT(f * 4)"]
    (tmp_path / "q.gsql").write_text(
        "DEFINE { query_name 'q'; }\nselect t, " +
        ", ".join(f"{c} as c{k}" for k, c in enumerate(cols)) +
        "\nfrom [csv].R where byte_match_offset[4294967295, 0, s] = FALSE\n")
    runner = _runner(gsqlc, tmp_path, [tmp_path / "q.gsql"], tmp_path / "s.txt")
    r = _run(runner, "--source", f"csv=csv:{tmp_path / 'd.csv'}", "--output", "q")
    assert r.returncode == 0, r.stderr
    assert "Sanitizer" not in r.stderr and "runtime error" not in r.stderr, r.stderr
    lines = r.stdout.splitlines()
    assert [int(line.split("|")[0]) for line in lines] == list(range(len(tfc.ROWS)))
    assert all(len(line.split("|")) == len(cols) + 1 for line in lines)


def test_gdat_reader_and_writer_under_sanitizers(gsqlc, tmp_path):
    """The gdat: reader over corrupt records (a string past its record, a
    record shorter than its fields, a USHORT out of range), a file cut
    inside a record and headers it refuses, and the gdat output format,
    under ASan and UBSan (the runner: no Python check of the header)."""
    import struct

    import test_gdat as tg
    (tmp_path / "s.txt").write_text(tg.schema_file(tmp_path / "s.txt").read_text())
    (tmp_path / "q.gsql").write_text(tg.QUERY)
    rows = tg.make_rows(40)
    data = bytearray(tg.gdat_file("x", tg.FIELDS, rows))
    start = data.index(b"\0") + 1
    s_off = start + 4 + sum(tg.SIZES[t] for _, t in tg.FIELDS[:-1]) + 4
    struct.pack_into("<I", data, s_off, 0xFFFFFFF0)        # record 1's string offset
    data += struct.pack(">I", 3) + b"abc"                  # shorter than the fields
    bad = bytearray(tg.gdat_record(tg.FIELDS, rows[0]))
    struct.pack_into("<I", bad, 8, 1 << 20)                # a USHORT above 65535
    data += bad + struct.pack(">I", 1 << 30) + b"xy"       # cut inside a record
    (tmp_path / "bad.gdat").write_bytes(bytes(data))
    runner = _runner(gsqlc, tmp_path, [tmp_path / "q.gsql"], tmp_path / "s.txt")
    r = _run(runner, "--source", f"default=gdat:{tmp_path / 'bad.gdat'}", "--output", "all",
             "--stats")
    assert r.returncode == 0, r.stderr
    assert "Sanitizer" not in r.stderr and "runtime error" not in r.stderr, r.stderr
    assert r.stdout.splitlines() == [tg.pipe_line(x) for x in rows[1:]]
    assert "4 of 43 records rejected as malformed (the file is truncated)" in r.stderr
    w = subprocess.run([str(runner), "--source", f"default=gdat:{tmp_path / 'bad.gdat'}", "--output",
                        "all", "--format", "gdat"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, env=dict(os.environ, **SAN_ENV), timeout=300)
    err = w.stderr.decode()
    assert w.returncode == 0, err
    assert "Sanitizer" not in err and "runtime error" not in err, err
    assert tg.read_gdat(w.stdout)[2] == [
        x[:8] + (str(tg.ipaddress.IPv6Address(x[8])),) + x[9:] for x in rows[1:]]
    for head in (b"GDAT\nVERSION:4\nSCHEMALENGTH:99999999\n", b"GDAT\nVERSION:4\n",
                 b"GDAT\nVERSION:4\nSCHEMALENGTH:12\nFTA{STREAM s{", b"",
                 b"GDAT\nVERSION:4\nSCHEMALENGTH:20\nSTREAM s { uint ;}\0\0\0"):
        (tmp_path / "h.gdat").write_bytes(head)
        r = _run(runner, "--source", f"default=gdat:{tmp_path / 'h.gdat'}", "--output", "all")
        assert r.returncode == 1, r.stderr
        assert "Sanitizer" not in r.stderr and "runtime error" not in r.stderr, r.stderr
        assert f"gdat:{tmp_path / 'h.gdat'}" in r.stderr
