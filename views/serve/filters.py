"""hpcviewer's filters on procedure names, as a view over any forest.

A filter is a glob (``fnmatch``, case-sensitive) over procedure names with one of hpcviewer's three modes:

- ``self``: hide the matching node; its children are shown under its nearest shown ancestor;
- ``children``: keep the matching node, hide everything below it;
- ``both``: hide the matching node and everything below it.

Only procedure frames match (called or inlined procedures; in the flat view procedures, inlined procedures
and call sites; in the callers view every procedure node). In the top-down view the cost of the hidden
nodes is given to their nearest shown ancestor: each hidden node's own cost (its inclusive value minus its
children's) is added to that ancestor's exclusive value, so hiding a node and everything below it adds the
node's inclusive value, hiding the node alone adds what none of its children holds (they stay, shown under
the ancestor), and hiding the children adds their inclusive values to the node. Inclusive values do not
change. In the flat view the containers
(files, modules) already include what they contain, and the callers view is a forest of callers, so there
hiding a node moves no cost. Everything is one numpy pass over the nodes (pointer jumping).
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass

import numpy as np

from hpcsa.aggregate.metricsyaml import Input
from hpcsa.errors import HpcsaError
from hpcsa.views import tree as T
from hpcsa.views.bottomup import CallersForest
from hpcsa.views.flat import CALLSITE, INLINE, PROCEDURE, FlatForest
from hpcsa.views.forest import Forest
from hpcsa.views.metrics import Partial
from hpcsa.views.topdown import TopDownForest

MODES = ("self", "children", "both")


@dataclass(frozen=True)
class Filter:
    pattern: str
    mode: str = "self"

    @classmethod
    def parse(cls, text: str) -> Filter:
        """``mode:glob`` or just ``glob`` (mode ``self``)."""
        mode, sep, pattern = text.partition(":")
        if not sep or mode not in MODES:
            mode, pattern = "self", text
        if not pattern:
            raise HpcsaError(None, f"filter {text!r} has an empty pattern")
        return cls(pattern, mode)

    def __str__(self) -> str:
        return f"{self.mode}:{self.pattern}"


def frame_functions(forest: Forest) -> np.ndarray:
    """The procedure (meta.db function index) of each node that filters may match; -1 elsewhere."""
    forest = getattr(forest, "base", forest)  # a filtered forest: its base's frames
    c = forest.exp.cct
    if isinstance(forest, TopDownForest):
        frame = (c.kind == T.FUNCTION) & (c.relation != T.LEXICAL)
        return np.where(frame, c.function, -1)
    if isinstance(forest, CallersForest):
        rep = forest.rep
        out = np.where(c.kind[rep] == T.FUNCTION, c.function[rep], -1)
        out[0] = -1
        return out
    if isinstance(forest, FlatForest):
        row = forest.row
        ok = np.isin(forest.kind, (PROCEDURE, INLINE, CALLSITE)) & (c.kind[row] == T.FUNCTION)
        return np.where(ok, c.function[row], -1)
    return np.full(len(forest), -1, np.int64)


def matching(forest: Forest, pattern: str) -> np.ndarray:
    """Nodes whose procedure name matches the glob."""
    names = forest.exp.meta.functions.names
    rx = re.compile(fnmatch.translate(pattern))
    hits = np.array([i for i, n in enumerate(names) if n and rx.match(n)], np.int64)
    funcs = frame_functions(forest)
    return np.isin(funcs, hits) & (funcs >= 0)


def _under(parent: np.ndarray, marked: np.ndarray) -> np.ndarray:
    """Nodes with a marked proper ancestor (one numpy step per level, over the nodes still climbing)."""
    hit = np.zeros(len(parent), bool)
    nodes = np.flatnonzero(parent >= 0)
    cur = parent[nodes]
    while len(nodes):
        found = marked[cur]
        hit[nodes[found]] = True
        keep = ~found & (parent[cur] >= 0)
        nodes, cur = nodes[keep], parent[cur[keep]]
    return hit


def _nearest_shown(parent: np.ndarray, shown: np.ndarray) -> np.ndarray:
    """For every node, its nearest shown proper ancestor (-1 if none)."""
    target = parent.copy()
    nodes = np.flatnonzero((target >= 0) & ~shown[np.maximum(target, 0)])
    while len(nodes):
        target[nodes] = parent[target[nodes]]
        nodes = nodes[(target[nodes] >= 0) & ~shown[np.maximum(target[nodes], 0)]]
    return target


class FilteredForest(Forest):
    """A forest with some nodes hidden by filters (see the module docstring)."""

    def __init__(self, base: Forest, filters: list[Filter]) -> None:
        self.base = base
        self.filters = filters
        self.view = base.view
        parent = base.parent
        exists = parent != -2
        self_hit = np.zeros(len(parent), bool)
        below = np.zeros(len(parent), bool)
        for f in filters:
            m = matching(base, f.pattern) & exists
            if f.mode in ("self", "both"):
                self_hit |= m
            if f.mode in ("children", "both"):
                below |= m
        real_parent = np.where(parent >= 0, parent, -1)
        hidden = self_hit | _under(real_parent, below)
        shown = exists & ~hidden
        near = _nearest_shown(real_parent, shown)
        new_parent = np.where(shown, np.where(parent == -1, -1, near), -2)
        new_parent[shown & (parent >= 0) & (near < 0)] = -1
        super().__init__(base.exp, new_parent)
        self.hidden = exists & hidden
        # top-down: every hidden node's own cost (inclusive minus its children's) goes to its nearest shown
        # ancestor; summed over a hidden subtree that is the subtree's inclusive value, so nothing is lost
        # and nothing counted twice among hidden nodes
        self._real_parent = real_parent
        self._gift_from = np.flatnonzero(self.hidden & (near >= 0)) if isinstance(base, TopDownForest) else None
        if self._gift_from is not None:
            self._gift_to = near[self._gift_from]
        self.call_site = getattr(base, "call_site", None)

    def input_values(self, inp: Input) -> np.ndarray:
        base = self.base.input_values(inp)
        if self._gift_from is None or not len(self._gift_from) or inp.scope == "execution" \
                or not Partial.of(inp).additive:
            return base
        execution = self.base.input_values(Input(inp.metric, "execution", inp.formula, inp.combine))
        own = np.nan_to_num(execution - T.children_sum(self._real_parent, np.nan_to_num(execution)))
        gift = np.bincount(self._gift_to, weights=own[self._gift_from], minlength=len(self))
        return base + gift

    def label(self, node: int) -> str:
        return self.base.label(node)

    def info(self, node: int) -> dict:
        return self.base.info(node)

    def node_of_rows(self, rows: np.ndarray) -> int:
        return self.base.node_of_rows(rows)  # type: ignore[attr-defined]
