"""Tests of the C runtime on its own.

The runtime (runtime_c/*.c) is compiled with hand-written query sets
(tests/runtime/: a CSV set with two LFTAs and a C++ HFTA, a pcap set with one
LFTA reading every packet accessor, a heartbeat set with two pcap LFTAs and
two C++ HFTAs) into shared libraries, with ASan and
UBSan.  Each scenario runs in a child Python (driver.py) that preloads the
ASan runtime and drives the library through its C ABI with cffi (ABI mode);
leaks are checked too (Python's own allocations are suppressed).
"""
import concurrent.futures
import json
import os
import re
import socket
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import assert_sanitized

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
RUNTIME = ROOT / "runtime_c"
# the runtime's layout (runtime_c/README.md): generated code sees PUBLIC only
PUBLIC = [RUNTIME / "include", RUNTIME / "lfta"]
OWN = [RUNTIME / d for d in ("core", "sources", "sinks", "run")]

SAN = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"]
CFLAGS = ["-std=c11", "-O1", "-g", "-fPIC", "-Wall", "-Wextra", "-Werror", *SAN,
          *(f"-I{d}" for d in PUBLIC + OWN), f"-I{HERE}"]
CXXFLAGS = ["-std=c++17", *CFLAGS[1:]]
HEADERS = ["gsq_types.h", "gsq_runtime.h", "gsq_record.h", "gsq_packet.h", "gsq_funcs.h"]

LSAN_SUPP = "\n".join(
    "leak:" + f for f in ["_PyObject_Malloc", "_PyObject_Realloc", "PyMem_RawMalloc",
                          "_PyMem_RawMalloc", "PyMem_RawRealloc", "_PyMem_RawRealloc",
                          "PyMem_RawCalloc", "_PyMem_RawCalloc"]) + "\n"


def sh(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, cmd))}\n{p.stdout}{p.stderr}")
    return p


@pytest.fixture(scope="session")
def build(tmp_path_factory):
    out = tmp_path_factory.mktemp("build")
    jobs = []
    runtime_objs = []
    for src in sorted(p for d in OWN for p in d.glob("*.c")):
        obj = out / (src.name + ".o")
        runtime_objs.append(obj)
        jobs.append(["gcc", *CFLAGS, "-c", str(src), "-o", str(obj)])
    for name in ["lfta_csv.c", "queryset_csv.c", "lfta_pkt.c", "lfta_hb.c", "queryset_hb.c"]:
        jobs.append(["gcc", *CFLAGS, "-c", str(HERE / name), "-o", str(out / (name + ".o"))])
    for name in ["hfta_csv", "hfta_hb"]:
        jobs.append(["g++", *CXXFLAGS, "-c", str(HERE / (name + ".cpp")), "-o",
                     str(out / (name + ".o"))])
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as ex:
        list(ex.map(sh, jobs))
    rt = [str(o) for o in runtime_objs]
    libs = {"csv": out / "libcsv.so", "pkt": out / "libpkt.so", "hb": out / "libhb.so"}
    links = [
        ["g++", "-shared", *SAN, "-o", str(libs["csv"]), *rt, str(out / "lfta_csv.c.o"),
         str(out / "queryset_csv.c.o"), str(out / "hfta_csv.o"), "-lpcap"],
        ["gcc", "-shared", *SAN, "-o", str(libs["pkt"]), *rt, str(out / "lfta_pkt.c.o"),
         "-lpcap"],
        ["g++", "-shared", *SAN, "-o", str(libs["hb"]), *rt, str(out / "lfta_hb.c.o"),
         str(out / "queryset_hb.c.o"), str(out / "hfta_hb.o"), "-lpcap"],
        ["gcc", *CFLAGS, "-o", str(out / "unit_tests"), str(HERE / "unit_tests.c"), *rt,
         "-lpcap", "-lm"],
    ]
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as ex:
        list(ex.map(sh, links))
    supp = out / "lsan.supp"
    supp.write_text(LSAN_SUPP)
    libasan = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True,
                             text=True).stdout.strip()
    return {"dir": out, "libs": libs, "supp": supp, "libasan": libasan,
            "unit": out / "unit_tests"}


class Result:
    def __init__(self, raw, proc, outputs):
        self.rc = raw.get("rc")
        self.error = raw["error"]
        self.report = raw["report"]
        self.stats = json.loads(raw["stats"])
        self.setup_errors = raw["setup_errors"]
        self.raw = raw
        self.stdout = proc.stdout
        self.out = outputs

    def __repr__(self):
        return f"Result(rc={self.rc}, error={self.error!r}, report={self.report!r})"


def san_env(build):
    """The environment of a sanitized child: ASan preloaded (exit code 99 on
    a finding or a leak), UBSan halting on the first finding."""
    env = dict(os.environ)
    env["LD_PRELOAD"] = build["libasan"]
    env["ASAN_OPTIONS"] = "detect_leaks=1:abort_on_error=0:exitcode=99"
    env["LSAN_OPTIONS"] = f"suppressions={build['supp']}:print_suppressions=0"
    env["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"
    return env


def _start_driver(build, tmp_path, spec):
    """The driver in a sanitized child, reading its CSV from our pipe."""
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    return subprocess.Popen([sys.executable, str(HERE / "driver.py"), str(tmp_path / "spec.json")],
                            env=san_env(build), stdin=subprocess.PIPE, stderr=subprocess.PIPE)


def run(build, tmp_path, lib, binds=(), sinks=(), options=None, params=None, stdin=None,
        do_run=True, **extra):
    """Run a scenario; sinks are (query, format, name) with name None for
    stdout; returns a Result whose .out maps name -> bytes written."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    sink_specs = []
    for query, fmt, name in sinks:
        sink_specs.append([query, fmt, str(tmp_path / name) if name else None])
    sinks = [s for s in sinks if not (s[2] or "").startswith("/")]  # e.g. /dev/full
    result_path = tmp_path / "result.json"
    spec = {"lib": str(build["libs"][lib]), "options": options or {}, "params": params or {},
            "binds": [list(b) for b in binds], "sinks": sink_specs,
            "result": str(result_path), "run": do_run, **extra}
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(json.dumps(spec))
    proc = subprocess.run([sys.executable, str(HERE / "driver.py"), str(spec_path)],
                          env=san_env(build),
                          input=stdin, capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    assert b"runtime error" not in proc.stderr, proc.stderr.decode(errors="replace")
    raw = json.loads(result_path.read_text())
    outputs = {}
    for query, fmt, name in sinks:
        if name and (tmp_path / name).exists():
            outputs[name] = (tmp_path / name).read_bytes()
    return Result(raw, proc, outputs)


def csv_run(build, tmp_path, text, sinks=(("csv_all", "pipe", "out.txt"),), options=None,
            **kw):
    data = tmp_path / "in.csv"
    tmp_path.mkdir(parents=True, exist_ok=True)
    data.write_bytes(text if isinstance(text, bytes) else text.encode())
    opts = {"clock": "fixed:77"}
    opts.update(options or {})
    return run(build, tmp_path, "csv", binds=[("csv", f"csv:{data}")], sinks=sinks,
               options=opts, **kw), str(data)


# --------------------------------------------------------------------------
# headers and pure functions

def test_headers_compile_as_cxx17_and_c11(tmp_path):
    src = tmp_path / "h.cpp"
    body = "".join(f'#include "{h}"\n' for h in HEADERS) + """
int use(gsq_node *n, const gsq_record *r)
{
    uint32_t x = 0; gsq_str s; gsq_ipv6 a; uint8_t b; double f;
    gsq_regex re; char err[64];
    int rc = gsq_acc_get_tcp_src_port(n, r, &x) + gsq_acc_get_ipv6_src(n, r, &a)
           + gsq_acc_get_udp_data(n, r, &s) + gsq_acc_get_tcp_fin(n, r, &b)
           + gsq_csv_get_string(n, r, 1, &s) + gsq_csv_get_float(n, r, 2, &f)
           + gsq_acc_get_system_time(n, r, &x);
    if (gsq_regex_compile(&re, "a+", 2, err, sizeof err) == 0)
        rc += (int)gsq_fn_str_extract_regex(&re, s).len + gsq_fn_str_regex_match(&re, s);
    rc += gsq_fn_str_partial_regex_match(&re, s, 3) + (int)gsq_fn_lmin_sf(-1, 0.5);
    gsq_regex_free(&re);
    return rc + (int)gsq_fn_umax_uu(1, 2) + gsq_fn_str_match_start(s, s)
           + (int)gsq_fn_string_hash(s) + (int)gsq_fn_get_list_entry(s, s, 1).len;
}
"""
    src.write_text(body)
    sh(["g++", "-std=c++17", "-Wall", "-Wextra", "-Werror", "-pedantic", *(f"-I{d}" for d in PUBLIC),
        "-c", str(src), "-o", str(tmp_path / "h.o")])
    csrc = tmp_path / "h.c"
    csrc.write_text(body)
    sh(["gcc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic", *(f"-I{d}" for d in PUBLIC),
        "-c", str(csrc), "-o", str(tmp_path / "hc.o")])


def test_libraries_are_sanitized(build):
    # The clean runs below prove something only if the code under test is
    # instrumented and the child really preloads the ASan runtime.
    for lib in [*build["libs"].values(), build["unit"]]:
        assert_sanitized(lib)
    assert Path(build["libasan"]).is_absolute() and Path(build["libasan"]).is_file(), \
        build["libasan"]
    # A probe in a child of the drivers' environment: the preloaded ASan
    # runtime catches a heap overflow.
    probe = ("import ctypes; m = ctypes.CDLL(None).malloc; m.restype = ctypes.c_void_p; "
             "p = m(8); ctypes.memset(p + 8, 0, 1); print('not caught')")
    p = subprocess.run([sys.executable, "-c", probe], env=san_env(build), capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 99 and "AddressSanitizer: heap-buffer-overflow" in p.stderr, \
        (p.returncode, p.stdout, p.stderr)


def test_unit_parse_format_funcs_queues(build):
    p = subprocess.run([str(build["unit"])], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    lines = p.stdout.split("\n")
    assert lines[-2:] == ["ok", ""], p.stdout
    # each column compress kernel ran where the CPU has it, and one was chosen then
    m = re.search(r"^column compress: (\d+) / (\d+) / (\d+) kernel runs", p.stdout, re.M)
    chosen, avx512, avx2 = (int(x) for x in m.groups())
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    has_avx512 = bool(re.search(r"\bavx512bw\b", flags) and re.search(r"\bavx512_?vbmi2\b", flags))
    has_avx2 = bool(re.search(r"\bavx2\b", flags))
    assert (avx512 > 0) == has_avx512 and (avx2 > 0) == has_avx2, p.stdout
    assert (chosen > 0) == (has_avx512 or has_avx2), p.stdout


# --------------------------------------------------------------------------
# CSV reading and sinks

ALL_TYPES = (
    'TRUE,1,2,-3,4,-5,1.5,10.0.0.1,2002:87c5:c0e4:0000:0000:0000:87c5:c0e4,plain\n'
    '\n'
    'false,65535,4294967295,-2147483648,18446744073709551615,-9223372036854775808,'
    '-0.25,255.255.255.255,::1,"quoted, with ""quotes"" and\nnewline"\r\n'
    '\r\n'
    '1,0,0,0,0,0,0,0.0.0.0,2002:87c5:c0e4::87c5:c0e4,""\r\n'
    'FALSE,7,8,9,10,11,12.125,1.2.3.4,::,last line no newline'
)

ALL_TYPES_PIPE = (
    b'77|TRUE|1|2|-3|4|-5|1.500000|10.0.0.1|2002:87c5:c0e4:0000:0000:0000:87c5:c0e4|plain\n'
    b'77|FALSE|65535|4294967295|-2147483648|18446744073709551615|-9223372036854775808|'
    b'-0.250000|255.255.255.255|0000:0000:0000:0000:0000:0000:0000:0001|'
    b'quoted, with "quotes" and\nnewline\n'
    b'77|TRUE|0|0|0|0|0|0.000000|0.0.0.0|2002:87c5:c0e4:0000:0000:0000:87c5:c0e4|\n'
    b'77|FALSE|7|8|9|10|11|12.125000|1.2.3.4|0000:0000:0000:0000:0000:0000:0000:0000|'
    b'last line no newline\n'
)


def test_csv_every_type_quotes_crlf_pipe(build, tmp_path):
    r, path = csv_run(build, tmp_path, ALL_TYPES)
    assert r.rc == 0, r
    assert r.out["out.txt"] == ALL_TYPES_PIPE
    assert r.report == ""
    src = r.stats["sources"][0]
    assert src["rows_read"] == 4 and src["rows_rejected"] == 0 and src["values_coerced"] == 0
    assert src["bytes_read"] == len(ALL_TYPES.encode())


def test_csv_sink_format(build, tmp_path):
    r, _ = csv_run(build, tmp_path, ALL_TYPES, sinks=[("csv_all", "csv", "out.csv")])
    assert r.rc == 0, r
    lines = r.out["out.csv"].split(b"\n")
    assert lines[0] == b"systemTime,b,us,ui,i,ull,ll,f,ip,ip6,s"
    assert r.out["out.csv"] == (
        b"systemTime,b,us,ui,i,ull,ll,f,ip,ip6,s\n"
        b"77,TRUE,1,2,-3,4,-5,1.500000,10.0.0.1,2002:87c5:c0e4:0000:0000:0000:87c5:c0e4,plain\n"
        b"77,FALSE,65535,4294967295,-2147483648,18446744073709551615,-9223372036854775808,"
        b"-0.250000,255.255.255.255,0000:0000:0000:0000:0000:0000:0000:0001,"
        b'"quoted, with ""quotes"" and\nnewline"\n'
        b"77,TRUE,0,0,0,0,0,0.000000,0.0.0.0,2002:87c5:c0e4:0000:0000:0000:87c5:c0e4,\n"
        b"77,FALSE,7,8,9,10,11,12.125000,1.2.3.4,0000:0000:0000:0000:0000:0000:0000:0000,"
        b"last line no newline\n")


def test_csv_sink_header_without_rows(build, tmp_path):
    r, _ = csv_run(build, tmp_path, "", sinks=[("csv_alt", "csv", "alt.csv")])
    assert r.rc == 0 and r.out["alt.csv"] == b"s3,u2\n"


def test_jsonl_sink_escaping_and_types(build, tmp_path):
    text = (b'true,1,2,-3,4,-5,0.1,10.0.0.1,2002:87c5:c0e4::87c5:c0e4,'
            b'"q""b\\s\x01t\tn\xc3\xa9x\xffz"\n'
            b'0,0,0,0,0,0,nan,0.0.0.0,::,\n'
            b'0,0,0,0,0,0,-inf,0.0.0.0,::,</>\n')
    r, _ = csv_run(build, tmp_path, text, sinks=[("csv_all", "jsonl", "o.jsonl")])
    assert r.rc == 0, r
    lines = r.out["o.jsonl"].split(b"\n")
    assert lines[0] == (
        b'{"systemTime":77,"b":true,"us":1,"ui":2,"i":-3,"ull":4,"ll":-5,'
        b'"f":0.1,"ip":"10.0.0.1",'
        b'"ip6":"2002:87c5:c0e4:0000:0000:0000:87c5:c0e4",'
        b'"s":"q\\"b\\\\s\\u0001t\\u0009n\xc3\xa9x\\u00ffz"}')
    assert lines[1] == (
        b'{"systemTime":77,"b":false,"us":0,"ui":0,"i":0,"ull":0,"ll":0,"f":null,'
        b'"ip":"0.0.0.0","ip6":"0000:0000:0000:0000:0000:0000:0000:0000","s":""}')
    assert b'"f":null' in lines[2] and lines[3] == b""
    for line in lines[:3]:
        json.loads(line)  # valid JSON


def test_sink_to_stdout(build, tmp_path):
    r, _ = csv_run(build, tmp_path, "1,2,3,4,5,6,7,1.1.1.1,::,x\n",
                   sinks=[("csv_alt", "pipe", None)])
    assert r.rc == 0 and r.stdout == b"3|2\n"


def test_malformed_rows_rejected_and_described(build, tmp_path):
    good = "1,2,3,4,5,6,7,1.1.1.1,::,row{}\n"
    lines = [good.format(1), "1,2,3\n", good.format(3), "\n",
             "1,2,3,4,5,6,7,1.1.1.1,::,x,extra\n", good.format(6)]
    lines += ["a,b\n"] * 12  # lines 7..18
    lines += [good.format(19)]
    r, path = csv_run(build, tmp_path, "".join(lines))
    assert r.rc == 0, r
    out = r.out["out.txt"].decode().splitlines()
    assert [l.split("|")[-1] for l in out] == ["row1", "row3", "row6", "row19"]
    src = r.stats["sources"][0]
    assert src["rows_read"] == 18 and src["rows_rejected"] == 14
    rep = r.report.splitlines()
    assert rep[0] == f"gsqlc: {path}: 14 of 18 rows rejected as malformed; the first ones:"
    assert rep[1] == f"gsqlc: {path}:2: expected 10 fields, found 3"
    assert rep[2] == f"gsqlc: {path}:5: expected 10 fields, found 11"
    assert rep[3] == f"gsqlc: {path}:7: expected 10 fields, found 2"
    assert len([l for l in rep if "expected 10 fields" in l]) == 10
    assert all(l.startswith("gsqlc: ") for l in rep)


def test_first_row_fixes_field_count(build, tmp_path):
    r, path = csv_run(build, tmp_path, "a,b\n1,2,3,4,5,6,7,1.1.1.1,::,x\n",
                      sinks=[("csv_alt", "pipe", "o.txt")])
    assert r.rc == 0
    # the first row has 2 fields: the 10-field row is the malformed one
    assert f"{path}:2: expected 2 fields, found 10" in r.report
    assert r.stats["sources"][0]["rows_rejected"] == 1


def test_coerced_values_tigon_semantics(build, tmp_path):
    text = ("TRUE,1,135.197.192.237,-3,4,-5,1.5,10.0.0.1,::1,ok\n"
            "yes,,TRUE,12abc,,x,2.5kg,1.2.3,zz,\n")
    r, path = csv_run(build, tmp_path, text)
    assert r.rc == 0, r
    out = r.out["out.txt"].decode().splitlines()
    assert out[0] == ("77|TRUE|1|135|-3|4|-5|1.500000|10.0.0.1|"
                      "0000:0000:0000:0000:0000:0000:0000:0001|ok")
    assert out[1] == ("77|FALSE|0|0|12|0|0|2.500000|0.0.0.0|"
                      "0000:0000:0000:0000:0000:0000:0000:0000|")
    src = r.stats["sources"][0]
    # row 1: ui; row 2: b, us, ui, i, ull, ll, f, ip, ip6 (the empty string is valid)
    assert src["values_coerced"] == 10 and src["rows_rejected"] == 0
    assert r.report == (
        f"gsqlc: warning: {path}: 10 values were empty or not valid for their type and were "
        f"read as Tigon does (the valid prefix, or 0); first: {path}:1: field 3 "
        f"'135.197.192.237' is not a valid uint\n")


def test_csv_strict_rejects_invalid_values(build, tmp_path):
    text = ("TRUE,1,2,-3,4,-5,1.5,10.0.0.1,::1,ok\n"
            "TRUE,1,2,-3,4,-5,1.5,10.0.0.300,::1,bad ip\n"
            "TRUE,1,2,-3,4,-5,1.5,10.0.0.3,::1,ok2\n")
    r, path = csv_run(build, tmp_path, text, options={"csv_strict": "1"})
    assert r.rc == 0
    assert [l.split("|")[-1] for l in r.out["out.txt"].decode().splitlines()] == ["ok", "ok2"]
    src = r.stats["sources"][0]
    assert src["rows_rejected"] == 1 and src["values_coerced"] == 0
    assert r.report == (f"gsqlc: {path}: 1 of 3 rows rejected as malformed:\n"
                        f"gsqlc: {path}:2: field 8 '10.0.0.300' is not a valid IP\n")


def test_short_rows_read_zero_values_with_one_warning(build, tmp_path):
    r, path = csv_run(build, tmp_path, "1,2,3,4,5,6,7,1.1.1.1\n0,0,0,0,0,0,0,2.2.2.2\n")
    assert r.rc == 0
    assert r.out["out.txt"] == (
        b"77|TRUE|2|3|4|5|6|7.000000|1.1.1.1|0000:0000:0000:0000:0000:0000:0000:0000|\n"
        b"77|FALSE|0|0|0|0|0|0.000000|2.2.2.2|0000:0000:0000:0000:0000:0000:0000:0000|\n")
    assert r.report == (
        f"gsqlc: warning: {path}: field 9 is read but rows have only 8 fields; "
        f"it reads as 0 / empty / FALSE\n"
        f"gsqlc: warning: {path}: field 10 is read but rows have only 8 fields; "
        f"it reads as 0 / empty / FALSE\n")
    assert r.stats["sources"][0]["values_coerced"] == 0


def test_one_position_read_as_two_types(build, tmp_path):
    r, _ = csv_run(build, tmp_path, "1,2,0x1f,4,5,6,7,1.1.1.1,::,a\n1,9,abc,4,5,6,7,1.1.1.1,::,b\n",
                   sinks=[("csv_all", "pipe", "all.txt"), ("csv_alt", "pipe", "alt.txt")])
    assert r.rc == 0
    assert [l.split("|")[3] for l in r.out["all.txt"].decode().splitlines()] == ["31", "0"]
    assert r.out["alt.txt"] == b"0x1f|2\nabc|9\n"
    assert r.stats["sources"][0]["values_coerced"] == 1  # 'abc' as uint, once per row


def test_separator_option_and_tigon_pipe_input(build, tmp_path):
    r, _ = csv_run(build, tmp_path, "TRUE|1|2|3|4|5|6.5|1.2.3.4|::2|a,b\n",
                   options={"csv_separator": "|"})
    assert r.rc == 0
    assert r.out["out.txt"] == (b"77|TRUE|1|2|3|4|5|6.500000|1.2.3.4|"
                                b"0000:0000:0000:0000:0000:0000:0000:0002|a,b\n")


def test_csv_byte_order_mark_is_skipped(build, tmp_path):
    r, _ = csv_run(build, tmp_path, b"\xef\xbb\xbf1,2,3,4,5,6,7,1.1.1.1,::,x\n",
                   sinks=[("csv_alt", "pipe", "o")], options={"csv_strict": "1"})
    assert r.rc == 0 and r.out["o"] == b"3|2\n" and r.report == ""


def test_one_coerced_value_wording(build, tmp_path):
    r, path = csv_run(build, tmp_path, "1,2,3,4,5,6,7,1.1.1.1,::,x\n1,2,3,4,5,6,7,1.1.1.1,,y\n")
    assert r.report == (
        f"gsqlc: warning: {path}: 1 value was empty or not valid for their type and were read "
        f"as Tigon does (the valid prefix, or 0); first: {path}:2: field 9 '' is not a valid "
        f"IPV6\n")


def test_csv_from_stdin(build, tmp_path):
    r = run(build, tmp_path, "csv", binds=[("csv", "csv:-")], sinks=[("csv_alt", "pipe", "o")],
            stdin=b"1,2,3,4,5,6,7,1.1.1.1,::,x\n1,5,6,4,5,6,7,1.1.1.1,::,x")
    assert r.rc == 0 and r.out["o"] == b"3|2\n6|5\n"
    assert r.stats["sources"][0]["rows_read"] == 2


def test_overlong_record_and_unterminated_quote(build, tmp_path):
    good = "1,2,3,4,5,6,7,1.1.1.1,::,{}\n"
    text = (good.format("a") + "1,2,3,4,5,6,7,1.1.1.1,::," + "x" * (1 << 20) + "\n" +
            good.format("b") + '1,2,3,4,5,6,7,1.1.1.1,::,"never closed\n' + good.format("c"))
    r, path = csv_run(build, tmp_path, text, sinks=[("csv_alt", "pipe", "o")])
    assert r.rc == 0
    assert r.out["o"] == b"3|2\n3|2\n"
    assert r.stats["sources"][0]["rows_rejected"] == 2
    assert f"gsqlc: {path}:2: record longer than 1 MiB" in r.report
    assert f"gsqlc: {path}:4: unterminated quoted field" in r.report


def test_many_rows_and_small_batches(build, tmp_path):
    rows = "".join(f"1,{i % 65536},{i},4,5,6,7,1.1.1.1,::,r{i}\n" for i in range(20000))
    r, _ = csv_run(build, tmp_path, rows, options={"batch": "7"},
                   sinks=[("csv_alt", "pipe", "o"), ("csv_regex", "pipe", "rx")])
    assert r.rc == 0
    assert r.out["o"].count(b"\n") == 20000
    assert r.out["o"].endswith(b"19999|19999\n")
    assert r.out["rx"].endswith(b"20000|19999|TRUE\n20000|END|FALSE\n")
    names = {s["name"]: s for s in r.stats["streams"]}
    assert names["csv_all"]["tuples"] == 20000 and names["csv_regex"]["tuples"] == 20001
    assert names["csv_regex"]["eof"] == 1
    nodes = {n["name"]: n for n in r.stats["nodes"]}
    assert 1 <= nodes["csv_all"]["queue_high_water_entries"] <= 7


def test_runs_of_one_library_at_once_and_gsqlc_cancel(build, tmp_path):
    """Three runs of one library on three threads (sanitized): each writes
    its own complete output; gsqlc_cancel before the run ends it at its
    first round as at end of input (EOF, flushed), status 0."""
    rows = "".join(f"1,{i % 65536},{i},4,5,6,7,1.1.1.1,::,r{i}\n" for i in range(20000))
    r, _ = csv_run(build, tmp_path / "twins", rows, options={"batch": "64"},
                   sinks=[("csv_regex", "pipe", "rx")], twins=2)
    assert r.rc == 0 and r.raw["twin_rc"] == [0, 0], r
    for k in (1, 2):
        assert (tmp_path / "twins" / f"rx.{k}").read_bytes() == r.out["rx"]
        assert json.loads(r.raw["twin_stats"][k - 1])["interrupted"] is False
    assert r.out["rx"].endswith(b"20000|19999|TRUE\n20000|END|FALSE\n")
    assert r.raw["cancel_null"] == -1
    c, _ = csv_run(build, tmp_path / "cancel", rows, options={"batch": "64"},
                   sinks=[("csv_regex", "pipe", "rx")], cancel_first=True)
    assert c.rc == 0 and c.raw["cancel"] == 0, c
    assert c.stats["interrupted"] is True and c.stats["sources"][0]["rows_read"] == 64
    assert c.out["rx"].count(b"\n") == 65 and c.out["rx"].endswith(b"64|63|TRUE\n64|END|FALSE\n")
    assert c.report == "gsqlc: interrupted; the input read so far was processed and flushed\n"


def test_hfta_regex_eof_and_heartbeats_not_in_sinks(build, tmp_path):
    text = ("1,2,3,4,5,6,7,1.1.1.1,::,abc 123 def 45\n"
            "1,2,3,4,5,6,7,1.1.1.1,::,__heartbeat__\n"
            "1,2,3,4,5,6,7,1.1.1.1,::,no digits\n")
    r, _ = csv_run(build, tmp_path, text, sinks=[("csv_regex", "pipe", "rx"),
                                                  ("csv_all", "pipe", "all")])
    assert r.rc == 0, r
    assert r.out["rx"] == b"1|123|TRUE\n2||FALSE\n2|END|FALSE\n"
    assert b"__heartbeat__" not in r.out["all"] and r.out["all"].count(b"\n") == 2
    names = {s["name"]: s for s in r.stats["streams"]}
    assert names["csv_all"]["heartbeats"] == 1 and names["csv_all"]["tuples"] == 2


def test_params_and_init_failure(build, tmp_path):
    text = "1,2,5,4,5,6,7,1.1.1.1,::,a\n1,2,50,4,5,6,7,1.1.1.1,::,b\n"
    r, _ = csv_run(build, tmp_path, text, params={"min_ui": "10"})
    assert r.rc == 0 and r.out["out.txt"].endswith(b"|b\n") and r.out["out.txt"].count(b"\n") == 1
    r, _ = csv_run(build, tmp_path / "2", text, params={"$min_ui": "ten"})
    assert r.rc == -1 and r.error == "csv_all: parameter $min_ui: 'ten' is not a uint"
    r, _ = csv_run(build, tmp_path / "3", text, params={"fail_init": "1"})
    assert r.rc == -1 and r.error == "csv_all: parameter $fail_init is set"
    assert r.raw["rc2"] == -1 and "already executed" in r.raw["error2"]


def test_unbound_interface(build, tmp_path):
    r = run(build, tmp_path, "csv", sinks=[("csv_all", "pipe", "o")])
    assert r.rc == -1
    assert r.error == ("interface 'csv' is not bound (used by LFTA csv_all reading PROTOCOL "
                       "CSV_ALL); bind it with --source csv=URI")
    assert "o" not in r.out  # outputs are not created when the run cannot start


def test_interface_set_not_supported(build, tmp_path):
    r = run(build, tmp_path, "csv", binds=[("csv", "csv:/a"), ("csv", "csv:/b")])
    assert r.rc == -1
    assert "interface 'csv' is bound to more than one source" in r.error
    assert "not supported yet" in r.error


def test_nonexistent_inputs(build, tmp_path):
    r = run(build, tmp_path, "csv", binds=[("csv", f"csv:{tmp_path}/nope.csv")])
    assert r.rc == -1 and r.error == f"cannot open {tmp_path}/nope.csv: No such file or directory"
    r = run(build, tmp_path, "pkt", binds=[("pkt", f"pcap:{tmp_path}/nope.pcap")])
    assert r.rc == -1 and r.error == f"cannot open {tmp_path}/nope.pcap: No such file or directory"
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(b"this is not a capture file at all")
    r = run(build, tmp_path, "pkt", binds=[("pkt", f"pcap:{bad}")])
    assert r.rc == -1 and r.error.startswith(f"cannot open {bad}: ")


def test_source_kind_mismatch(build, tmp_path):
    r = run(build, tmp_path, "pkt", binds=[("pkt", "csv:/dev/null")])
    assert r.rc == -1
    assert r.error == ("LFTA pkt_all reads PROTOCOL PKT_ALL from pcap records, but interface "
                       "'pkt' is bound to csv:/dev/null")


def test_configuration_errors(build, tmp_path):
    r = run(build, tmp_path, "csv", do_run=False,
            options={"csv_separator": "ab", "clock": "fixed:x", "batch": "0", "nope": "1"},
            binds=[("csv", "http://x")],
            sinks=[("missing", "pipe", "o"), ("csv_all", "xml", "o")])
    errs = dict(r.setup_errors)
    assert errs["option csv_separator"] == "csv_separator must be one character, got 'ab'"
    assert errs["option clock"] == "clock must be auto, wall, data or fixed:SECONDS, got 'fixed:x'"
    assert "batch must be" in errs["option batch"]
    assert errs["option nope"].startswith("unknown option 'nope'")
    assert errs["bind csv"].startswith("unsupported source 'http://x'")
    assert errs["sink missing"] == ("no query named 'missing' (queries: csv_all, csv_alt, "
                                    "csv_regex)")
    assert errs["sink csv_all"] == "unknown output format 'xml' (expected pipe, csv, jsonl or gdat)"


def test_write_error_fails_the_run(build, tmp_path):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    rows = "".join(f"1,2,{i},4,5,6,7,1.1.1.1,::,x\n" for i in range(10))
    r, _ = csv_run(build, tmp_path, rows, sinks=[("csv_all", "pipe", "/dev/full")])
    assert r.rc == -1
    assert r.error == "cannot write to /dev/full: No space left on device"
    assert r.stats["ok"] is False


def test_unused_binding_is_reported(build, tmp_path):
    data = tmp_path / "in.csv"
    data.write_text("")
    r = run(build, tmp_path, "csv", binds=[("csv", f"csv:{data}"), ("other", "csv:/x")])
    assert r.rc == 0
    assert r.report == ("gsqlc: warning: interface 'other' is bound to csv:/x but no query "
                        "reads it\n")


# --------------------------------------------------------------------------
# pcap

def mac(s):
    return bytes(int(x, 16) for x in s.split(":"))


MAC_A, MAC_B = "00:11:22:33:44:55", "66:77:88:99:aa:bb"


def eth(payload, etype, vlans=(), dst=MAC_B, src=MAC_A):
    b = mac(dst) + mac(src)
    for tpid, tci in vlans:
        b += struct.pack("!HH", tpid, tci)
    return b + struct.pack("!H", etype) + payload


def ipv4(src, dst, proto, payload, ttl=64, tos=0, ident=0x1234, flags_frag=0, options=b"",
         total=None):
    ihl = 5 + len(options) // 4
    tot = ihl * 4 + len(payload) if total is None else total
    return struct.pack("!BBHHHBBH4s4s", (4 << 4) | ihl, tos, tot, ident, flags_frag, ttl, proto,
                       0, socket.inet_aton(src), socket.inet_aton(dst)) + options + payload


def ipv6(src, dst, nh, payload, hlim=64, tc=0):
    return struct.pack("!IHBB16s16s", (6 << 28) | (tc << 20) | 0x12345, len(payload), nh, hlim,
                       socket.inet_pton(socket.AF_INET6, src),
                       socket.inet_pton(socket.AF_INET6, dst)) + payload


def tcp(sport, dport, payload=b"", seq=1000, ack=2000, flags=0x18, window=512, options=b""):
    doff = 5 + len(options) // 4
    return struct.pack("!HHIIBBHHH", sport, dport, seq, ack, doff << 4, flags, window, 0,
                       0) + options + payload


def udp(sport, dport, payload):
    return struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload


def icmp(typ, code):
    return struct.pack("!BBHI", typ, code, 0, 0x01020304)


def pcap_bytes(packets, linktype=1, snaplen=65535):
    """packets: (sec, usec, frame[, caplen])"""
    out = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, snaplen, linktype)
    for p in packets:
        sec, usec, frame = p[:3]
        cap = p[3] if len(p) > 3 else len(frame)
        out += struct.pack("<IIII", sec, usec, cap, len(frame)) + frame[:cap]
    return out


def ip6hex(a):
    return socket.inet_pton(socket.AF_INET6, a).hex()


def pkt_run(build, tmp_path, data, options=None, name="t.pcap"):
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / name
    path.write_bytes(data)
    r = run(build, tmp_path, "pkt", binds=[("pkt", f"pcap:{path}")],
            sinks=[("pkt_all", "jsonl", "o.jsonl")], options=options or {"clock": "fixed:5"})
    rows = [json.loads(l) for l in r.out.get("o.jsonl", b"").splitlines()]
    for row in rows:
        row["f"] = dict(kv.split("=", 1) for kv in row["fields"].split(";") if kv)
    return r, rows, str(path)


ETH_COMMON = {"eth_src": str(int(MAC_A.replace(":", ""), 16)),
              "eth_dst": str(int(MAC_B.replace(":", ""), 16))}

HTTP = b"GET / HTTP/1.0\r\n\r\n"


def test_pcap_decoding_every_accessor(build, tmp_path):
    seg = tcp(1234, 80, HTTP, seq=0xDEADBEEF, ack=7, flags=0x18, window=4096,
              options=b"\x01\x01\x01\x00")
    p1 = eth(ipv4("10.0.0.1", "192.168.1.2", 6, seg, ttl=63, tos=0x10, flags_frag=0x4000), 0x0800)
    small = ipv4("10.1.1.1", "10.2.2.2", 17, udp(53, 5353, b"hi"))
    p2 = eth(small, 0x0800, vlans=[(0x8100, 0x2064)]) + b"\0" * 16  # VID 100, padding
    p3 = eth(ipv4("1.1.1.1", "2.2.2.2", 1, icmp(8, 0)), 0x0800,
             vlans=[(0x88A8, 200), (0x8100, 300)])
    hbh = struct.pack("!BB6s", 6, 0, b"\x01\x04\0\0\0\0")
    p4 = eth(ipv6("2001:db8::1", "2001:db8::2", 0, hbh + tcp(40000, 443, flags=0x02, seq=1,
                                                               ack=0)), 0x86DD)
    p5 = eth(ipv6("fe80::1", "ff02::fb", 17, udp(5353, 5353, b"mdns!"), hlim=255, tc=0x2E),
             0x86DD)
    p6 = eth(ipv6("::1", "::2", 58, icmp(128, 0)), 0x86DD)
    p7 = eth(b"\x00\x01\x08\x00\x06\x04\x00\x01" + b"\0" * 20, 0x0806)
    p8 = eth(ipv4("3.3.3.3", "4.4.4.4", 17, b"x" * 16, flags_frag=0x2000 | 185), 0x0800)
    p9 = eth(ipv4("5.5.5.5", "6.6.6.6", 17, udp(1, 2, b"opt"), options=b"\x01\x01\x01\x00"),
             0x0800)
    p10 = eth(ipv4("7.7.7.7", "8.8.8.8", 6, tcp(1, 2, b"z" * 100)), 0x0800)
    frag1 = struct.pack("!BBHI", 17, 0, 1, 0xCAFE)  # offset 0, M=1
    p11 = eth(ipv6("2001:db8::a", "2001:db8::b", 44, frag1 + udp(7, 9, b"frag")), 0x86DD)
    frag2 = struct.pack("!BBHI", 17, 0, (3 << 3), 0xCAFE)  # offset 3, M=0
    p12 = eth(ipv6("2001:db8::a", "2001:db8::b", 44, frag2 + b"rest"), 0x86DD)
    packets = [(100, 1, p1), (100, 2, p2), (101, 0, p3), (102, 999999, p4), (103, 5, p5),
               (104, 6, p6), (105, 7, p7), (106, 8, p8), (107, 9, p9),
               (108, 10, p10, 14 + 20 + 10), (109, 11, p11), (110, 12, p12)]
    r, rows, _ = pkt_run(build, tmp_path, pcap_bytes(packets))
    assert r.rc == 0 and r.report == "", r
    assert len(rows) == 12
    for row, p in zip(rows, packets):
        assert row["time"] == p[0] and row["timestamp"] == p[0] * 1000000 + p[1]
        assert row["wire_len"] == len(p[2])
        assert row["caplen"] == (p[3] if len(p) > 3 else len(p[2]))
        assert row["systemTime"] == 5

    def ip4(src, dst, proto, length, **kw):
        d = {"eth_type": "2048", "vlan_id": "0", "ipversion": "4", "protocol": str(proto),
             "len": str(length), "hdr_length": "20", "ttl": "64", "tos": "0", "id": "4660",
             "offset": "0", "more_fragments": "0", "dont_fragment": "0", "srcIP": src,
             "destIP": dst}
        d.update(ETH_COMMON)
        d.update({k: str(v) for k, v in kw.items()})
        return d

    def ip6(src, dst, proto, length, hdr=40, **kw):
        d = {"eth_type": "34525", "vlan_id": "0", "ipversion": "6", "protocol": str(proto),
             "len": str(length), "hdr_length": str(hdr), "ttl": "64", "tos": "0", "id": "0",
             "offset": "0", "more_fragments": "0", "dont_fragment": "0",
             "srcIPv6": ip6hex(src), "destIPv6": ip6hex(dst)}
        d.update(ETH_COMMON)
        d.update({k: str(v) for k, v in kw.items()})
        return d

    def tcpf(sport, dport, seq, ack, flags, window, dlen, caplen=None):
        names = ["fin", "syn", "rst", "psh", "ack", "urg"]
        d = {"srcPort": sport, "destPort": dport, "tcp_srcPort": sport, "tcp_destPort": dport,
             "sequence_number": seq, "ack_number": ack, "flags": flags, "window": window,
             "data_length": dlen, "TCP_data_len": dlen if caplen is None else caplen}
        d.update({n: (flags >> i) & 1 for i, n in enumerate(names)})
        return {k: str(v) for k, v in d.items()}

    def udpf(sport, dport, ulen):
        return {k: str(v) for k, v in {"srcPort": sport, "destPort": dport, "udp_srcPort": sport,
                                       "udp_destPort": dport, "udp_length": ulen,
                                       "UDP_data_len": ulen - 8}.items()}

    exp = [
        {**ip4("10.0.0.1", "192.168.1.2", 6, 20 + 24 + len(HTTP), ttl=63, tos=16,
               dont_fragment=1), **tcpf(1234, 80, 0xDEADBEEF, 7, 0x18, 4096, len(HTTP))},
        {**ip4("10.1.1.1", "10.2.2.2", 17, 30, vlan_id=100), **udpf(53, 5353, 10)},
        {**ip4("1.1.1.1", "2.2.2.2", 1, 28, vlan_id=200), "icmp_type": "8", "icmp_code": "0"},
        {**ip6("2001:db8::1", "2001:db8::2", 6, 40 + 8 + 20, hdr=48),
         **tcpf(40000, 443, 1, 0, 2, 512, 0)},
        {**ip6("fe80::1", "ff02::fb", 17, 40 + 13, ttl=255, tos=0x2E), **udpf(5353, 5353, 13)},
        {**ip6("::1", "::2", 58, 48), "icmp_type": "128", "icmp_code": "0"},
        {**ETH_COMMON, "eth_type": "2054", "vlan_id": "0"},
        ip4("3.3.3.3", "4.4.4.4", 17, 36, offset=185, more_fragments=1),
        {**ip4("5.5.5.5", "6.6.6.6", 17, 24 + 11, hdr_length=24), **udpf(1, 2, 11)},
        ip4("7.7.7.7", "8.8.8.8", 6, 20 + 20 + 100),
        {**ip6("2001:db8::a", "2001:db8::b", 17, 40 + 8 + 12, hdr=48, id=0xCAFE,
               more_fragments=1), **udpf(7, 9, 12)},
        ip6("2001:db8::a", "2001:db8::b", 17, 40 + 8 + 4, hdr=48, id=0xCAFE, offset=3),
    ]
    for i, (row, e) in enumerate(zip(rows, exp)):
        assert row["f"] == e, f"packet {i + 1}"
    assert rows[0]["TCP_data"] == HTTP.decode() and rows[0]["UDP_data"] == ""
    assert rows[1]["UDP_data"] == "hi"  # not the Ethernet padding
    assert rows[4]["UDP_data"] == "mdns!"
    assert rows[3]["srcIPv6"] == "2001:0db8:0000:0000:0000:0000:0000:0001"
    assert rows[0]["srcIPv6"] == "0000:0000:0000:0000:0000:0000:0000:0000"
    src = r.stats["sources"][0]
    assert src["kind"] == "pcap" and src["packets_read"] == 12
    assert src["bytes_read"] == sum(p[3] if len(p) > 3 else len(p[2]) for p in packets)


def test_pcap_link_types(build, tmp_path):
    seg = udp(1000, 2000, b"payload")
    v4 = ipv4("9.9.9.9", "8.8.8.8", 17, seg)
    v6 = ipv6("2001:db8::9", "2001:db8::8", 6, tcp(5, 6, b"abc"))
    sll = struct.pack("!HHH8sH", 0, 1, 6, mac(MAC_A) + b"\0\0", 0x0800) + v4
    cases = [
        (113, sll, {"eth_src": ETH_COMMON["eth_src"], "ipversion": "4", "srcPort": "1000"},
         ["eth_dst"]),
        (101, v6, {"ipversion": "6", "eth_type": "34525", "tcp_srcPort": "5",
                   "TCP_data_len": "3"}, ["eth_src", "eth_dst"]),
        (0, struct.pack("<I", 2) + v4, {"ipversion": "4", "udp_length": "15"}, ["eth_src"]),
        (0, struct.pack("<I", 30) + v6, {"ipversion": "6", "destPort": "6"}, ["eth_src"]),
        (108, struct.pack(">I", 2) + v4, {"ipversion": "4", "srcIP": "9.9.9.9"}, ["eth_dst"]),
    ]
    for i, (lt, frame, want, absent) in enumerate(cases):
        r, rows, _ = pkt_run(build, tmp_path / str(i), pcap_bytes([(1, 0, frame)], linktype=lt))
        assert r.rc == 0 and len(rows) == 1, (lt, r)
        f = rows[0]["f"]
        for k, v in want.items():
            assert f.get(k) == v, (lt, k, f)
        for k in absent:
            assert k not in f, (lt, k)
    # an undecoded link type: only the PKT fields
    r, rows, path = pkt_run(build, tmp_path / "x", pcap_bytes([(1, 0, v4)], linktype=147))
    assert r.rc == 0 and rows[0]["f"] == {} and rows[0]["caplen"] == len(v4)
    assert r.report == (f"gsqlc: warning: {path}: link type 147 is not decoded; only time, "
                        f"timestamp, caplen and wire_len are available\n")


def test_pcap_truncated_file(build, tmp_path):
    frame = eth(ipv4("1.2.3.4", "5.6.7.8", 17, udp(1, 2, b"data")), 0x0800)
    data = pcap_bytes([(1, 0, frame), (2, 0, frame), (3, 0, frame), (4, 0, frame)])
    r, rows, path = pkt_run(build, tmp_path, data[:-10])
    assert r.rc == 0, r
    assert [row["time"] for row in rows] == [1, 2, 3]
    cut = 24 + 3 * (16 + len(frame))  # where the last record starts
    assert r.report == (f"gsqlc: {path}: truncated capture after 3 packets (at byte {cut}: "
                        f"record cut short: {len(frame)} captured bytes, the file ends after "
                        f"{len(frame) - 10}); what was read was processed\n")
    src = r.stats["sources"][0]
    assert src["truncated"] is True and src["pcap_reader"] == "mmap"
    assert src["read_error"] == r.report.split("(")[1].split(")")[0]
    # a cut inside a record header
    r, rows, path = pkt_run(build, tmp_path / "h", data[:24 + 16 + len(frame) + 7])
    assert r.rc == 0 and len(rows) == 1
    assert "truncated capture after 1 packets (at byte " in r.report
    # through libpcap: its message
    r, rows, path = pkt_run(build, tmp_path / "l", data[:-10],
                            options={"clock": "fixed:5", "pcap_reader": "libpcap"})
    assert r.rc == 0 and [row["time"] for row in rows] == [1, 2, 3]
    assert r.report == (f"gsqlc: {path}: truncated capture after 3 packets (libpcap: truncated "
                        f"dump file; tried to read {len(frame)} captured bytes, only got "
                        f"{len(frame) - 10}); what was read was processed\n")
    assert r.stats["sources"][0]["pcap_reader"] == "libpcap"


def test_data_clock_follows_packets(build, tmp_path):
    frame = eth(ipv4("1.2.3.4", "5.6.7.8", 17, udp(1, 2, b"")), 0x0800)
    data = pcap_bytes([(1000, 0, frame), (1005, 0, frame), (1003, 0, frame), (1010, 5, frame)])
    r, rows, _ = pkt_run(build, tmp_path, data, options={"clock": "data", "batch": "2"})
    assert r.rc == 0
    assert [row["systemTime"] for row in rows] == [1000, 1005, 1005, 1010]
    assert r.stats["clock"] == "data"


def test_stats_json_shape(build, tmp_path):
    r, _ = csv_run(build, tmp_path, "1,2,3,4,5,6,7,1.1.1.1,::,x\n",
                   sinks=[("csv_all", "pipe", "a"), ("csv_regex", "jsonl", "b")])
    s = r.stats
    assert s["ok"] is True and s["interrupted"] is False
    assert set(s) >= {"sources", "streams", "nodes", "sinks", "tuples_written"}
    assert s["tuples_written"] == 1 + 2
    assert [n["kind"] for n in s["nodes"]] == ["lfta", "lfta", "hfta"]
    assert {"late_dropped", "lfta_ejections", "field_unavailable"} <= set(s["nodes"][0])
    assert s["sinks"][0] == {"query": "csv_all", "format": "pipe", "path": str(tmp_path / "a"),
                             "tuples": 1, "bytes": len(r.out["a"])}


def test_sigint_ends_the_run_like_end_of_input(build, tmp_path):
    import signal
    import time
    spec = {"lib": str(build["libs"]["csv"]), "options": {"clock": "fixed:1"},
            "binds": [["csv", "csv:-"]], "params": {},
            "sinks": [["csv_regex", "pipe", str(tmp_path / "o")]],
            "result": str(tmp_path / "result.json")}
    p = _start_driver(build, tmp_path, spec)
    try:
        p.stdin.write(b"1,2,3,4,5,6,7,1.1.1.1,::,a1\n1,2,3,4,5,6,7,1.1.1.1,::,b2\n")
        p.stdin.flush()
        deadline = time.time() + 20
        # stdin is a streaming source: sinks are flushed after every batch
        while not (tmp_path / "o").exists() or not (tmp_path / "o").read_bytes():
            assert time.time() < deadline and p.poll() is None
            time.sleep(0.05)
        p.send_signal(signal.SIGINT)
        # the cancel alone must end the run: stdin stays open until it has
        # (closing it first would race the signal with end of input)
        p.wait(timeout=20)
        _, err = p.communicate(timeout=20)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0, err.decode(errors="replace")
    res = json.loads((tmp_path / "result.json").read_text())
    assert res["rc"] == 0
    assert json.loads(res["stats"])["interrupted"] is True
    assert res["report"] == "gsqlc: interrupted; the input read so far was processed and flushed\n"
    assert (tmp_path / "o").read_bytes() == b"1|1|TRUE\n2|2|TRUE\n2|END|FALSE\n"


# --------------------------------------------------------------------------
# heartbeats, skew, stalls, traces (the hb query set: LFTAs hb_a on "a" and
# hb_b on "b", HFTA hb_merge passing both through with gsq_emit_raw, HFTA
# hb_stats counting data and heartbeats into hb_summary)

SEC = 1000000


def udp_frame(payload):
    return eth(ipv4("10.0.0.1", "10.0.0.2", 17, udp(1000, 2000, payload)), 0x0800)


def pcap_at(times_us, tag=b"p"):
    """One UDP packet per timestamp (microseconds); payloads differ in length."""
    return pcap_bytes([(t // SEC, t % SEC, udp_frame(tag + b"x" * (i % 7) + str(i).encode()))
                       for i, t in enumerate(times_us)])


def span(start_s, end_s, step_us):
    return list(range(start_s * SEC, end_s * SEC + 1, step_us))


def hb_run(build, tmp_path, a_us, b_us=(), options=None, params=None, sinks=None,
           do_run=True):
    tmp_path.mkdir(parents=True, exist_ok=True)
    a, b = tmp_path / "a.pcap", tmp_path / "b.pcap"
    a.write_bytes(pcap_at(a_us, b"a"))
    b.write_bytes(pcap_at(b_us, b"b"))
    opts = {"clock": "data"}
    opts.update(options or {})
    if sinks is None:
        sinks = [("hb_summary", "jsonl", "sum.jsonl"), ("hb_out", "jsonl", "out.jsonl"),
                 ("hb_a", "jsonl", "a.jsonl"), ("hb_b", "jsonl", "b.jsonl")]
    r = run(build, tmp_path, "hb", binds=[("a", f"pcap:{a}"), ("b", f"pcap:{b}")],
            sinks=sinks, options=opts, params=params, do_run=do_run)
    r.rows = {k: [json.loads(l) for l in v.splitlines()] for k, v in r.out.items()}
    r.streams = {s["name"]: s for s in r.stats["streams"]}
    r.nodes = {n["name"]: n for n in r.stats["nodes"]}
    r.uris = (f"pcap:{a}", f"pcap:{b}")
    return r


def test_heartbeats_follow_the_data_clock(build, tmp_path):
    a = span(1000, 1020, 250000)  # 81 packets over 20 s
    r = hb_run(build, tmp_path, a, options={"batch": "8"})
    assert r.rc == 0 and r.report == "", r
    assert r.stats["heartbeat_interval_usec"] == SEC and r.stats["heartbeat_ticks"] == 20
    # hb_b has seen nothing and has no skew: it announces nothing
    assert r.streams["hb_a"]["heartbeats"] == 20 and r.streams["hb_b"]["heartbeats"] == 0
    assert r.streams["hb_out"]["heartbeats"] == 20 and r.streams["hb_a"]["tuples"] == 81
    s = r.rows["sum.jsonl"]
    # the first tick (clock 1001 s) came after the first batch: the packets up
    # to 1001 s (two files are replayed time-aligned, one second at a time)
    assert s == [{"n_data": 81, "n_hb": 20, "n_joint": 0, "first_hb_usec": 1001000000,
                  "last_hb_usec": 1020000000}]
    # gsq_emit_raw passed every tuple through unchanged, strings included
    assert r.out["out.jsonl"] == r.out["a.jsonl"] and len(r.rows["out.jsonl"]) == 81
    assert r.rows["out.jsonl"][3]["payload"] == "axxx3" and r.rows["out.jsonl"][3]["iface"] == "a"

    r = hb_run(build, tmp_path / "half", a, options={"heartbeat_interval": "0.5"})
    assert r.rc == 0 and r.stats["heartbeat_ticks"] == 40
    assert r.rows["sum.jsonl"][0]["n_hb"] == 40
    for off in ["0", "off"]:
        r = hb_run(build, tmp_path / off, a, options={"heartbeat_interval": off})
        assert r.rc == 0 and r.stats["heartbeat_ticks"] == 0, off
        assert r.streams["hb_a"]["heartbeats"] == 0 and r.rows["sum.jsonl"][0]["n_hb"] == 0
        assert r.stats["heartbeat_interval_usec"] == 0


def test_fixed_clock_never_ticks(build, tmp_path):
    r = hb_run(build, tmp_path, span(1000, 1010, SEC), options={"clock": "fixed:5000"})
    assert r.rc == 0 and r.stats["heartbeat_ticks"] == 0
    assert r.rows["sum.jsonl"][0] == {"n_data": 11, "n_hb": 0, "n_joint": 0, "first_hb_usec": 0,
                                      "last_hb_usec": 0}


def test_heartbeat_option_errors(build, tmp_path):
    opts = [["heartbeat_interval", v] for v in
            ["-1", "abc", "1s", "", "nan", "inf", "1e10", "0.0000001", "0.5", "1e-3", "+2",
             "1.0", "off", "0", "-0"]]
    opts += [["stall_intervals", v] for v in ["0", "x", "-1", "2"]]
    opts += [["max_skew:a", "-1"], ["max_skew:", "1"], ["max_skew:a", "one"],
             ["max_skew:a", "0.25"], ["out_of_order:a", "-2"], ["out_of_order:", "1"],
             ["out_of_order:a", "1e10"], ["out_of_order:a", "2"], ["trace", ""], ["arrow_flush", "yes"],
             ["arrow_flush", "1"], ["time_unit:a", "min"], ["time_unit:", "ms"], ["time_unit:a", "ns"],
             ["arrival:a", "0"], ["arrival:a", "3:string"], ["arrival:", "3"],
             ["arrival:a", "3:ullong"],
             # the heartbeat generator's (seed 002)
             ["latency:a", "-1"], ["latency:a", "0.5"], ["skew:a", "1,2"], ["skew:a:a", "1,2"],
             ["skew:a:b", "1"], ["skew:a:b", "1,-2"], ["skew:a:b", "1,2;3,0.5"],
             ["hb_estimate", "guess"], ["hb_estimate", "adaptive"], ["hb_level", "global"],
             ["hb_level", "query"], ["hb_horizon", "0"], ["hb_horizon", "5"],
             ["hb_timeout", "-1"], ["hb_timeout", "0"], ["hb_window", "0"], ["hb_window", "10"],
             ["hb_alpha", "1.5"], ["hb_alpha", "-0.5"], ["hb_alpha", "0.25"],
             ["pcap_reader", "pcapng"], ["pcap_reader", "libpcap"], ["pcap_reader", "mmap"],
             ["pcap_range:a", "5"], ["pcap_range:a", "9:3"], ["pcap_range:", "1:2"],
             ["pcap_range:a", "x:2"], ["pcap_range:a", "24:2400"],
             ["columnar", "on"], ["columnar", "off"], ["columnar", "auto"],
             ["max_groups", "0"], ["max_groups", "x"], ["max_groups", ""], ["max_groups", "5"],
             ["ip_format", "hex"], ["ip_format", "int"], ["ip_format", "text"],
             ["bogus", "1"], ["prop:x", "1"], ["prop:a:Dir", "in"]]
    r = run(build, tmp_path, "hb", do_run=False, options=opts)
    errs = [e[1] for e in r.setup_errors]
    assert errs == [
        "heartbeat_interval must not be negative, got '-1' (0 or off disables heartbeats)",
        "heartbeat_interval must be a number of seconds (e.g. 1 or 0.5), or 0 or off to "
        "disable heartbeats, got 'abc'",
        "heartbeat_interval must be a number of seconds (e.g. 1 or 0.5), or 0 or off to "
        "disable heartbeats, got '1s'",
        "heartbeat_interval must be a number of seconds (e.g. 1 or 0.5), or 0 or off to "
        "disable heartbeats, got ''",
        "heartbeat_interval must be a number of seconds (e.g. 1 or 0.5), or 0 or off to "
        "disable heartbeats, got 'nan'",
        "heartbeat_interval must be a number of seconds (e.g. 1 or 0.5), or 0 or off to "
        "disable heartbeats, got 'inf'",
        "heartbeat_interval '1e10' is out of range (from 0.000001 to 1000000000 seconds; 0 or "
        "off disables heartbeats)",
        "heartbeat_interval '0.0000001' is out of range (from 0.000001 to 1000000000 seconds; "
        "0 or off disables heartbeats)",
        "stall_intervals must be an integer from 1 to 1000000, got '0'",
        "stall_intervals must be an integer from 1 to 1000000, got 'x'",
        "stall_intervals must be an integer from 1 to 1000000, got '-1'",
        "max_skew:a must be a number of seconds >= 0 (e.g. 2 or 0.5), got '-1'",
        "max_skew needs an interface name: max_skew:NAME",
        "max_skew:a must be a number of seconds >= 0 (e.g. 2 or 0.5), got 'one'",
        "out_of_order:a must be a number of seconds >= 0 (e.g. 2 or 0.5), got '-2'",
        "out_of_order needs an interface name: out_of_order:NAME",
        "out_of_order:a '1e10' is too large (at most 1000000000 seconds)",
        "trace needs a file path",
        "arrow_flush must be 0 or 1, got 'yes'",
        "time_unit:a must be s, ms, us or ns, got 'min'",
        "time_unit needs an interface name: time_unit:NAME",
        "arrival:a must be a CSV position, optionally with a numeric type, time format and "
        "field name (e.g. 3, 3:ullong or 3:ullong:iso8601:recv), got '0'",
        "arrival:a must be a CSV position, optionally with a numeric type, time format and "
        "field name (e.g. 3, 3:ullong or 3:ullong:iso8601:recv), got '3:string'",
        "arrival needs an interface name: arrival:NAME",
        "latency:a must be a number of seconds >= 0 (e.g. 2 or 0.5), got '-1'",
        "skew needs two interface names: skew:FROM:TO, got 'skew:a'",
        "skew:a:a names one interface twice (its own disorder is out_of_order)",
        "skew:a:b must be AFTER,BOUND seconds >= 0 (wall-clock delay, application-time "
        "bound), several separated by ';', got '1'",
        "skew:a:b must be AFTER,BOUND seconds >= 0 (wall-clock delay, application-time "
        "bound), several separated by ';', got '1,-2'",
        "hb_estimate must be given, max or adaptive, got 'guess'",
        "hb_level must be operator or query, got 'global'",
        "hb_horizon must be a number of seconds > 0 (at most 1000000000), got '0'",
        "hb_timeout must be a number of seconds >= 0 (0: none) (at most 1000000000), got '-1'",
        "hb_window must be an integer >= 1 (records), got '0'",
        "hb_alpha must be a number from 0 to 1, got '1.5'",
        "hb_alpha must be a number from 0 to 1, got '-0.5'",
        "pcap_reader must be mmap or libpcap, got 'pcapng'",
        "pcap_range:a must be START:END (byte offsets, START <= END), got '5'",
        "pcap_range:a must be START:END (byte offsets, START <= END), got '9:3'",
        "pcap_range needs an interface name: pcap_range:NAME",
        "pcap_range:a must be START:END (byte offsets, START <= END), got 'x:2'",
        "columnar must be auto or off, got 'on'",
        "max_groups must be a positive integer, got '0'",
        "max_groups must be a positive integer, got 'x'",
        "max_groups must be a positive integer, got ''",
        "ip_format must be text or int, got 'hex'",
        "unknown option 'bogus' (known: csv_separator, csv_strict, clock, batch, "
        "columnar, prefilter, heartbeat_interval, max_skew:NAME, out_of_order:NAME, latency:NAME, "
        "skew:FROM:TO, "
        "hb_estimate, hb_level, hb_horizon, hb_window, hb_alpha, hb_timeout, time_unit:NAME, "
        "arrival:NAME, csv_header:NAME, stall_intervals, max_groups, ip_format, report, trace, "
        "arrow_heartbeats, "
        "final_heartbeat, arrow_flush, pcap_reader, live_snaplen:NAME, live_promisc:NAME, "
        "live_block_size:NAME, live_blocks:NAME, live_block_timeout:NAME, "
        "live_fanout:NAME, live_kernel_filter:NAME, live_xdp:NAME, live_xdp_drop:NAME, "
            "partition, pcap_range:NAME, "
        "prop:NAME:PROPERTY, recording:NAME)",
        "option 'prop:x': expected prop:INTERFACE:PROPERTY",
    ]


def test_max_skew_bounds_the_clock(build, tmp_path):
    a, b = span(1000, 1002, SEC), span(1000, 1001, SEC)
    r = hb_run(build, tmp_path, a, b, options={"clock": "fixed:100", "max_skew:a": "2.5"})
    assert r.rc == 0, r
    assert {(x["bound_ok"], x["bound_usec"]) for x in r.rows["a.jsonl"]} == {(True, 97500000)}
    # no max_skew for "b": no clock-based inference
    assert {(x["bound_ok"], x["bound_usec"]) for x in r.rows["b.jsonl"]} == {(False, 0)}
    r = hb_run(build, tmp_path / "sat", a, b, options={"clock": "fixed:100",
                                                       "max_skew:a": "200"})
    assert {(x["bound_ok"], x["bound_usec"]) for x in r.rows["a.jsonl"]} == {(True, 0)}
    # the data clock: the largest timestamp so far (this record's) less the skew
    a = [1000 * SEC + 700000, 1001 * SEC, 1003 * SEC + 1]
    r = hb_run(build, tmp_path / "data", a, options={"max_skew:a": "0.5", "max_skew:zz": "1"})
    assert [x["bound_usec"] for x in r.rows["a.jsonl"]] == [1000200000, 1000500000,
                                                          1002500001]
    assert r.report == ("gsqlc: warning: max_skew is set for interface 'zz', which no query "
                        "reads\n")
    r = hb_run(build, tmp_path / "none", a)
    assert {x["bound_ok"] for x in r.rows["a.jsonl"]} == {False}


def test_idle_source_advances_from_the_clock_with_skew(build, tmp_path):
    # "b" sees one packet, then nothing until its last at the end: with
    # max_skew:b its heartbeats follow the data clock (driven by "a") less
    # the skew; without, they stay put.  (A source at its end is no idle
    # one: its LFTAs end, and their end is their progress.)
    a, b = span(1000, 1010, 100000), [1000 * SEC, 1020 * SEC]
    r = hb_run(build, tmp_path, a, b, options={"max_skew:b": "2"})
    assert r.rc == 0 and r.streams["hb_b"]["heartbeats"] == 20
    r2 = hb_run(build, tmp_path / "noskew", a, b)
    assert r2.streams["hb_b"]["heartbeats"] == 20
    # b's records see the bound its heartbeats follow: the data clock less
    # the skew (none without max_skew)
    assert [(x["bound_ok"], x["bound_usec"]) for x in r.rows["b.jsonl"]] == [
        (True, 999 * SEC), (True, 1018 * SEC)]
    assert {x["bound_ok"] for x in r2.rows["b.jsonl"]} == {False}
    # hb_stats sees both inputs' heartbeats through hb_merge, the last one
    # once b's last record was read
    assert r.rows["sum.jsonl"][0]["last_hb_usec"] == 1020 * SEC


def test_skew_dropped_counter_in_report(build, tmp_path):
    a = [t * 100000 for t in [10000, 10010, 10020, 10030, 10040, 10050, 10025, 10055]]
    r = hb_run(build, tmp_path, a, options={"max_skew:a": "1", "batch": "1"})
    assert r.rc == 0, r
    assert r.nodes["hb_a"]["skew_dropped"] == 1 and r.nodes["hb_b"]["skew_dropped"] == 0
    assert [x["ts_usec"] for x in r.rows["a.jsonl"]][-2:] == [1005000000, 1005500000]
    assert r.report == ("gsqlc: hb_a: 1 tuples arrived later than the time its heartbeats had "
                        "already promised (max_skew, out_of_order) and were discarded\n")


def stall_events(r):
    return [(e["event"], e.get("source") or e.get("node")) for e in r.stats["events"]]


def test_stalled_and_recovered_sources(build, tmp_path):
    a = span(1000, 1030, 100000)
    b = span(1000, 1005, 100000)[:-1] + span(1020, 1030, 100000)  # idle from 1004.9 to 1020
    r = hb_run(build, tmp_path, a, b)
    assert r.rc == 0, r
    assert stall_events(r) == [("stalled", "b"), ("recovered", "b")]
    st, rec = r.stats["events"]
    assert st["uri"] == r.uris[1] and st["intervals"] == 3
    assert 1007900000 <= st["clock_usec"] <= 1009000000
    assert 1020000000 <= rec["clock_usec"] <= 1021000000
    assert r.report == (
        f"gsqlc: source b ({r.uris[1]}) stalled: no records for 3 heartbeat intervals "
        f"(clock {st['clock_usec'] // SEC}.{st['clock_usec'] % SEC:06d})\n"
        f"gsqlc: source b ({r.uris[1]}) recovered: records arrive again "
        f"(clock {rec['clock_usec'] // SEC}.{rec['clock_usec'] % SEC:06d})\n")
    # time-aligned replay: hb_merge saw the two files interleaved in time
    ts = [x["ts_usec"] for x in r.rows["out.jsonl"]]
    assert max(p - q for p, q in zip(ts, ts[1:])) <= 2 * SEC

    # an LFTA silent as long (hb_b without heartbeats) is stalled too
    r = hb_run(build, tmp_path / "node", a, b, params={"no_hb": "hb_b"},
               options={"stall_intervals": "5"})
    assert stall_events(r) == [("stalled", "b"), ("stalled", "hb_b"), ("recovered", "b"),
                               ("recovered", "hb_b")]
    assert r.stats["events"][1]["intervals"] == 5 and r.stats["stall_intervals"] == 5
    assert "gsqlc: node hb_b stalled: no tuples for 5 heartbeat intervals" in r.report
    assert "gsqlc: node hb_b recovered: tuples flow again" in r.report

    # a source at its end is not stalled, and the run ends with the files
    r = hb_run(build, tmp_path / "end", a, span(1000, 1005, 100000), params={"no_hb": "hb_b"})
    assert r.rc == 0 and r.stats["events"] == [] and r.report == ""


def test_trace_lines(build, tmp_path):
    trace = tmp_path / "trace.jsonl"
    a = span(1000, 1020, 250000)
    r = hb_run(build, tmp_path, a, options={"batch": "8", "trace": str(trace)})
    assert r.rc == 0, r
    lines = [json.loads(l) for l in trace.read_text().splitlines()]
    assert len(lines) == 20 and r.stats["traces_written"] == 20
    assert [t["trace"] for t in lines] == list(range(1, 21))
    for t in lines:
        assert t["origin"] == "hb_a" and t["clock_usec"] >= 1001 * SEC
        assert [h["node"] for h in t["hops"]] == ["hb_merge", "hb_stats"]
        times = [t["emitted_usec"]] + [h["arrived_usec"] for h in t["hops"]]
        assert times == sorted(times)
        assert all(h["clock_usec"] == t["clock_usec"] for h in t["hops"])
    if os.path.exists("/dev/full"):
        r = hb_run(build, tmp_path / "full", a, options={"trace": "/dev/full"})
        assert r.rc == -1
        assert r.error == "cannot write trace file /dev/full: No space left on device"
    r = hb_run(build, tmp_path / "nodir", a, options={"trace": str(tmp_path / "no/such")})
    assert r.rc == -1 and r.error.startswith(f"cannot open trace file {tmp_path}/no/such: ")


def test_joint_heartbeats_reach_operators_not_sinks_nor_traces(build, tmp_path):
    # hb_merge emits a GSQ_JOINT_HEARTBEAT after each heartbeat it passes on
    trace = tmp_path / "trace.jsonl"
    a = span(1000, 1020, 250000)
    r = hb_run(build, tmp_path, a, params={"joint": "1"},
               options={"batch": "8", "trace": str(trace)})
    assert r.rc == 0 and r.report == "", r
    # counted per stream apart from heartbeats (and from EOF)
    assert r.streams["hb_out"]["joint_heartbeats"] == 20
    assert r.streams["hb_out"]["heartbeats"] == 20 and r.streams["hb_out"]["eof"] == 1
    assert r.streams["hb_a"]["joint_heartbeats"] == 0
    # routed to the HFTA reading the stream, as heartbeats are
    assert r.rows["sum.jsonl"] == [{"n_data": 81, "n_hb": 20, "n_joint": 20,
                                    "first_hb_usec": 1001000000, "last_hb_usec": 1020000000}]
    # never to a sink: the same rows as without them
    plain = hb_run(build, tmp_path / "plain", a, options={"batch": "8"})
    assert r.out["out.jsonl"] == plain.out["out.jsonl"] and len(r.rows["out.jsonl"]) == 81
    # nor a hop of a heartbeat's trace
    lines = [json.loads(line) for line in trace.read_text().splitlines()]
    assert len(lines) == 20
    assert all([h["node"] for h in t["hops"]] == ["hb_merge", "hb_stats"] for t in lines)


def test_emit_raw_rejects_broken_tuples(build, tmp_path):
    a = span(1000, 1001, SEC)
    r = hb_run(build, tmp_path, a, params={"bad_raw": "short"})
    assert r.rc == -1
    assert r.error == "hb_merge: internal error: raw emit of 39 bytes on stream hb_out of 40 bytes"
    r = hb_run(build, tmp_path / "s", a, params={"bad_raw": "strref"})
    assert r.rc == -1
    assert r.error.startswith("hb_merge: internal error: raw emit on stream hb_out: string "
                              "column payload (offset ")
    assert r.error.endswith(") outside the tuple of 43 bytes")  # 40 + "a" + "a0"


def test_idle_stdin_ticks_and_stalls_on_the_wall_clock(build, tmp_path):
    import signal
    import time
    spec = {"lib": str(build["libs"]["csv"]), "params": {"hb": "1"},
            "options": {"heartbeat_interval": "0.1", "stall_intervals": "2"},
            "binds": [["csv", "csv:-"]], "sinks": [["csv_all", "pipe", str(tmp_path / "o")]],
            "result": str(tmp_path / "result.json")}
    p = _start_driver(build, tmp_path, spec)

    def wait_rows(n):
        deadline = time.time() + 20
        while not (tmp_path / "o").exists() or (tmp_path / "o").read_bytes().count(b"\n") < n:
            assert time.time() < deadline and p.poll() is None
            time.sleep(0.02)
    try:
        p.stdin.write(b"1,2,3,4,5,6,7,1.1.1.1,::,a1\n")
        p.stdin.flush()
        wait_rows(1)
        time.sleep(0.8)  # idle: ticks fire, the source stalls
        p.stdin.write(b"1,2,3,4,5,6,7,1.1.1.1,::,b2\n")
        p.stdin.flush()
        wait_rows(2)
        p.send_signal(signal.SIGINT)
        p.wait(timeout=20)   # ended by the cancel, stdin still open
        _, err = p.communicate(timeout=20)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0, err.decode(errors="replace")
    res = json.loads((tmp_path / "result.json").read_text())
    stats = json.loads(res["stats"])
    assert res["rc"] == 0 and stats["heartbeat_ticks"] >= 5
    streams = {s["name"]: s for s in stats["streams"]}
    assert streams["csv_all"]["heartbeats"] == stats["heartbeat_ticks"]
    ev = [e["event"] for e in stats["events"] if e.get("source") == "csv"]
    assert ev[:2] in (["stalled", "recovered"],) and ev == ["stalled", "recovered"] * (len(ev) // 2)
    assert "gsqlc: source csv (csv:-) stalled: no records for " in res["report"]
