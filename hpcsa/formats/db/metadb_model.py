"""``meta.db`` v4.0: the record layouts, enumerations and the in-memory model (:class:`MetaDB`).

Every record is declared once here (``*_FIELDS`` tables), used by both the
reader (:mod:`.metadb_read`) and the writer (:mod:`.metadb_write`); the layouts
follow the meta.db section of the format specification in HPCToolkit's documentation
(``doc/FORMATS.md`` in the HPCToolkit sources). :mod:`.metadb` is the one name
the rest of hpcsa imports.

The context tree is held as numpy arrays in pre-order (:class:`ContextTree`):
a subtree is a contiguous row range, so views can aggregate with slices and
``np.add.reduceat``.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

import numpy as np

from hpcsa.core.dataclass import dataclass
from hpcsa.core.treeorder import preorder, subtree_sizes
from hpcsa.formats.db import dbformat as dbf
from hpcsa.formats.measurement.hpcrun import ID_KINDS

TAG = b"meta"
SECTIONS = ("General", "IdNames", "Metrics", "Context", "Strings", "Modules", "Files", "Functions")
HEADER_SIZE = 0x10 + 16 * len(SECTIONS)

# -- record layouts (v4.0 fields; arrays are read with the stored stride) ------------------------------

GENERAL_FIELDS = [("pTitle", 0x00, "u8"), ("pDescription", 0x08, "u8")]
ID_NAMES_FIELDS = [("ppNames", 0x00, "u8"), ("nKinds", 0x08, "u1")]
METRICS_HDR_FIELDS = [("pMetrics", 0x00, "u8"), ("nMetrics", 0x08, "u4"), ("szMetric", 0x0C, "u1"),
                      ("szScopeInst", 0x0D, "u1"), ("szSummary", 0x0E, "u1"), ("pScopes", 0x10, "u8"),
                      ("nScopes", 0x18, "u2"), ("szScope", 0x1A, "u1")]
METRIC_FIELDS = [("pName", 0x00, "u8"), ("pScopeInsts", 0x08, "u8"), ("pSummaries", 0x10, "u8"),
                 ("nScopeInsts", 0x18, "u2"), ("nSummaries", 0x1A, "u2")]
SCOPE_INST_FIELDS = [("pScope", 0x00, "u8"), ("propMetricId", 0x08, "u2")]
SUMMARY_FIELDS = [("pScope", 0x00, "u8"), ("pFormula", 0x08, "u8"), ("combine", 0x10, "u1"),
                  ("statMetricId", 0x12, "u2")]
SCOPE_FIELDS = [("pScopeName", 0x00, "u8"), ("type", 0x08, "u1"), ("propagationIndex", 0x09, "u1")]
TABLE_HDR_FIELDS = [("ptr", 0x00, "u8"), ("count", 0x08, "u4"), ("size", 0x0C, "u2")]
MODULE_FIELDS = [("flags", 0x00, "u4"), ("pPath", 0x08, "u8")]
FILE_FIELDS = MODULE_FIELDS
FUNCTION_FIELDS = [("pName", 0x00, "u8"), ("pModule", 0x08, "u8"), ("offset", 0x10, "u8"),
                   ("pFile", 0x18, "u8"), ("line", 0x20, "u4"), ("flags", 0x24, "u4")]
CONTEXTS_HDR_FIELDS = [("pEntryPoints", 0x00, "u8"), ("nEntryPoints", 0x08, "u2"),
                       ("szEntryPoint", 0x0A, "u1")]
ENTRY_FIELDS = [("szChildren", 0x00, "u8"), ("pChildren", 0x08, "u8"), ("ctxId", 0x10, "u4"),
                ("entryPoint", 0x14, "u2"), ("pPrettyName", 0x18, "u8")]
CTX_FIELDS = [("szChildren", 0x00, "u8"), ("pChildren", 0x08, "u8"), ("ctxId", 0x10, "u4"),
              ("flags", 0x14, "u1"), ("relation", 0x15, "u1"), ("lexicalType", 0x16, "u1"),
              ("nFlexWords", 0x17, "u1"), ("propagation", 0x18, "u2")]

SZ_GENERAL, SZ_ID_NAMES, SZ_METRICS_HDR = 0x10, 0x09, 0x1B
SZ_METRIC, SZ_SCOPE_INST, SZ_SUMMARY, SZ_SCOPE = 0x20, 0x10, 0x18, 0x10
SZ_TABLE_HDR, SZ_MODULE, SZ_FILE, SZ_FUNCTION = 0x0E, 0x10, 0x10, 0x28
SZ_CONTEXTS_HDR, SZ_ENTRY, SZ_CTX = 0x0B, 0x20, 0x20

GENERAL = dbf.record_dtype(GENERAL_FIELDS, SZ_GENERAL)
ID_NAMES = dbf.record_dtype(ID_NAMES_FIELDS, SZ_ID_NAMES)
METRICS_HDR = dbf.record_dtype(METRICS_HDR_FIELDS, SZ_METRICS_HDR)
TABLE_HDR = dbf.record_dtype(TABLE_HDR_FIELDS, SZ_TABLE_HDR)
CONTEXTS_HDR = dbf.record_dtype(CONTEXTS_HDR_FIELDS, SZ_CONTEXTS_HDR)
CTX = dbf.record_dtype(CTX_FIELDS, SZ_CTX)

#: The record sizes of the early-2022 development snapshots that already said "4.0".
PRE_RELEASE_METRIC_SIZES = (24, 24, 16)

# -- enumerations --------------------------------------------------------------------------------------

HAS_FUNCTION, HAS_SRCLOC, HAS_POINT = 0x1, 0x2, 0x4
FILE_COPIED = 0x1  # a source file's flags: copied into the database (its path is then under src/)
RELATION = {0: "lexical", 1: "call", 2: "inlined_call"}
LEXICAL, CALL, INLINED_CALL = 0, 1, 2
LEXICAL_TYPE = {0: "function", 1: "loop", 2: "line", 3: "instruction"}
FUNCTION, LOOP, LINE, INSTRUCTION = 0, 1, 2, 3
ENTRY_POINT = {0: "unknown_entry", 1: "main_thread", 2: "application_thread"}
ENTRY_PRETTY = {0: "unknown entry", 1: "main thread", 2: "application thread"}
SCOPE_TYPE = {0: "custom", 1: "point", 2: "execution", 3: "transitive"}
COMBINE = {0: "sum", 1: "min", 2: "max"}
COMBINE_CODE = {v: k for k, v in COMBINE.items()}

#: The id-tuple kind names hpcprof writes (index = kind).
DEFAULT_ID_NAMES = [ID_KINDS[k] for k in range(len(ID_KINDS))]  # the measurement contract's kinds

# -- the model -----------------------------------------------------------------------------------------


@dataclass
class Scope:
    """A propagation scope: ``point``, ``function``, ``lex_aware``, ``execution`` in hpcprof's output."""

    name: str
    type: int
    propagation_index: int = 255


@dataclass
class ScopeInstance:
    """A metric propagated to one scope: the id its values have in profile.db and cct.db."""

    scope: int  # index into MetaDB.scopes
    prop_metric_id: int


@dataclass
class Summary:
    """A summary statistic of a metric in one scope: its formula, how it combines, and its id."""

    scope: int  # index into MetaDB.scopes
    formula: str
    combine: int
    stat_metric_id: int


@dataclass
class Metric:
    """A metric of meta.db's performance metrics section, with its propagated and summary instances."""

    name: str
    scope_insts: list[ScopeInstance] = field(default_factory=list)
    summaries: list[Summary] = field(default_factory=list)


def standard_scopes() -> list[Scope]:
    """The four scopes hpcprof writes, in its order."""
    return [Scope("point", 1, 255), Scope("function", 3, 0), Scope("lex_aware", 0, 255),
            Scope("execution", 2, 255)]


@dataclass
class Functions:
    """The function table; indices -1 mean "none" (placeholders have only a name)."""

    names: list[str | None]
    module: np.ndarray  # int32, index into modules or -1
    offset: np.ndarray  # uint64
    file: np.ndarray  # int32, index into files or -1
    line: np.ndarray  # uint32
    flags: np.ndarray  # uint32

    def __len__(self) -> int:
        return len(self.names)

    @classmethod
    def empty(cls) -> Functions:
        return cls([], np.zeros(0, np.int32), np.zeros(0, np.uint64), np.zeros(0, np.int32),
                   np.zeros(0, np.uint32), np.zeros(0, np.uint32))


@dataclass
class EntryPoint:
    """A root of the context tree, by how the thread was entered (main thread, application thread)."""

    ctx_id: int
    kind: int  # 0 unknown entry, 1 main thread, 2 application thread
    pretty_name: str


CONTEXT_COLUMNS = {
    "ctx_id": np.uint32, "parent": np.int32, "entry": np.uint16, "depth": np.uint32,
    "relation": np.uint8, "lexical_type": np.uint8, "flags": np.uint8, "propagation": np.uint16,
    "function": np.int32, "file": np.int32, "line": np.uint32, "module": np.int32, "offset": np.uint64,
}


@dataclass
class ContextTree:
    """Every {Ctx} of meta.db as parallel arrays in pre-order.

    ``parent`` is the row of the parent context, or -1 when the parent is the
    entry point ``entry`` (an index into ``entry_points``). ``function``,
    ``file`` and ``module`` are indices into the tables (-1 when absent; the
    ``flags`` say which sub-fields exist). The subtree of row ``i`` is rows
    ``i .. i + subtree_size[i]``.
    """

    entry_points: list[EntryPoint]
    ctx_id: np.ndarray
    parent: np.ndarray
    entry: np.ndarray
    depth: np.ndarray
    relation: np.ndarray
    lexical_type: np.ndarray
    flags: np.ndarray
    propagation: np.ndarray
    function: np.ndarray
    file: np.ndarray
    line: np.ndarray
    module: np.ndarray
    offset: np.ndarray
    _row_of: np.ndarray | None = field(default=None, repr=False, compare=False)
    _size: np.ndarray | None = field(default=None, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.ctx_id)

    @classmethod
    def from_columns(cls, entry_points: list[EntryPoint], preordered: bool = False, **columns: Any) -> ContextTree:
        """Build a tree from columns in any order where ``parent`` rows are given (-1 = entry point).

        Rows are reordered into pre-order (siblings keep their relative order);
        ``depth`` is computed (``preordered``: the rows are in pre-order already, entry points' subtrees in
        entry order, and ``depth`` is given, as :func:`hpcsa.aggregate.metadb_tables.meta_tables` has them:
        the tree is not walked again); missing optional columns default to "absent";
        ``flags`` default to the fields given (index >= 0) and fields the flags
        do not announce are reset to "absent" (they are not stored on disk).
        """
        n = len(columns["ctx_id"])
        cols: dict[str, np.ndarray] = {}
        defaults = {"function": -1, "file": -1, "module": -1, "line": 0, "offset": 0, "propagation": 0,
                    "flags": None, "entry": 0, "depth": 0}
        for name, dtype in CONTEXT_COLUMNS.items():
            if name in columns and columns[name] is not None:
                cols[name] = np.asarray(columns[name]).astype(dtype, copy=False)
            elif defaults.get(name) is not None:
                cols[name] = np.full(n, defaults[name], dtype)
        if "flags" not in cols:
            cols["flags"] = ((cols["function"] >= 0) * HAS_FUNCTION
                             | ((cols["file"] >= 0) * HAS_SRCLOC)
                             | ((cols["module"] >= 0) * HAS_POINT)).astype(np.uint8)
        # Fields the flags do not announce are not stored: normalize them to "absent".
        f = cols["flags"]
        for name, bit, absent in (("function", HAS_FUNCTION, -1), ("file", HAS_SRCLOC, -1), ("line", HAS_SRCLOC, 0),
                                  ("module", HAS_POINT, -1), ("offset", HAS_POINT, 0)):
            cols[name] = np.where((f & bit) != 0, cols[name], absent).astype(CONTEXT_COLUMNS[name])
        if preordered:
            if columns.get("depth") is None:
                raise ValueError("a preordered context tree needs its depth column")
            return cls(entry_points, **cols)
        order, depth, parent = preorder(cols["parent"].astype(np.int64), cols["entry"].astype(np.int64))
        out = {k: v[order] for k, v in cols.items()}
        out["parent"] = parent.astype(np.int32)
        out["depth"] = depth.astype(np.uint32)
        return cls(entry_points, **out)

    # -- lookups used by readers of profile.db / cct.db values --

    @property
    def max_ctx_id(self) -> int:
        ids = [int(self.ctx_id.max()) if len(self.ctx_id) else 0] + [e.ctx_id for e in self.entry_points]
        return max(ids)

    def row_of(self, ctx_ids: np.ndarray | int) -> np.ndarray | int:
        """The row of each context id (-1 for entry points, elided ids and unknown ids)."""
        ids = np.asarray(ctx_ids, dtype=np.int64)
        if self.max_ctx_id > 8 * len(self.ctx_id) + (1 << 20):  # sparse ids: no dense table
            if not len(self.ctx_id):
                return -1 if ids.ndim == 0 else np.full(ids.shape, -1, np.int64)
            order = np.argsort(self.ctx_id, kind="stable")
            sorted_ids = self.ctx_id[order].astype(np.int64)
            at = np.minimum(np.searchsorted(sorted_ids, ids), len(sorted_ids) - 1)
            rows = np.where(sorted_ids[at] == ids, order[at], -1)
            return int(rows) if rows.ndim == 0 else rows
        if self._row_of is None:
            table = np.full(self.max_ctx_id + 1, -1, np.int64)
            table[self.ctx_id.astype(np.int64)] = np.arange(len(self.ctx_id))
            self._row_of = table
        ok = (ids >= 0) & (ids < len(self._row_of))
        rows = np.where(ok, self._row_of[np.where(ok, ids, 0)], -1)
        return int(rows) if rows.ndim == 0 else rows

    @property
    def subtree_size(self) -> np.ndarray:
        """Number of rows in each row's subtree (itself included)."""
        if self._size is None:
            self._size = subtree_sizes(self.parent.astype(np.int64), self.depth.astype(np.int64))
        return self._size

    def children(self, row: int) -> np.ndarray:
        """Rows of the children of ``row`` (or, for ``row = -1 - e``, of entry point ``e``)."""
        if row < 0:
            return np.flatnonzero((self.parent == -1) & (self.entry == (-1 - row)))
        end = row + int(self.subtree_size[row])
        sub = np.arange(row + 1, end)
        return sub[self.parent[row + 1:end] == row]

    def n_flex_words(self) -> np.ndarray:
        f = self.flags.astype(np.int64)
        return (f & HAS_FUNCTION) + 2 * ((f & HAS_SRCLOC) >> 1) + 2 * ((f & HAS_POINT) >> 2)


@dataclass
class MetaDB:
    """Everything in one meta.db."""

    title: str = "<unnamed>"
    description: str = "TODO database description"
    id_names: list[str] = field(default_factory=lambda: list(DEFAULT_ID_NAMES))
    scopes: list[Scope] = field(default_factory=standard_scopes)
    metrics: list[Metric] = field(default_factory=list)
    modules: list[str] = field(default_factory=list)
    module_flags: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint32))
    files: list[str] = field(default_factory=list)
    file_flags: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint32))
    functions: Functions = field(default_factory=Functions.empty)
    contexts: ContextTree | None = None
    version: str = "4.0"
    notes: tuple[str, ...] = ()
    path: str | None = None

    def with_metrics(self, metrics: list[Metric]) -> MetaDB:
        """This database's names, scopes, modules, files, functions and context tree with other metrics
        (what a view that adds metrics writes; version, notes and path are the new file's)."""
        return MetaDB(title=self.title, description=self.description, id_names=list(self.id_names),
                      scopes=list(self.scopes), metrics=metrics, modules=list(self.modules),
                      module_flags=self.module_flags, files=list(self.files), file_flags=self.file_flags,
                      functions=self.functions, contexts=self.contexts)

    def scope_index(self, name: str) -> int:
        for i, s in enumerate(self.scopes):
            if s.name == name:
                return i
        raise KeyError(name)

    def metric_index(self, name: str) -> int:
        for i, m in enumerate(self.metrics):
            if m.name == name:
                return i
        raise KeyError(name)

    def prop_metric_id(self, metric: str, scope: str) -> int:
        """The id of ``metric`` propagated over ``scope`` in thread profiles and cct.db."""
        m, s = self.metrics[self.metric_index(metric)], self.scope_index(scope)
        for inst in m.scope_insts:
            if inst.scope == s:
                return inst.prop_metric_id
        raise KeyError((metric, scope))

    def stat_metric_id(self, metric: str, scope: str, formula: str = "$$", combine: str = "sum") -> int:
        """The id of a summary statistic partial in the summary profile (profile 0)."""
        m, s = self.metrics[self.metric_index(metric)], self.scope_index(scope)
        for summ in m.summaries:
            if summ.scope == s and summ.formula == formula and summ.combine == COMBINE_CODE[combine]:
                return summ.stat_metric_id
        raise KeyError((metric, scope, formula, combine))

    def prop_metric_names(self) -> dict[int, tuple[str, str]]:
        """propMetricId -> (metric name, scope name)."""
        return {inst.prop_metric_id: (m.name, self.scopes[inst.scope].name)
                for m in self.metrics for inst in m.scope_insts}

    def stat_metric_names(self) -> dict[int, tuple[str, str, str, str]]:
        """statMetricId -> (metric name, scope name, formula, combine)."""
        return {s.stat_metric_id: (m.name, self.scopes[s.scope].name, s.formula, COMBINE.get(s.combine, "?"))
                for m in self.metrics for s in m.summaries}


def describe_context(meta: MetaDB, row: int) -> str:
    """A one-line description of a context: ``-call> [function] main``, ``-lexical> [line] a.c:12``."""
    t = meta.contexts
    assert t is not None
    rel = RELATION.get(int(t.relation[row]), f"relation{int(t.relation[row])}")
    lex = LEXICAL_TYPE.get(int(t.lexical_type[row]), f"type{int(t.lexical_type[row])}")
    parts = []
    flags = int(t.flags[row])
    if flags & HAS_FUNCTION:
        f = int(t.function[row])
        name = meta.functions.names[f] if 0 <= f < len(meta.functions) else None
        parts.append(name if name is not None else f"<unnamed function #{f}>")
    elif int(t.lexical_type[row]) == FUNCTION:
        parts.append("<unknown function>")
    if flags & HAS_SRCLOC:
        fi = int(t.file[row])
        parts.append(f"{_short(meta.files[fi]) if 0 <= fi < len(meta.files) else '?'}:{int(t.line[row])}")
    if flags & HAS_POINT:
        mi = int(t.module[row])
        parts.append(f"{_short(meta.modules[mi]) if 0 <= mi < len(meta.modules) else '?'}"
                     f"+{int(t.offset[row]):#x}")
    return f"-{rel}> [{lex}] {' '.join(parts)}"


def _short(path: str) -> str:
    return path.rsplit("/", 1)[-1] or path
