"""``dataclass`` as the standard library's, with ``__repr__``, ``__eq__`` and ``__hash__`` built without ``exec``.

Python 3.11's :func:`dataclasses.dataclass` writes each method it adds as source text and compiles it with
``exec``: about 0.1 ms a method, three or four per class. A ``hpcsa prof`` imports 66 dataclasses before it
reads a file, and their 225 compilations were 26 ms of a command that takes 0.4 s on a warm cache (Python 3.13
compiles a class's methods in one ``exec``; 3.11 is supported). Here the standard decorator still makes
``__init__`` and the frozen classes' ``__setattr__`` (hot, or delicate: its own code), and the three others
are closures over an :func:`operator.attrgetter` of the class's fields, made with no compilation. They behave
as the generated ones do (the Python documentation of :mod:`dataclasses`): the same ``repr`` text (with the
same guard against recursion), equality of the field tuples between instances of the very same class
(``NotImplemented`` otherwise), a field-tuple hash for frozen classes with equality, ``__hash__ = None`` for
mutable ones, and a method the class defines itself is kept. ``order`` and ``unsafe_hash`` are left to the
standard decorator.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from operator import attrgetter
from reprlib import recursive_repr
from typing import Any, TypeVar, cast, dataclass_transform

T = TypeVar("T", bound=type)


def _getter(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """The tuple of the named attributes (an attrgetter of one name returns the value, not a 1-tuple)."""
    if len(names) >= 2:
        return attrgetter(*names)
    if len(names) == 1:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return lambda obj: ()


def _repr_of(names: tuple[str, ...]) -> Callable[[Any], str]:
    values = _getter(names)

    @recursive_repr()
    def __repr__(self: Any) -> str:
        pairs = ", ".join(f"{n}={v!r}" for n, v in zip(names, values(self), strict=True))
        return f"{self.__class__.__qualname__}({pairs})"

    return __repr__


def _eq_of(names: tuple[str, ...]) -> Callable[[Any, Any], Any]:
    values = _getter(names)

    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is self.__class__:
            return values(self) == values(other)
        return NotImplemented

    return __eq__


def _hash_of(names: tuple[str, ...]) -> Callable[[Any], int]:
    values = _getter(names)

    def __hash__(self: Any) -> int:
        return hash(values(self))

    return __hash__


def _put(cls: type, name: str, method: Callable[..., Any]) -> None:
    """Add ``method`` to ``cls`` under ``name``, named as a method defined in its body would be."""
    method.__qualname__ = f"{cls.__qualname__}.{name}"
    setattr(cls, name, method)


@dataclass_transform()
def dataclass(cls: T | None = None, /, *, repr: bool = True, eq: bool = True, order: bool = False,
              unsafe_hash: bool = False, frozen: bool = False, **options: Any) -> Any:
    """:func:`dataclasses.dataclass`, the same class, made faster (see the module docstring)."""
    if order or unsafe_hash:  # the standard decorator's own methods, as they are
        std = dataclasses.dataclass(repr=repr, eq=eq, order=order, unsafe_hash=unsafe_hash, frozen=frozen,
                                    **options)
        return std if cls is None else std(cls)

    def wrap(cls: T) -> T:
        own = cls.__dict__
        class_hash = own.get("__hash__", dataclasses.MISSING)
        explicit_hash = not (class_hash is dataclasses.MISSING or (class_hash is None and "__eq__" in own))
        want_repr, want_eq = repr and "__repr__" not in own, eq and "__eq__" not in own
        made = cast(T, dataclasses.dataclass(cls, repr=False, eq=False, frozen=frozen, **options))
        fields = dataclasses.fields(made)
        if want_repr:
            _put(made, "__repr__", _repr_of(tuple(f.name for f in fields if f.repr)))
        if want_eq:
            _put(made, "__eq__", _eq_of(tuple(f.name for f in fields if f.compare)))
        if eq and not explicit_hash:  # the standard decorator's table for eq without unsafe_hash
            if frozen:
                _put(made, "__hash__", _hash_of(tuple(f.name for f in fields
                                                      if (f.compare if f.hash is None else f.hash))))
            else:
                made.__hash__ = None  # type: ignore[assignment]  # None: unhashable; typeshed: a method
        return made

    return wrap if cls is None else wrap(cls)


__all__ = ["dataclass"]
