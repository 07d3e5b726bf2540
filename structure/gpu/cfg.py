"""Basic blocks of GPU functions, built from a disassembly's branch, call and exit instructions.

The input is one function's instructions as columns (address, size, kind,
guard, direct target) in the kinds of :mod:`hpcsa.structure.gpu.nvdisasm`
(AMD code objects are mapped to the same kinds). The graph is the one
ParseAPI would give hpcstruct from nvdisasm's control-flow graph: blocks are
found by traversal from the entry, so padding after the last return (the
``BRA`` to itself that ends every SASS function, and NOPs) belongs to no
block and is left to the gaps; a call ends its block with a call-fallthrough
edge; a guarded branch, exit, return or trap falls through as well. Branches
that leave the function are dropped (GPU code has no tail calls).

The walk jumps from one control-transfer instruction to the next (binary
search over their rows), so Python work is per block, not per instruction.
"""

from __future__ import annotations

import bisect
from dataclasses import field

import numpy as np

from hpcsa.core.dataclass import dataclass
from hpcsa.structure.edges import E_CALL_FT, E_DIRECT, E_FALLTHROUGH, E_INDIRECT, E_NOT_TAKEN, E_TAKEN
from hpcsa.structure.gpu.nvdisasm import K_BRANCH, K_CALL, K_EXIT, K_INDIRECT, K_OTHER, K_RETURN, K_TRAP

# A jump to another function's entry that does not come back (AMD ``s_setpc_b64`` to a known entry).
K_TAILCALL = 7


@dataclass
class Code:
    """One function's instructions, sorted by address; targets are absolute addresses (-1: none)."""

    address: np.ndarray        # u8
    size: np.ndarray           # int
    kind: np.ndarray           # u1, K_*
    conditional: np.ndarray    # bool
    target: np.ndarray         # i8: branch target
    call_target: dict[int, int] = field(default_factory=dict)     # row of a direct call -> callee entry
    indirect: dict[int, list[int]] = field(default_factory=dict)  # row of an indirect branch -> targets

    def __len__(self) -> int:
        return len(self.address)


@dataclass
class Block:
    start: int
    end: int
    first: int                                                   # row of its first instruction
    last: int                                                    # row of its last instruction
    succs: list[tuple[int, int]] = field(default_factory=list)   # (block index, edge kind)
    call: int | None = None                                      # row of the call ending the block


@dataclass
class FunctionGraph:
    code: Code
    blocks: list[Block]          # sorted by start
    entry: int                   # index of the entry block (-1 for a function without instructions)

    def succ_lists(self) -> list[list[int]]:
        return [[t for t, _k in b.succs] for b in self.blocks]


def build_graph(code: Code) -> FunctionGraph:
    """Blocks reachable from the first instruction (the function's entry)."""
    n = len(code)
    if n == 0:
        return FunctionGraph(code, [], -1)
    addr = code.address.tolist()
    size = code.size.tolist()
    kinds = code.kind.tolist()
    cond = code.conditional.tolist()
    targets = code.target.tolist()
    row_of = {a: i for i, a in enumerate(addr)}
    ends_at = code.kind != K_OTHER
    ends_at[:-1] |= code.address[1:] != code.address[:-1] + code.size[:-1].astype(np.uint64)  # holes
    ends_at[-1] = True
    stops = np.flatnonzero(ends_at).tolist()

    leaders = {0}
    run_first: dict[int, int] = {}   # a run's last row -> its smallest first row
    ends: dict[int, tuple[list[tuple[int, int]], int | None]] = {}   # last row -> (successor rows, call row)
    stack = [0]
    while stack:
        i = stack.pop()
        j = stops[bisect.bisect_left(stops, i)]
        prev = run_first.get(j)
        if prev is not None:
            run_first[j] = min(prev, i)
            continue
        run_first[j] = i
        kind = kinds[j]
        nxt = j + 1 if j + 1 < n and addr[j + 1] == addr[j] + size[j] else -1
        succ: list[tuple[int, int]] = []
        call_row = None
        if kind == K_BRANCH:
            t = row_of.get(targets[j], -1)
            if t >= 0:
                succ.append((t, E_TAKEN if cond[j] else E_DIRECT))
            if cond[j] and nxt >= 0:
                succ.append((nxt, E_NOT_TAKEN))
        elif kind == K_INDIRECT:
            for ta in code.indirect.get(j, []):
                t = row_of.get(ta, -1)
                if t >= 0 and all(t != s for s, _ in succ):
                    succ.append((t, E_INDIRECT))
            if cond[j] and nxt >= 0:
                succ.append((nxt, E_NOT_TAKEN))
        elif kind == K_CALL:
            call_row = j
            if nxt >= 0:
                succ.append((nxt, E_CALL_FT))
        elif kind == K_TAILCALL:
            call_row = j
        elif kind in (K_RETURN, K_EXIT, K_TRAP):
            if cond[j] and nxt >= 0:
                succ.append((nxt, E_NOT_TAKEN))
        # K_OTHER here: the end of the function or a hole in the listing; nothing follows.
        ends[j] = (succ, call_row)
        for t, _kind in succ:
            leaders.add(t)
            stack.append(t)

    leader_list = sorted(leaders)
    by_first: dict[int, Block] = {}
    for j, s in run_first.items():
        lo = bisect.bisect_left(leader_list, s)
        hi = bisect.bisect_right(leader_list, j)
        cuts = [s] + [x for x in leader_list[lo:hi] if x != s] + [j + 1]
        for b0, b1 in zip(cuts, cuts[1:], strict=False):
            last = b1 - 1
            blk = Block(addr[b0], addr[last] + size[last], b0, last)
            if last == j:
                blk.succs, blk.call = list(ends[j][0]), ends[j][1]
            else:
                blk.succs = [(b1, E_FALLTHROUGH)]
            by_first[b0] = blk
    blocks = [by_first[r] for r in sorted(by_first)]
    index_of_row = {b.first: i for i, b in enumerate(blocks)}
    for b in blocks:
        b.succs = [(index_of_row[t], k) for t, k in b.succs if t in index_of_row]
    return FunctionGraph(code, blocks, index_of_row.get(0, -1))
