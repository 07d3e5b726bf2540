"""Phase 2's second reading of a batch of profiles: every value located in the unified tree.

A profile's second reading takes what phase 1 kept of it (:mod:`.kept`; its ``.hpcrun`` file is read again
only where nothing was kept) and finds its nodes in the union by their path hashes (the same as in phase 1),
so each value (x period) gets its context: the "relation" context for ``move2proc`` metrics; reconstructed
GPU samples are redistributed over their reconstructed contexts. A batch's profiles are worked out
together (:func:`batch_points`): numpy's per-call costs once per batch, not per profile.
"""

from __future__ import annotations

import numpy as np

from hpcsa.aggregate import kept, rawtree
from hpcsa.aggregate.gpu_contexts import RECONSTRUCTED, GpuPart
from hpcsa.aggregate.handoff import ClassTwo, Phase1Env
from hpcsa.aggregate.profile_nodes import NodeIndex, profile_nodes
from hpcsa.aggregate.profile_table import ProfileFacts, ProfileInput
from hpcsa.core.arrays import offsets
from hpcsa.core.dataclass import dataclass
from hpcsa.core.errors import HpcsaError
from hpcsa.formats.measurement.hpcrun import (
    CCT_NODE,
    HpcrunProfile,
    LoadModule,
    MetricDesc,
    read_hpcrun_tree,
)


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


def second_reading(facts: ProfileFacts, metrics: tuple[MetricDesc, ...], loadmap: tuple[LoadModule, ...],
                   env: Phase1Env) -> tuple[HpcrunProfile, rawtree.RawNodes, NodeIndex, GpuPart]:
    """What phase 2 needs of a profile: its CCT and values (header, load map, metric table and identity come
    from phase 1), its raw nodes, node index and GPU part. Taken from what phase 1 kept, so the .hpcrun file
    is read once; read again (through the .hpcrun reader and its checks) only where nothing was kept."""
    path = facts.input.path
    if facts.kept is None:
        prof, order, parent = read_hpcrun_tree(path)
        raw, index, gpu = profile_nodes(prof, facts.input, env, (order, parent))
        cct, values, sparse = prof.cct, prof.values, prof.index
    else:
        file, offset, size = facts.kept
        cols = kept.kept_blobs((file,), np.zeros(1, np.int64), np.array([offset]), np.array([size]))
        a = cols.arrays
        nodes = np.zeros(len(a["nodes"]), rawtree.RAW)
        for name in kept.KEPT_NODE_FIELDS:
            nodes[name] = a["nodes"][name]
        raw = rawtree.RawNodes(nodes)
        cct = np.zeros(len(a["ids"]), CCT_NODE)
        cct["id"] = a["ids"]
        ids = cct["id"].astype(np.int64)
        index = NodeIndex(ids, np.argsort(ids, kind="stable"))
        values, sparse = a["values"], a["index"]
        gpu = _gpu_part(a["gpu"], len(cct))
    prof = HpcrunProfile(header={}, loadmap=list(loadmap), cct=cct, metrics=list(metrics), id_names=[],
                         id_tuple=facts.id_tuple, values=values, index=sparse, path=path)
    return prof, raw, index, gpu


def _gpu_part(gpu: np.ndarray, n_cct: int) -> GpuPart:
    """The part of a :class:`.GpuPart` phase 2 uses (its points' values), from the values phase 1 kept (point
    by point, each point's by metric: the order of the dense matrix's non-zero entries)."""
    if not len(gpu):
        return GpuPart.empty()
    node = gpu["node"].astype(np.int64) - n_cct
    points, row = np.unique(node, return_inverse=True)
    metrics, col = np.unique(gpu["metric"].astype(np.int64), return_inverse=True)
    values = np.zeros((len(points), len(metrics)))
    values[row, col] = gpu["value"]
    part = GpuPart.empty()
    part.point_nodes, part.values, part.metrics = points, values, metrics
    return part


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
    contexts, for the traces; with what phase 1 kept of the profiles' traces (``traces``: profile ``k``'s
    records are ``trace_cut[k]:trace_cut[k + 1]``, its flags ``trace_flags[k]``, -1 where not kept)."""

    prof: np.ndarray
    ctx: np.ndarray
    metric: np.ndarray
    value: np.ndarray
    cut: np.ndarray
    ids: np.ndarray
    full: np.ndarray
    rel: np.ndarray
    traces: np.ndarray | None = None
    trace_cut: np.ndarray | None = None
    trace_flags: np.ndarray | None = None

    @classmethod
    def of(cls, points: list[Points]) -> BatchPoints:
        n = len(points)
        cut = offsets([len(pt.ids) for pt in points])

        def joined(name: str) -> np.ndarray:
            return np.concatenate([getattr(pt, name) for pt in points]) if n else np.zeros(0, np.int64)

        return cls(np.repeat(np.arange(n), [len(pt.ctx) for pt in points]), joined("ctx"), joined("metric"),
                   joined("value"), cut, joined("ids"), joined("full"), joined("rel"))

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
    cols = kept.kept_batch(c2.profiles, indexes)
    got = _batch_points(c2, indexes, cols) if cols is not None else None
    return got if got is not None else BatchPoints.of([profile_points(c2, i) for i in indexes])


def _batch_points(c2: ClassTwo, indexes: list[int], cols: kept.KeptColumns) -> BatchPoints | None:
    """:func:`batch_points` from the kept columns, or None where a check of :func:`point_values` fails for
    some profile."""
    n = len(indexes)
    a, cut = cols.arrays, cols.cuts
    n_cct, n_val, n_idx = (np.diff(cut[name]) for name in ("ids", "values", "index"))
    ccut, kcut = cut["ids"], cut["nodes"]
    node = a["nodes"]
    rows = rawtree.find(c2.raw_h1, node["h1"], c2.raw_h2, node["h2"])
    if (rows < 0).any():
        return None
    full_k, rel_k = c2.raw_full[rows], c2.raw_rel[rows]
    cct_prof = np.repeat(np.arange(n), n_cct)
    cct_row = np.arange(int(ccut[-1])) - ccut[cct_prof] + kcut[cct_prof]  # each CCT row's kept row
    ids = a["ids"].astype(np.int64)
    full, rel = full_k[cct_row], rel_k[cct_row]
    # The values: each one's node (through its profile's sparse index), then its CCT row.
    index = a["index"]  # (each starts at value 0: the reader's rule)
    starts = index["start"].astype(np.int64)
    vals = a["values"]
    val_prof = np.repeat(np.arange(n), n_val)
    idx_prof = np.repeat(np.arange(n), n_idx)
    counts = np.diff(np.append(starts + cut["values"][:-1][idx_prof], len(vals)))
    value_node = np.repeat(index["node"].astype(np.int64), counts)
    if len(vals) and not len(ids):
        return None
    key = cct_prof << 32 | ids
    by_key = np.argsort(key, kind="stable")
    sorted_key = key[by_key]
    want = val_prof << 32 | value_node
    at = np.minimum(np.searchsorted(sorted_key, want), max(len(key) - 1, 0))
    if len(want) and not (sorted_key[at] == want).all():
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
    prof, ctx, metric, value = val_prof[keep], ctx[keep], gl[keep], value[keep]
    gpu = a["gpu"]
    if len(gpu):  # reconstructed GPU samples: after the profile's own values
        gpu_prof = np.repeat(np.arange(n), np.diff(cut["gpu"]))
        gm = gpu["metric"].astype(np.int64)
        if (gm >= n_metrics[slot[gpu_prof]]).any() or (gpu["node"] >= np.diff(kcut)[gpu_prof]).any():
            return None
        cols_g = glob[base[slot[gpu_prof]] + gm]
        ok = cols_g >= 0
        pctx = full_k[kcut[:-1][gpu_prof] + gpu["node"].astype(np.int64)]
        prof = np.concatenate([prof, gpu_prof[ok]])
        ctx = np.concatenate([ctx, pctx[ok]])
        metric = np.concatenate([metric, cols_g[ok]])
        value = np.concatenate([value, gpu["value"][ok].astype(np.float64)])
        order = np.argsort(prof, kind="stable")
        prof, ctx, metric, value = prof[order], ctx[order], metric[order], value[order]
    return BatchPoints(prof, ctx, metric, value, ccut, ids, full, rel, a["trace"], cut["trace"], cols.trace_flags)
