"""Threads for work that releases the GIL (hashing, CRC-32 of large buffers): several cores without a process
to start or results to send back. Processes for everything else are in :mod:`hpcsa.core.workers`."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


def map_in_threads(fn: Callable[[Any], Any], items: list[Any], threads: int) -> list[Any]:
    """``[fn(x) for x in items]`` on up to ``threads`` threads (this one included), items taken in order as
    threads come free: for work that releases the GIL (hashing, CRC-32 of large buffers), where threads use
    several cores without a process to start or results to send back. The first exception is raised here."""
    results: list[Any] = [None] * len(items)
    failures: list[BaseException] = []
    left = iter(range(len(items)))
    take = threading.Lock()

    def work() -> None:
        while not failures:
            with take:
                i = next(left, None)
            if i is None:
                return
            try:
                results[i] = fn(items[i])
            except BaseException as exc:  # re-raised in the calling thread
                failures.append(exc)

    helpers = [threading.Thread(target=work, daemon=True) for _ in range(min(threads, len(items)) - 1)]
    for t in helpers:
        t.start()
    work()
    for t in helpers:
        t.join()
    if failures:
        raise failures[0]
    return results
