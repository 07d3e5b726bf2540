"""Scaling loss between two executions (§2.1.1 of Tallent et al., "HPCToolkit: performance tools for
scientific computing", 2008): where does a run on q units fall short of one on p?

Contexts are matched by their path from the root: the sequence of (relation, scope) pairs, a scope being a
procedure by name (and load module), a loop or line by source file name and line, an instruction by load
module and offset -- so ids and layout may differ between the databases. Per unit (rank, or thread when a
run has one process), a context's cost at p is ``C_p = Sum_p / p``; the cost expected at q is ``C_p`` for
weak scaling (each unit keeps its share of work) and ``C_p x p/q`` for strong scaling (the work is divided);
the loss is ``C_q - expected`` and the % loss is that over the q run's whole cost per unit. Positive
losses are scalability bottlenecks; a context present in one run only counts as 0 in the other.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from hpcsa.core.dataclass import dataclass
from hpcsa.core.digests import blake2b
from hpcsa.core.errors import HpcsaError
from hpcsa.views import tree as T

if TYPE_CHECKING:
    from hpcsa.views.experiment import Experiment

MODES = ("weak", "strong")


def _string_keys(strings: Sequence[str | None]) -> np.ndarray:
    """A stable 63-bit key per string (one hash per table entry, not per context)."""
    return np.array([int.from_bytes(blake2b((s or "").encode("utf-8", "surrogateescape"),
                                                    digest_size=8).digest(), "little") >> 1 for s in strings],
                    np.int64) if strings else np.zeros(0, np.int64)


def path_keys(exp: Experiment) -> np.ndarray:
    """A key per CCT row naming its path from the root independently of context ids."""
    c = exp.cct
    meta = exp.meta
    base = [s.rsplit("/", 1)[-1] for s in meta.files]
    mods = [s.rsplit("/", 1)[-1] for s in meta.modules]
    fn_name = _string_keys(list(meta.functions.names))
    fn_mod = _string_keys([mods[m] if 0 <= m < len(mods) else "" for m in meta.functions.module.tolist()])
    file_key = np.concatenate([[0], _string_keys(base)])
    mod_key = np.concatenate([[0], _string_keys(mods)])
    f = np.maximum(c.function, 0)
    has_f = (c.kind == T.FUNCTION) & (c.function >= 0)
    name = np.where(has_f, fn_name[f] if len(fn_name) else 0, 0)
    name_mod = np.where(has_f, fn_mod[f] if len(fn_mod) else 0, 0)
    offset = np.where(c.kind == T.INSTRUCTION, c.offset, 0)
    entries = meta.contexts.entry_points if meta.contexts is not None else []  # as CCT.from_meta
    entry_kind = np.array([e.kind for e in entries] or [0], np.int64)
    ent = np.where(c.kind == T.ENTRY, entry_kind[np.maximum(c.entry, 0)], -1)
    own = T.key_hash(c.kind, np.where(c.kind < T.ROOT, c.relation, 0), name, name_mod, file_key[c.file + 1],
                     c.line, mod_key[c.module + 1], offset, ent)
    key = np.zeros(len(c), np.uint64)
    for rows in c.levels[1:]:
        key[rows] = T.key_hash(key[c.parent[rows]], own[rows])
    return key


def units(exp: Experiment) -> int:
    """Ranks when the run has several processes, else its CPU threads (at least 1)."""
    cpu = [p for p in exp.profiles if not p.gpu]
    processes = {p.process for p in cpu}
    return max(len(processes) if len(processes) > 1 else len(cpu), 1)


@dataclass
class ScalingLoss:
    """Matched contexts (by path) of two runs, with per-unit costs and losses (arrays over the union)."""

    metric: str
    mode: str
    p: int
    q: int
    sources: tuple[Experiment, Experiment]  # (run q, run p)
    source: np.ndarray  # 0: the context is in run q, 1: only in run p
    source_row: np.ndarray
    hidden: np.ndarray  # call-site lines the top-down view folds into their callee
    cost_p: np.ndarray  # inclusive, per unit
    cost_q: np.ndarray
    expected: np.ndarray
    loss: np.ndarray
    loss_exclusive: np.ndarray
    total_q: float

    @property
    def loss_percent(self) -> np.ndarray:
        return 100.0 * self.loss / self.total_q if self.total_q else np.zeros(len(self.loss))

    def label(self, k: int) -> str:
        """The context's path (procedures, loops and its own scope), e.g. ``main / solve / loop at s.c:12``."""
        return _path_label(self.sources[int(self.source[k])], int(self.source_row[k]))

    def ranked(self, top: int | None = None) -> np.ndarray:
        """Contexts by inclusive loss, largest first; call-site lines (shown with their callee) left out."""
        order = np.lexsort((np.arange(len(self.loss)), -self.loss))
        order = order[(self.loss[order] > 0) & ~self.hidden[order]]
        return order if top is None else order[:top]


def _path_label(exp: Experiment, row: int) -> str:
    c = exp.cct
    if c.kind[row] == T.ENTRY:
        return exp.scope_name(row)
    parts = []
    r = row
    while r > 0:
        if c.kind[r] not in (T.ENTRY,) and (c.kind[r] != T.LINE or r == row):
            parts.append(exp.scope_name(r))
        r = int(c.parent[r])
    return " / ".join(reversed(parts)) or T.ROOT_LABEL


def scaling_loss(exp_p: Experiment, exp_q: Experiment, metric: str, mode: str = "weak", p: int | None = None,
                 q: int | None = None) -> ScalingLoss:
    if mode not in MODES:
        raise HpcsaError(None, f"unknown scaling mode {mode!r} (weak or strong)")
    try:
        col_p, col_q = exp_p.catalog.find(metric), exp_q.catalog.find(metric)
    except KeyError as exc:
        raise HpcsaError(None, exc.args[0]) from None
    p = p or units(exp_p)
    q = q or units(exp_q)
    kp, kq = path_keys(exp_p), path_keys(exp_q)
    keys = np.union1d(kp, kq)
    ip, iq = np.searchsorted(keys, kp), np.searchsorted(keys, kq)
    n = len(keys)

    def spread(idx: np.ndarray, values: np.ndarray) -> np.ndarray:
        out = np.zeros(n)
        np.add.at(out, idx, np.nan_to_num(values))  # two rows with one path (rare): their costs add
        return out

    cp = spread(ip, exp_p.inclusive(col_p)) / p
    cq = spread(iq, exp_q.inclusive(col_q)) / q
    ep = spread(ip, exp_p.exclusive(col_p)) / p
    eq = spread(iq, exp_q.exclusive(col_q)) / q
    factor = 1.0 if mode == "weak" else p / q
    expected = cp * factor
    source = np.ones(n, np.int64)
    source_row = np.zeros(n, np.int64)
    source_row[ip] = np.arange(len(ip))
    source[iq] = 0
    source_row[iq] = np.arange(len(iq))
    hidden = np.zeros(n, bool)
    hidden[ip] = exp_p.top_down().parent == -2
    hidden[iq] = exp_q.top_down().parent == -2
    return ScalingLoss(col_q.name, mode, p, q, (exp_q, exp_p), source, source_row, hidden, cp, cq, expected, cq - expected,
                       eq - ep * factor, float(cq[iq[0]]) if len(iq) else 0.0)
