"""An LFTA's field reads: the steps of its accept() that unpack the fields
of a record (a CSV record's columns, a packet's headers, the clock) into
local variables, lazily, in the order its predicates need them; and the
same steps over row i of a columnar chunk (gsq_cols: each column's value,
or its raw array when every column is read as it is)."""
from __future__ import annotations

from typing import Optional

from ..frontend import ast
from ..semantics.bound import FieldRef, walk
from ..semantics.schema import PACKET_ACCESSORS, Protocol
from ..semantics.types import Type
from .cescape import c_identifier

# A column value (gsq_csv_value) as the C type of the accessor of its type.
_COL_VALUE = {
    Type.BOOL: "(uint8_t)({v}.u != 0)", Type.USHORT: "(uint16_t){v}.u",
    Type.UINT: "(uint32_t){v}.u", Type.INT: "(int32_t){v}.i", Type.ULLONG: "{v}.u",
    Type.LLONG: "{v}.i", Type.FLOAT: "{v}.f", Type.IP: "(uint32_t){v}.u",
    Type.IPV6: "{v}.v6", Type.STRING: "{v}.s",
}

# Types whose Arrow column may be read as it is (gsq_col.raw).
COL_RAW = {Type.USHORT, Type.UINT, Type.INT, Type.ULLONG, Type.LLONG, Type.FLOAT, Type.IP}
# a type code's C type when its column may be read as it is (else None)
RAW_CTYPE = {t.code: (t.c_type if t in COL_RAW else None) for t in Type}

_CSV_GET = {
    Type.BOOL: "bool", Type.USHORT: "ushort", Type.UINT: "uint", Type.INT: "int",
    Type.ULLONG: "ullong", Type.LLONG: "llong", Type.FLOAT: "float", Type.IP: "ip",
    Type.IPV6: "ipv6", Type.STRING: "string",
}


def field_var(name: str) -> str:
    """The local variable holding field `name` of a record."""
    return "f_" + c_identifier(name)


def fields_of(e: ast.Expr) -> list[str]:
    return [x.name for x in walk(e) if isinstance(x, FieldRef)]


class LftaReads:
    """The steps of one LFTA's accept(), in order: the fields unpacked
    (each once, on first need) and the checks added between them.

    steps: over a record (gsq_record *rec).  col_steps: the same over row i
    of a columnar chunk (gsq_cols *cv), None once a step needs the record
    itself (a pcap source).  raw_steps: over columns read as they are (the
    pointers in locals r<j>), None once a step has no such form.
    mask_steps: raw_steps with no branch at all (a selection's block loop,
    which the C compiler vectorizes).  csv_fields: (position, type code,
    field name), one per PROTOCOL field read from the CSV record, so an
    Arrow source can match columns by name; column j of a chunk is the j-th."""

    def __init__(self, proto: Protocol):
        self.proto = proto
        self.unpacked: set[str] = set()
        self.decls: list[str] = []
        self.uses: list[str] = []   # required fields may be read only to admit the record
        self.steps: list[str] = []
        # (their functions take the chunk cv and row index i, which a query
        # reading no column -- only get_system_time fields -- leaves unused)
        self.col_steps: Optional[list[str]] = (["(void)cv;", "(void)i;"]
                                               if proto.source_kind != "pcap" else None)
        self.raw_steps: Optional[list[str]] = ["(void)i;"] if proto.source_kind != "pcap" else None
        self.mask_steps: list[str] = []
        self.csv_fields: dict[tuple[int, str, str], None] = {}

    def read_step(self, name: str, skip: str) -> str:
        """The statement reading field `name` into its variable; `skip`
        runs when the field is unavailable."""
        f = self.proto.fields[name]
        var = field_var(name)
        if f.source == "csv":
            ct = f.csv_type or f.type
            if ct == f.type:
                return f"if (gsq_csv_get_{_CSV_GET[ct]}(node, rec, {f.csv_pos}u, &{var})) {skip}"
            return (f"{{ {ct.c_type} tmp_; if (gsq_csv_get_{_CSV_GET[ct]}(node, rec, "
                    f"{f.csv_pos}u, &tmp_)) {skip} {var} = ({f.type.c_type})tmp_; }}")
        if f.source == "system":
            return (f"{{ uint32_t tmp_; gsq_acc_get_system_time(node, rec, &tmp_); "
                    f"{var} = ({f.type.c_type})tmp_; }}")
        if f.source == "constant":   # get_schemaId: GS-lite's CSV records carry 0
            return f"{var} = 0;"
        assert f.accessor is not None
        at = PACKET_ACCESSORS[f.accessor]
        if at == f.type:
            return f"if (gsq_acc_{f.accessor}(node, rec, &{var})) {skip}"
        return (f"{{ {at.c_type} tmp_; if (gsq_acc_{f.accessor}(node, rec, &tmp_)) "
                f"{skip} {var} = ({f.type.c_type})tmp_; }}")

    def col_slot(self, name: str) -> int:
        """The chunk column (gsq_cols.col[j]) of CSV field `name`."""
        f = self.proto.fields[name]
        return list(self.csv_fields).index((f.csv_pos, (f.csv_type or f.type).code, name))

    def col_read_step(self, name: str, skip: str) -> Optional[str]:
        """read_step over row i of a columnar chunk (None: a field that is
        no CSV column, e.g. the clock's)."""
        f = self.proto.fields[name]
        if f.source in ("system", "constant"):
            return self.read_step(name, skip)   # the clock or a constant: rec is unused
        if f.source != "csv":
            return None
        ct = f.csv_type or f.type
        j = self.col_slot(name)
        val = _COL_VALUE[ct].format(v="c_->vals[i]")
        if ct in COL_RAW:
            val = f"(c_->raw ? ((const {ct.c_type} *)c_->raw)[i] : {val})"
        if ct != f.type:
            val = f"({f.type.c_type})({val})"
        return (f"{{ const gsq_col *c_ = cv->col[{j}]; if (c_->valid && !c_->valid[i]) "
                f"{skip} {field_var(name)} = {val}; }}")

    def raw_read_step(self, name: str) -> Optional[str]:
        """col_read_step when every column of the chunk is read as it is
        (gsq_col.raw, no nulls: the pointers in locals r<j>)."""
        f = self.proto.fields[name]
        if f.source in ("system", "constant"):
            return self.read_step(name, "return;")
        ct = f.csv_type or f.type
        if f.source != "csv" or ct not in COL_RAW:
            return None
        j = self.col_slot(name)
        val = f"r{j}[i]" if ct == f.type else f"({f.type.c_type})r{j}[i]"
        return f"{field_var(name)} = {val};"

    def add_step(self, step: str, col_step: Optional[str] = "",
                 raw_step: Optional[str] = "", mask_step: str = "") -> None:
        """A step of accept(); col_step is its columnar form, raw_step its
        form over columns read as they are ("": the same text, None: it has
        none, so there is no such form); mask_step the raw form with no
        branch ("": the raw form is one)."""
        self.steps.append(step)
        self.mask_steps.append(mask_step or raw_step or step)
        if self.col_steps is not None:
            if col_step is None:
                self.col_steps = None
            else:
                self.col_steps.append(col_step or step)
        if self.raw_steps is not None:
            if raw_step is None:
                self.raw_steps = None
            else:
                self.raw_steps.append(raw_step or step)

    def unpack(self, name: str) -> None:
        """Field `name` read into its variable (once)."""
        if name in self.unpacked:
            return
        self.unpacked.add(name)
        f = self.proto.fields[name]
        var = field_var(name)
        self.decls.append(f"{f.type.c_type} {var};")
        self.uses.append(f"(void){var};")
        if f.source == "csv":
            self.csv_fields[(f.csv_pos, (f.csv_type or f.type).code, name)] = None
        skip = ("return;" if f.required else
                "{ gsq_count(node, GSQ_CNT_FIELD_UNAVAILABLE, 1); return; }")
        self.add_step(self.read_step(name, skip), self.col_read_step(name, skip),
                      self.raw_read_step(name))

    def unpack_all(self, exprs: "list[ast.Expr] | tuple[ast.Expr, ...]") -> None:
        """Every field the expressions read."""
        for e in exprs:
            for name in fields_of(e):
                self.unpack(name)
