"""CUDA graph nodes in Nsight Systems exports: ``CUDA_GRAPH_NODE_EVENTS`` (written with
``--cuda-graph-trace=node``), one row per node created (``graphNodeId``) in the API call that created it
(``correlationId``; else the call of that thread around the event's start), and, for the nodes of an
instantiated graph, the node they were cloned from (``originalGraphNodeId``). The columns are looked up,
never assumed (they came over several schema versions). See CUPTI's graph-node callbacks
(``CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED``/``_CLONED``) for what the records mean.
"""

from __future__ import annotations

import numpy as np

from hpcsa.ingest import model as M
from hpcsa.ingest.sqlsrc import Db

TABLE = "CUDA_GRAPH_NODE_EVENTS"


def graph_nodes(db: Db, tr: M.GpuTrace, epoch: int) -> None:
    """Fill ``tr.graph_nodes`` ((pid, node) -> creating API call) and ``tr.graph_origin``."""
    if not db.has(TABLE) or "graphNodeId" not in db.columns(TABLE):
        return
    c = db.columns_of(f"SELECT COALESCE(graphNodeId, 0), COALESCE({db.col(TABLE, 'originalGraphNodeId', 'NULL')}, 0), "
                      f"COALESCE({db.col(TABLE, 'globalTid', 'NULL')}, 0), "
                      f"COALESCE({db.col(TABLE, 'correlationId', 'NULL')}, 0), COALESCE(start, 0) FROM {TABLE}",
                      ["node", "origin", "gtid", "corr", "start"])
    if not len(c["node"]):
        return
    pid = (c["gtid"] >> 24) & 0xFFFFFF
    tid = c["gtid"] & 0xFFFFFF
    ok = c["node"] > 0
    for p, node, origin in zip(pid[ok].tolist(), c["node"][ok].tolist(), c["origin"][ok].tolist(), strict=True):
        if origin > 0 and origin != node:
            tr.graph_origin[(p, node)] = origin
    apis = tr.apis
    if not len(apis):
        return
    call = np.full(len(pid), -1, np.int64)
    by_corr = c["corr"] > 0
    if np.any(by_corr):
        k_n, k_a = M.pair_keys(pid[by_corr], c["corr"][by_corr], apis["process"], apis["corr"])
        call[by_corr] = M.lookup(k_n, k_a)
    rest = np.flatnonzero((call < 0) & ok)
    if len(rest):
        call[rest] = _enclosing_call(apis, pid[rest], tid[rest], c["start"][rest] + epoch)
    for p, node, origin, k in zip(pid.tolist(), c["node"].tolist(), c["origin"].tolist(), call.tolist(),
                                  strict=True):
        if node > 0 and k >= 0 and not (origin > 0 and origin != node):
            tr.graph_nodes[(p, node)] = k


def _enclosing_call(apis: np.ndarray, pid: np.ndarray, tid: np.ndarray, at: np.ndarray) -> np.ndarray:
    """For each (pid, tid, time), the API call of that thread that started last at or before it and has not
    ended before it (-1 none)."""
    k_q, k_a = M.pair_keys(pid, tid, apis["process"], apis["thread"])
    order = np.lexsort((apis["start"], k_a))
    ks, starts = k_a[order], apis["start"][order]
    out = np.full(len(pid), -1, np.int64)
    for i in range(len(pid)):
        lo, hi = np.searchsorted(ks, k_q[i], "left"), np.searchsorted(ks, k_q[i], "right")
        j = lo + int(np.searchsorted(starts[lo:hi], at[i], "right")) - 1
        if lo <= j < hi and apis["end"][order[j]] >= at[i]:
            out[i] = order[j]
    return out
