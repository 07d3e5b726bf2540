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

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from hpcsa.structure.cfg import CodeIndex
    from hpcsa.structure.elf import ElfImage

Insn = tuple[int, int, str, str]   # capstone disasm_lite: address, size, mnemonic, operands

MAX_ENTRIES = 4096
_NO_FALLTHROUGH = frozenset({"jmp", "ljmp", "ret", "retf", "retfq", "hlt", "ud2", "ud1", "ud0", "int3"})
# Mnemonics whose first operand is read, not written.
_READS_FIRST = frozenset({"cmp", "test", "push", "bt", "ucomiss", "ucomisd", "comiss", "comisd", "ptest"})


def _family(reg: str) -> str:
    from hpcsa.structure.cfg import _family as family
    return family(reg)


def _writes(insn: Insn, reg: str) -> bool:
    """Whether ``insn`` (by its first operand) writes the register family ``reg``."""
    mnem, op = insn[2], insn[3]
    if mnem in _READS_FIRST or not op:
        return False
    return _family(op.split(",", 1)[0]) == reg


def _scaled_index(mem: str) -> tuple[str | None, str | None, int] | None:
    """``base + index*8 + disp`` (capstone's Intel syntax) -> (base family or None, index family, disp);
    None for any other addressing."""
    base = index = None
    disp = 0
    for term in mem.replace(" ", "").replace("-", "+-").split("+"):
        if not term:
            continue
        if term.endswith("*8"):
            index = _family(term[:-2])
        elif term.lstrip("-").startswith("0x") or term.lstrip("-").isdigit():
            try:
                disp += int(term, 0)
            except ValueError:
                return None
        elif "*" in term or base is not None:
            return None
        else:
            base = _family(term)
    if index is None or base == "rip":
        return None
    return base, index, disp


def _memory(op: str) -> str | None:
    if "qword ptr [" not in op:
        return None
    return op[op.index("[") + 1:op.rindex("]")]


def _rip_lea(insn: Insn) -> int | None:
    """The address that ``lea reg, [rip + disp]`` loads (None for any other instruction)."""
    addr, size, mnem, op = insn
    if mnem != "lea" or "[rip" not in op:
        return None
    mem = op[op.index("[") + 1:op.rindex("]")].replace(" ", "")
    try:
        disp = int(mem[3:], 0) if len(mem) > 3 else 0
    except ValueError:
        return None
    return addr + size + disp


def _straight_line(window: list[Insn]) -> list[Insn]:
    """The instructions of ``window`` (the code before a jump, in address order) after its last one that does
    not fall through (jmp, ret, hlt, ud2): what reaches the jump without a branch into it from elsewhere."""
    for k in range(len(window) - 1, -1, -1):
        mnem = window[k][2].rsplit(" ", 1)[-1]
        if mnem in _NO_FALLTHROUGH:
            return window[k + 1:]
    return window


def resolve_code_pointer_jump(code: CodeIndex, jmp_addr: int, ops: str, window: list[Insn], lo: int,
                              hi: int) -> list[int]:
    """Targets of an indirect jump through a table of code addresses (see the module docstring); empty when
    the jump has another shape or the table holds no address inside [lo, hi)."""
    window = _straight_line(window)
    mem = _memory(ops)
    k = len(window)
    if mem is None:                        # jmp reg: reg = qword ptr [base + index*8 + disp] just before
        target = _family(ops)
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
        loaded = _base_value(window[:k], base)
        if loaded is None:
            return []
        table += loaded
    return read_code_pointers(code.image, table, lo, hi)


def _base_value(before: list[Insn], base: str) -> int | None:
    """The table address that the last write to register ``base`` before the jump loads, when that write is
    a ``lea base, [rip + table]`` on the straight-line path to the jump."""
    for insn in reversed(before):
        if _writes(insn, base):
            return _rip_lea(insn)
    return None


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
