"""hpcrun's sparse measurement file, ``.hpcrun`` version 04.00 (big-endian).

One file holds one thread's (or GPU stream's) calling-context tree and its
non-zero metric values. Sections start on 1024-byte boundaries and are found
through the 112-byte footer at the end of the file, never by scanning. The
fixed-size records (CCT nodes, sparse values, the context index, identifier
tuples, the footer, the metric flags) are declared once below as layouts used
by both :func:`read_hpcrun` and :func:`write_hpcrun`.
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Callable, Sequence
from dataclasses import field
from typing import TypeVar

import numpy as np

from hpcsa.core.binfmt import Blob, Builder, Cursor, align, field_names, layout, records
from hpcsa.core.dataclass import dataclass
from hpcsa.core.errors import FormatError
from hpcsa.core.outputs import atomic_file

MAGIC = b"HPCRUN-profile____"
VERSION = "04.00"
SECTION_ALIGN = 1024
FOOTER_MAGIC = 0x48504352554E736D  # "HPCRUNsm"
END_SENTINEL = 0x656E6421  # "end!": the last entry of the sparse context index

Parsed = TypeVar("Parsed")

# -- layouts ------------------------------------------------------------------------------------------

#: One CCT node: persistent id, parent id (0 = root), load-module id (0 = placeholder),
#: normalized address or placeholder code, flags (bit 0: unwound).
CCT_NODE = layout(">", 19, [("id", 0, "u4"), ("parent", 4, "u4"), ("lm_id", 8, "u2"),
                            ("lm_ip", 10, "u8"), ("flags", 18, "u1")])
#: One non-zero value: the raw 8 bytes (u64 or f64 by the metric's format) and a 0-based metric id.
SPARSE_VALUE = layout(">", 10, [("bits", 0, "u8"), ("metric", 8, "u2")])
#: Where a node's values start in the value array (pre-order of the CCT, then an "end!" sentinel).
SPARSE_INDEX = layout(">", 12, [("node", 0, "u4"), ("start", 4, "u8")])
#: One element of the file's identifier tuple; the top two bits of ``kind`` say how the ids are used.
ID_ELEMENT = layout(">", 18, [("kind", 0, "u2"), ("physical", 2, "u8"), ("logical", 10, "u8")])
#: The metric flags are written as raw memory: ``partner`` is little-endian, unlike the rest.
METRIC_FLAGS = layout("<", 16, [("type", 0, "u1"), ("val_type", 1, "u1"), ("val_fmt", 2, "u1"),
                                ("move2proc", 3, "u1"), ("partner", 4, "u2"), ("show", 6, "u1"),
                                ("show_percent", 7, "u1"), ("reserved", 8, "V8")])
FOOTER_FIELDS = ("hdr_start", "hdr_end", "loadmap_start", "loadmap_end", "cct_start", "cct_end",
                 "met_tbl_start", "met_tbl_end", "idtpl_dxnry_start", "idtpl_dxnry_end", "sm_start",
                 "sm_end", "footer_start", "magic")
FOOTER = layout(">", 112, [(name, 8 * i, "u8") for i, name in enumerate(FOOTER_FIELDS)])

UNWOUND = 0x1
LOADMAP_ANALYZE = 0x1

# Metric flag values (hpcrun-fmt.h).
METRIC_TYPE = {1: "raw", 2: "final", 3: "derived"}
VAL_TYPE = {0: "none", 1: "inclusive", 2: "exclusive"}
VAL_FMT_INT, VAL_FMT_REAL = 1, 2
#: A metric's ``show`` code (which columns hpcprof makes of it).
SHOW_HIDE, SHOW_SHOW, SHOW_INCLUSIVE, SHOW_EXCLUSIVE, SHOW_INVISIBLE = range(5)
SHOW = {SHOW_HIDE: "hide", SHOW_SHOW: "show", SHOW_INCLUSIVE: "show-inclusive", SHOW_EXCLUSIVE: "show-exclusive",
        SHOW_INVISIBLE: "invisible"}

# Identifier-tuple kinds and interpretations (id-tuple.h).
ID_KINDS = {0: "SUMMARY", 1: "NODE", 2: "RANK", 3: "THREAD", 4: "GPUDEVICE", 5: "GPUCONTEXT",
            6: "GPUSTREAM", 7: "CORE"}
ID_INTERPRET = {0: "BOTH", 1: "LOGIC_LOCAL", 2: "LOGIC_GLOBAL", 3: "LOGIC_ONLY"}
ID_KIND_MASK = 0x3FFF
ID_INTERPRET_SHIFT = 14  # the interpretation is the kind field's two high bits
ID_SUMMARY, ID_NODE, ID_RANK, ID_THREAD, ID_GPUDEVICE, ID_GPUCONTEXT, ID_GPUSTREAM, ID_CORE = range(8)
BOTH_VALID, LOGIC_LOCAL, LOGIC_GLOBAL, LOGIC_ONLY = range(4)


def id_kind(kind: int, interpret: int) -> int:
    """An identifier element's ``kind`` field: the kind with its interpretation in the high bits."""
    return interpret << ID_INTERPRET_SHIFT | kind


#: The element kinds as hpcrun writes them: a node's logical id is generated per parent
#: (LOGIC_LOCAL); ranks, threads, GPU contexts and streams carry logical ids only.
NODE_ELEMENT = id_kind(ID_NODE, LOGIC_LOCAL)
RANK_ELEMENT, THREAD_ELEMENT, GPUCONTEXT_ELEMENT, GPUSTREAM_ELEMENT = (
    id_kind(k, LOGIC_ONLY) for k in (ID_RANK, ID_THREAD, ID_GPUCONTEXT, ID_GPUSTREAM))

#: The thread number of a rank's first GPU stream: hpcrun writes each stream as a pseudo-thread, 500, 501, ...
FIRST_STREAM_THREAD = 500

HEADER_KEYS = ("program-name", "program-path", "env-path", "job-id", "mpi-rank", "thread-id", "host-id",
               "process-id", "trace-min-time", "trace-max-time", "trace-disorder")


def placeholder_code(text: str) -> int:
    """The ``lm_ip`` of a placeholder: 8 ASCII bytes packed big-endian (e.g. ``"GPUKernl"``)."""
    raw = text.encode("ascii")
    if len(raw) != 8:
        raise ValueError(f"placeholder codes are 8 characters: {text!r}")
    return int.from_bytes(raw, "big")


def placeholder_text(code: int) -> str | None:
    """The 8-character placeholder name of a code, or None if it is not printable ASCII."""
    raw = int(code).to_bytes(8, "big")
    return raw.decode("ascii") if all(32 <= b < 127 for b in raw) else None


@dataclass(frozen=True)
class LoadModule:
    """One entry of a profile's load map: the module's id in its call paths, its path and hpcrun's flags."""

    id: int
    path: str
    flags: int = 0


@dataclass(frozen=True)
class MetricDesc:
    """One entry of the metric table; its position is the 0-based metric id.

    Frozen: readers share one parsed table among all the profiles of a run.
    """

    name: str
    description: str = ""
    type: int = 1
    val_type: int = 2
    val_fmt: int = VAL_FMT_REAL
    move2proc: int = 0
    partner: int = 0
    show: int = 1
    show_percent: int = 1
    reserved: bytes = bytes(8)
    period: int = 1
    formula: str = ""
    format: str = ""
    is_frequency: int = 0
    is_multiplexed: int = 0
    threshold_mean: float = 0.0
    num_samples: int = 0

    @property
    def is_int(self) -> bool:
        return self.val_fmt == VAL_FMT_INT


@dataclass
class HpcrunProfile:
    """One ``.hpcrun`` file in memory.

    ``cct`` is in file order (parents before children). ``values`` holds every
    non-zero value; ``index`` maps nodes to the start of their values, in CCT
    pre-order, without the trailing sentinel.
    """

    header: dict[str, str]
    loadmap: list[LoadModule]
    cct: np.ndarray
    metrics: list[MetricDesc]
    id_names: list[tuple[int, str]]
    id_tuple: np.ndarray
    values: np.ndarray
    index: np.ndarray
    version: str = VERSION
    path: str | None = field(default=None, compare=False)

    # -- derived views (vectorized) --

    def value_nodes(self) -> np.ndarray:
        """The CCT node id of every value, aligned with ``values``."""
        starts = self.index["start"].astype(np.int64)
        counts = np.diff(np.append(starts, len(self.values)))
        return np.repeat(self.index["node"].astype(np.uint32), counts)

    def value_floats(self) -> np.ndarray:
        """Every value as float64, read as an integer or a real by its metric's format (period not applied)."""
        bits = self.values["bits"].astype(np.uint64)
        metric = self.values["metric"].astype(np.intp)
        is_int = np.array([m.is_int for m in self.metrics] or [False], dtype=bool)
        if len(metric) and int(metric.max()) >= len(self.metrics):
            raise FormatError(self.path, f"a value names metric {int(metric.max())} but the file "
                              f"declares {len(self.metrics)} metrics")
        as_real = bits.view(np.float64)
        return np.where(is_int[metric] if len(metric) else np.zeros(0, bool), bits.astype(np.float64), as_real)

    def periods(self) -> np.ndarray:
        return np.array([m.period for m in self.metrics], dtype=np.float64)

    def id_tuple_text(self) -> str:
        parts = []
        for kind, phys, logical in zip(self.id_tuple["kind"], self.id_tuple["physical"],
                                       self.id_tuple["logical"], strict=True):
            name = ID_KINDS.get(int(kind) & ID_KIND_MASK, f"KIND{int(kind) & ID_KIND_MASK}")
            interp = int(kind) >> ID_INTERPRET_SHIFT
            parts.append(f"{name} {int(logical)}" if interp == LOGIC_ONLY else f"{name} {int(logical)} [{int(phys):#x}]")
        return " / ".join(parts)


# -- reading ------------------------------------------------------------------------------------------


def read_footer(blob: Blob) -> np.void:
    if len(blob) < 24 + 112:
        raise blob.fail(f"too short for an .hpcrun file ({len(blob)} bytes)")
    if blob.bytes(0, 18, "magic") != MAGIC:
        raise blob.fail("not an .hpcrun measurement file (bad magic)")
    version = blob.bytes(18, 5, "version").decode("ascii", "replace")
    if version != VERSION:
        raise blob.fail(f"unsupported .hpcrun version {version!r} (hpcsa reads {VERSION}, the sparse format)")
    if blob.bytes(23, 1, "endianness") != b"b":
        raise blob.fail("unsupported .hpcrun byte order (expected big-endian 'b')")
    footer = blob.record(FOOTER, len(blob) - 112, "footer")
    if int(footer["magic"]) != FOOTER_MAGIC:
        raise blob.fail("footer magic missing: the file is truncated or was not finished by hpcrun")
    bounds = [int(footer[name]) for name in FOOTER_FIELDS[:-1]]
    if bounds[-1] + 112 != len(blob):
        raise blob.fail(f"footer says it starts at {bounds[-1]:#x}, but it is at {len(blob) - 112:#x}")
    for i in range(0, 12, 2):
        start, end = bounds[i], bounds[i + 1]
        if not (0 <= start <= end <= bounds[-1]):
            raise blob.fail(f"footer section bounds {FOOTER_FIELDS[i]}={start:#x} "
                            f"{FOOTER_FIELDS[i + 1]}={end:#x} are inconsistent")
    return footer


def read_hpcrun(path: str | os.PathLike[str], *, values: bool = True) -> HpcrunProfile:
    """Read a ``.hpcrun`` file. With ``values=False`` the sparse values are skipped (empty arrays)."""
    return _read(path, values)[0]


def _parse_header(blob: Blob, end: int) -> dict[str, str]:
    """The header's (key, value) strings: sliced directly while every length is in bounds (thousands of
    profiles, some twenty strings each), else read again by the bounds-checked cursor, which names the
    problem."""
    strings = _header_strings(blob.data, min(end, len(blob)))
    if strings is not None:
        return dict(zip(strings[0::2], strings[1::2], strict=True))
    cur = Cursor(blob, 24, end, ">", "header")
    n = cur.count(4, 8, "header pair count")
    header = {}
    for _ in range(n):
        key = cur.lstring("header key")
        header[key] = cur.lstring("header value")
    return header


_U32 = struct.Struct(">I").unpack_from


def _header_strings(data: bytes | mmap.mmap, stop: int) -> list[str] | None:
    """The header's strings, key and value after key, or None where a length runs past ``stop``."""
    if stop < 28:
        return None
    (n,) = _U32(data, 24)
    if 8 * n > stop - 28:
        return None
    pos, strings = 28, []
    for _ in range(2 * n):
        if pos + 4 > stop:
            return None
        (size,) = _U32(data, pos)
        pos += 4
        if pos + size > stop:
            return None
        strings.append(data[pos:pos + size].decode("utf-8", "surrogateescape"))
        pos += size
    return strings


def read_hpcrun_loadmap(path: str | os.PathLike[str]) -> tuple[LoadModule, ...]:
    """Only a ``.hpcrun`` file's load map (the header and footer checked): what structure recovery of a
    measurement needs of each of its thousands of profiles, without their trees and values."""
    blob = Blob(path)
    return _parse_loadmap(_section_bytes(blob, read_footer(blob), "loadmap"), blob.path)


def read_hpcrun_tree(path: str | os.PathLike[str]) -> tuple[HpcrunProfile, np.ndarray, np.ndarray]:
    """Read a ``.hpcrun`` file (values included) and return with it what the tree checks found: the rows
    of the CCT in node-id order, and each node's parent row (-1 at a root), for readers that index the
    tree by row (an aggregation's first reading) without sorting it again."""
    return _read(path, True)


def _read(path: str | os.PathLike[str], values: bool) -> tuple[HpcrunProfile, np.ndarray, np.ndarray]:
    blob = Blob(path)
    footer = read_footer(blob)

    header = _parse_header(blob, int(footer["hdr_end"]))
    loadmap = _parse_loadmap(_section_bytes(blob, footer, "loadmap"), blob.path)
    cur = Cursor(blob, int(footer["cct_start"]), int(footer["cct_end"]), ">", "CCT")
    n = cur.count(8, CCT_NODE.itemsize, "CCT node count")
    cct = cur.array(CCT_NODE, n, "CCT nodes")
    order, parent_row = tree_rows(blob, cct)
    metrics = _parse_metrics(_section_bytes(blob, footer, "met_tbl"), blob.path)
    id_names = _parse_id_names(_section_bytes(blob, footer, "idtpl_dxnry"), blob.path)

    cur = Cursor(blob, int(footer["sm_start"]), int(footer["sm_end"]), ">", "sparse metrics")
    n = cur.count(2, ID_ELEMENT.itemsize, "identifier tuple length")
    id_tuple = cur.array(ID_ELEMENT, n, "identifier tuple")
    if values:
        nvals = cur.count(8, SPARSE_VALUE.itemsize, "value count")
        nnodes = cur.count(4, SPARSE_INDEX.itemsize, "non-zero node count")
        vals = cur.array(SPARSE_VALUE, nvals, "values")
        index = cur.array(SPARSE_INDEX, nnodes + 1, "context index")
        _check_sparse(blob, cct, vals, index, metrics, cct["id"][order].astype(np.int64))
        index = index[:-1]
    else:
        vals = np.zeros(0, SPARSE_VALUE)
        index = np.zeros(0, SPARSE_INDEX)

    return HpcrunProfile(header=header, loadmap=list(loadmap), cct=cct, metrics=list(metrics),
                         id_names=list(id_names),
                         id_tuple=id_tuple, values=vals, index=index,
                         version=VERSION, path=blob.path), order, parent_row


# The load map, metric table and identifier dictionary are the same bytes in every profile of a run
# (thousands of files), so each distinct section is parsed once; the parse is the dominant per-file cost
# otherwise (93 GPU metrics: ~2 ms a file).

def _section_bytes(blob: Blob, footer: np.void, name: str) -> bytes:
    start, end = int(footer[f"{name}_start"]), int(footer[f"{name}_end"])
    return blob.bytes(start, end - start, name)


def _memo_blob(raw: bytes, path: str) -> Blob:
    """A Blob over already-read section bytes, reporting problems against the file's path."""
    blob = Blob.__new__(Blob)
    blob.path, blob.data = path, raw
    return blob


def _cached(parse: Callable[[Blob], Parsed]) -> Callable[[bytes, str], Parsed]:
    cache: dict[bytes, Parsed] = {}

    def wrapper(raw: bytes, path: str) -> Parsed:
        hit = cache.get(raw)
        if hit is None:
            hit = parse(_memo_blob(raw, path))
            if len(cache) >= 64:
                cache.pop(next(iter(cache)))
            cache[raw] = hit
        return hit
    return wrapper


@_cached
def _parse_loadmap(blob: Blob) -> tuple[LoadModule, ...]:
    cur = Cursor(blob, 0, None, ">", "load map")
    n = cur.count(4, 14, "load module count")
    out = []
    seen: set[int] = set()
    for _ in range(n):
        lm_id = cur.u16("load module id")
        if lm_id == 0:  # a CCT node's module 0 is a placeholder (hpcrun's HPCRUN_FMT_LMId_NULL)
            raise cur.fail("load module id 0 is reserved for placeholders")
        if lm_id in seen:
            raise cur.fail(f"load module id {lm_id} appears twice")
        seen.add(lm_id)
        lm_path = cur.lstring("load module path")
        out.append(LoadModule(lm_id, lm_path, cur.u64("load module flags")))
    return tuple(out)


@_cached
def _parse_metrics(blob: Blob) -> tuple[MetricDesc, ...]:
    cur = Cursor(blob, 0, None, ">", "metric table")
    n = cur.count(4, 40, "metric count")
    out = []
    for _ in range(n):
        name = cur.lstring("metric name")
        desc = cur.lstring("metric description")
        flags = np.frombuffer(cur.take(16, "metric flags"), dtype=METRIC_FLAGS)[0]
        out.append(MetricDesc(
            name=name, description=desc, type=int(flags["type"]), val_type=int(flags["val_type"]),
            val_fmt=int(flags["val_fmt"]), move2proc=int(flags["move2proc"]), partner=int(flags["partner"]),
            show=int(flags["show"]), show_percent=int(flags["show_percent"]), reserved=bytes(flags["reserved"]),
            period=cur.u64("metric period"), formula=cur.lstring("metric formula"),
            format=cur.lstring("metric format"), is_frequency=cur.u16("is_frequency_metric"),
            is_multiplexed=cur.u16("is_multiplexed"), threshold_mean=cur.f64("threshold_mean"),
            num_samples=cur.u64("num_samples")))
    return tuple(out)


@_cached
def _parse_id_names(blob: Blob) -> tuple[tuple[int, str], ...]:
    cur = Cursor(blob, 0, None, ">", "identifier dictionary")
    n = cur.count(2, 6, "identifier kind count")
    return tuple((cur.u16("identifier kind"), cur.lstring("identifier name")) for _ in range(n))


def tree_rows(blob: Blob, cct: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Check that node ids are unique and non-zero and that every parent (0 = root) precedes its children,
    as hpcprof requires; return the rows in node-id order and each node's parent row (-1 at a root)."""
    ids = cct["id"].astype(np.int64)
    if len(ids) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    if sorted_ids[0] == 0 or np.any(sorted_ids[1:] == sorted_ids[:-1]):
        raise blob.fail("CCT: node ids must be unique and non-zero")
    parents = cct["parent"].astype(np.int64)
    inner = parents != 0
    where = np.searchsorted(sorted_ids, parents[inner])
    where = np.minimum(where, len(ids) - 1)
    found = sorted_ids[where] == parents[inner]
    if not np.all(found):
        raise blob.fail(f"CCT: node {int(ids[inner][~found][0])} has a parent that is not in the tree")
    parent_pos = order[where]
    own_pos = np.flatnonzero(inner)
    if np.any(parent_pos >= own_pos):
        bad = int(ids[own_pos[parent_pos >= own_pos][0]])
        raise blob.fail(f"CCT: node {bad} appears before its parent (records must be parent-first)")
    parent_row = np.full(len(ids), -1, np.int64)
    parent_row[own_pos] = parent_pos
    return order, parent_row


def _check_sparse(blob: Blob, cct: np.ndarray, vals: np.ndarray, index: np.ndarray,
                  metrics: Sequence[MetricDesc], sorted_ids: np.ndarray) -> None:
    """Refuse value groups that would send a later stage out of bounds (``sorted_ids``: the CCT's ids, sorted)."""
    if int(index["node"][-1]) != END_SENTINEL or int(index["start"][-1]) != len(vals):
        raise blob.fail("sparse metrics: the context index does not end with the 'end!' sentinel")
    if int(index["start"][0]) != 0:
        raise blob.fail(f"sparse metrics: the context index starts at value {int(index['start'][0])}, not 0 "
                        "(values that belong to no context)")
    starts = index["start"].astype(np.uint64)
    if len(starts) > 1 and np.any(np.diff(starts.astype(np.int64)) < 0):
        raise blob.fail("sparse metrics: context index start positions are not ascending")
    if len(vals) and int(vals["metric"].max()) >= len(metrics):
        raise blob.fail(f"sparse metrics: a value names metric {int(vals['metric'].max())}, but only "
                        f"{len(metrics)} metrics are declared")
    if len(index) > 1:
        nodes = index["node"][:-1].astype(np.int64)
        pos = np.minimum(np.searchsorted(sorted_ids, nodes), max(len(sorted_ids) - 1, 0))
        known = sorted_ids[pos] == nodes if len(sorted_ids) else np.zeros(len(nodes), bool)
        if not np.all(known):
            bad = int(nodes[~known][0])
            raise blob.fail(f"sparse metrics: values for CCT node {bad}, which is not in the CCT")


# -- writing ------------------------------------------------------------------------------------------


def encode_hpcrun(prof: HpcrunProfile) -> bytes:
    """The bytes of a ``.hpcrun`` file, laid out as hpcrun lays it out (1024-aligned sections)."""
    out = Builder(">")
    bounds: list[int] = []

    def section(body: Builder) -> None:
        out.pad_to(SECTION_ALIGN) if len(out) else None
        bounds.append(len(out))
        out.raw(body.buf)
        bounds.append(len(out))

    head = Builder(">").raw(MAGIC).raw(prof.version.encode("ascii")).raw(b"b")
    head.u32(len(prof.header))
    for key, value in prof.header.items():
        head.lstring(key).lstring(value)
    section(head)

    body = Builder(">").u32(len(prof.loadmap))
    for lm in prof.loadmap:
        body.u16(lm.id).lstring(lm.path).u64(lm.flags)
    section(body)

    section(Builder(">").u64(len(prof.cct)).array(_as(prof.cct, CCT_NODE)))

    body = Builder(">").u32(len(prof.metrics))
    for m in prof.metrics:
        flags = records(METRIC_FLAGS, 1, type=m.type, val_type=m.val_type, val_fmt=m.val_fmt,
                        move2proc=m.move2proc, partner=m.partner, show=m.show, show_percent=m.show_percent)
        flags["reserved"] = np.void(bytes(m.reserved).ljust(8, b"\0")[:8])
        body.lstring(m.name).lstring(m.description).array(flags).u64(m.period)
        body.lstring(m.formula).lstring(m.format).u16(m.is_frequency).u16(m.is_multiplexed)
        body.f64(m.threshold_mean).u64(m.num_samples)
    section(body)

    body = Builder(">").u16(len(prof.id_names))
    for kind, name in prof.id_names:
        body.u16(kind).lstring(name)
    section(body)

    sentinel = records(SPARSE_INDEX, 1, node=END_SENTINEL, start=len(prof.values))
    body = Builder(">").u16(len(prof.id_tuple)).array(_as(prof.id_tuple, ID_ELEMENT))
    body.u64(len(prof.values)).u32(len(prof.index))
    body.array(_as(prof.values, SPARSE_VALUE)).array(_as(prof.index, SPARSE_INDEX)).array(sentinel)
    section(body)

    out.pad_to(SECTION_ALIGN)
    footer = records(FOOTER, 1, **dict(zip(FOOTER_FIELDS[:-1], bounds + [len(out)], strict=True)),
                     magic=FOOTER_MAGIC)
    out.array(footer)
    return bytes(out.buf)


def write_hpcrun(path: str | os.PathLike[str], prof: HpcrunProfile) -> None:
    """Write ``prof`` as a ``.hpcrun`` file at ``path`` (:func:`encode_hpcrun`'s bytes, replaced whole)."""
    data = encode_hpcrun(prof)
    with atomic_file(path) as fh:
        fh.write(data)


def _as(arr: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``arr`` re-laid out in the on-disk dtype (copying field by field when the layouts differ)."""
    if arr.dtype == dtype:
        return arr
    out = np.zeros(len(arr), dtype=dtype)
    for name in field_names(dtype):
        out[name] = arr[name]
    return out


def pack_values(node_ids: np.ndarray, metric_ids: np.ndarray, values: np.ndarray,
                metrics: list[MetricDesc], cct_order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sparse value and index arrays from (node, metric, value) triples, as hpcrun writes them.

    Zeros are dropped; groups follow ``cct_order`` (the CCT's node ids in file order, i.e.
    pre-order); within a node, metrics ascend. Integer-format metrics are stored as u64.
    """
    node_ids = np.asarray(node_ids, dtype=np.uint32)
    metric_ids = np.asarray(metric_ids, dtype=np.uint16)
    values = np.asarray(values, dtype=np.float64)
    keep = values != 0
    node_ids, metric_ids, values = node_ids[keep], metric_ids[keep], values[keep]
    rank = np.empty(int(cct_order.max()) + 1 if len(cct_order) else 1, dtype=np.int64)
    rank[np.asarray(cct_order, dtype=np.int64)] = np.arange(len(cct_order))
    order = np.lexsort((metric_ids, rank[node_ids]))
    node_ids, metric_ids, values = node_ids[order], metric_ids[order], values[order]
    is_int = np.array([m.is_int for m in metrics] or [False], dtype=bool)
    bits = np.where(is_int[metric_ids], np.rint(values).astype(np.uint64), values.view(np.uint64))
    vals = records(SPARSE_VALUE, len(values), bits=bits, metric=metric_ids)
    first = np.ones(len(node_ids), dtype=bool)
    first[1:] = node_ids[1:] != node_ids[:-1]
    starts = np.flatnonzero(first)
    index = records(SPARSE_INDEX, len(starts), node=node_ids[starts], start=starts)
    return vals, index


def default_id_names() -> list[tuple[int, str]]:
    return list(ID_KINDS.items())


def sections(path: str | os.PathLike[str]) -> dict[str, tuple[int, int]]:
    """Section bounds from the footer, for ``hpcsa dump`` and diagnostics."""
    blob = Blob(path)
    footer = read_footer(blob)
    names = ("header", "load map", "CCT", "metric table", "identifier dictionary", "sparse metrics")
    return {name: (int(footer[FOOTER_FIELDS[2 * i]]), int(footer[FOOTER_FIELDS[2 * i + 1]]))
            for i, name in enumerate(names)}


__all__ = [
    "CCT_NODE", "SPARSE_VALUE", "SPARSE_INDEX", "ID_ELEMENT", "METRIC_FLAGS", "FOOTER", "HpcrunProfile",
    "LoadModule", "MetricDesc", "read_hpcrun", "write_hpcrun", "encode_hpcrun", "pack_values",
    "placeholder_code", "placeholder_text", "align",
]
