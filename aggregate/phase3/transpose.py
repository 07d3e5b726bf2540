"""Phase 3: cct.db by transposition of the profile blobs, and class 3 (summary statistics) on the way.

cct.db's layout is known before any of it is written (values and metrics
per context, counted in phase 2), so contexts are cut into ranges that can be
written independently (:mod:`.cctdb`). A range task gathers every profile's
values for its contexts, in profile order, writes the range's blocks, and —
since it then holds, for each (context, metric, scope), the values of all
profiles in canonical order — reduces them into the summary statistics
(sum, count, sum of squares, min, max → Sum, Mean, StdDev, CfVar, Min, Max;
:mod:`.phase3.summary`).
The reduction order is fixed by the data (profile order within each
context), never by how work was split, so the summary is bit-for-bit the same
for any number of workers or ranks.

The thread values hpcprof writes are enough for every statistic except two
things its summary also counts: the loop-free sum of loops without a value of
their own (hpcprof's thread ``lex_aware`` there is the plain function sum),
and presence without any stored value (the count of Mean/StdDev). Phase 2
wrote those in an "aside" blob per profile; they are merged in here, range by range.
"""

from __future__ import annotations

import os

import numpy as np

from hpcsa.aggregate.handoff import ASIDE, Placement
from hpcsa.aggregate.phase3.summary import StatPlan, summarize
from hpcsa.core.arrays import ramps
from hpcsa.core.dataclass import dataclass
from hpcsa.core.fileio import pwrite_all
from hpcsa.formats.db import cctdb
from hpcsa.formats.db.profiledb import CTX_INDEX, SZ_VALUE, VALUE, ctx_indices_at

#: Bytes of cct.db per range: fixed, so ranges do not depend on the number of workers; small, because a
#: range's gathered values and their sort take about 15 times its size in memory (at 4,096 profiles, 1 MiB
#: ranges made phase 3 the peak of the whole run; 256 KiB cost no measurable time).
RANGE_BYTES = 256 << 10
#: Bytes for the positions of window bounds in every profile's index, per pass over the windows (see
#: transpose_ranges): small enough to be lost in the rest (a pass costs one read per profile and round,
#: searched together: SEARCH_REGIONS). The bounds of the ranges inside a window are found in its entries.
POSITIONS_BYTES = 512 << 10
#: Bytes of cct.db whose values are read from the scratch file at once (a window of consecutive ranges): the
#: fewer reads per profile, the fewer system calls (there are two per profile and window); a window's bytes,
#: and about as much again for their decoded index entries, stay in memory while its ranges are cut from it.
#: 1 MiB: at 4,096 profiles 2 MiB took ~5 MiB more per process, for ~3 % less time at -j 1.
WINDOW_BYTES = 1 << 20
#: File regions (profiles' indexes, aside blobs) searched for range bounds at once: their records are in
#: memory together (at most a few hundred KiB).
SEARCH_REGIONS = 64
#: Slices read before they are joined into their buffer (see read_slices).
READ_GROUP = 256
#: Records read at least from a region when looking for range bounds.
MIN_READ = 64


def position_type(place: Placement) -> np.dtype:
    """The narrowest type for positions in the profiles' indexes and aside blobs: 16 bits where no profile has
    65,536 contexts or aside entries (twice the windows per pass in the same POSITIONS_BYTES), else 32."""
    most = max([int(place.n_ctxs.max(initial=0)), int(place.n_aside.max(initial=0))])
    return np.dtype(np.uint16) if most <= np.iinfo(np.uint16).max else np.dtype(np.uint32)


def bound_positions(fd: int, offsets: np.ndarray, counts: np.ndarray, rec: np.dtype, field: str,
                    bounds: np.ndarray, start: np.ndarray | None, share: float,
                    dtype: np.dtype | type = np.uint32) -> np.ndarray:
    """[regions, len(bounds)] positions of ``bounds`` among the records of each file region (``counts``
    records of type ``rec`` at ``offsets``, sorted by ``field``), reading each region only from ``start``
    (the positions of ``bounds[0]``, when known) to just past ``bounds[-1]``: a guess of ``share`` of the
    rest, 25 % more, then as much again, doubled, for the regions the guess fell short of.

    Regions are taken SEARCH_REGIONS at a time, each round reading one slice of every region still short
    (:func:`read_slices`) and counting, for all of them at once, the records below each bound."""
    bounds = np.asarray(bounds, np.int64)
    out = np.zeros((len(offsets), len(bounds)), dtype)  # (2 or 4 bytes) x regions x bounds: a pass of ranges
    size = rec.itemsize
    last = int(bounds[-1]) if len(bounds) else 0
    begin = np.zeros(len(offsets), np.int64) if start is None else start.astype(np.int64)
    counts = np.asarray(counts, np.int64)
    offsets = np.asarray(offsets, np.int64)
    for a in range(0, len(offsets), SEARCH_REGIONS):
        rows = np.arange(a, min(len(offsets), a + SEARCH_REGIONS))
        at = begin[rows].copy()  # the next record to read of each region
        below = np.zeros((len(rows), len(bounds)), np.int64)  # records read so far under each bound
        left = counts[rows] - at
        want = np.minimum(left, (left * share * 1.25).astype(np.int64) + MIN_READ)
        todo = np.flatnonzero(left > 0)
        while len(todo):
            w = want[todo]
            keys = np.frombuffer(read_slices(fd, offsets[rows[todo]] + at[todo] * size, w * size), rec)[field]
            seg = np.cumsum(w) - w  # where each region's records begin in ``keys``
            below[todo] += positions_in(keys, w, bounds)
            at[todo] += w
            left[todo] -= w
            ended = keys[seg + w - 1].astype(np.int64) >= last
            todo = todo[(left[todo] > 0) & ~ended]
            want[todo] = np.minimum(left[todo], 2 * want[todo])
        out[rows] = begin[rows, None] + below
    return out


def read_slices(fd: int, at: np.ndarray, nbytes: np.ndarray) -> np.ndarray:
    """The byte slices [at, at + nbytes) of a scratch file, one after the other (uint8): one ``pread`` each,
    joined READ_GROUP at a time into one buffer, and nothing else per slice (the callers decode the buffer in
    one go). A list of reads joined is faster in Python than ``preadv`` into the buffer; joined all at once,
    the reads of 4,096 profiles' small slices (~300 bytes each, a Python object each) and their join were in
    memory together (4,096 synth profiles, -j 2: the whole tree's peak 55.0 -> 54.3 MiB, medians of 4; no
    slower)."""
    pread = os.pread
    offsets, sizes = at.tolist(), nbytes.tolist()
    ends = np.cumsum(nbytes).tolist()
    out = np.empty(ends[-1] if ends else 0, np.uint8)
    into = out.data
    begin = 0
    for first in range(0, len(offsets), READ_GROUP):
        last = min(len(offsets), first + READ_GROUP)
        end = ends[last - 1]
        part = b"".join([pread(fd, n, a) for a, n in zip(offsets[first:last], sizes[first:last], strict=True)])
        if len(part) != end - begin:  # a regular file reads short only at its end
            raise EOFError(f"the scratch file ends before one of {len(offsets)} slices ends")
        into[begin:end] = part
        begin = end
    return out


class ScratchProfiles:
    """The scratch PMS file read like a profile.db (profile 0, the summary, is empty), slice by slice with
    ``pread`` (never mapped: only what a range needs is in memory)."""

    def __init__(self, path: str, place: Placement) -> None:
        self.path = path
        self.place = place
        self.fd = os.open(path, os.O_RDONLY)
        self.n_values = np.concatenate([[0], place.n_values]).astype(np.int64)

    def __len__(self) -> int:
        return len(self.place.n_values) + 1

    def close(self) -> None:
        os.close(self.fd)

    def index_offsets(self, rows: np.ndarray | slice = slice(None)) -> np.ndarray:
        """Where the context index of each profile's blob starts (after its values, 4-aligned)."""
        place = self.place
        return place.pms_offset[rows] + ctx_indices_at(place.n_values[rows])

    def positions(self, bounds: np.ndarray, start: np.ndarray | None = None, share: float = 1.0) -> np.ndarray:
        """[profiles + 1, len(bounds)] index positions of each context bound in each profile's index (row 0,
        the summary, is empty); see :func:`bound_positions`."""
        dtype = position_type(self.place)
        out = np.zeros((len(self), len(bounds)), dtype)
        out[1:] = bound_positions(self.fd, self.index_offsets(), self.place.n_ctxs, CTX_INDEX, "ctxId", bounds,
                                  None if start is None else start[1:], share, dtype)
        return out


class AsideBlobs:
    """The aside scratch file, read by windows of context ranges as the profiles are: where a pass's window
    bounds fall in each blob is found once per pass (:func:`bound_positions`), then each window reads only
    its slice of the blobs with entries in it, and its ranges are cut from that in memory."""

    def __init__(self, path: str, place: Placement) -> None:
        self.place = place
        self.has = np.flatnonzero(place.n_aside) if os.path.getsize(path) else np.zeros(0, np.int64)
        self.fd = os.open(path, os.O_RDONLY)

    def close(self) -> None:
        os.close(self.fd)

    def positions(self, bounds: np.ndarray, start: np.ndarray | None = None, share: float = 1.0) -> np.ndarray:
        """[blobs with entries, len(bounds)] entry positions of each context bound (:func:`bound_positions`)."""
        return bound_positions(self.fd, self.place.aside_offset[self.has], self.place.n_aside[self.has], ASIDE,
                               "ctx", bounds, start, share, position_type(self.place))

    def window(self, at_lo: np.ndarray, at_hi: np.ndarray, edges: np.ndarray) -> AsideWindow:
        """Entries at_lo..at_hi of every blob (a window's), cut at the context bounds ``edges``."""
        lo = at_lo.astype(np.int64)
        n = at_hi.astype(np.int64) - lo
        some = np.flatnonzero(n)  # most blobs have no entry in a given window: no empty read for them
        has, lo, n = self.has[some], lo[some], n[some]
        raw = read_slices(self.fd, self.place.aside_offset[has] + lo * ASIDE.itemsize, n * ASIDE.itemsize)
        rec = np.frombuffer(raw, ASIDE)
        return AsideWindow(has + 1, n, rec, positions_in(rec["ctx"], n, edges))


@dataclass
class AsideWindow:
    """A window's aside entries: of each blob with some (profiles ``prof``, 1-based), ``n`` entries, one blob
    after the other in ``records``; ``at`` [blobs, len(edges)]: where each bound falls among them."""

    prof: np.ndarray
    n: np.ndarray
    records: np.ndarray
    at: np.ndarray

    def range(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The entries of the window's range ``k``, blob after blob: (ctx, key, profile index, value)."""
        lo, hi = self.at[:, k], self.at[:, k + 1]
        rec = self.records[ramps(np.cumsum(self.n) - self.n + lo, hi - lo)]
        return (rec["ctx"].astype(np.int64), rec["key"].astype(np.int64),
                np.repeat(self.prof, hi - lo).astype(np.int64), rec["value"].copy())


def positions_in(keys: np.ndarray, counts: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """[groups, len(edges)]: how many of each group's keys lie below each edge (``keys``: groups of ``counts``
    keys one after the other, each sorted), counted for all groups at once."""
    edges = np.asarray(edges, np.int64)
    owner = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    owner <<= 32  # (group, key): ascending
    owner |= keys
    q = (np.arange(len(counts), dtype=np.int64)[:, None] << 32) | edges[None, :]
    return np.searchsorted(owner, q) - (np.cumsum(counts) - counts)[:, None]


@dataclass
class Window:
    """Every profile's context index entries and values for a run of consecutive context ranges, read with
    two ``pread`` per profile (:func:`read_window`); the ranges are then cut from it in memory (:func:`gather`).

    Per profile with entries in the window (``ps``, 1-based, ascending): its entries ``i0..i0+count`` (context
    ids and absolute value positions, concatenated from ``entry_at``) and its values ``v0..v1`` (concatenated
    from ``value_at``).
    """

    ps: np.ndarray
    i0: np.ndarray
    count: np.ndarray
    entry_at: np.ndarray
    cids: np.ndarray
    starts: np.ndarray
    v0: np.ndarray
    v1: np.ndarray
    value_at: np.ndarray
    mids: np.ndarray
    values: np.ndarray

    def positions(self, rows: int, edges: np.ndarray) -> np.ndarray:
        """[rows, len(edges)] index positions of the context bounds ``edges`` (inside the window) in the
        profiles' indexes, found in the window's entries (rows of profiles without any are left 0)."""
        out = np.zeros((rows, len(edges)), np.int64)
        out[self.ps] = self.i0[:, None] + positions_in(self.cids, self.count, edges)
        return out


def read_window(src: ScratchProfiles, at_lo: np.ndarray, at_hi: np.ndarray) -> Window:
    """Each profile's index entries at_lo..at_hi (with the next entry, where there is one, to say where the
    values end) and their values: one ``pread`` for each, all decoded together."""
    place = src.place
    ps = np.flatnonzero(at_hi > at_lo)
    i0, i1 = at_lo[ps].astype(np.int64), at_hi[ps].astype(np.int64)
    n_ctxs = place.n_ctxs[ps - 1]
    more = (i1 < n_ctxs).astype(np.int64)  # one entry past the window says where its values end
    n_read = i1 - i0 + more
    index_at = src.index_offsets(ps - 1)
    idx = np.frombuffer(read_slices(src.fd, index_at + i0 * CTX_INDEX.itemsize, n_read * CTX_INDEX.itemsize),
                        CTX_INDEX)
    cids = idx["ctxId"].astype(np.uint32)
    starts = idx["startIndex"].astype(np.int64)
    seg = np.concatenate([[0], np.cumsum(n_read)])[:-1]  # where each profile's entries begin in idx
    v0 = starts[seg] if len(seg) else np.zeros(0, np.int64)
    v1 = np.where(more == 1, starts[np.minimum(seg + i1 - i0, max(len(starts) - 1, 0))], place.n_values[ps - 1])
    keep = np.ones(len(idx), bool)
    keep[(seg + n_read - 1)[more == 1]] = False  # the extra entries
    n_vals = v1 - v0
    vals = np.frombuffer(read_slices(src.fd, place.pms_offset[ps - 1] + v0 * SZ_VALUE, n_vals * SZ_VALUE), VALUE)
    count = i1 - i0
    return Window(ps, i0, count, np.cumsum(count) - count, cids[keep], starts[keep], v0, v1,
                  np.cumsum(n_vals) - n_vals, vals["metricId"], vals["value"])  # views of the buffer read


def gather(win: Window, at_lo: np.ndarray, at_hi: np.ndarray) -> cctdb.RangeValues:
    """Every profile's values for a context range of the window, sorted by (context, metric id, profile).

    ``at_lo``/``at_hi``: each profile's index positions of the range's bounds. The values are taken in
    canonical profile order, so a stable sort by (context, metric id) keeps each series in profile order.
    """
    a = at_lo[win.ps].astype(np.int64) - win.i0  # the range's entries, relative to the window's
    b = at_hi[win.ps].astype(np.int64) - win.i0
    n_ent = b - a
    has = n_ent > 0
    ps, a, b, n_ent = win.ps[has], a[has], b[has], n_ent[has]
    e_at, v0, v1, value_at = win.entry_at[has], win.v0[has], win.v1[has], win.value_at[has]
    count = win.count[has]
    # the range's entries of all profiles, and where each entry's values end (the next entry, or v1)
    first = e_at + a
    ent = ramps(first, n_ent)
    last_of_prof = np.repeat(b == count, n_ent) & (ent == np.repeat(e_at + b - 1, n_ent))
    nxt = np.minimum(ent + 1, max(len(win.starts) - 1, 0))
    start = win.starts[ent]
    end = np.where(last_of_prof, np.repeat(v1, n_ent), win.starts[nxt] if len(win.starts) else 0)
    lens = end - start
    # values: contiguous per profile, from the first entry's start to the last entry's end
    p_lo = win.starts[first] if len(first) else np.zeros(0, np.int64)
    p_hi = np.where(b == count, v1, win.starts[np.minimum(e_at + b, max(len(win.starts) - 1, 0))])
    n_vals = p_hi - p_lo
    pos = ramps(value_at + p_lo - v0, n_vals)
    ctx = np.repeat(win.cids[ent], lens)
    mid = win.mids[pos].astype(np.uint16)
    val = win.values[pos].astype(np.float64)
    prof = np.repeat(ps.astype(np.uint32), n_vals)
    key = (ctx.astype(np.int64) << 16) | mid
    order = np.argsort(key, kind="stable")
    del key
    return cctdb.RangeValues(ctx[order], mid[order], prof[order], val[order])


def window_starts(bounds: np.ndarray, byte_at: np.ndarray) -> np.ndarray:
    """Which of the range ``bounds`` begin a window (consecutive ranges up to WINDOW_BYTES of cct.db, at least
    one), with the last bound: cut once, before the passes, so windows do not depend on them."""
    starts = [0]
    while starts[-1] < len(bounds) - 1:
        k = starts[-1]
        cut = np.searchsorted(byte_at[bounds[k + 1:]], byte_at[bounds[k]] + WINDOW_BYTES, "right")
        starts.append(k + max(1, int(cut)))
    return np.array(starts, np.int64)


def transpose_ranges(pms_path: str, aside_path: str, cct_path: str, place: Placement, layout: cctdb.CctLayout,
                     plan: StatPlan, bounds: list[int]) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Write cct.db's blocks for the consecutive context ranges ``bounds[i]..bounds[i+1]`` and return
    each range's summary values.

    The ranges are read in windows (WINDOW_BYTES of cct.db). Where the windows' bounds fall in each
    profile's index is found in passes, each reading every index from where the last pass ended to just
    past its own last bound; a pass covers as many windows as fit 2 (or 4) bytes per profile and bound in
    POSITIONS_BYTES (all of them, up to many thousand profiles), so that memory does not grow with profiles x
    windows, the square of the profiles. The ranges' bounds inside a window are found in its entries."""
    src = ScratchProfiles(pms_path, place)
    aside = AsideBlobs(aside_path, place)
    fd = os.open(cct_path, os.O_WRONLY)
    n_ctx = layout.n_ctxs
    byte_at = np.append(layout.offsets, layout.offsets[-1] + layout.block_size()[-1] if n_ctx else 0)
    bounds_at = np.asarray(bounds, np.int64)
    starts = window_starts(bounds_at, byte_at) if len(bounds_at) > 1 else np.zeros(0, np.int64)
    per_pass = max(1, POSITIONS_BYTES // (position_type(place).itemsize * (len(place.n_values) + 1)) - 1)
    try:
        out = []
        pos = apos = None
        for first in range(0, len(starts) - 1, per_pass):
            cuts = starts[first:first + per_pass + 1]
            edges = bounds_at[cuts]
            share = (edges[-1] - edges[0]) / max(1, n_ctx - edges[0])  # of the contexts left: a guess
            pos = src.positions(edges, None if pos is None else pos[:, -1], share)
            apos = aside.positions(edges, None if apos is None else apos[:, -1], share)
            for w in range(len(cuts) - 1):
                ranges = bounds_at[cuts[w]:cuts[w + 1] + 1]
                win = read_window(src, pos[:, w], pos[:, w + 1])
                at = win.positions(len(src), ranges)
                a_win = aside.window(apos[:, w], apos[:, w + 1], ranges)
                for k in range(len(ranges) - 1):
                    lo, hi = int(ranges[k]), int(ranges[k + 1])
                    vals = gather(win, at[:, k], at[:, k + 1])
                    data = cctdb.encode_blocks(layout, lo, hi, vals)
                    pwrite_all(fd, data, int(layout.offsets[lo]))
                    del data
                    out.append(summarize(vals, a_win.range(k), plan))
                    del vals  # not kept while the next range is gathered
                del win, a_win, at  # not kept while the next window is read, or the next pass searches
        return out
    finally:
        os.close(fd)
        aside.close()
        src.close()
