"""``hpcsa view DB``: the top-down, callers (bottom-up) and flat views of a database in the terminal
(:mod:`hpcsa.views.show`)."""

from __future__ import annotations

import argparse
import sys

from hpcsa.core.errors import HpcsaError
from hpcsa.views.experiment import open_experiment
from hpcsa.views.filters import MODES, parse_filters
from hpcsa.views.forest import DEFAULT_THRESHOLD
from hpcsa.views.show import VIEWS, list_metrics, render_view


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("database", help="database directory (meta.db, profile.db, ...)")
    parser.add_argument("--view", "-V", default="top-down", choices=sorted(VIEWS),
                        help="top-down (calling contexts, default), bottom-up/callers, or flat "
                        "(load module / file / procedure / loop / line)")
    parser.add_argument("--metric", "-m", action="append", default=[], metavar="M",
                        help="metric column to show (name, unique prefix or $n); repeatable; default: the first "
                        "metric with a non-zero total")
    parser.add_argument("--all-metrics", action="store_true", help="show every visible metric with a non-zero total")
    parser.add_argument("--derive", "-d", action="append", default=[], metavar="NAME=FORMULA",
                        help="add a derived metric, e.g. 'FPWASTE=2*$0-$1' or 'eff=${FP_INS}/(2*${CYC})'; "
                        "it can then be shown and sorted on")
    parser.add_argument("--sort", "-s", metavar="M", help="sort siblings by this column (append ' (E)' for its "
                        "exclusive value); default: the first shown column, inclusive")
    parser.add_argument("--depth", type=int, metavar="N", help="expand the tree to depth N (default: top-down 4, "
                        "bottom-up 1, flat 2)")
    parser.add_argument("--top", type=int, metavar="K", help="show at most K children per scope "
                        "(default 10, 3 along a hot path; 0 = all)")
    parser.add_argument("--hot-path", action="store_true", help="expand the hot path (Adhianto et al. 2010, eq. 3)")
    parser.add_argument("--from", dest="start", metavar="SCOPE", help="start the hot path (and the display) at "
                        "this scope: a context id (#123) or a procedure name")
    parser.add_argument("--hot-metric", metavar="M", help="metric for the hot path (default: the sort column)")
    parser.add_argument("--threshold", "-t", default=str(int(DEFAULT_THRESHOLD * 100)), metavar="T",
                        help="hot-path threshold in percent of the parent (default 50)")
    parser.add_argument("--flatten", type=int, default=0, metavar="N",
                        help="flat view: elide the top N levels (1 = files, 2 = procedures, ...)")
    parser.add_argument("--filter", action="append", default=[], metavar="[MODE:]GLOB",
                        help="hide procedures whose name matches GLOB, as hpcviewer's filters do; MODE is "
                        f"{', '.join(MODES)} (hide the node and keep its children, the default; hide its "
                        "children; hide both); hidden costs go to the nearest shown context; repeatable")
    parser.add_argument("--format", "-f", default="text", choices=("text", "json", "csv"))
    parser.add_argument("--list-metrics", action="store_true", help="list the metric columns and their $n numbers")
    parser.add_argument("--width", type=int, default=0, help="cut text lines to this width (0: no limit)")
    parser.add_argument("--full-names", action="store_true", help="show procedures by their full names (default: "
                        "C++ names without template arguments and parameter lists)")


def parse_threshold(text: str) -> float:
    try:
        t = float(str(text).rstrip("%"))
    except ValueError:
        raise HpcsaError(None, f"--threshold {text!r} is not a number") from None
    t = t / 100.0 if t > 1 or str(text).endswith("%") else t
    if not 0 < t <= 1:
        raise HpcsaError(None, f"--threshold {text!r} must be between 0 and 100%")
    return t


def run(args: argparse.Namespace) -> int:
    exp = open_experiment(args.database)
    exp.full_names = args.full_names
    for d in args.derive:
        exp.derive(d)
    if args.list_metrics:
        sys.stdout.write(list_metrics(exp))
        return 0
    sys.stdout.write(render_view(exp, args.view, args.metric, args.all_metrics, args.sort, args.depth, args.top,
                                 args.hot_path, args.start, args.hot_metric, parse_threshold(args.threshold),
                                 args.flatten, args.format, args.width or None, parse_filters(args.filter)))
    return 0
