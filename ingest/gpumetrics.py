"""hpcrun's GPU metrics (``src/hpcrun/gpu/gpu-metrics.h``): the table, as real hpcrun measurements carry
it, and the values GPU operations give them.

Names, descriptions, formats and flags are copied from the metric tables of
measurements made by HPCToolkit's own test suite (loops-cuda-nvidia-t.m,
loops-cuda-nvidiapc-t.m), so hpcprof sees the same metrics it sees from hpcrun.
The PC-sampling block comes first when the source has PC samples, as hpcrun
registers it first; the implicit-copy (unified memory) detail only when the
source has such copies.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from hpcsa.formats.measurement.hpcrun import SHOW_EXCLUSIVE as SHOW_EXCL
from hpcsa.formats.measurement.hpcrun import SHOW_HIDE as HIDE
from hpcsa.formats.measurement.hpcrun import SHOW_INVISIBLE as INVISIBLE
from hpcsa.formats.measurement.hpcrun import SHOW_SHOW as SHOW
from hpcsa.formats.measurement.hpcrun import VAL_FMT_INT, VAL_FMT_REAL, MetricDesc
from hpcsa.ingest import model as M
from hpcsa.ingest.model import COPY_DIRECTIONS, IMPLICIT_DIRECTIONS, MEMORY_KINDS, STALL_CLASSES, SYNC_KINDS

_KIND_TEXT = {"UNK": "unknown memory kind", "PAG": "pageable memory", "PIN": "pinned memory",
              "DEV": "device memory", "ARY": "array memory", "MAN": "managed memory",
              "DST": "device static memory", "MST": "managed static memory"}
_DIR_TEXT = {"UNK": "unknown kind", "H2D": "host to device", "D2H": "device to host", "H2A": "host to array",
             "A2H": "array to host", "A2A": "array to array", "A2D": "array to device", "D2A": "device to array",
             "D2D": "device to device", "H2H": "host to host", "P2P": "peer to peer"}
_SYNC_TEXT = {"UNK": "unknown kind", "EVT": "event", "STRE": "stream event wait", "STR": "stream",
              "CTX": "context"}
_STALL_TEXT = {
    "ANY": "any", "NONE": "no stall",
    "IFET": "await availability of next instruction (fetch or branch delay)",
    "IDEP": "await satisfaction of instruction input dependence",
    "GMEM": "await completion of global memory access", "TMEM": "texture memory request queue full",
    "SYNC": "await completion of thread or memory synchronization",
    "CMEM": "await completion of constant or immediate memory access",
    "PIPE": "await completion of required compute resources", "MTHR": "global memory request queue full",
    "NSEL": "not selected for issue but ready", "OTHR": "other", "SLP": "sleep"}
_KER_ACC = (("STMEM_ACUMU (B)", "static memory accumulator", "STMEM (B)", "static memory (bytes)"),
            ("DYMEM_ACUMU (B)", "dynamic memory accumulator", "DYMEM (B)", "dynamic memory (bytes)"),
            ("LMEM_ACUMU (B)", "local memory accumulator", "LMEM (B)", "local memory (bytes)"),
            ("FGP_ACT_ACUMU", "fine-grain parallelism accumulator", "FGP_ACT", "fine-grain parallelism, actual"),
            ("FGP_MAX_ACUMU", "fine-grain parallelism accumulator", "FGP_MAX", "fine-grain parallelism, maximum"),
            ("THR_REG_ACUMU", "thread register count accumulator", "THR_REG", "thread register count"),
            ("BLK_THR_ACUMU", "thread count accumulator", "BLK_THR", "thread count"),
            ("BLK_SM_ACUMU", "block local memory accumulator", "BLK_SM (B)", "block local memory (bytes)"),
            ("BLKS_ACUMU", "block count accumulator", "BLKS", "block count"))
#: Kernel attribute accumulators by short key, in table order.
KERNEL_ACCUMULATORS = ("STMEM", "DYMEM", "LMEM", "FGP_ACT", "FGP_MAX", "THR_REG", "BLK_THR", "BLK_SM", "BLKS")


def _m(name: str, desc: str, fmt: int, show: int = SHOW, move2proc: int = 0, formula: str = "",
       format: str = "", show_percent: int = 1) -> MetricDesc:
    return MetricDesc(name=name, description=desc, type=1, val_type=0, val_fmt=fmt, move2proc=move2proc,
                      show=show, show_percent=show_percent, formula=formula, format=format)


def metric_table(pc_sampling: bool, implicit_copies: bool, instruction_trace: bool = False) -> list[MetricDesc]:
    """The metric table for one measurement directory (the same in every file, as with hpcrun); an
    instruction trace (AMD thread trace) adds the cycles its instructions stalled and idled."""
    out: list[MetricDesc] = []
    if pc_sampling or instruction_trace:
        out += [_m("GINS:BLK_EXEC_CNT", "GPU basic block execution count", VAL_FMT_INT, INVISIBLE),
                _m("GINS:BLK_LAT", "GPU basic block latency", VAL_FMT_INT, INVISIBLE),
                _m("GINS:BLK_SIMD_ACT", "GPU basic block active SIMD lanes", VAL_FMT_INT, INVISIBLE),
                _m("GINS", "GPU instruction execution count", VAL_FMT_INT),
                _m("GINS:LAT", "GPU instruction latency", VAL_FMT_INT),
                _m("GINS:LAT_COV", "GPU instruction covered latency", VAL_FMT_INT),
                _m("GINS:LAT_UCV", "GPU instruction uncovered latency", VAL_FMT_INT)]
        cov = len(out) - 2
        out += [_m("GINS:LAT_THR", "GPU threads needed to cover latency (1 + UCV/COV)", VAL_FMT_INT,
                   formula=f"(#{cov}/#{cov}) + (#{cov + 1}/#{cov})", format="%6.0f"),
                _m("GINS:SIMD_TOT", "GPU instruction total SIMD lanes", VAL_FMT_INT),
                _m("GINS:SIMD_ACT", "GPU instruction active SIMD lanes", VAL_FMT_INT),
                _m("GINS:SIMD_WST", "GPU instruction wasted SIMD lanes", VAL_FMT_INT),
                _m("GINS:SIMD_SLS", "GPU instruction SIMD lanes lost due to scalar instructions", VAL_FMT_INT)]
        for key in ("ANY",) + STALL_CLASSES:
            out.append(_m(f"GINS:STL_{key}", f"GPU instruction stalls: {_STALL_TEXT[key]}", VAL_FMT_INT,
                          SHOW if key == "ANY" else HIDE))
        if instruction_trace:
            out += [_m("GINS:STALL_CYC", "GPU instruction stall cycles (instruction trace)", VAL_FMT_INT),
                    _m("GINS:IDLE_CYC", "GPU instruction idle cycles (instruction trace)", VAL_FMT_INT)]
        base = len(out)
        out += [_m("GSAMP:DRP", "GPU PC samples: dropped", VAL_FMT_INT, HIDE, 1),
                _m("GSAMP:EXP", "GPU PC samples: expected", VAL_FMT_INT, HIDE, 1),
                _m("GSAMP:TOT", "GPU PC samples: measured", VAL_FMT_INT, HIDE, 1),
                _m("GSAMP:PER (cyc)", "GPU PC samples: period (GPU cycles)", VAL_FMT_INT, HIDE, 1),
                _m("GSAMP:UTIL", "GPU utilization computed using PC sampling", VAL_FMT_REAL, SHOW, 1,
                   formula=f"min(100, max(0, 100*#{base + 2}/#{base + 1}))", format="%6.2f %%")]
    for key, text in (("GPUOP", "all operations"), ("GKER", "kernel execution"),
                      ("GMEM", "memory allocation/deallocation"), ("GMSET", "memory set"),
                      ("GXCOPY", "explicit data copy"), ("GICOPY", "implicit data copy"),
                      ("GSYNC", "synchronization")):
        out.append(_m(f"{key} (sec)", f"GPU time: {text} (seconds)", VAL_FMT_REAL, move2proc=1))
    for kind in MEMORY_KINDS:
        out.append(_m(f"GMEM:{kind} (B)", f"GPU memory alloc/free: {_KIND_TEXT[kind]} (bytes)", VAL_FMT_INT))
    out.append(_m("GMEM:COUNT", "GPU memory alloc/free: count", VAL_FMT_INT))
    for kind in MEMORY_KINDS:
        out.append(_m(f"GMSET:{kind} (B)", f"GPU memory set: {_KIND_TEXT[kind]} (bytes)", VAL_FMT_INT))
    out.append(_m("GMSET:COUNT", "GPU memory set: count", VAL_FMT_INT))
    for d in COPY_DIRECTIONS:
        out.append(_m(f"GXCOPY:{d} (B)", f"GPU explicit memory copy: {_DIR_TEXT[d]} (bytes)", VAL_FMT_INT))
    out.append(_m("GXCOPY:COUNT", "GPU explicit memory copy: count", VAL_FMT_INT))
    if implicit_copies:
        for d in IMPLICIT_DIRECTIONS:
            out.append(_m(f"GICOPY:{d} (B)", f"GPU implicit memory copy: {_DIR_TEXT[d]} (bytes)", VAL_FMT_INT))
        out.append(_m("GICOPY:COUNT", "GPU implicit memory copy: count", VAL_FMT_INT))
    for k in SYNC_KINDS:
        out.append(_m(f"GSYNC:{k} (sec)", f"GPU synchronizations: {_SYNC_TEXT[k]}", VAL_FMT_REAL, HIDE))
    out.append(_m("GSYNC:COUNT", "GPU synchronizations: count", VAL_FMT_REAL, HIDE))
    acc0 = len(out)
    count_id = acc0 + 2 * len(_KER_ACC)
    for acc, text, _, _ in _KER_ACC:
        out.append(_m(f"GKER:{acc}", f"GPU kernel: {text} [internal use only]", VAL_FMT_INT, INVISIBLE, 1))
    for i, (_, _, name, text) in enumerate(_KER_ACC):
        out.append(_m(f"GKER:{name}", f"GPU kernel: {text}", VAL_FMT_INT, SHOW_EXCL, 1,
                      formula=f"#{acc0 + i}/#{count_id}", format="%6.0f", show_percent=0))
    out.append(_m("GKER:COUNT", "GPU kernel: launch count", VAL_FMT_INT, SHOW, 1))
    out.append(_m("GKER:OCC_THR", "GPU kernel: theoretical occupancy (FGP_ACT / FGP_MAX)", VAL_FMT_INT,
                  SHOW_EXCL, 1, formula=f"100*(#{acc0 + 3}/#{acc0 + 4})", format="%6.2f %%", show_percent=0))
    return out


def metric_ids(metrics: list[MetricDesc]) -> dict[str, int]:
    return {m.name: i for i, m in enumerate(metrics)}


# -- the values of GPU operations ---------------------------------------------------------------------


def operation_values(ops: np.ndarray, leaf: np.ndarray, mid: dict[str, int],
                     devices: Mapping[int, Mapping[str, float]]) -> tuple[list, list, list]:
    """hpcrun's GPU metrics of operations, as (nodes, metrics, values) contributions at their nodes ``leaf``
    (to be summed: :func:`sum_values`); ``devices`` holds the properties of the process's devices."""
    nodes: list[np.ndarray] = []
    mets: list[np.ndarray] = []
    vals: list[np.ndarray] = []

    def add(mask: np.ndarray, metric: str | np.ndarray, value: np.ndarray | float) -> None:
        if not np.any(mask):
            return
        nodes.append(leaf[mask])
        if isinstance(metric, str):
            mets.append(np.full(int(mask.sum()), mid[metric]))
        else:
            mets.append(metric[mask])
        vals.append(np.broadcast_to(np.asarray(value, np.float64), mask.shape)[mask])

    kind, count = ops["kind"], ops["count"].astype(np.float64)
    dur = np.maximum(ops["end"] - ops["start"], 0).astype(np.float64) / 1e9
    add(np.ones(len(ops), bool), "GPUOP (sec)", dur)
    k = kind == M.KERNEL
    add(k, "GKER (sec)", dur)
    add(k, "GKER:COUNT", count)
    acc = {"STMEM": ops["smem_static"], "DYMEM": ops["smem_dynamic"], "LMEM": ops["local_total"],
           "THR_REG": ops["regs"], "BLK_THR": ops["block_threads"],
           "BLK_SM": np.maximum(ops["smem_static"], 0) + np.maximum(ops["smem_dynamic"], 0),
           "BLKS": ops["blocks"]}
    for key, col in acc.items():
        name = f"GKER:{key}_ACUMU" + (" (B)" if key in ("STMEM", "DYMEM", "LMEM") else "")
        add(k, name, np.maximum(col, 0) * count)
    if np.any(k):
        for dev in np.unique(ops["device"][k]).tolist():
            props = devices.get(dev, {})
            sel = k & (ops["device"] == dev)
            act, mx = occupancy(ops[sel], props)
            if np.any(mx):
                full = np.zeros(len(ops))
                full[sel] = act
                add(sel, "GKER:FGP_ACT_ACUMU", full * count)
                full[sel] = mx
                add(sel, "GKER:FGP_MAX_ACUMU", full * count)
    c = kind == M.MEMCPY
    xc, ic = c & (ops["implicit"] == 0), c & (ops["implicit"] != 0)
    add(xc, "GXCOPY (sec)", dur)
    add(xc, np.array([mid[f"GXCOPY:{d} (B)"] for d in M.COPY_DIRECTIONS])[np.minimum(ops["sub"], 10)],
        ops["bytes"].astype(np.float64))
    add(xc, "GXCOPY:COUNT", count)
    add(ic, "GICOPY (sec)", dur)
    if np.any(ic):
        idir = np.array([mid[f"GICOPY:{d} (B)"] for d in M.IMPLICIT_DIRECTIONS])
        pick = np.select([ops["sub"] == M.CP_H2D, ops["sub"] == M.CP_D2H, ops["sub"] == M.CP_D2D], [1, 2, 3], 0)
        add(ic, idir[pick], ops["bytes"].astype(np.float64))
        add(ic, "GICOPY:COUNT", count)
    s = kind == M.MEMSET
    add(s, "GMSET (sec)", dur)
    add(s, np.array([mid[f"GMSET:{k_} (B)"] for k_ in M.MEMORY_KINDS])[np.minimum(ops["sub"], 7)],
        ops["bytes"].astype(np.float64))
    add(s, "GMSET:COUNT", count)
    y = kind == M.SYNC
    add(y, "GSYNC (sec)", dur)
    add(y, np.array([mid[f"GSYNC:{k_} (sec)"] for k_ in M.SYNC_KINDS])[np.minimum(ops["sub"], 4)], dur)
    add(y, "GSYNC:COUNT", count)
    a = (kind == M.ALLOC) | (kind == M.FREE)
    add(a, "GMEM (sec)", dur)
    add(a, np.array([mid[f"GMEM:{k_} (B)"] for k_ in M.MEMORY_KINDS])[np.minimum(ops["sub"], 7)],
        ops["bytes"].astype(np.float64))
    add(a, "GMEM:COUNT", count)
    return nodes, mets, vals


def occupancy(ops: np.ndarray, props: Mapping[str, float]) -> tuple[np.ndarray, np.ndarray]:
    """Theoretical active and maximum warps per SM of each kernel launch (CUDA occupancy rules without
    allocation granularity); zeros where the device properties are unknown."""
    warp = props.get("warp", 0) or 0
    max_warps = props.get("max_warps_per_sm", 0) or 0
    if not (warp and max_warps):
        return np.zeros(len(ops)), np.zeros(len(ops))
    threads = np.maximum(ops["block_threads"], 0).astype(np.float64)
    wpb = np.ceil(threads / warp)
    ok = wpb > 0
    limit = np.where(ok, np.floor(max_warps / np.maximum(wpb, 1)), 0)
    if props.get("max_blocks_per_sm"):
        limit = np.minimum(limit, props["max_blocks_per_sm"])
    regs = np.maximum(ops["regs"], 0) * threads
    if props.get("regs_per_sm"):
        limit = np.where(regs > 0, np.minimum(limit, np.floor(props["regs_per_sm"] / np.maximum(regs, 1))), limit)
    smem = (np.maximum(ops["smem_static"], 0) + np.maximum(ops["smem_dynamic"], 0)).astype(np.float64)
    if props.get("smem_per_sm"):
        limit = np.where(smem > 0, np.minimum(limit, np.floor(props["smem_per_sm"] / np.maximum(smem, 1))), limit)
    active = np.where(ok, limit * wpb, 0)
    return np.minimum(active, max_warps), np.where(ok, max_warps, 0)


def sum_values(nodes: list[np.ndarray], metrics: list[np.ndarray], values: list[np.ndarray]
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sum the (node, metric, value) contributions with equal (node, metric)."""
    if not nodes:
        return np.zeros(0, np.uint32), np.zeros(0, np.uint16), np.zeros(0)
    n = np.concatenate(nodes).astype(np.int64)
    m = np.concatenate(metrics).astype(np.int64)
    v = np.concatenate(values).astype(np.float64)
    keep = v != 0
    n, m, v = n[keep], m[keep], v[keep]
    key = n * 65536 + m
    uniq, inv = np.unique(key, return_inverse=True)
    sums = np.bincount(inv, weights=v, minlength=len(uniq))
    return (uniq // 65536).astype(np.uint32), (uniq % 65536).astype(np.uint16), sums
