"""A whole synthetic measurement directory (:mod:`hpcsa.ingest.synth.program`): the profiles, written by worker
processes (:class:`hpcsa.core.workers.LocalPool`), and the structure files of the program's binaries."""

from __future__ import annotations

import os

import numpy as np

from hpcsa.core.dataclass import dataclass
from hpcsa.core.outputs import MEASUREMENT, atomic_dir
from hpcsa.core.workers import LocalPool
from hpcsa.formats.hpcstruct.model import A, F, L, ModuleBuilder, P, StructureFile, renumber
from hpcsa.formats.hpcstruct.writer import write_hpcstruct
from hpcsa.formats.measurement.hpcrun import encode_hpcrun
from hpcsa.formats.measurement.hpctrace import encode_hpctrace
from hpcsa.ingest.synth.profiles import Written, host_of, stream_profile, thread_profile
from hpcsa.ingest.synth.program import (
    FIRST_STREAM_THREAD,
    KERNEL_BYTES,
    STATEMENT_BYTES,
    Program,
    SynthSpec,
    build_program,
)

# -- structure files -----------------------------------------------------------------------------------------


def cpu_structure(prog: Program, module: int) -> StructureFile:
    """The executable's (0) or library's (1) structure: files, procedures, loops, inlined code, lines."""
    b = ModuleBuilder(prog.loadmap[module].path, has_calls=False)
    files: dict[str, int] = {}
    for fn in (f for f in prog.functions if f.module == module):
        if fn.file not in files:
            files[fn.file] = b.add(F, -1, file=fn.file, has_v=False)
        p = b.add(P, files[fn.file], name=fn.name, link=fn.name, line=fn.line + 1,
                  ranges=[(fn.entry, fn.entry + 1)])
        opens: dict[int, list[tuple[int, str, int]]] = {}  # statement -> containers starting there (outer first)
        for a, e in fn.loops:
            opens.setdefault(a, []).append((e, "loop", 0))
        alien = fn.alien
        if alien is not None:
            opens.setdefault(alien[0], []).append((alien[1], "alien", 0))
        stack = [(p, fn.n)]
        for s in range(fn.n):
            while stack[-1][1] <= s:
                stack.pop()
            for end, what, _ in opens.get(s, []):
                if what == "loop":
                    stack.append((b.add(L, stack[-1][0], line=fn.line + 1 + s, file=fn.file,
                                        ranges=[(fn.address(s), fn.address(s) + 1)]), end))
                elif alien is not None:  # "alien", opened only where there is one
                    _, _, name, header, line = alien
                    outer = b.add(A, stack[-1][0], line=fn.line + 1 + s, file=fn.file, name="", ranges=[])
                    stack.append((outer, end))
                    stack.append((b.add(A, outer, line=line, file=header, name=name, ranges=[]), end))
            if alien is not None and alien[0] <= s < alien[1]:
                line = alien[4] + 1 + s - alien[0]
            else:
                line = fn.line + 1 + s
            b.add_statement(stack[-1][0], line, [(fn.address(s), fn.address(s) + STATEMENT_BYTES)])
    sf = StructureFile(modules=[b.finish()])
    renumber(sf)
    return sf


def gpu_structure(prog: Program) -> StructureFile:
    """The kernel names of the GPU binary (no call graph: no reconstruction is needed without PC samples)."""
    b = ModuleBuilder(prog.gpubin, has_calls=False)
    f = b.add(F, -1, file=f"/synth/{prog.spec.program}/src/kernels.cu", has_v=False)
    for k, (name, entry) in enumerate(prog.kernels):
        p = b.add(P, f, name=name, link=name, line=10 + 40 * k, ranges=[(entry, entry + 1)])
        b.add_statement(p, 11 + 40 * k, [(entry, entry + KERNEL_BYTES)])
    sf = StructureFile(modules=[b.finish()])
    renumber(sf)
    return sf


# -- the whole directory -------------------------------------------------------------------------------------


@dataclass
class SynthResult:
    path: str
    profiles: int
    threads: int
    streams: int
    ranks: int
    metrics: int
    bytes: int
    context_density: float   # % of a profile's CCT nodes with a value (profiles with values)
    metric_density: float    # % non-zero among the metrics of such nodes
    program_contexts: int    # of the template tree


def _write_member(shared: tuple[Program, str], rank: int, thread: int) -> Written:
    """Worker: write one profile (and its trace) into the directory being made."""
    prog, out = shared
    spec = prog.spec
    if thread >= FIRST_STREAM_THREAD:
        prof, trace = stream_profile(prog, rank, thread - FIRST_STREAM_THREAD)
    else:
        prof, trace = thread_profile(prog, rank, thread)
    stem = f"{spec.program}-{rank:06d}-{thread:03d}-{host_of(spec, rank):08x}-{1000 + rank}-0"
    # Plain writes: the whole directory appears only when complete (atomic_dir in generate).
    data = encode_hpcrun(prof)
    with open(os.path.join(out, stem + ".hpcrun"), "wb") as fh:
        fh.write(data)
    size = len(data)
    if spec.traces:
        data = encode_hpctrace(trace)
        with open(os.path.join(out, stem + ".hpctrace"), "wb") as fh:
            fh.write(data)
        size += len(data)
    valued = len(prof.index)
    return Written(len(prof.cct), valued, len(prof.values), len(prof.metrics), size)


def generate(out: str | os.PathLike[str], spec: SynthSpec, jobs: int = 1) -> SynthResult:
    """Write the measurement directory ``out`` (replaced only once complete); ``jobs`` worker processes."""
    prog = build_program(spec)
    members = spec.members()
    with atomic_dir(out, kind=MEASUREMENT) as tmp:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o777 & ~umask)  # a measurement directory as hpcrun makes it (the temporary one is private)
        if spec.structs:
            os.mkdir(os.path.join(tmp, "structs"))
            write_hpcstruct(os.path.join(tmp, "structs", f"{spec.program}.hpcstruct"), cpu_structure(prog, 0))
            write_hpcstruct(os.path.join(tmp, "structs", "libsynth.so.hpcstruct"), cpu_structure(prog, 1))
            if spec.gpu:
                name = os.path.basename(prog.gpubin)
                write_hpcstruct(os.path.join(tmp, "structs", f"{name}-gpucfg-no.hpcstruct"), gpu_structure(prog))
        with LocalPool(min(jobs, len(members)), shared=(prog, tmp)) as pool:
            done = dict(pool.run(_write_member, members))
        written = [done[i] for i in range(len(members))]
    with_values = [w for w in written if w.valued]
    ctx = [100.0 * w.valued / w.nodes for w in with_values]
    met = [100.0 * w.values / (w.valued * w.metrics) for w in with_values]
    streams = sum(1 for _, t in members if t >= FIRST_STREAM_THREAD)
    return SynthResult(os.path.abspath(out), len(members), len(members) - streams, streams,
                       len({r for r, _ in members}), len(prog.metrics), sum(w.bytes for w in written),
                       float(np.mean(ctx)) if ctx else 0.0, float(np.mean(met)) if met else 0.0, len(prog.parent))
