"""Small numpy idioms used across the pipeline."""

from __future__ import annotations

from typing import Literal

import numpy as np


def sorted_unique(values: np.ndarray, kind: Literal["quicksort", "stable"] = "quicksort") -> np.ndarray:
    """``np.unique`` of a 1-D array by one sort and a neighbour comparison.

    numpy 2's ``np.unique`` hashes integer arrays before sorting the result: 10-60 times slower than this on
    the key arrays of this project. ``kind="stable"`` (timsort, which finds sorted runs) suits arrays made of
    a few long sorted runs; the default suits arrays in no particular order.
    """
    values = np.sort(values, kind=kind)
    return values[run_starts(values)]


def sorted_unique_rows(*cols: np.ndarray) -> tuple[np.ndarray, ...]:
    """The distinct rows of these columns (first column most significant), sorted: one ``np.lexsort`` and a
    neighbour comparison (``np.unique`` of the columns as records of a structured array is about 30 times
    slower)."""
    order = np.lexsort(cols[::-1])
    cols = tuple(c[order] for c in cols)
    first = run_starts(*cols) if len(order) else np.zeros(0, bool)
    return tuple(c[first] for c in cols)


def run_starts(*cols: np.ndarray) -> np.ndarray:
    """For rows sorted by these columns: True where a run of equal rows (all columns equal) begins."""
    first = np.zeros(len(cols[0]), bool)
    first[:1] = True
    for c in cols:
        first[1:] |= c[1:] != c[:-1]
    return first


def rank_in_runs(first: np.ndarray) -> np.ndarray:
    """The position of each item in its run (a run begins where ``first`` is True)."""
    at = np.arange(len(first))
    return at - np.maximum.accumulate(np.where(first, at, 0)) if len(first) else at


def offsets(lengths: np.ndarray | list[int]) -> np.ndarray:
    """Where each of consecutive runs of these lengths starts, and where the last ends (int64, one longer)."""
    out = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=out[1:])
    return out


def narrow_counts(values: np.ndarray) -> np.ndarray:
    """Non-negative integers (sizes, offsets, counts) as uint32 where every one fits, else as int64: a table's
    columns kept per row in half the bytes. Two uint32 add and multiply in uint32: sums and products of
    such columns are taken in int64 (one operand ``astype(np.int64)``)."""
    values = np.asarray(values)
    if len(values) and (int(values.min()) < 0 or int(values.max()) > 0xFFFFFFFF):
        return values.astype(np.int64, copy=False)
    return values.astype(np.uint32)


def ramps(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``starts[i], starts[i] + 1, ...``, ``counts[i]`` of them, for every ``i``, one run after the other: the
    positions of many slices at once, for one fancy index instead of a Python loop over the slices."""
    counts = np.asarray(counts, np.int64)
    return np.repeat(np.asarray(starts, np.int64) - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()))


def concat_records(arrays: list[np.ndarray], dtype: np.dtype) -> np.ndarray:
    """``np.concatenate`` of many 1-D structured arrays of one ``dtype``, through their bytes: numpy checks
    the fields of every structured array it joins (some 20 µs each, most of the reading of a thousand small
    profiles). The result is read-only."""
    return np.frombuffer(b"".join([a.tobytes() for a in arrays]), dtype)


def as_void(records: np.ndarray) -> np.ndarray:
    """The same memory with each record an opaque run of its bytes (``V<itemsize>``): fancy indexing a
    structured array copies it field by field (about 17 ms per million 10-byte records), its bytes as one
    block each about four times faster. For records whose fields cover every byte (a gap's bytes, which a
    copy of the fields leaves alone, would be copied too)."""
    return records.view(np.dtype((np.void, records.dtype.itemsize)))


def gapless(dtype: np.dtype) -> bool:
    """Whether the fields of a ``dtype`` cover every one of its bytes (see :func:`as_void`); a plain dtype's do."""
    if dtype.fields is None:
        return True
    end = 0
    for at, size in sorted((f[1], f[0].itemsize) for f in dtype.fields.values()):
        if at != end:
            return False
        end += size
    return end == dtype.itemsize


def take_records(records: np.ndarray, index: np.ndarray) -> np.ndarray:
    """``records[index]`` for a 1-D structured array, copied a record at a time (:func:`as_void`)."""
    return as_void(records)[index].view(records.dtype)


def byte_strided(buf: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """A view of the uint8 ``buf`` in which element ``i`` is the ``dtype`` record starting at byte ``i``."""
    n = len(buf) - dtype.itemsize + 1
    return np.ndarray((max(n, 0),), dtype, buffer=buf, strides=(1,))


def records_at(buf: np.ndarray, positions: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Records of ``dtype`` at arbitrary byte ``positions`` of the uint8 ``buf``: one fancy index over an
    overlapping byte-strided view, whatever the alignment, each record's bytes copied at once
    (:func:`take_records`). Callers bounds-check the positions."""
    if not len(positions):
        return np.zeros(0, dtype)
    return take_records(byte_strided(buf, dtype), np.asarray(positions, np.int64))
