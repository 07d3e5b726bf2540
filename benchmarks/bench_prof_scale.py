"""Benchmark: ``hpcsa prof`` at scale, one process and MPI ranks, on generated measurement directories.

Inputs come from the generator (:mod:`hpcsa.ingest.synth.program`, ``hpcsa synth``): a CPU-like set shaped like the
issue's yardstick (CPU threads, 1 metric, ~13 KB per profile with its trace; real hpcprof takes ~0.8 s and
66 MiB for a real 1,024-thread measurement of that shape on these 2 cores) and a GPU-like set shaped like
the LAMMPS/PeleC runs of "Preparing for Performance Analysis at Exascale" (Anderson, Liu, Mellor-Crummey,
ICS 2022): per rank a CPU thread and a GPU stream, 1 CPU + 63 GPU metrics, ~19 % of contexts and ~2 % of
metrics non-zero; each at 256, 1,024 and 4,096 profiles, with structure files.

Each configuration is the command a user runs, in a fresh process: ``hpcsa prof -j 1``, ``-j 2``,
``mpiexec -n 1 hpcsa prof -j 1`` and ``mpiexec -n 2 hpcsa prof -j 1`` (the project's MPICH from PyPI: the
issue's "2 MPI ranks against 1 rank", and 2 ranks against one process without MPI); wall time is the best of ``--repeat``
unwatched runs, memory the peak proportional resident set (PSS) of the whole process tree (mpiexec, its
proxy, the ranks and their workers; shared pages counted once), sampled every 5 ms in one more run. Sizes: profile.db + cct.db
against a dense tensor of profiles x contexts x metrics x 8 bytes (metrics: the database's metrics; and,
as ``hpcsa stats`` counts it, their propagated columns). Then where the time goes: phase timings of
in-process runs (one process, and 2 ranks under mpiexec) and a cProfile of the largest GPU-like set.

    .venv/bin/python benchmarks/bench_prof_scale.py [--record] [--repeat N] [--sizes 256,1024,4096]

``--record`` writes benchmarks/results/prof_scale.md.
"""

from __future__ import annotations

import os
import sys

#: The steps whose work is split between processes (wall seconds in rank 0's clock, from the pipeline's own laps;
#: rank 0 writes meta.db while the other ranks read profiles); the rest of a run (start-up, listing the inputs,
#: class 2, the hand-overs, profile.db's summary, the exit) is not.
SPLIT_PHASES = ("phase 1", "phase 2", "phase 3", "meta.db")


def as_rank(argv: list[str]) -> None:
    """Run ``hpcsa`` and print on stderr this process's CPU seconds (its workers' included), ``CPU rank s``, and
    its wall seconds in :data:`SPLIT_PHASES`, ``SPLIT rank s``. Dispatched before the benchmark's own imports,
    so that a rank starts as the ``hpcsa`` command does: the command's library defaults are set before the wrapper
    imports the pipeline (and numpy with it), as :func:`hpcsa.cli.main.main` sets them before a subcommand loads."""
    import resource

    from hpcsa.core import libdefaults

    libdefaults.set_defaults(libdefaults.BLAS_THREADS)  # else OpenBLAS starts a thread per CPU in every rank
    from hpcsa.aggregate import driver
    from hpcsa.cli.main import leave
    from hpcsa.cli.main import main as hpcsa_main

    aggregate = driver.aggregate
    split = [0.0]

    def timed(*args: object, **kwargs: object) -> object:
        result = aggregate(*args, **kwargs)  # type: ignore[arg-type]
        split[0] = sum(t for phase, t in result.timings.items() if phase.startswith(SPLIT_PHASES))
        return result

    driver.aggregate = timed  # type: ignore[assignment]
    rc = hpcsa_main(argv)
    cpu = sum(getattr(resource.getrusage(who), f) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
              for f in ("ru_utime", "ru_stime"))
    rank = os.environ.get("PMI_RANK", "0")
    sys.stderr.write(f"\nCPU {rank} {cpu:.3f}\nSPLIT {rank} {split[0]:.3f}\n")  # one write: ranks share the pipe
    sys.stderr.flush()
    leave(rc)  # as the command exits


if __name__ == "__main__" and sys.argv[1:2] == ["--as-rank"]:
    as_rank(sys.argv[2:])

import argparse  # noqa: E402  (after the rank's dispatch above)
import cProfile  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import pstats  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_prof import compile_bytecode, measure  # noqa: E402  (the same PSS sampler as the single-machine benchmark)
from machine_speed import pair_text, probe  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "prof_scale.md"
MPIEXEC = Path(sys.executable).parent / "mpiexec"
MIB = 1 << 20
#: Seconds between two samples of a watched run's memory: every 20 ms missed the peak of a 0.25 s run, whose
#: phase 3 lasts some tens of milliseconds, by 1-2 MiB.
SAMPLE_EVERY = 0.005
HPCPROF_YARDSTICK = (0.8, 66)  # seconds, MiB: C++ hpcprof -j 2, real 1,024-thread CPU measurement


def prof_cmd(meas: Path, out: Path, jobs: int, ranks: int = 0) -> list[str]:
    """``hpcsa prof`` (through :func:`as_rank`, which adds each process's CPU seconds to its stderr)."""
    cmd = [sys.executable, __file__, "--as-rank", "prof", str(meas), "-o", str(out), "-j", str(jobs)]
    return [str(MPIEXEC), "-n", str(ranks), *cmd] if ranks else cmd


def sizes(db: Path) -> dict[str, float]:
    from hpcsa.views.experiment import open_experiment
    from hpcsa.views.stats import database_stats

    s = database_stats(open_experiment(str(db)))
    sparse = s["file_bytes"]["profile.db"] + s["file_bytes"]["cct.db"]
    dense = 8 * s["profiles"] * s["context_ids"] * s["metrics"]
    dense_cols = 8 * s["profiles"] * s["context_ids"] * s["metric_columns"]
    return {"contexts": s["context_ids"], "metrics": s["metrics"], "columns": s["metric_columns"],
            "sparse": sparse, "dense": dense, "dense_cols": dense_cols}


def mpi_phases(meas: str, out: str, jobs: int) -> None:
    """Under mpiexec: one in-process run, rank 0 prints its phase timings as JSON."""
    from hpcsa.aggregate import driver, mpi
    from hpcsa.aggregate.inputs import find_inputs

    t = mpi.MpiTransport.from_environment(arity=jobs)
    r = driver.aggregate(find_inputs([meas]), driver.Options(output=out, jobs=jobs, progress=False), t)
    t.close()
    if t.is_root:
        print(json.dumps({"timings": r.timings, "shares": r.rank_profiles, "seconds": r.seconds}))


def in_process(meas: Path, out: Path, jobs: int) -> dict[str, float]:
    from hpcsa.aggregate import driver
    from hpcsa.aggregate.inputs import find_inputs

    return driver.aggregate(find_inputs([str(meas)]), driver.Options(output=str(out), jobs=jobs, progress=False)).timings


def split_of(err: str) -> float:
    """Rank 0's wall seconds in :data:`SPLIT_PHASES`, from the ``SPLIT rank s`` line of :func:`as_rank`."""
    found = re.search(r"SPLIT 0 (\d+\.\d{3})", err)
    return float(found.group(1)) if found else float("nan")


def scaling(t1: float, split1: float, t2: float, split2: float) -> tuple[float, float, float, float]:
    """Where a 2-rank run's speed-up over 1 rank goes, from the runs' wall seconds (``t1``, ``t2``) and rank 0's
    seconds in :data:`SPLIT_PHASES` (``split1``, ``split2``): (the share of the 1-rank run in work that divides;
    the most 2 ranks could gain with it, on two cores that do twice the work of one (Amdahl's law); how much
    faster that work went with 2 ranks; how much longer the rest took)."""
    share = split1 / t1
    return share, 1 / ((1 - share) + share / 2), split1 / split2, (t2 - split2) / (t1 - split1)


def cpu_of(err: str) -> tuple[float, float]:
    """(CPU seconds of all ranks, of the busiest rank) from the ``CPU rank s`` lines of :func:`as_rank`."""
    per = [float(cpu) for _, cpu in re.findall(r"CPU (\d+) (\d+\.\d{3})", err)]
    return sum(per), max(per)


def measure_set(kind: str, n: int, tmp: Path, repeat: int, watched: int = 1) -> dict[str, object]:
    """One input set: every configuration ``repeat`` times, interleaved, then ``watched`` times more, watched
    (peak PSS: the median of those runs, sampled every :data:`SAMPLE_EVERY` seconds)."""
    from hpcsa.ingest.synth.directory import generate
    from hpcsa.ingest.synth.program import SynthSpec

    meas = tmp / f"{kind}-{n}.m"
    g = generate(meas, SynthSpec.preset(kind, n), jobs=2)
    out = tmp / "out.d"
    row: dict[str, object] = {"set": kind, "profiles": n, "input": g.bytes, "ctx_density": g.context_density,
                              "metric_density": g.metric_density}
    configs = (("j1", 1, 0), ("j2", 2, 0), ("mpi1", 1, 1), ("mpi2", 1, 2))
    walls: dict[str, list[float]] = {name: [] for name, _, _ in configs}
    cpus: dict[str, list[tuple[float, float]]] = {name: [] for name, _, _ in configs}
    splits: dict[str, list[float]] = {"mpi1": [], "mpi2": []}  # rank 0's seconds in SPLIT_PHASES
    for _ in range(repeat):  # interleaved, so that a slow spell of the machine hits all alike
        for name, jobs, ranks in configs:
            wall, _, err = measure(prof_cmd(meas, out, jobs, ranks), None)
            walls[name].append(wall)
            cpus[name].append(cpu_of(err))
            if name in splits:
                splits[name].append(split_of(err))
    for name, jobs, ranks in configs:
        peaks = []
        for _ in range(max(1, watched)):
            _, one, err = measure(prof_cmd(meas, out, jobs, ranks), SAMPLE_EVERY)
            peaks.append(one)
        peak = int(np.median(peaks))
        row[name] = (min(walls[name]), peak, float(np.median(walls[name])), walls[name],
                     float(np.median([c[0] for c in cpus[name]])), float(np.median([c[1] for c in cpus[name]])))
        print(f"{kind} {n}: {name} {min(walls[name]):.2f} s (runs: {', '.join(f'{w:.2f}' for w in walls[name])}; "
              f"CPU s all, busiest rank: {', '.join(f'{a:.2f}/{b:.2f}' for a, b in cpus[name])}), "
              f"{peak / MIB:.0f} MiB  [{[ln for ln in err.strip().splitlines() if 'hpcsa prof:' in ln][-1]}]",
              flush=True)
    rounds = [scaling(*runs) for runs in zip(walls["mpi1"], splits["mpi1"], walls["mpi2"], splits["mpi2"], strict=True)]
    row["scaling"] = tuple(float(np.median(column)) for column in zip(*rounds, strict=True))
    row.update(sizes(out))
    shutil.rmtree(out)
    return row


def where_time_goes(meas: Path, tmp: Path) -> tuple[dict[str, dict[str, float]], dict, str, str]:
    """Phase timings of in-process runs (-j 1, -j 2, 2 ranks) and a cProfile of -j 1 (by own time, cumulative)."""
    phases = {"-j 1": in_process(meas, tmp / "p1.d", 1), "-j 2": in_process(meas, tmp / "p2.d", 2)}
    proc = subprocess.run([str(MPIEXEC), "-n", "2", sys.executable, __file__, "--mpi-phases", str(meas),
                           str(tmp / "p3.d"), "1"], capture_output=True, text=True, check=True)
    mpi = json.loads(proc.stdout.strip().splitlines()[-1])
    phases["2 ranks"] = mpi["timings"]
    prof = cProfile.Profile()
    prof.enable()
    in_process(meas, tmp / "p4.d", 1)
    prof.disable()
    top = io.StringIO()
    cum = io.StringIO()
    pstats.Stats(prof, stream=top).sort_stats("tottime").print_stats(18)
    pstats.Stats(prof, stream=cum).sort_stats("cumulative").print_stats(r"phase[0-3]_|profile_nodes|propagate|"
                                                                        r"read_hpcrun")
    return phases, mpi, top.getvalue(), cum.getvalue()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--record", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--watched", type=int, default=1, help="watched runs per configuration (median peak)")
    ap.add_argument("--sizes", default="256,1024,4096")
    ap.add_argument("--kinds", default="cpu,gpu", help="input sets: cpu, gpu or both")
    ap.add_argument("--no-phases", action="store_true", help="skip the phase timings and the cProfile")
    ap.add_argument("--output", type=Path, default=RESULTS, help="file --record writes")
    ap.add_argument("--mpi-phases", nargs=3, metavar=("MEAS", "OUT", "JOBS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.mpi_phases:
        mpi_phases(args.mpi_phases[0], args.mpi_phases[1], int(args.mpi_phases[2]))
        return
    compile_bytecode()
    load0 = os.getloadavg()
    speed0 = probe()
    paired = pair_text()
    tmp = Path(tempfile.mkdtemp(prefix="bench-prof-scale-"))
    rows = []
    phases: dict[str, dict[str, float]] = {}
    mpi: dict = {"shares": []}
    top = cum = ""
    try:
        largest = max(int(x) for x in args.sizes.split(","))
        for kind in args.kinds.split(","):
            for n in (int(x) for x in args.sizes.split(",") if x):
                rows.append(measure_set(kind, n, tmp, args.repeat, args.watched))
                if n != largest:
                    shutil.rmtree(tmp / f"{kind}-{n}.m")
        # Where the time goes, on the largest set (GPU-like if there is one).
        big = max(rows, key=lambda r: (r["set"] == "gpu", r["profiles"]))
        if not args.no_phases:
            phases, mpi, top, cum = where_time_goes(tmp / f"{big['set']}-{big['profiles']}.m", tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    text = report(args, rows, big, phases, mpi, top, cum, load0, os.getloadavg(), (speed0, probe()), paired)
    print(text)
    if args.record:
        from hpcsa.core.outputs import write_file

        write_file(args.output, text)


def report(args: argparse.Namespace, rows: list, big: dict, phases: dict[str, dict[str, float]], mpi: dict,
           top: str, cum: str, load0: tuple, load1: tuple, speed: tuple[float, float], paired: str = "") -> str:
    def mib(b: float) -> str:
        return f"{b / MIB:.0f}"

    lines = [
        "# `hpcsa prof` at scale: one process and MPI ranks",
        "",
        f"`benchmarks/bench_prof_scale.py --repeat {args.repeat} --sizes {args.sizes}"
        f"{'' if args.kinds == 'cpu,gpu' else ' --kinds ' + args.kinds}{' --no-phases' if args.no_phases else ''}"
        f"{f' --watched {args.watched}' if args.watched != 1 else ''}` "
        f"(best of {args.repeat} interleaved runs; "
        f"Python {platform.python_version()}, numpy {np.__version__}, {platform.machine()}, "
        f"{os.cpu_count()} CPUs shared with other engineers: load average {load0[0]:.1f} at the start, "
        f"{load1[0]:.1f} at the end, so times are upper bounds; machine speed, `benchmarks/machine_speed.py`: "
        f"{speed[0]:.2f} s at the start, {speed[1]:.2f} s at the end{'; ' + paired + ', at the start' if paired else ''}). "
        "Inputs from `hpcsa synth` (structure "
        "files included): **cpu** = ranks of 16 CPU threads, 1 metric (the yardstick's shape); **gpu** = per "
        "rank a CPU thread and a GPU stream, 1 CPU + 63 GPU metrics. Each run is the command a user types "
        "(a fresh process: start-up and imports included); times are of unwatched runs, memory is the peak PSS of "
        f"the whole process tree sampled every {SAMPLE_EVERY * 1000:g} ms in {'a separate run' if args.watched == 1 else f'separate runs (the median of {args.watched})'}. "
        "`1 rank`, `2 ranks` = `mpiexec -n 1` and `-n 2 hpcsa prof -j 1` (MPICH from PyPI); speed-up of 2 ranks "
        "over one process without MPI (`-j 1`) and over 1 rank (which pays MPI's start as 2 ranks do), of "
        "the best runs and of the median runs (every run is listed at the end: one process alone sometimes "
        "runs much faster than usual, as if its core were clocked up while the other idles, which the best of "
        "`-j 1` catches), and by CPU time, which the other engineers' load does not inflate: the median CPU "
        "seconds of `-j 1` over the median CPU seconds of the busiest rank (a waiting rank sleeps, so this is "
        "the speed-up on two idle cores if no rank ever waited for the other: an upper bound).",
        "",
        "| set | profiles | input MB | densities in (ctx/metric %) | contexts | -j 1 (s) | -j 1 peak MiB | -j 2 (s) "
        "| -j 2 peak MiB | 1 rank (s) | 1 rank peak MiB | 2 ranks (s) | 2 ranks peak MiB | profiles/s (2 ranks) "
        "| speed-up 2 ranks over -j 1: best, median | over 1 rank: best, median "
        "| CPU s: -j 1, 2 ranks (all, busiest) | speed-up by CPU | profile+cct MB | dense MB | smaller than dense "
        "| (dense with scope columns) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        "---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['set']} | {r['profiles']:,} | {r['input'] / 1e6:.1f} | {r['ctx_density']:.1f} / "
            f"{r['metric_density']:.1f} | {r['contexts']:,} | {r['j1'][0]:.2f} | {mib(r['j1'][1])} | "
            f"{r['j2'][0]:.2f} | {mib(r['j2'][1])} | {r['mpi1'][0]:.2f} | {mib(r['mpi1'][1])} | "
            f"{r['mpi2'][0]:.2f} | {mib(r['mpi2'][1])} | "
            f"{r['profiles'] / r['mpi2'][0]:.0f} | {r['j1'][0] / r['mpi2'][0]:.2f}x, {r['j1'][2] / r['mpi2'][2]:.2f}x | "
            f"{r['mpi1'][0] / r['mpi2'][0]:.2f}x, {r['mpi1'][2] / r['mpi2'][2]:.2f}x | "
            f"{r['j1'][4]:.2f}, {r['mpi2'][4]:.2f} ({r['mpi2'][5]:.2f}) | {r['j1'][4] / r['mpi2'][5]:.2f}x | "
            f"{r['sparse'] / 1e6:.1f} | {r['dense'] / 1e6:,.0f} | "
            f"{r['dense'] / r['sparse']:.0f}x | {r['dense_cols'] / r['sparse']:.0f}x |")
    lines += ["", "## Goals of the issue", ""]
    for kind in args.kinds.split(","):
        rs = sorted((r for r in rows if r["set"] == kind), key=lambda r: r["profiles"])
        if len(rs) >= 2:
            lo, hi = rs[0], rs[-1]
            lines.append(f"- {kind}: peak memory at {hi['profiles']:,} / at {lo['profiles']:,} profiles: "
                         f"-j 1 {hi['j1'][1] / lo['j1'][1]:.2f}x, -j 2 {hi['j2'][1] / lo['j2'][1]:.2f}x, 1 rank "
                         f"{hi['mpi1'][1] / lo['mpi1'][1]:.2f}x, 2 ranks {hi['mpi2'][1] / lo['mpi2'][1]:.2f}x "
                         "(goal <= 1.2x); 2 ranks against 1 rank (best, median): "
                         + ", ".join(f"{r['mpi1'][0] / r['mpi2'][0]:.2f}x / {r['mpi1'][2] / r['mpi2'][2]:.2f}x"
                                     for r in rs)
                         + "; against -j 1, one process without MPI (best, median; by CPU): "
                         + ", ".join(f"{r['j1'][0] / r['mpi2'][0]:.2f}x / {r['j1'][2] / r['mpi2'][2]:.2f}x; "
                                     f"{r['j1'][4] / r['mpi2'][5]:.2f}x" for r in rs) + " (goal >= 1.8x)")
            lines.append(f"- {kind}: what bounds 2 ranks against 1 rank (Amdahl's law; medians of the rounds, each a "
                         "1-rank run and the 2-rank run after it; the work that divides is phases 1-3 and meta.db, "
                         "the rest start-up, listing, class 2, hand-overs, exit): "
                         + "; ".join(f"{r['profiles']:,} profiles: {100 * r['scaling'][0]:.0f} % of the 1-rank run "
                                     f"divides, so at most {r['scaling'][1]:.2f}x on two cores that do twice the "
                                     f"work of one; with 2 ranks that work went {r['scaling'][2]:.2f}x faster and "
                                     f"the rest took {r['scaling'][3]:.2f}x as long" for r in rs))
    gpu = [r for r in rows if r["set"] == "gpu"]
    if gpu:
        g = max(gpu, key=lambda r: r["profiles"])
        lines.append(f"- gpu, {g['profiles']:,} profiles: profile.db + cct.db {g['sparse'] / 1e6:.1f} MB, "
                     f"{g['dense'] / g['sparse']:.0f}x smaller than dense ({g['profiles']:,} x {g['contexts']:,} "
                     f"contexts x {g['metrics']} metrics x 8 B), {g['dense_cols'] / g['sparse']:.0f}x counting "
                     f"each metric's {g['columns'] // max(g['metrics'], 1)} scope columns (goal >= 100x)")
    cpu1k = [r for r in rows if r["set"] == "cpu" and r["profiles"] == 1024]
    if cpu1k:
        c = cpu1k[0]
        lines.append(f"- yardstick (C++ hpcprof, real 1,024-thread CPU measurement, -j 2: "
                     f"{HPCPROF_YARDSTICK[0]} s, {HPCPROF_YARDSTICK[1]} MiB): hpcsa on the generated 1,024-thread "
                     f"set ({c['input'] / c['profiles'] / 1e3:.1f} KB per profile with traces): -j 2 "
                     f"{c['j2'][0]:.2f} s, {mib(c['j2'][1])} MiB; 2 ranks {c['mpi2'][0]:.2f} s, {mib(c['mpi2'][1])} MiB")
    lines += ["", "## Every run (seconds, in the order they ran)", "", "| set | profiles | -j 1 | -j 2 | 1 rank | 2 ranks |",
              "|---|---:|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['set']} | {r['profiles']:,} | " + " | ".join(
            ", ".join(f"{w:.2f}" for w in r[name][3]) for name in ("j1", "j2", "mpi1", "mpi2")) + " |")
    if phases:
        lines += ["", f"## Where the time goes ({big['set']}, {big['profiles']:,} profiles)", "",
                  "Seconds per phase of in-process runs (no interpreter start-up; for 2 ranks, rank 0's clock, "
                  f"profiles per rank {'+'.join(map(str, mpi['shares']))}):", "",
                  "| phase | " + " | ".join(phases) + " |", "|---|" + "---:|" * len(phases)]
        for phase in phases["-j 1"]:
            lines.append(f"| {phase} | " + " | ".join(f"{p.get(phase, 0.0):.2f}" for p in phases.values()) + " |")
        lines += ["", "cProfile of `-j 1`, by own time:", "", "```",
                  *[ln for ln in top.splitlines() if ln.strip()][:26], "```", "",
                  "By cumulative time (the aggregation's own functions):", "", "```",
                  *[ln for ln in cum.splitlines() if ln.strip()][:30], "```"]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
