"""Ragged's empty columns: what a table's column is once let go (no rows, its items kept or not)."""

from __future__ import annotations

import numpy as np
import pytest

from hpcsa.core.ragged import Ragged
from hpcsa.formats.measurement.hpcrun import ID_ELEMENT


@pytest.mark.parametrize("n", [0, 1, 5])
def test_empty_has_n_items_of_no_rows(n: int) -> None:
    r = Ragged.empty(ID_ELEMENT, n)
    assert len(r) == n and r.rows.dtype == ID_ELEMENT and len(r.rows) == 0
    assert r.offsets.dtype == np.int64 and r.offsets.tolist() == [0] * (n + 1)
    assert [len(row) for row in r] == [0] * n and r.lengths.tolist() == [0] * n
    assert [len(row) for row in r.take(np.arange(n)[::-1])] == [0] * n


def test_empty_is_what_of_gives_for_no_items_and_owns_its_arrays() -> None:
    narrow = np.dtype([("kind", "u1"), ("logical", "<u4")])  # (a narrowed identifier row: any dtype is kept)
    made, given = Ragged.empty(narrow), Ragged.of([], narrow)
    assert made.rows.dtype == given.rows.dtype == narrow
    assert made.offsets.tolist() == given.offsets.tolist() == [0]
    assert made.rows.base is None and made.offsets.base is None  # a view would hold another array alive
    joined = Ragged.concat([Ragged.of([np.zeros(2, narrow)], narrow), Ragged.empty(narrow, 2)])
    assert joined.lengths.tolist() == [2, 0, 0] and joined.rows.dtype == narrow


def test_ragged_take_of_empty_rows_is_empty_rows() -> None:
    empty = Ragged(np.zeros(0, np.int32), np.zeros(6, np.int64))  # five items, no rows (a table's let-go column)
    taken = empty.take(np.array([4, 0, 0, 2]))
    assert len(taken) == 4 and taken.offsets.tolist() == [0] * 5 and len(taken.rows) == 0
    assert taken.rows.dtype == np.int32
