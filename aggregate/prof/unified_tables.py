"""The class-2 results everyone needs before class 1 can run: assembled once, never changed.

From the merged phase-1 reports (:class:`survey.Discovery`) and the parsed
structure files this builds :class:`ClassTwo`: the expanded context tree with
canonical ids (:mod:`unify`), for every raw node its contexts, the metric
table and ids (:mod:`metrictable`), the canonical profile order with
finalized identifier tuples, the trace.db layout, and the meta.db contents.
It is plain data (numpy arrays, lists), cheap to share with worker processes
(fork) or to broadcast to MPI ranks (pickle).
"""

from __future__ import annotations

import os
from dataclasses import field

import numpy as np

from hpcsa.aggregate.prof import lexical as lx
from hpcsa.aggregate.prof import rawtree, unify
from hpcsa.aggregate.prof.chain_warmer import ChainWarmer
from hpcsa.aggregate.prof.metrictable import SCOPE_ORDER, MetricTable
from hpcsa.aggregate.prof.profile_table import ProfileTable
from hpcsa.aggregate.prof.survey import Discovery, Phase1Env
from hpcsa.core.arrays import run_starts, sorted_unique
from hpcsa.core.dataclass import dataclass
from hpcsa.core.errors import HpcsaError
from hpcsa.core.ragged import Ragged
from hpcsa.formats.db import metadb, profiledb
from hpcsa.formats.db.propagate import TreeArrays
from hpcsa.formats.hpcstruct.model import Module
from hpcsa.formats.measurement.hpcrun import (
    BOTH_VALID,
    ID_KIND_MASK,
    LOGIC_GLOBAL,
    LOGIC_LOCAL,
    LoadModule,
    MetricDesc,
)


@dataclass
class ClassTwo:
    """The correlated state every process shares after phase 1: the unified tree and its ids."""

    seed: int
    raw_h1: np.ndarray        # sorted path hashes of the union
    raw_h2: np.ndarray
    raw_full: np.ndarray      # canonical context of each raw node (-1: none)
    raw_rel: np.ndarray       # its "relation" context (move2proc metrics, call traces)
    tree: TreeArrays
    trace_id: np.ndarray      # id a context has in traces (elided instructions -> their line)
    metrics: MetricTable
    prop: np.ndarray          # [metrics, 4] propMetricId per scope (point, function, lex_aware, execution), -1
    env: Phase1Env            # call graphs and hash seed (phase 2 rebuilds the same raw nodes)
    profiles: ProfileTable  # canonical order: profile i + 1 of profile.db (columns, no object per profile)
    metric_tables: list[tuple[MetricDesc, ...]]  # the distinct .hpcrun metric tables (ProfileTable.metrics)
    loadmaps: list[tuple[LoadModule, ...]]       # the distinct load maps (ProfileTable.loadmap)
    id_tuples: Ragged             # profile.db IDENTIFIER rows, same order
    trace_reserve: np.ndarray     # int64 records reserved per profile in trace.db
    meta_source: MetaSource | None  # what meta.db is made of (rank 0 only: not sent to other ranks)
    n_ctx: int
    warnings: list[str] = field(default_factory=list)
    binaries: list[str] = field(default_factory=list)  # binaries read in place of structure files
    #: per distinct .hpcrun metric table: (global metric index, period, move2proc) of each of its metrics
    metric_inputs: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=list)

    @property
    def n_prop_ids(self) -> int:
        return int(self.prop.max()) + 1 if self.prop.size else 0

    def take_meta(self) -> metadb.MetaDB:
        """meta.db's contents, made when asked for, once: by rank 0, beside its share of phase 2 (the other
        ranks need none of it, so class 2, which they wait for, does not build it). What it is made of (the
        context tree with a Python tuple per scope) is let go, not held through phase 3."""
        if self.meta_source is None:
            raise RuntimeError("meta.db's contents are only where class 2 was assembled (rank 0), once")
        source, self.meta_source = self.meta_source, None
        return source.build()

    def __getstate__(self) -> dict[str, object]:
        return dict(self.__dict__, meta_source=None)  # another rank never writes meta.db


@dataclass
class MetaSource:
    """What meta.db is made of, before its tables are built."""

    tree: unify.UnifiedTree
    title: str
    id_names: list[str]
    metrics: list[metadb.Metric]

    def build(self) -> metadb.MetaDB:
        ctree, funcs, modules, files = unify.meta_tables(self.tree)
        return metadb.MetaDB(title=self.title, id_names=self.id_names, metrics=self.metrics, modules=modules,
                             module_flags=np.zeros(len(modules), np.uint32), files=files,
                             file_flags=np.zeros(len(files), np.uint32), functions=funcs, contexts=ctree)


# -- classifier ------------------------------------------------------------------------------------------


def build_classifier(raw: rawtree.RawNodes, structs: list[tuple[str | None, Module]], *,
                     kernel_symbols: bool = True, fallback: bool = True,
                     witnesses: list[tuple[str | None, str, str | None]] | None = None,
                     warmed: ChainWarmer | None = None) -> tuple[lx.Classifier, list[str]]:
    """One source of information per load module that the union uses: structure, kernel symbols, binary.

    ``witnesses`` are structure files not used for attribution (``--ignore-structs``): (measurement
    directory, path, load module named in it); they only vouch for the binaries read in their place.
    ``warmed``: the expanders whose chains phase 1 computed already.
    """
    warnings: list[str] = []
    used = {int(h) for h in sorted_unique(raw.nodes["module"]).tolist() if h}
    refs = {h: raw.modules[h] for h in sorted(used, key=lambda h: raw.modules[h].key if h in raw.modules else "")
            if h in raw.modules}
    cls = lx.Classifier(display={r.key: r.path for r in refs.values()})
    by_key = {r.key: r for r in refs.values()}
    for struct_measdir, module in structs:
        for key in lx.struct_keys(module, struct_measdir):
            ref = by_key.get(key)
            if ref is None:
                for k, r in by_key.items():  # content-addressed names match by name wherever recorded
                    if lx.hashed_name(k) and lx.hashed_name(k) == lx.hashed_name(module.path):
                        ref = r
                        break
            if ref is not None and ref.key not in cls.structs:
                cls.structs[ref.key] = (warmed.expander(module, ref.path) if warmed is not None
                                        else lx.StructExpander(module, ref.path))
                break
    for ref in refs.values():
        if ref.key in cls.structs:
            continue
        parent_dir = os.path.basename(os.path.dirname(ref.path))
        if kernel_symbols and not os.path.isabs(ref.path) and parent_dir == "kernel_symbols":
            file = os.path.join(ref.measdir, ref.path)
            if os.path.isfile(file):
                cls.kernels[ref.key] = lx.KernelSymbols.load(file, ref.path)
            continue
        if fallback:
            witness = _witness(ref, witnesses or [])
            file = lx.trusted_binary(lx.ModuleInfo(ref.key, ref.path, ref.measdir), warnings, witness)
            if file is not None:
                syms = lx.read_binary(file, ref.path, warnings)
                if syms is not None:
                    cls.binaries[ref.key] = syms
                    cls.read_from.append(file)
    return cls, warnings


def _witness(ref: rawtree.ModuleRef, witnesses: list[tuple[str | None, str, str | None]]) -> Module | None:
    from hpcsa.formats.hpcstruct.parsedcache import read_structure

    for measdir, path, module in witnesses:
        if module is None:
            continue
        key = lx.module_key(module, measdir) if measdir else os.path.normpath(module)
        if key == ref.key:
            for m in read_structure(path).modules:
                return m
    return None


# -- identifier tuples -------------------------------------------------------------------------------------


def finalize_id_tuples(raw: Ragged) -> Ragged:
    """profile.db identifier tuples: generated logical ids (LOCAL per prefix, GLOBAL per kind) are dense
    ranks of the physical ids in sorted order (hpcprof numbers them first-come), and marked physical.

    Vectorized over all profiles' rows: a LOCAL id's group is its kind and the (kind, physical id) path of
    the levels above it, numbered level by level (a loop over levels, not profiles)."""
    rows = raw.rows
    kind = rows["kind"].astype(np.int64)
    k, interp = kind & ID_KIND_MASK, kind >> 14
    phys = rows["physical"].astype(np.uint64)
    logical = rows["logical"].astype(np.uint64)
    owner = np.repeat(np.arange(len(raw.lengths)), raw.lengths)
    level = np.arange(len(rows)) - raw.offsets[owner]
    prefix = np.zeros(len(rows), np.int64)  # an id of the path above each row (0: none)
    next_id = 1
    for j in range(1, int(raw.lengths.max()) if len(rows) else 0):
        at = np.flatnonzero(level == j)
        ids, inverse = _distinct_rows(prefix[at - 1], k[at - 1], phys[at - 1])
        prefix[at] = next_id + inverse
        next_id += ids
    out_logical = logical.copy()
    for mode, group in ((LOGIC_GLOBAL, k), (LOGIC_LOCAL, prefix * (ID_KIND_MASK + 1) + k)):
        at = np.flatnonzero(interp == mode)
        out_logical[at] = _dense_ranks(group[at], phys[at])
    generated = (interp == LOGIC_GLOBAL) | (interp == LOGIC_LOCAL)
    out = np.zeros(len(rows), profiledb.IDENTIFIER)
    out["kind"] = k
    out["flags"] = np.where(generated | (interp == BOTH_VALID), profiledb.IS_PHYSICAL, 0)
    out["logicalId"] = out_logical & np.uint64(0xFFFFFFFF)
    out["physicalId"] = phys
    return Ragged(out, raw.offsets)


def _distinct_rows(*cols: np.ndarray) -> tuple[int, np.ndarray]:
    """(number of distinct rows of the columns, each row's number in sorted order of the distinct rows)."""
    order = np.lexsort(cols[::-1])
    new = run_starts(*(c[order] for c in cols))
    number = np.empty(len(order), np.int64)
    number[order] = np.cumsum(new) - 1
    return int(new.sum()), number


def _dense_ranks(group: np.ndarray, value: np.ndarray) -> np.ndarray:
    """Each value's rank among the distinct values of its group, in ascending order."""
    order = np.lexsort((value, group))
    g, v = group[order], value[order]
    new_group, new_value = run_starts(g), run_starts(g, v)
    distinct = np.cumsum(new_value) - 1
    first = np.maximum.accumulate(np.where(new_group, distinct, 0))  # the group's first distinct value
    ranks = np.empty(len(order), np.uint64)
    ranks[order] = (distinct - first).astype(np.uint64)
    return ranks


def _canonical_order(profiles: ProfileTable, tuples: Ragged) -> tuple[ProfileTable, Ragged]:
    """Profiles and their finalized tuples in profile.db's order: by identifier tuple, compared as Python
    compares tuples of (kind, logical id, physical id) per level (a tuple before those it is a prefix of),
    then by path; sorted by columns (one key per level and field), then one ``take`` per column."""
    n = len(tuples)
    owner = np.repeat(np.arange(n), tuples.lengths)
    level = np.arange(len(tuples.rows)) - tuples.offsets[owner]
    keys: list[np.ndarray] = []  # most significant first
    for j in range(int(tuples.lengths.max()) if n else 0):
        at = level == j
        present = np.zeros(n, np.int8)
        present[owner[at]] = 1  # a missing level sorts first
        keys.append(present)
        for name in ("kind", "logicalId", "physicalId"):
            column = np.zeros(n, tuples.rows.dtype[name])
            column[owner[at]] = tuples.rows[name][at]
            keys.append(column)
    keys.append(profiles.inputs.path_order())
    order = np.lexsort(keys[::-1])
    return profiles.take(order), tuples.take(order)


# -- assembly --------------------------------------------------------------------------------------------


def assemble(disc: Discovery, classifier: lx.Classifier, env: Phase1Env, *, statistics: tuple[str, ...],
             title: str | None, warnings: list[str] | None = None) -> ClassTwo:
    binaries = list(classifier.read_from)
    graphs: dict[int, object] = {}  # module hash -> hpcsa.gpucct.CallGraph
    for h, ref in disc.raw.modules.items():
        g = env.graph_for(ref.key)
        if g is not None:
            graphs[h] = g
    exp = unify.expand(disc.raw, classifier, graphs)
    tree, new_id = unify.canonical_ids(exp.builder)
    full = np.where(exp.full >= 0, new_id[np.maximum(exp.full, 0)], -1)
    rel = np.where(exp.rel >= 0, new_id[np.maximum(exp.rel, 0)], -1)
    is_loop = tree.is_loop
    is_call = tree.is_call
    elided = tree.elided
    parent = tree.parent.astype(np.int64)
    trace_id = np.arange(len(tree), dtype=np.int64)
    trace_id[elided] = parent[elided]
    arrays = TreeArrays.build(parent, tree.depth.astype(np.int64), is_call, is_loop, tree.end)

    metrics = MetricTable.from_descs(
        disc.metric_tables, statistics,
        source=lambda t: disc.profiles.inputs.path(int(np.flatnonzero(disc.profiles.metrics == t)[0])))
    prop = np.full((len(metrics), 4), -1, np.int64)
    for m in range(len(metrics)):
        for s, pid in metrics.prop_ids(m).items():
            prop[m, SCOPE_ORDER.index(s)] = pid

    tuples = finalize_id_tuples(disc.profiles.id_tuple)
    profiles, tuples = _canonical_order(disc.profiles, tuples)
    if len(profiles) >= 0xFFFFFFFF:
        raise HpcsaError(None, "too many profiles for one database")

    names = disc.id_names or dict(enumerate(metadb.DEFAULT_ID_NAMES))
    id_names = [names[k] for k in sorted(names)]
    meta = MetaSource(tree, title or "<unnamed>", id_names, metrics.metadb_metrics())
    c2 = ClassTwo(env.seed, disc.raw.nodes["h1"].copy(), disc.raw.nodes["h2"].copy(), full, rel, arrays,
                  trace_id, metrics, prop, env, profiles, disc.metric_tables, disc.loadmaps, tuples,
                  profiles.trace_records, meta, len(tree), list(warnings or []), binaries)
    c2.metric_inputs = [metrics.input_arrays(t) for t in disc.metric_tables]
    return c2
