"""Phase 3: cct.db by transposition of the profile blobs, and class 3 (summary statistics) on the way.

cct.db's layout is known before any of it is written (values and metrics
per context, counted in phase 2), so contexts are cut into ranges that can be
written independently (:mod:`cctdb`). A range task gathers every profile's
values for its contexts, in profile order, writes the range's blocks, and —
since it then holds, for each (context, metric, scope), the values of all
profiles in canonical order — reduces them into the summary statistics
(sum, count, sum of squares, min, max → Sum, Mean, StdDev, CfVar, Min, Max).
The reduction order is fixed by the data (profile order within each
context), never by how work was split, so the summary is bit-for-bit the same
for any number of workers or ranks.

The thread values hpcprof writes are enough for every statistic except two
things its summary also counts: the loop-free sum of loops without a value of
their own (hpcprof's thread ``lex_aware`` there is the plain function sum),
and presence without any stored value (the count of Mean/StdDev). Phase 2
wrote those in an "aside" blob per profile; they are merged in here.
"""

from __future__ import annotations

import mmap
import os
from dataclasses import dataclass

import numpy as np

from hpcsa.aggregate import cctdb
from hpcsa.aggregate.profiledb import CTX_INDEX, SZ_VALUE, VALUE
from hpcsa.binfmt import align

from .classone import ASIDE, ASIDE_NOLOOPS
from .metrictable import SCOPE_ORDER, MetricTable

LEX = SCOPE_ORDER.index("lex_aware")
#: Bytes of cct.db per range (fixed, so ranges do not depend on the number of workers).
RANGE_BYTES = 32 << 20


@dataclass
class Placement:
    """Where phase 2 put each profile's blobs (canonical order)."""

    pms_offset: np.ndarray
    n_values: np.ndarray
    n_ctxs: np.ndarray
    pms_size: np.ndarray
    aside_offset: np.ndarray
    n_aside: np.ndarray


class ScratchProfiles:
    """The scratch PMS file read like a profile.db (profile 0, the summary, is empty)."""

    def __init__(self, path: str, place: Placement) -> None:
        self.path = path
        self.place = place
        size = os.path.getsize(path)
        self._fh = open(path, "rb")  # noqa: SIM115 - kept for the mapping's lifetime
        self.data = mmap.mmap(self._fh.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
        self.n_values = np.concatenate([[0], place.n_values]).astype(np.int64)

    def __len__(self) -> int:
        return len(self.place.n_values) + 1

    def close(self) -> None:
        if isinstance(self.data, mmap.mmap):
            self.data.close()
        self._fh.close()

    def ctx_index(self, p: int) -> tuple[np.ndarray, np.ndarray]:
        if p == 0 or not self.place.n_ctxs[p - 1]:
            return np.zeros(0, np.uint32), np.zeros(0, np.int64)
        at = int(self.place.pms_offset[p - 1]) + align(int(self.place.n_values[p - 1]) * SZ_VALUE, 4)
        idx = np.frombuffer(self.data, CTX_INDEX, int(self.place.n_ctxs[p - 1]), at)
        return idx["ctxId"].astype(np.uint32), idx["startIndex"].astype(np.int64)

    def value_slice(self, p: int, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        at = int(self.place.pms_offset[p - 1]) + lo * SZ_VALUE
        vals = np.frombuffer(self.data, VALUE, hi - lo, at)
        return vals["metricId"].astype(np.uint16), vals["value"].astype(np.float64)

    def blob(self, p: int) -> bytes:
        at = int(self.place.pms_offset[p])
        return bytes(self.data[at: at + int(self.place.pms_size[p])])


def read_aside(path: str, place: Placement, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                                         np.ndarray]:
    """Aside entries of every profile for contexts lo..hi: (ctx, key, profile index, value)."""
    if not os.path.getsize(path):
        z = np.zeros(0, np.int64)
        return z, z, z, np.zeros(0)
    parts = []
    fd = os.open(path, os.O_RDONLY)
    try:
        for p in np.flatnonzero(place.n_aside).tolist():
            raw = os.pread(fd, int(place.n_aside[p]) * ASIDE.itemsize, int(place.aside_offset[p]))
            rec = np.frombuffer(raw, ASIDE)
            i0, i1 = np.searchsorted(rec["ctx"], [lo, hi])
            if i1 > i0:
                parts.append((rec[i0:i1], p + 1))
    finally:
        os.close(fd)
    if not parts:
        z = np.zeros(0, np.int64)
        return z, z, z, np.zeros(0)
    ctx = np.concatenate([s["ctx"] for s, _ in parts]).astype(np.int64)
    key = np.concatenate([s["key"] for s, _ in parts]).astype(np.int64)
    prof = np.concatenate([np.full(len(s), p, np.int64) for s, p in parts])
    val = np.concatenate([s["value"] for s, _ in parts])
    return ctx, key, prof, val


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


def _groups(keys: np.ndarray) -> np.ndarray:
    return np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]]) if len(keys) else np.zeros(0, np.int64)


def summarize(vals: cctdb.RangeValues, aside: tuple[np.ndarray, ...], plan: StatPlan
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Summary (context, statMetricId, value) for the gathered values of a context range."""
    ctx = vals.ctx_ids.astype(np.int64)
    mid = vals.metric_ids.astype(np.int64)
    prof = vals.prof_indices.astype(np.int64)
    v = vals.values
    metric = plan.prop_metric[mid]
    scope = plan.prop_scope[mid]
    a_ctx, a_key, a_prof, a_val = aside
    a_metric, a_kind = a_key >> 1, a_key & 1
    # lex_aware series: the stored value, unless the aside holds the loop-free sum for that profile.
    nl = a_kind == ASIDE_NOLOOPS
    over_ctx, over_m, over_p, over_v = a_ctx[nl], a_metric[nl], a_prof[nl], a_val[nl]
    is_lex = scope == LEX
    c_all = np.concatenate([ctx[~is_lex], ctx[is_lex], over_ctx])
    m_all = np.concatenate([metric[~is_lex], metric[is_lex], over_m])
    s_all = np.concatenate([scope[~is_lex], scope[is_lex], np.full(len(over_ctx), LEX)])
    p_all = np.concatenate([prof[~is_lex], prof[is_lex], over_p])
    v_all = np.concatenate([v[~is_lex], v[is_lex], over_v])
    pri = np.concatenate([np.zeros((~is_lex).sum() + is_lex.sum(), np.int64), np.ones(len(over_ctx), np.int64)])
    order = np.lexsort((pri, p_all, s_all, m_all, c_all))
    c_all, m_all, s_all, p_all, v_all = c_all[order], m_all[order], s_all[order], p_all[order], v_all[order]
    # Keep the last of each (ctx, metric, scope, profile): the aside value where there is one.
    last = np.r_[(c_all[1:] != c_all[:-1]) | (m_all[1:] != m_all[:-1]) | (s_all[1:] != s_all[:-1])
                 | (p_all[1:] != p_all[:-1]), True] if len(c_all) else np.zeros(0, bool)
    c_all, m_all, s_all, p_all, v_all = c_all[last], m_all[last], s_all[last], p_all[last], v_all[last]
    nz = v_all != 0
    c_all, m_all, s_all, p_all, v_all = c_all[nz], m_all[nz], s_all[nz], p_all[nz], v_all[nz]

    # Presence per (ctx, metric): profiles with any value or aside entry.
    pc = np.concatenate([ctx, a_ctx])
    pm = np.concatenate([metric, a_metric])
    pp = np.concatenate([prof, a_prof])
    pkey = np.lexsort((pp, pm, pc))
    pc, pm, pp = pc[pkey], pm[pkey], pp[pkey]
    distinct = np.r_[True, (pc[1:] != pc[:-1]) | (pm[1:] != pm[:-1]) | (pp[1:] != pp[:-1])] if len(pc) else \
        np.zeros(0, bool)
    pc, pm = pc[distinct], pm[distinct]
    g = _groups(pc * (1 << 20) + pm) if len(pc) else np.zeros(0, np.int64)
    cnt_ctx, cnt_m = pc[g], pm[g]
    cnt = np.diff(np.append(g, len(pc))).astype(np.float64)

    out_c, out_id, out_v = [], [], []
    grp = _groups(c_all * (1 << 22) + m_all * 4 + s_all) if len(c_all) else np.zeros(0, np.int64)
    gc, gm, gs = c_all[grp], m_all[grp], s_all[grp]
    for k, (f, comb) in enumerate(plan.partials):
        if f == "1":
            for s in range(4):
                sid = plan.stat[cnt_m, k, s]
                ok = sid >= 0
                out_c.append(cnt_ctx[ok]), out_id.append(sid[ok]), out_v.append(cnt[ok])
            continue
        if not len(grp):
            continue
        x = v_all * v_all if f == "($$^2)" else v_all
        if comb == "sum":
            red = np.add.reduceat(x, grp)
        elif comb == "min":
            red = np.minimum.reduceat(x, grp)
        else:
            red = np.maximum.reduceat(x, grp)
        sid = plan.stat[gm, k, gs]
        ok = (sid >= 0) & (red != 0)
        out_c.append(gc[ok]), out_id.append(sid[ok]), out_v.append(red[ok])
    if not out_c:
        z = np.zeros(0, np.int64)
        return z, z, np.zeros(0)
    return np.concatenate(out_c), np.concatenate(out_id), np.concatenate(out_v)


def transpose_range(pms_path: str, aside_path: str, cct_path: str, place: Placement, layout: cctdb.CctLayout,
                    plan: StatPlan, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Write cct.db's blocks for contexts lo..hi and return the range's summary values."""
    src = ScratchProfiles(pms_path, place)
    try:
        vals = cctdb.gather_range(src, lo, hi)  # type: ignore[arg-type]
        data = cctdb.encode_blocks(layout, lo, hi, vals)
        fd = os.open(cct_path, os.O_WRONLY)
        try:
            view, at = memoryview(data), int(layout.offsets[lo])
            while view:
                n = os.pwrite(fd, view, at)
                view, at = view[n:], at + n
        finally:
            os.close(fd)
        return summarize(vals, read_aside(aside_path, place, lo, hi), plan)
    finally:
        src.close()
