"""What every view is: a forest of scopes with metric inputs, sortable by any column, with hot paths.

A view (top-down, callers, flat) is a :class:`Forest`: node ``i`` has a
``parent`` (-1 for a root; -2 for a node the view hides) and answers, for any
default.yaml input (metric partial and propagation scope), an array of values
over all nodes (:meth:`Forest.input_values`). Metric columns, derived ones
included, are formulas evaluated over those arrays after aggregation, so a
ratio in the flat view is a ratio of sums, never a sum of ratios.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from hpcsa.formats.db.metricsyaml import Input
from hpcsa.views import tree as T
from hpcsa.views.metrics import Column, evaluate

if TYPE_CHECKING:
    from hpcsa.views.data import ExperimentData

DEFAULT_THRESHOLD = 0.5


class Forest:
    """Base of the three views; subclasses set ``parent`` and implement the inputs and labels."""

    view = "view"

    def __init__(self, exp: ExperimentData, parent: np.ndarray) -> None:
        self.exp = exp
        self.parent = parent
        self._values: dict[tuple[int, str], np.ndarray] = {}
        self._children: dict[tuple[int, str], tuple[np.ndarray, np.ndarray]] = {}

    def __len__(self) -> int:
        return len(self.parent)

    # -- to implement --

    def input_values(self, inp: Input) -> np.ndarray:
        """The values of one default.yaml input (metric partial and scope), one per node of the forest."""
        raise NotImplementedError

    def label(self, node: int) -> str:
        raise NotImplementedError

    def node_of_rows(self, rows: np.ndarray) -> int:
        """The node that shows these rows of the calling context tree (``hpcsa show --start``'s)."""
        raise NotImplementedError

    def info(self, node: int) -> dict[str, Any]:
        """Machine-readable identity of a node (for JSON/CSV and the API)."""
        return {}

    # -- shared --

    @property
    def roots(self) -> np.ndarray:
        return np.flatnonzero(self.parent == -1)

    def column(self, spec: str | Column) -> Column:
        return spec if isinstance(spec, Column) else self.exp.catalog.find(spec)

    def values(self, spec: str | Column, side: str = "inclusive") -> np.ndarray:
        """A metric column over all nodes (NaN where undefined)."""
        col = self.column(spec)
        key = (id(col), side)
        out = self._values.get(key)
        if out is None:
            expr = col.formula(side)
            out = np.full(len(self), np.nan) if expr is None else evaluate(expr, self.input_values, len(self))
            self._values[key] = out
        return out

    def children(self, spec: str | Column, side: str = "inclusive") -> tuple[np.ndarray, np.ndarray]:
        """Children of every node sorted by a column, descending (CSR: ``order[starts[i]:starts[i+1]]``)."""
        col = self.column(spec)
        key = (id(col), side)
        if key not in self._children:
            self._children[key] = T.sorted_children(self.parent, self.values(col, side))
        return self._children[key]

    def hot_path(self, spec: str | Column, start: int | None = None,
                 threshold: float = DEFAULT_THRESHOLD) -> list[int]:
        """The hot path (eq. 3 of "Effectively Presenting Call Path Profiles of Application Performance"):
        from ``start`` follow the child with the largest inclusive value while it holds at least
        ``threshold`` of its parent's; returns the nodes from ``start`` to the hot spot."""
        if not 0 < threshold <= 1:
            raise ValueError(f"the hot-path threshold must be in (0, 1], not {threshold}")
        inc = self.values(spec, "inclusive")
        order, starts = self.children(spec, "inclusive")
        node = int(self.roots[np.argmax(np.nan_to_num(inc[self.roots], nan=-np.inf))]) if start is None else start
        path = [node]
        while starts[node] < starts[node + 1]:
            best = int(order[starts[node]])
            here, there = inc[node], inc[best]
            if not (np.isfinite(here) and np.isfinite(there)) or here <= 0 or there < threshold * here:
                break
            path.append(best)
            node = best
        return path

    def ancestors(self, node: int) -> list[int]:
        """``node`` and its ancestors, root first."""
        out = []
        while node >= 0:
            out.append(node)
            node = int(self.parent[node])
        return out[::-1]
