"""``hpcsa gpucct MEASFILE.hpcrun [-S STRUCT ...]``: the GPU calling contexts reconstructed from one file's flat
PC samples (:mod:`hpcsa.gpucct.show`)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

from hpcsa.core.errors import HpcsaError
from hpcsa.core.progress import Progress
from hpcsa.formats.measurement.hpcrun import read_hpcrun
from hpcsa.gpucct.launches import WEIGHT_METRIC, launch_contexts
from hpcsa.gpucct.model import UNKNOWN_CALLER_NAME
from hpcsa.gpucct.reconstruct import DEFAULT_MAX_POINTS, reconstruct
from hpcsa.gpucct.show import StructureFinder, choose_metric, function_name, render


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("measurement", metavar="MEASFILE.hpcrun", help="one hpcrun measurement file")
    parser.add_argument("-S", "--structure", action="append", default=[], metavar="STRUCT",
                        help="structure file of a GPU binary (repeatable); default: the measurement "
                        "directory's structs/<gpubin>*.hpcstruct")
    parser.add_argument("-m", "--metric", default=None,
                        help=f"metric to show (default {WEIGHT_METRIC}, else the first with values)")
    parser.add_argument("--pcs", action="store_true", help="list every sample pc, not only a line per function")
    parser.add_argument("--max-points", type=int, default=DEFAULT_MAX_POINTS, metavar="N",
                        help="budget of placed sample points per launch context; the lightest call paths "
                        f"beyond it are shown flat under <more call paths> (default {DEFAULT_MAX_POINTS:,})")


def run(args: argparse.Namespace) -> int:
    progress = Progress("gpucct")
    prof = read_hpcrun(args.measurement)
    metric = choose_metric(prof, args.metric, args.measurement)
    structures = StructureFinder(Path(args.measurement), [Path(p) for p in args.structure])
    contexts = launch_contexts(prof)
    lm_path = {lm.id: lm.path for lm in prof.loadmap}
    placed = unknown = 0
    print(f"{args.measurement}: {len(contexts)} GPU launch context(s); metric {prof.metrics[metric].name}")
    for ctx in contexts:
        for lm_id in ctx.modules:
            path = lm_path.get(lm_id)
            if path is None:
                raise HpcsaError(args.measurement, f"samples name load module {lm_id}, which is not in the "
                                 "load map")
            graph, source = structures.graph(path)
            samples = ctx.all_samples(lm_id)
            if samples is None:
                continue
            kernels = ctx.kernels.get(lm_id, {})
            rec = reconstruct(graph, samples, kernels, max_points=args.max_points)
            column = np.flatnonzero(ctx.metrics == metric)
            placed += rec.stats.points
            unknown += rec.stats.unknown_points
            print()
            launches = ", ".join(f"{function_name(graph, e)} x{n:g}" for e, n in sorted(kernels.items()))
            print(f"<gpu kernel> (CCT node {ctx.node}) in {os.path.basename(path)}: launches "
                  f"{launches or 'none recorded'}")
            print(f"  call graph: {source}")
            if not len(column):
                print(f"  (no {prof.metrics[metric].name} values under this launch context)")
                continue
            for line in render(graph, rec, int(column[0]), pcs=args.pcs):
                print("  " + line)
        progress.advance()
    sys.stdout.flush()
    progress.finish(f"gpucct: {len(contexts)} launch context(s), {placed} sample pcs placed "
                    f"({unknown} under {UNKNOWN_CALLER_NAME})")
    return 0
