"""Writing ``meta.db``: :func:`encode_metadb` lays a :class:`~hpcsa.formats.db.metadb_model.MetaDB` out
as hpcprof does (sections in its order, every item at its natural alignment).

Instruction contexts nested lexically in their parent (``relation`` lexical,
``lexicalType`` instruction) are *elided* by hpcprof: they are not written to
meta.db, their children are hoisted into the parent's child array, yet their
ids keep their values in profile.db and cct.db. :func:`encode_metadb` applies
the same rule to a tree that contains them.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from hpcsa.core.binfmt import align
from hpcsa.core.outputs import atomic_file
from hpcsa.core.treeorder import depth_from_parent, subtree_sizes
from hpcsa.formats.db import dbformat as dbf
from hpcsa.formats.db import metadb_model as M

_U64 = np.dtype("<u8")


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

    def cstrs(self, texts: list[str]) -> list[int]:
        """:meth:`cstr` of each, one after the other (joined and appended at once)."""
        encoded = [t.encode("utf-8", errors="surrogateescape") for t in texts]
        at = len(self.buf)
        self.buf += b"\0".join(encoded) + b"\0" if encoded else b""
        sizes = np.fromiter(map(len, encoded), np.int64, len(encoded)) + 1
        return (at + np.cumsum(sizes) - sizes).tolist()

    def reserve(self, size: int, alignment: int) -> int:
        return self.put(bytes(size), alignment)

    def patch(self, at: int, data: bytes) -> None:
        self.buf[at:at + len(data)] = data


def _records(fields_: list, size_: int, n_: int, **cols: Any) -> np.ndarray:
    arr = np.zeros(n_, dbf.record_dtype(fields_, size_))
    for k, v in cols.items():
        arr[k] = v
    return arr


def elided(tree: M.ContextTree) -> np.ndarray:
    """Rows hpcprof leaves out of meta.db: instructions nested lexically in their parent."""
    return (tree.relation == M.LEXICAL) & (tree.lexical_type == M.INSTRUCTION)


def encode_metadb(meta: M.MetaDB, elide: bool = True) -> bytes:
    """The bytes of a meta.db for ``meta``, laid out as hpcprof does (sections in its order)."""
    check_references(meta)
    tree = meta.contexts if meta.contexts is not None else M.ContextTree.from_columns([], ctx_id=[], parent=[])
    out = _Layout(M.HEADER_SIZE)
    sections: dict[str, tuple[int, int]] = {}

    start = out.reserve(M.SZ_GENERAL, 8)
    gen = _records(M.GENERAL_FIELDS, M.SZ_GENERAL, 1, pTitle=out.cstr(meta.title),
                   pDescription=out.cstr(meta.description))
    out.patch(start, gen.tobytes())
    sections["General"] = (out.size - start, start)

    start = out.reserve(M.SZ_ID_NAMES, 8)
    out.cstr("")
    name_ptrs = [out.cstr(n) for n in meta.id_names]
    arr = out.put(np.array(name_ptrs, "<u8").tobytes(), 8)
    out.patch(start, _records(M.ID_NAMES_FIELDS, M.SZ_ID_NAMES, 1, ppNames=arr, nKinds=len(name_ptrs)).tobytes())
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
    table.update(zip(order, out.cstrs(order), strict=True))
    sections["Strings"] = (out.size - start, start)

    def write_table(fields: list, rec_size: int, recs: np.ndarray, name: str) -> int:
        start = out.reserve(M.SZ_TABLE_HDR, 8)
        at = out.put(recs.tobytes(), 8)  # an empty table still aligns its (empty) array, as hpcprof does
        out.patch(start, _records(M.TABLE_HDR_FIELDS, M.SZ_TABLE_HDR, 1, ptr=at, count=len(recs),
                                  size=rec_size).tobytes())
        sections[name] = (out.size - start, start)
        return at

    n_mod, n_file = len(meta.modules), len(meta.files)
    mod_flags = meta.module_flags if len(meta.module_flags) == n_mod else np.zeros(n_mod, np.uint32)
    file_flags = meta.file_flags if len(meta.file_flags) == n_file else np.zeros(n_file, np.uint32)
    mod_base = write_table(M.MODULE_FIELDS, M.SZ_MODULE, _records(
        M.MODULE_FIELDS, M.SZ_MODULE, n_mod, flags=mod_flags, pPath=[table[p] for p in meta.modules]), "Modules")
    file_base = write_table(M.FILE_FIELDS, M.SZ_FILE, _records(
        M.FILE_FIELDS, M.SZ_FILE, n_file, flags=file_flags, pPath=[table[p] for p in meta.files]), "Files")
    fn = meta.functions

    def ptrs(idx: np.ndarray, base: int, stride: int) -> np.ndarray:
        idx = np.asarray(idx, np.int64)
        return np.where(idx >= 0, base + idx * stride, 0).astype(np.uint64)

    func_base = write_table(M.FUNCTION_FIELDS, M.SZ_FUNCTION, _records(
        M.FUNCTION_FIELDS, M.SZ_FUNCTION, len(fn),
        pName=[table[n] if n is not None else 0 for n in fn.names],
        pModule=ptrs(fn.module, mod_base, M.SZ_MODULE), offset=fn.offset,
        pFile=ptrs(fn.file, file_base, M.SZ_FILE), line=fn.line, flags=fn.flags), "Functions")

    sections["Context"] = _encode_contexts(out, tree, elide, table,
                                           lambda i: ptrs(i, func_base, M.SZ_FUNCTION),
                                           lambda i: ptrs(i, file_base, M.SZ_FILE),
                                           lambda i: ptrs(i, mod_base, M.SZ_MODULE))
    out.patch(0, dbf.encode_header(M.TAG, [sections[s] for s in M.SECTIONS]))
    out.put(dbf.footer(M.TAG))
    return bytes(out.buf)


def _encode_metrics(out: _Layout, meta: M.MetaDB) -> tuple[int, int]:
    start = out.reserve(M.SZ_METRICS_HDR, 8)
    names = [out.cstr(s.name) for s in meta.scopes]
    scopes = _records(M.SCOPE_FIELDS, M.SZ_SCOPE, len(meta.scopes), pScopeName=names,
                      type=[s.type for s in meta.scopes],
                      propagationIndex=[s.propagation_index for s in meta.scopes])
    p_scopes = out.put(scopes.tobytes(), 8)
    descs = np.zeros(len(meta.metrics), dbf.record_dtype(M.METRIC_FIELDS, M.SZ_METRIC))
    for i, m in enumerate(meta.metrics):
        insts = _records(M.SCOPE_INST_FIELDS, M.SZ_SCOPE_INST, len(m.scope_insts),
                         pScope=[p_scopes + M.SZ_SCOPE * s.scope for s in m.scope_insts],
                         propMetricId=[s.prop_metric_id for s in m.scope_insts])
        p_insts = out.put(insts.tobytes(), 8)
        formulas = [out.cstr(s.formula) for s in m.summaries]
        summs = _records(M.SUMMARY_FIELDS, M.SZ_SUMMARY, len(m.summaries),
                         pScope=[p_scopes + M.SZ_SCOPE * s.scope for s in m.summaries], pFormula=formulas,
                         combine=[s.combine for s in m.summaries],
                         statMetricId=[s.stat_metric_id for s in m.summaries])
        p_summs = out.put(summs.tobytes(), 8)
        descs[i] = (out.cstr(m.name), p_insts, p_summs, len(m.scope_insts), len(m.summaries))
    p_metrics = out.put(descs.tobytes(), 8)
    hdr = _records(M.METRICS_HDR_FIELDS, M.SZ_METRICS_HDR, 1, pMetrics=p_metrics, nMetrics=len(meta.metrics),
                   szMetric=M.SZ_METRIC, szScopeInst=M.SZ_SCOPE_INST, szSummary=M.SZ_SUMMARY, pScopes=p_scopes,
                   nScopes=len(meta.scopes), szScope=M.SZ_SCOPE)
    out.patch(start, hdr.tobytes())
    return out.size - start, start


def _encode_contexts(out: _Layout, tree: M.ContextTree, elide: bool, strings: dict[str, int],
                     func_ptr: Any, file_ptr: Any, mod_ptr: Any) -> tuple[int, int]:
    start = out.reserve(M.SZ_CONTEXTS_HDR, 8)
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
    depth = depth_from_parent(par)  # the rows are in pre-order already: only their depth is needed
    size = subtree_sizes(par, depth)
    flags = tree.flags[rows].astype(np.int64)
    has_f, has_s, has_p = flags & 1, (flags >> 1) & 1, (flags >> 2) & 1
    nflex = has_f + 2 * has_s + 2 * has_p
    rec_size = M.SZ_CTX + 8 * nflex

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
    hdr = np.zeros(n, M.CTX)
    hdr["szChildren"] = child_bytes
    hdr["pChildren"] = node_arr
    hdr["ctxId"] = tree.ctx_id[rows]
    hdr["flags"] = flags
    hdr["relation"] = tree.relation[rows]
    hdr["lexicalType"] = tree.lexical_type[rows]
    hdr["nFlexWords"] = nflex
    hdr["propagation"] = tree.propagation[rows]
    local = rec_at - base
    dbf.scatter_records(image, local, hdr)

    def put_words(mask: np.ndarray, word: np.ndarray, values: np.ndarray) -> None:
        sel = mask.astype(bool)
        dbf.scatter_records(image, local[sel] + M.SZ_CTX + 8 * word[sel], values[sel].astype(_U64))

    put_words(has_f, np.zeros(n, np.int64), func_ptr(tree.function[rows]))
    put_words(has_s, has_f, file_ptr(tree.file[rows]))
    put_words(has_s, has_f + 1, tree.line[rows].astype(np.uint64))
    put_words(has_p, has_f + 2 * has_s, mod_ptr(tree.module[rows]))
    put_words(has_p, has_f + 2 * has_s + 1, tree.offset[rows].astype(np.uint64))
    got = out.put(image.tobytes(), 8) if total else base
    assert got == base or not total

    entries = _records(M.ENTRY_FIELDS, M.SZ_ENTRY, n_entries, szChildren=entry_bytes, pChildren=entry_arr,
                       ctxId=[e.ctx_id for e in tree.entry_points],
                       entryPoint=[e.kind for e in tree.entry_points],
                       pPrettyName=[strings[e.pretty_name] for e in tree.entry_points])
    p_entries = out.put(entries.tobytes(), 8)
    out.patch(start, _records(M.CONTEXTS_HDR_FIELDS, M.SZ_CONTEXTS_HDR, 1, pEntryPoints=p_entries,
                              nEntryPoints=n_entries, szEntryPoint=M.SZ_ENTRY).tobytes())
    return out.size - start, start


def write_metadb(path: str | os.PathLike[str], meta: M.MetaDB, elide: bool = True) -> None:
    """Write ``meta`` to ``path`` (a temporary name until complete)."""
    data = encode_metadb(meta, elide)
    with atomic_file(path) as fh:
        fh.write(data)


def check_references(meta: M.MetaDB) -> None:
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
        for what, idx, n, bit in (("function", t.function, len(fn), M.HAS_FUNCTION),
                                  ("file", t.file, len(meta.files), M.HAS_SRCLOC),
                                  ("module", t.module, len(meta.modules), M.HAS_POINT)):
            used = (flags & bit) != 0
            if used.any() and (int(idx[used].max()) >= n or int(idx[used].min()) < 0):
                problems.append(f"a context's {what} index is outside the {what} table of {n}")
    if problems:
        raise ValueError(f"cannot write meta.db: {problems[0]}")
