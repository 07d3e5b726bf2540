"""Forests held as a ``parent`` array (-1 for a root), walked a level at a time with numpy.

The tree algorithms every part of hpcsa needs over such arrays, once: depth
from parent links, the rows of each depth, subtree sizes and the pre-order
placement that meta.db's context tree (and everything read from it) uses.
Each is a constant number of vectorized steps per depth level (pointer
jumping for depths), never a Python loop per node.
"""

from __future__ import annotations

import numpy as np

from hpcsa.core.arrays import run_starts


def depth_levels(depth: np.ndarray) -> list[np.ndarray]:
    """Rows of each depth (in row order), from one stable sort instead of a scan per level."""
    if not len(depth):
        return []
    order = np.argsort(depth, kind="stable")
    bounds = np.searchsorted(depth[order], np.arange(int(depth.max()) + 2))
    return [order[bounds[d]:bounds[d + 1]] for d in range(len(bounds) - 1)]


def subtree_sizes(parent: np.ndarray, depth: np.ndarray, levels: list[np.ndarray] | None = None) -> np.ndarray:
    size = np.ones(len(parent), np.int64)
    for rows in reversed((levels if levels is not None else depth_levels(depth))[1:]):
        np.add.at(size, parent[rows], size[rows])
    return size


def depth_from_parent(parent: np.ndarray) -> np.ndarray:
    """Number of ancestors of every row, by pointer jumping (O(n log depth))."""
    n = len(parent)
    dist = (parent >= 0).astype(np.int64)
    nxt = parent.astype(np.int64).copy()
    for _ in range(64):
        live = nxt >= 0
        if not live.any():
            return dist
        idx = np.flatnonzero(live)
        up = nxt[idx]
        dist[idx] += dist[up]
        nxt[idx] = nxt[up]
    raise ValueError(f"the parent links of {n} rows contain a cycle")


def preorder(parent: np.ndarray, entry: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pre-order of a forest given ``parent`` rows (-1 = top, grouped by ``entry``).

    Returns (order, depth, parent) where ``order[k]`` is the input row placed at
    pre-order position k, and depth/parent are expressed in the new order.
    Siblings keep their input order; a constant number of vectorized steps per
    depth level.
    """
    return preorder_sized(parent, entry)[:3]


def preorder_sized(parent: np.ndarray, entry: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`preorder` and the subtree sizes it works out on the way (in the new order).

    Every row below the top is placed at its parent's position plus one plus the sizes of its earlier
    siblings. Those offsets are worked out for all rows at once (rows sorted by depth, then parent, then row:
    siblings together, in their input order); the placement then goes down the levels, each one gather and
    one scatter of a slice of that order, so that a deep tree (a recursive program's hundreds of frames)
    costs a few numpy calls per level, not a sort and a scan of each."""
    n = len(parent)
    if n == 0:
        z = np.zeros(0, np.int64)
        return z, z, z, z
    depth = depth_from_parent(parent)
    by_level = np.lexsort((parent, depth))  # stable: siblings keep their input order
    bounds = np.searchsorted(depth[by_level], np.arange(int(depth[by_level[-1]]) + 2))
    levels = [by_level[bounds[d]:bounds[d + 1]] for d in range(len(bounds) - 1)]
    size = subtree_sizes(parent, depth, levels)
    pos = np.zeros(n, np.int64)
    top = levels[0]
    top = top[np.argsort(entry[top], kind="stable")]
    pos[top] = np.cumsum(size[top]) - size[top]
    below = by_level[bounds[1]:]
    par = parent[below]
    earlier = np.cumsum(size[below]) - size[below]  # sizes of the rows before each one in this order
    first = np.maximum.accumulate(np.where(run_starts(par), np.arange(len(below)), 0))
    step = earlier - earlier[first] + 1  # one past the parent, after the earlier siblings' subtrees
    start = bounds[1]
    for d in range(1, len(bounds) - 1):
        lo, hi = bounds[d] - start, bounds[d + 1] - start
        pos[below[lo:hi]] = pos[par[lo:hi]] + step[lo:hi]
    order = np.empty(n, np.int64)
    order[pos] = np.arange(n)
    new_parent = np.where(parent[order] >= 0, pos[np.maximum(parent[order], 0)], -1)
    return order, depth[order], new_parent, size[order]
