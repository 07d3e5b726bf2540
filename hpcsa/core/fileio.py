"""Inputs that fail as one line, and low-level writes at offsets.

Every reader in hpcsa opens its input through :func:`open_input`, :func:`read_input` or
:func:`map_input`, so a missing, unreadable or wrong-kind path gives the same one-line error whatever the
format. Outputs, written whole under a temporary name, are :mod:`hpcsa.core.outputs`'.
"""
from __future__ import annotations

import errno
import mmap
import os
from collections.abc import Sequence
from typing import BinaryIO

from hpcsa.core.errors import HpcsaError


def input_error(path: str | os.PathLike[str], exc: OSError, expected: str = "a file",
                error: type[HpcsaError] = HpcsaError) -> HpcsaError:
    """The one error line for an input that cannot be opened or read (``expected`` names what a
    directory given in its place should have been: "a binary", "a structure file")."""
    if isinstance(exc, FileNotFoundError):
        return error(path, "no such file or directory")
    if isinstance(exc, IsADirectoryError):
        return error(path, f"is a directory, expected {expected}")
    if isinstance(exc, PermissionError):
        return error(path, "permission denied")
    return error(path, f"cannot read: {exc.strerror or exc}")


def open_input(path: str | os.PathLike[str], expected: str = "a file",
               error: type[HpcsaError] = HpcsaError) -> BinaryIO:
    """Open an input for binary reading, or raise :func:`input_error`'s one line."""
    try:
        return open(path, "rb")
    except OSError as exc:
        raise input_error(path, exc, expected, error) from None


def read_input(path: str | os.PathLike[str], size: int = -1, expected: str = "a file",
               error: type[HpcsaError] = HpcsaError) -> bytes:
    """The first ``size`` bytes of an input (all of it by default), or :func:`input_error`'s one line."""
    try:
        with open(path, "rb") as fh:
            return fh.read(size)
    except OSError as exc:
        raise input_error(path, exc, expected, error) from None


def map_input(path: str | os.PathLike[str], expected: str = "a file", map_from: int = 1) -> bytes | mmap.mmap:
    """A whole input as read-only bytes: memory-mapped when it has at least ``map_from`` bytes, read
    otherwise (an empty file cannot be mapped); errors as :func:`input_error`."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            size = os.fstat(fd).st_size
            if size and size >= map_from:
                return mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
            return _read_fd(fd, size)
        finally:
            os.close(fd)
    except OSError as exc:
        raise input_error(path, exc, expected) from None


def _read_fd(fd: int, size: int) -> bytes:
    """All of an open file: ``size`` bytes in one read where the file has them (a run's thousands of small
    profiles: four system calls each, not a buffered reader's seven), else until the end (a file that
    reports no size, such as a pipe)."""
    data = os.read(fd, size) if size else b""
    if size and len(data) == size:
        return data
    parts = [data]
    while chunk := os.read(fd, 1 << 16):
        parts.append(chunk)
    return b"".join(parts)


def pwrite_all(fd: int, data: bytes | memoryview, offset: int) -> None:
    """Write all of ``data`` at ``offset`` of an open file (``os.pwrite`` may write less than asked); safe
    from several processes writing disjoint regions of one file."""
    view = memoryview(data)
    while view:
        n = os.pwrite(fd, view, offset)
        view, offset = view[n:], offset + n


def copy_range(src_fd: int, dst_fd: int, src_offset: int, dst_offset: int, size: int) -> None:
    """Copy ``size`` bytes between two open files at the given offsets, in the kernel where it can
    (``copy_file_range``: no trip through Python's memory), by ``pread``/``pwrite`` where it cannot."""
    while size > 0:
        try:
            n = os.copy_file_range(src_fd, dst_fd, size, src_offset, dst_offset)
        except OSError as exc:
            if exc.errno not in _NO_COPY_RANGE:
                raise
            n = 0
        if n == 0:  # not supported here (another file system, an old kernel) or the source ended early
            data = os.pread(src_fd, size, src_offset)
            if not data:
                raise EOFError(f"the source ends before offset {src_offset + size}")
            pwrite_all(dst_fd, data, dst_offset)
            n = len(data)
        src_offset, dst_offset, size = src_offset + n, dst_offset + n, size - n


#: errno values that mean "copy_file_range cannot copy between these files" (not an I/O error).
_NO_COPY_RANGE = {errno.EXDEV, errno.ENOSYS, errno.EOPNOTSUPP, errno.EINVAL, errno.EBADF, errno.EPERM}


def find_by_name(path: str, folders: Sequence[str]) -> str | None:
    """The first file in ``folders`` named as ``path``'s last component (where a user says moved files are
    now), as an absolute path; None where none holds one."""
    name = os.path.basename(path)
    for folder in folders:
        candidate = os.path.join(folder, name)
        if name and os.path.isfile(candidate):
            return os.path.abspath(candidate)
    return None

