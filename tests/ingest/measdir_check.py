"""Reading back a written measurement directory, for the ingest tests (independent of the writer)."""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from hpcsa.formats.measurement.hpcrun import placeholder_code, read_hpcrun
from hpcsa.formats.measurement.hpctrace import read_hpctrace

PLACEHOLDERS = {placeholder_code(c): c for c in ("GPUKernl", "GPUTrace", "GPUCp?2?", "GPUCpH2D", "GPUCpD2H",
                                                  "GPUAlloc", "GPUDelte", "GPUMemst", "GPU Sync", "| Main  ",
                                                  "| Thread", "^Primary", "NoActvty")}


@dataclass
class Meas:
    totals: dict[str, float]
    profiles: list
    traces: dict[str, object]


def load(path: str) -> Meas:
    totals: dict[str, float] = defaultdict(float)
    profiles, traces = [], {}
    for name in sorted(os.listdir(path)):
        full = os.path.join(path, name)
        if name.endswith(".hpcrun"):
            prof = read_hpcrun(full)
            profiles.append(prof)
            vals = prof.value_floats()
            for mid, v in zip(prof.values["metric"].tolist(), vals.tolist(), strict=True):
                totals[prof.metrics[mid].name] += v
        elif name.endswith(".hpctrace"):
            traces[name[: -len(".hpctrace")]] = read_hpctrace(full)
    return Meas(dict(totals), profiles, traces)


def total(meas: Meas, metric: str) -> float:
    return meas.totals.get(metric, 0.0)


def paths_above(prof, code: str) -> list[tuple[tuple[str, int], ...]]:
    """For every node with placeholder ``code``: the (module path, address) frames from the thread root
    (exclusive) down to its parent, as a tuple."""
    cct = prof.cct
    lm = {m.id: m.path for m in prof.loadmap}
    parent = dict(zip(cct["id"].tolist(), cct["parent"].tolist(), strict=True))
    node_lm = dict(zip(cct["id"].tolist(), cct["lm_id"].tolist(), strict=True))
    node_ip = dict(zip(cct["id"].tolist(), cct["lm_ip"].tolist(), strict=True))
    target = placeholder_code(code)
    out = []
    for nid in cct["id"][(cct["lm_id"] == 0) & (cct["lm_ip"] == np.uint64(target))].tolist():
        frames = []
        p = parent[nid]
        while p and not (node_lm[p] == 0 and PLACEHOLDERS.get(node_ip[p]) in ("| Main  ", "| Thread", "^Primary")):
            frames.append((lm.get(node_lm[p], "?"), int(node_ip[p])))
            p = parent[p]
        out.append(tuple(reversed(frames)))
    return out
