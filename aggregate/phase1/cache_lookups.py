"""Parsed-structure cache lookups on a thread beside phase 1's own work, where a CPU is left over.

A lookup (:func:`.parsedcache.read_cached`) is mostly hashing the structure file and checking its entry's
CRC-32: 50-70 ms for the 18 MB of structure files of a real 1,024-thread run, in calls that release the
GIL. Made by the reading process between its batches, they leave a CPU idle when the run has fewer
processes than the machine has CPUs (``-j 1`` on two). On a thread they overlap the profiles being
surveyed, and the reading process takes up what they find between its own steps: at ``-j 1`` on two CPUs,
phase 1 of a second run of that real run took 13-40 ms less (medians of 16-30 interleaved runs each).

Where every CPU already has a process of the run (the default ``-j``), the thread would only take time
from them; and in a first run, whose critical path is parsing the largest structure file, it did (a first
``-j 2`` run on two CPUs took 30-60 ms longer in phase 1, medians of 8-20 interleaved runs). So the caller looks files up itself, between
batches, in those cases: when no CPU is spare, and once a lookup has found no entry.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator

from hpcsa.aggregate.inputs import StructInput
from hpcsa.formats.hpcstruct.model import StructureFile
from hpcsa.formats.hpcstruct.parsedcache import read_cached


class CacheLookups:
    """Structure files looked up in the parsed-structure cache one after another, on one thread."""

    def __init__(self) -> None:
        self._todo: queue.SimpleQueue[StructInput | None] = queue.SimpleQueue()
        self._done: queue.SimpleQueue[tuple[StructInput, StructureFile | None, BaseException | None]] = (
            queue.SimpleQueue())
        self._closing = threading.Event()
        self._thread: threading.Thread | None = None
        self.pending = 0  # started and not yet handed back by finished()
        self.missed = False  # whether a lookup found no entry (handed back by finished())

    def start(self, s: StructInput) -> None:
        """Look ``s`` up (after those started before it)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="hpcsa cache lookups", daemon=True)
            self._thread.start()
        self._todo.put(s)
        self.pending += 1

    def _run(self) -> None:
        while (s := self._todo.get()) is not None:
            if self._closing.is_set():  # the run ended early (a bad input, Ctrl-C): the rest is given up
                continue
            try:
                self._done.put((s, read_cached(s.path), None))
            except BaseException as exc:  # raised in the consumer's thread by finished()
                self._done.put((s, None, exc))

    def finished(self, wait: bool = False) -> Iterator[tuple[StructInput, StructureFile | None]]:
        """The lookups done so far, in the order started, each with its entry (None: not cached, to be parsed);
        with ``wait``, every lookup started, waiting for those still running."""
        while self.pending:
            try:
                s, found, exc = self._done.get(block=wait)
            except queue.Empty:
                return
            self.pending -= 1
            if exc is not None:
                raise exc
            self.missed = self.missed or found is None
            yield s, found

    def close(self) -> None:
        """End the thread once the lookup it is making is done; those not started are given up."""
        if self._thread is not None:
            self._closing.set()
            self._todo.put(None)
            self._thread.join()
            self._thread = None

    def __enter__(self) -> CacheLookups:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
