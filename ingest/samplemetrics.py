"""Instruction-level metrics of one CPU thread's profile: PC samples and instruction traces as children of
``<gpu kernel>`` at the instruction (``unwound = 0``), as hpcrun places PC samples (its
``gpu_activity_process``: a new child of the kernel placeholder per sampled PC), and the per-launch
sampling summaries on the kernel node.

PC samples give ``GINS`` (samples x period) and the stall classes ``GINS:STL_*``. An instruction trace
(AMD thread trace, rocprofv3 ``--att``) counts every execution: its hit count is ``GINS`` and the cycles
the instruction took, stalled and idled are ``GINS:LAT``, ``GINS:STALL_CYC`` and ``GINS:IDLE_CYC`` (see
the ROCprof Trace Decoder's per-instruction statistics: Hitcount, Latency, Stall, Idle).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

import numpy as np

from hpcsa.formats.measurement.hpcrun import UNWOUND
from hpcsa.formats.measurement.placeholders import PH
from hpcsa.ingest import model as M


class Tree(Protocol):
    """The calling-context tree being built (:class:`hpcsa.ingest.measdir.Cct`)."""

    rows: list[tuple[int, int, int, int, int]]

    def child(self, parent: int, lm_id: int, lm_ip: int, flags: int = ...) -> int: ...

    def path(self, parent: int, frames: Iterable[tuple[int, int]]) -> int: ...


class Writer(Protocol):
    """The writer of one process's files (:class:`hpcsa.ingest.measdir.ProcessWriter`)."""

    trace: M.GpuTrace
    pid: int
    mid: dict[str, int]

    def api_node(self, name: str) -> tuple[int, int]: ...

    def symbol_point(self, code: int, name: str) -> tuple[int, int]: ...

#: Instruction-trace columns of the sample table and the metric each becomes.
TRACE_METRICS = (("latency", "GINS:LAT"), ("stall_cycles", "GINS:STALL_CYC"), ("idle_cycles", "GINS:IDLE_CYC"))


def has_instruction_trace(samples: np.ndarray) -> bool:
    """Whether a sample table holds instruction-trace cycles (not only PC samples)."""
    return bool(len(samples)) and any(bool(np.any(samples[col])) for col, _ in TRACE_METRICS)


def sample_values(writer: Writer, cct: Tree, root: int, ops: np.ndarray, smp: np.ndarray, opi: np.ndarray,
                  leaf: np.ndarray, mine: np.ndarray) -> tuple[list, list, list]:
    """(nodes, metrics, values) contributions of the samples ``smp`` (``opi``: each one's launch, an index into
    ``ops``, -1 none) and of the process's sampling summaries, on the nodes of ``cct``."""
    tr = writer.trace
    mid = writer.mid
    info = tr.sample_info[tr.sample_info["process"] == writer.pid] if len(tr.sample_info) else tr.sample_info
    period_of: dict[int, int] = {int(c): int(p) for c, p in zip(info["corr"], info["period"], strict=True)}
    nodes: list[np.ndarray] = []
    mets: list[np.ndarray] = []
    vals: list[np.ndarray] = []
    if len(smp):
        # One node per distinct (launch placeholder, symbol, pc); Python runs over those only.
        ph = np.zeros(len(smp), np.int64)
        launched = opi >= 0
        kernel_node = np.where(launched, leaf[np.maximum(opi, 0)] if len(leaf) else 0, 0)
        parents = np.array([r[1] for r in cct.rows] + [0], np.int64)
        ph[launched] = parents[kernel_node[launched] - 1]
        if np.any(~launched):
            ctx = cct.path(root, (writer.api_node("<untraced API call>"),))
            ph[~launched] = cct.child(ctx, 0, PH["kernel"])
        keys, inv = M.distinct_rows(ph, smp["symbol"], smp["pc"].view(np.int64), np.where(launched, kernel_node, 0))
        made = []
        for parent, sym, pc, knode in keys:
            name = tr.symbols[sym].name if sym >= 0 else ""
            lm, base = writer.symbol_point(sym, name)
            entry = tuple(cct.rows[knode - 1][2:4]) if knode else None
            flags = UNWOUND if entry == (lm, base + pc) else 0
            made.append(cct.child(parent, lm, base + pc, flags))
        snode = np.array(made, np.int64)[inv]
        period = np.ones(len(smp))
        if period_of:
            corr_u, corr_inv = np.unique(smp["corr"], return_inverse=True)
            period = np.array([period_of.get(int(c), 1) or 1 for c in corr_u], np.float64)[corr_inv.reshape(-1)]
        stall = smp["stall"].astype(np.int64)
        has_cls = stall < len(M.STALL_CLASSES)
        nodes += [snode, snode[has_cls], snode[has_cls & (stall != M.ST_NONE)]]
        mets += [np.full(len(smp), mid["GINS"]),
                 np.array([mid[f"GINS:STL_{c}"] for c in M.STALL_CLASSES])[stall[has_cls]],
                 np.full(int((has_cls & (stall != M.ST_NONE)).sum()), mid["GINS:STL_ANY"])]
        vals += [smp["samples"] * period, (smp["stall_samples"] * period)[has_cls],
                 (smp["stall_samples"] * period)[has_cls & (stall != M.ST_NONE)]]
        for column, metric in TRACE_METRICS:
            if metric in mid and np.any(smp[column]):
                nodes.append(snode)
                mets.append(np.full(len(smp), mid[metric]))
                vals.append(smp[column].astype(np.float64))
    # Per-launch sampling summaries on the kernel node.
    if len(info):
        kern = mine[ops["kind"][mine] == M.KERNEL]
        k_i, k_k = M.pair_keys(np.zeros(len(info)), info["corr"], np.zeros(len(kern)), ops["corr"][kern])
        hit = M.lookup(k_i, k_k)
        ok = hit >= 0
        if np.any(ok):
            kn = leaf[kern[hit[ok]]]
            known = kn > 0
            kn = kn[known]
            inf = info[ok][known]
            nodes += [kn, kn]
            mets += [np.full(len(kn), mid["GSAMP:TOT"]), np.full(len(kn), mid["GSAMP:DRP"])]
            vals += [inf["total"].astype(np.float64), inf["dropped"].astype(np.float64)]
            # The period is a property, not a count: one value per kernel node.
            first = np.unique(kn, return_index=True)[1]
            nodes.append(kn[first])
            mets.append(np.full(len(first), mid["GSAMP:PER (cyc)"]))
            vals.append(inf["period"][first].astype(np.float64))
    return nodes, mets, vals
