"""Many ``.hpcrun`` files read together, with :func:`~hpcsa.formats.measurement.hpcrun.read_hpcrun_tree`'s checks made
once per batch.

An aggregation reads thousands of profiles, and most are small: an OpenMP thread that waited at a barrier
has ten contexts and a few values. There numpy's cost per call, not the data, is the reading's cost (some
thirty calls a file for the tree and sparse-index checks alone). Here each file is cut into its sections by
a few ``struct`` reads, and the checks run once over the batch's concatenated arrays.

Reading a batch gives exactly what reading its files one by one gives. A file the quick cut doubts (a section
that does not hold what it claims) or the batch checks refuse sends the batch to the reader of one file,
file by file, so the one-line refusal is the same and names the batch's first bad file.
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Sequence

import numpy as np

from hpcsa.core.arrays import concat_records, offsets, records_at
from hpcsa.core.binfmt import Blob, records
from hpcsa.core.dataclass import dataclass
from hpcsa.core.errors import HpcsaError
from hpcsa.formats.measurement.hpcrun import (
    CCT_NODE,
    END_SENTINEL,
    FOOTER_MAGIC,
    ID_ELEMENT,
    MAGIC,
    SPARSE_INDEX,
    SPARSE_VALUE,
    VERSION,
    HpcrunProfile,
    LoadModule,
    MetricDesc,
    _parse_header,
    _parse_id_names,
    _parse_loadmap,
    _parse_metrics,
    read_hpcrun_tree,
)

_HEAD = MAGIC + VERSION.encode("ascii") + b"b"  # magic, version, big-endian
_FOOTER = struct.Struct(">14Q")
_MIN_SIZE = 24 + _FOOTER.size


@dataclass
class HpcrunBatch:
    """Profiles read together: each one as :func:`~hpcsa.formats.measurement.hpcrun.read_hpcrun_tree` returns it, and their
    trees as columns over the batch (profile ``k``'s CCT rows are ``cut[k]:cut[k + 1]``)."""

    profiles: list[HpcrunProfile]
    cut: np.ndarray     # int64, len(profiles) + 1
    cct: np.ndarray     # the CCT records, concatenated
    order: np.ndarray   # rows of the batch sorted by (profile, node id): each profile's rows in id order
    parent: np.ndarray  # each row's parent row in the batch (-1 at a root)

    def rows(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Profile ``k``'s (rows in node-id order, parent rows) numbered within the profile, as
        :func:`~hpcsa.formats.measurement.hpcrun.read_hpcrun_tree` returns them."""
        lo, hi = int(self.cut[k]), int(self.cut[k + 1])
        parent = self.parent[lo:hi]
        return self.order[lo:hi] - lo, np.where(parent >= 0, parent - lo, -1)


def read_hpcrun_batch(paths: Sequence[str | os.PathLike[str]]) -> HpcrunBatch:
    """Read ``paths`` (values included) as one batch; refuses as the reader of one file does."""
    profiles: list[HpcrunProfile] = []
    indexes: list[np.ndarray] = []  # each sparse index with its sentinel, for the batch checks
    for k, path in enumerate(paths):
        try:
            prof = _cut(os.fspath(path))
        except HpcsaError:
            prof = None
        if prof is None:
            try:
                prof = read_hpcrun_tree(path)[0]  # checked, its index without the sentinel
            except HpcsaError:
                _one_by_one(paths[:k])  # an earlier file's refusal comes first
                raise
            indexes.append(np.concatenate([prof.index, records(SPARSE_INDEX, 1, node=END_SENTINEL,
                                                                 start=len(prof.values))]))
        else:
            indexes.append(prof.index)
            prof.index = prof.index[:-1]
        profiles.append(prof)
    batch = _checked(profiles, indexes)
    # A refusal: the first bad file's, from the reader of one file (which reads them all if none is bad, as
    # when a file was rewritten meanwhile).
    return batch if batch is not None else _one_by_one(paths)


def _one_by_one(paths: Sequence[str | os.PathLike[str]]) -> HpcrunBatch:
    """The files read one by one (raising the first one's refusal), as a batch."""
    read = [read_hpcrun_tree(path) for path in paths]
    profiles = [prof for prof, _, _ in read]
    cut = offsets([len(p.cct) for p in profiles])
    order = np.concatenate([o + c for (_, o, _), c in zip(read, cut, strict=False)]) if read else cut[:0]
    parent = np.concatenate([np.where(r >= 0, r + c, -1) for (_, _, r), c in zip(read, cut, strict=False)]
                            ) if read else cut[:0]
    return HpcrunBatch(profiles, cut, concat_records([p.cct for p in profiles], CCT_NODE), order, parent)


def _footer(data: bytes | mmap.mmap) -> tuple[int, ...] | None:
    """The footer's section bounds where they are plainly right (magic, each section within the file, in
    order), else None."""
    size = len(data)
    if size < _MIN_SIZE or data[:24] != _HEAD:
        return None
    f = _FOOTER.unpack_from(data, size - _FOOTER.size)
    if f[13] != FOOTER_MAGIC or f[12] + _FOOTER.size != size:
        return None
    for i in range(0, 12, 2):
        if not f[i] <= f[i + 1] <= f[12]:
            return None
    return f


def _cut(path: str) -> HpcrunProfile | None:
    """One file cut into its sections, or None where a bound is not plainly right (the reader of one file then
    reads it, with every check and its message). The tree and sparse-index checks are the batch's."""
    blob = Blob(path)
    data = blob.data
    f = _footer(data)
    if f is None:
        return None
    header = _parse_header(blob, f[1])
    loadmap = _parse_loadmap(data[f[2]:f[3]], path)
    at, end = f[4], f[5]
    if at + 8 > end:
        return None
    (n_cct,) = struct.unpack_from(">Q", data, at)
    if n_cct * CCT_NODE.itemsize > end - at - 8:
        return None
    cct = np.frombuffer(data, CCT_NODE, n_cct, at + 8)
    metrics = _parse_metrics(data[f[6]:f[7]], path)
    id_names = _parse_id_names(data[f[8]:f[9]], path)
    at, end = f[10], f[11]
    if at + 2 > end:
        return None
    (n_ids,) = struct.unpack_from(">H", data, at)
    at += 2
    if at + n_ids * ID_ELEMENT.itemsize + 12 > end:
        return None
    id_tuple = np.frombuffer(data, ID_ELEMENT, n_ids, at)
    at += n_ids * ID_ELEMENT.itemsize
    n_vals, n_nodes = struct.unpack_from(">QI", data, at)
    at += 12
    if at + n_vals * SPARSE_VALUE.itemsize + (n_nodes + 1) * SPARSE_INDEX.itemsize > end:
        return None
    values = np.frombuffer(data, SPARSE_VALUE, n_vals, at)
    index = np.frombuffer(data, SPARSE_INDEX, n_nodes + 1, at + n_vals * SPARSE_VALUE.itemsize)
    return HpcrunProfile(header=header, loadmap=list(loadmap), cct=cct, metrics=list(metrics),
                         id_names=list(id_names), id_tuple=id_tuple, values=values, index=index, path=path)


def _checked(profiles: list[HpcrunProfile], indexes: list[np.ndarray]) -> HpcrunBatch | None:
    """The batch with its tree columns, or None if a file breaks a rule of
    :func:`~hpcsa.formats.measurement.hpcrun.tree_rows` or of the sparse values (one pass over the batch for each rule;
    ``indexes``: the profiles' sparse indexes with their sentinels)."""
    n = len(profiles)
    sizes = np.fromiter((len(p.cct) for p in profiles), np.int64, n)
    cct = concat_records([p.cct for p in profiles], CCT_NODE)
    tree = _tree_ok(cct, sizes)
    if tree is None:
        return None
    cut, order, parent_row, sorted_key = tree
    n_vals = np.fromiter((len(p.values) for p in profiles), np.int64, n)
    metric = np.concatenate([p.values["metric"] for p in profiles]) if n_vals.any() else np.zeros(0, np.int64)
    n_metrics = np.fromiter((len(p.metrics) for p in profiles), np.int64, n)
    if _sparse_ok(concat_records(indexes, SPARSE_INDEX), np.fromiter(map(len, indexes), np.int64, n), n_vals,
                  metric, n_metrics, sorted_key) is None:
        return None
    return HpcrunBatch(profiles, cut, cct, order, parent_row)


def _tree_ok(cct: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """:func:`~hpcsa.formats.measurement.hpcrun.tree_rows`'s rules over the CCT records of several profiles
    (``sizes`` nodes each, one after another): (cuts, the rows in (profile, node id) order, each row's parent
    row or -1, the sorted (profile, node id) keys), or None if a file breaks one."""
    n = len(sizes)
    cut = offsets(sizes)
    of_row = np.repeat(np.arange(n, dtype=np.int64), sizes)
    ids = cct["id"].astype(np.int64)
    key = of_row << 32 | ids
    order = np.argsort(key, kind="stable")
    sorted_key = key[order]
    if (ids == 0).any() or (sorted_key[1:] == sorted_key[:-1]).any():
        return None  # node ids must be unique and non-zero
    parents = cct["parent"].astype(np.int64)
    inner = np.flatnonzero(parents != 0)
    wanted = of_row[inner] << 32 | parents[inner]
    where = np.minimum(np.searchsorted(sorted_key, wanted), max(len(key) - 1, 0))
    if len(inner) and not (sorted_key[where] == wanted).all():
        return None  # a parent that is not in the tree
    parent_row = np.full(len(key), -1, np.int64)
    if len(inner):
        parent_pos = order[where]
        if (parent_pos >= inner).any():
            return None  # a child before its parent
        parent_row[inner] = parent_pos
    return cut, order, parent_row, sorted_key


def _sparse_ok(index: np.ndarray, n_index: np.ndarray, n_vals: np.ndarray, metric: np.ndarray,
               n_metrics: np.ndarray, sorted_key: np.ndarray) -> np.ndarray | None:
    """:func:`~hpcsa.formats.measurement.hpcrun._check_sparse`'s rules over several profiles' sparse indexes
    (``n_index`` entries each, with their sentinels) and values (``n_vals`` each, naming ``metric`` of
    ``n_metrics`` declared): each index ends with the sentinel at the value count, its starts begin at 0 and
    ascend, every value names a declared metric, and every node with values is in its profile's tree
    (``sorted_key``: the (profile, node id) keys, sorted). Which index entries are not sentinels, or None if a
    file breaks a rule."""
    n = len(n_index)
    last = np.cumsum(n_index) - 1
    starts = index["start"].astype(np.uint64)
    if (index["node"][last] != END_SENTINEL).any() or (starts[last] != n_vals.astype(np.uint64)).any():
        return None
    if (starts[last + 1 - n_index] != 0).any():  # each index's first entry
        return None
    of_entry = np.repeat(np.arange(n, dtype=np.int64), n_index)
    same = of_entry[1:] == of_entry[:-1]
    if (np.diff(starts.astype(np.int64))[same] < 0).any():
        return None
    if n_vals.any() and (metric.astype(np.int64) >= np.repeat(n_metrics, n_vals)).any():
        return None
    entries = np.ones(len(index), bool)
    entries[last] = False
    if entries.any():
        wanted = of_entry[entries] << 32 | index["node"][entries].astype(np.int64)
        if not len(sorted_key):
            return None
        where = np.minimum(np.searchsorted(sorted_key, wanted), len(sorted_key) - 1)
        if not (sorted_key[where] == wanted).all():
            return None
    return entries


# -- a group of profiles as columns (what an aggregation needs of each) -----------------------------------


@dataclass
class HpcrunGroup:
    """Profiles read together for an aggregation, as columns, with no object per profile: profile ``k``'s
    CCT rows are ``cut[k]:cut[k + 1]`` of ``cct`` (``order``, ``parent``: as :class:`HpcrunBatch`'s), its
    values ``vcut[k]:vcut[k + 1]``, its sparse index entries (without the sentinel) ``icut[k]:icut[k + 1]``,
    its identifier tuple ``tcut[k]:tcut[k + 1]`` of ``id_rows``. The load maps, metric tables and identifier
    dictionaries are the distinct ones (as parsed once per distinct section), each profile's by index; of
    the header, the two fields an aggregation uses."""

    cut: np.ndarray
    cct: np.ndarray
    order: np.ndarray
    parent: np.ndarray
    vcut: np.ndarray
    values: np.ndarray
    icut: np.ndarray
    index: np.ndarray
    tcut: np.ndarray
    id_rows: np.ndarray
    loadmaps: list[tuple[LoadModule, ...]]
    loadmap: np.ndarray       # int32 per profile
    metric_tables: list[tuple[MetricDesc, ...]]
    metrics: np.ndarray       # int32 per profile
    id_names: list[tuple[tuple[int, str], ...]]
    names: np.ndarray         # int32 per profile
    disorder: np.ndarray      # int64 per profile: the header's trace-disorder (0 where absent or empty)
    programs: list[str]       # per profile: the header's program-name ("" where absent)

    def __len__(self) -> int:
        return len(self.cut) - 1


_QI = struct.Struct(">QI")
_Q = struct.Struct(">Q")
_H = struct.Struct(">H")
_I = struct.Struct(">I")
_PROGRAM, _DISORDER = b"program-name", b"trace-disorder"


def read_hpcrun_group(paths: Sequence[str]) -> HpcrunGroup | None:
    """``paths`` read as one group (values included), or None where a file is not plainly right or the group
    breaks a rule of the reader of one file; the caller then reads them with :func:`read_hpcrun_batch` or
    one by one, which give the refusal. Equal to what :func:`read_hpcrun_batch` gives of the same files."""
    datas: list[bytes] = []
    spans: list[tuple[int, ...]] = []
    disorder: list[int] = []
    programs: list[str] = []
    tables: dict[int, int] = {}
    metric_tables: list[tuple[MetricDesc, ...]] = []
    loadmaps: list[tuple[LoadModule, ...]] = []
    lmaps: dict[int, int] = {}
    names: list[tuple[tuple[int, str], ...]] = []
    nmaps: dict[int, int] = {}
    which: list[tuple[int, int, int]] = []
    base = 0
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            size = os.fstat(fd).st_size
            data = os.read(fd, size)
        except OSError:
            return None
        finally:
            os.close(fd)
        parts = _cut_columns(data, path)
        if parts is None or len(data) != size:
            return None
        at, sizes, loadmap, metrics, id_names, program, dis = parts
        spans.append(tuple(base + x for x in at) + sizes)
        base += len(data)
        datas.append(data)
        which.append((lmaps.setdefault(id(loadmap), len(lmaps)), tables.setdefault(id(metrics), len(tables)),
                      nmaps.setdefault(id(id_names), len(nmaps))))
        if which[-1][0] == len(loadmaps):
            loadmaps.append(loadmap)
        if which[-1][1] == len(metric_tables):
            metric_tables.append(metrics)
        if which[-1][2] == len(names):
            names.append(id_names)
        disorder.append(dis)
        programs.append(program)
    n = len(datas)
    # (cct at, ids at, values at, index at; n cct, n ids, n values, n index entries with the sentinel)
    cols = np.array(spans, np.int64).reshape(n, 8)
    buf = np.frombuffer(b"".join(datas), np.uint8)
    counts = cols[:, 4:]
    got = [_gather(buf, cols[:, j], counts[:, j], dtype)
           for j, dtype in enumerate((CCT_NODE, ID_ELEMENT, SPARSE_VALUE, SPARSE_INDEX))]
    cct, id_rows, values, index = got
    idx = np.array(which, np.int32).reshape(n, 3)
    group = _checked_group(cct, counts, values, index, metric_tables, idx[:, 1])
    if group is None:
        return None
    cut, order, parent, icut, inner = group
    return HpcrunGroup(cut, cct, order, parent, offsets(counts[:, 2]), values, icut, index[inner],
                       offsets(counts[:, 1]), id_rows, loadmaps, idx[:, 0].copy(), metric_tables, idx[:, 1].copy(),
                       names, idx[:, 2].copy(), np.array(disorder, np.int64), programs)


def _gather(buf: np.ndarray, at: np.ndarray, counts: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """The records of ``dtype``, ``counts`` of them at byte offset ``at`` of ``buf`` for each file, one file's
    after the other (one fancy index for all)."""
    size = dtype.itemsize
    counts = np.asarray(counts, np.int64)
    total = int(counts.sum())
    if not total:
        return np.zeros(0, dtype)
    # each record's byte offset (one index per record, not per byte)
    first = np.repeat(np.asarray(at, np.int64) - size * (np.cumsum(counts) - counts), counts)
    return records_at(buf, first + size * np.arange(total), dtype)


def _cut_columns(data: bytes, path: str) -> tuple[tuple[int, ...], tuple[int, ...], tuple[LoadModule, ...],
                                                  tuple[MetricDesc, ...], tuple[tuple[int, str], ...], str,
                                                  int] | None:
    """Where one file's CCT, identifier tuple, values and sparse index are (offsets, then counts), its parsed
    sections, program name and trace disorder; None where a bound is not plainly right (as :func:`_cut`)."""
    f = _footer(data)
    if f is None:
        return None
    fields = _header_fields(data, f[1])
    if fields is None:
        return None
    at, end = f[4], f[5]
    if at + 8 > end:
        return None
    (n_cct,) = _Q.unpack_from(data, at)
    if n_cct * CCT_NODE.itemsize > end - at - 8:
        return None
    cct_at = at + 8
    at, end = f[10], f[11]
    if at + 2 > end:
        return None
    (n_ids,) = _H.unpack_from(data, at)
    at += 2
    if at + n_ids * ID_ELEMENT.itemsize + 12 > end:
        return None
    ids_at = at
    at += n_ids * ID_ELEMENT.itemsize
    n_vals, n_nodes = _QI.unpack_from(data, at)
    at += 12
    if at + n_vals * SPARSE_VALUE.itemsize + (n_nodes + 1) * SPARSE_INDEX.itemsize > end:
        return None
    loadmap = _parse_loadmap(data[f[2]:f[3]], path)
    metrics = _parse_metrics(data[f[6]:f[7]], path)
    id_names = _parse_id_names(data[f[8]:f[9]], path)
    return ((cct_at, ids_at, at, at + n_vals * SPARSE_VALUE.itemsize), (n_cct, n_ids, n_vals, n_nodes + 1),
            loadmap, metrics, id_names, *fields)


def _header_fields(data: bytes, end: int) -> tuple[str, int] | None:
    """The header's program name and trace disorder (the last of each key, as a dict of the header keeps),
    without decoding the other strings; None where a length runs past the header or the disorder is not a
    number (the reader of one file says which)."""
    stop = min(end, len(data))
    if stop < 28:
        return None
    (n,) = _I.unpack_from(data, 24)
    if 8 * n > stop - 28:
        return None
    pos = 28
    program, disorder = b"", b""
    for _ in range(n):
        if pos + 4 > stop:
            return None
        (size,) = _I.unpack_from(data, pos)
        key_at = pos + 4
        pos = key_at + size
        if pos + 4 > stop:
            return None
        (vsize,) = _I.unpack_from(data, pos)
        value_at = pos + 4
        pos = value_at + vsize
        if pos > stop:
            return None
        if size == 12 and data[key_at:key_at + 12] == _PROGRAM:
            program = data[value_at:pos]
        elif size == 14 and data[key_at:key_at + 14] == _DISORDER:
            disorder = data[value_at:pos]
    try:
        return program.decode("utf-8", "surrogateescape"), int(disorder or b"0")
    except ValueError:
        return None


def _checked_group(cct: np.ndarray, counts: np.ndarray, values: np.ndarray, index: np.ndarray,
                   metric_tables: list[tuple[MetricDesc, ...]], table: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """:func:`_checked`'s rules over a group's columns: (CCT cuts, order, parent rows, index cuts without the
    sentinels, which index entries are not sentinels), or None if a file breaks one."""
    tree = _tree_ok(cct, counts[:, 0])
    if tree is None:
        return None
    cut, order, parent_row, sorted_key = tree
    n_index = counts[:, 3]
    n_metrics = np.array([len(t) for t in metric_tables], np.int64)[table]
    entries = _sparse_ok(index, n_index, counts[:, 2], values["metric"], n_metrics, sorted_key)
    if entries is None:
        return None
    return cut, order, parent_row, offsets(n_index - 1), entries


def group_of(profiles: Sequence[HpcrunProfile], rows: Sequence[tuple[np.ndarray, np.ndarray]]) -> HpcrunGroup:
    """The profiles read one by one (with the tree rows :func:`~hpcsa.formats.measurement.hpcrun.read_hpcrun_tree` gave), as a group: the
    columns :func:`read_hpcrun_group` gives of the same files."""
    n = len(profiles)
    cut = offsets([len(p.cct) for p in profiles])
    order = np.concatenate([o + c for (o, _), c in zip(rows, cut.tolist(), strict=False)]) if n else cut[:0]
    parent = np.concatenate([np.where(r >= 0, r + c, -1) for (_, r), c in zip(rows, cut.tolist(), strict=False)]
                            ) if n else cut[:0]
    loadmaps: list[tuple[LoadModule, ...]] = []
    tables: list[tuple[MetricDesc, ...]] = []
    names: list[tuple[tuple[int, str], ...]] = []
    which = np.zeros((n, 3), np.int32)
    seen: tuple[dict[tuple[object, ...], int], ...] = ({}, {}, {})
    outs: tuple[list[tuple[object, ...]], ...] = (loadmaps, tables, names)  # type: ignore[assignment]  # lists are invariant: three element types, one loop
    for k, p in enumerate(profiles):
        for j, part in enumerate((tuple(p.loadmap), tuple(p.metrics), tuple(p.id_names))):
            out = outs[j]
            key = tuple(map(id, part))
            which[k, j] = seen[j].setdefault(key, len(out))
            if which[k, j] == len(out):
                out.append(part)
    disorder = np.array([int(p.header.get("trace-disorder", "0") or 0) for p in profiles], np.int64)
    return HpcrunGroup(cut, concat_records([p.cct for p in profiles], CCT_NODE), order, parent,
                       offsets([len(p.values) for p in profiles]), concat_records([p.values for p in profiles], SPARSE_VALUE),
                       offsets([len(p.index) for p in profiles]), concat_records([p.index for p in profiles], SPARSE_INDEX),
                       offsets([len(p.id_tuple) for p in profiles]),
                       concat_records([p.id_tuple for p in profiles], ID_ELEMENT), loadmaps, which[:, 0].copy(), tables,
                       which[:, 1].copy(), names, which[:, 2].copy(), disorder,
                       [p.header.get("program-name", "") for p in profiles])
