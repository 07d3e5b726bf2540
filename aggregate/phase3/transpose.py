"""Phase 3: cct.db by transposition of phase 2's runs, and class 3 (summary statistics) on the way.

cct.db's layout is known before any of it is written (values and metrics per context, counted in phase 2),
so contexts are cut into ranges that can be written independently (:mod:`.cctdb`). Phase 2 wrote, per batch
of consecutive profiles, a run of the batch's values in cct.db's order, (context, metric id, profile), with a
context index (:data:`.handoff.RUN_VALUE`). A range task gathers every run's values for its contexts, in
batch order (so in profile order), merges them into cct.db's order, writes the range's blocks, and — since
it then holds, for each (context, metric, scope), the values of all profiles in canonical order — reduces
them into the summary statistics (sum, count, sum of squares, min, max → Sum, Mean, StdDev, CfVar, Min,
Max; :mod:`.phase3.summary`). The reduction order is fixed by the data (profile order within each
context), never by how work was split, so the summary is bit-for-bit the same for any number of workers or
ranks, and of batches.

Reading runs, not profiles, is what keeps this linear in the profiles: a window of ranges costs two reads
per batch that has values in it (a batch is many small profiles), and finding where the windows begin in
the runs' indexes one read per batch and pass (with one read per profile and window, the reads grew as
profiles x windows: the square of the profiles).

The thread values hpcprof writes are enough for every statistic except two
things its summary also counts: the loop-free sum of loops without a value of
their own (hpcprof's thread ``lex_aware`` there is the plain function sum),
and presence without any stored value (the count of Mean/StdDev). Phase 2
wrote those in an aside run per batch; they are merged in here, range by range.
"""

from __future__ import annotations

import bisect
import os

import numpy as np

from hpcsa.aggregate.handoff import ASIDE, ASIDE_NOLOOPS, RUN_INDEX, RUN_VALUE, Placement, run_index_at
from hpcsa.aggregate.phase3.summary import ContextSummary, StatPlan, series_lengths, summarize
from hpcsa.core.arrays import ramps, run_starts, take_records
from hpcsa.core.dataclass import dataclass
from hpcsa.core.fileio import pwrite_all
from hpcsa.formats.db import cctdb

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
#: Slices read before they are joined into their buffer (see read_slices), and at most how many bytes of them
#: (beyond: fewer slices; a window of a context with values in every profile had all of them twice in memory).
READ_GROUP = 256
READ_BYTES = 1 << 20
#: Records read at least from a region when looking for range bounds.
MIN_READ = 64
#: Values of one context beyond which its block and its summary are made a slice of profiles (of batches) at a
#: time (:func:`transpose_context`): a range of a context with a value in every profile held some 50 bytes a
#: value at once, its values gathered, sorted and reduced (at 262,144 profiles a million values in each of
#: two processes: the largest memory of phase 3). Such a context is a range, and a window, of its own.
SLICE_VALUES = 1 << 16


def position_type(place: Placement) -> np.dtype:
    """The narrowest type for positions in the runs' indexes and aside runs: 16 bits where no run has 65,536
    contexts or aside entries (twice the windows per pass in the same POSITIONS_BYTES), else 32."""
    most = max([int(place.run_ctxs.max(initial=0)), int(place.n_aside.max(initial=0))])
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
    first = 0
    while first < len(offsets):
        last = min(len(offsets), first + READ_GROUP)
        if ends[last - 1] - begin > READ_BYTES:  # (the slices of a context with values in every profile)
            last = max(first + 1, bisect.bisect_right(ends, begin + READ_BYTES, first, last))
        end = ends[last - 1]
        part = b"".join([pread(fd, n, a) for a, n in zip(offsets[first:last], sizes[first:last], strict=True)])
        if len(part) != end - begin:  # a regular file reads short only at its end
            raise EOFError(f"the scratch file ends before one of {len(offsets)} slices ends")
        into[begin:end] = part
        begin = end
        first = last
    return out


class ScratchRuns:
    """Phase 2's runs in their scratch file, read slice by slice with ``pread`` (never mapped: only what a
    range needs is in memory); run ``r`` is batch ``r``'s."""

    def __init__(self, path: str, place: Placement) -> None:
        self.path = path
        self.place = place
        self.fd = os.open(path, os.O_RDONLY)

    def __len__(self) -> int:
        return len(self.place.run_values)

    def close(self) -> None:
        os.close(self.fd)

    def index_offsets(self, rows: np.ndarray | slice = slice(None)) -> np.ndarray:
        """Where the context index of each run starts (after its values, 8-aligned)."""
        place = self.place
        return place.run_offset[rows] + run_index_at(place.run_values[rows])

    def positions(self, bounds: np.ndarray, start: np.ndarray | None = None, share: float = 1.0) -> np.ndarray:
        """[runs, len(bounds)] index positions of each context bound in each run's index; see
        :func:`bound_positions`."""
        return bound_positions(self.fd, self.index_offsets(), self.place.run_ctxs, RUN_INDEX, "ctx", bounds, start,
                               share, position_type(self.place))


class AsideBlobs:
    """The aside runs' scratch file, read by windows of context ranges as the runs are: where a pass's window
    bounds fall in each aside run is found once per pass (:func:`bound_positions`), then each window reads
    only its slice of the aside runs with entries in it, and its ranges are cut from that in memory."""

    def __init__(self, path: str, place: Placement) -> None:
        self.place = place
        self.has = np.flatnonzero(place.n_aside) if os.path.getsize(path) else np.zeros(0, np.int64)
        self.fd = os.open(path, os.O_RDONLY)

    def close(self) -> None:
        os.close(self.fd)

    def positions(self, bounds: np.ndarray, start: np.ndarray | None = None, share: float = 1.0) -> np.ndarray:
        """[aside runs with entries, len(bounds)] entry positions of each context bound (:func:`bound_positions`)."""
        return bound_positions(self.fd, self.place.aside_offset[self.has], self.place.n_aside[self.has], ASIDE,
                               "ctx", bounds, start, share, position_type(self.place))

    def window(self, at_lo: np.ndarray, at_hi: np.ndarray, edges: np.ndarray) -> AsideWindow:
        """Entries at_lo..at_hi of every aside run (a window's), cut at the context bounds ``edges``."""
        lo = at_lo.astype(np.int64)
        n = at_hi.astype(np.int64) - lo
        some = np.flatnonzero(n)  # most runs have no entry in a given window: no empty read for them
        has, lo, n = self.has[some], lo[some], n[some]
        raw = read_slices(self.fd, self.place.aside_offset[has] + lo * ASIDE.itemsize, n * ASIDE.itemsize)
        rec = np.frombuffer(raw, ASIDE)
        return AsideWindow(n, rec, positions_in(rec["ctx"], n, edges))


@dataclass
class AsideWindow:
    """A window's aside entries: of each aside run with some, ``n`` entries, one run after the other in
    ``records``; ``at`` [runs, len(edges)]: where each bound falls among them."""

    n: np.ndarray
    records: np.ndarray
    at: np.ndarray

    def range(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The entries of the window's range ``k``, in profile order, each profile's by (context, key):
        (ctx, key, profile index, value)."""
        lo, hi = self.at[:, k], self.at[:, k + 1]
        rec = take_records(self.records, ramps(np.cumsum(self.n) - self.n + lo, hi - lo))
        rec = rec[np.argsort(rec["prof"], kind="stable")]  # (a run is sorted by context first)
        return (rec["ctx"].astype(np.int64), rec["key"].astype(np.int64), rec["prof"].astype(np.int64),
                rec["value"].copy())


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
    """Every run's context index entries and values for a stretch of consecutive context ranges, read with
    two ``pread`` per run (:func:`read_window`); the ranges are then cut from it in memory (:func:`gather`).

    Per run with entries in the window (``ps``, ascending): its entries ``i0..i0+count`` (context ids and
    value positions, concatenated from ``entry_at``) and its values ``v0..v1`` (concatenated from
    ``value_at``: metric id, profile index and value each).
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
    records: np.ndarray

    def positions(self, rows: int, edges: np.ndarray) -> np.ndarray:
        """[rows, len(edges)] index positions of the context bounds ``edges`` (inside the window) in the
        runs' indexes, found in the window's entries (rows of runs without any are left 0)."""
        out = np.zeros((rows, len(edges)), np.int64)
        out[self.ps] = self.i0[:, None] + positions_in(self.cids, self.count, edges)
        return out


def read_window(src: ScratchRuns, at_lo: np.ndarray, at_hi: np.ndarray) -> Window:
    """Each run's index entries at_lo..at_hi (with the next entry, where there is one, to say where the
    values end) and their values: one ``pread`` for each, all decoded together."""
    place = src.place
    ps = np.flatnonzero(at_hi > at_lo)
    i0, i1 = at_lo[ps].astype(np.int64), at_hi[ps].astype(np.int64)
    n_ctxs = place.run_ctxs[ps]
    more = (i1 < n_ctxs).astype(np.int64)  # one entry past the window says where its values end
    n_read = i1 - i0 + more
    index_at = src.index_offsets(ps)
    idx = np.frombuffer(read_slices(src.fd, index_at + i0 * RUN_INDEX.itemsize, n_read * RUN_INDEX.itemsize),
                        RUN_INDEX)
    cids = idx["ctx"].astype(np.uint32)
    starts = idx["start"].astype(np.int64)
    seg = np.concatenate([[0], np.cumsum(n_read)])[:-1]  # where each run's entries begin in idx
    v0 = starts[seg] if len(seg) else np.zeros(0, np.int64)
    v1 = np.where(more == 1, starts[np.minimum(seg + i1 - i0, max(len(starts) - 1, 0))], place.run_values[ps])
    keep = np.ones(len(idx), bool)
    keep[(seg + n_read - 1)[more == 1]] = False  # the extra entries
    n_vals = v1 - v0
    recs = np.frombuffer(read_slices(src.fd, place.run_offset[ps] + v0 * RUN_VALUE.itemsize,
                                     n_vals * RUN_VALUE.itemsize), RUN_VALUE)
    count = i1 - i0
    return Window(ps, i0, count, np.cumsum(count) - count, cids[keep], starts[keep], v0, v1,
                  np.cumsum(n_vals) - n_vals, recs)  # views of the buffer read


def gather(win: Window, at_lo: np.ndarray, at_hi: np.ndarray) -> cctdb.RangeValues:
    """Every run's values for a context range of the window, sorted by (context, metric id, profile).

    ``at_lo``/``at_hi``: each run's index positions of the range's bounds. A run is sorted by (context,
    metric id, profile) and the runs are taken in batch order, i.e. in profile order, so a stable sort by
    (context, metric id) merges them into cct.db's order.
    """
    a = at_lo[win.ps].astype(np.int64) - win.i0  # the range's entries, relative to the window's
    b = at_hi[win.ps].astype(np.int64) - win.i0
    count = win.count
    has = b > a
    v0, v1, value_at, e_at = win.v0[has], win.v1[has], win.value_at[has], win.entry_at[has]
    a, b, count = a[has], b[has], count[has]
    # values: contiguous per run, from the range's first entry's start to its last entry's end
    last = max(len(win.starts) - 1, 0)
    p_lo = win.starts[e_at + a] if len(a) else np.zeros(0, np.int64)
    p_hi = np.where(b == count, v1, win.starts[np.minimum(e_at + b, last)] if len(win.starts) else 0)
    n_vals = p_hi - p_lo
    pos = ramps(value_at + p_lo - v0, n_vals)
    # each value's context: the runs' entries of the range, each repeated over its values
    ent = ramps(e_at + a, b - a)
    nxt = np.where(np.repeat(b == count, b - a) & (ent == np.repeat(e_at + b - 1, b - a)),
                   np.repeat(v1, b - a), win.starts[np.minimum(ent + 1, last)] if len(win.starts) else 0)
    ctx = np.repeat(win.cids[ent], nxt - win.starts[ent])
    del ent, nxt
    # (the values of a context in every profile: a few per profile, as are the arrays below; the records are
    # not copied before they are sorted, and the sort key is 32 bits where the range's contexts and metric
    # ids fit: some 30 instead of 55 bytes of temporaries a value)
    mid = win.records["mid"][pos]
    n_mid = int(mid.max()) + 1 if len(mid) else 1
    low = int(ctx.min()) if len(ctx) else 0
    span = int(ctx.max()) - low + 1 if len(ctx) else 1
    if span * n_mid <= 1 << 32:
        key = (ctx - np.uint32(low)).astype(np.uint32)
        key *= np.uint32(n_mid)
        key += mid
    else:
        key = ctx.astype(np.int64)
        key <<= 16
        key |= mid
    del mid
    order = np.argsort(key, kind="stable")
    del key
    ctx = ctx[order]
    pos = pos[order]
    del order
    records = win.records
    return cctdb.RangeValues(ctx, records["mid"][pos].astype(np.uint16, copy=False),
                             records["prof"][pos].astype(np.uint32, copy=False),
                             records["value"][pos].astype(np.float64, copy=False))


def context_ranges(layout: cctdb.CctLayout) -> list[tuple[int, int]]:
    """cct.db's context ranges of about RANGE_BYTES each (:meth:`.CctLayout.ranges`), each context with more
    than SLICE_VALUES values in a range of its own (:func:`transpose_context` takes it a slice at a time)."""
    out = []
    for lo, hi in layout.ranges(RANGE_BYTES):
        big = (lo + np.flatnonzero(layout.n_values[lo:hi] > SLICE_VALUES)).tolist()
        for c in big:
            if c > lo:
                out.append((lo, c))
            out.append((c, c + 1))
            lo = c + 1
        if hi > lo:
            out.append((lo, hi))
    return out


def window_starts(bounds: np.ndarray, byte_at: np.ndarray, alone: np.ndarray | None = None) -> np.ndarray:
    """Which of the range ``bounds`` begin a window (consecutive ranges up to WINDOW_BYTES of cct.db, at least
    one; a range marked in ``alone`` a window of its own), with the last bound: cut once, before the passes, so
    windows do not depend on them."""
    marked = np.flatnonzero(alone) if alone is not None else np.zeros(0, np.int64)
    starts = [0]
    while starts[-1] < len(bounds) - 1:
        k = starts[-1]
        cut = np.searchsorted(byte_at[bounds[k + 1:]], byte_at[bounds[k]] + WINDOW_BYTES, "right")
        nxt = marked[np.searchsorted(marked, k)] if len(marked) and marked[-1] >= k else len(bounds)
        if nxt == k:  # (the context sliced by transpose_context)
            starts.append(k + 1)
        else:
            starts.append(min(k + max(1, int(cut)), int(nxt)))
    return np.array(starts, np.int64)


def transpose_ranges(run_path: str, aside_path: str, cct_path: str, place: Placement, layout: cctdb.CctLayout,
                     plan: StatPlan, bounds: list[int]) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Write cct.db's blocks for the consecutive context ranges ``bounds[i]..bounds[i+1]`` and return
    each range's summary values.

    The ranges are read in windows (WINDOW_BYTES of cct.db). Where the windows' bounds fall in each
    run's index is found in passes, each reading every index from where the last pass ended to just
    past its own last bound; a pass covers as many windows as fit 2 (or 4) bytes per run and bound in
    POSITIONS_BYTES (all of them, up to many thousand runs), so that memory does not grow with runs x
    windows. The ranges' bounds inside a window are found in its entries."""
    src = ScratchRuns(run_path, place)
    aside = AsideBlobs(aside_path, place)
    fd = os.open(cct_path, os.O_WRONLY)
    n_ctx = layout.n_ctxs
    byte_at = np.append(layout.offsets, layout.offsets[-1] + layout.block_size()[-1] if n_ctx else 0)
    bounds_at = np.asarray(bounds, np.int64)
    alone = (np.diff(bounds_at) == 1) & (layout.n_values[bounds_at[:-1]] > SLICE_VALUES) if len(bounds_at) > 1 \
        else np.zeros(0, bool)  # (contexts taken a slice of profiles at a time: context_ranges)
    starts = window_starts(bounds_at, byte_at, alone) if len(bounds_at) > 1 else np.zeros(0, np.int64)
    per_pass = max(1, POSITIONS_BYTES // (position_type(place).itemsize * (len(src) + 1)) - 1)
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
                if alone[cuts[w]]:
                    out.append(transpose_context(src, aside, fd, layout, plan, int(ranges[0]), pos[:, w],
                                                 pos[:, w + 1], apos[:, w], apos[:, w + 1]))
                    continue
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


def value_counts(src: ScratchRuns, at_lo: np.ndarray, at_hi: np.ndarray) -> np.ndarray:
    """Each run's values in its index entries at_lo..at_hi (a window's): one small read per run with any."""
    place = src.place
    out = np.zeros(len(src), np.int64)
    ps = np.flatnonzero(at_hi > at_lo)
    if not len(ps):
        return out
    i0, i1 = at_lo[ps].astype(np.int64), at_hi[ps].astype(np.int64)
    more = i1 < place.run_ctxs[ps]  # the entry past the window says where its values end
    idx = np.frombuffer(read_slices(src.fd, src.index_offsets(ps) + i0 * RUN_INDEX.itemsize,
                                    np.full(len(ps), 2 * RUN_INDEX.itemsize) - (~more) * RUN_INDEX.itemsize),
                        RUN_INDEX)
    seg = np.cumsum(1 + more) - (1 + more)  # each run's first entry in idx
    if (i1 - i0 > 1).any():
        raise ValueError("a sliced window is one context")
    end = np.where(more, idx["start"][np.minimum(seg + 1, len(idx) - 1)].astype(np.int64), place.run_values[ps])
    out[ps] = end - idx["start"][seg].astype(np.int64)
    return out


def transpose_context(src: ScratchRuns, aside: AsideBlobs, fd: int, layout: cctdb.CctLayout, plan: StatPlan,
                      c: int, at_lo: np.ndarray, at_hi: np.ndarray, a_lo: np.ndarray, a_hi: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Write cct.db's block of context ``c`` (of more than SLICE_VALUES values) and return its summary values,
    the runs taken a slice of consecutive batches (of profiles) at a time, each slice about SLICE_VALUES
    values: memory per process stays bounded however many profiles have a value there.

    ``at_lo``/``at_hi``: each run's index positions of ``c``'s bounds; ``a_lo``/``a_hi``: each aside run's.
    A first pass counts the values per metric id (where each metric's {Val} records go in the block; the
    lengths of the summary's series, which fix numpy's order of additions: :class:`.ContextSummary`); the
    second gathers each slice (in cct.db's order: by metric id, then profile), writes its {Val} records into
    each metric's part of the block and adds it to the summary. The same bytes as :func:`.cctdb.encode_blocks`
    and :func:`.summarize` of the whole context."""
    counts = value_counts(src, at_lo, at_hi)
    ends = np.cumsum(counts)
    cuts = [0]  # slices of runs: each at least one run, at most about SLICE_VALUES values
    while cuts[-1] < len(counts):
        base = ends[cuts[-1] - 1] if cuts[-1] else 0
        cuts.append(max(cuts[-1] + 1, int(np.searchsorted(ends, base + SLICE_VALUES, "right"))))
    has = aside.has  # the batches of the aside runs
    n_ids = len(plan.prop_metric)
    edges = np.array([c, c + 1], np.int64)

    def read(a: int, b: int) -> tuple[Window, np.ndarray, np.ndarray, tuple[np.ndarray, ...]]:
        """Runs a..b's values of ``c`` (a window of them, and its bounds), and their batches' aside entries."""
        runs = np.zeros(len(counts), bool)
        runs[a:b] = True
        lo, hi = np.where(runs, at_lo, 0), np.where(runs, at_hi, 0)
        a_in = (has >= a) & (has < b)
        a_vals = aside.window(np.where(a_in, a_lo, 0), np.where(a_in, a_hi, 0), edges).range(0)
        return read_window(src, lo, hi), lo, hi, a_vals

    stored = np.zeros(n_ids, np.int64)
    lengths = np.zeros(n_ids, np.int64)
    for a, b in zip(cuts[:-1], cuts[1:], strict=True):
        win, lo, hi, a_vals = read(a, b)
        n = np.bincount(win.records["mid"], minlength=n_ids)[:n_ids]
        stored += n
        if ((a_vals[1] & 1) == ASIDE_NOLOOPS).any():  # loop-free sums may add values to lex_aware series
            n = series_lengths(gather(win, lo, hi), a_vals, plan, n_ids)
        lengths += n
        del win, a_vals
    if int(stored.sum()) != int(layout.n_values[c]) or np.count_nonzero(stored) != int(layout.n_metrics[c]):
        raise ValueError(f"context {c} has {int(stored.sum())} values of {np.count_nonzero(stored)} metrics but "
                         f"the layout reserved {int(layout.n_values[c])} of {int(layout.n_metrics[c])}")
    at = int(layout.offsets[c])
    first = np.cumsum(stored) - stored  # each metric id's first {Val} in the block
    ids = np.flatnonzero(stored)
    idx = np.zeros(len(ids), cctdb.METRIC_INDEX)
    idx["metricId"] = ids
    idx["startIndex"] = first[ids]
    pwrite_all(fd, idx.view(np.uint8).data, at + cctdb.SZ_VALUE * int(layout.n_values[c]))
    done = first.copy()
    total = ContextSummary(plan, c, lengths)
    for a, b in zip(cuts[:-1], cuts[1:], strict=True):
        win, lo, hi, a_vals = read(a, b)
        vals = gather(win, lo, hi)
        del win
        rec = np.zeros(len(vals), cctdb.VALUE)
        rec["profIndex"] = vals.prof_indices
        rec["value"] = vals.values
        mid = vals.metric_ids
        starts = np.flatnonzero(run_starts(mid)).tolist()
        for i, j in zip(starts, [*starts[1:], len(mid)][:len(starts)], strict=True):
            m = int(mid[i])
            pwrite_all(fd, rec[i:j].view(np.uint8).data, at + cctdb.SZ_VALUE * int(done[m]))
            done[m] += j - i
        del rec
        total.add(vals, a_vals)
        del vals, a_vals
    return total.result()
