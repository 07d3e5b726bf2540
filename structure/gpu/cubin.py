"""Structure of NVIDIA cubins: functions, line map with inlining, basic blocks, loops and call sites.

Control flow comes from ``nvdisasm -c -poff`` (:mod:`hpcsa.structure.gpu.nvdisasm`),
never from nvdisasm's own ``-cfg``: that fails on cubins made by CUDA <= 11
with the CUDA 13 disassembler, and hpcstruct itself misreads the architecture
of CUDA 13 cubins and finds no calls in them. hpcsa reads the SM number from
either ``e_flags`` layout, so both work.

When the disassembler is missing or refuses the cubin (nvdisasm 13 rejects
sm_62 and sm_70 as deprecated), the structure degrades to what the ELF and
DWARF alone give, hpcstruct's ``--gpucfg no`` form (functions and statements,
no loops, no call sites, ``has-calls="0"``), and a note says why.

Calls: a call to a function of the cubin is a ``<C>`` with its entry in
``t``; a call through a register is a ``<C>`` without ``t``; a call to a
symbol the cubin does not define (``vprintf``) and nvdisasm's calls to a
local label are plain statements, as in hpcstruct's output.
"""

from __future__ import annotations

import re

import numpy as np

from hpcsa.formats.hpcstruct.model import Module
from hpcsa.structure.debuginfo.dwarf import DebugInfo
from hpcsa.structure.debuginfo.forms import DwarfError
from hpcsa.structure.debuginfo.inline import InlineTable, read_inlines
from hpcsa.structure.debuginfo.lines import LineMap
from hpcsa.structure.elf import ElfImage, open_elf
from hpcsa.structure.gpu.build import GpuBinary, GpuProc, build_structure, demangle
from hpcsa.structure.gpu.cfg import Code, build_graph
from hpcsa.structure.gpu.cubin_elf import Cubin
from hpcsa.structure.gpu.cubin_lines import read_cubin_lines
from hpcsa.structure.gpu.nvdisasm import (
    K_BRANCH,
    K_CALL,
    NvdisasmError,
    SectionCode,
    parse_listing,
    run_nvdisasm,
)
from hpcsa.structure.gpu.tools import disassembly

_SUFFIX = re.compile(r"^(.*)__(\d+)$")
_DWARF = (".debug_info", ".debug_abbrev", ".debug_str", ".debug_ranges", ".debug_line")


def read_source(cubin: Cubin) -> tuple[LineMap, InlineTable, list[str]]:
    """Line map and inline table: NVIDIA's line-table extension (-lineinfo), else DWARF (-G)."""
    notes: list[str] = []
    debug_line = cubin.relocated(".debug_line")
    if debug_line is None:
        return LineMap.empty(), InlineTable.empty(), notes
    lines = read_cubin_lines(debug_line, cubin.image.section_bytes(".debug_str"), demangle)
    notes.extend(lines.notes)
    inlines = lines.inlines
    if not len(inlines.lo) and cubin.image.section_named(".debug_info") is not None:
        try:
            sections = {n: b for n in _DWARF if (b := cubin.relocated(n)) is not None}
            dw = DebugInfo(sections)
            unit_files = {u.offset: lines.unit_files.get(u.stmt_list, []) for u in dw.units
                          if u.stmt_list is not None}
            inlines = read_inlines(dw, unit_files, demangle)
        except (DwarfError, IndexError, ValueError) as exc:
            notes.append(f"inlining information unreadable ({exc})")
    return lines.lines, inlines, notes


def _match_sections(cubin: Cubin, listing: list[SectionCode]) -> dict[int, SectionCode]:
    """ELF section index -> its listing; nvdisasm prints sections in ELF order and suffixes the k-th
    duplicate name with ``__k``."""
    by_name: dict[str, list[int]] = {}
    for s in cubin.image.sections:
        if s.name.startswith(".text") and s.is_code:
            by_name.setdefault(s.name, []).append(s.index)
    used: dict[str, int] = {}
    out: dict[int, SectionCode] = {}
    for sc in listing:
        name = sc.name
        if name not in by_name:
            m = _SUFFIX.match(name)
            if m is None or m.group(1) not in by_name:
                continue
            name = m.group(1)
        k = used.get(name, 0)
        if k < len(by_name[name]):
            out[by_name[name][k]] = sc
            used[name] = k + 1
    return out


def _function_code(cubin: Cubin, start: int, end: int, sec_offset: int, sc: SectionCode,
                   labels: dict[str, int], entries: set[int]) -> tuple[Code, dict[int, int | None]]:
    """The instructions of one function as absolute-address columns, and its calls that make ``<C>``s."""
    lo = int(np.searchsorted(sc.offset, np.uint64(start - sec_offset)))
    hi = int(np.searchsorted(sc.offset, np.uint64(end - sec_offset)))
    offs = sc.offset[lo:hi]
    kind = sc.kind[lo:hi].copy()
    target = sc.target[lo:hi].copy()
    ok = target >= 0
    target[ok] += sec_offset
    size = np.full(len(offs), cubin.instruction_size, np.int64)
    callee: dict[int, int | None] = {}
    for row in np.flatnonzero(kind == K_CALL).tolist():
        name = sc.callee.get(lo + row)
        if name is None:       # through a register
            callee[row] = None
            continue
        addr = labels.get(name)
        if addr is None:       # a symbol this cubin does not define
            continue
        if addr in entries:
            callee[row] = addr
        elif start <= addr < end:   # nvdisasm's call to a local label: a branch for control flow
            kind[row] = K_BRANCH
            target[row] = addr
    indirect = {r - lo: [t + sec_offset for t in ts] for r, ts in sc.targets.items() if lo <= r < hi}
    code = Code(offs + np.uint64(sec_offset), size, kind, sc.conditional[lo:hi].copy(), target, {}, indirect)
    return code, callee


def cubin_binary(image: ElfImage, lm_name: str | None = None, disassemble: bool = True) -> GpuBinary:
    """Everything the structure builder needs from one cubin (see the module docstring)."""
    cubin = Cubin(image)
    lines, inlines, notes = read_source(cubin)
    syms, names = cubin.symbols
    names_at: dict[int, list[str]] = {}
    for f in cubin.functions:
        names_at[f.address] = [f.name]
    kinds = syms["info"] & 0xF if len(syms) else np.zeros(0, np.uint8)
    for row in np.flatnonzero(kinds == 2).tolist():
        addr = cubin.symbol_address(row)
        if addr in names_at and names[row] not in names_at[addr]:
            names_at[addr].append(names[row])
    procs = [GpuProc(names_at[f.address], f.symbol, f.address, f.end) for f in cubin.functions]
    listing = disassembly(lambda: parse_listing(run_nvdisasm(image.path)), NvdisasmError,
                          notes) if disassemble and procs else None
    has_cfg = listing is not None
    if listing is not None:
        sections = _match_sections(cubin, listing)
        by_listing = {id(sc): idx for idx, sc in sections.items()}
        labels: dict[str, int] = {}
        for sc in listing:
            idx = by_listing.get(id(sc))
            if idx is None:
                continue
            base = cubin.section(idx).offset
            for lab, off in sc.labels.items():
                labels.setdefault(lab, base + off)
        entries = {p.start for p in procs}
        for f, proc in zip(cubin.functions, procs, strict=True):
            section_code = sections.get(f.section)
            if section_code is None:
                notes.append(f"warning: nvdisasm printed no code for {f.name}")
                proc.graph = build_graph(Code(np.zeros(0, "u8"), np.zeros(0, "i8"), np.zeros(0, "u1"),
                                              np.zeros(0, "?"), np.zeros(0, "i8")))
                continue
            code, proc.callee = _function_code(cubin, f.address, f.end, cubin.section(f.section).offset,
                                               section_code, labels, entries)
            proc.graph = build_graph(code)
    basename = image.path.rsplit("/", 1)[-1]
    return GpuBinary(lm_name or image.path, basename, procs, lines, inlines, cubin.device,
                     cubin.instruction_size, has_cfg, notes)


def build_cubin_module(path: str, lm_name: str | None = None, disassemble: bool = True
                       ) -> tuple[Module, list[str]]:
    """The ``LM`` of a cubin or gpubin, and notes (warnings) on what could not be recovered."""
    image = open_elf(path)
    binary = cubin_binary(image, lm_name, disassemble)
    return build_structure(binary), binary.notes


def build_module(image: ElfImage, lm_name: str, jobs: int = 1) -> tuple[Module, list[str]]:
    """``hpcsa struct``'s hook (:mod:`hpcsa.structure.binary`): the structure and the notes on what it
    lacks (``warning:`` first when degraded). ``jobs`` is unused: one GPU binary takes a fraction of a second."""
    binary = cubin_binary(image, lm_name)
    return build_structure(binary), list(binary.notes)
