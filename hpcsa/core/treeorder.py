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
    """:func:`preorder` and the subtree sizes it works out on the way (in the new order)."""
    n = len(parent)
    if n == 0:
        z = np.zeros(0, np.int64)
        return z, z, z, z
    depth = depth_from_parent(parent)
    levels = depth_levels(depth)
    size = subtree_sizes(parent, depth, levels)
    pos = np.zeros(n, np.int64)
    top = levels[0]
    top = top[np.argsort(entry[top], kind="stable")]
    pos[top] = np.cumsum(size[top]) - size[top]
    for rows in levels[1:]:
        rows = rows[np.argsort(parent[rows], kind="stable")]
        par = parent[rows]
        cs = np.cumsum(size[rows]) - size[rows]
        base = np.maximum.accumulate(np.where(run_starts(par), np.arange(len(rows)), 0))
        pos[rows] = pos[par] + 1 + (cs - cs[base])
    order = np.empty(n, np.int64)
    order[pos] = np.arange(n)
    new_parent = np.where(parent[order] >= 0, pos[np.maximum(parent[order], 0)], -1)
    return order, depth[order], new_parent, size[order]
