"""The names DWARF gives a function, and the name hpcstruct prints for it (Dyninst's rule).

hpcstruct names a procedure after the *longest* of the "mangled names" Dyninst's Symtab keeps for the
function (ties: the alphabetically lower), demangled (HPCToolkit ``src/hpcstruct/Struct.cpp``,
``getFuncNames``). Those names are the symbols' names, plus what Symtab's DWARF reader adds while it walks
the concrete ``DW_TAG_subprogram`` DIEs (Dyninst 13, ``symtabAPI/src/dwarfWalker.C``):

1. A DIE belongs to the function whose entry is the *lowest* address of the DIE's ranges
   (``DwarfWalker::setFunctionFromRange`` / ``setFuncFromLowest``: ``findFuncByEntryOffset(lowest)``); a
   DIE whose lowest address is no function's entry adds nothing. Only the first DIE that reaches a function
   adds its name (``parseSubprogram`` returns early once ``parsedFuncs`` marks the function parsed).
2. ``DwarfWalker::findFuncName``: a ``DW_AT_linkage_name``, looked up through ``DW_AT_abstract_origin`` and
   ``DW_AT_specification`` (libdw's ``dwarf_attr_integrate``), is added as a *mangled* name; without one,
   the DIE's ``DW_AT_name`` (also integrated: libdw's ``dwarf_diename``) is added as a *pretty* name.
3. ``Aggregate::addPrettyName`` (``symtabAPI/src/Aggregate.C``) skips a name that is a substring of one of
   the function's pretty names, and otherwise goes on to ``addMangledName``, which skips a name that is a
   substring of one of its mangled names and otherwise adds a symbol carrying the name as its mangled name.

So a C function's ``DW_AT_name`` (``main``, ``foo`` of ``foo.isra.0``) is always already there, and a C++
function with a linkage name gains nothing new. What changes the name is a template instantiation that gcc
gives no linkage name because an argument has no linkage (a lambda's closure type): its ``DW_AT_name``
(``__adjust_heap<...>, __gnu_cxx::__ops::_Iter_comp_iter<main(int, char**)::<lambda(double, double)> > >``)
is no substring of the symbol's demangled name (which writes the closure ``main::{lambda(double,
double)#1}``), becomes a mangled name, and wins when it is longer than the real mangled symbol name; it
does not demangle, so it is printed as it is, without ``ln``. Shorter ones (``move<main(int, char**)::
<lambda(double, double)>&>`` against ``_ZSt4moveIRZ4mainEUlddE_EONSt16remove_referenceIT_E4typeEOS3_``) lose
to the symbol.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from hpcsa.structure.debuginfo.dwarf import (
    AT_ABSTRACT_ORIGIN,
    AT_LINKAGE_NAME,
    AT_LOW_PC,
    AT_NAME,
    AT_RANGES,
    AT_SPECIFICATION,
    DebugInfo,
)
from hpcsa.structure.debuginfo.forms import F_REF_ADDR, REF_FORMS, DwarfError, Unit

#: DW_AT_language codes of C and assembly (DWARF 5 §7.12): their units are not read for names. A C function's
#: DW_AT_name is the name the compiler gives its symbol, which rule 3 then skips (on libc, libm, ld.so and
#: python3.11d, none of the 11,313 named entries of python3.11d alone changes its printed name), so reading
#: their subprograms (15 % of the time to read python3.11d's debug information) would change nothing.
C_LANGUAGES = frozenset({0x01, 0x02, 0x0C, 0x1D, 0x2C, 0x8001})
#: (name, whether it is a linkage name): what one concrete subprogram DIE offers its function.
DwarfName = tuple[str, bool]
_CHAIN = 8  # abstract origins and specifications followed at most (libdw's chains are one or two long)


class SubprogramNames:
    """Collects, per lowest address of a concrete subprogram, the name the first such DIE offers (rule 1
    and 2 of the module docstring); fed by the walk over ``.debug_info`` that reads the inline table."""

    @staticmethod
    def wanted(unit: Unit) -> bool:
        """Whether the subprograms of this unit are read for names (not C or assembly)."""
        return unit.language not in C_LANGUAGES

    def __init__(self, dw: DebugInfo) -> None:
        self.dw = dw
        self.by_entry: dict[int, DwarfName] = {}
        self._origin: dict[int, tuple[str | None, str | None]] = {}  # DIE offset -> integrated names

    def add(self, unit: Unit, attrs: dict[int, tuple[int, int]]) -> None:
        """One subprogram DIE (declarations and abstract instances have no address and are left out)."""
        if AT_RANGES in attrs:
            ranges = self.dw.die_ranges(unit, attrs)
            if not ranges:
                return
            lowest = min(lo for lo, _hi in ranges)
        else:
            low = attrs.get(AT_LOW_PC)
            if low is None:
                return
            lowest = self.dw.address(unit, *low)
        if lowest in self.by_entry:
            return
        link, plain = self._names(unit, attrs)
        if link:
            self.by_entry[lowest] = (link, True)
        elif plain:
            self.by_entry[lowest] = (plain, False)

    def _names(self, unit: Unit, attrs: dict[int, tuple[int, int]]) -> tuple[str | None, str | None]:
        """(DW_AT_linkage_name, DW_AT_name), each the first found along the origin/specification chain."""
        link = self.dw.string(unit, *attrs[AT_LINKAGE_NAME]) if AT_LINKAGE_NAME in attrs else None
        plain = self.dw.string(unit, *attrs[AT_NAME]) if AT_NAME in attrs else None
        nxt = attrs.get(AT_ABSTRACT_ORIGIN) or attrs.get(AT_SPECIFICATION)
        if (link and plain) or nxt is None or not _is_ref(nxt[0]):
            return link, plain
        more = self._origin.get(nxt[1])
        if more is None:
            more = self._origin[nxt[1]] = self._chain(nxt[1])
        return link or more[0], plain or more[1]

    def _chain(self, offset: int) -> tuple[str | None, str | None]:
        link: str | None = None
        plain: str | None = None
        seen: set[int] = set()
        for _ in range(_CHAIN):
            if offset in seen:
                break
            seen.add(offset)
            try:
                found = self.dw.die_at(offset)
            except (DwarfError, IndexError, ValueError):
                found = None
            if found is None:
                break
            unit, _ab, attrs = found
            if link is None and AT_LINKAGE_NAME in attrs:
                link = self.dw.string(unit, *attrs[AT_LINKAGE_NAME])
            if plain is None and AT_NAME in attrs:
                plain = self.dw.string(unit, *attrs[AT_NAME])
            nxt = attrs.get(AT_ABSTRACT_ORIGIN) or attrs.get(AT_SPECIFICATION)
            if (link and plain) or nxt is None or not _is_ref(nxt[0]):
                break
            offset = nxt[1]
        return link, plain


def _is_ref(form: int) -> bool:
    return form in REF_FORMS or form == F_REF_ADDR


def procedure_names(symbol_names: Sequence[str], dwarf: DwarfName | None,
                    demangle: Callable[[str], str]) -> tuple[str, str]:
    """(link name, pretty name) of a function with these symbol names and this DWARF name, as hpcstruct
    prints them (rule 3 of the module docstring, then the longest mangled name, demangled)."""
    mangled = list(symbol_names)
    if dwarf is not None:
        name, is_link = dwarf
        pretty = [demangle(n) for n in mangled]
        if (is_link or not any(name in p for p in pretty)) and not any(name in m for m in mangled):
            mangled.append(name)
    link = ""
    for n in mangled:
        if not link or len(n) > len(link) or (len(n) == len(link) and n < link):
            link = n
    return link, demangle(link)


__all__ = ["C_LANGUAGES", "DwarfName", "SubprogramNames", "procedure_names"]
