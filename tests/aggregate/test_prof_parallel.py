"""The database does not depend on how the work is split: byte-identical for any ``-j``.

Inputs: a real measurement (GPU reconstruction, traces), and a generated one
with dozens of profiles made from real ones (CPU threads of an OpenMP run and
a CUDA run with PC sampling, each copied under other host ids with values
scaled and thinned, traces shifted), given as two measurement directories.
"""

from __future__ import annotations

import filecmp
import os
from pathlib import Path

import numpy as np
import pytest

from hpcsa.aggregate.compare import compare_databases
from hpcsa.ingest.hpcrun import ID_KIND_MASK, pack_values, read_hpcrun, write_hpcrun
from hpcsa.ingest.hpctrace import read_hpctrace, write_hpctrace
from tests.aggregate.profcheck import read_sums, root_execution
from tests.conftest import run_cli

NODE = 1


def replicate(src: Path, dst: Path, copies: int, seed: int) -> int:
    """Write ``copies`` altered copies of every profile of ``src`` into ``dst`` (structs/, vdso/ and
    gpubins/ are linked); returns the number of profiles written."""
    dst.mkdir()
    for sub in ("structs", "vdso", "gpubins"):
        if (src / sub).is_dir():
            os.symlink(src / sub, dst / sub)
    rng = np.random.default_rng(seed)
    n = 0
    for f in sorted(src.glob("*.hpcrun")):
        base = read_hpcrun(f)
        trace = f.with_suffix(".hpctrace")
        for k in range(copies):
            prof = read_hpcrun(f)
            tup = prof.id_tuple.copy()
            is_node = (tup["kind"] & ID_KIND_MASK) == NODE
            tup["physical"][is_node] = tup["physical"][is_node] + np.uint64(k + 1)
            prof.id_tuple = tup
            vals = base.value_floats()
            scale = 1.0 + 0.125 * k
            keep = rng.random(len(vals)) > 0.2 if k % 3 else np.ones(len(vals), bool)
            metric = base.values["metric"].astype(np.int64)
            ints = np.array([m.is_int for m in base.metrics])[metric]
            vals = np.where(ints, np.rint(vals * (k + 1)), vals * scale)
            prof.values, prof.index = pack_values(base.value_nodes()[keep], metric[keep], vals[keep], base.metrics,
                                                  base.cct["id"])
            name = f.name.replace("-000000-", f"-{k:06d}-")
            write_hpcrun(dst / name, prof)
            if trace.exists():
                tr = read_hpctrace(trace)
                tr.records = tr.records.copy()
                tr.records["time"] = tr.records["time"] + np.uint64(1000 * k)
                write_hpctrace(dst / name.replace(".hpcrun", ".hpctrace"), tr)
            n += 1
    return n


@pytest.fixture(scope="module")
def generated(hpctoolkit_data: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, int]:
    root = tmp_path_factory.mktemp("gen")
    a, b = root / "omp.m", root / "cuda.m"
    n = replicate(hpctoolkit_data / "meas" / "loops-cputime-t.m", a, 10, 1)
    n += replicate(hpctoolkit_data / "meas" / "loops-cuda-nvidiapc-t.m", b, 12, 2)
    return a, b, n


def _identical(x: Path, y: Path) -> None:
    names = sorted(p.relative_to(x).as_posix() for p in x.rglob("*") if p.is_file())
    assert names == sorted(p.relative_to(y).as_posix() for p in y.rglob("*") if p.is_file())
    assert {"meta.db", "profile.db", "cct.db", "trace.db", "metrics/default.yaml"} <= set(names)
    for n in names:
        assert filecmp.cmp(x / n, y / n, shallow=False), n


def test_generated_measurement_is_identical_for_any_jobs(generated: tuple[Path, Path, int], tmp_path: Path) -> None:
    a, b, n = generated
    assert n >= 64
    outs = []
    for jobs in (1, 2, 3):
        out = tmp_path / f"j{jobs}.d"
        proc = run_cli("prof", str(a), str(b), "-o", str(out), "-j", str(jobs))
        assert proc.returncode == 0, proc.stderr
        assert f"{n} profiles" in proc.stderr
        outs.append(out)
    _identical(outs[0], outs[1])
    _identical(outs[0], outs[2])
    # Nothing lost: every profile's values arrive at its root.
    read = read_sums(a) | read_sums(b)
    written = root_execution(outs[0])
    assert set(read) == set(written)
    for key, sums in read.items():
        for metric, total in sums.items():
            assert written[key].get(metric, 0.0) == pytest.approx(total, rel=1e-12), (key, metric)


def test_real_gpu_measurement_is_identical_for_any_jobs(hpctoolkit_data: Path, tmp_path: Path) -> None:
    meas = hpctoolkit_data / "meas" / "recursion-cuda-nvidiapc-t.m"
    for jobs in (1, 2):
        proc = run_cli("prof", str(meas), "-o", str(tmp_path / f"j{jobs}.d"), "-j", str(jobs))
        assert proc.returncode == 0, proc.stderr
    _identical(tmp_path / "j1.d", tmp_path / "j2.d")
    assert compare_databases(tmp_path / "j1.d", tmp_path / "j2.d").same
