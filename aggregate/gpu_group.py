"""GPU calling-context reconstruction for a group of profiles at once: what :func:`.gpu_contexts.reconstruct_profile`
gives each profile, with the launch contexts found for the whole group in a few vectorized passes and each
distinct shape of launch context reconstructed once (:mod:`hpcsa.gpucct.shared`).

A launch context (a ``<gpu kernel>`` placeholder with, for one GPU binary with a call graph, its PC samples:
the placeholder's children with ``unwound`` = 0, and the kernels launched: its children with ``unwound`` = 1)
is reconstructed as :func:`hpcsa.gpucct.launches.launch_contexts` and :func:`.gpu_contexts.reconstruct_profile`
present it: its samples' values with the period applied, ``GINS`` the weight. Its shape (:func:`.shape_key`:
the graph, the kernels, which pcs were sampled, which call sites have weight) decides its tree; the first
context of a shape in this process is reconstructed as usual and every later one takes that tree with its
own ratios (:func:`.apply_shape`), a shape's contexts all at once: the ranks of a run share their shapes, so
reconstruction costs per shape, not per profile. The result is the same, bit for bit, as reconstructing
each context alone (:mod:`hpcsa.gpucct.shared` says why); what a shape cannot reproduce is reconstructed alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from hpcsa.aggregate import rawtree
from hpcsa.aggregate.gpu_contexts import GPU_VALUE, GroupGpu
from hpcsa.core.arrays import offsets, run_starts, sorted_unique, take_records
from hpcsa.formats.measurement.hpcrun import UNWOUND
from hpcsa.formats.measurement.hpcrun_batch import HpcrunGroup
from hpcsa.formats.measurement.placeholders import GPU_KERNEL

if TYPE_CHECKING:
    from hpcsa.gpucct import CallGraph, Reconstruction
    from hpcsa.gpucct.shared import Shape

WEIGHT_METRIC = "GINS"  # as hpcsa.gpucct.launches (not imported: it pulls in networkx)

#: Shapes reconstructed in this process, by key (None: a shape that is not reused). Bounded: a run's ranks
#: share a handful of shapes; a run whose launch contexts all differ gains nothing from keeping them.
_SHAPES: dict[bytes, Shape | None] = {}
SHAPES_KEPT = 4096


def reconstruct_group(g: HpcrunGroup, module: np.ndarray, graphs: dict[int, CallGraph]) -> GroupGpu | None:
    """The reconstructed GPU calling contexts of a group's profiles (``module``: each CCT row's module hash;
    ``graphs``: the call graphs by module hash), as columns; None where the group has none."""
    from hpcsa.gpucct import PcSamples
    from hpcsa.gpucct.shared import apply_shape, call_weights, make_shape, patterns, shape_head

    cct, n = g.cct, len(g)
    lm = cct["lm_id"]
    is_holder = (lm == 0) & (cct["lm_ip"] == GPU_KERNEL)
    if not is_holder.any() or not graphs:
        return None
    parent = g.parent
    graph_of = dict(graphs)
    has_graph = np.isin(module, np.array(list(graph_of), np.uint64)) if graph_of else np.zeros(len(cct), bool)
    under = (parent >= 0) & is_holder[np.maximum(parent, 0)] & (lm != 0)
    unwound = (cct["flags"] & UNWOUND) != 0
    sample = np.flatnonzero(under & ~unwound & has_graph)
    if not len(sample):
        return None
    prof_of_row = np.repeat(np.arange(n), np.diff(g.cut))
    ids = cct["id"].astype(np.int64)
    # Launch contexts: (profile, placeholder id, load-map id), in reconstruct_profile's order; rows by pc within.
    holder_id = ids[parent[sample]]
    pcs_all = cct["lm_ip"].astype(np.uint64)
    order = np.lexsort((pcs_all[sample], lm[sample], holder_id, prof_of_row[sample]))
    sample, holder_id = sample[order], holder_id[order]
    group_start = np.flatnonzero(run_starts(prof_of_row[sample], holder_id, lm[sample].astype(np.int64)))
    bounds = np.append(group_start, len(sample))
    values, columns, used = _sample_values(g, sample, prof_of_row)
    n_ctx = len(bounds) - 1
    first = sample[bounds[:-1]]
    c_prof, c_holder, c_lm = prof_of_row[first], holder_id[bounds[:-1]], lm[first].astype(np.int64)
    c_len = np.diff(bounds)
    # contexts reconstructed alone: a pc sampled twice (its rows are summed in an order of their own), or a
    # value that is not finite (PcSamples refuses it: the same refusal)
    pcs = pcs_all[sample]
    dup = np.zeros(len(sample), bool)
    dup[1:] = pcs[1:] == pcs[:-1]
    dup[bounds[:-1]] = False
    bad = (np.add.reduceat(dup, bounds[:-1]) > 0) | (np.add.reduceat(~np.isfinite(values).all(axis=1), bounds[:-1]) > 0)
    kernels = _kernels(g, under & unwound, prof_of_row, c_prof, c_holder, c_lm)
    # Contexts of one graph, kernels, sampled pcs and weight column are stacked; their keys, row by row.
    classes: dict[tuple[int, tuple[int, ...], int | None, bytes], list[int]] = {}
    pcs_bytes = pcs.tobytes()
    for c in np.flatnonzero(~bad).tolist():
        a, b = int(bounds[c]), int(bounds[c + 1])
        classes.setdefault((int(module[first[c]]), kernels[c], columns[int(c_prof[c])][1], pcs_bytes[8 * a:8 * b]),
                           []).append(c)
    recs: list[Reconstruction | None] = [None] * n_ctx
    point_values: list[np.ndarray | None] = [None] * n_ctx
    for c in np.flatnonzero(bad).tolist():
        a, b = int(bounds[c]), int(bounds[c + 1])
        recs[c] = _alone(graph_of[int(module[first[c]])], pcs[a:b], values[a:b],
                         columns[int(c_prof[c])][1], kernels[c])
    for (h, ks, weight, _), members in classes.items():
        graph = graph_of[h]
        m = np.array(members, np.int64)
        a = int(bounds[members[0]])
        u_pcs = pcs[a:a + int(c_len[members[0]])]
        stacked = values[bounds[m][:, None] + np.arange(len(u_pcs))[None, :]]  # [contexts, pcs, metrics]
        w = call_weights(graph, u_pcs, stacked, weight)
        head = shape_head(graph, ks, u_pcs)
        rows = patterns(stacked, w)
        by_key: dict[bytes, list[int]] = {}
        for j, row in enumerate(rows):
            by_key.setdefault(row.tobytes(), []).append(j)
        for row_key, js in by_key.items():
            key = head + row_key
            if key not in _SHAPES:
                c = members[js[0]]
                recs[c], shape = make_shape(graph, PcSamples(u_pcs, stacked[js[0]], weight=weight), ks)
                if len(_SHAPES) >= SHAPES_KEPT:
                    _SHAPES.clear()
                _SHAPES[key] = shape
                js = js[1:]
            shape = _SHAPES[key]
            if not js:
                continue
            sel = np.array(js, np.int64)
            if shape is None:
                ok = np.zeros(len(js), bool)
            else:
                out, ok = apply_shape(shape, stacked[sel], w[sel])
            for i, j in enumerate(js):
                c = members[j]
                if ok[i] and shape is not None:
                    recs[c] = shape.rec
                    point_values[c] = out[i]
                else:
                    recs[c] = _alone(graph, u_pcs, stacked[j], weight, ks)
    return _columns(g, sample, bounds, prof_of_row, module, recs, point_values, used)


def _kernels(g: HpcrunGroup, kernel_row: np.ndarray, prof_of_row: np.ndarray, c_prof: np.ndarray,
             c_holder: np.ndarray, c_lm: np.ndarray) -> list[tuple[int, ...]]:
    """Per launch context (profile, placeholder id, load-map id): the entries of the kernels launched (its
    unwound children of that binary), sorted and distinct."""
    kern = np.flatnonzero(kernel_row)
    ids = g.cct["id"].astype(np.int64)
    k_key = np.stack([prof_of_row[kern], ids[g.parent[kern]], g.cct["lm_id"][kern].astype(np.int64)], axis=1)
    found: dict[tuple[int, int, int], set[int]] = {}
    for key, pc in zip(map(tuple, k_key.tolist()), g.cct["lm_ip"][kern].tolist(), strict=True):
        found.setdefault(key, set()).add(pc)
    empty: tuple[int, ...] = ()
    return [tuple(sorted(found[key])) if key in found else empty
            for key in zip(c_prof.tolist(), c_holder.tolist(), c_lm.tolist(), strict=True)]


def _alone(graph: CallGraph, pcs: np.ndarray, values: np.ndarray, weight: int | None, kernels: Sequence[int]
           ) -> Reconstruction:
    from hpcsa.gpucct import PcSamples, reconstruct

    return reconstruct(graph, PcSamples(pcs, values, weight=weight), kernels)


def _sample_values(g: HpcrunGroup, sample: np.ndarray, prof_of_row: np.ndarray
                   ) -> tuple[np.ndarray, dict[int, tuple[int, int | None]], dict[int, np.ndarray]]:
    """The values of the sample rows [rows, columns] (period applied, 0 where none: what
    :func:`.launch_contexts` gives, a column per metric with a value in some sample row of the group); per
    profile with samples (its metric table, the column of the weight metric or None); per metric table, the
    metric of each column (the columns of every table are the first ones, the others 0)."""
    n = len(g)
    tables = g.metric_tables
    mine_prof = sorted_unique(prof_of_row[sample], kind="stable")  # (sorted by profile already)
    used: dict[int, np.ndarray] = {int(g.metrics[k]): np.zeros(0, np.int64) for k in mine_prof.tolist()}
    width = 0
    out = np.zeros((len(sample), 0))
    if len(g.values):
        # each value's row: its profile's sparse index names its node; the node's row through the sorted ids
        val_prof = np.repeat(np.arange(n), np.diff(g.vcut))
        idx_prof = np.repeat(np.arange(n), np.diff(g.icut))
        starts = g.index["start"].astype(np.int64) + g.vcut[:-1][idx_prof]
        counts = np.diff(np.append(starts, len(g.values)))
        key = np.repeat(np.arange(n, dtype=np.int64), np.diff(g.cut)) << 32 | g.cct["id"].astype(np.int64)
        sorted_key = key[g.order]
        # an index entry's values are its node's, of its profile (a profile's index starts at its first value):
        # each entry's row found once, not each value's
        wanted = idx_prof << 32 | g.index["node"].astype(np.int64)
        row = np.repeat(g.order[np.minimum(np.searchsorted(sorted_key, wanted), len(sorted_key) - 1)], counts)
        slot = np.full(len(g.cct), -1, np.int64)
        slot[sample] = np.arange(len(sample))
        mine = np.flatnonzero(slot[row] >= 0)
        metric = g.values["metric"][mine].astype(np.int64)
        table = g.metrics[val_prof[mine]].astype(np.int64)
        col = np.empty(len(mine), np.int64)
        integer = np.zeros(len(mine), bool)
        for t in used:
            these = table == t
            used[t] = sorted_unique(metric[these])
            col[these] = np.searchsorted(used[t], metric[these])
            integer[these] = np.array([m.is_int for m in tables[t]] or [False], bool)[metric[these]]
            width = max(width, len(used[t]))
        out = np.zeros((len(sample), width))
        bits = g.values["bits"][mine].astype(np.uint64)
        # as launch_contexts fills its dense matrix (the last value of a (node, metric) wins)
        out[slot[row[mine]], col] = np.where(integer, bits.astype(np.float64), bits.view(np.float64))
        # the periods, column by column (as reconstruct_profile scales a launch context's samples)
        prof_table = g.metrics[prof_of_row[sample]].astype(np.int64)
        for t, cols in used.items():
            p = np.zeros(width)
            p[:len(cols)] = np.array([m.period for m in tables[t]], np.float64)[cols]
            if len(used) == 1:
                out *= p
            else:
                out[prof_table == t] *= p
    weight_column: dict[int, int | None] = {}  # per metric table (the profiles of a run share a few)
    for t in used:
        names = [m.name for m in tables[t]]
        at = (np.flatnonzero(used[t] == names.index(WEIGHT_METRIC)) if WEIGHT_METRIC in names
              else np.zeros(0, np.int64))
        weight_column[t] = int(at[0]) if len(at) else None
    columns = {k: (t, weight_column[t]) for k, t in zip(mine_prof.tolist(), g.metrics[mine_prof].tolist(), strict=True)}
    return out, columns, used


def _columns(g: HpcrunGroup, sample: np.ndarray, bounds: np.ndarray, prof_of_row: np.ndarray, module: np.ndarray,
             recs: list[Reconstruction | None], point_values: list[np.ndarray | None],
             used: dict[int, np.ndarray]) -> GroupGpu:
    """The reconstructions' nodes and values as :class:`.GroupGpu` columns: each profile's launch contexts in
    order, a context's frames, then its points (as :func:`.reconstruct_profile` lists them); its points'
    values point by point, each point's by metric. The contexts of one reconstruction (a shape's) are laid
    out together."""
    n = len(g)
    first = sample[bounds[:-1]]
    ctx_prof = prof_of_row[first]
    holder = g.parent[first] - g.cut[ctx_prof]
    h = module[first]
    templates: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]] = {}
    for rec in recs:
        assert rec is not None
        if id(rec) not in templates:  # frames then points: parent (-1: the placeholder; else the node), kind, flag, ip
            frames = rec.frames
            fp = np.array([f.parent for f in frames[1:]], np.int64) - 1
            tpar = np.concatenate([fp, rec.point_frame.astype(np.int64) - 1])
            kind = np.concatenate([np.full(len(fp), rawtree.FRAME, np.uint8),
                                   np.full(len(rec.point_frame), rawtree.POINT, np.uint8)])
            flag = np.concatenate([np.array([int(f.step.kind) for f in frames[1:]], np.uint8),  # type: ignore[union-attr]  # only the root frame has no step
                                   np.zeros(len(rec.point_frame), np.uint8)])
            ip = np.concatenate([np.array([int(f.step.pc) for f in frames[1:]], np.uint64),  # type: ignore[union-attr]  # as above
                                 rec.point_pc.astype(np.uint64)])
            templates[id(rec)] = (tpar, kind, flag, ip, len(fp))
    size = np.array([len(templates[id(r)][0]) for r in recs], np.int64)
    # each context's first node, among its profile's nodes (after the CCT rows and earlier contexts)
    ctx_at = offsets(size)
    prof_nodes = np.zeros(n, np.int64)
    np.add.at(prof_nodes, ctx_prof, size)
    ncut = offsets(prof_nodes)
    base = np.diff(g.cut)[ctx_prof] + ctx_at[:-1] - ncut[:-1][ctx_prof]
    total = int(ctx_at[-1])
    parent = np.empty(total, np.int64)
    kind = np.empty(total, np.uint8)
    flag = np.empty(total, np.uint8)
    ip = np.empty(total, np.uint64)
    by_rec: dict[int, list[int]] = {}
    for c, rec in enumerate(recs):
        by_rec.setdefault(id(rec), []).append(c)
    values = []
    value_ctx = []
    for key, members in by_rec.items():
        tpar, tkind, tflag, tip, nf = templates[key]
        m = np.array(members, np.int64)
        at = (ctx_at[m][:, None] + np.arange(len(tpar))[None, :]).ravel()
        t = np.broadcast_to(tpar, (len(m), len(tpar)))
        parent[at] = np.where(t < 0, holder[m][:, None], base[m][:, None] + t).ravel()
        kind[at] = np.tile(tkind, len(m))
        flag[at] = np.tile(tflag, len(m))
        ip[at] = np.tile(tip, len(m))
        rec = recs[members[0]]
        assert rec is not None
        own = [c for c in members if point_values[c] is None]
        shared = [c for c in members if point_values[c] is not None]
        for group, stack in ((own, [rec.point_values] * len(own)), (shared, [point_values[c] for c in shared])):
            if not group:
                continue
            block = np.stack(stack)  # type: ignore[arg-type]  # shared members all have values
            # the values present, flat (one 1-d nonzero and take, not 3-d ones)
            nz = np.flatnonzero(block)
            j, r = np.divmod(nz, max(1, block.shape[1] * block.shape[2]))
            r, col = np.divmod(r, max(1, block.shape[2]))
            vctx = np.array(group, np.int64)[j]
            v = np.empty(len(j), GPU_VALUE)
            v["node"] = base[vctx] + nf + r
            tables = g.metrics[ctx_prof[vctx]].astype(np.int64)
            metric = np.empty(len(vctx), np.int64)
            for tt in sorted_unique(tables).tolist():
                these = tables == tt
                metric[these] = used[tt][col[these]]
            v["metric"] = metric
            v["value"] = block.reshape(-1)[nz]
            values.append(v)
            value_ctx.append(vctx)
    module_col = np.repeat(h, size)
    # values: context by context (in each context, point by point and by metric, as nonzero gives them)
    v = np.concatenate(values) if values else np.zeros(0, GPU_VALUE)
    vc = np.concatenate(value_ctx) if value_ctx else np.zeros(0, np.int64)
    v = take_records(v, np.argsort(vc, kind="stable"))
    vcount = np.bincount(ctx_prof[vc], minlength=n) if len(vc) else np.zeros(n, np.int64)  # (counts: any order)
    # the sample rows placed, per profile (sorted, within the profile)
    placed = sample - g.cut[prof_of_row[sample]]
    rprof = prof_of_row[sample]
    order = np.lexsort((placed, rprof))
    rows, rprof = placed[order], rprof[order]
    return GroupGpu(ncut, parent, kind, flag, module_col, ip, offsets(np.bincount(rprof, minlength=n)), rows,
                    offsets(vcount), v)
