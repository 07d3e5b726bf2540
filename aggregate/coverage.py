"""What a database attributes to load modules that ``hpcsa prof`` knew nothing about, for the warning that says so.

A load module without a structure file, a binary that could be read in its place, or kernel symbols keeps its
samples as raw addresses (``prog+0x34af``): the database is complete, but that part of it cannot be read as
code. The summary profile says how much: the ``point`` sums of the first metric with values, at the contexts
of those modules, against its sum over every context. Read from the finished database (its meta.db and the
summary profile of profile.db), only when such modules exist.
"""

from __future__ import annotations

import os

import numpy as np

from hpcsa.formats.db import metadb
from hpcsa.formats.db.database import META, PROFILE
from hpcsa.formats.db.metadb_model import COMBINE_CODE
from hpcsa.formats.db.profiledb import ProfileDB

#: Shares below this are named together in one line, not one line each.
NAMED_FROM = 0.001
FIX = "give its structure file with -S, or the folder that holds the binary with --binaries DIR"


def unattributed_shares(db_path: str, modules: list[str]) -> tuple[str, dict[str, float]] | None:
    """(metric, share of its total per module of ``modules``), from the database at ``db_path``; None where no
    metric has values."""
    meta = metadb.read_metadb(os.path.join(db_path, META))
    if meta.contexts is None or not modules:
        return None
    summary = ProfileDB(os.path.join(db_path, PROFILE)).summary()
    point = next((i for i, s in enumerate(meta.scopes) if s.name == "point"), None)
    if point is None:
        return None
    ctx = summary.value_ctx_ids().astype(np.int64)
    order = np.argsort(meta.contexts.ctx_id, kind="stable")
    ids = meta.contexts.ctx_id[order].astype(np.int64)
    at = np.minimum(np.searchsorted(ids, ctx), max(len(ids) - 1, 0))
    found = ids[at] == ctx if len(ids) else np.zeros(len(ctx), bool)
    module_of = np.where(found, meta.contexts.module[order][at], -1) if len(ids) else np.full(len(ctx), -1)
    index = {path: i for i, path in enumerate(meta.modules)}
    wanted = {m: index[m] for m in modules if m in index}
    for metric in meta.metrics:
        stat = next((s.stat_metric_id for s in metric.summaries
                     if s.scope == point and s.formula == "$$" and s.combine == COMBINE_CODE["sum"]), None)
        if stat is None:
            continue
        mine = summary.metric_ids == stat
        total = float(summary.values[mine].sum())
        if total > 0:
            return metric.name, {m: float(summary.values[mine & (module_of == i)].sum()) / total
                                 for m, i in wanted.items()}
    return None


def coverage_warnings(db_path: str, modules: list[str]) -> list[str]:
    """One warning per module of ``modules`` with samples, largest share first (those under
    :data:`NAMED_FROM` together), naming the share of the samples that stayed raw addresses and the fix."""
    found = unattributed_shares(db_path, modules)
    if found is None:
        return []
    metric, shares = found
    ranked = sorted(((share, m) for m, share in shares.items() if share > 0), key=lambda sm: (-sm[0], sm[1]))
    out = [f"{100 * share:.1f} % of {metric} falls in {m}, which has no structure file, readable binary or "
           f"symbols here, so its samples stay addresses: {FIX}" for share, m in ranked if share >= NAMED_FROM]
    small = [(share, m) for share, m in ranked if share < NAMED_FROM]
    if small:
        names = ", ".join(os.path.basename(m) for _, m in small[:4]) + (", ..." if len(small) > 4 else "")
        out.append(f"{len(small)} more load modules without a structure file, readable binary or symbols hold "
                   f"< 0.1 % of {metric} each ({100 * sum(s for s, _ in small):.2f} % together: {names})")
    return out
