"""unitrace (Intel PTI) text outputs: the device timeline (``-t``), device timing summary (``-d``)
and API timing summary (``-h``), for Level Zero and OpenCL.

The timeline gives, per device operation, the host thread that appended it and
its append/submit/start/end times (host CLOCK_MONOTONIC_RAW ns). Level Zero has
no correlation id, so each operation's launch point is its append call on that
thread: ``zeCommandListAppendLaunchKernel`` for kernels, the append call named
in the record otherwise. Kernel names carry ``[SIMD<w> {group count} {group
size}]``; copies ``(M2D)[bytes]`` (M = host memory, H = host USM, D = device
USM, S = shared USM). Barriers and event operations on the device are
synchronizations. Without a timeline, the device summary gives per-kernel
counts and times (no trace); the API summary gives host synchronization time.
"""

from __future__ import annotations

import os
import re
from typing import Any

import numpy as np

from hpcsa.core.errors import FormatError
from hpcsa.ingest import model as M
from hpcsa.ingest.vendors import Probe, VendorReader, register

LINE = re.compile(r'^Thread (\d+) Device (\S+) : (?:"(.*)"|(.*?)) \[ns\] (\d+) \(append\) (\d+) \(submit\) '
                  r'(\d+) \(start\) (\d+) \(end\)\s*$')
DECOR = re.compile(r"^(.*?)\[SIMD(\d+) \{(\d+); (\d+); (\d+)\} \{(\d+); (\d+); (\d+)\}\]$")
COPY = re.compile(r"^(\w*MemoryCopy\w*)\((\w)2(\w)\)(?:\[(\d+)\])?$")
FILL = re.compile(r"^(\w*MemoryFill\w*)(?:\[(\d+)\])?$")
SUMMARY_ROW = re.compile(r'^\s*"?(.*?)"?,\s*(\d+),\s*(\d+),')
_SIDE = {"M": "H", "H": "H", "D": "D", "S": "S"}
_COPY_DIR = {("H", "D"): M.CP_H2D, ("D", "H"): M.CP_D2H, ("D", "D"): M.CP_D2D, ("H", "H"): M.CP_H2H}
_CL_COPY = {"clEnqueueWriteBuffer": M.CP_H2D, "clEnqueueReadBuffer": M.CP_D2H, "clEnqueueCopyBuffer": M.CP_D2D,
            "clEnqueueWriteBufferRect": M.CP_H2D, "clEnqueueReadBufferRect": M.CP_D2H,
            "clEnqueueSVMMemcpy": M.CP_UNK}
_SYNC_WORDS = ("Barrier", "EventReset", "SignalEvent", "WaitOnEvents", "clEnqueueMarker", "clEnqueueBarrier")
HOST_SYNC = ("zeCommandQueueSynchronize", "zeEventHostSynchronize", "zeFenceHostSynchronize", "clFinish",
             "clWaitForEvents", "zeCommandListHostSynchronize")


def recognise(probe: Probe) -> bool:
    text = probe.text
    lines = [ln for ln in text.splitlines()[:5] if ln.strip()]
    if lines and LINE.match(lines[0]):
        return True
    return "=== Device Timing Summary ===" in text or "=== API Timing Summary ===" in text


def _pid_of(path: str) -> int:
    m = re.search(r"\.(\d+)(?:\.txt)?$", os.path.basename(path))
    return int(m.group(1)) if m else 0


def classify(name: str) -> tuple[int, int, int, tuple[int, int]]:
    """(kind, sub, bytes, (blocks, threads per block)) of a timeline operation name."""
    if (m := COPY.match(name)):
        a, b = _SIDE.get(m.group(2), "?"), _SIDE.get(m.group(3), "?")
        return M.MEMCPY, _COPY_DIR.get((a, b), M.CP_UNK), int(m.group(4) or 0), (0, 0)
    if (m := FILL.match(name)):
        return M.MEMSET, M.MK_UNK, int(m.group(2) or 0), (0, 0)
    if name in _CL_COPY:
        return M.MEMCPY, _CL_COPY[name], 0, (0, 0)
    if name.startswith("clEnqueueFillBuffer"):
        return M.MEMSET, M.MK_UNK, 0, (0, 0)
    if any(w in name for w in _SYNC_WORDS):
        return M.SYNC, M.SY_UNK, 0, (0, 0)
    if (m := DECOR.match(name)):
        g = [int(m.group(i)) for i in range(3, 9)]
        return M.KERNEL, 0, 0, (g[0] * g[1] * g[2], g[3] * g[4] * g[5])
    return M.KERNEL, 0, 0, (0, 0)


def kernel_name(name: str) -> str:
    m = DECOR.match(name)
    return m.group(1) if m else name


def launch_api(name: str, kind: int, opencl: bool) -> str:
    if kind == M.KERNEL:
        return "clEnqueueNDRangeKernel" if opencl else "zeCommandListAppendLaunchKernel"
    return re.split(r"[(\[]", name, maxsplit=1)[0]


def read(paths: list[str]) -> M.GpuTrace:
    tr = M.GpuTrace(source="unitrace text", path=paths[0], clock="host CLOCK_MONOTONIC_RAW ns",
                    api_domain="Level Zero")
    timelines, summaries, apis = [], [], []
    for p in paths:
        with open(p, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        if "=== Device Timing Summary ===" in text:
            summaries.append((p, text))
        elif "=== API Timing Summary ===" in text:
            apis.append((p, text))
        else:
            timelines.append((p, text))
    ops: list[tuple[Any, ...]] = []  # timeline rows, and summary rows with a count (13 columns)
    api_rows = []
    corr = 1
    for p, text in timelines:
        rows = []
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            m = LINE.match(line)
            if not m:
                raise FormatError(p, f"line {n} is not a unitrace device-timeline record")
            rows.append(m.groups())
        if not rows:
            continue
        opencl = any((r[2] or r[3] or "").startswith("cl") for r in rows)
        if opencl:
            tr.api_domain = "OpenCL"
        devices: dict[str, int] = {}
        pid = _pid_of(p)
        for tid, dev, qname, name, append, _submit, start, end in rows:
            name = qname if qname is not None else name
            kind, sub, nbytes, (blocks, threads) = classify(name)
            d = devices.setdefault(dev, len(devices))
            shown = kernel_name(name) if kind == M.KERNEL else name
            ops.append((kind, pid, int(tid), d, corr, int(start), int(end), shown, nbytes, sub, blocks, threads))
            api_rows.append((pid, int(tid), launch_api(name, kind, opencl), int(append), int(append), corr))
            corr += 1
    if not timelines:
        for p, text in summaries:
            for name, calls, total in _summary_rows(p, text):
                kind, sub, nbytes, (blocks, threads) = classify(name)
                shown = kernel_name(name) if kind == M.KERNEL else name
                ops.append((kind, _pid_of(p), -1, 0, 0, 0, total, shown, nbytes * calls, sub, blocks, threads,
                            calls))
    for p, text in apis:
        for name, calls, total in _summary_rows(p, text):
            if name in HOST_SYNC:
                ops.append((M.SYNC, _pid_of(p), -1, 0, 0, 0, total, name, 0, M.SY_UNK, 0, 0, calls))
    if api_rows:
        a = list(zip(*api_rows, strict=True))
        tr.apis = M.table(M.API_DTYPE, len(api_rows), process=a[0], thread=a[1], name=tr.intern_many(list(a[2])),
                          start=a[3], end=a[4], corr=a[5])
    if ops:
        rows12 = [o if len(o) == 13 else (*o, 1) for o in ops]
        c = list(zip(*rows12, strict=True))
        n = len(rows12)
        tr.ops = M.table(M.OP_DTYPE, n, kind=c[0], process=c[1], thread=c[2], device=c[3], context=c[3],
                         stream=c[3], corr=c[4], start=c[5], end=c[6], name=tr.intern_many(list(c[7])), bytes=c[8],
                         sub=c[9], blocks=c[10], block_threads=c[11], count=c[12])
        tr.ops["stream"][np.array(c[2]) < 0] = -1
    _kernel_properties(tr, summaries)
    for pid in set(tr.ops["process"].tolist()):
        tr.processes[pid] = M.ProcessInfo(pid)
    return tr


def _summary_rows(path: str, text: str) -> list[tuple[str, int, int]]:
    """(name, calls, total ns) rows of the per-backend tables of a -d or -h summary."""
    out = []
    in_table = False
    for line in text.splitlines():
        if re.match(r"^\s*(Kernel|Function),\s*Calls,", line):
            in_table = True
            continue
        if in_table:
            m = SUMMARY_ROW.match(line)
            if not m:
                in_table = False
                continue
            out.append((m.group(1).strip(), int(m.group(2)), int(m.group(3))))
    return out


def _kernel_properties(tr: M.GpuTrace, summaries: list[tuple[str, str]]) -> None:
    """Kernel attributes from the -d summary's "Kernel Properties" table (SLM, private memory, registers)."""
    for _p, text in summaries:
        head = None
        for line in text.splitlines():
            cells = [c.strip().strip('"') for c in line.split(",")]
            if cells and cells[0] == "Kernel" and "SLM Per Work Group" in cells:
                head = cells
                continue
            if head and len(cells) == len(head):
                props = dict(zip(head, cells, strict=True))
                nid = tr._index.get(props["Kernel"])
                if nid is None:
                    continue
                sel = (tr.ops["kind"] == M.KERNEL) & (tr.ops["name"] == nid)
                try:
                    tr.ops["smem_dynamic"][sel] = int(props.get("SLM Per Work Group", 0))
                    priv = int(props.get("Private Memory Per Thread", 0))
                    tr.ops["local_total"][sel] = priv * tr.ops["blocks"][sel] * tr.ops["block_threads"][sel]
                    tr.ops["regs"][sel] = int(props.get("Register File Size Per Thread", 0))
                except ValueError:
                    continue
            elif head and not line.strip():
                head = None


register(VendorReader(name="unitrace", label="unitrace text", what="unitrace output", rank=80,
                      recognise=recognise, read=read, multi_file=True))
