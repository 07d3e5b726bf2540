"""What the browser asks of one database, answered by the views' Python API (nothing re-computed here).

Every answer is a JSON-ready dict. Nodes are the node numbers of the view's forest
(:mod:`hpcsa.views.forest`), so a URL naming a node stays valid for the same database. The forests are
built on first use and kept (per view, flattening and filter set); values are the forests' own columns,
the same arrays ``hpcsa view`` prints (with filters: :class:`~hpcsa.views.filters.FilteredForest` for the
top-down view, the callers and flat views of a :class:`~hpcsa.views.filters.FilteredExperiment`, as
``hpcsa view --filter`` builds them), and the per-profile statistics are :mod:`hpcsa.views.imbalance`'s,
the same numbers ``hpcsa imbalance`` prints.
"""

from __future__ import annotations

import math
import re
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from hpcsa.core.errors import HpcsaError
from hpcsa.views import tree as T
from hpcsa.views.experiment import Experiment
from hpcsa.views.filters import Filter, FilteredExperiment, FilteredForest, frame_functions, shown_names
from hpcsa.views.flat import FILE as FLAT_FILE
from hpcsa.views.flat import MODULE as FLAT_MODULE
from hpcsa.views.forest import Forest
from hpcsa.views.imbalance import Distribution, profile_set
from hpcsa.views.metrics import Column
from hpcsa.views.serve.source import source_of
from hpcsa.views.show import default_columns
from hpcsa.views.threadview import matching_profiles, thread_view

if TYPE_CHECKING:
    from hpcsa.views.bottomup import CallersForest
    from hpcsa.views.flat import FlatForest

VIEWS = ("top-down", "bottom-up", "flat")
#: Callers levels built for the bottom-up view at first, and at most (each level is one numpy pass over the
#: frames; deeper levels are built when a node of the last level is opened). Levels are numbered the same
#: whatever the depth built, so node numbers (and URLs) stay valid.
CALLER_LEVELS, MAX_CALLER_LEVELS = 6, 96
#: Children returned per request; the rest are fetched on demand (offset).
PAGE = 200
FOREST_CACHE = 8


#: The metric menu's groups, in order (:func:`metric_group`).
GROUPS = ("CPU", "GPU operations", "GPU instructions", "GPU stalls", "Blame", "Derived")


def metric_group(name: str, derived: bool = False) -> str:
    """Which group of the metric menu a column is in, by hpcrun's and hpcsa's metric names: GPU instruction
    samples and their stall reasons (``GINS``, ``GINS:STL_*``, ``GSAMP:*``), GPU operations (``GKER``,
    ``GXCOPY``, ``GMEM``, ``GSYNC``, ``GPUOP``, ...), blame's metrics, derived ones, and the CPU's."""
    if derived:
        return "Derived"
    up = name.upper()
    if up.startswith("GINS:STL") or up.startswith("GSAMP:STL"):
        return "GPU stalls"
    if up.startswith(("GINS", "GSAMP")):
        return "GPU instructions"
    if up.startswith(("CPU WORK", "CPU IDLENESS", "CPU OVERHEAD", "CPU WAIT", "GPU IDLE")):
        return "Blame"
    if re.match(r"^G[A-Z]*[:( ]|^G(KER|MEM|MSET|XCOPY|ICOPY|SYNC|PUOP|TIMES|COPY|KINFO)", up) or up.startswith("GPU"):
        return "GPU operations"
    return "CPU"


def num(x: Any) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


class Model:
    """One open experiment and the forests built from it (thread-safe: one lock around building)."""

    def __init__(self, exp: Experiment) -> None:
        self.exp = exp
        self._lock = threading.RLock()
        self._forests: OrderedDict[tuple[str, int, tuple[Filter, ...], str], Forest] = OrderedDict()
        self._filtered: OrderedDict[tuple[tuple[Filter, ...], str], FilteredExperiment] = OrderedDict()
        self._threads: OrderedDict[str, Experiment] = OrderedDict()
        self._fn_lower: list[str] | None = None
        self._profile_sets: dict[tuple[str, str], np.ndarray] = {}
        self._callers_depth = CALLER_LEVELS

    # -- forests -------------------------------------------------------------------------------------------

    def forest(self, view: str, flatten: int = 0, filters: tuple[Filter, ...] = (), threads: str = "") -> Forest:
        if view not in VIEWS:
            raise HpcsaError(None, f"unknown view {view!r}")
        flatten = flatten if view == "flat" else 0
        threads = " ".join(threads.split())
        key = (view, flatten, filters, threads)
        with self._lock:
            got = self._forests.get(key)
            if got is not None:
                self._forests.move_to_end(key)
                return got
            base = self.threads(threads)
            exp = self.filtered(filters, threads) if filters else base
            if view == "top-down":
                got = FilteredForest(self.forest(view, 0, (), threads), list(filters)) if filters else base.top_down()
            elif view == "bottom-up":
                got = exp.bottom_up(self._callers_depth)
            else:
                flat = cast("FlatForest", self.forest("flat", 0, filters, threads)) if flatten else exp.flat()
                got = flat.flattened(flatten) if flatten else flat
            self._forests[key] = got
            while len(self._forests) > FOREST_CACHE:
                self._forests.popitem(last=False)
            return got

    def threads(self, pattern: str = "") -> Experiment:
        """The experiment, or its thread view for an id-tuple pattern (:mod:`hpcsa.views.threadview`)."""
        pattern = " ".join(pattern.split())
        if not pattern:
            return self.exp
        with self._lock:
            got = self._threads.get(pattern)
            if got is None:
                got = self._threads[pattern] = thread_view(self.exp, matching_profiles(self.exp, pattern))
                while len(self._threads) > FOREST_CACHE:
                    self._threads.popitem(last=False)
            self._threads.move_to_end(pattern)
            return got

    def filtered(self, filters: tuple[Filter, ...], threads: str = "") -> FilteredExperiment:
        """The experiment's tree under these filters (kept: the callers and flat views are built over it)."""
        key = (filters, " ".join(threads.split()))
        with self._lock:
            got = self._filtered.get(key)
            if got is None:
                got = self._filtered[key] = FilteredExperiment(self.threads(threads), filters)
                while len(self._filtered) > FOREST_CACHE:
                    self._filtered.popitem(last=False)
            self._filtered.move_to_end(key)
            return got

    def deepened(self, view: str, flatten: int, filters: tuple[Filter, ...], node: int, threads: str = "") -> Forest:
        """The view's forest, with the callers view built deep enough to tell whether ``node``'s children have
        children."""
        forest = self.forest(view, flatten, filters, threads)
        if view != "bottom-up":
            return forest
        while self._callers_depth < MAX_CALLER_LEVELS:
            base = cast("CallersForest", getattr(forest, "base", forest))  # the view is bottom-up
            if 0 <= node < len(base) and base.level[node] < self._callers_depth - 2:
                break
            levels = base.level
            if node < 0 or (node >= len(base) and len(base) and levels.max() < self._callers_depth - 1):
                break  # out of range in a forest that is already complete
            with self._lock:
                self._callers_depth = min(MAX_CALLER_LEVELS, 2 * self._callers_depth)
                for key in [k for k in self._forests if k[0] == "bottom-up"]:
                    del self._forests[key]
            forest = self.forest(view, flatten, filters, threads)
        return forest

    def column(self, spec: str) -> Column:
        try:
            return self.exp.catalog.find(spec)
        except KeyError as exc:
            raise HpcsaError(None, exc.args[0]) from None

    def derive(self, definition: str) -> Column:
        """A derived column ``NAME=FORMULA`` (hpcviewer's syntax, :mod:`hpcsa.views.metrics`): the existing
        one if the same definition was given before, else a new column; a name already used for another
        formula is an error."""
        name, _, formula = definition.partition("=")
        name, formula = name.strip(), formula.strip()
        if not name or not formula:
            raise HpcsaError(None, f"a derived metric is NAME=FORMULA, not {definition!r}")
        with self._lock:
            for col in self.exp.catalog:
                if col.name == name:
                    if col.derived and col.description == f"derived: {formula}":
                        return col
                    raise HpcsaError(None, f"there is already a metric called {name!r}")
            return self.exp.derive(f"{name}={formula}")

    # -- answers -------------------------------------------------------------------------------------------

    def info(self) -> dict[str, Any]:
        exp = self.exp
        cols = []
        for col in exp.catalog:
            cols.append({"index": col.index, "name": col.name, "description": col.description,
                         "visible": col.visible, "percent": col.percent, "derived": col.derived,
                         "group": metric_group(col.name, col.derived),
                         "sides": [s for s in ("inclusive", "exclusive") if col.formula(s) is not None],
                         "total": num(exp.total(col))})
        profiles = exp.profiles
        tdb = exp.db.trace
        measured = [c.index for c in default_columns(exp, True)][:2] or [0]
        derived = [c.index for c in exp.catalog if c.derived and c.index not in measured]  # -d: shown too
        return {"title": exp.title, "path": exp.path, "contexts": exp.db.n_contexts(),
                "profiles": len(profiles), "gpu_profiles": sum(p.gpu for p in profiles),
                "processes": len(exp.processes), "columns": cols, "default_columns": measured + derived,
                "groups": list(GROUPS), "views": list(VIEWS), "trace": tdb is not None and len(tdb) > 0}

    def _values(self, forest: Forest, columns: list[Column]) -> list[tuple[Column, str, np.ndarray]]:
        return [(c, s, forest.values(c, s)) for c in columns for s in ("inclusive", "exclusive")
                if c.formula(s) is not None]

    def rows(self, forest: Forest, nodes: list[int], columns: list[Column]) -> list[dict[str, Any]]:
        """One record per node: label, identity, values of every column side, whether it has children."""
        vals = self._values(forest, columns)
        order, starts = forest.children(columns[0], "inclusive") if columns else (None, None)
        nonzero = self._nonzero(forest, vals)
        out = []
        for n in nodes:
            kids = (order[starts[n]:starts[n + 1]] if order is not None and starts is not None
                    else np.zeros(0, np.int64))
            rec: dict[str, Any] = {"node": n, "label": forest.label(n),
                                   "children": int(nonzero[kids].sum()) if len(kids) else 0,
                                   "values": [num(v[n]) for _, _, v in vals]}
            rec.update(_plain(forest.info(n)))
            out.append(rec)
        return out

    @staticmethod
    def _nonzero(forest: Forest, vals: list[tuple[Column, str, np.ndarray]]) -> np.ndarray:
        nz = np.zeros(len(forest), bool)
        for _, _, v in vals:
            nz |= np.isfinite(v) & (v != 0)
        return nz

    def children(self, forest: Forest, node: int, columns: list[Column], sort: tuple[Column, str],
                 offset: int = 0, limit: int = PAGE) -> dict[str, Any]:
        """The shown children of ``node`` (-1: the roots) sorted by ``sort``, descending; zero rows left
        out, as ``hpcsa view`` leaves them out."""
        vals = self._values(forest, columns)
        nonzero = self._nonzero(forest, vals)
        if node < 0:
            key = np.nan_to_num(forest.values(*sort), nan=-np.inf)
            roots = forest.roots
            kids = roots[np.argsort(-key[roots], kind="stable")]
            kids = kids[nonzero[kids]] if nonzero[kids].any() else kids[:1]
        else:
            self._check_node(forest, node)
            order, starts = forest.children(*sort)
            kids = order[starts[node]:starts[node + 1]]
            kids = kids[nonzero[kids]]
        page = [int(k) for k in kids[offset:offset + limit]]
        return {"node": node, "total": len(kids), "offset": offset, "rows": self.rows(forest, page, columns)}

    def _check_node(self, forest: Forest, node: int) -> None:
        if not 0 <= node < len(forest) or forest.parent[node] == -2:
            raise LookupError(f"no node {node} in this view")

    def path(self, forest: Forest, node: int) -> list[int]:
        self._check_node(forest, node)
        return forest.ancestors(node)

    def hot_path(self, forest: Forest, col: Column, node: int | None, threshold: float) -> list[int]:
        if node is not None:
            self._check_node(forest, node)
        return forest.hot_path(col, node, threshold)

    def search(self, forest: Forest, text: str, col: Column, limit: int = 50) -> list[int]:
        """Nodes whose procedure name contains ``text`` (case-insensitive), heaviest first."""
        text = text.strip().lower()
        if not text:
            return []
        if self._fn_lower is None:
            self._fn_lower = [n.lower() for n in shown_names(self.exp)]
        hits = np.array([i for i, n in enumerate(self._fn_lower) if text in n], np.int64)
        funcs = frame_functions(forest)
        nodes = np.flatnonzero(np.isin(funcs, hits) & (funcs >= 0) & (forest.parent != -2))
        inc = np.nan_to_num(forest.values(col, "inclusive"), nan=-np.inf)
        nodes = nodes[np.lexsort((nodes, -inc[nodes]))]
        return [int(n) for n in nodes[:limit]]

    def context_row(self, forest: Forest, node: int) -> int:
        """The calling-context row behind a node: itself in the top-down view; else the heaviest instance."""
        self._check_node(forest, node)
        if forest.view == "top-down":
            return node
        raise LookupError("per-profile values are per calling context: select a node of the top-down view")

    def distribution(self, forest: Forest, node: int, col: Column, side: str, kind: str = "auto",
                     points: int = 1000, bins: int = 20) -> dict[str, Any]:
        """One context's values over the profiles (:func:`hpcsa.views.imbalance.distribution`)."""
        row = self.context_row(forest, node)
        scope = "execution" if side == "inclusive" else "lex_aware"
        metric = self.exp.measured_metric(col.name)
        key = (metric, kind)
        with self._lock:  # which profiles to compare reads all of cct.db once per metric: kept
            if key not in self._profile_sets:
                self._profile_sets[key] = profile_set(self.exp, metric, kind)
        profiles = self._profile_sets[key]
        chosen = getattr(getattr(forest, "base", forest).exp, "chosen_profiles", None)
        if chosen is not None:  # a thread view: its profiles only
            profiles = np.intersect1d(profiles, chosen)
        # as imbalance.distribution(), with the profile set kept
        dist = Distribution.over(row, metric, scope, profiles, self.exp.context_values(row, metric, scope)[profiles])
        order = np.argsort(dist.values, kind="stable")
        sv, sp = dist.values[order], dist.profiles[order]
        pick = np.unique(np.linspace(0, len(sv) - 1, min(points, len(sv))).round().astype(np.int64)) \
            if len(sv) else np.zeros(0, np.int64)
        counts, edges = dist.histogram(bins)
        labels = self.exp.processes
        ends = [int(i) for i in (list(range(min(3, len(sv)))) + list(range(max(len(sv) - 3, 3), len(sv))))]
        return {"node": node, "ctx_id": int(self.exp.cct.ctx_id[row]), "label": forest.label(node),
                "metric": dist.metric, "scope": scope, "stats": {k: num(v) for k, v in dist.stats.items()},
                "compared": dist.compared, "lacking": dist.lacking,
                "sorted": {"rank": pick.tolist(), "value": [num(v) for v in sv[pick]]},
                "histogram": {"edges": [num(e) for e in edges], "counts": counts.tolist()},
                "extremes": [{"rank": i, "profile": int(sp[i]), "label": labels.label(int(sp[i])),
                              "value": num(sv[i])} for i in ends]}

    def source(self, forest: Forest, node: int) -> dict[str, Any]:
        """Where a node's source is: (file index, path, line) and whether the database holds a copy."""
        self._check_node(forest, node)
        file, line = self._file_line(forest, node)
        out = source_of(self.exp, file, line)
        base = getattr(forest, "base", forest)
        site = getattr(base, "call_site", None)
        if site is not None and site[node] >= 0:  # a callee shown with its call-site line: both places
            row, c = int(site[node]), base.exp.cct
            out["call_site"] = source_of(self.exp, int(c.file[row]), int(c.line[row]))
        return out

    def _file_line(self, forest: Forest, node: int) -> tuple[int, int]:
        base = getattr(forest, "base", forest)
        exp, c = base.exp, base.exp.cct  # a filtered callers or flat view: the filtered tree's rows
        if base.view == "top-down":
            row = node
        elif base.view == "bottom-up":
            row = int(cast("CallersForest", base).rep[node])
        else:
            flat = cast("FlatForest", base)
            row = int(flat.row[node])
            if flat.kind[node] in (FLAT_MODULE, FLAT_FILE):  # no line of their own
                return -1, 0
        if c.kind[row] in (T.LOOP, T.LINE) or (c.kind[row] == T.INSTRUCTION and c.file[row] >= 0):
            return int(c.file[row]), int(c.line[row])
        if c.kind[row] == T.FUNCTION and c.function[row] >= 0:
            f = int(c.function[row])
            fn = exp.meta.functions
            return int(fn.file[f]), int(fn.line[f])
        return -1, 0


def _plain(info: dict[str, Any]) -> dict[str, Any]:
    return {k: (int(v) if isinstance(v, np.integer) else v) for k, v in info.items()}
