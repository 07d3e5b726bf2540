"""The top-down (calling context) view: the database's tree with its own inclusive and exclusive values.

Inclusive is the ``execution`` scope and exclusive the ``lex_aware`` scope
(eq. 1-2 of Adhianto et al.,
"Effectively Presenting Call Path Profiles of Application Performance", 2010, as
hpcviewer shows them), read from the summary profile.

Call site and callee share one line (§V.B of the same paper): a source line whose only
child is a call (or an inlined call) is not shown; its callee is shown in its
place as ``file:line → callee``, with the line's inclusive value and, as
exclusive, the callee's plus whatever the line itself cost. A line that calls
several procedures stays, and its callees are shown as ``→ callee``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from hpcsa.formats.db.metricsyaml import Input
from hpcsa.views import tree as T
from hpcsa.views.forest import Forest
from hpcsa.views.metrics import Partial

if TYPE_CHECKING:
    from hpcsa.views.data import ExperimentData


class TopDownForest(Forest):
    view = "top-down"

    def __init__(self, exp: ExperimentData) -> None:
        c = exp.cct
        n = len(c)
        n_children = np.bincount(c.parent[1:], minlength=n) if n > 1 else np.zeros(n, np.int64)
        par = np.maximum(c.parent, 0)
        is_call = (c.kind == T.FUNCTION) & (c.relation != T.LEXICAL) | \
                  ((c.kind == T.INSTRUCTION) & (c.relation == T.CALL))
        site = (c.kind[par] == T.LINE) & (c.relation[par] == T.LEXICAL) & (c.parent >= 0)
        merged = is_call & site & (n_children[par] == 1)  # callee rows absorbing their call-site line
        self.call_site = np.where(is_call & site, c.parent, -1)  # the call-site line row of each callee
        self.merged_from = np.where(merged, c.parent, -1)
        parent = c.parent.copy()
        parent[merged] = c.parent[c.parent[merged]]
        parent[c.parent[merged]] = -2  # the absorbed lines are hidden
        super().__init__(exp, parent)

    def input_values(self, inp: Input) -> np.ndarray:
        base = self.exp.input_column(inp)
        rows = np.flatnonzero(self.merged_from >= 0)
        if not len(rows):
            return base
        lines = self.merged_from[rows]
        out = base.copy()
        if inp.scope == "execution":
            out[rows] = base[lines]
        elif Partial.of(inp).additive:
            out[rows] = base[rows] + self.exp.self_column(Partial.of(inp))[lines]
        return out

    def node_of_rows(self, rows: np.ndarray) -> int:
        """The displayed node of the heaviest of these rows (an absorbed call-site line shows as its callee)."""
        col = next(iter(self.exp.catalog))
        rows = np.asarray(rows, np.int64)
        best = int(rows[np.argmax(np.nan_to_num(self.exp.inclusive(col)[rows], nan=-np.inf))])
        if self.parent[best] == -2:
            best = int(np.flatnonzero(self.merged_from == best)[0])
        return best

    def label(self, node: int) -> str:
        exp = self.exp
        name = exp.scope_name(node)
        c = exp.cct
        if self.call_site[node] >= 0 or c.relation[node] == T.INLINED_CALL or \
                (c.kind[node] in (T.FUNCTION, T.INSTRUCTION) and c.relation[node] == T.CALL
                 and c.kind[max(int(c.parent[node]), 0)] not in (T.ROOT, T.ENTRY)):
            site = self.call_site[node]
            prefix = f"{exp.scope_name(int(site))} " if site >= 0 and self.merged_from[node] >= 0 else ""
            arrow = "⇢" if c.relation[node] == T.INLINED_CALL else "→"
            name = f"{prefix}{arrow} {name}"
            if c.relation[node] == T.INLINED_CALL:
                name += " [inlined]"
        return name

    def info(self, node: int) -> dict[str, Any]:
        exp, c = self.exp, self.exp.cct
        out: dict[str, Any] = {"ctx_id": int(c.ctx_id[node]), "kind": T.KIND_NAME[int(c.kind[node])],
                               "relation": T.RELATION_NAME[int(c.relation[node])]
                               if c.kind[node] not in (T.ROOT, T.ENTRY) else None,
                               "name": exp.scope_name(node)}
        if (full := exp.full_name_of(node)) is not None:
            out["full_name"] = full
        if c.file[node] >= 0:
            out["file"], out["line"] = exp.file_name(int(c.file[node]), True), int(c.line[node])
        if c.module[node] >= 0:
            out["module"], out["offset"] = exp.module_name(int(c.module[node]), True), int(c.offset[node])
        site = int(self.call_site[node])
        if site >= 0:
            out["call_site"] = {"ctx_id": int(c.ctx_id[site]), "file": exp.file_name(int(c.file[site]), True),
                                "line": int(c.line[site])}
        return out
