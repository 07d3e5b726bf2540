"""hpcsa.arrays: numpy idioms shared by the pipeline."""

from __future__ import annotations

import numpy as np
import pytest

from hpcsa.arrays import sorted_unique


@pytest.mark.parametrize("kind", ["quicksort", "stable"])
def test_sorted_unique_is_np_unique(kind: str) -> None:
    rng = np.random.default_rng(7)
    runs = np.concatenate([np.sort(rng.integers(-50, 5_000, 3_000)) for _ in range(4)])  # sorted runs
    for values in (runs, rng.integers(0, 1 << 40, 10_000), np.zeros(0, np.int64), np.array([3]),
                   np.array([2, 2, 2]), rng.random(500).round(1)):
        got = sorted_unique(values, kind)
        assert got.dtype == values.dtype and np.array_equal(got, np.unique(values))
