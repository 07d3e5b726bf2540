"""The trace view's data: per-pixel summaries of trace.db, never whole traces.

A trace line is a sequence of samples (time, context); a sample lasts until the next one, the last one until
the database's end time (as ``hpcsa export-trace`` reads them). As in hpctraceviewer, a pixel column of a
row shows the sample active at the pixel's middle time, coloured by the procedure frame at the chosen
call-path depth (depth 0 is the entry point, 1 the first procedure, ...; a sample whose call path is
shallower shows its deepest frame); samples of context 0 (no activity) are blank. When there are more profiles than pixel rows, rows are sampled
evenly. Rows are the profiles in profile.db order with CPU threads first and GPU streams after.

A window's summary adds, per procedure at the depth, the time every profile of the row range spent in
it within the window (sample durations clipped to the window). Trace lines are read on first use and
kept, as the Python API reads them (:meth:`hpcsa.aggregate.tracedb.TraceDB.trace`).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import numpy as np

from hpcsa.aggregate.tracedb import NO_MAX_TIMESTAMP
from hpcsa.views import tree as T

if TYPE_CHECKING:
    from hpcsa.views.experiment import Experiment

MAX_WIDTH = 4096
MAX_HEIGHT = 2048


class TraceModel:
    def __init__(self, exp: Experiment) -> None:
        self.exp = exp
        self.tdb = exp.db.trace
        if self.tdb is None or not len(self.tdb):
            raise LookupError("the database has no trace.db (measure with hpcrun -t)")
        self.td = exp.top_down()
        info = {p.index: p for p in exp.profiles}
        slots = list(range(len(self.tdb)))
        prof = self.tdb.prof_index.tolist()
        gpu = [bool(info[p].gpu) if p in info else False for p in prof]
        self.order = [s for s in slots if not gpu[s]] + [s for s in slots if gpu[s]]
        self.labels = [info[prof[s]].label if prof[s] in info else f"profile {prof[s]}" for s in self.order]
        self.gpu = [gpu[s] for s in self.order]
        self._lines: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._at_depth: dict[int, np.ndarray] = {}
        self._color: dict[str, int] = {}
        self._row_color: dict[int, int] = {}
        self._lock = threading.Lock()
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

    def line(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """(times, CCT rows) of the ``i``-th row's trace."""
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
        out = np.full(len(frames), -1, np.int64)
        uniq, inv = np.unique(frames, return_inverse=True)
        ids = np.empty(len(uniq), np.int64)
        with self._lock:
            for k, r in enumerate(uniq.tolist()):
                cid = self._row_color.get(r)
                if cid is None:
                    name = self.name(r)
                    cid = self._row_color[r] = self._color.setdefault(name, len(self._color))
                ids[k] = cid
        out[:] = ids[inv.reshape(-1)]
        return out

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
        rows_out, seen = [], set()
        for i in self.pick_rows(first, count, height):
            ts, rows = self.line(i)
            px = np.full(width, -1, np.int64)
            if len(ts):
                at = np.searchsorted(ts, mids, side="right") - 1
                ok = (at >= 0) & (mids < max(self.t_max, int(ts[-1]) + 1))
                r = rows[at[ok]]
                good = r > 0  # context 0, the global root, is "no activity" in traces: drawn blank
                vals = np.full(len(r), -1, np.int64)
                vals[good] = self.colors(anc[r[good]])
                px[ok] = vals
            change = np.flatnonzero(np.r_[True, px[1:] != px[:-1]])
            lengths = np.diff(np.r_[change, width])
            runs = np.empty(2 * len(change), np.int64)
            runs[0::2], runs[1::2] = px[change], lengths
            seen.update(px[change].tolist())
            rows_out.append({"row": i, "runs": runs.tolist()})
        seen.discard(-1)
        return {"t0": t0, "t1": t1, "width": width, "depth": depth, "rows": rows_out,
                "legend": {str(k): v for k, v in self.legend(seen).items()}}

    def window(self, t0: int, t1: int, depth: int, first: int = 0, count: int | None = None,
               top: int = 25) -> dict[str, Any]:
        """Time per procedure (at ``depth``) within [t0, t1) over the rows ``first .. first+count``."""
        anc = self.at_depth(depth)
        count = len(self.order) if count is None else count
        last = min(len(self.order), first + count)
        total = np.zeros(len(self.exp.cct))
        idle = 0
        for i in range(max(first, 0), last):
            ts, rows = self.line(i)
            if not len(ts):
                continue
            ends = np.r_[ts[1:], max(self.t_max, int(ts[-1]))]
            dur = np.minimum(ends, t1) - np.maximum(ts, t0)
            ok = (dur > 0) & (rows > 0)
            idle += int(dur[(dur > 0) & (rows == 0)].sum())
            total += np.bincount(anc[rows[ok]], weights=dur[ok].astype(np.float64), minlength=len(total))
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
