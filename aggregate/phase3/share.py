"""Phase 3 of ``hpcsa prof`` scheduled on this rank: cct.db by groups of context ranges, handed out across
ranks, the summary values on the way (:func:`.transpose.transpose_ranges`); and this rank's share of
the batches' thread blobs copied into profile.db meanwhile (while its workers transpose, or after its first group).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from hpcsa.aggregate.handoff import Phase3Plan, Placement, SummaryParts
from hpcsa.aggregate.metrictable import MetricTable
from hpcsa.aggregate.phase3 import transpose
from hpcsa.aggregate.phase3.summary import StatPlan
from hpcsa.aggregate.transport import Transport, run_shared
from hpcsa.core.workers import LocalPool, pool_min_bytes
from hpcsa.formats.db import cctdb

#: What every task of phase 3 shares: the scratch files, the partial cct.db, the placement, layout and plan.
Shared = tuple[str, str, str, Placement, cctdb.CctLayout, StatPlan]


def range_groups(ranges: list[tuple[int, int]], jobs: int) -> list[list[int]]:
    """Consecutive ranges in groups, one per worker, as bounds ``[lo0, lo1, ..., hi]``: a group's task first
    finds its bounds in every profile's context index (a pass over all profiles), so fewer groups mean fewer
    passes; ranges are of equal size, so equal groups keep the workers equally busy."""
    if not ranges:
        return []
    n_groups = min(len(ranges), jobs)
    cuts = np.linspace(0, len(ranges), n_groups + 1).round().astype(int)
    return [[ranges[i][0] for i in range(a, b)] + [ranges[b - 1][1]]
            for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist(), strict=True) if b > a]


def groups_for(layout: cctdb.CctLayout, processes: int) -> list[list[int]]:
    """cct.db's context ranges (:func:`.transpose.context_ranges`) in as many groups as processes (of
    all ranks); one when cct.db is too small to pay for a worker (POOL_MIN_BYTES). Rank 0 decides, once."""
    parallel = processes if layout.end - layout.data_start >= pool_min_bytes() else 1
    return range_groups(transpose.context_ranges(layout) if layout.n_ctxs else [], parallel)


def phase3_task(shared: Shared, bounds: list[int]) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    return transpose.transpose_ranges(*shared, bounds)


def run(plan: Phase3Plan, metrics: MetricTable, jobs: int, transport: Transport,
        aside: Callable[[], None] | None = None) -> SummaryParts:
    """cct.db's blocks and the summary values of this rank's share of the range groups (``plan.groups``,
    :func:`groups_for`; largest first); and ``aside()``, other work of this rank, while its workers run (see
    :func:`.run_shared`)."""
    groups = plan.groups
    shared = (plan.run_path, plan.aside_path, plan.cct_path, plan.place, plan.layout, StatPlan.build(metrics))
    order = sorted(range(len(groups)), key=lambda g: (-(groups[g][-1] - groups[g][0]), g))
    out: SummaryParts = {}
    # This process transposes beside jobs - 1 forked workers: -j N keeps N processes busy, and one fewer
    # holds a range's gathered values (the largest memory of the run, per process).
    helpers = min(jobs, len(groups)) - 1
    with LocalPool(max(1, helpers), shared=shared, fork=helpers > 0) as pool:
        for k, parts in run_shared(pool, phase3_task, transport.tasks("phase 3", len(groups)),
                                   lambda k: (groups[order[k]],), max(1, helpers), meanwhile=aside,
                                   parent_works=True):
            out[order[k]] = parts
    return out


def blob_share(n: int, transport: Transport) -> range:
    """The batches whose thread blobs this rank copies into profile.db: its slice of the ``n`` batches."""
    return range(n * transport.rank // transport.size, n * (transport.rank + 1) // transport.size)


def merge_parts(parts: list[SummaryParts]) -> SummaryParts:
    out: SummaryParts = {}
    for p in parts:
        out.update(p)
    return out
