"""Load imbalance: how one context's cost is spread over the profiles (§VI.C of
Adhianto, Mellor-Crummey and Tallent, "Effectively Presenting Call Path Profiles of Application Performance",
2010).

For a metric and scope, the distribution of a context's values over a set of profiles -- by default the
profiles of the class (CPU threads or GPU streams) where the metric has data -- has min, max, mean, standard
deviation and a histogram. Only the profiles where the context is *present* (have a value there) are
compared: a profile that never ran the context has a different role (the 960 worker threads of a run never
run ``main``), not a smaller share of the same work, and counting it as 0 would rank thread roles as
imbalance. How many of the set lack the context is reported beside the statistics.

Contexts are ranked by the *imbalance cost* ``sum_p (max - v_p) = k (max - mean)`` over the ``k`` profiles
where the context is present: the time the others would spend waiting if the slowest one set the pace at
this context (0 when perfectly balanced, in the metric's unit, so it can be compared with the context's cost
and added up). Every statistic of every context comes from one pass over cct.db (vectorized).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import numpy as np

from hpcsa.core.dataclass import dataclass
from hpcsa.core.errors import HpcsaError
from hpcsa.core.outputs import atomic_file

if TYPE_CHECKING:
    from hpcsa.views.experiment import Experiment

KINDS = ("auto", "cpu", "gpu", "all")


@dataclass
class ImbalanceTable:
    """Statistics of every row over ``profiles`` (arrays over the CCT rows)."""

    metric: str
    scope: str
    profiles: np.ndarray  # the set compared (where present)
    count: np.ndarray  # profiles with a value: where the context is present
    total: np.ndarray
    mean: np.ndarray
    max: np.ndarray
    min: np.ndarray
    std: np.ndarray
    imbalance: np.ndarray

    def lacking(self, row: int) -> int:
        """How many profiles of the set lack the context (have no value there)."""
        return len(self.profiles) - int(self.count[row])

    def ranked(self, top: int | None = None) -> np.ndarray:
        """Rows by imbalance cost, largest first (ties: tree order); rows without imbalance are left out."""
        rows = np.flatnonzero(self.imbalance > 0)
        rows = rows[np.lexsort((rows, -self.imbalance[rows]))]
        return rows if top is None else rows[:top]


def profile_set(exp: Experiment, metric: str, kind: str = "auto") -> np.ndarray:
    """The profiles to compare: ``cpu``, ``gpu``, ``all``, or ``auto`` (the class where the metric has
    data; CPU threads when both have it)."""
    if kind not in KINDS:
        raise HpcsaError(None, f"unknown profile class {kind!r} (choose from {', '.join(KINDS)})")
    info = exp.profiles
    if kind == "auto" and not any(p.gpu for p in info):
        kind = "cpu"  # nothing to choose: no need to read every value of cct.db
    if kind == "auto":
        _, prof, _ = exp.metric_matrix(metric, "execution")
        with_data = set(np.unique(prof).tolist())
        cpu = [p.index for p in info if not p.gpu and p.index in with_data]
        gpu = [p.index for p in info if p.gpu and p.index in with_data]
        kind = "cpu" if cpu or not gpu else "gpu"
    chosen = [p.index for p in info if kind == "all" or (p.gpu == (kind == "gpu"))]
    return np.array(chosen, np.int64)


def imbalance_table(exp: Experiment, metric: str, scope: str = "execution", kind: str = "auto") -> ImbalanceTable:
    name = exp.measured_metric(metric)
    profiles = profile_set(exp, name, kind)
    if not len(profiles):
        raise HpcsaError(exp.path, f"no profiles of class {kind!r} to compare")
    rows, prof, vals = exp.metric_matrix(name, scope)
    keep = np.isin(prof, profiles)
    rows, vals = rows[keep], vals[keep]
    n = len(exp.cct)
    present = vals != 0  # sparse values: zero means absent
    rows, vals = rows[present], vals[present]
    count = np.bincount(rows, minlength=n)
    k = np.maximum(count, 1).astype(np.float64)
    total = np.bincount(rows, weights=vals, minlength=n)
    sumsq = np.bincount(rows, weights=vals * vals, minlength=n)
    vmax = np.full(n, -np.inf)
    np.maximum.at(vmax, rows, vals)
    vmin = np.full(n, np.inf)
    np.minimum.at(vmin, rows, vals)
    vmax[count == 0] = 0.0
    vmin[count == 0] = 0.0
    mean = total / k
    std = np.sqrt(np.maximum(sumsq / k - mean * mean, 0.0))
    imbalance = count * (vmax - mean)
    imbalance[np.abs(imbalance) <= 1e-12 * np.abs(total)] = 0.0
    return ImbalanceTable(name, scope, profiles, count, total, mean, vmax, vmin, std, imbalance)


@dataclass
class Distribution:
    """One context's values over the profiles where it is present (``profiles``, ``values``), and how many
    of the set compared (``compared``) lack it."""

    row: int
    metric: str
    scope: str
    profiles: np.ndarray
    values: np.ndarray
    compared: int = 0

    @classmethod
    def over(cls, row: int, metric: str, scope: str, profiles: np.ndarray, values: np.ndarray) -> Distribution:
        """The distribution of ``values`` (one per profile of the set) where they are present."""
        present = values != 0
        return cls(row, metric, scope, profiles[present], values[present], len(profiles))

    @property
    def lacking(self) -> int:
        return max(self.compared - len(self.values), 0)

    @property
    def stats(self) -> dict[str, float]:
        v = self.values
        mean = float(v.mean()) if len(v) else 0.0
        return {"profiles": float(len(v)), "lacking": float(self.lacking), "min": float(v.min()) if len(v) else 0.0,
                "max": float(v.max(initial=0.0)), "mean": mean, "stddev": float(v.std()) if len(v) else 0.0,
                "cfvar": float(v.std() / mean) if mean else 0.0,
                "imbalance": float(len(v) * (v.max(initial=0.0) - mean))}

    def histogram(self, bins: int = 10) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = (float(self.values.min()), float(self.values.max())) if len(self.values) else (0.0, 1.0)
        if hi <= lo:
            hi = lo + 1.0
        return np.histogram(self.values, bins=bins, range=(lo, hi))


def distribution(exp: Experiment, row: int, metric: str, scope: str = "execution", kind: str = "auto") -> Distribution:
    """The values of context ``row`` over the profiles (of ``kind``, as :func:`profile_set` chooses them) where
    it is present, for ``metric`` in ``scope``: what ``hpcsa imbalance`` ranks and plots."""
    name = exp.measured_metric(metric)
    profiles = profile_set(exp, name, kind)
    values = exp.context_values(row, name, scope)[profiles]
    return Distribution.over(row, name, scope, profiles, values)


def plot_distribution(exp: Experiment, dist: Distribution, path: str | os.PathLike[str], title: str = "") -> None:
    """A PNG like hpcviewer's (Fig. 7 of that paper): values by profile, sorted values, histogram."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise HpcsaError(None, "plots need matplotlib: pip install 'hpcsa[hatchet]' (or matplotlib)") from None
    labels = exp.processes.labels()
    fig, axes = plt.subplots(3, 1, figsize=(8, 8.5))
    x = np.arange(len(dist.values))
    unit = f"{dist.metric} ({dist.scope})"
    axes[0].scatter(x, dist.values, s=12)
    axes[0].set_xlabel("profile")
    axes[0].set_ylabel(unit)
    axes[0].set_title(title or f"values by profile ({dist.lacking} of {dist.compared} lack the context)")
    if len(x) <= 16:
        axes[0].set_xticks(x, [labels.get(int(p), str(p)) for p in dist.profiles], rotation=30, ha="right",
                           fontsize=7)
    axes[1].plot(x, np.sort(dist.values), marker=".")
    axes[1].set_xlabel("profiles, sorted by value")
    axes[1].set_ylabel(unit)
    counts, edges = dist.histogram()
    axes[2].bar(edges[:-1], counts, width=np.diff(edges), align="edge", edgecolor="black")
    axes[2].set_xlabel(unit)
    axes[2].set_ylabel("profiles")
    s = dist.stats
    fig.suptitle(f"min {s['min']:.4g}  mean {s['mean']:.4g}  max {s['max']:.4g}  stddev {s['stddev']:.4g}  "
                 f"imbalance {s['imbalance']:.4g}  (present in {len(dist.values)} of {dist.compared} profiles)",
                 fontsize=9)
    fig.tight_layout()
    with atomic_file(path) as fh:
        fig.savefig(fh, format="png", dpi=110)
    plt.close(fig)
