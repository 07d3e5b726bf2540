"""What phase 1 keeps of each profile for phase 2, in scratch files, so that every input file is read once.

Phase 1 writes, per group of profiles it read, one blob per profile into a scratch file of its process, in
the run's private scratch directory (:func:`keep`): a head of counts, then the arrays phase 2 needs of the
profile — its CCT node ids, its raw nodes' path hashes and flags (CCT rows, then the nodes of its reconstructed
GPU calling contexts), its sparse values and index (as in the ``.hpcrun`` file), its trace's records (where
the trace is small: :data:`KEEP_TRACE_BYTES`; a larger one is read again in phase 2) and the values its
reconstructed GPU calling contexts carry (:data:`~hpcsa.aggregate.gpu_contexts.GPU_VALUE`). The profile's row of
:class:`.profile_table.ProfileTable` says where (``kept_file``, ``kept_offset``, ``kept_size``). Phase 2
reads a batch's blobs with as few ``pread`` as they allow and decodes them together, column by column
(:func:`kept_batch`): no Python work per profile. A profile with nothing kept (no scratch directory could be
made) is read again.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from typing import Any

import numpy as np

from hpcsa.aggregate.gpu_contexts import GPU_VALUE
from hpcsa.aggregate.handoff import Phase1Env
from hpcsa.aggregate.profile_table import ProfileTable
from hpcsa.core.arrays import offsets
from hpcsa.core.dataclass import dataclass
from hpcsa.core.errors import HpcsaError, OutputError
from hpcsa.core.fileio import pwrite_all
from hpcsa.formats.measurement.hpcrun import SPARSE_INDEX, SPARSE_VALUE
from hpcsa.formats.measurement.hpctrace import RECORD

#: Per node, what phase 2 needs of a profile's raw nodes (the path hash lanes and the flags).
KEPT_NODE = np.dtype([("h1", "<u8"), ("h2", "<u8"), ("flag", "u1")])
KEPT_NODE_FIELDS = ("h1", "h2", "flag")
#: The head of a kept blob: the counts of its arrays, in this order, and the trace's flags (-1: not kept).
HEAD_FIELDS = ("ids", "nodes", "values", "index", "trace", "gpu", "trace_flags", "reserved")
KEPT_HEAD = np.dtype([(name, "<i8") for name in HEAD_FIELDS])
#: The arrays after the head, in this order, with their record types.
KEPT_ARRAYS = (("ids", np.dtype("<u4")), ("nodes", KEPT_NODE), ("values", SPARSE_VALUE), ("index", SPARSE_INDEX),
               ("trace", RECORD), ("gpu", GPU_VALUE))
#: Traces of at most this many bytes are read whole in phase 1 and kept (phase 2 then opens no file); larger
#: ones are read again in phase 2 (what phase 1 holds of a group stays small).
KEEP_TRACE_BYTES = 256 << 10


@dataclass
class KeptColumns:
    """What is kept of some profiles, as columns: profile ``k``'s rows of column ``c`` are
    ``cuts[c][k]:cuts[c][k + 1]`` of ``arrays[c]``; ``trace_flags[k]`` is -1 where its trace was not kept."""

    arrays: dict[str, np.ndarray]
    cuts: dict[str, np.ndarray]
    trace_flags: np.ndarray

    def __len__(self) -> int:
        return len(self.trace_flags)

    def counts(self, name: str) -> np.ndarray:
        return np.diff(self.cuts[name])


def blob_sizes(counts: dict[str, np.ndarray]) -> np.ndarray:
    """The bytes of kept blobs with these counts (8-aligned)."""
    size = np.full(len(counts["ids"]), KEPT_HEAD.itemsize, np.int64)
    for name, dtype in KEPT_ARRAYS:
        size += dtype.itemsize * counts[name]
    return (size + 7) // 8 * 8


def encode(cols: KeptColumns) -> tuple[bytes, np.ndarray]:
    """The blobs of ``cols``' profiles, one after the other, and where each starts (with the end): each
    blob's pieces cut from the columns' bytes and joined (a handful of slices per profile; copying them
    byte by byte through an index would cost 8 index bytes per byte)."""
    n = len(cols)
    counts = {name: cols.counts(name) for name, _ in KEPT_ARRAYS}
    sizes = blob_sizes(counts)
    at = offsets(sizes)
    head = np.zeros(n, KEPT_HEAD)
    for name, _ in KEPT_ARRAYS:
        head[name] = counts[name]
    head["trace_flags"] = cols.trace_flags
    heads = memoryview(head.tobytes())
    data = [memoryview(np.ascontiguousarray(cols.arrays[name]).view(np.uint8).data) for name, _ in KEPT_ARRAYS]
    cuts = [(cols.cuts[name] * dtype.itemsize).tolist() for name, dtype in KEPT_ARRAYS]
    pad = (sizes - KEPT_HEAD.itemsize - sum(counts[name] * dtype.itemsize for name, dtype in KEPT_ARRAYS)).tolist()
    zeros = bytes(8)
    parts: list[bytes | memoryview] = []
    h = KEPT_HEAD.itemsize
    for k in range(n):
        parts.append(heads[k * h:(k + 1) * h])
        for column, cut in zip(data, cuts, strict=True):
            parts.append(column[cut[k]:cut[k + 1]])
        parts.append(zeros[:pad[k]])
    return b"".join(parts), at


def decode(buf: bytes | memoryview, at: np.ndarray) -> KeptColumns:
    """The kept blobs starting at byte offsets ``at`` of ``buf``, as columns (each column's pieces joined)."""
    data = memoryview(buf)
    n = len(at)
    h = KEPT_HEAD.itemsize
    heads = np.frombuffer(b"".join([data[a:a + h] for a in at.tolist()]), KEPT_HEAD) if n else np.zeros(0, KEPT_HEAD)
    sizes = [heads[name].astype(np.int64) * dtype.itemsize for name, dtype in KEPT_ARRAYS]
    where = at + h
    arrays, cuts = {}, {}
    for (name, dtype), nbytes in zip(KEPT_ARRAYS, sizes, strict=True):
        lo = where.tolist()
        hi = (where + nbytes).tolist()
        arrays[name] = np.frombuffer(b"".join([data[a:b] for a, b in zip(lo, hi, strict=True)]), dtype)
        cuts[name] = offsets(nbytes // dtype.itemsize)
        where = where + nbytes
    return KeptColumns(arrays, cuts, heads["trace_flags"].astype(np.int64))


#: This process's scratch file per (process, directory, seed): [descriptor, path, bytes written].
_KEEPERS: dict[tuple[int, str, int], list[Any]] = {}


def keep(env: Phase1Env, cols: KeptColumns) -> tuple[str, np.ndarray, np.ndarray]:
    """Append the kept blobs of a group's profiles to this process's scratch file, in one write; (the file,
    where each blob is, its size). One file per process: no locking, offsets are its own."""
    assert env.scratch is not None
    key = (os.getpid(), env.scratch, env.seed)
    keeper = _KEEPERS.get(key)
    data, at = encode(cols)
    try:
        if keeper is None:
            fd, path = tempfile.mkstemp(prefix=f"phase1-{env.seed}-", suffix=".arrays", dir=env.scratch)
            keeper = _KEEPERS[key] = [fd, path, 0]
        fd, path, offset = keeper
        pwrite_all(fd, data, offset)
    except OSError as exc:
        raise OutputError(env.scratch, f"cannot write a scratch file: {exc.strerror or exc}") from None
    keeper[2] = offset + len(data)
    return path, offset + at[:-1], np.diff(at)


def release_scratch(scratch: str) -> None:
    """Close this process's scratch files in ``scratch`` (the directory itself is the caller's)."""
    for key in [k for k in _KEEPERS if k[1] == scratch]:
        os.close(_KEEPERS.pop(key)[0])


def kept_batch(table: ProfileTable, indexes: Sequence[int]) -> KeptColumns | None:
    """What phase 1 kept of these profiles (in this order), or None if one was not kept. The blobs that follow
    one another in a scratch file are read with one ``pread``."""
    sel = np.asarray(indexes, np.int64)
    file = table.kept_file[sel]
    if (file < 0).any():
        return None
    return kept_blobs(table.kept_files, file, table.kept_offset[sel], table.kept_size[sel])


def kept_blobs(files: Sequence[str], file: np.ndarray, offset: np.ndarray, size: np.ndarray) -> KeptColumns:
    """The kept blobs ``size`` bytes at ``offset`` of ``files[file]``, decoded together (in the order given);
    consecutive ones of a file with one ``pread``."""
    n = len(file)
    if not n:
        return decode(b"", np.zeros(0, np.int64))
    order = np.lexsort((offset, file))
    f, o, s = file[order], offset[order].astype(np.int64), size[order].astype(np.int64)  # (offset + size: int64)
    run = np.ones(n, bool)
    run[1:] = (f[1:] != f[:-1]) | (o[1:] != o[:-1] + s[:-1])
    starts = np.flatnonzero(run).tolist()
    parts: list[bytes] = []
    fds: dict[int, int] = {}
    path = ""
    try:
        for a, b in zip(starts, [*starts[1:], n], strict=True):
            k = int(f[a])
            path = files[k]
            if k not in fds:
                fds[k] = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            lo = int(o[a])
            nbytes = int(o[b - 1] + s[b - 1]) - lo
            data = os.pread(fds[k], nbytes, lo)
            if len(data) != nbytes:
                raise HpcsaError(path, "a scratch file is shorter than written (was it removed?)")
            parts.append(data)
    except OSError as exc:
        raise HpcsaError(path, f"cannot read a scratch file: {exc.strerror or exc}") from None
    finally:
        for fd in fds.values():
            os.close(fd)
    at_sorted = np.cumsum(s) - s  # each blob's place in the bytes read, in the sorted order
    at = np.empty(n, np.int64)
    at[order] = at_sorted
    return decode(b"".join(parts) if len(parts) != 1 else parts[0], at)
