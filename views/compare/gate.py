"""A regression gate for CI: ``--fail-if 'CPUTIME (sec):I > 5%'`` names the contexts whose change crossed the
line; the command exits 1 when one did.

A rule is ``METRIC[:I|:E] OP THRESHOLD[%]``: the metric (a name or unique prefix), inclusive (``:I``, the
default) or exclusive (``:E``), ``>``, ``>=``, ``<`` or ``<=``, and a threshold relative to the reference
(``5%``) or absolute in the metric's unit (``0.5``). ``> 5%`` is an increase of more than 5 %; ``< -5%`` a
decrease of more than 5 %.

What is compared (:func:`evaluate`):

- against the baseline (default): every other run -- with ``--group-by``, every other group's mean -- against
  the baseline run (its group's mean);
- against the mean: every run against the mean of the other runs of its group (of all runs without groups).

Noise: where the reference or the compared group has several runs (repeated runs of one configuration), a
change counts only when it is larger than their spread (max - min, times ``noise``). Contexts smaller than
``min_share`` of the metric's total in both are not gated (sampling noise), and a context missing from one
side is not gated either (it is counted and said).

Inclusive values include the children's (and a procedure's exclusive value its loops' and lines'): a
regression in one context makes the contexts that hold it grow too. A crossing context whose change is
explained by the crossing contexts it holds (what is left of its change after theirs does not cross the line)
is not named; its path shows in theirs. So a planted regression in one context is named once, at that
context.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Sequence

import numpy as np

from hpcsa.core.dataclass import dataclass
from hpcsa.core.errors import HpcsaError
from hpcsa.core.treeorder import depth_levels
from hpcsa.views.compare.comparison import Comparison

OPS: dict[str, Callable[[np.ndarray, float], np.ndarray]] = {
    ">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le}
AGAINST = ("baseline", "mean")
_RULE = re.compile(r"^\s*(?P<metric>.+?)\s*(?::(?P<side>[IiEe]))?\s*(?P<op>>=|<=|>|<)\s*"
                   r"(?P<value>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(?P<pct>%)?\s*$")


@dataclass(frozen=True)
class Rule:
    """One ``--fail-if`` rule."""

    metric: str
    side: str
    op: str
    threshold: float
    relative: bool
    text: str

    def crosses(self, measure: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore"):
            return np.isfinite(measure) & OPS[self.op](measure, self.threshold)


def parse_rule(text: str) -> Rule:
    """A rule from its text (see the module docstring)."""
    m = _RULE.match(text)
    if not m:
        raise HpcsaError(None, f"--fail-if {text!r}: write METRIC[:I|:E] OP THRESHOLD[%], e.g. "
                         "'CPUTIME (sec):I > 5%'")
    side = "exclusive" if (m.group("side") or "I").upper() == "E" else "inclusive"
    relative = m.group("pct") is not None
    value = float(m.group("value")) / (100.0 if relative else 1.0)
    return Rule(m.group("metric").strip(), side, m.group("op"), value, relative, text.strip())


@dataclass
class Crossing:
    """A context that crossed a rule's line: where, between what, and by how much."""

    rule: Rule
    node: int
    path: str
    compared: str
    reference: str
    value: float
    reference_value: float
    noise: float

    @property
    def change(self) -> float:
        return self.value - self.reference_value

    @property
    def relative(self) -> float:
        return self.change / abs(self.reference_value) if self.reference_value else math.inf

    def __str__(self) -> str:
        rel = f"{100 * self.relative:+.1f}%" if math.isfinite(self.relative) else "new"
        noise = f", noise {self.noise:.3g}" if self.noise else ""
        return (f"{self.path}: {rel} ({self.change:+.4g}: {self.reference_value:.4g} -> {self.value:.4g}{noise}) "
                f"[{self.compared} vs {self.reference}; {self.rule.text}]")


@dataclass
class GateResult:
    """Every crossing named, and what was left out: crossings folded into crossings below them, contexts
    missing on one side, contexts below the share floor."""

    crossings: list[Crossing]
    folded: int = 0
    one_sided: int = 0
    below_share: int = 0

    @property
    def failed(self) -> bool:
        return bool(self.crossings)


def _comparisons(cmp: Comparison, against: str) -> list[tuple[str, list[int], str, list[int]]]:
    """(compared label, its runs, reference label, its runs) pairs."""
    labels = [r.label for r in cmp.runs]
    if cmp.groups:
        groups = [(f"{cmp.group_by}={g.value}", g.runs) for g in cmp.groups]
    else:
        groups = [(lbl, [i]) for i, lbl in enumerate(labels)]
    if against == "baseline":
        ref = next(g for g in groups if cmp.baseline in g[1])
        return [(name, runs, ref[0], ref[1]) for name, runs in groups if runs is not ref[1]]
    out = []
    pools = [(g.value, g.runs) for g in cmp.groups] if cmp.groups else [("", list(range(len(labels))))]
    for _, runs in pools:
        for r in runs:
            rest = [k for k in runs if k != r]
            if rest:
                out.append((labels[r], [r], f"mean of {len(rest)} other run{'s' if len(rest) > 1 else ''}", rest))
    return out


def evaluate(cmp: Comparison, rules: Sequence[Rule], against: str = "baseline", noise: float = 1.0,
             min_share: float = 0.01) -> GateResult:
    """Apply the rules to a comparison (see the module docstring); ``min_share`` is a fraction of the total."""
    if against not in AGAINST:
        raise HpcsaError(None, f"--against {against!r}: baseline or mean")
    out = GateResult([])
    levels = depth_levels(cmp.depth)
    contains = {"inclusive": np.ones(len(cmp), bool), "exclusive": exclusive_within_parent(cmp)}
    for rule in rules:
        metric = cmp.metric(rule.metric)
        mat = cmp.matrix(metric, rule.side)
        totals = cmp.matrix(metric, "inclusive")[cmp.parent < 0]
        for name, runs, ref_name, ref_runs in _comparisons(cmp, against):
            x, xs = _mean_spread(mat[:, runs])
            ref, rs = _mean_spread(mat[:, ref_runs])
            band = noise * np.maximum(np.nan_to_num(xs), np.nan_to_num(rs))
            total = float(np.nanmax(np.abs(totals[:, ref_runs]))) if totals.size else 0.0
            one_sided = np.isnan(x) != np.isnan(ref)
            big = np.maximum(np.abs(np.nan_to_num(x)), np.abs(np.nan_to_num(ref))) >= min_share * total
            change = x - ref
            crossing = _crosses(rule, change, ref, band) & big
            named = _frontier(cmp.parent, levels, contains[rule.side], crossing, change, ref, band, rule)
            out.folded += int((crossing & ~named).sum())
            out.one_sided += int(one_sided.sum())
            out.below_share += int((~big & ~one_sided & _crosses(rule, change, ref, band)).sum())
            for node in np.flatnonzero(named).tolist():
                out.crossings.append(Crossing(rule, node, cmp.paths[node], name, ref_name, float(x[node]),
                                              float(ref[node]), float(band[node])))
    return out


def _mean_spread(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    with np.errstate(invalid="ignore"):
        have = ~np.isnan(values)
        n = have.sum(axis=1)
        mean = np.where(n > 0, np.where(have, values, 0.0).sum(axis=1) / np.maximum(n, 1), np.nan)
        hi = np.where(have, values, -np.inf).max(axis=1)
        lo = np.where(have, values, np.inf).min(axis=1)
        spread = np.where(n > 1, hi - lo, 0.0)
    return mean, spread


def _crosses(rule: Rule, change: np.ndarray, ref: np.ndarray, band: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        measure = change / np.abs(ref) if rule.relative else change
        measure = np.where(rule.relative & (ref == 0), np.nan, measure)
        return rule.crosses(measure) & (np.abs(change) > band)


def exclusive_within_parent(cmp: Comparison) -> np.ndarray:
    """Which nodes' exclusive values are part of their parent's: a loop's or line's (the lexical scopes a
    procedure's exclusive cost holds) in the top-down view, any scope but a call site in the flat view,
    every caller in the callers view; no frame's in the vendor-neutral view (their costs are disjoint)."""
    kinds = np.array(cmp.kinds, dtype=object)
    if cmp.vendor_neutral and cmp.view == "top-down":
        return np.zeros(len(kinds), bool)
    if cmp.view == "top-down":
        return np.array([str(k).endswith("/lexical") for k in kinds], bool)
    if cmp.view == "flat":
        return kinds != "call site"
    return np.ones(len(kinds), bool)


def _frontier(parent: np.ndarray, levels: list[np.ndarray], contains: np.ndarray, crossing: np.ndarray,
              change: np.ndarray, ref: np.ndarray, band: np.ndarray, rule: Rule) -> np.ndarray:
    """The crossing contexts whose change is not explained by the crossing contexts below them (through
    ``contains`` edges only: a node whose value is part of its parent's)."""
    n = len(parent)
    nearest = np.full(n, -1, np.int64)  # nearest crossing proper ancestor whose value holds the node's
    for rows in levels[1:]:
        up = parent[rows]
        ok = (up >= 0) & contains[rows]
        r, u = rows[ok], up[ok]
        nearest[r] = np.where(crossing[u], u, nearest[u])
    below = crossing & (nearest >= 0)
    explained = np.bincount(nearest[below], weights=np.nan_to_num(change[below]), minlength=n)
    has_below = np.bincount(nearest[below], minlength=n) > 0
    residual = change - explained
    return crossing & (~has_below | _crosses(rule, residual, ref, band))
