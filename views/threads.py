"""Thread aggregation (Lorenz et al., "Preventing the explosion of exascale profile data with smart
thread-level aggregation"): a new database whose profiles are per-process aggregates of threads.

Profiles are grouped by process (their identifier tuple without THREAD, CORE and GPU identifiers) and, within a
process, CPU threads apart from GPU streams. Each group becomes:

- ``sum``: one profile, the element-wise sum of the group;
- ``set``: one profile holding the sum and, for every metric and propagation scope, the statistics of the
  group as extra metrics ``M:min``, ``M:max``, ``M:count``, ``M:sumsq`` (so inclusive *and* exclusive values
  keep their statistics, which summing exclusive values into inclusive ones could not recover). As in
  hpcprof's summary statistics, a thread without a value at a context takes no part: ``count`` is the number
  of threads that have it, ``min``/``max`` are over those; mean = sum / count, variance = sumsq / count -
  mean^2;
- ``key``: the initial thread (the group's first: lowest thread or stream id), the slowest and the fastest of
  the others by time in *work* contexts, and one profile summing the rest (§4.3 of that paper);
- ``calltree``: one profile per cluster of threads that visited exactly the same set of contexts.

Every output profile carries a ``num_threads`` metric (at the global root) with the number of threads it
stands for. An aggregate takes the identifier tuple of its first member (unique, and a real identity);
``aggregation.yaml`` in the new database says which profile stands for which threads and in what role.
Traces are kept for output profiles that are a single thread. The summary profile is recomputed from the new
profiles under the same summary statistics, so the Sum of every context is unchanged.

Work classifier (``key``): a context is *not work* when it runs inside a procedure whose name matches
:data:`NOT_WORK` -- OpenMP idleness and waiting (``<omp idle>``, ``<omp ... wait>``, ``GOMP_*wait*``,
``__kmp*wait*``), GPU synchronization (``<gpu sync>``, ``cuda*Synchronize``, ``hip*Synchronize``), MPI waits
(``MPI_Wait*``, ``MPI_Barrier``, ``MPI_Recv``, ``MPI_Probe``, and their ``PMPI_`` forms), barriers (any name
containing ``barrier``) and locks (``pthread_mutex_lock``, ``pthread_cond_*wait``, ``pthread_spin_lock``,
``omp_set_*lock``, ``__kmp_acquire_*``, ``futex_wait``, ``sem_wait``, ``sched_yield``). A thread's work time is
its total time minus the time under such procedures, in the work metric: the first time metric (CPUTIME,
REALTIME, cycles, perf cpu/task clock; for GPU streams GPUOP/GKER) with data in the group, or ``--work-metric``.
"""

from __future__ import annotations

import os
import re
from dataclasses import field
from typing import Any

import numpy as np
import yaml

from hpcsa.core.dataclass import dataclass
from hpcsa.core.digests import blake2b
from hpcsa.core.errors import HpcsaError
from hpcsa.formats.db import metadb
from hpcsa.formats.db.profiledb import ProfileValues, id_tuple
from hpcsa.views import tree as T
from hpcsa.views.data import ProfileInfo
from hpcsa.views.dbwrite import Profile, SummaryInputs, extended_taxonomy, write_from_profiles
from hpcsa.views.experiment import Experiment

STRATEGIES = ("sum", "set", "key", "calltree")
SET_STATS = ("min", "max", "count", "sumsq")
NUM_THREADS = "num_threads"

#: Names of procedures inside which a context is not work (the ``key`` strategy's classifier, above).
NOT_WORK = re.compile(
    r"^<omp idle>$|^<omp .*wait.*>$|^GOMP_.*wait|^__kmp.*wait|gomp_.*wait"
    r"|^<gpu sync>$|^cuda.*Synchronize|^hip.*Synchronize"
    r"|^P?MPI_(Wait|Waitall|Waitany|Waitsome|Barrier|Recv|Probe|Mprobe)\b"
    r"|barrier"
    r"|^pthread_mutex_lock|^pthread_cond_(timed)?wait|^pthread_spin_lock|^omp_set_(nest_)?lock"
    r"|^__kmp_acquire_|^futex_wait|^sem_wait|^sched_yield",
    re.IGNORECASE)
CPU_TIME = re.compile(r"^(CPUTIME|REALTIME|cycles|perf::(cpu-clock|task-clock))\b", re.IGNORECASE)
GPU_TIME = re.compile(r"^(GPUOP|GKER)\b", re.IGNORECASE)


@dataclass
class OutputProfile:
    """One profile of the aggregated database and the threads it stands for."""

    members: list[int]  # original profile indices
    role: str
    process: str
    gpu: bool
    values: ProfileValues = field(repr=False, default_factory=ProfileValues.empty)
    work: list[float] | None = None


def is_not_work(name: str | None) -> bool:
    return bool(name and NOT_WORK.search(name) is not None)


# -- grouping ----------------------------------------------------------------------------------------------


def groups_of(exp: Experiment) -> list[tuple[str, bool, list[ProfileInfo]]]:
    """(process label, GPU?, members in thread order) for every process and class, in canonical order."""
    by: dict[tuple[Any, bool], list[ProfileInfo]] = {}
    for p in exp.profiles:
        by.setdefault((p.process, p.gpu), []).append(p)
    out = []
    for (process, gpu), members in sorted(by.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        members.sort(key=lambda p: (tuple(sorted(p.ids.items())), p.index))
        label = " ".join(f"{k.lower()} {v}" for k, v in process) or "process"
        out.append((label, gpu, members))
    return out


# -- combining profiles (vectorized over all values of a group) -------------------------------------------


def _triples(profiles: list[ProfileValues]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    ctx = np.concatenate([p.value_ctx_ids() for p in profiles]).astype(np.int64)
    met = np.concatenate([p.metric_ids for p in profiles]).astype(np.int64)
    val = np.concatenate([p.values for p in profiles])
    return ctx, met, val


def combine(profiles: list[ProfileValues], stats: dict[int, dict[str, int]] | None = None,
            extra: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> ProfileValues:
    """The element-wise sum of ``profiles``; with ``stats`` (prop id -> statistic -> new prop id) also their
    min, max, count and sum of squares per (context, metric) as the new metric ids."""
    ctx, met, val = _triples(profiles)
    key = ctx * 65536 + met
    order = np.argsort(key, kind="stable")
    key, val = key[order], val[order]
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]]) if len(key) else np.zeros(0, np.int64)
    ukey = key[starts]
    out_ctx, out_met = [ukey // 65536], [ukey % 65536]
    out_val = [np.add.reduceat(val, starts) if len(val) else np.zeros(0)]
    if stats:
        uprop = ukey % 65536
        reductions = {"min": lambda: np.minimum.reduceat(val, starts), "max": lambda: np.maximum.reduceat(val, starts),
                      "count": lambda: np.diff(np.append(starts, len(val))).astype(np.float64),
                      "sumsq": lambda: np.add.reduceat(val * val, starts)}
        for stat, compute in reductions.items():
            table = np.full(65536, -1, np.int64)
            for prop, ids in stats.items():
                table[prop] = ids[stat]
            new = table[uprop]
            ok = new >= 0
            if len(val) and ok.any():
                out_ctx.append(ukey[ok] // 65536)
                out_met.append(new[ok])
                out_val.append(compute()[ok])
    if extra is not None:
        out_ctx.append(extra[0])
        out_met.append(extra[1])
        out_val.append(extra[2])
    return ProfileValues.from_triples(np.concatenate(out_ctx), np.concatenate(out_met), np.concatenate(out_val))


# -- the KEY strategy's work times -------------------------------------------------------------------------


def not_work_rows(exp: Experiment) -> np.ndarray:
    """Rows at the top of a not-work subtree (a not-work frame with no not-work frame above it)."""
    c = exp.cct
    names = exp.meta.functions.names
    bad_fn = np.array([is_not_work(n) for n in names], bool) if names else np.zeros(0, bool)
    fn = (c.kind == T.FUNCTION) & (c.function >= 0)
    marked = np.zeros(len(c), bool)
    if len(bad_fn):
        marked[fn] = bad_fn[c.function[fn]]
    # inside a marked subtree: +1 at its start, -1 at its end, running sum
    rows = np.flatnonzero(marked)
    delta = np.zeros(len(c) + 1, np.int64)
    np.add.at(delta, rows, 1)
    np.add.at(delta, c.end[rows], -1)
    inside = np.cumsum(delta[:-1]) > 0
    above = np.zeros(len(c), bool)
    above[1:] = inside[c.parent[1:]]
    return np.flatnonzero(marked & ~above)


def work_metric(exp: Experiment, gpu: bool, members: list[ProfileValues], forced: str | None) -> str | None:
    """The metric whose time in work contexts ranks threads: --work-metric, else the first time metric
    (CPU or GPU kind) with data in these profiles, else the first metric with data."""
    if forced:
        return exp.measured_metric(forced)
    present = set()
    for pv in members:
        present.update(np.unique(pv.metric_ids).tolist())
    with_data = []
    for m in exp.meta.metrics:
        try:
            if exp.meta.prop_metric_id(m.name, "execution") in present:
                with_data.append(m.name)
        except KeyError:
            continue
    pattern = GPU_TIME if gpu else CPU_TIME
    return next((m for m in with_data if pattern.search(m)), with_data[0] if with_data else None)


def work_times(exp: Experiment, members: list[ProfileValues], metric: str | None, stop: np.ndarray) -> list[float]:
    """Each profile's time in work contexts: its total minus the time under not-work procedures."""
    if metric is None:
        return [0.0] * len(members)
    mid = exp.meta.prop_metric_id(metric, "execution")
    stop_ids = np.sort(exp.cct.ctx_id[stop])
    entry_ids = exp.cct.ctx_id[exp.cct.kind == T.ENTRY]
    out = []
    for pv in members:
        sel = pv.metric_ids == mid
        ctx, val = pv.value_ctx_ids()[sel].astype(np.int64), pv.values[sel]
        total = val[ctx == 0].sum() if (ctx == 0).any() else val[np.isin(ctx, entry_ids)].sum()
        out.append(float(total - val[np.isin(ctx, stop_ids)].sum()))
    return out


# -- the strategies ----------------------------------------------------------------------------------------


def plan(exp: Experiment, strategy: str, work_metric_name: str | None = None) -> tuple[list[OutputProfile], dict]:
    """The output profiles (members, roles, values) of a strategy, and notes for aggregation.yaml."""
    if strategy not in STRATEGIES:
        raise HpcsaError(None, f"unknown strategy {strategy!r} (choose from {', '.join(STRATEGIES)})")
    pdb = exp.db.profiles
    out: list[OutputProfile] = []
    notes: dict[str, Any] = {}
    stop = not_work_rows(exp) if strategy == "key" else np.zeros(0, np.int64)
    for process, gpu, members in groups_of(exp):
        values = {p.index: pdb.profile(p.index) for p in members}
        idx = [p.index for p in members]
        kind = "GPU streams" if gpu else "threads"
        if strategy in ("sum", "set"):
            out.append(OutputProfile(idx, f"aggregated {kind}" if strategy == "sum" else f"statistics of {kind}",
                                     process, gpu))
        elif strategy == "calltree":
            clusters: dict[bytes, list[int]] = {}
            for i in idx:
                digest = blake2b(np.ascontiguousarray(values[i].ctx_ids).tobytes(), digest_size=16).digest()
                clusters.setdefault(digest, []).append(i)
            for k, group in enumerate(clusters.values()):
                out.append(OutputProfile(group, f"cluster {k}", process, gpu))
        else:
            metric = work_metric(exp, gpu, list(values.values()), work_metric_name)
            work = dict(zip(idx, work_times(exp, [values[i] for i in idx], metric, stop), strict=True))
            notes.setdefault("work_metric", {})[f"{process} {'gpu' if gpu else 'cpu'}"] = metric
            first, rest = idx[0], idx[1:]
            out.append(OutputProfile([first], "initial " + ("stream" if gpu else "thread"), process, gpu,
                                     work=[work[first]]))
            if rest:
                slow = max(rest, key=lambda i: (work[i], -rest.index(i)))
                out.append(OutputProfile([slow], "slowest " + ("stream" if gpu else "thread"), process, gpu,
                                         work=[work[slow]]))
                rest = [i for i in rest if i != slow]
            if rest:
                fast = min(rest, key=lambda i: (work[i], rest.index(i)))
                out.append(OutputProfile([fast], "fastest " + ("stream" if gpu else "thread"), process, gpu,
                                         work=[work[fast]]))
                rest = [i for i in rest if i != fast]
            if rest:
                out.append(OutputProfile(rest, f"aggregated other {kind}", process, gpu, work=[work[i] for i in rest]))
    return out, notes


# -- the new database --------------------------------------------------------------------------------------


def _new_meta(meta: metadb.MetaDB, with_set: bool) -> tuple[metadb.MetaDB, dict[int, dict[str, int]]]:
    """meta.db with the num_threads metric (and, for SET, the statistics metrics); returns also
    prop id -> {statistic: new prop id}."""
    metrics = [metadb.Metric(m.name, list(m.scope_insts), list(m.summaries)) for m in meta.metrics]
    next_prop = 1 + max((i.prop_metric_id for m in metrics for i in m.scope_insts), default=-1)
    next_stat = 1 + max((s.stat_metric_id for m in metrics for s in m.summaries), default=-1)
    stats: dict[int, dict[str, int]] = {}
    combine_of = {"min": 1, "max": 2, "count": 0, "sumsq": 0}
    if with_set:
        for m in meta.metrics:
            for stat in SET_STATS:
                insts, summaries = [], []
                for inst in m.scope_insts:
                    insts.append(metadb.ScopeInstance(inst.scope, next_prop))
                    stats.setdefault(inst.prop_metric_id, {})[stat] = next_prop
                    summaries.append(metadb.Summary(inst.scope, "$$", combine_of[stat], next_stat))
                    next_prop += 1
                    next_stat += 1
                metrics.append(metadb.Metric(f"{m.name}:{stat}", insts, summaries))
    nt_insts, nt_summaries = [], []
    for s in range(len(meta.scopes)):
        nt_insts.append(metadb.ScopeInstance(s, next_prop))
        nt_summaries.append(metadb.Summary(s, "$$", 0, next_stat))
        next_prop += 1
        next_stat += 1
    metrics.append(metadb.Metric(NUM_THREADS, nt_insts, nt_summaries))
    if next_prop > 65535 or next_stat > 65535:
        raise HpcsaError(meta.path, "too many metrics for the statistics of the SET strategy (metric ids are 16-bit)")
    new = meta.with_metrics(metrics)
    return new, stats


def _thread_root(m: Any, summaries: SummaryInputs) -> dict[str, Any]:
    """The default.yaml entry of a metric that aggregate-threads adds."""
    by_scope = {scope: inp for scope, _, inp in summaries}
    formula: dict[str, Any] = {}
    if "execution" in by_scope:
        formula["inclusive"] = {"standard": by_scope["execution"]}
    exclusive = {k: by_scope[s] for k, s in (("custom", "lex_aware"), ("standard", "function")) if s in by_scope}
    if exclusive:
        formula["exclusive"] = exclusive
    stat = m.name.rsplit(":", 1)[-1] if ":" in m.name else ""
    return {"name": m.name, "description": {
        "min": "smallest value among the threads that have one", "max": "largest value among the threads",
        "count": "number of threads with a value", "sumsq": "sum of the squares of the threads' values",
    }.get(stat, "number of threads this profile stands for"), "variants": {
        "": {"render": ["number"], "formula": formula}}}


def db_size(path: str) -> int:
    return sum(os.path.getsize(os.path.join(path, f)) for f in ("meta.db", "profile.db", "cct.db", "trace.db")
               if os.path.isfile(os.path.join(path, f)))


def aggregate_threads(exp: Experiment, out_path: str | os.PathLike[str], strategy: str,
                      work_metric_name: str | None = None) -> list[OutputProfile]:
    """Write the aggregated database; returns its profiles (index = position + 1)."""
    profiles, notes = plan(exp, strategy, work_metric_name)
    meta, stats = _new_meta(exp.meta, strategy == "set")
    first_new = len(exp.meta.metrics)
    nt_ids = [i.prop_metric_id for i in meta.metrics[-1].scope_insts]
    pdb = exp.db.profiles
    written = []
    for op in profiles:
        extra = (np.zeros(len(nt_ids), np.int64), np.array(nt_ids, np.int64),
                 np.full(len(nt_ids), float(len(op.members))))
        op.values = combine([pdb.profile(i) for i in op.members], stats if strategy == "set" else None, extra)
        tup = pdb.id_tuple(op.members[0])
        written.append(Profile(tup if tup is not None else id_tuple([]), op.values))
    traces = []
    time_range = None
    if exp.db.trace is not None:
        tdb = exp.db.trace
        slot_of = {int(p): k for k, p in enumerate(tdb.prof_index.tolist())}
        time_range = (tdb.min_timestamp, tdb.max_timestamp)
        for new_index, op in enumerate(profiles, start=1):
            if len(op.members) == 1 and op.members[0] in slot_of:
                traces.append((new_index, tdb.trace(slot_of[op.members[0]])))
    report = {
        "strategy": strategy, "source": os.path.abspath(exp.path), "source_profiles": len(exp.profiles),
        "num_threads_metric": NUM_THREADS, **notes,
        "profiles": [{"profile": i, "process": op.process, "class": "gpu" if op.gpu else "cpu", "role": op.role,
                      "threads": len(op.members), "members": op.members,
                      **({"work": [round(w, 12) for w in op.work]} if op.work is not None else {})}
                     for i, op in enumerate(profiles, start=1)],
    }
    if strategy == "key":
        report["not_work_pattern"] = NOT_WORK.pattern
    write_from_profiles(out_path, meta, written, n_ctx_ids=exp.db.n_ctx_ids(),
                   taxonomy=extended_taxonomy(exp, meta, first_new, _thread_root), traces=traces, time_range=time_range,
                   extra_files={"aggregation.yaml": yaml.safe_dump(report, sort_keys=False, allow_unicode=True)})
    return profiles
