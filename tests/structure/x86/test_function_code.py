"""Instruction runs filed in another process (hpcsa.structure.x86.function_code): what is sent each way packs
64-bit columns into 32 bits where they fit and comes back with the same values and dtypes."""

from __future__ import annotations

import pickle

import numpy as np

from hpcsa.core.demangle import demangle
from hpcsa.structure.debuginfo.source_info import read_source_info
from hpcsa.structure.elf import open_elf
from hpcsa.structure.x86 import function_code
from hpcsa.structure.x86.function_code import InstructionRuns
from hpcsa.structure.x86.functions import discover_functions
from tests.conftest import FIXTURES

SAMPLE = FIXTURES / "structure" / "sample.so"


def test_pack_keeps_values_and_dtype():
    for a in (np.array([0x420F00, 0x420F05, 0x4BCF2E], np.uint64), np.array([], np.int64),
              np.array([-3, 7, 1 << 31], np.int64), np.array([5], np.int32)):
        dtype, low, values = function_code._pack(a)
        assert values.dtype == np.uint32
        back = function_code._unpack((dtype, low, values))
        assert back.dtype == a.dtype and np.array_equal(back, a)


def test_pack_leaves_a_span_over_32_bits_as_it_is():
    a = np.array([1, 1 << 33], np.uint64)
    dtype, low, values = function_code._pack(a)
    assert values is a and low == 0
    assert np.array_equal(function_code._unpack((dtype, low, values)), a)


def test_runs_filed_elsewhere_are_the_runs_filed_here():
    image = open_elf(str(SAMPLE))
    source = read_source_info(image, demangle)
    code, funcs, _ = discover_functions(image)
    here = InstructionRuns(code, funcs.cfg, source)
    needs = pickle.loads(pickle.dumps(InstructionRuns.needs(code, funcs.cfg)))  # as sent through a pipe
    sent = pickle.dumps(InstructionRuns.filed(*needs, source))  # and sent back, packed
    assert len(sent) < len(pickle.dumps(dict(vars(here))))  # the same columns, unpacked
    there = pickle.loads(sent)
    assert len(here.vma) > 10
    assert vars(here).keys() == vars(there).keys()
    for name, column in vars(here).items():
        assert vars(there)[name].dtype == column.dtype, name
        assert np.array_equal(vars(there)[name], column), name
