"""``--binary``: the user's GPU code matched to the records by kernel symbol, written to gpubins/, kernels
and PC samples at real offsets; plus conformance of the written files with real hpcrun measurements."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from pathlib import Path

import pytest

from hpcsa.formats.measurement.hpcrun import read_hpcrun
from hpcsa.ingest.gpumetrics import metric_table
from tests.conftest import FIXTURES, assert_one_line_error, run_cli
from tests.ingest.measdir_check import load, paths_above

NSYS = FIXTURES / "ingest" / "tiny-nsys.sqlite"


@pytest.fixture()
def cubin(hpctoolkit_data: Path) -> Path:
    """A real cubin hpcrun captured (it defines _Z8kernmainv at section offset 0x2e00)."""
    return hpctoolkit_data / "meas/loops-cuda-nvidia-t.m/gpubins/1165a3eeddeea5ea3616d1cdbc6faa59.gpubin"


def records_naming(tmp_path: Path, kernel: str) -> Path:
    """The tiny nsys fixture with its one kernel renamed (shared with the structure tests)."""
    src = tmp_path / "run.sqlite"
    shutil.copy(NSYS, src)
    con = sqlite3.connect(src)
    con.execute("UPDATE StringIds SET value = ? WHERE value = '_Z5saxpyifPfS_'", (kernel,))
    con.commit()
    con.close()
    return src


def test_binary_places_kernels_in_real_gpubins(tmp_path: Path, cubin: Path) -> None:
    src = records_naming(tmp_path, "_Z8kernmainv")
    out = tmp_path / "m"
    proc = run_cli("ingest", str(src), "--binary", str(cubin), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    digest = hashlib.md5(cubin.read_bytes()).hexdigest()
    assert (out / "gpubins" / f"{digest}.gpubin").read_bytes() == cubin.read_bytes()
    meas = load(str(out))
    main = meas.profiles[0]
    lm = {m.id: m for m in main.loadmap}
    gpubin = [m for m in lm.values() if m.path == f"gpubins/{digest}.gpubin"]
    assert len(gpubin) == 1 and gpubin[0].flags == 1
    kernels = main.cct[main.cct["lm_id"] == gpubin[0].id]
    # The kernel node under <gpu kernel> and under the trace placeholder, both at hpcrun's entry offset.
    assert sorted(int(x) for x in kernels["lm_ip"]) == [0x2E00, 0x2E00]
    # Same as hpcrun placed this kernel in the real measurement.
    real = read_hpcrun(next((cubin.parent.parent).glob("*-000-*.hpcrun")))
    real_lm = [m.id for m in real.loadmap if m.path.endswith(f"{digest}.gpubin")][0]
    assert set(int(x) for x in real.cct["lm_ip"][real.cct["lm_id"] == real_lm]) == {0x2E00}


def test_binary_without_matching_code_is_an_error(tmp_path: Path, cubin: Path) -> None:
    proc = run_cli("ingest", str(NSYS), "--binary", str(cubin), "-o", str(tmp_path / "m"))
    assert_one_line_error(proc, str(cubin))
    garbage = tmp_path / "host.bin"
    garbage.write_bytes(b"\x7fELF" + bytes(100))
    assert_one_line_error(run_cli("ingest", str(NSYS), "--binary", str(garbage), "-o", str(tmp_path / "m")),
                          "host.bin")


@pytest.mark.parametrize("meas", ["loops-cuda-nvidia-t.m", "loops-cuda-nvidiapc-t.m"])
def test_metric_table_is_hpcruns(hpctoolkit_data: Path, meas: str) -> None:
    real = read_hpcrun(next((hpctoolkit_data / "meas" / meas).glob("*-000-*.hpcrun")))
    assert real.metrics == metric_table("pc" in meas, False)


def test_newer_rocpd_schema_is_refused(shared_data: Path, tmp_path: Path) -> None:
    src = tmp_path / "21_results.db"
    shutil.copy(shared_data / "gpu-records/amd/rocprofv3-rocpd-rocm7.1-mi300x-batched-gemm/21_results.db", src)
    con = sqlite3.connect(src)
    [table] = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE "
                                         "'rocpd_metadata_%'")]
    con.execute(f"UPDATE {table} SET value = '7' WHERE tag = 'schema_version'")
    con.commit()
    con.close()
    proc = run_cli("ingest", str(src), "-o", str(tmp_path / "m"))
    assert_one_line_error(proc, "21_results.db")
    assert "schema_version '7'" in proc.stderr


def test_same_input_same_output(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    for out in (a, b):
        assert run_cli("ingest", str(NSYS), "-o", str(out)).returncode == 0
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert files and files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    assert all((a / f).read_bytes() == (b / f).read_bytes() for f in files)
    assert paths_above(load(str(a)).profiles[0], "GPUKernl")


def test_binary_finds_cubins_embedded_in_a_host_file(tmp_path: Path, cubin: Path) -> None:
    """A fatbin or executable embeds its cubins whole: each is cut out at its ELF extent."""
    host = tmp_path / "app"
    host.write_bytes(b"\x7fELF-not-really" + bytes(1000) + cubin.read_bytes() + b"trailing host data" * 10)
    out = tmp_path / "m"
    proc = run_cli("ingest", str(records_naming(tmp_path, "_Z8kernmainv")), "--binary", str(host), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    [written] = list((out / "gpubins").iterdir())
    assert written.read_bytes() == cubin.read_bytes()
