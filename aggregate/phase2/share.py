"""Phase 2 of ``hpcsa prof`` scheduled on this rank: its share of the profiles, in batches of consecutive
profiles (:func:`.handoff.batch_bounds`), each propagated by :func:`.values.process_batch`; the batches' facts summed into this rank's
:class:`.handoff.Phase2State`, which the driver reduces up the ranks (see :mod:`.driver`).

One process at ``-j N`` is N processes that take batches from shared tickets (``_forked()``); an MPI rank's
batches come from the ranks' counter, which only the rank's own process may use, to its pool of workers.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from hpcsa.aggregate.handoff import BatchOutput, ClassTwo, Phase2State, Phase2Targets, batch_bounds
from hpcsa.aggregate.phase2 import values
from hpcsa.aggregate.profile_table import ProfileTable
from hpcsa.aggregate.transport import Transport, run_shared, tasks_ahead
from hpcsa.core.arrays import ramps
from hpcsa.core.progress import Progress
from hpcsa.core.workers import ForkedWorker, LocalPool, Tickets, can_fork, trim_heap


def phase2_costs(profiles: ProfileTable) -> np.ndarray:
    """What a profile costs phase 2, in bytes: what phase 1 kept of it (its tree, values and node hashes)
    and its trace; its files' bytes where nothing was kept. (An .hpcrun file is mostly the alignment of its
    sections when its thread did little: a thousand threads waiting at a barrier are 6 KB each on disk and a
    few hundred bytes of tree and values.)"""
    kept = profiles.kept_file >= 0
    return np.where(kept, profiles.kept_size.astype(np.int64) + profiles.inputs.trace_size, profiles.inputs.cost)


def phase2_task(shared: tuple[ClassTwo, Phase2Targets, bool, np.ndarray], batch: int) -> BatchOutput:
    """Class 1 for a batch of profiles, propagated together (one small message per batch, not per profile:
    with per-profile tasks the hand-offs between a pool's workers and its parent cost as much as the
    profiles). Blobs a worker could not place come back pending, for its rank to store."""
    c2, targets, traces, bounds = shared
    return values.process_batch(c2, batch, int(bounds[batch]), int(bounds[batch + 1]), targets, traces=traces)


def run(c2: ClassTwo, targets: Phase2Targets, jobs: int, traces: bool, progress: Progress | None,
        transport: Transport, aside: Callable[[], None] | None = None) -> Phase2State:
    """Class 1 for this rank's share of the batches (:func:`.handoff.batch_bounds`: runs of consecutive
    profiles), with ``jobs`` workers; and ``aside()``, other work of this rank, while its workers run (see
    :func:`.run_shared`). One process's workers take batches by themselves (``_forked()``); an MPI rank's go
    through a pool (the batches come from the ranks' counter, which only the rank's own process may use)."""
    allocate, in_workers = transport.counter(values.SCRATCH_KINDS)
    targets = replace(targets, allocate=allocate if in_workers or jobs == 1 else None)
    bounds = batch_bounds(phase2_costs(c2.profiles), jobs * transport.size)
    n_batches = len(bounds) - 1
    if jobs > 1 and transport.size == 1 and targets.allocate is not None and can_fork():
        return _forked(c2, targets, bounds, jobs, traces, progress, aside)
    state = Phase2State.empty(c2, bounds)
    done = 0
    # This process works beside jobs - 1 forked workers (as in phase 3): -j N keeps N processes busy, where
    # N workers and a parent handing them batches of a few milliseconds each would share N CPUs.
    helpers = min(jobs, n_batches) - 1
    with LocalPool(max(1, helpers), shared=(c2, targets, traces, bounds), fork=helpers > 0) as pool:
        for k, part in run_shared(pool, phase2_task, transport.tasks("phase 2", n_batches), lambda k: (k,),
                                  2 * helpers if helpers > 0 else tasks_ahead(1), meanwhile=aside,
                                  parent_works=True):
            # blobs a worker could not place (an MPI rank's workers)
            values.store(part, targets, allocate)
            state.add(part)
            size = int(bounds[k + 1] - bounds[k])
            done += size
            if progress is not None:
                progress.advance(size)
    state.done_by[transport.rank] = done
    return state


def _forked(c2: ClassTwo, targets: Phase2Targets, bounds: np.ndarray, jobs: int, traces: bool,
            progress: Progress | None, aside: Callable[[], None] | None) -> Phase2State:
    """One process's ``-j N`` phase 2 as N processes that take batches from shared tickets and keep their own
    state, sent once at the end (as MPI ranks do): no batch or result passes through a pool, whose hand-offs
    cost a worker about a millisecond per batch while the parent was busy with its own. Blobs go to the
    scratch files at offsets from the counter the processes share."""
    tickets = Tickets()
    n_batches = len(bounds) - 1
    trim_heap()  # as before any fork: what phase 1 and class 2 freed is not inherited as resident
    with contextlib.ExitStack() as stack:
        workers = [stack.enter_context(ForkedWorker(_worker, c2, targets, bounds, traces, tickets,
                                                    what="hpcsa prof")) for _ in range(jobs - 1)]
        if aside is not None:
            aside()
        state = Phase2State.empty(c2, bounds)
        while (i := tickets.take()) < n_batches:
            state.add(values.process_batch(c2, i, int(bounds[i]), int(bounds[i + 1]), targets, traces=traces))
            if progress is not None:  # the batches taken so far, by any process
                progress.advance(int(bounds[min(tickets.taken(), n_batches)]) - progress.done)
        for worker in workers:
            other, done, counts = worker.receive("phase 2")
            state.merge(other)
            del other
            rows = ramps(bounds[done], bounds[done + 1] - bounds[done])  # the profiles of those batches, in order
            state.place.n_values[rows], state.place.n_ctxs[rows], state.trace_count[rows] = counts
            del rows, counts
    state.done_by = {0: int(bounds[-1])}
    return state


def _worker(conn: Any, c2: ClassTwo, targets: Phase2Targets, bounds: np.ndarray, traces: bool,
            tickets: Tickets) -> None:
    """A forked worker's phase 2: its state without per-profile counts, which are kept for its own batches
    only and sent with them (a state's counts for every profile, written a batch at a time between the
    parent's batches, were all resident in each process, and twice more while sent: some 70 bytes a
    profile at the end of phase 2)."""
    state = Phase2State.empty(c2, bounds, counts=False)
    types = (state.place.n_values.dtype, state.place.n_ctxs.dtype, state.trace_count.dtype)  # (the parent's)
    done: list[int] = []
    parts: list[tuple[np.ndarray, ...]] = []
    while (i := tickets.take()) < len(bounds) - 1:
        out = values.process_batch(c2, i, int(bounds[i]), int(bounds[i + 1]), targets, traces=traces)
        state.add_totals(out)
        done.append(i)
        parts.append(tuple(c.astype(t) for c, t in zip((out.n_values, out.n_ctxs, out.trace_count), types,
                                                          strict=True)))
        del out
    counts = tuple(np.concatenate([p[k] for p in parts]) if parts else np.zeros(0, types[k]) for k in range(3))
    del parts
    conn.send(("phase 2", (state, np.array(done, np.int64), counts)))


def merge_states(parts: list[Phase2State]) -> Phase2State:
    state = parts[0]
    for other in parts[1:]:
        state.merge(other)
    return state
