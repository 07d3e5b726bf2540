"""Indirect jumps through tables of code addresses: computed-goto dispatch (GCC's labels as values).

An interpreter written with ``goto *table[op]`` (CPython's ceval loop, Lua, many bytecode VMs) keeps a
static array of label addresses and ends each handler with ``jmp [base + op*8]`` or ``mov r, [base +
op*8]; jmp r``. Unlike a switch's table of relative offsets, the entries are absolute addresses: plain
8-byte words in ``.rodata``/``.data`` of a non-PIE executable, and words that the dynamic loader fills
from ``R_X86_64_RELATIVE`` relocations (addend = the label's link-time address) in ``.data.rel.ro`` of a
PIE executable or shared object. ``base`` is either an absolute displacement or a register loaded by a
``lea base, [rip + table]``.

As in Dyninst's jump-table analysis (a backward slice from the jump, which hpcstruct relies on): the base
must be found on the straight-line path to the jump; a handler entered only through the table itself
does not know its base register (the slice stops at indirect edges), so when GCC or clang duplicate the
dispatch into every handler with the base held in a register (``lea`` once at the entry), only the first
dispatch is resolved: the handlers become reachable and the loops inside them are found, but no dispatch
loop, which is what hpcstruct reports for such code. A single shared dispatch with an absolute table
(CPython's ``_PyEval_EvalFrameDefault`` in a non-PIE build) is resolved and its loop is found. The table
has no length in the code (no bound check): entries are read until the first that is not an address inside
the function.
"""

from __future__ import annotations

from typing import Protocol, cast

import capstone
import numpy as np

from hpcsa.structure.elf import ElfImage

Insn = tuple[int, int, str, str]   # capstone disasm_lite: address, size, mnemonic, operands

MAX_ENTRIES = 4096
FUNCTION_SCAN = 1 << 20        # functions larger than this are not decoded again to find a base register
MAX_SLICE_STEPS = 20000        # instructions a backward slice may visit
_MD = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
_NO_FALLTHROUGH = frozenset({"jmp", "ljmp", "ret", "retf", "retfq", "hlt", "ud2", "ud1", "ud0", "int3"})
# Mnemonics whose first operand is read, not written.
_READS_FIRST = frozenset({"cmp", "test", "push", "bt", "ucomiss", "ucomisd", "comiss", "comisd", "ptest"})


class DecodedCode(Protocol):
    """What the resolution needs of the program's decoded code (:class:`hpcsa.structure.x86.cfg.CodeIndex`):
    its image, and a place to keep the functions decoded again here, by entry."""

    image: ElfImage
    codeptr_functions: dict[int, object]


#: The 64-bit register that each general-purpose register name is a part of (``eax`` -> ``rax``).
REGISTER_FAMILY: dict[str, str] = {}
for _fam in (("rax", "eax", "ax", "al"), ("rbx", "ebx", "bx", "bl"), ("rcx", "ecx", "cx", "cl"),
             ("rdx", "edx", "dx", "dl"), ("rsi", "esi", "si", "sil"), ("rdi", "edi", "di", "dil"),
             ("rbp", "ebp", "bp", "bpl"), ("rsp", "esp", "sp", "spl")):
    for _r in _fam:
        REGISTER_FAMILY[_r] = _fam[0]
for _n in range(8, 16):
    for _r in (f"r{_n}", f"r{_n}d", f"r{_n}w", f"r{_n}b"):
        REGISTER_FAMILY[_r] = f"r{_n}"


def register_family(reg: str) -> str:
    return REGISTER_FAMILY.get(reg.strip(), reg.strip())


def _writes(insn: Insn, reg: str) -> bool:
    """Whether ``insn`` (by its first operand) writes the register family ``reg``."""
    mnem, op = insn[2], insn[3]
    if mnem in _READS_FIRST or not op:
        return False
    return register_family(op.split(",", 1)[0]) == reg


def _scaled_index(mem: str) -> tuple[str | None, str | None, int] | None:
    """``base + index*8 + disp`` (capstone's Intel syntax) -> (base family or None, index family, disp);
    None for any other addressing."""
    base = index = None
    disp = 0
    for term in mem.replace(" ", "").replace("-", "+-").split("+"):
        if not term:
            continue
        if term.endswith("*8"):
            index = register_family(term[:-2])
        elif term.lstrip("-").startswith("0x") or term.lstrip("-").isdigit():
            try:
                disp += int(term, 0)
            except ValueError:
                return None
        elif "*" in term or base is not None:
            return None
        else:
            base = register_family(term)
    if index is None or base == "rip":
        return None
    return base, index, disp


def _memory(op: str) -> str | None:
    if "qword ptr [" not in op:
        return None
    return op[op.index("[") + 1:op.rindex("]")]


def _straight_line(window: list[Insn]) -> list[Insn]:
    """The instructions of ``window`` (the code before a jump, in address order) after its last one that does
    not fall through (jmp, ret, hlt, ud2): what reaches the jump without a branch into it from elsewhere."""
    for k in range(len(window) - 1, -1, -1):
        mnem = window[k][2].rsplit(" ", 1)[-1]
        if mnem in _NO_FALLTHROUGH:
            return window[k + 1:]
    return window


def resolve_code_pointer_jump(code: DecodedCode, jmp_addr: int, ops: str, window: list[Insn], lo: int,
                              hi: int) -> list[int]:
    """Targets of an indirect jump through a table of code addresses (see the module docstring); empty when
    the jump has another shape or the table holds no address inside [lo, hi)."""
    window = _straight_line(window)
    mem = _memory(ops)
    k = len(window)
    if mem is None:                        # jmp reg: reg = qword ptr [base + index*8 + disp] just before
        target = register_family(ops)
        while k > 0:
            k -= 1
            if _writes(window[k], target):
                break
        else:
            return []
        if window[k][2] != "mov":
            return []
        mem = _memory(window[k][3])
        if mem is None:
            return []
    parsed = _scaled_index(mem)
    if parsed is None:
        return []
    base, _index, table = parsed
    if base is not None:
        loaded = _base_value(code, window[k][0] if k < len(window) else jmp_addr, base, lo, hi)
        if loaded is None:
            return []
        table += loaded
    return read_code_pointers(code.image, table, lo, hi)


def _constant(insn: Insn) -> int | None:
    """The address a ``lea reg, [rip + disp]`` or ``mov reg, imm`` loads (None for any other instruction)."""
    addr, size, mnem, op = insn
    if mnem == "mov" and "," in op:
        src = op.split(",", 1)[1].strip()
        try:
            return int(src, 0) if src.startswith("0x") or src.isdigit() else None
        except ValueError:
            return None
    if mnem != "lea" or "[rip" not in op:
        return None
    mem = op[op.index("[") + 1:op.rindex("]")].replace(" ", "")
    try:
        disp = int(mem[3:], 0) if len(mem) > 3 else 0
    except ValueError:
        return None
    return addr + size + disp


class _FunctionCode:
    """A function's instructions with operands, and who branches directly to each address."""

    def __init__(self, code: DecodedCode, lo: int, hi: int) -> None:
        self.insns: list[Insn] = list(_MD.disasm_lite(code.image.read(lo, hi - lo), lo))
        self.index = {insn[0]: k for k, insn in enumerate(self.insns)}
        self.preds: dict[int, list[int]] = {}
        for k, (_a, _s, mnem, op) in enumerate(self.insns):
            if mnem.startswith("j") and op.startswith("0x"):
                self.preds.setdefault(int(op, 16), []).append(k)


def _base_value(code: DecodedCode, jmp_addr: int, base: str, lo: int, hi: int) -> int | None:
    """The table address in register ``base`` at the jump, as Dyninst's backward slice finds it while it
    parses: the paths back from the jump through fall-through and direct branches (not through indirect
    jumps, whose targets are what is being resolved) must meet writes to ``base`` that all load the same
    constant address (``lea base, [rip + table]`` or ``mov base, imm``). A path that reaches the function's
    entry first leaves the base unknown (None); one that reaches code entered only through indirect jumps
    ends there. So a dispatch shared by all handlers and reached from the entry is resolved, while a
    dispatch copied into each handler (reached only through the table) is not."""
    if hi - lo > FUNCTION_SCAN:
        return None
    fc = cast("_FunctionCode | None", code.codeptr_functions.get(lo))  # what this module keeps there
    if fc is None:
        fc = code.codeptr_functions[lo] = _FunctionCode(code, lo, hi)
    start = fc.index.get(jmp_addr)
    if start is None:
        return None
    values: set[int] = set()
    seen = {start}
    work = [start]
    steps = 0
    while work:
        k = work.pop()
        while True:
            steps += 1
            if steps > MAX_SLICE_STEPS:
                return None
            for p in fc.preds.get(fc.insns[k][0], ()):
                if p not in seen:
                    seen.add(p)
                    work.append(p)
            if fc.insns[k][0] == lo:
                return None       # the function's entry: the base is an argument, or unknown
            if k == 0 or fc.insns[k - 1][2].rsplit(" ", 1)[-1] in _NO_FALLTHROUGH:
                break             # a block entered by branches only (direct ones are followed above)
            k -= 1
            if _writes(fc.insns[k], base):
                value = _constant(fc.insns[k])
                if value is None:
                    return None
                values.add(value)
                break
            if k in seen:
                break
            seen.add(k)
    return values.pop() if len(values) == 1 else None


def read_code_pointers(image: ElfImage, table: int, lo: int, hi: int) -> list[int]:
    """Up to MAX_ENTRIES 8-byte code addresses at ``table`` (relocated words take their relocation's addend),
    stopping at the first that is not inside [lo, hi). The table must lie in allocated data, not code."""
    region = next((s for s in image.sections if s.addr <= table < s.end and s.type != "SHT_NOBITS"
                   and s.flags & 0x2), None)   # SHF_ALLOC
    if region is None or region.is_code:
        return []
    raw = image.read(table, min(region.end - table, MAX_ENTRIES * 8))
    values = np.frombuffer(raw[:len(raw) // 8 * 8], "<u8").astype(np.int64)
    offsets, addends = image.relative_relocs
    if len(offsets) and len(values):
        where = table + 8 * np.arange(len(values), dtype=np.uint64)
        pos = np.minimum(np.searchsorted(offsets, where), len(offsets) - 1)
        hit = offsets[pos] == where
        values = np.where(hit, addends[pos], values)
    bad = np.flatnonzero((values < lo) | (values >= hi))
    out = (values[:bad[0]] if len(bad) else values).tolist()
    return list(dict.fromkeys(out))
