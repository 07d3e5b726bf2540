"""Class 2: the unified calling-context tree and its canonical ids.

The union of the measured trees (:mod:`rawtree`) is expanded once, node by
node, into source-level contexts the way hpcprof creates them
(``src/lib/profile/sources/hpcrun4.cpp`` and ``finalizers/struct.cpp`` in the HPCToolkit sources;
the placeholders and partial call paths as the HPCToolkit User's Manual presents them):

- ``^Primary`` and ``NoActvty`` are the global context; ``^Partial`` and
  ``*Unnorm`` are ``(unknown)``; ``| Main`` and ``| Thread`` placeholders
  become the "main thread" and "application thread" entry points; any other
  context found directly below the global context is demoted below an
  ``(unknown)`` entry ("partial call paths");
- every instruction is expanded through the classifier (:mod:`lexical`)
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
from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from hpcsa.aggregate.prof import lexical as lx
from hpcsa.aggregate.prof import rawtree
from hpcsa.aggregate.prof.gpu_contexts import RECONSTRUCTED, frame_name
from hpcsa.core import treeorder
from hpcsa.core.arrays import sorted_unique_rows
from hpcsa.core.dataclass import dataclass
from hpcsa.core.errors import HpcsaError
from hpcsa.formats.db import metadb
from hpcsa.formats.db.metadb_model import CALL, INLINED_CALL, LEXICAL
from hpcsa.formats.measurement.placeholders import (
    FENCE_MAIN,
    FENCE_THREAD,
    NO_ACTIVITY,
    PARTIAL,
    PRIMARY,
    UNNORMALIZED,
    placeholder_name,
)

if TYPE_CHECKING:
    from hpcsa.gpucct import CallGraph

#: Load-module ids hpcrun reserves for outlined range trees (range-based PC sampling).
OUTLINED_RANGE_IDS = (65531, 65532, 65533)

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


@dataclass
class UnifiedTree:
    """The final context tree by canonical id (0 = global; ids are pre-order)."""

    parent: np.ndarray     # int32
    relation: np.ndarray   # int8 (-1 for the root)
    scopes: list[lx.Scope]
    depth: np.ndarray      # int32
    end: np.ndarray        # int64: the subtree of c is ids c .. end[c]-1

    def __len__(self) -> int:
        return len(self.parent)

    @property
    def is_loop(self) -> np.ndarray:
        return np.array([s[0] == lx.LOOP for s in self.scopes], bool)

    @property
    def is_call(self) -> np.ndarray:
        """hpcprof's isCall: entered by a call or an inlined call (stops the function scope)."""
        return (self.relation == CALL) | (self.relation == INLINED_CALL)

    @property
    def elided(self) -> np.ndarray:
        """Instructions nested lexically in their line: left out of meta.db, mapped to the parent in traces."""
        kinds = np.array([s[0] for s in self.scopes], np.int64)
        return (self.relation == LEXICAL) & (kinds == lx.POINT)


def canonical_ids(b: ContextBuilder) -> tuple[UnifiedTree, np.ndarray]:
    """Ids by a depth-first walk with siblings sorted by (relation, scope); (tree, id of each provisional).

    The distinct scopes are sorted once (the only comparisons of Python tuples); the contexts are then put in
    sibling order by one stable sort of (parent, relation, scope rank), and numbered in pre-order level by
    level (:func:`treeorder.preorder`, which keeps siblings in that order)."""
    nb = len(b)
    parent_of = np.array(b.parent, np.int64)
    relation_of = np.array(b.relation, np.int64)
    rank_of = {sc: r for r, sc in enumerate(sorted(dict.fromkeys(b.scope)))}
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
                       np.arange(nb, dtype=np.int64) + size), new_id


# -- meta.db ----------------------------------------------------------------------------------------------


ENTRY_KINDS = {FENCE_MAIN: (1, "main thread"), FENCE_THREAD: (2, "application thread")}


@dataclass
class _Names:
    """meta.db's module, file and function tables of a tree's scopes, with the index of each entry."""

    modules: list[str]
    files: list[str]
    functions: list[tuple[object, ...]]  # ("f", name, module, offset, file, line) or ("p", name, code)
    module_index: dict[str, int]
    file_index: dict[str, int]
    function_index: dict[tuple[object, ...], int]


def _names(scopes: Iterable[lx.Scope]) -> _Names:
    """The names of these scopes, sorted."""
    modules: set[str] = set()
    files: set[str] = set()
    functions: set[tuple[object, ...]] = set()
    for s in scopes:
        k = s[0]
        if k == lx.FUNCTION:
            functions.add(("f",) + s[1:])
            if s[2]:
                modules.add(s[2])
            if s[4]:
                files.add(s[4])
        elif k == lx.PLACEHOLDER:
            functions.add(("p", placeholder_name(s[1]), s[1]))
        elif k == lx.LOOP:
            files.add(s[1])
            modules.add(s[3])
        elif k == lx.LINE:
            files.add(s[1])
        elif k == lx.POINT:
            modules.add(s[1])
    module_list = sorted(modules)
    file_list = sorted(files)
    # Real functions first, then placeholders (hpcprof's order of the two groups).
    fn_keys = sorted(f for f in functions if f[0] == "f") + sorted((f for f in functions if f[0] == "p"),
                                                                  key=lambda f: (f[1], f[2]))
    return _Names(module_list, file_list, fn_keys, {m: i for i, m in enumerate(module_list)},
                  {f: i for i, f in enumerate(file_list)}, {f: i for i, f in enumerate(fn_keys)})


def _functions(names: _Names) -> metadb.Functions:
    shown: list[str | None] = []
    fmod, foff, ffile, fline = [], [], [], []
    for f in names.functions:
        if f[0] == "p":
            shown.append(f[1])
            fmod.append(-1), foff.append(0), ffile.append(-1), fline.append(0)
        else:
            _, name, module, offset, file, line = f
            shown.append(name)
            fmod.append(names.module_index[module] if module else -1)
            foff.append(offset if module and offset >= 0 else 0)
            ffile.append(names.file_index[file] if file else -1)
            fline.append(line if file and line >= 0 else 0)
    return metadb.Functions(shown, np.array(fmod, np.int32), np.array(foff, np.uint64),
                            np.array(ffile, np.int32), np.array(fline, np.uint32), np.zeros(len(shown), np.uint32))


def _entry_points(tree: UnifiedTree) -> tuple[np.ndarray, list[metadb.EntryPoint], np.ndarray]:
    """The top-level contexts, meta.db's entry points for them, and the entry point of every context."""
    top = np.flatnonzero(tree.parent == 0)
    entries = []
    entry_id = np.zeros(len(tree), np.int64)
    for c in top.tolist():
        s = tree.scopes[c]
        if s[0] == lx.UNKNOWN_KIND:
            kind, pretty = 0, "unknown entry"
        elif s[0] == lx.PLACEHOLDER and s[1] in ENTRY_KINDS:
            kind, pretty = ENTRY_KINDS[s[1]]
        else:
            raise HpcsaError(None, f"internal error: invalid top-level context {s}")
        entry_id[c: tree.end[c]] = len(entries)  # ids are pre-order: a subtree is an id range
        entries.append(metadb.EntryPoint(c, kind, pretty))
    return top, entries, entry_id


def meta_tables(tree: UnifiedTree) -> tuple[metadb.ContextTree, metadb.Functions, list[str], list[str]]:
    """meta.db's context tree, functions, modules and files for ``tree`` (all in canonical order)."""
    top, entries, entry_id = _entry_points(tree)
    rows = np.flatnonzero(tree.parent > 0)  # every context below an entry point
    row_of = np.full(len(tree), -1, np.int64)
    row_of[rows] = np.arange(len(rows))
    par = tree.parent[rows].astype(np.int64)
    parent_rows = np.where(np.isin(par, top), -1, row_of[par])
    # Contexts share scopes (a function under many callers): names and columns are worked out per scope.
    shown = list(map(tree.scopes.__getitem__, rows.tolist()))
    distinct = list(dict.fromkeys(shown))
    names = _names(distinct + [tree.scopes[c] for c in top.tolist()])  # every scope but the root's
    number = {sc: i for i, sc in enumerate(distinct)}
    of_row = np.fromiter(map(number.__getitem__, shown), np.int64, len(shown))
    cols = {name: col[of_row] for name, col in _context_columns(distinct, names).items()}
    relation = tree.relation[rows].astype(np.uint8)
    # Canonical ids are pre-order, entry points' subtrees in entry order: the rows are meta.db's pre-order, each
    # two levels below the global context's (the root, then its entry point's context).
    ctree = metadb.ContextTree.from_columns(
        entries, preordered=True, ctx_id=rows.astype(np.uint32), parent=parent_rows, entry=entry_id[rows],
        depth=tree.depth[rows] - 2, relation=relation, propagation=(relation == LEXICAL).astype(np.uint16), **cols)
    return ctree, _functions(names), names.modules, names.files


def _context_columns(scopes: list[lx.Scope], names: _Names) -> dict[str, np.ndarray]:
    """meta.db's per-context columns (lexical type, flags, function, source line, module and offset) of each
    scope."""
    n = len(scopes)
    lex_type, flags = [metadb.FUNCTION] * n, [0] * n
    func, file, module = [-1] * n, [-1] * n, [-1] * n
    line, offset = [0] * n, [0] * n
    fn_idx, file_idx, mod_idx = names.function_index, names.file_index, names.module_index
    for i, s in enumerate(scopes):
        k = s[0]
        if k == lx.UNKNOWN_KIND:
            pass  # a function context without a function
        elif k == lx.PLACEHOLDER:
            func[i] = fn_idx[("p", placeholder_name(s[1]), s[1])]
            flags[i] = metadb.HAS_FUNCTION
        elif k == lx.FUNCTION:
            func[i] = fn_idx[("f",) + s[1:]]
            flags[i] = metadb.HAS_FUNCTION
        elif k == lx.LINE:
            lex_type[i] = metadb.LINE
            file[i], line[i] = file_idx[s[1]], max(s[2], 0)
            flags[i] = metadb.HAS_SRCLOC
        elif k == lx.LOOP:
            lex_type[i] = metadb.LOOP
            file[i], line[i] = file_idx[s[1]], max(s[2], 0)
            module[i], offset[i] = mod_idx[s[3]], max(s[4], 0)
            flags[i] = metadb.HAS_SRCLOC | metadb.HAS_POINT
        else:
            lex_type[i] = metadb.INSTRUCTION
            module[i], offset[i] = mod_idx[s[1]], s[2]
            flags[i] = metadb.HAS_POINT
    return {"lexical_type": np.array(lex_type, np.uint8), "flags": np.array(flags, np.uint8),
            "function": np.array(func, np.int64), "file": np.array(file, np.int64),
            "line": np.array(line, np.int64), "module": np.array(module, np.int64),
            "offset": np.array(offset, np.uint64)}
