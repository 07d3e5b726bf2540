"""GPU calling-context reconstruction inside the aggregation: hpcsa.gpucct wired to the raw tree.

PC samples (``unwound`` = 0 children of a ``<gpu kernel>`` placeholder) in a
GPU binary whose structure file has a call graph are reconstructed per launch
context with :func:`hpcsa.gpucct.reconstruct`. The result becomes raw nodes
below the placeholder: one ``FRAME`` node per frame (entered by a call
instruction, a recursion, an unknown caller, or holding truncated paths) and
one ``POINT`` node per placed sample pc, which carry the apportioned values;
the sample nodes themselves get no context (they are flagged
``RECONSTRUCTED``). Everything here is a pure function of one profile and the
call graphs, so the second reading of a profile rebuilds exactly the nodes
the first reading reported.

Samples in a binary without a call graph keep hpcprof's shape for missing
data: ``<gpu kernel> -> (unknown) -> instruction`` (done by the expansion).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from hpcsa.aggregate import rawtree
from hpcsa.core.arrays import sorted_unique
from hpcsa.core.dataclass import dataclass

if TYPE_CHECKING:  # hpcsa.gpucct (and networkx) are imported only by runs with GPU call graphs
    from hpcsa.formats.measurement.hpcrun import HpcrunProfile
    from hpcsa.gpucct import CallGraph

#: Flag bit of a CCT node whose samples were placed by reconstruction (it gets no context of its own).
RECONSTRUCTED = 0x2


@dataclass
class GpuPart:
    """What reconstruction adds to one profile.

    ``parent``: for each new node, its parent as an index into the profile's
    node list (CCT rows first, then these nodes in order); ``values``: for each
    POINT node, its values (columns = ``metrics``, local metric ids).
    """

    parent: np.ndarray
    kind: np.ndarray
    flag: np.ndarray
    module: np.ndarray
    ip: np.ndarray
    reconstructed_rows: np.ndarray  # CCT rows of the sample nodes that were placed
    point_nodes: np.ndarray         # indices (into the new nodes) of POINT nodes, one per value row
    values: np.ndarray              # points x metrics, period applied
    metrics: np.ndarray             # local metric id of each column

    @classmethod
    def empty(cls) -> GpuPart:
        z = np.zeros(0, np.int64)
        return cls(z, z.astype(np.uint8), z.astype(np.uint8), z.astype(np.uint64), z.astype(np.uint64), z, z,
                   np.zeros((0, 0)), z)


def reconstruct_profile(prof: HpcrunProfile, rows_of: Callable[[np.ndarray], np.ndarray],
                        lm_hash: dict[int, int], graphs: dict[int, CallGraph]) -> GpuPart:
    """Reconstruct every launch context of ``prof`` whose samples lie in a binary with a call graph.

    ``rows_of``: CCT node ids -> rows; ``lm_hash``: loadmap id -> module hash;
    ``graphs``: module hash -> call graph.
    """
    if not graphs or not len(prof.values):
        return GpuPart.empty()
    from hpcsa.gpucct import PcSamples, reconstruct
    from hpcsa.gpucct.launches import launch_contexts

    periods = np.array([m.period for m in prof.metrics], np.float64)
    parents: list[int] = []
    kinds: list[int] = []
    flags: list[int] = []
    modules: list[int] = []
    ips: list[int] = []
    recon_rows: list[np.ndarray] = []
    point_nodes: list[np.ndarray] = []
    value_blocks: list[np.ndarray] = []
    columns: list[np.ndarray] = []
    base = len(prof.cct)
    for ctx in launch_contexts(prof):
        for lm, samples in sorted(ctx.samples.items()):
            h = lm_hash.get(lm)
            graph = graphs.get(h) if h is not None else None
            if h is None or graph is None:
                continue
            scaled = PcSamples(samples.pcs, samples.values * periods[ctx.metrics], weight=samples.weight)
            rec = reconstruct(graph, scaled, sorted(ctx.kernels.get(lm, {})))
            recon_rows.append(rows_of(np.asarray(ctx.sample_nodes[lm], np.int64)))
            holder = int(rows_of(np.array([ctx.node], np.int64))[0])
            frame_node = [holder]  # frame 0 is the placeholder itself
            for f in rec.frames[1:]:
                assert f.step is not None
                frame_node.append(base + len(parents))
                parents.append(frame_node[f.parent])
                kinds.append(rawtree.FRAME)
                flags.append(int(f.step.kind))
                modules.append(h)
                ips.append(int(f.step.pc))
            first_point = base + len(parents)
            pf = rec.point_frame.tolist()
            parents.extend(frame_node[i] for i in pf)
            kinds.extend([rawtree.POINT] * len(pf))
            flags.extend([0] * len(pf))
            modules.extend([h] * len(pf))
            ips.extend(int(pc) for pc in rec.point_pc.tolist())
            point_nodes.append(np.arange(first_point, first_point + len(pf)) - base)
            value_blocks.append(rec.point_values)
            columns.append(np.asarray(ctx.metrics, np.int64))
    if not parents:
        return GpuPart.empty()
    # Columns differ between launch contexts: put every block on the union of columns.
    cols = sorted_unique(np.concatenate(columns))
    values = np.zeros((sum(len(b) for b in value_blocks), len(cols)))
    at = 0
    for block, c in zip(value_blocks, columns, strict=True):
        values[at:at + len(block), np.searchsorted(cols, c)] = block
        at += len(block)
    return GpuPart(np.array(parents, np.int64), np.array(kinds, np.uint8), np.array(flags, np.uint8),
                   np.array(modules, np.uint64), np.array(ips, np.uint64),
                   sorted_unique(np.concatenate(recon_rows)), np.concatenate(point_nodes), values, cols)


#: A value of a reconstructed GPU calling context as phase 1 keeps it: its node (among the profile's nodes: CCT
#: rows first), its metric (the profile's own metric id) and the value (period applied).
GPU_VALUE = np.dtype([("node", "<u4"), ("metric", "<u2"), ("value", "<f8")])


def gpu_values(gpu: GpuPart, n_cct: int) -> np.ndarray:
    """The non-zero values of a profile's reconstructed points (``n_cct``: its CCT rows, which come first
    among its nodes), point by point, each point's by metric: the order phase 2 attributes them in."""
    rows, cols = np.nonzero(gpu.values)
    out = np.empty(len(rows), GPU_VALUE)
    out["node"] = n_cct + gpu.point_nodes[rows]
    out["metric"] = gpu.metrics[cols]
    out["value"] = gpu.values[rows, cols]
    return out


@dataclass
class GroupGpu:
    """The reconstructed GPU calling contexts of a group's profiles, as columns: profile ``k``'s new nodes are
    rows ``ncut[k]:ncut[k + 1]`` of the node columns (``parent``: an index among the profile's nodes, its CCT
    rows first, as :class:`GpuPart`'s ``parent``), the CCT rows of its placed samples ``rows[rcut[k]:rcut[k + 1]]``
    (within the profile), its points' non-zero values ``values[vcut[k]:vcut[k + 1]]`` (:data:`GPU_VALUE`)."""

    ncut: np.ndarray
    parent: np.ndarray
    kind: np.ndarray
    flag: np.ndarray
    module: np.ndarray
    ip: np.ndarray
    rcut: np.ndarray
    rows: np.ndarray
    vcut: np.ndarray
    values: np.ndarray

    @classmethod
    def of_parts(cls, parts: list[GpuPart], n_cct: np.ndarray) -> GroupGpu:
        """The columns of per-profile parts (``n_cct``: each profile's CCT rows)."""
        values = [gpu_values(p, int(m)) for p, m in zip(parts, n_cct.tolist(), strict=True)]

        def joined(name: str, dtype: type | np.dtype) -> np.ndarray:
            got = [getattr(p, name) for p in parts]
            return np.concatenate(got).astype(dtype) if got else np.zeros(0, dtype)

        return cls(_cuts([len(p.parent) for p in parts]), joined("parent", np.int64), joined("kind", np.uint8),
                   joined("flag", np.uint8), joined("module", np.uint64), joined("ip", np.uint64),
                   _cuts([len(p.reconstructed_rows) for p in parts]), joined("reconstructed_rows", np.int64),
                   _cuts([len(v) for v in values]),
                   np.concatenate(values) if values else np.zeros(0, GPU_VALUE))

    @classmethod
    def empty(cls, n: int) -> GroupGpu:
        z = np.zeros(n + 1, np.int64)
        e = np.zeros(0, np.int64)
        return cls(z, e, e.astype(np.uint8), e.astype(np.uint8), e.astype(np.uint64), e.astype(np.uint64), z, e, z,
                   np.zeros(0, GPU_VALUE))


def _cuts(lengths: list[int]) -> np.ndarray:
    out = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=out[1:])
    return out


def frame_name(graph: CallGraph | None, kind: int, pc: int) -> str:
    """The function name shown for a RECURSION or TRUNCATED frame."""
    from hpcsa.gpucct.model import TRUNCATED_NAME, StepKind, recursion_name

    def fname(entry: int) -> str:
        i = graph.index_of(entry) if graph is not None else -1
        return (graph.functions[i].name or f"{entry:#x}") if i >= 0 and graph is not None else f"{entry:#x}"

    if kind == StepKind.RECURSION:
        if graph is None:
            return recursion_name([fname(pc)])
        comp = int(graph.comp_of[graph.index_of(pc)]) if graph.index_of(pc) >= 0 else -1
        members = graph.member_entries(comp) if comp >= 0 else (pc,)
        return recursion_name([fname(e) for e in members])
    return f"{TRUNCATED_NAME[:-1]} of {fname(pc)}>" if pc else TRUNCATED_NAME
