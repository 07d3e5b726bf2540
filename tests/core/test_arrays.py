"""hpcsa.core.arrays: numpy idioms shared by the pipeline."""

from __future__ import annotations

import numpy as np
import pytest

from hpcsa.core.arrays import ramps, rank_in_runs, run_starts, sorted_unique, sorted_unique_rows


@pytest.mark.parametrize("kind", ["quicksort", "stable"])
def test_sorted_unique_is_np_unique(kind: str) -> None:
    rng = np.random.default_rng(7)
    runs = np.concatenate([np.sort(rng.integers(-50, 5_000, 3_000)) for _ in range(4)])  # sorted runs
    for values in (runs, rng.integers(0, 1 << 40, 10_000), np.zeros(0, np.int64), np.array([3]),
                   np.array([2, 2, 2]), rng.random(500).round(1)):
        got = sorted_unique(values, kind)
        assert got.dtype == values.dtype and np.array_equal(got, np.unique(values))


def test_runs_of_equal_rows_and_positions_in_them() -> None:
    a = np.array([1, 1, 1, 2, 2, 5])
    b = np.array([0, 0, 3, 3, 4, 4])
    assert run_starts(a).tolist() == [True, False, False, True, False, True]
    assert run_starts(a, b).tolist() == [True, False, True, True, True, True]
    assert rank_in_runs(run_starts(a)).tolist() == [0, 1, 2, 0, 1, 0]
    assert rank_in_runs(run_starts(a, b)).tolist() == [0, 1, 0, 0, 0, 0]
    empty = np.zeros(0, np.int64)
    assert len(run_starts(empty)) == 0 and len(rank_in_runs(run_starts(empty))) == 0


def test_sorted_unique_rows_is_np_unique_of_the_records() -> None:
    rng = np.random.default_rng(3)
    rec = np.zeros(500, [("module", "<u8"), ("ip", "<u8")])
    rec["module"] = rng.integers(0, 4, 500).astype(np.uint64) << np.uint64(62)  # the high bit set too
    rec["ip"] = rng.integers(0, 60, 500)
    mods, ips = sorted_unique_rows(rec["module"], rec["ip"])
    want = np.unique(rec)
    assert mods.tolist() == want["module"].tolist() and ips.tolist() == want["ip"].tolist()
    none = sorted_unique_rows(rec["module"][:0], rec["ip"][:0])
    assert [len(c) for c in none] == [0, 0]


@pytest.mark.parametrize("seed", range(10))
def test_ramps_are_the_slices_one_after_the_other(seed: int) -> None:
    """ramps(starts, counts) lists range(start, start + count) for each slice, in order (empty ones too)."""
    rng = np.random.default_rng(seed)
    starts, counts = rng.integers(0, 100, 15), rng.integers(0, 6, 15)
    want = [s + i for s, c in zip(starts.tolist(), counts.tolist(), strict=True) for i in range(c)]
    assert ramps(starts, counts).tolist() == want
    assert ramps(np.zeros(0, np.int64), np.zeros(0, np.int64)).tolist() == []
