"""hpcsa.core.dataclass: the standard library's dataclasses, method for method, with fewer compilations."""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import field
from typing import Any

import pytest

from hpcsa.core import dataclass as fast


def both(make) -> tuple[type, type]:
    """The class ``make(decorator)`` builds, once with the standard decorator and once with hpcsa's."""
    return make(dataclasses.dataclass), make(fast.dataclass)


def plain(dc):
    @dc
    class Point:
        x: int
        y: float = 0.0
        tags: list = field(default_factory=list)
        secret: str = field(default="s", repr=False)
        note: str = field(default="n", compare=False)

    return Point


def frozen(dc):
    @dc(frozen=True)
    class Key:
        module: str
        offset: int
        size: int = field(default=0, hash=False)
        label: str = field(default="", compare=False)

    return Key


def one_field(dc):
    @dc(frozen=True)
    class One:
        only: Any

    return One


def no_field(dc):
    @dc(frozen=True)
    class Empty:
        pass

    return Empty


def slotted(dc):
    @dc(frozen=True, slots=True)
    class Slotted:
        a: int
        b: str = "b"

    return Slotted


def mutable_slotted(dc):
    @dc(slots=True)
    class MSlotted:
        a: int

    return MSlotted


def own_methods(dc):
    @dc
    class Own:
        a: int

        def __repr__(self) -> str:
            return "own"

        def __eq__(self, other: object) -> bool:
            return True

        __hash__ = object.__hash__

    return Own


def derived(dc):
    @dc
    class Base:
        a: int

    @dc
    class Derived(Base):
        b: int = 2

    return Derived


INSTANCES = {
    plain: [((1,), {}), ((1, 2.5), {"tags": [1]}), ((1,), {"secret": "other"}), ((1,), {"note": "other"}),
            ((2,), {})],
    frozen: [(("libc", 16), {}), (("libc", 16), {"size": 9}), (("libc", 16), {"label": "x"}), (("libm", 16), {})],
    one_field: [((1,), {}), ((2,), {}), (([1],), {})],
    no_field: [((), {})],
    slotted: [((1,), {}), ((1, "c"), {})],
    mutable_slotted: [((1,), {}), ((2,), {})],
    own_methods: [((1,), {}), ((2,), {})],
    derived: [((1,), {}), ((1, 3), {})],
}


def outcome(fn, *args) -> Any:
    try:
        return ("value", fn(*args))
    except Exception as exc:  # noqa: BLE001 - the same exception type is the expectation
        return ("raises", type(exc))


@pytest.mark.parametrize("make", list(INSTANCES), ids=lambda m: m.__name__)
def test_repr_eq_hash_as_the_standard_decorator(make) -> None:
    std_cls, fast_cls = both(make)
    std = [std_cls(*a, **k) for a, k in INSTANCES[make]]
    ours = [fast_cls(*a, **k) for a, k in INSTANCES[make]]
    for s, o in zip(std, ours, strict=True):
        assert repr(o) == repr(s)
        assert outcome(hash, o)[0] == outcome(hash, s)[0]  # hashable, or not, alike
        assert dataclasses.astuple(o) == dataclasses.astuple(s)
        assert dataclasses.replace(o) == o
        other = object()
        assert (o == other) == (s == other) and o.__eq__(other) is s.__eq__(other)
    for i in range(len(std)):
        for j in range(len(std)):
            assert (ours[i] == ours[j]) == (std[i] == std[j]), (i, j)
            if outcome(hash, std[i])[0] == outcome(hash, std[j])[0] == "value":  # by value, or by identity, alike
                assert (hash(ours[i]) == hash(ours[j])) == (hash(std[i]) == hash(std[j])), (i, j)
    assert [f.name for f in dataclasses.fields(fast_cls)] == [f.name for f in dataclasses.fields(std_cls)]
    assert fast_cls.__match_args__ == std_cls.__match_args__
    assert fast_cls.__doc__ == std_cls.__doc__
    for o in ours:
        assert copy.deepcopy(o) == o  # (pickle needs importable classes; deepcopy takes the same path)


def test_frozen_hash_is_the_field_tuple_of_compared_hashed_fields() -> None:
    _, key = both(frozen)
    assert hash(key("libc", 16, 9, "x")) == hash(("libc", 16))
    with pytest.raises(dataclasses.FrozenInstanceError):
        key("libc", 16).offset = 3  # type: ignore[misc]


def test_a_class_of_another_type_is_never_equal() -> None:
    _, derived_cls = both(derived)
    base_cls = derived_cls.__mro__[1]
    assert base_cls(1) != derived_cls(1, 2) and derived_cls(1, 2) != base_cls(1)


def test_recursive_repr_is_guarded() -> None:
    std_cls, fast_cls = both(one_field)
    s, o = std_cls([]), fast_cls([])
    s.only.append(s)
    o.only.append(o)
    assert repr(o).replace(fast_cls.__qualname__, "X") == repr(s).replace(std_cls.__qualname__, "X")


def test_options_left_to_the_standard_decorator() -> None:
    @fast.dataclass(order=True)
    class Ordered:
        a: int

    assert Ordered(1) < Ordered(2) and sorted([Ordered(2), Ordered(1)]) == [Ordered(1), Ordered(2)]

    @fast.dataclass(eq=False)
    class Identity:
        a: int

    one = Identity(1)
    assert one != Identity(1) and one == one and hash(one) == object.__hash__(one)

    @fast.dataclass(repr=False)
    class NoRepr:
        a: int

    assert repr(NoRepr(1)).startswith("<") and NoRepr(1) == NoRepr(1)


def test_fewer_compilations_than_the_standard_decorator(monkeypatch) -> None:
    """The reason for the module: per class, one compilation (``__init__``) instead of three (repr, eq)."""
    calls = []
    real = dataclasses._create_fn
    monkeypatch.setattr(dataclasses, "_create_fn", lambda *a, **k: calls.append(a[0]) or real(*a, **k))
    plain(dataclasses.dataclass)
    std_names, calls[:] = list(calls), []
    plain(fast.dataclass)
    assert std_names == ["__init__", "__repr__", "__eq__"] and calls == ["__init__"]
