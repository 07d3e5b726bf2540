"""Phase 1 of the aggregation, per profile: what class 2 needs to know about it.

A profile's reading (through the ``.hpcrun`` and ``.hpctrace`` readers of
:mod:`hpcsa.formats.measurement`, with their checks; a group of profiles at once, as one
batch, :mod:`hpcsa.formats.measurement.hpcrun_batch`) reports its calling-context tree as raw
nodes (:mod:`.profile_nodes`, :mod:`.rawtree`; GPU samples of binaries with a call graph are
reconstructed first, :mod:`.gpu_contexts`), its metric table, identity
(identifier tuple), header and trace size. Reports merge associatively
(:func:`merge`), so they can be combined in any grouping — per worker, per
rank, up a reduction tree — with the same union as the result. Bad input is
refused here, naming the file. What phase 2 needs of a profile is kept in a
scratch directory (:mod:`.kept`), so each file is read once.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from hpcsa.aggregate import kept, rawtree
from hpcsa.aggregate.gpu_contexts import GpuPart
from hpcsa.aggregate.handoff import Discovery, Phase1Env
from hpcsa.aggregate.profile_nodes import ProfileFields, batch_fields, hash_nodes, profile_fields
from hpcsa.aggregate.profile_table import ProfileFacts, ProfileInput, ProfileTable
from hpcsa.core.errors import FormatError, HpcsaError, UnsupportedError
from hpcsa.formats.measurement.hpcrun import HpcrunProfile, LoadModule, MetricDesc, read_hpcrun_tree
from hpcsa.formats.measurement.hpcrun_batch import read_hpcrun_batch
from hpcsa.formats.measurement.hpctrace import FLAG_DATA_CENTRIC, read_hpctrace_header

#: Profiles hashed together in phase 1: at most this many, or this many bytes of .hpcrun files.
HASH_TOGETHER = 64
HASH_TOGETHER_BYTES = 4 << 20  # (the group's files are held until it is hashed)


def survey_profiles(batch: Sequence[ProfileInput], env: Phase1Env) -> Discovery:
    """Phase 1 for a batch of profiles: each profile's only reading. Nodes are hashed a group of profiles at
    a time; what phase 2 needs of each is kept in the scratch directory when there is one (:mod:`.kept`)."""
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


def _table_key(descs: tuple[MetricDesc, ...]) -> tuple[object, ...]:
    return tuple((m.name, m.description, m.formula, m.show, m.val_fmt, m.move2proc, m.period, m.show_percent,
                  m.format) for m in descs)


def trace_records(inp: ProfileInput) -> int:
    """Records in a profile's trace (0 without one), checked by the trace reader's own header checks; refuses
    data-centric traces, as hpcprof does. The records themselves are read in phase 2."""
    if inp.trace is None:
        return 0
    flags, count = read_hpctrace_header(inp.trace)
    if flags & FLAG_DATA_CENTRIC:
        raise UnsupportedError(inp.trace, "data-centric traces are not supported (hpcprof refuses them too)")
    return count


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
        for fact, where in zip(facts, kept.keep(env, profs, nodes, cut, gpus), strict=True):
            fact.kept = where
    disc.profiles = ProfileTable.of(facts)
    disc.raw = rawtree.RawNodes(nodes, modules)
    return merge([disc])  # the union of the nodes (sorted, one row per path)
