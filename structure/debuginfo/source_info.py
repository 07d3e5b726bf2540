"""The debug information structure recovery uses: the line map and the inline table of a binary.

Both come from DWARF (versions 2 to 5): the line-number programs (DWARF 5 §6.2,
:mod:`hpcsa.structure.debuginfo.lines`) and the ``DW_TAG_inlined_subroutine`` trees of ``.debug_info``
(DWARF 5 §3.3.8, :mod:`hpcsa.structure.debuginfo.inline`), read from the binary or from the separate debug
file its ``.gnu_debuglink`` names (Debian's ``-dbg`` packages). Missing or corrupt DWARF degrades to
empty tables with a note, never to a failure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field
from typing import cast

from hpcsa.core.dataclass import dataclass
from hpcsa.core.errors import HpcsaError
from hpcsa.structure.debuginfo.dwarf import DebugInfo
from hpcsa.structure.debuginfo.forms import DwarfError
from hpcsa.structure.debuginfo.inline import InlineTable, read_inlines
from hpcsa.structure.debuginfo.lines import LineMap, build_line_map, read_programs
from hpcsa.structure.debuginfo.subprogram_names import DwarfName, SubprogramNames
from hpcsa.structure.elf import ElfImage, open_elf

DWARF_SECTIONS = (".debug_info", ".debug_abbrev", ".debug_str", ".debug_line_str", ".debug_str_offsets",
                  ".debug_addr", ".debug_ranges", ".debug_rnglists", ".debug_line")


@dataclass
class SourceInfo:
    lines: LineMap
    inlines: InlineTable
    notes: list[str] = field(default_factory=list)
    #: function entry -> the name DWARF offers it (:mod:`hpcsa.structure.debuginfo.subprogram_names`)
    entry_names: dict[int, DwarfName] = field(default_factory=dict)


def dwarf_sections(image: ElfImage, notes: list[str]) -> dict[str, bytes]:
    sections = {}
    for name in DWARF_SECTIONS:
        try:
            raw = image.section_bytes(name)
        except HpcsaError as exc:  # truncated, or compressed in a way we cannot inflate: do without
            notes.append(exc.problem)
            raw = None
        if raw is not None:
            sections[name] = raw
    return sections


def has_debug_information(image: ElfImage) -> bool:
    """Whether :func:`read_source_info` has DWARF to read, in the binary or a separate debug file."""
    return bool(image.debug_link) or any(image.section_named(n) for n in (".debug_info", ".debug_line"))


def read_source_info(image: ElfImage, demangle: Callable[[str], str]) -> SourceInfo:
    """Line map and inline table; corrupt or missing DWARF degrades to empty tables with a note."""
    notes: list[str] = []
    sections = dwarf_sections(image, notes)
    if ".debug_info" not in sections and ".debug_line" not in sections and image.debug_link:
        try:
            separate = open_elf(image.debug_link)
            sections = dwarf_sections(separate, notes)
            notes.append(f"debug information read from {image.debug_link}")
        except HpcsaError as exc:
            notes.append(f"separate debug file unusable: {exc}")
    if ".debug_info" not in sections and ".debug_line" not in sections:
        return SourceInfo(LineMap.empty(), InlineTable.empty(), notes + ["no DWARF line or debug information"])
    try:
        dw = DebugInfo(sections)
    except (DwarfError, IndexError, ValueError) as exc:
        return SourceInfo(LineMap.empty(), InlineTable.empty(), [f"unreadable .debug_info ({exc})"])
    programs = {}
    units = [unit for unit in dw.units if unit.stmt_list is not None]
    requests = [(cast(int, unit.stmt_list), unit) for unit in units]  # each unit's is set (chosen above)
    for unit, prog in zip(units, read_programs(dw, requests), strict=True):
        if isinstance(prog, DwarfError):
            notes.append(str(prog))
        else:
            programs[unit.offset] = prog
    if not dw.units and dw.line:  # line tables without .debug_info: one after another, to the first bad one
        offsets = []
        pos = 0
        while pos + 4 <= len(dw.line):
            offsets.append(pos)
            length = int.from_bytes(dw.line[pos:pos + 4], "little")
            pos += 4 + (8 + int.from_bytes(dw.line[pos + 4:pos + 12], "little") if length == 0xFFFFFFFF
                        else length)
        for pos, prog in zip(offsets, read_programs(dw, [(pos, None) for pos in offsets], until_error=True),
                             strict=False):  # shorter past a bad header
            if isinstance(prog, DwarfError):
                notes.append(str(prog))
                break
            programs[-pos - 1] = prog
    lines = build_line_map(list(programs.values()))
    names = SubprogramNames(dw)
    try:
        inlines = read_inlines(dw, {k: p.call_site_files or p.files for k, p in programs.items()}, demangle, names)
    except (DwarfError, IndexError, ValueError) as exc:
        notes.append(f"inlining information unreadable ({exc})")
        inlines = InlineTable.empty()
    return SourceInfo(lines, inlines, notes, names.by_entry)

