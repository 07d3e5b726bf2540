"""Class 1: one profile's point values propagated into hpcprof's four scopes.

For every context on a path from the root to a context with values (the
*closure*) and every metric with a value in its subtree (reference/
hpctoolkit.md §4.4, ``PerThreadTemporary::finalize``):

- ``point``: the value measured at the context;
- ``execution``: the whole subtree;
- ``function``: the subtree without crossing a call or inlined-call edge;
- ``lex_aware``: like function, but a loop does not take in nested loops.

hpcprof has a quirk this reproduces: its per-thread accumulator for a metric
is flagged as a loop only when the loop context had a value of its own, so a
loop without one reports ``function`` as its thread ``lex_aware`` value, while
the summary statistics use the loop-free sum. The loop-free sum of such loops
is kept aside (:attr:`Propagated.noloops_aside`) for the summary.

The work is vectorized: the closure is found by walking parents level by
level, and values flow up one depth level at a time with ``np.add.reduceat``
(children of a level, in id order, are grouped by parent because ids are
pre-order). Sums go bottom-up, never through prefix-sum differences, so small
contexts keep full precision.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class TreeArrays:
    """What propagation needs of the unified tree, by canonical id."""

    parent: np.ndarray   # int64, -1 for the root
    depth: np.ndarray    # int64
    pull_function: np.ndarray  # bool: a child that is not entered by a call feeds its parent's function scope
    pull_noloops: np.ndarray   # bool: ... and is not a loop: feeds the parent's loop-free sum
    is_loop: np.ndarray  # bool


@dataclass
class Propagated:
    """A profile's propagated values: rows = ``contexts`` (sorted ids), columns = ``metrics`` (global ids)."""

    contexts: np.ndarray   # int64 [K]
    metrics: np.ndarray    # int64 [m]
    point: np.ndarray      # [K, m]
    function: np.ndarray
    lex_aware: np.ndarray  # as hpcprof writes it per thread
    execution: np.ndarray
    present: np.ndarray    # bool [K, m]: the metric has a value somewhere in the context's subtree
    noloops_aside: np.ndarray  # bool [K, m]: loop without own value whose loop-free sum differs
    noloops: np.ndarray    # [K, m] loop-free sums (meaningful where noloops_aside)


def closure(ctx: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """``ctx`` and all their ancestors, sorted (the root included): one vectorized step per level."""
    mark = np.zeros(len(parent), bool)
    frontier = np.unique(ctx)
    mark[frontier] = True
    parts = [frontier]
    while len(frontier):
        up = parent[frontier]
        up = up[up >= 0]
        up = np.unique(up[~mark[up]])
        mark[up] = True
        parts.append(up)
        frontier = up
    out = np.concatenate(parts)
    out.sort()
    return out


def propagate(ctx: np.ndarray, metric: np.ndarray, value: np.ndarray, tree: TreeArrays) -> Propagated:
    """Propagate point values ``(ctx, metric, value)`` (duplicates are summed, in the given order)."""
    ctx = np.asarray(ctx, np.int64)
    metric = np.asarray(metric, np.int64)
    value = np.asarray(value, np.float64)
    metrics = np.unique(metric)
    rows = closure(ctx, tree.parent)
    k, m = len(rows), len(metrics)
    r = np.searchsorted(rows, ctx)
    c = np.searchsorted(metrics, metric)
    point = np.zeros((k, m))
    own = np.zeros((k, m), bool)
    if len(value):
        flat = r * m + c
        order = np.argsort(flat, kind="stable")
        flat_s = flat[order]
        starts = np.flatnonzero(np.r_[True, flat_s[1:] != flat_s[:-1]])
        sums = np.add.reduceat(value[order], starts)
        point.ravel()[flat_s[starts]] = sums
        own.ravel()[flat_s[starts]] = True
    execution = point.copy()
    function = point.copy()
    noloops = point.copy()
    count = own.astype(np.int64)
    if k > 1:
        depth = tree.depth[rows]
        par_row = np.searchsorted(rows, tree.parent[rows])
        pull_f = tree.pull_function[rows]
        pull_n = tree.pull_noloops[rows]
        by_depth = np.argsort(-depth, kind="stable")  # deepest first; ids ascending within a level
        d_sorted = depth[by_depth]
        level_starts = np.flatnonzero(np.r_[True, d_sorted[1:] != d_sorted[:-1]])
        level_ends = np.r_[level_starts[1:], k]
        for a, b in zip(level_starts.tolist(), level_ends.tolist(), strict=True):
            if d_sorted[a] == 0:
                break
            kids = by_depth[a:b]
            pr = par_row[kids]
            seg = np.flatnonzero(np.r_[True, pr[1:] != pr[:-1]])
            dest = pr[seg]
            execution[dest] += np.add.reduceat(execution[kids], seg, axis=0)
            count[dest] += np.add.reduceat(count[kids], seg, axis=0)
            fk = kids[pull_f[kids]]
            if len(fk):
                pf = par_row[fk]
                sf = np.flatnonzero(np.r_[True, pf[1:] != pf[:-1]])
                function[pf[sf]] += np.add.reduceat(function[fk], sf, axis=0)
            nk = kids[pull_n[kids]]
            if len(nk):
                pn = par_row[nk]
                sn = np.flatnonzero(np.r_[True, pn[1:] != pn[:-1]])
                noloops[pn[sn]] += np.add.reduceat(noloops[nk], sn, axis=0)
    loop = tree.is_loop[rows][:, None]
    lex_aware = np.where(loop & own, noloops, function)
    aside = loop & ~own & (noloops != function) & (count > 0)
    return Propagated(rows, metrics, point, function, lex_aware, execution, count > 0, aside, noloops)
