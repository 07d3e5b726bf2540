"""Phases 2 and 3 of ``hpcsa prof`` over all profiles: each profile's values and trace streamed out,
then cct.db transposed by context ranges with the summary statistics, profile.db assembled (see :mod:`pipeline`)."""


from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import field
from typing import TYPE_CHECKING, Any

import numpy as np

from hpcsa.aggregate.prof import (
    copy_sources,
    profile_values,
    transpose,
    unified_tables,
)
from hpcsa.aggregate.prof.profile_table import ProfileTable
from hpcsa.aggregate.prof.transport import Single, Transport, run_shared, tasks_ahead, unwrap
from hpcsa.core.dataclass import dataclass
from hpcsa.core.fileio import copy_range
from hpcsa.core.progress import Progress
from hpcsa.core.workers import ForkedWorker, LocalPool, Tickets, can_fork, pool_min_bytes, trim_heap
from hpcsa.formats.db import cctdb, database, metadb, metricsyaml, profiledb, tracedb

if TYPE_CHECKING:
    from hpcsa.aggregate.prof.pipeline import Options


def phase2_task(shared: tuple[unified_tables.ClassTwo, profile_values.Sinks, bool], batch: list[int]
                ) -> profile_values.BatchOutput:
    """Class 1 for a batch of profiles, propagated together (one small message per batch, not per profile:
    with per-profile tasks the hand-offs between a pool's workers and its parent cost as much as the
    profiles). Blobs a worker could not place come back pending, for its rank to store."""
    c2, sinks, traces = shared
    return profile_values.process_batch(c2, batch, sinks, traces=traces)


#: Most input bytes (.hpcrun and .hpctrace) in one phase-2 batch: a batch's arrays take some tens of times
#: its input, so this bounds phase 2's memory whatever the number of profiles.
BATCH_BYTES = 128 << 10


def phase2_costs(profiles: ProfileTable) -> np.ndarray:
    """What a profile costs phase 2, in bytes: what phase 1 kept of it (its tree, values and node hashes)
    and its trace; its files' bytes where nothing was kept. (An .hpcrun file is mostly the alignment of its
    sections when its thread did little: a thousand threads waiting at a barrier are 6 KB each on disk and a
    few hundred bytes of tree and values.)"""
    kept = profiles.kept_file >= 0
    return np.where(kept, profiles.kept_size + profiles.inputs.trace_size, profiles.inputs.cost)


def phase2_batches(costs: list[int], workers: int) -> list[list[int]]:
    """Profiles largest first, cut into batches of about equal cost, a dozen per worker of all ranks (few
    enough to keep the hand-offs cheap, enough to balance the load by size), none over BATCH_BYTES unless
    a single profile is."""
    order = sorted(range(len(costs)), key=lambda i: (-costs[i], i))
    if not order:
        return []
    target = min(BATCH_BYTES, max(1.0, sum(costs) / (12 * max(1, workers))))
    batches: list[list[int]] = [[]]
    acc = 0.0
    for i in order:
        if batches[-1] and acc + costs[i] > target:
            batches.append([])
            acc = 0.0
        batches[-1].append(i)
        acc += costs[i]
    return batches


def phase3_task(shared: tuple[str, str, str, transpose.Placement, cctdb.CctLayout, transpose.StatPlan],
                bounds: list[int]) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    return transpose.transpose_ranges(*shared, bounds)


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


@dataclass
class Phase2State:
    """What phase 2 hands to phase 3: where each profile's blobs are, and the counts cct.db's layout needs.

    :meth:`add` takes one profile's output; :meth:`merge` combines the states of several workers or
    ranks (sums, ORs, min/max and disjoint placements: associative and exact, so any grouping gives the
    same result — an MPI transport reduces it up its tree).
    """

    place: transpose.Placement
    ctx_values: np.ndarray   # values per context, over all profiles
    ctx_bits: np.ndarray     # [contexts, words] the propMetricIds each context has, as bits
    trace_count: np.ndarray  # elements written per profile
    t_lo: int | None = None  # time range of the timepoints read
    t_hi: int | None = None
    done_by: dict[int, int] = field(default_factory=dict)  # profiles processed, per rank

    @classmethod
    def empty(cls, c2: unified_tables.ClassTwo) -> Phase2State:
        n = len(c2.profiles)
        words = max(1, (c2.n_prop_ids + 63) // 64)
        return cls(transpose.Placement(*(np.zeros(n, np.int64) for _ in range(6))), np.zeros(c2.n_ctx, np.int64),
                   np.zeros((c2.n_ctx, words), np.uint64), np.zeros(n, np.int64))

    def add(self, batch: profile_values.BatchOutput) -> None:
        """Take a batch's facts (its blobs stored)."""
        p = self.place
        for o in batch.profiles:
            i = o.index
            p.pms_offset[i], p.n_values[i], p.n_ctxs[i] = o.pms_offset, o.n_values, o.n_ctxs
            p.pms_size[i], p.aside_offset[i], p.n_aside[i] = o.pms_size, o.aside_offset, o.n_aside
            self.trace_count[i] = o.trace_count
            if o.trace_min is not None and o.trace_max is not None:
                self.t_lo = o.trace_min if self.t_lo is None else min(self.t_lo, o.trace_min)
                self.t_hi = o.trace_max if self.t_hi is None else max(self.t_hi, o.trace_max)
        self.ctx_values[batch.ctx] += batch.n_ctx_values  # contexts are distinct within a batch
        bc, bw, bb = batch.ctx_metric_bits
        self.ctx_bits[bc, bw] |= bb  # so are (context, word) pairs

    def merge(self, other: Phase2State) -> None:
        for name in ("pms_offset", "n_values", "n_ctxs", "pms_size", "aside_offset", "n_aside"):
            getattr(self.place, name)[:] += getattr(other.place, name)  # each profile is set in one state
        self.ctx_values += other.ctx_values
        self.ctx_bits |= other.ctx_bits
        self.trace_count += other.trace_count
        for rank, count in other.done_by.items():
            self.done_by[rank] = self.done_by.get(rank, 0) + count
        for lo, hi in ((other.t_lo, other.t_hi),):
            if lo is not None and hi is not None:
                self.t_lo = lo if self.t_lo is None else min(self.t_lo, lo)
                self.t_hi = hi if self.t_hi is None else max(self.t_hi, hi)

    def cct_layout(self) -> cctdb.CctLayout:
        return cctdb.CctLayout.from_counts(self.ctx_values, _popcount(self.ctx_bits))


def summary_values(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> profiledb.ProfileValues:
    """The summary profile from the ranges' parts (in range order)."""
    if not parts:
        z = np.zeros(0, np.int64)
        return profiledb.ProfileValues.from_triples(z, z, np.zeros(0))
    return profiledb.ProfileValues.from_triples(np.concatenate([p[0] for p in parts]),
                                                np.concatenate([p[1] for p in parts]),
                                                np.concatenate([p[2] for p in parts]))


def copy_profiles(profile_db: str, offsets: np.ndarray, pms_path: str, place: transpose.Placement,
                  rows: range) -> None:
    """Profiles ``rows``' thread blobs (0-based, canonical order), copied from the scratch file to their
    ``offsets`` in the partial profile.db, file to file in the kernel (:func:`copy_range`); every rank copies
    its share, rank 0 records them all (:meth:`ProfileDBWriter.record_many`)."""
    src = os.open(pms_path, os.O_RDONLY)
    try:
        dst = os.open(profile_db, os.O_WRONLY)
        try:
            for at, to, size in zip(place.pms_offset[rows].tolist(), offsets[rows].tolist(),
                                    place.pms_size[rows].tolist(), strict=True):
                copy_range(src, dst, at, to, size)
        finally:
            os.close(dst)
    finally:
        os.close(src)


def write_outputs(c2: unified_tables.ClassTwo, tmp: str, jobs: int, options: Options, progress: Progress,
                   timings: dict[str, float] | None = None, transport: Transport | None = None
                   ) -> tuple[int, int, list[int]]:
    """Phases 2 and 3 into the (temporary) database directory ``tmp``, by every rank of the transport with
    ``jobs`` workers each; (values written, trace elements, profiles per rank). Rank 0 writes meta.db, the metric taxonomy,
    the trace headers, the summary and profile.db; the ranks' workers write the class-1 blobs, trace lines
    and cct.db's blocks into the files rank 0 opened."""
    transport = transport or Single()
    timings = {} if timings is None else timings

    def lap(name: str) -> None:
        timings[name] = progress.elapsed() - sum(timings.values())

    n = len(c2.profiles)
    pms_path = os.path.join(tmp, ".profile.scratch")
    aside_path = os.path.join(tmp, ".aside.scratch")
    want_traces = options.traces and bool(c2.trace_reserve.any())
    with contextlib.ExitStack() as open_files:  # rank 0: trace.db and cct.db, until the database is complete
        held: dict[str, Any] = {}

        def begin() -> tuple[str | None, np.ndarray | None]:
            for p in (pms_path, aside_path):
                open(p, "wb").close()
            if not want_traces:
                return None, None
            tw = open_files.enter_context(tracedb.TraceDBWriter(os.path.join(tmp, database.TRACE),
                                                                np.arange(1, n + 1), reserve=c2.trace_reserve))
            held["trace"] = tw
            return tw.temp_path, tw.heads["pStart"].astype(np.int64)  # each profile's region (an array)

        trace_path, trace_offsets = transport.bcast(begin)

        def write_meta() -> None:
            """meta.db, the metric taxonomy and src/: rank 0 writes them beside its share of phase 2 (while its
            workers run, or between its tasks), as nothing else needs them; the other ranks do not wait."""
            start = progress.elapsed()
            meta = c2.take_meta()
            if options.sources:
                meta = copy_sources.copy_sources(meta, tmp, options.replace_paths)[0]
            metadb.write_metadb(os.path.join(tmp, database.META), meta)
            os.makedirs(os.path.join(tmp, "metrics"))
            metricsyaml.write_metrics_yaml(os.path.join(tmp, database.METRICS_YAML), c2.metrics.taxonomy())
            timings["meta.db, metrics/default.yaml"] = progress.elapsed() - start

        # Phase 2: every rank its share of the profiles; the states reduced up the tree.
        allocate, in_workers = transport.counter(("pms", "aside"))
        sinks = profile_values.Sinks(pms_path, aside_path, trace_path, trace_offsets,
                               allocate if in_workers or jobs == 1 else None)
        found = transport.reduce(lambda: phase2_share(c2, sinks, allocate, jobs, options.traces, progress, transport,
                                                      write_meta if transport.is_root else None), merge_states)

        def layout() -> tuple[transpose.Placement, cctdb.CctLayout, list[list[int]], str, str, np.ndarray]:
            state: Phase2State = unwrap(found)
            tw = held.get("trace")
            if tw is not None:
                for i in range(n):
                    tw.record(i, tw.region(i)[0], int(state.trace_count[i]))
                tw.time_range = (state.t_lo or 0, state.t_hi or 0)
            lap("phase 2: profiles (propagate, PMS blobs, traces)")
            held["counts"] = (int(state.place.n_values.sum()), int(state.trace_count.sum()),
                              [state.done_by.get(r, 0) for r in range(transport.size)])
            lay = state.cct_layout()
            # as many groups as processes; one when cct.db is too small to pay for a worker (POOL_MIN_BYTES)
            parallel = jobs * transport.size if lay.end - lay.data_start >= pool_min_bytes() else 1
            groups = range_groups(lay.ranges(transpose.RANGE_BYTES) if c2.n_ctx else [], parallel)
            cw = open_files.enter_context(cctdb.CctDBWriter(os.path.join(tmp, database.CCT), lay))
            pw = open_files.enter_context(profiledb.ProfileDBWriter(os.path.join(tmp, database.PROFILE), c2.id_tuples))
            held["profiledb"] = pw
            offsets = pw.allocate_many(state.place.pms_size)  # the thread blobs in canonical order
            return state.place, lay, groups, cw.temp_path, pw.temp_path, offsets

        place, lay, groups, cct_path, pdb_path, pdb_offsets = transport.bcast(layout)
        found = None  # the reduced state: rank 0 keeps only what it returned

        # Phase 3: cct.db by groups of context ranges, handed out across ranks; the summary on the way. Each
        # rank copies its share of the thread blobs into profile.db meanwhile (while its workers transpose,
        # or after its first group).
        shared = (pms_path, aside_path, cct_path, place, lay, transpose.StatPlan.build(c2.metrics))
        share = range(n * transport.rank // transport.size, n * (transport.rank + 1) // transport.size)
        parts = transport.reduce(lambda: phase3_share(shared, groups, jobs, transport, lambda: copy_profiles(
            pdb_path, pdb_offsets, pms_path, place, share)), merge_parts)

        def finish() -> tuple[int, int, list[int]]:
            parts_of = unwrap(parts)
            summary = summary_values([part for i in sorted(parts_of) for part in parts_of[i]])
            lap("phase 3: cct.db transpose, summary statistics; profile.db's thread blobs")
            held["profiledb"].record_many(np.arange(1, n + 1), place.n_values, place.n_ctxs, pdb_offsets,
                                          place.pms_size)
            held["profiledb"].write_summary(summary)
            open_files.close()  # cct.db's footer, trace.db's headers, profile.db's metadata: all complete
            for p in (pms_path, aside_path):
                os.unlink(p)
            lap("profile.db's summary")
            n_values, n_trace, shares = held["counts"]
            return n_values + len(summary.values), n_trace, shares

        return transport.bcast(finish)


def phase2_share(c2: unified_tables.ClassTwo, sinks: profile_values.Sinks, allocate: Callable[[str, int], int], jobs: int,
                 traces: bool, progress: Progress | None, transport: Transport,
                 aside: Callable[[], None] | None = None) -> Phase2State:
    """Class 1 for this rank's share of the profiles (batches handed out largest first), with ``jobs``
    workers; and ``aside()``, other work of this rank, while its workers run (see :func:`run_shared`). One
    process's workers take batches by themselves (:func:`_phase2_forked`); an MPI rank's go through a pool
    (the batches come from the ranks' counter, which only the rank's own process may use)."""
    batches = phase2_batches(phase2_costs(c2.profiles).tolist(), jobs * transport.size)
    if jobs > 1 and transport.size == 1 and sinks.allocate is not None and can_fork():
        return _phase2_forked(c2, sinks, batches, jobs, traces, progress, aside)
    state = Phase2State.empty(c2)
    done = 0
    # This process works beside jobs - 1 forked workers (as in phase 3): -j N keeps N processes busy, where
    # N workers and a parent handing them batches of a few milliseconds each would share N CPUs.
    helpers = min(jobs, len(batches)) - 1
    with LocalPool(max(1, helpers), shared=(c2, sinks, traces), fork=helpers > 0) as pool:
        for k, part in run_shared(pool, phase2_task, transport.tasks("phase 2", len(batches)),
                                  lambda k: (batches[k],), 2 * helpers if helpers > 0 else tasks_ahead(1),
                                  meanwhile=aside, parent_works=True):
            profile_values.store(part, sinks, allocate)  # blobs a worker could not place (an MPI rank's workers)
            state.add(part)
            done += len(batches[k])
            if progress is not None:
                progress.advance(len(batches[k]))
    state.done_by[transport.rank] = done
    return state


def _phase2_forked(c2: unified_tables.ClassTwo, sinks: profile_values.Sinks, batches: list[list[int]], jobs: int,
                   traces: bool, progress: Progress | None, aside: Callable[[], None] | None) -> Phase2State:
    """One process's ``-j N`` phase 2 as N processes that take batches from shared tickets and keep their own
    state, sent once at the end (as MPI ranks do): no batch or result passes through a pool, whose hand-offs
    cost a worker about a millisecond per batch while the parent was busy with its own. Blobs go to the
    scratch files at offsets from the counter the processes share."""
    tickets = Tickets()
    ends = np.cumsum([len(b) for b in batches])
    trim_heap()  # as before any fork: what phase 1 and class 2 freed is not inherited as resident
    with contextlib.ExitStack() as stack:
        workers = [stack.enter_context(ForkedWorker(_phase2_worker, c2, sinks, batches, traces, tickets,
                                                    what="hpcsa prof")) for _ in range(jobs - 1)]
        if aside is not None:
            aside()
        state = Phase2State.empty(c2)
        while (i := tickets.take()) < len(batches):
            state.add(profile_values.process_batch(c2, batches[i], sinks, traces=traces))
            if progress is not None:  # the batches taken so far, by any process
                progress.advance(int(ends[min(tickets.taken(), len(batches)) - 1]) - progress.done)
        for worker in workers:
            state.merge(worker.receive("phase 2"))
    state.done_by = {0: int(ends[-1]) if len(ends) else 0}
    return state


def _phase2_worker(conn: Any, c2: unified_tables.ClassTwo, sinks: profile_values.Sinks, batches: list[list[int]],
                   traces: bool, tickets: Tickets) -> None:
    state = Phase2State.empty(c2)
    while (i := tickets.take()) < len(batches):
        state.add(profile_values.process_batch(c2, batches[i], sinks, traces=traces))
    conn.send(("phase 2", state))


def merge_states(parts: list[Phase2State]) -> Phase2State:
    state = parts[0]
    for other in parts[1:]:
        state.merge(other)
    return state


def phase3_share(shared: tuple[str, str, str, transpose.Placement, cctdb.CctLayout, transpose.StatPlan],
                 groups: list[list[int]], jobs: int, transport: Transport, aside: Callable[[], None] | None = None
                 ) -> dict[int, list[tuple[np.ndarray, np.ndarray, np.ndarray]]]:
    """cct.db's blocks and the summary values of this rank's share of the range groups (largest first); and
    ``aside()``, other work of this rank, while its workers run (see :func:`run_shared`)."""
    order = sorted(range(len(groups)), key=lambda g: (-(groups[g][-1] - groups[g][0]), g))
    out: dict[int, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}
    # This process transposes beside jobs - 1 forked workers: -j N keeps N processes busy, and one fewer
    # holds a range's gathered values (the largest memory of the run, per process).
    helpers = min(jobs, len(groups)) - 1
    with LocalPool(max(1, helpers), shared=shared, fork=helpers > 0) as pool:
        for k, parts in run_shared(pool, phase3_task, transport.tasks("phase 3", len(groups)),
                                   lambda k: (groups[order[k]],), max(1, helpers), meanwhile=aside,
                                   parent_works=True):
            out[order[k]] = parts
    return out


def merge_parts(parts: list[dict[int, Any]]) -> dict[int, Any]:
    out: dict[int, Any] = {}
    for p in parts:
        out.update(p)
    return out


def _popcount(bits: np.ndarray) -> np.ndarray:
    if not bits.size:
        return np.zeros(len(bits), np.int64)
    b = bits.view(np.uint8).reshape(len(bits), -1)
    return np.unpackbits(b, axis=1).sum(axis=1).astype(np.int64)
