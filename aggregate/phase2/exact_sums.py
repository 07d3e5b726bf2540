"""Phase 2's propagation (:func:`hpcsa.formats.db.propagate.propagate`), with the sums of metrics whose values are
whole numbers taken from prefix sums.

hpcprof's propagation sums each context's subtree one value after the other (:mod:`hpcsa.formats.db.propagate`
does it in id order, and its databases hold exactly those floating-point sums). When every value of a
metric is a whole number and the magnitudes of a batch's values of it add up to less than 2**53, every
partial sum of them is a whole number that a double holds exactly, so every order of summing gives the same
bits; then a subtree's sum is the difference of two prefix sums over the contexts in pre-order (a subtree is
an id range), and a function's (or a loop-free block's) the difference of two prefix sums over the contexts
sorted by their nearest call-entered (or call- or loop-entered) ancestor. GPU metrics are counts (samples,
instructions, bytes), and their values far outnumber a CPU run's: for them the whole batch is a few
cumulative sums over a dense [series, contexts] matrix instead of a gather of every value for each of its
ancestors. So do the series (profile, metric) of any metric that have a single point, finite and not zero
(each of their sums is that value or nothing), where they are all that is left: the general propagation is
then not called. Where the dense matrix would be large for the points it takes (a tree of many contexts, few
points), the general propagation takes the whole batch. Every other point goes through
:func:`~hpcsa.formats.db.propagate.propagate`; the rows of both are merged in its order, (profile, context,
metric), with the same fields. A dense block's rows come in that order; the blocks hold whole profiles where
they can, and their rows are sorted together where a profile's series fill more than one.
"""

from __future__ import annotations

from bisect import bisect_right

import numpy as np

from hpcsa.core.arrays import run_starts
from hpcsa.formats.db.propagate import Propagated, TreeArrays, propagate

#: Largest dense [series, contexts] matrix worked on at once (cells; some 50 bytes each).
DENSE_CELLS = 1 << 19
#: Magnitude below which every sum of whole numbers is exact in a double.
EXACT = float(2**53)
#: The dense matrix pays where its cells (series times contexts) are at most DENSE_FREE plus DENSE_PER_POINT
#: per point it takes; else the batch goes to the general propagation, whose work grows with the points (and
#: their depth), not the tree. Measured on every real measurement's batches (dense and general sums timed
#: alike): the general sums are the faster from some 50-60 cells a point (a cell costs some 30 ns, more in
#: large trees), the dense ones below, and for small matrices whatever the ratio (fewer numpy calls).
DENSE_PER_POINT = 48
DENSE_FREE = 1 << 14


def propagate_batch(ctx: np.ndarray, metric: np.ndarray, value: np.ndarray, tree: TreeArrays, prof: np.ndarray
                    ) -> Propagated:
    """:func:`~hpcsa.formats.db.propagate.propagate` of a batch's point values, the same rows and bits."""
    ctx = np.asarray(ctx, np.int64)
    metric = np.asarray(metric, np.int64)
    value = np.asarray(value, np.float64)
    prof = np.asarray(prof, np.int64)
    n_ctx = len(tree.parent)
    if not len(value) or n_ctx * 2 > DENSE_CELLS:
        return propagate(ctx, metric, value, tree, prof)
    n_met = int(metric.max()) + 1
    whole = (value == np.rint(value)) & (value != 0)  # (a zero, +0 or -0, is left to the general sums)
    # per metric (bincount adds in the order given, as np.add.at does, and several times faster)
    bad = np.bincount(metric, weights=~whole, minlength=n_met) > 0
    mass = np.bincount(metric, weights=np.abs(np.where(whole, value, 0.0)), minlength=n_met)
    exact_metric = ~bad & (mass < EXACT)
    exact = exact_metric[metric]
    rest = int(len(exact) - np.count_nonzero(exact))
    if rest and rest * n_ctx <= DENSE_FREE + DENSE_PER_POINT * len(value) and (
            _lone(prof, metric, value, ~exact, n_met).sum() == rest):
        exact[:] = True  # the rest are one-point series (as many series as points): no general propagation
    if not exact.any():
        return propagate(ctx, metric, value, tree, prof)
    series, sid = _series(prof[exact] * n_met + metric[exact])
    if len(series) * n_ctx > DENSE_FREE + DENSE_PER_POINT * len(sid):
        return propagate(ctx, metric, value, tree, prof)  # a large tree and few points
    parts = [_dense(series, sid, ctx[exact], value[exact], n_met, tree)]
    if not exact.all():
        rest = ~exact
        parts.append(propagate(ctx[rest], metric[rest], value[rest], tree, prof[rest]))
    return _merged(parts)


def _merged(parts: list[Propagated]) -> Propagated:
    if len(parts) == 1:
        return parts[0]
    fields = Propagated.__dataclass_fields__
    joined = {name: np.concatenate([getattr(p, name) for p in parts]) for name in fields}
    prof, ctx, metric = joined["prof"], joined["ctx"], joined["metric"]
    n_ctx, n_met = (int(ctx.max()) + 1, int(metric.max()) + 1) if len(ctx) else (1, 1)
    if not len(ctx) or int(prof.max()) < (1 << 62) // (n_ctx * n_met):
        # one key: each part is sorted by it, so the stable sort (timsort) merges the parts' runs
        order = np.argsort((prof * n_ctx + ctx) * n_met + metric, kind="stable")
    else:
        order = np.lexsort((metric, ctx, prof))
    return Propagated(**{name: a[order] for name, a in joined.items()})


_ORDERS: dict[int, tuple[TreeArrays, tuple[np.ndarray, ...]]] = {}


def _orders(tree: TreeArrays) -> tuple[np.ndarray, ...]:
    """Per tree: the contexts sorted by (nearest call-entered ancestor, id) and by (nearest call- or loop-entered
    ancestor, id), and where each context's function (block) part of its subtree begins and ends in them."""
    got = _ORDERS.get(id(tree))
    if got is not None and got[0] is tree:
        return got[1]
    n = len(tree.parent)
    ids = np.arange(n, dtype=np.int64)
    out: list[np.ndarray] = []
    for root in (tree.call_root, tree.block_root):
        perm = np.lexsort((ids, root))
        key = root[perm] * n + perm
        out += [perm, np.searchsorted(key, root * n + ids), np.searchsorted(key, root * n + tree.end)]
    if len(_ORDERS) > 8:
        _ORDERS.clear()
    _ORDERS[id(tree)] = (tree, tuple(out))
    return tuple(out)


def _dense(series: np.ndarray, sid: np.ndarray, ctx: np.ndarray, value: np.ndarray, n_met: int, tree: TreeArrays
           ) -> Propagated:
    """The propagation of whole-number series (exact sums), a dense [series, contexts] matrix at a time: the
    distinct series (profile * n_met + metric, sorted) and each point's index in them, ``sid``."""
    n_ctx = len(tree.parent)
    cuts, whole_profiles = _blocks(series // n_met, max(1, DENSE_CELLS // n_ctx))
    if len(cuts) == 2:
        return _dense_block(sid, ctx, value, series, n_met, tree)
    # the points by block: one stable sort (a series' points keep their order), not a pass over all per block
    order = np.argsort(sid, kind="stable")
    sid, ctx, value = sid[order], ctx[order], value[order]
    at = np.searchsorted(sid, cuts).tolist()
    parts = [_dense_block(sid[i:j] - a, ctx[i:j], value[i:j], series[a:b], n_met, tree)
             for a, b, i, j in zip(cuts[:-1], cuts[1:], at[:-1], at[1:], strict=True)]
    if not whole_profiles:  # a profile's rows in two blocks: each sorted, together not
        return _merged(parts)
    return Propagated(*(np.concatenate([getattr(p, name) for p in parts]) for name in Propagated.__dataclass_fields__))


def _blocks(sprof: np.ndarray, step: int) -> tuple[list[int], bool]:
    """Where the dense blocks of the series (whose profiles are ``sprof``, sorted) begin and end: at most
    ``step`` series each, cut between two profiles where one fits. A block's rows come by (profile, context,
    metric), and when no profile is cut in two, so do the blocks' rows one after the other; a profile whose
    series are more than ``step`` is cut (the second bool: False), and the blocks' rows must then be sorted."""
    n = len(sprof)
    if n <= step:
        return [0, n], True
    starts = np.append(np.flatnonzero(run_starts(sprof)), n).tolist()
    cuts, whole, k = [0], True, 0
    while cuts[-1] < n:  # one step per block
        a = cuts[-1]
        k = bisect_right(starts, a + step, k) - 1  # the last profile boundary within reach
        if starts[k] > a:
            cuts.append(starts[k])
        else:  # one profile fills more than a block
            cuts.append(min(a + step, n))
            whole = False
    return cuts, whole


def _lone(prof: np.ndarray, metric: np.ndarray, value: np.ndarray, rest: np.ndarray, n_met: int) -> np.ndarray:
    """Which of the points ``rest`` (of metrics that are not whole numbers) are the only point of their series
    (profile, metric), finite and not zero: each sum of such a series is that value or nothing (an empty sum,
    or a prefix sum less itself: +0), exact in any order, so the prefix sums give the general sums' bits too.
    A GPU stream's CPU time is one such point per profile: the general propagation, about a millisecond of
    numpy calls a batch, is then not called at all."""
    out = np.zeros(len(value), bool)
    at = np.flatnonzero(rest)
    _, sid = _series(prof[at] * n_met + metric[at])
    single = np.bincount(sid)[sid] == 1
    v = value[at]
    out[at[single & np.isfinite(v) & (v != 0)]] = True
    return out


def _series(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(key, return_inverse=True)`` of non-negative keys: through a table of the keys present where
    their range is at most a few times their number (a batch's (profile, metric) keys: its profiles times
    the metrics), which costs a few passes instead of a sort; else by ``np.unique``."""
    top = int(key.max()) + 1 if len(key) else 0
    if top > 4 * len(key) + 4096 or (len(key) and int(key.min()) < 0):
        return np.unique(key, return_inverse=True)
    seen = np.zeros(top, bool)
    seen[key] = True
    rank = np.cumsum(seen) - 1
    return np.flatnonzero(seen), rank[key]


def _dense_block(sid: np.ndarray, ctx: np.ndarray, value: np.ndarray, series: np.ndarray, n_met: int,
                 tree: TreeArrays) -> Propagated:
    """Rows of series ``series`` (profile * n_met + metric), sorted by (profile, context, metric)."""
    n_ctx = len(tree.parent)
    s = len(series)
    cell = sid * n_ctx + ctx
    # duplicates summed (whole numbers: in any order), by bincount (np.add.at is several times slower)
    points = np.bincount(cell, weights=value, minlength=s * n_ctx).reshape(s, n_ctx)
    owned_cells = np.zeros(s * n_ctx, bool)
    owned_cells[cell] = True
    own = owned_cells.reshape(s, n_ctx)
    end = tree.end

    def prefix(matrix: np.ndarray) -> np.ndarray:
        """Each row's prefix sums over the contexts in the matrix's column order, a zero first: a subtree's
        (function's, block's) sum is the difference of two of them."""
        csum = np.zeros((s, n_ctx + 1), matrix.dtype if matrix.dtype != bool else np.int64)
        np.cumsum(matrix, axis=1, out=csum[:, 1:])
        return csum

    owned = prefix(own)
    present = np.take(owned, end, axis=1) > owned[:, :-1]  # some point in the subtree
    del owned
    # (series, context): (profile, metric, context); the matrices are read flat below (1-d takes, not 2-d indexing)
    rows, cols = np.divmod(np.flatnonzero(present), n_ctx)
    b = series[rows] // n_met
    m = series[rows] - b * n_met
    order = np.argsort(b * n_ctx + cols, kind="stable")  # rows come by (b, m, context): m stays in order
    rows, cols, b, m = rows[order], cols[order], b[order], m[order]
    # the sums at the rows kept only (a subtree, function or block sum per row, not per cell of the matrix)
    fperm, flo, fhi, bperm, blo, bhi = _orders(tree)
    base = rows * (n_ctx + 1)  # each row's prefix sums, flat
    at = prefix(points).reshape(-1)
    execution = at[base + end[cols]] - at[base + cols]
    at = prefix(np.take(points, fperm, axis=1)).reshape(-1)
    fn = at[base + fhi[cols]] - at[base + flo[cols]]
    at = prefix(np.take(points, bperm, axis=1)).reshape(-1)
    nl = at[base + bhi[cols]] - at[base + blo[cols]]
    del at
    cell = rows * n_ctx + cols
    is_own = owned_cells[cell]
    point = np.where(is_own, points.reshape(-1)[cell], 0.0)
    loop = tree.is_loop[cols]
    flagged = loop & is_own
    return Propagated(cols.astype(np.int64), m, point, fn, np.where(flagged, nl, fn), execution, nl,
                      loop & ~flagged & (nl != fn), b)
