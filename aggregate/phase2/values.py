"""Phase 2 of the aggregation, by batches of profiles: class 1 results, streamed to the output.

A batch is a run of consecutive profiles of the canonical order (:func:`.handoff.batch_bounds`). The second
reading of a profile finds its nodes in the union (the same path hashes as in phase 1), attributes every
value (x period) to its context — the "relation" context for ``move2proc`` metrics — redistributes
reconstructed GPU samples; for the batch's profiles at once (:func:`~hpcsa.aggregate.phase2.points.batch_points`).
The profiles of a batch are propagated together (:mod:`hpcsa.formats.db.propagate`: numpy's per-call costs
once per batch, each profile's sums as alone; whole-number metrics by exact prefix sums,
:mod:`.exact_sums`), and the batch gets, at offsets from a shared counter
(:class:`.handoff.Phase2Targets`):

- its profiles' PMS blobs (profile.db format), one after the other in canonical order: profile.db's thread
  blobs are the batches' blobs one after the other, copied a batch at a time;
- its run (:data:`.handoff.RUN_VALUE`): the same values in cct.db's order, (context, propMetricId,
  profile), with a context index, which phase 3 transposes;
- its aside run (:data:`.handoff.ASIDE`): what the summary needs beyond the stored values (loop-free
  sums of loops without values of their own, presence without values), in the same order;
- its profiles' trace lines, straight into their reserved regions of trace.db (one write: the regions of
  consecutive profiles follow one another): contexts mapped to the call context for call traces, elided
  instructions to their line, sorted by time when the measurement announced disorder, repeated blanks
  dropped (:mod:`~hpcsa.aggregate.phase2.traces`).

A batch returns small facts: where its blobs are, each profile's counts, how many values each context got
(for cct.db's layout), the traces' lengths and time range.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np

from hpcsa.aggregate.handoff import (
    ASIDE,
    ASIDE_NOLOOPS,
    ASIDE_PRESENT,
    RUN_INDEX,
    RUN_VALUE,
    BatchOutput,
    ClassTwo,
    Phase2Targets,
    pms_sizes,
    run_index_at,
)
from hpcsa.aggregate.phase2.exact_sums import propagate_batch
from hpcsa.aggregate.phase2.points import BatchPoints, batch_points
from hpcsa.aggregate.phase2.traces import trace_lines
from hpcsa.core.arrays import as_void, run_starts, take_records
from hpcsa.core.arrays import offsets as offsets_of
from hpcsa.core.errors import HpcsaError
from hpcsa.core.fileio import pwrite_all
from hpcsa.formats.db.dbformat import scatter_records
from hpcsa.formats.db.profiledb import CTX_INDEX, SZ_CTX_INDEX, SZ_VALUE, VALUE, ctx_indices_at
from hpcsa.formats.db.propagate import Propagated
from hpcsa.formats.db.tracedb import SZ_ELEMENT


def process_batch(c2: ClassTwo, batch: int, lo: int, hi: int, targets: Phase2Targets, *, traces: bool = True
                  ) -> BatchOutput:
    """Class 1 for batch ``batch``, profiles ``lo .. hi - 1`` of the canonical order (their second reading),
    propagated together."""
    n = hi - lo
    z = np.zeros(0, np.int64)
    if not n:
        return BatchOutput(batch, z, z, z, 0, 0, 0, 0, 0, 0, z, z, (z, z, np.zeros(0, np.uint64)))
    indexes = list(range(lo, hi))
    points = batch_points(c2, indexes)
    p = propagate_batch(points.ctx, points.metric, points.value, c2.tree, points.prof)
    vals, pid, keep = _stored(p, c2)
    # (profile, context, propMetricId) order: a metric's ids are in scope order. The [rows, 4 scopes] arrays
    # taken flat (a row is 4 cells): one 1-d nonzero and takes, not 2-d ones (several times faster)
    flat = np.flatnonzero(keep)
    rows = flat >> 2
    prof = p.prof[rows]
    ctx = p.ctx[rows]
    mids = pid.reshape(-1)[flat]
    values = vals.reshape(-1)[flat]
    pms, n_values, n_ctxs = pms_region(prof, ctx, mids, values, n)
    run, run_ctxs, counts = run_blob(prof + (lo + 1), ctx, mids, values, c2.n_prop_ids)
    aside = aside_run(p, keep, lo + 1)
    out = BatchOutput(batch, n_values, n_ctxs, np.zeros(n, np.int64), 0, 0, len(values), run_ctxs, 0, len(aside),
                      *counts, pending=(pms, run, aside.tobytes() if len(aside) else b""))
    if targets.allocate is not None:
        store(out, targets, targets.allocate)
    if traces and targets.trace_path and targets.trace_offsets is not None and len(targets.trace_offsets):
        _write_traces(c2, indexes, points, targets, out)
    return out


def _write_traces(c2: ClassTwo, indexes: list[int], points: BatchPoints, targets: Phase2Targets, out: BatchOutput
                  ) -> None:
    """The batch's trace lines, in one write: their regions follow one another in trace.db (consecutive
    profiles), and what lies between two lines is the zeros the file was made with."""
    assert targets.trace_path is not None and targets.trace_offsets is not None
    lines = [line for line in trace_lines(c2, indexes, points) if line is not None]
    if not lines:
        return
    lo = indexes[0]
    at = targets.trace_offsets
    base = int(at[lines[0][0]])
    end = max(int(at[index]) + SZ_ELEMENT * len(elem) for index, elem, _, _ in lines)
    image = np.zeros(end - base, np.uint8)
    for index, elem, first, last in lines:
        if len(elem) > c2.profiles.trace_records[index]:
            raise HpcsaError(c2.profiles.inputs.trace(index), "the trace grew between the two readings")
        start = int(at[index]) - base
        image[start:start + elem.nbytes] = elem.view(np.uint8)
        out.trace_count[index - lo] = len(elem)
        out.trace_min = first if out.trace_min is None else min(out.trace_min, first)
        out.trace_max = last if out.trace_max is None else max(out.trace_max, last)
    fd = os.open(targets.trace_path, os.O_WRONLY)
    try:
        pwrite_all(fd, image.data, base)
    finally:
        os.close(fd)


#: The scratch files a batch writes, in the order of :class:`.BatchOutput`'s ``pending``.
SCRATCH_KINDS = ("pms", "run", "aside")


def store(batch: BatchOutput, targets: Phase2Targets, allocate: Callable[[str, int], int]) -> None:
    """Write a batch's pending blobs at offsets from ``allocate`` (one allocation per scratch file)."""
    if batch.pending is None:
        return
    pms, run, aside = batch.pending
    batch.pending = None
    batch.pms_offset = allocate("pms", len(pms))
    _pwrite(targets.pms_path, batch.pms_offset, pms)
    batch.run_offset = allocate("run", len(run))
    _pwrite(targets.run_path, batch.run_offset, run)
    if aside:
        batch.aside_offset = allocate("aside", len(aside))
        _pwrite(targets.aside_path, batch.aside_offset, aside)


def _pwrite(path: str, offset: int, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        pwrite_all(fd, data, offset)
    finally:
        os.close(fd)


def _stored(p: Propagated, c2: ClassTwo) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The thread values hpcprof stores: (value matrix [rows, 4 scopes], propMetricIds, keep mask), each
    C-contiguous."""
    vals = np.stack([p.point, p.function, p.lex_aware, p.execution], axis=1)
    pid = np.take(c2.prop, p.metric, axis=0)
    return vals, pid, (vals != 0) & (pid >= 0)


def _cuts(sorted_prof: np.ndarray, n: int) -> np.ndarray:
    """Where each profile 0..n-1 of a batch starts among rows sorted by profile (and where the last ends)."""
    return np.searchsorted(sorted_prof, np.arange(n + 1))


def pms_region(prof: np.ndarray, ctx: np.ndarray, mids: np.ndarray, values: np.ndarray, n: int
               ) -> tuple[bytes, np.ndarray, np.ndarray]:
    """The PMS blobs (profile.db format) of the ``n`` profiles of a batch, one after the other: their bytes,
    and each profile's values and contexts. ``prof``, ``ctx``, ``mids``, ``values``: every stored value,
    sorted by (profile, context, propMetricId), which is the blobs' order.

    A blob is its values, zeros to a multiple of 4 bytes, then its context index (each context's first
    value); built for the batch at once, each record scattered to its place."""
    first = np.empty(len(ctx), bool)
    first[:1] = True
    np.not_equal(ctx[1:], ctx[:-1], out=first[1:])
    first[1:] |= prof[1:] != prof[:-1]
    starts = np.flatnonzero(first)
    vcut = _cuts(prof, n)
    ccut = _cuts(prof[starts], n)
    n_values, n_ctxs = np.diff(vcut), np.diff(ccut)
    sizes = pms_sizes(n_values, n_ctxs)
    blob_at = offsets_of(sizes)
    blob = bytearray(int(blob_at[-1]))  # zeros
    image = np.frombuffer(blob, np.uint8)
    value_rec = np.empty(len(mids), VALUE)
    value_rec["metricId"] = mids
    value_rec["value"] = values
    # a profile's values lie one after the other: value i at SZ_VALUE * i plus its profile's shift
    scatter_records(image, SZ_VALUE * np.arange(len(prof)) + np.repeat(blob_at[:-1] - SZ_VALUE * vcut[:-1], n_values),
                    value_rec)
    sp = prof[starts]
    index_rec = np.empty(len(starts), CTX_INDEX)
    index_rec["ctxId"] = ctx[starts]
    index_rec["startIndex"] = starts - vcut[sp]
    index_at = blob_at[:-1] + ctx_indices_at(n_values)
    scatter_records(image, SZ_CTX_INDEX * np.arange(len(starts)) + np.repeat(index_at - SZ_CTX_INDEX * ccut[:-1], n_ctxs),
                    index_rec)
    return bytes(blob), n_values, n_ctxs


#: Per context with values, how many, and the propMetricIds of each context as bits: (context, word, bits).
CctCounts = tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray]]


def run_blob(prof: np.ndarray, ctx: np.ndarray, mids: np.ndarray, values: np.ndarray, n_prop_ids: int
             ) -> tuple[bytes, int, CctCounts]:
    """A batch's run (:data:`.handoff.RUN_VALUE` records sorted by (context, propMetricId, profile), then its
    context index), its contexts, and what cct.db's layout needs of the batch: values per context, and as
    bits the propMetricIds each context has. ``prof``: profile.db's index of each value's profile; the
    values come sorted by (profile, context, propMetricId), so a stable sort by (context, metric) keeps
    each series in profile order (and merges the profiles' sorted runs)."""
    stride = max(1, n_prop_ids)
    key = ctx.astype(np.int64) * stride + mids
    # the narrowest key that holds it: numpy sorts 16-bit keys stably by radix sort, several times faster than
    # the merge sort of wider ones (a stable sort's result is the same either way)
    if len(key) and int(key.max()) < 1 << 16:
        key = key.astype(np.uint16)
    order = np.argsort(key, kind="stable")
    # the records made in the input's order and taken whole (one gather of records, not one per field)
    rec = np.empty(len(order), RUN_VALUE)
    rec["mid"] = mids
    rec["prof"] = prof
    rec["value"] = values
    n_index = int(run_index_at(len(rec)))
    # what depends on (context, metric) only, from the distinct pairs: a run of equal keys is one pair
    skey = key[order]
    pair_at = np.flatnonzero(run_starts(skey)) if len(skey) else np.zeros(0, np.int64)
    pctx, pmid = np.divmod(skey[pair_at].astype(np.int64), stride)
    new_ctx = run_starts(pctx) if len(pctx) else np.zeros(0, bool)
    first = pair_at[new_ctx]
    uctx = pctx[new_ctx]
    blob = bytearray(n_index + len(first) * RUN_INDEX.itemsize)
    np.take(as_void(rec), order, out=np.frombuffer(blob, as_void(rec).dtype, len(rec)))
    index = np.frombuffer(blob, RUN_INDEX, len(first), n_index)
    index["ctx"] = uctx
    index["start"] = first
    n_per_ctx = np.diff(np.append(first, len(skey)))
    # propMetricIds as bits per (context, word): the sorted (context, metric) order is (context, word) order
    words = max(1, (n_prop_ids + 63) // 64)
    cw = pctx * words + (pmid >> 6)
    bit = np.left_shift(np.uint64(1), (pmid & 63).astype(np.uint64))
    grp = np.flatnonzero(run_starts(cw)) if len(cw) else np.zeros(0, np.int64)
    bits = np.bitwise_or.reduceat(bit, grp) if len(grp) else np.zeros(0, np.uint64)
    # 32-bit contexts, counts and words: a pool worker's result (an MPI rank's workers) pickles to about half
    # the bytes (a pipe holds 64 KiB)
    counts = (uctx.astype(np.int32), n_per_ctx.astype(np.int32),
              ((cw[grp] // words).astype(np.int32), (cw[grp] % words).astype(np.int32), bits))
    return bytes(blob), len(first), counts


def aside_run(p: Propagated, keep: np.ndarray, prof_base: int) -> np.ndarray:
    """Loop-free sums the thread values do not carry, and presence without any stored value: ASIDE records
    sorted by (context, key, profile) (``prof_base``: profile.db's index of the batch's first profile)."""
    nl = np.flatnonzero(p.aside)
    # rows without a stored value: a row's 4 bools as one 32-bit word (any(axis=1) reduces 4 items at a time)
    none = keep.view(np.uint32).reshape(-1) == 0 if keep.shape[1:] == (4,) and keep.flags.c_contiguous \
        else ~keep.any(axis=1)
    pres = np.flatnonzero(none)
    out = np.empty(len(nl) + len(pres), ASIDE)
    out["ctx"] = np.concatenate([p.ctx[nl], p.ctx[pres]])
    out["key"] = np.concatenate([p.metric[nl] * 2 + ASIDE_NOLOOPS, p.metric[pres] * 2 + ASIDE_PRESENT])
    out["prof"] = np.concatenate([p.prof[nl], p.prof[pres]]) + prof_base
    out["value"] = np.concatenate([p.noloops[nl], np.ones(len(pres))])
    return take_records(out, np.lexsort((out["prof"], out["key"], out["ctx"])))
