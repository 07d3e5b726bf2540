"""hpcstruct's inline tree: one implementation of its rules for every kind of binary.

hpcstruct (src/lib/banal/Struct.cpp, Struct-Inline.cpp, Struct-Output.cpp)
files every instruction of a procedure under its chain of inlined calls,
places each loop at the inline depth and file/line chosen from its exit
conditions (``findLoopHeader``), merges irreducible subloops that carry their
parent's line, and writes the tree with statements merged per line, guard
aliens for code from other files or earlier lines and double aliens for
inlined calls. These rules are the same for CPU and GPU binaries, so they
live here once; a builder (:mod:`hpcsa.structure.x86.build` for x86-64,
:mod:`hpcsa.structure.gpu.build` for GPUs) supplies what differs: where
functions, blocks, lines and inline chains come from, through
:class:`FunctionCode`.

Strings (file names, base names, callee names) are numbers of a
:class:`StrTab` in order of first use; hpcstruct orders aliens and inline
subtrees by these numbers, so the order in which a builder interns strings is
part of the output.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import field
from typing import Protocol

from hpcsa.core.dataclass import dataclass
from hpcsa.core.interning import intern
from hpcsa.formats.hpcstruct.model import GUARD_NAME, A, C, L, ModuleBuilder, P
from hpcsa.structure.loops import Loop


def basename(path: str) -> str:
    return path.rsplit("/", 1)[-1] if path else ""


class StrTab:
    """Strings numbered in order of first use (hpcstruct orders aliens and inline subtrees by these numbers)."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {"": 0}
        self.strings: list[str] = [""]

    def __call__(self, s: str) -> int:
        return intern(self.strings, self.index, s)


@dataclass(frozen=True, order=True)
class FLP:
    """One inlined call (call-site file, call-site line, callee), compared as hpcstruct's FLPCompare."""

    file: int
    line: int
    name: int
    base: int = field(compare=False)


def flp_path(chain: Iterable[tuple[str, int, str]], strtab: StrTab) -> list[FLP]:
    """An inline chain (outermost first; files already real paths) in the string table's numbers."""
    return [FLP(strtab(f), line, strtab(name), strtab(basename(f))) for f, line, name in chain]


class Stmt:
    """A run of instructions with one file and line; ``file``/``base`` are string-table numbers. A call
    (``call``; GPU binaries) is written as a ``<C>`` of its own, with its callee's entry in ``target``."""

    __slots__ = ("vma", "length", "file", "base", "line", "call", "target")

    def __init__(self, vma: int, length: int, file: int, base: int, line: int, call: bool = False,
                 target: int | None = None) -> None:
        self.vma = vma
        self.length = length
        self.file = file
        self.base = base
        self.line = line
        self.call = call
        self.target = target

    @property
    def end(self) -> int:
        return self.vma + self.length


class TreeNode:
    """A level of the inline tree: its statements and loops, and the inlined calls below it."""

    __slots__ = ("nodes", "stmts", "loops", "file")

    def __init__(self, file: int = 0) -> None:
        self.nodes: dict[FLP, TreeNode] = {}
        self.stmts: list[Stmt] = []
        self.loops: list[LoopInfo] = []
        self.file = file

    def member(self, vma: int) -> bool:
        return any(s.vma <= vma < s.end for s in self.stmts)

    def descend(self, path: Iterable[FLP]) -> TreeNode:
        """The node at the end of ``path`` below this one, made where missing."""
        node = self
        for flp in path:
            nxt = node.nodes.get(flp)
            if nxt is None:
                nxt = node.nodes[flp] = TreeNode()
            node = nxt
        return node


@dataclass
class LoopInfo:
    node: TreeNode
    path: list[FLP]
    entry_vma: int
    file: int
    base: int
    line: int
    irred: bool


def merge_inline_loop(dest: TreeNode, path: list[FLP], info: LoopInfo) -> None:
    """Hang a loop under ``dest`` at the end of its inline path (minus the prefix ``path`` already taken)."""
    k = 0
    while k < len(path) and k < len(info.path) and path[k] == info.path[k]:
        k += 1
    dest.descend(info.path[k:]).loops.append(info)


def merge_inline_tree(dest: TreeNode, src: TreeNode) -> None:
    """Move everything of ``src`` into ``dest``, joining equal inline subtrees."""
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
    """The parts of [start, end) that no ``covered`` range claims (hpcstruct's computeGaps)."""
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


# ---------------------------------------------------------------------------------------------------
# One function: loops and inline trees


class FunctionCode(Protocol):
    """What a builder knows of one parsed function: its blocks (numbered 0..n-1, in the order the
    non-loop blocks are filed) and, per block, its statements and its place in the source."""

    strtab: StrTab
    starts: list[int]  # start address of each block

    def add_block(self, root: TreeNode, block: int) -> None:
        """File the statements of ``block`` under ``root`` by their inline paths."""

    def loop_successors(self, block: int) -> list[int]:
        """Successor blocks of ``block``, without call fall-through edges."""

    def exit_condition(self, block: int) -> tuple[int, str, int, list[FLP]]:
        """The block's last instruction: its address, (real path of the) file, line and inline path."""


def function_tree(code: FunctionCode, top: list[Loop], filenm: str) -> TreeNode:
    """The inline tree of a function whose outermost loops are ``top`` (hpcstruct's doFunctionList: loops
    innermost first, then the blocks no loop claimed, then the loops merged in at their inline paths)."""
    visited = [False] * len(code.starts)
    infos = [_loop_tree(code, filenm, visited, lp) for lp in sorted(top, key=lambda lp: _entry(code, lp))]
    root = TreeNode()
    for i in range(len(visited)):
        if not visited[i]:
            visited[i] = True
            code.add_block(root, i)
    for info in infos:
        merge_inline_loop(root, [], info)
    return root


def _entry(code: FunctionCode, loop: Loop) -> int:
    return min(code.starts[e] for e in loop.entries)


def _loop_tree(code: FunctionCode, filenm: str, visited: list[bool], loop: Loop) -> LoopInfo:
    """hpcstruct's doLoopTree: subloops first; then this loop's remaining blocks by address."""
    subs = [_loop_tree(code, filenm, visited, c) for c in sorted(loop.children, key=lambda c: _entry(code, c))]
    root = TreeNode()
    for i in sorted(loop.blocks, key=code.starts.__getitem__):
        if not visited[i]:
            visited[i] = True
            code.add_block(root, i)
    for info in subs:
        merge_inline_loop(root, [], info)
    info = find_loop_header(code, filenm, root, loop)
    merge_irred_loops(info)
    return info


def find_loop_header(code: FunctionCode, filenm: str, root: TreeNode, loop: Loop) -> LoopInfo:
    """hpcstruct's findLoopHeader: the inline depth and file/line of a loop from its exit conditions."""
    strtab = code.strtab
    inside = loop.blocks
    # Step 1: exit conditions (blocks with edges both into and out of the loop), by last instruction.
    conds: dict[int, tuple[int, int, int, int, list[FLP]]] = {}  # vma -> (depth, file, base, line, path)
    for bi in inside:
        in_loop = out_loop = False
        for t in code.loop_successors(bi):
            if t in inside:
                in_loop = True
            else:
                out_loop = True
        if in_loop and out_loop:
            vma, file, line, cond_path = code.exit_condition(bi)
            conds[vma] = (len(cond_path), strtab(file), strtab(basename(file)), line, cond_path)
    clist = sorted(conds.items())

    # Step 2: descend single inline chains until an exit condition lives at this level.
    path: list[FLP] = []
    moved: list[Stmt] = []
    depth = 0
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
        depth += 1
    # Step 3: reattach the statements at this level.
    root.stmts.extend(moved)

    # Step 4: the header's file, then its line.
    proc_file = strtab(filenm)
    proc_base = strtab(basename(filenm))
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
        for inner in root.loops:
            if inner.file != 0:
                file_ans, base_ans, found = inner.file, inner.base, True
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
        for inner in root.loops:
            if inner.base == base_ans and inner.line > 0 and (line_ans == 0 or inner.line < line_ans):
                line_ans = inner.line
    return LoopInfo(root, path, _entry(code, loop), file_ans, base_ans, line_ans, loop.irreducible)


# ---------------------------------------------------------------------------------------------------
# Output


def emit_procedure(out: ModuleBuilder, frow: int, strtab: StrTab, root: TreeNode, *, filenm: str, name: str,
                   link: str, line: int, entry: int, sym: int | None = None, device: str | None = None) -> None:
    """A ``P`` (its link name only where it differs from ``name``) and its tree, under file row ``frow``."""
    prow = out.add(P, frow, name=name, link=link if link != name else None, sym=sym, line=line,
                   ranges=[(entry, entry + 1)])
    Emitter(out, strtab, device).tree(prow, root, strtab(basename(filenm)), line)


class Emitter:
    """hpcstruct's Struct-Output rules: statements by line, calls one by one, guard and double aliens."""

    def __init__(self, out: ModuleBuilder, strtab: StrTab, device: str | None = None) -> None:
        self.out = out
        self.s = strtab
        self.device = device  # the d attribute of call sites

    def text(self, i: int) -> str:
        return self.s.strings[i]

    def tree(self, parent: int, node: TreeNode, scope_base: int, scope_line: int) -> None:
        aliens: dict[int, TreeNode] = {}
        local = TreeNode()
        for attr in ("stmts", "loops"):  # statements first: an alien takes the file of its first item
            keep = getattr(local, attr).append
            for item in getattr(node, attr):
                if item.line > 0 and (item.base != scope_base or item.line < scope_line):
                    a = aliens.get(item.base)
                    if a is None:
                        a = aliens[item.base] = TreeNode(item.file)
                    getattr(a, attr).append(item)
                else:
                    keep(item)
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
            self.tree(inner, sub, sbase, sline)

    def stmts(self, parent: int, node: TreeNode) -> None:
        by_line: dict[int, list[tuple[int, int]]] = {}
        calls: list[Stmt] = []
        for st in node.stmts:
            if st.call:
                calls.append(st)
                continue
            got = by_line.get(st.line)
            if got is None:
                by_line[st.line] = [(st.vma, st.vma + st.length)]
            else:
                got.append((st.vma, st.vma + st.length))
        if by_line:
            lines = sorted(by_line)
            merged = [by_line[line] for line in lines]
            self.out.add_statements(parent, lines, [rs if len(rs) == 1 else merge_ranges(rs) for rs in merged])
        for st in sorted(calls, key=lambda s: (s.line, s.vma)):
            self.out.add(C, parent, line=st.line, ranges=[(st.vma, st.end)], target=st.target, device=self.device)

    def loops(self, parent: int, node: TreeNode) -> None:
        for lp in node.loops:
            row = self.out.add(L, parent, line=lp.line, file=self.text(lp.file),
                               ranges=[(lp.entry_vma, lp.entry_vma + 1)])
            self.tree(row, lp.node, lp.base, 0)


def locate_file(node: TreeNode) -> tuple[int, int]:
    """File of an inlined body: its first inlined call, loop or statement (by address) with a file."""
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
    """Line of an alien: the smallest line in file ``base`` of its inlined calls and loops, else of its
    statements."""
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


def merge_ranges(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted union of address ranges (touching ones joined), as hpcstruct's VMAIntervalSet prints them."""
    if len(ranges) == 1:
        return ranges
    ranges.sort()
    out = [ranges[0]]
    for lo, hi in ranges[1:]:
        last_lo, last_hi = out[-1]
        if lo <= last_hi:
            if hi > last_hi:
                out[-1] = (last_lo, hi)
        else:
            out.append((lo, hi))
    return out
