"""Phase 1's class 2: the tables every process needs before class 1 can run, assembled once by rank 0.

From the merged phase-1 reports (:class:`.handoff.Discovery`) and the parsed
structure files this builds :class:`.handoff.ClassTwo`: one source of information per load module
(:func:`build_classifier`), the expanded context tree with canonical ids (:mod:`.phase1.unify`), for
every raw node its contexts, the metric table and ids (:mod:`.metrictable`), the canonical profile order
with finalized identifier tuples (:mod:`.phase1.id_tuples`), the trace.db layout, and what meta.db is
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
from hpcsa.aggregate.phase1.id_tuples import finalize_id_tuples, profile_order
from hpcsa.aggregate.profile_table import ProfileTable
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
                                            witnesses=witnesses, warmed=warmer, search=inputs.binary_folders)
    return assemble(found, classifier, env, statistics=statistics, title=found.program_name, warnings=warnings)


#: A structure file matched to a load module by file name alone is used when at least this share of the
#: addresses sampled in the module fall in its statements (a structure file of another build of the same
#: program leaves most of them out).
MIN_FIT = 0.9


def build_classifier(raw: rawtree.RawNodes, structs: list[tuple[str | None, Module]], *,
                     kernel_symbols: bool = True, fallback: bool = True,
                     witnesses: list[tuple[str | None, str, str | None]] | None = None,
                     warmed: ChainWarmer | None = None, search: list[str] | None = None
                     ) -> tuple[lx.Classifier, list[str]]:
    """One source of information per load module that the union uses: structure, kernel symbols, binary.

    A structure file names the load module it describes; one the user gave (``-S``, no measurement
    directory) that names none of the measured paths is used for the module with its file name, where that
    is one module and the addresses sampled there fall in its statements (:data:`MIN_FIT`): a binary moved
    after the measurement, analysed where it is now. ``witnesses`` are structure files not used for
    attribution (``--ignore-structs``): (measurement directory, path, load module named in it); they only
    vouch for the binaries read in their place. ``warmed``: the expanders whose chains phase 1 computed
    already. ``search``: folders where binaries moved from their recorded paths are looked for by name
    (``--binaries``).
    """
    warnings: list[str] = []
    used = {int(h) for h in sorted_unique(raw.nodes["module"]).tolist() if h}
    refs = {h: raw.modules[h] for h in sorted(used, key=lambda h: raw.modules[h].key if h in raw.modules else "")
            if h in raw.modules}
    cls = lx.Classifier(display={r.key: r.path for r in refs.values()})
    by_key = {r.key: r for r in refs.values()}
    unmatched: list[Module] = []
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
        else:
            if struct_measdir is None and not any(k in by_key for k in lx.struct_keys(module, None)):
                unmatched.append(module)
    for module in unmatched:
        _match_by_name(raw, refs, module, cls, warnings, warmed)
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
            binary = lx.trusted_binary(lx.ModuleInfo(ref.key, ref.path, ref.measdir), warnings, witness,
                                       search or ())
            if binary is not None:
                syms = lx.read_binary(binary, ref.path, warnings)
                if syms is not None:
                    cls.binaries[ref.key] = syms
                    cls.read_from.append(binary)
    return cls, warnings


def _match_by_name(raw: rawtree.RawNodes, refs: dict[int, rawtree.ModuleRef], module: Module,
                   cls: lx.Classifier, warnings: list[str], warmed: ChainWarmer | None) -> None:
    """Use a structure file (``-S``) that names no measured load module for the one module with its file
    name, where the addresses sampled in that module fall in its statements; say so either way."""
    name = os.path.basename(module.path)
    same = [(h, r) for h, r in refs.items() if os.path.basename(r.path) == name and r.key not in cls.structs]
    if len(same) != 1:
        why = "no load module of the measurement has its file name" if not same else \
            f"{len(same)} load modules have its file name ({', '.join(sorted(r.path for _, r in same))})"
        warnings.append(f"the structure file made from {module.path} (-S) is not used: {why}")
        return
    h, ref = same[0]
    sampled = np.unique(raw.nodes["ip"][raw.nodes["module"] == np.uint64(h)])
    fit = float(np.mean(module.lookup(sampled) >= 0)) if len(sampled) else 1.0
    if fit < MIN_FIT:
        warnings.append(f"the structure file made from {module.path} (-S) is not used for {ref.path}: only "
                        f"{100 * fit:.1f} % of the addresses sampled in it fall in its statements, so it was "
                        "made from another build")
        return
    cls.structs[ref.key] = (warmed.expander(module, ref.path) if warmed is not None
                            else lx.StructExpander(module, ref.path))
    warnings.append(f"the structure file made from {module.path} (-S) is used for {ref.path} by their file name: "
                    f"{100 * fit:.1f} % of the addresses sampled there fall in its statements (neither records "
                    "an identity that could confirm the build)")


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
    """The class-2 tables of the union ``disc``, its modules classified by ``classifier``. Its profiles' table
    is handed over (``disc.profiles`` becomes empty): reordered into profile.db's order a column at a time
    (:meth:`.ProfileTable.take_taking`), so that the union's table and profile.db's are not both whole."""
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

    table = disc.profiles  # handed over: reordered into profile.db's order column by column, the union let go
    disc.profiles = ProfileTable.of([])

    def source(t: int, of: ProfileTable = table) -> str:  # (the table by value: it is handed on below)
        return of.inputs.path(int(np.flatnonzero(of.metrics == t)[0]))

    metrics = MetricTable.from_descs(disc.metric_tables, statistics, source=source)
    del source
    prop = np.full((len(metrics), 4), -1, np.int64)
    for m in range(len(metrics)):
        for s, pid in metrics.prop_ids(m).items():
            prop[m, SCOPE_ORDER.index(s)] = pid

    def raw_read() -> None:  # the raw identifier tuples let go before the logical ids are numbered
        nonlocal table
        table = table.without_id_tuples()

    tuples = finalize_id_tuples(table.id_tuple, raw_read)
    order = profile_order(table.inputs, tuples)  # (the tuples are put in this order as profile.db is written)
    handed = [table]
    del table
    profiles = ProfileTable.take_taking(handed, order)
    if len(profiles) >= 0xFFFFFFFF:
        raise HpcsaError(None, "too many profiles for one database")

    names = disc.id_names or dict(enumerate(metadb.DEFAULT_ID_NAMES))
    id_names = [names[k] for k in sorted(names)]
    meta = MetaSource(tree, title or "<unnamed>", id_names, metrics.metadb_metrics())
    c2 = ClassTwo(env.seed, disc.raw.nodes["h1"].copy(), disc.raw.nodes["h2"].copy(), full, rel, arrays,
                  trace_id, metrics, prop, env, profiles, disc.metric_tables, disc.loadmaps, tuples,
                  profiles.trace_records, meta, len(tree), list(warnings or []), binaries, title=title, id_order=order)
    c2.metric_inputs = [metrics.input_arrays(t) for t in disc.metric_tables]
    c2.unknown_modules = sorted(path for key, path in classifier.display.items()
                                if key not in classifier.structs and key not in classifier.binaries
                                and key not in classifier.kernels)
    return c2
