"""Control-flow graphs of x86-64 functions, decoded with capstone, built the way Dyninst's ParseAPI does.

All code is decoded once by linear sweeps (capstone's lite mode) that restart
at every function entry, into numpy columns (address, size, kind, direct
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

import bisect
import ctypes
import struct
from collections.abc import Callable
from dataclasses import dataclass

import capstone
import numpy as np

from hpcsa.structure.elf import ElfImage

# Instruction kinds (K_OTHER is everything that does not transfer control)
K_OTHER, K_JUMP, K_COND, K_CALL, K_RET, K_IJUMP, K_ICALL, K_HALT = range(8)

# Edge kinds (as ParseAPI names them)
E_TAKEN, E_NOT_TAKEN, E_DIRECT, E_FALLTHROUGH, E_CALL_FT, E_INDIRECT = range(6)

_CONDITIONAL = {"ja", "jae", "jb", "jbe", "jc", "je", "jg", "jge", "jl", "jle", "jna", "jnae", "jnb", "jnbe",
                "jnc", "jne", "jng", "jnge", "jnl", "jnle", "jno", "jnp", "jns", "jnz", "jo", "jp", "jpe", "jpo",
                "js", "jz", "jcxz", "jecxz", "jrcxz", "loop", "loope", "loopne", "loopz", "loopnz"}
_BASE_KIND = {m: K_COND for m in _CONDITIONAL}
_BASE_KIND.update({"jmp": K_JUMP, "ljmp": K_IJUMP, "call": K_CALL, "lcall": K_ICALL, "ret": K_RET,
                   "retf": K_RET, "retfq": K_RET, "iret": K_RET, "iretq": K_RET, "iretd": K_RET, "sysret": K_RET,
                   "sysretq": K_RET, "hlt": K_HALT, "ud2": K_HALT, "ud1": K_HALT, "ud0": K_HALT, "int3": K_HALT})


class _KindTable(dict[str, int]):
    """Mnemonic -> kind, including prefixed forms such as ``notrack jmp`` or ``bnd ret``."""

    def __missing__(self, mnemonic: str) -> int:
        kind = _BASE_KIND.get(mnemonic.rsplit(" ", 1)[-1], K_OTHER)
        self[mnemonic] = kind
        return kind


_KIND = _KindTable()


def _kind_of_id() -> np.ndarray:
    """Kind per capstone x86 instruction id."""
    from capstone import x86_const as x86
    ids = {name[len("X86_INS_"):].lower(): value for name, value in vars(x86).items()
           if name.startswith("X86_INS_") and isinstance(value, int)}
    table = np.zeros(max(ids.values()) + 2, np.uint8)
    for mnemonic, value in ids.items():
        table[value] = _BASE_KIND.get(mnemonic, K_OTHER)
    return table


_KIND_OF_ID = _kind_of_id()

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

_MD = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)


def _insn_dtype() -> np.dtype:
    ci = capstone._cs_insn
    return np.dtype({"names": ["id", "address", "size", "op_str"],
                     "formats": ["u4", "u8", "u2", "S160"],
                     "offsets": [ci.id.offset, ci.address.offset, ci.size.offset, ci.op_str.offset],
                     "itemsize": ctypes.sizeof(ci)})


_INSN = _insn_dtype()
CODE_ROW = np.dtype([("addr", "u8"), ("size", "u1"), ("kind", "u1"), ("target", "i8")])
SWEEP_CHUNK = 1 << 18
_HEXVAL = np.full(256, 255, np.uint8)
for _i, _c in enumerate(b"0123456789abcdef"):
    _HEXVAL[_c] = _i
_ROW = np.dtype([("id", "u4"), ("address", "u8"), ("size", "u2"), ("op_str", "S160")])


def decode(code: bytes, address: int, count: int = 0) -> np.ndarray:
    """Instructions of ``code`` (until the first undecodable byte) as a numpy array: id, address, size,
    operands. capstone's own Python iterator builds a tuple and two strings per instruction and is the
    bottleneck of a whole-binary sweep (about 2 us per instruction), so this reads the array that
    capstone's C ``cs_disasm`` returns, through the binding's own ctypes handle, in one copy."""
    insn = ctypes.POINTER(capstone._cs_insn)()
    n = capstone._cs.cs_disasm(_MD.csh, code, len(code), address, count, ctypes.byref(insn))
    if n <= 0:
        return np.zeros(0, _ROW)
    try:
        raw = (ctypes.c_char * (n * _INSN.itemsize)).from_address(ctypes.addressof(insn.contents))
        return np.frombuffer(raw, _INSN, count=n).astype(_ROW)
    finally:
        capstone._cs.cs_free(insn, n)


class Block:
    """A basic block: [start, end) and its CodeIndex rows first..last."""

    __slots__ = ("start", "end", "first", "last", "succs", "call_target", "is_call", "returns")

    def __init__(self, start: int, end: int, first: int, last: int) -> None:
        self.start = start
        self.end = end                  # one past the last instruction
        self.first = first
        self.last = last
        self.succs: list[tuple[int, int]] = []   # (target block start, edge kind)
        self.call_target: int | None = None      # direct call at the end of the block
        self.is_call = False
        self.returns = False            # ends in a return (or a tail call to a returning function)


@dataclass
class Function:
    entry: int
    insns: np.ndarray              # CodeIndex rows of its instructions, sorted
    blocks: dict[int, Block]       # by start address
    calls: list[tuple[int, int]]   # (call instruction address, direct target)
    tail_calls: list[int]
    returns: bool                  # some path reaches a return or a tail call

    def block_list(self) -> list[Block]:
        return [self.blocks[k] for k in sorted(self.blocks)]


class CodeIndex:
    """Every instruction of the code sections as columns, sorted by address."""

    def __init__(self, image: ElfImage, restarts: list[int]) -> None:
        self.image = image
        self.operands: dict[int, str] = {}   # indirect jumps: operand text (jump tables)
        parts = [self._sweep(sec.addr, sec.end) for sec in image.code_sections]
        rows = np.concatenate(parts) if parts else np.zeros(0, CODE_ROW)
        # A sweep can run through a function's entry inside an instruction (data or padding before it):
        # sweep again from every such entry to the next one and let those instructions win.
        starts = np.array(sorted(a for a in restarts if image.code_region(a) is not None), np.uint64)
        missing = starts[~np.isin(starts, rows["addr"])] if len(starts) else starts
        if len(missing):
            redo = []
            drop = np.zeros(len(rows), bool)
            for m in missing.tolist():
                region = image.code_region(m)
                k = int(np.searchsorted(starts, np.uint64(m), side="right"))
                end = min(int(starts[k]) if k < len(starts) else region.end, region.end)  # type: ignore[union-attr]
                piece = self._sweep(m, end)
                redo.append(piece)
                hi = int(piece["addr"][-1]) + int(piece["size"][-1]) if len(piece) else m
                drop |= (rows["addr"] >= np.uint64(m)) & (rows["addr"] < np.uint64(hi))
            rows = np.concatenate([rows[~drop]] + redo)
            rows = rows[np.argsort(rows["addr"], kind="stable")]
            keep = np.ones(len(rows), bool)
            keep[1:] = rows["addr"][1:] != rows["addr"][:-1]
            rows = rows[keep]
        self.addr = rows["addr"].copy()
        self.size = rows["size"].copy()
        self.kind = rows["kind"].copy()
        self.target = rows["target"].copy()
        self.addr_list: list[int] = self.addr.tolist()
        self.size_list: list[int] = self.size.tolist()
        self.kind_list: list[int] = self.kind.tolist()
        self.target_list: list[int] = self.target.tolist()
        self.cf: list[int] = np.flatnonzero(self.kind != K_OTHER).tolist()   # control-transfer rows

    def _sweep(self, start: int, end: int) -> np.ndarray:
        """Linear sweep of [start, end): the instructions that start in it (the last may run past ``end``),
        decoded in chunks so that capstone's output array stays small."""
        out = []
        pos = start
        while pos < end:
            chunk_end = min(end, pos + SWEEP_CHUNK)
            raw = decode(self.image.read(pos, chunk_end - pos + 15), pos)
            raw = raw[raw["address"] < chunk_end]
            stop = int(raw["address"][-1]) + int(raw["size"][-1]) if len(raw) else pos
            if len(raw):
                out.append(self._rows(raw))
            if stop >= chunk_end:
                pos = stop
                continue
            if stop >= end:
                break
            # An undecodable byte: a 1-byte instruction that ends its block, then resume after it.
            out.append(np.array([(stop, 1, K_HALT, -1)], CODE_ROW))
            pos = stop + 1
        return np.concatenate(out) if out else np.zeros(0, CODE_ROW)

    def _rows(self, raw: np.ndarray) -> np.ndarray:
        rows = np.empty(len(raw), CODE_ROW)
        rows["addr"] = raw["address"]
        rows["size"] = raw["size"]
        k = _KIND_OF_ID[np.minimum(raw["id"], len(_KIND_OF_ID) - 1)]
        ops = np.ascontiguousarray(raw["op_str"]).view(np.uint8).reshape(len(raw), -1)
        direct = (ops[:, 0] == ord("0")) & (ops[:, 1] == ord("x"))
        branchy = (k == K_JUMP) | (k == K_COND) | (k == K_CALL)
        k = np.where(branchy & ~direct & (k == K_JUMP), K_IJUMP, k)
        k = np.where(branchy & ~direct & (k == K_CALL), K_ICALL, k).astype(np.uint8)
        rows["kind"] = k
        rows["target"] = -1
        sel = np.flatnonzero(branchy & direct)
        if len(sel):
            digits = _HEXVAL[ops[sel, 2:18]].astype(np.uint64)
            valid = digits < 16
            length = np.where(valid.all(axis=1), 16, np.argmin(valid, axis=1))
            shift = (length[:, None] - 1 - np.arange(16)[None, :]) * 4
            use = np.arange(16)[None, :] < length[:, None]
            value = np.where(use, digits << np.maximum(shift, 0).astype(np.uint64), 0).sum(axis=1)
            rows["target"][sel] = value.astype(np.int64)
        for i in np.flatnonzero(k == K_IJUMP).tolist():
            self.operands[int(raw["address"][i])] = raw["op_str"][i].decode("ascii", "replace")
        return rows

    def row(self, address: int) -> int:
        """Row of the instruction starting at ``address`` (-1 if no decoded instruction starts there)."""
        i = bisect.bisect_left(self.addr_list, address)
        return i if i < len(self.addr_list) and self.addr_list[i] == address else -1


def parse_function(code: CodeIndex, entry: int, extent_end: int, entries: set[int], noreturn: set[int],
                   is_tail_call: Callable[[int, int, int], bool] | None = None) -> Function:
    """Recursive traversal from ``entry`` over the CodeIndex. A direct jump is a tail call when its target
    is another function's entry (``entries``) or when ``is_tail_call(entry, extent_end, target)``."""
    addr_list = code.addr_list
    sizes = code.size_list
    kinds = code.kind_list
    targets = code.target_list
    cf = code.cf
    n = len(addr_list)
    first = code.row(entry)
    empty = Function(entry, np.zeros(0, np.int64), {}, [], [], True)
    if first < 0:
        return empty
    leaders = {first}
    run_start: dict[int, int] = {}   # control-transfer row -> smallest row a walk reached it from
    ends: dict[int, tuple[list[tuple[int, int]], int | None, bool]] = {}
    calls: list[tuple[int, int]] = []
    tail_calls: list[int] = []
    stack = [first]
    while stack:
        i = stack.pop()
        k = bisect.bisect_left(cf, i)
        j = cf[k] if k < len(cf) else n - 1
        # Stop a walk where the code is not contiguous (a decoding gap): end the run there.
        prev = run_start.get(j)
        if prev is not None:
            if i < prev:
                run_start[j] = i
            continue
        run_start[j] = i
        a = addr_list[j]
        kind = kinds[j]
        nxt_addr = a + sizes[j]
        nxt = j + 1 if j + 1 < n and addr_list[j + 1] == nxt_addr else -1
        target = targets[j]
        if kind == K_OTHER:  # end of the decoded code
            ends[j] = ([], None, False)
        elif kind == K_COND:
            succ = []
            t = code.row(target) if target >= 0 else -1
            if t >= 0:
                leaders.add(t)
                stack.append(t)
                succ.append((target, E_TAKEN))
            if nxt >= 0:
                leaders.add(nxt)
                stack.append(nxt)
                succ.append((nxt_addr, E_NOT_TAKEN))
            ends[j] = (succ, None, False)
        elif kind == K_JUMP:
            if target != entry and (target in entries
                                    or (is_tail_call is not None and is_tail_call(entry, extent_end, target))):
                tail_calls.append(target)
                ends[j] = ([], None, target not in noreturn)
            else:
                t = code.row(target)
                if t >= 0:
                    leaders.add(t)
                    stack.append(t)
                    ends[j] = ([(target, E_DIRECT)], None, False)
                else:
                    ends[j] = ([], None, False)
        elif kind == K_IJUMP:
            table = resolve_jump_table(code, a)
            succ = []
            for t_addr in table:
                t = code.row(t_addr)
                if t >= 0:
                    leaders.add(t)
                    stack.append(t)
                    succ.append((t_addr, E_INDIRECT))
            # an unresolved indirect jump may be a tail call through a pointer: count it as returning
            ends[j] = (succ, None, not succ)
        elif kind in (K_CALL, K_ICALL):
            direct = target if kind == K_CALL and target >= 0 else None
            if direct is not None:
                calls.append((a, direct))
            if (direct is not None and direct in noreturn) or nxt < 0:
                ends[j] = ([], direct, False)
            else:
                leaders.add(nxt)
                stack.append(nxt)
                ends[j] = ([(nxt_addr, E_CALL_FT)], direct, False)
        elif kind == K_RET:
            ends[j] = ([], None, True)
        else:  # K_HALT
            ends[j] = ([], None, False)

    # Blocks: each run [start, end row] split at the leaders inside it.
    run_lo: list[int] = []
    run_hi: list[int] = []
    blocks: dict[int, Block] = {}
    leader_list = sorted(leaders)
    returns = False
    for j, s in run_start.items():
        run_lo.append(s)
        run_hi.append(j + 1)
        lo = bisect.bisect_left(leader_list, s)
        hi = bisect.bisect_right(leader_list, j)
        cuts = [s] + [x for x in leader_list[lo:hi] if x != s] + [j + 1]
        for b0, b1 in zip(cuts, cuts[1:], strict=False):
            start = addr_list[b0]
            last = b1 - 1
            block = Block(start, addr_list[last] + sizes[last], b0, last)
            if last == j:
                succ, call_target, rets = ends[j]
                block.succs = succ
                block.call_target = call_target
                block.is_call = kinds[j] in (K_CALL, K_ICALL)
                block.returns = rets
                returns = returns or rets
            else:
                block.succs = [(addr_list[b1], E_FALLTHROUGH)]
            blocks[start] = block
    lo = np.array(run_lo, np.int64)
    lens = np.array(run_hi, np.int64) - lo
    order = np.argsort(lo)
    lo, lens = lo[order], lens[order]
    offsets = np.zeros(len(lens), np.int64)
    np.cumsum(lens[:-1], out=offsets[1:])
    insns = np.arange(int(lens.sum()), dtype=np.int64) + np.repeat(lo - offsets, lens)
    for b in blocks.values():
        if b.succs and any(t not in blocks for t, _ in b.succs):
            b.succs = [(t, k) for t, k in b.succs if t in blocks]
    return Function(entry, insns, blocks, calls, tail_calls, returns)


def resolve_jump_table(code: CodeIndex, jmp_addr: int) -> list[int]:
    """Targets of a switch dispatch ending at ``jmp_addr`` (empty when the shape is not recognised)."""
    ops = code.operands.get(jmp_addr, "")
    image = code.image
    # Absolute table: jmp qword ptr [reg*8 + table]
    if "ptr [" in ops and "*8" in ops and "+" in ops and "rip" not in ops:
        try:
            disp = int(ops.rsplit("+", 1)[1].strip(" ]"), 16)
        except ValueError:
            return []
        return _read_table(image, disp, 8, None)
    # PIC table: lea rT, [rip + d]; movsxd rX, dword ptr [rT + rI*4]; add rX, rT; jmp rX
    if ops and "[" not in ops:
        return _pic_table(image, jmp_addr)
    return []


def _pic_table(image: ElfImage, jmp_addr: int) -> list[int]:
    back = image.read(max(jmp_addr - 64, 0), 64)
    if not back:
        return []
    start = jmp_addr - len(back)
    for skip in range(0, min(len(back), 48)):
        insns = list(_MD.disasm_lite(back[skip:], start + skip))
        if insns and insns[-1][0] + insns[-1][1] == jmp_addr:
            break
    else:
        return []
    for addr, size, mnem, ops in reversed(insns):
        if mnem == "lea" and "rip" in ops:
            try:
                if "+" in ops:
                    disp = int(ops.split("+")[-1].strip(" ]"), 16)
                else:
                    disp = -int(ops.split("-")[-1].strip(" ]"), 16)
            except ValueError:
                return []
            table = addr + size + disp
            return _read_table(image, table, 4, table)
    return []


def _read_table(image: ElfImage, table: int, width: int, base: int | None) -> list[int]:
    """Entries of a jump table until one points outside the code (at most 4096)."""
    region = next((s for s in image.sections if s.addr <= table < s.end and s.type != "SHT_NOBITS"), None)
    if region is None:
        return []
    raw = image.read(table, min(region.end - table, 4096 * width))
    out: list[int] = []
    fmt = "<q" if width == 8 else "<i"
    for off in range(0, len(raw) - width + 1, width):
        v = struct.unpack_from(fmt, raw, off)[0]
        target = v if base is None else (base + v) & 0xFFFFFFFFFFFFFFFF
        if image.code_region(target) is None:
            break
        out.append(target)
    return list(dict.fromkeys(out))
