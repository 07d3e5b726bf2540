"""A scaling series as a PNG: the costliest contexts' cost over ``p`` with their fitted models (log-log), and
their efficiency."""

from __future__ import annotations

import os

import numpy as np

from hpcsa.core.errors import HpcsaError
from hpcsa.core.outputs import atomic_file
from hpcsa.views.compare.comparison import Comparison
from hpcsa.views.compare.series import Series, series_rows


def plot_series(cmp: Comparison, s: Series, path: str | os.PathLike[str], top: int = 6) -> None:
    """Write the plot of series ``s`` (``top`` contexts) to ``path``."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise HpcsaError(None, "plots need matplotlib: pip install 'hpcsa[hatchet]' (or matplotlib)") from None
    rows = series_rows(cmp, s, top)
    fig, (ax, ax_eff) = plt.subplots(1, 2, figsize=(12, 5))
    grid = np.geomspace(s.p.min(), s.p.max(), 64) if s.p.min() > 0 else np.linspace(s.p.min(), s.p.max(), 64)
    model = s.fits.evaluate(grid) if s.fits is not None else None
    for i in rows:
        label = cmp.labels[i] if len(cmp.labels[i]) <= 40 else cmp.labels[i][:37] + "..."
        line = ax.plot(s.p, s.cost[i], "o", label=label)[0]
        if model is not None and s.fits is not None:
            ax.plot(grid, model[i], "-", color=line.get_color(), alpha=0.7,
                    label=f"  {s.fits.growth(i)}")
        ax_eff.plot(s.p, s.efficiency[i], "o-", color=line.get_color())
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(s.key)
    ax.set_ylabel(f"{s.metric} ({'per unit' if s.mode == 'weak' else 'summed'})")
    ax.set_title(f"{s.mode} scaling: cost and growth model")
    ax.legend(fontsize=7)
    ax_eff.set_xscale("log", base=2)
    ax_eff.axhline(1.0, color="grey", lw=0.8)
    ax_eff.set_xlabel(s.key)
    ax_eff.set_ylabel("efficiency")
    ax_eff.set_title("efficiency (1 = ideal)")
    fig.tight_layout()
    with atomic_file(path, "wb") as fh:
        fig.savefig(fh, format="png", dpi=100)
    plt.close(fig)
