"""The calling context tree as the views see it, and the vectorized tree algebra they share.

meta.db stores entry points apart from their contexts; hpcviewer shows one
tree. :class:`CCT` is that tree: row 0 is the global root (context id 0, whose
values are the experiment's aggregate), then each entry point ("main thread",
"application thread", ...) followed by its contexts, all in pre-order. A
subtree is therefore a contiguous row range ``[row, end[row])``, which every
analysis below uses instead of walking the tree in Python:

- :func:`self_values`: a node's own cost, inclusive minus its children's;
- :meth:`CCT.frame_of`: the procedure frame each row executes in (one numpy
  step per depth level);
- :func:`exposed`: the exposed-instance rule of hpcviewer for recursion -- of
  the instances of one scope, keep those with no ancestor instance (one sort
  and one running maximum, whatever the number of scopes);
- :func:`sorted_children`: every node's children ordered by a key (CSR).
"""

from __future__ import annotations

from dataclasses import field

import numpy as np

from hpcsa.core.dataclass import dataclass
from hpcsa.core.treeorder import depth_levels, subtree_sizes
from hpcsa.formats.db import metadb

# Row kinds: meta.db's lexical types, plus the two kinds of rows meta.db does not store as contexts.
FUNCTION, LOOP, LINE, INSTRUCTION = metadb.FUNCTION, metadb.LOOP, metadb.LINE, metadb.INSTRUCTION
ROOT, ENTRY = 8, 9
KIND_NAME = {**metadb.LEXICAL_TYPE, ROOT: "root", ENTRY: "entry"}
RELATION_NAME = metadb.RELATION
LEXICAL, CALL, INLINED_CALL = metadb.LEXICAL, metadb.CALL, metadb.INLINED_CALL
ROOT_LABEL = "Experiment Aggregate Metrics"
PROGRAM_ROOT = "<program root>"  # the pseudo-procedure the entry points are in the flat and callers views


@dataclass
class CCT:
    """Root, entry points and contexts of one meta.db as parallel arrays in pre-order (int64 columns).

    ``function``, ``file``, ``module`` index meta.db's tables (-1 when absent);
    ``entry`` is the entry-point index of each row (-1 for the root);
    ``context_row`` is the row in ``meta.contexts`` (-1 for root and entries).
    """

    meta: metadb.MetaDB
    ctx_id: np.ndarray
    parent: np.ndarray
    depth: np.ndarray
    kind: np.ndarray
    relation: np.ndarray
    function: np.ndarray
    file: np.ndarray
    line: np.ndarray
    module: np.ndarray
    offset: np.ndarray
    entry: np.ndarray
    context_row: np.ndarray
    _end: np.ndarray | None = field(default=None, repr=False)
    _levels: list[np.ndarray] | None = field(default=None, repr=False)
    _frame_of: np.ndarray | None = field(default=None, repr=False)
    _row_of: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.ctx_id)

    @classmethod
    def from_meta(cls, meta: metadb.MetaDB) -> CCT:
        t = meta.contexts
        entries = t.entry_points if t is not None else []
        n_ctx = len(t) if t is not None else 0
        n_ent = len(entries)
        n = 1 + n_ent + n_ctx
        if t is not None and n_ctx:
            # Rows of one entry point are contiguous in meta.db's pre-order; a stable sort keeps that.
            order = np.argsort(t.entry, kind="stable")
            ent = t.entry[order].astype(np.int64)
            inverse = np.empty(n_ctx, np.int64)
            inverse[order] = np.arange(n_ctx)
        else:
            order = np.zeros(0, np.int64)
            ent = np.zeros(0, np.int64)
            inverse = order
        counts = np.bincount(ent, minlength=n_ent) if n_ent else np.zeros(0, np.int64)
        entry_pos = 1 + np.arange(n_ent) + np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        ctx_pos = np.arange(n_ctx, dtype=np.int64) + 2 + ent  # after the root and entries 0..e

        def col(name: str, fill: int, dtype: type = np.int64) -> np.ndarray:
            out: np.ndarray = np.full(n, fill, dtype)
            if n_ctx:
                out[ctx_pos] = getattr(t, name)[order]
            return out

        ctx_id = col("ctx_id", 0)
        ctx_id[entry_pos] = [e.ctx_id for e in entries]
        parent = np.full(n, -1, np.int64)
        parent[entry_pos] = 0
        if t is not None and n_ctx:
            p = t.parent[order].astype(np.int64)
            parent[ctx_pos] = np.where(p >= 0, ctx_pos[inverse[np.maximum(p, 0)]], entry_pos[ent])
        depth = np.zeros(n, np.int64)
        depth[entry_pos] = 1
        if t is not None and n_ctx:
            depth[ctx_pos] = t.depth[order].astype(np.int64) + 2
        kind = col("lexical_type", ROOT)
        kind[entry_pos] = ENTRY
        entry = np.full(n, -1, np.int64)
        entry[entry_pos] = np.arange(n_ent)
        if n_ctx:
            entry[ctx_pos] = ent
        context_row = np.full(n, -1, np.int64)
        context_row[ctx_pos] = order
        return cls(meta, ctx_id, parent, depth, kind, col("relation", LEXICAL), col("function", -1),
                   col("file", -1), col("line", 0), col("module", -1), col("offset", 0), entry, context_row)

    # -- structure ---------------------------------------------------------------------------------------

    @property
    def end(self) -> np.ndarray:
        """One past the last row of each row's subtree."""
        if self._end is None:
            self._end = np.arange(len(self)) + subtree_sizes(self.parent, self.depth, self.levels)
        return self._end

    @property
    def levels(self) -> list[np.ndarray]:
        """Rows of each depth, shallowest first."""
        if self._levels is None:
            self._levels = depth_levels(self.depth)
        return self._levels

    def row_of(self, ctx_ids: np.ndarray) -> np.ndarray:
        """Row of each context id (-1 for ids without a row: elided instructions, unknown ids)."""
        ids = np.asarray(ctx_ids, np.int64)
        if "table" not in self._row_of:
            order = np.argsort(self.ctx_id, kind="stable")
            self._row_of["table"] = order
            self._row_of["ids"] = self.ctx_id[order]
        order, sorted_ids = self._row_of["table"], self._row_of["ids"]
        at = np.minimum(np.searchsorted(sorted_ids, ids), len(sorted_ids) - 1)
        return np.where(sorted_ids[at] == ids, order[at], -1)

    @property
    def is_frame(self) -> np.ndarray:
        """Rows that are procedure frames: called or inlined functions, call-relation instructions
        (a frame known only by an address), functions without a name, entry points and the root."""
        fn = self.kind == FUNCTION
        return ((fn & (self.relation != LEXICAL)) | (fn & (self.function < 0))
                | ((self.kind == INSTRUCTION) & (self.relation == CALL))
                | (self.kind == ENTRY) | (self.kind == ROOT))

    @property
    def frame_of(self) -> np.ndarray:
        """The nearest procedure frame at or above each row."""
        if self._frame_of is None:
            is_frame = self.is_frame
            out = np.arange(len(self))
            for rows in self.levels[1:]:
                out[rows] = np.where(is_frame[rows], rows, out[self.parent[rows]])
            self._frame_of = out
        return self._frame_of

    def caller_frame(self, rows: np.ndarray) -> np.ndarray:
        """The frame that called each row's frame (-1 above the root)."""
        par = self.parent[rows]
        return np.where(par >= 0, self.frame_of[np.maximum(par, 0)], -1)


# -- tree algebra ----------------------------------------------------------------------------------------


def children_sum(parent: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Sum of each node's children's values (nodes with parent -1 contribute nowhere)."""
    has = parent >= 0
    return np.bincount(parent[has], weights=values[has], minlength=len(parent))


def self_values(parent: np.ndarray, inclusive: np.ndarray) -> np.ndarray:
    """A node's own cost: its inclusive value minus its children's (eq. 2 of hpcviewer, solved for m_E)."""
    return inclusive - children_sum(parent, inclusive)


def exposed(groups: np.ndarray, rows: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Mask of (group, row) pairs whose row has no ancestor row in the same group.

    ``rows`` are pre-order positions and ``end`` the subtree ends, so row ``y``
    is an ancestor of ``x`` iff ``y < x < end[y]``. Sorted by (group, row), a
    pair is hidden iff the running maximum of ``end`` over the earlier pairs of
    its group exceeds its row; groups are kept apart by offsetting with
    ``group * span``.
    """
    groups = np.asarray(groups, np.int64)
    rows = np.asarray(rows, np.int64)
    if not len(rows):
        return np.zeros(0, bool)
    order = np.lexsort((rows, groups))
    g, r = groups[order], rows[order]
    span = int(end.max()) + 1
    base = (g - int(g.min())) * span
    run = np.maximum.accumulate(base + end[r])
    prev = np.empty_like(run)
    prev[0] = -1
    prev[1:] = run[:-1]
    out = np.empty(len(rows), bool)
    out[order] = prev <= base + r
    return out


def sorted_children(parent: np.ndarray, key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(order, starts): the children of node ``i`` are ``order[starts[i]:starts[i + 1]]``, by ``key`` descending.

    Ties keep node order; NaN keys sort last.
    """
    n = len(parent)
    nodes = np.flatnonzero(parent >= 0)
    k = np.where(np.isnan(key[nodes]), -np.inf, -key[nodes])
    order = nodes[np.lexsort((nodes, k, parent[nodes]))]
    starts = np.searchsorted(parent[order], np.arange(n + 1))
    return order, starts


# -- keys --------------------------------------------------------------------------------------------------

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


def _avalanche(z: np.ndarray) -> np.ndarray:
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


def key_hash(*columns: np.ndarray | int) -> np.ndarray:
    """A 64-bit key of several integer columns (splitmix64 chaining): equal tuples, equal keys.

    The views name scopes (flat nodes, caller chains, paths across databases)
    by such keys so that grouping is one ``np.unique``; with 64 bits a
    collision among a million scopes has odds of about 1e-8.
    """
    n = max((len(c) for c in columns if isinstance(c, np.ndarray)), default=1)
    h = np.full(n, 0x2545F4914F6CDD1D, np.uint64)
    with np.errstate(over="ignore"):
        for c in columns:
            x = np.asarray(c).astype(np.int64).astype(np.uint64)
            h = _avalanche(h ^ (x + _GOLDEN + (h << np.uint64(6)) + (h >> np.uint64(2))))
    return h


# procedure identities: the tag says what identifies the procedure
PROC_FUNCTION, PROC_UNKNOWN, PROC_ADDRESS, PROC_ROOT = 1, 2, 3, 4


def procedure_keys(cct: CCT) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(key, load module, source file) of the procedure each frame row is an instance of.

    A named function is its function-table entry; a frame known only by an
    address is (module, offset); nameless functions are one procedure; the root
    and the entry points are the pseudo-procedure ``<program root>``.
    Meaningless for rows that are not frames.
    """
    fn = cct.meta.functions
    f = cct.function
    has_f = (cct.kind == FUNCTION) & (f >= 0)
    fsafe = np.maximum(f, 0)
    f_module = fn.module.astype(np.int64)[fsafe] if len(fn) else np.full(len(f), -1, np.int64)
    f_file = fn.file.astype(np.int64)[fsafe] if len(fn) else np.full(len(f), -1, np.int64)
    tag = np.select([has_f, cct.kind == FUNCTION, cct.kind == INSTRUCTION], [PROC_FUNCTION, PROC_UNKNOWN,
                    PROC_ADDRESS], PROC_ROOT)
    a = np.where(has_f, f, np.where(tag == PROC_ADDRESS, cct.module, 0))
    b = np.where(tag == PROC_ADDRESS, cct.offset.astype(np.int64), 0)
    module = np.where(has_f, f_module, np.where(tag == PROC_ADDRESS, cct.module, -1))
    file = np.where(has_f, f_file, -1)
    return key_hash(tag, a, b), module, file
