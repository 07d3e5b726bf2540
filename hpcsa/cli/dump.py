"""``hpcsa dump PATH``: any HPCToolkit file or directory as YAML a person can read (:mod:`hpcsa.formats.dump`)."""

from __future__ import annotations

import argparse
import sys

from hpcsa.formats.dump import dump_data, to_yaml


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", metavar="PATH",
                        help=".hpcrun, .hpctrace, meta.db, profile.db, cct.db, trace.db, .hpcstruct, "
                        "metrics/default.yaml, or a measurement or database directory")
    parser.add_argument("--max-values", type=int, default=None, metavar="N",
                        help="show at most N values/records per section (default: all)")


def run(args: argparse.Namespace) -> int:
    data = dump_data(args.path, args.max_values)
    sys.stdout.write(to_yaml(data))
    return 0
