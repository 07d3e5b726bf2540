"""Rebuild an approximate GPU calling-context tree from flat PC samples.

The four steps are those of HPCToolkit's reconstruction ("Tools for Top-down
Performance Analysis of GPU-Accelerated Applications", ICS 2020; "Measurement
and Analysis of GPU-accelerated Applications with HPCToolkit", Parallel
Computing 2021; HPCToolkit's user manual, "GPU Calling Context Tree
Reconstruction").

Per launch context (one ``<gpu kernel>`` placeholder: a CPU call path that
launched one or more kernels), :func:`reconstruct` does the four steps:

1. The static call graph (``CallGraph``), with edge weight = the weight
   metric (GINS) sampled at the call instruction under this launch context, or
   the call instruction's exact execution count when the source has one.
2. Zero-weight rule: a function with samples whose incoming edges all weigh 0
   gets weight 1 on each of them, and the rule is applied again to the callers
   that became needed this way, up to code with weighted calls or the kernel.
3. Recursion: strongly connected components (Tarjan, ``scc.py``); each component is one
   node (edges from outside go to it, edges inside are dropped), so the graph
   is a DAG. A function that calls itself is a component of its own.
4. The DAG is split into a tree from the launched kernels down, gprof-style:
   every call to a component costs the same, so a component's samples are
   apportioned to its incoming call sites in the ratio of their weights, and
   the ratios multiply along the path. Every metric column is scaled by the
   same factors.

Where code is entered from
--------------------------
Components reachable from a launched kernel through direct calls form the
*launched part*. Everything else is the *unknown part*: functions entered only
through indirect calls, kernels not launched here, and what only they call.
The unknown part hangs under one ``UNKNOWN`` frame under the root (with the pcs
outside every function), and its uncalled components are its roots, so the
calls that are known below an unknown caller are still shown. A call measured
in the unknown part did execute, so its weight counts for its callee like any
other (a function called both directly by the kernel and from code reached
through an indirect call is split between the two by their weights); but the
weight 1 of the zero-weight rule goes only to calls from the callee's own part,
so that an unsampled function is never attributed to a kernel that was not
launched. Calls into a launched kernel are ignored (a kernel is launched, not
called). Nothing is ever dropped: per launch context, per pc and per metric,
the placed values sum to the flat values.

Steps 2 and 4 run on the component DAG, so the zero-weight rule treats a
recursive component as one function (otherwise a component whose only weighted
calls come from inside would have no way in and its samples would be lost).

Size
----
The tree of a DAG can have exponentially many call paths, and every frame
holds its own copy of its code's sample points. So the tree is built
best-first under a budget of placed points (``max_points``; a frame with no
points of its own counts as one): frames are created in decreasing order of
factor (ties broken by path), so the heaviest call paths get their frames
first, and the calls made by a launched kernel itself are always expanded.
Once the budget is spent, every call path not yet expanded is folded into one
``TRUNCATED`` frame per launched kernel (``<more call paths>`` under the root,
its step naming the kernel; one under ``UNKNOWN`` for the unknown part) that
holds, flat and per pc, everything those paths lead to (one pass over the
DAG). The cut costs context, never values: the inclusive value of a frame whose
calls were cut misses what went to ``<more call paths>``. The whole output is
at most ``max_points`` + (the kernels' own calls and their points) + one point
per distinct pc per TRUNCATED frame; the work besides it is
O(samples log samples + functions + calls). Below the budget the tree is exact.

Differences from HPCToolkit, by design
--------------------------------------
- Recursion gets a frame of its own (``RECURSION``, named
  ``<recursion: f, g, ...>``) between the call into the component and its
  members; the component's samples are not split among its members (each
  sample stays in its own function with the incoming factor). HPCToolkit's
  current hpcprof (``src/hpcprof/finalizers/struct.cpp``) has no such frame
  and instead fans a call into the component's *root* (the member its search
  reached first) out to all members, as if it could call each of them
  directly, while a call into another member is not fanned out; its legacy
  hpcprof (``src/lib/analysis/CallPath-CudaCFG.cpp``, release 2022.05.15)
  rendered the component as a loop, and only when it had several members.
- Zero weights: a call site with weight 0 gets nothing when a sibling call site
  into the same component has weight (as current hpcprof; legacy hpcprof
  forced every zero edge to 1, giving 1/(sum+1)); when all are 0 they weigh 1
  each, i.e. an even split, and the rule climbs to the callers (step 2).
- Nothing is dropped. HPCToolkit drops the samples of a launch context whose
  kernel has no entry count (every factor 0), samples in functions reached
  only through indirect calls, and every sample of a binary with one unknown
  call target; hpcsa puts them under ``UNKNOWN`` (an unknown target makes
  only that call indirect).
- Recursive flow graphs and suffix paths, fatal in current hpcprof, are
  ordinary here.
- Samples without a launch (:func:`reconstruct_unlaunched`) are shared over
  launch contexts by launch count per kernel, as hpcprof's exterior factor;
  samples that belong to no launched kernel are shared by each context's total
  launch count.
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable, Iterable, Mapping
from typing import TypeVar, cast

import numpy as np

from hpcsa.core.errors import HpcsaError
from hpcsa.gpucct.model import (
    CallGraph,
    Frame,
    PcSamples,
    Reconstruction,
    ReconstructionStats,
    Step,
    StepKind,
)

#: Default budget of placed points per launch context: with the flat profile's pcs as the floor, a few
#: million points keep a launch context's tree within a few hundred MB however many call paths there are.
DEFAULT_MAX_POINTS = 2_000_000

K = TypeVar("K", bound=Hashable)


def reconstruct(graph: CallGraph, samples: PcSamples, kernels: Iterable[int] = (), *,
                call_counts: Mapping[int, float] | None = None,
                max_points: int = DEFAULT_MAX_POINTS) -> Reconstruction:
    """The reconstructed tree of one launch context.

    ``kernels``: entry addresses of the kernels launched from this context.
    ``call_counts``: exact execution counts by call-instruction pc; when given
    they replace the sampled weights (a call missing from it counts 0).
    """
    return _Reconstructor(graph, samples, kernels, call_counts, max_points).run()


def reconstruct_unlaunched(graph: CallGraph, samples: PcSamples, launches: Mapping[K, Mapping[int, float]],
                           *, call_counts: Mapping[int, float] | None = None,
                           max_points: int = DEFAULT_MAX_POINTS) -> dict[K, Reconstruction]:
    """Share samples that carry no launch over launch contexts, by launch count.

    ``launches`` maps each launch context (any key) to ``{kernel entry:
    launch count}`` (GKER:COUNT). The samples are reconstructed once with every
    listed kernel launched; then each frame descending from kernel K goes to
    context R in the ratio count(R, K) / sum over R' of count(R', K) (an even
    split over the contexts listing K if all its counts are 0), and frames
    under UNKNOWN in the ratio of each context's total launch count. Summed
    over the returned contexts, every value equals the flat value.
    """
    if not launches:
        raise HpcsaError(graph.source, "samples without a launch need at least one launch context "
                         "to be shared over")
    kernels = sorted({int(k) for per in launches.values() for k in per})
    rec = reconstruct(graph, samples, kernels, call_counts=call_counts, max_points=max_points)

    per_origin: dict[K, dict[int, float]] = {}
    total: dict[K, float] = {}
    for ctx, per in launches.items():
        counts: dict[int, float] = {}
        for entry, count in per.items():
            count = float(count)
            if not (count >= 0 and np.isfinite(count)):
                raise HpcsaError(graph.source, f"launch count {count} of kernel {int(entry):#x} is not a "
                                 "finite non-negative number")
            origin = _origin_entry(graph, int(entry))
            if origin is not None:
                counts[origin] = counts.get(origin, 0.0) + count
            total[ctx] = total.get(ctx, 0.0) + count
        per_origin[ctx] = counts
        total.setdefault(ctx, 0.0)

    origins = sorted({o for counts in per_origin.values() for o in counts})
    share: dict[K, dict[int | None, float]] = {ctx: {} for ctx in launches}
    for o in origins:
        listed = [ctx for ctx in launches if o in per_origin[ctx]]
        denom = sum(per_origin[ctx][o] for ctx in listed)
        for ctx in listed:
            share[ctx][o] = per_origin[ctx][o] / denom if denom > 0 else 1.0 / len(listed)
    grand = sum(total[ctx] for ctx in launches)
    for ctx in launches:
        share[ctx][None] = total[ctx] / grand if grand > 0 else 1.0 / len(launches)

    # Each point's share: its frame's origin, except at the root, where it is the point's own kernel.
    return {ctx: _scaled(graph, rec, share[ctx]) for ctx in launches}


def _origin_entry(graph: CallGraph, entry: int) -> int | None:
    idx = graph.index_of(entry)
    return None if idx < 0 else int(graph.comp_entry[graph.comp_of[idx]])


def _scaled(graph: CallGraph, rec: Reconstruction, share: Mapping[int | None, float]) -> Reconstruction:
    """``rec`` with every frame and point scaled by its origin's share; frames with no share removed."""
    n = len(rec.frames)
    scale = np.ones(n)
    for i in range(1, n):
        scale[i] = share.get(rec.frames[i].origin, 0.0)
    keep = scale > 0
    new_index = np.cumsum(keep) - 1
    frames = [Frame(parent=int(new_index[f.parent]) if f.parent >= 0 else -1, step=f.step,
                    factor=f.factor * float(scale[i]) if i else f.factor, callee=f.callee, members=f.members,
                    origin=f.origin)
              for i, f in enumerate(rec.frames) if keep[i]]
    pscale = scale[rec.point_frame]
    at_root = np.flatnonzero(rec.point_frame == 0)
    if len(at_root):
        origin = graph.comp_entry[graph.comp_of[graph.function_of(rec.point_pc[at_root])]]
        kinds, inverse = np.unique(origin, return_inverse=True)
        pscale[at_root] = np.array([share.get(int(o), 0.0) for o in kinds.tolist()])[inverse]
    pkeep = pscale > 0
    stats = ReconstructionStats(**vars(rec.stats))
    stats.points = int(len(np.unique(rec.point_pc[pkeep])))
    return Reconstruction(frames=frames, point_frame=new_index[rec.point_frame[pkeep]].astype(np.int64),
                          point_pc=rec.point_pc[pkeep],
                          point_values=rec.point_values[pkeep] * pscale[pkeep, None], stats=stats)


def aggregate_by_pc(samples: PcSamples) -> tuple[np.ndarray, np.ndarray]:
    """Distinct pcs (ascending) and their summed values.

    Rows sharing a pc are summed in an order fixed by their values, so the
    sums do not depend on the order the rows came in.
    """
    pcs, vals = samples.pcs, samples.values
    order = np.argsort(pcs, kind="stable")
    sorted_pcs = pcs[order]
    dup = len(sorted_pcs) > 1 and bool(np.any(sorted_pcs[1:] == sorted_pcs[:-1]))
    if dup and not _sums_exact(vals):
        keys = [vals[:, j] for j in range(vals.shape[1] - 1, -1, -1)] + [pcs]
        order = np.lexsort(keys)
        sorted_pcs = pcs[order]
    if not len(sorted_pcs):
        return sorted_pcs, np.zeros((0, vals.shape[1]))
    if not dup:
        return sorted_pcs, vals[order]
    first = np.ones(len(sorted_pcs), dtype=bool)
    first[1:] = sorted_pcs[1:] != sorted_pcs[:-1]
    starts = np.flatnonzero(first)
    return sorted_pcs[starts], np.add.reduceat(vals[order], starts, axis=0)


def _sums_exact(vals: np.ndarray) -> bool:
    """Whether any order of summing gives the same floats: integers whose sums stay below 2**53
    (sample counts always do), so the costly canonical ordering can be skipped."""
    return bool(np.abs(vals).sum() < 2.0**53) and bool(np.all(vals == np.rint(vals)))


class _Reconstructor:
    """One launch context's reconstruction; state shared by the steps."""

    def __init__(self, graph: CallGraph, samples: PcSamples, kernels: Iterable[int],
                 call_counts: Mapping[int, float] | None, max_points: int) -> None:
        self.g = graph
        self.samples = samples
        self.kernels = sorted({int(k) for k in kernels})
        self.call_counts = call_counts
        self.max_points = max_points
        self.spent = 0
        self.stats = ReconstructionStats(unresolved_calls=len(graph.unresolved_calls))
        # the tree under construction (columns; renumbered canonically at the end)
        self.f_parent: list[int] = []
        self.f_step: list[Step | None] = []
        self.f_factor: list[float] = []
        self.f_callee: list[int | None] = []
        self.f_members: list[tuple[int, ...]] = []
        self.f_origin: list[int | None] = []
        # sample blocks placed: frame, component, factor (columns)
        self.i_frame: list[int] = []
        self.i_comp: list[int] = []
        self.i_factor: list[float] = []
        self.heap: list[tuple[float, tuple[Step, ...], int, int, int | None]] = []

    # -- the steps -------------------------------------------------------------------------------
    def run(self) -> Reconstruction:
        g = self.g
        upc, uval = aggregate_by_pc(self.samples)
        weights = self._call_weights(upc, uval)  # per inter-component edge (step 1)
        nonzero = np.any(uval != 0, axis=1)
        func = g.function_of(upc)
        mapped = func >= 0
        comp = np.where(mapped, g.comp_of[np.maximum(func, 0)] if g.n_functions else -1, -1)
        ncomp = g.n_components
        self.npoints = np.bincount(comp[mapped & nonzero], minlength=ncomp) if ncomp else np.zeros(0, np.int64)
        has_cost = self.npoints > 0

        roots = self._launched_components()
        launched_part = self._reachable(roots)
        is_root = np.zeros(ncomp, dtype=bool)
        is_root[roots] = True
        src, dst = g.edge_src, g.edge_dst
        kept = ~is_root[dst] if len(src) else np.zeros(0, bool)  # nothing calls a launched kernel
        incoming: list[list[int]] = [[e for e in ins if kept[e]] for ins in g.comp_in_edges]
        unknown_roots = [c for c in range(ncomp) if not launched_part[c] and not incoming[c]]
        for c in unknown_roots:
            is_root[c] = True

        self.measured_weights = weights
        needed, weights = self._zero_weight_rule(has_cost, is_root, incoming, launched_part, weights)  # step 2
        fraction = np.zeros(len(src))
        for c in range(ncomp):  # step 4's ratios (step 3 is the graph's component DAG)
            ins = incoming[c]
            if needed[c] and ins:
                tot = 0.0
                for e in ins:  # one after the other, in call-pc order (what a reuse repeats: shared.py)
                    tot += float(weights[e])
                for e in ins:
                    fraction[e] = float(weights[e]) / tot
        self.weights = weights
        self.incoming = incoming
        self.fraction = fraction
        self.fraction_list = fraction.tolist()
        self.needed = needed
        self.child_edges = [[e for e in outs if kept[e] and fraction[e] > 0 and needed[dst[e]]]
                            for outs in g.comp_out_edges]

        root = self._add_frame(-1, None, 1.0)
        for c in roots:
            if needed[c]:
                self._enter(c, 1.0, root, (), self._rep_entry(c))
        unmapped = ~mapped & nonzero
        live_unknown = [c for c in unknown_roots if needed[c]]
        unknown_frame = -1
        if live_unknown or np.any(unmapped):
            unknown_frame = self._add_frame(root, Step(StepKind.UNKNOWN, 0), 1.0)
            self.spent += int(np.count_nonzero(unmapped))
            for c in live_unknown:
                self._enter(c, 1.0, unknown_frame, (Step(StepKind.UNKNOWN, 0),), None)
        self._expand(root, unknown_frame)
        return self._finish(upc, uval, comp, mapped & nonzero, unmapped, unknown_frame)

    def _call_weights(self, upc: np.ndarray, uval: np.ndarray) -> np.ndarray:
        g = self.g
        pcs = g.call_pc[g.edge_call]
        if self.call_counts is not None:
            w = np.array([float(self.call_counts.get(int(pc), 0.0)) for pc in pcs.tolist()], dtype=np.float64)
        elif self.samples.weight is None or not len(upc):
            w = np.zeros(len(pcs))
        else:
            pos = np.minimum(np.searchsorted(upc, pcs), len(upc) - 1)
            w = np.where(upc[pos] == pcs, uval[pos, self.samples.weight], 0.0)
        bad = ~(np.isfinite(w) & (w >= 0))
        if np.any(bad):
            pc = int(pcs[np.flatnonzero(bad)[0]])
            raise HpcsaError(g.source, f"the call at {pc:#x} has weight {w[bad][0]}, not a finite "
                             "non-negative number")
        return w

    def _launched_components(self) -> list[int]:
        g = self.g
        comps: set[int] = set()
        unknown: list[int] = []
        for k in self.kernels:
            idx = g.index_of(k)
            if idx < 0:
                unknown.append(k)
            else:
                comps.add(int(g.comp_of[idx]))
        self.stats.unknown_kernels = tuple(unknown)
        return sorted(comps)

    def _reachable(self, roots: list[int]) -> np.ndarray:
        g = self.g
        seen = np.zeros(g.n_components, dtype=bool)
        seen[roots] = True
        stack = list(roots)
        out_edges, dst = g.comp_out_edges, g.edge_dst
        while stack:
            c = stack.pop()
            for e in out_edges[c]:
                d = int(dst[e])
                if not seen[d]:
                    seen[d] = True
                    stack.append(d)
        return seen

    def _zero_weight_rule(self, has_cost: np.ndarray, is_root: np.ndarray, incoming: list[list[int]],
                          launched_part: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Which components must be entered, and the weights after forcing 1 where all incoming are 0.

        Forced weights go only to calls from the callee's own part: with no
        evidence, a kernel that was not launched here is not a plausible caller.
        """
        src = self.g.edge_src
        weights = weights.copy()
        needed = has_cost.copy()
        work = np.flatnonzero(needed).tolist()
        while work:
            c = work.pop()
            if is_root[c]:
                continue
            ins = incoming[c]
            if all(weights[e] == 0 for e in ins):
                forced = [e for e in ins if launched_part[src[e]] == launched_part[c]]
                weights[forced] = 1.0
                self.stats.forced_edges += len(forced)
            for e in ins:
                s = int(src[e])
                if weights[e] > 0 and not needed[s]:
                    needed[s] = True
                    work.append(s)
        return needed, weights

    # -- building the tree ------------------------------------------------------------------------
    def _add_frame(self, parent: int, step: Step | None, factor: float, callee: int | None = None,
                   members: tuple[int, ...] = (), origin: int | None = None) -> int:
        self.f_parent.append(parent)
        self.f_step.append(step)
        self.f_factor.append(factor)
        self.f_callee.append(callee)
        self.f_members.append(members)
        self.f_origin.append(origin)
        return len(self.f_parent) - 1

    def _place(self, frame: int, comp: int, factor: float) -> None:
        self.i_frame.append(frame)
        self.i_comp.append(comp)
        self.i_factor.append(factor)

    def _rep_entry(self, comp: int) -> int:
        return int(self.g.comp_entry[comp])

    def _enter(self, comp: int, factor: float, frame: int, path: tuple[Step, ...], origin: int | None) -> None:
        """Place ``comp``'s samples under ``frame`` (through a RECURSION frame if it is recursive)
        and queue its calls."""
        g = self.g
        if g.comp_recursive[comp]:
            members = g.member_entries(comp)
            step = Step(StepKind.RECURSION, members[0])
            frame = self._add_frame(frame, step, factor, members=members, origin=origin)
            path = path + (step,)
            self.stats.recursion_frames += 1
            self.spent += 1
        self._place(frame, comp, factor)
        self.spent += max(1, int(self.npoints[comp]))
        steps, fraction, heap = g.edge_steps, self.fraction_list, self.heap
        for e in self.child_edges[comp]:
            child = factor * fraction[e]
            if child > 0:
                heapq.heappush(heap, (-child, path + (steps[e],), e, frame, origin))

    def _expand(self, root: int, unknown_frame: int) -> None:
        """Create frames best-first until the budget is spent; fold the rest, per kernel, into TRUNCATED frames."""
        g = self.g
        rest: dict[int | None, list[tuple[int, float]]] = {}
        exhausted = False
        while self.heap:
            neg, path, e, parent, origin = heapq.heappop(self.heap)
            d = int(g.edge_dst[e])
            cost = 1 + max(1, int(self.npoints[d])) + int(g.comp_recursive[d])
            if parent != root and (exhausted or self.spent + cost > self.max_points):
                exhausted = True
                rest.setdefault(origin, []).append((d, -neg))
                continue
            self.spent += 1
            callee = g.functions[int(g.call_callee[g.edge_call[e]])].entry
            frame = self._add_frame(parent, path[-1], -neg, callee=callee, origin=origin)
            self._enter(d, -neg, frame, path, origin)
        for origin in sorted(rest, key=lambda o: -1 if o is None else o):
            if origin is None:
                self._fold(unknown_frame, Step(StepKind.TRUNCATED, 0), None, rest[origin])
            else:
                self._fold(root, Step(StepKind.TRUNCATED, origin), origin, rest[origin])

    def _fold(self, parent: int, step: Step, origin: int | None, seeds: list[tuple[int, float]]) -> None:
        """One TRUNCATED frame holding, flat, everything below the seeds: the share of each component
        is the sum over the cut paths of their factors times the ratios on the way down."""
        g = self.g
        mass: dict[int, float] = {}
        for c, share in seeds:
            mass[c] = mass.get(c, 0.0) + share
        seen = set(mass)
        stack = list(mass)
        while stack:
            c = stack.pop()
            for e in self.child_edges[c]:
                d = int(g.edge_dst[e])
                if d not in seen:
                    seen.add(d)
                    stack.append(d)
        topo = g.comp_topo
        for c in sorted(seen, key=lambda x: int(topo[x])):
            m = mass.get(c, 0.0)
            if m > 0:
                for e in self.child_edges[c]:
                    d = int(g.edge_dst[e])
                    mass[d] = mass.get(d, 0.0) + m * float(self.fraction[e])
        frame = self._add_frame(parent, step, 1.0, origin=origin)  # its points carry their own shares
        self.stats.truncated_frames += 1
        for c in sorted(seen):
            if mass.get(c, 0.0) > 0:
                self._place(frame, c, mass[c])

    # -- output -----------------------------------------------------------------------------------
    def _finish(self, upc: np.ndarray, uval: np.ndarray, comp: np.ndarray, placed: np.ndarray,
                unmapped: np.ndarray, unknown_frame: int) -> Reconstruction:
        n = len(self.f_parent)
        kids: list[list[int]] = [[] for _ in range(n)]
        for i in range(1, n):
            kids[self.f_parent[i]].append(i)
        new_index = np.empty(n, dtype=np.int64)
        order: list[int] = []
        steps = cast(list[Step], self.f_step)  # what children are sorted by: every frame but the root has one
        stack = [0]
        while stack:
            i = stack.pop()
            new_index[i] = len(order)
            order.append(i)
            stack.extend(sorted(kids[i], key=lambda k: steps[k], reverse=True))
        parent_new = new_index[np.array(self.f_parent, dtype=np.int64)[order]].tolist()
        parent_new[0] = -1
        fs, ff, fc, fm, fo = self.f_step, self.f_factor, self.f_callee, self.f_members, self.f_origin
        frames = [Frame(p, fs[i], ff[i], fc[i], fm[i], fo[i]) for p, i in zip(parent_new, order, strict=True)]

        # Points: each placed block is its component's sample rows, scaled by the block's factor.
        m = uval.shape[1]
        rows = np.flatnonzero(placed)
        rows = rows[np.argsort(comp[rows], kind="stable")]  # by component, pcs ascending within
        block_comp = comp[rows]
        ncomp = self.g.n_components
        block_start = np.searchsorted(block_comp, np.arange(ncomp), side="left")
        block_len = np.searchsorted(block_comp, np.arange(ncomp), side="right") - block_start
        i_frame = new_index[np.array(self.i_frame, dtype=np.int64)] if self.i_frame else np.zeros(0, np.int64)
        i_comp = np.array(self.i_comp, dtype=np.int64)
        i_factor = np.array(self.i_factor, dtype=np.float64)
        lens = block_len[i_comp] if len(i_comp) else np.zeros(0, np.int64)
        which = np.repeat(np.arange(len(i_comp)), lens)
        offset = np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens, lens)
        src_rows = rows[block_start[i_comp[which]] + offset] if len(which) else np.zeros(0, np.int64)
        p_frame = i_frame[which]
        p_factor = i_factor[which]
        um = np.flatnonzero(unmapped)
        if len(um):
            p_frame = np.concatenate([p_frame, np.full(len(um), new_index[unknown_frame])])
            src_rows = np.concatenate([src_rows, um])
            p_factor = np.concatenate([p_factor, np.ones(len(um))])
        # rows index the ascending pcs, so (frame, row) orders points by (frame, pc)
        sort = np.argsort(p_frame * max(len(upc), 1) + src_rows, kind="stable")
        p_frame, src_rows, p_factor = p_frame[sort], src_rows[sort], p_factor[sort]
        p_pc = upc[src_rows]
        p_vals = (uval[src_rows] * p_factor[:, None]).reshape(-1, m)

        self.stats.points = int(np.count_nonzero(placed) + len(um))
        if unknown_frame >= 0:
            uf = int(new_index[unknown_frame])
            under = np.zeros(len(frames), dtype=bool)
            under[uf] = True
            for i in range(uf + 1, len(frames)):
                under[i] = under[frames[i].parent]
            self.stats.unknown_points = int(len(np.unique(p_pc[under[p_frame]])))
        return Reconstruction(frames=frames, point_frame=p_frame.astype(np.int64), point_pc=p_pc,
                              point_values=p_vals, stats=self.stats)
