"""Reconstruction on HPCToolkit's real PC-sampling measurements and their real structure files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hpcsa.formats.hpcstruct.reader import read_hpcstruct
from hpcsa.formats.measurement.hpcrun import read_hpcrun
from hpcsa.gpucct import CallGraph, StepKind, reconstruct
from hpcsa.gpucct.fromstruct import call_graph_from_module
from hpcsa.gpucct.launches import launch_contexts
from tests.conftest import assert_one_line_error, run_cli
from tests.gpucct.checks import check

RECURSION = "recursion-cuda-nvidiapc-t.m"
GPUBIN = "1936b57e9d2276c53a3ceff6aaa366f0"
# Entries in the gpubin's structure file (relocated offsets).
KERNMAIN, TOP1, TOP2, HEART, COMMON1, COMMON2, DIV = 0x2A80, 0x2AD0, 0x2BF0, 0x2FC0, 0x31E0, 0x3300, 0x3510


def main_profile(meas: Path) -> Path:
    return next(p for p in sorted(meas.glob("*.hpcrun")) if "-000-" in p.name.split("000000")[1][:5])


@pytest.fixture(scope="module")
def recursion(hpctoolkit_data: Path):
    meas = hpctoolkit_data / "meas" / RECURSION
    prof = read_hpcrun(main_profile(meas))
    graph = call_graph_from_module(read_hpcstruct(meas / "structs" / f"{GPUBIN}.gpubin-gpucfg-yes.hpcstruct")
                                   .modules[0])
    return prof, graph


def test_call_graph_of_the_real_structure_file(recursion):
    _, g = recursion
    assert [f.entry for f in g.functions] == [KERNMAIN, TOP1, TOP2, HEART, COMMON1, COMMON2, DIV]
    edges = {(int(pc), int(g.functions[int(c)].entry)) for pc, c in zip(g.call_pc, g.call_callee, strict=True)}
    assert edges == {(0x2AB0, HEART), (0x2B90, COMMON1), (0x2E50, DIV), (0x2F00, COMMON1), (0x3150, TOP1),
                     (0x31B0, TOP2), (0x32A0, COMMON2), (0x3430, TOP1), (0x33E0, TOP2)}
    recursive = [g.member_entries(c) for c in range(g.n_components) if g.comp_recursive[c]]
    assert recursive == [(TOP1, TOP2, COMMON1, COMMON2)]


def test_launch_context_of_the_real_measurement(recursion):
    prof, _ = recursion
    (ctx,) = launch_contexts(prof)
    lm = next(lm.id for lm in prof.loadmap if lm.path.endswith(f"{GPUBIN}.gpubin"))
    assert ctx.kernels == {lm: {KERNMAIN: 100.0}}  # GKER:COUNT on the kernel node
    assert len(ctx.samples[lm].pcs) == 161         # the reference report counts 161 sample nodes
    names = [m.name for m in prof.metrics]
    columns = [names[m] for m in ctx.metrics]  # 20 of the file's 93 metrics have values under the kernel
    assert ctx.samples[lm].n_metrics == len(columns) == 20
    assert columns[ctx.samples[lm].weight] == "GINS" and "GKER:COUNT" in columns


def test_reconstruction_of_the_real_recursion(recursion):
    prof, g = recursion
    (ctx,) = launch_contexts(prof)
    (lm,) = ctx.samples
    s = ctx.samples[lm]
    rec = reconstruct(g, s, ctx.kernels[lm])
    check(g, s, rec, [KERNMAIN])
    assert rec.stats.unknown_points == 0

    def gins_at(pc: int) -> float:
        return float(s.values[s.pcs == pc, s.weight].sum())

    w44, w45 = gins_at(0x3150), gins_at(0x31B0)
    assert w44 > 0 and w45 > 0
    by_path = {tuple(rec.path(i)): f for i, f in enumerate(rec.frames)}
    call = StepKind.CALL
    heart = ((call, 0x2AB0),)
    assert by_path[heart].callee == HEART and by_path[heart].factor == 1
    for site, w in ((0x3150, w44), (0x31B0, w45)):
        into = heart + ((call, site),)
        assert by_path[into].factor == pytest.approx(w / (w44 + w45), rel=1e-12)
        scc = into + ((StepKind.RECURSION, TOP1),)
        assert by_path[scc].members == (TOP1, TOP2, COMMON1, COMMON2)
        # The division helper is called from top2, inside the component: HPCToolkit gives it the same
        # share (w44 : w45), without the recursion frame.
        div = scc + ((call, 0x2E50),)
        assert by_path[div].callee == DIV
        div_rows = rec.point_frame == list(by_path).index(div)
        np.testing.assert_allclose(rec.point_values[div_rows].sum(axis=0),
                                   s.values[(s.pcs >= DIV)].sum(axis=0) * w / (w44 + w45), rtol=1e-12)
    assert len(rec.frames) == 8  # root, heart, 2 x (call, recursion, call div)


def test_without_structure_every_sample_is_under_the_unknown_caller(recursion):
    prof, _ = recursion
    (ctx,) = launch_contexts(prof)
    (lm,) = ctx.samples
    s = ctx.samples[lm]
    rec = reconstruct(CallGraph([]), s, ctx.kernels[lm])
    check(CallGraph([]), s, rec, [])
    assert [f.step for f in rec.frames[1:]] == [(StepKind.UNKNOWN, 0)]
    assert rec.stats.unknown_points == 161


def test_loops_measurement_single_kernel(hpctoolkit_data: Path):
    meas = hpctoolkit_data / "meas" / "loops-cuda-nvidiapc-t.m"
    prof = read_hpcrun(main_profile(meas))
    (ctx,) = launch_contexts(prof)
    (lm,) = ctx.samples
    (struct,) = (meas / "structs").glob("*.gpubin-gpucfg-yes.hpcstruct")
    g = call_graph_from_module(read_hpcstruct(struct).modules[0])
    rec = reconstruct(g, ctx.samples[lm], ctx.kernels[lm])
    check(g, ctx.samples[lm], rec, list(ctx.kernels[lm]))
    assert len(rec.frames) == 1 and len(rec.point_pc) == 131  # one kernel, no calls: all at the root


def test_every_real_gpu_structure_file_gives_a_call_graph(hpctoolkit_data: Path):
    files = sorted((hpctoolkit_data / "struct").glob("*sm_*gpucfg*.hpcstruct"))
    files += sorted((hpctoolkit_data / "meas").glob("*/structs/*.gpubin*.hpcstruct"))
    assert len(files) >= 10
    for f in files:
        for m in read_hpcstruct(f).modules:
            g = call_graph_from_module(m, str(f))
            assert g.n_functions > 0 and g.unresolved_calls == ()
            # every call instruction lies in a function's code, as the leaf map places it
            assert np.all(g.function_of(g.call_pc) == g.call_caller)


# -- the command --------------------------------------------------------------------------------------


def test_cli_shows_the_reconstructed_tree(hpctoolkit_data: Path):
    meas = hpctoolkit_data / "meas" / RECURSION
    proc = run_cli("gpucct", str(main_profile(meas)), check=True)
    out = proc.stdout
    assert "launches kernmain() x100" in out
    assert out.count("<recursion: ") == 2
    assert "call 0x3150 in" in out and "call 0x31b0 in" in out and "call 0x2e50 in" in out
    assert "<unknown caller>" not in out
    prof = read_hpcrun(main_profile(meas))
    (ctx,) = launch_contexts(prof)
    (lm,) = ctx.samples
    flat = ctx.samples[lm]
    s = ctx.all_samples(lm)  # the flat samples and the one hpcrun kept on the kernel node (kernmain's entry)
    assert s is not None and len(s.pcs) == len(flat.pcs) + 1 == 162
    assert "162 sample pcs placed (0 under <unknown caller>)" in proc.stderr
    explicit = run_cli("gpucct", str(main_profile(meas)), "-S",
                       str(meas / "structs" / f"{GPUBIN}.gpubin-gpucfg-yes.hpcstruct"), "--pcs", check=True)
    # One line per placed point: pcs of kernmain and heart once, pcs below heart's two calls twice.
    g = call_graph_from_module(read_hpcstruct(meas / "structs" / f"{GPUBIN}.gpubin-gpucfg-yes.hpcstruct")
                               .modules[0])
    entry = np.array([f.entry for f in g.functions])[g.function_of(s.pcs)]
    once = int(np.count_nonzero((entry == KERNMAIN) | (entry == HEART)))
    assert explicit.stdout.count(". 0x") == once + 2 * (162 - once)
    # GINS at the root frame (inclusive) is every GINS value the file holds: nothing dropped, nothing added.
    gins = [m.name for m in prof.metrics].index("GINS")
    in_file = prof.value_floats()[prof.values["metric"] == gins].sum()
    root_line = next(ln for ln in out.splitlines() if ln.rstrip().endswith("<gpu kernel>"))
    assert float(root_line.split()[0]) == pytest.approx(in_file, rel=1e-5)
    assert in_file > flat.values[:, flat.weight].sum()


def test_cli_without_structure_files(hpctoolkit_data: Path, tmp_path: Path):
    src = main_profile(hpctoolkit_data / "meas" / RECURSION)
    copy = tmp_path / src.name
    copy.write_bytes(src.read_bytes())  # no structs/ next to it
    proc = run_cli("gpucct", str(copy), check=True)
    assert "call graph: none found" in proc.stdout
    assert "162 sample pcs placed (162 under <unknown caller>)" in proc.stderr


def test_cli_bad_inputs_are_one_line_errors(hpctoolkit_data: Path, tmp_path: Path):
    garbage = tmp_path / "x.hpcrun"
    garbage.write_bytes(b"not a measurement")
    assert_one_line_error(run_cli("gpucct", str(garbage)), "x.hpcrun")
    meas = main_profile(hpctoolkit_data / "meas" / RECURSION)
    assert_one_line_error(run_cli("gpucct", str(meas), "-S", str(tmp_path / "none.hpcstruct")), "none.hpcstruct")
    bad = tmp_path / "bad.hpcstruct"
    bad.write_text("<?xml version='1.0'?><HPCToolkitStructure i='0' version='4.9' n=''><LM i='2' n='x' v='{}'>")
    assert_one_line_error(run_cli("gpucct", str(meas), "-S", str(bad)), "bad.hpcstruct")
    assert_one_line_error(run_cli("gpucct", str(meas), "-m", "NOPE"), "NOPE")
