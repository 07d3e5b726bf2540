"""Phase 1's class 2: the tables every process needs before class 1 can run, assembled once by rank 0.

From the merged phase-1 reports (:class:`handoff.Discovery`) and the parsed
structure files this builds :class:`handoff.ClassTwo`: one source of information per load module
(:func:`build_classifier`), the expanded context tree with canonical ids (:mod:`phase1.unify`), for
every raw node its contexts, the metric table and ids (:mod:`metrictable`), the canonical profile order
with finalized identifier tuples (:mod:`phase1.id_tuples`), the trace.db layout, and what meta.db is
made of.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import numpy as np

from hpcsa.aggregate import lexical as lx
from hpcsa.aggregate import rawtree
from hpcsa.aggregate.handoff import ClassTwo, Discovery, GpuStructures, MetaSource, Phase1Env, StructModules
from hpcsa.aggregate.inputs import Inputs
from hpcsa.aggregate.metrictable import SCOPE_ORDER, MetricTable
from hpcsa.aggregate.phase1 import unify
from hpcsa.aggregate.phase1.chain_warmer import ChainWarmer
from hpcsa.aggregate.phase1.id_tuples import canonical_order, finalize_id_tuples
from hpcsa.core.arrays import sorted_unique
from hpcsa.core.errors import HpcsaError
from hpcsa.formats.db import metadb
from hpcsa.formats.db.propagate import TreeArrays
from hpcsa.formats.hpcstruct.model import Module

if TYPE_CHECKING:  # hpcsa.gpucct (and networkx) are imported only when there are GPU structure files
    from hpcsa.gpucct import CallGraph


def class_two(found: Discovery, structs: StructModules, inputs: Inputs, gpu: GpuStructures, env: Phase1Env, *,
              statistics: tuple[str, ...], fallback: bool, warmer: ChainWarmer | None) -> ClassTwo:
    """Class 2 from the union of phase 1's reports and every CPU structure file it needs: a classifier of
    every load module, then the tables."""
    witnesses = [(w.measdir, w.path, w.module) for w in inputs.witnesses]
    classifier, warnings = build_classifier(found.raw, gpu.modules + structs, fallback=fallback,
                                            witnesses=witnesses, warmed=warmer)
    return assemble(found, classifier, env, statistics=statistics, title=found.program_name, warnings=warnings)


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
            binary = lx.trusted_binary(lx.ModuleInfo(ref.key, ref.path, ref.measdir), warnings, witness)
            if binary is not None:
                syms = lx.read_binary(binary, ref.path, warnings)
                if syms is not None:
                    cls.binaries[ref.key] = syms
                    cls.read_from.append(binary)
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


def assemble(disc: Discovery, classifier: lx.Classifier, env: Phase1Env, *, statistics: tuple[str, ...],
             title: str | None, warnings: list[str] | None = None) -> ClassTwo:
    """The class-2 tables of the union ``disc``, its modules classified by ``classifier``."""
    binaries = list(classifier.read_from)
    graphs: dict[int, CallGraph] = {}  # by module hash
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
    profiles, tuples = canonical_order(disc.profiles, tuples)
    if len(profiles) >= 0xFFFFFFFF:
        raise HpcsaError(None, "too many profiles for one database")

    names = disc.id_names or dict(enumerate(metadb.DEFAULT_ID_NAMES))
    id_names = [names[k] for k in sorted(names)]
    meta = MetaSource(tree, title or "<unnamed>", id_names, metrics.metadb_metrics())
    c2 = ClassTwo(env.seed, disc.raw.nodes["h1"].copy(), disc.raw.nodes["h2"].copy(), full, rel, arrays,
                  trace_id, metrics, prop, env, profiles, disc.metric_tables, disc.loadmaps, tuples,
                  profiles.trace_records, meta, len(tree), list(warnings or []), binaries, title=title)
    c2.metric_inputs = [metrics.input_arrays(t) for t in disc.metric_tables]
    return c2
