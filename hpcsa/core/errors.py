"""The one error type users see: a file and what is wrong with it.

Every reader and writer raises :class:`HpcsaError` (or a subclass) for bad
input, so the command line can print a single line and exit with status 2
instead of a traceback.
"""

from __future__ import annotations

import os
import re
from typing import Literal


class HpcsaError(Exception):
    """A problem with an input or an option, reported as one line."""

    def __init__(self, path: str | os.PathLike[str] | None, problem: str) -> None:
        self.path = os.fspath(path) if path is not None else None
        # One line, always: messages quoting third-party text (SQL, XML) may carry newlines.
        self.problem = re.sub(r"\s*[\r\n]+\s*", " ", problem).strip()
        super().__init__(str(self))

    def __str__(self) -> str:
        return f"{self.path}: {self.problem}" if self.path else self.problem

    def __reduce__(self) -> tuple[type, tuple[str | None, str]]:
        # Worker processes send errors back pickled; keep the (path, problem) signature.
        return (type(self), (self.path, self.problem))


class OutputError(HpcsaError):
    """An output that cannot be written: its file system is full, over quota or read-only, the file is over
    the process's size limit, or standard output is closed or fails."""


def output_error(path: str | os.PathLike[str], exc: OSError) -> OutputError:
    """The one error line for an output that cannot be created or written."""
    if isinstance(exc, PermissionError):
        return OutputError(path, "cannot write: permission denied")
    return OutputError(path, f"cannot write: {exc.strerror or exc}")


class FormatError(HpcsaError):
    """A file's bytes do not follow the format it claims (truncated, wrong magic or version...)."""


class UnsupportedError(HpcsaError):
    """A well-formed input hpcsa knowingly does not handle (e.g. an unknown schema version)."""


# Exceptions that malformed bytes provoke inside third-party parsers (struct, sqlite3, csv, flatbuffers)
# or inside our own column handling of them; ``corrupt_input`` turns them into a FormatError at the
# boundary of a reader so that a damaged vendor file gives one line, not a traceback.
_DATA_ERRORS: tuple[type[BaseException], ...] = (ValueError, IndexError, KeyError, TypeError, OverflowError,
                                                 UnicodeError, ArithmeticError)


class corrupt_input:  # noqa: N801 - used as a context manager, reads like a statement
    """``with corrupt_input(path, "nsys SQLite export"): ...`` — data errors become a FormatError."""

    def __init__(self, path: str | os.PathLike[str], what: str) -> None:
        self.path = path
        self.what = what

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: object) -> Literal[False]:
        if exc is None or isinstance(exc, HpcsaError):
            return False
        import csv
        import sqlite3
        import struct

        if isinstance(exc, _DATA_ERRORS + (struct.error, sqlite3.Error, csv.Error)):
            detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise FormatError(self.path, f"{self.what} is corrupt or malformed ({type(exc).__name__}: "
                              f"{detail[:200]})") from exc
        return False
