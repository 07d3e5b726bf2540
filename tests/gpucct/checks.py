"""Invariants every reconstruction must satisfy, checked by every gpucct test."""

from __future__ import annotations

import numpy as np

from hpcsa.gpucct import CallGraph, PcSamples, Reconstruction, StepKind, aggregate_by_pc


def flat_by_pc(samples: PcSamples) -> dict[int, np.ndarray]:
    pcs, vals = aggregate_by_pc(samples)
    return {int(pc): row for pc, row in zip(pcs.tolist(), vals, strict=True) if np.any(row != 0)}


def placed_by_pc(recs: list[Reconstruction]) -> dict[int, np.ndarray]:
    out: dict[int, np.ndarray] = {}
    for rec in recs:
        for pc, row in zip(rec.point_pc.tolist(), rec.point_values, strict=True):
            out[pc] = out.get(pc, 0) + row
    return out


def assert_conserved(samples: PcSamples, recs: list[Reconstruction]) -> None:
    """Nothing lost or invented: per pc and per metric, placed == flat (and so per metric in total)."""
    flat = flat_by_pc(samples)
    placed = placed_by_pc(recs)
    assert set(placed) == set(flat), (sorted(set(flat) ^ set(placed)))
    for pc, row in flat.items():
        np.testing.assert_allclose(placed[pc], row, rtol=1e-9, atol=1e-12, err_msg=f"pc {pc:#x}")
    total = sum((r.totals() for r in recs), np.zeros(samples.n_metrics))
    np.testing.assert_allclose(total, samples.totals(), rtol=1e-9, atol=1e-9)


def assert_well_formed(graph: CallGraph, rec: Reconstruction, kernels: list[int] = ()) -> None:
    """Canonical pre-order, sorted unique siblings and points, factors in (0, 1], points where they belong."""
    frames = rec.frames
    assert frames[0].parent == -1 and frames[0].step is None
    kids = rec.children()
    order: list[int] = []
    stack = [0]
    while stack:
        i = stack.pop()
        order.append(i)
        steps = [frames[k].step for k in kids[i]]
        assert steps == sorted(steps) and len(set(steps)) == len(steps), steps
        stack.extend(reversed(kids[i]))
    assert order == list(range(len(frames))), "frames are not in pre-order"
    for f in frames:
        assert 0 < f.factor <= 1 + 1e-12, f
    key = np.lexsort((rec.point_pc, rec.point_frame))
    assert np.array_equal(key, np.arange(len(key))), "points not sorted by (frame, pc)"
    if len(key) > 1:
        same = (rec.point_frame[1:] == rec.point_frame[:-1]) & (rec.point_pc[1:] == rec.point_pc[:-1])
        assert not np.any(same), "a pc appears twice under one frame"

    # Which functions each frame may hold points of, and where its calls come from.
    func = graph.function_of(rec.point_pc)
    launched = {int(graph.comp_of[graph.index_of(k)]) for k in kernels if graph.index_of(k) >= 0}
    for i, f in enumerate(frames):
        here = func[rec.point_frame == i]
        if f.step is None:
            assert all(h >= 0 and int(graph.comp_of[h]) in launched for h in here.tolist())
        elif f.step.kind == StepKind.CALL:
            assert f.callee is not None
            parent = frames[f.parent]
            caller = int(graph.function_of([f.step.pc])[0])
            assert caller >= 0
            if parent.step is not None and parent.step.kind == StepKind.CALL:
                assert graph.functions[caller].entry == parent.callee
            elif parent.step is not None and parent.step.kind == StepKind.RECURSION:
                assert graph.functions[caller].entry in parent.members
            callee = graph.index_of(f.callee)
            if graph.comp_recursive[graph.comp_of[callee]]:
                assert len(here) == 0 and kids[i] and frames[kids[i][0]].step.kind == StepKind.RECURSION
            else:
                assert all(h == callee for h in here.tolist())
        elif f.step.kind == StepKind.RECURSION:
            members = {graph.index_of(e) for e in f.members}
            assert f.step.pc == min(f.members)
            assert all(h in members for h in here.tolist())
        elif f.step.kind == StepKind.UNKNOWN:
            assert f.parent == 0


def check(graph: CallGraph, samples: PcSamples, rec: Reconstruction, kernels: list[int] = ()) -> None:
    assert_conserved(samples, [rec])
    assert_well_formed(graph, rec, kernels)


def by_path(rec: Reconstruction) -> dict[tuple[str, int], tuple[float, ...]]:
    """``{("call@0x110/recursion@0x300", pc): values}``: the tree in a form tests can write by hand."""
    return {("/".join(str(s) for s in steps), pc): tuple(float(v) for v in row) for steps, pc, row in rec.paths()}
