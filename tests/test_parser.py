"""Parser tests: real Tigon files, the seed papers' queries, precedence,
literals and escapes, spans, syntax errors and schema files."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import shared_dir
from gsqlc.errors import QueryError
from gsqlc.frontend import ast
from gsqlc.frontend.parser import parse_query_file, parse_schema_file

CONFORMANCE = shared_dir() / "conformance"
TIGON = CONFORMANCE / "tigon"
PACKAGE_SCHEMA = (Path(__file__).resolve().parents[1] / "compiler" / "gsqlc"
                  / "data" / "packet_schema.txt")

# skipped without ../shared (conftest), failed under CI=true
needs_conformance = pytest.mark.needs_shared


def q1(text: str, path: str = "q.gsql") -> ast.Query:
    qf = parse_query_file(path, text)
    assert len(qf.queries) == 1
    return qf.queries[0]


def expr(text: str) -> ast.Expr:
    """The WHERE expression of `select x from T where <text>`."""
    return q1(f"select x from T where {text}").where


def sel(text: str) -> ast.Expr:
    """The single select expression of `select <text> from T`."""
    q = q1(f"select {text} from T")
    assert len(q.select) == 1
    return q.select[0].expr


def show(e) -> str:
    """A compact prefix rendering of an expression, for structural asserts."""
    if isinstance(e, ast.Binary):
        return f"({e.op} {show(e.left)} {show(e.right)})"
    if isinstance(e, ast.Unary):
        return f"({e.op} {show(e.operand)})"
    if isinstance(e, ast.ColumnRef):
        return f"{e.table}.{e.name}" if e.table else e.name
    if isinstance(e, ast.Literal):
        return e.text
    if isinstance(e, ast.Call):
        args = " ".join(show(a) for a in e.args)
        tag = "$" if e.superagg else "[]" if e.predicate else ""
        return f"{e.name}{tag}({args})"
    if isinstance(e, ast.Star):
        return "*"
    if isinstance(e, ast.InList):
        return f"(in {show(e.expr)} [{' '.join(show(i) for i in e.items)}])"
    if isinstance(e, ast.Param):
        return f"${e.name}"
    if isinstance(e, ast.DefineRef):
        return f"#{e.name}"
    if isinstance(e, ast.IfaceParam):
        return f"@{e.name}"
    raise AssertionError(f"unexpected node {e!r}")


def syntax_error(text: str, path: str = "bad.gsql", schema: bool = False) -> QueryError:
    with pytest.raises(QueryError) as ei:
        if schema:
            parse_schema_file(path, text)
        else:
            parse_query_file(path, text)
    return ei.value


def caret_column(rendered: str) -> int:
    """1-based column of the caret in a rendered diagnostic (4-space indent)."""
    caret_line = [ln for ln in rendered.splitlines() if ln.strip().startswith("^")][0]
    return caret_line.index("^") - 4 + 1


# ====================================================================== conformance files


@needs_conformance
def test_every_conformance_query_file_parses():
    files = sorted(TIGON.rglob("*.gsql"))
    assert len(files) >= 20
    names = set()
    for f in files:
        qf = parse_query_file(str(f))
        assert qf.path == str(f)
        assert len(qf.queries) == 1, f
        q = qf.queries[0]
        assert q.name, f
        names.add(q.name)
        assert q.select and q.from_
        for item in q.select:
            assert item.span.line > 0
    assert {"type_IP_1", "complex", "complex_A", "equal_query3",
            "in_enumeration_query1", "type_IPV6"} <= names


@needs_conformance
def test_every_conformance_schema_parses():
    files = sorted(TIGON.rglob("packet_schema*.txt"))
    assert len(files) >= 4
    for f in files:
        sf = parse_schema_file(str(f))
        protos = {p.name: p for p in sf.protocols}
        base = protos["base"]
        assert base.parents == []
        (st,) = base.fields
        assert (st.type_name, st.name, st.accessor) == ("uint", "systemTime", "get_system_time")
        assert st.properties == {"low_cardinality": True, "required": True,
                                 "increasing": True, "snap_len": 0}
        assert protos["CSV_EXAMPLE"].parents == ["base"]
        types = [fd.type_name for fd in protos["CSV_EXAMPLE"].fields]
        assert types == ["uint", "ullong", "IP", "IPV6", "string", "bool",
                         "int", "llong", "float"]


@needs_conformance
def test_conformance_manifest_files_parse():
    rows = (TIGON / "cases.tsv").read_text().splitlines()[1:]
    assert rows
    for row in rows:
        case, schema, queries, output, *_ = row.split("\t")
        parse_schema_file(str(TIGON / schema))
        names = []
        for qfile in queries.split(","):
            qf = parse_query_file(str(TIGON / case / qfile))
            names += [q.name for q in qf.queries]
        assert output in names


@needs_conformance
def test_conformance_join_query_structure():
    q = parse_query_file(str(TIGON / "TestJoins" / "outer_join" / "JoinQuery.gsql")).queries[0]
    assert q.join.kind == "outer"
    assert [(t.name, t.kind, t.alias) for t in q.from_] == [
        ("complex_A", "name", "A"), ("complex_B", "name", "B")]
    assert show(q.where) == "(and (= A.intField B.intField) (= A.systemTime B.systemTime))"
    assert [show(s.expr) for s in q.select][:2] == ["A.systemTime", "A.strField1"]


@needs_conformance
def test_conformance_timestamp_schema_without_space_before_properties():
    sf = parse_schema_file(str(TIGON / "TestTypes" / "packet_schema_test.txt"))
    p = {p.name: p for p in sf.protocols}["CSV_TIMESTAMP_IPV6"]
    ts = p.fields[0]
    assert (ts.name, ts.accessor, ts.properties) == ("timestamp", "get_csv_uint_pos1",
                                                     {"increasing": True})


def test_package_packet_schema_parses():
    sf = parse_schema_file(str(PACKAGE_SCHEMA))
    protos = {p.name: p for p in sf.protocols}
    assert protos["TCP"].parents == ["IP"]
    assert protos["IPV6"].parents == ["IP"]          # protocol named like a type
    ip_fields = {f.name: f for f in protos["IP"].fields}
    assert ip_fields["protocol"].accessor == "get_ip_protocol"   # field named `protocol`
    assert ip_fields["protocol"].properties == {"low_cardinality": True}
    assert ip_fields["srcIPv6"].type_name == "IPV6"
    assert protos["PKT"].fields[0].properties == {"increasing": True, "required": True}


# ====================================================================== seed queries


FLOWS = """
DEFINE { query_name 'flow1'; }
SELECT tb,protocol,srcIP,destIP,
       srcPort,destPort,count(*) as cnt
FROM [main0_and_control].DataProtocol
GROUP BY time/10 as tb,protocol,srcIP,
         destIP, srcPort, destPort;

DEFINE { query_name 'flow2'; }
SELECT tb,protocol,srcIP,destIP,
       srcPort,destPort,count(*) as cnt
FROM main1.DataProtocol
GROUP BY time/10 as tb,protocol,srcIP,
         destIP, srcPort, destPort;

DEFINE { query_name 'full_flow'; }
SELECT flow1.tb, flow1.protocol,
       flow1.srcIP, flow1.destIP,
       flow1.srcPort, flow1.destPort,
       flow1.cnt, flow2.cnt
OUTER_JOIN FROM flow1, flow2
WHERE flow1.srcIP=flow2.srcIP and
      flow1.destIP=flow2.destIP and
      flow1.srcPort=flow2.srcPort and
      flow1.destPort=flow2.destPort and
      flow1.protocol=flow2.protocol and
      flow1.tb = flow2.tb
"""


def test_seed_flows_per_10s_and_outer_join():
    qf = parse_query_file("flows.gsql", FLOWS)
    assert [q.name for q in qf.queries] == ["flow1", "flow2", "full_flow"]
    f1, f2, full = qf.queries

    assert [s.alias for s in f1.select] == [None] * 6 + ["cnt"]
    cnt = f1.select[-1].expr
    assert isinstance(cnt, ast.Call) and cnt.name == "count"
    assert len(cnt.args) == 1 and isinstance(cnt.args[0], ast.Star)
    (src,) = f1.from_
    assert (src.name, src.kind, src.iface, src.iface_set) == (
        "DataProtocol", "protocol", "main0_and_control", True)
    tb = f1.group_by[0]
    assert isinstance(tb, ast.GroupItem) and tb.alias == "tb"
    assert show(tb.expr) == "(/ time 10)"
    assert [show(g.expr) for g in f1.group_by[1:]] == [
        "protocol", "srcIP", "destIP", "srcPort", "destPort"]
    assert f1.group_by_span.line == 6 and f1.group_by_span.column == 1

    (src2,) = f2.from_
    assert (src2.name, src2.kind, src2.iface, src2.iface_set) == (
        "DataProtocol", "protocol", "main1", False)

    assert full.join is not None and full.join.kind == "outer"
    assert [(t.name, t.kind, t.alias) for t in full.from_] == [
        ("flow1", "name", None), ("flow2", "name", None)]
    assert [show(s.expr) for s in full.select] == [
        "flow1.tb", "flow1.protocol", "flow1.srcIP", "flow1.destIP",
        "flow1.srcPort", "flow1.destPort", "flow1.cnt", "flow2.cnt"]
    # a and b and c ... is left-associative; the last conjunct is tb = tb
    assert show(full.where.right) == "(= flow1.tb flow2.tb)"
    conj, e = [], full.where
    while isinstance(e, ast.Binary) and e.op == "and":
        conj.append(e.right)
        e = e.left
    conj.append(e)
    assert len(conj) == 6


HOSTNAMES = r"""
DEFINE { query_name 'hostnames'; }
SELECT tb*60, destIP, dest_port,
  str_extract_regex(TCP_data, '[Hh][Oo][Ss][Tt]:[0-9A-Z\\.: ]*')
  as hostheader
FROM TCP
WHERE ipversion=4 and offset=0 and protocol=6 and
  str_match_start[TCP_data, 'GET']
"""


def test_seed_hostnames_regex_and_predicate_function():
    q = q1(HOSTNAMES)
    assert q.name == "hostnames"
    assert show(q.select[0].expr) == "(* tb 60)"
    ex = q.select[3]
    assert ex.alias == "hostheader"
    assert isinstance(ex.expr, ast.Call) and ex.expr.name == "str_extract_regex"
    assert not ex.expr.predicate and not ex.expr.superagg
    rx = ex.expr.args[1]
    assert rx.kind == "string"
    assert rx.value == rb"[Hh][Oo][Ss][Tt]:[0-9A-Z\.: ]*"
    assert rx.text == r"'[Hh][Oo][Ss][Tt]:[0-9A-Z\\.: ]*'"
    pred = q.where.right
    assert isinstance(pred, ast.Call) and pred.predicate and pred.name == "str_match_start"
    assert show(pred) == "str_match_start[](TCP_data 'GET')"
    assert pred.args[1].value == b"GET"
    assert show(q.where.left) == "(and (and (= ipversion 4) (= offset 0)) (= protocol 6))"


def test_seed_running_aggregate_closing_when():
    q = q1("""
SELECT tb, srcIP, dstIP, sum_of_dups(seq)
FROM TCP
GROUP BY time/60 as tb, srcIP, dstIP
CLOSING_WHEN Or_aggr(FYN) = TRUE or count(*) = 0
""")
    assert [g.alias for g in q.group_by] == ["tb", None, None]
    assert show(q.closing_when) == "(or (= Or_aggr(FYN) TRUE) (= count(*) 0))"
    assert q.having is None and q.cleaning_when is None


def test_seed_merge():
    q = q1("MERGE R.timestamp : S.timestamp\nFROM interface1.TCP R, interface2.TCP S")
    assert q.is_merge and q.select == []
    assert [(c.table, c.name) for c in q.merge_fields] == [("R", "timestamp"), ("S", "timestamp")]
    assert q.merge_slack is None
    assert [(t.iface, t.name, t.kind, t.alias) for t in q.from_] == [
        ("interface1", "TCP", "protocol", "R"), ("interface2", "TCP", "protocol", "S")]


def test_merge_three_way_with_slack():
    q = q1("merge a.t : b.t : c.t slack 10 from A a, B b, C c")
    assert [c.table for c in q.merge_fields] == ["a", "b", "c"]
    assert q.merge_slack.kind == "int" and q.merge_slack.value == 10


# ====================================================================== precedence


@pytest.mark.parametrize("src, tree", [
    ("a + b * c", "(+ a (* b c))"),
    ("a * b + c", "(+ (* a b) c)"),
    ("a - b - c", "(- (- a b) c)"),
    ("a / b % c", "(% (/ a b) c)"),
    ("-a * b", "(* (- a) b)"),
    ("!a + ~b", "(+ (! a) (~ b))"),
    ("a << 1 + 2", "(<< a (+ 1 2))"),
    ("a & b << c", "(& a (<< b c))"),
    ("a | b & c", "(| a (& b c))"),
    ("(a + b) * c", "(* (+ a b) c)"),
    ("a | b = c & d", "(= (| a b) (& c d))"),
])
def test_scalar_precedence(src, tree):
    assert show(sel(src)) == tree


@pytest.mark.parametrize("src, tree", [
    ("a or b and c", "(or a (and b c))"),
    ("a and b or c", "(or (and a b) c)"),
    ("not a = b", "(not (= a b))"),
    ("not a and b", "(and (not a) b)"),
    ("not not a", "(not (not a))"),
    ("a + 1 > b * 2 or c <= d", "(or (> (+ a 1) (* b 2)) (<= c d))"),
    ("a <> b and a != c and a >= d and a < e", "(and (and (and (<> a b) (<> a c)) (>= a d)) (< a e))"),
    ("a + 1 in [1, 2, 3] and b", "(and (in (+ a 1) [1 2 3]) b)"),
    ("(a or b) and c", "(and (or a b) c)"),
])
def test_predicate_precedence(src, tree):
    assert show(expr(src)) == tree


def test_keywords_case_insensitive_identifiers_not():
    q = q1("SeLeCt Foo As bar FrOm T wHeRe Foo = 1 AnD NOT x GROUP by Foo")
    assert q.select[0].alias == "bar"
    assert show(q.select[0].expr) == "Foo"
    assert show(q.where) == "(and (= Foo 1) (not x))"
    assert show(q.group_by[0].expr) == "Foo"
    q = q1("select true, False from T")
    assert [s.expr.value for s in q.select] == [True, False]


# ====================================================================== literals


@pytest.mark.parametrize("src, kind, value", [
    ("42", "int", 42),
    ("0", "int", 0),
    ("0x1F", "int", 31),
    ("0XfF", "int", 255),
    ("42ULL", "ullong", 42),
    ("42ull", "ullong", 42),
    ("18446744073709551615ULL", "ullong", 2**64 - 1),
    ("42LL", "llong", 42),
    ("42U", "uint", 42),
    ("42UL", "uint", 42),
    ("0x10ULL", "ullong", 16),
    ("1.5", "float", 1.5),
    (".5", "float", 0.5),
    ("1e3", "float", 1000.0),
    ("1.5e-3", "float", 0.0015),
    ("2.", "float", 2.0),
    ("TRUE", "bool", True),
    ("false", "bool", False),
    ("IP_VAL '10.0.0.1'", "ip", 0x0A000001),
    ("ip_val '255.255.255.255'", "ip", 0xFFFFFFFF),
    ("IPV6_VAL '2001:db8::1'", "ipv6",
     bytes.fromhex("20010db8000000000000000000000001")),
    ("IPV6_VAL '::'", "ipv6", bytes(16)),
    ("IPV6_VAL '::ffff:10.0.0.1'", "ipv6", bytes.fromhex("00000000000000000000ffff0a000001")),
    ("HEX 'ff'", "hex", 255),
    ("LHEX 'ffff0000ffff'", "lhex", 0xFFFF0000FFFF),
    ("TIMEVAL '12.5'", "timeval", 12500000),
    ("'abc'", "string", b"abc"),
    ("''", "string", b""),
])
def test_literal_kinds(src, kind, value):
    e = sel(src)
    assert isinstance(e, ast.Literal)
    assert (e.kind, e.value) == (kind, value)
    assert e.text == src
    assert type(e.value) is type(value)


def test_refs_define_param_iface():
    q = q1("PARAM { min_len uint; pat string HANDLE; }\n"
           "DEFINE { query_name 'x'; }\n"
           "select #PORT, $min_len, @Name from T where len > $min_len")
    d, p, i = (s.expr for s in q.select)
    assert isinstance(d, ast.DefineRef) and d.name == "PORT"
    assert isinstance(p, ast.Param) and p.name == "min_len"
    assert isinstance(i, ast.IfaceParam) and i.name == "Name"
    assert [(x.name, x.type_name, x.handle) for x in q.params] == [
        ("min_len", "uint", False), ("pat", "string", True)]
    assert q.name == "x"


@pytest.mark.parametrize("src, value", [
    (r"'a\\b'", b"a\\b"),
    (r"'it\'s'", b"it's"),
    (r"'it''s'", b"it's"),
    (r"'say \"hi\"'", b'say "hi"'),
    (r"'\n\r\t'", b"\n\r\t"),
    (r"'a\0b'", b"a\x00b"),
    (r"'\x41\x7f\xff\x00'", b"A\x7f\xff\x00"),
    (r"'\xZZ'", b"\\xZZ"),
    (r"'[0-9]+\.[0-9]+'", b"[0-9]+\\.[0-9]+"),
    (r"'\d\w'", b"\\d\\w"),
    ("'caf\u00e9'", "caf\u00e9".encode("utf-8")),
    ("'\u65e5\u672c'", "\u65e5\u672c".encode("utf-8")),
    (r"'--not a comment // nor this'", b"--not a comment // nor this"),
    (r"'a''''b'", b"a''b"),
])
def test_string_escapes_byte_exact(src, value):
    e = sel(src)
    assert e.kind == "string"
    assert e.value == value
    assert type(e.value) is bytes
    assert e.text == src


def test_adjacent_strings_are_separate_tokens():
    e = expr("a in ['x', 'y']")
    assert [i.value for i in e.items] == [b"x", b"y"]


@pytest.mark.parametrize("src", [
    "IP_VAL '10.0.0.256'", "IP_VAL '10.0.0'", "IP_VAL 'abc'",
    "IPV6_VAL '2001:db8:::1'", "IPV6_VAL '10.0.0.1'",
    "HEX 'xyz'", "LHEX ''",
])
def test_bad_typed_literals(src):
    err = syntax_error(f"select a\nfrom T\nwhere a = {src}")
    assert err.rule == "bad-literal"
    assert (err.span.line, err.span.column) == (3, 11)
    text = str(err)
    assert text.startswith("bad.gsql:3:11: error [bad-literal]: ")
    assert caret_column(text) == 11


# ====================================================================== query structure


def test_select_clauses_all():
    q = q1("""select tb, srcIP, sum(len) as s, count$(*), max$(len)
from eth0.TCP
where protocol = 6
group by time/60 as tb, srcIP
supergroup tb
having count(*) > 1
cleaning_when count_distinct$(srcIP) > 100
cleaning_by count(*) < 2
closing_when Or_Aggr(fin) = TRUE""")
    assert show(q.select[3].expr) == "count$(*)"
    assert q.select[3].expr.superagg and q.select[3].expr.name == "count"
    assert show(q.select[4].expr) == "max$(len)"
    assert q.supergroup == ["tb"]
    assert (q.supergroup_span.line, q.supergroup_span.column) == (5, 1)
    assert (q.group_by_span.line, q.group_by_span.column) == (4, 1)
    assert show(q.having) == "(> count(*) 1)"
    assert show(q.cleaning_when) == "(> count_distinct$(srcIP) 100)"
    assert show(q.cleaning_by) == "(< count(*) 2)"
    assert show(q.closing_when) == "(= Or_Aggr(fin) TRUE)"
    assert q.from_[0].iface == "eth0" and q.from_[0].kind == "protocol"


def test_from_sources():
    q = q1("select a from TCP, eth0.TCP B, host1.eth1.UDP as C, [lan].IP D, "
           "LIB/flows E, complex_A A")
    got = [(t.name, t.kind, t.iface, t.host, t.iface_set, t.library, t.alias) for t in q.from_]
    assert got == [
        ("TCP", "name", None, None, False, None, None),
        ("TCP", "protocol", "eth0", None, False, None, "B"),
        ("UDP", "protocol", "eth1", "host1", False, None, "C"),
        ("IP", "protocol", "lan", None, True, None, "D"),
        ("flows", "stream", None, None, False, "LIB", "E"),
        ("complex_A", "name", None, None, False, None, "A"),
    ]


@pytest.mark.parametrize("kw, kind", [
    ("INNER_JOIN", "inner"), ("left_outer_join", "left"),
    ("Right_Outer_Join", "right"), ("OUTER_JOIN", "outer"),
])
def test_join_keywords(kw, kind):
    q = q1(f"select A.a, B.b {kw} from X A, Y B where A.t = B.t")
    assert q.join.kind == kind and q.join.args == []
    assert len(q.from_) == 2


def test_filter_join():
    q = q1("select A.a FILTER_JOIN(B.t, 15) from X A, Y B where A.t = B.t")
    assert q.join.kind == "filter"
    assert show(q.join.args[0]) == "B.t" and q.join.args[1].value == 15


def test_rollup_cube_grouping_sets():
    q = q1("select a from T group by time/60 as tb, ROLLUP(a, b as bb), "
           "CUBE(c), GROUPING_SETS((a, b), (c), ())")
    tb, rollup, cube, gs = q.group_by
    assert tb.alias == "tb"
    assert isinstance(rollup, ast.GroupingSets) and rollup.kind == "rollup"
    assert [(show(g.expr), g.alias) for g in rollup.items] == [("a", None), ("b", "bb")]
    assert cube.kind == "cube" and [show(g.expr) for g in cube.items] == ["c"]
    assert gs.kind == "grouping_sets"
    assert [[show(g.expr) for g in s] for s in gs.items] == [["a", "b"], ["c"], []]
    assert all(isinstance(g, ast.GroupItem) for s in gs.items for g in s)


def test_define_block_values_and_spans():
    q = q1("""DEFINE {
    query_name 'flows';
    visibility external;
    slow_flush 10;
    Comment 'it''s';
}
select a from T""")
    d = q.defines
    assert d.items == {"query_name": "flows", "visibility": "external",
                       "slow_flush": "10", "Comment": "it's"}
    assert (d.item_spans["visibility"].line, d.item_spans["visibility"].column) == (3, 5)
    assert d.span.line == 1


def test_param_then_define_order_and_no_trailing_semicolons():
    q = q1("PARAM { x uint } DEFINE { query_name q } select $x from T")
    assert q.params[0].name == "x" and q.name == "q"


def test_duplicate_define_block_is_error():
    err = syntax_error("DEFINE { a 1; } DEFINE { b 2; } select a from T")
    assert err.rule == "syntax" and "DEFINE" in err.message


def test_files_statements_and_comments():
    assert parse_query_file("e.gsql", "").queries == []
    assert parse_query_file("e.gsql", "-- nothing\n// here\n/* or\nhere */\n").queries == []
    qf = parse_query_file("m.gsql", "select a from T;\n;select b from U;  \n")
    assert [q.select[0].expr.name for q in qf.queries] == ["a", "b"]
    q = q1("select a -- comment\n, b // another\n/* block\n comment */ from T\t \n")
    assert [s.expr.name for s in q.select] == ["a", "b"]


def test_function_calls():
    e = sel("f()")
    assert isinstance(e, ast.Call) and e.args == []
    e = sel("UMAX(a, b + 1)")
    assert show(e) == "UMAX(a (+ b 1))"
    e = expr("f[]")
    assert e.predicate and e.args == []
    e = expr("not str_match_start[TCP_data, 'GET'] or x = 1")
    assert show(e) == "(or (not str_match_start[](TCP_data 'GET')) (= x 1))"


# ====================================================================== spans


def test_span_of_nested_column_ref():
    q = q1("select a,\n  sum(x + T.len * 2) as s\nfrom T")
    call = q.select[1].expr
    col = call.args[0].right.left
    assert isinstance(col, ast.ColumnRef) and (col.table, col.name) == ("T", "len")
    assert col.span == ast.Span("q.gsql", 2, 11, 2, 16)
    assert (call.span.line, call.span.column, call.span.end_column) == (2, 3, 21)
    assert q.select[1].span.column == 3
    assert q.span.line == 1


def test_spans_of_literals_tables_and_params():
    q = q1("select x\nfrom\t[csv].P A\nwhere y = 'ab' and z = $p")
    t = q.from_[0]
    assert (t.span.line, t.span.column, t.span.end_column) == (2, 6, 15)
    s = q.where.left.right
    assert s.span == ast.Span("q.gsql", 3, 11, 3, 15)
    p = q.where.right.right
    assert (p.span.line, p.span.column) == (3, 24)


# ====================================================================== syntax errors


def test_error_misspelt_group_by():
    err = syntax_error("select srcIP, count(*)\nfrom TCP\nwhere len > 0 grup by srcIP")
    assert err.rule == "syntax"
    text = str(err)
    first = text.splitlines()[0]
    assert first.startswith("bad.gsql:3:15: error [syntax]: unexpected 'grup'")
    assert "GROUP BY" in first and "expected one of:" in first
    lines = text.splitlines()
    assert lines[1] == "    where len > 0 grup by srcIP"
    assert lines[2] == "                  ^~~~"
    assert caret_column(text) == 15


def test_error_misspelt_group_by_after_table_alias():
    # 'grup' is first read as an alias of TCP; the error blames it anyway.
    err = syntax_error("select a from TCP grup by a")
    assert (err.span.line, err.span.column) == (1, 19)
    assert "unexpected 'grup'" in err.message and "GROUP BY" in err.message
    assert "WHERE" in err.message


def test_error_expected_list_is_readable():
    err = syntax_error("select a, b grup by a from T")
    msg = err.message
    assert msg.startswith("unexpected 'grup'; expected one of: ','")
    assert "FROM" in msg and "AS" in msg
    assert "__ANON" not in msg and "LPAR" not in msg and "$END" not in msg
    # keywords upper-case, punctuation quoted
    assert "from" not in msg.replace("FROM", "")


def test_error_missing_from_source():
    err = syntax_error("select a\nfrom\nwhere a > 1")
    assert (err.span.line, err.span.column) == (3, 1)
    assert err.message == "unexpected 'where'; expected one of: '[', name"
    text = str(err)
    assert text.startswith("bad.gsql:3:1: error [syntax]:")
    assert caret_column(text) == 1


def test_error_end_of_input_points_after_last_token():
    err = syntax_error("select a from T where a =")
    assert (err.span.line, err.span.column) == (1, 26)
    assert err.message == "unexpected end of input; expected expression"
    assert caret_column(str(err)) == 26


def test_error_unterminated_string():
    err = syntax_error("select a from T\nwhere s = 'abc\n")
    assert (err.span.line, err.span.column) == (2, 11)
    assert "unterminated string" in err.message
    text = str(err)
    assert text.startswith("bad.gsql:2:11: error [syntax]: unterminated string")
    assert text.splitlines()[2] == "              ^~~~"


def test_error_bad_character():
    err = syntax_error("select a ? b from T")
    assert err.message == "unexpected character '?'"
    assert (err.span.line, err.span.column) == (1, 10)
    assert caret_column(str(err)) == 10


def test_error_caret_with_tabs():
    err = syntax_error("select a\n\tfrom T\n\twhere a = = 1")
    assert (err.span.line, err.span.column) == (3, 12)
    lines = str(err).splitlines()
    # the tab is expanded in both the echoed line and the caret line
    assert lines[1] == "        where a = = 1"
    assert lines[2].index("^") == lines[1].index("= 1")


def test_error_unterminated_block_comment():
    err = syntax_error("select a from T /* oops")
    assert "unterminated comment" in err.message


def test_error_missing_semicolon_between_queries():
    err = syntax_error("select a from T\nselect b from U")
    assert (err.span.line, err.span.column) == (2, 1)
    assert "';'" in err.message


@pytest.mark.parametrize("src, rule, where, caret", [
    # ORDER taken as the table's alias: the error shows at BY
    ("select time from T\norder by time", "order-by", (2, 1), "^~~~~~~~"),
    ("select time from T t ORDER BY time", "order-by", (1, 22), "^~~~~~~~"),
    ("select a from T where a > 1 Order By a", "order-by", (1, 29), "^~~~~~~~"),
    ("select tb, count(*) from T group by time/60 as tb\nORDER BY tb", "order-by", (2, 1),
     "^~~~~~~~"),
    ("select a from T limit 10", "limit", (1, 17), "^~~~~~~~"),
    ("select a from T where a > 1 LIMIT $n", "limit", (1, 29), "^~~~~~~~"),
])
def test_order_by_and_limit_say_what_a_stream_has_instead(src, rule, where, caret):
    err = syntax_error(src)
    assert (err.rule, (err.span.line, err.span.column)) == (rule, where)
    assert str(err).splitlines()[-1].strip() == caret
    if rule == "order-by":
        assert err.message.startswith("GSQL has no ORDER BY: a stream never ends")
        assert "temporal GROUP BY" in err.message and "| sort" in err.message
    else:
        assert err.message.startswith("GSQL has no LIMIT: a stream never ends")
        assert "| head -n 10" in err.message and "HAVING" in err.message


def test_order_and_limit_stay_names_elsewhere():
    # a field or alias named order or limit is no clause
    parse_query_file("ok.gsql", "select order, limit from T")
    parse_query_file("ok.gsql", "select a from T limit")
    err = syntax_error("select order from T x y")
    assert err.rule == "syntax"


def test_error_expected_list_short():
    err = syntax_error("select a from T where a = 1 )")
    items = err.message.split("expected one of: ")[1].split(", ")
    assert len(items) <= 9


# ====================================================================== schemas


def test_schema_inheritance_properties_stream():
    sf = parse_schema_file("s.txt", """
// comment
PROTOCOL base{
\tuint systemTime get_system_time (low_cardinality,required,increasing, snap_len 0);
}
protocol Both (base, other) {
    uint  ivalue   get_csv_uint_pos1(increasing);
    IP    srcIP    get_csv_ip_pos2;
    string name    get_csv_string_pos3 (subtype 'x', depth -2);
    Uint  protocol get_proto
}
STREAM flows { uint tb (increasing); IP srcIP; ullong cnt; }
""")
    base, both, flows = sf.protocols
    assert (base.name, base.kind, base.parents) == ("base", "protocol", [])
    assert base.fields[0].properties["snap_len"] == 0
    assert both.parents == ["base", "other"]
    iv, sip, name, proto = both.fields
    assert (iv.type_name, iv.name, iv.accessor, iv.properties) == (
        "uint", "ivalue", "get_csv_uint_pos1", {"increasing": True})
    assert (sip.type_name, sip.properties) == ("IP", {})
    assert name.properties == {"subtype": "x", "depth": -2}
    assert (proto.type_name, proto.name) == ("Uint", "protocol")
    assert flows.kind == "stream" and flows.parents == []
    assert [(f.type_name, f.name, f.accessor, f.properties) for f in flows.fields] == [
        ("uint", "tb", None, {"increasing": True}),
        ("IP", "srcIP", None, {}),
        ("ullong", "cnt", None, {}),
    ]
    assert (iv.span.line, iv.span.column) == (7, 5)


def test_schema_empty_and_errors():
    assert parse_schema_file("e.txt", "").protocols == []
    err = syntax_error("PROTOCOL X {\n  uint a get_a\n  uint b get_b;\n}", "s.txt", schema=True)
    assert (err.span.line, err.span.column) == (3, 3)
    assert str(err).startswith("s.txt:3:3: error [syntax]: unexpected 'uint'")
    assert "';'" in err.message
    err = syntax_error("PROTOCOL { }", "s.txt", schema=True)
    assert err.message == "unexpected '{'; expected name"
    err = syntax_error("PROTOCOL X { uint a; uint a; }", "s.txt", schema=True)
    assert "duplicate field" in err.message


# ====================================================================== one parser


def test_many_small_files_share_one_parser():
    """The grammar's tables are built once a process: parsing many small
    files reuses the parser (their speed is bench/compile_time.py's)."""
    from gsqlc.frontend import parser
    text = ("DEFINE { query_name 'f'; }\nselect tb, srcIP, count(*) from TCP "
            "where a = 1 and b in [1,2,3] group by time/60 as tb, srcIP")
    parse_query_file("warm.gsql", text)
    made = parser._PARSERS["query"]
    files = [parse_query_file(f"f{i}.gsql", text) for i in range(200)]
    assert parser._PARSERS["query"] is made
    assert [f.queries[0].name for f in files] == ["f"] * 200
