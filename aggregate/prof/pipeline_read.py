"""Phase 1 of ``hpcsa prof`` over all inputs: GPU call graphs first, then profiles surveyed in batches and
CPU structure files parsed beside them, the reports merged associatively (see :mod:`pipeline`)."""


from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import numpy as np

from hpcsa.aggregate.prof import (
    lexical,
    rawtree,
    survey,
)
from hpcsa.aggregate.prof.chain_warmer import ChainWarmer
from hpcsa.aggregate.prof.inputs import Inputs, StructInput
from hpcsa.aggregate.prof.profile_table import ProfileInputs
from hpcsa.aggregate.prof.struct_lookups import CacheLookups
from hpcsa.aggregate.prof.transport import Single, Transport, run_shared, tasks_ahead
from hpcsa.core.arrays import sorted_unique
from hpcsa.core.progress import Progress
from hpcsa.core.threads import map_in_threads
from hpcsa.core.workers import DynamicRun, LocalPool, can_fork, default_jobs, pool_min_bytes
from hpcsa.formats.hpcstruct.model import C, Module, StructureFile
from hpcsa.formats.hpcstruct.parsedcache import read_cached, read_entry, read_structure, store_structure

if TYPE_CHECKING:  # hpcsa.gpucct (and networkx) are imported only when there are GPU structure files
    from hpcsa.gpucct import CallGraph

#: Profiles per phase-1 task: enough to amortize a task, few enough to balance.
DISCOVER_BATCH_BYTES = 4 << 20


SEED_RETRIES = 3


#: Phase-1 reports merged every so many (a worker holds the union of its batch plus a few reports). At 4,096
#: profiles, 16 reports held before a merge were the peak of `-j 2`'s phase 1 (60-64 MiB; 8: 59-60 MiB, no
#: more merge time: 18 against 23 ms at 4,096 profiles, 7 against 5-8 ms at 256).
MERGE_EVERY = 8


def is_gpu_struct(s: StructInput) -> bool:
    name = os.path.basename(s.path)
    return ".gpubin" in name or (s.module is not None and lexical.hashed_name(s.module) is not None
                                 and lexical.hashed_name(s.module)[0] == "gpubins")  # type: ignore[index]


def has_call_graph(module: Module) -> bool:
    """hpcprof reconstructs when the LM says has-calls or carries call sites (else: no flow graph)."""
    return bool(module.has_calls) or module.count(C) > 0


def gpu_env(structs: list[StructInput], seed: int, scratch: str | None = None
            ) -> tuple[survey.Phase1Env, list[tuple[str | None, Module]]]:
    by_key: dict[str, CallGraph] = {}
    by_name: dict[str, CallGraph] = {}
    parsed: list[tuple[str | None, Module]] = []
    for s in structs:
        if not is_gpu_struct(s):
            continue
        for module in read_structure(s.path).modules:
            parsed.append((s.measdir, module))
            if not has_call_graph(module):
                continue
            from hpcsa.gpucct.fromstruct import call_graph_from_module
            graph = call_graph_from_module(module, source=s.path)
            key = lexical.module_key(module.path, s.measdir) if s.measdir else os.path.normpath(module.path)
            by_key[key] = graph
            named = lexical.hashed_name(module.path)
            if named is not None:
                by_name[named[1]] = graph
    return survey.Phase1Env(by_key, by_name, seed, scratch), parsed


def phase1_task(env: survey.Phase1Env, kind: str, payload: Any) -> Any:
    """One task of phase 1: parse a structure file, or survey a batch of profiles (merged)."""
    if kind == "struct":
        s: StructInput = payload
        digest = store_structure(s.path)
        if digest is not None:
            return s, digest  # cached: the caller maps the entry (cheaper than this worker's copy sent back)
        return [(s.path, s.measdir, m) for m in read_structure(s.path).modules]
    return survey.survey_profiles(payload, env)


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0  # the worker reports it


def struct_result(result: Parsed | tuple[StructInput, str]) -> Parsed:
    """What :func:`phase1_task` returned for a structure file, as parsed modules (a cached one mapped: the
    worker's hash of the bytes it parsed names the entry)."""
    if isinstance(result, list):
        return result
    s, digest = result
    cached = read_entry(digest)
    sf = cached if cached is not None else read_structure(s.path)  # the entry went away meanwhile
    return [(s.path, s.measdir, m) for m in sf.modules]


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


def structs_for(refs: list[rawtree.ModuleRef], structs: list[StructInput]) -> list[StructInput]:
    """The structure files that may describe any of these load modules (by recorded or resolved path, or by
    the content hash in a gpubin's name); files whose LM was not found in their head always qualify."""
    keys = {r.key for r in refs} | {os.path.normpath(r.path) for r in refs}
    names = {lexical.hashed_name(r.key) for r in refs} - {None}
    out = []
    for s in structs:
        if s.module is None:
            out.append(s)
            continue
        key = lexical.module_key(s.module, s.measdir) if s.measdir else os.path.normpath(s.module)
        if key in keys or os.path.normpath(s.module) in keys or lexical.hashed_name(s.module) in names:
            out.append(s)
    return out


Parsed = list[tuple[str, str | None, Module]]  # (structure file, measurement directory, module)


def read_share(inputs: Inputs, env: survey.Phase1Env, jobs: int, progress: Progress | None = None,
               transport: Transport | None = None, parse_structs: bool = True, warmer: ChainWarmer | None = None,
               ) -> tuple[survey.Discovery, Parsed]:
    """Read this rank's share of the profiles once (batches of similar size, largest first, handed out by
    the transport); parse each structure file a profile needs, once, as soon as it is known to be needed
    (ahead of the profiles still waiting), like hpcprof's lazy loading. Cache entries are looked up on a thread
    where a CPU is spare (:mod:`struct_lookups`). Over MPI only rank 0 parses
    (only it classifies); :func:`complete_structs` adds what other ranks' profiles need. ``warmer``
    computes the lexical chains of the sampled offsets between tasks (see :mod:`chain_warmer`)."""
    transport = transport or Single()
    cpu_structs = [s for s in inputs.structs if not is_gpu_struct(s)] if parse_structs else []
    parts: list[survey.Discovery] = []
    structs: Parsed = []
    scheduled: set[str] = set()
    seen_modules: set[int] = set()
    mapped = _mapped_if_small(inputs, cpu_structs, jobs) if jobs > 1 and transport.size == 1 else None
    if mapped is not None:  # small, nothing to parse: workers would cost more than they save (POOL_MIN_BYTES)
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
                tasks.submit(("struct", s.path), phase1_task, ("struct", s), priority=-1.0 - _size(s.path))

        def handle(key: Any, result: Any) -> None:
            nonlocal parts
            for s, cached in lookups.finished():
                found(s, cached)
            if not isinstance(key, int):  # a structure file's
                add(struct_result(result))
                return
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
                    elif lookups.missed or not spare_cpu:  # (a first run: see struct_lookups)
                        found(s, read_cached(s.path))
                    else:
                        lookups.start(s)  # mapped here when found: cheaper than a worker's copy sent back
            if warmer is not None:
                warmer.add_points(result.raw)
            if len(parts) >= MERGE_EVERY:
                parts = [survey.merge(parts)]

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
    return survey.merge(parts), structs


def _mapped_if_small(inputs: Inputs, cpu_structs: list[StructInput], jobs: int) -> dict[str, StructureFile] | None:
    """Every CPU structure file's cache entry, mapped, when the profiles are fewer bytes than a pool pays for
    and every entry exists (the usual second run of a small measurement): phase 1 then runs in this process.
    None otherwise. The smallest file is looked up first, so a first run hashes little before it knows; the
    others on ``jobs`` threads, largest first (hashing and checking an entry release the GIL)."""
    if inputs.total_bytes >= pool_min_bytes():
        return None
    by_size = sorted(cpu_structs, key=lambda s: (_size(s.path), s.path))
    if not by_size:
        return {}
    smallest = read_cached(by_size[0].path)
    if smallest is None:
        return None
    rest = [s.path for s in reversed(by_size[1:])]
    found = dict(zip(rest, map_in_threads(read_cached, rest, jobs), strict=True))
    if any(sf is None for sf in found.values()):
        return None
    return {by_size[0].path: smallest, **found}


def merge_shares(parts: list[tuple[survey.Discovery, Parsed]]) -> tuple[survey.Discovery, Parsed]:
    """Phase-1 shares of several ranks (associative: the reduction up the rank tree)."""
    return survey.merge([d for d, _ in parts]), [s for _, p in parts for s in p]


def complete_structs(disc: survey.Discovery, parsed: Parsed, inputs: Inputs, jobs: int
                     ) -> list[tuple[str | None, Module]]:
    """Every CPU structure file the union needs, parsed once: those parsed while reading, plus those of
    modules only other ranks' profiles use. In a fixed order (by file, not by completion): the first file
    describing a module is the one used."""
    used = set(sorted_unique(disc.raw.nodes["module"]).tolist())
    refs = [ref for h, ref in disc.raw.modules.items() if h in used]
    done = {path for path, _, _ in parsed}
    missing = [s for s in structs_for(refs, [s for s in inputs.structs if not is_gpu_struct(s)])
               if s.path not in done]
    out = list(parsed)
    unparsed = []
    for s in missing:
        cached = read_cached(s.path)
        if cached is not None:
            out.extend((s.path, s.measdir, m) for m in cached.modules)
        else:
            unparsed.append(s)
    missing = unparsed
    if missing:
        with LocalPool(min(jobs, len(missing)), shared=None) as pool:
            for _, result in pool.run(phase1_task, [("struct", s) for s in missing],
                                      cost=[float(_size(s.path)) for s in missing]):
                out.extend(struct_result(result))
    out.sort(key=lambda t: t[0])
    return [(measdir, m) for _, measdir, m in out]


def run_phase1(inputs: Inputs, env: survey.Phase1Env, jobs: int, progress: Progress | None = None
               ) -> tuple[survey.Discovery, list[tuple[str | None, Module]]]:
    """Phase 1 in one process: every profile read once, the structure files it needs parsed."""
    disc, parsed = read_share(inputs, env, jobs, progress)
    return disc, complete_structs(disc, parsed, inputs, jobs)
