"""``hpcsa prof`` as phases: functions of their inputs, run by a transport.

The scheme is hpcprof-mpi's ("Preparing for Performance Analysis at Exascale", ICS 2022, §3.2):

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
2. **Class 1.** Profiles are processed in batches from what phase 1 kept of
   them in a scratch directory (:func:`survey.second_reading`: the .hpcrun
   file is not read again), propagated together
   (:func:`profile_values.process_batch`): their PMS blobs go to a scratch file
   at an offset from a shared counter, their trace lines into their reserved
   regions of trace.db; a batch returns the counts cct.db's layout needs
   (summed/ORed: an associative reduction).
3. **CMS and class 3.** Context ranges are transposed into cct.db and reduced
   into the summary statistics in canonical profile order
   (:func:`transpose.transpose_ranges`). profile.db is assembled from the
   scratch blobs in canonical profile order, the summary last.

Everything is written inside a temporary directory renamed into place when
complete (:func:`hpcsa.core.outputs.atomic_dir`). Ids, profile order and layout are
canonical, so the database is byte-identical for any number of workers or
ranks.

Transports (:mod:`transport`): :func:`aggregate` and :func:`pipeline_write.write_outputs` are the
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
import shutil
import tempfile
from dataclasses import field
from typing import Any

from hpcsa.aggregate.prof import (
    rawtree,
    survey,
    unified_tables,
)
from hpcsa.aggregate.prof.chain_warmer import ChainWarmer
from hpcsa.aggregate.prof.inputs import Inputs, default_output_name
from hpcsa.aggregate.prof.pipeline_read import (
    SEED_RETRIES,
    Parsed,
    complete_structs,
    gpu_env,
    merge_shares,
    read_share,
)
from hpcsa.aggregate.prof.pipeline_write import write_outputs
from hpcsa.aggregate.prof.transport import Single, Transport, unwrap
from hpcsa.core.dataclass import dataclass
from hpcsa.core.errors import HpcsaError, OutputError
from hpcsa.core.outputs import atomic_dir, remove_stale_partials
from hpcsa.core.progress import Progress


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


def aggregate(inputs: Inputs, options: Options, transport: Transport | None = None) -> Result:
    """The whole aggregation. Over MPI every rank calls it with its transport and gets the same result;
    rank 0 classifies, assigns ids and writes everything but the class-1 data and cct.db's blocks."""
    transport = transport or Single()
    progress = Progress("hpcsa prof", None, enabled=options.progress if transport.size == 1 else False)
    jobs = max(1, options.jobs)
    scratch = transport.bcast(lambda: make_scratch(options.output))
    try:
        return _run(inputs, options, transport, progress, jobs, scratch)
    except OutputError as exc:
        if scratch is None or not exc.path or not (exc.path + os.sep).startswith(scratch + os.sep):
            raise
        # the scratch directory is a hidden sibling of the output: name what the user asked for
        raise OutputError(options.output or os.path.dirname(scratch),
                          f"{exc.problem} (the run's scratch files go beside the output)") from None
    finally:
        if scratch is not None:
            survey.release_scratch(scratch)
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


def _run(inputs: Inputs, options: Options, transport: Transport, progress: Progress, jobs: int,
         scratch: str | None) -> Result:
    timings: dict[str, float] = {}

    def lap(name: str) -> None:
        timings[name] = progress.elapsed() - sum(timings.values())

    held: dict[str, Any] = {}  # rank 0's class-2 inputs between the steps

    def phase1_share(seed: int) -> tuple[survey.Discovery, Parsed]:
        env, gpu_structs = gpu_env(inputs.structs, seed=seed, scratch=scratch)
        held["env"], held["gpu_structs"] = env, gpu_structs
        lap("GPU call graphs")
        progress.what, progress.total, progress.done = "hpcsa prof: reading", len(inputs.profiles), 0
        held["warmer"] = ChainWarmer() if transport.is_root else None  # rank 0 classifies
        return read_share(inputs, env, jobs, progress, transport, parse_structs=transport.is_root,
                          warmer=held["warmer"])

    def class_two(found: Any) -> unified_tables.ClassTwo:
        disc, parsed = unwrap(found)
        lap("phase 1: read profiles, parse structure files")
        structs = complete_structs(disc, parsed, inputs, jobs)
        classifier, warnings = unified_tables.build_classifier(
            disc.raw, held["gpu_structs"] + structs, fallback=options.fallback,
            witnesses=[(w.measdir, w.path, w.module) for w in inputs.witnesses], warmed=held.pop("warmer", None))
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

