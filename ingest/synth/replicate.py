"""More profiles from real ones: a measurement directory replicated under other identities.

For scaling tests and benchmarks. Two ways:

- :func:`replicate`: every ``.hpcrun`` (and ``.hpctrace``) of a real measurement is written ``copies``
  times, each copy on another host (the NODE id), with its values scaled and, for two copies in three, a
  random fifth of them dropped (so profiles differ in contexts as well as values), and its trace shifted in
  time.
- :func:`replicate_ranks`: the whole measurement is written once per MPI rank, as if the program had run
  as ``ranks`` ranks of what was measured: each copy has its rank id (a RANK element in its identifier tuple,
  after the node, as hpcrun writes it for an MPI program; the header's ``mpi-rank``; the rank field of the
  file name, hpcrun's ``<exe>-<rank>-<thread>-<host>-<pid>-<gen>``), its values perturbed and its trace
  shifted in time; everything else (calling-context trees, load maps, metric tables, which values are
  non-zero, trace lengths) is the measured one. The benchmark of ``hpcsa prof`` at scale builds its inputs
  this way (``benchmarks/bench_prof_ranks.py``).

``structs/``, ``vdso/``, ``gpubins/`` and ``kernel_symbols/`` are linked. The result is a valid measurement
directory: hpcprof would read it too.
"""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from hpcsa.formats.measurement.hpcrun import (
    ID_KIND_MASK,
    ID_NODE,
    ID_RANK,
    RANK_ELEMENT,
    HpcrunProfile,
    encode_hpcrun,
    pack_values,
    read_hpcrun,
    write_hpcrun,
)
from hpcsa.formats.measurement.hpctrace import HpctraceFile, encode_hpctrace, read_hpctrace, write_hpctrace

NODE = 1  # identifier-tuple kind of the host
LINKED = ("structs", "vdso", "gpubins", "kernel_symbols")


def replicate(src: str | os.PathLike[str], dst: str | os.PathLike[str], copies: int, seed: int = 0) -> int:
    """Write ``copies`` altered copies of every profile of ``src`` into the new directory ``dst``;
    returns the number of profiles written."""
    src, dst = Path(src), Path(dst)
    dst.mkdir()
    _link(src, dst)
    rng = np.random.default_rng(seed)
    n = 0
    for f in sorted(src.glob("*.hpcrun")):
        base = read_hpcrun(f)
        trace = read_hpctrace(f.with_suffix(".hpctrace")) if f.with_suffix(".hpctrace").exists() else None
        metric = base.values["metric"].astype(np.int64)
        ints = np.array([m.is_int for m in base.metrics] or [False])[metric]
        for k in range(copies):
            prof = read_hpcrun(f)
            tup = prof.id_tuple.copy()
            is_node = (tup["kind"] & ID_KIND_MASK) == NODE
            tup["physical"][is_node] = tup["physical"][is_node] + np.uint64(k + 1)
            prof.id_tuple = tup
            keep = rng.random(len(metric)) > 0.2 if k % 3 else np.ones(len(metric), bool)
            vals = base.value_floats()
            vals = np.where(ints, np.rint(vals * (k + 1)), vals * (1.0 + 0.125 * k))
            prof.values, prof.index = pack_values(base.value_nodes()[keep], metric[keep], vals[keep], base.metrics,
                                                  base.cct["id"])
            name = f.name.replace("-000000-", f"-{k:06d}-", 1)
            write_hpcrun(dst / name, prof)
            if trace is not None:
                recs = trace.records.copy()
                recs["time"] = recs["time"] + np.uint64(1000 * k)
                write_hpctrace(dst / name.replace(".hpcrun", ".hpctrace"), HpctraceFile(trace.flags, recs))
            n += 1
    return n


def _link(src: Path, dst: Path) -> None:
    for sub in LINKED:
        if (src / sub).is_dir():
            os.symlink(src.resolve() / sub, dst / sub)


# -- as MPI ranks ------------------------------------------------------------------------------------------

#: Nanoseconds between the clocks of two consecutive ranks' copies (plus up to as much again at random): the
#: ranks of a run start within microseconds of one another, and their traces overlap in time.
RANK_SKEW_NS = 1_000_003


def replicate_ranks(src: str | os.PathLike[str], dst: str | os.PathLike[str], ranks: int, seed: int = 0,
                    jobs: int = 1) -> int:
    """Write the measurement ``src`` as ``ranks`` MPI ranks into the new directory ``dst`` (see the module
    docstring); returns the number of profiles written.

    Rank ``r``'s copy of a profile: its identifier tuple with the element ``RANK r`` (logical and physical
    ``r``; put after the NODE element where the profile has none, set where it has one), ``mpi-rank`` ``r``,
    the file name's rank field ``r``; the values of integer metrics (counts: samples, instructions, bytes)
    times ``r + 1``, as if the rank had run ``r + 1`` times as long (so the ratios between counts, GPU call
    weights among them, are the measured ones), those of real-valued metrics (times) times a factor drawn
    per value around ``1 + r / 8``; its trace's timestamps, and the header's time range, shifted by
    ``r`` x :data:`RANK_SKEW_NS` plus up to that at random. Deterministic for a ``seed``; ``jobs``
    processes write the copies of different source profiles."""
    src, dst = Path(src), Path(dst)
    files = sorted(src.glob("*.hpcrun"))
    dst.mkdir()
    _link(src, dst)
    tasks = [(f, dst, ranks, seed, k) for k, f in enumerate(files)]
    if jobs > 1 and len(tasks) > 1:
        with ProcessPoolExecutor(min(jobs, len(tasks))) as pool:
            return sum(pool.map(_replicate_file, *zip(*tasks, strict=True), chunksize=8))
    return sum(_replicate_file(*t) for t in tasks)


def _replicate_file(f: Path, dst: Path, ranks: int, seed: int, which: int) -> int:
    """Every rank's copy of one source profile (``which``: its place among the source's profiles)."""
    base = read_hpcrun(f)
    tf = f.with_suffix(".hpctrace")
    trace = read_hpctrace(tf) if tf.exists() else None
    rng = np.random.default_rng([seed, which])
    metric = base.values["metric"].astype(np.int64)
    is_int = np.array([m.is_int for m in base.metrics] or [False])[metric] if len(metric) else np.zeros(0, bool)
    bits = base.values["bits"].astype(np.uint64)
    floats = bits.view(np.float64)
    tup, rank_at = _with_rank(base.id_tuple)
    parts = f.name.split("-")
    if len(parts) < 6 or not parts[-5].isdigit():
        raise ValueError(f"{f}: not named as hpcrun names profiles (<exe>-<rank>-<thread>-<host>-<pid>-<gen>)")
    for r in range(ranks):
        shift = r * RANK_SKEW_NS + int(rng.integers(0, RANK_SKEW_NS))
        jitter = rng.lognormal(0.0, 0.05, len(metric))
        new_bits = np.where(is_int, bits * np.uint64(r + 1),
                            (floats * ((1.0 + r / 8) * jitter)).view(np.uint64))
        values = base.values.copy()
        values["bits"] = new_bits
        tup["physical"][rank_at] = tup["logical"][rank_at] = r
        header = dict(base.header, **{"mpi-rank": str(r)})
        for key in ("trace-min-time", "trace-max-time"):
            if int(header.get(key, "0") or 0):
                header[key] = str(int(header[key]) + shift)
        prof = HpcrunProfile(header=header, loadmap=base.loadmap, cct=base.cct, metrics=base.metrics,
                             id_names=base.id_names, id_tuple=tup, values=values, index=base.index)
        name = "-".join([*parts[:-5], f"{r:06d}", *parts[-4:]])
        _write(dst / name, encode_hpcrun(prof))
        if trace is not None:
            recs = trace.records.copy()
            recs["time"] = recs["time"] + np.uint64(shift)
            _write(dst / (name[: -len(".hpcrun")] + ".hpctrace"), encode_hpctrace(HpctraceFile(trace.flags, recs)))
    return ranks


def _with_rank(tup: np.ndarray) -> tuple[np.ndarray, int]:
    """The identifier tuple with a RANK element (added after the leading NODE elements where it has none),
    and where that element is."""
    kinds = (tup["kind"] & ID_KIND_MASK).tolist()
    if ID_RANK in kinds:
        return tup.copy(), kinds.index(ID_RANK)
    at = 0
    while at < len(kinds) and kinds[at] == ID_NODE:
        at += 1
    out = np.zeros(len(tup) + 1, tup.dtype)
    out[:at], out[at + 1:] = tup[:at], tup[at:]
    out[at] = (RANK_ELEMENT, 0, 0)
    return out, at


def _write(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


__all__ = ["replicate", "replicate_ranks"]
