"""Paths recorded inside a measurement never make hpcsa write outside the directories it was given."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

from hpcsa.formats.measurement.hpcrun import LoadModule, read_hpcrun, write_hpcrun
from tests.conftest import FIXTURES, run_cli


def _snapshot(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def test_traversing_load_module_paths_stay_inside(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    meas = work / "m"
    shutil.copytree(FIXTURES / "measurements" / "tiny.m", meas)
    # A binary that exists, named through "..", and a gpubin path that tries to climb out.
    victim_dir = tmp_path / "outside"
    victim_dir.mkdir()
    shutil.copy(FIXTURES / "structure" / "sample.so", victim_dir / "sample.so")
    evil = [LoadModule(1, f"{meas}/../../outside/sample.so", 1),
            LoadModule(2, "gpubins/../../../outside/evil.gpubin", 0),
            LoadModule(3, "../../../../../../../../tmp/hpcsa-evil/x.so", 1)]
    for f in meas.glob("*.hpcrun"):
        prof = read_hpcrun(f)
        prof.loadmap = evil
        prof.cct = np.array(prof.cct)
        write_hpcrun(f, prof)
    before_outside = _snapshot(tmp_path)
    run_cli("struct", str(meas))
    run_cli("prof", str(meas), "-o", str(work / "db"))
    created = _snapshot(tmp_path) - before_outside
    assert all(name.startswith("work/") for name in created), sorted(created)
    assert not Path("/tmp/hpcsa-evil").exists()
    assert sorted(p.name for p in (victim_dir).iterdir()) == ["sample.so"]
