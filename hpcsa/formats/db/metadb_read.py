"""Reading ``meta.db`` into a :class:`~hpcsa.formats.db.metadb_model.MetaDB`.

The variable-size ``{Ctx}`` records are parsed level by level without a
per-record loop: within one level every child array is walked at once by
pointer jumping over ``nFlexWords`` (see ``_records_in_arrays()``).
"""

from __future__ import annotations

import os

import numpy as np

from hpcsa.core.binfmt import Blob
from hpcsa.core.dataclass import dataclass
from hpcsa.core.errors import UnsupportedError
from hpcsa.core.treeorder import preorder
from hpcsa.formats.db import dbformat as dbf
from hpcsa.formats.db import metadb_model as M


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


def read_metadb(path: str | os.PathLike[str]) -> M.MetaDB:
    """A whole meta.db: its general properties, id names, metrics, modules, files, functions and context tree."""
    path = os.fspath(path)
    blob, head = dbf.open_db(path, M.TAG, M.SECTIONS)
    sec = dict(zip(M.SECTIONS, head.sections, strict=True))
    strings = _Strings(blob)
    for name in ("General", "IdNames", "Metrics", "Strings"):
        sz, ptr = sec[name]
        strings.load_section(ptr, sz)

    meta = M.MetaDB(version=head.version, notes=head.notes, path=path)

    # General properties
    ptr = dbf.section_blob(blob, head, 0, M.SZ_GENERAL, "General Properties")
    gen = blob.record(M.GENERAL, ptr, "General Properties header")
    meta.title = strings.get(int(gen["pTitle"]), "title")
    meta.description = strings.get(int(gen["pDescription"]), "description")

    # Identifier names
    ptr = dbf.section_blob(blob, head, 1, M.SZ_ID_NAMES, "Identifier Names")
    idn = blob.record(M.ID_NAMES, ptr, "Identifier Names header")
    pp = blob.array(np.dtype("<u8"), int(idn["ppNames"]), int(idn["nKinds"]), "identifier name pointers")
    meta.id_names = [strings.get(int(p), "identifier name") for p in pp]

    _read_metrics(blob, head, strings, meta)
    tables = _read_tables(blob, head, strings, meta)
    meta.contexts = _read_contexts(blob, head, strings, tables)
    return meta


def _read_metrics(blob: Blob, head: dbf.DbHeader, strings: _Strings, meta: M.MetaDB) -> None:
    ptr = dbf.section_blob(blob, head, 2, M.SZ_METRICS_HDR, "Performance Metrics")
    hdr = blob.record(M.METRICS_HDR, ptr, "Performance Metrics header")
    sizes = (int(hdr["szMetric"]), int(hdr["szScopeInst"]), int(hdr["szSummary"]))
    if sizes == M.PRE_RELEASE_METRIC_SIZES:
        raise UnsupportedError(blob.path, "pre-release meta.db layout: it says version 4.0 but its metric "
                               "records are 24/24/16 bytes (released 4.0: 32/16/24); it was written by an "
                               "HPCToolkit development snapshot from before format 4.0 was final; "
                               "re-run a released hpcprof on the measurements")
    md = dbf.stride_dtype(blob, M.METRIC_FIELDS, M.SZ_METRIC, sizes[0], "metric description")
    sid = dbf.stride_dtype(blob, M.SCOPE_INST_FIELDS, M.SZ_SCOPE_INST, sizes[1], "propagation scope instance")
    ssd = dbf.stride_dtype(blob, M.SUMMARY_FIELDS, M.SZ_SUMMARY, sizes[2], "summary statistic")
    psd = dbf.stride_dtype(blob, M.SCOPE_FIELDS, M.SZ_SCOPE, int(hdr["szScope"]), "propagation scope")
    scope_recs = blob.array(psd, int(hdr["pScopes"]), int(hdr["nScopes"]), "propagation scopes")
    meta.scopes = [M.Scope(strings.get(int(r["pScopeName"]), "scope name"), int(r["type"]),
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
        meta.metrics.append(M.Metric(
            strings.get(int(rec["pName"]), "metric name"),
            [M.ScopeInstance(int(s), int(m)) for s, m in zip(i_scope, insts["propMetricId"], strict=True)],
            [M.Summary(int(s), strings.get(int(f), "summary formula"), int(c), int(m))
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
    ptr = dbf.section_blob(blob, head, index, M.SZ_TABLE_HDR, what)
    hdr = blob.record(M.TABLE_HDR, ptr, f"{what} header")
    dt = dbf.stride_dtype(blob, fields, base_size, int(hdr["size"]), what)
    arr = blob.array(dt, int(hdr["ptr"]), int(hdr["count"]), what)
    return arr, int(hdr["ptr"]), dt.itemsize


def _read_tables(blob: Blob, head: dbf.DbHeader, strings: _Strings, meta: M.MetaDB) -> _Tables:
    mods, mbase, mstride = _read_table(blob, head, 5, M.MODULE_FIELDS, M.SZ_MODULE, "Load Modules")
    files, fbase, fstride = _read_table(blob, head, 6, M.FILE_FIELDS, M.SZ_FILE, "Source Files")
    funcs, xbase, xstride = _read_table(blob, head, 7, M.FUNCTION_FIELDS, M.SZ_FUNCTION, "Functions")
    meta.modules = [strings.get(int(p), "module path") for p in mods["pPath"]]
    meta.module_flags = mods["flags"].astype(np.uint32)
    meta.files = [strings.get(int(p), "file path") for p in files["pPath"]]
    meta.file_flags = files["flags"].astype(np.uint32)
    meta.functions = M.Functions(
        names=[strings.get(int(p), "function name") if p else None for p in funcs["pName"]],
        module=_table_index(blob, funcs["pModule"], mbase, mstride, len(mods), "module"),
        offset=funcs["offset"].astype(np.uint64),
        file=_table_index(blob, funcs["pFile"], fbase, fstride, len(files), "file"),
        line=funcs["line"].astype(np.uint32),
        flags=funcs["flags"].astype(np.uint32))
    return _Tables((mbase, mstride, len(mods)), (fbase, fstride, len(files)), (xbase, xstride, len(funcs)))


_U64 = np.dtype("<u8")


def _gather_u64(buf: np.ndarray, pos: np.ndarray) -> np.ndarray:
    return dbf.gather_records(buf, pos, _U64)


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
    if (starts % 8).any() or (sizes % 8).any() or (sizes < M.SZ_CTX).any():
        bad = int(np.flatnonzero((starts % 8 != 0) | (sizes % 8 != 0) | (sizes < M.SZ_CTX))[0])
        raise blob.fail(f"context child array at {int(starts[bad]):#x} ({int(sizes[bad])} bytes) is not a "
                        f"whole number of aligned context records")
    first_size = M.SZ_CTX + 8 * buf[starts + 0x17].astype(np.int64)
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
    rec_size = M.SZ_CTX + 8 * buf[pos + 0x17].astype(np.int64)
    used = np.add.reduceat(rec_size, first)
    if not np.array_equal(used, sizes):
        bad = int(np.flatnonzero(used != sizes)[0])
        raise blob.fail(f"context child array at {int(starts[bad]):#x} ({int(sizes[bad])} bytes) does not end "
                        f"on a context record boundary")
    return pos, rec_arr


def _read_contexts(blob: Blob, head: dbf.DbHeader, strings: _Strings, tables: _Tables) -> M.ContextTree:
    sz, ptr = head.sections[3]
    dbf.section_blob(blob, head, 3, M.SZ_CONTEXTS_HDR, "Context Tree")
    lo, hi = ptr, ptr + sz
    hdr = blob.record(M.CONTEXTS_HDR, ptr, "Context Tree header")
    edt = dbf.stride_dtype(blob, M.ENTRY_FIELDS, M.SZ_ENTRY, int(hdr["szEntryPoint"]), "entry point")
    entries = blob.array(edt, int(hdr["pEntryPoints"]), int(hdr["nEntryPoints"]), "entry points")
    entry_points = [M.EntryPoint(int(e["ctxId"]), int(e["entryPoint"]),
                               strings.get(int(e["pPrettyName"]), "entry point name")) for e in entries]
    buf = np.frombuffer(blob.data, np.uint8)

    # Level by level: the child arrays of this level's records are the next level.
    arr_start = entries["pChildren"].astype(np.int64)
    arr_size = entries["szChildren"].astype(np.int64)
    arr_parent = np.full(len(entries), -1, np.int64)  # BFS row of the parent (-1: an entry point)
    arr_entry = np.arange(len(entries), dtype=np.int64)
    levels: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    n_rows = 0
    max_rows = sz // M.SZ_CTX
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
    hdrs = dbf.gather_records(buf, pos, M.CTX)
    flags = hdrs["flags"].astype(np.int64)
    has_f, has_s, has_p = flags & M.HAS_FUNCTION, (flags & M.HAS_SRCLOC) >> 1, (flags & M.HAS_POINT) >> 2
    need = has_f + 2 * has_s + 2 * has_p
    nflex = hdrs["nFlexWords"].astype(np.int64)
    if (nflex < need).any():
        i = int(np.flatnonzero(nflex < need)[0])
        raise blob.fail(f"context {int(hdrs['ctxId'][i])} has {int(nflex[i])} flex words but its flags need "
                        f"{int(need[i])}")
    flex0 = pos + M.SZ_CTX
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

    order, depth, parent = preorder(bfs_parent, bfs_entry)
    tree = M.ContextTree(
        entry_points=entry_points, ctx_id=ctx_id[order], parent=parent.astype(np.int32),
        entry=bfs_entry[order].astype(np.uint16), depth=depth.astype(np.uint32),
        relation=hdrs["relation"][order].astype(np.uint8),
        lexical_type=hdrs["lexicalType"][order].astype(np.uint8),
        flags=hdrs["flags"][order].astype(np.uint8), propagation=hdrs["propagation"][order].astype(np.uint16),
        function=function[order], file=file[order], line=line[order].astype(np.uint32), module=module[order],
        offset=offset[order])
    return tree
