"""hpcrun's GPU metric table (``src/hpcrun/gpu/gpu-metrics.h``), as real hpcrun measurements carry it.

Names, descriptions, formats and flags are copied from the metric tables of the
real measurements in ``data/hpctoolkit/meas`` (loops-cuda-nvidia-t.m,
loops-cuda-nvidiapc-t.m), so hpcprof sees the same metrics it sees from hpcrun.
The PC-sampling block comes first when the source has PC samples, as hpcrun
registers it first; the implicit-copy (unified memory) detail only when the
source has such copies.
"""

from __future__ import annotations

from hpcsa.ingest.hpcrun import SHOW_EXCLUSIVE as SHOW_EXCL
from hpcsa.ingest.hpcrun import SHOW_HIDE as HIDE
from hpcsa.ingest.hpcrun import SHOW_INVISIBLE as INVISIBLE
from hpcsa.ingest.hpcrun import SHOW_SHOW as SHOW
from hpcsa.ingest.hpcrun import VAL_FMT_INT, VAL_FMT_REAL, MetricDesc
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


def metric_table(pc_sampling: bool, implicit_copies: bool) -> list[MetricDesc]:
    """The metric table for one measurement directory (the same in every file, as with hpcrun)."""
    out: list[MetricDesc] = []
    if pc_sampling:
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
