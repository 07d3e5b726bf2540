"""The one error type users see: a file and what is wrong with it.

Every reader and writer raises :class:`HpcsaError` (or a subclass) for bad
input, so the command line can print a single line and exit with status 2
instead of a traceback.
"""

from __future__ import annotations

import os


class HpcsaError(Exception):
    """A problem with an input or an option, reported as one line."""

    def __init__(self, path: str | os.PathLike[str] | None, problem: str) -> None:
        self.path = os.fspath(path) if path is not None else None
        self.problem = problem
        super().__init__(str(self))

    def __str__(self) -> str:
        return f"{self.path}: {self.problem}" if self.path else self.problem


class FormatError(HpcsaError):
    """A file's bytes do not follow the format it claims (truncated, wrong magic or version...)."""


class UnsupportedError(HpcsaError):
    """A well-formed input hpcsa knowingly does not handle (e.g. an unknown schema version)."""
