"""meta.db's tables made from class 2's unified tree: its context tree, functions, modules and files.

Rank 0's meta.db sink (:class:`.sinks.MetaSink`) builds them beside its share of phase 2, from the
:class:`.handoff.MetaSource` that class 2 left it: in canonical order, names sorted (real functions before
placeholders, hpcprof's order of the two groups), every context below an entry point (hpcprof's "main
thread", "application thread" or "unknown entry") in meta.db's pre-order.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from hpcsa.aggregate import lexical as lx
from hpcsa.aggregate.handoff import MetaSource, UnifiedTree
from hpcsa.core.arrays import sorted_unique
from hpcsa.core.dataclass import dataclass
from hpcsa.core.errors import HpcsaError
from hpcsa.formats.db import metadb
from hpcsa.formats.db.metadb_model import LEXICAL
from hpcsa.formats.measurement.placeholders import FENCE_MAIN, FENCE_THREAD, placeholder_name


def meta_db(source: MetaSource) -> metadb.MetaDB:
    """meta.db's contents, from what class 2 left for it."""
    ctree, funcs, modules, files = meta_tables(source.tree)
    return metadb.MetaDB(title=source.title, id_names=source.id_names, metrics=source.metrics,
                         modules=modules, module_flags=np.zeros(len(modules), np.uint32), files=files,
                         file_flags=np.zeros(len(files), np.uint32), functions=funcs, contexts=ctree)


ENTRY_KINDS = {FENCE_MAIN: (1, "main thread"), FENCE_THREAD: (2, "application thread")}


@dataclass
class _Names:
    """meta.db's module, file and function tables of a tree's scopes, with the index of each entry."""

    modules: list[str]
    files: list[str]
    functions: list[tuple[Any, ...]]  # ("f", name, module, offset, file, line) or ("p", name, code)
    module_index: dict[str, int]
    file_index: dict[str, int]
    function_index: dict[lx.Scope, int]  # by the scope: (FUNCTION, ...) or (PLACEHOLDER, code)


def _names(scopes: Iterable[lx.Scope]) -> _Names:
    """The names of these scopes, sorted."""
    modules: set[str] = set()
    files: set[str] = set()
    functions: set[lx.Scope] = set()
    codes: set[int] = set()
    for s in scopes:
        k = s[0]
        if k == lx.FUNCTION:
            functions.add(s)
            if s[2]:
                modules.add(s[2])
            if s[4]:
                files.add(s[4])
        elif k == lx.PLACEHOLDER:
            codes.add(s[1])
        elif k == lx.LOOP:
            files.add(s[1])
            modules.add(s[3])
        elif k == lx.LINE:
            files.add(s[1])
        elif k == lx.POINT:
            modules.add(s[1])
    module_list = sorted(modules)
    file_list = sorted(files)
    # Real functions first, then placeholders (hpcprof's order of the two groups); a function scope sorts as
    # its ("f", ...) entry does (the kind is the same in all).
    real = sorted(functions)
    held = sorted((placeholder_name(c), c) for c in codes)
    fn_keys = [("f",) + f[1:] for f in real] + [("p", name, c) for name, c in held]
    index = {f: i for i, f in enumerate(real)}
    index.update(((lx.PLACEHOLDER, c), len(real) + i) for i, (_, c) in enumerate(held))
    return _Names(module_list, file_list, fn_keys, {m: i for i, m in enumerate(module_list)},
                  {f: i for i, f in enumerate(file_list)}, index)


def _functions(names: _Names) -> metadb.Functions:
    shown: list[str | None] = []
    fmod: list[int] = []
    foff: list[int] = []
    ffile: list[int] = []
    fline: list[int] = []
    for f in names.functions:
        if f[0] == "p":
            shown.append(f[1])
            fmod.append(-1)
            foff.append(0)
            ffile.append(-1)
            fline.append(0)
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
    entries: list[metadb.EntryPoint] = []
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
    # (by the tree's distinct scopes: no scope tuple is hashed again)
    row_scope = tree.scope_id[rows]
    used = sorted_unique(row_scope)
    distinct = list(map(tree.distinct.__getitem__, used.tolist()))
    names = _names(distinct + [tree.scopes[c] for c in top.tolist()])  # every scope but the root's
    of_row = np.searchsorted(used, row_scope)
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
    scope: the scopes of each kind together, a column at a time."""
    n = len(scopes)
    lex_type = np.full(n, metadb.INSTRUCTION, np.uint8)
    flags = np.zeros(n, np.uint8)
    func, file, module = np.full(n, -1, np.int64), np.full(n, -1, np.int64), np.full(n, -1, np.int64)
    line, offset = np.zeros(n, np.int64), np.zeros(n, np.uint64)
    fn_idx, file_idx, mod_idx = names.function_index, names.file_index, names.module_index
    kinds = np.fromiter((s[0] for s in scopes), np.int64, n)
    for k in sorted_unique(kinds).tolist():
        at = np.flatnonzero(kinds == k)
        group = list(map(scopes.__getitem__, at.tolist()))
        if k == lx.UNKNOWN_KIND:  # a function context without a function
            lex_type[at] = metadb.FUNCTION
        elif k == lx.PLACEHOLDER:
            lex_type[at] = metadb.FUNCTION
            func[at] = [fn_idx[(lx.PLACEHOLDER, s[1])] for s in group]
            flags[at] = metadb.HAS_FUNCTION
        elif k == lx.FUNCTION:
            lex_type[at] = metadb.FUNCTION
            func[at] = list(map(fn_idx.__getitem__, group))
            flags[at] = metadb.HAS_FUNCTION
        elif k == lx.LINE:
            lex_type[at] = metadb.LINE
            file[at] = [file_idx[s[1]] for s in group]
            line[at] = [max(s[2], 0) for s in group]
            flags[at] = metadb.HAS_SRCLOC
        elif k == lx.LOOP:
            lex_type[at] = metadb.LOOP
            file[at] = [file_idx[s[1]] for s in group]
            line[at] = [max(s[2], 0) for s in group]
            module[at] = [mod_idx[s[3]] for s in group]
            offset[at] = np.array([max(s[4], 0) for s in group], np.uint64)
            flags[at] = metadb.HAS_SRCLOC | metadb.HAS_POINT
        else:
            module[at] = [mod_idx[s[1]] for s in group]
            offset[at] = np.array([s[2] for s in group], np.uint64)
            flags[at] = metadb.HAS_POINT
    return {"lexical_type": lex_type, "flags": flags, "function": func, "file": file, "line": line,
            "module": module, "offset": offset}
