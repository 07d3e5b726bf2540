"""Blame on vendor data: ``hpcsa ingest`` writes each CPU thread's trace line from its API calls
(:mod:`hpcsa.ingest.cputrace`), so ``hpcsa blame`` names the CPU code that kept the GPU idle on Nsight
Systems, rocpd, rocprofv3 and Kineto inputs.

The line's construction is checked on hand-made calls (nested, back to back, ending together); the whole
path on real exports: the sync calls that leave the GPU idle are named, the blame of every GPU still adds up
to its idle time, and every CPU line ends at its last call's end, as its ``.hpcrun`` header says.
"""

from __future__ import annotations

import glob
import json
from pathlib import Path

import numpy as np
import pytest

from hpcsa.formats.db.database import open_database
from hpcsa.formats.measurement.hpcrun import read_hpcrun
from hpcsa.ingest import model as M
from hpcsa.ingest.cputrace import call_line
from hpcsa.views.names import ShortNames
from tests.conftest import FIXTURES, run_cli

ROOT = 1000


def calls(*rows: tuple[int, int, int]) -> np.ndarray:
    """API calls (start, end, name) on one thread, no stack."""
    out = M.empty(M.API_DTYPE, len(rows))
    for k, (a, b, name) in enumerate(rows):
        out[k]["start"], out[k]["end"], out[k]["name"], out[k]["stack"] = a, b, name, -1
    return out


def line(*rows: tuple[int, int, int]) -> list[tuple[int, int]]:
    times, nodes = call_line(calls(*rows), lambda stack, name: 100 + name, ROOT)
    return list(zip(times.tolist(), nodes.tolist(), strict=True))


def test_a_line_enters_and_leaves_every_call() -> None:
    # A [10, 50) holds B [20, 30); C [60, 70) and D [70, 80) back to back; given in any order
    assert line((60, 70, 3), (20, 30, 2), (10, 50, 1), (70, 80, 4)) == [
        (10, 101), (20, 102), (30, 101), (50, ROOT), (60, 103), (70, 104), (80, ROOT)]
    # an inner call ending with its outer one returns to the root at once; one starting with it is inside it
    assert line((100, 120, 1), (110, 120, 2)) == [(100, 101), (110, 102), (120, ROOT)]
    assert line((100, 120, 1), (100, 105, 2)) == [(100, 102), (105, 101), (120, ROOT)]
    # an inner call that outlives its outer one (clock skew between APIs) ends with it
    assert line((0, 10, 1), (5, 15, 2), (20, 30, 3)) == [(0, 101), (5, 102), (10, ROOT), (20, 103), (30, ROOT)]
    assert line() == []


SOURCES = {
    "nsys-cloverleaf": "gpu-records/nvidia/nsys-2024.5-cloverleaf-4xa100/perlmutter-cloverleaf-cuda.sqlite",
    "rocpd-gemm": "gpu-records/amd/rocprofv3-rocpd-rocm7.1-mi300x-batched-gemm/21_results.db",
    "rocprofv3-csv": "fixtures:tiny-rocprofv3",
    "kineto-rocm": "gpu-records/amd/kineto-roctracer-rocm6.2-mi250/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
}


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_blame_names_cpu_code_on_vendor_data(name: str, shared_data: Path, tmp_path: Path) -> None:
    rel = SOURCES[name]
    src = FIXTURES / "ingest" / rel.split(":", 1)[1] if rel.startswith("fixtures:") else shared_data / rel
    if not src.exists():
        pytest.skip(f"{src} is absent")
    meas, db = tmp_path / "m", tmp_path / "d"
    run_cli("ingest", str(src), "-o", str(meas), check=True)
    run_cli("prof", str(meas), "-o", str(db), check=True)
    # every CPU profile's trace runs from its first call's start to its last call's end (header = line)
    tdb = open_database(db).trace
    start, end = tdb.line_bounds()
    ranges = sorted((int(h["trace-min-time"]), int(h["trace-max-time"])) for h in
                    (read_hpcrun(f, values=False).header for f in glob.glob(str(meas / "*.hpcrun")))
                    if int(h.get("trace-max-time", 0)) > 0)
    assert sorted(zip(start.tolist(), end.tolist(), strict=True)) == ranges
    doc = json.loads(run_cli("blame", str(db), "--format", "json", check=True).stdout)
    for g in doc["gpus"]:  # conservation: the idle time is blamed, all of it, nowhere twice
        assert sum(g["blame_s"].values()) + g["unattributed_blame_s"] == pytest.approx(g["idle_s"], rel=1e-9,
                                                                                     abs=1e-12)
    launch = [e["path"][-1] for e in doc["top"]["GPU IDLE BLAME:LAUNCH (sec)"]]
    assert any(n.startswith(("cuda", "hip")) for n in launch), launch  # the API calls, not only the root
    if name in ("nsys-cloverleaf", "rocpd-gemm"):  # the sync calls that left the GPU idle are named
        sync = doc["top"]["GPU IDLE BLAME:SYNC (sec)"]
        assert sync and sync[0]["path"][-1] in ("cudaDeviceSynchronize_v3020", "hipDeviceSynchronize")
        assert sum(g["blame_s"]["sync"] for g in doc["gpus"]) > 0
    if name == "nsys-cloverleaf":  # measured: 38.6 ms idle, of it 4.53 ms in sync, 15.3 ms in launch/copy
        (g,) = doc["gpus"]
        assert g["idle_s"] == pytest.approx(0.0386, abs=1e-4)
        assert g["blame_s"]["sync"] == pytest.approx(0.00453, abs=1e-5)
        assert g["blame_s"]["launch"] == pytest.approx(0.0153, abs=1e-4)
        # its CUDA template kernels: names of up to 2,896 characters read in at most 80, all still distinct
        full = list(open_database(db).meta.functions.names)
        short = ShortNames(full).short
        assert max(map(len, full)) > 2000 and max(map(len, short)) <= 80
        assert "clover::par_ranged2<256ul, PdV_kernel::{hd lambda#2}>" in short
        assert len(set(short)) == len(set(full))
