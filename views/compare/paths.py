"""What names a node of a view the same way in every run: a 64-bit key of its path from the root.

A context is matched across databases by its path, as ``hpcsa diff`` and ``hpcsa scaling`` match them:
the sequence of (relation, scope) pairs from the root, each scope named by content, never by id. For
runs of possibly rebuilt programs the content is what survives a rebuild: a procedure by its name and load
module's file name, a loop or line by its source file's name and line, an instruction by its load module's
file name and offset (:func:`hpcsa.views.scaling.path_keys`, the top-down view's key, is that rule). The
callers and flat views are forests of their own; their nodes are named by the same contents
(:func:`callers_own_keys`, :func:`flat_own_keys`) and their paths chained by :func:`forest_path_keys`.

Strings are hashed once per table entry (function, file, module), never once per context; everything
per context is a numpy step per depth level.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from hpcsa.core.digests import blake2b
from hpcsa.core.treeorder import depth_from_parent, depth_levels
from hpcsa.views import flat as F
from hpcsa.views import tree as T

if TYPE_CHECKING:
    from hpcsa.views.bottomup import CallersForest
    from hpcsa.views.data import ExperimentData
    from hpcsa.views.flat import FlatForest

#: A hidden node of a view (its ``parent`` is -2): it takes no part in the alignment.
HIDDEN = -2


def string_keys(strings: Sequence[str | None]) -> np.ndarray:
    """A stable 63-bit key per string (blake2b), as an int64 array; ``None`` and ``""`` share one key."""
    if not strings:
        return np.zeros(0, np.int64)
    return np.array([int.from_bytes(blake2b((s or "").encode("utf-8", "surrogateescape"), digest_size=8).digest(),
                                    "little") >> 1 for s in strings], np.int64)


def base_name(path: str) -> str:
    """A file's or load module's name without its folder (a rebuilt program may live elsewhere)."""
    return path.rstrip("/").rsplit("/", 1)[-1] or path


class RowContent:
    """Per CCT row, the keys of what names it: its procedure (name and load module), source file and line,
    load module and offset -- each 0 where the row has none."""

    def __init__(self, exp: ExperimentData, function_names: Sequence[str | None] | None = None) -> None:
        c, meta = exp.cct, exp.meta
        fn = meta.functions
        mods = [base_name(m) for m in meta.modules]
        names = list(fn.names) if function_names is None else list(function_names)
        fn_name = string_keys(names)
        fn_module = string_keys([mods[m] if 0 <= m < len(mods) else "" for m in fn.module.tolist()])
        self.file_table = np.concatenate([[0], string_keys([base_name(s) for s in meta.files])])
        self.module_table = np.concatenate([[0], string_keys(mods)])
        f = np.maximum(c.function, 0)
        has_f = (c.kind == T.FUNCTION) & (c.function >= 0)
        self.name = np.where(has_f, fn_name[f] if len(fn_name) else 0, 0)
        self.name_module = np.where(has_f, fn_module[f] if len(fn_module) else 0, 0)
        self.file = self.file_table[c.file + 1]
        self.line = np.where(c.file >= 0, c.line, 0)
        self.module = self.module_table[c.module + 1]
        self.offset = np.where(c.kind == T.INSTRUCTION, c.offset, 0)
        self.function_file = np.where(has_f, self.file_table[fn.file.astype(np.int64)[f] + 1] if len(fn) else 0, 0)
        self.function_module = np.where(has_f, self.module_table[fn.module.astype(np.int64)[f] + 1]
                                        if len(fn) else 0, 0)

    def procedure(self, rows: np.ndarray) -> np.ndarray:
        """The key of the procedure a frame row is an instance of (name and module; an address frame by its
        module and offset)."""
        return T.key_hash(self.name[rows], self.name_module[rows], self.module[rows], self.offset[rows])


def forest_path_keys(parent: np.ndarray, own: np.ndarray) -> np.ndarray:
    """The path key of every node of a forest: its own key chained onto its parent's (hidden nodes, parent
    -2, and their descendants get keys too, but are left out by the caller)."""
    par = np.where(parent >= 0, parent, -1)
    depth = depth_from_parent(par)
    key = np.zeros(len(parent), np.uint64)
    for rows in depth_levels(depth):
        up = par[rows]
        base = np.where(up >= 0, key[np.maximum(up, 0)], np.uint64(0))
        key[rows] = T.key_hash(base, own[rows])
    return key


_TAG_PSEUDO, _TAG_ENTRY, _TAG_PROC = 301, 302, 303


def callers_own_keys(forest: CallersForest, content: RowContent) -> np.ndarray:
    """The own key of each node of the callers view: the procedure (or entry point) it shows."""
    c = forest.exp.cct
    rep = forest.rep
    entries = c.meta.contexts.entry_points if c.meta.contexts is not None else []
    entry_kind = np.array([e.kind for e in entries] or [0], np.int64)
    is_entry = c.kind[rep] == T.ENTRY
    own = np.where(is_entry, T.key_hash(_TAG_ENTRY, entry_kind[np.maximum(c.entry[rep], 0)]),
                   T.key_hash(_TAG_PROC, content.procedure(rep)))
    own[0] = T.key_hash(_TAG_PSEUDO, 0)[0]  # node 0 is the pseudo-procedure <program root>
    return own


def flat_own_keys(forest: FlatForest, content: RowContent) -> np.ndarray:
    """The own key of each node of the flat view: its kind and the static scope it stands for (a load module
    or file by name, a procedure by name and module, a loop or line by file name and line, an instruction by
    module and offset)."""
    kind, row = forest.kind, forest.row
    c = forest.exp.cct
    proc = content.procedure(row).view(np.int64)  # one integer type for np.select (a mix would be float)
    a = np.select([kind == F.MODULE, kind == F.FILE, np.isin(kind, (F.PROCEDURE, F.INLINE, F.CALLSITE)),
                   np.isin(kind, (F.LOOP, F.LINE))],
                  [np.where(content.function_module[row] != 0, content.function_module[row], content.module[row]),
                   content.function_file[row], proc, content.file[row]], content.module[row])
    b = np.where(np.isin(kind, (F.LOOP, F.LINE)), content.line[row],
                 np.where(kind == F.INSTRUCTION, c.offset[row], 0))
    own = T.key_hash(kind, a, b)
    if 0 <= forest.pseudo_node < len(own):
        own[forest.pseudo_node] = T.key_hash(_TAG_PSEUDO, 0)[0]
    return own
