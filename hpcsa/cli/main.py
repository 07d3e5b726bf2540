"""The ``hpcsa`` command: one subcommand per stage of the pipeline.

Each subcommand lives in its own module that provides ``register(subparsers)``
and ``run(args) -> int``; modules are imported only when their subcommand runs,
so ``hpcsa --help`` stays fast. Any :class:`~hpcsa.core.errors.HpcsaError` becomes
one line ``hpcsa: error: <path>: <problem>`` and exit status 2; a usage error is argparse's (usage, one error
line, status 2), with a "did you mean" for a misspelt subcommand, option or choice (:class:`Parser`).
"""

from __future__ import annotations

import argparse
import atexit
import difflib
import gc
import importlib
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from hpcsa import __version__
from hpcsa.core import libdefaults, lifetime
from hpcsa.core.errors import HpcsaError
from hpcsa.core.textout import end_now, escape_streams, guard_std_streams

# name -> (module, one-line summary, example). Stages add their subcommand here.
SUBCOMMANDS: dict[str, tuple[str, str, str]] = {
    "dump": ("hpcsa.cli.dump", "print any HPCToolkit file or directory as readable YAML",
             "hpcsa dump small.d/meta.db"),
    "struct": ("hpcsa.cli.struct", "recover program structure (.hpcstruct) of a binary or a measurement's binaries",
               "hpcsa struct app.m -j 4"),
    "ingest": ("hpcsa.cli.ingest", "convert NVIDIA/AMD/Intel GPU records into an HPCToolkit measurement directory",
               "hpcsa ingest report.sqlite -o report.m"),
    "synth": ("hpcsa.cli.synth", "write a synthetic measurement directory of any size (CPU threads, GPU streams)",
              "hpcsa synth big.m -n 4096 --gpu -j 2"),
    "demo": ("hpcsa.cli.demo", "run the whole pipeline on a small CUDA application installed with hpcsa",
             "hpcsa demo -o demo-out"),
    "prof": ("hpcsa.cli.prof", "aggregate measurement directories into a database (like hpcprof)",
             "hpcsa prof prog.m -o prog.d"),
    "diff": ("hpcsa.cli.diff", "compare two databases (contexts by path, values within 16 ULP)",
             "hpcsa diff ref.d new.d"),
    "gpucct": ("hpcsa.cli.gpucct", "show the GPU calling contexts reconstructed from flat PC samples",
               "hpcsa gpucct m/prog-000000-000-a8c0-0.hpcrun"),
    "view": ("hpcsa.cli.view", "show a database's top-down, callers or flat view, hot path, derived metrics",
             "hpcsa view app.d --hot-path"),
    "aggregate-threads": ("hpcsa.cli.aggregate_threads", "aggregate a database's threads per process (sum, set, key, calltree)",
                          "hpcsa aggregate-threads app.d --strategy key -o app-key.d"),
    "imbalance": ("hpcsa.cli.imbalance", "rank contexts by load imbalance across profiles; plot a distribution",
                  "hpcsa imbalance app.d --plot imbalance.png"),
    "scaling": ("hpcsa.cli.scaling", "scaling loss per context between runs on p and q units",
                "hpcsa scaling run-64.d run-128.d --mode weak"),
    "compare": ("hpcsa.cli.compare", "N databases on one aligned tree: statistics, catalog, scaling, CI gate",
                "hpcsa compare before.d after.d --fail-if 'CPUTIME (sec):I > 5%'"),
    "stats": ("hpcsa.cli.stats", "context/metric density and dense vs sparse size of databases",
              "hpcsa stats app.d"),
    "export-trace": ("hpcsa.cli.export_trace", "write trace.db as Perfetto/Chrome trace JSON",
                     "hpcsa export-trace app.d -o app-trace.json"),
    "blame": ("hpcsa.cli.blame", "idleness, overhead and GPU idle blame from traces, as new metrics and a report",
              "hpcsa blame app.d -o app-blame.d"),
    "serve": ("hpcsa.cli.serve", "browse a database in a web browser (token-protected; ssh-tunnel friendly)",
              "hpcsa serve app.d --port 8765"),
}

EPILOG_HEAD = "examples:\n"


def did_you_mean(word: str, candidates: Sequence[str]) -> str:
    """``; did you mean 'prof'?`` for the candidate closest to a misspelt ``word`` (:mod:`difflib`'s ratio
    of at least 0.6), or an empty string."""
    close = difflib.get_close_matches(word, list(candidates), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


class Parser(argparse.ArgumentParser):
    """argparse's parser with a suggestion for a misspelt subcommand or choice (Python 3.11's argparse has
    none) and for a misspelt option (:meth:`unrecognized`); argparse's own suggestion, where a later Python
    gives one, is kept instead."""

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        try:
            super()._check_value(action, value)
        except argparse.ArgumentError as exc:
            if action.choices is None or "did you mean" in str(exc.message):
                raise
            hint = did_you_mean(str(value), [str(c) for c in action.choices])
            if not hint:
                raise
            raise argparse.ArgumentError(action, f"invalid choice: {value!r}{hint} (choose from "
                                         f"{', '.join(repr(str(c)) for c in action.choices)})") from None

    def unrecognized(self, extras: Sequence[str]) -> NoReturn:
        """argparse's error for arguments no option or positional took, with a suggestion per option."""
        options = [s for action in self._actions for s in action.option_strings]
        hints = [did_you_mean(word.split("=", 1)[0], options)[2:] for word in extras if word.startswith("-")]
        self.error(f"unrecognized arguments: {' '.join(extras)}" + "".join(f"; {h}" for h in hints if h))


def build_parser(only: str | None = None) -> tuple[Parser, dict[str, Parser]]:
    """The command's parser and its subcommands' parsers; with ``only`` (a subcommand's name), that one alone:
    each parser looks its strings up in gettext's catalogs, 5 ms for all of them, and a command parses with
    the one it runs."""
    epilog = EPILOG_HEAD + "".join(f"  {ex:<48} # {summary}\n" for _, summary, ex in SUBCOMMANDS.values())
    parser = Parser(
        prog="hpcsa",
        description="Postmortem performance analysis of GPU-accelerated HPC programs "
        "(HPCToolkit-compatible files throughout).",
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"hpcsa {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    parsers: dict[str, Parser] = {}
    for name, (_module, summary, example) in SUBCOMMANDS.items():
        if only is not None and name != only:
            continue
        parsers[name] = sub.add_parser(
            name, help=summary, description=summary[0].upper() + summary[1:] + ".",
            epilog=f"example:\n  {example}", formatter_class=argparse.RawDescriptionHelpFormatter)
    return parser, parsers


def main(argv: Sequence[str] | None = None, settle_gc: bool = False) -> int:
    """Run one command; ``settle_gc``: this process ends with it (the ``hpcsa`` command itself), so the
    subcommand's module is imported as ``_import_settled()`` does."""
    argv = list(sys.argv[1:] if argv is None else argv)
    libdefaults.set_defaults(libdefaults.BLAS_THREADS)  # before a subcommand's module loads numpy
    escape_streams()  # names that are not UTF-8 are printed escaped, never as a traceback
    # Let each subcommand declare its own options before parsing.
    command = next((a for a in argv if not a.startswith("-")), None)
    # The command's own parser alone when it comes first (``hpcsa -h prof`` lists every command).
    parser, parsers = build_parser(command if command in SUBCOMMANDS and argv[0] == command else None)
    try:  # Ctrl-C while the subcommand's modules load (a third of a short run) is the same line as later
        if command in SUBCOMMANDS:
            name = SUBCOMMANDS[command][0]
            module = _import_settled(name) if settle_gc else importlib.import_module(name)
            module.register(parsers[command])
        try:
            args, extras = parser.parse_known_args(argv)  # what parse_args does, with a suggestion for extras
            if extras:
                (parsers.get(args.command) or parser).unrecognized(extras)
        except SystemExit:  # --help, --version or a usage error, printed: out with it, or say it cannot be
            _flush_stdout()
            raise
        if not args.command:
            parser.print_help()
            _flush_stdout()
            return 2
        module = importlib.import_module(SUBCOMMANDS[args.command][0])
        code = int(module.run(args) or 0)
        _flush_stdout()  # what the command printed is out, or the failure is the command's one line
        return code
    except HpcsaError as exc:
        print(f"hpcsa: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("hpcsa: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


def _flush_stdout() -> None:
    if sys.stdout is not None:
        sys.stdout.flush()


#: Allocations between two young-generation collections while a command runs (Python's default is 700).
#: A command builds its results as many small acyclic objects (tuples of scopes, dict entries); at 700 the
#: collector ran some 130 times in a 0.4 s ``hpcsa prof``, for 25-30 ms, finding nothing to free.
GC_YOUNG_THRESHOLD = 10_000


def _import_settled(name: str) -> Any:
    """Import a subcommand's module with the cyclic garbage collector off (an import makes tens of thousands
    of objects, none of them garbage), then freeze what exists (``gc.freeze``: later collections do not walk
    the modules again) and collect young objects less often (:data:`GC_YOUNG_THRESHOLD`). For a process that
    runs one command and ends; a caller of :func:`main` (tests, notebooks) keeps its collector as it was."""
    was = gc.isenabled()
    gc.disable()
    try:
        return importlib.import_module(name)
    finally:
        gc.freeze()
        _, older, oldest = gc.get_threshold()
        gc.set_threshold(GC_YOUNG_THRESHOLD, older, oldest)
        if was:
            gc.enable()


def entry() -> None:
    """The ``hpcsa`` command."""
    lifetime.ends_with_command()
    guard_std_streams()
    leave(main(settle_gc=True))


def leave(code: int) -> NoReturn:
    """End the command the way the interpreter would, less what costs time and changes nothing: its last
    garbage collections over every object still alive (``gc.freeze``, about 15 ms with numpy loaded), then
    freeing every object and module one by one (10-30 ms, more after ``struct``: the system takes a
    process's pages back whole). What an exit must still do is done first: the functions registered with
    :mod:`atexit` (logging's) and flushing the standard streams; every output file is closed by then. Where a
    thread is still running, the interpreter waits for it as usual.

    A process that initialized MPI (a rank of ``mpiexec -n R hpcsa prof``) calls ``MPI_Finalize`` and ends
    through the C library's ``exit`` (:func:`hpcsa.aggregate.mpi.end_rank`), whose handlers MPICH
    needs: ended at once without them, each run left its shared-memory segment in ``/dev/shm`` (1-3 MB a
    run, never freed), and with ``MPI_Finalize`` alone MPICH's launcher ended 3-rank runs with status 9 in 7
    of 12 runs here (its process-manager client had not said goodbye); with both, 0 in 10 of 10 and no
    segment left."""
    gc.freeze()
    threading = sys.modules.get("threading")  # not imported: no thread was started through it
    if threading is not None and threading.active_count() > 1:
        sys.exit(code)
    atexit._run_exitfuncs()
    if "mpi4py.MPI" in sys.modules:  # (the MPI transport, imported only where MPI was)
        from hpcsa.aggregate.mpi import end_rank

        end_rank(code)
    end_now(code)
