"""Phase 2 of the aggregation, per profile: class 1 results, streamed to the output.

The second reading of a profile finds its nodes in the union (the same path
hashes as in phase 1), attributes every value (x period) to its context —
the "relation" context for ``move2proc`` metrics — redistributes
reconstructed GPU samples, propagates (:mod:`propagate`), and writes:

- its PMS blob (profile.db format) into a scratch file at an offset from a
  shared counter (:class:`Sinks`), where the transposition reads it back and
  from which the final profile.db is assembled in canonical order;
- an "aside" blob with what the summary needs beyond the PMS values (loop-free
  sums of loops without values of their own, presence without values);
- its trace line, straight into its reserved region of trace.db: contexts
  mapped to the call context for call traces, elided instructions to their
  line, sorted by time when the measurement announced disorder, repeated
  blanks dropped.

It returns small facts: where the blobs are, how many values each context
got (for cct.db's layout), the trace's length and time range.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from hpcsa.aggregate.db import tracedb
from hpcsa.aggregate.db.profiledb import ProfileBlob, ProfileValues
from hpcsa.aggregate.prof import rawtree
from hpcsa.aggregate.prof.gpu_contexts import RECONSTRUCTED
from hpcsa.aggregate.prof.inputs import ProfileInput
from hpcsa.aggregate.prof.propagate import Propagated, propagate
from hpcsa.aggregate.prof.survey import profile_nodes, second_reading
from hpcsa.aggregate.prof.unified_tables import ClassTwo
from hpcsa.errors import HpcsaError
from hpcsa.ingest.hpctrace import FLAG_CALL_TRACE, read_hpctrace

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
    ``allocate`` is None: the blobs come back in :attr:`ProfileOutput.pending`
    and the rank stores them (:func:`store`).
    """

    pms_path: str
    aside_path: str
    trace_path: str | None
    trace_offsets: list[int] | None
    allocate: Callable[[str, int], int] | None


@dataclass
class ProfileOutput:
    index: int            # canonical profile number (0-based; profile.db index - 1)
    pms_offset: int
    n_values: int
    n_ctxs: int
    pms_size: int
    aside_offset: int
    n_aside: int
    ctx: np.ndarray       # contexts with values
    n_ctx_values: np.ndarray  # values per such context
    ctx_metric_bits: tuple[np.ndarray, np.ndarray, np.ndarray]  # (context, word, bits) of the propMetricIds
    trace_count: int = 0
    trace_min: int | None = None
    trace_max: int | None = None
    points_read: np.ndarray | None = None  # per global metric: sum of point values read (conservation)
    pending: tuple[bytes, bytes] | None = None  # (PMS blob, aside blob) not yet written (see Sinks)


def store(out: ProfileOutput, sinks: Sinks, allocate: Callable[[str, int], int]) -> None:
    """Write a profile's pending blobs at offsets from ``allocate``."""
    if out.pending is not None:
        out.pms_offset, out.aside_offset = store_blobs(out.pending, sinks, allocate)
        out.pending = None


def store_blobs(blobs: tuple[bytes, bytes], sinks: Sinks, allocate: Callable[[str, int], int]) -> tuple[int, int]:
    """Write (PMS blob, aside blob) at offsets from ``allocate`` (an MPI rank, for its workers); the offsets
    (0 for an empty aside blob)."""
    pms, aside = blobs
    pms_offset = allocate("pms", len(pms))
    _pwrite(sinks.pms_path, pms_offset, pms)
    aside_offset = 0
    if aside:
        aside_offset = allocate("aside", len(aside))
        _pwrite(sinks.aside_path, aside_offset, aside)
    return pms_offset, aside_offset


def _pwrite(path: str, offset: int, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        view = memoryview(data)
        while view:
            n = os.pwrite(fd, view, offset)
            view, offset = view[n:], offset + n
    finally:
        os.close(fd)


def point_values(prof, inp: ProfileInput, c2: ClassTwo, table: int | None = None, nodes=None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(context, metric, value) of every value of the profile, plus the node -> (full, rel) contexts and
    CCT ids (for traces). ``nodes``: the profile's (raw nodes, node index, GPU part) when already known."""
    raw, index, gpu = nodes if nodes is not None else profile_nodes(prof, inp, c2.env)
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
        keep = (glob[local] >= 0) & ((raw.nodes["flag"][vrow] & RECONSTRUCTED) == 0)
        ctx = np.where(m2p[local], rel[vrow], full[vrow])
        keep &= ctx >= 0
        ctx_parts.append(ctx[keep])
        met_parts.append(glob[local][keep])
        val_parts.append(vals[keep])
    if len(gpu.point_nodes):
        pctx = full[n + gpu.point_nodes]
        cols = glob[gpu.metrics]
        rr, cc = np.nonzero(gpu.values)
        keep = cols[cc] >= 0
        ctx_parts.append(pctx[rr][keep])
        met_parts.append(cols[cc][keep])
        val_parts.append(gpu.values[rr, cc][keep])
    if ctx_parts:
        return (np.concatenate(ctx_parts), np.concatenate(met_parts), np.concatenate(val_parts), full[:n],
                rel[:n], ids)
    z = np.zeros(0, np.int64)
    return z, z, np.zeros(0), full[:n], rel[:n], ids


def _stored(p: Propagated, c2: ClassTwo) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The thread values hpcprof stores: (value matrix [pairs, 4 scopes], propMetricIds, keep mask)."""
    vals = np.stack([p.point, p.function, p.lex_aware, p.execution], axis=1)
    pid = c2.prop[p.metric]
    return vals, pid, (vals != 0) & (pid >= 0)


def pms_values(p: Propagated, c2: ClassTwo) -> ProfileValues:
    """The thread profile's values: every non-zero scope value of every (context, metric).

    Pairs are sorted by (context, metric) and a metric's ids are a block in scope order, so the
    row-major order of the kept matrix entries is already (context, propMetricId) order.
    """
    vals, pid, keep = _stored(p, c2)
    rows = np.nonzero(keep)
    ctx = p.ctx[rows[0]]
    first = np.empty(len(ctx), bool)
    first[:1] = True
    np.not_equal(ctx[1:], ctx[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    return ProfileValues(ctx[starts].astype(np.uint32), starts.astype(np.int64), pid[rows].astype(np.uint16),
                         vals[rows])


def aside_values(p: Propagated, c2: ClassTwo) -> np.ndarray:
    """Loop-free sums the thread values do not carry, and presence without any stored value."""
    _, _, keep = _stored(p, c2)
    nl = np.flatnonzero(p.aside)
    pres = np.flatnonzero(~keep.any(axis=1))
    out = np.zeros(len(nl) + len(pres), ASIDE)
    out["ctx"] = np.concatenate([p.ctx[nl], p.ctx[pres]])
    out["key"] = np.concatenate([p.metric[nl] * 2 + ASIDE_NOLOOPS, p.metric[pres] * 2 + ASIDE_PRESENT])
    out["value"] = np.concatenate([p.noloops[nl], np.ones(len(pres))])
    return out[np.lexsort((out["key"], out["ctx"]))]


def trace_line(inp: ProfileInput, disorder: int, full: np.ndarray, rel: np.ndarray,
               ids: np.ndarray, c2: ClassTwo) -> tuple[np.ndarray, int | None, int | None]:
    """The profile's trace.db line (ELEMENT-like arrays: time, ctx) and the time range of its timepoints."""
    tr = read_hpctrace(inp.trace)  # type: ignore[arg-type]
    recs = tr.records
    times = recs["time"].astype(np.uint64)
    nodes = recs["ctx"].astype(np.int64)
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    pos = np.minimum(np.searchsorted(sorted_ids, nodes), max(len(ids) - 1, 0))
    found = (sorted_ids[pos] == nodes) if len(ids) else np.zeros(len(nodes), bool)
    row = order[pos]
    ctx = np.where(found, (rel if tr.flags & FLAG_CALL_TRACE else full)[row] if len(ids) else -1, -1)
    keep = ctx >= 0
    times, ctx = times[keep], ctx[keep]
    if not len(times):
        return np.zeros(0, np.uint64), np.zeros(0, np.uint32), None, None  # type: ignore[return-value]
    lo, hi = int(times.min()), int(times.max())
    if disorder > 0:
        o = np.argsort(times, kind="stable")
        times, ctx = times[o], ctx[o]
    tid = c2.trace_id[ctx]
    blank = tid == 0
    drop = blank & np.r_[False, blank[:-1]]
    return times[~drop], tid[~drop].astype(np.uint32), lo, hi  # type: ignore[return-value]


def process_profile(c2: ClassTwo, index: int, sinks: Sinks, *, traces: bool = True) -> ProfileOutput:
    """Class 1 for profile ``index`` of the canonical order (its second reading)."""
    facts = c2.profiles[index]
    inp = facts.input
    prof, *nodes = second_reading(facts, c2.metric_tables[facts.metrics], c2.loadmaps[facts.loadmap], c2.env)
    ctx, met, val, full, rel, ids = point_values(prof, inp, c2, facts.metrics, tuple(nodes))
    points_read = np.bincount(met, weights=val, minlength=len(c2.metrics)) if len(met) else \
        np.zeros(len(c2.metrics))
    p = propagate(ctx, met, val, c2.tree)
    pv = pms_values(p, c2)
    blob = ProfileBlob.encode(pv)
    aside = aside_values(p, c2)
    # cct.db layout: values per context, and as bits the propMetricIds each context has.
    counts = np.diff(np.append(pv.starts, len(pv.values)))
    vctx = np.repeat(pv.ctx_ids.astype(np.int64), counts)
    mids = pv.metric_ids.astype(np.int64)
    word = mids >> 6
    bit = np.left_shift(np.uint64(1), (mids & 63).astype(np.uint64))
    grp = np.empty(len(mids), bool)
    grp[:1] = True
    grp[1:] = (vctx[1:] != vctx[:-1]) | (word[1:] != word[:-1])
    gstart = np.flatnonzero(grp)
    bits = np.bitwise_or.reduceat(bit, gstart) if len(gstart) else np.zeros(0, np.uint64)
    out = ProfileOutput(index, 0, len(pv.values), len(pv.ctx_ids), blob.size, 0, len(aside),
                        pv.ctx_ids.astype(np.int64), counts.astype(np.int64),
                        (vctx[gstart], word[gstart], bits), points_read=points_read,
                        pending=(blob.data, aside.tobytes() if len(aside) else b""))
    if sinks.allocate is not None:
        store(out, sinks, sinks.allocate)
    if traces and inp.trace is not None and facts.trace_records and sinks.trace_path and sinks.trace_offsets:
        times, tid, lo, hi = trace_line(inp, facts.trace_disorder, full, rel, ids, c2)
        if len(times) > facts.trace_records:
            raise HpcsaError(inp.trace, "the trace grew between the two readings")
        elem = tracedb.elements(times, tid)
        _pwrite(sinks.trace_path, sinks.trace_offsets[index], elem.tobytes())
        out.trace_count, out.trace_min, out.trace_max = len(times), lo, hi
    return out
