"""Phase 1 of the aggregation, per profile: what class 2 needs to know about it.

A profile's reading (through the ``.hpcrun`` and ``.hpctrace`` readers of
:mod:`hpcsa.ingest`, with their checks; a group of profiles at once, as one
batch, :mod:`hpcsa.formats.measurement.hpcrun_batch`) reports its calling-context tree as raw
nodes (:mod:`rawtree`; GPU samples of binaries with a call graph are
reconstructed first, :mod:`gpu_contexts`), its metric table, identity
(identifier tuple), header and trace size. Reports merge associatively
(:func:`merge`), so they can be combined in any grouping — per worker, per
rank, up a reduction tree — with the same union as the result. Bad input is
refused here, naming the file. What phase 2 needs of a profile is kept in a
scratch directory (:func:`second_reading`, :func:`kept_many`), so each file is
read once.
"""

from __future__ import annotations

import functools
import os
import pickle
import tempfile
from collections.abc import Sequence
from dataclasses import field
from typing import TYPE_CHECKING

import numpy as np

from hpcsa.aggregate.prof import rawtree
from hpcsa.aggregate.prof.gpu_contexts import RECONSTRUCTED, GpuPart, reconstruct_profile
from hpcsa.aggregate.prof.lexical import hashed_name, module_key
from hpcsa.aggregate.prof.profile_table import ProfileFacts, ProfileInput, ProfileTable
from hpcsa.aggregate.prof.unify import NO_ACTIVITY, OUTLINED_RANGE_IDS, PARTIAL, PRIMARY
from hpcsa.core.dataclass import dataclass
from hpcsa.core.errors import FormatError, HpcsaError, OutputError, UnsupportedError
from hpcsa.core.fileio import pwrite_all
from hpcsa.formats.measurement.hpcrun import (
    CCT_NODE,
    SPARSE_INDEX,
    SPARSE_VALUE,
    UNWOUND,
    HpcrunProfile,
    LoadModule,
    MetricDesc,
    read_hpcrun_tree,
    tree_rows,
)
from hpcsa.formats.measurement.hpcrun_batch import HpcrunBatch, read_hpcrun_batch
from hpcsa.formats.measurement.hpctrace import FLAG_DATA_CENTRIC, read_hpctrace_header

if TYPE_CHECKING:
    from hpcsa.gpucct import CallGraph


@dataclass(frozen=True)
class Phase1Env:
    """What every reader of phase 1 needs: the GPU call graphs and the hash seed.

    Call graphs are found by load-module key, or by the content hash in the
    name of a ``gpubins/<md5>.gpubin`` (the same binary recorded elsewhere).
    """

    graphs_by_key: dict[str, CallGraph] = field(default_factory=dict)
    graphs_by_name: dict[str, CallGraph] = field(default_factory=dict)
    seed: int = 0
    #: A private directory where the first reading keeps what the second needs (None: read profiles twice).
    scratch: str | None = None

    def graph_for(self, key: str) -> CallGraph | None:
        g = self.graphs_by_key.get(key)
        if g is None:
            named = hashed_name(key)
            if named is not None:
                g = self.graphs_by_name.get(named[1])
        return g

    @property
    def has_graphs(self) -> bool:
        return bool(self.graphs_by_key or self.graphs_by_name)


@dataclass
class Discovery:
    """What phase 1 learnt from the profiles it read: their raw contexts, facts, metric tables and load maps."""

    raw: rawtree.RawNodes
    profiles: ProfileTable = field(default_factory=lambda: ProfileTable.of([]))  # columns, no object each
    metric_tables: list[tuple[MetricDesc, ...]] = field(default_factory=list)
    id_names: dict[int, str] = field(default_factory=dict)
    loadmaps: list[tuple[LoadModule, ...]] = field(default_factory=list)
    programs: set[str] = field(default_factory=set)  # program names seen (the title: the first, sorted)


def _table_key(descs: tuple[MetricDesc, ...]) -> tuple[object, ...]:
    return tuple((m.name, m.description, m.formula, m.show, m.val_fmt, m.move2proc, m.period, m.show_percent,
                  m.format) for m in descs)


def merge(parts: list[Discovery]) -> Discovery:
    """The union of reports (associative; metric tables deduplicated)."""
    tables: list[tuple[MetricDesc, ...]] = []
    index: dict[tuple[object, ...], int] = {}
    maps: list[tuple[LoadModule, ...]] = []
    map_index: dict[tuple[object, ...], int] = {}
    profiles: list[ProfileTable] = []
    names: dict[int, str] = {}
    for p in parts:
        remap = []
        for t in p.metric_tables:
            k = _table_key(t)
            if k not in index:
                index[k] = len(tables)
                tables.append(t)
            remap.append(index[k])
        lremap = []
        for lm in p.loadmaps:
            key = tuple((e.id, e.path, e.flags) for e in lm)
            if key not in map_index:
                map_index[key] = len(maps)
                maps.append(lm)
            lremap.append(map_index[key])
        profiles.append(p.profiles.remapped(remap, lremap))
        names.update(p.id_names)
    programs = set().union(*(p.programs for p in parts)) if parts else set()
    return Discovery(rawtree.union([p.raw for p in parts]), ProfileTable.concat(profiles), tables, names, maps,
                     programs)


def trace_records(inp: ProfileInput) -> int:
    """Records in a profile's trace (0 without one), checked by the trace reader's own header checks; refuses
    data-centric traces, as hpcprof does. The records themselves are read in phase 2."""
    if inp.trace is None:
        return 0
    flags, count = read_hpctrace_header(inp.trace)
    if flags & FLAG_DATA_CENTRIC:
        raise UnsupportedError(inp.trace, "data-centric traces are not supported (hpcprof refuses them too)")
    return count


@functools.lru_cache(maxsize=1 << 14)
def _module_ref(recorded: str, measdir: str) -> tuple[int, rawtree.ModuleRef]:
    key = module_key(recorded, measdir)
    return rawtree.module_hash(key), rawtree.ModuleRef(key, recorded, measdir)


@dataclass
class NodeIndex:
    """CCT node ids of a profile and where each is (vectorized id -> row lookups)."""

    ids: np.ndarray
    order: np.ndarray  # rows sorted by id

    def rows(self, node_ids: np.ndarray) -> np.ndarray:
        """Row of each id (-1 where the profile has no such node)."""
        sorted_ids = self.ids[self.order]
        pos = np.searchsorted(sorted_ids, node_ids)
        if not len(sorted_ids):
            return np.full(len(node_ids), -1, np.int64)
        pos = np.minimum(pos, len(sorted_ids) - 1)
        return np.where(sorted_ids[pos] == node_ids, self.order[pos], -1)


class _Refusal:
    """Problems found in a profile's tree, reported against its path (what :func:`tree_rows` needs)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def fail(self, problem: str) -> FormatError:
        return FormatError(self.path, problem)


@dataclass
class ProfileFields:
    """A profile's nodes before hashing: CCT rows first, then reconstructed GPU nodes (parent rows, -1 at the
    top), with the node index, the load modules used and the GPU part."""

    parent: np.ndarray
    kind: np.ndarray
    flag: np.ndarray
    module: np.ndarray
    ip: np.ndarray
    modules: dict[int, rawtree.ModuleRef]
    index: NodeIndex
    gpu: GpuPart


@functools.lru_cache(maxsize=256)
def _loadmap_table(loadmap: tuple[LoadModule, ...], measdir: str
                   ) -> tuple[np.ndarray, np.ndarray, dict[int, int], dict[int, rawtree.ModuleRef]]:
    """Load-map ids -> module hashes (0 = placeholders) as a table by id, which ids are known, and the
    modules by hash: computed once per distinct load map (every profile of a run has the same one)."""
    lm_hash: dict[int, int] = {}
    modules: dict[int, rawtree.ModuleRef] = {}
    for entry in loadmap:
        h, ref = _module_ref(entry.path, measdir)
        lm_hash[entry.id] = h
        modules[h] = ref
    table = np.zeros(max([0, *lm_hash]) + 1, np.uint64)
    known = np.zeros(len(table), bool)
    known[0] = True
    for i, h in lm_hash.items():
        table[i], known[i] = h, True
    return table, known, lm_hash, modules


def profile_fields(prof: HpcrunProfile, inp: ProfileInput, env: Phase1Env,
                   rows: tuple[np.ndarray, np.ndarray] | None = None) -> ProfileFields:
    """A profile's nodes, checked (refuses trees hpcprof refuses, and ones it would misread). ``rows``: the
    CCT rows in id order and each node's parent row, as the reader's tree checks found them
    (:func:`hpcsa.formats.measurement.hpcrun.read_hpcrun_tree`); computed here when not given."""
    cct = prof.cct
    path = inp.path
    order, parent = rows if rows is not None else tree_rows(_Refusal(path), cct)
    ids = cct["id"].astype(np.int64)
    n = len(ids)
    index = NodeIndex(ids, order)
    lm = cct["lm_id"].astype(np.int64)
    ip = cct["lm_ip"].astype(np.uint64)
    unwound = (cct["flags"] & UNWOUND) != 0
    table, known, lm_hash, modules = _loadmap_table(tuple(prof.loadmap), inp.measdir)
    unknown = (lm >= len(table)) | ~known[np.minimum(lm, len(table) - 1)] if n else np.zeros(0, bool)
    if unknown.any():
        bad = lm[unknown]
        if np.isin(bad, OUTLINED_RANGE_IDS).any():
            raise UnsupportedError(path, "outlined range trees (range-based PC sampling) are not supported")
        raise FormatError(path, f"a CCT node names load module {int(bad[0])}, which is not in the load map")
    module = table[lm]
    top = parent < 0
    placeholder = lm == 0
    if (top & ~(placeholder & (ip == np.uint64(PRIMARY)))).any():
        raise FormatError(path, "a root of the CCT is not the <primary root> placeholder")
    pr = np.where(top, 0, parent)
    at_global = ~top & placeholder[pr] & (ip[pr] == np.uint64(PRIMARY)) if n else np.zeros(0, bool)
    special = placeholder & ((ip == np.uint64(NO_ACTIVITY)) | (ip == np.uint64(PARTIAL)))
    if (special & ~top & ~at_global).any():
        raise FormatError(path, "<no activity> or <partial root> below a context other than the root")
    if (placeholder & ~unwound & ~top).any():
        raise FormatError(path, "a placeholder CCT node is marked as not unwound")
    graphs = {}
    if env.has_graphs:
        graphs = {h: g for h in set(lm_hash.values()) if (g := env.graph_for(modules[h].key)) is not None}
    gpu = reconstruct_profile(prof, index.rows, lm_hash, graphs) if graphs else GpuPart.empty()
    flag = unwound.astype(np.uint8)
    kind = np.zeros(n, np.uint8)
    if len(gpu.reconstructed_rows):
        flag[gpu.reconstructed_rows] |= RECONSTRUCTED
        has_kids = np.zeros(n, bool)
        has_kids[parent[parent >= 0]] = True
        if has_kids[gpu.reconstructed_rows].any():
            raise FormatError(path, "a GPU PC-sample node has children")
    if len(gpu.parent):
        parent, kind = np.concatenate([parent, gpu.parent]), np.concatenate([kind, gpu.kind])
        flag, module = np.concatenate([flag, gpu.flag]), np.concatenate([module, gpu.module])
        ip = np.concatenate([ip, gpu.ip])
    return ProfileFields(parent, kind, flag, module, ip, dict(modules), index, gpu)


def batch_fields(batch: HpcrunBatch, group: Sequence[ProfileInput]
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[int, rawtree.ModuleRef]]:
    """:func:`profile_fields` of a batch of profiles without GPU parts, as one forest: (parent row in the
    batch, kind, flag, module, ip) per CCT row, and the modules by hash; checked once over the batch. Raises
    :class:`HpcsaError` without naming the profile if one breaks a rule (:func:`profile_fields`, one by one,
    names it)."""
    cct = batch.cct
    parent = batch.parent
    lm = cct["lm_id"].astype(np.int64)
    ip = cct["lm_ip"].astype(np.uint64)
    unwound = (cct["flags"] & UNWOUND) != 0
    # One load-map table per distinct load map (the reader shares the parse of equal ones) and directory.
    tables: dict[tuple[object, ...], int] = {}
    firsts: list[int] = []  # the first profile with each table
    which = np.empty(len(group), np.int64)
    for k, (prof, inp) in enumerate(zip(batch.profiles, group, strict=True)):
        which[k] = t = tables.setdefault((inp.measdir, *map(id, prof.loadmap)), len(tables))
        if t == len(firsts):
            firsts.append(k)
    module = np.zeros(len(cct), np.uint64)
    modules: dict[int, rawtree.ModuleRef] = {}
    of_row = np.repeat(which, np.diff(batch.cut)) if len(tables) > 1 else None
    for t, k in enumerate(firsts):
        table, known, _, refs = _loadmap_table(tuple(batch.profiles[k].loadmap), group[k].measdir)
        modules.update(refs)
        rows = slice(None) if of_row is None else of_row == t
        mine = lm[rows]
        if ((mine >= len(table)) | ~known[np.minimum(mine, len(table) - 1)]).any():
            raise HpcsaError(None, "a CCT node names a load module that is not in the load map")
        module[rows] = table[mine]
    top = parent < 0
    placeholder = lm == 0
    if (top & ~(placeholder & (ip == np.uint64(PRIMARY)))).any():
        raise HpcsaError(None, "a root of the CCT is not the <primary root> placeholder")
    pr = np.where(top, 0, parent)
    at_global = ~top & placeholder[pr] & (ip[pr] == np.uint64(PRIMARY))
    special = placeholder & ((ip == np.uint64(NO_ACTIVITY)) | (ip == np.uint64(PARTIAL)))
    if (special & ~top & ~at_global).any() or (placeholder & ~unwound & ~top).any():
        raise HpcsaError(None, "a placeholder CCT node out of place")
    return parent, np.zeros(len(cct), np.uint8), unwound.astype(np.uint8), module, ip, modules


def profile_nodes(prof: HpcrunProfile, inp: ProfileInput, env: Phase1Env,
                  rows: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[rawtree.RawNodes, NodeIndex, GpuPart]:
    """A profile's raw nodes (:func:`profile_fields`, hashed), its node index and the GPU part."""
    f = profile_fields(prof, inp, env, rows)
    return rawtree.RawNodes(hash_nodes([f], env.seed)[0], f.modules), f.index, f.gpu


def hash_nodes(profiles: list[ProfileFields], seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The RAW rows of several profiles' nodes, hashed together as one forest (one vectorized pass, not one
    per profile: the per-call cost of numpy dominates small profiles), and where each profile's rows start
    (with the end)."""
    sizes = np.array([len(f.parent) for f in profiles], np.int64)
    base = np.concatenate([[0], np.cumsum(sizes)])
    if len(profiles) == 1:
        f = profiles[0]
        return rawtree.make_nodes(f.parent, f.kind, f.flag, f.module, f.ip, seed), base
    parent = np.concatenate([np.where(f.parent >= 0, f.parent + b, -1) for f, b in zip(profiles, base, strict=False)])
    nodes = rawtree.make_nodes(parent, *(np.concatenate([getattr(f, name) for f in profiles])
                                         for name in ("kind", "flag", "module", "ip")), seed)
    return nodes, base


#: Profiles hashed together in phase 1: at most this many, or this many bytes of .hpcrun files.
HASH_TOGETHER = 64
HASH_TOGETHER_BYTES = 4 << 20  # (the group's files are held until it is hashed)


def survey_profiles(batch: Sequence[ProfileInput], env: Phase1Env) -> Discovery:
    """Phase 1 for a batch of profiles: each profile's only reading. Nodes are hashed a group of profiles at
    a time; what phase 2 needs of each is kept in the scratch directory when there is one
    (:func:`second_reading`)."""
    parts: list[Discovery] = []
    group: list[ProfileInput] = []
    size = 0
    for inp in batch:
        group.append(inp)
        size += inp.size
        if len(group) >= HASH_TOGETHER or size >= HASH_TOGETHER_BYTES:
            parts.append(_survey_group(group, env))
            group, size = [], 0
            if len(parts) >= 4:  # memory bounded by the union, not by the batch's profiles
                parts = [merge(parts)]
    if group:
        parts.append(_survey_group(group, env))
    return merge(parts) if len(parts) != 1 else parts[0]


def survey_profile(inp: ProfileInput, env: Phase1Env) -> Discovery:
    """Phase 1 for one profile (see :func:`survey_profiles`)."""
    return _survey_group([inp], env)


def _survey_group(group: Sequence[ProfileInput], env: Phase1Env) -> Discovery:
    """A group's profiles read as one batch; where the batch finds a problem, read again one by one, so that
    the refusal is the one of the group's first bad profile, as a reading one by one gives."""
    try:
        return _survey_batch(group, env)
    except HpcsaError:
        return _survey_one_by_one(group, env)


def _survey_batch(group: Sequence[ProfileInput], env: Phase1Env) -> Discovery:
    batch = read_hpcrun_batch([inp.path for inp in group])
    if env.has_graphs:  # GPU calling contexts are reconstructed profile by profile
        fields = [profile_fields(prof, inp, env, batch.rows(k)) for k, (prof, inp) in
                  enumerate(zip(batch.profiles, group, strict=True))]
        nodes, cut = hash_nodes(fields, env.seed)
        gpus = [f.gpu for f in fields]
        modules = {h: m for f in fields for h, m in f.modules.items()}
    else:
        parent, kind, flag, module, ip, modules = batch_fields(batch, group)
        nodes, cut = rawtree.make_nodes(parent, kind, flag, module, ip, env.seed), batch.cut
        gpus = [GpuPart.empty()] * len(group)
    n_traces = [trace_records(inp) for inp in group]
    return _discovery(group, batch.profiles, nodes, cut, gpus, n_traces, modules, env)


def _survey_one_by_one(group: Sequence[ProfileInput], env: Phase1Env) -> Discovery:
    profs: list[HpcrunProfile] = []
    fields: list[ProfileFields] = []
    n_traces: list[int] = []
    for inp in group:
        prof, order, parent = read_hpcrun_tree(inp.path)
        fields.append(profile_fields(prof, inp, env, (order, parent)))
        n_traces.append(trace_records(inp))
        _disorder(prof, inp)
        profs.append(prof)
    modules = {h: m for f in fields for h, m in f.modules.items()}
    return _discovery(group, profs, *hash_nodes(fields, env.seed), [f.gpu for f in fields], n_traces, modules,
                      env)


def _disorder(prof: HpcrunProfile, inp: ProfileInput) -> int:
    try:
        return int(prof.header.get("trace-disorder", "0") or 0)
    except ValueError:
        raise FormatError(inp.path, f"trace-disorder {prof.header.get('trace-disorder')!r} "
                          "is not a number") from None


def _discovery(group: Sequence[ProfileInput], profs: list[HpcrunProfile], nodes: np.ndarray, cut: np.ndarray,
               gpus: list[GpuPart], n_traces: list[int], modules: dict[int, rawtree.ModuleRef], env: Phase1Env
               ) -> Discovery:
    """A group's report, from its profiles as read, their hashed nodes (profile ``k``'s are
    ``nodes[cut[k]:cut[k + 1]]``), GPU parts and trace lengths."""
    facts: list[ProfileFacts] = []
    tables: dict[tuple[int, ...], int] = {}  # metric tables and load maps by identity (the reader shares
    loadmaps: dict[tuple[int, ...], int] = {}  # the parse of equal ones); merged by value later
    disc = Discovery(rawtree.RawNodes(np.zeros(0, rawtree.RAW)))
    for inp, prof, n_trace in zip(group, profs, n_traces, strict=True):
        disorder = _disorder(prof, inp)
        key = tuple(map(id, prof.metrics))
        if key not in tables:
            tables[key] = len(disc.metric_tables)
            disc.metric_tables.append(tuple(prof.metrics))
        lkey = tuple(map(id, prof.loadmap))
        if lkey not in loadmaps:
            loadmaps[lkey] = len(disc.loadmaps)
            disc.loadmaps.append(tuple(prof.loadmap))
        facts.append(ProfileFacts(inp, prof.id_tuple.copy(), disorder, tables[key], n_trace, loadmaps[lkey]))
        disc.id_names.update(prof.id_names)
        program = os.path.basename(prof.header.get("program-name", "") or "")
        if program:
            disc.programs.add(program)
    if env.scratch is not None:
        for fact, kept in zip(facts, _keep(env, profs, nodes, cut, gpus), strict=True):
            fact.kept = kept
    disc.profiles = ProfileTable.of(facts)
    disc.raw = rawtree.RawNodes(nodes, modules)
    return merge([disc])  # the union of the nodes (sorted, one row per path)


# -- what phase 2 needs of a profile, kept by phase 1 ---------------------------------------------------

#: Per node, what phase 2 needs of a profile's raw nodes (the path hash lanes and the flags).
KEPT_NODE = np.dtype([("h1", "<u8"), ("h2", "<u8"), ("flag", "u1")])
#: What phase 1 keeps of a profile, in this order after a header of their lengths (int64 each): CCT rows,
#: raw nodes, sparse values, sparse index (each in its .hpcrun layout or :data:`KEPT_NODE`), then the
#: pickled GPU part (0 bytes when nothing was reconstructed).
KEPT_PARTS = (CCT_NODE, KEPT_NODE, SPARSE_VALUE, SPARSE_INDEX)
KEPT_HEAD = np.dtype(("<i8", len(KEPT_PARTS) + 1))


def _kept_bytes(prof: HpcrunProfile, nodes: np.ndarray, gpu: GpuPart) -> bytes:
    """What :func:`_keep` keeps of a profile (``nodes``: its :data:`KEPT_NODE` rows)."""
    gpu_bytes = pickle.dumps(gpu, protocol=pickle.HIGHEST_PROTOCOL) if len(gpu.parent) else b""
    arrays = (prof.cct, nodes, prof.values, prof.index)
    head = np.array([len(a) for a in arrays] + [len(gpu_bytes)], "<i8")
    return b"".join([head.tobytes(), *(np.ascontiguousarray(a).tobytes() for a in arrays), gpu_bytes])


def _kept_arrays(data: bytes | memoryview) -> tuple[list[np.ndarray], GpuPart]:
    """The arrays :func:`_kept_bytes` wrote (views of ``data``) and the GPU part."""
    head = np.frombuffer(data, KEPT_HEAD, 1)[0]
    at = KEPT_HEAD.itemsize
    arrays = []
    for dtype, count in zip(KEPT_PARTS, head[:-1].tolist(), strict=True):
        arrays.append(np.frombuffer(data, dtype, count, at))
        at += dtype.itemsize * count
    gpu = pickle.loads(data[at:]) if head[-1] else GpuPart.empty()  # noqa: S301 - our file, private directory
    return arrays, gpu


#: This process's scratch file per (process, directory, seed): [descriptor, path, bytes written].
_KEEPERS: dict[tuple[int, str, int], list] = {}  # type: ignore[type-arg]


def _keep(env: Phase1Env, profs: list[HpcrunProfile], raw: np.ndarray, cut: np.ndarray, gpus: list[GpuPart]
          ) -> list[tuple[str, int, int]]:
    """Append the arrays phase 2 needs of each profile (its CCT, node hashes and flags, sparse values, GPU
    part; profile ``k``'s nodes are ``raw[cut[k]:cut[k + 1]]``) to this process's scratch file, in one write;
    where each is. One file per process: no locking,
    offsets are its own."""
    assert env.scratch is not None
    key = (os.getpid(), env.scratch, env.seed)
    keeper = _KEEPERS.get(key)
    try:
        if keeper is None:
            fd, path = tempfile.mkstemp(prefix=f"phase1-{env.seed}-", suffix=".arrays", dir=env.scratch)
            keeper = _KEEPERS[key] = [fd, path, 0]
        nodes = np.empty(len(raw), KEPT_NODE)
        for name in KEPT_NODE.names:
            nodes[name] = raw[name]
        at = cut.tolist()
        parts = [_kept_bytes(prof, nodes[at[k]:at[k + 1]], gpu) for k, (prof, gpu) in
                 enumerate(zip(profs, gpus, strict=True))]
        fd, path, offset = keeper
        pwrite_all(fd, b"".join(parts), offset)
    except OSError as exc:
        raise OutputError(env.scratch, f"cannot write a scratch file: {exc.strerror or exc}") from None
    where = []
    for data in parts:
        where.append((path, offset, len(data)))
        offset += len(data)
    keeper[2] = offset
    return where


def release_scratch(scratch: str) -> None:
    """Close this process's scratch files in ``scratch`` (the directory itself is the caller's)."""
    for key in [k for k in _KEEPERS if k[1] == scratch]:
        os.close(_KEEPERS.pop(key)[0])


def second_reading(facts: ProfileFacts, metrics: tuple[MetricDesc, ...], loadmap: tuple[LoadModule, ...],
                   env: Phase1Env) -> tuple[HpcrunProfile, rawtree.RawNodes, NodeIndex, GpuPart]:
    """What phase 2 needs of a profile: its CCT and values (header, load map, metric table and identity come
    from phase 1), its raw nodes, node index and GPU part. Taken from what phase 1 kept, so the .hpcrun file
    is read once; read again (through the .hpcrun reader and its checks) only where nothing was kept."""
    path = facts.input.path
    if facts.kept is None:
        prof, order, parent = read_hpcrun_tree(path)
        raw, index, gpu = profile_nodes(prof, facts.input, env, (order, parent))
        cct, values, sparse = prof.cct, prof.values, prof.index
    else:
        kept_path, offset, size = facts.kept
        ((cct, kept, values, sparse), gpu), = _kept_blobs((kept_path,), np.zeros(1, np.int64),
                                                          np.array([offset], np.int64), np.array([size], np.int64))
        nodes = np.zeros(len(kept), rawtree.RAW)
        for name in KEPT_NODE.names:
            nodes[name] = kept[name]
        raw = rawtree.RawNodes(nodes)
        ids = cct["id"].astype(np.int64)
        index = NodeIndex(ids, np.argsort(ids, kind="stable"))
    prof = HpcrunProfile(header={}, loadmap=list(loadmap), cct=cct, metrics=list(metrics), id_names=[],
                         id_tuple=facts.id_tuple, values=values, index=sparse, path=path)
    return prof, raw, index, gpu


def kept_many(table: ProfileTable, indexes: Sequence[int]) -> list[tuple[list[np.ndarray], GpuPart]] | None:
    """What phase 1 kept of these profiles, as :func:`_kept_arrays` gives it, or None if one was not kept. The
    blobs that follow one another in a scratch file (a phase-1 group's) are read with one ``pread``."""
    sel = np.asarray(indexes, np.int64)
    file = table.kept_file[sel]
    if not len(sel) or (file < 0).any():
        return None if len(sel) else []
    return _kept_blobs(table.kept_files, file, table.kept_offset[sel], table.kept_size[sel])


def _kept_blobs(files: Sequence[str], file: np.ndarray, offset: np.ndarray, size: np.ndarray
                ) -> list[tuple[list[np.ndarray], GpuPart]]:
    """The kept blobs ``size`` bytes at ``offset`` of ``files[file]``, as :func:`_kept_arrays` gives them;
    consecutive ones of a file with one ``pread``."""
    n = len(file)
    order = np.lexsort((offset, file))
    file, offset, size = file[order], offset[order], size[order]
    run = np.ones(n, bool)
    run[1:] = (file[1:] != file[:-1]) | (offset[1:] != offset[:-1] + size[:-1])
    starts = np.flatnonzero(run).tolist()
    out: list[tuple[list[np.ndarray], GpuPart]] = [None] * n  # type: ignore[list-item]
    fds: dict[int, int] = {}
    path = ""
    try:
        for a, b in zip(starts, [*starts[1:], n], strict=True):
            f = int(file[a])
            path = files[f]
            if f not in fds:
                fds[f] = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            lo, ends = int(offset[a]), (offset[a:b] + size[a:b] - offset[a]).tolist()
            data = memoryview(os.pread(fds[f], ends[-1], lo))
            if len(data) != ends[-1]:
                raise HpcsaError(path, "a scratch file is shorter than written (was it removed?)")
            at = 0
            for r, end in zip(order[a:b].tolist(), ends, strict=True):
                out[r] = _kept_arrays(data[at:end])
                at = end
    except OSError as exc:
        raise HpcsaError(path, f"cannot read a scratch file: {exc.strerror or exc}") from None
    finally:
        for fd in fds.values():
            os.close(fd)
    return out


def program_name(disc: Discovery) -> str | None:
    """The database's title: the program measured (the first name in sorted order if several were)."""
    return min(disc.programs) if disc.programs else None
