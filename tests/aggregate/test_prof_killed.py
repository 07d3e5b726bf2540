"""hpcsa prof killed with SIGKILL at random points never leaves a database that reads as complete."""

from __future__ import annotations

from pathlib import Path

from hpcsa.formats.db.compare import compare_databases
from tests.conftest import run_cli
from tests.killing import kill_repeatedly, leftovers


def test_sigkill_leaves_no_partial_database(hpctoolkit_data, tmp_path):
    meas = hpctoolkit_data / "meas" / "loops-cputime-t.m"
    reference = tmp_path / "reference.d"
    run_cli("prof", str(meas), "-o", str(reference), check=True)
    final = tmp_path / "killed.d"

    def complete(db: Path) -> None:
        assert compare_databases(str(reference), str(db)).same

    outcome = kill_repeatedly(["prof", str(meas), "-j", "2", "-o", str(final)], final, complete)
    assert outcome["nothing"] > 0  # most kills land before the rename
    # A rerun succeeds and clears what the killed runs left behind.
    run_cli("prof", str(meas), "-j", "2", "-o", str(final), check=True)
    complete(final)
    assert leftovers(tmp_path, "killed.d") == []
