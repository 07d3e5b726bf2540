"""N runs' trees as one: the union of their nodes by path key, built one run at a time.

:class:`Alignment` keeps the path keys seen so far sorted, so a run is placed with one
``searchsorted`` over its nodes; only the nodes new to the union are visited in Python (for their labels),
as the aggregation does for contexts new to its unified tree. Nothing of an earlier run is kept but the
union itself, so runs can be read one after another with the memory of one.

Two nodes of one run with the same path (hpcprof writes such siblings: one procedure called from two
instructions of one source line) are one node of the union; the caller adds their values.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from hpcsa.core.treeorder import depth_from_parent
from hpcsa.views.compare.paths import HIDDEN


class Alignment:
    """The aligned tree so far: per node its path key, parent node (-1 at a root), depth, label, kind and the
    run that first had it."""

    def __init__(self) -> None:
        self._sorted = np.zeros(0, np.uint64)
        self._node_of_sorted = np.zeros(0, np.int64)
        self._keys: list[np.ndarray] = []
        self._parents: list[np.ndarray] = []
        self._depths: list[np.ndarray] = []
        self._first_run: list[np.ndarray] = []
        self.labels: list[str] = []
        self.kinds: list[str] = []
        self.runs = 0

    def __len__(self) -> int:
        return len(self.labels)

    def nodes_of(self, keys: np.ndarray) -> np.ndarray:
        """The node of each key (-1 where the union has none)."""
        if not len(self._sorted):
            return np.full(len(keys), -1, np.int64)
        at = np.minimum(np.searchsorted(self._sorted, keys), len(self._sorted) - 1)
        return np.where(self._sorted[at] == keys, self._node_of_sorted[at], -1)

    def add(self, keys: np.ndarray, parent: np.ndarray,
            describe: Callable[[np.ndarray], tuple[Sequence[str], Sequence[str]]]) -> np.ndarray:
        """Place one run's view: ``keys`` and ``parent`` per node of the view (parent -1 at a root, -2 for a
        hidden node); ``describe(nodes)`` gives the (labels, kinds) of those of its nodes that are new to the
        union. Returns the aligned node of each of the view's nodes (-1 for hidden ones)."""
        keys = np.asarray(keys, np.uint64)
        shown = parent != HIDDEN
        node = self.nodes_of(keys)
        new = shown & (node < 0)
        if new.any():
            idx = np.flatnonzero(new)
            _, first = np.unique(keys[idx], return_index=True)
            idx = idx[first]
            depth = depth_from_parent(np.where(parent >= 0, parent, -1))[idx]
            idx = idx[np.argsort(depth, kind="stable")]  # parents before children
            n0 = len(self)
            ids = n0 + np.arange(len(idx))
            merged = np.concatenate([self._sorted, keys[idx]])
            order = np.argsort(merged, kind="stable")
            self._sorted = merged[order]
            self._node_of_sorted = np.concatenate([self._node_of_sorted, ids])[order]
            node = self.nodes_of(keys)
            up = parent[idx]
            self._keys.append(keys[idx])
            self._parents.append(np.where(up >= 0, node[np.maximum(up, 0)], -1))
            self._depths.append(np.sort(depth))
            self._first_run.append(np.full(len(idx), self.runs, np.int64))
            labels, kinds = describe(idx)
            self.labels.extend(labels)
            self.kinds.extend(kinds)
        self.runs += 1
        return np.where(shown, node, -1)

    # -- the result ---------------------------------------------------------------------------------------

    def _cat(self, parts: list[np.ndarray], dtype: type) -> np.ndarray:
        return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype)

    @property
    def parent(self) -> np.ndarray:
        return self._cat(self._parents, np.int64)

    @property
    def depth(self) -> np.ndarray:
        return self._cat(self._depths, np.int64)

    @property
    def keys(self) -> np.ndarray:
        return self._cat(self._keys, np.uint64)

    @property
    def first_run(self) -> np.ndarray:
        return self._cat(self._first_run, np.int64)
