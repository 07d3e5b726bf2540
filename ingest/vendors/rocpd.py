"""rocpd SQLite databases, the default output of rocprofv3 since ROCm 7.0.

Physical tables carry a per-run GUID suffix; the plain-named views union them,
so the reader queries the views. API calls are ``rocpd_region`` rows; device
work (kernel dispatches, copies, allocations) links to its API call through
``rocpd_event.stack_id`` (rocprofiler-sdk's internal correlation id — rocpd's
``correlation_id`` column holds the *external* id). Times are CLOCK_BOOTTIME ns.
Grid sizes are work-items (HSA), converted to work-groups for the block counts.
Synchronization is taken from the HIP calls that wait (``hip*Synchronize``,
``hipStreamWaitEvent``): the host-side interval, as CUPTI reports it on NVIDIA.
Of the process environment (``rocpd_info_process.environment``) only the launcher's rank and size variables
are read (for the rank of a multi-process measurement); nothing of it is printed or kept.
"""

from __future__ import annotations

import json

import numpy as np

from hpcsa.core.errors import UnsupportedError
from hpcsa.ingest import model as M
from hpcsa.ingest.ranks import RANK_VARIABLES, WORLD_VARIABLES, rank_from_environment
from hpcsa.ingest.sqlsrc import Db
from hpcsa.ingest.vendors import Probe, VendorReader, register, sqlite_read

SUPPORTED_SCHEMAS = (1, 2, 3)
SYNC_APIS = (("StreamWaitEvent", M.SY_STRE), ("EventSynchronize", M.SY_EVT), ("StreamSynchronize", M.SY_STR),
             ("DeviceSynchronize", M.SY_CTX), ("CtxSynchronize", M.SY_CTX))
COPY_DIRECTION = {"HOST_TO_DEVICE": M.CP_H2D, "DEVICE_TO_HOST": M.CP_D2H, "DEVICE_TO_DEVICE": M.CP_D2D,
                  "HOST_TO_HOST": M.CP_H2H, "PEER_TO_PEER": M.CP_P2P}


def recognise(probe: Probe) -> bool:
    db = probe.db
    return db is not None and db.has("rocpd_metadata") and db.has("rocpd_kernel_dispatch") and db.has("rocpd_region")


def sync_kind(name: str) -> int | None:
    return next((k for w, k in SYNC_APIS if w in name), None)


def waits_as_sync_ops(tr: M.GpuTrace) -> np.ndarray | None:
    """The HIP calls that wait for the device (``hipDeviceSynchronize``, ``hipStreamSynchronize``, ...) as
    SYNC operations: AMD's tools time the waiting call, not a device activity, for every output format."""
    if not len(tr.apis):
        return None
    kind_of_name = np.array([255 if (k := sync_kind(s)) is None else k for s in tr.strings] + [255], np.uint8)
    api_kind = kind_of_name[tr.apis["name"]]
    rows = api_kind != 255
    if not np.any(rows):
        return None
    a = tr.apis[rows]
    return M.table(M.OP_DTYPE, len(a), kind=M.SYNC, process=a["process"], thread=a["thread"], corr=a["corr"],
                   start=a["start"], end=a["end"], sub=api_kind[rows])


def marker_ranges(tr: M.GpuTrace, markers: np.ndarray) -> np.ndarray:
    """roctx marker-API records (rocprofv3's ``MARKER_*`` domains) as ranges: those with a duration
    (``roctxRangePush``/``Pop`` on their thread; ``roctxRangeStart``/``Stop``, recorded with thread 0, for the
    whole process); marks (zero length) and the control/naming calls are not ranges."""
    rows = markers[markers["end"] > markers["start"]]
    return M.table(M.RANGE_DTYPE, len(rows), process=rows["process"],
                   thread=np.where(rows["thread"] > 0, rows["thread"], -1), start=rows["start"], end=rows["end"],
                   name=rows["name"])


def read(db: Db) -> M.GpuTrace:
    meta = dict(db.execute("SELECT tag, value FROM rocpd_metadata"))
    try:
        schema = int(meta.get("schema_version", 0))
    except ValueError:
        schema = -1
    if schema not in SUPPORTED_SCHEMAS:
        raise UnsupportedError(db.path, f"rocpd schema_version {meta.get('schema_version')!r} is not supported "
                               f"(hpcsa reads {', '.join(map(str, SUPPORTED_SCHEMAS))})")
    tr = M.GpuTrace(source=f"rocpd schema {schema}", path=db.path, clock="CLOCK_BOOTTIME ns", api_domain="HIP",
                    range_domain="roctx")
    tid = "COALESCE((SELECT t.tid FROM rocpd_info_thread t WHERE t.id = x.tid), x.tid)"
    c = db.columns_of(f"SELECT x.pid, {tid}, s.string, x.start, x.\"end\", e.stack_id, "
                      "COALESCE((SELECT k.string FROM rocpd_string k WHERE k.id = e.category_id), '') "
                      "FROM rocpd_region x JOIN rocpd_event e ON e.id = x.event_id "
                      "JOIN rocpd_string s ON s.id = x.name_id",
                      ["pid", "tid", "name", "start", "end", "corr", "category"])
    n = len(c["pid"])
    tr.apis = M.table(M.API_DTYPE, n, process=c["pid"], thread=c["tid"], name=tr.intern_many(c["name"]) if n else 0,
                      start=c["start"], end=c["end"], corr=c["corr"])
    markers = np.array([str(k).startswith("MARKER_") for k in c["category"]], bool)
    tr.ranges = marker_ranges(tr, tr.apis[markers])
    tr.apis = tr.apis[~markers]
    agent = {int(a): (str(t), int(ti)) for a, t, ti in db.execute(
        "SELECT id, type, type_index FROM rocpd_info_agent")}
    parts = [_kernels(db, tr, agent, tid), _copies(db, agent, tid), _allocations(db, agent, tid)]
    parts.append(waits_as_sync_ops(tr))
    tables = [p for p in parts if p is not None and len(p)]
    if tables:
        tr.ops = np.concatenate(tables)
    env = "environment" if "environment" in db.columns("rocpd_info_process") else "NULL"
    for pid, nid, command, environment in db.execute(f"SELECT pid, nid, command, {env} FROM rocpd_info_process"):
        cmd = str(command or "").split(" ")[0]
        rank, world = _launcher_rank(environment)
        tr.processes[int(pid)] = M.ProcessInfo(int(pid), name=cmd.rsplit("/", 1)[-1], path=cmd,
                                               host=int(nid or 0) & 0xFFFFFFFF, rank_hint=rank, world=world)
    return tr


def _launcher_rank(environment: object) -> tuple[int | None, int | None]:
    """(rank, world size) from the launcher's variables in a process's recorded environment (a JSON object);
    nothing else of the environment is looked at or kept."""
    try:
        variables = json.loads(str(environment)) if environment else {}
    except (ValueError, RecursionError):
        return None, None
    if not isinstance(variables, dict):
        return None, None
    wanted = set(RANK_VARIABLES) | set(WORLD_VARIABLES)
    return rank_from_environment({k: str(v) for k, v in variables.items() if k in wanted})


def _device(agent: dict, ids: np.ndarray) -> np.ndarray:
    """Agent ids -> GPU type index (the HIP device number), looked up once per distinct agent."""
    uniq, inv = np.unique(np.asarray(ids, np.int64), return_inverse=True)
    return np.array([agent.get(int(a), ("", int(a)))[1] for a in uniq], np.int64)[inv.reshape(-1)]


def _kernels(db: Db, tr: M.GpuTrace, agent: dict, tid: str) -> np.ndarray | None:
    c = db.columns_of(
        f"SELECT x.pid, {tid}, x.agent_id, x.queue_id, COALESCE(x.stream_id, -1), x.start, x.\"end\", e.stack_id, "
        "k.kernel_name, k.code_object_id, x.private_segment_size, x.group_segment_size, "
        "x.workgroup_size_x, x.workgroup_size_y, x.workgroup_size_z, x.grid_size_x, x.grid_size_y, "
        "x.grid_size_z, COALESCE(k.arch_vgpr_count, 0), x.kernel_id "
        "FROM rocpd_kernel_dispatch x JOIN rocpd_event e ON e.id = x.event_id "
        "LEFT JOIN rocpd_info_kernel_symbol k ON k.id = x.kernel_id",
        ["pid", "tid", "agent", "queue", "stream", "start", "end", "corr", "name", "code", "priv", "lds",
         "wx", "wy", "wz", "gx", "gy", "gz", "vgpr", "kid"])
    n = len(c["pid"])
    if not n:
        return None
    wg = [np.maximum(c[k], 1) for k in ("wx", "wy", "wz")]
    blocks = np.prod([-(-np.maximum(c[g], 0) // w) for g, w in zip(("gx", "gy", "gz"), wg, strict=True)], axis=0)
    threads = wg[0] * wg[1] * wg[2]
    work_items = np.maximum(c["gx"], 0) * np.maximum(c["gy"], 0) * np.maximum(c["gz"], 0)
    sym_of: dict[int, int] = {}
    for kid, name, code in zip(c["kid"].tolist(), c["name"].tolist(), c["code"].tolist(), strict=True):
        if kid not in sym_of:
            sym_of[kid] = tr.symbol(M.KernelSymbol(str(name), int(code or -1)))
    names = np.array([str(x) for x in c["name"]], dtype=object)
    stream = np.where(c["stream"] >= 0, c["stream"], c["queue"])
    return M.table(M.OP_DTYPE, n, kind=M.KERNEL, process=c["pid"], thread=c["tid"], device=_device(agent, c["agent"]),
                   context=_device(agent, c["agent"]), stream=stream, corr=c["corr"], start=c["start"], end=c["end"],
                   name=tr.intern_many(names), blocks=blocks, block_threads=threads, regs=c["vgpr"],
                   smem_dynamic=c["lds"], local_total=c["priv"] * work_items,
                   code=[sym_of[k] for k in c["kid"].tolist()])


def _copies(db: Db, agent: dict, tid: str) -> np.ndarray | None:
    c = db.columns_of(f"SELECT x.pid, {tid}, x.src_agent_id, x.dst_agent_id, COALESCE(x.queue_id, -1), "
                      "COALESCE(x.stream_id, -1), x.start, x.\"end\", e.stack_id, x.size, s.string "
                      "FROM rocpd_memory_copy x JOIN rocpd_event e ON e.id = x.event_id "
                      "LEFT JOIN rocpd_string s ON s.id = x.name_id",
                      ["pid", "tid", "src", "dst", "queue", "stream", "start", "end", "corr", "bytes", "name"])
    n = len(c["pid"])
    if not n:
        return None
    sub = [next((v for k, v in COPY_DIRECTION.items() if k in str(nm)), M.CP_UNK) for nm in c["name"]]
    dev = np.where(np.array([agent.get(int(a), ("GPU", 0))[0] == "GPU" for a in c["dst"]]),
                   _device(agent, c["dst"]), _device(agent, c["src"]))
    return M.table(M.OP_DTYPE, n, kind=M.MEMCPY, process=c["pid"], thread=c["tid"], device=dev, context=dev,
                   stream=np.where(c["stream"] >= 0, c["stream"], c["queue"]), corr=c["corr"], start=c["start"],
                   end=c["end"], bytes=c["bytes"], sub=sub)


def _allocations(db: Db, agent: dict, tid: str) -> np.ndarray | None:
    c = db.columns_of(f"SELECT x.pid, {tid}, COALESCE(x.agent_id, -1), x.type, x.start, x.\"end\", e.stack_id, "
                      "x.size FROM rocpd_memory_allocate x JOIN rocpd_event e ON e.id = x.event_id",
                      ["pid", "tid", "agent", "type", "start", "end", "corr", "bytes"])
    n = len(c["pid"])
    if not n:
        return None
    kind = np.where(np.array(["FREE" in str(t) for t in c["type"]]), M.FREE, M.ALLOC)
    on_gpu = np.array([agent.get(int(a), ("", 0))[0] == "GPU" for a in c["agent"]])
    return M.table(M.OP_DTYPE, n, kind=kind, process=c["pid"], thread=c["tid"], device=_device(agent, c["agent"]),
                   corr=c["corr"], start=c["start"], end=c["end"], bytes=c["bytes"],
                   sub=np.where(on_gpu, M.MK_DEV, M.MK_UNK))


register(VendorReader(name="rocpd", label="rocpd", what="rocpd database", rank=30, sqlite=True,
                      recognise=recognise, read=sqlite_read(read)))
