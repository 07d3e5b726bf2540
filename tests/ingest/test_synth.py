"""The generator of measurement directories (``hpcsa synth``): valid files, deterministic, realistic.

Every expectation is derived from the written files with the project's readers (not from the generator's
own bookkeeping): the .hpcrun and .hpctrace readers validate the bytes, the structure reader gives the
address ranges, and densities are counted from the sparse values.
"""

from __future__ import annotations

import filecmp
import re
from pathlib import Path

import numpy as np
import pytest

from hpcsa.formats.hpcstruct.model import A, L
from hpcsa.formats.hpcstruct.reader import read_hpcstruct
from hpcsa.formats.measurement.hpcrun import ID_KIND_MASK, read_hpcrun
from hpcsa.formats.measurement.hpctrace import FLAG_CALL_TRACE, read_hpctrace
from hpcsa.ingest.synth.directory import generate
from hpcsa.ingest.synth.program import SAMPLE_PERIOD_NS, SynthSpec
from tests.conftest import assert_one_line_error, run_cli

SMALL = {"contexts": 1500, "samples": 80}
THREAD, GPUSTREAM = 3, 6
NAME = re.compile(r"^synthapp-(\d{6})-(\d{3})-([0-9a-f]{8})-(\d+)-0\.hpcrun$")


@pytest.fixture(scope="module")
def gpu_set(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, SynthSpec]:
    spec = SynthSpec.preset("gpu", 30, threads_per_rank=2, streams_per_rank=1, **SMALL)
    out = tmp_path_factory.mktemp("synth") / "gpu.m"
    generate(out, spec, jobs=1)
    return out, spec


def _files(d: Path) -> list[str]:
    return sorted(p.relative_to(d).as_posix() for p in d.rglob("*") if p.is_file())


def test_same_seed_same_bytes_for_any_number_of_workers(gpu_set: tuple[Path, SynthSpec], tmp_path: Path) -> None:
    first, spec = gpu_set
    again = tmp_path / "again.m"
    generate(again, spec, jobs=3)
    assert _files(first) == _files(again)
    for name in _files(first):
        assert filecmp.cmp(first / name, again / name, shallow=False), name
    other = tmp_path / "other.m"
    generate(other, SynthSpec.preset("gpu", 30, threads_per_rank=2, streams_per_rank=1, seed=1, **SMALL))
    differ = [n for n in _files(first) if n.endswith(".hpcrun") and (other / n).exists()
              and not filecmp.cmp(first / n, other / n, shallow=False)]
    assert len(differ) >= 15  # another seed, another program and other samples


def test_every_file_is_a_valid_measurement(gpu_set: tuple[Path, SynthSpec]) -> None:
    d, spec = gpu_set
    runs = sorted(d.glob("*.hpcrun"))
    assert len(runs) == spec.profiles == 30
    ranks: dict[int, list[int]] = {}
    for f in runs:
        m = NAME.match(f.name)
        assert m, f.name
        rank, thread = int(m.group(1)), int(m.group(2))
        ranks.setdefault(rank, []).append(thread)
        prof = read_hpcrun(f)  # checks parent-first order, the sparse index, metric ids
        trace = read_hpctrace(f.with_suffix(".hpctrace"))
        kinds = [int(k) & ID_KIND_MASK for k in prof.id_tuple["kind"]]
        ids = set(prof.cct["id"].tolist())
        assert set(trace.records["ctx"].tolist()) <= ids  # every trace record names a node of the profile
        times = trace.records["time"].astype(np.int64)
        assert (np.diff(times) >= 0).all()
        assert prof.header["trace-min-time"] == str(times.min()) and prof.header["trace-max-time"] == str(times.max())
        assert prof.header["mpi-rank"] == str(rank) and prof.header["thread-id"] == str(thread)
        assert len(prof.metrics) == 64 and sum(1 for x in prof.metrics if x.name == "CPUTIME (sec)") == 1
        if thread >= 500:  # a GPU stream: call trace, operations from start to <no activity>, no values
            assert kinds[-1] == GPUSTREAM and int(prof.id_tuple["physical"][-1]) == thread - 500
            assert trace.flags & FLAG_CALL_TRACE and len(prof.values) == 0
            noact = prof.cct["id"][(prof.cct["lm_id"] == 0) & (prof.cct["lm_ip"] == int.from_bytes(b"NoActvty", "big"))]
            assert len(noact) == 1
            assert (trace.records["ctx"][1::2] == noact[0]).all()
            assert not (trace.records["ctx"][0::2] == noact[0]).any()
        else:
            assert kinds[-1] == THREAD and int(prof.id_tuple["physical"][-1]) == thread
            assert trace.flags == 0 and len(prof.values) > 0
    assert ranks == {r: [0, 1, 500] for r in range(10)}


def test_cpu_time_is_what_the_trace_sampled(gpu_set: tuple[Path, SynthSpec]) -> None:
    """CPUTIME (sec) at a context = its samples in the trace x the 5 ms period, as hpcrun attributes it."""
    d, _ = gpu_set
    for f in sorted(d.glob("*-00[0-9]-*.hpcrun")):
        prof = read_hpcrun(f)
        cpu = [i for i, m in enumerate(prof.metrics) if m.name == "CPUTIME (sec)"][0]
        keep = prof.values["metric"] == cpu
        nodes, vals = prof.value_nodes()[keep], prof.value_floats()[keep]
        recs = read_hpctrace(f.with_suffix(".hpctrace")).records
        tn, tc = np.unique(recs["ctx"], return_counts=True)
        assert np.array_equal(np.sort(nodes), tn)
        order = np.argsort(nodes)
        np.testing.assert_allclose(vals[order], tc * SAMPLE_PERIOD_NS / 1e9, rtol=1e-12)


def _densities(d: Path) -> tuple[float, float, float]:
    """The Table 2 columns of "Preparing for Performance Analysis at Exascale" for measurement data, from the files: % of a profile's contexts with a
    value, % non-zero among the metrics of those contexts (profiles with values), and bytes per profile."""
    ctx, met, size = [], [], 0
    for f in sorted(d.glob("*.hpcrun")):
        p = read_hpcrun(f)
        size += f.stat().st_size + f.with_suffix(".hpctrace").stat().st_size
        if len(p.index):
            ctx.append(100.0 * len(p.index) / len(p.cct))
            met.append(100.0 * len(p.values) / (len(p.index) * len(p.metrics)))
    return float(np.mean(ctx)), float(np.mean(met)), size / len(list(d.glob("*.hpcrun")))


def test_densities_like_seed_000_table_2(tmp_path: Path) -> None:
    """GPU-like: ~15-20% of contexts, ~2% of metrics (LAMMPS 17.7/1.8, PeleC 15.8/2.0). CPU-like: 1 metric,
    ~13 KB per profile with its trace (the yardstick measurement of the issue)."""
    gpu = tmp_path / "gpu.m"
    r = generate(gpu, SynthSpec.preset("gpu", 48), jobs=2)
    ctx, met, _ = _densities(gpu)
    assert 14.0 <= ctx <= 22.0 and 1.5 <= met <= 3.0, (ctx, met)
    assert r.context_density == pytest.approx(ctx) and r.metric_density == pytest.approx(met)
    cpu = tmp_path / "cpu.m"
    generate(cpu, SynthSpec.preset("cpu", 32), jobs=2)
    ctx, met, per_profile = _densities(cpu)
    assert 12.0 <= ctx <= 20.0 and met == 100.0, (ctx, met)
    assert 10_000 <= per_profile <= 16_000, per_profile


def test_structure_files_describe_every_sampled_address(gpu_set: tuple[Path, SynthSpec]) -> None:
    """The lexical expansion has something to do: every address a profile names lies in a statement of its
    module's structure file, and the structure has loops and inlined code."""
    d, _ = gpu_set
    structs = {m.path: m for s in sorted((d / "structs").glob("*.hpcstruct")) for m in read_hpcstruct(s).modules}
    assert len(structs) == 3
    for module in structs.values():
        if not module.path.endswith(".gpubin"):
            assert module.count(L) > 0 and module.count(A) > 0
    seen = 0
    for f in sorted(d.glob("*.hpcrun")):
        p = read_hpcrun(f)
        paths = {lm.id: lm.path for lm in p.loadmap}
        for lm_id in np.unique(p.cct["lm_id"]).tolist():
            if lm_id == 0:
                continue
            addrs = p.cct["lm_ip"][p.cct["lm_id"] == lm_id]
            assert (structs[paths[lm_id]].lookup(addrs) >= 0).all(), (f.name, paths[lm_id])
            seen += len(addrs)
    assert seen > 1000


def test_gpu_metric_formulas_name_the_metrics_they_derive_from(gpu_set: tuple[Path, SynthSpec]) -> None:
    """Formulas name metrics by position (#N): the CPU metric must not shift hpcrun's GPU table."""
    d, _ = gpu_set
    metrics = read_hpcrun(next(d.glob("*.hpcrun"))).metrics
    names = [m.name for m in metrics]
    blks = metrics[names.index("GKER:BLKS")]
    refs = [names[int(n)] for n in re.findall(r"#(\d+)", blks.formula)]
    assert refs == ["GKER:BLKS_ACUMU", "GKER:COUNT"]
    for m in metrics:
        for n in re.findall(r"#(\d+)", m.formula):
            assert not metrics[int(n)].formula, (m.name, n)


def test_cli(tmp_path: Path) -> None:
    out = tmp_path / "cli.m"
    proc = run_cli("synth", str(out), "-n", "20", "--contexts", "800", "--samples", "40", "-j", "2")
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"hpcsa synth: 20 profiles \(20 CPU threads; 2 ranks\), 1 metrics, .* MB; densities: "
                     r"contexts \d+\.\d%, metrics 100\.0% -> ", proc.stdout), proc.stdout
    assert len(list(out.glob("*.hpcrun"))) == 20 and len(list(out.glob("*.hpctrace"))) == 20
    assert sorted(p.name for p in (out / "structs").iterdir()) == ["libsynth.so.hpcstruct", "synthapp.hpcstruct"]
    assert_one_line_error(run_cli("synth", str(tmp_path / "x.m"), "-n", "0"), "--profiles")
    assert_one_line_error(run_cli("synth", str(tmp_path / "x.m"), "--streams-per-rank", "2"), "--gpu")
    assert not (tmp_path / "x.m").exists()
