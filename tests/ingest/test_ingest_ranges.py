"""User ranges as calling contexts (NVTX, roctx): after ingest and prof, the GPU time under each range equals
the SQL sum of the kernels whose launch call starts inside that range on its thread; --no-ranges turns it off."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from hpcsa.ingest.measdir import write_measurement
from hpcsa.ingest.sources import read_sources
from hpcsa.views import open_experiment
from tests.conftest import FIXTURES, run_cli
from tests.ingest.measdir_check import load, paths_above, total

SAXPY = "nvidia/nsys-2022.2-saxpy-mpi-a100-cudabacktrace/saxpy-mpi-cuda_nsys_perlmutter0.sqlite"
NVTX_NAME = "COALESCE(n.text, (SELECT value FROM StringIds WHERE id = n.textId))"


def _sql(path: Path, q: str) -> list[tuple]:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return con.execute(q).fetchall()
    finally:
        con.close()


def _gpu_time_under(db: Path, name: str) -> float:
    exp = open_experiment(str(db))
    rows = exp.find_rows(f"<range> {name}")
    rows = [r for r in rows.tolist() if exp.scope_name(r) == f"<range> {name}"]
    return float(np.sum(exp.inclusive("GKER (sec)")[rows])) if rows else 0.0


def test_nsys_nvtx_range_gpu_time_equals_sql(shared_data: Path, tmp_path: Path) -> None:
    src = shared_data / "gpu-records" / SAXPY
    run_cli("ingest", str(src), "-o", str(tmp_path / "s.m"), check=True)
    run_cli("prof", str(tmp_path / "s.m"), "-o", str(tmp_path / "s.d"), check=True)
    names = [r[0] for r in _sql(src, f"SELECT DISTINCT {NVTX_NAME} FROM NVTX_EVENTS n "
                                      "WHERE n.eventType IN (59, 60) AND n.\"end\" IS NOT NULL")]
    assert "saxpy" in names
    checked = 0
    for name in names:
        want_ns = _sql(src, "SELECT COALESCE(SUM(k.\"end\" - k.start), 0) FROM CUPTI_ACTIVITY_KIND_KERNEL k WHERE "
                            "EXISTS (SELECT 1 FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN NVTX_EVENTS n "
                            "ON n.globalTid = r.globalTid AND r.start BETWEEN n.start AND n.\"end\" "
                            f"WHERE r.correlationId = k.correlationId AND n.eventType IN (59, 60) "
                            f"AND {NVTX_NAME} = ?)".replace("?", "'" + name.replace("'", "''") + "'"))[0][0]
        got = _gpu_time_under(tmp_path / "s.d", name)
        assert got == pytest.approx(want_ns / 1e9, rel=1e-9, abs=1e-15), name
        checked += want_ns > 0
    assert checked >= 1  # the saxpy range holds the kernel launches
    # Off: no range frames, the same totals.
    run_cli("ingest", str(src), "--no-ranges", "-o", str(tmp_path / "n.m"), check=True)
    with_r, without = load(str(tmp_path / "s.m")), load(str(tmp_path / "n.m"))
    assert with_r.totals == pytest.approx(without.totals, rel=1e-12)
    assert all("[NVTX ranges]" not in {m.path for m in p.loadmap} for p in without.profiles)
    assert any("[NVTX ranges]" in {m.path for m in p.loadmap} for p in with_r.profiles)


def test_rocprofv3_marker_csv(shared_data: Path, tmp_path: Path) -> None:
    real = shared_data / "gpu-records" / "amd" / "rocprofv3-doc-excerpts" / "marker_api_trace.csv"
    tr = read_sources([str(real)])[0]
    # Push/pop ranges on their thread, the start/stop range (thread 0) for the process, marks are no ranges.
    got = sorted((tr.strings[int(r["name"])], int(r["thread"])) for r in tr.ranges)
    assert got == [("hipLaunchKernel", 717), ("hipLaunchKernel range", -1), ("hipMemcpy", 717)]
    assert len(tr.apis) == 0


def test_rocprofv3_marker_ranges_place_fixture_launches(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(FIXTURES / "ingest" / "tiny-rocprofv3", run)
    (run / "4242_marker_api_trace.csv").write_text(
        '"Domain","Function","Process_Id","Thread_Id","Correlation_Id","Start_Timestamp","End_Timestamp"\n'
        '"MARKER_CORE_API","a mark",4242,4242,90,950,950\n'
        '"MARKER_CORE_API","iteration",4242,4242,91,4000,5500\n'
        '"MARKER_CORE_API","whole run",4242,0,92,100,20000\n')
    out = tmp_path / "m"
    out.mkdir()
    write_measurement(read_sources([str(run)]), str(out))
    meas = load(str(out))
    prof = next(p for p in meas.profiles if any(paths_above(p, "GPUKernl")))
    kernel_paths = sorted(len(p) for p in paths_above(prof, "GPUKernl"))
    assert kernel_paths == [2, 3]  # whole run > call; whole run > iteration > call
    plain = tmp_path / "p"
    plain.mkdir()
    write_measurement(read_sources([str(run)]), str(plain), ranges=False)
    assert load(str(plain)).totals == meas.totals


def test_rocpd_marker_range_gpu_time_equals_sql(shared_data: Path, tmp_path: Path) -> None:
    src = tmp_path / "run.db"
    shutil.copy(shared_data / "gpu-records" / "amd" / "rocprofv3-rocpd-rocm7.1-mi300x-batched-gemm" /
                "21_results.db", src)
    con = sqlite3.connect(src)
    sfx = con.execute("SELECT substr(name, length('rocpd_region_') + 1) FROM sqlite_master "
                      "WHERE type = 'table' AND name LIKE 'rocpd_region_%'").fetchone()[0]
    guid, nid, pid, tid = con.execute("SELECT guid, nid, pid, tid FROM rocpd_region").fetchone()
    # A range over the first half of the kernel launches.
    starts = sorted(r[0] for r in con.execute(
        "SELECT r.start FROM rocpd_region r JOIN rocpd_event e ON e.id = r.event_id WHERE e.stack_id IN "
        "(SELECT e2.stack_id FROM rocpd_kernel_dispatch d JOIN rocpd_event e2 ON e2.id = d.event_id)"))
    lo, hi = starts[0] - 10, starts[len(starts) // 2]
    con.execute(f"INSERT OR IGNORE INTO rocpd_string_{sfx} (guid, string) VALUES (?, 'MARKER_CORE_API')", (guid,))
    cat = con.execute(f"SELECT id FROM rocpd_string_{sfx} WHERE string = 'MARKER_CORE_API'").fetchone()[0]
    name = con.execute(f"INSERT INTO rocpd_string_{sfx} (guid, string) VALUES (?, 'first third')", (guid,)).lastrowid
    ev = con.execute(f"INSERT INTO rocpd_event_{sfx} (guid, category_id, stack_id, parent_stack_id, correlation_id) "
                     "VALUES (?, ?, 0, 0, 0)", (guid, cat)).lastrowid
    con.execute(f'INSERT INTO rocpd_region_{sfx} (guid, nid, pid, tid, start, "end", name_id, event_id) '
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", (guid, nid, pid, tid, lo, hi, name, ev))
    con.commit()
    con.close()
    want_ns = _sql(src, 'SELECT SUM(d."end" - d.start) FROM rocpd_kernel_dispatch d JOIN rocpd_event e '
                        "ON e.id = d.event_id WHERE e.stack_id IN (SELECT e2.stack_id FROM rocpd_region r JOIN "
                        f"rocpd_event e2 ON e2.id = r.event_id WHERE r.tid = {tid} AND r.start BETWEEN {lo} AND {hi} "
                        f"AND r.event_id != {ev})")[0][0]
    assert want_ns > 0
    run_cli("ingest", str(src), "-o", str(tmp_path / "r.m"), check=True)
    run_cli("prof", str(tmp_path / "r.m"), "-o", str(tmp_path / "r.d"), check=True)
    assert _gpu_time_under(tmp_path / "r.d", "first third") == pytest.approx(want_ns / 1e9, rel=1e-9)
    # The marker region is a range, not an API call: the totals are those of the database without it.
    n_kernels = _sql(src, "SELECT count(*) FROM rocpd_kernel_dispatch")[0][0]
    assert total(load(str(tmp_path / "r.m")), "GKER:COUNT") == n_kernels
