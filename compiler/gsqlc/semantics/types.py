"""GSQL types, C-like promotion, and temporal directions."""
from __future__ import annotations

import enum
from typing import Optional


class Type(enum.Enum):
    BOOL = "bool"
    USHORT = "ushort"
    UINT = "uint"
    INT = "int"
    ULLONG = "ullong"
    LLONG = "llong"
    FLOAT = "float"
    IP = "IP"
    IPV6 = "IPV6"
    STRING = "string"

    def __str__(self) -> str:
        return self.value

    @property
    def c_type(self) -> str:
        return _C_TYPES[self]

    @property
    def code(self) -> str:
        """The enum gsq_type constant of the runtime."""
        return "GSQ_T_" + self.name

    @property
    def is_integer(self) -> bool:
        return self in _INT_RANK

    @property
    def is_numeric(self) -> bool:
        return self.is_integer or self is Type.FLOAT

    @property
    def is_signed(self) -> bool:
        return self in (Type.INT, Type.LLONG, Type.FLOAT)

    @property
    def bits(self) -> int:
        return _BITS.get(self, 0)

    @property
    def is_string(self) -> bool:
        return self is Type.STRING


_C_TYPES = {
    Type.BOOL: "uint8_t",
    Type.USHORT: "uint16_t",
    Type.UINT: "uint32_t",
    Type.INT: "int32_t",
    Type.ULLONG: "uint64_t",
    Type.LLONG: "int64_t",
    Type.FLOAT: "double",
    Type.IP: "uint32_t",
    Type.IPV6: "gsq_ipv6",
    Type.STRING: "gsq_str",
}

# Integer-like types with their C conversion rank; IP behaves as uint.
_INT_RANK = {
    Type.BOOL: 0,
    Type.USHORT: 1,
    Type.INT: 2,
    Type.UINT: 2,
    Type.IP: 2,
    Type.LLONG: 3,
    Type.ULLONG: 3,
}
_BITS = {Type.BOOL: 8, Type.USHORT: 16, Type.INT: 32, Type.UINT: 32,
         Type.IP: 32, Type.LLONG: 64, Type.ULLONG: 64, Type.FLOAT: 64}

_NAMES = {t.value.lower(): t for t in Type}
_NAMES.update({
    "unsigned int": Type.UINT, "v_str": Type.STRING, "str": Type.STRING,
    "ipv4": Type.IP, "double": Type.FLOAT, "unsigned long long": Type.ULLONG,
    "long long": Type.LLONG, "unsigned short": Type.USHORT,
})


def parse_type_name(name: str) -> Optional[Type]:
    return _NAMES.get(name.lower())


def type_names() -> list[str]:
    return [t.value for t in Type]


def _promote_one(t: Type) -> Type:
    """C integer promotion: bool and ushort become int; IP acts as uint."""
    if t in (Type.BOOL, Type.USHORT):
        return Type.INT
    if t is Type.IP:
        return Type.UINT
    return t


def arithmetic_result(a: Type, b: Type) -> Optional[Type]:
    """Usual arithmetic conversions of C, or None if not numeric."""
    if not (a.is_numeric and b.is_numeric):
        return None
    if Type.FLOAT in (a, b):
        return Type.FLOAT
    a, b = _promote_one(a), _promote_one(b)
    ra, rb = _INT_RANK[a], _INT_RANK[b]
    if ra == rb:
        if a == b:
            return a
        return Type.UINT if ra == 2 else Type.ULLONG  # mixed sign, same rank
    hi, lo = (a, b) if ra > rb else (b, a)
    # The 64-bit signed type can hold every 32-bit unsigned value.
    return hi


def unary_result(t: Type) -> Optional[Type]:
    if not t.is_numeric:
        return None
    return _promote_one(t)


def comparable(a: Type, b: Type) -> bool:
    if a == b:
        return True
    if a.is_numeric and b.is_numeric:
        return True
    return False


class Temporal(enum.Enum):
    """Inferred ordering of an expression over a stream."""
    NONE = "none"
    INCREASING = "increasing"
    DECREASING = "decreasing"
    CONSTANT = "constant"

    def __str__(self) -> str:
        return self.value

    @property
    def is_temporal(self) -> bool:
        return self in (Temporal.INCREASING, Temporal.DECREASING)

    def flipped(self) -> "Temporal":
        if self is Temporal.INCREASING:
            return Temporal.DECREASING
        if self is Temporal.DECREASING:
            return Temporal.INCREASING
        return self
