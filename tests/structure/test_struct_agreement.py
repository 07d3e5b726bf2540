"""hpcsa struct against real hpcstruct on the 48 x86-64 test binaries (issue 4's judge).

Per binary: procedures (entry + name), statements (instruction addresses with the same file:line and
the same chain of procedure / inline / loop scopes) and loops (same nesting and header line; header
address where the binary has no line information). Required: >= 99%, >= 95%, >= 90% on every binary.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from hpcsa.formats.hpcstruct.compare import HEADER, compare
from hpcsa.formats.hpcstruct.model import L, P, S, StructureFile
from hpcsa.formats.hpcstruct.reader import read_hpcstruct
from hpcsa.formats.hpcstruct.writer import render
from hpcsa.structure.binary import analyze_binary
from hpcsa.structure.elf import open_elf
from tests.structure.measured import measured_library


def x86_binaries(hpctoolkit: Path) -> list[Path]:
    return sorted(p for p in (hpctoolkit / "bin").glob("*-x86_64-*") if not p.name.endswith(".license"))


def test_agreement_with_hpcstruct_on_every_binary(hpctoolkit_data, capsys):
    bins = x86_binaries(hpctoolkit_data)
    assert len(bins) == 48
    rows = []
    failures = []
    totals = np.zeros(3)
    for b in bins:
        ref = read_hpcstruct(hpctoolkit_data / "struct" / f"{b.name}.hpcstruct").modules[0]
        ours = analyze_binary(b, lm_name=ref.path).module
        a = compare(ref, ours, open_elf(b).read)
        rows.append(a.row(b.name))
        totals += (a.procedures, a.statements, a.loops)
        if a.procedures < 0.99 or a.statements < 0.95 or a.loops < 0.90:
            failures.append(a.row(b.name))
    mean = totals / len(bins)
    with capsys.disabled():
        print("\n" + HEADER + "\n" + "\n".join(rows))
        print(f"{'mean over 48 binaries':<34} {100 * mean[0]:7.2f} {100 * mean[1]:7.2f} {100 * mean[2]:7.2f}")
    assert not failures, "\n".join(failures)


def test_most_outputs_are_hpcstructs_own_text(hpctoolkit_data):
    """Stronger than the scores: element for element the same file (ids, order, attributes), except where
    hpcstruct's Dyninst misreads DWARF 5 implicit-constant call files (the three gcc12 inlines+loops)."""
    identical = []
    for b in x86_binaries(hpctoolkit_data):
        ref_text = (hpctoolkit_data / "struct" / f"{b.name}.hpcstruct").read_text()
        ref = read_hpcstruct(hpctoolkit_data / "struct" / f"{b.name}.hpcstruct").modules[0]
        ours = analyze_binary(b, lm_name=ref.path).structure
        text = "".join(render(ours))
        if text[text.index("<HPCToolkitStructure "):] == ref_text[ref_text.index("<HPCToolkitStructure "):]:
            identical.append(b.name)
    assert len(identical) >= 45, sorted(set(p.name for p in x86_binaries(hpctoolkit_data)) - set(identical))


def test_inline_call_site_read_correctly_where_hpcstruct_loses_it(hpctoolkit_data):
    """gcc 12 writes DW_AT_call_file as DW_FORM_implicit_const; hpcstruct reports <unknown>:0 there, we
    report the call site the DWARF gives (f4_1 calls f4_inline at line 54, f4_2 at line 60)."""
    b = hpctoolkit_data / "bin" / "inlines+loops-x86_64-gcc12-dr"
    m = analyze_binary(b).module
    calls = sorted({(s.file, s.line) for r in np.flatnonzero(m.scopes["kind"] == S)
                    for s in m.lexical_path(int(r)) if s.relation == "inlined_call"})
    assert calls == [("/src/inlines+loops.c", 54), ("/src/inlines+loops.c", 60)]


def test_comparison_notices_differences(hpctoolkit_data):
    """The judge can fail: a moved line, a lost loop and a renamed procedure each lower their score."""
    b = hpctoolkit_data / "bin" / "inlines+loops-x86_64-gcc10-dr"
    ref = read_hpcstruct(hpctoolkit_data / "struct" / f"{b.name}.hpcstruct").modules[0]
    read = open_elf(b).read
    assert compare(ref, ref, read).statements == 1.0

    moved = dataclasses.replace(ref, scopes=ref.scopes.copy())
    first_s = int(np.flatnonzero(moved.scopes["kind"] == S)[0])
    moved.scopes["line"][first_s] += 1
    assert compare(ref, moved, read).statements < 1.0

    no_loop = dataclasses.replace(ref, scopes=ref.scopes.copy())
    no_loop.scopes["line"][int(np.flatnonzero(no_loop.scopes["kind"] == L)[0])] = 999
    assert compare(ref, no_loop, read).loops < 1.0

    renamed = dataclasses.replace(ref, strings=list(ref.strings))
    i = renamed.strings.index("f1 [inlines+loops-x86_64-gcc10-dr]")
    renamed.strings[i] = "g1"
    assert compare(ref, renamed, read).procedures < 1.0


@pytest.mark.parametrize("name", ["inlines+loops-x86_64-gcc10-r", "inlines+loops-x86_64-llvm15-0"])
def test_deterministic(hpctoolkit_data, name):
    a = analyze_binary(hpctoolkit_data / "bin" / name).structure
    b = analyze_binary(hpctoolkit_data / "bin" / name).structure
    assert "".join(render(a)) == "".join(render(b))
    assert isinstance(a, StructureFile)


# hpctoolkit-extra (real hpcstruct on C++ and computed-goto programs): per binary the least share of
# procedures, statements and loops that must agree (measured: the vm-* outputs are hpcstruct's own text).
# gcc's C++ needed three of Dyninst's rules (tests/structure/test_dyninst_rules.py): template instantiations
# over a lambda named by their DWARF name where it is the longer, calls in try regions reaching their landing
# pads (and through them main.cold, which reaches main's own: main.cold's own procedure keeps what main
# does not reach), and a jump into another function's middle being no tail call without a frame teardown.
# What still differs on cxx-gcc-O2 (0.6 % of its instructions): lines of landing-pad code.
EXTRA_MIN = {
    "cxx-clang-O2": (1.0, 1.0, 1.0),
    "cxx-gcc-O0": (1.0, 1.0, 1.0),
    "cxx-gcc-O2": (1.0, 0.99, 1.0),
    "libvm-gcc-O2.so": (1.0, 1.0, 1.0),
    "vm-clang-O2": (1.0, 1.0, 1.0),
    "vm-gcc-O2": (1.0, 1.0, 1.0),
    "vm-gcc-O3-nopie": (1.0, 1.0, 1.0),
}


def test_agreement_on_cxx_and_computed_goto_binaries(shared_data, capsys):
    extra = shared_data / "hpctoolkit-extra"
    if not (extra / "bin").is_dir():
        pytest.skip(f"{extra}/bin is absent (real hpcstruct outputs for C++ and computed-goto programs)")
    rows, failures = [], []
    for name, minimum in EXTRA_MIN.items():
        b = extra / "bin" / name
        ref = read_hpcstruct(extra / "struct" / f"{name}.hpcstruct").modules[0]
        ours = analyze_binary(b, lm_name=ref.path).module
        # The data set's path rewrite (same-length, in the binaries and in hpcstruct's text) left clang's
        # DWARF 5 line-table directory `/tmp` + file `extra-src/...` where hpcstruct's text says
        # `/opt/extra-src/...`: the same file, named as hpcstruct named it before the rewrite.
        ours = dataclasses.replace(ours, strings=[s.replace("/tmp/extra-src/", "/opt/extra-src/") if s else s
                                                  for s in ours.strings])
        a = compare(ref, ours, open_elf(b).read)
        rows.append(a.row(name))
        if any(got < want for got, want in zip((a.procedures, a.statements, a.loops), minimum, strict=True)):
            failures.append(a.row(name))
    with capsys.disabled():
        print("\n" + HEADER + "\n" + "\n".join(rows))
    assert not failures, "\n".join(failures)


def _loop_paths(m, proc: str) -> tuple[int | None, list[tuple[int, ...]]]:
    """The entry of procedure ``proc`` and, per loop of it, the header addresses of its enclosing loops and
    its own (outermost first)."""
    sc = m.scopes
    entry, out = None, []
    for row in range(len(sc)):
        if int(sc["kind"][row]) == P and m.text(int(sc["name"][row])) == proc:
            entry = m.ranges_of(row)[0][0]
        if int(sc["kind"][row]) != L or m.text(int(sc["name"][int(m.procedure_of[row])])) != proc:
            continue
        path, r = [], row
        while r >= 0 and int(sc["kind"][r]) != P:
            if int(sc["kind"][r]) == L:
                path.append(m.ranges_of(r)[0][0])
            r = int(sc["parent"][r])
        out.append(tuple(reversed(path)))
    return entry, sorted(out)


# Procedures of system libraries (no line information) whose irreducible loops nest differently when the
# loop search visits a conditional branch's taken target before its fall-through (ParseAPI's order is the
# fall-through first): with the other order each has a loop too many or too few against real hpcstruct.
SYSTEM_LIBRARY_LOOPS = {
    "libgomp.so.1.0.0": ["GOMP_taskgroup_end"],
    "libstdc++.so.6.0.30": ["std::basic_istream<char, std::char_traits<char> >::ignore(long)",
                            "std::basic_istream<char, std::char_traits<char> >::ignore(long, int)",
                            "<unknown procedure> 0x183650"],
}


@pytest.mark.parametrize("library", sorted(SYSTEM_LIBRARY_LOOPS))
def test_irreducible_loops_nest_as_in_hpcstruct_on_system_libraries(shared_data, library):
    ref = measured_library(shared_data, library)
    ours = analyze_binary(ref.path, lm_name=ref.path).module
    for proc in SYSTEM_LIBRARY_LOOPS[library]:
        name = f"{proc} [{library}]"
        ref_entry, ref_loops = _loop_paths(ref, name)
        entry, loops = _loop_paths(ours, name)
        if entry != ref_entry:
            pytest.skip(f"{ref.path} is another build than the measured one ({name} at {entry}, not {ref_entry})")
        assert len(ref_loops) >= 2 and loops == ref_loops, name
