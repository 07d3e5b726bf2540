"""A profile's calling contexts as nodes of the union: checked, GPU samples reconstructed, hashed.

The same for the first reading of a profile (phase 1, :mod:`.phase1.survey`) and for a second one where
phase 1 kept nothing of it (phase 2): a pure function of the profile, the GPU call graphs and the hash seed,
so both readings find the same nodes. Trees that hpcprof refuses are refused
(:mod:`hpcsa.formats.measurement.cct_rules`), naming the file; a group of profiles read as one batch is
checked at once (:func:`group_fields`).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from hpcsa.aggregate import rawtree
from hpcsa.aggregate.gpu_contexts import RECONSTRUCTED, GpuPart, GroupGpu, reconstruct_profile
from hpcsa.aggregate.gpu_group import reconstruct_group
from hpcsa.aggregate.handoff import Phase1Env
from hpcsa.aggregate.lexical import module_key
from hpcsa.aggregate.profile_table import ProfileInput
from hpcsa.core.binfmt import Blob
from hpcsa.core.dataclass import dataclass
from hpcsa.core.errors import FormatError
from hpcsa.formats.measurement.cct_rules import check_load_modules, check_placeholders
from hpcsa.formats.measurement.hpcrun import UNWOUND, HpcrunProfile, LoadModule, tree_rows
from hpcsa.formats.measurement.hpcrun_batch import HpcrunGroup

if TYPE_CHECKING:
    from hpcsa.gpucct import CallGraph


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


class _Refusal(Blob):
    """A profile's file as :func:`tree_rows` needs it where its tree is already read: no bytes, only the path
    its problems are reported against."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.data = b""


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


def _graphs(env: Phase1Env, loadmap: tuple[LoadModule, ...], measdir: str) -> dict[int, CallGraph]:
    """The call graphs of a load map's modules, by module hash (once per distinct load map and environment)."""
    key = (id(env), loadmap, measdir)
    got = _GRAPHS.get(key)
    if got is None or got[0] is not env:
        _, _, lm_hash, modules = _loadmap_table(loadmap, measdir)
        graphs = {h: g for h in set(lm_hash.values()) if (g := env.graph_for(modules[h].key)) is not None}
        if len(_GRAPHS) >= 256:
            _GRAPHS.clear()
        got = _GRAPHS[key] = (env, graphs)
    return got[1]


_GRAPHS: dict[tuple[int, tuple[LoadModule, ...], str], tuple[Phase1Env, dict[int, CallGraph]]] = {}


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
    check_load_modules(path, lm, known)
    module = table[lm]
    check_placeholders(path, parent, lm, ip, unwound)
    graphs = _graphs(env, tuple(prof.loadmap), inp.measdir) if env.has_graphs else {}
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
    nodes = rawtree.make_nodes(parent, np.concatenate([f.kind for f in profiles]),
                               np.concatenate([f.flag for f in profiles]), np.concatenate([f.module for f in profiles]),
                               np.concatenate([f.ip for f in profiles]), seed)
    return nodes, base


def group_fields(g: HpcrunGroup, measdirs: Sequence[str]
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[int, rawtree.ModuleRef]]:
    """:func:`profile_fields` of a group read as columns, without GPU parts (``measdirs``: each profile's
    measurement directory), as one forest: (parent row in the group, kind, flag, module, ip) per CCT row, and
    the modules by hash; checked once over the group (:func:`profile_fields`, one by one, names the profile). Raises :class:`.HpcsaError` without naming the profile if one breaks a rule."""
    cct = g.cct
    n = len(g)
    lm = cct["lm_id"].astype(np.int64)
    ip = cct["lm_ip"].astype(np.uint64)
    unwound = (cct["flags"] & UNWOUND) != 0
    tables: dict[tuple[str, int], int] = {}  # one load-map table per distinct load map and directory
    firsts: list[int] = []
    which = np.empty(n, np.int64)
    for k, key in enumerate(zip(measdirs, g.loadmap.tolist(), strict=True)):
        which[k] = t = tables.setdefault(key, len(tables))
        if t == len(firsts):
            firsts.append(k)
    module = np.zeros(len(cct), np.uint64)
    modules: dict[int, rawtree.ModuleRef] = {}
    of_row = np.repeat(which, np.diff(g.cut)) if len(tables) > 1 else None
    for t, k in enumerate(firsts):
        table, known, _, refs = _loadmap_table(g.loadmaps[int(g.loadmap[k])], measdirs[k])
        modules.update(refs)
        rows = slice(None) if of_row is None else of_row == t
        mine = lm[rows]
        check_load_modules(None, mine, known)
        module[rows] = table[mine]
    check_placeholders(None, g.parent, lm, ip, unwound)
    return g.parent, np.zeros(len(cct), np.uint8), unwound.astype(np.uint8), module, ip, modules


def group_gpu(g: HpcrunGroup, measdirs: Sequence[str], env: Phase1Env, module: np.ndarray) -> GroupGpu:
    """The profiles' reconstructed GPU calling contexts (:func:`.gpu_group.reconstruct_group`: what
    :func:`.gpu_contexts.reconstruct_profile` gives each), for a group read as columns (``module``: each CCT
    row's module hash). Raises :class:`.HpcsaError` without naming the profile if one breaks a rule."""
    graphs: dict[int, CallGraph] = {}
    for key in set(zip(measdirs, g.loadmap.tolist(), strict=True)):
        graphs.update(_graphs(env, g.loadmaps[key[1]], key[0]))
    got = reconstruct_group(g, module, graphs) if graphs else None
    if got is None:
        return GroupGpu.empty(len(g))
    if len(got.rows):
        has_kids = np.zeros(len(g.cct), bool)
        has_kids[g.parent[g.parent >= 0]] = True
        rprof = np.repeat(np.arange(len(g)), np.diff(got.rcut))
        if has_kids[g.cut[:-1][rprof] + got.rows].any():
            raise FormatError(None, "a GPU PC-sample node has children")
    return got
