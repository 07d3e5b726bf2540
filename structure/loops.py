"""Loop nesting forests with the WMZC algorithm (Wei, Mao, Zou, Chen 2007), as Dyninst's ParseAPI finds them.

One depth-first search tags every block with its innermost loop header;
re-entries into a loop from outside its header make it irreducible (several
entries). The search is iterative (functions with tens of thousands of
blocks would overflow Python's recursion limit) and visits successors in
the order the caller lists them (for ParseAPI's CFGs: a conditional branch's
fall-through before its taken target), which fixes the forest of irreducible
regions deterministically. The forest is stored as innermost
header per block plus parent per header (no block sets are materialised
per loop until asked for).
"""

from __future__ import annotations

from dataclasses import field

from hpcsa.core.dataclass import dataclass


@dataclass
class Loop:
    header: int                                   # block index of the header found by the search
    entries: set[int] = field(default_factory=set)
    back_edges: list[tuple[int, int]] = field(default_factory=list)  # (source block, target block)
    parent: Loop | None = None
    children: list[Loop] = field(default_factory=list)
    blocks: set[int] = field(default_factory=set)  # inclusive (nested loops' blocks too)
    exclusive: set[int] = field(default_factory=set)

    @property
    def irreducible(self) -> bool:
        return len(self.entries) > 1


def find_loops(succs: list[list[int]], entry: int) -> tuple[list[Loop], list[int]]:
    """Loops of a graph given as successor lists over blocks 0..n-1.

    Returns the outermost loops (children sorted by header) and, per block, the
    header of its innermost loop (-1 outside loops; a header maps to itself).
    """
    n = len(succs)
    if n == 0:
        return [], []
    header = [-1] * n
    dfsp = [0] * n
    visited = [False] * n
    loops: dict[int, Loop] = {}

    def tag(b: int, h: int) -> None:
        if b == h or h < 0:
            return
        cur1, cur2 = b, h
        while header[cur1] >= 0:
            ih = header[cur1]
            if ih == cur2:
                return
            if dfsp[ih] < dfsp[cur2]:
                header[cur1] = cur2
                cur1, cur2 = cur2, ih
            else:
                cur1 = ih
        header[cur1] = cur2

    visited[entry] = True
    dfsp[entry] = 1
    stack = [[entry, 0]]
    while stack:
        top = stack[-1]
        b0, k = top
        out = succs[b0]
        if k < len(out):
            top[1] = k + 1
            b = out[k]
            if not visited[b]:
                visited[b] = True
                dfsp[b] = len(stack) + 1
                stack.append([b, 0])
                continue
            if dfsp[b] > 0:  # back edge to a block on the current path
                loop = loops.get(b)
                if loop is None:
                    loop = loops[b] = Loop(b)
                tag(b0, b)
                loop.entries.add(b)
                loop.back_edges.append((b0, b))
            elif header[b] < 0:
                pass
            else:
                h = header[b]
                if dfsp[h] > 0:
                    tag(b0, h)
                else:  # re-entry: b is another entry of h's loop (and of enclosing loops off the path)
                    loops[h].entries.add(b)
                    while header[h] >= 0:
                        h = header[h]
                        if dfsp[h] > 0:
                            tag(b0, h)
                            break
                        loops[h].entries.add(b)
            continue
        dfsp[b0] = 0
        stack.pop()
        if stack:
            tag(stack[-1][0], header[b0])

    if not loops:  # most searched functions (an earlier block is a jump target, but in no cycle)
        return [], [-1] * n
    # Nesting and block sets.
    innermost = [-1] * n
    for b in range(n):
        if not visited[b]:
            continue
        innermost[b] = b if b in loops else header[b]
    for h, loop in loops.items():
        p = header[h]
        if p >= 0 and p in loops:
            loop.parent = loops[p]
            loops[p].children.append(loop)
    for b in range(n):
        h = innermost[b]
        if h < 0:
            continue
        loops[h].exclusive.add(b)
        enclosing: Loop | None = loops[h]
        while enclosing is not None:
            enclosing.blocks.add(b)
            enclosing = enclosing.parent
    for loop in loops.values():
        loop.children.sort(key=lambda x: x.header)
    outermost = sorted((lp for lp in loops.values() if lp.parent is None), key=lambda x: x.header)
    return outermost, innermost
