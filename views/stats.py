"""``hpcsa stats``: how sparse a database is, in the columns of Table 2 of Anderson et al.,
"Preparing for Performance Analysis at Exascale" (ICS 2022).

- context density: per profile, the % of the database's context ids with at least one non-zero value,
  averaged over the profiles;
- metric density: per profile, the % of non-zero values among the (context, metric) cells of the contexts it
  has, averaged over the profiles (metrics = the propagated metric columns of thread profiles);
- dense size: what a dense tensor profiles x context ids x metric columns of 8-byte values would take (as
  HPCToolkit's earlier dense metric databases stored them);
- sparse size: profile.db (the paper's PMS), with cct.db and the whole database beside it.

Everything comes from the profile infos (value and context counts), without reading a value. "contexts" is
the count every command prints (:func:`hpcsa.formats.db.database.context_count`: meta.db's entry points and
contexts), beside the context ids (elided instruction contexts included) that the densities are of.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from hpcsa.views.experiment import Experiment

MIB = 1 << 20


def database_stats(exp: Experiment) -> dict[str, Any]:
    db = exp.db
    pdb = db.profiles
    n_ids = db.n_ctx_ids()
    prop_ids = sorted({i.prop_metric_id for m in exp.meta.metrics for i in m.scope_insts})
    stat_ids = sorted({s.stat_metric_id for m in exp.meta.metrics for s in m.summaries})
    threads = np.arange(1, len(pdb))
    n_ctxs = pdb.n_ctxs[threads].astype(np.float64)
    n_vals = pdb.n_values[threads].astype(np.float64)
    ctx_density = 100.0 * n_ctxs / max(n_ids, 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        met_density = np.where(n_ctxs > 0, 100.0 * n_vals / (n_ctxs * max(len(prop_ids), 1)), 0.0)
    sizes = {f: os.path.getsize(os.path.join(exp.path, f)) for f in ("meta.db", "profile.db", "cct.db", "trace.db")
             if os.path.isfile(os.path.join(exp.path, f))}
    dense = 8 * (len(threads) * n_ids * len(prop_ids) + n_ids * len(stat_ids))
    gpu = sum(1 for p in exp.profiles if p.gpu)
    return {
        "database": exp.path, "contexts": db.n_contexts(),
        "context_ids": n_ids, "profiles": len(threads), "cpu_profiles": len(threads) - gpu, "gpu_profiles": gpu,
        "metrics": len(exp.meta.metrics), "metric_columns": len(prop_ids), "summary_columns": len(stat_ids),
        "values": int(n_vals.sum()), "summary_values": int(pdb.n_values[0]) if len(pdb) else 0,
        "context_density_pct": float(ctx_density.mean()) if len(threads) else 0.0,
        "metric_density_pct": float(met_density.mean()) if len(threads) else 0.0,
        "dense_bytes": dense, "sparse_bytes": sizes.get("profile.db", 0), "file_bytes": sizes,
        "compression": dense / max(sizes.get("profile.db", 1), 1),
    }


def stats_text(stats: dict[str, Any]) -> str:
    s = stats
    lines = [
        f"{s['database']}",
        f"  contexts {s['contexts']:,} ({s['context_ids']:,} context ids), metrics {s['metrics']} "
        f"({s['metric_columns']} columns per profile, {s['summary_columns']} summary columns)",
        f"  profiles {s['profiles']:,} ({s['cpu_profiles']:,} CPU threads, {s['gpu_profiles']:,} GPU streams), "
        f"{s['values']:,} non-zero values (+{s['summary_values']:,} in the summary)",
        "",
        f"  {'':24}{'Density (%)':>22}{'Size (MiB)':>24}",
        f"  {'':24}{'Contexts':>11}{'Metrics':>11}{'Dense':>12}{'Sparse':>12}",
        f"  {os.path.basename(s['database'].rstrip('/'))[:24]:24}{s['context_density_pct']:>11.1f}"
        f"{s['metric_density_pct']:>11.1f}{s['dense_bytes'] / MIB:>12.3f}{s['sparse_bytes'] / MIB:>12.3f}",
        "",
        "  sparse/dense: " + (f"{s['compression']:.1f}x smaller" if s["compression"] >= 1 else
                             f"{1 / s['compression']:.2f}x larger"),
        "  files: " + ", ".join(f"{k} {v:,} B" for k, v in s["file_bytes"].items()),
    ]
    return "\n".join(lines) + "\n"
