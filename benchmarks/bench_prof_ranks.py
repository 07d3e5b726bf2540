"""Benchmark: ``hpcsa prof`` at scale on real shapes, against the I/O floor (issue 41).

Inputs are real measurements replicated as more MPI ranks (:func:`hpcsa.ingest.synth.replicate.replicate_ranks`:
every profile a real one, with its rank id in its identifier tuple, header and file name, its values and
timestamps perturbed, everything else kept): the real 1,024-thread run ``hpctoolkit-extra/meas-cxx1024`` as
16, 64 and 256 ranks (16,384, 65,536 and 262,144 profiles) and the GPU run with PC samples
``hpctoolkit/meas/loops-cuda-nvidiapc-t.m`` as 4,096 ranks (8,192 CPU-thread and GPU-stream profiles with
instruction-level GPU samples). They are made once into ``--work`` (1.7 GB for the largest) and reused.

Each configuration is the command a user types, in a fresh process: ``hpcsa prof -j 1``, ``-j 2``, and
``mpiexec -n 1`` and ``-n 2 hpcsa prof -j 1`` (MPICH from PyPI). The I/O floor is reading every input file
once from the page cache, ``find MEAS -type f | xargs cat``. Runs are interleaved round by round (floor, then
each configuration of the code measured and, with ``--baseline``, of another checkout), so that a slow spell
of the shared machine hits all alike; times are medians of ``--repeat`` rounds; memory is the peak
proportional resident set (PSS) of the whole process tree (mpiexec, ranks, workers; shared pages once),
sampled every 5 ms in separate watched runs. Every database is hashed: all configurations must write the same
bytes, and the same as the baseline's.

With ``--warm`` the second goal of warm runs is measured too: ``hpcsa prof -j 2`` on 16 processes of a large C
program (``benchmarks/realshape.py``'s ``bigc``: Debian's python3.11d, 13 MB of structure) with an empty
parsed-structure cache, then again (medians of ``--repeat`` pairs).

    .venv/bin/python benchmarks/bench_prof_ranks.py [--record] [--repeat 5] [--sets cxx16,cxx64,cxx256,gpu4096]
        [--configs j1,j2,mpi1,mpi2] [--baseline OLD/.venv/bin/hpcsa] [--work DIR] [--warm]

``--record`` writes benchmarks/results/prof_ranks.md.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_prof import compile_bytecode, measure  # noqa: E402
from machine_speed import pair_text, probe  # noqa: E402

SHARED = Path(os.environ.get("HPCSA_SHARED_DATA", ROOT.parent / "shared" / "data"))
RESULTS = ROOT / "benchmarks" / "results" / "prof_ranks.md"
HPCSA = Path(sys.executable).parent / "hpcsa"
MIB = 1 << 20
#: name -> (real measurement, ranks it is replicated as, goal: -j 2 at most this many times the I/O floor)
SETS = {
    "cxx16": ("hpctoolkit-extra/meas-cxx1024", 16, 2.3),
    "cxx64": ("hpctoolkit-extra/meas-cxx1024", 64, 2.1),
    "cxx256": ("hpctoolkit-extra/meas-cxx1024", 256, 1.9),
    "gpu4096": ("hpctoolkit/meas/loops-cuda-nvidiapc-t.m", 4096, 4.5),
}
#: name -> (-j, MPI ranks: 0 without mpiexec)
CONFIGS = {"j1": (1, 0), "j2": (2, 0), "mpi1": (1, 1), "mpi2": (1, 2)}
LABELS = {"j1": "-j 1", "j2": "-j 2", "mpi1": "1 rank", "mpi2": "2 ranks"}
#: The issue's measurements of the code before it (best of 2, quiet machine) and of C++ hpcprof -j 2: seconds, MiB.
ISSUE = {"cxx16": ((2.13, 62), (3.47, 427), 0.76), "cxx64": ((10.17, 136), (11.15, 1557), 2.68),
         "cxx256": ((70.1, 415), (45.8, 5926), 12.4), "gpu4096": ((5.05, 77), (3.69, 461), 0.41)}


def work_dir(arg: str | None) -> Path:
    base = Path(arg) if arg else Path(os.environ.get("HPCSA_BENCH_CACHE", Path.home() / ".cache" / "hpcsa" / "bench"))
    return base / "ranks"


def build(name: str, work: Path) -> Path:
    """The replicated measurement ``name`` (made once, then reused: a marker says it is complete)."""
    from hpcsa.ingest.synth.replicate import replicate_ranks

    src, ranks, _ = SETS[name]
    meas = work / f"{name}.m"
    done = work / f"{name}.done"
    if not done.exists():
        if meas.exists():
            shutil.rmtree(meas)
        work.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        n = replicate_ranks(SHARED / src, meas, ranks, seed=0, jobs=2)
        done.write_text(f"{n}\n")
        print(f"{name}: {n} profiles replicated in {time.perf_counter() - start:.0f} s", flush=True)
    return meas


def input_bytes(meas: Path) -> tuple[int, int]:
    """(profiles, bytes of the .hpcrun and .hpctrace files)."""
    n, size = 0, 0
    with os.scandir(meas) as entries:
        for e in entries:
            if e.name.endswith((".hpcrun", ".hpctrace")) and e.is_file(follow_symlinks=False):
                size += e.stat().st_size
                n += e.name.endswith(".hpcrun")
    return n, size


def floor(meas: Path) -> float:
    """Seconds to read every input file once from the page cache (``find | xargs cat``)."""
    start = time.perf_counter()
    subprocess.run(["sh", "-c", f"find '{meas}' -type f | xargs cat > /dev/null"], check=True)
    return time.perf_counter() - start


def command(hpcsa: Path, meas: Path, out: Path, config: str) -> list[str]:
    jobs, ranks = CONFIGS[config]
    cmd = [str(hpcsa), "prof", str(meas), "-o", str(out), "-j", str(jobs)]
    return [str(hpcsa.parent / "mpiexec"), "-n", str(ranks), *cmd] if ranks else cmd


def db_hash(db: Path) -> str:
    h = hashlib.sha256()
    for base, dirs, files in os.walk(db):
        dirs.sort()
        for name in sorted(files):
            p = Path(base) / name
            h.update(str(p.relative_to(db)).encode() + b"\0" + hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()[:16]


def measure_set(name: str, meas: Path, configs: list[str], impls: dict[str, Path], repeat: int, tmp: Path
                ) -> dict[str, object]:
    """Every configuration of every implementation ``repeat`` times, interleaved, the floor each round; then a
    watched run of each for its peak; the databases' hashes."""
    profiles, size = input_bytes(meas)
    floor(meas)  # into the page cache
    floors: list[float] = []
    walls: dict[tuple[str, str], list[float]] = {(i, c): [] for i in impls for c in configs}
    hashes: dict[tuple[str, str], str] = {}
    for r in range(repeat):
        floors.append(floor(meas))
        for c in configs:
            for impl, hpcsa in impls.items():
                out = tmp / f"{impl}-{c}.d"
                wall, _, _ = measure(command(hpcsa, meas, out, c), None)
                walls[(impl, c)].append(wall)
                if r == 0:
                    hashes[(impl, c)] = db_hash(out)
                shutil.rmtree(out)
        print(f"{name} round {r + 1}: floor {floors[-1]:.2f} s; " + "; ".join(
            f"{i} {c} {walls[(i, c)][-1]:.2f}" for c in configs for i in impls), flush=True)
    peaks: dict[tuple[str, str], int] = {}
    for c in configs:
        for impl, hpcsa in impls.items():
            out = tmp / f"{impl}-{c}.d"
            _, peaks[(impl, c)], _ = measure(command(hpcsa, meas, out, c), 0.005)
            shutil.rmtree(out)
    return {"name": name, "profiles": profiles, "bytes": size, "floor": statistics.median(floors),
            "floors": floors, "walls": walls, "peaks": peaks, "hashes": hashes}


def warm_runs(impls: dict[str, Path], repeat: int, tmp: Path) -> dict[str, tuple[float, float, list[float], list[float]]]:
    """Per implementation: (median cold, median warm seconds, the runs) of ``-j 2`` on the bigc shape's 16
    profiles, cold with an empty parsed-structure cache."""
    import realshape

    meas = tmp / "bigc16.m"
    realshape.make_measurement("bigc", 16, meas, log=lambda *a: None)
    cold: dict[str, list[float]] = {i: [] for i in impls}
    warm: dict[str, list[float]] = {i: [] for i in impls}
    for _ in range(repeat):
        for impl, hpcsa in impls.items():
            cache = Path(tempfile.mkdtemp(prefix="cache-", dir=tmp))
            out = tmp / f"warm-{impl}.d"
            for into in (cold, warm):
                wall, _, _ = measure(command(hpcsa, meas, out, "j2"), None, {"HPCSA_CACHE_DIR": str(cache)})
                into[impl].append(wall)
                shutil.rmtree(out)
            shutil.rmtree(cache)
    return {i: (statistics.median(cold[i]), statistics.median(warm[i]), cold[i], warm[i]) for i in impls}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--record", action="store_true")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--baseline", type=Path, help="another checkout's hpcsa, measured beside this one")
    ap.add_argument("--work", help="where the replicated inputs are kept (default $HPCSA_BENCH_CACHE/ranks)")
    ap.add_argument("--warm", action="store_true", help="also cold and warm runs on the bigc shape")
    ap.add_argument("--output", type=Path, default=RESULTS)
    args = ap.parse_args()
    compile_bytecode()
    impls = {"new": HPCSA}
    if args.baseline:
        impls = {"old": args.baseline, "new": HPCSA}
    load0, speed0, paired = os.getloadavg(), probe(), pair_text()
    work = work_dir(args.work)
    tmp = Path(tempfile.mkdtemp(prefix="bench-prof-ranks-"))
    rows = []
    warm = None
    try:
        for name in args.sets.split(","):
            rows.append(measure_set(name, build(name, work), args.configs.split(","), impls, args.repeat, tmp))
        if args.warm:
            warm = warm_runs(impls, args.repeat, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    text = report(args, impls, rows, warm, (load0, os.getloadavg()), (speed0, probe()), paired)
    print(text)
    if args.record:
        from hpcsa.core.outputs import write_file

        write_file(args.output, text)


def report(args: argparse.Namespace, impls: dict[str, Path], rows: list[dict], warm: dict | None,
           load: tuple[tuple[float, ...], tuple[float, ...]], speed: tuple[float, float], paired: str) -> str:
    configs = args.configs.split(",")
    med = statistics.median
    lines = [
        "# `hpcsa prof` at scale on real shapes, against the I/O floor",
        "",
        f"`benchmarks/bench_prof_ranks.py --repeat {args.repeat} --sets {args.sets} --configs {args.configs}"
        f"{' --baseline OLD' if args.baseline else ''}{' --warm' if args.warm else ''}` (Python "
        f"{platform.python_version()}, numpy {np.__version__}, {platform.machine()}, {os.cpu_count()} CPUs "
        f"shared with other engineers: load average {load[0][0]:.1f} at the start, {load[1][0]:.1f} at the end; "
        f"machine speed, `benchmarks/machine_speed.py`: {speed[0]:.2f} s at the start, {speed[1]:.2f} s at the "
        f"end; {paired}). Medians of {args.repeat} interleaved rounds; peak = largest PSS of the process tree "
        "in a separate watched run. " + ("`old` = the code before issue 41, `new` = this checkout. "
                                         if "old" in impls else ""),
        "",
        "| input | profiles | MB | I/O floor (s) | " + " | ".join(
            f"{i} {LABELS[c]} (s, MiB)" for c in configs for i in impls) + " | new -j 2 / floor | goal |",
        "|---|---:|---:|---:|" + "---:|" * (len(configs) * len(impls)) + "---:|---:|",
    ]
    for r in rows:
        cells = [f"{med(r['walls'][(i, c)]):.2f}, {r['peaks'][(i, c)] / MIB:.0f}" for c in configs for i in impls]
        ratio = med(r["walls"][("new", "j2")]) / r["floor"] if "j2" in configs else float("nan")
        lines.append(f"| {r['name']} | {r['profiles']:,} | {r['bytes'] / 1e6:.0f} | {r['floor']:.2f} | "
                     + " | ".join(cells) + f" | {ratio:.2f}x | <= {SETS[r['name']][2]}x |")
    lines += ["", "## Goals", ""]
    by = {r["name"]: r for r in rows}
    if "j2" in configs:
        for r in rows:
            ratio = med(r["walls"][("new", "j2")]) / r["floor"]
            lines.append(f"- {r['name']}: -j 2 {med(r['walls'][('new', 'j2')]):.2f} s = {ratio:.2f}x the I/O floor "
                         f"(goal <= {SETS[r['name']][2]}x): {'met' if ratio <= SETS[r['name']][2] else 'NOT met'}")
        if "cxx64" in by and "cxx256" in by:
            t = med(by["cxx256"]["walls"][("new", "j2")]) / med(by["cxx64"]["walls"][("new", "j2")])
            f = by["cxx256"]["floor"] / by["cxx64"]["floor"]  # (the file system's own growth, for reading the ratio)
            lines.append(f"- 262,144 / 65,536 profiles, -j 2 time: {t:.2f} (goal <= 4.2): {'met' if t <= 4.2 else 'NOT met'}"
                         f"; the I/O floor's own ratio in this run {f:.2f} (4x the bytes and files)")
        if "cxx16" in by and "cxx256" in by:
            m = by["cxx256"]["peaks"][("new", "j2")] / by["cxx16"]["peaks"][("new", "j2")]
            lines.append(f"- peak memory at 262,144 / at 16,384 profiles, -j 2: {m:.2f} (goal <= 2): "
                         f"{'met' if m <= 2 else 'NOT met'}")
    if "cxx64" in by and {"mpi1", "mpi2"} <= set(configs):
        w = by["cxx64"]["walls"]
        s = med(w[("new", "mpi1")]) / med(w[("new", "mpi2")])
        lines.append(f"- 65,536 profiles, 2 ranks against 1 rank: {s:.2f}x faster (goal >= 1.8x): "
                     f"{'met' if s >= 1.8 else 'NOT met'}")
    if warm is not None:
        cold_s, warm_s = warm["new"][0], warm["new"][1]
        lines.append(f"- warm run (bigc, 16 profiles, -j 2): cold {cold_s:.2f} s, warm {warm_s:.2f} s: "
                     f"{cold_s / warm_s:.2f}x (goal >= 2x): {'met' if cold_s / warm_s >= 2 else 'NOT met'}"
                     + (f"; old: cold {warm['old'][0]:.2f} s, warm {warm['old'][1]:.2f} s, "
                        f"{warm['old'][0] / warm['old'][1]:.2f}x" if "old" in warm else ""))
    same_new = all(len({r["hashes"][("new", c)] for c in configs}) == 1 for r in rows)
    same_old = all(r["hashes"][("old", c)] == r["hashes"][("new", c)] for r in rows for c in configs) \
        if "old" in impls else None
    lines.append(f"- every configuration's database the same bytes: {'yes' if same_new else 'NO'}"
                 + ("" if same_old is None else f"; the same as the old code's: {'yes' if same_old else 'NO'}"))
    lines += ["", "The issue's measurements (the code before it, and C++ hpcprof -j 2; best of 2 on a quiet machine, "
              "same inputs):", "", "| input | hpcsa -j 2 (s, MiB) | hpcprof -j 2 (s, MiB) | I/O floor (s) |",
              "|---|---:|---:|---:|"]
    for r in rows:
        (a, am), (b, bm), f = ISSUE[r["name"]]
        lines.append(f"| {r['name']} | {a}, {am} | {b}, {bm} | {f} |")
    lines += ["", "## Every run (seconds, in the order they ran)", "",
              "| input | floor | " + " | ".join(f"{i} {LABELS[c]}" for c in configs for i in impls) + " |",
              "|---|---|" + "---|" * (len(configs) * len(impls))]
    for r in rows:
        lines.append(f"| {r['name']} | {', '.join(f'{x:.2f}' for x in r['floors'])} | " + " | ".join(
            ", ".join(f"{x:.2f}" for x in r["walls"][(i, c)]) for c in configs for i in impls) + " |")
    if warm is not None:
        lines += ["", "Warm runs (cold, warm; seconds): " + "; ".join(
            f"{i}: {', '.join(f'{a:.2f}/{b:.2f}' for a, b in zip(v[2], v[3], strict=True))}"
            for i, v in warm.items())]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
