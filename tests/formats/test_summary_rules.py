"""The summary-statistic rule of the database format (hpcsa/formats/db/summary.py), against hand-computed values."""

from __future__ import annotations

import numpy as np
import pytest

from hpcsa.formats.db import summary

# Two runs: profiles with 3, (none), 5 and 2, then one run where no profile has a value.
VALUES = np.array([3.0, 0.0, 5.0, 2.0, 0.0, 0.0])
STARTS = np.array([0, 4])


@pytest.mark.parametrize(("formula", "combine", "expected"), [
    ("$$", "sum", [10.0, 0.0]),
    ("1", "sum", [3.0, 0.0]),           # the profile without a value is not counted
    ("($$^2)", "sum", [38.0, 0.0]),     # 9 + 25 + 4
    ("$$", "min", [2.0, 0.0]),          # 0 is "unset": it never wins a min
    ("$$", "max", [5.0, 0.0]),
    ("1", "max", [1.0, 0.0]),
])
def test_partials_combined_over_runs(formula: str, combine: str, expected: list[float]) -> None:
    got = summary.combine_runs(VALUES, STARTS, formula, combine)
    assert got.tolist() == expected


def test_negative_values_take_part_in_min_and_max() -> None:
    v = np.array([-4.0, 0.0, 1.0])
    assert summary.combine_runs(v, np.array([0]), "$$", "min").tolist() == [-4.0]
    assert summary.combine_runs(v, np.array([0]), "$$", "max").tolist() == [1.0]


def test_unknown_partial_or_combine_is_refused() -> None:
    with pytest.raises(ValueError, match="partial"):
        summary.combine_runs(VALUES, STARTS, "$$^3", "sum")
    with pytest.raises(ValueError, match="combine"):
        summary.combine_runs(VALUES, STARTS, "$$", "mean")


def _pairwise(a: list[float]) -> float:
    """numpy's pairwise_sum (numpy/_core/src/umath/loops_utils.h.src) written out in plain Python: up to 8
    values one after the other from -0.0, up to 128 in 8 accumulators joined as ((0+1)+(2+3))+((4+5)+(6+7))
    and the rest added one by one, more split at half rounded down to a multiple of 8."""
    n = len(a)
    if n < 8:
        res = -0.0
        for x in a:
            res += x
        return res
    if n <= 128:
        r = list(a[:8])
        i = 8
        while i < n - n % 8:
            for j in range(8):
                r[j] += a[i + j]
            i += 8
        res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
        for x in a[i:]:
            res += x
        return res
    half = n // 2
    half -= half % 8
    return _pairwise(a[:half]) + _pairwise(a[half:])


@pytest.mark.parametrize("n", [1, 2, 7, 8, 9, 127, 128, 129, 136, 255, 256, 257, 1000, 4097])
def test_reduceat_is_the_first_value_plus_the_pairwise_sum_of_the_rest(n: int) -> None:
    """What summary.SegmentSum reproduces: numpy's reduceat of a segment, and its reduce of an array."""
    x = np.random.default_rng(n).standard_normal(n) * 10.0 ** np.random.default_rng(n + 1).integers(-8, 8, n)
    xs = x.tolist()
    assert np.add.reduce(x) == _pairwise(xs)
    assert np.add.reduceat(x, [0])[0] == xs[0] + _pairwise(xs[1:])


@pytest.mark.parametrize("seed", range(40))
def test_segment_sum_from_parts_is_reduceat_bit_for_bit(seed: int) -> None:
    """A segment's sum from its values given in parts of any sizes (empty ones too), holding at most ``most``
    of them at once, is np.add.reduceat's, for awkward lengths around numpy's blocks and splits."""
    rng = np.random.default_rng(seed)
    n = int(rng.choice([1, 2, 8, 9, 128, 129, 130, 257, 1031, 8193, 65537, 200003])) + int(rng.integers(0, 9))
    x = rng.standard_normal(n) * 10.0 ** rng.integers(-12, 12, n)
    most = int(rng.choice([1, 100, 128, 129, 1000, 1 << 12, 1 << 16]))
    acc = summary.SegmentSum(n, most)
    at = 0
    while at < n:
        k = int(rng.integers(0, max(2, n // 5)))
        acc.add(x[at:at + k])
        at += k
        assert acc.held <= max(most, summary.PAIRWISE_BLOCK) + k
    assert acc.total() == np.add.reduceat(x, [0])[0]
    sizes, _ = summary.pairwise_parts(n - 1, most)
    assert sum(sizes) == n - 1 and max(sizes) <= max(most, summary.PAIRWISE_BLOCK)
    with pytest.raises(ValueError):
        acc.add(x[:1])


def test_segment_sum_wants_all_its_values() -> None:
    acc = summary.SegmentSum(3)
    acc.add(np.array([1.0, 2.0]))
    with pytest.raises(ValueError):
        acc.total()
