"""hpcrun's trace file, ``.hpctrace`` version 01.01 (big-endian).

A 32-byte header (magic, version, byte order, flags) followed by fixed-size
records ``(time in ns since the epoch, CCT node id)`` — plus a metric id when
the data-centric flag is set. Records are declared once as layouts and read
as one numpy array.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import field

import numpy as np

from hpcsa.core.binfmt import Blob, field_names, layout, records
from hpcsa.core.dataclass import dataclass
from hpcsa.core.errors import FormatError
from hpcsa.core.fileio import input_error
from hpcsa.core.outputs import atomic_file

MAGIC = b"HPCRUN-trace______"
VERSION = "01.01"
HEADER_SIZE = 32

FLAG_DATA_CENTRIC = 0x1  # each record carries a metric id (hpcprof refuses these)
FLAG_LCA_RECORDED = 0x2
FLAG_CALL_TRACE = 0x4  # GPU-stream traces: the call context, no deep lexical expansion

HEADER = layout(">", HEADER_SIZE, [("magic", 0, "S18"), ("version", 18, "S5"), ("endian", 23, "S1"),
                                   ("flags", 24, "u8")])
_HEAD = MAGIC + VERSION.encode("ascii") + b"b"  # magic, version, big-endian: the header before the flags
RECORD = layout(">", 12, [("time", 0, "u8"), ("ctx", 8, "u4")])
RECORD_DATA_CENTRIC = layout(">", 16, [("time", 0, "u8"), ("ctx", 8, "u4"), ("metric", 12, "u4")])


@dataclass
class HpctraceFile:
    """A thread's ``.hpctrace``: its flags and its (time, call-path id) records."""

    flags: int
    records: np.ndarray
    version: str = VERSION
    path: str | None = field(default=None, compare=False)

    @property
    def call_trace(self) -> bool:
        return bool(self.flags & FLAG_CALL_TRACE)


def record_dtype(flags: int) -> np.dtype:
    return RECORD_DATA_CENTRIC if flags & FLAG_DATA_CENTRIC else RECORD


def read_hpctrace(path: str | os.PathLike[str]) -> HpctraceFile:
    """A whole ``.hpctrace`` file: its header's flags and its records, checked against the file's size."""
    blob = Blob(path)
    flags, count = _check_header(blob.fail, blob.bytes(0, min(len(blob), HEADER_SIZE), "header"), len(blob))
    recs = blob.array(record_dtype(flags), HEADER_SIZE, count, "trace records")
    return HpctraceFile(flags=flags, records=recs, version=VERSION, path=blob.path)


def read_hpctrace_header(path: str | os.PathLike[str]) -> tuple[int, int]:
    """A trace's flags and number of records, with :func:`read_hpctrace`'s checks, reading only the header
    (for readers that take the records later)."""
    path = os.fspath(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            size = os.fstat(fd).st_size
            head = os.pread(fd, HEADER_SIZE, 0)
        finally:
            os.close(fd)
    except OSError as exc:
        raise input_error(path, exc, "a trace file", FormatError) from None
    return _check_header(lambda problem: FormatError(path, problem), head, size)


def _check_header(fail: Callable[[str], FormatError], head: bytes, size: int) -> tuple[int, int]:
    """(flags, record count) of a trace file of ``size`` bytes starting with ``head``; refuses bad headers
    and bodies that are not a whole number of records."""
    if len(head) < HEADER_SIZE:
        raise fail(f"too short for an .hpctrace file ({size} bytes, the header alone is 32)")
    if head[:24] != _HEAD:  # (a trace of each of a run's thousands of threads: no numpy record unless wrong)
        rec = np.frombuffer(head, HEADER, 1)[0]
        if bytes(rec["magic"]) != MAGIC:
            raise fail("not an .hpctrace trace file (bad magic)")
        version = bytes(rec["version"]).decode("ascii", "replace")
        if version != VERSION:
            raise fail(f"unsupported .hpctrace version {version!r} (hpcsa reads {VERSION})")
        raise fail("unsupported .hpctrace byte order (expected big-endian 'b')")
    flags = int.from_bytes(head[24:HEADER_SIZE], "big")
    itemsize = record_dtype(flags).itemsize
    body = size - HEADER_SIZE
    if body % itemsize:
        raise fail(f"trace data is {body} bytes, not a whole number of {itemsize}-byte records; "
                   "the file is truncated")
    return flags, body // itemsize


def encode_hpctrace(trace: HpctraceFile) -> bytes:
    head = records(HEADER, 1, magic=MAGIC, version=trace.version.encode("ascii"), endian=b"b",
                   flags=trace.flags)
    dtype = record_dtype(trace.flags)
    recs = trace.records
    if recs.dtype != dtype:
        conv = np.zeros(len(recs), dtype)
        for name in field_names(dtype):
            conv[name] = recs[name]
        recs = conv
    return head.tobytes() + recs.tobytes()


def write_hpctrace(path: str | os.PathLike[str], trace: HpctraceFile) -> None:
    data = encode_hpctrace(trace)
    with atomic_file(path) as fh:
        fh.write(data)


def make_records(times: np.ndarray, ctx_ids: np.ndarray) -> np.ndarray:
    return records(RECORD, len(times), time=np.asarray(times, np.uint64), ctx=np.asarray(ctx_ids, np.uint32))
