"""hpcsa ingest on the project's own tiny sources (fixtures/ingest, made by make_fixtures.py): hand-computed
totals, placement, traces and file format as hpcrun writes it; bad input gives one line and exit 2."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from hpcsa.formats.measurement.hpcrun import placeholder_code
from hpcsa.ingest.gpumetrics import metric_table
from hpcsa.ingest.measdir import write_measurement
from hpcsa.ingest.sources import read_sources
from tests.conftest import FIXTURES, assert_one_line_error, run_cli
from tests.ingest.measdir_check import load, paths_above, total

FIX = FIXTURES / "ingest"
NSYS = FIX / "tiny-nsys.sqlite"
EPOCH = 1_700_000_000_000_000_000


def _ingest(srcs: list[Path], tmp_path: Path):
    out = tmp_path / "m"
    out.mkdir()
    summary = write_measurement(read_sources([str(s) for s in srcs]), str(out))
    return summary, load(str(out)), out


def test_nsys_fixture_totals_and_placement(tmp_path: Path) -> None:
    summary, meas, out = _ingest([NSYS], tmp_path)
    assert total(meas, "GKER:COUNT") == 2
    assert total(meas, "GKER (sec)") == pytest.approx(4000e-9)
    assert total(meas, "GXCOPY:H2D (B)") == 4096 and total(meas, "GXCOPY:D2H (B)") == 2048
    assert total(meas, "GMSET:DEV (B)") == 512  # nsys memKind 2 = device
    assert total(meas, "GSYNC:STR (sec)") == pytest.approx(500e-9)  # classified by the API name
    assert total(meas, "GPUOP (sec)") == pytest.approx((1000 + 3000 + 500 + 700 + 300 + 500) * 1e-9)
    # Kernel attributes per launch x 2 launches; theoretical occupancy 8 blocks x 8 warps of 64.
    assert total(meas, "GKER:BLKS_ACUMU") == 16 and total(meas, "GKER:BLK_THR_ACUMU") == 512
    assert total(meas, "GKER:THR_REG_ACUMU") == 64 and total(meas, "GKER:STMEM_ACUMU (B)") == 2048
    assert total(meas, "GKER:FGP_ACT_ACUMU") == 128 and total(meas, "GKER:FGP_MAX_ACUMU") == 128
    assert summary.threads == 2 and summary.streams == 2 and summary.unattributed == 0
    names = sorted(p.name for p in out.iterdir())
    assert names == ["saxpy-000000-000-00000000-4242-0.hpcrun", "saxpy-000000-000-00000000-4242-0.hpctrace",
                     "saxpy-000000-001-00000000-4242-0.hpcrun", "saxpy-000000-001-00000000-4242-0.hpctrace",
                     "saxpy-000000-500-00000000-4242-0.hpcrun", "saxpy-000000-500-00000000-4242-0.hpctrace",
                     "saxpy-000000-501-00000000-4242-0.hpcrun", "saxpy-000000-501-00000000-4242-0.hpctrace",
                     "structs"]
    main = meas.profiles[0]
    # The launch context is the CUDA backtrace without the driver frame: main -> run() -> cudaLaunchKernel.
    assert paths_above(main, "GPUKernl") == [(("/opt/app/saxpy", 0x401100), ("/opt/app/saxpy", 0x401234),
                                              ("/usr/lib/libcudart.so.12", 0x7F0000105678))]
    assert paths_above(main, "GPUCpH2D") == [(("[CUDA API]", paths_above(main, "GPUCpH2D")[0][0][1]),)]
    worker = meas.profiles[1]
    assert worker.header["thread-id"] == "1" and len(paths_above(worker, "GPUMemst")) == 1
    # Structure files name the frames for hpcprof.
    structs = "".join(p.read_text() for p in (out / "structs").iterdir())
    assert 'n="run()"' in structs and 'n="saxpy(int, float, float*, float*)"' in structs


def test_nsys_fixture_files_follow_hpcrun(tmp_path: Path) -> None:
    _, meas, _ = _ingest([NSYS], tmp_path)
    for prof in meas.profiles:
        assert prof.metrics == metric_table(False, False)
        assert prof.header["process-id"] == "4242"
        kinds = [int(k) for k in prof.id_tuple["kind"]]
        if int(prof.header["thread-id"]) >= 500:
            assert kinds == [0x4001, 0xC005, 0xC006]  # NODE / GPUCONTEXT / GPUSTREAM
            assert len(prof.values) == 0  # values live in the CPU threads, as with hpcrun
            assert placeholder_code("NoActvty") in prof.cct["lm_ip"].tolist()
        else:
            assert kinds == [0x4001, 0xC003]  # NODE / THREAD
        # Parents come before children, the root is ^Primary.
        seen = set()
        for node, parent in zip(prof.cct["id"].tolist(), prof.cct["parent"].tolist(), strict=True):
            assert parent == 0 or parent in seen
            seen.add(node)
        assert int(prof.cct["lm_ip"][0]) == placeholder_code("^Primary")


def test_nsys_fixture_stream_trace(tmp_path: Path) -> None:
    _, meas, _ = _ingest([NSYS], tmp_path)
    trace = meas.traces["saxpy-000000-500-00000000-4242-0"]
    assert trace.call_trace
    times = trace.records["time"].astype(np.int64) - EPOCH
    assert times.tolist() == [300, 800, 2000, 3000, 6000, 9000, 9100, 9800]
    prof = [p for p in meas.profiles if p.header["thread-id"] == "500"][0]
    lm = {m.id: m.path for m in prof.loadmap}
    node = {int(i): (lm.get(int(m), ""), int(ip)) for i, m, ip in zip(prof.cct["id"], prof.cct["lm_id"],
                                                                      prof.cct["lm_ip"], strict=True)}
    leaves = [node[int(c)] for c in trace.records["ctx"]]
    assert leaves[1::2] == [("", placeholder_code("NoActvty"))] * 4
    assert leaves[0][1] == placeholder_code("GPUTrace") and leaves[2][0] == "[CUDA GPU kernels]"


def test_rocprofv3_fixture(tmp_path: Path) -> None:
    summary, meas, _ = _ingest([FIX / "tiny-rocprofv3"], tmp_path)
    assert total(meas, "GKER:COUNT") == 2 and total(meas, "GKER (sec)") == pytest.approx(4000e-9)
    assert total(meas, "GKER:BLKS_ACUMU") == 16  # 2048 work-items / 256 per group, twice
    assert total(meas, "GXCOPY:COUNT") == 2 and total(meas, "GXCOPY (sec)") == pytest.approx(1200e-9)
    assert total(meas, "GSYNC:STR (sec)") == pytest.approx(500e-9)
    assert summary.unattributed == 0
    assert {p[0][0] for p in paths_above(meas.profiles[0], "GPUKernl")} == {"[HIP API]"}


def test_unitrace_fixture(tmp_path: Path) -> None:
    _, meas, _ = _ingest([FIX / "tiny-unitrace.4242.txt"], tmp_path)
    assert total(meas, "GKER:COUNT") == 2 and total(meas, "GKER (sec)") == pytest.approx(4000e-9)
    assert total(meas, "GKER:BLKS_ACUMU") == 16 and total(meas, "GKER:BLK_THR_ACUMU") == 512
    assert total(meas, "GXCOPY:H2D (B)") == 4096 and total(meas, "GXCOPY:D2H (B)") == 2048
    assert meas.profiles[0].header["process-id"] == "4242"


def test_cli_writes_and_summarises(tmp_path: Path) -> None:
    proc = run_cli("ingest", str(NSYS), "-o", str(tmp_path / "out.m"))
    assert proc.returncode == 0, proc.stderr
    assert "2 kernel, 2 memcpy, 1 memset, 1 sync" in proc.stderr
    assert (tmp_path / "out.m" / "saxpy-000000-000-00000000-4242-0.hpcrun").is_file()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no partial leftovers


def test_stall_table_is_printed() -> None:
    proc = run_cli("ingest", "--stall-table")
    assert proc.returncode == 0 and "| cupti-legacy | `MEMORY_DEPENDENCY` | `GINS:STL_GMEM` |" in proc.stdout


def _bad(tmp_path: Path, src: Path, fragment: str) -> str:
    out = tmp_path / "never.m"
    proc = run_cli("ingest", str(src), "-o", str(out))
    assert_one_line_error(proc, fragment)
    assert not out.exists()
    return proc.stderr


def test_newer_nsys_schema_is_refused_by_version(tmp_path: Path) -> None:
    src = tmp_path / "new.sqlite"
    shutil.copy(NSYS, src)
    con = sqlite3.connect(src)
    con.execute("UPDATE META_DATA_EXPORT SET value = '3.99.1' WHERE name = 'EXPORT_SCHEMA_VERSION'")
    con.commit()
    con.close()
    assert "schema 3.99.1 is not supported" in _bad(tmp_path, src, "new.sqlite")


def test_truncated_sqlite(tmp_path: Path) -> None:
    src = tmp_path / "cut.sqlite"
    src.write_bytes(NSYS.read_bytes()[:6000])
    _bad(tmp_path, src, "cut.sqlite")


def test_garbage_and_empty_files(tmp_path: Path) -> None:
    junk = tmp_path / "junk.bin"
    junk.write_bytes(bytes(range(256)) * 8)
    assert "not a GPU-record source" in _bad(tmp_path, junk, "junk.bin")
    empty = tmp_path / "empty.csv"
    empty.write_bytes(b"")
    _bad(tmp_path, empty, "empty.csv")


def test_truncated_csv(tmp_path: Path) -> None:
    src = tmp_path / "4242_kernel_trace.csv"
    text = (FIX / "tiny-rocprofv3" / "4242_kernel_trace.csv").read_text()
    src.write_text(text[: len(text) - 40])
    assert "fields" in _bad(tmp_path, src, "4242_kernel_trace.csv")


def test_bad_unitrace_line(tmp_path: Path) -> None:
    src = tmp_path / "t.txt"
    lines = (FIX / "tiny-unitrace.4242.txt").read_text().splitlines()
    src.write_text("\n".join(lines[:2] + ["Thread 1 Device 2 : garbage"]) + "\n")
    assert "line 3" in _bad(tmp_path, src, "t.txt")


def test_names_from_records_cannot_escape_the_output(tmp_path: Path) -> None:
    """A process name with path separators only shapes file names inside the measurement directory."""
    src = tmp_path / "evil.sqlite"
    shutil.copy(NSYS, src)
    con = sqlite3.connect(src)
    con.execute("UPDATE PROCESSES SET name = '../../../../tmp/evil/../x y'")
    con.commit()
    con.close()
    out = tmp_path / "sub" / "o.m"
    out.parent.mkdir()
    assert run_cli("ingest", str(src), "-o", str(out)).returncode == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["evil.sqlite", "sub"]
    assert all(p.parent == out for p in out.glob("*.hpcrun"))
