"""hpcsa/core/treeorder.py: the tree algorithms over parent arrays, on a hand-drawn forest."""

from __future__ import annotations

import numpy as np
import pytest

from hpcsa.core.treeorder import depth_from_parent, depth_levels, preorder, subtree_sizes

#   entry 1: 0 ─┬─ 2 ── 4        entry 0: 1 ── 3
#               └─ 5
# Rows are given out of order; siblings 2 and 5 keep their input order.
PARENT = np.array([-1, -1, 0, 1, 2, 0])
ENTRY = np.array([1, 0, 1, 0, 1, 1])


def test_depth_levels_and_sizes() -> None:
    depth = depth_from_parent(PARENT)
    assert depth.tolist() == [0, 0, 1, 1, 2, 1]
    assert [lv.tolist() for lv in depth_levels(depth)] == [[0, 1], [2, 3, 5], [4]]
    assert subtree_sizes(PARENT, depth).tolist() == [4, 2, 2, 1, 1, 1]


def test_preorder_groups_roots_by_entry_and_keeps_sibling_order() -> None:
    order, depth, parent = preorder(PARENT, ENTRY)
    # entry 0's tree first (1, 3), then entry 1's: 0, 2, 4, 5.
    assert order.tolist() == [1, 3, 0, 2, 4, 5]
    assert depth.tolist() == [0, 1, 0, 1, 2, 1]
    assert parent.tolist() == [-1, 0, -1, 2, 3, 2]
    # In pre-order every subtree is a contiguous row range.
    size = subtree_sizes(parent, depth)
    for row in range(len(parent)):
        inside = np.arange(row + 1, row + size[row])
        assert all(row in _ancestors(parent, r) for r in inside)


def test_a_cycle_is_refused() -> None:
    with pytest.raises(ValueError, match="cycle"):
        depth_from_parent(np.array([1, 0]))


def _ancestors(parent: np.ndarray, row: int) -> list[int]:
    out = []
    while parent[row] >= 0:
        row = int(parent[row])
        out.append(row)
    return out
