"""Fuzzing the .hpcrun and .hpctrace readers from real files (issue 8's contract)."""

from __future__ import annotations

from hpcsa.formats.measurement.hpcrun import read_hpcrun
from hpcsa.formats.measurement.hpctrace import read_hpctrace
from tests.fuzzing import fuzz_reader


def _read_all(path: str) -> None:
    prof = read_hpcrun(path)
    prof.value_floats()
    prof.value_nodes()


def test_fuzz_hpcrun(hpctoolkit_data, tmp_path):
    sources = sorted((hpctoolkit_data / "meas").rglob("*.hpcrun"))
    counts = fuzz_reader(_read_all, sources, tmp_path, ".hpcrun")
    assert counts["error"] > 0  # the mutations really do break files


def test_fuzz_hpctrace(hpctoolkit_data, tmp_path):
    sources = [p for p in sorted((hpctoolkit_data / "meas").rglob("*.hpctrace")) if p.stat().st_size > 32]
    counts = fuzz_reader(read_hpctrace, sources, tmp_path, ".hpctrace")
    assert counts["error"] > 0
