"""``hpcsa blame DB -o DB2``: idleness, overhead and GPU idle blame from traces, as metrics and a report."""

from __future__ import annotations

import argparse
import sys

from hpcsa.core.errors import HpcsaError
from hpcsa.core.outputs import atomic_file, check_directory_output
from hpcsa.core.progress import Progress
from hpcsa.views.blame.attribute import blame
from hpcsa.views.blame.report import spread_line, to_json, to_text
from hpcsa.views.blame.rules import load_rules
from hpcsa.views.experiment import open_experiment


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("database", nargs="?", help="database directory with trace.db")
    parser.add_argument("--output", "-o", help="the new database directory (the source plus the blame metrics)")
    parser.add_argument("--rules", metavar="FILE", help="YAML file of extra rules (see --show-rules for the format)")
    parser.add_argument("--show-rules", action="store_true", help="print the rules in effect (YAML) and exit")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="report format (default: text)")
    parser.add_argument("--report", metavar="FILE", help="write the report to FILE instead of standard output")
    parser.add_argument("--top", type=int, default=10, metavar="N", help="contexts per report section (default 10)")
    parser.add_argument("--gpu-idle-over", choices=("gpu", "run"), default="gpu",
                        help="GPU idleness within the GPU's first to last operation (gpu, default) or within the "
                        "whole run of its process (run)")
    parser.add_argument("--full-names", action="store_true", help="show procedures by their full names (default: "
                        "C++ names without template arguments and parameter lists)")
    parser.add_argument("--chunk", type=int, default=1 << 17, metavar="N",
                        help="trace elements per sweep window (bounds memory; default 131072)")


def run(args: argparse.Namespace) -> int:
    rules = load_rules(args.rules)
    if args.show_rules:
        sys.stdout.write("# hpcsa blame rules: regular expressions over function names (without a trailing\n"
                         "# ' [module]') or load module paths; a --rules file of this shape adds to them\n"
                         "# ('replace: true' replaces them).\n" + rules.to_yaml())
        return 0
    if not args.database:
        raise HpcsaError(None, "hpcsa blame needs a database directory (or --show-rules)")
    if args.chunk < 1 or args.top < 0:
        raise HpcsaError(None, "--chunk must be positive and --top not negative")
    if args.output:
        check_directory_output(args.output)
    exp = open_experiment(args.database)
    exp.full_names = args.full_names
    progress = Progress("blame", total=len(exp.profiles))
    result = blame(exp, args.output, rules, chunk=args.chunk, over_run=args.gpu_idle_over == "run",
                   progress=progress)
    text = to_json(exp, result, args.top) if args.format == "json" else to_text(exp, result, args.top)
    if args.report:
        with atomic_file(args.report, "w") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
    eff = spread_line([p.efficiency for p in result.processes], True)
    busy = spread_line([g.busy_share for g in result.gpus], True)
    dest = f" -> {args.output}" if args.output else ""
    progress.finish(f"hpcsa blame: {len(result.processes)} processes (efficiency min / median / max {eff}), "
                    f"{len(result.gpus)} GPUs (busy {busy}){dest}")
    return 0
