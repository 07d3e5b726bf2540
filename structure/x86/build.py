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
   ``locateTree``; emitted into a :class:`~hpcsa.formats.hpcstruct.model.ModuleBuilder`.

Steps 2 to 4 are hpcstruct's tree rules, the same for GPU binaries: they live
in :mod:`hpcsa.structure.tree`; this module supplies the x86-64 side: the
skeleton and the per-group driver, here; the functions, from
:mod:`hpcsa.structure.x86.functions`; their blocks, successors and instruction runs,
from :mod:`hpcsa.structure.x86.function_code`; the line map and inline table, from
:mod:`hpcsa.structure.debuginfo.source_info`.

Per-instruction work is vectorized per function (line and inline lookups
over the instruction address array); Python loops run over runs of
instructions sharing a line and inline chain, blocks, and loops.
"""

from __future__ import annotations

import bisect
import contextlib
import os
import threading
from collections.abc import Callable
from dataclasses import field
from typing import Any

import numpy as np

from hpcsa.core.dataclass import dataclass
from hpcsa.core.forking import Channel
from hpcsa.core.workers import ForkedWorker, can_fork
from hpcsa.formats.hpcstruct.model import F, Module, ModuleBuilder
from hpcsa.structure.debuginfo.inline import UNKNOWN_PROC
from hpcsa.structure.debuginfo.source_info import SourceInfo, has_debug_information, read_source_info
from hpcsa.structure.debuginfo.subprogram_names import procedure_names
from hpcsa.structure.elf import ElfImage, FunctionSymbol
from hpcsa.structure.loops import find_loops
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
from hpcsa.structure.x86.cfg import CodeIndex
from hpcsa.structure.x86.function_code import FuncCtx, FunctionBatch, GroupCtx, InstructionRuns, Packed
from hpcsa.structure.x86.functions import Functions, discover_functions
from hpcsa.structure.x86.stripped import is_stripped
from hpcsa.structure.x86.sweep import TailShare, sweep_tail, tail_start

#: Extent of a procedure whose entry lies in no code section (a corrupt section or symbol table: none of the
#: real test binaries has one). There is no code to cover, and taking the next entry or the symbol's size
#: as its end let a damaged file make statements over gigabytes.
OUTSIDE_CODE_EXTENT = 20
UNKNOWN_LINK = "<unknown link>"
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
# The structure builder


class StructureBuilder:
    """One binary's structure as it is built: its functions, code, instruction runs and names."""

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
        self.stripped = is_stripped(image)
        self._symbol_starts = [f.addr for f in image.structure_functions]
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

    def follows_symbol(self, vma: int) -> bool:
        """Whether a function symbol starts before ``vma`` in its section: Dyninst's Symtab then takes ``vma``
        for part of that function (``Symtab::getContainingFunction`` returns the function with the greatest
        start at or below an address, whatever its size), and hpcstruct names a procedure at ``vma`` that
        has no symbol ``<unknown procedure> 0x...``, else ``targ...`` (``makeSkeleton``, cases 2 and 4)."""
        i = bisect.bisect_right(self._symbol_starts, vma) - 1
        region = self.image.code_region(vma)
        return i >= 0 and region is not None and self.image.structure_functions[i].section == region.index

    def pick_names(self, sym: FunctionSymbol) -> tuple[str, str]:
        """(link, pretty) name of a function with symbols: the longest of its symbols' names and the name
        DWARF offers it (:mod:`hpcsa.structure.debuginfo.subprogram_names`), demangled."""
        return procedure_names(sym.names, self.src.entry_names.get(sym.addr), self.demangle)

    # -- skeleton ---------------------------------------------------------------------------------
    def skeleton(self, funcs: Functions, names: dict[int, str], file_runs: bool = True
                 ) -> dict[str, dict[int, Group]]:
        """The procedure groups by file; and the instruction runs (``runs``) unless ``file_runs`` is
        false (another process files them meanwhile: :func:`skeleton_in_two`)."""
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
        if file_runs and self.code is not None and funcs.cfg is not None:
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
                    else:  # code known only from its FDE: named as hpcstruct names code without a symbol
                        link = pretty = names.get(vma, f"targ{vma:x}")
                        if self.follows_symbol(vma):
                            pretty = f"{UNKNOWN_PROC} {vma_str}"
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
            if self.stripped and link.startswith("targ") and self.follows_symbol(vma):
                pretty = f"{UNKNOWN_PROC} {vma_str}"  # hpcstruct's outline function (see follows_symbol)
            elif end - vma <= 32 and not link.lower().endswith("@plt"):
                link += "@plt"
                pretty += "@plt"
            if self.shared:
                pretty += f" [{self.base}]"
            add(ProcInfo(vma, link, pretty, 0), self.unknown_base, None, vma, end)
        return files

    # -- per group --------------------------------------------------------------------------------
    def do_group(self, filenm: str, group: Group, batch: FunctionBatch) -> None:
        """The procedures of one group, as hpcstruct's ``doFunctionList`` (HPCToolkit ``src/hpcstruct/
        Struct.cpp``): a function whose entry block is also another function's is parsed no further (its
        blocks still cover the group, unless that other function was covered here already), the code of
        the group no function covers becomes the leader's gaps."""
        ctx = GroupCtx(self, group.strtab)
        covered: list[tuple[int, int]] = []
        done: set[int] = set()
        containers = self.funcs.containers if self.funcs is not None else {}
        for entry in sorted(group.procs):
            pinfo = group.procs[entry]
            k = batch.number.get(entry)
            if k is None:
                continue
            inside = containers.get(entry)
            if inside and not done.isdisjoint(inside):
                continue
            first, count = batch.first[k], batch.count[k]
            if not group.alt_file:
                covered.extend(zip(batch.start[first:first + count], batch.end[first:first + count], strict=True))
                done.add(entry)
            if pinfo.gap_only or inside:
                continue
            pinfo.root = self.do_function(filenm, batch, k, ctx)
        if not group.alt_file:
            self.add_gaps(filenm, group, covered, ctx)

    def do_function(self, filenm: str, batch: FunctionBatch, k: int, ctx: GroupCtx) -> TreeNode:
        func = FuncCtx(ctx, batch, k)
        entry = batch.entry_block[k]
        top = find_loops(func.successors(), entry)[0] if batch.cyclic[k] and entry >= 0 else []
        if not top:  # what function_tree does without loops: every block in order under the root
            root = TreeNode()
            if func.starts:
                func.add_runs(root, batch.block_ra[func.first], batch.block_rb[func.first + len(func.starts) - 1])
            return root
        return function_tree(func, top, filenm)

    def add_gaps(self, filenm: str, group: Group, covered: list[tuple[int, int]], ctx: GroupCtx) -> None:
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


def print_order(files: dict[str, dict[int, Group]]) -> list[tuple[str, int]]:
    return [(f, start) for f in sorted(files) for start in sorted(files[f])]


def send_source_info(conn: Channel, image: ElfImage, demangle: Callable[[str], str],
                     tail: tuple[int, int] | None = None) -> SourceInfo:
    """A forked worker (:class:`hpcsa.core.workers.ForkedWorker`): sweep the code from ``tail`` (section,
    address) on and send it (:mod:`hpcsa.structure.x86.sweep`); read the debug information and send it, with
    the function extents of the unwind table (the skeleton needs them; parsed here, beside the parent's
    function discovery, the longer of the two, rather than after it); then file the instructions the
    parent found into runs (:class:`~hpcsa.structure.x86.function_code.InstructionRuns`, 70-90 ms for python3.11d) while the parent builds the
    skeleton, and send them (None received: no code). Returns what it read, so that its process ends
    without freeing it while the parent waits."""
    if tail is not None:
        conn.send(("sweep", sweep_tail(image, *tail)))
    source = read_source_info(image, demangle)
    conn.send(("source", (source, image.fde_ranges)))
    needs: tuple[Packed, np.ndarray, Packed, Packed] | None = conn.recv()  # InstructionRuns.needs's
    if needs is not None:
        conn.send(("runs", InstructionRuns.filed(*needs, source)))
    return source


def receive_source_info(reader: ForkedWorker, image: ElfImage) -> SourceInfo:
    """What :func:`send_source_info` sent; the unwind table's extents become ``image.fde_ranges``."""
    source, fdes = reader.receive("source")
    if "fde_ranges" not in vars(image):  # a stripped binary's discovery has parsed them already
        image.fde_ranges = fdes  # the cached property, filled
    return source


def skeleton_in_two(image: ElfImage, demangle: Callable[[str], str], lm_name: str | None
                    ) -> tuple[StructureBuilder, Functions, dict[str, dict[int, Group]]]:
    """The first step with two processes: a forked one sweeps a share of the code and reads the debug
    information while this one sweeps the rest and finds the functions; then the skeleton. Returns the
    builder (its code and source set), the functions and the procedure groups by file."""
    tail = tail_start(image, has_debug_information(image))
    with ForkedWorker(send_source_info, image, demangle, tail, what="hpcsa struct") as reader:
        share = None if tail is None else TailShare(*tail, _received_early(reader, "sweep"))
        code, funcs, names = discover_functions(image, share)
        if share is not None and not share.taken:
            share.receive()
        source = receive_source_info(reader, image)
        reader.send(None if funcs.cfg is None or code is None else InstructionRuns.needs(code, funcs.cfg))
        sb = StructureBuilder(image, source, demangle, lm_name)
        sb.code = code
        files = sb.skeleton(funcs, names, file_runs=False)
        if funcs.cfg is not None:
            sb.runs = reader.receive("runs")
    return sb, funcs, files


def _received_early(reader: ForkedWorker, tag: str) -> Callable[[], Any]:
    """What the worker sends next, read by a thread from now on (a large message would hold the worker in
    its write until this process reads it); the returned call waits for it."""
    got: list[Any] = []
    failed: list[BaseException] = []

    def read() -> None:
        try:
            got.append(reader.receive(tag))
        except BaseException as exc:  # noqa: BLE001  (raised again by the waiting call)
            failed.append(exc)

    thread = threading.Thread(target=read, name="hpcsa-receive", daemon=True)
    thread.start()

    def wait() -> Any:
        thread.join()
        if failed:
            raise failed[0]
        return got[0]
    return wait


def _send_fragments(conn: Channel, sb: StructureBuilder,
                    files: dict[str, dict[int, Group]], keys: list[tuple[str, int]]) -> None:
    conn.send(("parts", sb.fragments(files, keys)))


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
    if jobs <= 1 or not can_fork():
        source = read_source_info(image, demangle)
        sb = StructureBuilder(image, source, demangle, lm_name)
        return sb.build(), source.notes
    sb, funcs, files = skeleton_in_two(image, demangle, lm_name)
    shares = _shares(files, print_order(files), jobs)
    parts: dict[tuple[str, int], ModuleBuilder] = {}
    with contextlib.ExitStack() as stack:
        workers = [stack.enter_context(ForkedWorker(_send_fragments, sb, files, share, what="hpcsa struct"))
                   for share in shares[1:] if share]
        parts.update(sb.fragments(files, shares[0]))
        for worker in workers:
            parts.update(worker.receive("parts"))
    return sb.assemble(files, parts), sb.src.notes
