"""PyTorch profiler (Kineto) traces: Chrome trace JSON, plain or gzip, from CUPTI (CUDA) or roctracer (ROCm).

Complete events (``"ph": "X"``) carry a category: ``cuda_runtime``/``cuda_driver``
are the API calls (HIP calls in ROCm traces), ``kernel``, ``gpu_memcpy``,
``gpu_memset`` and ``cuda_sync`` the device activities, linked to their call by
``args.correlation``; ``cpu_op`` are PyTorch operators, ``python_function`` the
Python frames (``with_stack=True``) and ``user_annotation`` the
``record_function`` ranges (``ProfilerStep#N`` included). Times are microseconds
(fractions to the nanosecond), relative to ``baseTimeNanoseconds`` where the
trace has it. See the PyTorch profiler documentation (torch.profiler) and
Kineto's ``output_json.cpp`` for the layout.

A call's context is the Python frames and operators whose intervals enclose it
on its thread, outermost first, above the call; the ``record_function`` ranges
become ``<range>`` frames (see :mod:`hpcsa.ingest.ranges`). ROCm traces: copies carry no byte
count, it is taken from the call's ``size`` argument; kernels' grid and block
are on the call; the HIP calls that wait are the synchronizations (as for the
other AMD sources), CUDA traces have ``cuda_sync`` records for them.
"""

from __future__ import annotations

import gzip
import json
import re
import zlib
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import cast

import numpy as np

from hpcsa.core.errors import FormatError, UnsupportedError
from hpcsa.ingest import model as M
from hpcsa.ingest.graphs import find_captures
from hpcsa.ingest.ranges import open_sets
from hpcsa.ingest.vendors import Probe, VendorReader, register
from hpcsa.ingest.vendors.rocpd import waits_as_sync_ops

SUPPORTED_SCHEMAS = (1,)
#: Times (ns) that read as the Unix epoch (2001-09 .. 2096-10): CUPTI's default clock is CLOCK_REALTIME, and
#: ROCm traces give ``baseTimeNanoseconds`` to add; anything else is a clock of its own.
EPOCH_NS_RANGE = (10**18, 4 * 10**18)
_MAX_US = Decimal(2) ** 62 / 1000  # times stay int64 ns
GZIP_MAGIC = b"\x1f\x8b"
API_CATS = {"cuda_runtime", "cuda_driver", "runtime", "driver"}
FRAME_CATS = {"python_function": "[Python]", "cpu_op": "[PyTorch operators]", "operator": "[PyTorch operators]"}
_COPY = {"HtoD": M.CP_H2D, "DtoH": M.CP_D2H, "DtoD": M.CP_D2D, "HtoH": M.CP_H2H, "PtoP": M.CP_P2P}
_COPY_RE = re.compile(r"\b([HDP])to([HDP])\b")
_MEMSET_KIND = {"device": M.MK_DEV, "pageable": M.MK_PAG, "pinned": M.MK_PIN, "array": 4, "managed": 5}
_SYNC = {"event sync": M.SY_EVT, "stream wait event": M.SY_STRE, "stream sync": M.SY_STR, "context sync": M.SY_CTX}
#: HIP launch calls whose grid is given in work-items, not blocks (HIP's module-launch API).
_WORK_ITEM_GRID = ("hipExtModuleLaunchKernel", "hipHccModuleLaunchKernel")


def _open_head(path: str, head: bytes) -> bytes:
    if not head.startswith(GZIP_MAGIC):
        return head
    try:
        with gzip.open(path, "rb") as fh:
            return fh.read(4096)
    except (OSError, EOFError, zlib.error):
        return b""


def recognise(probe: Probe) -> bool:
    """A Kineto trace: a JSON object with ``traceEvents`` and Kineto's ``schemaVersion`` or device table."""
    text = _open_head(probe.path, probe.head).lstrip()[:4096].decode("utf-8", errors="replace")
    if not text.startswith("{"):
        return False
    if '"traceEvents"' not in text:
        # Kineto writes its metadata first: a long device table or process-group list (distributedInfo)
        # can push the events past the head.
        return '"schemaVersion"' in text and ('"deviceProperties"' in text or '"distributedInfo"' in text)
    return any(mark in text for mark in ('"schemaVersion"', '"deviceProperties"', '"cuda_runtime"', '"cpu_op"'))


def _load(path: str) -> dict:
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
        if raw.startswith(GZIP_MAGIC):
            raw = gzip.decompress(raw)
        doc = json.loads(raw, parse_float=str)
    except (OSError, EOFError, zlib.error) as exc:
        raise FormatError(path, f"cannot decompress the Kineto trace ({exc})") from None
    except (ValueError, UnicodeError, RecursionError) as exc:
        raise FormatError(path, f"not valid JSON ({str(exc).splitlines()[0][:120]})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise FormatError(path, "a JSON document without a traceEvents list: not a PyTorch profiler trace")
    version = doc.get("schemaVersion", 1)
    if version not in SUPPORTED_SCHEMAS or isinstance(version, bool):
        raise UnsupportedError(path, f"Kineto trace schemaVersion {version!r} is not supported (hpcsa reads "
                               f"{', '.join(map(str, SUPPORTED_SCHEMAS))})")
    return doc


def to_ns(value: object) -> int:
    """Kineto microseconds (an int, or the decimal text of a float, kept exact) -> integer ns."""
    if isinstance(value, bool) or value is None:
        raise ValueError(f"time value {value!r}")
    if isinstance(value, int):
        return value * 1000
    if not isinstance(value, str):
        raise ValueError(f"time value {value!r}")
    whole, dot, frac = value.partition(".")
    if dot and whole.lstrip("-").isdigit() and frac.isdigit() and len(whole) < 16:
        # The common form, exact without Decimal: round half up at the nanosecond.
        ns = int(whole.lstrip("-")) * 1000 + int((frac + "000")[:3]) + (frac[3:4] >= "5")
        return -ns if whole.startswith("-") else ns
    try:
        us = Decimal(value)
    except InvalidOperation:
        raise ValueError(f"time value {value!r} is not a number") from None
    if not us.is_finite() or abs(us) >= _MAX_US:
        raise ValueError(f"time value {value!r} is out of range")
    return int((us * 1000).to_integral_value(rounding=ROUND_HALF_UP))


def _int(value: object, default: int = -1) -> int:
    if isinstance(value, bool) or value is None:
        return default
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value, 0)
        except ValueError:
            try:
                return int(Decimal(value))
            except (InvalidOperation, ValueError):
                return default
    return default


def _dims(value: object) -> tuple[int, int, int]:
    if isinstance(value, list) and len(value) == 3:
        return cast(tuple[int, int, int], tuple(max(_int(v, 0), 0) for v in value))  # three, checked above
    return (0, 0, 0)


class _Events:
    """The trace's complete events, sorted by role (rows of Python values, turned into columns once)."""

    def __init__(self) -> None:
        self.apis: list[tuple] = []  # pid, tid, name, start, end, corr, args
        self.ops: list[tuple] = []  # cat, name, device, stream, context, corr, start, end, args
        self.frames: list[tuple] = []  # pid, tid, module, name, start, end
        self.ranges: list[tuple] = []  # pid, tid, name, start, end
        self.process_names: dict[int, str] = {}


def _collect(doc: dict, path: str) -> _Events:
    base = _int(doc.get("baseTimeNanoseconds"), 0)
    out = _Events()
    for ev in doc["traceEvents"]:
        if not isinstance(ev, dict):
            raise FormatError(path, "a traceEvents entry is not a JSON object")
        ph = ev.get("ph")
        if ph == "M" and ev.get("name") == "process_name" and isinstance(ev.get("pid"), int):
            raw_args = ev.get("args")
            args = raw_args if isinstance(raw_args, dict) else {}
            out.process_names.setdefault(ev["pid"], str(args.get("name", "")))
            continue
        if ph != "X":
            continue
        pid, tid = ev.get("pid"), ev.get("tid")
        if not isinstance(pid, int) or not isinstance(tid, int) or isinstance(pid, bool):
            continue  # the profiler's own spans ("Spans", "Traces")
        cat = str(ev.get("cat", "")).lower()
        name = str(ev.get("name", ""))
        start = to_ns(ev.get("ts")) + base
        end = start + max(to_ns(ev.get("dur", 0)), 0)
        raw_args = ev.get("args")
        args = raw_args if isinstance(raw_args, dict) else {}
        if cat in API_CATS:
            out.apis.append((pid, tid, name, start, end, _int(args.get("correlation"), 0), args))
        elif cat in ("kernel", "gpu_memcpy", "memcpy", "gpu_memset", "memset", "cuda_sync"):
            out.ops.append((cat, name, _int(args.get("device"), pid), _int(args.get("stream"), tid),
                            _int(args.get("context"), -1), _int(args.get("correlation"), 0), start, end, args))
        elif cat in FRAME_CATS:
            out.frames.append((pid, tid, FRAME_CATS[cat], name, start, end))
        elif cat == "user_annotation":
            out.ranges.append((pid, tid, name, start, end))
    return out


def read(path: str) -> M.GpuTrace:
    doc = _load(path)
    ev = _collect(doc, path)
    hip = any(a[2].startswith("hip") for a in ev.apis)
    tr = M.GpuTrace(source=f"Kineto trace schema {doc.get('schemaVersion', 1)} ({'ROCm' if hip else 'CUDA'})",
                    path=path, clock="Kineto us -> ns" + (" + baseTimeNanoseconds" if "baseTimeNanoseconds" in doc
                                                         else ""),
                    api_domain="HIP" if hip else "CUDA", range_domain="PyTorch")
    n = len(ev.apis)
    cols = list(zip(*ev.apis, strict=True)) if n else [()] * 7
    tr.apis = M.table(M.API_DTYPE, n, process=np.array(cols[0], np.int64), thread=np.array(cols[1], np.int64),
                      name=tr.intern_many(list(cols[2])) if n else 0, start=np.array(cols[3], np.int64),
                      end=np.array(cols[4], np.int64), corr=np.array(cols[5], np.int64).astype(np.uint64))
    _stacks(tr, ev)
    tr.captures = find_captures(tr, [str(a[6].get("kernel", "")) for a in ev.apis])
    cpu_pids = sorted({a[0] for a in ev.apis} | {f[0] for f in ev.frames})
    main_pid = cpu_pids[0] if cpu_pids else 0
    api_of = {int(c): i for i, c in enumerate(cols[5]) if c}
    ops = _ops(tr, ev, api_of, main_pid)
    parts = [ops]
    if hip and not any(o[0] == "cuda_sync" for o in ev.ops):
        parts.append(waits_as_sync_ops(tr))
    tables = [p for p in parts if p is not None and len(p)]
    if tables:
        tr.ops = np.concatenate(tables)
    if ev.ranges:
        r = list(zip(*ev.ranges, strict=True))
        tr.ranges = M.table(M.RANGE_DTYPE, len(ev.ranges), process=np.array(r[0], np.int64),
                            thread=np.array(r[1], np.int64), start=np.array(r[3], np.int64),
                            end=np.array(r[4], np.int64), name=tr.intern_many(list(r[2])))
    raw_dist = doc.get("distributedInfo")
    dist: dict = raw_dist if isinstance(raw_dist, dict) else {}
    rank, world = _int(dist.get("rank"), -1), _int(dist.get("world_size"), -1)
    for pid in sorted(set(cpu_pids) | set(tr.ops["process"].tolist())):
        name = ev.process_names.get(pid, "")
        tr.processes[pid] = M.ProcessInfo(pid, name=name, path=name, rank=rank if rank >= 0 else None,
                                          world=world if world > 0 else None)
    times = tr.ops["start"] if len(tr.ops) else tr.apis["start"]
    tr.utc = bool(len(times)) and EPOCH_NS_RANGE[0] <= int(times.min()) < EPOCH_NS_RANGE[1]
    _devices(tr, doc)
    return tr


def _stacks(tr: M.GpuTrace, ev: _Events) -> None:
    """Each call's enclosing Python frames and operators on its thread, outermost first, above the call."""
    if not ev.frames or not len(tr.apis):
        return
    fr = list(zip(*ev.frames, strict=True))
    f_pid, f_tid = np.array(fr[0], np.int64), np.array(fr[1], np.int64)
    f_start, f_end = np.array(fr[4], np.int64), np.array(fr[5], np.int64)
    # Events with the same module and name are the same frame: stacks are interned by frame content.
    kinds = {(mod, name): i for i, (mod, name) in enumerate(sorted(set(zip(fr[2], fr[3], strict=True))))}
    frames = [M.Frame(mod, M.named_address(name), name) for mod, name in kinds]
    frame_of = np.array([kinds[(m, n)] for m, n in zip(fr[2], fr[3], strict=True)], np.int64)
    apis = tr.apis
    made: dict[tuple[tuple[int, ...], int], int] = {}
    keys = np.stack([apis["process"], apis["thread"]], axis=1)
    threads, inv = np.unique(keys, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    for ti, (pid, tid) in enumerate(threads.tolist()):
        mine_f = np.flatnonzero((f_pid == pid) & (f_tid == tid))
        if not len(mine_f):
            continue
        calls = np.flatnonzero(inv == ti)
        times, sets = open_sets(f_start[mine_f], f_end[mine_f])
        seg = np.searchsorted(times, apis["start"][calls], side="right")
        uniq, u_inv = np.unique(np.stack([seg, apis["name"][calls]], axis=1), axis=0, return_inverse=True)
        out = np.full(len(uniq), -1, np.int64)
        for ui, (s, name) in enumerate(uniq.tolist()):
            open_ = tuple(int(frame_of[mine_f[k]]) for k in sets[s])
            if not open_:
                continue
            if (open_, name) not in made:
                tr.stacks.append(tuple(frames[k] for k in open_) + (M.Frame(M.API_FRAME, 0, tr.strings[name]),))
                made[(open_, name)] = len(tr.stacks) - 1
            out[ui] = made[(open_, name)]
        apis["stack"][calls] = out[u_inv.reshape(-1)]


def _copy_kind(name: str, args: dict) -> int:
    kind = args.get("kind")
    if isinstance(kind, str) and kind in _COPY:
        return _COPY[kind]
    m = _COPY_RE.search(name)
    return _COPY.get(f"{m.group(1)}to{m.group(2)}", M.CP_UNK) if m else M.CP_UNK


def _ops(tr: M.GpuTrace, ev: _Events, api_of: dict[int, int], main_pid: int) -> np.ndarray | None:
    rows = []
    for cat, name, dev, stream, ctx, corr, start, end, args in ev.ops:
        ai = api_of.get(corr, -1) if corr else -1
        call = ev.apis[ai] if ai >= 0 else None
        cargs = call[6] if call else {}
        pid = call[0] if call else main_pid
        kind, sub, nbytes, blocks, bthreads, regs, smem = M.KERNEL, 0, 0, 0, 0, 0, 0
        if cat == "kernel":
            grid = _dims(args.get("grid") if "grid" in args else cargs.get("grid"))
            block = _dims(args.get("block") if "block" in args else cargs.get("block"))
            if call and call[2] in _WORK_ITEM_GRID and "grid" not in args:
                grid = cast(tuple[int, int, int],
                            tuple(-(-g // max(b, 1)) for g, b in zip(grid, block, strict=True)))
            blocks, bthreads = grid[0] * grid[1] * grid[2], block[0] * block[1] * block[2]
            regs = max(_int(args.get("registers per thread"), 0), 0)
            smem = max(_int(args.get("shared memory", cargs.get("shared memory")), 0), 0)
        elif cat in ("gpu_memcpy", "memcpy"):
            kind, sub = M.MEMCPY, _copy_kind(name, args)
            nbytes = _int(args.get("bytes"), -1)
            if nbytes < 0:
                nbytes = _int(cargs.get("size", cargs.get("sizeBytes")), 0)
        elif cat in ("gpu_memset", "memset"):
            kind = M.MEMSET
            low = name.lower()
            sub = next((v for k, v in _MEMSET_KIND.items() if f"({k}" in low), M.MK_UNK)
            nbytes = _int(args.get("bytes"), -1)
            if nbytes < 0:
                nbytes = _int(cargs.get("size", cargs.get("sizeBytes")), 0)
        else:
            kind = M.SYNC
            sub = _SYNC.get(str(args.get("cuda_sync_kind", name)).lower(), M.SY_UNK)
            stream = _int(args.get("stream"), -1)
        rows.append((kind, pid, dev, ctx, stream, corr, start, end, tr.intern(name), max(nbytes, 0), sub,
                     blocks, bthreads, regs, smem))
    if not rows:
        return None
    c = [np.array(col, np.int64) for col in zip(*rows, strict=True)]
    return M.table(M.OP_DTYPE, len(rows), kind=c[0], process=c[1], device=c[2], context=c[3], stream=c[4],
                   corr=c[5].astype(np.uint64), start=c[6], end=c[7], name=c[8], bytes=c[9].astype(np.uint64),
                   sub=c[10], blocks=c[11], block_threads=c[12], regs=c[13], smem_static=c[14])


def _devices(tr: M.GpuTrace, doc: dict) -> None:
    props = doc.get("deviceProperties")
    if not isinstance(props, list):
        return
    pids = set(tr.processes)
    for p in props:
        if not isinstance(p, dict):
            continue
        warp = _int(p.get("warpSize"), 0)
        out = {"warp": float(warp), "sm_count": float(_int(p.get("numSms"), 0))}
        if warp > 0:
            out["max_warps_per_sm"] = float(_int(p.get("maxThreadsPerMultiprocessor"), 0) // warp)
        regs = _int(p.get("regsPerMultiprocessor"), 0)
        smem = _int(p.get("sharedMemPerMultiprocessor", p.get("maxSharedMemoryPerMultiProcessor")), 0)
        if regs > 0:
            out["regs_per_sm"] = float(regs)
        if smem > 0:
            out["smem_per_sm"] = float(smem)
        for pid in pids:
            tr.devices[(pid, _int(p.get("id"), 0))] = out


register(VendorReader(name="kineto", label="PyTorch profiler/Kineto JSON", what="PyTorch profiler (Kineto) trace",
                      rank=60, recognise=recognise, read=lambda paths: read(paths[0])))
