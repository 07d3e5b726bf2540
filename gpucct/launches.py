"""The launch contexts of one ``.hpcrun`` profile: what reconstruction needs from a measurement.

hpcrun puts every GPU kernel launch under a ``<gpu kernel>`` placeholder
(``lm_id`` 0, ``lm_ip`` = "GPUKernl") below the CPU call path that launched
it. The placeholder's children are the kernel nodes (``unwound`` = 1, at the
kernel's entry pc, carrying ``GKER:COUNT``) and the PC samples (``unwound`` =
0, ``lm_id`` = the GPU binary's load module, ``lm_ip`` = the pc offset).
"""

from __future__ import annotations

from dataclasses import field

import numpy as np

from hpcsa.core.dataclass import dataclass
from hpcsa.formats.measurement.hpcrun import UNWOUND, HpcrunProfile
from hpcsa.formats.measurement.placeholders import GPU_KERNEL
from hpcsa.gpucct.model import PcSamples

WEIGHT_METRIC = "GINS"
LAUNCH_COUNT_METRIC = "GKER:COUNT"


@dataclass
class LaunchContext:
    """One ``<gpu kernel>`` placeholder and what hangs below it, per GPU binary (load module id)."""

    node: int                                                    # CCT id of the placeholder
    metrics: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # metric id of each column
    kernels: dict[int, dict[int, float]] = field(default_factory=dict)  # lm_id -> {entry: launches}
    kernel_nodes: dict[int, dict[int, int]] = field(default_factory=dict)  # lm_id -> {entry: CCT id}
    samples: dict[int, PcSamples] = field(default_factory=dict)  # lm_id -> flat PC samples
    sample_nodes: dict[int, np.ndarray] = field(default_factory=dict)  # lm_id -> CCT id per sample row
    kernel_values: dict[int, dict[int, np.ndarray]] = field(default_factory=dict)  # lm_id -> {entry: row}
    weight: int | None = None                                    # column of GINS, if it has values

    @property
    def modules(self) -> list[int]:
        return sorted(set(self.kernels) | set(self.samples))

    def all_samples(self, lm_id: int) -> PcSamples | None:
        """The module's PC samples with those hpcrun keeps on its kernel nodes: a sample at a kernel's
        entry pc is the kernel node's own (same load module and pc under the placeholder), stored beside
        ``GKER:COUNT``. Only the columns that are sample metrics (the weight, and any column with a value
        in a sample row of this launch context) are taken from the kernel node. For showing a launch
        context whole; the aggregation leaves these values on the kernel node, where hpcprof has them."""
        flat = self.samples.get(lm_id)
        entries = self.kernel_values.get(lm_id, {})
        sample_cols = np.zeros(len(self.metrics), bool)
        for s in self.samples.values():
            sample_cols |= (s.values != 0).any(axis=0)
        if self.weight is not None:
            sample_cols[self.weight] = True
        rows = [(e, np.where(sample_cols, v, 0.0)) for e, v in sorted(entries.items()) if (v[sample_cols] != 0).any()]
        if not rows:
            return flat
        pcs = np.array([e for e, _ in rows], np.uint64)
        vals = np.array([v for _, v in rows])
        if flat is not None:
            pcs, vals = np.concatenate([flat.pcs, pcs]), np.concatenate([flat.values, vals])
        return PcSamples(pcs, vals, weight=self.weight)


def launch_contexts(prof: HpcrunProfile) -> list[LaunchContext]:
    """Every launch context of ``prof``, by placeholder node id.

    Values are as stored (period not applied). Sample value columns are the
    metrics that have values anywhere below a placeholder (``metrics`` holds
    their ids, ascending), with ``GINS`` as the weight column when it has values.
    """
    cct = prof.cct
    ids = cct["id"].astype(np.int64)
    is_placeholder = (cct["lm_id"] == 0) & (cct["lm_ip"] == GPU_KERNEL)
    holders = np.sort(ids[is_placeholder])
    if not len(holders):
        return []
    parent = cct["parent"].astype(np.int64)
    under = np.isin(parent, holders) & (cct["lm_id"] != 0)
    rows = np.flatnonzero(under)
    nodes = ids[rows]

    # Dense values of just these nodes, in just the metrics they have values for.
    used = np.zeros(0, np.int64)
    dense = np.zeros((len(rows), 0))
    if len(prof.values) and len(rows):
        vnode = prof.value_nodes().astype(np.int64)
        order = np.argsort(nodes)
        pos = np.searchsorted(nodes[order], vnode)
        pos_c = np.minimum(pos, len(nodes) - 1)
        hit = nodes[order][pos_c] == vnode
        metric = prof.values["metric"][hit].astype(np.int64)
        used, column = np.unique(metric, return_inverse=True)
        dense = np.zeros((len(rows), len(used)))
        dense[order[pos_c[hit]], column] = prof.value_floats()[hit]

    names = [m.name for m in prof.metrics]
    col_of = {int(m): j for j, m in enumerate(used.tolist())}
    weight = col_of.get(names.index(WEIGHT_METRIC)) if WEIGHT_METRIC in names else None
    count_col = col_of.get(names.index(LAUNCH_COUNT_METRIC)) if LAUNCH_COUNT_METRIC in names else None
    unwound = (cct["flags"][rows] & UNWOUND) != 0
    lm = cct["lm_id"][rows].astype(np.int64)
    pcs = cct["lm_ip"][rows].astype(np.uint64)
    par = parent[rows]

    out: dict[int, LaunchContext] = {int(h): LaunchContext(int(h), used, weight=weight) for h in holders}
    for i in np.flatnonzero(unwound).tolist():
        ctx = out[int(par[i])]
        entry, module = int(pcs[i]), int(lm[i])
        launches = float(dense[i, count_col]) if count_col is not None else 0.0
        per = ctx.kernels.setdefault(module, {})
        per[entry] = per.get(entry, 0.0) + launches
        ctx.kernel_nodes.setdefault(module, {})[entry] = int(nodes[i])
        kv = ctx.kernel_values.setdefault(module, {})
        kv[entry] = kv[entry] + dense[i] if entry in kv else dense[i].copy()
    sample_rows = np.flatnonzero(~unwound)
    if len(sample_rows):
        key = np.lexsort((lm[sample_rows], par[sample_rows]))
        sample_rows = sample_rows[key]
        group = np.stack([par[sample_rows], lm[sample_rows]], axis=1)
        starts = np.flatnonzero(np.r_[True, np.any(group[1:] != group[:-1], axis=1)])
        ends = np.r_[starts[1:], len(sample_rows)]
        for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
            sel = sample_rows[a:b]
            ctx = out[int(par[sel[0]])]
            ctx.samples[int(lm[sel[0]])] = PcSamples(pcs[sel], dense[sel], weight=weight)
            ctx.sample_nodes[int(lm[sel[0]])] = nodes[sel]
    return [out[int(h)] for h in holders]
