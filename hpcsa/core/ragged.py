"""Rows of different lengths held as one array and their offsets (a CSR-style layout): what a table keeps
per item when items vary in length (identifier tuples, file names), without a Python object per item."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from hpcsa.core.arrays import offsets as _offsets


def _joined(arrays: Sequence[np.ndarray], dtype: np.dtype) -> np.ndarray:
    """The arrays end to end, in ``dtype`` (``np.concatenate`` alone would give structured rows of another
    byte order in the native one)."""
    out = np.empty(sum(len(a) for a in arrays), dtype)
    if len(arrays):
        np.concatenate(arrays, out=out)
    return out


class Ragged:
    """Rows of different lengths, one array: row ``i`` is ``rows[offsets[i]:offsets[i + 1]]`` (a view)."""

    __slots__ = ("offsets", "rows")

    def __init__(self, rows: np.ndarray, offsets: np.ndarray) -> None:
        self.rows = rows
        self.offsets = offsets

    @classmethod
    def from_lengths(cls, rows: np.ndarray, lengths: np.ndarray | Sequence[int]) -> Ragged:
        """Consecutive rows, ``lengths[i]`` of them for item ``i``."""
        return cls(rows, _offsets(np.asarray(lengths, np.int64).reshape(-1)))

    @classmethod
    def of(cls, parts: Sequence[np.ndarray], dtype: np.dtype | type) -> Ragged:
        lengths = np.fromiter((len(p) for p in parts), np.int64, len(parts))
        return cls(_joined(parts, np.dtype(dtype)), _offsets(lengths))

    @classmethod
    def empty(cls, dtype: np.dtype | type, n: int = 0) -> Ragged:
        """``n`` items of no rows of ``dtype``: a column let go, or a table's column before its rows are known.
        The arrays are new (where ``rows[:0]`` of another would be a view that keeps all of it alive)."""
        return cls(np.zeros(0, dtype), np.zeros(n + 1, np.int64))

    @classmethod
    def concat(cls, parts: Sequence[Ragged]) -> Ragged:
        if len(parts) == 1:
            return parts[0]
        sizes = np.array([len(p.rows) for p in parts], np.int64)
        bases = np.cumsum(sizes) - sizes
        offsets = np.concatenate([np.zeros(1, np.int64), *(p.offsets[1:] + b for p, b in zip(parts, bases, strict=True))])
        return cls(_joined([p.rows for p in parts], parts[0].rows.dtype), offsets)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> np.ndarray:
        return self.rows[self.offsets[i]:self.offsets[i + 1]]

    def __iter__(self) -> Iterator[np.ndarray]:
        return (self[i] for i in range(len(self)))

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def take(self, index: np.ndarray) -> Ragged:
        """Rows ``index`` (in that order), gathered in one vectorized pass."""
        index = np.asarray(index, np.int64)
        if not len(self.rows):  # every row empty: zeros, allocated but not written (not resident until written)
            return Ragged(self.rows[:0], np.zeros(len(index) + 1, np.int64))
        width = int(self.offsets[1]) if len(self) and int(self.offsets[0]) == 0 else -1
        if width > 0 and int(self.offsets[-1]) == width * len(self) and not (np.diff(self.offsets) != width).any():
            # rows of one length (a run's identifier tuples, most often): taken as a table, no index per row
            rows = self.rows[:width * len(self)].reshape(len(self), width)[index].reshape(-1)
            return Ragged(rows, np.arange(len(index) + 1, dtype=np.int64) * width)
        starts = self.offsets[index]
        lengths = self.offsets[index + 1] - starts
        offsets = _offsets(lengths)
        # the source of each row, as a running sum of steps: +1 within a row, a jump at each row's first
        source = np.ones(int(offsets[-1]), np.int64)
        full = lengths > 0
        s, n, at = starts[full], lengths[full], offsets[:-1][full]
        if len(at):
            source[at[0]] = s[0]
            source[at[1:]] = s[1:] - (s[:-1] + n[:-1] - 1)
        np.cumsum(source, out=source)
        return Ragged(self.rows[source], offsets)
