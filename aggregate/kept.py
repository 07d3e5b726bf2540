"""What phase 1 keeps of each profile for phase 2, in scratch files, so that every ``.hpcrun`` file is read
once.

Phase 1 appends, per profile, the arrays phase 2 needs (its CCT rows, its raw nodes' path hashes and flags,
its sparse values and index, the GPU part of its reconstruction) to a scratch file of its process, in the
run's private scratch directory (:func:`keep`); the profile's row of :class:`.profile_table.ProfileTable`
says where (``kept_file``, ``kept_offset``, ``kept_size``). Phase 2 reads them back, a batch's blobs with as
few ``pread`` as they allow (:func:`kept_many`). A profile with nothing kept (no scratch directory could be
made) is read again.
"""

from __future__ import annotations

import os
import pickle
import tempfile
from collections.abc import Sequence
from typing import Any

import numpy as np

from hpcsa.aggregate.gpu_contexts import GpuPart
from hpcsa.aggregate.handoff import Phase1Env
from hpcsa.aggregate.profile_table import ProfileTable
from hpcsa.core.errors import HpcsaError, OutputError
from hpcsa.core.fileio import pwrite_all
from hpcsa.formats.measurement.hpcrun import CCT_NODE, SPARSE_INDEX, SPARSE_VALUE, HpcrunProfile

#: Per node, what phase 2 needs of a profile's raw nodes (the path hash lanes and the flags).
KEPT_NODE = np.dtype([("h1", "<u8"), ("h2", "<u8"), ("flag", "u1")])
KEPT_NODE_FIELDS = ("h1", "h2", "flag")
#: What phase 1 keeps of a profile, in this order after a header of their lengths (int64 each): CCT rows,
#: raw nodes, sparse values, sparse index (each in its .hpcrun layout or :data:`KEPT_NODE`), then the
#: pickled GPU part (0 bytes when nothing was reconstructed).
KEPT_PARTS = (CCT_NODE, KEPT_NODE, SPARSE_VALUE, SPARSE_INDEX)
KEPT_HEAD = np.dtype(("<i8", len(KEPT_PARTS) + 1))

#: A profile's kept arrays (:data:`KEPT_PARTS`, views of what was read) and its GPU part.
KeptProfile = tuple[list[np.ndarray], GpuPart]


def _kept_bytes(prof: HpcrunProfile, nodes: np.ndarray, gpu: GpuPart) -> bytes:
    """What :func:`keep` keeps of a profile (``nodes``: its :data:`KEPT_NODE` rows)."""
    gpu_bytes = pickle.dumps(gpu, protocol=pickle.HIGHEST_PROTOCOL) if len(gpu.parent) else b""
    arrays = (prof.cct, nodes, prof.values, prof.index)
    head = np.array([len(a) for a in arrays] + [len(gpu_bytes)], "<i8")
    return b"".join([head.tobytes(), *(np.ascontiguousarray(a).tobytes() for a in arrays), gpu_bytes])


def _kept_arrays(data: bytes | memoryview) -> KeptProfile:
    """The arrays :func:`_kept_bytes` wrote (views of ``data``) and the GPU part."""
    head = np.frombuffer(data, KEPT_HEAD, 1)[0]
    at = KEPT_HEAD.itemsize
    arrays = []
    for dtype, count in zip(KEPT_PARTS, head[:-1].tolist(), strict=True):
        arrays.append(np.frombuffer(data, dtype, count, at))
        at += dtype.itemsize * count
    gpu = pickle.loads(data[at:]) if head[-1] else GpuPart.empty()  # noqa: S301 - our file, private directory
    return arrays, gpu


#: This process's scratch file per (process, directory, seed): [descriptor, path, bytes written].
_KEEPERS: dict[tuple[int, str, int], list[Any]] = {}


def keep(env: Phase1Env, profs: list[HpcrunProfile], raw: np.ndarray, cut: np.ndarray, gpus: list[GpuPart]
         ) -> list[tuple[str, int, int]]:
    """Append the arrays phase 2 needs of each profile (its CCT, node hashes and flags, sparse values, GPU
    part; profile ``k``'s nodes are ``raw[cut[k]:cut[k + 1]]``) to this process's scratch file, in one write;
    where each is. One file per process: no locking,
    offsets are its own."""
    assert env.scratch is not None
    key = (os.getpid(), env.scratch, env.seed)
    keeper = _KEEPERS.get(key)
    try:
        if keeper is None:
            fd, path = tempfile.mkstemp(prefix=f"phase1-{env.seed}-", suffix=".arrays", dir=env.scratch)
            keeper = _KEEPERS[key] = [fd, path, 0]
        nodes = np.empty(len(raw), KEPT_NODE)
        for name in KEPT_NODE_FIELDS:
            nodes[name] = raw[name]
        at = cut.tolist()
        parts = [_kept_bytes(prof, nodes[at[k]:at[k + 1]], gpu) for k, (prof, gpu) in
                 enumerate(zip(profs, gpus, strict=True))]
        fd, path, offset = keeper
        pwrite_all(fd, b"".join(parts), offset)
    except OSError as exc:
        raise OutputError(env.scratch, f"cannot write a scratch file: {exc.strerror or exc}") from None
    where = []
    for data in parts:
        where.append((path, offset, len(data)))
        offset += len(data)
    keeper[2] = offset
    return where


def release_scratch(scratch: str) -> None:
    """Close this process's scratch files in ``scratch`` (the directory itself is the caller's)."""
    for key in [k for k in _KEEPERS if k[1] == scratch]:
        os.close(_KEEPERS.pop(key)[0])


def kept_one(kept: tuple[str, int, int]) -> KeptProfile:
    """What phase 1 kept of one profile (``kept``: its scratch file, offset and size)."""
    path, offset, size = kept
    at, nbytes = np.array([offset], np.int64), np.array([size], np.int64)
    return kept_blobs((path,), np.zeros(1, np.int64), at, nbytes)[0]


def kept_many(table: ProfileTable, indexes: Sequence[int]) -> list[KeptProfile] | None:
    """What phase 1 kept of these profiles, as ``_kept_arrays()`` gives it, or None if one was not kept. The
    blobs that follow one another in a scratch file (a phase-1 group's) are read with one ``pread``."""
    sel = np.asarray(indexes, np.int64)
    file = table.kept_file[sel]
    if not len(sel) or (file < 0).any():
        return None if len(sel) else []
    return kept_blobs(table.kept_files, file, table.kept_offset[sel], table.kept_size[sel])


def kept_blobs(files: Sequence[str], file: np.ndarray, offset: np.ndarray, size: np.ndarray
               ) -> list[KeptProfile]:
    """The kept blobs ``size`` bytes at ``offset`` of ``files[file]``, as ``_kept_arrays()`` gives them;
    consecutive ones of a file with one ``pread``."""
    n = len(file)
    order = np.lexsort((offset, file))
    file, offset, size = file[order], offset[order], size[order]
    run = np.ones(n, bool)
    run[1:] = (file[1:] != file[:-1]) | (offset[1:] != offset[:-1] + size[:-1])
    starts = np.flatnonzero(run).tolist()
    out: list[KeptProfile] = [None] * n  # type: ignore[list-item]  # every slot is filled below
    fds: dict[int, int] = {}
    path = ""
    try:
        for a, b in zip(starts, [*starts[1:], n], strict=True):
            f = int(file[a])
            path = files[f]
            if f not in fds:
                fds[f] = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            lo, ends = int(offset[a]), (offset[a:b] + size[a:b] - offset[a]).tolist()
            data = memoryview(os.pread(fds[f], ends[-1], lo))
            if len(data) != ends[-1]:
                raise HpcsaError(path, "a scratch file is shorter than written (was it removed?)")
            at = 0
            for r, end in zip(order[a:b].tolist(), ends, strict=True):
                out[r] = _kept_arrays(data[at:end])
                at = end
    except OSError as exc:
        raise HpcsaError(path, f"cannot read a scratch file: {exc.strerror or exc}") from None
    finally:
        for fd in fds.values():
            os.close(fd)
    return out
