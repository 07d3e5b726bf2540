"""Program structure of a GPU binary, assembled the way hpcstruct does it (``--gpucfg yes``).

The machine-specific readers (:mod:`hpcsa.structure.cubin` for NVIDIA
cubins, :mod:`hpcsa.structure.amdgpu` for AMD code objects) hand over a
:class:`GpuBinary`: functions with their control-flow graphs (or none, when
no disassembler could be run), a line map and an inline table. This module
turns it into a :class:`~hpcsa.structure.model.Module` following hpcstruct's
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
Per-instruction lookups are vectorized per function; Python loops run over
runs of instructions that share a line and inline chain, blocks and loops.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

import cxxfilt
import numpy as np

from hpcsa.structure.dwarf_inline import InlineTable
from hpcsa.structure.dwarf_lines import LineMap
from hpcsa.structure.gpu_cfg import E_CALL_FT, Block, FunctionGraph
from hpcsa.structure.loops import Loop, find_loops
from hpcsa.structure.model import GUARD_NAME, A, C, F, L, Module, ModuleBuilder, P, S

PROC_SEARCH_INSNS = 32  # hpcstruct's CUDA_PROC_SEARCH_LEN: instructions scanned for a procedure's line
UNPARSED_STEP = 4       # hpcstruct's statement step in functions without a control-flow graph


@lru_cache(maxsize=1 << 16)
def demangle(name: str) -> str:
    """The readable name of a (possibly) mangled C++ symbol, unchanged when it is not one.

    Like HPCToolkit (libiberty with ``DMGL_RET_DROP``), without the return type that the mangling of
    template functions carries: ``f<int>(int&)``, not ``void f<int>(int&)``.
    """
    if not name.startswith("_Z"):
        return name
    try:
        return drop_return_type(cxxfilt.demangle(name))
    except (cxxfilt.InvalidName, UnicodeError):  # not a valid mangling, or bytes that are not UTF-8
        return name


def drop_return_type(sig: str) -> str:
    """``void ns::f<int>(int)`` -> ``ns::f<int>(int)``; other signatures are returned unchanged."""
    close = sig.rfind(")")
    if close < 0:
        return sig
    depth = 0
    open_ = -1
    for i in range(close, -1, -1):  # the '(' of the parameter list that ends at `close`
        ch = sig[i]
        if ch in ")>":
            depth += 1
        elif ch in "(<":
            depth -= 1
            if depth == 0:
                open_ = i
                break
    if open_ <= 0 or not sig[:open_].endswith(">"):
        return sig
    depth = 0
    cut = -1
    for i, ch in enumerate(sig[:open_]):
        if ch in "(<":
            depth += 1
        elif ch in ")>":
            depth -= 1
        elif ch == " " and depth == 0 and not sig[:i].endswith("operator"):
            cut = i
    return sig[cut + 1:] if cut > 0 else sig


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
# hpcstruct's inline tree


class StrTab:
    """Strings numbered in order of first use; the numbers order aliens and inline subtrees in the output."""

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
    """One inlined call (call-site file, call-site line, callee), compared as hpcstruct's FLPCompare."""

    file: int
    line: int
    name: int
    base: int = field(compare=False)


@dataclass
class Stmt:
    vma: int
    length: int
    file: int
    base: int
    line: int
    call: bool = False
    target: int | None = None

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

    def find(self, vma: int) -> Stmt | None:
        return next((s for s in self.stmts if s.vma <= vma < s.end), None)


@dataclass
class LoopInfo:
    node: TreeNode
    path: list[FLP]
    entry_vma: int
    file: int
    base: int
    line: int
    irred: bool


def _basename(path: str) -> str:
    return path.rsplit("/", 1)[-1] if path else ""


def merge_inline_tree(dest: TreeNode, src: TreeNode) -> None:
    if src is dest:
        return
    dest.stmts.extend(src.stmts)
    dest.loops.extend(src.loops)
    for flp, sub in src.nodes.items():
        mine = dest.nodes.get(flp)
        if mine is None:
            dest.nodes[flp] = sub
        else:
            merge_inline_tree(mine, sub)
    src.stmts, src.loops, src.nodes = [], [], {}


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


def merge_irred_loops(l1: LoopInfo) -> None:
    """An irreducible subloop with its irreducible parent's file and line is the same source loop."""
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
        if hi <= start:
            continue
        if lo > start:
            gaps.append((start, min(lo, end)))
        start = max(start, hi)
        if start >= end:
            break
    if start < end:
        gaps.append((start, end))
    return [(a, b) for a, b in gaps if b > a]


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
        self.inline_cuts: list[int] = np.unique(np.concatenate([inl.lo, inl.hi])).tolist() if len(inl.lo) else []

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
        return [FLP(strtab(f), ln, strtab(nm), strtab(_basename(f))) for f, ln, nm in self.chain(node)]

    def inline_node(self, vma: int) -> int:
        return int(self.b.inlines.innermost(np.array([vma], np.uint64))[0])

    def add_stmt(self, root: TreeNode, strtab: StrTab, node: int, stmt: Stmt) -> None:
        for flp in self.path(node, strtab):
            nxt = root.nodes.get(flp)
            if nxt is None:
                nxt = root.nodes[flp] = TreeNode()
            root = nxt
        root.stmts.append(stmt)

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
            visited = [False] * len(g.blocks)
            infos = [self.do_loop_tree(fn, filenm, visited, lp)
                     for lp in sorted(top, key=lambda lp: fn.min_entry(lp))]
            for i, b in enumerate(g.blocks):
                if not visited[i]:
                    visited[i] = True
                    fn.add_block(root, b)
            for info in infos:
                merge_inline_loop(root, [], info)
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
                              Stmt(vma, end - vma, strtab(got[0]), strtab(_basename(got[0])), got[1]))
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
                                  Stmt(vma, end - vma, strtab(got[0]), strtab(_basename(got[0])), got[1]))
                else:
                    end = min(vma + UNPARSED_STEP, hi)
                    nxt = self._next_line_start(vma, hi)
                    if nxt > end:
                        end = nxt
                    self.add_stmt(root, strtab, -1,
                                  Stmt(vma, end - vma, strtab(filenm), strtab(_basename(filenm)), proc_line))
                vma = end

    def do_loop_tree(self, fn: _Function, filenm: str, visited: list[bool], loop: Loop) -> LoopInfo:
        subs = [self.do_loop_tree(fn, filenm, visited, c) for c in sorted(loop.children, key=fn.min_entry)]
        root = TreeNode()
        for i in sorted(loop.blocks, key=lambda k: fn.g.blocks[k].start):
            if not visited[i]:
                visited[i] = True
                fn.add_block(root, fn.g.blocks[i])
        for info in subs:
            merge_inline_loop(root, [], info)
        info = self.find_loop_header(fn, filenm, root, loop)
        merge_irred_loops(info)
        return info

    def find_loop_header(self, fn: _Function, filenm: str, root: TreeNode, loop: Loop) -> LoopInfo:
        """hpcstruct's findLoopHeader: the inline depth and file/line of a loop from its exit conditions."""
        strtab = fn.strtab
        blocks = fn.g.blocks
        inside = loop.blocks
        # Step 1: exit conditions, by the address of the block's last instruction.
        conds: dict[int, tuple[int, int, int, int, list[FLP]]] = {}  # vma -> (depth, file, base, line, path)
        for bi in inside:
            b = blocks[bi]
            in_loop = out_loop = False
            for t, kind in b.succs:
                if kind == E_CALL_FT:
                    continue
                if t in inside:
                    in_loop = True
                else:
                    out_loop = True
            if in_loop and out_loop:
                vma = fn.last_vma(b)
                got = self.statement(vma)
                file = got[0] if got else ""
                path = self.path(fn.node_at(vma), strtab)
                conds[vma] = (len(path), strtab(file), strtab(_basename(file)), got[1] if got else 0, path)
        clist = sorted(conds.items())

        # Step 2: descend single inline chains until an exit condition lives at this level.
        path: list[FLP] = []
        moved: list[Stmt] = []
        depth = 0
        while len(root.nodes) == 1 and not root.loops:
            flp, sub = next(iter(root.nodes.items()))
            stop = False
            for vma, _c in clist:
                if root.find(vma) is not None:
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
            depth += 1
        # Step 3: reattach the statements at this level.
        root.stmts.extend(moved)

        # Step 4: the header's file, then its line.
        proc_file = strtab(filenm)
        proc_base = strtab(_basename(filenm))
        file_ans = base_ans = 0
        line_ans = 0
        found = False
        if depth == 0:
            for _v, (d, _f, bs, _ln, _p) in clist:
                if d == depth and bs != 0 and bs == proc_base:
                    file_ans, base_ans, found = proc_file, proc_base, True
                    break
        if not found:
            for flp in sorted(root.nodes):
                if any(d == depth and bs != 0 and bs == flp.base for _v, (d, _f, bs, _ln, _p) in clist):
                    file_ans, base_ans, found = flp.file, flp.base, True
                    break
        if not found:
            for _v, (d, f, bs, _ln, _p) in clist:
                if d == depth and bs != 0:
                    file_ans, base_ans, found = f, bs, True
                    break
        if not found and depth == 0 and proc_file != 0:
            file_ans, base_ans, found = proc_file, proc_base, True
        if not found:
            for flp in sorted(root.nodes):
                if flp.file != 0:
                    file_ans, base_ans, found = flp.file, flp.base, True
                    break
        if not found:
            for sub in root.loops:
                if sub.file != 0:
                    file_ans, base_ans, found = sub.file, sub.base, True
                    break
        if not found:
            for s in sorted(root.stmts, key=lambda s: s.vma):
                if s.file != 0:
                    file_ans, base_ans, line_ans, found = s.file, s.base, s.line, True
                    break
        if file_ans == 0:
            line_ans = 0
        else:
            for _v, (d, _f, bs, ln, _p) in clist:
                if d == depth and bs == base_ans and ln > 0 and (line_ans == 0 or ln < line_ans):
                    line_ans = ln
            for _v, (d, _f, _bs, _ln, p) in clist:
                if d > depth and p[depth].base == base_ans and p[depth].line > 0:
                    if line_ans == 0 or p[depth].line < line_ans:
                        line_ans = p[depth].line
            for sub in root.loops:
                if sub.base == base_ans and sub.line > 0 and (line_ans == 0 or sub.line < line_ans):
                    line_ans = sub.line
        entry_vma = fn.min_entry(loop)
        return LoopInfo(root, path, entry_vma, file_ans, base_ans, line_ans, loop.irreducible)

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
        strtab = out.strtab
        prow = lm.add(P, frow, name=out.pretty, link=out.link if out.link != out.pretty else None,
                      sym=None if self.b.has_cfg else out.proc.symbol, line=out.line,
                      ranges=[(out.proc.start, out.proc.start + 1)])
        assert out.root is not None
        _Emitter(lm, strtab, self.b.device).tree(prow, out.root, strtab(_basename(filenm)), out.line)


class _Function:
    """Per-function lookups shared by its blocks and loops (vectorized over its instructions)."""

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

    def min_entry(self, loop: Loop) -> int:
        return min(self.g.blocks[e].start for e in loop.entries)

    def last_vma(self, b: Block) -> int:
        return self.addr[b.last]

    def node_at(self, vma: int) -> int:
        i = bisect.bisect_left(self.addr, vma)
        return self.inl[i] if i < len(self.addr) and self.addr[i] == vma else self.builder.inline_node(vma)

    def file_of(self, fid: int) -> tuple[int, int]:
        got = self._files.get(fid)
        if got is None:
            name = self.builder.file_name(fid)
            got = self._files[fid] = (self.strtab(name), self.strtab(_basename(name)))
        return got

    def add_block(self, root: TreeNode, b: Block) -> None:
        """File every instruction of a block under its inline chain; runs of equal (chain, file, line) form
        one statement, and a call ending the block is a statement of its own."""
        builder, strtab = self.builder, self.strtab
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


class _Emitter:
    """hpcstruct's Struct-Output rules: statements by line, calls one by one, guard and double aliens."""

    def __init__(self, out: ModuleBuilder, strtab: StrTab, device: str) -> None:
        self.out = out
        self.s = strtab
        self.device = device

    def text(self, i: int) -> str:
        return self.s.strings[i]

    def tree(self, parent: int, node: TreeNode, scope_base: int, scope_line: int) -> None:
        aliens: dict[int, TreeNode] = {}
        local = TreeNode()
        for st in node.stmts:
            if st.line > 0 and (st.base != scope_base or st.line < scope_line):
                aliens.setdefault(st.base, TreeNode(st.file)).stmts.append(st)
            else:
                local.stmts.append(st)
        for lp in node.loops:
            if lp.line > 0 and (lp.base != scope_base or lp.line < scope_line):
                aliens.setdefault(lp.base, TreeNode(lp.file)).loops.append(lp)
            else:
                local.loops.append(lp)
        self.stmts(parent, local)
        for base in sorted(aliens):
            a = aliens[base]
            line = _locate_line(a, base)
            row = self.out.add(A, parent, line=line, file=self.text(a.file), name=GUARD_NAME, ranges=[])
            self.stmts(row, a)
            self.loops(row, a)
        self.loops(parent, local)
        for flp in sorted(node.nodes):
            sub = node.nodes[flp]
            sfile, sbase = _locate_file(sub)
            sline = _locate_line(sub, sbase)
            outer = self.out.add(A, parent, line=flp.line, file=self.text(flp.file), name="", ranges=[])
            inner = self.out.add(A, outer, line=sline, file=self.text(sfile), name=self.text(flp.name), ranges=[])
            self.tree(inner, sub, sbase, sline)

    def stmts(self, parent: int, node: TreeNode) -> None:
        by_line: dict[int, list[tuple[int, int]]] = {}
        calls: list[Stmt] = []
        for st in node.stmts:
            if st.call:
                calls.append(st)
            else:
                by_line.setdefault(st.line, []).append((st.vma, st.end))
        for line in sorted(by_line):
            self.out.add(S, parent, line=line, ranges=_merge(by_line[line]))
        for st in sorted(calls, key=lambda s: (s.line, s.vma)):
            self.out.add(C, parent, line=st.line, ranges=[(st.vma, st.end)], target=st.target, device=self.device)

    def loops(self, parent: int, node: TreeNode) -> None:
        for lp in node.loops:
            row = self.out.add(L, parent, line=lp.line, file=self.text(lp.file),
                               ranges=[(lp.entry_vma, lp.entry_vma + 1)])
            self.tree(row, lp.node, lp.base, 0)


def _locate_file(node: TreeNode) -> tuple[int, int]:
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


def _locate_line(node: TreeNode, base: int) -> int:
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
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return [(a, b) for a, b in out]


def build_structure(binary: GpuBinary, demangle_fn: Callable[[str], str] = demangle) -> Module:
    """The ``LM`` of a GPU binary (see the module docstring for the rules)."""
    return _Builder(binary, demangle_fn).build()
