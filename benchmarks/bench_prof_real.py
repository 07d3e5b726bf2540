"""Benchmark: ``hpcsa prof`` on real-shaped inputs (structure files of this machine's real binaries).

Inputs (:mod:`realshape`): ``hpcsa struct`` of the C library with Debian's debug info, libm, libgomp and
libstdc++ ("omp": an OpenMP program's threads, 16 per process) and of Debian's ``python3.11d`` with libc and
libm ("bigc": processes of a large C program); measurement directories of 16, 1,024 and 16,384 thread
profiles written with the project's ``.hpcrun`` writer, call paths of depth 20-60 all over those binaries'
procedures, inlined code and loops.

Each configuration is the command a user types, in a fresh process: ``hpcsa prof -j 1``, ``-j 2`` and
``mpiexec -n 2 hpcsa prof -j 1``. "cold" = an empty parsed-structure cache (``HPCSA_CACHE_DIR`` a new
directory: the structure XML is parsed, as hpcprof does on every run); "warm" = the same command again
(the compact parsed form is read instead). Time: median of ``--repeat`` warm runs; peak memory: the
largest proportional resident set (PSS) of the whole process tree (mpiexec and ranks, workers; shared pages
counted once), sampled every 50 ms during the runs. Every run's database is hashed: all must be
byte-identical across -j and ranks.

    .venv/bin/python benchmarks/bench_prof_real.py [--record] [--repeat N] [--sizes 16,1024,16384]

``--record`` writes benchmarks/results/prof_real.md.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import realshape  # noqa: E402
from bench_prof import compile_bytecode, measure  # noqa: E402
from machine_speed import probe  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "prof_real.md"
MPIEXEC = Path(sys.executable).parent / "mpiexec"
MIB = 1 << 20
#: C++ hpcprof -j 2 (develop branch) on real runs of these shapes on a 2-core Debian 12 machine (the issue).
YARDSTICK = {("omp", 1024): (0.8, 66), ("bigc", 16): (1.9, 105)}


LAST_SUMMARY: list[str] = [""]


def run(cmd: list[str], cache: Path) -> tuple[float, int]:
    """(wall seconds, peak PSS bytes of the process tree) of one command (its summary line kept)."""
    wall, peak, err = measure(cmd, 0.05, {"HPCSA_CACHE_DIR": str(cache)})
    LAST_SUMMARY[0] = err.strip().splitlines()[-1] if err.strip() else ""
    return wall, peak


def db_hash(db: Path) -> str:
    h = hashlib.sha256()
    for f in sorted(p for p in db.rglob("*") if p.is_file()):
        h.update(str(f.relative_to(db)).encode())
        h.update(f.read_bytes())
    return h.hexdigest()


def prof_cmd(meas: Path, out: Path, jobs: int, ranks: int) -> list[str]:
    cmd = [sys.executable, "-m", "hpcsa", "prof", str(meas), "-o", str(out), "-j", str(jobs)]
    return [str(MPIEXEC), "-n", str(ranks), *cmd] if ranks else cmd


CONFIGS = (("-j 1", 1, 0), ("-j 2", 2, 0), ("2 ranks", 1, 2))


def bench_one(meas: Path, tmp: Path, repeat: int, big: bool) -> dict[str, dict[str, object]]:
    """Every configuration: a cold run (fresh cache) then ``repeat`` warm runs. ``big``: one warm run of -j 2
    only (a 16,384-profile run takes many minutes on the shared machine)."""
    out: dict[str, dict[str, object]] = {}
    for name, jobs, ranks in CONFIGS[1:2] if big else CONFIGS:
        db = tmp / "db"
        cold = cold_peak = None
        cache = tmp / "shared-cache"  # big: the entries the smaller sets of the same binaries made
        if not big:
            cache = Path(tempfile.mkdtemp(prefix="cache-", dir=tmp))
            cold, cold_peak = run(prof_cmd(meas, db, jobs, ranks), cache)
            shutil.copytree(cache, tmp / "shared-cache", dirs_exist_ok=True)
        warm, peaks = [], []
        digests = set()
        for _ in range(repeat):
            w, p = run(prof_cmd(meas, db, jobs, ranks), cache)
            warm.append(w)
            peaks.append(p)
            digests.add(db_hash(db))
        if len(digests) != 1:
            raise SystemExit(f"{name}: the database differs between two runs")
        out[name] = {"cold": cold, "cold_peak": cold_peak, "warm": warm, "peak": max(peaks), "hash": digests.pop()}
        print(f"  {name}: cold {'-' if cold is None else f'{cold:.2f} s, {cold_peak / MIB:.0f} MiB'}; warm "
              f"{', '.join(f'{w:.2f}' for w in warm)} s, peak {max(peaks) / MIB:.0f} MiB", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--record", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sizes", default="16,1024,16384", help="profiles of the omp shape")
    ap.add_argument("--bigc", default="16", help="profiles of the bigc shape")
    args = ap.parse_args()
    compile_bytecode()
    load0 = os.getloadavg()
    speed0 = probe()
    sets = [("bigc", int(n)) for n in args.bigc.split(",") if n] + \
           [("omp", int(n)) for n in args.sizes.split(",") if n]
    rows = []
    text = ""
    # Inputs, parsed-structure caches and databases (844 MB were left after a full run): removed at the end.
    with tempfile.TemporaryDirectory(prefix="bench-prof-real-") as scratch:
        tmp = Path(scratch)
        for shape, n in sets:
            meas = tmp / f"{shape}-{n}.m"
            t = time.perf_counter()
            info = realshape.make_measurement(shape, n, meas)
            print(f"{shape}, {n} profiles: {info['input_bytes'] / 1e6:.1f} MB of .hpcrun/.hpctrace, "
                  f"{info['struct_bytes'] / 1e6:.1f} MB of structure files (made in {time.perf_counter() - t:.0f} s)",
                  flush=True)
            res = bench_one(meas, tmp, args.repeat if n < 16384 else 1, n >= 16384)
            same = len({r["hash"] for r in res.values()}) == 1
            info["contexts"] = int(LAST_SUMMARY[0].split(" contexts")[0].rsplit(" ", 1)[1])
            rows.append((shape, n, info, res, same))
            shutil.rmtree(meas)
            text = report(rows, args, load0, os.getloadavg(), (speed0, probe()))
            if args.record:  # after every set: a long run cut short keeps what it measured
                from hpcsa.core.outputs import write_file

                write_file(RESULTS, text)
    print(text)


def report(rows: list, args: argparse.Namespace, load0: tuple, load1: tuple, speed: tuple[float, float]) -> str:
    lines = [
        "# `hpcsa prof` on real-shaped inputs",
        "",
        f"`benchmarks/bench_prof_real.py --repeat {args.repeat} --sizes {args.sizes} --bigc {args.bigc}` "
        f"(Python {platform.python_version()}, numpy {np.__version__}, {platform.machine()}, 2 CPUs shared with "
        f"other engineers: load average {load0[0]:.1f} at the start, {load1[0]:.1f} at the end, so times are upper "
        f"bounds; machine speed, `benchmarks/machine_speed.py`: {speed[0]:.2f} s at the start, {speed[1]:.2f} s at "
        "the end). Inputs: see `benchmarks/realshape.py`; **omp** = threads (16 per process) over libc with "
        "Debian's debug info, libm, libgomp, libstdc++; **bigc** = processes over Debian's python3.11d, libc, "
        "libm. cold = empty parsed-structure cache (the XML is parsed); warm = median of the runs after it "
        "(16,384 profiles: one warm run of -j 2 only). Peaks: largest PSS of the process tree in the cold run, and over the warm runs.",
        "",
        "| shape | profiles | .hpcrun+.hpctrace MB | structure MB | contexts | config | cold (s) | cold peak MiB | "
        "warm (s) | warm runs (s) | warm peak MiB | cold/warm | same bytes |",
        "|---|---:|---:|---:|---:|---|---:|---:|---:|---|---:|---:|---|",
    ]
    for shape, n, info, res, same in rows:
        for name, r in res.items():
            med = statistics.median(r["warm"])
            cold = "- | -" if r["cold"] is None else f"{r['cold']:.2f} | {r['cold_peak'] / MIB:.0f}"
            ratio = "-" if r["cold"] is None else f"{r['cold'] / med:.1f}x"
            lines.append(f"| {shape} | {n:,} | {info['input_bytes'] / 1e6:.1f} | {info['struct_bytes'] / 1e6:.1f} | "
                         f"{info['contexts']:,} | {name} | {cold} | {med:.2f} | "
                         f"{', '.join(f'{w:.2f}' for w in r['warm'])} | {r['peak'] / MIB:.0f} | "
                         f"{ratio} | {'yes' if same else 'NO'} |")
    lines += ["", "## Against C++ hpcprof -j 2", ""]
    for shape, n, _, res, _ in rows:
        if (shape, n) in YARDSTICK:
            s, mib = YARDSTICK[(shape, n)]
            r = res["-j 2"]
            lines.append(f"- {shape}, {n:,} profiles: hpcprof -j 2 {s} s, {mib} MiB (the issue's real run of this "
                         f"shape); hpcsa -j 2 cold {r['cold']:.2f} s, {r['cold_peak'] / MIB:.0f} MiB; warm "
                         f"{statistics.median(r['warm']):.2f} s, {r['peak'] / MIB:.0f} MiB")
    lines += ["", "Contexts: the unified tree's size, from the summary line of `hpcsa prof` (the generated call paths",
              "fall all over the binaries, so the trees are far larger than a real OpenMP run's few hundred)."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
