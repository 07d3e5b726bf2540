"""The summary statistics of a database, as HPCToolkit defines them.

Every summary statistic of meta.db (a record of its Performance Metrics
section; HPCToolkit's format specification, ``doc/FORMATS.md`` in its
sources) is a *partial* combined over the profiles: the formula is
``$$`` (the value), ``1`` (a count: one per profile with a value) or
``($$^2)`` (the square of the value), combined by ``sum``, ``min`` or ``max``.
Profiles without a value take no part: a value of 0 is "unset", so it adds
nothing to a sum or a count and never wins a min or a max; a run without any
value combines to 0 (which the writers leave out, as hpcprof does).

This module is the one implementation of that rule; hpcsa prof's
transposition and the views' database writer both reduce with
:func:`combine_runs`.
"""

from __future__ import annotations

import numpy as np

#: The partial formulas of a summary statistic, in meta.db's spelling.
PARTIALS = ("$$", "1", "($$^2)")


def partial_values(formula: str, values: np.ndarray) -> np.ndarray:
    """Each profile's contribution to the partial ``formula`` (0 where the profile has no value)."""
    present = values != 0
    if formula == "$$":
        return np.where(present, values, 0.0)
    if formula == "1":
        return present.astype(np.float64)
    if formula == "($$^2)":
        x = np.where(present, values, 0.0)
        return x * x
    raise ValueError(f"cannot compute the summary partial {formula!r}")


def combine_runs(values: np.ndarray, starts: np.ndarray, formula: str, combine: str) -> np.ndarray:
    """The partial ``formula`` combined by ``combine`` over each run ``values[starts[i]:starts[i + 1]]``.

    ``values`` are the profiles' values of one (context, metric) per run, 0 where a profile has
    none; the result is 0 for a run where no profile has a value. The order inside a run is the
    order of the additions, so callers give the profiles in one canonical order.
    """
    if combine == "sum":
        return np.add.reduceat(partial_values(formula, values), starts)
    return finish_extrema(extrema_runs(values, starts, formula, combine))


def extrema_runs(values: np.ndarray, starts: np.ndarray, formula: str, combine: str) -> np.ndarray:
    """The partial ``formula`` combined by ``combine`` (min or max) over each run, before
    :func:`finish_extrema`: runs without a value are +inf (min) or -inf (max). Such results of parts of a
    run, combined again by ``np.minimum`` or ``np.maximum``, are the whole run's."""
    if combine not in ("min", "max"):
        raise ValueError(f"cannot combine a summary partial by {combine!r}")
    x = np.where(values != 0, partial_values(formula, values), np.inf if combine == "min" else -np.inf)
    return (np.minimum if combine == "min" else np.maximum).reduceat(x, starts)


def finish_extrema(red: np.ndarray) -> np.ndarray:
    """:func:`extrema_runs`'s results as summary values: 0 where no profile has a value (not finite)."""
    red[~np.isfinite(red)] = 0.0
    return red


#: Values numpy sums at once with 8 accumulators, not split further (``PW_BLOCKSIZE`` of numpy's
#: ``numpy/_core/src/umath/loops_utils.h.src``).
PAIRWISE_BLOCK = 128


def pairwise_parts(n: int, most: int) -> tuple[list[int], object]:
    """The parts of numpy's pairwise summation of ``n`` values that have at most ``most`` values (or at
    most PAIRWISE_BLOCK, which numpy does not split), left to right, and the tree that joins their sums:
    a part's size, or a (left, right) pair.

    numpy sums a contiguous float64 array (``np.add.reduce``) by ``pairwise_sum`` (its source:
    ``numpy/_core/src/umath/loops_utils.h.src``): up to 8 values one after the other; up to 128 in 8
    accumulators; more split at half, rounded down to a multiple of 8, each half summed so and the two added.
    Every part here is one such half (or the whole), so ``np.add.reduce`` of its values is exactly the sum
    numpy computes for it inside the whole."""
    sizes: list[int] = []

    def split(k: int) -> object:
        if k <= max(most, PAIRWISE_BLOCK):
            sizes.append(k)
            return k
        half = k // 2
        half -= half % 8
        return (split(half), split(k - half))

    return sizes, split(n)


class SegmentSum:
    """``np.add.reduceat``'s sum of one segment of ``n`` values, bit for bit, from its values given a part at a
    time, in order (:meth:`add`), holding at most ``most`` of them at once beyond the part being added.

    ``np.add.reduceat`` starts a segment's sum with its first value and adds to it numpy's pairwise sum of
    the others, in one call (numpy's ``PyUFunc_Reduceat``, then the add loop's pairwise reduction:
    ``numpy/_core/src/umath/loops_utils.h.src``). That pairwise sum is cut into its own parts
    (:func:`pairwise_parts`): each is summed by ``np.add.reduce`` once its values are all in, and the parts'
    sums are joined as numpy joins them."""

    def __init__(self, n: int, most: int = 1 << 16) -> None:
        if n < 1:
            raise ValueError("a segment has at least one value")
        self.n = n
        self.first: float | None = None
        self.sizes, self.tree = pairwise_parts(n - 1, most) if n > 1 else ([], 0)
        self.sums: list[np.float64] = []
        self.pending: list[np.ndarray] = []  # values given and not yet summed into a part, in order
        self.held = 0
        self.seen = 0

    def add(self, values: np.ndarray) -> None:
        """The segment's next values (float64)."""
        values = np.asarray(values, np.float64)
        self.seen += len(values)
        if self.seen > self.n:
            raise ValueError(f"more than the segment's {self.n} values")
        if self.first is None and len(values):
            self.first = float(values[0])
            values = values[1:]
        if len(values):
            self.pending.append(values)
            self.held += len(values)
        while len(self.sums) < len(self.sizes) and self.held >= self.sizes[len(self.sums)]:
            k = self.sizes[len(self.sums)]
            if len(self.pending[0]) >= k:
                run, later = self.pending[0], self.pending[1:]
            else:
                run, later = np.concatenate(self.pending), []
            self.sums.append(np.add.reduce(run[:k]))
            self.pending = ([run[k:]] if len(run) > k else []) + later
            self.held -= k

    def total(self) -> np.float64:
        """The segment's sum, once all its values are in."""
        if self.seen != self.n or self.first is None:
            raise ValueError(f"{self.seen} of the segment's {self.n} values were given")
        if self.n == 1:
            return np.float64(self.first)
        sums = iter(self.sums)

        def join(node: object) -> np.float64:
            if isinstance(node, tuple):
                return join(node[0]) + join(node[1])
            return next(sums)

        return np.float64(self.first) + join(self.tree)
