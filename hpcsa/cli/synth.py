"""``hpcsa synth``: write a synthetic measurement directory of any size (:mod:`hpcsa.ingest.synth.program`)."""

from __future__ import annotations

import argparse
import time

from hpcsa.core.errors import HpcsaError
from hpcsa.core.outputs import MEASUREMENT, check_directory_output
from hpcsa.ingest.synth.directory import generate
from hpcsa.ingest.synth.program import SynthSpec


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("output", metavar="MEASDIR", help="measurement directory to write (replaced if it exists)")
    parser.add_argument("-n", "--profiles", type=int, default=64,
                        help="profiles: CPU threads plus GPU streams (default 64)")
    parser.add_argument("--gpu", action="store_true",
                        help="GPU-like set: per rank a CPU thread with GPU operations and a GPU stream; "
                        "1 CPU + 63 GPU metrics")
    parser.add_argument("--threads-per-rank", type=int, metavar="T",
                        help="CPU threads per rank (default 16, with --gpu 1)")
    parser.add_argument("--streams-per-rank", type=int, metavar="S", help="GPU streams per rank (with --gpu; default 1)")
    parser.add_argument("--contexts", type=int, metavar="N",
                        help=f"calling contexts of the program (default {SynthSpec.contexts}, with --gpu "
                        f"{SynthSpec.preset('gpu', 1).contexts})")
    parser.add_argument("--samples", type=int, default=SynthSpec.samples,
                        help=f"trace records per profile (default {SynthSpec.samples})")
    parser.add_argument("--seed", type=int, default=0, help="the same seed gives the same files (default 0)")
    parser.add_argument("--no-structs", action="store_true", help="do not write structs/*.hpcstruct")
    parser.add_argument("--no-traces", action="store_true", help="do not write .hpctrace files")
    parser.add_argument("-j", "--jobs", type=int, default=1, metavar="N", help="worker processes (default 1)")


def run(args: argparse.Namespace) -> int:
    for name, value, least in (("--profiles", args.profiles, 1), ("--contexts", args.contexts, 8),
                               ("--samples", args.samples, 1), ("-j", args.jobs, 1),
                               ("--threads-per-rank", args.threads_per_rank, 0),
                               ("--streams-per-rank", args.streams_per_rank, 0)):
        if value is not None and value < least:
            raise HpcsaError(None, f"{name} {value}: must be at least {least}")
    changes = {k: v for k, v in (("threads_per_rank", args.threads_per_rank), ("contexts", args.contexts),
                                 ("streams_per_rank", args.streams_per_rank)) if v is not None}
    spec = SynthSpec.preset("gpu" if args.gpu else "cpu", args.profiles,
                            samples=args.samples, seed=args.seed, structs=not args.no_structs,
                            traces=not args.no_traces, **changes)
    if spec.per_rank < 1:
        raise HpcsaError(None, "a rank needs at least one thread or stream")
    if not spec.gpu and args.streams_per_rank:
        raise HpcsaError(None, "--streams-per-rank needs --gpu")
    check_directory_output(args.output, MEASUREMENT)
    start = time.monotonic()
    r = generate(args.output, spec, jobs=args.jobs)
    kinds = f"{r.threads} CPU threads" + (f", {r.streams} GPU streams" if r.streams else "")
    print(f"hpcsa synth: {r.profiles} profiles ({kinds}; {r.ranks} ranks), {r.metrics} metrics, "
          f"{r.program_contexts} program contexts, {r.bytes / 1e6:.1f} MB; densities: contexts "
          f"{r.context_density:.1f}%, metrics {r.metric_density:.1f}% -> {args.output} "
          f"in {time.monotonic() - start:.2f} s")
    return 0
