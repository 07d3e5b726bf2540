"""First claim wins: of address ranges in document order, those that overlap nothing kept before them.

A structure file may give one address to several statements (hpcstruct's output overlaps where inlined code
and its call site share bytes); like hpcprof, the first in document order keeps it. The statement map
(:meth:`hpcsa.formats.hpcstruct.model.Module.leaf_map`) is built here, a block of address-sorted ranges at a time
(:func:`claims_by_address`); contested ranges stay sub-quadratic on adversarial orders (every range claimed
through a chunked sorted list).
"""

from __future__ import annotations

import bisect

import numpy as np

from hpcsa.core.arrays import run_starts

#: Clusters of at most this many ranges are settled in vectorized rounds (at most this many); larger ones
#: claim one range at a time through a :class:`ClaimSet`.
SMALL_CLUSTER = 64


def first_claims(r: np.ndarray, work: list[int] | None = None) -> np.ndarray:
    """Keep, in document order, the ranges that overlap nothing kept before them; sorted by start.

    Ranges are grouped into clusters of transitively overlapping ranges (a sweep over the ranges sorted
    by start); a range alone in its cluster overlaps nothing and is kept.
    A small cluster is settled in rounds, all small clusters at once: each round keeps the earliest range
    left in every cluster and drops those of its cluster that overlap it (real files have clusters of 2-4
    ranges). A large one goes through the greedy pass, whose kept set lives in a chunked sorted list
    (:class:`ClaimSet`), so each claim costs O(log n + chunk) whatever the order of the input. ``work``, when
    given, accumulates the elements moved by insertions (tests compare it across input sizes).
    """
    n = len(r)
    lo, hi = r["lo"], r["hi"]
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


#: Candidate ranges examined at a time by :func:`claims_by_address` (a run of whole clusters is settled at once).
BLOCK = 1 << 13


def claims_by_address(ranges: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """:func:`first_claims` of ``ranges[rows]``, with ``rows`` given in address order (sorted by start; equal
    starts in document order), a block of rows at a time: clusters do not interact, so a run of whole
    clusters is settled on its own. A range alone in its cluster is kept as it is; only the ranges of
    clusters of several go through :func:`first_claims` (real files: 4 % of libc's). The temporaries are a
    block's, not the module's: libc's statement map took 12 MiB of memory at its peak when built at once, 6 by
    blocks. The result is preallocated for every candidate and filled in order (pages past what is kept are
    never touched)."""
    n = len(rows)
    out = np.empty(n, ranges.dtype)
    starts = np.ones(n + 1, bool)  # where a cluster starts (and one past the end)
    kept = 0
    settled = 0                    # the first position not yet settled (always a cluster's start)
    reach = np.uint64(0)           # the largest end among the positions looked at
    for at in range(0, n, BLOCK):
        block = rows[at:at + BLOCK]
        lo, hi = ranges["lo"][block], ranges["hi"][block]
        here = starts[at:at + len(block)]
        np.greater_equal(lo, np.maximum.accumulate(np.concatenate(([reach], hi[:-1])).astype(np.uint64)), out=here)
        reach = max(reach, np.uint64(hi.max()))
        if at + len(block) == n:
            cut = n
        else:  # up to the last cluster that starts in this block (it may go on in the next)
            firsts = np.flatnonzero(here)
            cut = at + int(firsts[-1]) if len(firsts) else settled
        if cut <= settled:
            continue
        run = rows[settled:cut]
        alone = starts[settled:cut] & starts[settled + 1:cut + 1]
        if alone.all():
            got = ranges[run]
        else:
            got = np.concatenate([ranges[run[alone]], first_claims(ranges[np.sort(run[~alone])])])
            got = got[np.argsort(got["lo"], kind="stable")]
        out[kept:kept + len(got)] = got
        kept += len(got)
        settled = cut
    return out[:kept]


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
