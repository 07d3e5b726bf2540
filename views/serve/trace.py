"""The trace view's data: per-pixel summaries of trace.db, never whole traces (hpctraceviewer's main view).

A trace line is a sequence of samples (time, context); a sample lasts until the next one, and the line ends
at its last element (:meth:`hpcsa.formats.db.tracedb.TraceDB.line_bounds`: the profile's own trace end,
never the database's), as ``hpcsa export-trace`` and ``hpcsa blame`` read it. As in hpctraceviewer, a pixel
column of a row shows the sample active at the pixel's middle time, coloured either by the procedure frame
at the chosen call-path depth (depth 0 is the entry point, 1 the first procedure, ...; a sample whose call
path is shallower shows its deepest frame) or by its leaf procedure (a GPU stream's kernel); samples of
context 0 (no activity) and time outside the line are blank. When there are more rows than pixel rows,
rows are sampled evenly.

Rows are grouped by process (:mod:`hpcsa.views.processes`: rank, or run where processes share an
identity), CPU threads in thread order, then GPU streams; rows whose line has no activity at all can be
hidden (``hide_empty``), and every request names its rows as positions in the list it shows. Colours are
one per procedure (short) name, assigned in order of first appearance and kept for the server's life, so a
procedure keeps its colour between requests. The depth view of one line and the window statistics are in
:mod:`hpcsa.views.serve.tracestats`.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import numpy as np

from hpcsa.views import tree as T
from hpcsa.views.names import FULL_NAMES

if TYPE_CHECKING:
    from hpcsa.views.experiment import Experiment

MAX_WIDTH = 4096
MAX_HEIGHT = 2048
COLOR_MODES = ("depth", "leaf")


class TraceModel:
    """The trace lines of one database in row order, read once, and their per-pixel summaries."""

    def __init__(self, exp: Experiment) -> None:
        self.exp = exp
        tdb = exp.db.trace
        if tdb is None or not len(tdb):
            raise LookupError("the database has no trace.db (measure with hpcrun -t)")
        self.tdb = tdb
        self.td = exp.top_down()
        slot_of = {int(p): s for s, p in enumerate(tdb.prof_index.tolist())}
        procs = exp.processes
        self.order: list[int] = []  # trace.db slot of each row
        self.profile: list[int] = []
        self.group: list[int] = []  # the process (position in procs.processes) of each row
        for g, proc in enumerate(procs.processes):
            for index in proc.profiles:
                if index in slot_of:
                    self.order.append(slot_of[index])
                    self.profile.append(index)
                    self.group.append(g)
        info = {p.index: p for p in exp.profiles}
        self.gpu = [bool(info[p].gpu) for p in self.profile]
        self.labels = [procs.thread_label(p) for p in self.profile]
        self.groups = [p.label for p in procs.processes]
        self._lock = threading.RLock()
        self._all: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._busy: np.ndarray | None = None
        self._at_depth: dict[int, np.ndarray] = {}
        self._color: dict[str, int] = {}
        self._full: dict[int, str] = {}
        self._color_of_row: np.ndarray | None = None
        c = exp.cct
        frame = c.is_frame & (c.kind != T.ROOT)
        fdepth = np.zeros(len(c), np.int64)
        for rows in c.levels[1:]:
            fdepth[rows] = fdepth[c.parent[rows]] + frame[rows]
        self.frame_depth = fdepth - 1  # an entry point is at depth 0
        self.max_depth = int(self.frame_depth.max(initial=0))
        start, end = tdb.line_bounds()
        self.start = start[self.order] if self.order else np.zeros(0, np.int64)
        self.end = end[self.order] if self.order else np.zeros(0, np.int64)
        present = self.start >= 0
        self.t_min = int(self.start[present].min()) if present.any() else 0
        self.t_max = int(self.end[present].max()) if present.any() else 0

    # -- rows ----------------------------------------------------------------------------------------------

    def all_lines(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every row's samples end to end: (times, CCT rows, offsets of the rows), read once."""
        with self._lock:
            if self._all is None:
                raw = [self.tdb.trace(s) for s in self.order]
                sizes = np.array([len(r) for r in raw], np.int64)
                offsets = np.r_[0, np.cumsum(sizes)].astype(np.int64)
                ts = np.concatenate([r["timestamp"] for r in raw]).astype(np.int64) if raw else np.zeros(0, np.int64)
                ctx = np.concatenate([r["ctxId"] for r in raw]).astype(np.int64) if raw else np.zeros(0, np.int64)
                self._all = (ts, self.exp.cct.row_of(ctx), offsets)
            return self._all

    def line(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """(times, CCT rows) of the ``i``-th row's trace (all rows in the database's row order)."""
        ts, rows, off = self.all_lines()
        return ts[off[i]:off[i + 1]], rows[off[i]:off[i + 1]]

    def busy_rows(self) -> np.ndarray:
        """Whether each row's line has any activity (a sample of a context other than 0)."""
        with self._lock:
            if self._busy is None:
                self._busy = self._find_busy()
            return self._busy

    def _find_busy(self) -> np.ndarray:
        ts, rows, off = self.all_lines()
        active = (rows > 0).astype(np.int64)
        # the last element only marks the end: it does not count as activity
        if len(off) > 1:
            last = off[1:] - 1
            active[last[off[1:] > off[:-1]]] = 0
        counts = np.add.reduceat(active, off[:-1]) if len(active) else np.zeros(len(self.order), np.int64)
        counts[off[1:] == off[:-1]] = 0
        return counts > 0

    def shown(self, hide_empty: bool) -> np.ndarray:
        """The rows a request's positions refer to: all, or those with activity."""
        return np.flatnonzero(self.busy_rows()) if hide_empty else np.arange(len(self.order))

    def meta(self, hide_empty: bool = False) -> dict[str, Any]:
        shown = self.shown(hide_empty)
        return {"rows": len(shown), "all_rows": len(self.order), "row_ids": shown.tolist(),
                "labels": [self.labels[i] for i in shown], "gpu": [self.gpu[i] for i in shown],
                "group": [self.group[i] for i in shown], "groups": self.groups,
                "profiles": [self.profile[i] for i in shown],
                "t_min": self.t_min, "t_max": self.t_max, "unit": "ns", "max_depth": self.max_depth,
                "cpu_rows": sum(not self.gpu[i] for i in shown), "color_modes": list(COLOR_MODES)}

    def pick_rows(self, shown: np.ndarray, first: int, count: int, height: int) -> np.ndarray:
        """Positions ``first .. first+count`` of the shown rows, sampled evenly down to ``height``."""
        first = max(0, min(first, len(shown)))
        last = max(first, min(first + max(count, 0), len(shown)))
        n = last - first
        height = max(1, min(height, MAX_HEIGHT))
        if n <= height:
            return np.arange(first, last)
        return np.unique((first + np.floor(np.arange(height) * n / height)).astype(np.int64))

    # -- colours -------------------------------------------------------------------------------------------

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

    def frames(self, mode: str, depth: int) -> np.ndarray:
        """The frame row that colours each CCT row: at ``depth`` (mode ``depth``) or its own (``leaf``)."""
        if mode not in COLOR_MODES:
            raise ValueError(f"color must be one of {', '.join(COLOR_MODES)}")
        return self.exp.cct.frame_of if mode == "leaf" else self.at_depth(depth)

    def colors(self, frames: np.ndarray) -> np.ndarray:
        """Colour ids of frame rows: one per procedure (short) name, assigned in order of first appearance."""
        with self._lock:
            if self._color_of_row is None:
                self._color_of_row = np.full(len(self.exp.cct), -1, np.int64)
            table = self._color_of_row
            present = np.flatnonzero(np.bincount(frames, minlength=len(table)))
            new = present[table[present] < 0].tolist()
            if new:
                short = FULL_NAMES.set(False)  # colours go by short names, whatever the request shows
                try:
                    for r in new:
                        table[r] = self.color_of_name(self.name(r), self.exp.full_name_of(r) or "")
                finally:
                    FULL_NAMES.reset(short)
            return table[frames]

    def color_of_name(self, name: str, full: str = "") -> int:
        with self._lock:
            k = self._color.setdefault(name, len(self._color))
            if full:
                self._full.setdefault(k, full)
            return k

    def name(self, row: int) -> str:
        return self.exp.scope_name(row) if row >= 0 else "(no sample)"

    def legend(self, ids: set[int] | list[int]) -> dict[str, dict[str, str]]:
        """Colour id -> short name and, where it differs, the full name."""
        with self._lock:
            names = {v: k for k, v in self._color.items()}
            out: dict[str, dict[str, str]] = {}
            for i in sorted(ids):
                if i in names:
                    out[str(i)] = {"name": names[i], **({"full": self._full[i]} if i in self._full else {})}
            return out

    # -- the main view ---------------------------------------------------------------------------------------

    def sample_rows(self, i: int, mids: np.ndarray) -> np.ndarray:
        """The CCT row of row ``i``'s sample active at each time (-1 outside the line and in context 0)."""
        ts, rows = self.line(i)
        out = np.full(len(mids), -1, np.int64)
        if len(ts) < 2:
            return out
        at = np.searchsorted(ts, mids, side="right") - 1
        ok = (at >= 0) & (mids < ts[-1])  # the line ends at its last element
        r = rows[at[ok]]
        out[ok] = np.where(r > 0, r, -1)
        return out

    def pixels(self, t0: int, t1: int, width: int, depth: int, first: int, count: int, height: int,
               color: str = "depth", hide_empty: bool = False) -> dict[str, Any]:
        """The colour runs of the shown rows ``first .. first+count`` (sampled to ``height``) over ``width``
        pixel columns of [t0, t1)."""
        width = max(1, min(width, MAX_WIDTH))
        t1 = max(t1, t0 + 1)
        mids = t0 + (np.arange(width) + 0.5) * ((t1 - t0) / width)
        anc = self.frames(color, depth)
        shown = self.shown(hide_empty)
        picked = self.pick_rows(shown, first, count, height)
        frames = np.full((len(picked), width), -1, np.int64)
        for k, pos in enumerate(picked.tolist()):
            r = self.sample_rows(int(shown[pos]), mids)
            ok = r >= 0
            frames[k, ok] = anc[r[ok]]
        px = np.full(frames.shape, -1, np.int64)
        busy = frames >= 0
        px[busy] = self.colors(frames[busy])
        rows_out = []
        for k, pos in enumerate(picked.tolist()):
            line = px[k]
            change = np.flatnonzero(np.concatenate(([True], line[1:] != line[:-1])))
            runs = np.empty(2 * len(change), np.int64)
            runs[0::2], runs[1::2] = line[change], np.diff(np.append(change, width))
            rows_out.append({"row": pos, "runs": runs.tolist()})
        seen = np.flatnonzero(np.bincount(px[busy], minlength=1)).tolist() if busy.any() else []
        return {"t0": t0, "t1": t1, "width": width, "depth": depth, "color": color, "first": first,
                "count": count, "rows": rows_out, "legend": self.legend(seen)}

    def call_path(self, pos: int, t: int, hide_empty: bool = False) -> dict[str, Any]:
        """The sample of shown row ``pos`` active at time ``t`` and its call path (top-down nodes, root
        first)."""
        shown = self.shown(hide_empty)
        if not 0 <= pos < len(shown):
            raise LookupError(f"no trace row {pos}")
        i = int(shown[pos])
        label = f"{self.groups[self.group[i]]} {self.labels[i]}"
        node = int(self.sample_rows(i, np.array([t], np.int64))[0])
        if node < 0:
            return {"row": pos, "label": label, "time": t, "path": []}
        ts, _ = self.line(i)
        at = int(np.searchsorted(ts, t, side="right")) - 1
        while node >= 0 and self.td.parent[node] == -2:  # an absorbed call-site line shows as its callee
            node = int(np.flatnonzero(self.td.merged_from == node)[0])
        path = [n for n in self.td.ancestors(node) if n > 0]
        return {"row": pos, "label": label, "time": t, "sample_time": int(ts[at]),
                "path": [{"node": n, "label": self.td.label(n), "depth": int(self.frame_depth[n]),
                          **({"full": f} if (f := self.exp.full_name_of(n)) else {})} for n in path]}
