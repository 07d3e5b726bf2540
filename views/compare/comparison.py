"""``hpcsa.compare([...])``: N databases on one aligned tree, with the run catalog and statistics across runs.

The runs are read one at a time (the baseline first, so the tree's labels are the baseline's): each is opened,
its view's nodes placed on the union tree (:class:`.align.Alignment`), its metric columns' values added up per
aligned node, its catalog record taken, and the database closed. What stays is the union tree and, per
metric and side (inclusive, exclusive), a contexts x runs matrix -- memory of the largest database plus the
result, whatever the number of runs.

A context a run does not have is NaN in that run's column and ``present`` is False there: it is shown as
missing, never as 0. A context the run has with no value for the metric is 0 (the database's sparse
storage); a metric the run has not is NaN with ``present`` True (``n/a``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from hpcsa.core.dataclass import dataclass
from hpcsa.core.errors import HpcsaError
from hpcsa.formats.db.metadb import read_metadb
from hpcsa.views.compare import vendors as V
from hpcsa.views.compare.align import Alignment
from hpcsa.views.compare.catalog import Group, RunRecord, describe, group_runs, run_labels
from hpcsa.views.compare.runview import VIEWS, FrameView, additive, find_column, run_view
from hpcsa.views.compare.stats import Statistics, across, difference, ratio
from hpcsa.views.experiment import open_experiment
from hpcsa.views.show import default_columns

if TYPE_CHECKING:
    import pandas as pd

    from hpcsa.views.experiment import Experiment

SIDES = ("inclusive", "exclusive")


@dataclass
class MetricInfo:
    """A metric column compared across runs: its name, what it measures (GPU metrics), whether it adds."""

    name: str
    meaning: str | None
    additive: bool


@dataclass
class Comparison:
    """The aligned tree of N runs and their values (see the module docstring).

    ``parent``, ``depth``, ``labels``, ``kinds`` describe the aligned nodes, ``keys`` are their path keys
    (:mod:`.paths`: the same for the same context in any run); ``values[(metric, side)]`` is a
    contexts x runs matrix (NaN: no value); ``present`` says which run has which context; ``runs`` is the
    catalog, in the order the databases were given; ``aliases`` (vendor-neutral) names each renamed node as
    each run does.
    """

    view: str
    runs: list[RunRecord]
    baseline: int
    parent: np.ndarray
    depth: np.ndarray
    labels: list[str]
    kinds: list[str]
    metrics: list[MetricInfo]
    values: dict[tuple[str, str], np.ndarray]
    present: np.ndarray
    keys: np.ndarray | None = None
    vendor_neutral: bool = False
    vendors: list[str | None] | None = None
    aliases: dict[int, dict[str, str]] | None = None
    group_by: str | None = None
    groups: list[Group] | None = None
    _paths: list[str] | None = None
    _memo: dict[tuple[Any, ...], Any] | None = None

    def _cached(self, key: tuple[Any, ...], make: Callable[[], Any]) -> Any:
        if self._memo is None:
            self._memo = {}
        if key not in self._memo:
            self._memo[key] = make()
        return self._memo[key]

    def __len__(self) -> int:
        return len(self.labels)

    def __repr__(self) -> str:
        return (f"<Comparison of {len(self.runs)} runs ({self.view}): {len(self)} aligned contexts, "
                f"metrics {[m.name for m in self.metrics]}, baseline {self.runs[self.baseline].label!r}>")

    # -- values --------------------------------------------------------------------------------------------

    def metric(self, spec: str | None = None) -> str:
        """A compared metric by name or unique prefix (None: the first)."""
        names = [m.name for m in self.metrics]
        if spec is None:
            return names[0]
        if spec in names:
            return spec
        hits = [n for n in names if n.lower().startswith(spec.lower())]
        if len(hits) == 1:
            return hits[0]
        raise HpcsaError(None, f"metric {spec!r} is not compared here ({', '.join(names)})")

    def matrix(self, metric: str | None = None, side: str = "inclusive") -> np.ndarray:
        """The contexts x runs values of one metric and side."""
        if side not in SIDES:
            raise HpcsaError(None, f"side {side!r}: inclusive or exclusive")
        return self.values[(self.metric(metric), side)]

    def stats(self, metric: str | None = None, side: str = "inclusive", runs: Sequence[int] | None = None
              ) -> Statistics:
        """Statistics across the runs (or some of them) per context."""
        m = self.matrix(metric, side)
        if runs is None:
            out: Statistics = self._cached(("stats", self.metric(metric), side), lambda: across(m))
            return out
        return across(m[:, list(runs)])

    def baseline_values(self, metric: str | None = None, side: str = "inclusive") -> np.ndarray:
        return self.matrix(metric, side)[:, self.baseline]

    def difference(self, metric: str | None = None, side: str = "inclusive") -> np.ndarray:
        """Each run's value less the baseline's (contexts x runs)."""
        return difference(self.matrix(metric, side), self.baseline_values(metric, side))

    def ratio(self, metric: str | None = None, side: str = "inclusive") -> np.ndarray:
        """Each run's value over the baseline's (contexts x runs)."""
        return ratio(self.matrix(metric, side), self.baseline_values(metric, side))

    def others(self) -> list[int]:
        """The runs other than the baseline."""
        return [i for i in range(len(self.runs)) if i != self.baseline]

    def change(self, metric: str | None = None, side: str = "inclusive") -> tuple[np.ndarray, np.ndarray]:
        """(difference, ratio) of the other runs' mean against the baseline, per context: the change that
        ``--sort change`` orders by (with two runs, the second run's change)."""
        def make() -> tuple[np.ndarray, np.ndarray]:
            others = self.others()
            base = self.baseline_values(metric, side)
            if not others:
                return np.where(np.isnan(base), np.nan, 0.0), np.where(np.isnan(base) | (base == 0), np.nan, 1.0)
            mean = self.stats(metric, side, others).mean
            return difference(mean, base), ratio(mean, base)

        out: tuple[np.ndarray, np.ndarray] = self._cached(("change", self.metric(metric), side), make)
        return out

    # -- names ---------------------------------------------------------------------------------------------

    @property
    def paths(self) -> list[str]:
        """Each aligned node's path from the top (`` / ``-joined labels), one string per node and unique: the
        same in every run, what the tidy table's ``path`` column holds."""
        if self._paths is None:
            out: list[str] = []
            seen: dict[str, int] = {}
            kinds, labels, parent = self.kinds, self.labels, self.parent.tolist()
            for i in range(len(labels)):  # parents come before children
                p = parent[i]
                text = labels[i] if p < 0 or kinds[p] == "root" else f"{out[p]} / {labels[i]}"
                seen[text] = seen.get(text, 0) + 1
                out.append(text if seen[text] == 1 else f"{text} [#{seen[text]}]")
            self._paths = out
        return self._paths

    def children(self, node: int) -> np.ndarray:
        return np.flatnonzero(self.parent == node)

    # -- exports -------------------------------------------------------------------------------------------

    def to_pandas(self) -> pd.DataFrame:
        """The tidy table: one row per (run, context the run has, metric, scope) with columns ``run``,
        ``path``, ``metric``, ``scope``, ``value``; a context missing from a run has no row there."""
        import pandas as pd

        cols = tidy_columns(self)
        return pd.DataFrame({k: (pd.Categorical.from_codes(v[0], v[1]) if isinstance(v, tuple) else v)
                             for k, v in cols.items()})

    def catalog_frame(self) -> pd.DataFrame:
        """The run catalog as a DataFrame (one row per run; user metadata as ``meta.KEY`` columns)."""
        import pandas as pd

        return pd.DataFrame([r.as_dict() for r in self.runs]).set_index("label")

    def to_dict(self, nodes: Sequence[int] | None = None) -> dict[str, Any]:
        """Everything as JSON-ready data (for ``--format json`` and a browser): the catalog, the metrics and
        per node its identity, each run's values (None: no value, with ``present`` saying whether the run has
        the context) and the statistics across runs."""
        chosen = range(len(self)) if nodes is None else nodes
        return {"view": self.view, "baseline": self.runs[self.baseline].label,
                "vendor_neutral": self.vendor_neutral,
                "runs": [r.as_dict() for r in self.runs],
                "metrics": [{"name": m.name, "meaning": m.meaning, "additive": m.additive} for m in self.metrics],
                "groups": None if self.groups is None else
                [{"key": self.group_by, "value": g.value, "runs": [self.runs[i].label for i in g.runs]}
                 for g in self.groups],
                "nodes": [node_record(self, int(n)) for n in chosen]}


# -- building one --------------------------------------------------------------------------------------------


def _detect_vendors(paths: Sequence[str]) -> list[str | None]:
    out: list[str | None] = []
    for p in paths:
        try:
            meta = read_metadb(os.path.join(p, "meta.db"))
        except (OSError, HpcsaError):
            out.append(None)  # open_experiment says what is wrong with it, below
            continue
        out.append(V.vendor_of(list(meta.modules), list(meta.functions.names)))
    return out


def _choose_metrics(exp: Experiment, metrics: Sequence[str] | None, all_metrics: bool) -> list[MetricInfo]:
    names: list[str] = []
    if metrics:
        for spec in metrics:
            try:
                names.append(exp.catalog.find(spec).name)
            except KeyError as exc:
                raise HpcsaError(exp.path, exc.args[0]) from None
    else:
        names = [c.name for c in default_columns(exp, all_metrics)]
    out = []
    for n in dict.fromkeys(names):
        col = find_column(exp, n)
        out.append(MetricInfo(n, V.metric_meaning(n), col is not None and additive(col)))
    return out


def _metrics_with_values(exp: Experiment) -> list[str]:
    out = []
    for col in exp.catalog:
        total = exp.total(col)
        if col.visible and total == total and total != 0:
            out.append(col.name)
    return out


def compare(databases: Sequence[str | os.PathLike[str]], *, baseline: str | os.PathLike[str] | int | None = None,
            metrics: Sequence[str] | None = None, all_metrics: bool = False, view: str = "top-down",
            vendor_neutral: bool | None = None, meta: Sequence[dict[str, str]] | None = None,
            group_by: str | None = None, callers_depth: int = 4,
            progress: Callable[[int], None] | None = None) -> Comparison:
    """Align ``databases`` on one tree (see the module docstring).

    ``baseline``: a database of the list (as given, or its index; default the first); ``metrics``: metric
    columns by name or prefix (default: the baseline's first with data, or every one with ``all_metrics``);
    ``view``: top-down, bottom-up or flat; ``vendor_neutral``: name kernels, runtime calls and frames alike
    across GPU vendors (:mod:`.frames`; default: when the runs come from more than one vendor); ``meta``: each
    run's user metadata; ``group_by``: a metadata key (or ``ranks``, ``threads``...) to group runs by.
    """
    paths = [os.fspath(p) for p in databases]
    if not paths:
        raise HpcsaError(None, "no databases to compare")
    if view not in VIEWS:
        raise HpcsaError(None, f"unknown view {view!r} ({', '.join(VIEWS)})")
    labels = run_labels(paths)
    base = _baseline_index(paths, labels, baseline)
    vendors = _detect_vendors(paths)
    if vendor_neutral is None:
        vendor_neutral = len({v for v in vendors if v is not None}) > 1
    align = Alignment()
    chosen: list[MetricInfo] = []
    columns: dict[tuple[str, str], list[np.ndarray]] = {}
    present: list[np.ndarray] = [np.zeros(0, bool)] * len(paths)
    records: list[RunRecord | None] = [None] * len(paths)
    aliases: dict[int, dict[str, str]] = {}
    for step, i in enumerate([base] + [k for k in range(len(paths)) if k != base]):
        exp = open_experiment(paths[i])
        if step == 0:
            chosen = _choose_metrics(exp, metrics, all_metrics)
            columns = {(m.name, s): [np.zeros(0)] * len(paths) for m in chosen for s in SIDES}
        rv = run_view(exp, view, vendor_neutral, callers_depth)
        nodes = align.add(rv.keys, rv.parent, rv.describe)
        ok = nodes >= 0
        at, n = nodes[ok], len(align)
        present[i] = np.bincount(at, minlength=n) > 0
        for m in chosen:
            for side, v in zip(SIDES, rv.values(m.name), strict=True):
                v = v[ok]
                have = np.bincount(at, weights=~np.isnan(v), minlength=n) > 0
                total = np.bincount(at, weights=np.nan_to_num(v), minlength=n)
                columns[(m.name, side)][i] = np.where(have, total, np.nan)
        if isinstance(rv, FrameView):
            _collect_aliases(rv, nodes, labels[i], aliases)
        records[i] = describe(exp, i, labels[i], _metrics_with_values(exp))
        if progress is not None:
            progress(step + 1)
        del exp, rv
    n = len(align)
    pres = np.zeros((n, len(paths)), bool)
    for i, p in enumerate(present):
        pres[:len(p), i] = p
    values = {}
    for key, cols in columns.items():
        mat = np.full((n, len(paths)), np.nan)
        for i, col in enumerate(cols):
            mat[:len(col), i] = col
        values[key] = mat
    runs = [r for r in records if r is not None]
    for r, d in zip(runs, meta or [{}] * len(runs), strict=True):
        r.meta = dict(d)
    out = Comparison(view, runs, base, align.parent, align.depth, align.labels, align.kinds, chosen, values, pres,
                     keys=align.keys, vendor_neutral=vendor_neutral, vendors=vendors, aliases=aliases if vendor_neutral else None)
    if group_by:
        out.group_by, out.groups = group_by, group_runs(runs, group_by)
    return out


def _baseline_index(paths: Sequence[str], labels: Sequence[str], baseline: str | os.PathLike[str] | int | None
                    ) -> int:
    if baseline is None:
        return 0
    if isinstance(baseline, int):
        if not 0 <= baseline < len(paths):
            raise HpcsaError(None, f"baseline {baseline}: there are {len(paths)} runs")
        return baseline
    b = os.fspath(baseline)
    for i, (p, lbl) in enumerate(zip(paths, labels, strict=True)):
        if b in (p, lbl) or os.path.normpath(os.path.abspath(b)) == os.path.normpath(os.path.abspath(p)):
            return i
    raise HpcsaError(b, "--baseline must be one of the databases compared (add it to the list)")


def _collect_aliases(rv: FrameView, nodes: np.ndarray, label: str, out: dict[int, dict[str, str]]) -> None:
    """Each renamed frame's own name in this run, once per (aligned node, function)."""
    renamed = rv.frames.renamed
    idx = np.flatnonzero(renamed & (nodes >= 0))
    if not len(idx):
        return
    fn = rv.exp.cct.function[rv.frames.rows[idx]]
    _, first = np.unique(np.stack([nodes[idx], fn]), axis=1, return_index=True)
    for k in idx[first].tolist():
        names = out.setdefault(int(nodes[k]), {})
        own = rv.frames.original_name(k)
        names[label] = own if label not in names else f"{names[label]} | {own}"


# -- rows and records (the tidy table's, JSON's) ------------------------------------------------------------


def _num(x: float) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def run_rows(cmp: Comparison) -> Iterator[tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """Per run: (run, node, metric index, side index, value) of its rows, in (metric, side, node) order."""
    keys = [(m.name, s) for m in cmp.metrics for s in ("inclusive", "exclusive")]
    for run in range(len(cmp.runs)):
        have = np.flatnonzero(cmp.present[:, run])
        nodes, mets, sides, vals = [], [], [], []
        for k, key in enumerate(keys):
            v = cmp.values[key][have, run]
            ok = ~np.isnan(v)
            nodes.append(have[ok])
            mets.append(np.full(int(ok.sum()), k // 2))
            sides.append(np.full(int(ok.sum()), k % 2))
            vals.append(v[ok])
        yield (run, np.concatenate(nodes), np.concatenate(mets), np.concatenate(sides), np.concatenate(vals))


def tidy_columns(cmp: Comparison) -> dict[str, Any]:
    """The whole tidy table as columns: categorical ones as (codes, categories), ``value`` as floats."""
    runs, nodes, mets, sides, vals = [], [], [], [], []
    for run, n, m, s, v in run_rows(cmp):
        runs.append(np.full(len(n), run))
        nodes.append(n)
        mets.append(m)
        sides.append(s)
        vals.append(v)

    def cat(parts: list[np.ndarray]) -> np.ndarray:
        return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, np.int64)

    return {"run": (cat(runs), [r.label for r in cmp.runs]), "path": (cat(nodes), list(cmp.paths)),
            "metric": (cat(mets), [m.name for m in cmp.metrics]), "scope": (cat(sides), ["inclusive", "exclusive"]),
            "value": np.concatenate(vals) if vals else np.zeros(0)}


def node_record(cmp: Comparison, node: int) -> dict[str, Any]:
    """One aligned node as JSON-ready data: identity, per metric and side each run's value (None where the
    run has none; ``present`` says whether it has the context), the statistics and the change against the
    baseline (the other runs' mean less the baseline's)."""
    rec: dict[str, Any] = {"id": node, "parent": int(cmp.parent[node]), "label": cmp.labels[node],
                           "kind": cmp.kinds[node], "path": cmp.paths[node],
                           "present": [bool(x) for x in cmp.present[node]]}
    if cmp.aliases and node in cmp.aliases:
        rec["names"] = cmp.aliases[node]
    values: dict[str, Any] = {}
    for m in cmp.metrics:
        per: dict[str, Any] = {}
        for side in ("inclusive", "exclusive"):
            v = cmp.values[(m.name, side)][node]
            st = cmp.stats(m.name, side, None)
            diff, rat = cmp.change(m.name, side)
            per[side] = {"runs": [_num(x) for x in v.tolist()],
                         **{k: _num(st.get(k)[node]) for k in ("mean", "min", "max", "stddev", "cfvar")},
                         "count": int(st.count[node]), "change": _num(diff[node]), "ratio": _num(rat[node])}
        values[m.name] = per
    rec["values"] = values
    return rec
