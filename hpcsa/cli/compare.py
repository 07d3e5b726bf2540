"""``hpcsa compare DB...``: N databases on one aligned tree (:mod:`hpcsa.views.compare`): each run's values,
statistics across runs and the change against a baseline, in the views of ``hpcsa view``; the run catalog;
scaling series with growth models; a regression gate for CI (``--fail-if``, exit status 1)."""

from __future__ import annotations

import argparse
import json
import os
import sys

from hpcsa.core.errors import HpcsaError
from hpcsa.core.outputs import STDOUT, atomic_file
from hpcsa.core.progress import Progress
from hpcsa.core.textout import json_safe
from hpcsa.views.compare.catalog import parse_meta_options, read_meta_file, run_labels
from hpcsa.views.compare.comparison import Comparison, compare
from hpcsa.views.compare.gate import AGAINST, evaluate, parse_rule
from hpcsa.views.compare.series import MODES, render_series, scaling_series, series_dict
from hpcsa.views.compare.table import KEYS, SHOW, render_catalog, render_tree
from hpcsa.views.compare.tidy import FORMATS, write_tidy

VIEW_NAMES = {"top-down": "top-down", "td": "top-down", "bottom-up": "bottom-up", "bu": "bottom-up",
              "callers": "bottom-up", "flat": "flat"}


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("databases", nargs="+", metavar="DB", help="database directories (two or more runs)")
    parser.add_argument("--baseline", "-b", metavar="DB", help="the run the others are compared with (one of the "
                        "DBs, or its label; default the first)")
    parser.add_argument("-o", "--output", metavar="OUT", help="write to OUT instead of printing: .json (the whole "
                        "aligned tree), .csv or .parquet (the tidy table run, path, metric, scope, value), .txt")
    parser.add_argument("--format", "-f", default="text", choices=("text", "json", "csv"),
                        help="what to print (default text; csv: the tidy table)")
    parser.add_argument("--view", "-V", default="top-down", choices=sorted(VIEW_NAMES),
                        help="top-down (default), bottom-up/callers or flat")
    parser.add_argument("--metric", "-m", action="append", default=[], metavar="M",
                        help="metric column (name or unique prefix); repeatable; default: the baseline's first "
                        "with data")
    parser.add_argument("--all-metrics", action="store_true", help="every metric column with data in the baseline")
    parser.add_argument("--show", default=None, metavar="LIST",
                        help=f"columns: a comma list of {', '.join(SHOW)} (default: runs,change for up to 3 runs, "
                        "all three up to 6, stats,change beyond)")
    parser.add_argument("--sort", "-s", metavar="KEY", help=f"sort siblings by {', '.join(KEYS)}, a run's label or "
                        "run:N; append ' (E)' for the exclusive side, prefix 'METRIC:' for another metric "
                        "(default mean)")
    parser.add_argument("--depth", type=int, metavar="N", help="expand to depth N (default: top-down 4, "
                        "bottom-up 1, flat 2)")
    parser.add_argument("--top", type=int, metavar="K", help="at most K children per scope (default 10, 3 along "
                        "a hot path; 0 = all)")
    parser.add_argument("--hot-path", action="store_true", help="expand the hot path (of the sort column, or "
                        "--hot-column)")
    parser.add_argument("--hot-column", metavar="KEY", help="the column the hot path follows (as --sort)")
    parser.add_argument("--threshold", "-t", type=float, default=50.0, metavar="T",
                        help="hot-path threshold in percent of the parent (default 50)")
    parser.add_argument("--from", dest="start", metavar="SCOPE", help="start the display at this context (its "
                        "path or label)")
    parser.add_argument("--width", type=int, default=0, help="cut text lines to this width (0: no limit)")
    meta = parser.add_argument_group("run catalog and groups")
    meta.add_argument("--catalog", action="store_true", help="print the run catalog only")
    meta.add_argument("--meta", action="append", default=[], metavar="[RUN:]KEY=VALUE",
                      help="user metadata: once for every run, once per run in their order, or RUN:KEY=VALUE "
                      "for one run; repeatable")
    meta.add_argument("--meta-file", metavar="FILE", help="user metadata from a CSV (a 'database' column) or JSON "
                      "file keyed by database")
    meta.add_argument("--group-by", metavar="KEY", help="group the runs by a metadata key (or ranks, threads, "
                        "hosts...): numbers make a scaling series (efficiency and growth models)")
    meta.add_argument("--scaling", default="strong", choices=MODES, help="with a numeric --group-by: strong "
                      "(default) or weak scaling")
    meta.add_argument("--plot", metavar="PNG", help="with a numeric --group-by: write the scaling plot")
    gate = parser.add_argument_group("regression gate (exit status 1 when a context crosses)")
    gate.add_argument("--fail-if", action="append", default=[], metavar="RULE",
                      help="e.g. 'CPUTIME (sec):I > 5%%' (METRIC[:I|:E] OP THRESHOLD[%%]); repeatable; prints "
                      "only the contexts that crossed")
    gate.add_argument("--against", default="baseline", choices=AGAINST,
                      help="compare with the baseline (run or group; default) or with the mean of the other "
                      "runs of the group")
    gate.add_argument("--noise", type=float, default=1.0, metavar="F",
                      help="with repeated runs: a change counts only above F times their spread (default 1)")
    gate.add_argument("--min-share", type=float, default=1.0, metavar="PCT",
                      help="contexts below PCT %% of the total on both sides are not gated (default 1)")
    vendor = parser.add_mutually_exclusive_group()
    vendor.add_argument("--vendor-neutral", dest="vendor_neutral", action="store_true", default=None,
                        help="name kernels by base name, runtime calls by role, keep procedure frames only "
                        "(default: when the runs come from several GPU vendors)")
    vendor.add_argument("--no-vendor-neutral", dest="vendor_neutral", action="store_false")


def _metadata(args: argparse.Namespace) -> list[dict[str, str]]:
    labels = run_labels(args.databases)
    out: list[dict[str, str]] = [{} for _ in args.databases]
    if args.meta_file:
        out = read_meta_file(args.meta_file, args.databases, labels)
    for d, extra in zip(out, parse_meta_options(args.meta, args.databases, labels), strict=True):
        d.update(extra)
    return out


def run(args: argparse.Namespace) -> int:
    if args.plot == STDOUT:
        raise HpcsaError(None, "--plot -: name a PNG file for the plot")
    rules = [parse_rule(r) for r in args.fail_if]
    meta = _metadata(args)
    progress = Progress("reading runs", len(args.databases))
    cmp = compare(args.databases, baseline=args.baseline, metrics=args.metric or None,
                  all_metrics=args.all_metrics, view=VIEW_NAMES[args.view], vendor_neutral=args.vendor_neutral,
                  meta=meta, group_by=args.group_by, progress=lambda k: progress.advance(1))
    if progress.enabled:
        progress.stream.write("\r\x1b[K")
    if rules:
        return _gate(cmp, rules, args)
    series = None
    if args.group_by and cmp.groups and all(g.x is not None for g in cmp.groups) and len(cmp.groups) > 1:
        series = scaling_series(cmp, args.metric[0] if args.metric else None, "inclusive", args.scaling)
        if args.plot:
            from hpcsa.views.compare.plot import plot_series
            plot_series(cmp, series, args.plot)
    elif args.plot:
        raise HpcsaError(None, "--plot needs --group-by a numeric key with two or more values")
    out = args.output
    kind = FORMATS.get(os.path.splitext(out)[1].lower()) if out and out != STDOUT else None
    if out and out != STDOUT and kind is None:
        raise HpcsaError(out, f"write .json, .csv, .parquet or .txt (not {os.path.splitext(out)[1] or 'no suffix'})")
    if kind in ("csv", "parquet"):
        rows = write_tidy(cmp, out)
        print(f"hpcsa compare: {len(cmp.runs)} runs, {len(cmp)} aligned contexts, {rows} rows -> {out}",
              file=sys.stderr)
        return 0
    fmt = kind or args.format
    if fmt == "csv":
        from hpcsa.views.compare.tidy import write_csv
        write_csv(cmp, STDOUT)
        return 0
    if fmt == "json":
        doc = cmp.to_dict()
        if series is not None:
            doc["series"] = series_dict(cmp, series)
        text = json_safe(json.dumps(doc, indent=1, ensure_ascii=False)) + "\n"
    else:
        text = _text(cmp, args, series)
    with atomic_file(out or STDOUT, "w") as fh:
        fh.write(text)
    return 0


def _text(cmp: Comparison, args: argparse.Namespace, series: object) -> str:
    parts = [render_catalog(cmp)]
    if args.catalog:
        return parts[0]
    if cmp.groups:
        parts.append("groups by " + f"{cmp.group_by}: " + "; ".join(
            f"{g.value} ({', '.join(cmp.runs[i].label for i in g.runs)})" for g in cmp.groups) + "\n")
    show = [s.strip() for s in args.show.split(",")] if args.show else None
    parts.append(render_tree(cmp, args.metric or None, show, args.sort, args.depth, args.top, args.hot_path,
                             args.hot_column, args.threshold / 100.0, args.start, args.width or None))
    if series is not None:
        from hpcsa.views.compare.series import Series
        assert isinstance(series, Series)
        parts.append(render_series(cmp, series))
    if args.plot:
        parts.append(f"plot: {args.plot}\n")
    return "\n".join(parts)


def _gate(cmp: Comparison, rules: list, args: argparse.Namespace) -> int:
    result = evaluate(cmp, rules, args.against, args.noise, args.min_share / 100.0)
    for c in result.crossings:
        print(c)
    notes = []
    if result.folded:
        notes.append(f"{result.folded} crossing ancestor{'s' if result.folded > 1 else ''} explained by those named")
    if result.one_sided:
        notes.append(f"{result.one_sided} context-comparisons with the context on one side only, not gated")
    if result.below_share:
        notes.append(f"{result.below_share} crossings below --min-share {args.min_share:g}% not counted")
    verdict = (f"{len(result.crossings)} context{'s' if len(result.crossings) != 1 else ''} crossed"
               if result.failed else "no context crossed")
    print(f"hpcsa compare: {verdict} ({'; '.join(r.text for r in rules)}; against the {args.against}"
          f"{'; ' + '; '.join(notes) if notes else ''})", file=sys.stderr)
    return 1 if result.failed else 0
