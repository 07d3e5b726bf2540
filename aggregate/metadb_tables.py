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
    function_index: dict[tuple[Any, ...], int]


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
