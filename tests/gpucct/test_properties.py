"""Properties on random call graphs and samples: conservation, canonical output, budget, SCCs."""

from __future__ import annotations

import random

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hpcsa.gpucct import (
    DEFAULT_MAX_POINTS,
    CallGraph,
    CallSite,
    DeviceFunction,
    PcSamples,
    StepKind,
    reconstruct,
    reconstruct_unlaunched,
)
from hpcsa.gpucct.scc import strongly_connected
from tests.gpucct.checks import assert_conserved, assert_well_formed, check

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
UNRESOLVED = 0xDEAD00


@st.composite
def cases(draw):
    n = draw(st.integers(0, 8))
    entries = [0x100 * (i + 1) for i in range(n)]
    functions = [DeviceFunction(e, f"f{i}") for i, e in enumerate(entries)]
    calls: dict[int, CallSite] = {}
    if n:
        for caller, slot, target in draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(1, 8),
                                                            st.one_of(st.none(), st.just(-1),
                                                                      st.integers(0, n - 1))), max_size=20)):
            pc = entries[caller] + 0x10 * slot
            callee = None if target is None else UNRESOLVED if target == -1 else entries[target]
            calls[pc] = CallSite(pc, callee)
    # Sample pcs: call instructions (their weights), other code, and addresses outside every function.
    candidates = sorted(calls) + [e + 4 * k for e in entries for k in (0, 1, 37)] + [0x10, 0x20]
    m = draw(st.integers(1, 3))
    value = st.one_of(st.just(0.0), st.integers(0, 50).map(float),
                      st.floats(0, 1e4, allow_nan=False, allow_infinity=False))
    rows = draw(st.lists(st.tuples(st.sampled_from(candidates), st.lists(value, min_size=m, max_size=m)),
                         max_size=30))
    pcs = np.array([r[0] for r in rows], dtype=np.uint64)
    vals = np.array([r[1] for r in rows], dtype=float).reshape(-1, m)
    samples = PcSamples(pcs, vals, weight=draw(st.one_of(st.none(), st.integers(0, m - 1))))
    kernels = draw(st.lists(st.sampled_from(entries + [0x7700]), max_size=3, unique=True)) if n else []
    counts = None
    if calls and draw(st.booleans()):
        counts = {pc: float(draw(st.integers(0, 5))) for pc in calls if draw(st.booleans())}
    budget = draw(st.sampled_from([DEFAULT_MAX_POINTS, 1, 2, 3, 5, 8]))
    return functions, list(calls.values()), samples, kernels, counts, budget


def same(a, b) -> None:
    assert a.frames == b.frames
    assert np.array_equal(a.point_frame, b.point_frame)
    assert np.array_equal(a.point_pc, b.point_pc)
    assert np.array_equal(a.point_values, b.point_values)  # exactly: the sums are in canonical order


@SETTINGS
@given(cases(), st.randoms(use_true_random=False))
def test_conserved_well_formed_and_independent_of_input_order(case, rnd: random.Random):
    functions, calls, samples, kernels, counts, budget = case
    graph = CallGraph(functions, calls)
    rec = reconstruct(graph, samples, kernels, call_counts=counts, max_points=budget)
    check(graph, samples, rec, kernels)

    functions2, calls2, kernels2 = functions[:], calls[:], kernels[:]
    rnd.shuffle(functions2)
    rnd.shuffle(calls2)
    rnd.shuffle(kernels2)
    perm = np.array(rnd.sample(range(len(samples.pcs)), len(samples.pcs)), dtype=np.int64)
    samples2 = PcSamples(samples.pcs[perm], samples.values[perm], weight=samples.weight)
    counts2 = dict(reversed(list(counts.items()))) if counts else counts
    rec2 = reconstruct(CallGraph(functions2, calls2), samples2, kernels2, call_counts=counts2, max_points=budget)
    same(rec, rec2)


@SETTINGS
@given(cases())
def test_budget_keeps_the_heaviest_frames_of_the_full_tree(case):
    functions, calls, samples, kernels, counts, budget = case
    graph = CallGraph(functions, calls)
    full = reconstruct(graph, samples, kernels, call_counts=counts)
    rec = reconstruct(graph, samples, kernels, call_counts=counts, max_points=budget)
    full_factor = {full.path(i): f.factor for i, f in enumerate(full.frames)}
    for i, f in enumerate(rec.frames):
        path = rec.path(i)
        if not any(s.kind == StepKind.TRUNCATED for s in path):
            assert path in full_factor
            assert np.isclose(f.factor, full_factor[path], rtol=1e-12)
    if rec.stats.truncated_frames == 0:
        same(rec, full)
    else:  # cut only when the exact tree does not fit, into one flat frame per kernel (+ one under UNKNOWN)
        # The budget's accounting (reconstruct.py "Size"): every frame counts one, and so does each of
        # its points, a frame without points counting one point.
        points_per_frame = np.bincount(full.point_frame, minlength=len(full.frames))
        assert len(full.frames) + int(np.maximum(points_per_frame, 1).sum()) > budget
        cut = [f for f in rec.frames if f.step is not None and f.step.kind == StepKind.TRUNCATED]
        launched = {int(graph.comp_of[graph.index_of(k)]) for k in kernels if graph.index_of(k) >= 0}
        assert len(cut) <= len(launched) + 1
        for f in cut:
            parent = rec.frames[f.parent]
            assert f.parent == 0 and f.step.pc == f.origin or parent.step == (StepKind.UNKNOWN, 0) and \
                f.step.pc == 0


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), st.lists(st.dictionaries(st.sampled_from([0x100, 0x200, 0x300, 0x7700]), st.integers(0, 4)),
                         min_size=1, max_size=3))
def test_unlaunched_samples_are_shared_without_loss(case, launch_lists):
    functions, calls, samples, _kernels, counts, budget = case
    graph = CallGraph(functions, calls)
    launches = {f"ctx{i}": per for i, per in enumerate(launch_lists)}
    recs = reconstruct_unlaunched(graph, samples, launches, call_counts=counts, max_points=budget)
    assert list(recs) == list(launches)
    assert_conserved(samples, list(recs.values()))
    for ctx, rec in recs.items():
        assert_well_formed(graph, rec, list(launches[ctx]))


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 12).flatmap(lambda n: st.lists(st.lists(st.integers(0, n - 1), max_size=4),
                                                     min_size=n, max_size=n)))
def test_tarjan_matches_mutual_reachability(succ):
    n = len(succ)
    reach = np.eye(n, dtype=bool)
    for v in range(n):
        reach[v, succ[v]] = True
    for k in range(n):  # transitive closure (Warshall)
        reach |= reach[:, [k]] & reach[[k], :]
    comps = strongly_connected(succ)
    assert sorted(v for c in comps for v in c) == list(range(n))
    where = {v: i for i, c in enumerate(comps) for v in c}
    for a in range(n):
        for b in range(n):
            assert (where[a] == where[b]) == bool(reach[a, b] and reach[b, a])
    # reverse topological: an edge between components goes to an earlier one
    for v in range(n):
        for w in succ[v]:
            assert where[w] <= where[v]


def test_rows_sharing_a_pc_sum_the_same_in_any_order():
    # (0.1 + 0.2) + 0.3 != (0.3 + 0.2) + 0.1 in binary floating point: the order must be fixed.
    import itertools

    graph = CallGraph([DeviceFunction(0x100, "k")])
    results = set()
    for perm in itertools.permutations([0.1, 0.2, 0.3, 1e-17]):
        s = PcSamples(np.full(4, 0x104), np.array(perm).reshape(-1, 1))
        rec = reconstruct(graph, s, [0x100])
        results.add(rec.point_values.tobytes())
    assert len(results) == 1
