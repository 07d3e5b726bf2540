"""Address queries of :class:`hpcsa.structure.model.Module` that read mapped cache entries in place."""

from __future__ import annotations

import numpy as np
import pytest

from hpcsa.structure.model import RANGE, bisect_right


@pytest.mark.parametrize("n", [0, 1, 2, 3, 8, 1000])
def test_bisect_right_matches_searchsorted_on_a_strided_field(n: int) -> None:
    rng = np.random.default_rng(n)
    table = np.zeros(n, RANGE)
    table["lo"] = np.sort(rng.integers(0, 60, n)).astype(np.uint64)  # duplicates included
    values = rng.integers(0, 70, 400).astype(np.uint64)
    column = table["lo"]
    assert not column.flags.c_contiguous or n < 2  # a field view: what np.searchsorted would copy
    expect = np.searchsorted(np.ascontiguousarray(column), values, side="right")
    assert bisect_right(column, values).tolist() == expect.tolist()


def test_bisect_right_of_no_values_and_extremes() -> None:
    column = np.array([5, 5, 9], np.uint64)
    assert bisect_right(column, np.zeros(0, np.uint64)).tolist() == []
    assert bisect_right(column, np.array([0, 5, 8, 9, 2**64 - 1], np.uint64)).tolist() == [0, 2, 2, 3, 3]
