"""The flat view: costs by static scope -- load module / file / procedure / loop / line -- over all contexts.

Every context row maps to one static scope (§III.C of Adhianto et al.,
"Effectively Presenting Call Path Profiles of Application Performance", 2010): a called
frame to its procedure (under its file and load module), an inlined frame, loop,
line or instruction to a scope nested in its parent's static scope. A call
also appears as a *call site* scope ``→ callee`` under the caller's line or
loop, whose inclusive value is what the calls from there cost.

Values, for every partial of every metric (eq. 1-2 of the same paper):

- exclusive: the rows' own costs summed into their scopes, then propagated
  up the static tree as hpcprof propagates scopes -- a procedure (or inlined
  procedure) includes its loops and lines but not inlined callees ("function"),
  a loop excludes nested loops ("lex_aware"), a file or module includes all;
  call sites have none of their own;
- inclusive: the sum of the inclusive values of the scope's *exposed*
  instances only (the contexts in it with no ancestor context in it), so a
  recursive procedure is not counted once per level of recursion.

Both are numpy passes over all contexts (keys by :func:`~hpcsa.views.tree.key_hash`,
one ``np.unique``, :func:`~hpcsa.views.tree.exposed`); only printed rows are
touched in Python. :meth:`FlatForest.flattened` elides the top levels.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from hpcsa.core.treeorder import depth_from_parent
from hpcsa.formats.db.metricsyaml import Input
from hpcsa.views import tree as T
from hpcsa.views.forest import Forest
from hpcsa.views.metrics import Partial

if TYPE_CHECKING:
    from hpcsa.views.data import ExperimentData

MODULE, FILE, PROCEDURE, INLINE, LOOP, LINE, INSTRUCTION, CALLSITE = range(10, 18)
KIND_NAME = {MODULE: "module", FILE: "file", PROCEDURE: "procedure", INLINE: "inlined procedure", LOOP: "loop",
             LINE: "line", INSTRUCTION: "instruction", CALLSITE: "call site"}
_NESTED = {T.FUNCTION: INLINE, T.LOOP: LOOP, T.LINE: LINE, T.INSTRUCTION: INSTRUCTION}
_TAG_MODULE, _TAG_FILE, _TAG_CALLSITE, _TAG_NESTED = 101, 102, 103, 104


class FlatForest(Forest):
    view = "flat"

    def __init__(self, exp: ExperimentData) -> None:
        c = exp.cct
        n = len(c)
        proc_key, proc_module, proc_file = T.procedure_keys(c)
        pseudo = (c.kind == T.ROOT) | (c.kind == T.ENTRY)
        proc_key = np.where(pseudo, T.key_hash(T.PROC_ROOT, 0, 0)[0], proc_key)
        inline = (c.kind == T.FUNCTION) & (c.function >= 0) & (c.relation != T.CALL)
        proc_frame = c.is_frame & ~inline
        module_key = T.key_hash(_TAG_MODULE, proc_module)
        file_key = T.key_hash(_TAG_FILE, proc_module, proc_file)

        # static scope of every row, level by level (a nested scope is keyed by its parent's scope)
        a = np.select([c.kind == T.FUNCTION, c.kind == T.INSTRUCTION], [c.function, c.module], c.file)
        b = np.where(c.kind == T.INSTRUCTION, c.offset, np.where(c.kind == T.FUNCTION, 0, c.line))
        static = proc_key.copy()
        for rows in c.levels[1:]:
            nested = rows[~proc_frame[rows]]
            if len(nested):
                static[nested] = T.key_hash(_TAG_NESTED, static[c.parent[nested]], c.kind[nested], a[nested],
                                            b[nested])
        calls = np.flatnonzero(proc_frame & ~pseudo & (c.relation == T.CALL) & (c.parent >= 0)
                               & ~pseudo[np.maximum(c.parent, 0)])  # entry points call nothing visible
        callsite_key = T.key_hash(_TAG_CALLSITE, static[c.parent[calls]], proc_key[calls])

        # nodes: modules, files, static scopes, call sites -- first occurrence gives kind, parent and a row
        real = np.flatnonzero(proc_frame & ~pseudo)
        nested_kind = np.array([_NESTED.get(int(k), INSTRUCTION) for k in range(16)], np.int64)
        cand_key = np.concatenate([module_key[real], file_key[real], static, callsite_key])
        cand_parent = np.concatenate([np.zeros(len(real), np.uint64), module_key[real],
                                      np.where(proc_frame, np.where(pseudo, np.uint64(0), file_key),
                                               static[np.maximum(c.parent, 0)]),
                                      static[c.parent[calls]]])
        cand_kind = np.concatenate([np.full(len(real), MODULE), np.full(len(real), FILE),
                                    np.where(proc_frame, PROCEDURE, nested_kind[c.kind]),
                                    np.full(len(calls), CALLSITE)])
        cand_row = np.concatenate([real, real, np.arange(n), calls])
        keys, first, inverse = np.unique(cand_key, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
        parent_key = cand_parent[first]
        at = np.minimum(np.searchsorted(keys, parent_key), max(len(keys) - 1, 0))
        parent = np.where((parent_key != 0) & (keys[at] == parent_key), at, -1).astype(np.int64)
        super().__init__(exp, parent)
        self.kind = cand_kind[first]
        self.row = cand_row[first]  # a context row that is an instance of the node
        self.node_of_row = inverse[2 * len(real):2 * len(real) + n]
        self.callsite_node = inverse[2 * len(real) + n:]
        self.calls = calls
        self.pseudo_node = int(self.node_of_row[0]) if n else -1
        self.depth = depth_from_parent(parent)

        # (node, row) membership for inclusive values: a row is in its scope and the scope's static ancestors,
        # a call also in its call-site scope; keep the exposed instances only
        member_node, member_row = [], []
        cur = self.node_of_row[1:].copy() if n else np.zeros(0, np.int64)  # the root row is the pseudo scope
        rows = np.arange(1, n)
        keep = self.node_of_row[1:] != self.pseudo_node
        cur, rows = cur[keep], rows[keep]
        while len(rows):
            member_node.append(cur)
            member_row.append(rows)
            up = parent[cur]
            live = up >= 0
            cur, rows = up[live], rows[live]
        member_node.append(self.callsite_node)
        member_row.append(calls)
        mn, mr = np.concatenate(member_node), np.concatenate(member_row)
        mask = T.exposed(mn, mr, c.end)
        self._inc_node, self._inc_row = mn[mask], mr[mask]
        self._cache: dict[Partial, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}

    # -- values ------------------------------------------------------------------------------------------

    def _aggregates(self, partial: Partial) -> tuple[np.ndarray, ...]:
        """(inclusive, own, function, lex_aware, all) of one partial over the nodes."""
        got = self._cache.get(partial)
        if got is not None:
            return got
        exp, n = self.exp, len(self)
        execution = exp.input_column(Input(partial.metric, "execution", partial.formula, partial.combine))
        own_rows = np.nan_to_num(exp.self_column(partial))
        inc = np.bincount(self._inc_node, weights=np.nan_to_num(execution)[self._inc_row], minlength=n)
        own = np.bincount(self.node_of_row, weights=own_rows, minlength=n)
        fn, nl, al = own.copy(), own.copy(), own.copy()
        lexical = np.isin(self.kind, (LOOP, LINE, INSTRUCTION))
        no_loop = np.isin(self.kind, (LINE, INSTRUCTION))
        not_call = self.kind != CALLSITE
        order = np.argsort(-self.depth, kind="stable")
        bounds = np.flatnonzero(np.diff(self.depth[order])) + 1
        for level in np.split(order, bounds):
            child = level[self.parent[level] >= 0]
            par = self.parent[child]
            np.add.at(fn, par[lexical[child]], fn[child[lexical[child]]])
            np.add.at(nl, par[no_loop[child]], nl[child[no_loop[child]]])
            np.add.at(al, par[not_call[child]], al[child[not_call[child]]])
        if np.isnan(execution).all():
            inc[:] = np.nan
        if 0 <= self.pseudo_node < n:
            inc[self.pseudo_node] = al[self.pseudo_node]
        got = (inc, own, fn, nl, al)
        self._cache[partial] = got
        return got

    def input_values(self, inp: Input) -> np.ndarray:
        partial = Partial.of(inp)
        if not partial.additive:
            return np.full(len(self), np.nan)
        inc, own, fn, nl, al = self._aggregates(partial)
        if inp.scope == "execution":
            return inc
        if inp.scope == "point":
            return own
        container = np.isin(self.kind, (MODULE, FILE))
        out = np.where(container, al, np.where(self.kind == LOOP, nl, fn) if inp.scope == "lex_aware" else fn)
        return np.where(self.kind == CALLSITE, 0.0, out)

    # -- shape -------------------------------------------------------------------------------------------

    def flattened(self, levels: int) -> FlatForest:
        """The same view with the top ``levels`` levels elided: their children become the top scopes
        (a scope without children stays, as flattening a leaf has no effect)."""
        out = object.__new__(FlatForest)
        out.__dict__.update(self.__dict__)
        out._values, out._children = {}, {}
        has_kids = np.bincount(self.parent[self.parent >= 0], minlength=len(self)) > 0
        parent = self.parent.copy()
        top = self.depth < levels
        parent[top & has_kids] = -2
        parent[top & ~has_kids] = -1
        parent[self.depth == levels] = -1
        out.parent = parent
        return out

    def node_of_rows(self, rows: np.ndarray) -> int:
        return int(self.node_of_row[int(np.asarray(rows)[0])])

    # -- names -------------------------------------------------------------------------------------------

    def label(self, node: int) -> str:
        exp, c = self.exp, self.exp.cct
        kind, row = int(self.kind[node]), int(self.row[node])
        if node == self.pseudo_node:
            return T.PROGRAM_ROOT
        if kind == MODULE:
            f = int(c.function[row])
            m = int(exp.meta.functions.module[f]) if c.kind[row] == T.FUNCTION and f >= 0 else int(c.module[row])
            return exp.module_name(m)
        if kind == FILE:
            f = int(c.function[row])
            return exp.file_name(int(exp.meta.functions.file[f]) if c.kind[row] == T.FUNCTION and f >= 0 else -1)
        if kind == CALLSITE:
            return f"→ {exp.scope_name(row)}"
        if kind == INLINE:
            return f"⇢ {exp.scope_name(row)} [inlined]"
        return exp.scope_name(row)

    def info(self, node: int) -> dict[str, Any]:
        exp, c = self.exp, self.exp.cct
        row = int(self.row[node])
        out: dict[str, Any] = {"kind": KIND_NAME[int(self.kind[node])], "name": self.label(node)}
        kind = int(self.kind[node])
        if kind in (LOOP, LINE) and c.file[row] >= 0:
            out["file"], out["line"] = exp.file_name(int(c.file[row]), True), int(c.line[row])
        if kind in (PROCEDURE, CALLSITE, INLINE) and c.kind[row] == T.FUNCTION and c.function[row] >= 0:
            f = int(c.function[row])
            fn = exp.meta.functions
            out["function"] = exp.function_name(f)
            if (full := exp.full_name_of(row)) is not None:
                out["full_name"] = full
            if fn.file[f] >= 0:
                out["file"], out["line"] = exp.file_name(int(fn.file[f]), True), int(fn.line[f])
            if fn.module[f] >= 0:
                out["module"] = exp.module_name(int(fn.module[f]), True)
        if kind == MODULE:
            out["module"] = self.label(node)
        return out
