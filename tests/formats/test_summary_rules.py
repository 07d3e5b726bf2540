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
