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
  metrics (:func:`gpumetrics.metric_table`: 1 CPU + 63 GPU metrics, the
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
"""

from __future__ import annotations

import hashlib
import multiprocessing as mp
import os
from dataclasses import dataclass, field, replace

import numpy as np

from hpcsa.fileio import atomic_dir
from hpcsa.ingest.gpumetrics import metric_ids, metric_table
from hpcsa.ingest.hpcrun import (
    CCT_NODE,
    ID_ELEMENT,
    LOADMAP_ANALYZE,
    UNWOUND,
    VAL_FMT_REAL,
    HpcrunProfile,
    LoadModule,
    MetricDesc,
    default_id_names,
    encode_hpcrun,
    pack_values,
)
from hpcsa.ingest.hpcrun import (
    GPUCONTEXT_ELEMENT as GPUCONTEXT,
)
from hpcsa.ingest.hpcrun import (
    GPUSTREAM_ELEMENT as GPUSTREAM,
)
from hpcsa.ingest.hpcrun import (
    NODE_ELEMENT as NODE,
)
from hpcsa.ingest.hpcrun import (
    RANK_ELEMENT as RANK,
)
from hpcsa.ingest.hpcrun import (
    THREAD_ELEMENT as THREAD,
)
from hpcsa.ingest.hpctrace import FLAG_CALL_TRACE, HpctraceFile, encode_hpctrace, make_records
from hpcsa.ingest.placeholders import PH
from hpcsa.structure.hpcstruct_text import write_hpcstruct
from hpcsa.structure.model import A, F, L, ModuleBuilder, P, StructureFile, renumber

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

FIRST_STREAM_THREAD = 500

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
    def preset(cls, kind: str, profiles: int, **changes: object) -> SynthSpec:
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
        return replace(spec, **changes)  # type: ignore[arg-type]

    @property
    def per_rank(self) -> int:
        return self.threads_per_rank + (self.streams_per_rank if self.gpu else 0)

    def members(self) -> list[tuple[int, int]]:
        """(rank, thread number) of every profile, in order; GPU streams are threads 500, 501, ..."""
        out = []
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
    md5 = hashlib.md5(f"synth-{spec.program}-{spec.seed}".encode()).hexdigest()
    gpubin = f"/synth/{spec.program}/{spec.program}.m/gpubins/{md5}.gpubin"
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
    parent = np.array(cols["parent"], np.int64)
    anc = [np.arange(len(parent))]
    while (anc[-1] >= 0).any():
        prev = anc[-1]
        anc.append(np.where(prev >= 0, parent[np.maximum(prev, 0)], -1))
    op_rows = np.array(ops, OP) if ops else np.zeros(0, OP)
    return Program(spec, funcs, kernels, loadmap, metrics, parent, np.array(cols["lm"], np.uint16),
                   np.array(cols["ip"], np.uint64), np.array(cols["kind"], np.uint8),
                   np.array(cols["role"], np.uint8), np.array(cols["weight"]), np.array(cols["op"], np.int64),
                   np.stack(anc[:-1], axis=1), op_rows, gpubin)


# -- profiles ------------------------------------------------------------------------------------------------


@dataclass
class Written:
    """What one profile holds (the generator's summary and density figures)."""

    nodes: int
    valued: int          # nodes with at least one value
    values: int
    metrics: int
    bytes: int


def _rank_ops(prog: Program, rank: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The GPU operations a rank ran: (op rows, launches, total seconds); the same for its thread and streams."""
    if not len(prog.ops):
        return np.zeros(0, np.int64), np.zeros(0), np.zeros(0)
    rng = np.random.default_rng([prog.spec.seed, 0x6B7, rank])
    chosen = np.flatnonzero(rng.random(len(prog.ops)) < min(0.7, prog.spec.gpu_ops / len(prog.ops)))
    need = min(len(prog.ops), max(1, prog.spec.streams_per_rank))  # a stream exists because it ran something
    if len(chosen) < need:
        rest = np.setdiff1d(np.arange(len(prog.ops)), chosen)
        chosen = np.sort(np.concatenate([chosen, rng.choice(rest, size=need - len(chosen), replace=False)]))
    launches = prog.ops["launches"][chosen] * rng.lognormal(0.0, 0.2, len(chosen))
    launches = np.maximum(1, np.rint(launches))
    seconds = launches * prog.ops["duration"][chosen] * rng.lognormal(0.0, 0.1, len(chosen))
    return chosen, launches, seconds


def _gpu_values(prog: Program, chosen: np.ndarray, launches: np.ndarray, seconds: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """hpcrun's GPU metrics of a rank's operations at their value nodes: (node, metric, value)."""
    mid = metric_ids(prog.metrics)
    ops = prog.ops[chosen]
    kind = ops["kind"]
    rows: list[tuple[np.ndarray, int, np.ndarray]] = []

    def add(mask: np.ndarray, metric: str, value: np.ndarray) -> None:
        rows.append((ops["value_node"][mask], mid[metric], value[mask]))

    every = np.ones(len(ops), bool)
    add(every, "GPUOP (sec)", seconds)
    k = kind == KERNEL_OP
    add(k, "GKER (sec)", seconds)
    add(k, "GKER:COUNT", launches)
    kern = np.maximum(ops["kernel"], 0)
    attrs = {"GKER:STMEM_ACUMU (B)": 1024 * (kern % 5), "GKER:LMEM_ACUMU (B)": 256 * (kern % 3),
             "GKER:FGP_ACT_ACUMU": 16 + 8 * (kern % 6), "GKER:FGP_MAX_ACUMU": np.full(len(kern), 64),
             "GKER:THR_REG_ACUMU": 32 + 8 * (kern % 7), "GKER:BLK_THR_ACUMU": 128 * (1 + kern % 4),
             "GKER:BLK_SM_ACUMU": 1024 * (kern % 5), "GKER:BLKS_ACUMU": 80 * (1 + kern % 9)}
    for name, per_launch in attrs.items():
        add(k, name, launches * per_launch)
    for kind_code, direction in ((COPYIN_OP, "H2D"), (COPYOUT_OP, "D2H")):
        c = kind == kind_code
        add(c, "GXCOPY (sec)", seconds)
        add(c, f"GXCOPY:{direction} (B)", launches * ops["bytes"])
        add(c, "GXCOPY:COUNT", launches)
    s = kind == SYNC_OP
    add(s, "GSYNC (sec)", seconds)
    add(s, "GSYNC:STR (sec)", seconds)
    add(s, "GSYNC:COUNT", launches)
    nodes = np.concatenate([r[0] for r in rows])
    metrics = np.concatenate([np.full(len(r[0]), r[1]) for r in rows])
    return nodes, metrics, np.concatenate([r[2] for r in rows])


def _header(prog: Program, rank: int, thread: int, host: int, times: np.ndarray) -> dict[str, str]:
    spec = prog.spec
    return {"program-name": spec.program, "program-path": prog.loadmap[0].path, "env-path": "", "job-id": "",
            "mpi-rank": str(rank), "thread-id": str(thread), "host-id": f"{host:08x}",
            "process-id": str(1000 + rank), "trace-min-time": str(int(times.min()) if len(times) else 0),
            "trace-max-time": str(int(times.max()) if len(times) else 0), "trace-disorder": "0"}


def _id_tuple(host: int, rank: int, tail: list[tuple[int, int]]) -> np.ndarray:
    elems = [(NODE, host, 0), (RANK, rank, rank)] + [(k, v, v) for k, v in tail]
    out = np.zeros(len(elems), ID_ELEMENT)
    for i, e in enumerate(elems):
        out[i] = e
    return out


def host_of(spec: SynthSpec, rank: int) -> int:
    return 0x5E000000 + rank // max(1, spec.ranks_per_node)


def thread_profile(prog: Program, rank: int, thread: int) -> tuple[HpcrunProfile, HpctraceFile]:
    """A CPU thread's profile and trace (its main thread also has the rank's GPU operations)."""
    spec = prog.spec
    rng = np.random.default_rng([spec.seed, rank, thread])
    role = MAIN if thread == 0 else WORKER
    leaves = np.flatnonzero((prog.kind == SAMPLE) & (prog.role == role))
    w = prog.weight[leaves] * rng.lognormal(0.0, 0.5, len(leaves))  # each thread its own hot spots
    m = min(len(leaves), max(1, int(spec.leaves * rng.uniform(0.6, 1.0))))
    active = rng.choice(leaves, size=m, replace=False, p=w / w.sum()) if m else leaves[:0]
    wa = prog.weight[active]
    # The trace: samples in runs of one context (mean 3), one per period, with jitter.
    n = spec.samples
    runs = rng.geometric(1 / 3, size=n)
    n_runs = int(np.searchsorted(np.cumsum(runs), n)) + 1
    seq = np.repeat(rng.choice(active, size=n_runs, p=wa / wa.sum()), runs[:n_runs])[:n] if m else active
    start = START_NS + rank * 1_000_003
    times = start + np.arange(len(seq), dtype=np.int64) * SAMPLE_PERIOD_NS + rng.integers(0, 1_000_000, len(seq))
    sampled, counts = np.unique(seq, return_counts=True)
    nodes = [sampled]
    cpu_metric = len(prog.metrics) - 1
    v_node, v_metric, v_value = [sampled], [np.full(len(sampled), cpu_metric)], [counts * SAMPLE_PERIOD_NS / 1e9]
    if spec.gpu and role == MAIN and len(prog.ops):
        chosen, launches, seconds = _rank_ops(prog, rank)
        gn, gm, gv = _gpu_values(prog, chosen, launches, seconds)
        v_node.append(gn)
        v_metric.append(gm)
        v_value.append(gv)
        nodes += [gn, prog.ops["trace_node"][chosen]]
    cct_nodes = prog.closure(np.concatenate(nodes))
    host = host_of(spec, rank)
    prof = _profile(prog, cct_nodes, np.concatenate(v_node), np.concatenate(v_metric), np.concatenate(v_value),
                    _header(prog, rank, thread, host, times), _id_tuple(host, rank, [(THREAD, thread)]))
    trace = HpctraceFile(0, make_records(times.astype(np.uint64), (seq + 1).astype(np.uint32)))
    return prof, trace


def stream_profile(prog: Program, rank: int, stream: int) -> tuple[HpcrunProfile, HpctraceFile]:
    """A GPU stream: the call trace of the rank's operations assigned to it; no values (as hpcrun)."""
    spec = prog.spec
    rng = np.random.default_rng([spec.seed, rank, FIRST_STREAM_THREAD + stream])
    chosen, launches, seconds = _rank_ops(prog, rank)
    mine = np.flatnonzero(np.arange(len(chosen)) % max(1, spec.streams_per_rank) == stream)
    noact = int(np.flatnonzero(prog.kind == NO_ACTIVITY)[0])
    if len(mine):
        events = max(1, spec.samples // 2)
        pick = rng.choice(mine, size=events, p=launches[mine] / launches[mine].sum())
        dur = (seconds[pick] / launches[pick] * 1e9 * rng.lognormal(0.0, 0.2, events)).astype(np.int64) + 1
        gap = rng.integers(1_000, 200_000, events)
        begin = START_NS + rank * 1_000_003 + np.cumsum(gap + dur) - dur
        leaf = prog.ops["trace_node"][chosen[pick]]
        times = np.empty(2 * events, np.int64)
        ctx = np.empty(2 * events, np.int64)
        times[0::2], times[1::2] = begin, begin + dur
        ctx[0::2], ctx[1::2] = leaf, noact
    else:
        times = ctx = np.zeros(0, np.int64)
    cct_nodes = prog.closure(np.concatenate([ctx, [noact]]).astype(np.int64))
    host = host_of(spec, rank)
    z = np.zeros(0, np.int64)
    prof = _profile(prog, cct_nodes, z, z, np.zeros(0), _header(prog, rank, FIRST_STREAM_THREAD + stream, host, times),
                    _id_tuple(host, rank, [(GPUCONTEXT, 1), (GPUSTREAM, stream)]))
    return prof, HpctraceFile(FLAG_CALL_TRACE, make_records(times.astype(np.uint64), (ctx + 1).astype(np.uint32)))


def _profile(prog: Program, cct_nodes: np.ndarray, node: np.ndarray, metric: np.ndarray, value: np.ndarray,
             header: dict[str, str], id_tuple: np.ndarray) -> HpcrunProfile:
    par = prog.parent[cct_nodes]
    cct = np.zeros(len(cct_nodes), CCT_NODE)
    cct["id"], cct["parent"] = cct_nodes + 1, np.where(par >= 0, par + 1, 0)
    cct["lm_id"], cct["lm_ip"], cct["flags"] = prog.lm[cct_nodes], prog.ip[cct_nodes], UNWOUND
    values, index = pack_values(node + 1, metric, value, prog.metrics, cct["id"])
    return HpcrunProfile(header=header, loadmap=list(prog.loadmap), cct=cct, metrics=list(prog.metrics),
                         id_names=default_id_names(), id_tuple=id_tuple, values=values, index=index)


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
        if fn.alien is not None:
            opens.setdefault(fn.alien[0], []).append((fn.alien[1], "alien", 0))
        stack = [(p, fn.n)]
        for s in range(fn.n):
            while stack[-1][1] <= s:
                stack.pop()
            for end, what, _ in opens.get(s, []):
                if what == "loop":
                    stack.append((b.add(L, stack[-1][0], line=fn.line + 1 + s, file=fn.file,
                                        ranges=[(fn.address(s), fn.address(s) + 1)]), end))
                else:
                    _, _, name, header, line = fn.alien  # type: ignore[misc]
                    outer = b.add(A, stack[-1][0], line=fn.line + 1 + s, file=fn.file, name="", ranges=[])
                    stack.append((outer, end))
                    stack.append((b.add(A, outer, line=line, file=header, name=name, ranges=[]), end))
            inside = fn.alien is not None and fn.alien[0] <= s < fn.alien[1]
            line = fn.alien[4] + 1 + s - fn.alien[0] if inside else fn.line + 1 + s  # type: ignore[index]
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


_PROGRAM: Program | None = None
_OUT = ""


def _write_member(member: tuple[int, int]) -> Written:
    prog, out = _PROGRAM, _OUT
    assert prog is not None
    rank, thread = member
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
    global _PROGRAM, _OUT
    prog = build_program(spec)
    members = spec.members()
    with atomic_dir(out) as tmp:
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
        _PROGRAM, _OUT = prog, tmp
        try:
            if jobs > 1 and len(members) > 1 and "fork" in mp.get_all_start_methods():
                with mp.get_context("fork").Pool(min(jobs, len(members))) as pool:
                    written = pool.map(_write_member, members, chunksize=max(1, len(members) // (8 * jobs)))
            else:
                written = [_write_member(m) for m in members]
        finally:
            _PROGRAM, _OUT = None, ""
    with_values = [w for w in written if w.valued]
    ctx = [100.0 * w.valued / w.nodes for w in with_values]
    met = [100.0 * w.values / (w.valued * w.metrics) for w in with_values]
    streams = sum(1 for _, t in members if t >= FIRST_STREAM_THREAD)
    return SynthResult(os.path.abspath(out), len(members), len(members) - streams, streams,
                       len({r for r, _ in members}), len(prog.metrics), sum(w.bytes for w in written),
                       float(np.mean(ctx)) if ctx else 0.0, float(np.mean(met)) if met else 0.0, len(prog.parent))
