"""``meta.db`` v4.0: the database's metadata (metrics, modules, files, functions, the context tree).

Read with :func:`read_metadb` into a :class:`MetaDB`, written with
:func:`write_metadb` / :func:`encode_metadb`. Every record is declared once
below (``*_FIELDS`` tables, used by both directions).

The context tree is held as numpy arrays in pre-order (:class:`ContextTree`):
a subtree is a contiguous row range, so views can aggregate with slices and
``np.add.reduceat``. The variable-size ``{Ctx}`` records are parsed level by
level without a per-record loop: within one level every child array is walked
at once by pointer jumping over ``nFlexWords`` (see :func:`_records_in_arrays`).

Instruction contexts nested lexically in their parent (``relation`` lexical,
``lexicalType`` instruction) are *elided* by hpcprof: they are not written to
meta.db, their children are hoisted into the parent's child array, yet their
ids keep their values in profile.db and cct.db. :func:`encode_metadb` applies
the same rule to a tree that contains them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hpcsa.aggregate.db import dbformat as dbf
from hpcsa.binfmt import Blob, align
from hpcsa.errors import UnsupportedError
from hpcsa.fileio import atomic_file

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
DEFAULT_ID_NAMES = ["SUMMARY", "NODE", "RANK", "THREAD", "GPUDEVICE", "GPUCONTEXT", "GPUSTREAM", "CORE"]

# -- the model -----------------------------------------------------------------------------------------


@dataclass
class Scope:
    """A propagation scope: ``point``, ``function``, ``lex_aware``, ``execution`` in hpcprof's output."""

    name: str
    type: int
    propagation_index: int = 255


@dataclass
class ScopeInstance:
    scope: int  # index into MetaDB.scopes
    prop_metric_id: int


@dataclass
class Summary:
    scope: int  # index into MetaDB.scopes
    formula: str
    combine: int
    stat_metric_id: int


@dataclass
class Metric:
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
    def from_columns(cls, entry_points: list[EntryPoint], **columns: Any) -> ContextTree:
        """Build a tree from columns in any order where ``parent`` rows are given (-1 = entry point).

        Rows are reordered into pre-order (siblings keep their relative order);
        ``depth`` is computed; missing optional columns default to "absent";
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
        order, depth, parent = _preorder(cols["parent"].astype(np.int64), cols["entry"].astype(np.int64))
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
            self._size = _subtree_sizes(self.parent.astype(np.int64), self.depth.astype(np.int64))
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


# -- reading -------------------------------------------------------------------------------------------


class _Strings:
    """NUL-terminated strings by pointer, decoded in bulk per section."""

    def __init__(self, blob: Blob) -> None:
        self.blob = blob
        self.cache: dict[int, str] = {}

    def load_section(self, ptr: int, size: int) -> None:
        raw = bytes(self.blob.data[ptr:ptr + size])
        parts = raw.split(b"\0")
        start = ptr
        for part in parts[:-1]:  # the last piece has no terminator inside the section
            self.cache[start] = part.decode("utf-8", errors="surrogateescape")
            start += len(part) + 1

    def get(self, ptr: int, what: str) -> str:
        text = self.cache.get(ptr)
        if text is None:
            text = self.cache[ptr] = self.blob.cstring(ptr, what)
        return text


def _table_index(blob: Blob, ptrs: np.ndarray, base: int, stride: int, count: int, what: str) -> np.ndarray:
    """Pointers into a table of ``count`` records of ``stride`` bytes at ``base`` -> indices (-1 for 0)."""
    ptrs = ptrs.astype(np.int64)
    rel = ptrs - base
    idx = np.where(ptrs == 0, -1, rel // max(stride, 1))
    bad = (ptrs != 0) & ((rel < 0) | (rel % max(stride, 1) != 0) | (idx >= count))
    if bad.any():
        raise blob.fail(f"a {what} pointer ({int(ptrs[bad][0]):#x}) does not point at an entry of the "
                        f"{what} table")
    return idx.astype(np.int32)


def read_metadb(path: str | os.PathLike[str]) -> MetaDB:
    path = os.fspath(path)
    blob, head = dbf.open_db(path, TAG, SECTIONS)
    sec = dict(zip(SECTIONS, head.sections, strict=True))
    strings = _Strings(blob)
    for name in ("General", "IdNames", "Metrics", "Strings"):
        sz, ptr = sec[name]
        strings.load_section(ptr, sz)

    meta = MetaDB(version=head.version, notes=head.notes, path=path)

    # General properties
    ptr = dbf.section_blob(blob, head, 0, SZ_GENERAL, "General Properties")
    gen = blob.record(GENERAL, ptr, "General Properties header")
    meta.title = strings.get(int(gen["pTitle"]), "title")
    meta.description = strings.get(int(gen["pDescription"]), "description")

    # Identifier names
    ptr = dbf.section_blob(blob, head, 1, SZ_ID_NAMES, "Identifier Names")
    idn = blob.record(ID_NAMES, ptr, "Identifier Names header")
    pp = blob.array(np.dtype("<u8"), int(idn["ppNames"]), int(idn["nKinds"]), "identifier name pointers")
    meta.id_names = [strings.get(int(p), "identifier name") for p in pp]

    _read_metrics(blob, head, strings, meta)
    tables = _read_tables(blob, head, strings, meta)
    meta.contexts = _read_contexts(blob, head, strings, tables)
    return meta


def _read_metrics(blob: Blob, head: dbf.DbHeader, strings: _Strings, meta: MetaDB) -> None:
    ptr = dbf.section_blob(blob, head, 2, SZ_METRICS_HDR, "Performance Metrics")
    hdr = blob.record(METRICS_HDR, ptr, "Performance Metrics header")
    sizes = (int(hdr["szMetric"]), int(hdr["szScopeInst"]), int(hdr["szSummary"]))
    if sizes == PRE_RELEASE_METRIC_SIZES:
        raise UnsupportedError(blob.path, "pre-release meta.db layout: it says version 4.0 but its metric "
                               "records are 24/24/16 bytes (released 4.0: 32/16/24); it was written by an "
                               "HPCToolkit development snapshot from before format 4.0 was final; "
                               "re-run a released hpcprof on the measurements")
    md = dbf.stride_dtype(blob, METRIC_FIELDS, SZ_METRIC, sizes[0], "metric description")
    sid = dbf.stride_dtype(blob, SCOPE_INST_FIELDS, SZ_SCOPE_INST, sizes[1], "propagation scope instance")
    ssd = dbf.stride_dtype(blob, SUMMARY_FIELDS, SZ_SUMMARY, sizes[2], "summary statistic")
    psd = dbf.stride_dtype(blob, SCOPE_FIELDS, SZ_SCOPE, int(hdr["szScope"]), "propagation scope")
    scope_recs = blob.array(psd, int(hdr["pScopes"]), int(hdr["nScopes"]), "propagation scopes")
    meta.scopes = [Scope(strings.get(int(r["pScopeName"]), "scope name"), int(r["type"]),
                         int(r["propagationIndex"])) for r in scope_recs]
    scope_base, scope_stride = int(hdr["pScopes"]), psd.itemsize
    metric_recs = blob.array(md, int(hdr["pMetrics"]), int(hdr["nMetrics"]), "metric descriptions")
    meta.metrics = []
    for rec in metric_recs:
        insts = blob.array(sid, int(rec["pScopeInsts"]), int(rec["nScopeInsts"]), "propagation scope instances")
        summs = blob.array(ssd, int(rec["pSummaries"]), int(rec["nSummaries"]), "summary statistics")
        i_scope = _table_index(blob, insts["pScope"], scope_base, scope_stride, len(meta.scopes), "scope")
        s_scope = _table_index(blob, summs["pScope"], scope_base, scope_stride, len(meta.scopes), "scope")
        if (i_scope < 0).any() or (s_scope < 0).any():
            raise blob.fail("a metric refers to propagation scope 0 (null pointer)")
        meta.metrics.append(Metric(
            strings.get(int(rec["pName"]), "metric name"),
            [ScopeInstance(int(s), int(m)) for s, m in zip(i_scope, insts["propMetricId"], strict=True)],
            [Summary(int(s), strings.get(int(f), "summary formula"), int(c), int(m))
             for s, f, c, m in zip(s_scope, summs["pFormula"], summs["combine"], summs["statMetricId"],
                                   strict=True)]))


@dataclass
class _Tables:
    """Where the module/file/function arrays are, to turn context pointers into indices."""

    module: tuple[int, int, int]  # (base, stride, count)
    file: tuple[int, int, int]
    function: tuple[int, int, int]


def _read_table(blob: Blob, head: dbf.DbHeader, index: int, fields: list, base_size: int,
                what: str) -> tuple[np.ndarray, int, int]:
    ptr = dbf.section_blob(blob, head, index, SZ_TABLE_HDR, what)
    hdr = blob.record(TABLE_HDR, ptr, f"{what} header")
    dt = dbf.stride_dtype(blob, fields, base_size, int(hdr["size"]), what)
    arr = blob.array(dt, int(hdr["ptr"]), int(hdr["count"]), what)
    return arr, int(hdr["ptr"]), dt.itemsize


def _read_tables(blob: Blob, head: dbf.DbHeader, strings: _Strings, meta: MetaDB) -> _Tables:
    mods, mbase, mstride = _read_table(blob, head, 5, MODULE_FIELDS, SZ_MODULE, "Load Modules")
    files, fbase, fstride = _read_table(blob, head, 6, FILE_FIELDS, SZ_FILE, "Source Files")
    funcs, xbase, xstride = _read_table(blob, head, 7, FUNCTION_FIELDS, SZ_FUNCTION, "Functions")
    meta.modules = [strings.get(int(p), "module path") for p in mods["pPath"]]
    meta.module_flags = mods["flags"].astype(np.uint32)
    meta.files = [strings.get(int(p), "file path") for p in files["pPath"]]
    meta.file_flags = files["flags"].astype(np.uint32)
    meta.functions = Functions(
        names=[strings.get(int(p), "function name") if p else None for p in funcs["pName"]],
        module=_table_index(blob, funcs["pModule"], mbase, mstride, len(mods), "module"),
        offset=funcs["offset"].astype(np.uint64),
        file=_table_index(blob, funcs["pFile"], fbase, fstride, len(files), "file"),
        line=funcs["line"].astype(np.uint32),
        flags=funcs["flags"].astype(np.uint32))
    return _Tables((mbase, mstride, len(mods)), (fbase, fstride, len(files)), (xbase, xstride, len(funcs)))


_U64 = np.dtype("<u8")


def _gather_u64(buf: np.ndarray, pos: np.ndarray) -> np.ndarray:
    return dbf.gather(buf, pos, _U64)


def _records_in_arrays(blob: Blob, buf: np.ndarray, starts: np.ndarray, sizes: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray]:
    """Byte positions of every {Ctx} in the child arrays [start, start+size), and the array of each.

    Records are variable-size (0x20 + 8*nFlexWords), so record k+1 of an array is
    found from record k. Instead of walking each array, every 8-byte word w of
    the arrays gets ``next[w]`` = the word after a record starting at w, and the
    chains from the array starts are followed by pointer jumping: O(log n)
    vectorized steps for the whole level.
    """
    n_arrays = len(starts)
    if (starts % 8).any() or (sizes % 8).any() or (sizes < SZ_CTX).any():
        bad = int(np.flatnonzero((starts % 8 != 0) | (sizes % 8 != 0) | (sizes < SZ_CTX))[0])
        raise blob.fail(f"context child array at {int(starts[bad]):#x} ({int(sizes[bad])} bytes) is not a "
                        f"whole number of aligned context records")
    first_size = SZ_CTX + 8 * buf[starts + 0x17].astype(np.int64)
    if np.array_equal(first_size, sizes):  # every array holds one record (deep chains): no walking needed
        return starts.copy(), np.arange(n_arrays)
    nwords = sizes // 8
    off = np.zeros(n_arrays + 1, np.int64)
    np.cumsum(nwords, out=off[1:])
    total = int(off[-1])
    arr_of = np.repeat(np.arange(n_arrays), nwords)
    local = np.arange(total, dtype=np.int64)
    byte_pos = starts[arr_of] + (local - off[arr_of]) * 8
    # Words near the end of the file cannot start a record; clipping only feeds them garbage sizes.
    nflex = buf[np.minimum(byte_pos + 0x17, len(buf) - 1)].astype(np.int64)
    nxt = local + 4 + nflex
    nxt = np.where(nxt < off[arr_of + 1], nxt, total)  # 'total' = end of the array (or overrun)
    jump = [np.append(nxt, total)]
    max_records = int((nwords // 4).max())
    levels = max(1, max_records.bit_length())
    for _ in range(1, levels):
        jump.append(jump[-1][jump[-1]])
    cur = off[:-1].copy()
    count = np.ones(n_arrays, np.int64)
    for k in reversed(range(levels)):
        cand = jump[k][cur]
        ok = cand != total
        cur[ok] = cand[ok]
        count[ok] += 1 << k
    rec_arr = np.repeat(np.arange(n_arrays), count)
    first = np.zeros(n_arrays, np.int64)
    np.cumsum(count[:-1], out=first[1:])
    j = np.arange(len(rec_arr), dtype=np.int64) - first[rec_arr]
    cur = off[:-1][rec_arr].copy()
    for k in range(levels):
        sel = ((j >> k) & 1).astype(bool)
        cur[sel] = jump[k][cur[sel]]
    pos = starts[rec_arr] + (cur - off[:-1][rec_arr]) * 8
    rec_size = SZ_CTX + 8 * buf[pos + 0x17].astype(np.int64)
    used = np.add.reduceat(rec_size, first)
    if not np.array_equal(used, sizes):
        bad = int(np.flatnonzero(used != sizes)[0])
        raise blob.fail(f"context child array at {int(starts[bad]):#x} ({int(sizes[bad])} bytes) does not end "
                        f"on a context record boundary")
    return pos, rec_arr


def _read_contexts(blob: Blob, head: dbf.DbHeader, strings: _Strings, tables: _Tables) -> ContextTree:
    sz, ptr = head.sections[3]
    dbf.section_blob(blob, head, 3, SZ_CONTEXTS_HDR, "Context Tree")
    lo, hi = ptr, ptr + sz
    hdr = blob.record(CONTEXTS_HDR, ptr, "Context Tree header")
    edt = dbf.stride_dtype(blob, ENTRY_FIELDS, SZ_ENTRY, int(hdr["szEntryPoint"]), "entry point")
    entries = blob.array(edt, int(hdr["pEntryPoints"]), int(hdr["nEntryPoints"]), "entry points")
    entry_points = [EntryPoint(int(e["ctxId"]), int(e["entryPoint"]),
                               strings.get(int(e["pPrettyName"]), "entry point name")) for e in entries]
    buf = np.frombuffer(blob.data, np.uint8)

    # Level by level: the child arrays of this level's records are the next level.
    arr_start = entries["pChildren"].astype(np.int64)
    arr_size = entries["szChildren"].astype(np.int64)
    arr_parent = np.full(len(entries), -1, np.int64)  # BFS row of the parent (-1: an entry point)
    arr_entry = np.arange(len(entries), dtype=np.int64)
    levels: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    n_rows = 0
    max_rows = sz // SZ_CTX
    while True:
        keep = arr_size > 0
        arr_start, arr_size, arr_parent, arr_entry = (arr_start[keep], arr_size[keep], arr_parent[keep],
                                                      arr_entry[keep])
        if not len(arr_start):
            break
        out = (arr_start < lo) | (arr_start + arr_size > hi)
        if out.any():
            i = int(np.flatnonzero(out)[0])
            raise blob.fail(f"a context child array ({int(arr_size[i])} bytes at {int(arr_start[i]):#x}) lies "
                            f"outside the Context Tree section [{lo:#x}, {hi:#x})")
        pos, rec_arr = _records_in_arrays(blob, buf, arr_start, arr_size)
        levels.append((pos, arr_parent[rec_arr], arr_entry[rec_arr]))
        n_rows += len(pos)
        if n_rows > max_rows:
            raise blob.fail("the context tree has more records than its section can hold (a cycle of child "
                            "pointers)")
        arr_start = _gather_u64(buf, pos + 8).astype(np.int64)
        arr_size = _gather_u64(buf, pos).astype(np.int64)
        arr_parent = np.arange(n_rows - len(pos), n_rows, dtype=np.int64)
        arr_entry = levels[-1][2]

    if levels:
        pos = np.concatenate([lv[0] for lv in levels])
        bfs_parent = np.concatenate([lv[1] for lv in levels])
        bfs_entry = np.concatenate([lv[2] for lv in levels])
    else:
        pos = bfs_parent = bfs_entry = np.zeros(0, np.int64)
    hdrs = dbf.gather(buf, pos, CTX)
    flags = hdrs["flags"].astype(np.int64)
    has_f, has_s, has_p = flags & HAS_FUNCTION, (flags & HAS_SRCLOC) >> 1, (flags & HAS_POINT) >> 2
    need = has_f + 2 * has_s + 2 * has_p
    nflex = hdrs["nFlexWords"].astype(np.int64)
    if (nflex < need).any():
        i = int(np.flatnonzero(nflex < need)[0])
        raise blob.fail(f"context {int(hdrs['ctxId'][i])} has {int(nflex[i])} flex words but its flags need "
                        f"{int(need[i])}")
    flex0 = pos + SZ_CTX
    word_f, word_s, word_p = flex0, flex0 + 8 * has_f, flex0 + 8 * (has_f + 2 * has_s)

    def field_at(mask: np.ndarray, where: np.ndarray) -> np.ndarray:
        vals = np.zeros(len(pos), np.uint64)
        sel = mask.astype(bool)
        vals[sel] = _gather_u64(buf, where[sel])
        return vals

    p_function = field_at(has_f, word_f)
    p_file = field_at(has_s, word_s)
    line = field_at(has_s, word_s + 8) & np.uint64(0xFFFFFFFF)
    p_module = field_at(has_p, word_p)
    offset = field_at(has_p, word_p + 8)
    function = _table_index(blob, p_function, *tables.function, "function")
    file = _table_index(blob, p_file, *tables.file, "file")
    module = _table_index(blob, p_module, *tables.module, "module")
    for what, has, idx in (("function", has_f, function), ("source file", has_s, file), ("load module", has_p, module)):
        null = (has != 0) & (idx < 0)
        if null.any():
            raise blob.fail(f"context {int(hdrs['ctxId'][np.flatnonzero(null)[0]])} says it has a {what} but "
                            f"its pointer is null")
    ctx_id = hdrs["ctxId"].astype(np.uint32)
    all_ids = np.concatenate([ctx_id, np.array([e.ctx_id for e in entry_points], np.uint32)])
    if (all_ids == 0).any():
        raise blob.fail("a context has id 0, which is reserved for the global context")
    uniq, counts = np.unique(all_ids, return_counts=True)
    if (counts > 1).any():
        raise blob.fail(f"context id {int(uniq[counts > 1][0])} appears more than once in the context tree")

    order, depth, parent = _preorder(bfs_parent, bfs_entry)
    tree = ContextTree(
        entry_points=entry_points, ctx_id=ctx_id[order], parent=parent.astype(np.int32),
        entry=bfs_entry[order].astype(np.uint16), depth=depth.astype(np.uint32),
        relation=hdrs["relation"][order].astype(np.uint8),
        lexical_type=hdrs["lexicalType"][order].astype(np.uint8),
        flags=hdrs["flags"][order].astype(np.uint8), propagation=hdrs["propagation"][order].astype(np.uint16),
        function=function[order], file=file[order], line=line[order].astype(np.uint32), module=module[order],
        offset=offset[order])
    return tree


def _group_starts(keys: np.ndarray) -> np.ndarray:
    """True where a run of equal keys begins."""
    out = np.empty(len(keys), bool)
    out[:1] = True
    np.not_equal(keys[1:], keys[:-1], out=out[1:])
    return out


def _levels(depth: np.ndarray) -> list[np.ndarray]:
    """Rows of each depth (in row order), from one stable sort instead of a scan per level."""
    if not len(depth):
        return []
    order = np.argsort(depth, kind="stable")
    bounds = np.searchsorted(depth[order], np.arange(int(depth.max()) + 2))
    return [order[bounds[d]:bounds[d + 1]] for d in range(len(bounds) - 1)]


def _subtree_sizes(parent: np.ndarray, depth: np.ndarray, levels: list[np.ndarray] | None = None) -> np.ndarray:
    size = np.ones(len(parent), np.int64)
    for rows in reversed((levels if levels is not None else _levels(depth))[1:]):
        np.add.at(size, parent[rows], size[rows])
    return size


def _depths(parent: np.ndarray) -> np.ndarray:
    """Number of ancestors of every row, by pointer jumping (O(n log depth))."""
    n = len(parent)
    dist = (parent >= 0).astype(np.int64)
    nxt = parent.astype(np.int64).copy()
    for _ in range(64):
        live = nxt >= 0
        if not live.any():
            return dist
        idx = np.flatnonzero(live)
        up = nxt[idx]
        dist[idx] += dist[up]
        nxt[idx] = nxt[up]
    raise ValueError(f"the parent links of {n} rows contain a cycle")


def _preorder(parent: np.ndarray, entry: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pre-order of a forest given ``parent`` rows (-1 = top, grouped by ``entry``).

    Returns (order, depth, parent) where ``order[k]`` is the input row placed at
    pre-order position k, and depth/parent are expressed in the new order.
    Siblings keep their input order; a constant number of vectorized steps per
    depth level.
    """
    n = len(parent)
    if n == 0:
        z = np.zeros(0, np.int64)
        return z, z, z
    depth = _depths(parent)
    levels = _levels(depth)
    size = _subtree_sizes(parent, depth, levels)
    pos = np.zeros(n, np.int64)
    top = levels[0]
    top = top[np.argsort(entry[top], kind="stable")]
    pos[top] = np.cumsum(size[top]) - size[top]
    for rows in levels[1:]:
        rows = rows[np.argsort(parent[rows], kind="stable")]
        par = parent[rows]
        cs = np.cumsum(size[rows]) - size[rows]
        base = np.maximum.accumulate(np.where(_group_starts(par), np.arange(len(rows)), 0))
        pos[rows] = pos[par] + 1 + (cs - cs[base])
    order = np.empty(n, np.int64)
    order[pos] = np.arange(n)
    new_parent = np.where(parent[order] >= 0, pos[np.maximum(parent[order], 0)], -1)
    return order, depth[order], new_parent


# -- writing -------------------------------------------------------------------------------------------


class _Layout:
    """A growing file image; every item is placed at its natural alignment."""

    def __init__(self, start: int) -> None:
        self.buf = bytearray(start)

    @property
    def size(self) -> int:
        return len(self.buf)

    def put(self, data: bytes, alignment: int = 1) -> int:
        self.buf += bytes(align(len(self.buf), alignment) - len(self.buf))
        at = len(self.buf)
        self.buf += data
        return at

    def cstr(self, text: str) -> int:
        return self.put(text.encode("utf-8", errors="surrogateescape") + b"\0")

    def reserve(self, size: int, alignment: int) -> int:
        return self.put(bytes(size), alignment)

    def patch(self, at: int, data: bytes) -> None:
        self.buf[at:at + len(data)] = data


def _records(fields_: list, size_: int, n_: int, **cols: Any) -> np.ndarray:
    arr = np.zeros(n_, dbf.record_dtype(fields_, size_))
    for k, v in cols.items():
        arr[k] = v
    return arr


def elided(tree: ContextTree) -> np.ndarray:
    """Rows hpcprof leaves out of meta.db: instructions nested lexically in their parent."""
    return (tree.relation == LEXICAL) & (tree.lexical_type == INSTRUCTION)


def encode_metadb(meta: MetaDB, elide: bool = True) -> bytes:
    """The bytes of a meta.db for ``meta``, laid out as hpcprof does (sections in its order)."""
    check_references(meta)
    tree = meta.contexts if meta.contexts is not None else ContextTree.from_columns([], ctx_id=[], parent=[])
    out = _Layout(HEADER_SIZE)
    sections: dict[str, tuple[int, int]] = {}

    start = out.reserve(SZ_GENERAL, 8)
    gen = _records(GENERAL_FIELDS, SZ_GENERAL, 1, pTitle=out.cstr(meta.title),
                   pDescription=out.cstr(meta.description))
    out.patch(start, gen.tobytes())
    sections["General"] = (out.size - start, start)

    start = out.reserve(SZ_ID_NAMES, 8)
    out.cstr("")
    name_ptrs = [out.cstr(n) for n in meta.id_names]
    arr = out.put(np.array(name_ptrs, "<u8").tobytes(), 8)
    out.patch(start, _records(ID_NAMES_FIELDS, SZ_ID_NAMES, 1, ppNames=arr, nKinds=len(name_ptrs)).tobytes())
    sections["IdNames"] = (out.size - start, start)

    sections["Metrics"] = _encode_metrics(out, meta)

    # Common string table: every module, file, function and entry-point name once.
    table: dict[str, int] = {}
    order: list[str] = []

    def intern(text: str) -> None:
        if text not in table:
            table[text] = -1
            order.append(text)

    for e in tree.entry_points:
        intern(e.pretty_name)
    for name in meta.functions.names:
        if name is not None:
            intern(name)
    for p in meta.modules:
        intern(p)
    for p in meta.files:
        intern(p)
    start = out.size
    for text in order:
        table[text] = out.cstr(text)
    sections["Strings"] = (out.size - start, start)

    def write_table(fields: list, rec_size: int, recs: np.ndarray, name: str) -> int:
        start = out.reserve(SZ_TABLE_HDR, 8)
        at = out.put(recs.tobytes(), 8)  # an empty table still aligns its (empty) array, as hpcprof does
        out.patch(start, _records(TABLE_HDR_FIELDS, SZ_TABLE_HDR, 1, ptr=at, count=len(recs),
                                  size=rec_size).tobytes())
        sections[name] = (out.size - start, start)
        return at

    n_mod, n_file = len(meta.modules), len(meta.files)
    mod_flags = meta.module_flags if len(meta.module_flags) == n_mod else np.zeros(n_mod, np.uint32)
    file_flags = meta.file_flags if len(meta.file_flags) == n_file else np.zeros(n_file, np.uint32)
    mod_base = write_table(MODULE_FIELDS, SZ_MODULE, _records(
        MODULE_FIELDS, SZ_MODULE, n_mod, flags=mod_flags, pPath=[table[p] for p in meta.modules]), "Modules")
    file_base = write_table(FILE_FIELDS, SZ_FILE, _records(
        FILE_FIELDS, SZ_FILE, n_file, flags=file_flags, pPath=[table[p] for p in meta.files]), "Files")
    fn = meta.functions

    def ptrs(idx: np.ndarray, base: int, stride: int) -> np.ndarray:
        idx = np.asarray(idx, np.int64)
        return np.where(idx >= 0, base + idx * stride, 0).astype(np.uint64)

    func_base = write_table(FUNCTION_FIELDS, SZ_FUNCTION, _records(
        FUNCTION_FIELDS, SZ_FUNCTION, len(fn),
        pName=[table[n] if n is not None else 0 for n in fn.names],
        pModule=ptrs(fn.module, mod_base, SZ_MODULE), offset=fn.offset,
        pFile=ptrs(fn.file, file_base, SZ_FILE), line=fn.line, flags=fn.flags), "Functions")

    sections["Context"] = _encode_contexts(out, tree, elide, table,
                                           lambda i: ptrs(i, func_base, SZ_FUNCTION),
                                           lambda i: ptrs(i, file_base, SZ_FILE),
                                           lambda i: ptrs(i, mod_base, SZ_MODULE))
    out.patch(0, dbf.encode_header(TAG, [sections[s] for s in SECTIONS]))
    out.put(dbf.footer(TAG))
    return bytes(out.buf)


def _encode_metrics(out: _Layout, meta: MetaDB) -> tuple[int, int]:
    start = out.reserve(SZ_METRICS_HDR, 8)
    names = [out.cstr(s.name) for s in meta.scopes]
    scopes = _records(SCOPE_FIELDS, SZ_SCOPE, len(meta.scopes), pScopeName=names,
                      type=[s.type for s in meta.scopes],
                      propagationIndex=[s.propagation_index for s in meta.scopes])
    p_scopes = out.put(scopes.tobytes(), 8)
    descs = np.zeros(len(meta.metrics), dbf.record_dtype(METRIC_FIELDS, SZ_METRIC))
    for i, m in enumerate(meta.metrics):
        insts = _records(SCOPE_INST_FIELDS, SZ_SCOPE_INST, len(m.scope_insts),
                         pScope=[p_scopes + SZ_SCOPE * s.scope for s in m.scope_insts],
                         propMetricId=[s.prop_metric_id for s in m.scope_insts])
        p_insts = out.put(insts.tobytes(), 8)
        formulas = [out.cstr(s.formula) for s in m.summaries]
        summs = _records(SUMMARY_FIELDS, SZ_SUMMARY, len(m.summaries),
                         pScope=[p_scopes + SZ_SCOPE * s.scope for s in m.summaries], pFormula=formulas,
                         combine=[s.combine for s in m.summaries],
                         statMetricId=[s.stat_metric_id for s in m.summaries])
        p_summs = out.put(summs.tobytes(), 8)
        descs[i] = (out.cstr(m.name), p_insts, p_summs, len(m.scope_insts), len(m.summaries))
    p_metrics = out.put(descs.tobytes(), 8)
    hdr = _records(METRICS_HDR_FIELDS, SZ_METRICS_HDR, 1, pMetrics=p_metrics, nMetrics=len(meta.metrics),
                   szMetric=SZ_METRIC, szScopeInst=SZ_SCOPE_INST, szSummary=SZ_SUMMARY, pScopes=p_scopes,
                   nScopes=len(meta.scopes), szScope=SZ_SCOPE)
    out.patch(start, hdr.tobytes())
    return out.size - start, start


def _encode_contexts(out: _Layout, tree: ContextTree, elide: bool, strings: dict[str, int],
                     func_ptr: Any, file_ptr: Any, mod_ptr: Any) -> tuple[int, int]:
    start = out.reserve(SZ_CONTEXTS_HDR, 8)
    keep = ~elided(tree) if elide else np.ones(len(tree), bool)
    rows = np.flatnonzero(keep)
    # Parents of kept rows: the nearest kept ancestor (elided instructions hand their children up).
    parent = tree.parent.astype(np.int64)
    eff = parent.copy()
    while True:
        hop = (eff >= 0) & ~keep[np.maximum(eff, 0)]
        if not hop.any():
            break
        eff[hop] = parent[eff[hop]]
    new_row = np.full(len(tree), -1, np.int64)
    new_row[rows] = np.arange(len(rows))
    par = np.where(eff[rows] >= 0, new_row[np.maximum(eff[rows], 0)], -1)
    ent = tree.entry[rows].astype(np.int64)
    n = len(rows)
    depth = np.zeros(n, np.int64)
    if n:
        _, depth, _ = _preorder(par, ent)  # rows are already in pre-order; only depth is needed
    size = _subtree_sizes(par, depth)
    flags = tree.flags[rows].astype(np.int64)
    has_f, has_s, has_p = flags & 1, (flags >> 1) & 1, (flags >> 2) & 1
    nflex = has_f + 2 * has_s + 2 * has_p
    rec_size = SZ_CTX + 8 * nflex

    # Child arrays in post-order: each node's array before its parent's; per entry point, the
    # entry's own child array last (as hpcprof writes them).
    n_entries = len(tree.entry_points)
    child_bytes = np.zeros(n, np.int64)
    top = par < 0
    np.add.at(child_bytes, par[~top], rec_size[~top])
    entry_bytes = np.zeros(n_entries, np.int64)
    np.add.at(entry_bytes, ent[top], rec_size[top])
    post = np.arange(n) + size - 1 - depth
    last_post = np.full(n_entries, -1, np.int64)
    if n:
        np.maximum.at(last_post, ent, post)
    # Entry points without contexts still come in entry order.
    last_post = np.maximum.accumulate(np.maximum(last_post, -1))
    keys = np.concatenate([post * 2, last_post * 2 + 1])
    nbytes = np.concatenate([child_bytes, entry_bytes])
    order = np.argsort(keys, kind="stable")
    at = np.zeros(len(keys), np.int64)
    base = align(out.size, 8)
    at[order] = base + np.cumsum(nbytes[order]) - nbytes[order]
    arr_at = np.where(nbytes > 0, at, 0)
    node_arr, entry_arr = arr_at[:n], arr_at[n:]

    # Each record's place: its parent's array plus the sizes of the siblings before it.
    owner = np.where(top, n + ent, par)
    sib_order = np.argsort(owner, kind="stable")
    cs = np.cumsum(rec_size[sib_order]) - rec_size[sib_order]
    ow = owner[sib_order]
    first = np.r_[True, ow[1:] != ow[:-1]] if n else np.zeros(0, bool)
    grp = np.maximum.accumulate(np.where(first, np.arange(n), 0)) if n else np.zeros(0, np.int64)
    rec_at = np.zeros(n, np.int64)
    rec_at[sib_order] = arr_at[ow] + cs - cs[grp]

    total = int(nbytes.sum())
    image = np.zeros(total, np.uint8)
    hdr = np.zeros(n, CTX)
    hdr["szChildren"] = child_bytes
    hdr["pChildren"] = node_arr
    hdr["ctxId"] = tree.ctx_id[rows]
    hdr["flags"] = flags
    hdr["relation"] = tree.relation[rows]
    hdr["lexicalType"] = tree.lexical_type[rows]
    hdr["nFlexWords"] = nflex
    hdr["propagation"] = tree.propagation[rows]
    local = rec_at - base
    dbf.scatter(image, local, hdr)

    def put_words(mask: np.ndarray, word: np.ndarray, values: np.ndarray) -> None:
        sel = mask.astype(bool)
        dbf.scatter(image, local[sel] + SZ_CTX + 8 * word[sel], values[sel].astype(_U64))

    put_words(has_f, np.zeros(n, np.int64), func_ptr(tree.function[rows]))
    put_words(has_s, has_f, file_ptr(tree.file[rows]))
    put_words(has_s, has_f + 1, tree.line[rows].astype(np.uint64))
    put_words(has_p, has_f + 2 * has_s, mod_ptr(tree.module[rows]))
    put_words(has_p, has_f + 2 * has_s + 1, tree.offset[rows].astype(np.uint64))
    got = out.put(image.tobytes(), 8) if total else base
    assert got == base or not total

    entries = _records(ENTRY_FIELDS, SZ_ENTRY, n_entries, szChildren=entry_bytes, pChildren=entry_arr,
                       ctxId=[e.ctx_id for e in tree.entry_points],
                       entryPoint=[e.kind for e in tree.entry_points],
                       pPrettyName=[strings[e.pretty_name] for e in tree.entry_points])
    p_entries = out.put(entries.tobytes(), 8)
    out.patch(start, _records(CONTEXTS_HDR_FIELDS, SZ_CONTEXTS_HDR, 1, pEntryPoints=p_entries,
                              nEntryPoints=n_entries, szEntryPoint=SZ_ENTRY).tobytes())
    return out.size - start, start


def write_metadb(path: str | os.PathLike[str], meta: MetaDB, elide: bool = True) -> None:
    """Write ``meta`` to ``path`` (a temporary name until complete)."""
    data = encode_metadb(meta, elide)
    with atomic_file(path) as fh:
        fh.write(data)


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


def check_references(meta: MetaDB) -> None:
    """Every function/file/module index inside its table and flags matching the fields (before writing)."""
    fn, t = meta.functions, meta.contexts
    problems = []
    for what, idx, n in (("function module", fn.module, len(meta.modules)), ("function file", fn.file, len(meta.files))):
        if len(idx) and (int(idx.max()) >= n or int(idx.min()) < -1):
            problems.append(f"a {what} index is outside its table of {n}")
    if len(fn.names) != len(fn.module) or any(
            name is None and fn.module[i] < 0 and fn.file[i] < 0 for i, name in enumerate(fn.names)):
        problems.append("a function has neither a name, a module nor a file")
    if t is not None:
        flags = t.flags.astype(np.int64)
        for what, idx, n, bit in (("function", t.function, len(fn), HAS_FUNCTION), ("file", t.file, len(meta.files),
                                  HAS_SRCLOC), ("module", t.module, len(meta.modules), HAS_POINT)):
            used = (flags & bit) != 0
            if used.any() and (int(idx[used].max()) >= n or int(idx[used].min()) < 0):
                problems.append(f"a context's {what} index is outside the {what} table of {n}")
    if problems:
        raise ValueError(f"cannot write meta.db: {problems[0]}")
