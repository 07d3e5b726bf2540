"""Whether a jump that leaves its function for the middle of other code is a tail call, as Dyninst decides it.

ParseAPI takes a direct jump to an address that is no function's entry for a tail call only when the code
before it tore the stack frame down (Dyninst 13, ``parseAPI/src/IA_x86.C``, ``IA_x86::isTailCall``): the
instruction before the jump in its basic block, nops skipped, is a ``leave``, a ``pop`` of a register a call
preserves (``rbx``, ``rbp``, ``r12``-``r15`` in the System V AMD64 ABI), or an ``add`` to ``rsp`` that is not
the first instruction of a block entered from a call's return. A jump that is its block's only instruction
is a tail call only at a function's entry, and so is one after nothing but the ``endbr64`` that marks an
indirect-branch target under Intel CET (an instruction Dyninst's rule predates: gcc's ``frame_dummy`` is
``endbr64; jmp register_tm_clones``). Otherwise the jump stays inside the function: gcc's ``.cold``
part of a function jumps back into the function's body after a ``call`` (``__cxa_end_catch``), and that code
is the function's, not a new one.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from hpcsa.structure.x86.sweep import _MD

#: Registers a call preserves (System V AMD64 ABI §3.2.1): popping one restores the caller's frame.
CALLEE_SAVED = frozenset({"rbx", "rbp", "r12", "r13", "r14", "r15"})


def _insn(code: bytes, addr: int) -> tuple[str, str]:
    """Mnemonic and operands of the instruction at the start of ``code`` (empty if none decodes)."""
    for _a, _s, mnem, ops in _MD.disasm_lite(code, addr, 1):
        return mnem, ops
    return "", ""


def tears_frame_down(addr: np.ndarray, size: np.ndarray, read: Callable[[int, int], bytes], block_start_row: int,
                     row: int, is_entry_block: bool, after_call: bool) -> bool:
    """Dyninst's test for the jump at ``row``: ``block_start_row`` is the first row of its block,
    ``is_entry_block`` whether that block starts a function, ``after_call`` whether a call returns to it."""
    if row <= block_start_row:
        return is_entry_block  # "jump as only insn in entry block" / "too few insns"
    if is_entry_block and row == block_start_row + 1:
        a = int(addr[block_start_row])
        if _insn(read(a, int(size[block_start_row])), a)[0] == "endbr64":
            return True
    prev = row - 1
    while True:
        a = int(addr[prev])
        mnem, ops = _insn(read(a, int(size[prev])), a)
        if not mnem.startswith("nop") or prev <= block_start_row:
            break
        prev -= 1
    if mnem == "leave":
        return True
    if mnem == "pop":
        return ops.strip() in CALLEE_SAVED
    if mnem == "add" and ops.replace(" ", "").startswith("rsp,"):
        return not (prev == block_start_row and after_call)
    return False


__all__ = ["CALLEE_SAVED", "tears_frame_down"]
