"""The single-machine transport: worker processes for the phase functions.

The phases (:mod:`pipeline`) are written as functions of explicit inputs;
this module only runs them somewhere. With ``jobs = 1`` everything runs in the
calling process. Otherwise a pool of forked processes runs tasks largest
first, handing the next task to whichever worker is free (balance by size,
not round-robin). Data every task needs (the class-2 results) is given once
per pool as ``shared`` and inherited by the forked workers, not sent with
each task. Offsets in the scratch files come from a counter shared by the
processes (:class:`SharedCounter`).

An MPI transport provides the same three things: a way to run per-item
functions where the data is, the shared data broadcast, and a shared counter.
"""

from __future__ import annotations

import multiprocessing as mp
import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from hpcsa.binfmt import align
from hpcsa.errors import HpcsaError

_SHARED: Any = None


class SharedCounter:
    """Byte offsets handed out from counters shared by forked processes (one per scratch file)."""

    def __init__(self, kinds: Iterable[str]) -> None:
        ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context()
        self._values = {k: ctx.Value("Q", 0) for k in kinds}

    def __call__(self, kind: str, nbytes: int) -> int:
        v = self._values[kind]
        with v.get_lock():
            at = v.value
            v.value = align(at + nbytes, 8)
        return int(at)

    def total(self, kind: str) -> int:
        return int(self._values[kind].value)


class LocalPool:
    """Run ``fn(shared, *args)`` for many argument tuples, in ``jobs`` processes (or inline for one)."""

    def __init__(self, jobs: int, shared: Any = None) -> None:
        self.jobs = max(1, int(jobs))
        self.shared = shared
        self._pool: Any = None
        if self.jobs > 1:
            global _SHARED
            _SHARED = shared  # inherited by the forked workers
            if "fork" not in mp.get_all_start_methods():  # pragma: no cover - not on Linux
                self.jobs = 1
            else:
                self._pool = mp.get_context("fork").Pool(self.jobs)
            _SHARED = None

    def __enter__(self) -> LocalPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.terminate()
            self._pool.join()
            self._pool = None

    def run(self, fn: Callable[..., Any], tasks: list[tuple[Any, ...]], cost: list[float] | None = None
            ) -> Iterator[tuple[int, Any]]:
        """(task index, result) as tasks finish; tasks start largest ``cost`` first."""
        order = sorted(range(len(tasks)), key=lambda i: (-(cost[i] if cost else 0.0), i))
        if self._pool is None:
            for i in order:
                yield i, fn(self.shared, *tasks[i])
            return
        for i, result in self._pool.imap_unordered(_indexed, [(i, fn, tasks[i]) for i in order], chunksize=1):
            if isinstance(result, _Failure):
                result.raise_it()
            yield i, result


class _Failure:
    """An input error raised in a worker, carried back as plain data (HpcsaError does not unpickle)."""

    def __init__(self, exc: HpcsaError) -> None:
        self.kind = type(exc)
        self.path = exc.path
        self.problem = exc.problem

    def raise_it(self) -> None:
        raise self.kind(self.path, self.problem)


def _run_indexed(fn: Callable[..., Any], args: tuple[Any, ...], shared: Any) -> Any:
    try:
        return fn(shared, *args)
    except HpcsaError as exc:
        return _Failure(exc)


def _indexed(packed: tuple[int, Callable[..., Any], tuple[Any, ...]]) -> tuple[int, Any]:
    i, fn, args = packed
    try:
        return i, fn(_SHARED, *args)
    except HpcsaError as exc:
        return i, _Failure(exc)


class DynamicRun:
    """Tasks that may schedule more tasks, by priority (lower first), at most ``2 * jobs`` in flight.

    ``submit(key, fn, args, priority)`` queues a task; iterating yields (key, result) as tasks finish,
    and the consumer may submit more while iterating.
    """

    def __init__(self, pool: LocalPool) -> None:
        import heapq
        import queue

        self.pool = pool
        self._heapq = heapq
        self._heap: list[tuple[float, int, Any, Callable[..., Any], tuple[Any, ...]]] = []
        self._seq = 0
        self._done: queue.Queue[tuple[Any, Any]] = queue.Queue()
        self._in_flight = 0

    def submit(self, key: Any, fn: Callable[..., Any], args: tuple[Any, ...], priority: float = 0.0) -> None:
        self._heapq.heappush(self._heap, (priority, self._seq, key, fn, args))
        self._seq += 1

    def _launch(self) -> None:
        pool = self.pool._pool
        limit = 2 * self.pool.jobs
        while self._heap and self._in_flight < limit:
            _, _, key, fn, args = self._heapq.heappop(self._heap)
            self._in_flight += 1
            pool.apply_async(_indexed, ((key, fn, args),), callback=self._done.put,
                             error_callback=lambda exc, key=key: self._done.put((key, exc)))

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        if self.pool._pool is None:
            while self._heap:
                _, _, key, fn, args = self._heapq.heappop(self._heap)
                result = _run_indexed(fn, args, self.pool.shared)
                if isinstance(result, _Failure):
                    result.raise_it()
                yield key, result
            return
        while True:
            self._launch()
            if not self._in_flight:
                return
            key, result = self._done.get()
            self._in_flight -= 1
            if isinstance(result, _Failure):
                result.raise_it()
            if isinstance(result, BaseException):
                raise result
            yield key, result


def default_jobs() -> int:
    """hpcprof's default: the CPUs this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover
        return max(1, os.cpu_count() or 1)
