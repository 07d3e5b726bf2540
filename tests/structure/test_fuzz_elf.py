"""Fuzzing `hpcsa struct` on x86-64 ELF input: mutated binaries give a structure or one error line."""

from __future__ import annotations

from hpcsa.structure.binary import analyze_binary
from tests.conftest import FIXTURES
from tests.fuzzing import fuzz_reader


def _analyze(path: str) -> None:
    analyze_binary(path)


def test_fuzz_fixture_binary(tmp_path):
    counts = fuzz_reader(_analyze, [FIXTURES / "structure" / "sample.so"], tmp_path, ".so")
    assert counts["error"] > 0 and counts["ok"] > 0  # some mutations stay analyzable, others are refused


def test_fuzz_real_binaries(hpctoolkit_data, tmp_path):
    names = ["inlines+loops-x86_64-gcc10-dr", "recursion-x86_64-llvm11-r", "inlines+loops-x86_64-gcc12-0"]
    sources = [hpctoolkit_data / "bin" / n for n in names if (hpctoolkit_data / "bin" / n).exists()]
    assert sources
    fuzz_reader(_analyze, sources, tmp_path, ".so")
