"""All ranks of a measurement on one timeline.

First the records' own clocks: every reader normalizes its times to ns, in UTC where the records tie their
clock to it (Nsight Systems' session start ``utcEpochNs``, CUPTI's default CLOCK_REALTIME in PyTorch traces,
Kineto's ``baseTimeNanoseconds``). Hosts' clocks still differ by their synchronization error, and some
clocks (CLOCK_BOOTTIME of rocprofiler-sdk, a Score-P timer without a realtime anchor) are not UTC at all.

Then the ranks themselves: a collective completes at the same instant on every rank that takes part (its
last participant releases all of them; see the clock-synchronization methods of Becker et al., "Implications
of non-constant clock drifts for the timestamps of concurrent events", CLUSTER 2008, and Scalasca's
post-mortem timestamp correction). The end of each NCCL/RCCL collective kernel and of each MPI collective
call is matched across ranks by (name, occurrence); per rank, the median difference to the reference rank
(the lowest) is its offset, and where a rank has many matches over a long run, a linear drift is fitted
too. Ranks linked only through others are corrected along the chain. Traces on UTC clocks are linked only
where their spans overlap (runs recorded at different times are not one run).

The correction and the skew it leaves (the spread of matched collective ends across ranks, before and
after) are reported in the ingest summary.
"""

from __future__ import annotations

import re
from collections import deque

import numpy as np

from hpcsa.core.dataclass import dataclass
from hpcsa.ingest import model as M
from hpcsa.ingest.ranks import unit_masks, written_pids

COLLECTIVE_KERNEL = re.compile(r"nccl|rccl", re.IGNORECASE)
MPI_COLLECTIVE = re.compile(r"^P?MPI_(Allreduce|Reduce|Bcast|Barrier|Allgatherv?|Alltoallv?|Alltoallw|"
                            r"Reduce_scatter(_block)?|Gatherv?|Scatterv?|Scan|Exscan)$", re.IGNORECASE)
#: Spans on UTC clocks that do not come this close (ns) are different runs.
OVERLAP_SLACK_NS = 10 * 10**9
#: Drift is fitted only for a rank with this many matches over at least this span (ns) ...
DRIFT_MIN_MATCHES, DRIFT_MIN_SPAN_NS = 8, 10**9
#: ... and kept only when it at least halves the spread an offset alone leaves.
DRIFT_GAIN = 0.5


@dataclass
class Unit:
    """One process's collectives: their keys (name, occurrence) and end times (ns)."""

    trace: M.GpuTrace
    pid: int
    rank: int
    keys: dict[tuple[str, int], int]
    lo: int
    hi: int


@dataclass
class ClockReport:
    ranks: int = 0
    matched: int = 0  # collective instances seen on two or more ranks
    aligned: int = 0  # ranks corrected (the reference ones included)
    largest_offset_ns: int = 0
    drift_ppm: float = 0.0  # the largest fitted drift
    skew_before_ns: tuple[int, int] = (0, 0)  # max, median
    skew_after_ns: tuple[int, int] = (0, 0)
    groups: int = 0  # groups of ranks linked by collectives (each corrected on its own)
    corrected: int = 0  # ranks whose clock was moved
    jitter_ns: int = 0  # the spread of single collective ends that is noise, not clock error
    clocks: int = 0  # recordings (files and hosts) the ranks come from: each has one clock
    note: str = ""

    def text(self) -> str:
        if self.note:
            return f"clocks: {self.note}"
        if self.clocks == 1:
            what = f"the {self.aligned} ranks share one recording's clock ({self.matched} matched collective(s))"
        elif self.corrected:
            drift = f", drift up to {self.drift_ppm:.2f} ppm" if self.drift_ppm else ""
            what = (f"{self.corrected} of {self.aligned} rank(s) corrected by their offsets to {self.matched} "
                    f"matched collective(s) (largest {_us(self.largest_offset_ns)}{drift})")
        else:
            what = (f"{self.matched} matched collective(s) on {self.aligned} ranks agree within their jitter "
                    f"({_us(self.jitter_ns)}): no correction")
        if self.groups > 1:
            what += f"; {self.groups} groups of ranks with no collective in common, each aligned on its own"
        return (f"clocks: {what}; collective skew max {_us(self.skew_before_ns[0])} -> {_us(self.skew_after_ns[0])}, "
                f"median {_us(self.skew_before_ns[1])} -> {_us(self.skew_after_ns[1])}")


def _us(ns: int) -> str:
    return f"{ns / 1000:.1f} us"


def collective_ends(tr: M.GpuTrace, pid: int) -> dict[tuple[str, int], int]:
    """(collective name, occurrence) -> end time of a process's collective kernels and MPI collective calls."""
    ops_mask, api_mask, _ = unit_masks(tr, pid)
    coll_name = np.array([bool(COLLECTIVE_KERNEL.search(s)) for s in tr.strings] + [False])
    mpi_name = np.array([bool(MPI_COLLECTIVE.match(s)) for s in tr.strings] + [False])
    out: dict[tuple[str, int], int] = {}
    for names, ends, pick, named in ((tr.ops["name"], tr.ops["end"], ops_mask & (tr.ops["kind"] == M.KERNEL),
                                      coll_name), (tr.apis["name"], tr.apis["end"], api_mask, mpi_name)):
        sel = np.flatnonzero(pick & named[names])
        if not len(sel):
            continue
        sel = sel[np.argsort(ends[sel], kind="stable")]
        seen: dict[str, int] = {}
        for name_id, end in zip(names[sel].tolist(), ends[sel].tolist(), strict=True):
            base = tr.strings[name_id].split("(")[0].strip()
            k = seen.get(base, 0)
            seen[base] = k + 1
            out[(base, k)] = int(end)
    return out


def align_clocks(traces: list[M.GpuTrace]) -> ClockReport | None:
    """Correct each rank's times by the offset (and drift) its collectives show; None for a measurement of
    fewer than two ranks."""
    units = []
    for tr in traces:
        for pid in written_pids(tr):
            info = tr.processes.get(pid)
            if info is None or info.rank is None:
                continue
            keys = collective_ends(tr, pid)
            ops_mask, api_mask, _ = unit_masks(tr, pid)
            times = np.concatenate([tr.ops["start"][ops_mask], tr.ops["end"][ops_mask], tr.apis["start"][api_mask]])
            units.append(Unit(tr, pid, info.rank, keys, int(times.min()) if len(times) else 0,
                              int(times.max()) if len(times) else 0))
    if len(units) < 2:
        return None
    base = min(u.lo for u in units)  # times relative to it: float64 cannot hold epoch ns exactly
    for u in units:
        u.keys = {k: v - base for k, v in u.keys.items()}
        u.lo, u.hi = u.lo - base, u.hi - base
    report = ClockReport(ranks=len({u.rank for u in units}))
    if report.ranks < len(units):
        report.note = "ranks repeat (windows of one process recorded apart): left as recorded"
        return report
    worlds = {w for u in units if (w := u.trace.processes[u.pid].world) is not None}
    if len(worlds) > 1:
        report.note = (f"ranks of different runs (world sizes {', '.join(map(str, sorted(worlds)))}): left as "
                       "recorded")
        return report
    if not any(u.keys for u in units):
        report.note = "no NCCL/MPI collectives to match: left as the records give them"
        return report
    units.sort(key=lambda u: u.rank)
    pairs = {(i, j): _linked(units[i], units[j]) for i in range(len(units)) for j in range(i + 1, len(units))}
    shared = {(i, k) for (i, j), keys in pairs.items() for k in keys} | \
        {(j, k) for (i, j), keys in pairs.items() for k in keys}
    if not shared:
        report.note = "no collective seen on two ranks of one run: left as the records give them"
        return report
    zero = [0.0] * len(units)
    group = _groups(len(units), pairs)
    offset, drift, t0, jitter, report.clocks = _solve(units, shared, group)
    before = _skew(units, shared, group, list(zero), zero)
    report.skew_before_ns = before[:2]
    report.matched = before[2]
    report.skew_after_ns = _skew(units, shared, group, offset, drift, t0)[:2]
    report.jitter_ns = int(round(jitter))
    groups = len({group[i] for i, _ in shared})
    report.aligned = sum(1 for i in range(len(units)) if any((i, k) in shared for k in units[i].keys))
    report.corrected = sum(1 for i in range(len(units)) if offset[i] or drift[i])
    report.largest_offset_ns = int(max(abs(o) for o in offset))
    report.drift_ppm = max((abs(d) * 1e6 for d in drift), default=0.0)
    report.groups = groups
    for i, u in enumerate(units):
        if offset[i] or drift[i]:
            _shift(u, offset[i], drift[i], base + t0)
    return report


def _linked(a: Unit, b: Unit) -> list[tuple[str, int]]:
    """The collectives two ranks share, where both took part in as many of that name; none for two spans on
    UTC clocks that do not overlap (different runs)."""
    if a.trace.utc and b.trace.utc and (a.lo > b.hi + OVERLAP_SLACK_NS or b.lo > a.hi + OVERLAP_SLACK_NS):
        return []
    count_a: dict[str, int] = {}
    count_b: dict[str, int] = {}
    for name, _ in a.keys:
        count_a[name] = count_a.get(name, 0) + 1
    for name, _ in b.keys:
        count_b[name] = count_b.get(name, 0) + 1
    return [k for k in a.keys if k in b.keys and count_a[k[0]] == count_b.get(k[0])]


def _groups(n: int, pairs: dict[tuple[int, int], list[tuple[str, int]]]) -> list[int]:
    """Per unit, the lowest unit it is linked to through shared collectives (itself when none)."""
    group = list(range(n))
    for start in range(n):
        if group[start] != start:
            continue
        queue = deque([start])
        while queue:
            i = queue.popleft()
            for j in range(start + 1, n):
                if group[j] == j and j != start and pairs.get((min(i, j), max(i, j))):
                    group[j] = start
                    queue.append(j)
    return group


def _solve(units: list[Unit], shared: set[tuple[int, tuple[str, int]]], group: list[int]
           ) -> tuple[list[float], list[float], float, float, int]:
    """Per unit: offset (ns) and drift (ns per ns since ``t0``); t0; the jitter of collective ends (ns); the
    number of clocks (recordings).

    Within a group, each collective's consensus end is the median of its ranks' corrected ends, and a clock's
    offset the median of its ranks' differences to the consensus (a median polish: one slow rank moves
    neither the consensus nor the others). The processes of one recording (one file, one host) share its
    clock and move together. An offset or drift smaller than three times the jitter of single collective
    ends (the median, over ranks, of the robust spread of their differences) is noise, not clock error: the
    clock is left as recorded."""
    n = len(units)
    clock_of: dict[tuple[int, int], int] = {}
    clock = [clock_of.setdefault((id(u.trace), u.trace.processes[u.pid].host), len(clock_of)) for u in units]
    members = [[i for i in range(n) if clock[i] == c] for c in range(len(clock_of))]
    off = [0.0] * len(members)
    drift_c = [0.0] * len(members)
    t0 = float(min(u.lo for u in units))
    keys_of = [[k for k in u.keys if (i, k) in shared] for i, u in enumerate(units)]

    def gaps(c: int, consensus: dict[tuple[int, str, int], float]) -> tuple[np.ndarray, np.ndarray]:
        e = np.array([units[i].keys[k] for i in members[c] for k in keys_of[i]], np.float64)
        m = np.array([consensus[(group[i], *k)] for i in members[c] for k in keys_of[i]], np.float64)
        return e, m - e

    for _ in range(4):
        consensus = _consensus(units, keys_of, group, [off[clock[i]] for i in range(n)])
        for c in range(len(members)):
            e, gap = gaps(c, consensus)
            if len(e):
                off[c] = float(np.median(gap))
        ref = {g: off[clock[g]] for g in set(group)}  # the lowest rank of a group keeps its clock
        off = [off[c] - ref[group[members[c][0]]] for c in range(len(members))]
    consensus = _consensus(units, keys_of, group, [off[clock[i]] for i in range(n)])
    spreads = []
    for c in range(len(members)):
        e, gap = gaps(c, consensus)
        if len(e):
            r = gap - off[c]
            spreads.append(1.4826 * float(np.median(np.abs(r - np.median(r)))))
    jitter = float(np.median(spreads)) if spreads else 0.0
    for c in range(len(members)):
        e, gap = gaps(c, consensus)
        if len(e) >= DRIFT_MIN_MATCHES and np.ptp(e) >= DRIFT_MIN_SPAN_NS:
            slope, icpt = np.polyfit(e - t0, gap, 1)
            if np.ptp(gap - (slope * (e - t0) + icpt)) <= DRIFT_GAIN * np.ptp(gap - off[c]) and \
                    abs(slope) * np.ptp(e) > 3 * jitter:
                off[c], drift_c[c] = float(icpt), float(slope)
        if not drift_c[c] and abs(off[c]) <= 3 * jitter:
            off[c] = 0.0
    return [off[clock[i]] for i in range(n)], [drift_c[clock[i]] for i in range(n)], t0, jitter, len(members)


def _consensus(units: list[Unit], keys_of: list[list[tuple[str, int]]], group: list[int], offset: list[float]
               ) -> dict[tuple[int, str, int], float]:
    ends: dict[tuple[int, str, int], list[float]] = {}
    for i, u in enumerate(units):
        for k in keys_of[i]:
            ends.setdefault((group[i], *k), []).append(u.keys[k] + offset[i])
    return {k: float(np.median(v)) for k, v in ends.items()}


def _skew(units: list[Unit], shared: set[tuple[int, tuple[str, int]]], group: list[int], offset: list[float],
          drift: list[float], t0: float = 0.0) -> tuple[int, int, int]:
    """(max, median) spread of the corrected ends of the collectives the ranks of one group share, and their
    number."""
    ends: dict[tuple[int, str, int], list[float]] = {}
    for i, u in enumerate(units):
        for key, end in u.keys.items():
            if (i, key) in shared:
                ends.setdefault((group[i], *key), []).append(end + offset[i] + drift[i] * (end - t0))
    spreads = [max(v) - min(v) for v in ends.values() if len(v) > 1]
    if not spreads:
        return 0, 0, 0
    return int(round(max(spreads))), int(round(float(np.median(spreads)))), len(spreads)


def _shift(u: Unit, offset: float, drift: float, t0: int | float) -> None:
    tr = u.trace
    ops_mask, api_mask, range_mask = unit_masks(tr, u.pid)
    for table, mask in ((tr.ops, ops_mask), (tr.apis, api_mask), (tr.ranges, range_mask)):
        if not np.any(mask):
            continue
        for col in ("start", "end"):
            t = table[col][mask]
            table[col][mask] = t + np.rint(offset + drift * (t - int(t0)).astype(np.float64)).astype(np.int64)
