"""``hpcsa scaling DB_P DB_Q``: scaling loss per context between two runs (weak or strong scaling)."""

from __future__ import annotations

import argparse
import csv
import json
import sys

from hpcsa.views.experiment import open_experiment
from hpcsa.views.render import notation
from hpcsa.views.scaling import MODES, scaling_loss
from hpcsa.views.show import default_columns


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("smaller", help="database of the run on p units")
    parser.add_argument("larger", help="database of the run on q units")
    parser.add_argument("--mode", default="weak", choices=MODES,
                        help="weak: expected cost per unit unchanged; strong: expected = cost x p/q (default weak)")
    parser.add_argument("--metric", "-m", help="metric (default: the first with data in the smaller run)")
    parser.add_argument("-p", type=int, help="units of the first run (default: its ranks, or threads if one rank)")
    parser.add_argument("-q", type=int, help="units of the second run")
    parser.add_argument("--top", type=int, default=20, help="contexts to list (default 20)")
    parser.add_argument("--format", "-f", default="text", choices=("text", "json", "csv"))


def run(args: argparse.Namespace) -> int:
    ep, eq = open_experiment(args.smaller), open_experiment(args.larger)
    metric = args.metric or default_columns(ep, False)[0].name
    res = scaling_loss(ep, eq, metric, args.mode, args.p, args.q)
    ranked = res.ranked(args.top or None).tolist()
    rows = [{"context": res.label(k), "cost_p": res.cost_p[k], "cost_q": res.cost_q[k], "expected": res.expected[k],
             "loss": res.loss[k], "loss_pct": res.loss_percent[k], "loss_exclusive": res.loss_exclusive[k]}
            for k in ranked]
    if args.format == "json":
        sys.stdout.write(json.dumps({"metric": res.metric, "mode": res.mode, "p": res.p, "q": res.q,
                                     "total_q_per_unit": res.total_q, "contexts": rows}, indent=1) + "\n")
        return 0
    if args.format == "csv":
        w = csv.DictWriter(sys.stdout, fieldnames=list(rows[0]) if rows else ["context"], lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
        return 0
    out = [f"scaling loss of {res.metric}, {res.mode} scaling, p = {res.p} -> q = {res.q} units "
           f"(per unit; expected = cost at p{' x p/q' if res.mode == 'strong' else ''})", "",
           f"{'loss (I)':>9} {'% of q':>7} {'loss (E)':>9} {'at p':>8} {'at q':>8} {'expected':>9}  context"]
    write = {k: notation(r[k] for r in rows) for k in ("loss", "loss_exclusive", "cost_p", "cost_q", "expected")}
    for r in rows:  # one notation per column
        out.append(f"{write['loss'](r['loss']):>9} {r['loss_pct']:>6.1f}% "
                   f"{write['loss_exclusive'](r['loss_exclusive']):>9} "
                   f"{write['cost_p'](r['cost_p'], '0'):>8} {write['cost_q'](r['cost_q'], '0'):>8} "
                   f"{write['expected'](r['expected'], '0'):>9}  {r['context']}")
    if not rows:
        out.append("(no context scales worse than expected)")
    sys.stdout.write("\n".join(out) + "\n")
    return 0
