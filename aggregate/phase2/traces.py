"""Phase 2's trace lines: a batch's ``.hpctrace`` files mapped onto the unified tree, for trace.db.

Each profile's trace line goes straight into its region of trace.db, which rank 0's trace.db sink reserved
for it (:meth:`.sinks.TraceSink.begin`); its records are those phase 1 kept (:mod:`.kept`), or, for a large
trace, read from its file: node ids mapped to the context (the call context for call traces),
elided instructions to their line, sorted by time when the measurement announced disorder, repeated blanks
dropped.
"""

from __future__ import annotations

import numpy as np

from hpcsa.aggregate.handoff import ClassTwo
from hpcsa.aggregate.phase2.points import BatchPoints
from hpcsa.formats.db import tracedb
from hpcsa.formats.measurement.hpctrace import FLAG_CALL_TRACE, read_hpctrace


def trace_lines(c2: ClassTwo, indexes: list[int], points: BatchPoints
                ) -> list[tuple[int, np.ndarray, int, int] | None]:
    """The trace.db lines of a batch's profiles: per profile (index, ELEMENT records, time range of its
    timepoints), or None without a trace. Each .hpctrace is read, then all are mapped together: node ids
    to the context (the call context for call traces), elided instructions to their line, sorted by time
    where the measurement announced disorder, repeated blanks dropped."""
    recs, ks = [], []
    table = c2.profiles
    kept_flags = points.trace_flags
    for k, index in enumerate(indexes):
        if not table.trace_records[index]:
            continue
        if kept_flags is not None and kept_flags[k] >= 0:  # kept by phase 1
            assert points.traces is not None and points.trace_cut is not None
            lo, hi = int(points.trace_cut[k]), int(points.trace_cut[k + 1])
            recs.append((points.traces[lo:hi], (int(kept_flags[k]) & FLAG_CALL_TRACE) != 0))
            ks.append(k)
        elif (path := table.inputs.trace(index)) is not None:
            tr = read_hpctrace(path)
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
    first = np.minimum.reduceat(times, cut[nonempty]) if len(nonempty) else np.zeros(0, np.uint64)
    last = np.maximum.reduceat(times, cut[nonempty]) if len(nonempty) else np.zeros(0, np.uint64)
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
    ranges = dict(zip(nonempty.tolist(), zip(first.tolist(), last.tolist(), strict=True), strict=True))
    for t, k in enumerate(ks):
        if t in ranges:
            out[k] = (indexes[k], elem[cut[t]:cut[t + 1]], *ranges[t])
    return out
