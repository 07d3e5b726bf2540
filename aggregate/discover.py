"""Phase 1 of the aggregation, per profile: what class 2 needs to know about it.

A profile's first reading reports its calling-context tree as raw nodes
(:mod:`rawtree`; GPU samples of binaries with a call graph are reconstructed
first, :mod:`gpu`), its metric table, identity (identifier tuple), header and
trace size. Reports merge associatively (:func:`merge`), so they can be
combined in any grouping — per worker, per rank, up a reduction tree — with
the same union as the result. Bad input is refused here, naming the file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from hpcsa.errors import FormatError, UnsupportedError
from hpcsa.gpucct import CallGraph
from hpcsa.ingest.hpcrun import UNWOUND, HpcrunProfile, MetricDesc, read_hpcrun
from hpcsa.ingest.hpctrace import FLAG_DATA_CENTRIC, HEADER, HEADER_SIZE, MAGIC, RECORD, VERSION

from . import rawtree
from .gpu import RECONSTRUCTED, GpuPart, reconstruct_profile
from .lexical import hashed_name, module_key
from .measurement import ProfileInput
from .unify import NO_ACTIVITY, OUTLINED_RANGE_IDS, PARTIAL, PRIMARY

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


@dataclass
class ProfileFacts:
    """The class-2 facts of one profile (small: no values)."""

    input: ProfileInput
    id_tuple: np.ndarray          # hpcrun ID_ELEMENT rows (kind with interpretation bits, physical, logical)
    header: dict[str, str]
    metrics: int                  # index into Discovery.metric_tables
    trace_records: int            # records in its .hpctrace (0 without one)


@dataclass
class Discovery:
    raw: rawtree.RawNodes
    profiles: list[ProfileFacts] = field(default_factory=list)
    metric_tables: list[tuple[MetricDesc, ...]] = field(default_factory=list)
    id_names: dict[int, str] = field(default_factory=dict)


def _table_key(descs: tuple[MetricDesc, ...]) -> tuple[object, ...]:
    return tuple((m.name, m.description, m.formula, m.show, m.val_fmt, m.move2proc, m.period, m.show_percent,
                  m.format) for m in descs)


def merge(parts: list[Discovery]) -> Discovery:
    """The union of reports (associative; metric tables deduplicated)."""
    tables: list[tuple[MetricDesc, ...]] = []
    index: dict[tuple[object, ...], int] = {}
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
        for f in p.profiles:
            profiles.append(ProfileFacts(f.input, f.id_tuple, f.header, remap[f.metrics], f.trace_records))
        names.update(p.id_names)
    return Discovery(rawtree.union([p.raw for p in parts]), profiles, tables, names)


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


def profile_nodes(prof: HpcrunProfile, inp: ProfileInput, env: Phase1Env
                  ) -> tuple[rawtree.RawNodes, np.ndarray, GpuPart, dict[int, int]]:
    """A profile's raw nodes (CCT rows first, then reconstructed GPU nodes), its CCT ids, the GPU part,
    and CCT id -> row. Refuses trees hpcprof refuses."""
    cct = prof.cct
    ids = cct["id"].astype(np.int64)
    n = len(ids)
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    par_id = cct["parent"].astype(np.int64)
    pos = np.searchsorted(sorted_ids, par_id)
    parent = np.where(par_id == 0, -1, order[np.minimum(pos, max(n - 1, 0))] if n else pos)
    lm = cct["lm_id"].astype(np.int64)
    ip = cct["lm_ip"].astype(np.uint64)
    unwound = (cct["flags"] & UNWOUND) != 0
    path = inp.path
    # Load modules: ids of the load map -> module hashes (0 = placeholders).
    lm_hash: dict[int, int] = {}
    modules: dict[int, rawtree.ModuleRef] = {}
    for entry in prof.loadmap:
        key = module_key(entry.path, inp.measdir)
        h = rawtree.module_hash(key)
        lm_hash[entry.id] = h
        modules[h] = rawtree.ModuleRef(key, entry.path, inp.measdir)
    used = np.unique(lm)
    for u in used.tolist():
        if u in OUTLINED_RANGE_IDS:
            raise UnsupportedError(path, "outlined range trees (range-based PC sampling) are not supported")
        if u != 0 and u not in lm_hash:
            raise FormatError(path, f"a CCT node names load module {u}, which is not in the load map")
    module = np.array([lm_hash.get(u, 0) for u in lm.tolist()], np.uint64) if n else np.zeros(0, np.uint64)
    top = parent < 0
    if (top & ~((lm == 0) & (ip == np.uint64(PRIMARY)))).any():
        raise FormatError(path, "a root of the CCT is not the <primary root> placeholder")
    under_root = ~top & (par_id != 0)
    pr = np.where(parent >= 0, parent, 0)
    at_global = np.zeros(n, bool)
    if n:
        at_global = (lm[pr] == 0) & (ip[pr] == np.uint64(PRIMARY)) & (parent >= 0)
    special = (lm == 0) & ((ip == np.uint64(NO_ACTIVITY)) | (ip == np.uint64(PARTIAL)))
    if (special & under_root & ~at_global).any():
        raise FormatError(path, "<no activity> or <partial root> below a context other than the root")
    if ((lm == 0) & ~unwound & ~top).any():
        raise FormatError(path, "a placeholder CCT node is marked as not unwound")
    row_of_id = dict(zip(ids.tolist(), range(n), strict=True))
    graphs = {h: g for h, g in ((h, env.graph_for(modules[h].key)) for h in set(lm_hash.values()))
              if g is not None}
    gpu = reconstruct_profile(prof, row_of_id, lm_hash, graphs) if graphs else GpuPart.empty()
    flag = unwound.astype(np.uint8)
    if len(gpu.reconstructed_rows):
        flag[gpu.reconstructed_rows] |= RECONSTRUCTED
        has_kids = np.zeros(n, bool)
        has_kids[parent[parent >= 0]] = True
        if has_kids[gpu.reconstructed_rows].any():
            raise FormatError(path, "a GPU PC-sample node has children")
    all_parent = np.concatenate([parent, gpu.parent])
    kind = np.concatenate([np.zeros(n, np.uint8), gpu.kind])
    flags = np.concatenate([flag, gpu.flag])
    mods = np.concatenate([module, gpu.module])
    ips = np.concatenate([ip, gpu.ip])
    nodes = rawtree.make_nodes(all_parent, kind, flags, mods, ips, env.seed)
    return rawtree.RawNodes(nodes, modules), ids, gpu, row_of_id


def discover(inp: ProfileInput, env: Phase1Env) -> Discovery:
    """Phase 1 for one profile (the first of its two readings)."""
    prof = read_hpcrun(inp.path, values=env.has_graphs)
    raw, _, _, _ = profile_nodes(prof, inp, env)
    n_trace = trace_records(inp)
    if inp.trace is not None:
        check_trace_header(inp.trace)
    return Discovery(raw, [ProfileFacts(inp, prof.id_tuple.copy(), dict(prof.header), 0, n_trace)],
                     [tuple(prof.metrics)], dict(prof.id_names))


def program_name(facts: list[ProfileFacts]) -> str | None:
    for f in facts:
        name = f.header.get("program-name")
        if name:
            return os.path.basename(name)
    return None
