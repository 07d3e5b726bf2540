"""Growth models of a cost over a scaling parameter, fitted per context for all contexts at once.

The model and its search are Extra-P's single-parameter "basic" modeler (Calotoiu et al., "Using Automated
Performance Modeling to Find Scalability Bugs in Complex Codes", SC 2013; the ``extrap`` package on PyPI): the
performance model normal form with one term, ``f(p) = c0 + c1 * p^(i/j) * log2(p)^k``, over Extra-P's 43
default exponent pairs, or a constant. For each hypothesis and each point left out, ``c0`` and ``c1`` are
fitted by least squares on the other points (``c0`` set to 0 when it is below 0.05 % of the smallest value,
as Extra-P cleans it) and the left-out point predicted; a hypothesis' cost is the symmetric mean absolute
percentage error (SMAPE) of those predictions. A hypothesis whose term contributes less than 0.05 % at
every point is refused; the constant model (the mean, its SMAPE over the points) is the start, and a
hypothesis replaces the best so far only with a smaller SMAPE. Log terms are left out when a parameter
value is below 1. Extra-P asks for at least 5 points; fewer give a model that says less.

Extra-P itself (4.2.5) installs from PyPI with PySide6, scikit-learn and numpy < 2 (the latter conflicts with
hpcsa's numpy), and fits one context at a time; here the same search is a numpy pass per hypothesis and
left-out point over every context (``benchmarks/bench_compare.py`` checks both choose the same models).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from hpcsa.core.dataclass import dataclass

#: Extra-P's default building blocks with log terms: (numerator, denominator, log exponent).
EXPONENTS = ((0, 1, 1), (0, 1, 2), (1, 4, 0), (1, 3, 0), (1, 4, 1), (1, 3, 1), (1, 4, 2), (1, 3, 2), (1, 2, 0),
             (1, 2, 1), (1, 2, 2), (2, 3, 0), (3, 4, 0), (2, 3, 1), (3, 4, 1), (4, 5, 0), (2, 3, 2), (3, 4, 2),
             (1, 1, 0), (1, 1, 1), (1, 1, 2), (5, 4, 0), (5, 4, 1), (4, 3, 0), (4, 3, 1), (3, 2, 0), (3, 2, 1),
             (3, 2, 2), (5, 3, 0), (7, 4, 0), (2, 1, 0), (2, 1, 1), (2, 1, 2), (9, 4, 0), (7, 3, 0), (5, 2, 0),
             (5, 2, 1), (5, 2, 2), (8, 3, 0), (11, 4, 0), (3, 1, 0), (3, 1, 1))
CLEAN_CONSTANT = 0.0005  # Extra-P's epsilon: a constant below this share of the smallest value is 0
MIN_CONTRIBUTION = 0.0005  # Extra-P's minimum term contribution
CONSTANT = -1


def term(x: np.ndarray, h: int) -> np.ndarray:
    """Hypothesis ``h``'s term ``p^(i/j) * log2(p)^k`` at the points ``x``."""
    num, den, k = EXPONENTS[h]
    x = np.asarray(x, np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return x ** (num / den) * (np.log2(x) ** k if k else 1.0)


@dataclass
class Fits:
    """One model per context: ``hypothesis`` (an index of :data:`EXPONENTS`, or -1 for a constant), the
    coefficients and the model's SMAPE (%)."""

    hypothesis: np.ndarray
    c0: np.ndarray
    c1: np.ndarray
    smape: np.ndarray

    def __len__(self) -> int:
        return len(self.hypothesis)

    def evaluate(self, x: np.ndarray) -> np.ndarray:
        """Every context's model at the points ``x`` (contexts x points)."""
        x = np.asarray(x, np.float64)
        out = np.repeat(self.c0[:, None], len(x), axis=1)
        for h in np.unique(self.hypothesis[self.hypothesis >= 0]).tolist():
            rows = self.hypothesis == h
            out[rows] += self.c1[rows, None] * term(x, h)[None, :]
        return out

    def formula(self, i: int, parameter: str = "p") -> str:
        """Context ``i``'s model as text, e.g. ``1.2 + 0.031 * p^(1/2) * log2(p)``."""
        h, c0, c1 = int(self.hypothesis[i]), float(self.c0[i]), float(self.c1[i])
        if not np.isfinite(c0):
            return "-"
        if h < 0:
            return f"{c0:.4g}"
        num, den, k = EXPONENTS[h]
        parts = []
        if num:
            e = Fraction(num, den)
            parts.append(parameter if e == 1 else f"{parameter}^({e})" if e.denominator != 1 else f"{parameter}^{e}")
        if k:
            parts.append(f"log2({parameter})" + (f"^{k}" if k > 1 else ""))
        return f"{c0:.4g} {'+' if c1 >= 0 else '-'} {abs(c1):.4g} * {' * '.join(parts)}"

    def growth(self, i: int) -> str:
        """The model's order of growth (``O(p^(1/2) log2(p))``), ``O(1)`` for a constant."""
        h = int(self.hypothesis[i])
        if h < 0:
            return "O(1)"
        num, den, k = EXPONENTS[h]
        e = Fraction(num, den)
        parts = ([] if num == 0 else ["p" if e == 1 else f"p^({e})" if e.denominator != 1 else f"p^{e}"]) + \
                ([] if k == 0 else ["log2(p)" + (f"^{k}" if k > 1 else "")])
        return f"O({' '.join(parts)})"


def _smape(actual: np.ndarray, predicted: np.ndarray) -> np.ndarray:
    abssum = np.abs(actual) + np.abs(predicted)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(abssum != 0, np.abs(predicted - actual) / abssum * 2, 0.0)


def fit(x: np.ndarray, y: np.ndarray) -> Fits:
    """The best model of each row of ``y`` (contexts x points) over the parameter values ``x`` (see the module
    docstring). Rows with a missing value (NaN) get NaN coefficients."""
    x = np.asarray(x, np.float64)
    y = np.atleast_2d(np.asarray(y, np.float64))
    n_ctx, n = y.shape
    ok = ~np.isnan(y).any(axis=1)
    mean = y.mean(axis=1)
    best_h = np.full(n_ctx, CONSTANT, np.int64)
    best_c0, best_c1 = mean.copy(), np.zeros(n_ctx)
    best = _smape(y, mean[:, None]).sum(axis=1) / n * 100
    exact = ((y - mean[:, None]) ** 2).sum(axis=1) == 0  # Extra-P keeps a constant of no error
    hypotheses = [h for h in range(len(EXPONENTS)) if EXPONENTS[h][2] == 0 or bool((x >= 1).all())]
    if n >= 3:
        for h in hypotheses:
            t = term(x, h)
            if not np.isfinite(t).all() or np.ptp(t) == 0:
                continue
            cost = np.zeros(n_ctx)
            st, stt = t.sum(), (t * t).sum()
            sy, sty = y.sum(axis=1), y @ t
            for k in range(n):
                m = n - 1
                a_t, a_tt = st - t[k], stt - t[k] ** 2
                a_y, a_ty = sy - y[:, k], sty - t[k] * y[:, k]
                den = m * a_tt - a_t * a_t
                if den == 0:
                    cost[:] = np.inf
                    break
                c1 = (m * a_ty - a_t * a_y) / den
                c0 = (a_y - c1 * a_t) / m
                low = np.delete(y, k, axis=1).min(axis=1)
                with np.errstate(invalid="ignore", divide="ignore"):
                    small = np.where(low == 0, np.abs(c0) < CLEAN_CONSTANT, np.abs(c0 / low) < CLEAN_CONSTANT)
                c0 = np.where(small, 0.0, c0)
                cost += _smape(y[:, k], c0 + c1 * t[k]) / n * 100
            den = n * stt - st * st
            c1 = (n * sty - st * sy) / den
            c0 = (sy - c1 * st) / n
            with np.errstate(invalid="ignore", divide="ignore"):
                contribution = np.abs(c1[:, None] * t[None, :] / y).max(axis=1)
            valid = np.isfinite(cost) & (c1 != 0) & (contribution >= MIN_CONTRIBUTION)
            better = valid & (cost < best) & ~exact
            best_h[better], best_c0[better], best_c1[better], best[better] = h, c0[better], c1[better], cost[better]
    best_c0[~ok], best_c1[~ok], best[~ok] = np.nan, np.nan, np.nan
    return Fits(best_h, best_c0, best_c1, best)
