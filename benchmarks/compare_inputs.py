"""The inputs of ``benchmarks/bench_compare.py``: databases made by ``hpcsa prof`` from perturbed copies of a
real measurement (by default HPCToolkit's 1,024-thread ``meas-cxx1024`` run).

Run ``k``'s copy of the measurement has every sampled value of every profile multiplied by a factor drawn
around 1 (lognormal, sigma :data:`JITTER`), as repeated runs of one program differ; in two runs of three a
random :data:`DROP` of the values is left out as well, so the runs differ in which contexts they reach, not
only in their values. Traces, structure files and binaries are the measured ones (linked). Each copy then
goes through ``hpcsa prof`` like any measurement, and is removed. Deterministic for a run number.

A planted regression (:func:`perturbed_measurement`'s ``regress``): the samples of one procedure (the
addresses of one symbol of the program's binary) made ``1 + regress`` times larger, everywhere it runs.

    .venv/bin/python benchmarks/compare_inputs.py --runs 100 [--work DIR] [-j 2]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from hpcsa.formats.measurement.hpcrun import pack_values, read_hpcrun, write_hpcrun

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"
MEAS = SHARED / "hpctoolkit-extra" / "meas-cxx1024"
HPCSA = ROOT / ".venv" / "bin" / "hpcsa"
JITTER = 0.05
DROP = 0.02
LINKED = ("structs", "vdso", "gpubins", "kernel_symbols")


def perturbed_measurement(src: Path, dst: Path, run: int, regress: float = 0.0,
                          regress_range: tuple[str, int, int] | None = None) -> None:
    """A copy of measurement ``src`` at ``dst`` with run ``run``'s perturbation (see the module docstring);
    ``regress_range`` = (load module path, low, high offsets): the values of leaf nodes whose address lies in
    it are multiplied by ``1 + regress``."""
    dst.mkdir()
    for sub in LINKED:
        if (src / sub).is_dir():
            os.symlink((src / sub).resolve(), dst / sub)
    rng = np.random.default_rng([run, 20260])
    for f in sorted(src.glob("*.hpcrun")):
        prof = read_hpcrun(f)
        metric = prof.values["metric"].astype(np.int64)
        vals = prof.value_floats() * rng.lognormal(0.0, JITTER, len(metric))
        nodes = prof.value_nodes()
        if regress and regress_range is not None:
            vals = vals * np.where(_in_range(prof, nodes, regress_range), 1.0 + regress, 1.0)
        keep = rng.random(len(metric)) > DROP if run % 3 else np.ones(len(metric), bool)
        ints = np.array([m.is_int for m in prof.metrics] or [False])[metric]
        vals = np.where(ints, np.rint(vals), vals)
        prof.values, prof.index = pack_values(nodes[keep], metric[keep], vals[keep], prof.metrics, prof.cct["id"])
        write_hpcrun(dst / f.name, prof)
        trace = f.with_suffix(".hpctrace")
        if trace.exists():
            os.symlink(trace.resolve(), dst / trace.name)


def _in_range(prof: object, nodes: np.ndarray, where: tuple[str, int, int]) -> np.ndarray:
    """Which values sit at a leaf whose address lies in ``where`` (module path, [low, high))."""
    module, lo, hi = where
    cct = prof.cct  # type: ignore[attr-defined]
    lm_ids = [m.id for m in prof.loadmap if m.path == module]  # type: ignore[attr-defined]
    if not lm_ids:
        return np.zeros(len(nodes), bool)
    hit = np.isin(cct["lm_id"], lm_ids) & (cct["lm_ip"] >= lo) & (cct["lm_ip"] < hi)
    hit_ids = cct["id"][hit]
    return np.isin(nodes, hit_ids)


def make_run(work: Path, run: int, regress: float = 0.0, regress_range: tuple[str, int, int] | None = None,
             name: str | None = None) -> Path:
    """``work/runs/<name>.d``, made unless it exists."""
    out = work / "runs" / f"{name or f'run-{run:03d}'}.d"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        meas = Path(tmp) / "meas"
        perturbed_measurement(MEAS, meas, run, regress, regress_range)
        subprocess.run([str(HPCSA), "prof", "-j", "1", str(meas), "-o", str(out)], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       env=dict(os.environ, HPCSA_NO_PROGRESS="1"))
    return out


def make_runs(work: Path, runs: int, jobs: int = 2) -> list[Path]:
    """The ``runs`` databases, made in ``jobs`` processes where missing."""
    t = time.perf_counter()
    with ProcessPoolExecutor(jobs) as pool:
        out = list(pool.map(make_run, [work] * runs, range(runs)))
    print(f"{runs} databases ready in {time.perf_counter() - t:.1f} s under {work / 'runs'}", file=sys.stderr)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--work", type=Path, default=ROOT / "benchmarks" / "work" / "compare")
    ap.add_argument("-j", type=int, default=2)
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    make_runs(args.work, args.runs, args.j)
    make_process_series(args.work)


def make_process_series(work: Path, counts: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64)) -> list[Path]:
    """A real series: ``hpcsa prof`` of the first ``k`` processes (16 threads each) of the measurement, for
    each ``k`` -- each process ran the same work, so the series is weak scaling over processes."""
    files = sorted(MEAS.glob("*.hpcrun"))
    pids = sorted({f.name.split("-")[-2] for f in files}, key=int)
    out = []
    for k in counts:
        db = work / "series" / f"procs-{k:02d}.d"
        out.append(db)
        if db.exists():
            continue
        db.parent.mkdir(parents=True, exist_ok=True)
        keep = set(pids[:k])
        with tempfile.TemporaryDirectory(dir=work) as tmp:
            meas = Path(tmp) / "meas"
            meas.mkdir()
            for sub in LINKED + ("all.lm",):
                if (MEAS / sub).exists():
                    os.symlink((MEAS / sub).resolve(), meas / sub)
            for f in files:
                if f.name.split("-")[-2] in keep:
                    os.symlink(f.resolve(), meas / f.name)
                    if f.with_suffix(".hpctrace").exists():
                        os.symlink(f.with_suffix(".hpctrace").resolve(), meas / f.with_suffix(".hpctrace").name)
            subprocess.run([str(HPCSA), "prof", "-j", "2", str(meas), "-o", str(db)], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           env=dict(os.environ, HPCSA_NO_PROGRESS="1"))
    return out


if __name__ == "__main__":
    if not MEAS.is_dir():
        sys.exit(f"{MEAS}: the real measurement is not here")
    main()
