"""hpcsa ingest on the real AMD (rocpd, rocprof v1, rocprofv3 CSV) and Intel (unitrace) data: totals in the
written measurement equal the sums computed from the source files by this test's own SQL/CSV/text code."""

from __future__ import annotations

import csv
import re
import sqlite3
from pathlib import Path

import pytest

from hpcsa.ingest.measdir import write_measurement
from hpcsa.ingest.sources import read_sources
from tests.ingest.measdir_check import load, paths_above, total

SYNC_RE = re.compile(r"(Device|Stream|Event|Ctx)Synchronize|StreamWaitEvent")


def _ingest(srcs: list[Path], tmp_path: Path):
    out = tmp_path / "m"
    out.mkdir()
    summary = write_measurement(read_sources([str(s) for s in srcs]), str(out))
    return summary, load(str(out))


def _sql(path: Path, q: str) -> list[tuple]:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return con.execute(q).fetchall()
    finally:
        con.close()


def _csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def amd(shared_data: Path) -> Path:
    return shared_data / "gpu-records" / "amd"


def test_rocpd(amd: Path, tmp_path: Path) -> None:
    src = amd / "rocprofv3-rocpd-rocm7.1-mi300x-batched-gemm/21_results.db"
    summary, meas = _ingest([src], tmp_path)
    n, t = _sql(src, 'SELECT count(*), sum("end" - start) FROM rocpd_kernel_dispatch')[0]
    assert total(meas, "GKER:COUNT") == n
    assert total(meas, "GKER (sec)") == pytest.approx(t / 1e9, rel=1e-12)
    regions = _sql(src, 'SELECT s.string, r."end" - r.start FROM rocpd_region r JOIN rocpd_string s ON s.id = r.name_id')
    sync = sum(d for name, d in regions if SYNC_RE.search(name))
    assert total(meas, "GSYNC (sec)") == pytest.approx(sync / 1e9, rel=1e-12)
    assert total(meas, "GSYNC:COUNT") == sum(1 for name, _ in regions if SYNC_RE.search(name))
    # Every dispatch links to its HIP call through the event stack id (rocprofiler's internal correlation id).
    orphans = _sql(src, "SELECT count(*) FROM rocpd_kernel_dispatch d JOIN rocpd_event e ON e.id = d.event_id "
                        "WHERE e.stack_id NOT IN (SELECT e2.stack_id FROM rocpd_region r JOIN rocpd_event e2 "
                        "ON e2.id = r.event_id)")[0][0]
    assert orphans == 0 and summary.unattributed == 0
    launchers = {name for name, in _sql(src, "SELECT DISTINCT s.string FROM rocpd_kernel_dispatch d JOIN rocpd_event e "
                                             "ON e.id = d.event_id JOIN rocpd_event e2 ON e2.stack_id = e.stack_id "
                                             "JOIN rocpd_region r ON r.event_id = e2.id "
                                             "JOIN rocpd_string s ON s.id = r.name_id")}
    [cpu] = [p for p in meas.profiles if p.header["thread-id"] == "0"]
    assert len({path for path in paths_above(cpu, "GPUKernl")}) == len(launchers)
    # Work-group counts: the grid is in work-items on AMD.
    blocks = _sql(src, "SELECT sum(((grid_size_x + workgroup_size_x - 1) / workgroup_size_x) * "
                       "((grid_size_y + workgroup_size_y - 1) / workgroup_size_y) * "
                       "((grid_size_z + workgroup_size_z - 1) / workgroup_size_z)) FROM rocpd_kernel_dispatch")[0][0]
    assert total(meas, "GKER:BLKS_ACUMU") == blocks


def test_rocprof_v1_hip_trace(amd: Path, tmp_path: Path) -> None:
    d = amd / "rocprof-v1-hip-trace-mi300a-vecadd"
    summary, meas = _ingest([d], tmp_path)  # the whole output directory: results.db is picked by content
    db = d / "results.db"
    n, t = _sql(db, "SELECT count(*), sum(EndNs - BeginNs) FROM OPS")[0]
    assert total(meas, "GKER:COUNT") == n
    assert total(meas, "GKER (sec)") == pytest.approx(t / 1e9, rel=1e-12)
    args = dict(_sql(db, 'SELECT "Index", args FROM HIP'))
    by_dir = {"H2D": 0, "D2H": 0}
    for name, index in _sql(db, 'SELECT Name, "Index" FROM COPY'):
        size = int(re.search(r"sizeBytes\((\d+)\)", args[index]).group(1))
        by_dir["H2D" if "HostToDevice" in name else "D2H"] += size
    assert total(meas, "GXCOPY:H2D (B)") == by_dir["H2D"] == 8_000_000_000
    assert total(meas, "GXCOPY:D2H (B)") == by_dir["D2H"]
    sync = sum(e - b for name, b, e in _sql(db, "SELECT Name, BeginNs, EndNs FROM HIP") if SYNC_RE.search(name))
    assert total(meas, "GSYNC (sec)") == pytest.approx(sync / 1e9, rel=1e-12)
    assert summary.unattributed == 0


def test_rocprofv3_csv_kernels_and_apis(amd: Path, tmp_path: Path) -> None:
    d = amd / "rocprofv3-doc-excerpts"
    rows = _csv(d / "kernel_trace.csv")
    summary, meas = _ingest([d / "kernel_trace.csv"], tmp_path)
    assert total(meas, "GKER:COUNT") == len(rows)
    t = sum(int(r["End_Timestamp"]) - int(r["Start_Timestamp"]) for r in rows)
    assert total(meas, "GKER (sec)") == pytest.approx(t / 1e9, rel=1e-12)
    # This excerpt comes without its API trace: the launches are known by thread only.
    assert summary.unattributed == len(rows)


def test_rocprofv3_csv_copies_and_allocations(amd: Path, tmp_path: Path) -> None:
    d = amd / "rocprofv3-doc-excerpts"
    copies, allocs = _csv(d / "memory_copy_trace.csv"), _csv(d / "memory_allocation_trace.csv")
    _, meas = _ingest([d / "memory_copy_trace.csv", d / "memory_allocation_trace.csv"], tmp_path)
    assert total(meas, "GXCOPY:COUNT") == len(copies)  # the CSV has no byte counts
    t = sum(int(r["End_Timestamp"]) - int(r["Start_Timestamp"]) for r in copies)
    assert total(meas, "GXCOPY (sec)") == pytest.approx(t / 1e9, rel=1e-12)
    assert total(meas, "GMEM:COUNT") == len(allocs)
    assert sum(v for m, v in meas.totals.items() if m.startswith("GMEM:") and m.endswith("(B)")) == \
        sum(int(r["Allocation_Size"]) for r in allocs)


@pytest.mark.parametrize("name", ["pc_sampling_host_trap.csv", "pc_sampling_host_trap_debug.csv",
                                  "pc_sampling_stochastic_debug.csv"])
def test_rocprofv3_pc_sampling(amd: Path, tmp_path: Path, name: str) -> None:
    rows = _csv(amd / "rocprofv3-doc-excerpts" / name)
    _, meas = _ingest([amd / "rocprofv3-doc-excerpts" / name], tmp_path)
    assert total(meas, "GINS") == len(rows)  # one row per sample
    if "Stall_Reason" in rows[0]:
        issued = sum(1 for r in rows if r["Wave_Issued_Instruction"] == "1")
        assert total(meas, "GINS:STL_NONE") == issued
        assert total(meas, "GINS:STL_ANY") == len(rows) - issued
        waitcnt = sum(1 for r in rows if r["Wave_Issued_Instruction"] == "0" and r["Stall_Reason"].endswith("WAITCNT"))
        assert total(meas, "GINS:STL_GMEM") == waitcnt
    else:
        assert total(meas, "GINS:STL_ANY") == 0
    # One node per distinct instruction of each sampled kernel, all unwound = 0.
    distinct = {(r["Correlation_Id"], r["Instruction"], r["Instruction_Comment"]) for r in rows}
    prof = meas.profiles[0]
    assert int(((prof.cct["flags"] & 1) == 0).sum()) == len(distinct)


UNITRACE = ["unitrace-gold-ze_gemm", "unitrace-gold-dpc_gemm", "unitrace-gold-omp_gemm", "unitrace-gold-graph",
            "unitrace-gold-cl_gemm", "unitrace-gold-grf"]
LINE = re.compile(r'^Thread (\d+) Device \S+ : "?(.*?)"? \[ns\] \d+ \(append\) \d+ \(submit\) (\d+) \(start\) (\d+) \(end\)')


@pytest.mark.parametrize("name", UNITRACE)
def test_unitrace_timeline(shared_data: Path, tmp_path: Path, name: str) -> None:
    t_txt = shared_data / "gpu-records/intel" / name / "t.txt"
    ops = [LINE.match(ln).groups() for ln in t_txt.read_text().splitlines() if ln.strip()]
    _, meas = _ingest([t_txt], tmp_path)
    copies = [o for o in ops if "MemoryCopy" in o[1] or o[1].startswith("clEnqueue") and "Buffer" in o[1]
              and "Fill" not in o[1]]
    syncs = [o for o in ops if re.search(r"Barrier|EventReset|SignalEvent|WaitOnEvents", o[1])]
    kernels = [o for o in ops if o not in copies and o not in syncs and "MemoryFill" not in o[1]]
    dur = lambda sel: sum(int(e) - int(s) for _, _, s, e in sel) / 1e9  # noqa: E731
    assert total(meas, "GKER:COUNT") == len(kernels)
    assert total(meas, "GKER (sec)") == pytest.approx(dur(kernels), rel=1e-12)
    assert total(meas, "GXCOPY:COUNT") == len(copies)
    assert total(meas, "GXCOPY (sec)") == pytest.approx(dur(copies), rel=1e-12)
    nbytes = sum(int(m.group(1)) for o in copies if (m := re.search(r"\[(\d+)\]$", o[1])))
    assert sum(v for m, v in meas.totals.items() if m.startswith("GXCOPY:") and m.endswith("(B)")) == nbytes
    assert total(meas, "GSYNC (sec)") == pytest.approx(dur(syncs), rel=1e-12)
    # Per host thread a profile; kernels under their append call.
    threads = {o[0] for o in ops}
    assert len([p for p in meas.profiles if int(p.header["thread-id"]) < 500]) == len(threads)
    for prof in meas.profiles:
        for path in paths_above(prof, "GPUKernl"):
            assert len(path) == 1 and path[0][0].endswith("API]")


def test_unitrace_summary_only(shared_data: Path, tmp_path: Path) -> None:
    """Without a timeline, the -d summary gives per-kernel counts and times (no trace)."""
    d_txt = shared_data / "gpu-records/intel/unitrace-gold-dpc_gemm/d.txt"
    table = d_txt.read_text().split("=== Kernel Properties ===")[0]
    rows = [re.match(r'^\s*"?(.*?)"?,\s*(\d+),\s*(\d+),', ln) for ln in table.splitlines()]
    rows = [m.groups() for m in rows if m]
    kernels = [r for r in rows if "zeCommandList" not in r[0]]
    assert len(kernels) == 1
    _, meas = _ingest([d_txt], tmp_path)
    assert total(meas, "GKER:COUNT") == sum(int(c) for _, c, _ in kernels)
    assert total(meas, "GKER (sec)") == pytest.approx(sum(int(t) for _, _, t in kernels) / 1e9, rel=1e-12)
    assert all(int(p.header["thread-id"]) < 500 for p in meas.profiles)
