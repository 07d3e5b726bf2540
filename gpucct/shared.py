"""One reconstruction for many launch contexts of the same shape: what :func:`.reconstruct` decides from the
pattern of a launch context's samples, reused, and the ratios worked out for each context from its own
samples, for many contexts at once.

The ranks and threads of a parallel run launch the same kernels from the same call paths and sample the same
instructions; they differ in how many samples each instruction got. :func:`.reconstruct`'s tree — which
functions are entered, through which call sites, which frames and points exist, and in which order — depends
on the graph, the launched kernels, which pcs have samples, and which call sites have weight (the *shape*:
:func:`shape_key`), not on the weights themselves, as long as the budget of points is not reached (then the
order in which paths are expanded decides which are cut). The values placed are each sample's value times
the product of the call-site fractions (a weight over its component's incoming weights) along its frame's
path; only those numbers depend on the weights.

So the first launch context of a shape is reconstructed as usual (:func:`make_shape`), and what its run
decided is recorded: the frames, each point's sample row, which call site's fraction multiplies each frame's
factor, which call sites the zero-weight rule forced to 1. Every other context of that shape gets its
fractions from its own weights and its points' values from them (:func:`apply_shape`), for all of them
at once, with the very operations :func:`.reconstruct` performs in the same order (a component's incoming
weights summed one after the other, each frame's factor its parent's times one fraction, each point's
values its sample's times its frame's factor): the same floating-point numbers, bit for bit. The recorded
shape is checked against its own run before it is reused (every factor and every value reproduced), and a
context for which a number would come out otherwise (a sum of weights of 0, a factor that underflows to 0)
is left to :func:`.reconstruct`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hpcsa.gpucct.model import CallGraph, PcSamples, Reconstruction, StepKind
from hpcsa.gpucct.reconstruct import DEFAULT_MAX_POINTS, _Reconstructor

#: Frame factors: multiplied by a fraction (the frame's call edge), the parent's, or 1.
_FROM_EDGE, _FROM_PARENT, _ONE = 0, 1, 2


def shape_key(graph: CallGraph, kernels: Sequence[int], pcs: np.ndarray, values: np.ndarray,
              weights: np.ndarray) -> bytes:
    """What decides a reconstruction's tree: the graph, the launched kernels, the distinct sample pcs (sorted,
    ``pcs``) and which have a non-zero value (``values``: their rows), which call sites (the graph's
    inter-component edges) have weight (``weights``). Equal keys, the same tree (below the budget)."""
    return shape_head(graph, kernels, pcs) + patterns(values[None], weights[None])[0].tobytes()


def shape_head(graph: CallGraph, kernels: Sequence[int], pcs: np.ndarray) -> bytes:
    """The part of :func:`shape_key` that launch contexts with the same pcs share."""
    head = np.array([id(graph), len(kernels), len(pcs)], np.int64).tobytes()
    return b"".join([head, np.asarray(kernels, np.uint64).tobytes(), pcs.astype(np.uint64).tobytes()])


def patterns(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The rest of :func:`shape_key` for launch contexts with the same pcs, as a row of bytes each:
    ``values`` [contexts, pcs, metrics], ``weights`` [contexts, edges]."""
    return np.concatenate([np.packbits(np.any(values != 0, axis=2), axis=1), np.packbits(weights != 0, axis=1)],
                          axis=1)


def call_weights(graph: CallGraph, pcs: np.ndarray, values: np.ndarray, weight: int | None) -> np.ndarray:
    """[contexts, edges] the weight of each call site (the weight column's value at its call instruction, 0
    where it has none) of contexts with the same sorted distinct pcs ``pcs``; ``values`` [contexts, pcs,
    metrics]. What :func:`.reconstruct` takes (without exact call counts)."""
    call = graph.call_pc[graph.edge_call]
    if weight is None or not len(pcs):
        return np.zeros((values.shape[0], len(call)))
    pos = np.minimum(np.searchsorted(pcs, call), len(pcs) - 1)
    hit = pcs[pos] == call
    return np.where(hit[None, :], values[:, pos, weight], 0.0)


class Shape:
    """What a reconstruction decided, reusable for launch contexts with the same :func:`shape_key`."""

    def __init__(self, rec: Reconstruction, rows: np.ndarray, frame_from: np.ndarray, frame_edge: np.ndarray,
                 ins: list[list[int]], forced: np.ndarray, positive: np.ndarray) -> None:
        self.rec = rec                # the template's tree (its values are the template's)
        self.rows = rows              # each point's row among the sorted distinct pcs
        self.frame_from = frame_from  # per frame (canonical order): _FROM_EDGE, _FROM_PARENT or _ONE
        self.frame_edge = frame_edge  # the edge of _FROM_EDGE frames
        self.ins = ins                # incoming edges of each component whose fractions are used
        self.forced = forced          # bool per edge: weight 1 by the zero-weight rule
        self.positive = positive      # bool per edge: a fraction > 0 in the template (the tree's edges)
        self.parent = np.array([f.parent for f in rec.frames], np.int64)


def make_shape(graph: CallGraph, samples: PcSamples, kernels: Sequence[int],
               max_points: int = DEFAULT_MAX_POINTS) -> tuple[Reconstruction, Shape | None]:
    """:func:`.reconstruct` of one launch context, and its shape where it can be reused (None: a tree the
    budget cut, sibling frames with the same step, pcs sampled twice, or a number the reuse would not
    reproduce)."""
    r = _Reconstructor(graph, samples, kernels, None, max_points)
    rec = r.run()
    upc = np.unique(samples.pcs)
    if (rec.stats.truncated_frames or r.spent > max_points or len(upc) != len(samples.pcs)
            or not _distinct_sibling_steps(rec)):
        return rec, None
    edge_of_pc = {int(pc): e for e, pc in enumerate(graph.call_pc[graph.edge_call].tolist())}
    n = len(rec.frames)
    frame_from = np.full(n, _ONE, np.int8)
    frame_edge = np.full(n, -1, np.int64)
    for i, f in enumerate(rec.frames[1:], start=1):
        assert f.step is not None
        if f.step.kind == StepKind.CALL:
            frame_from[i], frame_edge[i] = _FROM_EDGE, edge_of_pc[f.step.pc]
        elif f.step.kind == StepKind.RECURSION:
            frame_from[i] = _FROM_PARENT
        elif f.step.kind != StepKind.UNKNOWN:
            return rec, None
    ins = [list(r.incoming[c]) for c in range(graph.n_components) if r.needed[c] and r.incoming[c]]
    forced = (r.measured_weights == 0) & (r.weights != 0)
    shape = Shape(rec, np.searchsorted(upc, rec.point_pc), frame_from, frame_edge, ins, forced, r.fraction > 0)
    order = np.argsort(samples.pcs, kind="stable")
    values, factors, ok = _apply(shape, samples.values[order][None], r.measured_weights[None])
    if not ok[0] or not np.array_equal(factors[0], [f.factor for f in rec.frames]) or \
            values[0].tobytes() != rec.point_values.tobytes():
        return rec, None
    return rec, shape


def _distinct_sibling_steps(rec: Reconstruction) -> bool:
    """Whether no two frames with the same parent have the same step (their order would then be the order
    they were made in, which the weights decide)."""
    seen = {(f.parent, f.step) for f in rec.frames[1:]}
    return len(seen) == len(rec.frames) - 1


def apply_shape(shape: Shape, values: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The points' values [contexts, points, metrics] of launch contexts of ``shape``'s key, from their
    sample values (``values`` [contexts, sorted distinct pcs, metrics], period applied) and call weights
    (``weights`` [contexts, edges], :func:`call_weights`); and which contexts it reproduces (False: leave
    that context to :func:`.reconstruct`)."""
    out, _, ok = _apply(shape, values, weights)
    return out, ok


def _apply(shape: Shape, values: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(points' values, frame factors, reproduced) of contexts of the shape: the ratios of step 4 of
    :func:`.reconstruct`, with its operations in its order."""
    k = len(weights)
    ok = np.all(np.isfinite(weights) & (weights >= 0), axis=1)
    w = weights.copy()
    w[:, shape.forced] = 1.0
    fraction = np.zeros(w.shape)
    with np.errstate(divide="ignore", invalid="ignore", under="ignore"):
        for ins in shape.ins:
            tot = np.zeros(k)
            for e in ins:  # one after the other (reconstruct's order)
                tot = tot + w[:, e]
            ok &= tot != 0
            fraction[:, ins] = w[:, ins] / tot[:, None]
        ok &= np.all((fraction > 0) == shape.positive[None, :], axis=1)
        n = len(shape.frame_from)
        factor = np.ones((k, n))
        for i in range(1, n):
            how = shape.frame_from[i]
            if how == _FROM_EDGE:
                factor[:, i] = factor[:, shape.parent[i]] * fraction[:, shape.frame_edge[i]]
            elif how == _FROM_PARENT:
                factor[:, i] = factor[:, shape.parent[i]]
        ok &= np.all(factor > 0, axis=1)
        point_factor = factor[:, shape.rec.point_frame]
        out = values[:, shape.rows, :] * point_factor[:, :, None]
    return out, factor, ok
