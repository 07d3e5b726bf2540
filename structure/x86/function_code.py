"""Parsed functions as the tree builder (:mod:`hpcsa.structure.tree`) sees them: their basic blocks,
successors and instruction runs (consecutive instructions with one file, line and inline chain), gathered
with numpy over many functions at once into plain Python lists that the per-function loops index."""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from hpcsa.structure.debuginfo.source_info import SourceInfo
from hpcsa.structure.edges import E_CALL_FT, E_CATCH
from hpcsa.structure.tree import FLP, Stmt, StrTab, TreeNode, basename
from hpcsa.structure.x86.cfg import CodeIndex, ProgramCFG, in_sorted
from hpcsa.structure.x86.functions import Functions


class InstructionRuns:
    """Every instruction of the binary filed by line and inline chain, as runs: maximal sequences of
    instructions of one basic block with the same innermost inline node, file and line. Computed once,
    vectorized over all the code; a block's statements are then its runs ``block_ra[b]:block_rb[b]``."""

    def __init__(self, code: CodeIndex, cfg: ProgramCFG, source: SourceInfo) -> None:
        self._file(code.addr, code.size, cfg.starts, cfg.ends, source)

    @staticmethod
    def needs(code: CodeIndex, cfg: ProgramCFG) -> tuple[Packed, np.ndarray, Packed, Packed]:
        """What the runs need of the code and its blocks (the instructions' addresses and sizes, the blocks'
        first and last rows), to send to the process that read the debug information (see :meth:`filed`),
        packed: python3.11d's 9.1 MiB become 4.9."""
        return _pack(code.addr), code.size, _pack(cfg.starts), _pack(cfg.ends)

    @classmethod
    def filed(cls, addrs: Packed, sizes: np.ndarray, starts: Packed, ends: Packed, source: SourceInfo
              ) -> InstructionRuns:
        """The runs from what :meth:`needs` gave, where the code index itself is not at hand."""
        runs = cls.__new__(cls)
        runs._file(_unpack(addrs), sizes, _unpack(starts), _unpack(ends), source)
        return runs

    def __getstate__(self) -> dict[str, object]:
        """Pickled packed (sent back by that process): python3.11d's runs, 11.3 MiB as they are, become 7.6."""
        return {k: _pack(v) if k in _PACKED else v for k, v in vars(self).items()}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update({k: _unpack(v) if k in _PACKED else v for k, v in state.items()})

    def _file(self, addrs: np.ndarray, sizes: np.ndarray, block_starts: np.ndarray, block_ends: np.ndarray,
              source: SourceInfo) -> None:
        n = len(addrs)
        ends = addrs + sizes.astype(np.uint64)
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
        brk[block_starts] = True
        rs = np.flatnonzero(brk)
        re_ = np.append(rs[1:], n) - 1
        self.vma = addrs[rs]
        self.length = (ends[re_] - addrs[rs]).astype(np.int64)
        self.inl = inl[rs]
        self.file = files[rs]
        self.line = lines[rs]
        self.block_ra = np.searchsorted(rs, block_starts)
        self.block_rb = np.searchsorted(rs, block_ends, side="right")
        self.block_last_inl = inl[block_ends] if n else np.zeros(0, np.int32)


#: An integer array as (its dtype, the smallest value, every value less it in 32 bits), where they fit.
Packed = tuple[np.dtype, int, np.ndarray]
_PACKED = ("vma", "length", "block_ra", "block_rb")  # the runs' 64-bit columns


def _pack(a: np.ndarray) -> Packed:
    low = int(a.min()) if len(a) else 0
    if len(a) and int(a.max()) - low >= 1 << 32:
        return a.dtype, 0, a
    return a.dtype, low, (a - np.array(low, a.dtype)).astype(np.uint32)


def _unpack(packed: Packed) -> np.ndarray:
    dtype, low, values = packed
    return values.astype(dtype) + np.array(low, dtype)


class StructureBuilder(Protocol):
    """What the gathering needs of the binary's builder (:class:`hpcsa.structure.x86.build.StructureBuilder`):
    its functions, code and instruction runs, and its names for lines, files and inline paths."""

    funcs: Functions | None
    code: CodeIndex | None
    runs: InstructionRuns | None

    @property
    def file_names(self) -> Sequence[str]: ...

    def realpath(self, path: str) -> str: ...

    def line_at(self, vma: int) -> tuple[str, int, int] | None: ...

    def inline_path(self, node: int, strtab: StrTab) -> list[FLP]: ...


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
        back = ((succ_a >= 0) & (succ_a <= every)) | ((succ_b >= 0) & (succ_b <= every)
                                                        & (cfg._kind_b[bids] != E_CATCH))
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


class GroupCtx:
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


class FuncCtx:
    """One parsed function (blocks ``first .. first + count - 1`` of a :class:`FunctionBatch`) as
    :class:`~hpcsa.structure.tree.FunctionCode`; blocks are numbered from 0 here."""

    def __init__(self, group: GroupCtx, batch: FunctionBatch, number: int) -> None:
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
        irreducible loops, hence their lines, depends on it. Blocks are numbered in address order. Edges to
        exception landing pads are left out, as ParseAPI's loop search leaves them (``LoopAnalyzer.C``)."""
        b, f = self.batch, self.first
        out = []
        for i in range(f, f + len(self.starts)):
            succs = []
            if b.succ_b[i] >= 0 and b.kind_b[i] != E_CATCH:  # a conditional branch: not taken, then taken
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
        node: TreeNode | None
        for r in range(ra, rb):
            node = root
            n = run_inl[r]
            if n >= 0:
                node = below.get(n)
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

