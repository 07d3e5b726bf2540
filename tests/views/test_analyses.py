"""Load imbalance, scaling loss, density statistics and the Perfetto trace export, against hand-computed values."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hpcsa.formats.db.tracedb import elements
from hpcsa.views import open_experiment
from hpcsa.views.imbalance import distribution, imbalance_table
from hpcsa.views.perfetto import export_trace
from hpcsa.views.scaling import path_keys, scaling_loss
from hpcsa.views.stats import database_stats
from tests.conftest import SHARED_DATA, assert_one_line_error, run_cli
from tests.views.helpers import SCALING_P, SCALING_Q, SEED003, THREADS, v4_databases
from tests.views.synthetic import DatabaseBuilder, thread_tuple

CPU = "CPUTIME (sec)"


# -- load imbalance --------------------------------------------------------------------------------------


def test_imbalance_of_the_worker_loop() -> None:
    exp = open_experiment(THREADS)
    table = imbalance_table(exp, CPU)
    assert table.profiles.tolist() == [1, 2, 3, 4, 6, 7, 8, 9]  # the CPU threads (CPUTIME has no GPU data)
    loop = int(exp.find_rows("worker")[0]) + 1
    assert exp.scope_name(loop) == "loop at app.c:82"
    # the workers 1-3 of each rank run the loop; the two masters never do: compared where it is present
    values = np.array([3, 5, 4, 4, 6, 5], float)
    assert table.max[loop] == 6 and table.min[loop] == 3 and table.count[loop] == 6 and table.lacking(loop) == 2
    assert table.mean[loop] == pytest.approx(values.mean())
    assert table.std[loop] == pytest.approx(values.std())
    assert table.imbalance[loop] == pytest.approx(((values.max() - values)).sum())  # = 6 x (6 - 4.5) = 9
    dist = distribution(exp, loop, CPU)
    assert dist.values.tolist() == values.tolist() and (dist.compared, dist.lacking) == (8, 2)
    assert dist.stats["imbalance"] == pytest.approx(9.0) and dist.stats["lacking"] == 2
    counts, _ = dist.histogram(bins=6)
    assert counts.sum() == 6
    # ranking: contexts by the measure, the heaviest first; a balanced context is not listed
    ranked = table.ranked()
    assert (np.diff(table.imbalance[ranked]) <= 0).all() and loop in ranked
    # compute runs on the two masters only, 6 s each: a thread role, not imbalance (was 8 x (6 - 12/8) = 36)
    compute = exp.find_rows("compute")[0]
    assert table.count[compute] == 2 and table.imbalance[compute] == 0 and compute not in ranked
    gpu = imbalance_table(exp, "GPUOP (sec)")
    assert gpu.profiles.tolist() == [5, 10]  # GPUOP has data on the streams only
    saxpy = exp.find_rows("saxpy")[0]
    assert gpu.imbalance[saxpy] == pytest.approx(2 * (3.5 - 3.0))


def test_imbalance_plot_and_cli(tmp_path: Path) -> None:
    proc = run_cli("imbalance", str(THREADS), "--context", "worker", "--plot", str(tmp_path / "w.png"),
                   "--format", "json", check=True)
    doc = json.loads(proc.stdout)
    assert doc["context"]["label"] == "worker" and doc["context"]["max"] == 6.5
    assert (tmp_path / "w.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert_one_line_error(run_cli("imbalance", str(THREADS), "--context", "nothing"), "nothing")


# -- scaling loss --------------------------------------------------------------------------------------


def _by_label(res) -> dict[str, int]:  # type: ignore[no-untyped-def]
    return {res.label(k): k for k in range(len(res.loss))}


def test_weak_scaling_loss_is_in_the_allreduce() -> None:
    res = scaling_loss(open_experiment(SCALING_P), open_experiment(SCALING_Q), "REALTIME")
    assert (res.p, res.q) == (2, 4)
    k = _by_label(res)
    allreduce, spmv = k["main / MPI_Allreduce"], k["main / solve / loop at spmd.c:12 / spmd.c:13"]
    assert (res.cost_p[allreduce], res.cost_q[allreduce], res.loss[allreduce]) == (2, 5, 3)
    assert res.loss[spmv] == 0 and res.loss_exclusive[allreduce] == 3
    assert res.total_q == 15 and res.loss_percent[allreduce] == pytest.approx(20.0)
    ranked = [res.label(i) for i in res.ranked()]
    assert "main / MPI_Allreduce" in ranked and "main / solve" not in ranked


def test_strong_scaling_loss() -> None:
    res = scaling_loss(open_experiment(SCALING_P), open_experiment(SCALING_Q), "REALTIME", mode="strong")
    k = _by_label(res)
    # expected per rank at q = cost at p x 2/4
    assert res.loss[k["main / solve"]] == 5 and res.loss[k["main / MPI_Allreduce"]] == 4
    assert res.loss[k["main"]] == 9 and res.loss_percent[k["main"]] == pytest.approx(60.0)
    assert [res.label(i) for i in res.ranked(3)] == ["Experiment Aggregate Metrics", "main", "main thread"]


def test_paths_match_across_databases_not_ids() -> None:
    a, b = open_experiment(SCALING_P), open_experiment(SCALING_Q)
    assert np.array_equal(path_keys(a), path_keys(b))  # same program, same paths
    assert len(np.unique(path_keys(a))) == len(a.cct)
    seed = path_keys(open_experiment(SEED003))
    assert len(np.unique(seed)) == len(seed)  # g1's and g3's subtrees differ by their path
    proc = run_cli("scaling", str(SCALING_P), str(SCALING_Q), "--format", "csv", check=True)
    assert proc.stdout.splitlines()[0].startswith("context,cost_p,cost_q,expected,loss,loss_pct")


# -- density statistics --------------------------------------------------------------------------------------


def test_stats_against_counted_values() -> None:
    exp = open_experiment(THREADS)
    s = database_stats(exp)
    pdb = exp.db.profiles
    n_ids = 21  # 18 contexts, 2 entry points, the root
    ctx = [len(pdb.profile(i).ctx_ids) for i in range(1, len(pdb))]
    vals = [len(pdb.profile(i).values) for i in range(1, len(pdb))]
    assert s["context_ids"] == n_ids and s["profiles"] == 10 and s["gpu_profiles"] == 2
    assert s["context_density_pct"] == pytest.approx(100 * np.mean(np.array(ctx) / n_ids))
    assert s["metric_density_pct"] == pytest.approx(100 * np.mean(np.array(vals) / (np.array(ctx) * 8)))
    assert s["dense_bytes"] == 8 * (10 * n_ids * 8 + n_ids * 8)
    assert s["sparse_bytes"] == (THREADS / "profile.db").stat().st_size
    assert "Contexts" in run_cli("stats", str(THREADS), check=True).stdout


# -- Perfetto / Chrome trace ----------------------------------------------------------------------------


def _traced(tmp_path: Path) -> Path:
    b = DatabaseBuilder("traced")
    src = b.file("/src/t.c")
    main = b.call(None, b.function("main", -1, src, 1))
    f = b.call(b.line(main, src, 2), b.function("f", -1, src, 10))
    f_body = b.line(f, src, 11)
    g = b.call(b.line(main, src, 3), b.function("g", -1, src, 20))
    g_body = b.line(g, src, 21)
    point = np.zeros((len(b.rows), 1))
    point[f_body, 0], point[g_body, 0] = 3.0, 1.0
    ids = np.array([f_body, f_body, g_body, f_body]) + 2  # context ids are rows + 2
    line = elements(np.array([1000, 2000, 3000, 4000]), ids)
    out = tmp_path / "traced.d"
    b.write(out, [CPU], [(thread_tuple(0, 0, 0), point)], traces=[(1, line)])
    return out


def test_trace_export_nests_call_paths(tmp_path: Path) -> None:
    exp = open_experiment(_traced(tmp_path))
    counts = export_trace(exp, tmp_path / "t.json")
    doc = json.loads((tmp_path / "t.json").read_text())
    slices = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    spans = [(e["name"], e["ts"], e["dur"]) for e in slices]
    assert ("main thread", 0.0, 3.0) in spans and ("main", 0.0, 3.0) in spans
    # f (call site folded in) from 0 to 2 us, g from 2 to 3; the last element (at 3 us) is the line's end
    assert ("t.c:2 → f", 0.0, 2.0) in spans and ("t.c:3 → g", 2.0, 1.0) in spans
    assert max(t + d for _, t, d in spans) == 3.0
    assert counts == {"processes": 1, "tracks": 1, "samples": 3, "slices": len(slices), "unknown_samples": 0}
    names = [e for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"]
    assert names[0]["args"]["name"] == "thread 0"
    procs = [e for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"]
    assert [e["args"]["name"] for e in procs] == [exp.processes.processes[0].label]


@pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="shared data absent")
@pytest.mark.parametrize("name", ["loops-cputime-t.d", "loops-cuda-nvidia-t.d", "hpcviewer-testdata/metadb/issue-233"])
def test_trace_export_of_real_databases(shared_data: Path, tmp_path: Path, name: str) -> None:
    exp = open_experiment(v4_databases(shared_data)[name])
    counts = export_trace(exp, tmp_path / "t.json", max_depth=6 if "issue-233" in name else 64)  # 400k slices
    assert counts["samples"] == int(np.maximum(exp.db.trace.n_elements() - 1, 0).sum())  # the last: the end
    assert counts["processes"] == len(exp.processes)
    doc = json.loads((tmp_path / "t.json").read_text())
    by_track: dict[tuple[int, int], list[tuple[float, float, int]]] = {}
    depth = {int(r): int(d) for r, d in zip(exp.cct.ctx_id.tolist(), exp.cct.depth.tolist(), strict=True)}
    for e in doc["traceEvents"]:
        if e["ph"] == "X":
            assert e["dur"] >= 0
            by_track.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["dur"], depth[e["args"]["ctx_id"]]))
    assert len(by_track) >= 1
    for events in by_track.values():  # slices of one depth never overlap
        for d in {ev[2] for ev in events}:
            same = sorted((t, t + u) for t, u, dd in events if dd == d)
            assert all(a[1] <= b[0] + 1e-6 for a, b in zip(same, same[1:], strict=False))


def test_no_trace_is_one_line_error(tmp_path: Path) -> None:
    assert_one_line_error(run_cli("export-trace", str(SEED003), "-o", str(tmp_path / "x.json")), "trace.db")
    assert not (tmp_path / "x.json").exists()


def test_distribution_minimum_is_the_smallest_value() -> None:
    """Every profile has a value (zeros included): the minimum is the smallest one, not clamped to 0."""
    from hpcsa.views.imbalance import Distribution

    stats = Distribution(0, "m", "execution", np.array([1, 2, 3]), np.array([3.0, 5.0, 4.0])).stats
    assert (stats["min"], stats["max"], stats["mean"]) == (3.0, 5.0, 4.0)
    assert stats["imbalance"] == pytest.approx(3.0)
