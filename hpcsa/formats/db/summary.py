"""The summary statistics of a database, as HPCToolkit defines them.

Every summary statistic of meta.db (a record of its Performance Metrics
section; HPCToolkit's format specification, ``doc/FORMATS.md`` in its
sources) is a *partial* combined over the profiles: the formula is
``$$`` (the value), ``1`` (a count: one per profile with a value) or
``($$^2)`` (the square of the value), combined by ``sum``, ``min`` or ``max``.
Profiles without a value take no part: a value of 0 is "unset", so it adds
nothing to a sum or a count and never wins a min or a max; a run without any
value combines to 0 (which the writers leave out, as hpcprof does).

This module is the one implementation of that rule; hpcsa prof's
transposition and the views' database writer both reduce with
:func:`combine_runs`.
"""

from __future__ import annotations

import numpy as np

#: The partial formulas of a summary statistic, in meta.db's spelling.
PARTIALS = ("$$", "1", "($$^2)")


def partial_values(formula: str, values: np.ndarray) -> np.ndarray:
    """Each profile's contribution to the partial ``formula`` (0 where the profile has no value)."""
    present = values != 0
    if formula == "$$":
        return np.where(present, values, 0.0)
    if formula == "1":
        return present.astype(np.float64)
    if formula == "($$^2)":
        x = np.where(present, values, 0.0)
        return x * x
    raise ValueError(f"cannot compute the summary partial {formula!r}")


def combine_runs(values: np.ndarray, starts: np.ndarray, formula: str, combine: str) -> np.ndarray:
    """The partial ``formula`` combined by ``combine`` over each run ``values[starts[i]:starts[i + 1]]``.

    ``values`` are the profiles' values of one (context, metric) per run, 0 where a profile has
    none; the result is 0 for a run where no profile has a value. The order inside a run is the
    order of the additions, so callers give the profiles in one canonical order.
    """
    if combine == "sum":
        return np.add.reduceat(partial_values(formula, values), starts)
    if combine not in ("min", "max"):
        raise ValueError(f"cannot combine a summary partial by {combine!r}")
    x = np.where(values != 0, partial_values(formula, values), np.inf if combine == "min" else -np.inf)
    red = (np.minimum if combine == "min" else np.maximum).reduceat(x, starts)
    red[~np.isfinite(red)] = 0.0
    return red
