"""Phase 1 of ``hpcsa prof`` scheduled on this rank: its share of the profiles surveyed in batches, the CPU
structure files they need parsed beside them, the reports merged associatively (see :mod:`.driver`); and, on
rank 0, the structure files that only other ranks' profiles need.

The work itself is :mod:`.phase1.survey`'s (a batch of profiles) and :mod:`.phase1.structs`'s (a structure
file); this module hands it out: to this process and its forked workers (:mod:`hpcsa.core.workers`), the
batches from this rank's share of the transport's tasks (:mod:`.transport`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from hpcsa.aggregate.handoff import Discovery, Parsed, Phase1Env, Phase1Share, StructModules
from hpcsa.aggregate.inputs import Inputs, StructInput
from hpcsa.aggregate.phase1 import survey
from hpcsa.aggregate.phase1.cache_lookups import CacheLookups
from hpcsa.aggregate.phase1.chain_warmer import ChainWarmer
from hpcsa.aggregate.phase1.structs import (
    file_size,
    mapped_if_small,
    parse_struct,
    remembered_if_small,
    struct_result,
    structs_for,
)
from hpcsa.aggregate.profile_table import ProfileInputs, ProfileTable, narrow_id_rows
from hpcsa.aggregate.transport import Single, Transport, run_shared, tasks_ahead
from hpcsa.core.arrays import sorted_unique
from hpcsa.core.progress import Progress
from hpcsa.core.ragged import Ragged
from hpcsa.core.workers import DynamicRun, LocalPool, can_fork, default_jobs
from hpcsa.formats.hpcstruct.model import StructureFile
from hpcsa.formats.hpcstruct.parsedcache import read_cached

#: Profiles per phase-1 task: enough to amortize a task, few enough to balance.
DISCOVER_BATCH_BYTES = 4 << 20

#: Phase-1 reports merged every so many (a worker holds the union of its batch plus a few reports). At 4,096
#: profiles, 16 reports held before a merge were the peak of `-j 2`'s phase 1 (60-64 MiB; 8: 59-60 MiB, no
#: more merge time: 18 against 23 ms at 4,096 profiles, 7 against 5-8 ms at 256).
MERGE_EVERY = 8


def phase1_task(env: Phase1Env | None, kind: str, payload: Any) -> Any:
    """One task of phase 1: parse a structure file, or survey a batch of profiles (merged) with ``env``."""
    if kind == "struct":
        return parse_struct(payload)
    assert env is not None
    return survey.survey_profiles(payload, env)


def _batches(profiles: ProfileInputs, jobs: int) -> list[np.ndarray]:
    """Profiles in batches, largest first (by path among equals): the profiles' indexes, per batch.

    Guided self-scheduling (Polychronopoulos and Kuck, IEEE Trans. Computers 36(12), 1987): a batch takes
    about 1/(2 ``jobs``) of the bytes not yet batched, at most DISCOVER_BATCH_BYTES (what one task holds) and
    at least 1/(64 ``jobs``) of them all. Large batches first keep the hand-offs and reports few; the small
    ones at the end leave no worker or rank idle for long while another finishes the phase's last batch.
    One worker has nobody to wait for: its batches are a quarter of the bytes each, at most the cap."""
    cost = profiles.cost
    order = np.lexsort((profiles.path_order(), -cost))
    ends = np.cumsum(cost[order], dtype=np.int64)
    total = int(ends[-1]) if len(ends) else 0
    workers = max(1, jobs)
    floor = max(1, total // (64 * workers) if workers > 1 else min(DISCOVER_BATCH_BYTES, total // 4))
    cuts: list[int] = []
    done, k = 0, 0
    while k < len(order):
        target = max(floor, min(DISCOVER_BATCH_BYTES, (total - done) // (2 * workers)))
        k = max(k + 1, int(np.searchsorted(ends, done + target, side="left")) + 1)  # through the one reaching it
        k = min(k, len(order))
        cuts.append(k)
        done = int(ends[k - 1])
    return [b for b in np.split(order, cuts[:-1]) if len(b)]


def run(inputs: Inputs, env: Phase1Env, jobs: int, progress: Progress | None = None,
        transport: Transport | None = None, parse_structs: bool = True, warmer: ChainWarmer | None = None,
        ) -> Phase1Share:
    """Read this rank's share of the profiles once (batches of similar size, largest first, handed out by
    the transport); parse each structure file a profile needs, once, as soon as it is known to be needed
    (ahead of the profiles still waiting), like hpcprof's lazy loading. Cache entries are looked up on a thread
    where a CPU is spare (:mod:`.phase1.cache_lookups`). Over MPI only rank 0 parses
    (only it classifies); :func:`complete_structs` adds what other ranks' profiles need.
    ``warmer`` computes the lexical chains of the sampled offsets between tasks (see
    :mod:`.phase1.chain_warmer`)."""
    transport = transport or Single()
    cpu_structs = inputs.cpu_structs if parse_structs else []
    parts: list[Discovery] = []
    listed: list[np.ndarray] = []  # the listing's rows of the union's table, part by part
    structs: Parsed = []
    scheduled: set[str] = set()
    seen_modules: set[int] = set()
    mapped = None
    if jobs > 1 and transport.size == 1:
        # small, nothing to parse: workers would cost more than they save (POOL_MIN_BYTES); entries found
        # without reading anything are checked on the lookup thread beside the profiles, others here, now
        if remembered_if_small(inputs, cpu_structs):
            jobs = 1
        else:
            mapped = mapped_if_small(inputs, cpu_structs, jobs)
            if mapped is not None:
                jobs = 1
    batches = _batches(inputs.profiles, jobs * transport.size)
    share = transport.tasks(f"phase 1, seed {env.seed}", len(batches))
    # One process works beside jobs - 1 forked workers (as in phases 2 and 3): -j 2 is two processes, not a third
    # that mostly waits for the other two (at the first run of the 10 MB shape the whole tree's peak went from
    # 83 to 74 MiB). It reads profile batches itself, between merging what the workers send, and leaves the
    # structure files to them (a long parse here would leave the workers' reports unread, and the workers
    # waiting) until no batch is left. Over MPI a rank's tasks come from the ranks' counter, a few at a time,
    # to its workers only.
    parent_works = jobs > 1 and transport.size == 1 and can_fork()
    workers = jobs - 1 if parent_works else min(jobs, len(batches) + len(cpu_structs)) or 1
    # a thread for the cache lookups where a CPU is left over (the ranks counted as if on this machine)
    spare_cpu = jobs * transport.size < default_jobs()
    with LocalPool(workers, shared=env, fork=parent_works) as pool, CacheLookups() as lookups:
        tasks = DynamicRun(pool)

        def batch(i: int) -> tuple[str, ProfileInputs]:
            return "profiles", inputs.profiles.take(batches[i])

        def more() -> None:
            i = next(share, None)
            if i is not None:
                tasks.submit(i, phase1_task, batch(i), priority=float(i))

        def add(entries: Parsed) -> None:
            structs.extend(entries)
            if warmer is not None:
                warmer.add_structs(entries)

        def found(s: StructInput, cached: StructureFile | None) -> None:
            if cached is not None:
                add([(s.path, s.measdir, m) for m in cached.modules])
            else:
                # ahead of the profiles, largest first: the longest parse starts first
                tasks.submit(("struct", s.path), phase1_task, ("struct", s),
                             priority=-1.0 - file_size(s.path))

        def handle(key: Any, result: Any) -> None:
            nonlocal parts
            for s, cached in lookups.finished():
                found(s, cached)
            if not isinstance(key, int):  # a structure file's
                add(struct_result(result))
                return
            listed.append(batches[key])  # the batch's rows of the listing: its table's inputs, given apart
            result.profiles = _without_inputs(result.profiles, inputs.profiles, batches[key])
            parts.append(result)
            if progress is not None:
                progress.advance(len(result.profiles))
            used = set(sorted_unique(result.raw.nodes["module"]).tolist())
            new = [ref for h, ref in result.raw.modules.items() if h not in seen_modules and h in used]
            seen_modules.update(used)
            for s in structs_for(new, cpu_structs):
                if s.path not in scheduled:
                    scheduled.add(s.path)
                    if mapped is not None:
                        found(s, mapped[s.path])
                    elif lookups.missed or not spare_cpu:  # (a first run: see phase1.cache_lookups)
                        found(s, read_cached(s.path))
                    else:
                        lookups.start(s)  # mapped here when found: cheaper than a worker's copy sent back
            if warmer is not None:
                warmer.add_points(result.raw)
            if len(parts) >= MERGE_EVERY:
                parts = [survey.merge(parts, take=True)]

        if parent_works:
            # a batch running and one waiting per worker; this process takes the rest, then what is left
            for key, result in run_shared(pool, phase1_task, share, batch, 2 * workers, parent_works=True,
                                          tasks=tasks):
                handle(key, result)
        else:
            # One process has no other rank to leave batches to: all are queued at once (the pool holds a few
            # in flight), so that no worker waits while this process looks up a structure file's cache entry.
            for _ in range(tasks_ahead(jobs) if transport.size > 1 else len(batches)):
                more()
            for key, result in tasks:
                if isinstance(key, int):
                    more()
                handle(key, result)
        while lookups.pending or tasks.pending:
            for s, cached in lookups.finished(wait=True):
                found(s, cached)
            for key, result in tasks.rest():  # parses of what the last lookups did not find
                handle(key, result)
    union = survey.merge(parts, take=True)
    del parts
    index = np.concatenate(listed) if listed else np.zeros(0, np.int64)
    listed.clear()
    union.profiles = replace(union.profiles, inputs=inputs.profiles.take(index))
    return Phase1Share(union, structs)


def _without_inputs(table: ProfileTable, listing: ProfileInputs, rows: np.ndarray) -> ProfileTable:
    """A batch's table without its inputs, which are the listing's ``rows`` (checked): the running union of
    phase 1 holds no second copy of the listing's names and sizes (some 26 bytes a profile), its inputs
    taken from the listing once it is complete; and its identifier tuples' rows narrowed (:func:`.narrow_id_rows`:
    some 30 bytes a profile less in the union, and in the copy each merge joins)."""
    given = table.inputs
    if len(given) != len(rows) or not (given.names.equals(listing.names.take(rows))
                                       and np.array_equal(given.size, listing.size[rows])):
        raise RuntimeError("a phase-1 report's profiles are not its batch's, in order")
    return replace(table, inputs=NO_INPUTS, id_tuple=Ragged(narrow_id_rows(table.id_tuple.rows), table.id_tuple.offsets))


#: The inputs of a table whose inputs are given apart (phase 1's running union).
NO_INPUTS = ProfileInputs.of([])


def merge_shares(parts: list[Phase1Share]) -> Phase1Share:
    """Phase-1 shares of several ranks (associative: the reduction up the rank tree)."""
    return Phase1Share(survey.merge([p.found for p in parts]), [s for p in parts for s in p.parsed])


def complete_structs(share: Phase1Share, inputs: Inputs, jobs: int) -> StructModules:
    """Every CPU structure file the union needs, parsed once: those parsed while reading, plus those of
    modules only other ranks' profiles use. In a fixed order (by file, not by completion): the first file
    describing a module is the one used."""
    raw = share.found.raw
    used = set(sorted_unique(raw.nodes["module"]).tolist())
    refs = [ref for h, ref in raw.modules.items() if h in used]
    done = {path for path, _, _ in share.parsed}
    missing = [s for s in structs_for(refs, inputs.cpu_structs) if s.path not in done]
    out = list(share.parsed)
    unparsed = []
    for s in missing:
        cached = read_cached(s.path)
        if cached is not None:
            out.extend((s.path, s.measdir, m) for m in cached.modules)
        else:
            unparsed.append(s)
    if unparsed:
        with LocalPool(min(jobs, len(unparsed)), shared=None) as pool:
            for _, result in pool.run(phase1_task, [("struct", s) for s in unparsed],
                                      cost=[float(file_size(s.path)) for s in unparsed]):
                out.extend(struct_result(result))
    out.sort(key=lambda t: t[0])
    return [(measdir, m) for _, measdir, m in out]
