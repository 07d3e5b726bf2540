"""Random trees for the tests of tree algorithms, numbered as HPCToolkit numbers contexts (pre-order)."""

from __future__ import annotations

import numpy as np


def preorder(parent: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A tree given by parent links (``-1`` for the root at 0, every parent numbered before its children)
    renumbered in pre-order, children in id order: ``(order, parent, depth, end)`` in the new numbering, where
    ``order[new id]`` is the old id and ``end[c]`` is one past the last id of ``c``'s subtree."""
    n = len(parent)
    kids: list[list[int]] = [[] for _ in range(n)]
    for c in range(1, n):
        kids[int(parent[c])].append(c)
    order, stack = [], [0]
    while stack:
        c = stack.pop()
        order.append(c)
        stack.extend(reversed(kids[c]))
    new = np.empty(n, np.int64)
    new[order] = np.arange(n)
    renumbered = np.full(n, -1, np.int64)
    renumbered[new[1:]] = new[np.asarray(parent[1:], np.int64)]
    depth = np.zeros(n, np.int64)
    for c in range(1, n):
        depth[c] = depth[renumbered[c]] + 1
    end = np.arange(n) + 1
    for c in range(n - 1, 0, -1):
        end[renumbered[c]] = max(end[renumbered[c]], end[c])
    return np.array(order, np.int64), renumbered, depth, end
