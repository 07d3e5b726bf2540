"""Program structure of an x86-64 ELF binary, assembled the way HPCToolkit's hpcstruct does.

The pipeline (reference hpctoolkit.md §2.3, binary-structure.md §5.3):

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

Per-instruction work is vectorized per function (line and inline lookups
over the instruction address array); Python loops run over runs of
instructions sharing a line and inline chain, blocks, and loops.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from hpcsa.structure.cfg import E_CALL_FT, NORETURN_NAMES, CodeIndex, Function, parse_function
from hpcsa.structure.dwarf import DebugInfo, DwarfError
from hpcsa.structure.dwarf_inline import InlineTable, read_inlines
from hpcsa.structure.dwarf_lines import LineMap, build_line_map, read_program
from hpcsa.structure.elf import ElfImage, FunctionSymbol
from hpcsa.structure.loops import Loop, find_loops
from hpcsa.structure.model import GUARD_NAME, A, F, L, Module, ModuleBuilder, P, S

UNKNOWN_PROC = "<unknown procedure>"
UNKNOWN_LINK = "<unknown link>"
DWARF_SECTIONS = (".debug_info", ".debug_abbrev", ".debug_str", ".debug_line_str", ".debug_str_offsets",
                  ".debug_addr", ".debug_ranges", ".debug_rnglists", ".debug_line")


def _basename(path: str) -> str:
    return path.rsplit("/", 1)[-1] if path else ""


class StrTab:
    """Strings numbered in order of first use (hpcstruct orders inline children by these numbers)."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {"": 0}
        self.strings: list[str] = [""]

    def __call__(self, s: str) -> int:
        i = self.index.get(s)
        if i is None:
            i = self.index[s] = len(self.strings)
            self.strings.append(s)
        return i


@dataclass(frozen=True, order=True)
class FLP:
    """One inlined call: (file, line, callee) as string-table numbers (their order is the output order)."""

    file: int
    line: int
    name: int
    base: int = field(compare=False)


@dataclass
class Stmt:
    vma: int
    length: int
    file: int   # string-table number
    base: int
    line: int

    @property
    def end(self) -> int:
        return self.vma + self.length


class TreeNode:
    __slots__ = ("nodes", "stmts", "loops", "file")

    def __init__(self, file: int = 0) -> None:
        self.nodes: dict[FLP, TreeNode] = {}
        self.stmts: list[Stmt] = []
        self.loops: list[LoopInfo] = []
        self.file = file

    def member(self, vma: int) -> bool:
        return any(s.vma <= vma < s.end for s in self.stmts)


@dataclass
class LoopInfo:
    node: TreeNode
    path: list[FLP]
    entry_vma: int
    file: int
    base: int
    line: int
    irred: bool


@dataclass
class ProcInfo:
    func: Function | None
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


def read_source_info(image: ElfImage, demangle: Callable[[str], str]) -> SourceInfo:
    """Line map and inline table; corrupt or missing DWARF degrades to empty tables with a note."""
    notes: list[str] = []
    sections = {}
    for name in DWARF_SECTIONS:
        try:
            raw = image.section_bytes(name)
        except Exception:  # a truncated section: ignore it
            raw = None
        if raw is not None:
            sections[name] = raw
    if ".debug_info" not in sections and ".debug_line" not in sections:
        return SourceInfo(LineMap.empty(), InlineTable.empty(), ["no DWARF line or debug information"])
    if any(image.section_named(n) and image.section_named(n).flags & 0x800 for n in DWARF_SECTIONS):  # type: ignore[union-attr]
        return SourceInfo(LineMap.empty(), InlineTable.empty(), ["compressed DWARF sections are not supported"])
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
        inlines = read_inlines(dw, {k: p.files for k, p in programs.items()}, demangle)
    except (DwarfError, IndexError, ValueError) as exc:
        notes.append(f"inlining information unreadable ({exc})")
        inlines = InlineTable.empty()
    return SourceInfo(lines, inlines, notes)


# ---------------------------------------------------------------------------------------------------
# Functions


def discover_functions(image: ElfImage) -> tuple[CodeIndex | None, dict[int, Function], dict[int, str]]:
    """Parse every function reachable from symbols, the entry point and direct calls (tail calls
    included); returns the decoded code, functions by entry and the names of those without a symbol
    (PLT names, ``targXXXX``, ``_start``)."""
    code_secs = image.code_sections
    if not code_secs:
        return None, {}, {}
    symbols = image.functions
    extent = {f.addr: f.end for f in symbols}
    sym_starts = sorted(extent)
    plt = image.plt_names
    plt_sections = [s for s in code_secs if s.name.startswith(".plt")]
    names: dict[int, str] = {}
    entries = set(extent)
    e_entry = int(image.elf.header["e_entry"])
    if e_entry and image.has_interpreter and image.code_region(e_entry) is not None and e_entry not in entries:
        entries.add(e_entry)
        names[e_entry] = "_start"
    restarts = sorted(entries | set(plt))
    code = CodeIndex(image, restarts)
    noreturn: set[int] = {f.addr for f in symbols if any(n in NORETURN_NAMES for n in f.names)}
    noreturn |= {a for a, n in plt.items() if n in NORETURN_NAMES}
    sorted_entries: list[int] = []

    def extent_of(a: int) -> int:
        if a in extent:
            return extent[a]
        region = image.code_region(a)
        i = bisect.bisect_right(sorted_entries, a)
        nxt = sorted_entries[i] if i < len(sorted_entries) else (region.end if region else a + 16)
        return min(nxt, region.end) if region else nxt

    def is_tail_call(entry: int, end: int, target: int) -> bool:
        """A jump out of the function: into a PLT section, or into another symbol's code."""
        if entry <= target < end:
            return False
        if target in plt or any(s.addr <= target < s.end for s in plt_sections):
            return True
        i = bisect.bisect_right(sym_starts, target) - 1
        return i >= 0 and target < extent[sym_starts[i]] and sym_starts[i] != entry

    funcs: dict[int, Function] = {}
    pending = sorted(entries)
    for _round in range(4):
        while pending:
            missing = [a for a in pending if code.row(a) < 0 and image.code_region(a) is not None]
            if missing:  # entries inside a linear sweep's instruction: decode again with them as restarts
                restarts = sorted(set(restarts) | set(missing))
                code = CodeIndex(image, restarts)
            sorted_entries = sorted(entries)
            new: list[int] = []
            for a in pending:
                if image.code_region(a) is None:
                    continue
                f = parse_function(code, a, extent_of(a), entries, noreturn, is_tail_call)
                funcs[a] = f
                for t in [t for _, t in f.calls] + f.tail_calls:
                    if t not in entries and image.code_region(t) is not None:
                        entries.add(t)
                        new.append(t)
            pending = sorted(set(new))
        # Functions that never return make the calls to them end their blocks: re-parse their callers.
        dead = {a for a, f in funcs.items() if not f.returns and a not in noreturn}
        if not dead:
            break
        noreturn |= dead
        pending = sorted(a for a, f in funcs.items() if any(t in dead for _, t in f.calls))
        if not pending:
            break
    for a in funcs:
        if a in extent or a in names:
            continue
        names[a] = plt.get(a, f"targ{a:x}")
    return code, funcs, names


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
    def skeleton(self, funcs: dict[int, Function], names: dict[int, str]) -> dict[str, dict[int, Group]]:
        files: dict[str, dict[int, Group]] = {}
        symbols = self.image.functions
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

        for k, vma in enumerate(entries):
            func = funcs[vma]
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
                sym_end = min(sym.end, region.end) if region else sym.end
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
                    add(ProcInfo(func, vma, link, pretty, line), filenm, sym, sym.addr, sym_end)
                    continue
                link = names.get(vma, f"targ{vma:x}")
                pfile, pline = self.unknown_base, 0
                got = self.proc_line(vma, sym_end)
                label = f"{UNKNOWN_PROC} {vma_str}"
                if got is not None:
                    pfile, pline = got
                    label += f" {_basename(pfile)}" + (f":{pline}" if pline > 0 else "")
                if self.shared:
                    label += f" [{self.base}]"
                if pfile == filenm:
                    add(ProcInfo(func, vma, link, label, pline), filenm, sym, sym.addr, sym_end)
                else:
                    add(ProcInfo(func, vma, link, label, pline), pfile, sym, sym.addr, sym_end, True)
                    add(ProcInfo(func, vma, "", "", 0, gap_only=True), filenm, sym, sym.addr, sym_end)
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
            elif region is not None and vma < reg_end:
                end = reg_end
            else:
                end = vma + 20
            if end - vma <= 32 and not link.lower().endswith("@plt"):
                link += "@plt"
                pretty += "@plt"
            if self.shared:
                pretty += f" [{self.base}]"
            add(ProcInfo(func, vma, link, pretty, 0), self.unknown_base, None, vma, end)
        return files

    # -- per group --------------------------------------------------------------------------------
    def do_group(self, filenm: str, group: Group) -> None:
        strtab = group.strtab
        covered: list[tuple[int, int]] = []
        for entry in sorted(group.procs):
            pinfo = group.procs[entry]
            func = pinfo.func
            if func is None:
                continue
            blocks = func.block_list()
            if not group.alt_file:
                covered.extend((b.start, b.end) for b in blocks)
            if pinfo.gap_only:
                continue
            pinfo.root = self.do_function(filenm, func, blocks, strtab)
        if not group.alt_file:
            self.add_gaps(filenm, group, covered, strtab)

    def do_function(self, filenm: str, func: Function, blocks: list, strtab: StrTab) -> TreeNode:
        index = {b.start: i for i, b in enumerate(blocks)}
        assert self.code is not None
        addrs = self.code.addr[func.insns]
        # Per instruction: line-map range and innermost inline node (vectorized over the function).
        lm = self.src.lines
        li = lm.find(addrs) if len(addrs) else np.zeros(0, np.int64)
        inl = self.src.inlines.innermost(addrs)
        sizes = self.code.size[func.insns].tolist()
        file_ids = np.where(li >= 0, lm.file[np.maximum(li, 0)] if len(lm.lo) else -1, -1)
        line_nums = np.where(li >= 0, lm.line[np.maximum(li, 0)] if len(lm.lo) else 0, 0)
        ctx = _FuncCtx(self, strtab, func, addrs, sizes, file_ids.tolist(), line_nums.tolist(), inl.tolist(),
                       blocks)
        succs = [[index[t] for t, _k in b.succs if t in index] for b in blocks]
        top, _innermost = find_loops(succs, index[func.entry]) if func.entry in index else ([], [])
        visited = [False] * len(blocks)
        root = TreeNode()
        loop_infos: list[LoopInfo] = []
        for loop in sorted(top, key=lambda lp: min(blocks[e].start for e in lp.entries)):
            loop_infos.append(self.do_loop_tree(filenm, ctx, blocks, visited, loop, succs))
        for i, b in enumerate(blocks):
            if not visited[i]:
                visited[i] = True
                ctx.add_block(root, b)
        for info in loop_infos:
            merge_inline_loop(root, [], info)
        return root

    def do_loop_tree(self, filenm: str, ctx: _FuncCtx, blocks: list, visited: list[bool], loop: Loop,
                     succs: list[list[int]]) -> LoopInfo:
        children = sorted(loop.children, key=lambda lp: min(blocks[e].start for e in lp.entries))
        subs = [self.do_loop_tree(filenm, ctx, blocks, visited, c, succs) for c in children]
        root = TreeNode()
        for i in sorted(loop.blocks):
            if not visited[i]:
                visited[i] = True
                ctx.add_block(root, blocks[i])
        for info in subs:
            merge_inline_loop(root, [], info)
        info = self.find_loop_header(filenm, ctx, blocks, root, loop, succs)
        merge_irred_loops(info)
        return info

    def find_loop_header(self, filenm: str, ctx: _FuncCtx, blocks: list, root: TreeNode, loop: Loop,
                         succs: list[list[int]]) -> LoopInfo:
        strtab = ctx.strtab
        inside = loop.blocks
        back_sources = {blocks[s].start for s, _ in loop.back_edges}
        conds: dict[int, tuple[int, int, int, int, list[FLP]]] = {}  # vma -> (depth, file, base, line, path)
        for bi in inside:
            b = blocks[bi]
            in_loop = out_loop = False
            for t, kind in b.succs:
                if kind == E_CALL_FT:
                    continue
                if ctx.index[t] in inside:
                    in_loop = True
                else:
                    out_loop = True
            if in_loop and out_loop:
                vma = ctx.last_insn(b)
                got = self.line_at(vma)
                file = self.realpath(got[0]) if got else ""
                line = got[1] if got else 0
                path = ctx.inline_path(vma)
                conds[vma] = (len(path), strtab(file), strtab(_basename(file)), line, path)
        _ = back_sources
        clist = sorted(conds.items())

        # Step 2: descend single inline chains until an exit condition lives at this level.
        path: list[FLP] = []
        moved: list[Stmt] = []
        depth_root = 0
        while len(root.nodes) == 1 and not root.loops:
            flp, sub = next(iter(root.nodes.items()))
            stop = False
            for vma, _c in clist:
                if root.member(vma):
                    stop = True
                    break
                hit = next((s for s in moved if s.vma <= vma < s.end), None)
                if hit is not None and hit.base == flp.base:
                    stop = True
                    break
            if stop:
                break
            moved.extend(root.stmts)
            root.stmts = []
            root = sub
            path.append(flp)
            depth_root += 1
        root.stmts.extend(moved)

        # Step 4: the header's file, then its line.
        proc_file = strtab(filenm)
        proc_base = strtab(_basename(filenm))
        empty = 0
        file_ans = base_ans = empty
        line_ans = 0
        found = False
        if depth_root == 0:
            for _vma, (d, _f, bs, _ln, _p) in clist:
                if d == depth_root and bs != empty and bs == proc_base:
                    file_ans, base_ans, found = proc_file, proc_base, True
                    break
        if not found:
            for flp in sorted(root.nodes):
                if any(d == depth_root and bs != empty and bs == flp.base for _v, (d, f, bs, _l, _p) in clist):
                    file_ans, base_ans, found = flp.file, flp.base, True
                    break
        if not found:
            for _vma, (d, f, bs, _ln, _p) in clist:
                if d == depth_root and bs != empty:
                    file_ans, base_ans, found = f, bs, True
                    break
        if not found and depth_root == 0 and proc_file != empty:
            file_ans, base_ans, found = proc_file, proc_base, True
        if not found:
            for flp in sorted(root.nodes):
                if flp.file != empty:
                    file_ans, base_ans, found = flp.file, flp.base, True
                    break
        if not found:
            for sub in root.loops:
                if sub.file != empty:
                    file_ans, base_ans, found = sub.file, sub.base, True
                    break
        if not found:
            for s in sorted(root.stmts, key=lambda s: s.vma):
                if s.file != empty:
                    file_ans, base_ans, line_ans, found = s.file, s.base, s.line, True
                    break
        if file_ans == empty:
            line_ans = 0
        else:
            for _vma, (d, _f, bs, ln, _p) in clist:
                if d == depth_root and bs == base_ans and ln > 0 and (line_ans == 0 or ln < line_ans):
                    line_ans = ln
            for _vma, (d, _f, _bs, _ln, p) in clist:
                if d > depth_root and p[depth_root].base == base_ans and p[depth_root].line > 0:
                    if line_ans == 0 or p[depth_root].line < line_ans:
                        line_ans = p[depth_root].line
            for sub in root.loops:
                if sub.base == base_ans and sub.line > 0 and (line_ans == 0 or sub.line < line_ans):
                    line_ans = sub.line
        entry_vma = min(blocks[e].start for e in loop.entries)
        return LoopInfo(root, path, entry_vma, file_ans, base_ans, line_ans, loop.irreducible)

    def add_gaps(self, filenm: str, group: Group, covered: list[tuple[int, int]], strtab: StrTab) -> None:
        if not group.procs:
            return
        leader = group.procs[min(group.procs)]
        if leader.root is None:
            leader.root = TreeNode()
        root = leader.root
        gaps = compute_gaps(covered, group.start, group.end)
        fid = strtab(filenm)
        fbase = strtab(_basename(filenm))
        for lo, hi in gaps:
            vma = lo
            while vma < hi:
                got = self.line_at(vma)
                if got is not None:
                    end = min(got[2], hi)
                    f = got[0]
                    self.add_stmt(root, strtab, vma, end - vma, strtab(f), strtab(_basename(f)), got[1])
                else:
                    end = min(vma + 4, hi)
                    self.add_stmt(root, strtab, vma, end - vma, fid, fbase, leader.line)
                vma = end

    def add_stmt(self, root: TreeNode, strtab: StrTab, vma: int, length: int, file: int, base: int,
                 line: int) -> None:
        node = root
        addrs = np.array([vma], np.uint64)
        n = int(self.src.inlines.innermost(addrs)[0])
        for flp in _flp_path(self.src.inlines, n, strtab, self.realpath):
            nxt = node.nodes.get(flp)
            if nxt is None:
                nxt = node.nodes[flp] = TreeNode()
            node = nxt
        node.stmts.append(Stmt(vma, length, file, base, line))

    # -- whole binary ---------------------------------------------------------------------------
    def build(self) -> Module:
        self.code, funcs, names = discover_functions(self.image)
        files = self.skeleton(funcs, names)
        out = ModuleBuilder(self.lm_name, has_calls=False)
        for filenm in sorted(files):
            groups = files[filenm]
            for start in sorted(groups):
                self.do_group(filenm, groups[start])
        for filenm in sorted(files):
            groups = files[filenm]
            procs = [p for s in sorted(groups) for p in _ordered(groups[s]) if not p.gap_only]
            if not procs:
                continue
            frow = out.add(F, -1, file=filenm, has_v=False)
            for start in sorted(groups):
                for pinfo in _ordered(groups[start]):
                    if pinfo.gap_only or pinfo.root is None:
                        continue
                    self.emit_proc(out, frow, filenm, pinfo, groups[start])
        return out.finish()

    def emit_proc(self, out: ModuleBuilder, frow: int, filenm: str, pinfo: ProcInfo, group: Group) -> None:
        strtab = group.strtab
        prow = out.add(P, frow, name=pinfo.pretty, link=pinfo.link if pinfo.link != pinfo.pretty else None,
                       line=pinfo.line, ranges=[(pinfo.entry, pinfo.entry + 1)])
        assert pinfo.root is not None
        _Emitter(out, strtab).tree(prow, pinfo.root, strtab(filenm), strtab(_basename(filenm)), pinfo.line)


def _ordered(group: Group) -> list[ProcInfo]:
    return [group.procs[e] for e in sorted(group.procs)]


class _FuncCtx:
    """Per-function lookups shared by blocks and loops."""

    def __init__(self, sb: StructureBuilder, strtab: StrTab, func: Function, addrs: np.ndarray, sizes: list[int],
                 files: list[int], lines: list[int], inl: list[int], blocks: list) -> None:  # type: ignore[type-arg]
        self.sb = sb
        self.strtab = strtab
        self.func = func
        self.addr_list: list[int] = addrs.tolist()
        rows = np.array([b.first for b in blocks] + [b.last for b in blocks], np.int64)
        local = np.searchsorted(func.insns, rows).tolist()
        self.local = {id(b): (local[i], local[i + len(blocks)]) for i, b in enumerate(blocks)}
        self.sizes = sizes
        self.files = files
        self.lines = lines
        self.inl = inl
        self.index = {b.start: i for i, b in enumerate(blocks)}
        self._paths: dict[int, list[FLP]] = {}
        self._file_ids: dict[int, tuple[int, int]] = {}

    def inline_path(self, vma: int) -> list[FLP]:
        i = bisect.bisect_left(self.addr_list, vma)
        node = self.inl[i] if i < len(self.addr_list) and self.addr_list[i] == vma else \
            int(self.sb.src.inlines.innermost(np.array([vma], np.uint64))[0])
        return self.path_of(node)

    def path_of(self, node: int) -> list[FLP]:
        got = self._paths.get(node)
        if got is None:
            got = self._paths[node] = _flp_path(self.sb.src.inlines, node, self.strtab, self.sb.realpath)
        return got

    def file_of(self, fid: int) -> tuple[int, int]:
        got = self._file_ids.get(fid)
        if got is None:
            name = self.sb.file_names[fid] if fid >= 0 else ""
            name = self.sb.realpath(name) if name else ""
            got = self._file_ids[fid] = (self.strtab(name), self.strtab(_basename(name)))
        return got

    def last_insn(self, block) -> int:  # type: ignore[no-untyped-def]
        return self.addr_list[self.local[id(block)][1]]

    def add_block(self, root: TreeNode, block) -> None:  # type: ignore[no-untyped-def]
        """File every instruction of a block under its inline path, runs of equal (path, file, line)
        as one statement each."""
        i, last = self.local[id(block)]
        addrs, sizes, files, lines, inl = self.addr_list, self.sizes, self.files, self.lines, self.inl
        while i <= last:
            j = i
            key = (inl[i], files[i], lines[i])
            length = sizes[i]
            while j + 1 <= last and (inl[j + 1], files[j + 1], lines[j + 1]) == key:
                j += 1
                length += sizes[j]
            node = root
            for flp in self.path_of(inl[i]):
                nxt = node.nodes.get(flp)
                if nxt is None:
                    nxt = node.nodes[flp] = TreeNode()
                node = nxt
            fid, fbase = self.file_of(files[i])
            node.stmts.append(Stmt(addrs[i], length, fid, fbase, lines[i] if files[i] >= 0 else 0))
            i = j + 1


def _flp_path(inlines: InlineTable, node: int, strtab: StrTab, realpath: Callable[[str], str]) -> list[FLP]:
    out = []
    for file, line, name in inlines.chain(node):
        f = realpath(file) if file else ""
        out.append(FLP(strtab(f), line, strtab(name), strtab(_basename(f))))
    return out


def merge_inline_loop(dest: TreeNode, path: list[FLP], info: LoopInfo) -> None:
    k = 0
    while k < len(path) and k < len(info.path) and path[k] == info.path[k]:
        k += 1
    for flp in info.path[k:]:
        nxt = dest.nodes.get(flp)
        if nxt is None:
            nxt = dest.nodes[flp] = TreeNode()
        dest = nxt
    dest.loops.append(info)


def merge_inline_tree(dest: TreeNode, src: TreeNode) -> None:
    if src is dest:
        return
    dest.stmts.extend(src.stmts)
    src.stmts = []
    dest.loops.extend(src.loops)
    src.loops = []
    for flp, sub in src.nodes.items():
        mine = dest.nodes.get(flp)
        if mine is None:
            dest.nodes[flp] = sub
        else:
            merge_inline_tree(mine, sub)
    src.nodes = {}


def merge_irred_loops(l1: LoopInfo) -> None:
    if not l1.irred or not any(l2.irred for l2 in l1.node.loops):
        return
    new: list[LoopInfo] = []
    for l2 in l1.node.loops:
        if l2.irred and l1.base == l2.base and l1.line == l2.line:
            new.extend(l2.node.loops)
            l2.node.loops = []
            merge_inline_tree(l1.node, l2.node)
        else:
            new.append(l2)
    new.sort(key=lambda x: x.entry_vma)
    l1.node.loops = new


def compute_gaps(covered: list[tuple[int, int]], start: int, end: int) -> list[tuple[int, int]]:
    gaps = []
    for lo, hi in sorted(covered):
        if start >= end:
            break
        if hi <= start:
            continue
        if lo <= start:
            start = hi
            continue
        gaps.append((start, min(lo, end)))
        start = hi
    if start < end:
        gaps.append((start, end))
    return [(a, b) for a, b in gaps if b > a]


class _Emitter:
    """hpcstruct's output rules (Struct-Output.cpp): statements by line, guard aliens, double aliens."""

    def __init__(self, out: ModuleBuilder, strtab: StrTab) -> None:
        self.out = out
        self.s = strtab

    def text(self, i: int) -> str:
        return self.s.strings[i]

    def tree(self, parent: int, node: TreeNode, scope_file: int, scope_base: int, scope_line: int) -> None:
        aliens: dict[int, TreeNode] = {}
        local = TreeNode()
        for st in node.stmts:
            if st.line > 0 and (st.base != scope_base or st.line < scope_line):
                a = aliens.get(st.base)
                if a is None:
                    a = aliens[st.base] = TreeNode(st.file)
                a.stmts.append(st)
            else:
                local.stmts.append(st)
        for lp in node.loops:
            if lp.line > 0 and (lp.base != scope_base or lp.line < scope_line):
                a = aliens.get(lp.base)
                if a is None:
                    a = aliens[lp.base] = TreeNode(lp.file)
                a.loops.append(lp)
            else:
                local.loops.append(lp)
        self.stmts(parent, local)
        for base in sorted(aliens):
            a = aliens[base]
            line = locate_line(a, base)
            row = self.out.add(A, parent, line=line, file=self.text(a.file), name=GUARD_NAME, ranges=[])
            self.stmts(row, a)
            self.loops(row, a)
        self.loops(parent, local)
        for flp in sorted(node.nodes):
            sub = node.nodes[flp]
            sfile, sbase = locate_file(sub)
            sline = locate_line(sub, sbase)
            outer = self.out.add(A, parent, line=flp.line, file=self.text(flp.file), name="", ranges=[])
            inner = self.out.add(A, outer, line=sline, file=self.text(sfile), name=self.text(flp.name), ranges=[])
            self.tree(inner, sub, sfile, sbase, sline)

    def stmts(self, parent: int, node: TreeNode) -> None:
        by_line: dict[int, list[tuple[int, int]]] = {}
        for st in node.stmts:
            by_line.setdefault(st.line, []).append((st.vma, st.end))
        for line in sorted(by_line):
            self.out.add(S, parent, line=line, ranges=_merge(by_line[line]))

    def loops(self, parent: int, node: TreeNode) -> None:
        for lp in node.loops:
            row = self.out.add(L, parent, line=lp.line, file=self.text(lp.file),
                               ranges=[(lp.entry_vma, lp.entry_vma + 1)])
            self.tree(row, lp.node, lp.file, lp.base, 0)


def locate_file(node: TreeNode) -> tuple[int, int]:
    for flp in sorted(node.nodes):
        if flp.file != 0:
            return flp.file, flp.base
    for lp in node.loops:
        if lp.file != 0:
            return lp.file, lp.base
    for st in sorted(node.stmts, key=lambda s: s.vma):
        if st.file != 0:
            return st.file, st.base
    return 0, 0


def locate_line(node: TreeNode, base: int) -> int:
    best = None
    for flp in node.nodes:
        if flp.base == base and flp.line > 0 and (best is None or flp.line < best):
            best = flp.line
    for lp in node.loops:
        if lp.base == base and lp.line > 0 and (best is None or lp.line < best):
            best = lp.line
    if best is not None:
        return best
    for st in node.stmts:
        if st.base == base and st.line > 0 and (best is None or st.line < best):
            best = st.line
    return best or 0


def _merge(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    ranges.sort()
    out: list[list[int]] = []
    for lo, hi in ranges:
        if out and lo <= out[-1][1]:
            if hi > out[-1][1]:
                out[-1][1] = hi
        else:
            out.append([lo, hi])
    return [(a, b) for a, b in out]


def build_module(image: ElfImage, demangle: Callable[[str], str], lm_name: str | None = None,
                 jobs: int = 1) -> tuple[Module, list[str]]:
    """The structure of an x86-64 binary as one LM, and notes on missing or unreadable debug information."""
    source = read_source_info(image, demangle)
    sb = StructureBuilder(image, source, demangle, lm_name)
    return sb.build(), source.notes
