"""Phase 1's class 2: the unified calling-context tree and its canonical ids.

The union of the measured trees (:mod:`.rawtree`) is expanded once, node by
node, into source-level contexts the way hpcprof creates them
(``src/lib/profile/sources/hpcrun4.cpp`` and ``finalizers/struct.cpp`` in the HPCToolkit sources;
the placeholders and partial call paths as the HPCToolkit User's Manual presents them):

- ``^Primary`` and ``NoActvty`` are the global context; ``^Partial`` and
  ``*Unnorm`` are ``(unknown)``; ``| Main`` and ``| Thread`` placeholders
  become the "main thread" and "application thread" entry points; any other
  context found directly below the global context is demoted below an
  ``(unknown)`` entry ("partial call paths");
- every instruction is expanded through the classifier (:mod:`.lexical`)
  under its caller with the ``call`` relation: function, loops, inlined
  calls, lines, then the instruction itself (lexically nested, so meta.db
  elides it). The first context of the chain is where ``move2proc`` metrics
  go;
- a PC sample that could not be reconstructed is ``caller -> (unknown) ->
  instruction``; reconstructed ones give their FRAME/POINT nodes contexts.

Contexts are created once and never change. Ids are assigned when the whole
tree is known, canonically: a depth-first walk with siblings sorted by
(relation, scope), so ids are pre-order (a subtree is an id range) and do not
depend on the order profiles were read, nor on how many workers read them.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

import numpy as np

from hpcsa.aggregate import lexical as lx
from hpcsa.aggregate import rawtree
from hpcsa.aggregate.gpu_contexts import RECONSTRUCTED, frame_name
from hpcsa.aggregate.handoff import UnifiedTree
from hpcsa.core import treeorder
from hpcsa.core.arrays import sorted_unique_rows
from hpcsa.core.dataclass import dataclass
from hpcsa.core.errors import HpcsaError
from hpcsa.formats.db.metadb_model import CALL
from hpcsa.formats.measurement.placeholders import (
    FENCE_MAIN,
    FENCE_THREAD,
    NO_ACTIVITY,
    PARTIAL,
    PRIMARY,
    UNNORMALIZED,
)

if TYPE_CHECKING:
    from hpcsa.gpucct import CallGraph

ROOT_SCOPE: lx.Scope = (-1,)


class ContextBuilder:
    """Contexts as they are discovered: (parent, relation, scope) -> provisional number (0 = global)."""

    def __init__(self) -> None:
        self.parent: list[int] = [-1]
        self.relation: list[int] = [-1]
        self.scope: list[lx.Scope] = [ROOT_SCOPE]
        self._index: dict[tuple[int, int, lx.Scope], int] = {}

    def __len__(self) -> int:
        return len(self.parent)

    def ensure(self, parent: int, relation: int, scope: lx.Scope) -> int:
        key = (parent, relation, scope)
        got = self._index.get(key)
        if got is None:
            got = self._index[key] = len(self.parent)
            self.parent.append(parent)
            self.relation.append(relation)
            self.scope.append(scope)
        return got

    def chain(self, parent: int, relation: int, steps: tuple[lx.Step, ...]) -> tuple[int, int]:
        """Create a classified chain below ``parent``; (first context, last context)."""
        ctx = parent
        first = -1
        index = self._index
        for rel, scope in steps:  # ensure(), inlined: this runs once per step of every chain
            key = (ctx, relation if rel is None else rel, scope)
            got = index.get(key)
            if got is None:
                got = index[key] = len(self.parent)
                self.parent.append(ctx)
                self.relation.append(key[1])
                self.scope.append(scope)
            ctx = got
            if first < 0:
                first = ctx
        return first, ctx


@dataclass
class Expansion:
    """The provisional contexts and, per raw node (rows of the sorted union), its contexts."""

    builder: ContextBuilder
    full: np.ndarray  # int64 provisional context of each raw node (-1: none)
    rel: np.ndarray


def _frame_steps(kind: np.ndarray) -> tuple[int, int]:
    """The step kinds (call, unknown caller) of reconstructed GPU frames; (-1, -1) without any FRAME node,
    so that CPU-only runs never import hpcsa.gpucct (and networkx)."""
    if not (kind == rawtree.FRAME).any():
        return -1, -1
    from hpcsa.gpucct import StepKind

    return int(StepKind.CALL), int(StepKind.UNKNOWN)


def expand(raw: rawtree.RawNodes, classifier: lx.Classifier, graphs: dict[int, CallGraph]) -> Expansion:
    """Contexts for every node of the union (see the module docstring)."""
    nodes = raw.nodes
    n = len(nodes)
    key_of = {h: ref.key for h, ref in raw.modules.items()}
    parent_row = rawtree.find(nodes["h1"], nodes["parent"]) if n else np.zeros(0, np.int64)
    has_parent = nodes["parent"] != 0
    if (has_parent & (parent_row < 0)).any():
        raise HpcsaError(None, "internal error: a node of the union has no parent in it")
    kind = nodes["kind"]
    step_call, step_unknown = _frame_steps(kind)
    is_point = ((kind == rawtree.CCT) & (nodes["module"] != 0)) | (kind == rawtree.POINT) | \
               ((kind == rawtree.FRAME) & (nodes["flag"] == step_call))
    # Classify every distinct (module, address) once, per module (vectorized lookups).
    chains: dict[tuple[int, int], tuple[lx.Step, ...]] = {}
    mods, ips_all = sorted_unique_rows(nodes["module"][is_point], nodes["ip"][is_point])
    by_module: dict[int, list[int]] = defaultdict(list)
    for m, ip in zip(mods.tolist(), ips_all.tolist(), strict=True):
        by_module[m].append(ip)
    for m, ips in by_module.items():
        for ip, steps in zip(ips, classifier.expand(key_of.get(m, ""), ips), strict=True):
            chains[(m, ip)] = steps

    b = ContextBuilder()
    full = np.full(n, -1, np.int64)
    rel = np.full(n, -1, np.int64)
    order = np.argsort(nodes["depth"], kind="stable")
    par_l = parent_row.tolist()
    kind_l, flag_l = kind.tolist(), nodes["flag"].tolist()
    mod_l, ip_l = nodes["module"].tolist(), nodes["ip"].tolist()
    hp = has_parent.tolist()
    for row in order.tolist():
        k, flag, mod, ip = kind_l[row], flag_l[row], mod_l[row], ip_l[row]
        if not hp[row]:
            if k == rawtree.CCT and mod == 0 and ip == PRIMARY:
                full[row] = rel[row] = 0
                continue
            raise HpcsaError(None, "internal error: a top node of the union is not <primary root>")
        par = int(full[par_l[row]])
        if par < 0:
            raise HpcsaError(None, "internal error: a node below a reconstructed sample")
        if k == rawtree.CCT:
            if mod == 0:
                f = _placeholder(b, par, ip)
                full[row] = rel[row] = f
                continue
            if par == 0:  # instructions cannot be top-level contexts: "partial call paths"
                par = b.ensure(0, CALL, lx.UNKNOWN)
            if flag & RECONSTRUCTED:
                continue
            if not flag & 0x1:  # not unwound and not reconstructed: caller -> (unknown) -> instruction
                par = b.ensure(par, CALL, lx.UNKNOWN)
            rel[row], full[row] = b.chain(par, CALL, chains[(mod, ip)])
        elif k == rawtree.FRAME:
            if flag == step_call:
                rel[row], full[row] = b.chain(par, CALL, chains[(mod, ip)])
            elif flag == step_unknown:
                full[row] = rel[row] = b.ensure(par, CALL, lx.UNKNOWN)
            else:
                name = frame_name(graphs.get(mod), flag, ip)
                full[row] = rel[row] = b.ensure(par, CALL, lx.function_scope(name))
        else:
            rel[row], full[row] = b.chain(par, CALL, chains[(mod, ip)])
    return Expansion(b, full, rel)


def _placeholder(b: ContextBuilder, par: int, code: int) -> int:
    if code == NO_ACTIVITY:
        if par != 0:
            raise HpcsaError(None, "<no activity> below another context")
        return 0
    if code in (PARTIAL, UNNORMALIZED):
        if code == PARTIAL and par != 0:
            raise HpcsaError(None, "<partial root> below another context")
        return b.ensure(par, CALL, lx.UNKNOWN)
    if code == PRIMARY:
        raise HpcsaError(None, "<primary root> below another context")
    if par == 0 and code not in (FENCE_MAIN, FENCE_THREAD):
        par = b.ensure(0, CALL, lx.UNKNOWN)
    return b.ensure(par, CALL, lx.placeholder_scope(code))


# -- canonical ids -------------------------------------------------------------------------------------------


def canonical_ids(b: ContextBuilder) -> tuple[UnifiedTree, np.ndarray]:
    """Ids by a depth-first walk with siblings sorted by (relation, scope); (tree, id of each provisional).

    The distinct scopes are sorted once (the only comparisons of Python tuples); the contexts are then put in
    sibling order by one stable sort of (parent, relation, scope rank), and numbered in pre-order level by
    level (:func:`.treeorder.preorder`, which keeps siblings in that order)."""
    nb = len(b)
    parent_of = np.array(b.parent, np.int64)
    relation_of = np.array(b.relation, np.int64)
    distinct = sorted(dict.fromkeys(b.scope))
    rank_of = {sc: r for r, sc in enumerate(distinct)}
    scope_rank = np.fromiter(map(rank_of.__getitem__, b.scope), np.int64, nb)
    width = len(rank_of) + 1
    key = (parent_of[1:] * (int(relation_of.max(initial=0)) + 2) + relation_of[1:] + 1) * width + scope_rank[1:]
    by_sibling = np.r_[0, np.argsort(key, kind="stable") + 1]  # the global context first
    at = np.empty(nb, np.int64)
    at[by_sibling] = np.arange(nb)
    up = parent_of[by_sibling]
    order, depth, parent, size = treeorder.preorder_sized(np.where(up >= 0, at[np.maximum(up, 0)], -1),
                                                          np.zeros(nb, np.int64))
    if nb and (depth[1:] == 0).any():
        raise HpcsaError(None, "internal error: a context is not below the global context")
    old = by_sibling[order]  # the provisional context at each canonical id
    new_id = np.empty(nb, np.int64)
    new_id[old] = np.arange(nb)
    return UnifiedTree(parent.astype(np.int32), relation_of[old].astype(np.int8),
                       list(map(b.scope.__getitem__, old.tolist())), depth.astype(np.int32),
                       np.arange(nb, dtype=np.int64) + size, distinct, scope_rank[old]), new_id
