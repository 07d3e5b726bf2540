"""User ranges as calling contexts: NVTX, roctx and PyTorch ``record_function`` ranges become frames
``<range> NAME`` above the API calls made inside them.

A call lies in a range when its start lies in [range start, range end] on the
range's thread (or on any thread of the process for a range of the whole
process, ``thread = -1``). The ranges a call lies in become its outermost
frames, outermost range first (by start, then longest first), above the call's
own stack (its CPU call path, or the API call itself where the source has no
stack). Nested push/pop ranges therefore nest; overlapping start/end ranges
nest in order of their starts.

Work is per range boundary, not per call: between two boundaries of one thread
the set of open ranges is constant, so the calls are mapped to those segments
with one ``searchsorted`` per thread.
"""

from __future__ import annotations

import numpy as np

from hpcsa.ingest import model as M

PREFIX = "<range> "


def range_frame(trace: M.GpuTrace, name_id: int) -> M.Frame:
    name = PREFIX + trace.strings[name_id]
    return M.Frame(f"[{trace.range_domain} ranges]", M.named_address(name), name)


def open_sets(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, list[tuple[int, ...]]]:
    """For intervals [start, end] of one thread: the boundary times (sorted) and, for the segment after
    k boundaries, the intervals open in it (outermost first). A time t falls in segment
    ``searchsorted(times, t, side="right")``."""
    start, end = np.asarray(start, np.int64), np.asarray(end, np.int64)
    n = len(start)
    # A call at time t is inside [s, e]: the interval opens at s and closes at e + 1.
    times = np.concatenate([start, end + 1])
    is_close = np.concatenate([np.zeros(n, np.int8), np.ones(n, np.int8)])
    which = np.concatenate([np.arange(n), np.arange(n)])
    order = np.lexsort((which, is_close, times))
    rank_key = np.lexsort((np.arange(n), -(end - start), start))
    rank = np.empty(n, np.int64)
    rank[rank_key] = np.arange(n)
    open_: dict[int, int] = {}
    sets: list[tuple[int, ...]] = [()]
    for close, r in zip(is_close[order].tolist(), which[order].tolist(), strict=True):
        if close:
            open_.pop(r, None)
        else:
            open_[r] = int(rank[r])
        sets.append(tuple(sorted(open_, key=open_.__getitem__)))
    return times[order], sets


def apply_ranges(trace: M.GpuTrace) -> int:
    """Put each API call below the ranges it lies in; return the number of calls that got range frames."""
    rg = trace.ranges
    apis = trace.apis
    if not len(rg) or not len(apis):
        return 0
    rg = rg[rg["end"] >= rg["start"]]
    new_stack = apis["stack"].copy()
    made: dict[tuple[int, tuple[int, ...], int], int] = {}
    frame_of: dict[int, M.Frame] = {}  # by name: ranges of one name are one frame
    changed = 0
    keys = np.stack([apis["process"], apis["thread"]], axis=1)
    threads, inv = np.unique(keys, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    for ti, (pid, tid) in enumerate(threads.tolist()):
        mine_r = np.flatnonzero((rg["process"] == pid) & ((rg["thread"] == tid) | (rg["thread"] == -1)))
        if not len(mine_r):
            continue
        calls = np.flatnonzero(inv == ti)
        times, sets = open_sets(rg["start"][mine_r], rg["end"][mine_r])
        seg = np.searchsorted(times, apis["start"][calls], side="right")
        # One new stack per distinct (range set, old stack, name); Python runs over those only.
        keys_c = np.stack([seg, apis["stack"][calls], apis["name"][calls]], axis=1)
        uniq, u_inv = np.unique(keys_c, axis=0, return_inverse=True)
        out = np.empty(len(uniq), np.int64)
        for ui, (s, old, name) in enumerate(uniq.tolist()):
            open_ = tuple(int(rg["name"][mine_r[r]]) for r in sets[s])
            if not open_:
                out[ui] = old
                continue
            key = (old, open_, name if old < 0 else -1)
            if key not in made:
                below = trace.stacks[old] if old >= 0 else (M.Frame(M.API_FRAME, 0, trace.strings[name]),)
                above = tuple(frame_of.get(n) or frame_of.setdefault(n, range_frame(trace, n)) for n in open_)
                trace.stacks.append(above + tuple(below))
                made[key] = len(trace.stacks) - 1
            out[ui] = made[key]
        got = out[u_inv.reshape(-1)]
        changed += int(np.count_nonzero(got != apis["stack"][calls]))
        new_stack[calls] = got
    apis["stack"] = new_stack
    return changed


def range_paths(trace: M.GpuTrace, pid: int) -> dict[int, set[tuple[M.Frame, ...]]]:
    """Per thread (-1: the process), the frame path of every range of ``pid`` (the ranges open at its start,
    itself included), for sources with ranges and no GPU operations."""
    rg = trace.ranges[(trace.ranges["process"] == pid) & (trace.ranges["end"] >= trace.ranges["start"])]
    out: dict[int, set[tuple[M.Frame, ...]]] = {}
    for tid in np.unique(rg["thread"]).tolist():
        mine = np.flatnonzero((rg["thread"] == tid) | (rg["thread"] == -1))
        times, sets = open_sets(rg["start"][mine], rg["end"][mine])
        seg = np.searchsorted(times, rg["start"][mine], side="right")
        out[tid] = {tuple(range_frame(trace, int(rg["name"][mine[k]])) for k in sets[s]) for s in np.unique(seg)}
    return out
