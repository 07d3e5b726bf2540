"""``trace.db`` v4.0: one time-ordered line of (timestamp, context id) per profile.

Reading (:class:`TraceDB`) parses the trace headers eagerly and each trace line
on request (:meth:`TraceDB.trace`). Writing (:class:`TraceDBWriter`) reserves
the headers and, optionally, a region per trace sized for its largest possible
line (as hpcprof does: ``align8(max_count * 12)``), writes lines into their
regions (trimming ``pEnd`` to what was written), and puts the footer after the
last region. Header slot ``i`` conventionally holds profile ``i + 1``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import BinaryIO

import numpy as np

from hpcsa.core.binfmt import align
from hpcsa.core.fileio import pwrite_all
from hpcsa.formats.db import dbformat as dbf

TAG = b"trce"
SECTIONS = ("CtxTraces",)
HEADER_SIZE = 0x10 + 16 * len(SECTIONS)

TRACES_HDR_FIELDS = [("pTraces", 0x00, "u8"), ("nTraces", 0x08, "u4"), ("szTrace", 0x0C, "u1"),
                     ("minTimestamp", 0x10, "u8"), ("maxTimestamp", 0x18, "u8")]
TRACE_HDR_FIELDS = [("profIndex", 0x00, "u4"), ("pStart", 0x08, "u8"), ("pEnd", 0x10, "u8")]
ELEMENT_FIELDS = [("timestamp", 0x00, "u8"), ("ctxId", 0x08, "u4")]  # odd elements are unaligned

SZ_TRACES_HDR, SZ_TRACE_HDR, SZ_ELEMENT = 0x20, 0x18, 0x0C
TRACES_HDR = dbf.record_dtype(TRACES_HDR_FIELDS, SZ_TRACES_HDR)
TRACE_HDR = dbf.record_dtype(TRACE_HDR_FIELDS, SZ_TRACE_HDR)
ELEMENT = dbf.record_dtype(ELEMENT_FIELDS, SZ_ELEMENT)

TRACES_AT = HEADER_SIZE
TRACE_HDRS_AT = align(TRACES_AT + SZ_TRACES_HDR, 8)
#: hpcprof's min/max timestamps when no trace has an element.
NO_MIN_TIMESTAMP, NO_MAX_TIMESTAMP = (1 << 63) - 1, 1 << 63


class TraceDB(dbf.DbReader):
    """An open trace.db: trace headers in memory, lines read on request."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__(path, TAG, SECTIONS)
        blob = self.blob
        hdr = self.section_header(0, TRACES_HDR, SZ_TRACES_HDR, "Context Trace Headers")
        heads = self.section_array(0, hdr, TRACE_HDR_FIELDS, SZ_TRACE_HDR, ("szTrace", "pTraces", "nTraces"),
                                   "trace header", "Context Trace Headers")
        self.min_timestamp = int(hdr["minTimestamp"])
        self.max_timestamp = int(hdr["maxTimestamp"])
        self.prof_index = heads["profIndex"].astype(np.uint32)
        self.p_start = heads["pStart"].astype(np.int64)
        self.p_end = heads["pEnd"].astype(np.int64)
        limit = len(blob) - dbf.FOOTER_SIZE
        bad = (self.p_end < self.p_start) | ((self.p_end - self.p_start) % SZ_ELEMENT != 0) | \
              ((self.p_end > self.p_start) & ((self.p_start < HEADER_SIZE) | (self.p_end > limit)))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise blob.fail(f"trace {i} ([{int(self.p_start[i]):#x}, {int(self.p_end[i]):#x})) is not a whole "
                            f"number of elements inside the file; the file is truncated or corrupt")

    def __len__(self) -> int:
        return len(self.prof_index)

    def n_elements(self) -> np.ndarray:
        return (self.p_end - self.p_start) // SZ_ELEMENT

    def trace(self, i: int) -> np.ndarray:
        """Trace line ``i`` as a structured array with fields ``timestamp`` and ``ctxId``."""
        n = int((self.p_end[i] - self.p_start[i]) // SZ_ELEMENT)
        return self.blob.array(ELEMENT, int(self.p_start[i]), n, f"trace {i}")

    def line_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Every line's (start, end) time: its first and its last element's timestamp (-1 for an empty line).

        The format stores no per-line end, only the database's [minTimestamp, maxTimestamp] (HPCToolkit's
        FORMATS.md, trace.db): element ``k`` holds from ``t_k`` to ``t_{k+1}`` and the *last* element marks
        where the line ends -- hpcrun's ``trace-max-time`` of the profile is the time of its last record, and
        a writer that knows a later end puts a context-0 element there. So a line is present over
        [start, end) and absent outside it, never stretched to the database's end (a line of a process that
        ran early would otherwise stay busy until the last process ends). Read without loading the lines:
        two timestamps per line."""
        n = self.n_elements()
        start = np.full(len(n), -1, np.int64)
        end = np.full(len(n), -1, np.int64)
        some = np.flatnonzero(n > 0)
        if len(some):
            raw = np.frombuffer(self.blob.data, np.uint8)
            at = np.stack([self.p_start[some], self.p_end[some] - SZ_ELEMENT], 1)  # timestamps lead the element
            stamps = raw[at[..., None] + np.arange(8)].copy().view("<u8")[..., 0].astype(np.int64)
            start[some], end[some] = stamps[:, 0], stamps[:, 1]
        return start, end


def read_tracedb(path: str | os.PathLike[str]) -> TraceDB:
    return TraceDB(path)


def elements(timestamps: np.ndarray, ctx_ids: np.ndarray) -> np.ndarray:
    arr = np.zeros(len(timestamps), ELEMENT)
    arr["timestamp"] = timestamps
    arr["ctxId"] = ctx_ids
    return arr


class TraceDBWriter(dbf.StreamedWriter):
    """Write a trace.db: headers and (optionally reserved) regions, lines, footer last.

    ``prof_indices[i]`` is the profile of header slot ``i``. With ``reserve``
    (the largest possible element count of each slot) every region is laid out
    up front and lines may be written in any order or by other processes (into
    :attr:`.temp_path` at :meth:`region` offsets, then :meth:`record`); without
    it regions are allocated as lines arrive. Use as a context manager.

    The header's time range is ``time_range`` when given (hpcprof takes it from
    the measurements' trace headers, which may be wider than the elements);
    otherwise the first and last timestamps written.

    Each line's extent is held as its start and its length in elements (the headers, 24 bytes a line, are
    assembled a block at a time as they are written): a writer of a quarter of a million reserved lines
    holds their starts, which other processes write at, and their capacities, the lengths being zero pages
    until recorded.
    """

    #: Headers assembled and written at once.
    HEAD_BLOCK = 1 << 16

    def __init__(self, path: str | os.PathLike[str], prof_indices: Sequence[int],
                 reserve: Sequence[int] | np.ndarray | None = None, time_range: tuple[int, int] | None = None) -> None:
        super().__init__(path)
        n = len(prof_indices)
        self.n_traces = n
        self.prof_indices = prof_indices  # (as given: a range costs nothing)
        self.data_start = align(TRACE_HDRS_AT + SZ_TRACE_HDR * n, 8)
        self._next = self.data_start
        #: Where each line starts (int64): a reserved region's, or where the line was written.
        self.starts = np.zeros(n, np.int64)
        self._lengths = np.zeros(n, np.int64)  # elements of each line
        self._capacity: np.ndarray | None = None  # elements each reserved region holds
        if reserve is not None:
            capacity = np.asarray(reserve).reshape(-1)
            if len(capacity) != n:
                raise ValueError("reserve needs one count per trace")
            sizes = align(capacity.astype(np.int64) * SZ_ELEMENT, 8)
            np.cumsum(sizes, out=self.starts)
            self.starts -= sizes
            self.starts += self.data_start
            self._next = self.data_start + int(sizes.sum())
            self._capacity = capacity
        self._written = np.zeros(n, bool)
        self._heads_written = False
        self.time_range = time_range
        self.min_timestamp: int | None = None
        self.max_timestamp: int | None = None

    def _start(self, fh: BinaryIO) -> None:
        fh.truncate(self._next)

    @property
    def heads(self) -> np.ndarray:
        """The trace headers as they stand (TRACE_HDR records, assembled: a copy)."""
        return self._heads(0, self.n_traces)

    def _heads(self, a: int, b: int) -> np.ndarray:
        heads = np.zeros(b - a, TRACE_HDR)
        heads["profIndex"] = self.prof_indices[a:b]
        heads["pStart"] = self.starts[a:b]
        heads["pEnd"] = self.starts[a:b] + SZ_ELEMENT * self._lengths[a:b]
        return heads

    def region(self, slot: int) -> tuple[int, int]:
        """(offset, capacity in elements) of a reserved slot."""
        if self._capacity is None:
            raise ValueError("no regions were reserved")
        return int(self.starts[slot]), int(self._capacity[slot])

    def record_lengths(self, counts: np.ndarray) -> None:
        """Note the length in elements of every reserved line at once (written into the regions by other
        processes), as :meth:`record` checks them: none longer than its region."""
        if self._capacity is None:
            raise ValueError("no regions were reserved")
        counts = np.asarray(counts).reshape(-1)
        if len(counts) != self.n_traces:
            raise ValueError(f"{len(counts)} line lengths for {self.n_traces} traces")
        over = np.flatnonzero(counts > self._capacity)
        if len(over):
            i = int(over[0])
            raise ValueError(f"trace slot {i}: {int(counts[i])} elements do not fit its region")
        self._lengths[:] = counts
        self._written[:] = True

    def record(self, slot: int, offset: int, count: int, first: int | None = None,
               last: int | None = None) -> None:
        """Note that ``count`` elements of slot ``slot`` lie at ``offset`` (first/last timestamps)."""
        if self._written[slot]:
            raise ValueError(f"trace slot {slot} was already written")
        if self._capacity is not None:
            start, cap = self.region(slot)
            if offset != start or count > cap:
                raise ValueError(f"trace slot {slot}: {count} elements at {offset:#x} do not fit its region "
                                 f"({cap} elements at {start:#x})")
        self.starts[slot] = offset
        self._lengths[slot] = count
        self._written[slot] = True
        if count and first is not None and last is not None:
            self.min_timestamp = first if self.min_timestamp is None else min(self.min_timestamp, first)
            self.max_timestamp = last if self.max_timestamp is None else max(self.max_timestamp, last)

    def write_trace(self, slot: int, line: np.ndarray) -> None:
        """Write one trace line (ELEMENT records, sorted by timestamp) into its slot."""
        assert self._fh is not None, "use the writer as a context manager"
        line = np.ascontiguousarray(line, ELEMENT)
        if len(line) > 1 and (np.diff(line["timestamp"].astype(np.int64)) < 0).any():
            raise ValueError(f"trace slot {slot}: timestamps are not sorted")
        if self._capacity is not None:
            offset, _ = self.region(slot)
        else:
            offset = self._next
            self._next = align(offset + SZ_ELEMENT * len(line), 8)
        pwrite_all(self._fh.fileno(), line.tobytes(), offset)
        first = int(line["timestamp"][0]) if len(line) else None
        last = int(line["timestamp"][-1]) if len(line) else None
        self.record(slot, offset, len(line), first, last)

    def write_heads_now(self) -> None:
        """Write the trace headers now, once every line's extent is known (:meth:`record`,
        :meth:`record_lengths`), and let go of the lines' starts, lengths and capacities (some 25 bytes a
        trace that a writer of many traces need not hold to the end); no line is written or recorded after
        this."""
        assert self._fh is not None
        if self._capacity is None:
            raise ValueError("trace headers are written early only where every region was reserved")
        self._write_heads(self._fh.fileno())
        self._heads_written = True
        self.starts = self._lengths = np.zeros(0, np.int64)
        self._capacity = np.zeros(0, np.int64)
        self._written = np.zeros(0, bool)

    def _finish(self) -> None:
        assert self._fh is not None
        if self._capacity is None:
            unwritten = ~self._written
            self.starts[unwritten] = self._next
            self._lengths[unwritten] = 0
        if self.time_range is not None:
            lo, hi = self.time_range
        else:
            lo = NO_MIN_TIMESTAMP if self.min_timestamp is None else self.min_timestamp
            hi = NO_MAX_TIMESTAMP if self.max_timestamp is None else self.max_timestamp
        hdr = np.zeros(1, TRACES_HDR)
        hdr[0] = (TRACE_HDRS_AT, self.n_traces, SZ_TRACE_HDR, lo, hi)
        section = TRACE_HDRS_AT - TRACES_AT + SZ_TRACE_HDR * self.n_traces
        # The header area [0, data_start) written a part at a time, the headers from their own array (the same
        # bytes): assembled in one buffer and copied, 24 bytes a profile were in memory three times at once.
        area = bytearray(TRACE_HDRS_AT)
        head = dbf.encode_header(TAG, [(section, TRACES_AT)])
        area[:len(head)] = head
        area[TRACES_AT:TRACES_AT + SZ_TRACES_HDR] = hdr.tobytes()
        fd = self._fh.fileno()
        pwrite_all(fd, memoryview(area), 0)
        if not self._heads_written:
            self._write_heads(fd)
        os.pwrite(fd, dbf.footer(TAG), self._next)
        self._fh.truncate(self._next + dbf.FOOTER_SIZE)
        self._fh.flush()

    def _write_heads(self, fd: int) -> None:
        """Write the trace headers at TRACE_HDRS_AT, a block at a time, and zeros from their end to
        :attr:`data_start`."""
        for a in range(0, self.n_traces, self.HEAD_BLOCK):
            heads = self._heads(a, min(self.n_traces, a + self.HEAD_BLOCK))
            pwrite_all(fd, heads.view(np.uint8).data, TRACE_HDRS_AT + SZ_TRACE_HDR * a)
        heads_end = TRACE_HDRS_AT + SZ_TRACE_HDR * self.n_traces
        pwrite_all(fd, bytes(self.data_start - heads_end), heads_end)


def write_tracedb(path: str | os.PathLike[str], source: TraceDB, *, reserve: Sequence[int] | None = None) -> None:
    """Copy an open trace.db (regions reserved as large as the lines, or as ``reserve`` says)."""
    counts = source.n_elements()
    with TraceDBWriter(path, source.prof_index.tolist(), reserve=counts.tolist() if reserve is None else reserve,
                       time_range=(source.min_timestamp, source.max_timestamp)) as w:
        for i in range(len(source)):
            w.write_trace(i, source.trace(i))
