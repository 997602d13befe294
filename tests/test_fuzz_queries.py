"""The query fuzzer (fuzz/queries) in a short deterministic run, and the
regressions of the bugs it found.

Every query set must end in a compiled result or a QueryError located in the
query text (file, line, column, rule): never a traceback, generated code
that fails to build (warnings are errors), a signal or a hang.  The long run
is `python -m fuzz.queries.run --minutes N`.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from fuzz.queries import oracle  # noqa: E402
from fuzz.queries.strategies import (  # noqa: E402
    FUZZ_CSV,
    FUZZ_SCHEMA_TEXT,
    Case,
    any_case,
    generated_cases,
)


def _fast(n: int) -> settings:
    return settings(max_examples=n, deadline=None, database=None, derandomize=True,
                    suppress_health_check=list(HealthCheck), print_blob=True)


def _assert_fine(case: Case, outcome: oracle.Outcome) -> None:
    assert not outcome.is_bug, f"{outcome.stage}: {outcome.detail}\n{case.describe()}"


# ---------------------------------------------------------------- the fuzzer


@_fast(300)
@given(any_case())
def test_fuzz_front_end(case):
    """Generated and mutated sets through parse .. code generation."""
    _assert_fine(case, oracle.check(case))


_BUILT: list[str] = []


@_fast(12)
@given(generated_cases(valid=True))
def test_fuzz_builds(case):
    """A few sets that compile, built warning-free and run over their input."""
    out = oracle.check(case)
    _assert_fine(case, out)
    if out.kind != oracle.OK or len(_BUILT) >= 4:
        return
    _BUILT.append(case.origin)
    _assert_fine(case, oracle.check(case, build=True, run=True))


def test_fuzz_cli_compile():
    """The command line path: `gsqlc compile`, a good set and a bad one."""
    good = Case((("q.gsql", "SELECT time, srcIP FROM IPV4 WHERE ttl > 1"),))
    assert oracle.check_cli(good).kind == oracle.OK
    bad = Case((("q.gsql", "SELECT time FROM PKT WHERE timestamp > TIMEVAL '1.5.1'"),))
    out = oracle.check_cli(bad)
    assert out.kind == oracle.QUERY_ERROR and "bad-literal" in out.detail, out.detail


# ---------------------------------------------------------------- helpers


def _compile(tmp_path: Path, text: str, schema: str | None = None):
    """plan + generate `text`; returns the QuerySet or raises QueryError."""
    from gsqlc.backend.codegen import generate
    from gsqlc.pipeline import CompileOptions, plan_queries
    q = tmp_path / "q.gsql"
    q.write_text(text)
    opts = CompileOptions((str(_schema(tmp_path, schema)),) if schema else ())
    qs = plan_queries([str(q)], opts)
    generate(qs.plan)
    return qs


def _schema(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "schema.txt"
    p.write_text(text)
    return p


def _error(tmp_path: Path, text: str, rule: str, schema: str | None = None):
    from gsqlc.errors import QueryError
    with pytest.raises(QueryError) as ei:
        _compile(tmp_path, text, schema)
    e = ei.value
    assert e.rule == rule, str(e)
    case = Case((("q.gsql", text),))
    assert oracle.check_location(e, case, [str(tmp_path / "q.gsql")]) is None, str(e)
    return e


def _gsqlc(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(oracle.gsqlc_command() + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=300)


# ---------------------------------------------------------------- TIMEVAL


@pytest.mark.parametrize("body, micros", [
    ("1.5", 1_500_000), ("12", 12_000_000), ("12.5", 12_500_000), ("0", 0),
    ("0.000001", 1), ("1.123456", 1_123_456), ("007.01", 7_010_000),
    (" 3.25 ", 3_250_000), ("18446744073709.551615", 2**64 - 1),
])
def test_timeval_is_microseconds(tmp_path, body, micros):
    from gsqlc.frontend.literals import parse_timeval
    from gsqlc.frontend.parser import parse_query_file
    assert parse_timeval(body) == micros
    text = f"SELECT time FROM PKT WHERE timestamp > TIMEVAL '{body}'"
    lit = parse_query_file(str(tmp_path / "q.gsql"), text).queries[0].where.right
    assert (lit.kind, lit.value) == ("timeval", micros)
    _compile(tmp_path, text)


@pytest.mark.parametrize("body", [
    "1.1234567", "18446744073709.551616", "99999999999999999999", "", ".", "1.", ".5", "-1",
    "+1", "1e3", "abc", "1,5", "١٢", "1.2.3", "0x10", "nan",
])
def test_timeval_bad_literal_is_located(tmp_path, body):
    e = _error(tmp_path, f"SELECT time\nFROM PKT\nWHERE timestamp > TIMEVAL '{body}'",
               "bad-literal")
    assert (e.line, e.column) == (3, 19)


def test_timeval_known_bug_compiles(tmp_path):
    """Was: internal error: ValueError: invalid literal for int() (cexpr._Literal)."""
    _compile(tmp_path, "SELECT time FROM PKT WHERE timestamp > TIMEVAL '1.5'")


def test_timeval_end_to_end_csv(tmp_path):
    """TIMEVAL compared with a CSV column of microseconds, compiled and run."""
    q = tmp_path / "q.gsql"
    q.write_text("DEFINE { query_name 'late'; }\n"
                 "SELECT ts, t FROM [csv].FZ\n"
                 "WHERE ts >= TIMEVAL '1005.5' AND ts < TIMEVAL '1007'")
    p = _gsqlc("run", str(q), f"--schema={_schema(tmp_path, FUZZ_SCHEMA_TEXT)}",
               f"--source=csv=csv:{FUZZ_CSV / 'fz.csv'}", "--clock=fixed:1409698284")
    assert p.returncode == 0, p.stderr
    rows = (FUZZ_CSV / "fz.csv").read_text().split()
    want = sorted(f"{r.split(',')[0]}|{r.split(',')[1]}" for r in rows
                  if 1_005_500_000 <= int(r.split(",")[0]) < 1_007_000_000)
    assert want and sorted(p.stdout.split()) == want


def test_timeval_end_to_end_pcap(tmp_path):
    """Over the bundled capture: TIMEVAL 'S.F' keeps the packets after S.F
    seconds, as the microsecond timestamps say."""
    trace = REPO / "examples" / "trace.pcap"
    q = tmp_path / "q.gsql"
    q.write_text("DEFINE { query_name 'all'; }\nSELECT timestamp FROM PKT;\n"
                 "DEFINE { query_name 'after'; }\n"
                 "SELECT timestamp FROM PKT WHERE timestamp > TIMEVAL '1795335271.5'")
    runs = {name: _gsqlc("run", str(q), f"--source=eth0=pcap:{trace}", f"--output={name}")
            for name in ("all", "after")}
    for p in runs.values():
        assert p.returncode == 0, p.stderr
    every = [int(x) for x in runs["all"].stdout.split()]
    want = [x for x in every if x > 1_795_335_271_500_000]
    assert 0 < len(want) < len(every)
    assert [int(x) for x in runs["after"].stdout.split()] == want


# ---------------------------------------------------------------- other regressions


def test_keyword_as_define_word(tmp_path):
    """Was: VisitError 'any_word': list index out of range (a keyword as a
    DEFINE item's name or value is an anonymous terminal)."""
    qs = _compile(tmp_path, "DEFINE { query_name 'q'; slack 1; select from; }\n"
                            "SELECT time FROM PKT")
    assert qs.queries[0].defines["slack"] == "1"
    assert qs.queries[0].defines["select"] == "from"


@pytest.mark.parametrize("form", [
    lambda n: "- " * n + "len",
    lambda n: " + ".join(["len"] * n),
    lambda n: "(" * n + "len" + " + 1)" * n,
    lambda n: "NOT " * n + "len > 0",
    lambda n: "UMAX(" * n + "len" + ", 1)" * n,
    lambda n: " AND ".join(["len > 0"] * n),
])
def test_deep_nesting_is_located(tmp_path, form):
    """Was: RecursionError (internal error) beyond ~480 levels (~240 calls)."""
    from gsqlc.frontend.parser import MAX_NESTING
    _compile(tmp_path, f"SELECT time, {form(MAX_NESTING - 1)} FROM IPV4")
    for n in (MAX_NESTING + 2, 5000):
        e = _error(tmp_path, f"SELECT time,\n {form(n)} FROM IPV4", "nesting-too-deep")
        assert e.line == 2


def test_deep_nesting_at_the_limit_from_a_deep_stack(tmp_path):
    """The deepest expression allowed compiles even with 300 frames already on
    the stack (a caller's: pytest, a notebook, Spark)."""
    from gsqlc.frontend.parser import MAX_NESTING
    text = "SELECT time, " + "UMAX(" * MAX_NESTING + "len" + ", 1)" * MAX_NESTING + " FROM IPV4"

    def down(k: int):
        return _compile(tmp_path, text) if k == 0 else down(k - 1)
    down(300)


def test_parentheses_alone_do_not_count(tmp_path):
    _compile(tmp_path, "SELECT time, " + "(" * 3000 + "len" + ")" * 3000 + " FROM IPV4")


@pytest.mark.parametrize("item", ["max_lfta_disorder '²'", "max_hfta_disorder '³'",
                                  "lfta_table_ways '٤'"])
def test_define_unicode_digits(tmp_path, item):
    """Was: ValueError from int() ('²'.isdigit() is true)."""
    _error(tmp_path, f"DEFINE {{ query_name 'q'; {item}; }}\n"
                     "SELECT tb, count(*) FROM IPV4 GROUP BY time/60 AS tb", "bad-define")


def test_ip_val_unicode_digits(tmp_path):
    _error(tmp_path, "SELECT time FROM IPV4 WHERE srcIP = IP_VAL '١.٢.٣.٤'", "bad-literal")


def test_file_without_queries_is_located(tmp_path):
    """Was: QueryError 'no-queries' with no location (<builtin>:0:0)."""
    e = _error(tmp_path, "// only a comment\n/* and another */\n", "no-queries")
    assert e.line == 3


@pytest.mark.parametrize("lit", ["18446744073709551616", "99999999999999999999999",
                                 "4294967296U", "4294967296UL", "9223372036854775808LL",
                                 "18446744073709551616ULL", "0x10000000000000000",
                                 "HEX '100000000'", "LHEX '10000000000000000'"])
def test_integer_literal_out_of_range(tmp_path, lit):
    """Was: generated C with an out-of-range constant (UINT64_C(18446744073709551616):
    'integer constant is too large for its type', a build failure)."""
    _error(tmp_path, f"SELECT time, {lit} AS x FROM IPV4", "bad-literal")


@pytest.mark.parametrize("lit", ["18446744073709551615", "4294967295U", "9223372036854775807LL",
                                 "18446744073709551615ULL", "HEX 'ffffffff'",
                                 "LHEX 'ffffffffffffffff'"])
def test_integer_literal_largest(tmp_path, lit):
    _compile(tmp_path, f"SELECT time, {lit} AS x FROM IPV4")


def test_fold_compare_values():
    """Comparisons a type cannot make true or false are folded (no -Wtype-limits)."""
    from gsqlc.backend.cexpr import fold_compare
    from gsqlc.frontend import ast
    from gsqlc.semantics.bound import ExprInfo
    from gsqlc.semantics.types import Type

    def lit(v, t):
        return ast.Literal("int", v, str(v), info=ExprInfo(t))

    def var(t):
        return ast.ColumnRef("x", info=ExprInfo(t))
    U, I, UL = Type.UINT, Type.INT, Type.ULLONG
    assert fold_compare(">=", var(U), lit(0, I), U) is True
    assert fold_compare("<", var(U), lit(0, I), U) is False
    assert fold_compare("==", var(Type.USHORT), lit(100000, I), I) is False
    assert fold_compare("!=", var(Type.USHORT), lit(100000, I), I) is True
    assert fold_compare("<", var(Type.USHORT), lit(100000, I), I) is True
    assert fold_compare("==", var(I), lit(1566561289320, UL), UL) is False   # in the gap
    assert fold_compare("==", var(I), lit(285410287, UL), UL) is None
    assert fold_compare("<", var(I), lit(1566561289320, UL), UL) is None     # x < 0 differs
    assert fold_compare(">", lit(0, I), var(U), U) is False
    assert fold_compare("==", var(U), lit(7, I), U) is None


def test_builds_warning_free(tmp_path):
    """Were build failures under -Werror: a CSV selection or aggregation
    reading no column (only get_system_time: unused 'i' and 'cv'); a
    comparison the C compiler finds always false (-Wtype-limits); a promoted
    unsigned complement compared (-Wsign-compare)."""
    from gsqlc.pipeline import CompileOptions, compile_queries
    schema = _schema(tmp_path, FUZZ_SCHEMA_TEXT)
    q = tmp_path / "q.gsql"
    q.write_text("DEFINE { query_name 'a'; }\nSELECT systemTime FROM [csv].FZ;\n"
                 "DEFINE { query_name 'b'; }\nSELECT tb, avg(systemTime) AS m FROM [csv].FZ "
                 "GROUP BY systemTime/60 AS tb;\n"
                 "DEFINE { query_name 'c'; }\nSELECT t, us FROM [csv].FZ WHERE "
                 "(us >> us) IN [TIMEVAL '285.410287', TIMEVAL '1566561.289320'] "
                 "OR us = 100000 OR us <> -1 OR i = 4294967295 OR b = 2 OR us >= 0;\n"
                 "DEFINE { query_name 'd'; }\nSELECT systemTime FROM [csv].FZ WHERE "
                 "18446744073709551615ULL - (systemTime) != systemTime AND ~t <> t")
    compile_queries([str(q)], CompileOptions((str(schema),), werror=True))


@pytest.mark.parametrize("size", ["4294967296", "2147483649", "99999999999999999999"])
def test_lfta_table_size_too_large(tmp_path, size):
    """Was: generated C whose table size overflowed its 32-bit constant (a
    build failure under -Werror)."""
    e = _error(tmp_path, f"DEFINE {{ query_name 'q';\n lfta_table_size {size}; }}\n"
                         "SELECT tb, count(*) FROM IPV4 GROUP BY time/60 AS tb", "bad-define")
    assert e.line == 2


def test_lfta_table_size_largest(tmp_path):
    qs = _compile(tmp_path, "DEFINE { query_name 'q'; lfta_table_size 2147483648; }\n"
                            "SELECT tb, count(*) FROM IPV4 GROUP BY time/60 AS tb")
    assert any(getattr(n, "table_size", 0) == 2**31 for n in qs.plan.nodes)


def test_empty_in_list_builds(tmp_path):
    """Was: `x IN []` generated `((uint8_t)())`, C that does not compile."""
    from gsqlc.pipeline import CompileOptions, compile_queries
    q = tmp_path / "q.gsql"
    q.write_text("SELECT time FROM IPV4 WHERE wire_len IN [] OR NOT (ttl IN [])")
    compile_queries([str(q)], CompileOptions(werror=True))


def test_long_query_name_compiles_to_a_folder(tmp_path):
    """Was: `gsqlc compile -o DIR`: internal error, OSError 'File name too long'
    (the generated files were named after the whole query name)."""
    q = tmp_path / "q.gsql"
    q.write_text(f"DEFINE {{ query_name '{'x' * 300}'; }}\nSELECT time FROM IPV4")
    p = _gsqlc("compile", str(q), "-o", str(tmp_path / "out"))
    assert p.returncode == 0, p.stderr
    assert all(len(f.name) < 100 for f in (tmp_path / "out").iterdir())


def test_hfta_aggregation_with_a_constant_false_where_builds(tmp_path):
    """Was: groupby_op's batched accept read a key hash no path had set when
    every tuple fails the WHERE (gcc -Wmaybe-uninitialized under -Werror)."""
    from gsqlc.pipeline import CompileOptions, compile_queries
    q = tmp_path / "q.gsql"
    q.write_text("DEFINE { query_name 'q0'; }\nSELECT timestamp, destIPv6 FROM IPV4\n"
                 "WHERE str_regex_match('1.5', 'Host: *[a-z.]*');\n"
                 "DEFINE { query_name 'q1'; }\n"
                 "SELECT tb, And_Aggr(timestamp) AS a0 FROM q0 WHERE (FALSE) or (FALSE)\n"
                 "GROUP BY timestamp/10 AS tb")
    compile_queries([str(q)], CompileOptions(werror=True))


def test_a_computed_constant_compared_builds(tmp_path):
    """Was (found by the long run): `UINT(6.1e-218) <= str_length(...)` -- a
    cast the C compiler folds to 0 against an unsigned value -- failed
    -Wtype-limits under -Werror; such constants now pass through an opaque
    identity.  The answers stay the query's."""
    from gsqlc.pipeline import CompileOptions, compile_queries
    schema = _schema(tmp_path, FUZZ_SCHEMA_TEXT)
    q = tmp_path / "q.gsql"
    q.write_text("DEFINE { query_name 'q0'; }\nSELECT t FROM [csv].FZ\n"
                 "WHERE UINT(6.109508088121295e-218) <= str_length('V2U');\n"
                 "DEFINE { query_name 'q1'; }\nSELECT t FROM [csv].FZ\n"
                 "WHERE t > ULLONG(0.5) AND INT(-1e-300) <= i;\n")
    compile_queries([str(q)], CompileOptions((str(schema),), werror=True))


@pytest.mark.parametrize("value", ["99999999999999999999999", "-9223372036854775809"])
def test_define_integer_out_of_range(tmp_path, value):
    """Was: a DEFINE value past ullong used as #NAME generated a C constant too
    large for its type (a build failure under -Werror)."""
    e = _error(tmp_path, f"DEFINE {{ query_name 'q'; PORT {value}; }}\n"
                         "SELECT time, #PORT AS p FROM IPV4", "bad-literal")
    assert (e.line, e.column) == (2, 14) and "PORT" in e.message


def test_stream_of_no_columns_builds(tmp_path):
    """Was: an LFTA whose output has no column (the query computes only an
    HFTA-only function of constants) emitted an empty C struct, sizeof 0
    (division by zero in its run constant; C++ would size it 1)."""
    from gsqlc.pipeline import CompileOptions, compile_queries
    schema = _schema(tmp_path, FUZZ_SCHEMA_TEXT)
    q = tmp_path / "q.gsql"
    q.write_text("DEFINE { query_name 'q'; }\nSELECT str_match_start('abc', 'abc') AS c0 "
                 "FROM [csv].FZ")
    compile_queries([str(q)], CompileOptions((str(schema),), werror=True))


def test_compile_build_into_a_relative_folder(tmp_path):
    """Was: `gsqlc compile -o DIR --build` with a relative DIR failed: the C
    compiler ran in the build folder and did not find DIR/...c."""
    q = tmp_path / "q.gsql"
    q.write_text("DEFINE { query_name 'q'; }\nSELECT time FROM IPV4")
    p = subprocess.run(oracle.gsqlc_command() + ["compile", str(q), "-o", "rel_out", "--build"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "rel_out" / "build" / "gsqlc-run").is_file()


# ---------------------------------------------------------------- bytes that are not UTF-8


@pytest.mark.parametrize("text", [
    "DEFINE { query_name '\\xff\\xfe'; }\nSELECT time FROM IPV4",
    "DEFINE { query_name 'q\\xc3'; }\nSELECT time FROM IPV4",
    "SELECT time, '\\xff\\xfeok' AS s FROM IPV4",
    "SELECT time FROM IPV4 WHERE srcIP = IP_VAL '10.\\xff.0.1'",
    "SELECT time FROM IPV6 WHERE srcIP = IPV6_VAL '\\xc3::1'",
    "SELECT time FROM IPV4 WHERE len = HEX 'f\\xff'",
    "SELECT time FROM PKT WHERE timestamp > TIMEVAL '1.\\x80'",
    "DEFINE { query_name 'p'; PORT '\\xff\\xfe'; }\nSELECT time FROM TCP WHERE destPort = 80",
    # a DEFINE value read as a string literal (#NAME)
    "DEFINE { query_name 'p'; TAG '\\xff\\xfe'; }\nSELECT time, #TAG AS s FROM TCP",
    "SELECT time FROM TCP WHERE str_match_start(TCP_data, '\\xff\\xfe')",
])
def test_escapes_that_are_not_utf8_in_every_string_position(text):
    """Escapes making bytes that are not UTF-8, wherever a string is
    written: compiled, built and run over the capture, or refused with a
    located error -- never an internal error (the fuzzer draws these too)."""
    case = Case((("q.gsql", text),))
    out = oracle.check(case, build=True, run=True)
    _assert_fine(case, out)
    assert out.kind in (oracle.OK, oracle.QUERY_ERROR, oracle.RUN_ERROR), out
