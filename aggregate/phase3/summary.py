"""Phase 3's class 3: the summary statistics of a context range, reduced from every profile's values.

A range task of the transposition (:mod:`.phase3.transpose`) holds, for each (context, metric, scope), the
values of all profiles in canonical order; they are reduced here into the partials of the statistics the
run asked for (sum, count, sum of squares, min, max → Sum, Mean, StdDev, CfVar, Min, Max;
:func:`hpcsa.formats.db.summary.combine_runs`). The order is fixed by the data (profile order within each
context), never by how work was split, so the summary is bit-for-bit the same for any number of workers or
ranks. The values set aside in phase 2 (:data:`.handoff.ASIDE`: loop-free sums of loops without a value of
their own, presence without a stored value) are merged in.
"""

from __future__ import annotations

import numpy as np

from hpcsa.aggregate.handoff import ASIDE_NOLOOPS
from hpcsa.aggregate.metrictable import SCOPE_ORDER, MetricTable
from hpcsa.core.arrays import run_starts, sorted_unique_rows
from hpcsa.core.dataclass import dataclass
from hpcsa.formats.db import cctdb, summary

#: Values of a series summed at once where a context's summary is taken a slice of profiles at a time
#: (:class:`ContextSummary`): the parts of numpy's pairwise summation are at most this long.
SUM_PART = 1 << 15


@dataclass(frozen=True)
class StatPlan:
    """What the reduction needs of the metric table: per propMetricId its metric and scope; the stat ids."""

    prop_metric: np.ndarray  # [n_prop_ids] global metric, -1 for unused ids
    prop_scope: np.ndarray   # [n_prop_ids] scope index (0 point .. 3 execution)
    lex_prop: np.ndarray     # [metrics] propMetricId of lex_aware (-1)
    stat: np.ndarray         # [metrics, partials, 4] statMetricId, -1 where absent
    partials: tuple[tuple[str, str], ...]  # (formula, combine) of the partial columns

    @classmethod
    def build(cls, table: MetricTable) -> StatPlan:
        n_ids = table.n_ids
        pm = np.full(n_ids + 1, -1, np.int64)
        ps = np.full(n_ids + 1, -1, np.int64)
        lexp = np.full(len(table), -1, np.int64)
        kinds: list[tuple[str, str]] = []
        for m in range(len(table)):
            for f, c in table.partials(table.specs[m]):
                if (f, c) not in kinds:
                    kinds.append((f, c))
        stat = np.full((len(table), len(kinds), 4), -1, np.int64)
        for m in range(len(table)):
            for s, pid in table.prop_ids(m).items():
                pm[pid], ps[pid] = m, SCOPE_ORDER.index(s)
                if s == "lex_aware":
                    lexp[m] = pid
            for (f, c, s), sid in table.stat_ids(m).items():
                stat[m, kinds.index((f, c)), SCOPE_ORDER.index(s)] = sid
        return cls(pm, ps, lexp, stat, tuple(kinds))


def summarize(vals: cctdb.RangeValues, aside: tuple[np.ndarray, ...], plan: StatPlan
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Summary (context, statMetricId, value) for the gathered values of a context range.

    ``vals`` is sorted by (context, metric id, profile) and a metric's ids are consecutive
    (scope order), so each (context, metric, scope) series is a run, in profile order.
    """
    merged = _merged(vals, aside, plan)
    ctx, mid, _, v, series = merged[:5]
    gc, gm = ctx[series].astype(np.int64), mid[series].astype(np.int64)
    cnt_ctx, cnt_m, cnt = _presence(merged, plan)
    del merged, ctx, mid

    out_c: list[np.ndarray] = []
    out_id: list[np.ndarray] = []
    out_v: list[np.ndarray] = []
    g_metric = plan.prop_metric[gm]
    g_scope = plan.prop_scope[gm]
    for k, (f, comb) in enumerate(plan.partials):
        if f == "1":
            _counts_out(plan, k, cnt_ctx, cnt_m, cnt, out_c, out_id, out_v)
            continue
        if not len(series):
            continue
        red = summary.combine_runs(v, series, f, comb)
        sidk = plan.stat[g_metric, k, g_scope]
        good = (sidk >= 0) & (red != 0)
        out_c.append(gc[good])
        out_id.append(sidk[good])
        out_v.append(red[good])
    return _joined(out_c, out_id, out_v)


def _counts_out(plan: StatPlan, k: int, cnt_ctx: np.ndarray, cnt_m: np.ndarray, cnt: np.ndarray,
                out_c: list[np.ndarray], out_id: list[np.ndarray], out_v: list[np.ndarray]) -> None:
    """The count partial ``k``'s summary values of every scope, from the presence counts."""
    for s in range(4):
        sidk = plan.stat[cnt_m, k, s]
        good = sidk >= 0
        out_c.append(cnt_ctx[good])
        out_id.append(sidk[good])
        out_v.append(cnt[good])


def _joined(out_c: list[np.ndarray], out_id: list[np.ndarray], out_v: list[np.ndarray]
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if not out_c:
        z = np.zeros(0, np.int64)
        return z, z, np.zeros(0)
    return np.concatenate(out_c), np.concatenate(out_id), np.concatenate(out_v)


Merged = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _merged(vals: cctdb.RangeValues, aside: tuple[np.ndarray, ...], plan: StatPlan) -> Merged:
    """The values with the set-aside loop-free sums merged into the lex_aware series: (ctx, metric id,
    profile, value, each series' start) sorted by (context, metric id, profile), and the aside entries'
    (ctx, metric, profile)."""
    # Memory: the columns stay as narrow as they come (context and profile 32 bits, metric 16); what is
    # shifted into keys is widened first, and only where it is a selection; the values are copied only where
    # set-aside sums replace some of them.
    ctx = vals.ctx_ids
    mid = vals.metric_ids
    prof = vals.prof_indices
    v = vals.values
    a_ctx, a_key, a_prof, a_val = aside
    a_metric, a_kind = a_key >> 1, a_key & 1
    series = np.flatnonzero(run_starts(ctx, mid))
    n_series = len(series)
    # The lex_aware series take the loop-free sums set aside, where a profile has one.
    nl = np.flatnonzero(a_kind == ASIDE_NOLOOPS)
    extra = None
    if len(nl):
        lex_mid = plan.lex_prop[a_metric[nl]]
        skey = (ctx[series].astype(np.int64) << 16) | mid[series].astype(np.int64)
        want = (a_ctx[nl] << 16) | lex_mid
        pos = np.searchsorted(skey, want)
        hit = (pos < n_series) & (skey[np.minimum(pos, n_series - 1)] == want) if n_series else pos < 0
        width = int(prof.max()) + 1 if len(prof) else 1
        gkey = np.empty(len(ctx), np.int64)  # (series, profile) of each value, ascending; in place
        first = np.zeros(len(ctx), bool)
        first[series] = True
        np.cumsum(first, out=gkey)  # each value's series, from 1
        del first
        gkey -= 1
        gkey *= width
        gkey += prof
        at = np.searchsorted(gkey, np.minimum(pos, max(n_series - 1, 0)) * width + a_prof[nl])
        found = hit & (at < len(gkey)) & (gkey[np.minimum(at, max(len(gkey) - 1, 0))] ==
                                           np.minimum(pos, max(n_series - 1, 0)) * width + a_prof[nl])
        del gkey
        v = v.copy()
        v[at[found]] = a_val[nl][found]
        if (~found).any():  # a profile whose stored lex_aware was 0 (absent): new elements of the series
            miss = nl[~found]
            extra = (a_ctx[miss], plan.lex_prop[a_metric[miss]], a_prof[miss], a_val[miss])
    if extra is not None and len(extra[0]):
        ctx = np.concatenate([ctx, extra[0]])
        mid = np.concatenate([mid, extra[1]])
        prof = np.concatenate([prof, extra[2]])
        v = np.concatenate([v, extra[3]])
        order = np.lexsort((prof, mid, ctx))
        ctx, mid, prof, v = ctx[order], mid[order], prof[order], v[order]
        series = np.flatnonzero(run_starts(ctx, mid))
    return ctx, mid, prof, v, series, a_ctx, a_metric, a_prof


def _presence(merged: Merged, plan: StatPlan) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ctx, metric, count) of the profiles with any stored value of the metric there, or an aside entry."""
    ctx, mid, prof, _, _, a_ctx, a_metric, a_prof = merged
    metric = plan.prop_metric.astype(np.int32)[mid]
    starts = run_starts(ctx, metric)
    block = np.flatnonzero(starts)
    b_ctx, b_metric = ctx[block].astype(np.int64), metric[block].astype(np.int64)
    n_values = len(ctx)
    del metric
    width = int(max(prof.max() if len(prof) else 0, a_prof.max() if len(a_prof) else 0)) + 1
    asides = _aside_blocks(b_ctx, b_metric, a_ctx, a_metric) * width + a_prof
    bkey = np.empty(n_values + len(asides), np.int64)  # sorted runs (one per scope), then the asides
    key = bkey[:n_values]
    np.cumsum(starts, out=key)  # each value's block, from 1
    del starts
    key -= 1
    key *= width
    key += prof
    del key
    bkey[n_values:] = asides
    del asides
    bkey.sort(kind="stable")
    keep = run_starts(bkey)  # each (block, profile) once; asides without a block (negative) left out
    keep &= bkey >= 0
    bkey //= width
    bkey[~keep] = len(block)  # (counted in a bin of their own, dropped: no copy of the keys)
    del keep
    cnt = np.bincount(bkey, minlength=len(block) + 1)[:len(block)].astype(np.float64)
    del bkey
    extra_blocks = _aside_only(b_ctx, b_metric, a_ctx, a_metric, a_prof)
    cnt_ctx = np.concatenate([b_ctx, extra_blocks[0]])
    cnt_m = np.concatenate([b_metric, extra_blocks[1]])
    cnt = np.concatenate([cnt, extra_blocks[2]])
    ok = cnt > 0
    return cnt_ctx[ok], cnt_m[ok], cnt[ok]


class ContextSummary:
    """The summary values of one context whose values are given a slice of profiles at a time, in profile
    order (:meth:`add`), the same bits as :func:`summarize` of all of them at once: counts and extrema
    combine across slices exactly, and each series' sums are taken by :class:`.summary.SegmentSum`, which
    reproduces ``np.add.reduceat``'s order of additions from parts, given the series' lengths beforehand
    (``lengths``: values per metric id, after the set-aside sums are merged: :func:`series_lengths`)."""

    def __init__(self, plan: StatPlan, ctx: int, lengths: np.ndarray) -> None:
        self.plan = plan
        self.ctx = ctx
        self.lengths = lengths
        self.counts = np.zeros(len(plan.stat), np.float64)  # presence per metric
        self.sums: dict[tuple[int, int], summary.SegmentSum] = {}
        self.extrema: dict[tuple[int, int], np.float64] = {}

    def add(self, vals: cctdb.RangeValues, aside: tuple[np.ndarray, ...]) -> None:
        """The next slice of profiles: its values (all of this context) and its aside entries."""
        plan = self.plan
        merged = _merged(vals, aside, plan)
        mid, v, series = merged[1], merged[3], merged[4]
        _, cnt_m, cnt = _presence(merged, plan)
        np.add.at(self.counts, cnt_m, cnt)
        del merged
        ends = np.append(series[1:], len(v)).tolist()
        mids = mid[series].astype(np.int64).tolist()
        for k, (f, comb) in enumerate(plan.partials):
            if f == "1" or not len(series):
                continue
            if comb == "sum":
                part = summary.partial_values(f, v)
                for m, a, b in zip(mids, series.tolist(), ends, strict=True):
                    acc = self.sums.get((m, k))
                    if acc is None:
                        acc = self.sums[m, k] = summary.SegmentSum(int(self.lengths[m]), SUM_PART)
                    acc.add(part[a:b])
                continue
            red = summary.extrema_runs(v, series, f, comb)
            pick = np.minimum if comb == "min" else np.maximum
            for m, r in zip(mids, red.tolist(), strict=True):
                old = self.extrema.get((m, k))
                self.extrema[m, k] = np.float64(r) if old is None else pick(old, np.float64(r))

    def result(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Summary (context, statMetricId, value), as :func:`summarize` gives them (in another order)."""
        plan = self.plan
        out_c: list[np.ndarray] = []
        out_id: list[np.ndarray] = []
        out_v: list[np.ndarray] = []
        cnt_m = np.flatnonzero(self.counts > 0)
        cnt = self.counts[cnt_m]
        cnt_ctx = np.full(len(cnt_m), self.ctx, np.int64)
        reds = [((m, k), acc.total()) for (m, k), acc in self.sums.items()]
        reds += [((m, k), summary.finish_extrema(np.array([r]))[0]) for (m, k), r in self.extrema.items()]
        for k, (f, _) in enumerate(plan.partials):
            if f == "1":
                _counts_out(plan, k, cnt_ctx, cnt_m, cnt, out_c, out_id, out_v)
        for (m, k), red in reds:
            sid = int(plan.stat[plan.prop_metric[m], k, plan.prop_scope[m]])
            if sid >= 0 and red != 0:
                out_c.append(np.array([self.ctx], np.int64))
                out_id.append(np.array([sid], np.int64))
                out_v.append(np.array([red], np.float64))
        return _joined(out_c, out_id, out_v)


def series_lengths(vals: cctdb.RangeValues, aside: tuple[np.ndarray, ...], plan: StatPlan, n_ids: int
                   ) -> np.ndarray:
    """Values per metric id of a slice of one context's profiles once the set-aside sums are merged (what
    :class:`ContextSummary` needs beforehand, slice by slice added up)."""
    mid = _merged(vals, aside, plan)[1]
    return np.bincount(mid, minlength=n_ids)[:n_ids]


def _aside_blocks(b_ctx: np.ndarray, b_metric: np.ndarray, a_ctx: np.ndarray, a_metric: np.ndarray
                  ) -> np.ndarray:
    """Block index (position in the (ctx, metric) runs) of each aside entry, -1 where it has none."""
    if not len(b_ctx):
        return np.full(len(a_ctx), -1, np.int64)
    bkey = (b_ctx << 20) | b_metric
    akey = (a_ctx << 20) | a_metric
    pos = np.minimum(np.searchsorted(bkey, akey), len(bkey) - 1)
    return np.where(bkey[pos] == akey, pos, -1)


def _aside_only(b_ctx: np.ndarray, b_metric: np.ndarray, a_ctx: np.ndarray, a_metric: np.ndarray,
                a_prof: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ctx, metric, count) of pairs present only through aside entries (no stored value in any profile)."""
    none = _aside_blocks(b_ctx, b_metric, a_ctx, a_metric) < 0
    if not none.any():
        z = np.zeros(0, np.int64)
        return z, z, np.zeros(0)
    dtype = np.result_type(a_ctx, a_metric, a_prof)
    ctx, metric, _ = sorted_unique_rows(a_ctx[none].astype(dtype), a_metric[none].astype(dtype),
                                        a_prof[none].astype(dtype))
    first = run_starts(ctx, metric)
    counts = np.diff(np.append(np.flatnonzero(first), len(ctx)))  # profiles per (ctx, metric)
    return ctx[first], metric[first], counts.astype(np.float64)
