"""Thread aggregation ("Preventing the explosion of exascale profile data with smart thread-level aggregation"): the new databases are valid and keep what each strategy promises.

threads.d: 2 ranks x (4 CPU threads + 1 GPU stream). Workers' work (the loop in ``worker``) is 3, 5, 4 on
rank 0 and 4, 6, 5 on rank 1; their barrier and ``<omp idle>`` time is not work. Worker 3 never waits in the
barrier, so its call tree differs from workers 1 and 2.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from hpcsa.formats.db.database import open_database
from hpcsa.formats.db.profiledb import ProfileValues
from hpcsa.views import open_experiment
from hpcsa.views.show import render_view
from hpcsa.views.threads import NUM_THREADS, aggregate_threads, is_not_work
from tests.conftest import SHARED_DATA, assert_one_line_error, run_cli
from tests.views.helpers import THREADS, v4_databases

#: hpcprof's summary lex_aware is not the sum of the threads' on these (reports/dbformats.md); other scopes are.
LEX_AWARE_ANOMALY = {"loops-cputime-t.d", "loops-perf.d", "hatchet-testdata/hpctoolkit-gamess",
                     "hpcviewer-testdata/metadb/acc_f3", "db2pprof-example"}
REAL = ["loops-cputime-t.d", "loops-cuda-nvidia-t.d", "hpcviewer-testdata/metadb/lmp-openmp",
        "hpcviewer-testdata/metadb/issue-233", "hatchet-testdata/hpctoolkit-gamess"]


def _report(path: Path) -> dict:
    return yaml.safe_load((path / "aggregation.yaml").read_text())


def _keyed(values, ids: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:  # type: ignore[no-untyped-def]
    """(sorted unique context*65536+metric keys, summed values); metric ids mapped through ``ids``."""
    met = values.metric_ids.astype(np.int64) if ids is None else ids[values.metric_ids.astype(np.int64)]
    keep = met >= 0
    key = values.value_ctx_ids().astype(np.int64)[keep] * 65536 + met[keep]
    uk, inv = np.unique(key, return_inverse=True)
    return uk, np.bincount(inv.reshape(-1), weights=values.values[keep], minlength=len(uk))


def _same(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> None:
    keys = np.union1d(a[0], b[0])
    va, vb = np.zeros(len(keys)), np.zeros(len(keys))
    va[np.searchsorted(keys, a[0])] = a[1]
    vb[np.searchsorted(keys, b[0])] = b[1]
    assert np.allclose(va, vb, rtol=1e-9, atol=1e-12), keys[~np.isclose(va, vb, rtol=1e-9, atol=1e-12)][:5]


def check_sum_database(src: Path, out: Path, skip_scopes: set[str] = frozenset()) -> None:
    """Valid database; the SUM profiles add up to the source's summary Sum at every context, metric, scope,
    and the new summary profile has the same Sum values."""
    before, after = open_database(src), open_database(out)
    assert after.cct is not None and len(after.cct) == before.n_ctx_ids()
    # prop id -> stat id of its Sum, for the scopes compared (-1 elsewhere)
    to_stat = np.full(65536, -1, np.int64)
    stat_kept = np.full(65536, -1, np.int64)
    for m in before.meta.metrics:
        for inst in m.scope_insts:
            if before.meta.scopes[inst.scope].name in skip_scopes:
                continue
            for st in m.summaries:
                if st.scope == inst.scope and st.formula == "$$" and st.combine == 0:
                    to_stat[inst.prop_metric_id] = st.stat_metric_id
                    stat_kept[st.stat_metric_id] = st.stat_metric_id
    threads = [after.profiles.profile(i) for i in range(1, len(after.profiles))]
    merged = ProfileValues.from_triples(*_keyed_triples(threads))
    expected = _keyed(before.profiles.summary(), stat_kept)
    assert len(expected[0])
    _same(_keyed(merged, to_stat), expected)
    _same(_keyed(after.profiles.summary(), stat_kept), expected)


def _keyed_triples(profiles) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # type: ignore[no-untyped-def]
    ctx = np.concatenate([p.value_ctx_ids() for p in profiles]).astype(np.int64)
    met = np.concatenate([p.metric_ids for p in profiles]).astype(np.int64)
    val = np.concatenate([p.values for p in profiles])
    key = ctx * 65536 + met
    uk, inv = np.unique(key, return_inverse=True)
    return uk // 65536, uk % 65536, np.bincount(inv.reshape(-1), weights=val, minlength=len(uk))


def test_sum_and_num_threads(tmp_path: Path) -> None:
    out = tmp_path / "sum.d"
    profiles = aggregate_threads(open_experiment(THREADS), out, "sum")
    assert [(p.process, p.gpu, p.members) for p in profiles] == [
        ("node 0 rank 0", False, [1, 2, 3, 4]), ("node 0 rank 0", True, [5]),
        ("node 0 rank 1", False, [6, 7, 8, 9]), ("node 0 rank 1", True, [10])]
    check_sum_database(THREADS, out)
    exp = open_experiment(out)
    assert exp.total(NUM_THREADS) == 10  # every source profile is counted once
    assert [exp.profile_values(i, NUM_THREADS)[0] for i in range(1, 5)] == [4, 1, 4, 1]
    assert "num_threads" in render_view(exp, metrics=[NUM_THREADS])
    report = _report(out)
    assert report["strategy"] == "sum" and report["profiles"][0]["role"] == "aggregated threads"


def test_set_keeps_statistics_per_scope(tmp_path: Path) -> None:
    out = tmp_path / "set.d"
    aggregate_threads(open_experiment(THREADS), out, "set")
    check_sum_database(THREADS, out)
    exp = open_experiment(out)
    work = exp.find_rows("worker")[0] + 2  # the worker's loop line (worker -> loop -> line)
    assert exp.scope_name(int(work)) == "app.c:83"
    rank0_cpu = 1
    for scope in ("execution", "lex_aware", "function"):
        v = {s: exp.profile_values(rank0_cpu, f"CPUTIME (sec):{s}", scope)[work] for s in ("min", "max", "count",
                                                                                           "sumsq")}
        assert v == {"min": 3.0, "max": 5.0, "count": 3.0, "sumsq": 9.0 + 25.0 + 16.0}, scope
    # the barrier: only workers 1 and 2 waited there (2 and 0.5)
    barrier = exp.find_rows("GOMP_barrier")[0]
    stats = {s: exp.profile_values(rank0_cpu, f"CPUTIME (sec):{s}")[barrier] for s in ("min", "max", "count")}
    assert stats == {"min": 0.5, "max": 2.0, "count": 2.0}
    # the summary of a :min metric is the minimum over the processes
    assert exp.column("CPUTIME (sec):min")[work] == 3.0 and exp.column("CPUTIME (sec):max")[work] == 6.0


def test_key_threads_by_work_time(tmp_path: Path) -> None:
    out = tmp_path / "key.d"
    profiles = aggregate_threads(open_experiment(THREADS), out, "key")
    roles = [(p.process, p.role, p.members) for p in profiles]
    assert roles == [
        ("node 0 rank 0", "initial thread", [1]), ("node 0 rank 0", "slowest thread", [3]),
        ("node 0 rank 0", "fastest thread", [2]), ("node 0 rank 0", "aggregated other threads", [4]),
        ("node 0 rank 0", "initial stream", [5]),
        ("node 0 rank 1", "initial thread", [6]), ("node 0 rank 1", "slowest thread", [8]),
        ("node 0 rank 1", "fastest thread", [7]), ("node 0 rank 1", "aggregated other threads", [9]),
        ("node 0 rank 1", "initial stream", [10])]
    # work excludes the barrier and <omp idle>: workers total 6 each on rank 0, but work 3, 5, 4
    assert [p.work for p in profiles[:4]] == [[6.0], [5.0], [3.0], [4.0]]
    check_sum_database(THREADS, out)
    report = _report(out)
    assert report["work_metric"]["node 0 rank 0 cpu"] == "CPUTIME (sec)"
    assert report["work_metric"]["node 0 rank 0 gpu"] == "GPUOP (sec)"


def test_calltree_clusters_same_visited_contexts(tmp_path: Path) -> None:
    out = tmp_path / "calltree.d"
    profiles = aggregate_threads(open_experiment(THREADS), out, "calltree")
    assert [(p.process, p.gpu, p.members) for p in profiles] == [
        ("node 0 rank 0", False, [1]), ("node 0 rank 0", False, [2, 3]), ("node 0 rank 0", False, [4]),
        ("node 0 rank 0", True, [5]),
        ("node 0 rank 1", False, [6]), ("node 0 rank 1", False, [7, 8]), ("node 0 rank 1", False, [9]),
        ("node 0 rank 1", True, [10])]
    check_sum_database(THREADS, out)


def test_classifier() -> None:
    for name in ("<omp idle>", "<gpu sync>", "MPI_Wait", "PMPI_Waitall", "MPI_Barrier", "GOMP_barrier",
                 "gomp_team_barrier_wait_end", "pthread_mutex_lock", "omp_set_lock", "__kmp_acquire_ticket_lock",
                 "cudaDeviceSynchronize", "hipStreamSynchronize", "pthread_cond_wait@@GLIBC_2.3.2"):
        assert is_not_work(name), name
    for name in ("main", "compute", "MPI_Allreduce", "MPI_Waiter_lib", "<gpu kernel>", "saxpy", None, ""):
        assert not is_not_work(name), name


def test_cli_and_bad_input(tmp_path: Path) -> None:
    proc = run_cli("aggregate-threads", str(THREADS), "--strategy", "calltree", "-o", str(tmp_path / "c.d"),
                   check=True)
    assert "10 profiles -> 8" in proc.stderr and (tmp_path / "c.d" / "aggregation.yaml").is_file()
    assert_one_line_error(run_cli("aggregate-threads", str(tmp_path / "none.d"), "-o", str(tmp_path / "x.d")),
                          "none.d")
    assert not (tmp_path / "x.d").exists()
    assert_one_line_error(run_cli("aggregate-threads", str(THREADS), "-s", "key", "--work-metric", "NOPE", "-o",
                                  str(tmp_path / "y.d")), "NOPE")
    assert not (tmp_path / "y.d").exists()


def test_same_output_every_time(tmp_path: Path) -> None:
    exp = open_experiment(THREADS)
    for k in range(2):
        aggregate_threads(exp, tmp_path / f"k{k}.d", "key")
    for f in ("meta.db", "profile.db", "cct.db", "metrics/default.yaml"):
        assert (tmp_path / "k0.d" / f).read_bytes() == (tmp_path / "k1.d" / f).read_bytes(), f


@pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="shared data absent")
@pytest.mark.parametrize("name", REAL)
@pytest.mark.parametrize("strategy", ["sum", "key"])
def test_real_databases(shared_data: Path, tmp_path: Path, name: str, strategy: str) -> None:
    src = v4_databases(shared_data)[name]
    exp = open_experiment(src)
    out = tmp_path / "out.d"
    profiles = aggregate_threads(exp, out, strategy)
    assert sorted(i for p in profiles for i in p.members) == [p.index for p in exp.profiles]
    if strategy == "sum":
        check_sum_database(src, out, {"lex_aware"} if name in LEX_AWARE_ANOMALY else set())
    new = open_experiment(out)
    assert new.total(NUM_THREADS) == len(exp.profiles)
    assert render_view(new, "top-down", hot_path=True)
    if exp.db.trace is not None and strategy == "key":
        singles = [k for k, p in enumerate(profiles, start=1) if len(p.members) == 1]
        assert new.db.trace is not None and sorted(new.db.trace.prof_index.tolist()) == singles
        src_slot = {int(p): s for s, p in enumerate(exp.db.trace.prof_index.tolist())}
        for slot, k in enumerate(new.db.trace.prof_index.tolist()):
            assert np.array_equal(new.db.trace.trace(slot), exp.db.trace.trace(src_slot[profiles[k - 1].members[0]]))


@pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="shared data absent")
def test_aggregated_database_round_trips_and_hatchet_reads_it(shared_data: Path, tmp_path: Path) -> None:
    from hpcsa.formats.db.database import write_database
    from tests.formats.dbcheck import same_database

    src = v4_databases(shared_data)["loops-cputime-t.d"]
    out = tmp_path / "sum.d"
    aggregate_threads(open_experiment(src), out, "sum")
    db = open_database(out)
    write_database(tmp_path / "copy.d", db)  # the database package's own writer
    same_database(db, open_database(tmp_path / "copy.d"))
    ht = pytest.importorskip("hatchet")
    gf = ht.GraphFrame.from_hpctoolkit_latest(str(out))
    root = gf.graph.roots[0]
    main_entry = open_experiment(out).cct
    entry_row = int(np.flatnonzero(main_entry.ctx_id == root._hatchet_nid)[0])
    assert gf.dataframe.loc[root, "time (inc)"] == pytest.approx(
        open_experiment(out).inclusive("CPUTIME (sec)")[entry_row])
