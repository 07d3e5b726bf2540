"""OTF2 trace archives (Score-P; rocprofv3 ``--output-format otf2``): the GPU activity, read through the
``otf2`` package (the OTF2 library's own Python bindings, PyPI ``otf2``; see the OTF2 documentation for the
definitions and events used here).

An archive is its anchor file (``traces.otf2``, recognised by the ``OTF2`` string of its header) with the
global definitions (``traces.def``) and one event file per location (``traces/<location>.evt``) beside it.

* Locations of type CPU_THREAD are the host threads of a process (location group of type PROCESS; its
  ProgramBegin ``ProcessId`` attribute, where present, is the pid; with several such groups, as in an MPI run,
  a group's position is its rank). Locations of type GPU/ACCELERATOR_STREAM are the device's streams, in
  location groups of type ACCELERATOR (one per device: ``HIP Context 0`` under the ``ROCm Device`` node ``0``).
* On a host thread, Enter/Leave give the call path: a region of a GPU paradigm (HIP, CUDA, OpenCL,
  OpenACC, OpenMP target) is an API call, the regions open around it (``main``, device stubs, user functions;
  not the measurement system's own) its call stack. Calls of the ALLOCATE/DEALLOCATE roles with an
  ``ALLOCATION_SIZE``/``DEALLOCATION_SIZE`` attribute are allocations; the calls that wait
  (``*Synchronize``) are the synchronizations, as for the other AMD sources.
* On a device stream, an Enter/Leave of a KERNEL region (or any region of a GPU paradigm) is a kernel, of a
  DATA_TRANSFER region a copy; RMA put/get events with their byte counts are copies too (Score-P's model of
  device copies), the direction taken from the host call's name where it says.
* A device operation is joined to its host call by Score-P's ``callsite id`` parameter (recorded in the launch
  call and at the kernel's start, ``SCOREP_HIP_ENABLE=kernel_callsite``); without it, an operation has no call.

Times are timer ticks: ns = (t - global_offset) x 10^9 / timer_resolution, plus the realtime timestamp of
the global offset where the archive records one (then UTC). An archive without GPU locations or GPU
activity is refused: there is nothing to ingest.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import zlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from hpcsa.core.errors import FormatError, UnsupportedError
from hpcsa.ingest import model as M
from hpcsa.ingest.vendors import Probe, VendorReader, register
from hpcsa.ingest.vendors.rocpd import waits_as_sync_ops

GPU_PARADIGMS = {"HIP", "CUDA", "OPENCL", "OPENACC", "OPENMP_TARGET"}
SKIPPED_PARADIGMS = {"MEASUREMENT_SYSTEM"}
NO_REALTIME = (1 << 64) - 1
_COPY_DIR = ((re.compile(r"HtoD|HostToDevice|H2D", re.I), M.CP_H2D), (re.compile(r"DtoH|DeviceToHost|D2H", re.I), M.CP_D2H),
             (re.compile(r"DtoD|DeviceToDevice|D2D|Peer", re.I), M.CP_D2D))


def recognise(probe: Probe) -> bool:
    """An OTF2 anchor file: the chunk's endianness mark (``B``/``L``) then ``OTF2``."""
    return len(probe.head) >= 6 and probe.head[1:2] in (b"B", b"L") and probe.head[2:6] == b"OTF2"


@contextlib.contextmanager
def _library_messages_silenced() -> Iterator[None]:
    """The OTF2 library prints its errors to the process's stderr (file descriptor 2) before it returns them;
    the reader reports them itself, in one line, so they are kept off the terminal while it reads."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _enum(value: Any) -> str:
    return str(getattr(value, "name", value)).rsplit(".", 1)[-1]


def _device_op(role: str, paradigm: str) -> int:
    """The operation a region entered on a device stream is (0: none): Score-P marks kernels KERNEL; the
    rocprofv3 OTF2 writer marks them FUNCTION (paradigm HIP), copies DATA_TRANSFER, allocations ALLOCATE."""
    if role == "DATA_TRANSFER":
        return M.MEMCPY
    if role in ("ALLOCATE", "REALLOCATE"):
        return M.ALLOC
    if role == "DEALLOCATE":
        return M.FREE
    if role == "KERNEL" or (paradigm in GPU_PARADIGMS and role in ("FUNCTION", "WRAPPER", "CODE", "UNKNOWN")):
        return M.KERNEL
    return 0


def _copy_dir(name: str) -> int:
    return next((k for pattern, k in _COPY_DIR if pattern.search(name)), M.CP_UNK)


class _Builder:
    """Rows collected while the events are read (turned into the model's tables once)."""

    def __init__(self, tr: M.GpuTrace) -> None:
        self.tr = tr
        self.apis: list[tuple[int, int, str, int, int, int, int]] = []  # pid, tid, name, start, end, corr, stack
        self.ops: list[tuple[int, int, int, int, int, int, int, str, int, int]] = []
        # kind, process group, device, stream, corr, start, end, name, bytes, sub
        self.stack_ids: dict[tuple[str, ...], int] = {}

    def stack(self, frames: tuple[str, ...], call: str) -> int:
        key = frames + (call,)
        if key not in self.stack_ids:
            self.tr.stacks.append(tuple(M.Frame("[OTF2 regions]", M.named_address(f), f) for f in frames)
                                  + (M.Frame(M.API_FRAME, 0, call),))
            self.stack_ids[key] = len(self.tr.stacks) - 1
        return self.stack_ids[key]


def read(path: str) -> M.GpuTrace:
    try:
        import otf2  # type: ignore[import-untyped]  # the OTF2 library's bindings (PyPI "otf2")
    except ImportError:
        raise UnsupportedError(path, "an OTF2 archive: reading it needs the otf2 package (pip install otf2, or "
                               "hpcsa[otf2])") from None
    try:
        with _library_messages_silenced(), otf2.reader.open(path) as archive:
            return _read(path, archive)
    except (FormatError, UnsupportedError):
        raise
    except Exception as exc:  # noqa: BLE001 - the library raises its own types for damaged archives
        raise FormatError(path, f"the OTF2 library cannot read this archive ({type(exc).__name__}: "
                          f"{str(exc).splitlines()[0][:160] if str(exc) else ''})") from None


def _read(path: str, archive: Any) -> M.GpuTrace:
    defs = archive.definitions
    clock = defs.clock_properties
    resolution = int(getattr(clock, "timer_resolution", 0) or 0)
    if resolution <= 0:
        raise FormatError(path, "the archive's clock properties give no timer resolution")
    offset = int(getattr(clock, "global_offset", 0) or 0)
    realtime = int(getattr(clock, "realtime_timestamp", NO_REALTIME) or 0)
    utc = realtime not in (0, NO_REALTIME)
    base = realtime if utc else 0

    def ns(t: int) -> int:
        return base + (int(t) - offset) * 10**9 // resolution

    groups = list(defs.location_groups)
    processes = [g for g in groups if _enum(g.location_group_type) == "PROCESS"]
    accel = [g for g in groups if _enum(g.location_group_type) == "ACCELERATOR"]
    locations = list(defs.locations)
    gpu_locs = [loc for loc in locations if _enum(loc.type) in ("GPU", "ACCELERATOR_STREAM")]
    regions = list(defs.regions)
    gpu_work = any(_enum(r.region_role) in ("KERNEL", "DATA_TRANSFER") and _enum(r.paradigm) in GPU_PARADIGMS
                   for r in regions)
    if not gpu_locs or not gpu_work:
        raise FormatError(path, "an OTF2 archive without GPU activity (no accelerator locations or kernel/transfer "
                          "regions): nothing to ingest")
    paradigms = {_enum(r.paradigm) for r in regions} & GPU_PARADIGMS
    domain = "HIP" if "HIP" in paradigms else "CUDA" if "CUDA" in paradigms else sorted(paradigms)[0]
    tr = M.GpuTrace(source="OTF2 archive" + (f" ({archive.creator})" if getattr(archive, "creator", "") else ""),
                    path=path, clock="OTF2 timer ticks / timer_resolution" + (" + realtime" if utc else ""),
                    api_domain=domain, utc=utc)
    proc_index = {id(g): i for i, g in enumerate(processes)}
    pid_of = {id(g): i for i, g in enumerate(processes)}

    def owner(group: Any) -> Any:
        creator = getattr(group, "creating_location_group", None)
        return creator if creator is not None else (processes[0] if processes else group)

    device_of = {id(g): _device(g, i) for i, g in enumerate(accel)}
    stream_of: dict[int, int] = {}
    for loc in gpu_locs:
        m = re.search(r":(\d+)\]?$", str(loc.name))
        stream_of[id(loc)] = int(m.group(1)) if m else len([x for x in stream_of if x])
    b = _Builder(tr)
    open_regions: dict[int, list[tuple[Any, int]]] = {}
    open_call: dict[int, list] = {}
    open_op: dict[int, list[list | None]] = {}
    last_param: dict[int, int] = {}
    next_corr = [1 << 40]  # ids for calls without a callsite parameter
    # Each location's definition declares how many events it holds; a damaged event file can make the OTF2
    # library read on through garbage without end, so reading stops with an error past the declared total.
    declared = sum(int(getattr(loc, "number_of_events", 0) or 0) for loc in defs.locations)
    seen = 0
    for loc, ev in archive.events:
        seen += 1
        if declared and seen > declared:
            raise FormatError(path, f"more events than the archive's location definitions declare ({declared}): "
                              "an event file is damaged")
        kind = type(ev).__name__
        lid = id(loc)
        is_gpu = _enum(loc.type) in ("GPU", "ACCELERATOR_STREAM")
        group = loc.group
        if kind == "ProgramBegin":
            attrs = {a.name: v for a, v in (getattr(ev, "attributes", None) or {}).items()}
            if "ProcessId" in attrs and id(group) in pid_of:
                pid_of[id(group)] = int(attrs["ProcessId"])
            continue
        if kind.startswith("Parameter") and getattr(ev, "parameter", None) is not None:
            if str(ev.parameter.name) == "callsite id":
                value = int(ev.value)
                if is_gpu:
                    last_param[lid] = value
                    top = open_op.get(lid)
                    if top and top[-1] is not None:
                        top[-1][4] = value
                elif open_call.get(lid):
                    open_call[lid][-1][5] = value
            continue
        if kind in ("Enter", "Leave"):
            region = ev.region
            role, paradigm = _enum(region.region_role), _enum(region.paradigm)
            if is_gpu:
                ops = open_op.setdefault(lid, [])
                if kind == "Enter":
                    op_kind = _device_op(role, paradigm)
                    name = str(region.name)
                    sub = _copy_dir(name) if op_kind == M.MEMCPY else M.MK_DEV if op_kind in (M.ALLOC, M.FREE) else 0
                    ops.append([op_kind, id(owner(group)), device_of.get(id(group), 0), stream_of.get(lid, 0), 0,
                                ns(ev.time), 0, name, 0, sub] if op_kind else None)
                elif ops:
                    row = ops.pop()
                    if row is not None:
                        row[6] = ns(ev.time)
                        b.ops.append(tuple(row))
                continue
            stack = open_regions.setdefault(lid, [])
            if kind == "Enter":
                attrs = {a.name: v for a, v in (getattr(ev, "attributes", None) or {}).items()}
                opens = paradigm in GPU_PARADIGMS and not open_call.get(lid)  # the outermost GPU call is the call
                if opens:
                    frames = tuple(str(r.name) for r, _ in stack if _enum(r.paradigm) not in SKIPPED_PARADIGMS)
                    open_call.setdefault(lid, []).append(
                        [id(group), _thread(loc), str(region.name), ns(ev.time), 0, 0, frames, role,
                         int(attrs.get("ALLOCATION_SIZE", 0) or 0)])
                stack.append((region, opens))
            else:
                opened = stack.pop()[1] if stack else False
                calls = open_call.get(lid)
                if opened and calls:
                    row = calls.pop()
                    row[4] = ns(ev.time)
                    if not row[5]:
                        row[5] = next_corr[0]
                        next_corr[0] += 1
                    attrs = {a.name: v for a, v in (getattr(ev, "attributes", None) or {}).items()}
                    freed = int(attrs.get("DEALLOCATION_SIZE", 0) or 0)
                    b.apis.append((row[0], row[1], row[2], row[3], row[4], row[5], b.stack(row[6], row[2])))
                    if row[7] in ("ALLOCATE", "DEALLOCATE") and (row[8] or freed):
                        b.ops.append((M.ALLOC if row[8] else M.FREE, row[0], 0, -1, row[5], row[3], row[4],
                                      row[2], row[8] or freed, M.MK_DEV))
            continue
        if is_gpu and kind in ("RmaPut", "RmaGet"):
            nbytes = int(getattr(ev, "bytes", 0) or 0)
            t = ns(ev.time)
            b.ops.append((M.MEMCPY, id(owner(group)), device_of.get(id(group), 0), stream_of.get(lid, 0),
                          last_param.get(lid, 0), t, t, kind, nbytes, M.CP_UNK))
    return _finish(tr, b, processes, pid_of, proc_index)


def _device(group: Any, index: int) -> int:
    parent = getattr(group, "system_tree_parent", None)
    name = str(getattr(parent, "name", ""))
    if name.isdigit():
        return int(name)
    m = re.search(r"(\d+)\s*$", str(group.name))
    return int(m.group(1)) if m else index


def _thread(loc: Any) -> int:
    return int(getattr(loc, "_ref", 0) or 0)


def _finish(tr: M.GpuTrace, b: _Builder, processes: list, pid_of: dict[int, int], proc_index: dict[int, int]
            ) -> M.GpuTrace:
    pid = pid_of
    several = len(processes) > 1
    for g in processes:
        host_node = getattr(g, "system_tree_parent", None)
        hostname = str(getattr(host_node, "name", "") or "")
        p = pid[id(g)]
        tr.processes[p] = M.ProcessInfo(p, name=str(g.name), host=zlib.crc32(hostname.encode()) if hostname else 0,
                                        hostname=hostname, rank=proc_index[id(g)] if several else None,
                                        world=len(processes) if several else None)
    if b.apis:
        cols = list(zip(*b.apis, strict=True))
        tr.apis = M.table(M.API_DTYPE, len(b.apis), process=[pid.get(g, 0) for g in cols[0]], thread=cols[1],
                          name=tr.intern_many(list(cols[2])), start=cols[3], end=cols[4],
                          corr=np.array(cols[5], np.uint64), stack=cols[6])
    parts = []
    if b.ops:
        cols = list(zip(*b.ops, strict=True))
        procs = [pid.get(g, 0) for g in cols[1]]
        parts.append(M.table(M.OP_DTYPE, len(b.ops), kind=cols[0], process=procs, device=cols[2], context=cols[2],
                             stream=cols[3], corr=np.array(cols[4], np.uint64), start=cols[5], end=cols[6],
                             name=tr.intern_many(list(cols[7])), bytes=np.array(cols[8], np.uint64), sub=cols[9]))
    waits = waits_as_sync_ops(tr)
    if waits is not None:
        parts.append(waits)
    if parts:
        tr.ops = np.concatenate(parts)
    _copy_directions(tr)
    return tr


def _copy_directions(tr: M.GpuTrace) -> None:
    """Copies whose region or event does not name a direction take the one their host call names."""
    ops = tr.ops
    todo = np.flatnonzero((ops["kind"] == M.MEMCPY) & (ops["sub"] == M.CP_UNK) & (ops["corr"] != 0))
    if not len(todo) or not len(tr.apis):
        return
    k_o, k_a = M.pair_keys(ops["process"][todo], ops["corr"][todo], tr.apis["process"], tr.apis["corr"])
    hit = M.lookup(k_o, k_a)
    for i, h in zip(todo.tolist(), hit.tolist(), strict=True):
        if h >= 0:
            ops["sub"][i] = _copy_dir(tr.strings[int(tr.apis["name"][h])])


register(VendorReader(name="otf2", label="OTF2 archive (traces.otf2)", what="OTF2 archive", rank=5,
                      recognise=recognise, read=lambda paths: read(paths[0])))
