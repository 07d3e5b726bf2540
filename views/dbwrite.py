"""Write a whole new database from thread profiles (thread aggregation, synthetic databases).

The summary profile is computed by the database format's own rule
(:mod:`hpcsa.formats.db.summary`: every summary statistic of meta.db is a
partial combined over the profiles; profiles without a value take no part).
All files go through the aggregate package's writers, into a directory that
appears only when complete.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from hpcsa.core.dataclass import dataclass
from hpcsa.core.outputs import atomic_dir, write_file
from hpcsa.formats.db import cctdb, metadb, metricsyaml, profiledb, summary, tracedb
from hpcsa.formats.db.profiledb import ProfileValues


@dataclass
class Profile:
    """One non-summary profile: its identifier tuple and values (propMetricIds)."""

    id_tuple: np.ndarray
    values: ProfileValues


def summary_profile(meta: metadb.MetaDB, profiles: Sequence[ProfileValues]) -> ProfileValues:
    """The summary profile (statMetricIds) of ``profiles`` under meta.db's summary statistics."""
    # (formula, combine) -> list of (prop id, stat id)
    kinds: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for m in meta.metrics:
        prop = {inst.scope: inst.prop_metric_id for inst in m.scope_insts}
        for s in m.summaries:
            if s.scope in prop:
                kinds.setdefault((s.formula, s.combine), []).append((prop[s.scope], s.stat_metric_id))
    if not profiles or not kinds:
        return ProfileValues.empty()
    ctx = np.concatenate([p.value_ctx_ids() for p in profiles]).astype(np.int64)
    met = np.concatenate([p.metric_ids for p in profiles]).astype(np.int64)
    val = np.concatenate([p.values for p in profiles])
    out_ctx, out_met, out_val = [], [], []
    for (formula, combine), pairs in sorted(kinds.items()):
        if formula not in summary.PARTIALS or combine not in metadb.COMBINE:
            raise ValueError(f"cannot compute the summary partial {formula!r} combined by {combine}")
        pending = list(pairs)
        while pending:  # a prop id feeding two stats of one kind: one more round
            layer: list[tuple[int, int]] = []
            seen: set[int] = set()
            rest: list[tuple[int, int]] = []
            for p, st in pending:
                (rest if p in seen else layer).append((p, st))
                seen.add(p)
            pending = rest
            stat_of = np.full(max(int(met.max(initial=0)), max(p for p, _ in layer)) + 1, -1, np.int64)
            for p, st in layer:
                stat_of[p] = st
            sel = stat_of[met] >= 0
            if not sel.any():
                continue
            stat = stat_of[met[sel]]
            key = ctx[sel] * 65536 + stat
            order = np.argsort(key, kind="stable")
            key, v = key[order], val[sel][order]
            starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
            red = summary.combine_runs(v, starts, formula, metadb.COMBINE[combine])
            out_ctx.append(key[starts] // 65536)
            out_met.append(key[starts] % 65536)
            out_val.append(red)
    if not out_ctx:
        return ProfileValues.empty()
    return ProfileValues.from_triples(np.concatenate(out_ctx), np.concatenate(out_met), np.concatenate(out_val))


def write_from_profiles(path: str | os.PathLike[str], meta: metadb.MetaDB, profiles: Sequence[Profile], *,
                   n_ctx_ids: int, taxonomy: metricsyaml.MetricsTaxonomy | None = None,
                   traces: Sequence[tuple[int, np.ndarray]] = (), time_range: tuple[int, int] | None = None,
                   extra_files: dict[str, str] | None = None, summary: ProfileValues | None = None) -> None:
    """Write meta.db, profile.db (profiles 1.., summary computed unless given), cct.db (transposed), trace.db
    (``traces``: (profile index, elements)) and metrics/default.yaml into a new directory ``path``."""
    if summary is None:
        summary = summary_profile(meta, [p.values for p in profiles])
    with atomic_dir(path) as tmp:
        metadb.write_metadb(os.path.join(tmp, "meta.db"), meta)
        with profiledb.ProfileDBWriter(os.path.join(tmp, "profile.db"), [p.id_tuple for p in profiles]) as w:
            for i, p in enumerate(profiles, start=1):
                w.write_profile(i, p.values)
            w.write_summary(summary)
        cctdb.write_cctdb_from_profiledb(os.path.join(tmp, "profile.db"), os.path.join(tmp, "cct.db"), n_ctx_ids)
        if traces:
            with tracedb.TraceDBWriter(os.path.join(tmp, "trace.db"), [i for i, _ in traces],
                                       time_range=time_range) as tw:
                for slot, (_, line) in enumerate(traces):
                    tw.write_trace(slot, line)
        if taxonomy is not None:
            os.makedirs(os.path.join(tmp, "metrics"))
            metricsyaml.write_metrics_yaml(os.path.join(tmp, "metrics", "default.yaml"), taxonomy)
        for name, text in (extra_files or {}).items():
            write_file(os.path.join(tmp, name), text)


#: A new metric's summaries as (scope name, summary, its metrics/default.yaml input).
SummaryInputs = list[tuple[str, Any, metricsyaml.Input]]


def extended_taxonomy(source: Any, meta: metadb.MetaDB, first_new: int,
                      root: Callable[[Any, SummaryInputs], dict[str, Any]]) -> metricsyaml.MetricsTaxonomy:
    """The source database's default.yaml (or hpcprof's standard one for its metrics) with an input per
    summary of each metric from ``first_new`` on, and the root entry ``root`` makes for that metric."""
    names = [s.name for s in meta.scopes]
    if source.db.metrics is not None:
        doc = dict(source.db.metrics.document)
        inputs, roots = list(doc.get("inputs") or []), list(doc.get("roots") or [])
    else:
        old = metricsyaml.standard_taxonomy([metricsyaml.MetricSpec(m.name, m.name) for m in source.meta.metrics])
        doc = {"version": metricsyaml.VERSION}
        inputs, roots = list(old.inputs), list(old.roots)
    for m in meta.metrics[first_new:]:
        summaries: SummaryInputs = []
        for s in m.summaries:
            inp = metricsyaml.Input(m.name, names[s.scope], s.formula, metadb.COMBINE[s.combine])
            inputs.append(inp)
            summaries.append((names[s.scope], s, inp))
        roots.append(root(m, summaries))
    doc["inputs"], doc["roots"] = inputs, roots
    return metricsyaml.MetricsTaxonomy(doc)
