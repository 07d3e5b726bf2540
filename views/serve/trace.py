"""The trace view's data: per-pixel summaries of trace.db, never whole traces.

A trace line is a sequence of samples (time, context); a sample lasts until the next one, the last one until
the database's end time (as ``hpcsa export-trace`` reads them). As in hpctraceviewer, a pixel column of a
row shows the sample active at the pixel's middle time, coloured by the procedure frame at the chosen
call-path depth (depth 0 is the entry point, 1 the first procedure, ...; a sample whose call path is
shallower shows its deepest frame); samples of context 0 (no activity) are blank. When there are more profiles than pixel rows, rows are sampled
evenly. Rows are the profiles in profile.db order with CPU threads first and GPU streams after.

A window's summary adds, per procedure at the depth, the time every profile of the row range spent in
it within the window (sample durations clipped to the window). Trace lines are read on first use and
kept, as the Python API reads them (:meth:`hpcsa.formats.db.tracedb.TraceDB.trace`).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import numpy as np

from hpcsa.formats.db.tracedb import NO_MAX_TIMESTAMP
from hpcsa.views import tree as T

if TYPE_CHECKING:
    from hpcsa.views.experiment import Experiment

MAX_WIDTH = 4096
MAX_HEIGHT = 2048


class TraceModel:
    def __init__(self, exp: Experiment) -> None:
        self.exp = exp
        tdb = exp.db.trace
        if tdb is None or not len(tdb):
            raise LookupError("the database has no trace.db (measure with hpcrun -t)")
        self.tdb = tdb
        self.td = exp.top_down()
        info = {p.index: p for p in exp.profiles}
        slots = list(range(len(self.tdb)))
        prof = self.tdb.prof_index.tolist()
        gpu = [bool(info[p].gpu) if p in info else False for p in prof]
        self.order = [s for s in slots if not gpu[s]] + [s for s in slots if gpu[s]]
        self.labels = [info[prof[s]].label if prof[s] in info else f"profile {prof[s]}" for s in self.order]
        self.gpu = [gpu[s] for s in self.order]
        self._lines: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._all: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
        self._at_depth: dict[int, np.ndarray] = {}
        self._color: dict[str, int] = {}
        self._color_of_row: np.ndarray | None = None
        self._lock = threading.RLock()
        c = exp.cct
        frame = c.is_frame & (c.kind != T.ROOT)
        fdepth = np.zeros(len(c), np.int64)
        for rows in c.levels[1:]:
            fdepth[rows] = fdepth[c.parent[rows]] + frame[rows]
        self.frame_depth = fdepth - 1  # an entry point is at depth 0
        self.max_depth = int(self.frame_depth.max(initial=0))
        lo, hi = int(self.tdb.min_timestamp), int(self.tdb.max_timestamp)
        if hi >= NO_MAX_TIMESTAMP or hi < lo:
            lo, hi = 0, 0
        self.t_min, self.t_max = lo, hi

    def meta(self) -> dict[str, Any]:
        return {"rows": len(self.order), "labels": self.labels, "gpu": self.gpu, "t_min": self.t_min,
                "t_max": self.t_max, "max_depth": self.max_depth, "cpu_rows": self.gpu.count(False)}

    def all_lines(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Every row's samples end to end: (times, CCT rows, end times, offsets of the rows), read once."""
        with self._lock:
            if self._all is None:
                raw = [self.tdb.trace(s) for s in self.order]
                sizes = np.array([len(r) for r in raw], np.int64)
                offsets = np.r_[0, np.cumsum(sizes)]
                ts = np.concatenate([r["timestamp"] for r in raw]).astype(np.int64) if raw else np.zeros(0, np.int64)
                ctx = np.concatenate([r["ctxId"] for r in raw]).astype(np.int64) if raw else np.zeros(0, np.int64)
                ends = np.r_[ts[1:], 0] if len(ts) else ts
                last = offsets[1:][sizes > 0] - 1
                ends[last] = np.maximum(self.t_max, ts[last])
                self._all = (ts, self.exp.cct.row_of(ctx), ends, offsets)
                self._lines.clear()
            return self._all

    def line(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """(times, CCT rows) of the ``i``-th row's trace."""
        if self._all is not None:
            ts, rows, _, off = self._all
            return ts[off[i]:off[i + 1]], rows[off[i]:off[i + 1]]
        got = self._lines.get(i)
        if got is None:
            raw = self.tdb.trace(self.order[i])
            got = (raw["timestamp"].astype(np.int64), self.exp.cct.row_of(raw["ctxId"].astype(np.int64)))
            self._lines[i] = got
        return got

    def at_depth(self, depth: int) -> np.ndarray:
        """For every CCT row, the frame row at call-path ``depth`` above it (or its deepest frame)."""
        depth = max(0, min(depth, self.max_depth))
        got = self._at_depth.get(depth)
        if got is None:
            c = self.exp.cct
            f = c.frame_of.copy()
            need = np.flatnonzero(self.frame_depth[f] > depth)
            while len(need):
                f[need] = c.frame_of[c.parent[f[need]]]
                need = need[self.frame_depth[f[need]] > depth]
            got = self._at_depth[depth] = f
        return got

    def colors(self, frames: np.ndarray) -> np.ndarray:
        """Colour ids of frame rows: one per procedure name, assigned in order of first appearance."""
        with self._lock:
            if self._color_of_row is None:
                self._color_of_row = np.full(len(self.exp.cct), -1, np.int64)
            table = self._color_of_row
            present = np.flatnonzero(np.bincount(frames, minlength=len(table)))
            for r in present[table[present] < 0].tolist():
                table[r] = self._color.setdefault(self.name(r), len(self._color))
            return table[frames]

    def name(self, row: int) -> str:
        return self.exp.scope_name(row) if row >= 0 else "(no sample)"

    def legend(self, ids: set[int]) -> dict[int, str]:
        names = {v: k for k, v in self._color.items()}
        return {i: names[i] for i in sorted(ids) if i in names}

    def pick_rows(self, first: int, count: int, height: int) -> list[int]:
        first = max(0, min(first, len(self.order)))
        last = max(first, min(first + max(count, 0), len(self.order)))
        n = last - first
        height = max(1, min(height, MAX_HEIGHT))
        if n <= height:
            return list(range(first, last))
        return sorted(set((first + np.floor(np.arange(height) * n / height)).astype(np.int64).tolist()))

    def pixels(self, t0: int, t1: int, width: int, depth: int, first: int, count: int, height: int
               ) -> dict[str, Any]:
        width = max(1, min(width, MAX_WIDTH))
        t1 = max(t1, t0 + 1)
        mids = t0 + (np.arange(width) + 0.5) * ((t1 - t0) / width)
        anc = self.at_depth(depth)
        picked = self.pick_rows(first, count, height)
        frames = np.full((len(picked), width), -1, np.int64)  # the frame row under every pixel
        for k, i in enumerate(picked):
            ts, rows = self.line(i)
            if not len(ts):
                continue
            at = np.searchsorted(ts, mids, side="right") - 1
            ok = (at >= 0) & (mids < max(self.t_max, int(ts[-1]) + 1))
            r = rows[at[ok]]
            # context 0, the global root, is "no activity" in traces: drawn blank
            frames[k, np.flatnonzero(ok)] = np.where(r > 0, anc[np.maximum(r, 0)], -1)
        px = np.full(frames.shape, -1, np.int64)
        busy = frames >= 0
        px[busy] = self.colors(frames[busy])
        rows_out = []
        for k, i in enumerate(picked):
            line = px[k]
            change = np.flatnonzero(np.concatenate(([True], line[1:] != line[:-1])))
            runs = np.empty(2 * len(change), np.int64)
            runs[0::2], runs[1::2] = line[change], np.diff(np.append(change, width))
            rows_out.append({"row": i, "runs": runs.tolist()})
        seen = set(np.flatnonzero(np.bincount(px[busy], minlength=1)).tolist())
        return {"t0": t0, "t1": t1, "width": width, "depth": depth, "rows": rows_out,
                "legend": {str(k): v for k, v in self.legend(seen).items()}}

    def window(self, t0: int, t1: int, depth: int, first: int = 0, count: int | None = None,
               top: int = 25) -> dict[str, Any]:
        """Time per procedure (at ``depth``) within [t0, t1) over the rows ``first .. first+count``."""
        anc = self.at_depth(depth)
        count = len(self.order) if count is None else count
        last = min(len(self.order), first + count)
        ts, rows, ends, off = self.all_lines()
        lo, hi = off[max(first, 0)], off[max(last, first, 0)]
        ts, rows, ends = ts[lo:hi], rows[lo:hi], ends[lo:hi]
        dur = np.minimum(ends, t1) - np.maximum(ts, t0)
        ok = (dur > 0) & (rows > 0)
        idle = int(dur[(dur > 0) & (rows == 0)].sum())
        total = np.bincount(anc[rows[ok]], weights=dur[ok].astype(np.float64), minlength=len(self.exp.cct))
        hit = np.flatnonzero(total > 0)
        by_name: dict[str, float] = {}
        for r, v in zip(hit.tolist(), total[hit].tolist(), strict=True):
            n = self.name(r)
            by_name[n] = by_name.get(n, 0.0) + v
        whole = float(total.sum())
        items = sorted(by_name.items(), key=lambda kv: (-kv[1], kv[0]))
        with self._lock:
            procs = [{"name": n, "time": v, "share": v / whole if whole else 0.0,
                      "color": self._color.setdefault(n, len(self._color))} for n, v in items[:top]]
        return {"t0": t0, "t1": t1, "depth": depth, "rows": last - max(first, 0), "total": whole, "idle": idle,
                "procedures": procs, "more": max(0, len(items) - top)}

    def call_path(self, i: int, t: int) -> dict[str, Any]:
        """The sample of row ``i`` active at time ``t`` and its call path (top-down nodes, root first)."""
        if not 0 <= i < len(self.order):
            raise LookupError(f"no trace row {i}")
        ts, rows = self.line(i)
        at = int(np.searchsorted(ts, t, side="right")) - 1 if len(ts) else -1
        if at < 0 or rows[at] < 0:
            return {"row": i, "label": self.labels[i], "time": t, "path": []}
        node = int(rows[at])
        while node >= 0 and self.td.parent[node] == -2:  # an absorbed call-site line shows as its callee
            node = int(np.flatnonzero(self.td.merged_from == node)[0])
        path = [n for n in self.td.ancestors(node) if n > 0]
        return {"row": i, "label": self.labels[i], "time": t, "sample_time": int(ts[at]),
                "path": [{"node": n, "label": self.td.label(n), "depth": int(self.frame_depth[n])} for n in path]}
