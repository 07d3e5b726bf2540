"""Progress on a terminal, and the one-line summary every long command ends with."""

from __future__ import annotations

import os
import sys
import time
from typing import TextIO


class Progress:
    """Counts work items; redraws one status line on a TTY (at most 10 times a second)."""

    def __init__(self, what: str, total: int | None = None, stream: TextIO | None = None,
                 enabled: bool | None = None) -> None:
        self.what = what
        self.total = total
        self.done = 0
        self.stream = stream or sys.stderr
        if enabled is None:
            enabled = self.stream.isatty() and not os.environ.get("HPCSA_NO_PROGRESS")
        self.enabled = enabled
        self.start = time.monotonic()
        self._last = 0.0

    def advance(self, n: int = 1) -> None:
        self.done += n
        if self.enabled:
            now = time.monotonic()
            if now - self._last >= 0.1 or (self.total is not None and self.done >= self.total):
                self._last = now
                of = f"/{self.total}" if self.total is not None else ""
                self.stream.write(f"\r{self.what}: {self.done}{of} ({now - self.start:.1f} s)\x1b[K")
                self.stream.flush()

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def finish(self, summary: str) -> None:
        """Clear the status line and print ``summary`` (with the elapsed time) as the last line."""
        if self.enabled:
            self.stream.write("\r\x1b[K")
        self.stream.write(f"{summary} in {self.elapsed():.2f} s\n")
        self.stream.flush()
