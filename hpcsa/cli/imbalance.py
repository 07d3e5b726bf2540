"""``hpcsa imbalance DB``: contexts ranked by load imbalance, or one context's distribution (text and PNG)."""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from hpcsa.core.errors import HpcsaError
from hpcsa.core.outputs import STDOUT
from hpcsa.formats.db import metricsyaml
from hpcsa.views.experiment import open_experiment
from hpcsa.views.imbalance import KINDS, distribution, imbalance_table, plot_distribution
from hpcsa.views.render import compact, notation
from hpcsa.views.show import default_columns, parse_column


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("database", help="database directory")
    parser.add_argument("--metric", "-m", help="metric (name, prefix or $n); default: the first with data")
    parser.add_argument("--scope", default="execution", choices=tuple(reversed(metricsyaml.SCOPES)),
                        help="execution = inclusive (default), lex_aware/function = exclusive")
    parser.add_argument("--profiles", default="auto", choices=KINDS,
                        help="which profiles to compare (default: the class, CPU or GPU, where the metric has data)")
    parser.add_argument("--context", "-c", metavar="SCOPE", help="show one context's distribution: a context id "
                        "(#123) or a procedure name (its heaviest instance)")
    parser.add_argument("--plot", metavar="PNG", help="with --context (or the top context): write the distribution "
                        "plot (values by profile, sorted, histogram)")
    parser.add_argument("--top", type=int, default=15, help="contexts to list (default 15)")
    parser.add_argument("--format", "-f", default="text", choices=("text", "json"))
    parser.add_argument("--full-names", action="store_true", help="show procedures by their full names (default: "
                        "C++ names without template arguments and parameter lists)")


def run(args: argparse.Namespace) -> int:
    if args.plot == STDOUT:
        raise HpcsaError(None, "--plot -: the report goes to standard output; name a PNG file for the plot")
    exp = open_experiment(args.database)
    exp.full_names = args.full_names
    col = parse_column(exp, args.metric)[0] if args.metric else default_columns(exp, False)[0]
    metric = exp.measured_metric(col.name)
    table = imbalance_table(exp, metric, args.scope, args.profiles)
    td = exp.top_down()
    ranked = [int(r) for r in table.ranked() if td.parent[r] != -2][:args.top]
    if args.context:
        rows = exp.find_rows(args.context)
        if not len(rows):
            raise HpcsaError(exp.path, f"no scope {args.context!r}")
        row = int(rows[np.argmax(table.total[rows])])
    else:
        row = ranked[0] if ranked else 0
    dist = distribution(exp, row, metric, args.scope, args.profiles)
    if args.plot:
        plot_distribution(exp, dist, args.plot, f"{td.label(row)}: {metric} over {len(dist.profiles)} profiles")
    if args.format == "json":
        doc = {"database": exp.path, "metric": metric, "scope": args.scope,
               "profiles": table.profiles.tolist(),
               "measure": "over the k profiles where the context is present: sum of (max - value) = k (max - mean)",
               "ranked": [{"ctx_id": int(exp.cct.ctx_id[r]), "label": td.label(r), "imbalance": table.imbalance[r],
                           "max": table.max[r], "mean": table.mean[r], "min": table.min[r], "stddev": table.std[r],
                           "present": int(table.count[r]), "lacking": table.lacking(r)}
                          for r in ranked],
               "context": {"ctx_id": int(exp.cct.ctx_id[row]), "label": td.label(row), **dist.stats,
                           "values": dict(zip(dist.profiles.tolist(), dist.values.tolist(), strict=True)),
                           "labels": {int(p): exp.profile_label(int(p)) for p in dist.profiles.tolist()}}}
        sys.stdout.write(json.dumps(doc, indent=1) + "\n")
        return 0
    n_set = len(table.profiles)
    out = [f"{exp.path}: load imbalance of {metric} ({args.scope}) over {n_set} profiles",
           "imbalance = over the k profiles where a context is present, sum of (max - value) = k (max - mean): "
           "the waiting if the slowest sets the pace; profiles without the context are not counted",
           "", f"{'imbalance':>10} {'max':>8} {'mean':>8} {'min':>8} {'stddev':>8} {'present':>9}  context"]
    columns = (table.imbalance, table.max, table.mean, table.min, table.std)
    wi, wx, wm, wn, ws = (notation(c[ranked]) for c in columns)  # one notation per column
    width = len(str(n_set))
    for r in ranked:
        present = f"{int(table.count[r]):>{width}}/{n_set}"
        out.append(f"{wi(table.imbalance[r]):>10} {wx(table.max[r]):>8} {wm(table.mean[r]):>8} "
                   f"{wn(table.min[r], '0'):>8} {ws(table.std[r]):>8} {present:>9}  {td.label(r)}  "
                   f"(#{exp.cct.ctx_id[r]})")
    if not ranked:
        out.append("(no context is imbalanced)")
    s = dist.stats
    out += ["", f"distribution at {td.label(row)} (#{exp.cct.ctx_id[row]}), present in {len(dist.values)} of "
            f"{dist.compared} profiles ({dist.lacking} lack it): min {compact(s['min']) or '0'}, "
            f"max {compact(s['max']) or '0'}, mean {compact(s['mean']) or '0'}, stddev {compact(s['stddev']) or '0'}, "
            f"cfvar {s['cfvar']:.2f}"]
    counts, edges = dist.histogram()
    peak = max(int(counts.max()), 1)
    edge = notation(edges)
    for c, lo, hi in zip(counts.tolist(), edges[:-1].tolist(), edges[1:].tolist(), strict=True):
        out.append(f"  [{edge(lo, '0'):>8}, {edge(hi, '0'):>8}) {'#' * round(40 * c / peak):<40} {c}")
    if args.plot:
        out.append(f"plot: {args.plot}")
    sys.stdout.write("\n".join(out) + "\n")
    return 0
