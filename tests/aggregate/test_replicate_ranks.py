"""A real measurement written as more MPI ranks (:func:`hpcsa.ingest.synth.replicate.replicate_ranks`, the inputs of
``benchmarks/bench_prof_ranks.py``): each copy carries its rank in its identifier tuple, header and file name;
its counts are the measured ones times ``rank + 1``, its times perturbed, its trace shifted; everything else is
the measured profile's; the same seed gives the same bytes for any number of processes; and ``hpcsa prof``
reads the result as that many ranks."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from hpcsa.aggregate import driver
from hpcsa.aggregate.inputs import find_inputs
from hpcsa.formats.db.profiledb import read_profiledb
from hpcsa.formats.measurement.hpcrun import ID_KIND_MASK, ID_NODE, ID_RANK, read_hpcrun
from hpcsa.formats.measurement.hpctrace import read_hpctrace
from hpcsa.ingest.synth.replicate import RANK_SKEW_NS, replicate_ranks

RANKS = 3


def _digest(d: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.iterdir()) if p.is_file()}


def test_copies_are_ranks_of_the_measured_run(hpctoolkit_data: Path, tmp_path: Path) -> None:
    src = hpctoolkit_data / "meas" / "loops-cuda-nvidiapc-t.m"  # a CPU thread and a GPU stream, with traces
    dst = tmp_path / "r.m"
    sources = sorted(src.glob("*.hpcrun"))
    assert replicate_ranks(src, dst, RANKS, seed=3) == RANKS * len(sources)
    assert (dst / "structs").is_symlink() and (dst / "gpubins").is_symlink()
    traced = 0
    for f in sources:
        base = read_hpcrun(f)
        kinds = (base.id_tuple["kind"] & ID_KIND_MASK).tolist()
        assert ID_RANK not in kinds  # the measured run is not an MPI run: the element is added
        parts = f.name.split("-")
        base_trace = read_hpctrace(f.with_suffix(".hpctrace"))
        for r in range(RANKS):
            name = "-".join([*parts[:-5], f"{r:06d}", *parts[-4:]])
            copy = read_hpcrun(dst / name)
            tup = copy.id_tuple
            ckinds = (tup["kind"] & ID_KIND_MASK).tolist()
            at = ckinds.index(ID_RANK)
            assert ckinds[:at] == [ID_NODE] * at and ckinds[:at] + ckinds[at + 1:] == kinds
            assert tup["logical"][at] == r and tup["physical"][at] == r
            assert copy.header["mpi-rank"] == str(r)
            for key in ("program-name", "path"):
                assert copy.header.get(key) == base.header.get(key)
            assert copy.loadmap == base.loadmap and copy.metrics == base.metrics and copy.id_names == base.id_names
            assert copy.cct.tobytes() == base.cct.tobytes() and copy.index.tobytes() == base.index.tobytes()
            assert np.array_equal(copy.values["metric"], base.values["metric"])
            is_int = np.array([m.is_int for m in base.metrics])[base.values["metric"].astype(np.int64)]
            got, want = copy.value_floats(), base.value_floats()
            assert np.array_equal(got[is_int], want[is_int] * (r + 1))  # counts: as if it ran r + 1 times as long
            if (~is_int).any():  # times: around 1 + r / 8 times the measured ones
                ratio = got[~is_int] / want[~is_int]
                assert np.all((ratio > 0.6 * (1 + r / 8)) & (ratio < 1.6 * (1 + r / 8)))
            trace = read_hpctrace((dst / name).with_suffix(".hpctrace"))
            assert trace.flags == base_trace.flags and len(trace.records) == len(base_trace.records)
            assert np.array_equal(trace.records["ctx"], base_trace.records["ctx"])
            shift = trace.records["time"].astype(np.int64) - base_trace.records["time"].astype(np.int64)
            if len(shift):
                assert len(set(shift.tolist())) == 1  # the whole trace moved at once
                assert r * RANK_SKEW_NS <= int(shift[0]) < (r + 1) * RANK_SKEW_NS
                if int(base.header.get("trace-min-time", "0") or 0):
                    assert int(copy.header["trace-min-time"]) == int(base.header["trace-min-time"]) + int(shift[0])
                traced += 1
    assert traced >= RANKS  # some copies have traces to shift


def test_the_same_bytes_for_any_number_of_processes(hpctoolkit_data: Path, tmp_path: Path) -> None:
    src = hpctoolkit_data / "meas" / "loops-cputime-t.m"
    replicate_ranks(src, tmp_path / "a.m", RANKS, seed=5, jobs=1)
    replicate_ranks(src, tmp_path / "b.m", RANKS, seed=5, jobs=2)
    replicate_ranks(src, tmp_path / "c.m", RANKS, seed=6, jobs=1)
    a, b, c = (_digest(tmp_path / x) for x in ("a.m", "b.m", "c.m"))
    assert a == b and len(a) == 2 * RANKS * len(list(src.glob("*.hpcrun")))
    assert a.keys() == c.keys() and a != c


def test_prof_sees_the_ranks(hpctoolkit_data: Path, tmp_path: Path) -> None:
    src = hpctoolkit_data / "meas" / "loops-cputime-t.m"
    replicate_ranks(src, tmp_path / "r.m", RANKS, seed=0)
    inputs = find_inputs([str(tmp_path / "r.m")])
    assert len(inputs.profiles) == RANKS * len(list(src.glob("*.hpcrun")))
    driver.aggregate(inputs, driver.Options(output=str(tmp_path / "r.d"), jobs=1, progress=False))
    pdb = read_profiledb(tmp_path / "r.d" / "profile.db")
    ranks = []
    for k in range(len(pdb)):
        tup = pdb.id_tuple(k)
        if pdb.is_summary(k) or tup is None:
            continue
        kinds = tup["kind"].tolist()  # profile.db keeps the kind alone
        ranks.append(int(tup["logicalId"][kinds.index(ID_RANK)]))
    assert sorted(ranks) == sorted(list(range(RANKS)) * len(list(src.glob("*.hpcrun"))))
