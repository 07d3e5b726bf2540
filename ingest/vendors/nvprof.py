"""nvprof SQLite outputs (``nvprof -o x.nvprof``): CUPTI activity records dumped table by table.

Columns are the CUPTI struct fields, strings are ids into ``StringTable``, enums
are CUPTI's own, times are CLOCK_REALTIME ns. API records carry callback ids,
not names: names come from the CUPTI ``*_cbid.h`` headers when a CUDA toolkit or
the ``nvidia-cuda-cupti`` wheel is installed, else they read ``cudaRuntime#N``.
Legacy PC sampling is read in full: each PC_SAMPLING record (launch, function,
pc offset, stall reason, samples, latency samples) becomes a sample at
``pcOffset`` from its function's entry; FUNCTION gives the function and its
module, MODULE the cubin (when the file still carries it), RECORD_INFO the
period and totals.
"""

from __future__ import annotations

import glob
import os
import re
from functools import lru_cache

import numpy as np

from hpcsa.core.errors import UnsupportedError
from hpcsa.ingest import model as M
from hpcsa.ingest.sqlsrc import OPERATION_COLUMNS, Db, activity, cupti_sync_kinds, kernel_columns
from hpcsa.ingest.stalls import CUPTI_LEGACY_REASONS, stall_class
from hpcsa.ingest.vendors import Probe, VendorReader, register, sqlite_read

SUPPORTED_VERSIONS = range(1, 12)  # the `Version` table; CUDA 9/10 nvprof writes 11
# CUPTI callback ids are a stable ABI (cupti_runtime_cbid.h / cupti_driver_cbid.h); these are the APIs
# that launch, copy, set, allocate or wait, so that records stay readable where no CUPTI header is installed.
_RUNTIME_CBIDS = {
    13: "cudaLaunch_v3020", 20: "cudaMalloc_v3020", 21: "cudaMallocPitch_v3020", 22: "cudaFree_v3020",
    25: "cudaMallocHost_v3020", 26: "cudaFreeHost_v3020", 27: "cudaHostAlloc_v3020", 31: "cudaMemcpy_v3020",
    32: "cudaMemcpy2D_v3020", 39: "cudaMemcpyToSymbol_v3020", 40: "cudaMemcpyFromSymbol_v3020",
    41: "cudaMemcpyAsync_v3020", 44: "cudaMemcpy2DAsync_v3020", 49: "cudaMemset_v3020",
    50: "cudaMemset2D_v3020", 51: "cudaMemsetAsync_v3020", 126: "cudaThreadSynchronize_v3020",
    129: "cudaStreamCreate_v3020", 130: "cudaStreamDestroy_v3020", 131: "cudaStreamSynchronize_v3020",
    132: "cudaStreamQuery_v3020", 133: "cudaEventCreate_v3020", 135: "cudaEventRecord_v3020",
    134: "cudaEventCreateWithFlags_v3020", 136: "cudaEventDestroy_v3020", 137: "cudaEventSynchronize_v3020",
    138: "cudaEventQuery_v3020", 139: "cudaEventElapsedTime_v3020",
    147: "cudaStreamWaitEvent_v3020", 160: "cudaMemcpyPeer_v4000", 161: "cudaMemcpyPeerAsync_v4000",
    164: "cudaDeviceReset_v3020", 165: "cudaDeviceSynchronize_v3020", 198: "cudaStreamCreateWithFlags_v5000",
    201: "cudaStreamDestroy_v5050", 206: "cudaMallocManaged_v6000", 211: "cudaLaunchKernel_v7000",
    214: "cudaLaunchKernel_ptsz_v7000", 239: "cudaStreamSynchronize_ptsz_v7000",
    252: "cudaMemPrefetchAsync_v8000", 269: "cudaLaunchCooperativeKernel_v9000",
    311: "cudaGraphLaunch_v10000", 430: "cudaLaunchKernelExC_v11060",
}
_KNOWN_CBIDS = {("runtime", cbid): name for cbid, name in _RUNTIME_CBIDS.items()}
_KNOWN_CBIDS.update({("driver", 307): "cuLaunchKernel", ("driver", 442): "cuLaunchKernel_ptsz",
                     ("driver", 652): "cuLaunchKernelEx"})


def recognise(probe: Probe) -> bool:
    """nvprof outputs have ``StringTable``, ``Version`` and CUPTI activity tables (no ``StringIds``:
    Nsight Systems exports are recognised first)."""
    db = probe.db
    return (db is not None and db.has("StringTable") and db.has("Version")
            and any(t.startswith("CUPTI_ACTIVITY_KIND_") for t in db.tables))


@lru_cache(maxsize=2)
def cbid_names(domain: str) -> dict[int, str]:
    """CUPTI callback id -> API name, from an installed CUPTI header (empty if none is installed)."""
    header = f"cupti_{domain}_cbid.h"
    roots = [os.environ.get("CUDA_HOME", ""), os.environ.get("CUDA_PATH", ""), "/usr/local/cuda"]
    candidates = [os.path.join(r, sub, header) for r in roots if r for sub in ("include", "extras/CUPTI/include")]
    try:
        import nvidia

        for base in getattr(nvidia, "__path__", []):
            candidates += glob.glob(os.path.join(base, "*cupti*", "include", header))
    except ImportError:
        pass
    prefix = "CUPTI_RUNTIME_TRACE_CBID_" if domain == "runtime" else "CUPTI_DRIVER_TRACE_CBID_"
    for path in candidates:
        if os.path.isfile(path):
            with open(path, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
            return {int(num): name for name, num in re.findall(rf"{prefix}(\w+)\s*=\s*(\d+)", text)
                    if name not in ("INVALID", "SIZE", "FORCE_INT")}
    return {}


def _api_name(domain: str, cbid: int) -> str:
    name = cbid_names(domain).get(cbid) or _KNOWN_CBIDS.get((domain, cbid))
    return name or f"{'cudaRuntime' if domain == 'runtime' else 'cuDriver'}#{cbid}"


def read(db: Db) -> M.GpuTrace:
    version = int(db.execute("SELECT version FROM Version LIMIT 1")[0][0])
    if version not in SUPPORTED_VERSIONS:
        raise UnsupportedError(db.path, f"nvprof database version {version} is not supported (hpcsa reads "
                               f"versions {SUPPORTED_VERSIONS.start}-{SUPPORTED_VERSIONS.stop - 1})")
    tr = M.GpuTrace(source=f"nvprof-sqlite version {version}", path=db.path, clock="CLOCK_REALTIME ns",
                    api_domain="CUDA")
    strings = dict(db.execute("SELECT _id_, value FROM StringTable"))
    _apis(db, tr)
    parts = [_kernels(db, tr, strings), _memcpys(db), _memsets(db), _syncs(db)]
    tables = [p for p in parts if p is not None and len(p)]
    # Activity records carry no process id: they belong to the process of the API calls (one per file).
    pids = np.unique(tr.apis["process"]) if len(tr.apis) else np.zeros(0, np.int64)
    pid = int(pids[0]) if len(pids) == 1 else 0
    if tables:
        tr.ops = np.concatenate(tables)
        tr.ops["process"] = pid
    _devices(db, tr, pid)
    _pc_sampling(db, tr, strings, pid)
    name = ""
    if db.has("CUPTI_ACTIVITY_KIND_NAME"):
        # Process names are NAME records with objectKind 1 (CUPTI_ACTIVITY_OBJECT_PROCESS).
        rows = db.execute("SELECT name FROM CUPTI_ACTIVITY_KIND_NAME WHERE objectKind = 1 LIMIT 1")
        name = str(strings.get(rows[0][0], "")) if rows else ""
    tr.processes[pid] = M.ProcessInfo(pid, name=os.path.basename(name.split(" ")[0]) if name else "", path=name)
    return tr


def _apis(db: Db, tr: M.GpuTrace) -> None:
    parts = []
    for domain, table in (("runtime", "CUPTI_ACTIVITY_KIND_RUNTIME"), ("driver", "CUPTI_ACTIVITY_KIND_DRIVER")):
        if not db.has(table):
            continue
        c = db.columns_of(f'SELECT cbid, start, "end", processId, threadId, correlationId FROM {table}',
                          ["cbid", "start", "end", "pid", "tid", "corr"])
        n = len(c["cbid"])
        if not n:
            continue
        uniq, inv = np.unique(c["cbid"], return_inverse=True)
        name_ids = np.array([tr.intern(_api_name(domain, int(u))) for u in uniq], np.int32)[inv]
        # CUPTI's default thread id is pthread_self() truncated to 32 bits; nvprof stores it signed.
        parts.append(M.table(M.API_DTYPE, n, process=c["pid"], thread=c["tid"] & 0xFFFFFFFF, name=name_ids,
                             start=c["start"], end=c["end"], corr=c["corr"] & 0xFFFFFFFF))
    if parts:
        tr.apis = np.concatenate(parts)


def _kernels(db: Db, tr: M.GpuTrace, strings: dict) -> np.ndarray | None:
    out = []
    for t in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL"):
        c = activity(db, t, {**OPERATION_COLUMNS, "name": "name", **kernel_columns(db, t)})
        n = len(c["start"]) if c is not None else 0
        if c is None or not n:
            continue
        names = [str(strings.get(int(i), "")) for i in c["name"]]
        out.append(M.table(M.OP_DTYPE, n, kind=M.KERNEL, device=c["dev"], context=c["ctx"], stream=c["stream"],
                           corr=c["corr"], start=c["start"], end=c["end"], name=tr.intern_many(names),
                           blocks=c["blocks"], block_threads=c["threads"], regs=c["regs"], smem_static=c["sst"],
                           smem_dynamic=c["sdy"], local_total=c["lmem"]))
    return np.concatenate(out) if out else None


def _memcpys(db: Db) -> np.ndarray | None:
    t = "CUPTI_ACTIVITY_KIND_MEMCPY"
    c = activity(db, t, {**OPERATION_COLUMNS, "rcorr": db.col(t, "runtimeCorrelationId"), "bytes": "bytes",
                         "kind": "copyKind"})
    if c is None:
        return None
    # The header documents correlationId as the driver call and runtimeCorrelationId as the runtime call;
    # nvprof fills the runtime id into correlationId. Prefer the runtime id when both are set.
    corr = np.where(c["rcorr"] != 0, c["rcorr"], c["corr"])
    kind = c["kind"]
    return M.table(M.OP_DTYPE, len(kind), kind=M.MEMCPY, device=c["dev"], context=c["ctx"], stream=c["stream"],
                   corr=corr, start=c["start"], end=c["end"], bytes=c["bytes"],
                   sub=np.where((kind >= 0) & (kind <= 10), kind, M.CP_UNK))


def _memsets(db: Db) -> np.ndarray | None:
    t = "CUPTI_ACTIVITY_KIND_MEMSET"
    c = activity(db, t, {**OPERATION_COLUMNS, "bytes": "bytes", "mk": db.col(t, "memoryKind")})
    if c is None:
        return None
    return M.table(M.OP_DTYPE, len(c["start"]), kind=M.MEMSET, device=c["dev"], context=c["ctx"],
                   stream=c["stream"], corr=c["corr"], start=c["start"], end=c["end"], bytes=c["bytes"],
                   sub=np.where((c["mk"] >= 0) & (c["mk"] <= 7), c["mk"], M.MK_UNK))


def _syncs(db: Db) -> np.ndarray | None:
    t = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
    if not db.has(t):
        return None
    c = db.columns_of(f'SELECT start, "end", contextId, streamId, correlationId, type FROM {t}',
                      ["start", "end", "ctx", "stream", "corr", "type"])
    sub = cupti_sync_kinds(c["type"])
    stream = np.where((c["stream"] == -1) | (c["stream"] == 0xFFFFFFFF), -1, c["stream"])
    return M.table(M.OP_DTYPE, len(sub), kind=M.SYNC, context=c["ctx"], stream=stream, corr=c["corr"],
                   start=c["start"], end=c["end"], sub=sub)


def _devices(db: Db, tr: M.GpuTrace, pid: int) -> None:
    t = "CUPTI_ACTIVITY_KIND_DEVICE"
    if not db.has(t):
        return
    for row in db.execute(f"SELECT {db.col(t, 'id')}, numThreadsPerWarp, maxWarpsPerMultiprocessor, "
                          "maxBlocksPerMultiprocessor, maxRegistersPerMultiprocessor, "
                          "maxSharedMemoryPerMultiprocessor, numMultiprocessors, coreClockRate FROM " + t):
        tr.devices[(pid, int(row[0] or 0))] = {
            "warp": float(row[1] or 0), "max_warps_per_sm": float(row[2] or 0),
            "max_blocks_per_sm": float(row[3] or 0), "regs_per_sm": float(row[4] or 0),
            "smem_per_sm": float(row[5] or 0), "sm_count": float(row[6] or 0),
            "clock_hz": float(row[7] or 0) * 1e3}  # CUPTI's coreClockRate is in kHz


def _pc_sampling(db: Db, tr: M.GpuTrace, strings: dict, pid: int) -> None:
    t = "CUPTI_ACTIVITY_KIND_PC_SAMPLING"
    if not db.has(t):
        return
    # Functions (id -> module, index, name) become kernel symbols; modules carry the cubin when present.
    func_sym: dict[int, int] = {}
    if db.has("CUPTI_ACTIVITY_KIND_MODULE"):
        for mod_id, _size, cubin in db.execute("SELECT id, cubinSize, cubin FROM CUPTI_ACTIVITY_KIND_MODULE"):
            data = bytes(cubin) if cubin else None
            tr.code_objects[int(mod_id)] = M.CodeObject(int(mod_id), "cubin", data if data and len(data) else None)
    if db.has("CUPTI_ACTIVITY_KIND_FUNCTION"):
        for fid, mod, index, name in db.execute(
                "SELECT id, moduleId, functionIndex, name FROM CUPTI_ACTIVITY_KIND_FUNCTION"):
            func_sym[int(fid)] = tr.symbol(M.KernelSymbol(str(strings.get(int(name), "")), int(mod),
                                                          function_index=int(index)))
    c = db.columns_of(f"SELECT correlationId, functionId, pcOffset, stallReason, samples, latencySamples FROM {t}",
                      ["corr", "func", "pc", "reason", "samples", "latency"])
    n = len(c["corr"])
    if n:
        cls = np.array([stall_class("cupti-legacy", CUPTI_LEGACY_REASONS[r] if 0 <= r < len(CUPTI_LEGACY_REASONS)
                                    else "OTHER") for r in range(len(CUPTI_LEGACY_REASONS) + 1)], np.uint8)
        reason = np.clip(c["reason"], 0, len(CUPTI_LEGACY_REASONS))
        f_uniq, f_inv = np.unique(c["func"], return_inverse=True)
        sym = np.array([func_sym.get(int(f), -1) for f in f_uniq], np.int64)[f_inv.reshape(-1)]
        tr.samples = M.table(M.SAMPLE_DTYPE, n, process=pid, corr=c["corr"], symbol=sym, pc=c["pc"],
                             stall=cls[reason], samples=c["samples"], stall_samples=c["latency"])
    info = "CUPTI_ACTIVITY_KIND_PC_SAMPLING_RECORD_INFO"
    if db.has(info):
        c = db.columns_of(f"SELECT correlationId, totalSamples, droppedSamples, samplingPeriodInCycles FROM {info}",
                          ["corr", "total", "dropped", "period"])
        tr.sample_info = M.table(M.SAMPLE_INFO_DTYPE, len(c["corr"]), process=pid, corr=c["corr"],
                                 total=c["total"], dropped=c["dropped"], period=c["period"])
    # Kernel launches know their function by name: link them to the sampled functions' symbols.
    by_name = {tr.symbols[s].name: s for s in func_sym.values()}
    if by_name and len(tr.ops):
        k = tr.ops["kind"] == M.KERNEL
        n_uniq, n_inv = np.unique(tr.ops["name"][k], return_inverse=True)
        code = np.array([by_name.get(tr.strings[int(nm)], -1) for nm in n_uniq], np.int64)
        tr.ops["code"][k] = code[n_inv.reshape(-1)]


register(VendorReader(name="nvprof", label="nvprof", what="nvprof database", rank=20, sqlite=True,
                      recognise=recognise, read=sqlite_read(read)))
