"""``hpcsa export-trace DB -o trace.json``: trace.db as Perfetto / Chrome trace JSON."""

from __future__ import annotations

import argparse

from hpcsa.core.outputs import STDOUT
from hpcsa.core.progress import Progress
from hpcsa.views.experiment import open_experiment
from hpcsa.views.perfetto import export_trace


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("database", help="database directory with a trace.db")
    parser.add_argument("--output", "-o", required=True, help="the JSON file to write (- for standard output)")
    parser.add_argument("--depth", type=int, default=64, help="call-path depth of the slices (default 64)")
    parser.add_argument("--full-names", action="store_true", help="name slices by the procedures' full names "
                        "(default: C++ names without template arguments and parameter lists)")


def run(args: argparse.Namespace) -> int:
    progress = Progress("export-trace")
    exp = open_experiment(args.database)
    exp.full_names = args.full_names
    counts = export_trace(exp, args.output, max_depth=args.depth)
    progress.finish(f"{'standard output' if args.output == STDOUT else args.output}: {counts['tracks']} tracks, {counts['samples']:,} samples, "
                    f"{counts['slices']:,} slices (open in https://ui.perfetto.dev)")
    return 0
