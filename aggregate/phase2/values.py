"""Phase 2 of the aggregation, by batches of profiles: class 1 results, streamed to the output.

The second reading of a profile finds its nodes in the union (the same path
hashes as in phase 1), attributes every value (x period) to its context —
the "relation" context for ``move2proc`` metrics — redistributes
reconstructed GPU samples; for the batch's profiles at once
(:func:`~hpcsa.aggregate.phase2.points.batch_points`). The profiles of a batch are propagated together
(:mod:`hpcsa.formats.db.propagate`: numpy's per-call costs once per batch, each profile's sums
as alone), and each profile gets:

- its PMS blob (profile.db format) in a scratch file, the batch's blobs one
  after the other at an offset from a shared counter (:class:`.handoff.Phase2Targets`),
  where the transposition reads it back and from which the final profile.db
  is assembled in canonical order;
- an "aside" blob with what the summary needs beyond the PMS values (loop-free
  sums of loops without values of their own, presence without values);
- its trace line, straight into its reserved region of trace.db: contexts
  mapped to the call context for call traces, elided instructions to their
  line, sorted by time when the measurement announced disorder, repeated
  blanks dropped (:mod:`~hpcsa.aggregate.phase2.traces`).

A batch returns small facts: where the blobs are, how many values each context
got (for cct.db's layout), the traces' lengths and time ranges.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np

from hpcsa.aggregate.handoff import (
    ASIDE,
    ASIDE_NOLOOPS,
    ASIDE_PRESENT,
    BatchOutput,
    ClassTwo,
    Phase2Targets,
    ProfileOutput,
)
from hpcsa.aggregate.phase2.points import batch_points
from hpcsa.aggregate.phase2.traces import trace_lines
from hpcsa.core.binfmt import align
from hpcsa.core.errors import HpcsaError
from hpcsa.core.fileio import pwrite_all
from hpcsa.formats.db.profiledb import CTX_INDEX, SZ_VALUE, VALUE
from hpcsa.formats.db.propagate import Propagated, propagate


def process_batch(c2: ClassTwo, indexes: list[int], targets: Phase2Targets, *, traces: bool = True
                  ) -> BatchOutput:
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
    if targets.allocate is not None:
        store(batch, targets, targets.allocate)
    if traces and targets.trace_path and targets.trace_offsets is not None and len(targets.trace_offsets):
        lines = trace_lines(c2, indexes, points)
        fd = os.open(targets.trace_path, os.O_WRONLY)
        try:
            for out, line in zip(outs, lines, strict=True):
                if line is None:
                    continue
                index, elem, lo, hi = line
                if len(elem) > c2.profiles.trace_records[index]:
                    raise HpcsaError(c2.profiles.inputs.trace(index), "the trace grew between the two readings")
                pwrite_all(fd, elem.tobytes(), int(targets.trace_offsets[index]))
                out.trace_count, out.trace_min, out.trace_max = len(elem), lo, hi
        finally:
            os.close(fd)
    return batch


def store(batch: BatchOutput, targets: Phase2Targets, allocate: Callable[[str, int], int]) -> None:
    """Write a batch's pending blobs at offsets from ``allocate`` (one allocation per scratch file), and
    make its profiles' offsets absolute."""
    if batch.pending is None:
        return
    pms, aside = batch.pending
    batch.pending = None
    pms_base = allocate("pms", len(pms))
    _pwrite(targets.pms_path, pms_base, pms)
    aside_base = 0
    if aside:
        aside_base = allocate("aside", len(aside))
        _pwrite(targets.aside_path, aside_base, aside)
    for o in batch.profiles:
        o.pms_offset += pms_base
        o.aside_offset = o.aside_offset + aside_base if o.n_aside else 0


def _pwrite(path: str, offset: int, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        pwrite_all(fd, data, offset)
    finally:
        os.close(fd)


def _stored(p: Propagated, c2: ClassTwo) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The thread values hpcprof stores: (value matrix [rows, 4 scopes], propMetricIds, keep mask)."""
    vals = np.stack([p.point, p.function, p.lex_aware, p.execution], axis=1)
    pid = c2.prop[p.metric]
    return vals, pid, (vals != 0) & (pid >= 0)


def _cuts(sorted_prof: np.ndarray, n: int) -> np.ndarray:
    """Where each profile 0..n-1 of a batch starts among rows sorted by profile (and where the last ends)."""
    return np.searchsorted(sorted_prof, np.arange(n + 1))


#: Per context with values, how many, and the propMetricIds of each context as bits: (context, word, bits).
CctCounts = tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray]]


def pms_blobs(p: Propagated, c2: ClassTwo, n: int
              ) -> tuple[bytes, np.ndarray, np.ndarray, np.ndarray, CctCounts]:
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


def aside_values(p: Propagated, c2: ClassTwo) -> tuple[np.ndarray, np.ndarray]:
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
