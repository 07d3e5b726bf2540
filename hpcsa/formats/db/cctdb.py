"""``cct.db`` v4.0: performance values arranged by calling context (the transpose of profile.db).

Reading (:class:`CctDB`) parses the context infos eagerly (one fixed-size
record per context id, elided ids included); a context's values are read on
request (:meth:`CctDB.context`) or for a whole id range at once
(:meth:`CctDB.range_values`).

Writing mirrors hpcprof's "CMS from PMS" step. Every context's block size is
known before any value is written (:class:`CctLayout`, from counts the
aggregator kept or from a pass over profile.db), so each block's offset is an
exclusive prefix sum and any context range can be written independently:
:func:`transpose_range` reads, for every thread profile, the slice of values
covering the range (binary search in its context index), merges them with one
vectorized sort by (context, metric, profile) and writes the range's blocks in
one piece. Several processes can run it on disjoint ranges of the same file;
:func:`write_cctdb_from_profiledb` drives it with a process pool.
cct.db never holds the summary profile (profile 0).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import BinaryIO, ClassVar

import numpy as np

from hpcsa.core.arrays import ramps, rank_in_runs, run_starts, sorted_unique
from hpcsa.core.binfmt import align
from hpcsa.core.dataclass import dataclass
from hpcsa.core.errors import FormatError
from hpcsa.core.fileio import pwrite_all
from hpcsa.core.workers import LocalPool
from hpcsa.formats.db import dbformat as dbf
from hpcsa.formats.db.profiledb import ProfileDB

TAG = b"ctxt"
SECTIONS = ("CtxInfos",)
#: hpcprof reserves 0x30 header bytes although the v4.0 header ends at 0x20; readers ignore 0x20-0x2f.
HEADER_RESERVED = 0x30

CTX_INFOS_HDR_FIELDS = [("pCtxs", 0x00, "u8"), ("nCtxs", 0x08, "u4"), ("szCtx", 0x0C, "u1")]
CTX_INFO_FIELDS = [("nValues", 0x00, "u8"), ("pValues", 0x08, "u8"), ("nMetrics", 0x10, "u2"),
                   ("pMetricIndices", 0x18, "u8")]
VALUE_FIELDS = [("profIndex", 0x00, "u4"), ("value", 0x04, "f8")]  # {Val}: unaligned f64
METRIC_INDEX_FIELDS = [("metricId", 0x00, "u2"), ("startIndex", 0x02, "u8")]  # {Idx}: unaligned u64

SZ_CTX_INFOS_HDR, SZ_CTX_INFO, SZ_VALUE, SZ_METRIC_INDEX = 0x0D, 0x20, 0x0C, 0x0A
CTX_INFOS_HDR = dbf.record_dtype(CTX_INFOS_HDR_FIELDS, SZ_CTX_INFOS_HDR)
CTX_INFO = dbf.record_dtype(CTX_INFO_FIELDS, SZ_CTX_INFO)
VALUE = dbf.record_dtype(VALUE_FIELDS, SZ_VALUE)
METRIC_INDEX = dbf.record_dtype(METRIC_INDEX_FIELDS, SZ_METRIC_INDEX)

CTX_INFOS_AT = HEADER_RESERVED
CTXS_AT = align(CTX_INFOS_AT + SZ_CTX_INFOS_HDR, 8)


@dataclass
class ContextValues(dbf.SparseRuns):
    """One context's values: metrics sorted by id, profiles sorted within each metric."""

    metric_ids: np.ndarray  # uint16 [nMetrics]
    starts: np.ndarray  # int64 [nMetrics]
    prof_indices: np.ndarray  # uint32 [nValues]
    values: np.ndarray  # float64 [nValues]
    KEYS: ClassVar[str] = "metric_ids"  # get(metric_id) -> {profile index: value}
    INNER: ClassVar[str] = "prof_indices"

    def value_metric_ids(self) -> np.ndarray:
        return self.value_keys()


@dataclass
class RangeValues:
    """Every value of a range of contexts as flat arrays, sorted by (context, metric, profile)."""

    ctx_ids: np.ndarray  # uint32
    metric_ids: np.ndarray  # uint16
    prof_indices: np.ndarray  # uint32
    values: np.ndarray  # float64

    def __len__(self) -> int:
        return len(self.values)


class CctDB(dbf.DbReader):
    """An open cct.db: context infos in memory, values read on request."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__(path, TAG, SECTIONS)
        blob = self.blob
        hdr = self.section_header(0, CTX_INFOS_HDR, SZ_CTX_INFOS_HDR, "Context Info")
        infos = self.section_array(0, hdr, CTX_INFO_FIELDS, SZ_CTX_INFO, ("szCtx", "pCtxs", "nCtxs"),
                                   "context info", "Context Info")
        self.n_values = infos["nValues"].astype(np.int64)
        self.p_values = infos["pValues"].astype(np.int64)
        self.n_metrics = infos["nMetrics"].astype(np.int64)
        self.p_metric_indices = infos["pMetricIndices"].astype(np.int64)
        limit = len(blob) - dbf.FOOTER_SIZE
        # Counts and pointers are u64 on disk: refuse any that cannot fit before the products below overflow.
        huge = (self.n_values < 0) | (self.n_values > limit // SZ_VALUE) | (self.p_values < 0) | \
               (self.n_metrics > limit // SZ_METRIC_INDEX) | (self.p_metric_indices < 0)
        if huge.any():
            i = int(np.flatnonzero(huge)[0])
            raise blob.fail(f"context {i} claims more values than the file holds; the file is corrupt")
        bad = ((self.n_values > 0) & (self.p_values + SZ_VALUE * self.n_values > limit)) | \
              ((self.n_metrics > 0) & (self.p_metric_indices + SZ_METRIC_INDEX * self.n_metrics > limit))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise blob.fail(f"the values of context {i} lie past the end of the file; the file is truncated "
                            f"or corrupt")

    def __len__(self) -> int:
        return len(self.n_values)

    def context(self, ctx_id: int) -> ContextValues:
        """The values of one context id (empty for ids without data)."""
        if not 0 <= ctx_id < len(self):
            raise IndexError(f"context id {ctx_id} is not in this cct.db (0..{len(self) - 1})")
        nv, pv = int(self.n_values[ctx_id]), int(self.p_values[ctx_id])
        nm, pm = int(self.n_metrics[ctx_id]), int(self.p_metric_indices[ctx_id])
        idx = self.blob.array(METRIC_INDEX, pm, nm, f"context {ctx_id} metric indices")
        vals = self.blob.array(VALUE, pv, nv, f"context {ctx_id} values")
        starts = idx["startIndex"].astype(np.int64)
        if nm and (starts[0] != 0 or (np.diff(starts) < 0).any() or starts[-1] > nv):
            raise self.blob.fail(f"context {ctx_id}'s metric index is not an increasing list of starts within "
                                 f"its {nv} values")
        return ContextValues(idx["metricId"].astype(np.uint16), starts, vals["profIndex"].astype(np.uint32),
                             vals["value"].astype(np.float64))

    def range_values(self, lo: int = 0, hi: int | None = None) -> RangeValues:
        """All values of contexts ``lo..hi`` in one vectorized read."""
        hi = len(self) if hi is None else min(hi, len(self))
        nv, pv = self.n_values[lo:hi], self.p_values[lo:hi]
        nm, pm = self.n_metrics[lo:hi], self.p_metric_indices[lo:hi]
        buf = np.frombuffer(self.blob.data, np.uint8)
        ctx = np.arange(lo, hi, dtype=np.int64)
        v_ctx = np.repeat(ctx, nv)
        v_first = np.repeat(np.cumsum(nv) - nv, nv)
        v_k = np.arange(len(v_ctx)) - v_first
        vals = dbf.gather_records(buf, np.repeat(pv, nv) + SZ_VALUE * v_k, VALUE)
        m_first = np.repeat(np.cumsum(nm) - nm, nm)
        m_k = np.arange(int(nm.sum())) - m_first
        idx = dbf.gather_records(buf, np.repeat(pm, nm) + SZ_METRIC_INDEX * m_k, METRIC_INDEX)
        # Expand each metric's [start, next start) to its values.
        starts = idx["startIndex"].astype(np.int64)
        m_ctx = np.repeat(np.arange(hi - lo), nm)
        ends = np.empty_like(starts)
        if len(starts):
            ends[:-1] = starts[1:]
            last = np.r_[m_ctx[1:] != m_ctx[:-1], True]
            ends[last] = nv[m_ctx[last]]
        counts = ends - starts
        if (counts < 0).any() or (starts < 0).any() or int(counts.sum()) != len(v_ctx):
            raise self.blob.fail(f"the metric indices of contexts {lo}..{hi} do not partition their values")
        metric = np.repeat(idx["metricId"].astype(np.uint16), counts)
        return RangeValues(v_ctx.astype(np.uint32), metric, vals["profIndex"].astype(np.uint32),
                           vals["value"].astype(np.float64))


def read_cctdb(path: str | os.PathLike[str]) -> CctDB:
    return CctDB(path)


# -- writing -------------------------------------------------------------------------------------------


@dataclass
class CctLayout:
    """Where every context's block goes: sizes from (values, metrics) counts, 4-aligned prefix sums."""

    n_values: np.ndarray  # int64 per context id
    n_metrics: np.ndarray  # int64 per context id
    offsets: np.ndarray  # int64 per context id: pValues

    @property
    def n_ctxs(self) -> int:
        return len(self.n_values)

    @property
    def data_start(self) -> int:
        return align(CTXS_AT + SZ_CTX_INFO * self.n_ctxs, 4)

    @property
    def end(self) -> int:
        if not self.n_ctxs:
            return self.data_start
        last = int(self.offsets[-1] + SZ_VALUE * self.n_values[-1] + SZ_METRIC_INDEX * self.n_metrics[-1])
        return align(last, 4)

    def block_size(self) -> np.ndarray:
        return SZ_VALUE * self.n_values + SZ_METRIC_INDEX * self.n_metrics

    @classmethod
    def from_counts(cls, n_values: Sequence[int] | np.ndarray, n_metrics: Sequence[int] | np.ndarray) -> CctLayout:
        nv = np.asarray(n_values, np.int64)
        nm = np.asarray(n_metrics, np.int64)
        if nv.shape != nm.shape:
            raise ValueError("n_values and n_metrics must have one entry per context id")
        padded = align(SZ_VALUE * nv + SZ_METRIC_INDEX * nm, 4)
        start = align(CTXS_AT + SZ_CTX_INFO * len(nv), 4)
        offsets = start + np.cumsum(padded) - padded
        return cls(nv, nm, offsets.astype(np.int64))

    def ranges(self, target_bytes: int) -> list[tuple[int, int]]:
        """Split the context ids into consecutive ranges of about ``target_bytes`` of blocks each."""
        if not self.n_ctxs:
            return []
        ends = self.offsets + self.block_size() - self.data_start
        cuts = np.searchsorted(ends, np.arange(target_bytes, int(ends[-1]) + target_bytes, target_bytes),
                               side="right")
        bounds = sorted({0, *np.minimum(cuts, self.n_ctxs).tolist(), self.n_ctxs})
        return [(a, b) for a, b in zip(bounds[:-1], bounds[1:], strict=True) if b > a]


def counts_from_profiledb(pdb: ProfileDB, n_ctxs: int) -> CctLayout:
    """The layout of the cct.db transposed from ``pdb``: one pass over every thread profile's values."""
    n_values = np.zeros(n_ctxs, np.int64)
    pairs = []
    for i in range(1, len(pdb)):
        prof = pdb.profile(i)
        ctx = prof.value_ctx_ids().astype(np.int64)
        if len(ctx) and int(ctx.max()) >= n_ctxs:
            raise FormatError(pdb.path, f"profile {i} has values for context {int(ctx.max())}, but the "
                              f"database has only {n_ctxs} context ids")
        n_values += np.bincount(ctx, minlength=n_ctxs)
        pairs.append((ctx << 16) | prof.metric_ids.astype(np.int64))  # sorted and distinct within a profile
        if len(pairs) > 64:  # keep memory to the distinct (context, metric) pairs
            pairs = [sorted_unique(np.concatenate(pairs))]
    uniq = sorted_unique(np.concatenate(pairs)) if pairs else np.zeros(0, np.int64)
    n_metrics = np.bincount(uniq >> 16, minlength=n_ctxs).astype(np.int64)
    return CctLayout.from_counts(n_values, n_metrics)


def _check_counts(ctx: np.ndarray, lo: int, hi: int, reserved: np.ndarray, what: str) -> None:
    """Each context of ``lo..hi`` has as many items in ``ctx`` as the layout ``reserved`` for it."""
    if len(ctx) and (int(ctx.min()) < lo or int(ctx.max()) >= hi):
        c = int(ctx.min()) if int(ctx.min()) < lo else int(ctx.max())
        raise ValueError(f"context {c} lies outside the range {lo}..{hi}")
    got = np.bincount(ctx - lo, minlength=hi - lo) if len(ctx) else np.zeros(hi - lo, np.int64)
    if not np.array_equal(got, reserved):
        i = int(np.flatnonzero(got != reserved)[0])
        raise ValueError(f"context {lo + i} has {int(got[i])} {what} but the layout reserved {int(reserved[i])}")


#: Values of one context from which its {Val} records are copied as one slice (the rest are scattered at once).
BIG_BLOCK = 1 << 12


def encode_blocks(layout: CctLayout, lo: int, hi: int, values: RangeValues) -> memoryview:
    """The bytes from block ``lo``'s start to block ``hi - 1``'s end, for values sorted by
    (context, metric, profile) and all lying in ``lo..hi``; the counts must match the layout.

    A view of the image it lays them out in (not a copy). Memory: a range of one context that every profile
    has values in holds a few values per profile, so nothing per value is made but the image: a context's
    values are consecutive in ``values`` and in its block, so a large context's {Val} records are copied as
    one slice, and only the small contexts' are scattered by position (some 50 bytes of temporaries a value)."""
    base = int(layout.offsets[lo]) if hi > lo else 0
    end = int(layout.offsets[hi - 1] + layout.block_size()[hi - 1]) if hi > lo else 0
    image = np.zeros(end - base, np.uint8)
    ctx = values.ctx_ids
    n_c = layout.n_values[lo:hi]
    _check_counts(ctx, lo, hi, n_c, "values")
    first = np.cumsum(n_c) - n_c  # where each context's values begin in ``values``
    at = layout.offsets[lo:hi] - base  # and its block in the image
    # {Val} records: profile index and value, context by context.
    for c in np.flatnonzero(n_c >= BIG_BLOCK).tolist():
        a, n, to = int(first[c]), int(n_c[c]), int(at[c])
        block = image[to:to + SZ_VALUE * n].view(VALUE)
        block["profIndex"] = values.prof_indices[a:a + n]
        block["value"] = values.values[a:a + n]
    small = (n_c > 0) & (n_c < BIG_BLOCK)
    if small.any():
        pick = ramps(first[small], n_c[small])
        vals = np.zeros(len(pick), VALUE)
        vals["profIndex"] = values.prof_indices[pick]
        vals["value"] = values.values[pick]
        pos = np.repeat(at[small] - SZ_VALUE * first[small], n_c[small]) + SZ_VALUE * pick
        dbf.scatter_records(image, pos, vals)
        del pick, vals, pos
    # {Idx} records: one per (context, metric) group, pointing at the group's first value.
    met = values.metric_ids
    g = np.flatnonzero(run_starts(ctx, met))
    g_ctx = ctx[g].astype(np.int64)
    _check_counts(g_ctx, lo, hi, layout.n_metrics[lo:hi], "metrics")
    g_rank = rank_in_runs(run_starts(g_ctx))
    idx = np.zeros(len(g), METRIC_INDEX)
    idx["metricId"] = met[g]
    idx["startIndex"] = g - first[g_ctx - lo]
    ipos = layout.offsets[g_ctx] - base + SZ_VALUE * layout.n_values[g_ctx] + SZ_METRIC_INDEX * g_rank
    dbf.scatter_records(image, ipos, idx)
    return image.data


def encode_infos(layout: CctLayout) -> bytes:
    """Header (0x30 reserved bytes), Context Info section header and {CI} array."""
    n = layout.n_ctxs
    infos = np.zeros(n, CTX_INFO)
    infos["nValues"] = layout.n_values
    infos["pValues"] = layout.offsets
    infos["nMetrics"] = layout.n_metrics
    infos["pMetricIndices"] = layout.offsets + SZ_VALUE * layout.n_values
    hdr = np.zeros(1, CTX_INFOS_HDR)
    hdr[0] = (CTXS_AT, n, SZ_CTX_INFO)
    section_size = CTXS_AT - CTX_INFOS_AT + SZ_CTX_INFO * n
    head = dbf.encode_header(TAG, [(section_size, CTX_INFOS_AT)], reserve=HEADER_RESERVED)
    out = bytearray(layout.data_start)
    out[:len(head)] = head
    out[CTX_INFOS_AT:CTX_INFOS_AT + SZ_CTX_INFOS_HDR] = hdr.tobytes()
    out[CTXS_AT:CTXS_AT + infos.nbytes] = infos.tobytes()
    return bytes(out)


def sort_values(ctx: np.ndarray, metric: np.ndarray, prof: np.ndarray, value: np.ndarray) -> RangeValues:
    """Order flat values by (context, metric, profile), dropping zeros (absent)."""
    keep = np.asarray(value) != 0
    ctx, metric, prof, value = (np.asarray(a)[keep] for a in (ctx, metric, prof, value))
    order = np.lexsort((prof, metric, ctx))
    return RangeValues(ctx[order].astype(np.uint32), metric[order].astype(np.uint16),
                       prof[order].astype(np.uint32), value[order].astype(np.float64))


def gather_range(pdb: ProfileDB, lo: int, hi: int,
                 indexes: dict[int, tuple[np.ndarray, np.ndarray]] | None = None) -> RangeValues:
    """Every thread profile's values for contexts ``lo..hi``, merged by (context, metric, profile).

    Each profile's slice is found by binary search in its context index; the
    k-way merge is one stable sort on (context, metric) of the profile-ordered
    concatenation (profiles are visited in index order, so ties stay sorted).
    """
    parts_ctx, parts_met, parts_prof, parts_val = [], [], [], []
    for p in range(1, len(pdb)):
        if indexes is not None and p in indexes:
            ctx_ids, starts = indexes[p]
        else:
            ctx_ids, starts = pdb.ctx_index(p)
            if indexes is not None:
                indexes[p] = (ctx_ids, starts)
        i0, i1 = np.searchsorted(ctx_ids, [lo, hi])
        if i1 <= i0:
            continue
        v0 = int(starts[i0])
        v1 = int(starts[i1]) if i1 < len(starts) else int(pdb.n_values[p])
        metric, value = pdb.value_slice(p, v0, v1)
        counts = np.diff(np.append(starts[i0:i1], v1))
        parts_ctx.append(np.repeat(ctx_ids[i0:i1].astype(np.int64), counts))
        parts_met.append(metric.astype(np.int64))
        parts_prof.append(np.full(len(value), p, np.uint32))
        parts_val.append(value)
    if not parts_ctx:
        return RangeValues(np.zeros(0, np.uint32), np.zeros(0, np.uint16), np.zeros(0, np.uint32),
                           np.zeros(0, np.float64))
    ctx = np.concatenate(parts_ctx)
    met = np.concatenate(parts_met)
    order = np.argsort((ctx << 16) | met, kind="stable")
    return RangeValues(ctx[order].astype(np.uint32), met[order].astype(np.uint16),
                       np.concatenate(parts_prof)[order], np.concatenate(parts_val)[order])


def transpose_range(profiledb_path: str, cct_path: str, layout: CctLayout, lo: int, hi: int) -> int:
    """Write the blocks of contexts ``lo..hi`` into the (partial) cct.db at ``cct_path``.

    Self-contained so that worker processes can run it on disjoint ranges of one
    file. Returns the number of values written.
    """
    pdb = ProfileDB(profiledb_path)
    values = gather_range(pdb, lo, hi)
    data = encode_blocks(layout, lo, hi, values)
    fd = os.open(cct_path, os.O_WRONLY)
    try:
        pwrite_all(fd, data, int(layout.offsets[lo]))
    finally:
        os.close(fd)
    return len(values)


def _transpose_task(layout: CctLayout, profiledb_path: str, cct_path: str, lo: int, hi: int) -> int:
    return transpose_range(profiledb_path, cct_path, layout, lo, hi)


class CctDBWriter(dbf.StreamedWriter):
    """A cct.db being written: header and context infos first, blocks by range, footer last.

    Use as a context manager; the file appears under ``path`` only when the
    block completes. :attr:`.temp_path` is the file workers write ranges into.
    """

    def __init__(self, path: str | os.PathLike[str], layout: CctLayout) -> None:
        super().__init__(path)
        self.layout = layout

    def _start(self, fh: BinaryIO) -> None:
        fh.write(encode_infos(self.layout))
        fh.truncate(self.layout.end)
        fh.flush()

    def _finish(self) -> None:
        assert self._fh is not None
        pwrite_all(self.fileno, dbf.footer(TAG), self.layout.end)
        self._fh.flush()

    def write_range(self, lo: int, hi: int, values: RangeValues) -> None:
        """Write the blocks of contexts ``lo..hi`` from values sorted by (context, metric, profile)."""
        assert self._fh is not None, "use the writer as a context manager"
        pwrite_all(self._fh.fileno(), encode_blocks(self.layout, lo, hi, values), int(self.layout.offsets[lo]))


def write_cctdb(path: str | os.PathLike[str], n_ctxs: int, values: RangeValues) -> None:
    """A whole cct.db from flat values (any order; see :func:`sort_values`)."""
    vals = sort_values(values.ctx_ids, values.metric_ids, values.prof_indices, values.values)
    ctx = vals.ctx_ids.astype(np.int64)
    if len(ctx) and int(ctx.max()) >= n_ctxs:
        raise ValueError(f"a value belongs to context {int(ctx.max())} but there are only {n_ctxs} ids")
    n_values = np.bincount(ctx, minlength=n_ctxs)
    key = (ctx << 16) | vals.metric_ids.astype(np.int64)
    firsts = np.r_[True, key[1:] != key[:-1]] if len(key) else np.zeros(0, bool)
    n_metrics = np.bincount(ctx[firsts], minlength=n_ctxs)
    layout = CctLayout.from_counts(n_values, n_metrics)
    with CctDBWriter(path, layout) as w:
        if n_ctxs:
            w.write_range(0, n_ctxs, vals)


def write_cctdb_from_profiledb(profiledb_path: str | os.PathLike[str], path: str | os.PathLike[str],
                               n_ctxs: int, *, layout: CctLayout | None = None, workers: int = 1,
                               range_bytes: int = 64 << 20) -> CctLayout:
    """Transpose a finished profile.db into a cct.db with ``n_ctxs`` context ids (max id + 1).

    ``layout`` comes from counts kept while the profiles were written; without
    it one extra pass over profile.db computes it. With ``workers > 1`` the
    context ranges are written by a process pool; the output is the same bytes.
    """
    profiledb_path = os.fspath(profiledb_path)
    pdb = ProfileDB(profiledb_path)
    if layout is None:
        layout = counts_from_profiledb(pdb, n_ctxs)
    elif layout.n_ctxs != n_ctxs:
        raise ValueError(f"the layout has {layout.n_ctxs} contexts, not {n_ctxs}")
    total = int(layout.block_size().sum())
    target = max(1 << 16, min(range_bytes, total // max(1, 3 * workers) + 1))
    ranges = layout.ranges(target)
    with CctDBWriter(path, layout) as w:
        if workers <= 1 or len(ranges) <= 1:
            indexes: dict[int, tuple[np.ndarray, np.ndarray]] = {}
            for lo, hi in ranges:
                w.write_range(lo, hi, gather_range(pdb, lo, hi, indexes))
        else:
            with LocalPool(workers, shared=layout) as pool:  # the layout is inherited, not sent per range
                for _ in pool.run(_transpose_task, [(profiledb_path, w.temp_path, lo, hi) for lo, hi in ranges]):
                    pass
    return layout
