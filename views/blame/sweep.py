"""The time sweep of ``hpcsa blame``: work, idleness, overhead and GPU idle blame of one process.

A process's CPU trace lines and GPU stream lines (trace.db) are read window by window (a window holds about
``chunk`` elements of all lines together, found from a strided sample of the timestamps), so memory stays
bounded whatever the length of the run; lines are memory-mapped and only each window's slice is read.

Semantics of a trace line (HPCToolkit's trace.db): element ``k`` puts the thread in context ``ctx_k`` from
``t_k`` to ``t_{k+1}``; context 0 means "no context" (a CPU thread not running; a GPU stream with no
operation, hpcrun's ``NoActvty``). The last element only marks the end: after it, and before the first, the
thread is absent. A process has ``T`` CPU threads (its CPU profiles with a non-empty trace) and its span runs
from the first to the last element of any of them.

At every moment, ``W`` threads are working (their context's state is work or overhead), ``P`` are present
(working or idle), and the other ``T - W`` count as idle (waiting, or not running). Charges, in integer
nanoseconds per (thread, context, denominator) so that nothing is rounded before the end:

- a working thread gets ``dt`` of work (and of overhead, in runtime code) and ``dt * (T - W) / W`` of
  idleness (Adhianto et al. 2010, §2.1.1: each working thread carries a share ``I/W`` of the idle time);
- when no thread works, each present thread's waiting context gets ``dt * T / P``; when none is present
  either, ``dt * T`` goes to the global root of the process's first thread (unattributed). So per process
  work + idleness = ``T`` x span exactly;
- a waiting thread's own time is recorded too (``wait``), uncharged to anyone else.

GPU idle blame: a GPU (the streams of one process with the same GPU device, else the same GPU context id) is
busy while any of its streams has an operation; idle elsewhere within its span (first operation to last) --
or, with ``over_run``, within the span of the process's CPU threads and the GPU together. Each moment of GPU
idleness ``dt`` is split equally among the working threads (or, when none works, among the present ones)
and charged to their contexts in the class of the context (GPU sync / launch or copy API / other CPU code);
with no thread present it is unattributed (the global root of the process's first CPU profile, else of the
GPU's first stream). So blame = GPU idle time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import field

import numpy as np

from hpcsa.core.dataclass import dataclass
from hpcsa.views.blame.rules import IDLE, OVERHEAD, WORK

ABSENT = 3
MAX_THREADS = 1 << 15  # thread positions and denominators are packed into 64-bit keys


@dataclass
class Line:
    """One trace line: its profile index and the mmap'd element array (fields timestamp, ctxId)."""

    profile: int
    elements: np.ndarray

    @property
    def span(self) -> tuple[int, int]:
        ts = self.elements["timestamp"]
        return int(ts[0]), int(ts[-1])


class Acc:
    """Integer sums over packed keys (thread position, denominator, context), compacted as they grow."""

    def __init__(self) -> None:
        self.keys: list[np.ndarray] = []
        self.vals: list[np.ndarray] = []
        self.size = 0

    def add(self, pos: np.ndarray, den: np.ndarray | int, ctx: np.ndarray, val: np.ndarray) -> None:
        sel = val != 0
        if not sel.any():
            return
        den = np.broadcast_to(np.asarray(den, np.int64), pos.shape)
        key = (pos[sel].astype(np.int64) << 48) | (den[sel].astype(np.int64) << 32) | ctx[sel].astype(np.int64)
        self.keys.append(key)
        self.vals.append(val[sel].astype(np.int64))
        self.size += len(key)
        if self.size > 1 << 20:
            self.compact()

    def compact(self) -> tuple[np.ndarray, np.ndarray]:
        if not self.keys:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        key = np.concatenate(self.keys)
        val = np.concatenate(self.vals)
        uk, inv = np.unique(key, return_inverse=True)
        sums = np.zeros(len(uk), np.int64)
        np.add.at(sums, inv, val)
        self.keys, self.vals, self.size = [uk], [sums], len(uk)
        return uk, sums

    def items(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(thread position, denominator, context id, integer sum) sorted by key."""
        key, val = self.compact()
        return key >> 48, (key >> 32) & 0xFFFF, key & 0xFFFFFFFF, val


@dataclass
class GpuResult:
    key: tuple
    streams: list[int]  # profile indices
    span: tuple[int, int]
    run: tuple[int, int] = (0, 0)  # the process's whole run: its CPU lines and GPU lines together
    busy_ns: int = 0
    idle_ns: int = 0
    unattributed_ns: int = 0
    blame: dict[int, Acc] = field(default_factory=lambda: {c: Acc() for c in range(3)})


@dataclass
class ProcessResult:
    """The integer charges of one process (see the module docstring)."""

    threads: list[int]  # CPU profile indices, in thread order (position = index here)
    span: tuple[int, int] | None
    work: Acc = field(default_factory=Acc)
    overhead: Acc = field(default_factory=Acc)
    wait: Acc = field(default_factory=Acc)
    idleness: Acc = field(default_factory=Acc)  # value = dt * numerator; divide by the denominator
    unattributed_idleness_ns: int = 0
    gpus: list[GpuResult] = field(default_factory=list)


def _segments(line: np.ndarray, a: int, b: int, busy_only: bool = False
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The line's segments clipped to [a, b): (start, end, ctx id); absent time has ctx 0."""
    ts = line["timestamp"]
    # search with the array's own type: a Python int against uint64 would be compared as float64
    lo = int(np.searchsorted(ts, np.asarray(a, ts.dtype), "left"))
    hi = int(np.searchsorted(ts, np.asarray(b, ts.dtype), "left"))
    n = len(ts)
    sl = line[lo:hi]
    starts = np.empty(hi - lo + 1, np.int64)
    ctx = np.empty(hi - lo + 1, np.int64)
    starts[0] = a
    starts[1:] = sl["timestamp"].astype(np.int64)
    ctx[0] = int(line["ctxId"][lo - 1]) if 0 < lo < n else 0
    ctx[1:] = sl["ctxId"].astype(np.int64)
    if hi == n and hi > lo:
        ctx[-1] = 0  # the last element marks the end of the line
    ends = np.empty_like(starts)
    ends[:-1] = starts[1:]
    ends[-1] = b
    keep = ends > starts
    return starts[keep], ends[keep], ctx[keep]


def _busy_union(lines: Sequence[Line], a: int, b: int) -> np.ndarray:
    """Disjoint sorted busy intervals (rows of [start, end)) of some stream lines within [a, b)."""
    parts = [_segments(ln.elements, a, b) for ln in lines]
    s = np.concatenate([p[0][p[2] != 0] for p in parts]) if parts else np.zeros(0, np.int64)
    e = np.concatenate([p[1][p[2] != 0] for p in parts]) if parts else np.zeros(0, np.int64)
    if not len(s):
        return np.zeros((0, 2), np.int64)
    order = np.argsort(s, kind="stable")
    s, e = s[order], e[order]
    reach = np.maximum.accumulate(e)
    new = np.r_[True, s[1:] > reach[:-1]]
    starts = s[new]
    ends = np.maximum.reduceat(e, np.flatnonzero(new))
    return np.stack([starts, ends], 1)


def _complement(busy: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Idle intervals of [lo, hi) outside the busy ones."""
    if hi <= lo:
        return np.zeros((0, 2), np.int64)
    b = busy[(busy[:, 1] > lo) & (busy[:, 0] < hi)]
    edges = np.concatenate([[lo], np.clip(b.ravel(), lo, hi), [hi]]).reshape(-1, 2)
    return edges[edges[:, 1] > edges[:, 0]]


def window_bounds(lines: Sequence[Line], lo: int, hi: int, chunk: int) -> list[int]:
    """Window boundaries covering [lo, hi] with about ``chunk`` elements per window: quantiles of a strided
    sample of every line's timestamps (about 64 samples per window)."""
    total = sum(len(ln.elements) for ln in lines)
    m = -(-total // max(1, chunk))
    if m <= 1:
        return [lo, hi + 1]
    stride = max(1, total // (64 * m))
    sample = np.sort(np.concatenate([ln.elements["timestamp"][::stride].astype(np.int64) for ln in lines]))
    cuts = np.unique(sample[(np.arange(1, m) * len(sample)) // m])
    cuts = cuts[(cuts > lo) & (cuts <= hi)]
    return [lo, *cuts.tolist(), hi + 1]


def _runs(starts: np.ndarray, ends: np.ndarray, working: np.ndarray, present: np.ndarray, a: int, b: int,
          gpu_edges: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Breakpoints where W or P (or a GPU's idleness, given by its edges) change: (times, W, P) per run
    [times[r], times[r+1]); the last time is b."""
    t = np.concatenate([starts, ends])
    dw = np.concatenate([working, -working]).astype(np.int64)
    dp = np.concatenate([present, -present]).astype(np.int64)
    order = np.argsort(t, kind="stable")
    t, dw, dp = t[order], np.cumsum(dw[order]), np.cumsum(dp[order])
    last = np.r_[t[1:] != t[:-1], True]  # the counts after every event at that time
    t, w, p = t[last], dw[last], dp[last]
    keep = t < b
    t, w, p = t[keep], w[keep], p[keep]
    change = np.r_[True, (w[1:] != w[:-1]) | (p[1:] != p[:-1])]
    extra = np.setdiff1d(gpu_edges[(gpu_edges > a) & (gpu_edges < b)], t[change])
    times = np.union1d(t[change], extra)
    at = np.searchsorted(t, times, "right") - 1
    return np.r_[times, b], w[at], p[at]


def _explode(starts: np.ndarray, ends: np.ndarray, times: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pieces of segments cut at the run times: (segment index, run index, duration)."""
    r0 = np.searchsorted(times, starts, "right") - 1
    r1 = np.searchsorted(times, ends, "left")
    count = r1 - r0
    seg = np.repeat(np.arange(len(starts)), count)
    first = np.repeat(np.cumsum(count) - count, count)
    run = np.repeat(r0, count) + (np.arange(len(seg)) - first)
    dt = np.minimum(ends[seg], times[run + 1]) - np.maximum(starts[seg], times[run])
    return seg, run, dt


def _idle_mask(times: np.ndarray, idle: np.ndarray) -> np.ndarray:
    """Whether each run [times[r], times[r+1]) lies in one of the (disjoint, sorted) idle intervals."""
    mid = times[:-1]
    k = np.searchsorted(idle[:, 0], mid, "right") - 1 if len(idle) else np.full(len(mid), -1)
    ok = k >= 0
    out = np.zeros(len(mid), bool)
    out[ok] = idle[k[ok], 1] > mid[ok]
    return out


def sweep_process(cpu: Sequence[Line], gpus: Sequence[tuple[tuple, Sequence[Line]]],
                  state_of: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]], *, chunk: int = 1 << 17,
                  over_run: bool = False) -> ProcessResult:
    """Sweep one process (see the module docstring). ``state_of(ctx ids)`` gives (state, GPU class)."""
    T = len(cpu)
    if T >= MAX_THREADS:
        raise ValueError(f"a process with {T} traced threads (at most {MAX_THREADS - 1} are supported)")
    res = ProcessResult([ln.profile for ln in cpu], None)
    spans = [ln.span for ln in cpu]
    cpu_span = (min(s[0] for s in spans), max(s[1] for s in spans)) if spans else None
    if cpu_span is not None:
        res.span = cpu_span
    for key, lines in gpus:
        gs = [ln.span for ln in lines]
        lo, hi = min(s[0] for s in gs), max(s[1] for s in gs)
        if over_run and cpu_span is not None:
            lo, hi = min(lo, cpu_span[0]), max(hi, cpu_span[1])
        res.gpus.append(GpuResult(key, [ln.profile for ln in lines], (lo, hi)))
    all_lo = min([s[0] for s in spans] + [g.span[0] for g in res.gpus], default=None)
    if all_lo is None:
        return res
    all_hi = max([s[1] for s in spans] + [g.span[1] for g in res.gpus])
    for g in res.gpus:
        g.run = (all_lo, all_hi)
    all_lines = list(cpu) + [ln for _, lines in gpus for ln in lines]
    bounds = window_bounds(all_lines, all_lo, all_hi, chunk)
    todo = list(zip(bounds[:-1], bounds[1:], strict=True))[::-1]
    while todo:
        a, b = todo.pop()
        mid = _window(res, cpu, gpus, state_of, a, b, T, max_pieces=4 * chunk)
        if mid is not None:  # too many pieces: the halves, earlier first
            todo += [(mid, b), (a, mid)]
    return res


def _window(res: ProcessResult, cpu: Sequence[Line], gpus: Sequence[tuple[tuple, Sequence[Line]]],
            state_of: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]], a: int, b: int, T: int,
            max_pieces: int) -> int | None:
    """Charge the moments [a, b); or, when cutting the segments at every change of W and P would make more
    than ``max_pieces`` pieces (many threads changing state often), charge nothing and return a time to
    split the window at."""
    busies, idles = [], []
    for g, (_, lines) in zip(res.gpus, gpus, strict=True):
        busy = _busy_union(lines, a, b)
        lo, hi = max(a, g.span[0]), min(b, g.span[1])
        busies.append(np.clip(busy, lo, hi) if hi > lo else np.zeros((0, 2), np.int64))
        idles.append(_complement(busy, lo, hi))
    parts = [_segments(ln.elements, a, b) for ln in cpu]
    if parts:
        pos = np.concatenate([np.full(len(p[0]), i, np.int64) for i, p in enumerate(parts)])
        starts = np.concatenate([p[0] for p in parts])
        ends = np.concatenate([p[1] for p in parts])
        ctx = np.concatenate([p[2] for p in parts])
        state, klass = state_of(ctx)
        state = np.where(ctx == 0, ABSENT, state)
        working = (state == WORK) | (state == OVERHEAD)
        present = working | (state == IDLE)
        edges = np.concatenate([np.asarray(res.span, np.int64), *[idle.ravel() for idle in idles]])
        times, W, P = _runs(starts, ends, working.astype(np.int64), present.astype(np.int64), a, b, edges)
        n_pieces = int((np.searchsorted(times, ends, "left") - np.searchsorted(times, starts, "right") + 1).sum())
        if n_pieces > max_pieces and b - a > 1 and len(times) > 2:
            return int(times[len(times) // 2])
    for g, busy_in, idle in zip(res.gpus, busies, idles, strict=True):
        g.busy_ns += int((busy_in[:, 1] - busy_in[:, 0]).sum())
        g.idle_ns += int((idle[:, 1] - idle[:, 0]).sum())
    if not parts:
        for g, idle in zip(res.gpus, idles, strict=True):
            g.unattributed_ns += int((idle[:, 1] - idle[:, 0]).sum())
        return None
    dur = ends - starts
    res.work.add(pos[working], 0, ctx[working], dur[working])
    ov = state == OVERHEAD
    res.overhead.add(pos[ov], 0, ctx[ov], dur[ov])
    wt = state == IDLE
    res.wait.add(pos[wt], 0, ctx[wt], dur[wt])
    seg, run, dt = _explode(starts, ends, times)
    w, p = W[run], P[run]
    s_work, s_idle = working[seg], state[seg] == IDLE
    if res.span is None:
        raise RuntimeError("CPU lines without their span (sweep_process sets it)")
    in_cpu = (times[run] >= res.span[0]) & (times[run] < res.span[1])
    # idleness: working threads carry (T - W) / W; with none working, present ones carry T / P
    sel = s_work & in_cpu
    res.idleness.add(pos[seg[sel]], w[sel], ctx[seg[sel]], dt[sel] * (T - w[sel]))
    sel = s_idle & (w == 0) & in_cpu
    res.idleness.add(pos[seg[sel]], p[sel], ctx[seg[sel]], dt[sel] * T)
    gap = (p == 0) & (pos[seg] == 0) & in_cpu  # nobody present: one piece per moment (thread 0's)
    res.unattributed_idleness_ns += int((dt[gap] * T).sum())
    for g, idle in zip(res.gpus, idles, strict=True):
        if not len(idle):
            continue
        idle_run = _idle_mask(times, idle)[run]
        target = idle_run & ((s_work & (w > 0)) | (s_idle & (w == 0)))
        den = np.where(w > 0, w, p)
        cls = klass[seg]
        for c in range(3):
            sel = target & (cls == c)
            g.blame[c].add(pos[seg[sel]], den[sel], ctx[seg[sel]], dt[sel])
        lost = idle_run & (p == 0) & (pos[seg] == 0)
        g.unattributed_ns += int(dt[lost].sum())
    return None
