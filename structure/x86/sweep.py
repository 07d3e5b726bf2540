"""Linear sweeps of x86-64 code with capstone into numpy rows (address, size, kind, direct target), by one
process or by two at once.

A linear sweep is a function of where it starts: from any instruction start it decodes what a sweep that
reached that start decodes. So another process may sweep the code from a point well into it
(:func:`~hpcsa.structure.x86.sweep.sweep_tail`) while this one sweeps up to that point (:func:`sweep_code`); this one then goes on past
the point until it lands on an instruction start of the other's sweep (x86 encodings resynchronise within a
few instructions) and takes the other's rows from there on. The rows are those of one sweep, exactly.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

import capstone
import numpy as np

from hpcsa.core.dataclass import dataclass
from hpcsa.structure.elf import ElfImage

# Instruction kinds (K_OTHER is everything that does not transfer control)
K_OTHER, K_JUMP, K_COND, K_CALL, K_RET, K_IJUMP, K_ICALL, K_HALT = range(8)

_CONDITIONAL = {"ja", "jae", "jb", "jbe", "jc", "je", "jg", "jge", "jl", "jle", "jna", "jnae", "jnb", "jnbe",
                "jnc", "jne", "jng", "jnge", "jnl", "jnle", "jno", "jnp", "jns", "jnz", "jo", "jp", "jpe", "jpo",
                "js", "jz", "jcxz", "jecxz", "jrcxz", "loop", "loope", "loopne", "loopz", "loopnz"}
_BASE_KIND = {m: K_COND for m in _CONDITIONAL}
_BASE_KIND.update({"jmp": K_JUMP, "ljmp": K_IJUMP, "call": K_CALL, "lcall": K_ICALL, "ret": K_RET,
                   "retf": K_RET, "retfq": K_RET, "iret": K_RET, "iretq": K_RET, "iretd": K_RET, "sysret": K_RET,
                   "sysretq": K_RET, "hlt": K_HALT, "ud2": K_HALT, "ud1": K_HALT, "ud0": K_HALT, "int3": K_HALT})


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

_MD = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)


def _insn_dtype(operand_bytes: int) -> np.dtype:
    """capstone's cs_insn as a numpy record: id, address, size and the first ``operand_bytes`` of op_str."""
    ci = capstone._cs_insn
    return np.dtype({"names": ["id", "address", "size", "op_str"],
                     "formats": ["u4", "u8", "u2", f"S{operand_bytes}"],
                     "offsets": [ci.id.offset, ci.address.offset, ci.size.offset, ci.op_str.offset],
                     "itemsize": ctypes.sizeof(ci)})


_INSN = _insn_dtype(160)
_INSN_HEAD = _insn_dtype(18)  # "0x" and 16 hex digits: all that direct targets need
CODE_ROW = np.dtype([("addr", "u8"), ("size", "u1"), ("kind", "u1"), ("target", "i8")])
SWEEP_CHUNK = 1 << 18
_HEXVAL = np.full(256, 255, np.uint8)
for _i, _c in enumerate(b"0123456789abcdef"):
    _HEXVAL[_c] = _i
_ROW = np.dtype([("id", "u4"), ("address", "u8"), ("size", "u2"), ("op_str", "S18")])


def decode(code: bytes, address: int, count: int = 0) -> tuple[np.ndarray, dict[int, str]]:
    """Instructions of ``code`` (until the first undecodable byte) as a numpy array (id, address, size, first
    bytes of the operands) and the whole operand text of indirect jumps, by address. capstone's own Python
    iterator builds a tuple and two strings per instruction and is the bottleneck of a whole-binary sweep
    (about 2 us per instruction), so this reads the array that capstone's C ``cs_disasm`` returns, through
    the binding's own ctypes handle, in one copy of the fields used."""
    insn = ctypes.POINTER(capstone._cs_insn)()
    n = capstone._cs.cs_disasm(_MD.csh, code, len(code), address, count, ctypes.byref(insn))
    if n <= 0:
        return np.zeros(0, _ROW), {}
    try:
        raw = (ctypes.c_char * (n * _INSN.itemsize)).from_address(ctypes.addressof(insn.contents))
        rows = np.frombuffer(raw, _INSN_HEAD, count=n).astype(_ROW)
        base = _KIND_OF_ID[np.minimum(rows["id"], len(_KIND_OF_ID) - 1)]
        ops = np.ascontiguousarray(rows["op_str"]).view(np.uint8).reshape(n, -1)
        direct = (ops[:, 0] == ord("0")) & (ops[:, 1] == ord("x"))
        indirect = np.flatnonzero((base == K_IJUMP) | ((base == K_JUMP) & ~direct))
        texts = {}
        if len(indirect):
            full = np.frombuffer(raw, _INSN, count=n)
            texts = {int(full["address"][i]): full["op_str"][i].decode("ascii", "replace")
                     for i in indirect.tolist()}
        return rows, texts
    finally:
        capstone._cs.cs_free(insn, n)


def sweep(image: ElfImage, start: int, end: int, operands: dict[int, str]) -> np.ndarray:
    """Linear sweep of [start, end): the instructions that start in it (the last may run past ``end``),
    as CODE_ROW rows, decoded in chunks so that capstone's output array stays small; the operand text of
    indirect jumps goes to ``operands`` (jump tables are read from it)."""
    out = []
    pos = start
    while pos < end:
        chunk_end = min(end, pos + SWEEP_CHUNK)
        raw, texts = decode(image.read(pos, chunk_end - pos + 15), pos)
        raw = raw[raw["address"] < chunk_end]
        stop = int(raw["address"][-1]) + int(raw["size"][-1]) if len(raw) else pos
        if len(raw):
            out.append(_rows(raw, texts, operands))
        if stop >= chunk_end:
            pos = stop
            continue
        if stop >= end:
            break
        # An undecodable byte: a 1-byte instruction that ends its block, then resume after it.
        out.append(np.array([(stop, 1, K_HALT, -1)], CODE_ROW))
        pos = stop + 1
    return np.concatenate(out) if out else np.zeros(0, CODE_ROW)


def _rows(raw: np.ndarray, texts: dict[int, str], operands: dict[int, str]) -> np.ndarray:
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
    for a in raw["address"][k == K_IJUMP].tolist():
        operands[a] = texts[a]
    return rows


# ---------------------------------------------------------------------------------------------------
# Two processes

#: The share of the code the other process sweeps, where it then reads the debug information (the longer
#: task there; measured on Debian's python3.11d: sweep 0.75 s, the rest of function discovery 1.0 s, the
#: debug information 1.2 s, so that both finish together at about a third); half where it has nothing else.
TAIL_SHARE_WITH_DEBUG = 0.35
#: The share of the code the other process sweeps where it has nothing else to do.
TAIL_SHARE_ALONE = 0.5
SYNC_WINDOW = 64   # bytes decoded at a time while looking for the other sweep's instructions


@dataclass
class SweptTail:
    """The sweep from ``start`` (in code section ``section``) to the end of the code, by another process."""

    section: int
    start: int
    rows: list[np.ndarray]          # per code section from ``section`` on
    operands: dict[int, str]


class TailShare:
    """The part of the sweep another process makes: from ``start`` in code section ``section`` on, its rows
    to be had from ``receive`` once this process has swept up to there."""

    def __init__(self, section: int, start: int, receive: Callable[[], SweptTail]) -> None:
        self.section = section
        self.start = start
        self._receive = receive
        self.taken = False

    def receive(self) -> SweptTail:
        self.taken = True
        return self._receive()


def tail_start(image: ElfImage, with_debug_information: bool) -> tuple[int, int] | None:
    """(code section, address) from which another process is to sweep: about :data:`TAIL_SHARE_WITH_DEBUG`
    or :data:`~hpcsa.structure.x86.sweep.TAIL_SHARE_ALONE` of the code. None where there is no code."""
    secs = image.code_sections
    total = sum(sec.size for sec in secs)
    if not total:
        return None
    point = total * (1 - (TAIL_SHARE_WITH_DEBUG if with_debug_information else TAIL_SHARE_ALONE))
    seen = 0
    for i, sec in enumerate(secs):
        if seen + sec.size > point:
            return i, sec.addr + int(point - seen)
        seen += sec.size
    return None


def sweep_tail(image: ElfImage, section: int, start: int) -> SweptTail:
    """The other process's part: the code from ``start`` in code section ``section`` to the end."""
    operands: dict[int, str] = {}
    secs = image.code_sections
    rows = [sweep(image, start, secs[section].end, operands)]
    rows += [sweep(image, sec.addr, sec.end, operands) for sec in secs[section + 1:]]
    return SweptTail(section, start, rows, operands)


def sweep_code(image: ElfImage, operands: dict[int, str], share: TailShare | None = None) -> np.ndarray:
    """Every code section swept, as one sweep per section; with ``share``, from its start on the sweep
    another process made, joined where this one meets it."""
    parts = []
    secs = image.code_sections
    tail = None
    for i, sec in enumerate(secs):
        if share is None or i < share.section:
            parts.append(sweep(image, sec.addr, sec.end, operands))
        elif i == share.section:
            head = sweep(image, sec.addr, share.start, operands)
            tail = share.receive()
            parts.append(_joined(image, head, sec.addr, sec.end, tail, operands))
        else:
            assert tail is not None
            parts.append(tail.rows[i - tail.section])
    if tail is not None:
        kept = np.concatenate(parts[tail.section:])["addr"] if len(parts) > tail.section else np.zeros(0)
        found = np.array(sorted(tail.operands), np.uint64)
        ok = np.isin(found, kept)
        operands.update((a, tail.operands[a]) for a in found[ok].tolist())
    return np.concatenate(parts) if parts else np.zeros(0, CODE_ROW)


def _joined(image: ElfImage, head: np.ndarray, begin: int, end: int, tail: SweptTail, operands: dict[int, str]
            ) -> np.ndarray:
    """The section's sweep: this process's (``head``, up to the tail's start), then on until an instruction
    start of the tail's sweep, then the tail's."""
    theirs = tail.rows[0]
    starts = theirs["addr"]
    ours = [head]
    pos = _after(head, begin)
    while pos < end:
        k = int(np.searchsorted(starts, np.uint64(pos)))
        if k < len(starts) and int(starts[k]) == pos:
            return np.concatenate([*ours, theirs[k:]])
        piece = sweep(image, pos, min(pos + SYNC_WINDOW, end), operands)
        hit = np.flatnonzero(np.isin(piece["addr"], starts))
        if len(hit):
            ours.append(piece[:hit[0]])
            pos = int(piece["addr"][hit[0]])
            continue
        ours.append(piece)
        pos = _after(piece, pos)
    return np.concatenate(ours)


def _after(rows: np.ndarray, start: int) -> int:
    """Where a sweep that decoded ``rows`` from ``start`` goes on."""
    return int(rows["addr"][-1]) + int(rows["size"][-1]) if len(rows) else start
