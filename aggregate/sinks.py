"""The database's files, one sink each, as hpcprof's sinks: told when the run begins, when the layout is
known, and when to finish (HPCToolkit's sources: ``src/lib/profile/sinks/``).

Rank 0 owns every file; the driver calls the sinks (:class:`DatabaseSinks`) through the transport's
broadcasts, so only rank 0 ever runs them, and what the other ranks need of them (the partial files'
paths, the regions and offsets where they write) is what those calls return (:mod:`.handoff`):

===========================  ==========================  ===========================  ===========================
file                         begin (phase 2 starts)      layout (phase 2's counts)    finish (phase 3 done)
===========================  ==========================  ===========================  ===========================
meta.db, metrics yaml, src/  written whole, beside rank 0's share of phase 2 (class 2 settled all of it)
---------------------------  ------------------------------------------------------------------------------------
trace.db                     every profile's region      each line's length, the      footer
                             reserved                    time range; the headers
cct.db                                                   opened with its layout       footer (blocks: every rank)
profile.db                   identifier tuples written   the thread blobs' offsets    the summary profile
                                                         (copied by every rank) and   written
                                                         infos written
===========================  ==========================  ===========================  ===========================

Everything is written inside a partial directory that becomes the database when complete
(:func:`hpcsa.core.outputs.atomic_dir`); on an error each partial file and the directory are removed.
"""

from __future__ import annotations

import contextlib
import os
from types import TracebackType
from typing import BinaryIO

import numpy as np

from hpcsa.aggregate import copy_sources, metadb_tables
from hpcsa.aggregate.handoff import ClassTwo, Phase2State, Phase2Targets, Phase3Plan, Placement, SummaryParts
from hpcsa.core.arrays import narrow_counts
from hpcsa.core.arrays import offsets as offsets_of
from hpcsa.core.fileio import copy_range, pwrite_all
from hpcsa.core.outputs import atomic_dir
from hpcsa.core.ragged import Ragged
from hpcsa.formats.db import cctdb, database, metadb, metricsyaml, profiledb, tracedb
from hpcsa.formats.db import dbformat as dbf


class SourcesSink:
    """``src/``: the source files meta.db names that can be read here, copied for viewers' source panes
    (:mod:`.copy_sources`); meta.db then names the copies."""

    def __init__(self, wanted: bool, replace_paths: tuple[tuple[str, str], ...]) -> None:
        self.wanted = wanted
        self.replace_paths = replace_paths
        self.note: str | None = None  # the sources that could not be copied, in one line

    def write(self, db_dir: str, meta: metadb.MetaDB) -> metadb.MetaDB:
        """Copy the sources into ``db_dir/src``; ``meta`` naming the copies."""
        if not self.wanted:
            return meta
        done = copy_sources.copy_sources(meta, db_dir, self.replace_paths)
        self.note = copy_sources.missing_note(done.missing, done.count + len(done.missing))
        return done.meta


class MetaSink:
    """meta.db and ``metrics/default.yaml`` (the metric taxonomy), with ``src/``: written whole, since class 2
    settled all they hold, by rank 0 beside its share of phase 2 (while its workers run, or between its
    tasks), as nothing else needs them; the other ranks do not wait."""

    def __init__(self, c2: ClassTwo, sources: SourcesSink) -> None:
        self.c2 = c2
        self.sources = sources
        self.contexts = 0  # the database's contexts, as every command counts them (database.context_count)

    def write(self, db_dir: str) -> None:
        meta = self.sources.write(db_dir, metadb_tables.meta_db(self.c2.take_meta()))
        self.contexts = database.context_count(meta)
        metadb.write_metadb(os.path.join(db_dir, database.META), meta)
        os.makedirs(os.path.join(db_dir, "metrics"))
        metricsyaml.write_metrics_yaml(os.path.join(db_dir, database.METRICS_YAML),
                                       self.c2.metrics.taxonomy())


class TraceSink:
    """trace.db: every profile's region reserved when phase 2 begins (its records in the measurement bound the
    line), filled by the process that propagates the profile (:mod:`.phase2.traces`); each line's length and
    the time range recorded once phase 2's counts are in, and the headers written then
    (:meth:`~hpcsa.formats.db.tracedb.TraceDBWriter.write_heads_now`) and let go."""

    def __init__(self, c2: ClassTwo, wanted: bool) -> None:
        self.c2 = c2
        self.wanted = wanted and bool(c2.trace_reserve.any())
        self._writer: tracedb.TraceDBWriter | None = None

    def begin(self, files: contextlib.ExitStack[bool | None], db_dir: str
              ) -> tuple[str | None, np.ndarray | None]:
        """(the partial file, each profile's region in it); (None, None) without traces."""
        if not self.wanted:
            return None, None
        n = len(self.c2.profiles)
        writer = tracedb.TraceDBWriter(os.path.join(db_dir, database.TRACE), range(1, n + 1),
                                       reserve=self.c2.trace_reserve)
        self._writer = files.enter_context(writer)
        return self._writer.temp_path, self._writer.starts

    def layout(self, state: Phase2State) -> None:
        """Each line's length (its region's start is its own, reserved), and the time range."""
        tw = self._writer
        if tw is not None:
            tw.record_lengths(state.trace_count)
            tw.time_range = (state.t_lo or 0, state.t_hi or 0)
            tw.write_heads_now()


class CctSink:
    """cct.db: opened once its layout is known (values and metrics per context, counted in phase 2); every
    rank's phase 3 writes its context ranges' blocks into it (:mod:`.phase3.transpose`); the footer last."""

    def layout(self, files: contextlib.ExitStack[bool | None], db_dir: str, layout: cctdb.CctLayout) -> str:
        """The partial file, laid out."""
        return files.enter_context(cctdb.CctDBWriter(os.path.join(db_dir, database.CCT), layout)).temp_path


class _ProfileDBWriter(profiledb.ProfileDBWriter):
    """:class:`hpcsa.formats.db.profiledb.ProfileDBWriter` whose metadata for the thread profiles is written as
    soon as it is known and let go (the same bytes): the identifier tuples when the file is begun (phase 2
    starts), the profile infos once phase 2's counts place the blobs (:meth:`lay_out_threads`: one after the
    other in canonical order). Both are laid out record by record, a block of profiles at a time: the writer's
    own layout indexes every byte of the section at once, some 500 bytes of index per profile, which at a
    quarter of a million profiles was the run's peak; the tuples (about 50 bytes a profile) and the infos (48)
    are not held through phases 2 and 3, nor their temporaries made for every profile at once (at 65,536
    profiles the file's layout took +11 MiB). Only the summary profile's info (profile 0) is kept, written at
    the end."""

    #: Profiles laid out at once (a few hundred bytes of temporaries each).
    BLOCK = 1 << 12

    def __init__(self, path: str, id_tuples: Ragged, order: np.ndarray | None = None) -> None:
        """Profile ``i``'s tuple is ``id_tuples[order[i]]`` (``order`` None: ``id_tuples[i]``), put in order a
        block at a time as the tuples are written: class 2 does not hold them in both orders."""
        dbf.StreamedWriter.__init__(self, path)
        n = len(id_tuples)
        if order is None:
            self.tuples = id_tuples
        else:  # the layout: the lengths in profile.db's order, no rows
            self.tuples = Ragged(id_tuples.rows[:0], offsets_of(id_tuples.lengths[order]))
        # (rows of any widths that hold their values: each block is made profile.db's records as it is written)
        self._source, self._order = id_tuples, order
        self.n_threads = n
        self.infos = np.zeros(1, profiledb.PROFILE_INFO)  # the summary's
        self.infos["flags"][0] = profiledb.IS_SUMMARY
        self._written = np.zeros(1, bool)
        self.ids_at = profiledb.id_tuples_at(n)
        self.ids_size = profiledb.id_tuples_size(n, len(id_tuples.rows))
        self.data_start = self.ids_at + self.ids_size
        self._next = self.data_start
        self._end = self.data_start
        # identifiers before each tuple, for the infos' pIdTuple (held through phase 2: narrow)
        self._before = narrow_counts(self.tuples.offsets)

    def _tuple_at(self, a: int, b: int) -> np.ndarray:
        """Where tuples a..b (and the one after) begin in the Identifier Tuple section."""
        return profiledb.id_tuple_pointers(0, a, self._before[a:b + 1].astype(np.int64))

    def _start(self, fh: BinaryIO) -> None:
        super()._start(fh)
        lengths = self.tuples.lengths
        offsets = self.tuples.offsets
        head_type = dbf.record_dtype(profiledb.ID_TUPLE_HDR_FIELDS, profiledb.SZ_ID_TUPLE_HDR)
        fd = fh.fileno()
        for a in range(0, len(lengths), self.BLOCK):
            b = min(len(lengths), a + self.BLOCK)
            at_all = self._tuple_at(a, b)
            at = at_all[:-1] - at_all[0]
            area = np.zeros(int(at_all[-1] - at_all[0]), np.uint8)
            head = np.zeros(b - a, head_type)
            head["nIds"] = lengths[a:b]
            dbf.scatter_records(area, at, head)
            lo, hi = int(offsets[a]), int(offsets[b])
            owner = np.repeat(np.arange(b - a), lengths[a:b])
            k = np.arange(lo, hi) - offsets[a:b][owner]
            rows = profiledb.identifier_rows(self._source.rows[lo:hi] if self._order is None
                                             else self._source.take(self._order[a:b]).rows)
            dbf.scatter_records(area, at[owner] + profiledb.SZ_ID_TUPLE_HDR + profiledb.SZ_IDENTIFIER * k,
                                rows)
            pwrite_all(fd, area.data, self.ids_at + int(at_all[0]))
        self.tuples = Ragged.empty(self.tuples.rows.dtype)  # written: let go
        self._source, self._order = self.tuples, None

    def lay_out_threads(self, place: Placement) -> np.ndarray:
        """Place the thread profiles' blobs (one after the other, in canonical order) and write their infos;
        where each blob goes."""
        offsets = self.allocate_many(place.pms_size)
        fd = self.fileno
        for a in range(0, self.n_threads, self.BLOCK):  # the profiles' infos (profile i + 1 is tuple i's)
            b = min(self.n_threads, a + self.BLOCK)
            infos = np.zeros(b - a, profiledb.PROFILE_INFO)
            nv = place.n_values[a:b].astype(np.int64)  # (a narrow count: sums in int64)
            blob = offsets[a:b]
            infos["nValues"] = nv
            infos["pValues"] = blob
            infos["nCtxs"] = place.n_ctxs[a:b]
            infos["pCtxIndices"] = blob + profiledb.ctx_indices_at(nv)
            infos["pIdTuple"] = self.ids_at + self._tuple_at(a, b)[:-1]
            pwrite_all(fd, infos.view(np.uint8).data, profiledb.PROFILES_AT + profiledb.SZ_PROFILE_INFO * (a + 1))
        self._before = self._before[:0]
        return offsets

    def _finish(self) -> None:
        """The header, the summary profile's info and the footer (the rest was written when the file was
        begun, :meth:`_start`, and laid out, :meth:`lay_out_threads`)."""
        assert self._fh is not None
        if not self._written[0]:
            self.infos["pValues"][0] = self.infos["pCtxIndices"][0] = self._end
        fd = self._fh.fileno()
        self._write_head(fd, self.n_threads + 1)
        pwrite_all(fd, self.infos.view(np.uint8).data, profiledb.PROFILES_AT)
        self._write_footer()

    def _write_id_tuples(self, fd: int) -> None:
        """(Written when the file was begun.)"""


class ProfileSink:
    """profile.db: begun with its identifier tuples when phase 2 starts; the thread blobs' places in canonical
    order allocated, and their infos written, once their sizes are known; the blobs copied there by every rank
    from phase 2's scratch file (:func:`copy_thread_blobs`); the summary profile from phase 3's parts written
    by rank 0 at the end."""

    def __init__(self, c2: ClassTwo) -> None:
        self.c2 = c2
        self._writer: _ProfileDBWriter | None = None
        self._place: Placement | None = None
        self._offsets = np.zeros(0, np.int64)

    def begin(self, files: contextlib.ExitStack[bool | None], db_dir: str) -> None:
        """The partial file begun, its identifier tuples written and let go (before phase 2 and trace.db's heads)."""
        self._writer = files.enter_context(_ProfileDBWriter(os.path.join(db_dir, database.PROFILE),
                                                            *self.c2.take_id_tuples()))

    def layout(self, place: Placement) -> tuple[str, np.ndarray]:
        """(the partial file, where each profile's thread blob goes: one after the other in canonical order,
        so a batch's blobs, consecutive in the scratch file, are one copy)."""
        if self._writer is None:
            raise RuntimeError("profile.db is laid out once begun")
        self._place, self._offsets = place, self._writer.lay_out_threads(place)
        return self._writer.temp_path, self._offsets

    def finish(self, parts: SummaryParts) -> int:
        """Record the copied blobs and write the summary profile; the summary's values."""
        assert self._writer is not None and self._place is not None
        summary = summary_values([part for i in sorted(parts) for part in parts[i]])
        self._writer.write_summary(summary)  # (the thread profiles' infos were written at the layout)
        return len(summary.values)


def summary_values(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> profiledb.ProfileValues:
    """The summary profile from the ranges' parts (in range order)."""
    if not parts:
        z = np.zeros(0, np.int64)
        return profiledb.ProfileValues.from_triples(z, z, np.zeros(0))
    return profiledb.ProfileValues.from_triples(np.concatenate([p[0] for p in parts]),
                                                np.concatenate([p[1] for p in parts]),
                                                np.concatenate([p[2] for p in parts]))


def copy_thread_blobs(plan: Phase3Plan, rows: range) -> None:
    """Batches ``rows``' thread blobs, copied from the scratch file to their profiles' offsets in the partial
    profile.db, a batch at a time (its profiles are consecutive in both), file to file in the kernel
    (:func:`.copy_range`); every rank copies its share, rank 0 records them all (:meth:`ProfileSink.finish`)."""
    place = plan.place
    first = place.batches[:-1][rows]
    sizes = place.batch_pms_size()[rows]
    src = os.open(plan.pms_path, os.O_RDONLY)
    try:
        dst = os.open(plan.profile_path, os.O_WRONLY)
        try:
            for at, to, size in zip(place.pms_offset[rows].tolist(), plan.profile_offsets[first].tolist(),
                                    sizes.tolist(), strict=True):
                copy_range(src, dst, at, to, size)
        finally:
            os.close(dst)
    finally:
        os.close(src)


class DatabaseSinks:
    """The sinks of one database, owned by the driver (every rank holds one; only rank 0's is called).

    A context manager: leaving it with an error removes the partial files and directory; leaving it after
    :meth:`finish` renames the directory into place.
    """

    def __init__(self, output: str, c2: ClassTwo, *, traces: bool, sources: bool,
                 replace_paths: tuple[tuple[str, str], ...]) -> None:
        self.output = output
        self.meta = MetaSink(c2, SourcesSink(sources, replace_paths))
        self.trace = TraceSink(c2, traces)
        self.cct = CctSink()
        self.profile = ProfileSink(c2)
        self._directory = contextlib.ExitStack()  # the partial directory, then (inside) the open files
        self._files = contextlib.ExitStack()
        self._dir = ""
        self._scratch = ("", "", "")  # phase 2's scratch files: thread blobs, runs, aside runs

    def __enter__(self) -> DatabaseSinks:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> bool | None:
        return self._directory.__exit__(exc_type, exc, tb)

    def begin(self) -> Phase2Targets:
        """The partial directory, phase 2's scratch files and trace.db's regions."""
        self._dir = self._directory.enter_context(atomic_dir(self.output))
        self._directory.enter_context(self._files)
        pms_path, run_path, aside_path = self._scratch = (os.path.join(self._dir, ".profile.scratch"),
                                                          os.path.join(self._dir, ".run.scratch"),
                                                          os.path.join(self._dir, ".aside.scratch"))
        for p in self._scratch:
            open(p, "wb").close()
        self.profile.begin(self._files, self._dir)  # (first: its identifier tuples let go before trace.db's heads)
        trace_path, trace_offsets = self.trace.begin(self._files, self._dir)
        return Phase2Targets(pms_path, run_path, aside_path, trace_path, trace_offsets)

    def write_meta(self) -> None:
        """meta.db, the metric taxonomy and src/ (see :class:`MetaSink`)."""
        self.meta.write(self._dir)

    def layout(self, state: Phase2State, ranks: int) -> Phase3Plan:
        """Phase 2's counts in (those of all ``ranks``): trace.db's lines recorded, cct.db and profile.db laid
        out."""
        self.trace.layout(state)
        layout = state.cct_layout()
        cct_path = self.cct.layout(self._files, self._dir, layout)
        profile_path, offsets = self.profile.layout(state.place)
        pms_path, run_path, aside_path = self._scratch
        return Phase3Plan(state.place, layout, pms_path, run_path, aside_path, cct_path, profile_path, offsets,
                          int(state.trace_count.sum()), [state.done_by.get(r, 0) for r in range(ranks)])

    def finish(self, parts: SummaryParts) -> int:
        """profile.db's blobs recorded and its summary written; every file closed (cct.db's footer, trace.db's
        headers, profile.db's metadata: all complete), the scratch files removed. The summary's values."""
        n_summary = self.profile.finish(parts)
        self._files.close()
        for p in self._scratch:
            os.unlink(p)
        return n_summary
