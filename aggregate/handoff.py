"""What crosses between the phases of ``hpcsa prof``: every object one step hands to the next, declared here.

The steps, in the driver's order (:mod:`.driver`), and what each hands on:

- phase 0 → phase 1: :class:`GpuStructures`, the GPU call graphs (each reader gets them as a
  :class:`Phase1Env`, with the hash seed and the scratch directory);
- phase 1 → class 2: each rank's :class:`Phase1Share`, merged up the ranks: a :class:`Discovery` (the union of
  the profiles' reports) and the structure files parsed (:data:`Parsed`);
- class 2 → every later step: :class:`ClassTwo`, plain data shared with workers (fork) and ranks (pickle);
  rank 0's copy also carries :class:`MetaSource` for meta.db's sink;
- the sinks → phase 2: :class:`Phase2Targets`, the scratch files and trace.db's regions;
- phase 2 → the layout: a batch's :class:`BatchOutput` (a batch is a run of consecutive profiles of the
  canonical order, :func:`batch_bounds`; its profiles' counts as columns), summed into a :class:`Phase2State`
  per rank and reduced up the ranks;
- the layout → phase 3: :class:`Phase3Plan`, with phase 2's :class:`Placement` of every batch's blobs;
- phase 3 → the sinks: :data:`SummaryParts`, the summary values of the context ranges.

Besides these objects, files cross: what phase 1 keeps of each profile for phase 2 (:mod:`.kept`), and the
scratch files of phase 2: the thread blobs in profile.db's format (a batch's one after the other, copied into
profile.db a batch at a time), and per batch a run of its values in cct.db's order (:data:`RUN_VALUE`) and
one of :data:`ASIDE` records, which phase 3 transposes a batch at a time. The per-profile columns these
objects hold are :mod:`.profile_table`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field
from typing import TYPE_CHECKING, Any

import numpy as np

from hpcsa.aggregate import lexical as lx
from hpcsa.aggregate import rawtree
from hpcsa.aggregate.metrictable import MetricTable
from hpcsa.aggregate.profile_table import ProfileTable
from hpcsa.core.binfmt import align
from hpcsa.core.dataclass import dataclass
from hpcsa.core.ragged import Ragged
from hpcsa.formats.db import cctdb, metadb
from hpcsa.formats.db.metadb_model import CALL, INLINED_CALL, LEXICAL
from hpcsa.formats.db.profiledb import SZ_CTX_INDEX, ctx_indices_at
from hpcsa.formats.db.propagate import TreeArrays
from hpcsa.formats.hpcstruct.model import Module
from hpcsa.formats.measurement.hpcrun import LoadModule, MetricDesc

if TYPE_CHECKING:  # hpcsa.gpucct (and networkx) are imported only when there are GPU structure files
    from hpcsa.gpucct import CallGraph

#: Structure-file modules for the classifier: (measurement directory of the file, or None; module).
StructModules = list[tuple[str | None, Module]]
#: Structure files parsed in phase 1: (structure file, measurement directory, module).
Parsed = list[tuple[str, str | None, Module]]


# -- phase 0 -> phase 1 -----------------------------------------------------------------------------------


@dataclass
class GpuStructures:
    """The GPU structure files, read first on every rank: the call graphs of the binaries that have one, by
    load-module key and by the content hash in a ``gpubins/<md5>.gpubin`` name (the same binary recorded
    elsewhere), and every module of the files (class 2 classifies their instructions too)."""

    graphs_by_key: dict[str, CallGraph] = field(default_factory=dict)
    graphs_by_name: dict[str, CallGraph] = field(default_factory=dict)
    modules: StructModules = field(default_factory=list)

    def env(self, seed: int, scratch: str | None) -> Phase1Env:
        """What the readers of phase 1 need, for a run with this hash seed and scratch directory."""
        return Phase1Env(self.graphs_by_key, self.graphs_by_name, seed, scratch)


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
            named = lx.hashed_name(key)
            if named is not None:
                g = self.graphs_by_name.get(named[1])
        return g

    @property
    def has_graphs(self) -> bool:
        return bool(self.graphs_by_key or self.graphs_by_name)


# -- phase 1 -> class 2 -----------------------------------------------------------------------------------


@dataclass
class Discovery:
    """What phase 1 learnt from the profiles it read: their raw contexts, facts, metric tables and load maps."""

    raw: rawtree.RawNodes
    profiles: ProfileTable = field(default_factory=lambda: ProfileTable.of([]))  # columns, no object each
    metric_tables: list[tuple[MetricDesc, ...]] = field(default_factory=list)
    id_names: dict[int, str] = field(default_factory=dict)
    loadmaps: list[tuple[LoadModule, ...]] = field(default_factory=list)
    programs: set[str] = field(default_factory=set)  # program names seen (the title: the first, sorted)

    @property
    def program_name(self) -> str | None:
        """The database's title: the program measured (the first name in sorted order if several were)."""
        return min(self.programs) if self.programs else None


@dataclass
class Phase1Share:
    """What a rank's share of phase 1 found (or the merge of several ranks'): the union of its profiles'
    reports, and the CPU structure files it parsed (only rank 0 parses: only it classifies)."""

    found: Discovery
    parsed: Parsed


# -- class 2 -> every later step ---------------------------------------------------------------------------


@dataclass
class UnifiedTree:
    """The final context tree by canonical id (0 = global; ids are pre-order)."""

    parent: np.ndarray     # int32
    relation: np.ndarray   # int8 (-1 for the root)
    scopes: list[lx.Scope]
    depth: np.ndarray      # int32
    end: np.ndarray        # int64: the subtree of c is ids c .. end[c]-1
    distinct: list[lx.Scope]  # the distinct scopes, sorted
    scope_id: np.ndarray   # int64: each context's scope, as its index in ``distinct``

    def __len__(self) -> int:
        return len(self.parent)

    @property
    def kind(self) -> np.ndarray:
        """Each context's scope kind (``lexical.FUNCTION``, ...; -1 for the root), from its distinct scope."""
        kinds = np.fromiter((s[0] for s in self.distinct), np.int64, len(self.distinct))
        return kinds[self.scope_id]

    @property
    def is_loop(self) -> np.ndarray:
        return self.kind == lx.LOOP

    @property
    def is_call(self) -> np.ndarray:
        """hpcprof's isCall: entered by a call or an inlined call (stops the function scope)."""
        return (self.relation == CALL) | (self.relation == INLINED_CALL)

    @property
    def elided(self) -> np.ndarray:
        """Instructions nested lexically in their line: left out of meta.db, mapped to the parent in traces."""
        return (self.relation == LEXICAL) & (self.kind == lx.POINT)


@dataclass
class MetaSource:
    """What meta.db is made of, before its tables are built (:func:`.metadb_tables.meta_db`)."""

    tree: UnifiedTree
    title: str
    id_names: list[str]
    metrics: list[metadb.Metric]


@dataclass
class ClassTwo:
    """The correlated state every process shares after phase 1: the unified tree and its ids.

    Assembled once from the merged phase-1 reports and the parsed structure files (:mod:`.phase1.class2`):
    the expanded context tree with canonical ids, for every raw node its contexts, the metric table and ids,
    the canonical profile order with finalized identifier tuples, the trace.db layout, and the meta.db
    contents. It is plain data (numpy arrays, lists), cheap to share with worker processes (fork) or to
    broadcast to MPI ranks (pickle), and never changes.
    """

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
    id_tuples: Ragged             # profile.db IDENTIFIER fields, narrow (id_tuples.finalized_rows), same order
    #                               (unless id_order says otherwise)
    trace_reserve: np.ndarray     # records reserved per profile in trace.db (profiles.trace_records)
    meta_source: MetaSource | None  # what meta.db is made of (rank 0 only: not sent to other ranks)
    n_ctx: int
    warnings: list[str] = field(default_factory=list)
    binaries: list[str] = field(default_factory=list)  # binaries read in place of structure files
    #: load modules (as the database names them) with no structure file, binary or symbols to classify by
    unknown_modules: list[str] = field(default_factory=list)
    #: per distinct .hpcrun metric table: (global metric index, period, move2proc) of each of its metrics
    metric_inputs: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=list)
    title: str | None = None  # the program measured (names the database by default)
    #: where set, profile.db's i-th identifier tuple is ``id_tuples[id_order[i]]`` (put in order as written)
    id_order: np.ndarray | None = None

    @property
    def n_prop_ids(self) -> int:
        return int(self.prop.max()) + 1 if self.prop.size else 0

    def take_meta(self) -> MetaSource:
        """What meta.db is made of, given once: to rank 0's meta.db sink, beside its share of phase 2 (the
        other ranks need none of it, so class 2, which they wait for, does not build meta.db's tables). It is
        let go here, not held through phase 3 (the context tree with a Python tuple per scope)."""
        if self.meta_source is None:
            raise RuntimeError("meta.db's contents are only where class 2 was assembled (rank 0), once")
        source, self.meta_source = self.meta_source, None
        return source

    def release_profiles(self) -> None:
        """Let go of the profiles' table (``profiles`` becomes empty) once phase 2 has read them: phase 3 and
        the sinks need only phase 2's counts (some 60 bytes a profile, in every process of phase 3)."""
        self.profiles = self.profiles.take(np.zeros(0, np.int64))

    def take_id_tuples(self) -> tuple[Ragged, np.ndarray | None]:
        """profile.db's identifier tuples and their order (``id_order``), given once: to rank 0's profile.db
        sink, which writes them when it begins the file; let go here, not held through phases 2 and 3 (some 50
        bytes a profile)."""
        tuples, order = self.id_tuples, self.id_order
        self.id_tuples, self.id_order = Ragged.empty(tuples.rows.dtype), None
        return tuples, order

    def __getstate__(self) -> dict[str, object]:
        # another rank never writes meta.db, nor profile.db's identifier tuples (rank 0's sinks do)
        return dict(self.__dict__, meta_source=None, id_tuples=Ragged.empty(self.id_tuples.rows.dtype),
                    id_order=None)


# -- the sinks -> phase 2 ----------------------------------------------------------------------------------


@dataclass
class Phase2Targets:
    """Where class 1 results go: scratch files with their allocators, and the trace file.

    ``allocate(kind, nbytes)`` returns an offset in the scratch file of that
    kind ("pms", "run" or "aside"); locally a counter shared by the worker processes,
    over MPI an atomic counter shared by the ranks. Where the process that
    computes a profile cannot use the counter (an MPI rank's forked workers),
    ``allocate`` is None: the blobs come back in ``pending`` of :class:`.BatchOutput`
    and the rank stores them (:func:`.phase2.values.store`). Rank 0's sinks make the files
    (:meth:`.sinks.DatabaseSinks.begin`); each rank adds its allocator.
    """

    pms_path: str
    run_path: str
    aside_path: str
    trace_path: str | None
    trace_offsets: np.ndarray | None  # int64 offset of each profile's region of trace.db
    allocate: Callable[[str, int], int] | None = None


#: An aside entry: per context, per metric, what kind of number (0: loop-free sum, 1: present) and it, with
#: the profile's index in profile.db (canonical order + 1). A batch's entries are one run, sorted by (context,
#: key, profile).
ASIDE = np.dtype([("ctx", "<u4"), ("key", "<u4"), ("prof", "<u4"), ("value", "<f8")])
ASIDE_NOLOOPS, ASIDE_PRESENT = 0, 1
#: A batch's stored values in cct.db's order, (context, propMetricId, profile): each value with its metric id
#: and its profile's index in profile.db; the run's values come first, then (8-aligned, :func:`run_index_at`)
#: one :data:`RUN_INDEX` entry per context, where its values start in the run. Phase 3 transposes runs, a
#: batch's profiles at once, not profile by profile (:mod:`.phase3.transpose`).
RUN_VALUE = np.dtype([("mid", "<u2"), ("prof", "<u4"), ("value", "<f8")])
#: A run's context index entry: a context of the run, and where its values start among the run's values.
RUN_INDEX = np.dtype([("ctx", "<u4"), ("start", "<u8")])


def run_index_at(n_values: Any) -> Any:
    """Where a run's context index begins, from the run's start (one count or an array of them)."""
    return align(n_values * RUN_VALUE.itemsize, 8)


def pms_sizes(n_values: np.ndarray, n_ctxs: np.ndarray) -> np.ndarray:
    """The bytes of PMS blobs (profile.db's thread blobs) with these counts: values, padded to 4, then the
    context index; always a multiple of 4, so blobs of consecutive profiles lie one after the other."""
    return ctx_indices_at(np.asarray(n_values, np.int64)) + SZ_CTX_INDEX * np.asarray(n_ctxs, np.int64)


def batch_bounds(costs: np.ndarray, workers: int) -> np.ndarray:
    """Phase 2's batches: runs of consecutive profiles of the canonical order, cut where their costs (bytes)
    add up to about 1/12 of a worker's share (a dozen batches per worker of all ranks balance the load;
    few enough keep the hand-offs cheap), at most :data:`BATCH_BYTES` unless one profile is more; as bounds
    ``[0, b1, ..., n]``. A small run's batches are larger than that, up to :data:`MIN_BATCH_BYTES`, as long
    as every worker still has two or so. The same for every rank of a run (the costs are class 2's); the
    database does not depend on them."""
    costs = np.asarray(costs, np.int64)
    n = len(costs)
    if not n:
        return np.zeros(1, np.int64)
    total, workers = int(costs.sum()), max(1, workers)
    target = int(min(BATCH_BYTES, max(1, total // (12 * workers), min(MIN_BATCH_BYTES, total // (2 * workers)))))
    ends = np.cumsum(costs)
    cuts = [0]
    while cuts[-1] < n:
        k = cuts[-1]
        base = int(ends[k - 1]) if k else 0
        # through the profile that reaches the target (at least one profile)
        cuts.append(min(n, max(k + 1, int(np.searchsorted(ends, base + target, side="left")))))
    return np.array(cuts, np.int64)


#: Most input bytes (.hpcrun and .hpctrace, or what phase 1 kept of them) in one phase-2 batch: a batch's
#: arrays take some tens of times its input, so this bounds phase 2's memory whatever the number of profiles.
#: Fewer, larger batches cost less per profile: each batch's numpy calls (about 1 ms of them) and, in phase
#: 3, one read per batch for each window of cct.db (8,192 GPU-stream profiles: 631 batches of 128 KiB, 134,000
#: reads; 158 of 512 KiB, CPU time 4.4 -> 3.8 s at -j 1; the whole tree's peak unchanged, 82 MiB at -j 2).
BATCH_BYTES = 512 << 10

#: What a batch holds at least (its profiles permitting, and two batches or so per worker): each batch costs
#: about a millisecond of numpy calls whatever it holds, which a dozen batches per worker of a small run
#: multiply. The 16 profiles of a large C program (170 KB, the warm-run benchmark's ``bigc`` shape) made 16
#: batches and 26-29 ms of phase 2 in one process; batches of 32 KiB made 6 and 10-12 ms, of 128 KiB 2 and
#: 7.5-8.5 ms (thread CPU, min and median of 6 runs each). Runs of more than 1.5 MB per two workers have
#: the same batches as before.
MIN_BATCH_BYTES = 64 << 10


# -- phase 2 -> the layout ---------------------------------------------------------------------------------


@dataclass
class BatchOutput:
    """A batch's class 1 facts: where its blobs are (its profiles' PMS blobs one after the other, its run,
    its aside run), each of its profiles' counts, and what cct.db's layout needs of them together (each
    context and each (context, word) once)."""

    batch: int
    n_values: np.ndarray      # per profile of the batch: values of its PMS blob
    n_ctxs: np.ndarray        # its contexts
    trace_count: np.ndarray   # trace elements written
    pms_offset: int           # in the scratch file (0 until stored, see ``pending``)
    run_offset: int
    run_values: int
    run_ctxs: int
    aside_offset: int
    n_aside: int
    ctx: np.ndarray           # contexts with values
    n_ctx_values: np.ndarray  # values per such context, over the batch
    ctx_metric_bits: tuple[np.ndarray, np.ndarray, np.ndarray]  # (context, word, bits) of the propMetricIds
    trace_min: int | None = None
    trace_max: int | None = None
    pending: tuple[bytes, bytes, bytes] | None = None  # the batch's (PMS blobs, run, aside run) not yet written


@dataclass
class Placement:
    """Where phase 2 put the profiles' values: each profile's counts (canonical order), and per batch (the
    profiles ``batches[b]`` to ``batches[b + 1] - 1``) its PMS blobs, its run and its aside run."""

    n_values: np.ndarray      # int64 per profile
    n_ctxs: np.ndarray        # int64 per profile
    batches: np.ndarray       # int64 bounds, len = batches + 1
    pms_offset: np.ndarray    # int64 per batch
    run_offset: np.ndarray
    run_values: np.ndarray
    run_ctxs: np.ndarray
    aside_offset: np.ndarray
    n_aside: np.ndarray

    @classmethod
    def empty(cls, n_profiles: int, batches: np.ndarray, counts: tuple[type, type] = (np.int64, np.int64)
              ) -> Placement:
        """Nothing placed; the profiles' counts of values and contexts of the types ``counts``."""
        nb = max(0, len(batches) - 1)
        return cls(np.zeros(n_profiles, counts[0]), np.zeros(n_profiles, counts[1]), np.asarray(batches, np.int64),
                   *(np.zeros(nb, np.int64) for _ in range(6)))

    @property
    def pms_size(self) -> np.ndarray:
        """Each profile's PMS blob bytes."""
        return pms_sizes(self.n_values, self.n_ctxs)

    def batch_pms_size(self) -> np.ndarray:
        """Each batch's PMS blobs' bytes (its profiles', one after the other)."""
        ends = np.concatenate([[0], np.cumsum(self.pms_size)])
        return ends[self.batches[1:]] - ends[self.batches[:-1]]

    def merge(self, other: Placement) -> None:
        """Add another state's placements (each profile and batch is set in exactly one)."""
        for name in ("n_values", "n_ctxs", "pms_offset", "run_offset", "run_values", "run_ctxs", "aside_offset",
                     "n_aside"):
            if name in ("n_values", "n_ctxs") and not len(other.n_values):  # (a state without the counts)
                continue
            getattr(self, name)[:] += getattr(other, name)


@dataclass
class Phase2State:
    """What phase 2 hands to phase 3: where each batch's blobs are, and the counts cct.db's layout needs.

    :meth:`add` takes one batch's output; :func:`.merge` combines the states of several workers or
    ranks (sums, ORs, min/max and disjoint placements: associative and exact, so any grouping gives the
    same result — an MPI transport reduces it up its tree).
    """

    place: Placement
    ctx_values: np.ndarray   # values per context, over all profiles
    ctx_bits: np.ndarray     # [contexts, words] the propMetricIds each context has, as bits
    trace_count: np.ndarray  # elements written per profile
    t_lo: int | None = None  # time range of the timepoints read
    t_hi: int | None = None
    done_by: dict[int, int] = field(default_factory=dict)  # profiles processed, per rank

    @classmethod
    def empty(cls, c2: ClassTwo, batches: np.ndarray, *, counts: bool = True) -> Phase2State:
        """A state with nothing added; without ``counts``, with no per-profile counts (of length 0). A
        profile's counts are 4 bytes each where their bounds allow (contexts: ids are 32-bit; values: at
        most one per context and metric; trace elements: at most its reserve), as in every rank."""
        n = len(c2.profiles) if counts else 0
        words = max(1, (c2.n_prop_ids + 63) // 64)
        n_values = np.uint32 if c2.n_ctx * max(1, c2.n_prop_ids) <= 0xFFFFFFFF else np.int64
        n_trace = np.uint32 if int(c2.trace_reserve.max(initial=0)) <= 0xFFFFFFFF else np.int64
        return cls(Placement.empty(n, batches, (n_values, np.uint32)), np.zeros(c2.n_ctx, np.int64),
                   np.zeros((c2.n_ctx, words), np.uint64), np.zeros(n, n_trace))

    def add(self, batch: BatchOutput) -> None:
        """Take a batch's facts (its blobs stored)."""
        p, b = self.place, batch.batch
        lo, hi = int(p.batches[b]), int(p.batches[b + 1])
        p.n_values[lo:hi], p.n_ctxs[lo:hi], self.trace_count[lo:hi] = batch.n_values, batch.n_ctxs, batch.trace_count
        self.add_totals(batch)

    def add_totals(self, batch: BatchOutput) -> None:
        """Take a batch's facts but its profiles' counts (a state with none, :meth:`empty`'s ``counts=False``:
        a forked worker of phase 2 sends its batches' counts apart, :mod:`.phase2.share`)."""
        p, b = self.place, batch.batch
        p.pms_offset[b], p.run_offset[b], p.run_values[b] = batch.pms_offset, batch.run_offset, batch.run_values
        p.run_ctxs[b], p.aside_offset[b], p.n_aside[b] = batch.run_ctxs, batch.aside_offset, batch.n_aside
        self._time_range(batch.trace_min, batch.trace_max)
        self.ctx_values[batch.ctx] += batch.n_ctx_values  # contexts are distinct within a batch
        bc, bw, bb = batch.ctx_metric_bits
        self.ctx_bits[bc, bw] |= bb  # so are (context, word) pairs

    def _time_range(self, lo: int | None, hi: int | None) -> None:
        if lo is not None and hi is not None:
            self.t_lo = lo if self.t_lo is None else min(self.t_lo, lo)
            self.t_hi = hi if self.t_hi is None else max(self.t_hi, hi)

    def merge(self, other: Phase2State) -> None:
        """Add another state (one without per-profile counts adds none)."""
        self.place.merge(other.place)
        self.ctx_values += other.ctx_values
        self.ctx_bits |= other.ctx_bits
        if len(other.trace_count):
            self.trace_count += other.trace_count
        for rank, count in other.done_by.items():
            self.done_by[rank] = self.done_by.get(rank, 0) + count
        self._time_range(other.t_lo, other.t_hi)

    def cct_layout(self) -> cctdb.CctLayout:
        return cctdb.CctLayout.from_counts(self.ctx_values, _popcount(self.ctx_bits))


def _popcount(bits: np.ndarray) -> np.ndarray:
    if not bits.size:
        return np.zeros(len(bits), np.int64)
    b = bits.view(np.uint8).reshape(len(bits), -1)
    return np.unpackbits(b, axis=1).sum(axis=1).astype(np.int64)


# -- the layout -> phase 3 -> the sinks --------------------------------------------------------------------


@dataclass
class Phase3Plan:
    """What every rank needs for phase 3 once rank 0 has laid the files out
    (:meth:`.sinks.DatabaseSinks.layout`): where each profile's blobs are in the scratch files, cct.db's
    layout, the partial cct.db and profile.db that every rank writes into (its cct.db blocks; its share of
    the thread blobs, at ``profile_offsets``) and phase 3's tasks; and phase 2's totals, which every rank
    reports."""

    place: Placement
    layout: cctdb.CctLayout
    pms_path: str
    run_path: str
    aside_path: str
    cct_path: str
    profile_path: str
    profile_offsets: np.ndarray  # where each profile's thread blob goes in profile.db (canonical order)
    trace_elements: int
    rank_profiles: list[int]     # profiles each rank processed in phase 2
    #: phase 3's tasks: groups of consecutive context ranges, as bounds (decided once, by rank 0)
    groups: list[list[int]] = field(default_factory=list)


#: Phase 3's summary values, by group of context ranges: each range's (context, statMetricId, value).
SummaryParts = dict[int, list[tuple[np.ndarray, np.ndarray, np.ndarray]]]
