"""Phase 1 of the aggregation, per group of profiles: what class 2 needs to know about them.

A group's reading (through the ``.hpcrun`` and ``.hpctrace`` readers of :mod:`hpcsa.formats.measurement`,
with their checks, made once over the group: :func:`~hpcsa.formats.measurement.hpcrun_batch.read_hpcrun_group`)
reports the profiles' calling-context trees as raw nodes (:mod:`.profile_nodes`, :mod:`.rawtree`; GPU
samples of binaries with a call graph are reconstructed first, :mod:`.gpu_contexts`), their metric tables,
identities (identifier tuples), headers and trace sizes, as columns: there is no Python object, and no
Python work, per profile (thousands of small profiles: numpy's cost per call, not the data, would be the
reading's cost). Reports merge associatively (:func:`merge`), so they can be combined in any grouping — per
worker, per rank, up a reduction tree — with the same union as the result. Bad input is refused here,
naming the file: a group with a problem is read again one profile at a time, so that the refusal is the
one of its first bad profile. What phase 2 needs of a profile is kept in a scratch directory
(:mod:`.kept`), small traces included, so each file is read once.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from hpcsa.aggregate import kept, rawtree
from hpcsa.aggregate.gpu_contexts import RECONSTRUCTED, GroupGpu
from hpcsa.aggregate.handoff import Discovery, Phase1Env
from hpcsa.aggregate.profile_nodes import ProfileFields, group_fields, group_gpu, profile_fields
from hpcsa.aggregate.profile_table import ProfileInput, ProfileInputs, ProfileTable
from hpcsa.core.arrays import narrow_counts, offsets
from hpcsa.core.errors import FormatError, HpcsaError, UnsupportedError
from hpcsa.core.fileio import input_error
from hpcsa.core.ragged import Ragged
from hpcsa.formats.measurement.hpcrun import HpcrunProfile, LoadModule, MetricDesc, read_hpcrun_tree
from hpcsa.formats.measurement.hpcrun_batch import HpcrunGroup, group_of, read_hpcrun_group
from hpcsa.formats.measurement.hpctrace import FLAG_DATA_CENTRIC, HEADER_SIZE, RECORD
from hpcsa.formats.measurement.hpctrace import _check_header as check_trace_header  # the reader's own checks

#: Profiles read together in phase 1: at most this many, or this many bytes of .hpcrun files and kept traces.
HASH_TOGETHER = 64
HASH_TOGETHER_BYTES = 4 << 20  # (the group's files are held until it is hashed)


def survey_profiles(batch: ProfileInputs | Sequence[ProfileInput], env: Phase1Env) -> Discovery:
    """Phase 1 for a batch of profiles: each profile's only reading. Profiles are read and hashed a group at
    a time; what phase 2 needs of each is kept in the scratch directory when there is one (:mod:`.kept`)."""
    inputs = batch if isinstance(batch, ProfileInputs) else ProfileInputs.of(list(batch))
    cost = inputs.size.astype(np.int64) + np.where(inputs.trace_size <= kept.KEEP_TRACE_BYTES, inputs.trace_size, 0)
    parts: list[Discovery] = []
    start, size = 0, 0
    for i, c in enumerate(cost.tolist()):
        size += c
        if i + 1 - start >= HASH_TOGETHER or size >= HASH_TOGETHER_BYTES:
            parts.append(_survey_group(inputs.take(np.arange(start, i + 1)), env))
            start, size = i + 1, 0
            if len(parts) >= 4:  # memory bounded by the union, not by the batch's profiles
                parts = [merge(parts)]
    if start < len(inputs):
        parts.append(_survey_group(inputs.take(np.arange(start, len(inputs))), env))
    return merge(parts) if len(parts) != 1 else parts[0]


def survey_profile(inp: ProfileInput, env: Phase1Env) -> Discovery:
    """Phase 1 for one profile (see :func:`survey_profiles`)."""
    return _survey_group(ProfileInputs.of([inp]), env)


def merge(parts: list[Discovery], *, take: bool = False) -> Discovery:
    """The union of reports (associative; metric tables deduplicated). With ``take`` the caller hands the
    reports over: their profile tables are let go column by column as the union's are joined
    (:meth:`.ProfileTable.concat_taking`), and the reports are left without them."""
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
        if take:
            p.profiles = EMPTY_TABLE
        names.update(p.id_names)
    programs = set().union(*(p.programs for p in parts)) if parts else set()
    raw = rawtree.union([p.raw for p in parts])
    table = ProfileTable.concat_taking(profiles)  # (merge's own list of the remapped tables)
    return Discovery(raw, table, tables, names, maps, programs)


#: A report's table once handed over to a union.
EMPTY_TABLE = ProfileTable.of([])


def _table_key(descs: tuple[MetricDesc, ...]) -> tuple[object, ...]:
    return tuple((m.name, m.description, m.formula, m.show, m.val_fmt, m.move2proc, m.period, m.show_percent,
                  m.format) for m in descs)


def trace_records(inp: ProfileInput) -> int:
    """Records in a profile's trace (0 without one), checked by the trace reader's own header checks; refuses
    data-centric traces, as hpcprof does. The records themselves are read in phase 2."""
    return _read_trace(inp.trace)[0] if inp.trace is not None else 0


def _read_trace(path: str) -> tuple[int, int, bytes | None]:
    """(records, flags, the records' bytes where the trace is small enough to keep) of a trace file, checked
    by the trace reader's own header checks; data-centric traces refused, as hpcprof does."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            size = os.fstat(fd).st_size
            data = os.read(fd, size) if size <= kept.KEEP_TRACE_BYTES else os.pread(fd, HEADER_SIZE, 0)
        finally:
            os.close(fd)
    except OSError as exc:
        raise input_error(path, exc, "a trace file", FormatError) from None
    if size <= kept.KEEP_TRACE_BYTES and len(data) != size:
        raise FormatError(path, "the trace file changed while it was read")
    flags, count = check_trace_header(lambda problem: FormatError(path, problem), data[:HEADER_SIZE], size)
    if flags & FLAG_DATA_CENTRIC:
        raise UnsupportedError(path, "data-centric traces are not supported (hpcprof refuses them too)")
    return count, flags, data[HEADER_SIZE:] if size <= kept.KEEP_TRACE_BYTES else None


def _survey_group(group: ProfileInputs, env: Phase1Env) -> Discovery:
    """A group's profiles read together; where the group reader finds a problem (or any check fails), read
    again one by one, so that the refusal is the one of the group's first bad profile, as a reading one by
    one gives."""
    try:
        found = _survey_batch(group, env)
    except HpcsaError:
        found = None
    return found if found is not None else _survey_one_by_one(group, env)


def _survey_batch(group: ProfileInputs | Sequence[ProfileInput], env: Phase1Env) -> Discovery | None:
    """The group read as columns (None where the group reader doubts a file)."""
    group = group if isinstance(group, ProfileInputs) else ProfileInputs.of(list(group))
    n = len(group)
    paths = group.paths()
    g = read_hpcrun_group(paths)
    if g is None:
        return None
    measdirs = [group.dirs[m] for m in group.measdir.tolist()]
    parent, kind, flag, module, ip, modules = group_fields(g, measdirs)
    gpus = group_gpu(g, measdirs, env, module) if env.has_graphs else GroupGpu.empty(n)
    traces = [_read_trace(t) if t is not None else (0, -1, None) for t in group.traces(paths)]
    return _assemble(group, g, (parent, kind, flag, module, ip), modules, gpus, traces, env)


def _survey_one_by_one(group: ProfileInputs | Sequence[ProfileInput], env: Phase1Env) -> Discovery:
    group = group if isinstance(group, ProfileInputs) else ProfileInputs.of(list(group))
    profs: list[HpcrunProfile] = []
    rows: list[tuple[np.ndarray, np.ndarray]] = []
    fields: list[ProfileFields] = []
    traces: list[tuple[int, int, bytes | None]] = []
    for i in range(len(group)):
        inp = group[i]
        prof, order, parent = read_hpcrun_tree(inp.path)
        fields.append(profile_fields(prof, inp, env, (order, parent)))
        traces.append(_read_trace(inp.trace) if inp.trace is not None else (0, -1, None))
        _disorder(prof, inp)
        profs.append(prof)
        rows.append((order, parent))
    g = group_of(profs, rows)
    n_cct = np.diff(g.cut)
    cct_fields = []
    for j, name in enumerate(("parent", "kind", "flag", "module", "ip")):
        parts = [getattr(f, name)[:m] for f, m in zip(fields, n_cct.tolist(), strict=True)]
        if j == 0:  # parent rows within each profile -> rows of the group
            parts = [np.where(p >= 0, p + c, -1) for p, c in zip(parts, g.cut[:-1].tolist(), strict=True)]
        cct_fields.append(np.concatenate(parts) if parts else np.zeros(0, np.int64))
    modules = {h: m for f in fields for h, m in f.modules.items()}
    gpus = GroupGpu.of_parts([f.gpu for f in fields], n_cct)
    return _assemble(group, g, tuple(cct_fields), modules, gpus, traces, env)  # type: ignore[arg-type]  # the five columns, built in a loop


def _disorder(prof: HpcrunProfile, inp: ProfileInput) -> int:
    try:
        return int(prof.header.get("trace-disorder", "0") or 0)
    except ValueError:
        raise FormatError(inp.path, f"trace-disorder {prof.header.get('trace-disorder')!r} "
                          "is not a number") from None


def _assemble(group: ProfileInputs, g: HpcrunGroup,
              cct_fields: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
              modules: dict[int, rawtree.ModuleRef], gpus: GroupGpu, traces: list[tuple[int, int, bytes | None]],
              env: Phase1Env) -> Discovery:
    """A group's report: its nodes hashed as one forest (each profile's CCT rows, then its reconstructed GPU
    nodes), what phase 2 needs of each profile kept, its facts as columns."""
    n = len(group)
    parent, kind, flag, module, ip = cct_fields
    n_cct = np.diff(g.cut)
    n_gpu = np.diff(gpus.ncut)
    ncut = offsets(n_cct + n_gpu)
    # CCT row r of profile k is node ncut[k] + (r - cut[k]) of the forest; its GPU node j, ncut[k] + n_cct[k] + j
    shift = np.repeat(ncut[:-1] - g.cut[:-1], n_cct)
    total = int(ncut[-1])
    f_parent = np.empty(total, np.int64)
    f_kind = np.empty(total, np.uint8)
    f_flag = np.empty(total, np.uint8)
    f_module = np.empty(total, np.uint64)
    f_ip = np.empty(total, np.uint64)
    at = np.arange(len(parent), dtype=np.int64) + shift
    f_parent[at] = np.where(parent >= 0, parent + shift[np.maximum(parent, 0)] if len(parent) else 0, -1)
    f_kind[at], f_flag[at], f_module[at], f_ip[at] = kind, flag, module, ip
    if len(gpus.rows):
        rprof = np.repeat(np.arange(n), np.diff(gpus.rcut))
        f_flag[ncut[:-1][rprof] + gpus.rows] |= RECONSTRUCTED
    if len(gpus.parent):
        gprof = np.repeat(np.arange(n), n_gpu)
        where = ncut[:-1][gprof] + n_cct[gprof] + np.arange(len(gpus.parent)) - gpus.ncut[:-1][gprof]
        f_parent[where] = np.where(gpus.parent >= 0, gpus.parent + ncut[:-1][gprof], -1)
        f_kind[where], f_flag[where], f_module[where], f_ip[where] = gpus.kind, gpus.flag, gpus.module, gpus.ip
    nodes = rawtree.make_nodes(f_parent, f_kind, f_flag, f_module, f_ip, env.seed)
    n_trace = narrow_counts(np.array([t[0] for t in traces], np.int64))
    nothing = np.zeros(n, np.uint32)
    table = ProfileTable(group, Ragged(np.array(g.id_rows), g.tcut.copy()), narrow_counts(g.disorder), g.metrics, n_trace,
                         g.loadmap, (), np.full(n, -1, np.int32), nothing, nothing)
    if env.scratch is not None:
        kept_nodes = np.empty(total, kept.KEPT_NODE)
        for name in kept.KEPT_NODE_FIELDS:
            kept_nodes[name] = nodes[name]
        trace_bytes = [t[2] if t[2] is not None else b"" for t in traces]
        cols = kept.KeptColumns(
            {"ids": g.cct["id"].astype("<u4"), "nodes": kept_nodes, "values": g.values, "index": g.index,
             "trace": np.frombuffer(b"".join(trace_bytes), RECORD),
             "gpu": gpus.values},
            {"ids": g.cut, "nodes": ncut, "values": g.vcut, "index": g.icut,
             "trace": offsets(np.array([len(b) // RECORD.itemsize for b in trace_bytes], np.int64)),
             "gpu": gpus.vcut},
            np.array([t[1] if t[2] is not None else -1 for t in traces], np.int64))
        path, at_kept, size = kept.keep(env, cols)
        table = ProfileTable(group, table.id_tuple, table.trace_disorder, table.metrics, n_trace, table.loadmap,
                             (path,), np.zeros(n, np.int32), narrow_counts(at_kept), narrow_counts(size))
    names: dict[int, str] = {}
    last = {int(t): k for k, t in enumerate(g.names.tolist())}  # each dictionary's last profile
    for t in sorted(last, key=last.__getitem__):  # as updating in profile order leaves it
        names.update(g.id_names[t])
    programs = {b for p in set(g.programs) if (b := os.path.basename(p or ""))}
    disc = Discovery(rawtree.RawNodes(nodes, modules), table, list(g.metric_tables), names, list(g.loadmaps), programs)
    return merge([disc])  # the union of the nodes (sorted, one row per path)
