"""First claim wins: of address ranges in document order, those that overlap nothing kept before them.

A structure file may give one address to several statements (hpcstruct's output overlaps where inlined code
and its call site share bytes); like hpcprof, the first in document order keeps it. The slow path of
:meth:`hpcsa.structure.model.Module.leaf_map`, kept apart because it must stay sub-quadratic on adversarial
orders (every range claimed through a chunked sorted list).
"""

from __future__ import annotations

import bisect

import numpy as np


def first_claims(r: np.ndarray, work: list[int] | None = None) -> np.ndarray:
    """Keep, in document order, the ranges that
    overlap nothing kept before them.

    Ranges are grouped into clusters of transitively overlapping ranges (a sweep over the ranges sorted
    by start); a range alone in its cluster overlaps nothing and is kept. Only the contested ranges go
    through the greedy pass, whose kept set lives in a chunked sorted list (:class:`ClaimSet`), so each
    claim costs O(log n + chunk) whatever the order of the input. ``work``, when given, accumulates the
    elements moved by insertions (tests compare it across input sizes).
    """
    n = len(r)
    lo, hi = r["lo"], r["hi"]
    order = np.argsort(lo, kind="stable")
    slo, shi = lo[order], hi[order]
    new_cluster = np.ones(n, dtype=bool)
    if n > 1:
        new_cluster[1:] = slo[1:] >= np.maximum.accumulate(shi)[:-1]
    cluster = np.cumsum(new_cluster) - 1
    alone = np.bincount(cluster)[cluster] == 1
    kept = [order[alone]]
    contested = np.sort(order[~alone])
    claims = ClaimSet()
    won = [i for i, a, b in zip(contested.tolist(), lo[contested].tolist(), hi[contested].tolist(), strict=True)
           if claims.claim(a, b)]
    if work is not None:
        work[0] += claims.moved
    kept.append(np.array(won, dtype=np.int64))
    idx = np.concatenate(kept)
    return r[idx[np.argsort(lo[idx], kind="stable")]]


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
