"""Control-flow graphs of x86-64 functions, decoded with capstone, built the way Dyninst's ParseAPI does.

All code is decoded once by linear sweeps (capstone's lite mode,
:mod:`hpcsa.structure.x86.sweep`) that restart at every function entry, into numpy columns (address, size, kind, direct
target) — :class:`CodeIndex`. A function is then parsed by recursive
traversal from its entry, but a walk jumps from one control-transfer
instruction to the next by binary search instead of stepping through
instructions, so the Python work is per basic block, not per instruction.
As in ParseAPI: a call ends a basic block; a jump to another function's
entry (or out of the function into other code) is a tail call; calls to
functions that never return have no fall-through; switch jump tables of the
two shapes compilers emit (absolute ``jmp [table + reg*8]`` and PIC
``lea``/``movsxd``/``add``/``jmp reg``) are resolved from the table bytes.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from hpcsa.core.arrays import sorted_unique
from hpcsa.structure.edges import E_CALL_FT, E_CATCH, E_DIRECT, E_FALLTHROUGH, E_NOT_TAKEN, E_TAKEN
from hpcsa.structure.elf import ElfImage
from hpcsa.structure.x86.codeptr import register_family, resolve_code_pointer_jump
from hpcsa.structure.x86.exceptions import TryRegions
from hpcsa.structure.x86.sweep import (
    _MD,
    CODE_ROW,
    K_CALL,
    K_COND,
    K_ICALL,
    K_IJUMP,
    K_JUMP,
    K_OTHER,
    K_RET,
    TailShare,
    sweep,
    sweep_code,
)
from hpcsa.structure.x86.tailcalls import tears_frame_down

# Functions that never return (by name; Dyninst keeps a similar list), PLT names included.
NORETURN_NAMES = frozenset({
    "exit", "_exit", "_Exit", "abort", "__stack_chk_fail", "__assert_fail", "__assert_perror_fail",
    "__assert", "__cxa_throw", "__cxa_rethrow", "__cxa_bad_cast", "__cxa_bad_typeid", "__cxa_call_unexpected",
    "__cxa_pure_virtual", "_Unwind_Resume", "longjmp", "_longjmp", "siglongjmp", "__longjmp_chk",
    "pthread_exit", "__fortify_fail", "__chk_fail", "err", "errx", "verr", "verrx", "__libc_fatal",
    "_ZSt9terminatev", "quick_exit", "_gfortran_stop_string", "_gfortran_error_stop_string",
    "_gfortran_runtime_error", "_gfortran_runtime_error_at", "_gfortran_os_error",
    "_ZSt20__throw_length_errorPKc", "_ZSt17__throw_bad_allocv", "_ZSt19__throw_logic_errorPKc",
    "_ZSt20__throw_out_of_rangePKc", "_ZSt24__throw_out_of_range_fmtPKcz", "_ZSt16__throw_bad_castv",
    "_ZSt25__throw_bad_function_callv", "_ZSt28__throw_bad_array_new_lengthv",
    "Py_FatalError", "_Py_FatalErrorFunc", "_Py_FatalErrorFormat", "Py_Exit",
})

#: What a jump out of its function's extent to a target that is no function entry is (see ProgramCFG.set_edges).
TAIL_NEVER, TAIL_IF_TORN_DOWN, TAIL_ALWAYS = 0, 1, 2


class CodeIndex:
    """Every instruction of the code sections as columns, sorted by address."""

    def __init__(self, image: ElfImage, restarts: list[int], share: TailShare | None = None) -> None:
        self.image = image
        self.operands: dict[int, str] = {}   # indirect jumps: operand text (jump tables)
        self.tables: dict[int, list[int]] = {}  # jump address -> resolved table targets (kept across rebuilds)
        self.codeptr_functions: dict[int, object] = {}  # codeptr's decoded functions, by entry
        rows = sweep_code(image, self.operands, share)
        self.restarts = np.array(sorted({a for a in restarts if image.code_region(a) is not None}), np.uint64)
        self._set(rows)
        self.resync(self.restarts)

    def _set(self, rows: np.ndarray) -> None:
        self.addr = rows["addr"].copy()
        self.size = rows["size"].copy()
        self.kind = rows["kind"].copy()
        self.target = rows["target"].copy()
        self.cf: list[int] = np.flatnonzero(self.kind != K_OTHER).tolist()   # control-transfer rows

    def resync(self, addresses: np.ndarray) -> bool:
        """Make every address of ``addresses`` an instruction start: a linear sweep can run through a
        function's entry inside an instruction (data or padding before it), so sweep again from each such
        entry to the next restart point and let those instructions win. Returns whether anything changed."""
        addresses = np.asarray(addresses, np.uint64)
        present = in_sorted(addresses, self.addr)
        missing = sorted_unique(addresses[~present])
        missing = np.array([m for m in missing.tolist() if self.image.code_region(m) is not None], np.uint64)
        if not len(missing):
            return False
        self.restarts = sorted_unique(np.concatenate([self.restarts, missing]))
        rows = np.empty(len(self.addr), CODE_ROW)
        rows["addr"], rows["size"], rows["kind"], rows["target"] = self.addr, self.size, self.kind, self.target
        keep = np.ones(len(rows), bool)
        redo = []
        for m in missing.tolist():
            region = self.image.code_region(m)
            if region is None:
                raise ValueError(f"{m:#x} lies in no code section (the missing addresses were chosen in one)")
            k = int(np.searchsorted(self.restarts, np.uint64(m), side="right"))
            end = min(int(self.restarts[k]) if k < len(self.restarts) else region.end, region.end)
            piece = sweep(self.image, m, end, self.operands)
            redo.append(piece)
            hi = int(piece["addr"][-1]) + int(piece["size"][-1]) if len(piece) else m
            keep[int(np.searchsorted(self.addr, np.uint64(m))):int(np.searchsorted(self.addr, np.uint64(hi)))] = False
        rows = np.concatenate([rows[keep]] + redo)
        rows = rows[np.argsort(rows["addr"], kind="stable")]
        unique = np.ones(len(rows), bool)
        unique[1:] = rows["addr"][1:] != rows["addr"][:-1]
        self._set(rows[unique])
        return True

    def row(self, address: int) -> int:
        """Row of the instruction starting at ``address`` (-1 if no decoded instruction starts there)."""
        if not 0 <= address < 1 << 64:
            return -1
        i = int(np.searchsorted(self.addr, np.uint64(address)))
        return i if i < len(self.addr) and int(self.addr[i]) == address else -1


def in_sorted(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    """values in sorted_set (a sorted array), by binary search (faster than np.isin's hashing here)."""
    if not len(sorted_set):
        return np.zeros(len(values), bool)
    pos = np.minimum(np.searchsorted(sorted_set, values), len(sorted_set) - 1)
    return sorted_set[pos] == values


def rows_of(code: CodeIndex, addresses: np.ndarray) -> np.ndarray:
    """CodeIndex rows of instruction addresses (-1 where no decoded instruction starts)."""
    addresses = np.asarray(addresses, np.uint64)
    pos = np.searchsorted(code.addr, addresses)
    ok = pos < len(code.addr)
    ok[ok] = code.addr[pos[ok]] == addresses[ok]
    return np.where(ok, pos, -1)


class ProgramCFG:
    """Basic blocks of all the code at once, and each function as the blocks reachable from its entry.

    Leaders are function entries, every direct branch, call and jump-table target, and every instruction
    after a control transfer, so one partition of the code serves every function (as ParseAPI splits its
    blocks globally). Edges depend on which addresses are function entries (a jump to one is a tail call)
    and which functions never return (no fall-through after calls to them): :meth:`set_edges` computes
    them for all control-transfer instructions at once; :meth:`reach` walks one function's blocks.
    """

    def __init__(self, code: CodeIndex, extra_leaders: list[int],
                 extent_of: Callable[[int], tuple[int, int]] | None = None, tries: TryRegions | None = None) -> None:
        self.code = code
        n = len(code.addr)
        self.n = n
        cf = np.array(code.cf, np.int64)
        self.cf = cf
        addr = code.addr
        contiguous = np.zeros(n, bool)   # row i+1 follows row i without a gap
        if n > 1:
            contiguous[:-1] = addr[1:] == addr[:-1] + code.size[:-1].astype(np.uint64)
        self.contiguous = contiguous
        tgt = code.target[cf]
        self.trow = np.where(tgt >= 0, rows_of(code, np.maximum(tgt, 0).astype(np.uint64)), -1)
        self.nrow = np.where(contiguous[cf], cf + 1, -1)
        # Jump tables: resolved once.
        self.tables: dict[int, list[int]] = {}
        for j in cf[code.kind[cf] == K_IJUMP].tolist():
            a = int(addr[j])
            targets = code.tables.get(a)
            if targets is None:
                lo, hi = extent_of(a) if extent_of is not None else (0, 1 << 64)
                targets = code.tables[a] = resolve_jump_table(code, a, lo, hi)
            rows = rows_of(code, np.array(targets, np.uint64)) if targets else np.zeros(0, np.int64)
            self.tables[j] = [r for r in rows.tolist() if r >= 0]
        # Calls inside try regions: the row of their landing pad (-1: none), per control-transfer row.
        self.pad_row = np.full(len(cf), -1, np.int64)
        if tries is not None and len(tries.lo) and len(cf):
            calls = np.flatnonzero((code.kind[cf] == K_CALL) | (code.kind[cf] == K_ICALL))
            pads = tries.landing_pads(addr[cf[calls]])
            self.pad_row[calls] = np.where(pads >= 0, rows_of(code, np.maximum(pads, 0).astype(np.uint64)), -1)
        leaders = [np.zeros(1, np.int64), self.trow[self.trow >= 0], self.nrow[self.nrow >= 0],
                   self.pad_row[self.pad_row >= 0],
                   np.flatnonzero(~contiguous[:-1]) + 1 if n > 1 else np.zeros(0, np.int64),
                   np.array([r for rows in self.tables.values() for r in rows], np.int64)]
        extra = rows_of(code, np.array(extra_leaders, np.uint64)) if extra_leaders else np.zeros(0, np.int64)
        leaders.append(extra[extra >= 0])
        self.starts = sorted_unique(np.concatenate(leaders)) if n else np.zeros(0, np.int64)
        self.ends = np.append(self.starts[1:], n) - 1          # last row of each block
        self.start_addr = code.addr[self.starts] if n else np.zeros(0, np.uint64)
        self.succ_a: list[int] = []               # per block: first successor block (-1: none)
        self.succ_b: list[int] = []               # and second (kinds in _kind_a, _kind_b)
        self.table_succ: dict[int, list[int]] = {}  # blocks ending in a resolved jump table
        self.block_returns = np.zeros(0, bool)   # per block: ends in a return (or a returning tail call)
        self.block_calls: dict[int, int] = {}     # block -> direct call target
        self.block_tail: dict[int, int] = {}      # block -> tail-call target
        self.block_target = np.zeros(0, np.int64)  # per block: direct call or tail-call target, -1 none
        self.run_end: list[int] = []              # per block: end of its straight run (see set_edges)
        self._edge_cache: tuple[np.ndarray, ...] | None = None
        self._teardown: dict[tuple[int, bool], bool] = {}

    def block_of(self, row: int) -> int:
        return int(np.searchsorted(self.starts, row, side="right")) - 1

    def blocks_of_rows(self, rows: np.ndarray) -> np.ndarray:
        """Block of each row (-1 stays -1)."""
        return np.where(rows >= 0, np.searchsorted(self.starts, np.maximum(rows, 0), side="right") - 1, -1)

    def _edge_rows(self) -> tuple[np.ndarray, ...]:
        """What edges need that does not change between rounds: successor blocks of each control-transfer
        row, and per block its last row's control-transfer number (or whether it falls through)."""
        if self._edge_cache is None:
            nb = len(self.starts)
            cf_index = np.full(self.n, -1, np.int64)
            cf_index[self.cf] = np.arange(len(self.cf))
            i = cf_index[self.ends]
            has = i >= 0
            fall = ~has & self.contiguous[self.ends] & (np.arange(nb) + 1 < nb)
            ii = np.maximum(i, 0)
            # Blocks ending in an indirect jump: the blocks of its resolved table (empty if unresolved).
            ijump = has & (self.code.kind[self.cf][ii] == K_IJUMP)
            tables = [self.tables.get(int(self.ends[b]), []) for b in np.flatnonzero(ijump).tolist()]
            flat = self.blocks_of_rows(np.array([r for t in tables for r in t], np.int64)).tolist()
            self._table_blocks: dict[int, list[int]] = {}
            k = 0
            for b, t in zip(np.flatnonzero(ijump).tolist(), tables, strict=True):
                self._table_blocks[b] = flat[k:k + len(t)]
                k += len(t)
            self._edge_cache = (self.blocks_of_rows(self.trow), self.blocks_of_rows(self.nrow), has, ii, fall,
                                ijump, self.blocks_of_rows(self.pad_row))
        return self._edge_cache

    def set_edges(self, entries: np.ndarray, noreturn: np.ndarray, owner_start: np.ndarray,
                  owner_end: np.ndarray, outside_is_tail: np.ndarray, internal: np.ndarray | None = None) -> None:
        """Edges of every block. ``entries``/``noreturn``: sorted entry addresses; ``owner_start/end``: the
        extent of the function each control-transfer row belongs to; ``outside_is_tail``: per row, what a
        jump to a target outside that extent is (``TAIL_*``: always, after a frame teardown, never);
        ``internal``: sorted addresses of jumps to an entry that are no tail calls (see
        :func:`hpcsa.structure.x86.functions.discover_functions`)."""
        code, cf = self.code, self.cf
        nb = len(self.starts)
        kind = code.kind[cf]
        tgt = code.target[cf]
        tgt_u = np.maximum(tgt, 0).astype(np.uint64)
        in_entries = in_sorted(tgt_u, entries) & (tgt >= 0)
        dead_target = in_sorted(tgt_u, noreturn) & (tgt >= 0)
        inside = (tgt_u >= owner_start) & (tgt_u < owner_end)
        branch = ((kind == K_JUMP) | (kind == K_COND)) & (tgt >= 0) & (tgt_u != owner_start)
        away = branch & (kind == K_JUMP)
        leaves = away & ~in_entries & ~inside
        into_other = leaves & (outside_is_tail == TAIL_IF_TORN_DOWN)
        if into_other.any():  # into the middle of other code: a tail call only after a frame teardown
            into_other[into_other] = self._tears_down(cf[into_other], entries)
        # A branch to another function's entry, conditional or not, is a tail call (IA_x86::isTailCall takes
        # COND_TAKEN edges as DIRECT ones: gcc's `ja f.cold` leaves f for the procedure f.cold).
        tail = (branch & in_entries) | into_other | (leaves & (outside_is_tail == TAIL_ALWAYS))
        if internal is not None and len(internal):
            tail &= ~in_sorted(code.addr[cf], internal)
        bt, bn, has, ii, fall, ijump, bpad = self._edge_rows()
        # Per control-transfer row: up to two successors and their kinds, and whether it returns.
        s1 = np.full(len(cf), -1, np.int64)
        k1 = np.full(len(cf), -1, np.int64)
        s2 = np.full(len(cf), -1, np.int64)
        k2 = np.full(len(cf), -1, np.int64)
        cond = kind == K_COND
        s1[cond], k1[cond], s2[cond], k2[cond] = bt[cond], E_TAKEN, bn[cond], E_NOT_TAKEN
        cond_tail = cond & tail
        s1[cond_tail], k1[cond_tail] = -1, -1
        jump = (kind == K_JUMP) & ~tail
        s1[jump], k1[jump] = bt[jump], E_DIRECT
        call = ((kind == K_CALL) | (kind == K_ICALL)) & ~dead_target
        s1[call], k1[call] = bn[call], E_CALL_FT
        catch = bpad >= 0  # any call in a try region, returning or not (ParseAPI's IA_IAPI::getNewEdges)
        s2[catch], k2[catch] = bpad[catch], E_CATCH
        rets = (kind == K_RET) | (((kind == K_JUMP) | cond) & tail & ~dead_target)
        # Per block: its last row is a control transfer (then its edges) or falls through to the next block.
        succ_a = np.where(has, s1[ii], np.where(fall, np.arange(nb) + 1, -1))
        kind_a = np.where(has, k1[ii], np.where(fall, E_FALLTHROUGH, -1))
        succ_b = np.where(has, s2[ii], -1)
        kind_b = np.where(has, k2[ii], -1)
        returns = has & rets[ii]
        self.table_succ = {b: list(t) for b, t in self._table_blocks.items()}
        for b, table in self.table_succ.items():
            returns[b] = not table  # an unresolved indirect jump may be a tail call through a pointer
        calls = has & (kind[ii] == K_CALL) & (tgt[ii] >= 0)
        tails = has & tail[ii]
        self._succ_a, self._kind_a, self._succ_b, self._kind_b = succ_a, kind_a, succ_b, kind_b
        self.succ_a = succ_a.tolist()
        self.succ_b = succ_b.tolist()
        self.block_returns = returns
        self.block_calls = dict(zip(np.flatnonzero(calls).tolist(), tgt[ii[calls]].tolist(), strict=True))
        self.block_tail = dict(zip(np.flatnonzero(tails).tolist(), tgt[ii[tails]].tolist(), strict=True))
        # Per block: the direct call or tail call target (-1: none), for whole-function queries.
        self.block_target = np.where(calls | tails, tgt[ii], -1)
        # Per block: the last block of the straight run it starts (blocks whose only successor is the next
        # block), so that a walk takes a run in one step.
        simple = (succ_a == np.arange(nb) + 1) & (succ_b < 0) & ~ijump
        self.run_end = np.minimum.accumulate(np.where(simple, nb, np.arange(nb))[::-1])[::-1].tolist()

    def _tears_down(self, rows: np.ndarray, entries: np.ndarray) -> np.ndarray:
        """Per jump row: :func:`hpcsa.structure.x86.tailcalls.tears_frame_down` (cached per row and entry
        status of its block)."""
        code = self.code
        out = np.zeros(len(rows), bool)
        blocks = self.blocks_of_rows(rows)
        first = self.starts[blocks]
        at_entry = in_sorted(code.addr[first], entries)
        for i, (row, b0, entry) in enumerate(zip(rows.tolist(), first.tolist(), at_entry.tolist(), strict=True)):
            key = (row, entry)
            got = self._teardown.get(key)
            if got is None:
                after_call = b0 > 0 and bool(self.contiguous[b0 - 1]) and int(code.kind[b0 - 1]) in (K_CALL, K_ICALL)
                got = self._teardown[key] = tears_frame_down(code.addr, code.size, code.image.read, b0, row, entry,
                                                             after_call)
            out[i] = got
        return out

    def entry_blocks(self, rows: np.ndarray) -> np.ndarray:
        """The block starting at each row (-1 where a row starts no block)."""
        b = self.blocks_of_rows(rows)
        ok = b >= 0
        ok[ok] = self.starts[b[ok]] == rows[ok]
        return np.where(ok, b, -1)

    def reach(self, b0: int) -> list[int]:
        """Blocks reachable from block ``b0`` (sorted)."""
        if b0 < 0:
            return []
        succ_a, succ_b, tables, run_end = self.succ_a, self.succ_b, self.table_succ, self.run_end
        seen = {b0}
        stack = [b0]
        while stack:
            b = stack.pop()
            e = run_end[b]
            if e != b:  # b .. e: each block's only successor is the next one
                seen.update(range(b + 1, e + 1))
                b = e
            t = succ_a[b]
            if t >= 0 and t not in seen:
                seen.add(t)
                stack.append(t)
            t = succ_b[b]
            if t >= 0 and t not in seen:
                seen.add(t)
                stack.append(t)
            if b in tables:
                for t in tables[b]:
                    if t not in seen:
                        seen.add(t)
                        stack.append(t)
        return sorted(seen)


MAX_TABLE = 4096


def resolve_jump_table(code: CodeIndex, jmp_addr: int, lo: int = 0, hi: int = 1 << 64) -> list[int]:
    """Targets of a switch dispatch ending at ``jmp_addr`` in a function spanning [lo, hi).

    Recognised: ``jmp [index*8 + table]`` (absolute tables) and ``lea base, [rip + table]`` ...
    ``movsxd r, [base + index*4]``; ``add r, base``; ``jmp r`` (position-independent tables), both with
    the ``cmp index, N`` / ``ja default`` bound check before them, which gives the table's length (as
    Dyninst's slicing does), and computed gotos through tables of code addresses
    (:mod:`hpcsa.structure.x86.codeptr`). Targets outside the function end the table. Unrecognised shapes: empty.
    """
    ops = code.operands.get(jmp_addr, "")
    row = code.row(jmp_addr)
    if row < 0 or not ops:
        return []
    first = max(0, row - 48)
    while first < row and int(code.addr[first]) < lo:
        first += 1
    start = int(code.addr[first])
    window = [x for x in _MD.disasm_lite(code.image.read(start, jmp_addr - start), start)]
    if not window or window[-1][0] + window[-1][1] != jmp_addr:
        return []
    return (_switch_targets(code, ops, window, lo, hi)
            or resolve_code_pointer_jump(code, jmp_addr, ops, window, lo, hi))


def _switch_targets(code: CodeIndex, ops: str, window: list[tuple[int, int, str, str]], lo: int,
                    hi: int) -> list[int]:
    """Targets of a switch's jump table (the two shapes of :func:`resolve_jump_table`), else empty."""
    table: int | None = None
    width = 8
    base: int | None = None
    index: str | None = None
    if "ptr [" in ops and "*8" in ops and "rip" not in ops:
        m = ops[ops.index("[") + 1:ops.rindex("]")].replace(" ", "")
        terms = m.split("+")
        try:
            table = next(int(t, 16) for t in terms if t.startswith("0x"))
        except (StopIteration, ValueError):
            return []
        index = register_family(next((t.split("*")[0] for t in terms if "*8" in t), ""))
    elif "[" not in ops:
        target_reg = register_family(ops)
        base_reg = None
        for addr, size, mnem, op in reversed(window):
            if base_reg is None and mnem == "add":
                dst, _, src = op.partition(",")
                if register_family(dst) == target_reg:
                    base_reg = register_family(src)
                continue
            if base_reg is not None and index is None and mnem == "movsxd" and "*4" in op:
                mem = op[op.index("[") + 1:op.rindex("]")].replace(" ", "")
                parts = mem.split("+")
                if len(parts) == 2 and register_family(parts[0]) == base_reg and parts[1].endswith("*4"):
                    index = register_family(parts[1][:-2])
                continue
            if base_reg is not None and mnem == "lea" and "rip" in op and register_family(op.split(",")[0]) == base_reg:
                mem = op[op.index("[") + 1:op.rindex("]")].replace(" ", "") if "[" in op else ""
                try:
                    if "+" in mem:
                        disp = int(mem.rsplit("+", 1)[1], 0)
                    elif "-" in mem:
                        disp = -int(mem.rsplit("-", 1)[1], 0)
                    else:
                        disp = 0
                except ValueError:
                    return []
                table = base = addr + size + disp
                width = 4
                break
        if table is None or index is None:
            return []
    else:
        return []
    # The bound check: cmp index, N followed by ja/jae (or jbe/jb towards the table).
    count = None
    for k in range(len(window) - 1, 0, -1):
        _a, _s, mnem, op = window[k]
        if mnem in ("ja", "jae", "jbe", "jb", "jnbe", "jnb", "jna", "jnae"):
            prev = window[k - 1]
            if prev[2] == "cmp":
                reg, _, imm = prev[3].partition(",")
                if register_family(reg) == index:
                    try:
                        n = int(imm.strip(), 0)
                    except ValueError:
                        break
                    count = n + 1 if mnem in ("ja", "jbe", "jnbe", "jna") else n
            break
    limit = min(count if count is not None else MAX_TABLE, MAX_TABLE)
    return _read_table(code.image, table, width, base, limit, lo, hi)


def _read_table(image: ElfImage, table: int, width: int, base: int | None, limit: int, lo: int, hi: int) -> list[int]:
    """Up to ``limit`` entries of a jump table, stopping at the first one that leaves [lo, hi) or the code."""
    region = next((s for s in image.sections if s.addr <= table < s.end and s.type != "SHT_NOBITS"), None)
    if region is None:
        return []
    raw = image.read(table, min(region.end - table, limit * width))
    values = np.frombuffer(raw[:len(raw) // width * width], "<i8" if width == 8 else "<i4").astype(np.int64)
    targets = values if base is None else values + base
    ok = (targets >= lo) & (targets < hi)
    bad = np.flatnonzero(~ok)
    targets = targets[:bad[0]] if len(bad) else targets
    out = targets.tolist()
    if lo == 0:  # no function extent to stay in: keep what lies in code
        out = [t for t in out if image.code_region(t) is not None]
    return list(dict.fromkeys(out))
