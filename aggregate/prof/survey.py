"""Phase 1 of the aggregation, per profile: what class 2 needs to know about it.

A profile's first reading reports its calling-context tree as raw nodes
(:mod:`rawtree`; GPU samples of binaries with a call graph are reconstructed
first, :mod:`gpu`), its metric table, identity (identifier tuple), header and
trace size. Reports merge associatively (:func:`merge`), so they can be
combined in any grouping — per worker, per rank, up a reduction tree — with
the same union as the result. Bad input is refused here, naming the file.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from hpcsa.aggregate.prof import rawtree
from hpcsa.aggregate.prof.gpu_contexts import RECONSTRUCTED, GpuPart, reconstruct_profile
from hpcsa.aggregate.prof.inputs import ProfileInput
from hpcsa.aggregate.prof.lexical import hashed_name, module_key
from hpcsa.aggregate.prof.unify import NO_ACTIVITY, OUTLINED_RANGE_IDS, PARTIAL, PRIMARY
from hpcsa.binfmt import Blob, Cursor
from hpcsa.errors import FormatError, UnsupportedError
from hpcsa.ingest.hpcrun import (
    CCT_NODE,
    END_SENTINEL,
    ID_ELEMENT,
    SPARSE_INDEX,
    SPARSE_VALUE,
    UNWOUND,
    HpcrunProfile,
    LoadModule,
    MetricDesc,
    read_footer,
    read_hpcrun,
)
from hpcsa.ingest.hpctrace import FLAG_DATA_CENTRIC, HEADER, HEADER_SIZE, MAGIC, RECORD, VERSION

if TYPE_CHECKING:
    from hpcsa.gpucct import CallGraph

TRACE_RECORD = RECORD.itemsize


@dataclass(frozen=True)
class Phase1Env:
    """What every reader of phase 1 needs: the GPU call graphs and the hash seed.

    Call graphs are found by load-module key, or by the content hash in the
    name of a ``gpubins/<md5>.gpubin`` (the same binary recorded elsewhere).
    """

    graphs_by_key: dict[str, CallGraph] = field(default_factory=dict)
    graphs_by_name: dict[str, CallGraph] = field(default_factory=dict)
    seed: int = 0

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


@dataclass(slots=True)
class ProfileFacts:
    """The class-2 facts of one profile (small: no values; slots, as there is one per profile)."""

    input: ProfileInput
    id_tuple: np.ndarray          # hpcrun ID_ELEMENT rows (kind with interpretation bits, physical, logical)
    trace_disorder: int           # hpcrun's bound on the disorder of its trace (0: in order)
    metrics: int                  # index into Discovery.metric_tables
    trace_records: int            # records in its .hpctrace (0 without one)
    loadmap: int = 0              # index into Discovery.loadmaps


@dataclass
class Discovery:
    raw: rawtree.RawNodes
    profiles: list[ProfileFacts] = field(default_factory=list)
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
    profiles: list[ProfileFacts] = []
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
        for f in p.profiles:
            profiles.append(ProfileFacts(f.input, f.id_tuple, f.trace_disorder, remap[f.metrics], f.trace_records,
                                         lremap[f.loadmap]))
        names.update(p.id_names)
    programs = set().union(*(p.programs for p in parts)) if parts else set()
    return Discovery(rawtree.union([p.raw for p in parts]), profiles, tables, names, maps, programs)


def check_trace_header(path: str) -> None:
    """The trace header is readable and not data-centric (hpcprof refuses those); records are read later."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(HEADER_SIZE)
    except OSError as exc:
        raise FormatError(path, f"cannot read: {exc.strerror or exc}") from None
    if len(head) < HEADER_SIZE:
        raise FormatError(path, f"too short for an .hpctrace file ({len(head)} bytes, the header alone is 32)")
    rec = np.frombuffer(head, HEADER, 1)[0]
    if bytes(rec["magic"]) != MAGIC:
        raise FormatError(path, "not an .hpctrace trace file (bad magic)")
    if bytes(rec["version"]) != VERSION.encode():
        raise UnsupportedError(path, f"unsupported .hpctrace version {bytes(rec['version'])!r}")
    if int(rec["flags"]) & FLAG_DATA_CENTRIC:
        raise UnsupportedError(path, "data-centric traces are not supported (hpcprof refuses them too)")


def trace_records(inp: ProfileInput) -> int:
    """Records in a profile's trace, checked the way hpcprof checks it (size, data-centric flag)."""
    if inp.trace is None:
        return 0
    body = inp.trace_size - HEADER_SIZE
    if body < 0 or body % TRACE_RECORD:
        raise FormatError(inp.trace, f"trace data is {max(body, 0)} bytes, not a whole number of "
                          f"{TRACE_RECORD}-byte records; the file is truncated")
    return body // TRACE_RECORD


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


def profile_nodes(prof: HpcrunProfile, inp: ProfileInput, env: Phase1Env
                  ) -> tuple[rawtree.RawNodes, NodeIndex, GpuPart]:
    """A profile's raw nodes (CCT rows first, then reconstructed GPU nodes), its node index and the GPU
    part. Refuses trees hpcprof refuses (and ones it would misread)."""
    cct = prof.cct
    ids = cct["id"].astype(np.int64)
    n = len(ids)
    index = NodeIndex(ids, np.argsort(ids, kind="stable"))
    path = inp.path
    sorted_ids = ids[index.order]
    if n and (sorted_ids[0] <= 0 or (sorted_ids[1:] == sorted_ids[:-1]).any()):
        raise FormatError(path, "CCT: node ids must be unique and non-zero")
    par_id = cct["parent"].astype(np.int64)
    parent = np.where(par_id == 0, -1, index.rows(par_id))
    if ((par_id != 0) & ((parent < 0) | (parent >= np.arange(n)))).any():
        raise FormatError(path, "CCT: a node's parent is missing or comes after it (records must be parent-first)")
    lm = cct["lm_id"].astype(np.int64)
    ip = cct["lm_ip"].astype(np.uint64)
    unwound = (cct["flags"] & UNWOUND) != 0
    # Load modules: ids of the load map -> module hashes (0 = placeholders), through a table by id.
    lm_hash: dict[int, int] = {}
    modules: dict[int, rawtree.ModuleRef] = {}
    for entry in prof.loadmap:
        h, ref = _module_ref(entry.path, inp.measdir)
        lm_hash[entry.id] = h
        modules[h] = ref
    table = np.zeros(max([0, *lm_hash]) + 1, np.uint64)
    known = np.zeros(len(table), bool)
    known[0] = True
    for i, h in lm_hash.items():
        table[i], known[i] = h, True
    unknown = (lm >= len(table)) | ~known[np.minimum(lm, len(table) - 1)] if n else np.zeros(0, bool)
    if unknown.any():
        bad = lm[unknown]
        if np.isin(bad, OUTLINED_RANGE_IDS).any():
            raise UnsupportedError(path, "outlined range trees (range-based PC sampling) are not supported")
        raise FormatError(path, f"a CCT node names load module {int(bad[0])}, which is not in the load map")
    module = table[lm]
    top = parent < 0
    if (top & ~((lm == 0) & (ip == np.uint64(PRIMARY)))).any():
        raise FormatError(path, "a root of the CCT is not the <primary root> placeholder")
    pr = np.where(top, 0, parent)
    at_global = ~top & (lm[pr] == 0) & (ip[pr] == np.uint64(PRIMARY)) if n else np.zeros(0, bool)
    special = (lm == 0) & ((ip == np.uint64(NO_ACTIVITY)) | (ip == np.uint64(PARTIAL)))
    if (special & ~top & ~at_global).any():
        raise FormatError(path, "<no activity> or <partial root> below a context other than the root")
    if ((lm == 0) & ~unwound & ~top).any():
        raise FormatError(path, "a placeholder CCT node is marked as not unwound")
    graphs = {}
    if env.has_graphs:
        graphs = {h: g for h in set(lm_hash.values()) if (g := env.graph_for(modules[h].key)) is not None}
    gpu = reconstruct_profile(prof, index.rows, lm_hash, graphs) if graphs else GpuPart.empty()
    flag = unwound.astype(np.uint8)
    if len(gpu.reconstructed_rows):
        flag[gpu.reconstructed_rows] |= RECONSTRUCTED
        has_kids = np.zeros(n, bool)
        has_kids[parent[parent >= 0]] = True
        if has_kids[gpu.reconstructed_rows].any():
            raise FormatError(path, "a GPU PC-sample node has children")
    if len(gpu.parent):
        nodes = rawtree.make_nodes(np.concatenate([parent, gpu.parent]), np.concatenate([np.zeros(n, np.uint8),
                                   gpu.kind]), np.concatenate([flag, gpu.flag]), np.concatenate([module, gpu.module]),
                                   np.concatenate([ip, gpu.ip]), env.seed)
    else:
        nodes = rawtree.make_nodes(parent, np.zeros(n, np.uint8), flag, module, ip, env.seed)
    return rawtree.RawNodes(nodes, modules), index, gpu


def survey_profile(inp: ProfileInput, env: Phase1Env) -> Discovery:
    """Phase 1 for one profile (the first of its two readings)."""
    prof = read_hpcrun(inp.path, values=env.has_graphs)
    raw, _, _ = profile_nodes(prof, inp, env)
    n_trace = trace_records(inp)
    if inp.trace is not None:
        check_trace_header(inp.trace)
    try:
        disorder = int(prof.header.get("trace-disorder", "0") or 0)
    except ValueError:
        raise FormatError(inp.path, f"trace-disorder {prof.header.get('trace-disorder')!r} is not a number") from None
    program = os.path.basename(prof.header.get("program-name", "") or "")
    return Discovery(raw, [ProfileFacts(inp, prof.id_tuple.copy(), disorder, 0, n_trace, 0)],
                     [tuple(prof.metrics)], dict(prof.id_names), [tuple(prof.loadmap)],
                     {program} if program else set())


def read_again(facts: ProfileFacts, metrics: tuple[MetricDesc, ...], loadmap: tuple[LoadModule, ...]
               ) -> HpcrunProfile:
    """The second reading of a profile: only its CCT and values (through the .hpcrun layouts of
    :mod:`hpcsa.ingest.hpcrun`); header, load map, metric table and identity come from the first."""
    path = facts.input.path
    blob = Blob(path)
    footer = read_footer(blob)
    cur = Cursor(blob, int(footer["cct_start"]), int(footer["cct_end"]), ">", "CCT")
    cct = cur.array(CCT_NODE, cur.count(8, CCT_NODE.itemsize, "CCT node count"), "CCT nodes")
    cur = Cursor(blob, int(footer["sm_start"]), int(footer["sm_end"]), ">", "sparse metrics")
    cur.array(ID_ELEMENT, cur.count(2, ID_ELEMENT.itemsize, "identifier tuple length"), "identifier tuple")
    nvals = cur.count(8, SPARSE_VALUE.itemsize, "value count")
    nnodes = cur.count(4, SPARSE_INDEX.itemsize, "non-zero node count")
    vals = cur.array(SPARSE_VALUE, nvals, "values")
    index = cur.array(SPARSE_INDEX, nnodes + 1, "context index")
    starts = index["start"].astype(np.int64)
    if int(index["node"][-1]) != END_SENTINEL or starts[-1] != nvals or (np.diff(starts) < 0).any():
        raise FormatError(path, "sparse metrics: the context index is not an ascending list ending with 'end!'")
    if nvals and int(vals["metric"].max()) >= len(metrics):
        raise FormatError(path, "a value names a metric the file does not declare")
    return HpcrunProfile(header={}, loadmap=list(loadmap), cct=cct, metrics=list(metrics), id_names=[],
                         id_tuple=facts.id_tuple, values=vals, index=index[:-1], path=path)


def program_name(disc: Discovery) -> str | None:
    """The database's title: the program measured (the first name in sorted order if several were)."""
    return min(disc.programs) if disc.programs else None
