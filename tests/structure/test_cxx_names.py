"""C++ procedure names as HPCToolkit prints them (libiberty, DMGL_PARAMS | DMGL_ANSI | DMGL_RET_DROP: no
return type on template functions; clone suffixes kept; the mangled name in ``ln``), on the project's own
C++ program (fixtures/structure/cxx/names.cpp) built -O0 and -O2 with g++ and clang++-14, and the same
names in the fallback without structure files. Every PLT stub is a procedure."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from elftools.elf.elffile import ELFFile

from hpcsa.aggregate.lexical import read_binary_symbols
from hpcsa.core.demangle import demangle, drop_return_type
from hpcsa.formats.hpcstruct.model import P
from hpcsa.structure.binary import analyze_binary
from tests.conftest import FIXTURES

CXX = FIXTURES / "structure" / "cxx"
BUILDS = [(cxx, opt) for cxx in ("g++", "clang++-14") for opt in ("-O0", "-O2")]

# Written by hand from the rule, for every build: our own functions are noinline.
STRING = "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >"
COMMON = [
    "main",
    "geo::Vec::Vec(double, double)",                           # constructor
    "geo::Vec::~Vec()",                                        # destructor
    "geo::Vec::operator+(geo::Vec const&) const",              # operators
    "geo::Vec::operator<(geo::Vec const&) const",
    "geo::Vec::operator double() const",                       # conversion operator
    "geo::clamp_sum<int>(std::vector<int, std::allocator<int> > const&, int)",   # template: no `int ` before
    f"(anonymous namespace)::checked_parse({STRING} const&)",  # anonymous namespace
    "(anonymous namespace)::swap_halves<int>(std::vector<int, std::allocator<int> >&)",   # no `void `
    "std::vector<geo::Vec, std::allocator<geo::Vec> >::_M_realloc_insert<int&, int>(__gnu_cxx::__normal_iterator"
    "<geo::Vec*, std::vector<geo::Vec, std::allocator<geo::Vec> > >, int&, int&&)",   # member template, no `void `
]
# Lambdas: gcc numbers them in the enclosing function ({lambda(int)#2}), clang names them $_N.
FOLD_IF = {
    "g++": "geo::fold_if<int, main::{lambda(int)#2}>(std::vector<int, std::allocator<int> > const&, "
           "main::{lambda(int)#2})",
    "clang++-14": "geo::fold_if<int, main::$_1>(std::vector<int, std::allocator<int> > const&, main::$_1)",
}
# At -O0 nothing is inlined: the standard library's templates keep their own symbols.
AT_O0 = {
    "g++": ["std::move<int&>(int&)", "std::swap<int>(int&, int&)",
            "main::{lambda(double, double)#1}::operator()(double, double) const",
            f"std::operator+<char, std::char_traits<char>, std::allocator<char> >(char const*, {STRING} const&)"],
    "clang++-14": ["std::move<int&>(int&)", "std::swap<int>(int&, int&)",
                   "main::$_0::operator()(double, double) const",
                   f"std::operator+<char, std::char_traits<char>, std::allocator<char> >(char const*, {STRING} const&)"],
}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[tuple[str, str], Path]:
    out = tmp_path_factory.mktemp("cxxnames")
    made = {}
    for cxx, opt in BUILDS:
        if shutil.which(cxx) is None:
            continue
        path = out / f"names-{cxx}{opt}"
        subprocess.run(["sh", str(CXX / "build.sh"), cxx, opt, str(path)], check=True)
        made[(cxx, opt)] = path
    return made


def _binary(built, build) -> Path:
    if build not in built:
        pytest.skip(f"{build[0]} is not installed (Debian: apt-get install {build[0]})")
    return built[build]


def procedures(m) -> dict[str, str | None]:
    """Procedure name -> link name (None when the same) of a module."""
    out = {}
    for r in np.flatnonzero(m.scopes["kind"] == P).tolist():
        name = m.text(int(m.scopes["name"][r]))
        out[name] = m.text(int(m.scopes["link"][r]))
    return out


def _base(name: str) -> str:
    return name.split(" [clone ", 1)[0]


@pytest.mark.parametrize("build", BUILDS, ids=["".join(b) for b in BUILDS])
def test_names_written_by_hand(built, build):
    m = analyze_binary(_binary(built, build)).module
    bases = {_base(n) for n in procedures(m)}
    expected = COMMON + [FOLD_IF[build[0]]] + (AT_O0[build[0]] if build[1] == "-O0" else [])
    assert sorted(set(expected) - bases) == []


@pytest.mark.parametrize("build", BUILDS, ids=["".join(b) for b in BUILDS])
def test_every_mangled_procedure_keeps_its_link_name(built, build):
    """Each procedure of a mangled symbol: ``ln`` is the symbol, the name its demangling without the
    return type (the demangler's own text with at most a leading return type and space removed)."""
    import cxxfilt

    m = analyze_binary(_binary(built, build)).module
    checked = 0
    for name, link in procedures(m).items():
        if not link or not link.startswith("_Z") or link.endswith("@plt"):
            continue
        full = cxxfilt.demangle(link)
        assert name == demangle(link)
        assert full == name or full.endswith(" " + name), (full, name)
        checked += 1
    assert checked >= 10


@pytest.mark.parametrize("build", BUILDS, ids=["".join(b) for b in BUILDS])
def test_clone_suffixes_are_kept(built, build):
    names = procedures(analyze_binary(_binary(built, build)).module)
    with open(built[build], "rb") as fh:
        clones = {s.name for s in ELFFile(fh).get_section_by_name(".symtab").iter_symbols()
                  if s.name.startswith("_Z") and "." in s.name and "@" not in s.name
                  and s["st_info"]["type"] == "STT_FUNC" and s["st_shndx"] != "SHN_UNDEF"}
    for sym in clones:
        suffix = sym[sym.index("."):]
        assert demangle(sym).endswith(f" [clone {suffix}]")
        if "{lambda(" in demangle(sym):
            continue  # an instantiation over a lambda may be named by its DWARF name (test_dyninst_rules.py)
        assert demangle(sym) in names


@pytest.mark.parametrize("build", BUILDS, ids=["".join(b) for b in BUILDS])
def test_every_plt_stub_is_a_procedure(built, build):
    """One ``<symbol>@plt`` procedure per JUMP_SLOT relocation (read here with pyelftools), including the
    stubs called only from exception landing pads (_Unwind_Resume, __cxa_begin_catch); their names are
    demangled like every other."""
    path = _binary(built, build)
    with open(path, "rb") as fh:
        elf = ELFFile(fh)
        rela = elf.get_section_by_name(".rela.plt")
        dynsym = elf.get_section(rela["sh_link"])
        slots = {dynsym.get_symbol(r["r_info_sym"]).name for r in rela.iter_relocations()
                 if r["r_info_type"] == 7}
    names = procedures(analyze_binary(path).module)
    assert "_Unwind_Resume" in slots and "__cxa_begin_catch" in slots
    # .plt.got stubs (GLOB_DAT, no JUMP_SLOT) are unnamed: targ<address>@plt, as hpcstruct names them
    plt = {n.removesuffix("@plt") for n in names if n.endswith("@plt") and not n.startswith("targ")}
    assert plt == {demangle(s) for s in slots}


@pytest.mark.parametrize("build", BUILDS, ids=["".join(b) for b in BUILDS])
def test_fallback_without_structure_uses_the_same_names(built, build):
    """hpcprof's path without a structure file names functions from the symbols: the same text."""
    path = _binary(built, build)
    struct_names = {_base(n) for n in procedures(analyze_binary(path).module)}
    fallback = read_binary_symbols(str(path), str(path))
    assert fallback is not None
    ours = set(COMMON) | {FOLD_IF[build[0]]}
    assert ours <= {_base(n) for n in fallback.names}
    assert ours <= struct_names


def test_drop_return_type_by_hand():
    """The cut, on signatures written by hand (libiberty's spacing: ``operator< <int>``, ``operator><int>``)."""
    assert drop_return_type("unsigned long f<int>(int)") == "f<int>(int)"
    assert drop_return_type("char const* ns::f<int>()") == "ns::f<int>()"
    assert drop_return_type("bool operator< <int>(A<int>, A<int>)") == "operator< <int>(A<int>, A<int>)"
    assert drop_return_type("bool operator><int>(A<int>, A<int>)") == "operator><int>(A<int>, A<int>)"
    assert drop_return_type("A& operator<< <int>(A&, int const&)") == "operator<< <int>(A&, int const&)"
    assert drop_return_type("int* A::operator-><int>()") == "A::operator-><int>()"
    assert drop_return_type("auto main::{lambda(auto:1)#1}::operator()<int>(int) const") == \
        "main::{lambda(auto:1)#1}::operator()<int>(int) const"
    assert drop_return_type("A::operator unsigned long<unsigned long>()") == \
        "A::operator unsigned long<unsigned long>()"
    assert drop_return_type("void* operator new<int>(unsigned long)") == "operator new<int>(unsigned long)"
    assert drop_return_type("int f<int>(int) [clone .constprop.0] [clone .cold]") == \
        "f<int>(int) [clone .constprop.0] [clone .cold]"
    # no return type to drop
    assert drop_return_type("std::vector<int>::size() const") == "std::vector<int>::size() const"
    assert drop_return_type("A<int>::A<long>(long)") == "A<int>::A<long>(long)"
    assert drop_return_type("bool operator>(A, A)") == "bool operator>(A, A)"
    assert drop_return_type("void (*f<int>())()") == "void (*f<int>())()"


def test_names_equal_real_hpcstruct_names(shared_data):
    """Every (ln, n) pair that real hpcstruct wrote for the C++ programs and libstdc++ of hpctoolkit-extra:
    our demangling of ln is n, once the ` [libstdc++.so.6.0.30]` that hpcstruct appends to the names of a
    shared library's procedures is removed (PLT stubs are left out: their names are not demangling)."""
    import html
    import re

    extra = shared_data / "hpctoolkit-extra"
    files = sorted((extra / "struct").glob("cxx-*.hpcstruct")) + [extra / "meas-cxx1024" / "structs" /
                                                                  "libstdc++.so.6.0.30.hpcstruct"]
    if not all(f.is_file() for f in files):
        pytest.skip(f"{extra} lacks the C++ structure files of real hpcstruct")
    pairs = {}
    for f in files:
        for m in re.finditer(r'<P [^>]*n="([^"]*)" ln="([^"]*)"', f.read_text()):
            link, name = html.unescape(m.group(2)), html.unescape(m.group(1))
            if link.startswith("_Z") and "@plt" not in link:
                pairs[link] = name.removesuffix(" [libstdc++.so.6.0.30]")
    assert len(pairs) > 3000
    wrong = [(link, name, demangle(link)) for link, name in pairs.items() if demangle(link) != name]
    assert wrong == []
