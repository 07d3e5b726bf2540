"""``hpcsa prof`` as phases: functions of their inputs, run by a transport.

The scheme is hpcprof-mpi's (seed 000 §3.2; reference/hpctoolkit.md §4.3):

0. GPU structure files are parsed and their call graphs built (small; every
   reader of phase 1 needs them).
1. **Class 2.** Every profile is read once (:func:`survey.survey_profile`) and
   reported as raw nodes + metric table + identity; reports merge
   associatively (per worker, then at the coordinator; over MPI up a t-ary
   tree to rank 0). CPU structure files are parsed in parallel with this, each
   once. The coordinator expands the union into the unified tree, assigns
   canonical ids, metric ids, profile order and trace layout
   (:func:`unified_tables.assemble`), and writes meta.db and metrics/default.yaml.
   The result is shared with every worker (fork; over MPI a broadcast).
2. **Class 1.** Every profile is read a second time and processed
   (:func:`profile_values.process_profile`): its PMS blob goes to a scratch file at
   an offset from a shared counter, its trace line into its reserved region of
   trace.db; it returns the counts cct.db's layout needs (summed/ORed: an
   associative reduction).
3. **CMS and class 3.** Context ranges are transposed into cct.db and reduced
   into the summary statistics in canonical profile order
   (:func:`transpose.transpose_range`). profile.db is assembled from the
   scratch blobs in canonical profile order, the summary last.

Everything is written inside a temporary directory renamed into place when
complete (:func:`hpcsa.fileio.atomic_dir`). Ids, profile order and layout are
canonical, so the database is byte-identical for any number of workers or
ranks.

Transports (:mod:`transport`): :func:`run` and :func:`write_outputs` are the
one driver, written against a :class:`transport.Transport`. With
:class:`transport.Single` (one process and its ``-j`` workers) every
collective is the identity; with :class:`mpi.MpiTransport` every rank runs the
same code: its share of each phase's tasks (profile batches, profiles, context
range groups: largest first, taken from a counter shared by the ranks), the
phase-1 reports and phase-2 states reduced up a t-ary tree to rank 0, class 2
and the layouts broadcast from it. Rank 0 alone parses CPU structure files,
classifies, and writes meta.db, the taxonomy, trace headers, the summary and
profile.db; class-1 blobs, trace lines and cct.db blocks are written by every
rank into the files rank 0 opened.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hpcsa.aggregate.db import cctdb, database, metadb, metricsyaml, profiledb, tracedb
from hpcsa.aggregate.prof import (
    copy_sources,
    lexical,
    profile_values,
    rawtree,
    survey,
    transpose,
    unified_tables,
)
from hpcsa.aggregate.prof.inputs import Inputs, ProfileInput, StructInput, default_output_name
from hpcsa.aggregate.prof.transport import Single, Transport, unwrap
from hpcsa.errors import HpcsaError
from hpcsa.fileio import atomic_dir
from hpcsa.gpucct import CallGraph
from hpcsa.gpucct.fromstruct import call_graph_from_module
from hpcsa.progress import Progress
from hpcsa.structure.model import C, Module
from hpcsa.structure.parsedcache import read_cached, read_structure
from hpcsa.workers import DynamicRun, LocalPool

#: Profiles per phase-1 task: enough to amortize a task, few enough to balance.
DISCOVER_BATCH_BYTES = 4 << 20
SEED_RETRIES = 3
#: Phase-1 reports merged every so many (a worker holds the union of its batch plus a few reports).
MERGE_EVERY = 16


@dataclass
class Options:
    output: str | None = None
    jobs: int = 1
    statistics: tuple[str, ...] = ("Sum",)
    traces: bool = True
    fallback: bool = True           # read binaries of modules without structure (when trusted)
    progress: bool | None = None    # None: on a terminal
    sources: bool = True            # copy readable source files into src/ (as hpcprof does)
    replace_paths: tuple[tuple[str, str], ...] = ()  # -R OLD=NEW prefixes for finding them


@dataclass
class Result:
    path: str
    profiles: int
    contexts: int
    values: int
    trace_elements: int
    seconds: float
    warnings: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)  # seconds per phase
    binaries: list[str] = field(default_factory=list)  # binaries read in place of structure files
    rank_profiles: list[int] = field(default_factory=list)  # profiles each rank processed in phase 2


# -- phase 0: GPU call graphs -------------------------------------------------------------------------------


def is_gpu_struct(s: StructInput) -> bool:
    name = os.path.basename(s.path)
    return ".gpubin" in name or (s.module is not None and lexical.hashed_name(s.module) is not None
                                 and lexical.hashed_name(s.module)[0] == "gpubins")  # type: ignore[index]


def has_call_graph(module: Module) -> bool:
    """hpcprof reconstructs when the LM says has-calls or carries call sites (else: no flow graph)."""
    return bool(module.has_calls) or module.count(C) > 0


def gpu_env(structs: list[StructInput], seed: int) -> tuple[survey.Phase1Env, list[tuple[str | None, Module]]]:
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
            graph = call_graph_from_module(module, source=s.path)
            key = lexical.module_key(module.path, s.measdir) if s.measdir else os.path.normpath(module.path)
            by_key[key] = graph
            named = lexical.hashed_name(module.path)
            if named is not None:
                by_name[named[1]] = graph
    return survey.Phase1Env(by_key, by_name, seed), parsed


# -- phase 1 ----------------------------------------------------------------------------------------------


def phase1_task(env: survey.Phase1Env, kind: str, payload: Any) -> Any:
    """One task of phase 1: parse a structure file, or survey a batch of profiles (merged)."""
    if kind == "struct":
        s: StructInput = payload
        return [(s.path, s.measdir, m) for m in read_structure(s.path).modules]
    batch: list[ProfileInput] = payload
    parts: list[survey.Discovery] = []
    for p in batch:
        parts.append(survey.survey_profile(p, env))
        if len(parts) >= MERGE_EVERY:  # memory bounded by the union, not by the batch's profiles
            parts = [survey.merge(parts)]
    return survey.merge(parts)


def _batches(profiles: list[ProfileInput], jobs: int) -> list[list[ProfileInput]]:
    """Profiles in batches of similar total size, largest first, at least a few batches per worker."""
    order = sorted(profiles, key=lambda p: (-(p.size + p.trace_size), p.path))
    total = sum(p.size + p.trace_size for p in order)
    target = max(1, min(DISCOVER_BATCH_BYTES, total // max(1, 4 * jobs) + 1))
    out: list[list[ProfileInput]] = []
    cur: list[ProfileInput] = []
    size = 0
    for p in order:
        cur.append(p)
        size += p.size + p.trace_size
        if size >= target:
            out.append(cur)
            cur, size = [], 0
    if cur:
        out.append(cur)
    return out


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


def _ahead(jobs: int) -> int:
    """Tasks a rank takes from its share before one finishes: one inline, one more than its workers in a pool
    (so no worker waits for the next task, and an MPI rank does not hoard tasks another rank could run)."""
    return 1 if jobs <= 1 else jobs + 1


def run_shared(pool: LocalPool, fn: Callable[..., Any], share: Iterator[int], args_of: Callable[[int], tuple[Any, ...]],
               ahead: int) -> Iterator[tuple[int, Any]]:
    """``fn(shared, *args_of(k))`` for each task ``k`` handed to this rank, as the tasks finish. A task is
    taken from ``share`` only when there is room for it (at most ``ahead`` waiting or running)."""
    tasks = DynamicRun(pool)

    def more() -> None:
        k = next(share, None)
        if k is not None:
            tasks.submit(k, fn, args_of(k), priority=float(k))

    for _ in range(ahead):
        more()
    for k, result in tasks:
        more()
        yield k, result


Parsed = list[tuple[str, str | None, Module]]  # (structure file, measurement directory, module)


def read_share(inputs: Inputs, env: survey.Phase1Env, jobs: int, progress: Progress | None = None,
               transport: Transport | None = None, parse_structs: bool = True) -> tuple[survey.Discovery, Parsed]:
    """Read this rank's share of the profiles once (batches of similar size, largest first, handed out by
    the transport); parse each structure file a profile needs, once, as soon as it is known to be needed
    (ahead of the profiles still waiting), like hpcprof's lazy loading. Over MPI only rank 0 parses
    (only it classifies); :func:`complete_structs` adds what other ranks' profiles need."""
    transport = transport or Single()
    cpu_structs = [s for s in inputs.structs if not is_gpu_struct(s)] if parse_structs else []
    parts: list[survey.Discovery] = []
    structs: Parsed = []
    scheduled: set[str] = set()
    seen_modules: set[int] = set()
    batches = _batches(inputs.profiles, jobs * transport.size)
    share = transport.tasks(f"phase 1, seed {env.seed}", len(batches))
    with LocalPool(min(jobs, len(batches) + len(cpu_structs)) or 1, shared=env) as pool:
        tasks = DynamicRun(pool)

        def more() -> None:
            i = next(share, None)
            if i is not None:
                tasks.submit(("profiles", i), phase1_task, ("profiles", batches[i]), priority=float(i))

        for _ in range(_ahead(jobs)):
            more()
        for (kind, _), result in tasks:
            if kind == "struct":
                structs.extend(result)
                continue
            more()
            parts.append(result)
            if progress is not None:
                progress.advance(len(result.profiles))
            used = set(np.unique(result.raw.nodes["module"]).tolist())
            new = [ref for h, ref in result.raw.modules.items() if h not in seen_modules and h in used]
            seen_modules.update(used)
            for s in structs_for(new, cpu_structs):
                if s.path not in scheduled:
                    scheduled.add(s.path)
                    cached = read_cached(s.path)  # mapped here: cheaper than a worker's copy sent back
                    if cached is not None:
                        structs.extend((s.path, s.measdir, m) for m in cached.modules)
                    else:
                        tasks.submit(("struct", s.path), phase1_task, ("struct", s), priority=-1.0)
            if len(parts) >= MERGE_EVERY:
                parts = [survey.merge(parts)]
    return survey.merge(parts), structs


def merge_shares(parts: list[tuple[survey.Discovery, Parsed]]) -> tuple[survey.Discovery, Parsed]:
    """Phase-1 shares of several ranks (associative: the reduction up the rank tree)."""
    return survey.merge([d for d, _ in parts]), [s for _, p in parts for s in p]


def complete_structs(disc: survey.Discovery, parsed: Parsed, inputs: Inputs, jobs: int
                     ) -> list[tuple[str | None, Module]]:
    """Every CPU structure file the union needs, parsed once: those parsed while reading, plus those of
    modules only other ranks' profiles use. In a fixed order (by file, not by completion): the first file
    describing a module is the one used."""
    used = set(np.unique(disc.raw.nodes["module"]).tolist())
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
            for _, result in pool.run(phase1_task, [("struct", s) for s in missing]):
                out.extend(result)
    out.sort(key=lambda t: t[0])
    return [(measdir, m) for _, measdir, m in out]


def run_phase1(inputs: Inputs, env: survey.Phase1Env, jobs: int, progress: Progress | None = None
               ) -> tuple[survey.Discovery, list[tuple[str | None, Module]]]:
    """Phase 1 in one process: every profile read once, the structure files it needs parsed."""
    disc, parsed = read_share(inputs, env, jobs, progress)
    return disc, complete_structs(disc, parsed, inputs, jobs)


# -- phase 2 ----------------------------------------------------------------------------------------------


def phase2_task(shared: tuple[unified_tables.ClassTwo, profile_values.Sinks, bool], batch: list[int]
                ) -> tuple[Phase2State, list[tuple[int, tuple[bytes, bytes]]]]:
    """Class 1 for a batch of profiles, their facts folded into one state where they are computed (one
    small message per batch, not per profile: with per-profile tasks the hand-offs between a pool's
    workers and its parent cost as much as the profiles). Blobs a worker could not place come back as
    (profile, blobs) for its rank to store."""
    c2, sinks, traces = shared
    state = Phase2State.empty(c2)
    pending = []
    for index in batch:
        o = profile_values.process_profile(c2, index, sinks, traces=traces)
        if o.pending is not None:
            pending.append((index, o.pending))
            o.pending = None
        state.add(o)
    return state, pending


def phase2_batches(costs: list[int], workers: int) -> list[list[int]]:
    """Profiles largest first, cut into batches of about equal cost, a dozen per worker of all ranks (few
    enough to keep the hand-offs cheap, enough to balance the load by size)."""
    order = sorted(range(len(costs)), key=lambda i: (-costs[i], i))
    if not order:
        return []
    target = max(1.0, sum(costs) / (12 * max(1, workers)))
    batches: list[list[int]] = [[]]
    acc = 0.0
    for i in order:
        if batches[-1] and acc + costs[i] > target:
            batches.append([])
            acc = 0.0
        batches[-1].append(i)
        acc += costs[i]
    return batches


# -- phase 3 ----------------------------------------------------------------------------------------------


def phase3_task(shared: tuple[str, str, str, transpose.Placement, cctdb.CctLayout, transpose.StatPlan],
                bounds: list[int]) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    return transpose.transpose_ranges(*shared, bounds)


def range_groups(ranges: list[tuple[int, int]], jobs: int) -> list[list[int]]:
    """Consecutive ranges in groups (a few per worker), as bounds ``[lo0, lo1, ..., hi]``."""
    if not ranges:
        return []
    n_groups = min(len(ranges), 2 * jobs if jobs > 1 else 1)
    cuts = np.linspace(0, len(ranges), n_groups + 1).round().astype(int)
    return [[ranges[i][0] for i in range(a, b)] + [ranges[b - 1][1]]
            for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist(), strict=True) if b > a]


# -- the whole run ----------------------------------------------------------------------------------------


def run(inputs: Inputs, options: Options, transport: Transport | None = None) -> Result:
    """The whole aggregation. Over MPI every rank calls it with its transport and gets the same result;
    rank 0 classifies, assigns ids and writes everything but the class-1 data and cct.db's blocks."""
    transport = transport or Single()
    progress = Progress("hpcsa prof", None, enabled=options.progress if transport.size == 1 else False)
    jobs = max(1, options.jobs)
    timings: dict[str, float] = {}

    def lap(name: str) -> None:
        timings[name] = progress.elapsed() - sum(timings.values())

    held: dict[str, Any] = {}  # rank 0's class-2 inputs between the steps

    def phase1_share(seed: int) -> tuple[survey.Discovery, Parsed]:
        env, gpu_structs = gpu_env(inputs.structs, seed=seed)
        held["env"], held["gpu_structs"] = env, gpu_structs
        lap("GPU call graphs")
        progress.what, progress.total, progress.done = "hpcsa prof: reading", len(inputs.profiles), 0
        return read_share(inputs, env, jobs, progress, transport, parse_structs=transport.is_root)

    def class_two(found: Any) -> unified_tables.ClassTwo:
        disc, parsed = unwrap(found)
        lap("phase 1: read profiles, parse structure files")
        structs = complete_structs(disc, parsed, inputs, jobs)
        classifier, warnings = unified_tables.build_classifier(
            disc.raw, held["gpu_structs"] + structs, fallback=options.fallback,
            witnesses=[(w.measdir, w.path, w.module) for w in inputs.witnesses])
        title = survey.program_name(disc)
        held["out"] = options.output or default_output_name(inputs.measdirs, title)
        c2 = unified_tables.assemble(disc, classifier, held["env"], statistics=options.statistics, title=title,
                               warnings=warnings)
        lap("class 2: expand, assign ids")
        return c2

    for attempt in range(SEED_RETRIES):
        found = transport.reduce(lambda seed=attempt: phase1_share(seed), merge_shares)
        try:
            c2 = transport.bcast(lambda found=found: class_two(found))
            break
        except rawtree.HashCollision:
            if attempt + 1 == SEED_RETRIES:
                raise HpcsaError(None, "could not name the calling contexts without hash collisions") from None
    del found
    held.pop("env", None)
    progress.what, progress.total, progress.done = "hpcsa prof: aggregating", len(c2.profiles), 0
    with contextlib.ExitStack() as output:
        tmp = transport.bcast(lambda: output.enter_context(atomic_dir(held["out"])))
        n_values, n_trace, shares = write_outputs(c2, tmp, jobs, options, progress, timings, transport)
    out = transport.bcast(lambda: held["out"])  # every rank returns once the database is in place
    result = Result(os.path.abspath(out), len(c2.profiles), c2.n_ctx, n_values, n_trace, progress.elapsed(),
                    c2.warnings, timings, c2.binaries, shares)
    if transport.is_root:
        ranks = f" ({transport.size} ranks: {'+'.join(map(str, shares))} profiles)" if transport.size > 1 else ""
        progress.finish(f"hpcsa prof: {result.profiles} profiles, {result.contexts} contexts, "
                        f"{result.values} values{f', {n_trace} trace elements' if n_trace else ''}{ranks} -> {out}")
    return result


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

    def add(self, o: profile_values.ProfileOutput) -> None:
        i, p = o.index, self.place
        p.pms_offset[i], p.n_values[i], p.n_ctxs[i] = o.pms_offset, o.n_values, o.n_ctxs
        p.pms_size[i], p.aside_offset[i], p.n_aside[i] = o.pms_size, o.aside_offset, o.n_aside
        self.ctx_values[o.ctx] += o.n_ctx_values  # contexts are distinct within a profile
        bc, bw, bb = o.ctx_metric_bits
        self.ctx_bits[bc, bw] |= bb
        self.trace_count[i] = o.trace_count
        if o.trace_min is not None and o.trace_max is not None:
            self.t_lo = o.trace_min if self.t_lo is None else min(self.t_lo, o.trace_min)
            self.t_hi = o.trace_max if self.t_hi is None else max(self.t_hi, o.trace_max)

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


def assemble_profiledb(path: str, c2: unified_tables.ClassTwo, pms_path: str, place: transpose.Placement,
                    summary: profiledb.ProfileValues) -> None:
    """profile.db: the thread blobs copied from the scratch file in canonical order, then the summary."""
    scratch = transpose.ScratchProfiles(pms_path, place)
    try:
        with profiledb.ProfileDBWriter(path, c2.id_tuples) as pw:
            for i in range(len(c2.profiles)):
                pw.write_profile(i + 1, profiledb.ProfileBlob(scratch.blob(i), int(place.n_values[i]),
                                                              int(place.n_ctxs[i])))
            pw.write_summary(summary)
    finally:
        scratch.close()


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
    want_traces = options.traces and any(c2.trace_reserve)
    with contextlib.ExitStack() as open_files:  # rank 0: trace.db and cct.db, until the database is complete
        held: dict[str, Any] = {}

        def begin() -> tuple[str | None, list[int] | None]:
            meta = copy_sources.copy_sources(c2.meta, tmp, options.replace_paths)[0] if options.sources else c2.meta
            metadb.write_metadb(os.path.join(tmp, database.META), meta)
            os.makedirs(os.path.join(tmp, "metrics"))
            metricsyaml.write_metrics_yaml(os.path.join(tmp, database.METRICS_YAML), c2.metrics.taxonomy())
            for p in (pms_path, aside_path):
                open(p, "wb").close()
            if not want_traces:
                return None, None
            tw = open_files.enter_context(tracedb.TraceDBWriter(os.path.join(tmp, database.TRACE),
                                                                list(range(1, n + 1)), reserve=c2.trace_reserve))
            held["trace"] = tw
            return tw.temp_path, [tw.region(i)[0] for i in range(n)]

        trace_path, trace_offsets = transport.bcast(begin)
        lap("meta.db, metrics/default.yaml")

        # Phase 2: every rank its share of the profiles; the states reduced up the tree.
        allocate, in_workers = transport.counter(("pms", "aside"))
        sinks = profile_values.Sinks(pms_path, aside_path, trace_path, trace_offsets,
                               allocate if in_workers or jobs == 1 else None)
        found = transport.reduce(lambda: phase2_share(c2, sinks, allocate, jobs, options.traces, progress, transport),
                                 merge_states)

        def layout() -> tuple[transpose.Placement, cctdb.CctLayout, list[list[int]], str]:
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
            groups = range_groups(lay.ranges(transpose.RANGE_BYTES) if c2.n_ctx else [], jobs * transport.size)
            cw = open_files.enter_context(cctdb.CctDBWriter(os.path.join(tmp, database.CCT), lay))
            return state.place, lay, groups, cw.temp_path

        place, lay, groups, cct_path = transport.bcast(layout)
        found = None  # the reduced state: rank 0 keeps only what it returned

        # Phase 3: cct.db by groups of context ranges, handed out across ranks; the summary on the way.
        shared = (pms_path, aside_path, cct_path, place, lay, transpose.StatPlan.build(c2.metrics))
        parts = transport.reduce(lambda: phase3_share(shared, groups, jobs, transport), merge_parts)

        def finish() -> tuple[int, int, list[int]]:
            parts_of = unwrap(parts)
            summary = summary_values([part for i in sorted(parts_of) for part in parts_of[i]])
            lap("phase 3: cct.db transpose, summary statistics")
            open_files.close()  # cct.db's footer, trace.db's headers: both complete
            assemble_profiledb(os.path.join(tmp, database.PROFILE), c2, pms_path, place, summary)
            for p in (pms_path, aside_path):
                os.unlink(p)
            lap("profile.db in canonical order")
            n_values, n_trace, shares = held["counts"]
            return n_values + len(summary.values), n_trace, shares

        return transport.bcast(finish)


def phase2_share(c2: unified_tables.ClassTwo, sinks: profile_values.Sinks, allocate: Callable[[str, int], int], jobs: int,
                 traces: bool, progress: Progress | None, transport: Transport) -> Phase2State:
    """Class 1 for this rank's share of the profiles (batches handed out largest first), with ``jobs``
    workers."""
    batches = phase2_batches([p.input.size + p.input.trace_size for p in c2.profiles], jobs * transport.size)
    state = Phase2State.empty(c2)
    done = 0
    with LocalPool(min(jobs, len(batches)) or 1, shared=(c2, sinks, traces)) as pool:
        for k, (part, pending) in run_shared(pool, phase2_task, transport.tasks("phase 2", len(batches)),
                                             lambda k: (batches[k],), _ahead(jobs)):
            for index, blobs in pending:  # blobs a worker could not place (an MPI rank's workers)
                place = part.place
                place.pms_offset[index], place.aside_offset[index] = profile_values.store_blobs(blobs, sinks, allocate)
            state.merge(part)
            done += len(batches[k])
            if progress is not None:
                progress.advance(len(batches[k]))
    state.done_by[transport.rank] = done
    return state


def merge_states(parts: list[Phase2State]) -> Phase2State:
    state = parts[0]
    for other in parts[1:]:
        state.merge(other)
    return state


def phase3_share(shared: tuple[str, str, str, transpose.Placement, cctdb.CctLayout, transpose.StatPlan],
                 groups: list[list[int]], jobs: int, transport: Transport
                 ) -> dict[int, list[tuple[np.ndarray, np.ndarray, np.ndarray]]]:
    """cct.db's blocks and the summary values of this rank's share of the range groups (largest first)."""
    order = sorted(range(len(groups)), key=lambda g: (-(groups[g][-1] - groups[g][0]), g))
    out: dict[int, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}
    with LocalPool(min(jobs, len(groups)) or 1, shared=shared) as pool:
        for k, parts in run_shared(pool, phase3_task, transport.tasks("phase 3", len(groups)),
                                   lambda k: (groups[order[k]],), _ahead(jobs)):
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
