"""rocprofv3 CSV outputs (``--output-format csv``): kernel, API, memory-copy, allocation and PC-sampling
traces of one run, recognised by their header rows.

``Correlation_Id`` is rocprofiler-sdk's internal id (the same in every file of a
run). Grid sizes are work-items; ``Agent N`` is an absolute agent index. Times
are CLOCK_BOOTTIME ns. The memory-copy CSV has no byte count, so copies count
and time but carry 0 bytes. PC-sampling CSVs name the instruction, not its
address: samples are placed at one pseudo-offset per distinct
(instruction, source comment) of a kernel, in order of first appearance
(4 bytes apart), with the instruction text in the summary of the written
names. Stochastic samples keep their not-issued reason (see :mod:`hpcsa.ingest.stalls`);
host-trap samples have none.
"""

from __future__ import annotations

import csv
import os
import re

import numpy as np

from hpcsa.core.errors import FormatError
from hpcsa.ingest import model as M
from hpcsa.ingest.stalls import stall_class
from hpcsa.ingest.vendors import NoRecords, Probe, VendorReader, register
from hpcsa.ingest.vendors.rocpd import marker_ranges, waits_as_sync_ops

#: rocprofiler-sdk's enum prefix of a stochastic sample's not-issued reason (an empty name: no reason recorded).
STALL_REASON_PREFIX = "ROCPROFILER_PC_SAMPLING_INSTRUCTION_NOT_ISSUED_REASON_"

KERNEL_COLS = {"Kernel_Name", "Correlation_Id", "Start_Timestamp", "End_Timestamp", "Grid_Size_X"}
API_COLS = {"Domain", "Function", "Correlation_Id", "Start_Timestamp", "End_Timestamp", "Thread_Id"}
COPY_COLS = {"Direction", "Correlation_Id", "Start_Timestamp", "End_Timestamp"}
ALLOC_COLS = {"Allocation_Size", "Operation", "Correlation_Id", "Start_Timestamp"}
PC_COLS = {"Sample_Timestamp", "Dispatch_Id", "Instruction", "Correlation_Id"}
OTHER_COLS = ({"Counter_Name", "Counter_Value"}, {"Name", "Calls", "TotalDurationNs"}, {"Agent_Type", "Node_Id"},
              {"Alloc_Flags", "Operation"})
_DIRS = {"HOST_TO_DEVICE": M.CP_H2D, "DEVICE_TO_HOST": M.CP_D2H, "DEVICE_TO_DEVICE": M.CP_D2D,
         "HOST_TO_HOST": M.CP_H2H, "PEER_TO_PEER": M.CP_P2P}


def _header(text: str) -> set[str]:
    first = text.splitlines()[0] if text else ""
    try:
        return set(next(csv.reader([first])))
    except (csv.Error, StopIteration):
        return set()


def recognise(probe: Probe) -> bool:
    cols = _header(probe.text)
    return any(req <= cols for req in (KERNEL_COLS, API_COLS, COPY_COLS, ALLOC_COLS, PC_COLS, *OTHER_COLS))


def _agent(values: list[str]) -> np.ndarray:
    out = []
    for v in values:
        m = re.search(r"-?\d+", v or "")
        out.append(int(m.group()) if m else -1)
    return np.array(out, np.int64)


def _ints(path: str, values: list[str], what: str) -> np.ndarray:
    try:
        return np.array([int(v) if v not in ("", None) else 0 for v in values], np.int64)
    except ValueError:
        raise FormatError(path, f"column {what} holds a value that is not an integer") from None


def _load(path: str) -> dict[str, list[str]]:
    try:
        with open(path, newline="", encoding="utf-8", errors="replace") as fh:
            rows = list(csv.reader(fh))
    except csv.Error as exc:
        raise FormatError(path, f"malformed CSV ({exc})") from None
    if not rows:
        raise FormatError(path, "empty CSV file")
    head = rows[0]
    body = [r for r in rows[1:] if r]
    bad = next((i for i, r in enumerate(body) if len(r) != len(head)), None)
    if bad is not None:
        raise FormatError(path, f"line {bad + 2} has {len(body[bad])} fields, the header has {len(head)}; "
                          "the file is truncated or corrupt")
    return {name: [r[i] for r in body] for i, name in enumerate(head)}


def read(paths: list[str]) -> M.GpuTrace:
    """One trace from the CSV files of one run; :class:`~hpcsa.ingest.vendors.NoRecords` when they hold only summaries (stats,
    agents...)."""
    tr = M.GpuTrace(source="rocprofv3 csv", path=paths[0], clock="CLOCK_BOOTTIME ns", api_domain="HIP",
                    range_domain="roctx")
    tables = [(p, _load(p)) for p in paths]
    api_parts, op_parts, pcs, marker_parts = [], [], [], []
    for p, t in tables:
        cols = set(t)
        if KERNEL_COLS <= cols:
            op_parts.append(("kernel", p, t))
        elif PC_COLS <= cols:
            pcs.append((p, t))
        elif API_COLS <= cols:
            n = len(t["Function"])
            pid = _ints(p, t["Process_Id"], "Process_Id") if "Process_Id" in t else np.full(n, _pid_of(p))
            marker_parts.append(np.array([d.startswith("MARKER_") for d in t["Domain"]], bool))
            api_parts.append(M.table(M.API_DTYPE, n, process=pid, thread=_ints(p, t["Thread_Id"], "Thread_Id"),
                                     name=tr.intern_many(t["Function"]) if n else 0,
                                     start=_ints(p, t["Start_Timestamp"], "Start_Timestamp"),
                                     end=_ints(p, t["End_Timestamp"], "End_Timestamp"),
                                     corr=_ints(p, t["Correlation_Id"], "Correlation_Id")))
        elif COPY_COLS <= cols:
            op_parts.append(("copy", p, t))
        elif ALLOC_COLS <= cols:
            op_parts.append(("alloc", p, t))
    if not (api_parts or op_parts or pcs):
        raise NoRecords(paths[0], "rocprofv3 summary CSVs only (stats, agent info...): no per-operation records")
    if api_parts:
        tr.apis = np.concatenate(api_parts)
        markers = np.concatenate(marker_parts)
        tr.ranges = marker_ranges(tr, tr.apis[markers])
        tr.apis = tr.apis[~markers]
    pids = np.unique(tr.apis["process"]) if len(tr.apis) else np.zeros(0, np.int64)
    default_pid = int(pids[0]) if len(pids) == 1 else None
    ops = [_ops(kind, p, t, tr, default_pid) for kind, p, t in op_parts]
    waits = waits_as_sync_ops(tr)
    if waits is not None:
        ops.append(waits)
    ops = [o for o in ops if len(o)]
    if ops:
        tr.ops = np.concatenate(ops)
    if pcs:
        _pc_samples(tr, pcs, default_pid)
    for pid in set(tr.ops["process"].tolist()) | set(tr.samples["process"].tolist()):
        tr.processes.setdefault(pid, M.ProcessInfo(pid))
    return tr


def _pid_of(path: str) -> int:
    m = re.match(r"(\d+)_", os.path.basename(path))
    return int(m.group(1)) if m else 0


def _ops(kind: str, p: str, t: dict, tr: M.GpuTrace, default_pid: int | None) -> np.ndarray:
    n = len(t["Correlation_Id"])
    pid = default_pid if default_pid is not None else _pid_of(p)
    corr = _ints(p, t["Correlation_Id"], "Correlation_Id")
    start, end = _ints(p, t["Start_Timestamp"], "Start_Timestamp"), _ints(p, t["End_Timestamp"], "End_Timestamp")
    thread = _ints(p, t["Thread_Id"], "Thread_Id") if "Thread_Id" in t else np.full(n, -1)
    if kind == "kernel":
        g = [_ints(p, t[f"Grid_Size_{a}"], "Grid_Size") for a in "XYZ"]
        w = [np.maximum(_ints(p, t[f"Workgroup_Size_{a}"], "Workgroup_Size"), 1) for a in "XYZ"]
        blocks = np.prod([-(-np.maximum(gi, 0) // wi) for gi, wi in zip(g, w, strict=True)], axis=0)
        stream = _ints(p, t["Stream_Id"], "Stream_Id") if "Stream_Id" in t else _ints(p, t["Queue_Id"], "Queue_Id")
        lds = _ints(p, t.get("LDS_Block_Size") or t.get("Group_Segment_Size") or ["0"] * n, "LDS_Block_Size")
        scratch = _ints(p, t.get("Scratch_Size") or t.get("Private_Segment_Size") or ["0"] * n, "Scratch_Size")
        dev = _agent(t["Agent_Id"]) if "Agent_Id" in t else np.zeros(n, np.int64)
        syms = [tr.symbol(M.KernelSymbol(name)) for name in t["Kernel_Name"]]
        return M.table(M.OP_DTYPE, n, kind=M.KERNEL, process=pid, thread=thread, device=dev, context=dev,
                       stream=stream, corr=corr, start=start, end=end, name=tr.intern_many(t["Kernel_Name"]),
                       blocks=blocks, block_threads=w[0] * w[1] * w[2], smem_dynamic=lds,
                       regs=_ints(p, t.get("VGPR_Count") or t.get("Arch_VGPR_Count") or ["0"] * n, "VGPR_Count"),
                       local_total=scratch * g[0] * g[1] * g[2], code=syms)
    if kind == "copy":
        sub = [next((v for k, v in _DIRS.items() if k in d), M.CP_UNK) for d in t["Direction"]]
        src, dst = _agent(t.get("Source_Agent_Id", [""] * n)), _agent(t.get("Destination_Agent_Id", [""] * n))
        dev = np.where(np.array(sub) == M.CP_D2H, src, dst)
        stream = _ints(p, t["Stream_Id"], "Stream_Id") if "Stream_Id" in t else np.zeros(n, np.int64)
        return M.table(M.OP_DTYPE, n, kind=M.MEMCPY, process=pid, thread=thread, device=dev, context=dev,
                       stream=stream, corr=corr, start=start, end=end, sub=sub)
    is_free = np.array(["FREE" in op for op in t["Operation"]])
    agent = _agent(t.get("Agent_Id", [""] * n))
    return M.table(M.OP_DTYPE, n, kind=np.where(is_free, M.FREE, M.ALLOC), process=pid, thread=thread,
                   device=agent, corr=corr, start=start, end=end,
                   bytes=_ints(p, t["Allocation_Size"], "Allocation_Size"), sub=M.MK_UNK)


def _pc_samples(tr: M.GpuTrace, pcs: list, default_pid: int | None) -> None:
    kern = tr.ops[tr.ops["kind"] == M.KERNEL] if len(tr.ops) else tr.ops
    sym_by_corr = {int(c): int(s) for c, s in zip(kern["corr"], kern["code"], strict=True)}
    parts = []
    for p, t in pcs:
        n = len(t["Correlation_Id"])
        pid = default_pid if default_pid is not None else _pid_of(p)
        corr = _ints(p, t["Correlation_Id"], "Correlation_Id")
        disp = _ints(p, t["Dispatch_Id"], "Dispatch_Id")
        # The sampled kernel: the launch's kernel symbol, else one pseudo-symbol per dispatch.
        pairs, pair_inv = np.unique(np.stack([corr, disp], axis=1), axis=0, return_inverse=True)
        made: dict[int, int] = {}
        pair_sym = []
        for c, d in pairs.tolist():
            s = sym_by_corr.get(c, -1)
            if s < 0:
                pseudo = made.get(d)
                if pseudo is None:
                    pseudo = made[d] = tr.symbol(M.KernelSymbol(f"<kernel of dispatch {d}>"))
                s = pseudo
            pair_sym.append(s)
        sym = np.array(pair_sym, np.int64)[pair_inv.reshape(-1)]
        # One pseudo-offset per distinct instruction (text and source comment) of a kernel, 4 bytes apart in
        # order of first appearance.
        comments = t.get("Instruction_Comment", [""] * n)
        inst = np.array([f"{a}\t{b}" for a, b in zip(t["Instruction"], comments, strict=True)], dtype=object)
        _, inst_id = np.unique(inst, return_inverse=True)
        key = np.stack([sym, inst_id.reshape(-1)], axis=1)
        uniq, first, inv = np.unique(key, axis=0, return_index=True, return_inverse=True)
        order = np.lexsort((first, uniq[:, 0]))  # by symbol, then first appearance
        rank = np.empty(len(uniq), np.int64)
        sym_sorted = uniq[order, 0]
        start_of = np.searchsorted(sym_sorted, sym_sorted, side="left")
        rank[order] = np.arange(len(uniq)) - start_of
        pc = (4 * rank[inv.reshape(-1)]).astype(np.uint64)
        if "Stall_Reason" in t:
            issued = _ints(p, t.get("Wave_Issued_Instruction", ["0"] * n), "Wave_Issued_Instruction") != 0
            reasons, r_inv = np.unique(np.array(t["Stall_Reason"], dtype=object), return_inverse=True)
            names = [str(r).removeprefix(STALL_REASON_PREFIX) for r in reasons]
            cls = np.array([stall_class("amd", r) if r else M.NO_STALL_INFO for r in names],
                           np.uint8)[r_inv.reshape(-1)]
            stall = np.where(issued, M.ST_NONE, cls).astype(np.uint8)
        else:
            stall = np.full(n, M.NO_STALL_INFO, np.uint8)
        parts.append(M.table(M.SAMPLE_DTYPE, n, process=pid, corr=corr, symbol=sym, pc=pc, stall=stall,
                             samples=1, stall_samples=(stall != M.NO_STALL_INFO).astype(np.uint64)))
    smp = np.concatenate(parts)
    tr.samples = M.aggregate_samples(smp)


register(VendorReader(name="rocprofv3-csv", label="rocprofv3 CSV", what="rocprofv3 CSV output", rank=70,
                      recognise=recognise, read=read, multi_file=True))
