"""The callers (bottom-up) view: every procedure, then who called it, level by level
(§III.B of Adhianto, Mellor-Crummey and Tallent,
"Effectively Presenting Call Path Profiles of Application Performance", 2010).

The top level has one node per procedure; its instances are the procedure's
frames in the calling context tree (called or inlined). Level ``k`` splits a
node's instances by the procedure ``k`` frames up their call chain, so a
node is a chain "f, called from g, called from h". A node's values are the
instances' costs in that chain:

- exclusive: the sum of the instances' own procedure cost (the ``function``
  scope: the frame's body without its callees);
- inclusive: the sum of the inclusive values of the *exposed* instances only
  (no ancestor instance in the same node): with recursion, ``g`` called from
  ``m`` and ``g`` called from ``g`` inside it are counted once (§IV.B of the
  same paper; the worked example of its Fig. 1-2 is a test).

Costs above any procedure (the root's and entry points' own) belong to the
pseudo-procedure ``<program root>``, so the exclusive values of the top level
add up to the experiment's total. Levels are built with numpy over all
instances at once; only printed rows are visited in Python.
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

_TAG_LEVEL = 201


class CallersForest(Forest):
    view = "bottom-up"

    def __init__(self, exp: ExperimentData, depth: int = 2) -> None:
        c = exp.cct
        proc_key, _, _ = T.procedure_keys(c)
        pseudo_rows = (c.kind == T.ROOT) | (c.kind == T.ENTRY)
        frames = np.flatnonzero(c.is_frame & ~pseudo_rows)
        entry_key = T.key_hash(T.PROC_ROOT, 1, c.entry)  # an entry point as a caller is named by itself
        caller_key = np.where(c.kind == T.ENTRY, entry_key, proc_key)
        self.frames = frames
        self.pseudo_frames = np.flatnonzero(pseudo_rows)

        # level 0: procedures (plus the pseudo-procedure, node 0)
        keys, first, node0 = np.unique(proc_key[frames], return_index=True, return_inverse=True)
        node0 = node0.reshape(-1) + 1
        parents = [np.full(len(keys) + 1, -1, np.int64)]
        reps = [np.concatenate([[0], frames[first]])]  # the frame each node shows
        sites = [np.full(len(keys) + 1, -1, np.int64)]
        n_sites = [np.zeros(len(keys) + 1, np.int64)]
        pair_node, pair_row = [node0], [frames]
        count = len(keys) + 1
        cur_node, inst, up = node0, frames, frames
        for _ in range(max(depth - 1, 0)):
            alive = c.kind[up] != T.ENTRY
            cur_node, inst, up = cur_node[alive], inst[alive], up[alive]
            caller = c.caller_frame(up)
            ok = (caller >= 0) & (c.kind[np.maximum(caller, 0)] != T.ROOT)
            cur_node, inst, up, caller = cur_node[ok], inst[ok], up[ok], caller[ok]
            if not len(inst):
                break
            key = T.key_hash(_TAG_LEVEL, cur_node, caller_key[caller])
            lkeys, lfirst, linv = np.unique(key, return_index=True, return_inverse=True)
            linv = linv.reshape(-1)
            site = np.where((c.kind[c.parent[up]] == T.LINE), c.parent[up], -1)
            ids = count + linv
            parents.append(cur_node[lfirst])
            reps.append(caller[lfirst])
            sites.append(site[lfirst])
            safe = np.maximum(site, 0)
            _, one_per_site = np.unique(T.key_hash(ids, c.file[safe], c.line[safe], site < 0), return_index=True)
            n_sites.append(np.bincount(linv[one_per_site], minlength=len(lkeys)))
            pair_node.append(ids)
            pair_row.append(inst)
            count += len(lkeys)
            cur_node, up = ids, caller
        super().__init__(exp, np.concatenate(parents))
        self.rep = np.concatenate(reps)
        self.site = np.concatenate(sites)
        self.n_sites = np.concatenate(n_sites)
        self.level = depth_from_parent(self.parent)
        pn, pr = np.concatenate(pair_node), np.concatenate(pair_row)
        self._pair_node, self._pair_row = pn, pr
        mask = T.exposed(pn, pr, c.end)
        self._inc_node, self._inc_row = pn[mask], pr[mask]
        self._cache: dict[Partial, tuple[np.ndarray, np.ndarray]] = {}

    def _aggregates(self, partial: Partial) -> tuple[np.ndarray, np.ndarray]:
        got = self._cache.get(partial)
        if got is None:
            exp, c, n = self.exp, self.exp.cct, len(self)
            execution = exp.input_column(Input(partial.metric, "execution", partial.formula, partial.combine))
            own = np.nan_to_num(exp.self_column(partial))
            body = np.bincount(c.frame_of, weights=own, minlength=len(c))  # each frame's own procedure cost
            inc = np.bincount(self._inc_node, weights=np.nan_to_num(execution)[self._inc_row], minlength=n)
            exc = np.bincount(self._pair_node, weights=body[self._pair_row], minlength=n)
            exc[0] = inc[0] = body[self.pseudo_frames].sum()
            if np.isnan(execution).all():
                inc[:] = np.nan
            got = self._cache[partial] = (inc, exc)
        return got

    def input_values(self, inp: Input) -> np.ndarray:
        partial = Partial.of(inp)
        if not partial.additive:
            return np.full(len(self), np.nan)
        inc, exc = self._aggregates(partial)
        return inc if inp.scope == "execution" else exc

    def node_of_rows(self, rows: np.ndarray) -> int:
        proc_key, _, _ = T.procedure_keys(self.exp.cct)
        want = proc_key[int(np.asarray(rows)[0])]
        top = np.flatnonzero(self.parent == -1)
        hit = top[proc_key[self.rep[top]] == want]
        return int(hit[0]) if len(hit) else int(top[0])

    def label(self, node: int) -> str:
        exp = self.exp
        if node == 0:
            return T.PROGRAM_ROOT
        name = exp.scope_name(int(self.rep[node]))
        if self.parent[node] < 0:
            return name
        site = int(self.site[node])
        if self.n_sites[node] > 1:
            return f"{name} (at {self.n_sites[node]} call sites)"
        if site >= 0:
            return f"{name} (at {exp.scope_name(site)})"
        return name

    def info(self, node: int) -> dict[str, Any]:
        exp, c = self.exp, self.exp.cct
        rep = int(self.rep[node])
        out: dict[str, Any] = {"level": int(self.level[node]), "name": T.PROGRAM_ROOT if node == 0
                               else exp.scope_name(rep)}
        if node and (full := exp.full_name_of(rep)) is not None:
            out["full_name"] = full
        if node and c.kind[rep] == T.FUNCTION and c.function[rep] >= 0:
            f = int(c.function[rep])
            fn = exp.meta.functions
            if fn.file[f] >= 0:
                out["file"], out["line"] = exp.file_name(int(fn.file[f]), True), int(fn.line[f])
        site = int(self.site[node])
        if site >= 0 and self.n_sites[node] == 1:
            out["call_site"] = {"file": exp.file_name(int(c.file[site]), True), "line": int(c.line[site])}
        return out

