"""Real-shaped inputs for ``hpcsa prof`` benchmarks: structure files of the machine's own binaries, and
measurement directories whose samples fall all over them.

Structure files are made by ``hpcsa struct`` from real binaries (the C library with Debian's detached debug
info from ``libc6-dbg``, libm, libgomp, libstdc++, and Debian's ``python3.11d`` from ``python3.11-dbg``, a
large C program with full DWARF), once: they are kept in ``$HPCSA_BENCH_CACHE`` (default
``~/.cache/hpcsa/bench``) under the SHA-256 of the binary, so a later benchmark reuses them.

Measurements are written with the project's own ``.hpcrun`` / ``.hpctrace`` writers. One calling-context tree
(the program's) is shared by all profiles, as the threads of a real run share most of their contexts: paths of
depth 20-60 whose frames are return addresses inside the binaries' procedures, and whose leaves are
statement addresses, half of them inside loops or inlined code; each profile samples a few hundred of its
leaves (its own hot spots) with a trace of them, about the size of the profiles of a real OpenMP run
(~13 KB per thread with its trace).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hpcsa.formats.hpcstruct.model import A, L, Module, S
from hpcsa.formats.measurement.hpcrun import (
    CCT_NODE,
    ID_ELEMENT,
    LOADMAP_ANALYZE,
    UNWOUND,
    VAL_FMT_REAL,
    HpcrunProfile,
    LoadModule,
    MetricDesc,
    default_id_names,
    pack_values,
    placeholder_code,
    write_hpcrun,
)
from hpcsa.formats.measurement.hpctrace import HpctraceFile, make_records, write_hpctrace

LIBDIR = Path("/usr/lib/x86_64-linux-gnu")
#: name -> binary: what real runs of the issue load (the C library with its debug info, its maths library,
#: the OpenMP runtime, the C++ library) and a large C program with full DWARF.
BINARIES = {
    "libc": LIBDIR / "libc.so.6",
    "libm": LIBDIR / "libm.so.6",
    "libgomp": LIBDIR / "libgomp.so.1",
    "libstdc++": LIBDIR / "libstdc++.so.6",
    "python3.11d": Path("/usr/bin/python3.11d"),
}
#: The two shapes of the issue: an OpenMP program's threads (C/C++ libraries, ~10 MB of structure) and
#: processes of a large C program (its interpreter's 13 MB structure file and the C libraries).
SHAPES = {
    "omp": ("libc", "libm", "libgomp", "libstdc++"),
    "bigc": ("python3.11d", "libc", "libm"),
}
CPUTIME = MetricDesc(name="CPUTIME (sec)", description="CPUTIME (sec)", type=1, val_type=0, val_fmt=VAL_FMT_REAL)
PRIMARY = placeholder_code("^Primary")
THREAD_ROOT = placeholder_code("| Thread")
PERIOD_NS = 5_000_000
NODE, RANK, THREAD = 1, 2, 3  # identifier-tuple kinds


def cache_dir() -> Path:
    return Path(os.environ.get("HPCSA_BENCH_CACHE", Path.home() / ".cache" / "hpcsa" / "bench"))


def structure_file(name: str, jobs: int = 2, log=print) -> Path:
    """The structure file of binary ``name`` (made by ``hpcsa struct`` once, then reused by content)."""
    binary = BINARIES[name].resolve()
    if not binary.is_file():
        raise SystemExit(f"benchmark input {binary} is missing (apt-get install libc6-dbg python3.11-dbg)")
    with open(binary, "rb") as fh:
        digest = hashlib.file_digest(fh, "sha256").hexdigest()[:16]
    out = cache_dir() / "structs" / f"{binary.name}-{digest}.hpcstruct"
    if not out.is_file():
        out.parent.mkdir(parents=True, exist_ok=True)
        log(f"hpcsa struct {binary} (once; cached as {out})")
        env = dict(os.environ, HPCSA_NO_PROGRESS="1")
        subprocess.run([sys.executable, "-m", "hpcsa", "struct", str(binary), "-o", str(out), "-j", str(jobs)],
                       check=True, env=env, stdout=subprocess.DEVNULL)
    return out


# -- the program's calling-context tree ------------------------------------------------------------------


@dataclass
class Sites:
    """Addresses of one binary to draw from: statements (leaves) and statements to return to (frames)."""

    lm: int
    leaves: np.ndarray     # statement start addresses; the first half in loops or inlined code when possible
    frames: np.ndarray     # return addresses: statement addresses inside procedures


def sites_of(module: Module, lm: int, rng: np.random.Generator, n: int = 4000) -> Sites:
    sc, r = module.scopes, module.leaf_map
    r = r[sc["kind"][r["scope"]] == S]
    parent_kind = sc["kind"][sc["parent"][r["scope"]]]
    deep = (parent_kind == L) | (parent_kind == A)
    pick_deep = r["lo"][deep]
    pick_flat = r["lo"][~deep]
    half = n // 2
    leaves = np.concatenate([rng.choice(pick_deep, min(half, len(pick_deep)), replace=False) if len(pick_deep)
                             else pick_deep,
                             rng.choice(pick_flat, min(n - half, len(pick_flat)), replace=False)])
    frames = rng.choice(r["lo"], min(n, len(r)), replace=False) + np.uint64(1)
    return Sites(lm, leaves.astype(np.uint64), frames.astype(np.uint64))


@dataclass
class Program:
    loadmap: list[LoadModule]
    parent: np.ndarray   # template tree, parents before children
    lm: np.ndarray
    ip: np.ndarray
    leaves: np.ndarray   # sample nodes
    anc: np.ndarray      # [nodes, depth] ancestors (self first), -1 past the root

    def closure(self, nodes: np.ndarray) -> np.ndarray:
        a = self.anc[nodes].ravel()
        return np.unique(a[a >= 0])


def build_program(modules: list[Module], paths: int, seed: int) -> Program:
    """``paths`` call paths of depth 20-60 through the binaries; each new path branches off an earlier one
    at a random depth (threads share their outer frames, as real ones do)."""
    rng = np.random.default_rng(seed)
    loadmap = [LoadModule(i + 1, m.path, LOADMAP_ANALYZE) for i, m in enumerate(modules)]
    sites = [sites_of(m, i + 1, rng) for i, m in enumerate(modules)]
    weights = np.array([len(s.frames) for s in sites], float) ** 0.5
    weights /= weights.sum()
    parent, lm, ip = [-1, 0], [0, 0], [PRIMARY, THREAD_ROOT]
    parent[1] = 0
    index: dict[tuple[int, int, int], int] = {}

    def child(p: int, m: int, addr: int) -> int:
        key = (p, m, addr)
        got = index.get(key)
        if got is None:
            got = index[key] = len(parent)
            parent.append(p)
            lm.append(m)
            ip.append(addr)
        return got

    stacks: list[list[tuple[int, int]]] = []
    leaves = []
    for _ in range(paths):
        depth = int(rng.integers(20, 61))
        if stacks and rng.random() < 0.9:
            base = stacks[int(rng.integers(len(stacks)))]
            keep = int(rng.integers(min(len(base), depth) // 2, min(len(base), depth) + 1))
            frames = base[:keep]
        else:
            frames = []
        while len(frames) < depth - 1:
            s = sites[int(rng.choice(len(sites), p=weights))]
            frames.append((s.lm, int(s.frames[int(rng.integers(len(s.frames)))])))
        stacks.append(frames)
        node = 1
        for m, addr in frames:
            node = child(node, m, addr)
        s = sites[int(rng.choice(len(sites), p=weights))]
        leaves.append(child(node, s.lm, int(s.leaves[int(rng.integers(len(s.leaves)))])))
    par = np.array(parent, np.int64)
    anc = [np.arange(len(par))]
    while (anc[-1] >= 0).any():
        prev = anc[-1]
        anc.append(np.where(prev >= 0, par[np.maximum(prev, 0)], -1))
    return Program(loadmap, par, np.array(lm, np.uint16), np.array(ip, np.uint64),
                   np.unique(np.array(leaves, np.int64)), np.stack(anc[:-1], axis=1))


def write_profile(prog: Program, out: Path, rank: int, thread: int, seed: int, program: str) -> int:
    """One thread's .hpcrun and .hpctrace; returns the bytes written."""
    rng = np.random.default_rng([seed, rank, thread])
    hot = rng.choice(prog.leaves, size=min(len(prog.leaves), int(rng.integers(6, 17))), replace=False)
    w = rng.lognormal(0.0, 1.0, len(hot))
    n = int(rng.integers(20, 61))
    seq = rng.choice(hot, size=n, p=w / w.sum())
    sampled, counts = np.unique(seq, return_counts=True)
    nodes = prog.closure(sampled)
    cct = np.zeros(len(nodes), CCT_NODE)
    par = prog.parent[nodes]
    cct["id"], cct["parent"] = nodes + 1, np.where(par >= 0, par + 1, 0)
    cct["lm_id"], cct["lm_ip"], cct["flags"] = prog.lm[nodes], prog.ip[nodes], UNWOUND
    values, index = pack_values(sampled + 1, np.zeros(len(sampled), np.int64), counts * PERIOD_NS / 1e9,
                                [CPUTIME], cct["id"])
    start = 1_700_000_000_000_000_000 + rank * 1_000_003
    times = start + np.arange(n, dtype=np.int64) * PERIOD_NS + rng.integers(0, 1_000_000, n)
    host = 0x7F000000 + rank // 16
    tup = np.zeros(3, ID_ELEMENT)
    tup[0], tup[1], tup[2] = (NODE, host, 0), (RANK, rank, rank), (THREAD, thread, thread)
    header = {"program-name": program, "program-path": prog.loadmap[0].path, "env-path": "", "job-id": "",
              "mpi-rank": str(rank), "thread-id": str(thread), "host-id": f"{host:08x}",
              "process-id": str(1000 + rank), "trace-min-time": str(int(times.min())),
              "trace-max-time": str(int(times.max())), "trace-disorder": "0"}
    prof = HpcrunProfile(header=header, loadmap=list(prog.loadmap), cct=cct, metrics=[CPUTIME],
                         id_names=default_id_names(), id_tuple=tup, values=values, index=index)
    stem = out / f"{program}-{rank:06d}-{thread:03d}-{host:08x}-{1000 + rank}-0"
    write_hpcrun(stem.with_suffix(".hpcrun"), prof)
    write_hpctrace(stem.with_suffix(".hpctrace"),
                   HpctraceFile(0, make_records(times.astype(np.uint64), (seq + 1).astype(np.uint32))))
    return stem.with_suffix(".hpcrun").stat().st_size + stem.with_suffix(".hpctrace").stat().st_size


def make_measurement(shape: str, profiles: int, dst: Path, seed: int = 1, log=print) -> dict[str, float]:
    """A measurement directory of ``profiles`` thread profiles of shape ``shape`` (see SHAPES), with the
    structure files in its ``structs/`` (links to the cached ones). Returns its sizes."""
    from hpcsa.formats.hpcstruct.reader import read_hpcstruct

    names = SHAPES[shape]
    structs = [structure_file(n, log=log) for n in names]
    modules = [read_hpcstruct(p).modules[0] for p in structs]
    prog = build_program(modules, paths=1000 if shape == "omp" else 2000, seed=seed)
    if dst.exists():
        shutil.rmtree(dst)
    (dst / "structs").mkdir(parents=True)
    for p in structs:
        os.symlink(p, dst / "structs" / p.name)
    per_rank = 16 if shape == "omp" else 1
    total = 0
    for k in range(profiles):
        total += write_profile(prog, dst, k // per_rank, k % per_rank, seed, shape)
    return {"profiles": profiles, "input_bytes": total, "struct_bytes": sum(p.stat().st_size for p in structs),
            "contexts": len(prog.parent)}
