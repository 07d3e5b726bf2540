"""CPU trace lines from vendor API-call intervals: what each CPU thread was doing over time.

Vendor records (Nsight Systems' CUDA runtime and driver calls, rocpd's and rocprofv3's HIP/HSA API calls,
Kineto's ``cuda_runtime`` events) hold the start and end of every API call of every thread. hpcrun's own
CPU trace is a sequence of samples (time, calling context); from the calls we write the equivalent: at a
call's start the thread enters the call's context (its call stack where the source has one, else the API
call under the thread root), at its end it returns to the enclosing call or, outside any call, to the thread
root -- the thread ran CPU code the records do not break down. A call nested in another (a runtime call
that made a driver call) is entered and left within its outer call, and never outlives it. The line starts
at the thread's first call and ends at the end of its last one: its last element marks the end
(:meth:`hpcsa.formats.db.tracedb.TraceDB.line_bounds`), and the ``.hpcrun`` header's trace time range is the
same.

With these lines ``hpcsa blame`` sees the CPU side of vendor data: GPU idle time while a thread waits in a
synchronisation call is blamed on that call, while it is in a launch or copy API on the launch, and while it
runs code outside the API on the thread root (CPU-bound).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def call_line(calls: np.ndarray, node_of: Callable[[int, int], int], root: int) -> tuple[np.ndarray, np.ndarray]:
    """(times, CCT node ids) of one thread's trace line from its API calls (``API_DTYPE`` rows; any order).
    ``node_of(stack, name)`` is the context node of a call (called once per distinct call context)."""
    if not len(calls):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    start = calls["start"].astype(np.int64)
    end = np.maximum(calls["end"].astype(np.int64), start)
    order = np.lexsort((-end, start))  # by start; the enclosing call first where two start together
    start, end = start[order], end[order]
    key = np.stack([calls["stack"][order].astype(np.int64), calls["name"][order].astype(np.int64)], 1)
    uniq, inv = np.unique(key, axis=0, return_inverse=True)
    nodes = np.array([node_of(int(s), int(n)) for s, n in uniq.tolist()], np.int64)[inv.reshape(-1)]
    n = len(start)
    reach = np.maximum.accumulate(end)  # the latest end so far
    top = np.r_[True, start[1:] >= reach[:-1]]  # not inside an earlier call
    outer = np.maximum.accumulate(np.where(top, np.arange(n), -1))  # the top-level call around each
    inner_end = np.minimum(end, end[outer])
    # a top-level call's end returns to the root; an inner call's to its outer call, unless they end together
    back = ~top & (inner_end < end[outer])
    times = np.concatenate([start, end[top], inner_end[back]])
    ctx = np.concatenate([nodes, np.full(int(top.sum()), root, np.int64), nodes[outer[back]]])
    kind = np.concatenate([np.ones(n, np.int64), np.zeros(len(times) - n, np.int64)])  # ends first at a tie
    seq = np.concatenate([np.arange(n), np.flatnonzero(top), np.flatnonzero(back)])
    o = np.lexsort((seq, kind, times))
    times, ctx = times[o], ctx[o]
    # one element per time: the state after everything that happened then
    last = np.r_[times[1:] != times[:-1], True]
    return times[last], ctx[last]
