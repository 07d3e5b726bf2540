"""Rules of hpcstruct's parser (Dyninst) that decide procedures and names, pinned on the project's own g++
build (fixtures/structure/cxx/names.cpp) with expectations written by hand, and on libm, where real hpcstruct
goes wrong.

* gcc's ``.cold`` parts: ``main``'s exception landing pads jump into ``main.cold``; ParseAPI follows a call
  inside a try region to its landing pad (a CATCH edge) and those jumps, so the cold code reached so is
  ``main``'s, with ``main``'s scopes; ``main.cold`` keeps a procedure of its own for the rest, and its jump
  back into ``main`` is no tail call (no new procedure inside ``main``). A branch to the cold part's entry,
  conditional or not, is a tail call: code entered only so is the cold part's alone.
* names of template instantiations over a lambda: gcc gives them no ``DW_AT_linkage_name``; Dyninst's Symtab
  adds their ``DW_AT_name`` as a name of the function, and hpcstruct prints the longest name
  (hpcsa.structure.debuginfo.subprogram_names has the rule and its sources).
* libm: hpcstruct names the PLT stub of ``__stack_chk_fail`` after another function, so calls to it return,
  and the parse runs on from the end of one function into the next.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import capstone
import numpy as np
import pytest
from elftools.elf.elffile import ELFFile

from hpcsa.core.demangle import demangle
from hpcsa.formats.hpcstruct.model import L, Module, S
from hpcsa.structure.binary import analyze_binary
from hpcsa.structure.debuginfo.subprogram_names import procedure_names
from hpcsa.structure.elf import open_elf
from tests.conftest import FIXTURES
from tests.structure.measured import measured_library, plt_truth, procedures_of


@pytest.fixture(scope="module")
def names_gxx(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    if shutil.which("g++") is None:
        pytest.skip("g++ is not installed (Debian: apt-get install g++)")
    out = tmp_path_factory.mktemp("rules")
    made = {}
    for opt in ("-O0", "-O2"):
        path = out / f"names{opt}"
        subprocess.run(["sh", str(FIXTURES / "structure" / "cxx" / "build.sh"), "g++", opt, str(path)], check=True)
        made[opt] = path
    return made


def _symbols(path: Path) -> dict[str, tuple[int, int]]:
    """Function symbol name -> (address, size), read with pyelftools."""
    with open(path, "rb") as fh:
        return {s.name: (s["st_value"], s["st_size"]) for s in ELFFile(fh).get_section_by_name(".symtab").iter_symbols()
                if s["st_info"]["type"] == "STT_FUNC" and s["st_value"]}


def _owners(m: Module, addrs: list[int]) -> list[set[str]]:
    """The names of the procedures with a statement holding each address (code two functions share is in
    both)."""
    out: list[set[str]] = [set() for _ in addrs]
    kinds = m.scopes["kind"]
    for lo, hi, row in m.ranges.tolist():
        if kinds[row] != S:
            continue
        name = m.text(int(m.scopes["name"][int(m.procedure_of[row])])) or ""
        for i, a in enumerate(addrs):
            if lo <= a < hi:
                out[i].add(name)
    return out


def _jumps_into(path: Path, lo: int, hi: int, into: tuple[int, int]) -> list[tuple[str, int]]:
    """(mnemonic, target) of the direct jumps of [lo, hi) that land in ``into``, decoded with capstone."""
    image = open_elf(path)
    md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    out = []
    for _a, _s, mnem, ops in md.disasm_lite(image.read(lo, hi - lo), lo):
        if mnem.startswith("j") and ops.startswith("0x") and into[0] <= int(ops, 16) < into[1]:
            out.append((mnem, int(ops, 16)))
    return out


PARSE = "_ZN12_GLOBAL__N_113checked_parseERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE"


def _cold(path: Path, parent: str) -> tuple[tuple[int, int], tuple[int, int], list[int]]:
    """(parent's address and size, its cold part's, the cold part's instruction addresses)."""
    syms = _symbols(path)
    if f"{parent}.cold" not in syms:
        pytest.skip(f"this g++ made no {parent}.cold")
    cold, size = syms[f"{parent}.cold"]
    md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    return syms[parent], (cold, size), [a for a, *_ in md.disasm_lite(open_elf(path).read(cold, size), cold)]


def test_cold_part_the_parents_landing_pads_jump_into_is_the_parents(names_gxx: dict[str, Path]) -> None:
    """``main``'s landing pads jump into the middle of ``main.cold``: nothing tore the frame down before
    those jumps, so they are no tail calls and that code is ``main``'s too (its jump to ``main.cold``'s entry
    is a tail call to the procedure there, unless ``main.cold`` itself reaches the jump: then the edge is
    ``main.cold``'s own and all of ``main.cold`` is ``main``'s, real hpcstruct's cxx-gcc-O2, compared by
    test_struct_agreement.py). ``main.cold`` jumps back into ``main``'s middle: no new procedure there."""
    path = names_gxx["-O2"]
    (start, size), (cold, cold_size), insns = _cold(path, "main")
    m = analyze_binary(path).module
    procs = procedures_of(m)
    assert procs.get(cold) == "main.cold"  # the cold part keeps its procedure
    targets = [t for _mnem, t in _jumps_into(path, start, start + size, (cold, cold + cold_size)) if t != cold]
    assert targets and all("main" in owners for owners in _owners(m, targets))
    assert set().union(*_owners(m, insns)) <= {"main", "main.cold"}
    assert [hex(e) for e in procs if start < e < start + size] == []


def test_cold_part_entered_by_a_conditional_branch_is_its_own(names_gxx: dict[str, Path]) -> None:
    """``checked_parse`` enters its cold part by a conditional branch to its entry: ParseAPI takes a taken
    conditional edge to another function's entry for a tail call as it takes a jump (``IA_x86::isTailCall``),
    so the cold part's code is the cold part's procedure's alone (real hpcstruct's cxx-gcc-O2 has the same
    for ``checked_sqrt(double) [clone .cold]``)."""
    path = names_gxx["-O2"]
    (start, size), (cold, cold_size), insns = _cold(path, PARSE)
    jumps = _jumps_into(path, start, start + size, (cold, cold + cold_size))
    assert jumps and all(mnem != "jmp" and t == cold for mnem, t in jumps)  # the shape described above
    m = analyze_binary(path).module
    assert procedures_of(m).get(cold) == demangle(f"{PARSE}.cold")
    assert set().union(*_owners(m, insns)) == {demangle(f"{PARSE}.cold")}


def test_lambda_instantiations_named_by_dwarf_where_that_name_is_longer(names_gxx: dict[str, Path]) -> None:
    lam = "__gnu_cxx::__ops::_Iter_comp_iter<main(int, char**)::<lambda(double, double)> >"
    vec = "__gnu_cxx::__normal_iterator<double*, std::vector<double> >"
    # -O2: the sort helpers std::sort instantiates over main's comparison lambda (gcc's DW_AT_name text)
    procs = analyze_binary(names_gxx["-O2"]).module
    names = {procs.text(int(procs.scopes["name"][r])): procs.text(int(procs.scopes["link"][r]))
             for r in procs.procedures["scope"].tolist()}
    for want in (f"__adjust_heap<{vec}, long int, double, {lam} >", f"__insertion_sort<{vec}, {lam} >",
                 f"__introsort_loop<{vec}, long int, {lam} >"):
        assert want in names and names[want] is None, want  # no `ln`: the name is the link name
    # -O0: std::move over the lambda keeps its symbol (its DWARF name, move<...>, is the shorter)
    o0 = procedures_of(analyze_binary(names_gxx["-O0"]).module).values()
    assert "std::move<main::{lambda(double, double)#1}&>(main::{lambda(double, double)#1}&)" in o0
    assert f"sort<{vec}, main(int, char**)::<lambda(double, double)> >" in o0


def test_dyninst_naming_rule_by_hand() -> None:
    ident = str
    # a linkage name is added unless a symbol name contains it; then the longest name wins
    assert procedure_names(["_Z1fv"], ("_Z1fv", True), ident) == ("_Z1fv", "_Z1fv")
    assert procedure_names(["f.cold"], ("f", False), ident) == ("f.cold", "f.cold")  # substring: skipped
    assert procedure_names(["_Z3abcv"], ("abc<lambda()>", False), ident) == ("abc<lambda()>", "abc<lambda()>")
    assert procedure_names(["_Z3abcvvv"], ("abc<x>", False), ident) == ("_Z3abcvvv", "_Z3abcvvv")
    # a plain name found in a demangled symbol name is not added
    assert procedure_names(["_Z1gv"], ("g()", False), lambda s: "g()" if s == "_Z1gv" else s) == ("_Z1gv", "g()")
    # equal lengths: the alphabetically lower
    assert procedure_names(["bbbb"], ("aaaa", False), ident)[0] == "aaaa"


def test_libm_loops_hpcstruct_puts_into_cosf128_are_erfcf128s(shared_data: Path) -> None:
    """Hand-checked with objdump on Debian 12's libm: ``__cosf128`` is 376 bytes at 0x550e0; its backward
    jumps all go to 0x5513d, from where every path ends in its ``ret`` (0x55155) or in its last
    instruction, 0x55253, a call of the PLT stub at 0x10090, whose GOT slot's relocation names
    ``__stack_chk_fail``: it has no loop. Real hpcstruct names that stub ``fputs@plt`` (the relocation at
    its position in ``.rela.plt``), parses on past the call into ``__erfcf128`` (0x55260) and gives
    ``__cosf128`` the 32 loops of ``__erfcf128``; hpcsa gives them to ``__erfcf128``. The same happens to
    __j0f128_finite (143 loops by hpcstruct, 34 its own), __ynf128_finite and others: most of libm's
    difference in loops."""
    ref = measured_library(shared_data, "libm.so.6")
    cos, erfc = 0x550E0, 0x55260
    lib = ref.path
    ours = analyze_binary(lib, lm_name=lib).module
    theirs = procedures_of(ref)
    if procedures_of(ours).get(cos) != theirs.get(cos) or theirs.get(cos) != "__cosf128 [libm.so.6]":
        pytest.skip(f"{lib} is another build than the measured one")
    assert plt_truth(lib)[0x10090] == "__stack_chk_fail" and theirs[0x10090] == "fputs@plt [libm.so.6]"

    def loops_of(m: Module, entry: int) -> list[int]:
        rows = np.flatnonzero(m.scopes["kind"] == L)
        proc = m.procedure_at(entry)
        return sorted(m.ranges_of(int(r))[0][0] for r in rows if int(m.procedure_of[r]) == proc)

    in_ref = loops_of(ref, cos)
    assert len(in_ref) == 32 and all(erfc <= a < erfc + 3782 for a in in_ref)
    assert loops_of(ours, cos) == [] and set(in_ref) <= set(loops_of(ours, erfc))
