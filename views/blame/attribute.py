"""``hpcsa blame``: idleness, overhead and GPU idle blame from a database's traces, as new metrics.

The database is read as it is (contexts, profiles, traces unchanged); every process is swept over its trace
lines (:mod:`hpcsa.views.blame.sweep`) with the states given by the rules (:mod:`hpcsa.views.blame.rules`),
and the charges become new metrics of the thread and stream profiles, written with the four propagation
scopes (point, function, lex_aware, execution) and the source's summary statistics through the same writer
as ``hpcsa aggregate-threads`` (:func:`hpcsa.views.dbwrite.write_from_profiles`):

===============================  ====================================================================
``CPU WORK (sec)``               time a thread worked in the context (overhead included)
``CPU IDLENESS (sec)``           idle time of other threads this context is responsible for (dt I/W)
``CPU OVERHEAD (sec)``           time in the OpenMP runtime's own code (part of the work)
``CPU WAIT (sec)``               time the thread itself waited in the context
``GPU IDLE (sec)``               a GPU's idle time, at the root of its first stream profile
``GPU IDLE BLAME (sec)``         GPU idle time blamed on the CPU context; split into the classes
``GPU IDLE BLAME:SYNC (sec)``    ... the CPU waited in a GPU synchronisation call
``GPU IDLE BLAME:LAUNCH (sec)``  ... the CPU was in a launch or copy API
``GPU IDLE BLAME:CPU (sec)``     ... the CPU ran other code
===============================  ====================================================================

Idleness while no thread of a process was present, and GPU idle time while no traced CPU thread ran (vendor
records carry no CPU trace), go to the global root (context 0) of the process's first CPU profile (class CPU),
so that per process work + idleness = threads x span and, per GPU, blame = idle time.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import field
from fractions import Fraction
from types import SimpleNamespace
from typing import Any

import numpy as np

from hpcsa.core.dataclass import dataclass
from hpcsa.core.errors import HpcsaError
from hpcsa.core.progress import Progress
from hpcsa.formats.db import metadb
from hpcsa.formats.db.metricsyaml import SCOPES
from hpcsa.formats.db.profiledb import ProfileDB, ProfileValues, id_tuple
from hpcsa.formats.db.propagate import ScopeRule, TreeArrays, propagate_scopes
from hpcsa.views import tree as T
from hpcsa.views.blame.rules import CLASS_NAMES, Rules, classify_rows, frame_decisions
from hpcsa.views.blame.sweep import Acc, Line, ProcessResult, sweep_process
from hpcsa.views.data import KIND_GPUCONTEXT, KIND_GPUDEVICE
from hpcsa.views.dbwrite import SummaryInputs, extended_taxonomy, summary_profile, write_from_profiles
from hpcsa.views.experiment import Experiment

WORK_M, IDLENESS_M, OVERHEAD_M, WAIT_M = "CPU WORK (sec)", "CPU IDLENESS (sec)", "CPU OVERHEAD (sec)", "CPU WAIT (sec)"
GPU_IDLE_M, BLAME_M = "GPU IDLE (sec)", "GPU IDLE BLAME (sec)"
CLASS_METRICS = ("GPU IDLE BLAME:CPU (sec)", "GPU IDLE BLAME:SYNC (sec)", "GPU IDLE BLAME:LAUNCH (sec)")
METRICS = (WORK_M, IDLENESS_M, OVERHEAD_M, WAIT_M, GPU_IDLE_M, BLAME_M, *CLASS_METRICS)
DESCRIPTIONS = {
    WORK_M: "time threads worked in this context (runtime overhead included)",
    IDLENESS_M: "idle time of the process's other threads charged to this context while it worked (dt*I/W)",
    OVERHEAD_M: "time in the OpenMP runtime's own code (parallelisation overhead)",
    WAIT_M: "time threads waited in this context (barriers, MPI waits, GPU synchronisation, locks)",
    GPU_IDLE_M: "time a GPU ran no operation on any stream, within its first-to-last operation (or the run)",
    BLAME_M: "GPU idle time blamed on the CPU context the process's threads were in",
    CLASS_METRICS[0]: "GPU idle blame while the CPU ran other code (CPU-bound)",
    CLASS_METRICS[1]: "GPU idle blame while the CPU waited in a GPU synchronisation call",
    CLASS_METRICS[2]: "GPU idle blame while the CPU was in a launch or copy API (launch-bound)",
}
NS = 1e9


@dataclass
class GpuSummary:
    process: str
    gpu: str
    streams: list[int]
    span_ns: int
    busy_ns: int
    idle_ns: int
    blame_s: dict[str, float]
    unattributed_s: float
    run_ns: int = 0

    @property
    def busy_share(self) -> float:
        """Busy time over the GPU's span (first to last operation, or the run with --gpu-idle-over run)."""
        return self.busy_ns / self.span_ns if self.span_ns else 0.0

    @property
    def busy_share_of_run(self) -> float:
        """Busy time over the wall time of the process's run (its CPU and GPU lines together)."""
        return self.busy_ns / self.run_ns if self.run_ns else 0.0


@dataclass
class ProcessSummary:
    process: str
    threads: list[int]
    span_ns: int
    work_s: float
    idleness_s: float
    overhead_s: float
    wait_s: float
    unattributed_idleness_s: float

    @property
    def efficiency(self) -> float:
        total = self.work_s + self.idleness_s
        return self.work_s / total if total else 0.0


@dataclass
class BlameResult:
    """What ``hpcsa blame`` computed: per process and GPU totals, and per-context totals for the report."""

    processes: list[ProcessSummary] = field(default_factory=list)
    gpus: list[GpuSummary] = field(default_factory=list)
    by_context: dict[str, dict[int, float]] = field(default_factory=dict)  # metric -> ctx id -> seconds


# -- processes, GPUs and lines --------------------------------------------------------------------------


def _line(exp: Experiment, slot: dict[int, int], index: int, step: int = 1 << 20) -> Line | None:
    """Profile ``index``'s trace line (memory-mapped), checked to be in time order a slice at a time."""
    tdb = exp.db.trace
    if tdb is None or index not in slot or tdb.n_elements()[slot[index]] == 0:
        return None
    line = tdb.trace(slot[index])
    ts = line["timestamp"]
    for a in range(0, len(ts), step):
        part = ts[max(a - 1, 0):a + step]
        if (part[1:] < part[:-1]).any():
            raise HpcsaError(tdb.path, f"the trace line of profile {index} is not in time order "
                             f"(near record {a + int(np.flatnonzero(part[1:] < part[:-1])[0])})")
    return Line(index, line)


def _layout(exp: Experiment) -> list[tuple[str, list[Line], list[int], list[tuple[tuple, list[Line]]]]]:
    """Per process (rank, or run where processes share an identity: :mod:`hpcsa.views.processes`): (label,
    CPU lines with elements, all CPU profiles, GPUs with their stream lines)."""
    tdb = exp.db.trace
    slot = {} if tdb is None else {int(p): k for k, p in enumerate(tdb.prof_index.tolist())}
    lines = {p.index: _line(exp, slot, p.index) for p in exp.profiles}
    info = {p.index: p for p in exp.profiles}
    out = []
    for proc in exp.processes.processes:
        members = sorted(proc.profiles, key=lambda i: (tuple(sorted(info[i].ids.items())), i))
        cpu, cpu_all = [], []
        gpus: dict[tuple[str, int], list[Line]] = {}
        for i in members:
            p, line = info[i], lines[i]
            if p.gpu:
                dev = ((KIND_GPUDEVICE, p.ids[KIND_GPUDEVICE]) if KIND_GPUDEVICE in p.ids
                       else (KIND_GPUCONTEXT, p.ids.get(KIND_GPUCONTEXT, 0)))
                if line is not None:
                    gpus.setdefault(dev, []).append(line)
            else:
                cpu_all.append(i)
                if line is not None:
                    cpu.append(line)
        out.append((proc.label, cpu, cpu_all, sorted(gpus.items())))
    return out


def state_lookup(exp: Experiment, rules: Rules) -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """ctx ids -> (state, GPU class) under the rules; ids without a row are application work."""
    c = exp.cct
    fn = exp.meta.functions
    fs, fc = frame_decisions(rules, fn.names, exp.meta.modules, fn.module)
    state, klass = classify_rows(c.parent, c.levels, c.function, c.kind == T.FUNCTION, fs, fc)
    size = int(c.ctx_id.max(initial=0)) + 1
    by_state = np.zeros(size, np.int8)
    by_class = np.zeros(size, np.int8)
    by_state[c.ctx_id] = state
    by_class[c.ctx_id] = klass

    def lookup(ctx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        ok = ctx < size
        at = np.where(ok, ctx, 0)
        return np.where(ok, by_state[at], 0), np.where(ok, by_class[at], 0)
    return lookup


# -- integer charges to per-profile point values --------------------------------------------------------


def _values(pos: np.ndarray, den: np.ndarray, ctx: np.ndarray, num: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sum num / den / 1e9 per (position, context), rounded once: a single term by one float division
    (exact operands below 2^53), several terms as an exact fraction."""
    den = np.maximum(den, 1)
    key = (pos << 32) | ctx
    order = np.argsort(key, kind="stable")
    key, num, den = key[order], num[order], den[order]
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]]) if len(key) else np.zeros(0, np.int64)
    out = num[starts].astype(np.float64) / (den[starts].astype(np.float64) * NS)
    sizes = np.diff(np.r_[starts, len(key)])
    big = np.abs(num[starts]) >= 1 << 53
    for i in np.flatnonzero((sizes > 1) | big):
        a, b = int(starts[i]), int(starts[i] + sizes[i])
        total = sum((Fraction(int(n), int(d)) for n, d in zip(num[a:b].tolist(), den[a:b].tolist(), strict=True)),
                    Fraction(0))
        out[i] = float(total / 10**9)
    uk = key[starts]
    return uk >> 32, uk & 0xFFFFFFFF, out


def _acc_values(acc: Acc) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    pos, den, ctx, num = acc.items()
    return _values(pos, den, ctx, num)


class Charges:
    """Point charges of every profile as numpy chunks: (profile index, metric index in METRICS, ctx id, seconds)."""

    def __init__(self) -> None:
        self.parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []

    def add(self, profiles: np.ndarray | int, metric: str, ctx: np.ndarray | int, val: np.ndarray | float) -> None:
        val = np.atleast_1d(np.asarray(val, np.float64))
        if not len(val):
            return
        n = len(val)
        self.parts.append((np.broadcast_to(np.asarray(profiles, np.int64), n).copy(),
                           np.full(n, METRICS.index(metric), np.int64),
                           np.broadcast_to(np.asarray(ctx, np.int64), n).copy(), val))

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """All charges, duplicates (profile, metric, ctx) summed, sorted by profile, metric and ctx."""
        if not self.parts:
            z = np.zeros(0, np.int64)
            return z, z, z, np.zeros(0)
        p, m, c, v = (np.concatenate(x) for x in zip(*self.parts, strict=True))
        key = (p << 40) | (m << 32) | c
        uk, inv = np.unique(key, return_inverse=True)
        if len(uk) < len(key):
            v = np.bincount(inv, weights=v, minlength=len(uk))
        else:
            v = v[np.argsort(key, kind="stable")]
        self.parts = [(uk >> 40, (uk >> 32) & 0xFF, uk & 0xFFFFFFFF, v)]
        return self.parts[0]

    def totals(self, metric: str, profiles: list[int], first: int = 0) -> float:
        """The exact-summed (fsum) charges of one metric over some profiles, from chunk ``first`` on."""
        m = METRICS.index(metric)
        want = np.asarray(profiles, np.int64)
        return math.fsum(v for p, mm, _, vals in self.parts[first:] for v in vals[(mm == m) & np.isin(p, want)].tolist())

    def by_context(self) -> dict[str, dict[int, float]]:
        p, m, c, v = self.arrays()
        out: dict[str, dict[int, float]] = {}
        for j, name in enumerate(METRICS):
            sel = m == j
            uc, inv = np.unique(c[sel], return_inverse=True)
            out[name] = dict(zip(uc.tolist(), np.bincount(inv, weights=v[sel], minlength=len(uc)).tolist(),
                                 strict=True))
        return out


def _charges(res: ProcessResult, cpu_all: list[int], charges: Charges) -> None:
    profiles = np.array(res.threads, np.int64)
    for metric, acc in ((WORK_M, res.work), (OVERHEAD_M, res.overhead), (WAIT_M, res.wait),
                        (IDLENESS_M, res.idleness)):
        pos, ctx, val = _acc_values(acc)
        charges.add(profiles[pos] if len(pos) else pos, metric, ctx, val)
    if res.unattributed_idleness_ns:
        charges.add(res.threads[0], IDLENESS_M, 0, res.unattributed_idleness_ns / NS)
    for g in res.gpus:
        charges.add(g.streams[0], GPU_IDLE_M, 0, g.idle_ns / NS)
        items = [g.blame[c].items() for c in range(3)]
        for c, (pos, den, ctx, num) in enumerate(items):
            p, cx, val = _values(pos, den, ctx, num)
            charges.add(profiles[p] if len(p) else p, CLASS_METRICS[c], cx, val)
        pos, den, ctx, num = (np.concatenate(x) for x in zip(*items, strict=True))
        p, cx, val = _values(pos, den, ctx, num)
        charges.add(profiles[p] if len(p) else p, BLAME_M, cx, val)
        if g.unattributed_ns:
            owner = cpu_all[0] if cpu_all else g.streams[0]
            charges.add(owner, BLAME_M, 0, g.unattributed_ns / NS)
            charges.add(owner, CLASS_METRICS[0], 0, g.unattributed_ns / NS)


# -- propagation into the four scopes ---------------------------------------------------------------------


def scope_tree(cct: T.CCT) -> tuple[TreeArrays, ScopeRule]:
    """The tree and the rule the new metrics are propagated by (:mod:`hpcsa.formats.db.propagate`).

    Entry points are entered by a call, as hpcprof's top-level contexts are. Where the rule departs from
    hpcprof's (:class:`.ScopeRule`): the global root and the entry points keep point and execution only; a
    loop reports its loop-free sum as lex_aware whether it has a value of its own or not (the summary
    statistics, sums of the thread values, are then hpcprof's loop-free sums); a sum takes its terms nearest
    first (by depth, then context id), the order blame has always summed in."""
    top = (cct.kind == T.ROOT) | (cct.kind == T.ENTRY)
    tree = TreeArrays.build(cct.parent, cct.depth, (cct.relation != T.LEXICAL) | top, cct.kind == T.LOOP, cct.end)
    rank = np.empty(len(cct), np.int64)
    rank[np.lexsort((cct.ctx_id, cct.depth))] = np.arange(len(cct))
    return tree, ScopeRule(loops_need_own_value=False, execution_only=top, sum_rank=rank)


# -- the new database -------------------------------------------------------------------------------------


def _new_meta(meta: metadb.MetaDB) -> tuple[metadb.MetaDB, dict[tuple[str, str], int]]:
    have = {m.name for m in meta.metrics}
    if have & set(METRICS):
        raise HpcsaError(meta.path, f"the database already has blame metrics ({sorted(have & set(METRICS))[0]}); "
                         "run hpcsa blame on the database it was made from")
    kinds: dict[int, list[tuple[str, int]]] = {}
    if meta.metrics:
        for s in meta.metrics[0].summaries:
            kinds.setdefault(s.scope, []).append((s.formula, s.combine))
    next_prop = 1 + max((i.prop_metric_id for m in meta.metrics for i in m.scope_insts), default=-1)
    next_stat = 1 + max((s.stat_metric_id for m in meta.metrics for s in m.summaries), default=-1)
    scope_names = [s.name for s in meta.scopes]
    prop: dict[tuple[str, str], int] = {}
    metrics = list(meta.metrics)
    for name in METRICS:
        insts, sums = [], []
        for scope, sname in enumerate(scope_names):
            insts.append(metadb.ScopeInstance(scope, next_prop))
            prop[(name, sname)] = next_prop
            next_prop += 1
            for formula, combine in kinds.get(scope, [("$$", 0)]):
                sums.append(metadb.Summary(scope, formula, combine, next_stat))
                next_stat += 1
        metrics.append(metadb.Metric(name, insts, sums))
    if next_prop > 65535 or next_stat > 65535:
        raise HpcsaError(meta.path, "too many metrics to add the blame metrics (metric ids are 16-bit)")
    missing = {"point", "function", "lex_aware", "execution"} - set(scope_names)
    if missing:
        raise HpcsaError(meta.path, f"meta.db lacks the propagation scope(s) {sorted(missing)}")
    new = meta.with_metrics(metrics)
    return new, prop


def _blame_root(m: Any, summaries: SummaryInputs) -> dict[str, Any]:
    """The default.yaml entry of a metric that blame adds: its sums over the three scopes."""
    by_scope = {scope: inp for scope, s, inp in summaries if s.formula == "$$" and s.combine == 0}
    formula: dict[str, Any] = {"inclusive": {"standard": by_scope["execution"]},
                               "exclusive": {"custom": by_scope["lex_aware"], "standard": by_scope["function"]}}
    return {"name": m.name, "description": DESCRIPTIONS[m.name],
            "variants": {"Sum": {"render": ["number", "percent"], "formula": formula}}}


def blame(exp: Experiment, out_path: str | os.PathLike[str] | None, rules: Rules, *, chunk: int = 1 << 17,
          over_run: bool = False, progress: Progress | None = None) -> BlameResult:
    """Sweep every process; write the database with the new metrics to ``out_path`` (unless None)."""
    if exp.db.trace is None:
        raise HpcsaError(exp.path, "the database has no trace.db (measure with hpcrun -t, or ingest vendor "
                         "records, and keep traces in hpcsa prof)")
    meta, prop = _new_meta(exp.meta) if out_path is not None else (exp.meta, {})
    lookup = state_lookup(exp, rules)
    result = BlameResult()
    charges = Charges()
    for label, cpu, cpu_all, gpus in _layout(exp):
        res = sweep_process(cpu, gpus, lookup, chunk=chunk, over_run=over_run)
        first = len(charges.parts)
        _charges(res, cpu_all, charges)
        span = res.span[1] - res.span[0] if res.span else 0
        if res.threads:
            tot = {m: charges.totals(m, res.threads, first) for m in (WORK_M, IDLENESS_M, OVERHEAD_M, WAIT_M)}
            result.processes.append(ProcessSummary(label, res.threads, span, tot[WORK_M], tot[IDLENESS_M],
                                                   tot[OVERHEAD_M], tot[WAIT_M], res.unattributed_idleness_ns / NS))
        for g in res.gpus:
            blames = {}
            for c, name in enumerate(CLASS_NAMES):
                _, den, _, num = g.blame[c].items()
                blames[name] = math.fsum((num / (np.maximum(den, 1) * NS)).tolist())
            result.gpus.append(GpuSummary(label, f"{g.key[0].lower()} {g.key[1]}", g.streams, g.span[1] - g.span[0],
                                          g.busy_ns, g.idle_ns, blames, g.unattributed_ns / NS,
                                          g.run[1] - g.run[0]))
        if progress is not None:
            progress.advance(len(cpu_all) + sum(len(x) for _, x in gpus))
    result.by_context = charges.by_context()
    if out_path is not None:
        _write(exp, out_path, meta, prop, charges)
    return result


def _new_values(exp: Experiment, scoped: tuple[TreeArrays, ScopeRule], prop: dict[tuple[str, str], int],
                prof: np.ndarray, met: np.ndarray, ctx: np.ndarray, val: np.ndarray
                ) -> dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """profile -> (ctx ids, metric ids, values) of the new metrics in all four scopes, for a batch of charges
    (sorted by profile)."""
    rows = exp.cct.row_of(ctx)
    if (rows < 0).any():
        raise HpcsaError(exp.path, f"trace.db names context {int(ctx[rows < 0][0])}, which meta.db lacks")
    tree, rule = scoped
    profiles, batch_prof = np.unique(prof, return_inverse=True)
    # each (profile, metric) propagated as a profile of its own: a profile's metrics have few contexts in
    # common, and the rule asks every context of a profile's closure for each of its metrics
    p = propagate_scopes(rows, np.zeros(len(rows), np.int64), val, tree, batch_prof * len(METRICS) + met, rule)
    ids = np.array([[prop[(m, sc)] for sc in SCOPES] for m in METRICS], np.int64)  # metric x scope
    values = np.stack([getattr(p, sc) for sc in SCOPES], axis=1)
    ctx_ids = np.repeat(exp.cct.ctx_id[p.ctx], len(SCOPES))
    mids, vals = ids[p.prof % len(METRICS)].ravel(), values.ravel()
    cut = np.searchsorted(p.prof, np.arange(len(profiles) + 1) * len(METRICS)) * len(SCOPES)
    return {int(b): (ctx_ids[cut[k]:cut[k + 1]], mids[cut[k]:cut[k + 1]], vals[cut[k]:cut[k + 1]])
            for k, b in enumerate(profiles.tolist())}


def _write(exp: Experiment, out_path: str | os.PathLike[str], meta: metadb.MetaDB, prop: dict[tuple[str, str], int],
           charges: Charges, batch: int = 1 << 15) -> None:
    pdb = exp.db.profiles
    prof, met, ctx, val = charges.arrays()
    # batches of whole profiles with about ``batch`` charges each
    cuts = np.flatnonzero(np.r_[True, prof[1:] != prof[:-1]]) if len(prof) else np.zeros(0, np.int64)
    new: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    scoped = scope_tree(exp.cct)
    start = 0
    while start < len(prof):
        stop = int(cuts[np.searchsorted(cuts, start + batch, "right") - 1]) if len(cuts) else len(prof)
        stop = len(prof) if stop <= start else stop
        new.update(_new_values(exp, scoped, prop, prof[start:stop], met[start:stop], ctx[start:stop], val[start:stop]))
        start = stop
    n_old = len(exp.meta.metrics)
    new_only = SimpleNamespace(metrics=meta.metrics[n_old:])
    added = summary_profile(new_only, [ProfileValues.from_triples(*t) for t in new.values()])  # type: ignore[arg-type]  # summary_profile reads only .metrics: the new metrics stand for the whole meta.db
    old_sum = exp.summary
    summary = ProfileValues.from_triples(
        np.concatenate([old_sum.value_ctx_ids().astype(np.int64), added.value_ctx_ids().astype(np.int64)]),
        np.concatenate([old_sum.metric_ids.astype(np.int64), added.metric_ids.astype(np.int64)]),
        np.concatenate([old_sum.values, added.values]))
    written = _LazyProfiles(pdb, new)
    tdb = exp.db.trace
    traces = [(int(tdb.prof_index[k]), tdb.trace(k)) for k in range(len(tdb))] if tdb is not None else []
    time_range = (tdb.min_timestamp, tdb.max_timestamp) if tdb is not None else None
    write_from_profiles(out_path, meta, written, n_ctx_ids=exp.db.n_ctx_ids(), taxonomy=extended_taxonomy(exp, meta, len(exp.meta.metrics), _blame_root),
                   traces=traces, time_range=time_range, summary=summary)


class _LazyProfile:
    """A profile of the new database: its identifier tuple now, its values (old plus new) when written."""

    def __init__(self, pdb: ProfileDB, index: int, new: tuple[np.ndarray, np.ndarray, np.ndarray] | None) -> None:
        self.pdb, self.index, self.new = pdb, index, new
        tup = pdb.id_tuple(index)
        self.id_tuple = tup if tup is not None else id_tuple([])

    @property
    def values(self) -> ProfileValues:
        old = self.pdb.profile(self.index)
        if self.new is None:
            return old
        c, m, v = self.new
        return ProfileValues.from_triples(np.concatenate([old.value_ctx_ids().astype(np.int64), c]),
                                          np.concatenate([old.metric_ids.astype(np.int64), m]),
                                          np.concatenate([old.values, v]))


class _LazyProfiles(Sequence):
    """Profiles 1.. of the new database, each read (and merged with its new values) only when written."""

    def __init__(self, pdb: ProfileDB, new: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]) -> None:
        self.pdb, self.new = pdb, new

    def __len__(self) -> int:
        return len(self.pdb) - 1

    def __getitem__(self, k: Any) -> Any:
        if isinstance(k, slice):
            return [self[i] for i in range(*k.indices(len(self)))]
        if not -len(self) <= k < len(self):
            raise IndexError(k)
        i = k % len(self) + 1
        return _LazyProfile(self.pdb, i, self.new.get(i))
