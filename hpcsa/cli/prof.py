"""``hpcsa prof``: aggregate measurement directories into an HPCToolkit database (like hpcprof).

Started by an MPI launcher (``mpiexec -n R hpcsa prof ...``), it runs as hpcprof-mpi does, every rank
taking part (:mod:`.mpi`); the database is the same, byte for byte, as a single-process run's.
"""

from __future__ import annotations

import argparse
import sys

from hpcsa.aggregate import driver, mpi
from hpcsa.aggregate.copy_sources import parse_replacements
from hpcsa.aggregate.inputs import (
    Inputs,
    Measurement,
    find_inputs,
    measurement,
    merge_measurements,
    with_measurement,
)
from hpcsa.aggregate.metrictable import STATISTIC_WORDS, parse_statistics
from hpcsa.aggregate.transport import unwrap
from hpcsa.core.errors import HpcsaError
from hpcsa.core.outputs import check_directory_output
from hpcsa.core.workers import default_jobs, tune_allocator
from hpcsa.formats.hpcstruct import parsedcache


def register(parser: argparse.ArgumentParser) -> None:
    parser.epilog = (f"{parser.epilog or ''}\n  mpiexec -n 4 hpcsa prof prog.m -o prog.d -j 8   "
                     "# over MPI (pip install 'hpcsa[mpi]'): 4 ranks of 8 workers, the same database")
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
    parser.add_argument("--binaries", metavar="DIR", action="append", default=[],
                        help="a folder to look in, by file name, for binaries that are not at the path the "
                        "measurement recorded (moved, or measured on another machine); repeatable")
    parser.add_argument("-R", "--replace-path", metavar="OLD=NEW", action="append", default=[],
                        help="look for source files named OLD/... at NEW/... (repeatable; first match wins)")
    parser.add_argument("--no-source", action="store_true",
                        help="do not copy source files into the database's src/ (for viewers' source panes)")


def run(args: argparse.Namespace) -> int:
    tune_allocator()  # batches reuse freed blocks; arrays as long as the profiles go back to the system
    announced = mpi.launched()
    if announced is not None and (announced[1] != 1 or mpi.available()):
        return run_mpi(args, announced[0])
    jobs = args.jobs if args.jobs is not None else default_jobs()
    inputs, options = prepare(args, jobs)
    _note_cache(inputs)
    driver.aggregate(inputs, options)
    sys.stdout.flush()
    return 0


def _note_cache(inputs: Inputs) -> None:
    """One line where the parsed-structure cache the user named cannot be used (runs stay correct, and slow)."""
    if inputs.structs:
        problem = parsedcache.explicit_cache_problem()
        if problem:
            print(f"hpcsa: note: {problem}", file=sys.stderr)


def prepare(args: argparse.Namespace, jobs: int, share: tuple[int, int] = (0, 1)
            ) -> tuple[Inputs, driver.Options]:
    if jobs < 1:
        raise HpcsaError(None, f"-j {jobs}: the number of workers must be at least 1")
    if args.output:
        check_directory_output(args.output)  # before the work: -o ., a file, a missing directory
    inputs = find_inputs(args.measurements, args.structure, ignore_structs=args.ignore_structs, share=share,
                         binaries=args.binaries)
    options = driver.Options(output=args.output, jobs=jobs, statistics=parse_statistics(args.metric),
                             traces=not args.no_traces, fallback=not args.no_binaries,
                             sources=not args.no_source, replace_paths=parse_replacements(args.replace_path))
    return inputs, options


def prepare_on_ranks(args: argparse.Namespace, jobs: int, transport: mpi.MpiTransport
                     ) -> tuple[Inputs, driver.Options]:
    """Every rank lists the inputs itself and measures its share of the profiles (a stat(2) pair per profile
    is most of the time a listing takes); the sizes meet at rank 0, which checks that every rank listed the
    same files, and are broadcast. Rank 0 alone would list and measure everything while the others wait."""
    mine: list[tuple[Inputs, driver.Options]] = []

    def local() -> Measurement:
        mine.append(prepare(args, jobs, share=(transport.rank, transport.size)))
        return measurement(mine[0][0])

    found = transport.reduce(local, merge_measurements)
    merged = transport.bcast(lambda: unwrap(found))
    inputs, options = mine[0]
    return with_measurement(inputs, merged), options


def run_mpi(args: argparse.Namespace, launcher_rank: int) -> int:
    """One rank of ``mpiexec -n R hpcsa prof``: errors every rank agrees on are printed once, by rank 0
    (the others exit with the same status, silently: :meth:`~hpcsa.aggregate.mpi.MpiTransport.fail_together`);
    any other failure aborts all ranks."""
    # Workers per rank: the CPUs of this node shared by its ranks (hpcprof-mpi: threads per rank).
    jobs = args.jobs if args.jobs is not None else max(1, default_jobs() // mpi.ranks_on_this_node())
    try:
        transport = mpi.MpiTransport.from_environment(arity=jobs)
    except HpcsaError:
        if launcher_rank == 0:
            raise
        return 2
    try:
        inputs, options = prepare_on_ranks(args, jobs, transport)
        if transport.is_root:
            _note_cache(inputs)
        driver.aggregate(inputs, options, transport)
    except HpcsaError as exc:
        transport.close()
        transport.fail_together(f"hpcsa: error: {exc}", 2)  # several ranks: does not return
        if transport.is_root:
            raise
        return 2
    except BaseException as exc:
        mpi.report_and_abort(transport, exc)
    transport.close()
    sys.stdout.flush()
    return 0
