"""A run's calling contexts as a vendor-neutral tree of procedure frames (``hpcsa compare --vendor-neutral``).

Source lines, loops and instructions depend on the compiler and on whether a binary has debug
information (HPCToolkit's ``loops`` program on AMD has none: its loop is ``[testmeas-loops-hip]:0``), so
across vendors only procedure frames are kept, each named as :mod:`hpcsa.views.compare.vendors` names it: a kernel by its
base name, a runtime call by its role. Frames of the launch glue (``__device_stub__*`` and the kernel-named
host wrapper that calls it), frames inside a vendor's runtime library, and a frame with the same name as
the kept frame above it (``cudaLaunchKernel<char>`` inlined into ``cudaLaunchKernel``: one
``<launch kernel>``) are left out; what they, and the lines and loops, cost is their nearest kept frame's
own cost. A kept frame's inclusive value is its context's; its exclusive value is the sum of the own costs
(inclusive less the children's inclusive) of the contexts it stands for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from hpcsa.views import tree as T
from hpcsa.views.compare import vendors as V
from hpcsa.views.compare.paths import RowContent, base_name, forest_path_keys

if TYPE_CHECKING:
    from hpcsa.views.data import ExperimentData

_TAG_ROOT, _TAG_ENTRY, _TAG_FRAME, _TAG_ADDRESS = 401, 402, 403, 404
PLACEHOLDER = "placeholder"


def neutral_names(exp: ExperimentData) -> tuple[list[str], list[str], np.ndarray]:
    """Per function-table entry: its vendor-neutral name, what it is (``role``, ``placeholder``, ``stub``,
    ``runtime`` for the insides of a vendor's runtime library, or ``procedure``) and, for a stub, the
    neutral name of the kernel it launches (else "")."""
    fn = exp.meta.functions
    mods = exp.meta.modules
    names, what, stub_of = [], [], []
    for i, raw in enumerate(fn.names):
        raw = raw or ""
        m = int(fn.module[i])
        module = mods[m] if 0 <= m < len(mods) else ""
        role = V.runtime_role(raw) if raw else None
        kernel = V.stub_kernel(raw) if raw else None
        if raw.startswith("<") and raw.endswith(">"):
            names.append(raw)
            what.append(PLACEHOLDER)
        elif role is not None:
            names.append(f"<{role}>")
            what.append("role")
        elif kernel is not None:
            names.append(V.kernel_name(raw))
            what.append("stub")
        elif V.runtime_vendor(base_name(module)) is not None:
            names.append(V.kernel_name(raw))
            what.append("runtime")
        else:
            names.append(V.kernel_name(raw) if raw else "")
            what.append("procedure")
        stub_of.append(V.kernel_name(kernel) if kernel else "")
    return names, what, np.array(stub_of, dtype=object)


class FrameTree:
    """The kept frames of one run (rows of its CCT), their tree, keys, labels and values (module docstring)."""

    def __init__(self, exp: ExperimentData) -> None:
        self.exp = exp
        c = exp.cct
        n = len(c)
        names, what, stub_of = neutral_names(exp)
        self.names = names
        content = RowContent(exp, names)
        fidx = np.maximum(c.function, 0)
        has_f = (c.kind == T.FUNCTION) & (c.function >= 0)
        what_arr = np.array(what + ["procedure"], dtype=object)
        row_what = np.where(has_f, what_arr[np.where(has_f, fidx, len(what))], "procedure")
        frame = c.is_frame.copy()
        drop = frame & np.isin(row_what, ("stub", "runtime"))
        # the kernel-named host wrapper directly above a stub (nvcc's inline launch wrapper)
        stubs = np.flatnonzero(frame & (row_what == "stub"))
        if len(stubs):
            above = c.caller_frame(stubs)
            ok = above > 0
            wrapper, kernel = above[ok], stub_of[fidx[stubs[ok]]]
            wname = np.array([names[f] if f >= 0 else "" for f in c.function[wrapper].tolist()], dtype=object)
            drop[wrapper[wname == kernel]] = True
        entries = c.meta.contexts.entry_points if c.meta.contexts is not None else []
        entry_kind = np.array([e.kind for e in entries] or [0], np.int64)
        own = np.select([c.kind == T.ROOT, c.kind == T.ENTRY, has_f],
                        [np.full(n, T.key_hash(_TAG_ROOT, 0)[0], np.uint64),
                         T.key_hash(_TAG_ENTRY, entry_kind[np.maximum(c.entry, 0)]),
                         T.key_hash(_TAG_FRAME, content.name)],
                        T.key_hash(_TAG_ADDRESS, content.module, c.offset))
        keep = frame & ~drop
        keep[0] = True
        # nearest kept ancestor of every row; a kept frame named as the kept frame above it is left out
        up = np.full(n, -1, np.int64)
        for rows in c.levels[1:]:
            par = c.parent[rows]
            up[rows] = np.where(keep[par], par, up[par])
        keep &= ~((up >= 0) & (own == own[np.maximum(up, 0)]) & (c.kind != T.ENTRY))
        keep[0] = True
        node_row = np.arange(n)
        for rows in c.levels[1:]:
            par = c.parent[rows]
            node_row[rows] = np.where(keep[rows], rows, node_row[par])
            up[rows] = np.where(keep[par], par, up[par])
        self.rows = np.flatnonzero(keep)
        index = np.full(n, -1, np.int64)
        index[self.rows] = np.arange(len(self.rows))
        self.node_of_row = index[node_row]
        self.parent = np.where(up[self.rows] >= 0, index[np.maximum(up[self.rows], 0)], -1)
        self.keys = forest_path_keys(self.parent, own[self.rows])
        self.row_what = row_what[self.rows]
        self._has_f = has_f[self.rows]
        raw = exp.meta.functions.names
        changed = np.array([names[i] != (raw[i] or "") for i in range(len(names))] + [False], bool)
        #: kept frames whose vendor-neutral name is not the run's own
        self.renamed = changed[np.where(has_f, fidx, len(names))][self.rows]

    def label(self, node: int) -> str:
        row = int(self.rows[node])
        c = self.exp.cct
        if self._has_f[node]:
            return self.names[int(c.function[row])] or "<unknown function>"
        return self.exp.scope_name(row)

    def kind(self, node: int) -> str:
        row = int(self.rows[node])
        kind = int(self.exp.cct.kind[row])
        if kind in (T.ROOT, T.ENTRY):
            return T.KIND_NAME[kind]
        what = str(self.row_what[node])
        return "function" if what == "procedure" else what

    def original_name(self, node: int) -> str:
        """The run's own name of a kept frame (before it was made vendor-neutral)."""
        row = int(self.rows[node])
        return self.exp.scope_name(row)

    def values(self, inclusive: np.ndarray, additive: bool) -> tuple[np.ndarray, np.ndarray]:
        """(inclusive, exclusive) per kept frame from the inclusive values of every row; the exclusive side
        is NaN for a column whose values do not add (a ratio)."""
        inc = inclusive[self.rows]
        if not additive:
            return inc, np.full(len(self.rows), np.nan)
        own = np.nan_to_num(T.self_values(self.exp.cct.parent, np.nan_to_num(inclusive)))
        exc = np.bincount(self.node_of_row, weights=own, minlength=len(self.rows))
        if np.isnan(inclusive).all():
            exc[:] = np.nan
        return inc, exc

