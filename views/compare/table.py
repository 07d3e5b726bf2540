"""The aligned tree as a table in the terminal: the rows ``hpcsa view`` would show, with columns across runs.

The aligned tree is a :class:`~hpcsa.views.forest.Forest` (:class:`AlignedForest`), so the rows are chosen,
sorted and hot-path-expanded by the same code as ``hpcsa view`` (:func:`hpcsa.views.render.choose_rows`). In
the top-down view a call site's line with a single callee is folded into the callee (``file:line → callee``)
as ``hpcsa view`` folds it, over the aligned tree. Columns per metric and side: each run's value, its change
against the baseline, and the statistics across runs; any of them can sort the siblings or steer the hot
path (:func:`parse_key`). A context missing from a run is ``—``, a metric the run lacks ``n/a``; zeros are
blank, as in hpcviewer.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from hpcsa.core.dataclass import dataclass
from hpcsa.core.errors import HpcsaError
from hpcsa.views.compare.comparison import Comparison
from hpcsa.views.compare.stats import across, difference, ratio
from hpcsa.views.forest import DEFAULT_THRESHOLD, Forest
from hpcsa.views.metrics import Column
from hpcsa.views.render import choose_rows, notation

MISSING, NOT_MEASURED = "—", "n/a"
#: Columns any sort or hot path can use, besides a run's label: statistics and the change.
KEYS = ("mean", "min", "max", "stddev", "cfvar", "baseline", "change", "abschange", "ratio")
SHOW = ("runs", "change", "stats")


@dataclass(frozen=True)
class Key:
    """One value column: a metric, a side, and what (``run:N``, a statistic, ``change``...)."""

    metric: str
    side: str
    what: str


def parse_key(cmp: Comparison, text: str | None, metric: str | None = None) -> Key:
    """``change``, ``mean``, ``cfvar``, a run's label or ``run:N``..., with `` (E)`` for the exclusive side;
    ``METRIC:KEY`` for another metric than the first shown."""
    text = (text or "mean").strip()
    side = "inclusive"
    m = re.fullmatch(r"(.*?)\s*\((I|E|inc|exc|inclusive|exclusive)\)", text)
    if m:
        text, side = m.group(1).strip(), "exclusive" if m.group(2).lower().startswith("e") else "inclusive"
    head, colon, tail = text.rpartition(":")
    if colon and head and not head.startswith("run"):
        metric, text = head, tail
    name = cmp.metric(metric)
    labels = [r.label for r in cmp.runs]
    if text in KEYS:
        return Key(name, side, text)
    if text in labels:
        return Key(name, side, f"run:{labels.index(text)}")
    if re.fullmatch(r"run:\d+", text) and int(text[4:]) < len(labels):
        return Key(name, side, text)
    raise HpcsaError(None, f"no column {text!r}: one of {', '.join(KEYS)}, a run's label or run:N")


class AlignedForest(Forest):
    """The aligned tree as a view; values are :class:`Key` columns (as :class:`~hpcsa.views.metrics.Column`\\ s of that name)."""

    def __init__(self, cmp: Comparison) -> None:
        parent = cmp.parent.copy()
        self.cmp = cmp
        self.view = cmp.view
        self._present = cmp.present
        self._matrices: dict[tuple[str, str], np.ndarray] = dict(cmp.values)
        self.merged_from = np.full(len(parent), -1, np.int64)
        if cmp.view == "top-down" and not cmp.vendor_neutral and len(parent):
            self._fold_call_sites(parent)
        super().__init__(None, parent)  # type: ignore[arg-type]  # no experiment: the values are the runs'
        self._keys: dict[str, Key] = {}

    def _fold_call_sites(self, parent: np.ndarray) -> None:
        kinds = np.array(self.cmp.kinds, dtype=object)
        n = len(parent)
        kids = np.bincount(parent[parent >= 0], minlength=n)
        par = np.maximum(parent, 0)
        is_call = np.isin(kinds, ("function/call", "function/inlined_call", "instruction/call"))
        site = (kinds[par] == "line/lexical") & (parent >= 0)
        merged = np.flatnonzero(is_call & site & (kids[par] == 1))
        if not len(merged):
            return
        lines = parent[merged]
        self.merged_from[merged] = lines
        parent[merged] = parent[lines]
        parent[lines] = -2
        present = self._present.copy()
        present[merged] = self._present[lines]
        self._present = present
        for m in self.cmp.metrics:
            inc = self._matrices[(m.name, "inclusive")].copy()
            exc = self._matrices[(m.name, "exclusive")].copy()
            line_inc, callee_inc = inc[lines], inc[merged]
            if m.additive:
                own = line_inc - np.nan_to_num(callee_inc)
                exc[merged] = np.where(np.isnan(line_inc), np.nan, np.nan_to_num(exc[merged]) + own)
            inc[merged] = line_inc
            self._matrices[(m.name, "inclusive")], self._matrices[(m.name, "exclusive")] = inc, exc

    # -- columns -------------------------------------------------------------------------------------------

    def column_of(self, key: Key) -> Column:
        name = f"{key.metric}|{key.side}|{key.what}"
        self._keys[name] = key
        return Column(len(self._keys), name)

    def key_values(self, key: Key) -> np.ndarray:
        got = self._values.get((hash(key), key.side))
        if got is not None:
            return got
        mat = self._matrices[(key.metric, key.side)]
        base = mat[:, self.cmp.baseline]
        others = [i for i in range(mat.shape[1]) if i != self.cmp.baseline]
        w = key.what
        if w.startswith("run:"):
            out = mat[:, int(w[4:])]
        elif w == "baseline":
            out = base
        elif w in ("change", "abschange", "ratio"):
            mean = across(mat[:, others]).mean if others else base
            out = difference(mean, base) if w != "ratio" else ratio(mean, base)
            out = np.abs(out) if w == "abschange" else out
        else:
            out = across(mat).get(w)
        self._values[(hash(key), key.side)] = out
        return out

    def values(self, spec: str | Column, side: str = "inclusive") -> np.ndarray:
        name = spec.name if isinstance(spec, Column) else spec
        return self.key_values(self._keys[name])

    def label(self, node: int) -> str:
        site = int(self.merged_from[node])
        if site >= 0:
            return f"{self.cmp.labels[site]} {self.cmp.labels[node]}"
        return self.cmp.labels[node]

    def info(self, node: int) -> dict[str, Any]:
        return {"path": self.cmp.paths[node], "kind": self.cmp.kinds[node]}

    def node_of_rows(self, rows: np.ndarray) -> int:
        return int(np.asarray(rows)[0])

    def present_in(self, node: int) -> np.ndarray:
        return self._present[node]


def default_show(n_runs: int) -> tuple[str, ...]:
    """Each run and its change for a few runs; the statistics and the mean's change for many."""
    if n_runs <= 3:
        return ("runs", "change")
    if n_runs <= 6:
        return ("runs", "change", "stats")
    return ("stats", "change")


def find_start(cmp: Comparison, forest: AlignedForest, text: str) -> int:
    """The node a display starts at: its path, or a label (exact, else the first containing it)."""
    paths, labels = cmp.paths, cmp.labels
    for seq in (paths, labels):
        if text in seq:
            return seq.index(text)
    hits = [i for i, lbl in enumerate(labels) if text in lbl and forest.parent[i] != -2]
    if not hits:
        raise HpcsaError(None, f"no aligned context {text!r}")
    return hits[0]


def render_tree(cmp: Comparison, metrics: Sequence[str] | None = None, show: Sequence[str] | None = None,
                sort: str | None = None, depth: int | None = None, top: int | None = None, hot_path: bool = False,
                hot_column: str | None = None, threshold: float = DEFAULT_THRESHOLD, start: str | None = None,
                width: int | None = None) -> str:
    """The aligned view as text (what ``hpcsa compare`` prints)."""
    forest = AlignedForest(cmp)
    names = [cmp.metric(m) for m in metrics] if metrics else [m.name for m in cmp.metrics]
    show = tuple(show or default_show(len(cmp.runs)))
    bad = [s for s in show if s not in SHOW]
    if bad:
        raise HpcsaError(None, f"--show {','.join(bad)}: choose among {', '.join(SHOW)}")
    groups: list[tuple[str, list[tuple[Key, str]]]] = []
    for name in names:
        for side in ("inclusive", "exclusive"):
            if np.isnan(cmp.values[(name, side)]).all():
                continue
            cols: list[tuple[Key, str]] = []
            for i, r in enumerate(cmp.runs):
                if "runs" in show:
                    cols.append((Key(name, side, f"run:{i}"), r.label))
                if "change" in show and "runs" in show and i != cmp.baseline:
                    cols.append((Key(name, side, f"delta:{i}"), f"Δ {r.label}"))
            if "stats" in show:
                cols += [(Key(name, side, s), s) for s in ("mean", "min", "max", "stddev", "cfvar")]
            if "change" in show and "runs" not in show:
                cols.append((Key(name, side, "change"), "Δ mean"))
            groups.append((f"{name} ({'I' if side == 'inclusive' else 'E'})", cols))
    if not groups:
        raise HpcsaError(None, "no values to show")
    sort_key = parse_key(cmp, sort, names[0])
    value_cols = [(forest.column_of(k), "inclusive") for _, cols in groups for k, _ in cols
                  if not k.what.startswith("delta:")]
    sort_col = (forest.column_of(sort_key), "inclusive")
    start_node = find_start(cmp, forest, start) if start else None
    hot: list[int] = []
    hot_key = parse_key(cmp, hot_column, names[0]) if hot_column else sort_key
    if hot_path:
        hot = forest.hot_path(forest.column_of(hot_key), start_node, threshold)
    if depth is None:
        depth = 1 if hot_path else {"top-down": 4, "bottom-up": 1, "flat": 2}[cmp.view]
    if top is None:
        top = 3 if hot_path else 10
    rows = choose_rows(forest, value_cols, sort_col, depth, top if top > 0 else None, hot,
                       start_node if not hot else None)
    return _format(cmp, forest, groups, rows, hot, hot_key, threshold, width)


def _cell_writers(forest: AlignedForest, groups: list[tuple[str, list[tuple[Key, str]]]], nodes: np.ndarray
                  ) -> list[list[Any]]:
    out = []
    for _, cols in groups:
        plain = [forest.key_values(k)[nodes] for k, _ in cols if not k.what.startswith("delta:")
                 and k.what != "cfvar"]
        write = notation(np.concatenate(plain) if plain else np.zeros(0))
        out.append([write for _ in cols])
    return out


def _cell(forest: AlignedForest, key: Key, node: int, write: Any) -> str:
    cmp = forest.cmp
    present = forest.present_in(node)
    if key.what.startswith("run:") or key.what.startswith("delta:"):
        run = int(key.what.split(":")[1])
        if not present[run]:
            return MISSING
        v = forest._matrices[(key.metric, key.side)][node, run]
        if key.what.startswith("run:"):
            return NOT_MEASURED if math.isnan(v) else write(v)
        b = forest._matrices[(key.metric, key.side)][node, cmp.baseline]
        if not present[cmp.baseline]:
            return "new"
        if math.isnan(v) or math.isnan(b):
            return NOT_MEASURED
        return _percent_change(v, b)
    v = float(forest.key_values(key)[node])
    if key.what == "cfvar":
        return "" if math.isnan(v) or v == 0 else f"{100 * v:.1f}%"
    if key.what == "change":
        b = forest._matrices[(key.metric, key.side)][node, cmp.baseline]
        if not present[cmp.baseline]:
            return "new"
        return "" if math.isnan(v) else _percent_change(b + v, b)
    return write(v)


def _percent_change(v: float, b: float) -> str:
    if v == b:
        return ""
    if b == 0:
        return "+inf%" if v > 0 else "-inf%"
    return f"{100 * (v - b) / abs(b):+.1f}%"


def _format(cmp: Comparison, forest: AlignedForest, groups: list[tuple[str, list[tuple[Key, str]]]],
            rows: list[Any], hot: list[int], hot_key: Key, threshold: float, width: int | None) -> str:
    nodes = np.array([r.node for r in rows if r.node >= 0], np.int64)
    writers = _cell_writers(forest, groups, nodes)
    table: list[list[str]] = []
    for r in rows:
        if r.node < 0:
            table.append([])
            continue
        table.append([_cell(forest, k, r.node, writers[g][c]) for g, (_, cols) in enumerate(groups)
                      for c, (k, _) in enumerate(cols)])
    heads = [h for _, cols in groups for _, h in cols]
    widths = [max([len(h)] + [len(t[i]) for t in table if t]) for i, h in enumerate(heads)]
    spans, pos = [], 0
    for title, cols in groups:
        w = sum(widths[pos:pos + len(cols)]) + 2 * (len(cols) - 1)
        spans.append(f"{title:^{w}}"[:max(w, len(title))])
        pos += len(cols)
    base = cmp.runs[cmp.baseline].label
    lines = [f"{len(cmp.runs)} runs, {cmp.view} view{', vendor-neutral' if cmp.vendor_neutral else ''}, "
             f"baseline {base}; Δ: change against it; {MISSING} context not in the run; {NOT_MEASURED} metric "
             "not in the run", "  ".join(spans),
             "  ".join(f"{h:>{w}}" for h, w in zip(heads, widths, strict=True)) + "  Scope"]
    for r, cells in zip(rows, table, strict=True):
        indent = "  " * r.depth
        if r.node < 0:
            lines.append(f"{' ' * (sum(widths) + 2 * len(widths))}{indent}  ({r.more} more)")
            continue
        text = "  ".join(f"{c:>{w}}" for c, w in zip(cells, widths, strict=True))
        text = f"{text}  {indent}{'» ' if r.hot else '  '}{forest.label(r.node)}"
        lines.append(text[:width].rstrip() if width else text.rstrip())
    if hot:
        end = hot[-1]
        v = forest.key_values(hot_key)[end]
        lines += ["", f"hot path ({hot_key.metric} {hot_key.side} {hot_key.what}, threshold "
                  f"{100 * threshold:g}%): {len(hot)} scopes, ends at {forest.label(end)} = "
                  f"{notation([v])(v, '0')}"]
    return "\n".join(lines) + "\n"


def render_catalog(cmp: Comparison) -> str:
    """The run catalog as a text table (one row per run)."""
    keys = sorted({k for r in cmp.runs for k in r.meta})
    heads = ["run", "program", "ranks", "threads", "gpu streams", "hosts", "start", "duration",
             "contexts", "metrics", *keys]
    rows = []
    for i, r in enumerate(cmp.runs):
        mark = "*" if i == cmp.baseline else ""
        rows.append([r.label + mark, r.program, str(r.ranks), str(r.threads), str(r.gpu_streams), str(r.hosts),
                     r.start or "-", "-" if r.duration_s is None else f"{r.duration_s:.3g} s", str(r.contexts),
                     str(len(r.metrics)), *(r.meta.get(k, "") for k in keys)])
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(heads)]
    out = ["  ".join(f"{h:<{w}}" for h, w in zip(heads, widths, strict=True)).rstrip()]
    out += ["  ".join(f"{c:<{w}}" for c, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    return "\n".join(out) + "\n(* baseline)\n"
