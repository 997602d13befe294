"""Epoch-owning reads: an aggregation over a Parquet source completes in the
Spark tasks that read the files, with no shuffle and no second stage.

The tasks of an LFTA stage read units u_0 .. u_{n-1} of the files
(storage.plan_pieces), which in order hold the source's rows R.  Every row
has a *key*: the aggregation's epoch as a function of the source row
(EpochKey, e.g. time/60), or none (a null or out-of-range time, which the
runtime rejects).  The aggregation's temporal attribute is increasing, up
to D epochs of disorder (D = its open epochs - 1, or what a declared
out_of_order bound needs).

  beta_j    between u_{j-1} and u_j: E, u_{j-1}'s largest key, or E - 1
            when more of E's rows lie after u_j's start (OwnedRead.boundary)
  anchor_j  u_j's start, or for E - 1 the first row group of u_{j-1} that
            holds E (every row before it is below E)
  task j owns the keys (beta_j, beta_{j+1}]   (the last task: up to inf)
  c_j       the first row at or after anchor_j whose key > beta_j
  P_j       [c_j, c_{j+1}): task j's positional range

Task j passes on to its LFTA + HFTA the rows of its keys found in P_j and
after it, up to the first row past c_{j+1} whose key exceeds
beta_{j+1} + D, plus the rows of P_j without a key.  It checks, over P_j:

  (i)   no key above beta_{j+1}     (a row of a later task's epoch, early)
  (ii)  no key more than D below the largest key before it in P_j, or beta_j
  (iii) beta_j <= beta_{j+1}

With betas and anchors non-decreasing the P_j partition R.  If every
task's checks pass, every row with a key lies in the window of the task
that owns its key: a row r of task j's keys after the window follows a row
q whose key exceeds beta_{j+1} + D; if q and r are in one P, (ii) fails
there; else q's P ends at a beta <= the beta that starts r's P ((i),
(iii)) and r, more than D below it, fails (ii).  A row of task j's keys
before c_j lies in an earlier P whose end beta <= beta_j: (i) fails.  So
each task completes exactly its epochs, over the rows a whole-input run
counts, in their order -- the Python API's answer over the files, no late
row dropped.  Data out of order beyond D fails the task, saying where;
run_query's time_ordered=False shuffles partials instead, whatever the
order.

Footer statistics of the key's file column bound the keys of a row group
(else its keys are read), so a task reads about its own unit plus the rows
of the epoch that straddles its end.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional

from ..frontend import ast
from ..semantics.bound import FieldRef, GroupRef
from ..semantics.types import Temporal, Type

_ARITH = {"+", "-", "*", "/", "%", "&", "|", "<<", ">>"}


def _dtype(t: Type) -> Any:
    """The numpy type holding GSQL integer type t as C does: numpy's
    arithmetic on it wraps around as C's does."""
    import numpy as np
    return {Type.USHORT: np.uint16, Type.INT: np.int32, Type.UINT: np.uint32, Type.IP: np.uint32,
            Type.LLONG: np.int64, Type.ULLONG: np.uint64}[t]


def _wrap(v: Any, dtype: Any) -> Any:
    """v (an integer array or scalar) converted to the numpy type of a C
    type (_dtype): modulo 2^bits, as C converts."""
    import numpy as np
    return np.asarray(v).astype(dtype, copy=False)


def _binary(op: str, a: Any, b: Any, signed: bool) -> Any:
    """a op b in C's arithmetic of their type (operands already in it)."""
    import numpy as np
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op in ("/", "%"):
        q = a // b
        if signed:   # C truncates toward zero; numpy floors
            q = q + (((a % b) != 0) & ((a < 0) != (b < 0)))
        return q if op == "/" else a - q * b
    if op == "&":
        return a & b
    if op == "|":
        return a | b
    return np.left_shift(a, b) if op == "<<" else np.right_shift(a, b)


@dataclass
class EpochKey:
    """An aggregation's epoch as a function of one source column: `column`
    (a PROTOCOL field of integer type `field_type`) under `fn`, which
    computes it on arrays of the field's numpy type (_dtype) as the
    generated C does."""
    column: str
    field_type: Type
    fn: Callable[[Any], Any]
    text: str

    def values(self, arr: Any) -> tuple[Any, Optional[Any]]:
        """The keys of an Arrow array of the column, and which rows have
        one (None: all): a null, or a value the field's type cannot hold
        (the runtime rejects that row), has none."""
        import numpy as np
        valid = None
        if arr.null_count:
            valid = np.asarray(arr.is_valid())
            arr = arr.fill_null(0)
        a = arr.to_numpy(zero_copy_only=False)
        if a.dtype.kind not in "iu":
            a = a.astype(np.int64)
        bits, signed = self.field_type.bits, self.field_type.is_signed
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
        held = np.iinfo(a.dtype)
        low, high = (int(a.min()), int(a.max())) if len(a) and \
            (held.min < lo or held.max > hi) else (lo, hi)
        if low < lo or high > hi:
            # each bound compared only where the array's type holds it
            inside = np.ones(len(a), bool)
            if low < lo:
                inside &= a >= lo
            if high > hi:
                inside &= a <= hi
            valid = inside if valid is None else valid & inside
            a = np.where(inside, a, 0)
        return self.fn(a.astype(_dtype(self.field_type), copy=False)), valid


def epoch_key(hfta: Any, lfta: Any) -> Optional[EpochKey]:
    """The epoch key of aggregation `hfta` over the rows of `lfta`'s source:
    its first increasing temporal group key, through the LFTA's output
    columns, as a function of one integer PROTOCOL field; None when it is
    not built only of that field, integer literals and + - * / % & | << >>
    (divisors and shifts by literals)."""
    keys = [i for i in hfta.epoch_indices
            if hfta.group_by[i][1].info.temporal is Temporal.INCREASING]
    if not keys:
        return None
    out = dict(lfta.select)
    fields: set[str] = set()

    def lfta_column(name: str) -> Optional[ast.Expr]:
        e = out.get(name)
        if isinstance(e, GroupRef) and hasattr(lfta, "group_by"):
            e = lfta.group_by[e.index][1]
        return e

    def build(e: ast.Expr, hfta_level: bool) -> Optional[tuple[Callable[[Any], Any], str]]:
        t = e.info.type if e.info is not None else None
        if isinstance(e, FieldRef):
            if hfta_level:
                inner = lfta_column(e.name)
                return build(inner, False) if inner is not None else None
            f = lfta.protocol.fields.get(e.name)
            if f is None or not f.type.is_integer or f.type is Type.BOOL:
                return None
            fields.add(e.name)
            if t is None or t is f.type:
                return (lambda a: a), e.name
            if not t.is_integer or t is Type.BOOL:
                return None
            fdt = _dtype(t)

            def field(a: Any) -> Any:
                return _wrap(a, fdt)
            return field, e.name
        if t is None:
            return None
        rt: Type = t
        if not rt.is_integer or rt is Type.BOOL:
            return None
        dt = _dtype(rt)
        if isinstance(e, ast.Literal) and isinstance(e.value, int) and not isinstance(e.value, bool):
            v: int = e.value

            def literal(a: Any) -> Any:
                return _wrap(v, dt)
            return literal, e.text or str(v)
        if isinstance(e, ast.Unary) and e.op == "-":
            x = build(e.operand, hfta_level)
            if x is None:
                return None
            operand = x[0]

            def negate(a: Any) -> Any:
                return _wrap(-_wrap(operand(a), dt), dt)
            return negate, f"-{x[1]}"
        if not (isinstance(e, ast.Binary) and e.op in _ARITH):
            return None
        if e.op in ("/", "%", "<<", ">>"):
            # a literal divisor / shift: no division by zero, no shift by a column
            if not (isinstance(e.right, ast.Literal) and isinstance(e.right.value, int)
                    and e.right.value > 0):
                return None
        left, right = build(e.left, hfta_level), build(e.right, hfta_level)
        if left is None or right is None:
            return None
        op, lf, rf, signed = e.op, left[0], right[0], rt.is_signed

        def binary(a: Any) -> Any:
            return _wrap(_binary(op, _wrap(lf(a), dt), _wrap(rf(a), dt), signed), dt)
        lt, rtext = (f"({x[1]})" if isinstance(x_e, ast.Binary) else x[1]
                     for x, x_e in ((left, e.left), (right, e.right)))
        return binary, f"{lt}{op}{rtext}"

    built = build(hfta.group_by[keys[0]][1], True)
    if built is None or len(fields) != 1:
        return None
    column = fields.pop()
    return EpochKey(column, lfta.protocol.fields[column].type, built[0], built[1])


@dataclass
class _Bounds:
    """The keys of a row group's rows that have one: lo..hi (None: no row
    has one); nulls: some row may have none; rows: its row count."""
    lo: Optional[int]
    hi: Optional[int]
    nulls: bool
    rows: int


Position = tuple[int, int]   # (unit, index of a row group among the unit's)


class OwnedRead:
    """Task j's rows (module docstring) out of `units` (lists of pieces) read
    with `reader` (a storage.RowGroupReader): the rows of its keys for its
    LFTA, checked as they come; a failed check ends the rows and is kept in
    `error` (the task raises it once its run ended).  stats_column: the
    file column the key's column is, whose footer statistics bound the
    keys of a row group (None: the keys are read)."""

    def __init__(self, units: list[list[Any]], key: EpochKey, disorder: int, reader: Any,
                 stats_column: Optional[str], source: str) -> None:
        self.units = units
        self.key = key
        self.disorder = disorder
        self.reader = reader
        self.stats_column = stats_column
        self.source = source
        self.error: Optional[str] = None
        self._read_bounds: dict[tuple[str, int], _Bounds] = {}
        self._unit_groups: dict[int, list[tuple[str, int]]] = {}

    def _groups(self, u: int) -> list[tuple[str, int]]:
        if u not in self._unit_groups:
            self._unit_groups[u] = [pg for piece in self.units[u] for pg in self.reader.groups(piece)]
        return self._unit_groups[u]

    # -- what a row group holds ---------------------------------------------

    def _stat_bounds(self, path: str, g: int) -> Optional[_Bounds]:
        """The row group's keys as its footer statistics bound them (a
        superset of the keys its rows have), or None."""
        if self.stats_column is None:
            return None
        st = self.reader.statistics(path, g, self.stats_column)
        if st is None:
            return None
        rows = self.reader.rows(path, g)
        if not st.has_min_max:    # num_values counts the non-null values
            return _Bounds(None, None, st.null_count > 0, rows) if st.num_values == 0 else None
        import pyarrow as pa
        keys, valid = self.key.values(pa.array([st.min, st.max]))
        if valid is not None:      # a value the field cannot hold: rows without a key
            return None
        return _Bounds(int(keys[0]), int(keys[1]), st.null_count > 0, rows)

    def _bounds(self, path: str, g: int) -> _Bounds:
        """The row group's keys: from its statistics, else read."""
        b = self._stat_bounds(path, g)
        if b is not None:
            return b
        if (path, g) not in self._read_bounds:
            lo = hi = None
            nulls, rows = False, 0
            for batch in self.reader.read(path, g, [self.key.column]):
                keys, valid = self.key.values(batch.column(0))
                rows += len(keys)
                if valid is not None:
                    nulls = nulls or not valid.all()
                    keys = keys[valid]
                if len(keys):
                    a, z = int(keys.min()), int(keys.max())
                    lo = a if lo is None else min(lo, a)
                    hi = z if hi is None else max(hi, z)
            self._read_bounds[(path, g)] = _Bounds(lo, hi, nulls, rows)
        return self._read_bounds[(path, g)]

    # -- the boundaries -------------------------------------------------------

    def _unit_bounds(self, u: int) -> Optional[tuple[int, int]]:
        """The smallest and largest key of unit u (None: no row has one)."""
        bs = [b for b in map(lambda pg: self._bounds(*pg), self._groups(u)) if b.hi is not None]
        if not bs:
            return None
        return min(b.lo for b in bs if b.lo is not None), max(b.hi for b in bs if b.hi is not None)

    def _largest_before(self, j: int) -> Optional[tuple[int, int, int, int]]:
        """(E, u, lo, hi): E the largest key before u_j, walking back from
        u_{j-1} until a unit whose smallest key + D is at most the largest
        seen (within the disorder nothing before it is larger); u the last
        unit before u_j with keys, lo..hi its keys.  None: no key before u_j."""
        e: Optional[int] = None
        nearest: Optional[tuple[int, int, int]] = None
        for u in range(j - 1, -1, -1):
            ub = self._unit_bounds(u)
            if ub is None:
                continue
            e = ub[1] if e is None else max(e, ub[1])
            nearest = nearest or (u, ub[0], ub[1])
            if e >= ub[0] + self.disorder:
                break
        return None if e is None or nearest is None else (e, *nearest)

    def boundary(self, j: int) -> tuple[Optional[int], Position]:
        """(beta_j, anchor_j) between units j-1 and j, as both tasks work it
        out.  E, the largest key before u_j (_largest_before), goes to the
        task of u_{j-1} (beta = E, anchor: u_j's start) unless E begins in
        u_{j-1} (the largest key before u_{j-1} is smaller) and more of E's
        rows follow u_j's start than precede it (counted in row groups, half
        for one that holds other keys too): then to the task of u_j (beta =
        E - 1, anchor: u_{j-1}'s first row group holding E).  So for input
        within the disorder beta_j <= beta_{j+1}, and an epoch over several
        units has one owner.  None: no key before u_j."""
        start: Position = (j, 0)
        found = self._largest_before(j)
        if found is None:
            return None, start
        e, u, _, hi_u = found
        if u != j - 1 or hi_u < e:
            return e, start
        earlier = self._largest_before(j - 1)
        if earlier is not None and earlier[0] >= e:
            return e, start
        groups = self._groups(j - 1)
        first = next(i for i, pg in enumerate(groups)
                     if (hi := self._bounds(*pg).hi) is not None and hi >= e)
        before = 0.0
        for pg in groups[first:]:
            b = self._bounds(*pg)
            if b.lo is not None:
                before += b.rows if b.lo >= e else b.rows / 2
        after = 0.0
        for pg in self._groups(j):
            b = self._bounds(*pg)
            if b.lo is None:
                continue
            if b.lo > e:
                break
            after += b.rows if b.hi is not None and b.hi <= e else b.rows / 2
        if after > before:
            return e - 1, (j - 1, first)
        return e, start

    # -- the rows -------------------------------------------------------------

    def _fail(self, why: str, path: str, g: int) -> None:
        self.error = (f"source {self.source}: {why} in row group {g} of {path}; the tasks "
                      f"complete each epoch of {self.key.text} where they read it, which needs "
                      f"the files (in path order, or as listed) in order of {self.key.column}, "
                      f"up to {self.disorder} epoch(s) of disorder")

    def batches(self, j: int) -> Iterator[Any]:
        """Task j's rows for its LFTA, as record batches."""
        import pyarrow as pa
        n = len(self.units)
        last = j == n - 1
        lo, a = self.boundary(j) if j > 0 else (None, (0, 0))
        hi, z = self.boundary(j + 1) if not last else (None, (n, 0))
        d = self.disorder
        if lo is not None and hi is not None and hi < lo:
            path, g = (self._groups(j) or [("?", 0)])[-1]
            self._fail(f"{self.key.text} reaches {lo} before this run of row groups and only "
                       f"{hi} at its end", path, g)
            return
        phase = "head" if lo is not None else "range"   # -> range -> tail
        top = lo                                          # the largest key seen in P_j, or lo
        # lo is known in the head phase, hi once searching (a None hi returns)
        lo_k = lo if lo is not None else 0
        hi_k = hi if hi is not None else 0
        col = self.key.column
        for u in range(a[0], n):
            groups = self._groups(u)
            for i in range(a[1] if u == a[0] else 0, len(groups)):
                path, g = groups[i]
                searching = not last and (u, i) >= z    # c_{j+1} may be here
                if searching and hi is None:
                    return          # no key before z: P_j ends there
                b = self._stat_bounds(path, g)
                if phase == "head" and b is not None and (b.hi is None or b.hi <= lo_k):
                    continue        # all before c_j
                if phase == "range" and searching and b is not None and not b.nulls \
                        and b.lo is not None and b.lo > hi_k:
                    phase = "tail"  # its first row is c_{j+1}
                if phase == "tail" and b is not None and (b.lo is None or b.lo > hi_k):
                    if b.hi is not None and b.hi > hi_k + d:
                        return      # no key of ours after it
                    continue        # none of our keys in it
                for batch in self.reader.read(path, g):
                    keys, valid = self.key.values(batch.column(col))
                    start = 0
                    if phase == "head":
                        at = _first_above(keys, valid, lo_k, 0)
                        if at is None:
                            continue
                        start, phase = at, "range"
                    stop = len(keys)          # the end of P_j in this batch
                    if phase == "range" and searching:
                        at = _first_above(keys, valid, hi_k, start)
                        if at is not None:
                            stop = at
                    if phase == "range" and stop > start:
                        k = keys[start:stop]
                        h = None if valid is None else valid[start:stop]
                        kv = k if h is None else k[h]
                        if len(kv):
                            ok, top, kmax, ascending = self._in_order(kv, top)
                            if not ok:
                                self._fail(f"{self.key.text} goes back from {top} to {kmax}, "
                                           f"more than {d} epoch(s)", path, g)
                                return
                            if hi is not None and kmax > hi:
                                self._fail(f"{self.key.text} = {kmax} comes before the end of "
                                           f"a run of row groups that ends at {hi}", path, g)
                                return
                        part = batch.slice(start, stop - start)
                        if lo is None or (h is None and ascending and len(k) and int(k[0]) > lo):
                            yield part
                        else:   # rows of earlier epochs (owned before) out; keyless ones in
                            mine = k > lo
                            if h is not None:
                                mine |= ~h
                            yield part if mine.all() else part.filter(pa.array(mine))
                    if phase == "range" and stop < len(keys):
                        phase, start = "tail", stop
                    if phase == "tail":
                        k = keys[start:]
                        over = _first_above(k, None if valid is None else valid[start:],
                                            hi_k + d, 0)
                        end = len(k) if over is None else over
                        mine = k[:end] <= hi_k
                        if lo is not None:
                            mine &= k[:end] > lo
                        if valid is not None:
                            mine &= valid[start:start + end]
                        if mine.any():
                            yield batch.slice(start, end).filter(pa.array(mine))
                        if over is not None:
                            return

    def _in_order(self, kv: Any, top: Optional[int]) -> tuple[bool, Optional[int], int, bool]:
        """Check (ii) on keys kv that follow `top` (the largest before them):
        (in order, the largest now, kv's largest, kv ascending), or on
        failure (False, the key it fell from, the key that fell, False)."""
        import numpy as np
        d = self.disorder
        if bool(np.all(kv[1:] >= kv[:-1])):
            first, last = int(kv[0]), int(kv[-1])
            if top is None or first + d >= top:
                return True, last if top is None else max(top, last), last, True
        run = np.maximum.accumulate(kv)
        kmax = int(run[-1])
        floor = np.asarray(run[0] if top is None else top, kv.dtype)
        run = np.maximum(run, floor)
        prev = np.concatenate([floor[None], run[:-1]])
        bad = (prev > kv) & (prev - kv > d)   # the difference only where it is positive
        if not bad.any():
            return True, int(run[-1]), kmax, False
        at = int(np.argmax(bad))
        return False, int(prev[at]), int(kv[at]), False


def _first_above(keys: Any, valid: Optional[Any], bound: int, start: int) -> Optional[int]:
    """The first index >= start of a row with a key above bound, or None."""
    import numpy as np
    above = keys[start:] > bound
    if valid is not None:
        above &= valid[start:]
    at = int(np.argmax(above)) if len(above) else 0
    return start + at if len(above) and above[at] else None
