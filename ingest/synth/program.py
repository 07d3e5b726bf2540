"""Synthetic measurement directories at any scale, shaped like what hpcrun writes for a parallel program.

For benchmarks and tests of ``hpcsa prof``, and for trying a viewer on big
inputs without a big machine. A *program* is drawn once from the seed:
functions in an executable and a library (each with lines, loops and inlined
code), a call graph, and, for GPU-like sets, kernels, copies and
synchronizations launched from some functions. Its calling contexts form a
template tree; each profile takes its part of the template, vectorized:

- a CPU thread samples a subset of the contexts of its role (the main thread
  and the workers run different code; each thread its own subset, hot
  contexts shared). Its ``.hpctrace`` holds the samples in time order, in
  runs (a thread stays a while in one context), and ``CPUTIME (sec)`` at each
  sampled context is its number of samples times the sampling period, as
  hpcrun attributes it;
- GPU-like sets: each rank's main thread also has the rank's GPU operations
  under their launch contexts, as hpcrun places them (``<gpu kernel>`` with
  the kernel's entry below it, ``<gpu copyin>``, ``<gpu copyout>``,
  ``<gpu sync>``, and the ``<gpu kernel>`` trace contexts), with hpcrun's GPU
  metrics (:func:`hpcsa.ingest.gpumetrics.metric_table`: 1 CPU + 63 GPU metrics, the
  table of current hpcrun; the hpcrun measured in
  "Preparing for Performance Analysis at Exascale" had 62). Each GPU stream is a
  pseudo-thread (numbered from 500) whose call-trace ``.hpctrace`` shows
  each operation from its start to ``<no activity>`` at its end, and whose
  profile has no values (as hpcrun writes them);
- ``structs/`` holds structure files of the executable and the library
  (:mod:`hpcsa.structure` model and writer) and the kernel names of the GPU
  binary, so the aggregation's lexical expansion is exercised.

Densities come out like Table 2 (measurement data) of "Preparing for
Performance Analysis at Exascale" (Anderson, Liu, Mellor-Crummey, ICS 2022):
a value at ~15-20 % of a profile's contexts and, on the GPU-like set, ~2 %
of the metrics of such a context. The same seed and spec give the same bytes for
any number of workers: every profile has its own random stream, and the
program its own.

This module draws the program; :mod:`hpcsa.ingest.synth.profiles` takes one
profile from it and :mod:`hpcsa.ingest.synth.directory` writes the directory
(``generate``).
"""

from __future__ import annotations

from dataclasses import field, replace
from typing import Any

import numpy as np

from hpcsa.core.dataclass import dataclass
from hpcsa.core.digests import md5
from hpcsa.formats.measurement.hpcrun import (
    FIRST_STREAM_THREAD,
    LOADMAP_ANALYZE,
    VAL_FMT_REAL,
    LoadModule,
    MetricDesc,
)
from hpcsa.formats.measurement.placeholders import PH
from hpcsa.ingest.gpumetrics import metric_table

# Template node kinds.
ROOT, FENCE, CALL, SAMPLE, GPU_PH, KERNEL, TRACE_PH, TRACE_KERNEL, NO_ACTIVITY = range(9)
MAIN, WORKER = 0, 1  # thread roles
KERNEL_OP, COPYIN_OP, COPYOUT_OP, SYNC_OP = range(4)

OP_PLACEHOLDER = {KERNEL_OP: "kernel", COPYIN_OP: "copyin", COPYOUT_OP: "copyout", SYNC_OP: "sync"}

#: hpcrun's CPU-time metric (as in real measurements: seconds, real-valued, period 1).
CPUTIME = MetricDesc(name="CPUTIME (sec)", description="CPUTIME (sec)", type=1, val_type=0, val_fmt=VAL_FMT_REAL)
SAMPLE_PERIOD_NS = 5_000_000  # hpcrun's default CPU-time period: 5 ms
START_NS = 1_700_000_000_000_000_000
STATEMENT_BYTES = 16
EXE_BASE, LIB_BASE = 0x1000, 0x2000
KERNEL_BYTES = 0x800

VERBS = ("compute", "update", "exchange", "reduce", "assemble", "apply", "solve", "pack", "unpack", "scan",
         "sort", "build", "integrate", "smooth", "project", "advance")
NOUNS = ("flux", "halo", "matrix", "mesh", "particles", "forces", "residual", "stencil", "boundary", "grid",
         "cells", "tree", "fields", "density", "pressure", "velocity")


@dataclass(frozen=True)
class SynthSpec:
    """What to generate. ``profiles`` counts CPU threads and GPU streams; ranks are filled in order."""

    profiles: int = 64
    gpu: bool = False            # GPU-like set: GPU metrics and operations, GPU streams
    threads_per_rank: int = 16
    streams_per_rank: int = 0
    ranks_per_node: int = 4
    functions: int = 160         # of the program (3/4 in the executable, 1/4 in the library)
    contexts: int = 6000         # calling contexts of the program's template tree
    leaves: int = 50             # contexts a CPU thread samples (at most)
    samples: int = 300           # trace records per profile (CPU samples; 2 per GPU operation on a stream)
    gpu_ops: int = 4             # GPU operations (kernel, copy, sync launch contexts) a rank runs, on average
    structs: bool = True
    traces: bool = True
    seed: int = 0
    program: str = "synthapp"

    @classmethod
    def preset(cls, kind: str, profiles: int, **changes: Any) -> SynthSpec:
        """``cpu``: ranks of 16 threads, CPU time only. ``gpu``: the GPU sets of "Preparing for Performance
        Analysis at Exascale" (LAMMPS, PeleC: a CPU thread and a GPU stream per rank, 4 ranks per node,
        1 CPU + 62 GPU metrics)."""
        if kind == "cpu":
            spec = cls(profiles=profiles)
        elif kind == "gpu":
            spec = cls(profiles=profiles, gpu=True, threads_per_rank=1, streams_per_rank=1, contexts=12000,
                       leaves=90)
        else:
            raise ValueError(kind)
        return replace(spec, **changes)

    @property
    def per_rank(self) -> int:
        return self.threads_per_rank + (self.streams_per_rank if self.gpu else 0)

    def members(self) -> list[tuple[int, int]]:
        """(rank, thread number) of every profile, in order; GPU streams are threads 500, 501, ..."""
        out: list[tuple[int, int]] = []
        per = [*range(self.threads_per_rank),
               *(range(FIRST_STREAM_THREAD, FIRST_STREAM_THREAD + self.streams_per_rank) if self.gpu else ())]
        rank = 0
        while len(out) < self.profiles:
            out += [(rank, t) for t in per][: self.profiles - len(out)]
            rank += 1
        return out


@dataclass
class Function:
    name: str
    module: int          # 0 executable, 1 library
    file: str
    line: int            # of its first statement - 1
    entry: int           # address (offset in its module) of statement 0
    n: int               # statements, STATEMENT_BYTES each
    loops: list[tuple[int, int]] = field(default_factory=list)   # [first, end) statements, outer first
    alien: tuple[int, int, str, str, int] | None = None         # first, end, name, file, line of the inlined code
    calls: list[tuple[int, int]] = field(default_factory=list)   # (statement, callee)
    launches: list[tuple[int, list[tuple[int, int]]]] = field(default_factory=list)  # (statement, [(op kind, kernel)])

    def address(self, stmt: int) -> int:
        return self.entry + STATEMENT_BYTES * stmt


@dataclass
class Program:
    """The program every profile measures: functions, kernels, and the template tree of calling contexts."""

    spec: SynthSpec
    functions: list[Function]
    kernels: list[tuple[str, int]]    # (name, entry address in the GPU binary)
    loadmap: list[LoadModule]
    metrics: list[MetricDesc]
    parent: np.ndarray                # template tree, parents before children
    lm: np.ndarray
    ip: np.ndarray
    kind: np.ndarray
    role: np.ndarray
    weight: np.ndarray                # how hot a sample context is
    op: np.ndarray                    # GPU operation of a value/trace node (-1)
    anc: np.ndarray                   # [nodes, depth + 1] ancestors (self first), -1 past the root
    ops: np.ndarray                   # OP rows
    gpubin: str = ""

    def closure(self, nodes: np.ndarray) -> np.ndarray:
        """The nodes and all their ancestors, sorted (parents before children)."""
        a = self.anc[np.asarray(nodes, np.int64)].ravel()
        return np.unique(a[a >= 0])


#: One GPU operation of the program: its kind, kernel, the nodes holding its values and its trace context.
OP = np.dtype([("kind", "u1"), ("kernel", "i4"), ("value_node", "i8"), ("trace_node", "i8"),
               ("duration", "f8"), ("bytes", "f8"), ("launches", "f8")])


def _names(rng: np.random.Generator, n: int, prefix: str) -> list[str]:
    out, used = [], set()
    for _ in range(n):
        base = f"{prefix}{VERBS[rng.integers(len(VERBS))]}_{NOUNS[rng.integers(len(NOUNS))]}"
        name, k = base, 1
        while name in used:
            k += 1
            name = f"{base}_{k}"
        used.add(name)
        out.append(name)
    return out


def _functions(spec: SynthSpec, rng: np.random.Generator) -> list[Function]:
    n_exe = max(2, spec.functions * 3 // 4)
    n_lib = max(1, spec.functions - n_exe)
    names = ["main", "worker_loop"] + _names(rng, n_exe - 2, "") + _names(rng, n_lib, "sy_")
    src = f"/synth/{spec.program}/src"
    out: list[Function] = []
    next_addr = [EXE_BASE, LIB_BASE]
    for i, name in enumerate(names):
        module = 0 if i < n_exe else 1
        n = int(rng.integers(12, 49))
        file_no = (i if module == 0 else i - n_exe) // 6
        file = f"{src}/{NOUNS[file_no % len(NOUNS)]}{file_no}.c" if module == 0 else f"{src}/lib/sy{file_no}.c"
        fn = Function(name, module, file, 20 + 60 * (i % 6), next_addr[module], n)
        next_addr[module] += -(-STATEMENT_BYTES * n // 64) * 64 + 64
        if rng.random() < 0.7 and n >= 8:  # a loop, sometimes with a nested one
            a = int(rng.integers(1, n // 2))
            b = int(rng.integers(a + 3, n + 1))
            fn.loops.append((a, b))
            if rng.random() < 0.5 and b - a >= 6:
                a2 = int(rng.integers(a + 1, b - 3))
                fn.loops.append((a2, int(rng.integers(a2 + 2, b + 1))))
        free = [s for s in range(1, n) if not any(a <= s < b for a, b in fn.loops)]
        if rng.random() < 0.35 and len(free) >= 4:  # inlined code outside the loops
            c = free[int(rng.integers(0, len(free) - 3))]
            d = c + 1
            while d < n and d - c < 6 and not any(a <= d < b for a, b in fn.loops):
                d += 1
            inl = f"inline_{NOUNS[int(rng.integers(len(NOUNS)))]}"
            fn.alien = (c, d, inl, f"{src}/include/{inl}.h", int(rng.integers(10, 200)))
        out.append(fn)
    # Call graph: a DAG towards higher indices (mostly nearby), the library called from the executable.
    for i, fn in enumerate(out):
        if i >= len(out) - 3:
            continue
        k = 8 if i < 2 else int(rng.integers(1, 6))
        stmts = rng.choice(np.arange(fn.n), size=min(k, fn.n), replace=False)
        for s in sorted(stmts.tolist()):
            j = int(min(len(out) - 1, i + 1 + rng.geometric(0.15)))
            if out[j].module == 1 and fn.module == 0 and rng.random() < 0.5:
                j = int(rng.integers(n_exe, len(out)))
            elif fn.module == 0 and j >= n_exe:
                j = int(rng.integers(min(i + 1, n_exe - 1), n_exe))
            fn.calls.append((s, j))
    return out


def _gpu_ops(spec: SynthSpec, rng: np.random.Generator, funcs: list[Function]) -> list[tuple[str, int]]:
    """Kernels of the GPU binary, and launch statements (with their operations) in executable functions."""
    n_kernels = max(4, spec.functions // 8)
    kernels = [(f"k_{n}", 0x1000 + KERNEL_BYTES * k)
               for k, n in enumerate(_names(rng, n_kernels, "gpu_"))]
    for i, fn in enumerate(funcs):
        if fn.module != 0 or i < 2 or rng.random() > 0.3:
            continue
        taken = {s for s, _ in fn.calls}
        for s in rng.choice(np.arange(fn.n), size=min(2, fn.n), replace=False).tolist():
            if s in taken:
                continue
            ops = [(KERNEL_OP, int(rng.integers(n_kernels))) for _ in range(int(rng.integers(1, 3)))]
            ops += [(k, -1) for k, p in ((COPYIN_OP, 0.5), (COPYOUT_OP, 0.5), (SYNC_OP, 0.3)) if rng.random() < p]
            fn.launches.append((s, ops))
    return kernels


class _Tree:
    def __init__(self) -> None:
        self.cols: dict[str, list[float]] = {k: [] for k in ("parent", "lm", "ip", "kind", "role", "weight", "op")}

    def add(self, parent: int, lm: int, ip: int, kind: int, role: int, weight: float = 0.0, op: int = -1) -> int:
        c = self.cols
        c["parent"].append(parent)
        c["lm"].append(lm)
        c["ip"].append(ip)
        c["kind"].append(kind)
        c["role"].append(role)
        c["weight"].append(weight)
        c["op"].append(op)
        return len(c["parent"]) - 1

    def __len__(self) -> int:
        return len(self.cols["parent"])


def build_program(spec: SynthSpec) -> Program:
    """The program of a spec (the same for the same spec): functions, kernels and the template tree."""
    rng = np.random.default_rng([spec.seed, 0x5EED])
    funcs = _functions(spec, rng)
    kernels = _gpu_ops(spec, rng, funcs) if spec.gpu else []
    digest = md5(f"synth-{spec.program}-{spec.seed}".encode()).hexdigest()
    gpubin = f"/synth/{spec.program}/{spec.program}.m/gpubins/{digest}.gpubin"
    loadmap = [LoadModule(1, f"/synth/{spec.program}/bin/{spec.program}", LOADMAP_ANALYZE),
               LoadModule(2, f"/synth/{spec.program}/lib/libsynth.so", LOADMAP_ANALYZE)]
    if spec.gpu:
        loadmap.append(LoadModule(3, gpubin, LOADMAP_ANALYZE))
    # GPU metrics first: their formulas (``#N``) name metrics by position in a table that starts with them.
    metrics = (metric_table(pc_sampling=False, implicit_copies=False) if spec.gpu else []) + [CPUTIME]

    tree = _Tree()
    ops: list[tuple[int, int, int, int, float, float, float]] = []
    root = tree.add(-1, 0, PH["primary"], ROOT, MAIN)
    tree.add(root, 0, PH["noact"], NO_ACTIVITY, MAIN)
    frontier = [(tree.add(root, 0, PH["main"], FENCE, MAIN), 0, MAIN),
                (tree.add(root, 0, PH["thread"], FENCE, WORKER), 1, WORKER)]
    while frontier and len(tree) < spec.contexts:
        at = int(rng.integers(len(frontier)))
        frontier[at], frontier[-1] = frontier[-1], frontier[at]
        parent, f, role = frontier.pop()
        fn = funcs[f]
        lm = fn.module + 1
        busy = {s for s, _ in fn.calls} | {s for s, _ in fn.launches}
        free = [s for s in range(fn.n) if s not in busy]
        for s in rng.choice(free, size=min(len(free), int(rng.poisson(0.9))), replace=False).tolist():
            tree.add(parent, lm, fn.address(s) + int(rng.integers(0, STATEMENT_BYTES)), SAMPLE, role,
                     float(rng.lognormal(0.0, 1.2)))
        for s, g in fn.calls:
            if rng.random() < 0.6:
                frontier.append((tree.add(parent, lm, fn.address(s) + 8, CALL, role), g, role))
        if role != MAIN:
            continue
        for s, site_ops in fn.launches:
            if rng.random() > 0.8:
                continue
            site = tree.add(parent, lm, fn.address(s) + 8, CALL, role)
            trace_ph = tree.add(site, 0, PH["trace"], TRACE_PH, role)
            kernel_ph = -1
            for kind, k in site_ops:
                op = len(ops)
                if kind == KERNEL_OP:
                    if kernel_ph < 0:
                        kernel_ph = tree.add(site, 0, PH["kernel"], GPU_PH, role)
                    value = tree.add(kernel_ph, 3, kernels[k][1], KERNEL, role, op=op)
                    trace = tree.add(trace_ph, 3, kernels[k][1], TRACE_KERNEL, role, op=op)
                else:
                    value = tree.add(site, 0, PH[OP_PLACEHOLDER[kind]], GPU_PH, role, op=op)
                    trace = trace_ph
                ops.append((kind, k, value, trace, float(rng.lognormal(-9.0, 1.0)),
                            float(2 ** rng.integers(16, 26)) if kind in (COPYIN_OP, COPYOUT_OP) else 0.0,
                            float(rng.integers(5, 60))))
    cols = tree.cols
    parent_rows = np.array(cols["parent"], np.int64)
    anc = [np.arange(len(parent_rows))]
    while (anc[-1] >= 0).any():
        prev = anc[-1]
        anc.append(np.where(prev >= 0, parent_rows[np.maximum(prev, 0)], -1))
    op_rows = np.array(ops, OP) if ops else np.zeros(0, OP)
    return Program(spec, funcs, kernels, loadmap, metrics, parent_rows, np.array(cols["lm"], np.uint16),
                   np.array(cols["ip"], np.uint64), np.array(cols["kind"], np.uint8),
                   np.array(cols["role"], np.uint8), np.array(cols["weight"]), np.array(cols["op"], np.int64),
                   np.stack(anc[:-1], axis=1), op_rows, gpubin)
