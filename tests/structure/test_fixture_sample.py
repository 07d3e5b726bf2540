"""hpcsa struct on the project's own sample (fixtures/structure/sample.c, built by build.sh): the loops,
inlined calls and switch of the source are where the source says; runs without ../shared."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
from elftools.elf.elffile import ELFFile

from hpcsa.formats.hpcstruct.model import L, P, S
from hpcsa.formats.hpcstruct.writer import render
from hpcsa.structure.binary import analyze_binary
from tests.conftest import FIXTURES, run_cli

SAMPLE = FIXTURES / "structure" / "sample.so"


def procedure_name(m, row: int) -> str:
    return m.lexical_path(row)[0].name.split(" [")[0]


def test_procedures_are_the_symbols():
    m = analyze_binary(SAMPLE).module
    with open(SAMPLE, "rb") as fh:
        symtab = ELFFile(fh).get_section_by_name(".symtab")
        funcs = {s.name: s["st_value"] for s in symtab.iter_symbols()
                 if s["st_info"]["type"] == "STT_FUNC" and s["st_value"]}
    ours = {m.text(int(m.scopes["name"][r])).split(" [")[0]: m.ranges_of(int(r))[0][0]
            for r in np.flatnonzero(m.scopes["kind"] == P)}
    for name in ("nest", "dispatch", "fact", "checked", "checked.cold"):
        assert ours[name] == funcs[name]


def test_loops_sit_at_the_source_loops():
    m = analyze_binary(SAMPLE).module
    loops = defaultdict(set)
    for r in np.flatnonzero(m.scopes["kind"] == L):
        loops[procedure_name(m, int(r))].add(int(m.scopes["line"][r]))
    assert {9, 16, 17} <= loops["nest"]      # the inlined helper's loop is found inside nest
    assert loops["dispatch"] == {26}
    assert set().union(*loops.values()) <= {9, 16, 17, 26, 41}  # 41: gcc turns fact's recursion into a loop


def test_inlined_call_and_switch_cases():
    m = analyze_binary(SAMPLE).module
    leaves = np.flatnonzero(m.scopes["kind"] == S)
    inlined = set()
    in_loop_26 = set()
    for r in leaves:
        path = m.lexical_path(int(r))
        kinds = [(s.kind, s.relation, s.name, s.line) for s in path]
        if any(k[1] == "inlined_call" for k in kinds):
            call = next(k for k in kinds if k[1] == "inlined_call")
            callee = kinds[kinds.index(call) + 1]
            inlined.add((path[0].name.split(" [")[0], call[3], callee[2]))
        if path[0].name.startswith("dispatch") and any(s.kind == "loop" and s.line == 26 for s in path):
            in_loop_26.add(path[-1].line)
    assert ("nest", 19, "square_sum") in inlined
    # every case of the switch (lines 28-34) is reached through the jump table, inside the loop
    assert set(range(28, 35)) <= in_loop_26


def test_cli_on_the_fixture(tmp_path):
    proc = run_cli("struct", str(SAMPLE), "-o", str(tmp_path / "s.hpcstruct"), "-j", "2")
    assert proc.returncode == 0, proc.stderr
    one = "".join(render(analyze_binary(SAMPLE, lm_name=str(SAMPLE.resolve())).structure))
    assert (tmp_path / "s.hpcstruct").read_text() == one  # -j 2 writes what -j 1 builds
