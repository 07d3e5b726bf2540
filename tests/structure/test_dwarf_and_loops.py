"""The hand-written readers against pyelftools, and the WMZC loop forest on graphs with known loops."""

from __future__ import annotations

import pytest
from elftools.elf.elffile import ELFFile

from hpcsa.core.demangle import demangle
from hpcsa.structure.debuginfo.dwarf import DebugInfo
from hpcsa.structure.debuginfo.inline import read_inlines
from hpcsa.structure.debuginfo.lines import read_program
from hpcsa.structure.debuginfo.source_info import DWARF_SECTIONS
from hpcsa.structure.elf import open_elf
from hpcsa.structure.loops import find_loops

BINARIES = ["inlines+loops-x86_64-gcc8-d", "inlines+loops-x86_64-gcc12-dr", "inlines+loops-x86_64-llvm15-dr",
            "recursion-x86_64-llvm7-0"]


def debug_info(path):
    im = open_elf(path)
    return DebugInfo({n: im.section_bytes(n) for n in DWARF_SECTIONS if im.section_named(n)})


@pytest.mark.parametrize("name", BINARIES)
def test_line_rows_equal_pyelftools(hpctoolkit_data, name):
    path = hpctoolkit_data / "bin" / name
    dw = debug_info(path)
    ours = []
    for unit in dw.units:
        prog = read_program(dw, unit.stmt_list, unit)
        ours += [(int(a), int(ln), bool(e), prog.files[f].rsplit("/", 1)[-1])
                 for a, f, ln, e in zip(prog.addr, prog.file, prog.line, prog.end_seq, strict=True)]
    with open(path, "rb") as fh:
        elf = ELFFile(fh)
        d = elf.get_dwarf_info()
        ref = []
        for cu in d.iter_CUs():
            lp = d.line_program_for_CU(cu)
            names = [e.name.decode() for e in lp["file_entry"]]
            base = 0 if lp["version"] >= 5 else 1
            for ent in lp.get_entries():
                st = ent.state
                if st is not None:
                    ref.append((st.address, st.line, st.end_sequence, names[st.file - base].rsplit("/", 1)[-1]))
    assert ours == ref


@pytest.mark.parametrize("name", BINARIES)
def test_inlined_subroutines_equal_pyelftools(hpctoolkit_data, name):
    path = hpctoolkit_data / "bin" / name
    dw = debug_info(path)
    files = {u.offset: read_program(dw, u.stmt_list, u).files for u in dw.units}
    table = read_inlines(dw, files, demangle)
    ours = sorted((int(lo), int(hi), table.chain(int(n))[-1][1:]) for lo, hi, n in
                  zip(table.lo, table.hi, table.node, strict=True))
    ref = []
    with open(path, "rb") as fh:
        d = ELFFile(fh).get_dwarf_info()
        for cu in d.iter_CUs():
            for die in cu.iter_DIEs():
                if die.tag != "DW_TAG_inlined_subroutine" or "DW_AT_low_pc" not in die.attributes:
                    continue
                lo = die.attributes["DW_AT_low_pc"].value
                hi = die.attributes["DW_AT_high_pc"].value
                hi = hi if die.attributes["DW_AT_high_pc"].form == "DW_FORM_addr" else lo + hi
                origin = die.get_DIE_from_attribute("DW_AT_abstract_origin")
                ref.append((lo, hi, (die.attributes["DW_AT_call_line"].value,
                                     origin.attributes["DW_AT_name"].value.decode())))
    assert ours == sorted(ref)


def test_natural_loops_nest():
    # 0 -> 1 -> 2 -> 3 -> 2 (inner), 3 -> 4 -> 1 (outer), 4 -> 5 (exit)
    succ = [[1], [2], [3], [2, 4], [1, 5], []]
    top, innermost = find_loops(succ, 0)
    assert [lp.header for lp in top] == [1]
    outer = top[0]
    assert outer.blocks == {1, 2, 3, 4} and not outer.irreducible
    assert [c.header for c in outer.children] == [2] and outer.children[0].blocks == {2, 3}
    assert innermost == [-1, 1, 2, 2, 1, -1]
    assert sorted(outer.back_edges) == [(4, 1)]


def test_irreducible_loop_has_two_entries():
    # 0 branches into both 1 and 2, which form a cycle: no block dominates the other
    succ = [[1, 2], [2], [1, 3], []]
    top, _ = find_loops(succ, 0)
    assert len(top) == 1
    assert top[0].entries == {1, 2} and top[0].irreducible and top[0].blocks == {1, 2}


def test_self_loop_and_no_loop():
    top, innermost = find_loops([[1], [1, 2], []], 0)
    assert [lp.header for lp in top] == [1] and top[0].blocks == {1}
    assert find_loops([[1, 2], [2], []], 0)[0] == []


def test_deep_nest_does_not_recurse():
    depth = 3000  # deeper than Python's recursion limit
    succ = [[i + 1] for i in range(depth)] + [[]]
    for i in range(1, depth // 2):
        succ[depth - i].append(i)  # back edge closing loop i
    top, _ = find_loops(succ, 0)
    n = 0
    lp = top[0]
    while lp.children:
        lp = lp.children[0]
        n += 1
    assert n == depth // 2 - 2
