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
from hpcsa.core.arrays import concat_records, offsets
from hpcsa.core.dataclass import dataclass
from hpcsa.core.errors import HpcsaError
from hpcsa.formats.measurement.hpcrun import (
    CCT_NODE,
    SPARSE_INDEX,
    SPARSE_VALUE,
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
        (cct, kept_nodes, values, sparse), gpu = kept.kept_one(facts.kept)
        nodes = np.zeros(len(kept_nodes), rawtree.RAW)
        for name in kept.KEPT_NODE_FIELDS:
            nodes[name] = kept_nodes[name]
        raw = rawtree.RawNodes(nodes)
        ids = cct["id"].astype(np.int64)
        index = NodeIndex(ids, np.argsort(ids, kind="stable"))
    prof = HpcrunProfile(header={}, loadmap=list(loadmap), cct=cct, metrics=list(metrics), id_names=[],
                         id_tuple=facts.id_tuple, values=values, index=sparse, path=path)
    return prof, raw, index, gpu


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
    blobs = kept.kept_many(c2.profiles, indexes)
    got = _batch_points(c2, indexes, blobs) if blobs is not None else None
    return got if got is not None else BatchPoints.of([profile_points(c2, i) for i in indexes])


def _batch_points(c2: ClassTwo, indexes: list[int], blobs: list[kept.KeptProfile]) -> BatchPoints | None:
    """:func:`batch_points` from the kept arrays, or None where a check of :func:`point_values` fails for
    some profile."""
    n = len(indexes)
    parts = list(zip(*(arrays for arrays, _ in blobs), strict=True)) if n else [()] * 4
    ccts, nodes, values, sparse = parts
    gpus = [gpu for _, gpu in blobs]
    n_cct, n_node, n_val, n_idx = (np.fromiter(map(len, col), np.int64, n) for col in parts)
    ccut, kcut = offsets(n_cct), offsets(n_node)
    node = concat_records(list(nodes), kept.KEPT_NODE)
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
