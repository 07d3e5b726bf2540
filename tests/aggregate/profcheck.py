"""Helpers for the ``hpcsa prof`` tests: run the aggregation in-process, read values back independently."""

from __future__ import annotations

import glob
import os
from collections import defaultdict
from pathlib import Path

import numpy as np

from hpcsa.aggregate import driver
from hpcsa.aggregate.handoff import ClassTwo, Discovery, GpuStructures, Phase1Env, Phase1Share
from hpcsa.aggregate.inputs import Inputs, find_inputs
from hpcsa.aggregate.phase0 import gpu_graphs as phase0_gpu_graphs
from hpcsa.aggregate.phase1 import class2 as phase1_class2
from hpcsa.aggregate.phase1 import share as phase1_share
from hpcsa.formats.db.database import open_database
from hpcsa.formats.measurement.hpcrun import ID_KIND_MASK, read_hpcrun

MEASUREMENTS = ("small", "loops-cputime-t", "loops-perf", "loops-cuda-nvidia-t", "loops-cuda-nvidiapc-t",
                "recursion-cuda-nvidiapc-t", "loops-hip-amd-t")


def build(meas: str | os.PathLike[str], out: str | os.PathLike[str], *, ignore_structs: bool = False, jobs: int = 1,
          statistics: tuple[str, ...] = ("Sum",), traces: bool = True, fallback: bool = True) -> driver.Result:
    inputs = find_inputs([os.fspath(meas)], ignore_structs=ignore_structs)
    return driver.aggregate(inputs, driver.Options(output=os.fspath(out), jobs=jobs, statistics=statistics,
                                                 traces=traces, fallback=fallback, progress=False))


def phase1(meas: str | os.PathLike[str], scratch: str | os.PathLike[str] | None = None
           ) -> tuple[Inputs, GpuStructures, Phase1Env]:
    """A measurement directory's inputs, its GPU structures (phase 0) and phase 1's environment (seed 0;
    ``scratch``: where phase 1 keeps what phase 2 needs of each profile, None to keep nothing)."""
    inputs = find_inputs([os.fspath(meas)])
    gpu = phase0_gpu_graphs.read_gpu_structures(inputs.structs)
    return inputs, gpu, gpu.env(0, None if scratch is None else os.fspath(scratch))


def class_two(meas: str | os.PathLike[str], scratch: str | os.PathLike[str] | None = None,
              found: Discovery | None = None) -> ClassTwo:
    """Class 2 of a measurement directory, by the pipeline's own steps in this process (one worker): phase 1
    (or ``found``, the union of reports read by the caller), then the class-2 tables."""
    inputs, gpu, env = phase1(meas, scratch)
    share = phase1_share.run(inputs, env, 1) if found is None else Phase1Share(found, [])
    structs = phase1_share.complete_structs(share, inputs, 1)
    return phase1_class2.class_two(share.found, structs, inputs, gpu, env, statistics=("Sum",), fallback=True,
                                   warmer=None)


def read_sums(meas: str | os.PathLike[str]) -> dict[tuple[tuple[int, int], ...], dict[str, float]]:
    """Per profile (identifier tuple as (kind, physical id) without interpretation bits), per metric:
    the sum of every value read from the .hpcrun file times the metric's period (derived metrics excluded)."""
    out: dict[tuple[tuple[int, int], ...], dict[str, float]] = {}
    for f in sorted(glob.glob(os.path.join(os.fspath(meas), "*.hpcrun"))):
        p = read_hpcrun(f)
        vals = p.value_floats() * p.periods()[p.values["metric"].astype(np.int64)]
        sums: dict[str, float] = defaultdict(float)
        for m, v in zip(p.values["metric"].tolist(), vals.tolist(), strict=True):
            if not p.metrics[m].formula:
                sums[p.metrics[m].name] += v
        key = tuple((int(k) & ID_KIND_MASK, int(ph)) for k, ph in p.id_tuple[["kind", "physical"]].tolist())
        out[key] = dict(sums)
    return out


def root_execution(db_path: str | os.PathLike[str]) -> dict[tuple[tuple[int, int], ...], dict[str, float]]:
    """Per profile (identifier tuple as (kind, physical)), per metric: the root context's execution value."""
    db = open_database(db_path)
    names = db.meta.prop_metric_names()
    out = {}
    for i in range(1, len(db.profiles)):
        t = db.profiles.id_tuple(i)
        assert t is not None
        key = tuple((int(k), int(ph)) for k, ph in t[["kind", "physicalId"]].tolist())
        vals = db.profiles.profile(i).get(0)
        out[key] = {names[m][0]: v for m, v in vals.items() if names[m][1] == "execution"}
    return out


def reference(shared: Path, name: str) -> Path:
    return shared / "hpctoolkit" / "dbase" / f"{name}.d"


def measurement(shared: Path, name: str) -> Path:
    return shared / "hpctoolkit" / "meas" / f"{name}.m"
