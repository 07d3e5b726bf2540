"""Outputs that appear under their final name only when complete, and fail as one line.

Every writer in hpcsa goes through :func:`atomic_file` or :func:`atomic_dir`: the data is written under a
temporary name in the same directory and renamed into place at the end, so an interrupted run (an
exception, SIGKILL, a full disk) never leaves a file or database that reads as complete. A write that
fails for want of room or permission is :class:`~hpcsa.core.errors.OutputError`, one line naming the output.

What is already there is replaced only where that is what the user asked for: an existing file by a file
(a device or a named pipe such as ``/dev/null`` is written into, never replaced), an existing directory
only by an output of its own kind (:class:`DirectoryKind`): ``-o .`` or ``-o ~`` is refused, not
replaced. ``-`` names standard output where the output is one file, as hpcstruct's ``--output=-``.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import re
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any, BinaryIO, Literal, TextIO, overload

from hpcsa.core.errors import HpcsaError, OutputError, output_error
from hpcsa.core.textout import ERRORS

#: Write buffer for documents written piece by piece (a structure file is tens of thousands of strings): with
#: :func:`open`'s default of 8 KiB, a 13.5 MB structure file took 35-70 ms to write, 24-32 ms with this.
TEXT_BUFFER = 1 << 20

#: The output name that means standard output (as hpcstruct's ``--output=-``).
STDOUT = "-"

#: Errors of a write that say nothing about the inputs: the output's file system is full, over quota or
#: read-only, or the file is over the process's size limit (``ulimit -f``; Python ignores SIGXFSZ, so the
#: write fails).
WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS})


@dataclass(frozen=True)
class DirectoryKind:
    """What a directory output is, and how an existing one is recognised: an entry whose name ends with one
    of ``marks``. Only an empty directory or one of the same kind is replaced."""

    name: str
    marks: tuple[str, ...]

    def holds(self, path: str) -> bool:
        """Whether the directory ``path`` is empty or an output of this kind."""
        with os.scandir(path) as entries:
            names = [e.name for e in entries]
        return not names or any(n.endswith(self.marks) for n in names)


#: A database: hpcprof's (and hpcsa's) ``meta.db``, or an older hpcprof's ``experiment.xml``.
DATABASE = DirectoryKind("a database", ("meta.db", "experiment.xml"))
#: A measurement directory: profiles and traces.
MEASUREMENT = DirectoryKind("a measurement directory", (".hpcrun", ".hpctrace"))


def directory_problem(exc: OSError) -> str:
    """Why a directory could not be made or used, in words: an existing file in its place is "not a
    directory", anything else the system's own words."""
    return "not a directory" if isinstance(exc, FileExistsError) else exc.strerror or str(exc)


def _as_output_error(exc: BaseException, final: str, tmp: str) -> BaseException:
    """``exc`` as the output's one line where it is a failed write (:data:`WRITE_ERRNOS`) or an
    :class:`OutputError` of a file inside the temporary ``tmp`` (named by ``final``, the name the user gave);
    else ``exc`` itself."""
    if isinstance(exc, OSError) and exc.errno in WRITE_ERRNOS:
        return output_error(final, exc)
    if isinstance(exc, OutputError) and exc.path and (exc.path == tmp or exc.path.startswith(tmp + os.sep)):
        return OutputError(final, exc.problem)
    return exc


def _existing(path: str) -> os.stat_result | None:
    """What ``path`` names now (links followed), or None."""
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise output_error(path, exc) from None


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
def _written_into(path: str, mode: str, buffering: int, text: dict[str, Any]) -> Iterator[Any]:
    """A device or a named pipe (``/dev/null``, ``/dev/stdout``, a FIFO), written into as it is: no
    temporary name can stand for it, and renaming one over it would replace the device with a file."""
    try:
        fh = open(path, mode, buffering, **text)  # noqa: SIM115 - closed below
    except OSError as exc:
        raise output_error(path, exc) from None
    try:
        with fh:
            yield fh
    except OSError as exc:
        if exc.errno in WRITE_ERRNOS:
            raise output_error(path, exc) from None
        raise


@overload
def atomic_file(path: str | os.PathLike[str], mode: Literal["w"], buffering: int = -1
                ) -> contextlib.AbstractContextManager[TextIO]: ...


@overload
def atomic_file(path: str | os.PathLike[str], mode: Literal["wb", "w+b"] = "wb", buffering: int = -1
                ) -> contextlib.AbstractContextManager[BinaryIO]: ...


@overload
def atomic_file(path: str | os.PathLike[str], mode: str, buffering: int = -1
                ) -> contextlib.AbstractContextManager[IO[Any]]: ...


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike[str], mode: str = "wb", buffering: int = -1) -> Iterator[Any]:
    """Open a temporary sibling of ``path`` for writing; rename it to ``path`` on success. ``buffering`` as
    :func:`open`'s (:data:`TEXT_BUFFER` for a document written in thousands of pieces). ``-`` (:data:`STDOUT`)
    is standard output; a device or a named pipe is written into; a symbolic link to a file keeps the link,
    and its target is replaced; a directory is refused."""
    final = os.fspath(path)
    if final == STDOUT:
        with _standard_output(mode) as fh:
            yield fh
        return
    # a non-UTF-8 name: \\xNN
    text: dict[str, Any] = {} if "b" in mode else {"encoding": "utf-8", "errors": ERRORS}
    if final.endswith(os.sep):
        raise HpcsaError(final, "ends with /, which names a directory: name the file to write")
    st = _existing(final)
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise HpcsaError(final, "is a directory: name the file to write")
    if st is not None and not stat.S_ISREG(st.st_mode):
        with _written_into(final, mode, buffering, text) as fh:
            yield fh
        return
    if os.path.islink(final):
        final = os.path.realpath(final)
    parent = os.path.dirname(os.path.abspath(final))
    if not os.path.isdir(parent):
        raise HpcsaError(final, "the directory to write into does not exist")
    remove_stale_partials(final)
    tmp = _tmp_name(final, "partial")
    try:
        fh = open(tmp, mode, buffering, **text)  # noqa: SIM115 - closed below
    except OSError as exc:
        raise output_error(final, exc) from None
    try:
        with fh:
            yield fh
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
        fh.write(data)


def check_directory_output(path: str | os.PathLike[str], kind: DirectoryKind = DATABASE,
                           replace: bool = True) -> str:
    """Where a directory output named ``path`` goes (its absolute path, a symbolic link followed), or one
    line saying why it cannot: ``-`` (standard output cannot hold a directory), a missing parent, or an
    existing path that is a file, a directory that is neither empty nor ``kind`` (the user's own files:
    ``-o .``) or one that holds the working directory, or any existing path when not ``replace``. Commands
    call it before their work; :func:`atomic_dir` again before it writes."""
    if os.fspath(path) == STDOUT:
        raise HpcsaError(STDOUT, f"this output is {kind.name}, a directory, which standard output cannot hold: "
                         "name it (./- for a directory called -)")
    final = os.path.abspath(os.fspath(path))
    if os.path.islink(final):
        final = os.path.realpath(final)
    if not os.path.isdir(os.path.dirname(final)):
        raise HpcsaError(path, "the directory to write into does not exist")
    st = _existing(final)
    if st is None:
        return final
    if not replace:
        raise HpcsaError(path, "already exists (remove it or choose another name)")
    if not stat.S_ISDIR(st.st_mode):
        raise HpcsaError(path, f"exists and is not a directory, so it is not replaced by {kind.name} "
                         "(remove it or choose another name)")
    try:
        ours = kind.holds(final)
    except OSError as exc:
        raise output_error(path, exc) from None
    if not ours:
        raise HpcsaError(path, f"exists and is not {kind.name}, so it is not replaced: remove it or choose "
                         "another name")
    try:
        here = os.getcwd()
    except OSError:  # the working directory was removed: it is not inside the output
        here = ""
    real = os.path.realpath(final)
    if here == real or here.startswith(real.rstrip(os.sep) + os.sep):
        raise HpcsaError(path, f"is {kind.name} that holds the working directory, which replacing it would "
                         "remove: choose another name, or run from elsewhere")
    return final


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike[str], replace: bool = True, kind: DirectoryKind = DATABASE) -> Iterator[str]:
    """Yield a temporary directory that becomes ``path`` when the block completes.

    An existing ``path`` is replaced only after the new one is complete, and only where
    :func:`check_directory_output` allows (``kind``, ``replace``); otherwise it is an error, reported
    before any work is done.
    """
    final = check_directory_output(path, kind, replace)
    parent = os.path.dirname(final)
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
        check_directory_output(path, kind, replace)  # what appeared there meanwhile is not replaced either
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


def _tmp_name(final: str, kind: str) -> str:
    parent, base = os.path.split(os.path.abspath(final))
    return os.path.join(parent, f".{base}.{kind}-{os.getpid()}-{os.urandom(3).hex()}")


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def process_alive(pid: int) -> bool:
    """Whether a process of this id runs (one of another user's counts as running)."""
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
        if m and not process_alive(int(m.group(2))):
            stale = os.path.join(parent, name)
            if os.path.isdir(stale) and not os.path.islink(stale):
                shutil.rmtree(stale, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(stale)
