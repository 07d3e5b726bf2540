"""Reconstruction on small call graphs, against splits computed by hand.

Functions lie at 0x100, 0x200, ... (each extends to the next entry); call
sites are at entry + 0x10, 0x20, ... Every sample has two metrics (GINS and
a stall count) so each test also checks that all columns get the same factors.
Expected trees are written as {(path, pc): values}, the path being the steps
from the launch root.
"""

from __future__ import annotations

import numpy as np
import pytest

from hpcsa.core.errors import HpcsaError
from hpcsa.gpucct import (
    CallGraph,
    CallSite,
    DeviceFunction,
    PcSamples,
    StepKind,
    reconstruct,
    reconstruct_unlaunched,
    recursion_name,
)
from tests.gpucct.checks import by_path, check


def graph(names: dict[int, str], calls: list[tuple[int, int | None]]) -> CallGraph:
    return CallGraph([DeviceFunction(e, n) for e, n in names.items()], [CallSite(pc, t) for pc, t in calls])


def samples(points: dict[int, tuple[float, float]]) -> PcSamples:
    pcs = np.array(list(points), dtype=np.uint64)
    return PcSamples(pcs, np.array(list(points.values()), dtype=float).reshape(-1, 2), weight=0)


def run(g: CallGraph, s: PcSamples, kernels: list[int], **kw):
    rec = reconstruct(g, s, kernels, **kw)
    check(g, s, rec, kernels)
    return rec


def assert_tree(rec, expected: dict[tuple[str, int], tuple[float, float]]) -> None:
    got = by_path(rec)
    assert sorted(got) == sorted(expected), f"\n got: {sorted(got)}\nwant: {sorted(expected)}"
    for key, want in expected.items():
        np.testing.assert_allclose(got[key], want, rtol=1e-12, atol=1e-12, err_msg=str(key))


# -- the cases of the brief ---------------------------------------------------------------------------


def test_diamond_splits_the_shared_callee_by_its_call_sites():
    # K calls A (0x110) and B (0x120); A and B both call D (0x210, 0x310).
    g = graph({0x100: "K", 0x200: "A", 0x300: "B", 0x400: "D"},
              [(0x110, 0x200), (0x120, 0x300), (0x210, 0x400), (0x310, 0x400)])
    s = samples({0x100: (1, 0), 0x110: (3, 1), 0x120: (1, 0), 0x200: (2, 2), 0x210: (1, 0),
                 0x300: (4, 0), 0x310: (3, 3), 0x400: (8, 4)})
    rec = run(g, s, [0x100])
    # A and B have one caller each (factor 1); D: 1/4 through A, 3/4 through B.
    assert_tree(rec, {
        ("", 0x100): (1, 0), ("", 0x110): (3, 1), ("", 0x120): (1, 0),
        ("call@0x110", 0x200): (2, 2), ("call@0x110", 0x210): (1, 0),
        ("call@0x110/call@0x210", 0x400): (2, 1),
        ("call@0x120", 0x300): (4, 0), ("call@0x120", 0x310): (3, 3),
        ("call@0x120/call@0x310", 0x400): (6, 3),
    })
    factors = {"/".join(map(str, rec.path(i))): f.factor for i, f in enumerate(rec.frames)}
    assert factors == pytest.approx({"": 1, "call@0x110": 1, "call@0x110/call@0x210": 0.25, "call@0x120": 1,
                                     "call@0x120/call@0x310": 0.75})


def test_diamond_factors_multiply_along_the_path():
    # K -> A (two call sites, 1:3) -> D; D's share under each call of A is 1/4 and 3/4 of its own.
    g = graph({0x100: "K", 0x200: "A", 0x300: "D"}, [(0x110, 0x200), (0x120, 0x200), (0x210, 0x300)])
    s = samples({0x110: (1, 0), 0x120: (3, 0), 0x210: (2, 2), 0x300: (8, 4)})
    rec = run(g, s, [0x100])
    assert_tree(rec, {
        ("", 0x110): (1, 0), ("", 0x120): (3, 0),
        ("call@0x110", 0x210): (0.5, 0.5), ("call@0x110/call@0x210", 0x300): (2, 1),
        ("call@0x120", 0x210): (1.5, 1.5), ("call@0x120/call@0x210", 0x300): (6, 3),
    })


class TestFunctionCalledFromTwoKernels:
    NAMES = {0x100: "K1", 0x200: "K2", 0x300: "F"}
    CALLS = [(0x110, 0x300), (0x210, 0x300)]

    def test_only_the_launched_kernel_calls_it(self):
        g = graph(self.NAMES, self.CALLS)
        s = samples({0x110: (2, 0), 0x300: (6, 3)})
        assert_tree(run(g, s, [0x100]), {("", 0x110): (2, 0), ("call@0x110", 0x300): (6, 3)})

    def test_unsampled_calls_are_not_forced_onto_a_kernel_not_launched_here(self):
        g = graph(self.NAMES, self.CALLS)
        s = samples({0x300: (6, 3)})
        rec = run(g, s, [0x100])
        assert_tree(rec, {("call@0x110", 0x300): (6, 3)})
        assert rec.stats.forced_edges == 1

    def test_same_launch_context_launching_both_splits_by_call_weights(self):
        g = graph(self.NAMES, self.CALLS)
        s = samples({0x110: (1, 0), 0x210: (3, 0), 0x300: (8, 4)})
        assert_tree(run(g, s, [0x100, 0x200]), {
            ("", 0x110): (1, 0), ("", 0x210): (3, 0),
            ("call@0x110", 0x300): (2, 1), ("call@0x210", 0x300): (6, 3)})

    def test_measured_calls_of_a_kernel_not_launched_here_go_under_unknown(self):
        g = graph(self.NAMES, self.CALLS)
        s = samples({0x210: (2, 0), 0x300: (8, 4)})
        rec = run(g, s, [0x100])
        assert_tree(rec, {("unknown", 0x210): (2, 0), ("unknown/call@0x210", 0x300): (8, 4)})
        assert rec.stats.unknown_points == 2


def test_call_site_with_zero_samples_beside_sampled_siblings_gets_nothing():
    # Legacy hpcprof would force the middle call to 1 (3/5, 1/5, 1/5); the rule gives 3/4, 0, 1/4.
    g = graph({0x100: "K", 0x200: "F"}, [(0x110, 0x200), (0x120, 0x200), (0x130, 0x200)])
    s = samples({0x110: (3, 0), 0x130: (1, 1), 0x200: (8, 8)})
    rec = run(g, s, [0x100])
    assert_tree(rec, {("", 0x110): (3, 0), ("", 0x130): (1, 1),
                      ("call@0x110", 0x200): (6, 6), ("call@0x130", 0x200): (2, 2)})
    assert rec.stats.forced_edges == 0


def test_all_call_sites_zero_split_evenly():
    g = graph({0x100: "K", 0x200: "F"}, [(0x110, 0x200), (0x120, 0x200), (0x130, 0x200)])
    s = samples({0x100: (1, 0), 0x200: (9, 3)})
    rec = run(g, s, [0x100])
    assert_tree(rec, {("", 0x100): (1, 0), ("call@0x110", 0x200): (3, 1), ("call@0x120", 0x200): (3, 1),
                      ("call@0x130", 0x200): (3, 1)})
    assert rec.stats.forced_edges == 3


class TestUnsampledChainAboveSampledCode:
    # K -0x110-> A; A -0x210-> B -0x310-> C and A -0x220-> B2 -0x510-> C. Only C is sampled.
    NAMES = {0x100: "K", 0x200: "A", 0x300: "B", 0x400: "C", 0x500: "B2"}
    CALLS = [(0x110, 0x200), (0x210, 0x300), (0x220, 0x500), (0x310, 0x400), (0x510, 0x400)]

    def test_chains_become_visible_and_share_evenly(self):
        g = graph(self.NAMES, self.CALLS)
        rec = run(g, samples({0x400: (10, 5)}), [0x100])
        assert_tree(rec, {("call@0x110/call@0x210/call@0x310", 0x400): (5, 2.5),
                          ("call@0x110/call@0x220/call@0x510", 0x400): (5, 2.5)})
        assert rec.stats.forced_edges == 5  # C's two, B's, B2's, A's
        paths = {"/".join(map(str, rec.path(i))) for i in range(len(rec.frames))}
        assert "call@0x110/call@0x210" in paths and "call@0x110/call@0x220" in paths

    def test_rule_stops_where_a_call_has_weight(self):
        g = graph(self.NAMES, self.CALLS)
        rec = run(g, samples({0x310: (2, 0), 0x400: (10, 5)}), [0x100])
        # C goes all through the sampled call in B; B2 stays out; B and A get forced weights.
        assert_tree(rec, {("call@0x110/call@0x210", 0x310): (2, 0),
                          ("call@0x110/call@0x210/call@0x310", 0x400): (10, 5)})
        assert rec.stats.forced_edges == 2


def test_direct_recursion_is_one_frame_between_the_call_and_the_function():
    g = graph({0x100: "K", 0x200: "R"}, [(0x110, 0x200), (0x120, 0x200), (0x210, 0x200)])
    s = samples({0x110: (1, 0), 0x120: (3, 0), 0x200: (4, 4), 0x210: (8, 0)})
    rec = run(g, s, [0x100])
    # The self call is dropped from the split; R's samples follow the calls into it, 1:3.
    assert_tree(rec, {("", 0x110): (1, 0), ("", 0x120): (3, 0),
                      ("call@0x110/recursion@0x200", 0x200): (1, 1),
                      ("call@0x110/recursion@0x200", 0x210): (2, 0),
                      ("call@0x120/recursion@0x200", 0x200): (3, 3),
                      ("call@0x120/recursion@0x200", 0x210): (6, 0)})
    rec_frames = [f for f in rec.frames if f.step and f.step.kind == StepKind.RECURSION]
    assert [f.members for f in rec_frames] == [(0x200,), (0x200,)]
    assert rec.stats.recursion_frames == 2


def test_mutual_recursion_keeps_each_sample_in_its_function_with_the_incoming_factor():
    # K -0x110-> H; H -0x210-> F (weight 3), H -0x220-> G (weight 1); F <-> G (0x310, 0x410); G -0x420-> X.
    g = graph({0x100: "K", 0x200: "H", 0x300: "F", 0x400: "G", 0x500: "X"},
              [(0x110, 0x200), (0x210, 0x300), (0x220, 0x400), (0x310, 0x400), (0x410, 0x300),
               (0x420, 0x500)])
    s = samples({0x110: (1, 0), 0x210: (3, 0), 0x220: (1, 1), 0x300: (6, 2), 0x310: (2, 2), 0x400: (4, 0),
                 0x410: (2, 0), 0x420: (1, 1), 0x500: (8, 4)})
    rec = run(g, s, [0x100])
    q, r = 0.75, 0.25
    scc = {0x300: (6, 2), 0x310: (2, 2), 0x400: (4, 0), 0x410: (2, 0), 0x420: (1, 1)}
    expected = {("", 0x110): (1, 0), ("call@0x110", 0x210): (3, 0), ("call@0x110", 0x220): (1, 1)}
    for call, share in ((0x210, q), (0x220, r)):
        base = f"call@0x110/call@{call:#x}/recursion@0x300"
        expected.update({(base, pc): (v[0] * share, v[1] * share) for pc, v in scc.items()})
        expected[(base + "/call@0x420", 0x500)] = (8 * share, 4 * share)
    assert_tree(rec, expected)
    rf = [f for f in rec.frames if f.step and f.step.kind == StepKind.RECURSION]
    assert [f.members for f in rf] == [(0x300, 0x400)] * 2
    assert [rec.frames[f.parent].callee for f in rf] == [0x300, 0x400]  # entered through F, then G
    assert recursion_name(["F", "G"]) == "<recursion: F, G>"
    assert recursion_name(["a", "b", "c", "d", "e"]) == "<recursion: a, b, c +2>"


def test_indirect_call_callee_goes_under_unknown_with_its_known_calls():
    # K makes an indirect call (0x110) and calls G directly (0x120); F is reached only indirectly
    # and calls G (0x210). G is split by the measured weights 1 : 3 between the two calls.
    g = graph({0x100: "K", 0x200: "F", 0x300: "G"}, [(0x110, None), (0x120, 0x300), (0x210, 0x300)])
    s = samples({0x110: (4, 0), 0x120: (1, 0), 0x200: (2, 2), 0x210: (3, 0), 0x300: (8, 4)})
    rec = run(g, s, [0x100])
    assert_tree(rec, {("", 0x110): (4, 0), ("", 0x120): (1, 0), ("call@0x120", 0x300): (2, 1),
                      ("unknown", 0x200): (2, 2), ("unknown", 0x210): (3, 0),
                      ("unknown/call@0x210", 0x300): (6, 3)})


def test_unresolved_call_target_is_an_indirect_call():
    g = graph({0x100: "K", 0x200: "F"}, [(0x110, 0x999)])
    assert g.unresolved_calls == (0x110,)
    rec = run(g, samples({0x110: (1, 0), 0x200: (5, 5)}), [0x100])
    assert_tree(rec, {("", 0x110): (1, 0), ("unknown", 0x200): (5, 5)})
    assert rec.stats.unresolved_calls == 1


def test_empty_graph_puts_every_sample_under_unknown():
    g = CallGraph([])
    s = samples({0x10: (1, 2), 0x20: (3, 4)})
    rec = run(g, s, [0x100])
    assert_tree(rec, {("unknown", 0x10): (1, 2), ("unknown", 0x20): (3, 4)})
    assert rec.stats.unknown_kernels == (0x100,) and rec.stats.unknown_points == 2


def test_no_samples_gives_a_bare_root():
    g = graph({0x100: "K", 0x200: "F"}, [(0x110, 0x200)])
    rec = run(g, samples({}), [0x100])
    assert len(rec.frames) == 1 and len(rec.point_pc) == 0
    assert rec.totals().tolist() == [0, 0]


def test_pcs_outside_every_function_and_no_launched_kernel():
    g = CallGraph([DeviceFunction(0x100, "K", ((0x100, 0x140),)), DeviceFunction(0x200, "F", ((0x200, 0x240),))],
                  [CallSite(0x110, 0x200)])
    s = samples({0x150: (1, 1), 0x110: (2, 0), 0x200: (3, 3)})
    # Nothing launched (no entry count): K's code is an unknown caller, its known call is still shown.
    rec = run(g, s, [])
    assert_tree(rec, {("unknown", 0x110): (2, 0), ("unknown", 0x150): (1, 1),
                      ("unknown/call@0x110", 0x200): (3, 3)})


def test_exact_call_counts_replace_sampled_weights():
    g = graph({0x100: "K", 0x200: "F"}, [(0x110, 0x200), (0x120, 0x200)])
    s = samples({0x110: (3, 0), 0x120: (1, 0), 0x200: (8, 4)})
    rec = run(g, s, [0x100], call_counts={0x110: 10, 0x120: 30})
    assert_tree(rec, {("", 0x110): (3, 0), ("", 0x120): (1, 0),
                      ("call@0x110", 0x200): (2, 1), ("call@0x120", 0x200): (6, 3)})
    # A call missing from the counts executed 0 times, however often it was sampled.
    rec = run(g, s, [0x100], call_counts={0x120: 5})
    assert_tree(rec, {("", 0x110): (3, 0), ("", 0x120): (1, 0), ("call@0x120", 0x200): (8, 4)})


def test_weights_from_the_designated_column_apply_to_all_columns():
    g = graph({0x100: "K", 0x200: "F"}, [(0x110, 0x200), (0x120, 0x200)])
    pcs = np.array([0x110, 0x120, 0x200], dtype=np.uint64)
    vals = np.array([[9, 1, 0], [9, 3, 0], [5, 8, 16]], dtype=float)  # column 1 is GINS here
    rec = reconstruct(g, PcSamples(pcs, vals, weight=1), [0x100])
    check(g, PcSamples(pcs, vals, weight=1), rec, [0x100])
    got = by_path(rec)
    assert got[("call@0x110", 0x200)] == pytest.approx((1.25, 2, 4))
    assert got[("call@0x120", 0x200)] == pytest.approx((3.75, 6, 12))


def test_rows_sharing_a_pc_are_summed():
    g = graph({0x100: "K"}, [])
    s = PcSamples(np.array([0x100, 0x104, 0x100]), np.array([[1, 2], [0, 0], [3, 4]], float))
    rec = run(g, s, [0x100])
    assert_tree(rec, {("", 0x100): (4, 6)})  # the all-zero row carries nothing and is not placed


# -- samples without a launch -------------------------------------------------------------------------


def test_samples_without_launch_are_shared_by_launch_counts():
    # K1 is launched 3 times from context A and once from B; K2 twice from B.
    g = graph({0x100: "K1", 0x200: "K2", 0x300: "F"}, [(0x110, 0x300)])
    s = samples({0x110: (4, 0), 0x300: (8, 4), 0x200: (6, 6), 0x10: (10, 0)})
    recs = reconstruct_unlaunched(g, s, {"A": {0x100: 3}, "B": {0x100: 1, 0x200: 2}})
    assert list(recs) == ["A", "B"]
    assert_tree(recs["A"], {("", 0x110): (3, 0), ("call@0x110", 0x300): (6, 3), ("unknown", 0x10): (5, 0)})
    assert_tree(recs["B"], {("", 0x110): (1, 0), ("call@0x110", 0x300): (2, 1), ("", 0x200): (6, 6),
                            ("unknown", 0x10): (5, 0)})
    from tests.gpucct.checks import assert_conserved, assert_well_formed
    assert_conserved(s, list(recs.values()))
    assert_well_formed(g, recs["A"], [0x100])
    assert_well_formed(g, recs["B"], [0x100, 0x200])
    assert recs["A"].frames[1].factor == pytest.approx(0.75)


def test_samples_without_launch_and_zero_counts_split_evenly():
    g = graph({0x100: "K"}, [])
    s = samples({0x100: (6, 3)})
    recs = reconstruct_unlaunched(g, s, {"A": {0x100: 0}, "B": {0x100: 0}, "C": {}})
    assert by_path(recs["A"]) == by_path(recs["B"]) == {("", 0x100): (3, 1.5)}
    assert len(recs["C"].point_pc) == 0 and len(recs["C"].frames) == 1


# -- point budget -------------------------------------------------------------------------------------


def test_point_budget_folds_the_lightest_paths_into_one_flat_frame_per_kernel():
    # K calls A at 0x110 (weight 3) and 0x120 (weight 1); A -0x210-> B -0x310-> C.
    g = graph({0x100: "K", 0x200: "A", 0x300: "B", 0x400: "C"},
              [(0x110, 0x200), (0x120, 0x200), (0x210, 0x300), (0x310, 0x400)])
    s = samples({0x110: (3, 0), 0x120: (1, 0), 0x200: (4, 4), 0x210: (2, 0), 0x300: (8, 8), 0x310: (1, 1),
                 0x400: (4, 0)})
    full = run(g, s, [0x100])
    assert len(full.frames) == 7 and full.stats.truncated_frames == 0
    rec = run(g, s, [0x100], max_points=8)
    # Best-first, counting placed points plus one per frame: K's 2 points, call 0x110 with A's 2 (5),
    # 0x110/0x210 with B's 2 (8). 0x110/0x210/0x310 (3/4) would pass 8: cut. 0x120 (1/4) is a call of
    # the kernel itself, always made; below it 0x120/0x210 (1/4) is cut. The cut paths lead to
    # B (1/4) and C (3/4 + 1/4 through B), shown flat under one frame for kernel K.
    assert_tree(rec, {
        ("", 0x110): (3, 0), ("", 0x120): (1, 0),
        ("call@0x110", 0x200): (3, 3), ("call@0x110", 0x210): (1.5, 0),
        ("call@0x110/call@0x210", 0x300): (6, 6), ("call@0x110/call@0x210", 0x310): (0.75, 0.75),
        ("call@0x120", 0x200): (1, 1), ("call@0x120", 0x210): (0.5, 0),
        ("truncated@0x100", 0x300): (2, 2), ("truncated@0x100", 0x310): (0.25, 0.25),
        ("truncated@0x100", 0x400): (4, 0),
    })
    (cut,) = [f for f in rec.frames if f.step and f.step.kind == StepKind.TRUNCATED]
    assert cut.parent == 0 and cut.factor == pytest.approx(1.0) and cut.origin == 0x100
    assert rec.stats.truncated_frames == 1


def test_point_budget_in_the_unknown_part_folds_under_unknown():
    # Nothing launched: K is an unknown caller; its calls A (0x110, 0x120) -> B are cut beyond the budget.
    g = graph({0x100: "K", 0x200: "A", 0x300: "B"}, [(0x110, 0x200), (0x120, 0x200), (0x210, 0x300)])
    s = samples({0x110: (1, 0), 0x120: (1, 0), 0x200: (2, 2), 0x210: (1, 1), 0x300: (4, 4)})
    rec = run(g, s, [], max_points=2)
    # UNKNOWN holds K (2 points, the budget); the calls 0x110 and 0x120 (1/2 each) are cut.
    assert_tree(rec, {("unknown", 0x110): (1, 0), ("unknown", 0x120): (1, 0),
                      ("unknown/truncated", 0x200): (2, 2), ("unknown/truncated", 0x210): (1, 1),
                      ("unknown/truncated", 0x300): (4, 4)})


# -- bad input ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("functions, calls, problem", [
    ([DeviceFunction(0x100), DeviceFunction(0x100)], [], "two device functions have the entry address 0x100"),
    ([DeviceFunction(0x100, "f", ((0x100, 0x180),)), DeviceFunction(0x140, "g", ((0x140, 0x160),))], [],
     "overlap"),
    ([DeviceFunction(0x100, "f", ((0x180, 0x100),))], [], "empty or invalid range"),
    ([DeviceFunction(0x100, "f", ((0x100, 0x110),))], [CallSite(0x200, 0x100)], "lies in no function"),
    ([DeviceFunction(0x100), DeviceFunction(0x200)], [CallSite(0x110, 0x200, caller=0x200)], "outside its caller"),
    ([DeviceFunction(0x100)], [CallSite(0x110, 0x100, caller=0x300)], "no function entry"),
    ([DeviceFunction(0x100)], [CallSite(0x110, 0x100), CallSite(0x110, None)], "two different call sites"),
])
def test_inconsistent_call_graph_is_one_clear_error(functions, calls, problem):
    with pytest.raises(HpcsaError, match=problem) as info:
        CallGraph(functions, calls, source="x.hpcstruct")
    assert str(info.value).startswith("x.hpcstruct: call graph: ")


def test_bad_samples_and_weights_are_clear_errors():
    with pytest.raises(HpcsaError, match="NaN"):
        PcSamples(np.array([1]), np.array([[np.nan]]))
    with pytest.raises(HpcsaError, match="shape"):
        PcSamples(np.array([1, 2]), np.zeros((3, 1)))
    with pytest.raises(HpcsaError, match="weight column 2"):
        PcSamples(np.array([1]), np.zeros((1, 2)), weight=2)
    g = graph({0x100: "K", 0x200: "F"}, [(0x110, 0x200)])
    with pytest.raises(HpcsaError, match="the call at 0x110 has weight -1"):
        reconstruct(g, samples({0x110: (-1, 0), 0x200: (1, 1)}), [0x100])
    with pytest.raises(HpcsaError, match="launch count"):
        reconstruct_unlaunched(g, samples({0x200: (1, 1)}), {"A": {0x100: -2}})
    with pytest.raises(HpcsaError, match="at least one launch context"):
        reconstruct_unlaunched(g, samples({0x200: (1, 1)}), {})
