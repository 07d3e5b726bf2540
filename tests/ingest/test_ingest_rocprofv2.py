"""hpcsa ingest on rocprofv2 text traces: totals equal those this test parses from the lines itself; program
output is skipped; API-only and range-only files give CPU contexts; unknown domains are refused by name."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hpcsa.ingest.measdir import write_measurement
from hpcsa.ingest.sources import classify, read_sources
from hpcsa.ingest.vendors.rocprofv2 import roctx_ranges
from tests.conftest import FIXTURES, assert_one_line_error, run_cli
from tests.ingest.measdir_check import load, paths_above, total

FIXTURE = FIXTURES / "ingest" / "tiny-rocprofv2.txt"
BEGIN_END = re.compile(r"(?:Begin|Start)_Timestamp\((\d+)\), End_Timestamp\((\d+)\)")


def _expected(files: list[Path]) -> dict[str, float]:
    want = {"GKER:COUNT": 0.0, "GKER (sec)": 0.0, "GXCOPY:COUNT": 0.0, "GXCOPY (sec)": 0.0, "GSYNC (sec)": 0.0}
    for f in files:
        for line in f.read_text().splitlines():
            m = BEGIN_END.search(line)
            if line.startswith("Dispatch_ID("):
                want["GKER:COUNT"] += 1
                want["GKER (sec)"] += (int(m.group(2)) - int(m.group(1))) / 1e9
            elif line.startswith("Domain(HSA_OPS_DOMAIN), Operation_Name(COPY)"):
                want["GXCOPY:COUNT"] += 1
                want["GXCOPY (sec)"] += (int(m.group(2)) - int(m.group(1))) / 1e9
            elif line.startswith("Domain(HIP_API_DOMAIN)") and "Synchronize)" in line:
                want["GSYNC (sec)"] += (int(m.group(2)) - int(m.group(1))) / 1e9
    return want


def _ingest(srcs: list[Path], tmp_path: Path, ranges: bool = True):
    out = tmp_path / "m"
    out.mkdir(parents=True)
    return write_measurement(read_sources([str(s) for s in srcs]), str(out), ranges=ranges), load(str(out))


@pytest.fixture(scope="module")
def golden(shared_data: Path) -> Path:
    return shared_data / "gpu-records" / "amd" / "rocprofv2-golden-traces"


def test_golden_directory_totals(golden: Path, tmp_path: Path) -> None:
    files = sorted(golden.glob("*.txt"))
    assert all(classify(str(f)) == "rocprofv2" for f in files)
    summary, meas = _ingest([golden], tmp_path)
    want = _expected(files)
    assert want["GKER:COUNT"] == 3 and want["GXCOPY:COUNT"] == 6
    for name, value in want.items():
        assert total(meas, name) == pytest.approx(value, rel=1e-12, abs=1e-15), name
    # The copies are placed under their HSA API calls (correlation ids); the dispatches (correlation 0) under
    # the thread root.
    paths = [p for prof in meas.profiles for p in paths_above(prof, "GPUCp?2?")]
    assert paths and all(p and p[-1][0] == "[HIP API]" for p in paths)
    assert summary.unattributed == 0


def test_api_only_file_gives_cpu_contexts(golden: Path, tmp_path: Path) -> None:
    src = golden / "tracer_hip_helloworld_golden_traces.txt"
    calls = [ln for ln in src.read_text().splitlines() if ln.startswith("Domain(HIP_API_DOMAIN)")]
    names = {re.search(r"Function\((\w+)\)", ln).group(1) for ln in calls}
    proc = run_cli("ingest", str(src), "-o", str(tmp_path / "h.m"), check=True)
    lines = [ln for ln in (proc.stderr + proc.stdout).splitlines() if ln.strip()]
    assert len(lines) == 1 and "no GPU operations" in lines[0] and f"{len(calls)} API call(s)" in lines[0]
    meas = load(str(tmp_path / "h.m"))
    assert not meas.totals and len(meas.profiles) == 1
    prof = meas.profiles[0]
    api = next(m.id for m in prof.loadmap if m.path == "[HIP API]")
    assert int((prof.cct["lm_id"] == api).sum()) == len(names)
    run_cli("prof", str(tmp_path / "h.m"), "-o", str(tmp_path / "h.d"), check=True)


def test_range_only_file_gives_range_contexts(golden: Path, tmp_path: Path) -> None:
    src = golden / "tracer_matrix_transpose_golden_trace.txt"
    proc = run_cli("ingest", str(src), "-o", str(tmp_path / "r.m"), check=True)
    assert "no GPU operations" in proc.stderr + proc.stdout
    prof = load(str(tmp_path / "r.m")).profiles[0]
    assert "[roctx ranges]" in {m.path for m in prof.loadmap}


def test_fixture_skips_program_output_and_places_roctx_range(tmp_path: Path) -> None:
    summary, meas = _ingest([FIXTURE], tmp_path)
    want = _expected([FIXTURE])
    for name, value in want.items():
        assert total(meas, name) == pytest.approx(value, rel=1e-12), name
    prof = next(p for p in meas.profiles if any(paths_above(p, "GPUKernl")))
    kernel_paths = sorted(tuple(m for m, _ in p) for p in paths_above(prof, "GPUKernl"))
    # The second launch lies inside the pushed range "second launch"; the mark before it is no range.
    assert kernel_paths == [("[HIP API]",), ("[roctx ranges]", "[HIP API]")]
    assert summary.ranged_calls == 1
    _, plain = _ingest([FIXTURE], tmp_path / "no", ranges=False)
    assert plain.totals == meas.totals
    assert all("[roctx ranges]" not in {m.path for m in p.loadmap} for p in plain.profiles)


def test_roctx_pairing() -> None:
    recs = [(1, 0, "mark"), (2, 0, "outer"), (3, 5, "started"), (4, 0, "inner"), (5, 0, None), (6, 5, None),
            (7, 0, None)]
    ranges, marks = roctx_ranges(recs)
    assert sorted(ranges) == [(2, 7, "outer"), (3, 6, "started"), (4, 5, "inner")]
    assert marks == 1


def test_unknown_domain_refused_by_name(tmp_path: Path) -> None:
    bad = tmp_path / "new.txt"
    bad.write_text(FIXTURE.read_text() + "Domain(FUTURE_DOMAIN), Function(x), Start_Timestamp(1), "
                   "End_Timestamp(2), Correlation_ID(99)\n")
    proc = run_cli("ingest", str(bad), "-o", str(tmp_path / "o.m"))
    assert_one_line_error(proc, str(bad))
    assert "FUTURE_DOMAIN" in proc.stderr and not (tmp_path / "o.m").exists()


def test_malformed_record_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "cut.txt"
    bad.write_text("Domain(HIP_API_DOMAIN), Function(hipMalloc), Start_Timestamp(12x), End_Timestamp(3)\n")
    proc = run_cli("ingest", str(bad), "-o", str(tmp_path / "o.m"))
    assert_one_line_error(proc, str(bad))


def test_directory_of_processes_names_every_kernel(golden: Path, tmp_path: Path) -> None:
    """Several processes' kernels share the synthetic kernel module: one names file serves them all, so every
    kernel of the view has its name (hpcprof takes one structure file per module path)."""
    run_cli("ingest", str(golden), "-o", str(tmp_path / "g.m"), check=True)
    run_cli("struct", str(tmp_path / "g.m"), check=True)  # the whole pipeline: ingest, struct, prof, view
    run_cli("prof", str(tmp_path / "g.m"), "-o", str(tmp_path / "g.d"), check=True)
    out = run_cli("view", str(tmp_path / "g.d"), "-m", "GKER (sec)", "--depth", "5", check=True).stdout
    names = {re.search(r"Kernel_Name\(\"(.*?)\"\)", ln).group(1) for f in golden.glob("*.txt")
             for ln in f.read_text().splitlines() if ln.startswith("Dispatch_ID(")}
    assert names == {"vectoradd_float", "add"}
    assert all(f"→ {n}" in out for n in names) and "GPU kernels]+0x" not in out
