"""More profiles from real ones: a measurement directory replicated under other identities.

For scaling tests and benchmarks: every ``.hpcrun`` (and ``.hpctrace``) of a
real measurement is written ``copies`` times, each copy on another host (the
NODE id), with its values scaled and, for two copies in three, a random fifth
of them dropped (so profiles differ in contexts as well as values), and its
trace shifted in time. ``structs/``, ``vdso/`` and ``gpubins/`` are linked.
The result is a valid measurement directory: hpcprof would read it too.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from hpcsa.formats.measurement.hpcrun import ID_KIND_MASK, pack_values, read_hpcrun, write_hpcrun
from hpcsa.formats.measurement.hpctrace import HpctraceFile, read_hpctrace, write_hpctrace

NODE = 1  # identifier-tuple kind of the host


def replicate(src: str | os.PathLike[str], dst: str | os.PathLike[str], copies: int, seed: int = 0) -> int:
    """Write ``copies`` altered copies of every profile of ``src`` into the new directory ``dst``;
    returns the number of profiles written."""
    src, dst = Path(src), Path(dst)
    dst.mkdir()
    for sub in ("structs", "vdso", "gpubins", "kernel_symbols"):
        if (src / sub).is_dir():
            os.symlink(src.resolve() / sub, dst / sub)
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
