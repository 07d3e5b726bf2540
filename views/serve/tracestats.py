"""The trace view's numbers beside the picture: window statistics and the depth view of one line.

Window statistics (hpctraceviewer's statistics of a selected region): over the rows a request shows and a
time window [t0, t1), how long the lines were present (from their first element to their last,
:meth:`hpcsa.formats.db.tracedb.TraceDB.line_bounds`), how much of that was activity and how much context 0
(no activity), and the activity per procedure at the chosen depth or per leaf procedure. Every number is a
sum of sample durations clipped to the window, so ``present = busy + idle <= rows x (t1 - t0)`` always: a
line counts only while it exists, never up to the database's end.

The depth view (hpctraceviewer's depth view): one line's call path over time, a pixel row per call-path
depth, each showing the frame at that depth of the sample active at the pixel's middle time (blank where
the call path is shallower).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from hpcsa.views.names import FULL_NAMES
from hpcsa.views.serve.trace import MAX_WIDTH

if TYPE_CHECKING:
    from hpcsa.views.serve.trace import TraceModel


def _segments(tm: TraceModel, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every sample of the given rows as (start, end, CCT row): element k lasts to element k + 1; a line's
    last element only marks its end."""
    ts, ctx, off = tm.all_lines()
    lo, hi = off[rows], off[rows + 1] - 1  # the last element starts no segment
    n = np.maximum(hi - lo, 0)
    k = np.repeat(lo - np.cumsum(n) + n, n) + np.arange(int(n.sum()))
    return ts[k], ts[k + 1], ctx[k]


def window(tm: TraceModel, t0: int, t1: int, depth: int, first: int = 0, count: int | None = None,
           color: str = "depth", hide_empty: bool = False, top: int = 25) -> dict[str, Any]:
    """Presence, activity and time per procedure within [t0, t1) over the shown rows ``first .. first+count``
    (see the module docstring); times in ns."""
    t1 = max(t1, t0 + 1)
    shown = tm.shown(hide_empty)
    count = len(shown) if count is None else count
    first = max(0, min(first, len(shown)))
    rows = shown[first:max(first, min(len(shown), first + count))]
    start, end, ctx = _segments(tm, rows)
    dur = np.minimum(end, t1) - np.maximum(start, t0)
    inside = dur > 0
    dur, ctx = dur[inside], ctx[inside]
    busy = ctx > 0
    anc = tm.frames(color, depth)
    total = np.bincount(anc[ctx[busy]], weights=dur[busy].astype(np.float64), minlength=len(tm.exp.cct))
    hit = np.flatnonzero(total > 0)
    by_name: dict[str, float] = {}
    full: dict[str, str] = {}
    token = FULL_NAMES.set(False)
    try:
        for r, v in zip(hit.tolist(), total[hit].tolist(), strict=True):
            n = tm.name(r)
            by_name[n] = by_name.get(n, 0.0) + v
            if (f := tm.exp.full_name_of(r)) is not None:
                full[n] = f
    finally:
        FULL_NAMES.reset(token)
    whole = float(total.sum())
    items = sorted(by_name.items(), key=lambda kv: (-kv[1], kv[0]))
    procs = [{"name": n, "time": v, "share": v / whole if whole else 0.0,
              "color": tm.color_of_name(n, full.get(n, "")), **({"full": full[n]} if n in full else {})}
             for n, v in items[:top]]
    lifetime = np.minimum(tm.end[rows], t1) - np.maximum(tm.start[rows], t0)
    present = int(np.maximum(lifetime[tm.start[rows] >= 0], 0).sum())
    return {"t0": t0, "t1": t1, "depth": depth, "color": color, "rows": len(rows), "window": t1 - t0,
            "capacity": len(rows) * (t1 - t0), "present": present, "busy": int(dur[busy].sum()),
            "idle": int(dur[~busy].sum()), "total": whole, "procedures": procs, "more": max(0, len(items) - top)}


def depth_view(tm: TraceModel, pos: int, t0: int, t1: int, width: int, hide_empty: bool = False
               ) -> dict[str, Any]:
    """One shown row's call path over [t0, t1): per depth 0.. (the deepest sampled in the window), the colour
    runs of the frame at that depth."""
    shown = tm.shown(hide_empty)
    if not 0 <= pos < len(shown):
        raise LookupError(f"no trace row {pos}")
    i = int(shown[pos])
    width = max(1, min(width, MAX_WIDTH))
    t1 = max(t1, t0 + 1)
    mids = t0 + (np.arange(width) + 0.5) * ((t1 - t0) / width)
    r = tm.sample_rows(i, mids)
    ok = r >= 0
    leaf = tm.exp.cct.frame_of[r[ok]]
    deepest = int(tm.frame_depth[leaf].max(initial=-1))
    rows_out, seen = [], set()
    for d in range(deepest + 1):
        line = np.full(width, -1, np.int64)
        f = tm.at_depth(d)[r[ok]]
        deep_enough = tm.frame_depth[f] == d
        cols = np.flatnonzero(ok)[deep_enough]
        if len(cols):
            line[cols] = tm.colors(f[deep_enough])
        change = np.flatnonzero(np.concatenate(([True], line[1:] != line[:-1])))
        runs = np.empty(2 * len(change), np.int64)
        runs[0::2], runs[1::2] = line[change], np.diff(np.append(change, width))
        rows_out.append({"depth": d, "runs": runs.tolist()})
        seen.update(np.unique(line[line >= 0]).tolist())
    return {"row": pos, "label": f"{tm.groups[tm.group[i]]} {tm.labels[i]}", "t0": t0, "t1": t1,
            "width": width, "depths": rows_out, "legend": tm.legend(seen)}
