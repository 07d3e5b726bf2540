"""Text output that never fails on names that are not UTF-8.

Names read from binary formats (load modules, functions, files, metrics) are decoded with
``surrogateescape``, so a byte that is not UTF-8 survives as a lone surrogate (PEP 383). Printing such
a string with the strict encoder raises ``UnicodeEncodeError``; :func:`escape_streams` makes stdout and
stderr write it as ``\\xNN`` (the original byte, as Python writes bytes) and any other character the
stream cannot encode as ``\\uNNNN``, whether the stream is a terminal, a pipe or a file.
:func:`guard_std_streams` makes a write to standard output that fails (a full disk, a closed
descriptor) one error line rather than a traceback, or a loss nobody hears of. :func:`end_now` ends a
process once what it wrote to them is out.
"""

from __future__ import annotations

import codecs
import ctypes
import io
import os
import re
import sys
from typing import TYPE_CHECKING, NoReturn

from hpcsa.core.errors import OutputError, output_error

if TYPE_CHECKING:
    from typing_extensions import Buffer  # collections.abc.Buffer from Python 3.12

ERRORS = "hpcsa-escape"


def _escape(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    out = []
    for ch in exc.object[exc.start:exc.end]:
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8, kept by surrogateescape
            out.append(f"\\x{code - 0xDC00:02x}")
        elif code <= 0xFFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    return "".join(out), exc.end


codecs.register_error(ERRORS, _escape)


def escape(text: str) -> str:
    """``text`` with what UTF-8 cannot encode written as escapes (for strings put into files)."""
    return text.encode("utf-8", ERRORS).decode("utf-8")


_SURROGATE = re.compile("[\ud800-\udfff]")


def _json_escape(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\\\u{code:04x}"


def json_safe(text: str) -> str:
    """JSON text (from ``json.dumps(..., ensure_ascii=False)``) with each lone surrogate, which can only
    stand inside a string literal there, replaced by an escaped backslash and ``xNN``: the string then
    reads ``\\xNN``, as every other output of hpcsa shows the byte, and the file stays valid UTF-8 JSON."""
    return text if text.isascii() else _SURROGATE.sub(_json_escape, text)


def escape_streams() -> None:
    """Make sys.stdout and sys.stderr escape what their encoding cannot write instead of raising."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            try:
                stream.reconfigure(errors=ERRORS)
            except (ValueError, io.UnsupportedOperation):  # closed or detached: nothing to configure
                pass


class _StdoutFile(io.FileIO):
    """Descriptor 1 for the ``hpcsa`` command: a write that fails for another reason than a reader that has
    gone (a full disk, a closed descriptor) raises :class:`~hpcsa.core.errors.OutputError`, the command's one line
    and exit status 2. Before, it was a traceback, or, where only the flush at the exit failed (a short
    report, a help text), nothing at all and exit status 0."""

    def write(self, data: Buffer) -> int:
        try:
            return super().write(data)
        except BrokenPipeError:  # the reader has gone (``| head``): the command ends quietly
            raise
        except OSError as exc:
            raise output_error("standard output", exc) from None


def guard_std_streams() -> None:
    """For a process that runs one command: standard output through ``_StdoutFile``, and each of
    descriptors 0-2 that the caller closed (``>&-``) held by ``/dev/null``, so that no file the command
    opens takes its number and receives what is printed. A closed stdout is held read-only, so that
    writing to it fails (one line), as writing to a closed descriptor does; a closed stderr silently
    swallows what is written to it."""
    for fd, flags in ((0, os.O_RDONLY), (1, os.O_RDONLY), (2, os.O_WRONLY)):
        try:
            os.fstat(fd)
        except OSError:
            held = os.open(os.devnull, flags)
            if held != fd:
                os.dup2(held, fd)  # inheritable, as the descriptor it stands for
                os.close(held)
            else:
                os.set_inheritable(fd, True)  # os.open's are not: the programs hpcsa runs get it too
    out = sys.stdout
    if out is None or (isinstance(out, io.TextIOWrapper) and _descriptor(out) == 1):
        if out is not None:
            out.flush()
        raw = _StdoutFile(1, "w", closefd=False)
        # python -u or PYTHONUNBUFFERED: unbuffered, as the interpreter's own stdout
        unbuffered = (isinstance(out.buffer, io.RawIOBase) if out is not None
                      else bool(os.environ.get("PYTHONUNBUFFERED")))
        sys.stdout = io.TextIOWrapper(raw if unbuffered else io.BufferedWriter(raw),
                                      encoding=getattr(out, "encoding", None) or "utf-8", errors=ERRORS,
                                      line_buffering=bool(getattr(out, "line_buffering", False)),
                                      write_through=unbuffered)
    if sys.stderr is None:  # print(file=sys.stderr) would write to stdout
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8", errors=ERRORS,
                                      write_through=True)


def _descriptor(stream: io.TextIOWrapper) -> int | None:
    try:
        return stream.fileno()
    except (OSError, ValueError):
        return None


def flush_std_streams() -> None:
    """Out with what stdout and stderr hold. A reader that has gone, a stream that fails, is closed or
    is not there at all is ignored: the command has said what it had to say (``hpcsa.cli.main`` flushes
    stdout once the command is done, where a failure is still the command's one line)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError, OutputError):
            pass


def end_now(code: int) -> NoReturn:
    """Flush stdout and stderr (:func:`flush_std_streams`), then end the process at once (``os._exit``): no
    object or module is freed one by one, the system takes the pages back whole. For a process whose work
    and files are done (and whose threads are joined); functions registered with :mod:`atexit` do not run
    unless the caller runs them first."""
    flush_std_streams()
    os._exit(code)


def end_through_exit(code: int) -> NoReturn:
    """:func:`end_now`, but through the C library's ``exit``: the exit handlers that libraries registered in C
    run (an MPI library's: MPICH's process-manager client tells its launcher the process ended normally, and
    the shared-memory segment of the node is removed), the interpreter's teardown still does not."""
    flush_std_streams()
    ctypes.CDLL(None).exit(code)
    os._exit(code)  # (not reached)
