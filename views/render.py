"""Tree-tables for the terminal (and JSON/CSV): which rows to show, and how values look.

Only the rows that are printed are visited in Python: children come from one
vectorized sort of the whole forest (:meth:`.Forest.children`), the rows are
chosen by depth, ``--top`` and the hot path, and each column is one numpy
array indexed by the chosen rows.

Presentation follows hpcviewer (§V.A of Adhianto et al.,
"Effectively Presenting Call Path Profiles of Application Performance", 2010): zeros are blank
cells, every value of a metric column is written in one notation (:func:`notation`: scientific with three
significant digits, hpcviewer's default, unless the column's values fit a fixed one), percentages are of
the experiment's aggregate value and aligned, rows whose every shown value is zero are not
shown, siblings are sorted by the chosen column. JSON and CSV keep every value at full precision.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable
from dataclasses import field
from typing import Any

import numpy as np

from hpcsa.core.dataclass import dataclass
from hpcsa.core.textout import json_safe
from hpcsa.views.forest import Forest
from hpcsa.views.metrics import Column

SIDE_MARK = {"inclusive": "(I)", "exclusive": "(E)"}
_SI = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


@dataclass
class Shown:
    node: int  # -1 for a "(N more)" row
    depth: int
    hot: bool = False
    more: int = 0


@dataclass
class Table:
    """The rows chosen for display, with everything needed to print them."""

    forest: Forest
    columns: list[tuple[Column, str]]
    rows: list[Shown]
    totals: list[float]
    hot_path: list[int] = field(default_factory=list)
    hot_column: tuple[Column, str] | None = None
    threshold: float | None = None
    title: str = ""

    def header(self, i: int) -> str:
        col, side = self.columns[i]
        return f"{col.name} {SIDE_MARK[side]}"


#: A column is written in fixed notation only when its smallest shown magnitude is at least this, its
#: largest below ``FIXED_BELOW``, and the two within ``FIXED_SPAN`` of each other (two orders of
#: magnitude); counts (integral values below ``INTEGERS_BELOW``) are written as integers. Any other column
#: is scientific, as hpcviewer writes every metric by default (``1.35e+02``).
FIXED_FROM = 0.01
FIXED_BELOW = 1e5
FIXED_SPAN = 100.0
INTEGERS_BELOW = 1e6
SIGNIFICANT = 3  # digits of the smallest magnitude in fixed notation, of every value in scientific notation


class Notation:
    """One number notation for every value of a column: ``scientific`` (``1.35e+02``) or fixed with
    ``decimals`` decimals (``0.0218``, ``135.0000``); calling it writes a value (blank, or ``zero``, for zero
    and undefined values)."""

    __slots__ = ("decimals", "scientific")

    def __init__(self, scientific: bool, decimals: int) -> None:
        self.scientific = scientific
        self.decimals = decimals

    def __call__(self, value: float, zero: str = "") -> str:
        value = float(value)
        if not math.isfinite(value) or value == 0:
            return zero
        return f"{value:.{self.decimals}{'e' if self.scientific else 'f'}}"

    def __repr__(self) -> str:
        return f"Notation(scientific={self.scientific}, decimals={self.decimals})"


def notation(values: Iterable[float] | np.ndarray) -> Notation:
    """The one notation of a column, chosen from the values it shows (zeros and undefined values, shown
    blank, do not count): integers for counts, fixed when every magnitude lies in [:data:`FIXED_FROM`,
    ``FIXED_BELOW``) within a factor ``FIXED_SPAN`` (with the decimals that give the smallest
    ``SIGNIFICANT`` significant digits), else scientific with ``SIGNIFICANT`` significant digits."""
    a = np.abs(np.asarray(values if isinstance(values, np.ndarray) else list(values), dtype=np.float64))
    a = a[np.isfinite(a) & (a != 0)]
    if not len(a):
        return Notation(False, 0)
    lo, hi = float(a.min()), float(a.max())
    if hi < INTEGERS_BELOW and bool(np.all(a == np.round(a))):
        return Notation(False, 0)
    if lo >= FIXED_FROM and hi < FIXED_BELOW and hi < lo * FIXED_SPAN:
        return Notation(False, max(0, SIGNIFICANT - 1 - math.floor(math.log10(lo))))
    return Notation(True, SIGNIFICANT - 1)


def compact(value: float) -> str:
    """One value on its own (not in a column: :func:`notation` writes columns): ``1.21``, ``12.1``,
    ``1.21k``, ``3.40M``, ``1.23e-05``; blank for zero and undefined values."""
    if value is None or not math.isfinite(value) or value == 0:
        return ""
    a = abs(value)
    for scale, suffix in _SI:
        if a >= scale * 0.9995:
            return f"{value / scale:.3g}{suffix}" if a / scale < 999.5 else f"{value / scale:.0f}{suffix}"
    if a < 0.01:
        return f"{value:.2e}"
    return f"{value:.3g}"


def percent(value: float, total: float) -> str:
    if not math.isfinite(value) or value == 0 or not math.isfinite(total) or total == 0:
        return ""
    return f"{100.0 * value / total:.1f}%"


def choose_rows(forest: Forest, columns: list[tuple[Column, str]], sort: tuple[Column, str], depth: int | None,
                top: int | None, hot_path: list[int] | None = None, start: int | None = None) -> list[Shown]:
    """The rows to print: roots (or ``start``), expanded to ``depth``, ``top`` children each; the hot path and
    the ancestors of its first node always shown and expanded (except its last node)."""
    values = [forest.values(c, s) for c, s in columns]
    nonzero = np.zeros(len(forest), bool)
    for v in values:
        nonzero |= np.isfinite(v) & (v != 0)
    order, starts = forest.children(*sort)
    hot = list(hot_path or [])
    forced = set(forest.ancestors(hot[0])[:-1]) if hot else set()
    forced.update(hot[:-1])
    must_show = set(forced) | set(hot)
    if start is not None:
        roots = [start]
    else:
        key = forest.values(*sort)
        roots = sorted(forest.roots.tolist(), key=lambda r: -np.nan_to_num(key[r], nan=-np.inf))
        roots = [r for r in roots if nonzero[r] or r in must_show] or roots[:1]
    out: list[Shown] = []
    hot_set = set(hot)
    stack: list[tuple[int, int]] = []
    if top is not None and len(roots) > top:
        shown = roots[:top] + [r for r in roots[top:] if r in must_show]
        stack.append((-(len(roots) - len(shown)), 0))
        roots = shown
    stack += [(r, 0) for r in reversed(roots)]
    while stack:
        node, d = stack.pop()
        if node < 0:  # a "more" marker: (-count, depth)
            out.append(Shown(-1, d, more=-node))
            continue
        out.append(Shown(node, d, node in hot_set))
        if not (node in forced or (depth is None or d < depth)):
            continue
        kids = order[starts[node]:starts[node + 1]]
        kids = kids[nonzero[kids] | np.isin(kids, list(must_show))] if len(kids) else kids
        chosen = kids
        if top is not None and len(kids) > top:
            chosen = kids[:top]
            extra = [k for k in kids[top:] if k in must_show]
            chosen = np.concatenate([chosen, np.asarray(extra, dtype=kids.dtype)]) if extra else chosen
        skipped = len(kids) - len(chosen)
        if skipped:
            stack.append((-skipped, d + 1))
        for k in reversed(chosen.tolist()):
            stack.append((int(k), d + 1))
    return out


def render_text(table: Table, width: int | None = None) -> str:
    forest = table.forest
    nodes = np.array([r.node for r in table.rows if r.node >= 0], dtype=np.int64)
    cells: list[list[str]] = []
    vals = [forest.values(c, s) for c, s in table.columns]
    col_width = []
    # One notation per metric, from the values of its inclusive and exclusive columns together (hpcviewer's
    # format is the metric's): both columns of a metric read alike.
    by_metric: dict[int, list[np.ndarray]] = {}
    for i, (col, _side) in enumerate(table.columns):
        by_metric.setdefault(id(col), []).append(vals[i][nodes] if len(nodes) else np.zeros(0))
    writers = {key: notation(np.concatenate(parts)) for key, parts in by_metric.items()}
    for i, (col, _side) in enumerate(table.columns):
        v = vals[i][nodes] if len(nodes) else np.zeros(0)
        write = writers[id(col)]
        texts = [write(x) for x in v.tolist()]
        pcts = [percent(x, table.totals[i]) if col.percent else "" for x in v.tolist()]
        nw = max([len(t) for t in texts] + [1])
        pw = max([len(p) for p in pcts] + [0])
        cell = [f"{t:>{nw}} {p:>{pw}}".rstrip() if pw else f"{t:>{nw}}" for t, p in zip(texts, pcts, strict=True)]
        cell = [c if (t or p) else "" for c, t, p in zip(cell, texts, pcts, strict=True)]
        cells.append(cell)
        col_width.append(max([len(table.header(i))] + [len(c) for c in cell]))
    lines = []
    if table.title:
        lines.append(table.title)
    head = "  ".join(f"{table.header(i):>{w}}" for i, w in enumerate(col_width))
    lines.append(f"{head}  {'Scope':<5}".rstrip() if head else "Scope")
    k = 0
    for r in table.rows:
        indent = "  " * r.depth
        if r.node < 0:
            blank = "  ".join(" " * w for w in col_width)
            lines.append(f"{blank}  {indent}  ({r.more} more)".rstrip())
            continue
        row_cells = "  ".join(f"{cells[i][k]:>{w}}" for i, w in enumerate(col_width))
        mark = "» " if r.hot else "  "
        text = f"{row_cells}  {indent}{mark}{forest.label(r.node)}"
        if width:
            text = text[:width]
        lines.append(text.rstrip())
        k += 1
    if table.hot_path and table.hot_column is not None:
        col, side = table.hot_column
        end = table.hot_path[-1]
        values = forest.values(col, side)
        v = values[end]
        shown = values[nodes] if (col, side) in table.columns and len(nodes) else values[[end]]
        lines.append("")
        lines.append(f"hot path ({col.name} {SIDE_MARK[side]}, threshold {100 * (table.threshold or 0):g}%): "
                     f"{len(table.hot_path)} scopes, ends at {forest.label(end)} = {notation(shown)(v, '0')}"
                     f" ({percent(float(v), forest.exp.total(col)) or '0%'} of the total)")
    return "\n".join(lines) + "\n"


def _row_record(table: Table, r: Shown) -> dict[str, Any]:
    forest = table.forest
    if r.node < 0:
        return {"depth": r.depth, "more": r.more}
    rec: dict[str, Any] = {"depth": r.depth, "label": forest.label(r.node), "hot": r.hot}
    rec.update(forest.info(r.node))
    rec["values"] = {table.header(i): _num(forest.values(c, s)[r.node]) for i, (c, s) in enumerate(table.columns)}
    return rec


def _num(x: float) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def render_json(table: Table) -> str:
    doc: dict[str, Any] = {
        "database": table.forest.exp.path, "view": table.forest.view,
        "columns": [{"name": c.name, "side": s, "total": _num(t)}
                    for (c, s), t in zip(table.columns, table.totals, strict=True)],
        "rows": [_row_record(table, r) for r in table.rows],
    }
    filters = getattr(table.forest, "filters", None) or getattr(table.forest.exp, "filters", None)
    if filters:
        doc["filters"] = [str(f) for f in filters]
    if table.hot_path and table.hot_column is not None:
        col, side = table.hot_column
        v = table.forest.values(col, side)
        doc["hot_path"] = {"metric": col.name, "threshold": table.threshold,
                           "nodes": [{"label": table.forest.label(n), "value": _num(v[n]), **table.forest.info(n)}
                                     for n in table.hot_path]}
    return json_safe(json.dumps(doc, indent=1, ensure_ascii=False)) + "\n"


def render_csv(table: Table) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    info_keys: list[str] = []
    records = [_row_record(table, r) for r in table.rows if r.node >= 0]
    for rec in records:
        for k in rec:
            if k not in ("depth", "label", "hot", "values", "call_site") and k not in info_keys:
                info_keys.append(k)
    headers = [table.header(i) for i in range(len(table.columns))]
    w.writerow(["depth", "label", *headers, "hot", *info_keys])
    for rec in records:
        w.writerow([rec["depth"], rec["label"], *("" if rec["values"][h] is None else repr(rec["values"][h])
                                                   for h in headers),
                    int(rec["hot"]), *("" if rec.get(k) is None else rec.get(k) for k in info_keys)])
    return buf.getvalue()
