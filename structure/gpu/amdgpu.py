"""Structure of AMD GPU code objects (EM_AMDGPU): functions, DWARF lines, loops and call sites.

Code objects are ordinary linked ELF files (ET_DYN, real virtual addresses),
so functions come from the symbol table and lines and inlining from the
DWARF readers of the CPU path (:func:`hpcsa.structure.debuginfo.source_info.read_source_info`;
AMD's DWARF 5 needs nothing special). Instructions come from ``llvm-objdump
-d`` (no capstone backend for AMDGPU; the tool reads the GPU from
``e_flags``). A call is ``s_swappc_b64`` through a register pair loaded by
``s_getpc_b64`` + ``s_add_u32``/``s_addc_u32`` with a literal (the sequence
LLVM's AMDGPU backend emits for a call; LLVM's "User Guide for AMDGPU Backend"): the target is the address after ``s_getpc_b64``
plus the 64-bit literal. ``s_setpc_b64`` returns (or tail-calls, when its pair
holds a known function entry); ``s_endpgm`` ends a kernel; ``s_branch`` /
``s_cbranch_*`` carry their target as ``<function+offset>``.

Without ``llvm-objdump`` (it is not a PyPI package: ``apt-get install llvm``
or ROCm's ``/opt/rocm/llvm/bin``) the result is lines only, with a warning.
"""

from __future__ import annotations

import glob
import os
import re
from dataclasses import field

import numpy as np

from hpcsa.core.dataclass import dataclass
from hpcsa.core.errors import FormatError
from hpcsa.formats.hpcstruct.model import Module
from hpcsa.structure.debuginfo.source_info import read_source_info
from hpcsa.structure.elf import EM_AMDGPU, ElfImage, open_elf
from hpcsa.structure.gpu.build import GpuBinary, GpuProc, build_structure, demangle
from hpcsa.structure.gpu.cfg import K_TAILCALL, Code, build_graph
from hpcsa.structure.gpu.nvdisasm import K_BRANCH, K_CALL, K_EXIT, K_OTHER, K_RETURN, K_TRAP
from hpcsa.structure.gpu.tools import disassembly, find_tool, run_tool

_FUNC = re.compile(r"^([0-9a-fA-F]+) <(.+)>:\s*$")
_INSN = re.compile(r"^\s+([a-z_][a-z0-9_]*)\s*(.*?)\s*//\s*([0-9A-Fa-f]+):((?:\s+[0-9A-Fa-f]{8})+)"
                   r"(?:\s*<(.+)\+0x([0-9a-fA-F]+)>)?\s*$")
_PAIR = re.compile(r"s\[(\d+):(\d+)\]")
_TARGET = re.compile(rb"amdgcn-amd-amdhsa--([A-Za-z0-9_]+)")


class ObjdumpError(Exception):
    """llvm-objdump is missing or failed (the message says which)."""


@dataclass
class AmdCode:
    """One function's instructions from llvm-objdump, as parallel lists."""

    address: list[int] = field(default_factory=list)
    size: list[int] = field(default_factory=list)
    mnemonic: list[str] = field(default_factory=list)
    operands: list[str] = field(default_factory=list)
    target: list[int] = field(default_factory=list)   # <sym+off> branch target, -1 when none


def find_llvm_objdump() -> str | None:
    """``$HPCSA_LLVM_OBJDUMP``, ``llvm-objdump`` on PATH, a versioned ``llvm-objdump-N``, or ROCm's."""
    return find_tool("HPCSA_LLVM_OBJDUMP", "llvm-objdump", _installed_objdumps)


def _installed_objdumps() -> list[str]:
    """Debian's versioned ``llvm-objdump-N`` (newest first), then ROCm's."""
    versioned = sorted(glob.glob("/usr/bin/llvm-objdump-[0-9]*"), key=lambda p: int(p.rsplit("-", 1)[1])
                       if p.rsplit("-", 1)[1].isdigit() else 0)
    return [*reversed(versioned), "/opt/rocm/llvm/bin/llvm-objdump"]


def run_objdump(path: str, exe: str | None = None, timeout: float = 600.0) -> str:
    exe = exe or find_llvm_objdump()
    if exe is None:
        raise ObjdumpError("llvm-objdump not found (install LLVM, or set HPCSA_LLVM_OBJDUMP)")
    proc = run_tool(exe, ["-d", path], timeout, ObjdumpError)
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise ObjdumpError(f"llvm-objdump failed: {err[-1] if err else f'exit status {proc.returncode}'}")
    return proc.stdout.decode("utf-8", "replace")


def parse_objdump(text: str) -> dict[int, AmdCode]:
    """Instructions by function start address (the ``<name>:`` headers of the listing)."""
    out: dict[int, AmdCode] = {}
    starts: dict[str, int] = {}
    cur: AmdCode | None = None
    for line in text.splitlines():
        m = _INSN.match(line)
        if m is not None and cur is not None:
            cur.address.append(int(m.group(3), 16))
            cur.size.append(4 * len(m.group(4).split()))
            cur.mnemonic.append(m.group(1))
            cur.operands.append(m.group(2))
            sym, off = m.group(5), m.group(6)
            cur.target.append(starts[sym] + int(off, 16) if sym in starts else -1)
            continue
        f = _FUNC.match(line)
        if f is not None:
            start = int(f.group(1), 16)
            starts[f.group(2)] = start
            cur = out.setdefault(start, AmdCode())
    return out


def _literal(text: str) -> int | None:
    text = text.strip()
    try:
        return int(text, 0) & 0xFFFFFFFF
    except ValueError:
        return None


def _scalar_regs(operand: str) -> set[int]:
    """Scalar registers an operand names (``s6``, ``s[6:7]``)."""
    operand = operand.strip()
    m = _PAIR.fullmatch(operand)
    if m is not None:
        return set(range(int(m.group(1)), int(m.group(2)) + 1))
    return {int(operand[1:])} if operand[:1] == "s" and operand[1:].isdigit() else set()


def classify(code: AmdCode, entries: set[int]) -> tuple[Code, dict[int, int | None]]:
    """Kinds, branch targets and call targets of one function. Register pairs are followed from
    ``s_getpc_b64`` through ``s_add_u32``/``s_addc_u32`` with literals; any other write to them (and any
    call) forgets them."""
    n = len(code.address)
    kind = np.full(n, K_OTHER, np.uint8)
    cond = np.zeros(n, np.bool_)
    target = np.array(code.target, np.int64) if n else np.zeros(0, np.int64)
    callee: dict[int, int | None] = {}
    pairs: dict[int, int] = {}   # first register of a pair -> its 64-bit value, while known
    mask = 2**64 - 1
    for i in range(n):
        mn = code.mnemonic[i]
        ops = [o.strip() for o in code.operands[i].split(",")] if code.operands[i] else []
        dest = _scalar_regs(ops[0]) if ops else set()
        if mn == "s_getpc_b64" and len(dest) == 2:
            pairs[min(dest)] = code.address[i] + code.size[i]
            continue
        if mn in ("s_add_u32", "s_addc_u32") and len(ops) == 3 and ops[0] == ops[1] and len(dest) == 1:
            reg = next(iter(dest))
            lo = reg if mn == "s_add_u32" else reg - 1
            lit = _literal(ops[2])
            if lo in pairs and lit is not None:
                pairs[lo] = (pairs[lo] + (lit if mn == "s_add_u32" else lit << 32)) & mask
                continue
        if mn == "s_branch":
            kind[i] = K_BRANCH
        elif mn.startswith("s_cbranch_") and mn not in ("s_cbranch_join", "s_cbranch_g_fork", "s_cbranch_i_fork"):
            kind[i] = K_BRANCH
            cond[i] = True
        elif mn == "s_swappc_b64":
            kind[i] = K_CALL
            src = _scalar_regs(ops[1]) if len(ops) > 1 else set()
            value = pairs.get(min(src)) if len(src) == 2 else None
            callee[i] = value if value in entries else None
            pairs.clear()   # the callee may overwrite any scalar register
            continue
        elif mn == "s_call_b64":   # gfx10+: direct call, target printed as <function+offset>
            kind[i] = K_CALL
            callee[i] = int(target[i]) if target[i] >= 0 and int(target[i]) in entries else None
            pairs.clear()
            continue
        elif mn == "s_setpc_b64":
            src = _scalar_regs(ops[0]) if ops else set()
            value = pairs.get(min(src)) if len(src) == 2 else None
            if value is not None and value in entries:
                kind[i] = K_TAILCALL
                callee[i] = value
            else:
                kind[i] = K_RETURN
            continue
        elif mn.startswith("s_endpgm"):
            kind[i] = K_EXIT
        elif mn == "s_trap":
            kind[i] = K_TRAP
        for reg in dest:
            for lo in (reg, reg - 1):
                pairs.pop(lo, None)
    target = np.where(kind == K_BRANCH, target, -1)
    return Code(np.array(code.address, np.uint64), np.array(code.size, np.int64), kind, cond, target), callee


def gpu_name(image: ElfImage) -> str:
    """The GPU a code object is for (``gfx90a``), from its HSA metadata note, else from e_flags."""
    m = _TARGET.search(bytes(image.data[:min(len(image.data), 1 << 20)]))
    if m is not None:
        return m.group(1).decode("ascii", "replace")
    return f"mach {int(image.elf.header['e_flags']) & 0xFF:#x}"


def amd_binary(image: ElfImage, lm_name: str | None = None, disassemble: bool = True) -> GpuBinary:
    if image.machine != EM_AMDGPU:
        raise FormatError(image.path, "not an AMD GPU code object (ELF machine is not EM_AMDGPU)")
    source = read_source_info(image, demangle)
    notes = [n for n in source.notes if n != "no DWARF line or debug information"]
    procs = [GpuProc(list(f.names), f.index, f.addr, f.end) for f in image.functions]
    listing = disassembly(lambda: parse_objdump(run_objdump(image.path)), ObjdumpError,
                          notes) if disassemble and procs else None
    has_cfg = listing is not None
    if listing is not None:
        entries = {p.start for p in procs}
        for p in procs:
            amd = listing.get(p.start, AmdCode())
            keep = [i for i, a in enumerate(amd.address) if p.start <= a < p.end]
            sub = AmdCode(*([getattr(amd, f)[i] for i in keep] for f in ("address", "size", "mnemonic",
                                                                             "operands", "target")))
            code, p.callee = classify(sub, entries)
            p.graph = build_graph(code)
    return GpuBinary(lm_name or image.path, os.path.basename(image.path), procs, source.lines, source.inlines,
                     f"AMD {gpu_name(image)}", 4, has_cfg, notes, proc_line_rule="entry")


def build_amd_module(path: str, lm_name: str | None = None, disassemble: bool = True) -> tuple[Module, list[str]]:
    """The ``LM`` of an AMD GPU code object, and notes on what could not be recovered."""
    binary = amd_binary(open_elf(path), lm_name, disassemble)
    return build_structure(binary), binary.notes


def build_module(image: ElfImage, lm_name: str, jobs: int = 1) -> tuple[Module, list[str]]:
    """``hpcsa struct``'s hook (:mod:`hpcsa.structure.binary`): the structure and the notes on what it
    lacks (``warning:`` first when degraded). ``jobs`` is unused: one GPU binary takes a fraction of a second."""
    binary = amd_binary(image, lm_name)
    return build_structure(binary), list(binary.notes)
