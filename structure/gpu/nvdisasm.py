"""NVIDIA's SASS disassembler: where it is, how to run it, and its plain output read into columns.

hpcsa builds control flow itself from ``nvdisasm -c -poff`` (every
instruction with its section offset; branch and call targets printed as
labels and symbol names) rather than from nvdisasm's own ``-cfg``/``-bbcfg``
graphs: those fail on cubins made by CUDA <= 11 with the CUDA 13
disassembler that PyPI ships (it rejects their older control-flow encodings), while the
plain listing works on every architecture the tool accepts.

The disassembler comes from the ``nvidia-cuda-nvdisasm`` wheel, which puts
the binary inside site-packages (``nvidia/cu13/bin/nvdisasm``) without a
console script; ``HPCSA_NVDISASM`` or ``nvdisasm`` on ``PATH`` take
precedence so a CUDA toolkit's own disassembler can be used instead.
"""

from __future__ import annotations

import re
from dataclasses import field
from functools import lru_cache
from importlib import metadata

import numpy as np

from hpcsa.core.dataclass import dataclass
from hpcsa.structure.gpu.tools import find_tool, run_tool

# Instruction kinds.
K_OTHER, K_BRANCH, K_INDIRECT, K_CALL, K_RETURN, K_EXIT, K_TRAP = range(7)

_BRANCHES = frozenset({"BRA", "BRX", "BRXU", "JMP", "JMX", "JMXU"})
_INDIRECT = frozenset({"BRX", "BRXU", "JMX", "JMXU"})
_CALLS = frozenset({"CALL", "CAL", "JCAL"})
_RETURNS = frozenset({"RET"})

_SECTION = re.compile(r"^\s*\.section\s+([^,\s]+)", re.M)
# One instruction: /*offset*/ [@guard] OPCODE operands ;  (the trailing ';' may be glued to the opcode)
_INSN = re.compile(r"^\s*/\*([0-9a-fA-F]+)\*/\s*(@!?U?P(?:[0-7]|T)\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)"
                   r"\s*(.*?)\s*;?\s*(?:\(\*\"BRANCH_TARGETS\s+([^\"]*)\"\*\))?\s*;?\s*$")
_LABEL = re.compile(r"^([.$A-Za-z_][\w.$@]*):\s*$")
_TICK = re.compile(r"`\(([^)]*)\)")
_COND_OPERAND = re.compile(r"^(?:!?U?P[0-7]|~\S+)$")


class NvdisasmError(Exception):
    """nvdisasm is missing, refused the file, or printed something we cannot read (message says which)."""


@dataclass
class SectionCode:
    """The instructions of one ``.text.*`` section as columns (offsets are relative to the section).

    nvdisasm renames duplicated section and symbol names with a ``__<n>`` suffix; ``name`` and the
    labels are as printed, so callers match sections by their position in the listing (the ELF order).
    """

    name: str
    offset: np.ndarray        # u8
    kind: np.ndarray          # u1, K_*
    conditional: np.ndarray   # bool: a guard or predicate operand may let the instruction fall through
    target: np.ndarray        # i8: branch target offset in this section, -1 when none or unknown
    callee: dict[int, str] = field(default_factory=dict)          # row -> label a direct call names
    targets: dict[int, list[int]] = field(default_factory=dict)   # row -> offsets of an indirect branch
    labels: dict[str, int] = field(default_factory=dict)          # every label (functions too) -> offset

    def __len__(self) -> int:
        return len(self.offset)


@lru_cache(maxsize=1)
def find_nvdisasm() -> str | None:
    """Path of an nvdisasm executable, or None: ``$HPCSA_NVDISASM``, ``PATH``, then the PyPI wheel."""
    return find_tool("HPCSA_NVDISASM", "nvdisasm", _wheel_nvdisasm)


def _wheel_nvdisasm() -> list[str]:
    """The ``bin/nvdisasm`` of the nvidia-cuda-nvdisasm wheel, when it is installed."""
    try:
        files = metadata.files("nvidia-cuda-nvdisasm") or []
    except metadata.PackageNotFoundError:
        return []
    return [str(f.locate()) for f in files if f.name == "nvdisasm" and f.parent.name == "bin"]


def run_nvdisasm(cubin: str, exe: str | None = None, timeout: float = 600.0) -> str:
    """Plain disassembly of every code section of ``cubin`` (``nvdisasm -c -poff``)."""
    exe = exe or find_nvdisasm()
    if exe is None:
        raise NvdisasmError("nvdisasm not found (pip install nvidia-cuda-nvdisasm, or set HPCSA_NVDISASM)")
    proc = run_tool(exe, ["-c", "-poff", cubin], timeout, NvdisasmError)
    err = proc.stderr.decode("utf-8", "replace")
    fatal = [ln.split(":", 1)[-1].strip() for ln in err.splitlines() if "fatal" in ln or "error" in ln.lower()]
    if proc.returncode != 0 or fatal:
        why = fatal[0] if fatal else (err.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        raise NvdisasmError(f"nvdisasm failed: {why}")
    return proc.stdout.decode("utf-8", "replace")


def parse_listing(text: str) -> list[SectionCode]:
    """Code sections of an ``nvdisasm -c`` listing, in the order printed (the ELF section order)."""
    out: list[SectionCode] = []
    starts = [(m.start(), m.group(1)) for m in _SECTION.finditer(text)]
    for k, (pos, name) in enumerate(starts):
        end = starts[k + 1][0] if k + 1 < len(starts) else len(text)
        if name.startswith(".text"):
            out.append(_parse_section(name, text[pos:end]))
    return out


def _parse_section(name: str, body: str) -> SectionCode:
    offsets: list[int] = []
    kinds: list[int] = []
    cond: list[bool] = []
    label_refs: list[str | None] = []
    callee: dict[int, str] = {}
    multi: dict[int, list[str]] = {}
    labels: dict[str, int] = {}
    pending: list[str] = []
    for line in body.splitlines():
        m = _INSN.match(line)
        if m is None:
            lab = _LABEL.match(line.strip())
            if lab is not None:
                pending.append(lab.group(1))
            continue
        off = int(m.group(1), 16)
        row = len(offsets)
        for label in pending:
            labels[label] = off
        pending.clear()
        guard = (m.group(2) or "").strip()
        opcode = m.group(3)
        operands = m.group(4) or ""
        base = opcode.split(".", 1)[0]
        ticks = _TICK.findall(operands)
        before = operands.split("`", 1)[0].replace(",", " ").split()
        kind = K_OTHER
        ref: str | None = None
        if base in _BRANCHES:
            kind = K_INDIRECT if base in _INDIRECT or not ticks else K_BRANCH
            if kind == K_BRANCH:
                ref = ticks[-1]
            elif m.group(5):
                multi[row] = [t.strip() for t in m.group(5).split(",") if t.strip()]
        elif base in _CALLS:
            kind = K_CALL
            # `CALL.REL.NOINC R6 `(kernel)`: a register target; the name is the caller's own section base
            if ticks and not before:
                callee[row] = ticks[-1]
        elif base in _RETURNS:
            kind = K_RETURN
        elif base == "EXIT":
            kind = K_EXIT
        elif base == "BPT" and ".TRAP" in opcode:
            kind = K_TRAP
        is_cond = bool(guard) and guard not in ("@PT",)
        if kind in (K_BRANCH, K_INDIRECT) and any(_COND_OPERAND.match(t) for t in before):
            is_cond = True
        offsets.append(off)
        kinds.append(kind)
        cond.append(is_cond)
        label_refs.append(ref)
    target = np.array([labels.get(r, -1) if r is not None else -1 for r in label_refs], np.int64)
    targets = {row: [labels[t] for t in names if t in labels] for row, names in multi.items()}
    return SectionCode(name, np.array(offsets, np.uint64), np.array(kinds, np.uint8), np.array(cond, np.bool_),
                       target, callee, targets, labels)
