"""Program structure of a GPU binary, assembled the way hpcstruct does it (``--gpucfg yes``).

The machine-specific readers (:mod:`hpcsa.structure.gpu.cubin` for NVIDIA
cubins, :mod:`hpcsa.structure.gpu.amdgpu` for AMD code objects) hand over a
:class:`GpuBinary`: functions with their control-flow graphs (or none, when
no disassembler could be run), a line map and an inline table. This module
turns it into a :class:`~hpcsa.formats.hpcstruct.model.Module` following hpcstruct's
rules (src/hpcstruct/Struct.cpp, Struct-Inline.cpp, Struct-Output.cpp):

* a procedure sits in the file of its first line; its line is the smallest
  line of that file among its first 32 instructions (hpcstruct's CUDA rule);
  names are demangled, the mangled name goes in ``ln``;
* every instruction is filed under its chain of inlined calls; loops come
  from the WMZC loop forest of :mod:`hpcsa.structure.loops`, each placed at
  the inline depth and file/line chosen from its exit conditions
  (``findLoopHeader``), irreducible subloops with their parent's line merged;
* a block ending in a call gives a ``<C>`` (callee entry in ``t``, the device
  in ``d``); an indirect call gives a ``<C>`` without ``t`` (hpcstruct drops
  those; hpcsa's GPU call-graph reconstruction needs them);
* code no block covers (padding after the last return) becomes statements
  by the line map (hpcstruct's gaps);
* statements merged per line; guard aliens for code from other files or
  earlier lines; double aliens for inlined calls.

Without a control-flow graph the output is hpcstruct's ``--gpucfg no`` form:
statements from the line map only, ``s`` symbol indices, ``has-calls="0"``.
The inline-tree, loop-header and output rules are those of x86-64 binaries
(:mod:`hpcsa.structure.tree`); this module supplies the GPU side.
Per-instruction lookups are vectorized per function; Python loops run over
runs of instructions that share a line and inline chain, blocks and loops.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Callable
from dataclasses import field

import numpy as np

from hpcsa.core.arrays import sorted_unique
from hpcsa.core.dataclass import dataclass
from hpcsa.core.demangle import demangle_symbol as demangle
from hpcsa.core.demangle import drop_return_type as drop_return_type  # re-exported
from hpcsa.formats.hpcstruct.model import F, Module, ModuleBuilder
from hpcsa.structure.debuginfo.inline import InlineTable
from hpcsa.structure.debuginfo.lines import LineMap
from hpcsa.structure.edges import E_CALL_FT
from hpcsa.structure.gpu.cfg import FunctionGraph
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

PROC_SEARCH_INSNS = 32  # hpcstruct's CUDA_PROC_SEARCH_LEN: instructions scanned for a procedure's line
UNPARSED_STEP = 4       # hpcstruct's statement step in functions without a control-flow graph


@dataclass
class GpuProc:
    """One function symbol: its names, extent and (when disassembled) its control-flow graph."""

    names: list[str]             # every function symbol at this address
    symbol: int                  # symbol table index of the first one
    start: int
    end: int
    graph: FunctionGraph | None = None
    callee: dict[int, int | None] = field(default_factory=dict)   # call row -> callee entry (None: indirect)


@dataclass
class GpuBinary:
    """What a machine-specific reader extracted; the input of :func:`build_structure`."""

    path: str                    # the LM name
    basename: str                # for "[<basename>]", the file of code without line information
    procs: list[GpuProc]
    lines: LineMap
    inlines: InlineTable
    device: str                  # the d attribute of call sites, e.g. "NVIDIA sm_75"
    insn_size: int               # step of hpcstruct's procedure-line search
    has_cfg: bool                # control-flow graphs were built (else hpcstruct's --gpucfg no output)
    notes: list[str] = field(default_factory=list)
    proc_line_rule: str = "cuda"  # "cuda": smallest line of the first 32 instructions; "entry": the line at
                                  # the entry, else the first within 800 bytes (hpcstruct's rule for CPUs)


# ---------------------------------------------------------------------------------------------------
# The builder


@dataclass
class _ProcOut:
    proc: GpuProc
    link: str
    pretty: str
    line: int
    root: TreeNode | None = None
    strtab: StrTab = field(default_factory=StrTab)


class _Builder:
    def __init__(self, binary: GpuBinary, demangle_fn: Callable[[str], str]) -> None:
        self.b = binary
        self.demangle = demangle_fn
        self.unknown_base = f"[{binary.basename}]"
        self.lm = binary.lines
        self.lo_list: list[int] = self.lm.lo.tolist()
        self.hi_list: list[int] = self.lm.hi.tolist()
        self.file_list: list[int] = self.lm.file.tolist()
        self.line_list: list[int] = self.lm.line.tolist()
        self._realpath: dict[str, str] = {}
        self._chains: dict[int, tuple[tuple[str, int, str], ...]] = {}
        inl = binary.inlines
        self.inline_cuts: list[int] = sorted_unique(np.concatenate([inl.lo, inl.hi])).tolist() if len(inl.lo) else []

    # -- lookups ----------------------------------------------------------------------------------
    def realpath(self, path: str) -> str:
        """hpcstruct's realpath of a source file; paths absent here are normalized lexically."""
        got = self._realpath.get(path)
        if got is None:
            if path and os.path.exists(path):
                got = os.path.realpath(path)
            else:
                got = os.path.normpath(path) if path.startswith("/") else path
            self._realpath[path] = got
        return got

    def file_name(self, fid: int) -> str:
        name = self.lm.files[fid] if 0 <= fid < len(self.lm.files) else ""
        return self.realpath(name) if name else ""

    def statement(self, vma: int) -> tuple[str, int, int] | None:
        """(file, line, end of the line-map range) at ``vma``, or None (hpcstruct's getStatement)."""
        i = bisect.bisect_right(self.lo_list, vma) - 1
        if i < 0 or vma >= self.hi_list[i]:
            return None
        name = self.file_name(self.file_list[i])
        if not name:
            return None
        return name, self.line_list[i], self.hi_list[i]

    def chain(self, node: int) -> tuple[tuple[str, int, str], ...]:
        got = self._chains.get(node)
        if got is None:
            got = self._chains[node] = tuple((self.realpath(f) if f else "", ln, nm)
                                             for f, ln, nm in self.b.inlines.chain(node))
        return got

    def path(self, node: int, strtab: StrTab) -> list[FLP]:
        return flp_path(self.chain(node), strtab)

    def inline_node(self, vma: int) -> int:
        return int(self.b.inlines.innermost(np.array([vma], np.uint64))[0])

    def add_stmt(self, root: TreeNode, strtab: StrTab, node: int, stmt: Stmt) -> None:
        root.descend(self.path(node, strtab)).stmts.append(stmt)

    # -- skeleton ---------------------------------------------------------------------------------
    def proc_line(self, proc: GpuProc) -> tuple[str, int] | None:
        """hpcstruct's CUDA rule: the smallest line, in the file of the first line found, over the first
        32 instructions; else the first line found anywhere in the function."""
        step = self.b.insn_size
        if self.b.proc_line_rule == "entry":
            vma = proc.start
            while vma < min(proc.end, proc.start + 800):
                got = self.statement(vma)
                if got is not None:
                    return got[0], got[1]
                vma += step
            return None
        best: tuple[str, int] | None = None
        vma = proc.start
        stop = min(proc.end, proc.start + step * PROC_SEARCH_INSNS)
        while vma < stop:
            got = self.statement(vma)
            if got is not None:
                if best is None:
                    best = (got[0], got[1])
                elif got[0] == best[0] and got[1] < best[1]:
                    best = (got[0], got[1])
            vma += step
        if best is not None:
            return best
        while vma < proc.end:
            got = self.statement(vma)
            if got is not None:
                return got[0], got[1]
            vma += step
        return None

    def names(self, proc: GpuProc) -> tuple[str, str]:
        """(link, pretty): hpcstruct prefers the longer pretty name, then the longer link name, then the
        alphabetically lower ones."""
        best: tuple[str, str] | None = None
        for link in proc.names:
            pretty = self.demangle(link)
            if best is None or (-len(pretty), -len(link), pretty, link) < (-len(best[1]), -len(best[0]),
                                                                            best[1], best[0]):
                best = (link, pretty)
        return best if best is not None else (f"targ{proc.start:x}", f"<unknown procedure> {proc.start:#x}")

    # -- one function -----------------------------------------------------------------------------
    def do_function(self, out: _ProcOut, filenm: str) -> None:
        proc = out.proc
        strtab = out.strtab
        root = TreeNode()
        g = proc.graph
        covered: list[tuple[int, int]] = []
        if g is not None and g.blocks:
            fn = _Function(self, strtab, proc, g)
            top, _inner = find_loops(g.succ_lists(), g.entry)
            root = function_tree(fn, top, filenm)
            covered = [(b.start, b.end) for b in g.blocks]
        elif g is None:
            self.add_unparsed(root, strtab, proc)
            out.root = root
            return
        self.add_gaps(root, strtab, proc, covered, filenm, out.line)
        out.root = root

    def add_unparsed(self, root: TreeNode, strtab: StrTab, proc: GpuProc) -> None:
        """hpcstruct's doUnparsableFunction: the line map over the whole function. hpcstruct steps 4 bytes
        at a time; runs end where the line map or the inline table changes, which is the same."""
        vma = proc.start
        while vma < proc.end:
            got = self.statement(vma)
            stop = min(self._next_cut(vma), proc.end)
            if got is None:
                end = min(self._next_line_start(vma, proc.end), stop)
                self.add_stmt(root, strtab, -1, Stmt(vma, end - vma, 0, 0, 0))
            else:
                end = min(got[2], stop)
                self.add_stmt(root, strtab, self.inline_node(vma),
                              Stmt(vma, end - vma, strtab(got[0]), strtab(basename(got[0])), got[1]))
            vma = end

    def _next_cut(self, vma: int) -> int:
        """The first inline-range boundary after ``vma``."""
        i = bisect.bisect_right(self.inline_cuts, vma)
        return self.inline_cuts[i] if i < len(self.inline_cuts) else 1 << 64

    def _next_line_start(self, vma: int, end: int) -> int:
        i = bisect.bisect_right(self.lo_list, vma)
        return self.lo_list[i] if i < len(self.lo_list) and self.lo_list[i] < end else end

    def add_gaps(self, root: TreeNode, strtab: StrTab, proc: GpuProc, covered: list[tuple[int, int]],
                 filenm: str, proc_line: int) -> None:
        for lo, hi in compute_gaps(covered, proc.start, proc.end):
            vma = lo
            while vma < hi:
                got = self.statement(vma)
                if got is not None:
                    end = min(got[2], hi)
                    self.add_stmt(root, strtab, self.inline_node(vma),
                                  Stmt(vma, end - vma, strtab(got[0]), strtab(basename(got[0])), got[1]))
                else:
                    end = min(vma + UNPARSED_STEP, hi)
                    nxt = self._next_line_start(vma, hi)
                    if nxt > end:
                        end = nxt
                    self.add_stmt(root, strtab, -1,
                                  Stmt(vma, end - vma, strtab(filenm), strtab(basename(filenm)), proc_line))
                vma = end

    # -- the whole binary -------------------------------------------------------------------------
    def build(self) -> Module:
        files: dict[str, list[_ProcOut]] = {}
        for proc in sorted(self.b.procs, key=lambda p: p.start):
            link, pretty = self.names(proc)
            got = self.proc_line(proc)
            filenm, line = got if got is not None else (self.unknown_base, 0)
            out = _ProcOut(proc, link, pretty, line)
            files.setdefault(filenm, []).append(out)
        lm = ModuleBuilder(self.b.path, has_calls=self.b.has_cfg)
        for filenm in sorted(files):
            frow = lm.add(F, -1, file=filenm, has_v=False)
            for out in files[filenm]:
                self.do_function(out, filenm)
                self.emit_proc(lm, frow, filenm, out)
        return lm.finish()

    def emit_proc(self, lm: ModuleBuilder, frow: int, filenm: str, out: _ProcOut) -> None:
        assert out.root is not None
        emit_procedure(lm, frow, out.strtab, out.root, filenm=filenm, name=out.pretty, link=out.link,
                       line=out.line, entry=out.proc.start, sym=None if self.b.has_cfg else out.proc.symbol,
                       device=self.b.device)


class _Function:
    """One disassembled function as :class:`~hpcsa.structure.tree.FunctionCode`, with lookups shared by its
    blocks and loops (vectorized over its instructions)."""

    def __init__(self, builder: _Builder, strtab: StrTab, proc: GpuProc, g: FunctionGraph) -> None:
        self.builder = builder
        self.strtab = strtab
        self.proc = proc
        self.g = g
        code = g.code
        self.addr: list[int] = code.address.tolist()
        self.size: list[int] = code.size.tolist()
        lm = builder.lm
        li = lm.find(code.address) if len(lm.lo) else np.full(len(code), -1, np.int64)
        ok = li >= 0
        safe = np.where(ok, li, 0)
        self.fid: list[int] = (np.where(ok, lm.file[safe], -1) if len(lm.lo) else li).tolist()
        self.line: list[int] = (np.where(ok, lm.line[safe], 0) if len(lm.lo) else np.zeros(len(code), int)).tolist()
        self.inl: list[int] = builder.b.inlines.innermost(code.address).tolist()
        self._files: dict[int, tuple[int, int]] = {}
        self.starts: list[int] = [b.start for b in g.blocks]

    def loop_successors(self, bi: int) -> list[int]:
        return [t for t, kind in self.g.blocks[bi].succs if kind != E_CALL_FT]

    def exit_condition(self, bi: int) -> tuple[int, str, int, list[FLP]]:
        vma = self.addr[self.g.blocks[bi].last]
        got = self.builder.statement(vma)
        return vma, got[0] if got else "", got[1] if got else 0, self.builder.path(self.node_at(vma), self.strtab)

    def node_at(self, vma: int) -> int:
        i = bisect.bisect_left(self.addr, vma)
        return self.inl[i] if i < len(self.addr) and self.addr[i] == vma else self.builder.inline_node(vma)

    def file_of(self, fid: int) -> tuple[int, int]:
        got = self._files.get(fid)
        if got is None:
            name = self.builder.file_name(fid)
            got = self._files[fid] = (self.strtab(name), self.strtab(basename(name)))
        return got

    def add_block(self, root: TreeNode, bi: int) -> None:
        """File every instruction of a block under its inline chain; runs of equal (chain, file, line) form
        one statement, and a call ending the block is a statement of its own."""
        builder, strtab = self.builder, self.strtab
        b = self.g.blocks[bi]
        addr, size, fid, line, inl = self.addr, self.size, self.fid, self.line, self.inl
        last = b.last
        call_row = b.call if b.call is not None and b.call in self.proc.callee else -1
        i = b.first
        while i <= last:
            j = i
            length = size[i]
            if i != call_row:
                key = (inl[i], fid[i], line[i])
                while j + 1 <= last and j + 1 != call_row and (inl[j + 1], fid[j + 1], line[j + 1]) == key:
                    j += 1
                    length += size[j]
            f, base = self.file_of(fid[i])
            ln = line[i] if f != 0 else 0
            if i == call_row:
                stmt = Stmt(addr[i], length, f, base, ln, True, self.proc.callee.get(i))
            else:
                stmt = Stmt(addr[i], length, f, base, ln)
            builder.add_stmt(root, strtab, inl[i], stmt)
            i = j + 1


def build_structure(binary: GpuBinary, demangle_fn: Callable[[str], str] = demangle) -> Module:
    """The ``LM`` of a GPU binary (see the module docstring for the rules)."""
    return _Builder(binary, demangle_fn).build()
