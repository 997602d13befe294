"""gsqlc.record: the data classes of the modules a cached run imports behave
as the `dataclasses` ones they replace (construction, defaults, equality,
hashing, frozenness, copying and pickling)."""
from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest

from gsqlc.record import FrozenInstanceError, as_dict, field, record, replace


@record(frozen=True)
class Point:
    x: int
    label: str = "p"
    tags: tuple[str, ...] = field(default_factory=tuple)


@record
class Bag:
    name: str
    items: list[int] = field(default_factory=list)
    count: int = field(default=0)


@record(frozen=True)
class One:
    x: int


def test_construction_defaults_and_repr_match_dataclasses():
    @dataclasses.dataclass(frozen=True)
    class Point:       # the same class through dataclasses
        x: int
        label: str = "p"
        tags: tuple[str, ...] = dataclasses.field(default_factory=tuple)

    for args, kw in [((1,), {}), ((1, "q"), {}), ((), {"x": 2, "tags": ("a",)})]:
        mine, theirs = repr(globals()["Point"](*args, **kw)), repr(Point(*args, **kw))
        assert mine.startswith("Point(") and theirs.endswith(mine), (mine, theirs)
    assert Bag("b") == Bag("b", [], 0) and Bag("b").count == 0
    assert Bag.count == 0                       # a plain default stays a class attribute
    assert not hasattr(Bag, "items")            # a factory field has none
    with pytest.raises(TypeError):
        Bag()                                   # a field without a default is required
    with pytest.raises(TypeError):
        Bag("b", nope=1)


def test_a_factory_makes_a_fresh_value_per_instance():
    a, b = Bag("a"), Bag("b")
    a.items.append(1)
    assert b.items == [] and a.items == [1]
    given = [5]
    assert Bag("c", given).items is given


def test_equality_and_hashing():
    assert Point(1) == Point(1, "p", ())
    assert Point(1) != Point(2) and Point(1) != Point(1, "q")
    assert Point(1) != (1, "p", ())             # another class is never equal
    assert hash(Point(1, "a")) == hash(Point(1, "a"))
    assert {Point(1), Point(1), Point(2)} == {Point(1), Point(2)}
    assert One(3) == One(3) and One(3) != One(4) and hash(One(3)) == hash(One(3))
    with pytest.raises(TypeError):
        hash(Bag("b"))                          # mutable records are not hashable


def test_a_frozen_record_refuses_assignment():
    p = Point(1)
    with pytest.raises(FrozenInstanceError, match="cannot assign to field 'x'"):
        p.x = 2
    with pytest.raises(FrozenInstanceError):
        del p.label
    assert isinstance(FrozenInstanceError(), AttributeError)
    b = Bag("b")
    b.count = 4
    assert b.count == 4


def test_copy_pickle_replace_and_as_dict():
    p = Point(1, "q", ("t",))
    for clone in (copy.copy(p), copy.deepcopy(p), pickle.loads(pickle.dumps(p))):
        assert clone == p and clone is not p
    assert replace(p, label="r") == Point(1, "r", ("t",))
    assert as_dict(p) == {"x": 1, "label": "q", "tags": ("t",)}
    with pytest.raises(TypeError, match="no field 'nope'"):
        replace(p, nope=1)


def test_a_required_field_after_a_default_is_refused():
    with pytest.raises(TypeError, match="'y' without a default follows one with a default"):
        @record
        class Bad:
            x: int = 0
            y: int
