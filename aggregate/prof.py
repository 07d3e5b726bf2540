"""``hpcsa prof``: aggregate measurement directories into an HPCToolkit database (like hpcprof)."""

from __future__ import annotations

import argparse
import sys

from hpcsa.errors import HpcsaError

from . import lexical, pipeline
from .measurement import find_inputs
from .metrictable import STATISTIC_WORDS, parse_statistics
from .workers import default_jobs


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("measurements", metavar="MEASDIR", nargs="+",
                        help="measurement directories (or .hpcrun files); their structs/ are used")
    parser.add_argument("-o", "--output", metavar="DB",
                        help="database directory to write (default: hpctoolkit-<program>-database)")
    parser.add_argument("-S", "--structure", metavar="STRUCT", action="append", default=[],
                        help="a structure file (or a directory of them) to use as well; repeatable")
    parser.add_argument("-j", "--jobs", type=int, default=None, metavar="N",
                        help="worker processes (default: the CPUs available)")
    parser.add_argument("-M", "--metric", metavar="STATS", action="append", default=None,
                        help=f"summary statistics: {', '.join(STATISTIC_WORDS)} (comma-separated or "
                        "repeated; default sum)")
    parser.add_argument("--ignore-structs", action="store_true",
                        help="do not use the structure files of the measurement directories")
    parser.add_argument("--no-traces", action="store_true", help="do not write trace.db")
    parser.add_argument("--no-binaries", action="store_true",
                        help="never read a binary in place of a missing structure file")


def run(args: argparse.Namespace) -> int:
    jobs = args.jobs if args.jobs is not None else default_jobs()
    if jobs < 1:
        raise HpcsaError(None, f"-j {jobs}: the number of workers must be at least 1")
    inputs = find_inputs(args.measurements, args.structure, ignore_structs=args.ignore_structs)
    options = pipeline.Options(output=args.output, jobs=jobs, statistics=parse_statistics(args.metric),
                      traces=not args.no_traces, fallback=not args.no_binaries)
    result = pipeline.run(inputs, options)
    lexical.warn(result.warnings)
    sys.stdout.flush()
    return 0
