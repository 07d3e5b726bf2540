"""``hpcsa ingest SOURCE... -o MEASDIR``: vendor GPU records -> an HPCToolkit measurement directory."""

from __future__ import annotations

import argparse
import os
import sys

from hpcsa.core.errors import HpcsaError
from hpcsa.core.outputs import MEASUREMENT, atomic_dir, check_directory_output
from hpcsa.core.progress import Progress


def register(parser: argparse.ArgumentParser) -> None:
    from hpcsa.ingest.vendors import accepted

    parser.add_argument("sources", metavar="SOURCE", nargs="*",
                        help=f"GPU records: {accepted()}; or a directory or archive (tar, tar.gz, zip) of them "
                        "(recognised by content). Several sources are one run: each process gets its MPI rank (from "
                        "the records, else the file names, else the order given) and all go on one timeline")
    parser.add_argument("-o", "--output", metavar="MEASDIR", help="measurement directory to write")
    parser.add_argument("--binary", metavar="FILE", action="append", default=[],
                        help="executable, library, fatbin, offload bundle or cubin/code object holding the GPU code "
                        "of the run (compressed fatbin entries and CCOB bundles are decompressed): its code "
                        "is matched to the records (CUPTI cubin CRC, module, kernel symbol) and written to "
                        "gpubins/, so kernels and PC samples land at real offsets (repeatable)")
    parser.add_argument("--no-ranges", action="store_true",
                        help="do not turn NVTX / roctx / PyTorch record_function ranges into <range> frames above "
                        "the API calls made inside them")
    parser.add_argument("--stall-table", action="store_true",
                        help="print the vendor stall reason -> hpcrun stall class table (markdown) and exit")


def run(args: argparse.Namespace) -> int:
    if args.stall_table:
        from hpcsa.ingest.stalls import markdown_table

        sys.stdout.write(markdown_table())
        return 0
    if not args.sources:
        raise HpcsaError(None, "no SOURCE given (see hpcsa ingest --help)")
    if not args.output:
        raise HpcsaError(None, "no output measurement directory given (-o MEASDIR)")
    check_directory_output(args.output, MEASUREMENT)  # before reading the sources
    from hpcsa.ingest.binaries import attach_binaries
    from hpcsa.ingest.measdir import write_measurement
    from hpcsa.ingest.sources import read_sources
    from hpcsa.ingest.timeline import one_run

    progress = Progress("ingest", len(args.sources))
    traces = read_sources(args.sources)
    progress.advance(len(args.sources))
    if args.binary:
        attach_binaries(traces, args.binary)
    ranks = one_run(traces)
    out = os.path.abspath(args.output)
    with atomic_dir(out, kind=MEASUREMENT) as tmp:
        summary = write_measurement(traces, tmp, ranges=not args.no_ranges)
    sources = ", ".join(dict.fromkeys(t.source for t in traces))
    note = f"; {summary.unattributed} operation(s) whose API call is not in the source" if summary.unattributed \
        else ""
    note += f"; {ranks}" if ranks else ""
    progress.finish(f"hpcsa ingest: {args.output}: {summary.line()} from {sources}{note}")
    return 0
