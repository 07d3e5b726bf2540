"""rocprofv3 JSON output (``--output-format json``, ``<pid>_results.json``): kernel dispatches, HIP API
calls, memory copies and PC samples (host-trap and stochastic) of each process, with the code objects and
kernel symbols they refer to.

The layout is rocprofiler-sdk's (``source/lib/output/generateJSON.cpp`` and the serializers in
``rocprofiler-sdk/cxx/serialization/save.hpp``; schema ``source/docs/rocprofv3-schema.json``): a top-level
``rocprofiler-sdk-tool`` array, one element per process, with ``metadata.pid``, ``strings.buffer_records``
(per record kind, its name and its operations' names, indexed by the records' ``kind`` and ``operation``),
``code_objects``, ``kernel_symbols``, and ``buffer_records.{kernel_dispatch, hip_api, memory_copy,
pc_sample_host_trap, pc_sample_stochastic}`` (older versions put the PC samples in ``callback_records``).
A PC sample is ``{record: {pc: {code_object_id, code_object_offset}, dispatch_id, corr_id, ...}, inst_index}``;
a stochastic one adds ``wave_issued``, ``inst_type``, ``wave_cnt`` and ``snapshot.stall_reason``. Times are
CLOCK_BOOTTIME ns; correlation ids are rocprofiler-sdk's internal ids.

PC samples are individual wave samples; they are counted per (launch, kernel, offset, not-issued reason).
The offset is the code object offset minus the kernel's entry in the code object when its file was saved
beside the JSON (``strings.code_object_snapshot_filenames``, rocprofv3 ``--save-code-objects``), so the
samples land in ``gpubins/`` at their instructions; otherwise the code object offset itself, under a kernel of
that name.
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

from hpcsa.core.errors import FormatError
from hpcsa.core.fileio import read_input
from hpcsa.ingest import model as M
from hpcsa.ingest.stalls import stall_class
from hpcsa.ingest.vendors import Probe, VendorReader, register
from hpcsa.ingest.vendors.rocpd import waits_as_sync_ops
from hpcsa.ingest.vendors.rocprofv3 import STALL_REASON_PREFIX
from hpcsa.structure.gpu.gpubin import entry_offsets

TOOL_KEY = "rocprofiler-sdk-tool"
_DIRS = {"HOST_TO_DEVICE": M.CP_H2D, "DEVICE_TO_HOST": M.CP_D2H, "DEVICE_TO_DEVICE": M.CP_D2D,
         "HOST_TO_HOST": M.CP_H2H, "PEER_TO_PEER": M.CP_P2P}


def recognise(probe: Probe) -> bool:
    text = probe.text.lstrip()
    return text.startswith("{") and f'"{TOOL_KEY}"' in text[:512]


def _int(value: Any, default: int = 0) -> int:
    if isinstance(value, bool):
        return default
    if isinstance(value, int):
        return value
    if isinstance(value, dict):  # {"handle": N} or {"internal": N, ...}
        return _int(value.get("handle", value.get("internal", default)), default)
    return default


def _obj(obj: Any, key: str) -> dict[str, Any]:
    """``obj[key]`` when it is a JSON object, else an empty one (records are read as far as they go)."""
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, dict) else {}


def _list(obj: Any, key: str) -> list:
    value = obj.get(key) if isinstance(obj, dict) else None
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def read(path: str) -> M.GpuTrace:
    try:
        doc = json.loads(read_input(path))
    except (ValueError, UnicodeError, RecursionError) as exc:
        raise FormatError(path, f"not valid JSON ({str(exc).splitlines()[0][:120]})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get(TOOL_KEY), list):
        raise FormatError(path, f"a JSON document without a {TOOL_KEY} list: not rocprofv3 JSON output")
    tr = M.GpuTrace(source="rocprofv3 json", path=path, clock="CLOCK_BOOTTIME ns", api_domain="HIP")
    folder = os.path.dirname(os.path.abspath(path))
    ops, apis, samples = [], [], []
    for proc in doc[TOOL_KEY]:
        if not isinstance(proc, dict):
            raise FormatError(path, f"a {TOOL_KEY} entry is not a JSON object")
        meta = _obj(proc, "metadata")
        pid = _int(meta.get("pid"))
        tr.processes.setdefault(pid, M.ProcessInfo(pid))
        names = _operation_names(proc)
        entry_of = _code_objects(tr, proc, folder)
        symbol_of = _kernel_symbols(tr, proc, entry_of)
        records = _obj(proc, "buffer_records")
        callbacks = _obj(proc, "callback_records")
        apis.append(_apis(tr, pid, _list(records, "hip_api"), names))
        ops += [_dispatches(tr, pid, _list(records, "kernel_dispatch"), symbol_of),
                _copies(pid, _list(records, "memory_copy"), names)]
        dispatch_symbol = {_int(_obj(r, "dispatch_info").get("dispatch_id")): symbol_of.get(
            _int(_obj(r, "dispatch_info").get("kernel_id")), -1) for r in _list(records, "kernel_dispatch")}
        for kind in ("pc_sample_host_trap", "pc_sample_stochastic"):
            found = _list(records, kind) or _list(callbacks, kind)
            if found:
                samples.append(_samples(tr, pid, found, kind.endswith("stochastic"), dispatch_symbol, entry_of))
    tr.apis = np.concatenate(apis) if apis else tr.apis
    waits = waits_as_sync_ops(tr)
    tables = [t for t in ops + [waits] if t is not None and len(t)]
    if tables:
        tr.ops = np.concatenate(tables)
    if samples:
        tr.samples = M.aggregate_samples(np.concatenate(samples))
    return tr


def _operation_names(proc: dict) -> dict[tuple[int, int], str]:
    """(record kind, operation) -> name, from ``strings.buffer_records`` (indexed by the kind's value)."""
    strings = _obj(proc, "strings")
    out: dict[tuple[int, int], str] = {}
    raw = strings.get("buffer_records")
    entries: list[Any] = raw if isinstance(raw, list) else []  # positions are the kinds' values: keep them all
    for kind, entry in enumerate(entries):
        if isinstance(entry, dict) and isinstance(entry.get("operations"), list):
            for op, name in enumerate(entry["operations"]):
                out[(kind, op)] = str(name)
    return out


def _code_objects(tr: M.GpuTrace, proc: dict, folder: str) -> dict[int, dict[str, int]]:
    """Code object id -> its functions' entries, for the code objects saved beside the JSON (carried to
    ``gpubins/``)."""
    strings = _obj(proc, "strings")
    files = strings.get("code_object_snapshot_filenames")
    out: dict[int, dict[str, int]] = {}
    if not isinstance(files, list):
        return out
    for cid, name in enumerate(files):
        if not isinstance(name, str) or not name or os.path.basename(name) != name:
            continue  # only files beside the JSON, never a path elsewhere
        where = os.path.join(folder, name)
        if not os.path.isfile(where):
            continue
        data = read_input(where)
        if data[:4] == b"\x7fELF":
            tr.code_objects[cid] = M.CodeObject(cid, "hsaco", data=data, uri=name)
            out[cid] = entry_offsets(data)
    return out


def _kernel_symbols(tr: M.GpuTrace, proc: dict, entry_of: dict[int, dict[str, int]]) -> dict[int, int]:
    """Kernel id -> symbol index; the name without the descriptor's ``.kd`` suffix (the function's symbol)."""
    out: dict[int, int] = {}
    for k in _list(proc, "kernel_symbols"):
        name = str(k.get("kernel_name", "")).removesuffix(".kd")
        cid = _int(k.get("code_object_id"), M.NONE)
        entry = entry_of.get(cid, {}).get(name)
        out[_int(k.get("kernel_id"))] = tr.symbol(M.KernelSymbol(
            name, code_object=cid if cid in tr.code_objects else M.NONE, entry=entry))
    return out


def _apis(tr: M.GpuTrace, pid: int, rows: list[dict], names: dict[tuple[int, int], str]) -> np.ndarray:
    n = len(rows)
    fn = [names.get((_int(r.get("kind")), _int(r.get("operation"))), f"<HIP API {_int(r.get('operation'))}>")
          for r in rows]
    return M.table(M.API_DTYPE, n, process=pid, thread=[_int(r.get("thread_id")) for r in rows],
                   name=tr.intern_many(fn) if n else 0, start=[_int(r.get("start_timestamp")) for r in rows],
                   end=[_int(r.get("end_timestamp")) for r in rows],
                   corr=np.array([max(_int(r.get("correlation_id")), 0) for r in rows], np.uint64))


def _dispatches(tr: M.GpuTrace, pid: int, rows: list[dict], symbol_of: dict[int, int]) -> np.ndarray:
    n = len(rows)
    info = [_obj(r, "dispatch_info") for r in rows]

    def dim(i: dict, key: str) -> tuple[int, int, int]:
        v = _obj(i, key)
        return (max(_int(v.get("x"), 1), 1), max(_int(v.get("y"), 1), 1), max(_int(v.get("z"), 1), 1))

    wg = np.array([dim(i, "workgroup_size") for i in info], np.int64).reshape(-1, 3)
    grid = np.array([dim(i, "grid_size") for i in info], np.int64).reshape(-1, 3)  # work-items (HSA)
    sym = [symbol_of.get(_int(i.get("kernel_id")), -1) for i in info]
    names = [tr.symbols[s].name if s >= 0 else f"<kernel {_int(i.get('kernel_id'))}>" for s, i in zip(sym, info,
                                                                                                     strict=True)]
    agent = [_int(i.get("agent_id")) for i in info]
    return M.table(M.OP_DTYPE, n, kind=M.KERNEL, process=pid, thread=[_int(r.get("thread_id")) for r in rows],
                   device=agent, context=agent, stream=[_int(i.get("queue_id")) for i in info],
                   corr=np.array([max(_int(r.get("correlation_id")), 0) for r in rows], np.uint64),
                   start=[_int(r.get("start_timestamp")) for r in rows], end=[_int(r.get("end_timestamp")) for r in rows],
                   name=tr.intern_many(names) if n else 0, blocks=np.prod(-(-grid // wg), axis=1),
                   block_threads=np.prod(wg, axis=1), smem_dynamic=[_int(i.get("group_segment_size")) for i in info],
                   local_total=[_int(i.get("private_segment_size")) for i in info] * np.prod(grid, axis=1), code=sym)


def _copies(pid: int, rows: list[dict], names: dict[tuple[int, int], str]) -> np.ndarray:
    n = len(rows)
    op = [names.get((_int(r.get("kind")), _int(r.get("operation"))), "") for r in rows]
    sub = [next((v for k, v in _DIRS.items() if k in name), M.CP_UNK) for name in op]
    dst = [_int(r.get("dst_agent_id")) for r in rows]
    src = [_int(r.get("src_agent_id")) for r in rows]
    dev = np.where(np.array(sub, np.int64) == M.CP_D2H, src, dst) if n else np.zeros(0, np.int64)
    return M.table(M.OP_DTYPE, n, kind=M.MEMCPY, process=pid, thread=[_int(r.get("thread_id")) for r in rows],
                   device=dev, context=dev, stream=0,
                   corr=np.array([max(_int(r.get("correlation_id")), 0) for r in rows], np.uint64),
                   start=[_int(r.get("start_timestamp")) for r in rows], end=[_int(r.get("end_timestamp")) for r in rows],
                   bytes=[max(_int(r.get("bytes")), 0) for r in rows], sub=sub)


def _samples(tr: M.GpuTrace, pid: int, rows: list[dict], stochastic: bool, dispatch_symbol: dict[int, int],
             entry_of: dict[int, dict[str, int]]) -> np.ndarray:
    n = len(rows)
    rec = [_obj(r, "record") or r for r in rows]
    pcs = [_obj(r, "pc") for r in rec]
    cid = np.array([_int(p.get("code_object_id"), -1) for p in pcs], np.int64)
    offset = np.array([_int(p.get("code_object_offset")) for p in pcs], np.int64)
    disp = [_int(r.get("dispatch_id")) for r in rec]
    corr = np.array([max(_int(r.get("corr_id", r.get("correlation_id"))), 0) for r in rec], np.uint64)
    sym = np.array([dispatch_symbol.get(d, -1) for d in disp], np.int64)
    made: dict[tuple[int, int], int] = {}
    for i in np.flatnonzero(sym < 0).tolist():  # a dispatch the records do not list: one kernel per code object
        key = (int(cid[i]), disp[i])
        if key not in made:
            made[key] = tr.symbol(M.KernelSymbol(f"<kernel of dispatch {disp[i]}>"))
        sym[i] = made[key]
    entry = np.array([tr.symbols[s].entry if tr.symbols[s].entry is not None else 0 for s in sym.tolist()], np.int64)
    if np.any(offset < entry):
        raise FormatError(tr.path, "a PC sample lies before its kernel's entry in the code object")
    stall = np.full(n, M.NO_STALL_INFO, np.uint8)
    if stochastic:
        for i, r in enumerate(rec):
            snap = _obj(r, "snapshot")
            if _int(r.get("wave_issued")):
                stall[i] = M.ST_NONE
            else:
                reason = str(snap.get("stall_reason", "")).removeprefix(STALL_REASON_PREFIX)
                stall[i] = stall_class("amd", reason) if reason else M.NO_STALL_INFO
    return M.table(M.SAMPLE_DTYPE, n, process=pid, corr=corr, symbol=sym, pc=offset - entry, stall=stall,
                   samples=1, stall_samples=(stall != M.NO_STALL_INFO).astype(np.uint64))




register(VendorReader(name="rocprofv3-json", label="rocprofv3 JSON", what="rocprofv3 JSON output", rank=58,
                      recognise=recognise, read=lambda paths: read(paths[0])))
