"""Columns mapped from a parsed-structure cache entry, read in place: strings decoded one at a time and sorted
columns bisected without copying them, so a run touches only the pages it needs."""

from __future__ import annotations

import operator
from collections.abc import Iterator, Sequence

import numpy as np


class PackedStrings(Sequence[str]):
    """A module's strings as one UTF-8 buffer and the end of each (e.g. both mapped from a cache entry),
    decoded one at a time when asked for: a run that reads a few hundred names of a large library's
    structure does not hold its tens of thousands of strings as Python objects. Compares equal to a list
    of the same strings; pickles as a plain list."""

    def __init__(self, text: np.ndarray, ends: np.ndarray) -> None:
        self._text = text
        self._ends = ends
        self._decoded: dict[int, str] = {}

    def __len__(self) -> int:
        return len(self._ends)

    def _one(self, index: int) -> str:
        got = self._decoded.get(index)
        if got is None:
            start = int(self._ends[index - 1]) + 1 if index > 0 else 0
            got = self._text[start:int(self._ends[index])].tobytes().decode("utf-8", "surrogatepass")
            self._decoded[index] = got
        return got

    def many(self, indexes: list[int]) -> list[str]:
        """The strings at these (non-negative, in range) indexes: those not decoded yet located in one
        vectorized step, each then decoded from a view of the buffer (no copy of it)."""
        decoded = self._decoded
        todo = sorted({i for i in indexes if i not in decoded})
        if todo:
            at = np.asarray(todo, np.int64)
            ends = self._ends[at].astype(np.int64)
            starts = np.where(at > 0, self._ends[np.maximum(at - 1, 0)].astype(np.int64) + 1, 0)
            view = self._text.data  # a memoryview of the buffer
            for i, lo, hi in zip(todo, starts.tolist(), ends.tolist(), strict=True):
                decoded[i] = str(view[lo:hi], "utf-8", "surrogatepass")
        return [decoded[i] for i in indexes]

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self._one(i) for i in range(*index.indices(len(self)))]
        i = operator.index(index)
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError("string index out of range")
        return self._one(i)

    def __iter__(self) -> Iterator[str]:
        return (self._one(i) for i in range(len(self)))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, tuple, PackedStrings)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # None: unhashable (the data model); typeshed: a method

    def __reduce__(self) -> tuple[type, tuple[list[str]]]:
        return list, (list(self),)


def bisect_right(column: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``np.searchsorted(column, values, side="right")`` for a sorted, possibly strided column (a field of a
    structured array, perhaps mapped from a cache entry), bisected in place: ``np.searchsorted`` would first
    copy the whole column, reading every page of it, where this reads about log2(n) elements per value."""
    lo = np.zeros(len(values), np.int64)
    hi = np.full(len(values), len(column), np.int64)
    if len(column) == 0:
        return lo
    last = len(column) - 1
    active = lo < hi
    while active.any():
        mid = (lo + hi) >> 1
        right = active & (column[np.minimum(mid, last)] <= values)
        lo = np.where(right, mid + 1, lo)
        hi = np.where(active & ~right, mid, hi)
        active = lo < hi
    return lo
