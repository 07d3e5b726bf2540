"""Class 1: one profile's point values propagated into hpcprof's four scopes.

For every context on a path from the root to a context with values (the
*closure*) and every metric with a value in its subtree (hpcprof's per-thread
finalization, ``PerThreadTemporary::finalize`` in HPCToolkit's sources):

- ``point``: the value measured at the context;
- ``execution``: the whole subtree;
- ``function``: the subtree without crossing a call or inlined-call edge;
- ``lex_aware``: like function, but a loop does not take in nested loops.

hpcprof has a quirk this reproduces: its per-thread accumulator for a metric
is flagged as a loop only when the loop context had a value of its own, so a
loop without one reports ``function`` as its thread ``lex_aware`` value, while
the summary statistics use the loop-free sum. The loop-free sum of such loops
is kept aside (``aside`` of :class:`Propagated`) for the summary.

Ids are pre-order, so the subtree of context ``c`` is the id range
``c .. end[c]``: with the points sorted by (profile, metric, context), each
(profile, context, metric) triple finds its points with two binary searches,
and one gather plus ``np.bincount`` sums them all (sequentially per triple: no
cancellation, no loop over depth levels). Many profiles are propagated
together (a batch): the per-call costs of numpy are paid once per batch, and
every profile's sums are the same as alone (its points keep their order).
A point ``d`` belongs to the function scope of its ancestor ``c`` when no call
lies between them, i.e. when both have the same nearest call-entered ancestor
(``call_root``); to the loop-free sum when both have the same nearest
call-entered or loop ancestor (``block_root``).

:func:`propagate` is hpcprof's rule, which ``hpcsa prof`` writes.
:func:`propagate_scopes` is the same propagation under a :class:`ScopeRule`,
whose choices may depart from it (``hpcsa blame``'s do): what a loop without a
value of its own reports as lex_aware, contexts that keep point and execution
only, and the order a sum takes its terms in.
"""

from __future__ import annotations

import numpy as np

from hpcsa.core.arrays import sorted_unique
from hpcsa.core.dataclass import dataclass


@dataclass
class TreeArrays:
    """What propagation needs of the unified tree, by canonical (pre-order) id."""

    parent: np.ndarray      # int64, -1 for the root
    end: np.ndarray         # int64: the subtree of c is c .. end[c]-1
    call_root: np.ndarray   # int64: nearest ancestor-or-self entered by a call (0: the root)
    block_root: np.ndarray  # int64: nearest ancestor-or-self entered by a call or that is a loop
    is_loop: np.ndarray     # bool

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


@dataclass
class Propagated:
    """Propagated values, one row per (profile, context, metric) present, sorted by (profile, context, metric)."""

    ctx: np.ndarray        # int64
    metric: np.ndarray     # int64
    point: np.ndarray
    function: np.ndarray
    lex_aware: np.ndarray  # as hpcprof writes it per thread
    execution: np.ndarray
    noloops: np.ndarray    # loop-free sums
    aside: np.ndarray      # bool: a loop without a value of its own whose loop-free sum differs
    prof: np.ndarray       # int64: the profile (of a batch) of each row


@dataclass(frozen=True, eq=False)
class ScopeRule:
    """The choices of a propagation that may depart from hpcprof's (the defaults are hpcprof's).

    ``loops_need_own_value``: hpcprof flags a loop's per-thread accumulator as a loop only when the loop
    had a value of its own (``PerThreadTemporary::finalize`` sets ``isLoop`` on the metrics a context holds
    before it pulls in its children's), so a loop without one reports its function value as its thread
    lex_aware value, and its databases hold exactly that; its summary statistics take the loop-free sum
    (``aside`` of :class:`Propagated`). False: every loop reports its loop-free sum, the definition of lex_aware.

    ``execution_only``: a bool per context, or None: those contexts keep point and execution only, with
    function and lex_aware zero (``hpcsa blame`` keeps the global root and the entry points so).

    ``sum_rank``: an int per context, or None: the order a sum takes its terms in. None: by id (the
    subtree's pre-order), one after the other. Else by this rank (ties by id), added as ``np.add.reduceat``
    adds (numpy's pairwise summation): the same values to a few units in the last place, not the same bits.
    """

    loops_need_own_value: bool = True
    execution_only: np.ndarray | None = None
    sum_rank: np.ndarray | None = None


#: hpcprof's rule.
HPCPROF_RULE = ScopeRule()


def closure(ctx: np.ndarray, tree: TreeArrays, prof: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``ctx`` and all their ancestors (the root included), per profile ``prof``: (profile, context) sorted.

    Ids are pre-order, so for the distinct contexts ``s1 < s2 < ...`` of a profile, the ancestors of ``sk``
    that no earlier context has are exactly those with an id above ``s(k-1)``: each walk up stops at the
    first ancestor at or below the previous context, and the walks never meet (no deduplication, no
    scratch array over the tree). The work is the closure's size; one vectorized step per level of the
    longest walk, for all profiles of a batch together.
    """
    n = len(tree.parent)
    prof = np.zeros(len(ctx), np.int64) if prof is None else prof
    key = sorted_unique(prof * n + ctx)
    b = key // n
    c = key - b * n
    prev = np.full(len(c), -1, np.int64)
    if len(c) > 1:
        prev[1:] = np.where(b[1:] == b[:-1], c[:-1], -1)
    parent = tree.parent
    parts = [key]
    while len(c):
        up = parent[c]
        go = up > prev
        c, b, prev = up[go], b[go], prev[go]
        parts.append(b * n + c)
    out = np.concatenate(parts)
    out.sort(kind="stable")  # distinct keys, in runs: the stable sort (timsort) finds them
    ob = out // n
    return ob, out - ob * n


def _sum_points(prof: np.ndarray, ctx: np.ndarray, metric: np.ndarray, value: np.ndarray, n_ctx: int,
                n_met: int) -> tuple[np.ndarray, np.ndarray]:
    """Distinct (profile, metric, context) points as keys ``(prof * n_met + metric) * n_ctx + ctx``, sorted,
    and their values (duplicates summed in order)."""
    key = (prof * n_met + metric) * n_ctx + ctx
    order = np.argsort(key, kind="stable")
    key = key[order]
    first = np.empty(len(key), bool)
    first[:1] = True
    np.not_equal(key[1:], key[:-1], out=first[1:])
    group = np.cumsum(first) - 1
    sums = np.bincount(group, weights=value[order]) if len(key) else np.zeros(0)
    return key[first], sums


#: Bound on the (profile, context, metric) queries handled at once (memory: about 80 bytes each).
QUERY_CHUNK = 1 << 21


def key_space(n_met: int, n_ctx: int) -> int:
    """How many profiles one :func:`propagate` call may take (its keys stay in int64)."""
    return max(1, (1 << 62) // max(1, n_met * n_ctx))


def propagate(ctx: np.ndarray, metric: np.ndarray, value: np.ndarray, tree: TreeArrays,
              prof: np.ndarray | None = None) -> Propagated:
    """Propagate point values ``(ctx, metric, value)`` of the profiles ``prof`` (default: all of one
    profile; duplicates are summed, in the given order) by hpcprof's rule. Rows come sorted by (profile,
    context, metric)."""
    return propagate_scopes(ctx, metric, value, tree, prof, HPCPROF_RULE)


def propagate_scopes(ctx: np.ndarray, metric: np.ndarray, value: np.ndarray, tree: TreeArrays,
                     prof: np.ndarray | None = None, rule: ScopeRule = HPCPROF_RULE) -> Propagated:
    """:func:`propagate` under ``rule``."""
    n_ctx = len(tree.parent)
    ctx = np.asarray(ctx, np.int64)
    metric = np.asarray(metric, np.int64)
    prof = np.zeros(len(ctx), np.int64) if prof is None else np.asarray(prof, np.int64)
    n_met = int(metric.max()) + 1 if len(metric) else 1
    if len(prof) and int(prof.max()) >= key_space(n_met, n_ctx):
        raise ValueError("too many profiles for one propagation: split the batch (see key_space)")
    pkey, pv = _sum_points(prof, ctx, metric, np.asarray(value, np.float64), n_ctx, n_met)
    pbm = pkey // n_ctx
    pc = pkey - pbm * n_ctx
    rb, rc = closure(pc, tree, pbm // n_met) if len(pc) else (np.zeros(0, np.int64), np.zeros(0, np.int64))
    # The metrics of each profile: runs of (profile, metric) among the sorted points.
    bm = sorted_unique(pbm)
    mb = bm // n_met
    mcut = np.searchsorted(mb, np.arange(int(rb.max()) + 2 if len(rb) else 1))
    n_of = np.diff(mcut)[rb] if len(rb) else np.zeros(0, np.int64)  # queries per closure row
    ends = np.cumsum(n_of)
    cuts = np.searchsorted(ends, np.arange(QUERY_CHUNK, int(ends[-1]) if len(ends) else 0, QUERY_CHUNK),
                           side="right")
    bounds = [0, *cuts.tolist(), len(rb)]
    parts = [_propagate_rows(rb[a:b], rc[a:b], n_of[a:b], mcut[rb[a:b]], bm,
                             pkey, pv, tree, n_met, rule) for a, b in zip(bounds[:-1], bounds[1:], strict=True) if b > a]
    if len(parts) == 1:
        return parts[0]
    if not parts:
        z = np.zeros(0, np.int64)
        f = np.zeros(0)
        return Propagated(z, z, f, f, f, f, f, np.zeros(0, bool), z)
    return Propagated(*(np.concatenate([getattr(p, name) for p in parts]) for name in Propagated.__dataclass_fields__))


def _ranked_sums(owner: np.ndarray, vals: np.ndarray, rank: np.ndarray, n: int,
                 subsets: tuple[np.ndarray, ...]) -> list[np.ndarray]:
    """Per owner ``0 .. n-1``: the sum of its ``vals``, then of those each mask of ``subsets`` keeps, every sum
    taking its terms in ``rank`` order as ``np.add.reduceat`` adds them."""
    if not len(owner):
        return [np.zeros(n) for _ in range(1 + len(subsets))]
    # (owner, rank) as one key: the owners' runs are already in order, so a stable sort of it is fast
    order = np.argsort(owner * (int(rank.max()) + 1) + rank, kind="stable")
    owner, vals = owner[order], vals[order]
    out = []
    for keep in (None, *subsets):
        who, terms = (owner, vals) if keep is None else (owner[keep[order]], vals[keep[order]])
        sums = np.zeros(n)
        if len(who):
            starts = np.flatnonzero(np.r_[True, who[1:] != who[:-1]])
            sums[who[starts]] = np.add.reduceat(terms, starts)
        out.append(sums)
    return out


def _propagate_rows(rb: np.ndarray, rc: np.ndarray, n_of: np.ndarray, first_at: np.ndarray, bm: np.ndarray,
                    pkey: np.ndarray, pv: np.ndarray, tree: TreeArrays, n_met: int, rule: ScopeRule) -> Propagated:
    """Propagation at the closure rows ``(rb, rc)``, each with the ``n_of`` metrics of its profile (its
    (profile, metric) keys ``bm[first_at ...]``)."""
    n_ctx = len(tree.parent)
    # Every (closure context, metric) pair: its points are the keys in [bm*N + c, bm*N + end[c]).
    total_q = int(n_of.sum())
    row = np.repeat(np.arange(len(rb)), n_of)
    j = np.arange(total_q) - np.repeat(np.cumsum(n_of) - n_of, n_of)
    qbm = bm[np.repeat(first_at, n_of) + j]
    qc = rc[row]
    qb = rb[row]
    base = qbm * n_ctx
    lo = np.searchsorted(pkey, base + qc)
    hi = np.searchsorted(pkey, base + tree.end[qc])
    present = hi > lo
    if not present.all():
        qc, qb, qbm, lo, hi, base = qc[present], qb[present], qbm[present], lo[present], hi[present], base[present]
    qm = qbm - qb * n_met
    n = len(qc)
    length = hi - lo
    starts = np.cumsum(length) - length
    total = int(length.sum())
    owner = np.repeat(np.arange(n), length)
    member = np.arange(total) - np.repeat(starts, length) + np.repeat(lo, length)
    vals = pv[member]
    mctx = pkey[member] % n_ctx
    octx = qc[owner]
    same_fn = tree.call_root[mctx] == tree.call_root[octx]
    same_block = tree.block_root[mctx] == tree.block_root[octx]
    if rule.sum_rank is None:
        execution = np.bincount(owner, weights=vals, minlength=n)
        function = np.bincount(owner[same_fn], weights=vals[same_fn], minlength=n)
        noloops = np.bincount(owner[same_block], weights=vals[same_block], minlength=n)
    else:
        execution, function, noloops = _ranked_sums(owner, vals, rule.sum_rank[mctx], n, (same_fn, same_block))
    own = pkey[np.minimum(lo, len(pkey) - 1)] == base + qc if len(pkey) else np.zeros(0, bool)
    point = np.where(own, pv[np.minimum(lo, max(len(pv) - 1, 0))] if len(pv) else 0.0, 0.0)
    loop = tree.is_loop[qc]
    flagged = loop & own if rule.loops_need_own_value else loop
    lex_aware = np.where(flagged, noloops, function)
    aside = loop & ~flagged & (noloops != function)
    if rule.execution_only is not None:
        keep = ~rule.execution_only[qc]
        function, lex_aware, noloops = (np.where(keep, x, 0.0) for x in (function, lex_aware, noloops))
        aside &= keep
    return Propagated(qc, qm, point, function, lex_aware, execution, noloops, aside, qb)
