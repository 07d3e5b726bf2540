"""rocprof v1 ``--hip-trace`` output database (``results.db``: tables HIP, OPS, COPY, KERN).

``Index`` is the correlation id shared by a HIP call and the device work it
issued. Copy rows carry no byte count: it is read from the issuing call's
``sizeBytes(...)`` argument. Times are HSA system-clock ns (boot-based).
Waiting HIP calls (``hip*Synchronize``, ``hipStreamWaitEvent``) are the
synchronizations, with their host-side interval.
"""

from __future__ import annotations

import re

import numpy as np

from hpcsa.ingest import model as M
from hpcsa.ingest.sqlsrc import Db
from hpcsa.ingest.vendors import Probe, VendorReader, register, sqlite_read
from hpcsa.ingest.vendors.rocpd import waits_as_sync_ops

_SIZE = re.compile(r"\bsize(?:Bytes)?\((\d+)\)")
_KIND = re.compile(r"\bkind\((\d+)\)")
_DIR = {"HostToDevice": M.CP_H2D, "DeviceToHost": M.CP_D2H, "DeviceToDevice": M.CP_D2D, "HostToHost": M.CP_H2H}
#: hipMemcpyKind (0 H2H, 1 H2D, 2 D2H, 3 D2D, 4 default).
_HIP_KIND = {0: M.CP_H2H, 1: M.CP_H2D, 2: M.CP_D2H, 3: M.CP_D2D}


def recognise(probe: Probe) -> bool:
    db = probe.db
    return db is not None and db.has("HIP") and db.has("OPS") and "Index" in db.columns("HIP")


def read(db: Db) -> M.GpuTrace:
    tr = M.GpuTrace(source="rocprof-v1 results.db", path=db.path, clock="HSA system clock ns", api_domain="HIP")
    c = db.columns_of('SELECT pid, tid, Name, BeginNs, EndNs, "Index", COALESCE(args, \'\') FROM HIP',
                      ["pid", "tid", "name", "start", "end", "corr", "args"])
    n = len(c["pid"])
    tr.apis = M.table(M.API_DTYPE, n, process=c["pid"], thread=c["tid"], name=tr.intern_many(c["name"]) if n else 0,
                      start=c["start"], end=c["end"], corr=c["corr"])
    args = {int(i): str(a) for i, a in zip(c["corr"].tolist(), c["args"].tolist(), strict=True)}
    parts = []
    for table, kind in (("OPS", None), ("COPY", M.MEMCPY)):
        if not db.has(table):
            continue
        o = db.columns_of(f'SELECT pid, tid, "dev-id", "queue-id", COALESCE("stream-id", -1), Name, BeginNs, EndNs, '
                          f'"Index" FROM {table}',
                          ["pid", "tid", "dev", "queue", "stream", "name", "start", "end", "corr"])
        m = len(o["pid"])
        if not m:
            continue
        names = [str(x) for x in o["name"]]
        is_copy = np.array([kind == M.MEMCPY or nm.startswith("Copy") for nm in names])
        sub = np.zeros(m, np.uint8)
        size = np.zeros(m, np.uint64)
        for i in np.flatnonzero(is_copy).tolist():
            a = args.get(int(o["corr"][i]), "")
            sub[i] = next((v for k, v in _DIR.items() if k in names[i]), M.CP_UNK)
            if sub[i] == M.CP_UNK and (kind_hit := _KIND.search(a)):
                sub[i] = _HIP_KIND.get(int(kind_hit.group(1)), M.CP_UNK)
            hit = _SIZE.search(a)
            size[i] = int(hit.group(1)) if hit else 0
        parts.append(M.table(M.OP_DTYPE, m, kind=np.where(is_copy, M.MEMCPY, M.KERNEL), process=o["pid"],
                             thread=o["tid"], device=o["dev"], context=o["dev"], stream=o["queue"],
                             corr=o["corr"], start=o["start"], end=o["end"], name=tr.intern_many(names),
                             bytes=size, sub=sub))
    waits = waits_as_sync_ops(tr)
    if waits is not None:
        parts.append(waits)
    if parts:
        tr.ops = np.concatenate(parts)
    for pid in sorted(set(tr.ops["process"].tolist()) | set(tr.apis["process"].tolist())):
        tr.processes[pid] = M.ProcessInfo(pid)
    return tr


register(VendorReader(name="rocprof-v1", label="rocprof v1", what="rocprof-v1 database", rank=40, sqlite=True,
                      recognise=recognise, read=sqlite_read(read)))
