"""``hpcsa blame`` on planted databases: hand-computed answers, conservation, windowing, the CLI contract."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from hpcsa.views.blame.attribute import (
    BLAME_M,
    CLASS_METRICS,
    GPU_IDLE_M,
    IDLENESS_M,
    OVERHEAD_M,
    WAIT_M,
    WORK_M,
    blame,
)
from hpcsa.views.blame.rules import load_rules
from hpcsa.views.experiment import open_experiment
from tests.conftest import assert_one_line_error, run_cli
from tests.views.blame.blameplant import Plant

CPU_M, SYNC_M, LAUNCH_M = CLASS_METRICS


def ns(x: float) -> float:
    """Nanoseconds to seconds as hpcsa blame rounds them (one division)."""
    return x / 1e9


def point(exp, profile: int, metric: str) -> dict[int, float]:
    """ctx id -> point value of one metric in one profile (the charges as written)."""
    mid = exp.meta.prop_metric_id(metric, "point")
    pv = exp.db.profiles.profile(profile)
    sel = pv.metric_ids == mid
    return dict(zip(pv.value_ctx_ids()[sel].tolist(), pv.values[sel].tolist(), strict=True))


def run_blame(tmp_path: Path, cpu, gpu=None, **kw):
    plant = Plant()
    src = tmp_path / "src.d"
    keys = plant.write(src, cpu, gpu or {})
    out = tmp_path / "out.d"
    res = blame(open_experiment(src), out, load_rules(), **kw)
    exp = open_experiment(out)
    prof = {v[1]: k for k, v in keys.items()}
    return plant, res, exp, prof


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=4e-16, abs_tol=0.0)


def test_barrier_waits_are_charged_to_the_working_threads(tmp_path: Path) -> None:
    # three threads reach a barrier at 10, 6 and 4 ns; all leave it at 12
    cpu = {(None, 0): [(0, "compute"), (10, "barrier"), (12, "compute")],
           (None, 1): [(0, "compute"), (6, "barrier"), (12, "compute")],
           (None, 2): [(0, "compute"), (4, "barrier"), (12, "compute")]}
    plant, res, exp, prof = run_blame(tmp_path, cpu)
    c, b = plant.ctx["compute"], plant.ctx["barrier"]
    t0, t1, t2 = prof[(None, 0)], prof[(None, 1)], prof[(None, 2)]
    # by hand: [4,6) W=2 I=1 -> t0, t1 +1 each; [6,10) W=1 I=2 -> t0 +8; [10,12) nobody works: each waiting
    # thread's barrier context carries 2*3/3 = 2
    assert point(exp, t0, WORK_M) == {c: ns(10)}
    assert point(exp, t1, WORK_M) == {c: ns(6)}
    assert point(exp, t2, WORK_M) == {c: ns(4)}
    assert point(exp, t0, IDLENESS_M) == {c: ns(9), b: ns(2)}
    assert point(exp, t1, IDLENESS_M) == {c: ns(1), b: ns(2)}
    assert point(exp, t2, IDLENESS_M) == {b: ns(2)}
    assert point(exp, t2, WAIT_M) == {b: ns(8)}
    (p,) = res.processes
    assert close(p.work_s, ns(20)) and close(p.idleness_s, ns(16))
    assert p.efficiency == pytest.approx(20 / 36, rel=1e-15)
    # the scopes: main's inclusive idleness (execution) sums its calls; exclusive at compute = point
    mid = exp.meta.prop_metric_id(IDLENESS_M, "execution")
    assert exp.db.profiles.profile(t0).get(plant.ctx["main"])[mid] == pytest.approx(ns(11), rel=1e-15)
    assert exp.db.profiles.profile(t0).get(0)[mid] == pytest.approx(ns(11), rel=1e-15)
    # the summary and the Python API see it like any metric
    assert exp.total(IDLENESS_M) == pytest.approx(ns(16), rel=1e-15)
    assert exp.total(WORK_M) == pytest.approx(ns(20), rel=1e-15)


def test_runtime_code_is_overhead_and_part_of_the_work(tmp_path: Path) -> None:
    cpu = {(None, 0): [(0, "omp_internal"), (3, "compute"), (10, "compute")],
           (None, 1): [(2, "compute"), (10, "compute")]}
    plant, res, exp, prof = run_blame(tmp_path, cpu)
    t0, t1 = prof[(None, 0)], prof[(None, 1)]
    assert point(exp, t0, OVERHEAD_M) == {plant.ctx["omp_internal"]: ns(3)}
    assert point(exp, t0, WORK_M) == {plant.ctx["omp_internal"]: ns(3), plant.ctx["compute"]: ns(7)}
    # thread 1 is absent before 2 ns: idle, charged to thread 0's runtime context (2 * 1 / 1)
    assert point(exp, t0, IDLENESS_M) == {plant.ctx["omp_internal"]: ns(2)}
    assert point(exp, t1, IDLENESS_M) == {}


def test_gpu_fed_by_a_thread_that_sleeps_between_launches(tmp_path: Path) -> None:
    cpu = {(None, 0): [(0, "launch"), (1, "sleep"), (5, "launch"), (6, "sleep"), (10, "launch"), (11, "compute")]}
    gpu = {(None, 1, 0): [(1, "kernel"), (3, "none"), (6, "kernel"), (8, "none"), (11, "kernel"), (13, "none")]}
    plant, res, exp, prof = run_blame(tmp_path, cpu, gpu)
    (g,) = res.gpus
    assert (g.span_ns, g.busy_ns, g.idle_ns) == (12, 6, 6)
    assert g.run_ns == 13 and g.busy_share_of_run == 6 / 13  # the CPU's first record at 0, the GPU's last at 13
    t, s = prof[(None, 0)], prof[(None, 1, 0)]
    # idle [3,6): sleeping 3..5 (other CPU code), launching 5..6; idle [8,11): sleeping 8..10, launching 10..11
    assert point(exp, t, CPU_M) == {plant.ctx["sleep"]: ns(4)}
    assert point(exp, t, LAUNCH_M) == {plant.ctx["launch"]: ns(2)}
    assert point(exp, t, SYNC_M) == {}
    assert point(exp, t, BLAME_M) == {plant.ctx["sleep"]: ns(4), plant.ctx["launch"]: ns(2)}
    assert point(exp, s, GPU_IDLE_M) == {0: ns(6)}
    assert g.blame_s == {"cpu": ns(4), "launch": ns(2), "sync": 0.0}
    assert exp.total(GPU_IDLE_M) == pytest.approx(ns(6), rel=1e-15)


def test_gpu_idle_over_the_whole_run(tmp_path: Path) -> None:
    cpu = {(None, 0): [(0, "launch"), (1, "sleep"), (5, "launch"), (6, "sleep"), (10, "launch"), (11, "compute")]}
    gpu = {(None, 1, 0): [(1, "kernel"), (3, "none"), (6, "kernel"), (8, "none"), (11, "kernel"), (13, "none")]}
    plant, res, exp, prof = run_blame(tmp_path, cpu, gpu, over_run=True)
    (g,) = res.gpus
    # the run spans [0, 13): [0, 1) is idle too, while the thread launches the first kernel
    assert (g.span_ns, g.busy_ns, g.idle_ns) == (13, 6, 7)
    assert point(exp, prof[(None, 0)], LAUNCH_M) == {plant.ctx["launch"]: ns(3)}
    # [11, 13): the GPU runs past the CPU's last record: nothing idle there to blame


def test_no_thread_present_is_unattributed_idleness(tmp_path: Path) -> None:
    cpu = {(None, 0): [(0, "compute"), (5, "compute")], (None, 1): [(10, "compute"), (15, "compute")]}
    plant, res, exp, prof = run_blame(tmp_path, cpu)
    a, b = prof[(None, 0)], prof[(None, 1)]
    # [0,5): a works for both; [5,10): nobody: 2 x 5 at the root of the first thread; [10,15): b works for both
    assert point(exp, a, IDLENESS_M) == {plant.ctx["compute"]: ns(5), 0: ns(10)}
    assert point(exp, b, IDLENESS_M) == {plant.ctx["compute"]: ns(5)}
    (p,) = res.processes
    assert (p.span_ns, p.unattributed_idleness_s) == (15, ns(10))
    assert p.efficiency == pytest.approx(10 / 30, rel=1e-15)


def test_thread_that_synchronises_after_each_kernel(tmp_path: Path) -> None:
    cpu = {(None, 0): [(0, "launch"), (1, "sync"), (4, "launch"), (5, "sync"), (8, "compute"), (9, "compute")]}
    gpu = {(None, 1, 0): [(1, "kernel"), (3, "none"), (5, "kernel"), (7, "none")]}
    plant, res, exp, prof = run_blame(tmp_path, cpu, gpu)
    (g,) = res.gpus
    assert (g.span_ns, g.busy_ns, g.idle_ns) == (6, 4, 2)
    t = prof[(None, 0)]
    assert point(exp, t, SYNC_M) == {plant.ctx["sync"]: ns(1)}  # [3,4): the CPU waits for a finished kernel
    assert point(exp, t, LAUNCH_M) == {plant.ctx["launch"]: ns(1)}  # [4,5)
    assert point(exp, t, WAIT_M) == {plant.ctx["sync"]: ns(6)}
    assert point(exp, t, WORK_M) == {plant.ctx["launch"]: ns(2), plant.ctx["compute"]: ns(1)}
    (p,) = res.processes
    assert p.efficiency == pytest.approx(3 / 9, rel=1e-15)


def test_mpi_style_wait(tmp_path: Path) -> None:
    # rank 0: two threads, one waits in MPI_Wait from 2 to 8; rank 1: one thread, waits from 1 to 8
    cpu = {(0, 0): [(0, "compute"), (8, "compute")], (0, 1): [(0, "compute"), (2, "mpi_wait"), (8, "compute")],
           (1, 0): [(0, "compute"), (1, "mpi_wait"), (8, "compute")]}
    plant, res, exp, prof = run_blame(tmp_path, cpu)
    assert point(exp, prof[(0, 0)], IDLENESS_M) == {plant.ctx["compute"]: ns(6)}
    assert point(exp, prof[(0, 1)], WAIT_M) == {plant.ctx["mpi_wait"]: ns(6)}
    assert point(exp, prof[(1, 0)], IDLENESS_M) == {plant.ctx["mpi_wait"]: ns(7)}
    eff = {p.process: p.efficiency for p in res.processes}
    assert eff == {"node 0 rank 0": pytest.approx(10 / 16, rel=1e-15), "node 0 rank 1": pytest.approx(1 / 8, rel=1e-15)}


def _random_plant(rng: np.random.Generator, n_proc: int, n_threads: int, n_streams: int, n: int):
    names = ["compute", "barrier", "omp_internal", "launch", "sync", "sleep", "mpi_wait", "memcpy"]
    cpu, gpu = {}, {}
    for r in range(n_proc):
        for t in range(n_threads):
            ts = np.cumsum(rng.integers(1, 10**7, n)) + rng.integers(0, 10**8)
            cpu[(r, t)] = [(int(x), str(rng.choice(names))) for x in ts]
        for s in range(n_streams):
            ts = np.cumsum(rng.integers(1, 10**7, 2 * n)) + rng.integers(0, 10**8)
            gpu[(r, 1 + s % 2, s)] = [(int(x), "kernel" if k % 2 == 0 else "none") for k, x in enumerate(ts)]
    return cpu, gpu


def _ulps(a: float, b: float) -> float:
    return abs(a - b) / math.ulp(b)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_conservation(tmp_path: Path, seed: int) -> None:
    rng = np.random.default_rng(seed)
    cpu, gpu = _random_plant(rng, n_proc=2, n_threads=5, n_streams=3, n=400)
    plant, res, exp, prof = run_blame(tmp_path, cpu, gpu, chunk=500)
    by_proc = {p.process: p for p in res.processes}
    for rank in (0, 1):
        lines = [cpu[(rank, t)] for t in range(5)]
        span = max(ln[-1][0] for ln in lines) - min(ln[0][0] for ln in lines)
        charged = math.fsum(v for t in range(5) for m in (WORK_M, IDLENESS_M)
                            for v in point(exp, prof[(rank, t)], m).values())
        assert _ulps(charged, ns(5 * span)) <= 16
        assert by_proc[f"node 0 rank {rank}"].span_ns == span
    for g in res.gpus:
        assert g.busy_ns + g.idle_ns == g.span_ns
        assert math.fsum(g.blame_s.values()) + g.unattributed_s == pytest.approx(ns(g.idle_ns), rel=1e-14)
    blamed = math.fsum(v for p in prof.values() for v in point(exp, p, BLAME_M).values())
    assert _ulps(blamed, ns(sum(g.idle_ns for g in res.gpus))) <= 16
    classes = math.fsum(v for p in prof.values() for m in CLASS_METRICS for v in point(exp, p, m).values())
    assert _ulps(classes, blamed) <= 16
    # GPU idle per stream profile root = the GPU's idle time
    total_idle = math.fsum(v for p in prof.values() for v in point(exp, p, GPU_IDLE_M).values())
    assert _ulps(total_idle, ns(sum(g.idle_ns for g in res.gpus))) <= 16


def test_windows_do_not_change_the_output(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    cpu, gpu = _random_plant(rng, n_proc=1, n_threads=4, n_streams=2, n=300)
    plant = Plant()
    src = tmp_path / "src.d"
    plant.write(src, cpu, gpu)
    outs = []
    for chunk in (1 << 20, 1000, 37, 3):  # 3: windows split further for their pieces (limit 4 x chunk)
        out = tmp_path / f"out-{chunk}.d"
        blame(open_experiment(src), out, load_rules(), chunk=chunk)
        outs.append({f: (out / f).read_bytes() for f in ("meta.db", "profile.db", "cct.db", "trace.db")})
    assert outs[0] == outs[1] == outs[2]
    assert outs[0]["trace.db"] == (src / "trace.db").read_bytes()


def test_cli_report_json_view_and_rules(tmp_path: Path) -> None:
    plant = Plant()
    src = tmp_path / "src.d"
    plant.write(src, {(None, 0): [(0, "compute"), (10, "barrier"), (12, "compute")],
                      (None, 1): [(0, "compute"), (4, "barrier"), (12, "compute")]})
    proc = run_cli("blame", str(src), "-o", str(tmp_path / "b.d"), "--format", "json", check=True)
    doc = json.loads(proc.stdout)
    assert doc["processes"][0]["parallel_efficiency"] == pytest.approx(14 / 24, rel=1e-12)
    assert doc["top"][IDLENESS_M][0]["path"][-1] == "compute"
    assert "hpcsa blame:" in proc.stderr
    view = run_cli("view", str(tmp_path / "b.d"), "-m", IDLENESS_M, "-m", WAIT_M, check=True)
    assert "GOMP_barrier" in view.stdout and "compute" in view.stdout
    text = run_cli("blame", str(src), check=True).stdout
    assert "Parallel efficiency" in text and "58.3%" in text
    # --show-rules prints YAML that --rules accepts; a user rule turns compute into waiting
    shown = run_cli("blame", "--show-rules", check=True).stdout
    assert "^cudaDeviceSynchronize" not in shown and "cuda(Device|Stream|Event|Thread)Synchronize" in shown
    rules = tmp_path / "rules.yaml"
    rules.write_text("wait:\n  - '^compute$'\n")
    doc = json.loads(run_cli("blame", str(src), "--rules", str(rules), "--format", "json", check=True).stdout)
    assert doc["processes"][0]["work_s"] == 0.0
    assert "- ^compute$" in run_cli("blame", "--show-rules", "--rules", str(rules), check=True).stdout


def test_bad_input(tmp_path: Path) -> None:
    assert_one_line_error(run_cli("blame", str(tmp_path / "missing.d")), "missing.d")
    bad = tmp_path / "bad.yaml"
    bad.write_text("wait: [ '(' ]\n")
    assert_one_line_error(run_cli("blame", "--show-rules", "--rules", str(bad)), "bad.yaml")
    bad.write_text("waits: []\n")
    assert_one_line_error(run_cli("blame", "--show-rules", "--rules", str(bad)), "bad.yaml")
    plant = Plant()
    src = tmp_path / "src.d"
    plant.write(src, {(None, 0): [(0, "compute"), (5, "compute")]})
    run_cli("blame", str(src), "-o", str(tmp_path / "b.d"), check=True)
    again = run_cli("blame", str(tmp_path / "b.d"), "-o", str(tmp_path / "c.d"))
    assert_one_line_error(again, "b.d")
    assert not (tmp_path / "c.d").exists()
    # a trace line out of time order: swap the first two records of the line in place
    from hpcsa.formats.db.tracedb import TraceDB
    tdb = TraceDB(src / "trace.db")
    at = int(tdb.p_start[0])
    del tdb
    raw = bytearray((src / "trace.db").read_bytes())
    raw[at:at + 24] = raw[at + 12:at + 24] + raw[at:at + 12]
    (src / "trace.db").write_bytes(bytes(raw))
    assert_one_line_error(run_cli("blame", str(src), "-o", str(tmp_path / "e.d")), "trace.db")
    assert not (tmp_path / "e.d").exists()
    (src / "trace.db").unlink()
    assert_one_line_error(run_cli("blame", str(src), "-o", str(tmp_path / "d.d")), "src.d")
