"""hpcviewer's three views of a database as a table: the view's forest, its metric columns, the rows to show
(depth, top children, hot path, filters) rendered as text, JSON or CSV (``hpcsa view``)."""

from __future__ import annotations

import re

from hpcsa.core.errors import HpcsaError
from hpcsa.views.experiment import Experiment
from hpcsa.views.filters import Filter, FilteredExperiment
from hpcsa.views.forest import DEFAULT_THRESHOLD, Forest
from hpcsa.views.metrics import Column
from hpcsa.views.render import Table, choose_rows, render_csv, render_json, render_text

VIEWS = {"top-down": "top-down", "td": "top-down", "cct": "top-down", "bottom-up": "bottom-up", "bu": "bottom-up",
         "callers": "bottom-up", "flat": "flat"}
DEFAULT_DEPTH = {"top-down": 4, "bottom-up": 1, "flat": 2}


def parse_column(exp: Experiment, spec: str) -> tuple[Column, str]:
    m = re.fullmatch(r"(.*?)\s*\((I|E|inc|exc|inclusive|exclusive)\)", spec.strip())
    side = "inclusive"
    if m:
        spec, side = m.group(1), "exclusive" if m.group(2).lower().startswith("e") else "inclusive"
    try:
        return exp.catalog.find(spec), side
    except KeyError as exc:
        raise HpcsaError(exp.path, exc.args[0]) from None


def default_columns(exp: Experiment, all_metrics: bool) -> list[Column]:
    nonzero = []
    for col in exp.catalog:
        if not col.visible:
            continue
        total = exp.total(col)
        if total == total and total != 0:  # not NaN, not zero
            nonzero.append(col)
            if not all_metrics:
                break
    return nonzero or list(exp.catalog)[:1]


def build_forest(exp: Experiment, view: str, depth: int, flatten: int, deep: bool = False,
                 filters: tuple[Filter, ...] = ()) -> Forest:
    """The view's forest; ``deep`` builds every caller level (a hot path may go anywhere); with filters, the
    view of the filtered calling context tree (:mod:`hpcsa.views.filters`)."""
    if filters:
        exp = FilteredExperiment(exp, filters)
    if view == "top-down":
        return exp.top_down()
    if view == "bottom-up":
        return exp.bottom_up(depth=max(depth, 0) + 1 if not deep else 64)
    forest = exp.flat()
    return forest.flattened(flatten) if flatten else forest


def list_metrics(exp: Experiment) -> str:
    from hpcsa.views.render import notation

    lines = [f"{'$n':>4}  {'total':>9}  metric"]
    totals = [exp.total(col) for col in exp.catalog]
    write = notation(totals)  # one notation for the column
    for col, total in zip(exp.catalog, totals, strict=True):
        flags = [] if col.visible else ["hidden"]
        if col.derived:
            flags.append("derived")
        tail = f"  [{', '.join(flags)}]" if flags else ""
        lines.append(f"{'$' + str(col.index):>4}  {write(total, '-'):>9}  {col.name}{tail}")
    return "\n".join(lines) + "\n"


def render_view(exp: Experiment, view: str = "top-down", metrics: list[str] | None = None,
                all_metrics: bool = False, sort: str | None = None, depth: int | None = None, top: int | None = None,
                hot_path: bool = False, start: str | None = None, hot_metric: str | None = None,
                threshold: float = DEFAULT_THRESHOLD, flatten: int = 0, fmt: str = "text", width: int | None = None,
                filters: tuple[Filter, ...] = ()) -> str:
    """One view of an open experiment as text, JSON or CSV (what ``hpcsa view`` prints)."""
    if not len(exp.catalog):
        raise HpcsaError(exp.path, "the database has no metric columns")
    view = VIEWS[view]
    columns_spec = [parse_column(exp, m)[0] for m in metrics or []] or default_columns(exp, all_metrics)
    columns = [(c, side) for c in columns_spec for side in ("inclusive", "exclusive") if c.formula(side) is not None]
    sort_col = parse_column(exp, sort) if sort else (columns[0] if columns else (columns_spec[0], "inclusive"))
    if depth is None:
        depth = min(DEFAULT_DEPTH[view], 1) if hot_path else DEFAULT_DEPTH[view]
    if top is None:
        top = 3 if hot_path else 10
    forest = build_forest(exp, view, depth, flatten, deep=hot_path, filters=filters)
    start_node = None
    if start:
        start_rows = forest.exp.find_rows(start)  # filtered callers and flat views: rows of the filtered tree
        start_node = forest.node_of_rows(start_rows) if len(start_rows) else None
        if start_node is None or forest.parent[start_node] == -2:
            raise HpcsaError(exp.path, f"no scope {start!r} in the {view} view" + (" (filtered)" if filters else ""))
    hot: list[int] = []
    hot_col = None
    if hot_path:
        hot_col = (parse_column(exp, hot_metric)[0], "inclusive") if hot_metric else (sort_col[0], "inclusive")
        hot = forest.hot_path(hot_col[0], start_node, threshold)
    rows = choose_rows(forest, columns, sort_col, depth, top if top > 0 else None, hot,
                       start_node if not hot else None)
    table = Table(forest, columns, rows, [exp.total(c) for c, _ in columns], hot, hot_col, threshold,
                  title=f"{exp.path}: {forest.view} view" + (f", filters {' '.join(map(str, filters))}" if filters else ""))
    if fmt == "json":
        return render_json(table)
    if fmt == "csv":
        return render_csv(table)
    return render_text(table, width)
