"""Statistics across runs, per context: over a matrix of values (contexts x runs) where NaN means "this run has
no value here" (the context is missing from it, or the metric is).

Every statistic is over the runs that have a value: ``count``, ``mean``, ``min``, ``max``, the standard
deviation (population, as HPCToolkit's own ``StdDev`` summary: sqrt(E[x^2] - E[x]^2)) and the coefficient of
variation ``stddev / mean`` (HPCToolkit's ``CfVar``). Against a reference column (the baseline run, or a
group's mean): ``diff = value - reference`` and ``ratio = value / reference`` (NaN where either is missing,
or the reference is 0). All of it is numpy over whole columns.
"""

from __future__ import annotations

import numpy as np

from hpcsa.core.dataclass import dataclass

#: The statistics across runs, in report order.
STATISTICS = ("mean", "min", "max", "stddev", "cfvar")


@dataclass
class Statistics:
    """Per context: how many runs have a value, and the statistics over them (NaN where none has)."""

    count: np.ndarray
    mean: np.ndarray
    min: np.ndarray
    max: np.ndarray
    stddev: np.ndarray
    cfvar: np.ndarray

    def get(self, name: str) -> np.ndarray:
        if name not in STATISTICS and name != "count":
            raise KeyError(name)
        out: np.ndarray = getattr(self, name)
        return out

    @property
    def spread(self) -> np.ndarray:
        """max - min: the noise band of repeated runs (0 with one run)."""
        return self.max - self.min


def across(values: np.ndarray) -> Statistics:
    """The statistics of each row of ``values`` (contexts x runs) over its non-NaN entries."""
    v = np.asarray(values, np.float64)
    if v.ndim != 2:
        raise ValueError("values must be a contexts x runs matrix")
    have = ~np.isnan(v)
    count = have.sum(axis=1)
    zeroed = np.where(have, v, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = zeroed.sum(axis=1) / count
        dev = np.where(have, v - mean[:, None], 0.0)
        std = np.sqrt((dev * dev).sum(axis=1) / count)
        cfvar = np.where(mean != 0, std / np.abs(mean), np.nan)
    none = count == 0
    lo = np.where(have, v, np.inf).min(axis=1) if v.shape[1] else np.full(len(v), np.nan)
    hi = np.where(have, v, -np.inf).max(axis=1) if v.shape[1] else np.full(len(v), np.nan)
    lo, hi = np.where(none, np.nan, lo), np.where(none, np.nan, hi)
    return Statistics(count, np.where(none, np.nan, mean), lo, hi, np.where(none, np.nan, std),
                      np.where(none, np.nan, cfvar))


def difference(values: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """``values - reference`` (reference: one value per context, broadcast over the runs)."""
    ref = np.asarray(reference, np.float64)
    return np.asarray(values, np.float64) - (ref[:, None] if np.ndim(values) == 2 else ref)


def ratio(values: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """``values / reference``; NaN where the reference is 0 or missing."""
    ref = np.asarray(reference, np.float64)
    ref = ref[:, None] if np.ndim(values) == 2 else ref
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(ref != 0, np.asarray(values, np.float64) / ref, np.nan)
