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
is kept aside (:attr:`Propagated.aside`) for the summary.

Ids are pre-order, so the subtree of context ``c`` is the id range
``c .. end[c]``: with the points sorted by (metric, context), each (context,
metric) pair finds its points with two binary searches, and one gather plus
``np.bincount`` sums them all (sequentially per pair: no cancellation, no
loop over depth levels). A point ``d`` belongs to the function scope of its
ancestor ``c`` when no call lies between them, i.e. when both have the same
nearest call-entered ancestor (``call_root``); to the loop-free sum when both
have the same nearest call-entered or loop ancestor (``block_root``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class TreeArrays:
    """What propagation needs of the unified tree, by canonical (pre-order) id."""

    parent: np.ndarray      # int64, -1 for the root
    end: np.ndarray         # int64: the subtree of c is c .. end[c]-1
    call_root: np.ndarray   # int64: nearest ancestor-or-self entered by a call (0: the root)
    block_root: np.ndarray  # int64: nearest ancestor-or-self entered by a call or that is a loop
    is_loop: np.ndarray     # bool
    _mark: np.ndarray | None = field(default=None, repr=False)
    _stamp: np.ndarray | None = field(default=None, repr=False)

    @classmethod
    def build(cls, parent: np.ndarray, depth: np.ndarray, is_call: np.ndarray, is_loop: np.ndarray,
              end: np.ndarray) -> TreeArrays:
        n = len(parent)
        ids = np.arange(n, dtype=np.int64)
        call_root = np.zeros(n, np.int64)
        block_root = np.zeros(n, np.int64)
        order = np.argsort(depth, kind="stable")
        bounds = np.searchsorted(depth[order], np.arange(int(depth.max()) + 2 if n else 1))
        for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):  # one step per depth level
            lv = order[a:b]
            par = np.maximum(parent[lv], 0)
            call_root[lv] = np.where(is_call[lv], ids[lv], call_root[par])
            block_root[lv] = np.where(is_call[lv] | is_loop[lv], ids[lv], block_root[par])
        return cls(parent.astype(np.int64), end.astype(np.int64), call_root, block_root, is_loop.astype(bool))

    def mark(self) -> np.ndarray:
        """A scratch "seen" flag per context, all False (reset by its users)."""
        if self._mark is None:
            self._mark = np.zeros(len(self.parent), bool)
        return self._mark

    def stamp(self) -> np.ndarray:
        """A scratch integer per context (any content: written before it is read)."""
        if self._stamp is None:
            self._stamp = np.zeros(len(self.parent), np.int64)
        return self._stamp


@dataclass
class Propagated:
    """A profile's propagated values, one row per (context, metric) pair present, sorted by (context, metric)."""

    ctx: np.ndarray        # int64
    metric: np.ndarray     # int64
    point: np.ndarray
    function: np.ndarray
    lex_aware: np.ndarray  # as hpcprof writes it per thread
    execution: np.ndarray
    noloops: np.ndarray    # loop-free sums
    aside: np.ndarray      # bool: a loop without a value of its own whose loop-free sum differs


def closure(ctx: np.ndarray, tree: TreeArrays) -> np.ndarray:
    """``ctx`` and all their ancestors, sorted (the root included): one vectorized step per level.

    A level's new parents are deduplicated without sorting (a stamp per context: the last writer of a
    duplicated index keeps it); the single sort is at the end.
    """
    parent = tree.parent
    mark = tree.mark()
    stamp = tree.stamp()
    frontier = np.unique(ctx)
    mark[frontier] = True
    parts = [frontier]
    while len(frontier):
        up = parent[frontier]
        up = up[up >= 0]
        up = up[~mark[up]]
        pos = np.arange(len(up))
        stamp[up] = pos
        up = up[stamp[up] == pos]
        mark[up] = True
        parts.append(up)
        frontier = up
    out = np.concatenate(parts)
    mark[out] = False
    out.sort()
    return out


def _sum_points(ctx: np.ndarray, metric: np.ndarray, value: np.ndarray, n_ctx: int
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct (metric, context) points sorted by metric then context, duplicates summed in order."""
    key = metric * n_ctx + ctx
    order = np.argsort(key, kind="stable")
    key = key[order]
    first = np.empty(len(key), bool)
    first[:1] = True
    np.not_equal(key[1:], key[:-1], out=first[1:])
    group = np.cumsum(first) - 1
    sums = np.bincount(group, weights=value[order]) if len(key) else np.zeros(0)
    uk = key[first]
    return uk // n_ctx, uk % n_ctx, sums


#: Bound on the (context, metric) queries handled at once (memory: about 80 bytes each).
QUERY_CHUNK = 1 << 21


def propagate(ctx: np.ndarray, metric: np.ndarray, value: np.ndarray, tree: TreeArrays) -> Propagated:
    """Propagate point values ``(ctx, metric, value)`` (duplicates are summed, in the given order)."""
    n_ctx = len(tree.parent)
    pm, pc, pv = _sum_points(np.asarray(ctx, np.int64), np.asarray(metric, np.int64),
                             np.asarray(value, np.float64), n_ctx)
    rows = closure(pc, tree) if len(pc) else np.zeros(0, np.int64)
    mets = np.unique(pm)
    step = max(1, QUERY_CHUNK // max(1, len(rows)))
    parts = [_propagate_metrics(rows, mets[i:i + step], pm, pc, pv, tree) for i in range(0, len(mets), step)]
    if len(parts) == 1:
        return parts[0]
    if not parts:
        z = np.zeros(0, np.int64)
        f = np.zeros(0)
        return Propagated(z, z, f, f, f, f, f, np.zeros(0, bool))
    cols = [np.concatenate([getattr(p, name) for p in parts]) for name in Propagated.__dataclass_fields__]
    out = Propagated(*cols)
    order = np.lexsort((out.metric, out.ctx))
    return Propagated(*(getattr(out, name)[order] for name in Propagated.__dataclass_fields__))


def _propagate_metrics(rows: np.ndarray, mets: np.ndarray, pm: np.ndarray, pc: np.ndarray, pv: np.ndarray,
                       tree: TreeArrays) -> Propagated:
    """Propagation of the metrics ``mets`` over the closure ``rows`` (points sorted by (metric, context))."""
    n_ctx = len(tree.parent)
    k, m = len(rows), len(mets)
    # Every (closure context, metric) pair: its points are the keys in [metric*N + c, metric*N + end[c]).
    pkey = pm * n_ctx + pc
    qc = np.repeat(rows, m)
    qm = np.tile(mets, k)
    base = qm * n_ctx
    lo = np.searchsorted(pkey, base + qc)
    hi = np.searchsorted(pkey, base + tree.end[qc])
    present = hi > lo
    qc, qm, lo, hi, base = qc[present], qm[present], lo[present], hi[present], base[present]
    n = len(qc)
    length = hi - lo
    starts = np.cumsum(length) - length
    total = int(length.sum())
    owner = np.repeat(np.arange(n), length)
    member = np.arange(total) - np.repeat(starts, length) + np.repeat(lo, length)
    vals = pv[member]
    mctx = pc[member]
    octx = qc[owner]
    execution = np.bincount(owner, weights=vals, minlength=n)
    same_fn = tree.call_root[mctx] == tree.call_root[octx]
    function = np.bincount(owner[same_fn], weights=vals[same_fn], minlength=n)
    same_block = tree.block_root[mctx] == tree.block_root[octx]
    noloops = np.bincount(owner[same_block], weights=vals[same_block], minlength=n)
    own = pkey[np.minimum(lo, len(pkey) - 1)] == base + qc if len(pkey) else np.zeros(0, bool)
    point = np.where(own, pv[np.minimum(lo, max(len(pv) - 1, 0))] if len(pv) else 0.0, 0.0)
    loop = tree.is_loop[qc]
    lex_aware = np.where(loop & own, noloops, function)
    aside = loop & ~own & (noloops != function)
    return Propagated(qc, qm, point, function, lex_aware, execution, noloops, aside)
