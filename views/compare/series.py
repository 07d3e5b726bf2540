"""A scaling series: runs grouped by a numeric key (``--group-by nodes``), with efficiency and a growth model
per context.

The number of units ``p`` of a group is its key's value. A database's value is summed over its profiles, so
per unit a context costs ``value / p`` (as ``hpcsa scaling`` counts it). The series follows the cost whose
ideal is constant: per unit for weak scaling (each unit keeps its share of work), summed over the units for
strong scaling (the work is divided, so the total stays). The efficiency at ``p`` is that cost at the
smallest ``p0`` over its cost at ``p`` (1: perfect; 0.5: twice the ideal), and the growth model
(:mod:`.models`, Extra-P's) is fitted to the same cost over ``p``: anything but a constant is a scalability
loss, and its order says how it grows. A group of several runs contributes their mean.
"""

from __future__ import annotations

import numpy as np

from hpcsa.core.dataclass import dataclass
from hpcsa.core.errors import HpcsaError
from hpcsa.views.compare import models
from hpcsa.views.compare.comparison import Comparison
from hpcsa.views.compare.stats import across

MODES = ("strong", "weak")
#: Extra-P's minimum of measurement points for a model.
EXTRAP_POINTS = 5


@dataclass
class Series:
    """Per context (rows) and group (columns): the cost followed, the efficiency; and a model per context."""

    key: str
    mode: str
    metric: str
    side: str
    p: np.ndarray
    cost: np.ndarray
    efficiency: np.ndarray
    fits: models.Fits | None

    @property
    def note(self) -> str:
        n = len(self.p)
        if self.fits is None:
            return f"{n} points: no growth model (it needs at least 3; Extra-P asks for {EXTRAP_POINTS})"
        if n < EXTRAP_POINTS:
            return f"{n} points: Extra-P asks for {EXTRAP_POINTS}; the models say less"
        return f"{n} points"


def scaling_series(cmp: Comparison, metric: str | None = None, side: str = "inclusive",
                   mode: str = "strong") -> Series:
    """The series of a comparison grouped by a numeric key (see the module docstring)."""
    if mode not in MODES:
        raise HpcsaError(None, f"--scaling {mode!r}: strong or weak")
    if not cmp.groups or any(g.x is None for g in cmp.groups):
        raise HpcsaError(None, "a scaling series needs --group-by a key whose values are numbers (nodes, ranks...)")
    if len(cmp.groups) < 2:
        raise HpcsaError(None, f"--group-by {cmp.group_by}: all runs have one value; a series needs two or more")
    name = cmp.metric(metric)
    mat = cmp.matrix(name, side)
    p = np.array([g.x for g in cmp.groups], np.float64)
    if (p <= 0).any():
        raise HpcsaError(None, f"--group-by {cmp.group_by}: the number of units must be positive")
    mean = np.stack([across(mat[:, g.runs]).mean for g in cmp.groups], axis=1)
    cost = mean / p[None, :] if mode == "weak" else mean
    with np.errstate(invalid="ignore", divide="ignore"):
        eff = np.where(cost != 0, cost[:, :1] / cost, np.nan)
    fits = models.fit(p, cost) if len(p) >= 3 else None
    return Series(cmp.group_by or "", mode, name, side, p, cost, eff, fits)


def series_rows(cmp: Comparison, s: Series, top: int = 15) -> list[int]:
    """The contexts to list: the costliest at the largest ``p`` (present in every group)."""
    last = np.nan_to_num(s.cost[:, -1], nan=-np.inf)
    order = np.lexsort((np.arange(len(last)), -last))
    complete = ~np.isnan(s.cost).any(axis=1)
    return [int(i) for i in order if complete[i]][:top]


def render_series(cmp: Comparison, s: Series, top: int = 15) -> str:
    """The series as text: per context its efficiency at each ``p`` and its growth model."""
    rows = series_rows(cmp, s, top)
    ps = [f"{x:g}" for x in s.p]
    heads = [f"E({x})" for x in ps]
    what = "per unit" if s.mode == "weak" else "summed over units"
    out = [f"scaling series over {s.key} = {', '.join(ps)} ({s.mode} scaling; {s.metric} {s.side}, {what}; "
           f"{s.note})", "",
           "  ".join(f"{h:>7}" for h in heads) + f"  {'growth':<18} {'model (cost at p)':<40} context"]
    for i in rows:
        eff = "  ".join(f"{e:>7.3f}" if np.isfinite(e) else f"{'-':>7}" for e in s.efficiency[i])
        growth = s.fits.growth(i) if s.fits is not None else "-"
        formula = s.fits.formula(i) if s.fits is not None else "-"
        out.append(f"{eff}  {growth:<18} {formula:<40} {cmp.paths[i]}")
    return "\n".join(out) + "\n"


def series_dict(cmp: Comparison, s: Series, top: int | None = None) -> dict[str, object]:
    rows = series_rows(cmp, s, top or len(cmp))
    return {"key": s.key, "mode": s.mode, "metric": s.metric, "side": s.side, "p": s.p.tolist(), "note": s.note,
            "contexts": [{"path": cmp.paths[i], "cost": [float(v) for v in s.cost[i]],
                          "efficiency": [None if not np.isfinite(e) else float(e) for e in s.efficiency[i]],
                          "model": None if s.fits is None else s.fits.formula(i),
                          "growth": None if s.fits is None else s.fits.growth(i),
                          "smape": None if s.fits is None else float(s.fits.smape[i])} for i in rows]}
