"""Nsight Systems SQLite exports (``nsys export --type sqlite``), every schema from the legacy
pre-metadata exports through 3.25 (Nsight Systems 2026.2).

Times are ns from the session start; ``TARGET_INFO_SESSION_START_TIME.utcEpochNs``
moves them to the Unix epoch when present. Runtime and driver API calls are both
in ``CUPTI_ACTIVITY_KIND_RUNTIME``; 2022.x exports with ``--cudabacktrace`` add a
second row per call (event class 67) that carries the CUDA_CALLCHAINS id, and in
those exports the chain ids are shifted by one against ``callchainId`` — the
shift is detected by matching each chain's runtime-library frame to the API name.
Where an API call has no chain, the CPU sample taken on the same thread during
the call (COMPOSITE_EVENTS/SAMPLING_CALLCHAINS) gives its call stack. Memory-kind
and copy enums are decoded with the export's own ENUM tables where present.

Several processes of one report stay several processes. A report of one process made under an MPI or
torchrun launcher names its rank in the recorded environment (``TARGET_INFO_SYSTEM_ENV``; only the
launcher's rank and size variables are read from it, never printed). CUDA graphs: kernels, copies and
memsets carry ``graphId``/``graphNodeId``; ``CUDA_GRAPH_NODE_EVENTS`` (``--cuda-graph-trace=node``) holds
each node's creation, in the API call that made it (by correlation id, else the call on that thread
around it), and the node an instantiated graph's node was cloned from (``originalGraphNodeId``).
"""

from __future__ import annotations

import re
import zlib

import numpy as np

from hpcsa.core.errors import FormatError, UnsupportedError
from hpcsa.ingest import model as M
from hpcsa.ingest.ranks import RANK_VARIABLES, WORLD_VARIABLES, rank_from_environment
from hpcsa.ingest.sqlsrc import OPERATION_COLUMNS, Db, activity, cupti_sync_kinds, kernel_columns
from hpcsa.ingest.vendors import Probe, VendorReader, register, sqlite_read
from hpcsa.ingest.vendors.nsys_graphs import graph_nodes

#: Newest export schema whose tables this reader knows (columns are looked up, never assumed).
NEWEST_SCHEMA = (3, 25)
OLDEST_SCHEMA = (2, 0)

RUNTIME, DRIVER, BACKTRACE = 0, 1, 67
#: Frames of the profiler and of the driver below the runtime API are not part of the program's context
#: (hpcrun trims the same modules).
PROFILER_MODULES = re.compile(r"(libcupti|libcuda\.so|libnvidia-|libToolsInjection|nsight-systems|"
                              r"/target-linux-|libnvperf|libpthread.*\bnsys)", re.IGNORECASE)
_SYNC_BY_API = (("StreamWaitEvent", M.SY_STRE), ("EventSynchronize", M.SY_EVT), ("StreamSynchronize", M.SY_STR),
                ("DeviceSynchronize", M.SY_CTX), ("CtxSynchronize", M.SY_CTX), ("ThreadSynchronize", M.SY_CTX))
#: nsys ENUM_CUDA_MEM_KIND (0 Pageable ... 6 Managed Static, 7 Unknown) -> CUPTI order.
_NSYS_MEM_KIND = np.array([M.MK_PAG, M.MK_PIN, M.MK_DEV, 4, 5, 6, 7, M.MK_UNK])
_UVM_COPY = {11: M.CP_H2D, 12: M.CP_D2H, 13: M.CP_D2D}


def recognise(probe: Probe) -> bool:
    """Nsight Systems exports have ``StringIds`` and CUPTI activity tables."""
    db = probe.db
    return db is not None and db.has("StringIds") and (db.has("CUPTI_ACTIVITY_KIND_RUNTIME")
                                                       or db.has("CUPTI_ACTIVITY_KIND_KERNEL"))


def schema_version(db: Db) -> str | None:
    for table in ("META_DATA_EXPORT", "EXPORT_META_DATA"):
        if db.has(table):
            rows = db.execute(f"SELECT value FROM {table} WHERE name = 'EXPORT_SCHEMA_VERSION'")
            if rows:
                return str(rows[0][0])
    return None


def check_version(db: Db) -> str:
    version = schema_version(db)
    if version is None:
        return "legacy"
    try:
        parts = tuple(int(x) for x in version.split(".")[:2])
    except ValueError:
        raise UnsupportedError(db.path, f"unrecognised Nsight Systems export schema version {version!r}") from None
    if parts > NEWEST_SCHEMA or parts < OLDEST_SCHEMA:
        raise UnsupportedError(db.path, f"Nsight Systems export schema {version} is not supported (hpcsa reads "
                               f"{OLDEST_SCHEMA[0]}.{OLDEST_SCHEMA[1]} through "
                               f"{NEWEST_SCHEMA[0]}.{NEWEST_SCHEMA[1]}.x); re-export with a supported nsys "
                               "or update hpcsa")
    return version


def read(db: Db) -> M.GpuTrace:
    version = check_version(db)
    product = ""
    for table in ("META_DATA_EXPORT", "EXPORT_META_DATA"):
        if db.has(table):
            rows = db.execute(f"SELECT value FROM {table} WHERE name = 'EXPORT_PRODUCT_VERSION'")
            product = str(rows[0][0]) if rows else ""
    epoch = 0
    if db.has("TARGET_INFO_SESSION_START_TIME") and "utcEpochNs" in db.columns("TARGET_INFO_SESSION_START_TIME"):
        rows = db.execute("SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME LIMIT 1")
        epoch = int(rows[0][0] or 0) if rows else 0
    tr = M.GpuTrace(source=f"nsys-sqlite schema {version}" + (f" (Nsight Systems {product})" if product else ""),
                    path=db.path, clock="session-relative ns + utcEpochNs" if epoch else "session-relative ns",
                    api_domain="CUDA", range_domain="NVTX", utc=bool(epoch))
    strings = _strings(db)
    _processes(db, tr)
    _apis(db, tr, strings, epoch)
    ops = [_kernels(db, tr, strings, epoch), _memcpys(db, epoch), _memsets(db, epoch), _syncs(db, tr, epoch)]
    tr.ops = np.concatenate([o for o in ops if o is not None]) if any(o is not None for o in ops) else tr.ops
    _devices(db, tr)
    _nvtx_ranges(db, tr, strings, epoch)
    template = tr.processes.pop(-1)
    for pid in set(tr.ops["process"].tolist()) - set(tr.processes):
        tr.processes[pid] = M.ProcessInfo(pid, host=template.host, hostname=template.hostname)
    graph_nodes(db, tr, epoch)
    _launcher_rank(db, tr)
    return tr


def _launcher_rank(db: Db, tr: M.GpuTrace) -> None:
    """The rank a launcher gave the one process of a single-process report, from its recorded environment
    (only the launcher's rank and size variables are looked at; the environment is never printed)."""
    pids = set(tr.ops["process"].tolist())
    t = "TARGET_INFO_SYSTEM_ENV"
    if len(pids) != 1 or not db.has(t) or "name" not in db.columns(t):
        return
    rows = db.execute(f"SELECT value FROM {t} WHERE name = 'DeviceEnvironment' LIMIT 1")
    if not rows or not rows[0][0]:
        return
    wanted = set(RANK_VARIABLES) | set(WORLD_VARIABLES)
    found = dict(item.split("=", 1) for item in str(rows[0][0]).split(";")
                 if "=" in item and item.split("=", 1)[0] in wanted)
    rank, world = rank_from_environment(found)
    info = tr.processes[pids.pop()]
    info.rank_hint, info.world = rank, world


def _strings(db: Db) -> np.ndarray:
    rows = db.execute("SELECT id, value FROM StringIds")
    if not rows:
        return np.zeros(0, dtype=object)
    ids = np.array([r[0] for r in rows], np.int64)
    if ids.min() < 0:
        raise FormatError(db.path, "StringIds has negative ids")
    out = np.full(int(ids.max()) + 1, "", dtype=object)
    out[ids] = [r[1] or "" for r in rows]
    return out


def _str(strings: np.ndarray, ids: np.ndarray) -> np.ndarray:
    ids = np.asarray(ids, np.int64)
    ok = (ids >= 0) & (ids < len(strings))
    out = np.full(len(ids), "", dtype=object)
    out[ok] = strings[ids[ok]]
    return out


def _processes(db: Db, tr: M.GpuTrace) -> None:
    host, hostname = 0, ""
    if db.has("TARGET_INFO_SYSTEM_ENV") and "name" in db.columns("TARGET_INFO_SYSTEM_ENV"):
        # Only the host name is read from this table: it also holds the program's environment.
        rows = db.execute("SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'Hostname' LIMIT 1")
        if rows and rows[0][0]:
            hostname = str(rows[0][0])
            host = zlib.crc32(hostname.encode())
    tr.processes = {}
    if db.has("PROCESSES"):
        for _gpid, pid, name in db.execute("SELECT globalPid, pid, name FROM PROCESSES"):
            tr.processes[int(pid)] = M.ProcessInfo(int(pid), name=str(name or "").split("/")[-1],
                                                   path=str(name or ""), host=host, hostname=hostname)
    # The template for processes PROCESSES does not list.
    tr.processes[-1] = M.ProcessInfo(-1, host=host, hostname=hostname)


def _apis(db: Db, tr: M.GpuTrace, strings: np.ndarray, epoch: int) -> None:
    t = "CUPTI_ACTIVITY_KIND_RUNTIME"
    if not db.has(t):
        return
    cols = db.columns_of(f'SELECT start, "end", eventClass, globalTid, correlationId, nameId, '
                         f'COALESCE({db.col(t, "callchainId", "NULL")}, -1) FROM {t}',
                         ["start", "end", "cls", "gtid", "corr", "name", "chain"])
    has_chain = cols["chain"] >= 0
    cls = cols["cls"]
    pid = (cols["gtid"] >> 24) & 0xFFFFFF
    tid = cols["gtid"] & 0xFFFFFF
    api_rows = np.isin(cls, (RUNTIME, DRIVER))
    bt_rows = (cls == BACKTRACE) & has_chain
    # A call that only has its backtrace row still is a call.
    keyed_api = set(zip(pid[api_rows].tolist(), cols["corr"][api_rows].tolist(), strict=True))
    lone_bt = bt_rows & np.array([(p, c) not in keyed_api for p, c in zip(pid.tolist(), cols["corr"].tolist(),
                                                                           strict=True)], bool)
    take = api_rows | lone_bt
    names = _str(strings, cols["name"][take])
    apis = M.table(M.API_DTYPE, int(take.sum()), process=pid[take], thread=tid[take],
                   name=tr.intern_many(names) if len(names) else 0,
                   start=cols["start"][take] + epoch, end=cols["end"][take] + epoch, corr=cols["corr"][take])
    tr.apis = apis
    # Call stacks: from the backtrace rows (class 67), else from a CPU sample inside the call.
    stack_chain = np.full(len(apis), -1, np.int64)
    if db.has("CUDA_CALLCHAINS") and np.any(bt_rows):
        k_api, k_bt = M.pair_keys(apis["process"], apis["corr"], pid[bt_rows], cols["corr"][bt_rows])
        hit = M.lookup(k_api, k_bt)
        chain_ids = cols["chain"][bt_rows].astype(np.int64)
        stack_chain = np.where(hit >= 0, chain_ids[np.maximum(hit, 0)], -1)
        _attach_stacks(db, tr, stack_chain, names_of=names, table="CUDA_CALLCHAINS", shift=True)
    if db.has("COMPOSITE_EVENTS") and db.has("SAMPLING_CALLCHAINS"):
        need = apis["stack"] < 0
        if np.any(need):
            sample = _sample_in_call(db, apis, need, cols, pid, tid, epoch)
            _attach_stacks(db, tr, sample, names_of=names, table="SAMPLING_CALLCHAINS", shift=False)


def _sample_in_call(db: Db, apis: np.ndarray, need: np.ndarray, cols: dict, pid: np.ndarray, tid: np.ndarray,
                    epoch: int) -> np.ndarray:
    """For each API call, the id of the first CPU sample on its thread inside [start, end] (-1 none)."""
    ev = db.columns_of("SELECT id, start, globalTid FROM COMPOSITE_EVENTS", ["id", "start", "gtid"])
    out = np.full(len(apis), -1, np.int64)
    if not len(ev["id"]):
        return out
    s_pid, s_tid = (ev["gtid"] >> 24) & 0xFFFFFF, ev["gtid"] & 0xFFFFFF
    k_s, k_a = M.pair_keys(s_pid, s_tid, apis["process"], apis["thread"])
    order = np.lexsort((ev["start"], k_s))
    ks, st, ids = k_s[order], ev["start"][order] + epoch, ev["id"][order]
    # First sample with (thread, time) >= (thread, api start): one searchsorted over a combined key.
    span = int(max(st.max(), apis["end"].max()) - min(st.min(), apis["start"].min()) + 2) if len(st) else 1
    base = min(int(st.min()), int(apis["start"].min()))
    comb = ks.astype(np.float64) * span + (st - base)
    q = k_a.astype(np.float64) * span + (apis["start"] - base)
    pos = np.searchsorted(comb, q)
    ok = pos < len(comb)
    pos = np.minimum(pos, len(comb) - 1)
    ok &= (ks[pos] == k_a) & (st[pos] <= apis["end"]) & need
    out[ok] = ids[pos[ok]]
    return out


def _attach_stacks(db: Db, tr: M.GpuTrace, chain_of_api: np.ndarray, names_of: np.ndarray, table: str,
                   shift: bool) -> None:
    """Load the chains the API calls refer to and set ``apis['stack']``."""
    wanted = np.unique(chain_of_api[chain_of_api >= 0])
    if not len(wanted):
        return
    cols = db.columns(table)
    extra = ", kernelMode" if "kernelMode" in cols else ", 0"
    rows = db.execute(f"SELECT c.id, c.stackDepth, c.originalIP, s.value, m.value{extra} FROM {table} c "
                      "LEFT JOIN StringIds s ON s.id = c.symbol LEFT JOIN StringIds m ON m.id = c.module "
                      "ORDER BY c.id, c.stackDepth")
    chains: dict[int, list[tuple[int, str, str, int]]] = {}
    for cid, _depth, ip, sym, mod, kmode in rows:
        chains.setdefault(int(cid), []).append((int(ip or 0), str(sym or ""), str(mod or ""), int(kmode or 0)))
    offset = _chain_offset(tr, chain_of_api, chains) if shift else 0
    cache: dict[int, int] = {}
    for i in np.flatnonzero(chain_of_api >= 0).tolist():
        cid = int(chain_of_api[i]) + offset
        if cid not in chains:
            continue
        if cid not in cache:
            frames = [M.Frame(mod, ip, sym or f"{ip:#x}") for ip, sym, mod, kmode in chains[cid]
                      if not kmode and not PROFILER_MODULES.search(mod)]
            tr.stacks.append(tuple(reversed(frames)))
            cache[cid] = len(tr.stacks) - 1
        tr.apis["stack"][i] = cache[cid]


def _chain_offset(tr: M.GpuTrace, chain_of_api: np.ndarray, chains: dict) -> int:
    """0 or 1: the shift between RUNTIME.callchainId and CUDA_CALLCHAINS.id that makes each chain's
    runtime-library frame name the API call (nsys 2022.x numbers the two from different bases)."""
    best, best_hits = 0, -1
    sel = np.flatnonzero(chain_of_api >= 0)
    for offset in (0, 1):
        hits = 0
        for i in sel.tolist():
            api = tr.strings[int(tr.apis["name"][i])].split("_v")[0]
            frames = chains.get(int(chain_of_api[i]) + offset, [])
            if any(sym == api for _ip, sym, mod, _k in frames if not PROFILER_MODULES.search(mod)):
                hits += 1
        if hits > best_hits:
            best, best_hits = offset, hits
    return best


def _kernels(db: Db, tr: M.GpuTrace, strings: np.ndarray, epoch: int) -> np.ndarray | None:
    t = "CUPTI_ACTIVITY_KIND_KERNEL"
    name_col = "mangledName" if "mangledName" in db.columns(t) else "demangledName"
    c = activity(db, t, {**OPERATION_COLUMNS, "gpid": "globalPid", "name": name_col, **kernel_columns(db, t),
                         **_graph_columns(db, t)})
    if c is None:
        return None
    n = len(c["start"])
    names = _str(strings, c["name"])
    return M.table(M.OP_DTYPE, n, kind=M.KERNEL, process=(c["gpid"] >> 24) & 0xFFFFFF, device=c["dev"],
                   context=c["ctx"], stream=c["stream"], corr=c["corr"], start=c["start"] + epoch,
                   end=c["end"] + epoch, name=tr.intern_many(names) if n else 0, blocks=c["blocks"],
                   block_threads=c["threads"], regs=c["regs"], smem_static=c["sst"], smem_dynamic=c["sdy"],
                   local_total=c["lmem"], **_graph_ids(c))


def _graph_columns(db: Db, table: str) -> dict[str, str]:
    """The graph and node an operation ran as (CUPTI: 0 when not launched by a graph; older exports lack
    the columns)."""
    return {"graph": db.col(table, "graphId"), "node": db.col(table, "graphNodeId")}


def _graph_ids(c: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {"graph": np.where(c["graph"] > 0, c["graph"], -1), "graph_node": np.where(c["node"] > 0, c["node"], -1)}


def _mem_kinds(db: Db) -> np.ndarray:
    """nsys memory-kind enum -> CUPTI order, from the export's ENUM table where present."""
    if not db.has("ENUM_CUDA_MEM_KIND"):
        return _NSYS_MEM_KIND
    words = {"PAGEABLE": M.MK_PAG, "PINNED": M.MK_PIN, "DEVICE_STATIC": 6, "MANAGED_STATIC": 7, "DEVICE": M.MK_DEV,
             "ARRAY": 4, "MANAGED": 5}
    table = np.zeros(64, np.int64)
    for eid, name in db.execute("SELECT id, name FROM ENUM_CUDA_MEM_KIND"):
        key = str(name).upper()
        kind = next((v for w, v in words.items() if w in key), M.MK_UNK)
        if 0 <= int(eid) < 64:
            table[int(eid)] = kind
    return table


def _memcpys(db: Db, epoch: int) -> np.ndarray | None:
    c = activity(db, "CUPTI_ACTIVITY_KIND_MEMCPY",
                 {**OPERATION_COLUMNS, "gpid": "globalPid", "bytes": "bytes", "kind": "copyKind",
                  **_graph_columns(db, "CUPTI_ACTIVITY_KIND_MEMCPY")})
    if c is None:
        return None
    kind = c["kind"]
    implicit = np.isin(kind, list(_UVM_COPY))
    sub = np.where(implicit, np.select([kind == k for k in _UVM_COPY], list(_UVM_COPY.values()), 0),
                   np.where((kind >= 0) & (kind <= 10), kind, M.CP_UNK))
    return M.table(M.OP_DTYPE, len(kind), kind=M.MEMCPY, process=(c["gpid"] >> 24) & 0xFFFFFF, device=c["dev"],
                   context=c["ctx"], stream=c["stream"], corr=c["corr"], start=c["start"] + epoch,
                   end=c["end"] + epoch, bytes=c["bytes"], sub=sub, implicit=implicit, **_graph_ids(c))


def _memsets(db: Db, epoch: int) -> np.ndarray | None:
    t = "CUPTI_ACTIVITY_KIND_MEMSET"
    c = activity(db, t, {**OPERATION_COLUMNS, "gpid": "globalPid", "bytes": "bytes", "mk": db.col(t, "memKind", "7"),
                         **_graph_columns(db, t)})
    if c is None:
        return None
    kinds = _mem_kinds(db)
    return M.table(M.OP_DTYPE, len(c["start"]), kind=M.MEMSET, process=(c["gpid"] >> 24) & 0xFFFFFF,
                   device=c["dev"], context=c["ctx"], stream=c["stream"], corr=c["corr"],
                   start=c["start"] + epoch, end=c["end"] + epoch, bytes=c["bytes"],
                   sub=kinds[np.clip(c["mk"], 0, len(kinds) - 1)], **_graph_ids(c))


def _syncs(db: Db, tr: M.GpuTrace, epoch: int) -> np.ndarray | None:
    c = activity(db, "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
                 {**OPERATION_COLUMNS, "gpid": "globalPid", "type": "syncType"})
    if c is None:
        return None
    pid = (c["gpid"] >> 24) & 0xFFFFFF
    # syncType is not trustworthy across nsys versions: classify by the API call's name first.
    sub = cupti_sync_kinds(c["type"])
    if len(tr.apis) and len(pid):
        k_o, k_a = M.pair_keys(pid, c["corr"], tr.apis["process"], tr.apis["corr"])
        hit = M.lookup(k_o, k_a)
        name_id = np.where(hit >= 0, tr.apis["name"][np.maximum(hit, 0)], -1)
        kinds = np.array([next((k for w, k in _SYNC_BY_API if w in name), 255) for name in tr.strings] + [255],
                         np.uint8)
        by_name = kinds[name_id]  # -1 (no call) picks the trailing "unknown"
        sub = np.where(by_name != 255, by_name, sub).astype(np.uint8)
    stream = np.where(c["stream"] == 0xFFFFFFFF, -1, c["stream"])
    return M.table(M.OP_DTYPE, len(pid), kind=M.SYNC, process=pid, device=c["dev"], context=c["ctx"],
                   stream=stream, corr=c["corr"], start=c["start"] + epoch, end=c["end"] + epoch, sub=sub)


def _devices(db: Db, tr: M.GpuTrace) -> None:
    t = "TARGET_INFO_GPU"
    if not db.has(t):
        return
    cols = db.columns(t)
    want = {"warp": "threadsPerWarp", "max_warps_per_sm": "maxWarpsPerSm", "max_blocks_per_sm": "maxBlocksPerSm",
            "regs_per_sm": "maxRegistersPerSm", "smem_per_sm": "maxShmemPerSm", "sm_count": "smCount",
            "clock_hz": "clockRate"}
    dev_col = "cuDevice" if "cuDevice" in cols else "id"
    have = [(k, v) for k, v in want.items() if v in cols]
    if not have:
        return
    rows = db.execute(f"SELECT {dev_col}, {', '.join(v for _, v in have)} FROM {t}")
    pids = set(tr.ops["process"].tolist()) if len(tr.ops) else set()
    pids |= set(tr.processes)
    for row in rows:
        props = {k: float(v or 0) for (k, _), v in zip(have, row[1:], strict=True)}
        for pid in pids:
            tr.devices[(pid, int(row[0] or 0))] = props


def _nvtx_range_types(db: Db) -> tuple[set[int], set[int]]:
    """NVTX_EVENTS event types of push/pop and of start/end ranges (from the export's enum table where present;
    the documented values otherwise: 59/70 push/pop, 60/71 start/end, the second of each imported NVTXT)."""
    push, start = {59, 70}, {60, 71}
    if db.has("ENUM_NSYS_EVENT_TYPE"):
        rows = db.execute("SELECT id, name FROM ENUM_NSYS_EVENT_TYPE")
        push = {int(i) for i, n in rows if str(n).endswith("PushPopRange")} or push
        start = {int(i) for i, n in rows if str(n).endswith("StartEndRange")} or start
    return push, start


def _nvtx_ranges(db: Db, tr: M.GpuTrace, strings: np.ndarray, epoch: int) -> None:
    """NVTX push/pop ranges (per thread) and start/end ranges (per thread when they end on the thread that
    started them, else the whole process); ranges never ended are left out."""
    t = "NVTX_EVENTS"
    if not db.has(t):
        return
    push, start = _nvtx_range_types(db)
    types = ", ".join(str(x) for x in sorted(push | start))
    c = db.columns_of(f'SELECT start, "end", eventType, COALESCE(globalTid, 0), '
                      f'COALESCE({db.col(t, "endGlobalTid", "NULL")}, globalTid, 0), COALESCE(text, \'\'), '
                      f'COALESCE({db.col(t, "textId", "NULL")}, -1) FROM {t} '
                      f'WHERE eventType IN ({types}) AND "end" IS NOT NULL AND "end" >= start',
                      ["start", "end", "type", "gtid", "end_gtid", "text", "text_id"])
    n = len(c["start"])
    if not n:
        return
    names = np.where(c["text_id"] >= 0, _str(strings, c["text_id"]), c["text"]) if n else c["text"]
    tid = c["gtid"] & 0xFFFFFF
    whole = np.isin(c["type"], list(start)) & (c["end_gtid"] != c["gtid"])
    tr.ranges = M.table(M.RANGE_DTYPE, n, process=(c["gtid"] >> 24) & 0xFFFFFF, thread=np.where(whole, -1, tid),
                        start=c["start"] + epoch, end=c["end"] + epoch, name=tr.intern_many(list(names)))


register(VendorReader(name="nsys", label="Nsight Systems", what="nsys database", rank=10, sqlite=True,
                      recognise=recognise, read=sqlite_read(read)))
