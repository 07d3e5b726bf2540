"""``hpcsa aggregate-threads DB --strategy sum|set|key|calltree -o DB2``: per-process thread aggregation."""

from __future__ import annotations

import argparse
import collections
import os

from hpcsa.core.outputs import check_directory_output
from hpcsa.core.progress import Progress
from hpcsa.views.experiment import open_experiment
from hpcsa.views.threads import STRATEGIES, aggregate_threads, db_size


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("database", help="database directory")
    parser.add_argument("--strategy", "-s", choices=STRATEGIES, default="sum",
                        help="sum: one profile per process and class; set: plus min/max/count/sum of squares; "
                        "key: initial, slowest, fastest thread and the rest summed; calltree: one profile per "
                        "set of threads with the same visited contexts (default: sum)")
    parser.add_argument("--output", "-o", required=True, help="the new database directory")
    parser.add_argument("--work-metric", metavar="M", help="key: the metric that ranks threads by their work time "
                        "(default: the first time metric with data)")


def run(args: argparse.Namespace) -> int:
    check_directory_output(args.output)
    progress = Progress(f"aggregate-threads ({args.strategy})")
    exp = open_experiment(args.database)
    profiles = aggregate_threads(exp, args.output, args.strategy, args.work_metric)
    before, after = db_size(exp.path), db_size(os.fspath(args.output))
    roles = collections.Counter(p.role.split(" ")[0] if p.role.startswith("cluster") else p.role for p in profiles)
    processes = len({p.process for p in profiles})
    plural = "process" if processes == 1 else "processes"
    progress.finish(f"{args.output}: {len(exp.profiles)} profiles -> {len(profiles)} ({processes} {plural}; "
                    f"{', '.join(f'{n} {r}' for r, n in sorted(roles.items()))}); {before:,} -> {after:,} bytes "
                    f"(compression {before / max(after, 1):.2f}x)")
    return 0
