"""Phase 2 of the aggregation, by batches of profiles: class 1 results, streamed to the output.

The second reading of a profile finds its nodes in the union (the same path
hashes as in phase 1), attributes every value (x period) to its context —
the "relation" context for ``move2proc`` metrics — redistributes
reconstructed GPU samples; for the batch's profiles at once
(:func:`batch_points`). The profiles of a batch are propagated together
(:mod:`propagate`: numpy's per-call costs once per batch, each profile's sums
as alone), and each profile gets:

- its PMS blob (profile.db format) in a scratch file, the batch's blobs one
  after the other at an offset from a shared counter (:class:`Sinks`), where the transposition reads it back and
  from which the final profile.db is assembled in canonical order;
- an "aside" blob with what the summary needs beyond the PMS values (loop-free
  sums of loops without values of their own, presence without values);
- its trace line, straight into its reserved region of trace.db: contexts
  mapped to the call context for call traces, elided instructions to their
  line, sorted by time when the measurement announced disorder, repeated
  blanks dropped.

A batch returns small facts: where the blobs are, how many values each context
got (for cct.db's layout), the traces' lengths and time ranges.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np

from hpcsa.aggregate.prof import rawtree
from hpcsa.aggregate.prof.gpu_contexts import RECONSTRUCTED, GpuPart
from hpcsa.aggregate.prof.profile_table import ProfileInput
from hpcsa.aggregate.prof.survey import KEPT_NODE, NodeIndex, kept_many, second_reading
from hpcsa.aggregate.prof.unified_tables import ClassTwo
from hpcsa.core.arrays import concat_records, offsets
from hpcsa.core.binfmt import align
from hpcsa.core.dataclass import dataclass
from hpcsa.core.errors import HpcsaError
from hpcsa.core.fileio import pwrite_all
from hpcsa.formats.db import tracedb
from hpcsa.formats.db.profiledb import CTX_INDEX, SZ_VALUE, VALUE
from hpcsa.formats.db.propagate import Propagated, propagate
from hpcsa.formats.measurement.hpcrun import CCT_NODE, SPARSE_INDEX, SPARSE_VALUE, HpcrunProfile
from hpcsa.formats.measurement.hpctrace import FLAG_CALL_TRACE, read_hpctrace

#: The aside blob: per context, per metric, what kind of number (0: loop-free sum, 1: present) and it.
ASIDE = np.dtype([("ctx", "<u4"), ("key", "<u4"), ("value", "<f8")])
ASIDE_NOLOOPS, ASIDE_PRESENT = 0, 1


@dataclass
class Sinks:
    """Where class 1 results go: scratch files with their allocators, and the trace file.

    ``allocate(kind, nbytes)`` returns an offset in the scratch file of that
    kind ("pms" or "aside"); locally a counter shared by the worker processes,
    over MPI an atomic counter shared by the ranks. Where the process that
    computes a profile cannot use the counter (an MPI rank's forked workers),
    ``allocate`` is None: the blobs come back in :attr:`BatchOutput.pending`
    and the rank stores them (:func:`store`).
    """

    pms_path: str
    aside_path: str
    trace_path: str | None
    trace_offsets: np.ndarray | None  # int64 offset of each profile's region of trace.db
    allocate: Callable[[str, int], int] | None


@dataclass
class ProfileOutput:
    """Where phase 2 put one profile's values (its PMS blob, the values set aside) and its trace."""

    index: int            # canonical profile number (0-based; profile.db index - 1)
    pms_offset: int       # in the scratch file (relative to its batch's blobs until they are stored)
    n_values: int
    n_ctxs: int
    pms_size: int
    aside_offset: int
    n_aside: int
    trace_count: int = 0
    trace_min: int | None = None
    trace_max: int | None = None


@dataclass
class BatchOutput:
    """A batch of profiles' class 1 facts: each profile's placement, and what cct.db's layout needs of
    them together (each context and each (context, word) once)."""

    profiles: list[ProfileOutput]
    ctx: np.ndarray           # contexts with values
    n_ctx_values: np.ndarray  # values per such context, over the batch
    ctx_metric_bits: tuple[np.ndarray, np.ndarray, np.ndarray]  # (context, word, bits) of the propMetricIds
    pending: tuple[bytes, bytes] | None = None  # the batch's (PMS blobs, aside blobs) not yet written


def store(batch: BatchOutput, sinks: Sinks, allocate: Callable[[str, int], int]) -> None:
    """Write a batch's pending blobs at offsets from ``allocate`` (one allocation per scratch file), and
    make its profiles' offsets absolute."""
    if batch.pending is None:
        return
    pms, aside = batch.pending
    batch.pending = None
    pms_base = allocate("pms", len(pms))
    _pwrite(sinks.pms_path, pms_base, pms)
    aside_base = 0
    if aside:
        aside_base = allocate("aside", len(aside))
        _pwrite(sinks.aside_path, aside_base, aside)
    for o in batch.profiles:
        o.pms_offset += pms_base
        o.aside_offset = o.aside_offset + aside_base if o.n_aside else 0


def _pwrite(path: str, offset: int, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        pwrite_all(fd, data, offset)
    finally:
        os.close(fd)


@dataclass
class Points:
    """One profile's point values (context, global metric, value) and its node -> context maps (traces)."""

    ctx: np.ndarray
    metric: np.ndarray
    value: np.ndarray
    full: np.ndarray   # context of each CCT node (-1: none)
    rel: np.ndarray    # its "relation" context
    ids: np.ndarray    # the CCT node ids


def profile_points(c2: ClassTwo, index: int) -> Points:
    """Profile ``index`` of the canonical order, as phase 1 kept it: its point values."""
    facts = c2.profiles[index]
    prof, raw, nodes, gpu = second_reading(facts, c2.metric_tables[facts.metrics], c2.loadmaps[facts.loadmap],
                                           c2.env)
    return point_values(prof, raw, nodes, gpu, facts.input, c2, facts.metrics)


def point_values(prof: HpcrunProfile, raw: rawtree.RawNodes, index: NodeIndex, gpu: GpuPart, inp: ProfileInput,
                 c2: ClassTwo, table: int | None = None) -> Points:
    """(context, metric, value) of every value of the profile, plus the node -> (full, rel) contexts and
    CCT ids (for traces)."""
    ids = index.ids
    rows = rawtree.find(c2.raw_h1, raw.nodes["h1"], c2.raw_h2, raw.nodes["h2"])
    if (rows < 0).any():
        raise HpcsaError(inp.path, "the profile changed between its two readings (a node is not in the union)")
    full = c2.raw_full[rows]
    rel = c2.raw_rel[rows]
    n = len(ids)
    if table is not None and table < len(c2.metric_inputs):
        glob, period, m2p = c2.metric_inputs[table]
    else:
        glob, period, m2p = c2.metrics.input_arrays(prof.metrics)
    ctx_parts, met_parts, val_parts = [], [], []
    if len(prof.values):
        vrow = index.rows(prof.value_nodes().astype(np.int64))
        if (vrow < 0).any():
            raise HpcsaError(inp.path, "sparse metrics: values for a CCT node that is not in the CCT")
        local = prof.values["metric"].astype(np.int64)
        vals = prof.value_floats() * period[local]
        gl = glob[local]
        ctx = np.where(m2p[local], rel[vrow], full[vrow])
        keep = (gl >= 0) & ((raw.nodes["flag"][vrow] & RECONSTRUCTED) == 0) & (ctx >= 0)
        ctx_parts.append(ctx[keep])
        met_parts.append(gl[keep])
        val_parts.append(vals[keep])
    if len(gpu.point_nodes):
        pctx = full[n + gpu.point_nodes]
        cols = glob[gpu.metrics]
        rr, cc = np.nonzero(gpu.values)
        keep = cols[cc] >= 0
        ctx_parts.append(pctx[rr][keep])
        met_parts.append(cols[cc][keep])
        val_parts.append(gpu.values[rr, cc][keep])
    if len(ctx_parts) == 1:
        return Points(ctx_parts[0], met_parts[0], val_parts[0], full[:n], rel[:n], ids)
    if ctx_parts:
        return Points(np.concatenate(ctx_parts), np.concatenate(met_parts), np.concatenate(val_parts), full[:n],
                      rel[:n], ids)
    z = np.zeros(0, np.int64)
    return Points(z, z, np.zeros(0), full[:n], rel[:n], ids)


@dataclass
class BatchPoints:
    """A batch's point values, profile by profile in the batch's order (``prof``: the profile's place in the
    batch), and each CCT node of its profiles (profile ``k``'s are rows ``cut[k]:cut[k + 1]``): its id and
    contexts, for the traces."""

    prof: np.ndarray
    ctx: np.ndarray
    metric: np.ndarray
    value: np.ndarray
    cut: np.ndarray
    ids: np.ndarray
    full: np.ndarray
    rel: np.ndarray

    @classmethod
    def of(cls, points: list[Points]) -> BatchPoints:
        n = len(points)
        cut = offsets([len(pt.ids) for pt in points])
        z = np.zeros(0, np.int64)
        return cls(np.repeat(np.arange(n), [len(pt.ctx) for pt in points]),
                   *(np.concatenate([getattr(pt, name) for pt in points]) if n else z
                     for name in ("ctx", "metric", "value")),
                   cut, *(np.concatenate([getattr(pt, name) for pt in points]) if n else z
                          for name in ("ids", "full", "rel")))

    def points(self, k: int) -> Points:
        """Profile ``k``'s points, as :func:`profile_points` gives them."""
        lo, hi = np.searchsorted(self.prof, [k, k + 1])
        a, b = int(self.cut[k]), int(self.cut[k + 1])
        return Points(self.ctx[lo:hi], self.metric[lo:hi], self.value[lo:hi], self.full[a:b], self.rel[a:b],
                      self.ids[a:b])


def batch_points(c2: ClassTwo, indexes: list[int]) -> BatchPoints:
    """:func:`profile_points` of profiles ``indexes`` of the canonical order, worked out for the batch at once
    from what phase 1 kept (a thousand threads' small profiles: numpy's per-call cost once per batch, not
    per profile). Where something is amiss the profiles are taken one by one, which names the profile."""
    kept = kept_many(c2.profiles, indexes)
    got = _batch_points(c2, indexes, kept) if kept is not None else None
    return got if got is not None else BatchPoints.of([profile_points(c2, i) for i in indexes])


def _batch_points(c2: ClassTwo, indexes: list[int], kept: list[tuple[list[np.ndarray], GpuPart]]
                  ) -> BatchPoints | None:
    """:func:`batch_points` from the kept arrays, or None where a check of :func:`point_values` fails for
    some profile."""
    n = len(indexes)
    parts = list(zip(*(arrays for arrays, _ in kept), strict=True)) if n else [()] * 4
    ccts, nodes, values, sparse = parts
    gpus = [gpu for _, gpu in kept]
    n_cct, n_node, n_val, n_idx = (np.fromiter(map(len, col), np.int64, n) for col in parts)
    ccut, kcut = offsets(n_cct), offsets(n_node)
    node = concat_records(list(nodes), KEPT_NODE)
    rows = rawtree.find(c2.raw_h1, node["h1"], c2.raw_h2, node["h2"])
    if (rows < 0).any():
        return None
    full_k, rel_k = c2.raw_full[rows], c2.raw_rel[rows]
    cct_prof = np.repeat(np.arange(n), n_cct)
    cct_row = np.arange(int(ccut[-1])) - ccut[cct_prof] + kcut[cct_prof]  # each CCT row's kept row
    ids = concat_records(list(ccts), CCT_NODE)["id"].astype(np.int64)
    full, rel = full_k[cct_row], rel_k[cct_row]
    # The values: each one's node (through its profile's sparse index), then its CCT row.
    index = concat_records(list(sparse), SPARSE_INDEX)  # (each starts at value 0: the reader's rule)
    starts = index["start"].astype(np.int64)
    vals = concat_records(list(values), SPARSE_VALUE)
    val_prof = np.repeat(np.arange(n), n_val)
    idx_prof = np.repeat(np.arange(n), n_idx)
    counts = np.diff(np.append(starts + offsets(n_val)[idx_prof], len(vals)))
    value_node = np.repeat(index["node"].astype(np.int64), counts)
    if len(vals) and not len(ids):
        return None
    key = cct_prof << 32 | ids
    by_key = np.argsort(key, kind="stable")
    want = val_prof << 32 | value_node
    at = np.minimum(np.searchsorted(key[by_key], want), max(len(key) - 1, 0))
    if len(want) and not (key[by_key][at] == want).all():
        return None
    vrow = cct_row[by_key[at]] if len(want) else np.zeros(0, np.int64)
    # Each profile's metric table: global metric, period, move2proc and integer format by (table, local id).
    tables = c2.profiles.metrics[np.asarray(indexes, np.int64)] if n else np.zeros(0, np.int32)
    distinct = sorted(set(tables.tolist()))
    inputs = [c2.metric_inputs[t] if t < len(c2.metric_inputs) else c2.metrics.input_arrays(c2.metric_tables[t])
              for t in distinct]
    n_metrics = np.array([len(c2.metric_tables[t]) for t in distinct], np.int64)
    base = offsets(np.array([len(i[0]) for i in inputs], np.int64))
    slot = np.searchsorted(distinct, tables)
    glob, period, m2p = (np.concatenate([i[j] for i in inputs]) if inputs else np.zeros(0) for j in range(3))
    is_int = np.concatenate([np.array([m.is_int for m in c2.metric_tables[t]] or [False], bool) for t in distinct]
                            ) if distinct else np.zeros(0, bool)
    local = vals["metric"].astype(np.int64)
    if (local >= n_metrics[slot[val_prof]]).any():
        return None
    g = base[slot[val_prof]] + local
    bits = vals["bits"].astype(np.uint64)
    value = np.where(is_int[g], bits.astype(np.float64), bits.view(np.float64)) * period[g]
    gl = glob[g]
    ctx = np.where(m2p[g], rel_k[vrow], full_k[vrow])
    keep = (gl >= 0) & ((node["flag"][vrow] & RECONSTRUCTED) == 0) & (ctx >= 0)
    prof_parts, ctx_parts, met_parts, val_parts = [val_prof[keep]], [ctx[keep]], [gl[keep]], [value[keep]]
    for k, gpu in enumerate(gpus):  # reconstructed GPU samples: after the profile's own values
        if len(gpu.point_nodes):
            if len(gpu.metrics) and int(gpu.metrics.max()) >= base[slot[k] + 1] - base[slot[k]]:
                return None
            pctx = full_k[kcut[k] + n_cct[k] + gpu.point_nodes]
            cols = glob[base[slot[k]] + gpu.metrics]
            rr, cc = np.nonzero(gpu.values)
            ok = cols[cc] >= 0
            prof_parts.append(np.full(int(ok.sum()), k))
            ctx_parts.append(pctx[rr][ok])
            met_parts.append(cols[cc][ok])
            val_parts.append(gpu.values[rr, cc][ok])
    prof, ctx, metric, value = (np.concatenate(p) for p in (prof_parts, ctx_parts, met_parts, val_parts))
    if len(prof_parts) > 1:
        order = np.argsort(prof, kind="stable")
        prof, ctx, metric, value = prof[order], ctx[order], metric[order], value[order]
    return BatchPoints(prof, ctx, metric, value, ccut, ids, full, rel)


def _stored(p: Propagated, c2: ClassTwo) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The thread values hpcprof stores: (value matrix [rows, 4 scopes], propMetricIds, keep mask)."""
    vals = np.stack([p.point, p.function, p.lex_aware, p.execution], axis=1)
    pid = c2.prop[p.metric]
    return vals, pid, (vals != 0) & (pid >= 0)


def _cuts(sorted_prof: np.ndarray, n: int) -> np.ndarray:
    """Where each profile 0..n-1 of a batch starts among rows sorted by profile (and where the last ends)."""
    return np.searchsorted(sorted_prof, np.arange(n + 1))


def pms_blobs(p: Propagated, c2: ClassTwo, n: int) -> tuple[bytes, np.ndarray, np.ndarray, np.ndarray,
                                                              tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The PMS blobs (profile.db format) of the ``n`` profiles of a batch, one after the other: (their bytes,
    where each starts in them, values and contexts of each), and the batch's values per context and
    propMetricId bits per (context, word).

    A profile's values are every non-zero scope value of every (context, metric). Rows are sorted by
    (profile, context, metric) and a metric's ids are a block in scope order, so the row-major order of
    the kept matrix entries is already (profile, context, propMetricId) order.
    """
    vals, pid, keep = _stored(p, c2)
    rows, cols = np.nonzero(keep)
    ctx = p.ctx[rows]
    prof = p.prof[rows]
    mids = pid[rows, cols]
    first = np.empty(len(ctx), bool)
    first[:1] = True
    np.not_equal(ctx[1:], ctx[:-1], out=first[1:])
    first[1:] |= prof[1:] != prof[:-1]
    starts = np.flatnonzero(first)
    vcut = _cuts(prof, n)
    ccut = _cuts(prof[starts], n)
    value_rec = np.zeros(len(mids), VALUE)
    value_rec["metricId"] = mids
    value_rec["value"] = vals[rows, cols]
    index_rec = np.zeros(len(starts), CTX_INDEX)
    index_rec["ctxId"] = ctx[starts]
    index_rec["startIndex"] = starts - vcut[prof[starts]]
    vbytes, ibytes = value_rec.tobytes(), index_rec.tobytes()
    blobs, offsets, at = [], np.zeros(n, np.int64), 0
    for k in range(n):
        v0, v1, c0, c1 = int(vcut[k]), int(vcut[k + 1]), int(ccut[k]), int(ccut[k + 1])
        pad = align((v1 - v0) * SZ_VALUE, 4) - (v1 - v0) * SZ_VALUE
        blobs += [vbytes[v0 * SZ_VALUE:v1 * SZ_VALUE], bytes(pad), ibytes[c0 * CTX_INDEX.itemsize:c1 * CTX_INDEX.itemsize]]
        offsets[k] = at
        at += align((v1 - v0) * SZ_VALUE, 4) + (c1 - c0) * CTX_INDEX.itemsize
    # cct.db layout: values per context, and as bits the propMetricIds each context has.
    uctx, n_per_ctx = np.unique(ctx, return_counts=True)
    mids = mids.astype(np.int64)
    words = max(1, (c2.n_prop_ids + 63) // 64)
    cw = ctx * words + (mids >> 6)
    order = np.argsort(cw, kind="stable")
    cw = cw[order]
    bit = np.left_shift(np.uint64(1), (mids[order] & 63).astype(np.uint64))
    grp = np.flatnonzero(np.r_[True, cw[1:] != cw[:-1]]) if len(cw) else np.zeros(0, np.int64)
    bits = np.bitwise_or.reduceat(bit, grp) if len(grp) else np.zeros(0, np.uint64)
    return (b"".join(blobs), offsets, np.diff(vcut), np.diff(ccut),
            (uctx, n_per_ctx.astype(np.int64), (cw[grp] // words, cw[grp] % words, bits)))


def aside_values(p: Propagated, c2: ClassTwo) -> np.ndarray:
    """Loop-free sums the thread values do not carry, and presence without any stored value, with the
    profile (of the batch) of each: ASIDE records sorted by (profile, context, key), and the profiles."""
    _, _, keep = _stored(p, c2)
    nl = np.flatnonzero(p.aside)
    pres = np.flatnonzero(~keep.any(axis=1))
    out = np.zeros(len(nl) + len(pres), ASIDE)
    out["ctx"] = np.concatenate([p.ctx[nl], p.ctx[pres]])
    out["key"] = np.concatenate([p.metric[nl] * 2 + ASIDE_NOLOOPS, p.metric[pres] * 2 + ASIDE_PRESENT])
    out["value"] = np.concatenate([p.noloops[nl], np.ones(len(pres))])
    prof = np.concatenate([p.prof[nl], p.prof[pres]])
    order = np.lexsort((out["key"], out["ctx"], prof))
    return out[order], prof[order]


def trace_lines(c2: ClassTwo, indexes: list[int], points: BatchPoints
                ) -> list[tuple[int, np.ndarray, int, int] | None]:
    """The trace.db lines of a batch's profiles: per profile (index, ELEMENT records, time range of its
    timepoints), or None without a trace. Each .hpctrace is read, then all are mapped together: node ids
    to the context (the call context for call traces), elided instructions to their line, sorted by time
    where the measurement announced disorder, repeated blanks dropped."""
    recs, ks = [], []
    table = c2.profiles
    for k, index in enumerate(indexes):
        if table.inputs.has_trace[index] and table.trace_records[index]:
            tr = read_hpctrace(table.inputs.trace(index))
            recs.append((tr.records, (tr.flags & FLAG_CALL_TRACE) != 0))
            ks.append(k)
    out: list[tuple[int, np.ndarray, int, int] | None] = [None] * len(indexes)
    if not ks:
        return out
    n_rec = np.array([len(r) for r, _ in recs], np.int64)
    b = np.repeat(np.arange(len(ks)), n_rec)  # the traced profile of each record
    times = np.concatenate([r["time"] for r, _ in recs]).astype(np.uint64)
    nodes = np.concatenate([r["ctx"] for r, _ in recs]).astype(np.int64)
    # each traced profile's nodes: (traced profile, node id) keys, sorted once for the batch
    traced = np.full(len(indexes), -1, np.int64)
    traced[ks] = np.arange(len(ks))
    j = traced[np.repeat(np.arange(len(indexes)), np.diff(points.cut))]
    rows = np.flatnonzero(j >= 0)
    j = j[rows]
    call = np.array([c for _, c in recs], bool)
    ctx_of = np.where(call[j], points.rel[rows], points.full[rows])
    id_key = (j << 32) | points.ids[rows].astype(np.int64)
    order = np.argsort(id_key, kind="stable")
    id_key = id_key[order]
    want = (b << 32) | nodes
    pos = np.minimum(np.searchsorted(id_key, want), max(len(id_key) - 1, 0))
    found = id_key[pos] == want if len(id_key) else np.zeros(len(want), bool)
    ctx = np.where(found, ctx_of[order[pos]] if len(id_key) else -1, -1)
    keep = ctx >= 0
    times, ctx, b = times[keep], ctx[keep], b[keep]
    cut = np.searchsorted(b, np.arange(len(ks) + 1))
    nonempty = np.flatnonzero(np.diff(cut) > 0)
    lo = np.minimum.reduceat(times, cut[nonempty]) if len(nonempty) else np.zeros(0, np.uint64)
    hi = np.maximum.reduceat(times, cut[nonempty]) if len(nonempty) else np.zeros(0, np.uint64)
    disorder = table.trace_disorder[np.asarray(indexes, np.int64)[ks]] > 0
    if disorder.any():  # by time within each such profile (stable); the others keep their order
        within = np.arange(len(times), dtype=np.uint64) - cut[b].astype(np.uint64)
        o = np.lexsort((np.where(disorder[b], times, within), b))
        times, ctx = times[o], ctx[o]
    tid = c2.trace_id[ctx]
    blank = tid == 0
    drop = blank & np.r_[False, blank[:-1] & (b[1:] == b[:-1])]
    elem = tracedb.elements(times[~drop], tid[~drop].astype(np.uint32))
    cut = np.searchsorted(b[~drop], np.arange(len(ks) + 1))
    ranges = dict(zip(nonempty.tolist(), zip(lo.tolist(), hi.tolist(), strict=True), strict=True))
    for j, k in enumerate(ks):
        if j in ranges:
            out[k] = (indexes[k], elem[cut[j]:cut[j + 1]], *ranges[j])
    return out


def process_batch(c2: ClassTwo, indexes: list[int], sinks: Sinks, *, traces: bool = True) -> BatchOutput:
    """Class 1 for profiles ``indexes`` of the canonical order (their second reading), propagated together."""
    outs: list[ProfileOutput] = []
    if not indexes:
        z = np.zeros(0, np.int64)
        return BatchOutput([], z, z, (z, z, np.zeros(0, np.uint64)))
    points = batch_points(c2, indexes)
    n = len(indexes)
    p = propagate(points.ctx, points.metric, points.value, c2.tree, points.prof)
    pms, offsets, n_values, n_ctxs, (uctx, n_per_ctx, bits) = pms_blobs(p, c2, n)
    aside, aside_prof = aside_values(p, c2)
    acut = _cuts(aside_prof, n)
    sizes = np.diff(np.append(offsets, len(pms)))
    for k, index in enumerate(indexes):
        outs.append(ProfileOutput(index, int(offsets[k]), int(n_values[k]), int(n_ctxs[k]), int(sizes[k]),
                                  int(acut[k]) * ASIDE.itemsize, int(acut[k + 1] - acut[k])))
    bc, bw, bb = bits
    # 32-bit contexts, counts and words: a pool worker's result (an MPI rank's workers) pickles to about half the
    # bytes (a pipe holds 64 KiB)
    batch = BatchOutput(outs, uctx.astype(np.int32), n_per_ctx.astype(np.int32),
                        (bc.astype(np.int32), bw.astype(np.int32), bb),
                        pending=(pms, aside.tobytes() if len(aside) else b""))
    if sinks.allocate is not None:
        store(batch, sinks, sinks.allocate)
    if traces and sinks.trace_path and sinks.trace_offsets is not None and len(sinks.trace_offsets):
        lines = trace_lines(c2, indexes, points)
        fd = os.open(sinks.trace_path, os.O_WRONLY)
        try:
            for out, line in zip(outs, lines, strict=True):
                if line is None:
                    continue
                index, elem, lo, hi = line
                if len(elem) > c2.profiles.trace_records[index]:
                    raise HpcsaError(c2.profiles.inputs.trace(index), "the trace grew between the two readings")
                pwrite_all(fd, elem.tobytes(), int(sinks.trace_offsets[index]))
                out.trace_count, out.trace_min, out.trace_max = len(elem), lo, hi
        finally:
            os.close(fd)
    return batch
