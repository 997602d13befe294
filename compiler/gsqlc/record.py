"""Plain data classes for the modules every run imports.

`record` is the part of `dataclasses.dataclass` those modules use: an
`__init__` taking the annotated fields in order (with defaults and
`field(default_factory=...)`), `__repr__`, `__eq__`, and with `frozen=True`
a `__hash__` and no assignment.  Why not `dataclasses`: a cached run's
start-up (issue 13) -- it imports `inspect` (~13 ms) and Python 3.11 compiles
each method of each class apart (~1 ms a class, 17 classes on that path).
Here only `__init__` is compiled (one small `exec` a class); the other
methods are shared and read the fields by name.  The compiler's passes,
which use `dataclasses.fields` and `replace`, keep `dataclasses`.

Invariants: a record's fields are its own annotations, in order, minus
`ClassVar`s (a record does not inherit fields); a field without a default
never follows one with a default (TypeError at class creation); a frozen
record's attributes are set only by `__init__` (and by copy and pickle,
which write the instance's `__dict__`).
"""
from __future__ import annotations

from operator import attrgetter
from typing import Any, Callable, Optional, TypeVar, dataclass_transform, overload

_T = TypeVar("_T")


class _Missing:
    """No default (a sentinel's type, so a default of None stays a default)."""

    def __repr__(self) -> str:
        return "MISSING"


_MISSING: Any = _Missing()


class FrozenInstanceError(AttributeError):
    """An assignment to an attribute of a frozen record."""


class Field:
    """A field's default, or the callable making a fresh one per instance."""

    __slots__ = ("default", "default_factory")

    def __init__(self, default: Any, default_factory: Optional[Callable[[], Any]]) -> None:
        self.default = default
        self.default_factory = default_factory


def field(*, default: Any = _MISSING, default_factory: Optional[Callable[[], Any]] = None) -> Any:
    """A field's default (`default=`) or a factory called for each instance
    (`default_factory=`, for mutable defaults)."""
    if default is not _MISSING and default_factory is not None:
        raise ValueError("a field takes a default or a default_factory, not both")
    return Field(default, default_factory)


def _repr(self: Any) -> str:
    shown = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__record_fields__)
    return f"{type(self).__qualname__}({shown})"


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is not self.__class__:
        return NotImplemented
    return bool(self._record_values(self) == other._record_values(other))


def _hash(self: Any) -> int:
    return hash(self._record_values(self))


def _frozen_setattr(self: Any, name: str, value: Any) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r} of a frozen {type(self).__name__}")


def _frozen_delattr(self: Any, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r} of a frozen {type(self).__name__}")


def _methods(cls: type, frozen: bool) -> type:
    annotations = cls.__dict__.get("__annotations__", {})
    names = [n for n, a in annotations.items()
             if not str(a).startswith(("ClassVar", "typing.ClassVar"))]
    scope: dict[str, Any] = {"_MISSING": _MISSING}
    params, body = [], []
    seen_default = False
    for n in names:
        d = cls.__dict__.get(n, _MISSING)
        factory = None
        if isinstance(d, Field):
            factory, d = d.default_factory, d.default
            if d is _MISSING:
                delattr(cls, n)     # as dataclasses: no class attribute without a plain default
            else:
                setattr(cls, n, d)
        if factory is not None:
            scope[f"_factory_{n}"] = factory
            params.append(f"{n}=_MISSING")
            value = f"_factory_{n}() if {n} is _MISSING else {n}"
        elif d is not _MISSING:
            scope[f"_default_{n}"] = d
            params.append(f"{n}=_default_{n}")
            value = n
        elif seen_default:
            raise TypeError(f"{cls.__name__}: field {n!r} without a default follows one with a default")
        else:
            params.append(n)
            value = n
        seen_default = seen_default or factory is not None or d is not _MISSING
        body.append(f"  object.__setattr__(self, {n!r}, {value})" if frozen
                    else f"  self.{n} = {value}")
    source = [f"def __init__(self, {', '.join(params)}):", *(body or ["  pass"])]
    exec("\n".join(source), scope)      # noqa: S102 -- field names are identifiers of our own classes
    init = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    setattr(cls, "__init__", init)
    setattr(cls, "__repr__", _repr)
    setattr(cls, "__eq__", _eq)
    if frozen:
        setattr(cls, "__hash__", _hash)
        setattr(cls, "__setattr__", _frozen_setattr)
        setattr(cls, "__delattr__", _frozen_delattr)
    else:
        setattr(cls, "__hash__", None)      # mutable and compared by value
    setattr(cls, "__match_args__", tuple(names))
    setattr(cls, "__record_fields__", tuple(names))
    # the fields' values as a tuple (attrgetter of one name returns the value)
    setattr(cls, "_record_values", staticmethod(
        attrgetter(*names) if len(names) > 1 else lambda self: tuple(getattr(self, n) for n in names)))
    return cls


@overload
def record(cls: type[_T], /) -> type[_T]: ...
@overload
def record(*, frozen: bool = False) -> Callable[[type[_T]], type[_T]]: ...


@dataclass_transform(field_specifiers=(field,))
def record(cls: Optional[type[_T]] = None, /, *, frozen: bool = False) -> Any:
    """Make `cls` a data class of its annotated fields (see the module's text)."""
    if cls is None:
        return lambda c: _methods(c, frozen)
    return _methods(cls, frozen)


def as_dict(obj: Any) -> dict[str, Any]:
    """A record's fields by name (shallow, unlike `dataclasses.asdict`)."""
    return {n: getattr(obj, n) for n in type(obj).__record_fields__}


def replace(obj: _T, **changes: Any) -> _T:
    """A copy of a record with some fields changed."""
    values = as_dict(obj)
    unknown = set(changes) - set(values)
    if unknown:
        raise TypeError(f"{type(obj).__name__} has no field {sorted(unknown)[0]!r}")
    values.update(changes)
    return type(obj)(**values)
