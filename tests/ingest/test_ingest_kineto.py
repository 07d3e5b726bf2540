"""hpcsa ingest on PyTorch profiler (Kineto) traces: totals in the written measurement equal the sums this test
computes from the JSON itself; launch contexts follow the Python frames and operators; versions are checked."""

from __future__ import annotations

import gzip
import json
import re
from collections import defaultdict
from pathlib import Path

import pytest

from hpcsa.ingest.measdir import write_measurement
from hpcsa.ingest.sources import classify, read_sources
from tests.conftest import FIXTURES, assert_one_line_error, run_cli
from tests.ingest.measdir_check import load, paths_above, total

FIXTURE = FIXTURES / "ingest" / "tiny-kineto-cuda.json"
DIRECTION = {"HtoD": "H2D", "DtoH": "D2H", "DtoD": "D2D", "HtoH": "H2H", "PtoP": "P2P"}


def _events(path: Path) -> list[dict]:
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return [e for e in json.loads(raw)["traceEvents"] if e.get("ph") == "X"]


def _expected(path: Path) -> dict[str, float]:
    """Totals computed from the JSON: durations (us), bytes per copy direction from the record or its call."""
    ev = _events(path)
    calls = {e["args"]["correlation"]: e for e in ev if e.get("cat") == "cuda_runtime"}
    want: dict[str, float] = defaultdict(float)
    for e in ev:
        cat, args = e.get("cat"), e.get("args", {})
        if cat == "kernel":
            want["GKER:COUNT"] += 1
            want["GKER (sec)"] += float(e["dur"]) / 1e6
        elif cat == "gpu_memcpy":
            size = args.get("bytes", calls.get(args.get("correlation"), {}).get("args", {}).get("size", 0))
            word = args.get("kind") or re.search(r"([HDP]to[HDP])", e["name"]).group(1)
            want[f"GXCOPY:{DIRECTION[word]} (B)"] += int(size)
            want["GXCOPY (sec)"] += float(e["dur"]) / 1e6
            want["GXCOPY:COUNT"] += 1
        elif cat == "gpu_memset":
            want["GMSET (sec)"] += float(e["dur"]) / 1e6
            want["GMSET:COUNT"] += 1
            want["bytes memset"] += int(args["bytes"])
        elif cat == "cuda_sync":
            want["GSYNC (sec)"] += float(e["dur"]) / 1e6
    if not any(e.get("cat") == "cuda_sync" for e in ev):  # ROCm: the waiting HIP calls
        for e in calls.values():
            if re.search(r"Synchronize|StreamWaitEvent", e["name"]):
                want["GSYNC (sec)"] += float(e["dur"]) / 1e6
    return dict(want)


def _ingest(src: Path, tmp_path: Path, ranges: bool = True):
    out = tmp_path / "m"
    out.mkdir(parents=True)
    summary = write_measurement(read_sources([str(src)]), str(out), ranges=ranges)
    return summary, load(str(out))


def _check_totals(src: Path, tmp_path: Path) -> None:
    summary, meas = _ingest(src, tmp_path)
    want = _expected(src)
    assert want.get("GKER:COUNT", 0) > 0
    for name, value in want.items():
        if name == "bytes memset":
            got = sum(v for k, v in meas.totals.items() if k.startswith("GMSET:") and k.endswith("(B)"))
        else:
            got = total(meas, name)
        assert got == pytest.approx(value, rel=1e-9, abs=1e-12), name
    assert summary.unattributed == 0
    # Per-stream call-trace files: two records per traced operation.
    assert summary.streams >= 1 and any(len(t.records) for t in meas.traces.values())


@pytest.mark.parametrize("dataset", ["amd/kineto-roctracer-rocm6.2-mi250", "nvidia/kineto-cupti-a100-simple-add",
                                     "nvidia/kineto-cupti-a100-cuda-event-sync",
                                     "nvidia/kineto-cupti-a100-cuda-event-sync-multistream"])
def test_real_kineto_totals(shared_data: Path, tmp_path: Path, dataset: str) -> None:
    src = next((shared_data / "gpu-records" / dataset).glob("*.json.gz"))
    assert classify(str(src)) == "kineto"
    _check_totals(src, tmp_path)


def test_fixture_totals_plain_and_gzip(tmp_path: Path) -> None:
    _check_totals(FIXTURE, tmp_path / "plain")
    gz = tmp_path / "trace.json.gz"
    gz.write_bytes(gzip.compress(FIXTURE.read_bytes()))
    assert classify(str(gz)) == "kineto"
    _check_totals(gz, tmp_path / "gz")
    a = load_totals(FIXTURE, tmp_path / "a")
    b = load_totals(gz, tmp_path / "b")
    assert a == b


def load_totals(src: Path, tmp: Path) -> dict[str, float]:
    return _ingest(src, tmp)[1].totals


def test_fixture_launch_contexts(tmp_path: Path) -> None:
    _, meas = _ingest(FIXTURE, tmp_path)
    # The kernels' launch paths: range frames, Python frames, the operator, then the runtime call.
    main = next(p for p in meas.profiles if any(paths_above(p, "GPUKernl")))
    lm = {m.path for m in main.loadmap}
    assert {"[PyTorch ranges]", "[Python]", "[PyTorch operators]", "[CUDA API]"} <= lm
    kernel_paths = paths_above(main, "GPUKernl")
    assert len(kernel_paths) == 2 and all(len(p) == 6 for p in kernel_paths)  # 2 ranges, 2 Python, op, call
    modules = [tuple(m for m, _ in p) for p in kernel_paths]
    assert modules[0] == ("[PyTorch ranges]", "[PyTorch ranges]", "[Python]", "[Python]", "[PyTorch operators]",
                          "[CUDA API]")
    # The copy out of any operator (at 9000 ns) is under the Python frames and ProfilerStep#0 only.
    out_paths = paths_above(main, "GPUCpD2H")
    assert [tuple(m for m, _ in p) for p in out_paths] == [("[PyTorch ranges]", "[Python]", "[Python]",
                                                            "[CUDA API]")]
    # The memset's call is on the worker thread, inside aten::zero_.
    worker = next(p for p in meas.profiles if any(paths_above(p, "GPUMemst")))
    assert [tuple(m for m, _ in p) for p in paths_above(worker, "GPUMemst")] == [("[PyTorch operators]",
                                                                                  "[CUDA API]")]


def test_no_ranges_drops_range_frames(tmp_path: Path) -> None:
    _, meas = _ingest(FIXTURE, tmp_path, ranges=False)
    for prof in meas.profiles:
        assert "[PyTorch ranges]" not in {m.path for m in prof.loadmap}
    assert meas.totals == load_totals(FIXTURE, tmp_path / "with")


def test_pipeline_ingest_struct_prof_view(tmp_path: Path) -> None:
    meas, db = tmp_path / "k.m", tmp_path / "k.d"
    run_cli("ingest", str(FIXTURE), "-o", str(meas), check=True)
    run_cli("struct", str(meas), check=True)
    run_cli("prof", str(meas), "-o", str(db), check=True)
    out = run_cli("view", str(db), "--depth", "12", "-m", "GKER (sec)", check=True).stdout
    assert "<range> ProfilerStep#0" in out and "aten::mul" in out and "cudaLaunchKernel" in out
    no = run_cli("ingest", str(FIXTURE), "--no-ranges", "-o", str(tmp_path / "n.m"), check=True)
    assert "inside user ranges" not in no.stderr + no.stdout


def test_newer_schema_refused_by_name(tmp_path: Path) -> None:
    doc = json.loads(FIXTURE.read_text())
    doc["schemaVersion"] = 2
    bad = tmp_path / "new.json"
    bad.write_text(json.dumps(doc))
    proc = run_cli("ingest", str(bad), "-o", str(tmp_path / "out.m"))
    assert_one_line_error(proc, str(bad))
    assert "schemaVersion 2" in proc.stderr and not (tmp_path / "out.m").exists()


def test_damaged_trace_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "cut.json"
    bad.write_bytes(FIXTURE.read_bytes()[:700])
    proc = run_cli("ingest", str(bad), "-o", str(tmp_path / "out.m"))
    assert_one_line_error(proc, str(bad))
    badgz = tmp_path / "cut.json.gz"
    badgz.write_bytes(gzip.compress(FIXTURE.read_bytes())[:300])
    proc = run_cli("ingest", str(badgz), "-o", str(tmp_path / "out.m"))
    assert_one_line_error(proc, str(badgz))
