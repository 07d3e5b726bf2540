"""``hpcsa prof`` as phases: functions of their inputs, run by a transport.

The scheme is hpcprof-mpi's ("Preparing for Performance Analysis at Exascale", ICS 2022, §3.2):

0. GPU structure files are parsed and their call graphs built (small; every
   reader of phase 1 needs them; :mod:`.phase0.gpu_graphs`).
1. **Class 2.** Every profile is read once (:func:`.phase1.survey.survey_profiles`) and
   reported as raw nodes + metric table + identity; reports merge
   associatively (per worker, then at the coordinator; over MPI up a t-ary
   tree to rank 0; :mod:`.phase1.share`). CPU structure files are parsed in parallel with this, each
   once (:mod:`.phase1.structs`). The coordinator expands the union into the unified tree, assigns
   canonical ids, metric ids, profile order and trace layout
   (:func:`.phase1.class2.class_two`), and writes meta.db and metrics/default.yaml (:class:`.sinks.MetaSink`,
   beside its share of phase 2). The result is shared with every worker (fork; over MPI a broadcast).
2. **Class 1.** Profiles are processed in batches from what phase 1 kept of
   them in a scratch directory (:mod:`.kept`: the .hpcrun file is not read
   again), propagated together (:func:`.phase2.values.process_batch`): their
   PMS blobs go to a scratch file at an offset from a shared counter, their
   trace lines into their reserved regions of trace.db; a batch returns the
   counts cct.db's layout needs (summed/ORed: an associative reduction;
   :mod:`.phase2.share`).
3. **CMS and class 3.** Context ranges are transposed into cct.db and reduced
   into the summary statistics in canonical profile order
   (:func:`.phase3.transpose.transpose_ranges`, :mod:`.phase3.share`). profile.db is assembled from the
   scratch blobs in canonical profile order, the summary last.

Everything is written inside a temporary directory renamed into place when
complete (:func:`hpcsa.core.outputs.atomic_dir`). Ids, profile order and layout are
canonical, so the database is byte-identical for any number of workers or
ranks.

Transports (:mod:`.transport`): :func:`aggregate` is the one driver, written against a
:class:`.transport.Transport`. With :class:`.transport.Single` (one process and its ``-j`` workers) every
collective is the identity; with :class:`.mpi.MpiTransport` every rank runs the
same code: its share of each phase's tasks (profile batches, profiles, context
range groups: largest first, taken from a counter shared by the ranks), the
phase-1 reports and phase-2 states reduced up a t-ary tree to rank 0, class 2
and the layouts broadcast from it. Rank 0 alone parses CPU structure files,
classifies, and writes meta.db, the taxonomy, trace headers, the summary and
profile.db; class-1 blobs, trace lines and cct.db blocks are written by every
rank into the files rank 0 opened.

The driver is a straight sequence of steps (``_run()``): a step every rank runs is a reduction's
(``transport.reduce``), a step rank 0 alone runs a broadcast's (``transport.bcast``). What one step hands
the next is declared in :mod:`.handoff`; each file of the database is owned by one sink (:mod:`.sinks`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import field, replace
from functools import partial

from hpcsa.aggregate import kept, lexical, rawtree
from hpcsa.aggregate.coverage import coverage_warnings
from hpcsa.aggregate.handoff import (
    ClassTwo,
    GpuStructures,
    Phase1Env,
    Phase1Share,
    Phase2State,
    Phase3Plan,
    SummaryParts,
)
from hpcsa.aggregate.inputs import Inputs, default_output_name
from hpcsa.aggregate.phase0 import gpu_graphs as phase0_gpu_graphs
from hpcsa.aggregate.phase1 import class2 as phase1_class2
from hpcsa.aggregate.phase1 import share as phase1_share
from hpcsa.aggregate.phase1.chain_warmer import ChainWarmer
from hpcsa.aggregate.phase2 import share as phase2_share
from hpcsa.aggregate.phase3 import share as phase3_share
from hpcsa.aggregate.sinks import DatabaseSinks, copy_thread_blobs
from hpcsa.aggregate.transport import Failure, Single, Transport, unwrap
from hpcsa.core.dataclass import dataclass
from hpcsa.core.errors import HpcsaError, OutputError
from hpcsa.core.outputs import remove_stale_partials
from hpcsa.core.progress import Progress
from hpcsa.core.workers import trim_heap

#: Hash seeds tried before giving up on naming the calling contexts without collisions.
SEED_RETRIES = 3


@dataclass
class Options:
    """The choices of an ``hpcsa prof`` run (the command's options)."""

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
    """What an ``hpcsa prof`` run made, and how long each phase took."""

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


class Laps:
    """Seconds per phase on the run's progress clock: a lap is the time since the last one ended, less what
    was timed apart (meta.db, written beside phase 2)."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.timings: dict[str, float] = {}

    def lap(self, name: str) -> None:
        self.timings[name] = self.progress.elapsed() - sum(self.timings.values())

    def apart(self, name: str, work: Callable[[], None]) -> None:
        """``work()``, timed apart from the lap it runs in."""
        start = self.progress.elapsed()
        work()
        self.timings[name] = self.progress.elapsed() - start


def aggregate(inputs: Inputs, options: Options, transport: Transport | None = None) -> Result:
    """The whole aggregation. Over MPI every rank calls it with its transport and gets the same result;
    rank 0 classifies, assigns ids and writes everything but the class-1 data and cct.db's blocks. The
    listing of ``inputs.profiles`` is let go once class 2 holds the profiles (:meth:`.Inputs.release_profiles`)."""
    transport = transport or Single()
    progress = Progress("hpcsa prof", None, enabled=options.progress if transport.size == 1 else False)
    scratch = transport.bcast(partial(make_scratch, options.output))
    try:
        return _run(inputs, options, transport, Laps(progress), scratch)
    except OutputError as exc:
        if scratch is None or not exc.path or not (exc.path + os.sep).startswith(scratch + os.sep):
            raise
        # the scratch directory is a hidden sibling of the output: name what the user asked for
        raise OutputError(options.output or os.path.dirname(scratch),
                          f"{exc.problem} (the run's scratch files go beside the output)") from None
    finally:
        if scratch is not None:
            kept.release_scratch(scratch)
            if transport.is_root:
                shutil.rmtree(scratch, ignore_errors=True)


def make_scratch(output: str | None) -> str | None:
    """A private directory beside the output where phase 1 keeps what phase 2 needs of each profile (so that
    every .hpcrun file is read once); named like the output's partial directories, so that what a killed run
    leaves is removed by the next. None where it cannot be made (profiles are then read twice)."""
    final = os.path.abspath(output or "hpcsa-prof")
    remove_stale_partials(final)
    try:
        return tempfile.mkdtemp(prefix=f".{os.path.basename(final)}.partial-{os.getpid()}-scratch-",
                                dir=os.path.dirname(final))
    except OSError:
        return None


def _run(inputs: Inputs, options: Options, transport: Transport, laps: Laps, scratch: str | None) -> Result:
    jobs = max(1, options.jobs)
    progress = laps.progress
    # Phase 0, on every rank.
    gpu = phase0_gpu_graphs.read_gpu_structures(inputs.structs)
    laps.lap("GPU call graphs")
    # Phase 1 on every rank, class 2 on rank 0, shared with every rank.
    c2 = _phase1_and_class2(inputs, options, gpu, transport, laps, jobs, scratch)
    inputs.release_profiles()  # class 2's table has them, in profile.db's order
    # Phases 2 and 3 into the database, its files owned by rank 0's sinks.
    output = options.output or default_output_name(inputs.measdirs, c2.title)
    progress.what, progress.total, progress.done = "hpcsa prof: aggregating", len(c2.profiles), 0
    with DatabaseSinks(output, c2, traces=options.traces, sources=options.sources,
                       replace_paths=options.replace_paths) as sinks:
        targets = transport.bcast(sinks.begin)
        write_meta = partial(laps.apart, "meta.db, metrics/default.yaml", sinks.write_meta)
        state = transport.reduce(partial(phase2_share.run, c2, targets, jobs, options.traces, progress,
                                         transport, write_meta if transport.is_root else None),
                                 phase2_share.merge_states)
        del targets  # (trace.db's regions, per profile: phase 2's)
        n_profiles = len(c2.profiles)
        c2.release_profiles()  # phase 3 needs none of their files or facts: not held through it
        trim_heap()  # what phase 2 freed given back before phase 3 lays out its files (not only at its fork)
        plan = transport.bcast(partial(_lay_out, state, sinks, transport.size, jobs, laps))
        del state  # rank 0 keeps only what the plan holds
        copy_blobs = partial(copy_thread_blobs, plan, phase3_share.blob_share(len(plan.place.batches) - 1, transport))
        parts = transport.reduce(partial(phase3_share.run, plan, c2.metrics, jobs, transport, copy_blobs),
                                 phase3_share.merge_parts)
        n_summary, contexts = transport.bcast(partial(_finish, parts, sinks, laps))
    path = transport.bcast(partial(_in_place, output))  # every rank returns once the database is in place
    n_values = int(plan.place.n_values.sum()) + n_summary
    warnings = list(c2.warnings)
    if transport.is_root:
        if c2.unknown_modules:
            warnings += coverage_warnings(path, c2.unknown_modules)
        if sinks.meta.sources.note:
            warnings.append(sinks.meta.sources.note)
    result = Result(os.path.abspath(path), n_profiles, contexts, n_values, plan.trace_elements,
                    progress.elapsed(), warnings, laps.timings, c2.binaries, plan.rank_profiles)
    if transport.is_root:
        lexical.warn(result.warnings)  # before the summary, which is the last line
        n_trace, shares = result.trace_elements, result.rank_profiles
        ranks = f" ({transport.size} ranks: {'+'.join(map(str, shares))} profiles)" if transport.size > 1 else ""
        traced = f", {n_trace} trace elements" if n_trace else ""
        progress.finish(f"hpcsa prof: {result.profiles} profiles, {result.contexts} contexts, "
                        f"{result.values} values{traced}{ranks} -> {path}")
    return result


def _phase1_and_class2(inputs: Inputs, options: Options, gpu: GpuStructures, transport: Transport, laps: Laps,
                       jobs: int, scratch: str | None) -> ClassTwo:
    """Phase 1, every rank reading its share, merged up the ranks; class 2 assembled by rank 0 from the union
    and broadcast. Again, with the next hash seed, where two paths got the same hash: phase 1 finds that as
    it merges the nodes (:func:`.rawtree.union`). In one process the collision is raised by the reduction
    itself (with its workers': the exception they carried back); over MPI it travels up the reduction as a
    :class:`.transport.Failure` and every rank raises it from the broadcast. The seed changes only the
    hashes, never the database (ids are canonical)."""
    for seed in range(SEED_RETRIES):
        env = gpu.env(seed, scratch)
        progress = laps.progress
        progress.what, progress.total, progress.done = "hpcsa prof: reading", len(inputs.profiles), 0
        warmer = ChainWarmer() if transport.is_root else None  # rank 0 classifies
        try:
            found = transport.reduce(partial(phase1_share.run, inputs, env, jobs, progress, transport,
                                             transport.is_root, warmer), phase1_share.merge_shares)
            return transport.bcast(partial(_class_two, found, inputs, gpu, env, jobs, options, warmer, laps))
        except rawtree.HashCollision:
            continue
    raise HpcsaError(None, "could not name the calling contexts without hash collisions")


def _class_two(found: Phase1Share | Failure | None, inputs: Inputs, gpu: GpuStructures, env: Phase1Env,
               jobs: int, options: Options, warmer: ChainWarmer | None, laps: Laps) -> ClassTwo:
    """Rank 0: class 2 from the union of every rank's phase 1."""
    share = unwrap(found)
    inputs.release_profiles()  # the union's table has them (no seed is tried again once the union is made)
    trim_heap()  # phase 1's reports, freed in the heap, not left resident through class 2
    laps.lap("phase 1: read profiles, parse structure files")
    structs = phase1_share.complete_structs(share, inputs, jobs)
    c2 = phase1_class2.class_two(share.found, structs, inputs, gpu, env, statistics=options.statistics,
                                 fallback=options.fallback, warmer=warmer)
    laps.lap("class 2: expand, assign ids")
    return c2


def _lay_out(found: Phase2State | Failure | None, sinks: DatabaseSinks, ranks: int, jobs: int, laps: Laps
             ) -> Phase3Plan:
    """Rank 0: the sinks told phase 2's counts (those of all ``ranks``); phase 3's plan, with its tasks for
    ``jobs`` processes per rank."""
    state = unwrap(found)
    laps.lap("phase 2: profiles (propagate, PMS blobs, traces)")
    plan = sinks.layout(state, ranks)
    return replace(plan, groups=phase3_share.groups_for(plan.layout, jobs * ranks))


def _finish(found: SummaryParts | Failure | None, sinks: DatabaseSinks, laps: Laps) -> tuple[int, int]:
    """Rank 0: the sinks finish with phase 3's summary values; how many values the summary has, and the
    database's contexts as every command counts them (:func:`hpcsa.formats.db.database.context_count`)."""
    parts = unwrap(found)
    laps.lap("phase 3: cct.db transpose, summary statistics; profile.db's thread blobs")
    n_summary = sinks.finish(parts)
    laps.lap("profile.db's summary")
    return n_summary, sinks.meta.contexts


def _in_place(path: str) -> str:
    """The database's path, broadcast once rank 0 has renamed it into place (no rank returns before)."""
    return path
