"""Stripped x86-64 binaries, judged by address against their unstripped twins (issue 46).

Stripping removes ``.symtab`` and the debug sections and moves no code, so the twin says where every
procedure starts and where every loop is. Two sets of twins:

* the stripped copies of ``hpctoolkit-extra`` (``stripped/bin``), against real hpcstruct's structure files of
  the unstripped binaries (``struct/``); real hpcstruct itself finds one procedure in each stripped copy;
* the project's own fixtures (fixtures/structure: the bytecode interpreter as PIE, non-PIE executable and
  shared library, the C++ naming program at -O0 and -O2; gcc and clang), built and stripped here: procedure
  entries against the twin's symbol table and PLT stubs (read with pyelftools and capstone), loops against
  the loops found in the twin.

Required: entries and loops (enclosing entry, address) at >= 98 % recall and precision. Stripped procedures
are named as hpcstruct names code without a symbol, ``targ<hex>``; PLT stubs, exported functions and
``_start`` keep their names.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from hpcsa.formats.hpcstruct.compare import address_agreement, loop_addresses
from hpcsa.formats.hpcstruct.model import L, Module, P
from hpcsa.formats.hpcstruct.reader import read_hpcstruct
from hpcsa.structure.binary import analyze_binary
from tests.conftest import FIXTURES
from tests.structure.measured import plt_got_truth, plt_truth, procedures_of

EXTRA = ["cxx-clang-O2", "cxx-gcc-O2", "libvm-gcc-O2.so", "vm-clang-O2", "vm-gcc-O2", "vm-gcc-O3-nopie"]
INTERP = [(cc, kind) for cc in ("gcc", "clang-14") for kind in ("pie", "nopie", "shared")]
CXX = [(cxx, opt) for cxx in ("g++", "clang++-14") for opt in ("-O0", "-O2")]
MINIMUM = 0.98


def _extra(shared_data: Path) -> Path:
    extra = shared_data / "hpctoolkit-extra"
    if not (extra / "stripped" / "bin").is_dir():
        pytest.skip(f"{extra}/stripped is absent (stripped copies and real hpcstruct's output for them)")
    return extra


@pytest.mark.parametrize("name", EXTRA)
def test_stripped_copies_against_real_hpcstruct_of_the_twin(shared_data: Path, name: str) -> None:
    extra = _extra(shared_data)
    twin = read_hpcstruct(extra / "struct" / f"{name}.hpcstruct").modules[0]
    theirs = read_hpcstruct(extra / "stripped" / "struct" / f"{name}-stripped.hpcstruct").modules[0]
    ours = analyze_binary(extra / "stripped" / "bin" / f"{name}-stripped").module
    a = address_agreement(twin, ours)
    assert min(a.entry_recall, a.entry_precision) >= MINIMUM, (a.missed_entries, a.extra_entries)
    assert min(a.loop_recall, a.loop_precision) >= MINIMUM, (a.missed_loops, a.extra_loops)
    assert theirs.count(P) == 1  # what real hpcstruct makes of the same file: `_start` alone
    _names_as_hpcstruct_names_them(ours, extra / "stripped" / "bin" / f"{name}-stripped")


def _symbol_entries(path: Path) -> set[int]:
    """Every defined function symbol's address in a code section, every PLT stub: the twin's procedures."""
    with open(path, "rb") as fh:
        elf = ELFFile(fh)
        code = {i for i, s in enumerate(elf.iter_sections()) if s["sh_flags"] & 0x4}
        out = {s["st_value"] for s in elf.get_section_by_name(".symtab").iter_symbols()
               if s["st_info"]["type"] in ("STT_FUNC", "STT_GNU_IFUNC") and isinstance(s["st_shndx"], int)
               and s["st_shndx"] in code and s["st_value"]}
    return out | set(plt_truth(str(path))) | set(plt_got_truth(str(path)))


def _names_as_hpcstruct_names_them(m: Module, path: Path) -> None:
    """Each procedure of a stripped binary: a PLT stub (``...@plt``), an exported function (its dynamic
    symbol's name), ``_start`` at the entry point, or code without a symbol, named as hpcstruct names it:
    ``targ<its entry in hex>``, or ``<unknown procedure> 0x<hex>`` where an exported function starts before
    it in its section (Dyninst's Symtab then takes the code for part of that function)."""
    with open(path, "rb") as fh:
        elf = ELFFile(fh)
        sections = [(s["sh_addr"], s["sh_addr"] + s["sh_size"]) for s in elf.iter_sections()]
        exported = {s["st_value"]: s["st_shndx"] for s in elf.get_section_by_name(".dynsym").iter_symbols()
                    if s["st_info"]["type"] == "STT_FUNC" and s["st_value"]}
        start = elf.header["e_entry"]
    suffix = "" if elf_is_executable(path) else f" [{path.name}]"

    def follows_exported(entry: int) -> bool:
        return any(a < entry and sections[i][0] <= entry < sections[i][1] for a, i in exported.items())

    for entry, name in procedures_of(m).items():
        name = name.removesuffix(suffix)
        if name.endswith("@plt") or entry in exported or (entry == start and name == "_start"):
            continue
        want = f"<unknown procedure> 0x{entry:x}" if follows_exported(entry) else f"targ{entry:x}"
        assert name == want, (hex(entry), name)


def elf_is_executable(path: Path) -> bool:
    with open(path, "rb") as fh:
        elf = ELFFile(fh)
        return elf.header["e_type"] == "ET_EXEC" or any(s["p_type"] == "PT_INTERP" for s in elf.iter_segments())


@pytest.fixture(scope="module")
def fixtures_built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every variant whose compiler is installed, unstripped (``name``) and stripped (``name-stripped``)."""
    if shutil.which("strip") is None:
        pytest.skip("GNU strip (binutils) is not installed")
    out = tmp_path_factory.mktemp("stripped")
    made = {}
    for cc, kind in INTERP:
        if shutil.which(cc):
            path = out / f"bytevm-{cc}-{kind}"
            subprocess.run(["sh", str(FIXTURES / "structure" / "interp" / "build.sh"), cc, "-O2", kind, str(path)],
                           check=True)
            made[path.name] = path
    for cxx, opt in CXX:
        if shutil.which(cxx):
            path = out / f"names-{cxx}{opt}"
            subprocess.run(["sh", str(FIXTURES / "structure" / "cxx" / "build.sh"), cxx, opt, str(path)], check=True)
            made[path.name] = path
    for path in made.values():
        subprocess.run(["strip", "-o", f"{path}-stripped", str(path)], check=True)
    return made


def _fixture(built: dict[str, Path], name: str, compiler: str) -> Path:
    if name not in built:
        package = "clang-14" if "clang" in compiler else compiler
        pytest.skip(f"{compiler} is not installed (Debian: apt-get install {package})")
    return built[name]


@pytest.mark.parametrize("build", [f"bytevm-{cc}-{kind}" for cc, kind in INTERP] + [f"names-{c}{o}" for c, o in CXX])
def test_stripped_fixtures_against_their_twins(fixtures_built: dict[str, Path], build: str) -> None:
    compiler = build.split("-")[1] + ("-14" if "clang" in build else "")
    twin_path = _fixture(fixtures_built, build, compiler)
    stripped = Path(f"{twin_path}-stripped")
    ours = analyze_binary(stripped).module
    entries = set(ours.procedures["entry"].tolist())
    truth = _symbol_entries(twin_path)
    found = len(entries & truth)
    assert found / len(truth) >= MINIMUM, sorted(hex(e) for e in truth - entries)
    assert found / len(entries) >= MINIMUM, sorted(hex(e) for e in entries - truth)
    twin_loops, loops = loop_addresses(analyze_binary(twin_path).module), loop_addresses(ours)
    both = sum((twin_loops & loops).values())
    assert twin_loops.total() and both / twin_loops.total() >= MINIMUM and both / loops.total() >= MINIMUM, \
        (twin_loops - loops, loops - twin_loops)
    _names_as_hpcstruct_names_them(ours, stripped)


def test_agreement_measure_counts_what_differs() -> None:
    """The judge can fail: a procedure or loop missing on one side lowers recall or precision."""
    from hpcsa.formats.hpcstruct.model import F, ModuleBuilder

    def module(entries: list[int], loops: list[tuple[int, int]]) -> Module:
        b = ModuleBuilder("x")
        f = b.add(F, -1, file="f")
        for e in entries:
            p = b.add(P, f, name=f"p{e}", ranges=[(e, e + 1)])
            for _e, a in [lp for lp in loops if lp[0] == e]:
                b.add(L, p, line=0, ranges=[(a, a + 1)])
        return b.finish()

    twin = module([0x10, 0x20, 0x30], [(0x10, 0x14), (0x20, 0x28)])
    same = address_agreement(twin, twin)
    assert (same.entry_recall, same.entry_precision, same.loop_recall, same.loop_precision) == (1, 1, 1, 1)
    other = address_agreement(twin, module([0x10, 0x20, 0x40, 0x50], [(0x10, 0x14), (0x20, 0x2c)]))
    assert (other.entry_recall, other.entry_precision) == (2 / 3, 2 / 4)
    assert (other.loop_recall, other.loop_precision) == (1 / 2, 1 / 2)
    assert other.missed_entries == [0x30] and other.extra_entries == [0x40, 0x50]
