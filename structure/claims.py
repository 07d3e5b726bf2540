"""First claim wins: of address ranges in document order, those that overlap nothing kept before them.

A structure file may give one address to several statements (hpcstruct's output overlaps where inlined code
and its call site share bytes); like hpcprof, the first in document order keeps it. The slow path of
:meth:`hpcsa.structure.model.Module.leaf_map`, kept apart because it must stay sub-quadratic on adversarial
orders (every range claimed through a chunked sorted list).
"""

from __future__ import annotations

import bisect

import numpy as np

from hpcsa.arrays import run_starts

#: Clusters of at most this many ranges are settled in vectorized rounds (at most this many); larger ones
#: claim one range at a time through a :class:`ClaimSet`.
SMALL_CLUSTER = 64


def first_claims(r: np.ndarray, work: list[int] | None = None, order: np.ndarray | None = None) -> np.ndarray:
    """Keep, in document order, the ranges that overlap nothing kept before them; sorted by start.

    Ranges are grouped into clusters of transitively overlapping ranges (a sweep over the ranges sorted
    by start, ``order`` when the caller has it); a range alone in its cluster overlaps nothing and is kept.
    A small cluster is settled in rounds, all small clusters at once: each round keeps the earliest range
    left in every cluster and drops those of its cluster that overlap it (real files have clusters of 2-4
    ranges). A large one goes through the greedy pass, whose kept set lives in a chunked sorted list
    (:class:`ClaimSet`), so each claim costs O(log n + chunk) whatever the order of the input. ``work``, when
    given, accumulates the elements moved by insertions (tests compare it across input sizes).
    """
    n = len(r)
    lo, hi = r["lo"], r["hi"]
    if order is None:
        order = np.argsort(lo, kind="stable")
    new_cluster = np.ones(n, dtype=bool)
    if n > 1:
        reach = np.maximum.accumulate(hi[order])
        new_cluster[1:] = lo[order[1:]] >= reach[:-1]
        del reach
    cluster = np.cumsum(new_cluster) - 1
    del new_cluster
    size = np.bincount(cluster)[cluster]
    keep = np.zeros(n, bool)
    keep[order[size == 1]] = True
    small = (size > 1) & (size <= SMALL_CLUSTER)
    if small.any():
        keep[_settle_small(order[small], cluster[small], lo, hi)] = True
    large = np.sort(order[size > SMALL_CLUSTER])
    if len(large):
        claims = ClaimSet()
        won = [i for i, a, b in zip(large.tolist(), lo[large].tolist(), hi[large].tolist(), strict=True)
               if claims.claim(a, b)]
        keep[np.array(won, dtype=np.int64)] = True
        if work is not None:
            work[0] += claims.moved
    return r[order[keep[order]]]  # kept ranges are disjoint: no two share a start, so any sort is this one


def _settle_small(rows: np.ndarray, cluster: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The first claims among ``rows`` (range indexes, document order) of small clusters, in rounds."""
    by = np.lexsort((rows, cluster))
    rows, cluster = rows[by], cluster[by]
    rlo, rhi = lo[rows], hi[rows]
    left = np.ones(len(rows), bool)
    won = []
    while left.any():
        at = np.flatnonzero(left)
        first = run_starts(cluster[at])  # the earliest range left in each cluster: it overlaps no claim
        pick = at[first]
        won.append(rows[pick])
        its_pick = pick[np.cumsum(first) - 1]
        clash = (rlo[at] < rhi[its_pick]) & (rlo[its_pick] < rhi[at])
        left[at[clash]] = False
        left[pick] = False
    return np.concatenate(won)


class ClaimSet:
    """Disjoint half-open ranges in a sorted list of chunks (each at most ``2 * CHUNK`` long): finding the
    neighbours of an address is two bisections, inserting moves at most one chunk's elements."""

    CHUNK = 256

    def __init__(self) -> None:
        self.firsts: list[int] = []        # start of each chunk's first range
        self.starts: list[list[int]] = []
        self.ends: list[list[int]] = []
        self.moved = 0

    def claim(self, lo: int, hi: int) -> bool:
        """Add [lo, hi) unless it overlaps a range already held; True if added."""
        if not self.firsts:
            self.firsts.append(lo)
            self.starts.append([lo])
            self.ends.append([hi])
            return True
        c = max(bisect.bisect_right(self.firsts, lo) - 1, 0)
        starts, ends = self.starts[c], self.ends[c]
        j = bisect.bisect_right(starts, lo)
        if j > 0 and ends[j - 1] > lo:
            return False
        if j < len(starts):
            if starts[j] < hi:
                return False
        elif c + 1 < len(self.firsts) and self.firsts[c + 1] < hi:
            return False
        self.moved += len(starts) - j
        starts.insert(j, lo)
        ends.insert(j, hi)
        if j == 0:
            self.firsts[c] = lo
        if len(starts) > 2 * self.CHUNK:
            half = len(starts) // 2
            self.starts[c:c + 1] = [starts[:half], starts[half:]]
            self.ends[c:c + 1] = [ends[:half], ends[half:]]
            self.firsts.insert(c + 1, starts[half])
            self.moved += len(starts) + len(self.firsts)
        return True
