"""rocprofv3 thread traces (``rocprofv3 --att``), as the ROCprof Trace Decoder summarizes them: one
``stats_ui_output_agent_<agent>_dispatch_<n>.csv`` per traced dispatch, with one row per ISA instruction
(``CodeObj, Vaddr, Instruction, Hitcount, Latency, Stall, Idle, Source``) and, before a kernel's
instructions, a row whose instruction is ``; <kernel symbol>``. The code objects the run loaded are saved
beside them as ``<pid>_<gfx>_code_object_id_<n>.out`` (see the rocprofiler-sdk thread-trace documentation
and the decoder's output description in ROCm/rocprof-trace-decoder).

Each instruction becomes one instruction-trace record of its kernel: the hit count as ``GINS`` and the
latency, stall and idle cycles as ``GINS:LAT``, ``GINS:STALL_CYC`` and ``GINS:IDLE_CYC``, at its offset in the
code object (``Vaddr`` is the ELF virtual address in the code object). Code objects found beside the CSVs
are carried to ``gpubins/``, so ``hpcsa prof`` attributes the instructions to the kernel's source lines,
loops and inlined functions. A dispatch whose kernel row or code object is missing keeps its instructions
under a kernel named after the dispatch, at offsets from its first instruction.

A thread trace has no host records: the instructions sit under ``<untraced API call>`` (no launch context).
"""

from __future__ import annotations

import csv
import os
import re

import numpy as np

from hpcsa.core.errors import FormatError
from hpcsa.core.fileio import read_input
from hpcsa.ingest import model as M
from hpcsa.ingest.vendors import Probe, VendorReader, register
from hpcsa.structure.gpu.gpubin import entry_offsets

COLUMNS = ("CodeObj", "Vaddr", "Instruction", "Hitcount", "Latency", "Stall", "Idle")
_DISPATCH = re.compile(r"dispatch_(\d+)")
_CODE_OBJECT = re.compile(r"^(\d+)_[^_]+_code_object_id_(\d+)\.out$")
ELF_MAGIC = b"\x7fELF"
EM_AMDGPU = 224


def recognise(probe: Probe) -> bool:
    first = probe.text.splitlines()[0] if probe.text else ""
    try:
        header = next(csv.reader([first]))
    except (csv.Error, StopIteration):
        return False
    return tuple(header[:len(COLUMNS)]) == COLUMNS


def code_objects(folder: str) -> dict[int, tuple[int, str]]:
    """Code object id -> (pid, path) of the saved code objects in ``folder`` and its subfolders (two levels)."""
    found: dict[int, tuple[int, str]] = {}
    top = folder.rstrip(os.sep).count(os.sep)
    for base, dirs, files in os.walk(folder):
        dirs.sort()
        if base.count(os.sep) - top >= 2:
            dirs[:] = []
        for name in sorted(files):
            m = _CODE_OBJECT.match(name)
            if m:
                found.setdefault(int(m.group(2)), (int(m.group(1)), os.path.join(base, name)))
    return found


def _ints(path: str, values: list[str] | tuple[str, ...], what: str) -> np.ndarray:
    """A column of integers (empty fields 0), converted at once."""
    try:
        return np.array([v or "0" for v in values], dtype=object).astype(np.int64) if len(values) else \
            np.zeros(0, np.int64)
    except (ValueError, OverflowError):
        bad = next((v for v in values if not v.strip().lstrip("-").isdigit()), "")
        raise FormatError(path, f"column {what}: {bad[:40]!r} is not an integer") from None


def _rows(path: str) -> list[list[str]]:
    try:
        with open(path, newline="", encoding="utf-8", errors="replace") as fh:
            rows = [r for r in csv.reader(fh) if r]
    except csv.Error as exc:
        raise FormatError(path, f"malformed CSV ({exc})") from None
    if not rows or tuple(rows[0][:len(COLUMNS)]) != COLUMNS:
        raise FormatError(path, "not a thread-trace statistics CSV (header " + ",".join(COLUMNS) + " expected)")
    bad = next((i for i, r in enumerate(rows) if len(r) != len(rows[0])), None)
    if bad is not None:
        raise FormatError(path, f"line {bad + 1} has {len(rows[bad])} fields, the header has {len(rows[0])}; the "
                          "file is truncated or corrupt")
    return rows[1:]


def read(paths: list[str]) -> M.GpuTrace:
    tr = M.GpuTrace(source="rocprofv3 thread trace (ATT)", path=paths[0], clock="none (per-instruction cycles)",
                    api_domain="HIP")
    saved: dict[int, tuple[int, str]] = {}
    for folder in dict.fromkeys(os.path.dirname(os.path.abspath(p)) for p in paths):
        for cid, where in code_objects(folder).items():
            saved.setdefault(cid, where)
    pid = min((p for p, _ in saved.values()), default=0)
    entries: dict[int, dict[str, int]] = {}
    for cid, (_, location) in sorted(saved.items()):
        data = read_input(location)
        if data[:4] == ELF_MAGIC and len(data) > 20 and int.from_bytes(data[18:20], "little") == EM_AMDGPU:
            tr.code_objects[cid] = M.CodeObject(cid, "hsaco", data=data, uri=os.path.basename(location))
            entries[cid] = entry_offsets(data)
    parts = []
    symbol_of: dict[tuple[int, str, int], int] = {}
    for order, path in enumerate(sorted(paths, key=_dispatch_order)):
        m = _DISPATCH.search(os.path.basename(path))
        dispatch = int(m.group(1)) if m else order
        parts.append(_dispatch(tr, path, dispatch, pid, entries, symbol_of))
    tables = [p for p in parts if len(p)]
    if tables:
        tr.samples = np.concatenate(tables)
    tr.processes[pid] = M.ProcessInfo(pid)
    return tr


def _dispatch_order(path: str) -> tuple[int, str]:
    m = _DISPATCH.search(os.path.basename(path))
    return (int(m.group(1)) if m else -1, path)


def _dispatch(tr: M.GpuTrace, path: str, dispatch: int, pid: int, entries: dict[int, dict[str, int]],
              symbol_of: dict[tuple[int, str, int], int]) -> np.ndarray:
    rows = _rows(path)
    n = len(rows)
    cols = list(zip(*rows, strict=True)) if rows else [()] * len(COLUMNS)
    code = _ints(path, cols[0], "CodeObj")
    vaddr = _ints(path, cols[1], "Vaddr")
    head = np.array([str(t).startswith(";") for t in cols[2]], bool)  # "; <symbol>": a kernel's first row
    counts = np.zeros((n, 4), np.int64)
    body = np.flatnonzero(~head)
    for k, column in enumerate(COLUMNS[3:7]):
        counts[body, k] = _ints(path, [cols[3 + k][i] for i in body.tolist()], column)
    # Each instruction belongs to the kernel of the last kernel row before it.
    heads = np.flatnonzero(head)
    head_sym = np.array([_symbol(tr, symbol_of, int(code[i]), str(cols[2][i])[1:].strip(), int(vaddr[i]), entries)
                         for i in heads.tolist()], np.int64)
    last = np.searchsorted(heads, np.arange(n), side="right") - 1
    sym = np.where(last >= 0, head_sym[np.maximum(last, 0)] if len(heads) else -1, -1)
    keep = ~head
    if np.any(counts < 0):
        raise FormatError(path, "negative instruction counts")
    keep &= counts.any(axis=1)
    orphan = keep & (sym < 0)
    if np.any(orphan):  # instructions before any kernel row: the kernel holding them in the code object
        first = int(vaddr[orphan].min())
        name = _containing(entries.get(int(code[orphan][0]), {}), first)
        entry = entries.get(int(code[orphan][0]), {}).get(name, first) if name else first
        sym[orphan] = _symbol(tr, symbol_of, int(code[orphan][0]) if name else M.NONE,
                              name or f"<kernel of dispatch {dispatch}>", entry, entries)
    idx = np.flatnonzero(keep)
    if not len(idx):
        return M.empty(M.SAMPLE_DTYPE)
    entry_of_row = np.array([tr.symbols[s].entry or 0 for s in sym[idx].tolist()], np.int64)
    if np.any(vaddr[idx] < entry_of_row):
        raise FormatError(path, "an instruction lies before its kernel's entry")
    c = counts[idx]
    return M.table(M.SAMPLE_DTYPE, len(idx), process=pid, corr=0, symbol=sym[idx], pc=vaddr[idx] - entry_of_row,
                   stall=M.NO_STALL_INFO, samples=c[:, 0], stall_samples=0, latency=c[:, 1], stall_cycles=c[:, 2],
                   idle_cycles=c[:, 3])


def _containing(entries: dict[str, int], address: int) -> str:
    """The function of a code object whose entry is the last at or before ``address`` ("" none)."""
    best = ""
    for name, at in entries.items():
        if at <= address and (not best or at > entries[best]):
            best = name
    return best


def _symbol(tr: M.GpuTrace, made: dict[tuple[int, str, int], int], code: int, name: str, entry: int,
            entries: dict[int, dict[str, int]]) -> int:
    if code not in tr.code_objects:
        code = M.NONE
    key = (code, name, entry)
    if key not in made:
        made[key] = tr.symbol(M.KernelSymbol(name, code_object=code, entry=entry))
    return made[key]


register(VendorReader(name="rocprofv3-att", label="rocprofv3 thread trace (ATT) CSV", what="thread-trace statistics CSV",
                      rank=68, recognise=recognise, read=read, multi_file=True))
