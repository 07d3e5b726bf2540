"""hpcsa struct killed with SIGKILL at random points never leaves a structure file that reads as complete."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, run_cli
from tests.killing import kill_repeatedly, leftovers


def _binary() -> Path:
    """A real library with enough code that a run takes a while (the project's fixture otherwise)."""
    lib = Path("/usr/lib/x86_64-linux-gnu/libgomp.so.1.0.0")
    return lib if lib.exists() else FIXTURES / "structure" / "sample.so"


def test_sigkill_leaves_no_partial_structure_file(tmp_path):
    binary = _binary()
    reference = tmp_path / "reference.hpcstruct"
    run_cli("struct", str(binary), "-o", str(reference), check=True)
    final = tmp_path / "killed.hpcstruct"

    def complete(path: Path) -> None:
        assert path.read_bytes() == reference.read_bytes()

    outcome = kill_repeatedly(["struct", str(binary), "-j", "2", "-o", str(final)], final, complete, seed=1)
    assert outcome["nothing"] > 0
    run_cli("struct", str(binary), "-o", str(final), check=True)
    complete(final)
    assert leftovers(tmp_path, "killed.hpcstruct") == []


def test_sigkill_during_measurement_directory_structuring(hpctoolkit_data, tmp_path):
    """Each structure file of a measurement directory appears whole or not at all."""
    src = hpctoolkit_data / "meas" / "recursion-cuda-nvidiapc-t.m"
    meas = tmp_path / "m"
    shutil.copytree(src, meas, ignore=shutil.ignore_patterns("structs"))
    ref = tmp_path / "ref"
    shutil.copytree(meas, ref)
    if run_cli("struct", str(ref)).returncode != 0:
        pytest.skip("hpcsa struct MEASDIR needs the GPU disassembler here")
    expected = {p.name: p.read_bytes() for p in (ref / "structs").iterdir() if not p.name.startswith(".")}
    final = meas / "structs"

    def complete(structs: Path) -> None:
        for p in structs.iterdir():
            if not p.name.startswith("."):
                assert p.read_bytes() == expected[p.name], p.name

    kill_repeatedly(["struct", str(meas)], final, complete, runs=10, seed=2)
    run_cli("struct", str(meas), check=True)
    assert {p.name: p.read_bytes() for p in final.iterdir() if not p.name.startswith(".")} == expected
