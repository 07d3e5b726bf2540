"""How a measurement's samples divide among its load modules.

A warning about a binary or structure file that is missing must say what it costs: the share of the samples
that fall in that load module (they stay raw addresses). Every value of a ``.hpcrun`` profile sits at a CCT
node, and every node names its load module, so the share is a sum of point values by module over all
profiles, for one metric: the first of the profiles' metric table with values (hpcrun lists the sampling
source first, e.g. ``CPUTIME (sec)``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from hpcsa.core.dataclass import dataclass
from hpcsa.formats.measurement.hpcrun_batch import read_hpcrun_batch

#: Profiles read at a time (the batch reader's checks run once per batch).
BATCH = 256


@dataclass
class ModuleShares:
    """One metric's values summed by load-module path over a measurement's profiles."""

    metric: str
    total: float
    by_path: dict[str, float]

    def share(self, path: str) -> float:
        """The fraction of the metric's total that falls in the load module at ``path`` (0 when none)."""
        return self.by_path.get(path, 0.0) / self.total if self.total > 0 else 0.0

    def describe(self, path: str) -> str:
        """``86.2 % of CPUTIME (sec)``, as a warning names it."""
        share = 100.0 * self.share(path)
        text = f"{share:.1f}" if share >= 0.1 or share == 0 else "< 0.1"
        return f"{text} % of {self.metric}"


def module_shares(profiles: Sequence[str | os.PathLike[str]]) -> ModuleShares | None:
    """The values of ``profiles`` (``.hpcrun`` files) by load module, for the first metric with values; None
    where no profile has a value. Each metric is summed by name across the profiles (their tables may
    differ in order)."""
    sums: dict[str, dict[str, float]] = {}   # metric name -> load-module path -> sum
    order: list[str] = []                    # metric names in the order the profiles list them
    paths = list(profiles)
    for at in range(0, len(paths), BATCH):
        for prof in read_hpcrun_batch(paths[at:at + BATCH]).profiles:
            names = [m.name for m in prof.metrics]
            order += [n for n in names if n not in sums]
            for n in names:
                sums.setdefault(n, {})
            if not len(prof.values):
                continue
            nodes = prof.value_nodes().astype(np.int64)
            node_ids = prof.cct["id"].astype(np.int64)
            sorter = np.argsort(node_ids)
            lm_of_value = prof.cct["lm_id"][sorter[np.searchsorted(node_ids, nodes, sorter=sorter)]].astype(np.int64)
            metric = prof.values["metric"].astype(np.int64)
            value = prof.value_floats()
            lm_path = {lm.id: lm.path for lm in prof.loadmap}
            key = metric * (int(lm_of_value.max()) + 1) + lm_of_value
            uniq, inverse = np.unique(key, return_inverse=True)
            totals = np.bincount(inverse, weights=value, minlength=len(uniq))
            width = int(lm_of_value.max()) + 1
            for k, total in zip(uniq.tolist(), totals.tolist(), strict=True):
                name = names[k // width]
                path = lm_path.get(k % width, "")
                sums[name][path] = sums[name].get(path, 0.0) + total
    for name in order:
        total = sum(sums[name].values())
        if total > 0:
            return ModuleShares(name, total, sums[name])
    return None
