"""Inputs that fail as one line, and outputs that appear under their final name only when complete.

Every reader in hpcsa opens its input through :func:`open_input`, :func:`read_input` or
:func:`map_input`, so a missing, unreadable or wrong-kind path gives the same one-line error whatever the
format. Every writer goes through :func:`atomic_file` or :func:`atomic_dir`: the data is written under a
temporary name in the same directory and renamed into place at the end, so an interrupted run (an
exception, SIGKILL, a full disk) never leaves a file or database that reads as complete.
"""

from __future__ import annotations

import contextlib
import errno
import io
import mmap
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from typing import Any, BinaryIO

from hpcsa.errors import HpcsaError, OutputError
from hpcsa.textout import ERRORS


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


def _tmp_name(final: str, kind: str) -> str:
    parent, base = os.path.split(os.path.abspath(final))
    return os.path.join(parent, f".{base}.{kind}-{os.getpid()}-{os.urandom(3).hex()}")


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_partials(final: str) -> None:
    """Delete what killed runs left beside ``final`` (temporaries whose writing process is gone).

    Temporaries carry their writer's pid, so those of a run still in progress are left alone.
    """
    parent, base = os.path.split(os.path.abspath(final))
    pattern = re.compile(rf"^\.{re.escape(base)}\.(partial|old)-(\d+)-")
    try:
        names = os.listdir(parent)
    except OSError:
        return
    for name in names:
        m = pattern.match(name)
        if m and not _alive(int(m.group(2))):
            stale = os.path.join(parent, name)
            if os.path.isdir(stale) and not os.path.islink(stale):
                shutil.rmtree(stale, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(stale)


#: Write buffer for documents written piece by piece (a structure file is tens of thousands of strings): with
#: :func:`open`'s default of 8 KiB, a 13.5 MB structure file took 35-70 ms to write, 24-32 ms with this.
TEXT_BUFFER = 1 << 20


#: Errors of a write that say nothing about the inputs: the output's file system is full, over quota or read-only,
#: or the file is over the process's size limit (``ulimit -f``; Python ignores SIGXFSZ, so the write fails).
WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS})


def output_error(path: str | os.PathLike[str], exc: OSError) -> OutputError:
    """The one error line for an output that cannot be created or written."""
    if isinstance(exc, PermissionError):
        return OutputError(path, "cannot write: permission denied")
    return OutputError(path, f"cannot write: {exc.strerror or exc}")


def _as_output_error(exc: BaseException, final: str, tmp: str) -> BaseException:
    """``exc`` as the output's one line where it is a failed write (:data:`WRITE_ERRNOS`) or an
    :class:`OutputError` of a file inside the temporary ``tmp`` (named by ``final``, the name the user gave);
    else ``exc`` itself."""
    if isinstance(exc, OSError) and exc.errno in WRITE_ERRNOS:
        return output_error(final, exc)
    if isinstance(exc, OutputError) and exc.path and (exc.path == tmp or exc.path.startswith(tmp + os.sep)):
        return OutputError(final, exc.problem)
    return exc


#: The output name that means standard output (as hpcstruct's ``--output=-``).
STDOUT = "-"


@contextlib.contextmanager
def _standard_output(mode: str) -> Iterator[Any]:
    """Standard output as a file opened with ``mode`` ("wb" or "w": UTF-8, names that are not escaped as
    everywhere); written as it comes, since no temporary name can hold it back."""
    if mode not in ("w", "wb"):
        raise ValueError(f"standard output cannot be opened with mode {mode!r}")
    out = sys.stdout
    if out is None:
        raise OutputError("standard output", "cannot write: it is closed")
    out.flush()  # what was printed before comes first
    binary = out.buffer
    if mode == "wb":
        yield binary
        binary.flush()
        return
    text = io.TextIOWrapper(binary, encoding="utf-8", errors=ERRORS)
    try:
        yield text
        text.flush()
    finally:
        text.detach()  # leaves standard output open


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike[str], mode: str = "wb", buffering: int = -1) -> Iterator[BinaryIO]:
    """Open a temporary sibling of ``path`` for writing; rename it to ``path`` on success. ``buffering`` as
    :func:`open`'s (:data:`TEXT_BUFFER` for a document written in thousands of pieces). ``-`` (:data:`STDOUT`)
    is standard output."""
    final = os.fspath(path)
    if final == STDOUT:
        with _standard_output(mode) as fh:
            yield fh
        return
    parent = os.path.dirname(os.path.abspath(final))
    if not os.path.isdir(parent):
        raise HpcsaError(final, "the directory to write into does not exist")
    remove_stale_partials(final)
    tmp = _tmp_name(final, "partial")
    text = {} if "b" in mode else {"encoding": "utf-8", "errors": ERRORS}  # a non-UTF-8 name: \\xNN
    try:
        fh = open(tmp, mode, buffering, **text)  # type: ignore[call-overload]
    except OSError as exc:
        raise output_error(final, exc) from None
    try:
        with fh:
            yield fh  # type: ignore[misc]
            fh.flush()
        os.replace(tmp, final)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        error = _as_output_error(exc, final, tmp)
        if error is exc:
            raise
        raise error from None


def write_file(path: str | os.PathLike[str], data: bytes | bytearray | str) -> None:
    with atomic_file(path, "w" if isinstance(data, str) else "wb") as fh:
        fh.write(data)  # type: ignore[arg-type]


def refuse_stdout_directory(path: str | os.PathLike[str]) -> None:
    """A directory output (a database, a measurement) named ``-``: one line, before any work."""
    if os.fspath(path) == STDOUT:
        raise HpcsaError(STDOUT, "this output is a directory, which standard output cannot hold: name it "
                         "(./- for a directory called -)")


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike[str], replace: bool = True) -> Iterator[str]:
    """Yield a temporary directory that becomes ``path`` when the block completes.

    An existing ``path`` is replaced only after the new one is complete (when
    ``replace``); otherwise it is an error, reported before any work is done.
    """
    refuse_stdout_directory(path)
    final = os.path.abspath(os.fspath(path))
    parent = os.path.dirname(final)
    if not os.path.isdir(parent):
        raise HpcsaError(path, "the directory to write into does not exist")
    if os.path.exists(final) and not replace:
        raise HpcsaError(path, "already exists (remove it or choose another name)")
    remove_stale_partials(final)
    try:
        tmp = tempfile.mkdtemp(prefix=f".{os.path.basename(final)}.partial-{os.getpid()}-", dir=parent)
    except OSError as exc:
        raise output_error(final, exc) from None
    # mkdtemp makes the directory private (0700); the finished output gets the
    # mode any directory made by the user would get (0777 less the umask).
    os.chmod(tmp, 0o777 & ~_umask())
    try:
        yield tmp
        if os.path.lexists(final):
            old = _tmp_name(final, "old")
            os.rename(final, old)
            os.rename(tmp, final)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(tmp, final)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        error = _as_output_error(exc, final, tmp)
        if error is exc:
            raise
        raise error from None
