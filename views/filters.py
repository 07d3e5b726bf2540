"""hpcviewer's filters on procedure names, over the calling context tree and the three views.

A filter is a glob (``fnmatch``, case-sensitive) over procedure names with one of hpcviewer's three modes:

- ``self``: hide the matching node; its children are shown under its nearest shown ancestor;
- ``children``: keep the matching node, hide everything below it;
- ``both``: hide the matching node and everything below it.

Only procedure frames match (called or inlined procedures, frames known only by an address), by the name
the views show (``module+0xoffset`` for a procedure without a name). As in hpcviewer (whose filter works on the
calling context tree, and whose callers and flat trees are then built from the filtered one), the hidden
contexts' costs stay in the tree: each hidden context's own cost (its inclusive value minus its children's)
goes to its nearest shown ancestor context, so hiding a node and everything below it gives the ancestor the
node's inclusive value, hiding the node alone gives it what none of its children holds (they stay, under
the ancestor), and hiding the children gives their inclusive values to the node. Inclusive values of shown
contexts do not change, nor do the totals.

- :class:`FilteredExperiment` is that filtered tree: an :class:`~hpcsa.views.experiment.Experiment` whose
  CCT holds the shown contexts only (in pre-order, re-parented) and whose own costs include the hidden
  ones'. Its ``bottom_up()`` and ``flat()`` are the callers and flat views' own code run over it, so the
  hidden procedures' costs appear in the enclosing procedures' rows there (their exclusive values, their
  lines and loops), and the hidden procedures have no rows of their own.
- :class:`FilteredForest` is the top-down view over the filtered tree with the node numbers of the
  unfiltered view (a URL naming a node stays valid when a filter is added): each hidden node's own cost is
  added to its nearest shown ancestor's exclusive value.

Everything is numpy passes over the contexts (one step per tree level); nothing visits a node in Python.
"""

from __future__ import annotations

import fnmatch
import re
import weakref

import numpy as np

from hpcsa.core.dataclass import dataclass
from hpcsa.core.errors import HpcsaError
from hpcsa.formats.db.metricsyaml import Input
from hpcsa.formats.db.profiledb import ProfileValues
from hpcsa.views import tree as T
from hpcsa.views.bottomup import CallersForest
from hpcsa.views.data import ExperimentData
from hpcsa.views.experiment import Experiment
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


_ADDRESS_FRAMES: weakref.WeakKeyDictionary[ExperimentData, tuple[np.ndarray, list[str]]] = (
    weakref.WeakKeyDictionary())


def _address_frames(exp: ExperimentData) -> tuple[np.ndarray, list[str]]:
    """Frames known only by an address (call-relation instructions): their (module, offset) keys, sorted,
    and the names the views show them by (``module+0xoffset``); kept per experiment."""
    base: ExperimentData = getattr(exp, "base", exp)  # a filtered experiment: its base's (a superset)
    got = _ADDRESS_FRAMES.get(base)
    if got is None:
        c = base.cct
        rows = np.flatnonzero((c.kind == T.INSTRUCTION) & (c.relation == T.CALL))
        keys, first = np.unique(T.key_hash(c.module[rows], c.offset[rows]), return_index=True)
        got = _ADDRESS_FRAMES[base] = (keys, [base.scope_name(int(r)) for r in rows[first]])
    return got


def shown_names(exp: ExperimentData) -> list[str]:
    """The names filters and search match, as the views show them (hpcviewer matches the names it shows),
    indexed by :func:`frame_ids`: every procedure of meta.db (a nameless one as ``module+0xoffset``), then
    every frame known only by an address. A procedure whose short name (:mod:`hpcsa.views.names`) differs
    from its full one has both, one per line: a glob matches either."""
    fn = exp.meta.functions
    both = []
    for i in range(len(fn)):
        short, full = exp.function_name(i, False), exp.function_name(i, True)
        both.append(short if short == full else f"{short}\n{full}")
    return both + _address_frames(exp)[1]


def frame_ids(exp: ExperimentData, rows: np.ndarray, frame: np.ndarray) -> np.ndarray:
    """The index in :func:`shown_names` of the procedure each of ``rows`` is a frame of, where ``frame``
    says it is one; -1 elsewhere."""
    c = exp.cct
    kind = c.kind[rows]
    out = np.where(frame & (kind == T.FUNCTION), c.function[rows], -1)
    addr = np.flatnonzero(frame & (kind == T.INSTRUCTION) & (c.relation[rows] == T.CALL))
    if len(addr):
        keys, _ = _address_frames(exp)
        r = rows[addr]
        out[addr] = len(exp.meta.functions) + np.searchsorted(keys, T.key_hash(c.module[r], c.offset[r]))
    return out


def frame_rows(exp: ExperimentData) -> np.ndarray:
    """:func:`frame_ids` of every row of the calling context tree that filters may match: called or inlined
    procedure frames and frames known only by an address."""
    c = exp.cct
    frame = ((c.kind == T.FUNCTION) & (c.relation != T.LEXICAL)) | ((c.kind == T.INSTRUCTION) & (c.relation == T.CALL))
    return frame_ids(exp, np.arange(len(c)), frame)


def frame_functions(forest: Forest) -> np.ndarray:
    """:func:`frame_ids` of each node of a view that names a procedure (search and filters look them up by
    it): procedure frames in the top-down view, every procedure node in the callers view, procedures,
    inlined procedures and call sites in the flat view; -1 elsewhere."""
    forest = getattr(forest, "base", forest)  # a filtered forest: its base's frames
    exp = forest.exp
    if isinstance(forest, TopDownForest):
        return frame_rows(exp)
    if isinstance(forest, CallersForest):
        frame = np.ones(len(forest), bool)
        frame[0] = False  # <program root>
        return frame_ids(exp, forest.rep, frame)
    if isinstance(forest, FlatForest):
        return frame_ids(exp, forest.row, np.isin(forest.kind, (PROCEDURE, INLINE, CALLSITE)))
    return np.full(len(forest), -1, np.int64)


def _named(names: list[str], funcs: np.ndarray, pattern: str) -> np.ndarray:
    """Which of ``funcs`` (function indices, -1 for none) have a name matching the glob."""
    rx = re.compile(fnmatch.translate(pattern))
    hits = np.array([i for i, n in enumerate(names) if n and any(rx.match(x) for x in n.split("\n"))], np.int64)
    return np.isin(funcs, hits) & (funcs >= 0)


def matching(forest: Forest, pattern: str) -> np.ndarray:
    """Nodes whose procedure name matches the glob."""
    return _named(shown_names(forest.exp), frame_functions(forest), pattern)


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


def hide(parent: np.ndarray, funcs: np.ndarray, names: list[str], filters: list[Filter]
         ) -> tuple[np.ndarray, np.ndarray]:
    """(hidden, nearest shown ancestor) of every node of a forest given by parent links (-1 for a root, -2
    for a node already absent) whose procedure frames are ``funcs`` (see :func:`frame_functions`)."""
    exists = parent != -2
    self_hit = np.zeros(len(parent), bool)
    below = np.zeros(len(parent), bool)
    for f in filters:
        m = _named(names, funcs, f.pattern) & exists
        if f.mode in ("self", "both"):
            self_hit |= m
        if f.mode in ("children", "both"):
            below |= m
    real_parent = np.where(parent >= 0, parent, -1)
    hidden = exists & (self_hit | _under(real_parent, below))
    return hidden, _nearest_shown(real_parent, exists & ~hidden)


def moved_costs(own: np.ndarray, hidden: np.ndarray, to: np.ndarray, n: int) -> np.ndarray:
    """What the hidden nodes' own costs add to each of ``n`` receivers (``to``: the receiver of each hidden
    node, -1 for none)."""
    ok = to >= 0
    return np.bincount(to[ok], weights=np.nan_to_num(own[hidden[ok]]), minlength=n)


class FilteredForest(Forest):
    """The top-down view with some nodes hidden by filters, node numbers kept (see the module docstring)."""

    def __init__(self, base: Forest, filters: list[Filter]) -> None:
        if not isinstance(base, TopDownForest):
            raise TypeError("filters over the callers and flat views: FilteredExperiment(...).bottom_up()/flat()")
        self.base = base
        self.filters = filters
        self.view = base.view
        parent = base.parent
        hidden, near = hide(parent, frame_functions(base), shown_names(base.exp), filters)
        shown = (parent != -2) & ~hidden
        new_parent = np.where(shown, np.where(parent == -1, -1, near), -2)
        new_parent[shown & (parent >= 0) & (near < 0)] = -1
        super().__init__(base.exp, new_parent)
        self.hidden = hidden
        # every hidden node's own cost (inclusive minus its children's) goes to its nearest shown ancestor;
        # summed over a hidden subtree that is the subtree's inclusive value, so nothing is lost and nothing
        # counted twice among hidden nodes
        self._real_parent = np.where(parent >= 0, parent, -1)
        self._gift_from = np.flatnonzero(hidden)
        self._gift_to = near[self._gift_from]
        self.call_site = base.call_site

    def input_values(self, inp: Input) -> np.ndarray:
        base = self.base.input_values(inp)
        if not len(self._gift_from) or inp.scope == "execution" or not Partial.of(inp).additive:
            return base
        execution = self.base.input_values(Input(inp.metric, "execution", inp.formula, inp.combine))
        own = execution - T.children_sum(self._real_parent, np.nan_to_num(execution))
        return base + moved_costs(own, self._gift_from, self._gift_to, len(self))

    def label(self, node: int) -> str:
        return self.base.label(node)

    def info(self, node: int) -> dict:
        return self.base.info(node)

    def node_of_rows(self, rows: np.ndarray) -> int:
        return self.base.node_of_rows(rows)


class FilteredExperiment(Experiment):
    """An experiment seen through filters: the calling context tree without the hidden contexts, their own
    costs moved to their nearest shown ancestors (see the module docstring).

    Rows are the shown rows of the base tree in the same pre-order (``rows`` maps them back), so the views'
    code runs over it unchanged: ``bottom_up()`` and ``flat()`` are the callers and flat views of the
    filtered tree; ``top_down()`` is :class:`FilteredForest`, which keeps the base's node numbers. Values
    are the base's summary columns (read once, shared): ``execution`` (inclusive) values of shown rows as
    they are, every other additive scope plus the own costs of the hidden rows that moved there, and
    :meth:`self_column` (what the callers and flat views aggregate) likewise.
    """

    def __init__(self, base: Experiment, filters: list[Filter] | tuple[Filter, ...]) -> None:
        # not Experiment.__init__: the database, names and metric columns (derived ones too) are the base's
        self.base, self.filters = base, tuple(filters)
        self.db, self.meta, self.catalog = base.db, base.meta, base.catalog
        self._stat: dict[int, np.ndarray] = {}
        self._self: dict[Partial, np.ndarray] = {}
        self._summary = None
        c = base.cct
        hidden, near = hide(c.parent, frame_rows(base), shown_names(base), list(filters))
        shown = ~hidden
        self.rows = np.flatnonzero(shown)  # the base row of each row
        index = np.cumsum(shown) - 1
        depth = np.zeros(len(c), np.int64)
        for level in c.levels[1:]:  # a shown row's nearest shown ancestor is on a shallower level
            level = level[shown[level]]
            depth[level] = depth[near[level]] + 1
        parent = np.where(near >= 0, index[np.maximum(near, 0)], -1)
        r = self.rows
        self.cct = T.CCT(c.meta, c.ctx_id[r], parent[r], depth[r], c.kind[r], c.relation[r], c.function[r],
                         c.file[r], c.line[r], c.module[r], c.offset[r], c.entry[r], c.context_row[r])
        self.hidden_rows = np.flatnonzero(hidden)
        self._to = index[near[self.hidden_rows]]  # the root is never hidden: every hidden row has one

    def __repr__(self) -> str:
        return f"<FilteredExperiment {self.path!r}: {len(self.cct)} of {len(self.base.cct)} rows shown, " \
               f"filters {', '.join(map(str, self.filters))}>"

    @property
    def summary(self) -> ProfileValues:
        return self.base.summary

    def stat_column(self, stat_metric_id: int) -> np.ndarray:
        return self.base.stat_column(stat_metric_id)[self.rows]

    def _with_moved(self, values: np.ndarray, own: np.ndarray) -> np.ndarray:
        return values[self.rows] + moved_costs(own, self.hidden_rows, self._to, len(self.rows))

    def input_column(self, inp: Input) -> np.ndarray:
        values = self.base.input_column(inp)
        partial = Partial.of(inp)
        if inp.scope == "execution" or not partial.additive:
            return values[self.rows]
        return self._with_moved(values, self.base.self_column(partial))

    def self_column(self, partial: Partial) -> np.ndarray:
        out = self._self.get(partial)
        if out is None:
            own = self.base.self_column(partial)
            out = self._self[partial] = self._with_moved(own, own)
        return out

    def _inclusive_only(self, scope: str) -> None:
        if scope != "execution":
            raise HpcsaError(self.path, f"per-profile {scope!r} values are not kept under filters (only inclusive)")

    def profile_values(self, index: int, metric: str, scope: str = "execution") -> np.ndarray:
        self._inclusive_only(scope)
        return super().profile_values(index, metric, scope)

    def context_values(self, row: int, metric: str, scope: str = "execution") -> np.ndarray:
        self._inclusive_only(scope)
        return super().context_values(row, metric, scope)

    def metric_matrix(self, metric: str, scope: str = "execution") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        self._inclusive_only(scope)
        return super().metric_matrix(metric, scope)

    def top_down(self) -> FilteredForest:  # type: ignore[override]  # a top-down view, not a TopDownForest
        return FilteredForest(self.base.top_down(), list(self.filters))


def parse_filters(texts: list[str] | tuple[str, ...]) -> tuple[Filter, ...]:
    """Filters from ``[MODE:]GLOB`` texts (empty ones skipped)."""
    return tuple(Filter.parse(t.strip()) for t in texts if t.strip())
