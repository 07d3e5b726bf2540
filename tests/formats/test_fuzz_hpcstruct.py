"""Fuzzing the .hpcstruct reader from real structure files (issue 8)."""

from __future__ import annotations

from hpcsa.formats.hpcstruct.reader import read_hpcstruct
from tests.fuzzing import fuzz_reader


def _read_and_query(path: str) -> None:
    """Read, then exercise the queries the aggregation makes (address lookup, lexical paths, calls)."""
    sf = read_hpcstruct(path)
    for module in sf.modules:
        leaves = module.lookup(module.ranges["lo"][:50])
        for leaf in leaves[:20]:
            if leaf >= 0:
                module.lexical_path(int(leaf))
        _ = module.procedures, module.call_sites


def test_fuzz_hpcstruct(hpctoolkit_data, tmp_path):
    names = ["recursion-sm_75-nvcc112-0+gpucfg.hpcstruct", "inlines+loops-x86_64-gcc10-dr.hpcstruct",
             "inlines+loops-x86_64-clang15-d.hpcstruct"]
    sources = [hpctoolkit_data / "struct" / n for n in names if (hpctoolkit_data / "struct" / n).exists()]
    sources += sorted((hpctoolkit_data / "meas" / "small.m" / "structs").glob("*.hpcstruct"))
    counts = fuzz_reader(_read_and_query, sources, tmp_path, ".hpcstruct")
    assert counts["error"] > 0
