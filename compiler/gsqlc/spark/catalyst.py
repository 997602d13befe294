"""A computed Spark DataFrame read by gsqlc's tasks themselves: Spark's
optimized plan of Projects and Filters over a Parquet scan, translated into
pyarrow compute expressions that each LFTA task evaluates while it reads its
row groups (`storage.read_pieces`).

Why: any source that is not a plain scan sends its rows from the JVM to
Python (mapInArrow), and that transfer alone costs more than Spark SQL's
whole query (bench/spark_bench.py --source computed, issue 14).  A column
computed from the scan's columns -- abs(time), a cast, arithmetic -- or rows
filtered by a condition on them need no JVM: pyarrow evaluates the same
expressions column at a time, and a filter also skips row groups by their
statistics.

Only expressions whose pyarrow meaning is Spark's are translated; anything
else (a function without an entry here, a float comparison -- Spark orders
NaN above every number, pyarrow does not --, a narrowing cast, TRY
arithmetic) leaves the DataFrame to the row path, which is always right.
Spark's evaluation modes are kept: under ANSI (Spark 4's default) overflow
and division by zero raise, as Spark's do; under LEGACY integer arithmetic
wraps and a division by zero is null.  An operation that can raise is not
translated where Spark may skip it (the right side of and/or, a filter
above another): pyarrow evaluates every row, so it would fail where Spark
does not.  (The scan's filter is applied before its projection, as Spark's
plan does.)
"""
from __future__ import annotations

from typing import Any, Callable, Optional

# Spark type names (DataType.typeName()) -> pyarrow type factories
_TYPES: dict[str, str] = {"long": "int64", "integer": "int32", "short": "int16", "byte": "int8",
                          "double": "float64", "float": "float32", "boolean": "bool_",
                          "string": "string"}
_INTEGRAL = ("byte", "short", "integer", "long")
_NUMERIC = _INTEGRAL + ("float", "double")
# Catalyst comparison -> pyarrow function (on integral, boolean and string operands)
_COMPARE = {"EqualTo": "equal", "LessThan": "less", "LessThanOrEqual": "less_equal",
            "GreaterThan": "greater", "GreaterThanOrEqual": "greater_equal"}
# Catalyst arithmetic -> pyarrow function (unchecked, checked)
_ARITH = {"Add": ("add", "add_checked"), "Subtract": ("subtract", "subtract_checked"),
          "Multiply": ("multiply", "multiply_checked")}


class Untranslatable(Exception):
    """A plan or expression pyarrow cannot evaluate with Spark's meaning."""


class ComputedScan:
    """What the tasks compute from a Parquet scan: `columns`, the output
    columns in the DataFrame's order as (name, pyarrow expression over the
    file's columns, of Spark's type or a narrower integer one holding the
    same values); `filter`, the rows kept (None: all); `reads`, the file
    columns the expressions use."""

    def __init__(self, columns: list[tuple[str, Any]], filter: Any, reads: set[str],
                 types: dict[str, Any], text: str) -> None:
        self.columns = columns
        self.filter = filter
        self.reads = reads
        self.types = types      # every scan column: the Arrow type of Spark's reading of it
        self.text = text        # Spark's SQL of the projections and filters, for messages
        self.schema: Any = None  # the columns' Arrow schema over the files (computed_scan)

    def reads_from(self, file_schema: Any) -> bool:
        """Whether a file of `file_schema` holds the columns read, each of a
        type Spark's type holds every value of (e.g. uint32 read as long):
        the expressions cast the file's values to Spark's types."""
        names = set(file_schema.names)
        return self.reads <= names and all(
            _widens(file_schema.field(c).type, self.types[c]) for c in self.reads)


def _widens(have: Any, want: Any) -> bool:
    """Whether every value of Arrow type `have` is one of `want`, unchanged."""
    import pyarrow as pa
    if have == want:
        return True
    if pa.types.is_integer(have) and pa.types.is_integer(want):
        return bool(pa.types.is_signed_integer(want) and have.bit_width < want.bit_width
                    or (pa.types.is_signed_integer(have) == pa.types.is_signed_integer(want)
                        and have.bit_width <= want.bit_width))
    return bool(pa.types.is_large_string(have) and pa.types.is_string(want))


def _seq(s: Any) -> list[Any]:
    """A Scala Seq through py4j as a list."""
    return [s.apply(i) for i in range(s.size())]


def _kind(x: Any) -> str:
    return str(x.getClass().getSimpleName())


def _type_name(x: Any) -> str:
    return str(x.dataType().typeName())


def _arrow_type(spark_type_name: str) -> Any:
    import pyarrow as pa
    if spark_type_name not in _TYPES:
        raise Untranslatable(f"type {spark_type_name}")
    return getattr(pa, _TYPES[spark_type_name])()


def _widening_cast(src: str, dst: str) -> bool:
    """Whether Spark's cast between these types never fails nor wraps (an
    integer to a wider one, or to a float, rounded to nearest as Java and
    C++ both do; float to double)."""
    if src in _INTEGRAL and dst in _INTEGRAL:
        return _INTEGRAL.index(src) <= _INTEGRAL.index(dst)
    return (src in _INTEGRAL and dst in ("float", "double")) or (src, dst) == ("float", "double")


def _eval_mode(e: Any) -> str:
    """ANSI, LEGACY or TRY (Spark 3.4+: Add/Subtract/Multiply/Divide/Cast carry it)."""
    return str(e.evalMode().toString())


# What an expression stands for: (pyarrow expression, file columns it
# reads, operations in it that fail on a value, narrow).  `narrow` is None
# when the expression is of Spark's type, else (its Arrow type, Spark's):
# a file column narrower than Spark reads it (uint32 read as long) is not
# widened until an operation needs Spark's type -- the same values, but a
# column passed through to the LFTA is not copied into a wider one that the
# runtime narrows back.
Narrow = Optional[tuple[Any, Any]]
Meaning = tuple[Any, frozenset[str], int, Narrow]


def _cast(x: Any, to: Any) -> Any:
    """Spark's widening cast of `x` to Arrow type `to` (int -> double rounds
    to nearest as Java does; `safe` would refuse it)."""
    import pyarrow.compute as pc
    return pc.Expression._call("cast", [x], pc.CastOptions(to, allow_float_truncate=True))


def _widened(x: Any, narrow: Narrow) -> Any:
    return x if narrow is None else _cast(x, narrow[1])


class _Translator:
    """Catalyst expressions -> pyarrow expressions; `env` maps an attribute's
    expression id to the Meaning of what it stands for (a file column, or
    what a Project below computed); `reads` and `checked` gather the same
    of what was translated."""

    def __init__(self, env: dict[int, Meaning]) -> None:
        self.env = env
        self.reads: set[str] = set()
        self.checked = 0        # operations translated that fail on a value (ANSI)

    def __call__(self, e: Any) -> Any:
        """`e` as a pyarrow expression of Spark's type."""
        return _widened(*self.narrow(e))

    def narrow(self, e: Any) -> tuple[Any, Narrow]:
        """`e` as a pyarrow expression, of Spark's type or (narrow) of one
        holding the same value."""
        import pyarrow as pa
        import pyarrow.compute as pc
        kind = _kind(e)
        call: Callable[..., Any] = pc.Expression._call
        kids = _seq(e.children())
        if kind == "AttributeReference":
            key = int(e.exprId().id())
            if key not in self.env:
                raise Untranslatable(f"attribute {e.name()}")
            expr, reads, checked, narrow = self.env[key]
            self.reads |= reads
            self.checked += checked
            return expr, narrow
        if kind == "Alias":
            return self.narrow(kids[0])
        if kind == "Literal":
            t = _arrow_type(_type_name(e))
            v = e.value()
            if v is not None and _type_name(e) == "string":
                v = v.toString()        # a UTF8String
            return pc.scalar(pa.scalar(v, t)), None
        if kind in _ARITH:
            if _type_name(e) not in _INTEGRAL or _eval_mode(e) == "TRY":
                raise Untranslatable(kind)
            ansi = _eval_mode(e) == "ANSI"
            self.checked += ansi
            return call(_ARITH[kind][ansi], [self(k) for k in kids]), None
        if kind == "Divide":        # on doubles only (Spark's `/` gives double or decimal)
            if _type_name(e) != "double" or _eval_mode(e) == "TRY":
                raise Untranslatable(kind)
            a, b = (self(k) for k in kids)
            if _eval_mode(e) == "ANSI":
                self.checked += 1
                return call("divide_checked", [a, b]), None   # raises on a zero divisor, as Spark
            zero = call("equal", [b, pc.scalar(0.0)])
            return call("if_else", [zero, pc.scalar(pa.scalar(None, pa.float64())),
                                    call("divide", [a, b])]), None
        if kind == "Abs" or kind == "UnaryMinus":
            if _type_name(e) not in _NUMERIC:
                raise Untranslatable(kind)
            x, narrow = self.narrow(kids[0])
            if kind == "Abs" and narrow is not None and pa.types.is_unsigned_integer(narrow[0]):
                return x, narrow        # |x| is x, and cannot overflow
            base = "abs" if kind == "Abs" else "negate"
            checked = bool(e.failOnError()) and _type_name(e) in _INTEGRAL
            self.checked += checked
            return call(base + ("_checked" if checked else ""), [_widened(x, narrow)]), None
        if kind == "Cast":
            src, dst = _type_name(kids[0]), _type_name(e)
            if src != dst and not _widening_cast(src, dst):
                raise Untranslatable(f"cast {src} -> {dst}")
            x, narrow = self.narrow(kids[0])
            want = _arrow_type(dst)
            if src == dst:
                return x, narrow
            if narrow is not None and _widens(narrow[0], want):
                return x, (narrow[0], want)
            return _cast(_widened(x, narrow), want), None
        if kind in _COMPARE:
            if any(_type_name(k) not in _INTEGRAL + ("boolean", "string") for k in kids):
                raise Untranslatable(f"{kind} of {[_type_name(k) for k in kids]}")
            return call(_COMPARE[kind], [self(k) for k in kids]), None
        if kind in ("And", "Or"):       # three-valued, as SQL's
            left = self(kids[0])
            before = self.checked
            right = self(kids[1])
            if self.checked != before:
                # Spark skips the right side when the left decides; pyarrow
                # evaluates it on every row, and would fail where Spark does not
                raise Untranslatable(f"a failing operation on the right of {kind}")
            return call("and_kleene" if kind == "And" else "or_kleene", [left, right]), None
        if kind == "Not":
            return call("invert", [self(kids[0])]), None
        if kind in ("IsNotNull", "IsNull"):
            return call("is_valid" if kind == "IsNotNull" else "is_null", [self(kids[0])]), None
        raise Untranslatable(kind)


def parquet_plan(df: Any) -> Optional[tuple[list[Any], Any]]:
    """The Projects and Filters (top down) of a batch DataFrame whose
    optimized plan is those over one Parquet relation, and the relation;
    None for a plan of any other shape."""
    try:
        if df.isStreaming:
            return None
        chain = []
        node = df._jdf.queryExecution().optimizedPlan()
        while _kind(node) in ("Project", "Filter"):
            chain.append(node)
            kids = _seq(node.children())
            if len(kids) != 1:
                return None
            node = kids[0]
        if _kind(node) != "LogicalRelation" or not chain:
            return None
        if "parquet" not in str(node.relation().fileFormat().toString()).lower():
            return None
        return chain, node
    except Exception:  # noqa: BLE001 - not a JVM DataFrame
        return None


def computed_scan(plan: tuple[list[Any], Any], file_schema: Any) -> Optional[ComputedScan]:
    """The ComputedScan of a parquet_plan over files of `file_schema`, its
    schema worked out; None when an expression is not translatable or the
    files do not hold what it reads (reads_from)."""
    from .storage import computed_schema
    try:
        scan = _computed_scan(*plan, file_schema)
    except Exception:  # noqa: BLE001 - Untranslatable, or a plan node of another shape
        return None
    if not scan.reads_from(file_schema):
        return None
    scan.schema = computed_schema(file_schema, scan.columns, scan.filter)
    return scan if scan.schema is not None else None


def _file_column(name: str, spark_type: Any, file_schema: Any) -> Meaning:
    """A file column as Spark reads it: its own type if Spark's or an integer
    one Spark's holds (narrow), else cast (reads_from refuses the files
    when the cast is not a widening one)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    have = file_schema.field(name).type if name in file_schema.names else None
    if have == spark_type:
        return pc.field(name), frozenset([name]), 0, None
    if (have is not None and pa.types.is_integer(have) and pa.types.is_integer(spark_type)
            and _widens(have, spark_type)):
        return pc.field(name), frozenset([name]), 0, (have, spark_type)
    return _cast(pc.field(name), spark_type), frozenset([name]), 0, None


def _computed_scan(chain: list[Any], node: Any, file_schema: Any) -> ComputedScan:
    import pyarrow.compute as pc
    # the scan's columns of types translated here (one of another type
    # stops the translation only where an expression reads it)
    attrs = [a for a in _seq(node.output()) if _type_name(a) in _TYPES]
    types = {str(a.name()): _arrow_type(_type_name(a)) for a in attrs}
    env = {int(a.exprId().id()): _file_column(str(a.name()), types[str(a.name())], file_schema)
           for a in attrs}
    output = [(str(a.name()), int(a.exprId().id())) for a in attrs]
    cond, cond_reads = None, set()
    text: list[str] = []
    for n in reversed(chain):           # from the scan up
        tr = _Translator(env)
        if _kind(n) == "Filter":
            text.append(f"WHERE {n.condition().sql()}")
            c = tr(n.condition())
            if cond is not None and tr.checked:
                # Spark evaluates this filter only on the rows the ones below
                # kept; one pyarrow filter evaluates it on every row
                raise Untranslatable("a failing operation in a filter above another")
            cond = c if cond is None else pc.Expression._call("and_kleene", [cond, c])
            cond_reads |= tr.reads
            continue
        computed: dict[int, Meaning] = {}
        text.append("SELECT " + ", ".join(str(x.sql()) for x in _seq(n.projectList())))
        for x in _seq(n.projectList()):
            tr.reads, tr.checked = set(), 0
            expr, narrow = tr.narrow(x)
            computed[int(x.exprId().id())] = (expr, frozenset(tr.reads), tr.checked, narrow)
        env = {**env, **computed}
        output = [(str(x.name()), int(x.exprId().id())) for x in _seq(n.projectList())]
    columns = [(name, env[key][0]) for name, key in output]
    reads = set(cond_reads).union(*(env[key][1] for _, key in output))
    return ComputedScan(columns, cond, reads, types, " ".join(text))


def holds(have: Any, want: Any) -> bool:
    """Whether Arrow schema `have` has `want`'s names, each column of a type
    that holds the values of `want`'s (computed columns left narrow)."""
    return bool(have.names == want.names and all(
        _widens(h, w) for h, w in zip(have.types, want.types)))
