"""``hpcsa stats DB``: context and metric density, dense vs sparse size (Table 2 of Anderson et al.,
"Preparing for Performance Analysis at Exascale", ICS 2022)."""

from __future__ import annotations

import argparse
import json
import sys

from hpcsa.views.experiment import open_experiment
from hpcsa.views.stats import database_stats, stats_text


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("database", nargs="+", help="database directories")
    parser.add_argument("--format", "-f", default="text", choices=("text", "json"))


def run(args: argparse.Namespace) -> int:
    stats = [database_stats(open_experiment(d)) for d in args.database]
    if args.format == "json":
        sys.stdout.write(json.dumps(stats if len(stats) > 1 else stats[0], indent=1) + "\n")
    else:
        sys.stdout.write("\n".join(stats_text(s) for s in stats))
    return 0
