"""Program structure of an x86-64 ELF binary, assembled the way HPCToolkit's hpcstruct does.

The pipeline (the HPCToolkit User's Manual on hpcstruct; Tallent, Mellor-Crummey and Fagan, "Binary
Analysis for Measurement and Attribution of Program Performance", PLDI 2009):

1. *Skeleton*: parsed functions (symbols, PLT stubs, call targets) grouped by
   the symbol that contains them, placed in the source file of their first
   line; procedures without line information go to ``[<binary>]``.
2. *Inline trees*: every instruction of every basic block is filed under
   its chain of inlined calls (DWARF) with its file and line; loops (WMZC
   forest) are built bottom-up, each located at the inline depth and
   file/line chosen from its exit conditions (hpcstruct's ``findLoopHeader``).
3. *Gaps*: bytes of a procedure that no parsed block covers (padding,
   unreachable code) become statements by the line map.
4. *Output*: statements merged per line; guard aliens for code from other
   files or earlier lines; double aliens for inlined calls, placed by
   ``locateTree``; emitted into a :class:`~hpcsa.structure.model.ModuleBuilder`.

Steps 2 to 4 are hpcstruct's tree rules, the same for GPU binaries: they live
in :mod:`hpcsa.structure.tree`; this module supplies the x86-64 side (the
skeleton, the CFG and the line and inline lookups of a parsed function).

Per-instruction work is vectorized per function (line and inline lookups
over the instruction address array); Python loops run over runs of
instructions sharing a line and inline chain, blocks, and loops.
"""

from __future__ import annotations

import bisect
import concurrent.futures
import itertools
import multiprocessing
import multiprocessing.context
import os
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from hpcsa.errors import HpcsaError
from hpcsa.structure.cfg import E_CALL_FT, NORETURN_NAMES, CodeIndex, ProgramCFG, in_sorted, rows_of
from hpcsa.structure.dwarf import DebugInfo, DwarfError
from hpcsa.structure.dwarf_inline import InlineTable, read_inlines
from hpcsa.structure.dwarf_lines import LineMap, build_line_map, read_program
from hpcsa.structure.elf import ElfImage, FunctionSymbol, open_elf
from hpcsa.structure.loops import find_loops
from hpcsa.structure.model import F, Module, ModuleBuilder
from hpcsa.structure.tree import (
    FLP,
    Stmt,
    StrTab,
    TreeNode,
    basename,
    compute_gaps,
    emit_procedure,
    flp_path,
    function_tree,
)

UNKNOWN_PROC = "<unknown procedure>"
#: Extent of a procedure whose entry lies in no code section (a corrupt section or symbol table: none of the
#: real test binaries has one). There is no code to cover, and taking the next entry or the symbol's size
#: as its end let a damaged file make statements over gigabytes.
OUTSIDE_CODE_EXTENT = 20
UNKNOWN_LINK = "<unknown link>"
DWARF_SECTIONS = (".debug_info", ".debug_abbrev", ".debug_str", ".debug_line_str", ".debug_str_offsets",
                  ".debug_addr", ".debug_ranges", ".debug_rnglists", ".debug_line")
BATCH_BLOCKS = 20000  # blocks of the functions gathered per FunctionBatch (bounds its Python lists)


@dataclass
class ProcInfo:
    entry: int
    link: str
    pretty: str
    line: int
    gap_only: bool = False
    root: TreeNode | None = None


@dataclass
class Group:
    start: int
    end: int
    symbol: FunctionSymbol | None
    alt_file: bool = False
    procs: dict[int, ProcInfo] = field(default_factory=dict)
    strtab: StrTab = field(default_factory=lambda: StrTab())


# ---------------------------------------------------------------------------------------------------
# Debug information


@dataclass
class SourceInfo:
    lines: LineMap
    inlines: InlineTable
    notes: list[str] = field(default_factory=list)


def _dwarf_sections(image: ElfImage, notes: list[str]) -> dict[str, bytes]:
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


def read_source_info(image: ElfImage, demangle: Callable[[str], str]) -> SourceInfo:
    """Line map and inline table; corrupt or missing DWARF degrades to empty tables with a note."""
    notes: list[str] = []
    sections = _dwarf_sections(image, notes)
    if ".debug_info" not in sections and ".debug_line" not in sections and image.debug_link:
        try:
            separate = open_elf(image.debug_link)
            sections = _dwarf_sections(separate, notes)
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
    for unit in dw.units:
        if unit.stmt_list is None:
            continue
        try:
            programs[unit.offset] = read_program(dw, unit.stmt_list, unit)
        except DwarfError as exc:
            notes.append(str(exc))
    if not dw.units and dw.line:  # line tables without .debug_info
        pos = 0
        while pos + 4 <= len(dw.line):
            try:
                prog = read_program(dw, pos, None)
            except DwarfError as exc:
                notes.append(str(exc))
                break
            programs[-pos - 1] = prog
            length = int.from_bytes(dw.line[pos:pos + 4], "little")
            pos += 4 + (8 + int.from_bytes(dw.line[pos + 4:pos + 12], "little") if length == 0xFFFFFFFF
                        else length)
    lines = build_line_map(list(programs.values()))
    try:
        inlines = read_inlines(dw, {k: p.call_site_files or p.files for k, p in programs.items()}, demangle)
    except (DwarfError, IndexError, ValueError) as exc:
        notes.append(f"inlining information unreadable ({exc})")
        inlines = InlineTable.empty()
    return SourceInfo(lines, inlines, notes)


# ---------------------------------------------------------------------------------------------------
# Functions


class Functions(dict[int, list[int]]):
    """Parsed functions: entry -> its blocks (sorted block numbers of the ProgramCFG ``cfg``)."""

    def __init__(self, cfg: ProgramCFG | None) -> None:
        super().__init__()
        self.cfg = cfg


def discover_functions(image: ElfImage) -> tuple[CodeIndex | None, Functions, dict[int, str]]:
    """Every function reachable from symbols, the entry point and direct calls (tail calls included),
    as block lists of one :class:`ProgramCFG`; returns the decoded code, the functions and the names of
    those without a symbol (PLT names, ``targXXXX``, ``_start``).

    Rounds run until nothing changes: edges for the current entries and never-returning functions, a
    walk of every function, targets of reached calls and tail calls that are no function yet become
    ones, functions without a returning path become never-returning (their callers lose the
    fall-through)."""
    code_secs = image.code_sections
    if not code_secs:
        return None, Functions(None), {}
    symbols = image.structure_functions
    extent = {f.addr: f.end for f in symbols}
    plt = image.plt_names
    plt_sections = [(s.addr, s.end) for s in code_secs if s.name.startswith(".plt")]
    names: dict[int, str] = {}
    # Every PLT stub is a function, as Dyninst makes one per JUMP_SLOT relocation: also the stubs called only
    # from exception landing pads (_Unwind_Resume, __cxa_begin_catch), which no parsed call reaches.
    entries = set(extent) | set(plt)
    e_entry = int(image.elf.header["e_entry"])
    if e_entry and image.has_interpreter and image.code_region(e_entry) is not None and e_entry not in entries:
        entries.add(e_entry)
        names[e_entry] = "_start"
    if not image.has_symtab and image.debug_symtab is None:
        # A stripped binary: its few dynamic symbols leave most code unnamed and unreachable from them;
        # the unwind table knows where functions start (hpcstruct's Dyninst would see only the called ones).
        covered = sum(f.size for f in symbols)
        code_bytes = sum(s.size for s in code_secs)
        if covered < code_bytes / 5:
            entries |= {a for a in image.fde_ranges if image.code_region(a) is not None}
    restarts = sorted(entries | set(plt))
    code = CodeIndex(image, restarts)
    sym_list = sorted(extent.items())
    sym_keys = [a for a, _ in sym_list]

    def extent_of(addr: int) -> tuple[int, int]:
        """The code a switch in the function holding ``addr`` may jump to: its symbol, else its section."""
        i = bisect.bisect_right(sym_keys, addr) - 1
        if i >= 0 and addr < sym_list[i][1]:
            return sym_list[i]
        region = image.code_region(addr)
        return (region.addr, region.end) if region else (addr, addr)

    cfg = ProgramCFG(code, restarts, extent_of)
    noreturn: set[int] = {f.addr for f in symbols if any(n in NORETURN_NAMES for n in f.names)}
    noreturn |= {a for a, n in plt.items() if n in NORETURN_NAMES}
    sym_starts = np.array([f.addr for f in symbols], np.uint64)
    sym_ends = np.array([f.end for f in symbols], np.uint64)

    def outside_is_tail(targets: np.ndarray) -> np.ndarray:
        """Targets in a PLT section or inside some symbol's code (a jump there leaves the function)."""
        out = in_sorted(targets, np.array(sorted(plt), np.uint64))
        for lo, hi in plt_sections:
            out |= (targets >= lo) & (targets < hi)
        if len(sym_starts):
            k = np.searchsorted(sym_starts, targets, side="right") - 1
            ok = k >= 0
            out[ok] |= targets[ok] < sym_ends[k[ok]]
        return out

    funcs = Functions(cfg)
    outside_code = {a for a in entries if image.code_region(a) is None}
    returns: dict[int, bool] = {}
    todo: set[int] | None = None      # functions to walk again (None: all)
    changed: set[int] = set()         # addresses whose status changed (new entries, never-returning)
    tail_cfg: ProgramCFG | None = None
    tail_rows = np.zeros(0, bool)
    for _round in range(64):  # converges in a few rounds; the cap only guards against a defect
        if code.resync(np.array(sorted(entries), np.uint64)):  # entries inside a sweep's instruction
            restarts = code.restarts.tolist()
            cfg = funcs.cfg = ProgramCFG(code, restarts, extent_of)
            todo = None
        ent = np.array(sorted(entries), np.uint64)
        ends = np.array([extent.get(int(a)) or _next_end(image, ent, i) for i, a in enumerate(ent.tolist())],
                        np.uint64)
        cf_addr = code.addr[cfg.cf]
        k = np.searchsorted(ent, cf_addr, side="right") - 1
        if len(ent) == 0:
            k[:] = -1
        owner_start = np.where(k >= 0, ent[np.maximum(k, 0)] if len(ent) else 0, 0).astype(np.uint64)
        owner_end = np.where(k >= 0, ends[np.maximum(k, 0)] if len(ent) else 0, 0).astype(np.uint64)
        outside = cf_addr >= owner_end
        owner_start[outside] = 0
        owner_end[outside] = 0
        if tail_cfg is not cfg:  # depends on the code only: once per ProgramCFG
            tail_cfg, tail_rows = cfg, outside_is_tail(np.maximum(code.target[cfg.cf], 0).astype(np.uint64))
        cfg.set_edges(ent, np.array(sorted(noreturn), np.uint64), owner_start, owner_end, tail_rows)
        if todo is not None and changed:
            # Only functions with a branch, call or tail call to a changed address can change.
            hit = in_sorted(code.target[cfg.cf], np.array(sorted(changed), np.int64))
            touched = set(cfg.blocks_of_rows(cfg.cf[hit]).tolist())
            todo |= {a for a, blocks in funcs.items() if not touched.isdisjoint(blocks)}
        walk = [a for a in ent.tolist() if (todo is None or a in todo or a not in funcs) and a not in outside_code]
        walk_blocks = cfg.entry_blocks(rows_of(code, np.array(walk, np.uint64))).tolist() if walk else []
        walked = [(a, cfg.reach(b0)) for a, b0 in zip(walk, walk_blocks, strict=True) if b0 >= 0]
        funcs.update(walked)
        # Whether each walked function returns, and the call and tail-call targets it reaches, at once.
        counts = [len(blocks) for _a, blocks in walked]
        reached = np.fromiter(itertools.chain.from_iterable(blocks for _a, blocks in walked), np.int64,
                              sum(counts))
        if len(reached):
            firsts = np.zeros(len(counts), np.int64)
            np.cumsum(counts[:-1], out=firsts[1:])
            returning = np.logical_or.reduceat(cfg.block_returns[reached], firsts).tolist()
            returns.update(zip((a for a, _b in walked), returning, strict=True))
        targets = np.unique(cfg.block_target[reached])
        found = {t for t in targets[targets >= 0].tolist() if t not in entries}
        new = {t for t in found if image.code_region(t) is not None}
        todo = set()
        if new:
            entries |= new
            changed = new
            continue
        dead = {a for a, r in returns.items() if not r and a not in noreturn}
        if not dead:
            break
        noreturn |= dead
        changed = dead
    for a in funcs:
        if a in extent or a in names:
            continue
        names[a] = plt.get(a, f"targ{a:x}")
    return code, funcs, names


def _next_end(image: ElfImage, entries: np.ndarray, i: int) -> int:
    """Extent end of an entry without a symbol: the next entry, or the end of its section."""
    a = int(entries[i])
    region = image.code_region(a)
    nxt = int(entries[i + 1]) if i + 1 < len(entries) else (region.end if region else a + 16)
    return min(nxt, region.end) if region else nxt


# ---------------------------------------------------------------------------------------------------
# The structure builder


class StructureBuilder:
    def __init__(self, image: ElfImage, source: SourceInfo, demangle: Callable[[str], str],
                 lm_name: str | None = None) -> None:
        self.image = image
        self.src = source
        self.demangle = demangle
        self.lm_name = lm_name or image.path
        self.base = image.basename
        self.unknown_base = f"[{self.base}]"
        self.shared = not image.is_executable
        self._realpath: dict[str, str] = {}
        self.file_names = source.lines.files
        self.lo_list: list[int] = source.lines.lo.tolist()
        self.code: CodeIndex | None = None
        self.funcs: Functions | None = None
        self.runs: InstructionRuns | None = None

    # -- helpers ----------------------------------------------------------------------------------
    def realpath(self, path: str) -> str:
        got = self._realpath.get(path)
        if got is None:
            got = os.path.realpath(path) if path and os.path.exists(path) else path
            self._realpath[path] = got
        return got

    def line_at(self, vma: int) -> tuple[str, int, int] | None:
        """(file, line, end of the line-map range) at an address, or None."""
        lm = self.src.lines
        i = bisect.bisect_right(self.lo_list, vma) - 1
        if i < 0 or vma >= int(lm.hi[i]):
            return None
        f = int(lm.file[i])
        name = self.file_names[f] if f >= 0 else ""
        if not name:
            return None
        return name, int(lm.line[i]), int(lm.hi[i])

    def proc_line(self, start: int, end: int) -> tuple[str, int] | None:
        """File and line of a procedure: the line map at its start, else the first entry in its first
        800 bytes (hpcstruct searches forward for compilers that omit the first bytes)."""
        got = self.line_at(start)
        if got is not None:
            return self.realpath(got[0]), got[1]
        lm = self.src.lines
        stop = min(end, start + 800)
        i = bisect.bisect_right(self.lo_list, start)
        while i < len(lm.lo) and int(lm.lo[i]) < stop:
            f = int(lm.file[i])
            if f >= 0 and self.file_names[f]:
                return self.realpath(self.file_names[f]), int(lm.line[i])
            i += 1
        return None

    def pick_names(self, sym: FunctionSymbol) -> tuple[str, str]:
        link = ""
        for n in sym.names:
            if not link or len(n) > len(link) or (len(n) == len(link) and n < link):
                link = n
        return link, self.demangle(link)

    # -- skeleton ---------------------------------------------------------------------------------
    def skeleton(self, funcs: Functions, names: dict[int, str]) -> dict[str, dict[int, Group]]:
        files: dict[str, dict[int, Group]] = {}
        symbols = self.image.structure_functions
        starts = [f.addr for f in symbols]
        fdes = self.image.fde_ranges
        entries = sorted(funcs)

        def add(pinfo: ProcInfo, file: str, sym: FunctionSymbol | None, start: int, end: int,
                alt: bool = False) -> None:
            groups = files.setdefault(file, {})
            g = groups.get(start)
            if g is None:
                g = groups[start] = Group(start, end, sym, alt)
            g.procs[pinfo.entry] = pinfo

        self.funcs = funcs
        if self.code is not None and funcs.cfg is not None:
            self.runs = InstructionRuns(self.code, funcs.cfg, self.src)
        for k, vma in enumerate(entries):
            sym = None
            i = bisect.bisect_right(starts, vma) - 1
            for cand in symbols[max(0, i - 8):i + 1][::-1]:  # the nearest symbols; big enclosing ones are rare
                if cand.addr <= vma < cand.end:
                    sym = cand
                    break
            region = self.image.code_region(vma)
            if sym is None and vma in fdes and region is not None and not region.name.startswith(".plt"):
                sym = FunctionSymbol(vma, fdes[vma] - vma, [], -1, region.index)
            vma_str = f"0x{vma:x}"
            if sym is not None:
                region = self.image.code_region(sym.addr)
                sym_end = min(sym.end, region.end) if region else min(sym.end, sym.addr + OUTSIDE_CODE_EXTENT)
                filenm = self.unknown_base
                line = 0
                got = self.proc_line(sym.addr, sym_end)
                if got is not None:
                    filenm, line = got
                if vma == sym.addr:
                    if sym.names:
                        link, pretty = self.pick_names(sym)
                    else:  # code known only from its FDE
                        link, pretty = names.get(vma, f"targ{vma:x}"), f"{UNKNOWN_PROC} {vma_str}"
                    if self.shared:
                        pretty += f" [{self.base}]"
                    add(ProcInfo(vma, link, pretty, line), filenm, sym, sym.addr, sym_end)
                    continue
                link = names.get(vma, f"targ{vma:x}")
                pfile, pline = self.unknown_base, 0
                got = self.proc_line(vma, sym_end)
                label = f"{UNKNOWN_PROC} {vma_str}"
                if got is not None:
                    pfile, pline = got
                    label += f" {basename(pfile)}" + (f":{pline}" if pline > 0 else "")
                if self.shared:
                    label += f" [{self.base}]"
                if pfile == filenm:
                    add(ProcInfo(vma, link, label, pline), filenm, sym, sym.addr, sym_end)
                else:
                    add(ProcInfo(vma, link, label, pline), pfile, sym, sym.addr, sym_end, True)
                    add(ProcInfo(vma, "", "", 0, gap_only=True), filenm, sym, sym.addr, sym_end)
                continue
            link = names.get(vma, f"targ{vma:x}")
            pretty = self.demangle(link)
            if pretty != link and not any(c in pretty for c in "()<>"):
                pretty = link
            reg_end = region.end if region else 0
            if k + 1 < len(entries):
                end = entries[k + 1]
                if region is not None and vma < reg_end < end:
                    end = reg_end
                elif region is None:
                    end = min(end, vma + OUTSIDE_CODE_EXTENT)
            elif region is not None and vma < reg_end:
                end = reg_end
            else:
                end = vma + OUTSIDE_CODE_EXTENT
            if end - vma <= 32 and not link.lower().endswith("@plt"):
                link += "@plt"
                pretty += "@plt"
            if self.shared:
                pretty += f" [{self.base}]"
            add(ProcInfo(vma, link, pretty, 0), self.unknown_base, None, vma, end)
        return files

    # -- per group --------------------------------------------------------------------------------
    def do_group(self, filenm: str, group: Group, batch: FunctionBatch) -> None:
        ctx = _GroupCtx(self, group.strtab)
        covered: list[tuple[int, int]] = []
        for entry in sorted(group.procs):
            pinfo = group.procs[entry]
            k = batch.number.get(entry)
            if k is None:
                continue
            first, count = batch.first[k], batch.count[k]
            if not group.alt_file:
                covered.extend(zip(batch.start[first:first + count], batch.end[first:first + count], strict=True))
            if pinfo.gap_only:
                continue
            pinfo.root = self.do_function(filenm, batch, k, ctx)
        if not group.alt_file:
            self.add_gaps(filenm, group, covered, ctx)

    def do_function(self, filenm: str, batch: FunctionBatch, k: int, ctx: _GroupCtx) -> TreeNode:
        func = _FuncCtx(ctx, batch, k)
        entry = batch.entry_block[k]
        top = find_loops(func.successors(), entry)[0] if batch.cyclic[k] and entry >= 0 else []
        if not top:  # what function_tree does without loops: every block in order under the root
            root = TreeNode()
            if func.starts:
                func.add_runs(root, batch.block_ra[func.first], batch.block_rb[func.first + len(func.starts) - 1])
            return root
        return function_tree(func, top, filenm)

    def add_gaps(self, filenm: str, group: Group, covered: list[tuple[int, int]], ctx: _GroupCtx) -> None:
        if not group.procs:
            return
        leader = group.procs[min(group.procs)]
        if leader.root is None:
            leader.root = TreeNode()
        root = leader.root
        strtab = ctx.strtab
        gaps = compute_gaps(covered, group.start, group.end)
        fid = strtab(filenm)
        fbase = strtab(basename(filenm))
        stmts = []
        for lo, hi in gaps:
            vma = lo
            while vma < hi:
                got = self.line_at(vma)
                if got is not None:
                    end = min(got[2], hi)
                    f = got[0]
                    stmts.append(Stmt(vma, end - vma, strtab(f), strtab(basename(f)), got[1]))
                else:
                    end = min(vma + 4, hi)
                    stmts.append(Stmt(vma, end - vma, fid, fbase, leader.line))
                vma = end
        if stmts:  # gaps ascend, so their inline nodes come from one lookup
            nodes = self.src.inlines.innermost(np.array([st.vma for st in stmts], np.uint64)).tolist()
            for st, n in zip(stmts, nodes, strict=True):
                root.descend(ctx.path_of(n)).stmts.append(st)

    def inline_path(self, node: int, strtab: StrTab) -> list[FLP]:
        return flp_path(((self.realpath(f) if f else "", line, name) for f, line, name in self.src.inlines.chain(node)),
                        strtab)

    # -- whole binary ---------------------------------------------------------------------------
    def build(self) -> Module:
        """Single-process build (see :func:`build_module` for the parallel one)."""
        self.code, funcs, names = discover_functions(self.image)
        files = self.skeleton(funcs, names)
        return self.assemble(files, self.fragments(files, print_order(files)))

    def fragments(self, files: dict[str, dict[int, Group]], keys: list[tuple[str, int]]
                  ) -> dict[tuple[str, int], ModuleBuilder]:
        """:meth:`fragment` of each group, the functions of consecutive groups gathered in batches."""
        parts: dict[tuple[str, int], ModuleBuilder] = {}
        batch_keys: list[tuple[str, int]] = []
        blocks = 0
        funcs = self.funcs if self.funcs is not None else Functions(None)
        for i, key in enumerate(keys):
            procs = files[key[0]][key[1]].procs
            batch_keys.append(key)
            blocks += sum(len(funcs.get(e, ())) for e in procs)
            if blocks < BATCH_BLOCKS and i + 1 < len(keys):
                continue
            batch = FunctionBatch(self, [e for k in batch_keys for e in files[k[0]][k[1]].procs])
            for k in batch_keys:
                parts[k] = self.fragment(files, k, batch)
            batch_keys, blocks = [], 0
        return parts

    def fragment(self, files: dict[str, dict[int, Group]], key: tuple[str, int], batch: FunctionBatch
                 ) -> ModuleBuilder:
        """The procedures of one group as scopes whose top level hangs under their file's F."""
        filenm, start = key
        group = files[filenm][start]
        self.do_group(filenm, group, batch)
        part = ModuleBuilder("")
        for pinfo in _ordered(group):
            if not pinfo.gap_only and pinfo.root is not None:
                self.emit_proc(part, -1, filenm, pinfo, group)
            pinfo.root = None  # free the tree as soon as it is written
        return part

    def assemble(self, files: dict[str, dict[int, Group]], parts: dict[tuple[str, int], ModuleBuilder]) -> Module:
        out = ModuleBuilder(self.lm_name, has_calls=False)
        for filenm in sorted(files):
            keys = [(filenm, start) for start in sorted(files[filenm])]
            if not any(len(parts[k]) for k in keys):
                continue
            frow = out.add(F, -1, file=filenm, has_v=False)
            for k in keys:
                out.append(parts[k], frow)
        return out.finish()

    def emit_proc(self, out: ModuleBuilder, frow: int, filenm: str, pinfo: ProcInfo, group: Group) -> None:
        assert pinfo.root is not None
        emit_procedure(out, frow, group.strtab, pinfo.root, filenm=filenm, name=pinfo.pretty, link=pinfo.link,
                       line=pinfo.line, entry=pinfo.entry)


def _ordered(group: Group) -> list[ProcInfo]:
    return [group.procs[e] for e in sorted(group.procs)]


class InstructionRuns:
    """Every instruction of the binary filed by line and inline chain, as runs: maximal sequences of
    instructions of one basic block with the same innermost inline node, file and line. Computed once,
    vectorized over all the code; a block's statements are then its runs ``block_ra[b]:block_rb[b]``."""

    def __init__(self, code: CodeIndex, cfg: ProgramCFG, source: SourceInfo) -> None:
        addrs = code.addr
        n = len(addrs)
        ends = addrs + code.size.astype(np.uint64)
        lm = source.lines
        inl = source.inlines.innermost(addrs)
        if len(lm.lo) and n:
            li = lm.find(addrs)
            files = np.where(li >= 0, lm.file[np.maximum(li, 0)], -1)
            lines = np.where((li >= 0) & (files >= 0), lm.line[np.maximum(li, 0)], 0)
        else:
            files = np.full(n, -1, np.int32)
            lines = np.zeros(n, np.int32)
        brk = np.ones(n, bool)
        if n > 1:
            brk[1:] = (inl[1:] != inl[:-1]) | (files[1:] != files[:-1]) | (lines[1:] != lines[:-1])
        brk[cfg.starts] = True
        rs = np.flatnonzero(brk)
        re_ = np.append(rs[1:], n) - 1
        self.vma = addrs[rs]
        self.length = (ends[re_] - addrs[rs]).astype(np.int64)
        self.inl = inl[rs]
        self.file = files[rs]
        self.line = lines[rs]
        self.block_ra = np.searchsorted(rs, cfg.starts)
        self.block_rb = np.searchsorted(rs, cfg.ends, side="right")
        self.block_last_inl = inl[cfg.ends] if n else np.zeros(0, np.int32)


class FunctionBatch:
    """The blocks and instruction runs of the functions of several groups, gathered by one set of array
    operations (numpy calls per function would cost more than the Python work on a typical function) into
    Python lists indexed by a batch-wide block number; a function's blocks are consecutive numbers in
    address order, its successors are given in the same numbering (-1: none)."""

    def __init__(self, sb: StructureBuilder, entries: list[int]) -> None:
        funcs = sb.funcs
        self.number: dict[int, int] = {}      # function entry -> its number in the batch
        if funcs is None or funcs.cfg is None or sb.code is None or sb.runs is None:
            return
        cfg, code, runs = funcs.cfg, sb.code, sb.runs
        entries = [a for a in dict.fromkeys(entries) if a in funcs]
        counts = [len(funcs[a]) for a in entries]
        total = sum(counts)
        offsets = np.zeros(len(entries) + 1, np.int64)
        np.cumsum(counts, out=offsets[1:])
        self.number = {a: k for k, a in enumerate(entries)}
        self.first: list[int] = offsets[:-1].tolist()   # per function: its first block
        self.count = counts
        bids = np.fromiter(itertools.chain.from_iterable(funcs[a] for a in entries), np.int64, total)
        owner = np.repeat(np.arange(len(entries), dtype=np.int64), counts)
        ends = cfg.ends[bids]
        last = code.addr[ends]
        start = cfg.start_addr[bids]
        self.start: list[int] = start.tolist()
        self.end: list[int] = (last + code.size[ends].astype(np.uint64)).tolist()
        self.last_vma: list[int] = last.tolist()
        self.last_inl: list[int] = runs.block_last_inl[bids].tolist()
        # Per function: its block that starts at its entry (-1: none).
        self.entry_block: list[int] = []
        for a, f, n in zip(entries, self.first, counts, strict=True):
            k = bisect.bisect_left(self.start, a, f, f + n)
            self.entry_block.append(k - f if k < f + n and self.start[k] == a else -1)
        # Successors in batch numbering: the position of (function, block id) among the sorted keys.
        span = len(cfg.starts) + 1
        keys = owner * span + bids

        def number(rows: np.ndarray, succ: np.ndarray) -> np.ndarray:
            if not total:
                return np.zeros(0, np.int64)
            want = owner[rows] * span + np.maximum(succ, 0)
            pos = np.minimum(np.searchsorted(keys, want), total - 1)
            return np.where((succ >= 0) & (keys[pos] == want), pos, -1)

        every = np.arange(total, dtype=np.int64)
        succ_a = number(every, cfg._succ_a[bids])
        succ_b = number(every, cfg._succ_b[bids])
        back = ((succ_a >= 0) & (succ_a <= every)) | ((succ_b >= 0) & (succ_b <= every))
        self.succ_a: list[int] = succ_a.tolist()
        self.succ_b: list[int] = succ_b.tolist()
        self.kind_a: list[int] = cfg._kind_a[bids].tolist()
        self.kind_b: list[int] = cfg._kind_b[bids].tolist()
        self.tables: dict[int, list[int]] = {}
        if cfg.table_succ:
            with_table = np.flatnonzero(in_sorted(bids, np.array(sorted(cfg.table_succ), np.int64))).tolist()
            lists = [cfg.table_succ[b] for b in bids[with_table].tolist()]
            flat = np.array([t for targets in lists for t in targets], np.int64)
            rows = np.repeat(np.array(with_table, np.int64), [len(t) for t in lists])
            numbered = number(rows, flat).tolist() if len(flat) else []
            k = 0
            for i, targets in zip(with_table, lists, strict=True):
                mine = [t for t in numbered[k:k + len(targets)] if t >= 0]
                k += len(targets)
                self.tables[i] = mine
                if any(t <= i for t in mine):
                    back[i] = True
        # Per function: some edge goes back to an earlier (or the same) block; only then can it have loops.
        self.cyclic: list[bool] = (np.bincount(owner[back], minlength=len(entries)) > 0).tolist()
        # Instruction runs of every block, gathered.
        ra = runs.block_ra[bids]
        lens = runs.block_rb[bids] - ra
        starts = np.zeros(total, np.int64)
        if total:
            np.cumsum(lens[:-1], out=starts[1:])
        sel = np.arange(int(lens.sum()), dtype=np.int64) + np.repeat(ra - starts, lens)
        self.block_ra: list[int] = starts.tolist()
        self.block_rb: list[int] = (starts + lens).tolist()
        self.run_vma: list[int] = runs.vma[sel].tolist()
        self.run_len: list[int] = runs.length[sel].tolist()
        self.run_inl: list[int] = runs.inl[sel].tolist()
        self.run_file: list[int] = runs.file[sel].tolist()
        self.run_line: list[int] = runs.line[sel].tolist()


class _GroupCtx:
    """Per group (one string table): inline paths and file ids already put into the table."""

    def __init__(self, sb: StructureBuilder, strtab: StrTab) -> None:
        self.sb = sb
        self.strtab = strtab
        self.paths: dict[int, list[FLP]] = {}
        self.file_ids: dict[int, tuple[int, int]] = {}

    def path_of(self, node: int) -> list[FLP]:
        got = self.paths.get(node)
        if got is None:
            got = self.paths[node] = self.sb.inline_path(node, self.strtab)
        return got

    def file_of(self, fid: int) -> tuple[int, int]:
        got = self.file_ids.get(fid)
        if got is None:
            name = self.sb.file_names[fid] if fid >= 0 else ""
            name = self.sb.realpath(name) if name else ""
            got = self.file_ids[fid] = (self.strtab(name), self.strtab(basename(name)))
        return got


class _FuncCtx:
    """One parsed function (blocks ``first .. first + count - 1`` of a :class:`FunctionBatch`) as
    :class:`~hpcsa.structure.tree.FunctionCode`; blocks are numbered from 0 here."""

    def __init__(self, group: _GroupCtx, batch: FunctionBatch, number: int) -> None:
        self.group = group
        self.strtab = group.strtab
        self.batch = batch
        self.first = first = batch.first[number]
        self.starts: list[int] = batch.start[first:first + batch.count[number]]

    def successors(self) -> list[list[int]]:
        """Successor blocks of every block (all edge kinds), in the order ParseAPI lists a block's edges,
        which is the order its parser took them from its work list: a conditional branch's fall-through
        before its taken target (work order cond_not_taken < cond_taken), a jump table's targets by address
        (equal order: lower target first); an edge joins its source block's target list only when the
        parser takes it (Parser::relink). The loop search visits them in this order, and the nesting of
        irreducible loops, hence their lines, depends on it. Blocks are numbered in address order."""
        b, f = self.batch, self.first
        out = []
        for i in range(f, f + len(self.starts)):
            succs = []
            if b.succ_b[i] >= 0:              # a conditional branch: not taken, then taken
                succs.append(b.succ_b[i] - f)
            if b.succ_a[i] >= 0:
                succs.append(b.succ_a[i] - f)
            table = b.tables.get(i)
            if table:
                succs.extend(sorted(t - f for t in table))
            out.append(succs)
        return out

    def loop_successors(self, bi: int) -> list[int]:
        b, f = self.batch, self.first
        i = f + bi
        out = []
        if b.succ_a[i] >= 0 and b.kind_a[i] != E_CALL_FT:
            out.append(b.succ_a[i] - f)
        if b.succ_b[i] >= 0 and b.kind_b[i] != E_CALL_FT:
            out.append(b.succ_b[i] - f)
        table = b.tables.get(i)
        if table:
            out.extend(t - f for t in table)
        return out

    def exit_condition(self, bi: int) -> tuple[int, str, int, list[FLP]]:
        sb = self.group.sb
        vma = self.batch.last_vma[self.first + bi]
        got = sb.line_at(vma)
        file = sb.realpath(got[0]) if got else ""
        return vma, file, got[1] if got else 0, self.group.path_of(self.batch.last_inl[self.first + bi])

    def add_block(self, root: TreeNode, bi: int) -> None:
        """File the statements of block ``bi`` (of this function) under their inline paths."""
        i = self.first + bi
        self.add_runs(root, self.batch.block_ra[i], self.batch.block_rb[i])

    def add_runs(self, root: TreeNode, ra: int, rb: int) -> None:
        """File the statements of runs ``ra .. rb - 1`` of the batch (consecutive blocks' runs are
        consecutive) under their inline paths below ``root``."""
        group, b = self.group, self.batch
        paths, file_ids = group.paths, group.file_ids
        run_vma, run_len, run_inl, run_file, run_line = b.run_vma, b.run_len, b.run_inl, b.run_file, b.run_line
        below: dict[int, TreeNode] = {}  # inline node -> its tree node under root
        for r in range(ra, rb):
            node = root
            n = run_inl[r]
            if n >= 0:
                node = below.get(n)  # type: ignore[assignment]
                if node is None:
                    path = paths.get(n)
                    if path is None:
                        path = group.path_of(n)
                    node = below[n] = root.descend(path)
            f = run_file[r]
            ids = file_ids.get(f)
            if ids is None:
                ids = group.file_of(f)
            node.stmts.append(Stmt(run_vma[r], run_len[r], ids[0], ids[1], run_line[r]))


def print_order(files: dict[str, dict[int, Group]]) -> list[tuple[str, int]]:
    return [(f, start) for f in sorted(files) for start in sorted(files[f])]


# State handed to forked workers (set just before the fork; read-only in the children).
_FORK_STATE: dict[str, object] = {}


def _fork_context() -> multiprocessing.context.BaseContext | None:
    try:
        return multiprocessing.get_context("fork")
    except ValueError:  # platforms without fork: work in one process
        return None


def _source_worker() -> SourceInfo:
    image, demangle = _FORK_STATE["image"], _FORK_STATE["demangle"]
    return read_source_info(image, demangle)  # type: ignore[arg-type]


def _groups_worker(keys: list[tuple[str, int]]) -> dict[tuple[str, int], ModuleBuilder]:
    sb: StructureBuilder = _FORK_STATE["builder"]  # type: ignore[assignment]
    files = _FORK_STATE["files"]
    return sb.fragments(files, keys)  # type: ignore[arg-type]


def _shares(files: dict[str, dict[int, Group]], order: list[tuple[str, int]], n: int) -> list[list[tuple[str, int]]]:
    """Groups dealt to n workers, biggest first to the least loaded (cost ~ size squared, as hpcstruct)."""
    loads = [0.0] * n
    shares: list[list[tuple[str, int]]] = [[] for _ in range(n)]
    cost = {k: float(files[k[0]][k[1]].end - files[k[0]][k[1]].start) ** 2 + 1e4 for k in order}
    for k in sorted(order, key=lambda k: -cost[k]):
        i = loads.index(min(loads))
        shares[i].append(k)
        loads[i] += cost[k]
    return shares


def build_module(image: ElfImage, demangle: Callable[[str], str], lm_name: str | None = None,
                 jobs: int = 1) -> tuple[Module, list[str]]:
    """The structure of an x86-64 binary as one LM, and notes on missing or unreadable debug information.

    With ``jobs > 1`` (and fork available) the debug information is read in a child process while this
    one decodes and parses the code, then the procedure groups are dealt to ``jobs`` processes; the
    output is the same as with one process (groups are assembled in print order)."""
    ctx = _fork_context() if jobs > 1 else None
    if ctx is None:
        source = read_source_info(image, demangle)
        sb = StructureBuilder(image, source, demangle, lm_name)
        return sb.build(), source.notes
    _FORK_STATE.update(image=image, demangle=demangle)
    try:
        with concurrent.futures.ProcessPoolExecutor(1, mp_context=ctx) as pool:
            pending = pool.submit(_source_worker)
            code, funcs, names = discover_functions(image)
            source = pending.result()
        sb = StructureBuilder(image, source, demangle, lm_name)
        sb.code = code
        files = sb.skeleton(funcs, names)
        order = print_order(files)
        shares = _shares(files, order, jobs)
        _FORK_STATE.update(builder=sb, files=files)
        parts: dict[tuple[str, int], ModuleBuilder] = {}
        with concurrent.futures.ProcessPoolExecutor(jobs - 1, mp_context=ctx) as pool:
            futures = [pool.submit(_groups_worker, share) for share in shares[1:] if share]
            parts.update(sb.fragments(files, shares[0]))
            for fut in futures:
                parts.update(fut.result())
        return sb.assemble(files, parts), source.notes
    finally:
        _FORK_STATE.clear()
