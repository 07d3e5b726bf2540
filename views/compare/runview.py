"""One run's view as the aligner takes it: per node a path key, a parent, a label on request, and any metric
column's inclusive and exclusive values.

- top-down: the calling context tree's rows (the root "Experiment Aggregate Metrics", the entry points,
  every context), keyed as :func:`hpcsa.views.scaling.path_keys` keys them, valued as ``hpcsa view`` values
  them (inclusive: the ``execution`` scope; exclusive: ``lex_aware``, else ``function``);
- bottom-up and flat: the views' own forests (:mod:`hpcsa.views.bottomup`, :mod:`hpcsa.views.flat`),
  their nodes keyed by content (:mod:`.paths`);
- vendor-neutral: the frames of :class:`.frames.FrameTree`.

A metric column is found in each run by its name; a run without it has no values for it (NaN), which the
report shows as ``n/a``, apart from a context the run lacks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from hpcsa.formats.db.metricsyaml import Input
from hpcsa.views import tree as T
from hpcsa.views.compare.frames import FrameTree, neutral_names
from hpcsa.views.compare.paths import RowContent, callers_own_keys, flat_own_keys, forest_path_keys
from hpcsa.views.metrics import Column, Partial
from hpcsa.views.scaling import path_keys

if TYPE_CHECKING:
    from hpcsa.views.experiment import Experiment
    from hpcsa.views.forest import Forest

VIEWS = ("top-down", "bottom-up", "flat")


def find_column(exp: Experiment, name: str) -> Column | None:
    """The run's metric column of this exact name, or None."""
    return next((c for c in exp.catalog if c.name == name), None)


def additive(col: Column) -> bool:
    """Whether a column is one summed partial, so that costs of contexts may be added (a ratio may not)."""
    return isinstance(col.inclusive, Input) and Partial.of(col.inclusive).additive


def context_label(exp: Experiment, row: int) -> str:
    """A CCT row as the top-down view labels it, before it folds a call site's line into the callee."""
    c = exp.cct
    name = exp.scope_name(row)
    rel, kind = int(c.relation[row]), int(c.kind[row])
    if kind in (T.ROOT, T.ENTRY):
        return name
    if rel == T.INLINED_CALL:
        return f"⇢ {name} [inlined]"
    if rel == T.CALL and kind in (T.FUNCTION, T.INSTRUCTION) and \
            c.kind[max(int(c.parent[row]), 0)] not in (T.ROOT, T.ENTRY):
        return f"→ {name}"
    return name


def context_kind(exp: Experiment, row: int) -> str:
    """``root``, ``entry``, or the context's lexical type and relation (``function/call``, ``line/lexical``)."""
    c = exp.cct
    kind = int(c.kind[row])
    if kind in (T.ROOT, T.ENTRY):
        return T.KIND_NAME[kind]
    return f"{T.KIND_NAME[kind]}/{T.RELATION_NAME[int(c.relation[row])]}"


class RunView:
    """Base of the views of one run (subclasses set ``keys`` and ``parent``)."""

    keys: np.ndarray
    parent: np.ndarray

    def __init__(self, exp: Experiment) -> None:
        self.exp = exp

    def describe(self, nodes: np.ndarray) -> tuple[Sequence[str], Sequence[str]]:
        """(labels, kinds) of some nodes."""
        return [self.label(int(n)) for n in nodes], [self.kind(int(n)) for n in nodes]

    def label(self, node: int) -> str:
        raise NotImplementedError

    def kind(self, node: int) -> str:
        raise NotImplementedError

    def original_name(self, node: int) -> str | None:
        """The run's own name of a node that the view renamed (vendor-neutral), else None."""
        return None

    def values(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(inclusive, exclusive) of the metric column ``name`` per node (NaN where the run lacks it)."""
        raise NotImplementedError

    def _missing(self) -> tuple[np.ndarray, np.ndarray]:
        nan = np.full(len(self.keys), np.nan)
        return nan, nan.copy()


class TopDownView(RunView):
    def __init__(self, exp: Experiment) -> None:
        super().__init__(exp)
        self.keys = path_keys(exp)
        self.parent = exp.cct.parent

    def label(self, node: int) -> str:
        return context_label(self.exp, node)

    def kind(self, node: int) -> str:
        return context_kind(self.exp, node)

    def values(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        col = find_column(self.exp, name)
        if col is None:
            return self._missing()
        return self.exp.inclusive(col), self.exp.exclusive(col)


class ForestView(RunView):
    """The callers or flat view of a run (a :class:`~hpcsa.views.forest.Forest` of its own)."""

    def __init__(self, exp: Experiment, forest: Forest, own: np.ndarray) -> None:
        super().__init__(exp)
        self.forest = forest
        self.parent = forest.parent
        self.keys = forest_path_keys(forest.parent, own)

    def label(self, node: int) -> str:
        return self.forest.label(node)

    def kind(self, node: int) -> str:
        return str(self.forest.info(node).get("kind") or ("procedure" if self.forest.parent[node] == -1
                                                            else "caller"))

    def values(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        col = find_column(self.exp, name)
        if col is None:
            return self._missing()
        return self.forest.values(col, "inclusive"), self.forest.values(col, "exclusive")


class FrameView(RunView):
    def __init__(self, exp: Experiment) -> None:
        super().__init__(exp)
        self.frames = FrameTree(exp)
        self.keys = self.frames.keys
        self.parent = self.frames.parent

    def label(self, node: int) -> str:
        return self.frames.label(node)

    def kind(self, node: int) -> str:
        return self.frames.kind(node)

    def original_name(self, node: int) -> str | None:
        own = self.frames.original_name(node)
        return own if own != self.frames.label(node) else None

    def values(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        col = find_column(self.exp, name)
        if col is None:
            return self._missing()
        return self.frames.values(self.exp.inclusive(col), additive(col))


def run_view(exp: Experiment, view: str, vendor_neutral: bool = False, callers_depth: int = 4) -> RunView:
    """One run's nodes for ``view`` (see the module docstring)."""
    if view not in VIEWS:
        raise ValueError(f"unknown view {view!r}")
    if view == "top-down":
        return FrameView(exp) if vendor_neutral else TopDownView(exp)
    content = RowContent(exp, neutral_names(exp)[0] if vendor_neutral else None)
    if view == "bottom-up":
        callers = exp.bottom_up(callers_depth)
        return ForestView(exp, callers, callers_own_keys(callers, content))
    flat = exp.flat()
    return ForestView(exp, flat, flat_own_keys(flat, content))
