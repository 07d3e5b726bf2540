"""hpcsa ingest killed with SIGKILL at random points never leaves a measurement directory that reads as
complete; a rerun succeeds and clears what the killed runs left."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.conftest import FIXTURES, run_cli
from tests.killing import kill_at, kill_repeatedly, leftovers, run_to_completion


def _contents(meas: Path) -> dict[str, bytes]:
    return {str(p.relative_to(meas)): p.read_bytes() for p in sorted(meas.rglob("*")) if p.is_file()}


def _check(args: list[str], tmp_path: Path, runs: int, seed: int) -> dict[str, int]:
    reference = tmp_path / "reference.m"
    run_cli(*args, "-o", str(reference), check=True)
    expected = _contents(reference)
    final = tmp_path / "killed.m"

    def complete(meas: Path) -> None:
        assert _contents(meas) == expected

    outcome = kill_repeatedly([*args, "-o", str(final)], final, complete, runs=runs, seed=seed)
    assert outcome["nothing"] > 0
    run_cli(*args, "-o", str(final), check=True)
    complete(final)
    assert leftovers(tmp_path, "killed.m") == []
    return outcome


def test_sigkill_during_ingest_of_a_large_export(shared_data: Path, tmp_path: Path) -> None:
    """23,419 kernels and 5,105 copies of a real Nsight Systems export (about a second of work)."""
    src = shared_data / "gpu-records" / "nvidia" / "nsys-2023.1-rtx3060-23k-kernels" / "report1.sqlite"
    _check(["ingest", str(src)], tmp_path, runs=20, seed=3)


def test_sigkill_during_ingest_with_compressed_binary(tmp_path: Path) -> None:
    """The project's fixtures, GPU code decompressed into gpubins/ on the way."""
    src = tmp_path / "run.sqlite"
    shutil.copy(FIXTURES / "ingest" / "tiny-nsys.sqlite", src)
    import sqlite3

    con = sqlite3.connect(src)
    con.execute("UPDATE StringIds SET value = '_Z12kernel_callsPii' WHERE value = '_Z5saxpyifPfS_'")
    con.commit()
    con.close()
    _check(["ingest", str(src), "--binary", str(FIXTURES / "gpu" / "libcallgraph-cuda.so")], tmp_path, runs=10,
           seed=4)


def test_sigkill_while_replacing_a_measurement(tmp_path: Path) -> None:
    """Writing over an existing measurement: after a kill, the name holds the old or the new one, whole."""
    args = ["ingest", str(FIXTURES / "ingest" / "tiny-nsys.sqlite")]
    reference = tmp_path / "reference.m"
    run_cli(*args, "-o", str(reference), check=True)
    expected = _contents(reference)
    final = tmp_path / "killed.m"
    duration = run_to_completion([*args, "-o", str(final)])
    for i in range(8):
        kill_at([*args, "-o", str(final)], 0.02 + duration * i / 8)
        if final.exists():
            assert _contents(final) == expected
        else:
            shutil.copytree(reference, final)
    run_cli(*args, "-o", str(final), check=True)
    assert _contents(final) == expected
    assert leftovers(tmp_path, "killed.m") == []
