"""``hpcsa prof`` as phases: functions of their inputs, run by a transport.

The scheme is hpcprof-mpi's (seed 000 §3.2; reference/hpctoolkit.md §4.3):

0. GPU structure files are parsed and their call graphs built (small; every
   reader of phase 1 needs them).
1. **Class 2.** Every profile is read once (:func:`discover.discover`) and
   reported as raw nodes + metric table + identity; reports merge
   associatively (per worker, then at the coordinator; over MPI up a t-ary
   tree to rank 0). CPU structure files are parsed in parallel with this, each
   once. The coordinator expands the union into the unified tree, assigns
   canonical ids, metric ids, profile order and trace layout
   (:func:`classtwo.assemble`), and writes meta.db and metrics/default.yaml.
   The result is shared with every worker (fork; over MPI a broadcast).
2. **Class 1.** Every profile is read a second time and processed
   (:func:`classone.process_profile`): its PMS blob goes to a scratch file at
   an offset from a shared counter, its trace line into its reserved region of
   trace.db; it returns the counts cct.db's layout needs (summed/ORed: an
   associative reduction).
3. **CMS and class 3.** Context ranges are transposed into cct.db and reduced
   into the summary statistics in canonical profile order
   (:func:`classthree.transpose_range`). profile.db is assembled from the
   scratch blobs in canonical profile order, the summary last.

Everything is written inside a temporary directory renamed into place when
complete (:func:`hpcsa.fileio.atomic_dir`). Ids, profile order and layout are
canonical, so the database is byte-identical for any number of workers.

The MPI seam: :func:`run` and :func:`write_database` are the single-machine
drivers. An MPI driver calls the same pieces — :func:`gpu_env`,
:func:`discover.discover` / :func:`discover.merge` (reduced up a t-ary tree),
:func:`structs_for` + :func:`phase1_task` for structure files,
:func:`classtwo.build_classifier` + :func:`classtwo.assemble` on rank 0
(broadcast the result), :func:`classone.process_profile` with a
:class:`classone.Sinks` whose ``allocate`` is an MPI shared counter,
:class:`Phase2State` (``merge`` up the tree), :func:`range_groups` +
:func:`classthree.transpose_ranges` spread over ranks, then
:func:`summary_values` and :func:`write_profiledb` on rank 0.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hpcsa.aggregate import cctdb, database, metadb, metricsyaml, profiledb, tracedb
from hpcsa.errors import HpcsaError
from hpcsa.fileio import atomic_dir
from hpcsa.gpucct import CallGraph
from hpcsa.gpucct.fromstruct import call_graph_from_module
from hpcsa.progress import Progress
from hpcsa.structure.hpcstruct import read_hpcstruct
from hpcsa.structure.model import C, Module

from . import classone, classthree, classtwo, discover, lexical, rawtree
from .measurement import Inputs, ProfileInput, StructInput, default_output_name
from .workers import DynamicRun, LocalPool, SharedCounter

#: Profiles per phase-1 task: enough to amortize a task, few enough to balance.
DISCOVER_BATCH_BYTES = 4 << 20
SEED_RETRIES = 3


@dataclass
class Options:
    output: str | None = None
    jobs: int = 1
    statistics: tuple[str, ...] = ("Sum",)
    traces: bool = True
    fallback: bool = True           # read binaries of modules without structure (when trusted)
    progress: bool | None = None    # None: on a terminal


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


# -- phase 0: GPU call graphs -------------------------------------------------------------------------------


def is_gpu_struct(s: StructInput) -> bool:
    name = os.path.basename(s.path)
    return ".gpubin" in name or (s.module is not None and lexical.hashed_name(s.module) is not None
                                 and lexical.hashed_name(s.module)[0] == "gpubins")  # type: ignore[index]


def has_call_graph(module: Module) -> bool:
    """hpcprof reconstructs when the LM says has-calls or carries call sites (else: no flow graph)."""
    return bool(module.has_calls) or module.count(C) > 0


def gpu_env(structs: list[StructInput], seed: int) -> tuple[discover.Phase1Env, list[tuple[str | None, Module]]]:
    by_key: dict[str, CallGraph] = {}
    by_name: dict[str, CallGraph] = {}
    parsed: list[tuple[str | None, Module]] = []
    for s in structs:
        if not is_gpu_struct(s):
            continue
        for module in read_hpcstruct(s.path).modules:
            parsed.append((s.measdir, module))
            if not has_call_graph(module):
                continue
            graph = call_graph_from_module(module, source=s.path)
            key = lexical.module_key(module.path, s.measdir) if s.measdir else os.path.normpath(module.path)
            by_key[key] = graph
            named = lexical.hashed_name(module.path)
            if named is not None:
                by_name[named[1]] = graph
    return discover.Phase1Env(by_key, by_name, seed), parsed


# -- phase 1 ----------------------------------------------------------------------------------------------


def phase1_task(env: discover.Phase1Env, kind: str, payload: Any) -> Any:
    """One task of phase 1: parse a structure file, or discover a batch of profiles (merged)."""
    if kind == "struct":
        s: StructInput = payload
        return [(s.path, s.measdir, m) for m in read_hpcstruct(s.path).modules]
    batch: list[ProfileInput] = payload
    return discover.merge([discover.discover(p, env) for p in batch])


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


def run_phase1(inputs: Inputs, env: discover.Phase1Env, jobs: int, progress: Progress | None = None
               ) -> tuple[discover.Discovery, list[tuple[str | None, Module]]]:
    """Read every profile once; parse each structure file a profile needs, once, as soon as it is known
    to be needed (ahead of the profiles still waiting), like hpcprof's lazy loading."""
    cpu_structs = [s for s in inputs.structs if not is_gpu_struct(s)]
    parts: list[discover.Discovery] = []
    structs: list[tuple[str, str | None, Module]] = []
    scheduled: set[str] = set()
    seen_modules: set[int] = set()
    batches = _batches(inputs.profiles, jobs)
    with LocalPool(min(jobs, len(batches) + len(cpu_structs)) or 1, shared=env) as pool:
        tasks = DynamicRun(pool)
        for i, b in enumerate(batches):
            tasks.submit(("profiles", i), phase1_task, ("profiles", b), priority=float(i))
        for (kind, _), result in tasks:
            if kind == "struct":
                structs.extend(result)
                continue
            parts.append(result)
            if progress is not None:
                progress.advance(len(result.profiles))
            new = [ref for h, ref in result.raw.modules.items()
                   if h not in seen_modules and h in set(np.unique(result.raw.nodes["module"]).tolist())]
            seen_modules.update(np.unique(result.raw.nodes["module"]).tolist())
            for s in structs_for(new, cpu_structs):
                if s.path not in scheduled:
                    scheduled.add(s.path)
                    tasks.submit(("struct", s.path), phase1_task, ("struct", s), priority=-1.0)
            if len(parts) >= 16:
                parts = [discover.merge(parts)]
    # Files in a fixed order (not the order they finished in): the first describing a module is used.
    structs.sort(key=lambda t: t[0])
    return discover.merge(parts), [(measdir, m) for _, measdir, m in structs]


# -- phase 2 ----------------------------------------------------------------------------------------------


def phase2_task(shared: tuple[classtwo.ClassTwo, classone.Sinks, bool], index: int) -> classone.ProfileOutput:
    c2, sinks, traces = shared
    return classone.process_profile(c2, index, sinks, traces=traces)


# -- phase 3 ----------------------------------------------------------------------------------------------


def phase3_task(shared: tuple[str, str, str, classthree.Placement, cctdb.CctLayout, classthree.StatPlan],
                bounds: list[int]) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    return classthree.transpose_ranges(*shared, bounds)


def range_groups(ranges: list[tuple[int, int]], jobs: int) -> list[list[int]]:
    """Consecutive ranges in groups (a few per worker), as bounds ``[lo0, lo1, ..., hi]``."""
    if not ranges:
        return []
    n_groups = min(len(ranges), 2 * jobs if jobs > 1 else 1)
    cuts = np.linspace(0, len(ranges), n_groups + 1).round().astype(int)
    return [[ranges[i][0] for i in range(a, b)] + [ranges[b - 1][1]]
            for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist(), strict=True) if b > a]


# -- the whole run ----------------------------------------------------------------------------------------


def run(inputs: Inputs, options: Options) -> Result:
    progress = Progress("hpcsa prof", None, enabled=options.progress)
    jobs = max(1, options.jobs)
    timings: dict[str, float] = {}
    for attempt in range(SEED_RETRIES):
        try:
            env, gpu_structs = gpu_env(inputs.structs, seed=attempt)
            timings["GPU call graphs"] = progress.elapsed()
            progress.what, progress.total, progress.done = "hpcsa prof: reading", len(inputs.profiles), 0
            disc, structs = run_phase1(inputs, env, jobs, progress)
            timings["phase 1: read profiles, parse structure files"] = progress.elapsed() - sum(timings.values())
            break
        except rawtree.HashCollision:
            if attempt + 1 == SEED_RETRIES:
                raise HpcsaError(None, "could not name the calling contexts without hash collisions") from None
    classifier, warnings = classtwo.build_classifier(
        disc.raw, gpu_structs + structs, fallback=options.fallback,
        witnesses=[(w.measdir, w.path, w.module) for w in inputs.witnesses])
    title = discover.program_name(disc)
    c2 = classtwo.assemble(disc, classifier, env, statistics=options.statistics, title=title, warnings=warnings)
    del disc, classifier
    timings["class 2: expand, assign ids"] = progress.elapsed() - sum(timings.values())
    out = options.output or default_output_name(inputs.measdirs, title)
    progress.what, progress.total, progress.done = "hpcsa prof: aggregating", len(c2.profiles), 0
    with atomic_dir(out) as tmp:
        n_values, n_trace = write_database(c2, tmp, jobs, options, progress, timings)
    result = Result(os.path.abspath(out), len(c2.profiles), c2.n_ctx, n_values, n_trace, progress.elapsed(),
                    c2.warnings, timings, c2.binaries)
    progress.finish(f"hpcsa prof: {result.profiles} profiles, {result.contexts} contexts, {result.values} values"
                    f"{f', {n_trace} trace elements' if n_trace else ''} -> {out}")
    return result


@dataclass
class Phase2State:
    """What phase 2 hands to phase 3: where each profile's blobs are, and the counts cct.db's layout needs.

    :meth:`add` takes one profile's output; :meth:`merge` combines the states of several workers or
    ranks (sums, ORs, min/max and disjoint placements: associative and exact, so any grouping gives the
    same result — an MPI transport reduces it up its tree).
    """

    place: classthree.Placement
    ctx_values: np.ndarray   # values per context, over all profiles
    ctx_bits: np.ndarray     # [contexts, words] the propMetricIds each context has, as bits
    trace_count: np.ndarray  # elements written per profile
    t_lo: int | None = None  # time range of the timepoints read
    t_hi: int | None = None

    @classmethod
    def empty(cls, c2: classtwo.ClassTwo) -> Phase2State:
        n = len(c2.profiles)
        words = max(1, (c2.n_prop_ids + 63) // 64)
        return cls(classthree.Placement(*(np.zeros(n, np.int64) for _ in range(6))), np.zeros(c2.n_ctx, np.int64),
                   np.zeros((c2.n_ctx, words), np.uint64), np.zeros(n, np.int64))

    def add(self, o: classone.ProfileOutput) -> None:
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


def write_profiledb(path: str, c2: classtwo.ClassTwo, pms_path: str, place: classthree.Placement,
                    summary: profiledb.ProfileValues) -> None:
    """profile.db: the thread blobs copied from the scratch file in canonical order, then the summary."""
    scratch = classthree.ScratchProfiles(pms_path, place)
    try:
        with profiledb.ProfileDBWriter(path, c2.id_tuples) as pw:
            for i in range(len(c2.profiles)):
                pw.write_profile(i + 1, profiledb.ProfileBlob(scratch.blob(i), int(place.n_values[i]),
                                                              int(place.n_ctxs[i])))
            pw.write_summary(summary)
    finally:
        scratch.close()


def write_database(c2: classtwo.ClassTwo, tmp: str, jobs: int, options: Options, progress: Progress,
                   timings: dict[str, float] | None = None) -> tuple[int, int]:
    """Phases 2 and 3 into the (temporary) database directory ``tmp`` with local worker processes;
    (values written, trace elements)."""
    timings = {} if timings is None else timings

    def lap(name: str) -> None:
        timings[name] = progress.elapsed() - sum(timings.values())

    metadb.write_metadb(os.path.join(tmp, database.META), c2.meta)
    os.makedirs(os.path.join(tmp, "metrics"))
    metricsyaml.write_metrics_yaml(os.path.join(tmp, database.METRICS_YAML), c2.metrics.taxonomy())

    n = len(c2.profiles)
    pms_path = os.path.join(tmp, ".profile.scratch")
    aside_path = os.path.join(tmp, ".aside.scratch")
    for p in (pms_path, aside_path):
        open(p, "wb").close()
    want_traces = options.traces and any(c2.trace_reserve)
    trace_writer = tracedb.TraceDBWriter(os.path.join(tmp, database.TRACE), list(range(1, n + 1)),
                                         reserve=c2.trace_reserve) if want_traces else None
    lap("meta.db, metrics/default.yaml")
    state = Phase2State.empty(c2)
    if trace_writer is not None:
        trace_writer.__enter__()
    try:
        sinks = classone.Sinks(pms_path, aside_path, trace_writer.temp_path if trace_writer else None,
                               [trace_writer.region(i)[0] for i in range(n)] if trace_writer else None,
                               SharedCounter(("pms", "aside")))
        costs = [float(p.input.size + p.input.trace_size) for p in c2.profiles]
        with LocalPool(min(jobs, n) or 1, shared=(c2, sinks, options.traces)) as pool:
            for _, o in pool.run(phase2_task, [(i,) for i in range(n)], costs):
                state.add(o)
                progress.advance()
        if trace_writer is not None:
            for i in range(n):
                trace_writer.record(i, trace_writer.region(i)[0], int(state.trace_count[i]))
            trace_writer.time_range = (state.t_lo or 0, state.t_hi or 0)
    except BaseException:
        if trace_writer is not None:
            trace_writer.__exit__(*__import__("sys").exc_info())
        raise
    if trace_writer is not None:
        trace_writer.__exit__(None, None, None)
    lap("phase 2: profiles (propagate, PMS blobs, traces)")

    # Phase 3: cct.db by groups of context ranges, the summary on the way.
    layout = state.cct_layout()
    plan = classthree.StatPlan.build(c2.metrics)
    groups = range_groups(layout.ranges(classthree.RANGE_BYTES) if c2.n_ctx else [], jobs)
    parts_of: dict[int, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}
    with cctdb.CctDBWriter(os.path.join(tmp, database.CCT), layout) as cw:
        shared = (pms_path, aside_path, cw.temp_path, state.place, layout, plan)
        with LocalPool(min(jobs, len(groups)) or 1, shared=shared) as pool:
            for i, parts in pool.run(phase3_task, [(g,) for g in groups], [float(g[-1] - g[0]) for g in groups]):
                parts_of[i] = parts
    summary = summary_values([part for i in sorted(parts_of) for part in parts_of[i]])
    lap("phase 3: cct.db transpose, summary statistics")

    write_profiledb(os.path.join(tmp, database.PROFILE), c2, pms_path, state.place, summary)
    for p in (pms_path, aside_path):
        os.unlink(p)
    lap("profile.db in canonical order")
    return int(state.place.n_values.sum()) + len(summary.values), int(state.trace_count.sum())


def _popcount(bits: np.ndarray) -> np.ndarray:
    if not bits.size:
        return np.zeros(len(bits), np.int64)
    b = bits.view(np.uint8).reshape(len(bits), -1)
    return np.unpackbits(b, axis=1).sum(axis=1).astype(np.int64)
