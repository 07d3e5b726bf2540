"""``hpcsa demo``: the pipeline on the project's own fixtures, end to end, in under a minute.

It grows with the stages: today it reads the bundled measurement and prints what it holds.
"""

from __future__ import annotations

import argparse
import os
import sys

from hpcsa.progress import Progress

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures")


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-o", "--output", default="demo-out", help="where to put the demo's outputs")


def run(args: argparse.Namespace) -> int:
    from hpcsa.dumpcmd import dump_data, to_yaml

    meas = os.path.join(FIXTURES, "measurements", "tiny.m")
    progress = Progress("demo")
    data = dump_data(meas, max_values=20)
    sys.stdout.write(to_yaml({"measurement": meas, "profiles": sorted(data["files"])}))
    progress.finish(f"demo: read {len(data['files'])} measurement files from {meas}")
    return 0
