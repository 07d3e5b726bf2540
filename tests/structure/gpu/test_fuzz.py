"""Mutated cubins and AMD code objects: every one ends in a structure or one HpcsaError line.

Most cases skip the disassembler (a process per case would dominate the run); a few go through it,
so that a garbled listing or a disassembler that fails on the input degrades instead of crashing.
"""

from __future__ import annotations

from hpcsa.structure.gpu.amdgpu import build_amd_module
from hpcsa.structure.gpu.cubin import build_cubin_module
from tests.conftest import FIXTURES
from tests.fuzzing import EXAMPLES, fuzz_reader

CUBINS = sorted((FIXTURES / "gpu").glob("*.cubin"))
CODE_OBJECTS = sorted((FIXTURES / "gpu").glob("*.co"))


def test_fuzz_cubins_without_disassembly(tmp_path):
    counts = fuzz_reader(lambda p: build_cubin_module(p, disassemble=False), CUBINS, tmp_path, ".cubin")
    assert sum(counts.values()) == EXAMPLES


def test_fuzz_cubins_through_nvdisasm(tmp_path):
    counts = fuzz_reader(build_cubin_module, CUBINS, tmp_path, ".cubin", examples=4)
    assert sum(counts.values()) == 4


def test_fuzz_amd_code_objects(tmp_path):
    counts = fuzz_reader(lambda p: build_amd_module(p, disassemble=False), CODE_OBJECTS, tmp_path, ".co")
    assert sum(counts.values()) == EXAMPLES
    counts = fuzz_reader(build_amd_module, CODE_OBJECTS, tmp_path, ".co", examples=8)
    assert sum(counts.values()) == 8
